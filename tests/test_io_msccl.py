"""MSCCL XML: export, import, the runtime's limits, msccl-tools' own files.

Exported files are run by an interpreter of the MSCCL step semantics written
here from the format's description (ElementTree, a message queue per
connection, steps in program order after their dependency), independent of
the importer, with random data and random interleavings.
"""

from __future__ import annotations

import pickle
import re
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from msccl_runtime import Program, check, matches, mutate

import wafercoll as wc
from wafercoll.io import FormatError, msccl_xml, read_msccl, write_msccl

DATA = Path(__file__).parent / "data" / "msccl"
SIZE = 720720 * 64  # lcm(1..16) * 64: equal blocks for the sizes used here


# --------------------------------------------------------------------------- #
# an independent interpreter of MSCCL XML (tests/msccl_runtime.py)
# --------------------------------------------------------------------------- #
def run_msccl(text: str, rng: np.random.Generator, width: int = 3) -> None:
    """Run the program on random data; assert it computes its collective."""
    prog = Program(text)
    x = rng.integers(-50, 50, size=(prog.p, prog.n, width)).astype(np.float64)
    got, want = prog.run(x, rng), prog.expected(x)
    for g in range(prog.p):
        assert matches(got[g], want[g]), f"GPU {g}: {got[g]} != {want[g]}"


# --------------------------------------------------------------------------- #
# builders
# --------------------------------------------------------------------------- #
def _cases():
    for a in wc.algorithms():
        fam = a.families
        if "mesh" in fam and "any" not in fam:
            for r, c in [(2, 2), (3, 3), (2, 5), (8, 8)]:
                yield a.name, f"{r}x{c}", {"topology": wc.topology.mesh(r, c)}
        elif "cluster" in fam and "any" not in fam:
            for nodes, ppn in [(2, 2), (3, 4), (8, 8)]:
                yield (
                    a.name,
                    f"{nodes}x{ppn}",
                    {"topology": wc.topology.cluster(nodes, ppn)},
                )
        elif a.name.startswith("cluster_") and "any" in fam:
            for nodes, ppn in [(2, 2), (3, 4), (8, 8)]:
                yield (
                    a.name,
                    f"{nodes}x{ppn}",
                    {"topology": wc.topology.cluster(nodes, ppn)},
                )
        else:
            for p in (2, 3, 5, 8, 13, 64):
                yield a.name, str(p), {"ranks": p}


CASES = list(_cases())
#: What MSCCL cannot express, by the export's own message.
REFUSED = (
    "every GPU takes part",
    "must own the same number of chunks",
    "offsets are 16-bit",
    "must exchange the same number of chunks",
    "the MSCCL runtime has no",
    "per thread block",
)


@pytest.mark.parametrize(
    ("name", "label", "kw"), CASES, ids=[f"{n}-{lab}" for n, lab, _ in CASES]
)
def test_every_builder_round_trips(name, label, kw, rng):
    try:
        s = wc.build(name, size_bytes=SIZE, **kw)
    except ValueError as exc:
        pytest.skip(f"not built for this size: {exc}")
    try:
        text = msccl_xml(s)
    except ValueError as exc:
        assert any(r in str(exc) for r in REFUSED), exc
        return
    _check_limits(text)
    run_msccl(text, rng)
    back = read_msccl(text)
    assert back.collective == s.collective and back.num_ranks == s.num_ranks
    assert back.size_bytes == s.size_bytes
    rep = wc.verify(back)
    assert rep.ranks == s.num_ranks and rep.transfers == back.num_transfers
    # Same results on random data. Blocks keep their index unless an
    # allgather / reduce-scatter groups them by owner; compare per block.
    x = rng.integers(-9, 9, size=(s.num_ranks, s.num_blocks * 4))
    if s.collective in ("allreduce", "reduce", "broadcast"):
        a = wc.execute(s, x)
        # The import has one block per chunk: map elements in proportion.
        b = wc.execute(back, x)
        np.testing.assert_array_equal(a[_out_rows(s)], b[_out_rows(s)])
    else:
        # Chunks are grouped by owner: compare with the collective computed
        # here, chunk by chunk (4 elements each).
        n = back.num_blocks
        x = rng.integers(-9, 9, size=(s.num_ranks, n * 4))
        b = wc.execute(back, x)
        for c, owner in enumerate(back.owners.tolist()):
            part = slice(4 * c, 4 * c + 4)
            if s.collective == "allgather":
                np.testing.assert_array_equal(
                    b[:, part], np.broadcast_to(x[owner, part], (s.num_ranks, 4))
                )
            elif s.collective == "alltoall":
                target = int(back.targets[c])
                np.testing.assert_array_equal(b[target, part], x[owner, part])
            else:
                np.testing.assert_array_equal(b[owner, part], x[:, part].sum(0))


def _out_rows(s):
    if s.collective == "reduce":
        return [s.root]
    return list(range(s.num_ranks))


def _check_limits(text: str) -> None:
    algo = ET.fromstring(text)
    for g in algo.iter("gpu"):
        ids = [int(tb.get("id")) for tb in g.iter("tb")]
        assert ids == list(range(len(ids)))
        per_chan = defaultdict(int)
        for tb in g.iter("tb"):
            per_chan[tb.get("chan")] += 1
            steps = list(tb.iter("step"))
            assert len(steps) <= 256
            for k, st in enumerate(steps):
                assert int(st.get("s")) == k
                assert int(st.get("cnt")) < 72
                assert int(st.get("srcoff")) <= 32767 and int(st.get("dstoff")) <= 32767
        assert max(per_chan.values()) <= 32
    for key in (
        "proto",
        "nchannels",
        "nchunksperloop",
        "ngpus",
        "coll",
        "inplace",
        "outofplace",
        "minBytes",
        "maxBytes",
    ):
        assert algo.get(key) is not None, key


def test_pairwise_exchange_goes_through_scratch(rng):
    s = wc.build("generic_recursive_doubling_allreduce", 8, 8 * 1024)
    text = msccl_xml(s)
    assert 'type="re"' in text and 'dstbuf="s"' in text
    run_msccl(text, rng)
    wc.verify(read_msccl(text))


def test_multiple_dependencies_become_nops(rng):
    s = wc.build("torus_rd_bo_allreduce", 8, SIZE)
    text = msccl_xml(s)
    assert 'type="nop"' in text
    for st in ET.fromstring(text).iter("step"):
        if st.get("type") == "nop":
            assert int(st.get("depid")) >= 0
    run_msccl(text, rng)


def test_file_round_trip(tmp_path, rng):
    s = wc.build("generic_ring_allreduce", 6, SIZE)
    f = tmp_path / "ring.xml"
    write_msccl(s, f, proto="LL128", name="my ring")
    algo = ET.parse(f).getroot()
    assert (algo.get("name"), algo.get("proto")) == ("my ring", "LL128")
    back = read_msccl(f)
    wc.verify(back)
    assert back.block_bytes.sum() == s.size_bytes
    assert back.transfer_label(0).startswith("GPU ")


# --------------------------------------------------------------------------- #
# limits
# --------------------------------------------------------------------------- #
def test_steps_per_thread_block_limit():
    s = wc.build("generic_ring_allreduce", 130, 130 * 64)
    with pytest.raises(
        ValueError, match=r"GPU \d+ thread block \d+ .*needs 258 steps.*256"
    ):
        msccl_xml(s)


def test_chunk_offset_limit():
    s = wc.Schedule(2, [1, 40000], "allreduce")
    s.add_transfer(0, 1, [0, 1], op="reduce")
    s.add_transfer(1, 0, [0, 1], deps=[0])
    with pytest.raises(ValueError, match="16-bit"):
        msccl_xml(s)


def test_large_transfers_split_at_count_limit(rng):
    s = wc.Schedule(2, [64] * 200, "allreduce")
    s.add_transfer(0, 1, [(0, 200)], op="reduce")
    s.add_transfer(1, 0, [(0, 200)], deps=[0])
    text = msccl_xml(s)
    cnts = [int(st.get("cnt")) for st in ET.fromstring(text).iter("step")]
    assert max(cnts) == 71 and sum(c for c in cnts) == 4 * 200
    run_msccl(text, rng)


def test_unverified_schedule_is_refused():
    s = wc.Schedule(2, [8], "allreduce")
    s.add_transfer(0, 1, [0], op="reduce")
    with pytest.raises(wc.ScheduleError):
        msccl_xml(s)
    with pytest.raises(TypeError, match="Schedule"):
        msccl_xml("not a schedule")
    with pytest.raises(ValueError, match="proto"):
        msccl_xml(wc.build("generic_ring_allreduce", 2, 64), proto="fast")


# --------------------------------------------------------------------------- #
# msccl-tools' files
# --------------------------------------------------------------------------- #
VERIFIED = [
    "ar_ring_4",
    "ar_ring_4_ch2_inst2",
    "ag_ring_4",
    "ar_1step_4",
    "ag_allpairs_8",
    "ag_rd_8",
    "ar_allpairs_8",
    "ar_rdh_8",
    "ar_hier_4x2",
    "ar_allpairs_v2",
    "ag_ring_4_oop",
    "rs_ring_4_oop",
    "ar_ring_4_oop",
]


@pytest.mark.parametrize("name", VERIFIED)
def test_msccl_tools_files_import_verify_simulate(name, rng):
    text = (DATA / f"{name}.xml").read_text()
    run_msccl(text, rng)  # the file itself is correct
    s = read_msccl(DATA / f"{name}.xml", chunk_bytes=4096)
    algo = ET.fromstring(text)
    assert s.collective == algo.get("coll")
    assert s.num_ranks == int(algo.get("ngpus"))
    assert s.num_blocks == int(algo.get("nchunksperloop"))
    rep = wc.verify(s)
    x = rng.standard_normal((s.num_ranks, s.num_blocks * 2))
    out = wc.execute(s, x)
    if s.collective == "allreduce":
        np.testing.assert_allclose(out, np.broadcast_to(x.sum(0), out.shape), atol=1e-9)
    net = wc.NetworkModel(25e9, hop_latency_s=1e-7, packet_bytes=1024)
    side = int(np.ceil(np.sqrt(s.num_ranks)))
    for topo in (wc.topology.mesh(side, side), wc.topology.torus(side, side)):
        r = wc.simulate(s, topo, net)
        # At least the longest chain of messages, each at least one chunk
        # over one link.
        assert r.time_s >= rep.steps * 4096 / 25e9 * (1 - 1e-9)


def test_a_chunk_overwritten_after_its_send_is_read_at_the_send(rng):
    # msccl-tools' allreduce_1step: every GPU sends its whole input into the
    # peers' scratch and then reduces into its input while the peers may
    # still be consuming what it sent. Correct, because a message is read at
    # its send; the import's verification model says so.
    text = (DATA / "ar_1step_4.xml").read_text()
    run_msccl(text, rng)
    s = read_msccl(text)
    wc.verify(s)
    x = rng.standard_normal((4, 8))
    np.testing.assert_allclose(wc.execute(s, x), np.broadcast_to(x.sum(0), x.shape))


def test_scratch_to_scratch_reduce_imports_verifies_and_runs(rng):
    # msccl-tools' allreduce_a100_allpairs_v2 sums pairs of scratch chunks
    # into scratch before reducing into the input.
    text = (DATA / "ar_allpairs_v2.xml").read_text()
    assert re.search(r'type="re" srcbuf="s" [^>]*dstbuf="s"', text)
    run_msccl(text, rng)
    s = read_msccl(DATA / "ar_allpairs_v2.xml")
    wc.verify(s)
    x = rng.integers(-9, 9, size=(8, 8 * 3))
    np.testing.assert_array_equal(wc.execute(s, x), np.broadcast_to(x.sum(0), x.shape))


# --------------------------------------------------------------------------- #
# corrupted files
# --------------------------------------------------------------------------- #
def _steps(text):
    return [m for m in re.finditer(r"^\s*<step [^>]*/>\n", text, re.M)]


def test_dropped_step_is_reported_with_gpu_tb_step():
    text = (DATA / "ar_ring_4.xml").read_text()
    m = _steps(text)[6]  # the last step of GPU 0's thread block
    assert '<step s="6"' in m.group(0)
    bad = text[: m.start()] + text[m.end() :]
    with pytest.raises(FormatError, match=r"GPU \d+ tb \d+ step \d+ .*no matching"):
        read_msccl(bad)


def test_removed_dependency_is_refuted_naming_the_step():
    text = (DATA / "ar_allpairs_8.xml").read_text()
    # The first reduction from scratch waits for the receive that fills it;
    # without the wait it may read the scratch chunk before the data arrives.
    target = next(
        m
        for m in _steps(text)
        if 'type="re"' in m.group(0) and 'depid="-1"' not in m.group(0)
    )
    line = re.sub(r'depid="\d+" deps="\d+"', 'depid="-1" deps="-1"', target.group(0))
    bad = text[: target.start()] + line + text[target.end() :]
    with pytest.raises(ValueError, match=r"GPU \d+ tb \d+ step \d+"):
        wc.verify(read_msccl(bad))


def test_duplicated_reduce_is_refuted_naming_the_step():
    text = (DATA / "ar_allpairs_8.xml").read_text()
    tb = re.search(r'<tb id="0" send="-1" recv="-1" chan="0">\n(.*?)</tb>', text, re.S)
    lines = tb.group(1).splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if 'type="re"' in ln)
    dup = re.sub(r'depid="\d+" deps="\d+"', 'depid="-1" deps="-1"', lines[k])
    new = lines[: k + 1] + [dup] + lines[k + 1 :]
    new = [re.sub(r's="\d+"', f's="{i}"', ln, count=1) for i, ln in enumerate(new)]
    # Dependencies on this thread block's later steps shift by one.
    bad = text[: tb.start(1)] + "".join(new) + text[tb.end(1) :]
    s = read_msccl(bad)
    with pytest.raises(wc.ScheduleError, match=r"GPU \d+ tb \d+ step \d+") as info:
        wc.verify(s)
    assert info.value.kind in ("double_count", "race", "unexpected")


# --------------------------------------------------------------------------- #
# malformed input
# --------------------------------------------------------------------------- #
#: The attributes the runtime requires besides those a test varies.
_ALGO = 'name="x" proto="Simple" nchannels="1" inplace="1"'
_GPU = 'i_chunks="1" o_chunks="0" s_chunks="0"'


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            '<algo name="x" coll="allreduce" ngpus="2" nchunksperloop="1">\n<gpu id="0">\n',
            r"line \d+.*not well-formed",
        ),
        (
            f'<algo {_ALGO} coll="alltoall" ngpus="2" nchunksperloop="1">\n</algo>\n',
            r"<algo>.*alltoall",
        ),
        (
            f'<algo {_ALGO} coll="allreduce" ngpus="two" nchunksperloop="1">\n</algo>\n',
            r"ngpus='two' is not an integer",
        ),
        (
            f'<algo {_ALGO} coll="allreduce" ngpus="1" nchunksperloop="1">\n<gpu id="0" i_chunks="1" o_chunks="0" s_chunks="0">\n<tb id="0" send="-1" recv="-1" chan="0">\n<step s="0" type="zz" cnt="1"/>\n</tb>\n</gpu>\n</algo>\n',
            r"line 4, <step>: GPU 0 tb 0 step 0: unknown step type 'zz'",
        ),
        (
            f'<algo {_ALGO} coll="allreduce" ngpus="2" nchunksperloop="1">\n<gpu id="0" {_GPU}/>\n</algo>\n',
            r"ngpus=2 but the file has 1",
        ),
        (
            f'<algo {_ALGO} coll="allreduce" ngpus="1" nchunksperloop="1">\n<bogus/>\n</algo>\n',
            r"line 2, <bogus>: unknown element",
        ),
    ],
)
def test_malformed_xml_names_file_element_and_line(tmp_path, text, match):
    f = tmp_path / "bad.xml"
    f.write_text(text)
    with pytest.raises(FormatError, match=match) as info:
        read_msccl(f)
    assert str(f) in str(info.value)


def test_missing_file_and_bad_chunk_bytes(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.xml"):
        read_msccl(tmp_path / "nope.xml")
    with pytest.raises(ValueError, match="chunk_bytes"):
        read_msccl(DATA / "ar_ring_4.xml", chunk_bytes=0)


def test_dropped_message_is_refuted_by_the_verifier():
    # GPU 3's last forward (rcs) becomes a plain receive and GPU 0 loses the
    # matching receive: the file stays well formed, the result is wrong.
    text = (DATA / "ar_ring_4.xml").read_text()
    g0, g3 = text.index('<gpu id="0"'), text.index('<gpu id="3"')
    m = re.search(r'\s*<step s="6" type="r"[^>]*/>', text[g0:g3])
    text = text[: g0 + m.start()] + text[g0 + m.end() :]
    i = text.index('<step s="5" type="rcs"', text.index('<gpu id="3"'))
    text = text[:i] + text[i:].replace('type="rcs"', 'type="r"', 1)
    # GPU 0 never receives its last block: the verifier names the GPU (rank
    # 0) and the block.
    with pytest.raises(
        wc.ScheduleError, match=r"block \d+ of rank 0 ends without the contribution"
    ) as info:
        wc.verify(read_msccl(text))
    assert info.value.kind == "missing"


def test_removed_dependency_in_an_export_is_refuted_by_the_verifier():
    # A ring step forwards a block it has just reduced; without the wait it
    # would forward the partial sum from before the reduction.
    text = msccl_xml(wc.build("generic_ring_allreduce", 4, 4096))
    lines = text.splitlines(keepends=True)
    k = next(
        i for i, ln in enumerate(lines) if 'type="s"' in ln and 'depid="-1"' not in ln
    )
    lines[k] = re.sub(r'depid="\d+" deps="\d+"', 'depid="-1" deps="-1"', lines[k])
    with pytest.raises(wc.ScheduleError, match=r"GPU \d+ tb \d+ step \d+"):
        wc.verify(read_msccl("".join(lines)))


def _two_gpus(steps0: str, steps1: str, nchunks: int = 1) -> str:
    """Two GPUs with one thread block each, talking to each other."""
    gpu = f'i_chunks="{nchunks}" o_chunks="0" s_chunks="0"'
    return (
        f'<algo {_ALGO} coll="allreduce" ngpus="2" nchunksperloop="{nchunks}">\n'
        f'<gpu id="0" {gpu}>\n<tb id="0" send="1" recv="1" chan="0">\n'
        f"{steps0}</tb>\n</gpu>\n"
        f'<gpu id="1" {gpu}>\n<tb id="0" send="0" recv="0" chan="0">\n'
        f"{steps1}</tb>\n</gpu>\n</algo>\n"
    )


def _st(k: int, kind: str, off: int = 0, doff: int = 0, cnt: int | str = 1) -> str:
    return (
        f'<step s="{k}" type="{kind}" srcbuf="i" srcoff="{off}" dstbuf="i" '
        f'dstoff="{doff}" cnt="{cnt}" depid="-1" deps="-1" hasdep="0"/>\n'
    )


@pytest.mark.parametrize(
    ("phase", "text", "line", "match"),
    [
        # parse: an attribute that is not a number
        ("parse", _two_gpus(_st(0, "s", cnt="x"), _st(0, "r")), 4,
         r"GPU 0 tb 0 step 0: attribute cnt='x' is not an integer"),
        # match: a send that no receive takes
        ("match", _two_gpus(_st(0, "s") + _st(1, "s"), _st(0, "r")), 5,
         r"GPU 0 tb 0 step 1 \('s'\) has no matching receive"),
        # order: each GPU receives before it sends
        ("order", _two_gpus(_st(0, "r") + _st(1, "s"), _st(0, "r") + _st(1, "s")), 4,
         r"GPU 0 tb 0 step 0: the program would deadlock: this step waits"),
        # replay: chunk 0 arrives as chunk 1
        ("replay", _two_gpus(_st(0, "s"), _st(0, "r", doff=1), nchunks=2), 9,
         r"GPU 1 tb 0 step 0: writes block 0 into chunk 1 of buffer 'i'"),
    ],
)  # fmt: skip
def test_each_reader_phase_names_file_element_and_line(
    tmp_path, phase, text, line, match
):
    f = tmp_path / f"{phase}.xml"
    f.write_text(text)
    with pytest.raises(FormatError, match=match) as info:
        read_msccl(f)
    err = info.value
    assert (err.path, err.element, err.line) == (str(f), "step", line)
    assert str(err).startswith(f"{f}, line {line}, <step>: ")


# --------------------------------------------------------------------------- #
# the import means what the runtime runs
# --------------------------------------------------------------------------- #
def _step_line(text: str, gpu: int, tb: int, s: int) -> re.Match:
    """The ``<step>`` element ``s`` of thread block ``tb`` of GPU ``gpu``."""
    g0 = text.index(f'<gpu id="{gpu}"')
    t0 = text.index(f'<tb id="{tb}"', g0)
    return re.compile(rf'<step s="{s}" [^>]*/>').search(text, t0)


def _edit(text: str, gpu: int, tb: int, s: int, **attrs: str) -> str:
    """``text`` with attributes of one step replaced (None: removed)."""
    m = _step_line(text, gpu, tb, s)
    el = m.group(0)
    for k, v in attrs.items():
        k = k.rstrip("_")
        if v is None:
            el = re.sub(rf' {k}="[^"]*"', "", el)
        else:
            el = re.sub(rf' {k}="[^"]*"', f' {k}="{v}"', el)
    return text[: m.start()] + el + text[m.end() :]


def _read(name: str) -> str:
    return (DATA / f"{name}.xml").read_text()


def test_out_of_place_allgather_without_its_copy_is_refused():
    # GPU 0's input -> output copy becomes a nop: its output chunk 0 is
    # never written. Sending it from the output reads undefined memory.
    text = _edit(_read("ag_ring_4_oop"), 0, 0, 0, type="nop")
    text = _edit(text, 0, 2, 0, depid="-1", deps="-1")
    with pytest.raises(
        FormatError,
        match=r"GPU 0 tb 2 step 0: reads chunk 0 of buffer 'o', which holds no "
        "defined data",
    ):
        read_msccl(text)
    # Sending from the input instead: the output chunk is never written.
    text = _edit(text, 0, 2, 0, srcbuf="i")
    with pytest.raises(FormatError, match=r"GPU 0: output chunk 0 is never written"):
        read_msccl(text)


def test_out_of_place_reduce_scatter_without_its_copy_is_refused():
    text = _read("rs_ring_4_oop")
    assert 'type="cpy"' in _step_line(text, 2, 0, 1).group(0)
    with pytest.raises(FormatError, match=r"GPU 2: output chunk 0 is never written"):
        read_msccl(_edit(text, 2, 0, 1, type="nop"))


def test_in_place_flag_decides_the_buffers():
    # The same steps with inplace="1": input and output are one buffer on
    # the runtime, and the program is correct then too.
    text = _read("ag_ring_4_oop").replace('inplace="0"', 'inplace="1"')
    text = text.replace('i_chunks="1" o_chunks="4"', 'i_chunks="1" o_chunks="4"')
    assert check(text, np.random.default_rng(0)) == "agree"


def test_receive_reduce_reads_its_local_operand():
    text = _read("ar_ring_4")
    m = _step_line(text, 0, 0, 1)
    assert 'type="rrs"' in m.group(0) and 'srcoff="3"' in m.group(0)
    # The local operand is another chunk (block 0 instead of 3).
    with pytest.raises(
        FormatError,
        match=r"GPU 0 tb 0 step 1: combines chunk 0 of buffer 'i' \(block 0\) "
        r"with block 3",
    ):
        read_msccl(_edit(text, 0, 0, 1, srcoff="0"))
    # ... or none at all: outside the 4 chunks of the input.
    with pytest.raises(FormatError, match=r"srcoff=8 cnt=1 reaches outside the 4"):
        read_msccl(_edit(text, 0, 0, 1, srcoff="8", dstoff="1"))


def test_rrs_stores_nothing():
    # The ring's reduce-copy-send of the full sum becomes a reduce-send: the
    # GPU forwards the sum but keeps its partial one.
    text = _read("ar_ring_4")
    m = _step_line(text, 0, 0, 3)
    assert 'type="rrcs"' in m.group(0)
    bad = _edit(text, 0, 0, 3, type="rrs")
    s = read_msccl(bad)
    with pytest.raises(wc.ScheduleError, match="ends without the contribution"):
        wc.verify(s)
    assert check(bad, np.random.default_rng(0)) == "refuted"


def test_reduce_into_output_never_written_is_refused():
    # An allgather's receive becomes a receive-reduce: it adds to an output
    # chunk nothing wrote (undefined on the runtime).
    text = _read("ag_ring_4")
    m = _step_line(text, 3, 0, 3)
    assert 'type="r"' in m.group(0)
    with pytest.raises(
        FormatError, match=r"GPU 3 tb 0 step 3: reads chunk 0 of buffer 'o', which "
    ):
        read_msccl(_edit(text, 3, 0, 3, type="rrc"))


def test_two_thread_blocks_on_one_connection_are_refused():
    # GPU 0's local thread block also declares GPU 1 as its send peer on
    # channel 0, which thread block 1 already sends on.
    text = _read("ar_1step_4")
    text = text.replace('<tb id="0" send="-1"', '<tb id="0" send="1"', 1)
    with pytest.raises(
        FormatError,
        match=r"line \d+, <tb>: GPU 0 tb 1: thread blocks 0 and 1 both send to "
        r"GPU 1 on channel 0",
    ):
        read_msccl(text)


def _swap_steps(text: str, gpu: int, tb: int, k: int) -> str:
    """Swap steps ``k`` and ``k + 1`` of a thread block and renumber them."""
    a, b = _step_line(text, gpu, tb, k), _step_line(text, gpu, tb, k + 1)
    ea = re.sub(r's="\d+"', f's="{k + 1}"', a.group(0), count=1)
    eb = re.sub(r's="\d+"', f's="{k}"', b.group(0), count=1)
    return text[: a.start()] + eb + text[a.end() : b.start()] + ea + text[b.end() :]


@pytest.mark.parametrize(("tb", "k"), [(0, 3), (1, 4)])
def test_nop_between_fused_reductions_loses_its_dependency(tb, k):
    # allreduce_1step with a 're' swapped with the 'nop' before it: the nop
    # now sits between 're' steps into one chunk. The runtime's reader fuses
    # those into one reduction and gives the nop's dependency (the receive
    # filling the last scratch chunk) to the next transfer, of which there
    # is none: the reduction reads that chunk before it arrives.
    text = _swap_steps(_read("ar_1step_4"), 0, tb, k)
    kinds = re.findall(r'type="(\w+)"', text[_step_line(text, 0, tb, k).start() :])
    assert kinds[:3] == ["re", "nop", "re"]
    with pytest.raises(
        FormatError, match=rf"GPU 0 tb {tb} step \d: reads scratch chunk \d+, which"
    ):
        read_msccl(text)
    # The runtime in tests/msccl_runtime.py gets it wrong in some orders.
    prog = Program(text)
    rng = np.random.default_rng(3)
    x = rng.integers(-9, 9, size=(4, 4, 1)).astype(np.float64)
    want = prog.expected(x)
    wrong = sum(not matches(prog.run(x, rng)[0], want[0]) for _ in range(40))
    assert wrong > 0


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        ({"gpu": 'i_chunks="1"'}, r"GPU 0: i_chunks=1 but a allreduce"),
        ({"gpu": 's_chunks="1"'}, r"srcoff=4 cnt=1 reaches outside the 1 chunks"),
        ({"step": {"srcoff": "nan"}}, r"GPU 0 tb 0 step 0: attribute srcoff='nan'"),
        ({"step": {"cnt": "1.5"}}, r"GPU 0 tb 0 step 0: attribute cnt='1.5' is not"),
        ({"step": {"dstoff": "0x10"}}, r"attribute dstoff='0x10' is not an integer"),
        ({"step": {"cnt": "+1"}}, r"attribute cnt='\+1' is not an integer"),
        ({"gpu": 'o_chunks="nan"'}, r"GPU 0: attribute o_chunks='nan' is not an"),
        ({"step": {"hasdep": None}}, r"GPU 0 tb 0 step 0: attribute 'hasdep' is mis"),
        ({"step": {"srcbuf": None}}, r"GPU 0 tb 0 step 0: attribute 'srcbuf' is mis"),
        ({"step": {"srcbuf": "x"}}, r"srcbuf='x' is not a buffer"),
        ({"step": {"type": "s", "cnt": "72"}}, r"cnt=72 is outside \[1, 71\]"),
    ],
)
def test_every_attribute_is_checked(edit, match):
    text = _read("ar_1step_4")
    if "gpu" in edit:
        g = re.search(r'<gpu id="0" [^>]*>', text)
        key = edit["gpu"].split("=")[0]
        el = re.sub(rf'{key}="[^"]*"', edit["gpu"], g.group(0))
        text = text[: g.start()] + el + text[g.end() :]
    else:
        text = _edit(text, 0, 0, 0, **edit["step"])
    with pytest.raises(FormatError, match=match):
        read_msccl(text)


def test_a_wait_nobody_signals_is_refused():
    # The step the reduction waits for does not set its flag (hasdep="0"),
    # and no later step of that thread block does: the runtime waits forever.
    text = _read("ar_1step_4")
    assert 'hasdep="1"' in _step_line(text, 0, 1, 1).group(0)
    with pytest.raises(FormatError, match=r"waits for tb 1 step 1, but no step"):
        read_msccl(_edit(text, 0, 1, 1, hasdep="0"))


# --------------------------------------------------------------------------- #
# differential fuzzing against the runtime of tests/msccl_runtime.py
# --------------------------------------------------------------------------- #
FUZZ_FILES = sorted(DATA.glob("*.xml"))


def test_mutants_the_import_accepts_compute_what_the_runtime_computes():
    # Mutants of msccl-tools' files (attributes, step types, dropped,
    # duplicated and swapped steps, buffers and their sizes, in-place flag,
    # dependencies): every one that the import and the verifier accept
    # computes the collective on the runtime too, in random orders, and
    # execute agrees. The long run is bench/msccl_fuzz.py.
    rng = np.random.default_rng(20260)
    texts = [f.read_text() for f in FUZZ_FILES]
    outcome = Counter()
    for _ in range(300):
        base = texts[rng.integers(len(texts))]
        outcome[check(mutate(base, rng, int(rng.integers(1, 3))), rng)] += 1
    assert outcome["agree"] >= 30 and outcome["rejected"] >= 100, outcome


def test_the_fuzz_catches_a_wrong_program():
    # The check is not vacuous: a program the runtime gets wrong fails it
    # when the import wrongly accepts it (here: the runtime with its 'rrcs'
    # read as 'rrs' by the interpreter, i.e. the file's own bug).
    text = _edit(_read("ar_ring_4"), 0, 0, 3, type="rrs")
    prog = Program(text)
    rng = np.random.default_rng(0)
    x = rng.integers(-9, 9, size=(4, 4, 1)).astype(np.float64)
    assert not matches(prog.run(x, rng)[0], prog.expected(x)[0])


# --------------------------------------------------------------------------- #
# the verification model survives JSON and pickle
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", ["ar_1step_4", "ag_ring_4_oop", "ar_allpairs_v2"])
def test_verification_model_survives_json_and_pickle(name, tmp_path, rng):
    s = read_msccl(DATA / f"{name}.xml")
    x = rng.integers(-9, 9, size=(s.num_ranks, s.num_blocks * 2))
    want = wc.execute(s, x)
    f = tmp_path / "s.json"
    s.to_json(f)
    for back in (
        wc.Schedule.from_json(s.to_json()),
        wc.Schedule.from_json(f),
        pickle.loads(pickle.dumps(s)),
    ):
        assert back == s
        wc.verify(back)
        np.testing.assert_array_equal(wc.execute(back, x), want)


# --------------------------------------------------------------------------- #
# encodings
# --------------------------------------------------------------------------- #
def test_xml_encodings(tmp_path):
    text = _read("ar_ring_4").replace('name="allreduce_ring', 'name="ring é')
    decl = '<?xml version="1.0" encoding="{}"?>\n'
    f = tmp_path / "utf16.xml"
    f.write_bytes((decl.format("UTF-16") + text).encode("utf-16"))  # with a BOM
    assert read_msccl(f).name.startswith("ring é")
    f = tmp_path / "latin1.xml"
    f.write_bytes((decl.format("latin-1") + text).encode("latin-1"))
    assert read_msccl(f).name.startswith("ring é")
    assert read_msccl(f.read_bytes()).name.startswith("ring é")
    f = tmp_path / "bad.xml"
    f.write_bytes(text.encode("latin-1"))  # no declaration: must be UTF-8
    with pytest.raises(FormatError, match=r"bad.xml, line 1: not UTF-8 text \(byte"):
        read_msccl(f)
    f.write_bytes((decl.format("no-such-codec") + text).encode())
    with pytest.raises(FormatError, match=r"bad.xml, line 1: the encoding"):
        read_msccl(f)


def test_a_model_that_does_not_fit_is_refused():
    doc = read_msccl(DATA / "ar_ring_4.xml").to_dict()
    doc["model"]["ranks"] = 2
    with pytest.raises(wc.ScheduleError, match="field 'model'"):
        wc.Schedule.from_dict(doc)
