"""The Cerebras CS-2 wafer's network, as *Near-Optimal Wafer-Scale Reduce* models it."""

from __future__ import annotations

from .._util import as_real
from ..network import NetworkModel
from .builders import CS2_CLOCK_HZ, WAVELET_BYTES
from .model import T_R_DEFAULT, as_ramp_latency

__all__ = ["wse2_network"]


def wse2_network(
    T_R: float = T_R_DEFAULT,
    clock_Hz: float = CS2_CLOCK_HZ,
    switch_overhead: float = 0.0,
) -> NetworkModel:
    """The WSE-2 as modelled in the paper: wavelets, ramps and dataflow.

    Sources (the paper, Sections 2.2 and 8.1): links carry one 32-bit
    wavelet per cycle in each direction and a wavelet crosses a link in one
    cycle; one ramp per PE, ``T_R`` cycles each way (2 on the WSE-2); routers
    multicast at no cost; a PE stores or adds a wavelet in one cycle; the
    CS-2 runs at 850 MHz. Packets are wavelets, switching is cut-through, and
    dependencies follow the dataflow reading (a PE adds and forwards a
    wavelet in the same instruction, and routers hold a stream until the
    receiver takes it). ``result.cycles`` gives cycles.

    Parameters
    ----------
    T_R : float
        Ramp latency in cycles, each way (the paper's model parameter).
    clock_Hz : float
        Clock of the PEs and the fabric.
    switch_overhead : float
        Cycles a PE needs to switch to each incoming stream after its first
        (``NetworkModel.switch_overhead_s``); 0 is the paper's model.
        :func:`wafercoll.wafer.calibrate_switch_overhead` fits it to the
        CS-2's measured speedups.

    Returns
    -------
    NetworkModel
        The preset named ``"wse2"`` (machine entries ``wse2_row`` and
        ``wse2_grid`` of :mod:`wafercoll.machines`).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> net = wafer.wse2_network(T_R=2)
    >>> net.clock_Hz
    850000000.0
    """
    t_r = as_ramp_latency(T_R)
    clock = as_real(clock_Hz, "clock_Hz", positive=True)
    cycle = 1.0 / clock
    switch = as_real(switch_overhead, "switch_overhead", 0.0, maximum=1e12)
    return NetworkModel(
        WAVELET_BYTES * clock,
        hop_latency_s=cycle,
        packet_bytes=WAVELET_BYTES,
        switching="cut_through",
        gamma_s_per_byte=cycle / WAVELET_BYTES,
        copy_s_per_byte=cycle / WAVELET_BYTES,
        ports=1,
        port_latency_s=t_r * cycle,
        clock_Hz=clock,
        dependencies="dataflow",
        switch_overhead_s=switch * cycle,
        name="wse2",
    )
