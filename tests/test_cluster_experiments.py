"""Experiments of paper 001 in quick mode, and the simulator setup they use."""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
import wafercoll.experiments as wx
from wafercoll.cluster import costs, model
from wafercoll.experiments import node_aware


def test_experiments_are_registered() -> None:
    names = {e.name for e in wx.experiments()}
    assert {"node_aware_scale", "node_aware_size"} <= names


def test_quick_sweeps_hold_the_claims() -> None:
    cols, findings = node_aware.run_scale(quick=True)
    assert all(f["ok"] for f in findings)  # NAP fastest in every model
    lens = {len(v) for v in cols.values()}
    assert lens == {3 * 6}
    cols, findings = node_aware.run_size(quick=True)
    postal = [f for f in findings if "postal" in f["quantity"]]
    assert len(postal) == 1 and postal[0]["ok"]  # SMP never overtakes NAP
    # RD's windows between the figure's sizes are found and listed.
    (w,) = [f for f in findings if f["id"] == "fastest_windows.script"]
    assert [a for _, a in w["measured"]] == ["nap", "rd", "nap", "rd", "smp"]
    # (the full-size crossover is checked in test_cluster_models.py)
    smp = np.asarray(cols["model_s"])[np.asarray(cols["algorithm"]) == "smp"]
    assert smp.size == 12 and np.isfinite(np.asarray(cols["sim_s"], float)).all()


@pytest.mark.parametrize("size", [8, 2048])
def test_simulated_on_node_smp_matches_its_closed_form(size: int) -> None:
    # SMP inside one node of 16: every message goes alone, so the simulation
    # is the postal sum along the critical path (derived here, not copied).
    ppn = 16
    topo, net = node_aware.simulation_setup(1, ppn, size)
    s = wc.build("cluster_smp_allreduce", ppn, size, ppn=ppn)
    got = wc.simulate(s, topo, net).time_s
    params = node_aware.MEASURED
    loc = params.postal("node", size)
    nw = params.postal("network", size)
    on = loc.alpha_s + size * nw.beta_s_per_byte  # process links at R_b
    g = params.gamma_s_per_byte * size
    lg = int(math.log2(ppn))
    assert got == pytest.approx(lg * (on + g) + lg * on, rel=1e-9)


def test_model_and_simulation_agree_for_nap_at_8_bytes() -> None:
    n, ppn = 256, 16
    topo, net = node_aware.simulation_setup(n, ppn, 8)
    s = wc.build("cluster_nap_allreduce", n * ppn, 8, ppn=ppn)
    sim = wc.simulate(s, topo, net).time_s
    model = costs.allreduce_time("nap", n, ppn, 8, node_aware.MEASURED)
    assert sim == pytest.approx(model, rel=0.02)
    assert np.isfinite(sim)


def test_locality_experiment_is_the_fitted_classes_beside_the_measurements() -> None:
    cols, findings = node_aware.run_locality(quick=True)
    kind = np.asarray(cols["kind"])
    loc = np.asarray(cols["locality"])
    size = np.asarray(cols["size_bytes"], float)
    t = np.asarray(cols["time_s"], float)
    m = node_aware.MEASURED
    for name in ("socket", "node"):
        sel = (kind == "model") & (loc == name)
        want = [
            m.classes[name][model.protocol(s)].alpha_s
            + s * m.classes[name][model.protocol(s)].beta_s_per_byte
            for s in size[sel]
        ]
        assert t[sel] == pytest.approx(want)
    d = model.blue_waters_pingpong()
    one_pair = (d["pairs"] == 1).sum()
    assert ((kind == "measured").sum()) == one_pair
    assert len(findings) == 3 and findings[0]["ok"] and findings[2]["ok"]
    assert findings[1]["verdict"] == "differs" and findings[1]["explanation"]


def test_fastest_windows_agree_with_every_byte() -> None:
    # The bisection against the closed forms at every size (p = 32768).
    n, ppn = 2048, 16
    got = node_aware.fastest_by_size(n, ppn, node_aware.MEASURED, form="script")
    assert got == [(1, "nap"), (393, "rd"), (500, "nap"), (6457, "rd"), (8000, "smp")]
    sizes = np.arange(1, 8193, dtype=float)
    t = np.vstack(
        [
            costs.allreduce_time(a, n, ppn, sizes, node_aware.MEASURED, form="script")
            for a in node_aware.ALGOS
        ]
    )
    best = np.argmin(t, axis=0)
    starts = [1] + [int(sizes[i + 1]) for i in np.flatnonzero(np.diff(best))]
    assert starts == [s for s, _ in got]
