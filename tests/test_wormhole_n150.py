"""The Wormhole n150 topology, hop tables, the roofline and the network preset.

Hop counts are checked against the ring-distance model of the physical grid
(recovered details, Sections 4.2-4.5), written out here from the layout:
Tensix columns 1-4, 6-9; Tensix rows 1-5, 7-11 minus the harvested one.
"""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.wormhole import machine

COLS = [1, 2, 3, 4, 6, 7, 8, 9]
ROWS = [1, 2, 3, 4, 5, 7, 8, 9, 10, 11]


@pytest.fixture(scope="module")
def board():
    return wc.wormhole.wormhole_n150(harvested_row=10)


def phys(harvested, r):
    rows = [y for y in ROWS if y != harvested]
    ly, lx = divmod(r, 8)
    return COLS[lx], rows[ly]


def model_hops(harvested, a, b):
    """Ring distance on the 10 x 12 torus in each dimension (one NoC each way)."""
    (ax, ay), (bx, by) = phys(harvested, a), phys(harvested, b)
    h0 = (bx - ax) % 10 + (by - ay) % 12
    h1 = (ax - bx) % 10 + (ay - by) % 12
    return h0, h1


def test_layout_and_links(board):
    assert board.kind == "wormhole_n150"
    assert board.num_cores == 64 and board.compute_shape == (8, 8)
    assert board.num_endpoints == 64 + 65
    assert board.num_nodes == 120 + 65 + 1
    assert board.num_links == 4 * 120 + 2 + 2 * 65
    for r in range(64):
        assert board.physical_xy(r) == phys(10, r)
        assert board.coords(r) == divmod(r, 8)
        assert board.core_at_physical(*phys(10, r)) == r
    tiles = {board.physical_xy(v) for v in range(64, board.num_nodes - 1) if v >= 129}
    assert len(tiles) == 120 - 64
    assert board.tile_kind(0, 10) == "A" and board.tile_kind(3, 10) == "H"
    with pytest.raises(ValueError, match="DRAM"):
        board.physical_xy(64)


@pytest.mark.parametrize("noc", [0, 1, "shortest"])
def test_routes_follow_the_noc(noc):
    t = wc.wormhole.wormhole_n150(10, noc, dram=False)
    links = t.links
    for a in range(0, 64, 3):
        for b in range(64):
            if a == b:
                continue
            h0, h1 = model_hops(10, a, b)
            want = {0: h0, 1: h1, "shortest": min(h0, h1)}[noc]
            route = t.route(a, b)
            assert len(route) == want
            # A chain of links whose steps all go the NoC's way round.
            which = 0 if noc == 0 or (noc == "shortest" and h0 <= h1) else 1
            x, y = t.physical_xy(a)
            node = a
            step = 1 if which == 0 else -1
            for lk in route:
                assert links["src"][lk] == node
                node = int(links["dst"][lk])
                nx, ny = t.physical_xy(node)
                assert (nx, ny) in {((x + step) % 10, y), (x, (y + step) % 12)}
                x, y = nx, ny
            assert (x, y) == phys(10, b)


def test_dram_routes_write_on_noc0_read_on_noc1(board):
    # NoC 0 from a core to the DRAM tile and NoC 1 back have the same length,
    # (tx - x) mod 10 + (ty - y) mod 12, plus the two DRAM links.
    tx, ty = board.dram_tile
    for core in (0, 27, 63):
        x, y = board.physical_xy(core)
        noc = (tx - x) % 10 + (ty - y) % 12
        assert board.hops(core, 64) == noc + 2
        assert board.hops(64 + core, core) == noc + 2
    assert board.hops(64, 65) == 2


def test_bad_input_raises():
    for row in (0, 6, 12, -1):
        with pytest.raises(ValueError, match="harvested_row"):
            wc.wormhole.wormhole_n150(harvested_row=row)
    with pytest.raises(ValueError, match="larger"):
        wc.wormhole.wormhole_n150(rows=10)
    with pytest.raises(ValueError, match="larger"):
        wc.wormhole.wormhole_n150(cols=9)
    with pytest.raises(ValueError, match="noc"):
        wc.wormhole.wormhole_n150(noc=2)
    with pytest.raises(ValueError, match="dram_tile"):
        wc.wormhole.wormhole_n150(dram_tile=(1, 1))
    with pytest.raises(TypeError):
        wc.wormhole.wormhole_n150(harvested_row=10.0)
    t = wc.wormhole.wormhole_n150(rows=9, dram=False)  # the whole usable 9 x 8
    assert t.num_endpoints == 72


def model_worst(alg, harvested):
    peers = wc.wormhole.peer_table(alg, (8, 8))
    return [
        max(min(model_hops(harvested, r, int(peers[s, r]))) for r in range(64))
        for s in range(6)
    ]


@pytest.mark.parametrize("harvested", [1, 3, 5, 8, 10, 11])
def test_hop_table_matches_the_ring_distance_model(harvested):
    t = wc.wormhole.wormhole_n150(harvested, dram=False)
    for alg in ("swing", "rd"):
        table = wc.wormhole.hop_table(alg, t)
        assert table.per_step_worst.tolist() == model_worst(alg, harvested)
        assert table.steps == ["x0", "y0", "x1", "y1", "x2", "y2"]


def test_rd_worst_hops_on_the_n150_reproduce_the_thesis(board):
    # The claim of thesis Section 6.3.2 (acceptance): 1 + 2 + 2 + 3 + 5 + 5.
    table = wc.wormhole.hop_table("rd_bo", board)
    assert table.per_step_worst.tolist() == [1, 2, 2, 3, 5, 5]
    assert table.worst_total == 18


def test_ideal_torus_totals():
    # Every node: ring distances |rho(k)| = 1, 1, 3 (Swing) or 2^k (RD) on a
    # ring of 8, twice (two dimensions).
    t = wc.topology.torus(8, 8)
    swing = wc.wormhole.hop_table("swing", t)
    rd = wc.wormhole.hop_table("rd", t)
    ring = [
        min(abs(wc.wormhole.rho(k)) % 8, 8 - abs(wc.wormhole.rho(k)) % 8)
        for k in range(3)
    ]
    assert (swing.node_totals == 2 * sum(ring)).all()
    assert (rd.node_totals == 2 * (1 + 2 + 4)).all()
    d = swing.to_dict()
    assert d["worst_total"] == sum(d["per_step_worst"])


def test_preset_and_a_closed_form(board):
    net = wc.network_presets()["wormhole_n150"]()
    assert net.hop_latency_s == pytest.approx(9e-9)
    assert (net.packet_bytes, net.flit_bytes, net.clock_Hz) == (8192, 32, 1e9)
    # One 4 KiB transfer from core 0 to core 63: cut-through with flits,
    # alpha + h lat + (h - 1) F / bw + S / bw (wafercoll.simulate docstring).
    s = wc.Schedule(board.num_endpoints, [4096], "broadcast", root=0)
    s.add_transfer(0, 63, [0])
    h = board.hops(0, 63)
    r = wc.simulate(s, board, net)
    bw = 32e9
    assert r.time_s == pytest.approx(h * 9e-9 + (h - 1) * 32 / bw + 4096 / bw)


def link_loads(schedule, topo):
    """Bytes per link from the routes, without the simulator."""
    load = np.zeros(topo.num_links)
    nbytes = schedule.transfer_bytes()
    for i in range(schedule.num_transfers):
        tr = schedule.transfer(i)
        for d in tr["dst"]:
            load[topo.route(tr["src"], d)] += nbytes[i]
    return load


def test_swing_bo_has_lower_link_load_than_rd_bo_on_an_ideal_torus():
    topo = wc.topology.torus(8, 8, bandwidth_Bps=32e9)
    net = wc.wormhole.n150_network()
    size = 64 * 1024
    peak = {}
    for name in ("torus_swing_bo_allreduce", "torus_rd_bo_allreduce"):
        s = wc.build(name, topology=topo, size_bytes=size)
        r = wc.simulate(s, topo, net)
        expect = link_loads(s, topo)
        assert np.array_equal(r.link_bytes, expect)
        peak[name] = expect.max()
    assert peak["torus_swing_bo_allreduce"] < peak["torus_rd_bo_allreduce"]


def test_roofline_terms():
    n = 256 * 1024
    p = wc.wormhole.THESIS
    lo = wc.wormhole.thesis_time("lo", n)
    comm = n / 9e9
    comp = n / (262e12 / 64)
    assert lo["total"] == pytest.approx(6 * max(comm, comp) + 3 * 18 * 9e-9)
    bo = wc.wormhole.thesis_time("bo", n)
    assert bo["total"] == pytest.approx(max(comm, comp) + comm + 5 * 18 * 9e-9)
    s = wc.build("torus_swing_lo_allreduce", 64, n, dims=(8, 8))
    r = wc.wormhole.roofline(s, step_hops=[1, 2, 3, 4, 5, 6])
    assert r["t_comm"] == pytest.approx(6 * comm)
    assert r["t_comp"] == pytest.approx(6 * comp)
    assert r["t_sync"] == pytest.approx(21 * p.hop_s)
    assert r["regime"] == "transfer"
    bo_s = wc.build("torus_rd_bo_allreduce", 64, n, dims=(8, 8))
    rb = wc.wormhole.roofline(bo_s)
    assert rb["t_comm"] == pytest.approx(2 * (63 / 64) * comm)
    with pytest.raises(ValueError, match="variant"):
        wc.wormhole.thesis_time("xo", n)
    with pytest.raises(ValueError, match="step_hops"):
        wc.wormhole.roofline(s, step_hops=[1] * 7)


def test_constants_have_their_documented_values():
    # The documented derivations (recovered details, Section 4.3).
    assert machine.LINK_BYTES_PER_CYCLE * machine.CLOCK_HZ == 32e9
    assert machine.MAX_PACKET_BYTES == 256 * machine.FLIT_BYTES
    assert len(machine.DRAM_TILES) == 18


def test_hop_table_reads_the_peers_of_a_built_schedule():
    # Sides that are not powers of two: the shrink steps leave ranks idle.
    t = wc.topology.torus(3, 4)
    s = wc.build("torus_rd_lo_allreduce", 12, 96, topology=t)
    table = wc.wormhole.hop_table(s, t)
    assert table.peers.shape == (s.num_steps, 12)
    expect = np.full((s.num_steps, 12), -1)
    for k, step in enumerate(s.steps()):
        tr = s.transfer(k)
        expect[step, tr["src"]] = tr["dst"][0]
    assert (table.peers == expect).all()
    idle = expect < 0
    assert idle.any() and (table.hops[idle] == 0).all()
    busy = np.argwhere(~idle)
    assert all(table.hops[a, r] == t.hops(r, expect[a, r]) for a, r in busy)
    with pytest.raises(ValueError, match="algorithm"):
        wc.wormhole.hop_table("ring", t)
    with pytest.raises(TypeError, match="Schedule"):
        wc.wormhole.hop_table(3, t)
