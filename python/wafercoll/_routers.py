"""``simulate(..., engine="routers")``: routers with finite input buffers.

The default simulator serves each link's packets first come, first served,
from unlimited queues. This engine models what a cycle-level network
simulator such as BookSim models at the router (its C++ core is
``cpp/src/simulate/routers.cpp``):

* a packet waits at the router it has reached in a queue per input port and
  next link (one input port per link into the router, plus the injection
  port of the router's endpoint);
* each link has ``buffer_packets`` credits: a packet holds one from its
  admission to the link until it is admitted to its next link, or delivered
  (its place in the link's downstream input buffer), so a full buffer stalls
  the flows behind it (back-pressure, head-of-line blocking of a buffer);
* a link admits the packets of its input ports in turn, one per turn (round
  robin, as a switch allocator takes turns among its inputs), and sends them
  in the order admitted, with the default simulator's timing per link
  (cut-through on whole flits, or store-and-forward).

With a :class:`Driver` the software in front of each router is modelled
too: network interfaces that each are an injection port of their own, the
order a node issues its transfers in, and the aggregation of reductions, as
the MCM paper's artifact drives BookSim (:class:`Driver` gives the rules).

Without contention both engines give the same times. Where flows share a
link they share it in turns here, where the default engine serves whichever
packet arrived first: a flow injected at a router's fast local port no longer
queues all of its packets ahead of a flow arriving from a neighbour.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from . import _core
from ._util import as_int, as_real

#: Network-model fields this engine does not model, with the value it needs.
UNSUPPORTED = (
    ("gamma_s_per_byte", 0.0),
    ("copy_s_per_byte", 0.0),
    ("ports", None),
    ("dependencies", "complete"),
    ("switch_overhead_s", 0.0),
    ("switch_buffer_bytes", None),
    ("ecmp", False),
    ("spray", False),
)

#: Largest ``buffer_packets`` (a link's credits are counted in an int64, but
#: more credits than packets in flight change nothing).
MAX_BUFFER_PACKETS = 1 << 40


#: ``Driver.order`` values.
DRIVER_ORDERS = ("lowest", "python_set")


@dataclasses.dataclass(frozen=True, eq=False)
class Driver:
    """The software in front of each endpoint's router (``engine="routers"``).

    Its network interfaces, the order it issues its transfers in, and its
    aggregation of reductions, as a simulator driver such as the MCM paper's
    artifact (``src/hmc.py`` in front of BookSim) runs a schedule:

    * Every endpoint sends through ``interfaces`` network interfaces. A
      transfer whose dependencies have finished (and ``alpha_s`` passed)
      takes a free interface of its source, or waits (first come, first
      served) until one is free: with ``order="lowest"`` the lowest-numbered
      one; with ``order="python_set"`` the first in the iteration order of a
      CPython 3.11 ``set`` of the free interfaces' numbers, each taken out
      when it is taken and put back when it is freed (the artifact keeps
      them so, ``free_nis``, so which one it takes depends on their history).
    * An interface's packets, its transfers one after another in the order
      it took them, cross its channel into the router (at ``channel_Bps``)
      while the router's input buffer of the interface holds fewer than
      ``buffer_packets`` of them. There each interface is an injection port
      of its own at every link out of the router, and the link takes turns
      among its ports.
    * The interface is free again once the transfer has handed over every
      packet (one per ``handover_s`` from when it took the interface) and at
      most ``queue_packets`` of the interface's packets have still to cross
      its channel: the buffers between the driver and the channel, which let
      an interface take its next transfer before the last one has left.
    * ``step`` orders each endpoint's transfers: a transfer takes an
      interface only once every transfer of its endpoint with a smaller step
      has one or, where ``strict`` is set, has freed it again.
    * A reduction is complete once its last packet has arrived and its
      destination has aggregated it, ``aggregate_s_per_byte`` per byte, one
      reduction at a time per endpoint in the order they arrived.

    Parameters
    ----------
    interfaces : int
        Network interfaces per endpoint, in [1, 1024].
    queue_packets : int
        Packets an interface may leave before its channel when it takes its
        next transfer, >= 0.
    handover_s : float
        Time the driver takes to hand one packet to an interface, >= 0.
    channel_Bps : float or None
        Bandwidth of an interface's channel into the router, on the wire
        bytes of a packet (whole flits); ``None``: no time.
    buffer_packets : int or None
        Packets the router's input buffer of one interface holds, >= 1;
        ``None``: unlimited.
    order : {"lowest", "python_set"}
        Which free interface a transfer takes (above).
    aggregate_s_per_byte : float
        Aggregation time of a reduction at its destination, >= 0.
    step : array_like of int, optional
        Per transfer: its issue step within its source (default: all 0, no
        order).
    strict : array_like of bool, optional
        Per transfer: wait until the earlier steps have freed their
        interfaces, not only taken them (default: none).

    Examples
    --------
    Rank 1 of a line sends 1000 B to each neighbour in packets of 100 B;
    the router holds 2 packets of each interface and each link buffers 2
    more. With two interfaces the two transfers leave at once; one
    interface, free again only once every packet of the first has entered
    the router, sends the second after it:

    >>> import wafercoll as wc
    >>> p = wc.kit.Program(3, [1000, 1000], "allgather", owners=[1, 1])
    >>> _ = p.step([1, 1], [0, 2], [0, 1])
    >>> s = p.schedule()
    >>> net = wc.NetworkModel(1e9, packet_bytes=100)
    >>> def finish(driver):
    ...     r = wc.simulate(s, wc.topology.line(3), net, engine="routers",
    ...                     buffer_packets=2, driver=driver, transfers=True)
    ...     return [round(float(t) * 1e6, 2) for t in r.transfer_finish_s]
    >>> finish(wc.Driver(2, buffer_packets=2)), finish(wc.Driver(1, buffer_packets=2))
    ([1.0, 1.0], [1.0, 1.8])

    Issue steps put the second transfer first:

    >>> finish(wc.Driver(1, buffer_packets=2, step=[1, 0]))
    [1.8, 1.0]
    """

    interfaces: int
    queue_packets: int = 0
    handover_s: float = 0.0
    channel_Bps: float | None = None
    buffer_packets: int | None = None
    order: str = "lowest"
    aggregate_s_per_byte: float = 0.0
    step: Any = None
    strict: Any = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        put("interfaces", as_int(self.interfaces, "interfaces", 1, 1024))
        put("queue_packets", as_int(self.queue_packets, "queue_packets", 0))
        put("handover_s", as_real(self.handover_s, "handover_s", 0.0))
        if self.channel_Bps is not None:
            put("channel_Bps", as_real(self.channel_Bps, "channel_Bps", positive=True))
        if self.buffer_packets is not None:
            put(
                "buffer_packets",
                as_int(self.buffer_packets, "buffer_packets", 1, MAX_BUFFER_PACKETS),
            )
        if self.order not in DRIVER_ORDERS:
            raise ValueError(
                f"order must be one of {', '.join(DRIVER_ORDERS)}; got {self.order!r}"
            )
        put(
            "aggregate_s_per_byte",
            as_real(self.aggregate_s_per_byte, "aggregate_s_per_byte", 0.0),
        )
        for name, dtype in (("step", np.int64), ("strict", np.uint8)):
            v = getattr(self, name)
            if v is None:
                continue
            a = np.asarray(v)
            if a.ndim != 1 or not (
                a.size == 0 or np.issubdtype(a.dtype, np.integer) or a.dtype == bool
            ):
                raise TypeError(f"{name} must be a 1-D array of ints or bools")
            a = a.astype(dtype)
            a.setflags(write=False)
            put(name, a)

    def _core_arguments(self, schedule: Any) -> dict[str, Any]:
        """The keywords of ``_core.simulate_routers`` for ``schedule``."""
        T = schedule.num_transfers
        arrays = {}
        for name, dtype in (("step", np.int64), ("strict", np.uint8)):
            v = getattr(self, name)
            if v is None:
                arrays[name] = np.zeros(0, dtype)
                continue
            if v.size != T:
                raise ValueError(
                    f"Driver.{name} has {v.size} entries; the schedule has "
                    f"{T} transfers"
                )
            arrays[name] = v
        return {
            "interfaces": self.interfaces,
            "interface_queue_packets": self.queue_packets,
            "handover_s": self.handover_s,
            "channel_s_per_byte": (
                0.0 if self.channel_Bps is None else 1.0 / self.channel_Bps
            ),
            "interface_buffer_packets": (
                MAX_BUFFER_PACKETS
                if self.buffer_packets is None
                else self.buffer_packets
            ),
            "python_set_order": self.order == "python_set",
            "aggregate_s_per_byte": self.aggregate_s_per_byte,
            "reduces": (np.asarray(schedule._core.op) == 1).astype(np.uint8),
            "issue_step": arrays["step"],
            "issue_strict": arrays["strict"],
        }


def check_buffer_packets(buffer_packets: Any) -> int:
    """``buffer_packets`` as an int in [1, 2^40], or a clear error."""
    if isinstance(buffer_packets, bool) or not isinstance(
        buffer_packets, (int, np.integer)
    ):
        raise TypeError(
            f"buffer_packets must be an int, got {type(buffer_packets).__name__}"
        )
    if not 1 <= int(buffer_packets) <= MAX_BUFFER_PACKETS:
        raise ValueError(
            f"buffer_packets must be in [1, {MAX_BUFFER_PACKETS}], got {buffer_packets}"
        )
    return int(buffer_packets)


def run(
    schedule: Any,
    topology: Any,
    network: Any,
    placement: np.ndarray,
    buffer_packets: int,
    max_events: int,
    driver: Driver | None = None,
) -> dict:
    """Simulate with the router model; the raw result dict of ``SimResult``."""
    for name, default in UNSUPPORTED:
        if getattr(network, name) != default:
            raise ValueError(
                f'engine="routers" does not model {name}; use a network model '
                f"with {name}={default!r}"
            )
    s = schedule
    c = s._core
    if s.switches.any():
        raise ValueError(
            'engine="routers" does not model switch ranks (in-network reduction)'
        )
    doff = np.asarray(c.dst_offsets, np.int64)
    if np.any(np.diff(doff) != 1):
        raise ValueError(
            'engine="routers" models unicast transfers only (one destination '
            "each); this schedule has multicast transfers"
        )
    T = len(doff) - 1
    src = placement[np.asarray(c.src, np.int64)].astype(np.int64)
    dst = placement[np.asarray(c.dsts, np.int64)].astype(np.int64)
    nbytes = np.asarray(c.transfer_bytes(), np.int64)
    # Routes: one per (source, destination) pair, as topology.route gives it.
    pair = src * topology.num_nodes + dst
    uniq, inv = np.unique(pair, return_inverse=True)
    per = [
        topology.route(int(u // topology.num_nodes), int(u % topology.num_nodes))
        for u in uniq
    ]
    plen = np.array([len(r) for r in per], np.int64)
    hops = plen[inv]
    route_off = np.zeros(T + 1, np.int64)
    np.cumsum(hops, out=route_off[1:])
    flat = np.concatenate(per).astype(np.int32) if per else np.zeros(0, np.int32)
    pstart = np.zeros(len(per) + 1, np.int64)
    np.cumsum(plen, out=pstart[1:])
    idx = np.repeat(pstart[inv], hops) + (
        np.arange(route_off[-1]) - np.repeat(route_off[:-1], hops)
    )
    route_links = flat[idx] if flat.size else np.zeros(0, np.int32)
    links = topology.links
    bw = np.asarray(links["bandwidth_Bps"], float)
    if network.bandwidth_Bps is not None:
        bw = np.full_like(bw, network.bandwidth_Bps)
    extra = {} if driver is None else driver._core_arguments(s)
    raw = _core.simulate_routers(
        np.asarray(links["src"], np.int32),
        np.asarray(links["dst"], np.int32),
        1.0 / bw,
        np.asarray(links["latency_s"], float) + network.hop_latency_s,
        int(topology.num_nodes),
        int(network.flit_bytes or 0),
        int(buffer_packets),
        network.switching == "store_and_forward",
        nbytes,
        int(network.packet_bytes or 0),
        bool(network.pad_packets),
        route_off,
        route_links,
        np.asarray(c.dep_offsets, np.int64),
        np.asarray(c.deps, np.int32),
        float(network.alpha_s),
        int(max_events),
        **extra,
    )
    finish = raw["finish_s"]
    p = s.num_ranks
    rank_finish = np.zeros(p)
    np.maximum.at(rank_finish, np.asarray(c.src, np.int64), finish)
    np.maximum.at(rank_finish, np.asarray(c.dsts, np.int64), finish)
    e = topology.num_endpoints
    return {
        "time_s": float(finish.max()) if finish.size else 0.0,
        "rank_finish_s": rank_finish,
        "link_busy_s": raw["link_busy_s"],
        "link_bytes": raw["link_bytes"],
        "injection_busy_s": np.zeros(e),
        "ejection_busy_s": np.zeros(e),
        "compute_busy_s": np.zeros(e),
        "events": int(raw["events"]),
        "packets": int(raw["packets"]),
        "transfer_ready_s": raw["ready_s"],
        "transfer_finish_s": finish,
    }
