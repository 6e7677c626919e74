"""The ``"cells"`` dependency rule, vectorised.

Transfers are listed in a *program order* (an order in which they could run
one at a time); each moves the blocks ``[lo, hi)`` from ``src`` to ``dst``
and carries a *stream* tag. The dependencies follow from the cells
(rank, block) the transfers read and write:

1. *data*: a transfer waits for the last earlier transfer that wrote the
   cell it reads (its source's block);
2. *write order*: a transfer waits for the last earlier transfer that wrote
   the cell it writes, so that two reductions into one cell are ordered, as
   the schedule semantics require;
3. *anti*: a transfer waits for the last earlier transfer that read the cell
   it writes;
4. *stream order*: a transfer waits for the last earlier transfer with the
   same source, destination and stream (a link serves one stream in order).

Writes into a cell are chained by rule 2, so waiting for the last one is
waiting for all of them. Under the simulator's ``dependencies="dataflow"``
reading, rules 2 and 4 only order the packets entering the last link into the
destination, so concurrent reductions into one node and a stream of chunks
over one link still overlap in time.

Every query "the last earlier item with the same key" is answered for all
transfers at once by one sort (:func:`last_before`), so a program of
millions of transfers costs a few NumPy sorts.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cell_deps", "chunk_cell_deps", "last_before", "tiled_cell_deps"]


def last_before(
    query_key: np.ndarray,
    query_pos: np.ndarray,
    item_key: np.ndarray,
    item_pos: np.ndarray,
) -> np.ndarray:
    """For each query, the largest item position < its position with its key.

    Returns -1 where there is none. Keys and positions are int64 arrays.
    When (key, position) pairs pack into one int64, the items' packed pairs
    and the queries' are sorted and each query's is looked up in the items'
    (two sorts of one integer each, a third of the time of a lexsort over
    three); otherwise one lexsort of items and queries together.
    """
    packed = _pack_pairs(query_key, query_pos, item_key, item_pos)
    if packed is not None:
        q, items, span, pmin = packed
        items.sort()
        # Searched in ascending order (binary searches at random places of
        # a large array miss the cache at every step: slower than a sort).
        order = np.argsort(q)
        q = q[order]
        # the last item below the query's pair: the same key and an earlier
        # position, unless it belongs to a smaller key (or there is none)
        at = np.searchsorted(items, q, side="left") - 1
        hit = items[np.maximum(at, 0)]
        valid = (at >= 0) & (hit // span == q // span)
        out = np.empty(q.size, dtype=np.int64)
        out[order] = np.where(valid, hit % span + pmin, -1)
        return out
    return _last_before_lexsort(query_key, query_pos, item_key, item_pos)


def _pack_pairs(
    query_key: np.ndarray,
    query_pos: np.ndarray,
    item_key: np.ndarray,
    item_pos: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, int, int] | None:
    """Queries' and items' (key, position) packed in one order-preserving int64.

    Each pair becomes ``(key - kmin) * span + (pos - pmin)``. Returns the
    packed queries and items, ``span`` and ``pmin``; None when either side
    is empty or the packed values would not fit.
    """
    if query_key.size == 0 or item_key.size == 0:
        return None
    query_key, query_pos, item_key, item_pos = (
        np.asarray(a, dtype=np.int64)
        for a in (query_key, query_pos, item_key, item_pos)
    )
    keys, poss = (query_key, item_key), (query_pos, item_pos)
    kmin = min(int(a.min()) for a in keys)
    kmax = max(int(a.max()) for a in keys)
    pmin = min(int(a.min()) for a in poss)
    span = max(int(a.max()) for a in poss) - pmin + 1
    if (kmax - kmin + 1) * span >= 2**62:
        return None
    q = (query_key - kmin) * span + (query_pos - pmin)
    items = (item_key - kmin) * span + (item_pos - pmin)
    return q, items, span, pmin


def _last_before_lexsort(
    query_key: np.ndarray,
    query_pos: np.ndarray,
    item_key: np.ndarray,
    item_pos: np.ndarray,
) -> np.ndarray:
    """:func:`last_before` by one lexsort of items and queries together."""
    nq = query_key.size
    key = np.concatenate([item_key, query_key])
    pos = np.concatenate([item_pos, query_pos])
    is_q = np.concatenate([np.zeros(item_key.size, np.int8), np.ones(nq, np.int8)])
    # at equal positions the query comes first: an item is not "before" itself
    order = np.lexsort((1 - is_q, pos, key))
    skey = key[order]
    idx = np.arange(order.size)
    last_item = np.maximum.accumulate(np.where(is_q[order] == 0, idx, -1))
    valid = (last_item >= 0) & (skey[np.maximum(last_item, 0)] == skey)
    found = np.where(valid, pos[order][np.maximum(last_item, 0)], -1)
    out = np.empty(nq, dtype=np.int64)
    qmask = is_q[order] == 1
    out[order[qmask] - item_key.size] = found[qmask]
    return out


def _csr_union(
    T: int, rows: np.ndarray, vals: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the distinct non-negative ``vals`` per row ``0 .. T-1``."""
    keep = vals >= 0
    rows, vals = rows[keep], vals[keep]
    o = np.lexsort((vals, rows))
    rows, vals = rows[o], vals[o]
    uniq = np.ones(rows.size, bool)
    uniq[1:] = (rows[1:] != rows[:-1]) | (vals[1:] != vals[:-1])
    rows, vals = rows[uniq], vals[uniq]
    counts = np.bincount(rows, minlength=T)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return vals.astype(np.int64), off


def cell_deps(
    ranks: int,
    num_blocks: int,
    src: np.ndarray,
    dst: np.ndarray,
    block_lo: np.ndarray,
    block_hi: np.ndarray,
    stream: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies (CSR: values, offsets) of transfers in program order.

    Transfer ``i`` moves the blocks ``block_lo[i] .. block_hi[i] - 1`` from
    ``src[i]`` to ``dst[i]`` with stream ``stream[i]`` (-1: none); see the
    module docstring for the four rules.
    """
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    lo = np.asarray(block_lo, np.int64)
    hi = np.asarray(block_hi, np.int64)
    stream = np.asarray(stream, np.int64)
    T = src.size
    width = hi - lo
    # one entry per (transfer, block) cell it touches
    t_of = np.repeat(np.arange(T, dtype=np.int64), width)
    starts = np.repeat(np.cumsum(width) - width, width)
    blk = np.repeat(lo, width) + (np.arange(t_of.size) - starts)
    read_cell = src[t_of] * num_blocks + blk
    write_cell = dst[t_of] * num_blocks + blk
    rows = [t_of, t_of, t_of]
    vals = [
        last_before(read_cell, t_of, write_cell, t_of),
        last_before(write_cell, t_of, write_cell, t_of),
        last_before(write_cell, t_of, read_cell, t_of),
    ]
    has = stream >= 0
    if has.any():
        pos = np.arange(T, dtype=np.int64)
        skey = (src * ranks + dst) * (int(stream.max()) + 1) + np.maximum(stream, 0)
        skey = np.where(has, skey, -1 - pos)  # no stream: a key of its own
        rows.append(pos)
        vals.append(last_before(skey, pos, skey, pos))
    return _csr_union(T, np.concatenate(rows), np.concatenate(vals))


def chunk_cell_deps(
    ranks: int,
    num_blocks: int,
    chunks: int,
    blocks_per_chunk: int,
    src: np.ndarray,
    dst: np.ndarray,
    block: np.ndarray,
    stream: np.ndarray,
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The two lists of :func:`tiled_cell_deps`, untiled: chunk 0's and chunk 1's.

    Returns ``((flat0, off0), (flat1, off1))``: CSR dependency lists of the
    ``E`` transfers of chunk 0 and of chunk 1 (ids of the whole program,
    offsets from 0). Chunk ``c >= 2``'s lists are chunk 1's shifted by
    ``(c - 1) E`` ids, which :meth:`wafercoll.kit.Program.tile` writes
    without making them. With one chunk the second pair is empty lists.
    """
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    block = np.asarray(block, np.int64)
    stream = np.asarray(stream, np.int64)
    E = src.size
    two = min(int(chunks), 2)
    blk2 = np.tile(block, two) + np.repeat(np.arange(two) * blocks_per_chunk, E)
    flat, off = cell_deps(
        ranks,
        num_blocks,
        np.tile(src, two),
        np.tile(dst, two),
        blk2,
        blk2 + 1,
        np.tile(stream, two),
    )
    first = (flat[: off[E]], np.asarray(off[: E + 1] - off[0], np.int64))
    if two < 2:
        return first, (np.zeros(0, np.int64), np.zeros(E + 1, np.int64))
    later = (flat[off[E] :], np.asarray(off[E:] - off[E], np.int64))
    return first, later


def tiled_cell_deps(
    ranks: int,
    num_blocks: int,
    chunks: int,
    blocks_per_chunk: int,
    src: np.ndarray,
    dst: np.ndarray,
    block: np.ndarray,
    stream: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cell_deps` of one chunk's program repeated ``chunks`` times.

    ``src .. stream`` describe chunk 0 (single blocks in ``0 ..
    blocks_per_chunk - 1``); chunk ``c`` moves block ``c * blocks_per_chunk +
    block`` and follows chunk ``c - 1`` in program order. Chunks touch
    disjoint blocks, so only stream order links them, and the dependencies
    of chunk ``c >= 1`` are those of chunk 1 shifted by ``c - 1`` chunks:
    they are computed on two chunks (:func:`chunk_cell_deps`) and tiled (the
    same result as :func:`cell_deps` on the whole program, in time linear in
    ``chunks``).
    """
    E = np.asarray(src).size
    C = int(chunks)
    (first, off0), (later, off1) = chunk_cell_deps(
        ranks, num_blocks, C, blocks_per_chunk, src, dst, block, stream
    )
    if C <= 1:
        return first, off0
    reps = C - 1
    # written in place: chunk c's row is chunk 1's shifted by (c - 1) E
    # (one pass, where tile + repeat + add made three arrays this size)
    vals = np.empty(first.size + reps * later.size, dtype=np.int64)
    vals[: first.size] = first
    np.add(
        later[None, :],
        (np.arange(reps, dtype=np.int64) * E)[:, None],
        out=vals[first.size :].reshape(reps, later.size),
    )
    # and chunk c's list ends are chunk 1's, after c - 1 more chunks
    dep_off = np.empty(C * E + 1, dtype=np.int64)
    dep_off[: E + 1] = off0
    np.add(
        (off1[1:] + first.size)[None, :],
        (np.arange(reps, dtype=np.int64) * later.size)[:, None],
        out=dep_off[E + 1 :].reshape(reps, E),
    )
    return vals, dep_off
