"""Judges: how a finding's verdict follows from our measured number(s).

Every finding carries a judge, built from the paper's claim, and the value
(or values) we measured; the verdict is the judge's, never set by hand. The
standard every judge follows:

* **The claim's own precision is the tolerance.** ``Value("1.6")`` accepts
  ``[1.55, 1.65)``: half a unit in the last digit the paper printed. A claim
  the paper hedges ("about 83 %", read off a figure) gets a band stated in
  the finding (``rel=`` or ``abs=`` with ``why=``), never a silent one.
* **A comparative claim is judged in its direction.** :class:`Faster`
  ("A is 1.1x faster than B") never accepts A slower than B, whatever the
  band: its interval is cut at 1.
* **A range is judged at both ends**, each at its own precision, and in
  direction: an end the paper puts above (below) 1 must be above (below) 1.
* **"Up to X" is judged on the maximum, two-sided** (:class:`UpTo`): the
  largest value must be X, not anything below it.
* **Inequalities that are the claim itself** ("never below the bound",
  "more than 10x") are one-sided (:class:`AtLeast`, :class:`AtMost`).
* **Fitted quantities are calibrated, not reproduced** (:class:`Calibrated`):
  the verdict says how many free parameters were fitted on how many points;
  the held-out points are findings of their own, with their own judges.
* **Identities are not findings** (:class:`Identity`): a minimum over a set
  compared with a member of the set cannot fail; it belongs in a unit test.

A judge is plain data: :meth:`Judge.to_dict` and :func:`judge_from_dict`
round-trip it, so a record's findings (dicts) keep it, and
:meth:`Judge.probes` gives values just inside and just outside every edge
of its tolerance (the tests feed them back and check the verdict flips).

Examples
--------
>>> from wafercoll.experiments.judges import Faster, Range, Value
>>> Value("1.6").accepts(1.62), Value("1.6").accepts(1.66)
(True, False)
>>> Faster("1.1").accepts(0.9)  # never the opposite direction
False
>>> Range("0.99", "1.6").accepts((0.99, 1.21))
False
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, ClassVar

__all__ = [
    "ABOUT",
    "AtLeast",
    "AtMost",
    "Calibrated",
    "Exact",
    "Faster",
    "Identity",
    "Judge",
    "Range",
    "UpTo",
    "Value",
    "judge_from_dict",
]

#: The band given to a claim the paper hedges ("approximately 2.76x"): a
#: relative half-width, stated in every finding that uses it.
ABOUT = 0.05


def _fmt(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def _parse(claim: Any) -> tuple[float, int | None]:
    """A claim's value and, when given as text, its printed decimals."""
    if isinstance(claim, str):
        d = Decimal(claim.strip())
        exp = d.as_tuple().exponent
        return float(d), max(0, -exp) if isinstance(exp, int) else None
    return float(claim), None


@dataclasses.dataclass(frozen=True)
class _Band:
    """An interval ``lo .. hi``; each end open or closed."""

    lo: float
    hi: float
    lo_open: bool = False
    hi_open: bool = False

    def __contains__(self, x: float) -> bool:
        if not isinstance(x, (int, float)) or math.isnan(x):
            return False
        above = x > self.lo if self.lo_open else x >= self.lo
        below = x < self.hi if self.hi_open else x <= self.hi
        return above and below

    def cut(self, lo: float = -math.inf, hi: float = math.inf) -> _Band:
        """The band cut to ``(lo, hi)`` (the cut ends open)."""
        b = self
        if lo > b.lo or (lo == b.lo and not b.lo_open):
            b = dataclasses.replace(b, lo=lo, lo_open=True)
        if hi < b.hi or (hi == b.hi and not b.hi_open):
            b = dataclasses.replace(b, hi=hi, hi_open=True)
        return b

    def text(self) -> str:
        if math.isinf(self.hi):
            return f"{'>' if self.lo_open else '>='} {_fmt(self.lo)}"
        if math.isinf(self.lo):
            return f"{'<' if self.hi_open else '<='} {_fmt(self.hi)}"
        return (
            f"{'(' if self.lo_open else '['}{_fmt(self.lo)}, "
            f"{_fmt(self.hi)}{')' if self.hi_open else ']'}"
        )

    def probes(self) -> list[tuple[float, bool]]:
        """Values just inside and just outside each finite end."""
        out: list[tuple[float, bool]] = []
        width = self.hi - self.lo
        for end, is_lo, is_open in (
            (self.lo, True, self.lo_open),
            (self.hi, False, self.hi_open),
        ):
            if math.isinf(end):
                continue
            eps = 1e-9 * max(1.0, abs(end))
            if math.isfinite(width):
                eps = min(eps, width / 4)
            inward = 1.0 if is_lo else -1.0
            # On a closed end the end itself is in; on an open one it is out.
            out.append((end, not is_open))
            out.append((end + inward * eps, True))
            out.append((end - inward * eps, False))
        return out


def _band(claim: float, digits: int | None, rel: float | None, abs_: float | None):
    given = [
        k for k, v in (("digits", digits), ("rel", rel), ("abs", abs_)) if v is not None
    ]
    if len(given) != 1:
        raise ValueError(
            "a tolerance needs exactly one of digits (the claim's precision), rel "
            f"or abs (a stated band); got {', '.join(given) or 'none'}"
        )
    if digits is not None:
        # In decimal, so that "1.6" accepts [1.55, 1.65) exactly as printed.
        d = Decimal(repr(float(claim)))
        h = Decimal(5) * Decimal(10) ** (-digits - 1)
        return _Band(float(d - h), float(d + h), hi_open=True)
    if rel is not None:
        return _Band(claim - abs(claim) * rel, claim + abs(claim) * rel)
    assert abs_ is not None
    return _Band(claim - abs_, claim + abs_)


def _band_words(digits: int | None, rel: float | None, abs_: float | None, why: str):
    if digits is not None:
        return "the claim's precision"
    width = f"+-{100 * rel:g} %" if rel is not None else f"+-{abs_:g}"
    return f"{width}, {why}"


class Judge:
    """What every judge offers (see the module docstring for the standard)."""

    kind: ClassVar[str] = ""
    #: Whether the judge's verdict can be "reproduced" at all.
    reproduces: ClassVar[bool] = True

    def accepts(self, measured: Any) -> bool:
        """Whether ``measured`` agrees with the claim within the tolerance."""
        raise NotImplementedError

    def verdict(self, measured: Any) -> str:
        """``"reproduced"`` or ``"differs"`` (``"calibrated"`` for a fit)."""
        return "reproduced" if self.accepts(measured) else "differs"

    @property
    def tolerance(self) -> str:
        """The tolerance in words, as the report shows it."""
        raise NotImplementedError

    def probes(self) -> list[tuple[Any, bool]]:
        """Measured values just inside (True) and outside (False) every edge."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The judge as plain data (``kind`` and its fields)."""
        return {"kind": self.kind, **dataclasses.asdict(self)}  # type: ignore[call-overload]


@dataclasses.dataclass(frozen=True)
class Value(Judge):
    """A number: ``claim`` within its precision or a stated band.

    Parameters
    ----------
    claim : str or float
        As the paper prints it; text (``"1.6"``) gives the precision.
    digits : int, optional
        Decimals of the claim (default: from the text).
    rel, abs : float, optional
        A stated band instead (relative or absolute half-width), with
        ``why`` saying where it comes from.
    """

    kind: ClassVar[str] = "value"
    claim: str | float
    digits: int | None = None
    rel: float | None = None
    abs: float | None = None
    why: str = ""
    unit: str = ""

    def __post_init__(self) -> None:
        value, printed = _parse(self.claim)
        if self.digits is None and self.rel is None and self.abs is None:
            if printed is None:
                raise ValueError(
                    f"claim {self.claim!r}: give it as printed text, or give "
                    "digits, rel or abs"
                )
            object.__setattr__(self, "digits", printed)
        if (self.rel is not None or self.abs is not None) and not self.why:
            raise ValueError("a stated band (rel or abs) needs why")
        _band(value, self.digits, self.rel, self.abs)

    @property
    def value(self) -> float:
        """The claimed number."""
        return _parse(self.claim)[0]

    def band(self) -> _Band:
        """The accepted interval."""
        return _band(self.value, self.digits, self.rel, self.abs)

    def accepts(self, measured: Any) -> bool:  # noqa: D102
        return _num(measured) in self.band()

    @property
    def tolerance(self) -> str:  # noqa: D102
        words = _band_words(self.digits, self.rel, self.abs, self.why)
        return f"{self.claim}{self.unit}: {self.band().text()} ({words})"

    def probes(self) -> list[tuple[Any, bool]]:  # noqa: D102
        return self.band().probes()


@dataclasses.dataclass(frozen=True)
class UpTo(Value):
    """An "up to X" claim: the maximum we measured must be X (two-sided)."""

    kind: ClassVar[str] = "up_to"

    @property
    def tolerance(self) -> str:  # noqa: D102
        return "the maximum in " + super().tolerance


@dataclasses.dataclass(frozen=True)
class Faster(Value):
    """A claim "A is X times faster than B": the speedup time(B) / time(A).

    Without a number (``claim=None``) only the direction is claimed. The
    interval never reaches 1: A slower than B is never reproduced.
    """

    kind: ClassVar[str] = "faster"
    claim: str | float | None = None

    def __post_init__(self) -> None:
        if self.claim is None:
            return
        super().__post_init__()
        if self.value <= 1:
            raise ValueError(f"a speedup claim must exceed 1, got {self.claim}")

    def band(self) -> _Band:  # noqa: D102
        if self.claim is None:
            return _Band(1.0, math.inf, lo_open=True)
        return super().band().cut(lo=1.0)

    @property
    def tolerance(self) -> str:  # noqa: D102
        if self.claim is None:
            return "faster: speedup > 1" + (f" ({self.why})" if self.why else "")
        words = _band_words(self.digits, self.rel, self.abs, self.why)
        return f"{self.claim}x{self.unit}: {self.band().text()} ({words}; faster)"


@dataclasses.dataclass(frozen=True)
class AtLeast(Judge):
    """A claim that is an inequality: ``measured >= bound`` (``>`` if strict)."""

    kind: ClassVar[str] = "at_least"
    bound: float
    strict: bool = False
    why: str = ""

    def band(self) -> _Band:  # noqa: D102
        return _Band(self.bound, math.inf, lo_open=self.strict)

    def accepts(self, measured: Any) -> bool:  # noqa: D102
        return _num(measured) in self.band()

    @property
    def tolerance(self) -> str:  # noqa: D102
        return self.band().text() + (f" ({self.why})" if self.why else "")

    def probes(self) -> list[tuple[Any, bool]]:  # noqa: D102
        return self.band().probes()


@dataclasses.dataclass(frozen=True)
class AtMost(AtLeast):
    """A claim that is an inequality: ``measured <= bound`` (``<`` if strict)."""

    kind: ClassVar[str] = "at_most"

    def band(self) -> _Band:  # noqa: D102
        return _Band(-math.inf, self.bound, hi_open=self.strict)


@dataclasses.dataclass(frozen=True)
class Range(Judge):
    """A claim "from lo to hi": ours ``(min, max)``, each end at its precision.

    For ratios (``ratio=True``, the default) an end the paper puts above 1
    must be above 1 and one below 1 below it.
    """

    kind: ClassVar[str] = "range"
    lo: str | float
    hi: str | float
    rel: float | None = None
    abs: float | None = None
    why: str = ""
    ratio: bool = True

    def __post_init__(self) -> None:
        for end in (self.lo, self.hi):
            Value(end, rel=self.rel, abs=self.abs, why=self.why)
        if _parse(self.lo)[0] > _parse(self.hi)[0]:
            raise ValueError(f"range {self.lo}..{self.hi} is reversed")

    def bands(self) -> tuple[_Band, _Band]:
        """The accepted intervals of the two ends."""
        out = []
        for end in (self.lo, self.hi):
            b = Value(end, rel=self.rel, abs=self.abs, why=self.why).band()
            v = _parse(end)[0]
            if self.ratio and v > 1:
                b = b.cut(lo=1.0)
            elif self.ratio and v < 1:
                b = b.cut(hi=1.0)
            out.append(b)
        return out[0], out[1]

    def accepts(self, measured: Any) -> bool:  # noqa: D102
        lo, hi = _pair(measured)
        b_lo, b_hi = self.bands()
        return lo <= hi and lo in b_lo and hi in b_hi

    @property
    def tolerance(self) -> str:  # noqa: D102
        b_lo, b_hi = self.bands()
        words = _band_words(
            None if (self.rel or self.abs) else 0, self.rel, self.abs, self.why
        )
        side = "; each end on its side of 1" if self.ratio else ""
        return (
            f"{self.lo}-{self.hi}: smallest in {b_lo.text()}, largest in "
            f"{b_hi.text()} ({words}{side})"
        )

    def probes(self) -> list[tuple[Any, bool]]:  # noqa: D102
        lo, hi = _parse(self.lo)[0], _parse(self.hi)[0]
        b_lo, b_hi = self.bands()
        out: list[tuple[Any, bool]] = []
        out += [((x, max(x, hi)), ok) for x, ok in b_lo.probes()]
        out += [((min(lo, x), x), ok) for x, ok in b_hi.probes()]
        return out


@dataclasses.dataclass(frozen=True)
class Exact(Judge):
    """Equality: counts, orders, sets (as sorted lists), exact cycles."""

    kind: ClassVar[str] = "exact"
    expected: Any
    what: str = ""

    def accepts(self, measured: Any) -> bool:  # noqa: D102
        return _plain(measured) == _plain(self.expected)

    @property
    def tolerance(self) -> str:  # noqa: D102
        what = f" {self.what}" if self.what else ""
        return f"exactly {_plain(self.expected)}{what}"

    def probes(self) -> list[tuple[Any, bool]]:  # noqa: D102
        e = _plain(self.expected)
        if isinstance(e, bool) or e is None:
            return [(e, True), (not e, False)]
        if isinstance(e, int):
            return [(e, True), (e - 1, False), (e + 1, False)]
        if isinstance(e, float):
            return [
                (e, True),
                (math.nextafter(e, -math.inf), False),
                (math.nextafter(e, math.inf), False),
            ]
        if isinstance(e, list):
            out: list[tuple[Any, bool]] = [(e, True), ([*e, "other"], False)]
            if e:
                out.append((e[:-1], False))
            return out
        return [(e, True), (f"{e} (other)", False)]

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"kind": self.kind, "expected": _plain(self.expected), "what": self.what}


@dataclasses.dataclass(frozen=True)
class Calibrated(Judge):
    """A fitted quantity: its verdict is ``"calibrated"``, never reproduced.

    Parameters
    ----------
    params : int
        Free parameters fitted.
    points : int
        Points they were fitted on.
    held_out : int
        Points held out of the fit (judged in findings of their own).
    """

    kind: ClassVar[str] = "calibrated"
    reproduces: ClassVar[bool] = False
    params: int
    points: int
    held_out: int

    def __post_init__(self) -> None:
        if self.params < 1 or self.points < 1 or self.held_out < 0:
            raise ValueError("a calibration fits params >= 1 on points >= 1")

    def accepts(self, measured: Any) -> bool:  # noqa: D102
        return False

    def verdict(self, measured: Any) -> str:  # noqa: D102
        return "calibrated"

    @property
    def tolerance(self) -> str:  # noqa: D102
        exact = " (solved exactly)" if self.params >= self.points else ""
        return (
            f"fitted: {self.params} free parameter(s) on {self.points} point(s)"
            f"{exact}; {self.held_out} held-out point(s) judged separately"
        )

    def probes(self) -> list[tuple[Any, bool]]:  # noqa: D102
        return []


@dataclasses.dataclass(frozen=True)
class Identity(Judge):
    """A comparison that cannot fail (say a minimum against a member of its set).

    Not a finding: a finding built with it is refused; test it instead.
    """

    kind: ClassVar[str] = "identity"
    reproduces: ClassVar[bool] = False
    why: str = ""

    def accepts(self, measured: Any) -> bool:  # noqa: D102
        raise TypeError(f"an identity is not a finding ({self.why}); test it")

    @property
    def tolerance(self) -> str:  # noqa: D102
        return f"identity: {self.why}"

    def probes(self) -> list[tuple[Any, bool]]:  # noqa: D102
        return []


_KINDS: dict[str, type[Judge]] = {
    c.kind: c
    for c in (Value, UpTo, Faster, AtLeast, AtMost, Range, Exact, Calibrated, Identity)
}


def judge_from_dict(d: dict[str, Any]) -> Judge:
    """The judge :meth:`Judge.to_dict` described.

    Raises
    ------
    ValueError
        For an unknown kind.
    """
    d = dict(d)
    kind = d.pop("kind", None)
    if kind not in _KINDS:
        raise ValueError(f"unknown judge kind {kind!r}; known: {', '.join(_KINDS)}")
    return _KINDS[kind](**d)


def _num(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def _pair(x: Any) -> tuple[float, float]:
    if isinstance(x, Sequence) and not isinstance(x, str) and len(x) == 2:
        return _num(x[0]), _num(x[1])
    return math.nan, math.nan


def _plain(x: Any) -> Any:
    """JSON-like form: tuples as lists, NumPy scalars as Python ones."""
    if hasattr(x, "item") and not isinstance(x, (list, tuple, str)):
        try:
            return x.item()
        except (TypeError, ValueError):
            pass
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def plain(x: Any) -> Any:
    """A measured value in plain JSON-like form (what a finding stores)."""
    return _plain(x)
