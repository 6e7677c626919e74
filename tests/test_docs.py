"""The examples in the public docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "wafercoll",
    "wafercoll.algorithms",
    "wafercoll.analysis",
    "wafercoll.schedule",
    "wafercoll.simulate",
    "wafercoll.topology",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0
