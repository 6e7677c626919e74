"""Benchmarks of the foundation: building, verifying and executing schedules.

Run from the repository root after installing wafercoll::

    python bench/bench_foundation.py            # best of 5
    python bench/bench_foundation.py --repeat 3 --json results.json

Every case is timed ``--repeat`` times with ``time.perf_counter`` and the best
time is reported (the minimum is the least noisy estimate of what the code
costs; the spread comes from the machine). The headline figure is build +
verify of Rabenseifner's allreduce for p = 4096 and 64 MiB, with a target of
0.5 s.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from _common import Case, main, print_table, time_cases, verdict

import wafercoll as wc

MiB = 1 << 20
TARGET_S = 0.5


def build_verify(name: str, p: int, size: int) -> Case:
    def fn() -> Any:
        s = wc.build(name, ranks=p, size_bytes=size)
        wc.verify(s)
        return s

    def check(s: Any) -> int:
        if s.num_ranks != p or s.size_bytes != size:
            raise AssertionError(f"{name}: unexpected schedule {s!r}")
        return s.num_transfers

    return f"build+verify {name} p={p}, {size // MiB} MiB", fn, check


def execute_case(p: int, n: int) -> Case:
    sched = wc.build("generic_rabenseifner_allreduce", ranks=p, size_bytes=n * 8)
    wc.verify(sched)
    x = np.random.default_rng(0).standard_normal((p, n))

    def fn() -> Any:
        return wc.execute(sched, x, check=False)

    def check(out: Any) -> int:  # every rank must hold the sum
        if not np.allclose(out, np.broadcast_to(x.sum(axis=0), x.shape)):
            raise AssertionError("execute returned a wrong sum")
        return sched.num_transfers

    return f"execute rabenseifner p={p} on ({p}, {n}) float64", fn, check


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    cases = [
        build_verify("generic_rabenseifner_allreduce", 4096, 64 * MiB),
        build_verify("generic_ring_allreduce", 256, 64 * MiB),
        build_verify("generic_ring_allreduce", 512, 64 * MiB),
        build_verify("generic_recursive_doubling_allreduce", 4096, 64 * MiB),
        execute_case(1024, 4096),
    ]
    rows = [
        {"case": label, "transfers": transfers, "best_s": seconds}
        for label, seconds, _, transfers in time_cases(cases, args.repeat)
    ]
    print_table(rows, [("case", ""), ("transfers", "d"), ("best_s", ".4f")])
    head = rows[0]["best_s"]
    print(f"\nheadline: {rows[0]['case']}: {head:.3f} s")
    print(verdict(head < TARGET_S, f"target of {TARGET_S} s"))
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report))
