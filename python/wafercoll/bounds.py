"""Lower bounds on the time of a collective on any topology, under a network model.

:func:`lower_bound` answers "how fast could *any* schedule of this collective
be on this machine?" under the simulator's model (:mod:`wafercoll.simulate`),
so that every :class:`~wafercoll.SimResult` can state its optimality
ratio (:func:`result_bound`, :func:`optimality_ratio`).
:func:`schedule_lower_bound` answers the narrower "how fast could *this*
schedule be?" from the bytes it puts on each link and endpoint, whatever the
timing and whether or not it computes its collective; the advisor uses it to
skip simulations that cannot win.

What the collective bounds assume: the schedule computes its collective
(:func:`wafercoll.verify` accepts it) from arbitrary inputs, with the
participants, root, block sizes and block owners the bound is given
(:func:`collective_bound` and :func:`result_bound` take them from the
schedule; :func:`lower_bound` cuts a reduce-scatter's or allgather's vector
into one block per rank, block ``r`` owned by rank ``r``); ranks sit on
distinct endpoints and messages follow the topology's routes. A schedule
that states no collective (``"unknown"``, e.g. an imported GOAL or Chakra
file) asks for nothing but its own messages: its bound is that of any
schedule sending the same messages (the same bytes from each source to each
destination) however they are timed.

Every bound is the largest of several components, each a proof on its own:

``latency``
    Some participant needs data from the participant farthest from it (in
    link latency + ``hop_latency_s`` along the topology's shortest path):
    ``alpha + 2 port_latency + max dist``. One round is all the model forces:
    a direct exchange (everyone multicasts its vector to everyone) has a
    single message on every dependency chain. Blocks of 0 B count: their
    contributions must arrive like any others. For ``"unknown"``: the
    farthest message, even one of 0 B (the simulator charges it the start-up
    and the latencies).
``injection`` / ``ejection``
    What each endpoint must send or receive, over what it can send or receive
    through its links (and its ports, when the model has ports). In an
    allreduce every participant must send each element of its input at least
    once (its contribution leaves it) and receive each element at least once
    (the others' contributions arrive); in a reduce the root receives, in a
    broadcast the root sends, and so on.
``ejection_total``
    All receptions together, over the links into the ranks' endpoints (and,
    with ports, over their ejection ports). Bytes cannot enter a link before
    the start-up and must leave it its latency ``l`` (and the ejection
    port's) before the end, so by time ``T`` a link of bandwidth ``b_l`` has
    delivered at most ``b_l max(0, T - t_l)`` with ``t_l = alpha +
    2 port_latency + l``; the bound is the smallest ``T`` with
    ``sum_l b_l max(0, T - t_l) >= R`` (water-filling: a link of higher
    latency only helps once ``T`` passes its ``t_l``).
    For an allreduce of ``m`` participants every element needs at
    least ``2 (m - 1)`` receptions: this is the one-way gossip count (every
    partial sum is a set of contributions; a multicast to ``k`` ranks counts
    as ``k`` one-way calls, and messages take positive time). Proof sketch:
    let ``t0`` be the earliest time a participant ``v`` holds the complete
    sum of an element. (a) Each other participant ``u``'s contribution has
    reached ``v`` by ``t0`` along a chain of messages; the chain's first
    reception is of a message sent by ``u``, delivered before ``t0`` or, at
    ``t0``, into ``v``: ``m - 1`` receptions of distinct senders. (b) Each
    participant ``w != v`` becomes complete on a reception into ``w`` at or
    after ``t0``: ``m - 1`` receptions by distinct receivers, none into
    ``v``. No reception is in both sets, so there are ``2 (m - 1)``. For
    uniform links of bandwidth ``b`` and degree ``d`` this is the classic
    ``2 (p - 1) S / (p d b)`` of bandwidth-optimal allreduce (Patarasuk and
    Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
    workstations", JPDC 69(2), 2009). A reduce or a broadcast needs ``m - 1``
    receptions per element, a reduce-scatter or an allgather ``m - 1`` per
    element of every block.
``cut``
    For a cut of the topology into sides ``A`` and ``B``, the bytes that must
    cross from ``A`` to ``B`` over the bandwidth of the links from ``A`` to
    ``B``: ``S`` for an allreduce when both sides hold participants, ``S``
    into the root's side of a reduce, the blocks owned in ``B`` of a
    reduce-scatter, ... (the cut-set argument of network flow). The cuts
    tried: every prefix of rows and of columns of a grid, every node and
    socket of a cluster, and on other graphs of up to 2,000 nodes (the
    n150, custom topologies) a Stoer-Wagner global minimum cut and a
    Kernighan-Lin bisection (NetworkX).
``compute``
    An element summed over ``m`` participants needs ``m - 1`` reductions of
    ``gamma_s_per_byte`` each, spread at best over every rank's reduction
    unit, each busy at the earliest from the first delivery into its
    endpoint (water-filling again). 0 when nothing must be reduced. For
    ``"unknown"``, also each endpoint's own reduced bytes.

The block-moving collectives (``alltoall``, ``alltoallv``, ``gather``,
``scatter``) reduce nothing and replicate nothing: block ``b`` of ``w_b``
bytes must get from its owner ``o_b`` to its target ``t_b``. Proof sketch of
each component: every byte of ``b`` leaves ``o_b`` at least once and enters
``t_b`` at least once, so endpoint ``e`` sends at least the bytes of the
blocks it owns for others (the ``e``-th row sum of an alltoallv's matrix,
``(p - 1) / p`` of the send buffer for an alltoall) and receives at least
its column sum (``injection`` / ``ejection``); all receptions together are
at least ``sum_b w_b`` over the blocks that move (``ejection_total``); a cut
with ``o_b`` on side ``A`` and ``t_b`` on side ``B`` is crossed by ``b`` at
least once, so ``A -> B`` carries at least the bytes of those blocks
(``cut``: for an alltoall of ``S`` bytes per rank on a grid, the bisection
carries ``(p / 2)^2 S / p`` each way); and the message chain of each pair
that exchanges bytes crosses the shortest path between them (``latency``:
only pairs with ``w_b > 0``, so an alltoallv's zero entries force nothing).
There is no ``compute`` component.

Each byte component also adds the time no byte can avoid: the start-up
``alpha_s``, the port latencies and the latency of the links it is counted
on (bytes that cross a link of latency ``l`` into an endpoint must have left
that link ``l`` before the end); the per-endpoint components charge every
link of an endpoint the smallest of their latencies, the totals and the cuts
each link its own. The bound ignores packet and flit overheads,
store-and-forward delays, copy costs and the switch overhead, which only add
time, so it holds for every schedule the simulator can run; property tests
check it against every registered algorithm on every family and, with
Hypothesis, on random machines, network models and schedules
(``tests/test_bounds_property.py``).

Examples
--------
A unidirectional ring allreduce on a ring uses half of every endpoint's two
incoming links, so it runs at twice the bound; the bidirectional ring uses
both:

>>> import wafercoll as wc
>>> topo, net = wc.ring(8), wc.NetworkModel(1e9)
>>> b = wc.bounds.lower_bound(topo, net, "allreduce", 1 << 20)
>>> b.binding
'ejection_total'
>>> s = wc.build("generic_ring_allreduce", ranks=8, size_bytes=1 << 20)
>>> round(wc.simulate(s, topo, net).time_s / b.time_s, 3)
2.0
"""

from __future__ import annotations

import dataclasses
import html
from typing import Any

import numpy as np

from . import _core
from ._errors import ScheduleError
from ._util import as_int, html_table
from .network import NetworkModel, check_machine, check_schedule_inputs
from .schedule import COLLECTIVES, MOVING, Schedule, alltoallv_blocks
from .topology import Topology

__all__ = [
    "LowerBound",
    "collective_bound",
    "collective_request",
    "lower_bound",
    "optimality_ratio",
    "result_bound",
    "schedule_lower_bound",
]

#: Graphs up to this many nodes also get NetworkX's minimum cut and bisection.
MAX_GRAPH_CUT_NODES = 2000
#: Most grid prefixes tried per dimension (evenly spaced, the middle included).
MAX_GRID_CUTS = 64
#: Most sources of the shortest-path latency search.
MAX_LATENCY_SOURCES = 32


@dataclasses.dataclass(frozen=True)
class LowerBound:
    """A lower bound on a collective's time, with the components it is made of.

    Attributes
    ----------
    time_s : float
        The bound: the largest component.
    binding : str
        Name of the largest component.
    components : dict of str to float
        Every component's bound in seconds (see :mod:`wafercoll.bounds`).
    details : dict of str to str
        For each component, where it binds (the endpoint, the cut, the pair).
    collective : str
    size_bytes : int
    topology : str
        Name of the topology.
    network : str
        Name of the network model.
    """

    time_s: float
    binding: str
    components: dict[str, float]
    details: dict[str, str]
    collective: str
    size_bytes: int
    topology: str
    network: str

    def ratio(self, time_s: float) -> float:
        """``time_s`` over the bound (``inf`` when the bound is 0)."""
        t = float(time_s)
        return t / self.time_s if self.time_s > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (JSON-ready)."""
        return dataclasses.asdict(self)

    def __repr__(self) -> str:
        return (
            f"LowerBound({self.collective}, {self.size_bytes} B on {self.topology}: "
            f"{self.time_s:.6g} s, binding {self.binding})"
        )

    def _repr_html_(self) -> str:
        rows = [("bound", f"{self.time_s:.6g} s ({html.escape(self.binding)})")]
        for name, t in sorted(self.components.items(), key=lambda kv: -kv[1]):
            where = self.details.get(name, "")
            rows.append((name, f"{t:.6g} s" + (f": {where}" if where else "")))
        caption = (
            f"lower bound: {self.collective}, {self.size_bytes} B on "
            f"{self.topology} under {self.network}"
        )
        return html_table(caption, rows)


# ----------------------------------------------------------------------------
# What the collective demands of each endpoint and each cut


@dataclasses.dataclass
class _Demand:
    """Bytes a collective forces on endpoints and cuts (endpoint-indexed)."""

    kind: str
    size_bytes: int
    ranks: np.ndarray  # endpoint of every rank
    inputs: np.ndarray  # endpoints of the participants (input and output)
    root: int  # endpoint of the root (reduce, broadcast) or -1
    block_bytes: np.ndarray  # per block (reduce_scatter, allgather)
    block_owner: np.ndarray  # endpoint owning each block
    block_target: np.ndarray  # endpoint each block must reach (moving kinds)
    send: np.ndarray  # per endpoint
    recv: np.ndarray  # per endpoint
    recv_total: float
    reduce_total: float
    # "unknown" only: the messages themselves, at endpoints (_Traffic).
    traffic: _Traffic | None = None
    reduce_at: np.ndarray | None = None  # per endpoint: bytes reduced there
    # Switches reduce (switch ranks): messages go to and from routers along
    # routes of their own, so the endpoints' routes do not limit the links.
    in_network: bool = False

    def crossing(self, side_a: np.ndarray) -> tuple[float, float]:
        """Bytes that must cross A -> B and B -> A (``side_a``: endpoint mask)."""
        if self.traffic is not None:
            return self.traffic.crossing(side_a)
        S = float(self.size_bytes)
        in_a = side_a[self.inputs]
        ins_a, ins_b = bool(in_a.any()), bool((~in_a).any())
        if self.kind == "allreduce":
            both = ins_a and ins_b
            return (S, S) if both else (0.0, 0.0)
        if self.kind == "reduce":
            ra = bool(side_a[self.root])
            return (S if ins_a and not ra else 0.0, S if ins_b and ra else 0.0)
        if self.kind == "broadcast":
            ra = bool(side_a[self.root])
            return (S if ra and ins_b else 0.0, S if not ra and ins_a else 0.0)
        owner_a = side_a[self.block_owner]
        w = self.block_bytes
        if self.kind in MOVING:
            # Block b goes from its owner's side to its target's side.
            target_a = side_a[self.block_target]
            return float(w[owner_a & ~target_a].sum()), float(
                w[~owner_a & target_a].sum()
            )
        if self.kind == "reduce_scatter":
            # Block b's owner needs every input: it crosses into the owner's side.
            ab = float(w[~owner_a].sum()) if ins_a else 0.0
            ba = float(w[owner_a].sum()) if ins_b else 0.0
            return ab, ba
        # allgather: block b leaves its owner for every participant beyond.
        ab = float(w[owner_a].sum()) if ins_b else 0.0
        ba = float(w[~owner_a].sum()) if ins_a else 0.0
        return ab, ba


@dataclasses.dataclass(frozen=True)
class _Traffic:
    """The messages of a schedule that states no collective (``"unknown"``).

    Unicast transfers with the same source, destination and op are merged
    (their bytes add up); multicasts stay one message each. ``src`` and
    ``dst`` (CSR, ``dst_off``) are ranks, or endpoints after :meth:`at`.
    """

    src: np.ndarray
    dst_off: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray  # float64
    reduce: np.ndarray  # bool

    @classmethod
    def of(cls, schedule: Schedule) -> _Traffic:
        c = schedule._core
        src = np.asarray(c.src, dtype=np.int64)
        off = np.asarray(c.dst_offsets, dtype=np.int64)
        dst = np.asarray(c.dsts, dtype=np.int64)
        nb = np.asarray(schedule.transfer_bytes(), dtype=np.float64)
        red = np.asarray(c.op) == 1
        uni = np.diff(off) == 1
        p = schedule.num_ranks
        # One int64 per (source, destination, op): p < 2^24, so it fits.
        code = (src[uni] * p + dst[off[:-1][uni]]) * 2 + red[uni]
        uniq, inv = np.unique(code, return_inverse=True)
        sums = np.bincount(inv.ravel(), weights=nb[uni], minlength=len(uniq))
        keys = np.stack([uniq // 2 // p, uniq // 2 % p, uniq % 2])
        multi = np.flatnonzero(~uni)
        m_off = off[multi]
        m_len = off[multi + 1] - m_off
        m_dst = (
            np.concatenate([dst[a : a + n] for a, n in zip(m_off, m_len, strict=True)])
            if len(multi)
            else np.zeros(0, dtype=np.int64)
        )
        k = keys.shape[1]
        return cls(
            np.concatenate([keys[0], src[multi]]),
            np.concatenate([np.arange(k + 1), k + np.cumsum(m_len)]).astype(np.int64),
            np.concatenate([keys[1], m_dst]),
            np.concatenate([sums, nb[multi]]),
            np.concatenate([keys[2] == 1, red[multi]]),
        )

    def at(self, place: np.ndarray) -> _Traffic:
        """The same messages between the ranks' endpoints."""
        return _Traffic(
            place[self.src], self.dst_off, place[self.dst], self.nbytes, self.reduce
        )

    def per_dst(self, values: np.ndarray) -> np.ndarray:
        """A per-message array repeated for each of its destinations."""
        return np.repeat(values, np.diff(self.dst_off))

    def crossing(self, side_a: np.ndarray) -> tuple[float, float]:
        """Bytes from A that some destination in B needs, and the reverse."""
        if len(self.src) == 0:
            return 0.0, 0.0
        in_a = side_a[self.dst]
        starts = self.dst_off[:-1]
        any_a = np.logical_or.reduceat(in_a, starts)
        any_b = np.logical_or.reduceat(~in_a, starts)
        src_a = side_a[self.src]
        ab = float(self.nbytes[src_a & any_b].sum())
        ba = float(self.nbytes[~src_a & any_a].sum())
        return ab, ba


def _traffic_demand(
    traffic: _Traffic, size_bytes: int, place: np.ndarray, endpoints: int
) -> _Demand:
    """What the messages themselves force, wherever they are routed."""
    tr = traffic.at(place)
    send = np.bincount(tr.src, weights=tr.nbytes, minlength=endpoints)
    got = tr.per_dst(tr.nbytes)
    recv = np.bincount(tr.dst, weights=got, minlength=endpoints)
    red = np.bincount(tr.dst, weights=got * tr.per_dst(tr.reduce), minlength=endpoints)
    ends = np.unique(np.concatenate([tr.src, tr.dst]))
    return _Demand(
        "unknown",
        int(size_bytes),
        place,
        ends,
        -1,
        np.zeros(0),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        send,
        recv,
        float(got.sum()),
        float(red.sum()),
        tr,
        red,
    )


def _demand(
    kind: str,
    size_bytes: int,
    place: np.ndarray,
    participants: np.ndarray,
    root: int | None,
    block_bytes: np.ndarray,
    owners: np.ndarray | None,
    endpoints: int,
    targets: np.ndarray | None = None,
    in_network: bool = False,
) -> _Demand:
    """Per-endpoint and total demands of a collective (see the module text).

    ``in_network``: switches may reduce (switch ranks). Every endpoint still
    sends and receives what it must, and every cut still carries what its
    sides need of each other, but the receptions and additions that
    reductions at endpoints force are no longer forced: a switch adds the
    inputs, and the reduced result is received once per endpoint that needs
    it.
    """
    S = float(size_bytes)
    part = place[participants]
    m = len(part)
    send = np.zeros(endpoints)
    recv = np.zeros(endpoints)
    root_e = int(place[root]) if root is not None else -1
    owner_e = place[owners] if owners is not None else np.zeros(0, dtype=np.int64)
    w = np.asarray(block_bytes, dtype=np.float64) if owners is not None else np.zeros(0)
    recv_total = reduce_total = 0.0
    target_e = place[targets] if targets is not None else np.zeros(0, dtype=np.int64)
    if kind in MOVING:
        # Every byte of a block leaves its owner and enters its target at
        # least once (and nothing else is forced): injection / ejection are
        # the matrix's row and column sums, and a cut carries the blocks
        # whose owner and target it separates.
        away = (owner_e != target_e) & (w > 0)
        np.add.at(send, owner_e[away], w[away])
        np.add.at(recv, target_e[away], w[away])
        recv_total = float(w[away].sum())
    elif kind == "allreduce" and m >= 2:
        send[part] = S
        recv[part] = S
        recv_total = 2.0 * (m - 1) * S
        reduce_total = (m - 1) * S
    elif kind in ("reduce", "broadcast"):  # mirror images of each other
        others = part[part != root_e]
        if len(others):
            into_root = kind == "reduce"
            send[others if into_root else root_e] = S
            recv[root_e if into_root else others] = S
            recv_total = len(others) * S
            reduce_total = max(m - 1, 0) * S if into_root else 0.0
    elif kind in ("reduce_scatter", "allgather"):
        is_part = np.zeros(endpoints, dtype=bool)
        is_part[part] = True
        owner_is_part = is_part[owner_e]
        if kind == "allgather":  # a block without input stays zero: no traffic
            w = w * owner_is_part
        # Participants other than the block's owner.
        others = m - owner_is_part.astype(np.int64)
        has_others = others > 0
        recv_total = float((w * others).sum())
        # Bytes of the blocks each endpoint owns; a participant receives
        # (reduce-scatter: sends) every block it does not own.
        own = np.zeros(endpoints)
        np.add.at(own, owner_e, w)
        not_owned = float(w.sum()) - own[part]
        if kind == "reduce_scatter":
            np.add.at(recv, owner_e[has_others], w[has_others])
            send[part] = not_owned
            reduce_total = float((w * max(m - 1, 0)).sum())
        else:
            np.add.at(send, owner_e[has_others], w[has_others])
            recv[part] = not_owned
    if in_network and kind in ("allreduce", "reduce", "reduce_scatter"):
        reduce_total = 0.0
        if kind == "allreduce" and m >= 2:
            recv_total = m * S  # the result, once at every participant
        elif kind == "reduce":
            recv_total = S if len(part[part != root_e]) else 0.0
        elif kind == "reduce_scatter":
            recv_total = float(recv.sum())  # each owner, its block once
    return _Demand(
        kind,
        int(size_bytes),
        place,
        part,
        root_e,
        w,
        owner_e,
        target_e,
        send,
        recv,
        recv_total,
        reduce_total,
    )


# ----------------------------------------------------------------------------
# What the machine can do


@dataclasses.dataclass
class _Machine:
    """Link capacities and latencies of a topology under a network model."""

    src: np.ndarray
    dst: np.ndarray
    bw: np.ndarray  # per link, B/s
    lat: np.ndarray  # per link: own latency + hop latency
    in_cap: np.ndarray  # per endpoint: sum of incoming link bandwidths
    out_cap: np.ndarray
    in_lat: np.ndarray  # per endpoint: smallest incoming link latency
    out_lat: np.ndarray
    port_cap: np.ndarray | None  # per endpoint: ports x port bandwidth
    pre: float  # alpha + injection port latency
    port_lat: float  # ejection port latency (0 without ports)
    nodes: int
    endpoints: int
    last: np.ndarray | None = None  # per link: some route ends on it


def _machine(topology: Topology, network: NetworkModel) -> _Machine:
    links = topology.links
    src = links["src"].astype(np.int64)
    dst = links["dst"].astype(np.int64)
    if network.bandwidth_Bps is not None:
        bw = np.full(len(src), float(network.bandwidth_Bps))
    else:
        bw = links["bandwidth_Bps"].astype(np.float64)
    lat = links["latency_s"].astype(np.float64) + network.hop_latency_s
    n, e = topology.num_nodes, topology.num_endpoints
    port_cap = None
    port_lat = 0.0
    pre = network.alpha_s
    if network.ports is not None:
        if network.port_bandwidth_Bps is not None:
            pbw = np.full(e, float(network.port_bandwidth_Bps))
        elif network.bandwidth_Bps is not None:
            pbw = np.full(e, float(network.bandwidth_Bps))
        else:  # the fastest link at the endpoint
            fastest = np.zeros(n)
            np.maximum.at(fastest, dst, bw)
            np.maximum.at(fastest, src, bw)
            pbw = fastest[:e]
        port_cap = network.ports * pbw
        port_lat = network.port_latency_s
        pre += port_lat
    mach = _Machine(
        src, dst, bw, lat, *(np.zeros(0),) * 4, port_cap, pre, port_lat, n, e
    )
    every = np.ones(len(src), dtype=bool)
    _endpoint_links(mach, every, every)
    return mach


def _endpoint_links(mach: _Machine, first: np.ndarray, last: np.ndarray) -> None:
    """Set each endpoint's send and receive capacity and smallest latency.

    Sends leave on the ``first`` links, receptions arrive on the ``last``.
    """
    n, e = mach.nodes, mach.endpoints
    mach.out_cap = np.bincount(mach.src[first], weights=mach.bw[first], minlength=n)[:e]
    mach.in_cap = np.bincount(mach.dst[last], weights=mach.bw[last], minlength=n)[:e]
    out_lat = np.full(n, np.inf)
    in_lat = np.full(n, np.inf)
    np.minimum.at(out_lat, mach.src[first], mach.lat[first])
    np.minimum.at(in_lat, mach.dst[last], mach.lat[last])
    mach.out_lat, mach.in_lat = out_lat[:e], in_lat[:e]
    mach.last = last


#: Up to this many ranks, endpoint capacities count only the links that the
#: routes between ranks start or end on (p^2 routes are looked up).
MAX_ROUTED_RANKS = 512


def _restrict_to_routes(topology: Topology, mach: _Machine, ends: np.ndarray) -> None:
    """Keep in ``in_cap`` / ``out_cap`` only links some route between ranks uses.

    Routes are the topology's, fixed: bytes from ``e`` leave on the first
    link of a route from ``e``, so links no route starts on carry none of
    ``e``'s sends (on the n150, two neighbours' exchange uses one of four
    links). Skipped above :data:`MAX_ROUTED_RANKS` ranks (the bound stays
    valid, only looser).
    """
    if len(ends) > MAX_ROUTED_RANKS or len(ends) < 2:
        return
    first = np.zeros(len(mach.src), dtype=bool)
    last = np.zeros(len(mach.src), dtype=bool)
    core = topology._core
    for a in ends.tolist():
        for b in ends.tolist():
            if a != b:
                route = core.route(a, b)
                if len(route):
                    first[route[0]] = True
                    last[route[-1]] = True
    _endpoint_links(mach, first, last)


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b`` with 0 where ``a`` is 0 and ``inf`` where only ``b`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a > 0, a / np.where(b > 0, b, 0.0), 0.0)
    return np.where((a > 0) & (b <= 0), np.inf, out)


def _water_fill(cap: np.ndarray, start: np.ndarray, need: float) -> float:
    """The smallest ``T`` with ``sum_i cap_i max(0, T - start_i) >= need``.

    Server ``i`` (a link, a port, a reduction unit) works at rate ``cap_i``
    from ``start_i`` on; ``T`` is when all of them together can have done
    ``need``. Servers with an infinite start never help. ``inf`` when no
    server can (no capacity), 0 for no need.
    """
    if need <= 0:
        return 0.0
    ok = np.isfinite(start) & (cap > 0)
    cap, start = cap[ok].astype(np.float64), start[ok].astype(np.float64)
    if len(cap) == 0:
        return float("inf")
    order = np.argsort(start, kind="stable")
    cap, start = cap[order], start[order]
    # With servers 0..k working, T = (need + sum cap_i start_i) / sum cap_i;
    # the first k whose T is no later than the next server's start.
    c = np.cumsum(cap)
    d = np.cumsum(cap * start)
    t = (need + d) / c
    nxt = np.append(start[1:], np.inf)
    k = int(np.argmax(t <= nxt))
    return float(max(t[k], start[k]))


def _endpoint_terms(
    name: str, need: np.ndarray, cap: np.ndarray, lat: np.ndarray, mach: _Machine
) -> tuple[float, str]:
    """``max_e pre + need_e / cap_e + lat_e + port_lat`` over needy endpoints.

    ``lat_e`` is the smallest latency of the endpoint's links and ``cap_e``
    their total bandwidth: every one of them must stop carrying the
    endpoint's bytes ``lat_e + port_lat`` before the end at the latest.
    """
    need_e = need[: mach.endpoints]
    used = need_e > 0
    if not used.any():
        return 0.0, ""
    t = np.full(mach.endpoints, -np.inf)
    lat_u = np.where(np.isfinite(lat), lat, 0.0)
    t[used] = (
        mach.pre + _safe_div(need_e[used], cap[used]) + lat_u[used] + mach.port_lat
    )
    e = int(np.argmax(t))
    how = "sends" if name == "injection" else "receives"
    return float(t[e]), f"endpoint {e} {how} {need_e[e]:.6g} B"


def _cut_candidates(topology: Topology, mach: _Machine) -> list[tuple[str, np.ndarray]]:
    """Node masks (side A) of the cuts worth trying on this topology."""
    cuts: list[tuple[str, np.ndarray]] = []
    n, e = mach.nodes, mach.endpoints
    kind = topology.kind
    if kind in ("line", "ring", "mesh", "torus") and n == e:
        rows, cols = topology.shape
        ids = np.arange(n)
        r, c = ids // cols, ids % cols
        for dim, size, coord in (("col", cols, c), ("row", rows, r)):
            if size < 2:
                continue
            picks = np.unique(
                np.concatenate(
                    [
                        np.linspace(1, size - 1, min(size - 1, MAX_GRID_CUTS)),
                        [size // 2],
                    ]
                ).astype(np.int64)
            )
            for k in picks:
                cuts.append((f"{dim} < {int(k)}", coord < k))
    if kind == "cluster":
        node_of = topology.node_of
        sock_of = topology.socket_of
        for g in range(int(node_of.max()) + 1):
            cuts.append((f"node {g}", _with_hidden(node_of == g, mach)))
        if topology.sockets > 1:
            key = node_of.astype(np.int64) * topology.sockets + sock_of
            for g in np.unique(key):
                cuts.append(
                    (
                        f"node {int(g) // topology.sockets} socket "
                        f"{int(g) % topology.sockets}",
                        _with_hidden(key == g, mach),
                    )
                )
    if not cuts and 2 <= n <= MAX_GRAPH_CUT_NODES:  # no structure to go by
        cuts.extend(_graph_cuts(mach))
    return cuts


def _with_hidden(endpoint_mask: np.ndarray, mach: _Machine) -> np.ndarray:
    """Extend an endpoint mask to hidden routers.

    A router joins side A when more of its link bandwidth goes to A than to B
    (any choice gives a valid cut; this one keeps the cut small).
    """
    side = np.zeros(mach.nodes, dtype=bool)
    side[: mach.endpoints] = endpoint_mask
    if mach.nodes == mach.endpoints:
        return side
    hidden = np.arange(mach.endpoints, mach.nodes)
    for _ in range(3):
        toward_a = np.bincount(
            mach.src, weights=mach.bw * side[mach.dst], minlength=mach.nodes
        )
        toward_b = np.bincount(
            mach.src, weights=mach.bw * ~side[mach.dst], minlength=mach.nodes
        )
        side[hidden] = toward_a[hidden] > toward_b[hidden]
    return side


def _graph_cuts(mach: _Machine) -> list[tuple[str, np.ndarray]]:
    """Stoer-Wagner minimum cut and Kernighan-Lin bisection (NetworkX)."""
    try:
        import networkx as nx
    except ImportError:  # pragma: no cover - networkx is a dependency
        return []
    g = nx.Graph()
    g.add_nodes_from(range(mach.nodes))
    for u, v, b in zip(
        mach.src.tolist(), mach.dst.tolist(), mach.bw.tolist(), strict=True
    ):
        if u == v:
            continue
        w = g.get_edge_data(u, v, {"weight": 0.0})["weight"]
        g.add_edge(u, v, weight=w + b)

    def side(members: Any) -> np.ndarray:
        mask = np.zeros(mach.nodes, dtype=bool)
        mask[list(members)] = True
        return mask

    if not nx.is_connected(g):
        comp = next(iter(nx.connected_components(g)))
        return [("a connected component", side(comp))]
    _, (cut_a, _) = nx.stoer_wagner(g)
    half_a, _ = nx.algorithms.community.kernighan_lin_bisection(g, seed=0)
    return [
        ("Stoer-Wagner minimum cut", side(cut_a)),
        ("Kernighan-Lin bisection", side(half_a)),
    ]


def _cut_term(
    demand: _Demand, mach: _Machine, cuts: list[tuple[str, np.ndarray]]
) -> tuple[float, str]:
    best, where = 0.0, ""
    for label, side in cuts:
        side_e = side[: mach.endpoints]
        ab, ba = demand.crossing(side_e)
        for need, fwd in ((ab, True), (ba, False)):
            if need <= 0:
                continue
            frm, to = (side, ~side) if fwd else (~side, side)
            crossing = frm[mach.src] & to[mach.dst]
            cap = float(mach.bw[crossing].sum())
            # Each crossing link carries from pre on, until its latency (and
            # the ejection port's) before the end.
            start = mach.pre + mach.lat[crossing] + mach.port_lat
            t = _water_fill(mach.bw[crossing], start, need)
            if t > best:
                arrow = "A -> B" if fwd else "B -> A"
                best = t
                where = f"{label}: {need:.6g} B {arrow} over {cap:.6g} B/s"
    return best, where


def _latency_term(demand: _Demand, mach: _Machine) -> tuple[float, str]:
    """``alpha + ports + max`` shortest-path latency over the pairs that must talk."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    kind = demand.kind
    part = demand.inputs
    # Blocks of 0 B count too: the verifier asks for their contributions,
    # and the simulator charges a message of 0 B its latencies.
    owners = np.unique(demand.block_owner)
    if kind == "unknown":
        return _pairs_latency(demand.traffic, mach)
    if kind == "reduce":
        sources, targets = part[part != demand.root], np.array([demand.root])
    elif kind == "broadcast":
        sources, targets = np.array([demand.root]), part[part != demand.root]
    elif kind == "reduce_scatter":
        sources, targets = part, owners
    elif kind == "allgather":
        sources, targets = owners, part
    elif kind in MOVING:
        return _pair_latency(demand, mach)
    else:
        sources, targets = part, part
    if (
        len(sources) == 0
        or len(targets) == 0
        or (len(part) < 2 and kind == "allreduce")
    ):
        return 0.0, ""
    # Shortest paths on latency + a tiny epsilon (SciPy drops zero-weight
    # entries), corrected below by the most hops any path can have.
    eps = 1e-30
    graph = csr_matrix(
        (mach.lat + eps, (mach.src, mach.dst)), shape=(mach.nodes, mach.nodes)
    )
    step = max(1, -(-len(sources) // MAX_LATENCY_SOURCES))
    picked = sources[::step]
    if kind == "reduce":  # one target: search backwards from it
        dist = dijkstra(graph.T.tocsr(), indices=targets)
        row = dist[0, sources]
        k = int(np.argmax(np.where(np.isfinite(row), row, -1.0)))
        d = float(row[k])
        pair = (int(sources[k]), int(targets[0]))
    else:
        dist = dijkstra(graph, indices=picked)[:, targets]
        mask = picked[:, None] != targets[None, :]
        dist = np.where(mask & np.isfinite(dist), dist, -1.0)
        i, j = np.unravel_index(int(np.argmax(dist)), dist.shape)
        d = float(dist[i, j])
        pair = (int(picked[i]), int(targets[j]))
    if d < 0:
        return 0.0, ""
    d = max(0.0, d - eps * mach.nodes)
    t = mach.pre + d + mach.port_lat
    return t, f"endpoint {pair[0]} to {pair[1]}: {d:.6g} s of path latency"


def _pair_latency(demand: _Demand, mach: _Machine) -> tuple[float, str]:
    """Latency of the farthest (owner, target) pair a moving block joins.

    Only pairs that exchange bytes must talk (an alltoallv's zero entries
    need no message).
    """
    w = demand.block_bytes
    go = (demand.block_owner != demand.block_target) & (w > 0)
    return _farthest(demand.block_owner[go], demand.block_target[go], mach)


def _pairs_latency(traffic: _Traffic | None, mach: _Machine) -> tuple[float, str]:
    """``pre + port_lat +`` the longest shortest-path latency of a message.

    Every message (even of 0 B) is charged its start-up and the latencies
    along its route, which is no shorter than the shortest path.
    """
    if traffic is None or len(traffic.src) == 0:
        return 0.0, ""
    return _farthest(traffic.per_dst(traffic.src), traffic.dst, mach)


def _farthest(src: np.ndarray, dst: np.ndarray, mach: _Machine) -> tuple[float, str]:
    """``pre + port_lat +`` the longest shortest-path latency of a pair.

    The pairs are ``src[i] -> dst[i]``; up to :data:`MAX_LATENCY_SOURCES`
    sources are searched (any subset of the sources gives a valid, smaller,
    bound).
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import dijkstra

    if len(src) == 0:
        return 0.0, ""
    sources = np.unique(src)
    step = max(1, -(-len(sources) // MAX_LATENCY_SOURCES))
    picked = sources[::step]
    eps = 1e-30
    graph = csr_matrix(
        (mach.lat + eps, (mach.src, mach.dst)), shape=(mach.nodes, mach.nodes)
    )
    dist = dijkstra(graph, indices=picked)
    row = np.searchsorted(picked, src)
    row_ok = (row < len(picked)) & (picked[np.minimum(row, len(picked) - 1)] == src)
    if not row_ok.any():
        return 0.0, ""
    d = dist[row[row_ok], dst[row_ok]]
    d = np.where(np.isfinite(d), d, -1.0)
    k = int(np.argmax(d))
    if d[k] < 0:
        return 0.0, ""
    a, b = int(src[row_ok][k]), int(dst[row_ok][k])
    lat = max(0.0, float(d[k]) - eps * mach.nodes)
    return (
        mach.pre + lat + mach.port_lat,
        f"endpoint {a} to {b}: {lat:.6g} s of path latency",
    )


def _bound(
    demand: _Demand,
    topology: Topology,
    network: NetworkModel,
    cuts: bool | list[tuple[str, np.ndarray]],
) -> LowerBound:
    mach = _machine(topology, network)
    if not (demand.in_network or network.ecmp or network.spray):  # routes left
        _restrict_to_routes(topology, mach, np.unique(demand.ranks))
    comps: dict[str, float] = {}
    details: dict[str, str] = {}

    def put(name: str, value: tuple[float, str]) -> None:
        comps[name], details[name] = float(value[0]), value[1]

    put("latency", _latency_term(demand, mach))
    put(
        "injection",
        _endpoint_terms("injection", demand.send, mach.out_cap, mach.out_lat, mach),
    )
    put(
        "ejection",
        _endpoint_terms("ejection", demand.recv, mach.in_cap, mach.in_lat, mach),
    )
    if mach.port_cap is not None:
        inj = _endpoint_terms(
            "injection", demand.send, mach.port_cap, mach.out_lat, mach
        )
        ej = _endpoint_terms("ejection", demand.recv, mach.port_cap, mach.in_lat, mach)
        put("injection_ports", inj)
        put("ejection_ports", ej)
    # All receptions, over the links into the ranks' endpoints (and their
    # ports), each busy from its own earliest start (water-filling).
    if demand.recv_total > 0:
        ends = np.unique(demand.ranks)
        is_end = np.zeros(mach.nodes, dtype=bool)
        is_end[ends] = True
        into = is_end[mach.dst] & mach.last
        tail = mach.pre + mach.port_lat
        t = _water_fill(mach.bw[into], tail + mach.lat[into], demand.recv_total)
        put(
            "ejection_total",
            (
                t,
                f"{demand.recv_total:.6g} B received over "
                f"{float(mach.bw[into].sum()):.6g} B/s",
            ),
        )
        if mach.port_cap is not None:
            cap = mach.port_cap[ends]
            t = _water_fill(cap, tail + mach.in_lat[ends], demand.recv_total)
            put(
                "ejection_total_ports",
                (
                    t,
                    f"{demand.recv_total:.6g} B received over "
                    f"{float(cap.sum()):.6g} B/s of ports",
                ),
            )
    if demand.reduce_total > 0 and network.gamma_s_per_byte > 0:
        put("compute", _compute_term(demand, network, mach))
    cut_list = _cut_candidates(topology, mach) if cuts is True else (cuts or [])
    if cut_list:
        put("cut", _cut_term(demand, mach, cut_list))
    return _result(comps, details, demand.kind, demand.size_bytes, topology, network)


def _compute_term(
    demand: _Demand, network: NetworkModel, mach: _Machine
) -> tuple[float, str]:
    """The reductions over the ranks' reduction units.

    A unit reduces at ``1 / gamma`` bytes per second from the first delivery
    into its endpoint on (``pre + in_lat + port_lat``); the total reduced
    bytes over all units by water-filling, and, when the demand says where
    the reductions happen (``reduce_at``), each endpoint's own.
    """
    g = network.gamma_s_per_byte
    ends = np.unique(demand.ranks)
    first = mach.pre + mach.in_lat + mach.port_lat  # inf: nothing arrives
    rate = np.full(len(ends), 1.0 / g)
    t = _water_fill(rate, first[ends], demand.reduce_total)
    where = f"{demand.reduce_total:.6g} B reduced on {len(ends)} units"
    if demand.reduce_at is not None:
        red = demand.reduce_at[: mach.endpoints]
        own = np.where(red > 0, first + red * g, 0.0)
        k = int(np.argmax(own))
        if own[k] > t:
            t, where = float(own[k]), f"endpoint {k} reduces {red[k]:.6g} B"
    return t, where


def _result(
    comps: dict[str, float],
    details: dict[str, str],
    kind: str,
    size_bytes: int,
    topology: Topology,
    network: NetworkModel,
) -> LowerBound:
    """The bound from its components, each lowered by 10^-12 of itself.

    The simulator sums the same terms in another order, and a tight bound
    must not exceed its time by a rounding error.
    """
    comps = {k: v * (1.0 - 1e-12) for k, v in comps.items()}
    binding = max(comps, key=lambda k: comps[k])
    return LowerBound(
        comps[binding],
        binding,
        comps,
        details,
        kind,
        size_bytes,
        topology.name,
        network.name,
    )


def _placement(placement: Any, ranks: int, topology: Topology) -> np.ndarray:
    if placement is None:
        if ranks > topology.num_endpoints:
            raise ValueError(
                f"ranks = {ranks} exceeds the {topology.num_endpoints} endpoints "
                f"of {topology.name}"
            )
        return np.arange(ranks, dtype=np.int64)
    pl = np.asarray(placement)
    if pl.ndim != 1 or len(pl) != ranks or not np.issubdtype(pl.dtype, np.integer):
        raise ValueError(f"placement must list one endpoint per rank ({ranks})")
    if pl.min() < 0 or pl.max() >= topology.num_endpoints:
        raise ValueError(
            f"placement entries must be endpoint ids in [0, {topology.num_endpoints})"
        )
    if len(np.unique(pl)) != ranks:
        raise ValueError("placement must put every rank on its own endpoint")
    return pl.astype(np.int64)


def lower_bound(
    topology: Topology,
    network: NetworkModel,
    collective: str = "allreduce",
    size_bytes: int = 1 << 20,
    *,
    ranks: int | None = None,
    root: int = 0,
    placement: Any = None,
    cuts: bool = True,
    matrix: Any = None,
) -> LowerBound:
    """Lower bound on the time of any schedule of a collective on a topology.

    Parameters
    ----------
    topology : Topology
    network : NetworkModel
        The model the schedule would be simulated under.
    collective : str
        One of :data:`wafercoll.COLLECTIVES`.
    size_bytes : int
        Bytes of every rank's vector. A reduce-scatter's or allgather's
        vector is cut into one block per rank, as evenly as bytes allow,
        block ``r`` owned by rank ``r`` (the standard ownership); an
        alltoall's is one rank's send buffer, cut into one block per target;
        a gather's or scatter's is the root's whole vector, one block per
        rank. Builders cut it their own way (``mesh_tto_*`` into fewer blocks
        than ranks, ``mesh_ring_*`` and ``mesh_dbtree_*`` with other owners),
        which is another collective: bound their schedules with
        :func:`collective_bound`, which takes the schedule's own blocks and
        owners.
    ranks : int, optional
        Ranks, all participants (default: ``topology.default_ranks``, every
        endpoint that computes).
    root : int
        Root rank of a reduce or broadcast.
    placement : sequence of int, optional
        Endpoint of each rank (distinct); default rank ``r`` on endpoint ``r``.
    cuts : bool
        Also try cut bounds (the slowest part on very large graphs).
    matrix : array_like, shape (ranks, ranks), optional
        An alltoallv's bytes from rank ``i`` to rank ``j``
        (:func:`wafercoll.alltoallv_blocks`); ``size_bytes`` is then ignored.

    Returns
    -------
    LowerBound

    Raises
    ------
    ValueError
        For an unknown collective, a size below 1 B, more ranks than
        endpoints or a root outside the ranks.

    Examples
    --------
    An allreduce on a ring of 8: every rank must receive at least 7/8 of
    its vector (``(p - 1) / p`` of it) twice, over its two 1 GB/s links.

    >>> import wafercoll as wc
    >>> net = wc.NetworkModel(bandwidth_Bps=1e9)
    >>> b = wc.bounds.lower_bound(wc.ring(8), net, "allreduce", 1 << 20)
    >>> b.binding, round(b.time_s / (2 * 7 / 8 * (1 << 20) / 1e9 / 2), 6)
    ('ejection_total', 1.0)
    """
    check_machine(topology, network)
    if collective == "unknown":
        raise ValueError(
            "an unknown collective asks for nothing but its own transfers: "
            "bound the schedule with collective_bound or schedule_lower_bound"
        )
    if collective not in COLLECTIVES:
        raise ValueError(
            f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}"
        )
    if matrix is not None and collective != "alltoallv":
        raise ValueError(f"matrix applies only to alltoallv, not {collective}")
    p = (
        topology.default_ranks
        if ranks is None
        else as_int(ranks, "ranks", 1, topology.num_endpoints)
    )
    if matrix is not None:
        m = np.asarray(alltoallv_blocks(matrix), dtype=np.float64)
        if m.size != p * p:
            raise ValueError(f"matrix must be {p} x {p} for {p} ranks")
        S = int(m.sum())
    else:
        S = as_int(size_bytes, "size_bytes", 1)
    place = _placement(placement, p, topology)
    rt = None
    if collective in ("reduce", "broadcast", "gather", "scatter"):
        rt = as_int(root, "root", 0, p - 1)
    owners = targets = None
    blocks = np.zeros(0)
    # One block per rank, split as evenly as bytes allow.
    even = np.full(p, S // p, dtype=np.float64)
    even[: S % p] += 1
    ids = np.arange(p)
    if collective in ("reduce_scatter", "allgather"):
        blocks, owners = even, ids
    elif collective in ("alltoall", "alltoallv"):
        blocks = np.tile(even, p) if matrix is None else m
        owners, targets = np.repeat(ids, p), np.tile(ids, p)
    elif collective in ("gather", "scatter"):
        blocks = even
        at_root = np.full(p, rt)
        owners, targets = (ids, at_root) if collective == "gather" else (at_root, ids)
    demand = _demand(
        collective,
        S if collective not in ("alltoall", "alltoallv") else int(blocks.sum()),
        place,
        np.arange(p),
        rt,
        blocks,
        owners,
        topology.num_endpoints,
        targets,
    )
    return _bound(demand, topology, network, cuts)


_IN_NETWORK = (
    "this bound follows messages between endpoints; a schedule with switch "
    "ranks (in-network reduction: NVLS, SHARP) sends to routers: bound its "
    "collective instead (collective_bound, result_bound cover in-network "
    "reduction)"
)


def _no_switches(schedule: Schedule) -> None:
    """ValueError for a schedule with switch ranks (the bounds do not cover them)."""
    if schedule.switches.any():
        raise ValueError(_IN_NETWORK)


def collective_request(schedule: Schedule) -> tuple[Any, ...]:
    """What a schedule's collective asks for: the input of the bounds (small).

    ``(kind, size_bytes, root, participants, owners, block_bytes, traffic,
    targets, in_network)``: not the schedule's transfers, unless it states no
    collective (``"unknown"``); then its messages are all it asks for, in
    ``traffic`` (merged per source, destination and op). ``targets`` is where
    each block of a block-moving collective must end (else None);
    ``in_network`` whether switch ranks reduce in the network.
    :class:`wafercoll.SimResult` keeps it so that :func:`result_bound` needs
    no schedule.

    Examples
    --------
    >>> import wafercoll as wc
    >>> req = wc.bounds.collective_request(wc.build("generic_ring_allreduce", 4, 64))
    >>> req[0], req[1], req[6] is None
    ('allreduce', 64, True)
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"schedule must be a wafercoll.Schedule, got {type(schedule).__name__}"
        )
    owners = schedule.owners
    targets = schedule.targets
    return (
        schedule.collective,
        schedule.size_bytes,
        schedule.root,
        np.flatnonzero(np.asarray(schedule.participants, dtype=bool)),
        None if owners is None else np.asarray(owners, dtype=np.int64),
        schedule.block_bytes if owners is not None else np.zeros(0),
        _Traffic.of(schedule) if schedule.collective == "unknown" else None,
        None if targets is None else np.asarray(targets, dtype=np.int64),
        bool(schedule.switches.any()),
    )


def _collective_demand(
    collective: tuple[Any, ...], place: np.ndarray, endpoints: int
) -> _Demand:
    """:func:`_demand` of a :func:`collective_request` at a placement."""
    kind, size, root, part, owners, blocks = collective[:6]
    traffic = collective[6] if len(collective) > 6 else None
    targets = collective[7] if len(collective) > 7 else None
    in_network = bool(collective[8]) if len(collective) > 8 else False
    if kind == "unknown":
        if in_network:
            raise ValueError(_IN_NETWORK)
        if traffic is None:
            raise ValueError(
                "the bound of an unknown collective comes from its transfers, "
                "which this request does not carry"
            )
        return _traffic_demand(traffic, size, place, endpoints)
    demand = _demand(
        kind, size, place, part, root, blocks, owners, endpoints, targets, in_network
    )
    demand.in_network = in_network
    return demand


def _schedule_demand(schedule: Schedule, topology: Topology, placement: Any) -> _Demand:
    switches = np.asarray(schedule.switches, dtype=bool)
    if switches.any():
        # Switch ranks sit on routers (rank r on node r unless placed); only
        # the other ranks' endpoints enter the demand.
        others = np.flatnonzero(~switches)
        if placement is None:
            place = np.arange(schedule.num_ranks, dtype=np.int64)
        else:
            place = np.asarray(placement, dtype=np.int64)
        _placement(place[others], len(others), topology)  # checked as endpoints
        return _collective_demand(
            collective_request(schedule), place, topology.num_endpoints
        )
    place = _placement(placement, schedule.num_ranks, topology)
    return _collective_demand(
        collective_request(schedule), place, topology.num_endpoints
    )


def collective_bound(
    schedule: Schedule,
    topology: Topology,
    network: NetworkModel,
    *,
    placement: Any = None,
    cuts: bool = True,
) -> LowerBound:
    """:func:`lower_bound` for the collective a schedule implements.

    Takes the collective, root, participants, block sizes and block owners
    from ``schedule`` (but nothing from its transfers): the bound on *any*
    schedule of the same collective, the denominator of the optimality ratio.
    It assumes the schedule computes that collective (:func:`wafercoll.verify`
    accepts it). A schedule that states no collective (``"unknown"``) is
    bounded from its own messages instead: the bound on any schedule that
    sends the same bytes between the same ranks.

    Examples
    --------
    The unidirectional ring allreduce uses one of each rank's two links, so
    it takes twice the bound:

    >>> import wafercoll as wc
    >>> topo, net = wc.ring(8), wc.NetworkModel(bandwidth_Bps=1e9)
    >>> s = wc.build("generic_ring_allreduce", topology=topo, size_bytes=1 << 20)
    >>> b = wc.bounds.collective_bound(s, topo, net)
    >>> round(wc.simulate(s, topo, net).time_s / b.time_s, 6)
    2.0
    """
    check_schedule_inputs(schedule, topology, network, None)
    return _bound(
        _schedule_demand(schedule, topology, placement), topology, network, cuts
    )


def schedule_lower_bound(
    schedule: Schedule,
    topology: Topology,
    network: NetworkModel,
    *,
    placement: Any = None,
) -> LowerBound:
    """Lower bound on the simulated time of this very schedule.

    From what the schedule's own transfers put on every link and endpoint
    (``_core.loads``, along the topology's routes), whatever the timing and
    whether or not the schedule computes its collective:

    ``link``
        The busiest link's bytes over its bandwidth, after the start-up and
        before its latency (and the ejection port's).
    ``injection_ports`` / ``ejection_ports``
        Each endpoint's sent and received bytes over its ports.
    ``compute``
        Each endpoint's reduced (``gamma_s_per_byte``) and copied
        (``copy_s_per_byte``) bytes on its one unit, after the first delivery
        could arrive; 0 when it processes nothing.
    ``latency``
        The start-up and shortest-path latency of the farthest message (a
        message of 0 B too); with ``dependencies="complete"``, also the
        longest dependency chain, one start-up and one link latency per
        transfer.

    Never smaller than the bound on the collective it does not include; meant for
    ranking schedules cheaply (the advisor skips simulations that cannot win).

    Examples
    --------
    A ring allreduce without contention is as fast as its busiest link:

    >>> import wafercoll as wc
    >>> topo, net = wc.ring(8), wc.NetworkModel(bandwidth_Bps=1e9)
    >>> s = wc.build("generic_ring_allreduce", topology=topo, size_bytes=1 << 20)
    >>> b = wc.bounds.schedule_lower_bound(s, topo, net)
    >>> round(wc.simulate(s, topo, net).time_s / b.time_s, 6)
    1.0
    """
    check_schedule_inputs(schedule, topology, network, None)
    _no_switches(schedule)
    place = _placement(placement, schedule.num_ranks, topology)
    mach = _machine(topology, network)
    loads = _core.loads(schedule._core, topology._core, place.astype(np.int32).tolist())
    comps: dict[str, float] = {}
    details: dict[str, str] = {}
    lb = loads["link_bytes"].astype(np.float64)
    if network.ecmp or network.spray:
        # The loads above follow the topology's routes, which multipath
        # routing leaves: only what every endpoint sends and receives, over
        # all its links, is certain.
        lb = np.zeros_like(lb)
        for name, b, cap, lat in (
            ("injection", loads["sent_bytes"], mach.out_cap, mach.out_lat),
            ("ejection", loads["received_bytes"], mach.in_cap, mach.in_lat),
        ):
            comps[name], details[name] = _endpoint_terms(
                name, b.astype(np.float64), cap, lat, mach
            )
    if lb.any():
        t = mach.pre + _safe_div(lb, mach.bw) + mach.lat + mach.port_lat
        t = np.where(lb > 0, t, 0.0)
        k = int(np.argmax(t))
        comps["link"] = float(t[k])
        details["link"] = (
            f"link {k} ({int(mach.src[k])} -> {int(mach.dst[k])}) carries {lb[k]:.6g} B"
        )
    received = loads["received_bytes"].astype(np.float64)
    if mach.port_cap is not None:
        comps["injection_ports"], details["injection_ports"] = _endpoint_terms(
            "injection",
            loads["sent_bytes"].astype(np.float64),
            mach.port_cap,
            mach.out_lat,
            mach,
        )
        comps["ejection_ports"], details["ejection_ports"] = _endpoint_terms(
            "ejection", received, mach.port_cap, mach.in_lat, mach
        )
    red = loads["reduced_bytes"].astype(np.float64)
    work = red * network.gamma_s_per_byte + (received - red) * network.copy_s_per_byte
    if work.any():
        # A unit starts with the first delivery into its endpoint.
        first = mach.pre + np.where(np.isfinite(mach.in_lat), mach.in_lat, 0.0)
        t = np.where(work > 0, first + mach.port_lat + work, 0.0)
        k = int(np.argmax(t))
        comps["compute"] = float(t[k])
        details["compute"] = (
            f"endpoint {k} reduces {red[k]:.6g} B and copies "
            f"{received[k] - red[k]:.6g} B"
        )
    traffic = _Traffic.of(schedule).at(place)
    comps["latency"], details["latency"] = _pairs_latency(traffic, mach)
    if network.dependencies == "complete" and schedule.num_transfers:
        try:
            steps = schedule.num_steps
        except (ValueError, ScheduleError):  # a cycle: it never runs
            steps = 0
        hop = float(mach.lat.min()) if len(mach.lat) else 0.0
        each = mach.pre + hop + mach.port_lat
        if steps * each > comps["latency"]:
            comps["latency"] = steps * each
            details["latency"] = (
                f"{steps} transfers in a chain, each {each:.6g} s at least"
            )
    return _result(
        comps, details, schedule.collective, schedule.size_bytes, topology, network
    )


def result_bound(result: Any, *, cuts: bool = True) -> LowerBound:
    """Lower bound on any schedule of a simulated collective on its machine.

    The bound for the same topology, network model, placement,
    participants and block owners as the simulation (its
    :attr:`~wafercoll.SimResult.collective`), the denominator of
    :func:`optimality_ratio`.

    Parameters
    ----------
    result : SimResult
        What :func:`wafercoll.simulate` returned.
    cuts : bool
        Also try the cut components (the slowest part on large graphs).

    Examples
    --------
    >>> import wafercoll as wc
    >>> topo, net = wc.ring(8), wc.NetworkModel(1e9)
    >>> r = wc.simulate(wc.build("generic_ring_allreduce", 8, 1 << 20), topo, net)
    >>> wc.bounds.result_bound(r).binding
    'ejection_total'
    """
    topology = result.topology
    demand = _collective_demand(
        tuple(result.collective),
        np.asarray(result.placement, dtype=np.int64),
        topology.num_endpoints,
    )
    return _bound(demand, topology, result.network, cuts)


def optimality_ratio(result: Any, bound: LowerBound | None = None) -> float:
    """A simulated time over the lower bound of its collective (1 is optimal).

    Parameters
    ----------
    result : SimResult
        What :func:`wafercoll.simulate` returned.
    bound : LowerBound, optional
        :func:`result_bound` of ``result`` when already computed.

    Examples
    --------
    >>> import wafercoll as wc
    >>> topo, net = wc.ring(8), wc.NetworkModel(1e9)
    >>> r = wc.simulate(wc.build("generic_ring_allreduce", 8, 1 << 20), topo, net)
    >>> round(wc.bounds.optimality_ratio(r), 3)
    2.0
    """
    if bound is None:
        bound = result_bound(result)
    return bound.ratio(result.time_s)
