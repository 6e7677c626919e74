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
*finding* is a dict with the keys ``quantity`` (what was compared),
``paper`` (the value or formula the paper states), ``ours`` (what wafercoll
measured) and ``note``, and a verdict: either ``ok`` (a bool: whether the two
agree within the finding's tolerance) or ``verdict`` itself, one of
:data:`VERDICTS`:

* ``"reproduced"`` (``ok=True``): ours agrees with the paper within
  ``tolerance`` (a phrase such as ``"within 3 points"``);
* ``"differs"`` (``ok=False``): ours disagrees; ``explanation`` says why when
  the reason is known (an empty explanation marks a difference not yet
  explained);
* ``"not reproducible"``: the paper's value cannot be reproduced here (it was
  measured on hardware wafercoll does not model, say); ``explanation`` says
  why and is required.

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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util import atomic_path

__all__ = [
    "VERDICTS",
    "Experiment",
    "experiments",
    "get_experiment",
    "new_axes",
    "note_explains",
    "progress",
    "register_experiment",
    "run_experiment",
    "split_result",
]

FINDING_KEYS = ("quantity", "paper", "ours", "note")
#: The verdicts a finding can have (see the module docstring).
VERDICTS = ("reproduced", "differs", "not reproducible")


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


def _with_verdict(f: dict[str, Any], what: str) -> dict[str, Any]:
    """The finding with ``verdict``, ``tolerance`` and ``explanation`` set."""
    verdict = f.get("verdict")
    ok = f.get("ok")
    if verdict is None:
        if ok is None:
            raise ValueError(
                f"{what} ({f['quantity']!r}) has neither ok nor a verdict "
                f"(one of {', '.join(VERDICTS)})"
            )
        verdict = "reproduced" if ok else "differs"
    if verdict not in VERDICTS:
        raise ValueError(
            f"{what}: verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}"
        )
    if ok is not None and (verdict == "reproduced") != bool(ok):
        raise ValueError(f"{what}: ok={ok} contradicts verdict {verdict!r}")
    explanation = str(f.get("explanation") or "")
    if verdict == "not reproducible" and not explanation:
        raise ValueError(f"{what}: a 'not reproducible' verdict needs an explanation")
    f["verdict"] = verdict
    f["tolerance"] = str(f.get("tolerance") or "")
    f["explanation"] = explanation
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


def _write_csv(path: str, columns: Mapping[str, list[Any]]) -> int:
    """Write the columns as CSV; return the number of data rows."""
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
    "quantity",
    "paper",
    "ours",
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
            cols[k].append(experiment if k == "experiment" else str(f.get(k, "")))
    return cols


def _is_nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _save_figure(
    exp: Experiment, columns: Mapping[str, list[Any]], stem: str
) -> list[str]:
    """Draw the experiment on a fresh Agg figure; write PNG and SVG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.2), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    returned = exp.plot(columns, ax=ax)
    if returned is not None and getattr(returned, "figure", fig) is not fig:
        raise ValueError(f"{exp.name}: plot() drew on another figure than the given ax")
    if getattr(fig, "_suptitle", None) is None and not any(
        a.get_title() for a in fig.axes
    ):
        fig.suptitle(exp.title, fontsize="medium")  # every figure has a title
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
    rows = _write_csv(stem + ".csv", columns)
    files = [stem + ".csv", *_save_figure(exp, columns, stem)]
    if findings:
        _write_csv(stem + ".findings.csv", findings_columns(exp.name, findings))
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
