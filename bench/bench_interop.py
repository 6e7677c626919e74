"""Benchmarks of the format readers and writers, and the SimGrid cross-check.

Run from the repository root after installing wafercoll::

    python bench/bench_interop.py             # best of 3
    python bench/bench_interop.py --repeat 5 --json results.json

Part 1 times export and import at the largest size the acceptance names
(p = 64): the ring allreduce (8,064 transfers, 252 steps per thread block
after the nops) and Rabenseifner, through MSCCL XML, Chakra ET and GOAL.
Each result is checked after timing (the import verifies; the writers'
outputs are counted), so a fast but wrong run cannot give a good number.

Part 2 compares wafercoll's packet-level simulator with SimGrid's flow-level
engine (when SimGrid's Python module is installed): contention-free cases,
where they must agree, and contended ones, where they differ by design.
"""

from __future__ import annotations

import tempfile

from _common import main, missed, print_table, run_targets, verdict

import wafercoll as wc
from wafercoll._simgrid import simgrid_available

MiB = 1 << 20
SIZE = 720720 * 64


def _cases(tmp: str):
    ring = wc.build("generic_ring_allreduce", 64, SIZE)
    rab = wc.build("generic_rabenseifner_allreduce", 64, SIZE)
    ring_xml = wc.io.msccl_xml(ring)

    def imported(text):
        s = wc.io.read_msccl(text)
        return f"{s.num_transfers} transfers, {wc.verify(s).steps} steps (verified)"

    return [
        (
            "(a) MSCCL export, ring p=64",
            lambda: wc.io.msccl_xml(ring),
            lambda x: f"{len(x) // 1024} KiB",
            2.0,
        ),
        (
            "(b) MSCCL import + verify, ring p=64",
            lambda: imported(ring_xml),
            lambda r: r,
            5.0,
        ),
        (
            "(c) MSCCL export, rabenseifner p=64",
            lambda: wc.io.msccl_xml(rab),
            lambda x: f"{len(x) // 1024} KiB",
            2.0,
        ),
        (
            "(d) Chakra export, ring p=64",
            lambda: wc.io.chakra_traces(ring),
            lambda fs: f"{len(fs)} files, {sum(map(len, fs)) // 1024} KiB",
            2.0,
        ),
        (
            "(e) GOAL export, ring p=64",
            lambda: wc.io.goal_text(ring),
            lambda x: f"{x.count('send ')} sends",
            2.0,
        ),
        (
            "(f) GOAL import, ring p=64",
            lambda: wc.io.read_goal(wc.io.goal_text(ring)),
            lambda s: f"{s.num_transfers} messages",
            2.0,
        ),
    ]


def _simgrid_rows():
    base = wc.NetworkModel(1e9, hop_latency_s=1e-6, alpha_s=2e-6)
    cases = [
        ("one transfer, 8 MiB over 7 hops of a line", None, wc.line(8)),
        (
            "ring allreduce, p=8, 64 MiB, on a ring",
            "generic_ring_allreduce",
            wc.ring(8),
        ),
        (
            "recursive doubling, p=8, 64 MiB, on a ring (contended)",
            "generic_recursive_doubling_allreduce",
            wc.ring(8),
        ),
        (
            "rabenseifner, p=12, 64 MiB, on a ring (contended)",
            "generic_rabenseifner_allreduce",
            wc.ring(12),
        ),
        (
            "rabenseifner, p=16, 64 MiB, on a 4x4 mesh (contended)",
            "generic_rabenseifner_allreduce",
            wc.topology.mesh(4, 4),
        ),
        (
            "rabenseifner, p=12, 16 MiB, on a ring, no latencies (contended)",
            "generic_rabenseifner_allreduce",
            wc.ring(12),
        ),
    ]
    rows = []
    for label, name, topo in cases:
        if name is None:
            s = wc.Schedule(8, [8 * MiB], "broadcast")
            s.add_transfer(0, 7, [0])
        elif "16 MiB" in label:
            s = wc.build(name, topo.num_endpoints, 16 * MiB)
        else:
            s = wc.build(name, topo.num_endpoints, 64 * MiB)
        net = wc.NetworkModel(1e9) if "no latencies" in label else base
        ours = wc.simulate(s, topo, net).time_s
        theirs = wc.simulate(s, topo, net, engine="simgrid").time_s
        rows.append(
            {
                "case": label,
                "wafercoll_s": ours,
                "simgrid_s": theirs,
                "diff": f"{(theirs - ours) / ours:+.2%}",
            }
        )
    print_table(
        rows,
        [("case", ""), ("wafercoll_s", ".6f"), ("simgrid_s", ".6f"), ("diff", ">")],
    )
    return rows


def report(args):
    with tempfile.TemporaryDirectory() as tmp:
        rows = run_targets(_cases(tmp), args.repeat)
    print(verdict(not missed(rows), "targets", missed(rows)))
    if simgrid_available():
        print(
            "\nwafercoll vs SimGrid, "
            "NetworkModel(1e9, hop_latency_s=1e-6, alpha_s=2e-6) unless said:"
        )
        rows += _simgrid_rows()
    else:
        print("\n(SimGrid not installed: apt-get install python3-simgrid)")
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report, repeat=3))
