"""The output-stationary systolic compute model and the training epoch (004)."""

from __future__ import annotations

import pytest

from wafercoll.experiments import mesh_mcm
from wafercoll.mcm import systolic, training


def test_one_gemm_by_hand() -> None:
    # A 6 x 5 output with 3 MACs each on a 4 x 4 array: ceil(6/4) x ceil(5/4)
    # = 4 folds; a fold starts its last PE 4 + 4 - 2 = 6 cycles late, which
    # then computes 3 cycles and the 4 rows drain in 4: 6 + 3 + 4 = 13.
    assert systolic.fold_cycles(4, 4, 3) == 13
    assert systolic.gemm_cycles(6, 5, 3, 4, 4) == 52
    # One fold exactly when the output fits.
    assert systolic.gemm_cycles(4, 4, 10, 4, 4) == 2 * 4 + 4 + 10 - 2


def test_a_layer_is_three_gemms() -> None:
    # 8 x 8 input, 3 x 3 filters, stride 1: 6 x 6 outputs; 2 channels, 5 filters.
    layer = systolic.Layer("c", 8, 8, 3, 3, 2, 5, 1)
    assert layer.ofmap == (6, 6) and layer.parameters == 3 * 3 * 2 * 5
    c = systolic.layer_cycles(layer, 16, 16)
    assert c["forward"] == systolic.gemm_cycles(36, 5, 18, 16, 16)
    assert c["input_gradient"] == systolic.gemm_cycles(64, 2, 45, 16, 16)
    assert c["weight_gradient"] == systolic.gemm_cycles(18, 5, 36, 16, 16)
    first = systolic.training_cycles([layer], 16, 16)
    assert first["backward"] == c["weight_gradient"]  # no input gradient
    assert first["total"] == c["forward"] + c["weight_gradient"]


def test_resnet152_has_its_published_shape() -> None:
    # He et al. 2016, Table 1: conv1 7x7x3x64, bottleneck stages of 3, 8, 36
    # and 3 blocks (1x1, 3x3, 1x1 with widths 64..512, outputs 4x), a 1x1
    # projection in each stage's first block, and a 2048 x 1000 classifier:
    # 1 + 50 x 3 + 4 + 1 = 156 layers; their weights counted independently.
    weights, cin = 7 * 7 * 3 * 64, 64
    for width, blocks in ((64, 3), (128, 8), (256, 36), (512, 3)):
        for b in range(blocks):
            weights += cin * width + 9 * width * width + width * 4 * width
            if b == 0:
                weights += cin * 4 * width
            cin = 4 * width
    weights += 2048 * 1000
    layers = systolic.dnn_layers("Resnet152")
    assert len(layers) == 156
    assert systolic.dnn_parameters("Resnet152") == weights


def test_every_dnn_loads_and_bad_names_are_refused() -> None:
    for name in systolic.DNNS:
        assert systolic.dnn_parameters(name) > 0
        assert training.compute_time(name) > 0
    with pytest.raises(ValueError, match="unknown DNN"):
        systolic.dnn_layers("VGG-1000")


def test_epoch_is_iterations_times_an_iteration() -> None:
    # The paper's worked example: 1,281,167 images, 16 per chiplet, 8x8.
    assert training.iterations(training.IMAGENET_TRAIN_IMAGES, 64) == 1252
    assert training.iterations(training.IMAGENET_TRAIN_IMAGES, 63) == 1271
    assert training.epoch_time(64, 2.0, 3.0) == pytest.approx(1252 * 5.0)


def test_fig10_quick_columns() -> None:
    cols, findings = mesh_mcm.run_fig10(quick=True)
    n = len(cols["model"])
    assert all(len(v) == n for v in cols.values())
    for i in range(n):
        used = cols["chiplets_training"][i]
        want = training.epoch_time(used, cols["compute_s"][i], cols["allreduce_s"][i])
        assert cols["epoch_s"][i] == pytest.approx(want)
        if cols["algorithm"][i] == "Ring":
            assert cols["epoch_speedup_vs_ring"][i] == pytest.approx(1.0)
    assert any("worked example" in f["quantity"] for f in findings)
