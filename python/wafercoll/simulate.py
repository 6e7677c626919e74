"""Network simulation: run any schedule on any topology under a network model.

:func:`simulate` is a packet-level discrete-event simulation of a schedule's
transfers over a topology's routes. It knows nothing about algorithms; the
costs come from a :class:`NetworkModel`.

The model
---------
* Rank ``r`` runs on endpoint ``placement[r]`` (default: endpoint ``r``). A
  transfer is *ready* when its dependencies have completed (at 0 without
  any); its first packet reaches its first stage at ``ready + alpha_s``. The
  start-up delay ``alpha_s`` occupies nothing.
* A message of ``S`` bytes is cut into packets of ``packet_bytes`` (the last
  one shorter; ``None``: the whole message is one packet). With
  ``flit_bytes`` a packet occupies a whole number of flits on the wire.
* A packet crosses *stages* in order: the source's injection port (only when
  ``ports`` is set), the links of ``topology.route(src, dst)``, the
  destination's ejection port (only when ``ports`` is set). Each stage sends
  one packet at a time: ``w`` wire bytes occupy it for ``w / bandwidth``.
  Links have ``bandwidth_Bps`` (``None``: each link's own from the topology)
  and latency = the link's own latency + ``hop_latency_s``. An endpoint has
  ``ports`` injection and ``ports`` ejection channels with
  ``port_bandwidth_Bps`` (default: the link bandwidth) and
  ``port_latency_s``; a message takes the channel that frees up first.
  With ``switch_overhead_s``, an ejection channel that has already taken a
  transfer is free for the next one only that long after its last packet
  (switching to a new incoming stream; waiting for the stream's arrival
  hides it).
* **Arbitration** is first come, first served by arrival time at the stage;
  simultaneous arrivals go by the position of the packet's data in the
  vector, then by a canonical order of the transfers (source, first
  destination, first block, last block, op, bytes), never by transfer index,
  so renumbering transfers, or cutting a stream into more or fewer
  transfers, changes nothing. A source
  presents packet ``k + 1`` when packet ``k`` has left its first stage. Two
  equal messages that start together on the same first link therefore
  interleave packet by packet and both finish near ``2 S / bw`` (the first
  one packet earlier); as one packet each, they finish at ``S / bw`` and
  ``2 S / bw``. The rule is first come, first served, not round robin between
  inputs: traffic that has queued up at a router (say, a through stream that
  met contention earlier) is served before packets that arrive there later,
  such as those a local source injects one at a time.
* **Store-and-forward**: a packet reaches the next stage at its finish here +
  latency. **Cut-through**: its head reaches the next stage when the head
  passed this one + latency (+ one flit time when ``flit_bytes`` is set), and
  it cannot finish there before its finish here + latency; a stage faster
  than the one before it sends the packet in one burst just before its tail
  arrives, without holding back the head for the stages after it (a packet
  crossing slow, fast, fast, slow links takes S / slow, not 2 S / slow).
  Routers buffer without limit (no back-pressure, no deadlock).
* A packet is delivered at its finish on the last stage + that stage's
  latency. A *reducing* transfer is then reduced by the destination's single
  compute unit, first come first served, at ``gamma_s_per_byte`` per byte.
  A transfer completes when its last packet is delivered (and reduced) at
  every destination.
* **Multicast** transfers (several destinations) are one packet stream over
  the union of the routes, copied by the routers where the routes part; each
  link of the tree carries the bytes once.
* **Switch ranks** (in-network reduction, see :mod:`wafercoll.schedule`) run
  on hidden routers (default placement: node ``r`` for rank ``r``, which is
  where the fabrics number their switches). A switch has no ports; routes to
  and from it are shortest paths, lowest link id first. It reduces with a
  unit of its own, first come first served, at ``switch_reduce_Bps`` input
  bytes per second (``None``: free); a copy into it is free. A message into
  or out of it larger than ``switch_buffer_bytes`` is refused. ``k`` GPUs
  with links of bandwidth ``B`` and latency ``l`` to one switch, each
  sending ``S`` bytes as one packet that the switch reduces at ``R`` and
  multicasts back, take ``2 (alpha + l + S / B) + k S / R``.

Closed forms that follow (``h`` hops, bandwidth ``bw``, latency ``lat``,
``S`` bytes, ``M`` packet bytes, no ports, no contention):

* cut-through: ``alpha + h lat + S / bw`` (any packet size);
* cut-through with flits ``F``: ``alpha + h lat + (h - 1) F / bw + S / bw``;
* store-and-forward: ``alpha + h lat + S / bw + (h - 1) min(M, S) / bw``, i.e.
  ``alpha + h (lat + M / bw) + (S - M) / bw`` when ``M`` divides ``S``.

Unidirectional ring allreduce of ``S`` bytes on a ring of ``p`` endpoints
(``wc.build("generic_ring_allreduce", p, S)`` on ``wc.ring(p)``, neighbour links,
no ports,
``B = S / p`` bytes per step, cut into ``n`` packets of ``m = B / n``):

* ``gamma = 0``, cut-through: ``2 (p - 1) (alpha + lat + B / bw)``.
  Store-and-forward gives the same: over one hop
  ``lat + m / bw + (B - m) / bw = lat + B / bw``.
* ``gamma > 0`` (either mode): the ``p - 1`` copying steps cost as above; a
  reducing step ends when the destination has reduced the last packet, whose
  packets arrive at ``alpha + lat + (k + 1) m / bw``, so it costs
  ``alpha + lat + max_k ((k + 1) m / bw + (n - k) gamma m)``, which is
  ``alpha + lat + B / bw + gamma m`` when ``gamma <= 1 / bw`` (the link is the
  bottleneck) and ``alpha + lat + m / bw + gamma B`` otherwise. In total
  ``(p - 1) (alpha + lat + B / bw) + (p - 1) (alpha + lat + max_k (...))``;
  with one packet per message, ``2 (p - 1) (alpha + lat + B / bw) +
  (p - 1) gamma B``.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from . import _core
from ._util import as_int, block_text, int_array, write_atomic
from .network import NetworkModel, check_schedule_inputs
from .schedule import Schedule
from .topology import Topology

__all__ = [
    "NetworkModel",
    "SimResult",
    "bus_factor",
    "simulate",
    "simulate_tasks",
    "release_memory",
    "simulation_events",
]

#: Default cap on packet-stage events (about five minutes of simulation).
DEFAULT_MAX_EVENTS = 1 << 32
#: Input buffer of every link, in packets, under ``engine="routers"`` when
#: ``buffer_packets`` is not given: BookSim's defaults (``booksim_config.cpp``:
#: ``num_vcs`` 16, ``vc_buf_size`` 8 flits) hold 16 packets of up to 8 flits
#: per input port. Give the machine's own figure where it is known (the MCM
#: artifact's: ``wafercoll.mcm.machine.ARTIFACT_BUFFER_PACKETS``).
DEFAULT_BUFFER_PACKETS = 16


class CollectiveRequest(NamedTuple):
    """What a simulated schedule's collective asks for (not its transfers).

    Kept by :class:`SimResult` so that :func:`wafercoll.bounds.result_bound`
    can bound any schedule of the same collective on the same machine. A
    schedule that states no collective (``"unknown"``) asks for its own
    messages: ``traffic`` holds them (merged per source, destination and op).
    """

    kind: str
    size_bytes: int
    root: int | None
    participants: np.ndarray
    owners: np.ndarray | None
    block_bytes: np.ndarray
    #: The messages, for a schedule that states no collective ("unknown").
    traffic: Any = None
    #: Where each block must end (the block-moving collectives).
    targets: np.ndarray | None = None
    #: Whether switch ranks reduce in the network (NVLS, SHARP).
    in_network: bool = False


#: nccl-tests' bus-bandwidth factors (NVIDIA/nccl-tests, doc/PERFORMANCE.md):
#: busbw = algbw * factor(n). Gather and scatter, which nccl-tests does not
#: time, get (n - 1) / n by the same argument (all but the root's own block
#: crosses the root's one link); alltoallv that of alltoall.
_BUS_FACTORS = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "alltoall": lambda n: (n - 1) / n,
    "alltoallv": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
}


def bus_factor(collective: str, ranks: int) -> float | None:
    """nccl-tests' factor from algorithm to bus bandwidth for ``ranks`` ranks.

    ``2 (n - 1) / n`` for allreduce, ``(n - 1) / n`` for reduce-scatter,
    allgather and alltoall, 1 for broadcast and reduce (NVIDIA/nccl-tests,
    ``doc/PERFORMANCE.md``); ``(n - 1) / n`` for gather and scatter by the
    same argument; None for a collective without one (``"unknown"``).

    Examples
    --------
    >>> from wafercoll.simulate import bus_factor
    >>> bus_factor("allreduce", 8), bus_factor("broadcast", 8)
    (1.75, 1.0)
    """
    n = as_int(ranks, "ranks", 1)
    f = _BUS_FACTORS.get(collective)
    return None if f is None else float(f(n))


class SimResult:
    """What :func:`simulate` measured. Arrays are NumPy, times in seconds.

    Attributes
    ----------
    time_s : float
        Makespan: completion of the last transfer.
    rank_finish_s : ndarray, shape (ranks,)
        When each rank is done: its last sent packet has left its first stage
        and the last transfer it receives has completed at it.
    link_busy_s, link_bytes : ndarray, shape (links,)
        Time each topology link spent sending, and payload bytes it carried,
        indexed like ``topology.links()``.
    injection_busy_s, ejection_busy_s, compute_busy_s : ndarray, shape (endpoints,)
        Busy time of each endpoint's ports (summed over channels; zero without
        ports) and of its reduction unit.
    switch_busy_s : ndarray, shape (ranks,), or None
        Reduction time of each switch rank on its router (0 for other ranks);
        ``None`` when the schedule has no switch ranks.
    events, packets : int
        Packet-stage services performed and packets injected.
    transfer_ready_s, transfer_finish_s : ndarray or None
        Per transfer (``transfers=True``): when its dependencies were done and
        when it completed.
    task_start_s, task_finish_s : ndarray or None
        Per task of a task graph (:func:`simulate_tasks`): when it started
        (a compute task: when its compute unit took it) and completed.
    timeline_t, timeline_busy : ndarray or None
        With ``timeline=True``: ``timeline_busy[i]`` links are busy from
        ``timeline_t[i]`` to ``timeline_t[i + 1]``.
    network : NetworkModel
    topology : Topology
    collective : CollectiveRequest
        What the collective asks for: the input of
        :func:`wafercoll.bounds.result_bound` (the lower bound on any schedule
        of it) and :func:`wafercoll.bounds.optimality_ratio`.
    """

    def __init__(
        self,
        raw: dict[str, Any],
        network: NetworkModel,
        schedule: Schedule,
        topology: Topology,
        placement: np.ndarray,
    ) -> None:
        self.time_s: float = float(raw["time_s"])
        self.rank_finish_s: np.ndarray = raw["rank_finish_s"]
        self.link_busy_s: np.ndarray = raw["link_busy_s"]
        self.link_bytes: np.ndarray = raw["link_bytes"]
        self.injection_busy_s: np.ndarray = raw["injection_busy_s"]
        self.ejection_busy_s: np.ndarray = raw["ejection_busy_s"]
        self.compute_busy_s: np.ndarray = raw["compute_busy_s"]
        sw = raw.get("switch_busy_s")
        self.switch_busy_s: np.ndarray | None = (
            None if sw is None or len(sw) == 0 else sw
        )
        self.events: int = int(raw["events"])
        self.packets: int = int(raw["packets"])
        self.transfer_ready_s: np.ndarray | None = raw.get("transfer_ready_s")
        self.transfer_finish_s: np.ndarray | None = raw.get("transfer_finish_s")
        self.task_start_s: np.ndarray | None = raw.get("task_start_s")
        self.task_finish_s: np.ndarray | None = raw.get("task_finish_s")
        self.timeline_t: np.ndarray | None = raw.get("timeline_t")
        self.timeline_busy: np.ndarray | None = raw.get("timeline_busy")
        self._trace = {k: raw[k] for k in raw if k.startswith("trace_")} or None
        self._ports = network.ports or 0
        self._endpoints = topology.num_endpoints
        self.network = network
        self.placement = placement
        self.schedule_name = schedule.name
        self.topology_name = topology.name
        self.num_links = topology.num_links
        # Kept for per-transfer views and plots (small arrays).
        self.transfer_src: np.ndarray | None = None
        self.transfer_op: np.ndarray | None = None
        if self.transfer_ready_s is not None:
            self.transfer_src = schedule.src
            self.transfer_op = schedule.op
        self._schedule = schedule if self.transfer_ready_s is not None else None
        self.topology = topology  # link ends for chrome_trace(), read on demand
        # What the collective asks for (not its transfers, unless it states
        # none): the input of wafercoll.bounds.result_bound, small and
        # without the schedule.
        from .bounds import collective_request

        self.collective = CollectiveRequest(*collective_request(schedule))

    # -- equality (pickled results compare equal) ------------------------------
    _EQ_FIELDS = (
        "time_s",
        "events",
        "packets",
        "network",
        "schedule_name",
        "topology_name",
        "num_links",
    )
    _EQ_ARRAYS = (
        "rank_finish_s",
        "link_busy_s",
        "link_bytes",
        "injection_busy_s",
        "ejection_busy_s",
        "compute_busy_s",
        "placement",
        "transfer_ready_s",
        "transfer_finish_s",
        "timeline_t",
        "timeline_busy",
    )

    def __eq__(self, other: object) -> bool:
        """Same headline numbers, per-link and per-rank arrays and model."""
        if not isinstance(other, SimResult):
            return NotImplemented
        if any(getattr(self, k) != getattr(other, k) for k in self._EQ_FIELDS):
            return False
        for k in self._EQ_ARRAYS:
            a, b = getattr(self, k), getattr(other, k)
            if (a is None) != (b is None) or (
                a is not None and not np.array_equal(a, b)
            ):
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    # -- derived quantities ---------------------------------------------------
    @property
    def cycles(self) -> float | None:
        """Makespan in clock cycles (None when the model has no clock).

        Rounded to 10^-6 cycle: times are sums of per-stage seconds, whose
        float rounding would otherwise show (240 as 239.99999999999963).
        """
        if self.network.clock_Hz is None:
            return None
        return round(self.time_s * self.network.clock_Hz, 6)

    @property
    def algbw_Bps(self) -> float | None:
        """Algorithm bandwidth, size / time, as nccl-tests reports it.

        ``size_bytes`` of the collective (the vector each rank holds: for
        reduce-scatter and allgather the whole array of ``n`` blocks, as
        nccl-tests counts it) over the makespan; None for a zero time.
        """
        size = self.collective.size_bytes
        return size / self.time_s if self.time_s > 0 else None

    @property
    def busbw_Bps(self) -> float | None:
        """Bus bandwidth: :attr:`algbw_Bps` times :func:`bus_factor`.

        The number nccl-tests prints as ``busbw``, comparable to a link's
        peak whatever the number of ranks. None for a zero time or a
        collective without a factor (``"unknown"``).

        Examples
        --------
        >>> import wafercoll as wc
        >>> s = wc.build("generic_ring_allreduce", 4, 4_000_000)
        >>> r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9))
        >>> round(r.busbw_Bps / 1e9, 9)  # the ring runs every link at full speed
        1.0
        """
        n = max(1, len(self.collective.participants))  # the participating ranks
        f = bus_factor(self.collective.kind, n)
        a = self.algbw_Bps
        return None if f is None or a is None else a * f

    @property
    def link_utilization_by_link(self) -> np.ndarray:
        """Busy time / makespan of each link."""
        if self.time_s <= 0.0:
            return np.zeros_like(self.link_busy_s)
        return self.link_busy_s / self.time_s

    @property
    def link_utilization(self) -> float:
        """Mean utilization over all links of the topology."""
        u = self.link_utilization_by_link
        return float(u.mean()) if u.size else 0.0

    @property
    def link_utilization_used(self) -> float:
        """Mean utilization over the links that carried any bytes."""
        used = self.link_bytes > 0
        if not used.any():
            return 0.0
        return float(self.link_utilization_by_link[used].mean())

    @property
    def links_used(self) -> int:
        """Number of links that carried any bytes."""
        return int(np.count_nonzero(self.link_bytes))

    def busy_links(self, bins: int = 100) -> tuple[np.ndarray, np.ndarray]:
        """Mean number of busy links in ``bins`` equal time bins.

        Returns ``(bin_centres_s, mean_busy_links)``; needs ``timeline=True``.
        The mean over a bin is exact (the step function integrated over it).
        """
        if self.timeline_t is None or self.timeline_busy is None:
            raise ValueError("busy_links() needs simulate(..., timeline=True)")
        n = as_int(bins, "bins", 1, 1_000_000)
        edges = np.linspace(0.0, self.time_s, n + 1)
        t = self.timeline_t
        # Integral of the step function up to each time in t, then at the edges.
        seg = np.diff(t) * self.timeline_busy[:-1]
        cum = np.concatenate([[0.0], np.cumsum(seg)])
        idx = np.clip(np.searchsorted(t, edges, side="right") - 1, 0, len(t) - 1)
        at_edges = cum[idx] + (edges - t[idx]) * self.timeline_busy[idx]
        width = np.diff(edges)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(width > 0, np.diff(at_edges) / width, 0.0)
        return (edges[:-1] + edges[1:]) / 2, mean

    def trace(self) -> dict[str, np.ndarray]:
        """Every packet-stage service, in processing order (needs ``trace=True``).

        Returns columns ``transfer``, ``packet``, ``kind`` (0 link, 1 injection
        port, 2 ejection port), ``link`` (the link id, or -1), ``endpoint``
        (for a port, its endpoint, else -1), ``start_s`` and ``finish_s``.
        """
        if self._trace is None:
            raise ValueError("trace() needs simulate(..., trace=True)")
        stage = self._trace["trace_stage"]
        L, K, E = self.num_links, max(self._ports, 1), self._endpoints
        kind = np.where(stage < L, 0, np.where(stage < L + E * K, 1, 2))
        endpoint = np.where(
            kind == 1,
            (stage - L) // K,
            np.where(kind == 2, (stage - L - E * K) // K, -1),
        )
        return {
            "transfer": self._trace["trace_transfer"],
            "packet": self._trace["trace_packet"],
            "kind": kind,
            "link": np.where(kind == 0, stage, -1),
            "endpoint": endpoint,
            "start_s": self._trace["trace_start_s"],
            "finish_s": self._trace["trace_finish_s"],
        }

    # -- export ---------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        """Headline numbers as a dict.

        The lower bound and the optimality ratio are
        :func:`wafercoll.bounds.result_bound` and
        :func:`wafercoll.bounds.optimality_ratio` of this result.
        """
        return {
            "schedule": self.schedule_name,
            "topology": self.topology_name,
            "network": self.network.name,
            "time_s": self.time_s,
            "cycles": self.cycles,
            "link_utilization": self.link_utilization,
            "link_utilization_used": self.link_utilization_used,
            "links_used": self.links_used,
            "links": self.num_links,
            "bytes_on_links": int(self.link_bytes.sum()),
            "packets": self.packets,
            "events": self.events,
            "algbw_Bps": self.algbw_Bps,
            "busbw_Bps": self.busbw_Bps,
        }

    def to_pandas(self, what: str = "links") -> Any:
        """A DataFrame: ``"links"``, ``"ranks"``, ``"transfers"`` or ``"timeline"``."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on environment
            raise ImportError(
                "SimResult.to_pandas() needs pandas: pip install pandas"
            ) from exc
        if what == "links":
            df = pd.DataFrame(
                {
                    "busy_s": self.link_busy_s,
                    "bytes": self.link_bytes,
                    "utilization": self.link_utilization_by_link,
                }
            )
            df.index.name = "link"
            return df
        if what == "ranks":
            df = pd.DataFrame(
                {"endpoint": self.placement, "finish_s": self.rank_finish_s}
            )
            df.index.name = "rank"
            return df
        if what == "transfers":
            if self.transfer_ready_s is None:
                raise ValueError(
                    "to_pandas('transfers') needs simulate(..., transfers=True)"
                )
            df = pd.DataFrame(
                {
                    "src": self.transfer_src,
                    "op": np.where(self.transfer_op == 1, "reduce", "copy"),
                    "ready_s": self.transfer_ready_s,
                    "finish_s": self.transfer_finish_s,
                }
            )
            df.index.name = "transfer"
            return df
        if what == "timeline":
            if self.timeline_t is None:
                raise ValueError(
                    "to_pandas('timeline') needs simulate(..., timeline=True)"
                )
            return pd.DataFrame(
                {"t_s": self.timeline_t, "busy_links": self.timeline_busy}
            )
        raise ValueError(
            f"what must be 'links', 'ranks', 'transfers' or 'timeline', got {what!r}"
        )

    def chrome_trace(self) -> dict[str, Any]:
        """The run as Trace Event JSON data (see :meth:`to_chrome_trace`)."""
        if self._schedule is None or self._trace is None:
            raise ValueError(
                "a chrome trace needs simulate(..., transfers=True, trace=True)"
            )
        s = self._schedule
        steps = s.steps()
        nbytes = s.transfer_bytes()
        c = s._core
        # Each array once: the core writes out a fresh copy on every access.
        roff, lo, hi = c.range_offsets, c.range_lo, c.range_hi
        doff, dst_all = c.dst_offsets, c.dsts
        alg = s.name or s.collective
        events: list[dict[str, Any]] = [
            {
                "ph": "M",
                "pid": 0,
                "tid": 0,
                "name": "process_name",
                "args": {"name": f"ranks ({alg})"},
            },
            {
                "ph": "M",
                "pid": 1,
                "tid": 0,
                "name": "process_name",
                "args": {"name": f"links ({self.topology_name})"},
            },
        ]
        for r in range(s.num_ranks):
            events.append(
                {
                    "ph": "M",
                    "pid": 0,
                    "tid": r,
                    "name": "thread_name",
                    "args": {"name": f"rank {r}"},
                }
            )
        us = 1e6
        for t in range(s.num_transfers):
            blocks = block_text(
                zip(lo[roff[t] : roff[t + 1]], hi[roff[t] : roff[t + 1]], strict=True)
            )
            dsts = [int(d) for d in dst_all[doff[t] : doff[t + 1]]]
            op = "reduce" if self.transfer_op[t] == 1 else "copy"
            ready, finish = self.transfer_ready_s[t], self.transfer_finish_s[t]
            args = {
                "algorithm": alg,
                "transfer": t,
                "step": int(steps[t]),
                "src": int(self.transfer_src[t]),
                "dst": dsts,
                "blocks": blocks,
                "bytes": int(nbytes[t]),
                "op": op,
            }
            label = s.transfer_label(t)
            if label:
                args["label"] = label
            events.append(
                {
                    "ph": "X",
                    "cat": "transfer",
                    "pid": 0,
                    "tid": int(self.transfer_src[t]),
                    "ts": ready * us,
                    "dur": max(0.0, finish - ready) * us,
                    "name": f"{alg} step {int(steps[t])}: {op} blocks {blocks} "
                    f"({int(nbytes[t])} B) -> {','.join(map(str, dsts))}",
                    "args": args,
                }
            )
        tr = self.trace()
        on_link = tr["kind"] == 0
        link, t0, t1, tid = (
            tr["link"][on_link],
            tr["start_s"][on_link],
            tr["finish_s"][on_link],
            tr["transfer"][on_link],
        )
        ends = self.topology.links
        for lk in np.unique(link):
            sel = np.flatnonzero(link == lk)
            sel = sel[np.argsort(t0[sel], kind="stable")]
            u, v = int(ends["src"][lk]), int(ends["dst"][lk])
            events.append(
                {
                    "ph": "M",
                    "pid": 1,
                    "tid": int(lk),
                    "name": "thread_name",
                    "args": {"name": f"link {int(lk)} {u}->{v}"},
                }
            )
            a, b, who = None, None, []
            for i in [*sel.tolist(), None]:
                if i is not None and a is not None and t0[i] <= b:
                    b = max(b, t1[i])
                    who.append(int(tid[i]))
                    continue
                if a is not None:
                    tset = sorted(set(who))
                    events.append(
                        {
                            "ph": "X",
                            "cat": "link",
                            "pid": 1,
                            "tid": int(lk),
                            "ts": a * us,
                            "dur": (b - a) * us,
                            "name": f"link {u}->{v} busy: transfers "
                            f"{','.join(map(str, tset[:8]))}"
                            f"{'...' if len(tset) > 8 else ''}",
                            "args": {"link": int(lk), "transfers": tset},
                        }
                    )
                if i is not None:
                    a, b, who = t0[i], t1[i], [int(tid[i])]
        return {
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {
                "schedule": alg,
                "topology": self.topology_name,
                "network": self.network.name,
                "time_s": self.time_s,
            },
        }

    def to_chrome_trace(self, path: str | os.PathLike[str]) -> None:
        """Write the run as Trace Event JSON (Perfetto, ``chrome://tracing``).

        Needs ``simulate(..., transfers=True, trace=True)``. Process "ranks"
        has a track per rank with one event per transfer (from when its
        dependencies were done to its completion, on its source's track);
        process "links" has a track per used link with one event per busy
        interval (packet services merged while they overlap or touch).
        Events are complete events (``"ph": "X"``) with ``ts`` and ``dur``
        in microseconds; names say algorithm, step, blocks and bytes, and
        ``args`` carry the same as fields.
        """
        write_atomic(path, json.dumps(self.chrome_trace()))

    def __repr__(self) -> str:
        cyc = f", cycles={self.cycles:.6g}" if self.cycles is not None else ""
        return (
            f"SimResult({self.schedule_name or 'schedule'} on {self.topology_name}: "
            f"time_s={self.time_s:.6g}{cyc}, "
            f"link_utilization={self.link_utilization:.3f}, "
            f"links_used={self.links_used}/{self.num_links})"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
            f"<td>{html.escape(_fmt(v))}</td></tr>"
            for k, v in self.summary().items()
        )
        return f"<table><caption>Simulation</caption>{rows}</table>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return "-" if v is None else str(v)


def simulate(
    schedule: Schedule,
    topology: Topology,
    network: NetworkModel,
    *,
    placement: Sequence[int] | np.ndarray | None = None,
    transfers: bool = False,
    timeline: bool = False,
    max_events: int = DEFAULT_MAX_EVENTS,
    event_queue: str = "auto",
    trace: bool = False,
    engine: str = "wafercoll",
    buffer_packets: int | None = None,
    driver: Any = None,
) -> SimResult:
    """Simulate ``schedule`` on ``topology`` under ``network``.

    See :mod:`wafercoll.simulate` for the model (stages, arbitration,
    switching, reduction, multicast) and the closed forms it implies.

    Parameters
    ----------
    schedule : Schedule
    topology : Topology
        Ranks run on its endpoints; routes come from ``topology.route``.
    network : NetworkModel
    placement : sequence of int, optional
        Endpoint of each rank (distinct); default: rank ``r`` on endpoint ``r``.
        A switch rank runs on a hidden router instead (default: node ``r``).
    transfers : bool
        Also record each transfer's ready and finish time.
    timeline : bool
        Also record the number of busy links over time (for
        :func:`wafercoll.plot.plot_link_utilization`).
    max_events : int
        Refuse, before starting, runs that need more packet-stage events
        (about 10-15 million per second on one core).
    event_queue : {"auto", "heap", "buckets"}
        How pending events are kept: a radix heap of events (filed by the
        bits of their times), or events grouped by their exact time. Both
        process events in the same order, so results are identical;
        grouping is much faster when many events share a time
        (a clocked machine, links of one speed and latency, streams in
        lockstep) and slower when nearly every event has a time of its own.
        ``"auto"`` starts grouped; after a warm-up, unless 7 in 8 events
        join a time already queued (a wafer's whole cycles), it times 65,536
        events with each queue and keeps the faster (the heap only when 15 %
        faster), and checks again after 4x as many events (skipping the
        trial while more events are queued than it would time). A clock
        alone does not decide: a clocked NoC whose packets take fractions of
        a cycle gives most events a time of their own. The choice never
        changes the results.
    trace : bool
        Also record every packet-stage service (``result.trace()``): for
        detailed checks of small runs (at most 2^25 services).
    engine : {"wafercoll", "simgrid", "routers"}
        ``"wafercoll"``: this packet-level simulator. ``"simgrid"``: replay
        the transfers as SimGrid flows over the same links and routes (see
        :mod:`wafercoll._simgrid`; needs SimGrid's Python module, e.g.
        ``apt-get install python3-simgrid``). Without contention the two
        agree; under contention SimGrid shares links max-min fairly between
        flows where this simulator serves packets first come, first served.
        SimGrid results always carry transfer times; they have no packet
        trace or timeline, and ``link_busy_s`` is bytes / bandwidth.
        ``"routers"``: the same packets and per-link timing, but each link
        ends in an input buffer of ``buffer_packets`` packets at its router,
        with back-pressure, and admits the packets of its router's input
        ports in turn (round robin) instead of first come, first served (see
        :mod:`wafercoll._routers`): how a cycle-level network simulator
        such as BookSim shares a link. Unicast transfers, dependencies
        ``"complete"``; transfer times are recorded, no trace or timeline.
    buffer_packets : int, optional
        With ``engine="routers"``: packets each link's downstream input
        buffer holds (its credits), >= 1; default 16.
    driver : Driver, optional
        With ``engine="routers"``: the software in front of each router
        (:class:`wafercoll.Driver`: network interfaces, the order a node
        issues its transfers in, aggregation of reductions); default: one
        injection port per link, which a transfer joins as soon as it is
        ready, and no aggregation.

    Returns
    -------
    SimResult

    Raises
    ------
    ValueError
        For a schedule with more ranks than the topology has endpoints, a
        route that does not exist, a bad placement or a dependency cycle.
    SimulationTooLarge
        (a ValueError) For a run larger than ``max_events``, refused before
        its event loop starts; its ``events`` attribute holds the count.
    TypeError
        For arguments of the wrong type.

    Examples
    --------
    Unidirectional ring allreduce of ``S`` bytes on a ring of ``p``
    endpoints: ``2 (p - 1)`` steps, each moving ``S / p`` bytes one hop.

    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 4_000_000)
    >>> net = wc.NetworkModel(1e9, hop_latency_s=1e-6, alpha_s=2e-6)
    >>> r = wc.simulate(s, wc.ring(4), net)
    >>> round(r.time_s * 1e6, 6)  # 6 * (2 + 1 + 1000) microseconds
    6018.0
    """
    s, t, net, pl = check_schedule_inputs(schedule, topology, network, placement)
    if engine not in ("wafercoll", "simgrid", "routers"):
        raise ValueError(
            f"engine must be 'wafercoll', 'simgrid' or 'routers', got {engine!r}"
        )
    if buffer_packets is not None and engine != "routers":
        raise ValueError('buffer_packets is a setting of engine="routers" only')
    if driver is not None and engine != "routers":
        raise ValueError('driver is a setting of engine="routers" only')
    if engine == "routers":
        from . import _routers

        if timeline or trace:
            raise ValueError(
                'engine="routers" records transfer times only (no timeline or trace)'
            )
        buf = _routers.check_buffer_packets(
            DEFAULT_BUFFER_PACKETS if buffer_packets is None else buffer_packets
        )
        cap = as_int(max_events, "max_events", 1)
        place = (
            np.asarray(pl, dtype=np.int64)
            if pl
            else np.arange(s.num_ranks, dtype=np.int64)
        )
        if driver is not None and not isinstance(driver, _routers.Driver):
            raise TypeError(
                f"driver must be a wafercoll.Driver, got {type(driver).__name__}"
            )
        raw = _routers.run(s, t, net, place, buf, cap, driver)
        name = f"{net.name} (routers, {buf} packets)"
        if driver is not None:
            nis = "interface" if driver.interfaces == 1 else "interfaces"
            name = f"{name[:-1]}, driver with {driver.interfaces} {nis})"
        return _result(raw, net.replace(name=name), s, t, pl)
    if engine == "simgrid":
        if timeline or trace:
            raise ValueError(
                'engine="simgrid" records transfer times only (no timeline or trace)'
            )
        from . import _simgrid

        if s.switches.any():
            raise ValueError(
                'engine="simgrid" does not model switch ranks (in-network '
                'reduction); use engine="wafercoll"'
            )
        place = (
            np.asarray(pl, dtype=np.int32)
            if pl
            else np.arange(s.num_ranks, dtype=np.int32)
        )
        _core.simulation_events(s._core, t._core, net._core_model(), pl, 1 << 62)
        raw = _simgrid.run(s, t, net, place)
        return SimResult(raw, net.replace(name=f"{net.name} (simgrid)"), s, t, place)
    cap = as_int(max_events, "max_events", 1)
    if event_queue not in ("auto", "heap", "buckets"):
        raise ValueError(
            f"event_queue must be 'auto', 'heap' or 'buckets', got {event_queue!r}"
        )
    raw = _core.simulate(
        s._core,
        t._core,
        net._core_model(),
        pl,
        bool(transfers),
        bool(timeline),
        cap,
        event_queue,
        bool(trace),
    )
    return _result(raw, net, s, t, pl)


def _result(
    raw: dict[str, Any], net: NetworkModel, s: Schedule, t: Topology, pl: Any
) -> SimResult:
    """The core's result as a :class:`SimResult`, refusing a non-finite time."""
    place = (
        np.asarray(pl, dtype=np.int32) if pl else np.arange(s.num_ranks, dtype=np.int32)
    )
    if not np.isfinite(raw["time_s"]):
        raise ValueError(
            "the simulated time is not finite: the network model's bandwidths "
            "are too small or its delays too large for this schedule"
        )
    return SimResult(raw, net, s, t, place)


def simulate_tasks(
    schedule: Schedule,
    topology: Topology,
    network: NetworkModel,
    *,
    task_rank: Any,
    task_seconds: Any,
    before: Any,
    after: Any,
    placement: Sequence[int] | np.ndarray | None = None,
    transfers: bool = False,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> SimResult:
    """Simulate ``schedule`` together with a task graph, in one event loop.

    Tasks are numbered after the ``T`` transfers: task ``k`` has id
    ``T + k``. A task with ``task_rank[k] >= 0`` is compute: it occupies
    that rank's compute unit (the one that performs reductions at the
    model's ``gamma_s_per_byte``) for ``task_seconds[k]``, first come, first
    served by the time it becomes ready (ties by task id). A task with rank
    -1 is a gate: it takes no time and completes when it becomes ready. The
    edge ``(before[i], after[i])`` holds ``after[i]`` (a transfer or task id)
    back until ``before[i]`` has completed, on top of the schedule's own
    dependencies. Everything else is :func:`simulate`'s model; the result's
    ``task_start_s`` and ``task_finish_s`` give each task's times and
    ``time_s`` the completion of the last transfer or task.

    This is the mechanism under :func:`wafercoll.workloads.simulate_workload`:
    several collectives in one schedule, each behind its own gates.

    Parameters
    ----------
    schedule, topology, network, placement, transfers, max_events
        As for :func:`simulate` (the model needs ``dependencies="complete"``).
    task_rank : array_like of int, shape (K,)
        Rank whose compute unit each task occupies, or -1 for a gate.
    task_seconds : array_like of float, shape (K,)
        Duration of each task (0 for gates).
    before, after : array_like of int, shape (E,)
        Dependency edges over ids in ``[0, T + K)``.

    Raises
    ------
    ValueError
        For malformed tasks or edges (naming the task or edge), a cycle, or
        anything :func:`simulate` refuses.

    Examples
    --------
    One 1 MB message behind a 1 ms compute task on its sender, and a 2 ms
    compute task on the receiver behind the message:

    >>> import wafercoll as wc
    >>> prog = wc.kit.Program(2, [10**6], "unknown", rule="explicit")
    >>> _ = prog.step(0, 1, 0)  # rank 0 sends block 0 to rank 1
    >>> s = prog.schedule()
    >>> r = wc.simulate_tasks(
    ...     s, wc.line(2), wc.NetworkModel(1e9), task_rank=[0, 1],
    ...     task_seconds=[1e-3, 2e-3], before=[1, 0], after=[0, 2])
    >>> [round(float(x) * 1e3, 9) for x in r.task_finish_s], round(r.time_s * 1e3, 9)
    ([1.0, 4.0], 4.0)
    """
    s, t, net, pl = check_schedule_inputs(schedule, topology, network, placement)
    cap = as_int(max_events, "max_events", 1)
    ranks = int_array(task_rank, "task_rank", np.int32)
    secs = np.ascontiguousarray(np.asarray(task_seconds, dtype=np.float64).ravel())
    if secs.shape != ranks.shape:
        raise ValueError(
            f"task_seconds must have one entry per task ({ranks.size}), got {secs.size}"
        )
    b = int_array(before, "before", np.int64)
    a = int_array(after, "after", np.int64)
    if b.shape != a.shape:
        raise ValueError(
            f"before and after must have equal lengths, got {b.size} and {a.size}"
        )
    raw = _core.simulate_tasks(
        s._core, t._core, net._core_model(), pl, bool(transfers), cap, ranks, secs, b, a
    )
    return _result(raw, net, s, t, pl)


def release_memory() -> int:
    """Give back the memory the simulator keeps for its next runs.

    Large blocks (2 MiB or more) that a simulation or a verification frees
    are kept, up to 1 GiB in all, and reused by later runs of similar
    schedules, which then skip the kernel's page faults and the zeroing of
    fresh memory (a sweep, an advisor's candidates, a benchmark's repeats).
    Call this after the last large run of a long-lived process, such as a
    notebook, to return those blocks to the system at once.

    Returns
    -------
    int
        The bytes given back.

    Examples
    --------
    >>> import wafercoll as wc
    >>> m = wc.topology.ring(64)
    >>> s = wc.build("generic_ring_allreduce", topology=m, size_bytes=1 << 20)
    >>> _ = wc.simulate(s, m, wc.NetworkModel(1e9))
    >>> wc.release_memory() >= 0
    True
    >>> wc.release_memory()
    0
    """
    return int(_core.release_cached_memory())


def simulation_events(
    schedule: Schedule,
    topology: Topology,
    network: NetworkModel,
    *,
    placement: Sequence[int] | np.ndarray | None = None,
) -> int:
    """Packet-stage events :func:`simulate` would process (a cost estimate).

    Examples
    --------
    A ring allreduce on 3 ranks makes 12 one-hop transfers of 8 bytes: one
    event each as one packet, two each when packets carry 4 bytes.

    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", ranks=3, size_bytes=24)
    >>> s.num_transfers
    12
    >>> wc.simulation_events(s, wc.ring(3), wc.NetworkModel(bandwidth_Bps=1e9))
    12
    >>> net = wc.NetworkModel(bandwidth_Bps=1e9, packet_bytes=4)
    >>> wc.simulation_events(s, wc.ring(3), net)
    24
    """
    s, t, net, pl = check_schedule_inputs(schedule, topology, network, placement)
    return int(
        _core.simulation_events(s._core, t._core, net._core_model(), pl, 1 << 62)
    )
