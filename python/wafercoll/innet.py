"""In-network collectives: NVLink SHARP (NVLS) and InfiniBand SHARP allreduce.

Switches that reduce and multicast are *switch ranks* of the schedule (see
:mod:`wafercoll.schedule`): ranks that run on a topology's hidden routers,
own no data, and reduce what they receive before they forward it. The
builders here number the ranks as the fabrics number their nodes (GPUs
``0 .. E - 1``, then the switches), so rank ``r`` runs on node ``r`` and the
simulator's default placement is right; ranks ``ranks .. E - 1`` (GPUs left
out) idle, and every hidden router is a switch rank, used or not.

``fabric_nvls_allreduce`` (NVLink SHARP inside one NVSwitch domain: DGX H100,
DGX B200, GB200 NVL72). NCCL's NVLS allreduce (``src/device/all_reduce.h``,
``RunWorkElement<ncclFuncAllReduce, ..., NCCL_ALGO_NVLS, ...>``) cuts each
loop of the vector into one chunk per *head* GPU; every GPU scatters its
data into the NVLS buffers, each head reduces its chunk with a multimem
load-reduce (the NVSwitch sums the GPUs' copies and returns the sum to the
head) and stores it back with a multimem store (the NVSwitch multicasts it
to every GPU): a reduce-scatter in the switch, then an all-gather by switch
multicast. The model: the vector is shared over the switch chips in
proportion to the bandwidth of a GPU's links to each (DGX H100: 5/4/4/5 of
18), each chip's share cut into one block per head GPU (and ``chunks``
pipeline chunks); each GPU reduces its share into the chip; with
``via_head=True`` (NCCL) the chip sends block ``h``'s sum to head ``h``,
which stores it back, and the chip multicasts it to the other GPUs; with
``via_head=False`` the chip multicasts every sum at once (the lower bound of
the mechanism: no round trip through a head).

Closed forms (no latency, one packet per message, switch reduction free,
shares in exact proportion): a GPU's links to the chips have ``W`` bytes/s in
all (DGX H100: 450 GB/s, NVL72: 900 GB/s), ``p`` GPUs, ``S`` bytes:

* ``via_head=False``: ``T = 2 S / W``: every GPU sends and receives ``S``;
* ``via_head=True``: ``T = (2 + 1 / p) S / W`` = ``S / W`` (every GPU's
  shares up) ``+ 2 S / (p W)`` (each head's block down to it and back up)
  ``+ (p - 1) S / (p W)`` (the other heads' multicasts, one after the other
  on every GPU's downlinks).

``fabric_nvls_tree_allreduce`` extends NVLS across nodes as NCCL's NVLS_TREE
(a binary tree of the heads between nodes) and NVLS with CollNet (SHARP in
the network switches between nodes) do; see :func:`nvls_tree_allreduce`.

``fabric_sharp_allreduce`` (InfiniBand SHARP, NCCL's CollNet): the switches
of the network reduce along an aggregation tree and the root multicasts the
sum. The tree: the switches that link to other switches (the network's, not
a node's NVSwitch chips; all of them when none does), rooted at the one
nearest to all GPUs (fewest hops to the farthest, the lowest id on a tie);
each switch's parent is its lowest-id neighbour one hop closer to the root,
each GPU's its nearest adjacent switch. Every GPU reduces its vector into its
parent, every switch forwards the sum of its children to its parent once it
has them all, and the root multicasts the result to every GPU (one stream,
copied where the routes part). On a single switch of ``k`` GPUs with links
of bandwidth ``B`` and latency ``l``: ``T = 2 (alpha + l + S / B) + k S / R``
with reduction rate ``R`` (:class:`wafercoll.NetworkModel`
``switch_reduce_Bps``).

Switch parameters. No vendor figure for the reduction throughput of an
NVSwitch SHARP engine (NVSwitch gen 3, H100) or of a Quantum-2 InfiniBand
switch was found in what we could read: NVIDIA states only that gen 3
NVSwitch "supports ... SHARP in-network computing" with "a 2X increase in
all-reduce throughput within eight H100 GPU servers compared to the
previous-generation A100" (H100/H200 NVLink product page), and the NVSwitch
developer blog (2022) that it "incorporates hardware acceleration for
collective operations with multicast and ... SHARP in-network reductions".
So the default assumes the switch reduces at line rate
(``switch_reduce_Bps=None``: reduction costs nothing beyond the links) and
has no buffer limit (``switch_buffer_bytes=None``); both are parameters of
:class:`wafercoll.NetworkModel` to set when a figure is known.

Examples
--------
>>> import numpy as np, wafercoll as wc
>>> t = wc.topology.dgx_h100()
>>> s = wc.build("fabric_nvls_allreduce", topology=t, size_bytes=18 * 8 * 1000)
>>> s.num_ranks, int(s.switches.sum()), wc.verify(s).ok
(12, 4, True)
>>> r = wc.simulate(s, t, wc.NetworkModel(None))
>>> round(r.time_s / (18 * 8 * 1000 / 450e9), 6)  # (2 + 1/p) S / W
2.125
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kit
from ._util import as_int
from .algorithms import register_algorithm
from .schedule import Schedule

__all__ = [
    "nvls_allgather",
    "nvls_allreduce",
    "nvls_domains",
    "nvls_reduce_scatter",
    "nvls_switches",
    "nvls_tree_allreduce",
    "sharp_allreduce",
    "sharp_tree",
]

_NVLS_SOURCE = (
    "NVIDIA NCCL, src/device/all_reduce.h (NVLS: reduce-scatter by multimem "
    "load-reduce in the NVSwitch, all-gather by multimem store multicast)"
)
_SHARP_SOURCE = (
    "NVIDIA SHARP (Graham et al., COMHPC 2016) as used by NCCL CollNet: "
    "reduction along the switches' aggregation tree, multicast of the result"
)
#: Pipeline chunks a builder accepts (a guard on the schedule's size).
_MAX_CHUNKS = 1 << 12
#: Transfers a builder may emit (a memory guard: 2^24 transfers are ~1 GiB).
_MAX_TRANSFERS = 1 << 24


def _check_size(transfers: int, chunks: int) -> None:
    """ValueError when a schedule would hold more than ``_MAX_TRANSFERS``."""
    if transfers > _MAX_TRANSFERS:
        raise ValueError(
            f"chunks = {chunks} would make {transfers} transfers, more than "
            f"{_MAX_TRANSFERS}; use fewer chunks"
        )


def _links(topology: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lk = topology.links
    return (
        np.asarray(lk["src"], dtype=np.int64),
        np.asarray(lk["dst"], dtype=np.int64),
        np.asarray(lk["bandwidth_Bps"], dtype=np.float64),
    )


def _layout(ranks: int, topology: Any) -> tuple[int, int]:
    """(schedule ranks, endpoints); without a topology, one switch: rank ``ranks``."""
    if topology is None:
        return ranks + 1, ranks
    e, n = topology.num_endpoints, topology.num_nodes
    if n == e:
        raise ValueError(
            f"topology {topology.name} has no hidden routers: in-network "
            "reduction needs switches (e.g. wc.topology.dgx_h100(), fat_tree)"
        )
    return n, e


def nvls_switches(ranks: int, topology: Any = None) -> list[tuple[int, float]]:
    """The switches an NVLS collective of GPUs ``0 .. ranks - 1`` uses, with weights.

    The hidden routers wired directly to every one of those GPUs, both ways,
    each with the smallest bandwidth of a GPU's link to it (the share of the
    vector it takes is in proportion). Without a topology: one switch, rank
    ``ranks``, as in :func:`wafercoll.topology.star`.

    Parameters
    ----------
    ranks : int
        GPUs, >= 1 (and at most the topology's endpoints).
    topology : Topology, optional

    Returns
    -------
    list of (int, float)
        Switch node (= rank) and weight in bytes per second, by node.

    Raises
    ------
    ValueError
        When no switch reaches every GPU in one hop.

    Examples
    --------
    >>> import wafercoll as wc
    >>> [(n, w / 1e9) for n, w in wc.innet.nvls_switches(8, wc.topology.dgx_h100())]
    [(8, 125.0), (9, 100.0), (10, 100.0), (11, 125.0)]
    """
    p = as_int(ranks, "ranks", 1)
    if topology is None:
        return [(p, 1.0)]
    _, e = _layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
    src, dst, bw = _links(topology)
    out = []
    for j in range(e, topology.num_nodes):
        up = (dst == j) & (src < p)
        down = (src == j) & (dst < p)
        if np.unique(src[up]).size == p and np.unique(dst[down]).size == p:
            out.append((j, float(bw[up].min())))
    if not out:
        raise ValueError(
            f"no switch of {topology.name} is wired directly to all of GPUs "
            f"0 .. {p - 1}; NVLS needs an NVSwitch domain (kind 'nvswitch' or 'star')"
        )
    return out


def _weighted(total: int, weights: list[float]) -> list[int]:
    """``total`` bytes in proportion to ``weights`` (largest remainders first)."""
    w = np.asarray(weights, dtype=np.float64)
    exact = total * w / w.sum()
    base = np.floor(exact).astype(np.int64)
    rest = int(total - base.sum())
    order = np.argsort(-(exact - base), kind="stable")
    base[order[:rest]] += 1
    return [int(x) for x in base]


def _chunks(chunks: Any) -> int:
    return as_int(chunks, "chunks", 1, _MAX_CHUNKS)


def _bool(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _program(
    n: int,
    e: int,
    p: int,
    sizes: list[int],
    name: str,
    collective: str = "allreduce",
    owners: list[int] | None = None,
) -> kit.Program:
    """A program over ``n`` ranks: GPUs ``0 .. p - 1`` take part, ranks >= e switch."""
    return kit.Program(
        n,
        sizes,
        collective,
        rule="explicit",
        participants=range(p),
        switches=range(e, n),
        owners=owners,
        name=name,
    )


@register_algorithm(
    "fabric_nvls_allreduce",
    "allreduce",
    families=("nvswitch", "star"),
    parameters={"chunks": 1, "via_head": True},
    source=_NVLS_SOURCE,
    summary="NVLink SHARP: the NVSwitch chips reduce every GPU's share and multicast "
    "the sums (reduce-scatter in the switch, all-gather by multicast)",
    label="NVLS",
    max_ranks=1 << 12,
)
def nvls_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    chunks: int = 1,
    via_head: bool = True,
) -> Schedule:
    """NVLS allreduce of GPUs ``0 .. ranks - 1`` through their NVSwitch chips.

    The model and its closed forms are in :mod:`wafercoll.innet`.

    Parameters
    ----------
    ranks : int
        GPUs, >= 1.
    size_bytes : int
        Bytes of every GPU's vector.
    topology : Topology, optional
        An NVSwitch domain (``dgx_h100``, ``dgx_b200``, ``gb200_nvl72``,
        ``nvswitch_node``, ``star``); default: one switch, rank ``ranks``.
    chunks : int, optional
        Pipeline chunks, 1 to 4096: each switch's share is cut into this
        many rounds that overlap (smaller messages for a switch buffer).
        NCCL moves NVLS data in steps of ``NCCL_NVLS_CHUNKSIZE`` = 128 KiB
        by default, on 16 channels (``NVLS_NCHANNELS``; both in
        ``src/transport/nvls.cc``), and uses NVLS only with more than 2
        GPUs; the model accepts any count.
    via_head : bool, optional
        Route each sum through its head GPU as NCCL does (``True``) or
        multicast it from the switch at once (``False``).

    Returns
    -------
    Schedule
        An allreduce over the topology's nodes: GPUs, then switch ranks.

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> s = wc.build("fabric_nvls_allreduce", ranks=3, size_bytes=7, via_head=False)
    >>> x = np.arange(4 * 7).reshape(4, 7)
    >>> wc.execute(s, x)[:3].tolist() == [x[:3].sum(0).tolist()] * 3
    True
    """
    p = ranks
    k = _chunks(chunks)
    head = _bool(via_head, "via_head")
    n, e = _layout(p, topology)
    sw = nvls_switches(p, topology)
    heads = p if head else 1
    _check_size(k * len(sw) * (p + heads * (p + 2)), k)
    shares = _weighted(size_bytes, [w for _, w in sw])
    # Block (c, j, h): chunk c of switch j's share, head h's part of it.
    per = [kit.split_bytes(shares[j], k * heads) for j in range(len(sw))]
    sizes = [
        int(per[j][c * heads + h])
        for c in range(k)
        for j in range(len(sw))
        for h in range(heads)
    ]
    label = f"nvls_allreduce(p={p}, chunks={k}, via_head={head})"
    prog = _program(n, e, p, sizes, label)
    gpus = np.arange(p)
    last = np.full((p, len(sw)), -1, dtype=np.int64)  # each GPU's stream into a switch
    for c in range(k):
        for j, (node, _) in enumerate(sw):
            b0 = (c * len(sw) + j) * heads
            # Every GPU reduces its whole share for this chunk into the switch.
            red = prog.step(gpus, node, (b0, b0 + heads), "reduce", deps=last[:, j])
            last[:, j] = red
            for h in range(heads):
                b = b0 + h
                if head:
                    back = prog.send(node, h, b, "copy", deps=list(red))
                    store = prog.send(h, node, b, "copy", deps=[back])
                    others = [g for g in range(p) if g != h]
                    if others:
                        prog.send(node, others, b, "copy", deps=[store])
                else:
                    prog.send(node, list(range(p)), b, "copy", deps=list(red))
    return prog.schedule()


class _OwnerLayout:
    """Blocks of the NVLS reduce-scatter and allgather: (owner h, chunk c, chip j).

    Owner ``h``'s blocks are contiguous (rank ``h`` ends with ``1/p`` of the
    vector, as NCCL's reduce-scatter output); within them chunk by chunk,
    chip by chip, each chip's share of the vector in proportion to its
    weight.
    """

    def __init__(self, p: int, size: int, sw: list[tuple[int, float]], k: int) -> None:
        self.p, self.k, self.nsw = p, k, len(sw)
        shares = _weighted(size, [w for _, w in sw])
        per = [kit.split_bytes(shares[j], k * p) for j in range(self.nsw)]
        self.sizes = [
            int(per[j][c * p + h])
            for h in range(p)
            for c in range(k)
            for j in range(self.nsw)
        ]
        self.owners = [h for h in range(p) for _ in range(k * self.nsw)]

    def block(self, h: int, c: int, j: int) -> int:
        return (h * self.k + c) * self.nsw + j

    def ranges(self, c: int, j: int, senders: int) -> kit.Ranges:
        """Every owner's block (c, j), for each of ``senders`` transfers."""
        lo = np.array([self.block(h, c, j) for h in range(self.p)] * senders)
        return kit.Ranges(lo, lo + 1, np.arange(0, self.p * senders + 1, self.p))


def _nvls_setup(
    ranks: int, size_bytes: int, topology: Any, chunks: Any
) -> tuple[int, int, list[tuple[int, float]], _OwnerLayout]:
    p = ranks
    k = _chunks(chunks)
    n, e = _layout(p, topology)
    sw = nvls_switches(p, topology)
    _check_size(k * len(sw) * 2 * (p + 1), k)
    return n, e, sw, _OwnerLayout(p, size_bytes, sw, k)


@register_algorithm(
    "fabric_nvls_reduce_scatter",
    "reduce_scatter",
    families=("nvswitch", "star"),
    parameters={"chunks": 1},
    source=_NVLS_SOURCE.replace("allreduce", "reduce-scatter"),
    summary="NVLink SHARP reduce-scatter: the NVSwitch chips reduce every GPU's "
    "data and send each block's sum to its owner",
    label="NVLS",
    max_ranks=1 << 12,
)
def nvls_reduce_scatter(
    ranks: int, size_bytes: int, *, topology: Any = None, chunks: int = 1
) -> Schedule:
    """NVLS reduce-scatter: GPU ``h`` ends with the sum of part ``h`` of ``p``.

    Every GPU reduces its data into the chips (each chip its share, as in
    :func:`nvls_allreduce`); each chip sends the sum of owner ``h``'s part
    to GPU ``h``: the first half of NCCL's NVLS allreduce. Without latency,
    one chunk: ``T = S / W + S / (p W)`` (every share up, then each owner's
    part down).

    Parameters
    ----------
    ranks : int
        GPUs, >= 1.
    size_bytes : int
        Bytes of every GPU's vector.
    topology : Topology, optional
        An NVSwitch domain; default: one switch, rank ``ranks``.
    chunks : int, optional
        Pipeline chunks, 1 to 4096.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> t = wc.topology.dgx_b200()
    >>> s = wc.build("fabric_nvls_reduce_scatter", topology=t, size_bytes=64, chunks=2)
    >>> x = np.arange(s.num_ranks * 16).reshape(s.num_ranks, 16)
    >>> out = wc.execute(s, x)
    >>> bool((out[3, 6:8] == x[:8, 6:8].sum(0)).all())  # GPU 3's eighth
    True
    """
    p = ranks
    n, e, sw, lay = _nvls_setup(p, size_bytes, topology, chunks)
    name = f"nvls_reduce_scatter(p={p}, chunks={lay.k})"
    prog = _program(n, e, p, lay.sizes, name, "reduce_scatter", lay.owners)
    gpus = np.arange(p)
    last = np.full((p, len(sw)), -1, dtype=np.int64)
    for c in range(lay.k):
        for j, (node, _) in enumerate(sw):
            red = prog.step(gpus, node, lay.ranges(c, j, p), "reduce", deps=last[:, j])
            last[:, j] = red
            for h in range(p):
                prog.send(node, h, lay.block(h, c, j), "copy", deps=list(red))
    return prog.schedule()


@register_algorithm(
    "fabric_nvls_allgather",
    "allgather",
    families=("nvswitch", "star"),
    parameters={"chunks": 1},
    source=_NVLS_SOURCE.replace("allreduce", "allgather"),
    summary="NVLink SHARP allgather: every GPU stores its part into the NVSwitch "
    "chips, which multicast it to the others",
    label="NVLS",
    max_ranks=1 << 12,
)
def nvls_allgather(
    ranks: int, size_bytes: int, *, topology: Any = None, chunks: int = 1
) -> Schedule:
    """NVLS allgather: GPU ``h`` owns the ``h``-th ``1/p`` of the vector.

    Each owner stores every block of its part into the block's chip, which
    multicasts it to the other GPUs: the second half of NCCL's NVLS
    allreduce. Without latency, one chunk: ``T = S / (p W) + (p - 1) S /
    (p W)`` = ``S / W`` (an owner's part up, then the others' parts, one
    after the other, down every GPU's links).

    Parameters
    ----------
    ranks : int
        GPUs, >= 1.
    size_bytes : int
        Bytes of the gathered vector.
    topology : Topology, optional
        An NVSwitch domain; default: one switch, rank ``ranks``.
    chunks : int, optional
        Pipeline chunks, 1 to 4096.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> s = wc.build("fabric_nvls_allgather", ranks=3, size_bytes=9)
    >>> x = np.arange(4 * 9).reshape(4, 9)
    >>> wc.execute(s, x)[2].tolist() == [0, 1, 2, 12, 13, 14, 24, 25, 26]
    True
    """
    p = ranks
    n, e, sw, lay = _nvls_setup(p, size_bytes, topology, chunks)
    name = f"nvls_allgather(p={p}, chunks={lay.k})"
    prog = _program(n, e, p, lay.sizes, name, "allgather", lay.owners)
    last = np.full((p, len(sw)), -1, dtype=np.int64)
    for c in range(lay.k):
        for j, (node, _) in enumerate(sw):
            for h in range(p):
                b = lay.block(h, c, j)
                store = prog.send(
                    h, node, b, "copy", deps=[x for x in [last[h, j]] if x >= 0]
                )
                last[h, j] = store
                others = [g for g in range(p) if g != h]
                if others:
                    prog.send(node, others, b, "copy", deps=[store])
    return prog.schedule()


def sharp_tree(ranks: int, topology: Any = None) -> dict[int, int]:
    """The aggregation tree of :func:`sharp_allreduce`: the parent of every node in it.

    Parameters
    ----------
    ranks : int
        GPUs ``0 .. ranks - 1``, >= 1.
    topology : Topology, optional
        Default: one switch, node ``ranks``.

    Returns
    -------
    dict
        ``{node: parent}`` for the GPUs and the switches of the tree; the
        root maps to -1.

    Raises
    ------
    ValueError
        For a topology without switches, or GPUs no switch tree joins.

    Examples
    --------
    >>> import wafercoll as wc
    >>> tree = wc.innet.sharp_tree(4, wc.topology.fat_tree(4))
    >>> tree[0], tree[2], tree[16], tree[tree[16]]  # host, edge, aggregation, root
    (16, 17, 24, -1)
    """
    p = as_int(ranks, "ranks", 1)
    if topology is None:
        return {**{i: p for i in range(p)}, p: -1}
    _, e = _layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
    return _switch_tree(list(range(p)), topology)


def _switch_tree(gpus: list[int], topology: Any) -> dict[int, int]:
    """:func:`sharp_tree` of any GPUs (endpoint ids) of a topology with switches."""
    n, e = topology.num_nodes, topology.num_endpoints
    src, dst, _ = _links(topology)
    between = (src >= e) & (dst >= e)
    cand = set(np.unique(src[between]).tolist()) or set(range(e, n))
    nbr: dict[int, list[int]] = {r: [] for r in cand}
    for u, v in zip(src[between].tolist(), dst[between].tolist(), strict=True):
        if u in cand and v in cand:
            nbr[u].append(v)
    for r in nbr:
        nbr[r] = sorted(set(nbr[r]))
    attach = [
        sorted({int(v) for v in dst[(src == i) & (dst >= e)] if int(v) in cand})
        for i in gpus
    ]
    if any(not a for a in attach):
        raise ValueError(f"a GPU of {topology.name} has no link to a network switch")

    def bfs(root: int) -> dict[int, int]:
        dist, queue = {root: 0}, [root]
        for u in queue:
            for v in nbr[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        return dist

    best, best_cost, best_dist = -1, None, {}
    for r in sorted(cand):
        dist = bfs(r)
        far = [min((dist[a] for a in att if a in dist), default=None) for att in attach]
        if any(x is None for x in far):
            continue
        cost = max(far)  # type: ignore[type-var]
        if best_cost is None or cost < best_cost:
            best, best_cost, best_dist = r, cost, dist
    if best < 0:
        raise ValueError(f"no switch of {topology.name} reaches all of GPUs {gpus}")
    parent: dict[int, int] = {best: -1}
    for k, i in enumerate(gpus):
        a = min(
            (x for x in attach[k] if x in best_dist), key=lambda x: (best_dist[x], x)
        )
        parent[i] = a
        while a not in parent:
            up = min(v for v in nbr[a] if best_dist.get(v, -1) == best_dist[a] - 1)
            parent[a] = up
            a = up
    return parent


@register_algorithm(
    "fabric_sharp_allreduce",
    "allreduce",
    families=("fat_tree", "rail_optimized", "dragonfly", "star", "nvswitch"),
    parameters={"chunks": 1},
    source=_SHARP_SOURCE,
    summary="InfiniBand SHARP: the switches reduce up an aggregation tree and the "
    "root multicasts the sum to every GPU",
    label="SHARP",
    max_ranks=1 << 12,
)
def sharp_allreduce(
    ranks: int, size_bytes: int, *, topology: Any = None, chunks: int = 1
) -> Schedule:
    """SHARP allreduce of GPUs ``0 .. ranks - 1`` in the switches' aggregation tree.

    The model and the tree are in :mod:`wafercoll.innet` and
    :func:`sharp_tree`.

    Parameters
    ----------
    ranks : int
        GPUs (or hosts), >= 1.
    size_bytes : int
        Bytes of every GPU's vector.
    topology : Topology, optional
        A switched network (``fat_tree``, ``rail_optimized``, ``star``);
        default: one switch, rank ``ranks``.
    chunks : int, optional
        Pipeline chunks, 1 to 4096, that stream through the tree one after
        the other.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> t = wc.topology.fat_tree(4)
    >>> s = wc.build("fabric_sharp_allreduce", topology=t, ranks=5, size_bytes=9)
    >>> x = np.random.default_rng(1).integers(0, 9, (s.num_ranks, 9))
    >>> out = wc.execute(s, x)
    >>> bool((out[:5] == x[:5].sum(0)).all())
    True
    """
    p = ranks
    k = _chunks(chunks)
    n, e = _layout(p, topology)
    parent = sharp_tree(p, topology)
    _check_size(k * (len(parent) + 1), k)
    sizes = [int(x) for x in kit.split_bytes(size_bytes, k)]
    prog = _program(n, e, p, sizes, f"sharp_allreduce(p={p}, chunks={k})")
    gpus = list(range(p))
    last: dict[int, int] = {}  # each GPU's and switch's previous send: streams in order
    for c in range(k):
        _reduce_in_tree(
            prog, parent, gpus, c, {g: [last.get(g, -1)] for g in gpus}, last
        )
    return prog.schedule()


def _reduce_in_tree(
    prog: kit.Program,
    parent: dict[int, int],
    gpus: list[int],
    block: int,
    ready: dict[int, list[int]],
    last: dict[int, int],
) -> int:
    """One block up a switch tree and back: returns the root's multicast.

    GPU ``g`` reduces ``block`` into its parent after ``ready[g]``; a switch
    forwards the sum to its parent once every child's reduction is in (and
    after its previous send, ``last``); the root multicasts the sum to the
    GPUs.
    """
    member = set(gpus)
    root = next(v for v, u in parent.items() if u < 0)
    depth = {}
    for v in parent:
        d, x = 0, v
        while parent[x] >= 0:
            x, d = parent[x], d + 1
        depth[v] = d
    into: dict[int, list[int]] = {v: [] for v in parent if v not in member}
    for g in gpus:
        t = prog.send(
            g, parent[g], block, "reduce", deps=[x for x in ready[g] if x >= 0]
        )
        last[g] = t
        into[parent[g]].append(t)
    # Switches deepest first: each forwards after all its children.
    inner = sorted((v for v in into if v != root), key=lambda v: (-depth[v], v))
    for v in inner:
        deps = into[v] + ([last[v]] if v in last else [])
        t = prog.send(v, parent[v], block, "reduce", deps=deps)
        last[v] = t
        into[parent[v]].append(t)
    return prog.send(root, gpus, block, "copy", deps=into[root])


def nvls_domains(
    ranks: int, topology: Any
) -> list[tuple[list[int], list[tuple[int, float]]]]:
    """The NVSwitch domains of GPUs ``0 .. ranks - 1``: their GPUs and switch chips.

    A node's switch chips are the hidden routers linked to GPUs only (not to
    other switches); GPUs wired to the same chips form a domain. Each chip
    comes with its weight as in :func:`nvls_switches`.

    Parameters
    ----------
    ranks : int
        GPUs, >= 1.
    topology : Topology

    Returns
    -------
    list of (list of int, list of (int, float))
        Per domain, in order of its first GPU: its GPUs and its chips.

    Raises
    ------
    ValueError
        When a GPU has no chip of its own, or the domains differ in GPU or
        chip count or in the chips' weights (the blocks are laid out once
        for all of them).

    Examples
    --------
    >>> import wafercoll as wc
    >>> doms = wc.innet.nvls_domains(16, wc.topology.dgx_h100_rail(2))
    >>> [(g[0], len(g), [n for n, _ in sw]) for g, sw in doms]
    [(0, 8, [28, 29, 30, 31]), (8, 8, [32, 33, 34, 35])]
    """
    p = as_int(ranks, "ranks", 1)
    _, e = _layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
    src, dst = _links(topology)[:2]
    networked = set(np.unique(src[(src >= e) & (dst >= e)]).tolist())
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in range(p):
        chips = tuple(
            sorted(
                {
                    int(v)
                    for v in dst[(src == i) & (dst >= e)]
                    if int(v) not in networked
                }
            )
        )
        if not chips:
            raise ValueError(
                f"GPU {i} of {topology.name} has no NVSwitch chip of its own"
            )
        groups.setdefault(chips, []).append(i)
    out = []
    for chips, gpus in sorted(groups.items(), key=lambda kv: kv[1][0]):
        sub = [
            (j, float(np.min(_links(topology)[2][(dst == j) & np.isin(src, gpus)])))
            for j in chips
        ]
        out.append((gpus, sub))
    first = out[0]
    for gpus, sub in out[1:]:
        if len(gpus) != len(first[0]) or [w for _, w in sub] != [
            w for _, w in first[1]
        ]:
            raise ValueError(
                f"the NVSwitch domains of GPUs 0 .. {p - 1} of {topology.name} differ "
                "in size or link bandwidths; take whole, alike nodes"
            )
    return out


@register_algorithm(
    "fabric_nvls_tree_allreduce",
    "allreduce",
    families=("rail_optimized", "nvswitch"),
    parameters={"chunks": 1, "inter": "tree"},
    source=_NVLS_SOURCE + "; NVLS_TREE and NVLS with CollNet across nodes",
    summary="NVLS inside every node (reduce-scatter in the NVSwitch to head GPUs), "
    "the heads' chunks reduced across nodes (a binary tree of GPUs or SHARP in the "
    "network switches), then multicast by each node's NVSwitch",
    label="NVLS tree",
    max_ranks=1 << 12,
)
def nvls_tree_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    chunks: int = 1,
    inter: str = "tree",
) -> Schedule:
    """NVLS within each node, a reduction across nodes between the head GPUs.

    NCCL's NVLS_TREE (``src/device/all_reduce.h``): inside a node every GPU
    reduces its share into the NVSwitch chips, which hand block ``h``'s sum
    to head GPU ``h``; the heads of block ``h`` in all nodes reduce it
    across nodes and get the total back; each head stores it into its node's
    chip, which multicasts it to the node's other GPUs. Across nodes,
    ``inter="tree"``: a binary tree of the heads (node ``d``'s parent is node
    ``(d - 1) // 2``), reducing up and copying down; ``inter="sharp"``: the
    heads reduce in the network's switches (:func:`sharp_tree` of the
    heads), as NCCL's NVLS with CollNet (SHARP) does.

    Parameters
    ----------
    ranks : int
        GPUs: whole nodes, alike (:func:`nvls_domains`).
    size_bytes : int
        Bytes of every GPU's vector.
    topology : Topology
        Nodes of NVSwitch chips on a network: ``rail_optimized(...,
        nvswitches=q)``, ``dgx_h100_rail``; a single NVSwitch domain
        (``gb200_nvl72``) gives plain NVLS through its heads.
    chunks : int, optional
        Pipeline chunks, 1 to 4096.
    inter : {"tree", "sharp"}, optional
        The reduction across nodes.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> t = wc.topology.rail_optimized(3, 2, nvswitches=2)
    >>> s = wc.build("fabric_nvls_tree_allreduce", topology=t, size_bytes=11)
    >>> x = np.random.default_rng(0).integers(0, 9, (s.num_ranks, 11))
    >>> bool((wc.execute(s, x)[:6] == x[:6].sum(0)).all())
    True
    """
    if topology is None:
        raise ValueError(
            "topology is required: nodes of NVSwitch chips on a network, e.g. "
            "wc.topology.dgx_h100_rail(2)"
        )
    if inter not in ("tree", "sharp"):
        raise ValueError(f"inter must be 'tree' or 'sharp', got {inter!r}")
    p = ranks
    k = _chunks(chunks)
    n, e = _layout(p, topology)
    doms = nvls_domains(p, topology)
    g, nsw = len(doms[0][0]), len(doms[0][1])
    _check_size(k * nsw * (p + g * len(doms) * (g + 6)), k)
    shares = _weighted(size_bytes, [w for _, w in doms[0][1]])
    per = [kit.split_bytes(shares[j], k * g) for j in range(nsw)]
    sizes = [
        int(per[j][c * g + h]) for c in range(k) for j in range(nsw) for h in range(g)
    ]
    label = f"nvls_tree_allreduce(p={p}, chunks={k}, inter={inter})"
    prog = _program(n, e, p, sizes, label)
    last = np.full((p, nsw), -1, dtype=np.int64)
    trees: dict[int, dict[int, int]] = {}
    sent: dict[int, int] = {}
    for c in range(k):
        for j in range(nsw):
            b0 = (c * nsw + j) * g
            red = []
            for gpus, chips in doms:
                ids = prog.step(
                    gpus, chips[j][0], (b0, b0 + g), "reduce", deps=last[gpus, j]
                )
                last[gpus, j] = ids
                red.append(list(ids))
            for h in range(g):
                b = b0 + h
                heads = [gpus[h] for gpus, _ in doms]
                local = [
                    prog.send(chips[j][0], heads[d], b, "copy", deps=red[d])
                    for d, (_, chips) in enumerate(doms)
                ]
                if len(doms) == 1:
                    final = local
                elif inter == "tree":
                    final = _binary_tree(prog, heads, b, local)
                else:
                    if h not in trees:
                        trees[h] = _switch_tree(heads, topology)
                    ready = {x: [local[d]] for d, x in enumerate(heads)}
                    final = [
                        _reduce_in_tree(prog, trees[h], heads, b, ready, sent)
                    ] * len(doms)
                for d, (gpus, chips) in enumerate(doms):
                    store = prog.send(heads[d], chips[j][0], b, "copy", deps=[final[d]])
                    others = [x for x in gpus if x != heads[d]]
                    if others:
                        prog.send(chips[j][0], others, b, "copy", deps=[store])
    return prog.schedule()


def _binary_tree(
    prog: kit.Program, heads: list[int], block: int, local: list[int]
) -> list[int]:
    """Allreduce of ``block`` over ``heads`` in a binary tree; per head, its last write.

    Head ``d`` holds its node's sum once ``local[d]`` is done; it reduces
    into its parent (``(d - 1) // 2``) once its own children have reduced
    into it; reductions into one head are chained; the root's total is
    copied down the tree.
    """
    m = len(heads)
    done = list(local)  # per head: its latest write
    for d in range(m - 1, 0, -1):
        up = (d - 1) // 2
        done[up] = prog.send(
            heads[d], heads[up], block, "reduce", deps=[done[d], done[up]]
        )
    final = list(done)
    for d in range(1, m):
        final[d] = prog.send(
            heads[(d - 1) // 2], heads[d], block, "copy", deps=[final[(d - 1) // 2]]
        )
    return final
