"""Helpers shared by the benchmark scripts (options, timing, table, verdict, JSON)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import wafercoll as wc

# (label, timed function, untimed check of its result)
Case = tuple[str, Callable[[], Any], Callable[[Any], Any]]
# The same with a target time in seconds (None: no target); the check says what
# the result is.
TargetCase = tuple[str, Callable[[], Any], Callable[[Any], str], float | None]


def arg_parser(
    doc: str,
    repeat: int = 5,
    per: str = "case",
    options: Callable[[argparse.ArgumentParser], Any] | None = None,
) -> argparse.ArgumentParser:
    """``--repeat`` and ``--json`` after the script's own ``options``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    if options is not None:
        options(parser)
    parser.add_argument("--repeat", type=int, default=repeat, help=f"timings per {per}")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    return parser


def main(
    doc: str,
    report: Callable[[argparse.Namespace], Sequence[dict[str, Any]]],
    **parser_args: Any,
) -> int:
    """A script's main: options (:func:`arg_parser`), header, ``report``, JSON.

    ``report(args)`` times the cases, prints the table and the headline and
    returns the rows, which ``--json`` saves.
    """
    args = arg_parser(doc, **parser_args).parse_args()
    print_header(args.repeat)
    rows = report(args)
    write_json(args.json, args.repeat, rows)
    return 0


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def time_cases(
    cases: Iterable[Case], repeat: int
) -> Iterator[tuple[str, float, Any, Any]]:
    """Per case: its label, best time, result and what the check returned."""
    for label, fn, check in cases:
        seconds, result = best_of(fn, repeat)
        yield label, seconds, result, check(result)


def run_targets(cases: Iterable[TargetCase], repeat: int) -> list[dict[str, Any]]:
    """Time the cases, print their table and return the rows.

    A row holds the case, its best time, its target, the check's summary of
    the result and whether the target was met (``ok``).
    """
    rows = []
    for label, fn, check, target in cases:
        seconds, result = best_of(fn, repeat)
        rows.append(
            {
                "case": label,
                "best_s": seconds,
                "target_s": "-" if target is None else f"< {target:g}",
                "result": check(result),
                "ok": target is None or seconds < target,
            }
        )
    print_table(
        rows,
        [("case", ""), ("best_s", ".3f"), ("target_s", ">"), ("result", "")],
    )
    return rows


def missed(rows: Iterable[dict[str, Any]]) -> list[str]:
    """The tags (``(a)``, ...) of the rows of :func:`run_targets` that missed."""
    return [r["case"].split()[0] for r in rows if not r["ok"]]


def verdict(ok: bool, targets: str, missed: Sequence[str] = ()) -> str:
    """``(meets the <targets>)``, or ``(MISSES the <targets>; missed: ...)``."""
    tail = f"; missed: {', '.join(missed)}" if missed else ""
    return f"({'meets' if ok else 'MISSES'} the {targets}{tail})"


def event_stats(events: int, seconds: float) -> dict[str, Any]:
    """Simulated packet-stage events, the best time and the rate in M events/s."""
    return {
        "events": events,
        "best_s": seconds,
        "Mevents_per_s": events / seconds / 1e6,
    }


def event_columns(seconds: str, rate: str) -> list[tuple[str, str]]:
    """Table columns of :func:`event_stats` (formats of the time and the rate)."""
    return [("events", ",d"), ("best_s", seconds), ("Mevents_per_s", rate)]


def print_header(repeat: int) -> None:
    """One line naming the package version and the machine."""
    print(
        f"wafercoll {wc.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, best of {repeat}"
    )


def print_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]
) -> None:
    """Rows as an aligned text table; ``columns`` are (key, format) pairs."""
    cells = [[format(r[k], f) for k, f in columns] for r in rows]
    widths = [
        max(len(k), *(len(c[i]) for c in cells)) for i, (k, _) in enumerate(columns)
    ]
    print(
        "  ".join(
            k.ljust(w) if i == 0 else k.rjust(w)
            for i, ((k, _), w) in enumerate(zip(columns, widths, strict=True))
        )
    )
    print("  ".join("-" * w for w in widths))
    for c in cells:
        print(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w)
                for i, (v, w) in enumerate(zip(c, widths, strict=True))
            )
        )


def write_json(path: str | None, repeat: int, rows: Sequence[dict[str, Any]]) -> None:
    """Save the rows (when a path was given)."""
    if path:
        doc = {"version": wc.__version__, "repeat": repeat, "rows": list(rows)}
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)
