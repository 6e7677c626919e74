"""Equal-cost multipath per flow (``NetworkModel(ecmp=True)``).

The expected link loads come from a re-implementation of the stated rule in
Python (shortest paths by a breadth-first search from each destination, the
candidate out-links in increasing link id, SplitMix64 of the flow and of the
node), independent of the C++ simulator's code.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from fabric_reference import splitmix64

import wafercoll as wc


def ecmp_route(topo: wc.Topology, src: int, dst: int, flow: int) -> list[int]:
    links = topo.links
    ls, ld = links["src"].tolist(), links["dst"].tolist()
    dist = {dst: 0}
    queue = deque([dst])
    while queue:
        v = queue.popleft()
        for k in range(len(ls)):
            if ld[k] == v and ls[k] not in dist:
                dist[ls[k]] = dist[v] + 1
                queue.append(ls[k])
    h = splitmix64(flow)
    route, u = [], src
    while u != dst:
        cand = [
            k
            for k in range(len(ls))
            if ls[k] == u and dist.get(ld[k], -9) + 1 == dist[u]
        ]
        k = cand[(h ^ splitmix64(u)) % len(cand)]
        route.append(k)
        u = ld[k]
    return route


def test_link_loads_follow_the_stated_rule_on_a_fat_tree() -> None:
    # k = 4 fat tree: hosts in different pods have 4 equal paths (2 aggregation
    # switches x 2 cores), hosts under different edge switches of a pod 2.
    topo = wc.topology.fat_tree(4)
    p = topo.num_endpoints
    pairs = [(a, (a * 5 + 3) % p) for a in range(p) if (a * 5 + 3) % p != a]
    s = wc.Schedule(p, [1000 + 17 * i for i in range(len(pairs))], "unknown")
    for b, (a, d) in enumerate(pairs):
        s.add_transfer(a, d, [(b, b + 1)])
    net = wc.NetworkModel(None, ecmp=True)
    r = wc.simulate(s, topo, net)
    want = np.zeros(topo.num_links, dtype=np.int64)
    for t, (a, d) in enumerate(pairs):
        for k in ecmp_route(topo, a, d, t << 32 | t):  # slot t: one destination each
            want[k] += int(s.block_bytes[t])
    assert np.array_equal(np.asarray(r.link_bytes), want)
    # Every flow on a shortest path: the bytes times hops add up.
    hops = sum(
        int(s.block_bytes[t]) * topo.hops(a, d) for t, (a, d) in enumerate(pairs)
    )
    assert int(want.sum()) == hops
    assert r.time_s >= wc.bounds.result_bound(r).time_s


def test_ecmp_spreads_a_ring_over_the_nvswitch_chips() -> None:
    # On DGX H100 a GPU's messages cross one chip (4 or 5 of its 18 links) on
    # the topology's routes; NCCL's ring has 24 channels, which ECMP spreads
    # over the four chips. Both stay above every bound.
    topo = wc.topology.dgx_h100()
    net = wc.machines.get("dgx_h100").network()
    s = wc.build("nccl_ring_allreduce", size_bytes=1 << 26, topology=topo)
    one = wc.simulate(s, topo, net)
    many = wc.simulate(s, topo, net.replace(ecmp=True))
    assert many.time_s < one.time_s / 2
    for r, n in ((one, net), (many, net.replace(ecmp=True))):
        assert r.time_s >= wc.bounds.result_bound(r).time_s * (1 - 1e-12)
        assert r.time_s >= wc.bounds.schedule_lower_bound(s, topo, n).time_s * (
            1 - 1e-12
        )


def test_ecmp_is_reproducible_and_off_by_default() -> None:
    topo = wc.topology.fat_tree(4)
    s = wc.build("generic_bruck_alltoall", ranks=16, size_bytes=16 * 512)
    net = wc.NetworkModel(1e9, packet_bytes=256)
    assert net.ecmp is False
    a = wc.simulate(s, topo, net.replace(ecmp=True))
    b = wc.simulate(s, topo, net.replace(ecmp=True))
    assert a.time_s == b.time_s and np.array_equal(a.link_bytes, b.link_bytes)


def test_bad_ecmp_input_is_refused() -> None:
    with pytest.raises(TypeError, match="ecmp"):
        wc.NetworkModel(1e9, ecmp="yes")
    big = wc.topology.mesh(128, 128)  # 16384 x 16384 distances > 2**27
    s = wc.build("generic_ring_allreduce", ranks=2, size_bytes=8)
    with pytest.raises(ValueError, match="ecmp"):
        wc.simulate(s, big, wc.NetworkModel(1e9, ecmp=True))
