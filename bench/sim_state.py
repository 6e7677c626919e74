"""Benchmark: the simulator's own memory per transfer, without the verifier.

Builds a case's schedule, notes the process's peak resident memory
(``ru_maxrss``), simulates, and prints how far the peak rose, per transfer:
the simulation's state above the schedule (its transient build memory, which
the simulation may reuse, included in the first peak). Each case and setting
runs in a fresh process. The cases are two of ``bench/scale.py``'s:

* ``ring_torus_1024``: ring allreduce, 1024 ranks on a 32 x 32 torus, 1 MiB,
  4 KiB packets (2.1 M transfers, one destination each).
* ``rd_262144``: recursive doubling of 8 B on 262,144 ranks of
  ``cluster(p, 1)`` with LogGOPSim's default parameters (4.7 M transfers).

Run from the repository root after installing wafercoll::

    python bench/sim_state.py
    python bench/sim_state.py --case rd_262144 --transfers
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys

import wafercoll as wc

CASES = ("ring_torus_1024", "rd_262144")
#: LogGOPSim's default G and o (spcl/LogGOPSim, src/LogGOPSim/LogGOPSim.ggo:
#: G 6 ns per byte, o 1500 ns, L 2500 ns), as in bench/scale.py.
G_S_PER_BYTE, O_S, L_S = 6e-9, 1.5e-6, 2.5e-6


def _peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run(name: str, transfers: bool) -> str:
    """One case in this process: the rise of the peak per transfer."""
    if name == "ring_torus_1024":
        top = wc.topology.torus(32, 32)
        net = wc.NetworkModel(25e9, packet_bytes=4096)
        s = wc.build("generic_ring_allreduce", ranks=1024, size_bytes=1 << 20)
    elif name == "rd_262144":
        p = 262144
        g = G_S_PER_BYTE
        top = wc.topology.cluster(p, 1, process_Bps=1 / g, nic_Bps=1 / g)
        net = wc.NetworkModel(None, alpha_s=2 * O_S, hop_latency_s=L_S / 4)
        s = wc.build("generic_recursive_doubling_allreduce", ranks=p, size_bytes=8)
    else:
        raise ValueError(f"unknown case {name!r}; known: {', '.join(CASES)}")
    before = _peak_bytes()
    r = wc.simulate(s, top, net, transfers=transfers)
    after = _peak_bytes()
    n = s.num_transfers
    return (
        f"| {name} | {'yes' if transfers else 'no'} | {n:,} | {before / 1e9:.3f} GB "
        f"| {after / 1e9:.3f} GB | {(after - before) / n:.1f} | {r.time_s!r} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES, help="run one case here")
    parser.add_argument("--transfers", action="store_true", help="record times")
    args = parser.parse_args()
    if args.case:
        print(run(args.case, args.transfers))
        return 0
    print(
        "| case | times recorded | transfers | peak after build | peak after "
        "simulate | B per transfer | time_s |"
    )
    print("|---|---|---:|---:|---:|---:|---|")
    for name in CASES:
        for flag in ([], ["--transfers"]):
            cmd = [sys.executable, __file__, "--case", name, *flag]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True)
            print(out.stdout.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
