"""Synthesis: allreduce schedules built by packing spanning trees into a topology.

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
most, and the loop stops when no tree costs less than 1. Trees with tiny
shares are dropped and the LP re-solved over the rest, each tree is rooted at
its centre (the shallowest root: short pipelines), and :func:`synthesize`
turns the result into an ordinary schedule, verified before it is returned.
This is the approach of ForestColl (Zhao et al., 2024), written here from
the packing theorem, not from their code.

The schedule is registered as ``synth_treepack_allreduce``, so the advisor
(:func:`wafercoll.advise`) ranks it beside the papers' algorithms.

Examples
--------
>>> import wafercoll as wc
>>> topo = wc.topology.mesh(4, 4)
>>> pack = wc.synthesis.pack_spanning_trees(topo)
>>> round(pack.rate / 1e9, 3)  # GB/s of the packing: 24 edges / 15
1.6
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ._util import as_int, fields_equal
from .algorithms import register_algorithm
from .analysis import verify
from .kit.blocks import split_bytes
from .kit.trees import tree_depths, trees_program
from .schedule import Schedule
from .topology import Topology

__all__ = ["TreePacking", "pack_spanning_trees", "synthesize"]

#: Largest topology the packing LP takes (nodes).
MAX_NODES = 4096
#: Column-generation rounds before giving up on optimality.
MAX_ROUNDS = 2000
#: Trees whose share is below this fraction of the total are dropped.
MIN_SHARE = 0.001
#: Default bytes per chunk of the largest tree's stream: TTO's chunk
#: (``wafercoll.mcm.machine.TTO_CHUNK_BYTES``, the MCM artifact's 96 KiB), so
#: that the two compare at equal chunk sizes.
DEFAULT_CHUNK_BYTES = 98304


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


def _edges(topology: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _center_parents(n: int, us: np.ndarray, vs: np.ndarray) -> np.ndarray:
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
    us, vs, cap = _edges(topology)
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

    def add_tree(weights: np.ndarray) -> float:
        jitter = rng.random(m) * 1e-9
        for _, _, d in g.edges(data=True):
            d["w"] = float(weights[d["index"]] + jitter[d["index"]])
        t = nx.minimum_spanning_tree(g, weight="w", algorithm="kruskal")
        idx = np.sort([d["index"] for _, _, d in t.edges(data=True)])
        columns.append(idx)
        return float(weights[idx].sum())

    def solve(cols: list[np.ndarray]) -> Any:
        a = np.zeros((m, len(cols)))
        for k, idx in enumerate(cols):
            a[idx, k] = 1.0
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
        if price >= 1.0 - 1e-9:
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
    parents = np.stack([_center_parents(n, us[col], vs[col]) for col in cols])
    return TreePacking(
        parents, shares, float(shares.sum()), optimal, float(upper) * scale, rounds
    )


#: Most transfers the default chunking makes (more chunks only add transfers
#: under dataflow forwarding, which streams a chunk packet by packet).
MAX_DEFAULT_TRANSFERS = 200_000


def _chunk_count(size: int, largest_share: float, chunk_bytes: int) -> int:
    return max(1, int(round(size * largest_share / chunk_bytes)))


_PACKINGS: dict[tuple[Any, ...], TreePacking] = {}


def _cached_packing(topology: Topology) -> TreePacking:
    """:func:`pack_spanning_trees` with the defaults, once per topology."""
    links = topology.links
    key = (
        topology.name,
        topology.num_endpoints,
        links["src"].tobytes(),
        links["dst"].tobytes(),
        links["bandwidth_Bps"].tobytes(),
    )
    if key not in _PACKINGS:
        if len(_PACKINGS) >= 16:
            _PACKINGS.pop(next(iter(_PACKINGS)))
        _PACKINGS[key] = pack_spanning_trees(topology)
    return _PACKINGS[key]


@register_algorithm(
    "synth_treepack_allreduce",
    "allreduce",
    label="Tree packing",
    source="original: fractional spanning-tree packing by LP (HiGHS) with column "
    "generation; the packing theorem of Nash-Williams and Tutte (1961), as used by "
    "ForestColl (Zhao et al., 2024)",
    summary="synthesized: spanning trees packed by linear programming, chunks "
    "split in proportion to each tree's rate, reduce up and broadcast down at once",
    parameters={"chunk_bytes": None},
    max_ranks=MAX_NODES,
)
def treepack_allreduce(
    ranks: int, size_bytes: int, *, topology: Any = None, chunk_bytes: Any = None
) -> Schedule:
    """Allreduce over LP-packed spanning trees of ``topology`` (module docstring)."""
    if topology is None:
        raise ValueError(
            "synth_treepack_allreduce needs a topology (the trees are packed into it)"
        )
    if ranks != topology.num_endpoints:
        raise ValueError(
            f"synth_treepack_allreduce runs on every endpoint: ranks must be "
            f"{topology.num_endpoints}, got {ranks}"
        )
    size = as_int(size_bytes, "size_bytes", 1)
    chunk = DEFAULT_CHUNK_BYTES if chunk_bytes is None else chunk_bytes
    chunk = as_int(chunk, "chunk_bytes", 1)
    pack = _cached_packing(topology)
    frac = pack.shares / pack.rate
    K = len(frac)
    # Bytes per tree in proportion to its share (largest remainders).
    raw = frac * size
    per_tree = np.floor(raw).astype(np.int64)
    short = size - int(per_tree.sum())
    per_tree[np.argsort(-(raw - per_tree))[:short]] += 1
    C = _chunk_count(size, float(frac.max()), chunk)
    if chunk_bytes is None:  # cap the transfers: 2 (p - 1) per tree and chunk
        C = min(C, max(4, MAX_DEFAULT_TRANSFERS // (2 * max(ranks - 1, 1) * K)))
    C = max(min(C, int(per_tree.min()) or 1), 1)
    blocks = np.zeros((C, K), dtype=np.int64)
    for k in range(K):
        blocks[:, k] = split_bytes(int(per_tree[k]), C)
    depth = max(int(tree_depths(p).max()) for p in pack.parents)
    return trees_program(
        pack.parents,
        blocks.ravel(),
        name=f"synth_treepack({topology.name}, {size} B, {K} trees, depth "
        f"{depth}, {C} chunks)",
    )


def synthesize(
    topology: Topology,
    collective: str = "allreduce",
    size_bytes: int = 1 << 24,
    network: Any = None,
    *,
    chunk_bytes: int | None = None,
) -> Schedule:
    """A synthesized, verified schedule of a collective on a topology.

    Parameters
    ----------
    topology : Topology
        Every node an endpoint (mesh, torus, ring, line, custom).
    collective : {"allreduce"}
        The collective (tree packing builds allreduces).
    size_bytes : int
    network : NetworkModel, optional
        When given, the chunk size defaults to 4 of its packets (at least
        :data:`DEFAULT_CHUNK_BYTES`).
    chunk_bytes : int, optional
        Bytes per chunk of the largest tree's stream. Default: 96 KiB, but
        no more chunks than keep the schedule within
        :data:`MAX_DEFAULT_TRANSFERS` transfers (under dataflow forwarding a
        chunk streams packet by packet, so larger chunks cost nothing; under
        ``dependencies="complete"`` give smaller ones for a deep pipeline).

    Returns
    -------
    Schedule
        Verified (the verifier raised otherwise).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.synthesize(wc.ring(4), size_bytes=4096)
    >>> s.collective, wc.verify(s).ok
    ('allreduce', True)
    """
    if collective != "allreduce":
        raise ValueError(
            f"synthesize builds allreduce schedules (tree packing); got {collective!r}"
        )
    if chunk_bytes is None and network is not None and network.packet_bytes:
        chunk_bytes = max(DEFAULT_CHUNK_BYTES, 4 * int(network.packet_bytes))
    s = treepack_allreduce(
        topology.num_endpoints, size_bytes, topology=topology, chunk_bytes=chunk_bytes
    )
    verify(s)
    return s
