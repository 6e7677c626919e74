"""Topologies: the machines schedules run on.

A :class:`Topology` holds endpoints (which hold data), hidden routers, directed
links with bandwidth and latency, and a route between every pair of
endpoints. The constructors are plain functions: :func:`line`, :func:`ring`,
:func:`mesh`, :func:`torus`, :func:`star`, :func:`cluster`, :func:`custom` and
:func:`wormhole_n150` (the Tenstorrent Wormhole n150's physical NoC,
:mod:`wafercoll.topology.wormhole`). Named machines with their network
presets and sources are in :mod:`wafercoll.machines`.
"""

from __future__ import annotations

from ._base import (
    Topology,
    check_rank_to_node,
    cluster,
    custom,
    line,
    mesh,
    ring,
    star,
    torus,
)
from .wormhole import WormholeN150, wormhole_n150

__all__ = [
    "Topology",
    "WormholeN150",
    "check_rank_to_node",
    "cluster",
    "custom",
    "line",
    "mesh",
    "ring",
    "star",
    "torus",
    "wormhole_n150",
]
