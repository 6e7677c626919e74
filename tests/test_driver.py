"""wc.Driver: network interfaces, issue steps and aggregation in front of
the routers engine, checked against closed forms of small cases."""

from __future__ import annotations

import random

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import _core

US = 1e-6
P = 100  # bytes per packet
NET = wc.NetworkModel(1e9, packet_bytes=P)  # 0.1 us per packet and link


def _centre_to_neighbours(packets: int = 4):
    """Node 4 of a 3x3 mesh sends ``packets`` packets to each neighbour."""
    prog = wc.kit.Program(9, [packets * P] * 4, "allgather", owners=[4] * 4)
    prog.step([4, 4, 4, 4], [1, 3, 5, 7], [0, 1, 2, 3])
    return prog.schedule(), wc.topology.mesh(3, 3)


def _finish(s, top, driver, **kw):
    r = wc.simulate(s, top, NET, engine="routers", driver=driver, transfers=True, **kw)
    return [round(float(t) / US, 6) for t in r.transfer_finish_s]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_interfaces_take_transfers_in_turn(k):
    # Each transfer holds its interface for 4 handovers of 1 us; with k
    # interfaces transfer i starts at (i // k) * 4 us and takes 0.4 us on a
    # link of its own.
    s, top = _centre_to_neighbours()
    got = _finish(s, top, wc.Driver(k, handover_s=1 * US))
    assert got == [(i // k) * 4 + 0.4 for i in range(4)]


def test_steps_order_a_nodes_transfers():
    s, top = _centre_to_neighbours()
    d = wc.Driver(4, handover_s=1 * US, step=[3, 2, 1, 0])
    # not strict: a step goes once the earlier one has its interface
    assert _finish(s, top, d) == [0.4] * 4
    # strict: once the earlier one has freed it (4 handovers later)
    d = wc.Driver(4, handover_s=1 * US, step=[3, 2, 1, 0], strict=[1] * 4)
    assert _finish(s, top, d) == [12.4, 8.4, 4.4, 0.4]
    # one interface: in step order
    assert _finish(s, top, wc.Driver(1, handover_s=1 * US, step=[1, 0, 3, 2])) == [
        4.4,
        0.4,
        12.4,
        8.4,
    ]


@pytest.mark.parametrize("queue", [0, 1, 2, 3])
def test_an_interface_is_free_with_queue_packets_before_its_channel(queue):
    # A channel of 1 us per packet: transfer 0's packets cross at 0, 1, 2,
    # 3 us; its interface is free once at most `queue` are still to cross,
    # at r = (3 - queue) us. Then transfers 1 and 3 (strictly after it) go:
    # 1 on the interface just freed, behind transfer 0's packets, 3 on the
    # other one, whose packets cross at r .. r + 3 us. A last packet takes
    # 0.1 us on its link.
    s, top = _centre_to_neighbours()
    d = wc.Driver(
        2,
        queue_packets=queue,
        channel_Bps=P / US,
        step=[0, 1, 2, 1],
        strict=[0, 1, 0, 1],
    )
    got = _finish(s, top, d)
    assert got[0] == 3.1
    assert got[1] == 7.1
    assert got[3] == round(3 - queue + 3.1, 6)


def test_an_interfaces_packets_leave_in_order():
    # One interface whose router buffer holds 2 packets, links that buffer 2:
    # transfer 1's packets wait behind transfer 0's (to another link).
    s, top = _centre_to_neighbours()
    d = wc.Driver(1, buffer_packets=2)
    got = _finish(s, top, d, buffer_packets=2)
    assert got[0] == 0.4
    assert got[1] > got[0] and got[2] > got[1] and got[3] > got[2]
    # with an interface each they do not wait
    assert (
        _finish(s, top, wc.Driver(4, buffer_packets=2), buffer_packets=2) == [0.4] * 4
    )


def test_reductions_are_aggregated_one_at_a_time():
    prog = wc.kit.Program(3, [4 * P], "reduce", root=1)
    prog.step([0, 2], [1, 1], [0, 0], op="reduce")
    s, top = prog.schedule(), wc.topology.line(3)
    g = 1e-9  # 0.4 us per 400 B
    assert _finish(s, top, wc.Driver(1, aggregate_s_per_byte=g)) == [0.8, 1.2]
    assert _finish(s, top, wc.Driver(1)) == [0.4, 0.4]
    copy = wc.kit.Program(3, [4 * P, 4 * P], "allgather", owners=[0, 2])
    copy.step([0, 2], [1, 1], [0, 1])
    assert _finish(copy.schedule(), top, wc.Driver(1, aggregate_s_per_byte=g)) == [
        0.4,
        0.4,
    ]


@pytest.mark.parametrize("p", [3, 5, 8])
def test_one_plain_interface_changes_nothing_on_a_ring(p):
    # Every rank sends on one link, one transfer per step: an interface
    # without handover, channel or buffer limit adds no time.
    s = wc.build("generic_ring_allreduce", p, p * 1000)
    top = wc.ring(p)
    base = wc.simulate(s, top, NET, engine="routers")
    with_driver = wc.simulate(s, top, NET, engine="routers", driver=wc.Driver(1))
    assert with_driver.time_s == pytest.approx(base.time_s, rel=1e-12)


def test_steps_against_dependencies_are_refused():
    prog = wc.kit.Program(3, [P, P], "allgather", owners=[1, 1])
    a = prog.step([1], [0], [0])
    prog.step([1], [2], [1], deps=[list(a)])
    s, top = prog.schedule(), wc.topology.line(3)
    with pytest.raises(ValueError, match="issue steps"):
        wc.simulate(s, top, NET, engine="routers", driver=wc.Driver(1, step=[1, 0]))


def test_bad_drivers_are_refused():
    s, top = _centre_to_neighbours()
    for kw, err in (
        ({"interfaces": 0}, ValueError),
        ({"interfaces": 1025}, ValueError),
        ({"interfaces": 1.5}, TypeError),
        ({"interfaces": 1, "queue_packets": -1}, ValueError),
        ({"interfaces": 1, "handover_s": -1.0}, ValueError),
        ({"interfaces": 1, "channel_Bps": 0.0}, ValueError),
        ({"interfaces": 1, "buffer_packets": 0}, ValueError),
        ({"interfaces": 1, "order": "random"}, ValueError),
        ({"interfaces": 1, "aggregate_s_per_byte": float("nan")}, ValueError),
        ({"interfaces": 1, "step": [[0, 1]]}, TypeError),
        ({"interfaces": 1, "step": [0.5, 1.0]}, TypeError),
    ):
        with pytest.raises(err):
            wc.Driver(**kw)
    with pytest.raises(ValueError, match="4 transfers"):
        wc.simulate(s, top, NET, engine="routers", driver=wc.Driver(1, step=[0, 1]))
    with pytest.raises(ValueError, match="routers"):
        wc.simulate(s, top, NET, driver=wc.Driver(1))
    with pytest.raises(TypeError, match="Driver"):
        wc.simulate(s, top, NET, engine="routers", driver=4)


@pytest.mark.parametrize("keys", [1, 2, 4, 6, 9])
def test_python_set_order_is_cpythons(keys):
    # The model behind order="python_set" against this interpreter's own set
    # (CPython; its set iterates in slot order), over random histories of
    # taking and freeing.
    rng = random.Random(keys)
    for _ in range(200):
        real = set(range(keys))
        ops = []
        orders = []
        for _ in range(rng.randint(1, 60)):
            if real and rng.random() < 0.5:
                k = rng.choice(sorted(real))
                real.remove(k)
                ops.append(-1 - k)
            else:
                free = [x for x in range(keys) if x not in real]
                if not free:
                    continue
                k = rng.choice(free)
                real.add(k)
                ops.append(k)
            orders.append(list(real))
        assert _core._python_set_orders(keys, np.asarray(ops, np.int64)) == orders
