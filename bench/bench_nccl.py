"""Simulated algbw and busbw of NCCL's ring and tree and the hierarchical 2D allreduce.

On ``dgx_h100`` (one node, 8 GPUs) and ``dgx_h100_x16_rail`` (16 DGX H100
nodes on a rail-optimised ConnectX-7 network), and on the same 16 nodes with
each node's four NVSwitch chips merged into one (every GPU's 18 NVLinks as one
450 GB/s link, the bandwidth the hardware gives traffic it spreads over the
chips), for sizes 1 MiB .. 1 GiB under the machines' bandwidth-only presets
(no latency: the algbw of a size is its bandwidth-bound rate). Every schedule
is verified before it is simulated. Prints a Markdown table; ``--json FILE``
also saves the rows.

    python bench/bench_nccl.py            # all sizes
    python bench/bench_nccl.py --quick    # 1 MiB, 32 MiB, 1 GiB
"""

from __future__ import annotations

import argparse
import json
import time

import wafercoll as wc

#: (registry name, options, label)
ALGORITHMS = (
    ("nccl_ring_allreduce", {}, "nccl_ring_allreduce"),
    ("nccl_tree_allreduce", {}, "nccl_tree_allreduce"),
    ("gpu_hier2d_allreduce", {}, "gpu_hier2d_allreduce"),
    ("gpu_hier2d_allreduce", {"chunks": 16}, "gpu_hier2d_allreduce chunks=16"),
)
SIZES = [1 << k for k in range(20, 31, 2)] + [1 << 30]


def machines() -> list[tuple[str, wc.Topology, wc.NetworkModel]]:
    """The machines of the table: two presets and the merged-chip variant."""
    out = []
    for spec in ("dgx_h100", "dgx_h100_x16_rail"):
        topo, net = wc.machines.resolve(spec)
        out.append((spec, topo, net))
    # rail_optimized with one NVSwitch of 18 NVLink 4 links per GPU: the
    # dgx_h100_rail(16) machine with merged chips
    merged = wc.topology.rail_optimized(
        16, 8, spines=4, nvswitches=1, name="dgx_h100_x16_rail merged NVSwitch"
    )
    out.append((merged.name, merged, out[1][2]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three sizes only")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args()
    sizes = [1 << 20, 32 << 20, 1 << 30] if args.quick else sorted(set(SIZES))
    rows = []
    print("| machine | algorithm | size | algbw (GB/s) | busbw (GB/s) | wall (s) |")
    print("|---|---|---:|---:|---:|---:|")
    for label, topo, net in machines():
        for name, options, alg in ALGORITHMS:
            for size in sizes:
                t0 = time.perf_counter()
                s = wc.build(name, topology=topo, size_bytes=size, **options)
                wc.verify(s)
                r = wc.simulate(s, topo, net)
                wall = time.perf_counter() - t0
                row = {
                    "machine": label,
                    "algorithm": alg,
                    "size_bytes": size,
                    "time_s": r.time_s,
                    "algbw_Bps": r.algbw_Bps,
                    "busbw_Bps": r.busbw_Bps,
                    "transfers": s.num_transfers,
                    "wall_s": wall,
                }
                rows.append(row)
                print(
                    f"| {label} | {alg} | {size >> 20} MiB | "
                    f"{r.algbw_Bps / 1e9:.1f} | {r.busbw_Bps / 1e9:.1f} | {wall:.2f} |",
                    flush=True,
                )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
