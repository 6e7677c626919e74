"""Generate and simulate a GPT-like training step on a 4x4 mesh of chiplets.

A 16-layer GPT-like model (hidden 2048, sequence 2048, micro-batch 1, 2-byte
elements) on 16 chiplets under the MCM paper's Table II network: tensor
parallel in groups of 4 (a mesh row each), 2 pipeline stages, 2 data-parallel
replicas, ``--microbatches`` micro-batches, gradients in 25 MB buckets, on an
A100-like roofline. Prints the time to generate the workload, to simulate it
(collectives expanded, algorithms chosen per communicator), the step and its
breakdown; then, for a pipeline alone with free communication, the measured
idle fraction of each stage against the 1F1B bubble ``(p - 1) / (m + p - 1)``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import wafercoll as wc
from wafercoll.workloads import Layer, Layout, gpt_layers, roofline, training_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--microbatches", type=int, default=8)
    args = parser.parse_args()

    layers = gpt_layers(hidden=2048, layers=16, seq_len=2048, micro_batch=1)
    lay = Layout(dp=2, tp=4, pp=2)
    mesh = wc.mesh(4, 4)
    net = wc.machines.preset("mcm_table_ii").replace(dependencies="complete")
    t0 = time.perf_counter()
    w = training_step(
        layers,
        lay,
        roofline("a100_sxm_bf16"),
        microbatches=args.microbatches,
        bucket_bytes=25 * 10**6,
        name="gpt 16 layers, dp2 tp4 pp2",
    )
    t1 = time.perf_counter()
    res = w.simulate(mesh, net, placement=lay.placement(mesh))
    t2 = time.perf_counter()
    print(w)
    print(f"generated in {t1 - t0:.2f} s; simulated in {t2 - t1:.2f} s")
    print(f"algorithms: {sorted(set(res.algorithms.values()))}")
    print(res)

    print("\n1F1B alone, free communication: idle / step per stage")
    model = wc.workloads.Roofline(1e12, 1e30)
    for p, m in [(2, 4), (4, 4), (4, 16), (8, 8)]:
        blocks = [Layer(f"l{i}", 1e9, 0, 0) for i in range(p)]
        pw = training_step(blocks, Layout(pp=p), model, microbatches=m)
        pr = pw.simulate(wc.line(p), wc.NetworkModel(1e9))
        idle = pr.breakdown()["idle_s"] / pr.step_time_s
        print(
            f"p={p} m={m:2d}: measured {np.round(idle, 6).tolist()} "
            f"(expected {(p - 1) / (m + p - 1):.6f})"
        )


if __name__ == "__main__":
    main()
