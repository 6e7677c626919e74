"""The Tenstorrent Wormhole n150 (paper 002): Swing and recursive doubling on tori.

The topology itself is :func:`wafercoll.topology.torus` (``wc.topology.torus(rows,
cols)``); this package holds the algorithms and models.

Modules: :mod:`~wafercoll.wormhole.swing` (peers and the block rule),
:mod:`~wafercoll.wormhole.builders` (``swing_lo``, ``swing_bo``, ``rd_lo``,
``rd_bo``, ``shared_memory``, ``ring_bidir`` for :func:`wafercoll.build`),
:mod:`~wafercoll.wormhole.machine` (the Wormhole n150 topology and its network
preset ``"wormhole_n150"``), :mod:`~wafercoll.wormhole.hops` (per-step hop
tables) and :mod:`~wafercoll.wormhole.model` (the thesis's runtime model).
"""

from __future__ import annotations

from . import builders, machine, model, swing
from .builders import TORUS_ALGORITHMS, hamiltonian_ring
from .hops import HopTable, hop_table
from .machine import WormholeN150, n150_network, wormhole_n150
from .model import THESIS, RooflineParams, roofline, thesis_time
from .swing import (
    peer_table,
    rd_peer,
    reduce_scatter_steps,
    rho,
    send_blocks,
    step_plan,
    swing_peer,
)

__all__: list[str] = [
    "THESIS",
    "TORUS_ALGORITHMS",
    "RooflineParams",
    "roofline",
    "thesis_time",
    "HopTable",
    "hop_table",
    "WormholeN150",
    "builders",
    "machine",
    "model",
    "n150_network",
    "wormhole_n150",
    "hamiltonian_ring",
    "peer_table",
    "rd_peer",
    "reduce_scatter_steps",
    "rho",
    "send_blocks",
    "step_plan",
    "swing",
    "swing_peer",
]
