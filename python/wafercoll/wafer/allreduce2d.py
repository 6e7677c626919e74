"""1D AllReduce and the 2D collectives of the wafer: closed forms and heatmaps.

Sections 6 and 7 of *Near-Optimal Wafer-Scale Reduce* (Luczynski, Gianinazzi
et al., HPDC 2024), in the units of :mod:`wafercoll.wafer.model` (cycles,
wavelets of 32 bits, ramp latency ``T_R``).

1D AllReduce (Section 6) on a row of ``P`` PEs ``0 .. P-1``:

* ``<pattern>+bcast`` (Section 6.1): ``T_REDUCE + T_BCAST``, a Reduce with
  one of the patterns of Section 5 followed by the flooding broadcast of
  Lemma 4.1. The root is PE 0 (the paper's default) or any PE ``r``; see
  :func:`rooted_reduce_time` and :func:`best_root`.
* ``ring`` (Lemma 6.1): ``2 (P-1) B / P + 4P - 6 + 2 (P-1)(2 T_R + 1)``.

2D (Section 7) on a grid of ``M x N = P`` PEs. **Axis convention**: ``M``
rows and ``N`` columns (``wafercoll.topology.mesh(rows=M, cols=N)``); PE ``(i, j)``
is row ``i``, column ``j``; the x-axis runs along a row (``N`` PEs), the
y-axis along a column (``M`` PEs); the root is ``(0, 0)``. X-Y patterns
work on the rows first (every row at once, ``N`` PEs each), then on the
first column (``M`` PEs). An axis of length 1 has nothing to do and adds 0
cycles, so a ``1 x N`` grid is the 1D row.

Where this module goes beyond the paper's text
----------------------------------------------
* **Root in the middle** (Section 6.1 suggests it, gives no formula): the
  Reduce to PE ``r`` applies the pattern to the left part ``[0 .. r]``
  (``r + 1`` PEs, mirrored) and to the right part ``[r .. P-1]`` (``P - r``
  PEs), joined at ``r``; equation (1) on the joined tree's metrics
  (:func:`rooted_tree_metrics`). The broadcast from ``r`` costs
  ``B + max(r, P-1-r) + 1 + 2 T_R`` (:func:`rooted_broadcast_time`).
* **Ring when P does not divide B**: Lemma 6.1 assumes it does; we keep the
  formula with the real chunk ``B / P``. A schedule of integer chunks sends
  ``ceil(B / P)`` wavelets in its largest chunks, so it can take up to
  ``2 (P-1)(ceil(B/P) - B/P)`` cycles more than this value.
* **Refined Star at any root**: the pipelining argument of Section 5.1 (the
  root takes one wavelet per cycle, ``B (P-1)`` in all) does not depend on
  where the root is, so Star's Reduce costs ``B (P-1) + 2 T_R + 1`` at every
  root; a middle root only shortens its broadcast.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from .._util import as_int
from .model import (
    MAX_P,
    T_R_DEFAULT,
    TreeMetrics,
    as_ramp_latency,
    binary_tree,
    broadcast_time,
    chain_time,
    chain_tree,
    contention_depth,
    star_time,
    star_tree,
    tree_metrics,
    two_phase_tree,
)
from .reduce1d import MAX_DP_P, autogen, autogen_cycles, reduce_time

__all__ = [
    "ALLREDUCE_2D_ALGORITHMS",
    "ALLREDUCE_ALGORITHMS",
    "HEATMAP_KINDS",
    "REDUCE_2D_ALGORITHMS",
    "allreduce_2d_time",
    "allreduce_time",
    "best_root",
    "broadcast_2d_time",
    "lower_bound_2d",
    "reduce_2d_time",
    "ring_time",
    "rooted_broadcast_time",
    "rooted_reduce_time",
    "rooted_reduce_tree",
    "rooted_tree_metrics",
    "speedup_heatmap",
]

#: The 1D Reduce patterns a Reduce-then-Broadcast can use (Section 5).
PATTERNS = ("star", "chain", "tree", "two_phase", "autogen")
#: 1D AllReduce (Section 6): Reduce-then-Broadcast per pattern, then Ring.
ALLREDUCE_ALGORITHMS = tuple(f"{p}+bcast" for p in PATTERNS) + ("ring",)
#: 2D Reduce (Sections 7.2, 7.3): X-Y with each 1D pattern, then Snake.
REDUCE_2D_ALGORITHMS = tuple(f"xy_{p}" for p in PATTERNS) + ("snake",)
#: 2D AllReduce (Section 7.4): X-Y AllReduce (1D ``<p>+bcast`` on x, then on
#: y) and X-Y Ring, then every 2D Reduce followed by the 2D broadcast.
ALLREDUCE_2D_ALGORITHMS = (
    tuple(f"xy_{p}" for p in PATTERNS)
    + ("xy_ring",)
    + tuple(f"{a}+bcast2d" for a in REDUCE_2D_ALGORITHMS)
)
#: What :func:`speedup_heatmap` draws, and the baseline (the vendor's way).
HEATMAP_KINDS = {
    "1d_allreduce": "chain+bcast",
    "2d_allreduce": "xy_chain",
    "1d_reduce": "chain",
    "2d_reduce": "xy_chain",
}
#: Largest grid side of the 2D heatmaps (``n * n`` must fit a Chain of MAX_P).
MAX_SIDE = 2048

_TREES: dict[str, Callable[[int], np.ndarray]] = {
    "star": star_tree,
    "chain": chain_tree,
    "tree": binary_tree,
    "two_phase": two_phase_tree,
}


# -- argument checks ---------------------------------------------------------------
def _choice(value: Any, name: str, known: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if value not in known:
        raise ValueError(f"{name} must be one of {', '.join(known)}; got {value!r}")
    return value


def _row(P: Any, B: Any, T_R: Any) -> tuple[int, int, float]:
    return (
        as_int(P, "P", 2, MAX_P),
        as_int(B, "B", 1, 1 << 40),
        as_ramp_latency(T_R),
    )


def _grid(M: Any, N: Any, B: Any, T_R: Any) -> tuple[int, int, int, float]:
    m = as_int(M, "M", 1, MAX_P)
    n = as_int(N, "N", 1, MAX_P)
    if m * n < 2:
        raise ValueError(f"M * N must be >= 2 (a grid of at least 2 PEs), got {m}x{n}")
    if m * n > MAX_P:
        raise ValueError(f"M * N must be <= {MAX_P}, got {m}x{n} = {m * n}")
    return m, n, as_int(B, "B", 1, 1 << 40), as_ramp_latency(T_R)


def _root(root: Any, P: int) -> int | str:
    if isinstance(root, str):
        if root != "best":
            raise ValueError(
                f'root must be an int in [0, {P - 1}] or "best", got {root!r}'
            )
        return root
    return as_int(root, "root", 0, P - 1)


# -- 1D pieces -----------------------------------------------------------------------
def ring_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Ring AllReduce, Lemma 6.1.

    ``2 (P-1) B / P + 4P - 6 + 2 (P-1)(2 T_R + 1)``: ``P - 1`` rounds of
    reduce-scatter then ``P - 1`` of allgather, a chunk of ``B / P`` wavelets
    per round over each of the ``2 (P-1)`` ring links (both mappings of
    Figure 7). In the proof's terms: depth ``2 (P-1)``, distance
    ``2 (2P - 3)``, energy ``2 (P-1) * 2 (P-1) B / P`` over ``2 (P-1)`` links
    (the links are used in both directions), contention ``2 (P-1) B / P``.

    Parameters
    ----------
    P : int
        PEs in the row, at least 2.
    B : int
        Vector length in wavelets. When ``P`` does not divide ``B`` the chunk
        ``B / P`` is kept real (see the module docstring).
    T_R : float
        Ramp latency in cycles.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.ring_time(16, 64)
    328.0
    """
    P, B, T_R = _row(P, B, T_R)
    return 2 * (P - 1) * B / P + 4 * P - 6 + 2 * (P - 1) * (2 * T_R + 1)


def rooted_broadcast_time(
    P: int, B: int, root: int = 0, T_R: float = T_R_DEFAULT
) -> float:
    """Flooding broadcast from PE ``root``: ``B + max(r, P-1-r) + 1 + 2 T_R``.

    Lemma 4.1's proof with the root anywhere: the root multicasts its stream
    both ways, so the depth is 1, the distance ``max(r, P-1-r)``, the energy
    ``B (P-1)`` over the ``P - 1`` links pointing away from the root, and the
    contention ``B``. Equation (1) gives
    ``max(B, B + max(r, P-1-r)) + 2 T_R + 1``; at ``r = 0`` this is Lemma
    4.1's ``B + P + 2 T_R``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.rooted_broadcast_time(16, 64), wafer.rooted_broadcast_time(16, 64, root=8)
    (84.0, 77.0)
    """
    P, B, T_R = _row(P, B, T_R)
    r = as_int(root, "root", 0, P - 1)
    return B + max(r, P - 1 - r) + 1 + 2 * T_R


def rooted_tree_metrics(parent: Any) -> TreeMetrics:
    """E, L, D, C, N of a reduction tree on a row towards any root (for B = 1).

    Generalises :func:`wafercoll.wafer.tree_metrics` (root PE 0) to a root
    ``r`` anywhere in the row, the PE with ``parent[r] == -1``. Every other
    PE sends to a PE on the same side of the root and strictly closer to it,
    so all messages travel towards the root: ``N = P - 1`` links (``r``
    pointing east, ``P - 1 - r`` pointing west), and the distance is
    ``L = max(r, P - 1 - r)``. Energy is the sum of the edge lengths, depth
    the height of the tree.

    Contention counts messages received one after another, as in
    :func:`~wafercoll.wafer.tree_metrics`:
    ``C(v) = max(m, max_j C(child_j) + m - j)`` for the ``m`` children of
    ``v`` taken in order, and ``C = max(1, C(r))``. Every PE takes its
    children **nearest first**; at the root a tie between the two sides goes
    to the left one. Nearest first is the order of the pre-order trees of
    Section 5.5 (a PE forwards the stream of its farthest child as it
    arrives, and that stream passes over the routers of the nearer ones), so
    at ``r = 0`` the metrics are exactly those of ``tree_metrics``, and on
    each side of the root those of the mirrored or shifted pattern.

    Parameters
    ----------
    parent : array_like of int
        ``parent[v]`` is the PE that ``v`` sends its partial sum to; exactly
        one entry is -1 (the root).

    Returns
    -------
    TreeMetrics
        With ``distance = max(r, P-1-r)`` and ``links = P - 1``.

    Raises
    ------
    TypeError
        If ``parent`` is not a non-empty 1-D integer array.
    ValueError
        If there is not exactly one root, or some ``parent[v]`` is not on
        ``v``'s side of the root and strictly closer to it.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.rooted_tree_metrics([1, 2, -1, 2, 3])
    TreeMetrics(energy=4, distance=2, depth=2, contention=2, links=4)
    """
    p = np.asarray(parent)
    if p.ndim != 1 or p.size == 0 or not np.issubdtype(p.dtype, np.integer):
        raise TypeError("parent must be a non-empty 1-D integer array")
    p = p.astype(np.int64)
    n = p.size
    roots = np.flatnonzero(p == -1)
    if roots.size != 1:
        raise ValueError(
            f"parent must hold exactly one -1 (the root), got {roots.size}"
        )
    r = int(roots[0])
    v = np.arange(n, dtype=np.int64)
    # Same side, strictly closer: r <= parent < v on the right, v < parent <= r
    # on the left. This also rules out cycles (the distance to r decreases).
    ok = np.where(v > r, (p >= r) & (p < v), (p > v) & (p <= r))
    ok[r] = True
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        side = f"[{r}, {i})" if i > r else f"({i}, {r}]"
        raise ValueError(f"parent[{i}] = {p[i]} must be in {side} (towards root {r})")
    if n == 1:
        return TreeMetrics(0, 0, 0, 0, 0)
    energy = int(np.abs(v - p)[v != r].sum())
    # Children before parents and, per parent, in reverse receive order:
    # farthest from the root first; at equal distance the right one first.
    dist = np.abs(v - r)
    order = np.lexsort((-v, -dist))[:-1]  # the root (distance 0) comes last
    contention, depth = contention_depth(p, r, order.tolist())
    return TreeMetrics(energy, max(r, n - 1 - r), depth, contention, n - 1)


def _pattern_tree(pattern: str, n: int, B: int, T_R: float) -> np.ndarray:
    if pattern == "autogen":
        return autogen(n, B, T_R).parent
    return _TREES[pattern](n)


def _join(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Join a pattern on ``[0..r]`` (mirrored) and one on ``[r..P-1]`` at ``r``."""
    r = left.size - 1
    parent = np.empty(r + right.size, dtype=np.int64)
    parent[r - np.arange(1, left.size)] = r - left[1:]
    parent[r + np.arange(1, right.size)] = r + right[1:]
    parent[r] = -1
    return parent


def rooted_reduce_tree(
    pattern: str, P: int, root: int = 0, B: int = 1, T_R: float = T_R_DEFAULT
) -> np.ndarray:
    """The reduction tree of a 1D pattern towards PE ``root`` (Section 6.1).

    The pattern's tree on the ``root + 1`` PEs ``[0 .. root]``, mirrored (its
    PE ``i`` is PE ``root - i``), and on the ``P - root`` PEs
    ``[root .. P-1]`` (its PE ``i`` is ``root + i``), joined at the root.
    At ``root = 0`` this is the pattern's own tree.

    Parameters
    ----------
    pattern : {"star", "chain", "tree", "two_phase", "autogen"}
        The 1D Reduce pattern; ``autogen`` takes the optimal tree of each part
        for this ``B`` and ``T_R`` (which is why they are parameters).
    P : int
        PEs in the row, at least 2.
    root : int
        The root PE, ``0 <= root < P``.
    B : int
        Vector length (used by ``autogen`` only).
    T_R : float
        Ramp latency (used by ``autogen`` only).

    Returns
    -------
    ndarray of int64
        ``parent`` with ``parent[root] == -1``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.rooted_reduce_tree("chain", 5, root=2).tolist()
    [1, 2, -1, 2, 3]
    """
    pattern = _choice(pattern, "pattern", PATTERNS)
    P, B, T_R = _row(P, B, T_R)
    r = as_int(root, "root", 0, P - 1)
    return _join(
        _pattern_tree(pattern, r + 1, B, T_R), _pattern_tree(pattern, P - r, B, T_R)
    )


def rooted_reduce_time(
    pattern: str, P: int, B: int, root: int = 0, T_R: float = T_R_DEFAULT
) -> float:
    """Predicted cycles of a 1D Reduce to PE ``root``.

    * ``root == 0``: :func:`wafercoll.wafer.reduce_time`, the paper's forms.
    * ``star``: the refined ``B (P-1) + 2 T_R + 1`` at every root (the root
      still receives ``B (P-1)`` wavelets in a pipeline, Section 5.1).
    * otherwise: equation (1) on :func:`rooted_tree_metrics` of
      :func:`rooted_reduce_tree`, ``max(C, E / (P-1) + max(r, P-1-r)) +
      (2 T_R + 1) D`` with ``E`` and ``C`` scaled by ``B``.

    Parameters
    ----------
    pattern : {"star", "chain", "tree", "two_phase", "autogen"}
        The 1D Reduce pattern (Section 5).
    P, B : int
        PEs in the row (at least 2) and vector length in wavelets.
    root : int
        The root PE, ``0 <= root < P``.
    T_R : float
        Ramp latency in cycles.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.rooted_reduce_time("chain", 16, 64, root=8)
    168.0
    """
    pattern = _choice(pattern, "pattern", PATTERNS)
    P, B, T_R = _row(P, B, T_R)
    r = as_int(root, "root", 0, P - 1)
    if pattern == "star":
        return float(star_time(P, B, T_R))
    if r == 0:
        return reduce_time(pattern, P, B, T_R)
    tree = rooted_reduce_tree(pattern, P, r, B, T_R)
    return rooted_tree_metrics(tree).cycles(B, T_R)


@functools.lru_cache(maxsize=32)
def _metrics_by_root(pattern: str, P: int) -> tuple[np.ndarray, ...]:
    """E, L, D, C of a fixed pattern's tree for every root (they do not depend on B)."""
    trees = {n: _TREES[pattern](n) for n in range(1, P + 1)}
    rows = [rooted_tree_metrics(_join(trees[r + 1], trees[P - r])) for r in range(P)]
    cols = zip(
        *((m.energy, m.distance, m.depth, m.contention) for m in rows), strict=True
    )
    out = tuple(np.asarray(c, dtype=np.float64) for c in cols)
    for a in out:
        a.setflags(write=False)
    return out


def _reduce_by_root(pattern: str, P: int, B: int, T_R: float) -> np.ndarray:
    """Reduce cycles to every root ``r = 0 .. P-1`` (entry ``r``)."""
    if pattern == "star":
        return np.full(P, float(star_time(P, B, T_R)))
    if pattern == "autogen":
        cache: dict[int, np.ndarray] = {}

        def part(n: int) -> np.ndarray:
            if n not in cache:
                cache[n] = autogen(n, B, T_R).parent
            return cache[n]

        out = [
            rooted_tree_metrics(_join(part(r + 1), part(P - r))).cycles(B, T_R)
            for r in range(P)
        ]
        out[0] = reduce_time("autogen", P, B, T_R)
        return np.asarray(out)
    E, L, D, C = _metrics_by_root(pattern, P)
    out = np.maximum(B * C, B * E / (P - 1) + L) + (2 * T_R + 1) * D
    out[0] = reduce_time(pattern, P, B, T_R)
    return out


def _broadcast_by_root(P: int, B: int, T_R: float) -> np.ndarray:
    r = np.arange(P)
    return B + np.maximum(r, P - 1 - r) + 1 + 2 * T_R


def best_root(
    algorithm: str, P: int, B: int, T_R: float = T_R_DEFAULT
) -> tuple[int, float]:
    """The root that minimises a 1D Reduce-then-Broadcast, by the model.

    Section 6.1: "this naive implementation could be further optimized by
    choosing an optimal root to reduce to. We could choose it based on our
    performance model." Every ``r = 0 .. P-1`` is tried:
    :func:`rooted_reduce_time` plus :func:`rooted_broadcast_time`.

    Parameters
    ----------
    algorithm : str
        One of :data:`ALLREDUCE_ALGORITHMS`. ``ring`` has no root; it
        returns ``(0, ring_time(P, B, T_R))``.
    P, B : int
        PEs in the row (at least 2) and vector length in wavelets.
    T_R : float
        Ramp latency in cycles.

    Returns
    -------
    root : int
        The best root; the smallest one on ties (so 0 when nothing beats it).
    cycles : float
        Its AllReduce time, at most ``allreduce_time(algorithm, P, B, T_R)``.

    Notes
    -----
    The fixed patterns' metrics do not depend on ``B`` and are cached per
    ``(pattern, P)``: the first call costs ``O(P^2)``, later ones ``O(P)``.
    ``autogen`` solves the DP for every part size ``1 .. P`` (the parts of
    all roots): about 1 s at ``P = 1024`` for ``B >= 256``, but 13 s at
    ``B = 1``, where each solve is slowest.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.best_root("chain+bcast", 16, 64)
    (0, 238.0)
    """
    algorithm = _choice(algorithm, "algorithm", ALLREDUCE_ALGORITHMS)
    P, B, T_R = _row(P, B, T_R)
    if algorithm == "ring":
        return 0, ring_time(P, B, T_R)
    pattern = algorithm.split("+")[0]
    total = _reduce_by_root(pattern, P, B, T_R) + _broadcast_by_root(P, B, T_R)
    r = int(np.argmin(total))
    return r, float(total[r])


def allreduce_time(
    algorithm: str,
    P: int,
    B: int,
    T_R: float = T_R_DEFAULT,
    root: int | str = 0,
) -> float:
    """Predicted cycles of a 1D AllReduce (Section 6).

    Parameters
    ----------
    algorithm : str
        ``star+bcast``, ``chain+bcast``, ``tree+bcast``, ``two_phase+bcast``,
        ``autogen+bcast``: ``T_REDUCE + T_BCAST`` (Section 6.1) with the
        pattern's Reduce (:func:`wafercoll.wafer.reduce_time` at root 0) and
        the flooding broadcast (Lemma 4.1); ``ring``: Lemma 6.1
        (:func:`ring_time`).
    P, B : int
        PEs in the row (at least 2) and vector length in wavelets.
    T_R : float
        Ramp latency in cycles.
    root : int or "best"
        Root of the Reduce and the broadcast: 0 (the leftmost PE, the
        paper's default), any PE ``0 <= root < P``
        (:func:`rooted_reduce_time` + :func:`rooted_broadcast_time`), or
        ``"best"`` for the model's choice (:func:`best_root`). Ring has no
        root: the value is checked, then ignored.

    Returns
    -------
    float
        Cycles. At ``root = 0``, ``reduce_time(pattern, P, B, T_R) +
        broadcast_time(P, B, T_R)``.

    Raises
    ------
    TypeError
        If ``algorithm`` is not a string, or ``P``, ``B``, ``root`` are not
        integers.
    ValueError
        For an unknown algorithm, ``P < 2``, ``B < 1``, ``T_R < 0`` or a root
        outside ``[0, P-1]``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.allreduce_time("chain+bcast", 4, 8)  # (8 + 6*3) + (8 + 4 + 4)
    42.0
    >>> wafer.allreduce_time("ring", 4, 8)  # 2*3*8/4 + 16 - 6 + 2*3*5
    52.0
    """
    algorithm = _choice(algorithm, "algorithm", ALLREDUCE_ALGORITHMS)
    P, B, T_R = _row(P, B, T_R)
    r = _root(root, P)
    if algorithm == "ring":
        return ring_time(P, B, T_R)
    if isinstance(r, str):  # "best"
        return best_root(algorithm, P, B, T_R)[1]
    pattern = algorithm.split("+")[0]
    if r == 0:
        return reduce_time(pattern, P, B, T_R) + broadcast_time(P, B, T_R)
    return rooted_reduce_time(pattern, P, B, r, T_R) + rooted_broadcast_time(
        P, B, r, T_R
    )


# -- 2D ------------------------------------------------------------------------------
def broadcast_2d_time(M: int, N: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """2D flooding broadcast from ``(0, 0)``, Lemma 7.1: ``B + M + N - 2 + 2 T_R + 1``.

    A 1D broadcast along the first row, multicast down every column at once:
    depth 1, distance ``M + N - 2``, energy ``B (P - 1)`` on ``P - 1`` links,
    contention ``B``. On a ``1 x N`` grid it is Lemma 4.1's ``B + N + 2 T_R``.

    Parameters
    ----------
    M, N : int
        Rows and columns of the grid, ``M * N >= 2``.
    B : int
        Vector length in wavelets.
    T_R : float
        Ramp latency in cycles.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.broadcast_2d_time(4, 4, 64)
    75.0
    """
    M, N, B, T_R = _grid(M, N, B, T_R)
    return B + M + N - 2 + 2 * T_R + 1


def _xy(M: int, N: int, fn: Callable[[int], float]) -> float:
    """``fn`` along a row of ``N`` PEs plus along a column of ``M`` PEs.

    An axis of one PE has nothing to reduce or broadcast: 0 cycles.
    """
    x = 0.0 if N == 1 else float(fn(N))
    return x + (0.0 if M == 1 else float(fn(M)))


def reduce_2d_time(
    algorithm: str, M: int, N: int, B: int, T_R: float = T_R_DEFAULT
) -> float:
    """Predicted cycles of a 2D Reduce to ``(0, 0)`` (Sections 7.2, 7.3).

    Parameters
    ----------
    algorithm : str
        ``xy_<pattern>`` for a pattern of Section 5 (``xy_star``,
        ``xy_chain``, ``xy_tree``, ``xy_two_phase``, ``xy_autogen``): X-Y
        Reduce, ``T_REDUCE_X + T_REDUCE_Y`` (Section 7.2), the pattern's 1D
        Reduce on every row of ``N`` PEs at once, then on the first column
        of ``M`` PEs (:func:`wafercoll.wafer.reduce_time`; Auto-Gen chooses
        the optimal tree per axis). ``snake``: the Chain mapped in a snake
        through all ``M N`` PEs, ``T_CHAIN(M N)`` (Section 7.3).
    M, N : int
        Rows and columns (see the module docstring), ``M * N >= 2``.
    B : int
        Vector length in wavelets.
    T_R : float
        Ramp latency in cycles.

    Raises
    ------
    TypeError, ValueError
        For a non-string or unknown algorithm, ``M`` or ``N`` below 1,
        ``M * N < 2``, ``B < 1`` or ``T_R < 0`` (the message names which).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.reduce_2d_time("xy_chain", 4, 4, 64)
    164.0
    >>> wafer.reduce_2d_time("snake", 4, 4, 64)
    154.0
    """
    algorithm = _choice(algorithm, "algorithm", REDUCE_2D_ALGORITHMS)
    M, N, B, T_R = _grid(M, N, B, T_R)
    if algorithm == "snake":
        return float(chain_time(M * N, B, T_R))
    return _xy(M, N, lambda n: reduce_time(algorithm[3:], n, B, T_R))


def allreduce_2d_time(
    algorithm: str, M: int, N: int, B: int, T_R: float = T_R_DEFAULT
) -> float:
    """Predicted cycles of a 2D AllReduce (Section 7.4).

    Parameters
    ----------
    algorithm : str
        ``xy_<pattern>`` (``xy_star``, ``xy_chain``, ``xy_tree``,
        ``xy_two_phase``, ``xy_autogen``): X-Y AllReduce,
        ``T_ALLREDUCE_X + T_ALLREDUCE_Y`` with the 1D ``<pattern>+bcast`` of
        :func:`allreduce_time` (root 0) on every row, then on every column;
        ``xy_ring``: the same with Ring (Lemma 6.1). ``<2D reduce>+bcast2d``
        (``xy_star+bcast2d`` ... ``xy_autogen+bcast2d``, ``snake+bcast2d``):
        ``T_2D_REDUCE + T_2D_BROADCAST``, :func:`reduce_2d_time` then
        :func:`broadcast_2d_time`.
    M, N, B, T_R
        As for :func:`reduce_2d_time`, which also lists the errors raised.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.allreduce_2d_time("xy_chain+bcast2d", 4, 4, 64)
    239.0
    >>> wafer.allreduce_2d_time("snake+bcast2d", 4, 4, 64)
    229.0
    """
    algorithm = _choice(algorithm, "algorithm", ALLREDUCE_2D_ALGORITHMS)
    M, N, B, T_R = _grid(M, N, B, T_R)
    if algorithm.endswith("+bcast2d"):
        reduce = algorithm[: -len("+bcast2d")]
        return reduce_2d_time(reduce, M, N, B, T_R) + broadcast_2d_time(M, N, B, T_R)
    one_d = "ring" if algorithm == "xy_ring" else f"{algorithm[3:]}+bcast"
    return _xy(M, N, lambda n: allreduce_time(one_d, n, B, T_R))


def lower_bound_2d(M: int, N: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 7.2: a 2D Reduce takes at least ``max(B, B/8 + M + N - 1) + 2 T_R + 1``.

    Contention at least ``B`` (the root receives every entry), energy at
    least ``P B`` over at most ``8 P`` links, distance at least
    ``M + N - 1`` and depth at least 1, as the paper states them.

    Notes
    -----
    The bottom-right PE is ``M + N - 2`` hops from the root, one less than
    the lemma's distance. With ``M, N >= 2`` every 2D Reduce of this module
    stays above the bound anyway (each axis costs at least ``2 T_R + 1``);
    on a single row or column it can exceed them at small ``B`` (``1 x 2``,
    ``B = 1``: bound 7.125, Chain 7 cycles).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.lower_bound_2d(4, 4, 64)
    69.0
    """
    M, N, B, T_R = _grid(M, N, B, T_R)
    return max(B, B / 8 + M + N - 1) + 2 * T_R + 1


# -- heatmaps ------------------------------------------------------------------------
def _values(values: Any, name: str, lo: int, hi: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of integers")
    return np.asarray(
        [as_int(v, f"{name}[{i}]", lo, hi) for i, v in enumerate(arr.tolist())],
        dtype=np.int64,
    )


def _axes(Ps: np.ndarray, Bs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Ps`` as a column and ``Bs`` as a row, as floats (to broadcast a grid)."""
    return Ps[:, None].astype(np.float64), Bs[None, :].astype(np.float64)


def _reduce_1d_grid(
    Ps: np.ndarray, Bs: np.ndarray, T_R: float
) -> dict[str, np.ndarray]:
    """Reduce cycles of every pattern (root 0) as ``len(Ps) x len(Bs)`` arrays."""
    P, B = _axes(Ps, Bs)
    out = {
        "star": B * (P - 1) + 2 * T_R + 1,
        "chain": B + (2 * T_R + 2) * (P - 1),
    }
    for name in ("tree", "two_phase"):
        m = [tree_metrics(_TREES[name](int(p))) for p in Ps]
        E, L, D, C, N = (
            np.asarray([getattr(x, k) for x in m], dtype=np.float64)[:, None]
            for k in ("energy", "distance", "depth", "contention", "links")
        )
        out[name] = np.maximum(B * C, B * E / N + L) + (2 * T_R + 1) * D
    pmax = int(Ps.max())
    auto = np.empty((Ps.size, Bs.size))
    for j, b in enumerate(Bs.tolist()):
        auto[:, j] = autogen_cycles(pmax, b, T_R)[Ps - 1]
    out["autogen"] = auto
    return out


def _allreduce_1d_grid(
    Ps: np.ndarray, Bs: np.ndarray, T_R: float
) -> dict[str, np.ndarray]:
    P, B = _axes(Ps, Bs)
    bcast = B + P + 2 * T_R
    red = _reduce_1d_grid(Ps, Bs, T_R)
    out = {f"{p}+bcast": red[p] + bcast for p in PATTERNS}
    out["ring"] = 2 * (P - 1) * B / P + 4 * P - 6 + 2 * (P - 1) * (2 * T_R + 1)
    return out


def _reduce_2d_grid(
    ns: np.ndarray, Bs: np.ndarray, T_R: float
) -> dict[str, np.ndarray]:
    n, B = _axes(ns, Bs)
    red = _reduce_1d_grid(ns, Bs, T_R)
    out = {f"xy_{p}": red[p] + red[p] for p in PATTERNS}
    out["snake"] = B + (2 * T_R + 2) * (n * n - 1)
    return out


def _allreduce_2d_grid(
    ns: np.ndarray, Bs: np.ndarray, T_R: float
) -> dict[str, np.ndarray]:
    n, B = _axes(ns, Bs)
    one = _allreduce_1d_grid(ns, Bs, T_R)
    out = {f"xy_{p}": one[f"{p}+bcast"] + one[f"{p}+bcast"] for p in PATTERNS}
    out["xy_ring"] = one["ring"] + one["ring"]
    bcast2d = B + n + n - 2 + 2 * T_R + 1
    for name, value in _reduce_2d_grid(ns, Bs, T_R).items():
        out[f"{name}+bcast2d"] = value + bcast2d
    return out


def speedup_heatmap(
    kind: str, Ps: Any, Bs: Any, T_R: float = T_R_DEFAULT
) -> dict[str, np.ndarray]:
    """Predicted cycles and speedups of every algorithm over a ``Ps x Bs`` grid.

    Parameters
    ----------
    kind : {"1d_allreduce", "2d_allreduce", "1d_reduce", "2d_reduce"}
        ``1d_allreduce`` is Figure 8: the algorithms of
        :data:`ALLREDUCE_ALGORITHMS` (root 0) over ``chain+bcast``, the
        vendor's. ``2d_allreduce`` is Figure 10: :data:`ALLREDUCE_2D_ALGORITHMS`
        on ``n x n`` grids over X-Y Chain AllReduce (``xy_chain``).
        ``1d_reduce`` (over ``chain``) and ``2d_reduce`` (over ``xy_chain``)
        are the same for the Reduce patterns.
    Ps : sequence of int
        1D: PE counts, each in ``[2, 65536]``. 2D: grid sides ``n``, each in
        ``[2, 2048]``.
    Bs : sequence of int
        Vector lengths in wavelets, each at least 1.
    T_R : float
        Ramp latency in cycles.

    Returns
    -------
    dict of ndarray
        ``Ps``, ``Bs`` (as given); ``algorithms`` (names, str);
        ``fixed`` (bool per algorithm: not Auto-Gen); ``baseline`` (0-d, the
        baseline's name); ``cycles`` and ``speedup`` (``algorithm x P x B``,
        speedup = baseline cycles / cycles); ``best`` (``P x B``, the index
        into ``algorithms`` of the fastest *fixed* algorithm, the first one
        on ties, as the paper's regions do not include Auto-Gen);
        ``best_speedup`` (``P x B``, its speedup).

    Notes
    -----
    Auto-Gen comes from one dynamic program per ``B`` for every row length up
    to ``max(Ps)`` (:func:`wafercoll.wafer.autogen_cycles`); Tree and
    Two-Phase from their tree metrics, once per ``P``. Every cell equals the
    scalar functions (:func:`allreduce_time` and so on) for the same inputs.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> h = wafer.speedup_heatmap("1d_reduce", [16, 64], [1, 256])
    >>> sorted(h)[:3]
    ['Bs', 'Ps', 'algorithms']
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a string, got {type(kind).__name__}")
    if kind not in HEATMAP_KINDS:
        raise ValueError(
            f"kind must be one of {', '.join(HEATMAP_KINDS)}; got {kind!r}"
        )
    t_r = as_ramp_latency(T_R)
    two_d = kind.startswith("2d")
    ps = _values(Ps, "Ps", 2, MAX_SIDE if two_d else MAX_DP_P)
    bs = _values(Bs, "Bs", 1, 1 << 40)
    grids = {
        "1d_allreduce": _allreduce_1d_grid,
        "2d_allreduce": _allreduce_2d_grid,
        "1d_reduce": _reduce_1d_grid,
        "2d_reduce": _reduce_2d_grid,
    }
    table = grids[kind](ps, bs, t_r)
    names = list(table)
    cycles = np.stack([table[a] for a in names])
    baseline = HEATMAP_KINDS[kind]
    speedup = cycles[names.index(baseline)] / cycles
    fixed = np.asarray(["autogen" not in a for a in names])
    masked = np.where(fixed[:, None, None], cycles, np.inf)
    best = np.argmin(masked, axis=0)
    best_speedup = np.take_along_axis(speedup, best[None], axis=0)[0]
    return {
        "Ps": ps,
        "Bs": bs,
        "algorithms": np.asarray(names),
        "fixed": fixed,
        "baseline": np.asarray(baseline),
        "cycles": cycles,
        "speedup": speedup,
        "best": best,
        "best_speedup": best_speedup,
    }
