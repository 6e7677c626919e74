"""Lower bounds (wafercoll.bounds): valid for every registered algorithm on
every family, tight where an optimal schedule is known, equal to their closed
forms, and refusing bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import bounds

S_SMALL = 3 << 14


def _machines() -> list[tuple[str, wc.Topology, wc.NetworkModel]]:
    """One or two sizes of every family, each under a model with every cost."""
    n150 = wc.machines.get("wormhole_n150")
    row = wc.machines.get("wse2_row")
    grid = wc.machines.get("wse2_grid")
    bw = wc.machines.get("blue_waters")
    mcm = wc.machines.get("mcm_table_ii")
    busy = wc.NetworkModel(
        1e9, hop_latency_s=1e-7, alpha_s=1e-6, packet_bytes=4096, gamma_s_per_byte=1e-10
    )
    saf = wc.NetworkModel(
        2e9, hop_latency_s=5e-8, packet_bytes=1024, switching="store_and_forward"
    )
    ported = wc.NetworkModel(1e9, ports=1, port_latency_s=2e-8, packet_bytes=512)
    return [
        ("ring5", wc.ring(5), busy),
        ("ring8", wc.ring(8), ported),
        ("mesh3x4", wc.topology.mesh(3, 4), mcm.network()),
        ("mesh4x4", wc.topology.mesh(4, 4), saf),
        ("torus3x5", wc.topology.torus(3, 5), busy),
        ("torus4x4", wc.topology.torus(4, 4), ported),
        ("n150", n150.topology(), n150.network()),
        ("row7", row.topology(7), row.network()),
        ("row16", row.topology(16), row.network()),
        ("grid3x5", grid.topology(3, 5), grid.network()),
        ("cluster3x4", bw.topology(3, 4, size_bytes=S_SMALL), bw.network(S_SMALL)),
        ("cluster4x2", wc.topology.cluster(4, 2), busy),
    ]


def _cases() -> list[tuple[str, str]]:
    out = []
    for label, topo, _ in _machines():
        for a in wc.algorithms():
            if "any" in a.families or topo.kind in a.families:
                out.append((label, a.name))
    return out


_MACHINES = {label: (t, n) for label, t, n in _machines()}


@pytest.mark.parametrize(("machine", "name"), _cases())
def test_no_registered_algorithm_beats_the_bound(machine: str, name: str) -> None:
    topo, net = _MACHINES[machine]
    try:
        s = wc.build(name, size_bytes=S_SMALL, topology=topo)
    except (ValueError, TypeError):
        pytest.skip("not applicable to this machine")
    r = wc.simulate(s, topo, net)
    b = bounds.result_bound(r)
    assert r.time_s >= b.time_s, b.components
    own = bounds.schedule_lower_bound(s, topo, net)
    assert r.time_s >= own.time_s, own.components
    # The schedule's own bound includes the latency one and is at least
    # as large as the busiest endpoint's bytes demand.
    assert bounds.optimality_ratio(r, b) >= 1.0


@pytest.mark.parametrize(
    ("machine", "name", "collective_kw"),
    [
        # ring: the bidirectional ring uses both links into every rank.
        ("ring", "torus_ring_bidir_allreduce", {}),
        # torus with one port per endpoint: the ring saturates every port.
        ("torus_port", "generic_ring_allreduce", {}),
        # mesh: the WSE-2 grid's ramps, saturated by the mesh ring.
        ("wafer_grid", "mesh_ring_allreduce", {}),
        # wafer row: the chain reduce streams into the root's ramp.
        ("wafer_row", "wafer_chain_reduce", {}),
        # cluster: one message between two nodes at a large size.
        ("cluster", "generic_binomial_broadcast", {}),
        # n150: two neighbouring cores exchange over their one routed link.
        ("n150", "generic_ring_allreduce", {"ranks": 2}),
    ],
)
def test_the_bound_is_tight_for_a_known_optimal_case_per_family(
    machine: str, name: str, collective_kw: dict
) -> None:
    size = 64 << 20 if machine in ("cluster", "n150") else 1 << 20
    if machine == "ring":
        topo, net = wc.ring(8), wc.NetworkModel(1e9)
    elif machine == "torus_port":
        topo, net = wc.topology.torus(4, 4), wc.NetworkModel(1e9, ports=1)
    elif machine == "wafer_grid":
        m = wc.machines.get("wse2_grid")
        topo, net = m.topology(4, 4), m.network()
    elif machine == "wafer_row":
        m = wc.machines.get("wse2_row")
        topo, net = m.topology(12), m.network()
    elif machine == "cluster":
        m = wc.machines.get("blue_waters")
        topo, net = m.topology(2, 1, size_bytes=size), m.network(size)
    else:
        m = wc.machines.get("wormhole_n150")
        topo, net = m.topology(), m.network()
    s = wc.build(name, size_bytes=size, topology=topo, **collective_kw)
    r = wc.simulate(s, topo, net)
    assert 1.0 <= bounds.optimality_ratio(r) <= 1.05


@pytest.mark.parametrize("p", [2, 3, 8, 13])
def test_ring_allreduce_bound_is_the_bandwidth_optimal_closed_form(p: int) -> None:
    S, bw = 1 << 20, 2e9
    b = bounds.lower_bound(wc.ring(p), wc.NetworkModel(bw), "allreduce", S)
    # Two links into every rank: 2 (p - 1) S receptions over 2 p bw. With two
    # ranks, routes use one of the two links: each receives S over one.
    expected = S / bw if p == 2 else 2 * (p - 1) * S / (2 * p * bw)
    assert b.time_s == pytest.approx(expected, rel=1e-9)
    assert b.binding in ("ejection_total", "ejection", "injection", "cut")


@pytest.mark.parametrize(("rows", "cols"), [(2, 3), (4, 4), (5, 7)])
def test_mesh_allreduce_bound_counts_every_directed_link(rows: int, cols: int) -> None:
    S, bw = 1 << 22, 1e9
    p = rows * cols
    links = 2 * (rows * (cols - 1) + cols * (rows - 1))
    b = bounds.lower_bound(
        wc.topology.mesh(rows, cols), wc.NetworkModel(bw), "allreduce", S
    )
    total = 2 * (p - 1) * S / (links * bw)
    corner = S / (2 * bw)  # a corner receives S over two links
    assert b.time_s == pytest.approx(max(total, corner), rel=1e-9)


@pytest.mark.parametrize("p", [2, 5, 9])
def test_reduce_and_broadcast_bounds_on_a_line(p: int) -> None:
    S, bw, lat, alpha = 1 << 16, 1e9, 1e-7, 1e-6
    topo = wc.line(p)
    net = wc.NetworkModel(bw, hop_latency_s=lat, alpha_s=alpha)
    red = bounds.lower_bound(topo, net, "reduce", S, root=0)
    # Root 0 has one incoming link: alpha + S / bw + one hop's latency.
    assert red.time_s == pytest.approx(alpha + S / bw + lat, rel=1e-9)
    bc = bounds.lower_bound(topo, net, "broadcast", S, root=0)
    assert bc.time_s == pytest.approx(alpha + S / bw + lat, rel=1e-9)
    # Latency: the far end is p - 1 hops away.
    assert bc.components["latency"] == pytest.approx(alpha + (p - 1) * lat, rel=1e-9)


def test_reduce_scatter_and_allgather_bounds_match_the_schedule_forms() -> None:
    topo, net = wc.ring(6), wc.NetworkModel(1e9)
    S = 6 * 4096
    for kind in ("reduce_scatter", "allgather"):
        b = bounds.lower_bound(topo, net, kind, S)
        # (p - 1) S / p receptions in all, per rank, over two links each.
        assert b.time_s == pytest.approx(5 * S / 6 / 2e9, rel=1e-9)
    mesh = wc.topology.mesh(2, 3)
    for name in ("mesh_ring_reduce_scatter", "mesh_ring_allgather"):
        s = wc.build(name, size_bytes=S, topology=mesh)
        from_schedule = bounds.collective_bound(s, mesh, net)
        generic = bounds.lower_bound(mesh, net, s.collective, S)
        assert from_schedule.time_s <= wc.simulate(s, mesh, net).time_s
        # Same demand when the owners are one block per rank.
        if sorted(np.bincount(s.owners).tolist()) == [1] * 6:
            assert from_schedule.time_s == pytest.approx(generic.time_s, rel=1e-9)


def test_cluster_node_cut_is_the_node_uplink() -> None:
    # Each node's processes hang off the node's switch; S must leave and enter
    # every node through the switch's uplinks.
    S = 1 << 20
    topo = wc.topology.cluster(4, 8)
    links = topo.links
    src, dst, bw = links["src"], links["dst"], links["bandwidth_Bps"]
    node0 = set(range(8))
    switch = {int(d) for s_, d in zip(src, dst, strict=True) if s_ in node0}
    side = node0 | switch
    up = sum(
        float(b)
        for s_, d, b in zip(src, dst, bw, strict=True)
        if s_ in side and d not in side
    )
    b = bounds.lower_bound(topo, wc.NetworkModel(None), "allreduce", S)
    assert b.components["cut"] == pytest.approx(S / up, rel=1e-9)
    assert b.details["cut"].startswith("node ")


def test_schedule_bound_is_the_busiest_link_for_a_ring() -> None:
    p, S, bw = 7, 7 << 12, 1e9
    topo, net = wc.ring(p), wc.NetworkModel(bw)
    s = wc.build("generic_ring_allreduce", size_bytes=S, topology=topo)
    own = bounds.schedule_lower_bound(s, topo, net)
    assert own.binding == "link"
    assert own.time_s == pytest.approx(2 * (p - 1) * (S / p) / bw, rel=1e-9)
    assert wc.simulate(s, topo, net).time_s == pytest.approx(own.time_s, rel=1e-9)


def test_sim_result_reports_bound_and_ratio() -> None:
    topo, net = wc.ring(8), wc.NetworkModel(1e9)
    s = wc.build("generic_ring_allreduce", size_bytes=1 << 20, topology=topo)
    r = wc.simulate(s, topo, net)
    assert bounds.optimality_ratio(r) == pytest.approx(2.0, rel=1e-9)
    b = bounds.result_bound(r)
    assert b.time_s == bounds.collective_bound(s, topo, net).time_s
    assert bounds.optimality_ratio(r, b) == b.ratio(r.time_s)
    assert "lower_bound_s" not in r.summary()  # the bound lives in wc.bounds
    assert "ejection_total" in b._repr_html_()
    d = b.to_dict()
    assert d["binding"] == "ejection_total" and d["collective"] == "allreduce"


def test_bound_follows_placement_and_participants() -> None:
    topo, net = wc.line(8), wc.NetworkModel(1e9, hop_latency_s=1e-6)
    near = bounds.lower_bound(topo, net, "allreduce", 64, ranks=2, placement=[0, 1])
    far = bounds.lower_bound(topo, net, "allreduce", 64, ranks=2, placement=[0, 7])
    assert far.components["latency"] > near.components["latency"]
    assert far.components["latency"] == pytest.approx(7e-6, rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"collective": "allscatter"}, ValueError, "collective"),
        ({"size_bytes": 0}, ValueError, "size_bytes"),
        ({"size_bytes": 1.5}, TypeError, "size_bytes"),
        ({"ranks": 9}, ValueError, "ranks"),
        ({"collective": "reduce", "root": 8}, ValueError, "root"),
        ({"ranks": 2, "placement": [1, 1]}, ValueError, "placement"),
        ({"ranks": 2, "placement": [0, 8]}, ValueError, "placement"),
    ],
)
def test_bad_input_is_refused(kwargs: dict, error: type, text: str) -> None:
    with pytest.raises(error, match=text):
        bounds.lower_bound(wc.ring(8), wc.NetworkModel(1e9), **kwargs)


def test_bad_types_are_refused() -> None:
    with pytest.raises(TypeError, match="topology"):
        bounds.lower_bound("ring", wc.NetworkModel(1e9))
    with pytest.raises(TypeError, match="network"):
        bounds.lower_bound(wc.ring(4), 1e9)
    with pytest.raises(TypeError, match="schedule"):
        bounds.schedule_lower_bound(None, wc.ring(4), wc.NetworkModel(1e9))


def test_single_rank_needs_no_time() -> None:
    b = bounds.lower_bound(wc.ring(4), wc.NetworkModel(1e9), "allreduce", 64, ranks=1)
    assert b.time_s == 0.0
    assert math.isinf(b.ratio(1.0))
