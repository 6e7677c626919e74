"""Collectives of GPU machines: NCCL's algorithms and hierarchical 2D ones.

:mod:`wafercoll.gpu.fabric` holds what NCCL's source says about channels,
chunks and ring orders; :mod:`wafercoll.gpu.nccl` builds NCCL's ring and
double-binary-tree collectives (``nccl_ring_*``, ``nccl_tree_allreduce``);
:mod:`wafercoll.gpu.hier2d` the two-level ones that work inside the nodes
over NVLink and across them per rail (``gpu_hier2d_*``). All run on the
NVSwitch machines and rail-optimised networks of
:mod:`wafercoll.topology` (``dgx_h100``, ``dgx_b200``, ``gb200_nvl72``,
``rail_optimized``, ``dgx_h100_rail``), on fat trees and dragonflies (a
host is a node of one GPU, or ``gpus_per_node`` consecutive hosts are one
node), or on ranks alone with ``gpus_per_node``.

Examples
--------
>>> import wafercoll as wc
>>> s = wc.build("nccl_tree_allreduce", topology=wc.topology.dgx_h100_rail(3),
...              size_bytes=1 << 16)
>>> wc.verify(s).ok
True
"""

from __future__ import annotations

from . import fabric, hier2d, nccl

__all__ = ["fabric", "hier2d", "nccl"]
