"""All-to-all: the block-moving collectives in the IR, their builders and bounds.

Expected results come from the definition (rank ``i``'s block ``j`` ends at
rank ``j``), computed here with NumPy indexing, and bounds from closed forms
worked out by hand in each test.
"""

from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import bounds

GENERIC = [
    "generic_shift_alltoall",
    "generic_spread_alltoall",
    "generic_bruck_alltoall",
]
GENERIC_V = ["generic_shift_alltoallv", "generic_spread_alltoallv"]
GRID = [
    "mesh_dimension_ordered_alltoall",
    "mesh_direct_alltoall",
    "torus_dimension_ordered_alltoall",
    "torus_direct_alltoall",
]
GRID_V = [n.replace("alltoall", "alltoallv") for n in GRID]


def _check_moves(s: wc.Schedule, seed: int = 0) -> None:
    """Verify ``s`` and execute it: every non-empty block at its target."""
    wc.verify(s)
    rng = np.random.default_rng(seed)
    x = rng.integers(-(10**6), 10**6, (s.num_ranks, 2 * s.num_blocks + 3))
    out = wc.execute(s, x)
    off = wc.analysis.block_element_offsets(s, x.shape[1])
    for b in np.flatnonzero(s.block_bytes > 0):
        o, t = int(s.owners[b]), int(s.targets[b])
        np.testing.assert_array_equal(
            out[t, off[b] : off[b + 1]], x[o, off[b] : off[b + 1]]
        )


@pytest.mark.parametrize("name", GENERIC)
def test_generic_alltoall_builders_for_every_rank_count(name: str) -> None:
    for p in range(1, 34):
        for size in (p * 8, 3 * p + 1):
            _check_moves(wc.build(name, ranks=p, size_bytes=size), seed=p)


@pytest.mark.parametrize("name", GRID)
@pytest.mark.parametrize(
    "shape", [(1, 1), (1, 6), (2, 2), (3, 3), (3, 4), (5, 5), (4, 7)]
)
def test_grid_alltoall_builders(name: str, shape: tuple[int, int]) -> None:
    topo = wc.mesh(*shape) if name.startswith("mesh") else wc.torus(*shape)
    _check_moves(wc.build(name, topology=topo, size_bytes=7 * topo.num_endpoints + 2))


@pytest.mark.parametrize(
    "ranks,ppn", [(1, 1), (6, 1), (6, 6), (8, 2), (12, 4), (12, 3), (15, 5), (33, 3)]
)
def test_hierarchical_alltoall(ranks: int, ppn: int) -> None:
    s = wc.build(
        "cluster_hierarchical_alltoall", ranks=ranks, size_bytes=ranks * 5, ppn=ppn
    )
    _check_moves(s)
    # A shuffled placement of ranks on nodes, from a cluster topology.
    rng = np.random.default_rng(ranks)
    node_of = rng.permutation(np.arange(ranks) // ppn)
    topo = wc.topology.cluster(ranks // ppn, ppn)
    t = wc.build(
        "cluster_hierarchical_alltoall",
        ranks=ranks,
        size_bytes=ranks * 5,
        ppn=ppn,
        rank_to_node=node_of,
    )
    _check_moves(t)
    assert topo.num_endpoints == ranks


def test_hierarchical_alltoall_sends_one_message_per_node_pair() -> None:
    nodes, ppn = 5, 3
    p = nodes * ppn
    s = wc.build("cluster_hierarchical_alltoall", ranks=p, size_bytes=p * 4, ppn=ppn)
    src, dst = s.src // ppn, s.dst // ppn
    inter = src != dst
    pairs = set(zip(src[inter].tolist(), dst[inter].tolist(), strict=True))
    assert int(inter.sum()) == nodes * (nodes - 1) == len(pairs)


@pytest.mark.parametrize("p", range(1, 34))
def test_alltoallv_from_a_matrix_with_zeros(p: int) -> None:
    rng = np.random.default_rng(p)
    mat = rng.integers(0, 50, (p, p)) * (rng.random((p, p)) < 0.6)
    for name in GENERIC_V:
        s = wc.build(name, ranks=p, size_bytes=0, matrix=mat)
        assert s.collective == "alltoallv"
        assert s.size_bytes == int(mat.sum())
        _check_moves(s)
        # a zero entry sends nothing: one transfer per non-zero off-diagonal pair
        assert s.num_transfers == int(((mat > 0) & ~np.eye(p, dtype=bool)).sum())
    topo = wc.torus(1, p)
    for name in ("torus_dimension_ordered_alltoallv", "torus_direct_alltoallv"):
        _check_moves(wc.build(name, topology=topo, size_bytes=0, matrix=mat))


def test_bruck_round_and_byte_counts() -> None:
    # Round k moves the blocks whose distance d has bit k set, so a block
    # travels popcount(d) times: p * sum_d popcount(d) block moves in all.
    for p in (2, 5, 8, 13):
        s = wc.build("generic_bruck_alltoall", ranks=p, size_bytes=p * 16)
        assert wc.verify(s).steps == (p - 1).bit_length()
        moves = p * sum(bin(d).count("1") for d in range(1, p))
        assert int(s.transfer_bytes().sum()) == moves * 16
        assert s.num_transfers == p * (p - 1).bit_length()


def test_verifier_refuses_wrong_alltoalls() -> None:
    p = 3
    s = wc.Schedule(p, [4] * p * p, "alltoall")
    for i in range(p):
        for j in range(p):
            if i != j:
                s.add_transfer(i, [j], i * p + j)
    assert wc.verify(s).ok
    twice = wc.Schedule.from_json(s.to_json())
    twice.add_transfer(0, [1], 1, deps=[0])
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(twice)
    assert e.value.kind == "duplicate"
    short = wc.Schedule(p, [4] * p * p, "alltoall")
    short.add_transfer(0, [1], 1)
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(short)
    assert e.value.kind == "missing"
    summed = wc.Schedule(p, [4] * p * p, "alltoall")
    summed.add_transfer(0, [1], 1, op="reduce")
    with pytest.raises(wc.ScheduleError, match="reduces nothing"):
        wc.verify(summed)
    # The wrong slot: rank 0's block for 1 delivered to 2.
    wrong = wc.Schedule(p, [4] * p * p, "alltoall")
    wrong.add_transfer(0, [2], 1)
    with pytest.raises(wc.ScheduleError):
        wc.verify(wrong)


def test_gather_and_scatter_layouts() -> None:
    g = wc.Schedule(4, [8] * 4, "gather", root=2)
    assert g.owners.tolist() == [0, 1, 2, 3] and g.targets.tolist() == [2] * 4
    for r in (0, 1, 3):
        g.add_transfer(r, [2], r)
    assert wc.verify(g).ok
    sc = wc.Schedule(4, [8] * 4, "scatter", root=1)
    assert sc.owners.tolist() == [1] * 4 and sc.targets.tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="ends at the root"):
        wc.Schedule(2, [1, 1], "gather", root=0, owners=[0, 1], targets=[0, 1])


@pytest.mark.parametrize("name", GENERIC + GRID[:1])
def test_alltoall_round_trips(name: str) -> None:
    topo = wc.mesh(2, 3)
    s = wc.build(name, topology=topo, size_bytes=60)
    back = wc.Schedule.from_json(s.to_json())
    assert back == s and back.targets.tolist() == s.targets.tolist()
    assert pickle.loads(pickle.dumps(s)) == s


def test_alltoallv_blocks_refuses_bad_matrices() -> None:
    with pytest.raises(ValueError, match="square"):
        wc.alltoallv_blocks([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"matrix\[1\]\[0\] must be >= 0"):
        wc.alltoallv_blocks([[0, 1], [-1, 0]])
    with pytest.raises(ValueError, match="whole numbers"):
        wc.alltoallv_blocks([[0, 1.5], [1, 0]])
    with pytest.raises(ValueError, match="2 x 2"):
        wc.build(
            "generic_shift_alltoallv", ranks=2, size_bytes=0, matrix=np.ones((3, 3))
        )


# -- bounds -----------------------------------------------------------------------
def test_alltoall_bound_on_a_ring_is_the_bisection() -> None:
    # p = 8 on a ring of 1 GB/s links, S bytes per rank, S/p per pair. Cutting
    # the ring into two halves of 4: 4 * 4 pairs send S/p across, over the
    # 2 links from A to B.
    p, S, bw = 8, 1 << 20, 1e9
    net = wc.NetworkModel(bw)
    b = bounds.lower_bound(wc.ring(p), net, "alltoall", S)
    bisection = (p // 2) ** 2 * (S / p) / (2 * bw)
    assert b.components["cut"] == pytest.approx(bisection, rel=1e-9)
    # each rank receives (p - 1) S / p over its two incoming links
    eject = (p - 1) * S / p / (2 * bw)
    assert b.components["ejection"] == pytest.approx(eject, rel=1e-9)
    assert b.binding == "cut"


def test_alltoallv_bound_follows_row_and_column_sums() -> None:
    mat = np.zeros((4, 4), dtype=np.int64)
    mat[0, 1] = mat[2, 1] = mat[3, 1] = 1000  # rank 1 is a hot expert
    net = wc.NetworkModel(1e9)
    b = bounds.lower_bound(wc.star(4), net, "alltoallv", matrix=mat)
    # rank 1 receives 3000 B over its one 1 GB/s link
    assert b.components["ejection"] == pytest.approx(3000 / 1e9, rel=1e-9)
    # an empty matrix forces nothing
    zero = bounds.lower_bound(wc.star(4), net, "alltoallv", matrix=np.zeros((4, 4)))
    assert zero.time_s == 0.0


@pytest.mark.parametrize(
    "topo",
    [wc.ring(6), wc.mesh(3, 3), wc.torus(3, 4), wc.topology.cluster(3, 2), wc.star(5)],
    ids=lambda t: t.name,
)
def test_simulated_alltoalls_never_beat_their_bounds(topo: wc.Topology) -> None:
    net = wc.NetworkModel(1e9, alpha_s=1e-7)
    p = topo.num_endpoints
    names = [
        i.name
        for i in wc.algorithms("alltoall") + wc.algorithms("alltoallv")
        if "any" in i.families or topo.kind in i.families
    ]
    assert names
    rng = np.random.default_rng(p)
    mat = rng.integers(0, 4000, (p, p)) * (rng.random((p, p)) < 0.5)
    for name in names:
        for size in (p, 64 * 1024):
            extra = {"matrix": mat} if name.endswith("alltoallv") else {}
            s = wc.build(name, topology=topo, size_bytes=size, **extra)
            r = wc.simulate(s, topo, net)
            for b in (
                bounds.result_bound(r),
                bounds.schedule_lower_bound(s, topo, net),
            ):
                assert r.time_s >= b.time_s, (name, size, b.binding, b.components)


# -- mixture-of-experts traffic ---------------------------------------------------
def test_moe_matrix_rows_and_seed() -> None:
    m = wc.alltoall.moe_matrix(6, 500, 64, experts=12, top_k=3, zipf_s=1.0, seed=3)
    # every token goes to 3 distinct experts, 64 B each time
    np.testing.assert_array_equal(m.sum(axis=1), np.full(6, 500 * 3 * 64))
    again = wc.alltoall.moe_matrix(6, 500, 64, experts=12, top_k=3, zipf_s=1.0, seed=3)
    np.testing.assert_array_equal(m, again)
    other = wc.alltoall.moe_matrix(6, 500, 64, experts=12, top_k=3, zipf_s=1.0, seed=4)
    assert (m != other).any()


def test_moe_matrix_top1_follows_the_zipf_law() -> None:
    # With top_k = 1 a token picks expert e with probability
    # (e + 1)^-s / sum_f (f + 1)^-s; the counts per rank are binomial.
    p, tokens, s = 4, 20000, 1.5
    m = wc.alltoall.moe_matrix(p, tokens, 1, top_k=1, zipf_s=s, seed=0)
    w = np.arange(1, p + 1, dtype=float) ** -s
    prob = w / w.sum()
    n = p * tokens
    got = m.sum(axis=0)
    sd = np.sqrt(n * prob * (1 - prob))
    assert np.all(np.abs(got - n * prob) < 5 * sd), (got, n * prob)
    flat = wc.alltoall.moe_matrix(p, tokens, 1, top_k=1, zipf_s=0.0, seed=0)
    q = 1 / p
    assert np.all(np.abs(flat.sum(axis=0) - n * q) < 5 * np.sqrt(n * q * (1 - q)))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"experts": 5}, "multiple of ranks"),
        ({"top_k": 5}, "top_k"),
        ({"zipf_s": -1.0}, "zipf_s"),
        ({"tokens_per_rank": 10**9}, "gating scores exceed"),
    ],
)
def test_moe_matrix_refuses_bad_input(kwargs: dict, match: str) -> None:
    args = {"ranks": 4, "tokens_per_rank": 10, "bytes_per_token": 8, **kwargs}
    with pytest.raises(ValueError, match=match):
        wc.alltoall.moe_matrix(**args)


# -- one collective, one meaning -----------------------------------------------------
def test_advisor_says_which_schedules_compute_another_collective() -> None:
    net = wc.NetworkModel(1e9)
    adv = wc.advise(wc.mesh(5, 5), 1 << 20, "reduce_scatter", net, keep=None)
    rows = {c.name: c for c in adv.candidates}
    tto = rows["mesh_tto_reduce_scatter"]
    assert "participants: 24 of 25" in tto.differs and "owners: 3 of 25" in tto.differs
    assert "owners: 2 of 25" in rows["mesh_dbtree_reduce_scatter"].differs
    assert "24 of 25" in rows["mesh_ring_bi_odd_reduce_scatter"].differs
    assert rows["mesh_multitree_reduce_scatter"].differs == ""
    text = adv.table()
    for line in text.splitlines():
        if "mesh_tto_reduce_scatter" in line or "mesh_dbtree_reduce_scatter" in line:
            assert "computes another reduce_scatter" in line
        if "mesh_multitree_reduce_scatter" in line:
            assert "computes another" not in line
    # TTO's allreduce leaves one chiplet out, and says so
    ar = wc.advise(
        wc.mesh(5, 5), 1 << 20, "allreduce", net, names=["mesh_tto_allreduce"]
    )
    assert ar.candidates[0].differs == "participants: 24 of 25 ranks"


def test_advise_alltoallv_from_a_routing_matrix() -> None:
    m = wc.alltoall.moe_matrix(9, 64, 1024, top_k=2, zipf_s=1.2, seed=0)
    net = wc.NetworkModel(1e9, alpha_s=1e-6)
    adv = wc.advise(wc.mesh(3, 3), 0, "alltoallv", net, matrix=m, keep=None)
    assert adv.size_bytes == int(m.sum())
    simulated = [c for c in adv.candidates if c.status == "simulated"]
    assert len(simulated) >= 3
    assert all(c.time_s >= adv.bound.time_s for c in simulated)
    with pytest.raises(ValueError, match="only to alltoallv"):
        wc.advise(wc.mesh(3, 3), 1 << 10, "alltoall", net, matrix=m)


# -- the command line -------------------------------------------------------------
def test_cli_advises_an_alltoallv_from_a_matrix(capsys, tmp_path) -> None:
    from wafercoll.cli import main

    code = main(
        [
            "advise",
            "-t",
            "torus:3x3",
            "-c",
            "alltoallv",
            "--format",
            "json",
            "--matrix",
            "moe:tokens=32,bytes=1KiB,top_k=2,zipf=1.0,seed=1",
        ]
    )
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    m = wc.alltoall.moe_matrix(9, 32, 1024, top_k=2, zipf_s=1.0, seed=1)
    assert doc["size_bytes"] == int(m.sum())
    names = {c["name"] for c in doc["candidates"] if c["status"] == "simulated"}
    assert "torus_dimension_ordered_alltoallv" in names
    # the same matrix from a file gives the same bound
    path = tmp_path / "m.csv"
    np.savetxt(path, m, delimiter=",", fmt="%d")
    assert (
        main(
            [
                "advise",
                "-t",
                "torus:3x3",
                "-c",
                "alltoallv",
                "--format",
                "json",
                "--matrix",
                str(path),
            ]
        )
        == 0
    )
    again = json.loads(capsys.readouterr().out)
    assert again["lower_bound"] == doc["lower_bound"]


@pytest.mark.parametrize(
    "argv,text",
    [
        (["--matrix", "moe:foo=1"], "not key=value"),
        (["--matrix", "nope.csv"], "no such file"),
        (["-c", "alltoall", "--matrix", "moe:tokens=1"], "--collective alltoallv"),
        ([], "one of --size-bytes"),
    ],
)
def test_cli_matrix_errors(capsys, argv: list[str], text: str) -> None:
    from wafercoll.cli import main

    args = ["advise", "-t", "mesh:2x2", *argv]
    if "-c" not in argv:
        args += ["-c", "alltoallv"]
    assert main(args) == 2
    assert text in capsys.readouterr().err


def _happens_before(s: wc.Schedule) -> list[set[int]]:
    """Every transfer's transitive dependencies."""
    out: list[set[int]] = []
    order = s.topological_order()
    pos = {int(t): k for k, t in enumerate(order)}
    closure: dict[int, set[int]] = {}
    for t in sorted(range(s.num_transfers), key=pos.__getitem__):
        deps = s.transfer(t)["deps"]
        closure[t] = set(deps).union(*(closure[d] for d in deps))
    out = [closure[t] for t in range(s.num_transfers)]
    return out


# -- formats ------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["goal", "chakra"])
@pytest.mark.parametrize(
    "name",
    ["generic_bruck_alltoall", "generic_shift_alltoall", "generic_spread_alltoall"],
)
def test_alltoall_round_trips_through_goal_and_chakra(
    tmp_path, fmt: str, name: str
) -> None:
    s = wc.build(name, ranks=6, size_bytes=6 * 40)

    def blocks(m):  # the message map: our writers tag message t with t
        t = s.transfer(m.tag)
        return t["blocks"], t["op"]

    if fmt == "goal":
        wc.io.write_goal(s, tmp_path / "a.goal")
        back = wc.io.read_goal(
            tmp_path / "a.goal",
            messages=blocks,
            block_bytes=list(s.block_bytes),
            collective="alltoall",
        )
    else:
        wc.io.write_chakra(s, tmp_path / "x")
        back = wc.io.read_chakra(
            tmp_path / "x",
            messages=blocks,
            block_bytes=list(s.block_bytes),
            collective="alltoall",
        )
    assert back.collective == "alltoall"
    assert back.targets.tolist() == s.targets.tolist()
    # The readers list messages rank by rank; each is labelled with its tag,
    # which our writers set to the transfer's index: map back and compare.
    orig = [int(re.search(r"\(tag (\d+)\)", lab).group(1)) for lab in back.labels]
    assert sorted(orig) == list(range(s.num_transfers))
    # Same messages. The readers give a send's successors on its rank what
    # the send waited for, not its delivery (LogGOPSim's rule: a send
    # completes once injected), so the order read back may be weaker than
    # ours but never stronger, and must still be a correct alltoall.
    before_s, before_b = _happens_before(s), _happens_before(back)
    for i, t in enumerate(orig):
        got, want = back.transfer(i), s.transfer(t)
        assert {orig[d] for d in before_b[i]} <= before_s[t], (i, t)
        del got["deps"], want["deps"]
        assert got == want, (i, t)
    _check_moves(back)


@pytest.mark.parametrize(
    "name,kw",
    [
        ("generic_shift_alltoall", {"ranks": 5}),
        ("generic_bruck_alltoall", {"ranks": 7}),
        ("generic_spread_alltoall", {"ranks": 4}),
        ("mesh_dimension_ordered_alltoall", {"topology": wc.mesh(3, 3)}),
        ("cluster_hierarchical_alltoall", {"topology": wc.topology.cluster(3, 2)}),
    ],
)
def test_alltoall_msccl_export_runs_on_an_independent_runtime(
    name: str, kw: dict
) -> None:
    from msccl_runtime import check

    p = kw.get("ranks") or kw["topology"].num_endpoints
    s = wc.build(name, size_bytes=p * 64, **kw)
    xml = wc.io.msccl_xml(s)
    assert 'coll="alltoall" inplace="0"' in xml
    # the runtime of tests/msccl_runtime.py computes the alltoall in random
    # thread-block orders, and so does the import
    assert check(xml, np.random.default_rng(p), runs=3) == "agree"
    back = wc.io.read_msccl(xml)
    assert back.collective == "alltoall"
    assert back.block_bytes.tolist() == s.block_bytes.tolist()
    assert back.targets.tolist() == s.targets.tolist()


def test_msccl_tools_alltoall_programs_import_and_run() -> None:
    from pathlib import Path

    from msccl_runtime import check

    data = Path(__file__).parent / "data" / "msccl"
    for f in ("a2a_allpairs_8.xml", "a2a_two_step_2x4.xml"):
        text = (data / f).read_text()
        s = wc.io.read_msccl(text)
        assert (s.collective, s.num_ranks, s.num_blocks) == ("alltoall", 8, 64)
        _check_moves(s)
        assert check(text, np.random.default_rng(0)) == "agree"


def test_msccl_export_refuses_what_the_runtime_lacks() -> None:
    v = wc.build(
        "generic_shift_alltoallv", ranks=3, size_bytes=0, matrix=np.ones((3, 3))
    )
    with pytest.raises(ValueError, match="no alltoallv"):
        wc.io.msccl_xml(v)
    uneven = wc.build("generic_shift_alltoall", ranks=3, size_bytes=3 * 3 + 1)
    with pytest.raises(ValueError, match="same number of chunks"):
        wc.io.msccl_xml(uneven)
    text = wc.io.msccl_xml(
        wc.build("generic_shift_alltoall", ranks=2, size_bytes=16)
    ).replace('inplace="0"', 'inplace="1"')
    with pytest.raises(wc.io.FormatError, match="in-place alltoall"):
        wc.io.read_msccl(text)


def test_sweep_says_which_schedules_compute_another_collective() -> None:
    df = wc.sweep(
        {
            "algorithm": ["mesh_tto_reduce_scatter", "mesh_multitree_reduce_scatter"],
            "topology": ["mesh:5x5"],
            "size_bytes": [1 << 16],
        },
        jobs=1,
        cache=None,
        progress=False,
    )
    differs = df.set_index("algorithm")["differs"]
    assert "owners: 3 of 25" in differs["mesh_tto_reduce_scatter"]
    assert differs["mesh_multitree_reduce_scatter"] == ""
