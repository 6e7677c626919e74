"""Benchmarks of the wafer-scale 1D Reduce: Figure 1, Auto-Gen and the lower bound.

Run from the repository root after installing wafercoll::

    python bench/bench_wafer.py            # best of 5
    python bench/bench_wafer.py --repeat 3 --json results.json

Cases (``T_R = 2``):

(a) the whole Figure-1 sweep for P = 512: ``wafer.optimality_ratios`` over
    the 13 values B = 1, 2, 4, ..., 4096, all five patterns, Auto-Gen and the
    bound (Lemma 5.5). Target: under 1 s.
(b) ``wafer.autogen(2048, B)`` for B in {1, 64, 4096}: the optimal tree of a
    long row. Target: under 5 s each.
(c) ``wafer.lower_bound(2048, 4096)``: the O(P^3) dynamic program of Lemma
    5.5 (no target).

Each result is checked after timing: every ratio of (a) is at least 1 except
the refined Star's (which beats the bound at small B, see
``wafercoll.experiments.wafer_reduce_1d``) and Auto-Gen is at most every
fixed pattern of equation (1); the trees of (b) are recomputed with equation
(1) from their parent arrays, and lie between the bound and Chain; (c) is at
most Auto-Gen's time. So a fast but wrong run cannot produce a good number.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

import numpy as np
from _common import TargetCase, main, missed, run_targets, verdict

from wafercoll import wafer

T_R = wafer.T_R_DEFAULT
P_FIGURE = 512
BS_FIGURE = [1 << k for k in range(13)]
P_LONG = 2048
BS_LONG = (1, 64, 4096)
TARGET_FIGURE_S = 1.0
TARGET_AUTOGEN_S = 5.0
EPS = 1e-12


def check_figure(r: dict[str, np.ndarray]) -> str:
    """Ratios >= 1 (but refined Star) and Auto-Gen <= every equation-(1) pattern."""
    algo = r["algorithm"]
    if len(algo) != 5 * len(BS_FIGURE):
        raise AssertionError(f"(a): {len(algo)} rows, expected {5 * len(BS_FIGURE)}")
    ratio = {a: r["ratio"][algo == a] for a in wafer.REDUCE_ALGORITHMS}
    for a, values in ratio.items():
        if a != "star" and not np.all(values >= 1 - EPS):
            raise AssertionError(f"(a): {a} below the lower bound")
    for a in ("chain", "tree", "two_phase"):
        if not np.all(ratio["autogen"] <= ratio[a] * (1 + EPS)):
            raise AssertionError(f"(a): Auto-Gen above {a}")
    return f"Auto-Gen max ratio {ratio['autogen'].max():.3f}"


@functools.cache
def bound(P: int, B: int) -> float:
    """Lemma 5.5 (one O(P^3) solve per (P, B), so computed once)."""
    return wafer.lower_bound(P, B, T_R)


def check_autogen(t: wafer.AutogenTree) -> str:
    """Equation (1) of the returned tree is its cycles; bound <= cycles <= Chain."""
    again = wafer.tree_cycles(t.parent, t.B, T_R)
    if abs(again - t.cycles) > EPS * t.cycles:
        raise AssertionError(f"(b): tree gives {again}, DP says {t.cycles}")
    lb = bound(t.P, t.B)
    chain = wafer.chain_time(t.P, t.B, T_R)
    if not lb * (1 - EPS) <= t.cycles <= chain * (1 + EPS):
        raise AssertionError(f"(b): {t.cycles} outside [{lb}, {chain}]")
    return (
        f"{t.cycles:.0f} cycles, ratio {t.cycles / lb:.3f}, "
        f"depth {t.depth}, contention {t.contention}"
    )


def check_bound(lb: float) -> str:
    """The bound equals the cached solve and is at most Auto-Gen's time."""
    auto = wafer.autogen(P_LONG, 4096, T_R).cycles
    if lb != bound(P_LONG, 4096) or lb > auto * (1 + EPS):
        raise AssertionError(f"(c): bound {lb}, Auto-Gen {auto}")
    return f"{lb:.1f} cycles (Auto-Gen {auto:.0f})"


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    cases: list[TargetCase] = [
        (
            f"(a) Figure 1 sweep P={P_FIGURE}, {len(BS_FIGURE)} B, 5 patterns",
            lambda: wafer.optimality_ratios([P_FIGURE], BS_FIGURE, T_R),
            check_figure,
            TARGET_FIGURE_S,
        ),
    ]
    for b in BS_LONG:
        cases.append(
            (
                f"(b) autogen P={P_LONG}, B={b}",
                lambda b=b: wafer.autogen(P_LONG, b, T_R),
                check_autogen,
                TARGET_AUTOGEN_S,
            )
        )
    cases.append(
        (
            f"(c) lower_bound P={P_LONG}, B=4096",
            lambda: wafer.lower_bound(P_LONG, 4096, T_R),
            check_bound,
            None,
        )
    )
    rows = run_targets(cases, args.repeat)
    late = missed(rows)
    a = rows[0]
    slowest = max(r["best_s"] for r in rows if r["case"].startswith("(b)"))
    print(
        f"\nheadline (a): Figure 1 for P = {P_FIGURE} in {a['best_s']:.3f} s; "
        f"(b) slowest Auto-Gen at P = {P_LONG} in {slowest:.3f} s"
    )
    print(
        verdict(
            not late,
            f"targets of {TARGET_FIGURE_S:g} s for (a) and "
            f"{TARGET_AUTOGEN_S:g} s for each of (b)",
            late,
        )
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report))
