"""Collect the MCM paper artifact's committed AllReduce cycle counts into a CSV.

Source: github.com/sabuj7177/TTO_HPCA_2024, commit
156128c51d96bedebdc28315a974e8ae9fe2e502, the result files
``HPCA_2024_final/bandwidth/*/*.json`` (Fig. 8) and
``HPCA_2024_final/chunk_utilization/*.json`` (Fig. 14). Each file is one
BookSim run; the CSV keeps, per run, the configuration that identifies it and
the simulated cycles (``results.performance.allreduce.total``):

    figure,algorithm,chiplets,params,chunk_params,radix,cycles

``params`` counts fp32 parameters (``--synthetic-data-size``: bytes = 4 x
params); ``chunk_params`` is TTO's ``chunk_size`` (fp32 parameters per
chunk); ``radix`` is the nodes per BookSim router (1 for the DBTree runs).

Run with the path of a clone (or the bare git directory)::

    python tools/import_mcm_artifact.py /path/to/TTO_HPCA_2024
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

COMMIT = "156128c51d96bedebdc28315a974e8ae9fe2e502"
DIRS = {"HPCA_2024_final/bandwidth": "fig8", "HPCA_2024_final/chunk_utilization": "fig14"}
OUT = Path(__file__).resolve().parents[1] / "python/wafercoll/mesh/data"
HEADER = f"""\
# AllReduce cycle counts committed with the MCM paper's artifact (Laskar, Majhi
# et al., HPCA 2024): github.com/sabuj7177/TTO_HPCA_2024 commit {COMMIT},
# HPCA_2024_final/bandwidth/*/*.json (figure fig8) and
# HPCA_2024_final/chunk_utilization/*.json (figure fig14); one BookSim run per
# row, cycles = results.performance.allreduce.total at 1 GHz. params counts fp32
# parameters (bytes = 4 x params); chunk_params is TTO's chunk_size. Collected
# by tools/import_mcm_artifact.py.
"""


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def convert(repo: Path) -> list[str]:
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    rows = []
    for d, figure in DIRS.items():
        for path in _git(git_dir, "ls-tree", "-r", "--name-only", COMMIT, d).split():
            if not path.endswith(".json"):
                continue
            doc = json.loads(_git(git_dir, "show", f"{COMMIT}:{path}"))
            c = doc["configuration"]
            cycles = doc["results"]["performance"]["allreduce"]["total"]
            chunk = c.get("chunk_size") if c["allreduce"] == "mesh_overlap_2d_1" else ""
            rows.append(
                f"{figure},{c['allreduce']},{c['num_hmcs']},{c['synthetic_data_size']},"
                f"{chunk if chunk is not None else ''},{c['radix']},{cycles}"
            )
    return sorted(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="clone or git directory of TTO_HPCA_2024")
    rows = convert(ap.parse_args().repo)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / "mcm_artifact_cycles.csv"
    out.write_text(
        HEADER
        + "figure,algorithm,chiplets,params,chunk_params,radix,cycles\n"
        + "\n".join(rows)
        + "\n"
    )
    print(f"wrote {len(rows)} runs to {out}")


if __name__ == "__main__":
    main()
