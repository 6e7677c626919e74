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
from ._innet_common import (
    NVLS_SOURCE,
    check_chunks,
    check_size,
    links_of,
    node_layout,
    program,
)
from ._util import as_bool, as_int
from .algorithms import register_algorithm
from .innet_tree import nvls_domains, nvls_tree_allreduce, sharp_allreduce, sharp_tree
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
    _, e = node_layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
    src, dst, bw = links_of(topology)
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


@register_algorithm(
    "fabric_nvls_allreduce",
    "allreduce",
    families=("nvswitch", "star"),
    parameters={"chunks": 1, "via_head": True},
    source=NVLS_SOURCE,
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
    k = check_chunks(chunks)
    head = as_bool(via_head, "via_head")
    n, e = node_layout(p, topology)
    sw = nvls_switches(p, topology)
    heads = p if head else 1
    check_size(k * len(sw) * (p + heads * (p + 2)), k)
    shares = [int(x) for x in kit.split_weighted(size_bytes, [w for _, w in sw])]
    # Block (c, j, h): chunk c of switch j's share, head h's part of it.
    per = [kit.split_bytes(shares[j], k * heads) for j in range(len(sw))]
    sizes = [
        int(per[j][c * heads + h])
        for c in range(k)
        for j in range(len(sw))
        for h in range(heads)
    ]
    label = f"nvls_allreduce(p={p}, chunks={k}, via_head={head})"
    prog = program(n, e, p, sizes, label)
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
        shares = [int(x) for x in kit.split_weighted(size, [w for _, w in sw])]
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
    k = check_chunks(chunks)
    n, e = node_layout(p, topology)
    sw = nvls_switches(p, topology)
    check_size(k * len(sw) * 2 * (p + 1), k)
    return n, e, sw, _OwnerLayout(p, size_bytes, sw, k)


@register_algorithm(
    "fabric_nvls_reduce_scatter",
    "reduce_scatter",
    families=("nvswitch", "star"),
    parameters={"chunks": 1},
    source=NVLS_SOURCE.replace("allreduce", "reduce-scatter"),
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
    prog = program(n, e, p, lay.sizes, name, "reduce_scatter", lay.owners)
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
    source=NVLS_SOURCE.replace("allreduce", "allgather"),
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
    prog = program(n, e, p, lay.sizes, name, "allgather", lay.owners)
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
