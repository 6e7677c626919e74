"""1D wafer Reduce: Auto-Gen, the lower bound, and optimality ratios.

Sections 5.5 to 5.7 of *Near-Optimal Wafer-Scale Reduce*. The dynamic
programs run in the compiled core; the recurrences and why they are fast are
in ``cpp/include/wafercoll/wafer/reduce1d.hpp``:

* **Auto-Gen** minimises equation (1) over all pre-order, non-crossing
  reduction trees: ``E(n, d, c) = min_i E(i, d, c-1) + E(n-i, d-1, c) + i``
  is the least energy of a tree on ``n`` PEs with height at most ``d`` and at
  most ``c`` children per PE, and
  ``T(P, B) = min_{d,c} max(B c, B E(P, d, c) / (P-1) + P - 1) + (2 T_R + 1) d``.
* **Lower bound** (Lemma 5.5):
  ``E*(n, D) = min_i E*(i, D) + E*(n-i, D-1) + min(i, n-i+1)`` and
  ``T*(P, B) >= min_D B E*(P, D) / (P-1) + P - 1 + (2 T_R + 1) D``.

Examples
--------
>>> from wafercoll import wafer
>>> t = wafer.autogen(16, 4)
>>> t.cycles <= min(wafer.reduce_time(a, 16, 4) for a in ("chain", "tree", "two_phase"))
True
>>> int(t.parent[0])
-1
>>> wafer.lower_bound(16, 4) <= t.cycles
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _core
from .._util import as_int, fields_equal, html_table
from ..kit.trees import tree_depths
from .model import (
    T_R_DEFAULT,
    as_ramp_latency,
    binary_tree,
    chain_time,
    star_lemma_time,
    star_time,
    tree_metrics,
    tree_time,
    two_phase_time,
    two_phase_tree,
)

__all__ = [
    "REDUCE_ALGORITHMS",
    "AutogenTree",
    "autogen",
    "autogen_cycles",
    "table1_cycles",
    "lower_bound",
    "lower_bound_cycles",
    "optimality_ratios",
    "reduce_time",
    "routing_plan",
    "routing_plan_json",
]

#: The 1D Reduce patterns of Section 5 (``star`` is the refined, pipelined form).
REDUCE_ALGORITHMS = ("star", "chain", "tree", "two_phase", "autogen")
#: Largest row the dynamic programs accept (the tables grow with P).
MAX_DP_P = 1 << 16


def _args(P: Any, B: Any, T_R: Any) -> tuple[int, int, float]:
    return (
        as_int(P, "P", 1, MAX_DP_P),
        as_int(B, "B", 1, 1 << 40),
        as_ramp_latency(T_R),
    )


@dataclass(frozen=True)
class AutogenTree:
    """The optimal Auto-Gen reduction tree for one (P, B).

    Attributes
    ----------
    P, B : int
        Row length and vector length in wavelets.
    T_R : float
        Ramp latency in cycles.
    cycles : float
        Equation (1) of the tree: the DP optimum.
    depth, contention : int
        Height of the tree and most children of a PE (messages received).
    energy : int
        Sum of the edge lengths (energy for one wavelet; ``B`` times that in all).
    parent : ndarray of int
        ``parent[v]`` is the PE that ``v`` sends its partial sum to;
        ``parent[0] == -1``.
    depth_bound, contention_bound : int
        The DP's optimal (d, c), of which (depth, contention) is a tree.
    """

    __eq__ = fields_equal  # array fields compare whole

    P: int
    B: int
    T_R: float
    cycles: float
    depth: int
    contention: int
    energy: int
    parent: np.ndarray = field(repr=False)
    depth_bound: int = 0
    contention_bound: int = 0

    def children(self) -> list[list[int]]:
        """Children of each PE in the order it receives them (left to right)."""
        out: list[list[int]] = [[] for _ in range(self.P)]
        for v in range(1, self.P):
            out[int(self.parent[v])].append(v)
        return out

    def routing_plan(self) -> dict[str, Any]:
        """The per-PE router configurations of this tree (see :func:`routing_plan`)."""
        return routing_plan(self.parent)

    def _repr_html_(self) -> str:
        rows = [
            ("P, B", f"{self.P}, {self.B}"),
            ("T_R", self.T_R),
            ("cycles (equation (1))", self.cycles),
            ("depth, contention", f"{self.depth}, {self.contention}"),
            ("energy (per wavelet)", self.energy),
            ("most children of a PE", max(len(c) for c in self.children())),
        ]
        return html_table("Auto-Gen tree", rows)


#: Largest row the Table 1 variant of Auto-Gen takes (its DP is O(P^5)).
MAX_TABLE1_P = 48


def autogen(
    P: int, B: int, T_R: float = T_R_DEFAULT, *, contention: str = "recurrence"
) -> AutogenTree:
    """The optimal Auto-Gen tree for ``P`` PEs and ``B`` wavelets.

    Parameters
    ----------
    P, B : int
        PEs in the row and vector length in wavelets.
    T_R : float
        Ramp latency in cycles.
    contention : {"recurrence", "table1"}
        Which contention equation (1) charges. ``"recurrence"`` (the paper's
        DP, Section 5.5): a PE takes its children's streams one after another,
        so the ``j``-th of ``m`` children's subtree must finish within
        ``C - (m - j)`` (:func:`wafercoll.wafer.tree_metrics`).
        ``"table1"``: Table 1's definition, the largest number of wavelets a
        PE receives, ``B`` times its most children; a looser constraint, so
        its optimum is never worse in the model (up to about 4 % better at
        small P). Rows up to :data:`MAX_TABLE1_P` PEs.

    Raises
    ------
    ValueError
        For ``P`` outside ``[1, 65536]`` (``[1, 48]`` for ``"table1"``),
        ``B < 1``, ``T_R < 0``, an unknown ``contention``, or a table larger
        than a few GiB (the message names the size).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> t = wafer.autogen(16, 64)
    >>> t.cycles, t.parent.tolist()
    (153.0, [-1, 0, 1, 2, 3, 4, 1, 6, 7, 8, 6, 10, 11, 10, 13, 13])
    """
    if contention not in ("recurrence", "table1"):
        raise ValueError(
            f"contention must be 'recurrence' or 'table1', got {contention!r}"
        )
    P, B, T_R = _args(P, B, T_R)
    if contention == "table1":
        return _autogen_table1(P, B, T_R)
    r = _core.wafer_autogen(P, B, T_R)
    parent = np.asarray(r["parent"], dtype=np.int64)
    return AutogenTree(
        P=P,
        B=B,
        T_R=T_R,
        cycles=float(r["cycles"]),
        depth=int(r["depth"]),
        contention=int(r["contention"]),
        energy=int(r["energy"]),
        parent=parent,
        depth_bound=int(r["depth_bound"]),
        contention_bound=int(r["contention_bound"]),
    )


def _table1_layers(P: int, c: int, dmax: int) -> list[list[np.ndarray]]:
    """Energies ``E[d][r][n]`` of Table 1's Auto-Gen DP for one bound ``c``.

    ``E[d][r][n]`` is the least energy of a row tree on ``n`` PEs of height
    <= d whose root has <= r children and every other PE <= c (inf: none).

    Peeling the root's last child, rooted ``i`` PEs to its right:
    ``E[d][r][n] = min_i E[d][r-1][i] + i + E[d-1][c][n-i]``.
    """
    inf = np.inf
    base = np.full(P + 1, inf)
    base[1] = 0.0
    layers = [[base.copy() for _ in range(c + 1)]]  # d = 0: single PEs only
    i_idx = np.arange(1, P)
    for _d in range(1, dmax + 1):
        prev_full = layers[-1][c]
        row = [base.copy()]  # r = 0
        for _r in range(1, c + 1):
            a = row[-1]
            out = base.copy()
            for n in range(2, P + 1):
                i = i_idx[: n - 1]
                out[n] = np.min(a[i] + i + prev_full[n - i])
            row.append(out)
        layers.append(row)
    return layers


def _table1_rebuild(
    layers: list[list[np.ndarray]], c: int, d: int, P: int
) -> np.ndarray:
    """A tree achieving ``layers[d][c][P]`` (parent array)."""
    parent = np.full(P, -1, dtype=np.int64)
    stack = [(0, P, d, c)]  # (first PE, PEs, height budget, root budget)
    while stack:
        base, n, dd, r = stack.pop()
        if n == 1:
            continue
        a, b = layers[dd][r - 1], layers[dd - 1][c]
        i = np.arange(1, n)
        vals = a[i] + i + b[n - i]
        split = int(i[int(np.argmin(vals))])
        parent[base + split] = base
        stack.append((base, split, dd, r - 1))
        stack.append((base + split, n - split, dd - 1, c))
    return parent


def _autogen_table1(P: int, B: int, T_R: float) -> AutogenTree:
    """Auto-Gen with Table 1's contention (see :func:`autogen`)."""
    if P > MAX_TABLE1_P:
        raise ValueError(
            f"contention='table1' takes rows of up to {MAX_TABLE1_P} PEs (its DP is "
            f"O(P^5)), got P = {P}"
        )
    if P == 1:
        return AutogenTree(P, B, T_R, 0.0, 0, 0, 0, np.array([-1]), 0, 0)
    k = 2.0 * T_R + 1.0
    # Upper bound: the paper's tree, whose most children never exceed its
    # recurrence contention.
    ref = autogen(P, B, T_R)
    best = table1_cycles(ref.parent, B, T_R)
    best_dc = None
    for c in range(1, P):
        if B * c + k > best + 1e-9:
            break
        dmax = int(min(P - 1, np.floor((best - B - (P - 1)) / k + 1e-9)))
        if dmax < 1:
            continue
        layers = _table1_layers(P, c, dmax)
        for d in range(1, dmax + 1):
            e = layers[d][c][P]
            if not np.isfinite(e):
                continue
            t = max(B * c, B * e / (P - 1) + P - 1) + k * d
            if t < best - 1e-9:
                best, best_dc = t, (c, d, layers)
    if best_dc is None:
        parent = ref.parent
    else:
        c, d, layers = best_dc
        parent = _table1_rebuild(layers, c, d, P)
    energy, most, depth = _row_tree_counts(parent)
    d_bound, c_bound = (depth, most) if best_dc is None else (best_dc[1], best_dc[0])
    return AutogenTree(
        P, B, T_R, table1_cycles(parent, B, T_R), depth, most, energy, parent,
        d_bound, c_bound,
    )  # fmt: skip


def _row_tree_counts(parent: np.ndarray) -> tuple[int, int, int]:
    """Energy (sum of edge lengths), most children and height of a row tree."""
    P = parent.size
    energy = int(np.sum(np.arange(1, P) - parent[1:]))
    most = int(np.bincount(parent[1:], minlength=P).max())
    return energy, most, int(tree_depths(parent).max())


def table1_cycles(parent: Any, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Equation (1) of a row tree with Table 1's contention (B x most children).

    The counterpart of :func:`wafercoll.wafer.tree_cycles`, whose contention
    is the Auto-Gen recurrence's.
    """
    par = np.asarray(parent, dtype=np.int64)
    P = par.size
    if P <= 1:
        return 0.0
    b = as_int(B, "B", 1)
    k = 2.0 * as_ramp_latency(T_R) + 1.0
    energy, most, depth = _row_tree_counts(par)
    return max(b * most, b * energy / (P - 1) + P - 1) + k * depth


def autogen_cycles(P: int, B: int, T_R: float = T_R_DEFAULT) -> np.ndarray:
    """Auto-Gen's optimum for every row length ``n = 1 .. P`` (entry ``n - 1``).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.autogen_cycles(4, 64).tolist()
    [0.0, 70.0, 76.0, 82.0]
    """
    P, B, T_R = _args(P, B, T_R)
    return np.asarray(_core.wafer_autogen_cycles(P, B, T_R))


def lower_bound_cycles(P: int, B: int, T_R: float = T_R_DEFAULT) -> np.ndarray:
    """Lemma 5.5's bound ``T*(n, B)`` for every ``n = 1 .. P`` (entry ``n - 1``).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.lower_bound_cycles(4, 64).tolist()
    [0.0, 70.0, 76.0, 82.0]
    """
    P, B, T_R = _args(P, B, T_R)
    return np.asarray(_core.wafer_lower_bound_cycles(P, B, T_R))


def lower_bound(P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Lemma 5.5: ``min_D B E*(P, 1, D) / (P - 1) + P - 1 + D (2 T_R + 1)``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.lower_bound(16, 64) <= wafer.autogen(16, 64).cycles
    True
    """
    return float(lower_bound_cycles(P, B, T_R)[-1])


def reduce_time(algorithm: str, P: int, B: int, T_R: float = T_R_DEFAULT) -> float:
    """Predicted cycles of a 1D Reduce pattern.

    Parameters
    ----------
    algorithm : {"star", "chain", "tree", "two_phase", "autogen"}
        ``star`` is the refined, pipelined Star ``B (P - 1) + 2 T_R + 1``
        (Section 5.1; :func:`wafercoll.wafer.star_lemma_time` is Lemma 5.1's
        equation-(1) bound); ``chain`` is Lemma 5.2; ``tree`` and
        ``two_phase`` are equation (1) on their trees for any P (Lemma 5.3 at
        powers of two; Lemma 5.4's metrics at squares, with N = L = P - 1);
        ``autogen`` is the DP optimum.
    P, B : int
        PEs in the row and vector length in wavelets.
    T_R : float
        Ramp latency in cycles.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.reduce_time("chain", 16, 64), wafer.reduce_time("autogen", 16, 64)
    (154.0, 153.0)
    """
    P, B, T_R = _args(P, B, T_R)
    forms = {
        "star": star_time,
        "star_lemma": star_lemma_time,
        "chain": chain_time,
        "tree": tree_time,
        "two_phase": two_phase_time,
    }
    if algorithm == "autogen":
        return autogen(P, B, T_R).cycles
    if algorithm not in forms:
        raise ValueError(
            f"algorithm must be one of {', '.join(REDUCE_ALGORITHMS)} (or star_lemma), "
            f"got {algorithm!r}"
        )
    return float(forms[algorithm](P, B, T_R))


#: Largest row for which optimality_ratios keeps Lemma 5.5's whole energy
#: table (8 P^2 bytes: 128 MiB at 4096) instead of solving it again per B.
_LB_TABLE_MAX_P = 4096


def _lower_bound_from_table(energy: np.ndarray, B: int, T_R: float) -> np.ndarray:
    """``T*(n, B)`` for every n from the table ``energy[D, n - 1] = E*(n, D)``."""
    depths, P = energy.shape
    n1 = np.arange(P, dtype=float)  # n - 1
    D = np.arange(depths, dtype=float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = float(B) * energy / n1 + n1 + (2.0 * T_R + 1.0) * D
    out = terms[1:].min(axis=0)
    out[0] = 0.0
    return out


def optimality_ratios(
    Ps: Iterable[int], Bs: Iterable[int], T_R: float = T_R_DEFAULT
) -> dict[str, np.ndarray]:
    """``T_alg / T*`` for every pattern, row length and vector length.

    Returns a tidy table as a dict of equal-length NumPy columns: ``P``,
    ``B``, ``algorithm``, ``cycles``, ``lower_bound`` and ``ratio``.
    Auto-Gen comes from one DP per ``B`` for all ``P`` up to the largest
    requested, the bound from one energy table for all ``B``.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> r = wafer.optimality_ratios([16], [64])
    >>> sorted(r), sorted(set(r["algorithm"].tolist()))
    (['B', 'P', 'algorithm', 'cycles', 'lower_bound', 'ratio'], ['autogen', 'chain',
    'star', 'tree', 'two_phase'])
    """
    p_list = sorted({as_int(p, "Ps[i]", 2, MAX_DP_P) for p in Ps})
    b_list = sorted({as_int(b, "Bs[i]", 1, 1 << 40) for b in Bs})
    t_r = as_ramp_latency(T_R)
    if not p_list or not b_list:
        raise ValueError("Ps and Bs must each list at least one value")
    pmax = p_list[-1]
    # The trees' metrics do not depend on B; nor does Lemma 5.5's energy table.
    trees = {
        "tree": {p: tree_metrics(binary_tree(p)) for p in p_list},
        "two_phase": {p: tree_metrics(two_phase_tree(p)) for p in p_list},
    }
    energy = None
    if pmax <= _LB_TABLE_MAX_P:
        energy = np.asarray(_core.wafer_lower_bound_energy(pmax, pmax - 1), dtype=float)
        energy[energy < 0] = np.inf
    cols: dict[str, list[Any]] = {k: [] for k in ("P", "B", "algorithm", "cycles")}
    bounds: list[float] = []
    for b in b_list:
        auto = autogen_cycles(pmax, b, t_r)
        lb = (
            lower_bound_cycles(pmax, b, t_r)
            if energy is None
            else _lower_bound_from_table(energy, b, t_r)
        )
        for p in p_list:
            values = {
                "star": star_time(p, b, t_r),
                "chain": chain_time(p, b, t_r),
                "tree": trees["tree"][p].cycles(b, t_r),
                "two_phase": trees["two_phase"][p].cycles(b, t_r),
                "autogen": float(auto[p - 1]),
            }
            for name, value in values.items():
                cols["P"].append(p)
                cols["B"].append(b)
                cols["algorithm"].append(name)
                cols["cycles"].append(float(value))
                bounds.append(float(lb[p - 1]))
    out = {k: np.asarray(v) for k, v in cols.items()}
    out["lower_bound"] = np.asarray(bounds)
    out["ratio"] = out["cycles"] / out["lower_bound"]
    return out


# -- routing plan -----------------------------------------------------------------
def routing_plan(parent: Any) -> dict[str, Any]:
    """Router configurations that run a 1D reduction tree on the wafer.

    The model of the plan (the paper's Section 5.5 and Figures 5 and 6, made
    explicit here):

    * The stream of PE ``v`` to its parent travels west on colour
      ``depth(v) mod 2``. A PE forwards the running sum of its last child as
      it arrives, so it receives (its last child's colour) while it sends (its
      own colour): the two colours differ, and two colours suffice.
    * Every router takes part in *events* in time order: ``receive`` the
      stream of each child in turn (``east -> ramp``), ``send`` its own
      (``ramp -> west``), then ``forward`` the streams of later PEs that pass
      over it (``east -> west``), in the order their receivers take them.
      Each event is one configuration of the router on the stream's colour.
    * A stream ends with a control wavelet when some router on its path has a
      further configuration on that colour, so that the router advances to it.

    The paper's implementations use up to three colours in 1D; under this
    model two suffice, because a PE only ever sends on one colour while it
    receives on the other.

    Returns a JSON-ready dict: ``colours`` used, per PE its ``parent``,
    ``colour``, ``control_wavelet`` and the ordered ``configurations``
    (``colour``, ``rx``, ``tx``, ``stream`` = the sending PE), and
    ``max_configurations_per_colour`` (the WSE holds four per colour;
    beyond that a teardown is needed).

    Examples
    --------
    >>> from wafercoll import wafer
    >>> plan = wafer.routing_plan(wafer.chain_tree(4))
    >>> sorted(plan)
    ['P', 'colours', 'depth', 'format', 'max_configurations_per_colour', 'pes',
    'version']
    """
    p = np.asarray(parent)
    metrics = tree_metrics(p)  # validates
    n = p.size
    depth = np.zeros(n, dtype=np.int64)
    for v in range(1, n):
        depth[v] = depth[p[v]] + 1
    colour = (depth % 2).astype(int)
    children: list[list[int]] = [[] for _ in range(n)]
    for v in range(1, n):
        children[int(p[v])].append(v)
    configs: list[list[dict[str, Any]]] = [[] for _ in range(n)]

    def add(u: int, event: str, rx: str, tx: str, stream: int) -> None:
        configs[u].append(
            {
                "event": event,
                "colour": int(colour[stream]),
                "rx": rx,
                "tx": tx,
                "stream": stream,
            }
        )

    # Pre-order walk gives the time order of streams at every router: the
    # receiver takes its children left to right, and a forwarded stream
    # passes after everything inside the subtrees it jumps over.
    for v in range(n):
        for c in children[v]:
            add(v, "receive", "east", "ramp", c)
        if v > 0:
            add(v, "send", "ramp", "west", v)
    forwards: list[list[int]] = [[] for _ in range(n)]
    for x in range(1, n):
        for u in range(int(p[x]) + 1, x):
            forwards[u].append(x)
    for u in range(n):
        for x in forwards[u]:
            add(u, "forward", "east", "west", x)
    # Control wavelets: does any router on x's path have a later
    # configuration on x's colour?
    control = [False] * n
    for u in range(n):
        seen_last: dict[int, int] = {}
        for i, cfg in enumerate(configs[u]):
            seen_last[cfg["colour"]] = i
        for i, cfg in enumerate(configs[u]):
            if i < seen_last[cfg["colour"]]:
                control[cfg["stream"]] = True
    per_colour = [
        max((sum(1 for c in cfgs if c["colour"] == k) for k in (0, 1)), default=0)
        for cfgs in configs
    ]
    pes = [
        {
            "pe": v,
            "parent": int(p[v]),
            "colour": int(colour[v]) if v else None,
            "control_wavelet": bool(control[v]),
            "configurations": configs[v],
        }
        for v in range(n)
    ]
    used = sorted({int(colour[v]) for v in range(1, n)})
    return {
        "format": "wafercoll-wafer-routing",
        "version": 1,
        "P": n,
        "depth": metrics.depth,
        "colours": used,
        "max_configurations_per_colour": max(per_colour, default=0),
        "pes": pes,
    }


def routing_plan_json(parent: Any, indent: int | None = 1) -> str:
    """:func:`routing_plan` as JSON text.

    Examples
    --------
    >>> import json
    >>> from wafercoll import wafer
    >>> text = wafer.routing_plan_json(wafer.chain_tree(4), indent=None)
    >>> json.loads(text) == wafer.routing_plan(wafer.chain_tree(4))
    True
    """
    return json.dumps(routing_plan(parent), indent=indent)
