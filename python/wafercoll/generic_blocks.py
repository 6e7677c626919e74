"""Reduce-scatter and allgather for any number of ranks, standard ownership.

Rank ``r`` owns block ``r`` of ``p`` near-equal blocks
(``kit.split_bytes(size_bytes, p)``): a reduce-scatter leaves the sum of
block ``r`` at rank ``r``, an allgather gives every rank block ``r`` of rank
``r``. Written with :mod:`wafercoll.kit` under the ``"sendrecv"`` rule, as
the other generic builders (:mod:`wafercoll.generic`); the algorithms are
those of Thakur, Rabenseifner and Gropp, "Optimization of Collective
Communication Operations in MPICH" (IJHPCA 2005), and Bruck et al.,
"Efficient algorithms for all-to-all communications in multiport
message-passing systems" (IEEE TPDS 8(11), 1997):

``generic_ring_reduce_scatter``, ``generic_ring_allgather``
    ``p - 1`` steps around ranks ``0 .. p - 1``: at step ``s`` rank ``r``
    sends block ``r - s - 1`` (reduce-scatter, the receiver adds) or block
    ``r - s`` (allgather) to ``r + 1``, all modulo ``p``.
``generic_recursive_halving_reduce_scatter``
    Distance halving (masks ``q / 2, q / 4, ..., 1``): partners split the
    range they share, each sending the half the other keeps, so virtual
    rank ``v`` ends with virtual block ``v``. Other rank counts fold as
    MPICH does (:class:`wafercoll.kit.Fold`, ``"pairs"``): rank ``2 i`` adds
    its whole vector into ``2 i + 1``, virtual rank ``i < p - q`` is rank
    ``2 i + 1`` and owns the two blocks ``2 i, 2 i + 1`` (the others one),
    and at the end rank ``2 i + 1`` copies block ``2 i`` back to ``2 i``.
``generic_recursive_doubling_allgather``
    The mirror image: rank ``2 i`` first copies its block to ``2 i + 1``,
    then virtual ranks exchange everything they hold with ``v XOR 2^s``
    (masks ``1, 2, ...``), and rank ``2 i + 1`` copies the whole vector but
    block ``2 i`` to ``2 i``.
``generic_bruck_allgather``
    ``ceil(log2 p)`` rounds for any ``p``: at distance ``d = 1, 2, 4, ...``
    rank ``r`` sends the ``min(d, p - d)`` blocks ``r, r + 1, ...``
    (modulo ``p``) it holds to ``r - d``. A rank's buffer is indexed by
    block, so the local rotations of Bruck's algorithm (which keeps the
    received blocks in arrival order) are the identity here: block ``b``
    goes to slot ``b`` wherever it arrives.

Closed forms, in the Hockney model of :mod:`wafercoll.generic` (``alpha``,
``beta``, ``gamma`` of one hop, ``S = size_bytes``, contention-free, one
message at a time per rank and direction):

* ring reduce-scatter: ``(p - 1) alpha + (p - 1) / p S (beta + gamma)``;
* ring allgather: ``(p - 1) alpha + (p - 1) / p S beta`` (both exact on a
  ring of ``p``, one packet per message);
* recursive halving: ``log2 p alpha + (p - 1) / p S (beta + gamma)`` and
  recursive doubling: ``log2 p alpha + (p - 1) / p S beta`` for ``p = 2^k``;
  for other ``p`` the prediction runs the same per-step recurrence over the
  fold's steps (fold ``alpha + S (beta + gamma)``, resp. one block, the
  halving or doubling steps on the uneven virtual blocks, the copy back),
  ``O(p log p)`` work;
* Bruck: ``ceil(log2 p) alpha + (p - 1) / p S beta``.

All are exact on a fully connected topology (a link per ordered pair) when
``p`` divides ``S``, and ``None`` with ports.

Examples
--------
>>> import wafercoll as wc
>>> s = wc.build("generic_bruck_allgather", ranks=6, size_bytes=60)
>>> wc.verify(s).steps
3
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kit
from ._generic_common import LOG_MAX_RANKS, MPICH_SOURCE, RING_MAX_RANKS, hop_costs
from .algorithms import register_algorithm

__all__ = [
    "bruck_allgather",
    "cyclic_ranges",
    "recursive_doubling_allgather",
    "recursive_halving_reduce_scatter",
    "ring_allgather",
    "ring_reduce_scatter",
]

_BRUCK = (
    "Bruck, Ho, Kipnis, Upfal, Weathersby, Efficient algorithms for all-to-all "
    "communications in multiport message-passing systems, IEEE TPDS 8(11), 1997"
)


def cyclic_ranges(start: Any, count: Any, p: int) -> kit.Ranges:
    """Blocks ``start, start + 1, ..., start + count - 1`` modulo ``p``, per transfer.

    One half-open range per transfer, two where the run wraps past block
    ``p - 1`` (as :class:`wafercoll.kit.Ranges`, for :meth:`kit.Program.step`).

    Parameters
    ----------
    start : array_like of int
        First block of every transfer, in ``[0, p)``.
    count : int or array_like of int
        Number of blocks, in ``[1, p]``.
    p : int
        Number of blocks.

    Returns
    -------
    wafercoll.kit.Ranges

    Examples
    --------
    >>> from wafercoll.generic import cyclic_ranges
    >>> r = cyclic_ranges([1, 4], 3, 5)
    >>> r.lo.tolist(), r.hi.tolist(), r.offsets.tolist()
    ([1, 4, 0], [4, 5, 2], [0, 1, 3])
    """
    s = np.asarray(start, dtype=np.int64).ravel()
    c = np.broadcast_to(np.asarray(count, dtype=np.int64), s.shape)
    end = s + c
    wraps = end > p
    n = 1 + wraps.astype(np.int64)
    off = np.zeros(s.size + 1, dtype=np.int64)
    np.cumsum(n, out=off[1:])
    lo = np.empty(int(off[-1]), dtype=np.int64)
    hi = np.empty_like(lo)
    first = off[:-1]
    lo[first] = s
    hi[first] = np.minimum(end, p)
    second = first[wraps] + 1
    lo[second] = 0
    hi[second] = end[wraps] - p
    return kit.Ranges(lo, hi, off)


def _program(p: int, size_bytes: int, collective: str, name: str) -> kit.Program:
    return kit.Program(
        p, kit.split_bytes(size_bytes, p), collective, rule="sendrecv", name=name
    )


def _virtual_blocks(fold: kit.Fold) -> np.ndarray:
    """First real block of every virtual block ``0 .. q`` (``q``: the end, ``p``).

    Virtual rank ``v < p - q`` is rank ``2 v + 1`` and stands for blocks
    ``2 v, 2 v + 1``; the others for block ``v + p - q``.
    """
    v = np.arange(fold.q + 1, dtype=np.int64)
    return np.where(v < fold.extra, 2 * v, v + fold.extra)


def _ring_rs_steps(p: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(src, dst, block)`` of the ``p - 1`` steps of the ring reduce-scatter."""
    r = np.arange(p, dtype=np.int64)
    return [(r, (r + 1) % p, (r - s - 1) % p) for s in range(p - 1)]


def _ring_ag_steps(p: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(src, dst, block)`` of the ``p - 1`` steps of the ring allgather."""
    r = np.arange(p, dtype=np.int64)
    return [(r, (r + 1) % p, (r - s) % p) for s in range(p - 1)]


# -- closed forms ----------------------------------------------------------------


def _predict_ring(reduce: bool) -> Any:
    def predict(p: int, size: int, topology: Any, network: Any) -> float | None:
        h = hop_costs(topology, network)
        if h is None:
            return None
        a, b, g = h
        return (p - 1) * a + (p - 1) / p * size * (b + (g if reduce else 0.0))

    return predict


def _predict_butterfly(reduce: bool) -> Any:
    """The recurrence of recursive halving (``reduce``) or doubling, per step.

    ``t[v]`` is when virtual rank ``v``'s last send and receive are done; a
    step's exchange between ``v`` and ``u`` starts at ``max(t[v], t[u])``
    (the ``"sendrecv"`` rule) and takes ``alpha`` plus the larger of the two
    messages.
    """

    def predict(p: int, size: int, topology: Any, network: Any) -> float | None:
        h = hop_costs(topology, network)
        if h is None:
            return None
        a, b, g = h
        if p == 1:
            return 0.0
        cost = b + (g if reduce else 0.0)
        fold = kit.Fold(p)
        q, e = fold.q, fold.extra
        blocks = kit.split_bytes(size, p).astype(np.float64)
        cum = np.concatenate([[0.0], np.cumsum(blocks)])
        vb = cum[_virtual_blocks(fold)]  # bytes before virtual block v
        v = np.arange(q, dtype=np.int64)
        pair = blocks[0 : 2 * e : 2]  # the folded ranks' blocks
        t = np.zeros(q)
        t[:e] = a + (size * cost if reduce else pair * b)
        if reduce:
            lo, hi = np.zeros(q, np.int64), np.full(q, q, np.int64)
            mask = q // 2
            while mask:
                mid = (lo + hi) // 2
                lower = (v & mask) == 0
                sent = np.where(lower, vb[hi] - vb[mid], vb[mid] - vb[lo])
                u = v ^ mask
                t = np.maximum(t, t[u]) + a + np.maximum(sent, sent[u]) * cost
                lo, hi = np.where(lower, lo, mid), np.where(lower, mid, hi)
                mask //= 2
            back = t[:e] + a + pair * b
        else:
            lo, hi = v.copy(), v + 1
            mask = 1
            while mask < q:
                u = v ^ mask
                sent = vb[hi] - vb[lo]
                t = np.maximum(t, t[u]) + a + np.maximum(sent, sent[u]) * b
                lo, hi = np.minimum(lo, lo[u]), np.maximum(hi, hi[u])
                mask *= 2
            back = t[:e] + a + (size - pair) * b
        return float(max(t.max(), back.max() if e else 0.0))

    return predict


def _predict_bruck(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    return (p - 1).bit_length() * a + (p - 1) / p * size * b


# -- builders ----------------------------------------------------------------------


@register_algorithm(
    "generic_ring_reduce_scatter",
    "reduce_scatter",
    predict=_predict_ring(reduce=True),
    source=MPICH_SOURCE + "; ring",
    summary="unidirectional ring over ranks 0 .. p-1, p-1 steps of size/p; rank r "
    "ends with the sum of block r",
    max_ranks=RING_MAX_RANKS,
    label="Ring",
)
def ring_reduce_scatter(ranks: int, size_bytes: int, *, topology: Any = None) -> Any:
    """Ring reduce-scatter, rank ``r`` owning block ``r`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_reduce_scatter", ranks=5, size_bytes=40)
    >>> s.owners.tolist(), wc.verify(s).steps
    ([0, 1, 2, 3, 4], 4)
    """
    p = ranks
    prog = _program(p, size_bytes, "reduce_scatter", f"ring_reduce_scatter(p={p})")
    for src, dst, block in _ring_rs_steps(p):
        prog.step(src, dst, block, "reduce")
    return prog.schedule()


@register_algorithm(
    "generic_ring_allgather",
    "allgather",
    predict=_predict_ring(reduce=False),
    source=MPICH_SOURCE + "; ring",
    summary="unidirectional ring over ranks 0 .. p-1, p-1 steps of size/p",
    max_ranks=RING_MAX_RANKS,
    label="Ring",
)
def ring_allgather(ranks: int, size_bytes: int, *, topology: Any = None) -> Any:
    """Ring allgather, rank ``r`` owning block ``r`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allgather", ranks=5, size_bytes=40)
    >>> s.num_transfers, wc.verify(s).steps
    (20, 4)
    """
    p = ranks
    prog = _program(p, size_bytes, "allgather", f"ring_allgather(p={p})")
    for src, dst, block in _ring_ag_steps(p):
        prog.step(src, dst, block, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_recursive_halving_reduce_scatter",
    "reduce_scatter",
    predict=_predict_butterfly(reduce=True),
    source=MPICH_SOURCE + "; recursive halving",
    summary="distance-halving exchanges of half the shared range, log2 p steps; "
    "extra ranks folded in pairs",
    max_ranks=LOG_MAX_RANKS,
    label="Recursive halving",
)
def recursive_halving_reduce_scatter(
    ranks: int, size_bytes: int, *, topology: Any = None
) -> Any:
    """Recursive-halving reduce-scatter with MPICH's pairwise fold (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_recursive_halving_reduce_scatter", ranks=6, size_bytes=48)
    >>> s.owners.tolist(), wc.verify(s).steps
    ([0, 1, 2, 3, 4, 5], 4)
    """
    p = ranks
    prog = _program(p, size_bytes, "reduce_scatter", f"recursive_halving(p={p})")
    fold = kit.Fold(p)
    kit.fold_in(prog, fold, (0, p))
    # Masks from q / 2 down: virtual rank v ends with virtual block v.
    kit.recursive_halving(prog, fold, first=_virtual_blocks(fold), top_down=True)
    folded, keeper = fold.pairs()
    if folded.size:
        prog.step(keeper, folded, folded, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_recursive_doubling_allgather",
    "allgather",
    predict=_predict_butterfly(reduce=False),
    source=MPICH_SOURCE + "; recursive doubling",
    summary="exchanges of everything held with r XOR 2^s, log2 p steps; extra "
    "ranks folded in pairs",
    max_ranks=LOG_MAX_RANKS,
    label="Recursive doubling",
)
def recursive_doubling_allgather(
    ranks: int, size_bytes: int, *, topology: Any = None
) -> Any:
    """Recursive-doubling allgather with a pairwise fold (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_recursive_doubling_allgather", ranks=6, size_bytes=48)
    >>> wc.verify(s).steps
    4
    """
    p = ranks
    prog = _program(p, size_bytes, "allgather", f"recursive_doubling(p={p})")
    fold = kit.Fold(p)
    folded, keeper = fold.pairs()
    if folded.size:
        prog.step(folded, keeper, folded, "copy")
    v = np.arange(fold.q, dtype=np.int64)
    kit.recursive_doubling_gather(
        prog, fold, v, v + 1, first=_virtual_blocks(fold), top_down=False
    )
    if folded.size:
        # everything but the folded rank's own block: [0, 2i) and [2i + 1, p)
        lows = np.stack([np.zeros_like(folded), folded + 1], axis=1)
        highs = np.stack([folded, np.full_like(folded, p)], axis=1)
        keep = highs > lows
        off = np.zeros(folded.size + 1, dtype=np.int64)
        np.cumsum(keep.sum(axis=1), out=off[1:])
        prog.step(keeper, folded, kit.Ranges(lows[keep], highs[keep], off), "copy")
    return prog.schedule()


@register_algorithm(
    "generic_bruck_allgather",
    "allgather",
    predict=_predict_bruck,
    source=_BRUCK + "; " + MPICH_SOURCE + ", Bruck allgather",
    summary="ceil(log2 p) rounds for any p: at distance d, min(d, p-d) blocks to "
    "rank r - d",
    max_ranks=LOG_MAX_RANKS,
    label="Bruck",
)
def bruck_allgather(ranks: int, size_bytes: int, *, topology: Any = None) -> Any:
    """Bruck's allgather, ``ceil(log2 p)`` rounds for any ``p`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_bruck_allgather", ranks=5, size_bytes=40)
    >>> s.num_transfers, wc.verify(s).steps
    (15, 3)
    """
    p = ranks
    prog = _program(p, size_bytes, "allgather", f"bruck(p={p})")
    r = np.arange(p, dtype=np.int64)
    d = 1
    while d < p:
        prog.step(r, (r - d) % p, cyclic_ranges(r, min(d, p - d), p), "copy")
        d *= 2
    return prog.schedule()
