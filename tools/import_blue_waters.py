"""Convert the Blue Waters ping-pong measurements into wafercoll's CSV.

The measurements are those of the paper's model figures: repository
bienz2/BlueWatersModel (BSD 2-Clause, (c) 2018 bienz2), commit
4ecec3e9a1f803e87c4075a487a01afef9819ec3, files

* ``bw_output/orig/max_rate``: off-node ping-pong, 1 ... 16 pairs of one
  node's processes and another node's sending at once;
* ``bw_output/on_node/on_node.out``: on-node, the two sockets (1 ... 8 pairs);
* ``bw_output/on_node/on_socket.out``: on-socket (1 ... 8 pairs).

Each block of a file starts with ``Pingpong for`` and the ``master`` /
``partner`` rank lists; each row gives the message size in 4-byte integers
and then one round-trip time per number of active pairs (column i: i
pairs). The output has one row per measurement::

    locality,block,size_bytes,pairs,round_trip_s

Run with the path of a clone (or the bare git directory) of the repository::

    python tools/import_blue_waters.py /path/to/BlueWatersModel
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

COMMIT = "4ecec3e9a1f803e87c4075a487a01afef9819ec3"
FILES = {
    "network": "bw_output/orig/max_rate",
    "node": "bw_output/on_node/on_node.out",
    "socket": "bw_output/on_node/on_socket.out",
}
INT_BYTES = 4  # the benchmark counts MPI_INT elements (arch_model.py INT_SIZE)
OUT = Path(__file__).resolve().parents[1] / "python/wafercoll/cluster/data"
HEADER = f"""\
# Blue Waters (Cray XE6) MPI ping-pong round trips, the measurements behind the
# model figures of Bienz, Olson, Gropp, "Node-Aware Improvements to Allreduce"
# (ExaMPI 2019). Source: github.com/bienz2/BlueWatersModel, commit {COMMIT},
# files {", ".join(FILES.values())}.
# Copyright (c) 2018, bienz2. Redistributed under the BSD 2-Clause License of
# that repository. Converted by tools/import_blue_waters.py: one row per
# measurement; size_bytes = 4 x the integer count of the file; pairs = the
# number of process pairs of the node communicating at once (the column).
"""


def _read(repo: Path, path: str) -> str:
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", "show", f"{COMMIT}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def convert(repo: Path) -> list[str]:
    """The CSV rows from the repository at ``repo``."""
    rows = []
    for loc, path in FILES.items():
        block = -1
        for line in _read(repo, path).splitlines():
            if line.startswith("Pingpong for"):
                block += 1
                continue
            if not line[:1].isdigit():
                continue
            words = [w for w in line.split("\t") if w.strip()]
            size = int(words[0]) * INT_BYTES
            for pairs, w in enumerate(words[1:], start=1):
                rows.append(f"{loc},{block},{size},{pairs},{float(w):.3e}")
    return rows


def main() -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="clone or git directory of BlueWatersModel")
    args = ap.parse_args()
    rows = convert(args.repo)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / "blue_waters_pingpong.csv"
    out.write_text(
        HEADER
        + "locality,block,size_bytes,pairs,round_trip_s\n"
        + "\n".join(rows)
        + "\n"
    )
    print(f"wrote {len(rows)} measurements to {out}")


if __name__ == "__main__":
    main()
