"""Simulating a workload: collectives expanded, everything in one event loop.

:func:`simulate_workload` turns a :class:`~wafercoll.workloads.Workload`
into one schedule and one task graph for
:func:`wafercoll.simulate_tasks`:

* each collective node's schedule is built once per distinct (collective,
  size, algorithm, options, communicator size) and its transfers are copied
  into the run with the communicator's ranks; a send is one transfer;
* rank ``r`` of a collective node has an *entry* gate (its dependencies at
  ``r``) that every transfer ``r`` sends waits for, and an *exit* gate that
  waits for the entry and for every transfer ``r`` sends or receives: the
  node is done at ``r`` when its exit gate completes;
* a compute node is a task on its rank's compute unit; a join is a gate
  after the other nodes' gates.

So concurrent collectives share links (first come, first served, as in
:func:`wafercoll.simulate`), and a rank's compute waits for the collectives
it depends on only at that rank.

``algorithm="auto"`` picks, per distinct (collective, size, communicator),
the fastest algorithm simulated alone on the communicator's endpoints: on a
communicator of every rank in order, the advisor's best schedule that
computes the standard collective (:func:`wafercoll.advise`), else the
fastest of the algorithms that apply to any topology.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..advisor import advise
from ..algorithms import algorithms, build
from ..kit import Multi, Program, Ranges
from ..network import NetworkModel
from ..schedule import Schedule
from ..simulate import DEFAULT_MAX_EVENTS, simulate, simulate_tasks
from ..topology import Topology
from .graph import Workload
from .result import WorkloadResult

__all__ = ["simulate_workload"]

#: Transfers and tasks a workload may expand into before it is refused
#: (about 100 bytes each in Python and as much again in the simulator).
MAX_EXPANDED = 1 << 28


def simulate_workload(
    workload: Workload,
    topology: Topology,
    network: NetworkModel,
    *,
    placement: Sequence[int] | np.ndarray | None = None,
    progress: bool = False,
    max_events: int = DEFAULT_MAX_EVENTS,
) -> WorkloadResult:
    """Simulate ``workload`` on ``topology`` under ``network``.

    Parameters
    ----------
    workload : Workload
    topology : Topology
    network : NetworkModel
        Needs ``dependencies="complete"``. Its ``gamma_s_per_byte`` makes
        reductions occupy the same compute units as compute nodes.
    placement : sequence of int, optional
        Endpoint of each rank (default: rank ``r`` on endpoint ``r``).
    progress : bool
        Show a progress bar while the collectives are expanded.
    max_events : int
        As for :func:`wafercoll.simulate`.

    Returns
    -------
    WorkloadResult

    Raises
    ------
    ValueError
        For a workload larger than the topology, an algorithm that does not
        apply to a communicator, or anything :func:`wafercoll.simulate_tasks`
        refuses.

    Examples
    --------
    Two ranks compute 1 ms, exchange 1 MB (1 ms at 1 GB/s), then rank 1
    computes 2 ms more:

    >>> import wafercoll as wc
    >>> w = wc.workload(2)
    >>> a = w.compute(0, 1e-3)
    >>> m = w.send(0, 1, 10**6, deps=[a])
    >>> b = w.compute(1, 2e-3, deps=[m])
    >>> res = wc.workloads.simulate_workload(w, wc.line(2), wc.NetworkModel(1e9))
    >>> round(res.step_time_s * 1e3, 9)
    4.0
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    if not isinstance(topology, Topology):
        raise TypeError(f"topology must be a Topology, got {type(topology).__name__}")
    if not isinstance(network, NetworkModel):
        raise TypeError(f"network must be a NetworkModel, got {type(network).__name__}")
    if network.dependencies != "complete":
        raise ValueError(
            f"network: a workload runs its collectives with dependencies='complete', "
            f"the model {network.name!r} has {network.dependencies!r}; use "
            "network.replace(dependencies='complete')"
        )
    if workload.ranks > topology.num_endpoints:
        raise ValueError(
            f"the workload has {workload.ranks} ranks but the topology "
            f"{topology.name} has {topology.num_endpoints} endpoints"
        )
    place = _placement(placement, workload.ranks, topology.num_endpoints)
    plan = _Expansion(workload, topology, network, place)
    plan.expand(progress)
    combined = plan.schedule()
    before, after = plan.edges()
    sim = simulate_tasks(
        combined,
        topology,
        network,
        task_rank=np.asarray(plan.task_rank, dtype=np.int32),
        task_seconds=np.asarray(plan.task_seconds, dtype=np.float64),
        before=before,
        after=after,
        placement=None if placement is None else place,
        max_events=max_events,
    )
    return WorkloadResult(
        workload,
        sim,
        plan.entry,
        plan.exit,
        plan.algorithm,
        traffic=(topology, place, plan.by_node),
    )


def _placement(placement: Any, ranks: int, endpoints: int) -> np.ndarray:
    if placement is None:
        return np.arange(ranks, dtype=np.int64)
    pl = np.asarray(placement)
    if (
        pl.ndim != 1
        or pl.size != ranks
        or (pl.size and not np.issubdtype(pl.dtype, np.integer))
    ):
        raise ValueError(
            f"placement must hold one endpoint per rank ({ranks} integers)"
        )
    if pl.size and (pl.min() < 0 or pl.max() >= endpoints):
        raise ValueError(f"placement: endpoints must lie in [0, {endpoints})")
    if np.unique(pl).size != pl.size:
        raise ValueError("placement: endpoints must be distinct")
    return pl.astype(np.int64)


class _Expansion:
    """The schedule pieces, tasks and edges of one workload (see the module).

    Transfers are numbered in the order the nodes add them; tasks are
    numbered from 0 here and shifted by the number of transfers ``T`` when
    the edges are assembled (:meth:`edges`).
    """

    def __init__(
        self, w: Workload, topology: Topology, network: NetworkModel, place: np.ndarray
    ) -> None:
        self.w = w
        self.topology = topology
        self.network = network
        self.place = place
        self.schedules: dict[Any, Schedule] = {}
        self.chosen: dict[Any, str] = {}
        # Pieces of the combined schedule, in transfer order: a collective's
        # (schedule, rank map, first block) or a send's (src, dst, block).
        self.pieces: list[tuple[Any, ...]] = []
        self.transfers = 0
        self.block_bytes: list[np.ndarray] = []
        self.blocks = 0
        self.task_rank: list[int] = []
        self.task_seconds: list[float] = []
        # Task -> task edges, and (before, after, before is a transfer) arrays.
        self.task_edges: tuple[list[int], list[int]] = ([], [])
        self.mixed: list[tuple[np.ndarray, np.ndarray, bool]] = []
        # Per node: rank -> entry task and rank -> exit task (a compute
        # node's task is both).
        self.entry: list[dict[int, int]] = []
        self.exit: list[dict[int, int]] = []
        self.done_all: dict[int, int] = {}
        self.algorithm: dict[int, str] = {}
        # Per communication node: its schedule and rank map, or a send's
        # (src, dst, bytes), for the per-link traffic of the result.
        self.by_node: dict[int, tuple[Any, ...]] = {}

    # -- tasks and edges -----------------------------------------------------
    def _task(self, rank: int, seconds: float) -> int:
        self.task_rank.append(rank)
        self.task_seconds.append(seconds)
        return len(self.task_rank) - 1

    def _edge(self, before: int, after: int) -> None:
        self.task_edges[0].append(before)
        self.task_edges[1].append(after)

    def _done_at(self, d: int, r: int) -> int:
        """The task that completes when node ``d`` is done at rank ``r``."""
        ex = self.exit[d]
        return ex[r] if r in ex else self._done_everywhere(d)

    def _done_everywhere(self, d: int) -> int:
        """The task that completes when node ``d`` is done at all its ranks."""
        g = self.done_all.get(d)
        if g is None:  # a gate after every rank of d
            g = self._task(-1, 0.0)
            for x in dict.fromkeys(self.exit[d].values()):
                self._edge(x, g)
            self.done_all[d] = g
        return g

    def expand(self, progress: bool) -> None:
        nodes = self.w.nodes
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(nodes), unit="node", desc="workload")
        for n in nodes:
            if n.kind == "compute":
                (r,) = n.ranks
                k = self._task(r, n.seconds)
                for d in n.deps[r]:
                    self._edge(self._done_at(d, r), k)
                self.entry.append({r: k})
                self.exit.append({r: k})
                self.algorithm[n.id] = ""
            elif n.kind == "join":
                g = self._task(-1, 0.0)
                for d in n.deps[-1]:
                    self._edge(self._done_everywhere(d), g)
                # Rank -1: its own gate, which no rank's lookup can reach.
                self.entry.append({-1: g})
                self.exit.append({-1: g})
                self.done_all[n.id] = g
                self.algorithm[n.id] = ""
            else:
                self._communication(n)
            if self.transfers + len(self.task_rank) > MAX_EXPANDED:
                raise ValueError(
                    f"the workload expands into more than {MAX_EXPANDED} transfers "
                    "and tasks; simulate fewer or smaller collectives"
                )
            if bar is not None:
                bar.update()
        if bar is not None:
            bar.close()

    def _communication(self, n: Any) -> None:
        comm = n.ranks
        ent = {r: self._task(-1, 0.0) for r in comm}
        ex = {r: self._task(-1, 0.0) for r in comm}
        for r in comm:
            for d in n.deps[r]:
                self._edge(self._done_at(d, r), ent[r])
            self._edge(ent[r], ex[r])
        self.entry.append(ent)
        self.exit.append(ex)
        if n.kind == "send":
            src, dst = comm
            self.algorithm[n.id] = "send"
            self.by_node[n.id] = ("send", src, dst, n.size_bytes)
            self._piece(("send", src, dst, self.blocks), 1, [n.size_bytes])
            tid = np.array([self.transfers - 1], dtype=np.int64)
            self.mixed.append((np.array([ent[src]], dtype=np.int64), tid, False))
            self.mixed.append((tid, np.array([ex[src]], dtype=np.int64), True))
            self.mixed.append((tid, np.array([ex[dst]], dtype=np.int64), True))
            return
        s = self._schedule(n)
        if s is None or s.num_transfers == 0:
            return
        cmap = np.asarray(comm, dtype=np.int64)
        self.by_node[n.id] = ("part", s, cmap)
        t0 = self.transfers
        self._piece(("part", s, cmap, self.blocks), s.num_transfers, s.block_bytes)
        ids = np.arange(t0, t0 + s.num_transfers, dtype=np.int64)
        ent_a = np.array([ent[r] for r in comm], dtype=np.int64)
        ex_a = np.array([ex[r] for r in comm], dtype=np.int64)
        src = np.asarray(s.src, dtype=np.int64)
        dsts, offs = s.destinations()
        self.mixed.append((ent_a[src], ids, False))  # entry at the sender
        self.mixed.append((ids, ex_a[src], True))  # exit at the sender
        owner = np.repeat(ids, np.diff(offs))
        self.mixed.append((owner, ex_a[np.asarray(dsts, dtype=np.int64)], True))

    def _piece(self, piece: tuple[Any, ...], transfers: int, block_bytes: Any) -> None:
        self.pieces.append(piece)
        self.transfers += transfers
        bb = np.asarray(block_bytes, dtype=np.int64)
        self.block_bytes.append(bb)
        self.blocks += bb.size

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """All edges over ids in ``[0, T + K)``."""
        T = self.transfers
        bs = [np.asarray(self.task_edges[0], dtype=np.int64) + T]
        as_ = [np.asarray(self.task_edges[1], dtype=np.int64) + T]
        for b, a, b_is_transfer in self.mixed:
            bs.append(b if b_is_transfer else b + T)
            as_.append(a + T if b_is_transfer else a)
        return np.concatenate(bs), np.concatenate(as_)

    # -- schedules -----------------------------------------------------------
    def _schedule(self, n: Any) -> Schedule | None:
        k = len(n.ranks)
        if k == 1:
            self.algorithm[n.id] = "none (one rank)"
            return None
        opts = tuple(sorted((key, _hashable(v)) for key, v in n.options.items()))
        whole = k == self.w.ranks and list(n.ranks) == list(range(k))
        name = n.algorithm
        if name == "auto":
            ck = (n.collective, n.size_bytes, n.ranks, opts)
            if ck not in self.chosen:
                self.chosen[ck] = self._choose(n, whole)
            name = self.chosen[ck]
        key = (name, n.size_bytes, k, opts, whole)
        if key not in self.schedules:
            try:
                self.schedules[key] = build(
                    name,
                    k,
                    n.size_bytes,
                    topology=self.topology if whole else None,
                    **n.options,
                )
            except (ValueError, TypeError) as exc:
                raise ValueError(
                    f"node {n.id} ({n.collective} on {k} ranks): {name} does not "
                    f"apply: {exc}"
                ) from exc
            if self.schedules[key].switches.any():
                del self.schedules[key]
                raise ValueError(
                    f"node {n.id} ({n.collective} on {k} ranks): {name} reduces in "
                    "the network (switch ranks), which workloads do not place yet; "
                    "simulate it alone with wc.simulate"
                )
        self.algorithm[n.id] = name
        return self.schedules[key]

    def _choose(self, n: Any, whole: bool) -> str:
        """The fastest applicable algorithm for node ``n``, alone on its ranks."""
        k = len(n.ranks)
        if whole and not n.options and k == self.topology.default_ranks:
            adv = advise(
                self.topology, n.size_bytes, n.collective, self.network, keep=None
            )
            for c in adv.ranked():
                if c.status == "simulated" and not c.differs:
                    return c.name
        best, best_t = "", math.inf
        endpoints = self.place[list(n.ranks)]
        for info in algorithms(n.collective):
            if "any" not in info.families or info.artifact_names or k > info.max_ranks:
                continue
            try:
                s = build(info.name, k, n.size_bytes, **n.options)
            except (ValueError, TypeError):
                continue
            if s.differs_from_standard(k):
                continue
            t = simulate(s, self.topology, self.network, placement=endpoints).time_s
            if t < best_t:
                best, best_t = info.name, t
        if not best:
            raise ValueError(
                f"node {n.id}: no registered algorithm builds {n.collective} on "
                f"{k} ranks with options {n.options}"
            )
        return best

    # -- the combined schedule ------------------------------------------------
    def schedule(self) -> Schedule:
        """All transfers of all collectives and sends, as one schedule."""
        cols: dict[str, list[np.ndarray]] = {
            k: []
            for k in ("src", "dst", "doff", "lo", "hi", "roff", "deps", "poff", "op")
        }
        d_base = r_base = p_base = t_base = 0
        for piece in self.pieces:
            if piece[0] == "send":
                _, a, b, blk = piece
                one = np.ones(1, dtype=np.int64)
                cols["src"].append(one * a)
                cols["dst"].append(one * b)
                cols["doff"].append(one * (d_base + 1))
                cols["lo"].append(one * blk)
                cols["hi"].append(one * (blk + 1))
                cols["roff"].append(one * (r_base + 1))
                cols["poff"].append(one * p_base)
                cols["op"].append(np.zeros(1, dtype=np.uint8))
                d_base, r_base, t_base = d_base + 1, r_base + 1, t_base + 1
                continue
            _, s, cmap, b0 = piece
            dsts, offs = s.destinations()
            lo, hi, roff = s.block_ranges()
            deps, poff = s.dependencies()
            cols["src"].append(cmap[np.asarray(s.src)])
            cols["dst"].append(cmap[np.asarray(dsts)])
            cols["doff"].append(np.asarray(offs[1:], dtype=np.int64) + d_base)
            cols["lo"].append(np.asarray(lo, dtype=np.int64) + b0)
            cols["hi"].append(np.asarray(hi, dtype=np.int64) + b0)
            cols["roff"].append(np.asarray(roff[1:], dtype=np.int64) + r_base)
            cols["deps"].append(np.asarray(deps, dtype=np.int64) + t_base)
            cols["poff"].append(np.asarray(poff[1:], dtype=np.int64) + p_base)
            cols["op"].append(np.asarray(s.op, dtype=np.uint8))
            d_base += int(offs[-1])
            r_base += int(roff[-1])
            p_base += int(poff[-1])
            t_base += s.num_transfers

        def cat(key: str, lead: bool = False) -> np.ndarray:
            arrs = ([np.zeros(1, dtype=np.int64)] if lead else []) + cols[key]
            return np.concatenate(arrs) if arrs else np.zeros(0, dtype=np.int64)

        bb = np.concatenate(self.block_bytes) if self.block_bytes else np.zeros(0)
        prog = Program(
            self.w.ranks,
            bb if bb.size else np.zeros(1, dtype=np.int64),
            "unknown",
            rule="explicit",
            name=self.w.name or "workload",
        )
        if self.transfers:
            prog.step(
                cat("src"),
                Multi(cat("dst"), cat("doff", True)),
                Ranges(cat("lo"), cat("hi"), cat("roff", True)),
                np.concatenate(cols["op"]),
                deps=(cat("deps"), cat("poff", True)),
            )
        return prog.schedule()


def _hashable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return ("array", v.shape, v.tobytes())
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v
