"""One colour per algorithm, the same in every figure of the project.

The colours are the Okabe-Ito palette (Okabe and Ito, "Color Universal Design",
2008; also Wong, "Points of view: Color blindness", Nature Methods 8, 441,
2011), distinguishable under the common colour-vision deficiencies, then the
darker half of matplotlib's ``tab20`` for the rest. An algorithm keeps its
colour across papers' figures: the paper labels (``"TTO"``, ``"Ring"``) and
the registry names (``"mesh_tto_allreduce"``) map to the same entry.

Examples
--------
>>> from wafercoll.palette import color
>>> color("TTO") == color("mesh_tto_allreduce")
True
"""

from __future__ import annotations

import zlib

__all__ = ["OKABE_ITO", "color", "marker"]

#: Okabe-Ito: black, orange, sky blue, bluish green, yellow, blue, vermillion,
#: reddish purple.
OKABE_ITO = (
    "#000000",
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
)
# matplotlib's tab20, darker shade of each pair (for algorithms beyond the table).
_EXTRA = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)

_KEYS = {
    # paper 004 (meshes of chiplets)
    "ring": ("#000000", "o"),
    "ringbieven": ("#56B4E9", "s"),
    "ringbiodd": ("#0072B2", "D"),
    "ring-2d": ("#F0E442", "v"),
    "dbtree": ("#CC79A7", "x"),
    "multitree": ("#009E73", "^"),
    "tto": ("#D55E00", "*"),
    # paper 001 (clusters)
    "rd": ("#0072B2", "o"),
    "smp": ("#E69F00", "s"),
    "nap": ("#D55E00", "^"),
    "dissemination": ("#009E73", "D"),
    # paper 002 (n150 torus)
    "swing": ("#D55E00", "^"),
    "swing_bo": ("#D55E00", "^"),
    "swing_lo": ("#E69F00", "v"),
    "rd_bo": ("#0072B2", "o"),
    "rd_lo": ("#56B4E9", "s"),
    "shared_memory": ("#009E73", "D"),
    "ring_bidir": ("#CC79A7", "x"),
    "recursive_doubling": ("#0072B2", "o"),
    # paper 000 (wafer)
    "star": ("#000000", "o"),
    "chain": ("#E69F00", "s"),
    "tree": ("#009E73", "^"),
    "two_phase": ("#56B4E9", "D"),
    "autogen": ("#D55E00", "*"),
}
_ALIASES = {
    "mesh_ring_allreduce": "ring",
    "mesh_ring_bi_allreduce": "ringbieven",
    "mesh_ring_bi_odd_allreduce": "ringbiodd",
    "mesh_ring_2d_allreduce": "ring-2d",
    "mesh_dbtree_allreduce": "dbtree",
    "mesh_multitree_allreduce": "multitree",
    "mesh_tto_allreduce": "tto",
    "cluster_rd_allreduce": "rd",
    "cluster_smp_allreduce": "smp",
    "cluster_nap_allreduce": "nap",
    "locality_dissemination": "dissemination",
    "two-phase": "two_phase",
    "auto-gen": "autogen",
}


def _key(name: str) -> str:
    k = str(name).strip().lower()
    return _ALIASES.get(k, k)


def color(name: str) -> str:
    """The colour of an algorithm (a paper label or a registry name)."""
    k = _key(name)
    if k in _KEYS:
        return _KEYS[k][0]
    return _EXTRA[zlib.crc32(k.encode()) % len(_EXTRA)]


def marker(name: str) -> str:
    """The marker of an algorithm (``"o"`` for those not in the table)."""
    return _KEYS.get(_key(name), ("", "o"))[1]
