"""The MCM artifact's driver (``HMC`` in ``src/hmc.py``) as a :class:`wafercoll.Driver`.

The artifact of *Enhancing Collective Communication in MCM Accelerators for
Deep Learning Training* (Laskar, Majhi et al., HPCA 2024; repository
sabuj7177/TTO_HPCA_2024, commit ``156128c5``) runs Ring-2D, DBTree and
MultiTree (and the rings) through one driver per chiplet, ``HMC``, in front
of BookSim. :func:`hmc_driver` states it for ``engine="routers"``, every
number from the artifact's sources and run scripts:

* **Interfaces** (``--radix``): 4 per chiplet (1 for ``dtree``), each a
  BookSim node of its own on the chiplet's router (``src/booksim.py``). A
  flow takes the first interface of ``free_nis``, a Python ``set`` its
  interfaces are taken out of and put back into (``reduce_scatter_update``,
  ``send_reduce_message_update``): ``order="python_set"``.
* **Hand-over**: an interface hands one message per cycle to its buffer of
  ``--message-buffer-size`` 32 messages while that is not full, and is free
  again once the flow's last message is in it. Behind that buffer BookSim
  holds ``msg_buf_size`` 16 messages and ``inject_buf_size`` 80 flits (4
  whole messages): ``queue_packets`` 52.
* **Channel**: a message crosses the interface's channel into the router at
  a flit per cycle (the anynet files' node channels), 17 flits
  (``channel_Bps`` 8 KiB per 17 cycles); the router's input port of the
  interface holds ``num_vcs`` 4 x ``vc_buf_size`` 318 flits, 74 messages
  (``buffer_packets``, as every router input port under
  ``engine="routers"``). An interface's messages leave that port in order.
  On :func:`~wafercoll.mcm.artifact_dbtree_topology` the chiplet's channel
  is a link of its own, whose credits are that input port, so the driver
  adds neither (``buffer_packets=1``).
* **Steps**: a chiplet works through its schedule's timesteps in order;
  with ``--strict-schedule`` (``dtree``, ``multitree``) a timestep starts
  only once every interface is free again, without it (``ring2dn``) once
  every flow of the earlier ones has an interface; the allgather starts
  once the reduce-scatter is done and every interface is free.
* **Aggregation**: a chiplet aggregates each child's flow once it has fully
  arrived, one at a time, ``ceil(ceil(P / 16) / 256)`` cycles for ``P``
  fp32 parameters (``npu.py``'s ``aggregate`` over ``--num-vaults`` 16 NPUs
  of the run scripts' ``google.cfg``, 256 x 256 arrays): a cycle per 16 KiB.

The schedules are the variants' flows one transfer each:
``mesh_ring_2d_artifact_allreduce`` with ``dependencies="artifact"`` and
``message_bytes``, ``mesh_multitree_artifact_allreduce`` with
``dependencies="artifact"``, ``mesh_dbtree_artifact_allreduce`` (on
:func:`~wafercoll.mcm.artifact_dbtree_topology`).
"""

from __future__ import annotations

from typing import Any

from .._routers import Driver
from .artifact_multitree import (
    BOOKSIM_INJECT_FLITS,
    BOOKSIM_MESSAGE_BUFFER,
    DRIVER_BUFFER_MESSAGES,
    MESSAGE_FLITS,
    ROUTER_PORT_FLITS,
    driver_flows,
)
from .artifact_ring2d import driver_steps
from .artifact_topology import dbtree_driver_steps
from .machine import ARTIFACT_INTERFACES, ARTIFACT_MESSAGE_BYTES, CLOCK_HZ

__all__ = ["HMC_AGGREGATE_BYTES_PER_CYCLE", "HMC_QUEUE_MESSAGES", "hmc_driver"]

#: Messages a flow may still have before the interface's channel when the
#: interface is free again: the driver's buffer (32), BookSim's message
#: buffer (16) and its injection queue (80 flits: 4 whole messages).
HMC_QUEUE_MESSAGES = (
    DRIVER_BUFFER_MESSAGES
    + BOOKSIM_MESSAGE_BUFFER
    + BOOKSIM_INJECT_FLITS // MESSAGE_FLITS
)
#: Bytes a chiplet aggregates per cycle: 4-byte parameters over 16 NPUs
#: (``--num-vaults``), each through a row of 256 PEs (``google.cfg``).
HMC_AGGREGATE_BYTES_PER_CYCLE = 4 * 16 * 256
#: Builders the driver runs here, with its interfaces and strictness.
_RUNS = {
    "mesh_ring_2d_artifact_allreduce": ARTIFACT_INTERFACES,
    "mesh_multitree_artifact_allreduce": ARTIFACT_INTERFACES,
    "mesh_dbtree_artifact_allreduce": 1,
}


def hmc_driver(name: str, rows: int, cols: int, *, trees: str = "computed") -> Driver:
    """The artifact's driver for ``name``'s flows on a ``rows x cols`` mesh.

    Parameters
    ----------
    name : str
        ``mesh_ring_2d_artifact_allreduce`` (built with
        ``dependencies="artifact"`` and ``message_bytes``),
        ``mesh_multitree_artifact_allreduce`` (``dependencies="artifact"``)
        or ``mesh_dbtree_artifact_allreduce`` (``rows * cols`` chiplets).
    rows, cols : int
        The mesh.
    trees : {"computed", "saved"}
        MultiTree's trees, as its builder takes them.

    Returns
    -------
    Driver
        For ``wc.simulate(..., engine="routers", buffer_packets=74,
        driver=...)`` under :data:`wafercoll.mcm.ARTIFACT`.

    Examples
    --------
    Ring-2D as the artifact runs it on 4x4 at 1 MiB (it committed 60,382
    cycles):

    >>> import wafercoll as wc
    >>> m = wc.topology.mesh(4, 4)
    >>> s = wc.build("mesh_ring_2d_artifact_allreduce", topology=m,
    ...              size_bytes=1 << 20, message_bytes=8192,
    ...              dependencies="artifact")
    >>> d = wc.mcm.hmc_driver("mesh_ring_2d_artifact_allreduce", 4, 4)
    >>> r = wc.simulate(s, m, wc.mcm.ARTIFACT, engine="routers",
    ...                 buffer_packets=74, driver=d)
    >>> round(abs(r.cycles / 60382 - 1), 2) <= 0.05
    True
    """
    if name not in _RUNS:
        raise ValueError(f"name must be one of {', '.join(_RUNS)}; got {name!r}")
    cycle = 1.0 / CLOCK_HZ
    kw: dict[str, Any] = {}
    if name == "mesh_ring_2d_artifact_allreduce":
        kw["step"], kw["strict"] = driver_steps(rows, cols)
    elif name == "mesh_multitree_artifact_allreduce":
        kw["step"] = driver_flows(rows, cols, trees)["step"]
        kw["strict"] = [True] * kw["step"].size
    else:
        kw["step"] = dbtree_driver_steps(rows * cols)
        kw["strict"] = [True] * kw["step"].size
    if name == "mesh_dbtree_artifact_allreduce":
        # the artifact's topology has the chiplet's channel as a link of its
        # own, whose credits are the router's input port: nothing between
        kw["buffer_packets"] = 1
    else:
        kw["channel_Bps"] = ARTIFACT_MESSAGE_BYTES / (MESSAGE_FLITS * cycle)
        kw["buffer_packets"] = ROUTER_PORT_FLITS // MESSAGE_FLITS
    return Driver(
        _RUNS[name],
        queue_packets=HMC_QUEUE_MESSAGES,
        handover_s=cycle,
        order="python_set",
        aggregate_s_per_byte=cycle / HMC_AGGREGATE_BYTES_PER_CYCLE,
        **kw,
    )
