"""Every public function documents itself with an Examples section that runs.

The public API is ``wafercoll.__all__`` and the ``__all__`` of each public
subpackage. Each public function's docstring must have a numpydoc
``Examples`` section, and its examples are executed here as doctests (also
those of modules that tests/test_docs.py does not list).
"""

from __future__ import annotations

import doctest
import importlib
import inspect

import pytest

SUBPACKAGES = [
    "kit",
    "topology",
    "bounds",
    "synthesis",
    "plot",
    "io",
    "machines",
    "wafer",
    "cluster",
    "mcm",
    "wormhole",
    "generic",
    "workloads",
    "gpu.fabric",
    "gpu.nccl",
    "gpu.hier2d",
]

# PENDING: functions of modules that are being reworked elsewhere (cli.py,
# machines.py, sweeps.py, advisor.py, simulate.py, bounds.py, io/msccl.py,
# experiments/, mcm/); their Examples are added once those changes land, and
# each entry then leaves this list. Nothing else may be added here.
PENDING_EXAMPLES = {}


def _public_functions() -> dict[str, object]:
    """Qualified name -> function, for every function a public ``__all__`` names."""
    found: dict[str, object] = {}
    for name in ["wafercoll"] + [f"wafercoll.{s}" for s in SUBPACKAGES]:
        module = importlib.import_module(name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj):
                found.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return found


PUBLIC = _public_functions()


def _has_examples(obj: object) -> bool:
    lines = (inspect.getdoc(obj) or "").splitlines()
    return any(
        a.strip() == "Examples" and b.strip() == "--------"
        for a, b in zip(lines, lines[1:], strict=False)
    )


def test_the_walk_finds_the_public_api():
    assert "wafercoll.algorithms.build" in PUBLIC
    assert "wafercoll.analysis.verify" in PUBLIC
    assert len(PUBLIC) > 150


def test_every_public_function_has_examples():
    missing = sorted(
        n
        for n, f in PUBLIC.items()
        if n not in PENDING_EXAMPLES and not _has_examples(f)
    )
    assert not missing, "public functions without an Examples section:\n" + "\n".join(
        missing
    )


def test_pending_list_names_only_public_functions_still_without_examples():
    stale = sorted(
        n for n in PENDING_EXAMPLES if n not in PUBLIC or _has_examples(PUBLIC[n])
    )
    assert not stale, "remove from PENDING_EXAMPLES: " + ", ".join(stale)


@pytest.mark.parametrize(
    "name", sorted(n for n, f in PUBLIC.items() if _has_examples(f))
)
def test_examples_run(name, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    obj = PUBLIC[name]
    finder = doctest.DocTestFinder(recurse=False)
    module = inspect.getmodule(obj)
    tests = finder.find(obj, name, module=module, globs=dict(vars(module)))
    assert tests and tests[0].examples, f"{name}: Examples has no >>> lines"
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    try:
        for t in tests:
            runner.run(t)
    finally:
        plt.close("all")
    assert runner.failures == 0, f"{name}: {runner.failures} example(s) failed"
