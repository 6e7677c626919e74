"""One colour per algorithm across the project's figures."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pytest

from wafercoll import palette
from wafercoll.experiments import mesh_mcm


def test_paper_labels_and_registry_names_share_a_colour() -> None:
    for name, label in mesh_mcm.LABELS.items():
        assert palette.color(name) == palette.color(label)
        assert palette.marker(name) == palette.marker(label)


def test_algorithms_of_one_figure_get_distinct_colours() -> None:
    figures = [
        list(mesh_mcm.LABELS.values()),
        ["rd", "smp", "nap"],
        ["star", "chain", "tree", "two_phase", "autogen"],
        ["swing_lo", "swing_bo", "rd_lo", "rd_bo", "shared_memory", "ring_bidir"],
    ]
    for algs in figures:
        colours = [palette.color(a) for a in algs]
        assert len(set(colours)) == len(colours), algs


@pytest.mark.parametrize("name", ["TTO", "unknown_algorithm", "x"])
def test_every_name_gets_a_valid_colour(name: str) -> None:
    assert mcolors.is_color_like(palette.color(name))
    assert palette.color(name) == palette.color(name.upper())
