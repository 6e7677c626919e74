"""Time a workload of 10^4 collective nodes on the 9x9 chiplet mesh (target: < 60 s).

A data- and tensor-parallel step on the 9x9 mesh under the MCM paper's
Table II network: the rows are tensor-parallel groups of 9, the columns
data-parallel groups of 9. Per layer, every rank computes, each row
allreduces its activations (1 MiB) and each column its gradients (4 MiB);
556 layers make 10,008 collective nodes and 45,036 compute nodes. The
collectives of a row or a column run at once on the shared mesh. The
algorithms are chosen per communicator ("auto"): the fastest alone.

Prints the time to build the graph, to simulate it (expansion included) and
the step's breakdown.
"""

from __future__ import annotations

import argparse
import time

import wafercoll as wc


def build(layers: int) -> wc.workloads.Workload:
    side = 9
    w = wc.workload(side * side, name=f"dp x tp, {layers} layers")
    last: dict[int, int] = {}
    for layer in range(layers):
        comp = {
            r: w.compute(r, 20e-6, deps=[last[r]] if r in last else [])
            for r in range(side * side)
        }
        for row in range(side):
            ranks = [row * side + c for c in range(side)]
            n = w.collective(
                "allreduce",
                1 << 20,
                ranks,
                deps=[comp[r] for r in ranks],
                name=f"tp {layer}",
            )
            for r in ranks:
                last[r] = n
        for col in range(side):
            ranks = [r * side + col for r in range(side)]
            n = w.collective(
                "allreduce",
                4 << 20,
                ranks,
                deps={r: [last[r]] for r in ranks},
                name=f"dp {layer}",
            )
            for r in ranks:
                last[r] = n
    return w


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=556)
    args = parser.parse_args()
    t0 = time.perf_counter()
    w = build(args.layers)
    t1 = time.perf_counter()
    # The preset forwards packets as data arrives (dataflow); a workload
    # runs its collectives with complete dependencies.
    net = wc.machines.preset("mcm_table_ii").replace(dependencies="complete")
    res = w.simulate(wc.mesh(9, 9), net, progress=True)
    t2 = time.perf_counter()
    counts = w.counts()
    print(
        f"{counts['collective']} collective and {counts['compute']} compute nodes, "
        f"{res.simulation.packets} packets, {res.simulation.events} events"
    )
    print(f"graph built in {t1 - t0:.2f} s; simulated in {t2 - t1:.2f} s")
    print("target: simulated in under 60 s")
    print(f"algorithms: {sorted(set(res.algorithms.values()))}")
    print(res)


if __name__ == "__main__":
    main()
