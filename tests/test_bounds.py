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


# --------------------------------------------------------------------------
# Bounds that hold everywhere: the cases that once broke them.


def _two_ranks(latency_s: list[float], bandwidth_Bps: float = 1e9) -> wc.Topology:
    """Links 0 -> 1 and 1 -> 0 with their own latencies."""
    return wc.custom(
        2, [(0, 1), (1, 0)], latency_s=latency_s, bandwidth_Bps=bandwidth_Bps
    )


def _water_fill_by_bisection(cap, start, need) -> float:
    """The smallest T with sum cap_i max(0, T - start_i) >= need, by bisection."""
    cap, start = np.asarray(cap, float), np.asarray(start, float)
    lo, hi = 0.0, float(start.max()) + need / float(cap.sum()) + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if float((cap * np.maximum(0.0, mid - start)).sum()) >= need:
            hi = mid
        else:
            lo = mid
    return hi


@pytest.mark.parametrize(
    ("cap", "start", "need"),
    [
        ([1e9, 1e9], [0.0, 1e-6], 1.0),  # the slow link never helps
        ([1e9, 1e9], [0.0, 1e-6], 3000.0),  # both help after 1 us
        ([2.0, 1.0, 5.0], [3.0, 0.0, 10.0], 4.0),
        ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], 6.0),
        ([1.0], [7.0], 0.5),
    ],
)
def test_water_filling_matches_bisection(cap, start, need) -> None:
    got = bounds._water_fill(np.asarray(cap), np.asarray(start), need)
    assert got == pytest.approx(_water_fill_by_bisection(cap, start, need), rel=1e-9)


def test_ejection_total_holds_with_unequal_incoming_latencies() -> None:
    # Rank 1 receives the byte over link 0 -> 1 (latency 0) in 1 ns; the other
    # link's 1 us latency cannot lower that. Summing both links' capacity from
    # their own latencies used to give (1 B + 1e9 B/s * 1 us) / 2e9 B/s = 0.5 us.
    topo, net = _two_ranks([0.0, 1e-6]), wc.NetworkModel(1e9)
    s = wc.build("generic_binomial_broadcast", ranks=2, size_bytes=1)
    r = wc.simulate(s, topo, net)
    assert r.time_s == pytest.approx(1e-9, rel=1e-12)
    b = bounds.lower_bound(topo, net, "broadcast", 1, ranks=2)
    assert b.components["ejection_total"] == pytest.approx(1e-9, rel=1e-9)
    assert r.time_s >= max(b.components.values())
    assert bounds.optimality_ratio(r) >= 1.0


def test_ported_reduce_bound_holds_with_unequal_incoming_latencies() -> None:
    # A 3-byte reduce into rank 0 through one port of 1 GB/s on each side: the
    # message crosses link 1 -> 0 (latency 0, 10 GB/s) in 3 ns. Endpoint 1's
    # incoming link has latency 1 us, and summing its ports from that latency
    # gave ejection_total_ports ~ 0.5 us: a ratio of 0.006.
    topo = _two_ranks([1e-6, 0.0], bandwidth_Bps=1e10)
    net = wc.NetworkModel(None, ports=1, port_bandwidth_Bps=1e9)
    s = wc.build("generic_binomial_reduce", ranks=2, size_bytes=3)
    r = wc.simulate(s, topo, net)
    b = bounds.result_bound(r)
    assert b.components["ejection_total_ports"] == pytest.approx(3e-9, rel=1e-9)
    assert r.time_s >= max(b.components.values())
    assert bounds.optimality_ratio(r) >= 1.0


def test_schedule_bound_charges_no_reduction_when_nothing_is_reduced() -> None:
    # One rank: no transfer at all, so no start-up and no reduction either.
    topo = wc.ring(2)
    net = wc.NetworkModel(1e9, alpha_s=1e-6, gamma_s_per_byte=1e-9)
    s = wc.build("generic_ring_allreduce", ranks=1, size_bytes=8)
    assert wc.simulate(s, topo, net).time_s == 0.0
    own = bounds.schedule_lower_bound(s, topo, net)
    assert own.time_s == 0.0 and "compute" not in own.components
    # A broadcast copies only: its bound is the link and latency, no compute.
    s = wc.build("generic_binomial_broadcast", ranks=2, size_bytes=8)
    own = bounds.schedule_lower_bound(s, topo, net)
    assert "compute" not in own.components
    assert own.time_s == pytest.approx(1e-6 + 8e-9, rel=1e-9)


def test_schedule_bound_counts_the_reductions_where_they_happen() -> None:
    # Rank 0 reduces 1000 B at 1 ns/B after the first byte could arrive.
    topo = wc.ring(2)
    net = wc.NetworkModel(1e9, alpha_s=1e-6, gamma_s_per_byte=1e-9)
    s = wc.build("generic_binomial_reduce", ranks=2, size_bytes=1000)
    own = bounds.schedule_lower_bound(s, topo, net)
    assert own.components["compute"] == pytest.approx(1e-6 + 1000e-9, rel=1e-9)
    assert wc.simulate(s, topo, net).time_s >= own.time_s


def test_schedule_bound_assumes_nothing_of_its_collective() -> None:
    # A "reduce" into rank 0 that forgets rank 2 (it does not compute its
    # collective): its one message crosses one hop, not the two from rank 2.
    topo, net = wc.ring(4), wc.NetworkModel(1e9, hop_latency_s=1e-6)
    s = wc.Schedule(3, [8], "reduce", root=0)
    s.add_transfer(1, 0, [0], op="reduce")
    with pytest.raises(wc.ScheduleError):
        wc.verify(s)
    r = wc.simulate(s, topo, net)
    own = bounds.schedule_lower_bound(s, topo, net)
    assert own.components["latency"] == pytest.approx(1e-6, rel=1e-9)
    assert r.time_s >= own.time_s


def test_schedule_bound_counts_the_dependency_chain() -> None:
    # 2 (p - 1) dependent steps, each at least alpha + one hop.
    p, alpha, hop = 4, 1e-6, 1e-7
    topo, net = wc.ring(p), wc.NetworkModel(1e9, alpha_s=alpha, hop_latency_s=hop)
    s = wc.build("generic_ring_allreduce", ranks=p, size_bytes=1)
    own = bounds.schedule_lower_bound(s, topo, net)
    assert own.components["latency"] == pytest.approx(
        2 * (p - 1) * (alpha + hop), rel=1e-9
    )
    assert wc.simulate(s, topo, net).time_s >= own.time_s


def test_unknown_collective_is_bounded_by_its_own_messages() -> None:
    # Two messages of 1000 B into rank 2 over a line 0 - 1 - 2: its one link
    # in carries 2000 B, and the far message crosses two hops.
    topo = wc.line(3)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-6, alpha_s=1e-6)
    s = wc.Schedule(3, [1000, 1000], "unknown")
    s.add_transfer(0, 2, [0])
    s.add_transfer(1, 2, [1])
    b = bounds.collective_bound(s, topo, net)
    assert b.collective == "unknown"
    assert b.components["ejection"] == pytest.approx(1e-6 + 2e-6 + 1e-6, rel=1e-9)
    assert b.components["latency"] == pytest.approx(1e-6 + 2e-6, rel=1e-9)
    r = wc.simulate(s, topo, net)
    assert bounds.result_bound(r).time_s == b.time_s
    assert r.time_s >= b.time_s
    with pytest.raises(ValueError, match="own transfers"):
        bounds.lower_bound(topo, net, "unknown", 1000)


def test_lower_bound_docstring_states_what_it_assumes() -> None:
    doc = bounds.lower_bound.__doc__
    assert "as the builders do" not in doc
    assert "mesh_tto_" in doc and "collective_bound" in doc
