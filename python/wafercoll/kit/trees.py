"""Collectives over trees given as parent arrays.

A tree over ``p`` ranks is a parent array: ``parent[v]`` is the rank ``v``
sends to, ``-1`` at the root and ``-2`` for ranks the tree leaves out.

* :func:`tree_depths`: the depth of every rank of a tree;
* :func:`trees_program`: reduce and/or broadcast over ``K`` trees at once
  (tree ``k`` carries block ``k`` of every chunk), the vector cut into
  chunks that stream through the trees one after another, under the
  ``"cells"`` dependencies (children before parents on the way up, parents
  before children on the way down, a stream per tree and direction). The
  reduce half leaves block ``k`` at tree ``k``'s root (a reduce-scatter over
  the roots), the broadcast half sends it back down (an allgather), both
  halves make an allreduce (the MultiTree / TTO / double-binary-tree
  pattern);
* :func:`tree_reduce`: the reduce of one tree, post-order and pipelined
  block by block, built by the compiled core (the kit's fast path: a chain
  of a million ranks builds in well under a second).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._util import as_int
from ..schedule import Schedule
from .cells import chunk_cell_deps
from .program import Program

__all__ = ["tree_depths", "tree_reduce", "trees_program"]

_PHASES = ("allreduce", "reduce_scatter", "allgather", "reduce", "broadcast")


def tree_depths(parent: Any) -> np.ndarray:
    """Depth of every rank of a parent array (-1 for ranks left out, -2).

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.tree_depths([-1, 0, 0, 1]).tolist()
    [0, 1, 1, 2]
    """
    par = np.asarray(parent)
    depth = np.full(par.size, -1, dtype=np.int64)
    for v in range(par.size):
        if par[v] == -2 or depth[v] >= 0:
            continue
        path = []
        u = v
        while depth[u] < 0 and par[u] >= 0:
            path.append(u)
            u = int(par[u])
            if len(path) > par.size:
                raise ValueError(f"parent array has a cycle through rank {v}")
        if depth[u] < 0:  # the root
            depth[u] = 0
        d = depth[u]
        for w in reversed(path):
            d += 1
            depth[w] = d
    return depth


def _template(parents: np.ndarray, phase: str) -> dict[str, np.ndarray]:
    """One chunk's transfers over trees ``k`` (block ``k``), in program order."""
    rows = []
    for k, par in enumerate(parents):
        depth = tree_depths(par)
        for v in np.flatnonzero(par >= 0):
            rows.append((int(depth[v]), k, int(v), int(par[v])))
    rs = sorted(rows, key=lambda r: (-r[0], r[1], r[2]))
    ag = sorted(rows, key=lambda r: (r[0], r[1], r[2]))
    out: dict[str, list[int]] = {k: [] for k in ("src", "dst", "block", "op", "stream")}
    if phase in ("allreduce", "reduce_scatter", "reduce"):
        for _, k, v, q in rs:
            for key, val in zip(out, (v, q, k, 1, 2 * k), strict=True):
                out[key].append(val)
    if phase in ("allreduce", "allgather", "broadcast"):
        for _, k, v, q in ag:
            for key, val in zip(out, (q, v, k, 0, 2 * k + 1), strict=True):
                out[key].append(val)
    return {k: np.asarray(v, np.int64) for k, v in out.items()}


def trees_program(
    parents: Any,
    block_bytes: Sequence[int] | np.ndarray,
    *,
    phase: str = "allreduce",
    participants: Iterable[int] | None = None,
    name: str = "",
) -> Schedule:
    """Reduce and/or broadcast over ``K`` trees, the data in chunks.

    Parameters
    ----------
    parents : array_like of int, shape (K, p)
        One parent array per tree (module docstring).
    block_bytes : sequence of int
        ``chunks * K`` block sizes: block ``c * K + k`` is chunk ``c`` of
        tree ``k`` (see :func:`wafercoll.kit.split_bytes`).
    phase : {"allreduce", "reduce_scatter", "allgather", "reduce", "broadcast"}
        Both halves, the reduce half only, or the broadcast half only; the
        schedule's collective. Block ``c * K + k`` is owned by tree ``k``'s
        root (``reduce_scatter`` / ``allgather``). ``reduce`` and
        ``broadcast`` need every tree rooted at the same rank, the
        collective's root.
    participants : iterable of int, optional
        As for :class:`wafercoll.Schedule` (ranks that relay but hold no
        data are left out).
    name : str
        The schedule's name.

    Returns
    -------
    Schedule
        The program of one chunk repeated chunk after chunk. Chunks touch
        disjoint blocks, so the ``"cells"`` dependencies of the whole program
        are those of two chunks, tiled (:func:`wafercoll.kit.cells.chunk_cell_deps`,
        :meth:`wafercoll.kit.Program.tile`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> parents = [[-1, 0, 1], [1, 2, -1]]
    >>> s = kit.trees_program(parents, kit.split_bytes(48, 4))
    >>> s.num_transfers, wc.verify(s).ok
    (16, True)
    """
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}; got {phase!r}")
    par = np.atleast_2d(np.asarray(parents, dtype=np.int64))
    if par.ndim != 2:
        raise ValueError("parents must be one parent array per tree, shape (K, p)")
    K, p = par.shape
    sizes = np.asarray(block_bytes, dtype=np.int64).ravel()
    if K == 0 or sizes.size % K:
        raise ValueError(
            f"block_bytes has {sizes.size} blocks, not a multiple of the {K} trees"
        )
    chunks = sizes.size // K
    roots = [int(np.flatnonzero(t == -1)[0]) for t in par]
    root = None
    if phase in ("reduce", "broadcast"):
        if len(set(roots)) != 1:
            raise ValueError(
                f"a {phase} over trees needs every tree rooted at one rank; the "
                f"roots are {sorted(set(roots))}"
            )
        root = roots[0]
    t = _template(par, phase)
    first, later = chunk_cell_deps(
        p, sizes.size, chunks, K, t["src"], t["dst"], t["block"], t["stream"]
    )
    owners = np.tile(np.asarray(roots, np.int64), chunks)
    prog = Program(
        p,
        sizes,
        phase,
        rule="explicit",
        root=root,
        owners=owners.tolist() if phase in ("reduce_scatter", "allgather") else None,
        participants=participants,
        name=name,
    )
    # chunk c moves block c K + b, written straight into the schedule
    prog.tile(
        t["src"],
        t["dst"],
        t["block"],
        t["op"],
        chunks=chunks,
        block_stride=K,
        deps=first,
        later_deps=later,
    )
    return prog.schedule()


def tree_reduce(parent: Any, size_bytes: int, block_bytes: int) -> Schedule:
    """The Reduce of one tree, pipelined in blocks (compiled fast path).

    Parameters
    ----------
    parent : array_like of int
        ``parent[r]`` is the rank ``r`` sends to; the root has -1. A rank
        takes its children in increasing rank order.
    size_bytes : int
        Vector size, ``>= 0``.
    block_bytes : int
        Block size (``>= 1``); the last block takes the rest.

    Returns
    -------
    Schedule
        A reduce to the root: every rank sends its blocks in order, post-order
        (a rank's block ``b`` waits for its block ``b - 1``, or for block 0
        for its previous sibling's last block, and for its children's block
        ``b``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import kit
    >>> s = kit.tree_reduce([-1, 0, 0, 1], 64, 16)
    >>> s.collective, s.num_transfers, wc.verify(s).ok
    ('reduce', 12, True)
    """
    from .. import _core

    par = np.asarray(parent)
    if par.ndim != 1 or (par.size and not np.issubdtype(par.dtype, np.integer)):
        raise TypeError("parent must be a 1-D integer array")
    size = as_int(size_bytes, "size_bytes", 0, 1 << 62)
    block = as_int(block_bytes, "block_bytes", 1, 1 << 62)
    core = _core.tree_reduce(par.astype(np.int32).tolist(), size, block)
    return Schedule._wrap(core)
