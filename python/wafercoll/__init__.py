"""wafercoll: build, verify, model, bound, simulate and run collective algorithms.

The central object is the :class:`Schedule` (a DAG of block transfers between
ranks). Builders in the registry (:func:`algorithms`, :func:`build`) produce
schedules; analyses consume any schedule: :func:`verify` proves it computes its
collective, :func:`execute` runs it on NumPy arrays. Topologies
(:mod:`wafercoll.topology`: ``line``, ``ring``, ``mesh``, ``torus``,
``cluster``, ``wormhole_n150``, ``custom``) describe the machines schedules
run on, and :mod:`wafercoll.machines` names the papers' machines with their
network presets; :func:`simulate` runs a schedule on one under a
:class:`NetworkModel`, and :mod:`wafercoll.plot` draws the result. New
algorithms are written with :mod:`wafercoll.kit` and registered with
:func:`register_algorithm`.
"""

from __future__ import annotations

import os as _os

# Read by the compiled core at its first large block (mapped_alloc.hpp):
# checked here, before anything is allocated.
if _os.environ.get("WAFERCOLL_HUGE_PAGES", "") not in ("", "0", "1"):
    raise ValueError(
        "WAFERCOLL_HUGE_PAGES must be '1' (offer the simulator's and verifier's "
        "randomly read blocks for transparent huge pages) or '0' / unset (do not), "
        f"got {_os.environ['WAFERCOLL_HUGE_PAGES']!r}"
    )

try:
    from . import _core
except ImportError as exc:  # pragma: no cover - only without a compiled build
    raise ImportError(
        "wafercoll's compiled core (wafercoll._core) is missing: the package was not "
        "built. Install it with `pip install .` from the source tree."
    ) from exc

# Packages of algorithms per machine family, named after the machines (wafer,
# cluster, mcm, wormhole) so that no package hides a topology constructor:
# wc.mesh(3, 3) and wc.torus(8, 8) build topologies.
from . import cluster, generic, kit, mcm, topology, wafer, wormhole  # noqa: E402,I001 - register builders
from . import alltoall  # noqa: E402,I001 - registers the alltoall builders
from . import gpu  # noqa: E402,I001 - registers the NCCL and hierarchical GPU builders
from . import innet  # noqa: E402,I001 - registers the in-network (NVLS, SHARP) builders
from ._errors import ScheduleError, SimulationTooLarge, WafercollWarning
from .algorithms import (
    AlgorithmInfo,
    algorithm_info,
    algorithm_name,
    algorithms,
    build,
    register,
    register_algorithm,
    unregister_algorithm,
)
from .analysis import SpatialMetrics, VerifyReport, execute, metrics, verify
from .schedule import COLLECTIVES, Schedule, alltoallv_blocks
from .simulate import (
    NetworkModel,
    SimResult,
    release_memory,
    simulate,
    simulate_tasks,
    simulation_events,
)
from .topology import Topology, custom, line, mesh, ring, star, torus
from ._routers import Driver
from . import machines  # noqa: E402 - after the families it tabulates
from . import io  # noqa: E402,F401 - wc.io
from . import bounds  # noqa: E402 - wc.bounds
from .advisor import Advice, advise, crossover  # noqa: E402
from . import synthesis  # noqa: E402 - registers synth_treepack_allreduce
from .synthesis import synthesize  # noqa: E402
from .sweeps import sweep  # noqa: E402
from .machines import network_presets
from . import workloads  # noqa: E402 - wc.workloads
from .workloads import workload  # noqa: E402

__version__: str = _core.__version__

__all__ = [
    "workload",
    "workloads",
    "COLLECTIVES",
    "Advice",
    "AlgorithmInfo",
    "Driver",
    "NetworkModel",
    "Schedule",
    "ScheduleError",
    "SimulationTooLarge",
    "SimResult",
    "SpatialMetrics",
    "Topology",
    "VerifyReport",
    "WafercollWarning",
    "__version__",
    "advise",
    "algorithm_info",
    "algorithm_name",
    "algorithms",
    "alltoall",
    "alltoallv_blocks",
    "bounds",
    "build",
    "cluster",
    "innet",
    "crossover",
    "custom",
    "execute",
    "generic",
    "gpu",
    "kit",
    "line",
    "machines",
    "mcm",
    "mesh",
    "metrics",
    "network_presets",
    "register",
    "register_algorithm",
    "ring",
    "simulate",
    "simulate_tasks",
    "release_memory",
    "simulation_events",
    "star",
    "sweep",
    "synthesis",
    "synthesize",
    "topology",
    "torus",
    "unregister_algorithm",
    "verify",
    "wafer",
    "wormhole",
]
