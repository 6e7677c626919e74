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

Without contention both engines give the same times. Where flows share a
link they share it in turns here, where the default engine serves whichever
packet arrived first: a flow injected at a router's fast local port no longer
queues all of its packets ahead of a flow arriving from a neighbour.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core

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
