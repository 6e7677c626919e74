"""Figures of simulation results: timelines, link utilization and link load.

Each function draws one view of a :class:`~wafercoll.SimResult` into a
Matplotlib Axes and returns it. Pass ``ax`` to draw into an existing figure;
without it a new figure is made with :func:`matplotlib.pyplot.subplots`, the
only use of pyplot here. Matplotlib is imported when a function is called, so
``import wafercoll`` works without it.

The views need what the simulation recorded; without it they raise
``ValueError``:

* :func:`plot_timeline`: a Gantt chart of the transfers, needs
  ``simulate(..., transfers=True)``;
* :func:`plot_link_utilization`: the fraction of links busy over time, needs
  ``simulate(..., timeline=True)``;
* :func:`plot_link_load`: each link's utilization on the grid of a line,
  ring, mesh or torus, from any result and its topology.

Examples
--------
>>> import wafercoll as wc
>>> from wafercoll import plot
>>> s = wc.build("generic_ring_allreduce", 4, 4096)
>>> r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9), transfers=True)
>>> ax = plot.plot_timeline(r)  # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ._util import as_int

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .simulate import SimResult
    from .topology import Topology

__all__ = [
    "FIGSIZE",
    "animate",
    "draw_grid",
    "draw_row",
    "draw_tree",
    "figure_legend",
    "interval_density",
    "log2_ticks",
    "new_axes",
    "node_positions",
    "plot_link_load",
    "plot_link_utilization",
    "plot_timeline",
    "plot_timeline_density",
    "si_formatter",
    "time_unit",
]

#: Transfer operations: (op code in the schedule, legend label, colour).
_OP_STYLE = ((0, "copy", "tab:blue"), (1, "reduce", "tab:orange"))
#: Time axis units, largest first: (seconds per unit, label).
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_GRID_KINDS = ("line", "ring", "mesh", "torus")
#: The size of the experiments' and models' figures (inches).
FIGSIZE = (6.4, 4.2)
#: Gantt bar height and the sideways shift of a link off its wire (in rows).
_BAR_HEIGHT = 0.8
_LINK_OFFSET = 0.12


def new_axes(
    ax: Axes | None = None, figsize: tuple[float, float] | None = None
) -> Axes:
    """``ax`` itself, or the Axes of a new figure.

    The new figure comes from ``matplotlib.pyplot`` (so that notebooks show
    it), with a constrained layout and ``figsize`` inches (Matplotlib's
    default when None).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from wafercoll.plot import new_axes
    >>> ax = new_axes(figsize=(4, 3))
    >>> new_axes(ax) is ax
    True
    >>> [float(x) for x in ax.figure.get_size_inches()]
    [4.0, 3.0]
    """
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


#: Legend text size of the figures (points): readable at the saved size.
LEGEND_FONTSIZE = 8


def figure_legend(
    fig: Any,
    handles: list[Any],
    labels: list[str],
    *,
    ncol: int = 4,
    title: str | None = None,
) -> Any:
    """One legend for all panels of ``fig``, below them, outside every Axes.

    With a constrained layout (Matplotlib >= 3.7) the panels shrink to make
    room, so the legend never covers data.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from wafercoll.plot import figure_legend
    >>> fig, axes = plt.subplots(1, 2, layout="constrained")
    >>> lines = [axes[0].plot([0, 1], label="a")[0], axes[1].plot([1, 0])[0]]
    >>> leg = figure_legend(fig, lines, ["a", "b"], ncol=2)
    >>> [t.get_text() for t in leg.get_texts()]
    ['a', 'b']
    """
    kw = {
        "ncol": ncol,
        "fontsize": LEGEND_FONTSIZE,
        "title": title,
        "title_fontsize": LEGEND_FONTSIZE,
        "frameon": False,
    }
    try:
        return fig.legend(handles, labels, loc="outside lower center", **kw)
    except ValueError:  # Matplotlib < 3.7 has no "outside" locations
        return fig.legend(handles, labels, loc="lower center", **kw)


def si_formatter() -> Any:
    """Tick labels in engineering notation: ``500``, ``2k``, ``5M``, one style.

    Replaces ``{x:g}``, which writes ``500000`` beside ``5e+06`` on one axis.

    Examples
    --------
    >>> from wafercoll.plot import si_formatter
    >>> f = si_formatter()
    >>> f(500), f(2000), f(5e6)
    ('500', '2k', '5M')
    """
    from matplotlib import ticker

    return ticker.EngFormatter(sep="")


def log2_ticks(
    axis: Any, lo: float, hi: float, *, label: Any = None, most: int = 8
) -> None:
    """Major ticks of a log axis at the powers of two in ``[lo, hi]``.

    At most ``most`` ticks (every k-th power when there are more), labelled
    ``label(value)`` (plain numbers by default); minor ticks off.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> from wafercoll.plot import log2_ticks
    >>> fig, ax = plt.subplots()
    >>> ax.set_xscale("log")
    >>> log2_ticks(ax.xaxis, 2, 256)
    >>> [float(v) for v in ax.xaxis.get_majorticklocs()]
    [2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]

    Nine powers of two (2 to 512) are more than ``most = 8``: every second one.

    >>> log2_ticks(ax.xaxis, 2, 640)
    >>> [float(v) for v in ax.xaxis.get_majorticklocs()]
    [2.0, 8.0, 32.0, 128.0, 512.0]
    """
    from matplotlib import ticker

    k = np.arange(math.ceil(math.log2(lo) - 1e-9), math.floor(math.log2(hi) + 1e-9) + 1)
    k = k[:: max(1, math.ceil(k.size / most))]
    values = 2.0**k
    fmt = label or (lambda v: f"{v:g}")
    axis.set_major_locator(ticker.FixedLocator(values))
    axis.set_major_formatter(ticker.FixedFormatter([fmt(v) for v in values]))
    axis.set_minor_locator(ticker.NullLocator())


def time_unit(t_max_s: float) -> tuple[float, str]:
    """Unit for times up to ``t_max_s``: the largest with ``t_max_s >= 1`` unit.

    Examples
    --------
    >>> from wafercoll.plot import time_unit
    >>> time_unit(0.0025)
    (0.001, 'ms')
    """
    for scale, label in _TIME_UNITS:
        if t_max_s >= scale:
            return scale, label
    return _TIME_UNITS[-1] if t_max_s > 0 else _TIME_UNITS[0]


def plot_timeline(
    result: SimResult,
    ax: Axes | None = None,
    *,
    max_transfers: int = 20000,
    lanes: str = "rank",
    schedule: Any = None,
    window: tuple[float, float] | None = None,
    bins: int = 600,
    max_lanes: int = 256,
) -> Axes:
    """Gantt chart of the transfers, or their density when there are many.

    Up to ``max_transfers`` transfers, every transfer is a bar (below). Above
    it, the chart aggregates: lanes (source ranks, or steps) are grouped into
    at most ``max_lanes`` rows, time into ``bins`` columns, and each cell
    shows how many transfers of its lanes are in flight on average over its
    span; this stays quick and readable at millions of transfers (see
    :func:`plot_timeline_density`).

    Each transfer is a bar from when it became ready (its dependencies done)
    to when it completed at all its destinations, so waiting for a busy link
    is part of the bar. Bars of one rank may overlap when it sends several
    messages at once; they are drawn semi-transparent with white edges. The
    legend sits outside the Axes, on the right.

    Parameters
    ----------
    result : SimResult
        From ``simulate(..., transfers=True)``.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new figure.
    max_transfers : int
        Draw one bar per transfer up to this many; aggregate above.
    lanes, schedule, window, bins, max_lanes
        For the aggregated chart: see :func:`plot_timeline_density`.

    Returns
    -------
    matplotlib.axes.Axes
        One PolyCollection per operation present, one polygon per transfer;
        or, aggregated, one image.

    Raises
    ------
    ValueError
        If the transfers were not recorded.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9), transfers=True)
    >>> ax = plot.plot_timeline(r)
    >>> ax.get_xlabel()
    'time (ns)'
    """
    if result.transfer_ready_s is None or result.transfer_finish_s is None:
        raise ValueError("plot_timeline() needs simulate(..., transfers=True)")
    cap = as_int(max_transfers, "max_transfers", 1)
    ready = np.asarray(result.transfer_ready_s, dtype=np.float64)
    finish = np.asarray(result.transfer_finish_s, dtype=np.float64)
    if ready.size > cap or lanes != "rank" or window is not None:
        return plot_timeline_density(
            result,
            ax,
            lanes=lanes,
            schedule=schedule,
            window=window,
            bins=bins,
            max_lanes=max_lanes,
        )
    src = np.asarray(result.transfer_src, dtype=np.float64)
    op = np.asarray(result.transfer_op)
    from matplotlib.collections import PolyCollection

    ax = new_axes(ax)
    scale, unit = time_unit(result.time_s)
    x0, x1 = ready / scale, finish / scale
    lo, hi = src - _BAR_HEIGHT / 2, src + _BAR_HEIGHT / 2
    # Rectangles as (n, 4, 2) vertex arrays: one artist per op, not per bar.
    corners = [(x0, lo), (x1, lo), (x1, hi), (x0, hi)]
    verts = np.stack([np.column_stack(c) for c in corners], axis=1)
    for code, label, colour in _OP_STYLE:
        sel = op == code
        if sel.any():
            bars = PolyCollection(
                verts[sel],
                facecolors=colour,
                edgecolors="white",
                linewidths=0.5,
                alpha=0.8,
                label=f"{label} ({int(sel.sum())})",
            )
            ax.add_collection(bars, autolim=True)
    ranks = len(result.rank_finish_s)
    ax.set_xlim(0.0, max(result.time_s / scale, np.finfo(float).tiny))
    ax.set_ylim(ranks - 0.5, -0.5)  # rank 0 on top
    if ranks <= 32:
        ax.set_yticks(range(ranks))
    else:
        from matplotlib.ticker import MaxNLocator

        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("source rank")
    ax.set_title(f"{result.schedule_name or 'schedule'} on {result.topology_name}")
    if op.size:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="transfers")
    return ax


def interval_density(
    start: Any,
    finish: Any,
    lane: Any,
    lanes: int,
    *,
    window: tuple[float, float],
    bins: int = 600,
    max_lanes: int = 256,
) -> tuple[np.ndarray, int, int]:
    """Mean number of intervals in progress per (row of lanes, time bin).

    Interval ``i`` runs from ``start[i]`` to ``finish[i]`` in lane
    ``lane[i]`` (of ``lanes``); lanes are grouped into at most ``max_lanes``
    rows of consecutive lanes, the ``window`` into ``bins`` equal columns.
    Each cell is the time its row's intervals spend inside it, divided by
    its width (exact, O(intervals + rows x bins)). The aggregation behind
    :func:`plot_timeline_density` and
    :meth:`wafercoll.workloads.WorkloadResult.plot_timeline`.

    Returns
    -------
    density : ndarray, shape (rows, bins)
    group : int
        Lanes per row.
    rows : int

    Examples
    --------
    >>> from wafercoll.plot import interval_density
    >>> d, group, rows = interval_density([0.0, 0.5], [1.0, 1.0], [0, 0], 1,
    ...                                   window=(0.0, 1.0), bins=2)
    >>> d.tolist(), group, rows
    ([[1.0, 2.0]], 1, 1)
    """
    t0, t1 = (float(x) for x in window)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 > t0):
        raise ValueError(
            f"window must be (start, end) seconds with end > start, got {window}"
        )
    n_bins = as_int(bins, "bins", 1, 100_000)
    cap = as_int(max_lanes, "max_lanes", 1, 100_000)
    n_lanes = as_int(lanes, "lanes", 1)
    ready = np.asarray(start, dtype=np.float64)
    finish = np.asarray(finish, dtype=np.float64)
    lane = np.asarray(lane, dtype=np.int64)
    group = -(-n_lanes // cap)
    rows = -(-n_lanes // group)
    row = lane // group
    edges = np.linspace(t0, t1, n_bins + 1)
    width = (t1 - t0) / n_bins
    # In-flight time per (row, bin): add each transfer's clipped interval as
    # full bins between its partial first and last bins (difference array).
    a = np.clip(ready, t0, t1)
    b = np.clip(finish, t0, t1)
    keep = b > a
    a, b, row = a[keep], b[keep], row[keep]
    ia = np.minimum(((a - t0) / width).astype(np.int64), n_bins - 1)
    ib = np.minimum(((b - t0) / width).astype(np.int64), n_bins - 1)
    dens = np.zeros((rows, n_bins + 1))
    same = ia == ib
    np.add.at(dens, (row[same], ia[same]), b[same] - a[same])
    d = ~same
    np.add.at(dens, (row[d], ia[d]), edges[ia[d] + 1] - a[d])
    np.add.at(dens, (row[d], ib[d]), b[d] - edges[ib[d]])
    full = np.zeros((rows, n_bins + 1))
    np.add.at(full, (row[d], ia[d] + 1), width)
    np.add.at(full, (row[d], ib[d]), -width)
    dens = (dens + np.cumsum(full, axis=1))[:, :n_bins] / width
    return dens, group, rows


def plot_timeline_density(
    result: SimResult,
    ax: Axes | None = None,
    *,
    lanes: str = "rank",
    schedule: Any = None,
    window: tuple[float, float] | None = None,
    bins: int = 600,
    max_lanes: int = 256,
) -> Axes:
    """Transfers in flight per lane and time bin, for schedules of any size.

    Each transfer is in flight from when it became ready to when it
    completed. Lanes are its source rank (``lanes="rank"``) or its step
    (``lanes="step"``: the schedule's rounds, :meth:`Schedule.steps`; needs
    ``schedule``), grouped into at most ``max_lanes`` rows of consecutive
    lanes. A cell shows the mean number of that row's transfers in flight over
    the cell's time span (exact: in-flight time summed over the row's
    transfers, divided by the span). Cost: O(transfers + lanes x bins).

    Parameters
    ----------
    result : SimResult
        From ``simulate(..., transfers=True)``.
    ax : matplotlib.axes.Axes, optional
    lanes : {"rank", "step"}
    schedule : Schedule, optional
        The simulated schedule (for ``lanes="step"``).
    window : (float, float), optional
        Only this time span, in seconds (zoom).
    bins : int
        Time bins across the window.
    max_lanes : int
        Most rows; consecutive lanes are merged above it.

    Returns
    -------
    matplotlib.axes.Axes
        With one image (``ax.images[0]``; its array is the density).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9), transfers=True)
    >>> ax = plot.plot_timeline_density(r)
    >>> ax.get_xlabel()
    'time (ns)'
    """
    if result.transfer_ready_s is None or result.transfer_finish_s is None:
        raise ValueError("plot_timeline_density() needs simulate(..., transfers=True)")
    n_bins = as_int(bins, "bins", 1, 100_000)
    cap = as_int(max_lanes, "max_lanes", 1, 100_000)
    ready = np.asarray(result.transfer_ready_s, dtype=np.float64)
    finish = np.asarray(result.transfer_finish_s, dtype=np.float64)
    if lanes == "rank":
        lane = np.asarray(result.transfer_src, dtype=np.int64)
        n_lanes = len(result.rank_finish_s)
        what = "source rank"
    elif lanes == "step":
        if schedule is None or schedule.num_transfers != ready.size:
            raise ValueError(
                'lanes="step" needs schedule=, the schedule that was simulated'
            )
        lane = np.asarray(schedule.steps(), dtype=np.int64)
        n_lanes = int(lane.max()) + 1 if lane.size else 1
        what = "step"
    else:
        raise ValueError(f'lanes must be "rank" or "step", got {lanes!r}')
    t0, t1 = (0.0, result.time_s) if window is None else map(float, window)
    dens, group, rows = interval_density(
        ready, finish, lane, n_lanes, window=(t0, t1), bins=n_bins, max_lanes=cap
    )
    ax = new_axes(ax)
    scale, unit = time_unit(t1)
    im = ax.imshow(
        dens,
        aspect="auto",
        interpolation="nearest",
        origin="upper",
        extent=(t0 / scale, t1 / scale, rows * group - 0.5, -0.5),
        cmap="magma_r",
    )
    ax.figure.colorbar(im, ax=ax, label="transfers in flight")
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel(what + (f" (groups of {group})" if group > 1 else ""))
    ax.set_title(
        f"{result.schedule_name or 'schedule'} on {result.topology_name}: "
        f"{ready.size} transfers"
    )
    return ax


def plot_link_utilization(
    result: SimResult, ax: Axes | None = None, *, bins: int = 200
) -> Axes:
    """Fraction of the topology's links busy over time, with its mean.

    Parameters
    ----------
    result : SimResult
        From ``simulate(..., timeline=True)``.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new figure.
    bins : int
        Number of equal time bins; each shows the exact mean over its span
        (see :meth:`SimResult.busy_links`).

    Returns
    -------
    matplotlib.axes.Axes
        A step line (fraction of links, 0 to 1, shown as percent) and a
        dashed line at ``result.link_utilization``, both in the legend.

    Raises
    ------
    ValueError
        If the timeline was not recorded.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9), timeline=True)
    >>> ax = plot.plot_link_utilization(r)
    >>> ax.get_xlabel()
    'time (ns)'
    """
    if result.timeline_t is None or result.timeline_busy is None:
        raise ValueError("plot_link_utilization() needs simulate(..., timeline=True)")
    n = as_int(bins, "bins", 1, 1_000_000)
    from matplotlib.ticker import PercentFormatter

    _, busy = result.busy_links(n)
    # Bin edges as busy_links() draws them; the step line spans every bin.
    edges = np.linspace(0.0, result.time_s, n + 1)
    links = result.num_links
    frac = np.clip(busy / links, 0.0, 1.0) if links else np.zeros_like(busy)
    ax = new_axes(ax)
    scale, unit = time_unit(result.time_s)
    ax.plot(
        np.repeat(edges, 2)[1:-1] / scale,
        np.repeat(frac, 2),
        color="tab:blue",
        label=f"busy links (of {links})",
    )
    mean = result.link_utilization
    ax.axhline(mean, color="tab:red", linestyle="--", label=f"mean {mean:.1%}")
    ax.set_xlim(0.0, max(result.time_s / scale, np.finfo(float).tiny))
    ax.set_ylim(0.0, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel(f"time ({unit})")
    ax.set_ylabel("links busy")
    ax.set_title(f"{result.schedule_name or 'schedule'} on {result.topology_name}")
    ax.legend(loc="best")
    return ax


def node_positions(topology: Topology) -> np.ndarray:
    """Where :func:`plot_link_load` draws every node: ``(num_nodes, 2)`` (x, y).

    ``y`` grows downwards (row 0 on top). Grids (line, ring, mesh, torus):
    (column, row). The Wormhole n150: the physical tile grid, DRAM regions
    beside their controller. A cluster: each node's processes in a block,
    its switch above them, the network's switch above all. Anything else: a
    spring layout (NetworkX, seeded). Hidden routers without a place of their
    own sit one row above their neighbours, centred over them.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> plot.node_positions(wc.mesh(2, 2)).shape
    (4, 2)
    """
    n = topology.num_nodes
    pos = np.full((n, 2), np.nan)
    kind = topology.kind
    if kind in _GRID_KINDS:
        cols = topology.shape[1]
        ids = np.arange(n)
        return np.stack([ids % cols, ids // cols], axis=1).astype(np.float64)
    if hasattr(topology, "physical_xy"):  # the n150
        for v in range(n):
            try:
                pos[v] = topology.physical_xy(v)
            except ValueError:
                pass
    elif kind == "cluster":
        node_of = topology.node_of
        per_row = max(1, int(np.ceil(np.sqrt(topology.ppn))))
        width = per_row + 1.5
        for g in range(int(node_of.max()) + 1):
            members = np.flatnonzero(node_of == g)
            k = np.arange(members.size)
            pos[members, 0] = g * width + k % per_row
            pos[members, 1] = 2.0 + k // per_row
    else:
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        links = topology.links
        g.add_edges_from(zip(links["src"].tolist(), links["dst"].tolist(), strict=True))
        layout = nx.spring_layout(g.to_undirected(), seed=0)
        pos = np.array([layout[v] for v in range(n)]) * max(2.0, np.sqrt(n))
        return pos
    # Unplaced nodes (hidden routers, DRAM): above the mean of placed
    # neighbours, in rounds outwards.
    links = topology.links
    src, dst = links["src"], links["dst"]
    for _ in range(4):
        missing = np.flatnonzero(np.isnan(pos[:, 0]))
        if not missing.size:
            break
        for v in missing:
            nb = np.concatenate([dst[src == v], src[dst == v]])
            nb = nb[~np.isnan(pos[nb, 0])]
            if nb.size:
                pos[v] = (pos[nb, 0].mean(), pos[nb, 1].min() - 1.0)
    pos[np.isnan(pos)] = 0.0
    return pos


def _link_segments(topology: Topology, used: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Segments ``(n, 2, 2)`` of the used links between node positions.

    A link is shifted sideways off its wire so the two directions of a wire
    are apart: to the right of its direction of travel as drawn (y grows
    downwards). A wrap-around link of a ring, torus or the n150's torus is
    drawn as a stub from its source out towards the edge it wraps over.
    """
    links = topology.links
    p0, p1 = pos[links["src"][used]], pos[links["dst"][used]]
    delta = p1 - p0
    wrap = np.zeros(len(p0), dtype=bool)
    if topology.kind in _GRID_KINDS or hasattr(topology, "physical_xy"):
        wrap = (np.abs(delta) > 1.5).any(axis=1)  # neighbours are 1 apart
    length = np.maximum(np.hypot(delta[:, 0], delta[:, 1]), 1e-9)
    unit = delta / length[:, None]
    unit[wrap] = -np.sign(delta[wrap])
    shrink = np.minimum(0.15, 0.3 * length)[:, None]
    start = p0 + shrink * unit
    end = np.where(wrap[:, None], p0 + 0.5 * unit, p1 - shrink * unit)
    side = _LINK_OFFSET * np.stack([-unit[:, 1], unit[:, 0]], axis=1)
    return np.stack([start + side, end + side], axis=1)


def plot_link_load(
    result: SimResult,
    topology: Topology,
    ax: Axes | None = None,
    *,
    cmap: Any = "viridis",
    colorbar: bool = True,
    max_links: int = 100_000,
) -> Axes:
    """Utilization of each used link, drawn on the topology's layout.

    Nodes sit where :func:`node_positions` puts them: (column, row) on a
    grid with row 0 on top, the physical tile grid of the n150, processes in
    their nodes under the switches of a cluster. Every link that carried
    bytes is a segment coloured by its utilization (busy time / makespan).
    Each direction of a wire is shifted to the right of its direction of
    travel, and a wrap-around link is a stub from its source towards the edge
    it leaves by.

    Parameters
    ----------
    result : SimResult
        Any result of :func:`wafercoll.simulate` on ``topology``.
    topology : Topology
        The grid topology that was simulated.
    ax : matplotlib.axes.Axes, optional
        Where to draw; default: a new figure.
    cmap : str or matplotlib.colors.Colormap
        Colour map for utilization 0 to 1.
    colorbar : bool
        Add a colour bar to the figure of ``ax``: below it for a wide grid,
        else to its right.
    max_links : int
        Refuse to draw more used links than this.

    Returns
    -------
    matplotlib.axes.Axes
        A LineCollection with one segment per used link (its array is the
        utilization) and the nodes as a scatter.

    Raises
    ------
    ValueError
        For a topology that is not the one of ``result``, or more than
        ``max_links`` used links.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> topo = wc.mesh(2, 2)
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> ax = plot.plot_link_load(wc.simulate(s, topo, wc.NetworkModel(1e9)), topo)
    >>> type(ax).__name__
    'Axes'
    """
    if topology.name != result.topology_name or topology.num_links != len(
        result.link_bytes
    ):
        raise ValueError(
            f"plot_link_load: the result was simulated on {result.topology_name}, "
            f"not on {topology.name}"
        )
    cap = as_int(max_links, "max_links", 1)
    used = np.asarray(result.link_bytes) > 0
    if int(used.sum()) > cap:
        raise ValueError(
            f"plot_link_load: {int(used.sum())} used links exceed max_links = {cap}"
        )
    from matplotlib.collections import LineCollection
    from matplotlib.colors import Normalize
    from matplotlib.ticker import MaxNLocator, PercentFormatter

    ax = new_axes(ax)
    grid = topology.kind in _GRID_KINDS
    pos = node_positions(topology)
    span = np.ptp(pos, axis=0) + 1.0
    rows, cols = topology.shape if grid else (int(span[1]), int(span[0]))
    size = float(np.clip(2000.0 / max(rows, cols) ** 2, 4.0, 80.0))
    e = topology.num_endpoints
    ax.scatter(
        pos[:e, 0],
        pos[:e, 1],
        s=size,
        facecolors="white",
        edgecolors="0.35",
        zorder=3,
    )
    if topology.num_nodes > e:  # hidden routers: small grey squares
        ax.scatter(
            pos[e:, 0], pos[e:, 1], s=size / 2, marker="s", color="0.6", zorder=3
        )
    lines = LineCollection(
        _link_segments(topology, used, pos),
        array=result.link_utilization_by_link[used],
        cmap=cmap,
        norm=Normalize(0.0, 1.0),
        linewidths=2.0,
        capstyle="butt",
        zorder=2,
    )
    ax.add_collection(lines)
    ax.set_aspect("equal")
    if grid:
        ax.set_xlim(-0.7, cols - 0.3)
        ax.set_ylim(rows - 0.3, -0.7)  # row 0 on top
        for axis, count in ((ax.xaxis, cols), (ax.yaxis, rows)):
            if count <= 32:
                axis.set_ticks(range(count))
            else:
                axis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("column")
        ax.set_ylabel("row")
    else:
        lo, hi = pos.min(axis=0) - 0.8, pos.max(axis=0) + 0.8
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(hi[1], lo[1])
        if hasattr(topology, "physical_xy"):
            ax.set_xlabel("physical x")
            ax.set_ylabel("physical y")
        else:
            ax.set_xticks([])
            ax.set_yticks([])
    ax.set_title(
        f"{result.schedule_name or 'schedule'} on {topology.name}: "
        f"{int(used.sum())} of {topology.num_links} links used"
    )
    if colorbar:
        ax.figure.colorbar(
            lines,
            ax=ax,
            label="link utilization",
            format=PercentFormatter(1.0),
            location="bottom" if cols >= 2 * rows else "right",
        )
    return ax


def animate(
    result: SimResult,
    topology: Topology,
    path: str | None = None,
    *,
    frames: int = 60,
    fps: int = 10,
) -> Any:
    """An animation of the links at work: which carry a packet at each moment.

    Frame ``k`` shows, on :func:`node_positions`'s layout, the links serving a
    packet at time ``k / (frames - 1)`` of the makespan (from the packet
    trace), over the used links in grey.

    Parameters
    ----------
    result : SimResult
        From ``simulate(..., trace=True)`` on ``topology``.
    topology : Topology
    path : str, optional
        Also write the animation: ``.gif`` (Pillow, always available) or
        ``.mp4`` (needs ffmpeg).
    frames, fps : int
        Number of frames and frames per second.

    Returns
    -------
    matplotlib.animation.FuncAnimation
        In Jupyter, ``IPython.display.HTML(anim.to_jshtml())`` plays it inline.

    Raises
    ------
    ValueError
        Without a packet trace, or for a topology other than the result's.

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> topo = wc.ring(4)
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> r = wc.simulate(s, topo, wc.NetworkModel(1e9), trace=True)
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.gif")
    >>> anim = plot.animate(r, topo, path, frames=3)
    >>> os.path.getsize(path) > 0
    True
    """
    if result._trace is None:
        raise ValueError("animate() needs simulate(..., trace=True)")
    n = as_int(frames, "frames", 2, 10_000)
    rate = as_int(fps, "fps", 1, 120)
    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.collections import LineCollection

    ax = plot_link_load(result, topology, colorbar=False)
    (lines,) = [c for c in ax.collections if isinstance(c, LineCollection)]
    used = np.flatnonzero(np.asarray(result.link_bytes) > 0)
    tr = result.trace()
    on_link = tr["kind"] == 0
    link = tr["link"][on_link]
    start, finish = tr["start_s"][on_link], tr["finish_s"][on_link]
    times = np.linspace(0.0, result.time_s, n)
    # busy[l, f]: services of link l covering frame f (difference array).
    row = np.searchsorted(used, link)
    fa = np.searchsorted(times, start, side="left")
    fb = np.searchsorted(times, finish, side="left")
    diff = np.zeros((used.size, n + 1), dtype=np.int64)
    np.add.at(diff, (row, fa), 1)
    np.add.at(diff, (row, fb), -1)
    busy = np.cumsum(diff, axis=1)[:, :n] > 0
    from matplotlib.colors import ListedColormap

    lines.set_cmap(ListedColormap(["0.85", "tab:red"]))
    lines.set_clim(0, 1)
    scale, unit = time_unit(result.time_s)
    title = ax.get_title()

    def draw(k: int) -> tuple[Any, ...]:
        lines.set_array(busy[:, k].astype(float))
        ax.set_title(f"{title}\nt = {times[k] / scale:.3g} {unit}", fontsize="medium")
        return (lines,)

    anim = FuncAnimation(ax.figure, draw, frames=n, interval=1000 / rate, blit=False)
    if path is not None:
        if str(path).endswith(".gif"):
            anim.save(path, writer=PillowWriter(fps=rate))
        else:
            anim.save(path, fps=rate)
    return anim


def _row_axes(ax: Axes | None, P: int, height: float, lower: float, title: str) -> Axes:
    ax = new_axes(ax)
    ax.plot(range(P), np.zeros(P), "o", color="black", markersize=3, zorder=3)
    ax.set_xlim(-0.8, P - 0.2)
    ax.set_ylim(lower * height, 1.1 * height)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xticks(range(0, P, max(1, P // 8)))
    ax.set_title(title, fontsize="small")
    return ax


def draw_tree(parent: Any, ax: Axes | None = None, *, title: str = "") -> Axes:
    """A reduction tree over a row of PEs: an arc from every PE to its parent.

    Arcs are coloured by the child's depth; the root (``parent == -1``) is a
    red square. The drawing of the wafer paper's 1D trees (Figs. 2-5).

    Parameters
    ----------
    parent : array_like of int
        ``parent[v]`` is the PE ``v`` sends to; ``-1`` at the root.
    ax : matplotlib.axes.Axes, optional
    title : str

    Returns
    -------
    matplotlib.axes.Axes
        One Arc patch per tree edge.

    Examples
    --------
    >>> from wafercoll import plot, wafer
    >>> ax = plot.draw_tree(wafer.two_phase_tree(9), title="Two-Phase")
    >>> ax.get_title()
    'Two-Phase'
    """
    from matplotlib.patches import Arc

    from .kit.trees import tree_depths

    par = np.asarray(parent, dtype=np.int64)
    if par.ndim != 1 or par.size == 0 or (par == -1).sum() != 1:
        raise ValueError("parent must be a 1-D parent array with one root (-1)")
    depth = tree_depths(par)
    P = par.size
    kids = np.flatnonzero(par >= 0)
    height = max([abs(int(v - par[v])) for v in kids], default=1) / 2
    ax = _row_axes(ax, P, height, -0.1, title)
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    top = max(1, int(depth.max()))
    for v in kids:
        u = int(par[v])
        span = abs(int(v) - u)
        ax.add_patch(
            Arc(
                ((u + v) / 2, 0),
                span,
                span,
                theta1=0,
                theta2=180,
                color=cmap((depth[v] - 1) / top),
                linewidth=1.4,
            )
        )
    root = int(np.flatnonzero(par == -1)[0])
    ax.plot([root], [0], "s", color="tab:red", markersize=6, zorder=4)
    return ax


def draw_row(
    edges: Any,
    P: int,
    ax: Axes | None = None,
    *,
    title: str = "",
    roots: Any = (),
) -> Axes:
    """Messages between PEs of a row: rightward arcs above, leftward below.

    Parameters
    ----------
    edges : iterable of (int, int)
        ``(source, destination)`` PEs.
    P : int
        PEs in the row.
    ax : matplotlib.axes.Axes, optional
    title : str
    roots : iterable of int
        PEs marked with a red square.

    Returns
    -------
    matplotlib.axes.Axes
        One Arc patch per edge.

    Examples
    --------
    >>> from wafercoll import plot
    >>> ax = plot.draw_row([(1, 0), (2, 1), (3, 0)], 4, roots=[0])
    >>> len(ax.patches) >= 3
    True
    """
    from matplotlib.patches import Arc

    p = as_int(P, "P", 1)
    pairs = [(int(u), int(v)) for u, v in edges]
    height = max([abs(v - u) for u, v in pairs], default=1) / 2
    ax = _row_axes(ax, p, height, -1.1, title)
    ax.spines["bottom"].set_visible(False)
    for u, v in pairs:
        span = abs(v - u)
        up = v > u
        ax.add_patch(
            Arc(
                ((u + v) / 2, 0),
                span,
                span,
                theta1=0 if up else 180,
                theta2=180 if up else 360,
                color="tab:blue" if up else "tab:orange",
                linewidth=1.3,
            )
        )
    for r in roots:
        ax.plot([int(r)], [0], "s", color="tab:red", markersize=6, zorder=4)
    return ax


def draw_grid(
    schedule: Any,
    rows: int,
    cols: int,
    ax: Axes | None = None,
    *,
    title: str = "",
    roots: Any = (0,),
    max_transfers: int = 5000,
) -> Axes:
    """A schedule's transfers as arrows on a grid of PEs, coloured by step.

    Rank ``r`` sits at row ``r // cols``, column ``r % cols``; an arrow goes
    from each transfer's source to each destination. The drawing of the
    wafer paper's 2D patterns (Fig. 9).

    Parameters
    ----------
    schedule : Schedule
    rows, cols : int
        The grid (``rows * cols`` ranks at least).
    ax : matplotlib.axes.Axes, optional
    title : str
    roots : iterable of int
        Ranks marked with a red square.
    max_transfers : int
        Refuse larger schedules (arrows would hide each other).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import plot
    >>> s = wc.build("wafer_xy_reduce", 9, 16, topology=wc.wafer.wafer_grid(3, 3))
    >>> ax = plot.draw_grid(s, 3, 3, title="X-Y reduce")
    >>> ax.get_title()
    'X-Y reduce'
    """
    import matplotlib

    m, n = as_int(rows, "rows", 1), as_int(cols, "cols", 1)
    if schedule.num_ranks > m * n:
        raise ValueError(
            f"the schedule has {schedule.num_ranks} ranks, more than {m} x {n}"
        )
    cap = as_int(max_transfers, "max_transfers", 1)
    if schedule.num_transfers > cap:
        raise ValueError(
            f"draw_grid: {schedule.num_transfers} transfers exceed "
            f"max_transfers = {cap}"
        )
    ax = new_axes(ax)
    steps = schedule.steps()
    top = max(1, int(steps.max())) if steps.size else 1
    cmap = matplotlib.colormaps["viridis"]
    dsts, offsets = schedule.destinations()
    src = schedule.src
    for i in range(schedule.num_transfers):
        a, b = divmod(int(src[i]), n)
        for d in dsts[offsets[i] : offsets[i + 1]]:
            c, e = divmod(int(d), n)
            ax.annotate(
                "",
                xy=(e, c),
                xytext=(b, a),
                arrowprops={
                    "arrowstyle": "-|>",
                    "color": cmap(steps[i] / top),
                    "lw": 1.2,
                    "shrinkA": 4,
                    "shrinkB": 4,
                },
            )
    jj, ii = np.meshgrid(range(n), range(m))
    ax.plot(jj.ravel(), ii.ravel(), "o", color="black", markersize=3)
    for r in roots:
        rr, cc = divmod(int(r), n)
        ax.plot([cc], [rr], "s", color="tab:red", markersize=7)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(m - 0.4, -0.6)  # row 0 on top
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize="small")
    return ax
