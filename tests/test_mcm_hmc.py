"""wc.mcm.hmc_driver: the MCM artifact's driver for its own schedules."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.experiments import mcm_common

RING2D = "mesh_ring_2d_artifact_allreduce"
MULTITREE = "mesh_multitree_artifact_allreduce"
DBTREE = "mesh_dbtree_artifact_allreduce"


@pytest.mark.parametrize("side", [3, 4, 5, 6])
@pytest.mark.parametrize("base", ["Ring-2D", "MultiTree", "DBTree"])
def test_steps_cover_the_variants_transfers(base: str, side: int) -> None:
    top, _, kw = mcm_common.variant_setup(base, side, side)
    name = mcm_common.ARTIFACT_VARIANTS[base][0]
    s = wc.build(name, topology=top, size_bytes=side * side * 8192 * 4, **kw)
    d = wc.mcm.hmc_driver(name, side, side)
    assert d.step.size == d.strict.size == s.num_transfers
    assert d.interfaces == (1 if base == "DBTree" else 4)
    assert d.order == "python_set"
    # a chiplet's steps: every transfer of a step sends from one chiplet
    src = np.asarray(s.src)
    for v in np.unique(src)[:4]:
        mine = d.step[src == v]
        assert mine.size and (np.diff(np.sort(mine)) >= 0).all()


def test_strictness_follows_the_run_scripts() -> None:
    # ring2dn runs without --strict-schedule: only each chiplet's first
    # allgather step waits for its interfaces; dtree and multitree with it
    r = wc.mcm.hmc_driver(RING2D, 4, 4)
    assert 0 < r.strict.sum() < r.strict.size
    for name in (MULTITREE, DBTREE):
        assert wc.mcm.hmc_driver(name, 4, 4).strict.all()


def test_rejects_other_builders() -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        wc.mcm.hmc_driver("mesh_ring_allreduce", 4, 4)


@pytest.mark.parametrize(
    ("base", "side", "mib"),
    [("Ring-2D", 4, 1), ("Ring-2D", 5, 4), ("MultiTree", 5, 4), ("DBTree", 8, 4)],
)
def test_within_five_percent_of_the_committed_cycles(base, side, mib) -> None:
    # the artifact's committed runs (HPCA_2024_final/bandwidth)
    name = mcm_common.ARTIFACT_VARIANTS[base][0]
    ref = mcm_common.artifact_reference(
        mcm_common.paper_label(name), side, side, mib << 20
    )
    r = mcm_common.simulate_variant(base, side, side, mib << 20)
    assert abs(r.cycles / ref - 1) <= 0.05
