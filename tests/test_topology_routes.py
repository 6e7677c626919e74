"""Routes of stars, custom graphs and clusters against independent derivations.

Custom topologies read their routes from a next-hop table, stars and clusters
compute them. Every route of small topologies (hidden routers, several
equally short paths, unreachable pairs) is compared with two references:

* an independent breadth-first search written here from the documented rule
  (shortest by hops; at each node the lowest-id link that stays on a shortest
  path), and
* the per-destination search the routes came from before the table
  (``_core.Topology.search_route``, kept as the fallback above the table's
  size limit).

Cluster routes are compared with the node sequence the header of
``topology.hpp`` states for each locality, turned into link ids through the
link list (not through the id arithmetic the cluster uses).
"""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path

import numpy as np
import pytest

import wafercoll as wc

# The fat tree whose spines tie, as the route digests build it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from schedule_digests import fat_tree_graph  # noqa: E402

sys.path.pop(0)


def bfs_routes(t: wc.topology.Topology) -> tuple[dict, np.ndarray]:
    """Every endpoint pair's route and the next-hop table, by the documented rule."""
    src, dst = t.links["src"].tolist(), t.links["dst"].tolist()
    n, e = t.num_nodes, t.num_endpoints
    out_links: list[list[int]] = [[] for _ in range(n)]
    in_links: list[list[int]] = [[] for _ in range(n)]
    for i, (u, v) in enumerate(zip(src, dst, strict=True)):
        out_links[u].append(i)
        in_links[v].append(i)
    table = np.full((n, e), -1, dtype=np.int64)
    routes = {}
    for d in range(e):
        dist = [None] * n
        dist[d] = 0
        queue = deque([d])
        while queue:
            v = queue.popleft()
            for i in in_links[v]:
                if dist[src[i]] is None:
                    dist[src[i]] = dist[v] + 1
                    queue.append(src[i])
        for u in range(n):
            if u == d or dist[u] is None:
                continue
            table[u, d] = min(
                i
                for i in out_links[u]
                if dist[dst[i]] is not None and dist[dst[i]] == dist[u] - 1
            )
        for a in range(e):
            if a == d:
                routes[a, d] = []
            elif dist[a] is not None:
                route, u = [], a
                while u != d:
                    route.append(int(table[u, d]))
                    u = dst[route[-1]]
                routes[a, d] = route
    return routes, table


def shuffled_torus(rows: int, cols: int, seed: int) -> wc.topology.Topology:
    """A torus as a custom graph, its links in a random order (new tie-breaks)."""
    lk = wc.torus(rows, cols).links
    pairs = np.stack([lk["src"], lk["dst"]], axis=1)
    return wc.custom(rows * cols, np.random.default_rng(seed).permutation(pairs))


def router_mesh(rows: int, cols: int) -> wc.topology.Topology:
    """A mesh of hidden routers with one endpoint on each border router."""
    border = [
        (r, c)
        for r in range(rows)
        for c in range(cols)
        if r in (0, rows - 1) or c in (0, cols - 1)
    ]
    e = len(border)
    links = []
    for i, (r, c) in enumerate(border):
        links += [(e + r * cols + c, i), (i, e + r * cols + c)]
    for r in range(rows):
        for c in range(cols):
            if c + 1 < cols:
                links += [(e + r * cols + c + 1, e + r * cols + c)]
                links += [(e + r * cols + c, e + r * cols + c + 1)]
            if r + 1 < rows:
                links += [(e + r * cols + c, e + (r + 1) * cols + c)]
                links += [(e + (r + 1) * cols + c, e + r * cols + c)]
    return wc.custom(e, links, num_hidden_routers=rows * cols)


def random_digraph(seed: int) -> wc.topology.Topology:
    """Sparse random directed links: ties, routers, and some unreachable pairs."""
    rng = np.random.default_rng(seed)
    e, h = 9, 5
    pairs = {(int(u), int(v)) for u, v in rng.integers(0, e + h, size=(28, 2))}
    links = sorted(p for p in pairs if p[0] != p[1])
    order = rng.permutation(len(links))
    return wc.custom(e, [links[i] for i in order], num_hidden_routers=h)


TOPOLOGIES = {
    "star1": lambda: wc.topology.star(1),
    "star2": lambda: wc.topology.star(2),
    "star7": lambda: wc.topology.star(7),
    "star_as_custom": lambda: wc.custom(
        5,
        [(i, 5) if k == 0 else (5, i) for i in range(5) for k in (0, 1)],
        num_hidden_routers=1,
    ),
    "fat_tree_4x4x2": lambda: fat_tree_graph(4, 4, 2),
    "fat_tree_3x2x3": lambda: fat_tree_graph(3, 2, 3),
    "torus_4x4_shuffled": lambda: shuffled_torus(4, 4, 1),
    "torus_3x5_shuffled": lambda: shuffled_torus(3, 5, 2),
    "router_mesh_4x5": lambda: router_mesh(4, 5),
    "random_a": lambda: random_digraph(3),
    "random_b": lambda: random_digraph(11),
}


@pytest.mark.parametrize("name", sorted(TOPOLOGIES))
def test_every_route_matches_bfs_and_old_search(name):
    t = TOPOLOGIES[name]()
    routes, table = bfs_routes(t)
    e = t.num_endpoints
    hops = t.hops_matrix()
    unreachable = 0
    for a in range(e):
        for b in range(e):
            if (a, b) not in routes:
                unreachable += 1
                with pytest.raises(ValueError, match="no route"):
                    t.route(a, b)
                with pytest.raises(ValueError, match="no route"):
                    t._core.search_route(a, b)
                assert hops[a, b] == -1
                continue
            expected = routes[a, b]
            assert t.route(a, b).tolist() == expected, (a, b)
            assert t._core.search_route(a, b).tolist() == expected, (a, b)
            assert t.hops(a, b) == len(expected) == hops[a, b]
    np.testing.assert_array_equal(t.next_hops(), table)
    if name.startswith("random"):
        assert unreachable > 0  # the case exercises unreachable pairs


def test_the_cases_have_ties():
    # Without several equally short paths the tie rule would go untested:
    # count the pairs joined by more than one shortest path.
    nx = pytest.importorskip("networkx")
    for name in ("fat_tree_4x4x2", "torus_4x4_shuffled", "router_mesh_4x5"):
        t = TOPOLOGIES[name]()
        g = t.to_networkx()
        e = t.num_endpoints
        ties = sum(
            len(list(nx.all_shortest_paths(g, a, b))) > 1
            for a in range(e)
            for b in range(e)
            if a != b
        )
        assert ties > 0, name


def test_star_routes_are_closed_form():
    n = 6
    t = wc.topology.star(n, bandwidth_Bps=2e9, latency_s=1e-7)
    assert (t.kind, t.name, t.num_endpoints, t.num_nodes, t.num_links) == (
        "star",
        "star(6)",
        n,
        n + 1,
        2 * n,
    )
    for a in range(n):
        for b in range(n):
            assert t.route(a, b).tolist() == ([] if a == b else [2 * a, 2 * b + 1])
    assert (t.links["src"][::2] == np.arange(n)).all()
    assert (t.links["dst"][1::2] == np.arange(n)).all()
    as_custom = wc.custom(
        n,
        [(i, n) if k == 0 else (n, i) for i in range(n) for k in (0, 1)],
        num_hidden_routers=1,
        bandwidth_Bps=2e9,
        latency_s=1e-7,
        kind="star",
        name="star(6)",
    )
    assert t == as_custom
    np.testing.assert_array_equal(t.next_hops(), as_custom.next_hops())


def test_large_star_routes_without_tables():
    # Beyond the custom family's node limit: routes are computed.
    n = 100_000
    assert n > int(wc._core.Topology.MAX_CUSTOM_NODES)
    t = wc.topology.star(n)
    assert t.route(99_999, 3).tolist() == [199_998, 7]
    assert t.hops(5, 77_777) == 2
    h = t._core.hops_to(12)
    assert h[12] == 0 and (np.delete(h, 12) == 2).all()
    assert t.link_id(n, 4) == 9
    with pytest.raises(ValueError, match="next_hops: .* entries exceed the limit"):
        t.next_hops()
    with pytest.raises(ValueError, match="search_route"):
        t._core.search_route(0, 1)
    limit = int(wc._core.Topology.MAX_STAR_ENDPOINTS)
    with pytest.raises(ValueError, match="exceeds the limit"):
        wc.topology.star(limit + 1)
    with pytest.raises(ValueError, match="bandwidth_Bps"):
        wc.topology.star(4, bandwidth_Bps=-1.0)
    with pytest.raises(TypeError):
        wc.topology.star(4.5)


def test_simulation_on_a_star_is_loggp():
    # One message alone: 2 o + L + s G (NetworkModel.loggp's docstring).
    L, o, g, G = 2.5e-6, 1.5e-6, 1e-6, 6e-9
    s = wc.Schedule(3, [1000], "unknown")
    s.add_transfer(2, 0, [0])
    r = wc.simulate(s, wc.topology.star(3), wc.NetworkModel.loggp(L, o, g, G))
    assert r.time_s == pytest.approx(2 * o + L + 1000 * G, rel=1e-12)


def test_above_the_table_limit_routes_come_from_the_search():
    # A bidirectional ring of n endpoints with n * n > 2**27 entries keeps no
    # table: routes are still the lowest-id shortest paths (clockwise links
    # 0..n-1 win the tie at distance n / 2).
    n = 11_600
    assert n * n > int(wc._core.Topology.MAX_NEXT_HOP_ENTRIES)
    links = [(i, (i + 1) % n) for i in range(n)] + [((i + 1) % n, i) for i in range(n)]
    t = wc.custom(n, links)
    assert t.route(0, 3).tolist() == [0, 1, 2]
    assert t.route(3, 0).tolist() == [n + 2, n + 1, n]
    assert t.route(5, 5 + n // 2).tolist() == list(range(5, 5 + n // 2))
    assert t.hops(0, n - 1) == 1
    assert t.route(10, 2).tolist() == t._core.search_route(10, 2).tolist()
    with pytest.raises(ValueError, match="next_hops: 11600 nodes x 11600 endpoints"):
        t.next_hops()


def test_next_hops_refused_where_routes_are_not_destination_based():
    for t in (
        wc.mesh(2, 3),
        wc.topology.cluster(2, 2),
        wc.custom(2, [(0, 1), (1, 0)], routes={(0, 1): [0], (1, 0): [1]}),
    ):
        with pytest.raises(ValueError, match="next_hops: only stars and custom"):
            t.next_hops()


def cluster_nodes_on_route(c: wc.topology.Topology, a: int, b: int) -> list[int]:
    """The node sequence a -> b of the header comment of topology.hpp."""
    p, k, nodes = c.num_endpoints, c.sockets, c.cluster_nodes
    s_count = nodes * k if k > 1 else 0
    router = [p + s_count + n for n in range(nodes)]
    fabric = p + s_count + nodes
    lanes = c.num_nodes > fabric + 1
    node, sock = c.node_of.tolist(), c.socket_of.tolist()

    def switch(r: int) -> int:
        return p + sock[r] if k > 1 else router[node[r]]

    if node[a] != node[b] and lanes:
        return [a, fabric + 1 + node[a], fabric, fabric + 1 + node[b], b]
    if node[a] == node[b] and sock[a] == sock[b]:
        return [a, switch(a), b]
    if node[a] == node[b]:
        return [a, switch(a), router[node[a]], switch(b), b]
    middle = [router[node[a]], fabric, router[node[b]]]
    if k == 1:
        return [a, *middle, b]
    return [a, switch(a), *middle, switch(b), b]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"nodes": 3, "ppn": 2},
        {"nodes": 4, "ppn": 1},
        {"nodes": 3, "ppn": 1, "lane_Bps": 5e9},
        {"nodes": 2, "ppn": 2, "rank_to_node": [1, 1, 0, 0]},
        {"nodes": 2, "ppn": 4, "sockets": 2},
        {"nodes": 3, "ppn": 6, "sockets": 3, "rank_to_node": [2, 0, 1] * 6},
        {"nodes": 2, "ppn": 4, "sockets": 2, "lane_Bps": 5e9},
        {"nodes": 3, "ppn": 2, "lane_Bps": 5e9},
    ],
)
def test_cluster_routes_follow_the_stated_node_sequences(kwargs):
    c = wc.topology.cluster(**kwargs)
    link_of = {
        (u, v): i
        for i, (u, v) in enumerate(
            zip(c.links["src"].tolist(), c.links["dst"].tolist(), strict=True)
        )
    }
    for a in range(c.num_endpoints):
        for b in range(c.num_endpoints):
            if a == b:
                assert c.route(a, b).tolist() == []
                continue
            seq = cluster_nodes_on_route(c, a, b)
            expected = [link_of[u, v] for u, v in zip(seq, seq[1:])]
            assert c.route(a, b).tolist() == expected, (a, b)
            assert c.hops(a, b) == len(expected)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"nodes": 1, "ppn": 1},
        {"nodes": 3, "ppn": 4},
        {"nodes": 3, "ppn": 4, "sockets": 2},
        {"nodes": 3, "ppn": 6, "sockets": 3, "rank_to_node": [2, 0, 1] * 6},
        {"nodes": 2, "ppn": 4, "sockets": 2, "lane_Bps": 5e9},
        {"nodes": 5, "ppn": 3, "lane_Bps": 6e9, "rank_to_node": [4, 3, 2, 1, 0] * 3},
    ],
)
def test_cluster_links_are_the_documented_numbering(kwargs):
    # The links a cluster computes (it stores none) against the table of
    # cpp/include/wafercoll/topology/topology.hpp, rebuilt here from each
    # rank's node and socket, with a different bandwidth and latency per
    # class so that a link of the wrong class shows.
    rates = {"process": 1e9, "socket": 2e9, "nic": 3e9}
    lats = {"process": 1e-7, "socket": 2e-7, "nic": 3e-7, "lane": 4e-7}
    c = wc.topology.cluster(
        **kwargs,
        process_Bps=rates["process"],
        socket_Bps=rates["socket"],
        nic_Bps=rates["nic"],
        process_latency_s=lats["process"],
        socket_latency_s=lats["socket"],
        nic_latency_s=lats["nic"],
        lane_latency_s=lats["lane"],
    )
    rates["lane"] = kwargs.get("lane_Bps")
    lanes = rates["lane"] is not None
    nodes, sockets = kwargs["nodes"], kwargs.get("sockets", 1)
    P = nodes * kwargs["ppn"]
    S = nodes * sockets if sockets > 1 else 0
    N = nodes
    router0, fabric = P + S, P + S + N
    nic0 = fabric + 1 if lanes else router0
    node, sock = c.node_of.tolist(), c.socket_of.tolist()
    switch = [P + sock[r] if S else router0 + node[r] for r in range(P)]
    up_down: list[tuple[str, list[tuple[int, int]]]] = [
        ("process", [(r, switch[r]) for r in range(P)]),
        ("socket", [(P + s, router0 + s // sockets) for s in range(S)]),
        ("nic", [(nic0 + n, fabric) for n in range(N)]),
    ]
    if lanes:
        up_down.append(("lane", [(r, nic0 + node[r]) for r in range(P)]))
    expected = []
    for cls, ups in up_down:
        expected += [(a, b, cls) for a, b in ups]
        expected += [(b, a, cls) for a, b in ups]
    lk = c.links
    assert c.num_links == len(expected)
    assert c.num_nodes == fabric + 1 + (N if lanes else 0)
    got = zip(
        lk["src"].tolist(),
        lk["dst"].tolist(),
        lk["bandwidth_Bps"].tolist(),
        lk["latency_s"].tolist(),
        strict=True,
    )
    for i, ((a, b, cls), (u, v, bw, lat)) in enumerate(zip(expected, got, strict=True)):
        assert (u, v, bw, lat) == (a, b, rates[cls], lats[cls]), i
        assert c.link_id(u, v) == i
    assert c.link_id(0, fabric) == -1  # no process reaches the fabric directly
