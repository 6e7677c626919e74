"""One colour per algorithm, the same in every figure of the project.

The colours are the Okabe-Ito palette (Okabe and Ito, "Color Universal Design",
2008; also Wong, "Points of view: Color blindness", Nature Methods 8, 441,
2011), distinguishable under the common colour-vision deficiencies, then the
darker half of matplotlib's ``tab20`` for the rest. An algorithm keeps its
colour across papers' figures: a registry name (``"mesh_tto_allreduce"``)
and the paper label its record carries (``"TTO"``) map to the same entry,
found through the registry (:attr:`wafercoll.AlgorithmInfo.label`), so the
palette keeps no names of its own beyond the algorithm parts it colours.

Examples
--------
>>> from wafercoll.palette import color
>>> color("TTO") == color("mesh_tto_allreduce")
True
"""

from __future__ import annotations

import zlib

__all__ = ["OKABE_ITO", "REFERENCE_LABELS", "color", "marker", "reference_style"]

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

#: Colour and marker per algorithm part of a registry name (with its variant
#: where variants differ: ``swing_bo``).
_KEYS = {
    # paper 004 (meshes of chiplets)
    "ring": ("#000000", "o"),
    "ring_bi": ("#56B4E9", "s"),
    "ring_bi_odd": ("#0072B2", "D"),
    "ring_2d": ("#F0E442", "v"),
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


def _key(name: str) -> str:
    """The palette key of a registry name, a paper label or a bare key."""
    from .algorithms import algorithms, lookup

    text = str(name).strip()
    low = text.lower()
    info = lookup(text) or next(
        (a for a in algorithms() if a.label.lower() == low), None
    )
    if info is None:
        return low
    return info.short_name if info.short_name in _KEYS else info.algorithm


def color(name: str) -> str:
    """The colour of an algorithm (a paper label or a registry name)."""
    k = _key(name)
    if k in _KEYS:
        return _KEYS[k][0]
    return _EXTRA[zlib.crc32(k.encode()) % len(_EXTRA)]


def marker(name: str) -> str:
    """The marker of an algorithm (``"o"`` for those not in the table)."""
    return _KEYS.get(_key(name), ("", "o"))[1]


#: Legend labels of the references drawn beside our results.
REFERENCE_LABELS = {"artifact": "artifact (BookSim)", "paper": "paper"}
#: The reference's marker: a hollow pentagon, a shape no algorithm uses, so a
#: reference never reads as one of the algorithms' points.
_REFERENCE_MARKER = "p"


def reference_style(colour: str = "black", size: float = 7.0) -> dict[str, object]:
    """Matplotlib keywords of a published or committed reference point.

    A hollow pentagon with no line, in the colour of the algorithm it
    belongs to, drawn above lines and bars.

    Examples
    --------
    >>> reference_style("#D55E00")["marker"]
    'p'
    """
    return {
        "ls": "none",
        "marker": _REFERENCE_MARKER,
        "markersize": size,
        "markerfacecolor": "none",
        "markeredgecolor": colour,
        "markeredgewidth": 1.3,
        "zorder": 4,
    }
