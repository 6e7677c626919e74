"""The curve experiments of the wafer paper (wafer_fig11, wafer_fig12, wafer_fig13).

Quick runs only. Model cells are recomputed through the public closed forms,
simulated cells through ``wc.build`` and ``wc.simulate``; where the paper
calls a form exact (1D and 2D broadcast, Chain, Snake) the simulation must
equal it.
"""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
import wafercoll.experiments as wx
from wafercoll import wafer
from wafercoll.experiments import wafer_curves as cx
from wafercoll.experiments.wafer_allreduce import HEADLINE_BAND

T_R = cx.T_R


def _quick(run):
    cols, findings = wx.split_result(run(quick=True))
    return {k: np.asarray(v) for k, v in cols.items()}, findings


@pytest.fixture(scope="module")
def fig11():
    return _quick(cx.run_fig11)


@pytest.fixture(scope="module")
def fig12():
    return _quick(cx.run_fig12)


@pytest.fixture(scope="module")
def fig13():
    return _quick(cx.run_fig13)


@pytest.fixture(params=["fig11", "fig12"])
def one_d(request):
    return request.getfixturevalue(request.param)


def _model_1d(panel: str, alg: str, P: int, B: int) -> float:
    if panel == "broadcast":
        return wafer.broadcast_time(P, B, T_R)
    if panel == "reduce":
        return wafer.reduce_time(alg, P, B, T_R)
    return wafer.allreduce_time(alg, P, B, T_R)


def _model_2d(panel: str, alg: str, n: int, B: int) -> float:
    if panel == "broadcast":
        return wafer.broadcast_2d_time(n, n, B, T_R)
    if panel == "reduce":
        return wafer.reduce_2d_time(alg, n, n, B, T_R)
    return wafer.allreduce_2d_time(alg, n, n, B, T_R)


def _build_2d(alg: str, panel: str, n: int, B: int):
    grid = wafer.wafer_grid(n, n)
    if panel == "broadcast":
        return wc.build("wafer_2d_broadcast", n * n, 4 * B, topology=grid)
    if panel == "reduce":
        if alg == "snake":
            return wc.build("wafer_snake_reduce", n * n, 4 * B, topology=grid)
        return wc.build("wafer_xy_reduce", n * n, 4 * B, topology=grid, pattern=alg[3:])
    if alg == "xy_ring":
        return wc.build(
            "wafer_xy_ring_allreduce", n * n, 4 * B, topology=grid, mapping="b"
        )
    if alg.endswith("+bcast2d"):
        red = alg.removesuffix("+bcast2d")
        pat = "snake" if red == "snake" else red[3:]
        return wc.build("wafer_2d_allreduce", n * n, 4 * B, topology=grid, pattern=pat)
    return wc.build("wafer_xy_allreduce", n * n, 4 * B, topology=grid, pattern=alg[3:])


def test_registered():
    names = {e.name for e in wx.experiments(paper="000")}
    assert {"wafer_fig11", "wafer_fig12", "wafer_fig13"} <= names


def test_columns_1d(fig11, fig12):
    for (cols, _), sweep in ((fig11, "vs_B"), (fig12, "vs_P")):
        n = len(cols["B"])
        assert all(len(v) == n for v in cols.values())
        assert set(cols["sweep"]) == {sweep}
        assert set(cols["panel"]) == set(cx.PANELS)
        assert set(cols["algorithm"][cols["panel"] == "reduce"]) == set(cx.PATTERNS)
        assert set(cols["algorithm"][cols["panel"] == "allreduce"]) == set(
            wafer.ALLREDUCE_ALGORITHMS
        )
        ring = cols["algorithm"] == "ring"
        assert set(cols["mapping"][ring]) == {"a", "b"}
        assert set(cols["mapping"][~ring]) == {""}
        assert np.array_equal(cols["bytes"], 4 * cols["B"])
        assert np.all(np.log2(cols["B"]) % 1 == 0) and np.all(
            np.log2(cols["P"]) % 1 == 0
        )
    assert set(fig11[0]["P"]) == {cx.P_FIG_QUICK}
    assert set(fig12[0]["B"]) == {cx.B_FIXED}
    assert fig11[0]["B"].min() == 1


def test_columns_2d(fig13):
    cols, _ = fig13
    n = len(cols["B"])
    assert all(len(v) == n for v in cols.values())
    assert set(cols["sweep"]) == {"vs_B", "vs_n"}
    assert np.array_equal(cols["PEs"], cols["n"] ** 2)
    vs_b = cols["sweep"] == "vs_B"
    assert set(cols["n"][vs_b]) == {cx.N_FIG_QUICK, cx.N_SIM_QUICK}
    assert set(cols["B"][~vs_b]) == {cx.B_FIXED}
    assert set(cols["algorithm"][cols["panel"] == "allreduce"]) == set(
        wafer.ALLREDUCE_2D_ALGORITHMS
    )
    # The large grid of the B sweep is model only, the small one simulated.
    big = vs_b & (cols["n"] == cx.N_FIG_QUICK)
    assert np.all(np.isnan(cols["sim"][big]))
    small = vs_b & (cols["n"] == cx.N_SIM_QUICK)
    simulated = ~np.isnan(cols["sim"][small])
    assert np.all(simulated | (cols["events"][small] > cx.MAX_EVENTS_QUICK))
    assert (~np.isnan(cols["sim"][small & (cols["algorithm"] == "xy_ring")])).any()


def test_rel_error_and_cap(one_d, fig13):
    for cols, _ in (one_d, fig13):
        sim = cols["sim"].astype(float)
        done = ~np.isnan(sim)
        assert done.any() and (~done).any()
        rel = (cols["model"][done] - sim[done]) / sim[done]
        assert cols["rel_error"][done] == pytest.approx(rel)
        assert np.all(np.isnan(cols["rel_error"][~done]))
        assert np.all(cols["events"][done] <= cx.MAX_EVENTS_QUICK)
        counted = ~np.isnan(cols["events"].astype(float))
        assert np.all(cols["events"][~done & counted] > cx.MAX_EVENTS_QUICK)


def test_model_cells_recomputed(one_d, fig13):
    cols, _ = one_d
    for i in range(len(cols["B"])):
        P, B = int(cols["P"][i]), int(cols["B"][i])
        want = _model_1d(cols["panel"][i], cols["algorithm"][i], P, B)
        assert cols["model"][i] == pytest.approx(want, rel=1e-12)
    cols, _ = fig13
    for i in range(0, len(cols["B"]), 7):
        n, B = int(cols["n"][i]), int(cols["B"][i])
        want = _model_2d(cols["panel"][i], cols["algorithm"][i], n, B)
        assert cols["model"][i] == pytest.approx(want, rel=1e-12)


def test_ring_model_is_lemma_6_1(fig12):
    cols, _ = fig12
    ring = np.flatnonzero(cols["algorithm"] == "ring")
    for i in ring:
        P, B = int(cols["P"][i]), int(cols["B"][i])
        lemma = 2 * (P - 1) * B / P + 4 * P - 6 + 2 * (P - 1) * (2 * T_R + 1)
        assert cols["model"][i] == pytest.approx(lemma)


def test_simulated_cells_recomputed(fig11, fig13):
    net = wc.wafer.wse2_network(T_R)
    cols, _ = fig11
    done = np.flatnonzero(~np.isnan(cols["sim"].astype(float)))
    for i in done[::9]:
        alg, P, B = cols["algorithm"][i], int(cols["P"][i]), int(cols["B"][i])
        row = wafer.wafer_row(P)
        if cols["panel"][i] == "broadcast":
            s = wc.Schedule(P, [4 * B], "broadcast", root=0)
            s.add_transfer(0, list(range(1, P)), 0)
        elif cols["panel"][i] == "reduce":
            s = wc.build(f"wafer_{alg}_reduce", P, 4 * B)
        elif alg == "ring":
            s = wc.build(
                "wafer_ring_allreduce",
                P,
                4 * B,
                topology=row,
                mapping=cols["mapping"][i],
            )
        else:
            s = wc.build(
                f"wafer_{alg.replace('+bcast', '_allreduce')}", P, 4 * B, topology=row
            )
        assert cols["sim"][i] == pytest.approx(wc.simulate(s, row, net).cycles)
    cols, _ = fig13
    done = np.flatnonzero(~np.isnan(cols["sim"].astype(float)))
    for i in done[::11]:
        n, B = int(cols["n"][i]), int(cols["B"][i])
        s = _build_2d(cols["algorithm"][i], cols["panel"][i], n, B)
        r = wc.simulate(s, wafer.wafer_grid(n, n), net)
        assert cols["sim"][i] == pytest.approx(r.cycles)


def test_metrics_of_a_reduce_give_its_model(fig11):
    cols, _ = fig11
    for alg in ("chain", "tree"):
        i = np.flatnonzero((cols["algorithm"] == alg) & (cols["B"] == 64))[0]
        P = int(cols["P"][i])
        m = wc.metrics(wc.build(f"wafer_{alg}_reduce", P, 4 * 64), wafer.wafer_row(P))
        assert m.cycles(T_R) == pytest.approx(cols["model"][i])


@pytest.mark.parametrize(
    ("which", "alg"),
    [
        ("fig11", "broadcast"),
        ("fig11", "chain"),
        ("fig12", "broadcast"),
        ("fig12", "chain"),
        ("fig13", "2d_broadcast"),
        ("fig13", "snake"),
    ],
)
def test_exact_forms_simulate_exactly(request, which, alg):
    cols, findings = request.getfixturevalue(which)
    sel = (cols["algorithm"] == alg) & ~np.isnan(cols["sim"].astype(float))
    assert sel.any()
    assert cols["sim"][sel] == pytest.approx(cols["model"][sel], rel=1e-9)
    f = next(f for f in findings if f["quantity"].startswith(f"{alg}: max |simulated"))
    assert f["ok"] is True


def _by_start(findings, start):
    hits = [f for f in findings if f["quantity"].startswith(start)]
    assert hits, f"no finding starts with {start!r}"
    return hits[0]


def test_findings_1d(fig11, fig12):
    for cols, findings in (fig11, fig12):
        for f in findings:
            assert {"quantity", "paper", "ours", "note"} <= set(f)
            assert f["ok"] is None or isinstance(f["ok"], bool)
        assert _by_start(findings, "Ring mapping b")["ok"] is True
        a = _by_start(findings, "Ring mapping a")
        ring_a = (cols["algorithm"] == "ring") & (cols["mapping"] == "a")
        ratio = cols["sim"][ring_a] / cols["model"][ring_a]
        far = ratio[np.nanargmax(np.abs(ratio - 1))]
        assert a["ok"] is bool(abs(far - 1) <= cx.RING_TOLERANCE)
        assert f"{np.nanmax(ratio):.3g}" in a["ours"]
        overlap = _by_start(findings, "Reduce-then-Broadcast")
        # The simulated broadcast overlaps the reduce: not the paper's sum.
        assert overlap["verdict"] == "differs" and overlap["measured"] > 0
        for panel in cx.PANELS:
            _by_start(findings, f"{panel}: largest |model - simulated|")
    _, findings = fig11
    ring = _by_start(findings, "does Ring ever win")
    assert ring["ok"] is True and "Ring wins at 0 of" in ring["ours"]
    head = _by_start(findings, "Auto-Gen vs Chain Reduce")
    P = cx.P_FIG_QUICK
    Bs = [1 << k for k in range(cx.LOG2_B_MAX_QUICK + 1)]
    top = max(
        wafer.reduce_time("chain", P, b) / wafer.reduce_time("autogen", P, b)
        for b in Bs
    )
    assert f"model up to {top:.3g}x" in head["ours"]
    rel = abs(top - cx.PAPER_AUTOGEN_REDUCE_1D) / cx.PAPER_AUTOGEN_REDUCE_1D
    assert head["ok"] is bool(rel <= HEADLINE_BAND)
    _by_start(findings, "Auto-Gen+Bcast vs Chain+Bcast")
    _, findings = fig12
    assert _by_start(findings, "fastest fixed Reduce")["ok"] is True
    assert _by_start(findings, "Ring vs Reduce-then-Broadcast")["ok"] is True


def test_findings_2d(fig13):
    cols, findings = fig13
    for start in (
        "X-Y Auto-Gen vs X-Y Chain Reduce",
        "X-Y Two-Phase vs vendor X-Y Chain Reduce",
        "X-Y Auto-Gen vs X-Y Chain AllReduce",
        "X-Y Two-Phase vs vendor X-Y Chain AllReduce",
    ):
        assert isinstance(_by_start(findings, start)["ok"], bool)
    n = cx.N_FIG_QUICK
    Bs = sorted(set(cols["B"][cols["sweep"] == "vs_B"].tolist()))
    top = max(
        wafer.reduce_2d_time("xy_chain", n, n, b)
        / wafer.reduce_2d_time("xy_autogen", n, n, b)
        for b in Bs
    )
    assert (
        f"model up to {top:.3g}x"
        in _by_start(findings, "X-Y Auto-Gen vs X-Y Chain Reduce")["ours"]
    )
    best = _by_start(findings, "fastest fixed 2D Reduce")
    assert best["ok"] is True and "snake (n = 4)" in best["ours"]
    _by_start(findings, "X-Y Reduce on")


@pytest.mark.parametrize("name", ["wafer_fig11", "wafer_fig12", "wafer_fig13"])
def test_plot_panels_and_single_axes(name, fig11, fig12, fig13):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    cols = {"wafer_fig11": fig11, "wafer_fig12": fig12, "wafer_fig13": fig13}[name][0]
    data = {k: v.tolist() for k, v in cols.items()}
    exp = wx.get_experiment(name)
    fig = Figure()
    ax = fig.add_subplot()
    assert exp.plot(data, ax=ax) is ax
    panels = [a for a in fig.axes if a.get_subplotspec() is not None]
    assert len(panels) == 3
    assert all(a.lines for a in panels)
    fig = Figure()
    free = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    assert exp.plot(data, ax=free) is free
    assert len([a for a in fig.axes if a.get_subplotspec() is None]) == 1
    assert free.lines and free.get_legend() is not None
