"""The reproduction report: run experiments, render REPORT.md, check verdicts.

``wafercoll reproduce`` is a thin caller of this module:

* :func:`select` picks experiments by name (with "did you mean");
* :func:`run_experiments` runs them, one after the other or each in a
  worker process of its own (:mod:`wafercoll.experiments.runner`), and
  keeps the record of a failing one (on disk too) instead of stopping;
* :func:`write_report` renders ``REPORT.md`` and ``findings.csv`` from the
  records: per paper, then every paper claim beside our number and its
  verdict, then the run's times and peak memories;
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

import dataclasses
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .._util import did_you_mean, write_atomic

__all__ = [
    "CELL",
    "EXPECTATIONS",
    "LONG_FIRST",
    "PAPERS",
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
#: core), started first when no run of theirs is recorded in
#: :data:`wafercoll.experiments.runner.PEAKS` (which orders the others).
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


def _long_first(selected: Sequence[Any]) -> list[Any]:
    rank = {n: i for i, n in enumerate(LONG_FIRST)}
    return sorted(selected, key=lambda e: rank.get(e.name, len(rank)))


def run_experiments(
    selected: list[Any],
    out: str,
    records: list[dict[str, Any]],
    *,
    quick: bool = False,
    jobs: int = 0,
) -> int:
    """Run experiments into ``out``, appending their records; return how many failed.

    Each experiment writes its files and its record (``<name>.record.json``,
    see :mod:`wafercoll.experiments.runner`) before the next one starts.
    Several experiments run in worker processes of their own
    (:func:`wafercoll.experiments.runner.run_isolated`): a worker killed from
    outside costs only its experiment, which is retried once. Progress goes
    to stderr, one line per experiment. A failing experiment gives a record
    with ``error`` (and no findings) instead of stopping the others. On
    KeyboardInterrupt, ``records`` holds those that finished.

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
        Experiments at once, each in its own process (0: as many as the
        recorded peak memories fit in the available memory, at most one per
        CPU, :func:`wafercoll.experiments.runner.default_jobs`; 1: one after
        the other in this process).

    Examples
    --------
    >>> import tempfile
    >>> records = []
    >>> run_experiments(select(["torus_hops"]), tempfile.mkdtemp(), records,
    ...                 quick=True, jobs=1)  # doctest: +SKIP
    0
    """
    from .. import experiments as wx
    from . import runner

    if jobs != 1 and len(selected) > 1:
        done: dict[str, dict[str, Any]] = {}
        try:
            runner.run_isolated(
                _long_first(selected),
                out,
                quick=quick,
                jobs=jobs,
                on_record=lambda r: done.__setitem__(r["name"], r),
            )
        finally:
            records.extend(done[e.name] for e in selected if e.name in done)
        return sum(done[e.name].get("status") != "ok" for e in selected)
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
        record = runner.run_in_process(exp, out, quick=quick)
        records.append(record)
        if record["status"] == "ok":
            print(
                f" done in {record['seconds']:.2f} s, peak "
                f"{record['peak_bytes'] / runner.MiB:.0f} MiB",
                file=sys.stderr,
            )
        else:
            failed += 1
            print(
                f" FAILED after {record['seconds']:.2f} s: {record['error']}",
                file=sys.stderr,
            )
    return failed


# -- REPORT.md -----------------------------------------------------------------------


def _md(value: Any) -> str:
    """One Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


#: The papers in the order REPORT.md shows them, with their short titles.
PAPERS = {
    "000": "Near-Optimal Wafer-Scale Reduce",
    "001": "Node-Aware Improvements to Allreduce",
    "002": "Allreduce on the Tenstorrent Wormhole n150",
    "004": "Collective Communication in MCM Accelerators",
    "foundation": "wafercoll's own foundation experiments",
}

#: The longest table cell of REPORT.md; longer text moves to its details.
CELL = 120


def _anchor(key: str) -> str:
    """A short, stable HTML id for a finding's or experiment's details."""
    return "d-" + hashlib.sha1(key.encode()).hexdigest()[:10]


def _cell(value: Any, link: str = "") -> str:
    """A table cell of at most :data:`CELL` characters (cut with a link to more)."""
    text = _md(value)
    if len(text) <= CELL:
        return text
    more = f" … [more](#{link})" if link else " …"
    head = text[: CELL - len(more)]
    while head.endswith("\\"):  # never split an escaped "|"
        head = head[:-1]
    return head.rstrip() + more


def _failed_record(r: Mapping[str, Any]) -> bool:
    return "error" in r or r.get("status", "ok") != "ok"


def _verdict_counts(findings: Sequence[Finding]) -> str:
    from . import verdict_counts

    return verdict_counts(f.verdict for f in findings) or "no findings"


def _paper_order(records: Sequence[Mapping[str, Any]]) -> list[str]:
    papers = list(PAPERS)
    papers += sorted({str(r["paper"]) for r in records} - set(papers))
    return [p for p in papers if any(str(r["paper"]) == p for r in records)]


def _paper_tables(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """One section per paper: verdict counts, then each experiment's claim."""
    from . import VERDICTS

    lines = ["## Verdicts by paper", ""]
    for paper in _paper_order(records):
        mine = [r for r in records if str(r["paper"]) == paper]
        found = [f for r in mine for f in _findings(r)]
        title = PAPERS.get(paper, "")
        lines += [f"### {paper}" + (f": {title}" if title else ""), ""]
        lines += [
            "| " + " | ".join(VERDICTS) + " | unexplained differences | "
            "failed experiments |",
            "|" + "---:|" * (len(VERDICTS) + 2),
            "| "
            + " | ".join(str(sum(f.verdict == v for f in found)) for v in VERDICTS)
            + f" | {sum(f.verdict == 'differs' and not f.explanation for f in found)}"
            + f" | {sum(_failed_record(r) for r in mine)} |",
            "",
            "| experiment | headline claim | verdicts |",
            "|---|---|---|",
        ]
        for r in mine:
            link = _anchor(r["name"])
            # "Author et al. (2024), Section 5: the claim": the claim first
            # (the whole text is under the details).
            source, _, headline = str(r["claim"]).partition(": ")
            if not headline or len(source) > 90 or not any(map(str.isdigit, source)):
                headline = str(r["claim"])
            verdicts = (
                "**failed**" if _failed_record(r) else _verdict_counts(_findings(r))
            )
            lines.append(
                f"| [{_md(r['name'])}](#{link}) | {_cell(headline, link)} | "
                f"{_cell(verdicts)} |"
            )
        lines.append("")
    return lines


def _finding_rows(
    records: Sequence[Mapping[str, Any]],
) -> tuple[list[str], dict[str, list[str]]]:
    """The findings table and, per experiment, the details of its findings."""
    rows = [
        "| experiment | claim | paper | ours | verdict | tolerance or explanation "
        "| details |",
        "|---|---|---|---|---|---|---|",
    ]
    details: dict[str, list[str]] = {}
    for r in records:
        for f in _findings(r):
            key = str(getattr(f, "id", "") or finding_key(r["name"], f))
            link = _anchor(key)
            why = f.basis_cell
            cells = [f.quantity, f.paper, f.ours, why]
            cut = any(len(_md(c)) > CELL for c in cells)
            if cut or f.note:
                text = [f'<a id="{link}"></a>**{_md(key)}**: {_md(f.quantity)}']
                text += [f"paper: {_md(f.paper)}", f"ours: {_md(f.ours)}"]
                text += [f"verdict: {f.verdict}"]
                if why:
                    text.append(f"tolerance or explanation: {_md(why)}")
                if f.note:
                    text.append(f"note: {_md(f.note)}")
                details.setdefault(r["name"], []).append("- " + "; ".join(text))
            rows.append(
                f"| {_md(r['name'])} | "
                + " | ".join(_cell(c, link if cut else "") for c in cells[:3])
                + f" | {f.verdict_cell} | {_cell(why, link if cut else '')} | "
                + (f"[details](#{link})" if cut or f.note else "")
                + " |"
            )
    return rows, details


def _run_table(records: Sequence[Mapping[str, Any]]) -> list[str]:
    def num(r: Mapping[str, Any], key: str, scale: float = 1.0) -> str:
        v = r.get(key)
        return "" if v is None else f"{v / scale:.1f}"

    lines = [
        "| experiment | status | wall s | CPU s | peak MiB | tries |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in records:
        if _failed_record(r):
            status = _cell(f"**failed**: {r.get('error', '')}", _anchor(r["name"]))
        else:
            status = "ok (earlier run)" if r.get("resumed") else "ok"
        lines.append(
            f"| {_md(r['name'])} | {status} | {num(r, 'seconds')} | "
            f"{num(r, 'cpu_seconds')} | {num(r, 'peak_bytes', 1 << 20)} | "
            f"{r.get('attempts', '')} |"
        )
    cpu = sum(r.get("cpu_seconds") or 0.0 for r in records)
    peak = max((r.get("peak_bytes") or 0 for r in records), default=0)
    lines += [
        "",
        f"Together the experiments used {cpu:.0f} s of CPU time (user + system); "
        f"the largest peak resident memory of one was {peak / (1 << 20):.0f} MiB "
        "(that of its worker process, or of the calling process during the "
        "experiment with `--jobs 1`).",
    ]
    return lines


def write_report(
    out: str,
    records: list[dict[str, Any]],
    quick: bool,
    *,
    seconds: float | None = None,
) -> str:
    """Write ``REPORT.md`` and ``findings.csv`` into ``out``; return the report's path.

    The report opens with one section per paper (:data:`PAPERS`): its
    verdict counts and each experiment's headline claim with its verdicts.
    Then comes the table of every finding, its cells at most :data:`CELL`
    characters (longer text and notes are under "Details", linked from the
    row), the details with each experiment's figure, and the run: time, CPU
    time, peak memory and status of each experiment.

    Parameters
    ----------
    out : str
        The directory the experiments wrote into.
    records : list of dict
        What :func:`run_experiments` collected.
    quick : bool
        Whether the run was in quick mode (said in the header).
    seconds : float, optional
        The wall time of the run, said in the run section.

    Examples
    --------
    >>> import tempfile
    >>> rec = {"name": "x", "title": "X", "paper": "000", "claim": "c",
    ...        "files": [], "findings": [], "seconds": 1.0}
    >>> path = write_report(tempfile.mkdtemp(), [rec], quick=True)
    >>> with open(path) as fh:
    ...     "### 000" in fh.read()
    True
    """
    from .. import __version__
    from . import (
        FINDING_COLUMNS,
        VERDICT_MEANINGS,
        VERDICTS,
        findings_columns,
        write_csv,
    )

    everything = [(r, f) for r in records for f in _findings(r)]
    counts = {v: sum(f.verdict == v for _, f in everything) for v in VERDICTS}
    unexplained = sum(
        f.verdict == "differs" and not f.explanation for _, f in everything
    )
    failed = sum(_failed_record(r) for r in records)
    lines = [
        "# wafercoll: reproduced experiments",
        "",
        f"wafercoll {__version__}" + (", quick mode (reduced sweeps)" if quick else ""),
        "",
        f"{len(records)} experiments ({failed} failed), {len(everything)} findings: "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + f" ({unexplained} of the differences not yet explained). A finding is "
        + "; ".join(f"*{v}* when {VERDICT_MEANINGS[v]}" for v in VERDICTS)
        + ". Every finding is also in `findings.csv`.",
        "",
    ]
    lines += _paper_tables(records)
    rows, details = _finding_rows(records)
    lines += ["## Findings", "", *rows, "", "## Details", ""]
    for r in records:
        lines += [
            f'### <a id="{_anchor(r["name"])}"></a>{r["name"]}: {r["title"]}',
            "",
            f"Paper: {r['paper']}. Claim: {r['claim']}",
            "",
        ]
        if _failed_record(r):
            lines += [f"**Failed:** `{_md(r.get('error', ''))}`", ""]
            continue
        files = ", ".join(
            f"[{os.path.basename(f)}]({os.path.basename(f)})" for f in r["files"]
        )
        lines += [f"Files: {files}", ""]
        png = [f for f in r["files"] if f.endswith(".png")]
        if png:
            lines += [f"![{r['name']}]({os.path.basename(png[0])})", ""]
        if not _findings(r):
            lines += ["No findings recorded.", ""]
        lines += [*details.get(r["name"], []), ""]
    lines += ["## Run", ""]
    if seconds is not None:
        lines += [f"Wall time of the run: {seconds:.0f} s.", ""]
    lines += _run_table(records)
    table: dict[str, list[Any]] = {k: [] for k in FINDING_COLUMNS}
    for r in records:
        for k, v in findings_columns(r["name"], r.get("findings", [])).items():
            table[k].extend(v)
    write_csv(os.path.join(out, "findings.csv"), table)
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


def _resumed(out: str, selected: Sequence[Any], quick: bool) -> list[Any]:
    """The experiments of ``selected`` whose record in ``out`` is complete."""
    from . import runner

    return [
        e for e in selected if runner.complete(runner.read_record(out, e.name), quick)
    ]


def _records_on_disk(out: str, quick: bool) -> list[dict[str, Any]]:
    """The final records in ``out`` of this mode, in registry order."""
    from . import experiments, runner

    found = []
    for exp in experiments():
        r = runner.read_record(out, exp.name)
        if r and r.get("status") in ("ok", "failed") and bool(r.get("quick")) == quick:
            found.append(r)
    return found


def reproduce(
    out: str,
    selected: list[Any],
    *,
    quick: bool = False,
    jobs: int = 0,
    check: str | None = None,
    record: str | None = None,
    resume: bool = False,
) -> int:
    """Run experiments, write the report, record and check expectations.

    Progress and the outcome go to stderr. Besides the experiments' files,
    ``out`` gets ``REPORT.md``, ``findings.csv``, one ``<name>.record.json``
    per experiment and ``peaks.json`` (the package's recorded peak memories
    and times, :data:`wafercoll.experiments.runner.PEAKS`, updated with this
    run's).

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
    resume : bool
        Skip the experiments whose record in ``out`` is complete (a finished,
        successful run of this mode whose files exist), and build the report
        from every record in ``out``.

    Returns
    -------
    int
        The exit status: 0, 1 when an experiment failed or the check did not
        pass, 2 when ``out`` cannot be written into, 130 when interrupted
        (the report then lists what finished).

    Examples
    --------
    >>> import tempfile
    >>> reproduce(tempfile.mkdtemp(), select(["torus_hops"]), quick=True)
    ... # doctest: +SKIP
    0
    """
    from . import runner

    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot create {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if not os.access(out, os.W_OK | os.X_OK):
        print(f"error: cannot write into {out}", file=sys.stderr)
        return 2
    skipped = _resumed(out, selected, quick) if resume else []
    other = [r for r in _records_on_disk(out, not quick) if resume]
    if other:
        print(
            f"note: {len(other)} record(s) in {out} are of the "
            f"{'full' if quick else 'quick'} mode; this run replaces those it runs",
            file=sys.stderr,
        )
    if skipped:
        print(
            f"resuming in {out}: {len(skipped)} of {len(selected)} experiments "
            f"already done ({', '.join(e.name for e in skipped)})",
            file=sys.stderr,
        )
    todo = [e for e in selected if e not in skipped]
    records: list[dict[str, Any]] = []
    start = time.perf_counter()

    def report_of(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if not resume:
            return records
        ran = {r["name"]: r for r in records}
        return [
            ran.get(r["name"], {**r, "resumed": True})
            for r in _records_on_disk(out, quick)
        ]

    try:
        failed = run_experiments(todo, out, records, quick=quick, jobs=jobs)
    except KeyboardInterrupt:
        path = write_report(out, report_of(records), quick)
        print(
            f"\ninterrupted: {path} lists the {len(records)} experiment(s) that "
            "finished",
            file=sys.stderr,
        )
        return 130
    seconds = time.perf_counter() - start
    everything = report_of(records)
    path = write_report(out, everything, quick, seconds=seconds if records else None)
    runner.write_peaks(os.path.join(out, "peaks.json"), everything, quick)
    print(
        f"wrote {path}: {len(records) - failed} of {len(records)} experiments in "
        f"{seconds:.1f} s"
        + (f" ({len(skipped)} more from earlier runs)" if skipped else ""),
        file=sys.stderr,
    )
    if record:
        record_expectations(record, everything, quick)
        print(f"recorded the verdicts in {record}", file=sys.stderr)
    if check is not None:
        source = check or EXPECTATIONS
        try:
            lost = check_expectations(source, everything, quick)
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
