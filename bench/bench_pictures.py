"""Time the pictures of issue-sized runs.

* ``plot_timeline`` on TTO over a 9x9 mesh (1 GiB, 96 KiB chunks: several
  hundred thousand transfers), grouped by rank and by step (target < 10 s);
* ``plot_link_load`` on the n150 and on a 4 x 16 cluster;
* ``animate`` of a ring allreduce on a 4 x 4 torus, written as GIF.
"""

from __future__ import annotations

import os
import tempfile
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402

import wafercoll as wc  # noqa: E402
from wafercoll import plot  # noqa: E402


def timed(label: str, fn) -> None:
    t = time.perf_counter()
    fn()
    plt.close("all")
    print(f"{label}: {time.perf_counter() - t:.2f} s")


def main() -> None:
    topo = wc.topology.mesh(9, 9)
    net = wc.machines.get("mcm_table_ii").network()
    s = wc.build("mesh_tto_allreduce", size_bytes=1 << 30, topology=topo)
    r = wc.simulate(s, topo, net, transfers=True)
    print(f"TTO 9x9, 1 GiB: {s.num_transfers} transfers")
    out = tempfile.mkdtemp()
    timed(
        "plot_timeline, lanes by rank (drawn and saved)",
        lambda: plot.plot_timeline(r).figure.savefig(os.path.join(out, "a.png")),
    )
    timed(
        "plot_timeline, lanes by step (drawn and saved)",
        lambda: plot.plot_timeline(r, lanes="step", schedule=s).figure.savefig(
            os.path.join(out, "b.png")
        ),
    )
    m = wc.machines.get("wormhole_n150")
    n150 = m.topology()
    rn = wc.simulate(
        wc.build("torus_ring_bidir_allreduce", size_bytes=1 << 20, topology=n150),
        n150,
        m.network(),
    )
    timed("plot_link_load, n150", lambda: plot.plot_link_load(rn, n150))
    cl = wc.topology.cluster(4, 16)
    rc = wc.simulate(
        wc.build("cluster_nap_allreduce", size_bytes=1 << 20, topology=cl),
        cl,
        wc.NetworkModel(None),
    )
    timed("plot_link_load, 4 x 16 cluster", lambda: plot.plot_link_load(rc, cl))
    t4 = wc.topology.torus(4, 4)
    rr = wc.simulate(
        wc.build("generic_ring_allreduce", size_bytes=1 << 16, topology=t4),
        t4,
        wc.NetworkModel(1e9, packet_bytes=4096),
        trace=True,
    )
    timed(
        "animate, ring allreduce on a 4 x 4 torus, 60 frames to GIF",
        lambda: plot.animate(rr, t4, os.path.join(out, "ring.gif")),
    )


if __name__ == "__main__":
    main()
