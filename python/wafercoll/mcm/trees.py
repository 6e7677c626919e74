"""Spanning trees of the mesh AllReduce algorithms: MultiTree, DBTree and TTO.

A tree is a parent array over the mesh's node ids: ``parent[root] == -1``,
``parent[v] == -2`` for a node the tree leaves out, otherwise the node ``v``
sends its partial sum to in the reduce-scatter (and receives the result from
in the allgather).

* :func:`multitree` is MultiTree's greedy construction (Huang et al., ISCA
  2021) exactly as the reference code states it (recovered details, section
  2.3): one tree per node, the trees take turns adding one edge each, a
  directed link serves one tree per construction step, parents in the order
  they joined, neighbours in North, South, West, East order. The reference
  ends a step as soon as the *last* tree of a round fails to add an edge;
  ``rule="clean"`` ends it only when a whole round adds nothing. ``sort=True``
  (the MCM paper's setting) reorders the roots after every round by the
  reference code's corner "distance" ``|row - r_c| + |r_c - c_c|`` (which is
  not the Manhattan distance; kept as the reference computes it).
* :func:`double_binary_tree` is NCCL's double binary tree over ranks
  ``0 .. n-1`` (recovered details, section 2.5; NVIDIA/nccl ``trees.cc``):
  the second tree mirrors the first for even ``n`` and shifts it for odd ``n``.
* :func:`tto_trees` are the three edge-disjoint trees of TTO (the paper,
  Section V-C and Algorithm 2), rooted at the top-left, bottom-right and
  top-right corners; the bottom-left corner holds no data. On a mesh with
  one row or column the two trees rooted at its ends (Section V-A, Fig. 5).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._util import as_int
from ..kit.trees import tree_depths

__all__ = [
    "MultiTree",
    "TTOTrees",
    "double_binary_tree",
    "multitree",
    "tree_depths",
    "tto_trees",
]

_MAX_MULTITREE_NODES = 1024


def _neighbours(m: int, n: int) -> list[list[int]]:
    """Neighbour lists in North, South, West, East order (section 2.2)."""
    out = []
    for v in range(m * n):
        r, c = divmod(v, n)
        nb = []
        if r > 0:
            nb.append(v - n)
        if r < m - 1:
            nb.append(v + n)
        if c > 0:
            nb.append(v - 1)
        if c < n - 1:
            nb.append(v + 1)
        out.append(nb)
    return out


@dataclass(frozen=True)
class MultiTree:
    """MultiTree's trees on a mesh.

    Attributes
    ----------
    rows, cols : int
    parents : ndarray, shape (N, N)
        ``parents[r]`` is the parent array of the tree rooted at node ``r``.
    times : ndarray, shape (N, N)
        ``times[r, v]``: the construction step at which ``v`` joined tree
        ``r`` (-1 for the root).
    steps : int
        ``T``, the number of construction steps: the reduce-scatter sends
        along edge ``(v, parent)`` at step ``T - 1 - times[r, v]`` and the
        allgather at step ``times[r, v]``.
    rule, sort : str, bool
        The options used.
    """

    rows: int
    cols: int
    parents: np.ndarray
    times: np.ndarray
    steps: int
    rule: str
    sort: bool


def multitree(
    rows: int, cols: int, *, sort: bool = True, rule: str = "reference"
) -> MultiTree:
    """MultiTree's greedy trees on a ``rows x cols`` mesh (section 2.3).

    Parameters
    ----------
    rows, cols : int
        Mesh size (at most 1024 nodes).
    sort : bool
        Reorder the roots after every round by the reference code's priority
        (default True, as in the MCM paper's runs).
    rule : {"reference", "clean"}
        When a construction step ends (see the module docstring).

    Returns
    -------
    MultiTree

    Examples
    --------
    On 2x2 every tree spans the mesh in T = 2 steps: the tree rooted at 0
    takes its neighbours 1 and 2 at step 0, then 3 below 2 at step 1.

    >>> import wafercoll as wc
    >>> mt = wc.mcm.multitree(2, 2)
    >>> mt.steps, mt.parents[0].tolist(), mt.times[0].tolist()
    (2, [-1, 0, 0, 2], [-1, 0, 0, 1])
    >>> m = wc.topology.mesh(2, 2)
    >>> s = wc.build("mesh_multitree_allreduce", topology=m, size_bytes=4)
    >>> wc.simulate(s, m, wc.mcm.FIGURE_TIMESTEPS).cycles  # T + T timesteps
    4.0

    On 3x3 the reference rule takes one step more than the clean one:

    >>> wc.mcm.multitree(3, 3).steps, wc.mcm.multitree(3, 3, rule="clean").steps
    (6, 5)
    """
    m = as_int(rows, "rows", 1)
    n = as_int(cols, "cols", 1)
    if m * n > _MAX_MULTITREE_NODES:
        raise ValueError(
            f"multitree: rows * cols = {m * n} exceeds {_MAX_MULTITREE_NODES}"
        )
    if rule not in ("reference", "clean"):
        raise ValueError(f"rule must be 'reference' or 'clean', got {rule!r}")
    parents, times, T = _multitree_cached(m, n, bool(sort), rule)
    return MultiTree(m, n, parents.copy(), times.copy(), T, rule, bool(sort))


@lru_cache(maxsize=64)
def _multitree_cached(
    m: int, n: int, sort: bool, rule: str
) -> tuple[np.ndarray, np.ndarray, int]:
    N = m * n
    nbr = _neighbours(m, n)
    parents = np.full((N, N), -2, dtype=np.int64)
    times = np.full((N, N), -1, dtype=np.int64)
    # per tree as plain rows (a bytearray, a list): the scan below reads
    # single items, which numpy serves slowly
    in_tree = [bytearray(N) for _ in range(N)]
    join_pos = [[0] * N for _ in range(N)]  # position in the joining order
    members: list[list[int]] = [[r] for r in range(N)]
    for r in range(N):
        parents[r, r] = -1
        in_tree[r][r] = 1
    # Nodes that may still have a neighbour outside the tree, in joining order:
    # skipping the others does not change which parent the scan finds first.
    frontier: list[list[int]] = [[r] for r in range(N)]
    corners = [(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)]
    prio = [
        max(abs(v // n - cr) + abs(cr - cc) for cr, cc in corners) for v in range(N)
    ]
    sorted_order = [r for _, r in sorted(zip(prio, range(N), strict=True))][::-1]
    order = list(range(N))
    complete = [N == 1] * N
    done = sum(complete)
    t = 0
    while done < N:
        used: set[tuple[int, int]] = set()
        snap = [len(members[r]) for r in range(N)]
        turns = 0
        round_added = False
        while True:
            r = order[turns % N]
            added = False
            if not complete[r]:
                tree_in = in_tree[r]
                pos = join_pos[r]
                keep = []
                for p in frontier[r]:
                    if added:
                        keep.append(p)
                        continue
                    outside = False
                    joined_before = pos[p] < snap[r]
                    for c in nbr[p]:
                        if tree_in[c]:
                            continue
                        outside = True
                        if joined_before and (p, c) not in used:
                            used.add((p, c))
                            tree_in[c] = 1
                            pos[c] = len(members[r])
                            members[r].append(c)
                            parents[r, c] = p
                            times[r, c] = t
                            added = True
                            break
                    if outside or added:
                        keep.append(p)
                # the node that joined is the latest: the frontier stays in
                # joining order
                if added:
                    keep.append(members[r][-1])
                frontier[r] = keep
            turns += 1
            round_added |= added
            if not complete[r] and len(members[r]) == N:
                complete[r] = True
                done += 1
                if done == N:
                    break
            if turns % N != 0:
                continue
            if sort:
                order = sorted_order
            if rule == "reference":
                if not added:
                    break
            else:
                if not round_added:
                    break
                round_added = False
        t += 1
    return parents, times, t


def _nccl_btree(n: int) -> np.ndarray:
    """Parent array of NCCL's first binary tree over ranks 0 .. n-1."""
    parent = np.full(n, -1, dtype=np.int64)
    for rank in range(1, n):
        bit = rank & -rank
        up = (rank ^ bit) | (bit << 1)
        parent[rank] = rank ^ bit if up >= n else up
    return parent


def double_binary_tree(n: int) -> tuple[np.ndarray, np.ndarray]:
    """NCCL's two binary trees over ranks ``0 .. n-1`` (section 2.5).

    Tree 0: rank 0 is the root with the single child ``bit / 2``; any other
    rank's parent is ``(rank XOR bit) OR 2 bit`` (``rank XOR bit`` when that
    is >= n), ``bit`` its lowest set bit. Tree 1 mirrors it (``r -> n-1-r``)
    when ``n`` is even and shifts it (``r -> r+1 mod n``) when ``n`` is odd.

    Returns
    -------
    tuple of ndarray
        The two parent arrays (-1 at the roots).

    Examples
    --------
    On 8 ranks tree 0 is 0 - 4 - {2, 6}, 2 - {1, 3}, 6 - {5, 7}; tree 1
    mirrors it, so every rank is inner in at most one tree:

    >>> import wafercoll as wc
    >>> t0, t1 = wc.mcm.double_binary_tree(8)
    >>> t0.tolist()
    [-1, 2, 4, 2, 0, 6, 4, 6]
    >>> t1.tolist()
    [1, 3, 1, 7, 5, 3, 5, -1]
    >>> sorted(set(t0[t0 >= 0].tolist())), sorted(set(t1[t1 >= 0].tolist()))
    ([0, 2, 4, 6], [1, 3, 5, 7])

    On 5 ranks tree 1 is tree 0 shifted by one rank:

    >>> [a.tolist() for a in wc.mcm.double_binary_tree(5)]
    [[-1, 2, 4, 2, 0], [1, -1, 3, 0, 3]]
    """
    p = as_int(n, "n", 1)
    t0 = _nccl_btree(p)
    t1 = np.full(p, -1, dtype=np.int64)
    for r in range(p):
        if p % 2 == 0:
            q = t0[p - 1 - r]
            t1[r] = -1 if q < 0 else p - 1 - q
        else:
            q = t0[(r - 1) % p]
            t1[r] = -1 if q < 0 else (q + 1) % p
    return t0, t1


@dataclass(frozen=True)
class TTOTrees:
    """TTO's trees on a mesh.

    Attributes
    ----------
    parents : ndarray, shape (k, N)
        Parent arrays (three on a 2D mesh, two on a line); -2 marks a node the
        tree leaves out.
    roots : tuple of int
    excluded : int or None
        The node that holds no data (the bottom-left corner), None on a line.
    height : int
        The largest depth over the trees.
    """

    parents: np.ndarray
    roots: tuple[int, ...]
    excluded: int | None
    height: int


def tto_trees(rows: int, cols: int) -> TTOTrees:
    """TTO's disjoint trees (the paper, Algorithm 2; numbering from 0).

    On a ``rows x cols`` mesh with both sides >= 2:

    * root ``0`` (top-left): column 0 first, then every row to the right;
    * root ``N - 1`` (bottom-right): the bottom row first, then every column
      upwards;
    * root ``cols - 1`` (top-right): breadth-first search from the root over
      the links the first two trees leave free in the reduce direction (up in
      columns ``1 ..``, right in rows ``.. rows - 2``), neighbours in North,
      South, West, East order; it spans every node but the excluded corner.

    The excluded node ``(rows - 1) * cols`` (the bottom-left corner) relays in
    the first two trees. In the reduce-scatter every tree sends child to
    parent, and the three trees use disjoint directed links; in the allgather
    the reverse links. On a line (one
    row or one column) the two trees rooted at its ends (Fig. 5).

    Examples
    --------
    On 3x3 (nodes 0 1 2 / 3 4 5 / 6 7 8) the corner 6 holds no data:

    >>> import wafercoll as wc
    >>> t = wc.mcm.tto_trees(3, 3)
    >>> t.roots, t.excluded, t.height
    ((0, 8, 2), 6, 4)
    >>> t.parents.tolist()
    [[-1, 0, 1, 0, 3, 4, 3, 6, 7],
     [3, 4, 5, 6, 7, 8, 7, 8, -1],
     [1, 2, -1, 4, 5, 2, -2, 4, 5]]

    The three trees send over distinct directed links, 8 + 8 + 7 of the 24
    of the mesh:

    >>> links = [(v, p) for tree in t.parents.tolist() for v, p in enumerate(tree)]
    >>> links = [(v, p) for v, p in links if p >= 0]
    >>> len(links), len(set(links))
    (23, 23)

    On a line, the two chains towards its ends:

    >>> wc.mcm.tto_trees(1, 4).parents.tolist()
    [[-1, 0, 1, 2], [1, 2, 3, -1]]
    """
    m = as_int(rows, "rows", 1)
    n = as_int(cols, "cols", 1)
    N = m * n
    if N < 2:
        raise ValueError("tto needs at least 2 nodes")
    if m == 1 or n == 1:
        ids = np.arange(N)
        a = np.where(ids == 0, -1, ids - 1)
        b = np.where(ids == N - 1, -1, ids + 1)
        parents = np.stack([a, b]).astype(np.int64)
        return TTOTrees(parents, (0, N - 1), None, N - 1)
    excluded = (m - 1) * n
    a = np.full(N, -2, dtype=np.int64)
    b = np.full(N, -2, dtype=np.int64)
    for v in range(N):
        r, c = divmod(v, n)
        a[v] = v - n if c == 0 else v - 1
        b[v] = v + 1 if r == m - 1 else v + n
    a[0] = -1
    b[N - 1] = -1
    root_c = n - 1
    # Reduce-direction links left free: (r, c) -> (r - 1, c) for c >= 1 and
    # (r, c) -> (r, c + 1) for r <= m - 2. BFS from the root walks them
    # backwards: from p, the children are (r + 1, c) (c >= 1) and (r, c - 1)
    # (r <= m - 2).
    c_par = np.full(N, -2, dtype=np.int64)
    c_par[root_c] = -1
    queue = deque([root_c])
    while queue:
        p = queue.popleft()
        r, c = divmod(p, n)
        for ch in (p - n, p + n, p - 1, p + 1):  # N, S, W, E
            if not 0 <= ch < N or c_par[ch] != -2:
                continue
            cr, cc = divmod(ch, n)
            if ch == p + n and c >= 1:  # child below sends up
                ok = True
            elif ch == p - 1 and cr == r and r <= m - 2:  # child left sends right
                ok = True
            else:
                ok = False
            if ok:
                c_par[ch] = p
                queue.append(ch)
    parents = np.stack([a, b, c_par])
    height = int(max(tree_depths(p).max() for p in parents))
    return TTOTrees(parents, (0, N - 1, root_c), excluded, height)
