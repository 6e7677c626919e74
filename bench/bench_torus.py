"""Benchmarks of the torus collectives (paper 002): builders, n150 topology, sweep.

Run from the repository root after installing wafercoll::

    python bench/bench_torus.py            # best of 5
    python bench/bench_torus.py --repeat 3 --json results.json

Cases:

(a) build + verify ``swing_bo`` on a 32 x 32 torus (1024 ranks, 1 MiB).
    Target: under 3 s.
(b) build the Wormhole n150 topology (129 endpoints, explicit routes).
    Target: under 1 s.
(c) the whole ``torus_roofline`` experiment (10 sizes, 6 algorithms, two
    machines, simulated). Target: under 10 s.

Each result is checked after timing: (a) every rank sends 2 (p - 1) / p of
the vector; (b) RD's worst hops per step are recomputed; (c) every simulated
time is positive and every row has a roofline.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from _common import TargetCase, main, missed, run_targets, verdict

import wafercoll as wc
import wafercoll.experiments as wx

SIZE = 1 << 20


def case_a() -> Any:
    s = wc.build("swing_bo", 1024, SIZE, dims=(32, 32))
    wc.verify(s)
    return s


def check_a(s: Any) -> str:
    sent = s.stats()["bytes_sent"]
    ok = bool((sent == 2 * 1023 * SIZE // 1024).all())
    return f"{s.num_transfers} transfers, minimal bytes: {ok}"


def check_b(t: Any) -> str:
    return f"RD worst hops {wc.torus.hop_table('rd', t).per_step_worst.tolist()}"


def check_c(result: Any) -> str:
    cols, findings = wx.split_result(result)
    sim = np.asarray(cols["sim_s"])
    ok = bool((sim > 0).all()) and np.isfinite(cols["roofline_s"]).all()
    return f"{sim.size} rows, {len(findings)} findings, valid: {ok}"


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    roof = wx.get_experiment("torus_roofline")
    cases: list[TargetCase] = [
        ("(a) build + verify swing_bo 32x32, 1 MiB", case_a, check_a, 3.0),
        ("(b) wormhole_n150() topology", wc.torus.wormhole_n150, check_b, 1.0),
        ("(c) torus_roofline experiment (full)", roof.run, check_c, 10.0),
    ]
    rows = run_targets(cases, args.repeat)
    late = missed(rows)
    print(verdict(not late, "3 s for (a), 1 s for (b), 10 s for (c)", late))
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report))
