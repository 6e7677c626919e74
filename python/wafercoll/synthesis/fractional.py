"""Fractional spanning-tree packings by linear programming.

An allreduce over a spanning tree reduces towards the root along every tree
edge and broadcasts back along the same edge in the other direction; chunks
stream through (:func:`wafercoll.kit.trees_program`). With trees
``T_1 .. T_K`` carrying shares ``x_k`` of the vector, the link from ``u`` to
``v`` carries ``sum_{k: uv in T_k} x_k S`` bytes, so in the fluid limit the
time is ``S / (sum_k x_k)`` where the shares obey ``sum_{k: e in T_k} x_k <=
bw(e)`` on every edge: a *fractional spanning-tree packing*. Its optimum
(Nash-Williams and Tutte; on a mesh or torus, edges over ``p - 1``) meets the
allreduce's reception bound (:mod:`wafercoll.bounds`): on an ``n x n`` mesh
both are ``(n^2 - 1) S / (2 n (n - 1) bw)``.

:func:`pack_spanning_trees` solves the packing as a linear program with
SciPy's HiGHS by column generation: the restricted master LP over the trees
found so far gives a dual price per edge; a minimum spanning tree under those
prices (Kruskal, NetworkX) is the tree whose addition improves the packing
most, and the loop stops when no tree costs less than 1. This is the approach
of ForestColl (Zhao et al., 2024), written here from the packing theorem, not
from their code. Its optimum is the rate the equal-rate packings of
:mod:`wafercoll.synthesis.equal_rate` aim for.

Examples
--------
>>> import wafercoll as wc
>>> pack = wc.synthesis.pack_spanning_trees(wc.topology.mesh(4, 4))
>>> round(pack.rate / 1e9, 3)  # GB/s of the packing: 24 edges / 15
1.6
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from .._util import fields_equal
from ..topology import Topology

__all__ = [
    "MAX_NODES",
    "TreePacking",
    "center_parents",
    "pack_spanning_trees",
    "undirected_edges",
]

#: Largest topology the packing LP takes (nodes).
MAX_NODES = 4096
#: Column-generation rounds before giving up on optimality.
MAX_ROUNDS = 2000
#: Trees whose share is below this fraction of the total are dropped.
MIN_SHARE = 0.001


@dataclasses.dataclass(frozen=True)
class TreePacking:
    """A fractional packing of spanning trees.

    Attributes
    ----------
    parents : ndarray, shape (K, p)
        One parent array per tree, rooted at its centre.
    shares : ndarray, shape (K,)
        Bandwidth of each tree in bytes per second (sum: :attr:`rate`).
    rate : float
        Bytes per second the packing moves through every tree edge in each
        direction at once: the allreduce takes ``size / rate`` in the fluid
        limit.
    optimal : bool
        Whether column generation proved the packing optimal (before small
        trees were dropped).
    upper : float
        The LP's proven upper limit on any packing's rate (equal to ``rate``
        when optimal and nothing was dropped).
    rounds : int
        Column-generation rounds.
    """

    __eq__ = fields_equal  # array fields compare whole

    parents: np.ndarray
    shares: np.ndarray
    rate: float
    optimal: bool
    upper: float
    rounds: int


def undirected_edges(topology: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected edges ``(u, v)``, ``u < v``, between endpoints, and capacities.

    The capacity of an edge is the smaller of its two directions' bandwidths
    (a tree edge carries the reduce one way and the broadcast the other).
    """
    if topology.num_nodes != topology.num_endpoints:
        raise ValueError(
            f"synthesis packs trees over endpoints joined by direct links; "
            f"{topology.name} has hidden routers"
        )
    links = topology.links
    src, dst = links["src"].astype(np.int64), links["dst"].astype(np.int64)
    bw = links["bandwidth_Bps"].astype(np.float64)
    cap: dict[tuple[int, int], list[float]] = {}
    for u, v, b in zip(src.tolist(), dst.tolist(), bw.tolist(), strict=True):
        if u == v:
            continue
        key = (min(u, v), max(u, v))
        both = cap.setdefault(key, [0.0, 0.0])
        both[0 if u < v else 1] += b
    keys = sorted(k for k, (a, b) in cap.items() if a > 0 and b > 0)
    if not keys:
        raise ValueError(f"{topology.name} has no pair of links in both directions")
    e = np.asarray(keys, dtype=np.int64)
    c = np.asarray([min(cap[k]) for k in keys], dtype=np.float64)
    return e[:, 0], e[:, 1], c


def center_parents(n: int, us: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Parent array of the tree with edges ``(us, vs)`` rooted at its centre."""
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(us.tolist(), vs.tolist(), strict=True))
    root = min(nx.center(g))
    par = np.full(n, -1, dtype=np.int64)
    for a, b in nx.bfs_edges(g, root):
        par[b] = a
    return par


def pack_spanning_trees(
    topology: Topology, *, min_share: float = MIN_SHARE, seed: int = 0
) -> TreePacking:
    """The best fractional packing of spanning trees into a topology.

    Parameters
    ----------
    topology : Topology
        Every node an endpoint (mesh, torus, ring, line, custom).
    min_share : float
        Trees with less than this fraction of the rate are dropped and the
        LP re-solved without them (fewer, larger streams).
    seed : int
        Ties between equally priced edges are broken at random with this seed.

    Returns
    -------
    TreePacking

    Raises
    ------
    ValueError
        For hidden routers, a disconnected topology or more than
        :data:`MAX_NODES` nodes.

    Examples
    --------
    >>> import wafercoll as wc
    >>> packing = wc.synthesis.pack_spanning_trees(wc.ring(4))
    >>> round(packing.rate, 6)
    1333333333.333333
    """
    import networkx as nx
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, csr_matrix
    from scipy.sparse.csgraph import minimum_spanning_tree

    if not isinstance(topology, Topology):
        raise TypeError(
            f"topology must be a wafercoll.Topology, got {type(topology).__name__}"
        )
    n = topology.num_endpoints
    if n > MAX_NODES:
        raise ValueError(
            f"synthesis takes topologies of up to {MAX_NODES} nodes, not {n}"
        )
    if not 0.0 <= float(min_share) < 1.0:
        raise ValueError(f"min_share must be in [0, 1), got {min_share}")
    us, vs, cap = undirected_edges(topology)
    m = len(us)
    g = nx.Graph()
    g.add_nodes_from(range(n))
    for i in range(m):
        g.add_edge(int(us[i]), int(vs[i]), index=i)
    if n > 1 and not nx.is_connected(g):
        raise ValueError(f"{topology.name} is not connected: no spanning tree")
    if n == 1:
        return TreePacking(np.full((1, 1), -1), np.ones(1), np.inf, True, np.inf, 0)
    rng = np.random.default_rng(seed)
    scale = float(cap.max())
    c = cap / scale
    columns: list[np.ndarray] = []  # edge-index sets of the trees

    lookup = {(int(a), int(b)): i for i, (a, b) in enumerate(zip(us, vs, strict=True))}

    def add_tree(weights: np.ndarray) -> float:
        # Every spanning tree has n - 1 edges, so adding 1 to every weight
        # keeps the minimum tree and keeps zero prices out of the sparse
        # matrix (where a zero is no edge).
        w = weights + 1.0 + rng.random(m) * 1e-9
        t = minimum_spanning_tree(coo_matrix((w, (us, vs)), shape=(n, n))).tocoo()
        idx = np.sort(
            [
                lookup[(min(a, b), max(a, b))]
                for a, b in zip(t.row.tolist(), t.col.tolist(), strict=True)
            ]
        )
        columns.append(idx)
        return float(weights[idx].sum())

    def solve(cols: list[np.ndarray]) -> Any:
        rows = np.concatenate(cols)
        ks = np.repeat(np.arange(len(cols)), [len(x) for x in cols])
        a = csr_matrix((np.ones(rows.size), (rows, ks)), shape=(m, len(cols)))
        return linprog(
            -np.ones(len(cols)), A_ub=a, b_ub=c, bounds=(0, None), method="highs"
        )

    add_tree(np.zeros(m))
    optimal = False
    rounds = 0
    res = solve(columns)
    upper = np.inf
    for rounds in range(1, MAX_ROUNDS + 1):  # noqa: B007 - reported
        y = -np.asarray(res.ineqlin.marginals)
        # Any tree T has sum_{e in T} y_e >= min: the LP dual is feasible
        # after dividing y by that minimum, a proven upper limit.
        price = add_tree(y)
        if price > 0:
            upper = min(upper, float(y @ c) / price)
        if price >= 1.0 - 1e-9 or upper <= -float(res.fun) * (1.0 + 1e-9):
            columns.pop()
            optimal = True
            break
        res = solve(columns)
    x = np.asarray(res.x)
    keep = x >= min_share * x.sum()
    keep |= x == x.max()  # never drop every tree
    if not keep.all():
        columns = [col for col, k in zip(columns, keep, strict=True) if k]
        res = solve(columns)
        x = np.asarray(res.x)
    live = x > 1e-12
    cols = [col for col, k in zip(columns, live, strict=True) if k]
    shares = x[live] * scale
    parents = np.stack([center_parents(n, us[col], vs[col]) for col in cols])
    return TreePacking(
        parents, shares, float(shares.sum()), optimal, float(upper) * scale, rounds
    )
