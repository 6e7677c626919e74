"""Wafer-scale collectives (Cerebras WSE): the spatial cost model and 1D forms.

The model is that of *Near-Optimal Wafer-Scale Reduce* (Luczynski,
Gianinazzi et al., HPDC 2024).

See :mod:`wafercoll.wafer.model` for the model, the closed forms exactly as
the paper states them, and the reduction trees of the fixed patterns, and
:mod:`wafercoll.wafer.reduce1d` for Auto-Gen, the lower bound and the
optimality ratios of Figure 1.

Parameter names
---------------
Builders (through :func:`wafercoll.build`: ``ranks``, ``size_bytes``),
topologies (:func:`wafer_row` ``ranks``, :func:`wafer_grid` ``rows, cols``)
and orders take the names the rest of wafercoll uses. The cost model keeps
the paper's symbols, because its formulas are written in them: ``P`` PEs,
``B`` wavelets (32-bit elements) per PE, ``T_R`` cycles of router
reconfiguration, ``M x N`` grids (:mod:`wafercoll.wafer.model`,
:mod:`wafercoll.wafer.reduce1d`, :mod:`wafercoll.wafer.allreduce2d`, and the
trees those formulas are evaluated on). The options ``wavelets_per_block``
and ``T_R`` of the builders are the model's too.

Where the paper's closed forms and the metrics derived from schedules differ
----------------------------------------------------------------------------
:func:`wafercoll.metrics` on a pattern's schedule and :func:`tree_metrics` on
its tree give the same E, L, D, C, N; equation (1) on them is what
:func:`reduce_time` returns, except:

* **Star**: :func:`star_time` is the paper's refined, pipelined form
  ``B (P - 1) + 2 T_R + 1``; equation (1) gives Lemma 5.1's
  ``max(B (P - 1), P B / 2 + P - 1) + 2 T_R + 1`` (:func:`star_lemma_time`),
  larger when ``B (P - 2) < 2 (P - 1)``. The refined form falls below the
  Lemma 5.5 bound at B = 1 (the bound adds the energy term to the distance,
  the pipeline overlaps them), and the simulator puts Star one cycle above it
  (the refined form omits the hop of the nearest PE).
* **Tree** for P not a power of two: Lemma 5.3 needs ``P = 2^k``; for other
  P :func:`binary_tree` applies Section 5.3's rule as written (each round,
  every second active PE sends to the previous active PE), which makes PE
  ``v`` send to ``v`` minus its lowest set bit, in ``ceil(log2 P)`` rounds
  (the tests check it against a direct statement of the rule for P < 300);
  :func:`tree_time` is equation (1) on it. Just above a power of two the
  extra round's single message crosses ``2^k`` hops, so Tree's optimality
  ratio peaks there (T/T* of Lemma 5.5: 5.83 at P = 129 against 5.11 at
  P = 128, T_R = 2, B up to 2048).
* **Two-Phase**: Lemma 5.4 (P a square) bounds N and L by P; the metrics have
  ``N = L = P - 1``, which is larger for ``B > (P + sqrt P) / 2``. For other P
  the group size is ``floor(sqrt P)`` with groups from the far end.
* **Contention** is counted as receives in sequence (the Auto-Gen
  recurrence's notion, see :func:`tree_metrics`); it equals "the most
  messages a PE receives" for the four fixed patterns, so the lemmas'
  values hold, and exceeds it for trees whose early children have children.
"""

from __future__ import annotations

from .allreduce2d import (
    ALLREDUCE_2D_ALGORITHMS,
    ALLREDUCE_ALGORITHMS,
    HEATMAP_KINDS,
    REDUCE_2D_ALGORITHMS,
    allreduce_2d_time,
    allreduce_time,
    best_root,
    broadcast_2d_time,
    lower_bound_2d,
    reduce_2d_time,
    ring_time,
    rooted_broadcast_time,
    rooted_reduce_time,
    rooted_reduce_tree,
    rooted_tree_metrics,
    speedup_heatmap,
)
from .builders import (
    CS2_CLOCK_HZ,
    WAVELET_BYTES,
    flood_broadcast,
    tree_schedule,
    wafer_row,
)
from .builders2d import wafer_grid
from .calibration import (
    MEASURED_SPEEDUPS,
    Calibration,
    MeasuredSpeedup,
    calibrate_switch_overhead,
    overhead_time,
    predicted_speedup,
)
from .machine import wse2_network
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
    switch_contention,
    switch_contention_many,
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
from .routing2d import (
    COLOURS_AVAILABLE,
    CONFIGURATIONS_PER_COLOUR,
    check_colour_collisions,
    colour_of_transfers,
    routing_plan_2d,
    routing_plan_2d_json,
)

__all__ = [
    "MEASURED_SPEEDUPS",
    "Calibration",
    "MeasuredSpeedup",
    "calibrate_switch_overhead",
    "overhead_time",
    "predicted_speedup",
    "ALLREDUCE_2D_ALGORITHMS",
    "ALLREDUCE_ALGORITHMS",
    "HEATMAP_KINDS",
    "REDUCE_2D_ALGORITHMS",
    "allreduce_2d_time",
    "allreduce_time",
    "best_root",
    "broadcast_2d_time",
    "lower_bound_2d",
    "reduce_2d_time",
    "ring_time",
    "rooted_broadcast_time",
    "rooted_reduce_time",
    "rooted_reduce_tree",
    "rooted_tree_metrics",
    "speedup_heatmap",
    "CS2_CLOCK_HZ",
    "WAVELET_BYTES",
    "flood_broadcast",
    "tree_schedule",
    "wafer_row",
    "wafer_grid",
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
    "COLOURS_AVAILABLE",
    "CONFIGURATIONS_PER_COLOUR",
    "check_colour_collisions",
    "colour_of_transfers",
    "routing_plan_2d",
    "routing_plan_2d_json",
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
    "switch_contention",
    "switch_contention_many",
    "tree_cycles",
    "tree_lemma_time",
    "tree_metrics",
    "tree_time",
    "two_phase_group_size",
    "two_phase_lemma_time",
    "two_phase_time",
    "two_phase_tree",
    "wse2_network",
]
