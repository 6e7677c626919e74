"""Synthesized schedules of five collectives, registered as ``synth_treepack_*``.

* ``synth_treepack_allreduce``: every tree of an equal-rate packing
  (:func:`~wafercoll.synthesis.equal_rate_packing`) reduces towards its root
  and broadcasts back, the data cut evenly over the trees and streamed
  through them in chunks; the number of copies is chosen by
  :func:`~wafercoll.synthesis.choose_copies` for the size.
* ``synth_treepack_reduce_scatter`` / ``synth_treepack_allgather``: the
  packing's trees re-rooted at every rank and shortest-path trees rooted
  there, block ``r`` shared among rank ``r``'s trees by the LP of
  :func:`~wafercoll.synthesis.rooted_shares`.
* ``synth_treepack_reduce`` / ``synth_treepack_broadcast``: the packing's
  trees re-rooted at the root, the data cut evenly over them.

:func:`synthesize` builds one of them, verified; given a network it simulates
the candidates (copy counts, chunkings, tree sets) and keeps the fastest.

On machines with routers (NVSwitch nodes, rail networks, fat trees), there is
no packing of spanning trees through the switches yet: reduce-scatter,
allgather and allreduce use shortest-path trees over endpoints one switch
apart (:func:`~wafercoll.synthesis.rooted.endpoint_neighbours`), reduce and
broadcast are refused.

Examples
--------
>>> import wafercoll as wc
>>> mesh = wc.topology.mesh(3, 3)
>>> s = wc.build("synth_treepack_allgather", size_bytes=900, topology=mesh)
>>> s.collective, wc.verify(s).ok
('allgather', True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_bool, as_int, cache_root, remember
from ..algorithms import algorithm_name, register_algorithm
from ..analysis import verify
from ..kit.blocks import split_bytes
from ..kit.trees import trees_program
from ..schedule import Schedule
from ..topology import Topology
from . import equal_rate
from .equal_rate import (
    EqualRatePacking,
    choose_copies,
    copy_options,
    equal_rate_packing,
    topology_key,
)
from .fractional import MAX_NODES
from .rooted import reroot, rooted_shares, shortest_path_trees

__all__ = ["DEFAULT_CHUNK_BYTES", "MAX_DEFAULT_TRANSFERS", "packing_for", "synthesize"]

#: Default bytes per chunk of a tree's stream: TTO's chunk
#: (``wafercoll.mcm.machine.TTO_CHUNK_BYTES``, the MCM artifact's 96 KiB), so
#: that the two compare at equal chunk sizes.
DEFAULT_CHUNK_BYTES = 98304
#: Most transfers the default chunking makes (more chunks only add transfers
#: under dataflow forwarding, which streams a chunk packet by packet).
MAX_DEFAULT_TRANSFERS = 200_000

_PACKINGS: dict[tuple[Any, ...], EqualRatePacking] = {}


#: Bumped whenever the packing a topology gets changes (joblib keys a cached
#: call by its arguments and its own code only, not by the code it calls).
PACKING_VERSION = 2


def _packing_of_version(
    topology: Topology, copies: int, version: int
) -> EqualRatePacking:
    del version  # part of the cache key only
    return equal_rate_packing(topology, copies=copies)


def packing_for(topology: Topology, copies: int | None = None) -> EqualRatePacking:
    """:func:`equal_rate_packing` with default trees, cached per topology.

    Packings are kept in memory and, unless the environment variable
    ``WAFERCOLL_CACHE`` is set to the empty string, on disk by
    ``joblib.Memory`` under ``$WAFERCOLL_CACHE`` (default
    ``~/.cache/wafercoll``), keyed by the topology's links and bandwidths, so
    the advisor, sweeps and later sessions reuse them.

    Examples
    --------
    >>> import wafercoll as wc
    >>> a = wc.synthesis.packing_for(wc.topology.mesh(3, 3))
    >>> a is wc.synthesis.packing_for(wc.topology.mesh(3, 3))
    True
    """
    k = None if copies is None else as_int(copies, "copies", 1, 1 << 10)
    key = (*topology_key(topology), k)
    if key in _PACKINGS:
        return _PACKINGS[key]
    cache = cache_root()  # "" (WAFERCOLL_CACHE set empty): no disk cache
    if k is None or not cache or topology.num_nodes != topology.num_endpoints:
        pack = equal_rate_packing(topology, copies=k)
    else:
        try:
            import joblib

            memory = joblib.Memory(cache, verbose=0)
            pack = memory.cache(_packing_of_version)(topology, k, PACKING_VERSION)
        except OSError:  # an unwritable cache: compute without it
            pack = equal_rate_packing(topology, copies=k)
    return remember(_PACKINGS, key, pack, 32)


def _check(name: str, ranks: int, topology: Any) -> Topology:
    if topology is None:
        raise ValueError(f"{name} needs a topology (the trees are packed into it)")
    if not isinstance(topology, Topology):
        raise TypeError(
            f"topology must be a wafercoll.Topology, got {type(topology).__name__}"
        )
    if ranks != topology.num_endpoints:
        raise ValueError(
            f"{name} runs on every endpoint: ranks must be "
            f"{topology.num_endpoints}, got {ranks}"
        )
    return topology


def _chunks(size: int, trees: int, ranks: int, chunk_bytes: Any) -> int:
    chunk = as_int(
        DEFAULT_CHUNK_BYTES if chunk_bytes is None else chunk_bytes, "chunk_bytes", 1
    )
    c = max(1, round(size / trees / chunk))
    if chunk_bytes is None:  # cap the transfers: 2 (p - 1) per tree and chunk
        c = min(c, max(4, MAX_DEFAULT_TRANSFERS // (2 * max(ranks - 1, 1) * trees)))
    return max(1, min(c, size // trees or 1))


def _chunked(per_tree: Any, chunks: int) -> np.ndarray:
    """Block ``c * K + k``: chunk ``c`` of tree ``k``'s bytes (``trees_program``)."""
    per_tree = np.asarray(per_tree, dtype=np.int64)
    blocks = np.zeros((chunks, per_tree.size), dtype=np.int64)
    for k, b in enumerate(per_tree.tolist()):
        blocks[:, k] = split_bytes(int(b), chunks)
    return blocks.ravel()


def _even_blocks(size: int, trees: int, chunks: int) -> np.ndarray:
    return _chunked(split_bytes(size, trees), chunks)


def _copies(topology: Topology, size: int, copies: Any, packet_bytes: Any) -> int:
    if copies is not None:
        return as_int(copies, "copies", 1, 1 << 10)
    packet = (
        equal_rate.DEFAULT_PACKET_BYTES
        if packet_bytes is None
        else as_int(packet_bytes, "packet_bytes", 0)
    )
    return choose_copies(topology, size, packet_bytes=packet)[1]


_SOURCE = (
    "original: equal-rate spanning-tree packing (matroid partition, Edmonds 1965) "
    "at the fractional optimum of an LP (HiGHS, column generation); the packing "
    "theorem of Nash-Williams and Tutte (1961), as used by ForestColl (Zhao et al., "
    "2024)"
)


@register_algorithm(
    "synth_treepack_allreduce",
    "allreduce",
    label="Tree packing",
    source=_SOURCE,
    summary="synthesized: equal-rate spanning trees in k copies of the graph, the "
    "data cut evenly over them, reduce up and broadcast down at once",
    parameters={
        "chunk_bytes": None,
        "copies": None,
        "packet_bytes": None,
        "roots": "centre",
        "chunks": None,
        "spray": False,
    },
    max_ranks=MAX_NODES,
    network_parameters=("spray",),
)
def treepack_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    chunk_bytes: Any = None,
    copies: Any = None,
    packet_bytes: Any = None,
    roots: str = "centre",
    chunks: Any = None,
    spray: bool = False,
) -> Schedule:
    """Allreduce over an equal-rate tree packing of ``topology`` (module docstring).

    ``roots="centre"``: every tree rooted at a centre of the graph, the data
    cut evenly over the trees and streamed in chunks. ``roots="every"``: the
    trees re-rooted at every rank, block ``r`` shared among rank ``r``'s trees
    by the LP of :func:`~wafercoll.synthesis.rooted_shares`, each tree
    reducing its share to its root and broadcasting it back (many small
    streams at once: the shorter pipeline for small sizes).
    ``roots="shortest"``: the same over shortest-path trees
    (:func:`~wafercoll.synthesis.shortest_path_trees`), each as shallow as its
    root allows. ``chunks`` (rooted trees only): chunks per tree's share,
    instead of a count from ``chunk_bytes`` (two halve each hop's wait for
    small shares; more add chunk boundaries). ``spray`` (rooted trees only):
    the LP takes the link loads of a network that sprays packets
    (``NetworkModel(spray=True)``).
    """
    topo = _check("synth_treepack_allreduce", ranks, topology)
    size = as_int(size_bytes, "size_bytes", 1)
    if roots not in ("centre", "every", "shortest"):
        raise ValueError(
            f"roots must be 'centre', 'every' or 'shortest', got {roots!r}"
        )
    if _switched(topo):  # no packing of spanning trees through switches yet
        if roots != "centre" and roots != "shortest":
            raise ValueError(
                f"roots={roots!r} needs a graph of endpoints; {topo.name} has "
                "switches (use 'shortest')"
            )
        roots = "shortest"
    if roots != "centre":
        if roots == "every":
            k = equal_rate.rooted_copies(topo) if copies is None else copies
            trees: Any = packing_for(topo, k)
        else:
            trees = shortest_path_trees(topo)
        parents, share, _ = rooted_shares(
            topo, trees, "allreduce", size, spray=as_bool(spray, "spray")
        )
        if chunks is None:
            default = SWITCHED_CHUNK_BYTES if _switched(topo) else DEFAULT_CHUNK_BYTES
            per = as_int(
                default if chunk_bytes is None else chunk_bytes, "chunk_bytes", 1
            )
            c = max(1, round(int(share.max()) / per))
            if _switched(topo):
                c = min(c, 64)
        else:
            c = as_int(chunks, "chunks", 1, 1 << 16)
        c = min(c, int(share.max()))  # a share smaller than c gets empty chunks
        return trees_program(
            parents,
            _chunked(share, c),
            name=f"synth_treepack({topo.name}, {size} B, {len(share)} trees rooted "
            f"at every rank, {c} chunks)",
        )
    pack = packing_for(topo, _copies(topo, size, copies, packet_bytes))
    m = pack.trees
    c = _chunks(size, m, ranks, chunk_bytes)
    return trees_program(
        pack.parents,
        _even_blocks(size, m, c),
        name=f"synth_treepack({topo.name}, {size} B, {m} trees in {pack.copies} "
        f"copies, depth {pack.depth}, {c} chunks)",
    )


#: Shortest-path trees per rank among the re-rooted collectives' candidates.
SHORTEST_PER_RANK = 8


def _switched(topo: Topology) -> bool:
    return topo.num_nodes != topo.num_endpoints


#: Chunk of a rooted tree's share on machines with switches: NCCL's chunk for
#: its tree algorithm (512 KiB, ``wafercoll.gpu.fabric``), so that messages
#: interleave at the switches instead of holding a port for a whole share.
SWITCHED_CHUNK_BYTES = 512 << 10


def _share_blocks(share: np.ndarray, chunk_bytes: Any, switched: bool) -> np.ndarray:
    """Each tree's share cut into as many chunks as the largest needs."""
    if chunk_bytes is None:
        if not switched:
            return share
        chunk_bytes = SWITCHED_CHUNK_BYTES
    per = as_int(chunk_bytes, "chunk_bytes", 1)
    return _chunked(share, min(64, max(1, -(-int(share.max()) // per))))


def _rooted_candidates(topo: Topology, trees: str, copies: Any) -> list:
    """Each rank's candidate trees: the packing's re-rooted, shortest-path, or both."""
    if trees not in ("packing", "shortest", "both"):
        raise ValueError(
            f"trees must be 'packing', 'shortest' or 'both', got {trees!r}"
        )
    p = topo.num_endpoints
    out: list[list[np.ndarray]] = [[] for _ in range(p)]
    if trees == "packing" and _switched(topo):
        raise ValueError(
            f"trees='packing' needs a graph of endpoints; {topo.name} has switches "
            "(use 'shortest' or 'both')"
        )
    if trees != "shortest" and not _switched(topo):
        k = equal_rate.rooted_copies(topo) if copies is None else copies
        pack = packing_for(topo, k)
        for r in range(p):
            out[r] += [reroot(t, r) for t in pack.parents]
    if trees != "packing":
        for r, mine in enumerate(shortest_path_trees(topo, SHORTEST_PER_RANK)):
            out[r] += mine
    return out


def _rooted(name: str, phase: str):  # noqa: ANN202 - a builder
    def build(
        ranks: int,
        size_bytes: int,
        *,
        topology: Any = None,
        copies: Any = None,
        trees: str = "both",
        chunk_bytes: Any = None,
        spray: bool = False,
    ) -> Schedule:
        topo = _check(name, ranks, topology)
        size = as_int(size_bytes, "size_bytes", 1)
        parents, share, _ = rooted_shares(
            topo,
            _rooted_candidates(topo, trees, copies),
            phase,
            size,
            spray=as_bool(spray, "spray"),
        )
        return trees_program(
            parents,
            _share_blocks(share, chunk_bytes, _switched(topo)),
            phase=phase,
            name=f"{name}({topo.name}, {size} B, {len(share)} rooted trees)",
        )

    build.__name__ = name
    build.__doc__ = (
        f"{phase} over rooted trees, block shares by LP (module docstring). "
        "``trees``: each rank's candidates, the equal-rate packing's trees "
        "re-rooted there (``'packing'``), shortest-path trees "
        "(``'shortest'``) or both (on machines with switches, shortest-path "
        "trees only). ``chunk_bytes``: each tree's share in chunks of at most "
        "this (default: one chunk, 512 KiB with switches). ``spray``: the LP "
        "takes the link loads of a network that sprays packets."
    )
    return build


for _phase in ("reduce_scatter", "allgather"):
    register_algorithm(
        algorithm_name("synth", "treepack", _phase),
        _phase,
        label="Tree packing",
        source=_SOURCE + "; block shares by LP",
        summary="synthesized: the packing's trees re-rooted at every rank, each "
        "block shared among its rank's trees by an LP over the link loads",
        parameters={
            "copies": None,
            "trees": "both",
            "chunk_bytes": None,
            "spray": False,
        },
        max_ranks=MAX_NODES,
        network_parameters=("spray",),
    )(_rooted(algorithm_name("synth", "treepack", _phase), _phase))


def _single_root(name: str, phase: str):  # noqa: ANN202 - a builder
    def build(
        ranks: int,
        size_bytes: int,
        *,
        topology: Any = None,
        root: int = 0,
        chunk_bytes: Any = None,
        copies: Any = None,
    ) -> Schedule:
        topo = _check(name, ranks, topology)
        size = as_int(size_bytes, "size_bytes", 1)
        r = as_int(root, "root", 0, ranks - 1)
        pack = packing_for(topo, None if copies is None else copies)
        m = pack.trees
        parents = np.stack([reroot(p, r) for p in pack.parents])
        c = _chunks(size, m, ranks, chunk_bytes)
        return trees_program(
            parents,
            _even_blocks(size, m, c),
            phase=phase,
            name=f"{name}({topo.name}, {size} B, root {r}, {m} trees)",
        )

    build.__name__ = name
    build.__doc__ = f"{phase} over an equal-rate packing re-rooted at ``root``."
    return build


for _phase in ("reduce", "broadcast"):
    register_algorithm(
        algorithm_name("synth", "treepack", _phase),
        _phase,
        label="Tree packing",
        source=_SOURCE,
        summary=f"synthesized: the packing's trees re-rooted at the root, the data "
        f"cut evenly over them, {_phase} pipelined in chunks",
        parameters={"root": 0, "chunk_bytes": None, "copies": None},
        max_ranks=MAX_NODES,
    )(_single_root(algorithm_name("synth", "treepack", _phase), _phase))


def _fastest(
    name: str,
    size_bytes: int,
    topology: Topology,
    network: Any,
    params: dict[str, Any],
    tries: list[dict[str, Any]],
) -> Schedule:
    """The candidate (``params`` updated by each of ``tries``) that simulates fastest.

    One candidate is built and returned without simulating it.
    """
    from ..algorithms import build
    from ..simulate import simulate

    best: tuple[float, Schedule] | None = None
    for extra in tries:
        s = build(name, size_bytes=size_bytes, topology=topology, **{**params, **extra})
        if len(tries) == 1:
            return s
        t = simulate(s, topology, network).time_s
        if best is None or t < best[0]:
            best = (t, s)
    assert best is not None
    return best[1]


def synthesize(
    topology: Topology,
    collective: str = "allreduce",
    size_bytes: int = 1 << 24,
    network: Any = None,
    *,
    root: int = 0,
    chunk_bytes: int | None = None,
    copies: int | None = None,
) -> Schedule:
    """A synthesized, verified schedule of a collective on a topology.

    Parameters
    ----------
    topology : Topology
        A graph of endpoints (mesh, torus, ring, line, custom), or for
        reduce-scatter, allgather and allreduce also a machine with routers
        (module docstring).
    collective : {"allreduce", "reduce_scatter", "allgather", "reduce", "broadcast"}
    size_bytes : int
    network : NetworkModel, optional
        For a reduce-scatter or allgather, the three candidate sets of trees
        (``trees="both"``, ``"packing"``, ``"shortest"``) are simulated under
        it and the fastest is returned. For an allreduce, the copy counts of
        :func:`~wafercoll.synthesis.copy_options` (with the default chunks
        and with one chunk per tree) and the trees rooted at every rank
        (``roots="every"`` and ``"shortest"``, in one or two chunks) are
        simulated under it and the fastest schedule is returned (else
        :func:`~wafercoll.synthesis.choose_copies` decides by its model,
        trees rooted at the centre).
    root : int
        The root of a reduce or broadcast.
    chunk_bytes : int, optional
        Bytes per chunk of a tree's stream. Default: 96 KiB, but no more
        chunks than keep the schedule within :data:`MAX_DEFAULT_TRANSFERS`
        transfers (under dataflow forwarding a chunk streams packet by
        packet, so larger chunks cost nothing; under
        ``dependencies="complete"`` give smaller ones for a deep pipeline).
    copies : int, optional
        Copies of the graph (``k``); default chosen as above.

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
    kinds = ("allreduce", "reduce_scatter", "allgather", "reduce", "broadcast")
    if collective not in kinds:
        raise ValueError(
            f"synthesize builds {', '.join(kinds)} schedules; got {collective!r}"
        )
    if not isinstance(topology, Topology):
        raise TypeError(
            f"topology must be a wafercoll.Topology, got {type(topology).__name__}"
        )
    name = algorithm_name("synth", "treepack", collective)
    params: dict[str, Any] = {"copies": copies}
    if collective in ("reduce", "broadcast"):
        params["root"] = root
    if collective in ("allreduce", "reduce", "broadcast") or chunk_bytes is not None:
        params["chunk_bytes"] = chunk_bytes
    tries: list[dict[str, Any]] = [{}]
    if (
        network is not None
        and network.spray
        and collective not in ("reduce", "broadcast")
    ):
        params["spray"] = True  # the LP's loads as the network spreads them
    if collective == "allreduce" and copies is None and network is not None:
        params["packet_bytes"] = int(network.packet_bytes or 0)
        tries = []
        for m, k in [] if _switched(topology) else copy_options(topology):
            tries.append({"copies": k})
            if chunk_bytes is None:  # one chunk per tree: no chunk boundaries
                tries.append({"copies": k, "chunk_bytes": -(-int(size_bytes) // m)})
        rooted = ("shortest",) if _switched(topology) else ("every", "shortest")
        tries += [{"roots": r, "chunks": c} for r in rooted for c in (None, 2)]
    elif collective in ("reduce_scatter", "allgather") and network is not None:
        kinds = (
            ("shortest",) if _switched(topology) else ("both", "packing", "shortest")
        )
        chunkings = (
            (None, SWITCHED_CHUNK_BYTES) if chunk_bytes is None else (chunk_bytes,)
        )
        tries = [{"trees": t, "chunk_bytes": c} for t in kinds for c in chunkings]
    s = _fastest(name, size_bytes, topology, network, params, tries)
    verify(s)
    return s
