"""In-network reduction: switch ranks in the schedule, verifier, executor and simulator,
and the NVLS and SHARP builders.

Expected times come from the closed forms stated in wafercoll.simulate and
wafercoll.innet, computed here from link bandwidths, latencies and rates.
"""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
from owned_blocks import assert_owned_blocks

import wafercoll as wc
from wafercoll.innet import nvls_switches, sharp_tree
from wafercoll.topology import fabrics

NVLS = "fabric_nvls_allreduce"
SHARP = "fabric_sharp_allreduce"


def star_allreduce(
    k: int, size: int, *, twice: int = -1, drop: int = -1
) -> wc.Schedule:
    """k GPUs reduce one block into switch rank k, which multicasts the sum back.

    ``twice``: that GPU reduces its block a second time (a double count);
    ``drop``: the multicast does not wait for that GPU's reduction (a race).
    """
    s = wc.Schedule(k + 1, [size], "allreduce", switches=[k])
    red = [s.add_transfer(i, k, [0], op="reduce") for i in range(k)]
    if twice >= 0:
        red.append(s.add_transfer(twice, k, [0], op="reduce"))
    deps = [t for i, t in enumerate(red) if i != drop]
    s.add_transfer(k, list(range(k)), [0], deps=deps)
    return s


# -- the schedule model ------------------------------------------------------------


def test_switch_ranks_hold_nothing_and_need_nothing() -> None:
    s = wc.Schedule(4, [8], switches=[3])
    assert s.switches.tolist() == [False, False, False, True]
    assert s.participants.tolist() == [True, True, True, False]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"switches": [0, 1, 2]}, "at least one rank"),
        ({"switches": [5]}, "switches"),
        ({"switches": [1], "participants": [0, 1]}, "participants"),
        ({"switches": "2"}, "sequence"),
    ],
)
def test_bad_switches_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        wc.Schedule(3, [8], **kwargs)


def test_a_switch_cannot_be_a_root_or_an_owner() -> None:
    with pytest.raises(ValueError, match="root"):
        wc.Schedule(3, [8], "reduce", root=2, switches=[2])
    with pytest.raises(ValueError, match="owner"):
        wc.Schedule(3, [8] * 3, "allgather", switches=[2])
    with pytest.raises(ValueError, match="unknown"):
        wc.Schedule(3, [8], "unknown", switches=[2])


def test_switches_survive_json_and_pickle() -> None:
    s = star_allreduce(3, 24)
    for back in (wc.Schedule.from_json(s.to_json()), pickle.loads(pickle.dumps(s))):
        assert back == s
        assert back.switches.tolist() == [False, False, False, True]
    assert "switches" not in wc.Schedule(2, [8]).to_dict()["collective"]


# -- the verifier and the executor ---------------------------------------------------


def test_concurrent_reductions_into_a_switch_are_proved() -> None:
    s = star_allreduce(5, 40)
    assert wc.verify(s).ok
    x = np.random.default_rng(3).integers(-50, 50, (6, 5))
    out = wc.execute(s, x)
    assert (out[:5] == x[:5].sum(0)).all()


def test_a_switch_that_reduces_a_contribution_twice_is_refuted() -> None:
    with pytest.raises(wc.ScheduleError, match="counted twice") as e:
        wc.verify(star_allreduce(4, 32, twice=2))
    assert e.value.kind == "double_count" and e.value.rank == 4


def test_reading_a_switch_before_a_reduction_lands_is_a_race() -> None:
    with pytest.raises(wc.ScheduleError, match="switch rank 3") as e:
        wc.verify(star_allreduce(3, 24, drop=1))
    assert e.value.kind == "race"


def test_an_ordinary_relay_still_needs_ordered_reductions() -> None:
    # The same program with rank 3 an ordinary non-participant: its cell is
    # written by unordered reductions, a race on a GPU's memory.
    s = wc.Schedule(4, [8], participants=[0, 1, 2])
    red = [s.add_transfer(i, 3, [0], op="reduce") for i in range(3)]
    s.add_transfer(3, [0, 1, 2], [0], deps=red)
    with pytest.raises(wc.ScheduleError, match="neither depends"):
        wc.verify(s)


def test_a_copy_into_a_switch_must_follow_its_reductions() -> None:
    s = wc.Schedule(3, [8], switches=[2])
    a = s.add_transfer(0, 2, [0], op="reduce")
    b = s.add_transfer(1, 2, [0])  # a copy racing the reduction
    s.add_transfer(2, [0, 1], [0], deps=[a, b])
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(s)
    assert e.value.kind == "race"


# -- the simulator: closed forms -----------------------------------------------------


@pytest.mark.parametrize(("k", "size"), [(3, 1001), (5, 777), (8, 4096)])
def test_star_reduce_and_multicast_time(k: int, size: int) -> None:
    bw, lat, alpha, rate = 2e9, 1.5e-6, 4e-7, 3e9
    t = wc.topology.star(k, bandwidth_Bps=bw, latency_s=lat)
    net = wc.NetworkModel(None, alpha_s=alpha, switch_reduce_Bps=rate)
    r = wc.simulate(star_allreduce(k, size), t, net)
    want = 2 * (alpha + lat + size / bw) + k * size / rate
    assert r.time_s == pytest.approx(want, rel=1e-12)
    assert r.switch_busy_s[k] == pytest.approx(k * size / rate, rel=1e-12)
    assert r.switch_busy_s[:k].tolist() == [0.0] * k
    # each GPU's uplink and downlink carry the block once (one multicast)
    assert (r.link_bytes == size).all()


@pytest.mark.parametrize("rate", [1e9, 6e9, 50e9])
def test_pipelined_switch_reduction_time(rate: float) -> None:
    k, n, m = 4, 6, 500  # k GPUs, n packets of m bytes
    bw, lat, alpha = 2e9, 1e-6, 2e-7
    t = wc.topology.star(k, bandwidth_Bps=bw, latency_s=lat)
    net = wc.NetworkModel(None, alpha_s=alpha, packet_bytes=m, switch_reduce_Bps=rate)
    r = wc.simulate(star_allreduce(k, n * m), t, net)
    reduced = alpha + lat + m / bw + k * m / rate + (n - 1) * max(m / bw, k * m / rate)
    assert r.time_s == pytest.approx(reduced + alpha + lat + n * m / bw, rel=1e-12)


def test_free_switch_reduction_costs_nothing_and_keeps_results_identical() -> None:
    s = star_allreduce(4, 1000)
    t = wc.topology.star(4, bandwidth_Bps=1e9)
    r = wc.simulate(s, t, wc.NetworkModel(None))
    assert r.time_s == pytest.approx(2 * 1000 / 1e9, rel=1e-12)
    plain = wc.simulate(
        wc.build("generic_ring_allreduce", ranks=4, size_bytes=64),
        t,
        wc.NetworkModel(None),
    )
    assert plain.switch_busy_s is None


def test_placement_rules_for_switch_ranks() -> None:
    s = star_allreduce(3, 24)
    t = wc.topology.star(3)
    net = wc.NetworkModel(1e9)
    with pytest.raises(ValueError, match="hidden router"):
        wc.simulate(s, t, net, placement=[0, 1, 2, 2])
    with pytest.raises(ValueError, match="not an endpoint"):
        wc.simulate(s, t, net, placement=[3, 1, 2, 0])
    with pytest.raises(ValueError, match="nodes"):
        wc.simulate(star_allreduce(4, 8), t, net)  # 5 ranks, 4 nodes
    assert wc.simulate(s, t, net, placement=[2, 0, 1, 3]).time_s > 0


def test_switch_buffer_and_rate_parameters() -> None:
    t = wc.topology.star(3)
    with pytest.raises(ValueError, match="switch_buffer_bytes"):
        wc.simulate(
            star_allreduce(3, 2000), t, wc.NetworkModel(1e9, switch_buffer_bytes=1000)
        )
    ok = wc.simulate(
        star_allreduce(3, 1000), t, wc.NetworkModel(1e9, switch_buffer_bytes=1000)
    )
    assert ok.time_s > 0
    for bad in (-1.0, 0.0, float("nan")):
        with pytest.raises(ValueError, match="switch_reduce_Bps"):
            wc.NetworkModel(1e9, switch_reduce_Bps=bad)
    with pytest.raises(ValueError, match="switch_buffer_bytes"):
        wc.NetworkModel(1e9, switch_buffer_bytes=0)


# -- the builders ---------------------------------------------------------------------

MACHINES = {
    "dgx_h100": wc.topology.dgx_h100,
    "dgx_b200": wc.topology.dgx_b200,
    "nvl72": wc.topology.gb200_nvl72,
}


@pytest.mark.parametrize("machine", sorted(MACHINES))
@pytest.mark.parametrize(("ranks", "size"), [(None, 1001), (5, 333), (3, 1)])
@pytest.mark.parametrize("via_head", [True, False])
def test_nvls_is_proved_and_sums(
    machine: str, ranks, size: int, via_head: bool
) -> None:
    t = MACHINES[machine]()
    if ranks is not None and machine == "nvl72":
        ranks += 30  # 35 and 33 GPUs of 72
    s = wc.build(
        NVLS, topology=t, ranks=ranks, size_bytes=size, via_head=via_head, chunks=2
    )
    p = t.num_endpoints if ranks is None else ranks
    assert (
        s.num_ranks == t.num_nodes and s.switches.sum() == t.num_nodes - t.num_endpoints
    )
    assert wc.verify(s).ok
    x = np.random.default_rng(p).normal(size=(s.num_ranks, size))
    out = wc.execute(s, x)
    assert np.allclose(out[:p], x[:p].sum(0))
    assert (out[p : t.num_endpoints] == 0).all()  # GPUs left out stay untouched


@pytest.mark.parametrize("machine", sorted(MACHINES))
@pytest.mark.parametrize("via_head", [True, False])
def test_nvls_time_closed_form(machine: str, via_head: bool) -> None:
    t = MACHINES[machine]()
    p = t.num_endpoints
    link = (
        fabrics.NVLINK4_LINK_BPS if machine == "dgx_h100" else fabrics.NVLINK5_LINK_BPS
    )
    w = 18 * link  # a GPU's links to all its switch chips
    size = 18 * p * 64  # shares divide exactly
    s = wc.build(NVLS, topology=t, size_bytes=size, via_head=via_head)
    r = wc.simulate(s, t, wc.NetworkModel(None))
    factor = 2 + 1 / p if via_head else 2
    assert r.time_s == pytest.approx(factor * size / w, rel=1e-9)


def test_nvls_shares_follow_the_link_split() -> None:
    sw = nvls_switches(8, wc.topology.dgx_h100())
    assert [n for n, _ in sw] == [8, 9, 10, 11]
    s = wc.build(
        NVLS, topology=wc.topology.dgx_h100(), size_bytes=18_000, via_head=False
    )
    assert s.block_bytes.tolist() == [5000, 4000, 4000, 5000]


def test_nvls_double_reduce_mutant_is_refuted() -> None:
    # GPU 1's reduction into the switch carries GPU 0's data instead: the
    # switch would sum GPU 0's contribution twice.
    t = wc.topology.dgx_b200()
    s = wc.build(NVLS, topology=t, ranks=5, size_bytes=101)
    doc = s.to_dict()
    first, second = doc["transfers"][:2]
    assert (first["src"], second["src"], first["dst"], second["dst"]) == (
        0,
        1,
        [8],
        [8],
    )
    assert first["op"] == second["op"] == "reduce"
    second["src"] = 0
    with pytest.raises(wc.ScheduleError, match="rank 0") as e:
        wc.verify(wc.Schedule.from_dict(doc))
    assert e.value.kind == "double_count" and e.value.rank == 8


def test_nvls_without_topology_uses_one_switch() -> None:
    s = wc.build(NVLS, ranks=4, size_bytes=10, via_head=False)
    t = wc.topology.star(4, bandwidth_Bps=1e9)
    assert s.num_ranks == 5 and wc.verify(s).ok
    assert wc.simulate(s, t, wc.NetworkModel(None)).time_s == pytest.approx(2e-8)


SMALL_FABRICS = {
    "fat_tree4": lambda: wc.topology.fat_tree(4),
    "rail2x4": lambda: wc.topology.rail_optimized(2, 4, spines=2),
    "rail3x3": lambda: wc.topology.rail_optimized(3, 3, spines=1, nvswitches=2),
    "star5": lambda: wc.topology.star(5),
}


@pytest.mark.parametrize("fabric", sorted(SMALL_FABRICS))
@pytest.mark.parametrize("size", [1, 37, 1000])
def test_sharp_is_proved_and_sums(fabric: str, size: int) -> None:
    t = SMALL_FABRICS[fabric]()
    for p in sorted({t.num_endpoints, max(1, t.num_endpoints - 3)}):
        s = wc.build(SHARP, topology=t, ranks=p, size_bytes=size, chunks=3)
        assert wc.verify(s).ok
        x = np.random.default_rng(size).integers(-9, 9, (s.num_ranks, size))
        assert (wc.execute(s, x)[:p] == x[:p].sum(0)).all()
        assert wc.simulate(s, t, wc.NetworkModel(None)).time_s > 0


def test_sharp_tree_on_a_fat_tree() -> None:
    t = wc.topology.fat_tree(4)  # hosts 0-15, edge 16-23, aggregation 24-31, core 32-35
    tree = sharp_tree(16, t)
    root = next(v for v, u in tree.items() if u < 0)
    assert root == 32  # a core switch: three hops from every host
    assert [tree[h] for h in range(0, 16, 2)] == list(range(16, 24))
    # under one edge switch the edge switch is the root
    assert sharp_tree(2, t) == {0: 16, 1: 16, 16: -1}


def test_sharp_time_on_a_two_level_tree() -> None:
    # 4 hosts, 2 per edge switch of one pod: hosts -> edge -> aggregation root,
    # then one multicast from the root back down (3 links deep, cut-through).
    bw, lat, size, rate = 10e9, 1e-6, 3000, 20e9
    t = wc.topology.fat_tree(4, link_Bps=bw, latency_s=lat)
    s = wc.build(SHARP, topology=t, ranks=4, size_bytes=size)
    assert wc.verify(s).ok
    r = wc.simulate(s, t, wc.NetworkModel(None, switch_reduce_Bps=rate))
    up = (lat + size / bw + 2 * size / rate) * 2  # host -> edge, edge -> aggregation
    down = 2 * lat + size / bw  # aggregation -> edge -> host
    assert r.time_s == pytest.approx(up + down, rel=1e-12)


def test_sharp_double_reduce_mutant_is_refuted() -> None:
    s = wc.build(SHARP, topology=wc.topology.fat_tree(4), ranks=7, size_bytes=21)
    doc = s.to_dict()
    first, second = doc["transfers"][:2]
    assert first["dst"] == second["dst"] == [16]  # hosts 0 and 1 share edge switch 16
    second["src"] = 0
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(wc.Schedule.from_dict(doc))
    assert e.value.kind == "double_count" and e.value.rank == 16
    # and the same reduction duplicated after the switch forwarded: a race
    doc = s.to_dict()
    doc["transfers"].append({**doc["transfers"][0], "deps": []})
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(wc.Schedule.from_dict(doc))
    assert e.value.kind in ("race", "double_count")


@pytest.mark.parametrize(
    ("name", "kwargs", "match"),
    [
        (NVLS, {"chunks": 0}, "chunks"),
        (NVLS, {"chunks": 1 << 20}, "chunks"),
        (NVLS, {"via_head": 1}, "via_head"),
        (SHARP, {"chunks": -2}, "chunks"),
    ],
)
def test_bad_builder_options(name: str, kwargs: dict, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        wc.build(name, ranks=4, size_bytes=64, **kwargs)


def test_builders_refuse_machines_without_switches() -> None:
    with pytest.raises(ValueError, match="applies to"):
        wc.build(NVLS, topology=wc.mesh(2, 2), size_bytes=8)
    with pytest.raises(ValueError, match="wired directly"):
        nvls_switches(16, wc.topology.fat_tree(4))
    with pytest.raises(ValueError, match="no hidden routers"):
        sharp_tree(4, wc.mesh(2, 2))


def test_analyses_that_assume_endpoint_reduction_refuse_switch_ranks() -> None:
    t = wc.topology.dgx_h100()
    net = wc.NetworkModel(None)
    s = wc.build(NVLS, topology=t, size_bytes=4096)
    for call in (
        lambda: wc.bounds.schedule_lower_bound(s, t, net),
        lambda: wc.metrics(s, t),
    ):
        with pytest.raises(ValueError, match="switch ranks"):
            call()


@pytest.mark.parametrize("chunks", [1, 8])
@pytest.mark.parametrize("via_head", [True, False])
def test_the_in_network_bound_holds_and_is_each_gpus_vector_once(
    chunks, via_head
) -> None:
    # With switches that add, a GPU must still send its vector once and
    # receive the sum once: T >= S / W with W a GPU's 450 GB/s to the chips.
    # The endpoint-reduction bound, 2 (p - 1) / p S / W, would be above the
    # NVLS time from the switch: the in-network bound may not be.
    t = wc.topology.dgx_h100()
    net = wc.machines.get("dgx_h100").network()
    size = 1 << 26
    s = wc.build(NVLS, topology=t, size_bytes=size, chunks=chunks, via_head=via_head)
    r = wc.simulate(s, t, net)
    b = wc.bounds.result_bound(r)
    assert b.time_s == pytest.approx(size / 450e9, rel=1e-9)
    assert b == wc.bounds.collective_bound(s, t, net)
    assert r.time_s >= b.time_s * (1 - 1e-12)
    endpoint_bound = 2 * 7 / 8 * size / 450e9
    if not via_head and chunks == 8:
        assert r.time_s < endpoint_bound  # in-network beats what endpoints can
    for name in ("fabric_nvls_reduce_scatter", "fabric_nvls_allgather"):
        half = wc.build(name, topology=t, size_bytes=size)
        rh = wc.simulate(half, t, net)
        assert rh.time_s >= wc.bounds.result_bound(rh).time_s * (1 - 1e-12)


TREE = "fabric_nvls_tree_allreduce"
NODES = {
    "dgx_h100_rail2": lambda: wc.topology.dgx_h100_rail(2),
    "rail3x4": lambda: wc.topology.rail_optimized(3, 4, spines=2, nvswitches=2),
    "rail5x2": lambda: wc.topology.rail_optimized(5, 2, spines=1, nvswitches=3),
}


@pytest.mark.parametrize("machine", sorted(NODES))
@pytest.mark.parametrize("inter", ["tree", "sharp"])
@pytest.mark.parametrize("size", [1, 301])
def test_nvls_tree_is_proved_and_sums(machine: str, inter: str, size: int) -> None:
    t = NODES[machine]()
    s = wc.build(TREE, topology=t, size_bytes=size, inter=inter, chunks=2)
    p = t.num_endpoints
    assert wc.verify(s).ok
    x = np.random.default_rng(size).integers(-99, 99, (s.num_ranks, size))
    assert (wc.execute(s, x)[:p] == x[:p].sum(0)).all()
    assert wc.simulate(s, t, wc.NetworkModel(None)).time_s > 0


def test_nvls_tree_on_one_domain_is_nvls_through_heads() -> None:
    t = wc.topology.gb200_nvl72()
    s = wc.build(TREE, topology=t, size_bytes=18 * 72 * 8)
    r = wc.simulate(s, t, wc.NetworkModel(None))
    w = 18 * fabrics.NVLINK5_LINK_BPS
    assert r.time_s == pytest.approx((2 + 1 / 72) * 18 * 72 * 8 / w, rel=1e-9)


def test_nvls_tree_mutants_and_bad_input() -> None:
    t = wc.topology.dgx_h100_rail(2)
    s = wc.build(TREE, topology=t, size_bytes=64, inter="sharp")
    doc = s.to_dict()
    first, second = doc["transfers"][:2]
    assert first["dst"] == second["dst"] and first["op"] == "reduce"
    second["src"] = first["src"]
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(wc.Schedule.from_dict(doc))
    assert e.value.kind == "double_count"
    with pytest.raises(ValueError, match="inter"):
        wc.build(TREE, topology=t, size_bytes=64, inter="ring")
    with pytest.raises(ValueError, match="topology is required"):
        wc.build(TREE, ranks=8, size_bytes=64)
    with pytest.raises(ValueError, match="differ"):
        wc.build(TREE, topology=t, ranks=12, size_bytes=64)


@pytest.mark.parametrize("ports", [1, 2])
def test_switch_ranks_have_no_ports(ports: int) -> None:
    # GPUs keep their ports (as fast as their links, no latency: cut-through
    # hides them); the switch's router has none, so the closed form holds.
    k, size, bw, lat = 4, 3000, 1e9, 1e-6
    t = wc.topology.star(k, bandwidth_Bps=bw, latency_s=lat)
    net = wc.NetworkModel(None, ports=ports)
    r = wc.simulate(star_allreduce(k, size), t, net)
    assert r.time_s == pytest.approx(2 * (lat + size / bw), rel=1e-12)
    assert (r.injection_busy_s == size / bw).all()
    assert (r.ejection_busy_s == size / bw).all()


def test_switch_ranks_run_under_dataflow_and_task_graphs() -> None:
    s = star_allreduce(3, 1024)
    t = wc.topology.star(3, bandwidth_Bps=1e9)
    r = wc.simulate(
        s, t, wc.NetworkModel(None, packet_bytes=256, dependencies="dataflow")
    )
    # the multicast may start once the reductions are delivered: never later
    assert 0 < r.time_s <= 2 * 1024 / 1e9 + 1e-15
    r = wc.simulate_tasks(
        s,
        t,
        wc.NetworkModel(None, switch_reduce_Bps=1e12),
        task_rank=[0],
        task_seconds=[1e-6],
        before=[3],  # task 0 (id T = 4) after the multicast (transfer 3)
        after=[4],
        transfers=True,
    )
    assert r.task_finish_s[0] == pytest.approx(r.transfer_finish_s[3] + 1e-6)


def test_oversized_schedules_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match="chunks = 4096 would make"):
        wc.build(NVLS, topology=wc.topology.gb200_nvl72(), size_bytes=8, chunks=4096)


def test_sharp_on_a_dragonfly() -> None:
    t = wc.topology.dragonfly(2, 2, 1)
    s = wc.build(SHARP, topology=t, size_bytes=13, chunks=2)
    assert wc.verify(s).ok
    x = np.arange(s.num_ranks * 13).reshape(s.num_ranks, 13)
    p = t.num_endpoints
    assert (wc.execute(s, x)[:p] == x[:p].sum(0)).all()


@pytest.mark.parametrize("writer", ["write_goal", "write_chakra", "write_msccl"])
def test_exports_refuse_switch_ranks(writer: str, tmp_path) -> None:
    s = wc.build(NVLS, ranks=3, size_bytes=12)
    with pytest.raises(ValueError, match="switch ranks"):
        getattr(wc.io, writer)(s, tmp_path / "out")


def test_schedules_without_switches_pickle_as_before() -> None:
    for s in (wc.Schedule(3, [8], "unknown"), wc.Schedule(3, [8], switches=[])):
        back = pickle.loads(pickle.dumps(s))
        assert back == s and not back.switches.any()


def test_command_line_simulates_and_sweeps_in_network_schedules(
    capsys, tmp_path
) -> None:
    from wafercoll.cli import main

    argv = ["simulate", NVLS, "-t", "dgx_h100", "-s", "1MiB", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert 0 < out["lower_bound_s"] <= out["time_s"]
    grid = {"algorithm": [SHARP], "topology": ["fat_tree_k8:4"], "size_bytes": [4096]}
    row = wc.sweep(grid, jobs=1, cache=False, progress=False).iloc[0]
    assert row["status"] == "ok" and row["time_s"] > 0
    assert 0 < row["lower_bound_s"] <= row["time_s"]


def test_workloads_refuse_in_network_algorithms_clearly() -> None:
    w = wc.workload(8)
    w.collective("allreduce", 1 << 20, algorithm=NVLS)
    with pytest.raises(ValueError, match="switch ranks"):
        wc.workloads.simulate_workload(w, wc.topology.dgx_h100(), wc.NetworkModel(None))


RS, AG = "fabric_nvls_reduce_scatter", "fabric_nvls_allgather"


@pytest.mark.parametrize("machine", sorted(MACHINES))
@pytest.mark.parametrize(("ranks", "size"), [(None, 999), (5, 64), (3, 2)])
def test_nvls_reduce_scatter_and_allgather_are_proved(machine, ranks, size) -> None:
    t = MACHINES[machine]()
    if ranks is not None and machine == "nvl72":
        ranks += 40
    p = t.num_endpoints if ranks is None else ranks
    x = np.random.default_rng(size).integers(-9, 9, (t.num_nodes, size))
    rs = wc.build(RS, topology=t, ranks=ranks, size_bytes=size, chunks=2)
    assert wc.verify(rs).ok
    assert_owned_blocks(rs, x, wc.execute(rs, x), p)
    ag = wc.build(AG, topology=t, ranks=ranks, size_bytes=size, chunks=2)
    assert wc.verify(ag).ok
    assert_owned_blocks(ag, x, wc.execute(ag, x), p)


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_nvls_reduce_scatter_and_allgather_times(machine: str) -> None:
    t = MACHINES[machine]()
    p = t.num_endpoints
    link = (
        fabrics.NVLINK4_LINK_BPS if machine == "dgx_h100" else fabrics.NVLINK5_LINK_BPS
    )
    w, size = 18 * link, 18 * p * 64
    net = wc.NetworkModel(None)
    rs = wc.simulate(wc.build(RS, topology=t, size_bytes=size), t, net)
    assert rs.time_s == pytest.approx((1 + 1 / p) * size / w, rel=1e-9)
    ag = wc.simulate(wc.build(AG, topology=t, size_bytes=size), t, net)
    assert ag.time_s == pytest.approx(size / w, rel=1e-9)
