"""Benchmarks of the network simulator: packet-stage events per second.

Run from the repository root after installing wafercoll::

    python bench/bench_simulate.py            # best of 5
    python bench/bench_simulate.py --repeat 3 --json results.json

Cases (schedules are built outside the timing; ``wc.simulate`` is timed):

(a) ring allreduce of 256 MiB over 81 ranks on a 9x9 mesh, 8 KiB packets,
    cut-through: the headline. Targets: at least 10 million packet-hop events
    per second on one core, and under 2 s.
(b) recursive doubling allreduce of 64 ranks on an 8x8 torus, 64 MiB,
    8 KiB packets (heavy link contention: every step doubles the distance).

Each simulated time is checked after timing against a bound derived
independently (no transfer beats its uncontended cost), so a fast but wrong
run cannot produce a good number.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from _common import (
    event_columns,
    event_stats,
    main,
    print_table,
    time_cases,
    verdict,
)

import wafercoll as wc

MiB, KiB = 1 << 20, 1 << 10
TARGET_EVENTS_PER_S = 10e6
TARGET_S = 2.0


def case(
    label: str,
    algorithm: str,
    ranks: int,
    size: int,
    topo: wc.Topology,
    net: wc.NetworkModel,
    bound: Callable[[wc.Schedule], float],
) -> tuple[str, Callable[[], Any], Callable[[Any], float]]:
    sched = wc.build(algorithm, ranks, size)

    def fn() -> Any:
        return wc.simulate(sched, topo, net)

    def check(r: Any) -> float:
        lb = bound(sched)
        if not r.time_s >= lb * (1 - 1e-12):
            raise AssertionError(f"{label}: simulated {r.time_s} below bound {lb}")
        return lb

    return label, fn, check


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    bw = 25e9
    net = wc.NetworkModel(bw, hop_latency_s=0.0, packet_bytes=8 * KiB)
    cases = [
        # Ring: 2 (p - 1) sequential steps of S / p bytes each.
        case(
            "(a) ring allreduce 81 ranks, mesh 9x9, 256 MiB",
            "generic_ring_allreduce",
            81,
            256 * MiB,
            wc.topology.mesh(9, 9),
            net,
            lambda s: 2 * 80 * (256 * MiB / 81) / bw,
        ),
        # Recursive doubling: log2 p steps of S bytes each.
        case(
            "(b) recursive doubling 64 ranks, torus 8x8, 64 MiB",
            "generic_recursive_doubling_allreduce",
            64,
            64 * MiB,
            wc.topology.torus(8, 8),
            net,
            lambda s: 6 * 64 * MiB / bw,
        ),
    ]
    rows = [
        {
            "case": label,
            **event_stats(result.events, seconds),
            "sim_time_ms": result.time_s * 1e3,
            "bound_ms": bound * 1e3,
            "link_util": result.link_utilization,
        }
        for label, seconds, result, bound in time_cases(cases, args.repeat)
    ]
    print_table(
        rows,
        [
            ("case", ""),
            *event_columns(".3f", ".1f"),
            ("sim_time_ms", ".3f"),
            ("bound_ms", ".3f"),
            ("link_util", ".3f"),
        ],
    )
    a = rows[0]
    ok = a["Mevents_per_s"] * 1e6 >= TARGET_EVENTS_PER_S and a["best_s"] < TARGET_S
    print(f"\nheadline (a): {a['Mevents_per_s']:.1f} M events/s, {a['best_s']:.3f} s")
    targets = f"{TARGET_EVENTS_PER_S / 1e6:.0f} M events/s and {TARGET_S} s"
    print(verdict(ok, f"targets of {targets}"))
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report))
