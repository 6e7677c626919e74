"""Allreduce schedules on tori, registered with :func:`wafercoll.build`.

The algorithms of the thesis ``002`` (Chapter 5) on a ``rows x cols`` torus
of ranks (row-major, see :mod:`wafercoll.wormhole.swing`), a ring of ``p``
(``dims = (1, p)``) or the 8 x 8 compute grid of the Wormhole n150:

``swing_lo``, ``rd_lo``
    Latency-optimal: at every step each rank exchanges its whole vector with
    its peer and adds what it receives (``log2 p`` steps).
``swing_bo``, ``rd_bo``
    Bandwidth-optimal: a reduce-scatter by the block rule of
    :func:`wafercoll.wormhole.swing.send_mask` (the vector is cut into one block
    per rank; block ``b`` ends at rank ``b``), then an allgather that runs the
    steps backwards with sends and receives swapped (``2 log2 p`` steps).
``shared_memory``
    Every core writes its vector to DRAM, reads slice ``r`` of every other
    vector and adds it, writes its reduced slice back, and every core reads
    the whole result (thesis Section 2.3.3.1 and Listing A.7).
``ring_bidir``
    Hamiltonian-ring allreduce in both directions at once: one half of the
    vector goes round one way, the other half the other way (the thesis's
    future work, Section 7.3).

Sizes that are not powers of two. A side that the peer rule pairs (Swing:
even sides, where the latest-step block rule is exact; recursive doubling:
powers of two) is used as it is. For another side ``d`` there are two
fallbacks, chosen by ``fallback=``:

``"shrink"``
    The recovered details' rule (Section 5.4): ``d`` is shrunk to
    ``d' = 2^floor(log2 d)``; coordinates ``c >= d'`` first add their whole
    vector into ``c - (d - d')`` and wait, the smaller torus runs the
    algorithm, and the results are copied back (dimensions shrunk first to
    last, restored last to first). The folded ranks send a whole vector.
``"ring"`` (bandwidth-optimal variants only)
    Recursive doubling runs on the power-of-two factor ``2^k`` of
    ``d = 2^k m`` and a ring reduce-scatter over the odd factor ``m``
    (an odd Swing side is one ring); see
    :func:`wafercoll.wormhole.swing.reduce_scatter_steps`. Every rank sends
    exactly ``(p - 1) / p`` of the vector in the reduce-scatter, in
    ``k + m - 1`` steps for the side instead of ``ceil(log2 d)`` (plus the
    fold).

The default ``"auto"`` takes ``"ring"`` when ``p = rows * cols`` is even
(the reduce-scatter is then minimal for every even ``p``) and ``"shrink"``
when ``p`` is odd. The latency-optimal variants always shrink (a
full-vector exchange on a side the rule does not pair would count some
ranks twice).

Every step is a synchronisation point, as in the thesis's kernels: a transfer
waits for the previous step's transfers of both its ranks.

Examples
--------
>>> import numpy as np, wafercoll as wc
>>> t = wc.topology.torus(4, 4)
>>> s = wc.build("torus_swing_bo_allreduce", topology=t, size_bytes=16 * 8)
>>> x = np.arange(16 * 16).reshape(16, 16)
>>> bool((wc.execute(s, x) == x.sum(axis=0)).all())
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kit
from .._util import as_int
from ..algorithms import AlgorithmInfo, register
from ..schedule import Schedule
from . import swing as _sw

__all__ = [
    "TORUS_ALGORITHMS",
    "allreduce_schedule",
    "grid_of",
    "hamiltonian_ring",
    "ring_bidir_schedule",
    "shared_memory_schedule",
]

#: Algorithms of this module, in the order the experiments show them.
TORUS_ALGORITHMS = ("swing_lo", "swing_bo", "rd_lo", "rd_bo", "shared_memory")


def registered_name(short: str) -> str:
    """The registry name of a torus algorithm's short name (``"swing_bo"``).

    The short name is the algorithm, then its variant if it has one, as the
    thesis's figures and :data:`TORUS_ALGORITHMS` write them.

    Examples
    --------
    >>> from wafercoll.wormhole.builders import registered_name
    >>> registered_name("swing_bo")
    'torus_swing_bo_allreduce'
    """
    from ..algorithms import algorithms

    for info in algorithms("allreduce"):
        # "swing" alone names no single schedule: only "swing_lo", "swing_bo"
        if info.family == "torus" and info.short_name == short:
            return info.name
    raise ValueError(
        f"unknown torus algorithm {short!r}; short names: "
        f"{', '.join((*TORUS_ALGORITHMS, 'ring_bidir'))}"
    )


_FAMILIES = ("torus", "ring", "wormhole_n150")
_COPY, _REDUCE = 0, 1
#: Largest ring of :func:`ring_bidir_schedule` (it has ``4 p (p - 1)`` transfers).
RING_BIDIR_MAX_RANKS = 1024


def grid_of(p: int | None, topology: Any = None, dims: Any = None) -> tuple[int, int]:
    """The ``(rows, cols)`` grid of ranks a torus builder works on.

    Parameters
    ----------
    p : int or None
        Number of ranks asked for.
    topology : Topology, optional
        A torus gives its shape, a ring ``(1, n)``; a topology with a
        ``compute_shape`` (the Wormhole n150) gives that.
    dims : (int, int), optional
        An explicit grid, used without a topology.

    Returns
    -------
    tuple of int
        ``(rows, cols)`` with ``rows * cols`` ranks.

    Raises
    ------
    ValueError
        If ``p`` does not match the grid (the default ``p`` of
        :func:`wafercoll.build`, the topology's endpoint count, is accepted).
    """
    grid: tuple[int, int] | None = None
    if topology is not None:
        shape = getattr(topology, "compute_shape", None)
        if shape is not None:
            grid = tuple(shape)  # type: ignore[assignment]
        elif topology.kind in ("torus", "mesh", "ring", "line"):
            grid = tuple(topology.shape)  # type: ignore[assignment]
        elif dims is None:
            raise ValueError(f"no grid of ranks on a {topology.kind} topology")
    if dims is not None:
        asked = _sw._check_dims(dims)
        if grid is not None and _sw._check_dims(grid) != asked:
            have = "x".join(map(str, _sw._check_dims(grid)))
            raise ValueError(
                f"dims = {asked} contradicts the topology's {have} grid of "
                f"ranks; give dims or a topology of that shape, not both"
            )
        grid = asked
    if grid is None:
        if p is None:
            raise ValueError("ranks is required without a topology or dims")
        grid = (1, as_int(p, "ranks", 1))
    rows, cols = _sw._check_dims(grid)
    n = rows * cols
    if p is not None and p != n:
        default = topology is not None and p == topology.num_endpoints
        if not default:
            raise ValueError(
                f"ranks = {p} does not match the {rows}x{cols} grid ({n} ranks)"
            )
    return rows, cols


def _block_sizes(size_bytes: int, blocks: int) -> list[int]:
    """Cut ``size_bytes`` into ``blocks`` near-equal blocks (larger ones first)."""
    return kit.split_bytes(size_bytes, blocks).tolist()


def _step(prog: kit.Program, transfers: list[tuple[int, int, Any, Any, int]]) -> None:
    """Add one step of ``(src, dst, lo, hi, op)`` transfers to ``prog``.

    ``lo`` and ``hi`` are a block range, or arrays of several ranges.
    """
    if not transfers:
        return
    src, dst, lo, hi, op = zip(*transfers, strict=True)
    counts = np.asarray([np.size(x) for x in lo], dtype=np.int64)
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    if (counts != 1).any():
        flat = [np.concatenate([np.atleast_1d(v) for v in x]) for x in (lo, hi)]
    else:
        flat = [np.asarray(x, dtype=np.int64).ravel() for x in (lo, hi)]
    prog.step(src, dst, kit.Ranges(flat[0], flat[1], offsets), np.asarray(op))


def _virtual_side(d: int, keep_even: bool) -> int:
    """Side after shrinking: ``d`` if a power of two (or even and kept)."""
    if d & (d - 1) == 0 or (keep_even and d % 2 == 0):
        return d
    return 1 << (d.bit_length() - 1)


def _row_runs(mask: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Half-open ``[lo, hi)`` runs of True in every row of a 2-D bool array."""
    rows = mask.shape[0]
    padded = np.zeros((rows, mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    r, c = np.nonzero(np.diff(padded, axis=1))
    cut = np.searchsorted(r, np.arange(1, rows))
    return [(e[0::2], e[1::2]) for e in np.split(c, cut)]


#: How the bandwidth-optimal variants treat sides their peer rule cannot pair.
FALLBACKS = ("auto", "shrink", "ring")


def allreduce_schedule(
    algorithm: str,
    variant: str,
    dims: Any,
    size_bytes: int,
    first: str = "x",
    fallback: str = "auto",
) -> Schedule:
    """Swing or recursive-doubling allreduce on a ``rows x cols`` torus of ranks.

    Parameters
    ----------
    algorithm : {"swing", "rd"}
        Peer rule (:mod:`wafercoll.wormhole.swing`).
    variant : {"lo", "bo"}
        Latency-optimal (whole vector each step) or bandwidth-optimal
        (reduce-scatter by the block rule, then the mirrored allgather).
    dims : int or (int, int)
        ``(rows, cols)`` or a ring size; any sizes (see the module docstring
        for sizes that are not powers of two).
    size_bytes : int
        Vector size per rank, ``>= 0``.
    first : {"x", "y"}
        Dimension of the first step.
    fallback : {"auto", "shrink", "ring"}
        Bandwidth-optimal variants only: what happens to a side the peer
        rule cannot pair (odd sides; for recursive doubling every side that
        is not a power of two). ``"shrink"``: the shrink/enlarge of the
        recovered details (the folded ranks send their whole vector).
        ``"ring"``: the side's odd factor is reduce-scattered by a ring
        (:func:`wafercoll.wormhole.swing.reduce_scatter_steps`), so every rank
        sends exactly ``(p - 1) / p`` of the vector, in more steps (``m - 1``
        ring steps per odd factor ``m``: for a large ``m`` ``"shrink"`` is
        the choice with fewer steps).
        ``"auto"``: ``"ring"`` when ``rows * cols`` is even, ``"shrink"``
        when it is odd.

    Returns
    -------
    Schedule
        An allreduce over all ``rows * cols`` ranks.
    """
    if algorithm not in _sw.ALGORITHMS:
        raise ValueError(f"algorithm must be 'swing' or 'rd', got {algorithm!r}")
    if variant not in ("lo", "bo"):
        raise ValueError(f"variant must be 'lo' or 'bo', got {variant!r}")
    if fallback not in FALLBACKS:
        raise ValueError(
            f"fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}"
        )
    if variant == "lo" and fallback == "ring":
        raise ValueError(
            "fallback='ring' applies to the bandwidth-optimal variants only; "
            "the latency-optimal ones always shrink"
        )
    rows, cols = _sw._check_dims(dims)
    _sw._check_first(first)
    size = as_int(size_bytes, "size_bytes", 0, 1 << 62)
    p = rows * cols
    if variant == "bo" and (fallback == "ring" or (fallback == "auto" and p % 2 == 0)):
        vdims = (rows, cols)
    else:
        keep_even = algorithm == "swing" and variant == "bo"
        vdims = (_virtual_side(rows, keep_even), _virtual_side(cols, keep_even))
    pv = vdims[0] * vdims[1]
    nblocks = pv if variant == "bo" else 1
    name = f"{algorithm}_{variant}({rows}x{cols}, {size} B)"
    # Step-synchronous: a transfer waits for the previous step of its ranks.
    prog = kit.Program(p, _block_sizes(size, nblocks), rule="step", name=name)
    whole = (0, nblocks)

    def rank(y: int, x: int) -> int:
        return y * cols + x

    # Shrink: dimension 0 (rows), then dimension 1 (columns) of the rows kept.
    folds = []
    e0, e1 = rows - vdims[0], cols - vdims[1]
    if e0:
        folds.append(
            [
                (rank(y, x), rank(y - e0, x), *whole, _REDUCE)
                for y in range(vdims[0], rows)
                for x in range(cols)
            ]
        )
    if e1:
        folds.append(
            [
                (rank(y, x), rank(y, x - e1), *whole, _REDUCE)
                for y in range(vdims[0])
                for x in range(vdims[1], cols)
            ]
        )
    for step in folds:
        _step(prog, step)

    # The virtual torus: virtual rank v -> real rank.
    vy, vx = np.divmod(np.arange(pv), vdims[1])
    real = (vy * cols + vx).tolist()
    if pv > 1 and variant == "lo":
        peers = _sw.peer_table(algorithm, vdims, first)
        for s in range(peers.shape[0]):
            _step(
                prog,
                [(real[v], real[int(peers[s, v])], *whole, _REDUCE) for v in range(pv)],
            )
    elif pv > 1:
        steps = [
            (dst.tolist(), _row_runs(mask))
            for _, dst, mask in _sw.reduce_scatter_steps(algorithm, vdims, first)
        ]
        for dst, runs in steps:  # reduce-scatter
            _step(
                prog,
                [
                    (real[v], real[dst[v]], *runs[v], _REDUCE)
                    for v in range(pv)
                    if runs[v][0].size
                ],
            )
        for dst, runs in reversed(steps):  # mirrored allgather
            # What v sent to dst[v] comes back, fully reduced, the other way.
            back = [
                (real[dst[v]], real[v], *runs[v], _COPY)
                for v in range(pv)
                if runs[v][0].size
            ]
            _step(prog, sorted(back, key=lambda t: t[0]))

    # Restore: the results go back, last shrunk dimension first.
    for step in reversed(folds):
        _step(prog, [(dst, src, *whole, _COPY) for src, dst, *_ in step])
    return prog.schedule()


def hamiltonian_ring(dims: Any) -> list[int]:
    """A cycle through every rank of a ``rows x cols`` torus, as a rank order.

    With an even number of rows (or columns) it is a snake whose every hop is
    a neighbour: along row 0, back and forth over columns ``1 .. cols-1`` of
    the other rows, and home up column 0. With both odd, every row is walked
    rightwards (wrapping) starting below the previous row's last rank; only
    the closing hop is longer than one link. A ring of ``p`` is ``0 .. p-1``.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> wormhole.hamiltonian_ring((2, 3))
    [0, 1, 2, 5, 4, 3]
    """
    rows, cols = _sw._check_dims(dims)
    return kit.torus_cycle(rows, cols).tolist()


def ring_bidir_schedule(dims: Any, size_bytes: int) -> Schedule:
    """Bidirectional Hamiltonian-ring allreduce on a ``rows x cols`` torus.

    The vector is cut in two halves, each into ``p`` blocks. Half 0 runs the
    ring reduce-scatter and allgather along :func:`hamiltonian_ring`, half 1
    along the same ring reversed, in the same ``2 (p - 1)`` steps; each rank
    sends ``2 (p - 1) / p`` of its vector in total. As in the other torus
    builders every step is a synchronisation point: a transfer waits for the
    previous step's transfers of both its ranks. Built with array operations
    (``4 p (p - 1)`` transfers; up to ``32 x 32``).
    """
    rows, cols = _sw._check_dims(dims)
    size = as_int(size_bytes, "size_bytes", 0, 1 << 62)
    p = rows * cols
    if p > RING_BIDIR_MAX_RANKS:
        raise ValueError(
            f"ring_bidir: rows * cols = {p} exceeds the limit of "
            f"{RING_BIDIR_MAX_RANKS} ranks"
        )
    order = np.asarray(hamiltonian_ring((rows, cols)), dtype=np.int64)
    halves = _block_sizes(size - size // 2, p) + _block_sizes(size // 2, p)
    name = f"ring_bidir({rows}x{cols}, {size} B)"
    if p == 1:
        return Schedule(1, halves, "allreduce", name=name)
    # Two rings, one each way round the cycle, on the two halves of the
    # vector; blocks are named by the rank whose position the kit's ring
    # numbers them by. At every step position i sends on half 0 then half 1.
    prog = kit.Program(p, halves, rule="step", name=name)
    ways = (order, order[::-1])
    for fwd, bwd in zip(*(kit.ring_steps(w) for w in ways), strict=True):
        src = np.stack([fwd.src, bwd.src[::-1]], axis=1)
        dst = np.stack([fwd.dst, bwd.dst[::-1]], axis=1)
        block = np.stack([order[fwd.block], p + ways[1][bwd.block][::-1]], axis=1)
        prog.step(src.ravel(), dst.ravel(), block.ravel(), fwd.op)
    return prog.schedule()


def shared_memory_schedule(p: int, size_bytes: int) -> Schedule:
    """Shared-memory allreduce of ``p`` cores through DRAM.

    Ranks ``0 .. p-1`` are the cores; ranks ``p + q`` (``q < p``) are the DRAM
    region that holds core ``q``'s vector and rank ``2 p`` the region of the
    result. The DRAM ranks hold no input (they are not participants); on a
    topology they are the endpoints behind the DRAM port (see
    :func:`wafercoll.wormhole.with_dram` and the Wormhole n150).

    Steps (thesis Section 5.2.2): every core copies its vector to its region;
    core ``r`` reads slice ``r`` of every other region and adds it; it writes
    its reduced slice to the result region; every core reads the whole
    result. The vector is cut into ``p`` slices.
    """
    n = as_int(p, "p", 1, _sw.MAX_GRID_RANKS)
    size = as_int(size_bytes, "size_bytes", 0, 1 << 62)
    prog = kit.Program(
        2 * n + 1,
        _block_sizes(size, n),
        rule="step",
        participants=range(n),
        name=f"shared_memory({n} cores, {size} B)",
    )
    r = np.arange(n)
    prog.step(r, n + r, (0, n), "copy")
    # The reads of one core from the regions are sequential (one NoC reader).
    for k in range(1, n):
        prog.step(n + (r + k) % n, r, r, "reduce")
    prog.step(r, 2 * n, r, "copy")
    prog.step(2 * n, r, (0, n), "copy")
    return prog.schedule()


# ---------------------------------------------------------------- registry


def _cores(p: int, topology: Any) -> int:
    """Core count: a DRAM-backed topology's ``num_cores`` for the default ranks."""
    cores = getattr(topology, "num_cores", None)
    if cores is not None and p == topology.num_endpoints:
        return int(cores)
    return p


def _grid_builder(algorithm: str, variant: str) -> Any:
    def builder(
        p: int,
        size: int,
        *,
        topology: Any = None,
        first: str = "x",
        dims: Any = None,
        fallback: str = "auto",
    ) -> Schedule:
        grid = grid_of(_cores(p, topology), topology, dims)
        return allreduce_schedule(algorithm, variant, grid, size, first, fallback)

    return builder


def _ring_bidir_builder(
    p: int, size: int, *, topology: Any = None, dims: Any = None
) -> Schedule:
    return ring_bidir_schedule(grid_of(_cores(p, topology), topology, dims), size)


def _shared_memory_builder(
    p: int, size: int, *, topology: Any = None, dims: Any = None
) -> Schedule:
    cores = _cores(p, topology)
    if topology is not None or dims is not None:
        rows, cols = grid_of(cores, topology, dims)
        cores = rows * cols
    return shared_memory_schedule(cores, size)


_THESIS = "Allreduce on the Tenstorrent Wormhole n150 (thesis 002)"
_SWING = "De Sensi et al., Swing, NSDI 2024; " + _THESIS
#: The thesis's names of the algorithms (latency- and bandwidth-optimal
#: variants are suffixed LO and BO, Section 2.3.3).
_LABELS = {"swing": "Swing", "rd": "RD"}
for _alg, _var, _src, _summary in (
    (
        "swing",
        "lo",
        _SWING + ", Section 3.2.1",
        "Swing peers (+-1, 3, 5, 11, ... per dimension), whole vector every step",
    ),
    (
        "swing",
        "bo",
        _SWING + ", Section 3.2.1, Listing 3.1",
        "Swing reduce-scatter by the reach block rule, then mirrored allgather",
    ),
    (
        "rd",
        "lo",
        _THESIS + ", Section 2.3.3.3",
        "recursive doubling per dimension (XOR 2^k), whole vector every step",
    ),
    (
        "rd",
        "bo",
        _THESIS + ", Section 2.3.3.3",
        "recursive-doubling reduce-scatter by the block rule, then allgather",
    ),
):
    register(
        AlgorithmInfo.of(
            "torus",
            _alg,
            "allreduce",
            variant=_var,
            families=_FAMILIES,
            source=_src,
            summary=_summary,
            builder=_grid_builder(_alg, _var),
            parameters={"first": "x", "dims": None, "fallback": "auto"},
            max_ranks=_sw.MAX_GRID_RANKS,
            label=f"{_LABELS[_alg]} {_var.upper()}",
        )
    )
register(
    AlgorithmInfo(
        "torus_shared_memory_allreduce",
        "allreduce",
        (*_FAMILIES, "torus_dram"),
        _THESIS + ", Sections 2.3.3.1 and 5.2.2",
        "vectors to DRAM, each core reduces its slice, writes it, all read the result",
        _shared_memory_builder,
        {"dims": None},
        max_ranks=_sw.MAX_GRID_RANKS * 2 + 1,
        label="Shared memory",
    )
)
register(
    AlgorithmInfo(
        "torus_ring_bidir_allreduce",
        "allreduce",
        _FAMILIES,
        _THESIS + ", Section 7.3 (future work); Patarasuk and Yuan 2009",
        "Hamiltonian-ring allreduce, half the vector each way round",
        _ring_bidir_builder,
        {"dims": None},
        max_ranks=RING_BIDIR_MAX_RANKS,
        label="Bidirectional ring",
    )
)
