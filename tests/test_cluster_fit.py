"""The measured-run pipeline: ping-pong CSV -> fitted parameters -> model
beside a benchmark (without MPI: synthetic measurements)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.cluster import compare_bench, costs, fit_pingpong, model, read_pingpong
from wafercoll.mpi.__main__ import main
from wafercoll.mpi.pingpong import write_pingpong_csv

TRUE = {
    "node": {"short": (1e-6, 2e-9), "eager": (2e-6, 1e-9), "rendezvous": (4e-6, 2e-10)},
    "network": {
        "short": (3e-6, 1e-9),
        "eager": (8e-6, 8e-10),
        "rendezvous": (1e-5, 3e-10),
    },
}
INV_RN = 1.2e-10
SIZES = [8, 64, 256, 1024, 4096, 16384, 65536, 262144]


def synthetic_rows() -> list[dict]:
    rows = []
    for loc, classes in TRUE.items():
        for s in SIZES:
            a, b = classes[model.protocol(s)]
            for k in range(1, (4 if loc == "node" else 8) + 1):
                t = a + b * s
                if loc == "network" and s >= 8000 and k >= 4:
                    t = a + k * s * INV_RN
                rows.append(
                    {
                        "locality": loc,
                        "block": 0,
                        "size_bytes": s,
                        "pairs": k,
                        "round_trip_s": 2 * t,
                    }
                )
    return rows


def test_fit_pingpong_recovers_the_model_from_a_csv(tmp_path) -> None:
    path = tmp_path / "pp.csv"
    write_pingpong_csv(str(path), synthetic_rows(), "synthetic")
    params = fit_pingpong(path, name="synthetic")
    for loc, classes in TRUE.items():
        for proto, (a, b) in classes.items():
            got = params.classes[loc][proto]
            assert got.alpha_s == pytest.approx(a, rel=1e-6)
            assert got.beta_s_per_byte == pytest.approx(b, rel=1e-6)
    assert 1 / params.nic_Bps["rendezvous"] == pytest.approx(INV_RN, rel=1e-6)
    assert params.classes["socket"] == params.classes["node"]
    assert "no socket measurements" in params.sources["socket"]
    postal = fit_pingpong(path, network="postal")
    assert postal.nic_Bps["rendezvous"] is None


def test_malformed_pingpong_files_name_the_row(tmp_path) -> None:
    path = tmp_path / "pp.csv"
    path.write_text("locality,block,size_bytes,pairs,round_trip_s\nnode,0,8,1,x\n")
    with pytest.raises(ValueError, match=r"pp\.csv: data row 1"):
        read_pingpong(path)
    path.write_text("a,b\n")
    with pytest.raises(ValueError, match="the first row must be the header"):
        read_pingpong(path)
    path.write_text(
        "locality,block,size_bytes,pairs,round_trip_s\nnetwork,0,8,1,1e-6\n"
    )
    with pytest.raises(ValueError, match="needs on-node or on-socket"):
        fit_pingpong(path)


def test_compare_bench_puts_the_model_beside_each_row(tmp_path) -> None:
    params = fit_pingpong({k: np.asarray([r[k] for r in synthetic_rows()])
                           for k in model._PINGPONG_NAMES})  # fmt: skip
    bench = tmp_path / "bench.csv"
    with open(bench, "w", newline="") as fh:
        w = csv.DictWriter(
            fh, ["algorithm", "ranks", "ppn", "size_bytes", "correct", "time_s",
                 "mpi_allreduce_s", "ratio"],
        )  # fmt: skip
        w.writeheader()
        for algo in ("cluster_rd_allreduce", "cluster_nap_allreduce", "ring"):
            for s in (8, 1024):
                w.writerow(
                    {"algorithm": algo, "ranks": 16, "ppn": 4, "size_bytes": s,
                     "correct": True, "time_s": 1e-4, "mpi_allreduce_s": 5e-5,
                     "ratio": 2.0}
                )  # fmt: skip
    cols = compare_bench(bench, params)
    assert cols["algorithm"] == ["rd", "rd", "nap", "nap"]  # ring has no equation
    for a, s, m in zip(
        cols["algorithm"], cols["size_bytes"], cols["model_s"], strict=True
    ):
        assert m == pytest.approx(costs.allreduce_time(a, 4, 4, s, params))
    out = tmp_path / "fit.png"
    pp = tmp_path / "pp.csv"
    write_pingpong_csv(str(pp), synthetic_rows())
    assert main(["fit", str(pp), "--bench", str(bench), "--plot", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert main(["fit", str(tmp_path / "missing.csv")]) == 1


def test_fit_pingpong_is_what_fit_blue_waters_does() -> None:
    a = model.fit_pingpong(model.blue_waters_pingpong())
    b = wc.cluster.BLUE_WATERS_MEASURED
    assert a.classes == b.classes and a.nic_Bps == b.nic_Bps
