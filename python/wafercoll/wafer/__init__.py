"""Wafer-scale collectives (Cerebras WSE): the spatial cost model and 1D forms.

The model is that of *Near-Optimal Wafer-Scale Reduce* (Luczynski,
Gianinazzi et al., HPDC 2024).

See :mod:`wafercoll.wafer.model` for the model, the closed forms exactly as
the paper states them, and the reduction trees of the fixed patterns, and
:mod:`wafercoll.wafer.reduce1d` for Auto-Gen, the lower bound and the
optimality ratios of Figure 1.
"""

from __future__ import annotations

from .builders import CS2_CLOCK_HZ, WAVELET_BYTES, tree_schedule, wafer_row
from .model import (
    T_R_DEFAULT,
    TreeMetrics,
    binary_tree,
    broadcast_time,
    chain_time,
    chain_tree,
    eq1_cycles,
    message_time,
    star_lemma_time,
    star_time,
    star_tree,
    tree_cycles,
    tree_lemma_time,
    tree_metrics,
    tree_time,
    two_phase_group_size,
    two_phase_lemma_time,
    two_phase_time,
    two_phase_tree,
)
from .reduce1d import (
    REDUCE_ALGORITHMS,
    AutogenTree,
    autogen,
    autogen_cycles,
    lower_bound,
    lower_bound_cycles,
    optimality_ratios,
    reduce_time,
    routing_plan,
    routing_plan_json,
)

__all__ = [
    "CS2_CLOCK_HZ",
    "WAVELET_BYTES",
    "tree_schedule",
    "wafer_row",
    "REDUCE_ALGORITHMS",
    "AutogenTree",
    "autogen",
    "autogen_cycles",
    "lower_bound",
    "lower_bound_cycles",
    "optimality_ratios",
    "reduce_time",
    "routing_plan",
    "routing_plan_json",
    "T_R_DEFAULT",
    "TreeMetrics",
    "binary_tree",
    "broadcast_time",
    "chain_time",
    "chain_tree",
    "eq1_cycles",
    "message_time",
    "star_lemma_time",
    "star_time",
    "star_tree",
    "tree_cycles",
    "tree_lemma_time",
    "tree_metrics",
    "tree_time",
    "two_phase_group_size",
    "two_phase_lemma_time",
    "two_phase_time",
    "two_phase_tree",
]
