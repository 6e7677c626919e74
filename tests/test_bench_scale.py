"""bench/scale.py's repeated runs: medians, ranges and peaks of a case."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from script_module import load_script

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "scale.py"


def load_scale() -> ModuleType:
    return load_script(SCRIPT, "bench_scale")


def test_combine_takes_medians_ranges_and_largest_peaks() -> None:
    scale = load_scale()
    runs = [
        {"transfers": 10, "simulate_s": s, "total_s": s + 1, "peak_gb": p}
        for s, p in ((3.0, 0.5), (1.0, 0.7), (2.0, 0.6))
    ]
    row = scale._combine(runs)
    assert row["simulate_s"] == 2.0
    assert (row["simulate_s_min"], row["simulate_s_max"]) == (1.0, 3.0)
    assert row["total_s"] == 3.0
    assert row["peak_gb"] == 0.7
    assert row["runs"] == 3 and row["transfers"] == 10
    # A time missing from some runs is not summarised.
    runs[1].pop("total_s")
    assert "total_s_min" not in scale._combine(runs)
    assert "[1.00-3.00]" in scale._fmt(row)


def test_repeat_runs_fresh_processes(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    cmd = [sys.executable, str(SCRIPT), "--only", "verify_1e5", "--repeat", "2"]
    r = subprocess.run(
        [*cmd, "--json", str(out)], capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    assert "median of 2 processes" in r.stdout
    (row,) = json.loads(out.read_text(encoding="utf-8"))
    assert row["runs"] == 2
    assert row["verify_s_min"] <= row["verify_s"] <= row["verify_s_max"]


@pytest.mark.parametrize("n", ["0", "51"])
def test_repeat_out_of_range_is_refused(n: str) -> None:
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--repeat", n],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2
    assert f"--repeat: {n} is not in [1, 50]" in r.stderr
