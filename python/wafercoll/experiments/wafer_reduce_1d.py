"""Figure 1 of *Near-Optimal Wafer-Scale Reduce*: optimality ratios of 1D Reduce.

For a Reduce of ``B`` wavelets to the leftmost of ``P`` PEs in a row, every
pattern's predicted cycles ``T_alg(P, B)`` are divided by the lower bound
``T*(P, B)`` of Lemma 5.5 (Luczynski, Gianinazzi et al., HPDC 2024, Section
5.7). The patterns are those of :func:`wafercoll.wafer.reduce_time`:

* ``star``: the refined, pipelined Star ``B (P - 1) + 2 T_R + 1`` (Section
  5.1); ``star_lemma`` is Lemma 5.1's equation-(1) form
  ``max(B (P - 1), P B / 2 + P - 1) + 2 T_R + 1``, shown next to it;
* ``chain`` (Lemma 5.2), ``tree`` and ``two_phase`` (equation (1) on their
  trees; Lemmas 5.3 and 5.4 at powers of two and squares); Tree follows
  Section 5.3's rounds for every P (:func:`wafercoll.wafer.binary_tree`), so
  the figure's P = 512 is Lemma 5.3's tree, and the maximum sweep's worst
  Tree cells lie just above powers of two (one more round, whose single
  message crosses half the row);
* ``autogen``: the optimum of equation (1) over pre-order trees (Section 5.5).

Two sweeps, both from :func:`wafercoll.wafer.optimality_ratios` (one dynamic
program per ``B`` covers every ``P``), with ``T_R = 2`` and
``B = 1, 2, 4, ..., 4096``:

(a) ``sweep == "figure"``: every pattern at ``P = 512``, the paper's Figure 1;
(b) ``sweep == "maximum"``: for every pattern, its largest ratio over all
    ``P = 4 .. 512`` and all ``B``, with the ``(P, B)`` where it occurs.

Quick mode uses ``P = 64`` for (a), ``P = 4 .. 64`` for (b) and ``B`` up to
1024.

Why the refined Star can beat the bound
---------------------------------------
The bound charges every pattern the energy term ``E / N`` *plus* the distance
``L``, and at least one level of depth: at ``B = 1`` it is at least
``1 + (P - 1) + (2 T_R + 1)``, since any tree has energy ``>= P - 1``. The
refined Star overlaps the two (the wavelets reach the root as a perfect
pipeline) and costs ``(P - 1) + 2 T_R + 1``, one cycle less. So its ratio is
below 1 at ``B = 1`` for every ``P`` (at ``B = 2`` only for ``P <= 4``).
Lemma 5.1's form, which is equation (1) on the star tree, never is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..palette import color as palette_color
from ..palette import marker as palette_marker
from . import Experiment, finding, new_axes, register_experiment
from .judges import AtLeast, AtMost, Exact, UpTo

__all__ = ["plot_fig1", "run_fig1"]

#: The five patterns of Figure 1, then Lemma 5.1's form of Star.
PATTERNS = ("star", "chain", "tree", "two_phase", "autogen")
ALGORITHMS = (*PATTERNS, "star_lemma")
#: The fixed patterns the paper calls "previous algorithms" (Section 1.3).
PREVIOUS = ("star", "chain", "tree")
LABELS = {
    "star": "Star (refined)",
    "chain": "Chain",
    "tree": "Tree",
    "two_phase": "Two-Phase",
    "autogen": "Auto-Gen",
    "star_lemma": "Star (Lemma 5.1)",
}
COLUMNS = ("sweep", "algorithm", "P", "B", "log2_B", "cycles", "lower_bound", "ratio")
#: Row length of the Figure (a) and the largest of sweep (b).
P_FIGURE, P_FIGURE_QUICK = 512, 64
#: Smallest row of sweep (b).
P_MIN = 4
#: Vector lengths B = 2^0 .. 2^LOG2_B_MAX wavelets.
LOG2_B_MAX, LOG2_B_MAX_QUICK = 12, 10
#: The paper's claims (Sections 1.3 and 5.7), stated to one decimal.
CLAIM_AUTOGEN, CLAIM_TWO_PHASE, CLAIM_PREVIOUS = 1.4, 2.4, 5.9
#: Half a unit of the paper's last digit: "at most 1.4" holds for 1.44.
ROUNDING = 0.05
#: Relative slack of the floating-point comparisons (ratios of cycle counts).
EPS = 1e-12
#: Above this ratio the figure clips a curve and names its largest value.
Y_MAX = 10.0


def run_fig1(
    quick: bool = False,
) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """Optimality ratios of the 1D Reduce patterns and their largest values.

    Parameters
    ----------
    quick : bool
        ``P = 64`` for the figure, ``P = 4 .. 64`` for the maxima, ``B`` up
        to 1024.

    Returns
    -------
    columns : dict of lists
        ``sweep`` (``"figure"`` or ``"maximum"``), ``algorithm``, ``P``,
        ``B``, ``log2_B``, ``cycles``, ``lower_bound`` and ``ratio``
        (``cycles / lower_bound``). The figure has one row per algorithm and
        ``B``; the maxima one row per algorithm.
    findings : list of dict
        The paper's claims on the ratios, with our values.
    """
    from .. import wafer

    t_r = wafer.T_R_DEFAULT
    p_fig = P_FIGURE_QUICK if quick else P_FIGURE
    bs = [1 << k for k in range(1 + (LOG2_B_MAX_QUICK if quick else LOG2_B_MAX))]
    grid = wafer.optimality_ratios(range(P_MIN, p_fig + 1), bs, t_r)
    grid = _with_star_lemma(grid, t_r)

    # (a) the rows of P = p_fig, by algorithm then B; (b) one row per algorithm.
    fig_rows = np.flatnonzero(grid["P"] == p_fig)
    rank = [ALGORITHMS.index(a) for a in grid["algorithm"][fig_rows]]
    fig_rows = fig_rows[np.lexsort((grid["B"][fig_rows], rank))]
    worst = {a: _argmax_of(grid, a) for a in ALGORITHMS}
    rows = np.concatenate([fig_rows, np.array(list(worst.values()), dtype=np.int64)])
    columns: dict[str, list[Any]] = {
        "sweep": ["figure"] * len(fig_rows) + ["maximum"] * len(worst)
    }
    for key in ("algorithm", "P", "B"):
        columns[key] = grid[key][rows].tolist()
    columns["log2_B"] = [int(b).bit_length() - 1 for b in columns["B"]]
    for key in ("cycles", "lower_bound", "ratio"):
        columns[key] = grid[key][rows].tolist()
    return columns, _findings(grid, worst, p_fig, bs)


def _with_star_lemma(grid: dict[str, np.ndarray], t_r: float) -> dict[str, np.ndarray]:
    """Append Lemma 5.1's Star (``star_lemma``) rows to the grid of ratios."""
    from .. import wafer

    star = np.flatnonzero(grid["algorithm"] == "star")
    p, b, lb = grid["P"][star], grid["B"][star], grid["lower_bound"][star]
    cycles = np.array(
        [
            wafer.star_lemma_time(int(pi), int(bi), t_r)
            for pi, bi in zip(p, b, strict=True)
        ]
    )
    extra = {
        "P": p,
        "B": b,
        "algorithm": np.full(star.size, "star_lemma"),
        "cycles": cycles,
        "lower_bound": lb,
        "ratio": cycles / lb,
    }
    return {k: np.concatenate([grid[k], extra[k]]) for k in extra}


def _argmax_of(grid: dict[str, np.ndarray], algorithm: str) -> int:
    """Row of the grid with the largest ratio of ``algorithm`` (smallest P, B)."""
    rows = np.flatnonzero(grid["algorithm"] == algorithm)
    return int(rows[np.argmax(grid["ratio"][rows])])


def _cell(grid: dict[str, np.ndarray], row: int) -> str:
    """``"1.234 at P = 27, B = 8"``."""
    return f"{grid['ratio'][row]:.3g} at P = {grid['P'][row]}, B = {grid['B'][row]}"


def _by_algorithm(
    grid: dict[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """``(P, B, ratios)``: one ratio array per algorithm, all in one (P, B) order."""
    ratio, p, b = {}, np.empty(0), np.empty(0)
    for a in ALGORITHMS:
        rows = np.flatnonzero(grid["algorithm"] == a)
        rows = rows[np.lexsort((grid["B"][rows], grid["P"][rows]))]
        ratio[a] = grid["ratio"][rows]
        p, b = grid["P"][rows], grid["B"][rows]
    return p, b, ratio


def _b_list(bs: np.ndarray) -> str:
    """`` (B = 1, 2, 4)`` for the distinct values, or nothing when empty."""
    values = sorted({int(b) for b in bs})
    return f" (B = {', '.join(map(str, values))})" if values else ""


def _findings(
    grid: dict[str, np.ndarray], worst: dict[str, int], p_fig: int, bs: list[int]
) -> list[dict[str, Any]]:
    """Compare the ratios with the paper's claims (Sections 1.3 and 5.7)."""
    span = f"P = {P_MIN}..{p_fig}, B = 1..{bs[-1]}"
    fig = {k: v[grid["P"] == p_fig] for k, v in grid.items()}
    fig_worst = {a: _argmax_of(fig, a) for a in ALGORITHMS}
    _, b_cell, ratio = _by_algorithm(grid)
    cells = b_cell.size

    def worst_of(a: str) -> str:
        i = fig_worst[a]
        if grid["P"][worst[a]] == p_fig:
            return _cell(grid, worst[a])
        return (
            f"{_cell(grid, worst[a])}; at P = {p_fig}: {fig['ratio'][i]:.3g} "
            f"(B = {fig['B'][i]})"
        )

    findings = []
    for name, claim in (("autogen", CLAIM_AUTOGEN), ("two_phase", CLAIM_TWO_PHASE)):
        top = float(grid["ratio"][worst[name]])
        low = float(ratio[name].min())
        findings.append(
            finding(
                f"largest_ratio.{name}",
                f"largest T/T* of {LABELS[name]} ({span})",
                f"at most {claim}x from optimal (Sections 1.3, 5.7)",
                f"{worst_of(name)}; smallest {low:.4g}",
                AtMost(
                    claim + ROUNDING,
                    why=f"'at most {claim}x', to the claim's precision",
                ),
                top,
            )
        )

    prev = max(float(grid["ratio"][worst[a]]) for a in PREVIOUS)
    tree_fig = float(fig["ratio"][fig_worst["tree"]])
    findings.append(
        finding(
            "largest_ratio.previous",
            f"largest T/T* of the previous algorithms Star, Chain, Tree ({span})",
            f"all up to {CLAIM_PREVIOUS}x from optimal for some input size "
            "(Section 1.3)",
            "; ".join(f"{LABELS[a]} {worst_of(a)}" for a in PREVIOUS),
            UpTo(str(CLAIM_PREVIOUS)),
            prev,
            note=f"Chain's worst is at B = 1; at P = {p_fig} Tree reaches only "
            f"{tree_fig:.3g} up to B = {bs[-1]} (it tends to log2 P as B grows); "
            "the refined Star tends to P - 1",
            explanation="each algorithm's worst: "
            + ", ".join(
                f"{LABELS[a]} {float(grid['ratio'][worst[a]]):.3g}" for a in PREVIOUS
            )
            + "; the refined Star's ratio tends to P - 1 and Tree's grows with B "
            "(to log2 P), so the largest of them is not the paper's 5.9x, which "
            "is Chain's worst (at B = 1)",
        )
    )

    # Auto-Gen against Chain, Tree, Two-Phase and Lemma 5.1's Star is an
    # identity (it minimises equation (1) over trees that include them): a
    # unit test, not a finding. The refined Star is outside that set.
    auto = ratio["autogen"]
    star_wins = ratio["star"] < auto * (1 - EPS)
    findings.append(
        finding(
            "autogen_vs_refined_star",
            f"Auto-Gen against the refined Star ({cells} cells, {span})",
            "matches or beats every fixed pattern everywhere; strictly "
            "dominates them (Sections 1.3, 5.7)",
            f"the refined Star is lower in {int(star_wins.sum())} of {cells} cells"
            + _b_list(b_cell[star_wins]),
            Exact(0, "cells where the refined Star is faster"),
            int(star_wins.sum()),
            explanation="the refined Star (B(P-1)+2T_R+1) is not an equation-(1) "
            "time: it pipelines, so Auto-Gen's tree search does not see it",
        )
    )

    below = ratio["star"] < 1 - EPS
    star_rows = np.flatnonzero(grid["algorithm"] == "star")
    low_row = int(star_rows[np.argmin(grid["ratio"][star_rows])])
    b1 = np.flatnonzero((fig["algorithm"] == "star") & (fig["B"] == 1))
    why_star = (
        "the bound adds the energy term E/N and the distance L, while "
        "the pipelined Star overlaps them: at B = 1 it costs P + 2T_R, the "
        "bound at least P + 2T_R + 1; Lemma 5.1's equation-(1) form stays "
        "above the bound"
    )
    findings.append(
        finding(
            "refined_star_vs_bound",
            f"refined Star B(P-1)+2T_R+1 against the lower bound ({span})",
            "T_STAR = B(P-1)+2T_R+1 (Section 5.1); Lemma 5.5 bounds every "
            "Reduce; 1.0 is optimal (Figure 1)",
            f"ratio below 1 in {int(below.sum())} of {cells} cells"
            + _b_list(b_cell[below])
            + f"; smallest {_cell(grid, low_row)}"
            + (f"; {_cell(fig, int(b1[0]))}" if b1.size else ""),
            AtLeast(1 - EPS, why="the smallest T/T*; 1e-12 slack"),
            float(ratio["star"].min()),
            note=why_star,
            explanation=why_star,
        )
    )

    lemma_low = float(ratio["star_lemma"].min())
    findings.append(
        finding(
            "lemma_5_1_star_vs_bound",
            f"largest T/T* of Star in Lemma 5.1's form ({span})",
            "max(B(P-1), PB/2+P-1)+2T_R+1 (Lemma 5.1), an equation-(1) "
            "time, so at least the bound",
            f"{worst_of('star_lemma')}; smallest {lemma_low:.4g}",
            AtLeast(1 - EPS, why="the smallest T/T*; 1e-12 slack"),
            lemma_low,
            note="never below the bound"
            if lemma_low >= 1 - EPS
            else "below the bound somewhere",
        )
    )
    return findings


def plot_fig1(data: dict[str, list[Any]], ax: Any = None) -> Any:
    """Ratio against log2 B, one line per pattern, and a panel of the maxima.

    Parameters
    ----------
    data : dict of lists
        The columns of :func:`run_fig1`.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted. When ``ax`` is a subplot,
        its cell is split in two: the ratios on the left, a table of each
        pattern's largest ratio (over every P and B) and the legend on the
        right. Otherwise the table goes into an inset Axes.

    Returns
    -------
    matplotlib.axes.Axes
        The Axes of the ratios.
    """
    ax = new_axes(ax)
    sweep = np.asarray(data["sweep"])
    algo = np.asarray(data["algorithm"])
    lg = np.asarray(data["log2_B"])
    ratio = np.asarray(data["ratio"], dtype=float)
    p_vals = np.asarray(data["P"])[sweep == "figure"]
    clipped = []
    for name in ALGORITHMS:
        rows = np.flatnonzero((sweep == "figure") & (algo == name))
        if not rows.size:
            continue
        rows = rows[np.argsort(lg[rows])]
        colour, marker, line = _STYLES[name]
        ax.plot(
            lg[rows],
            ratio[rows],
            color=colour,
            marker=marker,
            linestyle=line,
            markersize=4,
            linewidth=2 if name == "autogen" else 1.2,
            label=LABELS[name],
            zorder=3 if name == "autogen" else 2,
        )
        top = float(ratio[rows].max())
        if top > Y_MAX:
            clipped.append(f"{LABELS[name]} up to {top:.0f}")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_ylim(0.8, Y_MAX)
    ticks = [0.8, 1, 1.5, 2, 3, 4, 6, 10]
    ax.set_yticks(ticks, labels=[f"{t:g}" for t in ticks])
    ax.minorticks_off()
    if lg.size:
        ax.set_xticks(range(int(lg.min()), int(lg.max()) + 1))
    ax.set_xlabel("log2 B (vector length in wavelets)")
    ax.set_ylabel("optimality ratio T / T*")
    p_text = f"P = {int(p_vals[0])}" if p_vals.size else "no data"
    ax.set_title(f"1D Reduce, {p_text} (1 = optimal)", fontsize="medium")
    ax.grid(True, alpha=0.3)
    if clipped:
        ax.text(
            0.98,
            0.97,
            "off scale:\n" + "\n".join(clipped),
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize="x-small",
        )
    panel = _side_panel(ax)
    _max_table(panel, sweep, algo, data)
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        panel.legend(handles, labels, loc="lower center", fontsize="x-small")
    return ax


#: Colour, marker and line style of each algorithm.
_STYLES = {
    **{
        a: (palette_color(a), palette_marker(a), "-")
        for a in ("star", "chain", "tree", "two_phase", "autogen")
    },
    "star_lemma": (palette_color("star"), "", ":"),
}
#: Short names for the table of maxima.
_SHORT = {**LABELS, "star": "Star", "star_lemma": "Star (L. 5.1)"}


def _side_panel(ax: Any) -> Any:
    """An Axes to the right of ``ax``: its subplot cell split 2:1, else an inset."""
    spec = ax.get_subplotspec()
    if spec is None:
        panel = ax.inset_axes([1.02, 0.0, 0.45, 1.0])
    else:
        grid = spec.subgridspec(1, 2, width_ratios=[2.1, 1.0], wspace=0.02)
        ax.set_subplotspec(grid[0])
        panel = ax.figure.add_subplot(grid[1])
    panel.set_axis_off()
    return panel


def _max_table(panel: Any, sweep: np.ndarray, algo: np.ndarray, data: Any) -> None:
    """Each pattern's largest ratio, over every P and B, as a table."""
    rows = np.flatnonzero(sweep == "maximum")
    if not rows.size:
        return
    cells = [
        [
            _SHORT[str(algo[i])],
            f"{data['ratio'][i]:.3g}",
            str(data["P"][i]),
            str(data["B"][i]),
        ]
        for i in rows
    ]
    table = panel.table(
        cellText=cells,
        colLabels=["pattern", "max", "P", "B"],
        colWidths=[0.4, 0.18, 0.18, 0.24],
        bbox=[0.0, 0.52, 1.0, 0.4],
        cellLoc="right",
    )
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    p_max = int(np.max(data["P"]))
    panel.set_title(
        f"largest ratio\nP = {P_MIN}..{p_max}, all B",
        fontsize="small",
    )


register_experiment(
    Experiment(
        name="wafer_fig1",
        title="Figure 1: optimality ratios of 1D Reduce",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Sections 1.3 and 5.7: on a "
            "row of PEs, Auto-Gen Reduce is at most 1.4x from the lower bound "
            "(Lemma 5.5) for every input size and matches or beats every fixed "
            "pattern; Two-Phase is at most 2.4x away; the previous algorithms "
            "(Star, Chain, Tree) are all up to 5.9x away for some input size."
        ),
        run=run_fig1,
        plot=plot_fig1,
    )
)
