"""Chakra execution traces as workloads (wafercoll.io.chakra_workload).

The fixtures under tests/data/chakra were written by Chakra's own generator
and converters (tests/data/chakra/README.md); the expected counts, sizes and
durations below come from the parameters given to those tools and from
their source, not from this reader.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.io import FormatError, read_chakra_workload, write_chakra_workload

pytest.importorskip("google.protobuf")

DATA = Path(__file__).parent / "data" / "chakra"
P = 8  # every fixture has 8 ranks
COMM = 65536  # chakra_generator --default_comm_size


# --------------------------------------------------------------------------- #
# Helpers: the length-delimited framing, written here independently
# --------------------------------------------------------------------------- #
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _split(data: bytes) -> list[bytes]:
    out, i = [], 0
    while i < len(data):
        n = shift = 0
        while True:
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        out.append(data[i : i + n])
        i += n
    return out


def _join(records: list[bytes]) -> bytes:
    return b"".join(_varint(len(r)) + r for r in records)


def _copy(tmp_path: Path, src: str) -> Path:
    """Copy fixture ``src`` (``folder/name``) into tmp_path; return the prefix."""
    folder, name = src.split("/")
    for f in (DATA / folder).glob(f"{name}.*.et"):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path / name


def _edit(prefix: Path, rank: int, change) -> None:
    """Decode rank ``rank``'s nodes, let ``change(nodes)`` edit them, re-encode."""
    Node = wc.io.chakra_messages()["Node"]
    path = Path(f"{prefix}.{rank}.et")
    recs = _split(path.read_bytes())
    nodes = [Node.FromString(r) for r in recs[1:]]
    nodes = change(nodes)
    path.write_bytes(_join([recs[0], *(n.SerializeToString() for n in nodes)]))


def _attr(node, name):
    return next(a for a in node.attr if a.name == name)


def _same(a: wc.workloads.Workload, b: wc.workloads.Workload) -> None:
    assert (a.ranks, len(a)) == (b.ranks, len(b))
    for x, y in zip(a, b, strict=True):
        assert (x.id, x.kind, x.ranks, x.deps) == (y.id, y.kind, y.ranks, y.deps)
        assert (x.collective, x.size_bytes, x.algorithm, x.options, x.name) == (
            y.collective,
            y.size_bytes,
            y.algorithm,
            y.options,
            y.name,
        )
        assert (x.flops, x.mem_bytes) == (y.flops, y.mem_bytes)
        assert x.seconds == pytest.approx(y.seconds, abs=0.5e-6)


# --------------------------------------------------------------------------- #
# Chakra's generator
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    ("name", "collective", "size"),
    [
        ("ALL_REDUCE", "allreduce", COMM),
        ("REDUCE_SCATTER", "reduce_scatter", COMM),  # comm_size: the input vector
        ("ALL_GATHER", "allgather", COMM * P),  # comm_size: each rank's block
        ("ALL_TO_ALL", "alltoall", COMM),
        ("BROADCAST", "broadcast", COMM),
    ],
)
def test_generator_collective_is_one_node_over_every_rank(name, collective, size):
    w = read_chakra_workload(DATA / "generator" / name)
    assert w.ranks == P and len(w) == 1
    (n,) = w.nodes
    assert (n.kind, n.collective, n.size_bytes) == ("collective", collective, size)
    assert n.ranks == tuple(range(P))
    assert n.deps == dict.fromkeys(range(P), ())
    assert n.options == {} and n.algorithm == "auto"


def test_generator_barrier_is_refused_naming_rank_node_and_type():
    with pytest.raises(ValueError, match=r"rank 0 node \d+ .*BARRIER\.0\.et.*BARRIER"):
        read_chakra_workload(DATA / "generator" / "BARRIER")


def test_generator_dependent_compute_nodes():
    w = read_chakra_workload(DATA / "generator" / "two_comp_nodes_dependent")
    assert w.counts() == {"compute": 2 * P, "collective": 0, "send": 0}
    for r in range(P):
        first, second = (n for n in w if n.ranks == (r,))
        assert first.seconds == second.seconds == 5e-6  # --default_runtime 5
        assert first.deps == {r: ()} and second.deps == {r: (first.id,)}


def test_generator_memory_load_takes_no_time_and_leaves_no_node():
    w = read_chakra_workload(DATA / "generator" / "one_remote_mem_load_node")
    assert (w.ranks, len(w)) == (P, 0)


def test_generator_send_without_destination_names_file_and_attribute():
    with pytest.raises(FormatError, match=r"one_comm_send_node\.0\.et.*comm_dst"):
        read_chakra_workload(DATA / "generator" / "one_comm_send_node")


# --------------------------------------------------------------------------- #
# Chakra's text converter (ASTRA-sim's text workload format)
# --------------------------------------------------------------------------- #
def test_text_data_parallel_counts_sizes_and_durations():
    w = read_chakra_workload(DATA / "text" / "data_parallel")
    passes, layers = 2, 3
    assert w.counts() == {
        "compute": P * passes * (3 * layers - 1),
        "collective": passes * layers,
        "send": 0,
    }
    # data_parallel.txt: forward 10, 11, 12 us; input gradients (all layers
    # but the first) 21, 22 us; weight gradients 30, 31, 32 us.
    us = Counter(round(n.seconds * 1e6, 6) for n in w if n.kind == "compute")
    assert us == {t: P * passes for t in (10, 11, 12, 21, 22, 30, 31, 32)}
    coll = Counter((n.collective, n.size_bytes) for n in w if n.kind == "collective")
    assert coll == {
        ("allreduce", 65536): passes,
        ("allgather", 8192 * P): passes,
        ("reduce_scatter", 32768): passes,
    }
    for n in w:
        if n.kind != "collective":
            continue
        assert n.ranks == tuple(range(P))
        layer = n.name.split("_")[3]  # COMM_COLL_NODE_<layer>_<type>
        for r in range(P):  # each rank's weight-gradient compute of the layer
            (d,) = n.deps[r]
            assert w.node(d).ranks == (r,)
            assert w.node(d).name == f"COMP_NODE_{layer}_BWD_WG"
    # the second pass's forward nodes wait for the first pass's collectives
    waits = [n for n in w if n.kind == "compute" and "FWD" in n.name]
    on_coll = [
        n
        for n in waits
        if any(w.node(d).kind == "collective" for d in n.deps[n.ranks[0]])
    ]
    assert len(on_coll) == P * layers


def test_text_hybrid_counts_and_sizes():
    w = read_chakra_workload(DATA / "text" / "hybrid")
    assert w.counts() == {"compute": 6 * P, "collective": 5, "send": 0}
    us = Counter(round(n.seconds * 1e6, 6) for n in w if n.kind == "compute")
    assert us == {t: P for t in (40, 41, 50, 51, 60, 61)}
    coll = sorted((n.collective, n.size_bytes) for n in w if n.kind == "collective")
    assert coll == sorted(
        [
            ("allgather", 4096 * P),
            ("alltoall", 8192),
            ("allreduce", 2048),
            ("allreduce", 262144),
            ("allreduce", 131072),
        ]
    )


def test_ids_are_a_topological_order():
    for prefix in ("text/data_parallel", "text/hybrid", "pytorch/pytorch_groups"):
        w = read_chakra_workload(DATA / prefix)
        for n in w:
            assert all(d < n.id for ds in n.deps.values() for d in ds)


# --------------------------------------------------------------------------- #
# Chakra's PyTorch converter: process groups
# --------------------------------------------------------------------------- #
def test_pytorch_process_groups_from_the_metadata_node():
    w = read_chakra_workload(DATA / "pytorch" / "pytorch_groups")
    assert w.counts() == {"compute": 7 * P, "collective": 3, "send": 0}
    coll = sorted(
        (n.ranks, n.collective, n.size_bytes) for n in w if n.kind != "compute"
    )
    assert coll == [
        ((0, 1, 2, 3), "allreduce", 4096 * 4),
        ((0, 1, 2, 3, 4, 5, 6, 7), "allgather", 1024 * 4 * P),
        ((4, 5, 6, 7), "allreduce", 4096 * 4),
    ]
    us = Counter(round(n.seconds * 1e6, 6) for n in w if n.kind == "compute")
    assert us == {0: P, 4: P, 100: P, 3: 2 * P, 2: P, 10: P}
    # the allreduce kernel follows its launcher, c10d::allreduce_, at each rank
    for n in w:
        if n.collective == "allreduce":
            for r in n.ranks:
                (d,) = n.deps[r]
                assert (w.node(d).name, w.node(d).ranks) == ("c10d::allreduce_", (r,))


def test_pytorch_ctrl_deps_add_only_the_callers_already_implied():
    # The converter's ctrl_deps name each operator's caller; its data_deps
    # already order every caller before its callees, so following both adds
    # dependencies but no new ancestors.
    a = read_chakra_workload(DATA / "pytorch" / "pytorch_groups")
    b = read_chakra_workload(DATA / "pytorch" / "pytorch_groups", ctrl_deps=False)

    def ancestors(w):
        out = []
        for n in w:
            out.append(
                set().union(*({d, *out[d]} for ds in n.deps.values() for d in ds))
            )
        return out

    assert [(n.kind, n.ranks, n.name) for n in a] == [
        (n.kind, n.ranks, n.name) for n in b
    ]
    assert ancestors(a) == ancestors(b)
    extra = sum(
        len(set(x.deps[r]) - set(y.deps[r])) for x, y in zip(a, b) for r in x.deps
    )
    assert extra > 0
    assert all(set(y.deps[r]) <= set(x.deps[r]) for x, y in zip(a, b) for r in x.deps)


def test_comm_groups_argument_and_conflicts(tmp_path):
    prefix = _copy(tmp_path, "pytorch/pytorch_groups")
    # the same description as the metadata is accepted, from a mapping or a file
    groups = {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}
    (tmp_path / "groups.json").write_text('{"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}')
    for g in (groups, tmp_path / "groups.json"):
        w = read_chakra_workload(prefix, comm_groups=g)
        assert w.counts()["collective"] == 3
    with pytest.raises(ValueError, match=r"process group '1' is \[0, 1, 2\]"):
        read_chakra_workload(prefix, comm_groups={"1": [0, 1, 2]})


def test_group_order_is_the_communicator_order(tmp_path):
    prefix = _copy(tmp_path, "generator/ALL_REDUCE")

    def regroup(nodes):
        for n in nodes:
            n.attr.add(name="pg_name", string_val="5")
        return nodes

    for r in range(P):
        _edit(prefix, r, regroup)
    order = [3, 1, 0, 2, 7, 6, 5, 4]
    (n,) = read_chakra_workload(prefix, comm_groups={5: order}).nodes
    assert n.ranks == tuple(order)
    with pytest.raises(ValueError, match=r"rank 0 node \d+ .*process group '5' is not"):
        read_chakra_workload(prefix)


# --------------------------------------------------------------------------- #
# Cross-rank agreement
# --------------------------------------------------------------------------- #
def test_dropped_collective_names_rank_node_and_group(tmp_path):
    prefix = _copy(tmp_path, "text/data_parallel")
    last = {}

    def drop_last_collective(nodes):  # nothing depends on the last one
        k = max(i for i, n in enumerate(nodes) if n.type == 7)
        last["id"] = nodes[k].id
        return nodes[:k] + nodes[k + 1 :]

    _edit(prefix, 5, drop_last_collective)
    with pytest.raises(ValueError) as exc:
        read_chakra_workload(prefix)
    text = str(exc.value)
    assert "process group '0'" in text
    assert "rank 5 has 5 collectives" in text
    assert "collective #6" in text and "rank 0 node" in text


def test_changed_size_names_rank_node_and_group(tmp_path):
    prefix = _copy(tmp_path, "text/data_parallel")
    changed = {}

    def resize_first(nodes):
        n = next(n for n in nodes if n.type == 7)
        _attr(n, "comm_size").int64_val += 4
        changed["id"] = n.id
        return nodes

    _edit(prefix, 2, resize_first)
    with pytest.raises(ValueError) as exc:
        read_chakra_workload(prefix)
    text = str(exc.value)
    assert f"rank 2 node {changed['id']} " in text
    assert "process group '0'" in text and "collective #1" in text
    assert "32772 bytes" in text and "32768 bytes" in text


def test_changed_comm_type_names_both_collectives(tmp_path):
    prefix = _copy(tmp_path, "generator/ALL_REDUCE")

    def to_alltoall(nodes):
        _attr(nodes[0], "comm_type").int64_val = wc.io.CHAKRA_COMM_TYPES["ALL_TO_ALL"]
        return nodes

    _edit(prefix, 6, to_alltoall)
    with pytest.raises(ValueError, match=r"rank 6 node \d+ .*is alltoall.*allreduce"):
        read_chakra_workload(prefix)


def test_rank_outside_its_group_is_named(tmp_path):
    prefix = _copy(tmp_path, "pytorch/pytorch_groups")

    def wrong_group(nodes):
        for n in nodes:
            if n.type == 7 and _attr(n, "pg_name").string_val == "2":
                _attr(n, "pg_name").string_val = "1"
        return nodes

    _edit(prefix, 5, wrong_group)
    with pytest.raises(
        ValueError, match=r"rank 5 node 6 .*not a member of process group '1'"
    ):
        read_chakra_workload(prefix)


def _hand_trace(prefix: Path, per_rank: list[list[dict]]) -> None:
    """Write Chakra traces of hand-made nodes (dicts of Node fields + attrs)."""
    msgs = wc.io.chakra_messages()
    Attr, Meta, Node = msgs["AttributeProto"], msgs["GlobalMetadata"], msgs["Node"]
    for r, nodes in enumerate(per_rank):
        recs = [Meta(version="0.0.4").SerializeToString()]
        for spec in nodes:
            spec = dict(spec)
            attrs = spec.pop("attrs", {})
            n = Node(**spec)
            for k, v in attrs.items():
                key = "string_val" if isinstance(v, str) else "int64_val"
                n.attr.append(Attr(name=k, **{key: v}))
            recs.append(n.SerializeToString())
        Path(f"{prefix}.{r}.et").write_bytes(_join(recs))


def _coll(i, pg, deps=(), size=64):
    return {
        "id": i,
        "type": 7,
        "data_deps": list(deps),
        "attrs": {"comm_type": 0, "comm_size": size, "pg_name": pg},
    }


def test_crossed_collective_orders_are_a_cycle(tmp_path):
    groups = {"1": [0, 1], "2": [0, 1]}
    # rank 0 calls group 1 then group 2; rank 1 group 2 then group 1
    _hand_trace(
        tmp_path / "x",
        [[_coll(1, "1"), _coll(2, "2", [1])], [_coll(1, "2"), _coll(2, "1", [1])]],
    )
    with pytest.raises(ValueError, match=r"cycle across ranks.*rank 0 node"):
        read_chakra_workload(tmp_path / "x", comm_groups=groups)
    # in the same order on both ranks they read
    _hand_trace(
        tmp_path / "y",
        [[_coll(1, "1"), _coll(2, "2", [1])], [_coll(7, "1"), _coll(9, "2", [7])]],
    )
    w = read_chakra_workload(tmp_path / "y", comm_groups=groups)
    assert [(n.ranks, n.deps) for n in w] == [
        ((0, 1), {0: (), 1: ()}),
        ((0, 1), {0: (0,), 1: (0,)}),
    ]


def test_zero_time_nodes_pass_their_dependencies_through(tmp_path):
    comp = {"id": 1, "type": 4, "duration_micros": 8}
    load = {"id": 2, "type": 2, "data_deps": [1]}  # MEM_LOAD_NODE
    meta = {"id": 3, "type": 1, "ctrl_deps": [2]}  # METADATA_NODE
    after = {"id": 4, "type": 4, "duration_micros": 2, "data_deps": [3]}
    _hand_trace(tmp_path / "z", [[comp, load, meta, after]])
    w = read_chakra_workload(tmp_path / "z")
    assert [(n.seconds, n.deps) for n in w] == [(8e-6, {0: ()}), (2e-6, {0: (0,)})]
    assert w.node(1).seconds == 2e-6
    # without ctrl_deps the chain breaks at the metadata node
    w = read_chakra_workload(tmp_path / "z", ctrl_deps=False)
    assert [n.deps for n in w] == [{0: ()}, {0: ()}]


def test_messages_match_by_source_destination_and_tag(tmp_path):
    def msg(i, t, src, dst, tag, size, deps=()):
        return {
            "id": i,
            "type": t,
            "data_deps": list(deps),
            "attrs": {
                "comm_src": src,
                "comm_dst": dst,
                "comm_tag": tag,
                "comm_size": size,
            },
        }

    c0 = {"id": 1, "type": 4, "duration_micros": 3}
    r0 = [c0, msg(2, 5, 0, 1, 9, 100, [1]), msg(3, 5, 0, 1, 4, 200)]
    r1 = [
        msg(5, 6, 0, 1, 4, 200),
        msg(6, 6, 0, 1, 9, 100),
        {"id": 7, "type": 4, "data_deps": [6]},
    ]
    _hand_trace(tmp_path / "m", [r0, r1])
    w = read_chakra_workload(tmp_path / "m")
    sends = {n.size_bytes: n for n in w if n.kind == "send"}
    assert set(sends) == {100, 200}
    assert sends[100].ranks == (0, 1) and sends[100].deps[0] == (0,)
    last = w.nodes[-1]
    assert last.kind == "compute" and last.deps == {1: (sends[100].id,)}
    # a size that differs between the two sides
    r1[1] = msg(6, 6, 0, 1, 9, 101)
    _hand_trace(tmp_path / "m", [r0, r1])
    with pytest.raises(
        ValueError, match=r"rank 0 node 2 .*sends 100 bytes.*rank 1 node 6"
    ):
        read_chakra_workload(tmp_path / "m")
    # an unmatched receive
    r1[1] = msg(6, 6, 0, 1, 8, 100)
    _hand_trace(tmp_path / "m", [r0, r1])
    with pytest.raises(ValueError, match=r"no matching"):
        read_chakra_workload(tmp_path / "m")


def test_compute_work_needs_a_model_and_uses_it(tmp_path):
    work = {"id": 1, "type": 4, "attrs": {"num_ops": 4 * 10**9, "tensor_size": 10**8}}
    _hand_trace(tmp_path / "f", [[work]])
    with pytest.raises(ValueError, match=r"rank 0 node 1 .*compute_model"):
        read_chakra_workload(tmp_path / "f")
    model = wc.workloads.Roofline(1e12, 1e10)
    (n,) = read_chakra_workload(tmp_path / "f", compute_model=model).nodes
    # max(4e9 / 1e12, 1e8 / 1e10) = 0.01 s (memory-bound)
    assert n.seconds == pytest.approx(0.01, rel=1e-12)
    assert (n.flops, n.mem_bytes) == (4e9, 1e8)
    # a stated duration is used without a model; with one the model wins
    work["duration_micros"] = 77
    _hand_trace(tmp_path / "f", [[work]])
    assert read_chakra_workload(tmp_path / "f").node(0).seconds == 77e-6
    assert read_chakra_workload(tmp_path / "f", compute_model=model).node(
        0
    ).seconds == (pytest.approx(0.01, rel=1e-12))


def test_comm_root_and_unknown_comm_type(tmp_path):
    root = {
        "id": 1,
        "type": 7,
        "attrs": {"comm_type": 5, "comm_size": 32, "comm_root": 2},
    }
    _hand_trace(tmp_path / "b", [[root]] * 3)
    (n,) = read_chakra_workload(tmp_path / "b").nodes
    assert (n.collective, n.options) == ("broadcast", {"root": 2})
    bad = {"id": 1, "type": 7, "attrs": {"comm_type": 42, "comm_size": 32}}
    _hand_trace(tmp_path / "b", [[bad]] * 3)
    with pytest.raises(
        ValueError, match=r"rank 0 node 1 .*comm_type 42 is not supported"
    ):
        read_chakra_workload(tmp_path / "b")


# --------------------------------------------------------------------------- #
# Bad files
# --------------------------------------------------------------------------- #
def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Chakra traces"):
        read_chakra_workload(tmp_path / "nothing")
    files = sorted((DATA / "generator").glob("ALL_REDUCE.*.et"))[:2]
    with pytest.raises(FileNotFoundError, match=r"gone\.2\.et"):
        read_chakra_workload([*files, tmp_path / "gone.2.et"])


def test_truncated_and_corrupt_files_name_file_and_record(tmp_path):
    prefix = _copy(tmp_path, "text/hybrid")
    path = Path(f"{prefix}.3.et")
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    with pytest.raises(FormatError, match=r"hybrid\.3\.et, record \d+: .*truncated"):
        read_chakra_workload(prefix)
    recs = _split(data)
    path.write_bytes(_join([*recs[:4], b"\x0a\xff\x01"]))  # field 1 claims 255 bytes
    with pytest.raises(
        FormatError, match=r"hybrid\.3\.et, record 4: not a Chakra Node"
    ):
        read_chakra_workload(prefix)
    path.write_bytes(b"")
    with pytest.raises(FormatError, match=r"hybrid\.3\.et: empty file"):
        read_chakra_workload(prefix)


def test_dependency_on_a_missing_node_names_the_file(tmp_path):
    prefix = _copy(tmp_path, "text/hybrid")
    _edit(prefix, 1, lambda nodes: nodes[1:])  # drop the first node: others need it
    with pytest.raises(
        FormatError, match=r"hybrid\.1\.et, record \d+: node \d+ depends"
    ):
        read_chakra_workload(prefix)


# --------------------------------------------------------------------------- #
# Round trips
# --------------------------------------------------------------------------- #
def _mixed_workload() -> wc.workloads.Workload:
    model = wc.workloads.Roofline(1e12, 1e11)
    w = wc.workload(6, name="mixed", compute_model=model)
    f = [w.compute(r, (r + 1) * 1e-6, name=f"fwd {r}") for r in range(6)]
    g = w.compute(2, flops=3e9, mem_bytes=2e8, deps=[f[2]], name="work")
    ar = w.collective("allreduce", 4096, deps={r: [f[r]] for r in range(6)}, name="ar")
    w.collective("allgather", 3 * 512, [4, 2, 0], deps={2: [g], 4: [ar]})
    rs = w.collective("reduce_scatter", 1024, [1, 3, 5], deps={1: [ar]})
    bc = w.collective("broadcast", 100, [5, 1, 3], root=2, deps={3: [rs]})
    ga = w.collective(
        "gather", 3 * 8, [0, 2, 4], root=1, algorithm="generic_linear_gather"
    )
    sc = w.collective("scatter", 99, [5, 0], root=0)
    rd = w.collective("reduce", 7, [1, 0], root=1, deps={0: [ga]})
    a2a = w.collective("alltoall", 6 * 16, deps={0: [sc], 5: [bc]})
    m = w.send(3, 0, 12345, deps={3: [bc], 0: [rd]}, name="activations")
    w.send(0, 3, 0, deps=[m])
    w.compute(0, 2.25e-6, deps=[a2a, m], name="after")
    return w


def test_round_trip_gives_the_same_workload(tmp_path):
    w = _mixed_workload()
    files = write_chakra_workload(w, tmp_path / "w")
    assert [Path(f).name for f in files] == [f"w.{r}.et" for r in range(6)]
    back = read_chakra_workload(tmp_path / "w", compute_model=w.compute_model)
    assert back.name == "mixed"
    _same(w, back)
    assert back.node(6).seconds == w.node(6).seconds  # the model, exactly
    # without the model the work's duration is the stored microseconds
    plain = read_chakra_workload(tmp_path / "w")
    assert plain.node(6).seconds == round(w.node(6).seconds * 1e6) / 1e6
    assert plain.node(6).flops == 0.0


@pytest.mark.parametrize(
    "prefix", ["text/data_parallel", "text/hybrid", "pytorch/pytorch_groups"]
)
def test_fixtures_survive_a_write_and_read(tmp_path, prefix):
    w = read_chakra_workload(DATA / prefix)
    write_chakra_workload(w, tmp_path / "again")
    _same(w, read_chakra_workload(tmp_path / "again"))


def test_written_process_groups_are_pytorch_style_metadata(tmp_path):
    w = wc.workload(4)
    w.collective("allreduce", 64, [2, 3])
    w.collective("allreduce", 64)
    write_chakra_workload(w, tmp_path / "g")
    Node = wc.io.chakra_messages()["Node"]
    recs = _split(Path(tmp_path / "g.2.et").read_bytes())
    nodes = [Node.FromString(r) for r in recs[1:]]
    meta = nodes[0]
    assert (meta.id, meta.type) == (0, wc.io.CHAKRA_NODE_TYPES["METADATA_NODE"])
    # ASTRA-sim's Workload::issue_pytorch_pg_metadata strips the first two
    # and last two characters (Python's str() of a one-string list) and
    # parses JSON
    import json

    groups = json.loads(meta.inputs.values[2:-2])
    assert {g["pg_name"]: g["ranks"] for g in groups} == {
        "1": [2, 3],
        "0": [0, 1, 2, 3],
    }
    assert [_attr(n, "pg_name").string_val for n in nodes[1:]] == ["1", "0"]


def test_writer_refusals(tmp_path):
    w = wc.workload(4)
    a = [w.compute(r, 1e-6) for r in range(4)]
    w.collective("allreduce", 64, deps=a)  # every rank waits for every compute
    with pytest.raises(ValueError, match=r"node 4 .*at rank 0 it depends on node 1"):
        write_chakra_workload(w, tmp_path / "x")
    write_chakra_workload(w, tmp_path / "x", remote_deps="drop")
    back = read_chakra_workload(tmp_path / "x")
    assert back.node(4).deps == {r: (r,) for r in range(4)}
    for make, match in [
        (lambda v: v.collective("allgather", 10, [0, 1, 2]), "not a multiple"),
        (lambda v: v.collective("alltoallv", 64, matrix=np.ones((4, 4))), "alltoallv"),
        (lambda v: v.collective("allreduce", 64, chunks=2), "chunks"),
    ]:
        v = wc.workload(4)
        make(v)
        with pytest.raises(ValueError, match=match):
            write_chakra_workload(v, tmp_path / "y")
    with pytest.raises(ValueError, match="remote_deps"):
        write_chakra_workload(wc.workload(1), tmp_path / "z", remote_deps="keep")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_chakra_workload(wc.workload(1), tmp_path / "no" / "z")


# --------------------------------------------------------------------------- #
# Replaying on machines
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    "topology",
    [wc.mesh(2, 4), wc.topology.cluster(2, 4)],
    ids=["mesh2x4", "cluster2x4"],
)
def test_text_fixture_replays(topology):
    w = read_chakra_workload(DATA / "text" / "hybrid")
    res = w.simulate(topology, wc.NetworkModel(1e10))
    b = res.breakdown()
    total = b["compute_s"] + b["exposed_communication_s"] + b["idle_s"]
    assert np.allclose(total, res.step_time_s, rtol=0, atol=1e-15)
    # each rank's compute is serial on its compute unit: 40+41+50+51+60+61 us
    assert np.allclose(b["compute_s"], 303e-6, rtol=1e-12)
    assert res.step_time_s > 303e-6
    assert set(res.algorithms) == {n.id for n in w if n.kind == "collective"}


def test_compute_only_fixture_time_is_the_chain():
    w = read_chakra_workload(DATA / "generator" / "two_comp_nodes_dependent")
    res = w.simulate(wc.mesh(2, 4), wc.NetworkModel(1e9))
    assert res.step_time_s == pytest.approx(10e-6, rel=1e-12)  # 2 x 5 us per rank
    b = res.breakdown()
    assert np.allclose(b["compute_s"], 10e-6) and np.allclose(b["idle_s"], 0)


@pytest.mark.parametrize("size", [4096, 1 << 20])
def test_compute_then_one_collective_has_the_closed_form_time(tmp_path, size):
    # Two ranks: 7 us of compute, an allreduce of ``size`` bytes, 3 us more.
    # On one full-duplex link of B bytes/s (no latency, no reduction cost)
    # the fastest allreduce exchanges the whole vector both ways at once:
    # size / B (halving it into a reduce-scatter and an allgather takes
    # 2 x (size / 2) / B, the same). Step = 7 us + size / B + 3 us.
    comp = {"id": 1, "type": 4, "duration_micros": 7}
    coll = _coll(2, "", [1], size)
    after = {"id": 3, "type": 4, "duration_micros": 3, "data_deps": [2]}
    _hand_trace(tmp_path / "c", [[comp, coll, after]] * 2)
    w = read_chakra_workload(tmp_path / "c")
    B = 1e9
    res = w.simulate(wc.line(2), wc.NetworkModel(B))
    assert res.step_time_s == pytest.approx(10e-6 + size / B, rel=1e-12)
    b = res.breakdown()
    assert np.allclose(
        b["compute_s"] + b["exposed_communication_s"] + b["idle_s"], res.step_time_s
    )
    assert np.allclose(b["exposed_communication_s"], size / B, rtol=1e-12)


def test_chakra_own_classes_decode_the_written_traces(tmp_path):
    """Chakra's generated et_def_pb2 (when Chakra is installed) reads our files."""
    et_def = pytest.importorskip("chakra.schema.protobuf.et_def_pb2")
    w = _mixed_workload()
    write_chakra_workload(w, tmp_path / "w")
    names = {v: k for k, v in et_def.NodeType.items()}
    for r in range(w.ranks):
        recs = _split(Path(f"{tmp_path}/w.{r}.et").read_bytes())
        meta = et_def.GlobalMetadata.FromString(recs[0])
        assert {a.name for a in meta.attr} >= {"rank", "ranks"}
        nodes = [et_def.Node.FromString(x) for x in recs[1:]]
        mine = [n for n in w if r in n.ranks]
        assert names[nodes[0].type] == "METADATA_NODE"
        assert [n.id for n in nodes[1:]] == [n.id + 1 for n in mine]
        for got, want in zip(nodes[1:], mine, strict=True):
            kind = {"compute": "COMP_NODE", "collective": "COMM_COLL_NODE"}.get(
                want.kind, "COMM_SEND_NODE" if r == want.ranks[0] else "COMM_RECV_NODE"
            )
            assert names[got.type] == kind
            attrs = {a.name: a for a in got.attr}
            if want.kind == "compute":
                assert got.duration_micros == round(want.seconds * 1e6)
            else:
                assert attrs["comm_size"].WhichOneof("value") == "int64_val"
            if want.kind == "collective":
                t = et_def.CollectiveCommType.Name(attrs["comm_type"].int64_val)
                assert wc.io.CHAKRA_COLLECTIVES[t][0] == want.collective


def test_receiver_waits_implied_by_the_sender_are_left_out(tmp_path):
    # The receiver of a message waiting for the sender's own compute adds
    # nothing: the message leaves only after it. A wait for a collective the
    # sender takes part in ("done at the sender") does not imply the
    # receiver's ("done at every rank"), so it is refused.
    w = wc.workload(3)
    a = w.compute(0, 4e-6)
    w.send(0, 1, 1000, deps={0: [a], 1: [a]})
    write_chakra_workload(w, tmp_path / "ok")
    back = read_chakra_workload(tmp_path / "ok")
    assert back.node(1).deps == {0: (0,), 1: ()}
    net = wc.NetworkModel(1e9)
    assert back.simulate(wc.line(3), net).step_time_s == pytest.approx(
        w.simulate(wc.line(3), net).step_time_s, rel=1e-12
    )
    c = w.collective("allreduce", 64, [0, 2])
    w.send(0, 1, 10, deps={0: [c], 1: [c]})
    with pytest.raises(ValueError, match=r"node 3 .*at rank 1 it depends on node 2"):
        write_chakra_workload(w, tmp_path / "no")


def test_generated_training_step_writes_and_replays_the_same(tmp_path):
    from wafercoll.workloads import Layer, Layout, Roofline, training_step

    layers = [Layer(f"l{i}", 1e9, 4096, 8192) for i in range(4)]
    model = Roofline(1e12, 1e12)
    w = training_step(layers, Layout(dp=2, pp=2), model, microbatches=2)
    write_chakra_workload(w, tmp_path / "step")
    back = read_chakra_workload(tmp_path / "step", compute_model=model)
    assert back.counts() == w.counts()
    net = wc.NetworkModel(1e10)
    assert back.simulate(wc.mesh(2, 2), net).step_time_s == pytest.approx(
        w.simulate(wc.mesh(2, 2), net).step_time_s, rel=1e-12
    )


def test_a_join_has_no_chakra_form(tmp_path) -> None:
    w = wc.workload(2)
    a = w.compute(0, 1e-6)
    w.join([a])
    with pytest.raises(ValueError, match="join belongs to no rank"):
        wc.io.write_chakra_workload(w, tmp_path / "j")
