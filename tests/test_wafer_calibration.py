"""The switch overhead: its contention recurrence, the forms, and the fits."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import wafer
from wafercoll.experiments import wafer_calibrated
from wafercoll.wafer import calibration as cal


def _random_tree(rng: np.random.Generator, P: int) -> np.ndarray:
    return np.array([-1] + [int(rng.integers(0, v)) for v in range(1, P)])


def _recursive(parent: np.ndarray, B: int, ov: float, pre: bool) -> float:
    """The recurrence written from the children lists, top down."""
    kids: list[list[int]] = [[] for _ in parent]
    for v in range(1, len(parent)):
        kids[parent[v]].append(v)
    r = 1 if pre else 0

    def w(v: int) -> float:
        m = len(kids[v])
        if m == 0:
            return 0.0
        paths = [w(c) + (m - j) * (B + ov) for j, c in enumerate(kids[v], start=1)]
        return max([m * B + (m - 1 + r) * ov, *paths])

    return w(0)


@pytest.mark.parametrize("P", [2, 3, 7, 20, 61])
def test_switch_contention_matches_the_recurrence(P: int) -> None:
    rng = np.random.default_rng(P)
    for _ in range(10):
        tree = _random_tree(rng, P)
        for B in (1, 5):
            assert (
                wafer.switch_contention(tree, B)
                == B * wafer.tree_metrics(tree).contention
            )
            many = wafer.switch_contention_many(tree, B, [0.0, 3.0, 40.0])
            for k, ov in enumerate((0.0, 3.0, 40.0)):
                for pre in (False, True):
                    expect = _recursive(tree, B, ov, pre)
                    assert wafer.switch_contention(tree, B, ov, pre) == pytest.approx(
                        expect
                    )
                assert many[k] == pytest.approx(_recursive(tree, B, ov, False))


def test_switch_contention_closed_forms() -> None:
    P, B, ov = 9, 4, 10.0
    # Star: the root takes P - 1 streams, switching P - 2 times.
    assert (
        wafer.switch_contention(wafer.star_tree(P), B, ov) == (P - 1) * B + (P - 2) * ov
    )
    # Chain: one stream per PE, a switch only after an earlier phase.
    assert wafer.switch_contention(wafer.chain_tree(P), B, ov) == B
    assert wafer.switch_contention(wafer.chain_tree(P), B, ov, True) == B + ov
    with pytest.raises(ValueError, match="switch_overhead"):
        wafer.switch_contention(wafer.chain_tree(P), B, -1.0)
    with pytest.raises(ValueError, match="overheads"):
        wafer.switch_contention_many(wafer.chain_tree(P), B, [np.nan])


@pytest.mark.parametrize("P", [2, 5, 64, 100])
def test_overhead_forms_reduce_to_the_paper_at_zero(P: int) -> None:
    for pattern in ("chain", "two_phase", "autogen"):
        for B in (1, 17, 256):
            assert wafer.overhead_time(pattern, "reduce", P, B, 0.0) == pytest.approx(
                wafer.reduce_time(pattern, P, B)
            )
            assert wafer.overhead_time(
                pattern, "allreduce", P, B, 0.0
            ) == pytest.approx(wafer.allreduce_time(f"{pattern}+bcast", P, B))
    # The broadcast after a Reduce: the far end at P, the nearest switching PE
    # after one hop and the switch.
    B, ov = 8, 500.0
    t = wafer.overhead_time("chain", "allreduce", P, B, ov)
    assert t == pytest.approx(
        wafer.overhead_time("chain", "reduce", P, B, ov) + B + 4 + max(P, 1 + ov)
    )
    with pytest.raises(ValueError, match="pattern"):
        wafer.overhead_time("ring", "reduce", P, B, ov)
    with pytest.raises(ValueError, match="collective"):
        wafer.overhead_time("chain", "gather", P, B, ov)


def test_model_switch_increment_agrees_with_the_simulator_on_small_trees() -> None:
    # Where the contention term dominates (a star's root), every switch adds
    # ov cycles both in the model and in the simulation.
    P, B = 6, 16
    tree = wafer.star_tree(P)
    row = wafer.wafer_row(P)
    s = wafer.tree_schedule(tree, 4 * B)
    base = wc.simulate(s, row, wafer.wse2_network()).cycles
    for ov in (5.0, 50.0):
        sim = wc.simulate(s, row, wafer.wse2_network(switch_overhead=ov)).cycles
        model = wafer.tree_cycles(tree, B, 2, ov) - wafer.tree_cycles(tree, B, 2)
        assert sim - base == pytest.approx((P - 2) * ov)
        assert model == pytest.approx((P - 2) * ov)


def _synthetic(ov: float, n: int, sim: bool) -> list[cal.MeasuredSpeedup]:
    out = []
    speedup = cal.simulated_speedup if sim else cal.predicted_speedup
    Bs = (1, 4, 16, 64) if sim else cal.B_SWEEP
    for m in cal.MEASURED_SPEEDUPS:
        if sim and m.grid:
            continue
        m = dataclasses.replace(m, n=n)
        out.append(dataclasses.replace(m, value=speedup(m, ov, 2, Bs)[0]))
    return out


def test_the_model_fit_recovers_a_known_overhead() -> None:
    truth = 213.0
    ms = _synthetic(truth, 128, sim=False)
    c = wafer.calibrate_switch_overhead(("reduce_1d", "allreduce_1d"), measurements=ms)
    assert c.switch_overhead == pytest.approx(truth, abs=0.5)
    assert c.fit_rms < 1e-3 and c.held_out_rms < 1e-2
    assert [r["role"] for r in c.rows] == ["fit", "fit"] + ["held out"] * 4
    assert c.objective.shape[1] == 2 and c.objective[:, 1].min() >= 0


def test_the_simulator_fit_recovers_a_known_overhead() -> None:
    truth = 37.0
    ms = _synthetic(truth, 32, sim=True)
    c = wafer.calibrate_switch_overhead(
        ("reduce_1d",), measurements=ms, Bs=(1, 4, 16, 64), engine="simulator"
    )
    assert c.engine == "simulator"
    assert c.switch_overhead == pytest.approx(truth, abs=1.0)
    held = [r for r in c.rows if r["role"] == "held out"]
    assert [r["name"] for r in held] == ["allreduce_1d"]
    assert abs(held[0]["calibrated_error"]) < 0.01
    assert c.network().switch_overhead_s == pytest.approx(
        c.switch_overhead / wafer.CS2_CLOCK_HZ
    )


def test_calibration_rejects_bad_requests() -> None:
    with pytest.raises(ValueError, match="at least one"):
        wafer.calibrate_switch_overhead(())
    with pytest.raises(ValueError, match="unknown measurement"):
        wafer.calibrate_switch_overhead(("nope",))
    with pytest.raises(ValueError, match="engine"):
        wafer.calibrate_switch_overhead(engine="booksim")
    with pytest.raises(ValueError, match="cannot be simulated"):
        wafer.calibrate_switch_overhead(("reduce_2d",), engine="simulator")
    with pytest.raises(ValueError, match="grid"):
        cal.simulated_speedup(cal.MEASURED_SPEEDUPS[2], 10.0)


def test_calibrated_experiment_states_fit_and_held_out_points() -> None:
    cols, findings = wafer_calibrated.run_calibrated(quick=True)
    kind = np.asarray(cols["kind"])
    roles = np.asarray(cols["role"])[kind == "speedup"]
    assert set(roles) == {"fit", "held out"}
    fits = [f for f in findings if f["quantity"].startswith("switch overhead fitted")]
    assert len(fits) == 2 and all(
        "cycles by least squares on" in f["ours"] for f in fits
    )
    held = [f for f in findings if f["quantity"].startswith("held-out speedup")]
    assert len(held) == 5
    assert any("small B" in f["quantity"] for f in findings)
