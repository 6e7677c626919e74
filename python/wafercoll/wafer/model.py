"""The wafer-scale spatial cost model and the 1D closed forms.

Source: Luczynski, Gianinazzi et al., *Near-Optimal Wafer-Scale Reduce*,
HPDC 2024 (the paper), Sections 3 to 5. Units: cycles and wavelets (32-bit
words). A row of ``P`` PEs is numbered ``0 .. P-1`` from the left; the root
of a Reduce is PE 0, the leftmost.

Equation (1) of the paper estimates the cycles of a communication pattern
from its spatial metrics::

    T = max(C, E / N + L) + (2 T_R + 1) D

with energy ``E`` (wavelet-hops in all), distance ``L`` (largest number of
hops of a wavelet), depth ``D`` (longest chain of dependent operations),
contention ``C`` (most wavelets a PE sends or receives), ``N`` links used and
ramp latency ``T_R`` (2 cycles on the WSE-2, by the paper's inspection of the
cycle-accurate simulator).

A 1D Reduce to the leftmost PE in which every PE sends its partial sum once,
to a PE on its left, along non-crossing edges is a *pre-order tree*: a
parent array with ``parent[0] == -1`` and ``parent[v] < v``, in which every
subtree is a contiguous range of PEs. :func:`tree_metrics` derives its
metrics for a vector of one wavelet (energy and contention scale with ``B``)
and :func:`tree_cycles` evaluates equation (1) on them, with ``N = P - 1``
(all messages travel towards the root) and ``L = P - 1``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import as_int, as_real
from ..analysis import eq1_cycles

__all__ = [
    "TreeMetrics",
    "binary_tree",
    "broadcast_time",
    "chain_time",
    "chain_tree",
    "eq1_cycles",
    "message_time",
    "star_lemma_time",
    "star_time",
    "star_tree",
    "switch_contention",
    "switch_contention_many",
    "tree_cycles",
    "tree_lemma_time",
    "tree_metrics",
    "tree_time",
    "two_phase_group_size",
    "two_phase_lemma_time",
    "two_phase_time",
    "two_phase_tree",
]

#: Ramp latency of the WSE-2 in cycles (the paper, Section 2.2: found by
#: inspection of the cycle-accurate simulator; Tramm et al. report about 7).
T_R_DEFAULT = 2
#: Largest row length accepted by the closed forms and tree builders.
MAX_P = 1 << 22
#: Largest ramp latency accepted (cycles): beyond it, double sums lose the unit
#: terms of equation (1) (the compiled DPs' kMaxRampLatency).
MAX_T_R = 1e9


def as_ramp_latency(T_R: Any) -> float:
    """``T_R`` checked: a real number in ``[0, MAX_T_R]`` cycles."""
    return as_real(T_R, "T_R", 0.0, maximum=MAX_T_R)


def _check(P: Any, B: Any, T_R: Any) -> tuple[int, int, float]:
    return (
        as_int(P, "P", 1, MAX_P),
        as_int(B, "B", 1),
        as_ramp_latency(T_R),
    )


# -- closed forms, as the paper states them -----------------------------------
def message_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Section 4.1: a message of B wavelets across P PEs, ``B + P + 2 T_R``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.message_time(16, 64)
    84.0
    """
    P, B, T_R = _check(P, B, T_R)
    return B + P + 2 * T_R


def broadcast_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 4.1: flooding broadcast with router multicast, ``B + P + 2 T_R``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.broadcast_time(16, 64)
    84.0
    """
    return message_time(P, B, T_R)


def star_lemma_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 5.1 (the model's bound): ``max(B(P-1), P B / 2 + P - 1) + 2 T_R + 1``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.star_lemma_time(16, 64)
    965.0
    """
    P, B, T_R = _check(P, B, T_R)
    return max(B * (P - 1), P * B / 2 + P - 1) + 2 * T_R + 1


def star_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Refined Star (Section 5.1, pipelined): ``B (P - 1) + 2 T_R + 1``.

    The paper argues that the wavelets reach the root as a perfect pipeline,
    so the contention at the root alone sets the pace. At ``B = 1`` this is
    ``P + 2 T_R``, below the distance-and-energy term of equation (1).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.star_time(16, 64)
    965.0
    """
    P, B, T_R = _check(P, B, T_R)
    return B * (P - 1) + 2 * T_R + 1


def chain_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 5.2: ``B + (2 T_R + 2)(P - 1)``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.chain_time(16, 64)
    154.0
    """
    P, B, T_R = _check(P, B, T_R)
    return B + (2 * T_R + 2) * (P - 1)


def tree_lemma_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 5.3 for P a power of two.

    ``max(B log2 P, B P log2 P / (2 (P - 1)) + P - 1) + (2 T_R + 1) log2 P``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.tree_lemma_time(16, 64)
    276.0
    """
    P, B, T_R = _check(P, B, T_R)
    if P & (P - 1):
        raise ValueError(f"P must be a power of two for Lemma 5.3, got {P}")
    if P == 1:
        return 0.0
    lg = P.bit_length() - 1
    return max(B * lg, B * P * lg / (2 * (P - 1)) + P - 1) + (2 * T_R + 1) * lg


def tree_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Tree Reduce for any P: equation (1) on :func:`binary_tree` (Lemma 5.3 at 2^k).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.tree_time(16, 64)
    276.0
    """
    P, B, T_R = _check(P, B, T_R)
    return tree_cycles(binary_tree(P), B, T_R)


def two_phase_group_size(P: int) -> int:
    """Group size of Two-Phase: ``floor(sqrt(P))`` (``sqrt(P)`` when P is a square).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.two_phase_group_size(16), wafer.two_phase_group_size(20)
    (4, 4)
    """
    P = as_int(P, "P", 1, MAX_P)
    return max(1, math.isqrt(P))


def two_phase_lemma_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 5.4 for ``P = S^2``.

    ``max(2B, 2B - 2B / sqrt(P) + P) + (2 sqrt(P) - 2)(2 T_R + 1)``: the
    paper bounds the links by ``P`` and the distance by ``P``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.two_phase_lemma_time(16, 64)
    158.0
    """
    P, B, T_R = _check(P, B, T_R)
    s = math.isqrt(P)
    if s * s != P:
        raise ValueError(f"P must be a perfect square for Lemma 5.4, got {P}")
    return max(2 * B, 2 * B - 2 * B / s + P) + (2 * s - 2) * (2 * T_R + 1)


def two_phase_time(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Two-Phase for any P: equation (1) on :func:`two_phase_tree`.

    Uses the exact metrics of the tree with ``N = L = P - 1``. For ``P = S^2``
    the metrics are those of Lemma 5.4's proof, but the lemma's statement
    takes ``N = L = P``. With ``E = 2 B (P - sqrt P)`` the flow term
    ``E / N + L`` is then smaller by ``2 B / (P + sqrt P) - 1``, so for
    ``B > (P + sqrt P) / 2`` the lemma's value lies slightly *below* equation
    (1) on the same tree (when the flow term is the maximum).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.two_phase_time(16, 64)
    158.0
    """
    P, B, T_R = _check(P, B, T_R)
    return tree_cycles(two_phase_tree(P), B, T_R)


# -- reduction trees ---------------------------------------------------------
def star_tree(P: int) -> np.ndarray:
    """Every PE sends to the root.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.star_tree(5).tolist()
    [-1, 0, 0, 0, 0]
    """
    P = as_int(P, "P", 1, MAX_P)
    parent = np.zeros(P, dtype=np.int64)
    parent[0] = -1
    return parent


def chain_tree(P: int) -> np.ndarray:
    """Every PE sends to its left neighbour.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.chain_tree(5).tolist()
    [-1, 0, 1, 2, 3]
    """
    P = as_int(P, "P", 1, MAX_P)
    return np.arange(-1, P - 1, dtype=np.int64)


def binary_tree(P: int) -> np.ndarray:
    """Tree Reduce: in round r, active PEs at odd multiples of 2^(r-1) send left.

    This is Section 5.3's rule ("every second active PE sends ... to the
    previous active PE") for any P: PE ``v > 0`` sends to ``v - 2^t``, where
    ``2^t`` is the lowest set bit of ``v``, in round ``t + 1``; there are
    ``ceil(log2 P)`` rounds. For P not a power of two these are the rounds
    of the next power of two with the PEs beyond ``P - 1`` absent.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.binary_tree(8).tolist()
    [-1, 0, 0, 2, 0, 4, 4, 6]
    """
    P = as_int(P, "P", 1, MAX_P)
    v = np.arange(P, dtype=np.int64)
    parent = v - (v & -v)
    parent[0] = -1
    return parent


def two_phase_tree(P: int, S: int | None = None) -> np.ndarray:
    """Two-Phase: chains in groups of S from the far end, then a chain of leaders.

    Groups are ``[P - S, P - 1]``, ``[P - 2S, P - S - 1]``, ... and a first
    group that holds PE 0 and the ``P mod S`` (or S) PEs left over. Inside a
    group every PE sends to its left neighbour; each group's leftmost PE (its
    leader) then sends to the next leader to the left, PE 0 last.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.two_phase_tree(9).tolist()
    [-1, 0, 1, 0, 3, 4, 3, 6, 7]
    """
    P = as_int(P, "P", 1, MAX_P)
    S = two_phase_group_size(P) if S is None else as_int(S, "S", 1, P)
    parent = np.arange(-1, P - 1, dtype=np.int64)  # chains everywhere ...
    leaders = np.arange(P - S, 0, -S, dtype=np.int64)  # leftmost PEs of full groups
    first = P - S * len(leaders)  # size of PE 0's group, in [1, S]
    # ... except the leaders: each sends to the next leader on its left, the
    # leftmost one to PE 0.
    parent[leaders] = np.where(leaders - S >= first, leaders - S, 0)
    return parent


# -- metrics and equation (1) on trees ------------------------------------------------
@dataclass(frozen=True)
class TreeMetrics:
    """Spatial metrics of a 1D reduction tree for B = 1 (E and C scale with B).

    Attributes
    ----------
    energy : int
        Wavelet-hops for one wavelet per PE: the sum of edge lengths.
    distance : int
        ``P - 1``: the wavelet of the last PE travels to the root.
    depth : int
        Height of the tree (edges on the longest root path).
    contention : int
        Messages of B wavelets received one after another on the critical
        sequence (see :func:`tree_metrics`); at least 1 when P > 1.
    links : int
        ``P - 1`` links towards the root.
    """

    energy: int
    distance: int
    depth: int
    contention: int
    links: int

    def cycles(self, B: int, T_R: float = T_R_DEFAULT) -> float:
        """Equation (1) for a vector of B wavelets."""
        b = as_int(B, "B", 1)
        return eq1_cycles(
            b * self.energy,
            self.distance,
            self.depth,
            b * self.contention,
            self.links,
            T_R,
        )


def _check_tree(parent: Any) -> np.ndarray:
    p = np.asarray(parent)
    if p.ndim != 1 or p.size == 0 or not np.issubdtype(p.dtype, np.integer):
        raise TypeError("parent must be a non-empty 1-D integer array")
    p = p.astype(np.int64)
    if p[0] != -1:
        raise ValueError(f"parent[0] must be -1 (PE 0 is the root), got {p[0]}")
    v = np.arange(p.size)
    bad = np.flatnonzero((p[1:] < 0) | (p[1:] >= v[1:]))
    if bad.size:
        i = int(bad[0]) + 1
        raise ValueError(f"parent[{i}] = {p[i]} must be in [0, {i}) (send to the left)")
    return p


def contention_depth(p: np.ndarray, root: int, order: Iterable[int]) -> tuple[int, int]:
    """Contention and depth of a rooted tree whose PEs take their children in order.

    ``p`` is the int64 parent array (``p[root] == -1``); ``order`` lists every
    other PE, children before their parents and each PE's children in
    reverse receive order (the last received first). The contention is
    ``max(1, C(root))`` with ``C(v) = max(m, max_j C(child_j) + m - j)`` for
    the ``m`` children of ``v`` (see :func:`tree_metrics`); the depth is the
    height of the tree.
    """
    n = p.size
    par = p.tolist()
    order = list(order)
    need = [0] * n
    seen = [0] * n  # children of q after the current one in receive order
    for v in order:
        nv = need[v] if need[v] > seen[v] else seen[v]
        q = par[v]
        if nv + seen[q] > need[q]:
            need[q] = nv + seen[q]
        seen[q] += 1
    contention = max(1, need[root], seen[root])
    depth = [0] * n
    for v in reversed(order):  # parents before their children
        depth[v] = depth[par[v]] + 1
    return contention, max(depth)


def tree_metrics(parent: Any) -> TreeMetrics:
    """E, L, D, C, N of a reduction tree towards PE 0 (for B = 1).

    Contention counts the messages of B wavelets that must be received one
    after another. A PE receives its ``m`` children's streams in order and
    forwards the last one as it arrives, so the stream of its ``j``-th child
    can only start once that child's own receiving is done, and ``m - j``
    streams follow it::

        C(v) = max(m, max_j C(child_j) + m - j)

    This is the contention of the Auto-Gen recurrence of Section 5.5, which
    gives the part before the root's last child the bound ``C - 1``. It is
    at least the most children of any PE, and equals it for Star
    (``P - 1``), Chain (1), Tree (``ceil(log2 P)``) and Two-Phase (2), the
    values of Lemmas 5.1 to 5.4. It exceeds it when an early child has
    children of its own: in ``[-1, 0, 1, 1, 0]`` PE 0 and PE 1 each receive
    two messages, but PE 0 can only take PE 4's after PE 1 has taken both
    of its own, so C = 3.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.tree_metrics(wafer.chain_tree(4))
    TreeMetrics(energy=3, distance=3, depth=3, contention=1, links=3)
    """
    p = _check_tree(parent)
    n = p.size
    if n == 1:
        return TreeMetrics(0, 0, 0, 0, 0)
    energy = int(np.sum(np.arange(1, n) - p[1:]))
    # Right to left: a PE's children in reverse receive order.
    contention, depth = contention_depth(p, 0, range(n - 1, 0, -1))
    return TreeMetrics(energy, n - 1, depth, contention, n - 1)


def tree_cycles(
    parent: Any,
    B: int,
    T_R: float = T_R_DEFAULT,
    switch_overhead: float = 0.0,
    received_before: bool = False,
) -> float:
    """Equation (1) on a reduction tree for a vector of B wavelets.

    With ``switch_overhead`` (cycles), the contention term ``B C`` becomes
    :func:`switch_contention`: every stream a PE takes after another one
    costs that much more (see there; 0 gives equation (1) exactly).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.tree_cycles(wafer.chain_tree(16), 64)
    154.0
    """
    m = tree_metrics(parent)
    if switch_overhead == 0 and not received_before:
        return m.cycles(B, T_R)
    b = as_int(B, "B", 1)
    w = switch_contention(parent, b, switch_overhead, received_before)
    return eq1_cycles(b * m.energy, m.distance, m.depth, w, m.links, T_R)


def switch_contention(
    parent: Any, B: int, switch_overhead: float = 0.0, received_before: bool = False
) -> float:
    """Cycles of the receives in sequence, with a switch overhead per stream.

    The contention recurrence of :func:`tree_metrics` weighted in cycles: a
    PE ``v`` with children ``c_1 .. c_m`` (in receive order) takes their
    streams of ``B`` wavelets one after another and needs ``O =
    switch_overhead`` cycles to switch to each stream after the first (the
    paper's Section 8.5 explains Star's measured excess by "the overhead
    associated when a PE starts receiving from another PE"; the first stream
    is configured before the start)::

        W(v) = max(m B + (m - 1 + r) O,  max_j W(c_j) + (m - j)(B + O))

    with ``r = 1`` when ``received_before`` (every PE already took a stream
    earlier in the collective, as the column phase of an X-Y Reduce does
    after the rows), else 0. A stream that is still on its way when the
    switch ends waits for nothing extra, which is why the overhead of the
    ``j``-th stream is not on the path through ``c_j``. At ``O = 0`` and
    ``r = 0`` this is ``B`` times the contention of :func:`tree_metrics`.

    Parameters
    ----------
    parent : array of int
        The tree (see :func:`tree_metrics`).
    B : int
        Wavelets per message.
    switch_overhead : float
        ``O`` in cycles, at least 0.
    received_before : bool
        Whether every PE has taken a stream before this tree starts.

    Returns
    -------
    float
        ``W`` of the root, at least ``B`` when the tree has an edge.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.switch_contention(wafer.star_tree(4), 8, switch_overhead=2)
    28.0
    """
    p = _check_tree(parent)
    b = as_int(B, "B", 1)
    o = as_real(switch_overhead, "switch_overhead", 0.0, maximum=MAX_T_R)
    if p.size == 1:
        return 0.0
    return checked_switch_contention(p, b, o, 1.0 if received_before else 0.0)


def checked_switch_contention(p: np.ndarray, b: int, o: Any, r: float) -> Any:
    """:func:`switch_contention` on a checked tree of at least two PEs.

    ``o`` is a float (plain Python arithmetic, the fast path for one value)
    or an array of overheads (the same recurrence on vectors).
    """
    maximum = np.maximum if isinstance(o, np.ndarray) else max
    n = p.size
    par = p.tolist()
    kids = np.bincount(p[1:], minlength=n).tolist()
    need = [0.0 * o] * n  # never changed in place: entries are replaced
    seen = [0] * n  # children of q after the current one in receive order
    bo = b + o
    for v in range(n - 1, 0, -1):  # children before parents, last received first
        m = kids[v]
        w = maximum(need[v], m * b + (m - 1 + r) * o) if m else need[v]
        q = par[v]
        need[q] = maximum(need[q], w + seen[q] * bo)
        seen[q] += 1
    m = kids[0]
    return maximum(need[0], m * b + (m - 1 + r) * o)


def switch_contention_many(
    parent: Any, B: int, overheads: Any, received_before: bool = False
) -> np.ndarray:
    """:func:`switch_contention` for many overheads at once (one per entry).

    One pass over the tree with a vector per PE: a scan over a range of
    ``O`` costs about as much as a handful of scalar calls.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.switch_contention_many(wafer.star_tree(4), 8, [0, 2]).tolist()
    [24.0, 28.0]
    """
    p = _check_tree(parent)
    b = as_int(B, "B", 1)
    o = np.asarray(overheads, dtype=np.float64).ravel()
    if o.size == 0 or not np.all(np.isfinite(o)) or np.any(o < 0):
        raise ValueError("overheads must be a non-empty array of finite numbers >= 0")
    if p.size == 1:
        return np.zeros_like(o)
    return checked_switch_contention(p, b, o, 1.0 if received_before else 0.0)
