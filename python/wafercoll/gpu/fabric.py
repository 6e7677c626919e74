"""How NCCL sees a GPU fabric: nodes, rails, channels, chunks and rings.

Everything the GPU builders take from NCCL's source (NVIDIA/nccl 2.30.7,
``makefiles/version.mk``) is here, in one named table with the file each
number comes from, so that the builders refer to names, never to bare
numbers.

Nodes and ranks
---------------
Rank ``n * gpus_per_node + i`` is GPU ``i`` (its *local index*, and its
rail) of node ``n``, the numbering of
:func:`wafercoll.topology.rail_optimized`. :func:`gpu_layout` reads
``gpus_per_node`` off a topology: one node for an NVSwitch machine (kind
``"nvswitch"``), and the GPUs that share rail switch 0 for a rail-optimised
one (GPU ``0`` and ``gpus_per_node`` are its first two). On a fat tree or a
dragonfly every host is a node of one GPU unless ``gpus_per_node`` groups
consecutive hosts.

Channels
--------
NCCL runs a collective on ``C`` channels (one thread block each), every
channel on its own ring or tree, and cuts the data into one contiguous part
per channel (:func:`channel_parts`); small collectives get fewer channels
(:func:`tuned_channels`: 32 KiB of data per channel at least). ``C``
follows from NCCL's topology search; :func:`default_channels` gives it for
the machines of :mod:`wafercoll.machines` by that search's arithmetic
(derived from the code, not measured on a machine):

* one DGX H100 (SM90): a GPU's 18 NVLinks count ``18 x SM90_NVLINK_BW =
  18 x 20.6 = 370.8`` GB/s (``src/graph/topo.h``); the ring search starts at
  the first SM90 intra-node speed, 60 GB/s (``sm90SpeedArrayIntra``,
  ``src/graph/search.cc``), which fits ``floor(370.8 / 60) = 6`` rings;
  ``ncclTopoDupChannels`` (``search.cc``) doubles them (bandwidth >= 50) to
  12 and ``ncclTopoPostset`` (``src/graph/connect.cc``) doubles again: 24;
* one DGX B200 or a GB200 NVL72 (SM100): ``18 x SM100_NVLINK_BW = 721.8``
  GB/s over the first SM100 speed, 90 GB/s: 8 rings, 16, then 32;
* several nodes, one NIC per GPU: the first SM90 inter-node speed, 48 GB/s
  (``sm90SpeedArrayInter``), leaves one ring per 50 GB/s NIC, so
  ``g = gpus_per_node`` rings (8 on DGX H100, whose rings then carry
  ``8 x 48 >= 370.8`` GB/s, the search's stopping rule). With ``g >= 5``
  ``ncclTopoDupChannels`` keeps them (it skips bandwidths under 50 with more
  than four channels) and ``ncclTopoPostset`` doubles them: 16 for
  ``g = 8`` (the count an NCCL log of two 8-GPU H100 nodes shows: trees
  ``[0]`` to ``[15]`` in NVIDIA/nccl issue #1357). Fewer than 16 are doubled
  once more by the SM90 rule of ``connect.cc`` (more than 45 GB/s per ring
  and several nodes): ``4 g`` for ``g = 5 .. 7``. With ``g <= 4``
  ``ncclTopoDupChannels`` doubles (to 24 GB/s rings, below that rule) and
  ``ncclTopoPostset`` doubles: ``4 g`` again. So ``4 g`` below 8 GPUs per
  node, ``2 g`` from 8 on;
* one node not in the table: ``2 g``, an assumption.

Both are capped at ``MAXCHANNELS = 64`` (``src/include/device.h``).

Ring order
----------
:func:`ring_orders` gives each channel's ring. In one node every channel
runs the same cycle ``0 -> 1 -> ... -> g - 1 -> 0`` (on NVSwitch,
``search.cc`` tries the neighbours ``i + 1`` first), channel ``c`` starting
at GPU ``c mod g``. Across nodes, NCCL's ring of a channel enters
a node through the NIC of one rail, visits every GPU of the node over
NVLink and leaves through the NIC of the same rail (``crossNic = 0``),
the last GPU handing its data to the NIC's GPU over NVLink (PXN). The
topologies here do not route through a peer GPU, so the ring instead
enters node ``n + 1`` on the rail on which it left node ``n``: channel
``c`` enters node 0 at GPU ``c mod g`` and node ``n`` at GPU ``(c + n) mod
g``, visits the node's other GPUs in cyclic order and leaves from the GPU
whose rail the next node enters by. Every inter-node hop therefore stays on
one rail switch, except for two GPUs per node and an odd number of nodes,
where a ring that flips rails at every node cannot close without one
cross-rail hop (the last node's exit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_int

__all__ = [
    "ALIGN_BYTES",
    "CHUNK_STEPS",
    "FABRICS",
    "HOST_FABRICS",
    "MAX_CHANNELS",
    "MIN_TRAFFIC_PER_CHANNEL",
    "NCCL_CHANNELS",
    "NCCL_SOURCE",
    "NCCL_STEPS",
    "SIMPLE_BUFFER_BYTES",
    "STEP_BYTES",
    "SIMPLE_THREADS",
    "SIMPLE_THREAD_THRESHOLD",
    "TRAFFIC_PER_BYTE",
    "channel_parts",
    "check_channels",
    "chunk_bytes",
    "default_channels",
    "gpu_layout",
    "ring_orders",
    "tuned_channels",
]

#: The NCCL release whose source the GPU builders follow.
NCCL_SOURCE = "NVIDIA NCCL 2.30.7 (github.com/NVIDIA/nccl)"
#: Slots of a connection's FIFO (``NCCL_STEPS``, ``src/include/device.h``).
NCCL_STEPS = 8
#: Buffer of the Simple protocol per connection (``DEFAULT_BUFFSIZE``, 4 MiB,
#: ``src/init.cc``).
SIMPLE_BUFFER_BYTES = 1 << 22
#: One step: ``stepSize = buffSize / NCCL_STEPS`` (``calcCollChunking``,
#: ``src/enqueue.cc``): 512 KiB.
STEP_BYTES = SIMPLE_BUFFER_BYTES // NCCL_STEPS
#: Steps per chunk of the ring, Simple protocol (``*_CHUNKSTEPS``,
#: ``src/include/collectives.h``); trees use one step per chunk
#: (``calcCollChunking``: ``chunkSteps`` only applies to Ring + Simple).
CHUNK_STEPS = {
    "allreduce": NCCL_STEPS // 2,
    "reduce_scatter": NCCL_STEPS // 2,
    "allgather": NCCL_STEPS // 2,
    "broadcast": 1,
    "reduce": 1,
}
#: Bytes moved per byte of data when the data is cut over channels
#: (``ncclFuncTrafficPerByte``, ``src/enqueue.cc``; ``"ranks"``: ``nRanks``).
TRAFFIC_PER_BYTE = {
    "allreduce": 2,
    "reduce_scatter": "ranks",
    "allgather": "ranks",
    "broadcast": 1,
    "reduce": 1,
}
#: Least traffic a channel gets (``MinTrafficPerChannel``, 32 KiB,
#: ``src/enqueue.cc``).
MIN_TRAFFIC_PER_CHANNEL = 32 << 10
#: Alignment of the last, shorter ring chunk (``alignUp(..., 16 /
#: sizeof(T))`` elements, ``src/device/all_reduce.h``): 16 bytes.
ALIGN_BYTES = 16
#: ``MAXCHANNELS`` (``src/include/device.h``).
MAX_CHANNELS = 64
#: Threads of a ring or tree channel, Simple protocol, on NVLink machines
#: (``NCCL_SIMPLE_MAX_NTHREADS``, ``src/include/device.h``; ``ncclTopoTuneModel``,
#: ``src/graph/tuning.cc``, takes 256 only when the rings' bandwidth is at most
#: PCIe's).
SIMPLE_THREADS = 512
#: Bytes per thread below which a channel is dropped
#: (``NCCL_SIMPLE_THREAD_THRESHOLD``, ``src/include/comm.h``).
SIMPLE_THREAD_THRESHOLD = 64
#: Topology kinds the GPU builders run on.
FABRICS = ("nvswitch", "rail_optimized", "fat_tree", "dragonfly")
#: Of those, the ones whose endpoints are hosts of one GPU by default.
HOST_FABRICS = ("fat_tree", "dragonfly")
#: Channels per machine of :mod:`wafercoll.machines` (topology name), from
#: the search arithmetic of the module docstring.
NCCL_CHANNELS = {"dgx_h100": 24, "dgx_b200": 32, "gb200_nvl72": 32}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _round_up(a: int, b: int) -> int:
    return _ceil_div(a, b) * b


def gpu_layout(
    ranks: int, topology: Any = None, gpus_per_node: Any = None
) -> tuple[int, int]:
    """``(nodes, gpus_per_node)`` of ``ranks`` GPUs, read off a topology if given.

    Parameters
    ----------
    ranks : int
        GPUs in the collective, ``nodes * gpus_per_node``.
    topology : Topology, optional
        An NVSwitch machine (one node of all its GPUs), a rail-optimised
        network (the GPUs of rail switch 0 are one per node), or a fat tree
        or dragonfly (one GPU per host by default).
    gpus_per_node : int, optional
        GPUs per node, 1 to ``ranks``; required without a topology that
        gives it, and must agree with one that does.

    Returns
    -------
    tuple of int

    Raises
    ------
    ValueError
        Naming the parameter and the accepted range.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.fabric import gpu_layout
    >>> gpu_layout(24, wc.topology.rail_optimized(3, 8))
    (3, 8)
    >>> gpu_layout(8, wc.topology.dgx_h100())
    (1, 8)
    >>> gpu_layout(12, gpus_per_node=4)
    (3, 4)
    >>> gpu_layout(16, wc.topology.fat_tree(4))
    (16, 1)
    """
    p = as_int(ranks, "ranks", 1)
    derived = None
    kind = getattr(topology, "kind", None)
    if kind == "nvswitch":
        derived = topology.num_endpoints
    elif kind == "rail_optimized":
        e = topology.num_endpoints
        links = topology.links
        # rail switch 0 is the first hidden router; its GPUs are 0, g, 2g, ...
        gpus = np.sort(links["src"][(links["dst"] == e) & (links["src"] < e)])
        derived = int(gpus[1] - gpus[0]) if gpus.size > 1 else e
    if gpus_per_node is None and kind in HOST_FABRICS:
        gpus_per_node = 1
    if gpus_per_node is None:
        if derived is None:
            raise ValueError(
                "gpus_per_node is required (or pass an NVSwitch or rail-optimised "
                "topology, which gives it)"
            )
        g = derived
    else:
        g = as_int(gpus_per_node, "gpus_per_node", 1, p)
        if derived is not None and g != derived:
            raise ValueError(
                f"gpus_per_node = {g} contradicts the topology's {derived} GPUs per "
                f"node ({topology.name})"
            )
    if g > p or p % g:
        raise ValueError(
            f"ranks must be a positive multiple of gpus_per_node = {g} (whole "
            f"nodes), got {p}"
        )
    return p // g, g


def default_channels(topology: Any, nodes: int, gpus_per_node: int) -> int:
    """NCCL's channel count on a machine (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.gpu.fabric import default_channels
    >>> default_channels(wc.topology.dgx_h100(), 1, 8)
    24
    >>> default_channels(wc.topology.dgx_h100_rail(4), 4, 8)
    16
    >>> default_channels(None, 5, 2), default_channels(None, 5, 16)
    (8, 32)
    """
    name = getattr(topology, "name", None)
    if nodes == 1:
        return NCCL_CHANNELS.get(name, min(MAX_CHANNELS, 2 * gpus_per_node))
    factor = 4 if gpus_per_node < 8 else 2
    return min(MAX_CHANNELS, factor * gpus_per_node)


def check_channels(channels: Any, topology: Any, nodes: int, gpus_per_node: int) -> int:
    """``channels`` checked against 1 .. ``MAX_CHANNELS``, or NCCL's default.

    Examples
    --------
    >>> from wafercoll.gpu.fabric import check_channels
    >>> check_channels(None, None, 2, 4), check_channels(3, None, 2, 4)
    (16, 3)
    """
    if channels is None:
        return default_channels(topology, nodes, gpus_per_node)
    return as_int(channels, "channels", 1, MAX_CHANNELS)


def tuned_channels(size_bytes: int, channels: int) -> int:
    """Channels NCCL gives a collective of ``size_bytes``: fewer for small data.

    ``topoGetAlgoInfo`` (``src/enqueue.cc``) drops channels, down to one,
    while ``size_bytes < channels x SIMPLE_THREADS x SIMPLE_THREAD_THRESHOLD``
    (32 KiB per channel); ``size_bytes`` is the whole vector (an allgather's
    output, a reduce-scatter's input: ``ncclFuncMaxSendRecvCount``).

    Examples
    --------
    >>> from wafercoll.gpu.fabric import tuned_channels
    >>> tuned_channels(1 << 20, 24), tuned_channels(100_000, 24), tuned_channels(5, 24)
    (24, 3, 1)
    """
    nc = as_int(channels, "channels", 1, MAX_CHANNELS)
    per = SIMPLE_THREADS * SIMPLE_THREAD_THRESHOLD
    return max(1, min(nc, int(size_bytes) // per))


def chunk_bytes(collective: str, algorithm: str = "ring") -> int:
    """NCCL's chunk of the Simple protocol: ``STEP_BYTES * chunkSteps``.

    Examples
    --------
    >>> from wafercoll.gpu.fabric import chunk_bytes
    >>> chunk_bytes("allreduce"), chunk_bytes("broadcast"), chunk_bytes(
    ...     "allreduce", "tree")
    (2097152, 524288, 524288)
    """
    steps = CHUNK_STEPS[collective] if algorithm == "ring" else 1
    return STEP_BYTES * steps


def channel_parts(count_bytes: int, collective: str, ranks: int, channels: int) -> list:
    """Bytes of each channel's contiguous part, as ``src/enqueue.cc`` cuts them.

    The data (``count_bytes``: the vector of an allreduce, broadcast or
    reduce, one rank's share of a reduce-scatter or allgather) is cut into
    cells that carry ``MIN_TRAFFIC_PER_CHANNEL`` of traffic (16-byte
    multiples); every channel gets the cells of ``1 / channels`` of the
    traffic, so small data uses fewer channels; the last part is shorter by
    what the cells overshoot. Only non-empty parts are returned (one empty
    part for no data).

    Examples
    --------
    >>> from wafercoll.gpu.fabric import channel_parts
    >>> channel_parts(1 << 20, "allreduce", 8, 24)[:2], len(
    ...     channel_parts(1 << 20, "allreduce", 8, 24))
    ([49152, 49152], 22)
    >>> channel_parts(40000, "allreduce", 8, 24)
    [16384, 16384, 7232]
    """
    n = int(count_bytes)
    if n <= 0:
        return [0]
    tpb = TRAFFIC_PER_BYTE[collective]
    tpb = ranks if tpb == "ranks" else tpb
    cell = _round_up(_ceil_div(MIN_TRAFFIC_PER_CHANNEL, tpb), ALIGN_BYTES)
    cells = _ceil_div(n, cell)
    traffic = max(MIN_TRAFFIC_PER_CHANNEL, n * tpb)
    per_channel = _round_up(traffic // channels, ALIGN_BYTES)
    per = min(cells, max(1, _ceil_div(per_channel, cell * tpb)))
    used = _ceil_div(cells, per)
    if used > channels:  # rounding overflow: NCCL spreads the rest evenly
        per, used = cells // channels, channels
    parts = [per * cell] * used
    parts[-1] = n - (used - 1) * per * cell
    return parts


def ring_orders(nodes: int, gpus_per_node: int, channels: int) -> np.ndarray:
    """Each channel's ring over the ranks (module docstring), shape (C, p).

    Examples
    --------
    >>> from wafercoll.gpu.fabric import ring_orders
    >>> ring_orders(3, 4, 2).tolist()
    [[0, 2, 3, 1, 5, 7, 4, 6, 10, 11, 9, 8], [1, 3, 0, 2, 6, 4, 5, 7, 11, 8, 10, 9]]
    """
    big_n = as_int(nodes, "nodes", 1)
    g = as_int(gpus_per_node, "gpus_per_node", 1)
    out = np.empty((channels, big_n * g), dtype=np.int64)
    for c in range(channels):
        entry = [(c + n) % g for n in range(big_n)]
        if big_n > 1 and g >= 3 and entry[-1] == entry[0]:
            entry[-1] = (entry[-1] + 1) % g  # node N-2 leaves two rails on
        row: list[int] = []
        for n in range(big_n):
            e = entry[n]
            x = entry[(n + 1) % big_n] if big_n > 1 else (e - 1) % g
            if x == e:  # one GPU per node, or the unavoidable cross-rail exit
                x = (e - 1) % g
            mid = [(e + k) % g for k in range(1, g) if (e + k) % g != x]
            local = [e] if g == 1 else [e, *mid, x]
            row.extend(n * g + i for i in local)
        out[c] = row
    return out
