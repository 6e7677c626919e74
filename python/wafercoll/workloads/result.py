"""What a workload simulation measured: step time, its breakdown, timelines.

Per rank, the simulated step splits into

* **compute**: time its compute unit runs compute nodes;
* **communication**: time the rank is inside a collective or a send (from
  entering it, its dependencies met, to being done with it there, which
  includes waiting for the other ranks);
* **overlap**: both at once; **exposed communication**: communication
  without compute; **idle**: neither.

``compute_s + exposed_communication_s + idle_s == step_time_s`` for every
rank (up to float rounding). Compute time here is the compute nodes' only;
reductions inside collectives, which occupy the same unit when the network
model's ``gamma_s_per_byte`` is set, count as communication.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from .._util import as_int, write_atomic
from ..simulate import SimResult
from .graph import Workload

__all__ = ["WorkloadResult"]

_COLUMNS = (
    "compute_s",
    "communication_s",
    "overlap_s",
    "exposed_communication_s",
    "idle_s",
)


def _union_length(a: np.ndarray, b: np.ndarray) -> float:
    """Total length of the union of the intervals ``[a[i], b[i])``."""
    if a.size == 0:
        return 0.0
    order = np.argsort(a, kind="stable")
    a, b = a[order], b[order]
    reach = np.maximum.accumulate(b)
    # A new piece starts where an interval begins after all before it ended.
    starts = np.concatenate(([True], a[1:] > reach[:-1]))
    idx = np.flatnonzero(starts)
    ends = np.concatenate((reach[idx[1:] - 1], [reach[-1]]))
    return float(np.sum(ends - a[idx]))


class WorkloadResult:
    """The outcome of :func:`wafercoll.workloads.simulate_workload`.

    Attributes
    ----------
    step_time_s : float
        Completion of the last node.
    node_start_s, node_finish_s : ndarray, shape (nodes,)
        Per node: the earliest time a rank started it (a compute node: when
        its compute unit took it; a collective: when its first rank
        entered) and the latest time a rank was done with it.
    algorithms : dict of int to str
        The algorithm each collective node ran (``"send"`` for sends).
    link_busy_s : ndarray, shape (links,)
        Busy time of each link over the whole run.
    simulation : SimResult
        The underlying result (``task_start_s``, ``compute_busy_s``...).

    Examples
    --------
    >>> import wafercoll as wc
    >>> w = wc.workload(2)
    >>> a = w.compute(0, 2e-3)
    >>> b = w.compute(1, 1e-3)
    >>> res = w.simulate(wc.line(2), wc.NetworkModel(1e9))
    >>> res.step_time_s, res.breakdown()["idle_s"].tolist()
    (0.002, [0.0, 0.001])
    """

    def __init__(
        self,
        workload: Workload,
        simulation: SimResult,
        entry: list[dict[int, int]],
        exit: list[dict[int, int]],
        algorithms: dict[int, str],
        traffic: tuple[Any, np.ndarray, dict[int, tuple[Any, ...]]] | None = None,
    ) -> None:
        self._traffic = traffic
        self._iv: tuple[list[list[Any]], list[list[Any]]] | None = None
        self.workload = workload
        self.simulation = simulation
        self.step_time_s = float(simulation.time_s)
        self.algorithms = {k: v for k, v in algorithms.items() if v}
        self.link_busy_s = simulation.link_busy_s
        start = np.asarray(simulation.task_start_s, dtype=np.float64)
        finish = np.asarray(simulation.task_finish_s, dtype=np.float64)
        self._entry = entry
        self._exit = exit
        self._start = start
        self._finish = finish
        n = len(entry)
        self.node_start_s = np.array(
            [min(start[k] for k in entry[i].values()) for i in range(n)]
        )
        self.node_finish_s = np.array(
            [max(finish[k] for k in exit[i].values()) for i in range(n)]
        )

    def rank_times(self, node: int) -> dict[int, tuple[float, float]]:
        """When each rank of ``node`` started it and was done with it.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(2)
        >>> c = w.collective("allreduce", 8, algorithm="generic_ring_allreduce")
        >>> res = w.simulate(wc.line(2), wc.NetworkModel(1e9))
        >>> sorted(res.rank_times(c))
        [0, 1]
        """
        i = as_int(node, "node", 0, len(self._entry) - 1)
        return {
            r: (float(self._start[self._entry[i][r]]), float(self._finish[x]))
            for r, x in self._exit[i].items()
            if r >= 0  # a join's gate sits at -1
        }

    def link_bytes(self, node: int) -> np.ndarray:
        """Payload bytes that node ``node`` puts on each link of the topology.

        From its transfers' routes (a multicast charges each link of the
        union of its routes once, as the simulator does); a node's share of
        a link is this over :attr:`simulation`'s ``link_bytes``. Zero for
        compute nodes and one-rank collectives.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(3)
        >>> m = w.send(0, 2, 1000)
        >>> res = w.simulate(wc.line(3), wc.NetworkModel(1e9))
        >>> res.link_bytes(m).tolist()  # links 0->1, 1->2, 1->0, 2->1
        [1000, 1000, 0, 0]
        """
        i = as_int(node, "node", 0, len(self._entry) - 1)
        if self._traffic is None:
            raise ValueError("this result carries no traffic (made without a plan)")
        topo, place, by_node = self._traffic
        out = np.zeros(topo.num_links, dtype=np.int64)
        piece = by_node.get(i)
        if piece is None:
            return out
        routes: dict[tuple[int, int], np.ndarray] = {}

        def route(a: int, b: int) -> np.ndarray:
            key = (a, b)
            if key not in routes:
                routes[key] = np.asarray(topo.route(a, b), dtype=np.int64)
            return routes[key]

        if piece[0] == "send":
            _, a, b, size = piece
            out[route(int(place[a]), int(place[b]))] += size
            return out
        _, s, cmap = piece
        dsts, offs = s.destinations()
        sizes = s.transfer_bytes()
        src = place[cmap[np.asarray(s.src)]]
        dst = place[cmap[np.asarray(dsts)]]
        for t in range(s.num_transfers):
            a = int(src[t])
            links = [route(a, int(d)) for d in dst[offs[t] : offs[t + 1]]]
            used = np.unique(np.concatenate(links)) if len(links) > 1 else links[0]
            out[used] += int(sizes[t])
        return out

    def _intervals(self) -> tuple[list[list[Any]], list[list[Any]]]:
        """Per rank: compute intervals and communication intervals (made once)."""
        if self._iv is not None:
            return self._iv
        p = self.workload.ranks
        comp: list[list[Any]] = [[] for _ in range(p)]
        comm: list[list[Any]] = [[] for _ in range(p)]
        for node in self.workload:
            i = node.id
            if node.kind == "join":
                continue
            target = comp if node.kind == "compute" else comm
            for r, x in self._exit[i].items():
                target[r].append((self._start[self._entry[i][r]], self._finish[x]))
        self._iv = (comp, comm)
        return self._iv

    def breakdown(self) -> dict[str, np.ndarray]:
        """Per-rank breakdown of the step (see the module), as arrays.

        Returns
        -------
        dict of str to ndarray
            ``rank`` and the columns ``compute_s``, ``communication_s``,
            ``overlap_s``, ``exposed_communication_s`` and ``idle_s``, one
            entry per rank; ``compute_s + exposed_communication_s + idle_s``
            equals :attr:`step_time_s`.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(2)
        >>> a = w.compute(0, 1e-3)
        >>> m = w.send(0, 1, 10**6, deps=[a])
        >>> res = w.simulate(wc.line(2), wc.NetworkModel(1e9))
        >>> b = res.breakdown()
        >>> [round(float(b[k][1]) * 1e3, 9) for k in ("communication_s", "idle_s")]
        [2.0, 0.0]
        """
        comp, comm = self._intervals()
        p = self.workload.ranks
        out = {k: np.zeros(p) for k in _COLUMNS}
        for r in range(p):
            ca = np.array(comp[r], dtype=np.float64).reshape(-1, 2)
            ma = np.array(comm[r], dtype=np.float64).reshape(-1, 2)
            c = _union_length(ca[:, 0], ca[:, 1])
            m = _union_length(ma[:, 0], ma[:, 1])
            both = np.vstack((ca, ma))
            union = _union_length(both[:, 0], both[:, 1])
            out["compute_s"][r] = c
            out["communication_s"][r] = m
            out["overlap_s"][r] = c + m - union
            out["exposed_communication_s"][r] = union - c
            out["idle_s"][r] = self.step_time_s - union
        out["rank"] = np.arange(p)
        return out

    def summary(self) -> dict[str, float]:
        """The step time and the breakdown averaged over ranks.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(2)
        >>> _ = [w.compute(r, 1e-3) for r in range(2)]
        >>> w.simulate(wc.line(2), wc.NetworkModel(1e9)).summary()["compute_s"]
        0.001
        """
        b = self.breakdown()
        out = {"step_time_s": self.step_time_s}
        out.update({k: float(np.mean(b[k])) for k in _COLUMNS})
        return out

    def to_pandas(self) -> Any:
        """One row per node: id, kind, name, ranks, algorithm, start, finish.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(1)
        >>> _ = w.compute(0, 1e-3, name="fwd")
        >>> w.simulate(wc.line(1), wc.NetworkModel(1e9)).to_pandas()["name"].tolist()
        ['fwd']
        """
        import pandas as pd

        rows = [
            {
                "id": n.id,
                "kind": n.kind,
                "name": n.name,
                "collective": n.collective,
                "size_bytes": n.size_bytes,
                "ranks": len(n.ranks),
                "algorithm": self.algorithms.get(n.id, ""),
                "start_s": float(self.node_start_s[n.id]),
                "finish_s": float(self.node_finish_s[n.id]),
            }
            for n in self.workload
        ]
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"<WorkloadResult: step {s['step_time_s']:.6g} s; per rank on average "
            f"compute {s['compute_s']:.6g} s, exposed communication "
            f"{s['exposed_communication_s']:.6g} s, idle {s['idle_s']:.6g} s>"
        )

    # -- pictures and traces ---------------------------------------------------
    def plot_timeline(
        self,
        ax: Any = None,
        *,
        max_bars: int = 20000,
        bins: int = 600,
        max_lanes: int = 256,
    ) -> Any:
        """Gantt chart per rank: compute and communication as bars.

        Above ``max_bars`` bars, the chart aggregates as
        :func:`wafercoll.plot.plot_timeline_density` does: ranks grouped into
        at most ``max_lanes`` rows, time into ``bins`` columns, each cell
        showing the mean number of communication intervals in progress.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(2)
        >>> a = w.compute(0, 1e-3)
        >>> _ = w.send(0, 1, 1000, deps=[a])
        >>> ax = w.simulate(wc.line(2), wc.NetworkModel(1e9)).plot_timeline()
        >>> ax.get_ylabel()
        'rank'
        """
        from matplotlib.collections import PolyCollection

        from ..plot import interval_density, new_axes, time_unit

        cap = as_int(max_bars, "max_bars", 1)
        comp, comm = self._intervals()
        p = self.workload.ranks
        ax = new_axes(ax)
        t1 = max(self.step_time_s, np.finfo(float).tiny)
        scale, unit = time_unit(t1)
        total = sum(len(x) for x in comp) + sum(len(x) for x in comm)
        if total > cap:
            lane = np.concatenate([np.full(len(c), r) for r, c in enumerate(comm)])
            iv = np.array([x for c in comm for x in c], dtype=np.float64).reshape(-1, 2)
            dens, group, rows = interval_density(
                iv[:, 0],
                iv[:, 1],
                lane,
                p,
                window=(0.0, t1),
                bins=bins,
                max_lanes=max_lanes,
            )
            im = ax.imshow(
                dens,
                aspect="auto",
                interpolation="nearest",
                origin="upper",
                extent=(0.0, t1 / scale, rows * group - 0.5, -0.5),
                cmap="magma_r",
            )
            ax.figure.colorbar(im, ax=ax, label="communication in progress")
        else:
            styles = (("compute", comp, "#4c72b0"), ("communication", comm, "#dd8452"))
            for label, ivs, colour in styles:
                verts = [
                    [
                        (a / scale, r - 0.4),
                        (b / scale, r - 0.4),
                        (b / scale, r + 0.4),
                        (a / scale, r + 0.4),
                    ]
                    for r, lst in enumerate(ivs)
                    for a, b in lst
                ]
                if verts:
                    ax.add_collection(
                        PolyCollection(
                            verts,
                            facecolors=colour,
                            edgecolors="white",
                            linewidths=0.5,
                            alpha=0.8,
                            label=f"{label} ({len(verts)})",
                        )
                    )
            ax.set_xlim(0.0, t1 / scale)
            ax.set_ylim(p - 0.5, -0.5)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_xlabel(f"time ({unit})")
        ax.set_ylabel("rank")
        ax.set_title(
            f"{self.workload.name or 'workload'}: step {t1 / scale:.4g} {unit}"
        )
        return ax

    def to_perfetto(self, path: str | os.PathLike[str]) -> None:
        """Write a trace for Perfetto (ui.perfetto.dev) or chrome://tracing.

        The Chrome trace-event JSON format: one track per rank (its compute
        and communication as slices) and one per collective or send node
        (from its first rank's start to its last rank's finish), times in
        microseconds.

        Examples
        --------
        >>> import json, os, pathlib, tempfile
        >>> import wafercoll as wc
        >>> w = wc.workload(2)
        >>> _ = w.collective("allreduce", 64, algorithm="generic_ring_allreduce")
        >>> res = w.simulate(wc.line(2), wc.NetworkModel(1e9))
        >>> path = os.path.join(tempfile.mkdtemp(), "step.json")
        >>> res.to_perfetto(path)
        >>> len(json.loads(pathlib.Path(path).read_text())["traceEvents"]) > 0
        True
        """
        events: list[dict[str, Any]] = [
            {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "ranks"}},
            {
                "ph": "M",
                "pid": 2,
                "name": "process_name",
                "args": {"name": "collectives"},
            },
        ]
        for r in range(self.workload.ranks):
            events.append(
                {
                    "ph": "M",
                    "pid": 1,
                    "tid": r,
                    "name": "thread_name",
                    "args": {"name": f"rank {r}"},
                }
            )
        for node in self.workload:
            i = node.id
            if node.kind == "join":
                continue
            label = node.name or (
                node.collective if node.kind != "compute" else "compute"
            )
            cat = node.kind
            for r, x in self._exit[i].items():
                a = float(self._start[self._entry[i][r]])
                b = float(self._finish[x])
                events.append(
                    {
                        "ph": "X",
                        "pid": 1,
                        "tid": r,
                        "ts": a * 1e6,
                        "dur": (b - a) * 1e6,
                        "name": label,
                        "cat": cat,
                        "args": {"node": i},
                    }
                )
            if node.kind != "compute":
                a, b = float(self.node_start_s[i]), float(self.node_finish_s[i])
                events.append(
                    {
                        "ph": "X",
                        "pid": 2,
                        "tid": i,
                        "ts": a * 1e6,
                        "dur": (b - a) * 1e6,
                        "name": label,
                        "cat": cat,
                        "args": {
                            "node": i,
                            "bytes": node.size_bytes,
                            "ranks": len(node.ranks),
                            "algorithm": self.algorithms.get(i, ""),
                        },
                    }
                )
        write_atomic(path, json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}))
