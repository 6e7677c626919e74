"""The committed type stub of the compiled core matches the built extension."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import gen_stubs  # noqa: E402

sys.path.pop(0)


@pytest.mark.skipif(
    importlib.util.find_spec("pybind11_stubgen") is None,
    reason="pybind11-stubgen is not installed (pip install -e '.[test]')",
)
def test_core_stub_is_current() -> None:
    committed = gen_stubs.STUB.read_text()
    first = committed.splitlines()[0] + "\n"
    if first != gen_stubs.header():
        pytest.skip(
            f"the stub was generated under other versions ({first.strip()}); "
            f"this environment has {gen_stubs.header().strip()}"
        )
    assert committed == gen_stubs.generate(), (
        "python/wafercoll/_core.pyi is stale: run python tools/gen_stubs.py"
    )
