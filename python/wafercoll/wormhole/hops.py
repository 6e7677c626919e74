"""Hop counts of Swing and recursive doubling on a topology (thesis Section 6.3.2).

For every step of a built schedule, each rank's hops to its peer (read from
the schedule's transfers) are the link count of ``topology.route(rank,
peer)``: on :func:`wafercoll.wormhole` the
ring distance in the step's dimension, on the Wormhole n150 the hops on the
chosen NoC across the physical 10 x 12 grid, hidden rows and columns
included (recovered details, Section 4.5). The thesis's "worst case" of a
step is the largest of these; a node's total is the sum over its steps.

The bandwidth-optimal variants use the same peers (their allgather repeats
the steps backwards), so one table covers ``swing_lo`` and ``swing_bo``.

Examples
--------
>>> import wafercoll as wc
>>> t = wc.wormhole.hop_table("rd", wc.wormhole.wormhole_n150(harvested_row=10))
>>> t.per_step_worst.tolist(), t.worst_total
([1, 2, 2, 3, 5, 5], 18)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import fields_equal, html_table
from . import swing as _sw
from .builders import grid_of

__all__ = ["HopTable", "hop_table"]


@dataclass(frozen=True, repr=False)
class HopTable:
    """Hops of every rank at every step.

    Attributes
    ----------
    algorithm : str
        ``"swing"`` or ``"rd"``.
    topology : str
        Name of the topology.
    steps : list of str
        Step labels, e.g. ``"x0"``, ``"y0"``, ``"x1"``.
    peers : numpy.ndarray
        ``(steps, ranks)`` peer of every rank.
    hops : numpy.ndarray
        ``(steps, ranks)`` hops from every rank to its peer.
    """

    __eq__ = fields_equal  # array fields compare whole

    algorithm: str
    topology: str
    steps: list[str]
    peers: np.ndarray
    hops: np.ndarray

    @property
    def per_step_worst(self) -> np.ndarray:
        """Most hops of any rank in each step."""
        return self.hops.max(axis=1)

    @property
    def worst_total(self) -> int:
        """Sum of :attr:`per_step_worst` (the thesis's 1 + 2 + 2 + 3 + 5 + 5)."""
        return int(self.per_step_worst.sum())

    @property
    def node_totals(self) -> np.ndarray:
        """Each rank's hops summed over the steps."""
        return self.hops.sum(axis=0)

    def _repr_html_(self) -> str:
        worst = " + ".join(str(int(h)) for h in self.per_step_worst)
        rows = [
            ("algorithm", self.algorithm),
            ("topology", self.topology),
            ("steps", ", ".join(self.steps)),
            ("worst hops per step", f"{worst} = {self.worst_total}"),
            ("per-rank totals", self.node_totals),
        ]
        return html_table("Hops per step", rows)

    def __repr__(self) -> str:
        worst = " + ".join(str(int(h)) for h in self.per_step_worst)
        totals = self.node_totals
        return (
            f"<HopTable {self.algorithm} on {self.topology}: worst per step "
            f"{worst} = {self.worst_total}; per-node totals {int(totals.min())}"
            f"..{int(totals.max())} over {totals.size} ranks>"
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data: labels, per-step worst, per-node totals."""
        return {
            "algorithm": self.algorithm,
            "topology": self.topology,
            "steps": list(self.steps),
            "per_step_worst": self.per_step_worst.tolist(),
            "worst_total": self.worst_total,
            "node_totals": self.node_totals.tolist(),
        }


#: The short names hop_table takes, and the algorithm each means (the
#: variant does not change who talks to whom at a step).
_SHORT_NAMES = {
    "swing": "swing",
    "rd": "rd",
    "swing_lo": "swing",
    "swing_bo": "swing",
    "rd_lo": "rd",
    "rd_bo": "rd",
}


def _grid_algorithm(name: str) -> str:
    """The torus algorithm (``"swing"`` or ``"rd"``) a short or registry name means."""
    from ..algorithms import lookup

    alg = _SHORT_NAMES.get(name)
    if alg is None:
        info = lookup(name)
        if info is not None and info.family == "torus":
            alg = info.algorithm
    if alg not in _sw.ALGORITHMS:
        raise ValueError(
            "algorithm must be a Schedule, 'swing', 'rd', 'swing_lo', 'swing_bo', "
            f"'rd_lo', 'rd_bo' or a registered torus Swing or RD name, got {name!r}"
        )
    return alg


def hop_table(algorithm: Any, topology: Any, first: str = "x") -> HopTable:
    """Per-step hops of a built schedule (Swing or recursive doubling) on a topology.

    The peers are read from the schedule: at step ``s`` (a transfer's step is
    the longest dependency chain before it, :meth:`wafercoll.Schedule.steps`)
    rank ``r``'s peer is the destination of its transfer of that step.

    Parameters
    ----------
    algorithm : str or Schedule
        A schedule, or ``"swing"`` / ``"rd"`` (also ``"swing_lo"``,
        ``"swing_bo"``, ``"rd_lo"``, ``"rd_bo"`` and the registry names
        ``"torus_swing_lo_allreduce"`` ...): the latency-optimal schedule of
        that peer rule is built on ``topology`` (the bandwidth-optimal
        variants use the same peers).
    topology : Topology
        A torus, a ring or the Wormhole n150 (its compute grid).
    first : {"x", "y"}
        Dimension of the first step, when a name is given (the thesis:
        ``"x"``, horizontal).

    Returns
    -------
    HopTable
        ``peers[s, r]`` is -1 (and ``hops[s, r]`` 0) where rank ``r`` sends
        nothing at step ``s`` (the shrink steps of sides that are not powers
        of two); where it sends more than once, the farthest peer counts.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.wormhole.hop_table("swing", wc.torus(4, 4))
    >>> t
    <HopTable swing on torus(4x4): worst per step 1 + 1 + 1 + 1 = 4; per-node totals
    4..4 over 16 ranks>
    """
    from ..algorithms import build, find
    from ..schedule import Schedule

    if getattr(topology, "kind", None) is None:
        raise TypeError("topology must be a wafercoll.Topology")
    if isinstance(algorithm, Schedule):
        schedule, alg = algorithm, algorithm.name or "schedule"
    elif isinstance(algorithm, str):
        alg = _grid_algorithm(algorithm)
        dims = grid_of(None, topology)
        schedule = build(
            find("torus", alg, "allreduce", variant="lo").name,
            dims[0] * dims[1],
            8,
            topology=topology,
            first=first,
        )
    else:
        raise TypeError(
            f"algorithm must be a string or a Schedule, got {type(algorithm).__name__}"
        )
    p = schedule.num_ranks
    if p > topology.num_endpoints:
        raise ValueError(
            f"the schedule has {p} ranks, the topology {topology.num_endpoints} "
            "endpoints"
        )
    step, src, dst = schedule.steps(), schedule.src, schedule.dst
    n_steps = schedule.num_steps
    peers = np.full((n_steps, p), -1, dtype=np.int64)
    hops = np.zeros((n_steps, p), dtype=np.int64)
    for t in range(src.size):
        s, a, b = int(step[t]), int(src[t]), int(dst[t])
        h = topology.hops(a, b)
        if peers[s, a] < 0 or h > hops[s, a]:
            peers[s, a], hops[s, a] = b, h
    labels = [f"s{k}" for k in range(n_steps)]
    if not isinstance(algorithm, Schedule):
        plan = [f"{d}{k}" for d, k in _sw.step_plan(grid_of(None, topology), first)]
        if len(plan) == n_steps:
            labels = plan
    return HopTable(alg, topology.name, labels, peers, hops)
