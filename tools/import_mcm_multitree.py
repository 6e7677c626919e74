"""Collect the MultiTree trees the MCM paper's artifact saved into a CSV.

Source: github.com/sabuj7177/TTO_HPCA_2024, commit
156128c51d96bedebdc28315a974e8ae9fe2e502, the pickles
``src/SavedTrees/multitree_{N}`` that ``src/allreduce/multitree_allreduce.py``
(``MultiTreeAllreduce.compute_trees``) loads when run with ``--load-tree``, as
the run scripts do (the committed 4x4 results match the trees it computes
instead; see :mod:`wafercoll.mcm.artifact_multitree`). Each pickle is a dict
``{"tree": {root: [(child, parent, timestep), ...]}, "timesteps": T}``.

The pickles are read with an unpickler that refuses every global (no class is
imported, no code runs): they hold only dicts, lists, tuples and ints, and a
file that holds anything else stops the import.

The CSV has one row per tree edge, in the order the construction added them
(the artifact's ``trees_children`` lists keep that order):

    chiplets,root,child,parent,step

with the artifact's ``timesteps`` checked to be ``1 + max(step)`` per mesh.
Only the meshes the artifact's figures use (4x4, 5x5, 6x6, 8x8, 9x9) and the
3x3 mesh (small enough for exhaustive tests) are kept.

Run with the path of a clone (or the bare git directory)::

    python tools/import_mcm_multitree.py /path/to/TTO_HPCA_2024
"""

from __future__ import annotations

import argparse
import io
import pickle
import subprocess
from pathlib import Path

COMMIT = "156128c51d96bedebdc28315a974e8ae9fe2e502"
CHIPLETS = (9, 16, 25, 36, 64, 81)
OUT = Path(__file__).resolve().parents[1] / "python/wafercoll/mcm/data"
HEADER = f"""\
# MultiTree spanning trees saved with the MCM paper's artifact (Laskar, Majhi
# et al., HPCA 2024): github.com/sabuj7177/TTO_HPCA_2024 commit {COMMIT},
# src/SavedTrees/multitree_<chiplets> (pickles of {{"tree": {{root: [(child,
# parent, timestep)]}}, "timesteps": T}}, loaded by the run scripts'
# --load-tree in src/allreduce/multitree_allreduce.py). One row per
# tree edge in construction order; node id = row * side + col; the artifact's
# timesteps T = 1 + max(step). Collected by tools/import_mcm_multitree.py.
"""


class _NoGlobals(pickle.Unpickler):
    """An unpickler that imports nothing: the trees are plain containers."""

    def find_class(self, module: str, name: str) -> object:
        raise pickle.UnpicklingError(f"refusing global {module}.{name}")


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True
    ).stdout


def load(git_dir: Path, chiplets: int) -> tuple[dict[int, list[tuple]], int]:
    """The trees and timesteps of ``src/SavedTrees/multitree_{chiplets}``."""
    raw = _git(git_dir, "show", f"{COMMIT}:src/SavedTrees/multitree_{chiplets}")
    doc = _NoGlobals(io.BytesIO(raw)).load()
    trees, steps = doc["tree"], int(doc["timesteps"])
    if sorted(trees) != list(range(chiplets)):
        raise ValueError(f"multitree_{chiplets}: roots are not 0..{chiplets - 1}")
    last = max(int(t) for edges in trees.values() for _, _, t in edges)
    if steps != last + 1:
        raise ValueError(f"multitree_{chiplets}: timesteps {steps} != {last + 1}")
    return trees, steps


def convert(repo: Path) -> list[str]:
    """The CSV rows from the repository at ``repo``."""
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    rows = []
    for n in CHIPLETS:
        trees, _ = load(git_dir, n)
        for root in range(n):
            for child, parent, step in trees[root]:
                rows.append(f"{n},{root},{int(child)},{int(parent)},{int(step)}")
    return rows


def main() -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="clone or git directory of TTO_HPCA_2024")
    rows = convert(ap.parse_args().repo)
    out = OUT / "mcm_artifact_multitrees.csv"
    body = "chiplets,root,child,parent,step\n" + "\n".join(rows) + "\n"
    out.write_text(HEADER + body)
    print(f"wrote {len(rows)} tree edges to {out}")


if __name__ == "__main__":
    main()
