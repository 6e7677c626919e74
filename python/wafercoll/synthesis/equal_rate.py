"""Equal-rate spanning-tree packings, and the choice of how many trees.

The fractional optimum ``R*`` of :func:`~wafercoll.synthesis.pack_spanning_trees`
(bytes/s) is turned into ``m`` spanning trees in ``k`` copies of the graph:
edge ``e`` of capacity ``c_e`` gets ``floor(k c_e / u)`` copies, ``u`` the
smallest capacity, and every tree streams at ``u / k``. The packing moves
``m u / k`` bytes/s; ``m = floor(k R* / u)``, so its *loss* ``R* k / (m u)``
is 1 whenever ``k R* / u`` is a whole number (8x8 mesh: ``R* / u = 16 / 9``,
9 copies hold 16 trees exactly).

More copies approximate ``R*`` better but put more trees on every link. In
the packet simulator a tree's pipeline then waits longer at each hop: on a
link shared by ``k`` trees, first come first served, a packet waits about
``(k - 1) / 2`` packets of the others. The time of an allreduce over the
packing is modelled as

``T(m, k) = S / (m u / k) + 2 d ((k + 1) / 2) t``

with ``d`` the trees' depth and ``t`` the time of one packet
(``min(packet_bytes, S / m) / u``): the fluid time plus a pipeline of ``2 d``
hops, up and down. :func:`choose_copies` takes the ``(m, k)`` with the least
``T`` among the packings with fewer than :data:`MAX_COPIES` copies. On the
MCM paper's Table II network the model is within 1 % of the simulated time
for the 8x8 and 9x9 meshes and the 8x8 torus at 16 and 64 MiB (README,
"Synthesis").

Examples
--------
>>> import wafercoll as wc
>>> pack = wc.synthesis.equal_rate_packing(wc.topology.mesh(4, 4), copies=5)
>>> pack.trees, pack.copies, round(pack.loss, 6)  # 24 edges / 15 = 8 / 5
(8, 5, 1.0)
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._util import as_int, fields_equal, remember
from ..kit.trees import tree_depths
from ..topology import Topology
from . import forests
from .fractional import TreePacking, pack_spanning_trees, undirected_edges

__all__ = [
    "MAX_COPIES",
    "EqualRatePacking",
    "choose_copies",
    "copy_options",
    "equal_rate_packing",
    "optimum_ratio",
    "rooted_copies",
    "startup_model",
    "topology_key",
]

#: Most copies of the graph a packing uses: a link then carries at most this
#: many trees.
MAX_COPIES = 16
#: Packet size of the start-up model when no network is given: the MCM
#: paper's Table II packet (``wafercoll.machines.get("mcm_table_ii")``).
DEFAULT_PACKET_BYTES = 8192


@dataclasses.dataclass(frozen=True)
class EqualRatePacking:
    """``trees`` spanning trees of one rate in ``copies`` copies of a graph.

    Attributes
    ----------
    parents : ndarray, shape (trees, p)
        One parent array per tree, rooted where its growth started (a
        centre of the graph).
    trees, copies : int
        ``m`` and ``k``.
    rate : float
        Bytes per second the packing moves: ``trees * unit / copies``.
    optimum : float
        The fractional optimum ``R*`` it approximates.
    unit : float
        The smallest edge capacity (bytes/s); edge ``e`` has
        ``floor(copies * c_e / unit)`` copies.
    depth : int
        The deepest tree's depth.
    """

    __eq__ = fields_equal  # array fields compare whole

    parents: np.ndarray
    trees: int
    copies: int
    rate: float
    optimum: float
    unit: float
    depth: int

    @property
    def loss(self) -> float:
        """``optimum / rate``: 1 for an exact packing."""
        return self.optimum / self.rate


_FRACTIONAL: dict[tuple[Any, ...], TreePacking] = {}
_RATIOS: dict[tuple[Any, ...], float] = {}
_RADII: dict[tuple[Any, ...], int] = {}
#: Most copies the edge-count bound is tried with before the LP decides.
_PROOF_COPIES = 32


def topology_key(topology: Topology) -> tuple[Any, ...]:
    """A hashable key of a topology's graph: what the packings depend on.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.synthesis import equal_rate
    >>> a = equal_rate.topology_key(wc.topology.mesh(3, 3))
    >>> a == equal_rate.topology_key(wc.topology.mesh(3, 3))
    True
    """
    links = topology.links
    return (
        topology.num_endpoints,
        topology.num_nodes,
        links["src"].astype(np.int64).tobytes(),
        links["dst"].astype(np.int64).tobytes(),
        links["bandwidth_Bps"].astype(np.float64).tobytes(),
    )


def optimum_ratio(topology: Topology) -> float:
    """``R* / u``: the fractional optimum in trees of the smallest capacity.

    On a graph whose capacities are multiples of the smallest, the edge
    copies over ``p - 1`` (the partition into single nodes) bound it. When
    :func:`~wafercoll.synthesis.forests.partition_spanning_trees` packs that
    many trees, the bound is the optimum (meshes, rings); when the bound
    needs more than 32 copies, a packing that reaches its floor with at most
    :data:`MAX_COPIES` copies makes it the ratio used (an upper limit then,
    within ``1 / k`` of the packings this module builds: large tori, whose
    LP takes minutes). Otherwise column generation proves the optimum
    (``TreePacking.upper``), snapped to the nearest fraction with a
    denominator below the node count when within 1e-6 (the optimum is a
    crossing count over a number of parts minus one, Nash-Williams and
    Tutte).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.synthesis import equal_rate
    >>> equal_rate.optimum_ratio(wc.topology.mesh(8, 8)) == 16 / 9
    True
    """
    from fractions import Fraction

    us, vs, cap = undirected_edges(topology)
    unit = float(cap.min())
    n = topology.num_endpoints
    key = topology_key(topology)
    if key in _RATIOS:
        return _RATIOS[key]
    whole = np.round(cap / unit)
    ratio = None
    if n > 1 and np.allclose(cap / unit, whole):
        # The partition into single nodes bounds the packing by the edge
        # copies over n - 1; a packing that reaches it proves it optimal,
        # with no LP.
        ub = Fraction(int(whole.sum()), n - 1)
        if ub.denominator <= _PROOF_COPIES:
            k, m = ub.denominator, ub.numerator
        else:  # the best packing with few copies: its floor, at the fewest copies
            k = max(
                range(1, MAX_COPIES + 1),
                key=lambda kk: (math.floor(kk * ub) / kk, -kk),
            )
            m = math.floor(k * ub)
        try:
            forests.partition_spanning_trees(
                n,
                us,
                vs,
                whole.astype(np.int64) * k,
                m,
                roots=_center_roots(n, us, vs, m),
            )
            ratio = float(ub)
        except ValueError:
            ratio = None
    if ratio is None:
        frac = _fractional(topology)
        ratio = (frac.upper if np.isfinite(frac.upper) else frac.rate) / unit
        if np.allclose(cap / unit, whole):
            snap = Fraction(ratio).limit_denominator(max(n - 1, 1))
            if abs(float(snap) - ratio) <= 1e-6 * ratio:
                ratio = float(snap)
    return remember(_RATIOS, key, ratio, 64)


def _fractional(topology: Topology) -> TreePacking:
    key = topology_key(topology)
    if key in _FRACTIONAL:
        return _FRACTIONAL[key]
    return remember(_FRACTIONAL, key, pack_spanning_trees(topology), 16)


def _radius(topology: Topology) -> int:
    """The graph's radius in hops (the depth the trees reach), once per graph."""
    import networkx as nx

    key = topology_key(topology)
    if key not in _RADII:
        us, vs, _ = undirected_edges(topology)
        g = nx.Graph()
        g.add_edges_from(zip(us.tolist(), vs.tolist(), strict=True))
        remember(_RADII, key, int(nx.radius(g)), 64)
    return _RADII[key]


def copy_options(
    topology: Topology, max_copies: int = MAX_COPIES
) -> list[tuple[int, int]]:
    """The ``(trees, copies)`` pairs worth trying, fewest copies first.

    For each ``k`` up to ``max_copies``, ``m = floor(k R* / u)``; a pair is
    kept when its rate beats every pair with fewer copies.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.synthesis.copy_options(wc.topology.mesh(8, 8))  # R* / u = 16 / 9
    [(1, 1), (3, 2), (5, 3), (7, 4), (16, 9)]
    """
    k_max = as_int(max_copies, "max_copies", 1, 1 << 10)
    ratio = optimum_ratio(topology)
    out: list[tuple[int, int]] = []
    best = 0.0
    for k in range(1, k_max + 1):
        m = int(math.floor(k * ratio + 1e-9))
        if m >= 1 and m / k > best + 1e-12:
            out.append((m, k))
            best = m / k
    return out


def startup_model(
    topology: Topology,
    size_bytes: int,
    trees: int,
    copies: int,
    *,
    packet_bytes: int = DEFAULT_PACKET_BYTES,
    depth: int | None = None,
) -> float:
    """Modelled allreduce time of an equal-rate packing (module docstring).

    Parameters
    ----------
    topology : Topology
    size_bytes : int
    trees, copies : int
        ``m`` and ``k``.
    packet_bytes : int
        The network's packet (0: a message is one packet).
    depth : int, optional
        The trees' depth; default the graph's radius (what
        :func:`~wafercoll.synthesis.forests.lower_depths` reaches on meshes
        and tori).

    Returns
    -------
    float
        Seconds.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.synthesis.startup_model(wc.topology.mesh(8, 8), 16 << 20, 16, 9)
    >>> round(t * 1e3, 3)  # ms, at the mesh's default 1 GB/s links
    10.093
    """
    _, _, cap = undirected_edges(topology)
    unit = float(cap.min())
    size = as_int(size_bytes, "size_bytes", 1)
    if depth is None:
        depth = _radius(topology)
    per_tree = size / trees
    packet = per_tree if not packet_bytes else min(float(packet_bytes), per_tree)
    return size * copies / (trees * unit) + depth * (copies + 1) * packet / unit


def choose_copies(
    topology: Topology,
    size_bytes: int,
    *,
    packet_bytes: int = DEFAULT_PACKET_BYTES,
    max_copies: int = MAX_COPIES,
) -> tuple[int, int]:
    """The ``(trees, copies)`` of :func:`copy_options` with the least modelled time.

    Examples
    --------
    >>> import wafercoll as wc
    >>> mesh = wc.topology.mesh(8, 8)
    >>> wc.synthesis.choose_copies(mesh, 256 << 20)
    (16, 9)
    >>> wc.synthesis.choose_copies(mesh, 1 << 20)
    (5, 3)
    """
    options = copy_options(topology, max_copies)
    return min(
        options,
        key=lambda mk: startup_model(
            topology, size_bytes, mk[0], mk[1], packet_bytes=packet_bytes
        ),
    )


def rooted_copies(topology: Topology, max_copies: int = MAX_COPIES) -> int:
    """Copies for the re-rooted collectives: many trees, at the optimum.

    A rank that is a leaf of a tree sends that tree's share of every other
    rank's block over one link, so reduce-scatter and allgather want more
    trees than the allreduce: the largest multiple of the fewest exact copies
    up to ``max_copies``, else ``max_copies``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.synthesis import equal_rate
    >>> equal_rate.rooted_copies(wc.topology.mesh(9, 9))  # 9 / 5 exact
    15
    """
    k_max = as_int(max_copies, "max_copies", 1, 1 << 10)
    ratio = optimum_ratio(topology)
    exact = next(
        (k for k in range(1, k_max + 1) if abs(k * ratio - round(k * ratio)) < 1e-9),
        None,
    )
    return k_max if exact is None else exact * (k_max // exact)


def _center_roots(n: int, us: np.ndarray, vs: np.ndarray, m: int) -> list[int]:
    import networkx as nx

    g = nx.Graph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(us.tolist(), vs.tolist(), strict=True))
    centre = sorted(nx.center(g))
    return [centre[i % len(centre)] for i in range(m)]


def equal_rate_packing(
    topology: Topology,
    *,
    copies: int | None = None,
    trees: int | None = None,
    seed: int = 0,
) -> EqualRatePacking:
    """``trees`` spanning trees of one rate in ``copies`` copies of the graph.

    Parameters
    ----------
    topology : Topology
        Every node an endpoint (mesh, torus, ring, line, custom).
    copies : int, optional
        ``k``; default the fewest copies that reach the fractional optimum
        within :data:`MAX_COPIES` (else the best rate there).
    trees : int, optional
        ``m``; default ``floor(k R* / u)``, the most the copies can hold.
    seed : int
        Ties between equally used edges are broken at random with this seed.

    Returns
    -------
    EqualRatePacking

    Raises
    ------
    ValueError
        For hidden routers, a disconnected topology, or more trees than the
        copies hold.

    Examples
    --------
    >>> import wafercoll as wc
    >>> p = wc.synthesis.equal_rate_packing(wc.topology.mesh(3, 3))
    >>> p.trees, p.copies, p.depth  # 12 edges / 8 = 3 / 2
    (3, 2, 3)
    """
    if not isinstance(topology, Topology):
        raise TypeError(
            f"topology must be a wafercoll.Topology, got {type(topology).__name__}"
        )
    us, vs, cap = undirected_edges(topology)
    n = topology.num_endpoints
    unit = float(cap.min())
    ratio = optimum_ratio(topology)
    if copies is None:
        options = copy_options(topology)
        k = next(
            (kk for mm, kk in options if mm / kk >= ratio * (1 - 1e-9)),
            options[-1][1],
        )
    else:
        k = as_int(copies, "copies", 1, 1 << 10)
    most = int(math.floor(k * ratio + 1e-9))
    m = most if trees is None else as_int(trees, "trees", 1, max(most, 1))
    if n == 1:
        par = np.full((m, 1), -1, dtype=np.int64)
        return EqualRatePacking(par, m, k, np.inf, np.inf, unit, 0)
    mult = np.floor(k * cap / unit + 1e-9).astype(np.int64)
    roots = _center_roots(n, us, vs, m)
    while True:
        try:
            sets = forests.partition_spanning_trees(
                n, us, vs, mult, m, roots=roots, seed=seed
            )
            break
        except ValueError:
            if trees is not None or m == 1:
                raise
            m -= 1  # the ratio was an upper limit that these copies miss
            roots = roots[:m]
    sets = forests.lower_depths(n, us, vs, sets, roots)
    parents = np.stack(
        [
            forests.tree_parents(n, us, vs, t, r)[0]
            for t, r in zip(sets, roots, strict=True)
        ]
    )
    depth = max(int(tree_depths(p).max()) for p in parents)
    return EqualRatePacking(parents, m, k, m * unit / k, ratio * unit, unit, depth)
