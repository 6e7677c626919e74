"""Cluster performance models and analytic costs (paper 001)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.cluster import costs, model
from wafercoll.cluster.model import BLUE_WATERS, Postal


def test_postal_and_split_are_the_linear_forms() -> None:
    t = model.postal_time(
        3, 1000, 500, alpha_s=2e-6, beta_s_per_byte=1e-9, gamma_s_per_byte=4e-10
    )
    assert t == pytest.approx(3 * 2e-6 + 1000 * 1e-9 + 500 * 4e-10)
    loc, net = Postal(1e-6, 2e-10), Postal(5e-6, 1e-9)
    t = model.split_time(
        4, 800, 2, 400, 100, local=loc, network=net, gamma_s_per_byte=1e-9
    )
    assert t == pytest.approx(4e-6 + 800 * 2e-10 + 2 * 5e-6 + 400e-9 + 100e-9)


def test_max_rate_limits_k_senders_by_the_nic() -> None:
    a, rb, rn = 1e-6, 1e9, 4e9
    k = np.arange(1, 9)
    t = model.max_rate_time(k, 1e6, alpha_s=a, R_b_Bps=rb, R_N_Bps=rn)
    expect = [a + kk * 1e6 / min(rn, kk * rb) for kk in k]
    np.testing.assert_allclose(t, expect)
    # k = 1 is the postal cost; up to R_N / R_b senders run at full speed
    assert t[0] == pytest.approx(
        model.postal_time(1, 1e6, alpha_s=a, beta_s_per_byte=1 / rb)
    )
    np.testing.assert_allclose(t[:4], t[0])
    assert t[7] == pytest.approx(a + 8e6 / rn)
    with pytest.raises(ValueError, match="senders must be >= 1"):
        model.max_rate_time(0, 1, alpha_s=0, R_b_Bps=1, R_N_Bps=1)


def test_protocol_cutoffs() -> None:
    assert model.protocol(499) == "short"
    assert model.protocol(500) == "eager"
    assert model.protocol(7999) == "eager"
    assert model.protocol(8000) == "rendezvous"
    assert list(model.protocol([0, 600, 9000])) == ["short", "eager", "rendezvous"]


def test_fit_postal_recovers_known_parameters() -> None:
    rng = np.random.default_rng(0)
    sizes = np.repeat(2.0 ** np.arange(0, 20), 3)
    alpha, beta = 3e-6, 4e-10
    times = 2 * (alpha + beta * sizes) * (1 + 1e-4 * rng.standard_normal(sizes.size))
    fit = model.fit_postal(sizes, times, round_trip=True)
    assert fit.alpha_s == pytest.approx(alpha, rel=1e-2)
    assert fit.beta_s_per_byte == pytest.approx(beta, rel=1e-3)
    per = model.fit_postal(sizes, times / 2, by_protocol=True)
    assert set(per) == set(model.PROTOCOLS)
    assert per["rendezvous"].beta_s_per_byte == pytest.approx(beta, rel=1e-2)
    with pytest.raises(ValueError, match="same length"):
        model.fit_postal([1, 2], [1.0])
    with pytest.raises(ValueError, match="two distinct sizes"):
        model.fit_postal([8, 8], [1.0, 1.0])


def test_blue_waters_set_has_sources_and_a_user_set_can_replace_it() -> None:
    bw = BLUE_WATERS
    assert bw.ppn == 16 and bw.nic_Bps["rendezvous"] == pytest.approx(1 / 1.8e-10)
    assert bw.gamma_s_per_byte == pytest.approx(0.115543 / 8.0e7)
    assert {"socket", "node", "network", "nic_Bps", "gamma"} <= set(bw.sources)
    assert bw.network_time(100) == pytest.approx(4.0e-6 + 100 * 1.6e-9)
    k16 = bw.network_time(1e5, 16)
    assert k16 == pytest.approx(2.0e-5 + 16e5 * 1.8e-10)
    assert bw.network_time(1e5, 16, "postal") == pytest.approx(2.0e-5 + 1e5 * 2.8e-10)
    user = bw.replace(name="mine", gamma_s_per_byte=0.0)
    assert user.gamma_s_per_byte == 0.0 and user.classes is bw.classes
    with pytest.raises(ValueError, match="model must be"):
        bw.network_time(8, 1, "hockney")
    with pytest.raises(ValueError, match="must be a Postal"):
        model.ClusterParams("x", {}, {}, 0.0, 1)


@pytest.mark.parametrize(("n", "ppn"), [(16, 16), (256, 16), (64, 4)])
@pytest.mark.parametrize("s", [8.0, 1024.0, 16384.0])
def test_nap_equation_reduces_to_the_closed_form_for_powers_of_ppn(
    n: int, ppn: int, s: float
) -> None:
    # recovered details §1.7b: with n = ppn**k, NAP costs
    # log2(p) T_l + log_ppn(n) T_mr(ppn - 1) + (log2 p + log_ppn n) gamma s
    k = round(math.log(n, ppn))
    p = n * ppn
    bw = BLUE_WATERS
    want = (
        math.log2(p) * bw.local_time(s)
        + k * bw.network_time(s, ppn - 1)
        + (math.log2(p) + k) * bw.gamma_s_per_byte * s
    )
    assert costs.allreduce_time("nap", n, ppn, s) == pytest.approx(want)


def test_rd_and_smp_differ_only_in_senders_and_local_steps() -> None:
    bw, n, ppn, s = BLUE_WATERS, 2048, 16, 16384.0
    rd = costs.allreduce_time("rd", n, ppn, s)
    smp = costs.allreduce_time("smp", n, ppn, s)
    diff = math.log2(ppn) * bw.local_time(s) + 11 * (
        bw.network_time(s, 1) - bw.network_time(s, ppn)
    )
    assert smp - rd == pytest.approx(diff)
    post = costs.allreduce_time("rd", n, ppn, s, network="postal")
    assert post < rd


def test_acceptance_nap_wins_small_and_smp_overtakes_it() -> None:
    # p = 32768, ppn 16, Blue Waters, max-rate (issue 6 acceptance)
    n, ppn = 2048, 16
    t = {a: costs.allreduce_time(a, n, ppn, 8) for a in ("rd", "smp", "nap")}
    assert t["nap"] < t["rd"] and t["nap"] < t["smp"]
    sizes = np.arange(8, 16385, 8)
    x = costs.crossover_size(n, ppn, sizes)
    assert x is not None and 8000 <= x <= 16384
    smp = costs.allreduce_time("smp", n, ppn, sizes)
    nap = costs.allreduce_time("nap", n, ppn, sizes)
    assert (smp[sizes >= x] < nap[sizes >= x]).all()
    assert costs.crossover_size(n, ppn, sizes, network="postal") is None


def test_simulator_on_a_cluster_shows_the_max_rate_behaviour() -> None:
    # k processes of node 0 each send s bytes to node 1 at once
    rb, rn, s = 2e9, 5e9, 1 << 20
    topo = wc.topology.cluster(2, 8, process_Bps=rb, nic_Bps=rn)
    net = wc.NetworkModel(None, alpha_s=3e-6, packet_bytes=4096)
    for k in (1, 2, 4, 8):
        sched = wc.Schedule(16, [s], "allreduce")
        for i in range(k):
            sched.add_transfer(i, 8 + i, [0])
        r = wc.simulate(sched, topo, net)
        want = model.max_rate_time(k, s, alpha_s=3e-6, R_b_Bps=rb, R_N_Bps=rn)
        assert r.time_s == pytest.approx(want, rel=0.01), k


def test_cost_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="algorithm must be one of"):
        costs.allreduce_time("ring", 4, 4, 8)
    with pytest.raises(ValueError, match="form must be"):
        costs.allreduce_time("nap", 4, 4, 8, form="paper")
    with pytest.raises(ValueError, match="size_bytes must be finite"):
        costs.allreduce_time("nap", 4, 4, -1)
    with pytest.raises(ValueError, match="nodes must be >= 1"):
        costs.step_counts("nap", 0, 4)


def test_fit_max_rate_recovers_known_parameters() -> None:
    # Synthetic data made by the two-branch model the fit assumes.
    a_s, b_s, a_r, b_r, inv_rn = 1e-6, 2e-9, 8e-6, 3e-10, 1.5e-10
    sizes, times, senders = [], [], []
    for s in (16, 64, 256, 1024, 4096, 9000, 20000, 65536):
        for k in range(1, 17):
            sizes.append(s)
            senders.append(k)
            if s < 8000:
                times.append(2 * (a_s + b_s * s))  # round trips
            elif k < 4:
                times.append(2 * (a_r + b_r * s))
            else:
                times.append(2 * (a_r + k * s * inv_rn))
    fit, rn = model.fit_max_rate(sizes, times, senders, round_trip=True)
    assert fit["short"].alpha_s == pytest.approx(a_s)
    assert fit["eager"].beta_s_per_byte == pytest.approx(b_s)
    assert fit["rendezvous"].alpha_s == pytest.approx(a_r)
    assert fit["rendezvous"].beta_s_per_byte == pytest.approx(b_r)
    assert 1 / rn == pytest.approx(inv_rn)
    with pytest.raises(ValueError, match="senders must be >= 1"):
        model.fit_max_rate([9000, 9000], [1e-5, 1e-5], [0, 1])
    with pytest.raises(ValueError, match="same length"):
        model.fit_max_rate([9000], [1e-5, 1e-5], [1])
    small = [s for s in sizes if s < 8000]
    with pytest.raises(ValueError, match="rendezvous points"):
        model.fit_max_rate(small, times[: len(small)], senders[: len(small)])


def _measured_by_normal_equations(locality: str) -> dict[str, tuple[float, ...]]:
    """An independent fit of the shipped measurements: csv module and 2x2
    normal equations solved by Cramer's rule."""
    import csv
    from importlib.resources import files

    text = files("wafercoll.cluster").joinpath("data/blue_waters_pingpong.csv")
    rows = [
        r
        for r in csv.DictReader(
            ln for ln in text.read_text().splitlines() if not ln.startswith("#")
        )
        if r["locality"] == locality
    ]
    pts = [
        (float(r["size_bytes"]), int(r["pairs"]), float(r["round_trip_s"]) / 2)
        for r in rows
    ]

    def line(sel: list[tuple[float, int, float]]) -> tuple[float, float]:
        n = len(sel)
        sx = sum(s for s, _, _ in sel)
        sxx = sum(s * s for s, _, _ in sel)
        sy = sum(t for _, _, t in sel)
        sxy = sum(s * t for s, _, t in sel)
        det = n * sxx - sx * sx
        return (sy * sxx - sx * sxy) / det, (n * sxy - sx * sy) / det

    out = {
        "short": line([p for p in pts if p[0] < 500]),
        "eager": line([p for p in pts if 500 <= p[0] < 8000]),
    }
    if locality != "network":
        out["rendezvous"] = line([p for p in pts if p[0] >= 8000])
        return out
    a, b = line([p for p in pts if p[0] >= 8000 and p[1] < 4])
    busy = [(k * s, t - a) for s, k, t in pts if s >= 8000 and k >= 4]
    inv_rn = sum(x * y for x, y in busy) / sum(x * x for x, _ in busy)
    out["rendezvous"] = (a, b, inv_rn)
    return out


@pytest.mark.parametrize("locality", ["network", "node", "socket"])
def test_measured_set_is_the_least_squares_fit_of_the_shipped_data(locality) -> None:
    m = model.BLUE_WATERS_MEASURED
    want = _measured_by_normal_equations(locality)
    for proto, vals in want.items():
        got = m.classes[locality][proto]
        assert got.alpha_s == pytest.approx(vals[0], rel=1e-9)
        assert got.beta_s_per_byte == pytest.approx(vals[1], rel=1e-9)
    if locality == "network":
        assert 1 / m.nic_Bps["rendezvous"] == pytest.approx(want["rendezvous"][2])
        assert m.nic_Bps["short"] is None and m.nic_Bps["eager"] is None
    d = model.blue_waters_pingpong()
    assert set(d["locality"]) == {"network", "node", "socket"}
    assert d["pairs"][d["locality"] == "network"].max() == 16
    with pytest.raises(ValueError):
        d["size_bytes"][0] = 1.0  # read-only: the fit at import cannot drift
    assert "4ecec3e9" in m.sources["network"]


def test_script_form_is_the_authors_script_under_the_measured_set() -> None:
    # The authors' plot script (BlueWatersModel plot_nap_collective_model.py),
    # restated from its formulas: intra = node postal, inter = network cost of
    # 16 senders (NIC-bound from 4 senders: alpha + 16 s / R_N), SMP's = one
    # sender (alpha + beta s), NAP with log2 p local steps and
    # ceil(log2 n / 4) network steps.
    m = model.BLUE_WATERS_MEASURED
    g = m.gamma_s_per_byte
    for p_exp in (7, 11, 15, 16):
        p = 1 << p_exp
        n = p // 16
        for s in (8.0, 1024.0, 7992.0, 8000.0, 16384.0):
            node = m.classes["node"][model.protocol(s)]
            net = m.classes["network"][model.protocol(s)]
            intra = node.alpha_s + node.beta_s_per_byte * s
            if s >= 8000:
                inter = net.alpha_s + 16 * s / m.nic_Bps["rendezvous"]
            else:
                inter = net.alpha_s + net.beta_s_per_byte * s
            smp = net.alpha_s + net.beta_s_per_byte * s
            lg = math.log2
            want = {
                "rd": 4 * intra + lg(n) * inter + lg(p) * g * s,
                "smp": 8 * intra + lg(n) * smp + lg(p) * g * s,
                "nap": lg(p) * intra
                + math.ceil(lg(n) / 4) * inter
                + (lg(p) + 4) * g * s,
            }
            for a, t in want.items():
                got = costs.allreduce_time(a, n, 16, s, m, form="script")
                assert got == pytest.approx(t, rel=1e-12), (a, p, s)


@pytest.mark.parametrize("algorithm", ["rd", "smp", "nap", "dissemination"])
def test_socket_level_limits(algorithm: str) -> None:
    n, ppn, sizes = 32, 16, [8.0, 2000.0, 1e5]
    P = model.BLUE_WATERS_MEASURED
    base = costs.allreduce_time(algorithm, n, ppn, sizes, P)
    # One process per socket: every on-node message crosses sockets (the
    # node class), as without the socket level.
    per_proc = costs.allreduce_time(algorithm, n, ppn, sizes, P, sockets=ppn)
    assert per_proc == pytest.approx(base)
    # One socket per node: every on-node message is an on-socket one, which
    # is the default with the node class replaced by the socket class.
    classes = dict(P.classes)
    classes["node"] = classes["socket"]
    one = costs.allreduce_time(algorithm, n, ppn, sizes, P, sockets=1)
    assert one == pytest.approx(
        costs.allreduce_time(algorithm, n, ppn, sizes, P.replace(classes=classes))
    )
    # Two sockets: the log2(ppn) on-node steps split 3 on-socket, 1 across.
    two = costs.allreduce_time(algorithm, n, ppn, sizes, P, sockets=2)
    assert np.all((one <= two + 1e-15) & (two <= base + 1e-15))


def test_socket_split_matches_the_rd_schedule() -> None:
    # Recursive doubling on 4 nodes of 8 processes in 2 sockets: rank 0's
    # partners lie 2 steps on its socket, 1 across sockets, 2 off-node, the
    # log2(ppn / sockets), log2(sockets), log2(nodes) of the equations.
    nodes, ppn, sockets = 4, 8, 2
    topo = wc.topology.cluster(nodes, ppn, sockets)
    s = wc.build("cluster_rd_allreduce", nodes * ppn, 64, ppn=ppn)
    src, dst = s.src, s.dst
    partners = dst[src == 0]
    counts = np.bincount([topo.locality(0, int(d)) for d in partners], minlength=3)
    assert counts.tolist() == [
        int(math.log2(ppn // sockets)),
        int(math.log2(sockets)),
        int(math.log2(nodes)),
    ]


def test_socket_level_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="sockets must divide ppn"):
        costs.allreduce_time("rd", 4, 16, 8, sockets=3)
    with pytest.raises(ValueError, match="sockets"):
        costs.allreduce_time("rd", 4, 16, 8, sockets=0)
    with pytest.raises(ValueError, match="form='equations'"):
        costs.allreduce_time("rd", 4, 16, 8, sockets=2, form="script")


@pytest.mark.parametrize("size", [64, 4000, 20000])
@pytest.mark.parametrize("params", [model.BLUE_WATERS, model.BLUE_WATERS_MEASURED])
def test_cluster_machine_socket_level_costs(size: int, params) -> None:
    # One message per locality class costs that class's postal time (the
    # cross-socket bytes are no faster than on-socket ones in these sets).
    topo, net = wc.cluster.cluster_machine(2, 8, size, params, sockets=2)
    for dst, loc in ((1, "socket"), (5, "node"), (9, "network")):
        assert ("socket", "node", "network")[topo.locality(0, dst)] == loc
        s = wc.Schedule(16, [size], "broadcast", root=0)
        s.add_transfer(0, dst, [0])
        t = wc.simulate(s, topo, net).time_s
        assert t == pytest.approx(params.postal(loc, size).time(size))
    # k processes of a node sending off-node at once share the NIC through
    # their lanes exactly as they do through the process links of the
    # one-class layout.
    s = wc.Schedule(16, [size], "broadcast", root=0)
    for r in range(8):
        s.add_transfer(r, 8 + r, [0])
    one_class = wc.cluster.cluster_machine(2, 8, size, params)
    t = wc.simulate(s, topo, net, transfers=True).transfer_finish_s
    assert t == pytest.approx(
        wc.simulate(s, *one_class, transfers=True).transfer_finish_s, rel=1e-12
    )
