"""Topologies: the machines schedules run on.

A :class:`Topology` holds endpoints (which hold data), hidden routers, directed
links with bandwidth and latency, and a route between every pair of
endpoints. The constructors are plain functions: :func:`line`, :func:`ring`,
:func:`mesh`, :func:`torus`, :func:`star`, :func:`cluster`, :func:`custom` and
:func:`wormhole_n150` (the Tenstorrent Wormhole n150's physical NoC,
:mod:`wafercoll.topology.wormhole`), and the GPU and datacenter fabrics of
:mod:`wafercoll.topology.fabrics` (:func:`nvswitch_node`, :func:`dgx_h100`,
:func:`dgx_b200`, :func:`gb200_nvl72`, :func:`fat_tree`,
:func:`rail_optimized`, :func:`dgx_h100_rail`, :func:`dragonfly`). Named
machines with their network presets and sources are in
:mod:`wafercoll.machines`.
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
from .fabrics import (
    dgx_b200,
    dgx_h100,
    dgx_h100_rail,
    dragonfly,
    fat_tree,
    gb200_nvl72,
    nvswitch_node,
    nvswitch_split,
    rail_optimized,
)
from .wormhole import WormholeN150, wormhole_n150

__all__ = [
    "Topology",
    "WormholeN150",
    "check_rank_to_node",
    "cluster",
    "custom",
    "dgx_b200",
    "dgx_h100",
    "dgx_h100_rail",
    "dragonfly",
    "fat_tree",
    "gb200_nvl72",
    "line",
    "mesh",
    "nvswitch_node",
    "nvswitch_split",
    "rail_optimized",
    "ring",
    "star",
    "torus",
    "wormhole_n150",
]
