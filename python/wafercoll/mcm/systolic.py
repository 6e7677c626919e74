"""Compute time of DNN layers on an output-stationary systolic array.

The chiplets of the MCM paper (Section VI-A: 4 x 4 PEs per chiplet, each PE
a 256 x 256 MAC array, output-stationary dataflow, double buffering and
enough memory bandwidth for full throughput) are simulated there with an
extended SCALE-Sim. This module is the analytical runtime of that dataflow.

Output-stationary mapping (SCALE-Sim ``sram_traffic_os.py``): the rows of an
``R x C`` array hold ``S_R`` output pixels, the columns ``S_C`` filters, and
each PE accumulates its output over ``T`` multiply-accumulates (the
convolution window). Operands enter skewed, one row / column later than the
previous, so the last PE starts ``R + C - 2`` cycles after the first and
finishes ``T`` cycles later; the outputs then drain down the columns, ``R``
cycles for the ``R`` rows, once the fold's last MAC is done. One fold
therefore takes ``2 R + C + T - 2`` cycles, and a layer needs
``ceil(S_R / R) ceil(S_C / C)`` folds, one after the other (SCALE-Sim's
runtime model: Samajdar et al., "A Systematic Methodology for
Characterizing Scalability of DNN Accelerators using SCALE-Sim", ISPASS
2020, Section III, with ``S_R``, ``S_C``, ``T`` as named there).

A convolution with ``E_h x E_w`` outputs (``E = (I - F + s) / s``, the
topology files give padded inputs), ``C`` channels, ``M`` filters of
``F_h x F_w`` is three GEMMs in training:

* forward: ``S_R = E_h E_w``, ``S_C = M``, ``T = F_h F_w C``;
* input gradient: ``S_R = I_h I_w``, ``S_C = C``, ``T = F_h F_w M`` (not for
  the first layer, whose input needs none);
* weight gradient: ``S_R = F_h F_w C``, ``S_C = M``, ``T = E_h E_w``.

Layer shapes are SCALE-Sim topology files (``name, IFMAP Height, IFMAP
Width, Filter Height, Filter Width, Channels, Num Filter, Strides``); the
seven DNNs of the paper's Figs. 10, 11 and 13 ship with the package, as the
authors' artifact used them (:func:`dnn_layers`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .._util import as_int

__all__ = [
    "DNNS",
    "Layer",
    "dnn_layers",
    "dnn_parameters",
    "fold_cycles",
    "gemm_cycles",
    "layer_cycles",
    "training_cycles",
]

#: The DNNs of the paper's Figs. 10, 11 and 13, by the artifact's file names.
DNNS = (
    "alexnet",
    "AlphaGoZero",
    "FasterRCNN",
    "Googlenet",
    "NCF_recommendation",
    "Resnet152",
    "Transformer",
)


@dataclass(frozen=True)
class Layer:
    """One convolution (or GEMM: a 1 x 1 "image") of a topology file."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filter_h: int
    filter_w: int
    channels: int
    filters: int
    stride: int

    @property
    def ofmap(self) -> tuple[int, int]:
        """Output height and width, ``(I - F + s) // s`` (SCALE-Sim's rule)."""
        s = self.stride
        return (
            max((self.ifmap_h - self.filter_h + s) // s, 1),
            max((self.ifmap_w - self.filter_w + s) // s, 1),
        )

    @property
    def parameters(self) -> int:
        """Weights: ``F_h F_w C M`` (no biases, as the artifact counts them)."""
        return self.filter_h * self.filter_w * self.channels * self.filters


def fold_cycles(rows: int, cols: int, t: int) -> int:
    """Cycles of one fold: ``2 R + C + T - 2`` (module docstring)."""
    return 2 * rows + cols + t - 2


def gemm_cycles(s_r: int, s_c: int, t: int, rows: int, cols: int) -> int:
    """Cycles of an ``S_R x S_C`` output with ``T`` MACs each on an R x C array."""
    R = as_int(rows, "rows", 1, 1 << 16)
    C = as_int(cols, "cols", 1, 1 << 16)
    sr = as_int(s_r, "s_r", 1)
    sc = as_int(s_c, "s_c", 1)
    tt = as_int(t, "t", 1)
    folds = -(-sr // R) * -(-sc // C)
    return folds * fold_cycles(R, C, tt)


def layer_cycles(
    layer: Layer, rows: int, cols: int, *, input_gradient: bool = True
) -> dict[str, int]:
    """Forward, input-gradient and weight-gradient cycles of one layer."""
    eh, ew = layer.ofmap
    window = layer.filter_h * layer.filter_w
    out = {
        "forward": gemm_cycles(
            eh * ew, layer.filters, window * layer.channels, rows, cols
        ),
        "input_gradient": 0,
        "weight_gradient": gemm_cycles(
            window * layer.channels, layer.filters, eh * ew, rows, cols
        ),
    }
    if input_gradient:
        out["input_gradient"] = gemm_cycles(
            layer.ifmap_h * layer.ifmap_w,
            layer.channels,
            window * layer.filters,
            rows,
            cols,
        )
    return out


def training_cycles(layers: Any, rows: int = 256, cols: int = 256) -> dict[str, int]:
    """Cycles of one sample's forward and backward pass through ``layers``.

    Returns
    -------
    dict
        ``forward``, ``backward`` (both gradients) and ``total``.
    """
    fwd = bwd = 0
    for i, layer in enumerate(layers):
        c = layer_cycles(layer, rows, cols, input_gradient=i > 0)
        fwd += c["forward"]
        bwd += c["input_gradient"] + c["weight_gradient"]
    return {"forward": fwd, "backward": bwd, "total": fwd + bwd}


def _parse(text: str, where: str) -> tuple[Layer, ...]:
    layers = []
    for n, line in enumerate(text.splitlines()[1:], start=2):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 8 or not f[0]:
            continue  # blank lines and the network-name lines of the files
        try:
            nums = [int(x) for x in f[1:8]]
        except ValueError:
            continue
        if min(nums) < 1:
            raise ValueError(f"{where}: line {n}: sizes must be >= 1")
        layers.append(Layer(f[0], *nums))
    if not layers:
        raise ValueError(f"{where}: no layers")
    return tuple(layers)


@functools.lru_cache(maxsize=64)
def dnn_layers(name: str) -> tuple[Layer, ...]:
    """The layers of one of :data:`DNNS` (or of a topology file's path).

    The shipped files are the SCALE-Sim topologies the authors' artifact ran
    (sabuj7177/TTO_HPCA_2024 ``src/SCALE-Sim/topologies``; SCALE-Sim is MIT
    licensed, (c) 2018 Arm).
    """
    if name in DNNS:
        from importlib.resources import files

        text = files("wafercoll.mcm").joinpath("data", "dnn", f"{name}.csv")
        return _parse(text.read_text(), f"{name}.csv")
    import os

    if not os.path.isfile(name):
        raise ValueError(
            f"unknown DNN {name!r}: one of {', '.join(DNNS)} or a topology file"
        )
    with open(name, encoding="utf-8") as fh:
        return _parse(fh.read(), name)


def dnn_parameters(name: str) -> int:
    """Weights of a DNN as the artifact counts them (gradients to AllReduce)."""
    return sum(layer.parameters for layer in dnn_layers(name))
