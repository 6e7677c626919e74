"""Training time with one chiplet fewer: the paper's equations (1) and (2).

Section VIII-B of the MCM paper: TTO trains on ``N - 1`` chiplets, so an
epoch of ``D`` samples at ``d`` samples per chiplet takes more iterations,

    I_base = ceil(D / (N d)),   I_tto = ceil(D / ((N - 1) d))        (1)
    gain   = I_base (T + C_b) - I_tto (T + C_t)                       (2)

with ``T`` the forward and backward time of one iteration on one chiplet and
``C_b``, ``C_t`` the AllReduce times of the baseline and of TTO. The
AllReduce times come from simulating the schedules (:func:`allreduce_time`);
``T`` comes from :func:`compute_time`, the output-stationary systolic model
of :mod:`wafercoll.mcm.systolic` on the artifact's layer shapes (the paper
gets it from an extended SCALE-Sim), or is an input.

Parameter counts of the paper's seven models (public numbers; gradients are
fp32, Table II "Precision 32 bits"):

================  ===========  =================================================
model             parameters   source
================  ===========  =================================================
AlexNet           61,100,840   torchvision ``alexnet`` (Krizhevsky et al. 2012)
AlphaGoZero       23,003,136   39 conv layers 3x3x256x256 of the 20-block
                               network (Silver et al. 2017, Methods); heads
                               omitted
FasterRCNN        41,755,286   torchvision ``fasterrcnn_resnet50_fpn``
GoogLeNet          6,624,904   torchvision ``googlenet`` (Szegedy et al. 2015)
NCF               31,726,656   MLPerf NCF on MovieLens-20M: (138,493 users +
                               26,744 items) x (64 + 128) embeddings; MLP
                               omitted
ResNet152         60,192,808   torchvision ``resnet152`` (He et al. 2016)
Transformer       65,000,000   Vaswani et al. 2017, Table 3 (base model)
================  ===========  =================================================

The SCALE-Sim topologies the paper simulated may differ from these public
models; pass your own counts to :func:`allreduce_time`.
"""

from __future__ import annotations

import math
from typing import Any

from .._util import as_int, as_real

__all__ = [
    "IMAGENET_TRAIN_IMAGES",
    "MODEL_PARAMETERS",
    "PES_PER_CHIPLET",
    "SAMPLES_PER_CHIPLET",
    "allreduce_time",
    "compute_time",
    "epoch_time",
    "gain",
    "iterations",
]

#: ImageNet-1k training images (Section VIII-B: D = 1281167).
IMAGENET_TRAIN_IMAGES = 1281167
#: Mini-batch of 16 per chiplet (Section VI-B: "16 x N").
SAMPLES_PER_CHIPLET = 16
#: PEs per chiplet, each one MAC array (Section VI-A: 4 x 4 PEs).
PES_PER_CHIPLET = 16
#: Gradient bytes per parameter (Table II: 32-bit precision).
BYTES_PER_PARAMETER = 4

MODEL_PARAMETERS: dict[str, int] = {
    "AlexNet": 61_100_840,
    "AlphaGoZero": 39 * 3 * 3 * 256 * 256,
    "FasterRCNN": 41_755_286,
    "GoogLeNet": 6_624_904,
    "NCF": (138_493 + 26_744) * (64 + 128),
    "ResNet152": 60_192_808,
    "Transformer": 65_000_000,
}


def iterations(
    dataset: int, chiplets: int, per_chiplet: int = SAMPLES_PER_CHIPLET
) -> int:
    """Iterations per epoch, equation (1): ``ceil(D / (N d))``."""
    D = as_int(dataset, "dataset", 1)
    N = as_int(chiplets, "chiplets", 1)
    d = as_int(per_chiplet, "per_chiplet", 1)
    return -(-D // (N * d))


def gain(
    chiplets: int,
    compute_s: float,
    base_allreduce_s: float,
    tto_allreduce_s: float,
    *,
    dataset: int = IMAGENET_TRAIN_IMAGES,
    per_chiplet: int = SAMPLES_PER_CHIPLET,
) -> dict[str, Any]:
    """Equation (2): epoch time of a baseline on N chiplets and of TTO on N - 1.

    Returns
    -------
    dict
        ``I_base``, ``I_tto``, ``epoch_base``, ``epoch_tto``, ``gain`` (their
        difference, equation (2)), ``reduction`` (gain / epoch_base) and
        ``speedup`` (epoch_base / epoch_tto).
    """
    N = as_int(chiplets, "chiplets", 2)
    T = as_real(compute_s, "compute_s", 0.0)
    cb = as_real(base_allreduce_s, "base_allreduce_s", 0.0)
    ct = as_real(tto_allreduce_s, "tto_allreduce_s", 0.0)
    ib = iterations(dataset, N, per_chiplet)
    it = iterations(dataset, N - 1, per_chiplet)
    eb = epoch_time(N, T, cb, dataset=dataset, per_chiplet=per_chiplet)
    et = epoch_time(N - 1, T, ct, dataset=dataset, per_chiplet=per_chiplet)
    return {
        "I_base": ib,
        "I_tto": it,
        "epoch_base": eb,
        "epoch_tto": et,
        "gain": eb - et,
        "reduction": (eb - et) / eb if eb > 0 else math.nan,
        "speedup": eb / et if et > 0 else math.nan,
    }


def allreduce_time(
    algorithm: str,
    rows: int,
    cols: int,
    parameters: int,
    network: Any = None,
    **options: Any,
) -> float:
    """Simulated AllReduce time (s) of ``parameters`` fp32 gradients on a mesh."""
    from ..algorithms import build
    from ..simulate import simulate
    from ..topology import mesh
    from .machine import TABLE_II

    p = as_int(parameters, "parameters", 1)
    top = mesh(rows, cols)
    s = build(algorithm, topology=top, size_bytes=p * BYTES_PER_PARAMETER, **options)
    return simulate(s, top, network or TABLE_II).time_s


def compute_time(
    model: str,
    array: tuple[int, int] = (256, 256),
    *,
    clock_Hz: float = 1e9,
    per_chiplet: int = SAMPLES_PER_CHIPLET,
    pes: int = PES_PER_CHIPLET,
) -> float:
    """Forward and backward time of one iteration on one chiplet (seconds).

    Each of the chiplet's ``pes`` MAC arrays (``array`` = rows, cols) trains
    ``ceil(per_chiplet / pes)`` samples one after the other
    (:func:`wafercoll.mcm.systolic.training_cycles` per sample); with the
    paper's 16 samples and 16 PEs, one sample each.

    Parameters
    ----------
    model : str
        One of :data:`wafercoll.mcm.systolic.DNNS` or a topology file.
    """
    from .systolic import dnn_layers, training_cycles

    rows, cols = array
    clock = as_real(clock_Hz, "clock_Hz", positive=True)
    rounds = -(-as_int(per_chiplet, "per_chiplet", 1) // as_int(pes, "pes", 1))
    return rounds * training_cycles(dnn_layers(model), rows, cols)["total"] / clock


def epoch_time(
    chiplets: int,
    compute_s: float,
    allreduce_s: float,
    *,
    dataset: int = IMAGENET_TRAIN_IMAGES,
    per_chiplet: int = SAMPLES_PER_CHIPLET,
) -> float:
    """One epoch: ``ceil(D / (N d)) (T + C)`` seconds (equations (1), (2))."""
    n = iterations(dataset, chiplets, per_chiplet)
    return n * (
        as_real(compute_s, "compute_s", 0.0) + as_real(allreduce_s, "allreduce_s", 0.0)
    )
