"""The one block splitter: a vector's bytes cut into blocks.

Two ways to cut ``total`` bytes, both in whole units of ``unit`` bytes (1 byte, or a
4-byte wavelet on the wafer):

* ``parts=n``: ``n`` near-equal blocks, the first ``(total / unit) mod n``
  one unit larger (the convention of MPI's ring and Rabenseifner codes, and
  of every builder here);
* ``chunk=c``: blocks of ``c`` bytes (a multiple of ``unit``), the last one
  shorter when ``c`` does not divide ``total`` (pipelined streams).

:func:`split_weighted` cuts it in proportion to weights instead (trees or
switch chips of unequal shares).

>>> from wafercoll.kit import split_bytes
>>> split_bytes(10, 4).tolist()
[3, 3, 2, 2]
>>> split_bytes(10, chunk=4).tolist()
[4, 4, 2]
>>> split_bytes(40, 3, unit=4).tolist()
[16, 12, 12]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_int

__all__ = ["MAX_BLOCKS", "split_bytes", "split_weighted"]

#: Largest number of blocks a schedule may have (the core's limit).
MAX_BLOCKS = 1 << 26


def split_bytes(
    total: Any,
    parts: Any = None,
    *,
    chunk: Any = None,
    unit: int = 1,
    allow_empty: bool = True,
    name: str = "size_bytes",
) -> np.ndarray:
    """Block sizes in bytes of a vector of ``total`` bytes.

    Parameters
    ----------
    total : int
        Bytes of the vector (>= 0, a multiple of ``unit``).
    parts : int, optional
        Number of near-equal blocks (larger ones first).
    chunk : int, optional
        Bytes per block instead (the last block takes the rest); ``total = 0``
        gives one empty block.
    unit : int
        Blocks hold whole units (``4``: 32-bit wavelets).
    allow_empty : bool
        With ``parts``: whether blocks may be empty (``total < parts *
        unit``); if not, that is an error naming ``name``.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> from wafercoll.kit import split_bytes
    >>> split_bytes(10, 4).tolist()
    [3, 3, 2, 2]
    >>> split_bytes(10, chunk=4).tolist()
    [4, 4, 2]
    >>> split_bytes(40, 3, unit=4).tolist()
    [16, 12, 12]
    """
    u = as_int(unit, "unit", 1)
    size = as_int(total, name, 0, 1 << 62)
    if size % u:
        raise ValueError(f"{name} must be a multiple of {u} bytes, got {size}")
    if (parts is None) == (chunk is None):
        raise ValueError("give exactly one of parts and chunk")
    units = size // u
    if parts is not None:
        n = as_int(parts, "parts", 1, MAX_BLOCKS)
        if not allow_empty and units < n:
            raise ValueError(
                f"{name} = {size} is too small: the schedule cuts it into {n} "
                f"blocks, so it must be >= {n * u}"
            )
        sizes = np.full(n, units // n, dtype=np.int64)
        sizes[: units % n] += 1
        return sizes * u
    c = as_int(chunk, "chunk", u)
    if c % u:
        raise ValueError(f"chunk must be a multiple of {u} bytes, got {c}")
    n = max(1, -(-size // c))
    if n > MAX_BLOCKS:
        raise ValueError(
            f"{name} = {size} in blocks of {c} bytes makes {n} blocks; at most "
            f"{MAX_BLOCKS} are allowed (use larger blocks)"
        )
    sizes = np.full(n, c, dtype=np.int64)
    sizes[-1] = size - (n - 1) * c
    return sizes


def split_weighted(total: Any, weights: Any) -> np.ndarray:
    """``total`` bytes in proportion to ``weights``, largest remainders first.

    Every part gets the floor of its exact share; the bytes left over go one
    each to the parts with the largest fractional remainders (ties: the
    earlier part), so the parts sum to ``total``.

    Parameters
    ----------
    total : int
        Bytes to share (>= 0).
    weights : array_like of float
        Non-negative, not all zero.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> from wafercoll.kit import split_weighted
    >>> split_weighted(10, [1, 1, 1]).tolist()
    [4, 3, 3]
    >>> split_weighted(100, [5, 4, 4, 5]).tolist()
    [28, 22, 22, 28]
    """
    size = as_int(total, "total", 0, 1 << 62)
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.size == 0 or (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError("weights must be finite, non-negative and not all zero")
    exact = size * w / w.sum()
    base = np.floor(exact).astype(np.int64)
    order = np.argsort(-(exact - base), kind="stable")
    base[order[: size - int(base.sum())]] += 1
    return base
