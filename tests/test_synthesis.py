"""Synthesis by spanning-tree packing (wc.synthesize, wc.synthesis)."""

from __future__ import annotations

import numpy as np
import pytest
from fabric_reference import FABRIC_PRESETS
from owned_blocks import assert_owned_blocks

import wafercoll as wc
from wafercoll import synthesis

TOPOLOGIES = [
    wc.line(2),
    wc.line(5),
    wc.ring(3),
    wc.ring(7),
    wc.topology.mesh(2, 3),
    wc.topology.mesh(3, 5),
    wc.topology.mesh(4, 4),
    wc.topology.torus(3, 4),
    wc.topology.torus(5, 5),
]


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
@pytest.mark.parametrize("size", [1, 7, 1007, 1 << 16])
def test_synthesized_allreduce_verifies_and_sums(topo, size, rng) -> None:
    s = wc.synthesize(topo, "allreduce", size)
    assert wc.verify(s).ok
    x = rng.integers(-1000, 1000, size=(s.num_ranks, 29))
    assert (wc.execute(s, x) == x.sum(axis=0)).all()
    r = wc.simulate(s, topo, wc.NetworkModel(1e9))
    assert r.time_s >= wc.bounds.result_bound(r).time_s


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=lambda t: t.name)
@pytest.mark.parametrize(
    "collective", ["reduce_scatter", "allgather", "reduce", "broadcast"]
)
@pytest.mark.parametrize("size", [3, 1001, 1 << 15])
def test_every_synthesized_collective_verifies_and_runs(
    topo, collective, size, rng
) -> None:
    p = topo.num_endpoints
    root = p // 2
    s = wc.synthesize(topo, collective, size, root=root)
    assert s.collective == collective
    assert wc.verify(s).ok
    x = rng.integers(-1000, 1000, size=(p, size))
    total = x.sum(axis=0)
    y = wc.execute(s, x)
    if collective == "broadcast":
        assert (y == x[root]).all()
    elif collective == "reduce":
        assert (y[root] == total).all()
    else:
        assert_owned_blocks(s, x, y, p)
        per_rank = np.bincount(s.owners, weights=s.block_bytes, minlength=p)
        assert per_rank.tolist() == list(wc.kit.split_bytes(size, p))
    r = wc.simulate(s, topo, wc.NetworkModel(1e9, packet_bytes=256))
    assert r.time_s >= wc.bounds.result_bound(r).time_s * (1 - 1e-9)


@pytest.mark.parametrize(
    ("rows", "cols", "torus"),
    [(3, 3, False), (4, 5, False), (3, 4, True), (5, 5, True)],
)
def test_equal_rate_packing_is_integral_and_reaches_the_optimum(
    rows, cols, torus
) -> None:
    # m trees in k copies: every tree spans, no edge is in more than k trees
    # (its copies), and m / k is the edge-count bound when that bound has a
    # denominator of at most MAX_COPIES (Nash-Williams, Tutte).
    from fractions import Fraction

    topo = (wc.topology.torus if torus else wc.topology.mesh)(rows, cols)
    p = rows * cols
    edges = 2 * p if torus else rows * (cols - 1) + cols * (rows - 1)
    bound = Fraction(edges, p - 1)
    pack = synthesis.equal_rate_packing(topo)
    if bound.denominator <= synthesis.MAX_COPIES:
        assert Fraction(pack.trees, pack.copies) == bound
        assert pack.loss == pytest.approx(1.0)
    else:
        assert pack.trees / pack.copies <= bound
    use: dict[tuple[int, int], int] = {}
    for par in pack.parents:
        assert (par == -1).sum() == 1 and (wc.kit.tree_depths(par) >= 0).all()
        for v, u in enumerate(par.tolist()):
            if u >= 0:
                assert topo.link_id(u, v) >= 0
                key = (min(u, v), max(u, v))
                use[key] = use.get(key, 0) + 1
    assert max(use.values()) <= pack.copies
    assert sum(use.values()) == pack.trees * (p - 1)


def test_partition_refuses_too_many_trees() -> None:
    # A 4-cycle with one copy per edge holds one spanning tree, not two.
    with pytest.raises(ValueError, match="edge copies"):
        synthesis.forests.partition_spanning_trees(
            4, [0, 1, 2, 0], [1, 2, 3, 3], [1, 1, 1, 1], 2
        )
    # A path of three nodes with two copies of its edges holds two trees,
    # a triangle with one copy per edge holds one (three edges, two each).
    assert (
        len(synthesis.forests.partition_spanning_trees(3, [0, 1], [1, 2], [2, 2], 2))
        == 2
    )
    with pytest.raises(ValueError, match="edge-disjoint"):
        synthesis.forests.partition_spanning_trees(
            6, [0, 1, 0, 3, 4, 3, 2], [1, 2, 2, 4, 5, 5, 3], [2, 2, 2, 2, 2, 2, 1], 2
        )


def test_startup_model_against_a_hand_count() -> None:
    # 8x8 mesh, 16 trees in 9 copies, radius 8, 8 KiB packets at 1 GB/s:
    # S * 9 / (16 u) + 8 * (9 + 1) * 8192 / u.
    topo = wc.topology.mesh(8, 8)
    size = 1 << 24
    want = size * 9 / (16 * 1e9) + 8 * 10 * 8192 / 1e9
    got = synthesis.startup_model(topo, size, 16, 9, packet_bytes=8192)
    assert got == pytest.approx(want, rel=1e-12)
    # Small sizes: the packet is a tree's share.
    small = synthesis.startup_model(topo, 1 << 12, 16, 9, packet_bytes=8192)
    assert small == pytest.approx(4096 * 9 / 16e9 + 8 * 10 * 256 / 1e9, rel=1e-12)


def test_rooted_shares_meet_the_corner_bound_on_a_mesh() -> None:
    # On a mesh the reduce-scatter's bound is a corner's (p - 1) / p of the
    # vector over its two links; the LP's fluid time must be at least that
    # (a lower bound holds for every schedule) and close to it.
    topo = wc.topology.mesh(4, 4)
    size = 16 * 1000
    pack = synthesis.packing_for(topo, synthesis.equal_rate.rooted_copies(topo))
    for phase in ("reduce_scatter", "allgather"):
        parents, share, fluid = synthesis.rooted_shares(topo, pack, phase, size)
        corner = 15 * 1000 / (2 * 1e9)
        assert fluid >= corner * (1 - 1e-9)
        assert fluid <= corner * 1.05
        # Each rank's trees carry exactly its block.
        roots = (parents == -1).argmax(axis=1)
        for r in range(16):
            assert share[roots == r].sum() == 1000


def test_packings_are_cached_on_disk(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WAFERCOLL_CACHE", str(tmp_path))
    topo = wc.topology.mesh(3, 4)
    a = synthesis.packing_for(topo, 2)
    assert any(tmp_path.rglob("*.pkl")) or any(tmp_path.rglob("output.pkl"))
    b = synthesis.equal_rate_packing(topo, copies=2)
    assert a == b


@pytest.mark.parametrize(
    ("rows", "cols", "torus"),
    [(3, 3, False), (4, 6, False), (3, 4, True), (4, 4, True)],
)
def test_packing_meets_the_edge_count_bound_on_grids(rows, cols, torus) -> None:
    # On meshes and tori the best fractional packing is |E| / (p - 1): the
    # partition into single nodes is the tightest (Nash-Williams, Tutte).
    topo = (wc.topology.torus if torus else wc.topology.mesh)(rows, cols)
    p = rows * cols
    edges = 2 * p if torus else rows * (cols - 1) + cols * (rows - 1)
    pack = synthesis.pack_spanning_trees(topo, min_share=0.0)
    assert pack.optimal
    assert pack.rate == pytest.approx(edges / (p - 1) * 1e9, rel=1e-6)
    assert pack.upper == pytest.approx(pack.rate, rel=1e-6)
    # Every tree spans the topology, and no edge is over its capacity.
    load = {}
    for par in pack.parents:
        assert (par == -1).sum() == 1 and (par >= 0).sum() == p - 1
        assert (wc.kit.tree_depths(par) >= 0).all()
    for par, share in zip(pack.parents, pack.shares, strict=True):
        for v, u in enumerate(par):
            if u >= 0:
                key = (min(u, v), max(u, v))
                assert topo.link_id(u, v) >= 0
                load[key] = load.get(key, 0.0) + share
    assert max(load.values()) <= 1e9 * (1 + 1e-6)


def test_synthesized_allreduce_in_the_fluid_limit_is_the_bound() -> None:
    # With no latency and one packet per chunk on a torus, the schedule's own
    # link bound equals the collective's bound: the packing is exact.
    topo = wc.topology.torus(4, 4)
    net = wc.NetworkModel(1e9)
    s = wc.build(
        "synth_treepack_allreduce",
        size_bytes=1 << 22,
        topology=topo,
        chunk_bytes=1 << 18,
        copies=15,  # 32 edges / 15: exact
    )
    own = wc.bounds.schedule_lower_bound(s, topo, net)
    best = wc.bounds.lower_bound(topo, net, "allreduce", 1 << 22)
    assert own.time_s == pytest.approx(best.time_s, rel=0.02)


def test_advisor_ranks_the_synthesized_schedule() -> None:
    topo = wc.topology.torus(4, 4)
    adv = wc.advise(topo, 1 << 22, network=wc.NetworkModel(1e9, packet_bytes=8192))
    names = [c.name for c in adv.ranked()]
    assert "synth_treepack_allreduce" in names
    assert adv.best.name == "synth_treepack_allreduce"


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="allreduce"):
        wc.synthesize(wc.ring(4), "alltoall", 64)
    with pytest.raises(ValueError, match="root"):
        wc.synthesize(wc.ring(4), "broadcast", 64, root=4)
    with pytest.raises(ValueError, match="copies"):
        synthesis.equal_rate_packing(wc.ring(4), copies=0)
    with pytest.raises(ValueError, match="trees"):
        synthesis.equal_rate_packing(wc.ring(4), copies=3, trees=5)
    with pytest.raises(ValueError, match="hidden routers"):
        synthesis.equal_rate_packing(wc.topology.cluster(2, 2))
    with pytest.raises(ValueError, match="size_bytes"):
        wc.synthesize(wc.ring(4), "allreduce", 0)
    with pytest.raises(ValueError, match="topology"):
        wc.build("synth_treepack_allreduce", ranks=4, size_bytes=64)
    with pytest.raises(ValueError, match="ranks"):
        wc.build(
            "synth_treepack_allreduce", ranks=3, size_bytes=64, topology=wc.ring(4)
        )
    with pytest.raises(TypeError, match="topology"):
        synthesis.pack_spanning_trees("mesh")
    with pytest.raises(ValueError, match="min_share"):
        synthesis.pack_spanning_trees(wc.ring(4), min_share=1.5)
    custom = wc.custom(4, [(0, 1), (1, 0), (2, 3), (3, 2)])
    with pytest.raises(ValueError, match="not connected"):
        synthesis.pack_spanning_trees(custom)


@pytest.mark.parametrize("topo", TOPOLOGIES[1:], ids=lambda t: t.name)
@pytest.mark.parametrize(
    ("roots", "chunks"), [("every", None), ("every", 2), ("shortest", 3)]
)
def test_rooted_allreduce_variants_verify_and_sum(topo, roots, chunks, rng) -> None:
    s = wc.build(
        "synth_treepack_allreduce",
        size_bytes=999,
        topology=topo,
        roots=roots,
        chunks=chunks,
    )
    assert wc.verify(s).ok
    x = rng.integers(-1000, 1000, size=(s.num_ranks, 999))
    assert (wc.execute(s, x) == x.sum(axis=0)).all()


@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_synthesize_with_a_network_keeps_the_fastest_candidate(collective) -> None:
    # Given a network, synthesize simulates its candidates; the schedule it
    # returns is no slower than the default builder's.
    topo = wc.topology.mesh(3, 4)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-8, packet_bytes=512)
    size = 1 << 16
    chosen = wc.simulate(wc.synthesize(topo, collective, size, net), topo, net)
    default = wc.build(f"synth_treepack_{collective}", size_bytes=size, topology=topo)
    assert chosen.time_s <= wc.simulate(default, topo, net).time_s * (1 + 1e-12)
    assert chosen.time_s >= wc.bounds.result_bound(chosen).time_s


def test_large_tori_skip_the_lp() -> None:
    # 512 edges / 255 needs 255 copies; 2 trees in 1 copy reach its floor,
    # so no LP runs (it took minutes) and the packing is the two trees, with
    # the edge-count limit as the ratio it is measured against.
    topo = wc.topology.torus(16, 16)
    pack = synthesis.equal_rate_packing(topo)
    assert (pack.trees, pack.copies) == (2, 1)
    assert pack.optimum == pytest.approx(512 / 255 * pack.unit)
    assert pack.loss == pytest.approx(512 / 510)


SWITCHED = [
    wc.topology.dgx_h100(),
    wc.topology.dgx_h100(merge_switches=True),
    wc.topology.rail_optimized(2, 3),
    wc.topology.rail_optimized(3, 2, nvswitches=1),
    wc.topology.rail_optimized(3, 4, nvswitches=2),
    wc.topology.fat_tree(4),
]


@pytest.mark.parametrize("topo", SWITCHED, ids=lambda t: t.name)
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
@pytest.mark.parametrize("size", [5, 4099])
def test_synthesis_over_switches_verifies_and_runs(topo, collective, size, rng) -> None:
    s = wc.synthesize(topo, collective, size)
    assert wc.verify(s).ok
    p = topo.num_endpoints
    x = rng.integers(-1000, 1000, size=(p, size))
    y = wc.execute(s, x)
    total = x.sum(axis=0)
    if collective == "allreduce":
        assert (y == total).all()
    else:
        assert_owned_blocks(s, x, y, p)
    r = wc.simulate(s, topo, wc.NetworkModel(None, packet_bytes=4096))
    assert r.time_s >= wc.bounds.result_bound(r).time_s * (1 - 1e-9)


def test_switch_neighbours_and_widest_trees_on_a_rail_network() -> None:
    # GPU (node n, local j) = n * g + j. One switch joins the GPUs of a node
    # (NVSwitch) and those of a rail; the widest-route tree from GPU 0 reaches
    # every other node across rail 0 first, then spreads over NVLink, so every
    # block enters each node once.
    nodes, g = 3, 4
    topo = wc.topology.rail_optimized(nodes, g, nvswitches=1)
    nbr = synthesis.rooted.endpoint_neighbours(topo)
    for v in range(nodes * g):
        n, j = divmod(v, g)
        want = {n * g + k for k in range(g) if k != j}
        want |= {m * g + j for m in range(nodes) if m != n}
        assert set(nbr[v]) == want
    tree = synthesis.shortest_path_trees(topo, 1)[0][0]
    for v in range(1, nodes * g):
        n, j = divmod(v, g)
        if n != 0 and j != 0:
            assert tree[v] == n * g  # over NVLink from the rail-0 GPU of its node
        elif n != 0:
            assert tree[v] == 0  # across rail 0 from the root


def test_switched_machines_refuse_what_needs_a_packing() -> None:
    topo = wc.topology.dgx_h100()
    with pytest.raises(ValueError, match="switches"):
        wc.build(
            "synth_treepack_allreduce", size_bytes=64, topology=topo, roots="every"
        )
    with pytest.raises(ValueError, match="switches"):
        wc.build(
            "synth_treepack_allgather", size_bytes=64, topology=topo, trees="packing"
        )
    with pytest.raises(ValueError, match="hidden routers"):
        wc.synthesize(topo, "broadcast", 64)


@pytest.mark.parametrize("spec", FABRIC_PRESETS)
@pytest.mark.parametrize("phase", ["allgather", "reduce_scatter"])
def test_rooted_lp_against_the_cut_bound_on_every_preset(spec, phase) -> None:
    # The LP's fluid time is what its trees achieve when the links are the
    # only limit: never below wc.bounds' cut bound, and equal to it once the
    # loads spread as sprayed packets spread them, on the NVSwitch nodes, the
    # rail network and the fat tree. On the dragonfly the shortest-path trees
    # stay above it (1.07x on 4 groups of 2 routers).
    topo, net = wc.machines.resolve(spec)
    trees = synthesis.shortest_path_trees(topo, 8)
    size = 1 << 26
    for spray in (False, True):
        model = net.replace(spray=True, packet_bytes=1 << 16) if spray else net
        bound = wc.bounds.lower_bound(topo, model, phase, size).time_s
        _, share, fluid = synthesis.rooted_shares(topo, trees, phase, size, spray=spray)
        assert int(share.sum()) == size
        assert fluid >= bound * (1 - 1e-9)
        if spray and not spec.startswith("dragonfly"):
            assert fluid == pytest.approx(bound, rel=1e-6)
        elif spray:
            assert fluid <= 1.10 * bound
