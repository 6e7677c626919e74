"""Compute models: how long a compute node's work takes on one device.

A :class:`ComputeModel` turns a node's FLOPs and memory traffic into
seconds. :class:`Roofline` is the usual first answer: a kernel runs at the
device's peak arithmetic rate or is bound by its memory bandwidth,
``max(flops / peak_flops, mem_bytes / memory_Bps)`` (Williams, Waterman and
Patterson, "Roofline", CACM 52(4), 2009). :func:`roofline` names devices
whose peaks come from their vendors' data sheets.

Examples
--------
>>> from wafercoll.workloads import Roofline
>>> m = Roofline(100e12, 2e12, name="toy")
>>> m.seconds(1e12, 1e9)  # compute-bound: 1e12 / 100e12
0.01
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._util import as_real, did_you_mean

__all__ = ["DEVICES", "ComputeModel", "Roofline", "roofline"]


class ComputeModel:
    """Base class: ``seconds(flops, mem_bytes)`` of one compute node.

    Examples
    --------
    >>> from wafercoll.workloads import ComputeModel
    >>> class Fixed(ComputeModel):
    ...     def seconds(self, flops, mem_bytes):
    ...         return 1e-3
    >>> Fixed().seconds(1.0, 1.0)
    0.001
    """

    name: str = ""

    def seconds(self, flops: float, mem_bytes: float) -> float:
        """Time of ``flops`` operations that move ``mem_bytes`` bytes."""
        raise NotImplementedError


@dataclass(frozen=True)
class Roofline(ComputeModel):
    """``max(flops / peak_flops, mem_bytes / memory_Bps)``.

    Parameters
    ----------
    peak_flops : float
        Peak arithmetic rate, FLOP/s (> 0).
    memory_Bps : float
        Memory bandwidth, bytes/s (> 0).
    name : str
        A label.

    Examples
    --------
    >>> from wafercoll.workloads import Roofline
    >>> Roofline(1e12, 1e11).seconds(1e9, 1e9)  # memory-bound
    0.01
    """

    peak_flops: float
    memory_Bps: float
    name: str = ""

    def __post_init__(self) -> None:
        for key in ("peak_flops", "memory_Bps"):
            v = as_real(getattr(self, key), key, 0.0)
            if not (v > 0 and math.isfinite(v)):
                raise ValueError(f"{key} must be a finite number > 0, got {v}")
            object.__setattr__(self, key, v)

    def seconds(self, flops: float, mem_bytes: float) -> float:
        """The roofline time (see the class)."""
        f = as_real(flops, "flops", 0.0)
        b = as_real(mem_bytes, "mem_bytes", 0.0)
        return max(f / self.peak_flops, b / self.memory_Bps)


#: Devices with their dense peaks (FLOP/s at the named precision, without
#: sparsity) and memory bandwidth (bytes/s), from the vendors' data sheets:
#: NVIDIA H100 Tensor Core GPU data sheet (SXM5: 989 TFLOPS BF16, 3.35 TB/s
#: HBM3); NVIDIA A100 Tensor Core GPU data sheet (SXM 80 GB: 312 TFLOPS
#: BF16, 2,039 GB/s HBM2e).
DEVICES: dict[str, tuple[float, float]] = {
    "h100_sxm_bf16": (989e12, 3.35e12),
    "a100_sxm_bf16": (312e12, 2.039e12),
}


def roofline(device: str) -> Roofline:
    """The :class:`Roofline` of a device in :data:`DEVICES`.

    Examples
    --------
    >>> from wafercoll.workloads import roofline
    >>> roofline("a100_sxm_bf16").peak_flops
    312000000000000.0
    """
    if device not in DEVICES:
        raise ValueError(
            f"device must be one of {', '.join(DEVICES)}, got {device!r}"
            f"{did_you_mean(str(device), DEVICES)}"
        )
    peak, bw = DEVICES[device]
    return Roofline(peak, bw, name=device)
