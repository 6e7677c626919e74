"""The examples in the public docstrings and the README run as documented."""

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
    "wafercoll.kit",
    "wafercoll.kit.blocks",
    "wafercoll.kit.orders",
    "wafercoll.kit.program",
    "wafercoll.wafer.model",
    "wafercoll.wafer.allreduce2d",
    "wafercoll.wafer.reduce1d",
    "wafercoll.wafer.builders",
    "wafercoll.wafer.builders2d",
    "wafercoll.cluster.builders",
    "wafercoll.cluster.costs",
    "wafercoll.cluster.model",
    "wafercoll.mcm.builders",
    "wafercoll.mcm.machine",
    "wafercoll.mcm.training",
    "wafercoll.mcm.trees",
    "wafercoll.mcm.workloads",
    "wafercoll.experiments.mcm_common",
    "wafercoll.wormhole.builders",
    "wafercoll.wormhole.hops",
    "wafercoll.wormhole.machine",
    "wafercoll.wormhole.model",
    "wafercoll.wormhole.swing",
    "wafercoll.mpi.executor",
    "wafercoll.units",
    "wafercoll.machines",
    "wafercoll.network",
    "wafercoll.bounds",
    "wafercoll.sweeps",
    "wafercoll.advisor",
    "wafercoll.experiments.report",
    "wafercoll.experiments.runner",
    "wafercoll.io.files",
    "wafercoll.workloads.layers",
    "wafercoll.workloads.layout",
    "wafercoll.workloads.parallelism",
    "wafercoll.gpu",
    "wafercoll.gpu.fabric",
    "wafercoll.gpu.nccl",
    "wafercoll.gpu.hier2d",
    "wafercoll.synthesis",
    "wafercoll.synthesis.fractional",
    "wafercoll.synthesis.forests",
    "wafercoll.synthesis.equal_rate",
    "wafercoll.synthesis.rooted",
    "wafercoll.synthesis.builders",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags, verbose=False)
    assert result.failed == 0


def test_readme_python_examples_run(tmp_path, monkeypatch) -> None:
    import pathlib
    import re

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    readme = pathlib.Path(__file__).resolve().parents[1] / "README.md"
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    assert blocks
    import wafercoll as wc

    # Files the examples write stay out of the checkout; the data they read
    # is where the README's paths (from the repository root) say.
    (tmp_path / "tests").symlink_to(readme.parent / "tests")
    monkeypatch.chdir(tmp_path)
    before = {a.name for a in wc.algorithms()}
    try:
        for i, block in enumerate(blocks):
            exec(compile(block, f"README.md python block {i}", "exec"), {})
    finally:
        plt.close("all")
        for a in wc.algorithms():  # the README registers an example algorithm
            if a.name not in before:
                wc.unregister_algorithm(a.name)


def test_license_and_citation_agree_with_the_package_metadata():
    import pathlib

    import wafercoll as wc

    root = pathlib.Path(__file__).resolve().parents[1]
    license_text = (root / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    pyproject = (root / "pyproject.toml").read_text()
    assert 'license = { text = "BSD-3-Clause" }' in pyproject
    cff = (root / "CITATION.cff").read_text().splitlines()
    fields = dict(
        line.split(": ", 1) for line in cff if ": " in line and not line.startswith(" ")
    )
    assert fields["cff-version"] == "1.2.0"
    assert fields["license"] == "BSD-3-Clause"
    assert fields["version"] == wc.__version__


def test_objects_have_html_reprs():
    import wafercoll as wc
    from wafercoll import wafer, wormhole

    s = wc.build("generic_ring_allreduce", 6, 600)
    objects = [
        wc.verify(s),
        wc.NetworkModel(1e9, packet_bytes=100),
        wc.metrics(wc.build("wafer_chain_reduce", 8, 32), wafer.wafer_row(8)),
        wafer.autogen(16, 4),
        wormhole.hop_table("swing", wc.topology.torus(4, 4)),
    ]
    for obj in objects:
        out = obj._repr_html_()
        assert out.startswith("<table><caption>") and out.endswith("</table>")
        assert "<script" not in out
