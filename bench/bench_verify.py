"""Benchmark: the schedule verifier alone, on the schedules of ``bench/scale.py``.

Run from the repository root after installing wafercoll::

    python bench/bench_verify.py                        # every case, best of 3
    python bench/bench_verify.py --only verify_1e7 --repeat 5
    python bench/bench_verify.py --compare OTHER/bin/python --rounds 3

Cases (each schedule is built outside the timing; ``wc.verify`` is timed):

* ``verify_1e5`` / ``verify_1e7``: ring allreduce (``generic_ring_allreduce``)
  of p * 64 bytes for p = 224 and 2236, about 10^5 and 10^7 transfers;
* ``ring_torus_1024``: ring allreduce, 1024 ranks, 1 MiB (2.1 M transfers);
* ``rd_262144``: recursive doubling (``generic_recursive_doubling_allreduce``),
  262,144 ranks, 8 B (4.7 M transfers);
* ``ring_ring_4096``: ring allreduce, 4096 ranks, 64 MiB (33.5 M transfers);
* ``tto_16x16``: TTO (``mesh_tto_allreduce``) on a 16 x 16 mesh, 1 GiB,
  96 KiB chunks (16.7 M transfers).

Each case runs in a fresh process (``--case NAME``), so that its peak resident
memory (``ru_maxrss``, schedule included) is its own. After timing, each
report is checked: it verifies, counts every transfer, and for the ring and
recursive doubling its step count is the closed form (2(p - 1) and log2 p), so
a fast but wrong verifier cannot produce a good number.

``--compare PY`` runs every case also under another interpreter (with its own
installed wafercoll, for example a build of the previous version), the two
alternating, ``--rounds`` times; each column is that interpreter's best. That
is how before/after figures are taken on a shared, noisy machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from _common import print_header, print_table, write_json

import wafercoll as wc

MIB = 1 << 20
GIB = 1 << 30


def _ring(p: int, size: int) -> tuple[Callable[[], wc.Schedule], int]:
    return (lambda: wc.build("generic_ring_allreduce", p, size)), 2 * (p - 1)


def _tto() -> wc.Schedule:
    top = wc.topology.mesh(16, 16)
    return wc.build(
        "mesh_tto_allreduce", topology=top, size_bytes=GIB, chunk_bytes=96 * 1024
    )


# name -> (schedule builder, closed-form step count or None)
CASES: dict[str, tuple[Callable[[], wc.Schedule], int | None]] = {
    "verify_1e5": _ring(224, 224 * 64),
    "verify_1e7": _ring(2236, 2236 * 64),
    "ring_torus_1024": _ring(1024, MIB),
    "rd_262144": (
        lambda: wc.build("generic_recursive_doubling_allreduce", 262144, 8),
        18,  # log2(262144): one exchange per bit of the rank
    ),
    "ring_ring_4096": _ring(4096, 64 * MIB),
    "tto_16x16": (_tto, None),
}


def run_case(name: str, repeat: int) -> dict[str, Any]:
    """Build one case's schedule, time ``wc.verify`` on it and check the report."""
    build, steps = CASES[name]
    s = build()
    best, report = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        report = wc.verify(s)
        best = min(best, time.perf_counter() - t0)
    assert report is not None
    if not report.ok or report.transfers != len(s):
        raise AssertionError(f"{name}: unexpected report {report}")
    if steps is not None and report.steps != steps:
        raise AssertionError(f"{name}: {report.steps} steps, expected {steps}")
    return {
        "transfers": len(s),
        "verify_s": best,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9,
    }


def _child(python: str, name: str, repeat: int) -> dict[str, Any]:
    proc = subprocess.run(
        [python, __file__, "--case", name, "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(f"{name} under {python} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=list(CASES), help="run one case here")
    parser.add_argument("--only", nargs="+", choices=list(CASES), help="cases to run")
    parser.add_argument("--repeat", type=int, default=3, help="timings per process")
    parser.add_argument("--rounds", type=int, default=1, help="processes per case")
    parser.add_argument("--compare", metavar="PY", help="another interpreter to time")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    if args.repeat < 1 or args.rounds < 1:
        parser.error("--repeat and --rounds must be at least 1")
    if args.case:
        print(json.dumps(run_case(args.case, args.repeat)))
        return 0
    print_header(args.repeat)
    pythons = [sys.executable] + ([args.compare] if args.compare else [])
    rows = []
    for name in args.only or list(CASES):
        best: dict[str, dict[str, Any]] = {}
        for r in range(args.rounds):
            # Alternate which interpreter goes first: the machine drifts.
            for py in pythons if r % 2 == 0 else pythons[::-1]:
                got = _child(py, name, args.repeat)
                if py not in best or got["verify_s"] < best[py]["verify_s"]:
                    best[py] = got
        row = {"case": name, "transfers": best[sys.executable]["transfers"]}
        row["verify_s"] = best[sys.executable]["verify_s"]
        row["peak_gb"] = best[sys.executable]["peak_gb"]
        if args.compare:
            row["other_s"] = best[args.compare]["verify_s"]
            row["other_gb"] = best[args.compare]["peak_gb"]
            row["speedup"] = row["other_s"] / row["verify_s"]
        rows.append(row)
    columns = [("case", ""), ("transfers", ",d"), ("verify_s", ".3f")]
    columns.append(("peak_gb", ".2f"))
    if args.compare:
        columns += [("other_s", ".3f"), ("other_gb", ".2f"), ("speedup", ".2f")]
    print_table(rows, columns)
    write_json(args.json, args.repeat, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
