"""The workload graph: compute, collective and point-to-point nodes with dependencies.

A :class:`Workload` is a DAG over the ranks of one machine. Its nodes are

* **compute** nodes: one rank, a duration (or FLOPs and memory bytes under a
  compute model, :mod:`wafercoll.workloads.compute`);
* **collective** nodes: a collective, its size, the communicator's ranks and
  an algorithm (``"auto"``: chosen per node when the workload is simulated);
* **send** nodes: a point-to-point message from one rank to another.

A node waits for its dependencies. A collective spans several ranks, so its
dependencies are per rank: rank ``r`` enters the collective when *its*
dependencies are met, and the collective is done *at* ``r`` when every
transfer that ``r`` sends or receives in it has completed (and ``r`` has
entered it). A dependency of a node at rank ``r`` on a node ``d`` means
``d`` done at ``r`` when ``r`` takes part in ``d``, else ``d`` done at every
rank of ``d``. The graph holds no schedule: collectives are built when the
workload is simulated (:func:`wafercoll.workloads.simulate_workload`), once
per distinct (collective, size, algorithm, communicator size).

Examples
--------
>>> import wafercoll as wc
>>> w = wc.workload(4, name="one step")
>>> fwd = [w.compute(r, 1e-3, name="forward") for r in range(4)]
>>> ar = w.collective("allreduce", 1 << 20, deps=fwd, name="gradients")
>>> w.compute(0, 2e-4, deps=[ar], name="optimizer")
5
>>> len(w), w.node(ar).ranks
(6, (0, 1, 2, 3))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._util import as_int, as_real
from ..schedule import COLLECTIVES
from .compute import ComputeModel

__all__ = ["KINDS", "Node", "Workload", "workload"]

#: The kinds of workload node.
KINDS = ("compute", "collective", "send")


@dataclass(frozen=True)
class Node:
    """One node of a :class:`Workload` (read-only; made by its methods).

    Attributes
    ----------
    id : int
        Index in the workload, in insertion order (a topological order).
    kind : {"compute", "collective", "send"}
    ranks : tuple of int
        The rank of a compute node; the communicator of a collective (its
        rank ``i`` is the collective's rank ``i``); ``(src, dst)`` of a send.
    deps : dict of int to tuple of int
        Per rank of the node, the nodes it waits for there.
    seconds : float
        A compute node's duration (0 for the others).
    collective : str
        A collective node's collective (``"send"`` for a send, ``""`` for compute).
    size_bytes : int
        A collective's size (as for :func:`wafercoll.build`) or a message's bytes.
    algorithm : str
        A collective node's algorithm, or ``"auto"``.
    options : dict
        Extra builder options of a collective node (``root``, ``matrix``...).
    name : str
        A label (kept by the Chakra writer and shown in timelines).
    flops, mem_bytes : float
        A compute node's work, when it was given as work (else 0).
    """

    id: int
    kind: str
    ranks: tuple[int, ...]
    deps: dict[int, tuple[int, ...]]
    seconds: float = 0.0
    collective: str = ""
    size_bytes: int = 0
    algorithm: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    flops: float = 0.0
    mem_bytes: float = 0.0


class Workload:
    """A DAG of compute, collective and send nodes over ``ranks`` ranks.

    Parameters
    ----------
    ranks : int
        Number of ranks (>= 1). Rank ``r`` runs on the topology's endpoint
        ``r`` unless a placement is given when simulating.
    name : str
        A label.
    compute_model : ComputeModel, optional
        Turns a compute node's ``flops`` and ``mem_bytes`` into seconds
        (needed only by nodes given as work).

    Examples
    --------
    >>> import wafercoll as wc
    >>> w = wc.workload(2)
    >>> a = w.compute(0, 1e-3)
    >>> w.send(0, 1, 4096, deps=[a])
    1
    >>> w.counts()
    {'compute': 1, 'collective': 0, 'send': 1}
    """

    def __init__(
        self, ranks: int, name: str = "", compute_model: ComputeModel | None = None
    ) -> None:
        self.ranks = as_int(ranks, "ranks", 1, 1 << 24)
        self.name = str(name)
        if compute_model is not None and not isinstance(compute_model, ComputeModel):
            raise TypeError(
                "compute_model must be a wafercoll.workloads.ComputeModel, got "
                f"{type(compute_model).__name__}"
            )
        self.compute_model = compute_model
        self._nodes: list[Node] = []

    # -- building ---------------------------------------------------------
    def compute(
        self,
        rank: int,
        seconds: float | None = None,
        *,
        flops: float | None = None,
        mem_bytes: float | None = None,
        deps: Iterable[int] = (),
        name: str = "",
    ) -> int:
        """Add a compute node on ``rank`` and return its id.

        Give either ``seconds`` or the work (``flops`` and/or ``mem_bytes``),
        which the workload's compute model turns into seconds.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(1, compute_model=wc.workloads.Roofline(1e12, 1e11))
        >>> n = w.compute(0, flops=2e9, mem_bytes=1e8)
        >>> w.node(n).seconds  # max(2e9 / 1e12, 1e8 / 1e11)
        0.002
        """
        r = as_int(rank, "rank", 0, self.ranks - 1)
        f = 0.0 if flops is None else as_real(flops, "flops", 0.0)
        b = 0.0 if mem_bytes is None else as_real(mem_bytes, "mem_bytes", 0.0)
        if seconds is None:
            if flops is None and mem_bytes is None:
                raise ValueError("compute: give seconds, or flops and/or mem_bytes")
            if self.compute_model is None:
                raise ValueError(
                    "compute: flops and mem_bytes need the workload's compute_model "
                    "(e.g. wc.workloads.Roofline(peak_flops, memory_Bps))"
                )
            t = float(self.compute_model.seconds(f, b))
        else:
            if flops is not None or mem_bytes is not None:
                raise ValueError("compute: give seconds or the work, not both")
            t = as_real(seconds, "seconds", 0.0)
        if not math.isfinite(t):
            raise ValueError(f"compute: seconds must be finite, got {t}")
        dl = self._deps(deps, "deps")
        return self._add(
            "compute", (r,), {r: dl}, seconds=t, name=name, flops=f, mem_bytes=b
        )

    def collective(
        self,
        collective: str,
        size_bytes: int,
        ranks: Sequence[int] | None = None,
        *,
        algorithm: str = "auto",
        deps: Iterable[int] | Mapping[int, Iterable[int]] = (),
        name: str = "",
        **options: Any,
    ) -> int:
        """Add a collective node over ``ranks`` (default: all) and return its id.

        Parameters
        ----------
        collective : str
            One of :data:`wafercoll.COLLECTIVES`.
        size_bytes : int
            As for :func:`wafercoll.build` (the vector each rank holds).
        ranks : sequence of int, optional
            The communicator, distinct ranks; its ``i``-th entry is the
            collective's rank ``i`` (a rooted collective's ``root`` option
            is such an index).
        algorithm : str
            A registered algorithm, or ``"auto"``: the fastest applicable
            one alone on the machine, chosen when simulating.
        deps : sequence of int, or mapping of rank to sequence of int
            What the node waits for: one list for every rank of the
            communicator, or a list per rank (ranks left out wait for
            nothing).
        **options
            Builder options (``root=``, ``matrix=``...).

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(8)
        >>> a = w.compute(2, 1e-3)
        >>> b = w.collective("allgather", 8192, [2, 3, 6, 7], deps={2: [a]})
        >>> w.node(b).deps
        {2: (0,), 3: (), 6: (), 7: ()}
        """
        kind = str(collective)
        if kind not in COLLECTIVES:
            raise ValueError(
                f"collective must be one of {', '.join(COLLECTIVES)}, "
                f"got {collective!r}"
            )
        comm = self._communicator(ranks)
        size = as_int(size_bytes, "size_bytes", 0)
        if not isinstance(algorithm, str) or not algorithm:
            raise TypeError("algorithm must be a registered name or 'auto'")
        dl = self._rank_deps(deps, comm)
        return self._add(
            "collective",
            comm,
            dl,
            collective=kind,
            size_bytes=size,
            algorithm=algorithm,
            options=dict(options),
            name=name,
        )

    def send(
        self,
        src: int,
        dst: int,
        size_bytes: int,
        *,
        deps: Iterable[int] | Mapping[int, Iterable[int]] = (),
        name: str = "",
    ) -> int:
        """Add a message of ``size_bytes`` from ``src`` to ``dst`` and return its id.

        The message leaves when the sender's dependencies are met; at the
        receiver the node is done when the message has arrived and the
        receiver's dependencies (given per rank) are met.

        Examples
        --------
        >>> import wafercoll as wc
        >>> w = wc.workload(2)
        >>> w.send(0, 1, 1024, name="activations")
        0
        """
        s = as_int(src, "src", 0, self.ranks - 1)
        d = as_int(dst, "dst", 0, self.ranks - 1)
        if s == d:
            raise ValueError(f"send: src and dst must differ, got {s} twice")
        size = as_int(size_bytes, "size_bytes", 0)
        if isinstance(deps, Mapping):
            dl = self._rank_deps(deps, (s, d))
        else:
            dl = {s: self._deps(deps, "deps"), d: ()}
        return self._add(
            "send", (s, d), dl, collective="send", size_bytes=size, name=name
        )

    # -- reading -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Any:
        return iter(self._nodes)

    def node(self, index: int) -> Node:
        """The node with id ``index``."""
        return self._nodes[as_int(index, "index", 0, len(self._nodes) - 1)]

    @property
    def nodes(self) -> list[Node]:
        """All nodes in id order (a copy of the list)."""
        return list(self._nodes)

    def counts(self) -> dict[str, int]:
        """Number of nodes per kind."""
        out = dict.fromkeys(KINDS, 0)
        for n in self._nodes:
            out[n.kind] += 1
        return out

    def __repr__(self) -> str:
        c = self.counts()
        label = f" {self.name!r}" if self.name else ""
        return (
            f"<Workload{label}: {self.ranks} ranks, {c['compute']} compute, "
            f"{c['collective']} collective, {c['send']} send nodes>"
        )

    def simulate(self, topology: Any, network: Any, **kwargs: Any) -> Any:
        """Simulate the workload: :func:`wafercoll.workloads.simulate_workload`."""
        from . import simulate_workload  # the package's, defined after this class

        return simulate_workload(self, topology, network, **kwargs)

    # -- internals ---------------------------------------------------------
    def _add(
        self,
        kind: str,
        ranks: tuple[int, ...],
        deps: dict[int, tuple[int, ...]],
        **fields: Any,
    ) -> int:
        i = len(self._nodes)
        self._nodes.append(Node(i, kind, ranks, deps, **fields))
        return i

    def _deps(self, deps: Any, what: str) -> tuple[int, ...]:
        if isinstance(deps, (str, bytes)) or not isinstance(deps, Iterable):
            raise TypeError(f"{what} must be a sequence of node ids")
        n = len(self._nodes)
        out = []
        for d in deps:
            if n == 0:
                raise ValueError(
                    f"{what}: node {d!r} does not exist (the workload is empty)"
                )
            out.append(as_int(d, what, 0, n - 1))
        return tuple(dict.fromkeys(out))

    def _rank_deps(
        self, deps: Any, comm: tuple[int, ...]
    ) -> dict[int, tuple[int, ...]]:
        if isinstance(deps, Mapping):
            out = dict.fromkeys(comm, ())
            for r, dl in deps.items():
                rr = as_int(r, "deps rank", 0, self.ranks - 1)
                if rr not in out:
                    raise ValueError(
                        f"deps: rank {rr} is not in the node's ranks {comm}"
                    )
                out[rr] = self._deps(dl, f"deps[{rr}]")
            return out
        common = self._deps(deps, "deps")
        return dict.fromkeys(comm, common)

    def _communicator(self, ranks: Any) -> tuple[int, ...]:
        if ranks is None:
            return tuple(range(self.ranks))
        if isinstance(ranks, (str, bytes)) or not isinstance(ranks, Iterable):
            raise TypeError("ranks must be a sequence of ranks")
        comm = tuple(as_int(r, "ranks", 0, self.ranks - 1) for r in ranks)
        if not comm:
            raise ValueError("ranks: a collective needs at least one rank")
        if len(set(comm)) != len(comm):
            raise ValueError(f"ranks must be distinct, got {list(comm)}")
        return comm


def workload(
    ranks: int, name: str = "", compute_model: ComputeModel | None = None
) -> Workload:
    """Start an empty :class:`Workload` over ``ranks`` ranks.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.workload(16, name="dp step")
    <Workload 'dp step': 16 ranks, 0 compute, 0 collective, 0 send nodes>
    """
    return Workload(ranks, name, compute_model)
