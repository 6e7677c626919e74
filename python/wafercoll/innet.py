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
* ``via_head=True``: ``T = (2 + 1 / p) S / W``: each head's block crosses
  its link twice more (``S / (p W)`` each way), and the last multicasts
  queue behind the others' on every downlink.

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

__all__ = ["nvls_allreduce", "nvls_switches", "sharp_allreduce", "sharp_tree"]

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


def _program(n: int, e: int, p: int, sizes: list[int], name: str) -> kit.Program:
    """A program over ``n`` ranks: GPUs ``0 .. p - 1`` take part, ranks >= e switch."""
    return kit.Program(
        n,
        sizes,
        "allreduce",
        rule="explicit",
        participants=range(p),
        switches=range(e, n),
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
    n, e = _layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
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
        for i in range(p)
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
        raise ValueError(
            f"no switch of {topology.name} reaches all of GPUs 0 .. {p - 1}"
        )
    parent: dict[int, int] = {best: -1}
    for i in range(p):
        a = min(
            (x for x in attach[i] if x in best_dist), key=lambda x: (best_dist[x], x)
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
    families=("fat_tree", "rail_optimized", "star", "nvswitch"),
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
    root = next(v for v, u in parent.items() if u < 0)
    depth = {}
    for v in parent:
        d, x = 0, v
        while parent[x] >= 0:
            x, d = parent[x], d + 1
        depth[v] = d
    # Switches deepest first: every one forwards after all its children.
    inner = sorted(
        (v for v in parent if v >= e and v != root), key=lambda v: (-depth[v], v)
    )
    sizes = [int(x) for x in kit.split_bytes(size_bytes, k)]
    prog = _program(n, e, p, sizes, f"sharp_allreduce(p={p}, chunks={k})")
    gpus = np.arange(p)
    last_gpu = np.full(p, -1, dtype=np.int64)
    last_sw: dict[int, int] = {}
    for c in range(k):
        into: dict[int, list[int]] = {v: [] for v in parent if v >= e}
        ids = prog.step(gpus, [parent[i] for i in range(p)], c, "reduce", deps=last_gpu)
        last_gpu = ids
        for i, t in enumerate(ids.tolist()):
            into[parent[i]].append(t)
        for v in inner:
            deps = into[v] + ([last_sw[v]] if v in last_sw else [])
            t = prog.send(v, parent[v], c, "reduce", deps=deps)
            last_sw[v] = t
            into[parent[v]].append(t)
        prog.send(root, list(range(p)), c, "copy", deps=into[root])
    return prog.schedule()
