"""Network models of the MCM paper: Table II and unit timesteps.

``TABLE_II`` is the paper's network configuration (Table II and Section VI-A
of *Enhancing Collective Communication in MCM Accelerators for Deep Learning
Training*, Laskar, Majhi et al., HPCA 2024):

=====================  ==============  =======================================
field                  value           source
=====================  ==============  =======================================
``bandwidth_Bps``      25e9            Table II "Bandwidth 25GBps" (as Simba)
``packet_bytes``       8192            Table II "Packet Size 8192B"
``flit_bytes``         512             Table II "Flit Size 512B"
``hop_latency_s``      21e-9           Table II "Per Flit Latency 21ns"
``switching``          cut_through     Table II "Virtual Cut-Through"
``clock_Hz``           1e9             Table II "Router Clock Frequency 1GHz"
=====================  ==============  =======================================

Dependencies are read as ``"dataflow"``: a chiplet forwards a chunk once it
has received it whole (message-level store-and-forward at the endpoints), and
the ordering the schedule needs between two reductions into one buffer, or
between the chunks of one stream on a link, only orders their packets into
the destination, so a chiplet receives from several links at once (see
the ``"cells"`` rule of :class:`wafercoll.kit.Program`). VC count and
buffer depth (4 VCs, 318 flits) are not modelled: routers buffer without limit.

How the authors' simulator encodes these numbers differs (recovered details,
section 2.8): a 512 B flit holds a link for 21 cycles and a message carries a
head flit, about 21.4 GiB/s of payload per link, and their "GB/s" are GiB/s.
``TABLE_II`` keeps the paper's stated values; figures report GB/s = 1e9 B/s.

``ARTIFACT`` is the same network as the authors' simulator runs it
(:func:`artifact`, recovered details §2.8): their BookSim configuration
(``anynet_mesh_*_200.cfg``, run with ``--bandwidth 200`` and
``per_message_time`` 357 in every committed result) and their driver
(``src/hmc.py``):

=====================  ==============  =======================================
field                  value           source
=====================  ==============  =======================================
``bandwidth_Bps``      8192 B / 357 ns a message is 16 data flits + 1 head flit
                                       of 512 B, each holding the
                                       (non-pipelined) link 21 cycles: 357
                                       cycles per 8 KiB (``per_message_time``)
``packet_bytes``       8192            ``message_size``
``pad_packets``        True            every message is 17 flits, so a chunk
                                       is rounded up to whole messages
``flit_bytes``         512             Table II; the head flit gates
                                       cut-through at the next router
``hop_latency_s``      3e-9            ``vc_alloc_delay`` 1 + ``sw_alloc_delay``
                                       1 + crossbar 1 cycle (``routing_delay``
                                       0; ``st_final_delay`` 1 by default,
                                       ``booksim_config.cpp`` line 146)
``alpha_s``            9e-9            per flow: the driver's four event
                                       cycles, the two chiplet channels (1
                                       cycle each) and the last router (3)
``dependencies``       complete        a chiplet sends a flow once all the
                                       messages it depends on have arrived
                                       (``depending_children`` in
                                       ``hmc.py``): chunk-level forwarding
``clock_Hz``           1e9             one cycle is 1 ns
=====================  ==============  =======================================

Measured in the artifact's BookSim (built from the commit above and driven
as ``src/booksim.py`` drives it): one 17-flit message over ``h``
router-to-router links takes ``341 + 24 h`` cycles from ``IssueMessage`` to
``PeekMessage`` (365, 389, 413 and 485 cycles for 1, 2, 3 and 6 links),
``M`` messages on one link ``357 (M - 1)`` more: 357 cycles per message, 21
per hop (the head flit) plus 3 in the router. (Here a 512 B head flit at
the payload rate takes 22.3 cycles: 1.3 more per hop past the first.) The
driver adds four cycles per flow (``src/hmc.py``: the next send is
scheduled one cycle after the arrival, lines 931-934, and its first
message one cycle later, line 762; the message buffers into and out of
BookSim each hold a message one cycle, lines 809 and ``src/booksim.py``
line 98), so a ring step of ``M``
messages takes ``357 M + 12`` cycles (the artifact's 4x4 ring log: 2,868
cycles for 8 messages). A reduced flow is aggregated first
(``src/hmc.py`` lines 904 and 960-969, ``src/npu.py`` lines 14-22):
``ceil(ceil(params / 16) / 256)`` cycles for its ``params = bytes / 4``
fp32 values over 16 vaults (``--num-vaults 16`` in every run script) and
256-wide arrays (``google.cfg``), one flow after the other on a chiplet,
and one more event cycle: 2,873 cycles per reduce-scatter step of 8
messages. That aggregation, ``M / 2 + 1`` cycles after a flow of ``M``
messages has arrived (0.14 % of its 357 M), is not modelled:
``gamma_s_per_byte`` would reduce each packet as it arrives, hiding all but
the last packet's share. Not modelled either: VC allocation and buffer limits
(4 VCs of 318 flits) and the driver's four network interfaces per chiplet
(one per mesh direction; injection is not a bottleneck on a mesh). Two
flows from two neighbours into one chiplet travel at once (measured: both
arrive after 2,864 cycles, as one alone); the tree builders order the two
reductions (the schedule semantics need it), see
:mod:`wafercoll.mcm.artifact_driver` for TTO as the driver runs it. The
authors report bandwidth as bytes / 2^30 per second (GiB/s).
:func:`artifact_cycles` gives the cycle counts the artifact committed, to
compare with.

``FIGURE_TIMESTEPS`` counts timesteps as the paper's figures do (Figs. 3, 5, 7):
one byte is one "piece", a link carries one piece per timestep, every
transfer is one packet sent store-and-forward, no latency; ``result.cycles``
is the number of timesteps. Build the schedule with ``size_bytes`` equal to
the number of pieces (e.g. a chunk of 9 pieces on a 3x3 mesh, one per
MultiTree tree). Dependencies are read as dataflow for the same reason as
above: two pieces reduced into one node in the same timestep stay in the same
timestep, as in the figures.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ..simulate import NetworkModel

__all__ = [
    "ARTIFACT",
    "ARTIFACT_ALGORITHMS",
    "TABLE_II",
    "FIGURE_TIMESTEPS",
    "artifact",
    "artifact_cycles",
    "artifact_layers",
    "artifact_training",
    "table_ii",
    "figure_timesteps",
]

#: Link bandwidth, Table II.
LINK_BANDWIDTH_BPS = 25e9
#: Packet size, Table II.
PACKET_BYTES = 8192
#: Flit size, Table II.
FLIT_BYTES = 512
#: Per-flit (per-hop) latency, Table II.
HOP_LATENCY_S = 21e-9
#: Router and chiplet clock, Table II and Section VI-A.
CLOCK_HZ = 1e9
#: Default TTO chunk, Section VI-B ("98304B").
TTO_CHUNK_BYTES = 98304


def table_ii() -> NetworkModel:
    """The network of the paper's Table II (see the module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> net = wc.mcm.table_ii()
    >>> net.bandwidth_Bps  # "Bandwidth 25GBps"
    25000000000.0
    >>> net.packet_bytes, net.flit_bytes  # "Packet Size 8192B", "Flit Size 512B"
    (8192, 512)
    >>> net.hop_latency_s, net.switching  # "21ns", "Virtual Cut-Through"
    (2.1e-08, 'cut_through')
    >>> net == wc.mcm.TABLE_II
    True
    """
    return NetworkModel(
        LINK_BANDWIDTH_BPS,
        hop_latency_s=HOP_LATENCY_S,
        packet_bytes=PACKET_BYTES,
        flit_bytes=FLIT_BYTES,
        switching="cut_through",
        clock_Hz=CLOCK_HZ,
        dependencies="dataflow",
        name="mcm_table_ii",
    )


#: Payload bytes of one artifact message (``message_size``).
ARTIFACT_MESSAGE_BYTES = 8192
#: Cycles one message holds a link: 17 flits x 21 cycles (``per_message_time``).
ARTIFACT_MESSAGE_CYCLES = 357
#: Messages one BookSim input port buffers: ``num_vcs`` 4 x ``vc_buf_size``
#: 318 flits (``anynet_mesh_*_200.cfg``) over 17 flits per message: the
#: ``buffer_packets`` of ``simulate(..., engine="routers")`` for the artifact.
ARTIFACT_BUFFER_PACKETS = 4 * 318 // 17
#: Network interfaces per chiplet in the artifact's mesh runs: ``--radix 4``
#: for every algorithm but DBTree (``--radix 1``) in all its run scripts
#: (``utils/run_scripts``), each a BookSim node of its own on the
#: chiplet's router (``mesh_{N}_200.txt``).
ARTIFACT_INTERFACES = 4
#: Router delay per hop in cycles: ``vc_alloc_delay`` + ``sw_alloc_delay`` +
#: ``st_final_delay`` (crossbar), 1 each (measured: 24 cycles per extra hop
#: = 21 for the head flit + 3).
ARTIFACT_ROUTER_CYCLES = 3
#: Cycles every flow costs besides its hops (module docstring): the driver's
#: 4 event cycles, the injection and ejection channels (1 each) and the
#: destination's router (3).
ARTIFACT_FLOW_CYCLES = 9


def artifact() -> NetworkModel:
    """The network as the authors' BookSim artifact simulates it (see above).

    Examples
    --------
    A link carries 8 KiB per 357 cycles (``per_message_time``), about
    21.4 GiB/s:

    >>> import wafercoll as wc
    >>> net = wc.mcm.artifact()
    >>> round(net.bandwidth_Bps * 357e-9), round(net.bandwidth_Bps / 2**30, 1)
    (8192, 21.4)
    >>> net.pad_packets, net.dependencies
    (True, 'complete')

    The ring AllReduce of 1 MiB on 4x4, for which the artifact committed
    86136 cycles (:func:`artifact_cycles`):

    >>> m = wc.topology.mesh(4, 4)
    >>> s = wc.build("mesh_ring_allreduce", topology=m, size_bytes=1 << 20)
    >>> wc.simulate(s, m, net).cycles
    86040.0
    """
    cycle = 1.0 / CLOCK_HZ
    return NetworkModel(
        ARTIFACT_MESSAGE_BYTES / (ARTIFACT_MESSAGE_CYCLES * cycle),
        hop_latency_s=ARTIFACT_ROUTER_CYCLES * cycle,
        alpha_s=ARTIFACT_FLOW_CYCLES * cycle,
        packet_bytes=ARTIFACT_MESSAGE_BYTES,
        flit_bytes=FLIT_BYTES,
        pad_packets=True,
        switching="cut_through",
        clock_Hz=CLOCK_HZ,
        dependencies="complete",
        name="mcm_artifact",
    )


#: The artifact's algorithm names and the builders that move data the same
#: way (``ring2dn`` and ``dtree`` do not; see :func:`artifact_cycles`).
ARTIFACT_ALGORITHMS = {
    "ring": "mesh_ring_allreduce",
    "ring_odd": "mesh_ring_allreduce",
    "ring_bi": "mesh_ring_bi_allreduce",
    "ring_odd_bi": "mesh_ring_bi_odd_allreduce",
    "ring2dn": "mesh_ring_2d_allreduce",
    "dtree": "mesh_dbtree_allreduce",
    "multitree": "mesh_multitree_allreduce",
    "mesh_overlap_2d_1": "mesh_tto_allreduce",
}


@functools.lru_cache(maxsize=4)
def _table(name: str) -> dict[str, np.ndarray]:
    """The columns of a CSV of ``wafercoll/mcm/data`` (read-only arrays).

    Lines starting with ``#`` are comments; a column whose values are all
    digits (or empty, read as 0) is int64, any other a string column.
    """
    from importlib.resources import files

    text = files("wafercoll.mcm").joinpath("data", name).read_text()
    lines = [ln for ln in text.splitlines() if ln and ln[0] != "#"]
    header = lines[0].split(",")
    rows = [ln.split(",") for ln in lines[1:]]
    out = {}
    for k, col in enumerate(header):
        values = [r[k] for r in rows]
        if all(v.isdigit() or not v for v in values):
            a = np.array([int(v) if v else 0 for v in values], dtype=np.int64)
        else:
            a = np.array(values)
        a.setflags(write=False)
        out[col] = a
    return out


@functools.lru_cache(maxsize=1)
def _artifact_runs() -> dict[str, np.ndarray]:
    t = _table("mcm_artifact_cycles.csv")
    size = 4 * t["params"]  # fp32 parameters to bytes
    chunk = 4 * t["chunk_params"]
    for a in (size, chunk):
        a.setflags(write=False)
    return {
        "figure": t["figure"],
        "algorithm": t["algorithm"],
        "chiplets": t["chiplets"],
        "size_bytes": size,
        "chunk_bytes": chunk,
        "radix": t["radix"],
        "model": t["model"],
        "array": t["array"],
        "cycles": t["cycles"],
    }


def artifact_cycles(figure: str | None = None) -> dict[str, Any]:
    """The AllReduce cycle counts committed with the authors' artifact.

    Source: github.com/sabuj7177/TTO_HPCA_2024 commit ``156128c5``,
    ``HPCA_2024_final/bandwidth`` (``figure == "fig8"``: every algorithm on
    4x4, 5x5, 8x8 and 9x9 meshes, 1 MiB to 1 GiB),
    ``HPCA_2024_final/scalability`` (``"fig9"``: 375 KiB per chiplet on
    3x3 .. 16x16, every algorithm but DBTree) and
    ``HPCA_2024_final/chunk_utilization`` (``"fig14"``: TTO on 8x8, 128 MiB,
    chunks of 12 KiB to 6 MiB) and ``HPCA_2024_final/models`` (``"fig10"``:
    the AllReduce of each DNN's fp32 gradients on 8x8 and 9x9; ``size_bytes``
    is 4 x the parameters the artifact counts, ``model`` the DNN) and
    ``HPCA_2024_final/simba/comm`` (``"fig13"``: the same on the 6x6 Simba
    mesh, ``array`` the side of the PEs' MAC arrays, whose reductions the
    artifact also times), collected by ``tools/import_mcm_artifact.py``.

    Two runs are not references for our builders of the same label:
    ``ring2dn`` is the artifact's own Ring-2D, a two-phase 2D reduce-scatter
    and allgather over per-root bounce chains (half of the data row then
    column, the other half column then row; ``mesh_ring_2d_artifact_allreduce``
    builds it), not the hierarchical rings of ``mesh_ring_2d_allreduce``;
    ``dtree`` ran with ``--radix 1``, four chiplets per BookSim router, not on
    a 2D mesh (recovered details §2.8; ``mesh_dbtree_artifact_allreduce`` on
    ``artifact_dbtree_topology`` runs it).

    Parameters
    ----------
    figure : {"fig8", "fig9", "fig10", "fig13", "fig14"} or None
        Only the runs of one figure (default: all).

    Returns
    -------
    dict of str to ndarray
        ``figure``, ``algorithm`` (the artifact's name; the builder is
        :data:`ARTIFACT_ALGORITHMS` ``[name]``), ``chiplets``,
        ``size_bytes``, ``chunk_bytes`` (TTO's chunk, 0 otherwise),
        ``radix``, ``model`` (empty but for ``"fig10"`` and ``"fig13"``),
        ``array`` (0 but for ``"fig13"``) and ``cycles``, one entry per run
        (read-only).

    Examples
    --------
    Fig. 8 has 4 meshes x 11 sizes (1 MiB, 2 MiB, ..., 1 GiB) x 6
    algorithms (``ring`` or ``ring_odd``, ``ring_bi`` or ``ring_odd_bi``,
    ``ring2dn``, ``dtree``, ``multitree`` and TTO); Fig. 14 one run per
    chunk, 12 KiB to 6 MiB:

    >>> import wafercoll as wc
    >>> fig8 = wc.mcm.artifact_cycles("fig8")
    >>> len(fig8["cycles"]), sorted(set(fig8["chiplets"].tolist()))
    (264, [16, 25, 64, 81])
    >>> fig14 = wc.mcm.artifact_cycles("fig14")
    >>> chunks = sorted(fig14["chunk_bytes"].tolist())
    >>> chunks == [12288 << k for k in range(10)]
    True

    The ring AllReduce of 1 MiB on 4x4 (see :func:`artifact` for our
    simulation of it):

    >>> run = (
    ...     (fig8["algorithm"] == "ring")
    ...     & (fig8["chiplets"] == 16)
    ...     & (fig8["size_bytes"] == 1 << 20)
    ... )
    >>> fig8["cycles"][run].tolist()
    [86136]
    """
    out = _artifact_runs()
    if figure is None:
        return out
    figures = ("fig8", "fig9", "fig10", "fig13", "fig14")
    if figure not in figures:
        raise ValueError(f"figure must be one of {figures} or None, got {figure!r}")
    sel = out["figure"] == figure
    return {k: v[sel] for k, v in out.items()}


def artifact_training() -> dict[str, np.ndarray]:
    """Training cycles per iteration the artifact committed (Figs. 10, 11, 13).

    The authors' extended SCALE-Sim (output stationary) on the 6x6 Simba
    mesh with 32 x 32 and 16 x 16 arrays (``HPCA_2024_final/simba/train``)
    and on 8x8 with 256 x 256 arrays (``HPCA_2024_final/overlap/train``):
    ``model``, ``array_rows``,
    ``array_cols``, ``chiplets``, ``pes`` (MAC arrays per chiplet),
    ``samples_per_pe`` and ``cycles`` (forward and backward of one
    iteration), one entry per run (read-only).

    Examples
    --------
    Seven DNNs, each with 16 x 16 and 32 x 32 arrays on 6x6 and 256 x 256
    on 8x8:

    >>> import wafercoll as wc
    >>> t = wc.mcm.artifact_training()
    >>> len(t["cycles"])
    21
    >>> sorted(set(zip(t["array_rows"].tolist(), t["chiplets"].tolist())))
    [(16, 36), (32, 36), (256, 64)]
    >>> alexnet = (t["model"] == "alexnet") & (t["chiplets"] == 64)
    >>> t["cycles"][alexnet].tolist()
    [4210571]
    """
    return dict(_table("mcm_artifact_training.csv"))


def artifact_layers() -> dict[str, np.ndarray]:
    """When each layer's gradient is ready in the artifact's 8x8 runs (Fig. 11).

    The authors' extended SCALE-Sim with 256 x 256 arrays
    (``HPCA_2024_final/overlap/train``, ``training_by_layer``): ``model``,
    ``array``, ``layer`` (index in the topology file) and ``ready_cycles``
    (cycles from the start of the iteration), read-only.

    Examples
    --------
    AlexNet's five layers: the backward pass produces the last layer's
    gradient first and the first layer's just before the iteration ends
    (4210571 cycles in :func:`artifact_training`):

    >>> import wafercoll as wc
    >>> la = wc.mcm.artifact_layers()
    >>> sorted(set(la["array"].tolist()))
    [256]
    >>> alexnet = la["model"] == "alexnet"
    >>> la["layer"][alexnet].tolist()
    [0, 1, 2, 3, 4]
    >>> la["ready_cycles"][alexnet].tolist()
    [4209656, 1926471, 438734, 430039, 415671]
    """
    return dict(_table("mcm_artifact_layers.csv"))


def figure_timesteps() -> NetworkModel:
    """The timestep counting of the paper's Figs. 3, 5 and 7.

    :meth:`wafercoll.NetworkModel.unit_timestep` (one piece, here one byte,
    per link per timestep, store-and-forward per transfer) with dataflow
    dependencies: a chiplet forwards a piece in the timestep after it has
    it, as the figures count. ``result.cycles`` is the number of timesteps.

    Examples
    --------
    Fig. 7: TTO's reduce-scatter of 45 pieces in chunks of 9 on a 3 x 3 mesh
    takes 24 timesteps.

    >>> import wafercoll as wc
    >>> m = wc.mesh(3, 3)
    >>> name = "mesh_tto_reduce_scatter"
    >>> s = wc.build(name, topology=m, size_bytes=45, chunk_bytes=9)
    >>> wc.simulate(s, m, wc.mcm.figure_timesteps()).cycles
    24.0
    """
    return NetworkModel.unit_timestep(1).replace(
        dependencies="dataflow", name="mcm_figure_timesteps"
    )


TABLE_II: NetworkModel = table_ii()
ARTIFACT: NetworkModel = artifact()
FIGURE_TIMESTEPS: NetworkModel = figure_timesteps()
