"""``simulate(..., engine="routers")``: finite input buffers, turns among inputs.

Expected values come from closed forms of the model (wafercoll._routers's
docstring) and from the default engine where the two must agree (no
contention): never from this engine's own output.
"""

import numpy as np
import pytest

import wafercoll as wc

MB = 1 << 20


def _flows(n_ranks, flows, deps=None):
    """A unicast schedule: flows = [(src, dst, bytes)], deps = [[t, ...], ...]."""
    T = len(flows)
    deps = deps or [[] for _ in range(T)]
    off = np.concatenate([[0], np.cumsum([len(d) for d in deps])]).astype(int)
    return wc.Schedule.from_arrays(
        n_ranks,
        [b for (_, _, b) in flows],
        "unknown",
        src=[a for (a, _, _) in flows],
        dst=[d for (_, d, _) in flows],
        block_lo=list(range(T)),
        block_hi=list(range(1, T + 1)),
        deps=[x for d in deps for x in d],
        dep_offsets=off.tolist(),
    )


def _chain(n_ranks, pairs, nbytes):
    """Transfers that run one after another: never two on the network at once."""
    flows = [(a, b, nbytes) for a, b in pairs]
    return _flows(n_ranks, flows, [[]] + [[t] for t in range(len(flows) - 1)])


NETS = [
    wc.NetworkModel(1e9, hop_latency_s=1e-7, alpha_s=2e-7, packet_bytes=4096),
    wc.NetworkModel(1e9, hop_latency_s=1e-7, packet_bytes=4096, flit_bytes=256),
    wc.NetworkModel(
        1e9, packet_bytes=4096, pad_packets=True, switching="store_and_forward"
    ),
    wc.NetworkModel(2e9, hop_latency_s=3e-8),  # one packet per transfer
    wc.mcm.ARTIFACT,
]


@pytest.mark.parametrize("net", NETS, ids=range(len(NETS)))
@pytest.mark.parametrize(
    "top",
    [wc.topology.mesh(3, 5), wc.topology.ring(7), wc.topology.torus(3, 4)],
    ids=["mesh3x5", "ring7", "torus3x4"],
)
def test_without_contention_both_engines_agree(top, net):
    rng = np.random.default_rng(7)
    p = top.num_endpoints
    pairs = [tuple(rng.choice(p, 2, replace=False)) for _ in range(12)]
    s = _chain(p, pairs, 100_000)
    a = wc.simulate(s, top, net, transfers=True)
    # Buffers with room for every packet in flight: no back-pressure.
    b = wc.simulate(s, top, net, transfers=True, engine="routers", buffer_packets=64)
    np.testing.assert_allclose(b.transfer_finish_s, a.transfer_finish_s, rtol=1e-12)
    np.testing.assert_array_equal(b.link_bytes, a.link_bytes)


def test_heterogeneous_links_agree_without_contention():
    # The artifact's machine: 1-cycle chiplet channels, 21-cycle router links.
    top = wc.mcm.artifact_dbtree_topology(16)
    net = wc.mcm.ARTIFACT.replace(bandwidth_Bps=None)
    s = _chain(16, [(0, 9), (9, 15), (15, 4), (4, 5), (3, 12)], 40 * 8192)
    a = wc.simulate(s, top, net, transfers=True)
    b = wc.simulate(s, top, net, transfers=True, engine="routers")
    np.testing.assert_allclose(b.transfer_finish_s, a.transfer_finish_s, rtol=1e-12)


def _merge_topology():
    """Nodes 0 (fast local port) and 1 (slow) both feed node 2, which feeds 3."""
    links = [(0, 2), (1, 2), (2, 3)]
    return wc.topology.custom(4, links, bandwidth_Bps=[20e9, 1e9, 1e9])


def test_a_link_takes_its_input_ports_in_turn():
    n, P = 50, 1000
    tau = P / 1e9
    net = wc.NetworkModel(None, packet_bytes=P, switching="store_and_forward")
    s = _flows(4, [(0, 3, n * P), (1, 3, n * P)])
    top = _merge_topology()
    fcfs = wc.simulate(s, top, net, transfers=True)
    buf = 4
    rr = wc.simulate(s, top, net, transfers=True, engine="routers", buffer_packets=buf)
    big = wc.simulate(
        s, top, net, transfers=True, engine="routers", buffer_packets=4 * n
    )
    # First come, first served: the fast local flow's packets reach node 2
    # 20 times faster than the neighbour's, so all but the two of the
    # neighbour's that arrive meanwhile queue behind them: it finishes after
    # n + 2 packet times.
    assert fcfs.transfer_finish_s[0] == pytest.approx(
        tau / 20 + (n + 2) * tau, rel=1e-9
    )
    # With buffers that hold every packet, a link admits packets as they come:
    # first come, first served again.
    np.testing.assert_allclose(
        big.transfer_finish_s, fcfs.transfer_finish_s, rtol=1e-12
    )
    # With 4 credits the local flow fills the buffer, then link 2->3 takes a
    # packet from each input port in turn as credits return (one per packet
    # time): the neighbour gets every other packet through, so the local
    # flow's last packet goes out among the last buf + 1.
    end = tau / 20 + 2 * n * tau  # link 2->3 busy from its first packet to its 2n-th
    for r in (fcfs, rr, big):
        assert r.transfer_finish_s.max() == pytest.approx(end, rel=1e-9)
    assert rr.transfer_finish_s[0] >= end - (buf + 1) * tau * (1 + 1e-9)


def _fork_topology():
    """0 -> 1 fast; from 1 a slow link to 2 and a fast one to 3."""
    links = [(0, 1), (1, 2), (1, 3)]
    return wc.topology.custom(4, links, bandwidth_Bps=[10e9, 1e9, 10e9])


@pytest.mark.parametrize("buf", [1, 2, 3])
def test_a_full_buffer_holds_up_the_flows_behind_it(buf):
    # Flow 0 goes to the slow link, flow 1 to the fast one; both share link
    # 0->1, whose downstream buffer holds `buf` packets. Flow 0's packets keep
    # their credits on 0->1 until the slow link takes them, so flow 1 gets at
    # most one packet through 0->1 per packet of flow 0 that leaves: it ends
    # no earlier than n - buf slow packet times.
    n, P = 40, 1000
    slow = P / 1e9
    net = wc.NetworkModel(None, packet_bytes=P, switching="store_and_forward")
    s = _flows(4, [(0, 2, n * P), (0, 3, n * P)])
    top = _fork_topology()
    r = wc.simulate(s, top, net, transfers=True, engine="routers", buffer_packets=buf)
    assert r.transfer_finish_s[1] >= (n - buf) * slow
    big = wc.simulate(
        s, top, net, transfers=True, engine="routers", buffer_packets=4 * n
    )
    # With room for every packet, flow 1 only shares the fast link 0->1.
    assert big.transfer_finish_s[1] <= 2 * n * P / 10e9 + 2 * slow
    # Flow 0 is paced by its slow link in both cases.
    for res in (r, big):
        assert res.transfer_finish_s[0] >= n * slow


def test_routes_that_wait_in_a_cycle_deadlock_with_a_clear_error():
    # Every rank sends two hops clockwise on a unidirectional ring: with one
    # packet per buffer each link's packet waits for the next link's credit.
    p, n, P = 4, 8, 1000
    links = [(i, (i + 1) % p) for i in range(p)]
    top = wc.topology.custom(p, links)
    net = wc.NetworkModel(1e9, packet_bytes=P)
    s = _flows(p, [(i, (i + 2) % p, n * P) for i in range(p)])
    with pytest.raises(RuntimeError, match="deadlocked.*buffer_packets"):
        wc.simulate(s, top, net, engine="routers", buffer_packets=1)
    r = wc.simulate(s, top, net, engine="routers", buffer_packets=2 * n)
    assert r.time_s >= 2 * n * P / 1e9


@pytest.mark.parametrize(
    "name, p",
    [
        ("generic_ring_allreduce", 5),
        ("generic_ring_allreduce", 12),
        ("generic_recursive_doubling_allreduce", 8),
        ("generic_rabenseifner_allreduce", 6),
        ("generic_chain_broadcast", 7),
    ],
)
def test_collectives_move_the_same_bytes_and_take_no_less_than_alone(name, p):
    top = wc.topology.mesh(3, (p + 2) // 3)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-7, alpha_s=1e-7, packet_bytes=2048)
    s = wc.build(name, p, MB)
    a = wc.simulate(s, top, net, transfers=True)
    for buf in (1, 4, 64):
        b = wc.simulate(
            s, top, net, transfers=True, engine="routers", buffer_packets=buf
        )
        np.testing.assert_array_equal(b.link_bytes, a.link_bytes)
        # Each transfer takes at least its own uncontended time after it is ready.
        alone = _alone_times(s, top, net)
        assert np.all(b.transfer_finish_s - b.transfer_ready_s >= alone * (1 - 1e-9))


def _alone_times(s, top, net):
    """Each transfer's time on an empty network, from the default engine."""
    out = []
    for t in range(s.num_transfers):
        one = _flows(
            s.num_ranks, [(int(s.src[t]), int(s.dst[t]), int(s.transfer_bytes()[t]))]
        )
        out.append(wc.simulate(one, top, net).time_s)
    return np.asarray(out)


def test_bad_settings_are_refused():
    top = wc.topology.mesh(2, 2)
    net = wc.NetworkModel(1e9, packet_bytes=1000)
    s = _flows(4, [(0, 3, 5000)])
    with pytest.raises(ValueError, match="buffer_packets must be in"):
        wc.simulate(s, top, net, engine="routers", buffer_packets=0)
    with pytest.raises(TypeError, match="buffer_packets must be an int"):
        wc.simulate(s, top, net, engine="routers", buffer_packets=2.5)
    with pytest.raises(ValueError, match='engine="routers" only'):
        wc.simulate(s, top, net, buffer_packets=4)
    with pytest.raises(ValueError, match="dependencies"):
        wc.simulate(s, top, net.replace(dependencies="dataflow"), engine="routers")
    with pytest.raises(ValueError, match="no timeline or trace"):
        wc.simulate(s, top, net, engine="routers", timeline=True)
    with pytest.raises(ValueError, match="engine must be"):
        wc.simulate(s, top, net, engine="booksim")
    multi = wc.build("wafer_flood_broadcast", 4, 4096)  # multicast transfers
    with pytest.raises(ValueError, match="unicast"):
        wc.simulate(multi, top, net, engine="routers")
    with pytest.raises(wc.SimulationTooLarge):
        wc.simulate(s, top, net, engine="routers", max_events=2)
