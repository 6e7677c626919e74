"""Quantities with units, as people write them: ``64KiB``, ``25GB/s``, ``1us``.

The command line, sweep grids and the MPI benchmarks read sizes, rates and
times through these parsers, so that every place accepts the same spellings
and refuses the same ambiguous ones. Each parser returns plain SI numbers
(bytes, bytes per second, seconds) and raises :class:`ValueError` whose
message names the quantity (``name``) and the accepted units.

Examples
--------
>>> from wafercoll import units
>>> units.parse_size("64KiB"), units.parse_size("1MB")
(65536, 1000000)
>>> units.parse_rate("25GB/s"), units.parse_rate("100Gbit/s")
(25000000000.0, 12500000000.0)
>>> units.parse_time("1us"), units.parse_time("500ns"), units.parse_time("2e-6")
(1e-06, 5e-07, 2e-06)
"""

from __future__ import annotations

import math
import re

__all__ = ["parse_rate", "parse_size", "parse_size_range", "parse_time"]

#: Byte units: decimal (kB, MB = 1000**k) and binary (KiB, MiB = 1024**k).
#: A bare ``K`` or ``M`` is refused as ambiguous.
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    **{f"{p}b": 1000**k for k, p in enumerate("kmgtp", 1)},
    **{f"{p}ib": 1 << (10 * k) for k, p in enumerate("kmgtp", 1)},
}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_SIZE_HELP = (
    "an integer with an optional unit: B, kB/MB/GB/TB (powers of 1000) or "
    "KiB/MiB/GiB/TiB (powers of 1024)"
)

_NUMBER = r"([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_BINARY = {"ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30, "ti": 2.0**40}
# Rates: a prefix, then B (bytes) or b / bit (bits), then /s or ps.
_RATE_RE = re.compile(
    rf"^\s*{_NUMBER}\s*(?:([kKmMgGtTpP]i?)?(B|b|bit|bits|byte|bytes)(?:/s|ps))?\s*$"
)
_RATE_HELP = (
    "a number of bytes per second, optionally with a unit: B/s, kB/s, MB/s, "
    "GB/s, TB/s (powers of 1000), KiB/s, MiB/s, GiB/s (powers of 1024) or "
    "bits: Mbit/s, Gbit/s, Gb/s"
)
# Seconds are divided by these: exact powers of ten, so that 500ns is 5e-07
# and not one ulp more, as 500 * 1e-9 would give.
_TIME_UNITS = {
    "": 1.0,
    "s": 1.0,
    "ms": 1e3,
    "us": 1e6,
    "µs": 1e6,
    "ns": 1e9,
    "ps": 1e12,
}
_TIME_RE = re.compile(rf"^\s*{_NUMBER}\s*([a-zµ]*)\s*$")
_TIME_HELP = "a number of seconds, optionally with a unit: s, ms, us (or µs), ns, ps"


def parse_size(text: str, name: str = "size") -> int:
    """Parse a byte count: ``4096``, ``64KiB``, ``1MiB``, ``1MB`` (= 10**6).

    Parameters
    ----------
    text : str
        An integer with an optional unit; ``B``, ``kB``, ``MB``, ... are
        powers of 1000, ``KiB``, ``MiB``, ... powers of 1024 (case does not
        matter).
    name : str
        What the value is, for the error message (e.g. ``"--size-bytes"``).

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    ValueError
        For a malformed value or a bare ``K``/``M``/``G`` (ambiguous between
        1000 and 1024).

    Examples
    --------
    >>> parse_size("4KiB"), parse_size("4kB"), parse_size("12")
    (4096, 4000, 12)
    """
    m = _SIZE_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if m and unit in ("k", "m", "g", "t", "p"):
        raise ValueError(
            f"{name}: ambiguous size {text!r}: write {m.group(1)}{unit.upper()}iB "
            f"(binary, 1024**k) or {m.group(1)}{unit.upper()}B (decimal, 1000**k)"
        )
    if not m or unit not in _SIZE_UNITS:
        raise ValueError(f"{name}: invalid size {text!r} ({_SIZE_HELP})")
    return int(m.group(1)) * _SIZE_UNITS[unit]


def parse_size_range(text: str, name: str = "sizes") -> list[int]:
    """Parse ``LO:HI[:FACTOR]`` into the sizes LO, LO * FACTOR, ... <= HI.

    FACTOR defaults to 4; at most 64 sizes.

    Examples
    --------
    >>> parse_size_range("1KiB:16KiB")
    [1024, 4096, 16384]
    """
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(
            f"{name}: invalid size range {text!r} (expected LO:HI or LO:HI:FACTOR, "
            "e.g. 1KiB:1GiB:4)"
        )
    lo, hi = parse_size(parts[0], name), parse_size(parts[1], name)
    factor = 4
    if len(parts) == 3:
        if not re.fullmatch(r"\s*[0-9]+\s*", parts[2]) or int(parts[2]) < 2:
            raise ValueError(
                f"{name}: invalid factor {parts[2]!r} in {text!r} (an integer >= 2)"
            )
        factor = int(parts[2])
    if lo < 1 or hi < lo:
        raise ValueError(f"{name}: invalid size range {text!r} (need 1 <= LO <= HI)")
    sizes = [lo]
    while sizes[-1] * factor <= hi:
        sizes.append(sizes[-1] * factor)
    if len(sizes) > 64:
        raise ValueError(f"{name}: {text!r} gives more than 64 sizes")
    return sizes


def _finite(value: float, text: str, name: str, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name}: invalid {what} {text!r} (not finite)")
    return value


def parse_rate(text: str, name: str = "bandwidth") -> float:
    """Parse a rate in bytes per second: ``25GB/s``, ``1.5 GiB/s``, ``1e9``.

    A plain number is bytes per second. ``B`` is a byte and ``b`` (or
    ``bit``) a bit: ``100Gb/s`` and ``100Gbit/s`` are 12.5e9 B/s. ``ps`` may
    replace ``/s`` (``25GBps``).

    Parameters
    ----------
    text : str
    name : str
        What the value is, for the error message (e.g. ``"--bandwidth"``).

    Returns
    -------
    float
        Bytes per second.

    Raises
    ------
    ValueError
        For a malformed value, a unit that is not a rate, or a prefix
        without ``B`` or ``b`` (``25G`` is ambiguous).

    Examples
    --------
    >>> parse_rate("25GB/s"), parse_rate("1e9"), parse_rate("1KiB/s")
    (25000000000.0, 1000000000.0, 1024.0)
    """
    m = _RATE_RE.match(text)
    if not m:
        raise ValueError(f"{name}: invalid rate {text!r} ({_RATE_HELP})")
    number, prefix, unit = m.group(1), (m.group(2) or "").lower(), m.group(3)
    scale = _BINARY[prefix] if prefix.endswith("i") else _PREFIX[prefix]
    if unit is not None and unit in ("b", "bit", "bits"):
        scale /= 8.0
    return _finite(float(number) * scale, text, name, "rate")


def parse_time(text: str, name: str = "time") -> float:
    """Parse a duration in seconds: ``1us``, ``500ns``, ``2e-6``, ``0.5ms``.

    A plain number is seconds.

    Parameters
    ----------
    text : str
    name : str
        What the value is, for the error message (e.g. ``"--latency"``).

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError
        For a malformed value or an unknown unit.

    Examples
    --------
    >>> parse_time("1us"), parse_time("500ns"), parse_time("3")
    (1e-06, 5e-07, 3.0)
    """
    m = _TIME_RE.match(text)
    if not m or m.group(2) not in _TIME_UNITS:
        raise ValueError(f"{name}: invalid time {text!r} ({_TIME_HELP})")
    return _finite(float(m.group(1)) / _TIME_UNITS[m.group(2)], text, name, "time")
