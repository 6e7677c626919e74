"""Hierarchical 2D collectives: inside the nodes over NVLink, across them per rail.

Rank ``n * g + i`` is GPU ``i`` of node ``n`` (:mod:`wafercoll.gpu.fabric`);
the GPUs of one local index ``i`` form *rail* ``i``, whose inter-node
traffic stays on one rail switch of a rail-optimised network. Each phase is
a ring (:func:`wafercoll.kit.ring_steps`) inside every node at once or
along every rail at once, under the kit's ``"sendrecv"`` rule (a transfer
waits for the previous send and receive of both its ranks), so a phase
starts on a GPU once its part of the previous phase is done.

``gpu_hier2d_allreduce``
    (1) reduce-scatter inside each node: GPU ``i`` ends with the node's sum
    of segment ``i`` (``1 / g`` of the vector); (2) allreduce of that
    segment along rail ``i`` over the ``N`` nodes (a ring reduce-scatter and
    allgather over ``N`` pieces); (3) allgather inside each node. A GPU
    sends ``2 (g - 1) / g S`` over NVLink and ``2 (N - 1) / (N g) S`` over
    its NIC: ``1 / g`` of a flat ring's NIC traffic. This is the 2D-torus
    allreduce of Mikami et al. (2018) with nodes and rails as the two
    dimensions. ``chunks=k`` pipelines it: ``k`` parts of the vector run
    the phases one after another and overlap.
``gpu_hier2d_reduce_scatter``
    Rank ``r`` ends with block ``r`` (``1 / p`` of the vector, the standard
    layout). (1) Inside each node: GPU ``i`` ends with the node's sum of the
    blocks of rail ``i`` (those of ranks ``m * g + i``); (2) along rail
    ``i``: a reduce-scatter of those ``N`` blocks.
``gpu_hier2d_allgather``
    The mirror image, so that a NIC again carries ``1 / g`` of the data:
    (1) along every rail, GPU ``i`` of each node gathers the blocks of rail
    ``i``; (2) inside each node, every GPU gathers the other rails' blocks.
``gpu_hier2d_alltoall``
    (1) Inside each node, GPU ``i`` hands GPU ``j`` every block it has for a
    GPU of rail ``j`` (on any node), one message per pair; (2) along every
    rail, each GPU sends to the same-rail GPU of node ``m`` every block for
    it, one message per node pair (the rail-aligned alltoall: no message
    leaves its rail). Both phases are linear shifts.

Examples
--------
>>> import wafercoll as wc
>>> t = wc.topology.rail_optimized(3, 4, nvswitches=2)
>>> s = wc.build("gpu_hier2d_allreduce", topology=t, size_bytes=240)
>>> wc.verify(s).ok
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kit
from .._util import as_int
from ..algorithms import register_algorithm
from ..alltoall import send_blocks
from ..schedule import Schedule
from .fabric import FABRICS, gpu_layout

__all__ = [
    "MAX_CHUNKS",
    "MAX_RANKS",
    "hier2d_allgather",
    "hier2d_allreduce",
    "hier2d_alltoall",
    "hier2d_reduce_scatter",
]

#: Largest rank count (an alltoall has ``p * p`` blocks: 4 M at 2048).
MAX_RANKS = 2048
_SOURCE = (
    "the 2D-torus allreduce of Mikami et al., Massively Distributed SGD: "
    "ImageNet/ResNet-50 Training in a Flash, 2018 (reduce-scatter along one "
    "dimension, allreduce along the other, allgather along the first), with "
    "nodes and rails as the two dimensions"
)


def _grids(nodes: int, g: int) -> tuple[np.ndarray, np.ndarray]:
    """Rings inside the nodes (N rows of g) and along the rails (g rows of N).

    Each ring is rotated by one so that position ``i`` owns block ``i`` after
    a reduce-scatter (:func:`wafercoll.kit.ring_owners`).
    """
    rank = np.arange(nodes * g).reshape(nodes, g)
    return np.roll(rank, -1, axis=1), np.roll(rank.T, -1, axis=1)


def _emit(
    prog: kit.Program,
    rows: np.ndarray,
    phase: str,
    ranges: Any,
    stream: int = -1,
) -> None:
    """One ring per row; ``ranges(row, block)`` -> (lo, hi, offsets) per transfer."""
    for st in kit.ring_steps(rows, phase=phase):
        lo, hi, off = ranges(st.group, st.block)
        prog.step(st.src, st.dst, kit.Ranges(lo, hi, off), st.op, stream=stream)


#: Largest number of pipeline chunks of :func:`hier2d_allreduce`.
MAX_CHUNKS = 4096


def hier2d_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    gpus_per_node: int | None = None,
    chunks: int = 1,
) -> Schedule:
    """Intra-node reduce-scatter, per-rail allreduce, intra-node allgather.

    Parameters
    ----------
    ranks, size_bytes : int
        GPUs (whole nodes) and bytes of every GPU's vector.
    topology : Topology, optional
        Gives ``gpus_per_node`` (:func:`wafercoll.gpu.fabric.gpu_layout`).
    gpus_per_node : int, optional
        GPUs per node, 1 to ``ranks``, dividing ``ranks``.
    chunks : int, optional
        Pipeline chunks, 1 to ``MAX_CHUNKS``: the vector is cut into this
        many parts that go through the three phases one after another, so
        that one part's inter-node phase overlaps the next part's intra-node
        one (dependencies by the kit's ``"cells"`` rule, a stream per phase).
        With 1 (the default) the phases follow the ``"sendrecv"`` rule.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.hier2d import hier2d_allreduce
    >>> s = hier2d_allreduce(6, 60, gpus_per_node=2)
    >>> wc.verify(s).steps
    6
    >>> wc.verify(hier2d_allreduce(6, 600, gpus_per_node=2, chunks=4)).ok
    True
    """
    nodes, g = gpu_layout(ranks, topology, gpus_per_node)
    size = as_int(size_bytes, "size_bytes", 0)
    k = as_int(chunks, "chunks", 1, MAX_CHUNKS)
    per = g * nodes
    # block c * g N + s * N + j: piece j of segment s of chunk c
    sizes = np.concatenate(
        [kit.split_bytes(int(b), per) for b in kit.split_bytes(size, k)]
    )
    prog = kit.Program(
        nodes * g,
        sizes,
        "allreduce",
        rule="sendrecv" if k == 1 else "cells",
        name=f"hier2d_allreduce(N={nodes}, g={g}, chunks={k})",
    )
    inside, rails = _grids(nodes, g)
    for c in range(k):
        base = c * per

        def segment(group: np.ndarray, block: np.ndarray, base: int = base) -> tuple:
            lo = base + block * nodes
            return lo, lo + nodes, np.arange(block.size + 1)

        def piece(group: np.ndarray, block: np.ndarray, base: int = base) -> tuple:
            # rail i's GPUs own segment i after the intra-node reduce-scatter
            lo = base + group * nodes + block
            return lo, lo + 1, np.arange(block.size + 1)

        streams = (-1, -1, -1) if k == 1 else (0, 1, 2)
        _emit(prog, inside, "reduce_scatter", segment, streams[0])
        _emit(prog, rails, "allreduce", piece, streams[1])
        _emit(prog, inside, "allgather", segment, streams[2])
    return prog.schedule()


def _rail_blocks(nodes: int, g: int) -> Any:
    """Ranges of the blocks of rail ``block`` (ranks ``m * g + block``), N each."""

    def ranges(group: np.ndarray, block: np.ndarray) -> tuple:
        lo = (np.arange(nodes)[None, :] * g + block[:, None]).ravel()
        off = np.arange(block.size + 1) * nodes
        return lo, lo + 1, off

    return ranges


def _node_blocks(g: int) -> Any:
    """The block of node ``block`` on rail ``group`` (rank ``block * g + group``)."""

    def ranges(group: np.ndarray, block: np.ndarray) -> tuple:
        lo = block * g + group
        return lo, lo + 1, np.arange(block.size + 1)

    return ranges


def _owned_program(nodes: int, g: int, size: int, kind: str) -> kit.Program:
    p = nodes * g
    return kit.Program(
        p,
        kit.split_bytes(size, p),
        kind,
        rule="sendrecv",
        owners=np.arange(p),
        name=f"hier2d_{kind}(N={nodes}, g={g})",
    )


def hier2d_reduce_scatter(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    gpus_per_node: int | None = None,
) -> Schedule:
    """Intra-node reduce-scatter by rail, then per-rail reduce-scatter.

    Parameters are those of :func:`hier2d_allreduce`; rank ``r`` ends with
    block ``r`` of ``ranks`` near-equal blocks.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.hier2d import hier2d_reduce_scatter
    >>> s = hier2d_reduce_scatter(6, 60, gpus_per_node=3)
    >>> wc.verify(s).ok, s.owners.tolist()
    (True, [0, 1, 2, 3, 4, 5])
    """
    nodes, g = gpu_layout(ranks, topology, gpus_per_node)
    size = as_int(size_bytes, "size_bytes", 0)
    prog = _owned_program(nodes, g, size, "reduce_scatter")
    inside, rails = _grids(nodes, g)
    _emit(prog, inside, "reduce_scatter", _rail_blocks(nodes, g))
    _emit(prog, rails, "reduce_scatter", _node_blocks(g))
    return prog.schedule()


def hier2d_allgather(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    gpus_per_node: int | None = None,
) -> Schedule:
    """Per-rail allgather, then intra-node allgather by rail.

    Parameters are those of :func:`hier2d_allreduce`; rank ``r`` starts with
    block ``r`` of ``ranks`` near-equal blocks.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.hier2d import hier2d_allgather
    >>> s = hier2d_allgather(6, 60, gpus_per_node=3)
    >>> wc.verify(s).steps
    3
    """
    nodes, g = gpu_layout(ranks, topology, gpus_per_node)
    size = as_int(size_bytes, "size_bytes", 0)
    prog = _owned_program(nodes, g, size, "allgather")
    inside, rails = _grids(nodes, g)
    _emit(prog, rails, "allgather", _node_blocks(g))
    _emit(prog, inside, "allgather", _rail_blocks(nodes, g))
    return prog.schedule()


def hier2d_alltoall(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    gpus_per_node: int | None = None,
) -> Schedule:
    """Rail-aligned alltoall: to the target's rail inside the node, then along it.

    Parameters are those of :func:`hier2d_allreduce`; ``size_bytes`` is one
    rank's whole send buffer (``ranks`` blocks, as for
    :mod:`wafercoll.alltoall`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.hier2d import hier2d_alltoall
    >>> s = hier2d_alltoall(6, 60, gpus_per_node=3)
    >>> wc.verify(s).ok, s.num_transfers
    (True, 18)
    """
    nodes, g = gpu_layout(ranks, topology, gpus_per_node)
    size = as_int(size_bytes, "size_bytes", 0)
    p = nodes * g
    part = kit.split_bytes(size, p)
    prog = kit.Program(
        p,
        np.tile(part, p),
        "alltoall",
        rule="sendrecv",
        name=f"hier2d_alltoall(N={nodes}, g={g})",
    )
    src, dst = np.divmod(np.arange(p * p), p)
    block = np.arange(p * p)
    go = (src != dst) & (prog.block_bytes > 0)
    src, dst, block = src[go], dst[go], block[go]
    # (1) to the GPU of the target's rail in the source's node
    hop = (src // g) * g + dst % g
    shift = (dst % g - src % g) % g
    for k in range(1, g):
        sel = shift == k
        send_blocks(prog, src[sel], hop[sel], block[sel])
    # (2) along the rail to the target's node
    shift = (dst // g - src // g) % nodes
    for k in range(1, nodes):
        sel = shift == k
        send_blocks(prog, hop[sel], dst[sel], block[sel])
    return prog.schedule()


_PARAMS: dict[str, Any] = {"gpus_per_node": None}
for _name, _coll, _fn, _summary in (
    (
        "gpu_hier2d_allreduce",
        "allreduce",
        hier2d_allreduce,
        "intra-node reduce-scatter, allreduce per rail across nodes, intra-node "
        "allgather",
    ),
    (
        "gpu_hier2d_reduce_scatter",
        "reduce_scatter",
        hier2d_reduce_scatter,
        "intra-node reduce-scatter by rail, then reduce-scatter per rail",
    ),
    (
        "gpu_hier2d_allgather",
        "allgather",
        hier2d_allgather,
        "allgather per rail, then intra-node allgather by rail",
    ),
    (
        "gpu_hier2d_alltoall",
        "alltoall",
        hier2d_alltoall,
        "to the target's rail over NVLink, then along the rail: no message "
        "leaves its rail",
    ),
):
    register_algorithm(
        _name,
        _coll,
        families=FABRICS,
        source=_SOURCE
        if _coll != "alltoall"
        else "original: rail-aligned "
        "two-phase alltoall (intra-node by target rail, then per rail)",
        summary=_summary,
        parameters={**_PARAMS, "chunks": 1} if _coll == "allreduce" else dict(_PARAMS),
        max_ranks=MAX_RANKS,
        label="Hier2D",
    )(_fn)
