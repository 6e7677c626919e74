"""Training-time model of the MCM paper (Section VIII-B, equations 1-2)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wafercoll.mcm import systolic, training


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


# -- layer-wise overlap (Section VII-C, Fig. 11) --------------------------------------

layer_weights = st.lists(st.integers(0, 100), max_size=12)


@settings(max_examples=200, deadline=None)
@given(layer_weights, st.integers(0, 101))
def test_gradient_groups_end_at_every_large_layer(
    weights: list[int], small: int
) -> None:
    # A group closes after every layer of at least `small` weights; what is
    # left after the last one is a group when it holds any weight.
    ends = [i + 1 for i, w in enumerate(weights) if w >= small]
    if sum(weights[ends[-1] if ends else 0 :]) > 0:
        ends.append(len(weights))
    starts = [0, *ends][: len(ends)]
    expected = [(a, sum(weights[a:b])) for a, b in zip(starts, ends, strict=True)]
    assert training.gradient_groups(weights, small) == expected


def test_gradient_groups_default_threshold_and_bad_input() -> None:
    big = training.SMALL_LAYER_PARAMETERS
    assert training.gradient_groups([big - 1, big, big - 1]) == [
        (0, 2 * big - 1),
        (2, big - 1),
    ]
    assert training.gradient_groups([]) == []
    with pytest.raises(ValueError, match="parameters"):
        training.gradient_groups([5, -1])


def test_gradient_bytes_are_four_per_weight_of_every_layer() -> None:
    for model in ("alexnet", "NCF_recommendation"):
        weights = sum(x.parameters for x in systolic.dnn_layers(model))
        assert training.gradient_bytes(model) == 4 * weights


@pytest.mark.parametrize(("model", "array"), [("alexnet", 256), ("Googlenet", 32)])
def test_gradient_ready_is_forward_then_backward_from_the_last_layer(
    model: str, array: int
) -> None:
    layers = systolic.dnn_layers(model)
    cyc = [
        systolic.layer_cycles(x, array, array, input_gradient=i > 0)
        for i, x in enumerate(layers)
    ]
    fwd = sum(c["forward"] for c in cyc)
    ready, compute = training.gradient_ready(model, (array, array), clock_Hz=2e9)
    assert sorted(ready) == list(range(len(layers)))
    for i in range(len(layers)):
        back = sum(c["input_gradient"] + c["weight_gradient"] for c in cyc[i:])
        assert ready[i] == pytest.approx((fwd + back) / 2e9, rel=1e-12)
    total = systolic.training_cycles(layers, array, array)["total"]
    assert compute == ready[0] == pytest.approx(total / 2e9, rel=1e-12)
    # one sample per PE: the chiplet's compute per iteration
    if array == 256:
        assert compute == pytest.approx(training.compute_time(model) / 2, rel=1e-12)


def _last_allreduce_end(
    ready: dict[int, float], groups: list[tuple[int, int]], times: dict[int, float]
) -> float:
    """Max-plus closed form: the last AllReduce ends at the latest ``ready of
    a group + every AllReduce from that group on`` (backward order)."""
    order = sorted(groups, key=lambda g: g[0], reverse=True)
    return max(
        (
            ready[first] + sum(times[w] for _, w in order[k:])
            for k, (first, _) in enumerate(order)
        ),
        default=0.0,
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 10**6), min_size=1, max_size=10, unique=True),
    st.lists(st.floats(0, 10), min_size=10, max_size=10),
    st.lists(st.floats(0, 10), min_size=10, max_size=10),
    st.floats(0, 100),
)
def test_overlapped_iteration_against_the_max_plus_form(
    weights: list[int], steps: list[float], durations: list[float], extra: float
) -> None:
    # layers in forward order; the backward pass produces the last one first
    n = len(weights)
    ready, t = {}, 0.0
    for i in range(n - 1, -1, -1):
        t += steps[i]
        ready[i] = t
    compute = t + extra
    groups = [(i, w) for i, w in enumerate(weights)]
    times = {w: d for w, d in zip(weights, durations, strict=False)}
    got = training.overlapped_iteration(ready, groups, compute, times.__getitem__)
    want = max(compute, _last_allreduce_end(ready, groups, times))
    assert got == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_layerwise_overlap_hides_all_or_nothing() -> None:
    groups = [(0, 7), (1, 8), (2, 9)]
    calls: list[int] = []

    def ar(w: int) -> float:
        calls.append(w)
        return w / 10

    # Gradients early, a long compute: every AllReduce is hidden.
    early = training.layerwise_overlap({0: 1.0, 1: 0.5, 2: 0.1}, groups, 100.0, ar)
    assert sorted(calls) == [7, 8, 9]  # once per group
    assert early["allreduce_s"] == pytest.approx(2.4)
    assert early["serial_s"] == pytest.approx(102.4)
    assert (early["overlapped_s"], early["hidden"]) == (100.0, 1.0)
    # Every gradient ready only at the end: nothing is hidden.
    late = training.layerwise_overlap({0: 5.0, 1: 5.0, 2: 5.0}, groups, 5.0, ar)
    assert late["overlapped_s"] == pytest.approx(7.4)
    assert late["hidden"] == pytest.approx(0.0, abs=1e-12)
    # Without AllReduce time there is nothing to hide.
    none = training.layerwise_overlap({0: 1.0}, [(0, 3)], 1.0, lambda w: 0.0)
    assert none["hidden"] == 1.0 and none["overlapped_s"] == 1.0
