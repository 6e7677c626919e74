"""Collect the MCM paper artifact's committed AllReduce cycle counts into a CSV.

Source: github.com/sabuj7177/TTO_HPCA_2024, commit
156128c51d96bedebdc28315a974e8ae9fe2e502, the result files
``HPCA_2024_final/bandwidth/*/*.json`` (Fig. 8),
``HPCA_2024_final/scalability/*/*.json`` (Fig. 9: 375 KiB per chiplet, i.e.
96,000 fp32 parameters x N, on 3x3 .. 16x16; no DBTree runs),
``HPCA_2024_final/chunk_utilization/*.json`` (Fig. 14),
``HPCA_2024_final/models/*/*.json`` (the AllReduce of each DNN's gradients,
Fig. 10) and ``HPCA_2024_final/simba/comm/*/*.json`` (the same on Simba's
6x6 mesh, Fig. 13). Each file is one BookSim run; the CSV keeps, per run, the
configuration that identifies it and the simulated cycles
(``results.performance.allreduce.total``):

    figure,algorithm,chiplets,params,chunk_params,radix,model,array,cycles

For the model runs ``params`` is the model's parameter count as the
artifact's ``src/model.py`` counts it (filter height x width x channels x
filters, summed over the layers of the SCALE-Sim topology file), and the
topology files of the seven DNNs are copied to
``python/wafercoll/mcm/data/dnn/`` (SCALE-Sim, MIT License, (c) 2018 Arm).

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
DIRS = {
    "HPCA_2024_final/bandwidth": "fig8",
    "HPCA_2024_final/scalability": "fig9",
    "HPCA_2024_final/chunk_utilization": "fig14",
    "HPCA_2024_final/models": "fig10",
    "HPCA_2024_final/simba/comm": "fig13",
}
#: The seven DNNs of the paper's Figs. 10, 11 and 13 (dlrm has no topology file).
MODELS = {
    "alexnet": "src/SCALE-Sim/topologies/conv_nets/alexnet.csv",
    "Googlenet": "src/SCALE-Sim/topologies/conv_nets/Googlenet.csv",
    "AlphaGoZero": "src/SCALE-Sim/topologies/mlperf/AlphaGoZero.csv",
    "FasterRCNN": "src/SCALE-Sim/topologies/mlperf/FasterRCNN.csv",
    "NCF_recommendation": "src/SCALE-Sim/topologies/mlperf/NCF_recommendation.csv",
    "Resnet152": "src/SCALE-Sim/topologies/mlperf/Resnet152.csv",
    "Transformer": "src/SCALE-Sim/topologies/mlperf/Transformer.csv",
}
OUT = Path(__file__).resolve().parents[1] / "python/wafercoll/mcm/data"
HEADER = f"""\
# AllReduce cycle counts committed with the MCM paper's artifact (Laskar, Majhi
# et al., HPCA 2024): github.com/sabuj7177/TTO_HPCA_2024 commit {COMMIT},
# HPCA_2024_final/bandwidth/*/*.json (figure fig8),
# HPCA_2024_final/scalability/*/*.json (figure fig9),
# HPCA_2024_final/chunk_utilization/*.json (figure fig14),
# HPCA_2024_final/models/*/*.json (figure fig10: the AllReduce of a DNN's
# gradients) and HPCA_2024_final/simba/comm/*/*.json (figure fig13: the same
# on Simba's 6x6 mesh); one BookSim run per row, cycles =
# results.performance.allreduce.total at 1 GHz. params counts fp32 parameters
# (bytes = 4 x params); chunk_params is TTO's chunk_size. Collected by
# tools/import_mcm_artifact.py.
"""


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _params(topology_csv: str) -> int:
    """Parameters as the artifact's src/model.py counts them."""
    total = 0
    for line in topology_csv.splitlines()[1:]:
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 8 and f[0] and all(x.isdigit() for x in f[1:8]):
            total += int(f[3]) * int(f[4]) * int(f[5]) * int(f[6])
    return total


def convert(repo: Path) -> list[str]:
    """The CSV rows from the repository at ``repo``."""
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    topo = {m: _git(git_dir, "show", f"{COMMIT}:{p}") for m, p in MODELS.items()}
    (OUT / "dnn").mkdir(parents=True, exist_ok=True)
    for m, text in topo.items():
        (OUT / "dnn" / f"{m}.csv").write_text(text)
    rows = []
    for d, figure in DIRS.items():
        for path in _git(git_dir, "ls-tree", "-r", "--name-only", COMMIT, d).split():
            if not path.endswith(".json"):
                continue
            doc = json.loads(_git(git_dir, "show", f"{COMMIT}:{path}"))
            c = doc["configuration"]
            cycles = doc["results"]["performance"]["allreduce"]["total"]
            chunk = c.get("chunk_size") if c["allreduce"] == "mesh_overlap_2d_1" else ""
            model, params = "", c["synthetic_data_size"]
            if figure in ("fig10", "fig13"):
                model = c["network"].split("/")[-1].removesuffix(".csv")
                if model not in topo:
                    continue
                params = _params(topo[model])
            array = c["pe_array_height"] if figure == "fig13" else ""
            rows.append(
                f"{figure},{c['allreduce']},{c['num_hmcs']},{params},"
                f"{chunk if chunk is not None else ''},{c['radix']},{model},{array},"
                f"{cycles}"
            )
    return sorted(rows)


def training(repo: Path) -> tuple[list[str], list[str]]:
    """Training cycles per iteration (SCALE-Sim) and per-layer gradient times.

    From the Simba runs (Fig. 13) and the 8x8 runs behind Figs. 10 and 11.
    """
    git_dir = repo / ".git" if (repo / ".git").exists() else repo
    rows, layers = [], []
    for d in ("HPCA_2024_final/simba/train", "HPCA_2024_final/overlap/train"):
        for path in _git(git_dir, "ls-tree", "-r", "--name-only", COMMIT, d).split():
            doc = json.loads(_git(git_dir, "show", f"{COMMIT}:{path}"))
            c = doc["configuration"]
            model = c["network"].split("/")[-1].removesuffix(".csv")
            per_pe = -(-c["mini_batch_size"] // (c["num_vaults"] * c["num_hmcs"]))
            perf = doc["results"]["performance"]
            rows.append(
                f"{model},{c['pe_array_height']},{c['pe_array_width']},"
                f"{c['num_hmcs']},{c['num_vaults']},{per_pe},{perf['training']}"
            )
            for layer, ready in perf.get("training_by_layer", {}).items():
                if d.endswith("overlap/train"):
                    layers.append(f"{model},{c['pe_array_height']},{layer},{ready}")
    return sorted(rows), sorted(
        layers, key=lambda r: (r.split(",")[0], int(r.split(",")[2]))
    )


def main() -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo", type=Path, help="clone or git directory of TTO_HPCA_2024")
    rows = convert(ap.parse_args().repo)
    OUT.mkdir(parents=True, exist_ok=True)
    out = OUT / "mcm_artifact_cycles.csv"
    out.write_text(
        HEADER
        + "figure,algorithm,chiplets,params,chunk_params,radix,model,array,cycles\n"
        + "\n".join(rows)
        + "\n"
    )
    print(f"wrote {len(rows)} runs to {out}")
    train, layers = training(ap.parse_args().repo)
    out = OUT / "mcm_artifact_training.csv"
    out.write_text(
        "# Training cycles per iteration of the MCM artifact's runs: Simba 6x6\n"
        "# (Fig. 13) and 8x8 with 256 x 256 arrays (Figs. 10, 11):\n"
        f"# github.com/sabuj7177/TTO_HPCA_2024 commit {COMMIT},\n"
        "# HPCA_2024_final/{simba,overlap}/train/*/*.json,\n"
        "# results.performance.training (the authors' extended SCALE-Sim, output\n"
        "# stationary); samples_per_pe = ceil(mini_batch / (PEs x chiplets)).\n"
        "# Collected by tools/import_mcm_artifact.py.\n"
        "model,array_rows,array_cols,chiplets,pes,samples_per_pe,cycles\n"
        + "\n".join(train)
        + "\n"
    )
    print(f"wrote {len(train)} training runs to {out}")
    out = OUT / "mcm_artifact_layers.csv"
    out.write_text(
        "# Per layer, the cycle at which the backward pass has produced the layer's\n"
        "# gradient, in the MCM artifact's 8x8 runs with 256 x 256 arrays (Fig. 11):\n"
        f"# github.com/sabuj7177/TTO_HPCA_2024 commit {COMMIT},\n"
        "# HPCA_2024_final/overlap/train/*/*.json,\n"
        "# results.performance.training_by_layer. Collected by\n"
        "# tools/import_mcm_artifact.py.\n"
        "model,array,layer,ready_cycles\n" + "\n".join(layers) + "\n"
    )
    print(f"wrote {len(layers)} layer times to {out}")


if __name__ == "__main__":
    main()
