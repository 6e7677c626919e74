"""Argument checking shared by the public modules."""

from __future__ import annotations

import contextlib
import itertools
import numbers
import operator
import os
import signal
from collections.abc import Iterator
from typing import Any

import numpy as np

#: Largest integer any argument may take unless a smaller maximum is given:
#: the compiled core holds sizes and counts in signed 64-bit integers.
INT_LIMIT = (1 << 62) - 1


def as_int(
    value: Any, name: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an int within ``[minimum, maximum]``.

    ``maximum`` defaults to :data:`INT_LIMIT`, so that no argument overflows
    the compiled core's 64-bit integers.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (bools, floats and strings are refused).
    ValueError
        If it lies outside the accepted range.
    """
    if type(value) is int:  # the common case, without the ABC checks below
        v = value
    elif isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    else:
        v = operator.index(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    top = INT_LIMIT if maximum is None else maximum
    if v > top:
        raise ValueError(f"{name} must be <= {top}, got {v}")
    return v


def as_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a bool; ``TypeError`` naming ``name`` for anything else."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def as_real(
    value: Any,
    name: str,
    minimum: float | None = None,
    *,
    positive: bool = False,
    maximum: float | None = None,
) -> float:
    """Return ``value`` as a float, optionally finite within given bounds.

    ``minimum`` (``>=``), ``positive`` (``> 0``) and ``maximum`` (``<=``) each
    imply a finite value.

    Raises
    ------
    TypeError
        If ``value`` is not a real number (bools, strings and complex numbers
        are refused).
    ValueError
        If it is not finite, too large for a float, or outside the accepted
        range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:
        digits = len(str(abs(int(value))))
        raise ValueError(f"{name} is too large for a float ({digits} digits)") from None
    if minimum is None and not positive and maximum is None:
        return v
    if not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum:g}, got {v}")
    if positive and v <= 0.0:
        raise ValueError(f"{name} must be > 0, got {v}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[str]:
    """A temporary path beside ``path`` that replaces it once the block succeeds.

    Every file wafercoll writes goes through here, so an interrupted or
    failed write never leaves a truncated file behind.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write text (UTF-8) or bytes to ``path`` through :func:`atomic_path`."""
    with atomic_path(path) as tmp:
        if isinstance(data, bytes):
            with open(tmp, "wb") as fh:
                fh.write(data)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                fh.write(data)


def stop_threads(pool: Any) -> None:
    """Stop the work running on a ``ThreadPoolExecutor`` and shut it down.

    Ctrl-C raises KeyboardInterrupt in the main thread only, and the compiled
    core's long calls (simulations, verification) poll Python's signal state,
    which other threads never see. So a caller that catches KeyboardInterrupt
    in the main thread while the pool's threads are in such calls opens a
    stop request: every long C++ call, on any thread, then raises at its next
    poll (within milliseconds), the pool's queued work is cancelled, and the
    request is closed once the threads have ended. Work that is not in the
    compiled core finishes its current call.
    """
    from . import _core

    _core._request_stop(True)
    try:
        pool.shutdown(wait=True, cancel_futures=True)
    finally:
        _core._request_stop(False)


def block_text(ranges: Any) -> str:
    """``"0-3,7"`` for the half-open block ranges ``[(0, 4), (7, 8)]``."""
    return ",".join(f"{lo}-{hi - 1}" if hi - lo > 1 else str(lo) for lo, hi in ranges)


def html_table(caption: str, items: Any) -> str:
    """A two-column HTML table (Jupyter reprs): ``items`` are (name, value) pairs.

    Floats show 6 significant digits, None a dash, arrays their shape and
    range; everything is escaped.
    """
    import html

    def show(v: Any) -> str:
        if isinstance(v, bool) or v is None:
            return "-" if v is None else str(v)
        if isinstance(v, float):
            return f"{v:.6g}"
        if isinstance(v, np.ndarray):
            if v.size == 0:
                return f"array {v.shape}"
            return f"array {v.shape}, {v.min():.6g} .. {v.max():.6g}"
        return str(v)

    rows = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
        f"<td style='text-align:left'>{html.escape(show(v))}</td></tr>"
        for k, v in items
    )
    return f"<table><caption>{html.escape(caption)}</caption>{rows}</table>"


def fields_equal(a: Any, b: Any) -> bool:
    """``==`` for dataclasses with NumPy array fields (arrays compared whole).

    Use as ``__eq__ = fields_equal`` in the class body: the generated
    ``__eq__`` would ask a NumPy array for a single truth value.
    """
    import dataclasses

    if type(a) is not type(b):
        return NotImplemented
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)):
                return False
            if not np.array_equal(x, y):
                return False
        elif x != y:
            return False
    return True


def csv_rows(rows: list[dict[str, Any]]) -> str:
    """CSV text of records that share their keys (the first one's order)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def did_you_mean(word: str, choices: Any) -> str:
    """``"; did you mean 'mesh'?"`` for the closest of ``choices``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    if not close:
        return ""
    return f"; did you mean {' or '.join(repr(c) for c in close)}?"


def human_bytes(n: float) -> str:
    """``67108864`` -> ``64.0 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def human_seconds(t: float) -> str:
    """``0.00504`` -> ``5.04 ms``."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9)):
        if abs(t) >= scale or unit == "ns":
            return f"{t / scale:.3g} {unit}"
    raise AssertionError("unreachable")


def exit_text(exitcode: int | None) -> str:
    """How a child process ended, in words, from its ``exitcode``.

    Examples
    --------
    >>> exit_text(-9)
    'killed by signal 9 (SIGKILL)'
    >>> exit_text(3)
    'exited with code 3'
    """
    if exitcode is not None and exitcode < 0:
        try:
            sig = signal.Signals(-exitcode).name
        except ValueError:
            sig = "unknown"
        return f"killed by signal {-exitcode} ({sig})"
    return f"exited with code {exitcode}"


def int_array(value: Any, name: str, dtype: Any) -> np.ndarray:
    """``value`` as a flat contiguous array of ``dtype``, checked.

    Raises
    ------
    TypeError
        If it holds anything but integers.
    ValueError
        If a value does not fit ``dtype``.

    Examples
    --------
    >>> int_array([[1, 2], [3, 4]], "deps", np.int32).tolist()
    [1, 2, 3, 4]
    """
    a = np.asarray(value).ravel()
    if a.size and not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got {a.dtype}")
    info = np.iinfo(dtype)
    if a.size and (a.min() < info.min or a.max() > info.max):
        kind = np.dtype(dtype).name
        raise ValueError(f"{name} holds values outside the {kind} range")
    return np.ascontiguousarray(a, dtype=dtype)


def frozen_csr(lists: Any) -> tuple[np.ndarray, np.ndarray]:
    """Lists of ids as read-only CSR ``(flat, offsets)`` of int64.

    Examples
    --------
    >>> flat, off = frozen_csr([[3, 1], [], [2]])
    >>> flat.tolist(), off.tolist(), flat.flags.writeable
    ([3, 1, 2], [0, 2, 2, 3], False)
    """
    off = np.zeros(len(lists) + 1, np.int64)
    off[1:] = np.cumsum([len(x) for x in lists])
    flat = np.fromiter(itertools.chain.from_iterable(lists), np.int64, int(off[-1]))
    flat.setflags(write=False)
    off.setflags(write=False)
    return flat, off


def cache_root() -> str:
    """``$WAFERCOLL_CACHE`` or ``~/.cache/wafercoll``: results kept on disk."""
    return os.environ.get(
        "WAFERCOLL_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "wafercoll")
    )


def remember(cache: dict[Any, Any], key: Any, value: Any, limit: int) -> Any:
    """Store ``value`` under ``key``, dropping the oldest entry beyond ``limit``."""
    if key not in cache and len(cache) >= limit:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value
