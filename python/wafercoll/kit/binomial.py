"""Binomial trees: reduce towards and broadcast from a root in ``ceil(log2 p)`` steps.

Over positions ``0 .. p - 1`` relative to the root (position ``i`` is rank
``(i + root) mod p``, or ``ranks[:, i]`` for groups, as in
:mod:`wafercoll.kit.butterfly`). The reduce runs masks ``1, 2, 4, ...``: at
mask ``m`` every odd multiple ``i`` of ``m`` sends to ``i - m``, which adds
it. The broadcast runs the same edges with the masks from the largest down,
from ``i - m`` to ``i``::

    p = 6, reduce:   mask 1: 1->0  3->2  5->4
                     mask 2: 2->0
                     mask 4: 4->0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .butterfly import at

__all__ = ["binomial_broadcast", "binomial_reduce", "binomial_steps"]


def binomial_steps(p: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(child, parent)`` positions of every reduce step, masks increasing.

    Examples
    --------
    >>> from wafercoll import kit
    >>> [(c.tolist(), p.tolist()) for c, p in kit.binomial_steps(5)]
    [([1, 3], [0, 2]), ([2], [0]), ([4], [0])]
    """
    steps = []
    mask = 1
    while mask < p:
        child = np.arange(mask, p, 2 * mask, dtype=np.int64)
        steps.append((child, child - mask))
        mask *= 2
    return steps


def _real(p: int, root: int, ranks: Any, pos: np.ndarray) -> np.ndarray:
    if ranks is None:
        return (pos + root) % p
    return at(ranks, pos)


def binomial_reduce(
    prog: Any, p: int, blocks: Any, *, root: int = 0, ranks: Any = None
) -> None:
    """Reduce ``blocks`` of ``p`` positions to position 0 (rank ``root``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(5, [40], "reduce", root=2, rule="sendrecv")
    >>> kit.binomial_reduce(prog, 5, 0, root=2)
    >>> wc.verify(prog.schedule()).steps
    3
    """
    for child, parent in binomial_steps(p):
        prog.step(
            _real(p, root, ranks, child),
            _real(p, root, ranks, parent),
            blocks,
            "reduce",
        )


def binomial_broadcast(
    prog: Any, p: int, blocks: Any, *, root: int = 0, ranks: Any = None
) -> None:
    """Broadcast ``blocks`` from position 0 (rank ``root``) to ``p`` positions.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(5, [40], "broadcast", root=2, rule="sendrecv")
    >>> kit.binomial_broadcast(prog, 5, 0, root=2)
    >>> wc.verify(prog.schedule()).steps
    3
    """
    for child, parent in reversed(binomial_steps(p)):
        prog.step(
            _real(p, root, ranks, parent), _real(p, root, ranks, child), blocks, "copy"
        )
