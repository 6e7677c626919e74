"""The artifact's DBTree machine (anynet, radix 1) and its dtree schedule.

Expectations come from the network files' rule (a k x k router mesh in
row-major order, BookSim nodes 4r .. 4r+3 on router r, 21-cycle channels),
an excerpt of ``mesh_16_200.txt`` parsed here, BookSim's anynet routing rule
(shortest paths, Dijkstra ties to the smaller router id) and the NCCL tree
rules, each restated in the test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import mcm

#: The first four lines of the artifact's runfiles/mesh/anynet/mesh_16_200.txt.
MESH_16_HEAD = """\
router 0 node 0 node 1 node 2 node 3 router 1 21 router 4 21
router 1 node 4 node 5 node 6 node 7 router 2 21 router 0 21 router 5 21
router 2 node 8 node 9 node 10 node 11 router 3 21 router 1 21 router 6 21
router 3 node 12 node 13 node 14 node 15 router 2 21 router 7 21
"""
COUNTS = [9, 16, 25, 36, 64, 81]
RUN_COUNTS = [16, 25, 64, 81]  # fig8 (and fig10); 36 is fig13
MSG = 8192


def _parse_anynet(text: str) -> tuple[dict[int, list[int]], dict[int, dict[int, int]]]:
    """Nodes per router and router links with weights (default 1)."""
    nodes: dict[int, list[int]] = {}
    links: dict[int, dict[int, int]] = {}
    for line in text.splitlines():
        tok = line.split()
        r = int(tok[1])
        nodes[r], links[r] = [], {}
        i = 2
        while i < len(tok):
            kind, ident = tok[i], int(tok[i + 1])
            i += 2
            w = 1
            if i < len(tok) and tok[i] not in ("node", "router"):
                w, i = int(tok[i]), i + 1
            if kind == "node":
                nodes[r].append(ident)
            else:
                links[r][ident] = w
    return nodes, links


def _router_of(chiplet: int) -> int:
    # booksim.py: node = chiplet * radix + interface, radix 1; the files put
    # nodes 4r .. 4r+3 on router r
    return (chiplet * 1) // 4


def _bookim_path(k: int, a: int, b: int) -> list[int]:
    """Routers from a to b: X first when b is not above a, else Y first."""
    (ra, ca), (rb, cb) = divmod(a, k), divmod(b, k)
    out = [a]
    if rb >= ra:  # same row or below: along the row, then down
        while ca != cb:
            ca += 1 if cb > ca else -1
            out.append(ra * k + ca)
        while ra != rb:
            ra += 1
            out.append(ra * k + ca)
    else:  # above: up the column, then along the row
        while ra != rb:
            ra -= 1
            out.append(ra * k + ca)
        while ca != cb:
            ca += 1 if cb > ca else -1
            out.append(ra * k + ca)
    return out


# ---------------------------------------------------------------- topology


def test_the_excerpt_follows_the_rule_the_module_states() -> None:
    nodes, links = _parse_anynet(MESH_16_HEAD)
    g = mcm.artifact_anynet_routers(16)
    for r in range(4):
        assert nodes[r] == [4 * r + j for j in range(4)]
        assert all(w == 21 for w in links[r].values())
        mine = [int(q) for a, q in g["links"] if a == r]
        assert mine == list(links[r])  # same neighbours, in the file's order
    assert g["router_of_node"][:16].tolist() == [n // 4 for n in range(16)]


@pytest.mark.parametrize("n", COUNTS)
def test_topology_matches_the_network_file(n: int) -> None:
    k = math.isqrt(n)
    t = mcm.artifact_dbtree_topology(n)
    assert t.kind == "booksim_anynet"
    assert t.num_endpoints == n
    assert t.num_nodes == n + k * k  # k x k routers hidden
    assert t.num_links == 2 * n + 4 * k * (k - 1)
    L = t.links
    src, dst = L["src"], L["dst"]
    for i in range(n):  # chiplet i: one link to its router, one back
        assert (src == i).sum() == 1 and (dst == i).sum() == 1
        assert dst[src == i][0] == n + _router_of(i)
        assert src[dst == i][0] == n + _router_of(i)
    for r in range(k * k):
        row, col = divmod(r, k)
        nbr = {
            q
            for q, ok in (
                (r - 1, col > 0),
                (r + 1, col < k - 1),
                (r - k, row > 0),
                (r + k, row < k - 1),
            )
            if ok
        }
        out = set(dst[(src == n + r) & (dst >= n)].tolist())
        assert out == {n + q for q in nbr}
        attached = [i for i in range(n) if _router_of(i) == r]
        assert sorted(dst[(src == n + r) & (dst < n)].tolist()) == attached
    # 21 cycles per 512 B flit on router channels, 1 on the chiplet's own
    wire = (src >= n) & (dst >= n)
    assert np.allclose(L["bandwidth_Bps"][wire], MSG / (17 * 21e-9))
    assert np.allclose(L["bandwidth_Bps"][~wire], MSG / (17 * 1e-9))
    assert np.allclose(L["bandwidth_Bps"][wire], mcm.ARTIFACT.bandwidth_Bps)
    assert (L["latency_s"] == 0).all()


@pytest.mark.parametrize("n", [16, 36, 81])
def test_routes_are_booksims_min_anynet(n: int) -> None:
    k = math.isqrt(n)
    t = mcm.artifact_dbtree_topology(n)
    L = t.links
    rng = np.random.default_rng(7)
    pairs = [(0, n - 1), (n - 1, 0)] + [
        tuple(int(x) for x in rng.choice(n, 2, replace=False)) for _ in range(40)
    ]
    for a, b in pairs:
        nodes = [int(L["src"][i]) for i in t.route(a, b)] + [b]
        ra, rb = _router_of(a), _router_of(b)
        want = [a] + [n + r for r in _bookim_path(k, ra, rb)] + [b]
        assert nodes == want, (a, b)
        (r0, c0), (r1, c1) = divmod(ra, k), divmod(rb, k)
        assert t.hops(a, b) == abs(r0 - r1) + abs(c0 - c1) + 2


def test_unknown_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="mesh_"):
        mcm.artifact_dbtree_topology(20)


# ---------------------------------------------------------------- trees


def _nccl_btree(n: int) -> list[int]:
    par = []
    for r in range(n):
        if r == 0:
            par.append(-1)
            continue
        bit = r & -r
        up = (r ^ bit) | (bit << 1)
        par.append(up if up < n else r ^ bit)
    return par


@pytest.mark.parametrize("n", [4, 8, 12, 16, 24, 36, 64, 80])
def test_stages_follow_the_trees_and_their_colours(n: int) -> None:
    st = mcm.artifact_dbtree_stages(n)
    t0 = _nccl_btree(n)
    t1 = [-1 if t0[n - 1 - r] < 0 else n - 1 - t0[n - 1 - r] for r in range(n)]
    assert st["parents"].tolist() == [t0, t1]
    col, red, bc = st["colors"], st["reduce"], st["broadcast"]
    assert (col[0] != col[1]).all()  # a rank's two in-edges differ
    for t in range(2):
        par = st["parents"][t]
        for v in range(n):
            q = par[v]
            if q < 0:
                continue
            # a step's colour alternates from 1: the stage has its edge's colour
            assert red[t, v] % 2 == 1 - col[t, v]
            assert bc[t, v] % 2 == 1 - col[t, v]
            if par[q] >= 0:  # children before parents, parents before children
                assert red[t, v] < red[t, q]
                assert bc[t, v] > bc[t, q]
        for q in range(n):  # siblings take different colours
            kids = np.flatnonzero(par == q)
            assert len(set(col[t, kids].tolist())) == len(kids)
    # no rank sends twice at one pipeline step (steps 2j + stage)
    for v in range(n):
        ours = [red[t, v] % 2 for t in range(2) if red[t, v] >= 0]
        assert len(set(ours)) == len(ours)


def test_stages_need_an_even_count() -> None:
    with pytest.raises(ValueError, match="even"):
        mcm.artifact_dbtree_stages(9)


# ---------------------------------------------------------------- schedule


NAME = "mesh_dbtree_artifact_allreduce"


def test_registry_entry() -> None:
    info = wc.algorithm_info(NAME)
    assert info.label == "DBTree (artifact)"
    assert info.families == ("booksim_anynet",)
    assert info.artifact_names == ("dtree", "dtree")
    assert (info.family, info.algorithm, info.variant) == ("mesh", "dbtree", "artifact")
    with pytest.raises(ValueError, match="applies to"):
        wc.build(NAME, topology=wc.mesh(4, 4), size_bytes=1 << 16)


@pytest.mark.parametrize("n", [9, 16, 25, 36])
@pytest.mark.parametrize("order", ["interface", "data"])
def test_schedule_verifies_and_executes(n: int, order: str) -> None:
    t = mcm.artifact_dbtree_topology(n)
    size = 4 * 1000 + 4 * n  # not a multiple of the flow count
    s = wc.build(NAME, topology=t, size_bytes=size, order=order)
    assert wc.verify(s).ok
    m = n - n % 2
    # two trees of m - 1 edges, m / 2 flows each, reduce and broadcast
    assert s.num_transfers == 2 * 2 * (m - 1) * (m // 2)
    rng = np.random.default_rng(n)
    x = rng.integers(-1000, 1000, size=(n, size // 4)).astype(np.int64)
    y = wc.execute(s, x)
    want = x[:m].sum(axis=0)
    assert (y[:m] == want).all()
    if m < n:  # odd N: the last chiplet takes no part
        assert n - 1 not in set(s.src.tolist()) | set(s.dst.tolist())
        assert s.participants.tolist() == [True] * m + [False]


def test_interface_order_chains_every_ranks_sends() -> None:
    t = mcm.artifact_dbtree_topology(16)
    s = wc.build(NAME, topology=t, size_bytes=1 << 16)
    src = s.src
    deps = [set(s.transfer(i)["deps"]) for i in range(len(src))]
    for v in range(16):
        ids = np.flatnonzero(src == v)
        for prev, cur in zip(ids[:-1], ids[1:], strict=True):
            assert int(prev) in deps[cur]


@pytest.mark.parametrize("n", RUN_COUNTS)
def test_simulates_on_the_artifact_network(n: int) -> None:
    t = mcm.artifact_dbtree_topology(n)
    s = wc.build(NAME, topology=t, size_bytes=1 << 20)
    net = mcm.ARTIFACT.replace(bandwidth_Bps=None)
    r = wc.simulate(s, t, net)
    # at least one flow's messages over one chiplet link, and not slower than
    # the artifact's uniform-rate network on the same routes but for the
    # anomalies of greedy contention (faster chiplet links can change which
    # flow takes a shared router link first: 81 chiplets, 0.8 % slower)
    m = n - n % 2
    per_flow = math.ceil((1 << 20) / m / MSG)
    assert r.cycles >= per_flow * 17
    assert r.cycles <= 1.02 * wc.simulate(s, t, mcm.ARTIFACT).cycles


def test_artifact_dependencies_let_siblings_reduce_at_once() -> None:
    # hmc.py counts each child's messages apart, so two children reduce into
    # one parent at once: the schedule keeps every other dependency and drops
    # only the order between siblings, which the verifier calls a race
    t = mcm.artifact_dbtree_topology(16)
    size = 1 << 16
    data = wc.build(NAME, topology=t, size_bytes=size)
    art = wc.build(NAME, topology=t, size_bytes=size, dependencies="artifact")
    assert wc.verify(data).ok
    with pytest.raises(wc.ScheduleError, match="race"):
        wc.verify(art)
    assert art.num_transfers == data.num_transfers
    dropped = 0
    for i in range(data.num_transfers):
        a, b = set(art.transfer(i)["deps"]), set(data.transfer(i)["deps"])
        assert a <= b
        for j in b - a:  # only an earlier reduction into the same block
            tj, ti = data.transfer(j), data.transfer(i)
            assert tj["op"] == ti["op"] == "reduce"
            assert tj["dst"] == ti["dst"] and tj["blocks"] == ti["blocks"]
            dropped += 1
    # every internal rank of either tree has two children: one order each per flow
    st = mcm.artifact_dbtree_stages(16)
    pairs = sum(
        int(np.sum(st["parents"][tr] == v) == 2) for tr in range(2) for v in range(16)
    )
    assert dropped == pairs * 8
    net = mcm.ARTIFACT.replace(bandwidth_Bps=None)
    assert wc.simulate(art, t, net).cycles <= wc.simulate(data, t, net).cycles


def test_unknown_dependencies_are_refused() -> None:
    t = mcm.artifact_dbtree_topology(16)
    with pytest.raises(ValueError, match="dependencies"):
        wc.build(NAME, topology=t, size_bytes=1 << 16, dependencies="dataflow")


@pytest.mark.parametrize("side", [4, 5, 8])
def test_on_the_router_engine_it_keeps_the_artifacts_time_at_1_mib(side) -> None:
    # Against the cycles the artifact committed (fig8, 1 MiB): its one
    # interface per chiplet (order="data") and BookSim's 74-message input
    # buffers with turns among input ports (engine="routers").
    from wafercoll.experiments import mcm_common

    n = side * side
    t = mcm.artifact_dbtree_topology(n)
    s = wc.build(
        NAME, topology=t, size_bytes=1 << 20, dependencies="artifact", order="data"
    )
    net = mcm.ARTIFACT.replace(bandwidth_Bps=None)
    r = wc.simulate(
        s, t, net, engine="routers", buffer_packets=mcm.machine.ARTIFACT_BUFFER_PACKETS
    )
    ref = mcm_common.artifact_reference("DBTree (artifact)", side, side, 1 << 20)
    assert math.isfinite(ref)
    assert abs(r.cycles / ref - 1) <= 0.05


def _reference_deps(sends: list, order: str, siblings_ordered: bool) -> list:
    """The dependency rule of ``mesh_dbtree_artifact_allreduce``, list by list.

    Written from its docstring: the sends delivering the data a send sends,
    the previous reduction into the same (rank, flow) when siblings are
    ordered, the rank's previous send in the interface order, and every
    reduce send and receive of the rank for an all-gather send that starts
    its all-gather.
    """
    out = []
    for i, (ph, _, _, v, w, f) in enumerate(sends):
        before = sends[:i]
        d = {j for j, s in enumerate(before) if (s[0], s[4], s[5]) == (ph, v, f)}
        if ph == 0 and siblings_ordered:
            into = [
                j for j, s in enumerate(before) if s[0] == 0 and (s[4], s[5]) == (w, f)
            ]
            d |= set(into[-1:])
        own = [j for j, s in enumerate(before) if s[3] == v]
        if order == "interface" and own:
            d.add(own[-1])
        if ph == 1 and (order == "data" or not own or sends[own[-1]][0] == 0):
            d |= {j for j, s in enumerate(sends) if s[0] == 0 and v in (s[3], s[4])}
        out.append(sorted(d))
    return out


@pytest.mark.parametrize("n", [2, 4, 6, 10, 16])
@pytest.mark.parametrize("order", ["interface", "data"])
@pytest.mark.parametrize("siblings_ordered", [True, False])
def test_dependency_lists_follow_the_rule(
    n: int, order: str, siblings_ordered: bool
) -> None:
    from wafercoll.mcm.artifact_topology import _dbtree_deps, _dbtree_sends

    sends = _dbtree_sends(n)
    flat, off = _dbtree_deps(sends, order, siblings_ordered)
    got = [flat[off[i] : off[i + 1]].tolist() for i in range(len(sends))]
    assert got == _reference_deps(sends, order, siblings_ordered)


def test_sends_and_lists_are_made_once_per_mesh_and_kept_read_only() -> None:
    from wafercoll.mcm.artifact_topology import _dbtree_plan

    _dbtree_plan.cache_clear()
    a = wc.build("mesh_dbtree_artifact_allreduce", ranks=8, size_bytes=1 << 20)
    b = wc.build("mesh_dbtree_artifact_allreduce", ranks=8, size_bytes=1 << 30)
    assert _dbtree_plan.cache_info().hits == 1
    assert np.array_equal(a.dependencies()[0], b.dependencies()[0])
    assert a.transfer_bytes()[0] * 1024 == b.transfer_bytes()[0]
    src, *_, (flat, off) = _dbtree_plan(8, "interface", True)
    with pytest.raises(ValueError, match="read-only"):
        flat[0] = 1
