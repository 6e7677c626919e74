"""wafercoll.plot: each view draws what the result recorded, and refuses without it."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402

import wafercoll as wc  # noqa: E402
from wafercoll import plot  # noqa: E402

NET = wc.NetworkModel(1e9, hop_latency_s=1e-6, alpha_s=2e-6, packet_bytes=4096)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _sim(name="generic_ring_allreduce", ranks=6, topology=None, **record):
    s = wc.build(name, ranks, 96 * 1024)
    t = wc.ring(ranks) if topology is None else topology
    return s, t, wc.simulate(s, t, NET, **record)


def _bars(ax):
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


@pytest.mark.parametrize(
    "name",
    [
        "generic_ring_allreduce",
        "generic_rabenseifner_allreduce",
        "generic_binomial_broadcast",
    ],
)
def test_timeline_has_one_bar_per_transfer(name):
    s, _, r = _sim(name, transfers=True)
    ax = plot.plot_timeline(r)
    assert isinstance(ax, matplotlib.axes.Axes)
    bars = _bars(ax)
    assert sum(len(b.get_paths()) for b in bars) == s.num_transfers
    # One collection per op present, each in the legend with its count.
    ops = set(r.transfer_op.tolist())
    assert len(bars) == len(ops)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == len(ops)
    # Bars span ready..finish in the chosen unit and sit on the source's row.
    x = np.concatenate([b.get_paths()[0].vertices[:4, 0] for b in bars])
    assert x.min() >= 0
    assert ax.get_xlabel() in {"time (s)", "time (ms)", "time (µs)", "time (ns)"}
    assert ax.get_xlim()[1] > 0


def test_timeline_bars_match_transfer_times():
    s, _, r = _sim("generic_ring_allreduce", ranks=4, transfers=True)
    ax = plot.plot_timeline(r)
    assert ax.get_xlabel() == "time (µs)"  # 2 (p - 1) * ~27 µs
    verts = np.concatenate([[p.vertices[:4] for p in b.get_paths()] for b in _bars(ax)])
    starts = np.sort(verts[:, :, 0].min(axis=1))
    ends = np.sort(verts[:, :, 0].max(axis=1))
    np.testing.assert_allclose(starts, np.sort(r.transfer_ready_s) * 1e6)
    np.testing.assert_allclose(ends, np.sort(r.transfer_finish_s) * 1e6)
    rows = np.sort(verts[:, :, 1].mean(axis=1))
    np.testing.assert_allclose(rows, np.sort(r.transfer_src))


def test_timeline_draws_into_given_axes_and_refuses():
    _, _, r = _sim(transfers=True)
    fig, ax = plt.subplots()
    assert plot.plot_timeline(r, ax) is ax
    assert len(fig.axes) == 1
    # Above max_transfers the chart aggregates instead of refusing.
    agg = plot.plot_timeline(r, max_transfers=r.transfer_ready_s.size - 1)
    assert len(agg.images) == 1
    _, _, bare = _sim()
    with pytest.raises(ValueError, match="transfers=True"):
        plot.plot_timeline(bare)


@pytest.mark.parametrize("bins", [1, 7, 200])
def test_link_utilization_is_a_fraction_with_its_mean(bins):
    _, _, r = _sim("generic_rabenseifner_allreduce", timeline=True)
    ax = plot.plot_link_utilization(r, bins=bins)
    step, mean = ax.get_lines()
    y = np.asarray(step.get_ydata())
    assert len(y) == 2 * bins
    assert ((y >= 0) & (y <= 1)).all()
    x = np.asarray(step.get_xdata())
    assert x[0] == 0 and np.all(np.diff(x) >= 0)
    # The time average of the busy fraction is the mean link utilization.
    assert y[::2].mean() == pytest.approx(r.link_utilization, rel=1e-9)
    assert mean.get_linestyle() == "--"
    np.testing.assert_allclose(mean.get_ydata(), r.link_utilization)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 2 and labels[1].startswith("mean")
    assert ax.get_ylim()[0] == 0


def test_link_utilization_given_axes_and_refusal():
    _, _, r = _sim(timeline=True)
    fig, ax = plt.subplots()
    assert plot.plot_link_utilization(r, ax=ax) is ax
    _, _, bare = _sim(transfers=True)
    with pytest.raises(ValueError, match="timeline=True"):
        plot.plot_link_utilization(bare)


@pytest.mark.parametrize(
    "topology",
    [
        wc.line(6),
        wc.ring(6),
        wc.topology.mesh(2, 3),
        wc.topology.torus(3, 3),
        wc.topology.torus(2, 4),
    ],
    ids=lambda t: t.name,
)
def test_link_load_draws_one_segment_per_used_link(topology):
    ranks = min(topology.num_endpoints, 6)
    _, _, r = _sim("generic_rabenseifner_allreduce", ranks=ranks, topology=topology)
    ax = plot.plot_link_load(r, topology)
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    segs = lines.get_segments()
    assert len(segs) == r.links_used > 0
    used = r.link_bytes > 0
    np.testing.assert_allclose(lines.get_array(), r.link_utilization_by_link[used])
    assert lines.norm.vmin == 0 and lines.norm.vmax == 1
    # Every segment lies near the grid: within half a cell of the nodes.
    rows, cols = topology.shape
    pts = np.concatenate(segs)
    assert (pts[:, 0] >= -0.6).all() and (pts[:, 0] <= cols - 0.4).all()
    assert (pts[:, 1] >= -0.6).all() and (pts[:, 1] <= rows - 0.4).all()
    assert len(ax.figure.axes) == 2  # the Axes and its colour bar


def test_link_load_wrap_links_are_stubs():
    # Ring allreduce on a ring uses the wrap link 5 -> 0: drawn from node 5 outwards.
    t = wc.ring(6)
    _, _, r = _sim("generic_ring_allreduce", ranks=6, topology=t)
    ax = plot.plot_link_load(r, t, colorbar=False)
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    wrap = t.link_id(5, 0)
    index = int(np.flatnonzero(np.flatnonzero(r.link_bytes > 0) == wrap)[0])
    seg = lines.get_segments()[index]
    assert seg[0, 0] > 5 and seg[1, 0] == pytest.approx(5.5)
    assert len(ax.figure.axes) == 1


def test_link_load_given_axes_and_refusals():
    t = wc.topology.mesh(2, 3)
    _, _, r = _sim(topology=t)
    fig, ax = plt.subplots()
    assert plot.plot_link_load(r, t, ax=ax) is ax
    star = wc.custom(
        3, [(0, 3), (3, 0), (1, 3), (3, 1), (2, 3), (3, 2)], num_hidden_routers=1
    )
    s = wc.build("generic_ring_allreduce", 3, 3072)
    rs = wc.simulate(s, star, NET)
    # A custom topology is drawn on a spring layout, its router as a square.
    ax_star = plot.plot_link_load(rs, star, colorbar=False)
    (star_lines,) = [c for c in ax_star.collections if isinstance(c, LineCollection)]
    assert len(star_lines.get_segments()) == rs.links_used
    assert np.isfinite(np.concatenate(star_lines.get_segments())).all()
    with pytest.raises(ValueError, match="simulated on mesh"):
        plot.plot_link_load(r, wc.topology.torus(2, 3))
    with pytest.raises(ValueError, match="max_links"):
        plot.plot_link_load(r, t, max_links=1)


def test_plot_module_does_not_use_pyplot_state():
    # Drawing into a given Axes leaves pyplot's current figure alone.
    _, t, r = _sim(transfers=True, timeline=True)
    fig, axes = plt.subplots(1, 3)
    other, _ = plt.subplots()
    plot.plot_timeline(r, axes[0])
    plot.plot_link_utilization(r, axes[1])
    plot.plot_link_load(r, t, axes[2])
    assert plt.gcf() is other
    assert len(plt.get_fignums()) == 2
