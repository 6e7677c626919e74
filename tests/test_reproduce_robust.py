"""`wafercoll reproduce` keeps finished work: killed workers, records, --resume.

The runs here start the command line in a subprocess through a small script
that also registers test-only experiments (a slow one and one whose worker
kills itself); the workers import that script as their main module, so they
know these experiments too. Each worker announces its pid in its record
(``OUT/<name>.record.json``, status "running") as it starts, which is how the
tests find the process to kill.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wafercoll.cli import main
from wafercoll.experiments import report, runner

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="POSIX signals and /proc"
)

FAST = ["torus_hops", "wafer_autogen_table1", "wafer_fig1"]

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time

    import wafercoll.experiments as wx
    from wafercoll.cli import main
    from wafercoll.experiments.judges import Exact


    def plot(columns, ax=None):
        ax = wx.new_axes(ax)
        ax.plot(columns["x"], columns["y"])
        return ax


    def slow(quick=False):
        time.sleep(3)
        finding = wx.finding("two", "two", 2, 2, Exact(2), 2)
        return {"x": [0, 1], "y": [1, 2]}, [finding]


    def doomed(quick=False):
        os.kill(os.getpid(), signal.SIGKILL)


    def stuck(quick=False):
        # Long work in the middle of writing a file (through its temporary).
        from wafercoll._util import atomic_path

        out = os.environ["STUCK_OUT"]
        with atomic_path(os.path.join(out, f"stuck-{os.getpid()}.csv")) as tmp:
            with open(tmp, "w") as fh:
                fh.write("x,y\\n")
            time.sleep(60)


    for name, run in (
        ("slow_test", slow),
        ("doomed_test", doomed),
        ("stuck_a", stuck),
        ("stuck_b", stuck),
    ):
        wx.register_experiment(
            wx.Experiment(name, name, "test", "a test experiment", run=run, plot=plot)
        )

    if __name__ == "__main__":
        sys.exit(main(sys.argv[1:]))
    """
)


def _start(tmp_path, *names):
    script = tmp_path / "run_reproduce.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    cmd = [sys.executable, str(script), "reproduce", "--quick", "--jobs", "2"]
    proc = subprocess.Popen(
        [*cmd, "-o", str(out), "--only", *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, out


def _record(out, name):
    return runner.read_record(str(out), name)


def _wait_running(proc, out, name, timeout=25.0):
    """The pid of ``name``'s worker once it announced itself."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = _record(out, name)
        if r and r.get("status") == "running":
            return r["pid"]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"{name} never started: {proc.communicate()}")


def _cells(markdown):
    """Every cell of every table row of a Markdown text."""
    for line in markdown.splitlines():
        if line.startswith("|"):
            yield from (c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1])


def _assert_ok(out, name):
    r = _record(out, name)
    assert r is not None and r["status"] == "ok", r
    assert r["findings"] and r["peak_bytes"] > 0 and r["cpu_seconds"] >= 0
    for f in r["files"]:
        assert os.path.getsize(f) > 0, f
    return r


def test_a_killed_worker_costs_only_its_experiment_and_is_retried(tmp_path):
    proc, out = _start(tmp_path, "slow_test", *FAST)
    pid = _wait_running(proc, out, "slow_test")
    time.sleep(0.5)  # inside the experiment's run
    os.kill(pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "slow_test: worker killed by signal 9 (SIGKILL)" in err
    assert "retrying alone in a fresh process" in err
    assert re.search(r"\[\d/4\] slow_test \.\.\. done in .* s, peak \d+ MiB", err)
    again = _assert_ok(out, "slow_test")
    assert again["attempts"] == 2 and again["pid"] != pid
    for name in FAST:
        assert _assert_ok(out, name)["attempts"] == 1
    text = (out / "REPORT.md").read_text()
    assert "| slow_test | ok |" in text and "### test" in text
    assert not list(out.glob("*.tmp*"))
    peaks = json.loads((out / "peaks.json").read_text())["quick"]
    assert set(FAST + ["slow_test"]) <= set(peaks)


def test_a_worker_killed_on_both_tries_fails_with_its_cause(tmp_path):
    proc, out = _start(tmp_path, "doomed_test", "torus_hops")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    r = _record(out, "doomed_test")
    assert r["status"] == "failed" and r["attempts"] == 2
    assert "killed by signal 9 (SIGKILL)" in r["error"] and "both tries" in r["error"]
    assert "doomed_test ... FAILED: worker killed by signal 9" in err
    _assert_ok(out, "torus_hops")
    text = (out / "REPORT.md").read_text()
    assert "| doomed_test | **failed**: worker killed by signal 9" in text
    assert "2 experiments (1 failed)" in text


def test_resume_skips_complete_experiments_and_reports_all(tmp_path, capsys):
    out = str(tmp_path)
    first = ["reproduce", "--quick", "--jobs", "1", "-o", out, "--only"]
    assert main([*first, "torus_hops", "wafer_autogen_table1"]) == 0
    kept = _record(tmp_path, "wafer_autogen_table1")
    os.remove(tmp_path / "torus_hops.png")  # incomplete now
    capsys.readouterr()
    code = main(
        [
            "reproduce",
            "--quick",
            "--jobs",
            "1",
            "--resume",
            out,
            "--only",
            "torus_hops",
            "wafer_autogen_table1",
            "wafer_fig1",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err
    assert "1 of 3 experiments already done (wafer_autogen_table1)" in err
    assert "wafer_autogen_table1 ..." not in err and "torus_hops ..." in err
    assert _record(tmp_path, "wafer_autogen_table1") == kept
    assert (tmp_path / "torus_hops.png").exists()
    # A resumed run with --only one experiment still reports every record.
    again = ["reproduce", "--quick", "-o", out, "--resume", "--only", "wafer_fig1"]
    assert main(again) == 0
    text = (tmp_path / "REPORT.md").read_text()
    for name in ("torus_hops", "wafer_autogen_table1", "wafer_fig1"):
        assert f"| {name} | ok (earlier run) |" in text
    # A record of the other mode is not complete.
    assert not runner.complete(kept, quick=False)


def test_report_tables_per_paper_and_short_cells(tmp_path):
    long = "a claim with a | pipe and many words " * 12
    records = [
        {
            "name": "e_000",
            "title": "T",
            "paper": "000",
            "claim": long,
            "files": [],
            "seconds": 1.5,
            "peak_bytes": 300 << 20,
            "cpu_seconds": 1.2,
            "attempts": 1,
            "findings": [
                {
                    "id": "long.claim",
                    "quantity": long,
                    "paper": long,
                    "ours": "1",
                    "note": "see there",
                    "verdict": "differs",
                    "explanation": long,
                },
                {
                    "id": "q2",
                    "quantity": "q2",
                    "paper": 1,
                    "ours": 1,
                    "note": "",
                    "verdict": "reproduced",
                },
            ],
        },
        {
            "name": "e_001",
            "title": "T1",
            "paper": "001",
            "claim": "short",
            "files": [],
            "findings": [],
            "status": "failed",
            "error": "worker killed by signal 9 (SIGKILL) " + long,
        },
    ]
    for paper in ("002", "004", "foundation"):
        records.append({**records[0], "name": f"e_{paper}", "paper": paper})
    text = Path(report.write_report(str(tmp_path), records, quick=True)).read_text()
    for paper, title in report.PAPERS.items():
        head = f"### {paper}: {title}"
        assert head in text
        section = text.split(head)[1].split("###")[0]
        assert "| reproduced | calibrated | differs | not reproducible |" in section
        assert "| experiment | headline claim | verdicts |" in section
    order = ["## Verdicts by paper", "## Findings", "## Details", "## Run"]
    assert [text.index(h) for h in order] == sorted(text.index(h) for h in order)
    cells = list(_cells(text))
    assert cells and max(len(c) for c in cells) <= report.CELL
    # The long text is kept, under the details.
    details = text.split("## Details")[1]
    assert long.replace("|", "\\|").strip() in details
    assert "**long.claim**" in details and "note: see there" in details
    assert "| e_001 | **failed**: worker killed by signal 9" in text


def test_default_jobs_follow_memory_and_cpus():
    peaks = {"a": {"peak_MiB": 2048}, "b": {"peak_MiB": 1024}, "c": {"peak_MiB": 512}}
    names = list(peaks)
    gib = 1 << 30
    assert runner.default_jobs(names, peaks=peaks, available=100 * gib, cpus=2) == 2
    assert runner.default_jobs(names, peaks=peaks, available=100 * gib, cpus=8) == 3
    assert runner.default_jobs(names, peaks=peaks, available=3 * gib, cpus=8) == 1
    assert runner.default_jobs(names, peaks=peaks, available=gib, cpus=8) == 1
    # An experiment without a recorded peak counts as the largest known.
    assert (
        runner.default_jobs(["a", "new"], peaks=peaks, available=4 * gib, cpus=8) == 1
    )
    # The package ships the peaks of a full and a quick run of every experiment.
    for quick in (False, True):
        shipped = runner.load_peaks(quick=quick)
        assert {e.name for e in report.select()} <= set(shipped)


def _interrupted(tmp_path, ready, settle_s):
    """``reproduce --jobs 2`` of two stuck experiments, interrupted when ready."""
    from interrupting import interrupt

    script = tmp_path / "run_reproduce.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    cmd = [sys.executable, str(script), "reproduce", "--quick", "--jobs", "2"]
    cmd += ["-o", str(out), "--only", "stuck_a", "stuck_b"]
    env = {**os.environ, "STUCK_OUT": str(out)}
    return interrupt(cmd, ready(out), settle_s=settle_s, env=env), out


def _assert_stopped_cleanly(r, out):
    from interrupting import BUDGET_S

    assert r.returncode == 130, r.stderr
    assert r.seconds < BUDGET_S, (r.seconds, r.stderr)
    assert not r.leftover, "a worker outlived the interrupt"
    assert "interrupted" in r.stderr and "Traceback" not in r.stderr, r.stderr
    files = [p.name for p in out.rglob("*")]
    assert not [f for f in files if ".tmp" in f or f.startswith("stuck-")], files
    for name in ("stuck_a", "stuck_b"):  # no record of a run that ended
        assert _record(out, name) is None, _record(out, name)


def test_ctrl_c_stops_running_workers_at_once_without_partial_files(tmp_path):
    def ready(out):
        # Both workers are inside their experiment, halfway through a write.
        return lambda err: len(list(out.glob("stuck-*.csv.tmp*"))) == 2

    r, out = _interrupted(tmp_path, ready, settle_s=0.3)
    _assert_stopped_cleanly(r, out)
    assert "lists the 0 experiment(s) that finished" in r.stderr


def test_ctrl_c_while_the_first_worker_starts_leaves_no_worker_behind(tmp_path):
    # Right after the announcement the first start is under way (it boots the
    # fork server); a worker forked then must not outlive the run.
    def ready(out):
        return lambda err: "running 2 experiment(s)" in err

    r, out = _interrupted(tmp_path, ready, settle_s=0.05)
    _assert_stopped_cleanly(r, out)
