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
(d) build + verify ``rd_bo`` on a 24 x 40 torus (960 ranks, 1 MiB): sides
    that are not powers of two, so recursive doubling runs on the factor 8
    of each side and rings over the factors 3 and 5. Target: under 3 s.
(e) build + verify ``ring_bidir`` on a 32 x 32 torus (1 MiB, 4,190,208
    transfers). Target: under 15 s.

Each result is checked after timing: (a), (d) and (e) in the reduce-scatter
every rank sends the minimum, (p - 1) / p of the vector (every block but its
own, once); (b) RD's worst hops per step are recomputed; (c) every simulated
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
    s = wc.build("torus_swing_bo_allreduce", 1024, SIZE, dims=(32, 32))
    wc.verify(s)
    return s


def case_d() -> Any:
    s = wc.build("torus_rd_bo_allreduce", 960, SIZE, dims=(24, 40))
    wc.verify(s)
    return s


def case_e() -> Any:
    s = wc.build(
        "torus_ring_bidir_allreduce",
        topology=wc.topology.torus(32, 32),
        size_bytes=SIZE,
    )
    wc.verify(s)
    return s


def check_a(s: Any) -> str:
    # In the reduce-scatter rank r sends every block but its own, once.
    red = np.asarray(s.op) == 1
    sent = np.bincount(s.src[red], s.transfer_bytes()[red], s.num_ranks)
    ok = bool((sent == SIZE - np.asarray(s.block_bytes)).all())
    return f"{s.num_transfers} transfers, {s.num_steps} steps, minimal bytes: {ok}"


def check_e(s: Any) -> str:
    # 1 MiB is 2048 blocks of 512 B: each rank sends exactly (p - 1) / p.
    p = s.num_ranks
    red = np.asarray(s.op) == 1
    sent = np.bincount(s.src[red], s.transfer_bytes()[red], p)
    ok = bool((sent == (p - 1) * SIZE // p).all())
    return f"{s.num_transfers} transfers, {s.num_steps} steps, minimal bytes: {ok}"


def check_b(t: Any) -> str:
    return f"RD worst hops {wc.wormhole.hop_table('rd', t).per_step_worst.tolist()}"


def check_c(result: Any) -> str:
    cols, findings = wx.split_result(result)
    sim = np.asarray(cols["sim_s"])
    ok = bool((sim > 0).all()) and np.isfinite(cols["roofline_s"]).all()
    return f"{sim.size} rows, {len(findings)} findings, valid: {ok}"


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    roof = wx.get_experiment("torus_roofline")
    cases: list[TargetCase] = [
        ("(a) build + verify swing_bo 32x32, 1 MiB", case_a, check_a, 3.0),
        ("(b) wormhole_n150() topology", wc.wormhole.wormhole_n150, check_b, 1.0),
        ("(c) torus_roofline experiment (full)", roof.run, check_c, 10.0),
        ("(d) build + verify rd_bo 24x40, 1 MiB", case_d, check_a, 3.0),
        ("(e) build + verify ring_bidir 32x32, 1 MiB", case_e, check_e, 15.0),
    ]
    rows = run_targets(cases, args.repeat)
    late = missed(rows)
    goal = "3 s for (a) and (d), 1 s for (b), 10 s for (c), 15 s for (e)"
    print(verdict(not late, goal, late))
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report))
