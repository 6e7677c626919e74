"""Experiments of paper 004 in quick mode: data, findings and plots."""

from __future__ import annotations

import math

import pytest

import wafercoll.experiments as wx
from wafercoll.experiments import mesh_mcm

NAMES = ["mesh_table1", "mesh_fig8", "mesh_fig9", "mesh_fig12", "mesh_fig14"]


def test_registered_for_paper_004() -> None:
    assert [e.name for e in wx.experiments("004")] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_quick_run_writes_data_and_figure(name: str, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    rec = wx.run_experiment(name, tmp_path, quick=True)
    assert rec["rows"] > 0 and rec["findings"]
    for f in rec["findings"]:
        assert {"quantity", "paper", "ours", "note"} <= set(f)


def test_fig8_bandwidth_is_size_over_time_and_below_the_link_bound() -> None:
    cols, _ = mesh_mcm.run_fig8(quick=True)
    for size, t, bw in zip(
        cols["size_bytes"], cols["time_s"], cols["GBps"], strict=True
    ):
        assert bw == pytest.approx(size / t / 1e9)
        # a rank's vector leaves it over at most 4 links of 25 GB/s, and an
        # allreduce needs at least its own data out once: size / (4 * 25 GB/s)
        assert t >= size / (4 * 25e9)


def test_fig14_every_chunk_reduces_the_same_data() -> None:
    cols, findings = mesh_mcm.run_fig14(quick=True)
    assert len(cols["chunk_bytes"]) == 6
    assert all(math.isfinite(x) and x > 0 for x in cols["GBps"])
    assert findings[0]["paper"] == "96-192 KiB"
