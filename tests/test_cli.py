"""The command line, run in-process through wafercoll.cli.main."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import wafercoll as wc
from wafercoll import units
from wafercoll._util import human_bytes, human_seconds
from wafercoll.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"wafercoll {wc.__version__}"


def test_version_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "wafercoll.cli", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wafercoll {wc.__version__}"


def test_python_dash_m_package(capsys):
    proc = subprocess.run(
        [sys.executable, "-m", "wafercoll", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert {a["name"] for a in json.loads(proc.stdout)} >= {
        "generic_ring_allreduce",
        "generic_rabenseifner_allreduce",
    }


def test_no_command_is_a_usage_error(capsys):
    code, out, err = run(capsys)
    assert code == 2
    assert out == ""
    assert "usage:" in err


def test_list_table_is_aligned(capsys):
    code, out, _ = run(capsys, "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["NAME", "COLLECTIVE", "FAMILIES", "PARAMETERS"]
    infos = wc.algorithms()
    assert len(lines) == 1 + len(infos)
    col = lines[0].index("COLLECTIVE")
    for line, info in zip(lines[1:], infos, strict=True):
        assert line.startswith(info.name + " ")
        assert line[col:].startswith(info.collective)
        assert line.endswith(info.source)
    broadcast = next(ln for ln in lines if ln.startswith("generic_binomial_broadcast"))
    assert "root=0" in broadcast


def test_list_json_matches_registry(capsys):
    code, out, _ = run(capsys, "list", "--format", "json")
    assert code == 0
    assert json.loads(out) == [a.to_dict() for a in wc.algorithms()]


@pytest.mark.parametrize("flag", ["--output", "-o"])
def test_build_writes_a_verified_round_trip(capsys, tmp_path, flag):
    path = tmp_path / "ring.json"
    code, out, err = run(
        capsys,
        "build",
        "generic_ring_allreduce",
        "--ranks",
        "6",
        "--size-bytes",
        "1MiB",
        flag,
        str(path),
    )
    assert code == 0, err
    assert out.count("\n") == 1 and str(path) in out
    loaded = wc.Schedule.from_json(path)
    expected = wc.build("generic_ring_allreduce", ranks=6, size_bytes=1 << 20)
    assert loaded.to_dict()["transfers"] == expected.to_dict()["transfers"]
    assert loaded.size_bytes == 1 << 20
    assert wc.verify(loaded).steps == 2 * (6 - 1)
    assert "60 transfers" in out and "10 steps" in out


def test_build_root_and_option(capsys, tmp_path):
    path = tmp_path / "b.json"
    argv = "build generic_binomial_broadcast -p 5 -s 64 --root 3 -o".split()
    code, _, err = run(capsys, *argv, str(path))
    assert code == 0, err
    assert wc.Schedule.from_json(path).root == 3
    argv = "build generic_binomial_reduce -p 5 -s 64 --option root=4 -o".split()
    code, _, err = run(capsys, *argv, str(path))
    assert code == 0, err
    assert wc.Schedule.from_json(path).root == 4


def test_verify_file_and_name(capsys, tmp_path):
    path = tmp_path / "r.json"
    wc.build("generic_rabenseifner_allreduce", ranks=12, size_bytes=4096).to_json(path)
    code, out, err = run(capsys, "verify", str(path))
    assert code == 0, err
    assert out.startswith("ok ") and "12 ranks" in out and "allreduce" in out
    code, out, err = run(
        capsys, "verify", "generic_recursive_doubling_allreduce", "-p", "5", "-s", "8"
    )
    assert code == 0, err
    # log2(4) + 2 folding steps
    assert "4 steps" in out


def _defective_schedule(tmp_path):
    s = wc.Schedule(ranks=2, block_bytes=[8], collective="allreduce")
    s.add_transfer(0, [1], [0], op="reduce")  # rank 0 never receives rank 1's data
    path = tmp_path / "bad.json"
    s.to_json(path)
    return path


def test_verify_defective_schedule_exits_1(capsys, tmp_path):
    path = _defective_schedule(tmp_path)
    code, out, err = run(capsys, "verify", str(path))
    assert code == 1
    assert out == ""
    assert err.startswith("error: ")
    assert "Traceback" not in err


@pytest.mark.parametrize("text", ["{not json", '{"ranks": 2}', "[]"])
def test_verify_malformed_file_exits_1(capsys, tmp_path, text):
    path = tmp_path / "m.json"
    path.write_text(text)
    code, _, err = run(capsys, "verify", str(path))
    assert code == 1
    assert err.startswith("error: ")


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ("build generic_ring_allreduce --ranks x --size-bytes 8 -o f", "invalid int"),
        ("build generic_ring_allreduce --size-bytes 8 -o f", "--ranks"),
        ("build nope --ranks 4 --size-bytes 8 -o f", "nope"),
        ("build generic_ring_allreduce --ranks 0 --size-bytes 8 -o f", "ranks"),
        ("build generic_ring_allreduce -p 4 -s 8 --root 1 -o f", "root"),
        ("build generic_ring_allreduce -p 4 -s 1XB -o f", "invalid size"),
        ("build generic_ring_allreduce -p 4 -s 8 --option x -o f", "key=value"),
        ("verify no_such_thing", "neither a file"),
        ("verify generic_ring_allreduc -p 4 -s 8", "did you mean"),
        ("verify generic_ring_allreduce", "--ranks"),
        ("reproduce --only no_such_experiment --out f", "foundation_counts"),
        ("frobnicate", "invalid choice"),
    ],
)
def test_argument_errors_exit_2_without_traceback(capsys, tmp_path, argv, needle):
    argv = [str(tmp_path / a) if a == "f" else a for a in argv.split()]
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err
    assert not any(tmp_path.iterdir()), "nothing may be written on a usage error"


def test_verify_file_refuses_build_options(capsys, tmp_path):
    path = tmp_path / "r.json"
    wc.build("generic_ring_allreduce", ranks=3, size_bytes=12).to_json(path)
    code, _, err = run(capsys, "verify", str(path), "--ranks", "3")
    assert code == 2
    assert "--ranks" in err


def test_build_unwritable_output_exits_1(capsys, tmp_path):
    code, _, err = run(
        capsys,
        "build",
        "generic_ring_allreduce",
        "-p",
        "3",
        "-s",
        "12",
        "-o",
        str(tmp_path / "no" / "x"),
    )
    assert code == 1
    assert err.startswith("error: cannot write")


def test_simulate_text_reports_the_closed_form(capsys):
    # Ring allreduce on a ring: 2 (p - 1) steps of alpha + lat + S / p / bw.
    p, size = 8, 1 << 20
    argv = f"simulate generic_ring_allreduce -t ring:{p} -s 1MiB --latency 1us --alpha 2e-6"
    argv = argv.split()
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    rows = dict(line.split(None, 1) for line in out.splitlines())
    assert rows["schedule"] == "generic_ring_allreduce"
    assert rows["topology"] == "ring(8)"
    expected = 2 * (p - 1) * (2e-6 + 1e-6 + size / p / 1e9)
    value, unit = rows["time_s"].split()
    scale = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}[unit]
    assert float(value) * scale == pytest.approx(expected, rel=5e-3)  # 3 digits
    assert rows["cycles"] == "-"
    assert rows["network"].startswith("default (latency 1 µs, bandwidth 1 GB/s)")
    assert int(rows["links_used"]) == p and int(rows["links"]) == 2 * p


@pytest.mark.parametrize(
    ("extra", "topology", "kwargs"),
    [
        (["-t", "ring"], wc.ring(6), {}),
        (
            "-t mesh:2x3 --packet 4KiB --switching store_and_forward".split(),
            wc.topology.mesh(2, 3),
            {"packet_bytes": 4096, "switching": "store_and_forward"},
        ),
        (
            "--topology torus:2x3 --bandwidth 2GB/s --gamma 1e-10 --ports 1".split(),
            wc.topology.torus(2, 3),
            {"bandwidth_Bps": 2e9, "gamma_s_per_byte": 1e-10, "ports": 1},
        ),
        ("-t line".split(), wc.line(6), {}),
    ],
)
def test_simulate_json_matches_simulate(capsys, extra, topology, kwargs):
    argv = [
        "simulate",
        "generic_rabenseifner_allreduce",
        "-p",
        "6",
        "-s",
        "96KiB",
        "--format",
        "json",
        *extra,
    ]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    got = json.loads(out)
    net = wc.machines.default_network(**kwargs)
    direct = wc.simulate(
        wc.build("generic_rabenseifner_allreduce", 6, 96 * 1024), topology, net
    )
    bound = wc.bounds.result_bound(direct)
    want = direct.summary()
    assert {k: got[k] for k in want} == want
    assert got["lower_bound_s"] == bound.time_s
    assert got["optimality_ratio"] == wc.bounds.optimality_ratio(direct)
    assert got["time_s"] == direct.time_s
    assert got["network"] == "default"
    # The default network has no latency: said on stderr.
    assert "warning: the default network has zero latency" in err


def test_simulate_with_the_router_engine_matches_simulate(capsys):
    argv = "simulate generic_ring_allreduce -t mesh:2x3 -s 96KiB --packet 4KiB"
    argv = [*argv.split(), "--engine", "routers", "--buffer-packets", "2"]
    code, out, err = run(capsys, *argv, "--format", "json")
    assert code == 0, err
    net = wc.machines.default_network(packet_bytes=4096)
    s = wc.build("generic_ring_allreduce", 6, 96 * 1024)
    top = wc.topology.mesh(2, 3)
    direct = wc.simulate(s, top, net, engine="routers", buffer_packets=2)
    assert json.loads(out)["time_s"] == direct.time_s


def test_simulate_schedule_file(capsys, tmp_path):
    path = tmp_path / "b.json"
    s = wc.build("generic_binomial_broadcast", ranks=5, size_bytes=4096, root=2)
    s.to_json(path)
    argv = ["simulate", "--schedule", str(path), "-t", "ring", "--format", "json"]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    net = wc.NetworkModel(1e9)
    assert json.loads(out)["time_s"] == wc.simulate(s, wc.ring(5), net).time_s
    code, _, err = run(capsys, *argv, "-p", "5")
    assert code == 2 and "--ranks" in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            "simulate generic_ring_allreduce -p 4 -s 8 --topology hex:4",
            "invalid topology 'hex:4'",
        ),
        ("simulate generic_ring_allreduce -p 4 -s 8 --topology mesh:4", "mesh:RxC"),
        (
            "simulate generic_ring_allreduce -p 4 -s 8 --topology torus:2x",
            "invalid topology",
        ),
        (
            "simulate generic_ring_allreduce -p 4 -s 8 --topology ring:-3",
            "invalid topology",
        ),
        (
            "simulate generic_ring_allreduce -p 4 -s 8 --topology mesh",
            "invalid topology",
        ),
        ("simulate generic_ring_allreduce -p 4 -s 8 --topology mesh:0x4", "rows"),
        ("simulate generic_ring_allreduce -p 8 -s 8 --topology mesh:2x3", "endpoints"),
        ("simulate generic_ring_allreduce -t ring:4 -s 8 --bandwidth 0", "bandwidth"),
        ("simulate generic_ring_allreduce -t ring:4 -s 8 --packet 1XB", "--packet"),
        (
            "simulate generic_ring_allreduce -t ring:4 -s 8 --switching wormhole",
            "invalid choice",
        ),
        ("simulate generic_ring_allreduce -t ring:4 -s 8 --ports 0", "ports"),
        ("simulate -t ring:4", "NAME"),
        ("simulate generic_ring_allreduce -t ring -s 8", "ring:N"),
        ("simulate generic_ring_allreduce -t ring:4", "--size-bytes"),
        (
            "simulate generic_ring_allreduce -t ring:4 -s 8 --buffer-packets 4",
            'engine="routers" only',
        ),
        (
            "simulate generic_ring_allreduce -t ring:4 -s 8 --engine routers "
            "--buffer-packets 0",
            "buffer_packets must be in",
        ),
    ],
)
def test_simulate_argument_errors_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv.split())
    assert code == 2
    assert out == ""
    assert needle in err
    assert "Traceback" not in err


# -- topologies, presets and units (every family reachable from the CLI) -----------
@pytest.mark.parametrize(
    ("argv", "topology", "network"),
    [
        (
            "simulate mesh_tto_allreduce --topology mesh:3x3 -s 96KiB "
            "--network mcm_table_ii",
            "mesh(3x3)",
            "mcm_table_ii",
        ),
        ("simulate mesh_tto_allreduce -t mcm_table_ii:3x3 -s 96KiB", "mesh(3x3)", None),
        (
            "simulate torus_swing_bo_allreduce -t wormhole_n150 -s 64KiB",
            "wormhole_n150",
            None,
        ),
        (
            "simulate cluster_nap_allreduce -t blue_waters:4x4 -s 8B --option ppn=4",
            "cluster(4 nodes x 4)",
            "blue_waters",
        ),
        ("simulate wafer_xy_allreduce -t wse2_grid:4x4 -s 64B", "mesh(4x4)", "wse2"),
        ("simulate wafer_chain_reduce -t wse2_row:16 -s 64B", "line(16)", "wse2"),
    ],
)
def test_simulate_builds_for_the_topology_it_runs_on(capsys, argv, topology, network):
    import wafercoll as wc

    code, out, err = run(capsys, *argv.split(), "--format", "json")
    assert code == 0, err
    got = json.loads(out)
    assert got["topology"].startswith(topology)
    if network is not None:
        assert got["network"] == network
    # the same through the API: the schedule built for that machine
    words = argv.split()
    name = words[1]
    spec = words[words.index("-t" if "-t" in words else "--topology") + 1]
    topo, _ = wc.machines.resolve(spec, size_bytes=8)
    assert topo.name.startswith(topology)
    assert name in {a.name for a in wc.algorithms()}


def test_swing_on_a_torus_spec_builds_the_torus_schedule(capsys, tmp_path):
    import wafercoll as wc

    path = tmp_path / "s.json"
    code, _, err = run(
        capsys,
        *"build torus_swing_lo_allreduce --topology torus:4x4 -s 1KiB -o".split(),
        str(path),
    )
    assert code == 0, err
    want = wc.build(
        "torus_swing_lo_allreduce", topology=wc.topology.torus(4, 4), size_bytes=1024
    )
    assert wc.Schedule.from_json(path).to_json() == want.to_json()
    ring = wc.build("torus_swing_lo_allreduce", ranks=16, size_bytes=1024)
    assert ring.to_json() != want.to_json()  # the 1x16 ring is another schedule


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        ("simulate cluster_nap_allreduce -p 16 -s 8 --option ppn=4", "for cluster"),
        ("simulate mesh_tto_allreduce -t torus:3x3 -s 96KiB", "mesh"),
        ("simulate generic_ring_allreduce -p 4 -s 1K", "ambiguous"),
        ("simulate generic_ring_allreduce -p 4 -s 1M", "ambiguous"),
        ("simulate generic_ring_allreduce -t ring:4 -s 8 --preset nope", "unknown"),
        ("simulate generic_ring_allreduce -t ring:4 -s 8 --network hockney", "param"),
        ("simulate generic_ring_allreduce -p 4 -s 8 -t nowhere:3", "invalid topology"),
        ("simulate generic_ring_allreduce -p 9 -s 8 -t mesh:2x2", "endpoints"),
        ("info nope_nope_allreduce", "unknown algorithm"),
    ],
)
def test_simulate_refuses_mismatches_with_a_message(capsys, argv, match):
    code, _, err = run(capsys, *argv.split())
    assert code == 2
    assert match in err and "Traceback" not in err


def test_schedule_file_on_a_smaller_topology_is_refused(capsys, tmp_path):
    import wafercoll as wc

    path = tmp_path / "s.json"
    wc.build("generic_ring_allreduce", ranks=9, size_bytes=72).to_json(path)
    code, _, err = run(capsys, "simulate", "--schedule", str(path), "-t", "mesh:2x2")
    assert code == 2 and "9 ranks" in err
    code, _, err = run(capsys, "simulate", "--schedule", str(path))
    assert code == 2 and "needs --topology" in err and "mesh:4x4" in err


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64", 64),
        ("8B", 8),
        ("1KiB", 1024),
        ("1KB", 1000),
        ("1kB", 1000),
        ("3MiB", 3 << 20),
        ("3MB", 3_000_000),
        ("2GiB", 2 << 30),
        ("1GB", 10**9),
    ],
)
def test_sizes_decimal_and_binary(text, value):
    assert units.parse_size(text) == value


def test_human_units():
    assert human_bytes(64 << 20) == "64.0 MiB"
    assert human_bytes(100) == "100 B"
    assert human_seconds(5.04e-3) == "5.04 ms"
    assert human_seconds(2.5) == "2.5 s"
    assert human_seconds(3e-7) == "300 ns"


def test_info_shows_parameters_and_source(capsys):
    code, out, err = run(capsys, "info", "torus_swing_bo_allreduce")
    assert code == 0, err
    assert "collective  allreduce" in out and "fallback = 'auto'" in out
    code, out, _ = run(capsys, "info", "mesh_tto_reduce_scatter", "--format", "json")
    rec = json.loads(out)
    assert rec["collective"] == "reduce_scatter" and "chunk_bytes" in rec["parameters"]


# -- one output convention, units, helpful errors ----------------------------------
def test_dash_output_writes_to_stdout(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = "build generic_ring_allreduce -p 4 -s 64 -o -".split()
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert wc.Schedule.from_dict(json.loads(out)).num_ranks == 4
    assert "wrote -" in err  # the message does not mix with the data
    argv = "export generic_ring_allreduce -p 4 -s 64 --format goal -o -".split()
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "send " in out
    assert not (tmp_path / "-").exists()  # no file named "-"
    code, _, err = run(capsys, *argv[:-4], "--format", "chakra", "-o", "-")
    assert code == 2 and "PREFIX" in err


@pytest.mark.parametrize("fmt", ["json", "csv", "text"])
def test_simulate_formats(capsys, tmp_path, fmt):
    argv = f"simulate generic_ring_allreduce -t ring:4 -s 4KiB --format {fmt}"
    code, out, err = run(capsys, *argv.split(), "--latency", "1us")
    assert code == 0, err
    if fmt == "json":
        assert json.loads(out)["topology"] == "ring(4)"
    elif fmt == "csv":
        head, row = out.splitlines()
        assert head.split(",")[:3] == ["schedule", "topology", "network"]
        assert row.split(",")[1] == "ring(4)"
    else:
        assert out.splitlines()[1].split() == ["topology", "ring(4)"]
    path = tmp_path / f"r.{fmt}"
    code, out, err = run(capsys, *argv.split(), "-o", str(path))
    assert code == 0 and out == "" and path.read_text().strip()


def test_list_and_advise_formats(capsys):
    code, out, _ = run(capsys, "list", "--format", "json")
    assert code == 0 and {a["name"] for a in json.loads(out)} >= {
        "generic_ring_allreduce"
    }
    argv = "advise -t ring:4 -s 1KiB --format csv".split()
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert out.splitlines()[0].startswith("rank,name,status")


@pytest.mark.parametrize(
    ("text", "parse", "value"),
    [
        ("25GB/s", units.parse_rate, 25e9),
        ("1e9", units.parse_rate, 1e9),
        ("100Gbit/s", units.parse_rate, 12.5e9),
        ("2GiB/s", units.parse_rate, 2.0 * (1 << 30)),
        ("1us", units.parse_time, 1e-6),
        ("500ns", units.parse_time, 5e-7),
        ("2e-6", units.parse_time, 2e-6),
        ("0.5ms", units.parse_time, 5e-4),
    ],
)
def test_units(text, parse, value):
    assert parse(text) == value


def test_units_in_simulate_match_plain_numbers(capsys):
    base = "simulate generic_ring_allreduce -t ring:4 -s 64KiB --format json".split()
    code, out, _ = run(capsys, *base, "--bandwidth", "25GB/s", "--latency", "1us")
    code2, out2, _ = run(capsys, *base, "--bandwidth", "2.5e10", "--latency", "1e-6")
    assert code == code2 == 0
    assert json.loads(out)["time_s"] == json.loads(out2)["time_s"]


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--bandwidth", "25GB"), ("--bandwidth", "fast"), ("--latency", "1 parsec")],
)
def test_bad_units_name_the_flag(capsys, flag, value):
    argv = "simulate generic_ring_allreduce -t ring:4 -s 64".split()
    code, out, err = run(capsys, *argv, flag, value)
    assert code == 2 and out == ""
    assert f"argument {flag}" in err and f"{flag}: invalid" in err
    assert "Traceback" not in err


def test_simulate_without_topology_says_how_to_name_one(capsys):
    code, out, err = run(capsys, *"simulate generic_ring_allreduce -p 4 -s 64".split())
    assert code == 2 and out == ""
    assert "--topology" in err and "ring:4" in err and "mesh:4x4" in err


def test_default_network_is_named_with_its_latency(capsys):
    argv = "simulate generic_ring_allreduce -t ring:4 -s 64".split()
    code, out, err = run(capsys, *argv)
    assert code == 0
    assert "default (latency 0 ns, bandwidth 1 GB/s); pass --preset" in out
    assert err.startswith("warning: the default network has zero latency")
    code, out, err = run(capsys, *argv, "--preset", "mcm_table_ii")
    assert code == 0 and "warning" not in err and "mcm_table_ii (latency" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        ("simulate generic_ring_allreduc -t ring:4 -s 64", "'generic_ring_allreduce'"),
        ("info generic_ring_allreduc", "did you mean 'generic_ring_allreduce'"),
        ("simulate generic_ring_allreduce -t meshh:3x3 -s 64", "did you mean 'mesh'"),
        ("simulate generic_ring_allreduce -t ring:4 -s 8 --preset mcm_tabel_ii", "did"),
        ("reproduce --only torus_hop", "did you mean 'torus_hops'"),
    ],
)
def test_did_you_mean(capsys, argv, needle):
    code, _, err = run(capsys, *argv.split())
    assert code == 2
    assert needle in err and "did you mean" in err
    assert err.count("\n") == 1  # one line, not the list of every algorithm


def test_advise_numbers_rows_consecutively(capsys):
    code, out, err = run(capsys, *"advise -t mesh:3x3 -s 4KiB".split())
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("#")) + 1
    numbers = [ln.split()[0] for ln in lines[start:] if ln[:1].isdigit()]
    assert numbers == [str(i) for i in range(1, len(numbers) + 1)]
    assert "not listed" in lines[-1]  # other families were hidden, not numbered


def test_mpi_is_a_subcommand(capsys):
    code, out, _ = run(capsys, "mpi", "--help")
    assert code == 0 and "bench" in out and "pingpong" in out and "fit" in out
    code, out, _ = run(capsys, "mpi", "bench", "--help")
    assert code == 0 and "--sizes" in out
    code, _, err = run(capsys, "mpi", "bench", "--sizes", "1K")
    assert code == 2 and "--sizes: ambiguous size" in err


def test_python_dash_m_mpi_is_the_same_command():
    proc = subprocess.run(
        [sys.executable, "-m", "wafercoll.mpi", "fit", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pingpong_csv" in proc.stdout


def test_sweeps_does_not_import_the_command_line():
    import ast
    import pathlib

    import wafercoll.sweeps

    tree = ast.parse(pathlib.Path(wafercoll.sweeps.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert node.module not in ("cli", "wafercoll.cli"), ast.dump(node)
            assert "cli" not in [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            assert all("cli" not in a.name.split(".") for a in node.names)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
@pytest.mark.parametrize(
    ("machine", "ready"),
    [
        # A simulation of a minute or more, on the advisor's thread pool.
        (
            ["-t", "torus:16x16", "-c", "broadcast", "-s", "256MiB", "--packet", "64"],
            "advise: simulating",
        ),
        # Packing spanning trees of a 1024-node mesh by LP: minutes of builds.
        (["-t", "mesh:32x32", "-s", "16MiB"], "zero latency"),
    ],
    ids=["simulating", "building"],
)
def test_ctrl_c_stops_advise_on_a_large_machine(tmp_path, machine, ready):
    from interrupting import BUDGET_S, interrupt

    out = tmp_path / "advice.txt"
    cmd = [sys.executable, "-m", "wafercoll", "advise", *machine, "-o", str(out)]
    r = interrupt(cmd, lambda err: ready in err, settle_s=1.0, cwd=tmp_path)
    assert r.returncode == 130, r.stderr
    assert r.seconds < BUDGET_S, (r.seconds, r.stderr)
    assert not r.leftover
    assert "wafercoll advise: interrupted" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert os.listdir(tmp_path) == []  # no output, whole or partial


def test_simulate_sprays_packets_with_spray(capsys):
    base = ("simulate", "nccl_ring_allreduce", "--topology", "dgx_h100")
    base += ("--size-bytes", "64MiB", "--packet", "64KiB", "--format", "json")
    code, out, _ = run(capsys, *base)
    assert code == 0
    one = json.loads(out)["busbw_Bps"]
    code, out, _ = run(capsys, *base, "--spray")
    assert code == 0
    many = json.loads(out)["busbw_Bps"]
    # One NVSwitch chip per route (100 GB/s) against all 18 NVLinks (450).
    assert one == pytest.approx(100e9, rel=1e-3)
    assert 400e9 < many <= 450e9 * (1 + 1e-9)
    code, _, err = run(capsys, *base, "--spray", "--ecmp")
    assert code == 2 and "exclude" in err


def test_simulate_gives_the_synthesizer_the_network_it_runs_on(capsys):
    # Under --spray the synthesized allgather's LP takes the sprayed loads,
    # as wc.advise builds it; --option spray=false overrides.
    base = ("simulate", "synth_treepack_allgather", "--topology", "dgx_h100_x16_rail:2")
    base += (
        "--size-bytes",
        "64MiB",
        "--packet",
        "64KiB",
        "--spray",
        "--format",
        "json",
    )
    code, out, _ = run(capsys, *base)
    assert code == 0
    planned = json.loads(out)["time_s"]
    code, out, _ = run(capsys, *base, "--option", "spray=false")
    assert code == 0
    unplanned = json.loads(out)["time_s"]
    topo, net = wc.machines.resolve("dgx_h100_x16_rail:2")
    net = net.replace(spray=True, packet_bytes=1 << 16)
    s = wc.build(
        "synth_treepack_allgather", size_bytes=64 << 20, topology=topo, spray=True
    )
    assert planned == pytest.approx(wc.simulate(s, topo, net).time_s, rel=1e-12)
    assert planned < 0.5 * unplanned
