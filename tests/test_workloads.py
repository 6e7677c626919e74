"""Workloads: the graph, its simulation in one event loop, and the results.

Expected values come from closed forms of the simulator's model (a message
of S bytes over one hop at bandwidth bw costs S / bw without latencies) or
from simulating the same schedules alone with :func:`wafercoll.simulate`.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.workloads import Roofline, simulate_workload

NET = wc.NetworkModel(1e9)  # 1 byte per ns, no latencies


def test_one_collective_equals_the_schedule_alone() -> None:
    """A workload of one collective is that schedule's own simulation."""
    topo = wc.mesh(3, 4)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-7, alpha_s=1e-6)
    for name, ranks in (
        ("generic_ring_allreduce", 12),
        ("generic_recursive_doubling_allreduce", 8),
        ("generic_rabenseifner_allreduce", 7),
    ):
        w = wc.workload(12)
        comm = list(range(12 - ranks, 12))[::-1]
        w.collective("allreduce", 3 << 16, comm, algorithm=name)
        res = w.simulate(topo, net)
        alone = wc.simulate(wc.build(name, ranks, 3 << 16), topo, net, placement=comm)
        assert res.step_time_s == alone.time_s
        np.testing.assert_array_equal(res.link_busy_s, alone.link_busy_s)
        assert res.algorithms == {0: name}


def test_two_concurrent_allreduces_on_overlapping_halves_of_an_8x8_mesh() -> None:
    topo = wc.mesh(8, 8)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-7)
    halves = (list(range(40)), list(range(24, 64)))
    name = "generic_ring_allreduce"
    w = wc.workload(64)
    for h in halves:
        w.collective("allreduce", 1 << 20, h, algorithm=name)
    both = w.simulate(topo, net)
    alone = [
        wc.simulate(wc.build(name, len(h), 1 << 20), topo, net, placement=h)
        for h in halves
    ]
    for i, a in enumerate(alone):
        assert both.node_finish_s[i] > a.time_s  # each is slower than alone
    # Link busy time is wire bytes / bandwidth, whoever waits: it adds up.
    total_alone = sum(a.link_busy_s for a in alone)
    np.testing.assert_allclose(both.link_busy_s, total_alone, rtol=1e-12)
    assert both.link_busy_s.sum() == pytest.approx(total_alone.sum(), rel=1e-12)


def test_disjoint_jobs_do_not_interfere_on_disjoint_links() -> None:
    """Two jobs on the two rows of a 2x4 mesh share no link: each runs as alone."""
    topo = wc.mesh(2, 4)
    w = wc.workload(8)
    rows = ([0, 1, 2, 3], [4, 5, 6, 7])
    for r in rows:
        w.collective("allreduce", 4096, r, algorithm="generic_ring_allreduce")
    res = w.simulate(topo, NET)
    for i, r in enumerate(rows):
        alone = wc.simulate(
            wc.build("generic_ring_allreduce", 4, 4096), topo, NET, placement=r
        )
        assert res.node_finish_s[i] == alone.time_s


def test_contention_free_step_time_by_hand_and_breakdown_sums() -> None:
    """compute, allreduce (ring on a 4-ring), compute: the step by hand."""
    p, size, fwd, opt = 4, 4_000_000, 1e-3, 2e-4
    w = wc.workload(p)
    f = [w.compute(r, fwd * (1 + r)) for r in range(p)]
    ar = w.collective("allreduce", size, deps=f, algorithm="generic_ring_allreduce")
    last = [w.compute(r, opt, deps=[ar]) for r in range(p)]
    res = w.simulate(wc.ring(p), NET)
    # Rank 3 enters last, at 4 ms; each ring step then waits for it: the
    # collective ends 2 (p - 1) (S / p) / bw after the last rank entered.
    ring = 2 * (p - 1) * (size / p) / 1e9
    expect = fwd * p + ring + opt
    assert res.step_time_s == pytest.approx(expect, rel=1e-12)
    b = res.breakdown()
    total = b["compute_s"] + b["exposed_communication_s"] + b["idle_s"]
    np.testing.assert_allclose(total, res.step_time_s, rtol=1e-12)
    np.testing.assert_allclose(b["compute_s"], fwd * np.arange(1, p + 1) + opt)
    assert b["overlap_s"] == pytest.approx(np.zeros(p), abs=1e-15)
    # Rank 3 never waits: it computes, communicates, computes.
    assert b["idle_s"][3] == pytest.approx(0.0, abs=1e-15)
    for i in last:
        assert res.node_finish_s[i] == pytest.approx(expect, rel=1e-12)


def test_per_rank_dependencies_let_other_ranks_start_early() -> None:
    """Rank 0 of a send need not wait for rank 1's compute, and vice versa."""
    w = wc.workload(2)
    c1 = w.compute(1, 5e-3)
    m = w.send(0, 1, 10**6, deps={0: [], 1: [c1]})
    res = w.simulate(wc.line(2), NET)
    times = res.rank_times(m)
    assert times[0] == pytest.approx((0.0, 1e-3))  # sent at once, done at 1 ms
    assert times[1] == pytest.approx((5e-3, 5e-3))  # received before it entered


def test_a_dependency_on_a_node_a_rank_is_not_in_waits_for_all_its_ranks() -> None:
    w = wc.workload(3)
    a = w.compute(0, 1e-3)
    b = w.compute(1, 3e-3)
    g = w.collective("allgather", 30, [0, 1], deps={0: [a], 1: [b]})
    c = w.compute(2, 1e-3, deps=[g])  # rank 2 is not in g
    res = w.simulate(wc.line(3), NET)
    assert res.node_start_s[c] == pytest.approx(res.node_finish_s[g])
    assert res.node_finish_s[g] > 3e-3


def test_compute_and_reductions_share_the_compute_unit() -> None:
    """A reduction that arrives while its rank computes waits for the unit."""
    gamma = 1e-9  # 1 ns per byte, as slow as the 1 GB/s link
    net = wc.NetworkModel(1e9, gamma_s_per_byte=gamma)
    w = wc.workload(2)
    w.compute(1, 1e-2)  # rank 1's unit is busy for 10 ms from 0
    w.collective("reduce", 10**6, algorithm="generic_binomial_reduce", root=1)
    res = w.simulate(wc.line(2), net)
    # 1 MB arrives by 1 ms; its reduction (1 ms) can only start at 10 ms.
    assert res.step_time_s == pytest.approx(1e-2 + 10**6 * gamma, rel=1e-9)
    assert res.simulation.compute_busy_s[1] == pytest.approx(1e-2 + 1e-3, rel=1e-9)


def test_auto_picks_the_fastest_applicable_algorithm() -> None:
    topo = wc.mesh(4, 4)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-7, alpha_s=1e-6)
    comm = [0, 1, 2, 3, 4, 5]
    w = wc.workload(16)
    n = w.collective("allreduce", 1 << 16, comm)
    res = w.simulate(topo, net)
    chosen = res.algorithms[n]
    times = {}
    for info in wc.algorithms("allreduce"):
        if "any" not in info.families or info.artifact_names:
            continue
        try:
            s = wc.build(info.name, 6, 1 << 16)
        except ValueError:
            continue
        times[info.name] = wc.simulate(s, topo, net, placement=comm).time_s
    assert times[chosen] == min(times.values())
    assert res.step_time_s == times[chosen]


def test_auto_on_the_whole_machine_uses_the_advisor() -> None:
    topo = wc.mesh(3, 3)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-7)
    w = wc.workload(9)
    n = w.collective("allreduce", 1 << 16)
    res = w.simulate(topo, net)
    adv = wc.advise(topo, 1 << 16, "allreduce", net, keep=None)
    best = next(c for c in adv.ranked() if c.status == "simulated" and not c.differs)
    assert res.algorithms[n] == best.name
    assert res.step_time_s == pytest.approx(best.time_s, rel=1e-12)


def test_roofline_compute_nodes() -> None:
    m = Roofline(1e12, 1e11)
    w = wc.workload(1, compute_model=m)
    a = w.compute(0, flops=4e9, mem_bytes=1e8)  # 4 ms compute, 1 ms memory
    b = w.compute(0, flops=1e9, mem_bytes=5e8, deps=[a])  # 1 ms vs 5 ms
    res = w.simulate(wc.line(1), NET)
    assert res.node_finish_s[b] == pytest.approx(9e-3)
    assert wc.workloads.roofline("h100_sxm_bf16").peak_flops > 0


def test_results_read_and_written(tmp_path) -> None:
    w = wc.workload(4, name="step")
    f = [w.compute(r, 1e-4, name="fwd") for r in range(4)]
    w.collective("allgather", 4096, deps=f, name="gather")
    w.send(0, 3, 100, deps=[f[0]], name="act")
    res = w.simulate(wc.ring(4), NET)
    df = res.to_pandas()
    assert list(df["name"]) == ["fwd"] * 4 + ["gather", "act"]
    assert (df["finish_s"] >= df["start_s"]).all()
    path = tmp_path / "trace.json"
    res.to_perfetto(path)
    doc = json.loads(path.read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    # One slice per (node, rank), plus one per communication node.
    assert len(slices) == 4 + 4 + 2 + 2
    assert max(e["ts"] + e["dur"] for e in slices) == pytest.approx(
        res.step_time_s * 1e6
    )
    ax = res.plot_timeline()
    assert ax.get_ylabel() == "rank"
    ax2 = res.plot_timeline(max_bars=2)  # aggregated
    assert ax2.images
    s = res.summary()
    assert s["compute_s"] + s["exposed_communication_s"] + s["idle_s"] == pytest.approx(
        s["step_time_s"]
    )


def test_a_collective_of_one_rank_and_an_empty_workload() -> None:
    w = wc.workload(2)
    a = w.compute(0, 1e-3)
    one = w.collective("allreduce", 64, [0], deps=[a])
    res = w.simulate(wc.line(2), NET)
    assert res.node_finish_s[one] == pytest.approx(1e-3)
    assert wc.workload(3).simulate(wc.line(3), NET).step_time_s == 0.0


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda w: w.compute(4, 1.0), ValueError, "rank must be <= 3"),
        (lambda w: w.compute(0, -1.0), ValueError, "seconds"),
        (lambda w: w.compute(0), ValueError, "give seconds"),
        (lambda w: w.compute(0, flops=1.0), ValueError, "compute_model"),
        (lambda w: w.compute(0, 1.0, deps=[7]), ValueError, "does not exist"),
        (lambda w: w.collective("alltoal", 8), ValueError, "collective must be one of"),
        (lambda w: w.collective("allreduce", 8, [0, 0]), ValueError, "distinct"),
        (lambda w: w.collective("allreduce", 8, []), ValueError, "at least one"),
        (lambda w: w.collective("allreduce", -8), ValueError, "size_bytes"),
        (
            lambda w: w.collective("allreduce", 8, [0, 1], deps={2: []}),
            ValueError,
            "is not in the node",
        ),
        (lambda w: w.send(1, 1, 8), ValueError, "differ"),
        (lambda w: w.send(0, 1, 8, deps="a"), TypeError, "sequence of node ids"),
    ],
)
def test_bad_nodes_are_refused(call, exc, match) -> None:
    w = wc.workload(4)
    with pytest.raises(exc, match=match):
        call(w)


def test_bad_simulation_inputs_are_refused() -> None:
    w = wc.workload(4)
    w.collective("allreduce", 64, algorithm="mesh_tto_allreduce")
    with pytest.raises(ValueError, match="endpoints"):
        wc.workload(9).simulate(wc.line(4), NET)
    with pytest.raises(TypeError, match="topology"):
        simulate_workload(w, "ring", NET)
    with pytest.raises(ValueError, match="placement"):
        w.simulate(wc.line(4), NET, placement=[0, 1, 2])
    with pytest.raises(ValueError, match="does not apply"):
        w.simulate(wc.line(4), NET)
    with pytest.raises(ValueError, match="complete"):
        wc.workload(2).simulate(
            wc.line(2), wc.NetworkModel(1e9, dependencies="dataflow")
        )
    with pytest.raises(ValueError, match="cycle"):
        s = wc.Schedule.from_arrays(
            2, [8], "unknown", src=[0], dst=[1], block_lo=[0], block_hi=[1]
        )
        wc.simulate_tasks(
            s,
            wc.line(2),
            NET,
            task_rank=[-1],
            task_seconds=[0.0],
            before=[0, 1],
            after=[1, 0],
        )


def test_link_bytes_per_node_add_up_to_the_links_traffic() -> None:
    """Per-node link bytes (from routes) sum to what the simulator carried."""
    topo = wc.mesh(4, 4)
    w = wc.workload(16)
    w.collective(
        "allreduce", 1 << 14, list(range(8)), algorithm="generic_ring_allreduce"
    )
    w.collective("allgather", 1 << 12, list(range(4, 16)))
    w.send(0, 15, 999)
    w.compute(3, 1e-6)
    res = w.simulate(topo, NET)
    total = sum(res.link_bytes(i) for i in range(len(w)))
    np.testing.assert_array_equal(total, res.simulation.link_bytes)
    assert not res.link_bytes(3).any()
