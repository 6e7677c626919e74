"""Algorithms of other packages, declared through the ``wafercoll.algorithms`` entry point."""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import wafercoll as wc

reg = importlib.import_module("wafercoll.algorithms")

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "wc-plugin-demo"
version = "0.0.1"

[project.entry-points."wafercoll.algorithms"]
star = "wc_plugin_demo"
broken = "wc_plugin_broken:nothing"

[tool.setuptools]
py-modules = ["wc_plugin_demo", "wc_plugin_broken"]
"""

MODULE = '''
"""A tiny plugin: a star allreduce written with the kit."""
import numpy as np
import wafercoll as wc


@wc.register_algorithm("demo_star_allreduce", "allreduce", source="plugin test")
def star(ranks, size_bytes, *, topology=None):
    """Every rank adds its vector into rank 0, which multicasts the sum."""
    prog = wc.kit.Program(ranks, [size_bytes], rule="sendrecv", name="star")
    others = np.arange(1, ranks)
    for r in others:
        prog.step(r, 0, 0, "reduce")
    if others.size:
        prog.step(0, wc.kit.Multi(others, np.array([0, others.size])), 0, "copy")
    return prog.schedule()
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin package installed by pip into a directory of its own."""
    root = tmp_path_factory.mktemp("plugin")
    src = root / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "wc_plugin_demo.py").write_text(textwrap.dedent(MODULE))
    (src / "wc_plugin_broken.py").write_text(
        "raise RuntimeError('broken on purpose')\n"
    )
    target = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(src),
        ],
        check=True,
    )
    assert list(target.glob("wc_plugin_demo-*.dist-info"))
    return target


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, check=False
    )


def test_installed_plugin_is_seen_by_build_and_list(site: Path) -> None:
    code = textwrap.dedent(
        """
        import warnings
        import numpy as np, wafercoll as wc
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            names = {a.name for a in wc.algorithms("allreduce")}
        assert "demo_star_allreduce" in names, names
        assert any("wc_plugin_broken" in str(x.message) for x in w), [str(x.message) for x in w]
        for p in range(1, 9):
            s = wc.build("demo_star_allreduce", ranks=p, size_bytes=8 * p)
            assert wc.verify(s).ok
            x = np.arange(p * p).reshape(p, p)
            assert (wc.execute(s, x) == x.sum(axis=0)).all()
        print("ok")
        """
    )
    r = _run(site, "-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    r = _run(site, "-m", "wafercoll", "list")
    assert r.returncode == 0, r.stderr
    assert "demo_star_allreduce" in r.stdout


def test_plugins_load_when_a_name_is_not_registered(site: Path) -> None:
    # A built-in name builds without importing the plugins; the plugin's own
    # name (through build, lookup or find) then loads them.
    code = textwrap.dedent(
        """
        import sys, warnings
        import wafercoll as wc
        from wafercoll.algorithms import find, lookup
        warnings.simplefilter("ignore")
        assert wc.verify(wc.build("generic_ring_allreduce", ranks=5, size_bytes=40)).ok
        assert lookup("generic_ring_allreduce").label == "Ring"
        assert find("generic", "ring", "allreduce").name == "generic_ring_allreduce"
        assert "wc_plugin_demo" not in sys.modules
        how = sys.argv[1]
        if how == "build":
            s = wc.build("demo_star_allreduce", ranks=4, size_bytes=32)
            assert wc.verify(s).ok
        elif how == "lookup":
            assert lookup("demo_star_allreduce").source == "plugin test"
        else:
            assert find("demo", "star", "allreduce").name == "demo_star_allreduce"
        assert "wc_plugin_demo" in sys.modules
        print("ok")
        """
    )
    for how in ("build", "lookup", "find"):
        r = _run(site, "-c", code, how)
        assert r.returncode == 0, (how, r.stderr)
        assert r.stdout.strip() == "ok"


def test_without_the_plugin_the_name_is_unknown() -> None:
    with pytest.raises(ValueError, match="unknown algorithm 'demo_star_allreduce'"):
        wc.build("demo_star_allreduce", ranks=4, size_bytes=8)


def test_register_algorithm_decorator_and_checks() -> None:
    @wc.register_algorithm("testfam_pairs_allreduce", "allreduce", source="test")
    def pairs(ranks, size_bytes, *, topology=None):
        """Exchange with the neighbour of every pair (ranks must be even)."""
        prog = wc.kit.Program(ranks, [size_bytes], rule="sendrecv")
        r = np.arange(ranks)
        prog.step(r, r ^ 1, 0, "reduce")
        return prog.schedule()

    try:
        info = wc.algorithm_info("testfam_pairs_allreduce")
        assert info.summary.startswith("Exchange with the neighbour")
        assert wc.verify(wc.build("testfam_pairs_allreduce", ranks=2, size_bytes=8)).ok
        with pytest.raises(ValueError, match="already registered"):
            wc.register_algorithm("testfam_pairs_allreduce", "allreduce")(pairs)
    finally:
        wc.unregister_algorithm("testfam_pairs_allreduce")
    with pytest.raises(ValueError, match="<family>_<algorithm>_<collective>"):
        wc.register_algorithm("Bad Name", "allreduce")(pairs)
    with pytest.raises(ValueError, match="collective must be one of"):
        wc.register_algorithm("testfam_pairs_allsum", "allsum")(pairs)


def test_builder_must_build_its_collective() -> None:
    @wc.register_algorithm("testfam_wrong_reduce", "reduce", source="test")
    def wrong(ranks, size_bytes, *, topology=None):
        prog = wc.kit.Program(ranks, [size_bytes], "allreduce", rule="sendrecv")
        return prog.schedule()

    try:
        with pytest.raises(ValueError, match="registered as a reduce but built"):
            wc.build("testfam_wrong_reduce", ranks=2, size_bytes=8)
    finally:
        wc.unregister_algorithm("testfam_wrong_reduce")


def test_an_unknown_name_suggests_the_closest_registered_ones() -> None:
    with pytest.raises(ValueError, match="did you mean 'mesh_tto_allreduce'"):
        wc.build("mesh_tto_allreduc", topology=wc.topology.mesh(3, 3), size_bytes=8)
    with pytest.raises(ValueError, match="wafercoll list") as err:
        wc.algorithm_info("zzzz")
    assert "did you mean" not in str(err.value)
    # the old short names of unreleased versions are gone, not aliased
    with pytest.raises(ValueError, match="unknown algorithm 'mesh_tto'"):
        wc.algorithm_info("mesh_tto")


def test_every_name_is_its_parts_in_the_registry() -> None:
    for a in wc.algorithms():
        assert (
            reg.algorithm_name(a.family, a.algorithm, a.collective, a.variant) == a.name
        )
        assert reg.find(a.family, a.algorithm, a.collective, a.variant) is a
        assert a.label
    with pytest.raises(ValueError, match="unknown algorithm"):
        reg.find("mesh", "nothing", "allreduce")


def test_a_built_schedule_is_named_by_its_registry_key() -> None:
    s = wc.build("generic_ring_allreduce", ranks=6, size_bytes=48)
    assert s.name == "generic_ring_allreduce"
    r = wc.simulate(s, wc.ring(6), wc.NetworkModel(bandwidth_Bps=1e9))
    assert r.schedule_name == "generic_ring_allreduce"


def test_every_collective_has_its_algorithms() -> None:
    for coll in wc.COLLECTIVES:
        found = wc.algorithms(coll)
        assert found, coll
        assert all(a.collective == coll for a in found)
        assert all(a.name.endswith("_" + coll) for a in found), [a.name for a in found]
