"""NCCL's ring and double-binary-tree collectives, as schedules on GPU fabrics.

The builders follow NCCL's source (:data:`wafercoll.gpu.fabric.NCCL_SOURCE`)
for the Simple protocol; every number they use is in
:mod:`wafercoll.gpu.fabric` with its file. All take ``ranks``,
``size_bytes``, ``topology`` (an NVSwitch machine or a rail-optimised
network, which gives ``gpus_per_node``; a fat tree or a dragonfly, whose
hosts are nodes of one GPU unless ``gpus_per_node`` says otherwise),
``gpus_per_node`` (without such a topology) and ``channels`` (default:
NCCL's count on the machine, :func:`wafercoll.gpu.fabric.default_channels`).

Rings (``nccl_ring_*``)
-----------------------
Channel ``c`` runs on its own ring (:func:`wafercoll.gpu.fabric.ring_orders`)
over its contiguous part of the data (:func:`wafercoll.gpu.fabric.channel_parts`,
on the channels NCCL keeps for the size: :func:`wafercoll.gpu.fabric.tuned_channels`),
in loops of chunks of ``STEP_BYTES * chunkSteps`` bytes (2 MiB for
allreduce, reduce-scatter and allgather, 512 KiB for broadcast and reduce).

* allreduce (``runRing``, ``src/device/all_reduce.h``): a loop covers ``p``
  chunks; the GPU at ring position ``i`` first sends chunk ``i - 1``, then
  for ``p - 2`` steps receives chunk ``i - j``, adds its own and sends it on
  (``j = 2 .. p - 1``), then receives chunk ``i`` complete, keeps it and
  sends it: the reduce-scatter's ``p - 1`` steps, then the allgather's
  ``p - 1`` steps forward chunk ``i - s`` at step ``s``. The last loop's
  chunk is ``ceil(rest / p)`` rounded up to 16 bytes;
* reduce-scatter (``src/device/reduce_scatter.h``) and allgather
  (``src/device/all_gather.h``): the same steps, a chunk being a piece of
  one rank's share (block ``r`` belongs to rank ``r``); the reduce-scatter
  sends rank ``ring[i - 1 - s]``'s share at step ``s`` and ends with its own,
  the allgather sends its own first and then forwards;
* broadcast and reduce (``src/device/broadcast.h``, ``reduce.h``): a chain
  along the ring from the root (broadcast) or ending at it (reduce),
  chunk after chunk.

Transfers follow the kit's ``"cells"`` rule with one stream per channel: a
chunk moves once its data has arrived and the channel's previous message
on that link is out, so channels run independently and chunks pipeline,
as NCCL's per-channel connections do (their FIFO depth of ``NCCL_STEPS``
slots is not modelled: a sender may run further ahead).

Double binary tree (``nccl_tree_allreduce``)
--------------------------------------------
``src/graph/trees.cc``: tree 0 over the ``N`` nodes is ``ncclGetBtree``'s
binary tree rooted at node 0 (a node's parent is found from its lowest set
bit), and tree 1 is its mirror ``N - 1 - n`` (``N`` even) or its shift ``n
+ 1`` (``N`` odd). ``src/graph/connect.cc`` gives the first half of the
channels tree 0 and the second half tree 1, so each tree carries half of the
data. Inside a node, a channel's tree is a chain of the node's GPUs
(``ncclTopoPreset``: ``tree.up = treeIntra[i - 1]``), here starting at the
GPU of rail ``c mod g``, which also talks to the parent and child nodes
(the tree pattern ``NCCL_TOPO_PATTERN_TREE``; the balanced pattern would
attach one child to the chain's second GPU). Every channel reduces up to
its tree's root and broadcasts down, chunk after chunk of ``STEP_BYTES``
(``runTreeUpDown``, ``all_reduce.h``), built with
:func:`wafercoll.kit.trees_program`.

PAT (``NCCL_ALGO_PAT``, NCCL 2.23+) is not built. It runs only with one GPU
per node (``ncclTransportPatConnect`` is called when ``maxLocalRanks == 1``,
``src/init.cc``), over peers at distances ``2^d`` (``src/transport/generic.cc``);
its maintainers describe it as a variation of Bruck's algorithm whose
schedule is reordered to bound memory (NVIDIA/nccl issue #1473), and no paper
describes it (issue #1708). The schedule itself exists only as the step
generators ``PatRSAlgorithm`` and ``PatAGAlgorithm``
(``src/include/collectives.h``), whose steps address staging-buffer slots
(aggregation factor, post frequency, step offsets) rather than data: which
piece a message carries follows only from replaying that code, which would
make a builder a transcription of it rather than an implementation of a
described algorithm. Bruck's allgather (``generic_bruck_allgather``) gives
the data flow it reorders.

Examples
--------
>>> import wafercoll as wc
>>> t = wc.topology.rail_optimized(3, 2, nvswitches=1)
>>> s = wc.build("nccl_ring_allreduce", topology=t, size_bytes=96, channels=2)
>>> wc.verify(s).ok, s.num_ranks
(True, 6)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import kit
from .._util import as_int
from ..algorithms import algorithm_name, register_algorithm
from ..schedule import Schedule
from .fabric import (
    ALIGN_BYTES,
    FABRICS,
    NCCL_SOURCE,
    channel_parts,
    check_channels,
    chunk_bytes,
    gpu_layout,
    ring_orders,
    tuned_channels,
)

__all__ = [
    "MAX_RANKS",
    "btree_parents",
    "dtree_parents",
    "ring_collective",
    "tree_allreduce",
    "tree_parents",
]

#: Largest rank count of the NCCL builders (``2 (p - 1) p`` transfers per
#: channel and loop).
MAX_RANKS = 1024
_RING_COLLECTIVES = ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce")


# -- rings -----------------------------------------------------------------------
def _ring_pieces(
    collective: str, size: int, p: int, parts: list
) -> tuple[list, list, np.ndarray]:
    """Block sizes, and ``blk[c][l]``: the p blocks of loop ``l`` of channel ``c``.

    For allreduce the ``p`` blocks of a loop are its chunks ``0 .. p - 1``;
    for reduce-scatter and allgather block ``j`` of a loop is the loop's
    piece of rank ``j``'s share.
    """
    chunk = chunk_bytes(collective)
    sizes: list[int] = []
    blk: list[list[list[int]]] = []
    if collective == "allreduce":
        for part in parts:
            loops = []
            left = part
            while True:
                ck = chunk if left >= p * chunk else -(-left // p)
                ck = -(-ck // ALIGN_BYTES) * ALIGN_BYTES
                row = []
                for j in range(p):
                    row.append(len(sizes))
                    sizes.append(max(0, min(ck, left - j * ck)))
                loops.append(row)
                left -= min(left, p * ck)
                if left <= 0:
                    break
            blk.append(loops)
        return sizes, blk, np.zeros(0, np.int64)
    share = kit.split_bytes(size, p)
    bounds = []  # (channel, loop, start, end) in a share's offsets
    start = 0
    for c, part in enumerate(parts):
        n_loops = max(1, -(-part // chunk))
        for q in range(n_loops):
            lo = start + q * chunk
            bounds.append((c, q, lo, min(lo + chunk, start + part)))
        start += part
    blk = [[[0] * p for _ in range(max(1, -(-part // chunk)))] for part in parts]
    owners = []
    for j in range(p):  # share-major: rank j's share is contiguous
        for c, q, lo, hi in bounds:
            blk[c][q][j] = len(sizes)
            sizes.append(max(0, min(hi, int(share[j])) - lo))
            owners.append(j)
    return sizes, blk, np.asarray(owners, np.int64)


def ring_collective(
    collective: str,
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    gpus_per_node: int | None = None,
    channels: int | None = None,
    root: int = 0,
) -> Schedule:
    """NCCL's ring ``collective`` over ``channels`` rings (module docstring).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"}
    ranks, size_bytes : int
        GPUs (whole nodes) and bytes of every GPU's vector.
    topology : Topology, optional
        Gives ``gpus_per_node`` (:func:`wafercoll.gpu.fabric.gpu_layout`).
    gpus_per_node : int, optional
        GPUs per node, 1 to ``ranks``, dividing ``ranks``.
    channels : int, optional
        Channels, 1 to 64 (default: NCCL's on the machine).
    root : int
        Root of a broadcast or reduce, 0 to ``ranks - 1``.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.nccl import ring_collective
    >>> s = ring_collective("allgather", 8, 64, gpus_per_node=4, channels=2)
    >>> s.collective, s.num_blocks, wc.verify(s).ok
    ('allgather', 8, True)
    """
    if collective not in _RING_COLLECTIVES:
        raise ValueError(
            f"collective must be one of {', '.join(_RING_COLLECTIVES)}; "
            f"got {collective!r}"
        )
    nodes, g = gpu_layout(ranks, topology, gpus_per_node)
    p = nodes * g
    size = as_int(size_bytes, "size_bytes", 0)
    n_ch = check_channels(channels, topology, nodes, g)
    rooted = collective in ("broadcast", "reduce")
    r0 = as_int(root, "root", 0, p - 1) if rooted else None
    share = -(-size // p) if collective in ("reduce_scatter", "allgather") else size
    parts = channel_parts(share, collective, p, tuned_channels(size, n_ch))
    rings = ring_orders(nodes, g, n_ch)
    name = f"nccl_ring({collective}, p={p}, g={g}, channels={len(parts)})"
    if rooted:
        return _chain(collective, p, size, parts, rings, r0, name)
    sizes, blk, owners = _ring_pieces(collective, size, p, parts)
    prog = kit.Program(
        p,
        sizes,
        collective,
        rule="cells",
        owners=None if collective == "allreduce" else owners,
        name=name,
    )
    pos = np.arange(p)
    phases = []
    if collective in ("allreduce", "reduce_scatter"):
        phases += [("reduce", (pos - 1 - s) % p) for s in range(p - 1)]
    if collective in ("allreduce", "allgather"):
        phases += [("copy", (pos - s) % p) for s in range(p - 1)]
    n_loops = max(len(b) for b in blk)
    for q in range(n_loops):
        live = [c for c in range(len(parts)) if q < len(blk[c])]
        for op, k in phases:
            src, dst, block, stream = [], [], [], []
            for c in live:
                ring = rings[c]
                index = k if collective == "allreduce" else ring[k]
                src.append(ring)
                dst.append(np.roll(ring, -1))
                block.append(np.asarray(blk[c][q], np.int64)[index])
                stream.append(np.full(p, c))
            prog.step(
                np.concatenate(src),
                np.concatenate(dst),
                np.concatenate(block),
                op,
                stream=np.concatenate(stream),
            )
    return prog.schedule()


def _chain(
    collective: str,
    p: int,
    size: int,
    parts: list,
    rings: np.ndarray,
    root: int,
    name: str,
) -> Schedule:
    """Broadcast from / reduce to ``root`` along each channel's ring, chunked."""
    chunk = chunk_bytes(collective)
    sizes: list[int] = []
    channel_of: list[int] = []
    for c, part in enumerate(parts):
        n = max(1, -(-part // chunk))
        for q in range(n):
            sizes.append(min(chunk, part - q * chunk))
            channel_of.append(c)
    prog = kit.Program(p, sizes, collective, root=root, rule="cells", name=name)
    ch = np.asarray(channel_of, np.int64)
    blocks = np.arange(len(sizes), dtype=np.int64)
    chains = []
    for ring in rings[: len(parts)]:
        at = int(np.flatnonzero(ring == root)[0])
        # broadcast: root first; reduce: the ring after the root, root last
        chains.append(np.roll(ring, -at if collective == "broadcast" else -at - 1))
    chain = np.asarray(chains)[ch]  # one chain per block
    op = "copy" if collective == "broadcast" else "reduce"
    for h in range(p - 1):
        prog.step(chain[:, h], chain[:, h + 1], blocks, op, stream=ch)
    return prog.schedule()


# -- the double binary tree -------------------------------------------------------
def btree_parents(nodes: int) -> np.ndarray:
    """Parent of every node in ``ncclGetBtree``'s binary tree (root 0: -1).

    A node ``n > 0`` with lowest set bit ``b`` hangs under ``(n ^ b) | 2b``,
    or ``n ^ b`` when that is out of range (``src/graph/trees.cc``).

    Examples
    --------
    >>> from wafercoll.gpu.nccl import btree_parents
    >>> btree_parents(7).tolist()
    [-1, 2, 4, 2, 0, 6, 4]
    """
    n = as_int(nodes, "nodes", 1)
    par = np.full(n, -1, dtype=np.int64)
    for r in range(1, n):
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        par[r] = up if up < n else r ^ bit
    return par


def dtree_parents(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """NCCL's two complementary trees over ``nodes`` (``ncclGetDtree``).

    Tree 1 is tree 0 mirrored (``n -> N - 1 - n``) for an even ``N`` and
    shifted (``n -> n + 1 mod N``) for an odd one.

    Examples
    --------
    >>> from wafercoll.gpu.nccl import dtree_parents
    >>> [t.tolist() for t in dtree_parents(4)]
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    >>> [t.tolist() for t in dtree_parents(3)]
    [[-1, 2, 0], [1, -1, 0]]
    """
    n = as_int(nodes, "nodes", 1)
    t0 = btree_parents(n)
    idx = np.arange(n)
    if n % 2:
        src = t0[(idx - 1) % n]  # parent of the shifted rank, shifted back
        t1 = np.where(src < 0, -1, (src + 1) % n)
    else:
        src = t0[n - 1 - idx]
        t1 = np.where(src < 0, -1, n - 1 - src)
    return t0, t1


def tree_parents(nodes: int, gpus_per_node: int, channels: int) -> np.ndarray:
    """Every channel's tree over the ranks as a parent array, shape (C, p).

    Channels ``0 .. ceil(C / 2) - 1`` follow tree 0 of :func:`dtree_parents`,
    the rest tree 1; in a node the chain starts at GPU ``c mod g`` (module
    docstring), which links to the same GPU of the parent node.

    Examples
    --------
    >>> from wafercoll.gpu.nccl import tree_parents
    >>> tree_parents(2, 2, 2).tolist()
    [[-1, 0, 0, 2], [1, 3, 3, -1]]
    """
    big_n = as_int(nodes, "nodes", 1)
    g = as_int(gpus_per_node, "gpus_per_node", 1)
    n_ch = as_int(channels, "channels", 1)
    trees = dtree_parents(big_n)
    out = np.empty((n_ch, big_n * g), dtype=np.int64)
    half = -(-n_ch // 2)
    for c in range(n_ch):
        up = trees[0 if c < half else 1]
        head = c % g
        chain = [(head + i) % g for i in range(g)]
        for n in range(big_n):
            base = n * g
            out[c, base + head] = -1 if up[n] < 0 else up[n] * g + head
            for i in range(1, g):
                out[c, base + chain[i]] = base + chain[i - 1]
    return out


def tree_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    gpus_per_node: int | None = None,
    channels: int | None = None,
) -> Schedule:
    """NCCL's double-binary-tree allreduce (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.nccl import tree_allreduce
    >>> s = tree_allreduce(12, 1 << 16, gpus_per_node=4, channels=2)
    >>> wc.verify(s).ok, s.num_blocks
    (True, 2)
    """
    nodes, g = gpu_layout(ranks, topology, gpus_per_node)
    size = as_int(size_bytes, "size_bytes", 0)
    n_ch = check_channels(channels, topology, nodes, g)
    parts = channel_parts(size, "allreduce", nodes * g, tuned_channels(size, n_ch))
    chunk = chunk_bytes("allreduce", "tree")
    chunks = max(max(1, -(-part // chunk)) for part in parts)
    sizes = [
        max(0, min(chunk, part - q * chunk)) for q in range(chunks) for part in parts
    ]
    parents = tree_parents(nodes, g, n_ch)[: len(parts)]
    return kit.trees_program(
        parents,
        sizes,
        name=f"nccl_tree(p={nodes * g}, g={g}, channels={len(parts)})",
    )


# -- registration ----------------------------------------------------------------
def _ring_builder(collective: str) -> Any:
    rooted = collective in ("broadcast", "reduce")

    def builder(ranks: int, size_bytes: int, **opts: Any) -> Schedule:
        return ring_collective(collective, ranks, size_bytes, **opts)

    builder.__doc__ = (
        f"NCCL's ring {collective} over C channels.\n\n"
        + (ring_collective.__doc__ or "").split("\n", 1)[1]
    )
    params: dict[str, Any] = {"gpus_per_node": None, "channels": None}
    if rooted:
        params["root"] = 0
    return builder, params


_RING_FILES = {
    "allreduce": "src/device/all_reduce.h",
    "reduce_scatter": "src/device/reduce_scatter.h",
    "allgather": "src/device/all_gather.h",
    "broadcast": "src/device/broadcast.h",
    "reduce": "src/device/reduce.h",
}
for _coll, _file in _RING_FILES.items():
    _fn, _params = _ring_builder(_coll)
    register_algorithm(
        algorithm_name("nccl", "ring", _coll),
        _coll,
        families=FABRICS,
        source=f"{NCCL_SOURCE}: runRing in {_file}; channels and chunks from "
        "src/graph/search.cc, src/graph/connect.cc, src/enqueue.cc",
        summary=f"NCCL's ring {_coll}: C channels, each on its ring over its part "
        "of the data, in chunks of NCCL's Simple protocol",
        parameters=_params,
        max_ranks=MAX_RANKS,
        label="NCCL ring",
    )(_fn)

register_algorithm(
    "nccl_tree_allreduce",
    "allreduce",
    families=FABRICS,
    source=f"{NCCL_SOURCE}: ncclGetDtree in src/graph/trees.cc, connectTrees in "
    "src/graph/connect.cc, runTreeUpDown in src/device/all_reduce.h",
    summary="NCCL's double binary tree over nodes, a chain in each node; half the "
    "channels on each tree, reduce up then broadcast down in chunks",
    parameters={"gpus_per_node": None, "channels": None},
    max_ranks=MAX_RANKS,
    label="NCCL tree",
)(tree_allreduce)
