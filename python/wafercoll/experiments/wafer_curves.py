"""Figures 11-13 of *Near-Optimal Wafer-Scale Reduce*: cycles against B and P.

Luczynski, Gianinazzi et al. (HPDC 2024), Section 8. Each point is a
collective's predicted cycles (``model``, the closed forms of Sections 4-7
with ``T_R = 2``) with the packet-level simulation of its schedule beside it
(``sim``, :func:`wafercoll.simulate` on
:func:`wafercoll.wafer.wse2_network`, where the paper has its CS-2
measurements):

* ``wafer_fig11``: a row of ``P = 512`` PEs, ``B = 2^0 .. 2^12`` wavelets
  (4 B to 16 KiB; a wavelet is 4 bytes): (a) the flooding broadcast, (b)
  Reduce with Star, Chain, Tree, Two-Phase and Auto-Gen, (c) AllReduce with
  each ``<pattern>+bcast`` (root PE 0) and Ring, simulated in both mappings
  of Figure 7 (``mapping`` "a" and "b"; Lemma 6.1 gives both one time).
* ``wafer_fig12``: the same at ``B = 256`` wavelets (1 KiB) for
  ``P = 2^2 .. 2^9``.
* ``wafer_fig13``: 2D on ``n x n`` grids: the 2D broadcast, every 2D Reduce
  (X-Y per pattern, Snake) and every 2D AllReduce (X-Y AllReduce per pattern
  and with Ring, 2D Reduce + 2D broadcast), ``sweep == "vs_B"`` on 512 x 512
  (model only) and on 32 x 32 (model and simulation), ``sweep == "vs_n"`` at
  ``B = 256`` for ``n = 2^2 .. 2^9``.

What is simulated
-----------------
A run is simulated when its schedule needs at most ``MAX_EVENTS``
packet-stage events in 1D, ``MAX_EVENTS_2D`` in 2D
(counted by :func:`wafercoll.simulate`, which refuses a larger run with
:class:`wafercoll.SimulationTooLarge` holding the count; Star's energy grows
as ``B P^2 / 2``),
and in 2D only on grids of at most ``MAX_SIM_PES`` PEs: up to 256 x 256 in
the n sweep, where grids above 64 x 64 use the cap ``MAX_EVENTS_2D_LARGE``
(the broadcast and the reduces that fit it; 512 x 512 is model only). Ring's
schedule has ``2 P (P - 1)`` transfers whatever ``B``: at ``P = 512`` one run
takes 2 to 3 s, so the B sweep simulates it only where ``log2 B`` is a
multiple of ``RING_SIM_STEP`` (B = 1, 64, 4096). Other rows have ``sim`` and
``rel_error = (model - sim) / sim`` NaN, and ``events`` NaN when the
schedule was not built. X-Y Ring AllReduce is simulated with
``wafer_xy_ring_allreduce`` in Fig. 7b's mapping.

The findings set the paper's headline ratios (measured on the CS-2) beside
the model's over the same sweep, ask whether Ring ever wins, give the error
of the model against the simulation per algorithm, and report what the
dataflow simulation does beyond the model: the broadcast of
Reduce-then-Broadcast overlaps the reduce, and Ring's mapping "a" waits for
its long wrap-around link in every step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import wafer
from .._errors import SimulationTooLarge
from ..algorithms import build, find
from ..palette import color as palette_color
from ..schedule import Schedule
from ..simulate import simulate
from ..wafer.machine import wse2_network
from . import Experiment, finding, new_axes, progress, register_experiment
from .judges import AtMost, Exact, Judge, UpTo, Value
from .wafer_allreduce import (
    PAPER_AUTOGEN_ALLREDUCE_1D,
    PAPER_AUTOGEN_ALLREDUCE_2D,
    PAPER_AUTOGEN_REDUCE_1D,
    PAPER_AUTOGEN_REDUCE_2D,
    PAPER_TWO_PHASE_ALLREDUCE_2D,
    PAPER_TWO_PHASE_REDUCE_2D,
    headline_judge,
)

__all__ = [
    "plot_fig11",
    "plot_fig12",
    "plot_fig13",
    "run_fig11",
    "run_fig12",
    "run_fig13",
]

T_R = 2
PATTERNS = ("star", "chain", "tree", "two_phase", "autogen")
FIXED = PATTERNS[:4]
PANELS = ("broadcast", "reduce", "allreduce")
#: Row length (Fig. 11), grid side (Fig. 13 vs B) and the simulated grid side.
P_FIG, P_FIG_QUICK = 512, 32
N_FIG, N_FIG_QUICK = 512, 32
N_SIM, N_SIM_QUICK = 32, 8
#: Fixed vector length of Figs. 12 and 13c: 256 wavelets = 1 KiB.
B_FIXED = 256
#: B = 2^0 .. 2^LOG2_B_MAX; P and n = 2^2 .. 2^LOG2_P_MAX.
LOG2_B_MAX, LOG2_B_MAX_QUICK = 12, 8
LOG2_P_MAX, LOG2_P_MAX_QUICK = 9, 6
#: Simulate only runs of at most this many packet-stage events (1D; 2D runs
#: have many streams in flight, simulate at about 6 M events/s rather than 15,
#: and number 19 per point, hence a lower cap) ...
MAX_EVENTS, MAX_EVENTS_QUICK = 2 * 10**7, 10**5
MAX_EVENTS_2D = 5 * 10**6
#: ... except on the large grids of the n sweep, which run the patterns whose
#: schedules stay within this cap (at 256 x 256, B = 256: the broadcast and the
#: chain, two-phase, Auto-Gen and snake reduces, 33-66 M events, about 3-8 s
#: each; Star and the AllReduce forms need 0.1-4.4 G and stay model only) ...
MAX_EVENTS_2D_LARGE = 7 * 10**7
#: ... and, in 2D, on grids of at most this many PEs (256 x 256 in the n sweep).
MAX_SIM_PES, MAX_SIM_PES_QUICK = 256 * 256, 16 * 16
#: Ring in the B sweep: simulated where log2 B is a multiple of this.
RING_SIM_STEP, RING_SIM_STEP_QUICK = 6, 1
#: The largest model error the paper reports for AllReduce (Section 8.6).
RING_TOLERANCE = 0.15
#: Slack of floating-point comparisons of cycle counts.
EPS = 1e-9

Case = tuple[str, str, str, float, Callable[[], Schedule] | None]


# -- the cases of one point -----------------------------------------------------------
def _cases_1d(P: int, B: int) -> list[Case]:
    """``(panel, algorithm, mapping, model, make)`` of every 1D collective."""
    row = wafer.wafer_row(P)

    def mk(name: str, **kw: Any) -> Callable[[], Schedule]:
        return lambda: build(name, P, 4 * B, **kw)

    bcast = wafer.broadcast_time(P, B, T_R)
    out: list[Case] = [
        ("broadcast", "broadcast", "", bcast, mk("wafer_flood_broadcast"))
    ]
    for p in PATTERNS:
        t = wafer.reduce_time(p, P, B, T_R)
        out.append(("reduce", p, "", t, mk(find("wafer", p, "reduce").name)))
    for p in PATTERNS:
        t = wafer.allreduce_time(f"{p}+bcast", P, B, T_R)
        out.append(
            (
                "allreduce",
                f"{p}+bcast",
                "",
                t,
                mk(find("wafer", p, "allreduce").name, topology=row),
            )
        )
    t = wafer.ring_time(P, B, T_R)
    for m in ("a", "b"):
        out.append(
            (
                "allreduce",
                "ring",
                m,
                t,
                mk("wafer_ring_allreduce", topology=row, mapping=m),
            )
        )
    return out


def _cases_2d(n: int, B: int) -> list[Case]:
    """``(panel, algorithm, "", model, make)`` of every 2D collective on n x n."""
    grid = wafer.wafer_grid(n, n)

    def mk(name: str, **kw: Any) -> Callable[[], Schedule]:
        return lambda: build(name, n * n, 4 * B, topology=grid, **kw)

    t = wafer.broadcast_2d_time(n, n, B, T_R)
    out: list[Case] = [("broadcast", "2d_broadcast", "", t, mk("wafer_2d_broadcast"))]
    for a in wafer.REDUCE_2D_ALGORITHMS:
        make = (
            mk("wafer_snake_reduce")
            if a == "snake"
            else mk("wafer_xy_reduce", pattern=a[3:])
        )
        out.append(("reduce", a, "", wafer.reduce_2d_time(a, n, n, B, T_R), make))
    for a in wafer.ALLREDUCE_2D_ALGORITHMS:
        red = a.removesuffix("+bcast2d")
        pattern = "snake" if red == "snake" else red[3:]
        if a == "xy_ring":
            # Fig. 7b's mapping: neighbours at most two apart (Lemma 6.1 holds
            # for both mappings).
            make = mk("wafer_xy_ring_allreduce", mapping="b")
        elif a != red:
            make = mk("wafer_2d_allreduce", pattern=pattern)
        else:
            make = mk("wafer_xy_allreduce", pattern=pattern)
        out.append(("allreduce", a, "", wafer.allreduce_2d_time(a, n, n, B, T_R), make))
    return out


def _measure(
    make: Callable[[], Schedule] | None, topology: Any, cap: int
) -> tuple[float, float]:
    """Simulated cycles and event count; NaN for what was not simulated or built."""
    if make is None:
        return math.nan, math.nan
    s = make()
    net = wse2_network(T_R)
    try:
        r = simulate(s, topology, net, max_events=cap)
    except SimulationTooLarge as e:
        return math.nan, float(e.events)
    except ValueError:  # too many route stages even to count
        return math.nan, math.nan
    return float(r.cycles), float(r.events)


def _sweep(
    points: list[tuple[str, int, int, Callable[[str], bool]]], two_d: bool, cap: int
) -> dict[str, list[Any]]:
    """Model and simulation at every ``(sweep, P or n, B, simulate(algorithm)?)``."""
    keys = ["sweep", "panel", "algorithm", "mapping", "n" if two_d else "P", "PEs"]
    keys += ["B", "bytes", "model", "sim", "rel_error", "events"]
    cols: dict[str, list[Any]] = {k: [] for k in keys}
    # A point on two sweeps (the sweep over B passes B_FIXED at the grid the
    # sweep over n also reaches) is simulated once.
    measured: dict[tuple[Any, ...], tuple[float, float]] = {}
    for sweep, size, B, sim_ok in progress(points, "2D" if two_d else "1D"):
        cases = _cases_2d(size, B) if two_d else _cases_1d(size, B)
        topo = wafer.wafer_grid(size, size) if two_d else wafer.wafer_row(size)
        for panel, algorithm, mapping, model, make in cases:
            sim, events = (math.nan, math.nan)
            if sim_ok(algorithm):
                key = (size, B, panel, algorithm, mapping)
                if key not in measured:
                    measured[key] = _measure(make, topo, cap)
                sim, events = measured[key]
            row = (sweep, panel, algorithm, mapping, size, size * size, B, 4 * B)
            row += (float(model), sim, (model - sim) / sim, events)
            for k, v in zip(keys, row, strict=True):
                cols[k].append(v)
    if two_d:
        del cols["mapping"]  # 2D: X-Y Ring always uses mapping b
    else:
        del cols["PEs"]
    return cols


# -- findings -----------------------------------------------------------------------
Finding = dict[str, Any]
Columns = dict[str, np.ndarray]


def _arrays(cols: dict[str, list[Any]]) -> Columns:
    return {k: np.asarray(v) for k, v in cols.items()}


def _finding(
    id: str,
    quantity: str,
    paper: str,
    ours: str,
    note: str,
    judge: Judge,
    measured: Any,
    **kw: str,
) -> Finding:
    """A finding (:func:`wafercoll.experiments.finding`, the note positional)."""
    return finding(id, quantity, paper, ours, judge, measured, note=note, **kw)


def _failed(checks: dict[str, Any]) -> list[str]:
    """The sub-claims of a composite claim that ours does not show."""
    return [k for k, ok in checks.items() if not ok]


#: The judge of a composite claim: every listed sub-claim is seen.
ALL_SEEN = Exact([], "sub-claims not seen")


#: Why the paper's model-against-measurement errors cannot be reproduced here.
NO_HARDWARE = (
    "the paper compares its model with measurements on the CS-2; wafercoll has "
    "no CS-2, so the model is compared with wafercoll's simulator instead, for "
    "information"
)


def _done(c: Columns) -> np.ndarray:
    return ~np.isnan(c["sim"].astype(float))


def _errors(
    c: Columns, panel: str, paper: str, bound_pct: float, what: str = ""
) -> Finding:
    """Largest |model - sim| / sim per algorithm (and Ring mapping) of a panel."""
    maps = c.get("mapping", np.full(c["B"].size, ""))
    parts, worst = [], math.nan
    for alg, m in dict.fromkeys(zip(c["algorithm"], maps, strict=True)):
        sel = (c["panel"] == panel) & (c["algorithm"] == alg) & (maps == m) & _done(c)
        e = c["rel_error"][sel].astype(float)
        if e.size:
            worst = float(np.fmax(worst, 100 * np.abs(e).max()))
            parts.append(
                f"{alg}{f' ({m})' if m else ''} {np.abs(e).max():.1%} "
                f"({e.min():+.1%}..{e.max():+.1%}, {e.size})"
            )
    return _finding(
        f"model_error.{panel}",
        f"{panel}: largest |model - simulated| / simulated per algorithm{what}",
        paper,
        "; ".join(parts) or "nothing simulated",
        "in brackets: the signed range of (model - sim) / sim and the number of "
        "simulated points; negative: the model predicts fewer cycles",
        AtMost(bound_pct, why="the largest relative error in %, as the paper's"),
        worst,
        not_reproducible=NO_HARDWARE,
    )


def _exact(c: Columns, forms: dict[str, str]) -> list[Finding]:
    """Simulated cycles equal to the closed form where the paper calls it exact."""
    out = []
    for alg, form in forms.items():
        sel = (c["algorithm"] == alg) & _done(c)
        d = np.abs(c["sim"][sel] - c["model"][sel]).astype(float)
        rel = d / c["model"][sel].astype(float)
        out.append(
            _finding(
                f"closed_form.{alg}",
                f"{alg}: max |simulated - closed form| (cycles)",
                form,
                f"{d.max() if d.size else math.nan:.3g} over {d.size} simulated points",
                "the simulator's stage costs add up to the paper's form",
                AtMost(
                    EPS,
                    strict=True,
                    why="the largest relative difference; the slack is the "
                    "rounding of summed float cycles",
                ),
                float(rel.max()) if d.size else math.nan,
            )
        )
    return out


def _overlap(c: Columns) -> Finding:
    """Reduce-then-Broadcast simulated against its reduce and broadcast simulated."""
    key = zip(c["panel"], c["algorithm"], c["mapping"], c["P"], c["B"], strict=True)
    sim = dict(zip(key, c["sim"].astype(float), strict=True))
    parts, saved, below, total = [], [], 0, 0
    for p in PATTERNS:
        s = []
        for i in np.flatnonzero((c["algorithm"] == f"{p}+bcast") & _done(c)):
            P, B = c["P"][i], c["B"][i]
            total += 1
            below += c["sim"][i] < c["model"][i] - EPS
            parts_sim = (
                sim[("reduce", p, "", P, B)] + sim[("broadcast",) * 2 + ("", P, B)]
            )
            if not math.isnan(parts_sim):
                s.append((parts_sim - c["sim"][i]) / B)
        saved += s
        if s:
            parts.append(f"{p} {min(s):.3g}..{max(s):.3g} B")
    return _finding(
        "overlap.reduce_then_broadcast",
        "Reduce-then-Broadcast: sim(reduce) + sim(bcast) - sim(allreduce)",
        "T_NAIVE = T_REDUCE + T_BCAST (Section 6.1): the broadcast follows the reduce",
        "saving in units of B: " + "; ".join(parts) + f"; the simulated AllReduce "
        f"is below the model at {below} of {total} simulated points",
        "with the Star only the broadcast's latency is added, with the Chain every "
        "ramp carries 2B wavelets and little is saved",
        AtMost(
            EPS,
            why="the largest saving of the simulated AllReduce over its reduce and "
            "broadcast simulated apart, in units of B; the slack is float rounding",
        ),
        max(saved) if saved else math.nan,
        explanation="the simulator forwards the root's sum as it forms "
        "(dataflow), so the broadcast overlaps the reduce; the paper's form adds "
        "the two",
    )


def _ring_mappings(c: Columns) -> list[Finding]:
    """Ring simulated in mappings a and b against Lemma 6.1."""
    out = []
    for m, why in (
        ("a", "every step waits for the wrap-around transfer over P - 1 hops, which "
         "the lemma's distance term counts once per phase"),
        ("b", "neighbours at most two hops apart, as the lemma assumes"),
    ):  # fmt: skip
        sel = (c["algorithm"] == "ring") & (c["mapping"] == m) & _done(c)
        ratio = (c["sim"][sel] / c["model"][sel]).astype(float)
        if ratio.size:
            i = int(np.argmax(np.abs(ratio - 1)))
            out.append(
                _finding(
                    f"ring_mapping.{m}",
                    f"Ring mapping {m} (Fig. 7{m}): simulated / Lemma 6.1",
                    "both mappings have the same predicted time (Section 6.2); the "
                    f"largest AllReduce model error is {RING_TOLERANCE:.0%} (8.6)",
                    f"{ratio.min():.3g}..{ratio.max():.3g} over {ratio.size} points "
                    f"(farthest from 1 at P = {c['P'][sel][i]}, B = {c['B'][sel][i]})",
                    f"mapping {m}: {why}",
                    Value(
                        1,
                        rel=RING_TOLERANCE,
                        why="the paper's largest AllReduce model error (8.6), "
                        "a band stated here",
                    ),
                    float(ratio[i]),
                    explanation=f"mapping {m}: {why}",
                )
            )
    return out


def _series(
    c: Columns, panel: str, alg: str, x: str, **eq: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``x``, model and sim of one algorithm sorted by ``x`` (one Ring mapping)."""
    sel = (c["panel"] == panel) & (c["algorithm"] == alg)
    for k, v in eq.items():
        sel &= c[k] == v
    if "mapping" in c and sel.any():
        sel &= c["mapping"] == c["mapping"][sel][0]
    i = np.flatnonzero(sel)
    i = i[np.argsort(c[x][i])]
    return c[x][i], c["model"][i].astype(float), c["sim"][i].astype(float)


def _where(at: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in at.items() if k != "sweep")


def _headline(
    c: Columns,
    id: str,
    quantity: str,
    paper: tuple[float, str],
    ratio: tuple[str, str, str],
    model_at: dict[str, Any],
    sim_at: dict[str, Any],
) -> Finding:
    """Largest ``slow / fast`` over B, model and simulated, beside the paper's."""
    value, source = paper
    panel, fast, slow = ratio
    B, slow_m, _ = _series(c, panel, slow, "B", **model_at)
    r = slow_m / _series(c, panel, fast, "B", **model_at)[1]
    j = int(np.argmax(r))
    rel = (r[j] - value) / value
    low = np.flatnonzero(r <= value)
    Bs, _, slow_s = _series(c, panel, slow, "B", **sim_at)
    rs = slow_s / _series(c, panel, fast, "B", **sim_at)[2]
    ok = ~np.isnan(rs)
    return _finding(
        id,
        f"{quantity} ({_where(model_at)}, B = {B[0]}..{B[-1]})",
        f"up to {value}x measured on the CS-2 ({source})",
        f"model up to {r[j]:.3g}x at B = {B[j]}"
        + (f"; at B = {B_FIXED}: {r[B == B_FIXED][0]:.3g}x" if B_FIXED in B else "")
        + (
            f"; simulated ({_where(sim_at)}) up to {rs[ok].max():.3g}x at B = "
            f"{Bs[ok][int(np.argmax(rs[ok]))]}"
            if ok.any()
            else "; not simulated"
        ),
        f"model {rel:+.0%} from the measurement"
        + (
            f"; the model's ratio is at most {value}x from B = {B[low[0]]}"
            if low.size
            else ""
        ),
        headline_judge(value),
        float(r[j]),
        explanation="ours is the paper's model (equation (1)), not the CS-2, and "
        "the paper's model errs by 12-35 % per pattern (Section 8.5)"
        + (
            "; the largest model ratio is at B = 1, where the measured CS-2 times "
            "also carry fixed per-receive overheads that equation (1) omits "
            "(experiment wafer_calibrated fits them)"
            if B[j] == 1
            else ""
        ),
    )


def _winners(
    c: Columns, panel: str, algs: tuple[str, ...], x: str, **eq: Any
) -> tuple[np.ndarray, list[str], str, list[str]]:
    """The fastest of ``algs`` by the model at each ``x``.

    Returns the ``x`` values, the winners, their runs as text and the
    sequence of winners (consecutive repeats dropped).
    """
    series = [_series(c, panel, a, x, **eq) for a in algs]
    xs = series[0][0]
    names = [algs[i] for i in np.argmin(np.stack([s[1] for s in series]), axis=0)]
    runs: list[list[Any]] = []
    for v, name in zip(xs.tolist(), names, strict=True):
        if runs and runs[-1][0] == name:
            runs[-1][2] = v
        else:
            runs.append([name, v, v])
    text = ", ".join(
        f"{n} ({x} = {a}..{b})" if a != b else f"{n} ({x} = {a})" for n, a, b in runs
    )
    return xs, names, text, [r[0] for r in runs]


def _common_1d(c: Columns, what: str) -> list[Finding]:
    """Exact forms, errors per panel, the overlap and the ring mappings."""
    out = _exact(
        c,
        {
            "broadcast": "B + P + 2 T_R (Lemma 4.1)",
            "chain": "B + (2 T_R + 2)(P - 1) (Lemma 5.2)",
        },
    )
    out += [
        _errors(c, "broadcast", "measured within 21 % (Section 8.4)", 21, what),
        _errors(c, "reduce", "mean error 12-35 % per pattern (Section 8.5)", 35, what),
        _errors(c, "allreduce", "largest error 15 % (Section 8.6)", 15, what),
        _overlap(c),
    ]
    return out + _ring_mappings(c)


# -- Figures 11 and 12 --------------------------------------------------------------
def run_fig11(quick: bool = False) -> tuple[dict[str, list[Any]], list[Finding]]:
    """Cycles of 1D broadcast, Reduce and AllReduce against B on one row.

    Parameters
    ----------
    quick : bool
        ``P = 32``, ``B = 1 .. 256`` and a small event cap.

    Returns
    -------
    columns : dict
        ``sweep`` ("vs_B"), ``panel``, ``algorithm``, ``mapping`` (Ring's "a"
        or "b", else ""), ``P``, ``B`` (wavelets), ``bytes`` (``4 B``),
        ``model``, ``sim``, ``rel_error``, ``events``.
    findings : list of dict
    """
    P = P_FIG_QUICK if quick else P_FIG
    step = RING_SIM_STEP_QUICK if quick else RING_SIM_STEP
    points = [
        ("vs_B", P, 1 << k, lambda a, k=k: a != "ring" or k % step == 0)
        for k in range((LOG2_B_MAX_QUICK if quick else LOG2_B_MAX) + 1)
    ]
    cols = _sweep(points, False, MAX_EVENTS_QUICK if quick else MAX_EVENTS)
    c = _arrays(cols)
    at = {"P": P}
    findings = _common_1d(c, " (vs B)") + [
        _headline(c, "headline.autogen_reduce_1d", "Auto-Gen vs Chain Reduce",
                  (PAPER_AUTOGEN_REDUCE_1D, "Section 8.5, 512 PEs"),
                  ("reduce", "autogen", "chain"), at, at),
        _headline(c, "headline.autogen_allreduce_1d",
                  "Auto-Gen+Bcast vs Chain+Bcast AllReduce",
                  (PAPER_AUTOGEN_ALLREDUCE_1D, "Section 8.6, 512 PEs"),
                  ("allreduce", "autogen+bcast", "chain+bcast"), at, at),
    ]  # fmt: skip
    # Which fixed Reduce wins where (Section 8.5), and Auto-Gen against them.
    xs, _, runs, seq = _winners(c, "reduce", FIXED, "B")
    ag = _series(c, "reduce", "autogen", "B")[1]
    best = np.minimum.reduce([_series(c, "reduce", a, "B")[1] for a in FIXED])
    lose = np.flatnonzero(ag > best + EPS)
    findings.append(
        _finding(
            "fastest_fixed_reduce",
            f"fastest fixed Reduce by the model, P = {P}",
            "Tree (low depth) at small B, Two-Phase in between, Chain at the largest "
            "B; Auto-Gen fastest except for a scalar, slower there by at most 110 "
            "cycles (Section 8.5, measured)",
            f"{runs}; Auto-Gen slower than the best fixed pattern at "
            + (", ".join(f"B = {xs[i]} (+{ag[i] - best[i]:.3g})" for i in lose)
               or "no B"),
            "the refined Star (B (P-1) + 2T_R + 1) beats every tree of equation (1) "
            "at B = 1; Auto-Gen is the optimum of equation (1)",
            ALL_SEEN,
            _failed({
                "Star or Tree at the smallest B": seq[0] in ("star", "tree"),
                "Two-Phase in between": "two_phase" in seq,
                "Chain at the largest B": seq[-1] == "chain",
                "Auto-Gen behind only for a scalar": np.all(xs[lose] == 1),
            }),
        )
    )  # fmt: skip
    # Does Ring ever win at this P (Section 8.6)?
    ring = _series(c, "allreduce", "ring", "B")[1]
    ring_b = _series(c, "allreduce", "ring", "B", mapping="b")[2]
    rtb = [_series(c, "allreduce", f"{p}+bcast", "B") for p in PATTERNS]
    r_m = ring / np.minimum.reduce([s[1] for s in rtb])
    r_s = ring_b / np.fmin.reduce([s[2] for s in rtb])
    r_s = r_s[~np.isnan(r_s)]
    findings.append(
        _finding(
            "ring_wins",
            f"does Ring ever win at P = {P}? (B = {xs[0]}..{xs[-1]})",
            "never the best choice at 512 PEs, even allowing 15 % model error "
            "(Section 8.6)",
            f"model: Ring wins at {np.sum(r_m < 1 - EPS)} of {xs.size} B; Ring / "
            f"best Reduce-then-Broadcast {r_m.min():.3g}..{r_m.max():.3g}; simulated "
            f"(mapping b, {r_s.size} B): "
            + (f"{r_s.min():.3g}..{r_s.max():.3g}" if r_s.size else "n/a"),
            "Ring pays 2(P-1)(2T_R+1) cycles of depth against the 2B contention of "
            "Reduce-then-Broadcast; the margin is smallest at the largest B",
            Exact(0, "B where Ring wins by the model"),
            int(np.sum(r_m < 1 - EPS)),
        )
    )
    return cols, findings


def run_fig12(quick: bool = False) -> tuple[dict[str, list[Any]], list[Finding]]:
    """Cycles of 1D broadcast, Reduce and AllReduce against P at B = 256.

    Parameters
    ----------
    quick : bool
        ``P = 4 .. 64`` and a small event cap.

    Returns
    -------
    columns : dict
        As :func:`run_fig11`, with ``sweep == "vs_P"``.
    findings : list of dict
    """
    lp = LOG2_P_MAX_QUICK if quick else LOG2_P_MAX
    points = [("vs_P", 1 << k, B_FIXED, lambda a: True) for k in range(2, lp + 1)]
    cols = _sweep(points, False, MAX_EVENTS_QUICK if quick else MAX_EVENTS)
    c = _arrays(cols)
    findings = _common_1d(c, f" (vs P at B = {B_FIXED})")
    xs, _, runs, seq = _winners(c, "reduce", FIXED, "P")
    _, ag, ag_sim = _series(c, "reduce", "autogen", "P")
    fixed = [_series(c, "reduce", a, "P") for a in FIXED]
    best = np.minimum.reduce([f[1] for f in fixed])
    tp = (fixed[FIXED.index("two_phase")][1] / ag)[xs >= 64]
    sim_wins = ag_sim <= np.fmin.reduce([f[2] for f in fixed]) + EPS
    findings.append(
        _finding(
            "fastest_fixed_reduce",
            f"fastest fixed Reduce by the model, B = {B_FIXED}",
            "Chain with few PEs, Two-Phase with more; Auto-Gen fastest throughout, "
            "Two-Phase similar from 64 PEs (Section 8.5, measured)",
            f"{runs}; Auto-Gen <= every fixed pattern at {np.sum(ag <= best + EPS)} of "
            f"{xs.size} P, fastest simulated at {np.sum(sim_wins)} of "
            f"{np.sum(~np.isnan(ag_sim))}"
            + (f"; Two-Phase / Auto-Gen {tp.min():.3g}..{tp.max():.3g} for P >= 64"
               if tp.size else ""),
            "Chain's depth (2T_R+2)(P-1) overtakes Two-Phase's extra B of contention "
            "as P grows (Auto-Gen <= every fixed pattern is the DP's identity, "
            "tested, not judged)",
            ALL_SEEN,
            _failed({
                "Chain with the fewest PEs": seq[0] == "chain",
                "Two-Phase with the most": seq[-1] == "two_phase",
            }),
        )
    )  # fmt: skip
    ring = _series(c, "allreduce", "ring", "P")[1]
    chain = _series(c, "allreduce", "chain+bcast", "P")[1]
    rtb = np.minimum.reduce(
        [_series(c, "allreduce", f"{p}+bcast", "P")[1] for p in PATTERNS]
    )
    beats, gt8 = xs[ring < chain - EPS], xs > 8
    findings.append(
        _finding(
            "ring_vs_rtb",
            f"Ring vs Reduce-then-Broadcast, B = {B_FIXED}",
            "Ring predicted a bit faster than Chain+Bcast at 4 PEs; beyond 8 PEs "
            "Reduce-then-Broadcast is faster, by up to 1.4x (Section 8.6)",
            f"Ring faster than Chain+Bcast at P = {', '.join(map(str, beats)) or '-'}"
            f" ({chain[0] / ring[0]:.3g}x at P = {xs[0]})"
            + (f"; for P > 8 Ring / best Reduce-then-Broadcast "
               f"{(ring / rtb)[gt8].min():.3g}..{(ring / rtb)[gt8].max():.3g}"
               if gt8.any() else ""),
            "the model's gap grows with P (Ring's depth 2(P-1)(2T_R+1))",
            ALL_SEEN,
            _failed({
                f"Ring faster than Chain+Bcast at P = {xs[0]}": xs[0] in beats,
                "Reduce-then-Broadcast faster beyond 8 PEs": np.all(
                    ring[gt8] > rtb[gt8] + EPS
                ),
            }),
        )
    )  # fmt: skip
    if gt8.any():
        gap = float((ring / rtb)[gt8].max())
        findings.append(
            _finding(
                "ring_vs_rtb.largest_gap",
                f"Reduce-then-Broadcast's largest lead over Ring beyond 8 PEs, "
                f"B = {B_FIXED}",
                "by up to 1.4x (Section 8.6)",
                f"{gap:.3g}x at P <= {xs[-1]}",
                "Ring's depth 2(P-1)(2T_R+1) grows with P, so the lead depends on "
                "the largest P swept",
                UpTo("1.4"),
                gap,
                explanation="the paper's 1.4x is measured on the CS-2 (its figure); "
                "ours is the model's, whose gap grows with P",
            )
        )
    return cols, findings


# -- Figure 13 ----------------------------------------------------------------------
def run_fig13(quick: bool = False) -> tuple[dict[str, list[Any]], list[Finding]]:
    """Cycles of the 2D broadcast, Reduce and AllReduce against B and grid side.

    Parameters
    ----------
    quick : bool
        Model grid 32 x 32, simulated grid 8 x 8, ``n = 4 .. 64``,
        ``B = 1 .. 256`` and small caps.

    Returns
    -------
    columns : dict
        ``sweep`` ("vs_B" or "vs_n"), ``panel``, ``algorithm``, ``n`` (grid
        side), ``PEs``, ``B``, ``bytes``, ``model``, ``sim``, ``rel_error``,
        ``events``.
    findings : list of dict
    """
    n_fig = N_FIG_QUICK if quick else N_FIG
    n_sim = N_SIM_QUICK if quick else N_SIM
    pes = MAX_SIM_PES_QUICK if quick else MAX_SIM_PES
    points = [
        ("vs_B", n, 1 << k, lambda a, n=n: n * n <= pes)
        for n in (n_fig, n_sim)
        for k in range((LOG2_B_MAX_QUICK if quick else LOG2_B_MAX) + 1)
    ]
    points += [
        ("vs_n", 1 << k, B_FIXED, lambda a, k=k: 1 << 2 * k <= pes)
        for k in range(2, (LOG2_P_MAX_QUICK if quick else LOG2_P_MAX) + 1)
    ]
    if quick:
        cols = _sweep(points, True, MAX_EVENTS_QUICK)
    else:
        # Grids up to 64 x 64 under the usual cap, larger ones under the
        # large-grid cap (see MAX_EVENTS_2D_LARGE).
        small = [x for x in points if x[1] <= 64]
        large = [x for x in points if x[1] > 64]
        cols = _sweep(small, True, MAX_EVENTS_2D)
        more = _sweep(large, True, MAX_EVENTS_2D_LARGE)
        for k in cols:
            cols[k].extend(more[k])
    c = _arrays(cols)
    findings = _exact(
        c,
        {
            "2d_broadcast": "B + M + N - 2 + 2 T_R + 1 (Lemma 7.1)",
            "snake": "T_CHAIN(M N) (Section 7.3)",
        },
    )
    findings += [
        _errors(c, "reduce", "1D-like, slightly worse for X-Y; Snake within 10 % "
                "(Section 8.7)", 35),
        _errors(c, "allreduce", "almost the same as Reduce (Section 8.7)", 35),
    ]  # fmt: skip
    parts, widest = [], math.nan
    for p in PATTERNS:
        sel = (c["sweep"] == "vs_B") & (c["panel"] == "reduce") & _done(c)
        gap = (c["model"] - c["sim"])[sel & (c["algorithm"] == f"xy_{p}")]
        if gap.size:
            parts.append(f"xy_{p} {gap.min():+.3g}..{gap.max():+.3g}")
            widest = float(np.fmax(widest, np.abs(gap.astype(float)).max()))
    findings.append(
        _finding(
            "xy_reduce.model_minus_simulated",
            f"X-Y Reduce on {n_sim} x {n_sim}: model - simulated (cycles)",
            "T_REDUCE_X + T_REDUCE_Y: the column phase follows the rows (Section 7.2)",
            "; ".join(parts) or "not simulated",
            "positive: the dataflow simulation lets a column PE forward its row's sum "
            "as it forms, so the column phase overlaps the rows; negative: the 1D "
            "patterns' own offsets (Star +1 cycle, Auto-Gen's and Two-Phase's trees "
            "as simulated, see the 1D errors)",
            AtMost(
                0.5, why="the largest |model - simulated| in cycles: equal to the cycle"
            ),
            widest,
            explanation="the paper's form runs the column phase after the rows; on "
            "a dataflow machine a column PE forwards its row's sum as it forms, so "
            "the phases overlap and the form over-predicts (see the note)",
        )
    )
    big, small = {"sweep": "vs_B", "n": n_fig}, {"sweep": "vs_B", "n": n_sim}
    for fid, quantity, paper, ratio in (
        ("headline.autogen_reduce_2d", "X-Y Auto-Gen vs X-Y Chain Reduce",
         (PAPER_AUTOGEN_REDUCE_2D, "Section 8.7"),
         ("reduce", "xy_autogen", "xy_chain")),
        ("headline.two_phase_reduce_2d", "X-Y Two-Phase vs vendor X-Y Chain Reduce",
         (PAPER_TWO_PHASE_REDUCE_2D, "Section 1.3, 512x512"),
         ("reduce", "xy_two_phase", "xy_chain")),
        ("headline.autogen_allreduce_2d", "X-Y Auto-Gen vs X-Y Chain AllReduce",
         (PAPER_AUTOGEN_ALLREDUCE_2D, "Section 8.7"),
         ("allreduce", "xy_autogen", "xy_chain")),
        ("headline.two_phase_allreduce_2d",
         "X-Y Two-Phase vs vendor X-Y Chain AllReduce",
         (PAPER_TWO_PHASE_ALLREDUCE_2D, "Section 1.3, 512x512"),
         ("allreduce", "xy_two_phase", "xy_chain")),
    ):  # fmt: skip
        findings.append(_headline(c, fid, quantity, paper, ratio, big, small))
    two = _series(c, "allreduce", "xy_two_phase+bcast2d", "B", **big)[1]
    chain = _series(c, "allreduce", "xy_chain", "B", **big)[1]
    findings[-1]["note"] += (
        f"; Two-Phase 2D Reduce + 2D Bcast: up to {np.max(chain / two):.3g}x"
    )
    # Fastest fixed 2D Reduce over B on the big grid and over n (Section 8.7).
    fixed2d = (*[f"xy_{p}" for p in FIXED], "snake")
    _, _, runs_b, seq_b = _winners(c, "reduce", fixed2d, "B", **big)
    xn, _, runs_n, seq_n = _winners(c, "reduce", fixed2d, "n", sweep="vs_n")
    ag = _series(c, "reduce", "xy_autogen", "n", sweep="vs_n")[1]
    table = np.stack([_series(c, "reduce", a, "n", sweep="vs_n")[1] for a in fixed2d])
    beat = [f"{fixed2d[i]} at n = {xn[j]}" for i, j in np.argwhere(table < ag - EPS)]
    snake_n = [int(xn[j]) for i, j in np.argwhere(table < ag - EPS) if i == len(FIXED)]
    findings.append(
        _finding(
            "fastest_fixed_reduce_2d",
            f"fastest fixed 2D Reduce by the model: on {n_fig} x {n_fig} over B, and "
            f"at B = {B_FIXED} over n",
            "trends as in 1D on 512x512; over n: Snake with few PEs, then X-Y Chain, "
            "then X-Y Two-Phase; X-Y Auto-Gen best except on 4x4, where Snake is "
            "(Section 8.7)",
            f"over B: {runs_b}; over n: {runs_n}; fixed patterns faster than X-Y "
            f"Auto-Gen: {', '.join(beat) or 'none'}",
            "X-Y on n x n costs twice the 1D pattern on n PEs; Snake is the Chain over "
            "n^2 PEs",
            ALL_SEEN,
            _failed({
                "over B: X-Y Star or Tree first": seq_b[0] in ("xy_star", "xy_tree"),
                "over B: X-Y Chain last": seq_b[-1] == "xy_chain",
                "over n: Snake, X-Y Chain, X-Y Two-Phase":
                    seq_n == ["snake", "xy_chain", "xy_two_phase"],
                "Snake beats X-Y Auto-Gen on 4x4 only": snake_n == [4],
            }),
        )
    )  # fmt: skip
    return cols, findings


# -- plotting ----------------------------------------------------------------------
_COLOURS = {
    "broadcast": "0.3",
    **{
        a: palette_color(a)
        for a in ("star", "chain", "tree", "two_phase", "autogen", "ring", "snake")
    },
}
#: The 2D AllReduce forms drawn in Figure 13b (the columns hold all of them).
ALLREDUCE_2D_PLOTTED = (
    *(f"xy_{p}" for p in PATTERNS),
    "xy_ring",
    "xy_two_phase+bcast2d",
    "snake+bcast2d",
)
#: Line style of each panel when all are drawn on one Axes.
_PANEL_STYLES = ("-", "--", ":")

Selector = Callable[[dict[str, np.ndarray]], np.ndarray]


def _base(algorithm: str) -> str:
    name = algorithm.split("+")[0]
    name = name[3:] if name.startswith("xy_") else name
    return "broadcast" if "broadcast" in name else name


def _by(panel: str, **eq: Any) -> Selector:
    """Rows of one panel with the given column values."""

    def sel(c: dict[str, np.ndarray]) -> np.ndarray:
        m = c["panel"] == panel
        for k, v in eq.items():
            m = m & (c[k] == v)
        return m

    return sel


def _panels(ax: Any, k: int) -> list[Any] | None:
    """Split ``ax``'s subplot cell into ``k`` panels side by side (None: no cell)."""
    spec = ax.get_subplotspec()
    if spec is None:
        return None
    grid = spec.subgridspec(1, k, wspace=0.25)
    ax.set_subplotspec(grid[0])
    return [ax] + [ax.figure.add_subplot(grid[i]) for i in range(1, k)]


def _draw(
    ax: Any,
    c: dict[str, np.ndarray],
    sel: np.ndarray,
    x: str,
    *,
    prefix: str = "",
    style: str = "-",
    thin: bool = False,
) -> None:
    """Model lines and simulated markers of the selected rows, per algorithm.

    Ring's mapping "a" is drawn with crosses, everything else with circles;
    ``thin`` draws the model as a faint unlabelled line (a second grid).
    """
    maps = c["mapping"] if "mapping" in c else np.full(sel.size, "")
    for alg in dict.fromkeys(c["algorithm"][sel].tolist()):
        rows = np.flatnonzero(sel & (c["algorithm"] == alg))
        rows = rows[np.argsort(c[x][rows], kind="stable")]
        colour = _COLOURS[_base(alg)]
        one = rows[maps[rows] == maps[rows][0]]
        style_kw = {"linewidth": 0.6, "alpha": 0.5} if thin else {"linewidth": 1.1}
        # Ring and Star share black: Ring is dash-dotted so the two stay apart.
        dash = (
            "--"
            if alg.endswith("+bcast2d")
            else "-."
            if _base(alg) == "ring"
            else style
        )
        label = None if thin else f"{prefix}{alg}"
        ax.plot(c[x][one], c["model"][one], dash, color=colour, label=label, **style_kw)
        for m, marker in (("", "o"), ("a", "x"), ("b", "o")):
            r = rows[(maps[rows] == m) & ~np.isnan(c["sim"][rows].astype(float))]
            if r.size:
                label = f"{prefix}{alg} {m}, simulated" if m and not thin else None
                ax.plot(c[x][r], c["sim"][r], marker, color=colour, label=label,
                        markersize=3, markerfacecolor="none")  # fmt: skip


def _finish(ax: Any, x: str, title: str) -> None:
    """Log axes with ticks at powers of two and one tick style (``2k``, ``5M``)."""
    from matplotlib import ticker

    from ..plot import LEGEND_FONTSIZE, log2_ticks, si_formatter

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    lo, hi = ax.get_xlim()
    log2_ticks(ax.xaxis, lo, hi, most=5)
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0), numticks=12))
    ax.yaxis.set_major_formatter(si_formatter())
    ax.yaxis.set_minor_locator(ticker.NullLocator())
    ax.set_title(title, fontsize="small")
    ax.grid(True, alpha=0.3)
    ax.tick_params(labelsize=8)
    ax.legend(
        fontsize=LEGEND_FONTSIZE,
        ncol=2,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.16),
        frameon=False,
    )
    if x == "B":
        ax.set_xlabel("B (wavelets)", fontsize="small")
        top = ax.secondary_xaxis("top", functions=(lambda b: 4 * b, lambda y: y / 4))
        log2_ticks(top.xaxis, 4 * lo, 4 * hi, most=5, label=_bytes)
        top.set_xlabel("bytes (4 per wavelet)", fontsize="small")
        top.tick_params(labelsize=8)
    else:
        ax.set_xlabel("P (PEs)" if x == "P" else "n (n x n grid)", fontsize="small")


def _bytes(v: float) -> str:
    """``4``, ``512``, ``4 KiB``: a byte count in binary units."""
    return f"{v / 1024:g} KiB" if v >= 1024 else f"{v:g}"


Layer = tuple[Selector, bool]  # rows, thin


def _plot(
    data: dict[str, Any],
    ax: Any,
    panels: list[tuple[str, str, list[Layer]]],
    title: str,
) -> Any:
    """Panels ``(title, x column, layers)`` side by side, or all on one Axes.

    When ``ax`` is a subplot its cell is split into one panel per entry;
    otherwise (an inset or a free Axes) everything is drawn on ``ax``, the
    panels told apart by line style and a prefix of the legend labels, which
    only works when they share the x column.
    """
    ax = new_axes(ax)
    c = _arrays(data)
    split = _panels(ax, len(panels))
    if split:  # three panels with their legends below need a wider figure
        ax.figure.set_size_inches(12, 5.6)
    for k, (name, x, layers) in enumerate(panels):
        if not split and x != panels[0][1]:
            continue  # one Axes has one x axis
        target = split[k] if split else ax
        for sel, thin in layers:
            if split:
                _draw(target, c, sel(c), x, thin=thin)
            else:
                style = _PANEL_STYLES[k % len(_PANEL_STYLES)]
                _draw(target, c, sel(c), x, prefix=f"{name}: ", style=style, thin=thin)
        if split:
            _finish(target, x, name)
    if not split:
        _finish(ax, panels[0][1], title)
    ylabel = "cycles (lines: model; hollow markers: simulated)"
    if split:
        ax.figure.supylabel(ylabel, fontsize="medium")  # one label for the panels
    else:
        ax.set_ylabel(ylabel, fontsize="small")
    ax.figure.suptitle(title, fontsize="medium")
    return ax


def plot_fig11(data: dict[str, Any], ax: Any = None) -> Any:
    """Cycles against B: (a) broadcast, (b) Reduce, (c) AllReduce.

    Lines are the model, markers the simulation (Ring: crosses for mapping
    "a", circles for "b"). Returns the first panel's Axes.
    """
    p = int(np.asarray(data["P"])[0]) if len(data["P"]) else 0
    panels = [
        (f"({a}) {n}", "B", [(_by(n), False)])
        for a, n in zip("abc", PANELS, strict=True)
    ]
    return _plot(data, ax, panels, f"1D collectives on {p} PEs against B (Fig. 11)")


def plot_fig12(data: dict[str, Any], ax: Any = None) -> Any:
    """Cycles against P at B = 256: (a) broadcast, (b) Reduce, (c) AllReduce."""
    panels = [
        (f"({a}) {n}", "P", [(_by(n), False)])
        for a, n in zip("abc", PANELS, strict=True)
    ]
    return _plot(
        data, ax, panels, f"1D collectives at B = {B_FIXED} (1 KiB) against P (Fig. 12)"
    )


def plot_fig13(data: dict[str, Any], ax: Any = None) -> Any:
    """(a) 2D Reduce and (b) AllReduce against B, (c) Reduce against n.

    (a) and (b) draw the model on the largest grid of the B sweep and, faint
    with markers, the model and simulation on the smallest; (b) draws the
    forms of :data:`ALLREDUCE_2D_PLOTTED`. (c) adds the 2D broadcast.
    """
    c = _arrays(data)
    vs_b = c["sweep"] == "vs_B"
    sides = sorted({int(v) for v in c["n"][vs_b]}) or [0]
    big, small = sides[-1], sides[0]

    def ar(n: int) -> Selector:
        base = _by("allreduce", sweep="vs_B", n=n)
        return lambda c: base(c) & np.isin(c["algorithm"], ALLREDUCE_2D_PLOTTED)

    def vs_n(c: dict[str, np.ndarray]) -> np.ndarray:
        return (c["sweep"] == "vs_n") & np.isin(c["panel"], ("broadcast", "reduce"))

    panels = [
        (
            f"(a) reduce {big}x{big} (faint: {small}x{small})",
            "B",
            [
                (_by("reduce", sweep="vs_B", n=big), False),
                (_by("reduce", sweep="vs_B", n=small), True),
            ],
        ),
        (f"(b) allreduce {big}x{big}", "B", [(ar(big), False), (ar(small), True)]),
        (f"(c) B = {B_FIXED}", "n", [(vs_n, False)]),
    ]
    if not vs_b.any() or big == small:
        panels[0] = (panels[0][0], "B", panels[0][2][:1])
        panels[1] = (panels[1][0], "B", panels[1][2][:1])
    return _plot(data, ax, panels, "2D collectives on n x n grids (Fig. 13)")


register_experiment(
    Experiment(
        name="wafer_fig11",
        title="Figure 11: 1D broadcast, Reduce and AllReduce on 512 PEs against B",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Sections 8.4-8.6: on 512 PEs "
            "Auto-Gen Reduce is up to 3.16x faster than Chain and Auto-Gen AllReduce "
            "2.47x faster than Chain+Bcast (measured); Ring is never the best "
            "AllReduce; the model predicts the trends."
        ),
        run=run_fig11,
        plot=plot_fig11,
    )
)
register_experiment(
    Experiment(
        name="wafer_fig12",
        title="Figure 12: 1D broadcast, Reduce and AllReduce at 1 KiB against P",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Sections 8.4-8.6: at B = 256 "
            "Chain is the best Reduce with few PEs and Two-Phase with many, Auto-Gen "
            "is fastest throughout; Ring is a little faster than Chain+Bcast at 4 "
            "PEs, Reduce-then-Broadcast faster than Ring beyond 8."
        ),
        run=run_fig12,
        plot=plot_fig12,
    )
)
register_experiment(
    Experiment(
        name="wafer_fig13",
        title="Figure 13: 2D Reduce and AllReduce against B and grid side",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Section 8.7: on 512x512 X-Y "
            "Auto-Gen Reduce is up to 3.27x faster than X-Y Chain, Two-Phase up to "
            "3.32x (Reduce) and 2.56x (AllReduce) faster than the vendor's; over the "
            "grid side Snake, X-Y Chain and X-Y Two-Phase win in turn."
        ),
        run=run_fig13,
        plot=plot_fig13,
    )
)
