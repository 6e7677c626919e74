"""Experiments: the unit of reproduction of wafercoll.

An :class:`Experiment` names one figure or table of a paper: a function that
computes tidy data (columns of equal length, no pandas needed), a function that
draws that data on a Matplotlib Axes, and the paper's claim the data checks.
Notebooks and ``wafercoll reproduce`` call the same experiments, so every
published number comes from code the tests run.

The data contract
-----------------
``run(quick=False)`` returns either a mapping of columns (``{name: list or
1-D array}``, all of the same length) or a pair ``(columns, findings)``. A
*finding* (built with :func:`finding`) is a dict with ``id`` (stable within
the experiment: ``speedup.tto_over_ring.8x8``; the expectations file keys
it as ``<experiment>.<id>``), ``quantity`` (what was compared), ``paper``
(the value or formula the paper states), ``ours`` (what wafercoll measured,
as text), ``note``, and the two things its verdict is computed from: a
``judge`` (:mod:`wafercoll.experiments.judges`) built from the claim, and
``measured``, our number(s). The verdict is one of :data:`VERDICTS`:

* ``"reproduced"``: the judge accepts ours;
* ``"calibrated"``: ours was fitted (a :class:`~.judges.Calibrated` judge,
  which states the free parameters and the held-out points); never counted
  as reproduced;
* ``"differs"``: the judge does not accept ours; ``explanation`` says why
  when the reason is known (an empty explanation marks a difference not yet
  explained);
* ``"not reproducible"``: the paper's value cannot be obtained or compared
  here (the only verdict set by hand, with its reason as ``explanation``).

How findings are graded
-----------------------
A verdict is never set by hand; the judge computes it, and its tolerance is
shown beside it. The standard (enforced by :mod:`.judges` and
:func:`split_result`, tested for every finding by ``tests/test_verdicts.py``):

* the tolerance comes from the claim's own precision: "1.6x" accepts
  [1.55, 1.65); a hedged claim ("about 83 %", a value read off a figure)
  gets a band stated in the finding;
* a comparative claim is judged in its direction: "A faster than B" fails
  when A is slower, whatever the band;
* a range is judged at both ends, each on its side of 1; "up to X" is judged
  on the maximum, two-sided;
* a fitted quantity is *calibrated*, with its free parameters and fitted
  points stated; the held-out points are findings of their own;
* an identity (a minimum over a set compared with a member of it) is not a
  finding: it is a unit test;
* every finding has a judge, hence a stated tolerance.

``quick=True`` asks for a smaller sweep that still exercises every code path.

``plot(columns, ax=None)`` draws the columns and returns the Axes. Plot
functions import Matplotlib lazily; when ``ax`` is None they may create one
figure (see :func:`new_axes`) and never touch pyplot otherwise.

Examples
--------
>>> import wafercoll.experiments as wx
>>> [e.name for e in wx.experiments()]  # doctest: +SKIP
['foundation_counts']
>>> record = wx.run_experiment("foundation_counts", "out", quick=True)  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util import atomic_path
from .judges import Identity, Judge, judge_from_dict, plain

__all__ = [
    "VERDICTS",
    "VERDICT_MEANINGS",
    "Experiment",
    "draw_figure",
    "experiments",
    "finding",
    "get_experiment",
    "new_axes",
    "note_explains",
    "progress",
    "register_experiment",
    "run_experiment",
    "split_result",
    "verdict_counts",
    "verdict_line",
]

FINDING_KEYS = ("id", "quantity", "paper", "ours", "note", "judge", "measured")
#: The verdicts a finding can have (see the module docstring).
VERDICTS = ("reproduced", "calibrated", "differs", "not reproducible")
#: What each verdict means, as the report states it.
VERDICT_MEANINGS = {
    "reproduced": "ours agrees with the paper within the tolerance the finding "
    "states (derived from the precision of the paper's number, or a stated band)",
    "calibrated": "a quantity we fitted to the paper's numbers; it does not count "
    "as reproduced (the finding states the free parameters and the held-out "
    "points, which are judged separately)",
    "differs": "ours is outside the tolerance, with the explanation where it is known",
    "not reproducible": "the paper's value cannot be obtained or compared here "
    "(the reason is given)",
}


@dataclass(frozen=True)
class Experiment:
    """One reproducible figure or table.

    Attributes
    ----------
    name : str
        Registry key and file stem of its outputs (letters, digits, ``_``, ``-``).
    title : str
        One line, used as the plot title and in reports.
    paper : str
        Where it comes from: ``"foundation"`` or a seed id such as ``"000"``.
    claim : str
        The statement of the paper that the data checks.
    run : callable
        ``run(quick=False)`` returning columns or ``(columns, findings)``
        (see the module docstring).
    plot : callable
        ``plot(columns, ax=None)`` returning a Matplotlib Axes.
    """

    name: str
    title: str
    paper: str
    claim: str
    run: Callable[..., Any] = field(repr=False, compare=False)
    plot: Callable[..., Any] = field(repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.name or not all(c.isalnum() or c in "_-" for c in self.name):
            raise ValueError(
                f"experiment name must be non-empty and use only letters, digits, "
                f"'_' and '-', got {self.name!r}"
            )
        if not callable(self.run) or not callable(self.plot):
            raise TypeError(f"experiment {self.name!r}: run and plot must be callable")

    def to_dict(self) -> dict[str, str]:
        """The descriptive fields (without the functions)."""
        return {
            "name": self.name,
            "title": self.title,
            "paper": self.paper,
            "claim": self.claim,
        }


_REGISTRY: dict[str, Experiment] = {}


def register_experiment(exp: Experiment) -> Experiment:
    """Add an experiment to the registry and return it.

    Raises
    ------
    TypeError
        If ``exp`` is not an :class:`Experiment`.
    ValueError
        If another experiment already has its name.
    """
    if not isinstance(exp, Experiment):
        raise TypeError(f"expected an Experiment, got {type(exp).__name__}")
    if exp.name in _REGISTRY:
        raise ValueError(f"experiment {exp.name!r} is already registered")
    _REGISTRY[exp.name] = exp
    return exp


def experiments(paper: str | None = None) -> list[Experiment]:
    """All registered experiments in registration order, optionally of one paper."""
    return [e for e in _REGISTRY.values() if paper is None or e.paper == paper]


def get_experiment(name: str) -> Experiment:
    """Look an experiment up by name.

    Raises
    ------
    KeyError
        For an unknown name; the message lists the registered ones.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(_REGISTRY) or "none"
        raise KeyError(f"unknown experiment {name!r}; registered: {known}") from None


def split_result(
    result: Any, name: str = "experiment"
) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """Normalise what ``run`` returned into ``(columns, findings)``.

    Columns become plain Python lists (NumPy scalars converted), so they can be
    written to CSV or JSON directly.

    Raises
    ------
    ValueError
        If the columns are not 1-D, differ in length, or a finding lacks one of
        ``quantity``, ``paper``, ``ours``, ``note``.
    TypeError
        If ``result`` is neither a mapping nor a ``(mapping, list)`` pair.
    """
    findings: Sequence[Any] = ()
    if isinstance(result, tuple) and len(result) == 2:
        result, findings = result
    if not isinstance(result, Mapping):
        raise TypeError(
            f"{name}: run() must return a mapping of columns or (columns, findings), "
            f"got {type(result).__name__}"
        )
    columns: dict[str, list[Any]] = {}
    for key, values in result.items():
        columns[str(key)] = _column(values, f"{name}: column {key!r}")
    lengths = {k: len(v) for k, v in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{name}: columns differ in length: {lengths}")
    checked: list[dict[str, Any]] = []
    for i, f in enumerate(findings):
        missing = [k for k in FINDING_KEYS if not isinstance(f, Mapping) or k not in f]
        if missing:
            raise ValueError(f"{name}: finding {i} lacks {', '.join(missing)}")
        checked.append(_with_verdict(dict(f), f"{name}: finding {i}"))
    ids = [f["id"] for f in checked]
    twice = sorted({x for x in ids if ids.count(x) > 1})
    if twice:
        raise ValueError(f"{name}: finding ids must be unique, repeated: {twice}")
    return columns, checked


#: Whether long experiments show a progress bar of their own sweep (the
#: command line sets it when it runs experiments one by one in a terminal;
#: the process pool of ``reproduce --jobs`` reports whole experiments).
SHOW_PROGRESS = False


def progress(items: Any, desc: str, total: int | None = None) -> Any:
    """``items``, with a tqdm bar on stderr when :data:`SHOW_PROGRESS` is set."""
    if not SHOW_PROGRESS:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, leave=False, unit="point")


def note_explains(finding: dict[str, Any]) -> dict[str, Any]:
    """Mark a finding whose note explains why ours differs from the paper."""
    finding["explanation"] = finding["note"]
    return finding


#: A finding's id: dot-separated lowercase words (``speedup.tto_over_ring.8x8``).
_ID = re.compile(r"^[a-z0-9][a-z0-9_+-]*(\.[a-z0-9][a-z0-9_+-]*)*$")


def finding(
    id: str,
    quantity: str,
    paper: Any,
    ours: Any,
    judge: Judge,
    measured: Any,
    *,
    note: str = "",
    explanation: str = "",
    not_reproducible: str = "",
) -> dict[str, Any]:
    """A finding: the paper's claim, our number, and the judge that grades it.

    Parameters
    ----------
    id : str
        Stable within the experiment (the expectations file's key with the
        experiment's name): dot-separated lowercase words, never the prose.
    quantity, paper, ours, note : str
        What the report shows.
    judge : Judge
        How ``measured`` is graded against the claim (:mod:`.judges`).
    measured : number, pair or list
        Our value(s), as the judge takes them.
    explanation : str
        Why ours differs, where known (shown when the judge says differs).
    not_reproducible : str
        Set when the paper's value cannot be obtained here at all: the
        reason, which becomes the explanation; the judge then only states
        the tolerance that would apply.

    Returns
    -------
    dict
        The finding, graded: ``verdict``, ``tolerance`` and ``ok`` set, the
        judge as plain data (:func:`split_result` grades it again).

    Examples
    --------
    >>> from wafercoll.experiments import finding
    >>> from wafercoll.experiments.judges import Faster
    >>> f = finding("speedup.a_b", "A over B", "1.6x", "1.62x", Faster("1.6"), 1.62)
    >>> f["verdict"], f["tolerance"].split(" (")[0]
    ('reproduced', '1.6x: [1.55, 1.65)')
    """
    f: dict[str, Any] = {
        "id": id,
        "quantity": quantity,
        "paper": paper,
        "ours": ours,
        "note": note,
        "judge": judge,
        "measured": plain(measured),
        "explanation": explanation,
    }
    if not_reproducible:
        f["verdict"] = "not reproducible"
        f["explanation"] = not_reproducible
    return _with_verdict(f, f"finding {id!r}")


def _with_verdict(f: dict[str, Any], what: str) -> dict[str, Any]:
    """The finding with its judge's ``verdict``, ``tolerance`` and ``ok`` set.

    The verdict is computed, never given: only ``"not reproducible"`` (with
    an explanation) may be set by hand. ``ok`` is True when reproduced, False
    when it differs, and None otherwise.
    """
    fid = f.get("id")
    if not isinstance(fid, str) or not _ID.match(fid):
        raise ValueError(
            f"{what} ({f['quantity']!r}) needs an id of dot-separated lowercase "
            f"words, got {fid!r}"
        )
    judge = f.get("judge")
    if isinstance(judge, Mapping):
        judge = judge_from_dict(dict(judge))
    if not isinstance(judge, Judge):
        raise ValueError(
            f"{what} ({f['quantity']!r}) has no judge: every finding states its "
            "tolerance (see wafercoll.experiments.judges)"
        )
    if isinstance(judge, Identity):
        raise ValueError(
            f"{what} ({f['quantity']!r}) is an identity, not a finding: test it"
        )
    given = f.get("verdict")
    if given is not None and given not in VERDICTS:
        raise ValueError(
            f"{what}: verdict must be one of {', '.join(VERDICTS)}, got {given!r}"
        )
    verdict = given if given == "not reproducible" else judge.verdict(f.get("measured"))
    # A verdict or ok given with the finding (a finding graded before) must be
    # the judge's: a verdict is never set by hand.
    if given is not None and given != verdict:
        raise ValueError(
            f"{what}: verdict {given!r} contradicts the judge's {verdict!r} (only "
            "'not reproducible' is given by hand)"
        )
    ok = f.get("ok")
    if ok is not None and ok != (verdict == "reproduced"):
        raise ValueError(f"{what}: ok={ok} contradicts the judge's {verdict!r}")
    explanation = str(f.get("explanation") or "")
    if verdict == "not reproducible" and not explanation:
        raise ValueError(f"{what}: a 'not reproducible' verdict needs an explanation")
    f["verdict"] = verdict
    f["judge"] = judge.to_dict()
    f["measured"] = plain(f.get("measured"))
    f["tolerance"] = judge.tolerance
    f["explanation"] = explanation
    f["ok"] = {"reproduced": True, "differs": False}.get(verdict)
    return f


def _column(values: Any, what: str) -> list[Any]:
    """One column as a list of Python scalars; refuse nested or scalar values."""
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise ValueError(f"{what} must be 1-D, got shape {values.shape}")
        return values.tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{what} must be a list or a 1-D array")
    out = [v.item() if isinstance(v, np.generic) else v for v in values]
    if any(
        isinstance(v, (Sequence, np.ndarray)) and not isinstance(v, str) for v in out
    ):
        raise ValueError(f"{what} must hold scalars, not sequences")
    return out


def new_axes(ax: Any = None) -> Any:
    """Return ``ax``, or the Axes of a new figure of the experiments' size.

    :func:`wafercoll.plot.new_axes` at :data:`wafercoll.plot.FIGSIZE`; this
    is the only figure the experiments open themselves.
    """
    from .. import plot

    return plot.new_axes(ax, figsize=plot.FIGSIZE)


def write_csv(path: str, columns: Mapping[str, list[Any]]) -> int:
    """Write the columns as CSV (NaN as an empty cell), atomically; the data rows."""
    names = list(columns)
    rows = len(next(iter(columns.values()))) if columns else 0
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(names)
        for i in range(rows):
            writer.writerow(
                ["" if _is_nan(columns[n][i]) else columns[n][i] for n in names]
            )
    return rows


#: Columns of a findings CSV (``<name>.findings.csv``, ``findings.csv``).
FINDING_COLUMNS = (
    "experiment",
    "id",
    "quantity",
    "paper",
    "ours",
    "measured",
    "verdict",
    "tolerance",
    "explanation",
    "note",
)


def findings_columns(
    experiment: str, findings: Sequence[Mapping[str, Any]]
) -> dict[str, list[Any]]:
    """Findings as CSV columns (:data:`FINDING_COLUMNS`), one row each."""
    cols: dict[str, list[Any]] = {k: [] for k in FINDING_COLUMNS}
    for f in findings:
        for k in FINDING_COLUMNS:
            v = f.get(k, "")
            cols[k].append(experiment if k == "experiment" else str(v))
    return cols


def _is_nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def verdict_line(findings: Sequence[Mapping[str, Any]]) -> str:
    """The verdicts of an experiment's findings in one line, for its figure.

    Examples
    --------
    >>> from wafercoll.experiments import verdict_line
    >>> verdict_line([{"verdict": "differs"}, {"verdict": "reproduced"},
    ...               {"verdict": "reproduced"}])
    'findings: 2 reproduced, 1 differs (REPORT.md)'
    >>> verdict_line([])
    ''
    """
    counts = verdict_counts(f.get("verdict") for f in findings)
    return f"findings: {counts} (REPORT.md)" if counts else ""


def verdict_counts(verdicts: Iterable[str]) -> str:
    """``"2 reproduced, 1 differs"``: the non-zero counts, in :data:`VERDICTS` order.

    Examples
    --------
    >>> from wafercoll.experiments import verdict_counts
    >>> verdict_counts(["differs", "reproduced", "reproduced"])
    '2 reproduced, 1 differs'
    """
    seen = list(verdicts)
    parts = [f"{seen.count(v)} {v}" for v in VERDICTS]
    return ", ".join(p for p in parts if not p.startswith("0 "))


def draw_figure(
    exp: Experiment,
    columns: Mapping[str, list[Any]],
    findings: Sequence[Mapping[str, Any]] = (),
) -> Any:
    """The experiment's figure on a fresh Agg canvas, its verdicts in the title.

    Every figure gets a title (the experiment's, unless its panels have their
    own) and, under it, the verdicts of the findings it checks
    (:func:`verdict_line`), so a saved figure says how it compares with the
    paper without the report beside it.

    Examples
    --------
    >>> import wafercoll.experiments as wx
    >>> def plot(cols, ax=None):
    ...     ax = wx.new_axes(ax)
    ...     ax.plot(cols["x"], cols["y"])
    ...     return ax
    >>> exp = wx.Experiment("demo_line", "A line", "000", "y = x + 1",
    ...                     run=lambda quick=False: ({}, []), plot=plot)
    >>> fig = wx.draw_figure(exp, {"x": [0, 1], "y": [1, 2]},
    ...                      [{"verdict": "reproduced"}])
    >>> fig._suptitle.get_text().splitlines()
    ['A line', 'findings: 1 reproduced (REPORT.md)']
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    returned = exp.plot(columns, ax=ax)
    if returned is not None and getattr(returned, "figure", fig) is not fig:
        raise ValueError(f"{exp.name}: plot() drew on another figure than the given ax")
    line = verdict_line(findings)
    sup = getattr(fig, "_suptitle", None)
    if sup is not None:
        if line:
            sup.set_text(f"{sup.get_text()}\n{line}")
    elif line or not any(a.get_title() for a in fig.axes):
        text = f"{exp.title}\n{line}" if line else exp.title
        fig.suptitle(text, fontsize="medium")  # every figure has a title
    return fig


def _save_figure(
    exp: Experiment,
    columns: Mapping[str, list[Any]],
    stem: str,
    findings: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Draw the experiment (:func:`draw_figure`); write PNG and SVG."""
    fig = draw_figure(exp, columns, findings)
    paths = []
    for ext, kwargs in (("png", {"dpi": 150}), ("svg", {})):
        path = f"{stem}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, **kwargs)
        paths.append(path)
    return paths


def run_experiment(
    exp: Experiment | str, out_dir: str | os.PathLike[str], quick: bool = False
) -> dict[str, Any]:
    """Run an experiment and write its data and figure into ``out_dir``.

    Writes ``<name>.csv`` (a header of column names, then one row per
    observation; None and NaN become empty cells), ``<name>.png``,
    ``<name>.svg`` and, when there are findings, ``<name>.findings.csv``
    (:data:`FINDING_COLUMNS`, with each finding's verdict). The figure is a
    :class:`matplotlib.figure.Figure` on an Agg canvas, so pyplot's global
    state is never touched.

    Parameters
    ----------
    exp : Experiment or str
        The experiment or its registered name.
    out_dir : path
        Created if missing.
    quick : bool
        Run the reduced sweep.

    Returns
    -------
    dict
        ``name``, ``title``, ``paper``, ``claim``, ``files`` (the paths
        written), ``rows`` (CSV data rows), ``findings`` and ``seconds`` (wall
        time of running, plotting and writing).
    """
    if isinstance(exp, str):
        exp = get_experiment(exp)
    if not isinstance(exp, Experiment):
        raise TypeError(f"expected an Experiment or a name, got {type(exp).__name__}")
    out = os.fspath(out_dir)
    os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    columns, findings = split_result(exp.run(quick=quick), exp.name)
    stem = os.path.join(out, exp.name)
    rows = write_csv(stem + ".csv", columns)
    files = [stem + ".csv", *_save_figure(exp, columns, stem, findings)]
    if findings:
        write_csv(stem + ".findings.csv", findings_columns(exp.name, findings))
        files.append(stem + ".findings.csv")
    return {
        **exp.to_dict(),
        "files": files,
        "rows": rows,
        "findings": findings,
        "seconds": time.perf_counter() - start,
    }


# Experiments register themselves on import; keep these imports at the end.
from . import (  # noqa: E402, F401
    bounds_ratios,
    demo,
    mesh_mcm,
    node_aware,
    torus_swing,
    wafer_allreduce,
    wafer_autogen_table1,
    wafer_calibrated,
    wafer_curves,
    wafer_reduce_1d,
    wafer_sim_1d,
)
