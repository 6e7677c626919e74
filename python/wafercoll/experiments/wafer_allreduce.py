"""Figures 8 and 10 of *Near-Optimal Wafer-Scale Reduce*: AllReduce heatmaps.

Luczynski, Gianinazzi et al. (HPDC 2024), Sections 6.3 and 7.6. Every cell
is the model's prediction (:func:`wafercoll.wafer.speedup_heatmap`,
``T_R = 2``) for one PE count and vector length ``B = 2^0 .. 2^15``:

* ``wafer_fig8``: 1D AllReduce on a row of ``P = 2^1 .. 2^10`` PEs. The
  algorithms are Reduce-then-Broadcast with Star, Chain, Tree, Two-Phase and
  Auto-Gen (root PE 0, Section 6.1) and Ring (Lemma 6.1); the speedup is
  over Chain+Bcast, the vendor's.
* ``wafer_fig10``: 2D AllReduce on ``n x n`` grids, ``n = 2^1 .. 2^10``:
  X-Y AllReduce with each 1D pattern and with Ring, and every 2D Reduce
  (X-Y per pattern, Snake) followed by the 2D broadcast (Section 7.4); the
  speedup is over X-Y Chain AllReduce (Chain+Bcast on the rows, then on the
  columns), the vendor's.

The colour of a cell is the speedup of the *best fixed* algorithm (Auto-Gen
excluded, as in the paper's regions), its label names it. The columns hold
every algorithm in every cell, with ``best`` marking the winner.

The findings compute from the data whether the paper's regions appear
(latency-bound Star/Tree at small B, Two-Phase in the middle,
bandwidth-bound Chain/Ring in 1D or Snake in 2D at large B), whether Ring
ever wins at ``P = 512``, what choosing the root by the model gains, and set
the headline ratios of Section 8 (measured on the CS-2) beside the model's
over the same ``B`` range. Quick mode uses ``P, n = 2^1 .. 2^6``,
``B = 2^0 .. 2^10`` and headlines at 64 PEs and ``64 x 64``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import Experiment, finding, new_axes, register_experiment
from .judges import AtLeast, Exact, UpTo

__all__ = ["plot_fig10", "plot_fig8", "run_fig10", "run_fig8"]

#: Vector lengths B = 2^0 .. 2^LOG2_B_MAX; PE counts or sides 2^1 .. 2^LOG2_P_MAX.
LOG2_B_MAX, LOG2_B_MAX_QUICK = 15, 10
LOG2_P_MAX, LOG2_P_MAX_QUICK = 10, 6
#: Row length (1D) and grid side (2D) of the paper's headline numbers (Section 8).
P_HEADLINE, P_HEADLINE_QUICK = 512, 64
#: The paper's largest mean relative error of its model against the CS-2
#: (Section 8.5: 12 % to 35 % per pattern); a measured headline "agrees" with
#: the model's if they differ by at most this fraction of the measurement.
MODEL_ERROR = 0.35
#: Headline speedups measured on the CS-2 (Sections 1.3, 8.5-8.7).
PAPER_AUTOGEN_REDUCE_1D = 3.16  # Auto-Gen vs Chain Reduce, 512 PEs
PAPER_AUTOGEN_ALLREDUCE_1D = 2.47  # Auto-Gen+Bcast vs Chain+Bcast, 512 PEs
PAPER_AUTOGEN_REDUCE_2D = 3.27  # X-Y Auto-Gen vs X-Y Chain Reduce, 512x512
PAPER_AUTOGEN_ALLREDUCE_2D = 2.54  # X-Y Auto-Gen vs X-Y Chain AllReduce
PAPER_TWO_PHASE_REDUCE_2D = 3.32  # Two-Phase vs vendor Reduce, 512x512
PAPER_TWO_PHASE_ALLREDUCE_2D = 2.56  # Two-Phase vs vendor AllReduce, 512x512
#: How far a modelled "up to" speedup may be from one measured on the CS-2:
#: the paper's tightest per-pattern model error (Section 8.5 reports 12 % to
#: 35 %), not its loosest. The measured numbers' printed precision (3.16x)
#: would demand more of a model than the paper's own achieves.
HEADLINE_BAND = 0.12
_HEADLINE_WHY = (
    "a model against the CS-2: the paper's tightest per-pattern model error "
    "(Section 8.5), a band stated here"
)
#: Relative slack of floating-point comparisons of cycle counts.
EPS = 1e-12

#: Cell labels (short, to fit 16 columns).
LABELS_1D = {
    "star+bcast": "Star",
    "chain+bcast": "Chain",
    "tree+bcast": "Tree",
    "two_phase+bcast": "2Ph",
    "autogen+bcast": "AG",
    "ring": "Ring",
}
_BASE_LABEL = {
    "star": "Star",
    "chain": "Chain",
    "tree": "Tree",
    "two_phase": "2Ph",
    "autogen": "AG",
    "ring": "Ring",
    "snake": "Snake",
}
#: 2D: plain names are 2D Reduce + 2D broadcast; ``xy`` marks X-Y AllReduce.
LABELS_2D = {
    **{f"xy_{k}": f"xy{v}" for k, v in _BASE_LABEL.items() if k != "snake"},
    **{f"xy_{k}+bcast2d": v for k, v in _BASE_LABEL.items() if k not in ("ring",)},
    "snake+bcast2d": "Snake",
}
#: Regions of the paper's heatmaps: 0 latency-bound (Star, Tree), 1 Two-Phase,
#: 2 bandwidth-bound (Chain, Ring, Snake).
BAND = {"star": 0, "tree": 0, "two_phase": 1, "chain": 2, "ring": 2, "snake": 2}
BAND_NAMES = ("Star/Tree", "Two-Phase", "Chain/Ring/Snake")


def base_pattern(algorithm: str) -> str:
    """``"xy_tree+bcast2d"`` -> ``"tree"``: the pattern behind an algorithm name."""
    name = algorithm.split("+")[0]
    return name[3:] if name.startswith("xy_") else name


def _grid_args(quick: bool) -> tuple[list[int], list[int], int]:
    lp = LOG2_P_MAX_QUICK if quick else LOG2_P_MAX
    lb = LOG2_B_MAX_QUICK if quick else LOG2_B_MAX
    ps = [1 << k for k in range(1, lp + 1)]
    bs = [1 << k for k in range(lb + 1)]
    return ps, bs, P_HEADLINE_QUICK if quick else P_HEADLINE


def _columns(h: dict[str, np.ndarray], row_key: str) -> dict[str, Any]:
    """One row per algorithm and cell, with ``best`` marking the cell's winner."""
    names = [str(a) for a in h["algorithms"]]
    labels = LABELS_1D if row_key == "P" else LABELS_2D
    n_a, n_p, n_b = h["cycles"].shape
    a_idx, p_idx, b_idx = np.meshgrid(
        np.arange(n_a), np.arange(n_p), np.arange(n_b), indexing="ij"
    )
    a_idx, p_idx, b_idx = a_idx.ravel(), p_idx.ravel(), b_idx.ravel()
    ps, bs = h["Ps"][p_idx], h["Bs"][b_idx]
    cols: dict[str, Any] = {
        "algorithm": [names[i] for i in a_idx],
        "label": [labels[names[i]] for i in a_idx],
        row_key: ps,
    }
    if row_key == "n":
        cols["PEs"] = ps * ps
    cols["B"] = bs
    cols[f"log2_{row_key}"] = np.log2(ps).round().astype(np.int64)
    cols["log2_B"] = np.log2(bs).round().astype(np.int64)
    cols["cycles"] = h["cycles"].ravel()
    cols["speedup"] = h["speedup"].ravel()
    cols["best"] = h["best"][p_idx, b_idx] == a_idx
    return cols


def _span(values: np.ndarray) -> str:
    v = sorted({int(x) for x in values})
    return str(v[0]) if len(v) == 1 else f"{v[0]}..{v[-1]}"


def _regions(h: dict[str, np.ndarray], row_name: str) -> dict[str, Any]:
    """Which band wins where, computed from ``best``."""
    names = [str(a) for a in h["algorithms"]]
    base = np.asarray([base_pattern(names[i]) for i in h["best"].ravel()])
    base = base.reshape(h["best"].shape)
    band = np.vectorize(BAND.__getitem__)(base)
    ps, bs = h["Ps"], h["Bs"]
    cells = []
    for pat in dict.fromkeys(base.ravel().tolist()):
        i, j = np.nonzero(base == pat)
        cells.append(
            f"{_BASE_LABEL[pat]} {i.size} cells ({row_name} = {_span(ps[i])}, "
            f"B = {_span(bs[j])})"
        )
    low = bool(np.all(band[:, 0] == 0))
    high = bool(np.all(band[:, -1] == 2))
    middle = bool(np.any(base[-1] == "two_phase"))
    monotone = bool(np.all(np.diff(band, axis=1) >= 0))
    tp_rows = ps[np.any(base == "two_phase", axis=1)]
    return {
        "base": base,
        "band": band,
        "summary": "; ".join(cells),
        "checks": {
            f"every row: {BAND_NAMES[0]} at B = {bs[0]}": low,
            f"largest {row_name} = {ps[-1]}: Two-Phase wins between": middle,
            f"every row: {BAND_NAMES[2]} at B = {bs[-1]}": high,
            "every row: the band never goes back as B grows": monotone,
        },
        "two_phase_rows": tp_rows,
    }


def _regions_finding(
    regions: dict[str, Any], paper: str, what: str, span: str
) -> dict[str, Any]:
    checks = regions["checks"]
    failed = [k for k, ok in checks.items() if not ok]
    tp = regions["two_phase_rows"]
    return finding(
        "regions",
        f"regions of the best fixed {what} ({span})",
        paper,
        regions["summary"],
        Exact([], "region checks not visible"),
        failed,
        note=(
            "visible: " + "; ".join(checks)
            if not failed
            else "not visible: " + "; ".join(failed)
        )
        + (f"; Two-Phase wins in the rows {_span(tp)}" if tp.size else ""),
    )


def _ratio(
    h: dict[str, np.ndarray], fast: str, slow: str, row: int = 0
) -> tuple[float, int, dict[int, float]]:
    """Largest ``cycles[slow] / cycles[fast]`` over B in one row, its B, all ratios."""
    names = [str(a) for a in h["algorithms"]]
    r = h["cycles"][names.index(slow), row] / h["cycles"][names.index(fast), row]
    j = int(np.argmax(r))
    return (
        float(r[j]),
        int(h["Bs"][j]),
        dict(zip(h["Bs"].tolist(), r.tolist(), strict=True)),
    )


def _headline(
    id: str,
    quantity: str,
    paper_value: float,
    paper_text: str,
    ours: tuple[float, int, dict[int, float]],
    at: str,
) -> dict[str, Any]:
    """A measured headline speedup beside the model's largest one over B."""
    top, b_top, r = ours
    rel = (top - paper_value) / paper_value
    b256 = f"; at B = 256 (1 KB): {r[256]:.3g}x" if 256 in r else ""
    return finding(
        id,
        f"{quantity} ({at})",
        f"up to {paper_value}x measured on the CS-2 ({paper_text})",
        f"model up to {top:.3g}x at B = {b_top}{b256}",
        headline_judge(paper_value),
        top,
        note=f"model {rel:+.0%} from the measurement",
        explanation="ours is the paper's model (equation (1)), not the CS-2, and "
        "the paper's model errs by 12-35 % per pattern (Section 8.5)"
        + (
            "; at B = 1 the measured times carry fixed per-receive overheads "
            "that equation (1) omits, so the model's ratio overshoots "
            "(experiment wafer_calibrated fits that overhead)"
            if b_top == 1
            else ""
        ),
    )


def headline_judge(measured: float) -> UpTo:
    """How a modelled "up to" speedup is judged against one measured on the CS-2."""
    return UpTo(str(measured), rel=HEADLINE_BAND, why=_HEADLINE_WHY)


# -- Figure 8 -----------------------------------------------------------------------
def run_fig8(
    quick: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Speedup of every 1D AllReduce over Chain+Bcast and the best fixed one.

    Parameters
    ----------
    quick : bool
        ``P = 2 .. 64``, ``B = 1 .. 1024``, headlines at 64 PEs.

    Returns
    -------
    columns : dict
        ``algorithm``, ``label``, ``P``, ``B``, ``log2_P``, ``log2_B``,
        ``cycles``, ``speedup`` (over Chain+Bcast) and ``best`` (the cell's
        best fixed algorithm), one row per algorithm and cell.
    findings : list of dict
        Regions, Ring, the root choice and the headline ratios.
    """
    from .. import wafer

    ps, bs, p_head = _grid_args(quick)
    h = wafer.speedup_heatmap("1d_allreduce", ps, bs)
    names = [str(a) for a in h["algorithms"]]
    span = f"P = {ps[0]}..{ps[-1]}, B = {bs[0]}..{bs[-1]}"
    findings = [
        _regions_finding(
            _regions(h, "P"),
            "Star/Tree at small B, Two-Phase in the middle, Chain or Ring at large "
            "B, as for Reduce (Section 6.3, Figure 8)",
            "1D AllReduce",
            span,
        )
    ]

    # Ring: where it wins, and never at P = 512 (Section 8.6).
    ring = h["best"] == names.index("ring")
    row = ps.index(p_head)
    ring_head = ring[row]
    ring_vs_chain = _ratio(h, "ring", "chain+bcast", row)
    i, j = np.nonzero(ring)
    findings.append(
        finding(
            "ring_wins.headline_row",
            f"does Ring ever win at P = {p_head}? (B = {bs[0]}..{bs[-1]})",
            "never the best choice at 512 PEs, even allowing 15 % model "
            "error (Section 8.6); beats Chain+Bcast where contention dominates "
            "(Section 6.3) and, a little, at 4 PEs (Section 8.6)",
            (
                f"wins {int(ring_head.sum())} of {len(bs)} cells at P = {p_head}"
                + (
                    f" (B = {_span(np.asarray(bs)[ring_head])})"
                    if ring_head.any()
                    else ""
                )
                + f"; largest speedup over Chain+Bcast there {ring_vs_chain[0]:.3g}x; "
                + (
                    f"overall best in {i.size} cells (P = {_span(h['Ps'][i])}, "
                    f"B = {_span(h['Bs'][j])})"
                    if i.size
                    else "never best anywhere"
                )
            ),
            Exact(0, f"cells won by Ring at P = {p_head}"),
            int(ring_head.sum()),
            note="Ring pays 2(P-1)(2T_R+1) cycles for the depth of its rounds "
            "against the 2B contention of Reduce-then-Broadcast",
        )
    )

    # The root chosen by the model (Section 6.1), for the fixed patterns.
    gains, tops = [], []
    for alg in ("star+bcast", "chain+bcast", "tree+bcast", "two_phase+bcast"):
        g = []
        for b in bs:
            r, t = wafer.best_root(alg, p_head, b)
            t0 = wafer.allreduce_time(alg, p_head, b)
            g.append((t0 / t, b, r))
        top = max(g)
        moved = [b for _, b, r in g if r != 0]
        gains.append(
            f"{LABELS_1D[alg]} up to {top[0]:.3g}x (B = {top[1]}, r = {top[2]}), "
            + (f"root != 0 for B = {_span(np.asarray(moved))}" if moved else "root 0")
        )
        tops.append(top[0])
    # (The chosen root is never worse than PE 0: a minimum over the roots,
    # PE 0 among them; tested in tests/test_verdicts.py, not a finding.)
    findings.append(
        finding(
            "root_choice.gain",
            f"root chosen by the model vs PE 0, P = {p_head}, Reduce-then-Broadcast",
            "could be optimised by choosing the root by the model; stencil "
            "codes reduce to the middle PE (Section 6.1)",
            "; ".join(gains),
            AtLeast(
                1,
                strict=True,
                why="the smallest over the patterns of the largest gain over B",
            ),
            min(tops),
            note="a middle root halves the distance (and the Chain's depth) of "
            "both the Reduce and the broadcast, but receives from both sides "
            "(contention up to 2x); Star's refined Reduce does not depend on the "
            "root, only its broadcast does",
        )
    )

    head = wafer.speedup_heatmap("1d_allreduce", [p_head], bs)
    red = wafer.speedup_heatmap("1d_reduce", [p_head], bs)
    at = f"P = {p_head}, B = {bs[0]}..{bs[-1]}"
    findings.append(
        _headline(
            "headline.autogen_allreduce_1d",
            "Auto-Gen+Bcast vs Chain+Bcast AllReduce",
            PAPER_AUTOGEN_ALLREDUCE_1D,
            "Section 8.6, 512 PEs",
            _ratio(head, "autogen+bcast", "chain+bcast"),
            at,
        )
    )
    findings.append(
        _headline(
            "headline.autogen_reduce_1d",
            "Auto-Gen vs Chain Reduce",
            PAPER_AUTOGEN_REDUCE_1D,
            "Section 8.5, 512 PEs",
            _ratio(red, "autogen", "chain"),
            at,
        )
    )
    return _columns(h, "P"), findings


def plot_fig8(data: dict[str, Any], ax: Any = None) -> Any:
    """Heatmap of the best fixed 1D AllReduce's speedup over Chain+Bcast."""
    return _plot_heatmap(
        data, ax, "P", "1D AllReduce: best fixed algorithm vs Chain+Bcast"
    )


# -- Figure 10 ----------------------------------------------------------------------
def run_fig10(
    quick: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Speedup of every 2D AllReduce over X-Y Chain and the best fixed one.

    Parameters
    ----------
    quick : bool
        Grid sides ``n = 2 .. 64``, ``B = 1 .. 1024``, headlines on 64 x 64.

    Returns
    -------
    columns : dict
        ``algorithm``, ``label``, ``n`` (grid side), ``PEs`` (``n^2``),
        ``B``, ``log2_n``, ``log2_B``, ``cycles``, ``speedup`` (over X-Y
        Chain AllReduce) and ``best``, one row per algorithm and cell.
    findings : list of dict
        Regions, Snake vs Ring, the forms of Section 7.4, the lower bound and
        the headline ratios.
    """
    from .. import wafer

    ns, bs, n_head = _grid_args(quick)
    h = wafer.speedup_heatmap("2d_allreduce", ns, bs)
    names = [str(a) for a in h["algorithms"]]
    span = f"n x n, n = {ns[0]}..{ns[-1]}, B = {bs[0]}..{bs[-1]}"
    regions = _regions(h, "n")
    findings = [
        _regions_finding(
            regions,
            "similar to 1D: Star/Tree at small B, Two-Phase in the middle; the "
            "bandwidth-limited area is Snake's (Section 7.6, Figure 10)",
            "2D AllReduce",
            span,
        )
    ]

    # Snake against the Ring of 1D at the bandwidth-bound edge (largest B).
    base = regions["base"]
    snake_rows = np.flatnonzero(base[:, -1] == "snake")
    ring_rows = np.flatnonzero(base[:, -1] == "ring")
    cyc = {a: h["cycles"][names.index(a), :, -1] for a in ("xy_ring", "snake+bcast2d")}
    gap = cyc["snake+bcast2d"][0] - cyc["xy_ring"][0]
    findings.append(
        finding(
            "snake_vs_ring.largest_b",
            f"who wins at the largest B = {bs[-1]} ({span})",
            "Snake replaces 1D's Ring in the bandwidth-limited area (Section 7.6)",
            (
                f"Snake+2D Bcast in the rows n = {_span(h['Ps'][snake_rows])}"
                if snake_rows.size
                else "Snake in no row"
            )
            + (
                f", X-Y Ring in n = {_span(h['Ps'][ring_rows])}"
                if ring_rows.size
                else ""
            )
            + f"; overall Snake wins {int(np.sum(base == 'snake'))} cells, X-Y Ring "
            f"{int(np.sum(base == 'ring'))}",
            AtLeast(
                1,
                why="rows Snake wins at the largest B minus rows X-Y Ring wins",
            ),
            int(snake_rows.size - ring_rows.size),
            note="Snake costs T_CHAIN(n^2) = B + (2T_R+2)(n^2-1), so it leaves "
            "the large-B edge to X-Y Chain once 6 n^2 outgrows B; "
            f"on {ns[0]} x {ns[0]} Snake+2D Bcast is {gap:+.0f} cycles from X-Y Ring",
        )
    )

    # Section 7.4: 2D Reduce + 2D Broadcast beats X-Y AllReduce.
    better = []
    for p in ("star", "chain", "tree", "two_phase", "autogen"):
        xy = h["cycles"][names.index(f"xy_{p}")]
        two = h["cycles"][names.index(f"xy_{p}+bcast2d")]
        better.append(bool(np.all(two < xy)))
    x_wins = [
        a
        for a in names
        if not a.endswith("+bcast2d") and np.any(h["best"] == names.index(a))
    ]
    findings.append(
        finding(
            "two_d_reduce_bcast_beats_xy",
            f"X-Y AllReduce vs 2D Reduce + 2D Bcast, same pattern ({span})",
            "X-Y AllReduce broadcasts twice, which is bandwidth "
            "inefficient; 2D Reduce + 2D Broadcast improves it (Section 7.4)",
            f"2D Reduce + 2D Bcast faster for {sum(better)} of {len(better)} "
            "patterns in every cell; X-Y AllReduce forms that win a cell: "
            + (", ".join(LABELS_2D[a] for a in x_wins) or "none"),
            Exact(len(better), "patterns faster in every cell"),
            sum(better),
            note="per pattern the difference is B + 2T_R + 1 cycles (one "
            "broadcast of B saved, two axes' distance kept)",
        )
    )

    # Lemma 7.2 below every 2D Reduce; Snake optimal for B >> P.
    red = wafer.speedup_heatmap("2d_reduce", ns, bs)
    lb = np.asarray(
        [[wafer.lower_bound_2d(n, n, b) for b in bs] for n in ns], dtype=np.float64
    )
    ratio = red["cycles"] / lb
    rnames = [str(a) for a in red["algorithms"]]
    snake = ratio[rnames.index("snake")]
    findings.append(
        finding(
            "lower_bound_2d.smallest_ratio",
            f"2D Reduce / lower bound of Lemma 7.2 ({span})",
            "every 2D Reduce takes at least max(B, B/8+M+N-1)+2T_R+1; "
            "Snake is optimal for B >> P (Section 7.5)",
            f"smallest ratio {ratio.min():.4g} ("
            + ", ".join(f"{a} {ratio[k].min():.4g}" for k, a in enumerate(rnames))
            + f"); Snake at n = {ns[0]}, B = {bs[-1]}: {snake[0, -1]:.4g}",
            AtLeast(1 - EPS, why="the smallest time over the bound; 1e-12 slack"),
            float(ratio.min()),
            note="the bound holds in every cell"
            if ratio.min() >= 1 - EPS
            else "the bound is violated somewhere",
        )
    )

    head_r = wafer.speedup_heatmap("2d_reduce", [n_head], bs)
    head_a = wafer.speedup_heatmap("2d_allreduce", [n_head], bs)
    at = f"{n_head} x {n_head}, B = {bs[0]}..{bs[-1]}"
    for fid, quantity, value, text, table, fast, slow in (
        (
            "headline.autogen_reduce_2d",
            "X-Y Auto-Gen vs X-Y Chain Reduce",
            PAPER_AUTOGEN_REDUCE_2D,
            "Section 8.7",
            head_r,
            "xy_autogen",
            "xy_chain",
        ),
        (
            "headline.autogen_allreduce_2d",
            "X-Y Auto-Gen vs X-Y Chain AllReduce",
            PAPER_AUTOGEN_ALLREDUCE_2D,
            "Section 8.7; its text says 'over the X-Y Auto-Gen AllReduce', "
            "read as X-Y Chain",
            head_a,
            "xy_autogen",
            "xy_chain",
        ),
        (
            "headline.two_phase_reduce_2d",
            "X-Y Two-Phase vs vendor X-Y Chain Reduce",
            PAPER_TWO_PHASE_REDUCE_2D,
            "Section 1.3, 512x512",
            head_r,
            "xy_two_phase",
            "xy_chain",
        ),
        (
            "headline.two_phase_allreduce_2d",
            "X-Y Two-Phase vs vendor X-Y Chain AllReduce",
            PAPER_TWO_PHASE_ALLREDUCE_2D,
            "Section 1.3, 512x512",
            head_a,
            "xy_two_phase",
            "xy_chain",
        ),
    ):
        findings.append(
            _headline(fid, quantity, value, text, _ratio(table, fast, slow), at)
        )
    two = _ratio(head_a, "xy_two_phase+bcast2d", "xy_chain")
    findings[-1]["note"] += (
        f"; Two-Phase 2D Reduce + 2D Bcast: up to {two[0]:.3g}x (B = {two[1]})"
    )
    return _columns(h, "n"), findings


def plot_fig10(data: dict[str, Any], ax: Any = None) -> Any:
    """Heatmap of the best fixed 2D AllReduce's speedup over X-Y Chain."""
    return _plot_heatmap(
        data, ax, "n", "2D AllReduce (n x n): best fixed algorithm vs X-Y Chain"
    )


# -- plotting -----------------------------------------------------------------------
def _plot_heatmap(data: dict[str, Any], ax: Any, row_key: str, title: str) -> Any:
    """Colour = the best fixed algorithm's speedup; label = its short name."""
    ax = new_axes(ax)
    best = np.asarray(data["best"], dtype=bool)
    lp = np.asarray(data[f"log2_{row_key}"])[best]
    lb = np.asarray(data["log2_B"])[best]
    speed = np.asarray(data["speedup"], dtype=float)[best]
    label = np.asarray(data["label"])[best]
    if not lp.size:
        ax.set_title(title + " (no data)", fontsize="medium")
        return ax
    rows, cols = np.unique(lp), np.unique(lb)
    grid = np.full((rows.size, cols.size), np.nan)
    r_i, c_i = np.searchsorted(rows, lp), np.searchsorted(cols, lb)
    grid[r_i, c_i] = speed
    im = ax.imshow(
        grid, origin="lower", aspect="auto", cmap="viridis", interpolation="nearest"
    )
    mid = np.nanmin(grid) + 0.6 * (np.nanmax(grid) - np.nanmin(grid))
    size = 6 if cols.size <= 11 else 4.5
    for r, c, s, t in zip(r_i, c_i, speed, label, strict=True):
        ax.text(
            c,
            r,
            t,
            ha="center",
            va="center",
            fontsize=size,
            color="black" if s > mid else "white",
        )
    ax.set_xticks(range(cols.size), labels=[str(int(c)) for c in cols])
    ax.set_yticks(range(rows.size), labels=[f"{1 << int(r)}" for r in rows])
    ax.tick_params(labelsize=7)
    ax.set_xlabel("log2 B (vector length in wavelets)")
    ax.set_ylabel("P (PEs in the row)" if row_key == "P" else "n (n x n grid)")
    ax.set_title(title, fontsize="medium")
    ax.figure.colorbar(im, ax=ax, label="speedup of the best fixed algorithm")
    if row_key == "n":
        ax.text(
            0.0,
            -0.16,
            "labels: 2D Reduce + 2D Bcast; 'xy': X-Y AllReduce",
            transform=ax.transAxes,
            fontsize="x-small",
        )
    return ax


register_experiment(
    Experiment(
        name="wafer_fig8",
        title="Figure 8: speedup of 1D AllReduce over Chain+Bcast",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Sections 6.3 and 8.6: the "
            "best fixed 1D AllReduce is Star/Tree+Bcast at small B, Two-Phase+Bcast "
            "in the middle and Chain+Bcast or Ring at large B; Ring is never best "
            "at 512 PEs; Auto-Gen AllReduce is up to 2.47x faster than Chain+Bcast "
            "(measured)."
        ),
        run=run_fig8,
        plot=plot_fig8,
    )
)

register_experiment(
    Experiment(
        name="wafer_fig10",
        title="Figure 10: speedup of 2D AllReduce over X-Y Chain",
        paper="000",
        claim=(
            "Luczynski, Gianinazzi et al. (HPDC 2024), Sections 7.6 and 8.7: the 2D "
            "regions resemble 1D, with Snake in the bandwidth-limited area; on "
            "512x512 X-Y Auto-Gen Reduce is up to 3.27x faster than X-Y Chain and "
            "Two-Phase up to 3.32x (Reduce) and 2.56x (AllReduce) faster than the "
            "vendor's (measured)."
        ),
        run=run_fig10,
        plot=plot_fig10,
    )
)
