"""Benchmark: simulating the wafer's X-Y Chain Reduce on large grids.

Run from the repository root after installing wafercoll::

    python bench/bench_wafer_2d_sim.py                  # 64, 256, 512 (once each)
    python bench/bench_wafer_2d_sim.py --sizes 64 128 --repeat 3 --json out.json

For each N, ``wafer_xy_reduce`` (pattern ``chain``) on ``wafer_grid(N, N)``
with B = 256 wavelets is built outside the timing, and ``wc.simulate`` with
``wafer.wse2_network()`` is timed: every row streams its chain to column 0,
then column 0 chains to (0, 0), one event per wavelet per stage. The
headline is N = 512 (262,144 PEs), target < 30 s (issue 5).

The simulated cycles are printed beside the paper's X-Y form
``T_chain(N) + T_chain(N)``, ``T_chain(n) = B + (2 T_R + 2)(n - 1)``
(Sections 5.2 and 7.2), and checked after timing against the 2D lower bound
of Lemma 7.2, ``max(B, B / 8 + 2 N - 1) + 2 T_R + 1``, so a fast but wrong
run cannot produce a good number.
"""

from __future__ import annotations

import argparse
from typing import Any

from _common import best_of, event_columns, event_stats, main, print_table, verdict

import wafercoll as wc
from wafercoll import wafer

B = 256
T_R = 2
TARGET_N = 512
TARGET_S = 30.0


def chain_form(n: int) -> float:
    """The paper's Chain Reduce on n PEs (Lemma 5.2)."""
    return B + (2 * T_R + 2) * (n - 1)


def lower_bound(m: int, n: int) -> float:
    """Lemma 7.2 for an m x n grid."""
    return max(B, B / 8 + m + n - 1) + 2 * T_R + 1


def run(n: int, repeat: int) -> dict[str, Any]:
    grid = wafer.wafer_grid(n, n)
    sched = wc.build(
        "wafer_xy_reduce", size_bytes=4 * B, topology=grid, pattern="chain"
    )
    net = wc.wafer.wse2_network(T_R)
    seconds, result = best_of(lambda: wc.simulate(sched, grid, net), repeat)
    cycles = result.cycles
    lb = lower_bound(n, n)
    if not cycles >= lb - 1e-6:
        raise AssertionError(f"{n}x{n}: simulated {cycles} cycles below bound {lb}")
    form = chain_form(n) + chain_form(n)
    return {
        "grid": f"{n}x{n}",
        "PEs": n * n,
        **event_stats(result.events, seconds),
        "sim_cycles": cycles,
        "xy_chain_form": form,
        "diff": cycles - form,
    }


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    print(f"X-Y Chain Reduce, B = {B} wavelets, wse2_network(T_R={T_R})")
    rows = []
    for n in args.sizes:
        rows.append(run(n, args.repeat))
        print(
            f"  {rows[-1]['grid']}: {rows[-1]['best_s']:.2f} s", flush=True
        )  # progress: the large grids take a while
    print_table(
        rows,
        [
            ("grid", ""),
            ("PEs", ",d"),
            *event_columns(".2f", ".2f"),
            ("sim_cycles", ".0f"),
            ("xy_chain_form", ".0f"),
            ("diff", "+.0f"),
        ],
    )
    head = [r for r in rows if r["PEs"] == TARGET_N * TARGET_N]
    if head:
        ok = head[0]["best_s"] < TARGET_S
        print(
            f"\nheadline {TARGET_N}x{TARGET_N}: {head[0]['best_s']:.1f} s "
            + verdict(ok, f"target of {TARGET_S:.0f} s")
        )
    return rows


def sizes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[64, 256, 512], help="grid sides N"
    )


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report, repeat=1, per="size", options=sizes_option))
