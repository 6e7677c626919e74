"""The MPI executor on 8 processes: results, errors and the bench command."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.mpi import MPIExecutor, detect_layout, import_mpi

MPI = import_mpi()
COMM = MPI.COMM_WORLD
P = COMM.Get_size()
RANK = COMM.Get_rank()
pytestmark = pytest.mark.skipif(P != 8, reason="run under mpirun -n 8")

NAMES = (
    "cluster_rd_allreduce",
    "cluster_smp_allreduce",
    "cluster_nap_allreduce",
    "cluster_dissemination_allreduce",
)


@pytest.mark.parametrize("ppn", [2, 4])
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("elements", [1, 7, 1000])
def test_results_equal_mpi_allreduce(name: str, ppn: int, elements: int) -> None:
    s = wc.build(name, P, 8 * elements, ppn=ppn)
    x = np.random.default_rng(100 + RANK).integers(-1 << 20, 1 << 20, elements)
    ex = MPIExecutor(s, elements, COMM, dtype=np.int64, timeout_s=60)
    got = ex.run(x).copy()
    want = np.empty_like(got)
    COMM.Allreduce(x, want, op=MPI.SUM)
    np.testing.assert_array_equal(got, want)
    assert ex.check(x.astype(np.int64))


@pytest.mark.parametrize(
    "name",
    [
        "generic_ring_allreduce",
        "generic_rabenseifner_allreduce",
        "generic_recursive_doubling_allreduce",
    ],
)
def test_generic_schedules_with_many_blocks(name: str) -> None:
    s = wc.build(name, P, 8 * 100)
    x = np.random.default_rng(RANK).standard_normal(100)
    assert MPIExecutor(s, 100, COMM).check(x)


def test_a_rooted_schedule_matches_the_numpy_executor() -> None:
    s = wc.build("generic_binomial_broadcast", P, 64, root=3)
    x = np.full(8, float(RANK))
    got = MPIExecutor(s, 8, COMM).run(x)
    np.testing.assert_array_equal(got, np.full(8, 3.0))


def test_wrong_communicator_size_fails_on_every_rank() -> None:
    s = wc.build("cluster_nap_allreduce", 4, 8, ppn=2)
    with pytest.raises(ValueError, match="communicator has 8 processes but the sch"):
        MPIExecutor(s, 1, COMM)


def test_mismatched_schedules_fail_on_every_rank() -> None:
    elements = 2 if RANK == 5 else 1
    s = wc.build("cluster_smp_allreduce", P, 8, ppn=4)
    with pytest.raises(ValueError, match="rank 5 differs from rank 0"):
        MPIExecutor(s, elements, COMM)


def test_bad_builder_input_fails_on_every_rank() -> None:
    with pytest.raises(ValueError, match="ppn = 3 must divide"):
        wc.build("cluster_nap_allreduce", P, 8, ppn=3)
    with pytest.raises(ValueError, match="exceeds ppn = 2"):
        wc.build("cluster_nap_allreduce", P, 8, ppn=2, steps=[4])


def test_a_missing_partner_times_out_on_every_rank() -> None:
    # Rank 0 never runs the schedule: its partners wait and time out. A
    # private communicator keeps the unmatched messages away from the others.
    comm = COMM.Dup()
    ex = MPIExecutor(
        wc.build("cluster_rd_allreduce", P, 8),
        1,
        comm,
        timeout_s=0.5,
        on_timeout="raise",  # the default would end the job (tests/test_mpi_faults.py)
    )
    if RANK == 0:
        with pytest.raises(TimeoutError, match="round 0"):
            ex._wait([comm.Irecv(np.empty(1), source=1, tag=99)], 0)
    else:
        with pytest.raises(TimeoutError, match="did not complete within 0.5 s"):
            ex.run(np.ones(1))
    COMM.Barrier()
    assert MPIExecutor(wc.build("cluster_rd_allreduce", P, 8), 1, COMM).check(
        np.ones(1)
    )


def test_on_timeout_is_checked_on_every_rank() -> None:
    s = wc.build("cluster_rd_allreduce", P, 8)
    with pytest.raises(ValueError, match="on_timeout must be 'abort' or 'raise'"):
        MPIExecutor(s, 1, COMM, on_timeout="wait")
    ex = MPIExecutor(s, 1, COMM)
    assert ex.timeout_s == 60.0 and ex.on_timeout == "abort"


def test_layout_detection_is_consistent() -> None:
    ppn, r2n = detect_layout(COMM)
    assert P % ppn == 0 and np.bincount(r2n).tolist() == [ppn] * (P // ppn)
    every = np.empty((P, P), dtype=np.int64)
    COMM.Allgather(r2n, every)
    assert (every == r2n).all()


def test_bench_command_writes_a_table_and_csv(tmp_path_factory) -> None:
    from wafercoll.mpi.__main__ import main

    path = tmp_path_factory.mktemp(f"r{RANK}") / "out.csv"
    code = main(
        [
            "bench",
            "--algorithm",
            "cluster_nap_allreduce",
            "--ppn",
            "4",
            "--sizes",
            "8,1024",
            "--repeats",
            "2",
            "--csv",
            str(path),
        ]
    )
    assert code == 0
    if RANK == 0:
        lines = path.read_text().splitlines()
        assert lines[0].startswith("algorithm,ranks,ppn,size_bytes,correct")
        assert len(lines) == 3
    # A failing bench aborts the whole job: tests/test_mpi_faults.py runs it
    # under its own mpirun.


def test_pingpong_bench_fit_pipeline(tmp_path) -> None:
    # Measure on this job (logical nodes of 4), benchmark two algorithms, fit
    # the model to the ping-pong CSV and put the benchmark beside it.
    from wafercoll.cluster import compare_bench, fit_pingpong, read_pingpong
    from wafercoll.mpi.__main__ import main
    from wafercoll.mpi.pingpong import pingpong, write_pingpong_csv

    # Sizes up to 1 MiB: the rendezvous slope (1 / R_N) must stand out of the
    # timing noise of an oversubscribed, shared machine.
    sizes = [8, 64, 1024, 4096, 16384, 65536, 262144, 1048576]
    rows = pingpong(COMM, sizes, 4, repeats=5, timeout_s=60)
    folder = COMM.bcast(str(tmp_path) if RANK == 0 else None, root=0)
    pp = f"{folder}/pp.csv"
    benches = [f"{folder}/{a}.csv" for a in ("rd", "nap")]
    if RANK == 0:
        # 2 localities x 8 sizes x (2 node pairs + 4 network pairs)
        assert len(rows) == 8 * 2 + 8 * 4
        assert all(r["round_trip_s"] > 0 for r in rows)
        write_pingpong_csv(pp, rows, "test run")
    else:
        assert rows == []
    for algo, path in zip(("cluster_rd_allreduce", "cluster_nap_allreduce"), benches):
        code = main(
            ["bench", "--algorithm", algo, "--ppn", "4", "--sizes", "8,1KiB",
             "--repeats", "3", "--csv", path if RANK == 0 else ""]
        )  # fmt: skip
        assert code == 0
    if RANK == 0:
        data = read_pingpong(pp)
        assert set(data["locality"]) == {"node", "network"}
        params = fit_pingpong(data)
        assert params.nic_Bps["rendezvous"] is not None  # 4 network pairs
        cols = compare_bench(
            [r for b in benches for r in __import__("wafercoll").cluster.read_bench(b)],
            params,
        )
        assert sorted(set(cols["algorithm"])) == ["nap", "rd"]
        assert all(m > 0 for m in cols["model_s"])
        assert main(["fit", pp, "--bench", *benches, "--plot", f"{folder}/f.png"]) == 0
        import os

        assert os.path.getsize(f"{folder}/f.png") > 1000
    COMM.Barrier()
