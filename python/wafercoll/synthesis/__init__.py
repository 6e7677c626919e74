"""Synthesis: collective schedules built by packing spanning trees into a topology.

The pieces, each its own module:

* :mod:`~wafercoll.synthesis.fractional`: the best fractional packing of
  spanning trees (an LP solved by HiGHS with column generation), whose rate
  meets the allreduce's bound on meshes and tori;
* :mod:`~wafercoll.synthesis.forests`: ``m`` edge-disjoint spanning trees in
  a multigraph (matroid partition), made shallow by exchanges;
* :mod:`~wafercoll.synthesis.equal_rate`: the fractional optimum as ``m``
  trees of one rate in ``k`` copies of the graph, and the choice of ``k``
  for a size;
* :mod:`~wafercoll.synthesis.rooted`: the trees re-rooted at every rank, or
  shortest-path trees over endpoints one link or one switch apart (machines
  with routers), the blocks of a reduce-scatter, allgather or allreduce
  shared among them by an LP over the links their routes cross;
* :mod:`~wafercoll.synthesis.builders`: the registered builders
  ``synth_treepack_{allreduce, reduce_scatter, allgather, reduce,
  broadcast}`` and :func:`synthesize`.

Examples
--------
>>> import wafercoll as wc
>>> s = wc.synthesize(wc.topology.mesh(4, 4), "allreduce", 1 << 20)
>>> wc.verify(s).ok
True
"""

from __future__ import annotations

from . import builders, equal_rate, forests, fractional, rooted
from .builders import (
    DEFAULT_CHUNK_BYTES,
    MAX_DEFAULT_TRANSFERS,
    packing_for,
    synthesize,
)
from .equal_rate import (
    MAX_COPIES,
    EqualRatePacking,
    choose_copies,
    copy_options,
    equal_rate_packing,
    startup_model,
)
from .fractional import MAX_NODES, TreePacking, pack_spanning_trees
from .rooted import reroot, rooted_shares, shortest_path_trees

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "MAX_COPIES",
    "MAX_DEFAULT_TRANSFERS",
    "MAX_NODES",
    "EqualRatePacking",
    "TreePacking",
    "builders",
    "choose_copies",
    "copy_options",
    "equal_rate",
    "equal_rate_packing",
    "forests",
    "fractional",
    "pack_spanning_trees",
    "packing_for",
    "reroot",
    "rooted",
    "rooted_shares",
    "shortest_path_trees",
    "startup_model",
    "synthesize",
]
