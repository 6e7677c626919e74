"""AllReduce schedules on meshes of chiplets, registered with :func:`wafercoll.build`.

Every builder takes ``topology=wc.topology.mesh(rows, cols)`` and uses all its
nodes as ranks (rank = node id ``row * cols + col``); transfers between
non-neighbours are routed by the mesh (X then Y). Names carry a ``mesh_``
prefix (``ring`` is the generic ring of the registry):

==================  ===========================================================
name                algorithm (source)
==================  ===========================================================
mesh_ring           unidirectional ring over a Hamiltonian cycle (even-sized
                    mesh) or the boustrophedon path (odd-sized mesh, a line),
                    whose last rank reaches the first over several hops
mesh_ring_bi        two rings in opposite directions, half the data each
                    (even-sized meshes with both sides >= 2)
mesh_ring_bi_odd    RingBiOdd (paper, Section IV, Algorithm 1): two opposite
                    rings over the ``N - 1`` nodes of a cycle without one node;
                    the excluded node sends its parts to a ring neighbour (one
                    per direction) and gets the result back from it
mesh_ring_2d        hierarchical ring (Section II-B): half the data rows then
                    columns, the other half columns then rows
mesh_dbtree         NCCL's double binary tree over the row-major ranks,
                    chunks pipelined (recovered details 2.5, 2.6)
mesh_multitree      MultiTree's greedy trees (recovered details 2.3, 2.4)
mesh_tto            TTO: three edge-disjoint trees at three corners, chunks
                    pipelined (Section V, Algorithm 2)
==================  ===========================================================

Every builder is a :class:`wafercoll.kit.Program` under the ``"cells"``
rule (the tree builders through :func:`wafercoll.kit.trees_program`):
dependencies come from a program order of single-block transfers (data,
write order, anti-dependences and stream order on a link). Reductions of two
children into one buffer are ordered, as the schedule semantics require;
the simulator's ``"dataflow"`` reading (both presets of
:mod:`wafercoll.mcm.machine`) still lets them overlap.

Excluded nodes
--------------
``mesh_tto`` leaves the bottom-left corner out of the training (Section V-B):
it holds no input and needs no output (``participants`` omits it), but relays
data in the trees rooted at the top-left and bottom-right corners.
``mesh_ring_bi_odd`` excludes a node from the *rings* only: the node still
holds input and receives the result.

Message counts of the artifact
------------------------------
``mesh_ring_bi_odd`` with ``message_bytes`` set sizes every part as the MCM
paper's BookSim driver does (sabuj7177/TTO_HPCA_2024, commit 156128c):
``src/hmc.py`` lines 99-100 give every flow ``base = ceil(S / (message_bytes
N))`` messages, ``src/allreduce/ring_odd_bi_allreduce.py`` (``datasize``)
scales them by ``N / (2 (N - 1))``, and the send loop of ``src/hmc.py`` (lines
458, 569) sends whole messages, ``ceil(base N / (2 (N - 1)))`` of them. Every
one of the ``2 (N - 1)`` parts is that many messages (the vector grows to
``2 (N - 1)`` times it); the link flits this gives equal the 22 committed
``ring_odd_bi`` runs of Fig. 8 exactly. The default (``None``) splits
``size_bytes`` evenly.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int
from ..algorithms import AlgorithmInfo, register
from ..kit.orders import excluded_node, hamiltonian_cycle, hamiltonian_path
from ..schedule import Schedule
from .machine import TTO_CHUNK_BYTES
from .trees import double_binary_tree, multitree, tto_trees

__all__ = ["MESH_ALGORITHMS", "mesh_shape"]

#: Registered names of the mesh AllReduce builders.
MESH_ALGORITHMS = (
    "mesh_ring_allreduce",
    "mesh_ring_bi_allreduce",
    "mesh_ring_bi_odd_allreduce",
    "mesh_ring_2d_allreduce",
    "mesh_dbtree_allreduce",
    "mesh_multitree_allreduce",
    "mesh_tto_allreduce",
)
_MAX_CHUNKS = 1 << 21
_MAX_SIZE = 1 << 40
_PHASES = ("allreduce", "reduce_scatter", "allgather")


def mesh_shape(name: str, p: int, topology: Any) -> tuple[int, int]:
    """``(rows, cols)`` of the mesh a builder runs on, checked.

    The topology must be :func:`wafercoll.topology.mesh` with one rank per
    node and at least two nodes; ``name`` (the builder's) heads the error.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.mcm.mesh_shape("mesh_tto_allreduce", 6, wc.topology.mesh(2, 3))
    (2, 3)
    >>> wc.mcm.mesh_shape("mesh_tto_allreduce", 4, wc.topology.mesh(2, 3))
    Traceback (most recent call last):
        ...
    ValueError: mesh_tto_allreduce uses every node of the 2x3 mesh: ranks must
    be 6, got 4
    """
    if topology is None or getattr(topology, "kind", None) != "mesh":
        raise ValueError(f"{name} needs topology=wafercoll.topology.mesh(rows, cols)")
    m, n = topology.shape
    if p != m * n:
        raise ValueError(
            f"{name} uses every node of the {m}x{n} mesh: ranks must be {m * n}, "
            f"got {p}"
        )
    if m * n < 2:
        raise ValueError(
            f"{name}: a 1x1 mesh holds one chiplet; no mesh algorithm applies "
            "(an allreduce of one rank moves nothing)"
        )
    return m, n


def _split(total: int, parts: int) -> np.ndarray:
    """``parts`` non-empty near-equal blocks of ``total`` bytes (the kit's splitter)."""
    if total > _MAX_SIZE:
        raise ValueError(f"size_bytes = {total} exceeds {_MAX_SIZE} (1 TiB)")
    if total < 1:
        raise ValueError(
            "size_bytes must be >= 1: these builders cut the data into non-empty chunks"
        )
    if total < parts:
        raise ValueError(
            f"size_bytes = {total} cannot fill {parts} non-empty blocks; use "
            f"size_bytes >= {parts}"
        )
    return kit.split_bytes(total, parts, allow_empty=False)


def _phase(name: str, phase: Any) -> str:
    if phase not in _PHASES:
        raise ValueError(
            f"{name}: phase must be one of {', '.join(_PHASES)}; got {phase!r}"
        )
    return str(phase)


def _chunks(name: str, size: int, chunk_bytes: Any, default: int | None) -> int:
    """Number of chunks for ``chunk_bytes`` (``None``: ``default`` bytes)."""
    if chunk_bytes is None:
        if default is None:
            return 1
        k = min(default, max(size, 1))
    else:
        k = as_int(chunk_bytes, "chunk_bytes", 1)
        if k > size:
            raise ValueError(
                f"{name}: chunk_bytes = {k} exceeds size_bytes = {size}; use "
                f"chunk_bytes <= {size} (or mesh_multitree, which does not "
                "chunk the data)"
            )
    c = -(-size // k)
    if c > _MAX_CHUNKS:
        raise ValueError(
            f"{name}: chunk_bytes = {k} makes {c} chunks of {size} bytes; at most "
            f"{_MAX_CHUNKS} are allowed (chunk_bytes >= {-(-size // _MAX_CHUNKS)})"
        )
    return c


# ---------------------------------------------------------------- rings


def _ring_order(m: int, n: int) -> np.ndarray:
    if m >= 2 and n >= 2 and (m * n) % 2 == 0:
        return hamiltonian_cycle(m, n)
    return hamiltonian_path(m, n)


def _program(
    name: str, p: int, sizes: np.ndarray, phase: str, owners: np.ndarray, **kw: Any
) -> kit.Program:
    """The program of a mesh builder: rule ``"cells"``, the phase's collective."""
    return kit.Program(
        p,
        sizes,
        phase,
        rule="cells",
        owners=None if phase == "allreduce" else owners.tolist(),
        name=name,
        **kw,
    )


def _ring(
    p: int, size: int, *, topology: Any = None, phase: str = "allreduce"
) -> Schedule:
    m, n = mesh_shape("mesh_ring_allreduce", p, topology)
    ph = _phase("mesh_ring_allreduce", phase)
    order = _ring_order(m, n)
    name = f"mesh_ring({m}x{n}, {size} B)"
    prog = _program(name, p, _split(size, p), ph, kit.ring_owners(order))
    kit.ring_allreduce(prog, order, phase=ph, stream=0)
    return prog.schedule()


def _ring_bi(
    p: int, size: int, *, topology: Any = None, phase: str = "allreduce"
) -> Schedule:
    m, n = mesh_shape("mesh_ring_bi_allreduce", p, topology)
    ph = _phase("mesh_ring_bi_allreduce", phase)
    if m < 2 or n < 2:
        raise ValueError(
            f"mesh_ring_bi needs a Hamiltonian cycle, which a {m}x{n} line lacks; "
            "use mesh_ring_allreduce (or mesh_tto_allreduce, two trees from the ends)"
        )
    if (m * n) % 2:
        raise ValueError(
            f"mesh_ring_bi needs a Hamiltonian cycle, which the odd-sized {m}x{n} "
            "mesh lacks; use mesh_ring_bi_odd_allreduce (RingBiOdd) or "
            "mesh_ring_allreduce"
        )
    ways = (hamiltonian_cycle(m, n), hamiltonian_cycle(m, n)[::-1].copy())
    owners = np.concatenate([kit.ring_owners(w) for w in ways])
    name = f"mesh_ring_bi({m}x{n}, {size} B)"
    prog = _program(name, p, _split(size, 2 * p), ph, owners)
    for d, w in enumerate(ways):  # one ring after the other in program order
        kit.ring_allreduce(prog, w, base=d * p, phase=ph, stream=2 * d)
    return prog.schedule()


def _ring_bi_odd(
    p: int,
    size: int,
    *,
    topology: Any = None,
    exclude: Any = "corner",
    message_bytes: Any = None,
    phase: str = "allreduce",
) -> Schedule:
    m, n = mesh_shape("mesh_ring_bi_odd_allreduce", p, topology)
    ph = _phase("mesh_ring_bi_odd_allreduce", phase)
    if m < 3 or n < 3 or (m * n) % 2 == 0:
        raise ValueError(
            f"mesh_ring_bi_odd is for odd-sized meshes (both sides odd, >= 3); the "
            f"{m}x{n} mesh "
            + (
                "has a Hamiltonian cycle: use mesh_ring_bi_allreduce"
                if m >= 2 and n >= 2 and (m * n) % 2 == 0
                else "is a line: use mesh_ring"
            )
        )
    E = excluded_node(m, n, exclude)
    cyc = hamiltonian_cycle(m, n, E)
    K = cyc.size
    er, ec = divmod(E, n)
    cand = [
        v
        for v, ok in (
            (E - 1, ec > 0),
            (E + 1, ec < n - 1),
            (E - n, er > 0),
            (E + n, er < m - 1),
        )
        if ok
    ]
    merge = cand[:2]  # west/east first (the centre's left and right), else north
    orders = [cyc, cyc[::-1].copy()]
    mpos = [int(np.flatnonzero(orders[d] == merge[d])[0]) for d in (0, 1)]
    nxt = [np.roll(o, -1) for o in orders]
    owners = np.concatenate([kit.ring_owners(o) for o in orders])
    if message_bytes is None:
        sizes = _split(size, 2 * K)
    else:  # the artifact driver's message count per flow (module docstring)
        msg = as_int(message_bytes, "message_bytes", 1)
        base = -(-as_int(size, "size_bytes", 1) // (msg * p))
        sizes = np.full(2 * K, -(-base * p // (2 * K)) * msg, dtype=np.int64)
    prog = _program(
        f"mesh_ring_bi_odd({m}x{n}, {int(sizes.sum())} B, exclude={E})",
        p,
        sizes,
        ph,
        owners,
    )
    rs = ph in ("allreduce", "reduce_scatter")
    ag = ph in ("allreduce", "allgather")

    pos = np.arange(K)

    def ring_step(d: int, s: int, reduce: bool) -> None:
        b = (pos - s) % K if reduce else (pos + 1 - s) % K
        op = "reduce" if reduce else "copy"
        prog.step(orders[d], nxt[d], d * K + b, op, stream=2 * d + int(not reduce))

    def add(src: int, dst: int, block: int, op: str, stream: int) -> None:
        prog.send(src, dst, block, op, stream=stream)

    if rs:
        for d in (0, 1):  # timestep 1: one part to each merge node
            add(E, merge[d], d * K + mpos[d], "reduce", 4 + d)
        for s in range(K - 1):
            for d in (0, 1):
                ring_step(d, s, True)
            for d in (0, 1):  # the part the merge node forwards next (or keeps)
                add(E, merge[d], d * K + (mpos[d] - s - 1) % K, "reduce", 4 + d)
    if ag:
        for d in (0, 1):  # the merge node's own result first
            add(merge[d], E, d * K + (mpos[d] + 1) % K, "copy", 6 + d)
        for s in range(K - 1):
            for d in (0, 1):
                ring_step(d, s, False)
            for d in (0, 1):
                add(merge[d], E, d * K + (mpos[d] - s) % K, "copy", 6 + d)
    return prog.schedule()


def _ring_2d(p: int, size: int, *, topology: Any = None) -> Schedule:
    m, n = mesh_shape("mesh_ring_2d_allreduce", p, topology)
    N = m * n
    sizes = _split(size, 2 * N)
    src: list[int] = []
    dst: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    op: list[int] = []
    st: list[int] = []

    def add(a: int, b: int, blo: int, bhi: int, reduce: int, stream: int) -> None:
        src.append(a)
        dst.append(b)
        lo.append(blo)
        hi.append(bhi)
        op.append(reduce)
        st.append(stream)

    # Half A (blocks 0 .. N-1): block k * m + l is sub-block l (over the
    # column ring) of row-block k (over the row ring). Half B (N .. 2N-1):
    # block N + k * n + l is sub-block l (row ring) of column-block k.
    def rows_of(i: int) -> list[int]:
        return [i * n + j for j in range(n)]

    def cols_of(j: int) -> list[int]:
        return [i * n + j for i in range(m)]

    def ring(group: list[int], blocks: Any, reduce: bool, stream: int) -> None:
        K = len(group)
        for s in range(K - 1):
            for i in range(K):
                k = (i - s) % K if reduce else (i + 1 - s) % K
                b0, b1 = blocks(group[i], k)
                add(group[i], group[(i + 1) % K], b0, b1, int(reduce), stream)

    A, B = 0, N
    # first dimension: whole row-blocks (A) / column-blocks (B)
    row_blk = lambda v, k: (A + k * m, A + (k + 1) * m)  # noqa: E731
    col_blk = lambda v, k: (B + k * n, B + (k + 1) * n)  # noqa: E731
    # second dimension: the sub-blocks of the block the node owns
    a_sub = lambda v, k: (A + ((v % n + 1) % n) * m + k,) * 2  # noqa: E731
    b_sub = lambda v, k: (B + ((v // n + 1) % m) * n + k,) * 2  # noqa: E731

    def sub(f: Any) -> Any:
        return lambda v, k: (f(v, k)[0], f(v, k)[0] + 1)

    for i in range(m):
        ring(rows_of(i), row_blk, True, 0)
    for j in range(n):
        ring(cols_of(j), col_blk, True, 4)
    for j in range(n):
        ring(cols_of(j), sub(a_sub), True, 1)
    for i in range(m):
        ring(rows_of(i), sub(b_sub), True, 5)
    for j in range(n):
        ring(cols_of(j), sub(a_sub), False, 2)
    for i in range(m):
        ring(rows_of(i), sub(b_sub), False, 6)
    for i in range(m):
        ring(rows_of(i), row_blk, False, 3)
    for j in range(n):
        ring(cols_of(j), col_blk, False, 7)
    prog = kit.Program(p, sizes, rule="cells", name=f"mesh_ring_2d({m}x{n}, {size} B)")
    prog.step(src, dst, (lo, hi), np.asarray(op), stream=st)
    return prog.schedule()


# ---------------------------------------------------------------- trees


def _tree_schedule(
    name: str,
    p: int,
    size: int,
    parents: np.ndarray,
    chunks: int,
    phase: str,
    participants: Any,
) -> Schedule:
    sizes = _split(size, chunks * len(parents))
    return kit.trees_program(
        parents, sizes, phase=phase, participants=participants, name=name
    )


def _tto(
    p: int,
    size: int,
    *,
    topology: Any = None,
    chunk_bytes: Any = None,
    phase: str = "allreduce",
) -> Schedule:
    m, n = mesh_shape("mesh_tto_allreduce", p, topology)
    ph = _phase("mesh_tto_allreduce", phase)
    C = _chunks("mesh_tto_allreduce", size, chunk_bytes, TTO_CHUNK_BYTES)
    trees = tto_trees(m, n)
    part = None
    if trees.excluded is not None:
        part = [v for v in range(p) if v != trees.excluded]
    return _tree_schedule(
        f"mesh_tto({m}x{n}, {size} B, {C} chunks)",
        p,
        size,
        trees.parents,
        C,
        ph,
        part,
    )


def _dbtree(
    p: int,
    size: int,
    *,
    topology: Any = None,
    chunk_bytes: Any = None,
    phase: str = "allreduce",
) -> Schedule:
    m, n = mesh_shape("mesh_dbtree_allreduce", p, topology)
    ph = _phase("mesh_dbtree_allreduce", phase)
    t0, t1 = double_binary_tree(p)
    if chunk_bytes is None:  # N flows, half on each tree (recovered details 2.6)
        C = min(-(-p // 2), max(size // 2, 1))
    else:
        C = _chunks("mesh_dbtree_allreduce", -(-size // 2), chunk_bytes, None)
    return _tree_schedule(
        f"mesh_dbtree({m}x{n}, {size} B, {C} chunks per tree)",
        p,
        size,
        np.stack([t0, t1]),
        C,
        ph,
        None,
    )


def _multitree(
    p: int,
    size: int,
    *,
    topology: Any = None,
    chunk_bytes: Any = None,
    sort: bool = True,
    rule: str = "reference",
    sync: str = "dataflow",
    phase: str = "allreduce",
) -> Schedule:
    m, n = mesh_shape("mesh_multitree_allreduce", p, topology)
    ph = _phase("mesh_multitree_allreduce", phase)
    if sync not in ("dataflow", "step"):
        raise ValueError(f"sync must be 'dataflow' or 'step', got {sync!r}")
    C = _chunks("mesh_multitree_allreduce", size, chunk_bytes, None)
    mt = multitree(m, n, sort=sort, rule=rule)
    T = mt.steps
    sizes = _split(size, C * p)
    rr, vv = np.nonzero(mt.parents >= 0)
    tt = mt.times[rr, vv]
    qq = mt.parents[rr, vv]
    rs = np.lexsort((rr, T - 1 - tt))  # reduce-scatter step T - 1 - t
    ag = np.lexsort((rr, tt))  # allgather step t
    parts = []  # (src, dst, tree, op, stream, step) per phase of one chunk
    if ph in ("allreduce", "reduce_scatter"):
        parts.append((vv[rs], qq[rs], rr[rs], 1, 0, T - 1 - tt[rs]))
    if ph in ("allreduce", "allgather"):
        off = T if ph == "allreduce" else 0
        parts.append((qq[ag], vv[ag], rr[ag], 0, 1, off + tt[ag]))
    one = {
        "src": np.concatenate([a[0] for a in parts]),
        "dst": np.concatenate([a[1] for a in parts]),
        "tree": np.concatenate([a[2] for a in parts]),
        "op": np.concatenate([np.full(a[0].size, a[3]) for a in parts]),
        "stream": np.concatenate([np.full(a[0].size, a[4]) for a in parts]),
        "step": np.concatenate([a[5] for a in parts]),
    }
    E = one["src"].size
    per_chunk = T * len(parts)
    src = np.tile(one["src"], C)
    dst = np.tile(one["dst"], C)
    blk = np.tile(one["tree"], C) + np.repeat(np.arange(C) * p, E)
    op = np.tile(one["op"], C)
    st = np.tile(one["stream"], C)
    gstep = np.tile(one["step"], C) + np.repeat(np.arange(C) * per_chunk, E)
    extra = None
    if sync == "step":
        extra = _barriers(gstep.astype(np.int64))
    owners = np.tile(np.arange(p, dtype=np.int64), C)
    prog = _program(
        f"mesh_multitree({m}x{n}, {size} B, T={T}, {C} chunks, {sync})",
        p,
        sizes,
        ph,
        owners,
    )
    prog.step(src, dst, blk, op, stream=st, deps=extra)
    return prog.schedule()


def _barriers(step: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every transfer depends on all transfers of the previous (non-empty) step."""
    T = step.size
    uniq, start = np.unique(step, return_index=True)
    end = np.append(start[1:], T)
    which = np.searchsorted(uniq, step)  # index of the transfer's step
    prev = which - 1
    counts = np.where(prev >= 0, (end - start)[np.maximum(prev, 0)], 0)
    off = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    first = np.where(prev >= 0, start[np.maximum(prev, 0)], 0)
    base = np.repeat(first - off[:-1], counts)
    vals = base + np.arange(off[-1], dtype=np.int64)
    return vals, off


_SRC = (
    "Laskar, Majhi et al., Enhancing Collective Communication in MCM "
    "Accelerators for Deep Learning Training, HPCA 2024"
)
#: The paper's label of each algorithm and the names the authors' BookSim
#: artifact gives it (on even meshes, on odd meshes; its
#: ``src/allreduce/*.py``).
_NAMES = {
    "ring": ("Ring", ("ring", "ring_odd")),
    "ring_bi": ("RingBiEven", ("ring_bi", "ring_bi")),
    "ring_bi_odd": ("RingBiOdd", ("ring_odd_bi", "ring_odd_bi")),
    "ring_2d": ("Ring-2D", ("ring2dn", "ring2dn")),
    "dbtree": ("DBTree", ("dtree", "dtree")),
    "multitree": ("MultiTree", ("multitree", "multitree")),
    "tto": ("TTO", ("mesh_overlap_2d_1", "mesh_overlap_2d_1")),
}

for _alg, _fn, _summary, _params, _where in (
    (
        "ring",
        _ring,
        "unidirectional ring over a Hamiltonian cycle, or the snake path",
        {"phase": "allreduce"},
        "Section II-B (Ring)",
    ),
    (
        "ring_bi",
        _ring_bi,
        "two opposite rings over a Hamiltonian cycle, half the data each",
        {"phase": "allreduce"},
        "Section III-B (Bidirectional Ring, RingBiEven)",
    ),
    (
        "ring_bi_odd",
        _ring_bi_odd,
        "RingBiOdd: opposite rings over N - 1 nodes, the excluded node merged",
        {"exclude": "corner", "message_bytes": None, "phase": "allreduce"},
        "Section IV, Algorithm 1",
    ),
    (
        "ring_2d",
        _ring_2d,
        "hierarchical ring: half rows then columns, half columns then rows",
        {},
        "Section II-B (Ring-2D)",
    ),
    (
        "dbtree",
        _dbtree,
        "NCCL double binary tree over row-major ranks, chunks pipelined",
        {"chunk_bytes": None, "phase": "allreduce"},
        "Section II-B (DBTree); recovered details 2.5-2.6",
    ),
    (
        "multitree",
        _multitree,
        "MultiTree: one greedy tree per node, link-conflict-free steps",
        {
            "chunk_bytes": None,
            "sort": True,
            "rule": "reference",
            "sync": "dataflow",
            "phase": "allreduce",
        },
        "Section II-B (MultiTree, ISCA 2021); recovered details 2.3-2.4",
    ),
    (
        "tto",
        _tto,
        "TTO: three disjoint corner trees, chunks pipelined and overlapped",
        {"chunk_bytes": None, "phase": "allreduce"},
        "Section V, Algorithm 2",
    ),
):
    # One registration per collective: the allreduce, and for the algorithms
    # with separate phases their reduce-scatter and allgather on their own.
    _phased = "phase" in _params
    _opts = {k: v for k, v in _params.items() if k != "phase"}
    for _coll in _PHASES if _phased else ("allreduce",):
        register(
            AlgorithmInfo.of(
                "mesh",
                _alg,
                _coll,
                families=("mesh",),
                source=f"{_SRC}, {_where}",
                summary=(
                    _summary if _coll == "allreduce" else f"{_coll} phase: {_summary}"
                ),
                builder=functools.partial(_fn, phase=_coll) if _phased else _fn,
                parameters=_opts,
                max_ranks=1 << 16,
                label=_NAMES[_alg][0],
                artifact_names=_NAMES[_alg][1],
            )
        )
