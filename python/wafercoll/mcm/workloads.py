"""One training iteration on a mesh of chiplets as a workload.

:mod:`wafercoll.mcm.training` computes the paper's training times in closed
form. This module says the same iteration as a
:class:`wafercoll.workloads.Workload`, so that
:func:`wafercoll.workloads.simulate_workload` computes it with no
training-specific code:

* **serial** (Section VIII-B, equations (1)-(2); Figs. 10 and 13): every
  chiplet that trains computes the forward and backward pass, ``T``
  seconds (:func:`wafercoll.mcm.training.compute_time`: the systolic cycles
  over the clock, or the artifact's cycles); then one AllReduce of all
  gradients over every chiplet of the mesh, ``C``. The iteration takes
  ``T + C`` (:func:`iteration_workload`);
* **layer-wise overlap** (Section VII-C, Fig. 11): the backward pass is a
  chain of compute nodes on every chiplet, one per layer, each ending when
  that layer's gradients are ready
  (:func:`wafercoll.mcm.training.gradient_ready`); the gradient groups
  (:func:`wafercoll.mcm.training.gradient_groups`) are AllReduced one after
  the other in backward order, each once its first layer's gradients are
  ready and the previous AllReduce is done; the iteration ends when both
  the compute and the last AllReduce have
  (:func:`wafercoll.mcm.training.overlapped_iteration`,
  :func:`overlapped_workload`).

An epoch is then ``I`` iterations (equation (1):
:func:`wafercoll.mcm.training.iterations` over the chiplets that train);
the model has no overlap between iterations, so one iteration is simulated
and multiplied, as the paper does.

Which chiplets train: the participants of the AllReduce's schedule on the
mesh (:func:`training_chiplets`): all of them but TTO's excluded corner,
which relays data and computes nothing.

What makes the workload equal the closed form, and where it stops doing so:

* **Barriers.** The closed form starts each AllReduce when the *last*
  chiplet is ready and the previous AllReduce has ended *everywhere*, and
  times it as if simulated alone. A workload dependency on a collective
  means "done at this rank", so with ``barrier=True`` (the default) each
  AllReduce waits behind a barrier: a join
  (:meth:`wafercoll.workloads.Workload.join`) done when every chiplet's
  conditions are met, which holds no transfers and takes no time. With
  ``barrier=False`` every chiplet enters
  an AllReduce as soon as *its* gradients are ready and *its* part of the
  previous one is done, so consecutive AllReduces can overlap and contend
  for links: a more realistic schedule, no longer the closed form.
* **Reductions on the compute unit.** The simulator lets reductions
  occupy the chiplet's compute unit at the network's
  ``gamma_s_per_byte``; both of the paper's presets have none, so compute
  and the AllReduce never compete there. Under a network with a reduction
  cost the overlapped workload is slower than the closed form, by the
  reductions that wait behind the backward pass.
* **Float rounding.** The simulator adds the compute time and the
  AllReduce's event times instead of adding the two totals, and the compute
  chain's node durations are differences of the ready times: about 1e-13
  relative. One consequence is larger: a simulation's event times depend on
  its origin, and two packets that reach a link at the same instant in an
  AllReduce simulated from time 0 (the closed form) can be ordered the
  other way when it starts at ``T`` (the workload), which moves its end by
  a message time or, when the reordering cascades (DBTree, whose two trees
  share links), by up to about 1 % under the artifact preset. Where every
  time is an exact binary fraction (a clock of 2^30 Hz, bandwidths and
  latencies powers of two) nothing rounds and the two agree exactly.
* **Networks.** :func:`wafercoll.workloads.simulate_workload` needs
  ``dependencies="complete"``: the artifact preset
  (:data:`wafercoll.mcm.ARTIFACT`, which the training figures use) has it;
  Table II (:data:`wafercoll.mcm.TABLE_II`, dataflow) is refused.

Examples
--------
A 3x3 mesh, 1 ms of compute per chiplet, then TTO's AllReduce of 1 MiB;
the corner TTO leaves out computes nothing:

>>> import wafercoll as wc
>>> from wafercoll.mcm import workloads as mw
>>> w = mw.iteration_workload("mesh_tto_allreduce", 3, 3, 1 << 20, 1e-3)
>>> w.counts()["compute"], mw.training_chiplets("mesh_tto_allreduce", 3, 3)
(8, (0, 1, 2, 3, 4, 5, 7, 8))
>>> t = mw.simulate_iteration(w, 3, 3).step_time_s
>>> c = wc.mcm.training.allreduce_time(
...     "mesh_tto_allreduce", 3, 3, (1 << 20) // 4, wc.mcm.ARTIFACT)
>>> abs(t - (1e-3 + c)) <= 1e-12 * t
True
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from .._util import as_int, as_real

__all__ = [
    "allreduce_nodes",
    "dnn_workload",
    "iteration_workload",
    "overlapped_workload",
    "simulate_iteration",
    "training_chiplets",
]


def training_chiplets(
    algorithm: str, rows: int, cols: int, **options: Any
) -> tuple[int, ...]:
    """The chiplets that train with ``algorithm``: its schedule's participants.

    Every chiplet of the mesh but those the AllReduce leaves out (TTO's
    excluded corner, Section V-B), which the paper's equation (1) does not
    count (``N - 1`` chiplets for TTO). The schedule is built once at a
    small size (participants do not depend on it) and remembered.

    Parameters
    ----------
    algorithm : str
        A registered AllReduce builder that runs on
        ``wafercoll.topology.mesh(rows, cols)``.
    rows, cols : int
        The mesh.
    **options
        Builder options, as for :func:`wafercoll.build`.

    Returns
    -------
    tuple of int
        The training chiplets' node ids (``row * cols + col``), ascending.

    Raises
    ------
    ValueError
        If the algorithm does not build on that mesh.

    Examples
    --------
    >>> from wafercoll.mcm import workloads as mw
    >>> mw.training_chiplets("mesh_ring_bi_allreduce", 2, 2)
    (0, 1, 2, 3)
    >>> len(mw.training_chiplets("mesh_tto_allreduce", 4, 4))
    15
    """
    m = as_int(rows, "rows", 1, 1 << 12)
    n = as_int(cols, "cols", 1, 1 << 12)
    if not isinstance(algorithm, str):
        raise TypeError(
            f"algorithm must be a registered name, got {type(algorithm).__name__}"
        )
    key = tuple(sorted(options.items()))
    try:
        hash(key)
    except TypeError:
        return _participants(algorithm, m, n, options)
    return _cached_participants(algorithm, m, n, key)


@functools.lru_cache(maxsize=256)
def _cached_participants(
    algorithm: str, m: int, n: int, key: tuple[tuple[str, Any], ...]
) -> tuple[int, ...]:
    return _participants(algorithm, m, n, dict(key))


def _participants(
    algorithm: str, m: int, n: int, options: dict[str, Any]
) -> tuple[int, ...]:
    from ..algorithms import algorithm_info, build
    from ..topology import mesh

    info = algorithm_info(algorithm)  # names the registered ones if unknown
    if info.collective != "allreduce":
        raise ValueError(
            f"algorithm must be an allreduce builder, got {algorithm!r} "
            f"({info.collective})"
        )
    # 64 bytes per chiplet fill the largest block count of the mesh builders
    # (two per chiplet); participants do not depend on the size.
    s = build(algorithm, topology=mesh(m, n), size_bytes=64 * m * n, **options)
    return tuple(int(i) for i, p in enumerate(s.participants) if p)


def iteration_workload(
    algorithm: str,
    rows: int,
    cols: int,
    size_bytes: int,
    compute_s: float,
    *,
    chiplets: Sequence[int] | None = None,
    barrier: bool = True,
    name: str = "",
    **options: Any,
) -> Any:
    """One iteration of equations (1)-(2): compute, then the gradient AllReduce.

    Every training chiplet gets one compute node of ``compute_s`` seconds;
    one AllReduce of ``size_bytes`` over every chiplet of the mesh (rank =
    node id, the communicator of the whole mesh, so the builder gets the
    mesh as its topology exactly as the closed form builds it) follows.
    Simulated (:func:`simulate_iteration`), the step time is ``T + C`` of
    equation (2).

    Parameters
    ----------
    algorithm : str
        A registered AllReduce builder for the mesh (``"mesh_tto_allreduce"``).
    rows, cols : int
        The mesh.
    size_bytes : int
        Gradient bytes (:func:`wafercoll.mcm.training.gradient_bytes`).
    compute_s : float
        Forward and backward time of one iteration on one chiplet, ``T``
        (:func:`wafercoll.mcm.training.compute_time`).
    chiplets : sequence of int, optional
        The chiplets that train (default: :func:`training_chiplets`).
    barrier : bool
        Start the AllReduce at every chiplet when the last one is ready (the
        closed form), or at each chiplet when it is ready (see the module).
    name : str
        The workload's label.
    **options
        Builder options of the AllReduce (``chunk_bytes=``...).

    Returns
    -------
    wafercoll.workloads.Workload

    Examples
    --------
    >>> from wafercoll.mcm import workloads as mw
    >>> w = mw.iteration_workload("mesh_ring_allreduce", 2, 2, 4096, 1e-6)
    >>> w.counts()
    {'compute': 4, 'collective': 1, 'send': 0, 'join': 1}
    >>> [n.name for n in mw.allreduce_nodes(w)]
    ['gradients']
    """
    size = as_int(size_bytes, "size_bytes", 1)
    t = as_real(compute_s, "compute_s", 0.0)
    return _build(
        algorithm,
        rows,
        cols,
        {0: t},
        t,
        [(0, size, "gradients")],
        chiplets,
        barrier,
        name or f"{algorithm} iteration",
        options,
    )


def overlapped_workload(
    algorithm: str,
    rows: int,
    cols: int,
    ready: Mapping[int, float],
    groups: Sequence[tuple[int, int]],
    compute_s: float,
    *,
    chiplets: Sequence[int] | None = None,
    barrier: bool = True,
    name: str = "",
    **options: Any,
) -> Any:
    """One iteration with layer-wise AllReduce overlapped with the backward pass.

    The workload of :func:`wafercoll.mcm.training.overlapped_iteration`
    (same arguments, the AllReduce times replaced by the AllReduces
    themselves). Every training chiplet runs a chain of compute nodes: one
    up to the first layer whose gradients are ready (the forward pass and
    the backward pass down to it), then one per further layer in the order
    of ``ready``, then the rest of ``compute_s`` if any. Each group's
    AllReduce (``weights`` fp32 gradients,
    :data:`wafercoll.mcm.training.BYTES_PER_PARAMETER` bytes each) waits for
    its first layer's node and for the previous group's AllReduce, groups
    in backward order (the last layers first).

    Parameters
    ----------
    algorithm : str
        A registered AllReduce builder for the mesh.
    rows, cols : int
        The mesh.
    ready : mapping of int to float
        Layer index to the time (s, from the iteration's start) its
        gradients are ready (:func:`wafercoll.mcm.training.gradient_ready`).
    groups : sequence of (int, int)
        ``(first layer, weights)`` of every AllReduce
        (:func:`wafercoll.mcm.training.gradient_groups`); ``first`` must be
        in ``ready``.
    compute_s : float
        The whole forward and backward pass, at least the latest ready time.
    chiplets, barrier, name, **options
        As for :func:`iteration_workload`.

    Returns
    -------
    wafercoll.workloads.Workload

    Examples
    --------
    Three layers ready at 1, 2 and 3 us (backward from the last), an
    AllReduce per layer:

    >>> from wafercoll.mcm import workloads as mw
    >>> ready = {0: 3e-6, 1: 2e-6, 2: 1e-6}
    >>> groups = [(0, 1024), (1, 1024), (2, 1024)]
    >>> w = mw.overlapped_workload("mesh_ring_allreduce", 2, 2, ready, groups, 3e-6)
    >>> [n.name for n in mw.allreduce_nodes(w)]
    ['gradients of layers 2..2', 'gradients of layers 1..1', 'gradients of layers 0..0']
    """
    from .training import BYTES_PER_PARAMETER

    if not isinstance(ready, Mapping) or not ready:
        raise TypeError("ready must be a non-empty mapping of layer to seconds")
    times = {
        as_int(k, "ready layer", 0): as_real(v, f"ready[{k}]", 0.0)
        for k, v in ready.items()
    }
    total = as_real(compute_s, "compute_s", 0.0)
    latest = max(times.values())
    if total < latest:
        raise ValueError(
            f"compute_s must be >= the latest ready time {latest!r}, got {total!r}"
        )
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence):
        raise TypeError("groups must be a sequence of (first layer, weights)")
    firsts = sorted(as_int(g[0], "groups first layer", 0) for g in groups)
    allreduces = []
    for first, weights in sorted(groups, key=lambda g: -g[0]):
        f = as_int(first, "groups first layer", 0)
        if f not in times:
            raise ValueError(
                f"groups: layer {f} has no ready time (ready has layers "
                f"{min(times)}..{max(times)})"
            )
        w = as_int(weights, f"groups[{f}] weights", 1)
        nxt = [x for x in firsts if x > f]
        last = (nxt[0] - 1) if nxt else max(max(times), f)
        allreduces.append(
            (f, w * BYTES_PER_PARAMETER, f"gradients of layers {f}..{last}")
        )
    return _build(
        algorithm,
        rows,
        cols,
        times,
        total,
        allreduces,
        chiplets,
        barrier,
        name or f"{algorithm} iteration, layer-wise overlap",
        options,
    )


def dnn_workload(
    model: str,
    algorithm: str,
    rows: int,
    cols: int,
    *,
    array: tuple[int, int] = (256, 256),
    clock_Hz: float = 1e9,
    overlap: bool = False,
    barrier: bool = True,
    **options: Any,
) -> Any:
    """One iteration of a DNN on the mesh, compute from the systolic model.

    Without overlap (Figs. 10 and 13): :func:`iteration_workload` with
    :func:`wafercoll.mcm.training.compute_time` and
    :func:`wafercoll.mcm.training.gradient_bytes`. With overlap (Fig. 11):
    :func:`overlapped_workload` with
    :func:`wafercoll.mcm.training.gradient_ready` and
    :func:`wafercoll.mcm.training.gradient_groups` of the DNN's layers.

    Parameters
    ----------
    model : str
        One of :data:`wafercoll.mcm.systolic.DNNS` or a SCALE-Sim topology file.
    algorithm : str
        A registered AllReduce builder for the mesh.
    rows, cols : int
        The mesh.
    array : (int, int)
        Rows and columns of each PE's MAC array (Section VI-A: 256 x 256).
    clock_Hz : float
        Chiplet clock (Table II: 1 GHz).
    overlap : bool
        Layer-wise AllReduce overlapped with the backward pass.
    barrier : bool
        As for :func:`iteration_workload`.
    **options
        Builder options of the AllReduce.

    Returns
    -------
    wafercoll.workloads.Workload

    Examples
    --------
    >>> from wafercoll.mcm import workloads as mw
    >>> w = mw.dnn_workload("alexnet", "mesh_tto_allreduce", 3, 3, overlap=True)
    >>> len(mw.allreduce_nodes(w))  # alexnet's five gradient groups
    5
    """
    from .systolic import dnn_layers
    from .training import (
        compute_time,
        gradient_bytes,
        gradient_groups,
        gradient_ready,
    )

    label = f"{model} on {rows}x{cols}, {algorithm}"
    if not overlap:
        return iteration_workload(
            algorithm,
            rows,
            cols,
            gradient_bytes(model),
            compute_time(model, array, clock_Hz=clock_Hz),
            barrier=barrier,
            name=label,
            **options,
        )
    ready, total = gradient_ready(model, array, clock_Hz=clock_Hz)
    groups = gradient_groups([x.parameters for x in dnn_layers(model)])
    return overlapped_workload(
        algorithm,
        rows,
        cols,
        ready,
        groups,
        total,
        barrier=barrier,
        name=f"{label}, layer-wise overlap",
        **options,
    )


def allreduce_nodes(workload: Any) -> list[Any]:
    """The gradient AllReduces of a workload of this module, in order.

    Its collective nodes over more than one rank (the barriers are joins).

    Examples
    --------
    >>> from wafercoll.mcm import workloads as mw
    >>> w = mw.iteration_workload("mesh_ring_allreduce", 2, 2, 4096, 1e-6)
    >>> [n.size_bytes for n in mw.allreduce_nodes(w)]
    [4096]
    """
    return [n for n in workload if n.kind == "collective" and len(n.ranks) > 1]


def simulate_iteration(workload: Any, rows: int, cols: int, network: Any = None) -> Any:
    """Simulate an iteration's workload on the ``rows x cols`` mesh.

    Parameters
    ----------
    workload : wafercoll.workloads.Workload
        From :func:`iteration_workload`, :func:`overlapped_workload` or
        :func:`dnn_workload`.
    rows, cols : int
        The mesh it was built for.
    network : NetworkModel, optional
        Default :data:`wafercoll.mcm.ARTIFACT` (the training figures' preset).

    Returns
    -------
    wafercoll.workloads.WorkloadResult
        ``step_time_s`` is the iteration's time.

    Examples
    --------
    >>> from wafercoll.mcm import workloads as mw
    >>> w = mw.iteration_workload("mesh_ring_allreduce", 2, 2, 4096, 1e-6)
    >>> mw.simulate_iteration(w, 2, 2).step_time_s > 1e-6
    True
    """
    from ..topology import mesh
    from ..workloads import simulate_workload
    from .machine import ARTIFACT

    m = as_int(rows, "rows", 1, 1 << 12)
    n = as_int(cols, "cols", 1, 1 << 12)
    if workload.ranks != m * n:
        raise ValueError(
            f"the workload has {workload.ranks} ranks, the {m}x{n} mesh {m * n} "
            "chiplets"
        )
    return simulate_workload(workload, mesh(m, n), network or ARTIFACT)


def _build(
    algorithm: str,
    rows: int,
    cols: int,
    ready: dict[int, float],
    total: float,
    allreduces: list[tuple[int, int, str]],
    chiplets: Sequence[int] | None,
    barrier: bool,
    name: str,
    options: dict[str, Any],
) -> Any:
    """The workload: compute chains, then AllReduces in the given order.

    ``allreduces`` holds ``(layer whose ready time it waits for, bytes,
    name)`` in the order they run.
    """
    from ..workloads import workload

    m = as_int(rows, "rows", 1, 1 << 12)
    n = as_int(cols, "cols", 1, 1 << 12)
    if not isinstance(barrier, bool):
        raise TypeError(f"barrier must be True or False, got {barrier!r}")
    N = m * n
    if chiplets is None:
        train = training_chiplets(algorithm, m, n, **options)
    else:
        if isinstance(chiplets, (str, bytes)) or not isinstance(chiplets, Sequence):
            raise TypeError("chiplets must be a sequence of chiplet ids")
        train = tuple(sorted({as_int(c, "chiplets", 0, N - 1) for c in chiplets}))
        if not train:
            raise ValueError("chiplets: at least one chiplet must train")
    w = workload(N, name=name)
    # The compute chain of every training chiplet: a node ending at each
    # ready time (layers in the order their gradients appear), then the rest.
    order = sorted(ready, key=lambda k: (ready[k], -k))
    done: dict[int, dict[int, int]] = {c: {} for c in train}
    for c in train:
        t, prev, node = 0.0, None, -1
        for k in order:
            what = (
                f"backward to layer {k}"
                if prev is not None
                else f"forward, backward to layer {k}"
            )
            node = w.compute(
                c,
                ready[k] - t,
                deps=() if prev is None else (prev,),
                name=what if len(order) > 1 else "forward and backward",
            )
            done[c][k] = prev = node
            t = ready[k]
        if total > t:
            w.compute(c, total - t, deps=(node,), name="rest of the backward pass")
    prev_ar = None
    for layer, size, label in allreduces:
        cond = {
            r: ([done[r][layer]] if r in done else [])
            + ([] if prev_ar is None else [prev_ar])
            for r in range(N)
        }
        deps: Any = [_barrier(w, cond, label)] if barrier else cond
        prev_ar = w.collective(
            "allreduce",
            size,
            algorithm=algorithm,
            deps=deps,
            name=label,
            **options,
        )
    return w


def _barrier(w: Any, cond: dict[int, list[int]], label: str) -> int:
    """A join done when every rank's conditions are met (no rank, no time)."""
    nodes = sorted({d for ds in cond.values() for d in ds})
    return w.join(nodes, name=f"barrier: {label}")
