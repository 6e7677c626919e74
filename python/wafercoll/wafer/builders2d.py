"""Schedules of the wafer AllReduce (Section 6) and 2D collectives (Section 7).

All builders are registered with :func:`wafercoll.build`; vectors are
``B = size_bytes / 4`` wavelets. Reductions are trees turned into schedules
exactly as the 1D patterns are (:func:`~wafercoll.wafer.tree_schedule`): one
transfer per tree edge and block (by default one block, the whole vector), a
PE takes its children's streams one after another and forwards each block as
soon as its children's copies have arrived. Broadcasts are multicasts: one
packet stream from the root over the union of the routes.

1D AllReduce (Section 6), on :func:`~wafercoll.wafer.wafer_row`
-----------------------------------------------------------------
``wafer_<pattern>_bcast`` (``pattern`` in star, chain, tree, two_phase,
autogen), *Reduce-then-Broadcast*: the pattern's tree on ``[root, P - 1]``
and the same pattern mirrored on ``[0, root]`` (:func:`rooted_tree`), then a
multicast of the sum from ``root`` to every other PE, which depends on the
root's incoming reduce transfers::

    P = 7, root = 3, chain:   0 -> 1 -> 2 -> [3] <- 4 <- 5 <- 6
                              then 3 multicasts to 0..2 and 4..6

A PE takes its children nearest first (a row tree's order, left to right,
and its mirror image); the root, with children on both sides, alternates
between them by distance, the left one first on a tie, and a child's stream
also follows the previous child on its own side (so that streams sharing the
links to the root pass them one after another). With ``root = 0`` the reduce
is transfer for transfer the 1D pattern's schedule.

In the simulator's dataflow mode the broadcast forwards the root's sum as it
forms: wavelet ``k`` leaves once every child's wavelet ``k`` has arrived. The
AllReduce therefore costs less than the paper's ``T_REDUCE + T_BCAST``: with
the Star nothing else reaches the other PEs and the broadcast adds only its
latency; with the Chain every PE's ramp carries its reduce input and the
broadcast, ``2 B`` wavelets in all.

``wafer_ring``, *Ring AllReduce* (Lemma 6.1) on a ring order of the PEs
(:func:`ring_order`), ``P - 1`` reduce-scatter then ``P - 1`` allgather steps
of one block each to the ring successor; a send waits for both PEs' previous
send and receive, as in the generic ``ring``::

    mapping "a" (Fig. 7a):  0 -> 1 -> 2 -> 3 -> 4 -> 5, and 5 -> 0 (P - 1 hops)
    mapping "b" (Fig. 7b):  0 -> 2 -> 4 -> 5 -> 3 -> 1 -> 0 (at most 2 hops)

The vector is cut into ``P`` blocks of whole wavelets: when ``P`` does not
divide ``B`` the first ``B mod P`` blocks have one wavelet more (and with
``B < P`` the others are empty), so every step costs the larger block.
Mapping "a" with P dividing B is the generic ``ring``'s schedule. Lemma 6.1
gives both mappings the same time; simulated, every step of mapping "a" waits
for the ``P - 1``-hop wrap-around transfer, so it is slower when the hops
count (small ``B``), while mapping "b" stays within a few cycles of the lemma.

2D (Section 7), on :func:`wafer_grid` ``(M, N)``, PE ``(r, c)`` = rank ``r N + c``
-----------------------------------------------------------------------------------
* ``wafer_2d_broadcast`` (Lemma 7.1): one multicast from ``(0, 0)`` (the
  schedule of :func:`~wafercoll.wafer.flood_broadcast`); routes go along the
  row first, so the copies follow row 0 and then every column.
* ``wafer_xy_reduce``: every row reduces to its column-0 PE with the
  pattern's tree over the row, then column 0 reduces to ``(0, 0)`` with the
  pattern's tree over the column (Auto-Gen picks a tree per axis length). A
  column-0 PE takes its row's stream(s) first, then its column child(ren).
* ``wafer_snake_reduce``: a chain along the boustrophedon path
  (:func:`snake_order`), every step one hop::

      (0,0) <- (0,1) <- (0,2) <- (0,3)
                                   ^
      (1,0) -> (1,1) -> (1,2) -> (1,3)
        ^
      (2,0) <- (2,1) <- (2,2) <- (2,3)

* ``wafer_xy_allreduce``: Reduce-then-Broadcast along every row (root
  column 0), then along every column (root row 0). A PE sends its column
  block once its row phase has produced it (the row broadcast, or for
  column 0 the row's reduce), and a column child's stream into it follows
  the row phase's write there.
* ``wafer_2d_allreduce``: the X-Y (or snake) reduce to ``(0, 0)``, then the
  2D broadcast of the sum from ``(0, 0)``.

Examples
--------
>>> import wafercoll as wc
>>> grid = wc.wafer.wafer_grid(3, 4)
>>> s = wc.build("wafer_2d_allreduce", size_bytes=4 * 8, topology=grid)
>>> wc.verify(s).ok
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int, as_real
from ..algorithms import AlgorithmInfo, register
from ..schedule import Schedule
from ..topology import Topology, mesh
from .builders import (
    CS2_CLOCK_HZ,
    PATTERN_LABELS,
    WAVELET_BYTES,
    flood_broadcast,
    size_wavelets,
    tree_schedule,
)
from .model import (
    T_R_DEFAULT,
    as_ramp_latency,
    binary_tree,
    chain_tree,
    star_tree,
    two_phase_tree,
)
from .reduce1d import MAX_DP_P, REDUCE_ALGORITHMS, autogen

__all__ = [
    "PATTERNS_2D",
    "RING_MAPPINGS",
    "pattern_tree",
    "ring_order",
    "rooted_tree",
    "snake_order",
    "snake_tree",
    "wafer_grid",
    "xy_tree",
]

#: Ring mappings of Figure 7.
RING_MAPPINGS = ("a", "b")
#: Reduce patterns of ``wafer_2d_allreduce``: the X-Y patterns and the snake.
PATTERNS_2D = (*REDUCE_ALGORITHMS, "snake")

_SOURCE = "Luczynski, Gianinazzi et al., Near-Optimal Wafer-Scale Reduce, HPDC 2024"
_MAX_1D = MAX_DP_P
_MAX_RING = 4096  # 2 P (P - 1) transfers, as the generic ring
_MAX_2D = 1 << 22  # the largest mesh
_COPY, _REDUCE = 0, 1


# -- topologies and trees -----------------------------------------------------------
def wafer_grid(rows: int, cols: int, clock_Hz: float = CS2_CLOCK_HZ) -> Topology:
    """A ``rows x cols`` grid of PEs (the paper's M x N), a wavelet per cycle per link.

    A :func:`~wafercoll.mcm` (PE ``(r, c)`` is node ``r N + c``; routes go
    along the row, then along the column) with ``4 * clock_Hz`` bytes per
    second per link and no link latency: the cycle per hop and the ramps are
    in :func:`wafercoll.wafer.wse2_network`, the model to simulate with.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.wafer_grid(3, 4)
    <Topology mesh(3x4): 12 endpoints, 34 links>
    """
    rows = as_int(rows, "rows", 1)
    cols = as_int(cols, "cols", 1)
    clock = as_real(clock_Hz, "clock_Hz", positive=True)
    return mesh(rows, cols, bandwidth_Bps=WAVELET_BYTES * clock, latency_s=0.0)


def pattern_tree(pattern: str, P: int, B: int = 1, T_R: float = T_R_DEFAULT) -> Any:
    """The reduction tree of a 1D pattern on ``P`` PEs, rooted at PE 0.

    ``pattern`` is one of ``star``, ``chain``, ``tree``, ``two_phase``,
    ``autogen`` (the optimal tree for ``B`` wavelets and ramp ``T_R``).
    Returns the parent array (``parent[0] == -1``).
    """
    if pattern not in REDUCE_ALGORITHMS:
        raise ValueError(
            f"pattern must be one of {', '.join(REDUCE_ALGORITHMS)}, got {pattern!r}"
        )
    p = as_int(P, "P", 1, MAX_DP_P)
    if pattern == "autogen":
        return autogen(p, B, T_R).parent
    fixed = {
        "star": star_tree,
        "chain": chain_tree,
        "tree": binary_tree,
        "two_phase": two_phase_tree,
    }
    return fixed[pattern](p)


def rooted_tree(
    pattern: str, P: int, root: int = 0, B: int = 1, T_R: float = T_R_DEFAULT
) -> np.ndarray:
    """A 1D pattern reducing to PE ``root``: each side gets the pattern's tree.

    PEs ``root .. P - 1`` form the pattern's tree on ``P - root`` PEs and PEs
    ``root .. 0`` the mirror image of its tree on ``root + 1`` PEs (Auto-Gen
    chooses each side's tree for that side's length). ``root = 0`` gives the
    pattern itself.
    """
    p = as_int(P, "P", 1, MAX_DP_P)
    r = as_int(root, "root", 0, p - 1)
    parent = np.full(p, -1, dtype=np.int64)
    right = np.asarray(pattern_tree(pattern, p - r, B, T_R), dtype=np.int64)
    parent[r + 1 :] = r + right[1:]
    if r > 0:
        left = np.asarray(pattern_tree(pattern, r + 1, B, T_R), dtype=np.int64)
        parent[r - 1 :: -1] = r - left[1:]  # PE r - i sends to r - left[i]
    return parent


def ring_order(ranks: int, mapping: str = "a") -> np.ndarray:
    """The PEs of a row in ring order: PE ``order[i]`` sends to ``order[i + 1]``.

    ``"a"`` (Fig. 7a) is ``0, 1, ..., P - 1`` (the last PE sends back to PE 0
    over ``P - 1`` hops); ``"b"`` (Fig. 7b) is the even PEs left to right, then
    the odd PEs right to left, so consecutive PEs are at most two apart.
    """
    p = as_int(ranks, "ranks", 1, _MAX_RING)
    if mapping not in RING_MAPPINGS:
        raise ValueError(f"mapping must be 'a' or 'b', got {mapping!r}")
    if mapping == "a":
        return np.arange(p, dtype=np.int64)
    evens = np.arange(0, p, 2, dtype=np.int64)
    odds = np.arange(1, p, 2, dtype=np.int64)[::-1]
    return np.concatenate([evens, odds])


def snake_order(rows: int, cols: int) -> np.ndarray:
    """The ranks of a ``rows x cols`` grid along the snake, from ``(0, 0)``.

    Row 0 left to right, row 1 right to left, row 2 left to right, ...;
    consecutive ranks are grid neighbours. The snake reduce runs the chain
    backwards along it, from the last PE to ``(0, 0)``.
    """
    return kit.snake(as_int(rows, "rows", 1), as_int(cols, "cols", 1))


def snake_tree(rows: int, cols: int) -> np.ndarray:
    """The snake's chain as a parent array over ranks (root ``(0, 0)``)."""
    order = snake_order(rows, cols)
    parent = np.empty(order.size, dtype=np.int64)
    parent[order[0]] = -1
    parent[order[1:]] = order[:-1]
    return parent


def xy_tree(
    pattern: str, M: int, N: int, B: int = 1, T_R: float = T_R_DEFAULT
) -> np.ndarray:
    """The X-Y Reduce tree over ranks: rows to column 0, then column 0 to (0, 0).

    PE ``(r, c)`` with ``c > 0`` sends to ``(r, t_N[c])`` and ``(r, 0)`` with
    ``r > 0`` to ``(t_M[r], 0)``, where ``t_n`` is the pattern's tree on ``n``
    PEs (:func:`pattern_tree`).
    """
    m = as_int(M, "M", 1, MAX_DP_P)
    n = as_int(N, "N", 1, MAX_DP_P)
    row = np.asarray(pattern_tree(pattern, n, B, T_R), dtype=np.int64)
    col = np.asarray(pattern_tree(pattern, m, B, T_R), dtype=np.int64)
    base = np.arange(m, dtype=np.int64)[:, None] * n
    parent = base + row[None, :]
    parent[:, 0] = col * n
    parent[0, 0] = -1
    return parent.reshape(-1)


# -- schedule assembly ---------------------------------------------------------------
class _Transfers:
    """Transfers with explicit dependencies, for a ``"explicit"`` kit Program.

    Collected as lists and handed to :class:`wafercoll.kit.Program` in one
    step (a multicast per broadcast block).
    """

    def __init__(self) -> None:
        self.src: list[int] = []
        self.op: list[int] = []
        self.dst_off: list[int] = [0]
        self.dsts: list[int] = []
        self.lo: list[int] = []
        self.dep_off: list[int] = [0]
        self.deps: list[int] = []

    def add(
        self, src: int, dsts: Sequence[int], block: int, op: int, deps: Sequence[int]
    ) -> int:
        self.src.append(src)
        self.op.append(op)
        self.dsts.extend(dsts)
        self.dst_off.append(len(self.dsts))
        self.lo.append(block)
        self.deps.extend(deps)
        self.dep_off.append(len(self.deps))
        return len(self.src) - 1

    def schedule(self, ranks: int, block_bytes: list[int], name: str) -> Schedule:
        prog = kit.Program(ranks, block_bytes, rule="explicit", name=name)
        prog.step(
            self.src,
            kit.Multi(self.dsts, self.dst_off),
            self.lo,
            np.asarray(self.op, np.uint8),
            deps=(self.deps, self.dep_off),
        )
        return prog.schedule()


def _add_bcast(
    tl: _Transfers,
    ranks: Sequence[int],
    kids: list[list[int]],
    root: int,
    first: list[int],
    nb: int,
) -> int:
    """Multicast every block from the tree's root to the other ranks.

    Block ``b`` depends on the root's incoming transfers of block ``b`` (the
    reduction is done there). Returns the id of block 0's multicast (-1 when
    there is nobody to send to).
    """
    dsts = [r for i, r in enumerate(ranks) if i != root]
    if not dsts:
        return -1
    ids = [
        tl.add(ranks[root], dsts, b, _COPY, [first[c] + b for c in kids[root]])
        for b in range(nb)
    ]
    return ids[0]


def _add_allreduce(
    tl: _Transfers,
    ranks: Sequence[int],
    kids: list[list[int]],
    root: int,
    nb: int,
    ready: Any = None,
    before_write: Any = None,
) -> tuple[list[int], int]:
    """Add Reduce-then-Broadcast over ``ranks`` (local indices in ``kids``, ``root``).

    A reduction tree, then the multicast of its sum (:func:`_add_bcast`). The
    tree's transfers and dependencies are those of ``tree_schedule`` (post-order,
    a PE's block ``b`` after its block ``b - 1`` -- or, for block 0, after the
    previous sibling's last block -- and after its children's block ``b``),
    with the children taken in the order of ``kids``; block 0 also follows
    the last block of the latest earlier sibling on the same side of the
    parent (by index), when that is not the previous sibling. Extra
    dependencies:
    ``ready(v, b)`` before ``v`` sends block ``b`` (the data it holds) and
    ``before_write(v, b)`` before anything is added into ``v``'s block ``b``.
    Returns, per local index, the id of its block-0 transfer (-1 for the root;
    block ``b`` is that id + ``b``), and the id of the broadcast's block 0.
    """
    first = [-1] * len(ranks)
    stack = [(root, 0)]
    while stack:
        v, nxt = stack[-1]
        if nxt < len(kids[v]):
            stack[-1] = (v, nxt + 1)
            stack.append((kids[v][nxt], 0))
            continue
        stack.pop()
        if v == root:
            break
        par = stack[-1][0]
        pos = stack[-1][1] - 1  # v is kids[par][pos]
        after = []  # siblings whose whole stream par takes before v's
        if pos > 0:
            after.append(kids[par][pos - 1])
            side = [s for s in kids[par][:pos] if (s > par) == (v > par)]
            if side and side[-1] != after[0]:
                after.append(side[-1])
        for b in range(nb):
            deps = [first[v] + b - 1] if b > 0 else [first[s] + nb - 1 for s in after]
            deps.extend(first[c] + b for c in kids[v])
            if ready is not None:
                deps.extend(ready(v, b))
            if before_write is not None:
                deps.extend(before_write(par, b))
            t = tl.add(ranks[v], [ranks[par]], b, _REDUCE, deps)
            if b == 0:
                first[v] = t
    return first, _add_bcast(tl, ranks, kids, root, first, nb)


def _kids(parent: np.ndarray, key: Any = None) -> tuple[list[list[int]], int]:
    """Children lists (increasing index, or sorted by ``key``) and the root."""
    kids: list[list[int]] = [[] for _ in range(parent.size)]
    root = -1
    for v, p in enumerate(parent.tolist()):
        if p < 0:
            root = v
        else:
            kids[p].append(v)
    if key is not None:
        for v, ks in enumerate(kids):
            ks.sort(key=lambda c, v=v: key(v, c))
    return kids, root


#: Transfers a builder may emit (the compiled core's limit on a schedule).
_MAX_TRANSFERS = 1 << 26


def _blocks(size: Any, wavelets_per_block: Any, pes: int) -> tuple[int, list[int]]:
    """Vector length in wavelets and the block sizes in bytes.

    Refuses, before building anything, a cut into more blocks than a schedule
    over ``pes`` PEs can hold: a reduce and a broadcast move each block over
    every PE once, ``2 (pes - 1)`` transfers per block.
    """
    s, B = size_wavelets(size)
    w = (
        B
        if wavelets_per_block is None
        else min(B, as_int(wavelets_per_block, "wavelets_per_block", 1))
    )
    nb = -(-B // w)
    need = 2 * max(pes - 1, 1) * nb
    if need > _MAX_TRANSFERS:
        least = -(-B // (_MAX_TRANSFERS // (2 * max(pes - 1, 1))))
        raise ValueError(
            f"wavelets_per_block = {w} cuts {B} wavelets into {nb} blocks: about "
            f"{need} transfers on {pes} PEs, more than a schedule holds "
            f"({_MAX_TRANSFERS}); use wavelets_per_block >= {least}"
        )
    sizes = [w * WAVELET_BYTES] * nb
    sizes[-1] = s - (nb - 1) * w * WAVELET_BYTES
    return B, sizes


def _check_pattern(pattern: Any, allowed: Sequence[str]) -> str:
    if pattern not in allowed:
        raise ValueError(
            f"pattern must be one of {', '.join(allowed)}, got {pattern!r}"
        )
    return str(pattern)


def _grid_shape(name: str, p: int, topology: Any, shape: Any) -> tuple[int, int]:
    if shape is None:
        if topology is None:
            raise ValueError(
                f"{name} needs the grid: pass topology=wafer_grid(M, N) or shape=(M, N)"
            )
        shape = topology.shape
    if isinstance(shape, (str, bytes)) or len(shape) != 2:
        raise ValueError(f"shape must be a pair (M, N), got {shape!r}")
    M = as_int(shape[0], "shape[0] (M)", 1)
    N = as_int(shape[1], "shape[1] (N)", 1)
    if topology is not None and tuple(topology.shape) != (M, N):
        raise ValueError(
            f"shape = ({M}, {N}) does not match the topology's {topology.shape}"
        )
    if M * N != p:
        raise ValueError(f"{name}: ranks = {p} must equal M * N = {M} * {N}")
    return M, N


# -- 1D AllReduce ----------------------------------------------------------------
def _reduce_bcast(pattern: str) -> Any:
    def builder(
        p: int,
        size: int,
        *,
        topology: Any = None,
        root: int = 0,
        wavelets_per_block: int | None = None,
        T_R: float = T_R_DEFAULT,
    ) -> Schedule:
        B, sizes = _blocks(size, wavelets_per_block, p)
        r = as_int(root, "root", 0, p - 1)
        parent = rooted_tree(pattern, p, r, B, as_ramp_latency(T_R))
        # Nearest child first, as a row tree takes them left to right (and
        # its mirror right to left); at the root, the left one first on a tie.
        kids, _ = _kids(parent, key=lambda v, c: (abs(c - v), c))
        tl = _Transfers()
        _add_allreduce(tl, range(p), kids, r, len(sizes))
        return tl.schedule(p, sizes, f"wafer_{pattern}_bcast(P={p}, B={B}, root={r})")

    return builder


def _ring(p: int, size: int, *, topology: Any = None, mapping: str = "a") -> Schedule:
    _, B = size_wavelets(size)
    order = ring_order(p, mapping).tolist()
    # P blocks of floor(B/P) or ceil(B/P) wavelets, the larger ones first.
    sizes = [WAVELET_BYTES * (B // p + (1 if b < B % p else 0)) for b in range(p)]
    # A send a -> b waits for a's and b's previous send and receive (program
    # order of Sendrecv steps, as the generic ring).
    prog = kit.Program(
        p, sizes, rule="sendrecv", name=f"wafer_ring(P={p}, B={B}, mapping={mapping})"
    )
    kit.ring_allreduce(prog, order)
    return prog.schedule()


# -- 2D ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Grid:
    """The checked options of a 2D builder."""

    name: str
    M: int
    N: int
    B: int
    sizes: list[int]
    wavelets_per_block: int | None
    pattern: str  # "" for the builders without one
    T_R: float

    def label(self) -> str:
        """The schedule's name: the builder's and its options."""
        pat = f", pattern={self.pattern}" if self.pattern else ""
        return f"{self.name}(M={self.M}, N={self.N}, B={self.B}{pat})"


def _grid_builder(
    name: str, patterns: Sequence[str] = ()
) -> Callable[[Callable[[int, int, _Grid], Any]], Callable[..., Any]]:
    """The registered form of ``make(p, size, grid)``: the options, checked.

    The builder takes ``topology``, ``shape``, ``pattern`` (one of
    ``patterns``, or ignored without them), ``wavelets_per_block`` and
    ``T_R`` and checks them in that order.
    """

    def wrap(make: Callable[[int, int, _Grid], Any]) -> Callable[..., Any]:
        def builder(
            p: int,
            size: int,
            *,
            topology: Any = None,
            shape: Any = None,
            pattern: str = "chain",
            wavelets_per_block: int | None = None,
            T_R: float = T_R_DEFAULT,
        ) -> Any:
            M, N = _grid_shape(name, p, topology, shape)
            pat = _check_pattern(pattern, patterns) if patterns else ""
            B, sizes = _blocks(size, wavelets_per_block, M * N)
            t_r = as_ramp_latency(T_R)
            grid = _Grid(name, M, N, B, sizes, wavelets_per_block, pat, t_r)
            return make(p, size, grid)

        return builder

    return wrap


def _grid_reduce(parent: np.ndarray, size: int, g: _Grid) -> Any:
    """The Reduce schedule of a tree over the grid's ranks."""
    s = tree_schedule(parent, size, g.wavelets_per_block, row=False)
    s.name = g.label()
    return s


@_grid_builder("wafer_2d_broadcast")
def _broadcast_2d(p: int, size: int, g: _Grid) -> Any:
    # The row's flooding broadcast: one multicast; the grid's routes make it 2D.
    s = flood_broadcast(p, size)
    s.name = g.label()
    return s


@_grid_builder("wafer_xy_reduce", REDUCE_ALGORITHMS)
def _xy_reduce(p: int, size: int, g: _Grid) -> Any:
    return _grid_reduce(xy_tree(g.pattern, g.M, g.N, g.B, g.T_R), size, g)


@_grid_builder("wafer_snake_reduce")
def _snake_reduce(p: int, size: int, g: _Grid) -> Any:
    return _grid_reduce(snake_tree(g.M, g.N), size, g)


@_grid_builder("wafer_2d_allreduce", PATTERNS_2D)
def _allreduce_2d(p: int, size: int, g: _Grid) -> Schedule:
    if g.pattern == "snake":
        parent = snake_tree(g.M, g.N)
    else:
        parent = xy_tree(g.pattern, g.M, g.N, g.B, g.T_R)
    kids, root = _kids(parent)
    tl = _Transfers()
    _add_allreduce(tl, range(p), kids, root, len(g.sizes))
    return tl.schedule(p, g.sizes, g.label())


@_grid_builder("wafer_xy_allreduce", REDUCE_ALGORITHMS)
def _xy_allreduce(p: int, size: int, g: _Grid) -> Schedule:
    M, N, nb = g.M, g.N, len(g.sizes)
    row_kids, _ = _kids(np.asarray(pattern_tree(g.pattern, N, g.B, g.T_R)))
    col_kids, _ = _kids(np.asarray(pattern_tree(g.pattern, M, g.B, g.T_R)))
    tl = _Transfers()
    # Rows: Reduce-then-Broadcast to and from column 0, all rows at once.
    row_first, row_bcast = [], []
    for r in range(M):
        f, bc = _add_allreduce(tl, range(r * N, (r + 1) * N), row_kids, 0, nb)
        row_first.append(f)
        row_bcast.append(bc)

    def row_done(r: int, c: int, b: int) -> list[int]:
        # The transfers that leave (r, c) holding the row's sum of block b:
        # the row broadcast (c > 0) or the reduce into the row's root (c = 0).
        if c > 0:
            return [row_bcast[r] + b]
        return [row_first[r][k] + b for k in row_kids[0]]

    # Columns: the same on every column, root row 0. A PE sends its block b
    # once its row phase has produced it, and adds a column child's block b
    # only after the row phase has written it (the broadcast or the row's
    # reduce).
    for c in range(N):
        _add_allreduce(
            tl,
            range(c, M * N, N),
            col_kids,
            0,
            nb,
            ready=lambda v, b, c=c: row_done(v, c, b),
            before_write=lambda v, b, c=c: row_done(v, c, b),
        )
    return tl.schedule(p, g.sizes, g.label())


def _xy_ring_allreduce(
    p: int,
    size: int,
    *,
    topology: Any = None,
    shape: Any = None,
    mapping: str = "a",
) -> Schedule:
    """X-Y Ring AllReduce: a ring AllReduce along every row, then every column.

    The 1D ring of Section 6.2 (mapping ``"a"`` or ``"b"`` of Figure 7) on
    every row at once, then on every column, each on the whole vector: the
    form ``xy_ring`` of :func:`wafercoll.wafer.allreduce2d_time` (Lemma 6.1
    twice). The vector is cut into ``lcm(M, N)`` blocks, so that a row ring
    runs over ``lcm / N`` groups of ``N`` blocks and a column ring over
    ``lcm / M`` groups of ``M``. Each PE runs its steps in program order
    (``rule="sendrecv"``), so a column starts once its PEs finished their rows.
    """
    name = "wafer_xy_ring_allreduce"
    M, N = _grid_shape(name, p, topology, shape)
    if mapping not in RING_MAPPINGS:
        raise ValueError(f"mapping must be 'a' or 'b', got {mapping!r}")
    _, B = size_wavelets(size)
    L = math.lcm(M, N)
    transfers = 2 * L * (M * (N - 1) + N * (M - 1))
    if transfers > _MAX_TRANSFERS:
        raise ValueError(
            f"{name}: a {M} x {N} grid needs lcm(M, N) = {L} blocks and about "
            f"{transfers} transfers, more than a schedule holds ({_MAX_TRANSFERS}); "
            "use a grid whose sides have a larger common factor"
        )
    # L blocks of floor(B/L) or ceil(B/L) wavelets, the larger ones first.
    sizes = [WAVELET_BYTES * (B // L + (1 if b < B % L else 0)) for b in range(L)]
    prog = kit.Program(
        p,
        sizes,
        rule="sendrecv",
        name=f"{name}(M={M}, N={N}, B={B}, mapping={mapping})",
    )
    if N > 1:
        rows = np.arange(M, dtype=np.int64)[:, None] * N + ring_order(N, mapping)
        for g in range(L // N):
            kit.ring_allreduce(prog, rows, base=g * N)
    if M > 1:
        cols = np.arange(N, dtype=np.int64)[:, None] + N * ring_order(M, mapping)
        for g in range(L // M):
            kit.ring_allreduce(prog, cols, base=g * M)
    return prog.schedule()


# -- registration ------------------------------------------------------------------
_1D = {"wavelets_per_block": None, "T_R": T_R_DEFAULT}
for _pat in REDUCE_ALGORITHMS:
    _opts = {"root": 0, "wavelets_per_block": None}
    if _pat == "autogen":
        _opts["T_R"] = T_R_DEFAULT
    register(
        AlgorithmInfo.of(
            "wafer",
            _pat,
            "allreduce",
            families=("line",),
            source=f"{_SOURCE}, Section 6.1 (Reduce: Section 5, Broadcast: "
            "Section 4.2)",
            summary=f"Reduce-then-Broadcast: the {_pat} reduce to PE root (the "
            "pattern on each side), then a multicast of the sum",
            builder=_reduce_bcast(_pat),
            parameters=_opts,
            max_ranks=_MAX_1D,
            label=f"{PATTERN_LABELS[_pat]}+Bcast",
        )
    )
register(
    AlgorithmInfo(
        "wafer_ring_allreduce",
        "allreduce",
        ("line",),
        f"{_SOURCE}, Section 6.2 (Figure 7, Lemma 6.1)",
        "ring reduce-scatter then allgather over the row, mapping 'a' (Fig. 7a) or "
        "'b' (Fig. 7b, neighbours at most two apart)",
        _ring,
        {"mapping": "a"},
        max_ranks=_MAX_RING,
        label="Ring",
    )
)
register(
    AlgorithmInfo(
        "wafer_xy_ring_allreduce",
        "allreduce",
        ("mesh",),
        f"{_SOURCE}, Sections 6.2 and 7.4 (X-Y Ring: Lemma 6.1 on rows, then columns)",
        "ring AllReduce along every row, then along every column (mapping 'a' or "
        "'b' of Fig. 7 in both)",
        _xy_ring_allreduce,
        {"shape": None, "mapping": "a"},
        max_ranks=_MAX_2D,
        label="X-Y Ring",
    )
)
_2D: dict[str, Any] = {"shape": None}
#: The paper's names of the 2D collectives (Section 7).
_LABELS_2D = {
    "wafer_2d_broadcast": "2D broadcast",
    "wafer_xy_reduce": "X-Y",
    "wafer_snake_reduce": "Snake",
    "wafer_xy_allreduce": "X-Y AllReduce",
    "wafer_2d_allreduce": "2D AllReduce",
}
for _name, _coll, _sec, _summary, _fn, _params in (
    (
        "wafer_2d_broadcast",
        "broadcast",
        "7.1 (Lemma 7.1)",
        "one multicast from (0, 0) along row 0 and then every column",
        _broadcast_2d,
        _2D,
    ),
    (
        "wafer_xy_reduce",
        "reduce",
        "7.2",
        "every row reduces to column 0 with a 1D pattern, then column 0 to (0, 0)",
        _xy_reduce,
        {**_2D, "pattern": "chain", **_1D},
    ),
    (
        "wafer_snake_reduce",
        "reduce",
        "7.3",
        "a chain along the boustrophedon path of the grid, ending at (0, 0)",
        _snake_reduce,
        {**_2D, "wavelets_per_block": None},
    ),
    (
        "wafer_xy_allreduce",
        "allreduce",
        "7.4",
        "Reduce-then-Broadcast along every row, then along every column",
        _xy_allreduce,
        {**_2D, "pattern": "chain", **_1D},
    ),
    (
        "wafer_2d_allreduce",
        "allreduce",
        "7.4",
        "X-Y (or snake) reduce to (0, 0), then the 2D broadcast of the sum",
        _allreduce_2d,
        {**_2D, "pattern": "chain", **_1D},
    ),
):
    register(
        AlgorithmInfo(
            _name,
            _coll,
            ("mesh",),
            f"{_SOURCE}, Section {_sec}",
            _summary,
            _fn,
            _params,
            max_ranks=_MAX_2D,
            label=_LABELS_2D[_name],
        )
    )
