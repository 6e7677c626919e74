"""Packet spraying (``NetworkModel(spray=True)``).

Expected times come from closed forms of cut-through pipelines on a
two-level fat tree (leaf-spine); expected link loads from a re-implementation
of the stated rule in Python (shortest paths through routers by a
breadth-first search, smooth weighted round robin over the nearer links,
SplitMix64 rotation, strides), independent of the C++ simulator's code.
"""

from __future__ import annotations

from collections import deque
from math import isclose

import numpy as np
import pytest
from fabric_reference import splitmix64
from owned_blocks import assert_owned_blocks

import wafercoll as wc


def leaf_spine(hosts: int, spines: int, host_Bps: float, up_Bps: float) -> wc.Topology:
    """Two leaves of ``hosts`` hosts each, every leaf wired to every spine."""
    leaf = [2 * hosts, 2 * hosts + 1]
    spine = [2 * hosts + 2 + i for i in range(spines)]
    links, bw = [], []
    for h in range(2 * hosts):
        for a, b in ((h, leaf[h // hosts]), (leaf[h // hosts], h)):
            links.append((a, b))
            bw.append(host_Bps)
    for lf in leaf:
        for sp in spine:
            for a, b in ((lf, sp), (sp, lf)):
                links.append((a, b))
                bw.append(up_Bps)
    return wc.custom(2 * hosts, links, num_hidden_routers=2 + spines, bandwidth_Bps=bw)


def one_transfer(p: int, src: int, dst: int, size: int) -> wc.Schedule:
    s = wc.Schedule(p, [size], "unknown")
    s.add_transfer(src, dst, [(0, 1)])
    return s


@pytest.mark.parametrize("spines", [2, 3, 4])
@pytest.mark.parametrize("packets", [1, 5, 24, 31])
def test_one_flow_over_every_spine_closed_form(spines, packets) -> None:
    # Host links as fast as a leaf's uplinks together (s B): a sprayed flow of
    # n packets of M bytes puts every s-th packet on each spine, which serves
    # it in M / B while the host sends the next s, so nothing queues and the
    # last packet arrives at (n - 1) M / (s B) + M / B. On one path the
    # uplink serves them one after another: n M / B.
    B, M = 1e9, 4096
    topo = leaf_spine(2, spines, spines * B, B)
    s = one_transfer(4, 0, 2, packets * M)
    net = wc.NetworkModel(None, packet_bytes=M)
    sprayed = wc.simulate(s, topo, net.replace(spray=True)).time_s
    want = (packets - 1) * M / (spines * B) + M / B
    assert isclose(sprayed, want, rel_tol=1e-12)
    single = wc.simulate(s, topo, net).time_s
    assert isclose(single, packets * M / B, rel_tol=1e-12)
    # Every spine carries floor(n / s) or ceil(n / s) packets.
    r = wc.simulate(s, topo, net.replace(spray=True))
    up = np.asarray(r.link_bytes)[[8 + 2 * i for i in range(spines)]] // M
    assert sorted(up.tolist()) == sorted(
        [packets // spines + (i < packets % spines) for i in range(spines)]
    )


def test_leaf_to_leaf_traffic_fills_the_spines_closed_form() -> None:
    # h hosts on leaf 0 each send S to their partner on leaf 1 over s spines
    # with h B / (s B) = 2:1 oversubscription: the spines carry h S in all,
    # h S / s each, so the last byte arrives no earlier than h S / (s B), and
    # sprayed packets keep every uplink busy from the first packet on.
    B, M, h, sp, n = 1e9, 2048, 4, 2, 40
    topo = leaf_spine(h, sp, B, B)
    s = wc.Schedule(2 * h, [n * M] * h, "unknown")
    for i in range(h):
        s.add_transfer(i, h + i, [(i, i + 1)])
    net = wc.NetworkModel(None, packet_bytes=M, spray=True)
    r = wc.simulate(s, topo, net)
    floor = h * n * M / (sp * B)
    assert floor * (1 - 1e-12) <= r.time_s <= floor + 2 * M / B
    ups = np.asarray(r.link_bytes)[[4 * h + 2 * i for i in range(sp)]]
    assert ups.tolist() == [h * n * M // sp] * sp
    assert r.time_s >= wc.bounds.result_bound(r).time_s * (1 - 1e-12)


def spray_link_bytes(topo: wc.Topology, s: wc.Schedule, M: int) -> np.ndarray:
    """Link bytes by the stated rule, written independently of the core."""
    links = topo.links
    ls, ld = links["src"].tolist(), links["dst"].tolist()
    bw = links["bandwidth_Bps"].tolist()
    e, n = topo.num_endpoints, topo.num_nodes

    def relays(v: int, b: int) -> bool:
        return v == b or v >= e or n == e

    def dist_to(b: int) -> dict[int, int]:
        dist, queue = {b: 0}, deque([b])
        while queue:
            v = queue.popleft()
            if not relays(v, b):
                continue
            for k in range(len(ls)):
                if ld[k] == v and ls[k] not in dist:
                    dist[ls[k]] = dist[v] + 1
                    queue.append(ls[k])
        return dist

    def weights(opts: list[int]) -> list[int]:
        lo = min(bw[k] for k in opts)

        def ratio(k: int, m: int) -> float:
            return min(bw[k] / lo * m, 1024.0)

        for m in range(1, 9):
            w = [round(ratio(k, m)) for k in opts]
            if all(abs(ratio(k, m) - x) <= 1e-9 * ratio(k, m) for k, x in zip(opts, w)):
                return w
        return [max(1, round(ratio(k, 8))) for k in opts]

    def deal(opts: list[int]) -> list[int]:
        w = weights(opts) if len(opts) > 1 else [1]
        total, cur, seq = sum(w), [0] * len(w), []
        for _ in range(total):
            cur = [c + x for c, x in zip(cur, w)]
            best = max(range(len(w)), key=lambda i: (cur[i], -i))
            cur[best] -= total
            seq.append(opts[best])
        return seq

    out = np.zeros(topo.num_links, dtype=np.int64)
    sizes = s.transfer_bytes()
    for t in range(s.num_transfers):
        a, b = int(s.src[t]), int(s.dst[t])
        dist = dist_to(b)
        size = int(sizes[t])
        count = -(-size // M)
        h = splitmix64(t << 32 | t)  # one destination each: slot t
        for k in range(count):
            u, stride = a, 1
            while u != b:
                opts = [
                    j
                    for j in range(len(ls))
                    if ls[j] == u
                    and relays(ld[j], b)
                    and dist.get(ld[j], -9) + 1 == dist[u]
                ]
                seq = deal(opts)
                rot = (h ^ splitmix64(u)) % len(seq)
                j = seq[(k // stride + rot) % len(seq)]
                stride *= len(seq)
                out[j] += min(M, size - k * M)
                u = ld[j]
    return out


def odd_paths() -> wc.Topology:
    # Hosts 0 and 1 joined through three routers of bandwidths in no small
    # integer ratio, one far beyond the weight cap.
    links, bw = [], []
    for r, rate in ((2, 1e9), (3, 1.3e9), (4, 3.3e12)):
        for a, b in ((0, r), (r, 1), (1, r), (r, 0)):
            links.append((a, b))
            bw.append(rate)
    return wc.custom(2, links, num_hidden_routers=3, bandwidth_Bps=bw)


@pytest.mark.parametrize("machine", ["fat_tree", "dgx_h100", "rail", "odd"])
def test_link_loads_follow_the_stated_rule(machine) -> None:
    topo = {
        "fat_tree": lambda: wc.topology.fat_tree(4),
        "dgx_h100": lambda: wc.topology.dgx_h100(),
        "rail": lambda: wc.topology.rail_optimized(2, 4, nvswitches=2),
        "odd": odd_paths,
    }[machine]()
    p = topo.num_endpoints
    pairs = [(a, (a * 5 + 3) % p) for a in range(p) if (a * 5 + 3) % p != a]
    M = 1000
    s = wc.Schedule(p, [M * (3 + 7 * i) + 17 * i for i in range(len(pairs))], "unknown")
    for blk, (a, d) in enumerate(pairs):
        s.add_transfer(a, d, [(blk, blk + 1)])
    r = wc.simulate(s, topo, wc.NetworkModel(None, packet_bytes=M, spray=True))
    assert np.array_equal(np.asarray(r.link_bytes), spray_link_bytes(topo, s, M))
    assert r.time_s >= wc.bounds.result_bound(r).time_s * (1 - 1e-12)


def test_long_messages_meet_the_long_run_shares() -> None:
    # A message of many packets puts on each link its share of
    # Topology.spray_shares, within a packet per choice it made.
    topo = wc.topology.rail_optimized(2, 4, nvswitches=2, spines=2)
    M, n = 512, 720
    for a, b in [(0, 1), (0, 5), (2, 7)]:
        s = one_transfer(topo.num_endpoints, a, b, n * M)
        r = wc.simulate(s, topo, wc.NetworkModel(None, packet_bytes=M, spray=True))
        ids, frac = topo.spray_shares(a, b)
        got = np.asarray(r.link_bytes)
        assert set(np.flatnonzero(got).tolist()) == set(ids.tolist())
        assert np.all(np.abs(got[ids] - frac * n * M) <= 4 * M)


def test_spray_shares_are_a_flow() -> None:
    topo = wc.topology.fat_tree(4)
    ids, frac = topo.spray_shares(0, 15)
    links = topo.links
    net = np.zeros(topo.num_nodes)
    np.add.at(net, links["src"][ids], -frac)
    np.add.at(net, links["dst"][ids], frac)
    want = np.zeros(topo.num_nodes)
    want[0], want[15] = -1.0, 1.0
    assert np.allclose(net, want)
    # Four equal paths between pods: each core link carries a quarter.
    assert sorted(np.round(frac, 12).tolist()).count(0.25) >= 4
    assert topo.spray_shares(3, 3)[0].size == 0


def test_spray_without_several_paths_changes_nothing() -> None:
    # An odd ring has one shortest path per pair: spraying takes it.
    topo = wc.ring(7)
    s = wc.build("generic_ring_allreduce", ranks=7, size_bytes=7 * 3000)
    net = wc.NetworkModel(1e9, packet_bytes=512, hop_latency_s=1e-7)
    a = wc.simulate(s, topo, net)
    b = wc.simulate(s, topo, net.replace(spray=True))
    assert a.time_s == b.time_s
    assert np.array_equal(a.link_bytes, b.link_bytes)


def test_nccl_ring_on_dgx_h100_reaches_the_nvlink_bandwidth() -> None:
    # Through one chip a GPU sends at 100 or 125 GB/s; sprayed over its 18
    # NVLinks it sends at 450 GB/s, and the ring allreduce's busbw reaches
    # that up to the pipeline's fill (within 2 %).
    topo = wc.topology.dgx_h100()
    net = wc.machines.get("dgx_h100").network()
    s = wc.build("nccl_ring_allreduce", size_bytes=1 << 28, topology=topo)
    one = wc.simulate(s, topo, net)
    many = wc.simulate(s, topo, net.replace(spray=True, packet_bytes=1 << 16))
    assert isclose(one.busbw_Bps, 100e9, rel_tol=1e-3)
    assert 0.98 * 450e9 <= many.busbw_Bps <= 450e9 * (1 + 1e-9)


def test_synthesis_on_a_sprayed_rail_network_is_near_the_bound() -> None:
    # Rooted trees whose LP takes the sprayed loads: every block crosses a
    # rail once and spreads over NVLink (small version of the 16-node case
    # in bench/bench_synthesis.py).
    topo = wc.topology.dgx_h100_rail(4)
    net = wc.machines.get("dgx_h100_x16_rail").network()
    net = net.replace(spray=True, packet_bytes=1 << 16)
    size = 256 << 20
    s = wc.synthesize(topo, "allgather", size, network=net)
    assert wc.verify(s).ok
    t = wc.simulate(s, topo, net).time_s
    bound = wc.bounds.lower_bound(topo, net, "allgather", size).time_s
    assert bound <= t <= 1.10 * bound
    # The same builder at a size small enough to run on numbers.
    small = wc.synthesize(topo, "allgather", 4099, network=net)
    x = np.random.default_rng(3).integers(-1000, 1000, size=(32, 4099))
    assert_owned_blocks(small, x, wc.execute(small, x), 32)


def test_bad_spray_input_is_refused() -> None:
    with pytest.raises(TypeError, match="spray"):
        wc.NetworkModel(1e9, spray=1)
    with pytest.raises(ValueError, match="exclude"):
        wc.NetworkModel(1e9, spray=True, ecmp=True)
    with pytest.raises(ValueError, match="dependencies"):
        wc.NetworkModel(1e9, spray=True, dependencies="dataflow")
    with pytest.raises(ValueError, match="switch_overhead_s"):
        wc.NetworkModel(1e9, spray=True, ports=1, switch_overhead_s=1e-9)
    big = wc.topology.mesh(128, 128)  # 16384 x 16384 distances > 2**27
    s = wc.build("generic_ring_allreduce", ranks=2, size_bytes=8)
    with pytest.raises(ValueError, match="spray"):
        wc.simulate(s, big, wc.NetworkModel(1e9, spray=True))
    with pytest.raises(ValueError, match="max_events"):
        wc.simulate(
            one_transfer(4, 0, 2, 1 << 20),
            wc.topology.fat_tree(4),
            wc.NetworkModel(1e9, packet_bytes=1, spray=True),
            max_events=1000,
        )


@pytest.mark.parametrize("ports", [None, 1])
def test_processing_at_the_destination_waits_for_the_last_sprayed_packet(ports) -> None:
    # With a copy cost c per byte below the arrival rate, every packet is
    # stored c M after it arrives; the last to arrive (not the last dealt)
    # ends the transfer. Without ports: (n - 1) M / (s B) + M / B + c M.
    B, M, sp, n = 1e9, 4096, 3, 10
    topo = leaf_spine(2, sp, sp * B, B)
    s = one_transfer(4, 0, 2, n * M)
    c = 0.5 / (sp * B)
    net = wc.NetworkModel(None, packet_bytes=M, spray=True, copy_s_per_byte=c)
    r = wc.simulate(s, topo, net.replace(ports=ports), trace=True)
    if ports is None:
        want = (n - 1) * M / (sp * B) + M / B + c * M
        assert isclose(r.time_s, want, rel_tol=1e-12)
    tr = r.trace()
    last = max(
        f
        for f, ln in zip(tr["finish_s"], tr["link"], strict=True)
        if ln >= 0 and topo.links["dst"][ln] == 2
    )
    assert r.time_s >= last + c * M * (1 - 1e-12)
