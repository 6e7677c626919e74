"""Argument checking shared by the public modules."""

from __future__ import annotations

import numbers
import operator
from typing import Any

import numpy as np


def as_int(
    value: Any, name: str, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as an int within ``[minimum, maximum]``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer (bools, floats and strings are refused).
    ValueError
        If it lies outside the accepted range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = operator.index(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {v}")
    return v


def as_real(
    value: Any,
    name: str,
    minimum: float | None = None,
    *,
    positive: bool = False,
) -> float:
    """Return ``value`` as a finite float, optionally ``>= minimum`` or ``> 0``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number (bools, strings and complex numbers
        are refused).
    ValueError
        If it is not finite or lies outside the accepted range.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    if minimum is None and not positive:
        return v
    if not np.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v}")
    if positive and v <= 0.0:
        raise ValueError(f"{name} must be > 0, got {v}")
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v
