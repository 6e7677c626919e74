"""Which algorithm for this machine and this size? Rank every registered one.

:func:`advise` builds every registered algorithm of a collective (plugins
included) that applies to a topology, verifies it, puts its closed-form
prediction beside it where the algorithm has one, simulates it under the
network model and ranks the results by simulated time, with each one's
bandwidth (``size / time``) and optimality ratio against
:func:`wafercoll.bounds.lower_bound`.

Simulations that cannot win are skipped: before simulating, every schedule
gets its own lower bound from the bytes it puts on each link and endpoint
(:func:`wafercoll.bounds.schedule_lower_bound`, no simulation needed), and
candidates are simulated from the most promising up; once ``keep``
algorithms have been simulated, one whose own bound already exceeds the
``keep``-th best time is reported as ``"pruned"`` with that bound (it is
certainly slower) instead of being simulated. ``keep=None`` simulates all.
Schedules of fewer than ``prune_from`` transfers (default
:data:`PRUNE_FROM`) are always simulated: they take milliseconds, and a
ranking with their times and ratios says more than one with their bounds
(on an NVSwitch node, the in-network schedules are fastest, and NCCL's ring
and tree and the synthesized schedule are still ranked beside them).

:func:`crossover` does this at many sizes and reports which algorithm wins
where (the wafer paper's Fig. 8 for any machine), as a table and a plot.

Examples
--------
>>> import wafercoll as wc
>>> adv = wc.advise(wc.ring(8), 1 << 20, network=wc.NetworkModel(1e9))
>>> adv.best.name
'torus_ring_bidir_allreduce'
>>> round(adv.best.ratio, 3)
1.0
"""

from __future__ import annotations

import dataclasses
import html
import math
import os
import sys
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

import numpy as np

from . import bounds, machines
from ._errors import ScheduleError
from ._util import as_int, html_table, human_bytes, human_seconds, stop_threads
from .algorithms import ANY, AlgorithmInfo, algorithms, build
from .analysis import verify
from .network import NetworkModel, check_machine
from .schedule import COLLECTIVES, alltoallv_blocks
from .simulate import simulate
from .topology import Topology

__all__ = [
    "Advice",
    "Candidate",
    "advise",
    "crossover",
    "crossover_csv",
    "crossover_table",
    "plot_crossover",
]

_STATUSES = ("simulated", "pruned", "not applicable", "failed")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One algorithm's row in an :class:`Advice`.

    Attributes
    ----------
    name : str
        Registered name.
    status : {"simulated", "pruned", "not applicable", "failed"}
        ``pruned``: its own lower bound exceeds a time already simulated,
        so it cannot rank first (``time_s`` is ``None``).
    time_s : float or None
        Simulated time.
    bandwidth_Bps : float or None
        ``size_bytes / time_s``.
    ratio : float or None
        ``time_s`` over the collective's lower bound.
    schedule_bound_s : float or None
        The schedule's own lower bound (from its link and endpoint loads).
    predicted_s : float or None
        The algorithm's closed form, where it has one.
    transfers : int or None
        Transfers in the schedule.
    note : str
        Why it was not applicable, failed or pruned.
    differs : str
        How the schedule's collective differs from the standard one
        (:meth:`wafercoll.Schedule.differs_from_standard`: other owners,
        fewer participants), ``""`` when it computes the standard collective.
        Its ratio is against the bound of what it computes.
    """

    name: str
    status: str
    time_s: float | None = None
    bandwidth_Bps: float | None = None
    ratio: float | None = None
    schedule_bound_s: float | None = None
    predicted_s: float | None = None
    transfers: int | None = None
    note: str = ""
    differs: str = ""


@dataclasses.dataclass(frozen=True)
class Advice:
    """The ranking :func:`advise` returns.

    Attributes
    ----------
    candidates : list of Candidate
        Simulated ones by time, then pruned ones by their bound, then the
        rest.
    bound : LowerBound
        Lower bound on any schedule of the collective.
    collective : str
    size_bytes : int
    topology : str
    network : str
    """

    candidates: list[Candidate]
    bound: bounds.LowerBound
    collective: str
    size_bytes: int
    topology: str
    network: str

    @property
    def best(self) -> Candidate:
        """The fastest simulated candidate."""
        for c in self.candidates:
            if c.status == "simulated":
                return c
        raise ValueError("no algorithm could be simulated on this machine")

    def ranked(self) -> list[Candidate]:
        """Simulated and pruned candidates, fastest first."""
        return [c for c in self.candidates if c.status in ("simulated", "pruned")]

    def to_pandas(self) -> Any:
        """One row per candidate (pandas needed)."""
        import pandas as pd

        return pd.DataFrame([dataclasses.asdict(c) for c in self.candidates])

    def to_dict(self) -> dict[str, Any]:
        """The size, the lower bound and every candidate as plain data."""
        return {
            "size_bytes": self.size_bytes,
            "lower_bound": self.bound.to_dict(),
            "candidates": [dataclasses.asdict(c) for c in self.candidates],
        }

    def to_csv(self) -> str:
        """The table as CSV text (no pandas needed)."""
        fields = [f.name for f in dataclasses.fields(Candidate)]
        lines = [",".join(["rank", *fields])]
        for i, c in enumerate(self.candidates, 1):
            row = [str(i)]
            for f in fields:
                v = getattr(c, f)
                text = (
                    ""
                    if v is None
                    else (f"{v:.9g}" if isinstance(v, float) else str(v))
                )
                if "," in text or '"' in text:
                    text = '"' + text.replace('"', '""') + '"'
                row.append(text)
            lines.append(",".join(row))
        return "\n".join(lines) + "\n"

    def table(self, show_all: bool = False) -> str:
        """A plain-text table (what ``wafercoll advise`` prints).

        Algorithms of other topology families are counted, not listed,
        unless ``show_all``.
        """
        head = (
            f"{self.collective} of {human_bytes(self.size_bytes)} on {self.topology} "
            f"under {self.network}\nlower bound {_secs(self.bound.time_s)} "
            f"({self.bound.binding}: {self.bound.details[self.bound.binding]})"
        )
        if any("reduce in the network" in (c.differs or "") for c in self.candidates):
            head += (
                "\n(for reduction at the ranks; a schedule that reduces in the "
                "switches has a lower bound of its own, and its ratio is against it)"
            )
        rows = [("#", "algorithm", "time", "bandwidth", "ratio", "predicted", "status")]
        hidden = 0
        for c in self.candidates:
            if (
                not show_all
                and c.status == "not applicable"
                and c.note.startswith("for ")
            ):
                hidden += 1
                continue
            if c.status == "simulated":
                cells = (
                    _secs(c.time_s),
                    f"{c.bandwidth_Bps / 1e9:.3f} GB/s",
                    _ratio(c.ratio),
                )
            elif c.status == "pruned":
                cells = (f">= {_secs(c.schedule_bound_s)}", "", "")
            else:
                cells = ("", "", "")
            pred = _secs(c.predicted_s)
            status = c.status if not c.note else f"{c.status}: {c.note}"
            if c.differs:
                status += f" [computes another {self.collective}: {c.differs}]"
            rows.append((str(len(rows)), c.name, *cells, pred, status))
        widths = [max(len(r[k]) for r in rows) for k in range(6)]
        out = [head]
        for r in rows:
            out.append("  ".join(r[k].ljust(widths[k]) for k in range(6)) + "  " + r[6])
        if hidden:
            out.append(f"({hidden} algorithms of other topology families not listed)")
        return "\n".join(line.rstrip() for line in out)

    def __str__(self) -> str:
        return self.table()

    def _repr_html_(self) -> str:
        items = [("lower bound", f"{_secs(self.bound.time_s)} ({self.bound.binding})")]
        for i, c in enumerate(self.candidates, 1):
            if c.status == "simulated":
                text = (
                    f"{_secs(c.time_s)}, {c.bandwidth_Bps / 1e9:.3f} GB/s, "
                    f"ratio {_ratio(c.ratio)}"
                )
            elif c.status == "pruned":
                text = f"pruned: >= {_secs(c.schedule_bound_s)}"
            else:
                text = f"{c.status}: {c.note}"
            if c.differs:
                text += f" [computes another {self.collective}: {c.differs}]"
            items.append((f"{i}. {c.name}", text))
        caption = (
            f"advice: {self.collective} of {human_bytes(self.size_bytes)} on "
            f"{html.escape(self.topology)} under {html.escape(self.network)}"
        )
        return html_table(caption, items)


def _secs(t: float | None) -> str:
    return "" if t is None else human_seconds(t)


def _ratio(ratio: float | None) -> str:
    """A ratio to the lower bound as printed ("n/a": no bound covers the schedule)."""
    return "n/a" if ratio is None else f"{ratio:.3f}"


def _differs(s: Any, topology: Topology) -> str:
    """How a candidate's collective differs from the one asked for ("": not)."""
    return s.differs_from_standard(topology.default_ranks)


def _applies(info: AlgorithmInfo, topology: Topology) -> bool:
    return ANY in info.families or topology.kind in info.families


#: Schedules with fewer transfers than this are simulated even when their
#: bound says they cannot win (a simulation of this size takes milliseconds).
PRUNE_FROM = 20_000


def advise(
    topology: Topology | str,
    size_bytes: int,
    collective: str = "allreduce",
    network: NetworkModel | None = None,
    *,
    names: Sequence[str] | None = None,
    keep: int | None = 3,
    jobs: int | None = None,
    progress: bool = False,
    matrix: Any = None,
    prune_from: int | None = None,
) -> Advice:
    """Rank every registered algorithm of a collective on a machine.

    Parameters
    ----------
    topology : Topology or str
        The machine, or a spec of :func:`wafercoll.machines.resolve`
        (``"mesh:9x9"``, ``"mcm_table_ii:3x3"``).
    size_bytes : int
        Bytes of every rank's vector (>= 1).
    collective : str
        One of :data:`wafercoll.COLLECTIVES`.
    network : NetworkModel, optional
        Default: the machine's preset for a machine spec, else
        :func:`wafercoll.machines.default_network` (1 GB/s links, nothing
        else).
    names : sequence of str, optional
        Only these algorithms (default: every registered one that applies).
    keep : int or None
        Simulate at least the ``keep`` most promising; skip the others whose
        own bound exceeds the ``keep``-th best time (module docstring).
        ``None``: simulate every candidate.
    jobs : int, optional
        Simulations run at once on threads (default: one per core). The
        ranking does not depend on it; which candidates are pruned may (a
        pruned one is always slower than the ``keep`` fastest).
    progress : bool
        Print one line per candidate to stderr.
    matrix : array_like, shape (p, p), optional
        An alltoallv's bytes from rank ``i`` to rank ``j``
        (:func:`wafercoll.alltoall.moe_matrix` makes one); ``size_bytes`` is
        then its total.
    prune_from : int, optional
        Only schedules of at least this many transfers may be pruned
        (default :data:`PRUNE_FROM`; ``0``: any).

    Returns
    -------
    Advice

    Raises
    ------
    ValueError
        For an unknown collective or algorithm name, or a size below 1 B.

    Examples
    --------
    On a ring of 8 with 1 GB/s links, the bidirectional ring meets the bound
    of any allreduce (every rank must receive 7/8 of 1 MiB twice over its two
    links):

    >>> import wafercoll as wc
    >>> net = wc.NetworkModel(bandwidth_Bps=1e9)
    >>> a = wc.advise("ring:8", 1 << 20, network=net)
    >>> a.best.name, round(a.best.ratio, 6)
    ('torus_ring_bidir_allreduce', 1.0)
    """
    if collective not in COLLECTIVES:
        raise ValueError(
            f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}"
        )
    extra: dict[str, Any] = {}
    if matrix is not None:
        if collective != "alltoallv":
            raise ValueError(f"matrix applies only to alltoallv, not {collective}")
        extra["matrix"] = np.asarray(matrix)
        size_bytes = max(1, int(np.asarray(alltoallv_blocks(matrix)).sum()))
    S = as_int(size_bytes, "size_bytes", 1)
    topology, preset = machines.resolve(topology, size_bytes=S)
    if network is None:
        network = preset if preset is not None else machines.default_network()
    check_machine(topology, network)
    if keep is not None:
        keep = as_int(keep, "keep", 1)
    prune_from = as_int(
        PRUNE_FROM if prune_from is None else prune_from, "prune_from", 0
    )
    pool = algorithms(collective)
    if names is not None:
        known = {a.name: a for a in pool}
        bad = [n for n in names if n not in known]
        if bad:
            raise ValueError(
                f"not a registered {collective} algorithm: {', '.join(bad)}"
            )
        pool = [known[n] for n in names]
    rows: list[Candidate] = []
    built: list[tuple[float, AlgorithmInfo, Any, float | None]] = []
    for info in pool:
        if not _applies(info, topology):
            fams = ", ".join(info.families)
            rows.append(Candidate(info.name, "not applicable", note=f"for {fams}"))
            continue
        try:
            s = build(
                info.name,
                size_bytes=S,
                topology=topology,
                **extra,
                **info.network_options(network),
            )
        except (ValueError, TypeError) as exc:
            rows.append(Candidate(info.name, "not applicable", note=str(exc)))
            continue
        try:
            verify(s)
        except ScheduleError as exc:  # a plugin's defective schedule
            rows.append(Candidate(info.name, "failed", note=str(exc)))
            continue
        pred = None
        if info.predict is not None:
            pred = info.predict(s.num_ranks, S, topology, network)
        # No bound covers in-network reduction (switch ranks): never pruned.
        own = (
            0.0
            if s.switches.any()
            else bounds.schedule_lower_bound(s, topology, network).time_s
        )
        built.append((own, info, s, pred))
    built.sort(key=lambda item: item[0])
    bound = bounds.lower_bound(topology, network, collective, S, ranks=None, **extra)
    times: list[float] = []
    done: list[Candidate] = []
    pruned: list[Candidate] = []

    def finish(fut: Any, own: float, info: AlgorithmInfo, s: Any, pred: Any) -> None:
        try:
            r = fut.result()
        except (ValueError, MemoryError) as exc:
            done.append(Candidate(info.name, "failed", note=str(exc)))
            return
        times.append(r.time_s)
        done.append(
            Candidate(
                info.name,
                "simulated",
                time_s=r.time_s,
                bandwidth_Bps=S / r.time_s if r.time_s > 0 else math.inf,
                # Against the bound for this schedule's own participants.
                ratio=bounds.optimality_ratio(r),
                schedule_bound_s=own,
                predicted_s=pred,
                transfers=s.num_transfers,
                differs=_differs(s, topology),
            )
        )

    # Simulations run on threads (the simulator releases the GIL), the most
    # promising first. A candidate is pruned only once ``keep`` simulations
    # have finished and its own bound exceeds the keep-th best of them: the
    # final keep-th best can only be smaller, so pruning stays sound.
    workers = (os.cpu_count() or 1) if jobs is None else as_int(jobs, "jobs", 1, 256)
    pending: dict[Any, tuple[float, AlgorithmInfo, Any, Any]] = {}
    # Ctrl-C in this thread stops the simulations running on the pool's
    # threads too, instead of waiting for them to finish.
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for own, info, s, pred in built:
            while len(pending) >= workers:
                first, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in first:
                    finish(fut, *pending.pop(fut))
            if (
                keep is not None
                and s.num_transfers >= prune_from
                and len(times) >= keep
                and own > sorted(times)[keep - 1]
            ):
                pruned.append(
                    Candidate(
                        info.name,
                        "pruned",
                        schedule_bound_s=own,
                        predicted_s=pred,
                        transfers=s.num_transfers,
                        note=f"cannot beat the {keep} fastest",
                        differs=_differs(s, topology),
                    )
                )
                continue
            if progress:
                print(f"advise: simulating {info.name}", file=sys.stderr, flush=True)
            pending[pool.submit(simulate, s, topology, network)] = (own, info, s, pred)
        for fut in list(pending):
            finish(fut, *pending.pop(fut))
    except KeyboardInterrupt:
        stop_threads(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    done.sort(key=lambda c: c.name)  # finishing order must not matter
    # Simulated by time and pruned by their bound, in one order: a pruned
    # candidate is certainly slower than the first ``keep``, not necessarily
    # than the simulated ones after them.
    ranked = sorted(
        [*(c for c in done if c.status == "simulated"), *pruned],
        key=lambda c: c.time_s if c.status == "simulated" else c.schedule_bound_s,
    )
    failed = [c for c in done if c.status != "simulated"]
    return Advice(
        [*ranked, *failed, *rows],
        bound,
        collective,
        S,
        topology.name,
        network.name,
    )


def crossover(
    topology: Topology | str,
    sizes: Sequence[int],
    collective: str = "allreduce",
    network: NetworkModel | None = None,
    *,
    names: Sequence[str] | None = None,
    keep: int | None = 3,
    progress: bool = False,
) -> dict[str, Any]:
    """:func:`advise` at every size: who wins where.

    Returns
    -------
    dict
        ``"sizes"`` (the sizes), ``"winner"`` (the best algorithm at each),
        ``"advice"`` (the :class:`Advice` of each size) and ``"rows"``: one
        dict per simulated (size, algorithm) with ``size_bytes``,
        ``algorithm``, ``time_s``, ``bandwidth_Bps``, ``ratio`` and
        ``winner`` (bool), ready for a CSV or a DataFrame.

    Examples
    --------
    >>> import wafercoll as wc
    >>> net = wc.NetworkModel(bandwidth_Bps=1e9, hop_latency_s=1e-6)
    >>> x = wc.crossover("ring:8", [1 << 10, 1 << 20], network=net)
    >>> x["sizes"], len(x["winner"])
    ([1024, 1048576], 2)
    """
    sizes_l = [as_int(s, "sizes[]", 1) for s in sizes]
    if not sizes_l:
        raise ValueError("sizes must list at least one size")
    advice: list[Advice] = []
    rows: list[dict[str, Any]] = []
    for k, size in enumerate(sizes_l):
        if progress:
            print(
                f"crossover: size {k + 1}/{len(sizes_l)} ({human_bytes(size)})",
                file=sys.stderr,
                flush=True,
            )
        adv = advise(topology, size, collective, network, names=names, keep=keep)
        advice.append(adv)
        best = adv.best.name
        for c in adv.candidates:
            if c.status == "simulated":
                rows.append(
                    {
                        "size_bytes": size,
                        "algorithm": c.name,
                        "time_s": c.time_s,
                        "bandwidth_Bps": c.bandwidth_Bps,
                        "ratio": c.ratio,
                        "winner": c.name == best,
                    }
                )
    return {
        "sizes": sizes_l,
        "winner": [a.best.name for a in advice],
        "advice": advice,
        "rows": rows,
    }


def crossover_table(result: dict[str, Any]) -> str:
    """The fastest algorithm at each size of a :func:`crossover`, as text."""
    advice = result["advice"]
    a0 = advice[0]
    width = max(len(human_bytes(a.size_bytes)) for a in advice)
    lines = [
        f"{a0.collective} on {a0.topology} under {a0.network}: the fastest at each size"
    ]
    for a in advice:
        b = a.best
        lines.append(
            f"{human_bytes(a.size_bytes).rjust(width)}  {b.name}  "
            f"{human_seconds(b.time_s)}  ratio {_ratio(b.ratio)}"
        )
    return "\n".join(lines)


def crossover_csv(advice: Sequence[Advice]) -> str:
    """One CSV for many sizes: ``size_bytes``, then each candidate's row.

    Parameters
    ----------
    advice : sequence of Advice
        ``crossover(...)["advice"]``.
    """
    lines: list[str] = []
    for a in advice:
        head, *rows = a.to_csv().rstrip("\n").split("\n")
        if not lines:
            lines.append("size_bytes," + head)
        lines.extend(f"{a.size_bytes},{r}" for r in rows)
    return "\n".join(lines) + "\n"


def plot_crossover(result: dict[str, Any], ax: Any = None) -> Any:
    """Bandwidth against size for every simulated algorithm; winners marked.

    Parameters
    ----------
    result : dict
        What :func:`crossover` returned.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4))
    by_name: dict[str, list[tuple[int, float, bool]]] = {}
    for row in result["rows"]:
        by_name.setdefault(row["algorithm"], []).append(
            (row["size_bytes"], row["bandwidth_Bps"], row["winner"])
        )
    for name, pts in sorted(by_name.items()):
        pts.sort()
        x = np.array([p[0] for p in pts], dtype=float)
        y = np.array([p[1] for p in pts]) / 1e9
        (line,) = ax.plot(x, y, marker="o", ms=3, lw=1, label=name)
        win = np.array([p[2] for p in pts])
        if win.any():
            ax.plot(x[win], y[win], "o", ms=8, mfc="none", color=line.get_color())
    adv = result["advice"][0]
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("size per rank (bytes)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title(
        f"{adv.collective} on {adv.topology} ({adv.network}); circled: fastest"
    )
    ax.legend(fontsize=7, ncol=2)
    return ax
