"""Experiments of paper 004 (MCM meshes of chiplets: rings, MultiTree, TTO).

*Enhancing Collective Communication in MCM Accelerators for Deep Learning
Training* (Laskar, Majhi et al., HPCA 2024). Every number is simulated with
:func:`wafercoll.simulate` under two presets, or counted in unit timesteps
(:data:`wafercoll.mcm.FIGURE_TIMESTEPS`):

* :data:`wafercoll.mcm.TABLE_II`, the network as the paper states it;
  bandwidths in GB/s = 1e9 B/s;
* :data:`wafercoll.mcm.ARTIFACT`, the network as the authors' BookSim
  artifact simulates it (357 cycles per whole 8 KiB message per link, 3
  router cycles per hop, 9 cycles per flow, chunk-level forwarding);
  bandwidths in GiB/s, as the authors plot them, beside the artifact's own
  committed results (:func:`wafercoll.mcm.artifact_cycles`) where it has a
  run. The artifact's own schedules run beside the paper's where its driver
  differs (``mcm_common.ARTIFACT_VARIANTS``: Ring-2D, DBTree,
  MultiTree, RingBiOdd, TTO).

* ``mesh_table1``: used-link percentage per algorithm on 8x8 and 9x9 (Table I);
* ``mesh_fig8``: AllReduce bandwidth against size, 1 MiB .. 1 GiB (Fig. 8);
* ``mesh_fig9``: scalability with 375 KiB x N, 3x3 .. 16x16 (Fig. 9);
* ``mesh_fig12``: busy links over time, 9x9, 256 MiB (Fig. 12);
* ``mesh_fig14``: TTO chunk size, 8x8, 128 MiB (Fig. 14);
* ``mesh_fig10``: one training epoch of seven DNNs on 8x8 and 9x9 (Fig. 10):
  the AllReduce of each DNN's gradients simulated under the artifact preset
  beside the artifact's own runs, the forward and backward pass from the
  systolic model (:mod:`wafercoll.mcm.systolic`), epochs by equations (1)
  and (2) (:mod:`wafercoll.mcm.training`), and the worked example of
  Section VIII-B recomputed;
* ``mesh_fig11``: the same with each layer's gradient AllReduce started as
  soon as the backward pass produced it (Fig. 11), with the per-layer times
  of the systolic model and of the artifact's SCALE-Sim runs;
* ``mesh_fig13``: one training iteration on the 6x6 Simba mesh with 32 x 32
  and 16 x 16 MAC arrays (Fig. 13), the compute from the systolic model and
  from the artifact's own SCALE-Sim cycles, side by side.

The experiments live in :mod:`.mcm_bandwidth` (Table I, Figs. 8, 9, 12),
:mod:`.mcm_epochs` (Figs. 10, 11) and :mod:`.mcm_sensitivity` (Figs. 13,
14), on the helpers of :mod:`.mcm_common`; this module registers them, in
the paper's order, and gathers their public names.
"""

from __future__ import annotations

from . import Experiment, register_experiment
from .mcm_bandwidth import (
    plot_fig8,
    plot_fig9,
    plot_fig12,
    plot_table1,
    run_fig8,
    run_fig9,
    run_fig12,
    run_table1,
)
from .mcm_common import (
    algorithms_for,
    artifact_reference,
    paper_label,
    simulate_allreduce,
    simulate_presets,
)
from .mcm_epochs import plot_fig10, plot_fig11, run_fig10, run_fig11
from .mcm_sensitivity import plot_fig13, plot_fig14, run_fig13, run_fig14

__all__ = [
    "algorithms_for",
    "artifact_reference",
    "paper_label",
    "plot_fig8",
    "plot_fig9",
    "plot_fig10",
    "plot_fig11",
    "plot_fig12",
    "plot_fig13",
    "plot_fig14",
    "plot_table1",
    "run_fig8",
    "run_fig9",
    "run_fig10",
    "run_fig11",
    "run_fig12",
    "run_fig13",
    "run_fig14",
    "run_table1",
    "simulate_allreduce",
    "simulate_presets",
]


for _name, _title, _claim, _run, _plot in (
    (
        "mesh_table1",
        "Used-link percentage of AllReduce algorithms on 8x8 and 9x9 (Table I)",
        "Ring uses 29 % / 28 %, bidirectional ring 57 %, Ring-2D 55 % / 53 %, "
        "MultiTree 53 % / 51 % of the links",
        run_table1,
        plot_table1,
    ),
    (
        "mesh_fig8",
        "AllReduce bandwidth against size on 4x4, 5x5, 8x8, 9x9 (Fig. 8)",
        "TTO is fastest everywhere: 1.6x over MultiTree, 1.4x over the "
        "bidirectional ring; RingBiOdd 1.9x over Ring",
        run_fig8,
        plot_fig8,
    ),
    (
        "mesh_fig9",
        "Scalability with 375 KiB x N, 3x3 .. 16x16 (Fig. 9)",
        "all scale linearly; TTO best: 2.8x over Ring, 1.6x over MultiTree, "
        "1.4x over the bidirectional ring",
        run_fig9,
        plot_fig9,
    ),
    (
        "mesh_fig12",
        "Link utilization over time, 9x9, 256 MiB (Fig. 12)",
        "TTO keeps about 83 % of links busy, RingBiOdd 57 %, Ring 30 %",
        run_fig12,
        plot_fig12,
    ),
    (
        "mesh_fig10",
        "Training time of seven DNNs on 8x8 and 9x9 (Fig. 10)",
        "TTO reduces training time by 33 % over MultiTree and 29 % over the "
        "bidirectional ring; RingBiOdd by 50 % over Ring and 8 % over MultiTree",
        run_fig10,
        plot_fig10,
    ),
    (
        "mesh_fig11",
        "Layer-wise AllReduce overlapped with the backward pass, 8x8 (Fig. 11)",
        "with overlap, TTO is 0.99-2.5x faster than Ring, 0.98-1.54x than "
        "MultiTree and 0.99-1.6x than RingBiEven; compute-heavy DNNs hide much "
        "of their AllReduce, NCF and Transformer little",
        run_fig11,
        plot_fig11,
    ),
    (
        "mesh_fig13",
        "One training iteration on Simba 6x6, 32 x 32 and 16 x 16 MAC arrays (Fig. 13)",
        "TTO's AllReduce speedups of about 2.76x, 2.52x, 9.7x, 1.64x and 1.41x "
        "over Ring, Ring-2D, DBTree, MultiTree and RingBiEven; smaller MAC "
        "arrays give less end-to-end speedup",
        run_fig13,
        plot_fig13,
    ),
    (
        "mesh_fig14",
        "TTO chunk size, 8x8, 128 MiB (Fig. 14)",
        "TTO's bandwidth peaks for chunks of 96-192 KiB",
        run_fig14,
        plot_fig14,
    ),
):
    register_experiment(Experiment(_name, _title, "004", _claim, _run, _plot))
