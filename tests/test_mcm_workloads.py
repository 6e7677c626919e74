"""MCM training iterations as workloads against the paper's closed forms.

Expected values come from :mod:`wafercoll.mcm.training` (equations (1)-(2)
and the layer-wise overlap, each AllReduce simulated alone with
:func:`wafercoll.simulate`), never from the workload simulation itself.

Two networks:

* ``DYADIC``: every time in it is an exact binary fraction (bandwidth
  2^33 B/s, hop latency 2^-29 s, clock 2^30 Hz, so a compute time of ``c``
  cycles is ``c / 2^30`` exactly). Sums of such times do not round, so the
  workload, which starts each AllReduce after the compute, must give the
  closed form's numbers exactly;
* the artifact preset of the paper's figures (1 GHz, 357 ns per message),
  whose times are not binary fractions: an AllReduce simulated from time
  ``T`` can then order two packets that tie in the same cycle otherwise
  than one simulated from 0. There the workload must equal the closed form
  evaluated at the same time origin (the schedule simulated behind a
  ``T``-second task with :func:`wafercoll.simulate_tasks`).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.experiments import mcm_common, mcm_epochs, mcm_sensitivity
from wafercoll.mcm import systolic, training
from wafercoll.mcm import workloads as mw

CLOCK_HZ = 2.0**30
DYADIC = wc.NetworkModel(
    2.0**33,
    hop_latency_s=2.0**-29,
    packet_bytes=8192,
    flit_bytes=512,
    pad_packets=True,
    switching="cut_through",
    clock_Hz=CLOCK_HZ,
    dependencies="complete",
    name="dyadic",
)
RING, RING_BI, RING_BI_ODD = (
    "mesh_ring_allreduce",
    "mesh_ring_bi_allreduce",
    "mesh_ring_bi_odd_allreduce",
)
RING_2D, DBTREE, MULTITREE, TTO = (
    "mesh_ring_2d_allreduce",
    "mesh_dbtree_allreduce",
    "mesh_multitree_allreduce",
    "mesh_tto_allreduce",
)

#: (DNN, rows, cols, algorithm): both DNN sizes, odd and even meshes, a
#: non-square one, every algorithm family.
CASES = [
    ("alexnet", 3, 3, TTO),
    ("alexnet", 3, 3, DBTREE),
    ("alexnet", 2, 4, RING_BI),
    ("alexnet", 3, 4, MULTITREE),
    ("AlphaGoZero", 3, 3, RING_BI_ODD),
    ("AlphaGoZero", 4, 4, TTO),
    ("AlphaGoZero", 3, 3, RING_2D),
    ("AlphaGoZero", 2, 3, RING),
]


@functools.cache
def closed_allreduce(alg: str, m: int, n: int, weights: int, net_name: str) -> float:
    net = DYADIC if net_name == "dyadic" else wc.mcm.ARTIFACT
    return training.allreduce_time(alg, m, n, weights, net)


def parameters(model: str) -> int:
    return training.gradient_bytes(model) // training.BYTES_PER_PARAMETER


def groups_of(model: str) -> list[tuple[int, int]]:
    return training.gradient_groups([x.parameters for x in systolic.dnn_layers(model)])


@pytest.mark.parametrize(("model", "m", "n", "alg"), CASES)
def test_serial_iteration_is_equation_2(model: str, m: int, n: int, alg: str) -> None:
    T = training.compute_time(model, clock_Hz=CLOCK_HZ)
    C = closed_allreduce(alg, m, n, parameters(model), "dyadic")
    w = mw.dnn_workload(model, alg, m, n, clock_Hz=CLOCK_HZ)
    res = mw.simulate_iteration(w, m, n, DYADIC)
    assert res.step_time_s == pytest.approx(T + C, rel=1e-12, abs=0)
    (ar,) = mw.allreduce_nodes(w)
    assert res.node_start_s[ar.id] == pytest.approx(T, rel=1e-12, abs=0)
    # The epoch, equation (1), over the chiplets that train.
    used = m * n - 1 if alg == TTO else m * n
    assert len(mw.training_chiplets(alg, m, n)) == used
    assert training.epoch_time(used, res.step_time_s, 0.0) == pytest.approx(
        training.epoch_time(used, T, C), rel=1e-12
    )


@pytest.mark.parametrize(("model", "m", "n", "alg"), CASES)
def test_overlapped_iteration_is_the_closed_form(
    model: str, m: int, n: int, alg: str
) -> None:
    ready, total = training.gradient_ready(model, clock_Hz=CLOCK_HZ)
    groups = groups_of(model)
    expected = training.overlapped_iteration(
        ready, groups, total, lambda w: closed_allreduce(alg, m, n, w, "dyadic")
    )
    w = mw.dnn_workload(model, alg, m, n, clock_Hz=CLOCK_HZ, overlap=True)
    res = mw.simulate_iteration(w, m, n, DYADIC)
    assert res.step_time_s == pytest.approx(expected, rel=1e-12, abs=0)
    # Each group's AllReduce runs alone: its span is its time simulated alone.
    for node in mw.allreduce_nodes(w):
        span = res.node_finish_s[node.id] - res.node_start_s[node.id]
        alone = closed_allreduce(alg, m, n, node.size_bytes // 4, "dyadic")
        assert span == pytest.approx(alone, rel=1e-9)


def test_a_small_topology_file(tmp_path) -> None:
    """Three layers: the first two join in one AllReduce, the last alone."""
    path = tmp_path / "tiny.csv"
    path.write_text(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
        "Channels, Num Filter, Strides,\n"
        "conv1, 10, 10, 3, 3, 4, 8, 1,\n"  # 288 weights: joins conv2's group
        "conv2, 8, 8, 3, 3, 8, 512, 1,\n"  # 36864 weights
        "fc, 1, 1, 1, 1, 4096, 16, 1,\n"  # 65536 weights
    )
    model = str(path)
    groups = groups_of(model)
    assert groups == [(0, 288 + 36864), (2, 65536)]
    ready, total = training.gradient_ready(model, clock_Hz=CLOCK_HZ)
    for alg, m, n in ((TTO, 3, 3), (RING_BI, 2, 2)):
        w = mw.dnn_workload(model, alg, m, n, clock_Hz=CLOCK_HZ, overlap=True)
        assert [x.size_bytes for x in mw.allreduce_nodes(w)] == [4 * 65536, 4 * 37152]
        expected = training.overlapped_iteration(
            ready,
            groups,
            total,
            lambda v, a=alg, m=m, n=n: closed_allreduce(a, m, n, v, "dyadic"),
        )
        got = mw.simulate_iteration(w, m, n, DYADIC).step_time_s
        assert got == pytest.approx(expected, rel=1e-12, abs=0)


def behind(schedule: wc.Schedule, mesh: wc.Topology, T: float) -> float:
    """The schedule simulated with every transfer behind a T-second task."""
    k = schedule.num_transfers
    res = wc.simulate_tasks(
        schedule,
        mesh,
        wc.mcm.ARTIFACT,
        task_rank=[0],
        task_seconds=[T],
        before=np.full(k, k),
        after=np.arange(k),
    )
    return res.time_s


@pytest.mark.parametrize(("model", "m", "n", "alg"), CASES[:4])
def test_artifact_preset_is_the_closed_form_at_the_same_time_origin(
    model: str, m: int, n: int, alg: str
) -> None:
    T = training.compute_time(model)
    top = wc.topology.mesh(m, n)
    s = wc.build(alg, topology=top, size_bytes=training.gradient_bytes(model))
    w = mw.dnn_workload(model, alg, m, n)
    got = mw.simulate_iteration(w, m, n).step_time_s
    assert got == pytest.approx(behind(s, top, T), rel=1e-12, abs=0)
    # From time 0 (no compute) it is the AllReduce simulated alone.
    w0 = mw.iteration_workload(alg, m, n, training.gradient_bytes(model), 0.0)
    C = closed_allreduce(alg, m, n, parameters(model), "artifact")
    assert mw.simulate_iteration(w0, m, n).step_time_s == pytest.approx(C, rel=1e-12)


def ancestors(w: wc.workloads.Workload, node: int) -> set[int]:
    seen: set[int] = set()
    todo = [node]
    while todo:
        for deps in w.node(todo.pop()).deps.values():
            for d in deps:
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
    return seen


def test_dependencies_mirror_the_equations() -> None:
    # Serial: the AllReduce waits for every chiplet's compute; TTO's
    # excluded corner (wc.mcm.tto_trees) computes nothing.
    excluded = wc.mcm.tto_trees(3, 3).excluded
    w = mw.iteration_workload(TTO, 3, 3, 1 << 20, 1e-3)
    computes = [x for x in w if x.kind == "compute"]
    assert sorted(x.ranks[0] for x in computes) == [
        r for r in range(9) if r != excluded
    ]
    (ar,) = mw.allreduce_nodes(w)
    assert ar.ranks == tuple(range(9)) and ar.algorithm == TTO
    assert {x.id for x in computes} <= ancestors(w, ar.id)
    # Overlap: group k waits for group k - 1 and for its first layer's
    # gradients on every chiplet, not for the layers after it.
    ready = {0: 3e-6, 1: 2e-6, 2: 1e-6}
    w = mw.overlapped_workload(RING, 2, 2, ready, [(0, 9), (1, 9), (2, 9)], 3e-6)
    ars = mw.allreduce_nodes(w)
    for prev, nxt in zip(ars, ars[1:], strict=False):
        assert prev.id in ancestors(w, nxt.id)
    first = ancestors(w, ars[0].id)
    chain = [x for x in w if x.kind == "compute" and x.ranks == (0,)]
    assert [x.seconds for x in chain] == pytest.approx([1e-6, 1e-6, 1e-6])
    assert chain[0].id in first and chain[1].id not in first


def test_per_rank_entry_without_barrier() -> None:
    w = mw.iteration_workload(RING, 2, 2, 1 << 16, 1e-6, barrier=False)
    (ar,) = mw.allreduce_nodes(w)
    for r, deps in ar.deps.items():
        (d,) = deps
        assert w.node(d).kind == "compute" and w.node(d).ranks == (r,)
    # Every chiplet is ready at once: the same iteration as with the barrier.
    barrier = mw.iteration_workload(RING, 2, 2, 1 << 16, 1e-6)
    t0 = mw.simulate_iteration(w, 2, 2, DYADIC).step_time_s
    assert t0 == mw.simulate_iteration(barrier, 2, 2, DYADIC).step_time_s


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="unknown algorithm|mesh_nope"):
        mw.iteration_workload("mesh_nope_allreduce", 2, 2, 64, 1e-6)
    with pytest.raises(ValueError, match="allreduce builder"):
        mw.training_chiplets("generic_ring_allgather", 2, 2)
    with pytest.raises(ValueError, match="compute_s must be >= 0"):
        mw.iteration_workload(RING, 2, 2, 64, -1.0)
    with pytest.raises(ValueError, match="size_bytes must be >= 1"):
        mw.iteration_workload(RING, 2, 2, 0, 1e-6)
    with pytest.raises(ValueError, match="latest ready time"):
        mw.overlapped_workload(RING, 2, 2, {0: 2.0}, [(0, 9)], 1.0)
    with pytest.raises(ValueError, match="layer 3 has no ready time"):
        mw.overlapped_workload(RING, 2, 2, {0: 1.0}, [(3, 9)], 1.0)
    with pytest.raises(ValueError, match="chiplets must be <= 3"):
        mw.iteration_workload(RING, 2, 2, 64, 1e-6, chiplets=[4])
    with pytest.raises(TypeError, match="barrier"):
        mw.iteration_workload(RING, 2, 2, 64, 1e-6, barrier="yes")
    w = mw.iteration_workload(RING, 2, 2, 64, 1e-6)
    with pytest.raises(ValueError, match="4 ranks, the 3x3 mesh 9"):
        mw.simulate_iteration(w, 3, 3)
    with pytest.raises(ValueError, match="complete"):  # Table II reads dataflow
        mw.simulate_iteration(w, 2, 2, wc.mcm.TABLE_II)
    with pytest.raises(ValueError, match="via must be one of closed_form, workload"):
        mcm_epochs.run_fig10(quick=True, via="both")


# -- the figures' workload path ---------------------------------------------------


def numeric(cols: dict) -> dict[str, np.ndarray]:
    return {
        k: np.asarray(v, float)
        for k, v in cols.items()
        if np.asarray(v).dtype.kind == "f"
    }


@pytest.mark.parametrize("run", [mcm_epochs.run_fig11, mcm_sensitivity.run_fig13])
def test_fig11_and_fig13_through_workloads(run) -> None:
    closed, f_closed = run(quick=True)
    work, f_work = run(quick=True, via="workload")
    # The closed form also runs the artifact's own Ring-2D and DBTree (on
    # another topology), which the workloads (meshes only) do not.
    own = {mcm_common.paper_label(v) for v in mcm_common.ARTIFACT_SCHEDULES.values()}
    keep = [i for i, a in enumerate(closed["algorithm"]) if a not in own]
    assert set(closed["algorithm"]) - set(work["algorithm"]) == own
    assert len(keep) == len(work["algorithm"])
    for key in ("model", "algorithm"):
        assert [closed[key][i] for i in keep] == work[key]
    a, b = numeric(closed), numeric(work)
    for key in b:
        np.testing.assert_allclose(b[key], a[key][keep], rtol=1e-9, err_msg=key)
    ids_closed = [f["id"] for f in f_closed]
    extra = [i for i in ids_closed if i not in {f["id"] for f in f_work}]
    assert [i for i in ids_closed if i not in extra] == [f["id"] for f in f_work]
    assert all(
        i.startswith("artifact_cycles.") and i.endswith("_artifact") for i in extra
    )


def test_fig10_through_workloads_at_the_same_time_origin() -> None:
    """Each row: the closed form with the AllReduce simulated behind the compute."""
    full, _ = mcm_epochs.run_fig10(quick=True)
    work, _ = mcm_epochs.run_fig10(quick=True, via="workload")
    # The closed form also runs the artifact's own Ring-2D and DBTree; the
    # workloads (meshes only) do not.
    own = {
        mcm_common.paper_label(v): b for b, v in mcm_common.ARTIFACT_SCHEDULES.items()
    }
    keep = [i for i, a in enumerate(full["algorithm"]) if a not in own]
    closed = {k: [v[i] for i in keep] for k, v in full.items()}
    assert closed["algorithm"] == work["algorithm"]
    for i, label in enumerate(full["algorithm"]):
        if label not in own:
            continue
        m, n = map(int, full["mesh"][i].split("x"))
        # The artifact's DBTree leaves an odd mesh's last chiplet out
        # (recovered details 2.6); its Ring-2D spans every chiplet.
        spans = m * n - 1 if own[label] == "DBTree" and m * n % 2 else m * n
        assert full["chiplets_training"][i] == spans
        size = training.gradient_bytes(full["model"][i])
        r = mcm_common.simulate_variant(own[label], m, n, size)
        assert full["allreduce_s"][i] == r.time_s
    labels = {mcm_common.paper_label(a): a for a in (RING_BI, RING_BI_ODD)}
    labels.update(
        {mcm_common.paper_label(a): a for a in mcm_common.algorithms_for(4, 4)}
    )
    schedules: dict = {}
    for i, ms in enumerate(work["mesh"]):
        m, n = map(int, ms.split("x"))
        model, label = work["model"][i], work["algorithm"][i]
        alg, size = labels[label], training.gradient_bytes(model)
        top = wc.topology.mesh(m, n)
        key = (alg, m, n, size)
        if key not in schedules:
            schedules[key] = wc.build(alg, topology=top, size_bytes=size)
        T = work["compute_s"][i]
        used = m * n - 1 if alg == TTO else m * n
        assert work["chiplets_training"][i] == closed["chiplets_training"][i] == used
        step = behind(schedules[key], top, T)
        assert work["epoch_s"][i] == pytest.approx(
            training.epoch_time(used, step, 0.0), rel=1e-12
        )
        assert work["allreduce_s"][i] == pytest.approx(step - T, rel=1e-9)
        theirs = work["artifact_compute_s"][i]
        if math.isfinite(theirs):
            art = behind(schedules[key], top, theirs)
            assert work["artifact_epoch_s"][i] == pytest.approx(
                training.epoch_time(used, art, 0.0), rel=1e-12
            )
        # The closed form: the AllReduce simulated from time 0.
        C = closed_allreduce(alg, m, n, size // 4, "artifact")
        assert closed["epoch_s"][i] == pytest.approx(
            training.epoch_time(used, T, C), rel=1e-12
        )
