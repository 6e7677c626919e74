"""wc.sweep: the same DataFrame serially, on a process pool and on Dask;
served from the cache the second time; resumed after being killed."""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import wafercoll as wc

GRID = {
    "algorithm": [
        "generic_ring_allreduce",
        "generic_rabenseifner_allreduce",
        "torus_ring_bidir_allreduce",
    ],
    "topology": ["ring:8", "torus:3x3"],
    "size_bytes": [1 << 12, 1 << 16, 1 << 20, 1 << 22],
}


def test_pool_and_dask_give_the_serial_frame_and_the_cache_serves_it(tmp_path) -> None:
    serial = wc.sweep(GRID, jobs=1, cache=None, progress=False)
    assert len(serial) == 24 and (serial["status"] == "ok").all()
    assert list(serial.columns) == list(wc.sweeps.COLUMNS)
    # Every row is what a direct simulation gives.
    topo, net = wc.ring(8), wc.NetworkModel(1e9)
    s = wc.build("generic_ring_allreduce", size_bytes=1 << 20, topology=topo)
    row = serial[(serial.topology == "ring(8)") & (serial.size_bytes == 1 << 20)].iloc[
        0
    ]
    assert row.time_s == wc.simulate(s, topo, net).time_s
    assert row.optimality_ratio == pytest.approx(2.0)

    pool = wc.sweep(GRID, jobs=2, cache=tmp_path, progress=False)
    pd.testing.assert_frame_equal(pool, serial)
    assert pool.attrs == {"computed": 24, "cached": 0}
    again = wc.sweep(GRID, jobs=2, cache=tmp_path, progress=False)
    pd.testing.assert_frame_equal(again, serial)
    assert again.attrs == {"computed": 0, "cached": 24}

    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        dask = wc.sweep(GRID, scheduler=client, cache=None, progress=False)
    pd.testing.assert_frame_equal(dask, serial)


SLOW = textwrap.dedent(
    """
    import sys
    import wafercoll as wc

    net = wc.NetworkModel(1e9, packet_bytes=1024)
    grid = {
        "algorithm": ["generic_ring_allreduce", "generic_rabenseifner_allreduce"],
        "topology": ["ring:32"],
        "size_bytes": [(32 << 20) + 1024 * k for k in range(12)],
        "network": [net],
    }
    if __name__ == "__main__":
        wc.sweep(grid, jobs=1, cache=sys.argv[1], progress=False)
    """
)


def _done(cache: str) -> int:
    return len(glob.glob(os.path.join(cache, "**", "output.pkl"), recursive=True))


def test_a_killed_sweep_computes_only_the_missing_points(tmp_path) -> None:
    script = tmp_path / "slow.py"
    script.write_text(SLOW)
    cache = str(tmp_path / "cache")
    proc = subprocess.Popen([sys.executable, str(script), cache])
    deadline = time.monotonic() + 120
    while _done(cache) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = _done(cache)
    assert 0 < finished < 24, finished
    namespace: dict = {}
    exec(compile(SLOW, "slow.py", "exec"), namespace)
    df = wc.sweep(namespace["grid"], jobs=1, cache=cache, progress=False)
    assert df.attrs == {"computed": 24 - finished, "cached": finished}
    assert (df["status"] == "ok").all() and _done(cache) == 24


@pytest.mark.parametrize(
    ("grid", "error", "text"),
    [
        ({"algorithm": ["x"], "topology": ["ring:4"]}, ValueError, "size_bytes"),
        (
            {
                "algorithm": ["x"],
                "topology": ["ring:4"],
                "size_bytes": [1],
                "bogus": [1],
            },
            ValueError,
            "bogus",
        ),
        (
            {
                "algorithm": ["generic_ring_allreduce"],
                "topology": ["blob:4"],
                "size_bytes": [64],
            },
            ValueError,
            "blob",
        ),
        (
            {
                "algorithm": ["generic_ring_allreduce"],
                "topology": ["ring:4"],
                "size_bytes": [64],
                "network": ["nope"],
            },
            ValueError,
            "preset",
        ),
        (
            {
                "algorithm": ["generic_ring_allreduce"],
                "topology": ["ring:4"],
                "size_bytes": [0],
            },
            ValueError,
            "size_bytes",
        ),
        ("ring", TypeError, "grid"),
        ([], ValueError, "empty"),
    ],
)
def test_malformed_grids_are_refused(grid, error, text) -> None:
    with pytest.raises(error, match=text):
        wc.sweep(grid, jobs=1, cache=None, progress=False)


def test_points_that_do_not_apply_are_rows_not_errors() -> None:
    df = wc.sweep(
        [
            {"algorithm": "mesh_tto_allreduce", "topology": "ring:4", "size_bytes": 64},
            {
                "algorithm": "generic_ring_allreduce",
                "topology": "ring:4",
                "size_bytes": 64,
                "options": {},
            },
        ],
        jobs=1,
        cache=None,
        progress=False,
    )
    assert list(df["status"]) == ["not applicable", "ok"]
    assert "mesh" in df["error"][0]


def test_cli_sweep_writes_the_csv_and_resumes(tmp_path, capsys) -> None:
    from wafercoll.cli import main

    spec = tmp_path / "grid.toml"
    spec.write_text(
        'algorithm = ["generic_ring_allreduce", "generic_rabenseifner_allreduce"]\n'
        'topology = ["ring:6"]\n'
        'size_bytes = ["1KiB", "64KiB", 1048576]\n'
        'network = ["ideal"]\n'
    )
    out, cache = tmp_path / "out.csv", tmp_path / "cache"
    args = ["sweep", str(spec), "-o", str(out), "--cache", str(cache), "-j", "1"]
    assert main(args) == 0
    assert "6 computed" in capsys.readouterr().out
    df = pd.read_csv(out)
    assert list(df["size_bytes"]) == [1024, 65536, 1048576] * 2
    assert main(args) == 0
    assert "6 from the cache" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'size_bytes = ["1 lightyear"]\nalgorithm = ["x"]\ntopology = ["ring:4"]\n'
    )
    assert main(["sweep", str(bad), "--no-cache"]) == 2
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 1


# -- Ctrl-C -------------------------------------------------------------------------

#: Two fast points first, then slow ones (several seconds each: a 32-rank ring
#: under the WSE-2 preset), so that "1/8" on the progress bar means that the
#: workers are computing slow points.
SLOW_TOML = (
    'algorithm = ["generic_ring_allreduce", "generic_rabenseifner_allreduce"]\n'
    'topology = ["ring:32"]\n'
    'size_bytes = ["1KiB", "4MiB", "5MiB", "6MiB"]\n'
    'network = ["wse2"]\n'
)


def _cache_files(cache) -> list[str]:
    return sorted(
        os.path.relpath(p, cache)
        for p in glob.glob(os.path.join(cache, "**", "*"), recursive=True)
        if os.path.isfile(p)
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
@pytest.mark.parametrize(("cached", "group"), [(True, False), (False, True)])
def test_ctrl_c_stops_a_sweep_on_a_pool_at_once(tmp_path, cached, group) -> None:
    from interrupting import BUDGET_S, interrupt

    spec, out, cache = tmp_path / "grid.toml", tmp_path / "out.csv", tmp_path / "c"
    spec.write_text(SLOW_TOML)
    cmd = [sys.executable, "-m", "wafercoll", "sweep", str(spec), "-j", "2"]
    cmd += ["-o", str(out)] + (["--cache", str(cache)] if cached else ["--no-cache"])
    r = interrupt(cmd, lambda err: "1/8" in err, group=group, cwd=tmp_path)
    assert r.returncode == 130, r.stderr
    assert r.seconds < BUDGET_S, (r.seconds, r.stderr)
    assert not r.leftover, "a worker outlived the interrupt"
    assert "interrupted" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists() and os.listdir(tmp_path) == ["grid.toml"] + (
        ["c"] if cached else []
    )
    if cached:
        # Only whole entries: every file is one of joblib's, none half-written,
        # and the finished points are served from the cache.
        files = _cache_files(cache)
        assert files and all(
            os.path.basename(f) in ("output.pkl", "metadata.json", "func_code.py")
            for f in files
        ), files
        namespace = read_grid_text(tmp_path / "grid.toml")
        df = wc.sweep(namespace, jobs=1, cache=cache, progress=False)
        assert df.attrs["cached"] >= 1 and (df["status"] == "ok").all()


def read_grid_text(path):
    grid = wc.sweeps.read_grid(path)
    grid["size_bytes"] = grid["size_bytes"][:1]  # the fast points only
    return grid


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="POSIX signals")
def test_ctrl_c_stops_a_dask_sweep_and_cancels_its_tasks(tmp_path) -> None:
    import threading

    distributed = pytest.importorskip("distributed")
    grid = wc.sweeps.read_grid(_write(tmp_path / "grid.toml", SLOW_TOML))
    grid["size_bytes"] = grid["size_bytes"][1:]  # slow points only
    with (
        distributed.LocalCluster(
            n_workers=1, processes=True, threads_per_worker=2, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        main = threading.main_thread().ident
        timer = threading.Timer(2.0, signal.pthread_kill, (main, signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            wc.sweep(grid, scheduler=client, cache=None, progress=False)
        assert time.monotonic() - start < 2.0 + 1.0
        timer.cancel()
        # Cancelled: the scheduler forgets every task of the sweep.
        deadline = time.monotonic() + 10
        while client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks)):
            assert time.monotonic() < deadline, "the sweep's tasks were not cancelled"
            time.sleep(0.1)


def _write(path, text):
    path.write_text(text)
    return path


# -- errors that name what they are about -------------------------------------------

SMALL = {
    "algorithm": ["generic_ring_allreduce", "generic_rabenseifner_allreduce"],
    "topology": ["ring:8"],
    "size_bytes": [1 << 12, 1 << 16, 1 << 20, 1 << 22],
}
SMALL_TOML = (
    'algorithm = ["generic_ring_allreduce", "generic_rabenseifner_allreduce"]\n'
    'topology = ["ring:8"]\n'
    'size_bytes = ["4KiB", "64KiB", "1MiB", "4MiB"]\n'
)


def _cli(capsys, *argv) -> tuple[int, str]:
    from wafercoll.cli import main

    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def test_a_cache_that_is_a_file_is_named(tmp_path, capsys) -> None:
    path = tmp_path / "file"
    path.write_text("not a directory")
    with pytest.raises(wc.sweeps.CacheError, match=f"{path} is a file") as info:
        wc.sweep(SMALL, jobs=1, cache=path, progress=False)
    assert isinstance(info.value, OSError) and info.value.path == str(path)
    spec = _write(tmp_path / "grid.toml", SMALL_TOML)
    code, text = _cli(capsys, "sweep", str(spec), "--cache", str(path), "-j", "1")
    assert code == 1
    assert f"error: --cache: the sweep cache {path} is a file" in text
    assert "--no-cache" in text and "Traceback" not in text
    assert not (tmp_path / "sweep.csv").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_cache_under_proc_is_named() -> None:
    with pytest.raises(wc.sweeps.CacheError, match="/proc/wafercoll-cache cannot be"):
        wc.sweep(SMALL, jobs=1, cache="/proc/wafercoll-cache", progress=False)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root writes into read-only directories",
)
def test_an_unwritable_cache_is_named(tmp_path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        for where in (ro, ro / "sub"):
            with pytest.raises(wc.sweeps.CacheError, match=f"{where} cannot be"):
                wc.sweep(SMALL, jobs=1, cache=where, progress=False)
    finally:
        ro.chmod(0o755)


def _entries(cache) -> list[str]:
    return sorted(glob.glob(os.path.join(cache, "**", "output.pkl"), recursive=True))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_corrupted_cache_entry_is_computed_again_and_counted(
    tmp_path, capsys, damage
) -> None:
    spec = _write(tmp_path / "grid.toml", SMALL_TOML)
    cache, out = tmp_path / "cache", tmp_path / "out.csv"
    argv = ["sweep", str(spec), "--cache", str(cache), "-o", str(out), "-j", "1"]
    assert _cli(capsys, *argv)[0] == 0
    first = pd.read_csv(out)
    entries = _entries(cache)
    assert len(entries) == 8
    data = Path(entries[3]).read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "garbage": b"\x00" * 64}
    with open(entries[3], "wb") as fh:
        fh.write(damaged.get(damage, b""))
    code, text = _cli(capsys, *argv)
    assert code == 0
    assert "8 points (1 computed, 7 from the cache)" in text, text
    assert "Traceback" not in text and "Exception while loading" not in text, text
    pd.testing.assert_frame_equal(pd.read_csv(out), first)
    # The entry was written again, whole.
    assert _cli(capsys, *argv)[1].count("(0 computed, 8 from the cache)") == 1
    df = wc.sweep(SMALL, jobs=1, cache=cache, progress=False)
    assert df.attrs == {"computed": 0, "cached": 8}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")
def test_a_killed_worker_is_named_with_the_points_left(tmp_path) -> None:
    spec = _write(tmp_path / "grid.toml", SLOW_TOML)
    cache = tmp_path / "cache"
    cmd = [sys.executable, "-m", "wafercoll", "sweep", str(spec), "-j", "2"]
    proc = subprocess.Popen(
        [*cmd, "--cache", str(cache), "-o", str(tmp_path / "out.csv")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _entries(cache):  # a fast point is done: the workers are up
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as fh:
            children = [int(pid) for pid in fh.read().split()]
        workers = []
        for pid in children:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"spawn_main" in fh.read():
                    workers.append(pid)
        assert len(workers) == 2, children
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 1, err
    assert (
        f"error: a sweep worker process died (pid {workers[0]} killed by signal 9 "
        "(SIGKILL)); " in err
    ), err
    assert re.search(r"; [67] of 8 points did not finish \(generic_", err), err
    assert f"the finished points are in the cache {cache}" in err
    assert "Traceback" not in err and "BrokenProcessPool" not in err, err


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_named_at_once(tmp_path, capsys) -> None:
    pytest.importorskip("distributed")
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    start = time.monotonic()
    with pytest.raises(wc.sweeps.SchedulerError, match=f"at {address}") as info:
        wc.sweep(SMALL, scheduler=address, cache=None, progress=False)
    assert time.monotonic() - start < 5.0
    assert info.value.address == address and isinstance(info.value, ConnectionError)
    spec = _write(tmp_path / "grid.toml", SMALL_TOML)
    code, text = _cli(capsys, "sweep", str(spec), "--no-cache", "--scheduler", address)
    assert code == 1
    assert f"error: --scheduler: cannot reach the Dask scheduler at {address}" in text
    assert "Traceback" not in text


def test_a_silent_scheduler_is_named_after_the_timeout(monkeypatch) -> None:
    import socket

    pytest.importorskip("distributed")
    monkeypatch.setattr(wc.sweeps, "SCHEDULER_TIMEOUT_S", 1.0)
    with socket.socket() as server:  # accepts connections, never answers
        server.bind(("127.0.0.1", 0))
        server.listen()
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        start = time.monotonic()
        with pytest.raises(
            wc.sweeps.SchedulerError,
            match=f"at {address} \\(it accepted the connection but did not answer "
            "within 1 s",
        ):
            wc.sweep(SMALL, scheduler=address, cache=None, progress=False)
        assert time.monotonic() - start < 1.0 + 5.0


@pytest.mark.parametrize(
    ("scheduler", "error", "text"),
    [
        ("", ValueError, "scheduler must be a Dask scheduler address"),
        ("   ", ValueError, "scheduler must be a Dask scheduler address"),
        ("tcp://host:port", ValueError, "scheduler 'tcp://host:port' is not an ad"),
        (42, TypeError, "scheduler must be an address"),
    ],
)
def test_a_scheduler_that_is_no_address_is_refused(scheduler, error, text) -> None:
    pytest.importorskip("distributed")
    with pytest.raises(error, match=text):
        wc.sweep(SMALL, scheduler=scheduler, cache=None, progress=False)


def test_an_empty_scheduler_flag_is_an_error(tmp_path, capsys) -> None:
    spec = _write(tmp_path / "grid.toml", SMALL_TOML)
    out = tmp_path / "out.csv"
    argv = ["sweep", str(spec), "--no-cache", "-o", str(out), "--scheduler", ""]
    code, text = _cli(capsys, *argv)
    assert code == 2
    assert "error: --scheduler needs a Dask scheduler address" in text
    assert not out.exists()


def test_a_grid_file_that_is_not_utf8_is_named(tmp_path, capsys) -> None:
    from wafercoll.io import FormatError

    bad = tmp_path / "grid.toml"
    bad.write_bytes(
        SMALL_TOML.encode() + 'options = [{label = "caf\xe9"}]\n'.encode("latin-1")
    )
    with pytest.raises(FormatError, match=f"{bad}, line 4: not UTF-8 text") as info:
        wc.sweeps.read_grid(bad)
    assert info.value.path == str(bad) and info.value.line == 4
    code, text = _cli(capsys, "sweep", str(bad), "--no-cache")
    assert code == 2 and f"{bad}, line 4: not UTF-8 text" in text
    assert "Traceback" not in text
    # UTF-8 with a byte-order mark is UTF-8.
    bom = _write(tmp_path / "bom.toml", "\ufeff" + SMALL_TOML)
    assert wc.sweeps.read_grid(bom)["size_bytes"] == SMALL["size_bytes"]
