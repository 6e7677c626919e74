"""Shared check of an executed reduce-scatter or allgather (tests only)."""

from __future__ import annotations

import numpy as np

import wafercoll as wc


def assert_owned_blocks(s: wc.Schedule, x: np.ndarray, y: np.ndarray, p: int) -> None:
    """Block ``b`` of ``s`` belongs to ``s.owners[b]``: in a reduce-scatter its
    owner holds the sum over ranks ``0 .. p - 1``, in an allgather every one
    of them holds the owner's input. ``x`` is the input, ``y = wc.execute(s, x)``."""
    off = wc.analysis.block_element_offsets(s, x.shape[1])
    total = x[:p].sum(axis=0)
    for b, owner in enumerate(s.owners.tolist()):
        lo, hi = off[b], off[b + 1]
        if s.collective == "reduce_scatter":
            assert (y[owner, lo:hi] == total[lo:hi]).all()
        else:
            assert (y[:p, lo:hi] == x[owner, lo:hi]).all()
