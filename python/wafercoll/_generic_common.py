"""What the generic builders share: one hop's Hockney costs, their source, limits.

:mod:`wafercoll.generic`, :mod:`wafercoll.generic_blocks` and
:mod:`wafercoll.generic_rooted` all read their closed forms' ``alpha``,
``beta`` and ``gamma`` from :func:`hop_costs`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LOG_MAX_RANKS", "MPICH_SOURCE", "RING_MAX_RANKS", "hop_costs"]

MPICH_SOURCE = (
    "Thakur, Rabenseifner, Gropp, Optimization of Collective Communication "
    "Operations in MPICH, IJHPCA 2005"
)
#: Largest rank count of the ring (2 p (p - 1) transfers: 33.5 M at 4096).
RING_MAX_RANKS = 4096
#: Largest rank count of the logarithmic algorithms (about 2 p log2 p transfers).
LOG_MAX_RANKS = 1 << 20


def hop_costs(topology: Any, network: Any) -> tuple[float, float, float] | None:
    """``(alpha, beta, gamma)`` of one neighbour hop, or None without a form.

    ``alpha`` is the model's start-up plus the smallest link latency plus the
    hop latency, ``beta`` one over the network's (else the slowest link's)
    bandwidth; ``None`` without a topology or network, without links, or with
    ports (which the forms do not model).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll._generic_common import hop_costs
    >>> hop_costs(wc.ring(4), wc.NetworkModel(1e9, alpha_s=1e-6))
    (1e-06, 1e-09, 0.0)
    """
    if topology is None or network is None or network.ports is not None:
        return None
    links = topology.links
    if len(links["src"]) == 0:
        return None
    bw = network.bandwidth_Bps or float(links["bandwidth_Bps"].min())
    alpha = network.alpha_s + float(links["latency_s"].min()) + network.hop_latency_s
    return alpha, 1.0 / bw, network.gamma_s_per_byte
