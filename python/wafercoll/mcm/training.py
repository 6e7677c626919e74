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

Layer-wise overlap (Section VII-C, Fig. 11): the gradients of one iteration
are AllReduced in groups (:func:`gradient_groups`: a layer of fewer than
:data:`SMALL_LAYER_PARAMETERS` weights joins the next layer's AllReduce),
each group as soon as the backward pass has produced it
(:func:`gradient_ready`) and the previous group's AllReduce is done
(:func:`overlapped_iteration`, :func:`layerwise_overlap`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._util import as_int, as_real

__all__ = [
    "IMAGENET_TRAIN_IMAGES",
    "MODEL_PARAMETERS",
    "PES_PER_CHIPLET",
    "SAMPLES_PER_CHIPLET",
    "SMALL_LAYER_PARAMETERS",
    "allreduce_time",
    "compute_time",
    "epoch_time",
    "gain",
    "gradient_bytes",
    "gradient_groups",
    "gradient_ready",
    "iterations",
    "layerwise_overlap",
    "overlapped_iteration",
]

#: ImageNet-1k training images (Section VIII-B: D = 1281167).
IMAGENET_TRAIN_IMAGES = 1281167
#: Mini-batch of 16 per chiplet (Section VI-B: "16 x N").
SAMPLES_PER_CHIPLET = 16
#: PEs per chiplet, each one MAC array (Section VI-A: 4 x 4 PEs).
PES_PER_CHIPLET = 16
#: Gradient bytes per parameter (Table II: 32-bit precision).
BYTES_PER_PARAMETER = 4
#: Layers with fewer weights than this join the next layer's AllReduce (the
#: artifact's src/model.py groups them the same way).
SMALL_LAYER_PARAMETERS = 32768

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


def gradient_bytes(model: str) -> int:
    """Bytes of one DNN's gradients: its weights, as the artifact counts them.

    Parameters
    ----------
    model : str
        One of :data:`wafercoll.mcm.systolic.DNNS` or a topology file.

    Returns
    -------
    int
        :data:`BYTES_PER_PARAMETER` per weight of
        :func:`wafercoll.mcm.systolic.dnn_parameters`.

    Examples
    --------
    >>> from wafercoll.mcm import systolic, training
    >>> training.gradient_bytes("alexnet") == 4 * systolic.dnn_parameters("alexnet")
    True
    """
    from .systolic import dnn_parameters

    return BYTES_PER_PARAMETER * dnn_parameters(model)


def gradient_groups(
    parameters: Sequence[int], small: int = SMALL_LAYER_PARAMETERS
) -> list[tuple[int, int]]:
    """The AllReduces of one iteration's gradients, small layers joined on.

    Going through the layers in forward order, a layer of fewer than
    ``small`` weights joins the AllReduce of the next layer that has at
    least ``small``; small layers at the end form a group of their own.

    Parameters
    ----------
    parameters : sequence of int
        Weights of every layer, in forward order.
    small : int
        Layers below this many weights join the next one's AllReduce.

    Returns
    -------
    list of (int, int)
        One ``(first layer, weights)`` per AllReduce, in forward order; the
        group holds the layers ``first`` up to the next group's first.

    Examples
    --------
    >>> from wafercoll.mcm import training
    >>> training.gradient_groups([10, 40000, 5, 6, 50000, 7])
    [(0, 40010), (2, 50011), (5, 7)]
    """
    least = as_int(small, "small", 0)
    groups: list[tuple[int, int]] = []
    pending, first = 0, None
    for i, p in enumerate(parameters):
        weights = as_int(p, f"parameters[{i}]", 0)
        first = i if first is None else first
        pending += weights
        if weights >= least:
            groups.append((first, pending))
            pending, first = 0, None
    if pending:
        groups.append((first, pending))
    return groups


def gradient_ready(
    model: str, array: tuple[int, int] = (256, 256), *, clock_Hz: float = 1e9
) -> tuple[dict[int, float], float]:
    """When the backward pass has produced each layer's gradients (seconds).

    One sample on one MAC array (the paper's 16 samples on a chiplet's 16
    PEs: one each), with the layer times of
    :func:`wafercoll.mcm.systolic.layer_cycles`: the forward pass through
    every layer, then the backward pass from the last layer to the first,
    each layer's input gradient (none for the first layer) and weight
    gradient.

    Parameters
    ----------
    model : str
        One of :data:`wafercoll.mcm.systolic.DNNS` or a topology file.
    array : (int, int)
        Rows and columns of the MAC array.
    clock_Hz : float
        Cycles per second.

    Returns
    -------
    ready : dict of int to float
        Layer index (forward order) to the time its weight gradients are
        ready, from the start of the iteration.
    compute_s : float
        The forward and backward pass: when layer 0's gradients are ready.

    Examples
    --------
    >>> from wafercoll.mcm import training
    >>> ready, compute = training.gradient_ready("alexnet")
    >>> compute == ready[0] == max(ready.values())
    True
    >>> ready[0] > ready[len(ready) - 1]  # the last layer's come first
    True
    """
    from .systolic import dnn_layers, layer_cycles

    rows, cols = array
    # Multiplying by the period (1 / 1e9 is the double nearest 1e-9) keeps
    # the times of the published runs to the last bit.
    period = 1.0 / as_real(clock_Hz, "clock_Hz", positive=True)
    layers = dnn_layers(model)
    cyc = [
        layer_cycles(x, rows, cols, input_gradient=i > 0) for i, x in enumerate(layers)
    ]
    t = float(sum(c["forward"] for c in cyc))
    ready: dict[int, float] = {}
    for i in range(len(layers) - 1, -1, -1):
        t += cyc[i]["input_gradient"] + cyc[i]["weight_gradient"]
        ready[i] = t * period
    return ready, t * period


def overlapped_iteration(
    ready: Mapping[int, float],
    groups: Sequence[tuple[int, int]],
    compute_s: float,
    allreduce: Callable[[int], float],
) -> float:
    """One iteration with each group's AllReduce overlapped with the backward pass.

    The groups' AllReduces run one at a time in backward order (the group of
    the last layers first); each starts once the gradients of its first
    layer are ready and the previous AllReduce is done. The iteration ends
    when both the compute and the last AllReduce have.

    Parameters
    ----------
    ready : mapping of int to float
        Time each layer's gradients are ready (:func:`gradient_ready`).
    groups : sequence of (int, int)
        ``(first layer, weights)`` of every AllReduce (:func:`gradient_groups`).
    compute_s : float
        Forward and backward time of the iteration.
    allreduce : callable
        ``allreduce(weights)``: the time of one group's AllReduce.

    Returns
    -------
    float
        The iteration's time.

    Examples
    --------
    Three layers whose gradients are ready at 1, 2 and 3 (backward from the
    last), an AllReduce of 0.5 each: the last one ends at 3.5.

    >>> from wafercoll.mcm import training
    >>> ready = {0: 3.0, 1: 2.0, 2: 1.0}
    >>> groups = [(0, 10), (1, 10), (2, 10)]
    >>> training.overlapped_iteration(ready, groups, 3.0, lambda w: 0.5)
    3.5
    """
    end = 0.0
    for first, weights in sorted(groups, key=lambda g: -g[0]):
        end = max(ready[first], end) + allreduce(weights)
    return max(compute_s, end)


def layerwise_overlap(
    ready: Mapping[int, float],
    groups: Sequence[tuple[int, int]],
    compute_s: float,
    allreduce: Callable[[int], float],
) -> dict[str, float]:
    """An iteration with every AllReduce after the backward pass and overlapped.

    Parameters are those of :func:`overlapped_iteration`; ``allreduce`` is
    called once per group.

    Returns
    -------
    dict
        ``serial_s`` (compute, then every AllReduce one after the other),
        ``overlapped_s`` (:func:`overlapped_iteration`), ``allreduce_s`` (the
        sum of the groups' AllReduce times) and ``hidden``, the share of that
        sum hidden behind the backward pass, ``1 - (overlapped_s -
        compute_s) / allreduce_s`` (1 without any AllReduce time).

    Examples
    --------
    >>> from wafercoll.mcm import training
    >>> ready = {0: 3.0, 1: 2.0, 2: 1.0}
    >>> groups = [(0, 10), (1, 10), (2, 10)]
    >>> r = training.layerwise_overlap(ready, groups, 3.0, lambda w: 0.5)
    >>> r["serial_s"], r["overlapped_s"], r["allreduce_s"], r["hidden"]
    (4.5, 3.5, 1.5, 0.6666666666666667)
    """
    times = [allreduce(weights) for _, weights in groups]
    total = sum(times)
    cost = dict(zip((w for _, w in groups), times, strict=True))
    it = overlapped_iteration(ready, groups, compute_s, cost.__getitem__)
    return {
        "serial_s": compute_s + total,
        "overlapped_s": it,
        "allreduce_s": total,
        "hidden": 1 - (it - compute_s) / total if total else 1.0,
    }
