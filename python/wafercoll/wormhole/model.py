"""The thesis's theoretical runtime ("roofline") of allreduce on the n150.

Thesis ``002``, Appendix A.3.1, with ``n`` bytes per core and FP8 data
(one byte per element)::

    t_comp  = n / (FLOPS per core)                       (A.4, A.5)
    t_comm  = n / B_comm                                 (A.6, A.7)
    t_sync  = hops * t_hop,  t_sync1 = 3 t_sync,  t_sync2 = 2 t_sync
    T_LO    = N_steps * max(t_comm, t_comp) + t_sync1    (A.14)
    T_BO    = max(t_comm, t_comp) + t_comm + t_sync1 + t_sync2   (A.15)

:func:`thesis_time` evaluates these as written. :func:`roofline` applies
the same three terms to any schedule: per step, the most bytes any rank
sends (over ``B_comm``) and reduces (over its FLOPS), plus the latency of
the worst hop count of the step (:func:`wafercoll.wormhole.hop_table` for
Swing and recursive doubling, one hop per step otherwise), so that hop
counts of the topology enter as they do in the thesis's synchronisation
term. The shared-memory algorithm moves ``(3 p - 1) n`` bytes through the
single DRAM port (each core's vector in, the slices out, the reduced slices
in, the result out to every core), charged at the DRAM bandwidth.

Where the thesis's numbers are not self-consistent: equation A.3 reads
"262 / 8 = 4.09" TFLOPS per node, but 262 / 8 = 32.75; 4.09 is 262 / 64
(one of 64 cores), which :data:`THESIS` uses.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._util import as_int, as_real
from ..schedule import Schedule

__all__ = ["THESIS", "RooflineParams", "roofline", "thesis_time"]


@dataclasses.dataclass(frozen=True)
class RooflineParams:
    """Constants of the roofline (defaults: the thesis, Appendix A.3.1).

    Attributes
    ----------
    flops_total : float
        FP8 operations per second of the chip: 262 TFLOPS (A.1, Table 4.1).
    cores : int
        Cores sharing it: 64 (A.2).
    bytes_per_element : int
        FP8: one byte (A.4).
    comm_Bps : float
        Achievable core-to-core bandwidth: 9 GB/s (A.6, from Tenstorrent's
        one-to-one packet-size measurements, the thesis's reference [18]).
    hop_s : float
        Latency of one hop: 9 ns (A.8; 9 cycles at 1 GHz).
    hops : int
        Hops of one synchronisation: 18 (A.9, RD's worst case per step).
    sync1_factor, sync2_factor : float
        ``t_sync1 = 3 t_sync`` and ``t_sync2 = 2 t_sync`` (A.11, A.12).
    steps : int
        ``N_steps = log2 64 = 6`` (A.13).
    dram_Bps : float
        DRAM bandwidth of the shared-memory algorithm: one channel,
        288 GB/s / 6 (Table 4.1; not part of the thesis's roofline).
    """

    flops_total: float = 262e12
    cores: int = 64
    bytes_per_element: int = 1
    comm_Bps: float = 9e9
    hop_s: float = 9e-9
    hops: int = 18
    sync1_factor: float = 3.0
    sync2_factor: float = 2.0
    steps: int = 6
    dram_Bps: float = 288e9 / 6

    @property
    def flops_per_core(self) -> float:
        """FLOPS of one core: ``flops_total / cores`` (4.09 TFLOPS, A.3)."""
        return self.flops_total / self.cores

    def replace(self, **changes: Any) -> RooflineParams:
        """A copy with some constants changed."""
        return dataclasses.replace(self, **changes)


#: The thesis's constants.
THESIS = RooflineParams()


def thesis_time(
    variant: str, size_bytes: float, params: RooflineParams = THESIS
) -> dict[str, float]:
    """Equations A.14 (``"lo"``) and A.15 (``"bo"``) of the thesis, as written.

    Returns
    -------
    dict
        ``t_comp``, ``t_comm``, ``t_sync`` (the synchronisation terms added)
        and ``total`` in seconds.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> t = wormhole.thesis_time("bo", 1 << 20)
    >>> sorted(t)
    ['t_comm', 't_comp', 't_sync', 'total']
    """
    if variant not in ("lo", "bo"):
        raise ValueError(f"variant must be 'lo' or 'bo', got {variant!r}")
    n = as_real(size_bytes, "size_bytes", 0.0)
    t_comp = n / params.bytes_per_element / params.flops_per_core
    t_comm = n / params.comm_Bps
    t_sync = params.hops * params.hop_s
    s1, s2 = params.sync1_factor * t_sync, params.sync2_factor * t_sync
    if variant == "lo":
        comp = params.steps * t_comp
        comm = params.steps * t_comm
        total = params.steps * max(t_comm, t_comp) + s1
        sync = s1
    else:
        comp, comm = t_comp, 2 * t_comm
        total = max(t_comm, t_comp) + t_comm + s1 + s2
        sync = s1 + s2
    return {"t_comp": comp, "t_comm": comm, "t_sync": sync, "total": total}


def roofline(
    schedule: Schedule,
    *,
    step_hops: Any = None,
    params: RooflineParams = THESIS,
    dram_ranks: int = 0,
) -> dict[str, Any]:
    """Compute, transfer and latency time of a schedule, step by step.

    Parameters
    ----------
    schedule : Schedule
    step_hops : sequence of int, optional
        Worst hops of every step of the schedule (default one per step).
    params : RooflineParams
    dram_ranks : int
        For the shared-memory schedule: ranks ``>= schedule.num_ranks -
        dram_ranks`` are DRAM; their traffic is charged at ``dram_Bps``
        through one port instead of per core.

    Returns
    -------
    dict
        ``t_comp``, ``t_comm``, ``t_sync`` and ``total`` (seconds), with
        ``total = sum over steps of max(comm, comp) + hops * hop_s``, and
        ``regime``: the largest of the three.

    Examples
    --------
    >>> import wafercoll as wc
    >>> topo = wc.torus(8, 8)
    >>> s = wc.build("torus_swing_lo_allreduce", topology=topo, size_bytes=1 << 20)
    >>> r = wc.wormhole.roofline(s)
    >>> sorted(r)[:4]
    ['regime', 't_comm', 't_comp', 't_sync']
    """
    if not isinstance(schedule, Schedule):
        raise TypeError("schedule must be a wafercoll.Schedule")
    nd = as_int(dram_ranks, "dram_ranks", 0, schedule.num_ranks)
    steps = schedule.steps()
    n_steps = schedule.num_steps
    hops = (
        np.ones(n_steps)
        if step_hops is None
        else np.asarray(step_hops, dtype=float).ravel()
    )
    if hops.size < n_steps:  # a bandwidth-optimal allgather repeats the steps
        hops = np.concatenate([hops, hops[::-1]])[: max(n_steps, hops.size)]
    if hops.size != n_steps:
        raise ValueError(
            f"step_hops must have one entry per step ({n_steps}), got {hops.size}"
        )
    src = schedule.src
    nbytes = schedule.transfer_bytes().astype(float)
    reducing = schedule.op.astype(bool)
    dst = schedule.dst
    first_dram = schedule.num_ranks - nd
    comm = np.zeros(n_steps)
    comp = np.zeros(n_steps)
    for s in range(n_steps):
        sel = steps == s
        if not sel.any():
            continue
        dram = sel & ((src >= first_dram) | (dst >= first_dram))
        core = sel & ~dram
        sent = np.bincount(src[core], nbytes[core], schedule.num_ranks)
        t = sent.max() / params.comm_Bps if core.any() else 0.0
        if dram.any():
            t = max(t, nbytes[dram].sum() / params.dram_Bps)
        comm[s] = t
        red = sel & reducing
        got = np.bincount(dst[red], nbytes[red], schedule.num_ranks)
        comp[s] = got.max() / params.bytes_per_element / params.flops_per_core
    t_sync = float(hops.sum() * params.hop_s)
    total = float(np.maximum(comm, comp).sum() + t_sync)
    parts = {"compute": comp.sum(), "transfer": comm.sum(), "latency": t_sync}
    return {
        "t_comp": float(comp.sum()),
        "t_comm": float(comm.sum()),
        "t_sync": t_sync,
        "total": total,
        "regime": max(parts, key=parts.__getitem__),
    }
