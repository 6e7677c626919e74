"""Helpers shared by the benchmark scripts (timing, header, table, JSON)."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import wafercoll as wc


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Best wall time of ``repeat`` calls and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


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
