"""One name per thing: every algorithm name used outside the registry comes from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import wafercoll as wc
from wafercoll import palette
from wafercoll.algorithms import algorithm_name, find
from wafercoll.cluster import costs
from wafercoll.experiments import mcm_common, mesh_mcm
from wafercoll.wormhole import hops
from wafercoll.wormhole.builders import registered_name

PKG = Path(wc.__file__).parent
_COLLECTIVE = r"(allreduce|reduce_scatter|allgather|reduce|broadcast)"
#: An f-string that puts a registry name together: "..._{x}_allreduce".
_ASSEMBLY = re.compile(
    r"""f["'][a-z0-9_]*\{[^}]*\}[a-z0-9_{}]*_""" + _COLLECTIVE + r"""["']"""
)
#: Taking a registry name apart by its prefix or suffix.
_PARSING = re.compile(
    r"""\.remove(prefix|suffix)\(["'](_"""
    + _COLLECTIVE
    + r"""|(generic|cluster|mesh|torus|wafer|synth)_)["']\)"""
)


def _offenders(pattern: re.Pattern[str]) -> list[str]:
    return [
        f"{path.relative_to(PKG)}:{i}: {line.strip()}"
        for path in sorted(PKG.rglob("*.py"))
        if path.name != "algorithms.py"
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]


def test_the_patterns_find_what_they_forbid() -> None:
    assert _ASSEMBLY.search('build(f"torus_{alg}_allreduce", topology=t)')
    assert _ASSEMBLY.search("name = f'wafer_{p}_reduce'")
    assert not _ASSEMBLY.search('build("torus_swing_bo_allreduce")')
    assert _PARSING.search('name.removeprefix("torus_")')
    assert _PARSING.search('name.removesuffix("_allreduce")')
    assert not _PARSING.search('a.removesuffix("+bcast2d")')


def test_no_name_is_assembled_or_parsed_outside_the_registry() -> None:
    assert _offenders(_ASSEMBLY) == []
    assert _offenders(_PARSING) == []


def test_every_record_names_itself_from_its_parts() -> None:
    for a in wc.algorithms():
        assert algorithm_name(a.family, a.algorithm, a.collective, a.variant) == a.name
        assert find(a.family, a.algorithm, a.collective, a.variant) is a
        assert a.label, a.name


def test_palette_keys_are_parts_of_registered_names() -> None:
    parts = {a.algorithm for a in wc.algorithms()}
    parts |= {a.short_name for a in wc.algorithms()}
    assert set(palette._KEYS) <= parts, set(palette._KEYS) - parts
    # a registry name and its record's label get the same colour and marker
    for a in wc.algorithms():
        assert palette.color(a.name) == palette.color(a.label)
        assert palette.marker(a.name) == palette.marker(a.label)


def test_the_mesh_experiments_take_labels_and_artifact_names_from_the_registry() -> (
    None
):
    names = set(mesh_mcm.algorithms_for(4, 4) + mesh_mcm.algorithms_for(3, 3))
    for name in names:
        info = wc.algorithm_info(name)
        assert mesh_mcm.paper_label(name) == info.label
        assert len(info.artifact_names) == 2, name
    # the artifact's own names reach the comparison through the label
    tto = wc.algorithm_info("mesh_tto_allreduce")
    assert mcm_common._artifact_names(tto.label) == tto.artifact_names
    assert mcm_common._artifact_names("no such label") == ()


@pytest.mark.parametrize(
    "short", ["swing_lo", "swing_bo", "rd_lo", "rd_bo", "ring_bidir"]
)
def test_torus_short_names_resolve_through_the_registry(short: str) -> None:
    info = wc.algorithm_info(registered_name(short))
    assert info.family == "torus"
    assert info.short_name == short


def test_lookups_accept_registry_names() -> None:
    topo = wc.torus(4, 4)
    a = hops.hop_table("torus_swing_bo_allreduce", topo)
    b = hops.hop_table("swing", topo)
    assert (a.hops == b.hops).all()
    with pytest.raises(ValueError, match="algorithm must be"):
        hops.hop_table("mesh_tto_allreduce", topo)
    assert costs.step_counts("cluster_nap_allreduce", 4, 4) == costs.step_counts(
        "nap", 4, 4
    )
    with pytest.raises(ValueError, match="algorithm must be one of"):
        costs.step_counts("generic_ring_allreduce", 4, 4)
    with pytest.raises(ValueError, match="unknown torus algorithm"):
        registered_name("swing")
