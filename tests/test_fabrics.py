"""GPU and datacenter fabrics: counts, hops, routes and bounds against closed forms."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from fabric_reference import FABRIC_PRESETS

import wafercoll as wc
from wafercoll.topology import (
    dgx_b200,
    dgx_h100,
    dgx_h100_rail,
    dragonfly,
    fat_tree,
    gb200_nvl72,
    nvswitch_node,
    nvswitch_split,
    rail_optimized,
)


def _switches(t):
    return t.num_nodes - t.num_endpoints


def _check_routes(t):
    """Every ordered pair has a route that is a chain of links from src to dst."""
    src, dst = t.links["src"], t.links["dst"]
    for a in range(t.num_endpoints):
        for b in range(t.num_endpoints):
            if a == b:
                continue
            r = t.route(a, b)
            assert len(r) > 0
            assert src[r[0]] == a and dst[r[-1]] == b
            assert (dst[r[:-1]] == src[r[1:]]).all()
            # no route forwards through another endpoint (GPU or host)
            assert (dst[r[:-1]] >= t.num_endpoints).all()


# -- NVSwitch nodes ------------------------------------------------------------


@pytest.mark.parametrize(
    ("links", "chips", "want"),
    [(18, 4, [5, 4, 4, 5]), (18, 2, [9, 9]), (7, 3, [3, 2, 2]), (6, 4, [2, 1, 1, 2])],
)
def test_nvswitch_split(links, chips, want):
    assert nvswitch_split(links, chips) == want


@pytest.mark.parametrize(("g", "s"), [(2, 1), (4, 3), (8, 4), (16, 6)])
def test_nvswitch_node_counts_and_hops(g, s):
    t = nvswitch_node(g, s, link_Bps=1e9, links_per_gpu=18)
    assert (t.num_endpoints, _switches(t), t.num_links) == (g, s, 2 * g * s)
    hm = t.hops_matrix()
    assert (hm[~np.eye(g, dtype=bool)] == 2).all()
    # every GPU: 18 links of 1 GB/s in each direction
    src, dst, bw = t.links["src"], t.links["dst"], t.links["bandwidth_Bps"]
    for gpu in range(g):
        assert bw[src == gpu].sum() == pytest.approx(18e9)
        assert bw[dst == gpu].sum() == pytest.approx(18e9)
    _check_routes(t)


def test_dgx_h100_split_and_bandwidth():
    t = dgx_h100()
    src, dst, bw = t.links["src"], t.links["dst"], t.links["bandwidth_Bps"]
    for gpu in range(8):
        per_chip = {
            int(d) - 8: float(b) for d, b in zip(dst[src == gpu], bw[src == gpu])
        }
        assert per_chip == {0: 125e9, 1: 100e9, 2: 100e9, 3: 125e9}
    # a switch chip's GPU-facing bandwidth: 8 GPUs x its share of links x 25 GB/s
    assert bw[src == 8].sum() == pytest.approx(8 * 5 * 25e9)
    merged = dgx_h100(merge_switches=True)
    assert (_switches(merged), merged.num_links) == (1, 16)
    assert set(merged.links["bandwidth_Bps"].tolist()) == {450e9}


def test_dgx_b200_and_nvl72():
    b = dgx_b200()
    assert (b.num_endpoints, _switches(b)) == (8, 2)
    assert set(b.links["bandwidth_Bps"].tolist()) == {9 * 50e9}
    n = gb200_nvl72()
    assert (n.num_endpoints, _switches(n), n.num_links) == (72, 18, 2 * 72 * 18)
    assert set(n.links["bandwidth_Bps"].tolist()) == {50e9}
    src, dst = n.links["src"], n.links["dst"]
    for gpu in (0, 35, 71):  # one link to each of the 18 chips
        assert sorted(dst[src == gpu].tolist()) == list(range(72, 90))


def test_nvswitch_sources_spread_over_chips():
    # GPU i's traffic goes through chip i mod s
    t = nvswitch_node(8, 4)
    for a in range(8):
        for b in range(8):
            if a != b:
                first = t.route(a, b)[0]
                assert t.links["dst"][first] == 8 + a % 4


def test_nvswitch_injection_bound():
    # The bound counts the links an endpoint's routes use: one chip per source
    # GPU (GPU i through chip i mod s), so the GPU on a 4-link chip binds;
    # merged chips give every GPU its full NVLink bandwidth.
    s = 1 << 20
    net = wc.NetworkModel(None)
    cases = (
        (dgx_h100(), 4 * 25e9),
        (gb200_nvl72(), 50e9),
        (dgx_h100(merge_switches=True), 450e9),
        (gb200_nvl72(merge_switches=True), 900e9),
    )
    for topo, per_gpu in cases:
        b = wc.bounds.lower_bound(topo, net, "allreduce", s, cuts=False)
        assert b.components["injection"] == pytest.approx(s / per_gpu)


# -- fat tree --------------------------------------------------------------------


def _fat_tree_hops(k, x, y):
    h = k // 2
    if x // h == y // h:
        return 2
    if x // (h * h) == y // (h * h):
        return 4
    return 6


@pytest.mark.parametrize("k", [2, 4, 6])
@pytest.mark.parametrize("routing", ["two_level", "shortest"])
def test_fat_tree_counts_and_hops(k, routing):
    t = fat_tree(k, routing=routing)
    assert t.num_endpoints == k**3 // 4
    assert _switches(t) == 5 * k * k // 4
    assert t.num_links == 3 * k**3 // 2
    # every switch has k ports (k wires, 2k directed links)
    deg = np.bincount(t.links["src"], minlength=t.num_nodes)
    assert (deg[t.num_endpoints :] == k).all()
    assert (deg[: t.num_endpoints] == 1).all()
    hm = t.hops_matrix()
    e = t.num_endpoints
    want = np.array(
        [[0 if x == y else _fat_tree_hops(k, x, y) for y in range(e)] for x in range(e)]
    )
    assert (hm == want).all()
    _check_routes(t)


def test_fat_tree_two_level_spreads_uplinks():
    # an edge switch's uplinks carry equal numbers of its hosts' routes out
    k, h = 4, 2
    t = fat_tree(k)
    e = t.num_endpoints
    src, dst = t.links["src"], t.links["dst"]
    edge0, agg0 = e, e + k * h
    count = np.zeros(t.num_links, dtype=int)
    for x in range(e):
        for y in range(e):
            if x // h != y // h:
                count[t.route(x, y)] += 1
    for edge in range(edge0, agg0):
        ups = np.flatnonzero((src == edge) & (dst >= agg0))
        assert len(ups) == h
        # h hosts, each with e - h remote destinations, spread evenly
        assert (count[ups] == h * (e - h) // h).all()


def test_fat_tree_oversubscription():
    k, r = 4, 4
    t = fat_tree(k, oversubscription=r, link_Bps=1e9)
    e = t.num_endpoints
    src, dst, bw = t.links["src"], t.links["dst"], t.links["bandwidth_Bps"]
    edge = (src >= e) & (src < e + k * k // 2) & (dst >= e + k * k // 2)
    assert edge.sum() == k * (k // 2) ** 2
    assert (bw[edge] == 1e9 / r).all()
    assert (
        bw[
            ~edge & ~((dst >= e + k * k // 2) & (src >= e) & (src < e + k * k // 2))
        ].min()
    ) >= 1e9 / r


def _min_cut_between_endpoints(t):
    """Smallest max-flow between two endpoints (directed capacities): networkx."""
    g = nx.DiGraph()
    for u, v, b in zip(
        t.links["src"].tolist(),
        t.links["dst"].tolist(),
        t.links["bandwidth_Bps"].tolist(),
        strict=True,
    ):
        g.add_edge(u, v, capacity=b)
    return min(
        nx.maximum_flow_value(g, s, d)
        for s, d in itertools.combinations(range(t.num_endpoints), 2)
    )


@pytest.mark.parametrize(("r", "want_cut"), [(1, 1e9), (4, 0.5e9)])
def test_fat_tree_cut_bound_against_max_flow(r, want_cut):
    # k = 4, 1 GB/s: with r = 4 an edge switch's two uplinks (2 x 0.25 GB/s)
    # are the smallest cut; with r = 1 a host's own wire (1 GB/s) is.
    t = fat_tree(4, oversubscription=r, link_Bps=1e9)
    cut = _min_cut_between_endpoints(t)
    assert cut == pytest.approx(want_cut)
    s = 1 << 20
    b = wc.bounds.lower_bound(t, wc.NetworkModel(None), "allreduce", s)
    # an allreduce moves the whole vector across any cut with ranks on both sides
    assert b.components["cut"] == pytest.approx(s / cut)
    if r == 4:
        assert b.binding == "cut"


# -- rail-optimised --------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "g", "s", "q"), [(2, 4, 2, 0), (3, 8, 4, 4), (4, 2, 1, 1)]
)
@pytest.mark.parametrize("routing", ["spread", "shortest"])
def test_rail_optimized_counts_and_hops(n, g, s, q, routing):
    t = rail_optimized(n, g, spines=s, nvswitches=q, nic_Bps=1e9, routing=routing)
    e = n * g
    assert t.num_endpoints == e
    assert _switches(t) == g + s + n * q
    assert t.num_links == 2 * (e + g * s + e * q)
    hm = t.hops_matrix()
    for x in range(e):
        for y in range(e):
            if x == y:
                continue
            same_node, same_rail = x // g == y // g, x % g == y % g
            if same_rail or (same_node and q):
                want = 2
            else:
                want = 4
            assert hm[x, y] == want, (x, y)
    _check_routes(t)


def test_rail_optimized_uses_nvswitch_inside_and_rails_across():
    t = dgx_h100_rail(2)
    e, dst = t.num_endpoints, t.links["dst"]
    rails = range(e, e + 8)
    nv = range(e + 8 + 4, t.num_nodes)
    assert dst[t.route(0, 5)[0]] in nv  # same node: NVSwitch
    assert dst[t.route(0, 8)[0]] == e  # same rail: rail 0
    r = t.route(0, 13)  # node 1 GPU 5: rail 0, spine, rail 5
    assert dst[r[0]] == e and dst[r[-2]] in rails and dst[r[-2]] == e + 5
    # the default spine links are non-blocking: 2 nodes x 50 GB/s over 4 spines
    src, bw = t.links["src"], t.links["bandwidth_Bps"]
    assert (bw[(src == e) & (dst >= e + 8) & (dst < e + 12)] == 2 * 50e9 / 4).all()


def test_rail_optimized_spreads_spines_by_destination_node():
    n, g, s = 6, 4, 3
    t = rail_optimized(n, g, spines=s)
    e, dst = t.num_endpoints, t.links["dst"]
    for x in range(e):
        for y in range(e):
            if x // g != y // g and x % g != y % g:
                assert dst[t.route(x, y)[1]] == e + g + (y // g) % s
    flat = rail_optimized(n, g, spines=s, routing="shortest")
    assert all(
        flat.links["dst"][flat.route(x, y)[1]] == e + g
        for x in range(e)
        for y in range(e)
        if x // g != y // g and x % g != y % g
    )


# -- dragonfly ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "p", "h", "g"), [(2, 1, 1, None), (4, 2, 2, None), (4, 1, 2, 5), (3, 2, 1, 1)]
)
@pytest.mark.parametrize("routing", ["minimal", "shortest"])
def test_dragonfly_counts_and_minimal_hops(a, p, h, g, routing):
    t = dragonfly(a, p, h, g, routing=routing)
    gg = a * h + 1 if g is None else g
    e = gg * a * p
    assert (t.num_endpoints, _switches(t)) == (e, gg * a)
    wires = e + gg * a * (a - 1) // 2 + gg * (gg - 1) // 2
    assert t.num_links == 2 * wires
    src, dst = t.links["src"], t.links["dst"]
    grp = np.where(np.arange(t.num_nodes) >= e, (np.arange(t.num_nodes) - e) // a, -1)
    is_global = (src >= e) & (dst >= e) & (grp[src] != grp[dst])
    # one global wire per ordered pair of groups; at most h global ports per router
    pairs = set(zip(grp[src[is_global]].tolist(), grp[dst[is_global]].tolist()))
    assert len(pairs) == is_global.sum() == gg * (gg - 1)
    assert np.bincount(src[is_global], minlength=t.num_nodes).max() <= h
    # the paper's minimal route length, from the global wire of each pair of groups
    wire = {
        (int(grp[u]), int(grp[v])): (int(u), int(v))
        for u, v in zip(src[is_global], dst[is_global])
    }
    hm = t.hops_matrix()
    for x in range(e):
        for y in range(e):
            if x == y:
                continue
            rs, rd = e + x // p, e + y // p
            if rs == rd:
                want = 2
            elif grp[rs] == grp[rd]:
                want = 3
            else:
                u, v = wire[int(grp[rs]), int(grp[rd])]
                want = 3 + (u != rs) + (v != rd)
            assert hm[x, y] - 2 <= 3  # router-to-router hops
            if routing == "minimal":
                assert hm[x, y] == want
                assert is_global[t.route(x, y)].sum() == (grp[rs] != grp[rd])
            else:
                assert hm[x, y] <= want
    _check_routes(t)


def test_dragonfly_shortest_differs_from_minimal():
    # a = 4, p = 2, h = 2: some pairs have a shorter path through a third group
    m, s = dragonfly(4, 2, 2), dragonfly(4, 2, 2, routing="shortest")
    assert (s.hops_matrix() < m.hops_matrix()).any()
    assert (s.hops_matrix() <= m.hops_matrix()).all()


# -- validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: nvswitch_node(1), ValueError, "gpus"),
        (lambda: nvswitch_node(8, 0), ValueError, "switches"),
        (lambda: nvswitch_node(8, 19), ValueError, "switches"),
        (lambda: nvswitch_node(8, 4, link_Bps=0), ValueError, "link_Bps"),
        (lambda: nvswitch_node(8, 2, split=[10, 9]), ValueError, "split"),
        (lambda: nvswitch_node(8, 2, split=[18, 0]), ValueError, "split"),
        (lambda: nvswitch_node(8.0), TypeError, "gpus"),
        (lambda: nvswitch_node(8, merge_switches=1), TypeError, "merge_switches"),
        (lambda: fat_tree(3), ValueError, "even"),
        (lambda: fat_tree(0), ValueError, "k"),
        (lambda: fat_tree(4, oversubscription=0.5), ValueError, "oversubscription"),
        (lambda: fat_tree(4, routing="ecmp"), ValueError, "routing"),
        (lambda: fat_tree(26), ValueError, "4096"),
        (lambda: fat_tree(4, latency_s=-1), ValueError, "latency_s"),
        (lambda: rail_optimized(0), ValueError, "nodes"),
        (lambda: rail_optimized(2, spines=0), ValueError, "spines"),
        (lambda: rail_optimized(2, nic_Bps=-1), ValueError, "nic_Bps"),
        (lambda: rail_optimized(2, nvswitches=-1), ValueError, "nvswitches"),
        (lambda: rail_optimized(2, nvswitches=19), ValueError, "nvswitches"),
        (lambda: rail_optimized(2, routing="ecmp"), ValueError, "routing"),
        (lambda: rail_optimized(513, 8), ValueError, "4096"),
        (lambda: rail_optimized(2000, 8, nvswitches=4), ValueError, "20000"),
        (lambda: dragonfly(0, 1, 1), ValueError, "a"),
        (lambda: dragonfly(2, 1, 1, g=4), ValueError, "g"),
        (lambda: dragonfly(2, 1, 1, global_Bps=0), ValueError, "global_Bps"),
        (lambda: dragonfly(2, 1, 1, routing="valiant"), ValueError, "routing"),
        (lambda: dragonfly("2", 1, 1), TypeError, "a"),
    ],
)
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# -- machines and simulation --------------------------------------------------------

_MACHINES = [
    "dgx_h100",
    "dgx_b200",
    "nvl72",
    "dgx_h100_x16_rail",
    "fat_tree_k8",
    "dragonfly_a8",
]


def test_machines_table_and_specs():
    assert set(_MACHINES) <= set(wc.machines.names())
    for name in _MACHINES:
        m = wc.machines.get(name)
        assert m.sources
        assert wc.machines.preset(name).bandwidth_Bps is None  # the links' own
    assert wc.machines.parse_spec("fat_tree_k8:4") == ("fat_tree_k8", (4,))
    topo, net = wc.machines.resolve("dragonfly_a8:2x1x1")
    assert (topo.num_endpoints, net.name) == (6, "dragonfly_a8")
    topo, _ = wc.machines.resolve("dgx_h100_x16_rail:2")
    assert topo.num_endpoints == 16
    with pytest.raises(ValueError, match="fat_tree_k8"):
        wc.machines.resolve("fat_tree_k8:3")


@pytest.mark.parametrize("spec", FABRIC_PRESETS)
def test_generic_allreduce_runs_and_verifies(spec):
    topo, net = wc.machines.resolve(spec)
    p = topo.num_endpoints
    s = wc.build("generic_ring_allreduce", p, 4096 * p)
    wc.verify(s)
    res = wc.simulate(s, topo, net)
    bound = wc.bounds.lower_bound(topo, net, "allreduce", 4096 * p)
    assert res.time_s >= bound.time_s * (1 - 1e-9)
    assert res.time_s > 0


@pytest.mark.parametrize(("merge", "slowest_Bps"), [(False, 4 * 25e9), (True, 450e9)])
def test_ring_allreduce_time_on_dgx_h100(merge, slowest_Bps):
    # Ring allreduce, 8 GPUs, S bytes: 2 (p - 1) steps of S / p bytes, each to
    # the next GPU. GPU i sends through chip i mod 4 (4 or 5 links): the GPUs
    # on 4-link chips pace the ring. Merged chips: 18 links for every GPU.
    p, size = 8, 1 << 20
    topo = dgx_h100(merge_switches=merge)
    s = wc.build("generic_ring_allreduce", p, size)
    res = wc.simulate(s, topo, wc.machines.preset("dgx_h100"))
    want = 2 * (p - 1) * (size / p) / slowest_Bps
    assert res.time_s == pytest.approx(want, rel=1e-9)


def test_fabrics_pickle_as_their_call():
    import pickle

    for t in (fat_tree(4, oversubscription=2), dragonfly(2, 1, 1), dgx_h100_rail(1)):
        back = pickle.loads(pickle.dumps(t))
        assert back == t and back.name == t.name


@pytest.mark.parametrize(
    ("make", "want_cut"),
    [
        # a group's (g - 1) global wires: 2 x 0.1 GB/s
        (lambda: dragonfly(2, 1, 1, host_Bps=1e9, local_Bps=1e9, global_Bps=1e8), 2e8),
        # a rail and its GPUs hang on one spine wire of 0.25 GB/s
        (lambda: rail_optimized(4, 2, spines=1, nic_Bps=1e9, spine_Bps=2.5e8), 2.5e8),
    ],
)
def test_cut_bound_against_max_flow(make, want_cut):
    t = make()
    cut = _min_cut_between_endpoints(t)
    assert cut == pytest.approx(want_cut)
    s = 1 << 20
    b = wc.bounds.lower_bound(t, wc.NetworkModel(None), "allreduce", s)
    assert b.components["cut"] == pytest.approx(s / cut)
    assert b.binding == "cut"
