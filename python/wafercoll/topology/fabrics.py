"""GPU and datacenter fabrics: NVSwitch nodes, fat trees, rail networks, dragonflies.

Every fabric is a :func:`~wafercoll.topology.custom` topology: the endpoints
(GPUs or hosts, ids ``0 .. E - 1``) come first, then the switches as hidden
routers. Every wire is a pair of directed links, one each way, of the same
bandwidth. A topology's routes are single paths, so where the hardware
spreads a message over several equal paths (NVSwitch planes, ECMP in a fat
tree) a route sends it down one of them; each constructor says which. The
network model can leave these routes: ``NetworkModel(ecmp=True)`` picks one
shortest path per flow, ``NetworkModel(spray=True)`` one per packet (see
:class:`~wafercoll.NetworkModel`, :meth:`~wafercoll.Topology.spray_shares`).

Numbers and where they come from (``GB/s`` is per direction unless marked
"bidirectional"):

* NVLink 4 (H100): 18 links per GPU, 900 GB/s bidirectional per GPU, so
  25 GB/s per link per direction (NVIDIA, "Upgrading Multi-GPU
  Interconnectivity with the Third-Generation NVIDIA NVSwitch", developer
  blog, 2022; NVIDIA Hopper architecture page: "900 gigabytes per second
  (GB/s) bidirectional per GPU"). The HGX H100 8-GPU baseboard of DGX H100
  has four NVSwitch chips and every GPU connects to all four (NVIDIA,
  "Introducing NVIDIA HGX H100", developer blog, 2022). The 5/4/4/5 split of
  a GPU's 18 links over the four chips could not be found in a vendor page
  we could read; it is the split NVIDIA presented for the HGX H100
  baseboard (Hot Chips 34, 2022, as commonly reported) and is taken as
  given.
* NVLink 5 (B200, GB200): 18 links per GPU, 1.8 TB/s bidirectional per GPU,
  so 50 GB/s per link per direction (Slicast, "NVIDIA introduces NVLink
  Switch", on NVIDIA's figures: "5th generation NVLink provides 100GB/s per
  link [bidirectional] ... 18 ports ... 1.8 TB/s per GPU"). HGX/DGX B200
  has two NVLink switch chips, down from four on HGX H100 (ServeTheHome,
  "Ingrasys shows big NVIDIA NVLink Switch chips change to the HGX B200",
  Computex 2024); how the 18 links split over them is not published in
  what we read: 9 and 9 is assumed. GB200 NVL72: 72 GPUs, nine
  NVLink switch trays (NVIDIA Base Command Manager manual, "NVLink Switch
  Integration": "9 NVLink switch trays per rack"), 18 switch chips in all
  ("The GB200 NVL72 system rack has 18 NVLink Switches", Slicast, ibid.),
  so two per tray; with 18 links per GPU, each GPU has one link to each
  chip (derived).
* ConnectX-7: 400 Gb/s = 50 GB/s per GPU, one NIC per GPU on DGX H100, on
  the GPU's rail leaf (Juniper, "AI Data Center Network with Juniper Apstra,
  NVIDIA GPUs and WEKA: Rail Optimized Fabric": "400Gbps GPU-to-GPU
  bandwidth ... rail N connects GPUs in position N in all the servers across
  leaf switch N").
* Latencies: no vendor latency figure was found, so none is used: every
  link has ``latency_s`` (0 by default), and the machine presets in
  :mod:`wafercoll.machines` are bandwidth-only (no latency assumed).

Examples
--------
>>> import wafercoll as wc
>>> t = wc.topology.fat_tree(4)
>>> t.num_endpoints, t.num_nodes - t.num_endpoints
(16, 20)
>>> t.hops(0, 1), t.hops(0, 2), t.hops(0, 15)
(2, 4, 6)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._util import as_int, as_real
from ._base import Topology, custom, recorded

__all__ = [
    "CONNECTX7_BPS",
    "NVLINK4_LINK_BPS",
    "NVLINK5_LINK_BPS",
    "dgx_b200",
    "dgx_h100",
    "dgx_h100_rail",
    "dragonfly",
    "fat_tree",
    "gb200_nvl72",
    "nvswitch_node",
    "nvswitch_split",
    "rail_optimized",
]

#: NVLink 4 link, bytes per second per direction (900 GB/s bidirectional / 18 / 2).
NVLINK4_LINK_BPS = 25e9
#: NVLink 5 link, bytes per second per direction (1.8 TB/s bidirectional / 18 / 2).
NVLINK5_LINK_BPS = 50e9
#: ConnectX-7 NIC, bytes per second per direction (400 Gb/s).
CONNECTX7_BPS = 400e9 / 8
#: Nodes a custom topology holds (wafercoll.topology.custom's limit).
_MAX_NODES = 20000


class _Links:
    """Wires collected as directed link pairs with their bandwidths."""

    def __init__(self) -> None:
        self.pairs: list[tuple[int, int]] = []
        self.bw: list[float] = []

    def wire(self, u: int, v: int, bw: float) -> int:
        """Add links ``u -> v`` and ``v -> u``; return the id of ``u -> v``."""
        self.pairs += [(u, v), (v, u)]
        self.bw += [bw, bw]
        return len(self.pairs) - 2


def _bps(value: Any, name: str) -> float:
    return as_real(value, name, positive=True, maximum=1e18)


def _latency(value: Any) -> float:
    return as_real(value, "latency_s", 0.0, maximum=86_400.0)


def _check_nodes(total: int, what: str) -> None:
    if total > _MAX_NODES:
        raise ValueError(
            f"{what} has {total} nodes (endpoints and switches); custom "
            f"topologies hold at most {_MAX_NODES}"
        )


def nvswitch_split(links_per_gpu: int, switches: int) -> list[int]:
    """How a GPU's NVLink links spread over the switch chips, as in the DGX design.

    ``links_per_gpu // switches`` links to every chip; the remaining links go
    one each to the outermost chips first (first, last, second, second to
    last, ...), which gives DGX H100's 5/4/4/5 for 18 links on 4 chips.

    Parameters
    ----------
    links_per_gpu : int
        Links of one GPU, >= 1.
    switches : int
        Switch chips, 1 to ``links_per_gpu`` (every chip gets a link).

    Returns
    -------
    list of int
        Links to each chip, summing to ``links_per_gpu``.

    Examples
    --------
    >>> from wafercoll.topology import nvswitch_split
    >>> nvswitch_split(18, 4), nvswitch_split(18, 2), nvswitch_split(18, 18)[:3]
    ([5, 4, 4, 5], [9, 9], [1, 1, 1])
    """
    n = as_int(links_per_gpu, "links_per_gpu", 1, 1 << 16)
    s = as_int(switches, "switches", 1, n)
    split = [n // s] * s
    order = [i // 2 if i % 2 == 0 else s - 1 - i // 2 for i in range(s)]
    for i in order[: n % s]:
        split[i] += 1
    return split


def _nvswitch_wires(
    links: _Links,
    gpus: Sequence[int],
    chips: Sequence[int],
    split: list[int],
    bw: float,
) -> None:
    """Wire each GPU to every chip; GPU ``i``'s first wire goes to chip ``i mod s``."""
    s = len(chips)
    for i, gpu in enumerate(gpus):
        for k in range(s):
            j = (i + k) % s
            if split[j]:
                links.wire(gpu, chips[j], split[j] * bw)


def _check_split(split: Any, links_per_gpu: int, switches: int) -> list[int]:
    if split is None:
        return nvswitch_split(links_per_gpu, switches)
    out = [as_int(x, "split[i]", 0, links_per_gpu) for x in split]
    if len(out) != switches or sum(out) != links_per_gpu:
        raise ValueError(
            f"split must give one link count per switch ({switches}) summing to "
            f"links_per_gpu = {links_per_gpu}, got {list(split)!r}"
        )
    if not all(out):
        raise ValueError(f"split must give every switch >= 1 link, got {out!r}")
    return out


@recorded
def nvswitch_node(
    gpus: int = 8,
    switches: int = 4,
    *,
    link_Bps: float = NVLINK4_LINK_BPS,
    links_per_gpu: int = 18,
    split: Sequence[int] | None = None,
    latency_s: float = 0.0,
    merge_switches: bool = False,
    name: str | None = None,
) -> Topology:
    """GPUs joined by NVSwitch chips: each GPU's NVLink links spread over the chips.

    Endpoints ``0 .. gpus - 1`` are the GPUs, hidden routers ``gpus ..
    gpus + switches - 1`` the switch chips. The ``split[j]`` NVLink links of a
    GPU to chip ``j`` are modelled as **one link each way of the aggregate
    bandwidth** ``split[j] * link_Bps``. Routes are shortest paths (two hops);
    GPU ``i``'s traffic goes through chip ``i mod switches`` (its links are
    numbered from that chip on, and the lowest link id wins), so the chips
    share the load by source. The hardware instead spreads every transfer
    over all chips: a single pair here gets ``split[i mod s] / links_per_gpu``
    of a GPU's bandwidth, where the hardware gives it all. With
    ``merge_switches=True`` the chips become one router and each GPU one link
    of ``links_per_gpu * link_Bps``, which is the hardware's bandwidth for any
    traffic pattern the chips spread evenly.

    Parameters
    ----------
    gpus : int
        GPUs, >= 2.
    switches : int
        NVSwitch chips, 1 to ``links_per_gpu``.
    link_Bps : float, optional
        Bandwidth of one NVLink link per direction, > 0 (default NVLink 4,
        25 GB/s; see the module's sources).
    links_per_gpu : int, optional
        NVLink links per GPU, >= 1 (18 on H100 and B200).
    split : sequence of int, optional
        Links of a GPU to each chip (default :func:`nvswitch_split`).
    latency_s : float, optional
        Latency of every link, >= 0.
    merge_switches : bool, optional
        Model the chips as one switch (see above).
    name : str, optional
        Display name.

    Returns
    -------
    Topology
        Kind ``"nvswitch"``: ``gpus`` endpoints, ``switches`` (or 1) hidden
        routers and ``2 * gpus * switches`` (or ``2 * gpus``) links.

    Raises
    ------
    TypeError, ValueError
        For a parameter of the wrong type or out of range (named).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.nvswitch_node(8, 4)
    >>> t.num_endpoints, t.num_nodes, t.num_links, t.hops(0, 7)
    (8, 12, 64, 2)
    >>> sorted(set(t.links["bandwidth_Bps"].tolist()))
    [100000000000.0, 125000000000.0]
    """
    g = as_int(gpus, "gpus", 2, _MAX_NODES)
    n = as_int(links_per_gpu, "links_per_gpu", 1, 1 << 16)
    s = as_int(switches, "switches", 1, n)
    bw = _bps(link_Bps, "link_Bps")
    lat = _latency(latency_s)
    parts = _check_split(split, n, s)
    if not isinstance(merge_switches, (bool, np.bool_)):
        raise TypeError("merge_switches must be a bool")
    if merge_switches:
        parts, s = [n], 1
    _check_nodes(g + s, "nvswitch_node")
    links = _Links()
    _nvswitch_wires(links, range(g), range(g, g + s), parts, bw)
    label = name or f"nvswitch_node({g}x{s})"
    return custom(
        g,
        links.pairs,
        num_hidden_routers=s,
        bandwidth_Bps=np.array(links.bw),
        latency_s=lat,
        kind="nvswitch",
        name=label,
    )


@recorded
def dgx_h100(*, latency_s: float = 0.0, merge_switches: bool = False) -> Topology:
    """One NVIDIA DGX H100: 8 GPUs, 4 NVSwitch chips, 18 NVLink 4 links per GPU.

    Each GPU has 5, 4, 4 and 5 links to the four chips at 25 GB/s per link
    and direction, 450 GB/s per direction per GPU in all (sources in
    :mod:`wafercoll.topology.fabrics`). See :func:`nvswitch_node` for the
    model and ``merge_switches``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.dgx_h100()
    >>> float(t.links["bandwidth_Bps"][t.links["src"] == 0].sum())
    450000000000.0
    """
    return nvswitch_node(
        8,
        4,
        link_Bps=NVLINK4_LINK_BPS,
        links_per_gpu=18,
        latency_s=latency_s,
        merge_switches=merge_switches,
        name="dgx_h100",
    )


@recorded
def dgx_b200(*, latency_s: float = 0.0, merge_switches: bool = False) -> Topology:
    """One NVIDIA DGX B200: 8 GPUs, 2 NVLink switch chips, 18 NVLink 5 links per GPU.

    Links at 50 GB/s per direction, 900 GB/s per direction per GPU; the 9/9
    split over the two chips is assumed (sources in
    :mod:`wafercoll.topology.fabrics`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.dgx_b200()
    >>> t.num_nodes, float(t.links["bandwidth_Bps"][0])
    (10, 450000000000.0)
    """
    return nvswitch_node(
        8,
        2,
        link_Bps=NVLINK5_LINK_BPS,
        links_per_gpu=18,
        latency_s=latency_s,
        merge_switches=merge_switches,
        name="dgx_b200",
    )


@recorded
def gb200_nvl72(*, latency_s: float = 0.0, merge_switches: bool = False) -> Topology:
    """One NVIDIA GB200 NVL72 rack: 72 GPUs, 18 NVLink switch chips in 9 trays.

    Every GPU has one NVLink 5 link (50 GB/s per direction) to each of the 18
    chips, 900 GB/s per direction per GPU (sources in
    :mod:`wafercoll.topology.fabrics`). Chip ``j`` sits in tray ``j // 2``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.gb200_nvl72()
    >>> t.num_endpoints, t.num_nodes - t.num_endpoints, t.num_links
    (72, 18, 2592)
    """
    return nvswitch_node(
        72,
        18,
        link_Bps=NVLINK5_LINK_BPS,
        links_per_gpu=18,
        latency_s=latency_s,
        merge_switches=merge_switches,
        name="gb200_nvl72",
    )


@recorded
def fat_tree(
    k: int,
    oversubscription: float = 1.0,
    *,
    link_Bps: float = 50e9,
    latency_s: float = 0.0,
    routing: str = "two_level",
) -> Topology:
    """The k-ary fat tree of Al-Fares, Loukissas and Vahdat (SIGCOMM 2008).

    ``k`` pods, each of ``k / 2`` edge and ``k / 2`` aggregation switches;
    ``(k / 2)**2`` core switches; ``k**3 / 4`` hosts, ``k / 2`` on each edge
    switch. Every switch has ``k`` ports. Edge switch ``e`` of a pod is wired
    to every aggregation switch of its pod; aggregation switch ``a`` to core
    switches ``a * k / 2 .. a * k / 2 + k / 2 - 1`` (Section 3.2).

    Node ids: hosts ``0 .. k**3/4 - 1`` (host ``i`` of edge switch ``e`` of
    pod ``p`` is ``(p * k / 2 + e) * k / 2 + i``), then the edge switches
    (pod-major), the aggregation switches (pod-major), the core switches.

    Oversubscription ``r`` divides the **bandwidth** of every edge-aggregation
    wire (both directions) by ``r``, keeping the wire count: a pod's uplink
    capacity is ``1 / r`` of its hosts' (host and aggregation-core wires keep
    ``link_Bps``).

    Routing: ``"two_level"`` (default) spreads traffic as the paper's two-level
    tables do (Section 3.3): going up, the switch at position ``z`` in its
    layer sends a packet for host index ``i`` (within its edge switch) up port
    ``(i + z) mod k/2``; going down the path is unique. Every route is a
    shortest path. ``"shortest"``: shortest paths, lowest link id first (all
    up-traffic of an edge switch then takes the same uplink).

    Parameters
    ----------
    k : int
        Switch ports, even, 2 to 40 (``k**3 / 4`` hosts; the two-level routes
        are explicit tables, for at most 4096 hosts, i.e. ``k <= 24``).
    oversubscription : float, optional
        ``r >= 1``.
    link_Bps : float, optional
        Bandwidth of a wire per direction, > 0 (default 50 GB/s, a 400 Gb/s
        port).
    latency_s : float, optional
        Latency of every link, >= 0.
    routing : {"two_level", "shortest"}, optional
        See above.

    Returns
    -------
    Topology
        Kind ``"fat_tree"``: ``k**3/4`` endpoints, ``5 k**2 / 4`` switches,
        ``3 k**3 / 2`` links. Hops: 2 under one edge switch, 4 in one pod, 6
        across pods.

    Raises
    ------
    TypeError, ValueError
        For a parameter of the wrong type or out of range (named).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.fat_tree(4, oversubscription=2)
    >>> t.num_links, sorted(set(t.links["bandwidth_Bps"].tolist()))
    (96, [25000000000.0, 50000000000.0])
    """
    kk = as_int(k, "k", 2, 40)
    if kk % 2:
        raise ValueError(f"k must be even, got {kk}")
    r = as_real(oversubscription, "oversubscription", 1.0, maximum=1e6)
    bw = _bps(link_Bps, "link_Bps")
    lat = _latency(latency_s)
    if routing not in ("two_level", "shortest"):
        raise ValueError(f"routing must be 'two_level' or 'shortest', got {routing!r}")
    h = kk // 2
    hosts = kk**3 // 4
    if routing == "two_level" and hosts > 4096:
        raise ValueError(
            f"k = {kk} gives {hosts} hosts; two-level routes are tables for at "
            f"most 4096 hosts (k <= 24): pass routing='shortest'"
        )
    edge0, agg0 = hosts, hosts + kk * h
    core0 = agg0 + kk * h
    _check_nodes(core0 + h * h, "fat_tree")
    links = _Links()
    host_up = [links.wire(x, edge0 + x // h, bw) for x in range(hosts)]
    # up[(switch, port)] = id of the uplink; port = index of the upper switch.
    up: dict[tuple[int, int], int] = {}
    for p in range(kk):
        for e in range(h):
            for a in range(h):
                up[edge0 + p * h + e, a] = links.wire(
                    edge0 + p * h + e, agg0 + p * h + a, bw / r
                )
    for p in range(kk):
        for a in range(h):
            for c in range(h):
                up[agg0 + p * h + a, c] = links.wire(
                    agg0 + p * h + a, core0 + a * h + c, bw
                )
    routes = None
    if routing == "two_level":

        def routes(src: int, dst: int) -> list[int]:
            es, ed = src // h, dst // h  # global edge index
            i = dst % h  # host index of the destination
            if es == ed:
                return [host_up[src], host_up[dst] + 1]
            ps, pd = es // h, ed // h
            a = (i + es % h) % h  # aggregation switch of the pod, going up
            e_up = up[edge0 + es, a]
            e_down = up[edge0 + ed, a] + 1
            if ps == pd:
                return [host_up[src], e_up, e_down, host_up[dst] + 1]
            c = (i + a) % h  # core port of aggregation switch a
            return [
                host_up[src],
                e_up,
                up[agg0 + ps * h + a, c],
                up[agg0 + pd * h + a, c] + 1,
                e_down,
                host_up[dst] + 1,
            ]

    return custom(
        hosts,
        links.pairs,
        num_hidden_routers=core0 + h * h - hosts,
        bandwidth_Bps=np.array(links.bw),
        latency_s=lat,
        routes=routes,
        kind="fat_tree",
        name=f"fat_tree(k={kk}" + (f", r={r:g})" if r != 1 else ")"),
    )


@recorded
def rail_optimized(
    nodes: int,
    gpus_per_node: int = 8,
    *,
    spines: int | None = None,
    nic_Bps: float = CONNECTX7_BPS,
    spine_Bps: float | None = None,
    nvswitches: int = 0,
    nvlink_Bps: float = NVLINK4_LINK_BPS,
    nvlinks_per_gpu: int = 18,
    latency_s: float = 0.0,
    routing: str = "spread",
    name: str | None = None,
) -> Topology:
    """A rail-optimised network: GPU ``i`` of every node on rail (leaf) switch ``i``.

    Endpoints: GPU ``i`` of node ``n`` is ``n * gpus_per_node + i``. Hidden
    routers: the ``gpus_per_node`` rail switches, then the ``spines`` spine
    switches, then each node's NVSwitch chips (node-major). Each GPU has a
    NIC wire to its rail switch (``nic_Bps``); every rail switch a wire to
    every spine (``spine_Bps``, default ``nodes * nic_Bps / spines``: as much
    up as down, a non-blocking leaf). With ``nvswitches > 0`` the GPUs of a
    node are also joined by an :func:`nvswitch_node` of that many chips
    (``nvlinks_per_gpu`` links of ``nvlink_Bps``, split by
    :func:`nvswitch_split`).

    Routing, ``"spread"`` (default): GPUs of one node talk over NVSwitch (2
    hops; GPU ``i`` through chip ``i mod nvswitches``, as in
    :func:`nvswitch_node`), GPUs on one rail over their rail switch (2 hops),
    and other pairs (and GPUs of one node without NVSwitch) over rail, spine,
    rail (4 hops), the spine chosen by the destination's node, ``node mod
    spines``, so that a rail's traffic to many nodes spreads over the spines
    (destination-based, like the fat tree's two-level tables; per-flow ECMP
    and packet spraying are options of the network model). No route passes
    through a peer GPU (no PXN-style
    forwarding). These are explicit route tables, for at most 4096 GPUs.
    ``"shortest"``: shortest paths, lowest link id first, with the rail-spine
    wires numbered first, then the NIC wires, then the NVLink wires: the same
    hop counts and no forwarding through GPUs either (paths through a peer GPU
    are as short but lose on link ids), but every rail sends all its
    cross-rail traffic through spine 0.

    Parameters
    ----------
    nodes : int
        Nodes, >= 1.
    gpus_per_node : int, optional
        GPUs per node = rails, >= 1.
    spines : int, optional
        Spine switches, >= 1 (default ``gpus_per_node // 2``, at least 1).
    nic_Bps : float, optional
        NIC bandwidth per GPU per direction, > 0 (default ConnectX-7,
        400 Gb/s = 50 GB/s).
    spine_Bps : float, optional
        Bandwidth of a rail-spine wire per direction, > 0.
    nvswitches : int, optional
        NVSwitch chips per node, 0 (none) to ``nvlinks_per_gpu``.
    nvlink_Bps : float, optional
        Bandwidth of one NVLink link per direction (default NVLink 4).
    nvlinks_per_gpu : int, optional
        NVLink links per GPU.
    latency_s : float, optional
        Latency of every link, >= 0.
    routing : {"spread", "shortest"}, optional
        See above.
    name : str, optional
        Display name.

    Returns
    -------
    Topology
        Kind ``"rail_optimized"``: ``nodes * gpus_per_node`` endpoints,
        ``gpus_per_node + spines + nodes * nvswitches`` switches.

    Raises
    ------
    TypeError, ValueError
        For a parameter of the wrong type or out of range (named).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.rail_optimized(4, 8, nvswitches=4)
    >>> t.num_endpoints, t.hops(0, 1), t.hops(0, 8), t.hops(0, 9)
    (32, 2, 2, 4)
    """
    n = as_int(nodes, "nodes", 1, _MAX_NODES)
    g = as_int(gpus_per_node, "gpus_per_node", 1, _MAX_NODES)
    s = as_int(max(1, g // 2) if spines is None else spines, "spines", 1, _MAX_NODES)
    nic = _bps(nic_Bps, "nic_Bps")
    spine = _bps(n * nic / s if spine_Bps is None else spine_Bps, "spine_Bps")
    q = as_int(
        nvswitches, "nvswitches", 0, as_int(nvlinks_per_gpu, "nvlinks_per_gpu", 1)
    )
    lat = _latency(latency_s)
    if routing not in ("spread", "shortest"):
        raise ValueError(f"routing must be 'spread' or 'shortest', got {routing!r}")
    e = n * g
    total = e + g + s + n * q
    _check_nodes(total, "rail_optimized")
    if routing == "spread" and e > 4096:
        raise ValueError(
            f"rail_optimized has {e} GPUs; spread routes are tables for at most "
            f"4096 GPUs: pass routing='shortest'"
        )
    links = _Links()
    rail0, spine0, nv0 = e, e + g, e + g + s
    for i in range(g):
        for j in range(s):
            links.wire(rail0 + i, spine0 + j, spine)
    for x in range(e):
        links.wire(x, rail0 + x % g, nic)
    if q:
        nvl = _bps(nvlink_Bps, "nvlink_Bps")
        parts = nvswitch_split(nvlinks_per_gpu, q)
        for m in range(n):
            gpus = range(m * g, (m + 1) * g)
            _nvswitch_wires(
                links, gpus, range(nv0 + m * q, nv0 + (m + 1) * q), parts, nvl
            )
    routes = None
    if routing == "spread":
        ids = {pair: k for k, pair in enumerate(links.pairs)}

        def routes(x: int, y: int) -> list[int]:
            (mx, ix), (my, iy) = divmod(x, g), divmod(y, g)
            if mx == my and q:
                path = [x, nv0 + mx * q + ix % q, y]
            elif ix == iy:
                path = [x, rail0 + ix, y]
            else:
                path = [x, rail0 + ix, spine0 + my % s, rail0 + iy, y]
            return [ids[u, v] for u, v in zip(path, path[1:], strict=False)]

    return custom(
        e,
        links.pairs,
        num_hidden_routers=total - e,
        bandwidth_Bps=np.array(links.bw),
        latency_s=lat,
        routes=routes,
        kind="rail_optimized",
        name=name or f"rail_optimized({n}x{g})",
    )


@recorded
def dgx_h100_rail(nodes: int = 16, *, latency_s: float = 0.0) -> Topology:
    """DGX H100 nodes on a rail-optimised network of ConnectX-7 NICs.

    :func:`rail_optimized` with 8 rails, 4 spines, 50 GB/s NICs per GPU and a
    :func:`dgx_h100` inside every node (4 NVSwitch chips, 18 NVLink 4 links
    per GPU).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.dgx_h100_rail(2)
    >>> t.num_endpoints, t.num_nodes
    (16, 36)
    """
    return rail_optimized(
        as_int(nodes, "nodes", 1, 2000),
        8,
        spines=4,
        nic_Bps=CONNECTX7_BPS,
        nvswitches=4,
        nvlink_Bps=NVLINK4_LINK_BPS,
        nvlinks_per_gpu=18,
        latency_s=latency_s,
        name=f"dgx_h100_rail({nodes})",
    )


@recorded
def dragonfly(
    a: int,
    p: int,
    h: int,
    g: int | None = None,
    *,
    host_Bps: float = 50e9,
    local_Bps: float = 50e9,
    global_Bps: float = 50e9,
    latency_s: float = 0.0,
    routing: str = "minimal",
) -> Topology:
    """The dragonfly of Kim, Dally, Scott and Abts (ISCA 2008).

    ``g`` groups of ``a`` routers; ``p`` hosts on each router; the routers of
    a group all-to-all joined by local wires; ``h`` global ports per router.
    With ``g = a h + 1`` (the default, the largest) every pair of groups has
    exactly one global wire; with fewer groups every pair still has one and
    the remaining ports stay unused. Global port ``k`` of group ``i`` (on the
    group's router ``k // h``) goes to group ``(i + k + 1) mod g``, arriving
    on that group's port ``g - 2 - k`` (a consecutive arrangement).

    Node ids: host ``j`` of router ``r`` of group ``i`` is
    ``(i a + r) p + j``; then the routers, router ``r`` of group ``i`` being
    ``g a p + i a + r``.

    Routing: ``"minimal"`` (default) is Kim et al.'s minimal routing
    (Section 4.1): to another group, a local hop to the group's router that
    holds the global wire to the destination group (if it is not the source
    router), that wire, and a local hop to the destination router (if it is
    not where the wire lands): at most 3 router-to-router hops, one global.
    These are explicit route tables, for at most 4096 hosts.
    ``"shortest"``: shortest paths by hops, lowest link id first (local
    wires are numbered before global ones). They are never longer, but they
    are not the paper's routes everywhere: where a path through a third
    group is shorter (two global wires landing on the destination router
    against local-global-local) they take it, and some ties also go through
    a third group. Valiant (non-minimal) routing is not modelled.

    Parameters
    ----------
    a : int
        Routers per group, >= 1.
    p : int
        Hosts per router, >= 1.
    h : int
        Global ports per router, >= 1.
    g : int, optional
        Groups, 1 to ``a h + 1`` (default ``a h + 1``).
    host_Bps, local_Bps, global_Bps : float, optional
        Bandwidth per direction of host, local and global wires, > 0.
    latency_s : float, optional
        Latency of every link, >= 0.
    routing : {"minimal", "shortest"}, optional

    Returns
    -------
    Topology
        Kind ``"dragonfly"``: ``g a p`` endpoints, ``g a`` routers and
        ``2 (g a p + g a (a - 1) / 2 + g (g - 1) / 2)`` links.

    Raises
    ------
    TypeError, ValueError
        For a parameter of the wrong type or out of range (named).

    Examples
    --------
    >>> import wafercoll as wc
    >>> t = wc.topology.dragonfly(2, 1, 1)
    >>> t.num_endpoints, t.num_nodes, t.num_links
    (6, 12, 24)
    """
    aa = as_int(a, "a", 1, _MAX_NODES)
    pp = as_int(p, "p", 1, _MAX_NODES)
    hh = as_int(h, "h", 1, _MAX_NODES)
    gmax = aa * hh + 1
    gg = gmax if g is None else as_int(g, "g", 1, gmax)
    bws = [_bps(host_Bps, "host_Bps"), _bps(local_Bps, "local_Bps")]
    bws.append(_bps(global_Bps, "global_Bps"))
    lat = _latency(latency_s)
    if routing not in ("minimal", "shortest"):
        raise ValueError(f"routing must be 'minimal' or 'shortest', got {routing!r}")
    e = gg * aa * pp
    _check_nodes(e + gg * aa, "dragonfly")
    if routing == "minimal" and e > 4096:
        raise ValueError(
            f"dragonfly has {e} hosts; minimal routes are tables for at most "
            f"4096 hosts: pass routing='shortest'"
        )
    links = _Links()
    r0 = e
    for x in range(e):
        links.wire(x, r0 + x // pp, bws[0])
    for i in range(gg):
        for u in range(aa):
            for v in range(u + 1, aa):
                links.wire(r0 + i * aa + u, r0 + i * aa + v, bws[1])
    for i in range(gg):
        for k in range(gg - 1):
            j = (i + k + 1) % gg
            if i < j:
                kb = gg - 2 - k
                links.wire(r0 + i * aa + k // hh, r0 + j * aa + kb // hh, bws[2])
    routes = None
    if routing == "minimal":
        ids = {pair: n for n, pair in enumerate(links.pairs)}
        # land[i][j] = (router of group i holding the wire to j, where it lands)
        land: dict[tuple[int, int], tuple[int, int]] = {}
        for u, v in links.pairs[2 * e :]:
            if (u - r0) // aa != (v - r0) // aa:
                land[(u - r0) // aa, (v - r0) // aa] = (u, v)

        def routes(x: int, y: int) -> list[int]:
            rs, rd = r0 + x // pp, r0 + y // pp
            path = [rs]
            if rs != rd:
                i, j = (rs - r0) // aa, (rd - r0) // aa
                if i != j:
                    path += [w for w in land[i, j] if w != rs]
                if path[-1] != rd:
                    path.append(rd)
            hops = [ids[x, rs]]
            hops += [ids[u, v] for u, v in zip(path, path[1:], strict=False)]
            return [*hops, ids[rd, y]]

    return custom(
        e,
        links.pairs,
        num_hidden_routers=gg * aa,
        bandwidth_Bps=np.array(links.bw),
        latency_s=lat,
        routes=routes,
        kind="dragonfly",
        name=f"dragonfly(a={aa}, p={pp}, h={hh}, g={gg})",
    )
