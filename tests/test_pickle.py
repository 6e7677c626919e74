"""Every public object pickles and round-trips equal, so schedules, topologies
and results cross process boundaries (process pools, Dask, Ray)."""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import wafercoll as wc


def _topologies() -> list[wc.Topology]:
    return [
        wc.line(5),
        wc.ring(7, bandwidth_Bps=2e9),
        wc.topology.mesh(3, 4),
        wc.topology.torus(4, 4, latency_s=1e-7),
        wc.topology.star(5),
        wc.custom(3, [(0, 1), (1, 0), (1, 2), (2, 1)]),
        wc.topology.cluster(4, 8),
        wc.machines.get("blue_waters").topology(4, 4, size_bytes=8),
        wc.machines.get("wormhole_n150").topology(),
        wc.wafer.wafer_row(16),
        wc.wafer.wafer_grid(4, 4),
        wc.cluster.cluster_machine(4, 8, sockets=2)[0],
    ]


@pytest.mark.parametrize("topo", _topologies(), ids=lambda t: t.name)
def test_topologies_round_trip(topo) -> None:
    back = pickle.loads(pickle.dumps(topo))
    assert back == topo and type(back) is type(topo)
    e = topo.num_endpoints
    for a, b in ((0, e - 1), (e - 1, 0), (1, e // 2)):
        assert np.array_equal(back.route(a, b), topo.route(a, b))


def _schedules() -> list[wc.Schedule]:
    mesh = wc.topology.mesh(4, 4)
    labelled = wc.build("generic_ring_allreduce", ranks=3, size_bytes=96)
    labelled.labels = [f"t{i}" for i in range(labelled.num_transfers)]
    return [
        wc.build("generic_ring_allreduce", ranks=6, size_bytes=4096),
        wc.build("generic_binomial_broadcast", ranks=5, size_bytes=100, root=3),
        wc.build("mesh_tto_allreduce", size_bytes=1 << 16, topology=mesh),
        wc.build("mesh_tto_reduce_scatter", size_bytes=1 << 16, topology=mesh),
        wc.build("wafer_autogen_reduce", ranks=9, size_bytes=4 * 17),
        labelled,
    ]


@pytest.mark.parametrize("s", _schedules(), ids=lambda s: s.name)
def test_schedules_round_trip(s) -> None:
    back = pickle.loads(pickle.dumps(s))
    assert back == s
    assert back.labels == s.labels
    assert wc.verify(back) == wc.verify(s)
    other = wc.build("generic_ring_allreduce", ranks=6, size_bytes=4097)
    assert (other == s) is False


def test_results_models_and_advice_round_trip() -> None:
    topo, net = wc.ring(6), wc.NetworkModel(1e9, hop_latency_s=1e-7, packet_bytes=512)
    s = wc.build("generic_ring_allreduce", size_bytes=6 * 1024, topology=topo)
    r = wc.simulate(s, topo, net, transfers=True, timeline=True)
    for obj in (
        net,
        r,
        wc.verify(s),
        wc.bounds.result_bound(r),
        wc.advise(topo, 4096, network=net),
    ):
        assert pickle.loads(pickle.dumps(obj)) == obj
    r2 = wc.simulate(s, topo, net.replace(hop_latency_s=2e-7))
    assert r2 != r


def test_dataclasses_with_arrays_round_trip_and_compare() -> None:
    n150 = wc.machines.get("wormhole_n150").topology()
    objs = [
        wc.metrics(
            wc.build("generic_ring_allreduce", ranks=4, size_bytes=64), wc.ring(4)
        ),
        wc.wafer.autogen(9, 17),
        wc.synthesis.pack_spanning_trees(wc.topology.mesh(3, 3)),
        wc.wormhole.hop_table("rd", n150),
        wc.algorithm_info("generic_ring_allreduce"),
    ]
    for obj in objs:
        assert pickle.loads(pickle.dumps(obj)) == obj
    assert wc.wafer.autogen(9, 17) != wc.wafer.autogen(9, 18)


def test_topology_without_a_factory_refuses_to_pickle() -> None:
    bare = wc.Topology(wc.ring(4)._core)
    with pytest.raises(TypeError, match="factory"):
        pickle.dumps(bare)


def test_no_attribute_is_a_callable_module() -> None:
    bad = [
        k
        for k in dir(wc)
        if inspect.ismodule(getattr(wc, k)) and callable(getattr(wc, k))
    ]
    assert bad == []


def _simulate_in_worker(s, topo, net) -> float:
    return wc.simulate(s, topo, net).time_s


def test_a_process_pool_simulates_pickled_objects() -> None:
    topo, net = wc.topology.torus(3, 3), wc.NetworkModel(1e9, packet_bytes=1024)
    schedules = [
        wc.build(n, size_bytes=9 * 1024, topology=topo)
        for n in ("generic_ring_allreduce", "torus_ring_bidir_allreduce")
    ]
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        remote = list(pool.map(_simulate_in_worker, schedules, [topo] * 2, [net] * 2))
    assert remote == [wc.simulate(s, topo, net).time_s for s in schedules]
