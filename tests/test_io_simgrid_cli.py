"""SimGrid as a second engine, and the interoperability commands of the CLI."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

import wafercoll as wc
from wafercoll._simgrid import simgrid_available
from wafercoll.cli import main

needs_simgrid = pytest.mark.skipif(
    not simgrid_available() and os.environ.get("CI") != "true",
    reason="SimGrid's Python module is not installed (apt-get install python3-simgrid)",
)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --------------------------------------------------------------------------- #
# SimGrid
# --------------------------------------------------------------------------- #
@needs_simgrid
def test_one_transfer_agrees_with_simgrid():
    s = wc.Schedule(6, [3_000_000], "broadcast")
    s.add_transfer(0, 5, [0])
    topo = wc.line(6, bandwidth_Bps=2e9, latency_s=1e-7)
    net = wc.NetworkModel(None, hop_latency_s=5e-7, alpha_s=3e-6)
    ours = wc.simulate(s, topo, net)
    theirs = wc.simulate(s, topo, net, engine="simgrid")
    # Closed form: alpha + 5 hops of latency + bytes / bandwidth.
    want = 3e-6 + 5 * (1e-7 + 5e-7) + 3_000_000 / 2e9
    assert ours.time_s == pytest.approx(want, rel=1e-12)
    assert theirs.time_s == pytest.approx(ours.time_s, rel=1e-2)
    assert theirs.transfer_finish_s[0] == pytest.approx(want, rel=1e-2)
    assert theirs.network.name.endswith("(simgrid)")


@needs_simgrid
@pytest.mark.parametrize("p", [3, 8])
def test_ring_allreduce_on_a_ring_agrees_with_simgrid(p):
    s = wc.build("generic_ring_allreduce", p, p * 1_000_000)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-6, alpha_s=2e-6)
    ours = wc.simulate(s, wc.ring(p), net, transfers=True)
    theirs = wc.simulate(s, wc.ring(p), net, engine="simgrid")
    assert theirs.time_s == pytest.approx(ours.time_s, rel=1e-2)
    assert theirs.transfer_finish_s == pytest.approx(ours.transfer_finish_s, rel=1e-2)
    assert (theirs.link_bytes == ours.link_bytes).all()


@needs_simgrid
def test_contended_case_runs_on_both_engines():
    # Recursive doubling on a ring shares links between exchanges: both
    # engines finish, and neither beats the contention-free lower bound.
    s = wc.build("generic_recursive_doubling_allreduce", 8, 1 << 20)
    net = wc.NetworkModel(1e9)
    ours = wc.simulate(s, wc.ring(8), net).time_s
    theirs = wc.simulate(s, wc.ring(8), net, engine="simgrid").time_s
    bound = 3 * (1 << 20) / 1e9
    assert ours >= bound * (1 - 1e-12) and theirs >= bound * (1 - 1e-12)


@needs_simgrid
def test_simgrid_charges_zero_byte_transfers_their_start_up():
    # A 1-byte ring allreduce on 4 ranks: blocks of 1, 0, 0 and 0 B, in
    # 2 (p - 1) = 6 dependent steps of alpha + one hop (+ 1 ns for the byte).
    # SimGrid never completed its 0 B communications, and the run ended at
    # 1 us, below the schedule's own bound.
    p, alpha, hop = 4, 1e-6, 1e-7
    s = wc.build("generic_ring_allreduce", ranks=p, size_bytes=1)
    topo, net = wc.ring(p), wc.NetworkModel(1e9, alpha_s=alpha, hop_latency_s=hop)
    theirs = wc.simulate(s, topo, net, engine="simgrid")
    steps = 2 * (p - 1)
    assert steps * (alpha + hop) <= theirs.time_s <= steps * (alpha + hop + 1e-9)
    assert theirs.time_s >= wc.bounds.schedule_lower_bound(s, topo, net).time_s
    ours = wc.simulate(s, topo, net, transfers=True)
    assert theirs.transfer_finish_s == pytest.approx(ours.transfer_finish_s, rel=1e-3)


@needs_simgrid
def test_simgrid_zero_byte_transfer_alone_is_alpha_and_route_latency():
    s = wc.Schedule(3, [0], "broadcast")
    s.add_transfer(0, [1, 2], [0])
    topo = wc.line(3, latency_s=2e-7)
    net = wc.NetworkModel(1e9, alpha_s=1e-6, hop_latency_s=1e-7)
    theirs = wc.simulate(s, topo, net, engine="simgrid")
    # The farther destination: alpha + two hops of 2e-7 + 1e-7.
    assert theirs.time_s == pytest.approx(1e-6 + 2 * 3e-7, rel=1e-12)
    assert theirs.time_s == pytest.approx(wc.simulate(s, topo, net).time_s, rel=1e-12)


def test_simgrid_engine_refuses_what_a_flow_model_lacks():
    s = wc.build("generic_ring_allreduce", 3, 3 * 64)
    with pytest.raises(ValueError, match="gamma_s_per_byte"):
        wc.simulate(
            s, wc.ring(3), wc.NetworkModel(1e9, gamma_s_per_byte=1e-9), engine="simgrid"
        )
    with pytest.raises(ValueError, match="engine must be"):
        wc.simulate(s, wc.ring(3), wc.NetworkModel(1e9), engine="booksim")
    with pytest.raises(ValueError, match="no timeline or trace"):
        wc.simulate(s, wc.ring(3), wc.NetworkModel(1e9), engine="simgrid", trace=True)


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #
def test_export_formats(capsys, tmp_path):
    args = ["generic_ring_allreduce", "-p", "4", "-s", "4KiB"]
    code, out, _ = run(
        capsys, "export", *args, "-f", "msccl", "-o", str(tmp_path / "r.xml")
    )
    assert code == 0 and "verified" in out
    assert ET.parse(tmp_path / "r.xml").getroot().get("coll") == "allreduce"
    code, out, _ = run(
        capsys, "export", *args, "-f", "goal", "-o", str(tmp_path / "r.goal")
    )
    assert code == 0 and (tmp_path / "r.goal").read_text().count("send ") == 24
    pytest.importorskip("google.protobuf")
    code, out, _ = run(
        capsys, "export", *args, "-f", "chakra", "-o", str(tmp_path / "r")
    )
    assert code == 0 and sorted(os.listdir(tmp_path)).count("r.0.et") == 1
    # Files read back by extension.
    code, out, _ = run(capsys, "verify", str(tmp_path / "r.xml"))
    assert code == 0 and out.startswith("ok ")
    code, out, _ = run(
        capsys,
        "export",
        "--schedule",
        str(tmp_path / "r.xml"),
        "-f",
        "json",
        "-o",
        str(tmp_path / "back.json"),
    )
    assert code == 0
    assert wc.Schedule.from_json(tmp_path / "back.json").labels[0].startswith("GPU ")
    code, out, _ = run(
        capsys,
        "simulate",
        "--schedule",
        str(tmp_path / "r.goal"),
        "-t",
        "ring",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out)["time_s"] > 0
    code, _, err = run(capsys, "verify", str(tmp_path / "r.goal"))
    assert code == 1 and "not data" in err


def test_export_refusals_and_bad_files(capsys, tmp_path):
    code, _, err = run(
        capsys,
        "export",
        "torus_shared_memory_allreduce",
        "-p",
        "4",
        "-s",
        "4KiB",
        "-f",
        "msccl",
        "-o",
        str(tmp_path / "x.xml"),
    )
    assert code == 1 and "every GPU takes part" in err
    bad = tmp_path / "bad.xml"
    bad.write_text("<algo>\n<gpu>\n")
    code, _, err = run(capsys, "verify", str(bad))
    assert code == 1 and "line" in err and "bad.xml" in err
    code, _, err = run(capsys, "export", "-f", "msccl", "-o", str(tmp_path / "y.xml"))
    assert code == 2 and "NAME" in err


def test_simulate_trace(capsys, tmp_path):
    f = tmp_path / "t.json"
    code, _, err = run(
        capsys,
        "simulate",
        "generic_ring_allreduce",
        "-t",
        "ring:4",
        "-s",
        "64KiB",
        "--packet",
        "4KiB",
        "--trace",
        str(f),
    )
    assert code == 0 and "perfetto" in err  # the data went to stdout
    ev = json.loads(f.read_text())["traceEvents"]
    assert sum(e["ph"] == "X" and e["cat"] == "transfer" for e in ev) == 24


@needs_simgrid
def test_simulate_engine_flag(capsys):
    code, out, _ = run(
        capsys,
        "simulate",
        "generic_ring_allreduce",
        "-t",
        "ring:4",
        "-s",
        "64KiB",
        "--engine",
        "simgrid",
        "--format",
        "json",
    )
    assert code == 0 and "simgrid" in json.loads(out)["network"]
