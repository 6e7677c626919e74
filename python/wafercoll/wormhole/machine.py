"""The Tenstorrent Wormhole n150's network model; its topology is in wafercoll.topology.

The physical NoC (10 x 12 torus, two unidirectional NoCs, harvested rows,
DRAM endpoints) is :func:`wafercoll.topology.wormhole_n150`
(:mod:`wafercoll.topology.wormhole`); its constants are re-exported here.
The machine (topology and network preset, with sources) is the entry
``wormhole_n150`` of :mod:`wafercoll.machines`.
"""

from __future__ import annotations

from .._util import as_int, as_real
from ..network import NetworkModel
from ..topology.wormhole import (
    CLOCK_HZ,
    DRAM_CHANNEL_BPS,
    DRAM_TILES,
    FLIT_BYTES,
    HOP_CYCLES,
    LINK_BYTES_PER_CYCLE,
    MAX_PACKET_BYTES,
    PHYSICAL_COLS,
    PHYSICAL_ROWS,
    TENSIX_COLS,
    TENSIX_ROWS,
    WormholeN150,
    noc_hops,
    wormhole_n150,
)

__all__ = [
    "CLOCK_HZ",
    "DRAM_CHANNEL_BPS",
    "DRAM_TILES",
    "FLIT_BYTES",
    "HOP_CYCLES",
    "LINK_BYTES_PER_CYCLE",
    "MAX_PACKET_BYTES",
    "PHYSICAL_COLS",
    "PHYSICAL_ROWS",
    "TENSIX_COLS",
    "TENSIX_ROWS",
    "WormholeN150",
    "n150_network",
    "noc_hops",
    "wormhole_n150",
]


def n150_network(
    hop_cycles: float = HOP_CYCLES,
    clock_Hz: float = CLOCK_HZ,
    packet_bytes: int = MAX_PACKET_BYTES,
) -> NetworkModel:
    """Network model of the Wormhole n150 NoC (recovered details, Section 4.3).

    Each hop costs ``hop_cycles`` (9, router to neighbouring router; thesis
    Section 4.2: "around nine clock cycles"), packets are at most 8 KiB (256
    data flits) of 32-byte flits, switching is cut-through (wormhole), and
    link bandwidths come from the topology (32 B/cycle at 1 GHz on
    :func:`wormhole_n150`; pass ``bandwidth_Bps=32e9`` to a plain torus).
    ``result.cycles`` gives cycles. The header flit of every packet
    (8192 / 8224 of raw throughput) is not modelled.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> net = wormhole.n150_network()
    >>> net.clock_Hz
    1000000000.0
    """
    clock = as_real(clock_Hz, "clock_Hz", positive=True)
    return NetworkModel(
        None,
        hop_latency_s=as_real(hop_cycles, "hop_cycles", 0.0) / clock,
        packet_bytes=as_int(packet_bytes, "packet_bytes", FLIT_BYTES),
        flit_bytes=FLIT_BYTES,
        switching="cut_through",
        clock_Hz=clock,
        name="wormhole_n150",
    )
