"""The simulation cross-check experiment of the wafer 1D Reduce (wafer_sim_1d).

Each value is recomputed here through the public API (closed forms, metrics,
simulation) for a few cells; the exact cases are checked against the paper's
forms, which the simulator reproduces by construction of its stage costs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
import wafercoll.experiments as wx
from wafercoll import wafer
from wafercoll.experiments import wafer_sim_1d as simx


@pytest.fixture(scope="module")
def quick():
    cols, findings = wx.split_result(simx.run_sim_check(quick=True), "wafer_sim_1d")
    return {k: np.asarray(v) for k, v in cols.items()}, findings


def test_columns_and_sweeps(quick) -> None:
    cols, _ = quick
    n = len(cols["algorithm"])
    assert all(len(v) == n for v in cols.values())
    assert set(cols["sweep"]) == {"vs_B", "vs_P"}
    assert set(cols["algorithm"]) == {"message", "broadcast", *simx.PATTERNS}


def test_cells_recomputed_through_the_api(quick) -> None:
    cols, _ = quick
    net = wc.wafer.wse2_network(simx.T_R)
    for i in range(0, len(cols["algorithm"]), 5):
        name, P, B = cols["algorithm"][i], int(cols["P"][i]), int(cols["B"][i])
        if name in simx.PATTERNS:
            s = wc.build(f"wafer_{name}_reduce", P, 4 * B)
            assert cols["closed"][i] == pytest.approx(wafer.reduce_time(name, P, B))
            m = wc.metrics(s, wafer.wafer_row(P)).cycles(simx.T_R)
            assert cols["eq1"][i] == pytest.approx(m)
            if not math.isnan(cols["sim"][i]):
                r = wc.simulate(s, wafer.wafer_row(P), net)
                assert cols["sim"][i] == pytest.approx(r.cycles)


def test_exact_forms_and_the_star_offset(quick) -> None:
    cols, findings = quick
    for name in ("message", "broadcast", "chain"):
        rows = (cols["algorithm"] == name) & ~np.isnan(cols["sim"])
        assert rows.any()
        assert cols["sim"][rows] == pytest.approx(cols["closed"][rows], rel=1e-9)
    star = (cols["algorithm"] == "star") & ~np.isnan(cols["sim"])
    assert cols["sim"][star] == pytest.approx(cols["closed"][star] + 1, rel=1e-9)
    by = {f["quantity"]: f for f in findings}
    assert by["chain: max |simulated - closed form| (cycles)"]["ok"] is True
    assert by["star at B = 1: simulated - refined form (cycles)"]["ok"] is False
    assert "+1" in by["star at B = 1: simulated - refined form (cycles)"]["ours"]


def test_large_runs_are_skipped_not_hidden(quick) -> None:
    cols, _ = quick
    skipped = np.isnan(cols["sim"])
    assert np.all(cols["events"][skipped] > simx.MAX_EVENTS_QUICK)
    assert np.all(cols["events"][~skipped] <= simx.MAX_EVENTS_QUICK)


def test_plot(quick) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols, _ = quick
    fig, ax = plt.subplots()
    try:
        assert simx.plot_sim_check({k: list(v) for k, v in cols.items()}, ax) is ax
        assert len(ax.lines) == 2 * 6
    finally:
        plt.close(fig)
