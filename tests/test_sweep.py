"""wc.sweep: the same DataFrame serially, on a process pool and on Dask;
served from the cache the second time; resumed after being killed."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

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
