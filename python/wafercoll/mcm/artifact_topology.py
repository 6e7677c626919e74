"""The machine the MCM artifact's DBTree runs were simulated on, and their schedule.

The authors' BookSim artifact (github.com/sabuj7177/TTO_HPCA_2024, commit
``156128c5``) ran every algorithm on the network files
``src/booksim2/runfiles/mesh/anynet/mesh_{N}_200.txt`` (BookSim's "anynet"
format), but its DBTree (``dtree``) runs with ``--radix 1``
(``utils/run_scripts/bw/tree_dtree_bw.sh``, ``models/tree_dtree_models.sh``,
``simba/simba_exp.sh``), and that changes which machine they measured:

* Every file ``mesh_{N}_200.txt`` (N = 9 .. 256, k = sqrt(N)) describes a
  k x k mesh of *routers* in row-major order (router ``r`` at row ``r // k``,
  column ``r % k``), neighbours joined by a channel of 21 cycles each way,
  and **four** BookSim nodes on every router: ``router r node 4r .. node
  4r+3``, injection and ejection channels of 1 cycle (anynet's default when a
  node is given without a weight, ``networks/anynet.cpp``).
* The driver sends chiplet ``i``'s network interface ``j`` from BookSim node
  ``i * radix + j`` (``src/booksim.py``). With the mesh algorithms'
  ``--radix 4`` chiplet ``i`` owns the four nodes of router ``i``: a k x k
  mesh of chiplets. With ``--radix 1`` chiplet ``i`` is node ``i``, on router
  ``i // 4``: the N chiplets sit four to a router on the first ``ceil(N / 4)``
  routers (the top rows of the router mesh), and two chiplets on one router
  talk through it without crossing a 21-cycle channel.
* Odd N: ``simulate.py`` and ``network.py`` run dtree on ``N - 1`` chiplets.

:func:`artifact_dbtree_topology` builds that machine: N chiplets as
endpoints, the k x k routers as hidden routers, the links of the file, and
BookSim's routes. The config names ``routing_function = min`` on
``topology = anynet``, i.e. ``min_anynet``: a table per router filled by
Dijkstra over the router graph (weights = channel latencies, all 21, so hop
counts) that finalises routers in (distance, id) order and keeps the first
predecessor found, the smallest-id one; a packet at router ``r`` bound for a
node of router ``t`` leaves towards the first hop of ``r``'s tree on the path
to ``t``. On the router mesh that is X then Y when ``t`` is in the same
row as ``r`` or below it, and Y then X when ``t`` is above: shortest paths.

Link parameters, per flit of 512 B (``channel_width``) as the modified
BookSim runs them (its channels are not pipelined: a flit holds a channel for
the channel's whole latency; recovered details section 2.8): router-router
channels 21 cycles per flit, so an 8 KiB message (16 data flits and a head
flit) holds one for 357 cycles, ``8192 B / 357 ns`` as in
:data:`wafercoll.mcm.ARTIFACT`; injection and ejection channels 1 cycle per
flit, ``8192 B / 17 ns``. Link latencies are 0: the channel delay is the
flit's serialization, and the router's ``vc_alloc_delay + sw_alloc_delay`` is
the network model's ``hop_latency_s``. Simulate with
``wc.mcm.ARTIFACT.replace(bandwidth_Bps=None)`` to use these per-link rates
(:data:`wafercoll.mcm.ARTIFACT` gives every link the router channel's rate).

``mesh_dbtree_artifact_allreduce`` (registered here, for this topology) is
the transfer DAG of the artifact's ``dtree``
(``src/allreduce/dtree_allreduce.py`` and its driver ``src/hmc.py``), see
:func:`artifact_dbtree_stages`. It is not the paper's DBTree on a mesh
(``mesh_dbtree_allreduce``): the artifact's runs measure this other machine.

Agreement with the committed fig8 ``dtree`` runs. The data movement is the
artifact's: the router-link flits of every one of the 44 runs (16, 25, 64,
81 chiplets, 1 MiB to 256 MiB) equal 17 flits per message per router hop of
this schedule on these routes (``results.power.network.link.flits``, which
counts only router-to-router channels, ``power/dsent_power.cpp``). Rerun
from the committed code, the artifact gives its committed cycles exactly at
4x4 1 MiB (98,382) and 8x8 4 MiB (740,765).

Timing, with the machine modelled as BookSim runs
it (``dependencies="artifact"``, ``order="data"`` and
``wc.simulate(..., engine="routers", buffer_packets=74)`` (BookSim's routers
take turns among their input ports, ``sw_allocator = islip``, and hold
``num_vcs`` 4 x ``vc_buf_size`` 318 flits per input port,
``anynet_mesh_*_200.cfg``: 74 messages of 17 flits)): 21 of the 24 Fig. 8
points (1 MiB to 1 GiB in steps of 4x) are within 5 % of the committed
cycles (median 2.6 %, worst 7.7 %). On the default engine, which serves a
link's packets first come, first served from unlimited queues, 11 are
(``order="interface"``, the chiplet's sends chained) or 3 (``order="data"``).
Behind the artifact's driver as well (``driver=wc.mcm.hmc_driver(
"mesh_dbtree_artifact_allreduce", rows, cols)``: its one interface takes a
chiplet's flows step by step with ``--strict-schedule``, in the order of
:func:`dbtree_driver_steps`, and each child's flow is aggregated in turn),
42 of the 44 Fig. 8 points at every size the artifact ran (1 MiB to 1 GiB
in steps of 2x) are (median 1.2 %, worst 7.8 %): what ``wafercoll
reproduce`` runs.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int
from ..algorithms import AlgorithmInfo, register
from ..schedule import Schedule
from ..topology import Topology, custom
from .machine import ARTIFACT_MESSAGE_BYTES, CLOCK_HZ
from .trees import double_binary_tree

__all__ = [
    "ANYNET_KIND",
    "artifact_anynet_routers",
    "artifact_dbtree_stages",
    "artifact_dbtree_topology",
    "dbtree_driver_steps",
]

#: Family label of the artifact's anynet machine (``Topology.kind``).
ANYNET_KIND = "booksim_anynet"
#: BookSim nodes on every router of ``mesh_{N}_200.txt``.
ANYNET_NODES_PER_ROUTER = 4
#: Cycles a flit holds a router-router channel (the files' link weight 21).
ANYNET_LINK_CYCLES = 21
#: Cycles a flit holds an injection or ejection channel (anynet's default 1).
ANYNET_PORT_CYCLES = 1
#: Flits of one 8 KiB message: 16 of payload and a head flit.
ARTIFACT_MESSAGE_FLITS = 17
#: BookSim node of chiplet ``i``'s interface in the DBTree runs: ``i * radix``.
ARTIFACT_DBTREE_RADIX = 1
#: Chiplet counts with a network file in the artifact (``mesh_{N}_200.txt``).
ANYNET_SIZES = tuple(k * k for k in range(3, 17))
_MAX_CHIPLETS = 256


def artifact_anynet_routers(chiplets: int) -> dict[str, np.ndarray]:
    """The router graph of the artifact's ``mesh_{N}_200.txt`` and its nodes.

    Parameters
    ----------
    chiplets : int
        N, a square from 9 to 256 (the files the artifact has).

    Returns
    -------
    dict of str to ndarray
        ``links`` (``(L, 2)`` router ids, both directions of every channel, in
        the file's line order), ``latency_cycles`` (per link, 21) and
        ``router_of_node`` (the router of every BookSim node ``0 .. 4N - 1``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> g = wc.mcm.artifact_anynet_routers(16)
    >>> len(g["links"]), g["router_of_node"][:9].tolist()
    (48, [0, 0, 0, 0, 1, 1, 1, 1, 2])
    """
    n = as_int(chiplets, "chiplets", 1)
    k = math.isqrt(n)
    if n not in ANYNET_SIZES:
        raise ValueError(
            f"the artifact has network files mesh_{{N}}_200.txt for N = "
            f"{', '.join(map(str, ANYNET_SIZES))} (k x k routers); got {n}"
        )
    links = []
    for r in range(n):  # the files list, per router, E, W, S, N where they exist
        row, col = divmod(r, k)
        for q, ok in (
            (r + 1, col < k - 1),
            (r - 1, col > 0),
            (r + k, row < k - 1),
            (r - k, row > 0),
        ):
            if ok:
                links.append((r, q))
    arr = np.asarray(links, dtype=np.int64)
    return {
        "links": arr,
        "latency_cycles": np.full(len(arr), ANYNET_LINK_CYCLES, dtype=np.int64),
        "router_of_node": np.arange(ANYNET_NODES_PER_ROUTER * n, dtype=np.int64)
        // ANYNET_NODES_PER_ROUTER,
    }


def _min_anynet_next_hop(num_routers: int, links: np.ndarray, w: np.ndarray) -> Any:
    """BookSim's ``min_anynet`` tables: ``nxt[r, t]``, the router after ``r`` to ``t``.

    ``AnyNet::route``: Dijkstra from every router over the link weights;
    among unfinished routers the one with the smallest (distance, id) is
    finalised next, and a neighbour's predecessor changes only on a strictly
    shorter distance. The port towards ``t`` is that of the first router on
    the predecessor chain from ``t`` back to ``r``.
    """
    R = num_routers
    adj: list[list[tuple[int, int]]] = [[] for _ in range(R)]
    for (a, b), c in zip(links.tolist(), w.tolist(), strict=True):
        adj[a].append((b, c))
    for a in adj:
        a.sort()  # anynet keeps neighbours in a std::map: increasing id
    nxt = np.full((R, R), -1, dtype=np.int64)
    for s in range(R):
        dist = [math.inf] * R
        prev = [-1] * R
        dist[s] = 0
        todo = set(range(R))
        while todo:
            u = min(todo, key=lambda v: (dist[v], v))
            todo.remove(u)
            if dist[u] == math.inf:
                break
            for v, c in adj[u]:
                if dist[u] + c < dist[v]:
                    dist[v] = dist[u] + c
                    prev[v] = u
        for t in range(R):
            if t == s or prev[t] < 0:
                continue
            v = t
            while prev[v] != s:
                v = prev[v]
            nxt[s, t] = v
    return nxt


@functools.lru_cache(maxsize=8)
def artifact_dbtree_topology(chiplets: int) -> Topology:
    """The machine of the artifact's DBTree runs: N chiplets on anynet routers.

    Chiplet ``i`` (endpoint ``i``) is BookSim node ``i * radix`` with the
    runs' ``--radix 1``, on router ``i // 4`` of the k x k router mesh of
    ``mesh_{N}_200.txt`` (module docstring). Node ids: the N chiplets, then
    the ``N`` routers as hidden routers (router ``r`` is node ``N + r``).
    Links: for every chiplet an injection link to its router and an ejection
    link back (``8192 B / 17 ns``: 1 cycle per 512 B flit), then both
    directions of every router channel in the file's order (``8192 B / 357
    ns``: 21 cycles per flit); latencies 0. Routes are BookSim's
    ``min_anynet`` (shortest, ties to the smaller router id as its Dijkstra
    breaks them).

    Sources: ``src/booksim2/runfiles/mesh/anynet/mesh_{N}_200.txt`` and
    ``anynet_mesh_{N}_200.cfg`` (``routing_function = min``,
    ``channel_width``), ``src/booksim2/src/networks/anynet.cpp`` (parsing,
    default weights, routing tables), ``src/booksim2/src/channel.hpp`` (the
    non-pipelined channel), ``src/booksim.py`` (node = chiplet x radix +
    interface), ``utils/run_scripts/bw/tree_dtree_bw.sh`` (``--radix 1``).

    Parameters
    ----------
    chiplets : int
        N, a square from 9 to 256; the artifact's DBTree runs use 16, 25, 36,
        64 and 81.

    Returns
    -------
    Topology
        Kind ``"booksim_anynet"``; the topology of
        ``mesh_dbtree_artifact_allreduce``. (Not picklable: it has explicit
        routes; rebuild it from ``chiplets``.)

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.mcm.artifact_dbtree_topology(16)
    >>> t.num_endpoints, t.num_nodes, t.kind
    (16, 32, 'booksim_anynet')
    >>> t.hops(0, 3), t.hops(0, 4), t.hops(0, 15)
    (2, 3, 5)
    """
    n = as_int(chiplets, "chiplets", 1)
    g = artifact_anynet_routers(n)
    R = n  # k x k routers for N = k * k chiplets
    router_of = g["router_of_node"][np.arange(n) * ARTIFACT_DBTREE_RADIX]
    cycle = 1.0 / CLOCK_HZ
    port_bw = ARTIFACT_MESSAGE_BYTES / (
        ARTIFACT_MESSAGE_FLITS * ANYNET_PORT_CYCLES * cycle
    )
    rlinks = g["links"]
    wire_bw = ARTIFACT_MESSAGE_BYTES / (ARTIFACT_MESSAGE_FLITS * g["latency_cycles"])
    pairs = [(i, n + int(router_of[i])) for i in range(n)]
    pairs += [(n + int(router_of[i]), i) for i in range(n)]
    pairs += [(n + int(a), n + int(b)) for a, b in rlinks]
    bw = np.concatenate([np.full(2 * n, port_bw), wire_bw / cycle])
    lid = {p: i for i, p in enumerate(pairs)}
    nxt = _min_anynet_next_hop(R, rlinks, g["latency_cycles"])

    def route(a: int, b: int) -> list[int]:
        ra, rb = int(router_of[a]), int(router_of[b])
        out = [a]  # link a -> its router has id a
        while ra != rb:
            q = int(nxt[ra, rb])
            out.append(lid[(n + ra, n + q)])
            ra = q
        out.append(n + b)  # ejection link of b
        return out

    return custom(
        n,
        pairs,
        num_hidden_routers=R,
        bandwidth_Bps=bw,
        latency_s=0.0,
        routes=route,
        kind=ANYNET_KIND,
        name=f"artifact_anynet({n} chiplets, radix 1)",
    )


# ------------------------------------------------------------------ schedule

#: ``dependencies`` of ``mesh_dbtree_artifact_allreduce``: ``"data"`` orders
#: two children's reductions into one chiplet (a verified AllReduce),
#: ``"artifact"`` lets them run at once as the driver does.
_DEPENDENCIES = ("data", "artifact")


def _tz(x: int) -> int:
    """Trailing zero bits of ``x > 0``."""
    return (x & -x).bit_length() - 1


def artifact_dbtree_stages(n: int) -> dict[str, Any]:
    """The artifact's ``dtree`` trees, edge colours and pipeline stages.

    A restatement of ``DTreeAllreduce.compute_trees``, ``color_edges`` and
    ``generate_schedule`` (``src/allreduce/dtree_allreduce.py``) for an even
    rank count ``n`` (the artifact runs odd N on ``N - 1`` chiplets):

    * the trees are NCCL's btree and its mirror (:func:`double_binary_tree`);
    * *levels*: the root, then for ``h = ceil(log2 n) - 1 .. 1`` the ranks
      whose id (tree 1: mirrored id ``n - 1 - r``) has ``h`` trailing zero
      bits, then the leaves;
    * the colour of a rank's in-edge (``in_edge_color``): 0 for tree 0's root,
      1 for tree 1's; an internal rank of its tree (even ranks in tree 0, odd
      in tree 1) takes its parent's colour, XOR ``(n / 2) odd``, XOR
      ``parent < rank`` (tree 0) or ``parent > rank`` (tree 1); a leaf takes
      the opposite of its colour in the other tree;
    * reduce stages: levels from the leaves up, one step per colour in turn
      (starting with colour 1, alternating across the whole phase): a rank
      sends to its parent in the first step of its level's turn whose colour
      is its in-edge colour;
    * broadcast stages: from the root's child down, colour 1 first; a rank
      receives in the first step of its colour after its parent received.

    Sub-flow ``j`` of a tree (flow ``j`` of tree 0, ``n / 2 + j`` of tree 1)
    crosses a stage-``s`` edge at pipeline step ``2 j + s``.

    Parameters
    ----------
    n : int
        Even number of ranks, >= 2.

    Returns
    -------
    dict
        ``parents`` (2, n), ``colors`` (2, n) in-edge colours, ``reduce`` and
        ``broadcast`` (2, n) stages (-1 for the root).

    Examples
    --------
    >>> import wafercoll as wc
    >>> st = wc.mcm.artifact_dbtree_stages(4)
    >>> st["parents"].tolist()
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    >>> st["reduce"].tolist()
    [[-1, 0, 2, 1], [0, 3, 1, -1]]
    """
    p = as_int(n, "n", 2)
    if p % 2:
        raise ValueError(f"the artifact's dtree runs on an even rank count, got {p}")
    parents = np.stack(double_binary_tree(p))
    roots = [int(np.flatnonzero(t < 0)[0]) for t in parents]
    children: list[list[list[int]]] = [[[] for _ in range(p)] for _ in range(2)]
    for t in range(2):
        for v in range(p):
            if parents[t, v] >= 0:
                children[t][int(parents[t, v])].append(v)
    colors = np.full((2, p), -1, dtype=np.int64)
    flip = (p // 2) % 2

    def in_color(r: int) -> int:
        if r == roots[0]:
            return 0
        if r == roots[1]:
            return 1
        t = r % 2
        q = int(parents[t, r])
        c = colors[t, q] if colors[t, q] >= 0 else in_color(q)
        return int(c) ^ flip ^ int(q < r if t == 0 else q > r)

    for r in range(0, p, 2):
        colors[0, r] = in_color(r)
    for r in range(1, p, 2):
        colors[1, r] = in_color(r)
    colors[0, 1::2] = 1 - colors[1, 1::2]
    colors[1, 0::2] = 1 - colors[0, 0::2]
    depth = max(1, math.ceil(math.log2(p)))
    reduce_st = np.full((2, p), -1, dtype=np.int64)
    bcast_st = np.full((2, p), -1, dtype=np.int64)
    for t in range(2):
        key = (lambda v: v) if t == 0 else (lambda v: p - 1 - v)
        levels = [[roots[t]]]
        for h in range(depth - 1, 0, -1):
            lev = [v for v in range(p) if v != roots[t] and _tz(key(v)) == h]
            if lev:
                levels.append(lev)
        levels.append([v for v in range(p) if v != roots[t] and key(v) % 2 == 1])
        step, color = 0, 1
        for lev in reversed(levels[1:]):
            left = set(lev)
            while left:
                for v in sorted(left):
                    if colors[t, v] == color:
                        reduce_st[t, v] = step
                        left.discard(v)
                step += 1
                color ^= 1
        ready = list(levels[1])
        step, color = 0, 1
        while ready:
            for v in list(ready):
                if colors[t, v] == color:
                    bcast_st[t, v] = step
                    ready.remove(v)
                    ready.extend(children[t][v])
            step += 1
            color ^= 1
    return {
        "parents": parents,
        "colors": colors,
        "reduce": reduce_st,
        "broadcast": bcast_st,
    }


@functools.lru_cache(maxsize=8)
def _dbtree_sends(n: int) -> tuple[tuple[int, int, int, int, int, int], ...]:
    """Every send of the artifact's dtree on ``n`` ranks, in program order.

    ``(phase, pipeline step, tree, src, dst, flow)``: reduce before
    broadcast, then pipeline step (every dependency points to an earlier
    send in this order).
    """
    st = artifact_dbtree_stages(n)
    par, red, bc = st["parents"], st["reduce"], st["broadcast"]
    h = n // 2  # sub-flows per tree; flow t * h + j is sub-flow j of tree t
    sends = []
    for t in range(2):
        for v in range(n):
            q = int(par[t, v])
            if q < 0:
                continue
            for j in range(h):
                sends.append((0, 2 * j + int(red[t, v]), t, v, q, t * h + j))
                sends.append((1, 2 * j + int(bc[t, v]), t, q, v, t * h + j))
    sends.sort()
    return tuple(sends)


def dbtree_driver_steps(chiplets: int) -> np.ndarray:
    """Issue steps of ``mesh_dbtree_artifact_allreduce`` for :class:`wafercoll.Driver`.

    The driver (``src/hmc.py`` with ``--strict-schedule``, as its run script
    runs ``dtree``) takes a chiplet's flows step by step, the next step once
    every interface is free again: the reduce's pipeline steps, then the
    broadcast's. All steps are strict.

    Returns
    -------
    ndarray
        Per transfer of the builder (either ``order``), in its order.

    Examples
    --------
    >>> from wafercoll.mcm.artifact_topology import dbtree_driver_steps
    >>> dbtree_driver_steps(4).size  # 2 trees x 3 edges x 2 flows, both ways
    24
    """
    p = as_int(chiplets, "chiplets", 2, _MAX_CHIPLETS)
    n = p - p % 2
    sends = _dbtree_sends(n)
    span = 1 + max(s[1] for s in sends)  # pipeline steps per phase
    return np.array([s[0] * span + s[1] for s in sends], dtype=np.int64)


def _dbtree_artifact(
    p: int,
    size: int,
    *,
    topology: Any = None,
    order: str = "interface",
    dependencies: str = "data",
) -> Schedule:
    """``mesh_dbtree_artifact_allreduce``: the artifact's ``dtree`` as a DAG.

    Ranks ``0 .. n - 1`` with ``n = p - p % 2`` (odd ``p``: the last rank
    takes no part, as in the artifact); the vector in ``n`` flows (blocks) of
    ``size / n`` bytes, flows ``0 .. n/2 - 1`` on tree 0 and the rest on
    tree 1; the sends and pipeline steps of :func:`artifact_dbtree_stages`.
    Dependencies, from ``src/hmc.py``:

    * data: a reduce send of flow ``f`` waits for the rank's children's flow
      ``f``; a broadcast send for the parent's (``depending_children``,
      ``depending_parent``);
    * ``dependencies="data"`` (default): two children reducing flow ``f``
      into one parent are ordered by step, which makes the schedule a
      verified AllReduce; under the simulator's ``"dataflow"`` reading they
      still travel at once. ``dependencies="artifact"``: they run at once, as
      the driver runs them (``hmc.py`` counts each child's messages apart,
      ``messages_received['reduce-scatter'][flow][child]`` in
      ``set_allreduce`` and ``incoming_message_evaluate``, and only the
      aggregations take turns); two unordered reductions into one block are
      a race :func:`wafercoll.verify` refuses;
    * a rank's all-gather starts after all its reduce sends and every
      reduction from its children (the final entry of its reduce schedule);
    * ``order="interface"``: a rank's sends form one chain in (phase, step)
      order, each waiting until the previous one has arrived: with
      ``--radix 1`` it has one network interface, which takes the next flow
      of its schedule once the previous one is sent (``--strict-schedule``).
      ``order="data"`` drops the chain: run with ``engine="routers"``, a
      rank's flows then leave one after another through its one injection
      channel, in the order their data is ready, which is how the driver
      runs them: its interface takes the next flow once every message of
      the previous one is in its 32-message buffer (``hmc.py``,
      ``send_reduce_message_update``), long before they have arrived.
    """
    if topology is not None and topology.kind != ANYNET_KIND:
        raise ValueError(
            "mesh_dbtree_artifact_allreduce needs "
            "topology=wafercoll.mcm.artifact_dbtree_topology(chiplets)"
        )
    if order not in ("interface", "data"):
        raise ValueError(f"order must be 'interface' or 'data', got {order!r}")
    if dependencies not in _DEPENDENCIES:
        raise ValueError(
            f"dependencies must be one of {', '.join(map(repr, _DEPENDENCIES))}, "
            f"got {dependencies!r}"
        )
    siblings_ordered = dependencies == "data"
    n = p - p % 2  # odd N: the artifact leaves the last chiplet out
    if n < 2:
        raise ValueError(f"mesh_dbtree_artifact needs >= 2 ranks, got {p}")
    if size < n:
        raise ValueError(f"size_bytes = {size} cannot fill {n} non-empty flows")
    src, dst, flow, op, deps = _dbtree_plan(n, order, siblings_ordered)
    part = None if p == n else list(range(n))
    prog = kit.Program(
        p,
        kit.split_bytes(size, n, allow_empty=False),
        "allreduce",
        rule="explicit",
        participants=part,
        name=f"mesh_dbtree_artifact({p} chiplets, {n} ranks, {size} B)",
    )
    prog.step(src, dst, flow, op, deps=deps)
    return prog.schedule()


@functools.lru_cache(maxsize=4)
def _dbtree_plan(n: int, order: str, siblings_ordered: bool) -> tuple[Any, ...]:
    """Sources, destinations, flows, ops and dependency lists of the sends.

    They do not depend on the size, so a sweep over sizes (the artifact's
    figures: up to 11 sizes a mesh) makes them once; read-only arrays (at
    most 9 MB each set, 9x9).
    """
    # Every send of the artifact: (phase, pipeline step, tree, src, dst, flow).
    sends = _dbtree_sends(n)
    cols = np.array(sends, dtype=np.int64).reshape(len(sends), 6)
    src, dst, flow = cols[:, 3].copy(), cols[:, 4].copy(), cols[:, 5].copy()
    op = np.where(cols[:, 0] == 0, 1, 0)
    flat, off = _dbtree_deps(sends, order, siblings_ordered)
    for a in (src, dst, flow, op, flat, off):
        a.flags.writeable = False
    return src, dst, flow, op, (flat, off)


def _dbtree_deps(
    sends: tuple[tuple[int, int, int, int, int, int], ...],
    order: str,
    siblings_ordered: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The dependencies of :func:`_dbtree_artifact`'s sends, as sorted CSR lists.

    Per send (``_dbtree_sends``' order): the sends that deliver the data it
    sends, the previous reduction into the same (rank, flow) when siblings
    are ordered, the rank's previous send with ``order="interface"``, and
    for an all-gather send that starts the rank's all-gather (every one with
    ``order="data"``) all the rank's reduce sends and receives. That last
    set is most of the lists (9x9: 80 ids a send, a million in all), so it
    is kept per rank as one sorted array and joined to the few others, which
    are all-gather sends and so come after it, instead of sorting every
    list anew.

    Returns
    -------
    flat, offsets : numpy.ndarray
        Each send's distinct ids, ascending.
    """
    into: dict[tuple[int, int, int], list[int]] = {}  # (phase, rank, flow) -> ids
    for i, s in enumerate(sends):
        into.setdefault((s[0], s[4], s[5]), []).append(i)
    # every reduce send and receive of a rank, ascending (no send is to itself)
    reduce_of: dict[int, list[int]] = {}
    for i, s in enumerate(sends):
        if s[0] == 0:
            reduce_of.setdefault(s[4], []).append(i)
            reduce_of.setdefault(s[3], []).append(i)
    reduce_arr = {v: np.asarray(ids, dtype=np.int64) for v, ids in reduce_of.items()}
    reduce_set = {v: set(ids) for v, ids in reduce_of.items()}
    last: dict[int, int] = {}  # the rank's previous send (its one interface)
    written: dict[tuple[int, int], int] = {}  # last reduce into (rank, flow)
    pieces: list[np.ndarray] = []
    counts = np.zeros(len(sends) + 1, dtype=np.int64)
    for i, (ph, _, _, v, w, f) in enumerate(sends):
        # the data it sends: its children's reductions, or its parent's copy
        d = set(into.get((ph, v, f), ()))
        if ph == 0:
            # "data": two children reduce into one buffer in pipeline order,
            # as a verified AllReduce needs; "artifact": at once, as the
            # driver lets them (only their aggregations take turns)
            if siblings_ordered and (w, f) in written:
                d.add(written[(w, f)])
            written[(w, f)] = i
        if order == "interface" and v in last:
            d.add(last[v])
        base = None
        if ph == 1 and (order == "data" or v not in last or sends[last[v]][0] == 0):
            # hmc.py starts a chiplet's all-gather after all its reduce sends
            # and every reduction from its children (the final entry of its
            # reduce schedule); with the interface order the first send
            # carries that for the rest
            base = reduce_arr.get(v)
        last[v] = i
        if base is None:
            tail = sorted(d)
        else:
            # What is not a reduce send or receive of v is an all-gather
            # send (its parent's copy, or v's previous send), which comes
            # after every reduce send.
            tail = sorted(d - reduce_set[v])
            pieces.append(base)
        pieces.append(np.asarray(tail, dtype=np.int64))
        counts[i + 1] = len(tail) + (0 if base is None else base.size)
    flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    return flat, np.cumsum(counts)


register(
    AlgorithmInfo.of(
        "mesh",
        "dbtree",
        "allreduce",
        variant="artifact",
        families=(ANYNET_KIND,),
        source=(
            "github.com/sabuj7177/TTO_HPCA_2024 (commit 156128c5), "
            "src/allreduce/dtree_allreduce.py and src/hmc.py, run with --radix 1 "
            "(utils/run_scripts/bw/tree_dtree_bw.sh)"
        ),
        summary=(
            "the MCM artifact's dtree: NCCL double binary tree over N (even) "
            "chiplets, N flows, coloured pipeline, one interface per chiplet"
        ),
        builder=_dbtree_artifact,
        parameters={"order": "interface", "dependencies": "data"},
        max_ranks=_MAX_CHIPLETS,
        label="DBTree (artifact)",
        artifact_names=("dtree", "dtree"),
    )
)
