"""Synthesized schedules against the bound and against every registered algorithm.

Under the MCM paper's Table II network, on the 8x8 and 9x9 meshes and the
8x8 torus:

1. allreduce at 16, 64 and 256 MiB: ``wc.synthesize`` (copy count chosen by
   simulation) against ``wc.bounds.lower_bound`` and against the fastest
   other registered algorithm the advisor simulates (every candidate that
   applies, ``keep=None``);
2. allreduce at 1 MiB and 64 KiB: the same, the target being "never more
   than 1 % slower than the best registered algorithm";
3. reduce-scatter and allgather at 64 MiB against their bounds;
4. the cost of synthesis (the packing, cold, without the disk cache) on
   meshes from 4x4 to 16x16, tori and a ring;
5. (``--part fabrics``) allgather and reduce-scatter of 1 GiB synthesized
   over switches (DGX H100, 16 DGX H100 on rails) under the machines' preset,
   with packets sprayed over every shortest path, and with merged NVSwitch
   chips, against the bound and beside NCCL's ring.

Prints Markdown tables (recorded in the README, "Synthesis").
"""

from __future__ import annotations

import argparse
import os
import resource
import time

os.environ.setdefault("WAFERCOLL_CACHE", "")  # measure cold synthesis

import wafercoll as wc  # noqa: E402

MIB = 1 << 20


def _cases() -> list[wc.Topology]:
    return [wc.topology.mesh(8, 8), wc.topology.mesh(9, 9), wc.topology.torus(8, 8)]


def allreduce_table(sizes: list[int], net: wc.NetworkModel) -> None:
    print(
        "| topology | size | synthesized: time, ratio to bound "
        "| best other registered: time | synthesized vs best |"
    )
    print("|---|---|---|---|---|")
    for topo in _cases():
        for size in sizes:
            s = wc.synthesize(topo, "allreduce", size, net)
            r = wc.simulate(s, topo, net)
            lb = wc.bounds.lower_bound(topo, net, "allreduce", size)
            adv = wc.advise(topo, size, network=net, keep=None)
            other = [
                c
                for c in adv.candidates
                if c.status == "simulated"
                and c.name != wc.algorithm_name("synth", "treepack", "allreduce")
            ]
            best = min(other, key=lambda c: c.time_s)
            print(
                f"| {topo.name} | {size // 1024} KiB "
                f"| {r.time_s * 1e3:.4f} ms, {r.time_s / lb.time_s:.3f} "
                f"| {best.name}: {best.time_s * 1e3:.4f} ms "
                f"| {r.time_s / best.time_s - 1:+.1%} |",
                flush=True,
            )


def rooted_table(net: wc.NetworkModel, size: int) -> None:
    print("| topology | collective | size | time | ratio to bound |")
    print("|---|---|---|---|---|")
    for topo in _cases():
        for coll in ("reduce_scatter", "allgather"):
            s = wc.synthesize(topo, coll, size, net)
            r = wc.simulate(s, topo, net)
            lb = wc.bounds.lower_bound(topo, net, coll, size)
            print(
                f"| {topo.name} | {coll} | {size // MIB} MiB | {r.time_s * 1e3:.4f} ms "
                f"| {r.time_s / lb.time_s:.3f} |",
                flush=True,
            )


def trees_table(net: wc.NetworkModel, size: int) -> None:
    """Simulated over fluid time against the number of trees (one chunk each)."""
    import numpy as np

    print("| topology | packing | trees | fluid time | simulated | simulated / fluid |")
    print("|---|---|---|---|---|---|")
    for topo in _cases():
        frac = wc.synthesis.pack_spanning_trees(topo)
        rows = [("fractional (LP shares)", frac.parents, frac.shares / frac.rate)]
        for m, k in wc.synthesis.copy_options(topo):
            pack = wc.synthesis.packing_for(topo, k)
            rows.append((f"{m} in {k} copies", pack.parents, np.full(m, 1.0 / m)))
        for label, parents, frac_share in rows:
            share = np.floor(frac_share * size).astype(np.int64)
            share[0] += size - int(share.sum())
            s = wc.kit.trees_program(parents, share)
            fluid = wc.bounds.schedule_lower_bound(s, topo, net).time_s
            r = wc.simulate(s, topo, net)
            print(
                f"| {topo.name} | {label} | {len(parents)} | {fluid * 1e3:.4f} ms "
                f"| {r.time_s * 1e3:.4f} ms | {r.time_s / fluid:.3f} |",
                flush=True,
            )


def fabrics_table(size: int) -> None:
    """Allgather and reduce-scatter synthesized over switches, against the bound.

    Under the machines' preset (each pair's route through one NVSwitch chip)
    and with packets sprayed over every shortest path (64 KiB packets, as
    the hardware spreads NVLink traffic over all of a GPU's links), beside
    NCCL's ring under the same network.
    """
    base = wc.machines.get("dgx_h100_x16_rail").network()
    sprayed = base.replace(spray=True, packet_bytes=64 << 10)
    tops = [
        ("dgx_h100", wc.topology.dgx_h100(), base),
        ("dgx_h100, sprayed", wc.topology.dgx_h100(), sprayed),
        ("dgx_h100, chips merged", wc.topology.dgx_h100(merge_switches=True), base),
        ("dgx_h100_x16_rail", wc.machines.resolve("dgx_h100_x16_rail")[0], base),
        (
            "dgx_h100_x16_rail, sprayed",
            wc.machines.resolve("dgx_h100_x16_rail")[0],
            sprayed,
        ),
        (
            "16 x DGX H100 on rails, chips merged",
            wc.topology.rail_optimized(16, 8, spines=4, nvswitches=1),
            base,
        ),
    ]
    print(
        "| machine | collective | size | time | ratio to bound | busbw "
        "| NCCL ring's ratio | synthesis |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for label, topo, net in tops:
        for coll in ("allgather", "reduce_scatter"):
            t = time.perf_counter()
            s = wc.synthesize(topo, coll, size, net)
            dt = time.perf_counter() - t
            r = wc.simulate(s, topo, net)
            lb = wc.bounds.lower_bound(topo, net, coll, size)
            ring = wc.build(
                wc.algorithm_name("nccl", "ring", coll), size_bytes=size, topology=topo
            )
            rr = wc.simulate(ring, topo, net)
            print(
                f"| {label} | {coll} | {size // MIB} MiB | {r.time_s * 1e3:.3f} ms "
                f"| {r.time_s / lb.time_s:.3f} | {r.busbw_Bps / 1e9:.1f} GB/s "
                f"| {rr.time_s / lb.time_s:.3f} | {dt:.1f} s |",
                flush=True,
            )


def cost_table() -> None:
    print("| topology | nodes | trees in copies | depth | synthesis time | peak RSS |")
    print("|---|---|---|---|---|---|")
    tops = [wc.topology.mesh(n, n) for n in (4, 8, 12, 16)]
    tops += [wc.topology.torus(8, 8), wc.topology.torus(16, 16), wc.ring(64)]
    for topo in tops:
        t = time.perf_counter()
        pack = wc.synthesis.equal_rate_packing(topo)
        dt = time.perf_counter() - t
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"| {topo.name} | {topo.num_endpoints} | {pack.trees} in {pack.copies} "
            f"| {pack.depth} | {dt:.1f} s | {rss:.0f} MiB |",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--part",
        default="all",
        choices=["all", "large", "small", "rooted", "trees", "fabrics", "cost"],
    )
    args = ap.parse_args()
    net = wc.machines.get("mcm_table_ii").network()
    if args.part in ("all", "large"):
        allreduce_table([16 * MIB, 64 * MIB, 256 * MIB], net)
    if args.part in ("all", "small"):
        allreduce_table([64 << 10, MIB], net)
    if args.part in ("all", "rooted"):
        rooted_table(net, 64 * MIB)
    if args.part in ("all", "trees"):
        trees_table(net, 64 * MIB)
    if args.part in ("all", "fabrics"):
        fabrics_table(1 << 30)
    if args.part in ("all", "cost"):
        cost_table()


if __name__ == "__main__":
    main()
