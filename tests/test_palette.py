"""One colour per algorithm across the project's figures."""

from __future__ import annotations

import matplotlib.colors as mcolors
import pytest

import wafercoll as wc
from wafercoll import palette
from wafercoll.experiments import mesh_mcm


def test_paper_labels_and_registry_names_share_a_colour() -> None:
    for info in wc.algorithms():
        assert palette.color(info.name) == palette.color(info.label)
        assert palette.marker(info.name) == palette.marker(info.label)


def test_the_mesh_figures_colours_come_from_the_registry() -> None:
    # The mesh figures label curves by the paper's names; those names come from
    # the registry records, and each one's colour is its registry name's.
    for name in mesh_mcm.algorithms_for(4, 4) + mesh_mcm.algorithms_for(3, 3):
        label = mesh_mcm.paper_label(name)
        assert label == wc.algorithm_info(name).label
        assert palette.color(label) == palette.color(name)
    assert palette.color("TTO") != palette.color("Ring")


def test_algorithms_of_one_figure_get_distinct_colours() -> None:
    figures = [
        [wc.algorithm_info(a).label for a in mesh_mcm.algorithms_for(4, 4)],
        [wc.algorithm_info(a).label for a in mesh_mcm.algorithms_for(3, 3)],
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
