"""Reduce-scatter and allgather over an equal-rate packing's trees, re-rooted.

A reduce-scatter leaves block ``r`` at rank ``r``; over a spanning tree
rooted at ``r`` the block is reduced up the tree, one pass over every edge,
child to parent. The packing's trees (:mod:`wafercoll.synthesis.equal_rate`)
re-rooted at every rank give ``p m`` rooted trees; the bytes of block ``r``
are shared among its ``m`` trees by a linear program (SciPy's HiGHS) that
minimises the most loaded directed link, relative to its bandwidth:

``min z  s.t.  sum_{(r, j) : l up-edge of T_j rooted at r} y_{r j} <= z c_l,
sum_j y_{r j} = b_r``

with ``b_r`` the bytes of block ``r``; the fluid time is ``z``. An allgather
is the same program with every edge taken parent to child. On a mesh the
corner's two links carry ``(p - 1) / p`` of the vector either way, which is
the collective's bound, and the LP spreads the rest so that no other link
carries more.

Examples
--------
>>> import wafercoll as wc
>>> mesh = wc.topology.mesh(3, 3)
>>> pack = wc.synthesis.equal_rate_packing(mesh)
>>> parents, share, z = wc.synthesis.rooted_shares(mesh, pack, "reduce_scatter", 9000)
>>> int(share.sum()), round(z * 1e9, 1)  # bytes; ns: corner 8000 B over 2 links
(9000, 4000.0)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_int
from ..kit.blocks import split_bytes, split_weighted
from ..topology import Topology
from .equal_rate import EqualRatePacking
from .forests import breadth_first

__all__ = ["endpoint_neighbours", "reroot", "rooted_shares", "shortest_path_trees"]


def reroot(parent: np.ndarray, root: int) -> np.ndarray:
    """The same tree (a parent array) with its edges pointing towards ``root``.

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll.synthesis import reroot
    >>> reroot(np.array([-1, 0, 1]), 2).tolist()
    [1, 2, -1]
    """
    parent = np.asarray(parent)
    n = parent.size
    adj: list[list[int]] = [[] for _ in range(n)]
    for v in np.flatnonzero(parent >= 0).tolist():
        adj[v].append(int(parent[v]))
        adj[int(parent[v])].append(v)
    par, depth = breadth_first(adj, root)
    par[depth < 0] = -2  # ranks the tree leaves out
    return par


def rooted_shares(
    topology: Topology,
    packing: Any,
    phase: str,
    size_bytes: int,
    *,
    spray: bool = False,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Rooted trees and their bytes for a reduce-scatter, allgather or allreduce.

    Parameters
    ----------
    topology : Topology
        The topology the trees span.
    packing : EqualRatePacking or list of list of array_like
        A packing, whose trees are re-rooted at every rank, or for each rank
        ``r`` a list of parent arrays rooted at ``r`` (e.g.
        :func:`shortest_path_trees`).
    phase : {"reduce_scatter", "allgather", "allreduce"}
        Which directions of the tree edges carry the block: up, down, or
        both (each tree reduces its share to its root and broadcasts it
        back).
    size_bytes : int
        The vector; block ``r`` is rank ``r``'s share, cut as evenly as bytes
        allow (:func:`wafercoll.kit.split_bytes`).
    spray : bool
        Take each message's link loads as packet spraying spreads them
        (:meth:`~wafercoll.Topology.spray_shares`, for a network with
        ``spray=True``) instead of along the topology's route.

    Returns
    -------
    parents : ndarray, shape (K, p)
        The rooted trees that carry bytes, rank by rank (tree ``k``'s root
        owns its bytes), ``K <= p m``.
    share : ndarray of int, shape (K,)
        Bytes of each tree; they sum to block ``r`` over rank ``r``'s trees.
    fluid_s : float
        The LP's most loaded link, in seconds: the fluid time.

    Examples
    --------
    >>> import wafercoll as wc
    >>> ring = wc.ring(4)
    >>> pack = wc.synthesis.equal_rate_packing(ring)
    >>> parents, share, z = wc.synthesis.rooted_shares(ring, pack, "allgather", 400)
    >>> parents.shape[1], int(share.sum())
    (4, 400)
    """
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix, hstack

    if phase not in ("reduce_scatter", "allgather", "allreduce"):
        raise ValueError(
            f"phase must be 'reduce_scatter', 'allgather' or 'allreduce', got {phase!r}"
        )
    size = as_int(size_bytes, "size_bytes", 1)
    p = topology.num_endpoints
    links = topology.links
    routes: dict[tuple[int, int], tuple[list[int], list[float]]] = {}

    def route(a: int, b: int) -> tuple[list[int], list[float]]:
        # The links a message from a to b crosses, with the share of its
        # bytes on each: its route (one link on a direct-link graph,
        # switches and all on a fabric), or where spraying spreads it.
        if (a, b) not in routes:
            if spray:
                ids, frac = topology.spray_shares(a, b)
                routes[(a, b)] = (ids.tolist(), frac.tolist())
            else:
                ids = topology.route(a, b).tolist()
                routes[(a, b)] = (ids, [1.0] * len(ids))
        return routes[(a, b)]

    bw = links["bandwidth_Bps"].astype(np.float64)
    blocks = np.asarray(split_bytes(size, p), dtype=np.int64)
    if isinstance(packing, EqualRatePacking):
        per_rank = [[reroot(t, r) for t in packing.parents] for r in range(p)]
    else:
        per_rank = [[np.asarray(t, dtype=np.int64) for t in ts] for ts in packing]
        if len(per_rank) != p or any(
            not ts or any((t == -1).sum() != 1 or t[r] != -1 for t in ts)
            for r, ts in enumerate(per_rank)
        ):
            raise ValueError(
                f"trees must be a packing or one non-empty list of trees rooted at "
                f"rank r for each of the {p} ranks"
            )
    trees = []
    owner: list[int] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for r in range(p):
        for par in per_rank[r]:
            child = np.flatnonzero(par >= 0).tolist()
            for v in child:
                ends = []
                if phase != "allgather":  # up the tree
                    ends.append((v, int(par[v])))
                if phase != "reduce_scatter":  # down the tree
                    ends.append((int(par[v]), v))
                for a, b in ends:
                    ids, frac = route(a, b)
                    rows.extend(ids)
                    vals.extend(frac)
            cols.extend([len(trees)] * (len(rows) - len(cols)))
            trees.append(par)
            owner.append(r)
    K, L = len(trees), len(bw)
    load = csr_matrix((vals, (rows, cols)), shape=(L, K))
    # Variables: y (bytes / scale) per tree, then z = time * bw_max / scale;
    # link l: load_l(y) <= z * bw_l / bw_max.
    scale = float(blocks.max()) or 1.0
    a_ub = hstack([load, csr_matrix(-bw.reshape(-1, 1) / bw.max())]).tocsr()
    own = np.asarray(owner)
    a_eq = np.zeros((p, K + 1))
    a_eq[own, np.arange(K)] = 1.0
    res = linprog(
        np.r_[np.zeros(K), 1.0],
        A_ub=a_ub,
        b_ub=np.zeros(L),
        A_eq=a_eq,
        b_eq=blocks / scale,
        bounds=(0, None),
        method="highs",
    )
    if res.status != 0:
        raise RuntimeError(f"the share LP failed: {res.message}")
    frac = np.maximum(np.asarray(res.x[:K]), 0.0)
    share = np.zeros(K, dtype=np.int64)
    for r in range(p):
        mine = np.flatnonzero(own == r)
        part = frac[mine]
        share[mine] = split_weighted(
            int(blocks[r]), part if part.sum() > 0 else np.ones(mine.size)
        )
    keep = share > 0
    parents = np.stack(trees)[keep]
    fluid = float(res.x[K]) * scale / float(bw.max())
    return parents, share[keep], fluid


def endpoint_neighbours(topology: Topology) -> list[list[int]]:
    """Each endpoint's neighbours: one link, or one switch, away.

    On a graph of endpoints these are its links' far ends. With switches
    (hidden routers), two endpoints are neighbours when the route between
    them crosses one switch (two hops): the GPUs of one NVSwitch node, the
    GPUs of one rail. Trees over these neighbours send every message through
    at most one switch, as ForestColl's switch-free logical topology does.
    Where one switch does not join every endpoint (a rail network without
    NVSwitch, a fat tree), the limit rises to the fewest hops that does.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.synthesis import rooted
    >>> rail = wc.topology.rail_optimized(2, 2, nvswitches=1)
    >>> [sorted(x) for x in rooted.endpoint_neighbours(rail)]  # node, rail peers
    [[1, 2], [0, 3], [0, 3], [1, 2]]
    """
    n = topology.num_endpoints
    if topology.num_nodes == n:
        from .fractional import undirected_edges

        us, vs, _ = undirected_edges(topology)
        out: list[list[int]] = [[] for _ in range(n)]
        for u, v in zip(us.tolist(), vs.tolist(), strict=True):
            out[u].append(v)
            out[v].append(u)
        return out
    hops = np.asarray(topology.hops_matrix())[:n, :n]
    for limit in np.unique(hops[hops >= 2]).tolist():
        # The fewest switches that still join every endpoint: one on NVSwitch
        # nodes and rail networks, more where no switch joins a pair.
        near = (hops >= 1) & (hops <= limit)
        out = [np.flatnonzero(near[v]).tolist() for v in range(n)]
        if (breadth_first(out, 0)[1] >= 0).all():
            return out
    raise ValueError(f"{topology.name} is not connected")


def shortest_path_trees(
    topology: Topology, per_rank: int = 4, *, seed: int = 0
) -> list:
    """Shortest-path (breadth-first) spanning trees rooted at every rank.

    Each rank gets ``per_rank`` trees that differ in how ties between
    equally near parents are broken: in the first, a node hangs off the
    nearer neighbour whose route to it is widest (on a rail network: across
    the rail first, then over NVLink inside each node, so every block enters
    a node once); in the others at random, with ``seed``. Every node hangs
    off a neighbour one hop nearer the root, so every tree's depth is the
    root's eccentricity, the least any tree rooted there has. These are
    the trees of the short pipelines that small collectives want; the LP of
    :func:`rooted_shares` balances the links over them.

    Parameters
    ----------
    topology : Topology
        Neighbours as :func:`endpoint_neighbours` says (one link or one
        switch apart).
    per_rank : int
        Trees per rank, 1 to 64.
    seed : int

    Returns
    -------
    list of list of ndarray
        For each rank, its trees as parent arrays.

    Examples
    --------
    >>> import wafercoll as wc
    >>> trees = wc.synthesis.shortest_path_trees(wc.topology.mesh(3, 3), 2)
    >>> len(trees), len(trees[0]), int(wc.kit.tree_depths(trees[0][0]).max())
    (9, 2, 4)
    """
    k = as_int(per_rank, "per_rank", 1, 64)
    n = topology.num_endpoints
    nbr = endpoint_neighbours(topology)
    bw = topology.links["bandwidth_Bps"].astype(np.float64)

    widths: dict[tuple[int, int], float] = {}

    def width(u: int, v: int) -> float:
        if (u, v) not in widths:
            widths[(u, v)] = float(bw[topology.route(u, v)].min())
        return widths[(u, v)]

    rng = np.random.default_rng(seed)
    out = []
    for r in range(n):
        dist = breadth_first(nbr, r)[1]
        if (dist < 0).any():
            raise ValueError(f"{topology.name} is not connected")
        mine = []
        for i in range(k):
            par = np.full(n, -1, dtype=np.int64)
            for v in range(n):
                if v != r:
                    nearer = [u for u in nbr[v] if dist[u] == dist[v] - 1]
                    if i == 0:  # the widest route in (ties: the first)
                        par[v] = max(nearer, key=lambda u, v=v: width(u, v))
                    else:
                        par[v] = nearer[int(rng.integers(len(nearer)))]
            mine.append(par)
        out.append(mine)
    return out
