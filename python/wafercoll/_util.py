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
