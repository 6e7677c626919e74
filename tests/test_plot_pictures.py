"""Pictures for large runs and every topology: the aggregated timeline, link
maps on the n150 and a cluster, the animation, and the row/grid drawings."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.patches import Arc  # noqa: E402

import wafercoll as wc  # noqa: E402
from wafercoll import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _tto():
    topo = wc.topology.mesh(4, 4)
    s = wc.build(
        "mesh_tto_allreduce", size_bytes=1 << 20, topology=topo, chunk_bytes=1 << 15
    )
    net = wc.machines.get("mcm_table_ii").network()
    return s, topo, wc.simulate(s, topo, net, transfers=True)


def test_aggregated_timeline_conserves_in_flight_time() -> None:
    s, _, r = _tto()
    busy = float(np.sum(r.transfer_finish_s - r.transfer_ready_s))
    for lanes, kw in (("rank", {}), ("step", {"schedule": s})):
        ax = plot.plot_timeline(r, max_transfers=10, lanes=lanes, bins=97, **kw)
        dens = ax.images[0].get_array()
        assert dens.shape[1] == 97
        # Each cell is the mean in flight over its span: the area is the total.
        assert dens.sum() * r.time_s / 97 == pytest.approx(busy, rel=1e-9)
    ax = plot.plot_timeline_density(r, max_lanes=5)
    assert ax.images[0].get_array().shape[0] == 4  # 16 ranks in groups of 4


def test_timeline_window_zooms_and_bad_input_is_refused() -> None:
    s, _, r = _tto()
    half = r.time_s / 2
    ax = plot.plot_timeline(r, window=(0.0, half), bins=10)
    ready, finish = r.transfer_ready_s, r.transfer_finish_s
    inside = np.clip(finish, 0, half) - np.clip(ready, 0, half)
    assert ax.images[0].get_array().sum() * half / 10 == pytest.approx(inside.sum())
    with pytest.raises(ValueError, match="schedule"):
        plot.plot_timeline_density(r, lanes="step")
    with pytest.raises(ValueError, match="lanes"):
        plot.plot_timeline_density(r, lanes="colour")
    with pytest.raises(ValueError, match="window"):
        plot.plot_timeline_density(r, window=(1.0, 0.5))
    bare = wc.simulate(s, wc.topology.mesh(4, 4), wc.NetworkModel(1e9))
    with pytest.raises(ValueError, match="transfers=True"):
        plot.plot_timeline_density(bare)


@pytest.mark.parametrize("machine", ["n150", "cluster"])
def test_link_maps_on_the_n150_and_a_cluster(machine) -> None:
    if machine == "n150":
        m = wc.machines.get("wormhole_n150")
        topo, net = m.topology(), m.network()
        name = "torus_ring_bidir_allreduce"
    else:
        topo, net = wc.topology.cluster(4, 16), wc.NetworkModel(None)
        name = "cluster_nap_allreduce"
    s = wc.build(name, size_bytes=1 << 16, topology=topo)
    r = wc.simulate(s, topo, net)
    ax = plot.plot_link_load(r, topo)
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines.get_segments()) == r.links_used > 0
    np.testing.assert_allclose(
        lines.get_array(), r.link_utilization_by_link[r.link_bytes > 0]
    )
    pos = plot.node_positions(topo)
    assert pos.shape == (topo.num_nodes, 2) and np.isfinite(pos).all()
    if machine == "n150":
        for v in range(0, topo.num_cores, 7):
            assert tuple(pos[v]) == topo.physical_xy(v)
    else:
        # Processes of a node share a block; the node's switch sits above it.
        node = topo.node_of
        ends = pos[: topo.num_endpoints]
        xs = [ends[node == g, 0] for g in range(4)]
        assert all(a.max() < b.min() for a, b in zip(xs, xs[1:]))
        assert pos[topo.num_endpoints :, 1].max() < pos[: topo.num_endpoints, 1].min()


def test_animation_of_a_ring_allreduce_is_written_as_gif(tmp_path) -> None:
    topo, net = wc.topology.torus(4, 4), wc.NetworkModel(1e9, packet_bytes=4096)
    s = wc.build("generic_ring_allreduce", size_bytes=1 << 15, topology=topo)
    r = wc.simulate(s, topo, net, trace=True)
    path = tmp_path / "ring.gif"
    anim = plot.animate(r, topo, str(path), frames=12, fps=6)
    assert path.stat().st_size > 1000
    from PIL import Image

    with Image.open(path) as im:
        assert im.n_frames == 12
    # Frame k colours exactly the links serving a packet at that time.
    tr = r.trace()
    t = r.time_s * 5 / 11
    on = (tr["kind"] == 0) & (tr["start_s"] <= t) & (tr["finish_s"] > t)
    used = np.flatnonzero(r.link_bytes > 0)
    anim._func(5)
    (lines,) = [
        c for c in anim._fig.axes[0].collections if isinstance(c, LineCollection)
    ]
    assert set(used[lines.get_array() > 0]) == set(np.unique(tr["link"][on]))
    with pytest.raises(ValueError, match="trace=True"):
        plot.animate(wc.simulate(s, topo, net), topo)


def test_row_and_grid_drawings() -> None:
    parent = wc.wafer.two_phase_tree(16)
    ax = plot.draw_tree(parent, title="two-phase")
    assert sum(isinstance(p, Arc) for p in ax.patches) == 15
    ax = plot.draw_row([(0, 3), (5, 2), (7, 8)], 10, roots=[0])
    arcs = [p for p in ax.patches if isinstance(p, Arc)]
    assert len(arcs) == 3 and sorted(a.theta1 for a in arcs) == [0, 0, 180]
    grid = wc.wafer.wafer_grid(3, 4)
    s = wc.build("wafer_snake_reduce", 12, 64, topology=grid)
    ax = plot.draw_grid(s, 3, 4)
    assert len(ax.texts) == s.num_transfers  # one arrow per destination
    with pytest.raises(ValueError, match="root"):
        plot.draw_tree([0, 0, 1])
    with pytest.raises(ValueError, match="ranks"):
        plot.draw_grid(s, 2, 2)
    with pytest.raises(ValueError, match="max_transfers"):
        plot.draw_grid(s, 3, 4, max_transfers=2)
