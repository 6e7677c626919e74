"""Benchmark: wafercoll's simulator against the limit, a minimal event loop.

``bench/min_loop.cpp`` is a plain binary-heap, cut-through loop (about 100
lines) over a schedule this script dumps: one destination per transfer,
dependencies that wait for completion, a bandwidth and a latency per link, no
ports. It performs the same packet-stage events as ``wc.simulate`` under that
model; the script checks that the event counts and the simulated times agree,
and prints the wall time of each (best of ``--repeat``; the loop's file is read
before its clock starts, ``wc.simulate`` includes its preparation: routes,
canonical order, state). The ratio is wafercoll's time over the loop's.

Cases (``--cases``):

* ``ring1024_1pkt``: ring allreduce on ring(1024), 1 MiB, 1 KiB packets: one
  packet per transfer (2.1 M transfers, one hop each).
* ``ring1024_16pkt``: the same at 64 MiB with 4 KiB packets: 16 per transfer.
* ``torus32_1pkt``: ring allreduce, 1024 ranks on the 32 x 32 torus, 1 MiB,
  4 KiB packets (routes of up to 2 hops between snake neighbours).
* ``rd_65536``: recursive doubling of 8 B on 65,536 ranks of
  ``cluster(p, 1)`` (4 hops a message), 1 GB/s links, 1 us per hop.

The loop is compiled here with ``c++ -O3`` (``--cxx``). Run from the
repository root after installing wafercoll::

    python bench/min_loop.py
    python bench/min_loop.py --cases ring1024_1pkt --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

import wafercoll as wc

HERE = Path(__file__).resolve().parent
MIB = 1 << 20


def case(name: str) -> tuple[Any, Any, Any]:
    """(schedule, topology, network) of a case."""
    if name == "ring1024_1pkt":
        s = wc.build("generic_ring_allreduce", ranks=1024, size_bytes=MIB)
        return s, wc.ring(1024), wc.NetworkModel(25e9, packet_bytes=1024)
    if name == "ring1024_16pkt":
        s = wc.build("generic_ring_allreduce", ranks=1024, size_bytes=64 * MIB)
        return s, wc.ring(1024), wc.NetworkModel(25e9, packet_bytes=4096)
    if name == "torus32_1pkt":
        s = wc.build("generic_ring_allreduce", ranks=1024, size_bytes=MIB)
        return s, wc.topology.torus(32, 32), wc.NetworkModel(25e9, packet_bytes=4096)
    if name == "rd_65536":
        p = 1 << 16
        s = wc.build("generic_recursive_doubling_allreduce", ranks=p, size_bytes=8)
        net = wc.NetworkModel(1e9, hop_latency_s=1e-6)
        return s, wc.topology.cluster(p, 1), net
    raise ValueError(f"unknown case {name!r}")


CASES = ("ring1024_1pkt", "ring1024_16pkt", "torus32_1pkt", "rd_65536")


def dump(s: Any, topo: Any, net: Any, path: Path) -> None:
    """Write the schedule in min_loop.cpp's format."""
    if net.ports is not None or net.dependencies != "complete" or net.alpha_s:
        raise ValueError("the minimal loop models no ports, alpha or dataflow")
    T = s.num_transfers
    src, dst = np.asarray(s.src), np.asarray(s.dst)
    dep_list, dep_off = s.dependencies()
    routes: dict[tuple[int, int], np.ndarray] = {}
    parts = []
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        if (a, b) not in routes:
            routes[(a, b)] = np.asarray(topo.route(a, b), dtype=np.int32)
        parts.append(routes[(a, b)])
    route = np.concatenate(parts).astype(np.int32)
    route_off = np.zeros(T + 1, dtype=np.int64)
    route_off[1:] = np.cumsum([len(x) for x in parts])
    # Successors in CSR by the dependency, in transfer order.
    owner = np.repeat(np.arange(T, dtype=np.int32), np.diff(dep_off))
    order = np.argsort(np.asarray(dep_list), kind="stable")
    succ = owner[order].astype(np.int32)
    succ_off = np.zeros(T + 1, dtype=np.int64)
    succ_off[1:] = np.cumsum(np.bincount(np.asarray(dep_list), minlength=T))
    links = topo.links
    bw = np.full(topo.num_links, net.bandwidth_Bps) if net.bandwidth_Bps else None
    if bw is None:
        bw = links["bandwidth_Bps"].astype(np.float64)
    lat = links["latency_s"].astype(np.float64) + net.hop_latency_s
    with open(path, "wb") as f:
        head = [T, topo.num_links, len(route), len(succ), net.packet_bytes or 0]
        np.asarray(head, dtype=np.int64).tofile(f)
        np.asarray([0.0]).tofile(f)
        np.asarray(s.transfer_bytes(), dtype=np.int64).tofile(f)
        route_off.tofile(f)
        route.tofile(f)
        succ_off.tofile(f)
        succ.tofile(f)
        np.diff(dep_off).astype(np.int32).tofile(f)
        (1.0 / bw).tofile(f)
        lat.tofile(f)


def compile_loop(cxx: str, work: Path) -> Path:
    exe = work / "min_loop"
    src = HERE / "min_loop.cpp"
    cmd = [cxx, "-O3", "-std=c++17", str(src), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return exe


def measure(name: str, exe: Path, work: Path, repeat: int) -> dict[str, Any]:
    s, topo, net = case(name)
    path = work / f"{name}.bin"
    dump(s, topo, net, path)
    ours = []
    for _ in range(repeat):
        t = time.perf_counter()
        r = wc.simulate(s, topo, net)
        ours.append(time.perf_counter() - t)
    loops = []
    for _ in range(repeat):
        out = subprocess.run([str(exe), str(path)], check=True, capture_output=True)
        loops.append(json.loads(out.stdout))
    best = min(x["wall_s"] for x in loops)
    return {
        "case": name,
        "transfers": s.num_transfers,
        "events": r.events,
        "loop_events": loops[0]["events"],
        "time_s": r.time_s,
        "loop_time_s": loops[0]["time_s"],
        "wafercoll_s": min(ours),
        "loop_s": best,
        "ratio": min(ours) / best,
    }


def run_cases(names: Iterable[str], cxx: str, repeat: int) -> Iterator[dict[str, Any]]:
    """Compile the loop once and :func:`measure` each case, as it finishes.

    Each row also says whether both performed the same events and gave the
    same simulated time (``same``).
    """
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_loop(cxx, Path(tmp))
        for name in names:
            row = measure(name, exe, Path(tmp), repeat)
            row["same"] = (
                row["events"] == row["loop_events"]
                and row["time_s"] == row["loop_time_s"]
            )
            yield row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args()
    if shutil.which(args.cxx) is None:
        print(f"no C++ compiler {args.cxx!r} (set --cxx)", file=sys.stderr)
        return 2
    rows = []
    print("| case | transfers | events | simulate | minimal loop | ratio | same time |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for row in run_cases(args.cases, args.cxx, args.repeat):
        rows.append(row)
        print(
            f"| {row['case']} | {row['transfers']:,} | {row['events']:,} "
            f"| {row['wafercoll_s']:.3f} s | {row['loop_s']:.3f} s "
            f"| {row['ratio']:.2f}x | {'yes' if row['same'] else 'NO'} |",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
