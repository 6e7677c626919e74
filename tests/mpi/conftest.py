"""MPI tests: collected only under mpirun.

Run them with 8 processes (oversubscribed on small machines)::

    mpirun --oversubscribe -n 8 python -m pytest -q -p no:cacheprovider tests/mpi

(add ``--allow-run-as-root`` when running as root). In a plain ``pytest`` run,
or without mpi4py, nothing here is imported.
"""

from __future__ import annotations

import importlib.util
import os

_UNDER_MPIRUN = any(
    k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")
)
collect_ignore_glob = (
    []
    if _UNDER_MPIRUN and importlib.util.find_spec("mpi4py") is not None
    else ["test_*.py"]
)
