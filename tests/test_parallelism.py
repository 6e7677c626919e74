"""Synthetic training steps (wafercoll.workloads.parallelism and .layers).

Expected values are derived by hand in each test: node counts from the
parallelism, the 1F1B order from its definition (warm-up, steady state,
cool-down), communicators from the rank formula, and step times from the
closed forms of the pipeline bubble and of a ring allreduce alone.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.workloads import (
    Layer,
    Layout,
    Roofline,
    gpt_layers,
    pipeline_order,
    training_step,
)

PEAK = 1e12  # FLOP/s of the test device; memory is never the bound here
MODEL = Roofline(PEAK, 1e30)
RING = {"allreduce": "generic_ring_allreduce"}


def dense(n: int, flops: float = 1e9, act: int = 4096, params: int = 8192) -> list:
    return [Layer(f"l{i}", flops, act, params) for i in range(n)]


def compute_names(w, rank: int) -> list[str]:
    return [n.name for n in w if n.kind == "compute" and n.ranks == (rank,)]


def pass_order(w, rank: int) -> list[tuple[str, int]]:
    """(F or B, micro-batch) of a rank's compute nodes, optimizer left out."""
    out = []
    for name in compute_names(w, rank):
        m = re.fullmatch(r"\S+ (forward|backward) mb(\d+)", name)
        if m:
            out.append(("F" if m[1] == "forward" else "B", int(m[2])))
    return out


# -- the layout ---------------------------------------------------------------------
def test_layout_numbers_ranks_tp_innermost_then_dp_then_pp() -> None:
    lay = Layout(dp=3, tp=2, pp=2)
    for pp in range(2):
        for dp in range(3):
            for tp in range(2):
                r = tp + 2 * (dp + 3 * pp)
                assert lay.rank(dp=dp, tp=tp, pp=pp) == r
                assert lay.coords(r) == (dp, tp, pp)
    assert lay.groups("tp") == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11)]
    assert lay.groups("dp") == [(0, 2, 4), (1, 3, 5), (6, 8, 10), (7, 9, 11)]
    assert lay.groups("pp") == [(0, 6), (1, 7), (2, 8), (3, 9), (4, 10), (5, 11)]


def test_layout_other_order_and_expert_groups() -> None:
    lay = Layout(dp=2, tp=2, pp=2, order=("dp", "pp", "tp"))
    # rank = dp + 2 * (pp + 2 * tp)
    assert lay.group("tp", 0) == (0, 4)
    assert lay.group("dp", 0) == (0, 1)
    assert lay.group("pp", 1) == (1, 3)
    ep = Layout(dp=6, ep=3)
    assert ep.groups("ep") == [(0, 1, 2), (3, 4, 5)]
    assert ep.groups("edp") == [(0, 3), (1, 4), (2, 5)]
    assert Layout.for_ranks(24, tp=2, pp=3).dp == 4


def test_placement_keeps_tp_groups_on_neighbours() -> None:
    mesh = wc.mesh(3, 4)
    for tp in (2, 3, 4, 6):
        lay = Layout.for_ranks(12, tp=tp)
        place = lay.placement(mesh)
        assert sorted(place.tolist()) == list(range(12))
        for g in lay.groups("tp"):
            ends = place[list(g)]
            assert all(mesh.hops(a, b) == 1 for a, b in zip(ends, ends[1:]))
    # a cluster whose ranks alternate between nodes: TP groups inside a node
    cl = wc.topology.cluster(2, 4, rank_to_node=[0, 1, 0, 1, 0, 1, 0, 1])
    place = Layout(dp=2, tp=4).placement(cl)
    for g in Layout(dp=2, tp=4).groups("tp"):
        assert len({int(cl.node_of[e]) for e in place[list(g)]}) == 1


# -- layers --------------------------------------------------------------------------
def test_gpt_layer_counts_from_the_matrix_products() -> None:
    h, s, b, e = 96, 40, 3, 2
    (layer,) = gpt_layers(h, 1, s, b, bytes_per_element=e)
    t = b * s
    gemms = [  # (rows, inner, cols) of every product of one layer's forward
        (t, h, 3 * h),  # query, key, value
        (s, h, s),  # scores, per sequence
        (s, s, h),  # scores times values, per sequence
        (t, h, h),  # output projection
        (t, h, 4 * h),  # MLP up
        (t, 4 * h, h),  # MLP down
    ]
    per_seq = {1, 2}
    flops = sum(
        2 * r * k * c * (b if i in per_seq else 1) for i, (r, k, c) in enumerate(gemms)
    )
    assert layer.forward_flops == flops
    params = (3 * h * h + 3 * h) + (h * h + h) + (4 * h * h + 4 * h) + (4 * h * h + h)
    params += 2 * 2 * h  # two layer norms, scale and shift
    assert layer.parameter_bytes == params * e
    assert layer.activation_bytes == t * h * e
    assert layer.tp_allreduces == 2


def test_gpt_moe_layers_split_attention_and_experts() -> None:
    h, s, b, n_exp, k = 32, 16, 2, 8, 2
    layers = gpt_layers(h, 4, s, b, moe_every=2, experts=n_exp, top_k=k)
    assert [x.name for x in layers] == [
        "layer0",
        "layer1.attention",
        "layer1.experts",
        "layer2",
        "layer3.attention",
        "layer3.experts",
    ]
    dense_layer, attn, experts = layers[0], layers[1], layers[2]
    t = b * s
    router = 2 * t * h * n_exp
    mlp = 16 * t * h * h
    assert attn.forward_flops + experts.forward_flops == (
        dense_layer.forward_flops - mlp + router + k * mlp
    )
    assert (experts.experts, experts.top_k, experts.is_expert) == (n_exp, k, True)
    assert experts.parameter_bytes == n_exp * (8 * h * h + 5 * h) * 2


def test_layer_from_parameters() -> None:
    x = Layer.from_parameters("fc", 10**6, 512, 512 * 1024 * 2, bytes_per_element=4)
    assert x.forward_flops == 2 * 10**6 * 512
    assert x.parameter_bytes == 4 * 10**6
    assert x.tokens == 512


# -- 1F1B order ------------------------------------------------------------------------
TEXTBOOK = {
    # stage s: warm-up min(p - s - 1, m) forwards, then 1F1B, then cool-down
    (3, 4): [
        "F0 F1 F2 B0 F3 B1 B2 B3",
        "F0 F1 B0 F2 B1 F3 B2 B3",
        "F0 B0 F1 B1 F2 B2 F3 B3",
    ],
    (4, 2): ["F0 F1 B0 B1", "F0 F1 B0 B1", "F0 F1 B0 B1", "F0 B0 F1 B1"],
    (1, 3): ["F0 B0 F1 B1 F2 B2"],
    (2, 1): ["F0 B0", "F0 B0"],
}


@pytest.mark.parametrize("pm", sorted(TEXTBOOK))
def test_pipeline_order_is_the_textbook_1f1b(pm: tuple[int, int]) -> None:
    p, m = pm
    for s in range(p):
        got = " ".join(f"{k}{i}" for k, i in pipeline_order(p, m, s))
        assert got == TEXTBOOK[pm][s]


@pytest.mark.parametrize("pm", sorted(TEXTBOOK))
def test_each_stage_computes_in_1f1b_order(pm: tuple[int, int]) -> None:
    p, m = pm
    w = training_step(dense(p), Layout(pp=p), MODEL, microbatches=m)
    for s in range(p):
        got = " ".join(f"{k}{i}" for k, i in pass_order(w, s))
        assert got == TEXTBOOK[pm][s]
        names = compute_names(w, s)
        assert names[-1] == "optimizer"
    # compute on a rank waits for the rank's previous compute
    previous: dict[int, int] = {}
    for n in w:
        if n.kind == "compute":
            (r,) = n.ranks
            if r in previous:
                assert previous[r] in n.deps[r]
            previous[r] = n.id


def test_pipeline_sends_carry_the_boundary_activations() -> None:
    acts = [100, 200, 300, 400, 500, 600]
    layers = [Layer(f"l{i}", 1e9, a, 8) for i, a in enumerate(acts)]
    w = training_step(layers, Layout(pp=3), MODEL, microbatches=4)
    sends = [n for n in w if n.kind == "send"]
    assert len(sends) == 2 * (3 - 1) * 4
    # stages hold layers 0-1, 2-3, 4-5: forward sends the output of layers 1
    # and 3, backward the gradient of the inputs of layers 2 and 4
    expect = {(0, 1): 200, (1, 2): 400, (1, 0): 200, (2, 1): 400}
    for n in sends:
        assert n.size_bytes == expect[n.ranks]
    # a forward on stage 1 waits for stage 0's activation of its micro-batch
    for n in w:
        if n.kind == "compute" and n.name.startswith("l2 forward"):
            mb = int(n.name[-1])
            (dep,) = [d for d in n.deps[1] if w.node(d).kind == "send"]
            assert w.node(dep).ranks == (0, 1)
            assert w.node(dep).name.endswith(f"mb{mb}")


# -- node counts -------------------------------------------------------------------------
def test_data_parallel_counts_and_overlap_structure() -> None:
    p, n_layers, m = 4, 3, 2
    w = training_step(dense(n_layers), Layout(dp=p), MODEL, microbatches=m)
    assert w.counts() == {
        "compute": p * (2 * n_layers * m + 1),
        "collective": n_layers,
        "send": 0,
    }
    colls = [n for n in w if n.kind == "collective"]
    assert all(n.ranks == (0, 1, 2, 3) and n.size_bytes == 8192 for n in colls)
    # layer l's allreduce waits for l's last backward and the previous allreduce
    for k, (n, layer) in enumerate(zip(colls, ("l2", "l1", "l0"))):
        for r in range(p):
            names = {w.node(d).name for d in n.deps[r]}
            want = {f"{layer} backward mb{m - 1}"}
            if k:
                want.add(colls[k - 1].name)
            assert names == want
    # no backward waits for an allreduce; the optimizer waits for the last
    for n in w:
        if n.kind == "compute":
            kinds = {w.node(d).kind for d in n.deps[n.ranks[0]]}
            assert ("collective" in kinds) == (n.name == "optimizer")


@pytest.mark.parametrize(
    ("bucket", "sizes"),
    [(None, [300, 200, 100]), (1, [300, 200, 100]), (400, [500, 100]), (10**9, [600])],
)
def test_buckets_fill_in_backward_order(bucket: int | None, sizes: list[int]) -> None:
    layers = [Layer(f"l{i}", 1e9, 64, b) for i, b in enumerate((100, 200, 300))]
    w = training_step(layers, Layout(dp=2), MODEL, bucket_bytes=bucket)
    assert [n.size_bytes for n in w if n.kind == "collective"] == sizes


def test_tensor_parallel_counts_and_sizes() -> None:
    t, n_layers = 4, 2
    layers = gpt_layers(64, n_layers, 32, 2)
    w = training_step(layers, Layout(tp=t), MODEL)
    # per layer: 2 sections forward and 2 backward, each an allreduce
    assert w.counts() == {
        "compute": t * (n_layers * 2 * 2 + 1),
        "collective": n_layers * 4,
        "send": 0,
    }
    for n in w:
        if n.kind == "collective":
            assert n.ranks == (0, 1, 2, 3)
            assert n.size_bytes == 2 * 32 * 64 * 2
        elif n.name != "optimizer":
            fwd = layers[0].forward_flops / (t * 2)
            assert n.flops == pytest.approx(fwd * (1 if "forward" in n.name else 2))


def test_three_dimensional_counts_and_communicators() -> None:
    lay = Layout(dp=2, tp=2, pp=2)
    m = 3
    layers = gpt_layers(64, 4, 16, 2)  # two layers per stage
    w = training_step(layers, lay, MODEL, microbatches=m)
    per_rank = 2 * m * 2 * 2 + 1  # layers x mb x (fwd, bwd) x sections + optimizer
    tp_allreduces = 4 * (2 * m * 4)  # dp x pp groups; 4 per layer and mb
    dp_allreduces = 4 * 2  # tp x pp groups; one per layer
    assert w.counts() == {
        "compute": 8 * per_rank,
        "collective": tp_allreduces + dp_allreduces,
        "send": 4 * 2 * m,  # dp x tp chains, both ways, one boundary
    }
    tp_groups = {(0, 1), (2, 3), (4, 5), (6, 7)}
    dp_groups = {(0, 2), (1, 3), (4, 6), (5, 7)}
    for n in w:
        if n.kind == "send":
            a, b = n.ranks
            assert abs(a - b) == 4  # same (dp, tp), neighbouring stage
        elif n.kind == "collective" and " tp " in n.name:
            assert n.ranks in tp_groups
        elif n.kind == "collective":
            assert n.ranks in dp_groups
            assert n.size_bytes == layers[0].parameter_bytes // 2


def test_expert_parallel_counts_and_groups() -> None:
    moe = Layer("moe", 1e9, 1000, 4000, experts=4, top_k=2)
    layers = [Layer("attn", 1e9, 1000, 600), moe]
    w = training_step(layers, Layout(dp=4, ep=2), MODEL, microbatches=2)
    a2a = [n for n in w if n.kind == "collective" and n.collective == "alltoall"]
    assert len(a2a) == 4 * 2 * 2  # 2 forward, 2 backward; 2 mb; 2 EP groups
    assert {n.ranks for n in a2a} == {(0, 1), (2, 3)}
    assert {n.size_bytes for n in a2a} == {2 * 1000}
    grads = [
        (n.ranks, n.size_bytes)
        for n in w
        if n.kind == "collective" and n.collective == "allreduce"
    ]
    # experts: 4000 / ep over ranks holding the same experts; attention: all
    assert sorted(grads) == [((0, 1, 2, 3), 600), ((0, 2), 2000), ((1, 3), 2000)]


def test_skewed_routing_uses_the_moe_matrix() -> None:
    moe = Layer("moe", 1e9, 64 * 8, 4000, experts=4, top_k=2, tokens=64)
    w = training_step([moe], Layout(dp=4, ep=4), MODEL, moe_zipf_s=1.5, moe_seed=3)
    mat = wc.alltoall.moe_matrix(4, 64, 8, experts=4, top_k=2, zipf_s=1.5, seed=3)
    a2a = [n for n in w if n.kind == "collective"]
    assert [n.collective for n in a2a] == ["alltoallv"] * 4
    # dispatch and the combine's gradient go to the experts; the others back
    for n, back in zip(a2a, (False, True, False, True)):
        assert np.array_equal(n.options["matrix"], mat.T if back else mat)
    received = mat.sum(axis=0)
    for n in w:
        if n.name == "moe forward mb0":
            (r,) = n.ranks
            assert n.flops == pytest.approx(1e9 * received[r] / received.mean())


# -- refusals -------------------------------------------------------------------------
MOE = Layer("moe", 1.0, 8, 8, experts=4, top_k=2)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: Layout(dp=0), ValueError, "dp must be >= 1"),
        (lambda: Layout(dp=3, ep=2), ValueError, "ep must divide dp"),
        (lambda: Layout(order=("tp", "dp")), ValueError, "order must be"),
        (lambda: Layout.for_ranks(10, tp=4), ValueError, "multiple of tp"),
        (lambda: Layer("x", -1.0, 0, 0), ValueError, "forward_flops must be >= 0"),
        (lambda: Layer("x", 1.0, -1, 0), ValueError, "activation_bytes"),
        (lambda: Layer("x", 1.0, 0, 0, experts=2, top_k=3), ValueError, "top_k"),
        (lambda: gpt_layers(0, 1, 1, 1), ValueError, "hidden must be >= 1"),
        (lambda: gpt_layers(8, 1, 1, 1, experts=4), ValueError, "moe_every"),
        (lambda: pipeline_order(2, 2, 2), ValueError, "stage must be <= 1"),
        (lambda: training_step(dense(1), Layout(), None), TypeError, "compute_model"),
        (lambda: training_step([], Layout(), MODEL), ValueError, "at least one"),
        (lambda: training_step(dense(2), Layout(pp=3), MODEL), ValueError, "pp"),
        (
            lambda: training_step(dense(3), Layout(pp=2), MODEL, stages=[1, 1]),
            ValueError,
            "stages must hold",
        ),
        (
            lambda: training_step(dense(1), Layout(), MODEL, microbatches=0),
            ValueError,
            "microbatches must be >= 1",
        ),
        (
            lambda: training_step(dense(1), Layout(), MODEL, bucket_bytes=0),
            ValueError,
            "bucket_bytes must be >= 1",
        ),
        (
            lambda: training_step(dense(1), Layout(), MODEL, backward_factor=-1),
            ValueError,
            "backward_factor",
        ),
        (
            lambda: training_step(dense(1), Layout(), MODEL, algorithms={"bcast": "x"}),
            ValueError,
            "keys must be among",
        ),
        (
            lambda: training_step(
                dense(1), Layout(), MODEL, algorithms={"allreduce": "nope"}
            ),
            ValueError,
            "registered allreduce",
        ),
        (
            lambda: training_step([MOE], Layout(tp=2), MODEL),
            ValueError,
            "tp > 1 are not supported",
        ),
        (
            lambda: training_step(dense(1), Layout(dp=2, ep=2), MODEL),
            ValueError,
            "needs at least one expert layer",
        ),
        (
            lambda: training_step([MOE], Layout(dp=3, ep=3), MODEL),
            ValueError,
            "multiple of ep",
        ),
        (
            lambda: training_step([MOE], Layout(dp=2, ep=2), MODEL, moe_zipf_s=1.0),
            ValueError,
            "skewed routing needs tokens",
        ),
        (
            lambda: Layout(dp=8).placement(wc.mesh(2, 2)),
            ValueError,
            "fewer than the layout's 8 ranks",
        ),
    ],
)
def test_bad_input_is_named(call, error, message) -> None:
    with pytest.raises(error, match=re.escape(message)):
        call()


# -- simulated ---------------------------------------------------------------------------
FREE = wc.NetworkModel(1e9)  # zero latency, alpha and gamma: a 0-byte send is free


@pytest.mark.parametrize(
    ("p", "m"),
    [(1, 1), (1, 4), (2, 1), (3, 2), (3, 3), (4, 4), (3, 5), (5, 3), (4, 7), (6, 2)],
)
@pytest.mark.parametrize("backward_factor", [2.0, 1.5])
def test_1f1b_bubble(p: int, m: int, backward_factor: float) -> None:
    f = 1e-3  # 1e9 FLOPs at 1e12 FLOP/s per micro-batch and stage
    b = backward_factor * f
    layers = dense(p, flops=f * PEAK, act=0, params=0)
    w = training_step(
        layers,
        Layout(pp=p),
        MODEL,
        microbatches=m,
        backward_factor=backward_factor,
    )
    res = w.simulate(wc.line(p), FREE)
    step = (m + p - 1) * (f + b)
    assert res.step_time_s == pytest.approx(step, rel=1e-12)
    bd = res.breakdown()
    np.testing.assert_allclose(bd["compute_s"], m * (f + b), rtol=1e-12)
    np.testing.assert_allclose(bd["exposed_communication_s"], 0.0, atol=1e-15)
    np.testing.assert_allclose(
        bd["idle_s"] / res.step_time_s, (p - 1) / (m + p - 1), rtol=1e-9, atol=1e-12
    )


def ring_time(size: int, p: int, bw: float) -> float:
    """A ring allreduce alone on a cycle of neighbours: 2 (p - 1) steps of S / p."""
    return 2 * (p - 1) * (size / p) / bw


# the 2 x 2 mesh's cycle 0 -> 1 -> 3 -> 2 -> 0: every ring step uses its own link
CYCLE = [0, 1, 3, 2]


@pytest.mark.parametrize(
    ("n_layers", "flops", "bucket"),
    [
        (1, 1e9, None),  # one layer: nothing to overlap with
        (3, 2e9, None),  # allreduce (6 ms) shorter than a layer's backward (4 ms x 2)
        (3, 0.5e9, None),  # allreduces (6 ms) queue behind each other
        (3, 1e9, 10**12),  # one bucket: after the whole backward
    ],
)
def test_data_parallel_step_on_a_mesh(n_layers, flops, bucket) -> None:
    p, size, bw = 4, 4 * 10**6, 1e9
    layers = dense(n_layers, flops=flops, act=64, params=size)
    w = training_step(
        layers,
        Layout(dp=p),
        MODEL,
        bucket_bytes=bucket,
        optimizer_traffic=0.5,
        algorithms=RING,
    )
    res = w.simulate(wc.mesh(2, 2), wc.NetworkModel(bw), placement=CYCLE)
    f, b = flops / PEAK, 2 * flops / PEAK
    opt = 0.5 * n_layers * size / 1e30  # memory-bound at 1e30 B/s: nothing
    work = n_layers * (f + b) + opt
    if bucket is not None:
        exposed = ring_time(n_layers * size, p, bw)
    else:
        a = ring_time(size, p, bw)
        # allreduce k starts at max(previous end, end of backward k);
        # exposed: from the end of the backward to the end of the last one
        end = 0.0
        for k in range(n_layers):
            end = max(end, n_layers * f + (k + 1) * b) + a
        exposed = end - n_layers * (f + b)
        if n_layers == 1:
            assert exposed == pytest.approx(a)
    assert res.step_time_s == pytest.approx(work + exposed, rel=1e-9)
    bd = res.breakdown()
    np.testing.assert_allclose(bd["compute_s"], work, rtol=1e-9)
    np.testing.assert_allclose(bd["exposed_communication_s"], exposed, rtol=1e-9)
    np.testing.assert_allclose(bd["idle_s"], 0.0, atol=1e-12)
    np.testing.assert_allclose(
        bd["compute_s"] + bd["exposed_communication_s"] + bd["idle_s"],
        res.step_time_s,
        rtol=1e-12,
    )


def test_data_parallel_with_auto_algorithms_is_no_faster_than_compute() -> None:
    layers = gpt_layers(64, 3, 32, 2)
    w = training_step(layers, Layout(dp=4), MODEL, microbatches=2)
    res = w.simulate(wc.mesh(2, 2), wc.NetworkModel(1e9, hop_latency_s=1e-7))
    compute_only = sum(n.seconds for n in w if n.kind == "compute" and n.ranks == (0,))
    assert res.step_time_s >= compute_only * (1 - 1e-12)
    bd = res.breakdown()
    np.testing.assert_allclose(bd["compute_s"], compute_only, rtol=1e-9)
    np.testing.assert_allclose(
        bd["compute_s"] + bd["exposed_communication_s"] + bd["idle_s"],
        res.step_time_s,
        rtol=1e-12,
    )
    assert all(
        res.algorithms[n.id].endswith("allreduce") for n in w if n.kind == "collective"
    )


def test_expert_layer_step_by_hand() -> None:
    # two ranks, one expert group: dispatch, experts, combine, then the
    # backward's two all-to-alls and experts (2x); one message of S / 2 each
    size, bw, f = 2 * 10**6, 1e9, 1e-3
    moe = Layer("moe", f * PEAK, size // 2, 10**6, experts=2, top_k=2)
    w = training_step(
        [moe],
        Layout(dp=2, ep=2),
        MODEL,
        optimizer_traffic=0,
        algorithms={"alltoall": "generic_shift_alltoall"},
    )
    a2a = [n for n in w if n.kind == "collective"]
    assert [(n.collective, n.size_bytes, n.ranks) for n in a2a] == [
        ("alltoall", size, (0, 1))
    ] * 4  # no allreduce: each rank holds its own experts (dp / ep = 1)
    res = w.simulate(wc.line(2), wc.NetworkModel(bw))
    assert res.step_time_s == pytest.approx(4 * (size / 2) / bw + 3 * f, rel=1e-9)
    for n in a2a:
        assert res.node_finish_s[n.id] - res.node_start_s[n.id] == pytest.approx(
            (size / 2) / bw, rel=1e-9
        )


def test_moe_model_with_pipeline_and_skew_simulates() -> None:
    layers = gpt_layers(64, 4, 16, 2, moe_every=2, experts=4, top_k=2)
    lay = Layout(dp=4, pp=2, ep=2)
    for skew in (None, 1.2):
        w = training_step(layers, lay, MODEL, microbatches=2, moe_zipf_s=skew)
        res = w.simulate(wc.mesh(2, 4), wc.NetworkModel(1e9))
        a2a = [n for n in w if n.kind == "collective" and "alltoall" in n.collective]
        assert len(a2a) == 2 * 2 * 4 * 2  # expert layers x EP groups x 4 x mb
        assert all(res.node_finish_s[n.id] > res.node_start_s[n.id] for n in a2a)
        assert {res.algorithms[n.id] for n in a2a} <= {
            a.name for a in wc.algorithms(a2a[0].collective)
        }
        compute = max(
            sum(n.seconds for n in w if n.kind == "compute" and n.ranks == (r,))
            for r in range(8)
        )
        assert res.step_time_s > compute


def test_tensor_parallel_step_by_hand() -> None:
    # two TP ranks on a line: every section's compute, then its allreduce
    # (a ring of 2: reduce-scatter and allgather of S / 2 each way)
    bw, flops, act = 1e9, 4e9, 2 * 10**6
    layer = Layer("block", flops, act, 10**6)
    w = training_step(
        [layer], Layout(tp=2), MODEL, optimizer_traffic=0, algorithms=RING
    )
    res = w.simulate(wc.line(2), wc.NetworkModel(bw))
    f = flops / PEAK / 2  # each rank computes half
    step = f + 2 * f + 4 * ring_time(act, 2, bw)
    assert res.step_time_s == pytest.approx(step, rel=1e-9)
    bd = res.breakdown()
    np.testing.assert_allclose(bd["exposed_communication_s"], 4 * ring_time(act, 2, bw))


@pytest.mark.parametrize(
    "machine",
    [wc.torus(2, 4), wc.mesh(2, 4), wc.topology.cluster(2, 4)],
    ids=["torus", "mesh", "cluster"],
)
def test_three_dimensional_step_on_machines(machine) -> None:
    lay = Layout(dp=2, tp=2, pp=2)
    w = training_step(gpt_layers(64, 4, 16, 2), lay, MODEL, microbatches=3)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-8)
    res = w.simulate(machine, net, placement=lay.placement(machine))
    bd = res.breakdown()
    per_rank = [
        sum(n.seconds for n in w if n.kind == "compute" and n.ranks == (r,))
        for r in range(8)
    ]
    np.testing.assert_allclose(bd["compute_s"], per_rank, rtol=1e-9)
    np.testing.assert_allclose(
        bd["compute_s"] + bd["exposed_communication_s"] + bd["idle_s"],
        res.step_time_s,
        rtol=1e-12,
    )
    # the pipeline alone needs (m + p - 1) passes of one stage
    one_stage = per_rank[0]
    assert res.step_time_s > one_stage * (3 + 2 - 1) / 3
