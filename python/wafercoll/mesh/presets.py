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

``UNIT_TIMESTEP`` counts timesteps as the paper's figures do (Figs. 3, 5, 7):
one byte is one "piece", a link carries one piece per timestep, every
transfer is one packet sent store-and-forward, no latency; ``result.cycles``
is the number of timesteps. Build the schedule with ``size_bytes`` equal to
the number of pieces (e.g. a chunk of 9 pieces on a 3x3 mesh, one per
MultiTree tree). Dependencies are read as dataflow for the same reason as
above: two pieces reduced into one node in the same timestep stay in the same
timestep, as in the figures.
"""

from __future__ import annotations

from ..simulate import NetworkModel

__all__ = ["TABLE_II", "UNIT_TIMESTEP", "table_ii", "unit_timestep"]

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
    """The network of the paper's Table II (see the module docstring)."""
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


def unit_timestep() -> NetworkModel:
    """One piece (byte) per link per timestep, store-and-forward per transfer."""
    return NetworkModel.unit_timestep(1).replace(
        dependencies="dataflow", name="mcm_unit_timestep"
    )


TABLE_II: NetworkModel = table_ii()
UNIT_TIMESTEP: NetworkModel = unit_timestep()
