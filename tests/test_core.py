"""The raw bindings: names, types and error translation of wafercoll._core."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import _core


def test_version_matches_package():
    assert _core.__version__ == wc.__version__
    assert wc.__version__.count(".") >= 2


def test_schedule_arrays_are_numpy():
    s = _core.ring_allreduce(4, 100)
    assert isinstance(s.src, np.ndarray) and s.src.dtype == np.int32
    assert s.dep_offsets.dtype == np.int64
    assert s.num_transfers == 2 * 4 * 3
    assert s.block_bytes.sum() == 100


def test_even_blocks():
    assert _core.even_blocks(10, 4) == [3, 3, 2, 2]
    with pytest.raises(ValueError, match="size_bytes"):
        _core.even_blocks(-1, 4)


def test_schedule_error_is_translated():
    s = _core.Schedule(2, [8], "reduce", 0)
    s.add_transfer(1, [0], [(0, 1)], "reduce", [])
    s.add_transfer(1, [0], [(0, 1)], "reduce", [0])
    with pytest.raises(wc.ScheduleError) as info:
        _core.verify(s)
    assert info.value.kind == "double_count"
    assert (info.value.transfer, info.value.rank, info.value.block) == (1, 0, 0)


def test_builder_arguments_checked():
    with pytest.raises(ValueError, match="ranks"):
        _core.ring_allreduce(0, 10)
    with pytest.raises(ValueError, match="root"):
        _core.binomial_reduce(4, 10, 4)
    with pytest.raises(TypeError):
        _core.ring_allreduce("4", 10)
