"""Benchmark: wafercoll at scale, every phase timed, peak memory per case.

Run from the repository root after installing wafercoll::

    python bench/scale.py            # every case, each in a fresh process
    python bench/scale.py --case rd_262144 --queue heap
    python bench/scale.py --only tto_16x16 --repeat 5   # median of 5 processes

Each case runs in its own Python process (``--case NAME``) so that its peak
resident memory (``ru_maxrss``) is its own; the table gives the time of each
phase (build, verify, simulate), the peak after each phase (``peak_build_gb``,
``peak_verify_gb``, ``peak_gb`` at the end, and the last per transfer) and the
bytes per transfer of the schedule's own arrays. The cases:

* ``ring_torus_1024``: ring allreduce (``generic_ring_allreduce``), 1024 ranks
  on a 32 x 32 torus, 1 MiB, 25 GB/s links, 4 KiB packets.
* ``rd_262144`` / ``rd_1048576``: recursive doubling
  (``generic_recursive_doubling_allreduce``), 8 B per rank, on a
  full-bisection switch (``topology.cluster(p, 1)``: every rank's link to
  its NIC, and the NIC's to the fabric) with LogGOPSim's default parameters
  (L = 2.5 us over the 4 hops, o = 1.5 us at each end, G = 6 ns/B on every
  link): the setting LogGOPSim simulates.
* ``ring_ring_4096``: ring allreduce on a ring of 4096 ranks, 64 MiB, 25 GB/s
  links, 64 KiB packets.
* ``tto_16x16``: TTO on a 16 x 16 mesh, 1 GiB, 96 KiB chunks, under the
  paper's Table II network (``wc.mcm.TABLE_II``).
* ``hops_1`` / ``hops_many``: simulator throughput in packet-hops per second
  (one packet-stage event per hop) on the ring schedule on ring(1024) with
  transfers of one packet (1 MiB vector, 1 KiB chunks as packets) and of many
  (64 MiB, 4 KiB packets: 16 per transfer).
* ``verify_1e5`` / ``verify_1e7``: verification cost per transfer of ring
  allreduce schedules of about 10^5 and 10^7 transfers (p = 224 and 2236).

Targets (issues: performance at scale, performance II) are printed beside each
row.

With ``--repeat N`` each case runs in N fresh processes one after the other;
a row then gives the median of each time with its range, ``[min-max]``, and
the largest peak, and the time targets are judged on the median. On a shared
or virtual machine the same build's times vary by 10-30 % from run to run
(the README's tables give the ranges seen), so one run tells little about a
target within that margin.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from typing import Any

import wafercoll as wc

MIB = 1 << 20
GIB = 1 << 30
#: LogGOPSim's default LogGP parameters (spcl/LogGOPSim, src/LogGOPSim/
#: LogGOPSim.ggo: L 2500 ns, o 1500 ns, g 1000 ns, G 6 ns per byte).
LOGGP = {"L_s": 2.5e-6, "o_s": 1.5e-6, "g_s": 1e-6, "G_s_per_byte": 6e-9}

#: Peak bytes per transfer for the whole pipeline (build + verify +
#: simulate) when every transfer has one destination (performance II).
PEAK_B_PER_TRANSFER = 100
#: The cases whose transfers all have one destination and one block range.
ONE_DESTINATION = ("ring_torus_1024", "rd_262144", "rd_1048576", "ring_ring_4096")

CASES: dict[str, dict[str, Any]] = {
    "ring_torus_1024": {
        "label": "ring allreduce, 1024 ranks, 32x32 torus, 1 MiB",
        "target_s": 0.7,
    },
    "rd_262144": {
        "label": "recursive doubling, 262,144 ranks",
        "target_s": 2.5,
        "target_gb": 0.8,
    },
    "rd_1048576": {
        "label": "recursive doubling, 1,048,576 ranks",
        "target_s": 12.0,
        "target_gb": 3.0,
    },
    "ring_ring_4096": {
        "label": "ring on ring(4096), 64 MiB",
        "target_s": 15.0,
        "target_gb": 2.5,
    },
    "tto_16x16": {
        "label": "TTO 16x16, 1 GiB, 96 KiB chunks",
        "target_s": 15.0,
        "target_gb": 2.5,
    },
    "hops_1": {"label": "packet-hops/s, transfers of 1 packet", "target_rate": 10e6},
    "hops_many": {
        "label": "packet-hops/s, transfers of 16 packets",
        "target_rate": 40e6,
    },
    "verify_1e5": {"label": "verify, ~10^5 transfers"},
    "verify_1e7": {"label": "verify, ~10^7 transfers"},
}


def _peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def _schedule_bytes(s: Any) -> int:
    """Bytes of the schedule's per-transfer arrays.

    Builds without ``transfer_array_bytes`` stored every array as Python sees
    it (int64 offsets included), so their sizes are the NumPy arrays' sizes.
    """
    c = s._core
    if hasattr(c, "transfer_array_bytes"):
        return int(c.transfer_array_bytes)
    arrays = (c.src, c.op, c.dsts, c.range_lo, c.range_hi, c.deps)
    offsets = (c.dst_offsets, c.range_offsets, c.dep_offsets)
    return sum(int(a.nbytes) for a in arrays + offsets)


def _phases(build: Any, topology: Any, network: Any, queue: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    s = build()
    t1 = time.perf_counter()
    peak_build = _peak_gb()
    report = wc.verify(s)
    if not report.ok:
        raise AssertionError(f"schedule failed verification: {report}")
    t2 = time.perf_counter()
    peak_verify = _peak_gb()
    r = wc.simulate(s, topology, network, event_queue=queue)
    t3 = time.perf_counter()
    return {
        "transfers": len(s),
        "build_s": t1 - t0,
        "verify_s": t2 - t1,
        "simulate_s": t3 - t2,
        "events": int(r.events),
        "sim_time_s": float(r.time_s),
        "peak_build_gb": peak_build,
        "peak_verify_gb": peak_verify,
        "schedule_B_per_transfer": _schedule_bytes(s) / len(s),
    }


def run_case(name: str, queue: str) -> dict[str, Any]:
    """Run one case in this process."""
    if name == "ring_torus_1024":
        top = wc.topology.torus(32, 32)
        net = wc.NetworkModel(25e9, packet_bytes=4096)
        out = _phases(
            lambda: wc.build("generic_ring_allreduce", 1024, MIB), top, net, queue
        )
    elif name.startswith("rd_"):
        p = int(name[3:])
        # LogGP on a full-bisection switch: a cluster of one process per
        # node (4 hops: process, NIC, NIC, process), o at both ends, L over
        # the hops, G per byte on every link.
        g = LOGGP["G_s_per_byte"]
        top = wc.topology.cluster(p, 1, process_Bps=1 / g, nic_Bps=1 / g)
        net = wc.NetworkModel(
            None, alpha_s=2 * LOGGP["o_s"], hop_latency_s=LOGGP["L_s"] / 4
        )
        out = _phases(
            lambda: wc.build("generic_recursive_doubling_allreduce", p, 8),
            top,
            net,
            queue,
        )
    elif name == "ring_ring_4096":
        net = wc.NetworkModel(25e9, packet_bytes=64 * 1024)
        out = _phases(
            lambda: wc.build("generic_ring_allreduce", 4096, 64 * MIB),
            wc.topology.ring(4096),
            net,
            queue,
        )
    elif name == "tto_16x16":
        top = wc.topology.mesh(16, 16)
        out = _phases(
            lambda: wc.build(
                "mesh_tto_allreduce",
                topology=top,
                size_bytes=GIB,
                chunk_bytes=96 * 1024,
            ),
            top,
            wc.mcm.TABLE_II,
            queue,
        )
    elif name in ("hops_1", "hops_many"):
        p = 1024
        size, pkt = (MIB, 1024) if name == "hops_1" else (64 * MIB, 4096)
        net = wc.NetworkModel(25e9, packet_bytes=pkt)
        s = wc.build("generic_ring_allreduce", p, size)
        top = wc.topology.ring(p)
        wc.simulate(s, top, net, event_queue=queue)  # warm
        t0 = time.perf_counter()
        r = wc.simulate(s, top, net, event_queue=queue)
        sec = time.perf_counter() - t0
        out = {
            "transfers": len(s),
            "simulate_s": sec,
            "events": int(r.events),
            "rate": r.events / sec,
            "packets_per_transfer": r.packets / len(s),
        }
    elif name in ("verify_1e5", "verify_1e7"):
        p = 224 if name == "verify_1e5" else 2236
        s = wc.build("generic_ring_allreduce", p, p * 64)
        t0 = time.perf_counter()
        rep = wc.verify(s)
        sec = time.perf_counter() - t0
        if not rep.ok:
            raise AssertionError("schedule failed verification")
        out = {
            "transfers": len(s),
            "verify_s": sec,
            "us_per_transfer": 1e6 * sec / len(s),
        }
    else:
        raise ValueError(f"unknown case {name!r}; known: {', '.join(CASES)}")
    out["peak_gb"] = _peak_gb()
    if "transfers" in out and "peak_build_gb" in out:
        out["peak_B_per_transfer"] = out["peak_gb"] * 1e9 / out["transfers"]
    return out


#: The timed fields of a row: with --repeat, their median, min and max.
TIMES = ("build_s", "verify_s", "simulate_s", "total_s", "process_s")


def _combine(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row of several runs of a case: the median of each time (with its
    min and max beside it), the largest of each peak, the rest of the first
    run (counts and simulated times do not vary between runs)."""
    row = dict(runs[0])
    for key in TIMES + ("rate", "us_per_transfer"):
        values = [r[key] for r in runs if key in r]
        if len(values) == len(runs):
            row[key] = statistics.median(values)
            row[key + "_min"], row[key + "_max"] = min(values), max(values)
    for key in ("peak_build_gb", "peak_verify_gb", "peak_gb", "peak_B_per_transfer"):
        if key in row:
            row[key] = max(r[key] for r in runs)
    row["runs"] = len(runs)
    return row


def _fmt(row: dict[str, Any]) -> str:
    parts = []
    for key, f in (
        ("transfers", ",d"),
        ("build_s", ".2f"),
        ("verify_s", ".2f"),
        ("simulate_s", ".2f"),
        ("events", ",d"),
        ("rate", ".3g"),
        ("us_per_transfer", ".2f"),
        ("schedule_B_per_transfer", ".1f"),
        ("peak_build_gb", ".2f"),
        ("peak_verify_gb", ".2f"),
        ("peak_gb", ".2f"),
        ("peak_B_per_transfer", ".0f"),
    ):
        if key in row:
            text = f"{key} {format(row[key], f)}"
            if key + "_min" in row:
                lo, hi = row[key + "_min"], row[key + "_max"]
                text += f" [{format(lo, f)}-{format(hi, f)}]"
            parts.append(text)
    return ", ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=list(CASES), help="run one case here")
    parser.add_argument("--queue", default="auto", choices=("auto", "heap", "buckets"))
    parser.add_argument("--only", nargs="+", choices=list(CASES), help="cases to run")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each case in N fresh processes and give medians (1 to 50)",
    )
    args = parser.parse_args()
    if not 1 <= args.repeat <= 50:
        parser.error(f"--repeat: {args.repeat} is not in [1, 50]")
    if args.case:
        print(json.dumps(run_case(args.case, args.queue)))
        return 0
    print(
        f"wafercoll {wc.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, event queue {args.queue}"
        + (f", median of {args.repeat} processes per case" if args.repeat > 1 else "")
    )
    rows = []
    for name in args.only or list(CASES):
        spec = CASES[name]
        runs, failed = [], None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, __file__, "--case", name, "--queue", args.queue],
                capture_output=True,
                text=True,
                check=False,
            )
            wall = time.perf_counter() - t0
            if proc.returncode:
                failed = proc.stderr
                break
            run = json.loads(proc.stdout.strip().splitlines()[-1])
            run["process_s"] = wall
            run["total_s"] = sum(
                run.get(k, 0.0) for k in ("build_s", "verify_s", "simulate_s")
            )
            runs.append(run)
        if failed is not None:
            print(f"{name}: FAILED\n{failed}")
            rows.append({"case": name, "failed": failed[-2000:]})
            continue
        row = _combine(runs)
        row["case"] = name
        total = row["total_s"]
        verdicts = []
        if "target_s" in spec:
            verdicts.append(f"{total:.2f} s vs < {spec['target_s']:g} s")
        if "target_gb" in spec:
            verdicts.append(f"{row['peak_gb']:.2f} GB vs < {spec['target_gb']:g} GB")
        if "peak_B_per_transfer" in row and name in ONE_DESTINATION:
            bpt = row["peak_B_per_transfer"]
            verdicts.append(f"{bpt:.0f} B/transfer vs < {PEAK_B_PER_TRANSFER} B")
        if "target_rate" in spec:
            verdicts.append(
                f"{row['rate'] / 1e6:.1f} M/s vs >= {spec['target_rate'] / 1e6:g} M/s"
            )
        row["targets"] = "; ".join(verdicts)
        rows.append(row)
        print(
            f"{spec['label']}: {_fmt(row)}"
            + (f"  [{row['targets']}]" if verdicts else "")
        )
    v = {r["case"]: r for r in rows if "us_per_transfer" in r}
    if len(v) == 2:
        ratio = v["verify_1e7"]["us_per_transfer"] / v["verify_1e5"]["us_per_transfer"]
        print(
            f"verify per-transfer cost, 10^7 vs 10^5: {ratio:.2f}x (target within 1.5x)"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
