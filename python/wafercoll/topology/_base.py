"""Machines that schedules run on: endpoints, directed links and routing.

A topology has ``num_nodes`` nodes. Nodes ``0 .. num_endpoints - 1`` are
*endpoints* (PEs, cores, chiplets, processes): they hold data and are the ranks
of a schedule. Any further nodes are *hidden routers* that forward traffic but
hold none. Nodes are joined by directed links, each with a bandwidth in bytes
per second and a latency in seconds; a bidirectional wire is two links.

Routing is deterministic and oblivious: :meth:`Topology.route` returns the link
ids a message from one endpoint to another travels over, always the same for
the same pair.

Families: :func:`line`, :func:`ring`, :func:`mesh`, :func:`torus` (node
``r * cols + c`` at row ``r`` and column ``c``; routes go along the row first,
then along the column, each the shorter way round a wrapped dimension with ties
going the positive way), :func:`cluster` (processes, sockets, nodes and NICs),
:func:`wormhole_n150` and :func:`custom` (arbitrary links; shortest paths or
explicit routes).

Examples
--------
>>> import wafercoll as wc
>>> t = wc.topology.torus(4, 4, bandwidth_Bps=4e9, latency_s=1e-9)
>>> t.hops(0, 10)
4
>>> t.route(0, 2).tolist()
[0, 1]
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _core
from .._util import as_int
from .._util import as_real as _as_real

__all__ = [
    "Topology",
    "cluster",
    "custom",
    "line",
    "mesh",
    "ring",
    "torus",
]


def recorded(fn: Any) -> Any:
    """Decorate a topology factory so that its topologies pickle as its call."""

    @functools.wraps(fn)
    def factory(*args: Any, **kwargs: Any) -> Topology:
        topo = fn(*args, **kwargs)
        topo._recipe = (fn.__module__, fn.__qualname__, args, kwargs)
        return topo

    return factory


def _rebuild(
    module: str, qualname: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Topology:
    """Call the factory a pickled topology came from."""
    import importlib

    fn = importlib.import_module(module)
    for part in qualname.split("."):
        fn = getattr(fn, part)
    return fn(*args, **kwargs)


def _as_size(value: Any, name: str, minimum: int, maximum: int) -> int:
    """Check an integer size against ``[minimum, maximum]``."""
    v = as_int(value, name, minimum)
    if v > maximum:
        raise ValueError(f"{name} = {v} exceeds the limit of {maximum} nodes")
    return v


def _per_link(value: Any, name: str, num_links: int) -> np.ndarray:
    """Broadcast a scalar or check a per-link array of link parameters."""
    if np.ndim(value) == 0:
        v = _as_real(value.item() if isinstance(value, np.ndarray) else value, name)
        # The core checks per-link values; a scalar is checked here so that
        # custom() without links still rejects it.
        bw = name == "bandwidth_Bps"
        if not ((v > 0 if bw else v >= 0) and math.isfinite(v)):
            rule = "> 0" if bw else ">= 0"
            raise ValueError(f"custom: {name} must be {rule} and finite, got {v}")
        return np.full(num_links, v, dtype=np.float64)
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.shape != (num_links,):
        raise ValueError(
            f"{name} must be a scalar or have one entry per link ({num_links}), "
            f"got shape {arr.shape}"
        )
    return np.ascontiguousarray(arr, dtype=np.float64)


def _as_link_pairs(links: Any, num_nodes: int) -> np.ndarray:
    """Convert ``links`` to a checked ``(L, 2)`` int32 array of node ids."""
    try:
        arr = np.asarray(links)
    except ValueError as err:  # ragged nested sequences
        raise ValueError(
            "links must be a sequence of (src, dst) pairs or an (L, 2) array"
        ) from err
    if arr.size == 0:
        return np.empty((0, 2), dtype=np.int32)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            "links must be a sequence of (src, dst) pairs or an (L, 2) array, "
            f"got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iu":
        raise TypeError(f"links must hold integer node ids, got dtype {arr.dtype}")
    bad = (arr < 0) | (arr >= num_nodes)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(
            f"custom: links[{i}].{('src', 'dst')[j]} = {arr[i, j]} is out of range "
            f"[0, {num_nodes})"
        )
    return arr.astype(np.int32)


def _read_only(arr: np.ndarray) -> np.ndarray:
    arr.flags.writeable = False
    return arr


class Topology:
    """A machine: endpoints, hidden routers, directed links and routing.

    Create topologies with :func:`line`, :func:`ring`, :func:`mesh`,
    :func:`torus` or :func:`custom`; the constructor only wraps an existing
    compiled ``_core.Topology``. Topologies are immutable.

    Parameters
    ----------
    core : wafercoll._core.Topology
        The compiled topology to wrap (kept as the attribute ``_core``).

    Notes
    -----
    Node ids ``0 .. num_endpoints - 1`` are endpoints, the rest hidden routers.
    Link ids are ``0 .. num_links - 1``; see :attr:`links` for their ends and
    parameters. On the grid families nothing per pair is tabulated, so routes
    and hop counts of even a 1024 x 1024 torus cost ``O(hops)``.
    """

    def __init__(self, core: Any) -> None:
        if not isinstance(core, _core.Topology):
            raise TypeError(
                "Topology wraps a compiled _core.Topology; create one with "
                "wafercoll.line/ring/mesh/torus/custom"
            )
        self._core = core
        self._links: dict[str, np.ndarray] | None = None
        # How a public factory made it: (module, function, args, kwargs).
        self._recipe: tuple[str, str, tuple[Any, ...], dict[str, Any]] | None = None
        # spray_shares' per-destination tables, computed on first use.
        self._spray: dict[tuple[int, bool], tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------ pickling, equality

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the factory call that made it (topologies are immutable)."""
        if self._recipe is None:
            raise TypeError(
                f"{self.name} was not made by a wafercoll topology factory "
                "(line, ring, mesh, torus, star, custom, cluster, wormhole_n150), "
                "so it cannot be pickled"
            )
        return (_rebuild, self._recipe)

    def __eq__(self, other: object) -> bool:
        """Same family, name, endpoints, links and link parameters."""
        if not isinstance(other, Topology):
            return NotImplemented
        if (self.kind, self.name, self.num_endpoints, self.num_nodes) != (
            other.kind,
            other.name,
            other.num_endpoints,
            other.num_nodes,
        ):
            return False
        a, b = self.links, other.links
        return all(np.array_equal(a[k], b[k]) for k in a)

    def __hash__(self) -> int:
        return hash((self.kind, self.name, self.num_endpoints, self.num_links))

    # ------------------------------------------------------------ description

    @property
    def kind(self) -> str:
        """Family: ``"line"``, ``"ring"``, ``"mesh"``, ``"torus"`` or ``"cluster"``.

        Custom topologies report ``"custom"`` or the label given to :func:`custom`.
        """
        return self._core.kind()

    @property
    def name(self) -> str:
        """Family and size, e.g. ``"mesh(4x5)"`` or ``"ring(8)"``."""
        return self._core.name()

    @property
    def num_endpoints(self) -> int:
        """Number of endpoints (nodes that hold data; ids ``0 .. E - 1``)."""
        return self._core.num_endpoints()

    @property
    def default_ranks(self) -> int:
        """Ranks a collective uses by default: endpoints ``0 .. default_ranks - 1``.

        Every endpoint, except on machines with endpoints that hold data but
        do not compute (the n150's DRAM regions): :func:`wafercoll.build`,
        :func:`wafercoll.advise` and :func:`wafercoll.bounds.lower_bound`
        take this many ranks when none are given.

        Examples
        --------
        >>> import wafercoll as wc
        >>> wc.mesh(3, 4).default_ranks
        12
        """
        return self.num_endpoints

    @property
    def num_nodes(self) -> int:
        """Number of nodes, endpoints and hidden routers together."""
        return self._core.num_nodes()

    @property
    def num_links(self) -> int:
        """Number of directed links."""
        return self._core.num_links()

    @property
    def shape(self) -> tuple[int, int]:
        """Grid shape ``(rows, cols)``: ``(1, n)`` for line/ring, else ``(0, 0)``."""
        return (self._core.rows(), self._core.cols())

    @property
    def _is_grid(self) -> bool:
        return self._core.rows() > 0

    # ---------------------------------------------------------------- clusters

    def _cluster_only(self, what: str) -> None:
        if self.kind != "cluster":
            raise ValueError(f"{what}: {self.name} is not a cluster topology")

    @property
    def cluster_nodes(self) -> int:
        """Number of compute nodes of a cluster (see :func:`cluster`)."""
        self._cluster_only("cluster_nodes")
        return self._core.cluster_nodes()

    @property
    def ppn(self) -> int:
        """Processes per node of a cluster."""
        self._cluster_only("ppn")
        return self._core.ppn()

    @property
    def sockets(self) -> int:
        """Sockets per node of a cluster."""
        self._cluster_only("sockets")
        return self._core.sockets()

    @property
    def node_of(self) -> np.ndarray:
        """Node of every rank of a cluster (read-only int32 array)."""
        self._cluster_only("node_of")
        return _read_only(self._core.rank_node())

    @property
    def socket_of(self) -> np.ndarray:
        """Global socket index ``node * sockets + socket`` of every rank."""
        self._cluster_only("socket_of")
        return _read_only(self._core.rank_socket())

    def locality(self, a: int, b: int) -> int:
        """Locality class of two ranks of a cluster.

        Returns
        -------
        int
            0 for the same socket (or ``a == b``), 1 for the same node on
            another socket, 2 for different nodes.
        """
        self._cluster_only("locality")
        return self._core.locality(self._id(a, "a"), self._id(b, "b"))

    def locality_matrix(self) -> np.ndarray:
        """:meth:`locality` of every pair as a ``(p, p)`` int8 array (p <= 4096)."""
        self._cluster_only("locality_matrix")
        p = self.num_endpoints
        if p > _MAX_LOCALITY_MATRIX:
            raise ValueError(
                f"locality_matrix: {p} ranks exceed the limit of "
                f"{_MAX_LOCALITY_MATRIX} (use node_of and socket_of instead)"
            )
        node, sock = self.node_of, self.socket_of
        same_node = node[:, None] == node[None, :]
        same_sock = sock[:, None] == sock[None, :]
        return np.where(same_node, np.where(same_sock, 0, 1), 2).astype(np.int8)

    @property
    def links(self) -> dict[str, np.ndarray]:
        """Per-link data as read-only NumPy arrays indexed by link id.

        Returns
        -------
        dict of str to numpy.ndarray
            ``src`` and ``dst`` (int32 node ids), ``bandwidth_Bps`` (float64,
            bytes per second) and ``latency_s`` (float64, seconds).
        """
        if self._links is None:
            c = self._core
            self._links = {
                "src": _read_only(c.link_src()),
                "dst": _read_only(c.link_dst()),
                "bandwidth_Bps": _read_only(c.link_bandwidth_Bps()),
                "latency_s": _read_only(c.link_latency_s()),
            }
        return dict(self._links)

    # ---------------------------------------------------------------- routing

    def _id(self, value: Any, name: str, endpoint: bool = True) -> int:
        """Check a node id (an endpoint id if ``endpoint``); IndexError if bad."""
        v = as_int(value, name)
        upper = self.num_endpoints if endpoint else self.num_nodes
        if not 0 <= v < upper:
            what = "an endpoint" if endpoint else "a node"
            raise IndexError(f"{name} = {v} is not {what} id in [0, {upper})")
        return v

    def route(self, src: int, dst: int) -> np.ndarray:
        """Links a message from endpoint ``src`` to endpoint ``dst`` travels over.

        Parameters
        ----------
        src, dst : int
            Endpoint ids.

        Returns
        -------
        numpy.ndarray
            Link ids in travel order (int32); empty when ``src == dst``.

        Raises
        ------
        IndexError
            If ``src`` or ``dst`` is not an endpoint id.
        ValueError
            If ``dst`` cannot be reached from ``src`` (custom topologies only).
        """
        return self._core.route(self._id(src, "src"), self._id(dst, "dst"))

    def hops(self, src: int, dst: int) -> int:
        """Count the links on :meth:`route` ``(src, dst)`` without building it.

        Parameters and errors are those of :meth:`route`.

        Returns
        -------
        int
            Hop count (0 when ``src == dst``).
        """
        return self._core.hops(self._id(src, "src"), self._id(dst, "dst"))

    def spray_shares(
        self, src: int, dst: int, *, equal: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """Where a sprayed message's bytes go, in the long run.

        Under :class:`~wafercoll.NetworkModel` ``(spray=True)`` the packets
        from ``src`` to ``dst`` take shortest paths in hops (through hidden
        routers only, where the topology has any), dealt at every
        node over its out-links one hop nearer ``dst`` in proportion to their
        bandwidths (equally when the model sets one ``bandwidth_Bps`` for
        all: ``equal=True``). This gives each link's share of the bytes: what
        a long message puts there, the loads a fluid model of spraying needs.
        The simulator deals in integer weights (the smallest, up to 8 per
        unit of the slowest link, that state the ratios exactly; else the
        ratios rounded to eighths, at most 1024 each), equal to these ratios
        on the fabrics here (NVLink's 5, 4, 4 and 5; equal links); its
        shares for a message of ``n`` packets differ from these by less than
        a packet per choice.

        Parameters
        ----------
        src, dst : int
            Endpoint ids.
        equal : bool
            Deal equally over the nearer links, whatever their bandwidths.

        Returns
        -------
        links : numpy.ndarray
            Link ids (int64), increasing.
        shares : numpy.ndarray
            The fraction of the bytes on each (float64); the shares leaving
            ``src`` add up to 1.

        Examples
        --------
        On a DGX H100, a GPU's 18 NVLinks go 5, 4, 4 and 5 to the four
        NVSwitch chips:

        >>> import wafercoll as wc
        >>> topo = wc.topology.dgx_h100()
        >>> links, shares = topo.spray_shares(0, 1)
        >>> (shares * 18).round(6).tolist()
        [5.0, 5.0, 4.0, 4.0, 4.0, 4.0, 5.0, 5.0]
        """
        a, b = self._id(src, "src"), self._id(dst, "dst")
        if a == b:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        key = (b, bool(equal))
        if key not in self._spray:
            self._spray[key] = self._spray_from_all(b, bool(equal))
        reach, frac = self._spray[key]
        ls = self.links["src"]
        load = reach[a, ls] * frac
        keep = np.flatnonzero(load > 0)
        return keep.astype(np.int64), load[keep]

    def _spray_from_all(self, dst: int, equal: bool) -> tuple[np.ndarray, np.ndarray]:
        # reach[a, u]: the share of a's bytes to dst that passes node u;
        # frac[l]: the share of what reaches link l's source that takes l.
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import shortest_path

        n, e = self.num_nodes, self.num_endpoints
        ls, ld = self.links["src"], self.links["dst"]
        # Where there are hidden routers only they relay: no path passes
        # through another endpoint.
        relay = (ld >= e) | (ld == dst) | (n == e)
        graph = csr_matrix(
            (np.ones(int(relay.sum())), (ld[relay], ls[relay])), shape=(n, n)
        )
        dist = shortest_path(graph, unweighted=True, indices=dst)
        near = relay & np.isfinite(dist[ls]) & (dist[ld] == dist[ls] - 1)
        w = np.where(near, 1.0 if equal else self.links["bandwidth_Bps"], 0.0)
        total = np.zeros(n)
        np.add.at(total, ls, w)
        frac = np.divide(w, total[ls], out=np.zeros_like(w), where=w > 0)
        reach = np.eye(n)
        finite = np.isfinite(dist)
        for d in range(int(dist[finite].max()) if finite.any() else 0, 0, -1):
            # What reaches the nodes at distance d goes on one hop nearer.
            at = np.flatnonzero(near & (dist[ls] == d))
            np.add.at(reach.T, ld[at], (reach[:, ls[at]] * frac[at]).T)
        return reach, frac

    def hops_matrix(self) -> np.ndarray:
        """Hop counts between all pairs of endpoints.

        Returns
        -------
        numpy.ndarray
            ``(E, E)`` int32 array with ``[a, b] == hops(a, b)``, and ``-1``
            where ``b`` is unreachable from ``a``.

        Raises
        ------
        ValueError
            If there are more than 8192 endpoints (the matrix would exceed
            256 MiB); use :meth:`hops` per pair instead.
        """
        return self._core.hops_matrix()

    def next_hops(self) -> np.ndarray:
        """The next-hop table of a star or a custom topology routed by shortest paths.

        Their routes are destination-based (the tail of a route is a route),
        so one table holds them all: entry ``[u, d]`` is the first link of the
        route from node ``u`` (endpoint or hidden router) to endpoint ``d``.
        :meth:`route` reads the same table, kept inside the topology: 2 bytes
        per node and destination, ``num_nodes * num_endpoints * 2`` bytes in
        all, each destination's column computed once, on its first use (a
        reverse breadth-first search from it). Custom topologies above
        2**27 entries (256 MiB) keep no table: their routes come from the
        per-destination search (hop distances to the destination, cached, and
        at each hop the lowest-id link that gets one hop closer), the same
        routes, more slowly. Stars compute their routes and keep no table.

        Returns
        -------
        numpy.ndarray
            ``(num_nodes, num_endpoints)`` int32 array of link ids (4 bytes
            per entry), ``-1`` where ``u == d`` or ``d`` cannot be reached.

        Raises
        ------
        ValueError
            For other families (their routes are not destination-based, or
            are given explicitly) and above 2**27 entries (then use
            :meth:`route` per pair).

        Examples
        --------
        >>> import wafercoll as wc
        >>> t = wc.topology.star(3)
        >>> t.next_hops().tolist()  # rows: endpoints 0, 1, 2, then the switch
        [[-1, 0, 0], [2, -1, 2], [4, 4, -1], [1, 3, 5]]
        >>> t.route(0, 2).tolist()  # [0, 2] of the table, then [3, 2]
        [0, 5]
        """
        return self._core.next_hops()

    def link_id(self, u: int, v: int) -> int:
        """Id of the link from node ``u`` to node ``v``, or ``-1`` if none.

        Parameters
        ----------
        u, v : int
            Node ids (endpoints or hidden routers).

        Returns
        -------
        int
            The link id, or ``-1`` when ``u`` and ``v`` are not joined (or equal).
        """
        return self._core.link_id(self._id(u, "u", False), self._id(v, "v", False))

    def coords(self, node: int) -> tuple[int, int]:
        """Grid position ``(row, col)`` of a node of a line, ring, mesh or torus.

        Parameters
        ----------
        node : int
            Node id; ``node == row * cols + col``.

        Returns
        -------
        tuple of int
            ``(row, col)``.

        Raises
        ------
        ValueError
            On a custom topology, which has no grid.
        """
        if not self._is_grid:
            raise ValueError(f"coords: a {self.kind} topology has no grid coordinates")
        return tuple(self._core.coords(self._id(node, "node", False)))

    def node_at(self, row: int, col: int) -> int:
        """Node id at grid position ``(row, col)``; the inverse of :meth:`coords`.

        Parameters
        ----------
        row, col : int
            Grid position, ``0 <= row < rows`` and ``0 <= col < cols``.

        Returns
        -------
        int
            ``row * cols + col``.
        """
        r, c = as_int(row, "row"), as_int(col, "col")
        rows, cols = self.shape
        if self.kind != "custom" and not (0 <= r < rows and 0 <= c < cols):
            raise IndexError(
                f"(row, col) = ({r}, {c}) is outside the {rows}x{cols} grid"
            )
        return self._core.node_at(r, c)  # ValueError on custom topologies

    # ------------------------------------------------------------ conversions

    def to_pandas(self) -> Any:
        """Links as a :class:`pandas.DataFrame`, one row per link.

        Returns
        -------
        pandas.DataFrame
            Index ``link`` (link id); columns ``src``, ``dst``,
            ``bandwidth_Bps`` and ``latency_s``.

        Raises
        ------
        ImportError
            If pandas is not installed.
        """
        try:
            import pandas as pd
        except ImportError as err:
            raise ImportError(
                "Topology.to_pandas() requires pandas: pip install pandas"
            ) from err
        df = pd.DataFrame(self.links)
        df.index.name = "link"
        return df

    def to_networkx(self) -> Any:
        """Convert the topology to a :class:`networkx.DiGraph`.

        Returns
        -------
        networkx.DiGraph
            Nodes ``0 .. num_nodes - 1`` with attribute ``endpoint`` (bool) and,
            on grid families, ``row`` and ``col``; one edge per link with
            attributes ``link`` (id), ``bandwidth_Bps`` and ``latency_s``. The
            graph attributes ``name`` and ``kind`` describe the topology.

        Raises
        ------
        ImportError
            If networkx is not installed.
        """
        try:
            import networkx as nx
        except ImportError as err:
            raise ImportError(
                "Topology.to_networkx() requires networkx: pip install networkx"
            ) from err
        g = nx.DiGraph(name=self.name, kind=self.kind)
        e = self.num_endpoints
        rows, cols = self.shape
        for v in range(self.num_nodes):
            attrs: dict[str, Any] = {"endpoint": v < e}
            if cols:
                attrs["row"], attrs["col"] = divmod(v, cols)
            g.add_node(v, **attrs)
        lk = {k: v.tolist() for k, v in self.links.items()}
        keys = ("src", "dst", "bandwidth_Bps", "latency_s")
        columns = zip(*(lk[k] for k in keys), strict=True)
        g.add_edges_from(
            (s, d, {"link": i, "bandwidth_Bps": b, "latency_s": t})
            for i, (s, d, b, t) in enumerate(columns)
        )
        return g

    # ---------------------------------------------------------------- display

    def _param_range(self, key: str) -> tuple[float, float] | None:
        if self.num_links == 0:
            return None
        if self._is_grid:  # grid families: one value for every link
            v = self._core.link(0)[2 if key == "bandwidth_Bps" else 3]
            return (v, v)
        arr = self.links[key]
        return (float(arr.min()), float(arr.max()))

    def _summary(self) -> list[tuple[str, str]]:
        rows = [("kind", self.kind)]
        if self._is_grid:
            rows.append(("shape", "{} x {}".format(*self.shape)))
        if self.kind == "cluster":
            rows.append(("nodes x ppn", f"{self.cluster_nodes} x {self.ppn}"))
            rows.append(("sockets per node", str(self.sockets)))
        rows += [
            ("endpoints", str(self.num_endpoints)),
            ("hidden routers", str(self.num_nodes - self.num_endpoints)),
            ("links", str(self.num_links)),
        ]
        for key, unit in (("bandwidth_Bps", "B/s"), ("latency_s", "s")):
            rng = self._param_range(key)
            if rng is not None:
                lo, hi = rng
                text = f"{lo:.6g} {unit}" if lo == hi else f"{lo:.6g} - {hi:.6g} {unit}"
                rows.append((key, text))
        return rows

    def __repr__(self) -> str:
        if not self._is_grid:  # the name already gives the counts
            return f"<Topology {self.name}>"
        return (
            f"<Topology {self.name}: {self.num_endpoints} endpoints, "
            f"{self.num_links} links>"
        )

    def _repr_html_(self) -> str:
        cells = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in self._summary()
        )
        return (
            f"<table><caption>Topology {html.escape(self.name)}</caption>"
            f"{cells}</table>"
        )


# -------------------------------------------------------------------- families

_MAX_GRID = int(_core.Topology.MAX_GRID_NODES)
_MAX_CUSTOM = int(_core.Topology.MAX_CUSTOM_NODES)
_MAX_ROUTED = int(_core.Topology.MAX_ROUTED_ENDPOINTS)
_MAX_CLUSTER = int(_core.Topology.MAX_CLUSTER_RANKS)
_MAX_STAR = int(_core.Topology.MAX_STAR_ENDPOINTS)
_MAX_LOCALITY_MATRIX = 4096


def _grid(factory: Any, sizes: dict[str, Any], bw: Any, lat: Any) -> Topology:
    """Check the arguments of a grid family and build it with ``factory``."""
    args = [_as_size(v, k, 1, _MAX_GRID) for k, v in sizes.items()]
    return Topology(
        factory(*args, _as_real(bw, "bandwidth_Bps"), _as_real(lat, "latency_s"))
    )


@recorded
def line(n: int, *, bandwidth_Bps: float = 1e9, latency_s: float = 0.0) -> Topology:
    """Build a line of nodes ``0 .. n - 1``, linked both ways to their neighbours.

    Parameters
    ----------
    n : int
        Number of nodes, >= 1.
    bandwidth_Bps : float, optional
        Bandwidth of every link in bytes per second; > 0 and finite.
    latency_s : float, optional
        Latency of every link in seconds; >= 0 and finite.

    Returns
    -------
    Topology
        ``2 * (n - 1)`` links; routes go straight, ``hops(a, b) == abs(a - b)``.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or a link parameter not a real number.
    ValueError
        If a value is out of range (the message names the parameter).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.line(4)
    >>> t
    <Topology line(4): 4 endpoints, 6 links>
    >>> t.num_endpoints, t.num_links
    (4, 6)
    """
    return _grid(_core.Topology.line, {"n": n}, bandwidth_Bps, latency_s)


@recorded
def ring(n: int, *, bandwidth_Bps: float = 1e9, latency_s: float = 0.0) -> Topology:
    """Build a ring: a line whose ends ``n - 1`` and ``0`` are also linked.

    Parameters
    ----------
    n : int
        Number of nodes, >= 1. ``ring(2)`` has one link each way.
    bandwidth_Bps, latency_s : float, optional
        As for :func:`line`.

    Returns
    -------
    Topology
        Routes take the shorter way round; a tie (``n`` even, distance
        ``n / 2``) goes the positive way, ``a -> a + 1``.

    Raises
    ------
    TypeError, ValueError
        As for :func:`line`.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.ring(4)
    >>> t
    <Topology ring(4): 4 endpoints, 8 links>
    >>> t.num_endpoints, t.num_links
    (4, 8)
    """
    return _grid(_core.Topology.ring, {"n": n}, bandwidth_Bps, latency_s)


@recorded
def mesh(
    rows: int, cols: int, *, bandwidth_Bps: float = 1e9, latency_s: float = 0.0
) -> Topology:
    """Build a 2D mesh; node ``r * cols + c`` is linked both ways to its neighbours.

    Parameters
    ----------
    rows, cols : int
        Grid size, each >= 1, with ``rows * cols`` at most 2**22.
    bandwidth_Bps, latency_s : float, optional
        As for :func:`line`.

    Returns
    -------
    Topology
        ``2 * (rows * (cols - 1) + cols * (rows - 1))`` links. Routes are
        dimension-ordered: along the row (X) first, then along the column (Y),
        so ``hops`` is the Manhattan distance.

    Raises
    ------
    TypeError, ValueError
        As for :func:`line`.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.mesh(2, 3)
    >>> t
    <Topology mesh(2x3): 6 endpoints, 14 links>
    >>> t.num_endpoints, t.num_links
    (6, 14)
    """
    sizes = {"rows": rows, "cols": cols}
    return _grid(_core.Topology.mesh, sizes, bandwidth_Bps, latency_s)


@recorded
def torus(
    rows: int, cols: int, *, bandwidth_Bps: float = 1e9, latency_s: float = 0.0
) -> Topology:
    """Build a torus: a mesh with wrap-around links in both dimensions.

    Parameters
    ----------
    rows, cols : int
        Grid size, each >= 1, with ``rows * cols`` at most 2**22. A dimension
        of size 2 has one link each way (no duplicate wrap link), one of size
        1 none.
    bandwidth_Bps, latency_s : float, optional
        As for :func:`line`.

    Returns
    -------
    Topology
        ``4 * rows * cols`` links when both sizes are >= 3. Routes go X then
        Y, each the shorter way round; ties go the positive way.

    Raises
    ------
    TypeError, ValueError
        As for :func:`line`.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.torus(3, 3)
    >>> t
    <Topology torus(3x3): 9 endpoints, 36 links>
    >>> t.num_endpoints, t.num_links
    (9, 36)
    """
    sizes = {"rows": rows, "cols": cols}
    return _grid(_core.Topology.torus, sizes, bandwidth_Bps, latency_s)


@recorded
def star(n: int, *, bandwidth_Bps: float = 1e9, latency_s: float = 0.0) -> Topology:
    """``n`` endpoints on one switch: an uplink and a downlink per endpoint.

    The switch is a hidden router (node ``n``); link ``2 i`` goes from
    endpoint ``i`` to the switch, link ``2 i + 1`` back. Every route has two
    hops, ``route(a, b) == [2 a, 2 b + 1]``, computed rather than searched, so
    a star holds up to 4,194,303 endpoints and keeps no routing table. A
    rank's sends share its uplink and its receives its downlink, the network
    LogGP assumes (:meth:`wafercoll.NetworkModel.loggp`).

    Parameters
    ----------
    n : int
        Number of endpoints, 1 to 4,194,303.
    bandwidth_Bps : float, optional
        Bandwidth of every link in bytes per second; > 0 and finite.
    latency_s : float, optional
        Latency of every link in seconds; >= 0 and finite.

    Returns
    -------
    Topology
        Kind ``"star"``, ``n`` endpoints, one hidden router, ``2 n`` links:
        the same links and routes as :func:`custom` gives for them.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or a link parameter not a real number.
    ValueError
        If a value is out of range (the message names the parameter).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.star(4)
    >>> t.route(0, 3).tolist()
    [0, 7]
    >>> t.kind, t.name, t.num_nodes
    ('star', 'star(4)', 5)
    """
    e = _as_size(n, "n", 1, _MAX_STAR)
    bw = _as_real(bandwidth_Bps, "bandwidth_Bps")
    lat = _as_real(latency_s, "latency_s")
    return Topology(_core.Topology.star(e, bw, lat))


@recorded
def custom(
    num_endpoints: int,
    links: Sequence[tuple[int, int]] | np.ndarray,
    *,
    num_hidden_routers: int = 0,
    bandwidth_Bps: float | Sequence[float] | np.ndarray = 1e9,
    latency_s: float | Sequence[float] | np.ndarray = 0.0,
    routes: Any = None,
    kind: str | None = None,
    name: str | None = None,
) -> Topology:
    """Build a topology from arbitrary directed links.

    Routes are shortest paths unless ``routes`` gives every route explicitly
    (dimension-ordered routes on a NoC, say).

    Parameters
    ----------
    num_endpoints : int
        Number of endpoints (ids ``0 .. num_endpoints - 1``), >= 1.
    links : sequence of (int, int) or array_like of shape (L, 2)
        ``(src, dst)`` node ids; ``links[i]`` becomes link ``i``. No
        self-loops and no duplicate pairs; add both directions for a
        bidirectional wire.
    num_hidden_routers : int, optional
        Number of routers (ids ``num_endpoints ..``), >= 0. Nodes in total are
        limited to 20000.
    bandwidth_Bps : float or array_like of shape (L,), optional
        Bandwidth in bytes per second, for all links or per link; > 0, finite.
    latency_s : float or array_like of shape (L,), optional
        Latency in seconds, for all links or per link; >= 0, finite.
    routes : callable or mapping, optional
        Explicit routes, for at most 4096 endpoints: ``routes(src, dst)``
        returning the sequence of link ids from ``src`` to ``dst`` (called for
        every ordered pair of distinct endpoints; ``None`` or an empty sequence
        means no route), or a mapping ``{(src, dst): link ids}`` (missing pairs
        have no route). Each route must be a chain of links from ``src`` to
        ``dst``; it need not be shortest.
    kind : str, optional
        Family label returned by :attr:`Topology.kind` instead of ``"custom"``
        (what the builder registry's ``families`` match).
    name : str, optional
        Display name returned by :attr:`Topology.name`.

    Returns
    -------
    Topology
        Without ``routes``, routes are shortest by hop count through any nodes;
        among equally short paths the lexicographically smallest sequence of
        link ids wins. They are read from a next-hop table of
        ``num_nodes * num_endpoints`` entries of 2 bytes, each destination's
        column computed on its first use and kept (see
        :meth:`Topology.next_hops`); above 2**27 entries (256 MiB) routes come
        from a per-destination search instead, which gives the same routes
        more slowly and keeps 2 bytes per node for every destination used.

    Raises
    ------
    TypeError
        If sizes or node ids are not integers, or link parameters not reals.
    ValueError
        If a value is out of range, a link is a self-loop or a duplicate, or
        shapes do not match (the message names the parameter).

    Examples
    --------
    >>> import wafercoll as wc
    >>> star = wc.custom(3, [(0, 3), (3, 0), (1, 3), (3, 1), (2, 3), (3, 2)],
    ...                  num_hidden_routers=1)
    >>> star.route(0, 2).tolist()
    [0, 5]
    """
    e = _as_size(num_endpoints, "num_endpoints", 1, _MAX_CUSTOM)
    h = _as_size(num_hidden_routers, "num_hidden_routers", 0, _MAX_CUSTOM)
    if e + h > _MAX_CUSTOM:
        raise ValueError(
            f"num_endpoints + num_hidden_routers = {e + h} exceeds the limit of "
            f"{_MAX_CUSTOM} nodes for custom topologies"
        )
    pairs = _as_link_pairs(links, e + h)
    n = pairs.shape[0]
    bw = _per_link(bandwidth_Bps, "bandwidth_Bps", n)
    lat = _per_link(latency_s, "latency_s", n)
    src, dst = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
    if routes is None:
        core = _core.Topology.custom(e, h, src, dst, bw, lat)
    else:
        offsets, ids = _route_table(routes, e, n)
        core = _core.Topology.custom_routed(e, h, src, dst, bw, lat, offsets, ids)
    for label, value in (("kind", kind), ("name", name)):
        if value is not None and (not isinstance(value, str) or not value):
            raise TypeError(f"{label} must be a non-empty string, got {value!r}")
    if kind is not None or name is not None:
        core = core.with_labels(kind or "", name or "")
    return Topology(core)


def _route_table(routes: Any, e: int, num_links: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR route table (``e * e + 1`` offsets, link ids) from a callable or mapping."""
    if e > _MAX_ROUTED:
        raise ValueError(
            f"routes: an explicit route table holds at most {_MAX_ROUTED} "
            f"endpoints, got num_endpoints = {e}"
        )
    if callable(routes):
        get = routes
    elif hasattr(routes, "get"):
        for key in routes:
            if (
                not isinstance(key, tuple)
                or len(key) != 2
                or not all(isinstance(k, (int, np.integer)) for k in key)
            ):
                raise TypeError(f"routes: keys must be (src, dst) pairs, got {key!r}")
            if not (0 <= key[0] < e and 0 <= key[1] < e):
                raise ValueError(f"routes: pair {key!r} is not a pair of endpoints")

        def get(a: int, b: int) -> Any:
            return routes.get((a, b))
    else:
        raise TypeError("routes must be a callable (src, dst) -> link ids or a mapping")
    counts = np.zeros(e * e, dtype=np.int64)
    parts: list[np.ndarray] = []
    for a in range(e):
        for b in range(e):
            if a == b:
                continue
            r = get(a, b)
            if r is None:
                continue
            arr = np.asarray(r).ravel()
            if arr.size == 0:
                continue
            if not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"routes: route {a} -> {b} must hold link ids (ints)")
            if arr.min() < 0 or arr.max() >= num_links:
                raise ValueError(
                    f"routes: route {a} -> {b} names a link outside [0, {num_links})"
                )
            counts[a * e + b] = arr.size
            parts.append(arr.astype(np.int32))
    offsets = np.zeros(e * e + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return offsets, ids


def check_rank_to_node(rank_to_node: Any, nodes: int, ppn: int) -> np.ndarray:
    """Check a rank-to-node map of a cluster and return it as int32.

    Parameters
    ----------
    rank_to_node : array_like of int
        Node of every rank: ``nodes * ppn`` entries, each node exactly ``ppn``
        times.
    nodes, ppn : int
        Cluster shape (already checked).

    Raises
    ------
    TypeError
        If the entries are not integers.
    ValueError
        For a wrong length, a node id outside ``[0, nodes)`` or a node that
        does not get exactly ``ppn`` ranks.

    Examples
    --------
    >>> from wafercoll import topology
    >>> topology.check_rank_to_node([0, 1, 0, 1], nodes=2, ppn=2).tolist()
    [0, 1, 0, 1]
    """
    p = nodes * ppn
    r2n = np.asarray(rank_to_node).ravel()
    if r2n.size and not np.issubdtype(r2n.dtype, np.integer):
        raise TypeError("rank_to_node must hold integer node ids")
    if r2n.size != p:
        raise ValueError(
            f"rank_to_node must be {p} integers (one node per rank; nodes * ppn = "
            f"{p} entries), got {r2n.size}"
        )
    if r2n.min() < 0 or r2n.max() >= nodes:
        raise ValueError(f"rank_to_node holds node ids outside [0, {nodes})")
    per = np.bincount(r2n, minlength=nodes)
    if (per != ppn).any():
        bad = int(np.flatnonzero(per != ppn)[0])
        raise ValueError(
            f"rank_to_node gives node {bad} {int(per[bad])} ranks; every node needs "
            f"exactly ppn = {ppn}"
        )
    return r2n.astype(np.int32)


@recorded
def cluster(
    nodes: int,
    ppn: int,
    sockets: int = 1,
    *,
    rank_to_node: Sequence[int] | np.ndarray | None = None,
    process_Bps: float = 1e10,
    socket_Bps: float = 1e10,
    nic_Bps: float = 1e10,
    process_latency_s: float = 0.0,
    socket_latency_s: float = 0.0,
    nic_latency_s: float = 0.0,
    lane_Bps: float | None = None,
    lane_latency_s: float = 0.0,
) -> Topology:
    """Build a cluster of ``nodes`` multi-core nodes with ``ppn`` processes each.

    The endpoints are the ``nodes * ppn`` processes (ranks). Each process has
    a link to and from its socket's switch (``process_Bps``: the per-process
    rate ``R_b`` of the max-rate model); with ``sockets > 1`` each socket
    switch has a link to and from its node's router (``socket_Bps``), and each
    node router a link to and from one fabric switch (``nic_Bps``: the NIC's
    injection rate ``R_N``, shared by all off-node traffic of the node). Routes
    are unique: 2 links within a socket, 4 within a node, and 4 (one socket) or
    6 between nodes (4 with lanes, see ``lane_Bps``). The fabric has full
    bisection, so only NICs and process links are contended. Link ids and node
    ids are listed in ``cpp/include/wafercoll/topology/topology.hpp``.

    Parameters
    ----------
    nodes : int
        Number of compute nodes, >= 1.
    ppn : int
        Processes per node, >= 1; ``nodes * ppn`` is at most 2**21.
    sockets : int, optional
        Sockets per node, dividing ``ppn``; a node's ranks fill its sockets in
        increasing rank order, ``ppn // sockets`` each.
    rank_to_node : array_like of int, optional
        Node of every rank (length ``nodes * ppn``, each node exactly ``ppn``
        times). Default: SMP (node-major) order, rank ``r`` on node
        ``r // ppn``.
    process_Bps, socket_Bps, nic_Bps : float, optional
        Bandwidth of each link class in bytes per second; > 0, finite.
    process_latency_s, socket_latency_s, nic_latency_s : float, optional
        Latency of each link class in seconds; >= 0, finite.
    lane_Bps : float, optional
        With a value, every process also gets a *lane*: a link to and from
        its node's NIC switch (a node of its own, from which the node's NIC
        links then leave) that only off-node messages take (route: lane, NIC,
        NIC, lane), so they run at the per-process network rate ``R_b`` while
        on-node messages keep the process and socket rates. ``None`` (default):
        no lanes, off-node messages cross the process (and socket) links.
    lane_latency_s : float, optional
        Latency of a lane link; >= 0, finite (used only with ``lane_Bps``).

    Returns
    -------
    Topology
        Of kind ``"cluster"``, with :attr:`Topology.node_of`,
        :attr:`Topology.socket_of` and :meth:`Topology.locality`.

    Raises
    ------
    TypeError, ValueError
        For non-integer or out-of-range sizes, a ``sockets`` that does not
        divide ``ppn``, or a ``rank_to_node`` of the wrong length or with a node
        that does not get exactly ``ppn`` ranks.

    Examples
    --------
    >>> import wafercoll as wc
    >>> c = wc.topology.cluster(2, 4)
    >>> c.locality(0, 3), c.locality(0, 4), c.hops(0, 4)
    (0, 2, 4)
    """
    n = _as_size(nodes, "nodes", 1, _MAX_CLUSTER)
    q = _as_size(ppn, "ppn", 1, _MAX_CLUSTER)
    k = _as_size(sockets, "sockets", 1, q)
    if n * q > _MAX_CLUSTER:
        raise ValueError(
            f"nodes * ppn = {n * q} exceeds the limit of {_MAX_CLUSTER} processes"
        )
    if q % k:
        raise ValueError(f"sockets = {k} must divide ppn = {q}")
    rank_node: list[int] | np.ndarray = (
        [] if rank_to_node is None else check_rank_to_node(rank_to_node, n, q)
    )
    bws, lats = [], []
    for cls, bw, lat in (
        ("process", process_Bps, process_latency_s),
        ("socket", socket_Bps, socket_latency_s),
        ("nic", nic_Bps, nic_latency_s),
        *([] if lane_Bps is None else [("lane", lane_Bps, lane_latency_s)]),
    ):
        b, t = _as_real(bw, f"{cls}_Bps"), _as_real(lat, f"{cls}_latency_s")
        if not (b > 0 and math.isfinite(b)):
            raise ValueError(f"{cls}_Bps must be > 0 and finite, got {b}")
        if not (t >= 0 and math.isfinite(t)):
            raise ValueError(f"{cls}_latency_s must be >= 0 and finite, got {t}")
        bws.append(b)
        lats.append(t)
    if lane_Bps is None:
        bws.append(0.0)  # no lanes
        lats.append(0.0)
    return Topology(_core.Topology.cluster(n, q, k, rank_node, bws, lats))
