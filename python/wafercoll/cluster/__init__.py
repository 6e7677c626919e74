"""Node-aware collectives on clusters of multi-core nodes (paper 001).

*Node-Aware Improvements to Allreduce* (Bienz, Olson, Gropp, ExaMPI@SC19):
the performance models (:mod:`wafercoll.cluster.model`: postal, intra/inter
split, max-rate, protocol regimes, Blue Waters parameters, ``fit_postal``),
verified schedule builders (:mod:`wafercoll.cluster.builders`:
``rd_allreduce``, ``smp_allreduce``, ``nap_allreduce``,
``locality_dissemination``, registered with :func:`wafercoll.build`) and the
analytic costs and step counts of the paper (:mod:`wafercoll.cluster.costs`).
The topology is :func:`wafercoll.topology.cluster`.
"""

from __future__ import annotations

from . import costs, model
from .builders import (
    locality_dissemination,
    nap_allreduce,
    nap_plan,
    rank_table,
    rd_allreduce,
    smp_allreduce,
)
from .costs import (
    allreduce_time,
    compare_bench,
    crossover_size,
    plot_bench,
    read_bench,
    step_counts,
)
from .machine import cluster_machine
from .model import (
    BLUE_WATERS,
    BLUE_WATERS_MEASURED,
    ClusterParams,
    Postal,
    blue_waters_pingpong,
    fit_blue_waters,
    fit_max_rate,
    fit_pingpong,
    fit_postal,
    max_rate_time,
    postal_time,
    protocol,
    read_pingpong,
    split_time,
)

__all__ = [
    "BLUE_WATERS",
    "BLUE_WATERS_MEASURED",
    "ClusterParams",
    "Postal",
    "allreduce_time",
    "blue_waters_pingpong",
    "cluster_machine",
    "compare_bench",
    "costs",
    "crossover_size",
    "fit_blue_waters",
    "fit_max_rate",
    "fit_pingpong",
    "fit_postal",
    "locality_dissemination",
    "max_rate_time",
    "model",
    "nap_allreduce",
    "nap_plan",
    "plot_bench",
    "postal_time",
    "protocol",
    "rank_table",
    "read_bench",
    "read_pingpong",
    "rd_allreduce",
    "smp_allreduce",
    "split_time",
    "step_counts",
]
