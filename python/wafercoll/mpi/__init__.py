r"""Run schedules on a real MPI communicator (optional extra ``wafercoll[mpi]``).

:class:`MPIExecutor` runs any verified schedule with mpi4py and NumPy
buffers, checks it against ``MPI_Allreduce`` and times it next to it.
``python -m wafercoll.mpi bench`` is the command-line benchmark::

    mpirun -n 8 python -m wafercoll.mpi bench --algorithm cluster_nap_allreduce \\
        --ppn 4 --sizes 8,1024,65536

mpi4py is imported only when an executor is created, so ``import wafercoll``
and ``import wafercoll.mpi`` never need it.
"""

from __future__ import annotations

from .executor import MPIExecutor, import_mpi
from .layout import detect_layout

__all__ = ["MPIExecutor", "detect_layout", "import_mpi"]
