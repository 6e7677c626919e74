"""MSCCL XML: export, import, the runtime's limits, msccl-tools' own files.

Exported files are run by an interpreter of the MSCCL step semantics written
here from the format's description (ElementTree, a message queue per
connection, steps in program order after their dependency), independent of
the importer, with random data and random interleavings.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict, deque
from pathlib import Path

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.io import FormatError, msccl_xml, read_msccl, write_msccl

DATA = Path(__file__).parent / "data" / "msccl"
SIZE = 720720 * 64  # lcm(1..16) * 64: equal blocks for the sizes used here


# --------------------------------------------------------------------------- #
# an independent interpreter of MSCCL XML
# --------------------------------------------------------------------------- #
def run_msccl(text: str, rng: np.random.Generator, width: int = 3) -> None:
    """Run the program on random data; assert it computes its collective."""
    algo = ET.fromstring(text)
    coll = algo.get("coll")
    p, n = int(algo.get("ngpus")), int(algo.get("nchunksperloop"))
    root = int(algo.get("root", 0))
    per = n // p
    data = rng.integers(-50, 50, size=(p, n, width)).astype(np.int64)
    bufs = []
    for g in algo.iter("gpu"):
        gid = int(g.get("id"))
        main = np.zeros((n, width), np.int64)
        if coll == "allgather":
            main[gid * per : (gid + 1) * per] = data[gid, gid * per : (gid + 1) * per]
        elif coll != "broadcast" or gid == root:
            main[:] = data[gid]
        scratch = np.zeros((max(int(g.get("s_chunks", 0)), 1), width), np.int64)
        bufs.append((gid, main, scratch))
    mem = {gid: {"i": main, "o": main, "s": scratch} for gid, main, scratch in bufs}
    tbs = {}
    for g in algo.iter("gpu"):
        gid = int(g.get("id"))
        for tb in g.iter("tb"):
            tbs[(gid, int(tb.get("id")))] = (
                tb,
                [dict(st.attrib) for st in tb.iter("step")],
            )
    pc = {k: 0 for k in tbs}
    queues: dict[tuple[int, int, int], deque] = defaultdict(deque)

    def view(gid: int, buf: str, off: int, cnt: int) -> np.ndarray:
        return mem[gid][buf][off : off + cnt]

    def ready(key) -> bool:
        tb, steps = tbs[key]
        st = steps[pc[key]]
        dep = int(st["depid"])
        if dep >= 0 and pc[(key[0], dep)] <= int(st["deps"]):
            return False
        if st["type"] in ("r", "rrc", "rcs", "rrcs", "rrs"):
            return bool(queues[(int(tb.get("recv")), key[0], int(tb.get("chan")))])
        return True

    while True:
        live = [k for k in tbs if pc[k] < len(tbs[k][1])]
        if not live:
            break
        cand = [k for k in live if ready(k)]
        assert cand, f"deadlock with thread blocks {live[:5]} waiting"
        key = cand[rng.integers(len(cand))]
        tb, steps = tbs[key]
        st = steps[pc[key]]
        gid, kind, cnt = key[0], st["type"], int(st["cnt"])
        if kind != "nop":
            srcv = view(gid, st["srcbuf"], int(st["srcoff"]), cnt)
            dstv = view(gid, st["dstbuf"], int(st["dstoff"]), cnt)
        chan = int(tb.get("chan"))
        if kind in ("r", "rrc", "rcs", "rrcs", "rrs"):
            msg = queues[(int(tb.get("recv")), gid, chan)].popleft()
            assert msg.shape[0] == cnt
            if kind in ("r", "rcs"):
                dstv[:] = msg
                out = msg
            else:
                out = msg + srcv
                if kind != "rrs":
                    dstv[:] = out
            if kind in ("rcs", "rrcs", "rrs"):
                queues[(gid, int(tb.get("send")), chan)].append(out.copy())
        elif kind == "s":
            queues[(gid, int(tb.get("send")), chan)].append(srcv.copy())
        elif kind == "re":
            dstv[:] += srcv
        elif kind == "cpy":
            dstv[:] = srcv
        else:
            assert kind == "nop"
        pc[key] += 1
    assert not any(queues.values()), "messages left undelivered"
    total = data.sum(axis=0)
    for gid, main, _ in bufs:
        if coll == "allreduce":
            np.testing.assert_array_equal(main, total)
        elif coll == "reduce" and gid == root:
            np.testing.assert_array_equal(main, total)
        elif coll == "broadcast":
            np.testing.assert_array_equal(main, data[root])
        elif coll == "reduce_scatter":
            sl = slice(gid * per, (gid + 1) * per)
            np.testing.assert_array_equal(main[sl], total[sl])
        elif coll == "allgather":
            want = np.concatenate([data[r, r * per : (r + 1) * per] for r in range(p)])
            np.testing.assert_array_equal(main, want)


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


def test_scratch_to_scratch_reduce_is_refused_by_name():
    with pytest.raises(
        FormatError,
        match=r"ar_allpairs_v2.xml, line \d+, <step>: GPU \d+ tb \d+ step \d+: scratch-to-scratch",
    ):
        read_msccl(DATA / "ar_allpairs_v2.xml")


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
@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            '<algo name="x" coll="allreduce" ngpus="2" nchunksperloop="1">\n<gpu id="0">\n',
            r"line \d+.*not well-formed",
        ),
        (
            '<algo name="x" coll="alltoall" ngpus="2" nchunksperloop="1">\n</algo>\n',
            r"<algo>.*alltoall",
        ),
        (
            '<algo name="x" coll="allreduce" ngpus="two" nchunksperloop="1">\n</algo>\n',
            r"ngpus='two' is not an integer",
        ),
        (
            '<algo coll="allreduce" ngpus="1" nchunksperloop="1">\n<gpu id="0" i_chunks="1" o_chunks="0" s_chunks="0">\n<tb id="0" send="-1" recv="-1" chan="0">\n<step s="0" type="zz" cnt="1"/>\n</tb>\n</gpu>\n</algo>\n',
            r"line 4, <step>: GPU 0 tb 0 step 0: unknown step type 'zz'",
        ),
        (
            '<algo coll="allreduce" ngpus="2" nchunksperloop="1">\n<gpu id="0"/>\n</algo>\n',
            r"ngpus=2 but the file has 1",
        ),
        (
            '<algo coll="allreduce" ngpus="1" nchunksperloop="1">\n<bogus/>\n</algo>\n',
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
    with pytest.raises(
        wc.ScheduleError, match=r"without the contribution.*GPU \d+ tb \d+ step \d+"
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
    return (
        f'<algo coll="allreduce" ngpus="2" nchunksperloop="{nchunks}">\n'
        '<gpu id="0">\n<tb id="0" send="1" recv="1" chan="0">\n'
        f"{steps0}</tb>\n</gpu>\n"
        '<gpu id="1">\n<tb id="0" send="0" recv="0" chan="0">\n'
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
         r"would deadlock: GPU 0 tb 0 step 0 waits"),
        # replay: chunk 0 arrives as chunk 1
        ("replay", _two_gpus(_st(0, "s"), _st(0, "r", doff=1), nchunks=2), 9,
         r"GPU 0 tb 0 step 0 -> GPU 1 tb 0 step 0 moves chunks \[0\] into chunks \[1\]"),
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
