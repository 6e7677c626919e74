"""The paper-002 experiments: quick runs, their findings and plots."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
import wafercoll.experiments as wx


@pytest.fixture(scope="module")
def hops_record(tmp_path_factory):
    return wx.run_experiment("torus_hops", tmp_path_factory.mktemp("h"), quick=True)


@pytest.fixture(scope="module")
def roof(tmp_path_factory):
    return wx.run_experiment("torus_roofline", tmp_path_factory.mktemp("r"), quick=True)


def test_registered():
    names = [e.name for e in wx.experiments("002")]
    assert names == ["torus_hops", "torus_roofline", "torus_fidelity"]


def test_hops_findings(hops_record):
    f = {x["quantity"]: x for x in hops_record["findings"]}
    assert f["RD worst hops per step, n150 (harvested row 10)"]["ok"]
    swing = f["Swing worst hops per step, n150 (harvested row 10)"]
    # Our explicit model gives 19, not the thesis's 17: the finding says so.
    assert swing["ok"] is False and swing["ours"].endswith("= 19")
    assert len(hops_record["files"]) == 4  # data, PNG, SVG, findings
    assert swing["verdict"] == "differs" and "harvested row 10" in swing["explanation"]


def test_roofline_rows_agree_with_fresh_runs(roof, tmp_path):
    cols, _ = wx.split_result(wx.get_experiment("torus_roofline").run(quick=True))
    i = cols["algorithm"].index("swing_bo")
    topo = wc.topology.torus(8, 8, bandwidth_Bps=32e9)
    s = wc.build(
        "torus_swing_bo_allreduce", topology=topo, size_bytes=cols["size_bytes"][i]
    )
    r = wc.simulate(s, topo, wc.wormhole.n150_network())
    assert cols["topology"][i] == "ideal_8x8"
    assert cols["sim_s"][i] == pytest.approx(r.time_s)
    assert cols["max_link_bytes"][i] == int(r.link_bytes.max())
    f = {x["quantity"].split(",")[0]: x for x in roof["findings"]}
    load = f["max link load Swing BO / RD BO"]
    assert float(load["ours"]) < 1.0


def test_plots_draw_on_given_axes(hops_record, roof):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    for name in ("torus_hops", "torus_roofline"):
        exp = wx.get_experiment(name)
        cols, _ = wx.split_result(exp.run(quick=True))
        ax = Figure().add_subplot()
        assert exp.plot(cols, ax=ax) is ax
        assert len(ax.lines) > 0
        assert np.isfinite([ln.get_ydata() for ln in ax.lines][0]).all()


def test_fidelity_terms_accumulate_and_never_speed_things_up():
    from wafercoll.experiments import torus_swing

    cols, findings = torus_swing.run_fidelity(quick=True)
    terms = np.asarray(cols["terms"])
    t = np.asarray(cols["sim_s"], float)
    labels = [label for label, _ in torus_swing.FIDELITY_TERMS]
    # Each added cost term can only lengthen every run.
    for before, after in zip(labels, labels[1:]):
        assert np.all(t[terms == after] >= t[terms == before] * (1 - 1e-12))
    # Two 8 x 8 finish maps of the 64 cores.
    assert (terms == "finish map").sum() == 2 * 64
    assert len(findings) == 4
