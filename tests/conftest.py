"""Shared fixtures: an injectable random seed (``--seed`` or WAFERCOLL_SEED)."""

from __future__ import annotations

import os

import numpy as np
import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", type=int, default=None, help="seed for random inputs")


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    seed = request.config.getoption("--seed")
    if seed is None:
        seed = int(os.environ.get("WAFERCOLL_SEED", "20261121"))
    return np.random.default_rng(seed)
