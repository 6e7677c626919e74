"""The experiment registry, the foundation experiment and `wafercoll reproduce`."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

import wafercoll as wc
import wafercoll.experiments as wx
from wafercoll.cli import main
from wafercoll.experiments import demo

ALGOS = list(demo.ALGORITHMS)


@pytest.fixture(scope="module")
def quick_record(tmp_path_factory):
    out = tmp_path_factory.mktemp("quick")
    return wx.run_experiment("foundation_counts", out, quick=True)


def test_registry_has_the_demo():
    names = [e.name for e in wx.experiments()]
    assert "foundation_counts" in names
    exp = wx.get_experiment("foundation_counts")
    assert exp.paper == "foundation"
    assert exp in wx.experiments(paper="foundation")
    assert exp not in wx.experiments(paper="no-such-paper")
    assert exp.claim and exp.title


def test_registry_rejects_duplicates_and_unknown_names():
    with pytest.raises(ValueError, match="already registered"):
        wx.register_experiment(wx.get_experiment("foundation_counts"))
    with pytest.raises(KeyError, match="foundation_counts"):
        wx.get_experiment("no_such_experiment")
    with pytest.raises(ValueError, match="name"):
        wx.Experiment("bad name", "t", "p", "c", run=dict, plot=dict)


def test_quick_run_writes_csv_png_svg(quick_record):
    files = quick_record["files"]
    assert [f.rsplit(".", 1)[1] for f in files] == ["csv", "png", "svg", "csv"]
    assert files[3].endswith("foundation_counts.findings.csv")
    with open(files[0], newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    for col in (
        "algorithm",
        "p",
        "steps",
        "steps_closed_form",
        "transfers",
        "bytes_sent_max",
        "bytes_sent_total",
    ):
        assert col in header
    assert len(rows) - 1 == len(ALGOS) * demo.MAX_RANKS_QUICK == quick_record["rows"]
    with open(files[1], "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(files[2], encoding="utf-8") as fh:
        assert "<svg" in fh.read()
    assert quick_record["seconds"] > 0


def test_findings_say_closed_forms_matched(quick_record):
    findings = quick_record["findings"]
    assert len(findings) == 2 * len(ALGOS)
    for f in findings:
        assert set(f) >= {"quantity", "paper", "ours", "note"}
        assert f["ok"] is True, f
        assert f["note"].startswith("matches")
    assert {a for a in ALGOS if any(a in f["quantity"] for f in findings)} == set(ALGOS)


def test_csv_columns_agree_with_a_fresh_build(quick_record):
    with open(quick_record["files"][0], newline="") as fh:
        rows = list(csv.DictReader(fh))
    row = next(r for r in rows if r["algorithm"] == "rabenseifner" and r["p"] == "12")
    s = wc.build("generic_rabenseifner_allreduce", ranks=12, size_bytes=demo.SIZE_BYTES)
    assert int(row["steps"]) == wc.verify(s).steps == 2 * 3 + 2
    assert int(row["transfers"]) == s.num_transfers
    assert int(row["bytes_sent_max"]) == int(s.stats()["bytes_sent"].max())


@pytest.mark.parametrize("p", [1, 2, 3, 7, 8, 12, 33, 64])
def test_closed_forms_by_hand(p):
    size = 1 << 20
    q = 2 ** math.floor(math.log2(p))
    assert demo.closed_forms("ring", p, size)["steps"] == 2 * (p - 1)
    assert demo.closed_forms("recursive_doubling", p, size)["steps"] == (
        round(math.log2(q)) + (2 if p != q else 0)
    )
    assert demo.closed_forms("binomial_reduce", p, size)["steps"] == math.ceil(
        math.log2(p)
    )
    assert (
        demo.closed_forms("rabenseifner", p, size)["bytes_total"] == 2 * (p - 1) * size
    )


def test_closed_form_unknown_algorithm():
    with pytest.raises(ValueError, match="no closed form"):
        demo.closed_forms("nope", 4, 8)


def test_plot_on_given_axes():
    from matplotlib.figure import Figure

    cols, _ = wx.split_result(demo.run_counts(quick=True))
    fig = Figure()
    ax = fig.add_subplot()
    assert demo.plot_counts(cols, ax=ax) is ax
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [*ALGOS, "closed form"]
    assert ax.get_xlabel() and ax.get_ylabel()
    ring_points, ring_form = ax.get_lines()[:2]
    assert list(ring_points.get_ydata()) == [2 * (p - 1) for p in range(1, 17)]
    # the closed form is drawn over the markers, so it is never hidden by them
    assert ring_form.get_zorder() > ring_points.get_zorder()


def test_split_result_validates():
    cols, findings = wx.split_result({"a": np.arange(3), "b": ["x", "y", "z"]})
    assert cols == {"a": [0, 1, 2], "b": ["x", "y", "z"]}
    assert findings == []
    assert isinstance(cols["a"][0], int)
    with pytest.raises(ValueError, match="differ in length"):
        wx.split_result({"a": [1, 2], "b": [1]})
    with pytest.raises(ValueError, match="1-D"):
        wx.split_result({"a": np.zeros((2, 2))})
    with pytest.raises(ValueError, match="lacks"):
        wx.split_result(({"a": [1]}, [{"quantity": "q"}]))
    with pytest.raises(TypeError):
        wx.split_result([1, 2, 3])


def test_reproduce_quick_writes_report(tmp_path, capsys):
    code = main(["reproduce", "--quick", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "foundation_counts" in err and " s" in err
    report = (tmp_path / "REPORT.md").read_text()
    assert report.startswith("# ")
    assert wc.__version__ in report
    assert "| foundation_counts |" in report
    assert wx.get_experiment("foundation_counts").claim in report
    assert (
        "| experiment | claim | paper | ours | verdict | tolerance or explanation "
        "| details |" in report
    )
    assert "MISMATCH" not in report
    for ext in ("csv", "png", "svg"):
        assert (tmp_path / f"foundation_counts.{ext}").stat().st_size > 0
    # The per-paper summary opens the report, then one row per finding, the
    # details and the run; every finding of every experiment is in
    # findings.csv with its verdict.
    heads = ["## Verdicts by paper", "## Findings", "## Details", "## Run"]
    assert [report.index(h) for h in heads] == sorted(report.index(h) for h in heads)
    with open(tmp_path / "findings.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and set(rows[0]) == set(wx.FINDING_COLUMNS)
    assert {r["verdict"] for r in rows} <= set(wx.VERDICTS)
    for r in rows:
        assert r["quantity"].replace("|", "\\|") in report
        if r["verdict"] == "not reproducible":
            assert r["explanation"]
    per = list(
        csv.DictReader(
            (tmp_path / "foundation_counts.findings.csv").read_text().splitlines()
        )
    )
    assert [r["verdict"] for r in per] == ["reproduced"] * len(per)
    # The committed expectations hold for this run.
    code = main(
        [
            "reproduce",
            "--quick",
            "--out",
            str(tmp_path),
            "--only",
            "foundation_counts",
            "--check",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0 and "check passed" in err


def test_findings_need_a_judge_and_an_id():
    from wafercoll.experiments.judges import Exact, Identity

    cols = {"a": [1]}
    good = wx.finding("count.x", "q", "1", "1", Exact(1), 1)
    with pytest.raises(ValueError, match="no judge"):
        wx.split_result((cols, [{**good, "judge": None}]))
    with pytest.raises(ValueError, match="identity"):
        wx.finding("count.x", "q", "1", "1", Identity("min over a set"), 1)
    with pytest.raises(ValueError, match="needs an id"):
        wx.split_result((cols, [{**good, "id": "Count X"}]))
    with pytest.raises(ValueError, match="verdict must be one of"):
        wx.split_result((cols, [{**good, "verdict": "close enough"}]))
    with pytest.raises(ValueError, match="contradicts"):
        wx.split_result((cols, [{**good, "verdict": "differs"}]))
    with pytest.raises(ValueError, match="contradicts"):
        wx.split_result((cols, [{**good, "ok": False}]))
    with pytest.raises(ValueError, match="contradicts"):
        wx.split_result((cols, [{**good, "measured": 2}]))
    with pytest.raises(ValueError, match="needs an explanation"):
        wx.split_result((cols, [{**good, "verdict": "not reproducible", "ok": None}]))
    with pytest.raises(ValueError, match="identity"):
        wx.split_result((cols, [{**good, "judge": Identity("min over a set")}]))
    with pytest.raises(ValueError, match="unique"):
        wx.split_result((cols, [good, dict(good)]))
    _, (f,) = wx.split_result((cols, [good]))
    assert (f["verdict"], f["ok"], f["tolerance"]) == ("reproduced", True, "exactly 1")
    # A graded finding grades again to the same verdict.
    assert wx.split_result((cols, [f]))[1] == [f]
    (f,) = [wx.finding("count.x", "q", "1", "2", Exact(1), 2, note="why")]
    assert (f["verdict"], f["ok"], f["explanation"]) == ("differs", False, "")
    assert wx.note_explains(f)["explanation"] == "why"


def test_check_fails_when_a_reproduced_finding_breaks(tmp_path, capsys, monkeypatch):
    exp = wx.get_experiment("foundation_counts")
    expectations = tmp_path / "expected.json"
    code = main(
        [
            "reproduce",
            "--quick",
            "--out",
            str(tmp_path),
            "--only",
            exp.name,
            "--record-expectations",
            str(expectations),
        ]
    )
    capsys.readouterr()
    assert code == 0
    assert (
        main(
            [
                "reproduce",
                "--quick",
                "--out",
                str(tmp_path),
                "--only",
                exp.name,
                "--check",
                str(expectations),
            ]
        )
        == 0
    )
    capsys.readouterr()

    def broken(quick=False):
        cols, findings = wx.split_result(exp.run(quick=quick), exp.name)
        drop = ("ok", "verdict", "tolerance")
        findings[0] = {k: v for k, v in findings[0].items() if k not in drop}
        findings[0]["measured"] = 1
        return cols, findings

    import dataclasses

    monkeypatch.setitem(wx._REGISTRY, exp.name, dataclasses.replace(exp, run=broken))
    code = main(
        [
            "reproduce",
            "--quick",
            "--out",
            str(tmp_path),
            "--only",
            exp.name,
            "--check",
            str(expectations),
        ]
    )
    _, err = capsys.readouterr()
    assert code == 1
    assert "NOT REPRODUCED: foundation_counts.steps.ring" in err
    assert "now differs" in err
    assert "check failed: 1 finding" in err


def test_reproduce_reports_a_failing_experiment(tmp_path, capsys, monkeypatch):
    def broken(quick=False):
        raise RuntimeError("boom")

    bad = wx.Experiment("broken_demo", "Broken", "test", "none", run=broken, plot=dict)
    monkeypatch.setitem(wx._REGISTRY, bad.name, bad)
    code = main(["reproduce", "--quick", "--out", str(tmp_path), "--only", bad.name])
    _, err = capsys.readouterr()
    assert code == 1
    assert "boom" in err
    report = (tmp_path / "REPORT.md").read_text()
    assert "broken_demo" in report and "boom" in report


def test_reproduce_jobs_write_the_same_csvs(tmp_path, capsys):
    names = ["foundation_counts", "torus_hops", "wafer_fig1", "node_aware_locality"]
    for jobs in ("1", "2"):
        out = tmp_path / f"j{jobs}"
        code = main(
            [
                "reproduce",
                "--quick",
                "--jobs",
                jobs,
                "--out",
                str(out),
                "--only",
                *names,
            ]
        )
        _, err = capsys.readouterr()
        assert code == 0, err
    for name in names:
        for suffix in (".csv", ".findings.csv"):
            a = (tmp_path / "j1" / f"{name}{suffix}").read_bytes()
            assert a == (tmp_path / "j2" / f"{name}{suffix}").read_bytes(), name
    # The report's run table lists the experiments in the same (registry) order.
    order = [
        [
            line.split("|")[1].strip()
            for line in (tmp_path / j / "REPORT.md")
            .read_text()
            .split("## Run")[1]
            .splitlines()
            if line.startswith("| ") and "| ok |" in line
        ]
        for j in ("j1", "j2")
    ]
    assert order[0] == order[1] and len(order[0]) == len(names)


def test_reproduce_rejects_negative_jobs(tmp_path, capsys):
    code = main(["reproduce", "--quick", "--jobs", "-1", "--out", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2 and "--jobs must be >= 0" in err


def test_a_saved_figure_states_its_verdicts_in_the_title(tmp_path) -> None:
    import wafercoll.experiments as wx
    from wafercoll.experiments.judges import Exact

    def run(quick=False):
        good = wx.finding("good", "one", 1, 1, Exact(1), 1)
        bad = wx.finding("bad", "two", 2, 3, Exact(2), 3)
        return {"x": [0, 1], "y": [1, 2]}, [good, bad]

    def plot(cols, ax=None):
        ax = wx.new_axes(ax)
        ax.plot(cols["x"], cols["y"])
        ax.set_title("panel")
        return ax

    exp = wx.Experiment("verdict_title_test", "Title", "000", "claim", run, plot)
    columns, findings = wx.split_result(run(), exp.name)
    fig = wx.draw_figure(exp, columns, findings)
    lines = fig._suptitle.get_text().splitlines()
    assert lines == ["Title", "findings: 1 reproduced, 1 differs (REPORT.md)"]
    # no findings, panels titled: no suptitle is added
    assert wx.draw_figure(exp, columns, [])._suptitle is None
