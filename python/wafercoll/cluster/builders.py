"""Node-aware allreduce schedules of paper 001 (RD, SMP, NAP, dissemination).

Every builder works on *(node, local rank)* coordinates: ``nodes = p / ppn``
nodes of ``ppn`` processes each, rank ``node * ppn + local`` in SMP
(node-major) order, or any ``rank_to_node`` map (the local rank of a process
is then its position among its node's ranks in increasing rank order). The
builders need no topology, so they run for ``p = 2**16`` and beyond; they are
written with :mod:`wafercoll.kit`, a step at a time as NumPy arrays over all
nodes at once.

Data model
----------
Each rank holds one block: the whole vector (every algorithm here exchanges
full vectors). A transfer from ``a`` to ``b`` waits for the previous send and
receive of both ranks, as a send/receive pair posted in program order would
(the kit's ``"sendrecv"`` rule, as for the generic builders). The recursive
doubling and the binomial trees are the kit's skeletons run over the rows of
a rank table (every node, or the masters).

NAP's step "exchange with a partner, allreduce the *received* buffers inside
the node and add them to the running value" (recovered details §1.5) is
written here without a separate receive buffer: the exchange *copies* the
partner's value over the own one, and the process whose local rank equals
its own step digit keeps the node's value. The node then holds each of the
group's ``g`` subgroup sums exactly once, and an allreduce of the first ``g``
local ranks, spread to the others, gives the group sum. This saves the
``k`` additions of the authors' code (one per inter-node step) and sends the
same messages.

The locality-aware dissemination (§1.6) shifts values around a cycle of
nodes. Without a receive buffer the schedule's data semantics allow the
concurrent read and write of one process only when the reader's
dependencies happen before the writer; for a cyclic shift that means every
transfer of a cycle waits for the previous events of all processes of that
cycle (about ``2 * cycle length`` dependencies per transfer). The builder
refuses sizes where that exceeds :data:`MAX_DEPENDENCIES`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int
from ..algorithms import AlgorithmInfo, register
from ..schedule import Schedule
from ..topology import check_rank_to_node

__all__ = [
    "MAX_DEPENDENCIES",
    "MAX_RANKS",
    "locality_dissemination",
    "nap_allreduce",
    "nap_plan",
    "node_layout",
    "rank_table",
    "rd_allreduce",
    "smp_allreduce",
]

#: Largest rank count the builders accept (the cluster topology's limit).
MAX_RANKS = 1 << 22
#: Largest number of dependencies a dissemination schedule may hold.
MAX_DEPENDENCIES = 1 << 26


# --------------------------------------------------------------------------
# arguments


def rank_table(
    ranks: int, ppn: int, rank_to_node: Sequence[int] | np.ndarray | None = None
) -> np.ndarray:
    """The rank of every (node, local rank) pair.

    Parameters
    ----------
    ranks : int
        Number of ranks ``p``, in ``[1, 2**22]``.
    ppn : int
        Processes per node; must divide ``ranks``.
    rank_to_node : array_like of int, optional
        Node of every rank (length ``ranks``, each node ``ppn`` times).
        Default: SMP order, rank ``r`` on node ``r // ppn``.

    Returns
    -------
    numpy.ndarray of int64, shape (nodes, ppn)
        ``table[m, l]`` is the rank of local rank ``l`` on node ``m``; local
        ranks follow increasing rank order within a node.

    Raises
    ------
    ValueError
        If ``ppn`` does not divide ``ranks`` or ``rank_to_node`` is not a
        valid map.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> cluster.rank_table(6, 3)
    array([[0, 1, 2],
           [3, 4, 5]])
    """
    p = as_int(ranks, "ranks", 1, MAX_RANKS)
    q = as_int(ppn, "ppn", 1, p)
    if p % q:
        raise ValueError(
            f"ppn = {q} must divide the rank count {p} (nodes = ranks / ppn)"
        )
    n = p // q
    if rank_to_node is None:
        return np.arange(p, dtype=np.int64).reshape(n, q)
    r2n = check_rank_to_node(rank_to_node, n, q)
    order = np.argsort(r2n, kind="stable")  # ranks grouped by node, increasing
    return order.astype(np.int64).reshape(n, q)


# --------------------------------------------------------------------------
# schedule assembly

_COPY, _REDUCE = "copy", "reduce"


def _program(ranks: int, size: int, name: str) -> kit.Program:
    """A program of whole-vector transfers (one block per rank)."""
    return kit.Program(
        ranks,
        [size],
        "allreduce",
        rule="sendrecv",
        name=name,
        max_dependencies=MAX_DEPENDENCIES,
    )


def _tail_rd(prog: kit.Program, table: np.ndarray, q: int) -> None:
    """Allreduce among columns ``0 .. q-1`` of every row of ``table``.

    Recursive doubling with the authors' fold (recovered details §1.3): with
    ``q' = 2**floor(log2 q)``, column ``c >= q'`` first adds its value into
    column ``c - q'`` and gets the result back at the end.
    """
    if table.size:
        kit.recursive_doubling(prog, q, 0, style="upper", ranks=table)


def _spread(prog: kit.Program, table: np.ndarray, q: int) -> None:
    """Copy the value of columns ``0 .. q-1`` to the others, doubling the holders."""
    width = table.shape[1]
    h = max(q, 1)
    while h < width:
        cols = np.arange(h, min(2 * h, width))
        prog.step(table[:, cols - h].ravel(), table[:, cols].ravel(), 0, _COPY)
        h *= 2


def _node_allreduce(prog: kit.Program, table: np.ndarray, q: np.ndarray | int) -> None:
    """Allreduce among local ranks ``0 .. q-1`` of each node, then spread."""
    qs = np.broadcast_to(np.asarray(q), (table.shape[0],))
    for v in np.unique(qs):
        rows = table[qs == v]
        _tail_rd(prog, rows, int(v))
        _spread(prog, rows, int(v))


# --------------------------------------------------------------------------
# RD and SMP


def rd_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    ppn: int = 1,
    rank_to_node: Sequence[int] | np.ndarray | None = None,
) -> Schedule:
    """Recursive doubling with the authors' fold (recovered details §1.3).

    Partner ``rank XOR 2**i`` at step ``i``; for a non-power-of-two ``p`` the
    ``e = p - 2**floor(log2 p)`` highest ranks first send their vector to
    ``rank - 2**floor(log2 p)`` and get the result back at the end. The
    generic ``recursive_doubling`` builder folds even ranks onto odd ones
    (MPICH style) instead: for powers of two both are the same schedule.
    The algorithm is node-agnostic; ``ppn`` and ``rank_to_node`` are only
    checked, so that every cluster builder takes the same options.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.cluster.rd_allreduce(12, 96, ppn=4)
    >>> s.name, wc.verify(s).steps
    ('rd_allreduce(p=12)', 5)
    """
    rank_table(ranks, ppn, rank_to_node)
    size = as_int(size_bytes, "size_bytes", 0)
    prog = _program(ranks, size, f"rd_allreduce(p={ranks})")
    _tail_rd(prog, np.arange(ranks, dtype=np.int64)[None, :], ranks)
    return prog.schedule()


def smp_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    ppn: int,
    rank_to_node: Sequence[int] | np.ndarray | None = None,
) -> Schedule:
    """SMP allreduce: a single master per node (recovered details §1.4).

    A binomial reduce to local rank 0 (``ceil(log2 ppn)`` steps), recursive
    doubling among the masters with the authors' fold, and a binomial
    broadcast from local rank 0.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.cluster.smp_allreduce(12, 96, ppn=4)
    >>> s.name, wc.verify(s).steps
    ('smp_allreduce(p=12, ppn=4)', 7)
    """
    table = rank_table(ranks, ppn, rank_to_node)
    size = as_int(size_bytes, "size_bytes", 0)
    prog = _program(ranks, size, f"smp_allreduce(p={ranks}, ppn={ppn})")
    kit.binomial_reduce(prog, table.shape[1], 0, ranks=table)
    _tail_rd(prog, table[:, 0][None, :], table.shape[0])
    kit.binomial_broadcast(prog, table.shape[1], 0, ranks=table)
    return prog.schedule()


# --------------------------------------------------------------------------
# NAP


def _ceil_log(n: int, base: int) -> int:
    k, v = 0, 1
    while v < n:
        v *= base
        k += 1
    return k


def nap_plan(
    nodes: int, ppn: int, steps: Sequence[int] | None = None
) -> list[list[tuple[int, tuple[int, ...]]]]:
    """The groups of NAP's inter-node steps.

    Parameters
    ----------
    nodes : int
        Number of nodes ``n``.
    ppn : int
        Processes per node (>= 2 when ``nodes > 1``).
    steps : sequence of int, optional
        Step sizes ``g_0, g_1, ...`` with ``2 <= g_i <= ppn`` and product
        ``nodes`` (recovered details §1.5). Default: the fewest inter-node
        steps, ``ceil(log_ppn n)``, for any ``n``: a group of ``s`` nodes
        that needs ``h`` steps is cut into ``c = ceil(s / ppn**(h-1))``
        consecutive blocks whose sizes differ by at most one (§1.7c, ragged
        blocks). Where ``n = ppn**a * r`` with ``r <= ppn`` this is the
        authors' list ``[ppn, ..., ppn, r]``.

    Returns
    -------
    list
        ``plan[i]`` lists the groups combined at inter-node step ``i`` as
        ``(first node, block sizes)``, longer blocks first.

    Raises
    ------
    ValueError
        If a step size is outside ``[2, ppn]`` or the product is not ``nodes``.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> cluster.nap_plan(4, 2)
    [[(0, (1, 1)), (2, (1, 1))], [(0, (2, 2))]]
    """
    n = as_int(nodes, "nodes", 1, MAX_RANKS)
    q = as_int(ppn, "ppn", 1)
    if steps is not None:
        g = [as_int(x, f"steps[{i}]", 2) for i, x in enumerate(steps)]
        for i, x in enumerate(g):
            if x > q:
                raise ValueError(
                    f"steps[{i}] = {x} exceeds ppn = {q}: a node has only "
                    f"ppn - 1 processes to exchange with other nodes"
                )
        if math.prod(g) != n:
            raise ValueError(
                f"the step sizes {g} multiply to {math.prod(g)}, not to the "
                f"node count {n}"
            )
        plan: list[list[tuple[int, tuple[int, ...]]]] = []
        b = 1
        for x in g:
            plan.append([(s, (b,) * x) for s in range(0, n, b * x)])
            b *= x
        return plan
    if n > 1 and q < 2:
        raise ValueError("NAP needs ppn >= 2 when there is more than one node")
    if n == 1:
        return []
    k = _ceil_log(n, q)
    plan = [[] for _ in range(k)]

    def split(start: int, size: int) -> None:
        h = _ceil_log(size, q)
        if h == 0:
            return
        c = -(-size // q ** (h - 1))
        base, long_ = divmod(size, c)
        sizes = (base + 1,) * long_ + (base,) * (c - long_)
        plan[h - 1].append((start, sizes))
        s = start
        for b in sizes:
            split(s, b)
            s += b

    split(0, n)
    return plan


def _nap_exchange(
    prog: kit.Program, table: np.ndarray, groups: list[tuple[int, tuple[int, ...]]]
) -> None:
    """One inter-node step of NAP over the given groups, then the node allreduce."""
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    nodes: list[np.ndarray] = []
    width: list[np.ndarray] = []
    for start, sizes in groups:
        c = len(sizes)
        starts = start + np.concatenate([[0], np.cumsum(sizes)[:-1]])
        short = min(sizes)
        if short == max(sizes):
            # Blocks of one size: every (G, H != G, x) at once, in the order
            # of the loops below (G, then H, then x).
            G, H, x = np.meshgrid(
                np.arange(c), np.arange(c), np.arange(short), indexing="ij"
            )
            off = G != H
            dst.append(table[starts[G[off]] + x[off], H[off]])
            src.append(table[starts[H[off]] + x[off], G[off]])
            c_sizes = short * c
            nodes.append(np.arange(start, start + c_sizes))
            width.append(np.full(c_sizes, c))
            continue
        for G in range(c):
            for H in range(c):
                if G == H:
                    continue
                # (block G, position x, local H) <- (block H, position x, local G)
                x = np.arange(min(sizes[G], sizes[H]))
                dst.append(table[starts[G] + x, H])
                src.append(table[starts[H] + x, G])
                if sizes[G] > sizes[H]:
                    # The extra node of a long block G receives from the
                    # otherwise idle local rank H of node G of block H.
                    dst.append(table[[starts[G] + short], H])
                    src.append(table[[starts[H] + G % short], H])
        total = sum(sizes)
        nodes.append(np.arange(start, start + total))
        width.append(np.full(total, c))
    prog.step(np.concatenate(src), np.concatenate(dst), 0, _COPY)
    nd = np.concatenate(nodes)
    _node_allreduce(prog, table[nd], np.concatenate(width))


def nap_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    ppn: int,
    steps: Sequence[int] | None = None,
    rank_to_node: Sequence[int] | np.ndarray | None = None,
) -> Schedule:
    """Node-aware parallel (NAP) allreduce (recovered details §1.5).

    An allreduce inside every node, then per inter-node step ``i`` the process
    of local rank ``l`` on node ``m`` exchanges with the node whose step digit
    is ``l`` (:func:`nap_plan`), followed by an allreduce inside the node. With
    ``ppn = 1`` no process can talk to two nodes at once and the schedule is
    :func:`rd_allreduce`.

    Parameters
    ----------
    ranks, size_bytes : int
        Rank count and vector size.
    ppn : int
        Processes per node; divides ``ranks``.
    steps : sequence of int, optional
        Explicit step sizes (see :func:`nap_plan`).
    rank_to_node : array_like of int, optional
        Node of every rank (see :func:`rank_table`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.cluster.nap_allreduce(16, 128, ppn=4)
    >>> s.name, wc.verify(s).steps
    ('nap_allreduce(p=16, ppn=4)', 5)
    """
    table = rank_table(ranks, ppn, rank_to_node)
    size = as_int(size_bytes, "size_bytes", 0)
    n, q = table.shape
    if q == 1 and n > 1 and steps is None:
        s = rd_allreduce(ranks, size, ppn=1, rank_to_node=rank_to_node)
        s.name = f"nap_allreduce(p={ranks}, ppn=1)"
        return s
    plan = nap_plan(n, q, steps)
    prog = _program(ranks, size, f"nap_allreduce(p={ranks}, ppn={q})")
    _node_allreduce(prog, table, q)
    for groups in plan:
        _nap_exchange(prog, table, groups)
    return prog.schedule()


# --------------------------------------------------------------------------
# locality-aware dissemination


def locality_dissemination(
    ranks: int,
    size_bytes: int,
    *,
    ppn: int,
    rank_to_node: Sequence[int] | np.ndarray | None = None,
) -> Schedule:
    """Locality-aware dissemination allreduce, radix ``ppn + 1`` (§1.6).

    An allreduce inside every node; the ``n - M`` nodes beyond
    ``M = (n div P) P`` (``P`` the largest power of ``ppn + 1`` not above
    ``n``) hand their value to nodes ``0 .. n-M-1``; then, for
    ``S = 1, ppn+1, ... < M``, local rank ``l`` sends to node
    ``(m - S (l+1)) mod M`` and receives from ``(m + S (l+1)) mod M`` (when
    ``S (l+1) < M``), followed by an allreduce inside the node; the folded
    nodes get the result back at the end. Local rank 0 adds what it receives
    to the node's value, the others keep only what they receive.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.cluster.locality_dissemination(12, 96, ppn=4)
    >>> s.name, wc.verify(s).steps
    ('locality_dissemination(p=12, ppn=4)', 5)
    """
    table = rank_table(ranks, ppn, rank_to_node)
    size = as_int(size_bytes, "size_bytes", 0)
    n, q = table.shape
    prog = _program(ranks, size, f"locality_dissemination(p={ranks}, ppn={q})")
    _node_allreduce(prog, table, q)
    P = 1
    while P * (q + 1) <= n:
        P *= q + 1
    M = (n // P) * P
    extra = n - M
    if extra:
        prog.step(table[M:].ravel(), table[:extra].ravel(), 0, _REDUCE)
    S = 1
    while S < M:
        active = min(q, -(-M // S) - 1)
        src, dst, op, grp = [], [], [], []
        m = np.arange(M)
        for ell in range(active):
            stride = S * (ell + 1)
            gcd = math.gcd(M, stride)
            src.append(table[m, ell])
            dst.append(table[(m - stride) % M, ell])
            op.append(np.full(M, 1 if ell == 0 else 0))
            grp.append(ell * M + m % gcd)
        g = np.concatenate(grp)
        _, g = np.unique(g, return_inverse=True)
        prog.step(
            np.concatenate(src), np.concatenate(dst), 0, np.concatenate(op), group=g
        )
        _node_allreduce(prog, table[:M], active)
        S *= q + 1
    if extra:
        prog.step(table[:extra].ravel(), table[M:].ravel(), 0, _COPY)
    return prog.schedule()


# --------------------------------------------------------------------------
# registry


def node_layout(
    ranks: int,
    topology: Any = None,
    ppn: int | None = None,
    rank_to_node: Any = None,
    *,
    needs_ppn: bool = True,
) -> tuple[int, Any]:
    """``(ppn, rank_to_node)`` of a cluster builder, filled in from a topology.

    A cluster topology gives ``ppn`` and, when its placement is not SMP
    order, ``rank_to_node``; explicit values win. Without either, ``ppn`` is
    required (``needs_ppn``) or 1.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.cluster.builders.node_layout(8, wc.topology.cluster(2, 4))
    (4, None)
    """
    if topology is not None and getattr(topology, "kind", None) == "cluster":
        if ppn is None:
            ppn = topology.ppn
        if rank_to_node is None and ranks == topology.num_endpoints:
            node_of = np.asarray(topology.node_of)
            if (node_of != np.arange(ranks) // topology.ppn).any():
                rank_to_node = node_of
    if ppn is None:
        if needs_ppn:
            raise ValueError("ppn is required (or pass a cluster topology)")
        ppn = 1
    return ppn, rank_to_node


def _wrap(fn: Any, needs_ppn: bool = True) -> Any:
    def builder(p: int, size: int, *, topology: Any = None, **opts: Any) -> Schedule:
        opts["ppn"], opts["rank_to_node"] = node_layout(
            p, topology, opts.get("ppn"), opts.get("rank_to_node"), needs_ppn=needs_ppn
        )
        return fn(p, size, **opts)

    return builder


_SRC = "Bienz, Olson, Gropp, Node-Aware Improvements to Allreduce, ExaMPI 2019"
#: The paper's names (its Figures 10 and 11), and the dissemination variant's.
_LABELS = {
    "cluster_rd_allreduce": "RD",
    "cluster_smp_allreduce": "SMP",
    "cluster_nap_allreduce": "NAP",
    "cluster_dissemination_allreduce": "Dissemination",
}
for _name, _fn, _sec, _summary, _params in (
    (
        "cluster_rd_allreduce",
        rd_allreduce,
        "§1.3",
        "recursive doubling, the highest p - 2^floor(log2 p) ranks folded onto "
        "the lowest (the authors' variant)",
        {"ppn": None, "rank_to_node": None},
    ),
    (
        "cluster_smp_allreduce",
        smp_allreduce,
        "§1.4",
        "binomial reduce to a master per node, RD among masters, binomial bcast",
        {"ppn": None, "rank_to_node": None},
    ),
    (
        "cluster_nap_allreduce",
        nap_allreduce,
        "§1.5, §1.7c",
        "node allreduce, then local rank l exchanges with the node whose step "
        "digit is l; any node count",
        {"ppn": None, "steps": None, "rank_to_node": None},
    ),
    (
        "cluster_dissemination_allreduce",
        locality_dissemination,
        "§1.6 (MPI Advance, later variant)",
        "node allreduce, then radix-(ppn+1) dissemination among nodes",
        {"ppn": None, "rank_to_node": None},
    ),
):
    register(
        AlgorithmInfo(
            _name,
            "allreduce",
            ("any", "cluster"),
            f"{_SRC}; recovered details {_sec}",
            _summary,
            _wrap(_fn, _name != "cluster_rd_allreduce"),
            _params,
            max_ranks=MAX_RANKS,
            label=_LABELS[_name],
        )
    )
