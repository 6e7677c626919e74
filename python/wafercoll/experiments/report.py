"""The reproduction report: run experiments, render REPORT.md, check verdicts.

``wafercoll reproduce`` is a thin caller of this module:

* :func:`select` picks experiments by name (with "did you mean");
* :func:`run_experiments` runs them, one after the other or on a process
  pool (the longest first, :data:`LONG_FIRST`), and keeps the record of a
  failing one instead of stopping;
* :func:`write_report` renders ``REPORT.md`` and ``findings.csv`` from the
  records, every paper claim beside our number and its verdict;
* :func:`check_expectations` and :func:`record_expectations` compare a run
  with, and store it into, an expectations file (:data:`EXPECTATIONS` is
  the package's own): a finding once reproduced must stay reproduced;
* :func:`reproduce` does all of it, as ``wafercoll reproduce`` does.

A record is what :func:`wafercoll.experiments.run_experiment` returns; its
findings are plain dicts, read here as :class:`Finding`.

Examples
--------
>>> from wafercoll.experiments import report
>>> f = report.Finding("hops.rd", "hops", "4", "4", verdict="reproduced")
>>> report.Finding.from_dict(f.to_dict()) == f
True
>>> report.finding_key("torus_hops", f)
'torus_hops.hops.rd'
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .._util import did_you_mean, write_atomic

__all__ = [
    "EXPECTATIONS",
    "LONG_FIRST",
    "Finding",
    "check_expectations",
    "finding_key",
    "record_expectations",
    "reproduce",
    "run_experiments",
    "select",
    "write_report",
]

#: The verdicts ``reproduce --check`` compares against by default.
EXPECTATIONS = os.path.join(os.path.dirname(__file__), "expectations.json")

#: Experiments that take longest in full mode (about 45-120 s each on one
#: core): a pool starts them first so that they do not finish last.
LONG_FIRST = ("wafer_fig13", "mesh_fig8", "mesh_fig9", "mesh_fig11", "mesh_fig10")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One paper claim beside our number, with its verdict.

    Attributes
    ----------
    id : str
        Stable within an experiment (with the experiment's name, the key of
        the expectations file); rewording ``quantity`` does not change it.
    quantity : str
        What is compared, in words.
    paper, ours : object
        The paper's value and ours, as shown in the report.
    note : str
        Context shown beside the verdict.
    verdict : str
        One of :data:`wafercoll.experiments.VERDICTS`, computed by the judge.
    tolerance : str
        The judge's tolerance in words (``"1.6x: [1.55, 1.65) ..."``).
    explanation : str
        Why ours differs or cannot be obtained, where it is known.
    ok : bool or None
        True when reproduced, False when it differs, None otherwise.
    judge : dict or None
        The judge as plain data (:func:`.judges.judge_from_dict`).
    measured : object
        Our number(s) the judge graded.
    """

    id: str
    quantity: str
    paper: Any
    ours: Any
    note: str = ""
    verdict: str = "differs"
    tolerance: str = ""
    explanation: str = ""
    ok: bool | None = None
    judge: dict[str, Any] | None = dataclasses.field(default=None, compare=False)
    measured: Any = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        """A finding from a record's dict (unknown keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        """The finding as a dict (without ``ok`` when it is None)."""
        d = dataclasses.asdict(self)
        if d["ok"] is None:
            del d["ok"]
        return d

    @property
    def verdict_cell(self) -> str:
        """The verdict as REPORT.md shows it."""
        if self.verdict == "differs" and not self.explanation:
            return "**differs** (not yet explained)"
        return "**differs**" if self.verdict == "differs" else self.verdict

    @property
    def basis_cell(self) -> str:
        """What the verdict rests on: the tolerance, and the explanation if any."""
        if self.verdict == "not reproducible":
            return self.explanation
        if self.verdict == "differs" and self.explanation:
            return f"{self.tolerance}; {self.explanation}"
        return self.tolerance


def _findings(record: Mapping[str, Any]) -> list[Finding]:
    return [
        f if isinstance(f, Finding) else Finding.from_dict(f)
        for f in record.get("findings", [])
    ]


def finding_key(experiment: str, finding: Finding) -> str:
    """The key of a finding in an expectations file: ``<experiment>.<id>``."""
    return f"{experiment}.{finding.id}"


def _experiment_of(key: str) -> str:
    """The experiment of an expectations key (names hold no dot)."""
    return key.split(" :: ")[0] if " :: " in key else key.split(".", 1)[0]


def select(names: Sequence[str] = ()) -> list[Any]:
    """The registered experiments called ``names`` (all of them when empty).

    Raises
    ------
    ValueError
        For unknown names, with the closest known ones and the full list.
    """
    from . import experiments

    registered = experiments()
    if not names:
        return registered
    known = {e.name: e for e in registered}
    unknown = [n for n in names if n not in known]
    if unknown:
        hint = did_you_mean(unknown[0], known) if len(unknown) == 1 else ""
        raise ValueError(
            f"unknown experiment(s) {', '.join(unknown)}{hint}; "
            f"known: {', '.join(known) or 'none'}"
        )
    return [known[n] for n in dict.fromkeys(names)]


# -- running -----------------------------------------------------------------------


def _failed(exp: Any, exc: BaseException) -> dict[str, Any]:
    return {
        **exp.to_dict(),
        "files": [],
        "findings": [],
        "error": f"{type(exc).__name__}: {exc}",
    }


def _pool_job(name: str, out: str, quick: bool) -> dict[str, Any]:
    """One experiment in a worker process (Agg backend, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    from . import run_experiment

    return run_experiment(name, out, quick=quick)


def _run_parallel(
    selected: list[Any], out: str, quick: bool, records: list[Any], jobs: int
) -> int:
    """Run the experiments on a process pool; records in the given order."""
    import concurrent.futures as cf
    import multiprocessing as mp

    order = sorted(
        selected,
        key=lambda e: LONG_FIRST.index(e.name) if e.name in LONG_FIRST else 99,
    )
    done: dict[str, dict[str, Any]] = {}
    failed = 0
    pool = cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"))
    try:
        futures = {pool.submit(_pool_job, e.name, out, quick): e for e in order}
        for k, fut in enumerate(cf.as_completed(futures), 1):
            exp = futures[fut]
            try:
                done[exp.name] = fut.result()
                note = f"done in {done[exp.name]['seconds']:.2f} s"
            except Exception as exc:  # one failing experiment must not hide others
                failed += 1
                done[exp.name] = _failed(exp, exc)
                note = f"FAILED: {done[exp.name]['error']}"
            print(f"[{k}/{len(selected)}] {exp.name} ... {note}", file=sys.stderr)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        records.extend(done[e.name] for e in selected if e.name in done)
        raise
    pool.shutdown()
    records.extend(done[e.name] for e in selected)
    return failed


def run_experiments(
    selected: list[Any],
    out: str,
    records: list[dict[str, Any]],
    *,
    quick: bool = False,
    jobs: int = 0,
) -> int:
    """Run experiments into ``out``, appending their records; return how many failed.

    Progress goes to stderr, one line per experiment. A failing experiment
    gives a record with ``error`` (and no findings) instead of stopping the
    others. On KeyboardInterrupt, ``records`` holds those that finished.

    Parameters
    ----------
    selected : list of Experiment
        What :func:`select` returned.
    out : str
        The output directory.
    records : list
        Where the records are appended, in the order of ``selected``.
    quick : bool
        The reduced sweeps.
    jobs : int
        Experiments at once, each in its own process (0: one per CPU core;
        1: one after the other in this process).
    """
    from .. import experiments as wx

    n = jobs if jobs > 0 else (os.cpu_count() or 1)
    n = min(n, len(selected))
    if n > 1:
        return _run_parallel(selected, out, quick, records, n)
    failed = 0
    # In a terminal, long experiments show their own sweep's progress below
    # the experiment's line.
    wx.SHOW_PROGRESS = sys.stderr.isatty()
    for i, exp in enumerate(selected, 1):
        print(
            f"[{i}/{len(selected)}] {exp.name} ...",
            end="\n" if wx.SHOW_PROGRESS else "",
            file=sys.stderr,
            flush=True,
        )
        t0 = time.perf_counter()
        try:
            records.append(wx.run_experiment(exp, out, quick=quick))
            print(f" done in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
        except Exception as exc:  # one failing experiment must not hide the others
            failed += 1
            records.append(_failed(exp, exc))
            print(
                f" FAILED after {time.perf_counter() - t0:.2f} s: "
                f"{records[-1]['error']}",
                file=sys.stderr,
            )
    return failed


# -- REPORT.md -----------------------------------------------------------------------


def _md(value: Any) -> str:
    """One Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _csv_text(columns: dict[str, list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(list(columns))
    writer.writerows(zip(*columns.values(), strict=True))
    return buf.getvalue()


def write_report(out: str, records: list[dict[str, Any]], quick: bool) -> str:
    """Write ``REPORT.md`` and ``findings.csv`` into ``out``; return the report's path.

    Parameters
    ----------
    out : str
        The directory the experiments wrote into.
    records : list of dict
        What :func:`run_experiments` collected.
    quick : bool
        Whether the run was in quick mode (said in the header).
    """
    from .. import __version__
    from . import FINDING_COLUMNS, VERDICT_MEANINGS, VERDICTS, findings_columns

    everything = [(r, f) for r in records for f in _findings(r)]
    counts = {v: sum(f.verdict == v for _, f in everything) for v in VERDICTS}
    unexplained = sum(
        f.verdict == "differs" and not f.explanation for _, f in everything
    )
    lines = [
        "# wafercoll: reproduced experiments",
        "",
        f"wafercoll {__version__}" + (", quick mode (reduced sweeps)" if quick else ""),
        "",
        "## Verdicts",
        "",
        f"{len(everything)} findings: "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + f" ({unexplained} of the differences not yet explained). A finding is "
        + "; ".join(f"*{v}* when {VERDICT_MEANINGS[v]}" for v in VERDICTS)
        + ". Every finding is also in `findings.csv`.",
        "",
        "| experiment | claim | paper | ours | verdict |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {_md(r['name'])} ({_md(r['paper'])}) | {_md(f.quantity)} | "
        f"{_md(f.paper)} | {_md(f.ours)} | {f.verdict_cell} |"
        for r, f in everything
    ]
    lines += [
        "",
        "## Experiments",
        "",
        "| experiment | title | files | seconds |",
        "|---|---|---|---:|",
    ]
    for r in records:
        files = ", ".join(
            f"[{os.path.basename(f)}]({os.path.basename(f)})" for f in r["files"]
        )
        status = f"{r['seconds']:.2f}" if "error" not in r else "failed"
        lines.append(f"| {_md(r['name'])} | {_md(r['title'])} | {files} | {status} |")
    for r in records:
        lines += ["", f"## {r['name']}: {r['title']}", "", f"Paper: {r['paper']}.", ""]
        lines += [f"Claim: {r['claim']}", ""]
        if "error" in r:
            lines += [f"**Failed:** `{_md(r['error'])}`"]
            continue
        png = [f for f in r["files"] if f.endswith(".png")]
        if png:
            lines += [f"![{r['name']}]({os.path.basename(png[0])})", ""]
        findings = _findings(r)
        if findings:
            lines += [
                "| quantity | paper | ours | verdict | tolerance or explanation "
                "| note |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {_md(f.quantity)} | {_md(f.paper)} | {_md(f.ours)} | "
                f"{f.verdict_cell} | " + _md(f.basis_cell) + f" | {_md(f.note)} |"
                for f in findings
            ]
        else:
            lines.append("No findings recorded.")
    table: dict[str, list[Any]] = {k: [] for k in FINDING_COLUMNS}
    for r in records:
        for k, v in findings_columns(r["name"], r.get("findings", [])).items():
            table[k].extend(v)
    write_atomic(os.path.join(out, "findings.csv"), _csv_text(table))
    path = os.path.join(out, "REPORT.md")
    write_atomic(path, "\n".join(lines) + "\n")
    return path


# -- expectations ------------------------------------------------------------------


def check_expectations(
    path: str, records: list[dict[str, Any]], quick: bool
) -> list[str]:
    """Findings recorded as reproduced in ``path`` that this run did not reproduce.

    Only the experiments that ran are compared; a recorded finding that no
    longer appears counts as not reproduced.

    Raises
    ------
    OSError, ValueError
        When ``path`` cannot be read or is not JSON.
    """
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    expected = doc.get("quick" if quick else "full", {})
    ran = {r["name"] for r in records}
    now = {finding_key(r["name"], f): f.verdict for r in records for f in _findings(r)}
    lost = []
    for key, verdict in expected.items():
        if verdict != "reproduced" or _experiment_of(key) not in ran:
            continue
        got = now.get(key, "missing")
        if got != "reproduced":
            lost.append(f"{key}: was reproduced, now {got}")
    return lost


def record_expectations(path: str, records: list[dict[str, Any]], quick: bool) -> None:
    """Store the verdicts of this run (for its mode) into an expectations file."""
    doc: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    mode = doc.setdefault("quick" if quick else "full", {})
    for r in records:
        for key in [k for k in mode if _experiment_of(k) == r["name"]]:
            del mode[key]
        for f in _findings(r):
            mode[finding_key(r["name"], f)] = f.verdict
    doc["about"] = (
        "Verdicts of `wafercoll reproduce` per finding (<experiment>.<id>), by "
        "mode; `reproduce --check` fails when one recorded as reproduced is not. "
        "Written by `wafercoll reproduce --record-expectations FILE` (each mode "
        "keeps its own verdicts; a run replaces those of its experiments only)."
    )
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def reproduce(
    out: str,
    selected: list[Any],
    *,
    quick: bool = False,
    jobs: int = 0,
    check: str | None = None,
    record: str | None = None,
) -> int:
    """Run experiments, write the report, record and check expectations.

    Progress and the outcome go to stderr.

    Parameters
    ----------
    out : str
        The output directory (created when missing).
    selected : list of Experiment
        What :func:`select` returned.
    quick, jobs
        As in :func:`run_experiments`.
    check : str, optional
        An expectations file to check against (``""``: :data:`EXPECTATIONS`).
    record : str, optional
        An expectations file to record this run's verdicts into.

    Returns
    -------
    int
        The exit status: 0, 1 when an experiment failed or the check did not
        pass, 2 when ``out`` cannot be written into, 130 when interrupted
        (the report then lists what finished).
    """
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot create {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not os.access(out, os.W_OK | os.X_OK):
        print(f"error: cannot write into {out}", file=sys.stderr)
        return 2
    records: list[dict[str, Any]] = []
    start = time.perf_counter()
    try:
        failed = run_experiments(selected, out, records, quick=quick, jobs=jobs)
    except KeyboardInterrupt:
        path = write_report(out, records, quick)
        print(
            f"\ninterrupted: {path} lists the {len(records)} experiment(s) that "
            "finished",
            file=sys.stderr,
        )
        return 130
    path = write_report(out, records, quick)
    print(
        f"wrote {path}: {len(records) - failed} of {len(records)} experiments in "
        f"{time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    if record:
        record_expectations(record, records, quick)
        print(f"recorded the verdicts in {record}", file=sys.stderr)
    if check is not None:
        source = check or EXPECTATIONS
        try:
            lost = check_expectations(source, records, quick)
        except (OSError, ValueError) as exc:
            print(f"error: cannot read expectations {source}: {exc}", file=sys.stderr)
            return 1
        for line in lost:
            print(f"NOT REPRODUCED: {line}", file=sys.stderr)
        if lost:
            print(
                f"check failed: {len(lost)} finding(s) recorded as reproduced in "
                f"{source} are not",
                file=sys.stderr,
            )
            return 1
        print(f"check passed against {source}", file=sys.stderr)
    return 1 if failed else 0
