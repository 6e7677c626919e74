"""Routing plans of the 2D X-Y Reduce, and a colour check in the simulator.

Section 7.2 of *Near-Optimal Wafer-Scale Reduce* runs a 1D pattern along
every row to column 0, then along column 0 to ``(0, 0)``
(:func:`~wafercoll.wafer.builders2d.xy_tree`). :func:`routing_plan_2d` gives
the router configurations that do this on the wafer, the way
:func:`~wafercoll.wafer.routing_plan` does for a row, and
:func:`check_colour_collisions` replays the built schedule in the simulator
and looks for two wavelets of one colour meeting in a router in one cycle
(Section 2.2: "the behaviour is undefined")::

      col:   0        1        2        3
    row 0  (0,0) <- (0,1) <- (0,2) <- (0,3)      row streams: west,
             ^                                   colours 1, 0, 1, ... by
    row 1  (1,0) <- (1,1) <- (1,2) <- (1,3)      depth in the row tree
             ^
    row 2  (2,0) <- (2,1) <- (2,2) <- (2,3)      column streams: north in
                                                 column 0, colours 2, 0, 2, ...

The colouring rule
------------------
Routers only ever pass X-Y Reduce traffic west (rows), north (column 0) and
up the ramp. A router accepts a wavelet when it routes it onto an output (a
link or the ramp to its PE), one per output and cycle. Two wavelets of one
colour are accepted in one cycle only on different outputs, and they conflict
only when they came from different inputs (one link delivers one wavelet per
cycle). Listing every such pair of (input -> output) at every router:

* a row router ``(r, c)``, ``c > 0``: its own send (``ramp -> west``) with a
  child's stream (``east -> ramp``). A row stream and the streams of its
  children must differ: colour = depth in the row tree mod 2 (``1`` for the
  streams into column 0), as in 1D (the chain's two colours, Section 5.2).
* a column-0 router ``(r, 0)``: its own column send (``ramp -> north``) with a
  row child (``east -> ramp``) or a column child (``south -> ramp``), and a
  column stream passing north (``south -> north``) with a row child. So
  column streams alternate with their children and avoid colour 1. They take
  ``2`` at odd depth in the column tree and ``0`` at even depth.

Colour 0 is shared by row streams of even depth and column streams of even
depth, which never meet: a row stream of depth >= 2 ends at column >= 1, and
column streams stay in column 0. In the plan's terms, two configurations of
one router that differ in both input and output never share a colour. That
holds whatever the timing, so the rule needs no simulation to be right, and
it is the same for every X-Y pattern (star, chain, tree, two_phase, autogen).

It uses **at most 3 colours**, and only as many as the tree depths need.
When a row tree has depth 1 (Star) its streams all take colour 1, and when a
column tree has depth 1 its streams all take colour 2 (1D: at most 2, as
:func:`~wafercoll.wafer.routing_plan`). The paper's implementations use up
to 3 colours in 1D and 5 in 2D, out of 24 (Section 8.2), without saying how
they are assigned. Few colours suffice here because streams of one colour
are sequenced by router configurations, which the plan lists. Each row, and
then column 0, keeps the 1D plan's order of events. A router receives its
children in turn, sends, then forwards the streams that pass over it. A
control wavelet ends any stream after which a router on its path has a
further configuration on that colour.

The collision check
-------------------
:func:`check_colour_collisions` simulates with ``trace=True`` and counts cycles
in whole clock cycles (``round(t * clock_Hz)``). Two rules are available:

* ``"accept"`` (the default) uses the cycle at which router ``R`` serves the
  wavelet onto its next stage (a link out of ``R`` or ``R``'s ejection ramp).
  Its input is the stage before that (the link into ``R``, or ``R``'s
  injection ramp). This is the rule that fits this simulator. The simulator
  buffers without limit and never stalls, so a stream that runs ahead waits
  *inside* the next router. On the wafer it would wait before it, because
  that router does not accept its direction yet (Sections 2.2 and 8.2:
  routers accept one direction at a time). So the cycle at which the
  simulator serves a wavelet on is the cycle the wafer's router takes it.
* ``"arrive"`` uses the cycle at which the wavelet reaches ``R``. That is
  the start of its service on a link into ``R`` plus that link's latency and
  the hop latency, or the start on ``R``'s injection ramp plus the port
  latency (the simulator's cut-through rule for when the next stage is
  reached). The bare start times would compare a ramp wavelet ``T_R - 1``
  cycles early against a link wavelet. Under this rule, streams that the
  wafer would stall count as arriving, for example a Star's later streams
  at every router they pass. Plans that sequence one colour by
  configurations, as the paper's do, then "collide" in the simulator where
  the wafer would not.

Both rules report a collision when wavelets of one colour meet at one router
in one cycle from two or more different inputs.

Examples
--------
>>> import wafercoll as wc
>>> from wafercoll import wafer
>>> plan = wafer.routing_plan_2d(3, 4, B=8, pattern="chain")
>>> plan["colours"], plan["num_colours"]
([0, 1, 2], 3)
>>> s = wc.build("wafer_xy_reduce", 12, 4 * 8, wafer.wafer_grid(3, 4), pattern="chain")
>>> report = wafer.check_colour_collisions(
...     s, wafer.wafer_grid(3, 4), wafer.colour_of_transfers(s, plan)
... )
>>> report["collisions"]
[]
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .._util import as_int
from ..network import NetworkModel
from ..schedule import Schedule
from ..simulate import simulate
from ..topology import Topology
from .builders2d import pattern_tree
from .machine import wse2_network
from .model import T_R_DEFAULT, as_ramp_latency
from .reduce1d import MAX_DP_P, REDUCE_ALGORITHMS

__all__ = [
    "COLOURS_AVAILABLE",
    "CONFIGURATIONS_PER_COLOUR",
    "check_colour_collisions",
    "colour_of_transfers",
    "routing_plan_2d",
    "routing_plan_2d_json",
]

#: Colours of the WSE (Section 8.2: "there are only 24 of them").
COLOURS_AVAILABLE = 24
#: Routing configurations a router stores per colour (Section 2.2).
CONFIGURATIONS_PER_COLOUR = 4
#: Colours of the plan: row streams by row depth, column streams by column depth.
_ROW_COLOURS = (0, 1)  # depth even, odd
_COLUMN_COLOURS = (0, 2)  # depth even, odd (never 1: the row streams into column 0)
_RULES = ("accept", "arrive")
_MAX_REPORTED = 100  # collisions listed in a report (all are counted)


def _depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every PE of a pre-order tree (parents precede children)."""
    depth = np.zeros(parent.size, dtype=np.int64)
    for v in range(1, parent.size):
        depth[v] = depth[parent[v]] + 1
    return depth


def _line_events(
    parent: np.ndarray, colour: np.ndarray, rx: str, tx: str
) -> list[list[dict[str, Any]]]:
    """The 1D plan's events along one axis, positions ``0 .. n - 1``.

    Streams travel from position ``v`` towards 0. ``rx`` is the direction the
    streams come in from (``east`` or ``south``), and ``tx`` is the direction
    they leave in (``west`` or ``north``). ``stream`` is the sending position.
    The order is that of :func:`~wafercoll.wafer.routing_plan`: receives in
    child order, the PE's own send, then forwards in stream order.
    """
    n = parent.size
    events: list[list[dict[str, Any]]] = [[] for _ in range(n)]

    def ev(kind: str, x: int, a: str, b: str) -> dict[str, Any]:
        return {"event": kind, "colour": int(colour[x]), "rx": a, "tx": b, "stream": x}

    for x in range(1, n):  # children in increasing order = the order received
        events[int(parent[x])].append(ev("receive", x, rx, "ramp"))
    for v in range(1, n):
        events[v].append(ev("send", v, "ramp", tx))
    for x in range(1, n):
        for u in range(int(parent[x]) + 1, x):
            events[u].append(ev("forward", x, rx, tx))
    return events


def routing_plan_2d(
    M: int, N: int, B: int, T_R: float = T_R_DEFAULT, pattern: str = "autogen"
) -> dict[str, Any]:
    """Router configurations that run the X-Y Reduce of a pattern on an M x N grid.

    The plan matches ``wc.build("wafer_xy_reduce", M * N, 4 * B,
    wafer_grid(M, N), pattern=pattern, T_R=T_R)``. Every row reduces to its
    column-0 PE with the pattern's tree on ``N`` PEs, then column 0 reduces to
    ``(0, 0)`` with the pattern's tree on ``M`` PEs (Auto-Gen picks each tree
    for ``B`` and ``T_R``). The module docstring gives the colouring rule and
    why it is safe.

    Parameters
    ----------
    M, N : int
        Rows and columns of the grid (PE ``(r, c)`` is rank ``r N + c``).
    B : int
        Vector length in wavelets.
    T_R : float
        Ramp latency in cycles (Auto-Gen's trees depend on it).
    pattern : {"star", "chain", "tree", "two_phase", "autogen"}
        The 1D pattern on each axis.

    Returns
    -------
    dict
        A JSON-ready dict with these keys:

        * ``M``, ``N``, ``B``, ``T_R`` and ``pattern``.
        * ``row_parent`` and ``column_parent``, the two 1D trees.
        * ``colours`` (the colours used), ``num_colours`` and
          ``colours_available`` (24).
        * ``control_wavelets``, the number of streams that end with one.
        * ``max_configurations_per_colour`` and ``routers_over_limit``,
          the number of routers with more than ``configurations_per_colour``
          (4, what the WSE stores) on some colour. Those routers need a
          teardown to reconfigure.
        * ``pes``: per rank its ``row``, ``col``, ``parent`` (the rank it
          sends to, -1 at the root), ``phase`` (``"row"``, ``"column"`` or
          ``None``), the ``colour`` of its stream, ``control_wavelet``, and
          ``configurations``. These are the events of its router in time
          order, each with an ``event`` (``receive``, ``send`` or
          ``forward``), a ``colour``, an ``rx -> tx`` direction and the
          ``stream`` (the sending rank).

    Raises
    ------
    ValueError
        For a pattern not listed, ``M`` or ``N`` outside ``[1, 65536]``,
        ``B < 1`` or ``T_R < 0``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> plan = wafer.routing_plan_2d(3, 3, 16)
    >>> sorted(plan)
    ['B', 'M', 'N', 'T_R', 'colours', 'colours_available', 'column_parent',
    'configurations_per_colour', 'control_wavelets', 'format',
    'max_configurations_per_colour', 'num_colours', 'pattern', 'pes',
    'routers_over_limit', 'row_parent', 'version']
    """
    m = as_int(M, "M", 1, MAX_DP_P)
    n = as_int(N, "N", 1, MAX_DP_P)
    b = as_int(B, "B", 1, 1 << 40)
    t_r = as_ramp_latency(T_R)
    if pattern not in REDUCE_ALGORITHMS:
        raise ValueError(
            f"pattern must be one of {', '.join(REDUCE_ALGORITHMS)}, got {pattern!r}"
        )
    row = np.asarray(pattern_tree(pattern, n, b, t_r), dtype=np.int64)
    col = np.asarray(pattern_tree(pattern, m, b, t_r), dtype=np.int64)
    row_colour = np.asarray(_ROW_COLOURS)[_depths(row) % 2]
    col_colour = np.asarray(_COLUMN_COLOURS)[_depths(col) % 2]
    row_events = _line_events(row, row_colour, "east", "west")
    col_events = _line_events(col, col_colour, "south", "north")

    def rank(r: int, c: int) -> int:
        return r * n + c

    def on(events: list[dict[str, Any]], rank_of: Any) -> list[dict[str, Any]]:
        return [{**e, "stream": rank_of(e["stream"])} for e in events]

    configs: list[list[dict[str, Any]]] = []
    for r in range(m):
        for c in range(n):
            # Column 0 takes its row first, then column 0's traffic (the
            # builder's order: a column-0 PE takes its row's streams first).
            evs = on(row_events[c], lambda x, r=r: rank(r, x))
            if c == 0:
                evs += on(col_events[r], lambda x: rank(x, 0))
            configs.append(evs)
    # Control wavelets: a stream ends with one when a router on its path has
    # a further configuration on the stream's colour (so that it advances).
    control = [False] * (m * n)
    most = over = 0
    for cfgs in configs:
        last: dict[int, int] = {}
        count: dict[int, int] = {}
        for i, cfg in enumerate(cfgs):
            last[cfg["colour"]] = i
            count[cfg["colour"]] = count.get(cfg["colour"], 0) + 1
        most = max([most, *count.values()])
        over += max(count.values(), default=0) > CONFIGURATIONS_PER_COLOUR
        for i, cfg in enumerate(cfgs):
            if i < last[cfg["colour"]]:
                control[cfg["stream"]] = True
    pes = []
    for r in range(m):
        for c in range(n):
            v = rank(r, c)
            if c > 0:
                parent, phase, colour = rank(r, int(row[c])), "row", int(row_colour[c])
            elif r > 0:
                parent, phase, colour = (
                    rank(int(col[r]), 0),
                    "column",
                    int(col_colour[r]),
                )
            else:
                parent, phase, colour = -1, None, None
            pes.append(
                {
                    "pe": v,
                    "row": r,
                    "col": c,
                    "parent": parent,
                    "phase": phase,
                    "colour": colour,
                    "control_wavelet": bool(control[v]),
                    "configurations": configs[v],
                }
            )
    used = sorted({p["colour"] for p in pes if p["colour"] is not None})
    return {
        "format": "wafercoll-wafer-routing-2d",
        "version": 1,
        "M": m,
        "N": n,
        "B": b,
        "T_R": t_r,
        "pattern": pattern,
        "row_parent": row.tolist(),
        "column_parent": col.tolist(),
        "colours": used,
        "num_colours": len(used),
        "colours_available": COLOURS_AVAILABLE,
        "control_wavelets": int(sum(control)),
        "max_configurations_per_colour": most,
        "configurations_per_colour": CONFIGURATIONS_PER_COLOUR,
        "routers_over_limit": over,
        "pes": pes,
    }


def routing_plan_2d_json(
    M: int,
    N: int,
    B: int,
    T_R: float = T_R_DEFAULT,
    pattern: str = "autogen",
    indent: int | None = 1,
) -> str:
    """:func:`routing_plan_2d` as JSON text.

    Examples
    --------
    >>> import json
    >>> from wafercoll import wafer
    >>> plan = json.loads(wafer.routing_plan_2d_json(3, 3, 16, indent=None))
    >>> plan == wafer.routing_plan_2d(3, 3, 16)
    True
    """
    return json.dumps(routing_plan_2d(M, N, B, T_R, pattern), indent=indent)


def colour_of_transfers(schedule: Schedule, plan: dict[str, Any]) -> np.ndarray:
    """The colour of every transfer of a schedule, taken from a routing plan.

    A transfer from rank ``s`` carries the stream of ``s``. It must go to the
    plan's parent of ``s``, and it takes that stream's colour. This holds
    however the stream is cut into blocks (``wavelets_per_block``).

    Parameters
    ----------
    schedule : Schedule
        Typically ``wc.build("wafer_xy_reduce", M * N, 4 * B, wafer_grid(M, N),
        pattern=...)`` with the plan's ``M``, ``N``, ``B``, ``T_R`` and
        ``pattern``.
    plan : dict
        A :func:`routing_plan_2d` (or its JSON, parsed).

    Returns
    -------
    ndarray of int64, shape (num_transfers,)

    Raises
    ------
    ValueError
        If the schedule has a different number of ranks, or a transfer that
        is not a stream of the plan.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import wafer
    >>> grid = wafer.wafer_grid(3, 3)
    >>> s = wc.build("wafer_xy_reduce", 9, 4 * 16, topology=grid, pattern="autogen")
    >>> colours = wafer.colour_of_transfers(s, wafer.routing_plan_2d(3, 3, 16))
    >>> sorted(set(colours.tolist()))
    [0, 1, 2]
    """
    pes = plan["pes"]
    if schedule.num_ranks != len(pes):
        raise ValueError(
            f"schedule has {schedule.num_ranks} ranks, the plan {len(pes)} PEs"
        )
    out = np.empty(schedule.num_transfers, dtype=np.int64)
    for i in range(schedule.num_transfers):
        t = schedule.transfer(i)
        pe = pes[int(t["src"])]
        if list(t["dst"]) != [pe["parent"]] or pe["colour"] is None:
            raise ValueError(
                f"transfer {i} ({t['src']} -> {t['dst']}) is not a stream of the "
                f"plan (PE {t['src']} sends to {pe['parent']})"
            )
        out[i] = pe["colour"]
    return out


# -- the check in the simulator ----------------------------------------------------
def _predecessors(schedule: Schedule, topology: Topology) -> dict[int, dict[int, int]]:
    """Per transfer, the stage before each of its links and ejection ramps.

    Keys are link ids, and ``-1 - d`` for the ejection ramp at endpoint ``d``.
    Values are the link before that stage, or -1 for the source's injection
    ramp. A multicast's routes from one source form a tree, so the
    predecessor is unique.
    """
    out: dict[int, dict[int, int]] = {}
    for i in range(schedule.num_transfers):
        t = schedule.transfer(i)
        pred: dict[int, int] = {}
        for d in t["dst"]:
            prev = -1
            for link in topology.route(int(t["src"]), int(d)).tolist():
                pred[link] = prev
                prev = link
            pred[-1 - int(d)] = prev
        out[i] = pred
    return out


def _direction(topology: Topology, router: int, link: int) -> str:
    """The input a link comes from, seen from ``router`` (or ``"ramp"``)."""
    if link < 0:
        return "ramp"
    src = int(topology.links["src"][link])
    if topology.kind == "mesh":
        (r, c), (sr, sc) = topology.coords(router), topology.coords(src)
        names = {(0, 1): "east", (0, -1): "west", (1, 0): "south", (-1, 0): "north"}
        key = (int(sr) - int(r), int(sc) - int(c))
        if key in names:
            return names[key]
    return f"node {src}"


def check_colour_collisions(
    schedule: Schedule,
    topology: Topology,
    colours: Any,
    network: NetworkModel | None = None,
    *,
    rule: str = "accept",
) -> dict[str, Any]:
    """Simulate a schedule and find wavelets of one colour meeting in a router.

    Parameters
    ----------
    schedule : Schedule
    topology : Topology
        Rank ``r`` runs on endpoint ``r``.
    colours : array-like of int, shape (num_transfers,)
        The colour of every transfer (:func:`colour_of_transfers`).
    network : NetworkModel, optional
        Default :func:`wse2_network` (which has the clock and ramps that
        the check needs). The model must have a ``clock_Hz``.
    rule : {"accept", "arrive"}
        When a wavelet is at a router, as described in the module docstring.
        With ``"accept"`` it is the cycle the router serves the wavelet on
        (the start of its next stage). With ``"arrive"`` it is the cycle the
        wavelet reaches the router (the start of the stage into it plus that
        stage's latency).

    Returns
    -------
    dict
        * ``rule``, ``cycles`` (the makespan) and ``events`` (wavelet visits
          to routers checked).
        * ``shared_cycles``: how many times two or more wavelets of one
          colour were at one router in one cycle, from any inputs.
        * ``num_collisions``: how many of those times the wavelets came from
          two or more different inputs.
        * ``collisions``: the first 100 of them, in order of router and
          cycle. Each has a ``router``, a ``cycle``, a ``colour``, the
          ``transfers`` and their ``inputs`` (``"ramp"`` or a direction).

    Raises
    ------
    ValueError
        For a wrong number of colours, a network without a clock, or an
        unknown rule (and whatever :func:`wafercoll.simulate` raises).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import wafer
    >>> grid = wafer.wafer_grid(3, 3)
    >>> s = wc.build("wafer_xy_reduce", 9, 4 * 16, topology=grid, pattern="autogen")
    >>> colours = wafer.colour_of_transfers(s, wafer.routing_plan_2d(3, 3, 16))
    >>> report = wafer.check_colour_collisions(s, grid, colours)
    >>> report["collisions"]
    []
    """
    col = np.asarray(colours, dtype=np.int64).reshape(-1)
    if col.size != schedule.num_transfers:
        raise ValueError(
            f"colours has {col.size} entries, the schedule {schedule.num_transfers} "
            "transfers"
        )
    if rule not in _RULES:
        raise ValueError(f"rule must be 'accept' or 'arrive', got {rule!r}")
    net = wse2_network() if network is None else network
    if net.clock_Hz is None:
        raise ValueError("network must have a clock_Hz to count cycles")
    result = simulate(schedule, topology, net, trace=True)
    tr = result.trace()
    kind, link, endpoint = tr["kind"], tr["link"], tr["endpoint"]
    transfer, start = tr["transfer"].astype(np.int64), tr["start_s"]
    src, dst = topology.links["src"], topology.links["dst"]
    if rule == "accept":
        # Router u serves link u -> v; router d serves d's ejection ramp.
        keep = kind != 1
        safe_link = np.where(kind == 0, link, 0)
        router = np.where(kind == 0, src[safe_link], endpoint)
        when = start
        preds = _predecessors(schedule, topology)
        stage = np.where(kind == 0, link, -1 - endpoint)
        inputs = np.asarray(
            [
                preds[int(t)][int(s)]
                for t, s in zip(transfer[keep], stage[keep], strict=True)
            ],
            dtype=np.int64,
        )
    else:
        # A link u -> v reaches router v, and d's injection ramp reaches router d.
        keep = kind != 2
        safe_link = np.where(kind == 0, link, 0)
        router = np.where(kind == 0, dst[safe_link], endpoint)
        lat = topology.links["latency_s"][safe_link] + net.hop_latency_s
        when = start + np.where(kind == 0, lat, net.port_latency_s)
        inputs = np.where(kind == 0, link, -1)[keep]
    router = router[keep].astype(np.int64)
    cycle = np.rint(when[keep] * net.clock_Hz).astype(np.int64)
    colour = col[transfer[keep]]
    transfer = transfer[keep]
    # Group the visits by (router, cycle, colour). A group is shared when it
    # holds several wavelets, and a collision when they came in on different
    # inputs (one input delivers one wavelet per cycle).
    order = np.lexsort((inputs, colour, cycle, router))
    key = np.stack([router, cycle, colour])[:, order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = np.any(key[:, 1:] != key[:, :-1], axis=0)
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], order.size)
    sizes = ends - starts
    ins = inputs[order]
    mixed = (sizes > 1) & (ins[starts] != ins[ends - 1])
    collisions = []
    for g in np.flatnonzero(mixed)[:_MAX_REPORTED]:
        idx = order[starts[g] : ends[g]]
        r = int(router[idx[0]])
        collisions.append(
            {
                "router": r,
                "cycle": int(cycle[idx[0]]),
                "colour": int(colour[idx[0]]),
                "transfers": [int(t) for t in transfer[idx]],
                "inputs": [_direction(topology, r, int(x)) for x in inputs[idx]],
            }
        )
    return {
        "rule": rule,
        "cycles": int(np.rint(result.time_s * net.clock_Hz)),
        "events": int(order.size),
        "shared_cycles": int(np.count_nonzero(sizes > 1)),
        "num_collisions": int(np.count_nonzero(mixed)),
        "collisions": collisions,
    }
