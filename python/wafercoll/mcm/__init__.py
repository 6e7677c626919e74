"""Collectives on meshes of chiplets: rings, trees, MultiTree and TTO.

The algorithms of *Enhancing Collective Communication in MCM Accelerators for
Deep Learning Training* (Laskar, Majhi et al., HPCA 2024) and its baselines,
as verified schedules on :func:`wafercoll.topology.mesh`:
:mod:`~wafercoll.mcm.builders` registers ``mesh_ring``, ``mesh_ring_bi``,
``mesh_ring_bi_odd``, ``mesh_ring_2d``, ``mesh_dbtree``, ``mesh_multitree`` and
``mesh_tto`` with :func:`wafercoll.build`; :mod:`~wafercoll.mcm.machine` holds
the network models ``TABLE_II`` (as the paper states it), ``ARTIFACT`` (as
the authors' BookSim artifact simulates it, with its committed cycle counts in
:func:`artifact_cycles`) and ``FIGURE_TIMESTEPS``;
:mod:`~wafercoll.kit.orders` the cycles; :mod:`~wafercoll.mcm.trees`
the trees; :mod:`~wafercoll.mcm.training` the training-time model of
Section VIII-B, and :mod:`~wafercoll.mcm.workloads` the same training
iterations as workloads for :func:`wafercoll.workloads.simulate_workload`.

The topology itself is :func:`wafercoll.topology.mesh` (``wc.topology.mesh(rows,
cols)``); this package holds the algorithms and models.

Examples
--------
>>> import wafercoll as wc
>>> m = wc.topology.mesh(3, 3)
>>> s = wc.build("mesh_tto_reduce_scatter", topology=m, size_bytes=45, chunk_bytes=9)
>>> wc.simulate(s, m, wc.mcm.FIGURE_TIMESTEPS).cycles  # Fig. 7: 24
24.0
"""

from __future__ import annotations

from ..kit.orders import excluded_node, hamiltonian_cycle, hamiltonian_path
from . import artifact_driver, artifact_ring2d, systolic, training, workloads
from .artifact_multitree import artifact_multitree  # registers the variant too
from .artifact_topology import (
    artifact_anynet_routers,
    artifact_dbtree_stages,
    artifact_dbtree_topology,
)
from .builders import MESH_ALGORITHMS, mesh_shape
from .hmc import hmc_driver
from .machine import (
    ARTIFACT,
    ARTIFACT_ALGORITHMS,
    FIGURE_TIMESTEPS,
    TABLE_II,
    TTO_CHUNK_BYTES,
    artifact,
    artifact_cycles,
    artifact_layers,
    artifact_training,
    figure_timesteps,
    table_ii,
)
from .trees import (
    MultiTree,
    TTOTrees,
    double_binary_tree,
    multitree,
    tree_depths,
    tto_trees,
)

__all__: list[str] = [
    "ARTIFACT",
    "ARTIFACT_ALGORITHMS",
    "MESH_ALGORITHMS",
    "TABLE_II",
    "TTO_CHUNK_BYTES",
    "FIGURE_TIMESTEPS",
    "MultiTree",
    "TTOTrees",
    "artifact",
    "artifact_anynet_routers",
    "artifact_driver",
    "artifact_multitree",
    "artifact_ring2d",
    "artifact_cycles",
    "artifact_dbtree_stages",
    "artifact_dbtree_topology",
    "artifact_layers",
    "artifact_training",
    "double_binary_tree",
    "excluded_node",
    "hamiltonian_cycle",
    "hamiltonian_path",
    "mesh_shape",
    "multitree",
    "table_ii",
    "systolic",
    "training",
    "tree_depths",
    "tto_trees",
    "figure_timesteps",
    "hmc_driver",
    "workloads",
]
