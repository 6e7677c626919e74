"""The wafer model calibrated on the CS-2's measured speedups.

Luczynski, Gianinazzi et al. (HPDC 2024) publish six measured speedups
(Sections 1.3, 8.5-8.7; :data:`wafercoll.wafer.MEASURED_SPEEDUPS`) and
explain the model's excess by "the overhead associated when a PE starts
receiving from another PE" (Section 8.5). ``wafer_calibrated`` fits that
overhead, one number of cycles per switch to a new incoming stream
(:mod:`wafercoll.wafer.calibration`), twice:

* in the **model** (the switch-weighted contention in equation (1)), by
  least squares on the two 1D measurements (Auto-Gen over Chain Reduce,
  3.16x, and AllReduce, 2.47x, on 512 PEs), the four 2D ones on 512 x 512
  PEs held out;
* in the **simulator** preset (``wse2_network(switch_overhead=...)``), on
  the 1D Reduce alone (simulated over ``B = 2^0 .. 2^8``), the 1D AllReduce
  held out; the grid measurements are too large to simulate in a fit.

A last check holds out a claim of another kind: Section 8.5 measured
Auto-Gen within 110 cycles of the fastest pattern for a scalar and the
fastest otherwise; the calibrated simulator is asked the same at 512 PEs.

Rows: ``kind == "speedup"`` (per engine and measurement: measured,
uncalibrated and calibrated ratios, their relative errors, the B of the
maximum, the fitted overhead), ``kind == "objective"`` (the fit's sum of
squared log errors against the overhead) and ``kind == "small_B"`` (the
calibrated simulator's cycles per pattern at B = 1, 2, 4).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import wafer
from ..algorithms import build, find
from ..palette import color as palette_color
from ..simulate import simulate
from . import Experiment, finding, new_axes, register_experiment
from .judges import AtMost, Calibrated
from .wafer_allreduce import headline_judge

__all__ = ["plot_calibrated", "run_calibrated"]

T_R = 2
#: The fits (names of :data:`wafercoll.wafer.MEASURED_SPEEDUPS`).
FIT_MODEL = ("reduce_1d", "allreduce_1d")
FIT_SIM = ("reduce_1d",)
#: Section 8.5: Auto-Gen is at most this many cycles slower than the best
#: pattern when reducing a scalar (measured), and the fastest otherwise.
SCALAR_SLACK = 110
SMALL_B = (1, 2, 4)
PATTERNS = ("star", "chain", "tree", "two_phase", "autogen")
P_ROW = 512
KEYS = (
    "kind",
    "engine",
    "name",
    "role",
    "measured",
    "uncalibrated",
    "calibrated",
    "uncalibrated_error",
    "calibrated_error",
    "B",
    "switch_overhead",
    "pattern",
    "cycles",
    "sse",
)


def _row(cols: dict[str, list[Any]], **values: Any) -> None:
    for k in KEYS:
        cols[k].append(
            values.get(
                k, "" if k in ("engine", "name", "role", "pattern") else math.nan
            )
        )


def _fits() -> tuple[wafer.Calibration, wafer.Calibration]:
    model = wafer.calibrate_switch_overhead(FIT_MODEL, T_R)
    sim = wafer.calibrate_switch_overhead(FIT_SIM, T_R, engine="simulator")
    return model, sim


def run_calibrated(
    quick: bool = False,
) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """Fit the switch overhead in the model and the simulator; check the rest.

    Parameters
    ----------
    quick : bool
        Accepted for the experiment interface; the fits take seconds and run
        in full either way (the measurements are on 512 PEs).
    """
    del quick
    cols: dict[str, list[Any]] = {k: [] for k in KEYS}
    fits = _fits()
    for cal in fits:
        for r in cal.rows:
            _row(
                cols,
                kind="speedup",
                engine=cal.engine,
                name=r["name"],
                role=r["role"],
                measured=r["measured"],
                uncalibrated=r["model"],
                calibrated=r["calibrated"],
                uncalibrated_error=r["model_error"],
                calibrated_error=r["calibrated_error"],
                B=r["B"],
                switch_overhead=cal.switch_overhead,
            )
        for o, v in cal.objective:
            _row(cols, kind="objective", engine=cal.engine, switch_overhead=o, sse=v)
    row = wafer.wafer_row(P_ROW)
    net = fits[1].network()
    for B in SMALL_B:
        for p in PATTERNS:
            c = simulate(
                build(find("wafer", p, "reduce").name, P_ROW, 4 * B), row, net
            ).cycles
            _row(
                cols,
                kind="small_B",
                engine="simulator",
                pattern=p,
                B=B,
                cycles=c,
                switch_overhead=fits[1].switch_overhead,
            )
    return cols, _findings(cols, fits)


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _findings(
    cols: dict[str, list[Any]], fits: tuple[Any, Any]
) -> list[dict[str, Any]]:
    model, sim = fits
    out: list[dict[str, Any]] = []
    for cal, what, tag in (
        (model, "model (equation (1))", "model"),
        (sim, "simulator preset", "simulator"),
    ):
        fit_rows = [r for r in cal.rows if r["role"] == "fit"]
        held = [r for r in cal.rows if r["role"] != "fit"]
        out.append(
            finding(
                f"fit.switch_overhead.{tag}",
                f"switch overhead fitted in the {what}",
                "Section 8.5: measured times carry an overhead 'when a PE starts "
                "receiving from another PE' (not quantified)",
                f"O = {cal.switch_overhead:.1f} cycles by least squares on "
                + ", ".join(f"{r['name']} ({r['measured']}x)" for r in fit_rows)
                + "; residuals "
                + ", ".join(_pct(r["calibrated_error"]) for r in fit_rows)
                + f" (rms {cal.fit_rms:.1%}; before the fit "
                + ", ".join(_pct(r["model_error"]) for r in fit_rows)
                + ")",
                Calibrated(params=1, points=len(fit_rows), held_out=len(held)),
                cal.switch_overhead,
                note="held out: "
                + ", ".join(r["name"] for r in held)
                + (
                    f". The model's fit is O = {model.switch_overhead:.1f}: "
                    "equation (1) takes the larger of the contention and flow "
                    "terms, so switches hide under the flow term there, while in "
                    "the simulation they add along each PE's receive sequence"
                    if cal is sim
                    else ""
                ),
            )
        )
        for r in held:
            err = r["calibrated_error"]
            out.append(
                finding(
                    f"held_out.{r['name']}.{tag}",
                    f"held-out speedup {r['name']} ({what})",
                    f"up to {r['measured']}x measured on the CS-2",
                    f"calibrated {r['calibrated']:.3g}x at B = {r['B']} "
                    f"({_pct(err)}); uncalibrated {r['model']:.3g}x "
                    f"({_pct(r['model_error'])})",
                    headline_judge(r["measured"]),
                    r["calibrated"],
                    note=f"O = {cal.switch_overhead:.1f} cycles, fitted on "
                    + ", ".join(cal.fitted),
                    explanation="one overhead per switch, fitted on "
                    + ", ".join(cal.fitted)
                    + ", does not carry over to this measurement: the measured "
                    "gap is not a per-switch cost alone",
                )
            )
    before = [abs(r["model_error"]) for r in model.rows if r["role"] != "fit"]
    out.append(
        finding(
            "held_out.rms_error.model",
            "held-out error of the model, before and after the fit",
            "mean relative error 12-35 % per pattern (Section 8.5)",
            f"rms {float(np.sqrt(np.mean(np.square(before)))):.1%} uncalibrated, "
            f"{model.held_out_rms:.1%} calibrated over the "
            f"{len(before)} grid measurements",
            AtMost(
                12,
                why="the calibrated rms error in % over the held-out points, "
                "no worse than the paper's own model at its best (Section 8.5)",
            ),
            100 * model.held_out_rms,
            explanation="one overhead per switch, fitted on the two 1D "
            "speedups, leaves the 2D Auto-Gen points short of the measured ones "
            "(see the held-out findings): the measured gap is not a per-switch "
            "cost alone",
            note="the calibration improves every held-out point"
            if all(
                abs(r["calibrated_error"]) < abs(r["model_error"])
                for r in model.rows
                if r["role"] != "fit"
            )
            else "the calibration does not improve every held-out point",
        )
    )
    out += _scalar_findings(cols, sim)
    return out


def _scalar_findings(cols: dict[str, list[Any]], sim: Any) -> list[dict[str, Any]]:
    kind = np.asarray(cols["kind"])
    pat = np.asarray(cols["pattern"])
    B = np.asarray(cols["B"], float)
    cyc = np.asarray(cols["cycles"], float)
    parts, gaps = [], {}
    for b in SMALL_B:
        sel = (kind == "small_B") & (B == b)
        best = int(np.argmin(cyc[sel]))
        ag = float(cyc[sel & (pat == "autogen")][0])
        gaps[b] = ag - float(cyc[sel][best])
        parts.append(
            f"B = {b}: fastest {pat[sel][best]} ({cyc[sel][best]:.0f}), Auto-Gen "
            f"{ag:.0f} (+{gaps[b]:.0f})"
        )
    where = f"Auto-Gen at small B, calibrated simulator ({P_ROW} PEs, held out)"
    why = (
        "Auto-Gen's trees for small B give PEs many children (the DP "
        "minimises depth), so an overhead per switch large enough to "
        "bring the headline ratio down to the measured one makes them "
        "slower than Two-Phase, whose PEs take at most two streams. The "
        "measured gap is therefore not a per-switch cost alone: Chain may "
        "also run faster per hop than equation (1)'s 2 T_R + 2 cycles, "
        "which one speedup cannot tell apart"
    )
    return [
        finding(
            "small_b.autogen_gap.scalar",
            where + ": a scalar",
            f"for a scalar Auto-Gen is slower than the fastest by at most "
            f"{SCALAR_SLACK} cycles (Section 8.5, measured)",
            "; ".join(parts[:1]),
            AtMost(SCALAR_SLACK, why="cycles behind the fastest pattern at B = 1"),
            gaps[1],
            note=f"O = {sim.switch_overhead:.1f} cycles",
            explanation=why,
        ),
        finding(
            "small_b.autogen_gap.above_scalar",
            where + f": B = {', '.join(map(str, SMALL_B[1:]))}",
            "otherwise Auto-Gen is the fastest (Section 8.5, measured)",
            "; ".join(parts[1:]),
            AtMost(0, why="cycles behind the fastest pattern, the largest"),
            max(gaps[b] for b in SMALL_B[1:]),
            note=f"O = {sim.switch_overhead:.1f} cycles",
            explanation=why,
        ),
    ]


def plot_calibrated(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Measured, uncalibrated and calibrated speedups; the fits' objectives."""
    ax = new_axes(ax)
    fig = ax.figure
    ax.remove()
    fig.set_size_inches(13, 4.4)
    bars, obj = fig.subplots(1, 2, gridspec_kw={"width_ratios": [2, 1]})
    kind = np.asarray(cols["kind"])
    eng = np.asarray(cols["engine"])
    name = np.asarray(cols["name"])
    sel_m = (kind == "speedup") & (eng == "model")
    names = list(name[sel_m])
    x = np.arange(len(names))
    measured = np.asarray(cols["measured"], float)[sel_m]
    unc = np.asarray(cols["uncalibrated"], float)[sel_m]
    cal = np.asarray(cols["calibrated"], float)[sel_m]
    sim_cal = np.full(len(names), np.nan)
    sel_s = (kind == "speedup") & (eng == "simulator")
    for n, v in zip(
        name[sel_s], np.asarray(cols["calibrated"], float)[sel_s], strict=True
    ):
        sim_cal[names.index(n)] = v
    w = 0.2
    bars.bar(x - 1.5 * w, measured, w, color="0.25", label="measured (CS-2)")
    bars.bar(x - 0.5 * w, unc, w, color="0.7", label="model, O = 0")
    bars.bar(
        x + 0.5 * w, cal, w, color=palette_color("autogen"), label="model, calibrated"
    )
    bars.bar(
        x + 1.5 * w,
        sim_cal,
        w,
        color=palette_color("two_phase"),
        label="simulator, calibrated",
    )
    roles = np.asarray(cols["role"])[sel_m]
    bars.set_xticks(
        x,
        [f"{n}\n({r})" for n, r in zip(names, roles, strict=True)],
        fontsize="x-small",
    )
    bars.set_ylabel("speedup over Chain (max over B)")
    bars.set_title("Measured speedups: fitted and held out", fontsize="medium")
    bars.legend(fontsize="small")
    bars.grid(True, axis="y", alpha=0.3)
    over = np.asarray(cols["switch_overhead"], float)
    sse = np.asarray(cols["sse"], float)
    for e, style in (("model", "-"), ("simulator", "o")):
        sel = (kind == "objective") & (eng == e)
        order = np.argsort(over[sel])
        obj.plot(over[sel][order], sse[sel][order], style, label=e, markersize=4)
        fitted = over[(kind == "speedup") & (eng == e)]
        if fitted.size:
            obj.axvline(fitted[0], linestyle=":", color="0.4")
    obj.set_xlabel("switch overhead O (cycles)")
    obj.set_ylabel("sum of squared log errors (fitted points)")
    obj.set_yscale("symlog", linthresh=1e-4)
    obj.set_ylim(bottom=0)
    obj.set_xlim(0, 1024)
    obj.set_title("Least-squares objective", fontsize="medium")
    obj.legend(fontsize="small")
    obj.grid(True, alpha=0.3)
    return bars


register_experiment(
    Experiment(
        name="wafer_calibrated",
        title="Wafer model and simulator calibrated on the CS-2's measured speedups",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Sections 1.3 and 8.5-8.7: "
            "Auto-Gen is up to 3.16x (Reduce) and 2.47x (AllReduce) faster than "
            "Chain on 512 PEs, X-Y Auto-Gen 3.27x and 2.54x and Two-Phase 3.32x and "
            "2.56x on 512 x 512 (measured); the model's error comes partly from an "
            "overhead when a PE starts receiving from another PE."
        ),
        run=run_calibrated,
        plot=plot_calibrated,
    )
)
