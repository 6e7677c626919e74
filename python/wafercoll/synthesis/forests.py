"""Integral tree packings: ``m`` spanning trees in ``k`` copies of a graph.

A fractional spanning-tree packing (:mod:`wafercoll.synthesis.fractional`)
may need a hundred trees of unequal rates. Trees that share a link first come,
first served then do not get the rates the packing gave them, and the
simulated time stays 10-20 % above the packing's own fluid time. An *integral*
packing of ``m`` edge-disjoint spanning trees in the multigraph where edge
``e`` has ``mult[e]`` parallel copies gives ``m`` trees of one rate: on a
graph whose edges all carry ``c`` bytes/s and ``mult = k`` everywhere, every
tree streams at ``c / k`` and the packing moves ``m c / k`` bytes/s.

By Nash-Williams and Tutte such a packing exists exactly when every partition
of the nodes into ``q`` parts is crossed by at least ``m (q - 1)`` edge
copies; on a mesh or torus the fractional optimum is ``|E| / (p - 1)``, so
``m / k`` equal to it (8x8 mesh: 16 trees in 9 copies; 9x9: 9 in 5) is
reachable exactly.

:func:`partition_spanning_trees` finds the trees with the matroid partition
algorithm (Edmonds, 1965): forests grow breadth first from their roots
(shallow trees from the start), and each edge copy that no forest takes
directly is placed by the shortest augmenting path of exchanges between
forests (edge ``x`` enters forest ``i``, pushing out an edge ``y`` of the
cycle it closes, which moves on to another forest). Breadth-first search over
exchanges keeps the forests acyclic along the path (the shortest-path
property of matroid partition). :func:`lower_depths` then exchanges edges
between pairs of trees while that lowers the sum of squared depths from the
roots, so the pipelines through the trees are short.

Examples
--------
>>> import numpy as np
>>> from wafercoll.synthesis import forests
>>> us, vs = np.array([0, 1, 2, 0]), np.array([1, 2, 3, 3])  # a 4-cycle
>>> trees = forests.partition_spanning_trees(4, us, vs, np.full(4, 2), 2)
>>> [len(t) for t in trees]
[3, 3]
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

__all__ = ["breadth_first", "lower_depths", "partition_spanning_trees", "tree_parents"]


class _Forest:
    """One forest: adjacency, and parent pointers rebuilt when it changes."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.adj: list[dict[int, int]] = [{} for _ in range(n)]
        self.edges: set[int] = set()
        self._par: np.ndarray | None = None

    def add(self, e: int, u: int, v: int) -> None:
        self.adj[u][v] = e
        self.adj[v][u] = e
        self.edges.add(e)
        self._par = None

    def remove(self, e: int, u: int, v: int) -> None:
        del self.adj[u][v]
        del self.adj[v][u]
        self.edges.discard(e)
        self._par = None

    def _rooted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if self._par is None:
            n = self.n
            par = np.full(n, -1, dtype=np.int64)
            pe = np.full(n, -1, dtype=np.int64)
            depth = np.full(n, -1, dtype=np.int64)
            comp = np.full(n, -1, dtype=np.int64)
            for r in range(n):
                if depth[r] >= 0:
                    continue
                depth[r] = 0
                comp[r] = r
                queue = [r]
                for x in queue:
                    for y, e in self.adj[x].items():
                        if depth[y] < 0:
                            depth[y] = depth[x] + 1
                            par[y], pe[y], comp[y] = x, e, r
                            queue.append(y)
            self._par, self._pe, self._depth, self._comp = par, pe, depth, comp
        return self._par, self._pe, self._depth, self._comp

    def path(self, u: int, v: int) -> list[int] | None:
        """Edges on the forest's path from ``u`` to ``v``; None if apart."""
        par, pe, depth, comp = self._rooted()
        if comp[u] != comp[v]:
            return None
        out: list[int] = []
        while depth[u] > depth[v]:
            out.append(int(pe[u]))
            u = int(par[u])
        while depth[v] > depth[u]:
            out.append(int(pe[v]))
            v = int(par[v])
        while u != v:
            out.append(int(pe[u]))
            out.append(int(pe[v]))
            u, v = int(par[u]), int(par[v])
        return out


def _grow(
    forests: list[_Forest],
    us: np.ndarray,
    vs: np.ndarray,
    left: np.ndarray,
    roots: list[int],
    rng: np.random.Generator,
) -> None:
    """Breadth-first growth of every forest, a layer each in turn."""
    n = forests[0].n
    nbr: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for e, (u, v) in enumerate(zip(us.tolist(), vs.tolist(), strict=True)):
        nbr[u].append((v, e))
        nbr[v].append((u, e))
    seen = [{r} for r in roots]
    front = [[r] for r in roots]
    while any(front):
        for i, f in enumerate(forests):
            nxt = []
            for x in front[i]:
                # the least used edge copy first, ties at random
                for y, e in sorted(nbr[x], key=lambda t: (-left[t[1]], rng.random())):
                    if y in seen[i] or left[e] == 0:
                        continue
                    seen[i].add(y)
                    nxt.append(y)
                    f.add(e, int(us[e]), int(vs[e]))
                    left[e] -= 1
            front[i] = nxt


def _augment(
    forests: list[_Forest], us: np.ndarray, vs: np.ndarray, left: np.ndarray
) -> bool:
    """Place one more edge copy by the shortest exchange path; False if none."""
    m = len(forests)
    # A node of the search is (edge, forest it leaves; -1 for a spare copy).
    pred: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {}
    queue: deque[tuple[int, int]] = deque()
    for e in np.flatnonzero(left > 0).tolist():
        pred[(e, -1)] = None
        queue.append((e, -1))
    while queue:
        node = queue.popleft()
        e, src = node
        u, v = int(us[e]), int(vs[e])
        for j in range(m):
            f = forests[j]
            if j == src or e in f.edges:
                continue
            path = f.path(u, v)
            if path is None:  # e joins two trees of forest j: apply the path
                into = j
                cur: tuple[int, int] | None = node
                while cur is not None:
                    x, out = cur
                    forests[into].add(x, int(us[x]), int(vs[x]))
                    if out < 0:
                        left[x] -= 1
                        break
                    forests[out].remove(x, int(us[x]), int(vs[x]))
                    back = pred[cur]
                    assert back is not None
                    cur, into = back[0], out
                return True
            for y in path:
                if (y, j) not in pred:
                    pred[(y, j)] = (node, j)
                    queue.append((y, j))
    return False


def partition_spanning_trees(
    n: int,
    us: Any,
    vs: Any,
    mult: Any,
    m: int,
    *,
    roots: Any = None,
    seed: int = 0,
) -> list[set[int]]:
    """``m`` edge-disjoint spanning trees of a multigraph, as edge-index sets.

    Parameters
    ----------
    n : int
        Nodes ``0 .. n - 1``.
    us, vs : array_like of int
        Edge ``e`` joins ``us[e]`` and ``vs[e]`` (undirected, no loops).
    mult : array_like of int
        Copies of each edge: at most ``mult[e]`` of the trees contain ``e``.
    m : int
        Trees wanted.
    roots : sequence of int, optional
        Where each tree's breadth-first growth starts (default node 0).
    seed : int
        Ties between equally used edges are broken at random with this seed.

    Returns
    -------
    list of set of int
        ``m`` sets of ``n - 1`` edge indices, each a spanning tree.

    Raises
    ------
    ValueError
        When the multigraph has no ``m`` edge-disjoint spanning trees (some
        partition of the nodes is crossed by too few edge copies).

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll.synthesis import forests
    >>> us, vs = np.array([0, 0, 1]), np.array([1, 2, 2])  # a triangle
    >>> forests.partition_spanning_trees(3, us, vs, np.ones(3, int), 1)[0] <= {0, 1, 2}
    True
    """
    us = np.asarray(us, dtype=np.int64)
    vs = np.asarray(vs, dtype=np.int64)
    left = np.asarray(mult, dtype=np.int64).copy()
    if m < 1:
        raise ValueError(f"m must be at least 1, got {m}")
    if int(left.sum()) < m * (n - 1):
        raise ValueError(
            f"{m} spanning trees need {m * (n - 1)} edge copies; the multigraph has "
            f"{int(left.sum())}"
        )
    rng = np.random.default_rng(seed)
    root_list = [0] * m if roots is None else [int(r) for r in roots]
    forests = [_Forest(n) for _ in range(m)]
    _grow(forests, us, vs, left, root_list, rng)
    while min(len(f.edges) for f in forests) < n - 1:
        if not _augment(forests, us, vs, left):
            raise ValueError(
                f"the multigraph has no {m} edge-disjoint spanning trees "
                "(a partition of its nodes is crossed by too few edge copies)"
            )
    return [set(f.edges) for f in forests]


def breadth_first(adj: Any, root: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents and depths of a breadth-first search from ``root``.

    Parameters
    ----------
    adj : sequence of iterables of int
        Each node's neighbours.
    root : int

    Returns
    -------
    parent, depth : ndarray of int
        ``parent[root] = -1``; nodes not reached have parent and depth -1.

    Examples
    --------
    >>> from wafercoll.synthesis import forests
    >>> par, depth = forests.breadth_first([[1], [0, 2], [1]], 0)
    >>> par.tolist(), depth.tolist()
    ([-1, 0, 1], [0, 1, 2])
    """
    n = len(adj)
    par = np.full(n, -1, dtype=np.int64)
    depth = np.full(n, -1, dtype=np.int64)
    depth[root] = 0
    queue = [root]
    for x in queue:
        for y in adj[x]:
            if depth[y] < 0:
                depth[y] = depth[x] + 1
                par[y] = x
                queue.append(y)
    return par, depth


def _depths(adj: list[set[int]], root: int) -> np.ndarray:
    return breadth_first(adj, root)[1]


def _on_path(adj: list[set[int]], a: int, b: int, u: int, v: int) -> bool:
    """Whether the tree path from ``a`` to ``b`` crosses edge ``{u, v}``."""
    prev = {a: -1}
    queue = [a]
    for x in queue:
        if x == b:
            break
        for y in adj[x]:
            if y not in prev:
                prev[y] = x
                queue.append(y)
    x = b
    while x != a:
        px = prev[x]
        if (x == u and px == v) or (x == v and px == u):
            return True
        x = px
    return False


def _swap(adj: list[set[int]], add: tuple[int, int], rem: tuple[int, int]) -> None:
    adj[add[0]].add(add[1])
    adj[add[1]].add(add[0])
    adj[rem[0]].discard(rem[1])
    adj[rem[1]].discard(rem[0])


def lower_depths(
    n: int,
    us: Any,
    vs: Any,
    trees: list[set[int]],
    roots: Any,
    *,
    sweeps: int = 8,
) -> list[set[int]]:
    """Exchange edges between trees while their depths from the roots fall.

    A node ``x`` at depth ``d`` in tree ``i`` with a graph neighbour ``y`` at
    depth below ``d - 1`` moves under ``y``: tree ``i`` takes edge ``xy``
    from a tree ``j`` whose path between ``x`` and ``x``'s old parent crosses
    ``xy``, and gives ``j`` its old parent edge, so both stay spanning trees
    and every edge keeps its number of trees. An exchange is kept when the
    sum of squared depths of the two trees falls and neither gets deeper than
    the deeper of them was.

    Parameters
    ----------
    n : int
    us, vs : array_like of int
        The graph's edges, as for :func:`partition_spanning_trees`.
    trees : list of set of int
        Spanning trees as edge-index sets (changed in place and returned).
    roots : sequence of int
        Each tree's root.
    sweeps : int
        Passes over every tree and node at most.

    Returns
    -------
    list of set of int

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll.synthesis import forests
    >>> import wafercoll as wc
    >>> from wafercoll.synthesis import fractional
    >>> us, vs, _ = fractional.undirected_edges(wc.topology.mesh(3, 3))
    >>> trees = forests.partition_spanning_trees(9, us, vs, [2] * 12, 3)
    >>> def height(ts):
    ...     return max(int(forests.tree_parents(9, us, vs, t, 4)[1].max()) for t in ts)
    >>> before = height(trees)
    >>> height(forests.lower_depths(9, us, vs, trees, [4, 4, 4])) <= before
    True
    """
    us = np.asarray(us, dtype=np.int64)
    vs = np.asarray(vs, dtype=np.int64)
    index = {(int(u), int(v)): e for e, (u, v) in enumerate(zip(us, vs, strict=True))}
    index.update({(v, u): e for (u, v), e in list(index.items())})
    nbr: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(us.tolist(), vs.tolist(), strict=True):
        nbr[u].append(v)
        nbr[v].append(u)
    adj = []
    for t in trees:
        a: list[set[int]] = [set() for _ in range(n)]
        for e in t:
            a[int(us[e])].add(int(vs[e]))
            a[int(vs[e])].add(int(us[e]))
        adj.append(a)
    holders: dict[int, set[int]] = {}
    for i, t in enumerate(trees):
        for e in t:
            holders.setdefault(e, set()).add(i)
    roots = [int(r) for r in roots]
    depth = [_depths(adj[i], roots[i]) for i in range(len(trees))]

    def cost(d: np.ndarray) -> int:
        return int((d * d).sum())

    for _ in range(sweeps):
        moved = False
        for i in range(len(trees)):
            for x in np.argsort(-depth[i], kind="stable").tolist():
                d = depth[i]
                if d[x] <= 1:
                    break
                parent = next(y for y in adj[i][x] if d[y] == d[x] - 1)
                f = index[(x, parent)]
                for y in nbr[x]:
                    if d[y] + 1 >= d[x]:
                        continue
                    e = index[(x, y)]
                    done = False
                    for j in sorted(holders.get(e, ())):
                        if j == i or f in trees[j]:
                            continue
                        if not _on_path(adj[j], x, parent, x, y):
                            continue
                        _swap(adj[i], (x, y), (x, parent))
                        _swap(adj[j], (x, parent), (x, y))
                        di, dj = _depths(adj[i], roots[i]), _depths(adj[j], roots[j])
                        worst = max(int(depth[i].max()), int(depth[j].max()))
                        if (
                            cost(di) + cost(dj) < cost(depth[i]) + cost(depth[j])
                            and max(int(di.max()), int(dj.max())) <= worst
                        ):
                            depth[i], depth[j] = di, dj
                            trees[i].add(e)
                            trees[i].discard(f)
                            trees[j].add(f)
                            trees[j].discard(e)
                            holders[e].discard(j)
                            holders[e].add(i)
                            holders[f].discard(i)
                            holders[f].add(j)
                            moved = done = True
                            break
                        _swap(adj[i], (x, parent), (x, y))
                        _swap(adj[j], (x, y), (x, parent))
                    if done:
                        break
        if not moved:
            break
    return trees


def tree_parents(
    n: int, us: Any, vs: Any, tree: set[int], root: int
) -> tuple[np.ndarray, np.ndarray]:
    """Parent array and depths of a spanning tree (edge-index set) from a root.

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll.synthesis import forests
    >>> par, depth = forests.tree_parents(3, [0, 1], [1, 2], {0, 1}, 1)
    >>> par.tolist(), depth.tolist()
    ([1, -1, 1], [1, 0, 1])
    """
    us = np.asarray(us, dtype=np.int64)
    vs = np.asarray(vs, dtype=np.int64)
    adj: list[set[int]] = [set() for _ in range(n)]
    for e in tree:
        adj[int(us[e])].add(int(vs[e]))
        adj[int(vs[e])].add(int(us[e]))
    par, depth = breadth_first(adj, root)
    if (depth < 0).any():
        raise ValueError(f"edge set of {len(tree)} edges does not span {n} nodes")
    return par, depth
