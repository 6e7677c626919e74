"""Dependencies of single-block schedules from program order (vectorised).

Builders of the mesh package list their transfers in a *program order* (an
order in which they could run one at a time), each moving one block from one
rank to one rank, and tag each with a *stream*. The dependencies follow from
the cells (rank, block) the transfers read and write:

1. *data*: a transfer waits for the last earlier transfer that wrote the
   cell it reads (its source's block);
2. *write order*: a transfer waits for the last earlier transfer that wrote
   the cell it writes (its destination's block), so that two reductions into
   one cell are ordered, as the schedule semantics require;
3. *anti*: a transfer waits for the last earlier transfer that read the cell
   it writes;
4. *stream order*: a transfer waits for the last earlier transfer with the
   same source, destination and stream (a link serves one stream in order).

Writes into a cell are chained by rule 2, so waiting for the last one is
waiting for all of them. Under the simulator's ``dependencies="dataflow"``
reading, rules 2 and 4 only order the packets entering the last link into the
destination, so concurrent reductions into one node and a stream of chunks
over one link still overlap in time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..schedule import Schedule


def last_before(
    query_key: np.ndarray,
    query_pos: np.ndarray,
    item_key: np.ndarray,
    item_pos: np.ndarray,
) -> np.ndarray:
    """For each query, the largest item position < its position with its key.

    Returns -1 where there is none. Keys and positions are int64 arrays.
    """
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


def program_deps(
    ranks: int,
    num_blocks: int,
    src: np.ndarray,
    dst: np.ndarray,
    block_lo: np.ndarray,
    block_hi: np.ndarray,
    stream: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies (CSR: values, offsets) of transfers in program order.

    A transfer moves the blocks ``block_lo .. block_hi - 1`` from ``src`` to
    ``dst``; see the module docstring for the four rules.
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


def _blocks(block: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(block, tuple):
        return np.asarray(block[0], np.int64), np.asarray(block[1], np.int64)
    b = np.asarray(block, np.int64)
    return b, b + 1


def schedule_from_program(
    ranks: int,
    block_bytes: np.ndarray,
    collective: str,
    *,
    src: np.ndarray,
    dst: np.ndarray,
    block: Any,
    op: np.ndarray,
    stream: np.ndarray,
    extra_deps: tuple[np.ndarray, np.ndarray] | None = None,
    owners: Any = None,
    participants: Any = None,
    name: str = "",
) -> Schedule:
    """A :class:`Schedule` of transfers listed in program order.

    Parameters
    ----------
    ranks, block_bytes, collective, owners, participants, name
        As for :class:`wafercoll.Schedule`.
    src, dst, op, stream : array of int, shape (T,)
        Per transfer, in program order (``op``: 0 copy, 1 reduce; ``stream``:
        -1 for no stream order).
    block : array of int, or (lo, hi) pair of arrays
        The block of every transfer, or its half-open range of blocks.
    extra_deps : (deps, offsets), optional
        More dependencies in CSR form (e.g. step barriers).
    """
    src = np.asarray(src, np.int64)
    T = src.size
    nb = int(np.asarray(block_bytes).size)
    lo, hi = _blocks(block, T)
    flat, off = program_deps(ranks, nb, src, dst, lo, hi, stream)
    if extra_deps is not None:
        ex, ex_off = (np.asarray(a, np.int64) for a in extra_deps)
        rows = np.concatenate(
            [
                np.repeat(np.arange(T), np.diff(off)),
                np.repeat(np.arange(T), np.diff(ex_off)),
            ]
        )
        flat, off = _csr_union(T, rows, np.concatenate([flat, ex]))
    return _from_arrays(
        ranks,
        block_bytes,
        collective,
        src,
        dst,
        lo,
        hi,
        op,
        flat,
        off,
        owners,
        participants,
        name,
    )


def _from_arrays(
    ranks: int,
    block_bytes: Any,
    collective: str,
    src: np.ndarray,
    dst: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    op: np.ndarray,
    deps: np.ndarray,
    dep_off: np.ndarray,
    owners: Any,
    participants: Any,
    name: str,
) -> Schedule:
    return Schedule.from_arrays(
        ranks,
        np.asarray(block_bytes, np.int64),
        collective,
        src=src,
        dst=dst,
        block_lo=lo,
        block_hi=hi,
        op=np.asarray(op).astype(np.uint8),
        deps=deps,
        dep_offsets=dep_off,
        owners=owners,
        participants=participants,
        name=name,
    )


def tiled_schedule(
    ranks: int,
    block_bytes: np.ndarray,
    collective: str,
    *,
    chunks: int,
    blocks_per_chunk: int,
    src: np.ndarray,
    dst: np.ndarray,
    block: np.ndarray,
    op: np.ndarray,
    stream: np.ndarray,
    owners: Any = None,
    participants: Any = None,
    name: str = "",
) -> Schedule:
    """The program of one chunk repeated for ``chunks`` chunks, vectorised.

    ``src .. stream`` describe chunk 0 (``block`` in ``0 ..
    blocks_per_chunk - 1``); chunk ``c`` moves block ``c * blocks_per_chunk +
    block``. The program order is chunk after chunk, so the dependencies of
    chunk ``c >= 1`` are those of chunk 1 shifted by ``c - 1`` chunks: they
    are computed on two chunks and tiled.
    """
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    block = np.asarray(block, np.int64)
    op = np.asarray(op, np.int64)
    stream = np.asarray(stream, np.int64)
    E = src.size
    C = int(chunks)
    two = min(C, 2)
    src2 = np.tile(src, two)
    dst2 = np.tile(dst, two)
    blk2 = np.tile(block, two) + np.repeat(np.arange(two) * blocks_per_chunk, E)
    st2 = np.tile(stream, two)
    nb = int(np.asarray(block_bytes).size)
    flat, off = program_deps(ranks, nb, src2, dst2, blk2, blk2 + 1, st2)
    first = flat[: off[E]]
    cnt0 = np.diff(off[: E + 1])
    if C > 1:
        later = flat[off[E] :]  # chunk 1's; chunk c's are shifted by (c - 1) E
        cnt1 = np.diff(off[E:])
        reps = C - 1
        shift = np.repeat(np.arange(reps, dtype=np.int64) * E, later.size)
        vals = np.concatenate([first, np.tile(later, reps) + shift])
        counts = np.concatenate([cnt0, np.tile(cnt1, reps)])
    else:
        vals, counts = first, cnt0
    dep_off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    all_blocks = np.tile(block, C) + np.repeat(
        np.arange(C, dtype=np.int64) * blocks_per_chunk, E
    )
    return _from_arrays(
        ranks,
        block_bytes,
        collective,
        np.tile(src, C),
        np.tile(dst, C),
        all_blocks,
        all_blocks + 1,
        np.tile(op, C),
        vals,
        dep_off,
        owners,
        participants,
        name,
    )


class Program:
    """Transfers appended one by one in program order (for small builders)."""

    def __init__(self) -> None:
        self.src: list[int] = []
        self.dst: list[int] = []
        self.block: list[int] = []
        self.op: list[int] = []
        self.stream: list[int] = []

    def add(self, src: int, dst: int, block: int, op: int, stream: int) -> None:
        """Append one transfer (op: 0 copy, 1 reduce)."""
        self.src.append(src)
        self.dst.append(dst)
        self.block.append(block)
        self.op.append(op)
        self.stream.append(stream)

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns as int64 arrays."""
        return {
            k: np.asarray(getattr(self, k), dtype=np.int64)
            for k in ("src", "dst", "block", "op", "stream")
        }
