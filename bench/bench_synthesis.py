"""Synthesized allreduce against every registered algorithm (issue goal).

On 8x8 and 9x9 meshes and an 8x8 torus under the MCM paper's Table II
network, at 16 MiB and 256 MiB: the advisor's ranking with the synthesized
tree-packing schedule included. Prints, per case, the best registered
algorithm and the synthesized schedule with their optimality ratios.
"""

from __future__ import annotations

import argparse
import time

import wafercoll as wc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="16,256", help="MiB, comma-separated")
    args = ap.parse_args()
    net = wc.machines.get("mcm_table_ii").network()
    cases = [wc.topology.mesh(8, 8), wc.topology.mesh(9, 9), wc.topology.torus(8, 8)]
    print(
        "| topology | size | best registered: time, ratio | synthesized: time, ratio "
        "| faster | within 15 % of the bound | advise time |"
    )
    print("|---|---|---|---|---|---|---|")
    for topo in cases:
        for mib in (int(x) for x in args.sizes.split(",")):
            t = time.perf_counter()
            adv = wc.advise(topo, mib << 20, network=net, keep=2)
            dt = time.perf_counter() - t
            sim = [c for c in adv.candidates if c.status == "simulated"]
            synth = next(c for c in sim if c.name == "synth_treepack_allreduce")
            other = next(c for c in sim if c.name != synth.name)
            parts = wc.build(other.name, size_bytes=1 << 20, topology=topo).participants
            note = f" ({int(parts.sum())} of {topo.num_endpoints} ranks)"
            print(
                f"| {topo.name} | {mib} MiB | {other.name}{note}: "
                f"{other.time_s * 1e3:.3f} ms, {other.ratio:.3f} | "
                f"{synth.time_s * 1e3:.3f} ms, {synth.ratio:.3f} | "
                f"{'yes' if synth.time_s < other.time_s else 'no'} | "
                f"{'yes' if synth.ratio <= 1.15 else 'no'} | {dt:.1f} s |"
            )


if __name__ == "__main__":
    main()
