"""Ping-pong measurements by locality, in the layout of the Blue Waters data.

:func:`pingpong` times round trips between pairs of ranks, with 1, 2, ...
pairs of one node communicating at once, as the measurements behind the
paper 001 models were taken (BlueWatersModel ``bw_output``; recovered
details §1.8). Its rows have the columns of
:func:`wafercoll.cluster.model.blue_waters_pingpong`, so
:func:`wafercoll.cluster.model.fit_pingpong` turns them into a
:class:`~wafercoll.cluster.model.ClusterParams` the cost equations and the
simulator use, and :func:`wafercoll.cluster.compare_bench` puts a benchmark's
measured allreduce times beside the model's.

Localities (ranks grouped into logical nodes of ``ppn`` consecutive ranks):

* ``"node"``: pair ``j`` is rank ``j`` and rank ``j + ppn // 2`` of node 0
  (two halves of a node; a node of two sockets splits the same way);
* ``"network"``: pair ``j`` is rank ``j`` of node 0 and rank ``j`` of node 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_int, as_real
from .executor import import_mpi, timed_wait

__all__ = ["PINGPONG_COLUMNS", "pingpong", "write_pingpong_csv"]

PINGPONG_COLUMNS = ("locality", "block", "size_bytes", "pairs", "round_trip_s")


def _pairs(locality: str, ppn: int) -> list[tuple[int, int]]:
    if locality == "node":
        return [(j, j + ppn // 2) for j in range(ppn // 2)]
    return [(j, ppn + j) for j in range(ppn)]


def pingpong(
    comm: Any,
    sizes: Any,
    ppn: int,
    *,
    max_pairs: int | None = None,
    repeats: int = 20,
    timeout_s: float | None = 60.0,
) -> list[dict[str, Any]]:
    """Round-trip times by locality and number of concurrent pairs.

    Collective over ``comm``: every rank calls it. For each locality the
    communicator offers (``"node"`` needs ``ppn >= 2``, ``"network"`` at
    least two nodes), each size and each ``k = 1 .. max_pairs``, the first
    ``k`` pairs exchange ``repeats`` round trips at once after a barrier;
    a row's time is the slowest pair's mean round trip.

    Parameters
    ----------
    comm : mpi4py communicator
    sizes : sequence of int
        Message sizes in bytes (>= 1).
    ppn : int
        Ranks per logical node; ``comm``'s size must be a multiple.
    max_pairs : int, optional
        Largest number of concurrent pairs (default: all the locality has).
    repeats : int
        Round trips per measurement.
    timeout_s : float or None
        Seconds one measurement may take before every rank raises
        :class:`TimeoutError` (``None``: wait forever).

    Returns
    -------
    list of dict
        On rank 0, one row per measurement with :data:`PINGPONG_COLUMNS`;
        an empty list on the other ranks.
    """
    MPI = import_mpi()
    rank, p = comm.Get_rank(), comm.Get_size()
    q = as_int(ppn, "ppn", 1, p)
    if p % q:
        raise ValueError(f"ppn = {q} must divide the communicator's size {p}")
    reps = as_int(repeats, "repeats", 1, 1 << 20)
    tmo = None if timeout_s is None else as_real(timeout_s, "timeout_s", positive=True)
    sz = [as_int(s, "sizes", 1, 1 << 30) for s in np.atleast_1d(sizes).tolist()]
    localities = []
    if q >= 2:
        localities.append("node")
    if p >= 2 * q:
        localities.append("network")
    rows: list[dict[str, Any]] = []
    t_one, t_max = np.zeros(1), np.zeros(1)
    for loc in localities:
        pairs = _pairs(loc, q)
        kmax = len(pairs) if max_pairs is None else min(len(pairs), max_pairs)
        for size in sz:
            send = np.ones(size, dtype=np.uint8)
            recv = np.empty(size, dtype=np.uint8)
            for k in range(1, kmax + 1):
                active = pairs[:k]
                timed_wait([comm.Ibarrier()], tmo, "the ping-pong barrier", rank)
                t_one[0] = 0.0
                for a, b in active:
                    if rank not in (a, b):
                        continue
                    peer = b if rank == a else a
                    t0 = MPI.Wtime()
                    for _ in range(reps):
                        if rank == a:
                            timed_wait(
                                [comm.Isend(send, peer, tag=7)], tmo, "ping", rank
                            )
                            timed_wait(
                                [comm.Irecv(recv, peer, tag=8)], tmo, "pong", rank
                            )
                        else:
                            timed_wait(
                                [comm.Irecv(recv, peer, tag=7)], tmo, "ping", rank
                            )
                            timed_wait(
                                [comm.Isend(send, peer, tag=8)], tmo, "pong", rank
                            )
                    t_one[0] = (MPI.Wtime() - t0) / reps
                timed_wait(
                    [comm.Ireduce(t_one, t_max, op=MPI.MAX, root=0)],
                    tmo,
                    "the ping-pong reduction",
                    rank,
                )
                if rank == 0:
                    rows.append(
                        {
                            "locality": loc,
                            "block": 0,
                            "size_bytes": size,
                            "pairs": k,
                            "round_trip_s": float(t_max[0]),
                        }
                    )
    return rows


def write_pingpong_csv(path: str, rows: list[dict[str, Any]], header: str = "") -> None:
    """Write :func:`pingpong` rows as CSV (``header`` lines become comments)."""
    from .._util import write_atomic

    lines = [f"# {h}" for h in header.splitlines() if h]
    lines.append(",".join(PINGPONG_COLUMNS))
    lines += [",".join(str(r[c]) for c in PINGPONG_COLUMNS) for r in rows]
    write_atomic(path, "\n".join(lines) + "\n")
