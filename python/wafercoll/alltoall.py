"""All-to-all schedules: every rank sends a distinct block to every other rank.

Mixture-of-experts layers route their tokens with an all-to-all, and FFT
transposes and sorting with one. The collective (:class:`wafercoll.Schedule`,
``"alltoall"``) has ``p * p`` blocks: block ``i * p + j`` is rank ``i``'s
block for rank ``j``, and it must arrive there exactly once, unreduced.
``size_bytes`` is one rank's whole send buffer, split into ``p`` blocks with
:func:`wafercoll.kit.split_bytes` (block ``i * p + j`` gets part ``j``).
``"alltoallv"`` is the same layout with one byte count per pair, from a
``p x p`` matrix (:func:`wafercoll.alltoallv_blocks`): the token counts of a
mixture-of-experts router times the bytes per token.

Blocks keep their index wherever they are: a block relayed through rank
``k`` sits in cell ``(k, i * p + j)``. The local rotations of Bruck's
algorithm are therefore an index map, not data movement (see
:func:`bruck_alltoall`).

The builders, all written with :mod:`wafercoll.kit`:

``generic_shift_alltoall`` / ``generic_shift_alltoallv``
    Linear shift (MPICH's pairwise exchange for any ``p``): in step
    ``k = 1 .. p - 1`` rank ``r`` sends its block for ``r + k`` and receives
    from ``r - k`` (mod ``p``), one ``Sendrecv`` per step.
``generic_bruck_alltoall``
    Bruck et al., "Efficient algorithms for all-to-all communications in
    multiport message-passing systems" (IEEE TPDS 8(11), 1997): in round
    ``k = 0 .. ceil(log2 p) - 1`` rank ``r`` sends to ``r + 2^k`` every block
    it holds whose remaining distance ``(j - i) mod p`` has bit ``k`` set.
    ``ceil(log2 p)`` messages per rank instead of ``p - 1``, at the price of
    about ``log2(p) / 2`` times the bytes.
``generic_spread_alltoall`` / ``generic_spread_alltoallv``
    Spread-out (MPICH's "irecv/isend" algorithm): every rank posts all its
    ``p - 1`` sends at once, in shifted order, and the network sorts them out.
``mesh_dimension_ordered_alltoall`` / ``torus_dimension_ordered_alltoall``
    On a grid of ``rows x cols`` ranks: a linear shift along each row moves
    every block to its target's column (blocks for one column travel
    together), then a linear shift along each column to its target's row.
    ``(cols - 1) + (rows - 1)`` messages per rank instead of ``p - 1``.
``mesh_direct_alltoall`` / ``torus_direct_alltoall``
    A linear shift over the 2D offsets: in step ``(dx, dy)`` rank ``(x, y)``
    sends its block for ``(x + dx, y + dy)`` (mod the grid), so every step is
    a translation of the grid, which loads a torus's links evenly.
``cluster_hierarchical_alltoall``
    On ``nodes x ppn`` ranks: (1) within each node, blocks for node ``d``
    gather at local rank ``d mod ppn``; (2) that rank sends node ``n``'s
    blocks for node ``d`` in one message to local rank ``n mod ppn`` of node
    ``d`` (one message per node pair); (3) within node ``d`` they go to their
    targets. Blocks within a node go straight to their target in (1).

Closed forms (``AlgorithmInfo.predict``, the Hockney model of
:mod:`wafercoll.generic`: ``alpha`` start-up plus one hop, ``beta`` per byte,
contention-free, so they are lower estimates on a sparse network):

* shift: ``(p - 1) (alpha + S / p beta)``;
* Bruck: ``sum_k (alpha + n_k S / p beta)`` with ``n_k`` the number of
  distances ``d`` in ``1 .. p - 1`` with bit ``k`` set;
* dimension-ordered: ``(cols - 1) (alpha + rows S / p beta) +
  (rows - 1) (alpha + cols S / p beta)``.

Examples
--------
>>> import numpy as np, wafercoll as wc
>>> s = wc.build("generic_bruck_alltoall", ranks=5, size_bytes=5 * 8)
>>> wc.verify(s).steps
3
>>> x = np.arange(5 * 25).reshape(5, 25)
>>> out = wc.execute(s, x)
>>> bool((out[3, 1 * 5 + 3] == x[1, 1 * 5 + 3]))  # rank 1's block for rank 3
True
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from . import kit
from ._generic_common import hop_costs
from ._util import as_int, as_real
from .algorithms import algorithm_name, register_algorithm
from .cluster.builders import node_layout, rank_table
from .schedule import Schedule, alltoallv_blocks

__all__ = [
    "MAX_RANKS",
    "bruck_alltoall",
    "send_blocks",
    "dimension_ordered_alltoall",
    "direct_alltoall",
    "hierarchical_alltoall",
    "moe_matrix",
    "read_matrix",
    "shift_alltoall",
    "spread_alltoall",
]

#: Largest rank count of the all-to-all builders: ``p * p`` blocks (4.2 M at
#: 2,048) and up to ``p (p - 1)`` transfers.
MAX_RANKS = 2048
_THAKUR = (
    "Thakur, Rabenseifner, Gropp, Optimization of Collective Communication "
    "Operations in MPICH, IJHPCA 2005"
)
_BRUCK = (
    "Bruck, Ho, Kipnis, Upfal, Weathersby, Efficient algorithms for all-to-all "
    "communications in multiport message-passing systems, IEEE TPDS 8(11), 1997"
)


# -- layout ---------------------------------------------------------------------
def _program(
    ranks: int, size_bytes: int, matrix: Any, collective: str, name: str, rule: str
) -> kit.Program:
    """The program of an alltoall(v) of ``ranks`` and its ``p * p`` blocks."""
    p = as_int(ranks, "ranks", 1, MAX_RANKS)
    if matrix is None:
        part = kit.split_bytes(size_bytes, p)
        sizes = [int(b) for _ in range(p) for b in part]
    else:
        sizes = alltoallv_blocks(matrix)
        if len(sizes) != p * p:
            n = round(len(sizes) ** 0.5)
            raise ValueError(f"matrix must be {p} x {p} for {p} ranks, got {n} x {n}")
    return kit.Program(p, sizes, collective, rule=rule, name=name)


def _kind(collective: str | None, matrix: Any) -> str:
    if collective is None:
        return "alltoall" if matrix is None else "alltoallv"
    if collective not in ("alltoall", "alltoallv"):
        raise ValueError(
            f"collective must be 'alltoall' or 'alltoallv', got {collective!r}"
        )
    if collective == "alltoall" and matrix is not None:
        raise ValueError("matrix makes an alltoallv; pass collective='alltoallv'")
    return collective


def send_blocks(
    prog: kit.Program,
    src: np.ndarray,
    dst: np.ndarray,
    blocks: np.ndarray,
    **kw: Any,
) -> np.ndarray:
    """One step: every distinct ``(src, dst)`` pair sends its blocks in one message.

    ``src[i] -> dst[i]`` carries block ``blocks[i]``; blocks of one pair are
    merged into one transfer of sorted block ranges (runs of consecutive
    indices become one range). Returns the new transfer ids.

    Parameters
    ----------
    prog : wafercoll.kit.Program
    src, dst, blocks : array_like of int
        One entry per block moved.
    **kw
        Passed to :meth:`wafercoll.kit.Program.step` (``deps=``, ``group=``).

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> from wafercoll import kit
    >>> prog = kit.Program(2, [1, 1, 1, 1], "alltoall", rule="sendrecv")
    >>> wc.alltoall.send_blocks(prog, np.array([0, 1]), np.array([1, 0]),
    ...                         np.array([1, 2]))
    array([0, 1])
    >>> wc.verify(prog.schedule()).ok
    True
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    blocks = np.asarray(blocks, dtype=np.int64)
    if src.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((blocks, dst, src))
    s, d, b = src[order], dst[order], blocks[order]
    new_pair = np.ones(s.size, dtype=bool)
    new_pair[1:] = (s[1:] != s[:-1]) | (d[1:] != d[:-1])
    new_run = new_pair.copy()
    new_run[1:] |= b[1:] != b[:-1] + 1
    starts = np.flatnonzero(new_run)
    ends = np.append(starts[1:], s.size)
    lo, hi = b[starts], b[ends - 1] + 1
    pair_of_run = np.cumsum(new_pair)[starts] - 1
    pairs = np.flatnonzero(new_pair)
    offsets = np.zeros(pairs.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(pair_of_run, minlength=pairs.size), out=offsets[1:])
    return prog.step(s[pairs], d[pairs], kit.Ranges(lo, hi, offsets), **kw)


def _moving_blocks(prog: kit.Program) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source, target and index of every block that leaves its rank.

    Blocks of zero bytes (an alltoallv's zero entries) stay where they are.
    """
    p = prog.ranks
    i, j = np.divmod(np.arange(p * p), p)
    keep = (i != j) & (prog.block_bytes > 0)
    return i[keep], j[keep], np.arange(p * p)[keep]


# -- generic ----------------------------------------------------------------------
def _shifts(prog: kit.Program, targets: Any = None) -> Schedule:
    """One step per permutation: rank ``r`` sends its block for ``t[r]``.

    ``targets`` yields the permutations (default: ``r + k`` for ``k = 1 ..
    p - 1``). Blocks of zero bytes (an alltoallv's zero entries) need no
    message.
    """
    p = prog.ranks
    r = np.arange(p)
    carries = prog.block_bytes > 0
    if targets is None:
        targets = ((r + k) % p for k in range(1, p))
    for t in targets:
        go = carries[r * p + t]
        prog.step(r[go], t[go], (r * p + t)[go])
    return prog.schedule()


def shift_alltoall(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    matrix: Any = None,
    collective: str | None = None,
) -> Schedule:
    """Linear-shift alltoall (module docstring).

    Parameters
    ----------
    ranks, size_bytes, topology
        As for every builder (``size_bytes``: one rank's send buffer).
    matrix : array_like, shape (p, p), optional
        Bytes from rank ``i`` to rank ``j``; makes the schedule an alltoallv.
    collective : {"alltoall", "alltoallv"}, optional
        Default: ``"alltoallv"`` with a matrix, else ``"alltoall"``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_shift_alltoall", ranks=4, size_bytes=64)
    >>> s.collective, wc.verify(s).steps
    ('alltoall', 3)
    >>> v = wc.build("generic_shift_alltoallv", ranks=2, size_bytes=0,
    ...              matrix=[[0, 8], [24, 0]])
    >>> v.collective, v.size_bytes
    ('alltoallv', 32)
    """
    kind = _kind(collective, matrix)
    prog = _program(ranks, size_bytes, matrix, kind, f"shift_{kind}", "sendrecv")
    return _shifts(prog)


def spread_alltoall(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    matrix: Any = None,
    collective: str | None = None,
) -> Schedule:
    """Spread-out alltoall: all sends posted at once (module docstring).

    Parameters as for :func:`shift_alltoall`.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_spread_alltoall", ranks=4, size_bytes=64)
    >>> wc.verify(s).steps
    1
    """
    kind = _kind(collective, matrix)
    prog = _program(ranks, size_bytes, matrix, kind, f"spread_{kind}", "explicit")
    return _shifts(prog)


def bruck_alltoall(ranks: int, size_bytes: int, *, topology: Any = None) -> Schedule:
    """Bruck's alltoall in ``ceil(log2 p)`` rounds (module docstring).

    Index map: where Bruck's algorithm rotates each rank's buffer so that
    the block for ``r + d`` sits at offset ``d``, sends the offsets with bit
    ``k`` set in round ``k`` and rotates back at the end, this schedule keeps
    every block under its own index ``i * p + j`` and moves block
    ``(i, j)``, with ``d = (j - i) mod p``, from rank
    ``i + (d mod 2^k)`` to rank ``i + (d mod 2^(k+1))`` in round ``k``
    whenever bit ``k`` of ``d`` is set. Each block reaches ``j`` once, in the
    round of the highest bit of ``d``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_bruck_alltoall", ranks=8, size_bytes=64)
    >>> wc.verify(s).steps, s.num_transfers
    (3, 24)
    """
    prog = _program(ranks, size_bytes, None, "alltoall", "bruck_alltoall", "sendrecv")
    p = prog.ranks
    i, j, block = _moving_blocks(prog)
    d = (j - i) % p
    k = 0
    while (1 << k) < p:
        bit = (d >> k) & 1 == 1
        at = (i + (d & ((1 << k) - 1))) % p
        send_blocks(prog, at[bit], (at[bit] + (1 << k)) % p, block[bit])
        k += 1
    return prog.schedule()


# -- grids ------------------------------------------------------------------------
def _grid(name: str, p: int, topology: Any) -> tuple[int, int]:
    from .wormhole.builders import grid_of

    if topology is None:
        raise ValueError(f"{name} needs a mesh, torus or ring topology")
    rows, cols = grid_of(p, topology)
    return rows, cols


def dimension_ordered_alltoall(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    matrix: Any = None,
    collective: str | None = None,
) -> Schedule:
    """Rows, then columns: two linear shifts on a grid (module docstring).

    Parameters as for :func:`shift_alltoall`; ``topology`` (a mesh, torus or
    ring) gives the grid.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("mesh_dimension_ordered_alltoall", topology=wc.mesh(3, 4),
    ...              size_bytes=12 * 8)
    >>> wc.verify(s).steps, s.num_transfers
    (5, 60)
    """
    kind = _kind(collective, matrix)
    rows, cols = _grid("dimension_ordered_alltoall", ranks, topology)
    name = f"dimension_ordered_{kind}"
    prog = _program(ranks, size_bytes, matrix, kind, name, "sendrecv")
    i, j, block = _moving_blocks(prog)
    (xi, yi), (xj, yj) = np.divmod(i, cols), np.divmod(j, cols)
    # Phase 1, along rows: each block to its target's column.
    for k in range(1, cols):
        go = (yj - yi) % cols == k
        send_blocks(prog, i[go], xi[go] * cols + yj[go], block[go])
    # Phase 2, along columns: from (xi, yj) to its target's row.
    at = xi * cols + yj
    for k in range(1, rows):
        go = (xj - xi) % rows == k
        send_blocks(prog, at[go], j[go], block[go])
    return prog.schedule()


def direct_alltoall(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    matrix: Any = None,
    collective: str | None = None,
) -> Schedule:
    """A linear shift over the grid's 2D offsets (module docstring).

    Parameters as for :func:`dimension_ordered_alltoall`.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("torus_direct_alltoall", topology=wc.torus(3, 3), size_bytes=72)
    >>> wc.verify(s).steps
    8
    """
    kind = _kind(collective, matrix)
    rows, cols = _grid("direct_alltoall", ranks, topology)
    prog = _program(ranks, size_bytes, matrix, kind, f"direct_{kind}", "sendrecv")
    x, y = np.divmod(np.arange(prog.ranks), cols)
    offsets = ((dx, dy) for dx in range(rows) for dy in range(cols) if dx or dy)
    return _shifts(
        prog, (((x + dx) % rows) * cols + (y + dy) % cols for dx, dy in offsets)
    )


# -- clusters ---------------------------------------------------------------------
def hierarchical_alltoall(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    ppn: int | None = None,
    rank_to_node: Any = None,
) -> Schedule:
    """Intra-node, one message per node pair, intra-node (module docstring).

    Parameters
    ----------
    ranks, size_bytes, topology
        As for every builder; a cluster topology gives ``ppn`` and the
        placement.
    ppn : int, optional
        Ranks per node (required without a cluster topology).
    rank_to_node : array_like of int, optional
        Node of every rank (default: ``r // ppn``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("cluster_hierarchical_alltoall", ranks=12, size_bytes=96, ppn=4)
    >>> wc.verify(s).steps
    8
    """
    ppn, rank_to_node = node_layout(ranks, topology, ppn, rank_to_node)
    name = "hierarchical_alltoall"
    prog = _program(ranks, size_bytes, None, "alltoall", name, "sendrecv")
    p = prog.ranks
    table = rank_table(p, ppn, rank_to_node)  # (nodes, ppn): rank of (node, local)
    q = table.shape[1]
    nodes = table.shape[0]
    node = np.empty(p, dtype=np.int64)
    local = np.empty(p, dtype=np.int64)
    node[table.ravel()] = np.repeat(np.arange(nodes), q)
    local[table.ravel()] = np.tile(np.arange(q), nodes)
    i, j, block = _moving_blocks(prog)
    ni, nj = node[i], node[j]
    far = ni != nj
    # (1) within the node: straight to the target, or to the node's
    # aggregator for the target's node (local rank nj mod q).
    hop1 = np.where(far, table[ni, nj % q], j)
    # (2) one message per node pair, between the two aggregators.
    hop2 = table[nj, ni % q]
    # Each phase is a linear shift (over local ranks, then nodes, then local
    # ranks), so that in a step every rank sends once and receives once and
    # the "sendrecv" rule orders each step's receives before the next
    # phase's sends.
    phases = (
        (i, hop1, hop1 != i, (local[hop1] - local[i]) % q, q),
        (hop1, hop2, far, (nj - ni) % nodes, nodes),
        (hop2, j, far & (hop2 != j), (local[j] - local[hop2]) % q, q),
    )
    for src, dst, go, shift, n in phases:
        for k in range(1, n):
            sel = go & (shift == k)
            send_blocks(prog, src[sel], dst[sel], block[sel])
    return prog.schedule()


# -- mixture-of-experts traffic -------------------------------------------------
#: Largest ``ranks * tokens_per_rank * experts`` of :func:`moe_matrix` (the
#: gating scores it draws: 8 bytes each, 2 GiB at the limit).
MAX_MOE_SCORES = 1 << 28


def moe_matrix(
    ranks: int,
    tokens_per_rank: int,
    bytes_per_token: int,
    *,
    experts: int | None = None,
    top_k: int = 2,
    zipf_s: float = 1.0,
    seed: int = 0,
) -> np.ndarray:
    """The alltoallv byte matrix of one mixture-of-experts dispatch.

    Every rank holds ``tokens_per_rank`` tokens and ``experts / ranks``
    experts (expert ``e`` on rank ``e // (experts / ranks)``). Each token is
    routed to ``top_k`` distinct experts drawn without replacement with
    probability proportional to the experts' popularity ``1 / (e + 1) ** zipf_s``
    (a Zipf law: 0 is uniform, larger is more skewed; expert 0 is the most
    popular), which models the skewed routing of a trained gate. A token is
    sent once per chosen expert (the dispatch of GShard and DeepSpeed-MoE,
    without capacity limits); ``matrix[i][j]`` is the bytes rank ``i`` sends
    to rank ``j`` (the diagonal stays local).

    Sampling: top-``k`` of ``log(popularity) + Gumbel noise`` per token,
    which draws ``k`` experts without replacement with the stated
    probabilities (the Gumbel-top-k trick), from ``numpy.random.default_rng(seed)``.

    Parameters
    ----------
    ranks : int
        Expert-parallel ranks, >= 1.
    tokens_per_rank : int
        Tokens each rank routes, >= 0.
    bytes_per_token : int
        Bytes of one token's activation (hidden size times element size).
    experts : int, optional
        Experts in all, a multiple of ``ranks`` (default: one per rank).
    top_k : int
        Experts per token, in ``[1, experts]``.
    zipf_s : float
        Skew of the expert popularity, >= 0.
    seed : int
        Seed of the generator.

    Returns
    -------
    numpy.ndarray of int64, shape (ranks, ranks)

    Examples
    --------
    >>> import wafercoll as wc
    >>> m = wc.alltoall.moe_matrix(4, 1000, 2 * 1024, top_k=2, zipf_s=1.2, seed=1)
    >>> m.shape, int(m.sum()) == 4 * 1000 * 2 * 2 * 1024
    ((4, 4), True)
    >>> bool(m[:, 0].sum() > m[:, 3].sum())  # expert 0 is the most popular
    True
    """
    p = as_int(ranks, "ranks", 1, MAX_RANKS)
    tokens = as_int(tokens_per_rank, "tokens_per_rank", 0)
    width = as_int(bytes_per_token, "bytes_per_token", 0)
    n_exp = p if experts is None else as_int(experts, "experts", 1)
    if n_exp % p:
        raise ValueError(
            f"experts = {n_exp} must be a multiple of ranks = {p} (equal experts "
            "per rank)"
        )
    k = as_int(top_k, "top_k", 1, n_exp)
    s = as_real(zipf_s, "zipf_s", 0.0)
    if p * tokens * n_exp > MAX_MOE_SCORES:
        raise ValueError(
            f"ranks * tokens_per_rank * experts = {p * tokens * n_exp} gating "
            f"scores exceed {MAX_MOE_SCORES}; route fewer tokens"
        )
    rng = np.random.default_rng(as_int(seed, "seed", 0))
    log_pop = -s * np.log(np.arange(1, n_exp + 1))
    home = np.arange(n_exp) // (n_exp // p)  # rank of every expert
    out = np.zeros((p, p), dtype=np.int64)
    for i in range(p):
        keys = log_pop + rng.gumbel(size=(tokens, n_exp))
        chosen = np.argpartition(-keys, k - 1, axis=1)[:, :k]
        out[i] = np.bincount(home[chosen].ravel(), minlength=p) * width
    return out


_MOE_KEYS = {
    "tokens": "tokens_per_rank",
    "bytes": "bytes_per_token",
    "zipf": "zipf_s",
    "top_k": "top_k",
    "experts": "experts",
    "seed": "seed",
}


def read_matrix(spec: str | os.PathLike[str], ranks: int) -> np.ndarray:
    """An alltoallv byte matrix from a file or a ``moe:key=value,...`` spec.

    Parameters
    ----------
    spec : str or path
        A ``.npy``, ``.json`` (nested lists) or ``.csv`` file holding a
        ``ranks x ranks`` matrix, or ``moe:`` followed by
        :func:`moe_matrix` options: ``tokens`` (per rank, default 4096),
        ``bytes`` (per token, with units: ``8KiB``; default 8 KiB), ``top_k``,
        ``zipf``, ``experts``, ``seed``.
    ranks : int
        The matrix's side (the machine's ranks).

    Returns
    -------
    numpy.ndarray, shape (ranks, ranks)

    Raises
    ------
    ValueError
        For an unknown ``moe:`` key, a bad value, an unreadable file or a
        matrix of another shape; the message names the spec.

    Examples
    --------
    >>> import wafercoll as wc
    >>> m = wc.alltoall.read_matrix("moe:tokens=100,bytes=1KiB,top_k=1,seed=2", 4)
    >>> m.shape, int(m.sum())
    ((4, 4), 409600)
    """
    from . import units

    text = os.fspath(spec)
    if text.startswith("moe:"):
        opts: dict[str, Any] = {"tokens_per_rank": 4096, "bytes_per_token": 8192}
        for item in filter(None, text[4:].split(",")):
            key, sep, value = item.partition("=")
            name = _MOE_KEYS.get(key.strip())
            if not sep or name is None:
                raise ValueError(
                    f"{text!r}: {item!r} is not key=value with a key of "
                    f"{', '.join(_MOE_KEYS)}"
                )
            try:
                if name == "zipf_s":
                    opts[name] = float(value)
                elif name == "bytes_per_token":
                    opts[name] = units.parse_size(value)
                else:
                    opts[name] = int(value)
            except ValueError as exc:
                raise ValueError(f"{text!r}: {key}: {exc}") from None
        return moe_matrix(ranks, **opts)
    path = Path(text)
    if not path.is_file():
        raise ValueError(f"no such file {text!r} (or write moe:...)")
    try:
        if path.suffix == ".npy":
            m = np.load(path, allow_pickle=False)
        elif path.suffix == ".json":
            m = np.asarray(json.loads(path.read_text(encoding="utf-8")))
        else:
            m = np.loadtxt(path, delimiter=",", ndmin=2)
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {text}: {exc}") from None
    if m.shape != (ranks, ranks):
        raise ValueError(
            f"{text} holds a {'x'.join(map(str, m.shape))} matrix; the machine "
            f"has {ranks} ranks ({ranks}x{ranks} needed)"
        )
    alltoallv_blocks(m)  # the values: non-negative whole bytes
    return m


# -- closed forms -------------------------------------------------------------------
def _predict_shift(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    return (p - 1) * (a + size / p * b)


def _predict_bruck(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    total = 0.0
    k = 0
    d = np.arange(1, p)
    while (1 << k) < p:
        n_k = int(((d >> k) & 1).sum())
        total += a + n_k * size / p * b
        k += 1
    return total


def _predict_dimension_ordered(
    p: int, size: int, topology: Any, network: Any
) -> float | None:
    h = hop_costs(topology, network)
    if h is None or topology is None:
        return None
    a, b, _ = h
    try:
        rows, cols = _grid("dimension_ordered_alltoall", p, topology)
    except ValueError:
        return None
    return (cols - 1) * (a + rows * size / p * b) + (rows - 1) * (
        a + cols * size / p * b
    )


def _register(
    name: str,
    collective: str,
    fn: Any,
    *,
    families: tuple[str, ...] = ("any",),
    predict: Any = None,
    source: str,
    summary: str,
    label: str,
    parameters: dict[str, Any] | None = None,
) -> None:
    """Register ``fn`` under ``name`` for ``collective`` (alltoall or alltoallv)."""
    params = dict(parameters or {})
    if collective == "alltoallv":
        params["matrix"] = None

        def builder(ranks: int, size_bytes: int, **opts: Any) -> Schedule:
            return fn(ranks, size_bytes, collective="alltoallv", **opts)

    else:

        def builder(ranks: int, size_bytes: int, **opts: Any) -> Schedule:
            return fn(ranks, size_bytes, **opts)

    builder.__doc__ = fn.__doc__
    register_algorithm(
        name,
        collective,
        families=families,
        predict=predict,
        source=source,
        summary=summary,
        parameters=params,
        max_ranks=MAX_RANKS,
        label=label,
    )(builder)


_GRIDS = {"mesh": ("mesh",), "torus": ("torus", "ring")}
for _coll in ("alltoall", "alltoallv"):
    _v = _coll == "alltoall"
    _register(
        algorithm_name("generic", "shift", _coll),
        _coll,
        shift_alltoall,
        predict=_predict_shift if _v else None,
        source=_THAKUR + "; pairwise exchange",
        summary="linear shift: in step k rank r sends to r + k, p - 1 steps",
        label="Linear shift",
    )
    _register(
        algorithm_name("generic", "spread", _coll),
        _coll,
        spread_alltoall,
        source=_THAKUR + "; irecv/isend (spread-out)",
        summary="every rank posts its p - 1 sends at once",
        label="Spread-out",
    )
    for _fam, _families in _GRIDS.items():
        _register(
            algorithm_name(_fam, "dimension_ordered", _coll),
            _coll,
            dimension_ordered_alltoall,
            families=_families,
            predict=_predict_dimension_ordered if _v else None,
            source="original: rows then columns, as dimension-ordered routing does",
            summary="linear shift along rows to the target column, then along columns",
            label="Dimension-ordered",
        )
        _register(
            algorithm_name(_fam, "direct", _coll),
            _coll,
            direct_alltoall,
            families=_families,
            source="original: a linear shift over the grid's 2D offsets",
            summary="p - 1 steps, each a translation of the grid",
            label="Direct",
        )
_register(
    "generic_bruck_alltoall",
    "alltoall",
    bruck_alltoall,
    predict=_predict_bruck,
    source=_BRUCK,
    summary="ceil(log2 p) rounds; a block moves 2^k ranks in round k if bit k of "
    "its distance is set",
    label="Bruck",
)
_register(
    "cluster_hierarchical_alltoall",
    "alltoall",
    hierarchical_alltoall,
    families=("cluster",),
    source="original: node-aware aggregation, one message per node pair",
    summary="gather by target node, one message per node pair, scatter in the node",
    label="Hierarchical",
    parameters={"ppn": None, "rank_to_node": None},
)
