"""Reproducers of hostile inputs: each gives a clean error or a correct result."""

from __future__ import annotations

import json

import pytest

import wafercoll as wc
from wafercoll.cli import main


def test_autogen_huge_ramp_latency_is_refused():
    # Once an out-of-bounds read in the DP's reconstruction.
    with pytest.raises(ValueError, match=r"T_R must be <= 1e\+09"):
        wc.wafer.autogen(3, 1, 1e17)
    with pytest.raises(ValueError, match="T_R"):
        wc.build("wafer_autogen_reduce", 8, 64, T_R=1e17)
    assert wc.wafer.autogen(3, 1, 1e9).P == 3


@pytest.mark.parametrize(
    "name",
    [
        "wafer_chain_reduce",
        "wafer_star_reduce",
        "wafer_tree_reduce",
        "wafer_two_phase_reduce",
    ],
)
def test_wafer_sizes_near_the_int64_limit(name):
    # size_bytes + block_bytes - 1 once overflowed (undefined behaviour).
    with pytest.raises(ValueError, match=r"size_bytes must be <= "):
        wc.build(name, 15, 2**62)
    s = wc.build(name, 15, 2**62 - 4)
    assert s.size_bytes == 2**62 - 4
    wc.verify(s)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bandwidth_Bps": 10**400}, "bandwidth_Bps is too large for a float"),
        ({"bandwidth_Bps": 5e-324}, "bandwidth_Bps must be >= 1"),
        ({"bandwidth_Bps": 1e9, "alpha_s": 1e308}, "alpha_s must be <= 86400"),
        ({"bandwidth_Bps": 1e9, "hop_latency_s": float("inf")}, "hop_latency_s"),
        ({"bandwidth_Bps": 1e9, "packet_bytes": 2**63}, "packet_bytes must be <= "),
        (
            {"bandwidth_Bps": 1e9, "gamma_s_per_byte": 10.0},
            "gamma_s_per_byte must be <= 1",
        ),
    ],
)
def test_network_model_ranges(kwargs, match):
    with pytest.raises(ValueError, match=match):
        wc.NetworkModel(**kwargs)


def test_simulated_times_stay_finite():
    s = wc.build("generic_ring_allreduce", 4, 64)
    with pytest.raises(ValueError, match="max_events must be <= "):
        wc.simulate(s, wc.ring(4), wc.NetworkModel(1e9), max_events=2**64)
    # The slowest and the longest delays the ranges allow still give a time.
    r = wc.simulate(s, wc.ring(4), wc.NetworkModel(1.0, alpha_s=86_400.0))
    assert r.time_s > 0 and r.time_s < float("inf")


def test_cli_json_is_json(capsys):
    code = main(
        [
            "simulate",
            "generic_ring_allreduce",
            "-t",
            "ring:4",
            "-s",
            "64",
            "--bandwidth",
            "1",
            "--alpha",
            "86400",
            "--format",
            "json",
        ]
    )
    out, _ = capsys.readouterr()
    assert code == 0

    def strict(constant):
        raise AssertionError(f"not JSON: {constant}")

    doc = json.loads(out, parse_constant=strict)  # no Infinity or NaN
    assert doc["time_s"] > 0
    code = main(
        [
            "simulate",
            "generic_ring_allreduce",
            "-t",
            "ring:4",
            "-s",
            "64",
            "--bandwidth",
            "1e-300",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "bandwidth_Bps must be >= 1" in err


def test_schedule_files_name_the_file_and_the_problem(tmp_path):
    f = tmp_path / "s.json"
    f.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(wc.ScheduleError, match=r"s\.json: JSON nested too deeply"):
        wc.Schedule.from_json(f)
    f.write_bytes(b"\xff\xfe{}")
    with pytest.raises(wc.ScheduleError, match=r"s\.json: not UTF-8"):
        wc.Schedule.from_json(f)
    with pytest.raises(FileNotFoundError, match="nonexistent"):
        wc.Schedule.from_json(tmp_path / "nonexistent.json")
    doc = wc.build("generic_ring_allreduce", 2, 64).to_dict()
    f.write_text(json.dumps({**doc, "extra": 1}))
    with pytest.raises(wc.ScheduleError, match=r"s\.json: unknown field\(s\) 'extra'"):
        wc.Schedule.from_json(f)
    doc["transfers"][0]["op"] = ["copy"]
    with pytest.raises(wc.ScheduleError, match="field 'op' must be 'copy' or 'reduce'"):
        wc.Schedule.from_dict(doc)


def test_a_bad_last_transfer_of_a_long_file_is_named():
    # 19,800 transfers: the error must name the last one and its field.
    doc = wc.build(
        "generic_ring_allreduce", topology=wc.topology.ring(100), size_bytes=800
    ).to_dict()
    last = len(doc["transfers"]) - 1
    doc["transfers"][last]["src"] = 10**6
    with pytest.raises(
        wc.ScheduleError, match=rf"transfer {last}: field 'src' must be <= 99"
    ):
        wc.Schedule.from_dict(doc)


def test_scalar_owners_and_participants_are_type_errors():
    with pytest.raises(TypeError, match="owners must be a sequence"):
        wc.Schedule(2, [8, 8], "allgather", owners=3)
    with pytest.raises(TypeError, match="participants must be a sequence"):
        wc.Schedule(2, [8], "allreduce", participants=1)


def test_zero_size_mesh_builders_say_why():
    with pytest.raises(ValueError, match="size_bytes must be >= 1"):
        wc.build("mesh_tto_allreduce", topology=wc.topology.mesh(2, 2), size_bytes=0)


def test_execute_refuses_uint64_beyond_int64():
    import numpy as np

    s = wc.build("generic_ring_allreduce", 2, 64)
    with pytest.raises(ValueError, match="above 2\\*\\*63 - 1"):
        wc.execute(s, np.full((2, 4), 2**63, dtype=np.uint64))
    out = wc.execute(s, np.full((2, 4), 3, dtype=np.uint64))
    assert (out == 6).all()


def test_cli_indent_is_bounded(capsys, tmp_path):
    code = main(
        [
            "build",
            "generic_ring_allreduce",
            "-p",
            "2",
            "-s",
            "64",
            "-o",
            str(tmp_path / "x.json"),
            "--indent",
            "99999999999999999999",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "--indent" in err


def test_cli_schedule_errors_name_the_file(capsys, tmp_path):
    doc = wc.build("generic_ring_allreduce", 2, 64).to_dict()
    doc["transfers"][0]["src"] = 7
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc))
    code = main(["verify", str(f)])
    _, err = capsys.readouterr()
    assert code == 1 and "bad.json" in err and "transfer 0" in err
    f.write_text("[" * 5000 + "]" * 5000)
    code = main(["verify", str(f)])
    _, err = capsys.readouterr()
    assert code == 1 and "bad.json: JSON nested too deeply" in err


def test_reproduce_into_an_unwritable_folder(capsys, tmp_path):
    import os

    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        code = main(
            ["reproduce", "--quick", "--only", "foundation_counts", "--out", str(ro)]
        )
        _, err = capsys.readouterr()
        assert code == 2 and "cannot write into" in err
    finally:
        ro.chmod(0o700)


def test_interrupted_reproduce_reports_what_finished(capsys, tmp_path, monkeypatch):
    import wafercoll.experiments as wx

    def interrupted(quick=False):
        raise KeyboardInterrupt

    import dataclasses

    exp = wx.get_experiment("torus_hops")
    monkeypatch.setitem(
        wx._REGISTRY, exp.name, dataclasses.replace(exp, run=interrupted)
    )
    code = main(
        [
            "reproduce",
            "--quick",
            "--jobs",
            "1",  # in this process: the patched registry is not in workers
            "--out",
            str(tmp_path),
            "--only",
            "foundation_counts",
            "torus_hops",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 130 and "interrupted" in err
    report = (tmp_path / "REPORT.md").read_text()
    assert "foundation_counts" in report and "## torus_hops" not in report
    assert not list(tmp_path.glob("*.tmp*"))


def test_reproduce_into_a_folder_that_cannot_exist(capsys, tmp_path):
    (tmp_path / "file").write_text("x")
    code = main(
        [
            "reproduce",
            "--quick",
            "--only",
            "foundation_counts",
            "--out",
            str(tmp_path / "file" / "sub"),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "cannot create" in err


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGINT"), reason="POSIX signals")
def test_ctrl_c_stops_a_long_simulation():
    import signal
    import subprocess
    import sys
    import time

    # About 80 million packet-stage events (several seconds); Ctrl-C after
    # the run has started must raise KeyboardInterrupt at once.
    src = (
        "import wafercoll as wc\n"
        "t = wc.topology.mesh(9, 9)\n"
        "s = wc.build('generic_ring_allreduce', topology=t, size_bytes=1 << 30)\n"
        "print('ready', flush=True)\n"
        "wc.simulate(s, t, wc.NetworkModel(25e9, packet_bytes=4096))\n"
        "print('finished', flush=True)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", src],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        p.kill()
    assert "finished" not in out
    assert "KeyboardInterrupt" in err
    assert elapsed < 5.0


@pytest.mark.parametrize("name", ["wafer_xy_allreduce", "wafer_2d_allreduce"])
def test_wafer_2d_builders_refuse_huge_block_counts_up_front(name):
    import time

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"use wavelets_per_block >= (\d+)") as info:
        wc.build(
            name,
            topology=wc.wafer.wafer_grid(5, 5),
            size_bytes=2**31,
            wavelets_per_block=5,
        )
    assert time.perf_counter() - t0 < 1.0  # refused before building anything
    import re

    least = int(re.search(r">= (\d+)$", str(info.value)).group(1))
    B, pes = 2**31 // 4, 25
    assert 2 * (pes - 1) * -(-B // least) <= 1 << 26  # the advice fits
    assert 2 * (pes - 1) * -(-B // (least - 1)) > 1 << 26  # and is the smallest


def test_options_cannot_contradict_the_topology():
    t = wc.topology.torus(4, 8)
    with pytest.raises(
        ValueError, match=r"dims = \(3, 5\) contradicts the topology's 4x8 grid"
    ):
        wc.build("torus_swing_bo_allreduce", topology=t, size_bytes=4096, dims=(3, 5))
    assert (
        wc.build(
            "torus_swing_bo_allreduce", topology=t, size_bytes=4096, dims=(4, 8)
        ).num_ranks
        == 32
    )


def test_block_sizes_beyond_int64_are_value_errors():
    with pytest.raises(ValueError, match=r"block_bytes\[1\] must be <= "):
        wc.Schedule(2, [8, 2**63], "allreduce")
    doc = wc.build("generic_ring_allreduce", 2, 64).to_dict()
    doc["block_bytes"][0] = 2**63
    with pytest.raises((ValueError, wc.ScheduleError), match="block_bytes"):
        wc.Schedule.from_dict(doc)


def test_schedule_json_is_written_atomically(tmp_path, monkeypatch):
    s = wc.build("generic_ring_allreduce", 3, 3 * 64)
    f = tmp_path / "s.json"
    s.to_json(f)
    before = f.read_text()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    import wafercoll._util as util

    monkeypatch.setattr(util.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        wc.build("generic_ring_allreduce", 4, 4 * 64).to_json(f)
    assert f.read_text() == before  # the old file is intact
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]  # no temporary left
