"""Every bound holds for every schedule the simulator runs (a property test).

Hypothesis draws a machine (a custom graph with heterogeneous link latencies
and bandwidths and hidden routers, or a small ring, mesh or torus), a network
model over every option of :class:`wafercoll.NetworkModel` (and its presets),
a schedule (a registered builder of the machine's family at a random size,
root and placement; a random schedule that states no collective; a random
schedule that claims a collective it does not compute) and checks

    simulated time >= lower_bound, collective_bound, result_bound (for a
    verified schedule) and schedule_lower_bound (for any schedule)

up to a relative 1e-9 (the simulator and the bounds sum the same terms in
other orders). Under ``CI=true`` the ``ci`` profile runs 2,400 examples (about
40 s on one core); locally the ``dev`` profile runs 150. Cases it once found
are kept below as explicit examples.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import wafercoll as wc  # noqa: E402
from wafercoll import bounds  # noqa: E402

#: Examples per run: CI (CI=true) and local.
CI_EXAMPLES = 2400
DEV_EXAMPLES = 150
EXAMPLES = CI_EXAMPLES if os.environ.get("CI") == "true" else DEV_EXAMPLES
REL = 1e-9

_ANY = sorted(
    a.name
    for a in wc.algorithms()
    if "any" in a.families and a.name != "synth_treepack_allreduce"
)
_GRID = {
    fam: sorted(a.name for a in wc.algorithms() if fam in a.families)
    for fam in ("ring", "mesh", "torus")
}


@st.composite
def custom_topologies(draw: st.DrawFn) -> wc.Topology:
    """A strongly connected directed graph: a bidirectional ring through
    every node (endpoints and hidden routers) plus random extra links."""
    e = draw(st.integers(2, 6))
    h = draw(st.integers(0, 2))
    n = e + h
    order = draw(st.permutations(range(n)))
    pairs = set()
    for i in range(n):
        a, b = order[i], order[(i + 1) % n]
        if a != b:
            pairs.add((a, b))
            pairs.add((b, a))
    extra = draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6)
    )
    pairs |= {(a, b) for a, b in extra if a != b}
    links = sorted(pairs)
    lat = st.sampled_from([0.0, 0.0, 1e-9, 3e-8, 1e-7, 1e-6, 7e-6])
    bw = st.sampled_from([1e6, 1e8, 1e9, 3e9, 2.5e10])
    return wc.custom(
        e,
        links,
        num_hidden_routers=h,
        latency_s=[draw(lat) for _ in links],
        bandwidth_Bps=[draw(bw) for _ in links],
    )


@st.composite
def grid_topologies(draw: st.DrawFn) -> wc.Topology:
    fam = draw(st.sampled_from(["ring", "mesh", "torus"]))
    if fam == "ring":
        return wc.ring(draw(st.integers(2, 8)))
    r, c = draw(st.integers(2, 3)), draw(st.integers(2, 4))
    return wc.topology.mesh(r, c) if fam == "mesh" else wc.topology.torus(r, c)


@st.composite
def networks(draw: st.DrawFn) -> wc.NetworkModel:
    """Every option of the model, or one of its presets."""
    preset = draw(st.sampled_from(["custom"] * 6 + ["loggp", "hockney", "unit"]))
    if preset == "loggp":
        return wc.NetworkModel.loggp(
            draw(st.sampled_from([0.0, 1e-6, 3e-6])),
            draw(st.sampled_from([0.0, 5e-7])),
            0.0,
            draw(st.sampled_from([1e-9, 6e-9])),
        )
    if preset == "hockney":
        return wc.NetworkModel.hockney(draw(st.sampled_from([0.0, 2e-6])), 1e9)
    if preset == "unit":
        return wc.NetworkModel.unit_timestep(draw(st.sampled_from([1, 4, 64])))
    small = st.sampled_from([0.0, 0.0, 1e-9, 5e-8, 1e-6])
    packet = draw(st.sampled_from([None, None, 1, 3, 64, 4096]))
    flit = None
    if packet is not None and draw(st.booleans()):
        flit = draw(st.integers(1, packet))
    ports = draw(st.sampled_from([None, None, 1, 2]))
    return wc.NetworkModel(
        draw(st.sampled_from([None, None, 1e9, 4e9])),
        hop_latency_s=draw(small),
        alpha_s=draw(small),
        packet_bytes=packet,
        flit_bytes=flit,
        switching=draw(st.sampled_from(["cut_through", "store_and_forward"])),
        gamma_s_per_byte=draw(st.sampled_from([0.0, 0.0, 1e-10, 3e-9])),
        copy_s_per_byte=draw(st.sampled_from([0.0, 0.0, 2e-10])),
        ports=ports,
        port_bandwidth_Bps=(
            draw(st.sampled_from([None, 5e8, 2e10])) if ports else None
        ),
        port_latency_s=draw(small) if ports else 0.0,
        switch_overhead_s=draw(small) if ports else 0.0,
        pad_packets=packet is not None and draw(st.booleans()),
        dependencies=draw(st.sampled_from(["complete", "dataflow"])),
    )


@st.composite
def random_schedules(draw: st.DrawFn, p: int, kind: str) -> wc.Schedule:
    """Random transfers (unicast and multicast, copies and reductions, zero
    and non-zero blocks, backward dependencies), declared ``kind``."""
    # The block-moving collectives have their layout: a block per pair
    # (alltoall, alltoallv) or per rank (gather, scatter).
    nb = {"alltoall": p * p, "alltoallv": p * p, "gather": p, "scatter": p}.get(
        kind, draw(st.integers(1, 4))
    )
    sizes = draw(
        st.lists(st.sampled_from([0, 1, 7, 256, 5000]), min_size=nb, max_size=nb)
    )
    s = wc.Schedule(p, sizes, kind)
    for t in range(draw(st.integers(1, 8))):
        src = draw(st.integers(0, p - 1))
        others = [r for r in range(p) if r != src]
        dsts = draw(
            st.lists(st.sampled_from(others), min_size=1, max_size=2, unique=True)
        )
        lo = draw(st.integers(0, nb - 1))
        hi = draw(st.integers(lo + 1, nb))
        deps = (
            draw(st.lists(st.integers(0, t - 1), max_size=2, unique=True)) if t else []
        )
        op = draw(st.sampled_from(["copy", "reduce"]))
        s.add_transfer(src, dsts, [[lo, hi]], op=op, deps=deps)
    return s


@st.composite
def cases(draw: st.DrawFn) -> tuple[wc.Schedule, wc.Topology, wc.NetworkModel, list]:
    topo = draw(st.one_of(custom_topologies(), grid_topologies()))
    net = draw(networks())
    e = topo.num_endpoints
    what = draw(st.sampled_from(["builder"] * 4 + ["unknown", "claims"]))
    size = draw(st.sampled_from([1, 2, 3, 5, 64, 1000, 1 << 16]))
    if what == "builder":
        names = _ANY + (_GRID.get(topo.kind, []) if topo.kind != "custom" else [])
        name = draw(st.sampled_from(names))
        if name in _ANY:
            p = draw(st.integers(2, e))
            kw = {"ranks": p}
        else:
            p, kw = e, {"topology": topo}
        try:
            s = wc.build(name, size_bytes=size, **kw)
        except (ValueError, TypeError):
            hypothesis.assume(False)
    else:
        p = draw(st.integers(2, e))
        kind = "unknown" if what == "unknown" else draw(st.sampled_from(wc.COLLECTIVES))
        if kind in ("reduce_scatter", "allgather"):
            kind = "allreduce"  # owners need one block per rank
        s = draw(random_schedules(p, kind))
    if p < e or draw(st.booleans()):
        place = draw(st.permutations(range(e)))[:p]
    else:
        place = list(range(p))
    return s, topo, net, place


def _plain(s: wc.Schedule) -> bool:
    """Whether ``lower_bound`` speaks of this schedule's collective: every
    rank participates and, for a reduce-scatter or allgather, block ``r`` is
    rank ``r``'s, the blocks as even as bytes allow."""
    if not s.participants.all():
        return False
    if s.owners is None:
        return True
    p, S = s.num_ranks, s.size_bytes
    even = [S // p + (r < S % p) for r in range(p)]
    return list(s.owners) == list(range(p)) and list(s.block_bytes) == even


def _check(s: wc.Schedule, topo: wc.Topology, net: wc.NetworkModel, place) -> None:
    r = wc.simulate(s, topo, net, placement=place)
    t = r.time_s * (1 + REL)
    own = bounds.schedule_lower_bound(s, topo, net, placement=np.asarray(place))
    assert t >= own.time_s, ("schedule_lower_bound", r.time_s, own.components)
    verified = s.collective == "unknown"
    if not verified:
        try:
            wc.verify(s)
            verified = True
        except wc.ScheduleError:
            pass
    if not verified:
        return  # only the schedule's own bound speaks for it
    b = bounds.result_bound(r)
    assert t >= b.time_s, ("result_bound", r.time_s, b.components)
    c = bounds.collective_bound(s, topo, net, placement=np.asarray(place))
    assert t >= c.time_s, ("collective_bound", r.time_s, c.components)
    if s.collective != "unknown" and _plain(s) and s.size_bytes >= 1:
        lb = bounds.lower_bound(
            topo,
            net,
            s.collective,
            s.size_bytes,
            ranks=s.num_ranks,
            root=s.root or 0,
            placement=place,
        )
        assert t >= lb.time_s, ("lower_bound", r.time_s, lb.components)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(cases())
def test_simulated_time_is_never_below_a_bound(case) -> None:
    _check(*case)


def _two_ranks(lat: list[float], bw: float = 1e9) -> wc.Topology:
    return wc.custom(2, [(0, 1), (1, 0)], latency_s=lat, bandwidth_Bps=bw)


def _claims_reduce() -> wc.Schedule:
    """A reduce (of a 0 B vector) into rank 0 that forgets rank 2."""
    s = wc.Schedule(3, [0], "reduce", root=0)
    s.add_transfer(1, 0, [0], op="reduce")
    return s


def _one_unknown_message() -> wc.Schedule:
    s = wc.Schedule(3, [0], "unknown")
    s.add_transfer(0, 1, [0])
    return s


@pytest.mark.parametrize(
    ("schedule", "topology", "network", "placement"),
    [
        # Endpoints with different incoming latencies (ejection_total).
        pytest.param(
            wc.build("generic_binomial_broadcast", ranks=2, size_bytes=1),
            _two_ranks([0.0, 1e-6]),
            wc.NetworkModel(1e9),
            [0, 1],
            id="broadcast-1B-latencies-0-and-1us",
        ),
        # The same through ports (ejection_total_ports).
        pytest.param(
            wc.build("generic_binomial_reduce", ranks=2, size_bytes=3),
            _two_ranks([1e-6, 0.0], 1e10),
            wc.NetworkModel(None, ports=1, port_bandwidth_Bps=1e9),
            [0, 1],
            id="reduce-3B-ports",
        ),
        # A hidden router, whose links into the endpoints are slow.
        pytest.param(
            wc.build("generic_binomial_reduce", ranks=2, size_bytes=1),
            wc.custom(
                2,
                [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)],
                num_hidden_routers=1,
                latency_s=[7e-6, 1e-7, 0.0, 1e-6, 7e-6, 3e-8],
            ),
            wc.NetworkModel.hockney(0.0, 1e9),
            [0, 1],
            id="reduce-1B-hidden-router",
        ),
        # A schedule that does not compute the collective it states: its
        # own bound took the collective's farthest pair.
        pytest.param(
            _claims_reduce(),
            wc.ring(4),
            wc.NetworkModel(None, ports=1, hop_latency_s=1e-9),
            [0, 1, 2],
            id="reduce-that-forgets-a-rank",
        ),
        # No collective stated: once bounded as a broadcast to every rank.
        pytest.param(
            _one_unknown_message(),
            wc.topology.mesh(2, 2),
            wc.NetworkModel.loggp(1e-6, 0.0, 0.0, 1e-9),
            [0, 1, 3],
            id="unknown-one-message",
        ),
        # No transfer at all: no start-up, no reduction.
        pytest.param(
            wc.build("generic_ring_allreduce", ranks=1, size_bytes=8),
            wc.ring(2),
            wc.NetworkModel(1e9, alpha_s=1e-6, gamma_s_per_byte=1e-9),
            [0],
            id="no-transfer-with-gamma",
        ),
    ],
)
def test_found_cases(schedule, topology, network, placement) -> None:
    _check(schedule, topology, network, placement)
