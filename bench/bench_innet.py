"""Simulated allreduce with in-network reduction (NVLS, SHARP) beside the ring.

Prints, per machine and size, the simulated time and algorithm bandwidth
(``size / time``) of the NVLS, NVLS-tree and SHARP builders and of the ring
allreduce, under bandwidth-only models (no latency, reduction in the switch
free: ``switch_reduce_Bps=None``, see wafercoll.innet). Every schedule is
verified first, and each NVLS time is checked against its closed form
``(2 + 1/p) S / W`` (through the heads) or ``2 S / W`` (straight from the
switch) for one chunk, so a wrong schedule cannot produce a good number.

The ring on ``dgx_h100`` sends each GPU's traffic through one switch chip
(the topology's single-path routes, see wafercoll.topology.fabrics); the
``merge_switches=True`` rows give it the whole 450 GB/s of a GPU, the fair
comparison.

Run: ``python bench/bench_innet.py`` (about a minute).
"""

from __future__ import annotations

import time

import wafercoll as wc

MIB = 1 << 20


def run(name: str, topo: wc.Topology, size: int, **opts: object) -> tuple[float, int]:
    s = wc.build(name, topology=topo, size_bytes=size, **opts)
    wc.verify(s)
    r = wc.simulate(s, topo, wc.NetworkModel(None))
    return r.time_s, s.num_transfers


def row(label: str, topo: wc.Topology, name: str, size: int, **opts: object) -> float:
    t0 = time.perf_counter()
    t, n = run(name, topo, size, **opts)
    wall = time.perf_counter() - t0
    extra = ", ".join(f"{k}={v}" for k, v in opts.items())
    print(
        f"{label:<24} {size // MIB:>4} MiB  {name:<28} {extra:<26} "
        f"{t * 1e6:10.2f} us  {size / t / 1e9:8.1f} GB/s  ({n} transfers, {wall:.2f} s)"
    )
    return t


def main() -> None:
    for label, topo, w in (
        ("dgx_h100", wc.topology.dgx_h100(), 450e9),
        ("dgx_h100 merged", wc.topology.dgx_h100(merge_switches=True), 450e9),
        ("dgx_b200", wc.topology.dgx_b200(), 900e9),
        ("gb200_nvl72", wc.topology.gb200_nvl72(), 900e9),
    ):
        p = topo.num_endpoints
        size = 64 * MIB
        for via_head in (True, False):
            t = row(label, topo, "fabric_nvls_allreduce", size, via_head=via_head)
            want = (2 + 1 / p if via_head else 2) * size / w
            assert abs(t / want - 1) < 1e-3, (t, want)
            row(label, topo, "fabric_nvls_allreduce", size, via_head=via_head, chunks=8)
        if p <= 8:
            row(label, topo, "generic_ring_allreduce", size)
    rail = wc.topology.dgx_h100_rail(2)
    for inter in ("tree", "sharp"):
        row(
            "dgx_h100_rail(2)",
            rail,
            "fabric_nvls_tree_allreduce",
            64 * MIB,
            inter=inter,
        )
    row("dgx_h100_rail(2)", rail, "generic_ring_allreduce", 64 * MIB)
    ft = wc.topology.fat_tree(4)
    row("fat_tree(4)", ft, "fabric_sharp_allreduce", 64 * MIB)
    row("fat_tree(4)", ft, "fabric_sharp_allreduce", 64 * MIB, chunks=8)
    row("fat_tree(4)", ft, "generic_ring_allreduce", 64 * MIB)


if __name__ == "__main__":
    main()
