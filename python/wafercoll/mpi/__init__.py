r"""Run schedules on a real MPI communicator (optional extra ``wafercoll[mpi]``).

:class:`MPIExecutor` runs any verified schedule with mpi4py and NumPy
buffers, checks it against ``MPI_Allreduce`` and times it next to it.
``python -m wafercoll.mpi bench`` is the command-line benchmark::

    mpirun -n 8 python -m wafercoll.mpi bench --algorithm cluster_nap_allreduce \\
        --ppn 4 --sizes 8,1024,65536

mpi4py is imported only when an executor is created, so ``import wafercoll``
and ``import wafercoll.mpi`` never need it. Wrap a program's work in
:func:`abort_on_error` so that a rank that fails ends the whole job instead
of leaving the others waiting::

    with wafercoll.mpi.abort_on_error():
        ex = MPIExecutor(schedule, elements, timeout_s=60)
        ex.run(x)
"""

from __future__ import annotations

from .executor import MPIExecutor, abort_on_error, import_mpi, timed_wait
from .layout import detect_layout

__all__ = ["MPIExecutor", "abort_on_error", "detect_layout", "import_mpi", "timed_wait"]
