"""The advisor (wc.advise, wc.crossover, ``wafercoll advise``) and the
closed forms the algorithms carry (AlgorithmInfo.predict)."""

from __future__ import annotations

import csv
import io
import signal

import pytest

import wafercoll as wc
from wafercoll.cli import main

GENERIC = [
    "generic_ring_allreduce",
    "generic_recursive_doubling_allreduce",
    "generic_rabenseifner_allreduce",
    "generic_binomial_reduce",
    "generic_binomial_broadcast",
]


@pytest.mark.parametrize("p", [3, 5, 8, 13])
def test_ring_closed_form_is_exact_on_a_ring(p: int) -> None:
    topo = wc.ring(p)
    net = wc.NetworkModel(1e9, alpha_s=1e-6, hop_latency_s=1e-7, gamma_s_per_byte=1e-10)
    S = p * 4096
    s = wc.build("generic_ring_allreduce", size_bytes=S, topology=topo)
    pred = wc.algorithm_info("generic_ring_allreduce").predict(p, S, topo, net)
    assert wc.simulate(s, topo, net).time_s == pytest.approx(pred, rel=1e-9)


@pytest.mark.parametrize("name", GENERIC)
@pytest.mark.parametrize("p", [2, 5, 8])
def test_hockney_forms_are_contention_free_lower_estimates(name: str, p: int) -> None:
    # Exact for two ranks; below the simulation otherwise (more hops, contention).
    topo = wc.ring(p)
    net = wc.NetworkModel(1e9, alpha_s=1e-6, hop_latency_s=1e-7, gamma_s_per_byte=1e-10)
    S = p * 4096
    t = wc.simulate(wc.build(name, size_bytes=S, topology=topo), topo, net).time_s
    pred = wc.algorithm_info(name).predict(p, S, topo, net)
    if p == 2:
        assert t == pytest.approx(pred, rel=1e-9)
    else:
        assert pred <= t * (1 + 1e-9)
    assert wc.algorithm_info(name).predict(p, S, topo, net.replace(ports=1)) is None


def test_advise_ranks_by_simulated_time_and_prunes_soundly() -> None:
    topo = wc.topology.torus(3, 4)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-8, packet_bytes=4096)
    full = wc.advise(topo, 1 << 18, network=net, keep=None)
    fast = wc.advise(topo, 1 << 18, network=net, keep=2, prune_from=0)
    sim = [c for c in full.candidates if c.status == "simulated"]
    times = [c.time_s for c in sim]
    assert times == sorted(times) and len(sim) >= 4
    assert full.best.name == fast.best.name
    exact = {c.name: c.time_s for c in sim}
    second = times[1]
    for c in fast.candidates:
        if c.status == "simulated":
            assert c.time_s == exact[c.name]
            assert c.ratio == pytest.approx(
                c.time_s
                / wc.bounds.result_bound(
                    wc.simulate(
                        wc.build(c.name, size_bytes=1 << 18, topology=topo), topo, net
                    )
                ).time_s
            )
        elif c.status == "pruned":
            # A pruned algorithm really is slower than the second best, and
            # its own bound is below its real time.
            assert exact[c.name] >= second
            assert c.schedule_bound_s <= exact[c.name]
    assert any(c.status == "pruned" for c in fast.candidates)
    for c in full.candidates:
        if c.status == "simulated":
            assert c.ratio >= 1.0
            assert c.bandwidth_Bps == pytest.approx((1 << 18) / c.time_s)


def test_advise_reports_the_bidirectional_ring_optimal_on_a_ring() -> None:
    adv = wc.advise(wc.ring(8), 1 << 20, network=wc.NetworkModel(1e9))
    assert adv.best.name == "torus_ring_bidir_allreduce"
    assert adv.best.ratio == pytest.approx(1.0, abs=1e-6)
    text = adv.table()
    assert "torus_ring_bidir_allreduce" in text and "not listed" in text
    assert "mesh_tto_allreduce" in adv.table(show_all=True)
    rows = list(csv.DictReader(io.StringIO(adv.to_csv())))
    assert rows[0]["name"] == adv.best.name and rows[0]["rank"] == "1"
    assert "advice" in adv._repr_html_()


def test_advise_other_collectives_and_names() -> None:
    topo = wc.line(6)
    adv = wc.advise(topo, 4096, "broadcast", wc.NetworkModel(1e9))
    assert {c.name for c in adv.candidates} == {
        a.name for a in wc.algorithms("broadcast")
    }
    only = wc.advise(
        topo, 4096, network=wc.NetworkModel(1e9), names=["generic_ring_allreduce"]
    )
    assert [c.name for c in only.candidates] == ["generic_ring_allreduce"]


@pytest.mark.parametrize(
    ("kwargs", "error", "text"),
    [
        ({"collective": "allscatter"}, ValueError, "collective"),
        ({"size_bytes": 0}, ValueError, "size_bytes"),
        ({"keep": 0}, ValueError, "keep"),
        ({"names": ["nope_nope_allreduce"]}, ValueError, "not a registered"),
        ({"network": 1e9}, TypeError, "network"),
    ],
)
def test_advise_refuses_bad_input(kwargs: dict, error: type, text: str) -> None:
    args = {"size_bytes": 1024, **kwargs}
    with pytest.raises(error, match=text):
        wc.advise(wc.ring(4), **args)


def test_crossover_names_a_winner_per_size() -> None:
    topo = wc.ring(6)
    net = wc.NetworkModel(1e9, alpha_s=2e-6)
    res = wc.crossover(topo, [64, 1 << 20], network=net)
    assert res["sizes"] == [64, 1 << 20]
    # Small messages: few start-ups win; large ones: bandwidth wins.
    assert res["winner"][0] != res["winner"][1]
    assert all(r["ratio"] >= 1.0 for r in res["rows"])
    assert sum(r["winner"] for r in res["rows"]) == 2
    with pytest.raises(ValueError, match="sizes"):
        wc.crossover(topo, [])


def test_cli_advise_table_csv_and_plot(tmp_path, capsys) -> None:
    code = main(
        [
            "advise",
            "--topology",
            "mesh:3x3",
            "--size-bytes",
            "1MiB",
            "--network",
            "mcm_table_ii",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    first = out.splitlines()[3]
    assert first.split()[0] == "1"
    csv_path, png = tmp_path / "x.csv", tmp_path / "x.png"
    code = main(
        [
            "advise",
            "-t",
            "ring:6",
            "--sizes",
            "1KiB:1MiB:32",
            "--format",
            "csv",
            "-o",
            str(csv_path),
            "--plot",
            str(png),
        ]
    )
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert {int(r["size_bytes"]) for r in rows} == {1024, 32768, 1048576}
    assert png.stat().st_size > 1000
    assert main(["advise", "-t", "ring:6", "--sizes", "1MiB:1KiB"]) == 2
    assert main(["advise", "-t", "ring:6", "-s", "1KiB", "-c", "allscatter"]) == 2
    assert main(["advise", "-t", "ring:6", "-s", "1KiB", "--format", "json"]) == 0


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
def test_ctrl_c_stops_the_simulations_on_the_advisors_threads() -> None:
    # KeyboardInterrupt reaches the main thread only; the simulations on the
    # pool's threads must stop too, not run to their end (a minute here).
    import threading
    import time

    net = wc.NetworkModel(1e9, packet_bytes=64)
    before = threading.active_count()
    main_thread = threading.main_thread().ident
    timer = threading.Timer(1.0, signal.pthread_kill, (main_thread, signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        wc.advise("torus:16x16", 256 << 20, "broadcast", net, jobs=2)
    assert time.monotonic() - start < 1.0 + 1.0
    timer.join()
    assert threading.active_count() == before  # the pool's threads ended
    # The stop request is closed again: the next simulation runs to its end.
    s = wc.build("generic_ring_allreduce", 4, 1 << 16)
    assert wc.simulate(s, wc.ring(4), net).time_s > 0


def test_advise_ranks_nccl_nvls_and_synthesis_on_dgx_h100() -> None:
    # Small schedules are simulated even when they cannot win, so the
    # in-network schedules, NCCL's and the synthesized one all get a time
    # and a ratio against their own bound.
    adv = wc.advise("dgx_h100", 256 << 20)
    sim = {c.name: c for c in adv.candidates if c.status == "simulated"}
    for name in (
        "fabric_nvls_allreduce",
        "nccl_ring_allreduce",
        "nccl_tree_allreduce",
        "synth_treepack_allreduce",
    ):
        assert name in sim and sim[name].ratio >= 1.0 - 1e-9
    times = [c.time_s for c in adv.candidates if c.status == "simulated"]
    assert times == sorted(times)
    assert not any(c.status == "pruned" for c in adv.candidates)
    # With pruning allowed for every schedule, those that cannot beat the
    # three fastest are pruned instead, and are no faster than the third.
    pruned = wc.advise("dgx_h100", 256 << 20, prune_from=0)
    third = sorted(times)[2]
    for c in pruned.candidates:
        if c.status == "pruned":
            assert sim[c.name].time_s >= third


def test_advise_and_sweep_give_builders_the_network_they_plan_for() -> None:
    # The synthesizer's LP takes the sprayed link loads when the network
    # sprays (network_parameters=("spray",)): the advisor and sweeps build it
    # so, and it is then much faster than the same builder planning for
    # single routes.
    topo = wc.topology.dgx_h100_rail(2)
    net = wc.machines.get("dgx_h100_x16_rail").network()
    net = net.replace(spray=True, packet_bytes=1 << 16)
    name, size = "synth_treepack_allgather", 64 << 20
    assert wc.algorithm_info(name).network_options(net) == {"spray": True}

    def time(**kw):
        s = wc.build(name, size_bytes=size, topology=topo, **kw)
        return wc.simulate(s, topo, net).time_s

    planned, unplanned = time(spray=True), time(spray=False)
    assert planned < 0.5 * unplanned
    adv = wc.advise(topo, size, "allgather", net, names=[name])
    assert adv.best.time_s == planned
    df = wc.sweep(
        {
            "algorithm": [name],
            "topology": [topo],
            "size_bytes": [size],
            "network": [net],
        },
        jobs=1,
        cache=None,
        progress=False,
    )
    assert list(df["time_s"]) == [planned]
    # An option given explicitly wins over the network's.
    df = wc.sweep(
        [
            {
                "algorithm": name,
                "topology": topo,
                "size_bytes": size,
                "network": net,
                "options": {"spray": False},
            }
        ],
        jobs=1,
        cache=None,
        progress=False,
    )
    assert list(df["time_s"]) == [unplanned]


def test_network_parameters_must_name_a_parameter_and_a_network_field() -> None:
    with pytest.raises(ValueError, match="network_parameters"):  # no such parameter
        wc.register_algorithm(
            "demo_bad_allreduce", "allreduce", network_parameters=("spray",)
        )
    with pytest.raises(ValueError, match="network_parameters"):  # no such field
        wc.register_algorithm(
            "demo_bad_allreduce",
            "allreduce",
            parameters={"chunks": 1},
            network_parameters=("chunks",),
        )
    assert "demo_bad_allreduce" not in {a.name for a in wc.algorithms()}
