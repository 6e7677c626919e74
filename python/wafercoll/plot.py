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

from typing import TYPE_CHECKING, Any

import numpy as np

from ._util import as_int

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

    from .simulate import SimResult
    from .topology import Topology

__all__ = ["plot_link_load", "plot_link_utilization", "plot_timeline"]

#: Transfer operations: (op code in the schedule, legend label, colour).
_OP_STYLE = ((0, "copy", "tab:blue"), (1, "reduce", "tab:orange"))
#: Time axis units, largest first: (seconds per unit, label).
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_GRID_KINDS = ("line", "ring", "mesh", "torus")
#: Gantt bar height and the sideways shift of a link off its wire (in rows).
_BAR_HEIGHT = 0.8
_LINK_OFFSET = 0.12


def _new_axes(ax: Axes | None) -> Axes:
    """``ax`` itself, or the Axes of a new figure."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(layout="constrained")
    return new


def _time_unit(t_max_s: float) -> tuple[float, str]:
    """Unit for times up to ``t_max_s``: the largest with ``t_max_s >= 1`` unit."""
    for scale, label in _TIME_UNITS:
        if t_max_s >= scale:
            return scale, label
    return _TIME_UNITS[-1] if t_max_s > 0 else _TIME_UNITS[0]


def plot_timeline(
    result: SimResult, ax: Axes | None = None, *, max_transfers: int = 20000
) -> Axes:
    """Gantt chart of the transfers: one row per source rank.

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
        Refuse results with more transfers (a chart of more bars is unreadable
        and slow to draw).

    Returns
    -------
    matplotlib.axes.Axes
        One PolyCollection per operation present, one polygon per transfer.

    Raises
    ------
    ValueError
        If the transfers were not recorded or there are more than
        ``max_transfers`` of them.
    """
    if result.transfer_ready_s is None or result.transfer_finish_s is None:
        raise ValueError("plot_timeline() needs simulate(..., transfers=True)")
    cap = as_int(max_transfers, "max_transfers", 1)
    ready = np.asarray(result.transfer_ready_s, dtype=np.float64)
    finish = np.asarray(result.transfer_finish_s, dtype=np.float64)
    src = np.asarray(result.transfer_src, dtype=np.float64)
    op = np.asarray(result.transfer_op)
    if ready.size > cap:
        raise ValueError(
            f"plot_timeline: {ready.size} transfers exceed max_transfers = {cap}; "
            "raise max_transfers or simulate a smaller schedule"
        )
    from matplotlib.collections import PolyCollection

    ax = _new_axes(ax)
    scale, unit = _time_unit(result.time_s)
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
    ax = _new_axes(ax)
    scale, unit = _time_unit(result.time_s)
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


def _link_segments(topology: Topology, used: np.ndarray) -> np.ndarray:
    """Segments ``(n, 2, 2)`` of the used links in (column, row) coordinates.

    A link is shifted sideways off its wire so the two directions of a wire
    are apart: to the right of its direction of travel as drawn (row 0 on
    top). A wrap-around link of a ring or torus is drawn as a stub from its
    source out towards the edge it wraps over.
    """
    links = topology.links
    cols = topology.shape[1]
    src, dst = links["src"][used], links["dst"][used]
    p0 = np.stack([src % cols, src // cols], axis=1).astype(np.float64)
    p1 = np.stack([dst % cols, dst // cols], axis=1).astype(np.float64)
    delta = p1 - p0
    wrap = (np.abs(delta) > 1).any(axis=1)
    step = np.sign(delta)
    step[wrap] = -step[wrap]  # a wrap link leaves the grid the other way
    start = p0 + 0.15 * step
    end = np.where(wrap[:, None], p0 + 0.5 * step, p1 - 0.15 * step)
    # Right of (dx, dy) on screen is (-dy, dx) in data, as the y axis is inverted.
    side = _LINK_OFFSET * np.stack([-step[:, 1], step[:, 0]], axis=1)
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
    """Utilization of each used link, drawn on the grid of a line, ring, mesh or torus.

    Nodes sit at (column, row) with row 0 on top. Every link that carried
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
        For a custom topology (no grid), a topology that is not the one of
        ``result``, or more than ``max_links`` used links.
    """
    if topology.kind not in _GRID_KINDS:
        raise ValueError(
            f"plot_link_load needs a grid topology (line, ring, mesh or torus) to "
            f"place the nodes; {topology.name} is {topology.kind}"
        )
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

    ax = _new_axes(ax)
    rows, cols = topology.shape
    nodes = np.arange(topology.num_nodes)
    size = float(np.clip(2000.0 / max(rows, cols) ** 2, 4.0, 80.0))
    ax.scatter(
        nodes % cols,
        nodes // cols,
        s=size,
        facecolors="white",
        edgecolors="0.35",
        zorder=3,
    )
    lines = LineCollection(
        _link_segments(topology, used),
        array=result.link_utilization_by_link[used],
        cmap=cmap,
        norm=Normalize(0.0, 1.0),
        linewidths=2.0,
        capstyle="butt",
        zorder=2,
    )
    ax.add_collection(lines)
    ax.set_aspect("equal")
    ax.set_xlim(-0.7, cols - 0.3)
    ax.set_ylim(rows - 0.3, -0.7)  # row 0 on top
    for axis, count in ((ax.xaxis, cols), (ax.yaxis, rows)):
        if count <= 32:
            axis.set_ticks(range(count))
        else:
            axis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("column")
    ax.set_ylabel("row")
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
