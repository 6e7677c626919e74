"""The network simulator against closed forms derived here from its model.

Every expected time below is computed in the test from the model's rules
(see :mod:`wafercoll.simulate`), never copied from a run of the simulator.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import wafercoll as wc

REL = 1e-12


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-18)


def one_transfer(
    p: int, src: int, dst: int, size: int, op: str = "copy"
) -> wc.Schedule:
    s = wc.Schedule(p, [size], "allgather", owners=[src])
    s.add_transfer(src, dst, [0], op=op)
    return s


# -- single transfers ------------------------------------------------------------
@pytest.mark.parametrize("hops", [1, 2, 5, 9])
@pytest.mark.parametrize("size", [1, 4096, 10_000, 65_536])
@pytest.mark.parametrize("packet", [None, 512, 4096])
def test_single_transfer_cut_through(hops: int, size: int, packet: int | None) -> None:
    bw, lat, alpha = 2.5e9, 7e-8, 3e-6
    net = wc.NetworkModel(bw, hop_latency_s=lat, alpha_s=alpha, packet_bytes=packet)
    s = one_transfer(hops + 1, 0, hops, size)
    r = wc.simulate(s, wc.line(hops + 1), net)
    assert close(r.time_s, alpha + hops * lat + size / bw)
    assert r.packets == (1 if packet is None else -(-size // packet))
    assert r.events == r.packets * hops


@pytest.mark.parametrize("hops", [1, 2, 3, 8])
@pytest.mark.parametrize("packets", [1, 2, 7, 32])
def test_single_transfer_store_and_forward(hops: int, packets: int) -> None:
    bw, lat, alpha, m = 1e9, 5e-8, 1e-6, 2048
    size = packets * m
    net = wc.NetworkModel(
        bw,
        hop_latency_s=lat,
        alpha_s=alpha,
        packet_bytes=m,
        switching="store_and_forward",
    )
    r = wc.simulate(one_transfer(hops + 1, hops, 0, size), wc.line(hops + 1), net)
    assert close(r.time_s, alpha + hops * (lat + m / bw) + (size - m) / bw)


@pytest.mark.parametrize("size", [100, 2048, 5000, 70_001])
def test_store_and_forward_partial_last_packet(size: int) -> None:
    # Flow shop of identical stages: sum of packet times + (h - 1) * largest.
    bw, lat, m, hops = 1e9, 2e-8, 2048, 4
    net = wc.NetworkModel(
        bw, hop_latency_s=lat, packet_bytes=m, switching="store_and_forward"
    )
    r = wc.simulate(one_transfer(hops + 1, 0, hops, size), wc.line(hops + 1), net)
    assert close(r.time_s, hops * lat + size / bw + (hops - 1) * min(m, size) / bw)


def test_cut_through_with_flits() -> None:
    bw, lat, f, hops, size = 1e9, 1e-8, 256, 5, 8192
    net = wc.NetworkModel(bw, hop_latency_s=lat, packet_bytes=2048, flit_bytes=f)
    r = wc.simulate(one_transfer(hops + 1, 0, hops, size), wc.line(hops + 1), net)
    assert close(r.time_s, hops * lat + (hops - 1) * f / bw + size / bw)


def test_flits_round_packets_up_on_the_wire() -> None:
    bw, f = 1e9, 64
    net = wc.NetworkModel(bw, packet_bytes=1024, flit_bytes=f)
    r = wc.simulate(one_transfer(2, 0, 1, 1000), wc.line(2), net)
    assert close(r.time_s, 1024 / bw)
    assert r.link_bytes.sum() == 1000  # payload, not padding


@pytest.mark.parametrize("size", [1, 1000, 4096, 5000, 12288])
@pytest.mark.parametrize("switching", ["cut_through", "store_and_forward"])
def test_padded_packets_cost_whole_packets(size: int, switching: str) -> None:
    # Every packet is sent full size: ceil(size / m) packets of m bytes.
    bw, m, hops, lat = 1e9, 4096, 3, 1e-8
    net = wc.NetworkModel(
        bw, hop_latency_s=lat, packet_bytes=m, pad_packets=True, switching=switching
    )
    n = -(-size // m)
    r = wc.simulate(one_transfer(hops + 1, 0, hops, size), wc.line(hops + 1), net)
    if switching == "cut_through":
        want = hops * lat + n * m / bw
    else:  # flow shop: all packets through the first stage, then the last on
        want = hops * lat + n * m / bw + (hops - 1) * m / bw
    assert close(r.time_s, want)
    unpadded = wc.simulate(
        one_transfer(hops + 1, 0, hops, size),
        wc.line(hops + 1),
        net.replace(pad_packets=False),
    )
    assert unpadded.time_s <= r.time_s
    assert (unpadded.time_s == r.time_s) == (size % m == 0)


def test_pad_packets_needs_a_packet_size() -> None:
    with pytest.raises(ValueError, match="pad_packets=True needs packet_bytes"):
        wc.NetworkModel(1e9, pad_packets=True)
    with pytest.raises(TypeError, match="pad_packets must be a bool"):
        wc.NetworkModel(1e9, packet_bytes=8, pad_packets="yes")


def test_topology_latency_adds_to_hop_latency_and_bandwidth_can_come_from_it() -> None:
    hops, size = 3, 1000
    topo = wc.line(hops + 1, bandwidth_Bps=4e8, latency_s=1e-6)
    s = one_transfer(hops + 1, 0, hops, size)
    r = wc.simulate(s, topo, wc.NetworkModel(None, hop_latency_s=5e-7))
    assert close(r.time_s, hops * (1e-6 + 5e-7) + size / 4e8)
    r = wc.simulate(s, topo, wc.NetworkModel(1e9))  # model bandwidth overrides
    assert close(r.time_s, hops * 1e-6 + size / 1e9)


def test_per_link_bandwidths_of_a_custom_topology() -> None:
    # 0 -> 1 at 1 GB/s, 1 -> 2 at 0.5 GB/s. Cut-through: the slow link starts
    # each packet as its head arrives and sets the pace, S / slow; store-and-
    # forward first needs one packet on the fast link.
    topo = wc.custom(3, [(0, 1), (1, 2)], bandwidth_Bps=[1e9, 5e8])
    s = one_transfer(3, 0, 2, 4000)
    r = wc.simulate(s, topo, wc.NetworkModel(None, packet_bytes=1000))
    assert close(r.time_s, 4000 / 5e8)
    net = wc.NetworkModel(None, packet_bytes=1000, switching="store_and_forward")
    r = wc.simulate(s, topo, net)
    assert close(r.time_s, 1000 / 1e9 + 4000 / 5e8)


# -- sharing -------------------------------------------------------------------
def test_shared_link_serves_whole_messages_first_come_first_served() -> None:
    bw, size = 1e9, 10_000
    # 0 -> 2 and 1 -> 2 on a line of 3 meet on link 1 -> 2 at time 0.
    s = wc.Schedule(3, [size, size], "allgather", owners=[0, 1])
    s.add_transfer(0, 2, [0])
    s.add_transfer(1, 2, [1])
    r = wc.simulate(s, wc.line(3), wc.NetworkModel(bw), transfers=True)
    assert sorted(r.transfer_finish_s) == pytest.approx(
        [size / bw, 2 * size / bw], rel=REL
    )
    # Ties go by the canonical order (lower source first), not by index.
    assert close(r.transfer_finish_s[0], size / bw)


def test_shared_link_with_packets_is_fair() -> None:
    bw, size, m = 1e9, 64 * 1024, 1024
    s = wc.Schedule(2, [size, size], "allgather", owners=[0, 0])
    s.add_transfer(0, 1, [0])
    s.add_transfer(0, 1, [1])
    r = wc.simulate(s, wc.line(2), wc.NetworkModel(bw, packet_bytes=m), transfers=True)
    fin = np.sort(r.transfer_finish_s)
    # Packets alternate: one message ends a packet before the other.
    assert close(fin[1], 2 * size / bw)
    assert close(fin[0], (2 * size - m) / bw)


def test_disjoint_links_do_not_interfere() -> None:
    bw, size = 1e9, 10_000
    s = wc.Schedule(3, [size, size], "allgather", owners=[0, 2])
    s.add_transfer(0, 1, [0])
    s.add_transfer(2, 1, [1])
    r = wc.simulate(
        s, wc.line(3), wc.NetworkModel(bw, packet_bytes=1000), transfers=True
    )
    assert r.transfer_finish_s == pytest.approx([size / bw] * 2, rel=REL)


# -- ring allreduce ------------------------------------------------------------
RING_PS = [2, 3, 4, 7, 8, 16]


def ring_time(
    p: int,
    block: int,
    alpha: float,
    lat: float,
    bw: float,
    gamma: float,
    packet: int | None,
) -> float:
    """Ring allreduce on neighbour links: p - 1 reducing then p - 1 copying steps.

    A step moves one block of ``block`` bytes one hop. Its packets (``n`` of
    ``m`` bytes) arrive at ``alpha + lat + (k + 1) m / bw``; a reducing step
    ends when the destination has reduced the last one, first come first
    served at ``gamma`` per byte, i.e. at
    ``alpha + lat + max_k ((k + 1) m / bw + (n - k) gamma m)``.
    """
    m = block if packet is None else packet
    assert block % m == 0
    n = block // m
    copy_step = alpha + lat + block / bw
    reduce_step = (
        alpha + lat + max((k + 1) * m / bw + (n - k) * gamma * m for k in range(n))
    )
    return (p - 1) * (copy_step + reduce_step)


@pytest.mark.parametrize("p", RING_PS)
def test_ring_allreduce_cut_through(p: int) -> None:
    bw, lat, alpha, block = 1e9, 1e-7, 2e-6, 3000
    s = wc.build("generic_ring_allreduce", p, p * block)
    net = wc.NetworkModel(bw, hop_latency_s=lat, alpha_s=alpha)
    r = wc.simulate(s, wc.ring(p), net)
    assert close(r.time_s, 2 * (p - 1) * (alpha + lat + block / bw))
    assert close(r.time_s, ring_time(p, block, alpha, lat, bw, 0.0, None))


@pytest.mark.parametrize("p", RING_PS)
@pytest.mark.parametrize("switching", ["cut_through", "store_and_forward"])
def test_ring_allreduce_with_packets(p: int, switching: str) -> None:
    # On one hop, store-and-forward and cut-through coincide:
    # h (lat + M / bw) + (S - M) / bw = lat + S / bw for h = 1.
    bw, lat, alpha, m = 1e9, 1e-7, 2e-6, 1024
    block = 6 * m
    s = wc.build("generic_ring_allreduce", p, p * block)
    net = wc.NetworkModel(
        bw, hop_latency_s=lat, alpha_s=alpha, packet_bytes=m, switching=switching
    )
    r = wc.simulate(s, wc.ring(p), net)
    assert close(r.time_s, 2 * (p - 1) * (alpha + lat + block / bw))


@pytest.mark.parametrize("p", RING_PS)
@pytest.mark.parametrize("gamma", [2e-10, 3e-9])  # slower and faster than the link
@pytest.mark.parametrize("packet", [None, 512])
def test_ring_allreduce_with_reduction_cost(
    p: int, gamma: float, packet: int | None
) -> None:
    bw, lat, alpha, block = 1e9, 5e-8, 1e-6, 4096
    s = wc.build("generic_ring_allreduce", p, p * block)
    net = wc.NetworkModel(
        bw,
        hop_latency_s=lat,
        alpha_s=alpha,
        gamma_s_per_byte=gamma,
        packet_bytes=packet,
    )
    r = wc.simulate(s, wc.ring(p), net)
    assert close(r.time_s, ring_time(p, block, alpha, lat, bw, gamma, packet))
    if packet is None:  # the docstring's form
        expected = 2 * (p - 1) * (alpha + lat + block / bw) + (p - 1) * gamma * block
        assert close(r.time_s, expected)
    assert close(r.compute_busy_s.sum(), p * (p - 1) * gamma * block)


@pytest.mark.parametrize("p", [3, 4, 8])
def test_ring_allreduce_utilization(p: int) -> None:
    block = 1000
    s = wc.build("generic_ring_allreduce", p, p * block)
    r = wc.simulate(s, wc.ring(p), wc.NetworkModel(1e9), timeline=True)
    # Exactly the p forward links work, all the time; the p backward links idle.
    assert r.links_used == p
    assert r.link_utilization_used == pytest.approx(1.0, rel=1e-12)
    assert r.link_utilization == pytest.approx(0.5, rel=1e-12)
    assert np.all(r.link_bytes[r.link_bytes > 0] == 2 * (p - 1) * block)
    busy_integral = float(np.sum(np.diff(r.timeline_t) * r.timeline_busy[:-1]))
    assert busy_integral == pytest.approx(r.link_busy_s.sum(), rel=1e-12)
    centres, mean = r.busy_links(10)
    assert mean == pytest.approx(np.full(10, p), rel=1e-9)


# -- recursive doubling on a line --------------------------------------------------
def rd_with_barriers(p: int, size: int) -> wc.Schedule:
    """Recursive doubling allreduce; every step waits for the whole previous one."""
    s = wc.Schedule(p, [size], "allreduce", name=f"rd-barrier({p})")
    prev: list[int] = []
    d = 1
    while d < p:
        prev = [s.add_transfer(r, r ^ d, [0], op="reduce", deps=prev) for r in range(p)]
        d *= 2
    return s


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_recursive_doubling_on_a_line_follows_link_load(k: int) -> None:
    p, size, bw, alpha = 2**k, 5000, 1e9, 1e-6
    s = rd_with_barriers(p, size)
    wc.verify(s)
    topo = wc.line(p)
    expected = 0.0
    d = 1
    while d < p:
        load = np.zeros(topo.num_links, dtype=int)
        for r in range(p):
            load[topo.route(r, r ^ d)] += 1
        # lat = 0: the busiest link serializes its messages after alpha, and
        # the first message on a link also leads on every later link.
        expected += alpha + load.max() * size / bw
        d *= 2
    r = wc.simulate(s, topo, wc.NetworkModel(bw, alpha_s=alpha))
    assert close(r.time_s, expected)
    assert r.time_s >= r.link_busy_s.max()


# -- pipelines -------------------------------------------------------------------
def reduce_chain(p: int, nb: int, in_order: bool) -> wc.Schedule:
    """Chain reduce to rank 0 on a line, block by block.

    Block i goes j+1 -> j after it arrived at j+1 (from j+2); with
    ``in_order`` also after block i-1 left j+1.
    """
    s = wc.Schedule(p, [1000] * nb, "reduce", root=0)
    last: dict[tuple[int, int], int] = {}
    for j in range(p - 2, -1, -1):
        for i in range(nb):
            deps = []
            if (j + 1, i) in last:
                deps.append(last[(j + 1, i)])
            if in_order and i > 0:
                deps.append(last[(j, i - 1)])
            last[(j, i)] = s.add_transfer(j + 1, j, [i], op="reduce", deps=deps)
    return s


@pytest.mark.parametrize("p", [2, 3, 6, 9])
@pytest.mark.parametrize("nb", [1, 2, 5, 16])
def test_pipelined_chain(p: int, nb: int) -> None:
    bw, lat, alpha, b = 1e9, 3e-7, 1e-6, 1000
    net = wc.NetworkModel(bw, hop_latency_s=lat, alpha_s=alpha)
    topo = wc.line(p)
    # Each transfer also waits for the previous block on its link: every
    # stage costs the same, (p - 1) + (nb - 1) stages in a row.
    s = reduce_chain(p, nb, in_order=True)
    wc.verify(s)
    stage = alpha + lat + b / bw
    assert close(
        wc.simulate(s, topo, net).time_s, (p - 1) * stage + (nb - 1) * stage, rel=1e-9
    )
    # Data dependencies only: blocks stream back to back at the link rate.
    s = reduce_chain(p, nb, in_order=False)
    wc.verify(s)
    expected = (p - 1) * (alpha + lat + b / bw) + (nb - 1) * b / bw
    assert close(wc.simulate(s, topo, net).time_s, expected, rel=1e-9)


def test_unit_timestep_counts_pieces_and_hops() -> None:
    piece, k, hops = 100, 6, 4
    s = one_transfer(hops + 1, 0, hops, k * piece)
    r = wc.simulate(s, wc.line(hops + 1), wc.NetworkModel.unit_timestep(piece))
    assert r.cycles == pytest.approx(hops * k)
    net = wc.NetworkModel.unit_timestep(piece).replace(packet_bytes=piece)
    r = wc.simulate(s, wc.line(hops + 1), net)
    assert r.cycles == pytest.approx(hops + k - 1)


# -- multicast, ports, reduction ---------------------------------------------------
def test_multicast_crosses_each_link_once() -> None:
    bw, lat, size = 1e9, 1e-7, 8000
    s = wc.Schedule(4, [size], "broadcast", root=0)
    s.add_transfer(0, [1, 2, 3], [0])
    wc.verify(s)
    net = wc.NetworkModel(bw, hop_latency_s=lat, packet_bytes=1000)
    r = wc.simulate(s, wc.line(4), net)
    assert close(r.time_s, 3 * lat + size / bw)
    assert r.link_bytes.sum() == 3 * size
    assert r.rank_finish_s[1:] == pytest.approx(
        [h * lat + size / bw for h in (1, 2, 3)], rel=REL
    )
    # Three unicasts instead load the first link three times.
    u = wc.Schedule(4, [size], "broadcast", root=0)
    for d in (1, 2, 3):
        u.add_transfer(0, d, [0])
    ru = wc.simulate(u, wc.line(4), net)
    assert ru.link_bytes.max() == 3 * size
    assert ru.time_s > 2.9 * size / bw


def test_dataflow_data_edge_waits_for_its_destination_of_a_multicast() -> None:
    # Rank 0 multicasts block 0 to ranks 1-3 in 8 packets; rank 2 then sends
    # block 1 on, after the data it receives (a data edge: other blocks, so
    # not a stream). It starts when the last packet reaches rank 2, one hop
    # after rank 1 has it all and one before the multicast ends at rank 3.
    bw, lat, size = 1e9, 1e-7, 8000
    s = wc.Schedule(4, [size, size], "allgather", owners=[0, 2])
    a = s.add_transfer(0, [1, 2, 3], [0])
    s.add_transfer(2, 3, [1], deps=[a])
    net = wc.NetworkModel(
        bw, hop_latency_s=lat, packet_bytes=1000, dependencies="dataflow"
    )
    r = wc.simulate(s, wc.line(4), net, transfers=True)
    assert close(r.transfer_ready_s[1], 2 * lat + size / bw)
    assert close(r.rank_finish_s[1], lat + size / bw)
    assert close(r.transfer_finish_s[0], 3 * lat + size / bw)


def test_multicast_on_a_mesh_forms_a_tree() -> None:
    size = 4096
    topo = wc.topology.mesh(3, 3)
    s = wc.Schedule(9, [size], "broadcast", root=4)
    s.add_transfer(4, [0, 1, 2, 3, 5, 6, 7, 8], [0])
    r = wc.simulate(s, topo, wc.NetworkModel(1e9, hop_latency_s=1e-8))
    # Union of X-then-Y routes from the centre: 2 row links + 6 column links.
    used = set()
    for d in range(9):
        if d != 4:
            used.update(topo.route(4, d).tolist())
    assert r.links_used == len(used) == 8
    assert np.all(r.link_bytes[list(used)] == size)
    assert close(r.time_s, 2 * 1e-8 + size / 1e9)


@pytest.mark.parametrize("ports", [1, 2])
def test_ports_limit_concurrent_injection(ports: int) -> None:
    bw, size, plat = 1e9, 10_000, 2e-7
    s = wc.Schedule(3, [size, size], "allgather", owners=[1, 1])
    s.add_transfer(1, 0, [0])
    s.add_transfer(1, 2, [1])
    net = wc.NetworkModel(bw, ports=ports, port_latency_s=plat)
    r = wc.simulate(s, wc.line(3), net, transfers=True)
    one = 2 * plat + size / bw  # injection port, one link, ejection port
    if ports == 1:
        assert sorted(r.transfer_finish_s) == pytest.approx(
            [one, one + size / bw], rel=REL
        )
    else:
        assert r.transfer_finish_s == pytest.approx([one, one], rel=REL)
    assert close(r.injection_busy_s[1], 2 * size / bw)
    assert r.link_busy_s.sum() == pytest.approx(2 * size / bw, rel=REL)
    free = wc.simulate(s, wc.line(3), wc.NetworkModel(bw), transfers=True)
    assert free.transfer_finish_s == pytest.approx([size / bw] * 2, rel=REL)


@pytest.mark.parametrize("overhead", [0.0, 3e-6, 2e-5])
def test_switch_overhead_between_incoming_streams(overhead: float) -> None:
    # Ranks 1..m each send one S-byte message to rank 0 on a star: the
    # root's one ejection channel takes them one after another, and every one
    # after the first waits the switch overhead once the channel is free.
    m, bw, size = 4, 1e9, 10_000
    s = wc.Schedule(m + 1, [size], "reduce", root=0)
    for r in range(1, m + 1):
        s.add_transfer(r, 0, [0], op="reduce")
    net = wc.NetworkModel(bw, ports=1, switch_overhead_s=overhead)
    res = wc.simulate(s, wc.topology.star(m + 1), net, transfers=True)
    one = size / bw  # cut-through: the stages at one bandwidth pipeline
    expect = [one + k * (size / bw + overhead) for k in range(m)]
    assert sorted(res.transfer_finish_s) == pytest.approx(expect, rel=REL)
    # A chain receives one stream per rank: no switch anywhere.
    c = wc.Schedule(m + 1, [size], "reduce", root=0)
    prev: list[int] = []
    for r in range(m, 0, -1):
        prev = [c.add_transfer(r, r - 1, [0], op="reduce", deps=prev)]
    chain = wc.simulate(c, wc.line(m + 1), net)
    assert chain.time_s == pytest.approx(m * size / bw, rel=REL)


def test_switch_overhead_is_hidden_by_a_late_stream() -> None:
    # The second stream into rank 0 starts after a long transfer elsewhere,
    # later than the channel's switch ends: the overhead costs nothing.
    bw, size, overhead = 1e9, 1000, 1e-7
    s = wc.Schedule(4, [size, 20 * size], "reduce", root=0)
    a = s.add_transfer(1, 0, [0], op="reduce")
    b = s.add_transfer(3, 2, [1], op="reduce")
    s.add_transfer(2, 0, [0], op="reduce", deps=[b])
    net = wc.NetworkModel(bw, ports=1, switch_overhead_s=overhead)
    r = wc.simulate(s, wc.line(4), net, transfers=True)
    free = wc.simulate(
        s, wc.line(4), net.replace(switch_overhead_s=0.0), transfers=True
    )
    assert r.transfer_finish_s == pytest.approx(free.transfer_finish_s, rel=REL)
    assert r.transfer_finish_s[a] < r.transfer_finish_s[2]


def test_switch_overhead_needs_ports() -> None:
    with pytest.raises(ValueError, match="switch_overhead_s > 0 needs ports"):
        wc.NetworkModel(1e9, switch_overhead_s=1e-9)
    with pytest.raises(ValueError, match="switch_overhead_s"):
        wc.NetworkModel(1e9, ports=1, switch_overhead_s=-1.0)


def test_port_bandwidth_can_be_lower_than_links() -> None:
    size, m, slow, fast = 10_000, 1000, 5e8, 1e9
    s = one_transfer(3, 0, 2, size)
    net = wc.NetworkModel(fast, ports=1, port_bandwidth_Bps=slow, packet_bytes=m)
    r = wc.simulate(s, wc.line(3), net)
    # Cut-through, no latency: packet k's head leaves the slow injection port
    # at k m / slow and its tail at (k + 1) m / slow. The fast links pass the
    # head on at once and send the packet in m / fast just before its tail
    # arrives; the slow ejection port takes the head at k m / slow too (the
    # fast links do not hold it back) and needs m / slow, so it finishes with
    # the tail: the last packet is done at S / slow, the rate of the slowest
    # stage.
    assert close(r.time_s, size / slow)
    assert close(r.injection_busy_s[0], size / slow)
    assert close(r.ejection_busy_s[2], size / slow)


def test_messages_of_4_gib_and_more_keep_their_size() -> None:
    # A message not cut into packets is one packet of its own size: 5 GiB
    # does not fit the 32 bits that smaller last packets are kept in, and is
    # followed by a small message that depends on it.
    bw, lat, big, small = 1e9, 1e-6, 5 << 30, 100
    s = wc.Schedule(3, [big, small], "allgather", owners=[0, 1])
    first = s.add_transfer(0, 1, [0])
    s.add_transfer(1, 2, [1], deps=[first])
    net = wc.NetworkModel(bw, hop_latency_s=lat)
    r = wc.simulate(s, wc.line(3), net, transfers=True)
    assert close(r.transfer_finish_s[0], lat + big / bw)
    assert close(r.time_s, 2 * lat + (big + small) / bw)
    assert sorted(r.link_bytes.tolist()) == [0, 0, small, big]


def test_packet_counts_too_many_for_the_packed_record_keep_their_sizes() -> None:
    # A transfer's packet count and last packet's size share 32 bits while
    # they fit: with 64 KiB packets (17 bits of size) a count of 2^15 or more
    # does not, and the run moves every last size to its own array, the
    # earlier transfers' included (a small message first, then the large one).
    bw, lat, small, pkt = 1e9, 1e-6, 100, 64 << 10
    big = (1 << 15) * pkt + 1000  # 2^15 + 1 packets, the last of 1000 bytes
    s = wc.Schedule(3, [small, big], "allgather", owners=[0, 1])
    first = s.add_transfer(0, 1, [0])
    s.add_transfer(1, 2, [1], deps=[first])
    net = wc.NetworkModel(bw, hop_latency_s=lat, packet_bytes=pkt)
    r = wc.simulate(s, wc.line(3), net, transfers=True)
    assert r.packets == 1 + (1 << 15) + 1
    assert close(r.transfer_finish_s[0], lat + small / bw)
    assert close(r.time_s, 2 * lat + (small + big) / bw)
    assert sorted(r.link_bytes.tolist()) == [0, 0, small, big]


def test_reduction_cost_applies_to_reducing_transfers_only() -> None:
    bw, gamma, size = 1e9, 1e-9, 5000
    net = wc.NetworkModel(bw, gamma_s_per_byte=gamma)
    copy = wc.simulate(one_transfer(2, 0, 1, size, "copy"), wc.line(2), net)
    red = wc.simulate(one_transfer(2, 0, 1, size, "reduce"), wc.line(2), net)
    assert close(copy.time_s, size / bw)
    assert close(red.time_s, size / bw + gamma * size)


def test_rank_finish_times_and_cycles() -> None:
    bw, lat, size, clock = 1e9, 1e-6, 1000, 1.25e9
    net = wc.NetworkModel(bw, hop_latency_s=lat, clock_Hz=clock)
    r = wc.simulate(one_transfer(3, 0, 2, size), wc.line(3), net)
    # The source is done when its last byte left the first link.
    assert close(r.rank_finish_s[0], size / bw)
    assert r.rank_finish_s[1] == 0.0
    assert close(r.rank_finish_s[2], 2 * lat + size / bw)
    assert close(r.cycles, r.time_s * clock)
    assert (
        wc.simulate(one_transfer(2, 0, 1, 8), wc.line(2), wc.NetworkModel(1e9)).cycles
        is None
    )


def test_placement_maps_ranks_to_endpoints() -> None:
    size, bw = 1000, 1e9
    s = one_transfer(2, 0, 1, size)
    r = wc.simulate(
        s, wc.line(6), wc.NetworkModel(bw, hop_latency_s=1e-6), placement=[5, 1]
    )
    assert close(r.time_s, 4e-6 + size / bw)


# -- general properties ------------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [
        "generic_ring_allreduce",
        "generic_recursive_doubling_allreduce",
        "generic_rabenseifner_allreduce",
        "generic_binomial_reduce",
        "generic_binomial_broadcast",
    ],
)
@pytest.mark.parametrize("p", [3, 5, 12])
def test_transfers_never_beat_their_uncontended_time(name: str, p: int) -> None:
    bw, lat, alpha = 1e9, 1e-7, 1e-6
    s = wc.build(name, p, 60_000)
    topo = wc.topology.mesh(3, 4)
    net = wc.NetworkModel(bw, hop_latency_s=lat, alpha_s=alpha, packet_bytes=4096)
    r = wc.simulate(s, topo, net, transfers=True)
    sizes = s.transfer_bytes()
    for t in range(s.num_transfers):
        tr = s.transfer(t)
        h = max(topo.hops(tr["src"], d) for d in tr["dst"])
        assert r.transfer_finish_s[t] - r.transfer_ready_s[t] >= (
            alpha + h * lat + sizes[t] / bw
        ) * (1 - 1e-12)
        for d in tr["deps"]:
            assert r.transfer_ready_s[t] >= r.transfer_finish_s[d]
    assert r.time_s == pytest.approx(r.transfer_finish_s.max(), rel=0)
    assert r.time_s >= r.link_busy_s.max()
    assert np.all(r.link_busy_s <= r.time_s)


def permuted(
    s: wc.Schedule, rng: np.random.Generator
) -> tuple[wc.Schedule, np.ndarray]:
    """The same schedule with transfers renumbered in a random topological order."""
    doc = s.to_dict()
    ts = doc["transfers"]
    n = len(ts)
    indeg = [len(t["deps"]) for t in ts]
    succ: list[list[int]] = [[] for _ in range(n)]
    for i, t in enumerate(ts):
        for d in t["deps"]:
            succ[d].append(i)
    ready = [i for i in range(n) if indeg[i] == 0]
    order = []
    while ready:
        i = ready.pop(int(rng.integers(len(ready))))
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    new_of = np.empty(n, dtype=int)
    new_of[order] = np.arange(n)
    doc["transfers"] = [
        dict(ts[i], deps=sorted(int(new_of[d]) for d in ts[i]["deps"])) for i in order
    ]
    return wc.Schedule.from_dict(doc), new_of


@pytest.mark.parametrize(
    "name",
    [
        "generic_ring_allreduce",
        "generic_recursive_doubling_allreduce",
        "generic_rabenseifner_allreduce",
    ],
)
def test_deterministic_and_independent_of_transfer_order(
    name: str, rng: np.random.Generator
) -> None:
    s = wc.build(name, 11, 90_000)
    topo = wc.topology.torus(3, 4)
    net = wc.NetworkModel(
        1e9, hop_latency_s=2e-7, packet_bytes=2048, ports=2, gamma_s_per_byte=1e-10
    )
    a = wc.simulate(s, topo, net, transfers=True, timeline=True)
    b = wc.simulate(s, topo, net, transfers=True, timeline=True)
    for field in (
        "rank_finish_s",
        "link_busy_s",
        "link_bytes",
        "transfer_finish_s",
        "timeline_t",
        "timeline_busy",
    ):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.time_s == b.time_s
    for _ in range(3):
        q, new_of = permuted(s, rng)
        c = wc.simulate(q, topo, net, transfers=True)
        assert c.time_s == a.time_s
        assert np.array_equal(c.link_busy_s, a.link_busy_s)
        assert np.array_equal(c.rank_finish_s, a.rank_finish_s)
        assert np.array_equal(c.transfer_finish_s[new_of], a.transfer_finish_s)


def test_results_export() -> None:
    pd = pytest.importorskip("pandas")
    s = wc.build("generic_ring_allreduce", 4, 4000)
    r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9), transfers=True, timeline=True)
    links = r.to_pandas()
    assert isinstance(links, pd.DataFrame) and len(links) == wc.ring(4).num_links
    assert list(r.to_pandas("ranks")["finish_s"]) == list(r.rank_finish_s)
    assert len(r.to_pandas("transfers")) == s.num_transfers
    assert len(r.to_pandas("timeline")) == len(r.timeline_t)
    assert r.summary()["time_s"] == r.time_s
    assert "SimResult" in repr(r) and "<table>" in r._repr_html_()
    with pytest.raises(ValueError, match="what must be"):
        r.to_pandas("nope")
    bare = wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9))
    with pytest.raises(ValueError, match="transfers=True"):
        bare.to_pandas("transfers")
    with pytest.raises(ValueError, match="timeline=True"):
        bare.busy_links()


def test_empty_schedule() -> None:
    s = wc.Schedule(3, [10], "allreduce")
    with pytest.raises(wc.ScheduleError):
        wc.verify(s)  # nothing is reduced; the simulator still runs it
    r = wc.simulate(s, wc.line(3), wc.NetworkModel(1e9))
    assert r.time_s == 0.0 and r.link_utilization == 0.0


def test_network_presets() -> None:
    presets = wc.network_presets()
    assert {"ideal", "hockney", "unit_timestep"} <= set(presets)
    h = wc.NetworkModel.hockney(1e-6, 2e9)
    assert (h.alpha_s, h.bandwidth_Bps, h.name) == (1e-6, 2e9, "hockney")
    assert h.replace(alpha_s=0.0).alpha_s == 0.0
    assert wc.NetworkModel.ideal().to_dict()["bandwidth_Bps"] == 1e9


# -- bad input -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bandwidth_Bps": 0}, "bandwidth_Bps must be >= 1"),
        ({"bandwidth_Bps": -1.0}, "bandwidth_Bps must be >= 1"),
        ({"bandwidth_Bps": math.inf}, "bandwidth_Bps must be a finite"),
        ({"bandwidth_Bps": 1e9, "hop_latency_s": -1e-9}, "hop_latency_s must be >= 0"),
        ({"bandwidth_Bps": 1e9, "alpha_s": -1.0}, "alpha_s must be >= 0"),
        ({"bandwidth_Bps": 1e9, "packet_bytes": 0}, "packet_bytes must be >= 1"),
        ({"bandwidth_Bps": 1e9, "switching": "wormhole"}, "switching must be"),
        ({"bandwidth_Bps": 1e9, "gamma_s_per_byte": -1.0}, "gamma_s_per_byte"),
        ({"bandwidth_Bps": 1e9, "ports": 0}, "ports must be >= 1"),
        ({"bandwidth_Bps": 1e9, "packet_bytes": 64, "flit_bytes": 128}, "flit_bytes"),
        ({"bandwidth_Bps": 1e9, "clock_Hz": 0.0}, "clock_Hz must be >= 1e-06"),
    ],
)
def test_bad_network_models(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wc.NetworkModel(**kwargs)


def test_bad_network_model_types() -> None:
    with pytest.raises(TypeError, match="bandwidth_Bps"):
        wc.NetworkModel("fast")
    with pytest.raises(TypeError, match="packet_bytes"):
        wc.NetworkModel(1e9, packet_bytes=1.5)


def test_more_ranks_than_endpoints() -> None:
    s = wc.build("generic_ring_allreduce", 8, 800)
    with pytest.raises(ValueError, match="8 ranks but topology ring\\(4\\) has only 4"):
        wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9))


def test_route_through_a_missing_link() -> None:
    topo = wc.custom(3, [(0, 1), (1, 0), (1, 2)])  # nothing leads back from 2
    s = one_transfer(3, 2, 0, 100)
    with pytest.raises(ValueError, match="no route"):
        wc.simulate(s, topo, wc.NetworkModel(1e9))


def test_bad_placements_and_arguments() -> None:
    s = one_transfer(2, 0, 1, 100)
    net = wc.NetworkModel(1e9)
    with pytest.raises(ValueError, match="distinct endpoints"):
        wc.simulate(s, wc.line(4), net, placement=[2, 2])
    with pytest.raises(ValueError, match="not an endpoint"):
        wc.simulate(s, wc.line(4), net, placement=[0, 9])
    with pytest.raises(ValueError, match=r"placement\[1\] must be >= 0"):
        wc.simulate(s, wc.line(4), net, placement=[0, -1])
    with pytest.raises(ValueError, match="one endpoint per rank"):
        wc.simulate(s, wc.line(4), net, placement=[0])
    with pytest.raises(TypeError, match="schedule"):
        wc.simulate("s", wc.line(4), net)
    with pytest.raises(TypeError, match="topology"):
        wc.simulate(s, "line", net)
    with pytest.raises(TypeError, match="network"):
        wc.simulate(s, wc.line(4), 1e9)


def test_too_large_runs_are_refused_up_front() -> None:
    s = wc.build("generic_ring_allreduce", 16, 1 << 30)
    net = wc.NetworkModel(1e9, packet_bytes=64)
    assert wc.simulation_events(s, wc.ring(16), net) > 10**8
    with pytest.raises(ValueError, match="max_events"):
        wc.simulate(s, wc.ring(16), net, max_events=10**8)


def test_a_refused_run_carries_its_event_count() -> None:
    # 2 (p - 1) steps of p one-hop transfers of S / p bytes, each cut into
    # S / (p * packet) packets: one event per packet per link (no ports).
    p, size, packet = 6, 6 * 4000, 500
    s = wc.build("generic_ring_allreduce", p, size)
    net = wc.NetworkModel(1e9, packet_bytes=packet)
    expected = 2 * (p - 1) * p * (size // p // packet)
    with pytest.raises(wc.SimulationTooLarge, match="max_events") as info:
        wc.simulate(s, wc.ring(p), net, max_events=expected - 1)
    assert isinstance(info.value, ValueError)
    assert (info.value.events, info.value.max_events) == (expected, expected - 1)
    assert wc.simulation_events(s, wc.ring(p), net) == expected
    # exactly at the limit it runs
    assert wc.simulate(s, wc.ring(p), net, max_events=expected).events == expected


def test_dependency_cycle_is_refused() -> None:
    doc = one_transfer(2, 0, 1, 10).to_dict()
    doc["transfers"].append(
        {"src": 1, "dst": [0], "blocks": [0], "op": "copy", "deps": [0]}
    )
    doc["transfers"][0]["deps"] = [1]
    s = wc.Schedule.from_dict(doc)
    with pytest.raises(ValueError, match="cycle"):
        wc.simulate(s, wc.line(2), wc.NetworkModel(1e9))


# -- copy cost and dataflow dependencies ---------------------------------------------
def test_copy_cost_applies_to_copying_transfers() -> None:
    bw, c, g, size = 1e9, 2e-9, 5e-9, 4000
    net = wc.NetworkModel(bw, copy_s_per_byte=c, gamma_s_per_byte=g)
    copy = wc.simulate(one_transfer(2, 0, 1, size, "copy"), wc.line(2), net)
    red = wc.simulate(one_transfer(2, 0, 1, size, "reduce"), wc.line(2), net)
    assert close(copy.time_s, size / bw + c * size)
    assert close(red.time_s, size / bw + g * size)


def forward_pair(op: str = "reduce") -> wc.Schedule:
    """Rank 2 sends to 1, which forwards (data dependency) to 0."""
    s = wc.Schedule(3, [1000], "reduce", root=0)
    a = s.add_transfer(2, 1, [0], op=op)
    s.add_transfer(1, 0, [0], op=op, deps=[a])
    return s


def test_dataflow_forwards_before_the_reduction_finishes() -> None:
    bw, g, size = 1e9, 1e-9, 1000
    net = wc.NetworkModel(bw, gamma_s_per_byte=g)
    s = forward_pair()
    complete = wc.simulate(s, wc.line(3), net, transfers=True)
    # Program order: the forward waits for the reduction at rank 1.
    assert close(complete.time_s, 2 * (size / bw + g * size))
    flow = wc.simulate(
        s, wc.line(3), net.replace(dependencies="dataflow"), transfers=True
    )
    # Dataflow: it leaves once the data is delivered; only the last
    # reduction (at rank 0) is on the critical path.
    assert close(flow.transfer_ready_s[1], size / bw)
    assert close(flow.time_s, 2 * size / bw + g * size)
    assert close(flow.transfer_finish_s[0], size / bw + g * size)


def test_dataflow_keeps_writes_to_a_destination_in_order() -> None:
    # Ranks 1 and 2 both reduce into rank 0; the second write is ordered
    # after the first by a dependency that carries no data. With dataflow the
    # second stream travels at once but enters each shared link only after
    # the first stream's last packet: with packets of 1/4 of the message the
    # link 1 -> 0 stays busy and the total equals two messages back to back.
    bw, size, m = 1e9, 4000, 1000
    s = wc.Schedule(3, [size], "reduce", root=0)
    first = s.add_transfer(2, 0, [0], op="reduce")
    s.add_transfer(1, 0, [0], op="reduce", deps=[first])
    wc.verify(s)
    net = wc.NetworkModel(bw, packet_bytes=m, dependencies="dataflow")
    r = wc.simulate(s, wc.line(3), net, transfers=True)
    assert close(r.transfer_ready_s[1], 0.0)  # no waiting to start
    assert close(r.transfer_finish_s[0], size / bw)
    assert close(r.transfer_finish_s[1], 2 * size / bw)
    # In program order the second starts only when the first is done.
    done = wc.simulate(
        s, wc.line(3), net.replace(dependencies="complete"), transfers=True
    )
    assert close(done.transfer_ready_s[1], size / bw)


@pytest.mark.parametrize("slow", [0, 1])
def test_dataflow_stream_of_two_dependencies_waits_for_both(slow: int) -> None:
    # Ranks 0 and 1 reduce one block into rank 2, each over a link of its
    # own, one of them four times slower; rank 2 forwards the block to rank
    # 3 as a stream of both. Its packet k goes once both have delivered it:
    # at the slow side's (k + 1) m / slow_bw, the fast side running up to
    # all n packets ahead (more than a stream keeps inline). The last packet
    # reaches rank 3 one packet time after the slow side's last.
    fast, m, n = 4e9, 1000, 8
    bw = [fast, fast, fast]
    bw[slow] = fast / 4
    top = wc.topology.custom(4, [(0, 2), (1, 2), (2, 3)], bandwidth_Bps=bw)
    s = wc.Schedule(4, [n * m], "reduce", root=3)
    a = s.add_transfer(0, 2, [0], op="reduce")
    b = s.add_transfer(1, 2, [0], op="reduce", deps=[a])
    s.add_transfer(2, 3, [0], op="reduce", deps=[a, b])
    # No bandwidth of the model's own: the links keep theirs.
    net = wc.NetworkModel(None, packet_bytes=m, dependencies="dataflow")
    r = wc.simulate(s, top, net, transfers=True)
    assert close(r.transfer_finish_s[slow], n * m / (fast / 4))
    assert close(r.transfer_finish_s[1 - slow], n * m / fast)
    assert close(r.transfer_ready_s[2], 0.0)  # a stream: it starts at once
    assert close(r.transfer_finish_s[2], n * m / (fast / 4) + m / fast)
    assert close(r.time_s, n * m / (fast / 4) + m / fast)


def test_dataflow_rejects_unknown_modes() -> None:
    with pytest.raises(ValueError, match="dependencies must be"):
        wc.NetworkModel(1e9, dependencies="eager")
    with pytest.raises(ValueError, match="copy_s_per_byte"):
        wc.NetworkModel(1e9, copy_s_per_byte=-1.0)


@pytest.mark.parametrize(
    ("name", "topo", "net"),
    [
        (
            "generic_rabenseifner_allreduce",
            wc.topology.torus(3, 4),
            wc.NetworkModel(1e9, packet_bytes=512, ports=2),
        ),
        (
            "generic_ring_allreduce",
            wc.topology.mesh(3, 4),
            wc.NetworkModel.unit_timestep(1000).replace(packet_bytes=250),
        ),
        (
            "generic_recursive_doubling_allreduce",
            wc.line(12),
            wc.NetworkModel(
                1e9,
                hop_latency_s=1e-8,
                gamma_s_per_byte=1e-10,
                dependencies="dataflow",
                packet_bytes=1000,
            ),
        ),
    ],
)
def test_event_queues_give_identical_results(name: str, topo, net) -> None:
    s = wc.build(name, 12, 48_000)
    runs = [
        wc.simulate(s, topo, net, transfers=True, event_queue=q)
        for q in ("heap", "buckets", "auto")
    ]
    for r in runs[1:]:
        assert r.time_s == runs[0].time_s
        assert np.array_equal(r.link_busy_s, runs[0].link_busy_s)
        assert np.array_equal(r.transfer_finish_s, runs[0].transfer_finish_s)
        assert np.array_equal(r.rank_finish_s, runs[0].rank_finish_s)
    with pytest.raises(ValueError, match="event_queue must be"):
        wc.simulate(s, topo, net, event_queue="fast")


def test_adaptive_queue_switches_and_stays_identical() -> None:
    # Random link speeds and latencies: nearly every event has a time of its
    # own; "auto" times both queues during the run, again after 4x as many
    # pushes, and may move between them each time; the results must equal
    # both fixed queues' bit for bit.
    rng = np.random.default_rng(7)
    n = 120
    links = [(i, (i + j) % n) for i in range(n) for j in (1, 7)]
    links += [(b, a) for a, b in links]
    top = wc.topology.custom(
        n,
        links,
        bandwidth_Bps=rng.uniform(1e9, 3e9, len(links)),
        latency_s=rng.uniform(1e-7, 1e-6, len(links)),
    )
    s = wc.build("generic_ring_allreduce", n, 4 << 20)
    net = wc.NetworkModel(None, packet_bytes=1024)
    runs = [
        wc.simulate(s, top, net, transfers=True, event_queue=q)
        for q in ("heap", "buckets", "auto")
    ]
    assert runs[0].events > 4 * 3 * 65536 + 2 * 65536  # past the second trial
    for r in runs[1:]:
        assert r.time_s == runs[0].time_s
        assert np.array_equal(r.transfer_finish_s, runs[0].transfer_finish_s)
        assert np.array_equal(r.link_busy_s, runs[0].link_busy_s)


def test_event_queues_agree_on_the_wafer() -> None:
    s = wc.build(
        "wafer_xy_reduce", 36, 4 * 16, wc.wafer.wafer_grid(6, 6), pattern="tree"
    )
    net = wc.wafer.wse2_network()
    a = wc.simulate(
        s, wc.wafer.wafer_grid(6, 6), net, event_queue="heap", transfers=True
    )
    for q in ("buckets", "auto"):
        b = wc.simulate(
            s, wc.wafer.wafer_grid(6, 6), net, event_queue=q, transfers=True
        )
        assert a.time_s == b.time_s
        assert np.array_equal(a.transfer_finish_s, b.transfer_finish_s)


def test_auto_queue_is_identical_on_a_clocked_noc() -> None:
    # A clocked model whose packets take fractions of a cycle (Table II of
    # the chiplet paper: 8 KiB at 25 GB/s): "auto" measures there too.
    top = wc.topology.mesh(5, 5)
    s = wc.build("mesh_dbtree_allreduce", topology=top, size_bytes=16 << 20)
    runs = [
        wc.simulate(s, top, wc.mcm.TABLE_II, transfers=True, event_queue=q)
        for q in ("heap", "buckets", "auto")
    ]
    assert runs[0].events > 3 * 65536
    for r in runs[1:]:
        assert r.time_s == runs[0].time_s
        assert np.array_equal(r.transfer_finish_s, runs[0].transfer_finish_s)


def test_trace_records_every_stage_service() -> None:
    s = wc.build("generic_rabenseifner_allreduce", 6, 6000)
    net = wc.NetworkModel(1e9, packet_bytes=500, ports=1, port_latency_s=1e-8)
    r = wc.simulate(s, wc.topology.mesh(2, 3), net, trace=True)
    tr = r.trace()
    assert len(tr["transfer"]) == r.events
    links = tr["kind"] == 0
    busy = np.bincount(
        tr["link"][links],
        weights=(tr["finish_s"] - tr["start_s"])[links],
        minlength=wc.topology.mesh(2, 3).num_links,
    )
    assert busy == pytest.approx(r.link_busy_s, rel=1e-12)
    inj = tr["kind"] == 1
    assert np.array_equal(np.unique(tr["endpoint"][inj]), np.unique(s.src))
    assert np.all(tr["finish_s"] >= tr["start_s"])
    with pytest.raises(ValueError, match="trace=True"):
        wc.simulate(s, wc.topology.mesh(2, 3), net).trace()


def test_cut_through_head_is_not_held_back_by_fast_links() -> None:
    # slow, fast, fast, slow links on a line of 5 (one packet, no latency):
    # the head crosses the fast links at once, so the last slow link starts
    # with the first and the packet is done at S / slow (a store-and-forward
    # reading of the fast links would give about 2 S / slow).
    size, slow, fast = 2048, 1e9, 1e12
    top = wc.custom(
        5,
        [(0, 1), (1, 2), (2, 3), (3, 4)],
        bandwidth_Bps=[slow, fast, fast, slow],
    )
    r = wc.simulate(one_transfer(5, 0, 4, size), top, wc.NetworkModel(None))
    assert close(r.time_s, size / slow)
    # A slow middle link alone sets the time too: it takes the head at once
    # and the fast links after it send the packet just before its tail.
    top2 = wc.custom(
        5,
        [(0, 1), (1, 2), (2, 3), (3, 4)],
        bandwidth_Bps=[fast, slow, fast, fast],
    )
    r2 = wc.simulate(one_transfer(5, 0, 4, size), top2, wc.NetworkModel(None))
    assert close(r2.time_s, size / slow)
    # Store-and-forward adds every link's time.
    saf = wc.NetworkModel(None, switching="store_and_forward")
    r3 = wc.simulate(one_transfer(5, 0, 4, size), top, saf)
    assert close(r3.time_s, 2 * size / slow + 2 * size / fast)


# -- nccl-tests' algorithm and bus bandwidth ---------------------------------------
@pytest.mark.parametrize("p", [2, 3, 5, 8])
def test_bus_bandwidth_of_bandwidth_optimal_rings_is_the_link_speed(p) -> None:
    """A unidirectional ring allreduce, reduce-scatter and allgather on a ring
    of p endpoints keep every link busy: busbw equals the link bandwidth
    (nccl-tests' definition), without latencies."""
    bw, size = 2e9, 6 * p * 1000
    net = wc.NetworkModel(bw)
    for name, kind in (
        ("generic_ring_allreduce", "allreduce"),
        ("generic_ring_reduce_scatter", "reduce_scatter"),
        ("generic_ring_allgather", "allgather"),
    ):
        r = wc.simulate(wc.build(name, p, size), wc.ring(p), net)
        assert r.collective.kind == kind
        assert r.algbw_Bps == pytest.approx(size / r.time_s)
        assert r.busbw_Bps == pytest.approx(bw, rel=1e-12)
        assert r.summary()["busbw_Bps"] == r.busbw_Bps


def test_bus_factors_and_their_refusals() -> None:
    from wafercoll.simulate import bus_factor

    assert bus_factor("allreduce", 4) == 1.5
    assert bus_factor("alltoall", 4) == 0.75
    assert bus_factor("reduce", 4) == bus_factor("broadcast", 9) == 1.0
    assert bus_factor("unknown", 4) is None
    with pytest.raises(ValueError, match="ranks"):
        bus_factor("allreduce", 0)
    s = wc.build("generic_ring_allreduce", 2, 8)
    r = wc.simulate(s, wc.ring(2), wc.NetworkModel(1e9))
    assert r.busbw_Bps == pytest.approx(r.algbw_Bps)  # 2 (n - 1) / n = 1


def test_release_memory_gives_back_the_blocks_kept_for_reuse():
    # a ring allreduce on 256 ranks has 130,560 transfers: its per-transfer
    # arrays are blocks of 2 MiB or more, which the simulator keeps
    from wafercoll import _core

    m = wc.topology.ring(256)
    s = wc.build("generic_ring_allreduce", topology=m, size_bytes=1 << 20)
    net = wc.NetworkModel(1e9)
    first = wc.simulate(s, m, net).time_s
    kept = _core.cached_memory()
    assert kept >= 2 << 20
    assert wc.release_memory() == kept
    assert _core.cached_memory() == 0 and wc.release_memory() == 0
    assert wc.simulate(s, m, net).time_s == first  # runs from fresh memory alike


_HUGE_PAGES_RUN = """
import json, wafercoll as wc
from wafercoll import _core
m = wc.topology.torus(16, 16)
s = wc.build("generic_ring_allreduce", topology=m, size_bytes=1 << 20)
wc.verify(s)
r = wc.simulate(s, m, wc.NetworkModel(25e9, packet_bytes=1024), transfers=True)
print(json.dumps([_core.huge_pages_offered(), r.time_s, r.events,
                  [float(x) for x in r.transfer_finish_s[::97]]]))
"""


def _run_with_huge_pages(value):
    env = {k: v for k, v in os.environ.items() if k != "WAFERCOLL_HUGE_PAGES"}
    if value is not None:
        env["WAFERCOLL_HUGE_PAGES"] = value
    proc = subprocess.run(
        [sys.executable, "-c", _HUGE_PAGES_RUN],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc, (json.loads(proc.stdout) if proc.returncode == 0 else None)


def test_huge_pages_are_offered_only_when_asked_and_change_no_result():
    # the ring on 256 ranks has 130,560 transfers: the simulator's
    # per-transfer arena blocks are 2 MiB or more, asked for with huge
    off, default = _run_with_huge_pages(None)
    assert off.returncode == 0, off.stderr
    _, zero = _run_with_huge_pages("0")
    on, offered = _run_with_huge_pages("1")
    assert on.returncode == 0, on.stderr
    assert default[0] is False and zero[0] is False and offered[0] is True
    assert default[1:] == zero[1:] == offered[1:]  # bit-identical results


def test_a_bad_huge_pages_setting_is_refused_on_import():
    proc, _ = _run_with_huge_pages("yes")
    assert proc.returncode != 0
    assert "ValueError: WAFERCOLL_HUGE_PAGES must be '1'" in proc.stderr
    assert "got 'yes'" in proc.stderr
