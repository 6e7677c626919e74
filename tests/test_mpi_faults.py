"""Fault injection under mpirun: a failing or stalled rank ends the job, never hangs it.

Each case starts its own ``mpirun -n 4`` (skipped without OpenMPI and
mpi4py; CI has both) and must finish with a non-zero exit within the
executor's timeout + 10 s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

pytest.importorskip("mpi4py")
MPIRUN = shutil.which("mpirun")
pytestmark = pytest.mark.skipif(MPIRUN is None, reason="needs mpirun (OpenMPI)")
TIMEOUT_S = 3.0


def _mpirun(tmp_path, body: str, n: int = 4) -> tuple[int, str, float]:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    cmd = [MPIRUN, "--oversubscribe", "-n", str(n)]
    if os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    cmd += [sys.executable, str(script)]
    t0 = time.monotonic()
    p = subprocess.run(
        cmd, capture_output=True, text=True, timeout=TIMEOUT_S + 60, cwd=tmp_path
    )
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


PRELUDE = f"""
import time
import numpy as np
from mpi4py import MPI
import wafercoll as wc
from wafercoll.mpi import MPIExecutor, abort_on_error
comm = MPI.COMM_WORLD
TIMEOUT = {TIMEOUT_S}
"""


def test_a_rank_failing_before_the_first_exchange_ends_the_job(tmp_path):
    code, out, elapsed = _mpirun(
        tmp_path,
        PRELUDE
        + """
with abort_on_error():
    if comm.Get_rank() == 2:
        raise RuntimeError("injected failure before the first exchange")
    s = wc.build("generic_ring_allreduce", 4, 64)
    ex = MPIExecutor(s, 16, timeout_s=TIMEOUT)
    ex.run(np.ones(16))
print("finished", flush=True)
""",
    )
    assert code != 0
    assert "rank 2: error: injected failure" in out
    assert "finished" not in out
    assert elapsed < TIMEOUT_S + 10


def test_a_stalled_rank_cannot_hang_the_agreement(tmp_path):
    code, out, elapsed = _mpirun(
        tmp_path,
        PRELUDE
        + """
with abort_on_error():
    if comm.Get_rank() == 1:
        time.sleep(600)  # stalled (e.g. SIGSTOP)
    s = wc.build("generic_ring_allreduce", 4, 64)
    ex = MPIExecutor(s, 16, timeout_s=TIMEOUT)
print("finished", flush=True)
""",
    )
    assert code != 0
    assert "agreement on the schedule" in out and "did not complete within 3 s" in out
    assert elapsed < TIMEOUT_S + 10


def test_a_rank_stalled_mid_run_is_named_by_its_partners(tmp_path):
    code, out, elapsed = _mpirun(
        tmp_path,
        PRELUDE
        + """
with abort_on_error():
    s = wc.build("generic_ring_allreduce", 4, 64)
    ex = MPIExecutor(s, 16, timeout_s=TIMEOUT)
    if comm.Get_rank() == 1:
        time.sleep(600)
    ex.run(np.ones(16))
print("finished", flush=True)
""",
    )
    assert code != 0
    # The first rank to time out aborts the job: rank 1's partners, or theirs
    # (waiting in a later round for a rank that waits for rank 1).
    import re

    assert re.search(
        r"rank \d: error: rank \d: round \d+ of generic_ring_allreduce schedule \(waiting for "
        r"transfer \d+ (from|to) rank \d\) did not complete within 3 s",
        out,
    ), out
    assert elapsed < TIMEOUT_S + 10


def test_a_rank_that_never_answers_ends_the_job_without_abort_on_error(tmp_path):
    # No abort_on_error: the executor's own timeout ends the job. (A rank that
    # merely raised would wait in MPI_Finalize for rank 1 forever.)
    code, out, elapsed = _mpirun(
        tmp_path,
        PRELUDE
        + """
s = wc.build("generic_ring_allreduce", 4, 64)
ex = MPIExecutor(s, 16, timeout_s=TIMEOUT)
if comm.Get_rank() == 1:
    time.sleep(3600)  # never answers
ex.run(np.ones(16))
print("finished", flush=True)
""",
    )
    assert code != 0
    assert "finished" not in out
    # Rank 2 waits for rank 1 in round 0; the ranks waiting for rank 2 or 3
    # time out within the grace period and print theirs too.
    import re

    assert re.search(
        r"rank 2: error: rank 2: round 0 of generic_ring_allreduce schedule "
        r"\(waiting for transfer \d+ from rank 1\) did not complete within 3 s; "
        r"ending the job",
        out,
    ), out
    assert elapsed < TIMEOUT_S + 10


def test_bench_with_bad_arguments_aborts_every_rank(tmp_path):
    code, out, elapsed = _mpirun(
        tmp_path,
        """
import sys
from wafercoll.mpi.__main__ import main
sys.exit(main(["bench", "--algorithm", "cluster_nap_allreduce", "--ppn", "3",
               "--timeout", "3"]))
""",
    )
    assert code != 0
    assert "ppn = 3 must divide" in out
    assert elapsed < TIMEOUT_S + 10


def test_bench_csv_folder_is_checked_before_running(tmp_path):
    code, out, elapsed = _mpirun(
        tmp_path,
        """
import sys
from wafercoll.mpi.__main__ import main
sys.exit(main(["bench", "--csv", "/nonexistent/x.csv", "--sizes", "1GiB"]))
""",
    )
    assert code == 2
    assert "cannot write into /nonexistent" in out
    assert elapsed < 30
