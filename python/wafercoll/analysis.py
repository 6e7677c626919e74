"""Analyses that need no topology: verification and execution on NumPy."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _core
from ._errors import ScheduleError
from ._util import as_real, html_table
from .schedule import Schedule

__all__ = [
    "SpatialMetrics",
    "VerifyReport",
    "eq1_cycles",
    "execute",
    "metrics",
    "verify",
]


@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify` established about a schedule.

    Attributes
    ----------
    collective : str
        The collective the schedule was proved to compute.
    ranks, transfers, steps : int
        Size of the schedule; ``steps`` is the length of the longest
        dependency chain.
    pieces_written : int
        Work of the symbolic execution (runs of blocks updated).
    reachability_queries : int
        Happens-before questions that needed a graph search.
    windows : int
        How many windows of blocks the cells were verified in, each walked
        on its own thread: 2 for a large schedule whose transfers each carry
        a small part of the vector (rings, pipelines), else 1. Cells of
        different blocks never interact, so the verdict is the same either
        way; ``pieces_written`` and ``reachability_queries`` then count both
        windows' work.
    """

    collective: str
    ranks: int
    transfers: int
    steps: int
    pieces_written: int
    reachability_queries: int
    windows: int = 1

    @property
    def ok(self) -> bool:
        """Always True: a failed verification raises instead."""
        return True

    def to_dict(self) -> dict[str, Any]:
        """The report as a plain dict."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def _repr_html_(self) -> str:
        return html_table("Verified", self.to_dict().items())


def _schedule(schedule: Any) -> Schedule:
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"schedule must be a wafercoll.Schedule, got {type(schedule).__name__}"
        )
    return schedule


def verify(schedule: Schedule) -> VerifyReport:
    """Prove that ``schedule`` computes its collective in every allowed order.

    The symbolic execution tracks, for every rank and block, the set of ranks
    whose contributions the block holds, under the data semantics described in
    :mod:`wafercoll.schedule`. It checks dependencies (range, cycles), races
    (unordered writes to one block; a write that may land before a concurrent
    read), blocks sent before anything arrived in them, contributions counted
    twice, and the collective's postcondition.

    Parameters
    ----------
    schedule : Schedule

    Returns
    -------
    VerifyReport

    Raises
    ------
    ScheduleError
        Naming the first offending transfer (in dependency order), rank and
        block, and the kind of defect. A schedule that states no collective
        (``"unknown"``, e.g. a GOAL file read without ``messages``) has its
        dependencies checked and is then refused with kind
        ``"unverifiable"``: there is no result to prove.

    Notes
    -----
    From 2^16 transfers the verification uses two threads (the GIL is
    released): the backward pass beside the forward pass, or, when the
    transfers each carry a small part of the vector (rings, pipelines), the
    cells split by blocks into two windows, each walked by the transfers
    over its blocks (``VerifyReport.windows``). The verdict and the error
    are the same either way.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_binomial_broadcast", ranks=5, size_bytes=40)
    >>> report = wc.verify(s)
    >>> report.ok, report.steps
    (True, 3)
    >>> bad = wc.Schedule(2, [8], "allreduce")
    >>> _ = bad.add_transfer(0, [1], 0, op="reduce")
    >>> try:
    ...     wc.verify(bad)
    ... except wc.ScheduleError as e:
    ...     print(str(e).split(":")[0])
    block 0 of rank 0 ends without the contribution of rank 1
    """
    s = _schedule(schedule)
    if s.collective == "unknown":
        # The dependencies are checked (a cycle is reported as one); then
        # the core refuses: there is no result to prove.
        try:
            _core.verify(s._core)
        except ScheduleError as exc:
            if exc.kind != "unverifiable" or s._opaque is None:
                raise (exc if s._labels is None else _with_labels(exc, s)) from None
            raise ScheduleError(s._opaque, kind="unverifiable") from None
    if s._opaque is not None:
        raise ScheduleError(s._opaque, kind="unverifiable")
    if s._model is not None:
        try:
            rep = verify(s._model)
        except ScheduleError as exc:
            # The model's transfers are the program's reads and writes, which
            # its labels name; they are not this schedule's transfers.
            raise ScheduleError(
                f"{exc} (in the verification model of the imported program)",
                kind=exc.kind,
                transfer=None,
                rank=exc.rank
                if exc.rank is not None and exc.rank < s.num_ranks
                else None,
                block=exc.block,
            ) from None
        return VerifyReport(
            **{
                **rep.to_dict(),
                "ranks": s.num_ranks,
                "transfers": s.num_transfers,
                "steps": s.num_steps,
            }
        )
    try:
        rep = _core.verify(s._core)
    except ScheduleError as exc:
        if s._labels is None:
            raise
        raise _with_labels(exc, s) from None
    return VerifyReport(collective=s.collective, ranks=s.num_ranks, **rep)


def _with_labels(exc: ScheduleError, s: Schedule) -> ScheduleError:
    """``exc`` with the labels of the transfers its message names appended."""
    named: list[int] = []
    for m in re.finditer(r"transfers? (\d+)(?: and (\d+))?", str(exc)):
        named.extend(int(g) for g in m.groups() if g is not None)
    if exc.transfer is not None and exc.transfer not in named:
        named.append(exc.transfer)
    notes = [
        f"transfer {t}: {s.transfer_label(t)}"
        for t in dict.fromkeys(named)
        if s.transfer_label(t)
    ]
    if not notes:
        return exc
    return ScheduleError(
        f"{exc} [{'; '.join(notes)}]",
        kind=exc.kind,
        transfer=exc.transfer,
        rank=exc.rank,
        block=exc.block,
    )


_EXECUTORS = {
    np.dtype(np.float64): _core.execute_f64,
    np.dtype(np.float32): _core.execute_f32,
    np.dtype(np.int64): _core.execute_i64,
    np.dtype(np.int32): _core.execute_i32,
}


def execute(schedule: Schedule, inputs: Any, *, check: bool = True) -> np.ndarray:
    """Run ``schedule`` on real numbers.

    Parameters
    ----------
    schedule : Schedule
    inputs : array_like, shape (ranks, elements)
        Row ``r`` is rank ``r``'s input vector (float64, float32, int64 or
        int32; other numeric types are converted to float64 or int64). The
        elements are mapped to blocks in proportion to the blocks' byte sizes.
    check : bool
        Verify the schedule first (default True), so that a defective schedule
        raises :class:`ScheduleError` instead of returning one arbitrary
        outcome. A schedule that states no collective (``"unknown"``) cannot
        be verified; with ``check=False`` it runs anyway, every rank starting
        with its own input in every block, and the result is only what its
        transfers did, not a collective's.

    Returns
    -------
    numpy.ndarray, shape (ranks, elements)
        Every rank's buffer after the schedule ran. Cells that hold no input
        (non-root ranks of a broadcast, non-owned blocks of an allgather,
        non-participants) start at zero.

    Examples
    --------
    >>> import numpy as np
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", ranks=4, size_bytes=4 * 8)
    >>> x = np.arange(16).reshape(4, 4)
    >>> wc.execute(s, x)
    array([[24, 28, 32, 36],
           [24, 28, 32, 36],
           [24, 28, 32, 36],
           [24, 28, 32, 36]])
    """
    s = _schedule(schedule)
    if s._opaque is not None and s.collective != "unknown":
        raise ScheduleError(s._opaque, kind="unverifiable")
    arr = np.asarray(inputs)
    if arr.ndim != 2 or arr.shape[0] != s.num_ranks:
        raise ValueError(
            f"inputs must have shape (ranks, elements) = ({s.num_ranks}, n), "
            f"got {arr.shape}"
        )
    if arr.dtype not in _EXECUTORS:
        if (
            np.issubdtype(arr.dtype, np.unsignedinteger)
            and arr.size
            and int(arr.max()) > np.iinfo(np.int64).max
        ):
            raise ValueError(
                f"inputs hold {arr.dtype} values above 2**63 - 1, which int64 "
                "arithmetic cannot represent; convert them to float64 first"
            )
        if np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_:
            arr = arr.astype(np.int64)
        elif np.issubdtype(arr.dtype, np.floating):
            arr = arr.astype(np.float64)
        else:
            raise TypeError(f"inputs must be numeric, got dtype {arr.dtype}")
    if check:
        verify(s)
    if s._model is not None:
        pad = np.zeros((s._model.num_ranks - s.num_ranks, arr.shape[1]), arr.dtype)
        full = np.ascontiguousarray(np.concatenate([arr, pad]))
        return _EXECUTORS[arr.dtype](s._model._core, full)[: s.num_ranks]
    return _EXECUTORS[arr.dtype](s._core, np.ascontiguousarray(arr))


def block_element_offsets(schedule: Schedule, elements: int) -> np.ndarray:
    """Element offsets of the blocks when a vector has ``elements`` elements."""
    return _core.block_element_offsets(_schedule(schedule)._core, int(elements))


def eq1_cycles(
    E: float, L: float, D: float, C: float, N: float, T_R: float = 2
) -> float:
    """Cycles of equation (1) of *Near-Optimal Wafer-Scale Reduce* (Section 3).

    ``max(C, E / N + L) + (2 T_R + 1) D`` from the energy ``E``, distance
    ``L``, depth ``D``, contention ``C`` and links ``N`` of a schedule
    (``E / N`` is 0 when ``N = 0``) and the ramp latency ``T_R``. The model
    applies to any schedule on a spatial machine, so it lives beside
    :func:`metrics`; :func:`wafercoll.wafer.eq1_cycles` is the same function.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.eq1_cycles(E=10, L=4, D=2, C=3, N=1, T_R=2)
    24.0
    """
    t_r = as_real(T_R, "T_R", 0.0)
    flow = E / N if N > 0 else 0.0
    return max(C, flow + L) + (2 * t_r + 1) * D


@dataclass(frozen=True)
class SpatialMetrics:
    """The spatial cost metrics of a schedule on a topology.

    Definitions (all counts in words of ``word_bytes``; for a dependency ``d``
    of ``t``, *data* when ``t`` sends from a rank ``d`` delivered to, *serial*
    when they share a source or a destination):

    Attributes
    ----------
    energy : int
        Sum over transfers of words times links crossed (a multicast counts
        each link of its tree once).
    distance : int
        Longest chain of data dependencies, counted in hops.
    depth : int
        Longest chain of data dependencies, counted in transfers.
    contention : int
        Most words a PE sends or receives one after another: along serial
        dependencies words add up; forwarding (a data dependency) overlaps
        with the stream it forwards.
    links : int
        Links used by any transfer.
    """

    energy: int
    distance: int
    depth: int
    contention: int
    links: int

    def cycles(self, T_R: float = 2) -> float:
        """Equation (1) of the wafer model: ``max(C, E/N + L) + (2 T_R + 1) D``."""
        return eq1_cycles(
            self.energy, self.distance, self.depth, self.contention, self.links, T_R
        )

    def to_dict(self) -> dict[str, Any]:
        """The metrics as a plain dict."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def _repr_html_(self) -> str:
        rows = [*self.to_dict().items(), ("equation (1), T_R = 2", self.cycles())]
        return html_table("Spatial metrics (words)", rows)


def metrics(
    schedule: Schedule,
    topology: Any,
    *,
    word_bytes: int = 4,
    placement: Any = None,
) -> SpatialMetrics:
    """Energy, distance, depth, contention and links of any schedule.

    The spatial cost model of *Near-Optimal Wafer-Scale Reduce* (Section 3)
    derived from the schedule's transfers, routes and dependencies; see
    :class:`SpatialMetrics` for the definitions. For the wafer's 1D reduction
    trees the values are those of Lemmas 5.1 to 5.4 and of the Auto-Gen
    recurrence.

    Parameters
    ----------
    schedule : Schedule
    topology : Topology
    word_bytes : int
        Size of a word (a wavelet: 4 bytes).
    placement : sequence of int, optional
        Endpoint of each rank; default: rank ``r`` on endpoint ``r``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("wafer_chain_reduce", 8, 32)
    >>> m = wc.metrics(s, wc.wafer.wafer_row(8))
    >>> m.cycles(T_R=2)
    50.0
    """
    from ._util import as_int
    from .topology import Topology

    s = _schedule(schedule)
    if not isinstance(topology, Topology):
        raise TypeError(
            f"topology must be a wafercoll.Topology, got {type(topology).__name__}"
        )
    if s.switches.any():
        raise ValueError(
            "metrics place every rank on an endpoint; a schedule with switch ranks "
            "(in-network reduction) is not covered"
        )
    w = as_int(word_bytes, "word_bytes", 1)
    pl = [] if placement is None else [as_int(x, "placement[i]", 0) for x in placement]
    d = _core.spatial_metrics(s._core, topology._core, w, pl)
    return SpatialMetrics(**{k: int(v) for k, v in d.items()})
