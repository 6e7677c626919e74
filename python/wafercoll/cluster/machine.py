"""A cluster as the simulator sees it: topology and network from a parameter set."""

from __future__ import annotations

from typing import Any

from ..simulate import NetworkModel
from ..topology import cluster
from .models import BLUE_WATERS, ClusterParams, protocol

__all__ = ["cluster_machine"]


def cluster_machine(
    nodes: int, ppn: int, size_bytes: float = 8, params: ClusterParams = BLUE_WATERS
) -> tuple[Any, NetworkModel]:
    """The cluster topology and network model that mimic ``params`` at a size.

    The postal parameters of ``params`` depend on the protocol regime of the
    message size (short, eager, rendezvous), so the machine is built for one
    ``size_bytes``: process links carry the network's ``1 / beta`` and half
    the on-node ``alpha`` as latency, each NIC carries the node's injection
    rate ``R_N`` of that protocol (unlimited when the set has none) and half
    the rest of the network's ``alpha``; reductions cost ``gamma`` per byte.

    Parameters
    ----------
    nodes, ppn : int
        Nodes and processes per node.
    size_bytes : float
        Message size that selects the protocol regime.
    params : ClusterParams
        The measured parameter set (default :data:`BLUE_WATERS`).

    Returns
    -------
    (Topology, NetworkModel)
        Entry ``blue_waters`` of :mod:`wafercoll.machines`.
    """
    loc = params.postal("node", size_bytes)
    net = params.postal("network", size_bytes)
    rn = params.nic_Bps[protocol(size_bytes)]
    topo = cluster(
        nodes,
        ppn,
        process_Bps=1.0 / net.beta_s_per_byte,
        nic_Bps=rn if rn is not None else 1e15,
        process_latency_s=loc.alpha_s / 2,
        nic_latency_s=max(net.alpha_s - loc.alpha_s, 0.0) / 2,
    )
    model = NetworkModel(
        None, gamma_s_per_byte=params.gamma_s_per_byte, name="blue_waters"
    )
    return topo, model
