r"""Rerun points of the MCM paper's artifact under several Python hash seeds.

The artifact of *Enhancing Collective Communication in MCM Accelerators for
Deep Learning Training* (github.com/sabuj7177/TTO_HPCA_2024, commit
156128c51d96bedebdc28315a974e8ae9fe2e502) drives BookSim from Python
(``src/simulate.py``). For some schedules its cycle counts depend on
``PYTHONHASHSEED``: with a fixed seed a run repeats exactly, with another seed
it may not. This script reruns chosen points of the bandwidth figure (Fig. 8)
with the commands of the artifact's own run scripts
(``utils/run_scripts/bw/*_bw.sh``: every flag as written there, only the
synthetic data size, the output folder and ``$SIMHOME`` filled in) under each
seed given, and writes one CSV row per run::

    algorithm,chiplets,size_bytes,seed,cycles

``size_bytes`` is the vector in bytes (the artifact's ``--synthetic-data-size``
counts fp32 parameters: bytes / 4); ``cycles`` is the run's
``results.performance.allreduce.total``, the number the committed results
hold (``HPCA_2024_final/bandwidth``).

Set-up (the artifact's readme): clone the repository at that commit, build
BookSim's Python module (``src/booksim2/src``: its Makefile and
``pybooksim``), install ``requirements.txt`` into an interpreter, and run
``python update_cfg_files.py`` in ``src`` so that the BookSim configurations
name the network files of this clone. Then, e.g.::

    python tools/rerun_mcm_artifact.py --artifact /path/to/TTO_HPCA_2024 \
        --python /path/to/venv/bin/python --algorithm ring2dn \
        --chiplets 16 25 --size-mib 1 4 16 --seeds 0 1 2 3 4 --jobs 2 \
        --out reruns.csv

Runs without ``--load-tree`` would rewrite ``src/SavedTrees`` (MultiTree's
``compute_trees``), so only the run scripts' own commands are run here.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: The run scripts of Fig. 8, one per algorithm (``--allreduce`` value).
RUN_SCRIPTS = {
    "ring": "ring_uni_even_bw.sh",
    "ring_odd": "ring_uni_odd_bw.sh",
    "ring_bi": "ring_bi_even_bw.sh",
    "ring_odd_bi": "ring_bi_odd_bw.sh",
    "ring2dn": "ring_2dn_bw.sh",
    "dtree": "tree_dtree_bw.sh",
    "multitree": "multitree_bw.sh",
    "mesh_overlap_2d_1": "mesh_overlap_2d_1_bw.sh",
}
MIB = 1 << 20


def script_command(script: str, chiplets: int) -> list[str]:
    """The ``simulate.py`` arguments of the run script's block for ``chiplets``.

    Returns the tokens after ``simulate.py`` up to the output redirection,
    unexpanded (``$SIMHOME``, ``${syntheticDataSize[$i]}``, ...).
    """
    text = script.replace("\\\n", " ")
    for line in text.splitlines():
        if "simulate.py" not in line:
            continue
        args = shlex.split(line.split("simulate.py", 1)[1].split(">", 1)[0])
        if args[args.index("--num-hmcs") + 1] == str(chiplets):
            return args
    raise ValueError(f"the run script has no run with --num-hmcs {chiplets}")


def expand(args: list[str], simhome: Path, params: int, outdir: Path) -> list[str]:
    """Fill in the run script's variables for one point."""
    cnn = simhome / "src/SCALE-Sim/topologies/conv_nets"
    out = []
    for a in args:
        a = a.replace("${syntheticDataSize[$i]}", str(params))
        a = a.replace("$SIMHOME", str(simhome)).replace("$cnndir", str(cnn))
        a = a.replace("$outdir", str(outdir))
        if re.search(r"\$\w", a):
            raise ValueError(f"unexpanded variable in {a!r}")
        out.append(a)
    return out


def run_point(
    python: str, simhome: Path, alg: str, chiplets: int, size: int, seed: int
) -> int:
    """Cycles of one artifact run (its JSON's allreduce total)."""
    script = (simhome / "utils/run_scripts/bw" / RUN_SCRIPTS[alg]).read_text()
    with tempfile.TemporaryDirectory() as tmp:
        args = expand(script_command(script, chiplets), simhome, size // 4, Path(tmp))
        env = dict(os.environ, SIMHOME=str(simhome), PYTHONHASHSEED=str(seed))
        env["BOOKSIMSRC"] = str(simhome / "src/booksim2/src")
        subprocess.run(
            [python, str(simhome / "src/simulate.py"), *args],
            cwd=simhome / "src",
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        (found,) = Path(tmp).rglob("*.json")
        result = json.loads(found.read_text())
    return int(result["results"]["performance"]["allreduce"]["total"])


def main(argv: list[str] | None = None) -> int:
    """Run the points the arguments name and write their CSV."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifact", type=Path, required=True, help="the clone")
    ap.add_argument("--python", default=sys.executable, help="its interpreter")
    ap.add_argument(
        "--algorithm", nargs="+", required=True, choices=sorted(RUN_SCRIPTS)
    )
    ap.add_argument("--chiplets", type=int, nargs="+", required=True)
    ap.add_argument("--size-mib", type=int, nargs="+", required=True)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.jobs < 1:
        ap.error("--jobs must be >= 1")
    simhome = a.artifact.resolve()
    points = []
    for alg in a.algorithm:
        script = (simhome / "utils/run_scripts/bw" / RUN_SCRIPTS[alg]).read_text()
        for n in a.chiplets:
            try:
                script_command(script, n)
            except ValueError:
                print(f"skipped: {RUN_SCRIPTS[alg]} has no run on {n} chiplets")
                continue
            points += [(alg, n, mib * MIB, s) for mib in a.size_mib for s in a.seeds]
    with ThreadPoolExecutor(a.jobs) as pool:
        cycles = list(pool.map(lambda p: run_point(a.python, simhome, *p), points))
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algorithm", "chiplets", "size_bytes", "seed", "cycles"])
        for p, c in zip(points, cycles, strict=True):
            w.writerow([*p, c])
            print(*p, c, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
