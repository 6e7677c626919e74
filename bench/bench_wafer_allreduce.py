"""Benchmarks of the wafer AllReduce heatmaps: Figures 8 and 10 of the paper.

Run from the repository root after installing wafercoll::

    python bench/bench_wafer_allreduce.py            # best of 5
    python bench/bench_wafer_allreduce.py --repeat 3 --json results.json

Cases (``T_R = 2``, ``B = 2^0 .. 2^15``):

(a) Figure 8: ``wafer.speedup_heatmap("1d_allreduce", P = 2^1 .. 2^10, B)``,
    160 cells, six algorithms (Auto-Gen from one all-n DP per B). Target:
    under 2 s.
(b) Figure 10: ``wafer.speedup_heatmap("2d_allreduce", n = 2^1 .. 2^10, B)``
    on ``n x n`` grids up to 1024 x 1024, 160 cells, twelve algorithms.
    Target: under 5 s.
(c) ``wafer.best_root`` for Chain+Bcast, Tree+Bcast and Two-Phase+Bcast at
    P = 512, B = 256, metrics cache cleared first: every root's tree
    (no target).

Each result is checked after timing: cells sampled on a diagonal equal the
scalar functions (``allreduce_time``, ``allreduce_2d_time``), ``best`` is the
argmin over the fixed algorithms, every 2D Reduce of the same grid lies above
Lemma 7.2's bound, and the best roots are no worse than root 0. So a fast
but wrong run cannot produce a good number.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import TargetCase, main, missed, run_targets, verdict

from wafercoll import wafer
from wafercoll.wafer import allreduce2d

T_R = wafer.T_R_DEFAULT
PS = [1 << k for k in range(1, 11)]
BS = [1 << k for k in range(16)]
P_ROOT, B_ROOT = 512, 256
ROOT_ALGORITHMS = ("chain+bcast", "tree+bcast", "two_phase+bcast")
TARGET_FIG8_S = 2.0
TARGET_FIG10_S = 5.0
EPS = 1e-12


def _check_heatmap(h: dict[str, np.ndarray], scalar: Callable[..., float]) -> str:
    names = [str(a) for a in h["algorithms"]]
    fixed = np.flatnonzero(h["fixed"])
    if not np.array_equal(h["best"], fixed[np.argmin(h["cycles"][fixed], axis=0)]):
        raise AssertionError("best is not the argmin over the fixed algorithms")
    for i in range(len(PS)):
        j = min(i + 5, len(BS) - 1)
        for k, a in enumerate(names):
            want = scalar(a, PS[i], BS[j])
            if abs(h["cycles"][k, i, j] - want) > EPS * want:
                raise AssertionError(f"{a} at {PS[i]}, {BS[j]}: {want}")
    top = np.unravel_index(np.argmax(h["best_speedup"]), h["best_speedup"].shape)
    return (
        f"{len(names)} algorithms; best speedup {h['best_speedup'][top]:.2f}x "
        f"({names[h['best'][top]]}, {PS[top[0]]}, B = {BS[top[1]]})"
    )


def check_fig8(h: dict[str, np.ndarray]) -> str:
    """Sampled cells equal ``allreduce_time``; ``best`` is the fixed argmin."""
    return _check_heatmap(h, lambda a, p, b: wafer.allreduce_time(a, p, b, T_R))


def check_fig10(h: dict[str, np.ndarray]) -> str:
    """As (a) with ``allreduce_2d_time``; every 2D Reduce above Lemma 7.2."""
    out = _check_heatmap(h, lambda a, n, b: wafer.allreduce_2d_time(a, n, n, b, T_R))
    red = wafer.speedup_heatmap("2d_reduce", PS, BS, T_R)["cycles"]
    lb = np.asarray([[wafer.lower_bound_2d(n, n, b, T_R) for b in BS] for n in PS])
    if not np.all(red >= lb * (1 - EPS)):
        raise AssertionError("a 2D Reduce is below Lemma 7.2's bound")
    return out + "; Lemma 7.2 holds"


def roots() -> list[tuple[int, float]]:
    """Best roots from a cold metrics cache."""
    allreduce2d._metrics_by_root.cache_clear()
    return [wafer.best_root(a, P_ROOT, B_ROOT, T_R) for a in ROOT_ALGORITHMS]


def check_roots(result: list[tuple[int, float]]) -> str:
    """Each best root no worse than root 0 and its time reproducible."""
    parts = []
    for a, (r, t) in zip(ROOT_ALGORITHMS, result, strict=True):
        t0 = wafer.allreduce_time(a, P_ROOT, B_ROOT, T_R)
        again = wafer.allreduce_time(a, P_ROOT, B_ROOT, T_R, root=r)
        if t > t0 * (1 + EPS) or abs(again - t) > EPS * t:
            raise AssertionError(f"(c) {a}: root {r} gives {t}, {again}; root 0 {t0}")
        parts.append(f"{a.split('+')[0]} r={r} {t0 / t:.2f}x")
    return ", ".join(parts)


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    cells = f"{len(PS)} x {len(BS)} cells"
    cases: list[TargetCase] = [
        (
            f"(a) Figure 8, 1D AllReduce, {cells}",
            lambda: wafer.speedup_heatmap("1d_allreduce", PS, BS, T_R),
            check_fig8,
            TARGET_FIG8_S,
        ),
        (
            f"(b) Figure 10, 2D AllReduce n x n, {cells}",
            lambda: wafer.speedup_heatmap("2d_allreduce", PS, BS, T_R),
            check_fig10,
            TARGET_FIG10_S,
        ),
        (
            f"(c) best_root x3, P={P_ROOT}, B={B_ROOT}, cold",
            roots,
            check_roots,
            None,
        ),
    ]
    rows = run_targets(cases, args.repeat)
    late = missed(rows)
    print(
        f"\nheadline: Figure 8 in {rows[0]['best_s']:.3f} s, Figure 10 in "
        f"{rows[1]['best_s']:.3f} s"
    )
    print(
        verdict(
            not late,
            f"targets of {TARGET_FIG8_S:g} s for (a) and {TARGET_FIG10_S:g} s for (b)",
            late,
        )
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report))
