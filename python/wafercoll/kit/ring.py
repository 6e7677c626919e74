"""The ring allreduce over any order of ranks.

A ring over ``order`` (``K`` ranks, position ``i`` sends to position
``i + 1``, the last to the first) works on ``K`` blocks ``base .. base + K -
1``. Its reduce-scatter has ``K - 1`` steps: at step ``s`` position ``i``
sends block ``base + (i - s) mod K`` and the receiver adds it; after it
position ``i`` holds the sum of block ``base + (i + 1) mod K``, its *owner*
block. The allgather forwards, at step ``s``, block ``base + (i + 1 - s) mod
K`` (the one completed or received in the previous step) as a copy::

    order:  r0 -> r1 -> r2 -> r3 -> (r0)        K = 4, 2 (K - 1) = 6 steps
    step 0: r0 sends b0, r1 b1, r2 b2, r3 b3     (reduce)
    step 1: r0 sends b3, r1 b0, r2 b1, r3 b2     (reduce)
    ...

:func:`ring_steps` yields the steps as arrays, so that builders can
interleave several rings (two directions, two halves, rows and columns) in
the order their algorithm needs; :func:`ring_allreduce` emits one ring into a
:class:`~wafercoll.kit.Program`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RingStep", "ring_allreduce", "ring_owners", "ring_steps"]

_PHASES = ("allreduce", "reduce_scatter", "allgather")
#: Transfers per :meth:`~wafercoll.kit.Program.steps` call of
#: :func:`ring_allreduce` (bounds its temporary arrays to a few MB).
_BATCH = 1 << 16


@dataclass(frozen=True)
class RingStep:
    """One step of a ring: ``src[i]`` sends ``block[i]`` to ``dst[i]``.

    For several rings at once (a 2-D ``order``), ``group[i]`` is the row of
    ``order`` transfer ``i`` belongs to (rows one after another); ``block``
    counts from ``base`` in every ring.
    """

    src: np.ndarray
    dst: np.ndarray
    block: np.ndarray
    op: str
    index: int
    group: np.ndarray


def _phase(phase: Any) -> str:
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}; got {phase!r}")
    return str(phase)


def _rings(order: Any) -> tuple[int, int, np.ndarray, np.ndarray]:
    """``(g, k, ranks, next ranks)`` of ``g`` rings of ``k`` ranks, rows in order."""
    rows = np.asarray(order, dtype=np.int64)
    rows = rows.reshape(1, -1) if rows.ndim <= 1 else rows
    if rows.ndim != 2:
        raise ValueError("order must be a 1-D ring or a 2-D array of rings")
    g, k = rows.shape
    return g, k, rows.ravel(), np.roll(rows, -1, axis=1).ravel()


def ring_steps(
    order: Any, *, base: int = 0, phase: str = "allreduce"
) -> Iterator[RingStep]:
    """The steps of a ring over ``order`` (module docstring).

    Parameters
    ----------
    order : array_like of int
        The ranks in ring order (``K >= 1`` distinct ranks), or a 2-D array
        whose every row is a ring of ``K`` (all rings step together).
    base : int
        First block of the ring's ``K`` blocks.
    phase : {"allreduce", "reduce_scatter", "allgather"}
        Which halves to run.

    Yields
    ------
    RingStep
        ``K - 1`` reduce steps, then ``K - 1`` copy steps (as asked).

    Examples
    --------
    >>> from wafercoll import kit
    >>> steps = list(kit.ring_steps([0, 1, 2]))
    >>> len(steps), [s.op for s in steps]
    (4, ['reduce', 'reduce', 'copy', 'copy'])
    """
    ph = _phase(phase)
    g, k, o, nxt = _rings(order)
    i = np.tile(np.arange(k, dtype=np.int64), g)
    group = np.repeat(np.arange(g, dtype=np.int64), k)
    n = 0
    if ph in ("allreduce", "reduce_scatter"):
        for s in range(k - 1):
            yield RingStep(o, nxt, base + (i - s) % k, "reduce", n, group)
            n += 1
    if ph in ("allreduce", "allgather"):
        for s in range(k - 1):
            yield RingStep(o, nxt, base + (i + 1 - s) % k, "copy", n, group)
            n += 1


def ring_owners(order: Any, *, base: int = 0) -> np.ndarray:
    """Owner rank of every block ``base .. base + K - 1`` after the reduce-scatter.

    Position ``i`` ends with block ``base + (i + 1) mod K``; the result is
    indexed by ``block - base`` (for a 2-D ``order``, one row per ring).

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.ring_owners([0, 1, 2, 3]).tolist()
    [3, 0, 1, 2]
    """
    o = np.asarray(order, dtype=np.int64)
    k = o.shape[-1]
    owners = np.empty_like(o)
    owners[..., (np.arange(k) + 1) % k] = o
    return owners


def ring_allreduce(
    prog: Any,
    order: Any,
    *,
    base: int = 0,
    phase: str = "allreduce",
    stream: int = -1,
) -> None:
    """Emit a ring over ``order`` into ``prog``: the steps of :func:`ring_steps`.

    The steps go in through :meth:`Program.steps`, many per call.

    With ``stream >= 0`` (rule ``"cells"``) the reduce-scatter runs on stream
    ``stream`` and the allgather on ``stream + 1``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(4, kit.split_bytes(64, 4), "allreduce", rule="sendrecv")
    >>> kit.ring_allreduce(prog, kit.folded(4))
    >>> wc.verify(prog.schedule()).steps
    6
    """
    ph = _phase(phase)
    g, k, o, nxt = _rings(order)
    if k <= 1:
        return
    i = np.arange(k, dtype=np.int64)
    # (op, shift): step s of the reduce-scatter sends block (i - s) mod k,
    # of the allgather (i + 1 - s) mod k (module docstring)
    halves = []
    if ph in ("allreduce", "reduce_scatter"):
        halves.append(("reduce", 0))
    if ph in ("allreduce", "allgather"):
        halves.append(("copy", 1))
    # the steps of a half in batches of about 2^16 transfers, each one call
    # (larger batches raise the peak of a build by their temporary arrays)
    per = max(1, _BATCH // (g * k))
    prog.reserve(len(halves) * (k - 1) * g * k)
    for op, shift in halves:
        tag = -1 if stream < 0 else stream + (op == "copy")
        for s0 in range(0, k - 1, per):
            s = np.arange(s0, min(s0 + per, k - 1), dtype=np.int64)
            block = base + (i[None, :] + shift - s[:, None]) % k  # (steps, k)
            block = np.broadcast_to(block[:, None, :], (s.size, g, k)).ravel()
            prog.steps(
                np.tile(o, s.size),
                np.tile(nxt, s.size),
                block,
                op,
                offsets=np.arange(s.size + 1, dtype=np.int64) * (g * k),
                stream=tag,
            )
