"""A cluster as the simulator sees it: topology and network from a parameter set."""

from __future__ import annotations

from typing import Any

from ..network import NetworkModel
from ..topology import cluster
from .model import BLUE_WATERS, ClusterParams, protocol

__all__ = ["cluster_machine"]


def cluster_machine(
    nodes: int,
    ppn: int,
    size_bytes: float = 8,
    params: ClusterParams = BLUE_WATERS,
    sockets: int | None = None,
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
    sockets : int or None
        Sockets per node (dividing ``ppn``) for the socket level: every
        locality class gets its own start-up and rate. Process links carry
        the ``socket`` class (``alpha / 2``, ``1 / beta``), socket links the
        rest of the ``node`` class (``(alpha_node - alpha_socket) / 2``,
        clipped at 0, and ``1 / beta_node``), and off-node messages take the
        processes' lanes (``alpha_network / 2`` and ``R_b = 1 / beta`` of the
        network) and the NIC (``R_N``). A message within a socket then costs
        ``alpha_s + beta_s s``, across sockets ``alpha_n + s max(beta_s,
        beta_n)`` (exact when cross-socket bytes are no faster than on-socket
        ones, as in every regime of both Blue Waters sets), off-node ``alpha
        + s / min(R_b, R_N)`` with the node's senders sharing the NIC.
        ``None`` (default): the layout above, one on-node class (``node``)
        and every byte at the network's rate.

    Returns
    -------
    (Topology, NetworkModel)
        Entry ``blue_waters`` of :mod:`wafercoll.machines`.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> topo, net = cluster.cluster_machine(4, 8, size_bytes=8)
    >>> topo.num_endpoints
    32
    """
    loc = params.postal("node", size_bytes)
    net = params.postal("network", size_bytes)
    rn = params.nic_Bps[protocol(size_bytes)]
    if sockets is None:
        topo = cluster(
            nodes,
            ppn,
            process_Bps=1.0 / net.beta_s_per_byte,
            nic_Bps=rn if rn is not None else 1e15,
            process_latency_s=loc.alpha_s / 2,
            nic_latency_s=max(net.alpha_s - loc.alpha_s, 0.0) / 2,
        )
    else:
        sock = params.postal("socket", size_bytes)
        topo = cluster(
            nodes,
            ppn,
            sockets,
            process_Bps=1.0 / sock.beta_s_per_byte,
            socket_Bps=1.0 / loc.beta_s_per_byte,
            nic_Bps=rn if rn is not None else 1e15,
            process_latency_s=sock.alpha_s / 2,
            socket_latency_s=max(loc.alpha_s - sock.alpha_s, 0.0) / 2,
            lane_Bps=1.0 / net.beta_s_per_byte,
            lane_latency_s=net.alpha_s / 2,
        )
    model = NetworkModel(
        None, gamma_s_per_byte=params.gamma_s_per_byte, name="blue_waters"
    )
    return topo, model
