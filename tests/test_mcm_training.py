"""Training-time model of the MCM paper (Section VIII-B, equations 1-2)."""

from __future__ import annotations

import math

import pytest

from wafercoll.mcm import training


def test_resnet152_example_from_the_formula() -> None:
    # Section VIII-B: D = 1281167, N = 64, 16 samples per chiplet
    D, N, d = 1281167, 64, 16
    assert training.iterations(D, N, d) == math.ceil(D / (N * d))
    assert training.iterations(D, N - 1, d) == math.ceil(D / ((N - 1) * d))
    # the paper's worked numbers (cycles), put through equation (2)
    T, cb, ct = 1832399, 10350425, 7076228
    g = training.gain(N, T, cb, ct, dataset=D, per_chiplet=d)
    ib, it = math.ceil(D / 1024), math.ceil(D / 1008)
    assert (g["I_base"], g["I_tto"]) == (ib, it) == (1252, 1271)
    assert g["gain"] == ib * (T + cb) - it * (T + ct)
    assert g["reduction"] == pytest.approx(g["gain"] / (ib * (T + cb)))


def test_gain_is_negative_without_an_allreduce_speedup() -> None:
    g = training.gain(16, 1.0, 0.5, 0.5)
    assert g["I_tto"] > g["I_base"] and g["gain"] < 0


def test_parameter_counts_and_bad_input() -> None:
    assert training.MODEL_PARAMETERS["AlphaGoZero"] == 39 * 9 * 256 * 256
    assert len(training.MODEL_PARAMETERS) == 7
    with pytest.raises(ValueError, match="chiplets"):
        training.gain(1, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="dataset"):
        training.iterations(0, 4)


def test_allreduce_time_grows_with_the_model() -> None:
    small = training.allreduce_time("mesh_ring_bi_allreduce", 2, 2, 10_000)
    large = training.allreduce_time("mesh_ring_bi_allreduce", 2, 2, 40_000)
    assert 0 < small < large
