"""Reading and writing the field's schedule and workload formats.

========================  =============================  ============================
Format                    Write                          Read
========================  =============================  ============================
MSCCL XML (NCCL / RCCL)   :func:`write_msccl`            :func:`read_msccl`
Chakra ET (ASTRA-sim)     :func:`write_chakra`           :func:`read_chakra`
Chakra ET, a workload     :func:`write_chakra_workload`  :func:`read_chakra_workload`
GOAL (LogGOPSim, ATLAHS)  :func:`write_goal`             :func:`read_goal`
========================  =============================  ============================

Every schedule writer verifies the schedule first; every reader raises
:class:`FormatError` (a ``ValueError``) naming the file, element and line of
the first problem. The Chakra workload functions read and write a
:class:`wafercoll.workloads.Workload` (compute, collective and message nodes).
"""

from ._common import FormatError
from .chakra import (
    CHAKRA_COMM_TYPES,
    CHAKRA_NODE_TYPES,
    chakra_attr_value,
    chakra_files,
    chakra_messages,
    chakra_traces,
    read_chakra,
    write_chakra,
)
from .chakra_workload import (
    CHAKRA_COLLECTIVES,
    chakra_workload_traces,
    read_chakra_workload,
    write_chakra_workload,
)
from .files import read_schedule
from .goal import GoalMessage, goal_text, read_goal, write_goal
from .msccl import MSCCL_LIMITS, msccl_xml, read_msccl, write_msccl

__all__ = [
    "CHAKRA_COLLECTIVES",
    "CHAKRA_COMM_TYPES",
    "CHAKRA_NODE_TYPES",
    "MSCCL_LIMITS",
    "FormatError",
    "GoalMessage",
    "chakra_attr_value",
    "chakra_files",
    "chakra_messages",
    "chakra_traces",
    "chakra_workload_traces",
    "goal_text",
    "read_chakra",
    "read_chakra_workload",
    "read_goal",
    "write_chakra",
    "write_chakra_workload",
    "write_goal",
    "msccl_xml",
    "read_msccl",
    "read_schedule",
    "write_msccl",
]
