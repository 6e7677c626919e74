"""Topology families through the Python API, checked against closed forms."""

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import _core
from wafercoll.topology import Topology, custom, line, mesh, ring, torus

SHAPES = [(1, 1), (1, 2), (1, 5), (2, 1), (2, 2), (2, 3), (3, 4), (5, 5), (4, 6)]


def dim_edges(n, wrap):
    """Undirected neighbour edges along one dimension of size n."""
    if n <= 1:
        return 0
    return n if wrap and n >= 3 else n - 1


def expected_links(rows, cols, wrap):
    return 2 * (rows * dim_edges(cols, wrap) + cols * dim_edges(rows, wrap))


def ring_dist(a, b, n):
    d = abs(a - b)
    return min(d, n - d)


def expected_hops(t, a, b):
    rows, cols = t.shape
    (ra, ca), (rb, cb) = divmod(a, cols), divmod(b, cols)
    if t.kind in ("ring", "torus"):
        return ring_dist(ra, rb, rows) + ring_dist(ca, cb, cols)
    return abs(ra - rb) + abs(ca - cb)


def walk(t, src, route):
    """Follow a route link by link; fail if consecutive links do not chain."""
    lk = t.links
    at = src
    for link in route:
        assert lk["src"][link] == at
        at = int(lk["dst"][link])
    return at


@pytest.fixture(params=SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def shape(request):
    return request.param


@pytest.fixture(params=["mesh", "torus"])
def grid(request, shape):
    make = {"mesh": mesh, "torus": torus}[request.param]
    return make(*shape, bandwidth_Bps=3e9, latency_s=2e-9)


def test_link_counts(grid, shape):
    rows, cols = shape
    wrap = grid.kind == "torus"
    assert grid.num_links == expected_links(rows, cols, wrap)
    if grid.kind == "mesh":
        assert grid.num_links == 2 * (rows * (cols - 1) + cols * (rows - 1))
    if wrap and rows >= 3 and cols >= 3:
        assert grid.num_links == 4 * rows * cols
    assert grid.num_endpoints == grid.num_nodes == rows * cols
    assert grid.shape == shape
    assert grid.name == f"{grid.kind}({rows}x{cols})"


def test_links_are_distinct_neighbours(grid, shape):
    rows, cols = shape
    lk = grid.links
    pairs = set(zip(lk["src"].tolist(), lk["dst"].tolist(), strict=True))
    assert len(pairs) == grid.num_links
    for i, (u, v) in enumerate(zip(lk["src"], lk["dst"], strict=True)):
        (ru, cu), (rv, cv) = divmod(int(u), cols), divmod(int(v), cols)
        step = expected_hops(grid, int(u), int(v))
        assert step == 1 and (ru == rv or cu == cv)
        assert grid.link_id(int(u), int(v)) == i
    np.testing.assert_array_equal(lk["bandwidth_Bps"], np.full(grid.num_links, 3e9))
    np.testing.assert_array_equal(lk["latency_s"], np.full(grid.num_links, 2e-9))
    assert lk["src"].dtype == np.int32 and lk["bandwidth_Bps"].dtype == np.float64
    with pytest.raises(ValueError):
        lk["src"][:1] = 0  # read-only view of an immutable topology


def test_routes_chain_and_hops_match_closed_form(grid):
    for a in range(grid.num_endpoints):
        for b in range(grid.num_endpoints):
            r = grid.route(a, b)
            assert r.dtype == np.int32
            assert walk(grid, a, r) == b
            assert len(r) == grid.hops(a, b) == expected_hops(grid, a, b)


def test_routes_go_x_then_y(grid, shape):
    _, cols = shape
    lk = grid.links
    for a in range(grid.num_endpoints):
        for b in range(grid.num_endpoints):
            kinds = [
                "y" if lk["src"][i] // cols != lk["dst"][i] // cols else "x"
                for i in grid.route(a, b)
            ]
            assert kinds == sorted(kinds), (a, b, kinds)  # all x before any y


def expected_step(frm, to, n):
    """Next index along a wrapped dimension of size n >= 3: shorter way, ties +1."""
    forward = (to - frm) % n
    return (frm + 1) % n if 2 * forward <= n else (frm - 1) % n


def test_torus_ties_go_positive(shape):
    rows, cols = shape
    t = torus(rows, cols)
    lk = t.links
    for a in range(t.num_nodes):
        for b in range(t.num_nodes):
            rb, cb = divmod(b, cols)
            for i in t.route(a, b):
                r0, c0 = divmod(int(lk["src"][i]), cols)
                r1, c1 = divmod(int(lk["dst"][i]), cols)
                if r0 == r1 and cols >= 3:  # an X step
                    assert c1 == expected_step(c0, cb, cols), (a, b)
                if c0 == c1 and rows >= 3:  # a Y step
                    assert r1 == expected_step(r0, rb, rows), (a, b)


def test_even_torus_tie_examples():
    t = torus(4, 6)
    dst = t.links["dst"]
    assert dst[t.route(0, 3)].tolist() == [1, 2, 3]  # 3 either way: +x
    assert dst[t.route(4, 1)].tolist() == [5, 0, 1]  # 3 either way, wraps: +x
    assert dst[t.route(0, 4)].tolist() == [5, 4]  # not a tie: -x
    assert dst[t.route(18, 6)].tolist() == [0, 6]  # rows 3 -> 1 of 4: +y wraps
    r = ring(6)
    assert r.links["dst"][r.route(5, 2)].tolist() == [0, 1, 2]


@pytest.mark.parametrize("n", [1, 2, 3, 6, 7])
def test_line_and_ring_are_one_row_grids(n):
    pairs = [(line(n), mesh(1, n)), (ring(n), torus(1, n))]
    for one_dim, grid2d in pairs:
        assert one_dim.shape == (1, n)
        assert one_dim.name == f"{one_dim.kind}({n})"
        assert one_dim.num_links == grid2d.num_links
        for a in range(n):
            for b in range(n):
                np.testing.assert_array_equal(one_dim.route(a, b), grid2d.route(a, b))
    assert line(n).num_links == 2 * (n - 1)
    assert ring(n).num_links == (2 * n if n >= 3 else 2 * (n - 1))
    assert [ring(n).hops(0, b) for b in range(n)] == [min(b, n - b) for b in range(n)]


def test_hops_matrix_equals_pairwise_hops(grid):
    m = grid.hops_matrix()
    e = grid.num_endpoints
    assert m.shape == (e, e) and m.dtype == np.int32
    expected = [[grid.hops(a, b) for b in range(e)] for a in range(e)]
    np.testing.assert_array_equal(m, np.array(expected))


@pytest.mark.parametrize("make", [line, ring])
def test_hops_matrix_one_dim(make):
    t = make(7)
    idx = np.arange(7)
    d = np.abs(idx[:, None] - idx[None, :])
    if make is ring:
        d = np.minimum(d, 7 - d)
    np.testing.assert_array_equal(t.hops_matrix(), d)


def test_hops_matrix_refuses_huge():
    with pytest.raises(ValueError, match="8192"):
        line(8193).hops_matrix()


@pytest.mark.parametrize(
    "t", [line(6), mesh(3, 4), mesh(4, 6), torus(5, 5), torus(4, 6)], ids=repr
)
def test_networkx_shortest_paths_equal_hops(t):
    nx = pytest.importorskip("networkx")
    g = t.to_networkx()
    assert g.number_of_nodes() == t.num_nodes
    assert g.number_of_edges() == t.num_links
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    for a in range(t.num_endpoints):
        for b in range(t.num_endpoints):
            assert lengths[a][b] == t.hops(a, b)
    u, v, data = next(iter(g.edges(data=True)))
    assert t.link_id(u, v) == data["link"]
    assert data["bandwidth_Bps"] == 1e9 and data["latency_s"] == 0.0
    assert all(g.nodes[v]["endpoint"] for v in g.nodes)


def hand_graph():
    # Endpoints 0..3 and router 4; three 2-hop paths 0 -> 3: via 1 (links 0, 1),
    # via 4 (2, 3) and via 2 (6, 7). The lowest link ids win: (0, 1).
    links = [(0, 1), (1, 3), (0, 4), (4, 3), (3, 2), (2, 0), (0, 2), (2, 3)]
    bw = np.arange(1, 9) * 1e9
    return custom(4, links, num_hidden_routers=1, bandwidth_Bps=bw, latency_s=1e-6)


def test_custom_routes_on_hand_graph():
    t = hand_graph()
    assert t.kind == "custom" and t.shape == (0, 0)
    assert (t.num_endpoints, t.num_nodes, t.num_links) == (4, 5, 8)
    assert t.route(0, 3).tolist() == [0, 1]
    assert t.route(3, 1).tolist() == [4, 5, 0]
    assert t.route(1, 0).tolist() == [1, 4, 5]
    assert t.route(2, 2).tolist() == []
    assert t.hops(1, 2) == 2
    assert t.link_id(4, 3) == 3 and t.link_id(3, 4) == -1
    np.testing.assert_array_equal(t.links["bandwidth_Bps"], np.arange(1, 9) * 1e9)
    expected = [[0, 1, 1, 2], [3, 0, 2, 1], [1, 2, 0, 1], [2, 3, 1, 0]]
    np.testing.assert_array_equal(t.hops_matrix(), expected)
    g = t.to_networkx()
    assert [g.nodes[v]["endpoint"] for v in range(5)] == [True] * 4 + [False]
    assert g.edges[4, 3]["bandwidth_Bps"] == 4e9
    with pytest.raises(IndexError, match="src"):
        t.route(4, 3)  # a router is not an endpoint
    with pytest.raises(ValueError, match="no grid"):
        t.coords(0)


def test_custom_tie_break_follows_link_order():
    via2_first = [(0, 2), (2, 3), (0, 1), (1, 3)]
    assert custom(4, via2_first).route(0, 3).tolist() == [0, 1]
    via1_first = [(0, 1), (2, 3), (0, 2), (1, 3)]
    assert custom(4, via1_first).route(0, 3).tolist() == [0, 3]


def test_custom_copy_of_torus_has_same_distances():
    t = torus(3, 4)
    lk = t.links
    c = custom(12, np.stack([lk["src"], lk["dst"]], axis=1))
    np.testing.assert_array_equal(c.hops_matrix(), t.hops_matrix())
    for a in range(12):
        for b in range(12):
            assert walk(c, a, c.route(a, b)) == b


def test_custom_unreachable():
    t = custom(3, [(0, 1)])
    assert t.route(0, 1).tolist() == [0]
    with pytest.raises(ValueError, match="no route from 1 to 0"):
        t.route(1, 0)
    with pytest.raises(ValueError, match="no route"):
        t.hops(0, 2)
    assert t.hops_matrix().tolist() == [[0, 1, -1], [-1, 0, -1], [-1, -1, 0]]
    assert custom(2, []).num_links == 0


def test_coords_and_node_at():
    t = mesh(3, 4)
    for v in range(12):
        assert t.coords(v) == divmod(v, 4)
        assert t.node_at(*t.coords(v)) == v
    assert line(5).coords(3) == (0, 3)
    with pytest.raises(IndexError, match="node"):
        t.coords(12)


def test_to_pandas_columns():
    pd = pytest.importorskip("pandas")
    t = torus(3, 3, bandwidth_Bps=2e9)
    df = t.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["src", "dst", "bandwidth_Bps", "latency_s"]
    assert df.index.name == "link" and len(df) == 36
    assert (df["bandwidth_Bps"] == 2e9).all()
    assert df.loc[t.link_id(2, 0), "dst"] == 0  # the row's wrap link


def test_repr_and_html():
    t = mesh(2, 3)
    assert repr(t) == "<Topology mesh(2x3): 6 endpoints, 14 links>"
    html = t._repr_html_()
    assert "mesh(2x3)" in html and "<table>" in html and ">14<" in html
    assert "custom(4 endpoints, 1 router, 8 links)" in repr(hand_graph())
    assert "1e+09 - 8e+09" in hand_graph()._repr_html_()


def test_large_torus_routes_without_tables():
    t = torus(1024, 1024)
    assert t.num_links == 4 * 1024 * 1024
    a, b = t.node_at(1, 1000), t.node_at(700, 3)
    assert t.hops(a, b) == ring_dist(1, 700, 1024) + ring_dist(1000, 3, 1024)
    assert len(t.route(a, b)) == t.hops(a, b)


@pytest.mark.parametrize("bad", [2.0, True, "3", None, 3.5])
@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda v: line(v), "n"),
        (lambda v: ring(v), "n"),
        (lambda v: mesh(v, 3), "rows"),
        (lambda v: torus(3, v), "cols"),
        (lambda v: custom(v, []), "num_endpoints"),
        (lambda v: custom(2, [], num_hidden_routers=v), "num_hidden_routers"),
    ],
)
def test_non_integer_sizes_raise_type_error(make, name, bad):
    with pytest.raises(TypeError, match=name):
        make(bad)


@pytest.mark.parametrize("bad", [0, -1])
@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda v: line(v), "n"),
        (lambda v: ring(v), "n"),
        (lambda v: mesh(v, 3), "rows"),
        (lambda v: mesh(3, v), "cols"),
        (lambda v: torus(v, 3), "rows"),
        (lambda v: custom(v, []), "num_endpoints"),
    ],
)
def test_bad_sizes_raise_value_error(make, name, bad):
    with pytest.raises(ValueError, match=f"{name} must be >= 1"):
        make(bad)


def test_numpy_integers_are_sizes():
    assert mesh(np.int64(2), np.int32(3)).num_nodes == 6


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"bandwidth_Bps": 0.0}, "bandwidth_Bps"),
        ({"bandwidth_Bps": -1e9}, "bandwidth_Bps"),
        ({"bandwidth_Bps": math.inf}, "bandwidth_Bps"),
        ({"bandwidth_Bps": math.nan}, "bandwidth_Bps"),
        ({"latency_s": -1.0}, "latency_s"),
        ({"latency_s": math.inf}, "latency_s"),
    ],
)
@pytest.mark.parametrize("make", [line, ring, lambda **kw: mesh(2, 2, **kw), custom])
def test_bad_link_parameters(make, kwargs, name):
    if make is line or make is ring:
        call = lambda: make(3, **kwargs)  # noqa: E731
    elif make is custom:
        call = lambda: custom(2, [(0, 1)], **kwargs)  # noqa: E731
    else:
        call = lambda: make(**kwargs)  # noqa: E731
    with pytest.raises(ValueError, match=name):
        call()


def test_link_parameter_types():
    with pytest.raises(TypeError, match="bandwidth_Bps"):
        mesh(2, 2, bandwidth_Bps="fast")
    with pytest.raises(TypeError, match="latency_s"):
        torus(2, 2, latency_s=True)


def test_huge_sizes_are_refused():
    with pytest.raises(ValueError, match="exceeds the limit"):
        mesh(4096, 4096)
    with pytest.raises(ValueError, match="n = 1099511627776 exceeds"):
        line(2**40)
    with pytest.raises(ValueError, match="num_hidden_routers"):
        custom(2, [], num_hidden_routers=10**9)
    with pytest.raises(ValueError, match="20000"):
        custom(19000, [], num_hidden_routers=1001)


@pytest.mark.parametrize(
    ("links", "kwargs", "exc", "match"),
    [
        ([(0, 1.5)], {}, TypeError, "links must hold integer"),
        ([(0, 1, 2)], {}, ValueError, "links must be"),
        ([(0, 1), (1,)], {}, ValueError, "links must be"),
        ([(0, 3)], {}, ValueError, r"links\[0\]\.dst = 3"),
        ([(0, 1), (-1, 0)], {}, ValueError, r"links\[1\]\.src = -1"),
        ([(1, 1)], {}, ValueError, "self-loop"),
        ([(0, 1), (1, 2), (0, 1)], {}, ValueError, r"links\[2\] duplicates"),
        ([(0, 1)], {"bandwidth_Bps": [1e9, 2e9]}, ValueError, "bandwidth_Bps"),
        ([(0, 1)], {"bandwidth_Bps": [-1.0]}, ValueError, "bandwidth_Bps"),
        ([(0, 1)], {"latency_s": np.array([np.nan])}, ValueError, "latency_s"),
        ([(0, 1)], {"latency_s": ["x"]}, TypeError, "latency_s"),
    ],
)
def test_bad_custom_links(links, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        custom(3, links, **kwargs)


def test_bad_route_arguments():
    t = mesh(2, 3)
    with pytest.raises(IndexError, match="dst = 6"):
        t.route(0, 6)
    with pytest.raises(IndexError, match="src = -1"):
        t.hops(-1, 0)
    with pytest.raises(IndexError, match="src"):
        t.route(2**40, 0)
    with pytest.raises(TypeError, match="src"):
        t.route(1.0, 2)
    with pytest.raises(IndexError, match="v"):
        t.link_id(0, 99)


def test_topology_wraps_only_core_objects():
    with pytest.raises(TypeError, match="_core.Topology"):
        Topology("mesh")
    t = Topology(_core.Topology.mesh(2, 2, 1e9, 0.0))
    assert t.num_links == 8


# ------------------------------------------------------------ explicit routes


def _tri_links():
    # 0 -> 1 -> 2 -> 0 one way, plus 1 -> 0.
    return [(0, 1), (1, 2), (2, 0), (1, 0)]


def test_custom_routes_override_shortest_paths():
    links = _tri_links()
    # Route 1 -> 0 the long way round (1 -> 2 -> 0) although link 3 is direct.
    table = {(0, 1): [0], (0, 2): [0, 1], (1, 2): [1], (2, 0): [2]}
    table[(2, 1)] = [2, 0]
    table[(1, 0)] = [1, 2]
    t = wc.custom(3, links, routes=table, kind="tri", name="tri(3)")
    assert t.kind == "tri" and t.name == "tri(3)"
    assert t.route(1, 0).tolist() == [1, 2]
    assert wc.custom(3, links).route(1, 0).tolist() == [3]
    hm = t.hops_matrix()
    for a in range(3):
        for b in range(3):
            assert hm[a, b] == len(t.route(a, b)) == t.hops(a, b)


def test_custom_routes_callable_and_missing_pairs():
    links = _tri_links()
    t = wc.custom(3, links, routes=lambda a, b: [0] if (a, b) == (0, 1) else None)
    assert t.route(0, 1).tolist() == [0]
    with pytest.raises(ValueError, match="no route from 1 to 0"):
        t.route(1, 0)
    assert t.hops_matrix()[1, 0] == -1


@pytest.mark.parametrize(
    ("routes", "match"),
    [
        ({(0, 2): [1]}, "not a chain"),
        ({(0, 2): [0]}, "ends at node 1"),
        ({(0, 2): [9]}, r"outside \[0, 4\)"),
        ({(0, 5): [0]}, "not a pair of endpoints"),
        ({0: [0]}, "keys must be"),
        (42, "callable"),
    ],
)
def test_custom_routes_are_checked(routes, match):
    with pytest.raises((ValueError, TypeError), match=match):
        wc.custom(3, _tri_links(), routes=routes)


def test_routed_custom_simulates_along_its_routes():
    links = _tri_links()
    t = wc.custom(3, links, routes={(1, 0): [1, 2]}, bandwidth_Bps=1e9)
    s = wc.Schedule(3, [1000], "broadcast", root=1, participants=[0, 1])
    s.add_transfer(1, 0, [0])
    r = wc.simulate(s, t, wc.NetworkModel(bandwidth_Bps=None), timeline=False)
    # Two links of 1 GB/s, store-and-forward of one packet or cut-through:
    # either way the bytes cross links 1 and 2 and never the direct link 3.
    assert r.link_bytes[1] == r.link_bytes[2] == 1000
    assert r.link_bytes[3] == 0


# ------------------------------------------------------------------- cluster


@pytest.mark.parametrize(
    ("nodes", "ppn", "sockets"), [(1, 1, 1), (3, 4, 1), (3, 4, 2), (5, 6, 3)]
)
def test_cluster_routes_follow_locality(nodes, ppn, sockets):
    c = wc.topology.cluster(nodes, ppn, sockets)
    p = nodes * ppn
    assert c.kind == "cluster" and c.num_endpoints == p
    assert (c.cluster_nodes, c.ppn, c.sockets) == (nodes, ppn, sockets)
    assert c.node_of.tolist() == [r // ppn for r in range(p)]
    per = ppn // sockets
    assert c.socket_of.tolist() == [
        (r // ppn) * sockets + (r % ppn) // per for r in range(p)
    ]
    src, dst = c.links["src"], c.links["dst"]
    loc = c.locality_matrix()
    expect_hops = {0: 2, 1: 4, 2: 6 if sockets > 1 else 4}
    nic_up = set(np.flatnonzero(dst == c.num_nodes - 1).tolist())
    for a in range(p):
        for b in range(p):
            route = c.route(a, b).tolist()
            if a == b:
                assert route == [] and loc[a, b] == 0
                continue
            assert loc[a, b] == c.locality(a, b)
            assert len(route) == expect_hops[loc[a, b]] == c.hops(a, b)
            # A chain from a to b.
            assert src[route[0]] == a and dst[route[-1]] == b
            assert all(dst[x] == src[y] for x, y in zip(route, route[1:]))
            # Off-node traffic leaves through the source node's NIC.
            assert (len(nic_up.intersection(route)) == 1) == (loc[a, b] == 2)


@pytest.mark.parametrize("sockets", [1, 2])
def test_cluster_lanes_carry_only_off_node_traffic(sockets):
    c = wc.topology.cluster(3, 4, sockets)
    lanes = wc.topology.cluster(3, 4, sockets, lane_Bps=3e9, lane_latency_s=1e-6)
    p = 12
    assert lanes.num_links == c.num_links + 2 * p
    src, dst = lanes.links["src"], lanes.links["dst"]
    bw = lanes.links["bandwidth_Bps"]
    for a in range(p):
        for b in range(p):
            route = lanes.route(a, b).tolist()
            if lanes.locality(a, b) < 2:
                assert route == c.route(a, b).tolist()
                continue
            assert len(route) == 4 == lanes.hops(a, b)
            assert src[route[0]] == a and dst[route[-1]] == b
            assert all(dst[x] == src[y] for x, y in zip(route, route[1:]))
            assert bw[route[0]] == bw[route[-1]] == 3e9
    with pytest.raises(ValueError, match="lane_Bps"):
        wc.topology.cluster(2, 2, lane_Bps=0)
    with pytest.raises(ValueError, match="lane_latency_s"):
        wc.topology.cluster(2, 2, lane_Bps=1e9, lane_latency_s=-1)


def test_cluster_rank_to_node_and_errors():
    c = wc.topology.cluster(2, 2, rank_to_node=[1, 0, 0, 1])
    assert c.node_of.tolist() == [1, 0, 0, 1]
    assert c.locality(0, 3) == 0 and c.locality(0, 1) == 2
    with pytest.raises(ValueError, match="sockets = 3 must divide ppn = 4"):
        wc.topology.cluster(2, 4, 3)
    with pytest.raises(ValueError, match="node 0 3 ranks"):
        wc.topology.cluster(2, 2, rank_to_node=[0, 0, 0, 1])
    with pytest.raises(ValueError, match="entries"):
        wc.topology.cluster(2, 2, rank_to_node=[0, 1])
    with pytest.raises(ValueError, match="nic_Bps"):
        wc.topology.cluster(2, 2, nic_Bps=0)
    with pytest.raises(ValueError, match="exceeds the limit"):
        wc.topology.cluster(1 << 12, 1 << 12)
    with pytest.raises(ValueError, match="not a cluster"):
        wc.topology.mesh(2, 2).locality(0, 1)
    with pytest.raises(ValueError, match="no grid coordinates"):
        c.coords(0)


def test_cluster_nic_is_shared_by_a_node():
    # k processes of node 0 each send s bytes to node 1: with R_b = k * R_N the
    # NIC is the bottleneck and the last byte arrives after k * s / R_N.
    k, s, r_n = 4, 4000, 1e9
    c = wc.topology.cluster(2, k, process_Bps=k * r_n, nic_Bps=r_n)
    sched = wc.Schedule(2 * k, [s] * k, "allgather", owners=list(range(k)))
    for i in range(k):
        sched.add_transfer(i, k + i, [i])
    net = wc.NetworkModel(bandwidth_Bps=None, packet_bytes=100)
    r = wc.simulate(sched, c, net)
    assert r.time_s == pytest.approx(k * s / r_n, rel=0.05)
