"""Synthesis by spanning-tree packing (wc.synthesize, wc.synthesis)."""

from __future__ import annotations

import pytest

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
        wc.synthesize(wc.ring(4), "broadcast", 64)
    with pytest.raises(ValueError, match="hidden routers"):
        wc.synthesize(wc.topology.cluster(2, 2), "allreduce", 64)
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
