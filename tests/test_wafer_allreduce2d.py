"""1D AllReduce and 2D collectives of the wafer model, and Figures 8 and 10.

Expected values are derived here from the proofs' metrics and equation (1),
or by brute force, never copied from the module or the paper's figures.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll.experiments as wx
from wafercoll import wafer
from wafercoll.experiments import wafer_allreduce as exp

T_R = wafer.T_R_DEFAULT
FIG8_PS = [1 << k for k in range(1, 11)]
FIG8_BS = [1 << k for k in range(16)]
PATTERNS = ("star", "chain", "tree", "two_phase", "autogen")


def eq1(E, L, D, C, N, t_r=T_R):
    """Equation (1), written out again."""
    return max(C, E / N + L) + (2 * t_r + 1) * D


# -- Lemma 6.1, Lemma 4.1 from any root, Lemma 7.1, Lemma 7.2 ------------------------
@pytest.mark.parametrize("P", [2, 3, 4, 7, 16, 512])
@pytest.mark.parametrize("B", [1, 5, 16, 1000])
def test_ring_is_eq1_on_the_metrics_of_its_proof(P, B):
    # Depth 2(P-1), distance 2(2P-3), energy 2(P-1) * 2(P-1)B/P on N = 2(P-1)
    # links, contention 2(P-1)B/P (B/P kept real when P does not divide B).
    E = 2 * (P - 1) * 2 * (P - 1) * B / P
    expected = eq1(E, 2 * (2 * P - 3), 2 * (P - 1), 2 * (P - 1) * B / P, 2 * (P - 1))
    assert wafer.ring_time(P, B) == pytest.approx(expected, rel=1e-12)
    assert wafer.allreduce_time("ring", P, B) == wafer.ring_time(P, B)
    for root in (0, P - 1, "best"):  # ring has no root
        assert wafer.allreduce_time("ring", P, B, root=root) == wafer.ring_time(P, B)


def test_ring_by_hand():
    # P = 4, B = 8: 2*3*8/4 + 16 - 6 + 2*3*5 = 12 + 10 + 30.
    assert wafer.ring_time(4, 8) == 52
    assert wafer.ring_time(4, 8, T_R=0) == 12 + 10 + 6


@pytest.mark.parametrize("P", [2, 5, 8, 33])
@pytest.mark.parametrize("B", [1, 7, 256])
def test_rooted_broadcast_is_lemma_4_1_from_any_root(P, B):
    for r in range(P):
        L = max(r, P - 1 - r)
        expected = eq1(B * (P - 1), L, 1, B, P - 1)
        assert wafer.rooted_broadcast_time(P, B, r) == pytest.approx(expected)
    assert wafer.rooted_broadcast_time(P, B, 0) == wafer.broadcast_time(P, B)


@pytest.mark.parametrize("M,N", [(1, 2), (2, 1), (2, 2), (3, 5), (8, 8), (512, 512)])
@pytest.mark.parametrize("B", [1, 64])
def test_broadcast_2d_is_lemma_7_1(M, N, B):
    P = M * N
    expected = eq1(B * (P - 1), M + N - 2, 1, B, P - 1)
    assert wafer.broadcast_2d_time(M, N, B) == pytest.approx(expected)
    if M == 1:
        assert wafer.broadcast_2d_time(M, N, B) == wafer.broadcast_time(N, B)
    # The square case of Section 7.1: 2 sqrt(P) + 2T_R - 1 + B.
    if M == N:
        assert wafer.broadcast_2d_time(M, N, B) == 2 * N + 2 * T_R - 1 + B


@pytest.mark.parametrize("M,N,B", [(2, 2, 1), (3, 5, 8), (512, 512, 4096)])
def test_lower_bound_2d_by_hand(M, N, B):
    expected = max(B, B / 8 + M + N - 1) + 2 * T_R + 1
    assert wafer.lower_bound_2d(M, N, B) == expected
    assert wafer.lower_bound_2d(M, N, B, T_R=0) == expected - 2 * T_R


# -- rooted trees ------------------------------------------------------------------
def test_rooted_tree_metrics_by_hand():
    # Chain to the middle of 5 PEs: 0 -> 1 -> 2 <- 3 <- 4.
    m = wafer.rooted_tree_metrics([1, 2, -1, 2, 3])
    # E = 4 hops, L = 2, D = 2; the root takes PE 1 (after 1 receive) then
    # PE 3: max(2, 1 + 1, 1 + 0) = 2.
    assert (m.energy, m.distance, m.depth, m.contention, m.links) == (4, 2, 2, 2, 4)
    # Star to PE 2 of 5.
    m = wafer.rooted_tree_metrics([2, 2, -1, 2, 2])
    assert (m.energy, m.distance, m.depth, m.contention, m.links) == (6, 2, 1, 4, 4)
    # Binary tree on [0..4] mirrored and on [4..8], joined at 4. Root's
    # children nearest first: 3, 5 (leaves), 2, 6 (one child each), 0, 8.
    # C = max(6, 0+5, 0+4, 1+3, 1+2, 0+1, 0+0) = 6.
    parent = [4, 2, 4, 4, -1, 4, 4, 6, 4]
    m = wafer.rooted_tree_metrics(parent)
    assert (m.energy, m.distance, m.depth, m.contention, m.links) == (16, 4, 2, 6, 8)
    assert np.array_equal(wafer.rooted_reduce_tree("tree", 9, 4), parent)
    # Root at the right end: the mirror of a chain.
    m = wafer.rooted_tree_metrics([1, 2, 3, -1])
    assert (m.energy, m.distance, m.depth, m.contention, m.links) == (3, 3, 3, 1, 3)
    # One PE.
    assert wafer.rooted_tree_metrics([-1]).links == 0


def test_rooted_tree_metrics_contention_counts_receives_in_sequence():
    # PE 0 takes PE 1 (which first takes 2 and 3), then PE 4: C = 3.
    assert wafer.rooted_tree_metrics([-1, 0, 1, 1, 0]).contention == 3
    # Mirrored around root 4: the same.
    assert wafer.rooted_tree_metrics([4, 3, 3, 4, -1]).contention == 3


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("P", [2, 3, 9, 16, 37])
def test_rooted_metrics_at_root_0_are_tree_metrics(pattern, P):
    for B in (1, 16, 512):
        tree = wafer.rooted_reduce_tree(pattern, P, 0, B)
        assert wafer.rooted_tree_metrics(tree) == wafer.tree_metrics(tree)
        if pattern != "star":
            assert wafer.rooted_tree_metrics(tree).cycles(B) == pytest.approx(
                wafer.reduce_time(pattern, P, B), rel=1e-12
            )


@pytest.mark.parametrize("pattern", ("chain", "tree", "two_phase", "autogen"))
def test_each_side_of_a_rooted_tree_has_the_patterns_metrics(pattern):
    P, B = 23, 32
    for r in (1, 7, 11, 22):
        parent = wafer.rooted_reduce_tree(pattern, P, r, B)
        # Rebuild the two halves as trees towards their own PE 0.
        lt = np.asarray([-1] + [r - int(parent[r - i]) for i in range(1, r + 1)])
        rt = np.asarray([-1] + [int(parent[r + i]) - r for i in range(1, P - r)])
        left, right = wafer.tree_metrics(lt), wafer.tree_metrics(rt)
        if pattern == "autogen":
            assert np.array_equal(lt, wafer.autogen(r + 1, B).parent)
            assert np.array_equal(rt, wafer.autogen(P - r, B).parent)
        whole = wafer.rooted_tree_metrics(parent)
        assert whole.energy == left.energy + right.energy
        assert whole.depth == max(left.depth, right.depth)
        assert whole.distance == max(r, P - 1 - r)
        assert whole.contention >= max(left.contention, right.contention)


def test_rooted_reduce_time_by_hand():
    # Chain to PE 2 of 5 with B = 8: E = 32, L = 2, D = 2, C = 16, N = 4.
    assert wafer.rooted_reduce_time("chain", 5, 8, 2) == eq1(32, 2, 2, 16, 4)
    # Plus the broadcast from PE 2: 8 + 2 + 1 + 4.
    assert wafer.allreduce_time("chain+bcast", 5, 8, root=2) == eq1(32, 2, 2, 16, 4) + (
        8 + 2 + 1 + 2 * T_R
    )
    # Root 0: the paper's closed forms.
    for p in PATTERNS:
        assert wafer.allreduce_time(f"{p}+bcast", 5, 8) == wafer.reduce_time(
            p, 5, 8
        ) + wafer.broadcast_time(5, 8)


@pytest.mark.parametrize("P", [2, 6, 31])
def test_refined_star_does_not_depend_on_the_root(P):
    for r in range(P):
        assert wafer.rooted_reduce_time("star", P, 3, r) == wafer.star_time(P, 3)


@pytest.mark.parametrize("algorithm", wafer.ALLREDUCE_ALGORITHMS)
@pytest.mark.parametrize("P", [2, 3, 10, 33])
@pytest.mark.parametrize("B", [1, 8, 100, 5000])
def test_best_root_is_the_brute_force_minimum(algorithm, P, B):
    brute = [wafer.allreduce_time(algorithm, P, B, root=r) for r in range(P)]
    r, cycles = wafer.best_root(algorithm, P, B)
    if algorithm == "ring":
        assert (r, cycles) == (0, wafer.ring_time(P, B))
        return
    assert cycles == pytest.approx(min(brute), rel=1e-12)
    assert brute[r] == pytest.approx(cycles, rel=1e-12)
    # The smallest root among the (numerically) best ones.
    assert r == min(i for i, t in enumerate(brute) if t <= min(brute) * (1 + 1e-12))
    best = wafer.allreduce_time(algorithm, P, B, root="best")
    assert best == cycles
    assert best <= brute[0] * (1 + 1e-12)


def test_best_root_moves_to_the_middle_for_chain_at_small_b():
    # Chain to the middle: C = 2B, D = L = 255 on each side vs C = B, D = 511.
    r, cycles = wafer.best_root("chain+bcast", 512, 1)
    assert r in (255, 256)
    assert cycles < wafer.allreduce_time("chain+bcast", 512, 1)
    # At large B the contention 2B of a middle root loses to B at PE 0.
    assert wafer.best_root("chain+bcast", 512, 1 << 15)[0] == 0


# -- 2D ----------------------------------------------------------------------------
@pytest.mark.parametrize("M,N", [(1, 5), (5, 1), (2, 3), (7, 4), (16, 16)])
@pytest.mark.parametrize("B", [1, 64, 3000])
def test_2d_forms_from_the_1d_ones(M, N, B):
    def phases(fn, name):
        # Rows of N PEs, then the column of M PEs; an axis of 1 PE costs 0.
        return sum(0.0 if n == 1 else fn(name, n, B) for n in (N, M))

    for p in PATTERNS:
        red = phases(wafer.reduce_time, p)
        assert wafer.reduce_2d_time(f"xy_{p}", M, N, B) == pytest.approx(red)
        all_xy = phases(wafer.allreduce_time, f"{p}+bcast")
        assert wafer.allreduce_2d_time(f"xy_{p}", M, N, B) == pytest.approx(all_xy)
        assert wafer.allreduce_2d_time(f"xy_{p}+bcast2d", M, N, B) == pytest.approx(
            red + wafer.broadcast_2d_time(M, N, B)
        )
    snake = B + (2 * T_R + 2) * (M * N - 1)  # Lemma 5.2 on M N PEs
    assert wafer.reduce_2d_time("snake", M, N, B) == snake
    assert wafer.allreduce_2d_time("snake+bcast2d", M, N, B) == snake + (
        B + M + N - 2 + 2 * T_R + 1
    )
    ring = phases(wafer.allreduce_time, "ring")
    assert wafer.allreduce_2d_time("xy_ring", M, N, B) == pytest.approx(ring)


def test_a_single_row_grid_is_the_1d_row():
    for p in PATTERNS:
        assert wafer.reduce_2d_time(f"xy_{p}", 1, 12, 9) == wafer.reduce_time(p, 12, 9)
    assert wafer.reduce_2d_time("snake", 1, 12, 9) == wafer.chain_time(12, 9)


# -- the grids of Figures 8 and 10 -------------------------------------------------
@pytest.fixture(scope="module")
def fig10():
    return wafer.speedup_heatmap(
        "2d_allreduce", FIG8_PS, FIG8_BS
    ), wafer.speedup_heatmap("2d_reduce", FIG8_PS, FIG8_BS)


def test_2d_lower_bound_below_every_2d_pattern_on_the_figure_10_grid(fig10):
    lb = np.asarray([[wafer.lower_bound_2d(n, n, b) for b in FIG8_BS] for n in FIG8_PS])
    for h in fig10:
        for name, cyc in zip(h["algorithms"], h["cycles"]):
            assert np.all(cyc >= lb), name


def test_2d_lower_bound_below_every_2d_reduce_on_small_rectangles():
    for M in range(2, 13):
        for N in range(2, 13):
            for B in (1, 2, 3, 8, 100):
                lb = wafer.lower_bound_2d(M, N, B)
                for a in wafer.REDUCE_2D_ALGORITHMS:
                    assert wafer.reduce_2d_time(a, M, N, B) >= lb, (M, N, B, a)


def test_2d_lower_bound_is_the_paper_s_statement_on_a_single_row():
    # Lemma 7.2's distance M + N - 1 is one more than the M + N - 2 hops; on
    # a 1 x 2 row at B = 1 it exceeds Chain (B + 2T_R + 2).
    assert wafer.lower_bound_2d(1, 2, 1) > wafer.reduce_2d_time("xy_chain", 1, 2, 1)


@pytest.mark.slow
def test_1d_lower_bound_below_every_1d_reduce_on_the_figure_8_grid():
    h = wafer.speedup_heatmap("1d_reduce", FIG8_PS, FIG8_BS)
    names = list(h["algorithms"])
    ps = np.asarray(FIG8_PS)
    for j, b in enumerate(FIG8_BS):
        lb = wafer.lower_bound_cycles(ps[-1], b)[ps - 1]
        for k, name in enumerate(names):
            cyc = h["cycles"][k, :, j]
            if name == "star":
                # The refined Star overlaps energy and distance: at B = 1 it is
                # P + 2T_R against the bound's >= P + 2T_R + 1; at P = 2 it is
                # B + 2T_R + 1 against B + 1 + 2T_R + 1 (it omits the hop).
                below = cyc < lb * (1 - 1e-12)
                assert np.all((b <= 2) | (ps[below] == 2)), (b, ps[below])
                assert np.all(cyc[below] == ps[below] * b - b + 2 * T_R + 1)
                if b > 1:
                    assert lb[0] == cyc[0] + 1
                lemma = [wafer.star_lemma_time(int(p), b) for p in ps]
                assert np.all(np.asarray(lemma) >= lb * (1 - 1e-12))
            else:
                assert np.all(cyc >= lb * (1 - 1e-12)), (name, b)


@pytest.mark.parametrize("kind", sorted(wafer.HEATMAP_KINDS))
def test_heatmap_shapes_best_and_cells(kind):
    ps, bs = [2, 3, 8, 17], [1, 3, 64, 4096]
    h = wafer.speedup_heatmap(kind, ps, bs)
    n_alg = len(h["algorithms"])
    assert h["cycles"].shape == h["speedup"].shape == (n_alg, len(ps), len(bs))
    assert h["best"].shape == h["best_speedup"].shape == (len(ps), len(bs))
    assert list(h["Ps"]) == ps and list(h["Bs"]) == bs
    base = list(h["algorithms"]).index(str(h["baseline"]))
    np.testing.assert_allclose(h["speedup"][base], 1.0)
    np.testing.assert_allclose(
        h["speedup"] * h["cycles"],
        np.broadcast_to(h["cycles"][base], h["cycles"].shape),
    )
    fixed = np.flatnonzero(h["fixed"])
    assert all("autogen" not in h["algorithms"][i] for i in fixed)
    assert len(fixed) == n_alg - 1 - (kind == "2d_allreduce")
    expected = fixed[np.argmin(h["cycles"][fixed], axis=0)]
    np.testing.assert_array_equal(h["best"], expected)
    np.testing.assert_array_equal(
        h["best_speedup"], np.take_along_axis(h["speedup"], h["best"][None], 0)[0]
    )
    # Every cell against the scalar functions.
    scalar = {
        "1d_allreduce": lambda a, p, b: wafer.allreduce_time(a, p, b),
        "1d_reduce": lambda a, p, b: wafer.reduce_time(a, p, b),
        "2d_allreduce": lambda a, n, b: wafer.allreduce_2d_time(a, n, n, b),
        "2d_reduce": lambda a, n, b: wafer.reduce_2d_time(a, n, n, b),
    }[kind]
    for k, a in enumerate(h["algorithms"]):
        for i, p in enumerate(ps):
            for j, b in enumerate(bs):
                assert h["cycles"][k, i, j] == pytest.approx(
                    scalar(str(a), p, b), rel=1e-12
                ), (a, p, b)


def test_heatmap_algorithms_are_the_public_lists():
    h1 = wafer.speedup_heatmap("1d_allreduce", [4], [4])
    h2 = wafer.speedup_heatmap("2d_allreduce", [4], [4])
    assert tuple(h1["algorithms"]) == wafer.ALLREDUCE_ALGORITHMS
    assert set(h2["algorithms"]) == set(wafer.ALLREDUCE_2D_ALGORITHMS)
    assert str(h1["baseline"]) == "chain+bcast" and str(h2["baseline"]) == "xy_chain"


# -- experiments -------------------------------------------------------------------
@pytest.fixture(scope="module", params=["wafer_fig8", "wafer_fig10"])
def quick(request):
    e = wx.get_experiment(request.param)
    cols, findings = wx.split_result(e.run(quick=True), e.name)
    return e, {k: np.asarray(v) for k, v in cols.items()}, findings


def test_experiments_registered_and_quick(quick):
    e, cols, findings = quick
    assert e.paper == "000" and e in wx.experiments(paper="000")
    row = "P" if e.name == "wafer_fig8" else "n"
    n_rows = exp.LOG2_P_MAX_QUICK * (exp.LOG2_B_MAX_QUICK + 1)
    n_alg = len(set(cols["algorithm"]))
    assert len(cols["B"]) == n_alg * n_rows
    # Exactly one best per cell, and it is the fastest fixed algorithm.
    best = cols["best"].astype(bool)
    assert best.sum() == n_rows
    fixed = np.asarray(["autogen" not in a for a in cols["algorithm"]])
    for p, b in zip(cols[row][best], cols["B"][best]):
        cell = (cols[row] == p) & (cols["B"] == b)
        winner = cell & best
        assert cols["cycles"][winner][0] == cols["cycles"][cell & fixed].min()
    assert findings and all(
        {"quantity", "paper", "ours", "note", "ok"} <= set(f) for f in findings
    )
    assert all(isinstance(f["ok"], bool) for f in findings)


def test_quick_findings_follow_from_the_data(quick):
    e, cols, findings = quick
    regions = findings[0]
    assert regions["quantity"].startswith("regions")
    # The regions check, recomputed from the columns: per row, the winners'
    # bands (0 Star/Tree, 1 Two-Phase, 2 Chain/Ring/Snake) as B grows.
    row = "P" if e.name == "wafer_fig8" else "n"
    best = cols["best"].astype(bool)
    rows = sorted(set(cols[row].tolist()))
    bands, names = [], []
    for p in rows:
        sel = best & (cols[row] == p)
        order = np.argsort(cols["B"][sel])
        winners = [exp.base_pattern(a) for a in cols["algorithm"][sel][order]]
        names.append(winners)
        bands.append([exp.BAND[a] for a in winners])
    bands = np.asarray(bands)
    expected = (
        np.all(bands[:, 0] == 0)
        and np.all(bands[:, -1] == 2)
        and "two_phase" in names[-1]
        and np.all(np.diff(bands, axis=1) >= 0)
    )
    assert regions["ok"] == bool(expected)
    if e.name == "wafer_fig8":
        ring = [f for f in findings if "Ring ever win" in f["quantity"]][0]
        at = (cols["P"] == exp.P_HEADLINE_QUICK) & best
        assert ring["ok"] == ("ring" not in set(cols["algorithm"][at]))
    else:
        snake = [f for f in findings if "largest B" in f["quantity"]][0]
        last = [w[-1] for w in names]
        assert snake["ok"] == (last.count("snake") > last.count("ring"))


def test_quick_runs_write_csv_and_figures(tmp_path):
    pytest.importorskip("matplotlib")
    for name in ("wafer_fig8", "wafer_fig10"):
        record = wx.run_experiment(name, tmp_path, quick=True)
        assert [f.rsplit(".", 1)[1] for f in record["files"]] == [
            "csv",
            "png",
            "svg",
            "csv",
        ]
        assert record["rows"] > 0


def test_headline_is_judged_on_the_maximum_both_ways():
    band = exp.HEADLINE_BAND
    f = exp._headline("h.x", "x", 2.0, "t", (2.0 * (1 + band / 2), 1, {}), "here")
    assert f["ok"] is True and f["judge"]["kind"] == "up_to"
    for top in (2.0 * (1 + 2 * band), 2.0 * (1 - 2 * band)):
        f = exp._headline("h.x", "x", 2.0, "t", (top, 4, {}), "here")
        assert f["ok"] is False and "not the CS-2" in f["explanation"]


# -- bad input ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: wafer.allreduce_time("nope", 4, 4), "algorithm"),
        (lambda: wafer.allreduce_time("chain", 4, 4), "algorithm"),
        (lambda: wafer.allreduce_time("chain+bcast", 1, 4), "P"),
        (lambda: wafer.allreduce_time("chain+bcast", 4, 0), "B"),
        (lambda: wafer.allreduce_time("chain+bcast", 4, 4, T_R=-1), "T_R"),
        (lambda: wafer.allreduce_time("chain+bcast", 4, 4, root=4), "root"),
        (lambda: wafer.allreduce_time("chain+bcast", 4, 4, root=-1), "root"),
        (lambda: wafer.allreduce_time("chain+bcast", 4, 4, root="middle"), "root"),
        (lambda: wafer.best_root("xy_chain", 4, 4), "algorithm"),
        (lambda: wafer.ring_time(1, 4), "P"),
        (lambda: wafer.rooted_broadcast_time(4, 4, 9), "root"),
        (lambda: wafer.rooted_reduce_time("ring", 4, 4, 1), "pattern"),
        (lambda: wafer.broadcast_2d_time(0, 4, 4), "M"),
        (lambda: wafer.broadcast_2d_time(4, 0, 4), "N"),
        (lambda: wafer.broadcast_2d_time(1, 1, 4), "M \\* N"),
        (lambda: wafer.reduce_2d_time("snake", 4, 4, 0), "B"),
        (lambda: wafer.reduce_2d_time("xy_ring", 4, 4, 4), "algorithm"),
        (lambda: wafer.reduce_2d_time("xy_chain", 4, 4, 4, T_R=-0.5), "T_R"),
        (lambda: wafer.allreduce_2d_time("ring", 4, 4, 4), "algorithm"),
        (lambda: wafer.allreduce_2d_time("snake", 4, 4, 4), "algorithm"),
        (lambda: wafer.lower_bound_2d(4, -2, 4), "N"),
        (lambda: wafer.speedup_heatmap("3d", [2], [1]), "kind"),
        (lambda: wafer.speedup_heatmap("1d_allreduce", [1], [1]), "Ps"),
        (lambda: wafer.speedup_heatmap("2d_allreduce", [4096], [1]), "Ps"),
        (lambda: wafer.speedup_heatmap("1d_allreduce", [4], [0]), "Bs"),
        (lambda: wafer.speedup_heatmap("1d_allreduce", [], [1]), "Ps"),
        (lambda: wafer.speedup_heatmap("1d_allreduce", [4], [1], T_R=-1), "T_R"),
        (lambda: wafer.rooted_tree_metrics([0, -1, -1]), "root"),
        (lambda: wafer.rooted_tree_metrics([1, 2, -1, 4, 2]), "parent\\[3\\]"),
        (lambda: wafer.rooted_tree_metrics([2, 2, -1, 0]), "parent\\[3\\]"),
    ],
)
def test_bad_input_raises_value_error_naming_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: wafer.allreduce_time(3, 4, 4), "algorithm"),
        (lambda: wafer.allreduce_time("ring", 4.0, 4), "P"),
        (lambda: wafer.allreduce_time("chain+bcast", 4, 4, root=1.5), "root"),
        (lambda: wafer.reduce_2d_time("snake", 4, "4", 4), "N"),
        (lambda: wafer.speedup_heatmap(None, [2], [1]), "kind"),
        (lambda: wafer.rooted_tree_metrics([0.5, -1]), "parent"),
    ],
)
def test_bad_types_raise_type_error(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_ring_with_p_not_dividing_b_keeps_the_real_chunk():
    # 2 (P-1) B / P with B / P = 10 / 3.
    assert wafer.ring_time(3, 10) == pytest.approx(
        2 * 2 * 10 / 3 + 4 * 3 - 6 + 2 * 2 * 5
    )
    assert not math.isclose(wafer.ring_time(3, 10) % 1, 0)
