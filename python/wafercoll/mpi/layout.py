"""The node layout of an MPI communicator (shared-memory split)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .executor import import_mpi

__all__ = ["detect_layout"]


def detect_layout(comm: Any = None) -> tuple[int, np.ndarray]:
    """Processes per node and the node of every rank of ``comm``.

    Splits the communicator by shared memory (``MPI_COMM_TYPE_SHARED``);
    nodes are numbered in order of their lowest rank.

    Returns
    -------
    ppn : int
    rank_to_node : numpy.ndarray of int64
        The same on every rank.

    Raises
    ------
    ValueError
        On every rank, when the nodes hold different numbers of processes.
    """
    MPI = import_mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    local = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.Get_rank())
    try:
        leader = np.array([comm.Get_rank()], dtype=np.int64)
        local.Bcast(leader, root=0)
    finally:
        local.Free()
    leaders = np.empty(comm.Get_size(), dtype=np.int64)
    comm.Allgather(leader, leaders)
    _, node = np.unique(leaders, return_inverse=True)
    counts = np.bincount(node)
    if (counts != counts[0]).any():
        raise ValueError(
            f"the nodes hold different numbers of processes ({counts.tolist()}); "
            "pass ppn explicitly"
        )
    return int(counts[0]), node.astype(np.int64)
