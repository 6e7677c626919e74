"""TTO and RingBiOdd as the MCM paper's BookSim driver runs them.

The artifact of *Enhancing Collective Communication in MCM Accelerators for
Deep Learning Training* (Laskar, Majhi et al., HPCA 2024; repository
sabuj7177/TTO_HPCA_2024, commit 156128c) runs TTO (``mesh_overlap_2d_1``)
and RingBiOdd (``ring_odd_bi``) with the same trees and rings as the paper's
builders (:mod:`wafercoll.mcm.builders`), but its driver orders and sizes
their transfers its own way. Registered as ``mesh_tto_artifact_allreduce``
(label "TTO (artifact)") and ``mesh_ring_bi_odd_artifact_allreduce``
("RingBiOdd (artifact)").

TTO: concurrent children, one barrier
-------------------------------------
``src/hmc_fermat.py`` drives TTO link by link: a chiplet starts the next
transfer of a link once the previous one has arrived whole (``link_dict``,
lines 425 and 574) and the transfer's children have arrived and been
aggregated (``finish_aggregation_update``, lines 323-377). Transfers from
several children into one parent travel at once, each on its own link and
network interface (``src/allreduce/mesh_allreduce_2d_overlap_1.py``,
``get_ni``); only their aggregations take turns (one ``aggregating`` state
per chiplet). A chiplet turns to the allgather only when every root has
reduced every chunk (``all_sd_final_dep_resolved`` over the shared
``rs2_final_dep`` of all roots, lines 396-404): the reduce-scatter of the
whole vector ends before any allgather starts. The paper's builder orders
two children's reductions into one block (the schedule semantics need it)
and lets a chunk's allgather start as soon as that chunk is reduced;
measured in the artifact's own BookSim (two 8-message flows into one
chiplet from two neighbours both arrive after 2,864 cycles, as one alone
does), its reductions do overlap. These dependencies are the driver's, not
an AllReduce's: two reductions into one block are unordered, a race
:func:`wafercoll.verify` refuses. So ``dependencies="artifact"`` gives the
driver's order (what the comparisons with the artifact's cycles run), and the
default ``dependencies="data"`` orders the reductions of siblings into one
chiplet, one after the other in the trees' order, which makes the schedule a
verified AllReduce (and slower wherever siblings would have overlapped).
Either order builds up to 2^25 transfers. Verifying the ``"data"`` order
takes time linear in its transfers, although its links' chains run across
all the chunks and the barrier joins the two phases: about 0.2 s for the
1.3 million transfers of 256 MiB on 9x9 in 96 KiB chunks.

With ``message_bytes`` set, every chunk of every tree is
``ceil(chunk / (3 message_bytes))`` whole messages, as the driver sizes them
(``src/simulate.py`` lines 310-311: ``partial_tree_message``), the last chunk
too (the vector grows to ``chunks x 3`` times that).

RingBiOdd: whole messages twice
-------------------------------
:func:`wafercoll.build` of ``mesh_ring_bi_odd_allreduce`` with the centre
excluded (``src/allreduce/find_odd_ring.py``) and ``message_bytes``: every part
is as many whole messages as the driver sends (see
:mod:`wafercoll.mcm.builders`).

Examples
--------
With the children of a node reducing at once and the allgather after the
whole reduce-scatter, ``C`` chunks over trees of height ``h`` take
``2 (h + C - 1)`` unit timesteps (6x6: ``h = 10``):

>>> import wafercoll as wc
>>> m = wc.topology.mesh(6, 6)
>>> name = "mesh_tto_artifact_allreduce"
>>> s = wc.build(name, topology=m, size_bytes=12, chunk_bytes=3,
...              dependencies="artifact")
>>> wc.simulate(s, m, wc.NetworkModel.unit_timestep(1)).cycles
26.0

The default order is a verified AllReduce; the driver's is refused:

>>> wc.verify(wc.build(name, topology=m, size_bytes=12, chunk_bytes=3)).ok
True
>>> try:
...     wc.verify(s)
... except wc.ScheduleError as e:
...     print(e.kind)
race
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kit
from .._util import as_bool, as_int
from ..algorithms import AlgorithmInfo, build, register
from ..schedule import Schedule
from .machine import TTO_CHUNK_BYTES
from .trees import tto_trees

__all__ = ["driver_order"]

_MAX_SIZE = 1 << 40
_MAX_TRANSFERS = 1 << 25


def _shape(name: str, p: int, topology: Any) -> tuple[int, int]:
    from .builders import mesh_shape

    return mesh_shape(name, p, topology)


def driver_order(
    src: Any,
    dst: Any,
    block: Any,
    reduce: Any,
    roots: Any,
    chunks: int,
    *,
    siblings_at_once: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies of the artifact's TTO driver for ``chunks`` chunks.

    The transfers of one chunk are given as a template (reduce-scatter and
    allgather, each in its timestep order); the program is the
    reduce-scatter of chunks ``0 .. chunks - 1`` followed by their allgather
    (ids ``c x R + i`` and ``chunks x R + c x A + i``, ``R`` and ``A`` the
    template's reduce and copy transfers in their template order). A transfer
    waits for

    * the transfers of its chunk that bring its block into its source (a
      reduction for every child, at once: siblings are not ordered, unless
      ``siblings_at_once`` is false, when each reduction into a chiplet
      also waits for the previous sibling's, in template order);
    * the previous transfer on its link (one transfer per link at a time);
    * a tree root's first copies: the last chunk's reductions into every
      root (the reduce-scatter of the whole vector ends first).

    Parameters
    ----------
    src, dst, block : array_like of int
        Source, destination and tree (block of the chunk) of every template
        transfer.
    reduce : array_like of bool
        Whether a template transfer reduces (reduce-scatter) or copies.
    roots : sequence of int
        Root rank of every tree (``roots[block]``).
    chunks : int
        Number of chunks, >= 1.
    siblings_at_once : bool, optional
        Whether the reductions of several children into one chiplet's block
        run at once, as the driver runs them (default), or one after the
        other, which makes the program a verified AllReduce.

    Returns
    -------
    flat, offsets : numpy.ndarray
        Dependencies in CSR form over the whole program.

    Examples
    --------
    Two children 1 and 2 reduce into root 0, which sends both the result:

    >>> from wafercoll.mcm.artifact_driver import driver_order
    >>> flat, off = driver_order(
    ...     [1, 2, 0, 0], [0, 0, 1, 2], [0, 0, 0, 0], [1, 1, 0, 0], [0], 1
    ... )
    >>> [flat[off[t] : off[t + 1]].tolist() for t in range(4)]
    [[], [], [0, 1], [0, 1]]
    """
    s = np.asarray(src, np.int64).ravel()
    d = np.asarray(dst, np.int64).ravel()
    b = np.asarray(block, np.int64).ravel()
    red = np.asarray(reduce, bool).ravel()
    if not s.size == d.size == b.size == red.size:
        raise ValueError("src, dst, block and reduce must have one entry per transfer")
    C = as_int(chunks, "chunks", 1)
    at_once = as_bool(siblings_at_once, "siblings_at_once")
    root = np.asarray(roots, np.int64).ravel()
    R_ids, A_ids = np.flatnonzero(red), np.flatnonzero(~red)
    R, A = R_ids.size, A_ids.size
    if C * (R + A) > _MAX_TRANSFERS:
        raise ValueError(
            f"{C} chunks of {R + A} transfers exceed {_MAX_TRANSFERS} transfers"
        )
    # per template transfer: (phase of the dependency, chunk shift, index)
    # phase 0 = reduce-scatter, 1 = allgather, 2 = reduce-scatter of the last
    # chunk; shift 0 = same chunk, -1 = previous chunk
    pattern: list[list[tuple[int, int, int]]] = []
    for phase, ids in ((0, R_ids), (1, A_ids)):
        last_on_link: dict[tuple[int, int], int] = {}
        for k, t in enumerate(ids):
            last_on_link[(int(s[t]), int(d[t]))] = k
        seen: dict[tuple[int, int], int] = {}
        into: dict[tuple[int, int], int] = {}  # last reduction into (chiplet, tree)
        for k, t in enumerate(ids):
            deps = [
                (phase, 0, j)
                for j, u in enumerate(ids)
                if j < k and d[u] == s[t] and b[u] == b[t]
            ]
            if phase == 1 and not deps:  # a root: after the whole reduce-scatter
                deps = [
                    (2, 0, j)
                    for j, u in enumerate(R_ids)
                    if 0 <= b[u] < root.size and d[u] == root[b[u]]
                ]
            if phase == 0 and not at_once:
                cell = (int(d[t]), int(b[t]))
                if cell in into:
                    deps.append((0, 0, into[cell]))
                into[cell] = k
            link = (int(s[t]), int(d[t]))
            if link in seen:
                deps.append((phase, 0, seen[link]))
            else:
                deps.append((phase, -1, last_on_link[link]))
            seen[link] = k
            pattern.append(deps)
    # Within one transfer the dependencies keep one order in every chunk
    # (reduce-scatter ids, then allgather ids; within a phase by shift and
    # index), so each phase is one (chunk x pattern entry) array of ids,
    # read row by row: the transfers in id order, each with its sorted list.
    flats, counts = [], []
    for phase, lo, n_ids, width in ((0, 0, R, R), (1, R, A, A)):
        # an entry's place among its transfer's ids, the same in every chunk
        entries = [
            sorted(pattern[lo + k], key=lambda x: (x[0] == 1, x[1] * width + x[2]))
            for k in range(n_ids)
        ]
        per = np.fromiter((len(e) for e in entries), np.int64, n_ids)
        flat_pat = [x for e in entries for x in e]
        ph, sh, j = np.asarray(flat_pat, np.int64).reshape(-1, 3).T
        c = np.arange(C, dtype=np.int64)[:, None] + sh[None, :]
        if phase == 0:
            ids = c * R + j
        else:
            ids = np.where(ph == 2, (C - 1) * R + j, C * R + c * A + j)
        flats.append(ids[c >= 0])
        cnt = np.broadcast_to(per, (C, n_ids)).copy()
        owner = np.repeat(np.arange(n_ids), per)
        cnt[0] -= np.bincount(owner[sh < 0], minlength=n_ids)  # no chunk -1
        counts.append(cnt.ravel())
    n = C * (R + A)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.concatenate(counts), out=offsets[1:])
    return np.concatenate(flats), offsets


def _tto_artifact(
    p: int,
    size: int,
    *,
    topology: Any = None,
    chunk_bytes: Any = None,
    message_bytes: Any = None,
    dependencies: str = "data",
) -> Schedule:
    name = "mesh_tto_artifact_allreduce"
    if dependencies not in _DEPENDENCIES:
        raise ValueError(
            f"{name}: dependencies must be one of {', '.join(_DEPENDENCIES)}; "
            f"got {dependencies!r}"
        )
    m, n = _shape(name, p, topology)
    size = as_int(size, "size_bytes", 1, _MAX_SIZE)
    chunk = (
        TTO_CHUNK_BYTES
        if chunk_bytes is None
        else as_int(chunk_bytes, "chunk_bytes", 1)
    )
    chunk = min(chunk, size)
    C = -(-size // chunk)
    trees = tto_trees(m, n)
    K = trees.parents.shape[0]
    if message_bytes is None:
        if size < C * K:
            raise ValueError(
                f"{name}: size_bytes = {size} cannot fill {C * K} blocks; use "
                f"size_bytes >= {C * K}"
            )
        sizes = kit.split_bytes(size, C * K, allow_empty=False)
    else:
        msg = as_int(message_bytes, "message_bytes", 1)
        sizes = np.full(C * K, -(-chunk // (K * msg)) * msg, dtype=np.int64)
    part = None
    if trees.excluded is not None:
        part = [v for v in range(p) if v != trees.excluded]
    one = kit.trees_program(trees.parents, np.ones(K, np.int64), participants=part)
    src = np.asarray(one.src, np.int64)
    dst = np.asarray(one.dst, np.int64)
    lo, _, _ = one.block_ranges()
    red = np.asarray(one.op) == 1
    flat, off = driver_order(
        src, dst, lo, red, trees.roots, C, siblings_at_once=dependencies == "artifact"
    )
    R_ids, A_ids = np.flatnonzero(red), np.flatnonzero(~red)
    ids = np.concatenate([np.tile(R_ids, C), np.tile(A_ids, C)])
    chunk_of = np.concatenate(
        [np.repeat(np.arange(C), R_ids.size), np.repeat(np.arange(C), A_ids.size)]
    )
    blocks = chunk_of * K + lo[ids]
    prog = kit.Program(
        p,
        sizes,
        "allreduce",
        rule="explicit",
        participants=part,
        name=f"mesh_tto_artifact({m}x{n}, {int(sizes.sum())} B, {C} chunks)",
    )
    prog.step(src[ids], dst[ids], blocks, red[ids].astype(np.int64), deps=(flat, off))
    return prog.schedule()


def _ring_bi_odd_artifact(
    p: int, size: int, *, topology: Any = None, message_bytes: Any = None
) -> Schedule:
    _shape("mesh_ring_bi_odd_artifact_allreduce", p, topology)
    return build(
        "mesh_ring_bi_odd_allreduce",
        topology=topology,
        size_bytes=size,
        exclude="centre",
        message_bytes=message_bytes,
    )


#: ``dependencies`` of ``mesh_tto_artifact_allreduce``: ``"data"`` orders two
#: children's reductions into one chiplet (a verified AllReduce),
#: ``"artifact"`` lets them run at once as the driver does.
_DEPENDENCIES = ("data", "artifact")

_SOURCE = "sabuj7177/TTO_HPCA_2024 (commit 156128c)"

register(
    AlgorithmInfo.of(
        "mesh",
        "tto",
        "allreduce",
        variant="artifact",
        families=("mesh",),
        source=f"{_SOURCE} src/hmc_fermat.py, "
        "src/allreduce/mesh_allreduce_2d_overlap_1.py",
        summary="TTO as the artifact's driver runs it: children reduce at once, "
        "the whole reduce-scatter before the allgather",
        builder=_tto_artifact,
        parameters={"chunk_bytes": None, "message_bytes": None, "dependencies": "data"},
        max_ranks=1 << 12,
        label="TTO (artifact)",
        artifact_names=("mesh_overlap_2d_1", "mesh_overlap_2d_1"),
    )
)
register(
    AlgorithmInfo.of(
        "mesh",
        "ring_bi_odd",
        "allreduce",
        variant="artifact",
        families=("mesh",),
        source=f"{_SOURCE} src/allreduce/ring_odd_bi_allreduce.py, src/hmc.py",
        summary="RingBiOdd as the artifact runs it: centre excluded, every part "
        "the driver's whole messages",
        builder=_ring_bi_odd_artifact,
        parameters={"message_bytes": None},
        max_ranks=1 << 16,
        label="RingBiOdd (artifact)",
        artifact_names=("ring_odd_bi", "ring_odd_bi"),
    )
)
