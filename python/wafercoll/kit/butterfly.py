"""Recursive doubling and halving over any peer function, with folding.

Butterfly algorithms pair every rank with a *peer* at each step: recursive
doubling with ``r XOR 2^s``, Swing with ``r +- rho(s)`` (see
:mod:`wafercoll.wormhole.swing`), Bine with its own rule. A step is one
:meth:`~wafercoll.kit.Program.step` of pairwise exchanges; what is sent
decides the algorithm:

* the whole vector, added by the receiver (latency-optimal allreduce,
  ``log2 p`` steps): :func:`exchange`;
* half of the range both partners still share, the halves kept swapping
  (recursive halving reduce-scatter), then the mirrored ranges copied back
  (recursive doubling allgather): :func:`halving_doubling`.

Rank counts that are not a power of two are *folded* onto
``q = 2^floor(log2 p)`` virtual ranks (:class:`Fold`): the extra ranks first
add their vector into a partner, wait, and get the result back at the end.

Every function takes ``ranks=``: ``None`` for ranks ``0 .. p - 1``, or a
2-D array whose every row lists the real ranks of one group of ``p``
(position ``i`` of the butterfly is ``ranks[:, i]``), so that many groups
(the processes of every node, the masters of every row) run the same
butterfly in the same steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Fold",
    "at",
    "exchange",
    "fold_in",
    "fold_out",
    "halving_doubling",
    "recursive_doubling_gather",
    "recursive_halving",
    "recursive_doubling",
    "xor_peer",
]


@dataclass(frozen=True)
class Fold:
    """``p`` ranks folded onto ``q = 2^floor(log2 p)`` virtual ranks.

    ``style="pairs"`` (MPICH's recursive doubling and Rabenseifner): the first
    ``2 (p - q)`` ranks pair up, rank ``2v`` folding into ``2v + 1``; virtual
    rank ``v`` is real rank ``2v + 1`` for ``v < p - q``, else ``v + p - q``.
    ``style="upper"``: ranks ``q .. p - 1`` fold into ``r - q``; virtual
    rank ``v`` is rank ``v``.
    """

    p: int
    style: str = "pairs"

    @property
    def q(self) -> int:
        """The power of two the ranks fold onto."""
        return 1 << (self.p.bit_length() - 1)

    @property
    def extra(self) -> int:
        """How many ranks fold."""
        return self.p - self.q

    def real(self, v: np.ndarray) -> np.ndarray:
        """Real rank of virtual ranks ``v``."""
        v = np.asarray(v, dtype=np.int64)
        if self.style == "upper" or self.extra == 0:
            return v
        return np.where(v < self.extra, 2 * v + 1, v + self.extra)

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(folded, keeper)``: each folded rank and the rank it folds into."""
        e = np.arange(self.extra, dtype=np.int64)
        if self.style == "upper":
            return self.q + e, e
        return 2 * e, 2 * e + 1


def at(ranks: Any, positions: np.ndarray) -> np.ndarray:
    """Real ranks of butterfly ``positions``, every group's in turn (row-major)."""
    if ranks is None:
        return np.asarray(positions, dtype=np.int64)
    return np.asarray(ranks, dtype=np.int64)[:, positions].ravel()


def fold_in(prog: Any, fold: Fold, blocks: Any, *, ranks: Any = None) -> None:
    """The folded ranks add ``blocks`` into their keepers (one step).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(6, [48], "allreduce", rule="sendrecv")
    >>> fold = kit.Fold(6)
    >>> kit.fold_in(prog, fold, 0)
    >>> kit.exchange(prog, fold, kit.xor_peer, 2, 0)
    >>> kit.fold_out(prog, fold, 0)
    >>> wc.verify(prog.schedule()).steps
    4
    """
    a, b = fold.pairs()
    if a.size:
        prog.step(at(ranks, a), at(ranks, b), blocks, "reduce")


def fold_out(prog: Any, fold: Fold, blocks: Any, *, ranks: Any = None) -> None:
    """The keepers copy ``blocks`` back to the folded ranks (one step).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(6, [48], "allreduce", rule="sendrecv")
    >>> fold = kit.Fold(6)
    >>> kit.fold_in(prog, fold, 0)
    >>> kit.exchange(prog, fold, kit.xor_peer, 2, 0)
    >>> kit.fold_out(prog, fold, 0)
    >>> wc.verify(prog.schedule()).steps
    4
    """
    a, b = fold.pairs()
    if a.size:
        prog.step(at(ranks, b), at(ranks, a), blocks, "copy")


def exchange(
    prog: Any,
    fold: Fold,
    peer: Callable[[np.ndarray, int], np.ndarray],
    steps: int,
    blocks: Any,
    op: str = "reduce",
    *,
    ranks: Any = None,
) -> None:
    """``steps`` steps: virtual rank ``v`` sends ``blocks`` to ``peer(v, s)``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(4, [32], "allreduce", rule="sendrecv")
    >>> fold = kit.Fold(4)
    >>> kit.exchange(prog, fold, kit.xor_peer, 2, 0)
    >>> wc.verify(prog.schedule()).steps
    2
    """
    v = np.arange(fold.q, dtype=np.int64)
    src = at(ranks, fold.real(v))  # the same every step
    for s in range(steps):
        prog.step(src, at(ranks, fold.real(peer(v, s))), blocks, op)


def xor_peer(v: np.ndarray, s: int) -> np.ndarray:
    """Recursive doubling's partner at step ``s``: ``v XOR 2^s``.

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll import kit
    >>> kit.xor_peer(np.arange(4), 1).tolist()
    [2, 3, 0, 1]
    """
    return v ^ (1 << s)


#: From this many transfers :func:`recursive_doubling` reserves its
#: transfers at once (``Program.reserve``): their 4-byte arrays then pass
#: 32 MiB, beyond which glibc maps every block afresh, so each doubling of
#: a growing array is a copy into fresh memory. Below it the doublings
#: reuse heap memory the build's own temporaries (arrays of a step's pairs)
#: have freed, and reserving was slower. Measured, alternated fresh
#: processes: 2^20 ranks (21 M transfers) built in 2.09-2.32 s reserved
#: against 2.40-2.84 s, peak 0.64 GB against 0.83 GB; 2^18 ranks (4.7 M) in
#: 0.59-0.65 s against 0.51-0.54 s.
_RESERVE_FROM = 1 << 23


def recursive_doubling(
    prog: Any, p: int, blocks: Any, *, style: str = "pairs", ranks: Any = None
) -> None:
    """Latency-optimal allreduce of ``blocks`` among ``p`` positions, folded.

    Fold in, ``log2 q`` exchanges with :func:`xor_peer` (the receiver adds),
    fold out. Nothing happens for ``p = 1``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(6, [48], "allreduce", rule="sendrecv")
    >>> kit.recursive_doubling(prog, 6, 0)
    >>> wc.verify(prog.schedule()).steps
    4
    """
    if p <= 1:
        return
    fold = Fold(p, style)
    # one transfer per pair and step, in every group: the folds' 2 (p - q)
    # and the q log2 q of the exchange (see _RESERVE_FROM)
    steps = fold.q.bit_length() - 1
    groups = 1 if ranks is None else int(np.asarray(ranks).shape[0])
    count = groups * (2 * fold.extra + fold.q * steps)
    if count >= _RESERVE_FROM:
        prog.reserve(count)
    fold_in(prog, fold, blocks, ranks=ranks)
    exchange(prog, fold, xor_peer, steps, blocks, ranks=ranks)
    fold_out(prog, fold, blocks, ranks=ranks)


def _masks(q: int, top_down: bool) -> list[int]:
    """The butterfly's masks ``1, 2, 4, ... q / 2``, or the reverse."""
    out = [1 << k for k in range(q.bit_length() - 1)]
    return out[::-1] if top_down else out


def _ranges(first: Any, lo: np.ndarray, hi: np.ndarray) -> tuple[Any, Any]:
    """Virtual block ranges as real ones (``first``: first real block of each)."""
    return (lo, hi) if first is None else (first[lo], first[hi])


def recursive_halving(
    prog: Any, fold: Fold, *, first: Any = None, top_down: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Recursive-halving reduce-scatter over ``fold.q`` virtual blocks.

    At each mask, partners ``v`` and ``v ^ mask`` split the range they share;
    the lower one keeps the lower half and sends the upper half (the upper
    one the reverse), which the receiver adds. Masks run ``1, 2, 4, ...``
    (virtual rank ``v`` ends with block ``bitreverse(v)``) or, with
    ``top_down``, from ``q / 2`` down (rank ``v`` ends with block ``v``).
    ``first`` maps virtual block ``b`` to its first real block (``q + 1``
    entries; default: the identity). Returns each virtual rank's final
    range ``[lo, hi)``, in virtual blocks.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(4, [16] * 4, "reduce_scatter", rule="sendrecv")
    >>> lo, hi = kit.recursive_halving(prog, kit.Fold(4), top_down=True)
    >>> lo.tolist(), wc.verify(prog.schedule()).steps
    ([0, 1, 2, 3], 2)
    """
    q = fold.q
    v = np.arange(q, dtype=np.int64)
    lo = np.zeros(q, dtype=np.int64)
    hi = np.full(q, q, dtype=np.int64)
    for mask in _masks(q, top_down):
        mid = lo + (hi - lo) // 2
        lower = (v & mask) == 0
        # send the half the partner keeps
        s_lo = np.where(lower, mid, lo)
        s_hi = np.where(lower, hi, mid)
        prog.step(
            fold.real(v), fold.real(v ^ mask), _ranges(first, s_lo, s_hi), "reduce"
        )
        lo, hi = np.where(lower, lo, mid), np.where(lower, mid, hi)
    return lo, hi


def recursive_doubling_gather(
    prog: Any,
    fold: Fold,
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    first: Any = None,
    top_down: bool = True,
) -> None:
    """Recursive-doubling allgather from each virtual rank's range ``[lo, hi)``.

    At each mask, partners ``v`` and ``v ^ mask`` copy each other their whole
    range, so both end with the union. Masks run from ``q / 2`` down
    (``top_down``, the mirror of :func:`recursive_halving`'s default) or
    ``1, 2, 4, ...``; ``first`` as for :func:`recursive_halving`.

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(4, [16] * 4, "allgather", rule="sendrecv")
    >>> v = np.arange(4)
    >>> kit.recursive_doubling_gather(prog, kit.Fold(4), v, v + 1, top_down=False)
    >>> wc.verify(prog.schedule()).steps
    2
    """
    v = np.arange(fold.q, dtype=np.int64)
    for mask in _masks(fold.q, top_down):
        u = v ^ mask
        prog.step(fold.real(v), fold.real(u), _ranges(first, lo, hi), "copy")
        lo, hi = np.minimum(lo, lo[u]), np.maximum(hi, hi[u])


def halving_doubling(prog: Any, fold: Fold) -> None:
    """Recursive-halving reduce-scatter, then recursive-doubling allgather.

    :func:`recursive_halving` over ``fold.q`` blocks (masks ``1, 2, 4,
    ...``), then :func:`recursive_doubling_gather` running the masks
    backwards, so every rank ends with the whole reduced vector.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> fold = kit.Fold(4)
    >>> prog = kit.Program(4, kit.split_bytes(64, fold.q), "allreduce", rule="sendrecv")
    >>> kit.halving_doubling(prog, fold)
    >>> wc.verify(prog.schedule()).steps
    4
    """
    lo, hi = recursive_halving(prog, fold)
    recursive_doubling_gather(prog, fold, lo, hi)
