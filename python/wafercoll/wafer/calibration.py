"""The model with a switch overhead, calibrated on the CS-2's measured speedups.

*Near-Optimal Wafer-Scale Reduce* (Luczynski, Gianinazzi et al., HPDC 2024)
measures its collectives on a CS-2 but publishes the measurements only as
plots and as six headline speedups in the text. Equation (1) overshoots
those speedups (Auto-Gen over Chain Reduce at 512 PEs: 5.73x in the model,
3.16x measured). Section 8.5 names a cost the model leaves out: "the
overhead associated when a PE starts receiving from another PE".

This module adds that cost as one parameter, the switch overhead ``O`` (in
cycles): a PE needs ``O`` cycles to switch to each incoming stream after the
first (:func:`wafercoll.wafer.switch_contention` in the model,
``NetworkModel(switch_overhead_s=...)`` in the simulator, through
:func:`wafercoll.wafer.wse2_network`), and fits it by least squares on
some of the measured speedups, keeping the others to check it.

The measured numbers (:data:`MEASURED_SPEEDUPS`) are the text's; each is
"up to" a ratio over the vector lengths of its figure, so the model's value
is the largest ratio over ``B = 2^0 .. 2^12`` wavelets (4 B to 16 KiB,
Figs. 11 and 13a/b). The trees are the ones the paper's code generator
chose: Auto-Gen's DP optimum of equation (1) without the overhead.

How the overhead enters the forms:

* a 1D Reduce: equation (1) with ``B C`` replaced by the switch-weighted
  contention ``W`` (:func:`wafercoll.wafer.tree_cycles` with
  ``switch_overhead``);
* Reduce then broadcast: the broadcast of Lemma 4.1 with one switch, ``B +
  2 T_R + max(P, 1 + O)``: the PEs that took streams in the Reduce switch
  once more (all at once), the far end took none;
* X-Y forms: the rows as in 1D, then the column with ``received_before``
  (every PE of the root column has taken its row's stream).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util import as_int, as_real
from .model import (
    MAX_P,
    T_R_DEFAULT,
    TreeMetrics,
    as_ramp_latency,
    chain_tree,
    checked_switch_contention,
    tree_metrics,
    two_phase_tree,
)
from .reduce1d import autogen

__all__ = [
    "FIT_DEFAULT",
    "MEASURED_SPEEDUPS",
    "Calibration",
    "MeasuredSpeedup",
    "calibrate_switch_overhead",
    "overhead_time",
    "predicted_speedup",
    "simulated_speedup",
]


@dataclass(frozen=True)
class MeasuredSpeedup:
    """One headline speedup measured on the CS-2.

    Attributes
    ----------
    name : str
        Key, e.g. ``"reduce_1d"``.
    collective : {"reduce", "allreduce"}
        Reduce, or Reduce then broadcast.
    grid : bool
        X-Y on an ``n x n`` grid (True) or a row of ``n`` PEs.
    n : int
        Row length or grid side.
    fast, slow : str
        The pattern that is faster and the baseline (the vendor's Chain).
    value : float
        The measured speedup ("up to").
    source : str
        Where the paper states it.
    """

    name: str
    collective: str
    grid: bool
    n: int
    fast: str
    slow: str
    value: float
    source: str


#: The paper's measured headline speedups (Sections 1.3, 8.5-8.7).
MEASURED_SPEEDUPS: tuple[MeasuredSpeedup, ...] = (
    MeasuredSpeedup(
        "reduce_1d", "reduce", False, 512, "autogen", "chain", 3.16, "Section 8.5"
    ),
    MeasuredSpeedup(
        "allreduce_1d", "allreduce", False, 512, "autogen", "chain", 2.47, "Section 8.6"
    ),
    MeasuredSpeedup(
        "reduce_2d", "reduce", True, 512, "autogen", "chain", 3.27, "Section 8.7"
    ),
    MeasuredSpeedup(
        "allreduce_2d", "allreduce", True, 512, "autogen", "chain", 2.54, "Section 8.7"
    ),
    MeasuredSpeedup(
        "two_phase_reduce_2d",
        "reduce",
        True,
        512,
        "two_phase",
        "chain",
        3.32,
        "Section 1.3",
    ),
    MeasuredSpeedup(
        "two_phase_allreduce_2d",
        "allreduce",
        True,
        512,
        "two_phase",
        "chain",
        2.56,
        "Section 1.3",
    ),
)
#: The speedups fitted by default: the two 1D measurements (the rest, the 2D
#: ones on 512 x 512 PEs, are held out).
FIT_DEFAULT = ("reduce_1d", "allreduce_1d")
#: Vector lengths of the paper's B sweeps (Figs. 11 and 13a/b).
B_SWEEP = tuple(1 << k for k in range(13))
#: Vector lengths of a fit on the simulator: the ratios peak at B <= 2^8
#: (Auto-Gen's lead over Chain shrinks as bandwidth takes over), and larger
#: vectors cost most of the simulation time.
B_SWEEP_SIM = tuple(1 << k for k in range(9))
#: Search range of the fit (cycles): a switch costing more than a 4 KiB
#: message would make Chain win everywhere.
MAX_OVERHEAD = 4096.0
_PATTERNS = ("chain", "two_phase", "autogen")


@functools.lru_cache(maxsize=512)
def _tree(pattern: str, P: int, B: int, T_R: float) -> tuple[np.ndarray, TreeMetrics]:
    if pattern == "chain":
        t = chain_tree(P)
    elif pattern == "two_phase":
        t = two_phase_tree(P)
    else:
        t = autogen(P, B, T_R).parent
    return t, tree_metrics(t)


def _times(
    pattern: str,
    collective: str,
    P: int,
    B: int,
    o: np.ndarray,
    T_R: float,
    received_before: bool,
) -> np.ndarray:
    """:func:`overhead_time` for every overhead in ``o`` (checked arguments)."""
    if P == 1:
        return np.zeros_like(o)
    tree, m = _tree(pattern, P, B, T_R)
    # One overhead goes through plain floats (several times faster).
    one = float(o[0]) if o.size == 1 else o
    w = np.reshape(
        checked_switch_contention(tree, B, one, 1.0 if received_before else 0.0),
        o.shape,
    )
    t = np.maximum(w, B * m.energy / m.links + m.distance) + (2 * T_R + 1) * m.depth
    if collective == "allreduce":
        t = t + _bcast_after(P, B, o, T_R)
    return t


def _bcast_after(P: int, B: Any, o: Any, T_R: float) -> Any:
    """Lemma 4.1's broadcast after a Reduce: ``B + 2 T_R + max(P, 1 + O)``.

    PEs that took streams in the Reduce switch once more for the broadcast;
    the far end, which took none, is reached after ``P`` cycles of travel,
    the nearest switching PE after one hop and the switch.
    """
    return B + 2 * T_R + np.maximum(P, 1 + o)


def overhead_time(
    pattern: str,
    collective: str,
    P: int,
    B: int,
    switch_overhead: float,
    T_R: float = T_R_DEFAULT,
    received_before: bool = False,
) -> float:
    """Cycles of a 1D Reduce (or Reduce then broadcast) with a switch overhead.

    Parameters
    ----------
    pattern : {"chain", "two_phase", "autogen"}
        The tree (Auto-Gen's is the DP optimum of equation (1) without the
        overhead, the tree the paper's generator emits).
    collective : {"reduce", "allreduce"}
        ``"allreduce"`` adds the broadcast of Lemma 4.1 with one switch,
        ``B + 2 T_R + max(P, 1 + O)`` (the far end takes no stream before
        it; the nearest PE that did switches after one hop).
    P, B : int
        PEs and wavelets.
    switch_overhead : float
        Cycles per switch to a new incoming stream, in ``[0, MAX_OVERHEAD]``.
    T_R : float
        Ramp latency.
    received_before : bool
        Every PE has taken a stream before (the column phase of X-Y).

    Returns
    -------
    float
        Cycles; at ``switch_overhead = 0`` and ``received_before = False``
        the paper's equation (1) (:func:`wafercoll.wafer.reduce_time` and
        :func:`wafercoll.wafer.allreduce_time`).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.overhead_time("two_phase", "reduce", 16, 64, switch_overhead=0)
    158.0
    >>> wafer.overhead_time("two_phase", "reduce", 16, 64, switch_overhead=10)
    168.0
    """
    if pattern not in _PATTERNS:
        raise ValueError(
            f"pattern must be one of {', '.join(_PATTERNS)}, got {pattern!r}"
        )
    if collective not in ("reduce", "allreduce"):
        raise ValueError(
            f"collective must be 'reduce' or 'allreduce', got {collective!r}"
        )
    P = as_int(P, "P", 1, MAX_P)
    B = as_int(B, "B", 1)
    o = as_real(switch_overhead, "switch_overhead", 0.0, maximum=MAX_OVERHEAD)
    t_r = as_ramp_latency(T_R)
    return float(
        _times(pattern, collective, P, B, np.array([o]), t_r, received_before)[0]
    )


def _case_times(
    m: MeasuredSpeedup, pattern: str, B: int, o: np.ndarray, T_R: float
) -> np.ndarray:
    t = _times(pattern, m.collective, m.n, B, o, T_R, False)
    if m.grid:
        t = t + _times(pattern, m.collective, m.n, B, o, T_R, True)
    return t


def _ratios(
    m: MeasuredSpeedup, o: np.ndarray, T_R: float, Bs: Sequence[int]
) -> np.ndarray:
    """``slow / fast`` per (B, overhead): shape ``(len(Bs), o.size)``."""
    return np.stack(
        [
            _case_times(m, m.slow, B, o, T_R) / _case_times(m, m.fast, B, o, T_R)
            for B in Bs
        ]
    )


def predicted_speedup(
    m: MeasuredSpeedup,
    switch_overhead: float,
    T_R: float = T_R_DEFAULT,
    Bs: Sequence[int] = B_SWEEP,
) -> tuple[float, int]:
    """The model's largest ``slow / fast`` ratio over ``Bs`` and where it is.

    Returns
    -------
    (float, int)
        The ratio and the ``B`` at which the model has it.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> m = wafer.MEASURED_SPEEDUPS[0]
    >>> ratio, B = wafer.predicted_speedup(m, switch_overhead=0)
    >>> m.name, round(ratio, 2), B
    ('reduce_1d', 5.73, 1)
    """
    o = as_real(switch_overhead, "switch_overhead", 0.0, maximum=MAX_OVERHEAD)
    return _largest(_ratios(m, np.array([o]), as_ramp_latency(T_R), Bs)[:, 0], Bs)


def _largest(ratios: Any, Bs: Sequence[int]) -> tuple[float, int]:
    """The largest ratio and the ``B`` it is at."""
    j = int(np.argmax(ratios))
    return float(ratios[j]), int(Bs[j])


@functools.lru_cache(maxsize=64)
def _schedule(pattern: str, collective: str, P: int, B: int) -> Any:
    from ..algorithms import build
    from .builders import wafer_row

    kw = {"topology": wafer_row(P)} if collective == "allreduce" else {}
    return build(f"wafer_{pattern}_{collective}", P, 4 * B, **kw)


def simulated_speedup(
    m: MeasuredSpeedup,
    switch_overhead: float,
    T_R: float = T_R_DEFAULT,
    Bs: Sequence[int] = B_SWEEP_SIM,
) -> tuple[float, int]:
    """The simulated largest ``slow / fast`` ratio over ``Bs`` (1D only).

    Simulates the two patterns' schedules (``wafer_<pattern>_<collective>``)
    on a row of ``m.n`` PEs under :func:`wse2_network` with the overhead.

    Raises
    ------
    ValueError
        For a measurement on a grid (512 x 512 PEs: hundreds of millions of
        packet events per run).
    """
    from ..simulate import simulate
    from .builders import wafer_row
    from .machine import wse2_network

    if m.grid:
        raise ValueError(
            f"measurement {m.name!r} is on a {m.n} x {m.n} grid: too large to "
            "simulate in a fit; use the model"
        )
    o = as_real(switch_overhead, "switch_overhead", 0.0, maximum=MAX_OVERHEAD)
    net = wse2_network(T_R, switch_overhead=o)
    row = wafer_row(m.n)
    r = [
        simulate(_schedule(m.slow, m.collective, m.n, B), row, net).cycles
        / simulate(_schedule(m.fast, m.collective, m.n, B), row, net).cycles
        for B in Bs
    ]
    return _largest(r, Bs)


@dataclass(frozen=True)
class Calibration:
    """A fitted switch overhead and how well it predicts.

    Attributes
    ----------
    switch_overhead : float
        The fitted ``O`` in cycles.
    T_R : float
        Ramp latency used.
    fitted : tuple of str
        Names of the measurements in the fit; the others are held out.
    rows : list of dict
        Per measurement: ``name``, ``role`` ("fit" or "held out"),
        ``measured``, ``model`` (at ``O = 0``), ``calibrated``, their
        relative errors ``model_error`` and ``calibrated_error``
        (``(model - measured) / measured``), and ``B`` of the calibrated
        maximum.
    fit_rms : float
        Root mean square of the relative errors of the fitted points.
    held_out_rms : float
        The same on the held-out points (NaN without any).
    objective : ndarray
        Rows ``(O, sum of squared log errors)``: the coarse grid the model's
        fit starts from, or the simulator fit's evaluations, for plotting.
    engine : str
        ``"model"`` or ``"simulator"``.
    """

    switch_overhead: float
    T_R: float
    fitted: tuple[str, ...]
    rows: list[dict[str, Any]] = field(repr=False)
    fit_rms: float
    held_out_rms: float
    objective: np.ndarray = field(repr=False)
    engine: str = "model"

    def network(self) -> Any:
        """The simulator preset with this overhead (:func:`wse2_network`)."""
        from .machine import wse2_network

        return wse2_network(self.T_R, switch_overhead=self.switch_overhead)


def calibrate_switch_overhead(
    fit: Sequence[str] = FIT_DEFAULT,
    T_R: float = T_R_DEFAULT,
    measurements: Sequence[MeasuredSpeedup] = MEASURED_SPEEDUPS,
    Bs: Sequence[int] | None = None,
    engine: str = "model",
    max_overhead: float | None = None,
) -> Calibration:
    """Fit the switch overhead by least squares on measured speedups.

    Minimises ``sum (log model_i(O) - log measured_i)^2`` over the
    measurements named in ``fit`` (log: a ratio too high or too low by the
    same factor weighs the same), with ``O`` in ``[0, MAX_OVERHEAD]``. The
    model's ratio is a maximum over ``B`` and so only piecewise smooth in
    ``O``: the fit scans a grid of step 8 cycles, then refines the best cell
    with SciPy's bounded scalar minimiser.

    Parameters
    ----------
    fit : sequence of str
        Names from ``measurements`` to fit; the rest are held out.
    T_R : float
        Ramp latency in cycles.
    measurements : sequence of MeasuredSpeedup
        The measurements (default: the paper's six).
    Bs : sequence of int or None
        Vector lengths over which each ratio is maximised (default:
        ``B_SWEEP`` for the model, ``B_SWEEP_SIM`` for the simulator).
    engine : {"model", "simulator"}
        ``"model"``: the forms of this module (fast; a grid scan, then the
        refinement). ``"simulator"``: :func:`simulated_speedup`, the packet
        simulation under :func:`wse2_network` with the overhead (1D
        measurements only; the grid ones are left out of the rows); SciPy's
        bounded minimiser directly, its evaluations kept as ``objective``.
    max_overhead : float or None
        Upper end of the search (default ``MAX_OVERHEAD`` for the model,
        1024 cycles for the simulator).

    Returns
    -------
    Calibration

    Raises
    ------
    ValueError
        If ``fit`` is empty or names an unknown measurement, ``engine`` is
        unknown, or the simulator is asked to fit a grid measurement.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> cal = wafer.calibrate_switch_overhead()
    >>> round(cal.switch_overhead, 1)
    356.9
    """
    from scipy.optimize import minimize_scalar

    t_r = as_ramp_latency(T_R)
    names = [m.name for m in measurements]
    fit = tuple(fit)
    if not fit:
        raise ValueError("fit must name at least one measurement")
    for f in fit:
        if f not in names:
            raise ValueError(
                f"fit: unknown measurement {f!r}; known: {', '.join(names)}"
            )
    if engine not in ("model", "simulator"):
        raise ValueError(f"engine must be 'model' or 'simulator', got {engine!r}")
    sim = engine == "simulator"
    if Bs is None:
        Bs = B_SWEEP_SIM if sim else B_SWEEP
    Bs = [as_int(B, "B", 1) for B in Bs]
    top = as_real(
        (1024.0 if sim else MAX_OVERHEAD) if max_overhead is None else max_overhead,
        "max_overhead",
        positive=True,
        maximum=MAX_OVERHEAD,
    )
    if sim:
        measurements = [m for m in measurements if not m.grid]
        grids = [f for f in fit if f not in {m.name for m in measurements}]
        if grids:
            raise ValueError(f"fit: {', '.join(grids)} cannot be simulated (a grid)")
    chosen = [m for m in measurements if m.name in fit]
    speedup = simulated_speedup if sim else predicted_speedup
    seen: list[tuple[float, float]] = []

    def sse(o: float) -> float:
        v = sum(
            (math.log(speedup(m, o, t_r, Bs)[0]) - math.log(m.value)) ** 2
            for m in chosen
        )
        seen.append((o, v))
        return v

    if sim:
        res = minimize_scalar(
            sse, bounds=(0.0, top), method="bounded", options={"xatol": 0.5}
        )
        o = float(res.x)
        objective = np.array(sorted(seen))
    else:

        def sse_many(o: np.ndarray) -> np.ndarray:
            return sum(
                (np.log(_ratios(m, o, t_r, Bs).max(axis=0)) - math.log(m.value)) ** 2
                for m in chosen
            )

        grid = np.arange(0.0, top + 1, 8.0)
        values = sse_many(grid)
        k = int(np.argmin(values))
        lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
        res = minimize_scalar(
            sse, bounds=(lo, hi), method="bounded", options={"xatol": 1e-3}
        )
        o = float(res.x) if res.fun <= values[k] else float(grid[k])
        objective = np.column_stack([grid, values])
    rows = []
    for m in measurements:
        model = speedup(m, 0.0, t_r, Bs)[0]
        cal, b_at = speedup(m, o, t_r, Bs)
        rows.append(
            {
                "name": m.name,
                "role": "fit" if m.name in fit else "held out",
                "measured": m.value,
                "model": model,
                "calibrated": cal,
                "model_error": (model - m.value) / m.value,
                "calibrated_error": (cal - m.value) / m.value,
                "B": b_at,
            }
        )

    def rms(role: str) -> float:
        e = [r["calibrated_error"] for r in rows if r["role"] == role]
        return float(np.sqrt(np.mean(np.square(e)))) if e else math.nan

    return Calibration(
        switch_overhead=o,
        T_R=t_r,
        fitted=fit,
        rows=rows,
        fit_rms=rms("fit"),
        held_out_rms=rms("held out"),
        objective=objective,
        engine=engine,
    )
