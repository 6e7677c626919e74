"""Reading and writing the field's schedule formats.

========================  ==========================  ===========================
Format                    Write                       Read
========================  ==========================  ===========================
MSCCL XML (NCCL / RCCL)   :func:`write_msccl`         :func:`read_msccl`
Chakra ET (ASTRA-sim)     :func:`write_chakra`        :func:`read_chakra`
GOAL (LogGOPSim, ATLAHS)  :func:`write_goal`          :func:`read_goal`
========================  ==========================  ===========================

Every writer verifies the schedule first; every reader raises
:class:`FormatError` (a ``ValueError``) naming the file, element and line of
the first problem.
"""

from ._common import FormatError
from .chakra import CHAKRA_NODE_TYPES, chakra_traces, read_chakra, write_chakra
from .files import read_schedule
from .goal import GoalMessage, goal_text, read_goal, write_goal
from .msccl import MSCCL_LIMITS, msccl_xml, read_msccl, write_msccl

__all__ = [
    "CHAKRA_NODE_TYPES",
    "MSCCL_LIMITS",
    "FormatError",
    "GoalMessage",
    "chakra_traces",
    "goal_text",
    "read_chakra",
    "read_goal",
    "write_chakra",
    "write_goal",
    "msccl_xml",
    "read_msccl",
    "read_schedule",
    "write_msccl",
]
