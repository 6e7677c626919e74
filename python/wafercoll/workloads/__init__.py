"""Workloads: training steps and other DAGs of compute and communication.

A :class:`Workload` (:func:`wafercoll.workload`) holds compute nodes,
collective nodes and point-to-point sends with their dependencies;
:func:`simulate_workload` expands each collective into a schedule and runs
everything in one event loop on one topology, so that concurrent
collectives contend for links and compute occupies each rank's compute
unit. Compute time comes from a duration or from a
:class:`ComputeModel` such as :class:`Roofline`.

Examples
--------
>>> import wafercoll as wc
>>> w = wc.workload(4)
>>> a = [w.compute(r, 1e-3) for r in range(4)]
>>> w.collective("allreduce", 1 << 16, deps=a)
4
"""

from __future__ import annotations

from .compute import DEVICES, ComputeModel, Roofline, roofline
from .graph import KINDS, Node, Workload, workload
from .result import WorkloadResult
from .run import simulate_workload

__all__ = [
    "DEVICES",
    "KINDS",
    "ComputeModel",
    "Node",
    "Roofline",
    "Workload",
    "WorkloadResult",
    "roofline",
    "simulate_workload",
    "workload",
]
