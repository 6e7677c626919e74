"""Auto-Gen under Table 1's contention: better in the model, slower when simulated.

Section 5.5's DP (:func:`wafercoll.wafer.autogen`) bounds contention through
its recurrence: a PE takes its ``m`` children's streams one after another, so
the ``j``-th child's subtree must finish within ``C - (m - j)``. Table 1
defines contention as the largest number of wavelets a PE receives (``B``
times its most children), a looser constraint. ``autogen(...,
contention="table1")`` optimises equation (1) under that definition (checked
against exhaustive search in the tests).

For every row length ``P`` and vector length ``B`` of the sweep where the two
optima differ, this experiment puts both trees' model cycles beside their
packet-level simulation on :func:`wafercoll.wafer.wse2_network` (one wavelet
per link per cycle, ``T_R`` per ramp, dataflow forwarding): the simulator
decides which notion of contention the machine follows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import wafer
from ..simulate import simulate
from ..wafer.builders import tree_schedule
from ..wafer.machine import wse2_network
from ..wafer.reduce1d import autogen, table1_cycles
from . import Experiment, finding, new_axes, register_experiment
from .judges import Exact

__all__ = ["plot_table1", "run_table1"]

T_R = 2
COLUMNS = (
    "P",
    "B",
    "paper_model",
    "table1_model",
    "paper_tree_table1",
    "table1_tree_recurrence",
    "paper_sim",
    "table1_sim",
)


def run_table1(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Both optima, their model cycles under both contentions, and simulation."""
    Ps = range(3, 13 if quick else 33)
    Bs = (8, 16, 17) if quick else (1, 2, 4, 8, 16, 17, 32, 64, 128, 256)
    net = wse2_network(T_R)
    cols: dict[str, list[Any]] = {k: [] for k in COLUMNS}
    compared = 0
    for P in Ps:
        row = wafer.wafer_row(P)
        for B in Bs:
            paper = autogen(P, B, T_R)
            loose = autogen(P, B, T_R, contention="table1")
            compared += 1
            if np.array_equal(paper.parent, loose.parent):
                continue
            values = (
                P,
                B,
                paper.cycles,
                loose.cycles,
                table1_cycles(paper.parent, B, T_R),
                wafer.tree_cycles(loose.parent, B, T_R),
                float(simulate(tree_schedule(paper.parent, 4 * B), row, net).cycles),
                float(simulate(tree_schedule(loose.parent, 4 * B), row, net).cycles),
            )
            for key, v in zip(COLUMNS, values, strict=True):
                cols[key].append(v)
    return cols, _findings(cols, compared)


def _findings(cols: dict[str, list[Any]], compared: int) -> list[dict[str, Any]]:
    if not cols["P"]:
        return [
            finding(
                "table1_optimum.model",
                "cases where the Table 1 optimum differs",
                "Auto-Gen finds the optimal tree of the model (Section 5.5)",
                f"none of {compared}",
                Exact(0, "cases with a better tree under Table 1"),
                0,
                note="the sweep is too small to separate the two notions",
                not_reproducible="no differing case in this sweep",
            )
        ]
    P = np.asarray(cols["P"])
    B = np.asarray(cols["B"])
    gain = 1.0 - np.asarray(cols["table1_model"]) / np.asarray(cols["paper_model"])
    k = int(np.argmax(gain))
    paper_sim = np.asarray(cols["paper_sim"])
    loose_sim = np.asarray(cols["table1_sim"])
    faster = int(np.sum(paper_sim < loose_sim))
    slower = int(np.sum(paper_sim > loose_sim))
    equal = len(paper_sim) - faster - slower
    worst = float(np.max(loose_sim / paper_sim - 1.0))
    return [
        finding(
            "table1_optimum.model",
            "Auto-Gen's optimum under Table 1's contention (model)",
            "Auto-Gen finds the optimal tree of the model (Section 5.5)",
            (
                f"{len(P)} of {compared} (P, B) have a better tree under Table 1's "
                f"definition; largest gain {gain[k]:.1%} at P = {P[k]}, B = {B[k]} "
                f"({cols['table1_model'][k]:.4g} against {cols['paper_model'][k]:.4g} "
                "cycles)"
            ),
            Exact(0, "cases with a better tree under Table 1"),
            len(P),
            note="optimal under the recurrence, not under Table 1's definition",
            explanation=(
                "the DP charges a PE's children's streams one after another (the "
                "j-th child's subtree within C - (m - j)); Table 1 counts only the "
                "most wavelets a PE receives, a looser constraint that admits trees "
                "whose early children have children of their own"
            ),
        ),
        finding(
            "table1_optimum.simulated",
            "which optimum is faster on the simulator",
            "Auto-Gen's trees are the fastest row trees (Section 5.5)",
            (
                f"the paper's tree is faster in {faster}, equal in {equal} and slower "
                f"in {slower} of the {len(P)} differing cases; the Table 1 tree is up "
                f"to {worst:.1%} slower"
            ),
            Exact(0, "differing cases where the paper's tree is slower"),
            slower,
            note=(
                "the simulator takes a PE's incoming streams one after another, as "
                "the recurrence assumes: its contention predicts the Table 1 tree's "
                "slowdown"
            ),
        ),
    ]


def plot_table1(data: dict[str, list[Any]], ax: Any = None) -> Any:
    """Model gain and simulated change of the Table 1 tree, per differing case."""
    ax = new_axes(ax)
    if not data["P"]:
        ax.text(0.5, 0.5, "no differing case", ha="center", transform=ax.transAxes)
        return ax
    x = np.arange(len(data["P"]))
    model = 100 * (
        np.asarray(data["table1_model"]) / np.asarray(data["paper_model"]) - 1
    )
    sim = 100 * (np.asarray(data["table1_sim"]) / np.asarray(data["paper_sim"]) - 1)
    ax.bar(x - 0.2, model, 0.4, label="model (Table 1 contention)")
    ax.bar(x + 0.2, sim, 0.4, label="simulated")
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(
        [f"{p},{b}" for p, b in zip(data["P"], data["B"], strict=True)],
        rotation=90,
        fontsize="x-small",
    )
    ax.set_xlabel("(P, B) where the two optima differ")
    ax.set_ylabel("Table 1 tree vs paper's tree (%)")
    ax.set_title("Auto-Gen: Table 1 contention in the model and on the simulator")
    ax.legend(fontsize="small")
    return ax


register_experiment(
    Experiment(
        name="wafer_autogen_table1",
        title="Auto-Gen under Table 1's contention: model against simulation",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Section 5.5 and Table 1: "
            "Auto-Gen's DP gives the optimal 1D reduction tree of the cost model."
        ),
        run=run_table1,
        plot=plot_table1,
    )
)
