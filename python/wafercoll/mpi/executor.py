"""Run a verified schedule on a real MPI communicator (mpi4py, NumPy buffers).

Every rank walks the schedule's rounds (a transfer's round is the length of
the longest dependency chain before it). In a round it posts a nonblocking
receive into a preallocated buffer for every transfer into it and a
nonblocking send for every transfer out of it, waits for all of them, and
then applies the receives in transfer order (copy over, or add into, the
destination blocks). Sends read the vector before any receive of the round
is applied, which is what a verified schedule asks for: a transfer that
reads a block is never in a later round than a concurrent write into it
(see :mod:`wafercoll.schedule`). Nothing is pickled: messages are the
buffers themselves (contiguous block ranges are sent as views, others are
packed into preallocated buffers). Posting every operation of a round before
waiting cannot deadlock.

Failures are reported on every rank: a communicator whose size differs from
the schedule's rank count is refused locally; ranks holding different
schedules or sizes find out through one collective fingerprint comparison.
Every wait has a timeout (``timeout_s``, 60 s by default): the rounds, and
every collective the executor makes (the fingerprint comparison, the checks
and the timing barriers), which are nonblocking and waited for the same way.
A rank whose wait times out prints one line naming itself and what it waited
for (the transfers and the ranks that did not answer) and ends the whole job
with ``MPI_Abort`` (``on_timeout="abort"``, the default), so a rank that
failed before joining, stalls or never answers cannot hang the job, even in a
program that does not use :func:`abort_on_error`. (Raising would not be
enough: a rank that exits on an exception waits in ``MPI_Finalize`` for the
rank that never answers.) With ``on_timeout="raise"`` it raises
:class:`TimeoutError` instead and the caller decides. A rank that fails in
any other way should end the whole job too: :func:`abort_on_error` does that
(it is what ``python -m wafercoll.mpi`` uses).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._util import as_int, as_real
from ..analysis import block_element_offsets, verify
from ..schedule import Schedule

__all__ = [
    "ABORT_GRACE_S",
    "DEFAULT_TIMEOUT_S",
    "MPIExecutor",
    "abort_on_error",
    "import_mpi",
    "timed_wait",
]

_yield = getattr(os, "sched_yield", lambda: None)

_DTYPES = (np.float64, np.float32, np.int64, np.int32)

#: Default ``timeout_s`` of :class:`MPIExecutor`: the longest wait for one
#: round or collective, long enough for a round of any size a benchmark runs
#: on a loaded machine, short enough that a job with a dead rank ends.
DEFAULT_TIMEOUT_S = 60.0

#: Seconds a rank whose wait timed out waits before ending the job, so that
#: the other ranks that time out meanwhile print what they wait for too (in a
#: chain of waiting ranks, one of them names the rank that never answers).
ABORT_GRACE_S = 1.0


def import_mpi() -> Any:
    """Import ``mpi4py.MPI`` or explain how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise ImportError(
            "wafercoll.mpi needs mpi4py and an MPI library: "
            "pip install 'wafercoll[mpi]' (and e.g. apt-get install "
            "openmpi-bin libopenmpi-dev)"
        ) from exc
    return MPI


def timed_wait(
    reqs: list[Any], timeout_s: float | None, what: Any, rank: int = -1
) -> None:
    """Wait for MPI requests, or raise :class:`TimeoutError` after ``timeout_s``.

    ``what`` (a string, or a callable returning one, evaluated only on
    timeout) says what was waited for. The pending requests are cancelled
    before raising.
    """
    MPI = import_mpi()
    if timeout_s is None:
        MPI.Request.Waitall(reqs)
        return
    # Poll: a short spin first (most waits complete within it), then yield the
    # processor between polls, as MPI's own wait does on an oversubscribed
    # node (a sleep, even sleep(0), would add the timer's slack to every
    # wait); look at the clock every 64 polls.
    deadline = time.monotonic() + timeout_s
    polls = 0
    while not MPI.Request.Testall(reqs):
        polls += 1
        if polls > 32:
            _yield()
        if polls % 64 == 0 and time.monotonic() > deadline:
            pending = [i for i, q in enumerate(reqs) if not q.Test()]
            for i in pending:
                try:
                    reqs[i].Cancel()
                except Exception:  # noqa: BLE001 - collectives cannot be cancelled
                    pass
            text = what(pending) if callable(what) else str(what)
            who = f"rank {rank}: " if rank >= 0 else ""
            raise TimeoutError(f"{who}{text} did not complete within {timeout_s:g} s")


@contextlib.contextmanager
def abort_on_error(comm: Any = None, code: int = 1) -> Iterator[None]:
    """End the whole MPI job when the block raises on this rank.

    Prints one line (``rank R: error: ...``) and calls ``MPI_Abort`` with
    ``code``, so the other ranks (which may be waiting for this one, or
    stalled) do not keep the job alive.
    """
    MPI = import_mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, SystemExit) and not exc.code:
            raise
        text = str(exc) or type(exc).__name__
        print(f"rank {comm.Get_rank()}: error: {text}", file=sys.stderr, flush=True)
        comm.Abort(code)
        raise


def _fingerprint(s: Schedule, elements: int, dtype: np.dtype) -> np.ndarray:
    c = s._core
    crc = 0
    for arr in (c.src, c.op, c.dst_offsets, c.dsts, c.range_lo, c.range_hi, c.deps):
        crc = zlib.crc32(np.ascontiguousarray(arr).tobytes(), crc)
    return np.array(
        [s.num_ranks, s.num_transfers, s.size_bytes, elements, dtype.num, crc],
        dtype=np.int64,
    )


class MPIExecutor:
    """A schedule prepared for one rank of an MPI communicator.

    Parameters
    ----------
    schedule : Schedule
        Verified on construction (unless ``check=False``).
    elements : int
        Elements of every rank's vector; blocks get elements in proportion to
        their byte sizes (as in :func:`wafercoll.execute`).
    comm : mpi4py.MPI.Comm, optional
        Default ``MPI.COMM_WORLD``; its size must be ``schedule.num_ranks``.
    dtype : numpy dtype
        float64, float32, int64 or int32.
    timeout_s : float or None
        Longest wait for one round or one of the executor's collectives
        (default :data:`DEFAULT_TIMEOUT_S`, 60 s); ``None`` waits forever.
    on_timeout : {"abort", "raise"}
        What a rank whose wait times out does. ``"abort"`` (default): print
        ``rank R: error: ...`` naming the transfers and ranks it waited for
        to stderr and, after :data:`ABORT_GRACE_S`, end the whole job
        (``MPI_Abort``, exit status 1). ``"raise"``: raise
        :class:`TimeoutError` (the pending requests cancelled); the job is
        then the caller's to end or to continue on another communicator.
    check : bool
        Verify the schedule first.

    Raises
    ------
    ValueError
        On every rank, when the communicator size differs from the
        schedule's rank count or the ranks hold different schedules, element
        counts or dtypes; for an ``on_timeout`` other than the two.
    TimeoutError
        With ``on_timeout="raise"``, on a rank whose wait times out.
    """

    def __init__(
        self,
        schedule: Schedule,
        elements: int,
        comm: Any = None,
        *,
        dtype: Any = np.float64,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        on_timeout: str = "abort",
        check: bool = True,
    ) -> None:
        MPI = import_mpi()
        if not isinstance(schedule, Schedule):
            raise TypeError("schedule must be a wafercoll.Schedule")
        if on_timeout not in ("abort", "raise"):
            raise ValueError(
                f"on_timeout must be 'abort' or 'raise', got {on_timeout!r}"
            )
        self.on_timeout = on_timeout
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.schedule = schedule
        self.dtype = np.dtype(dtype)
        if self.dtype not in [np.dtype(d) for d in _DTYPES]:
            raise TypeError(
                f"dtype must be float64, float32, int64 or int32, got {dtype}"
            )
        self.elements = as_int(elements, "elements", 1, 1 << 34)
        self.timeout_s = (
            None
            if timeout_s is None
            else as_real(timeout_s, "timeout_s", positive=True)
        )
        size = self.comm.Get_size()
        if size != schedule.num_ranks:
            raise ValueError(
                f"the communicator has {size} processes but the schedule has "
                f"{schedule.num_ranks} ranks"
            )
        self.rank = self.comm.Get_rank()
        mine = _fingerprint(schedule, self.elements, self.dtype)
        every = np.empty((size, mine.size), dtype=np.int64)
        self._timed(
            [self.comm.Iallgather(mine, every)],
            "the agreement on the schedule (a rank may have failed or stalled "
            "before joining it)",
        )
        if (every != mine[None, :]).any():
            bad = int(np.flatnonzero((every != every[0]).any(axis=1))[0])
            raise ValueError(
                "the ranks hold different schedules, element counts or dtypes "
                f"(rank {bad} differs from rank 0: ranks, transfers, bytes, "
                f"elements, dtype, checksum = {every[bad].tolist()} vs "
                f"{every[0].tolist()})"
            )
        if check:
            verify(schedule)
        self._plan()

    # ------------------------------------------------------------------ plan
    def _plan(self) -> None:
        s, r, c = self.schedule, self.rank, self.schedule._core
        off = block_element_offsets(s, self.elements)
        step = s.steps()
        src = c.src
        doff, dsts = c.dst_offsets, c.dsts
        roff, lo, hi = c.range_offsets, c.range_lo, c.range_hi
        is_dst = np.zeros(s.num_transfers, dtype=bool)
        hits = np.flatnonzero(dsts == r)
        is_dst[np.searchsorted(doff, hits, side="right") - 1] = True
        mine = np.flatnonzero((src == r) | is_dst)
        mine = mine[np.lexsort((mine, step[mine]))]
        self.buffer = np.zeros(self.elements, dtype=self.dtype)
        rounds: list[tuple[list[Any], list[Any], list[Any]]] = []
        cur = -1
        for t in mine.tolist():
            if step[t] != cur:
                cur = int(step[t])
                rounds.append(([], [], []))
            sends, recvs, apply = rounds[-1]
            pieces = [
                (int(off[lo[k]]), int(off[hi[k]])) for k in range(roff[t], roff[t + 1])
            ]
            pieces = [(a, b) for a, b in pieces if b > a]
            n = sum(b - a for a, b in pieces)
            if len(pieces) == 1:
                a, b = pieces[0]
                where: Any = slice(a, b)
            else:
                where = (
                    np.concatenate([np.arange(a, b) for a, b in pieces]).astype(np.intp)
                    if pieces
                    else np.zeros(0, np.intp)
                )
            if src[t] == r:
                packed = None if isinstance(where, slice) else np.empty(n, self.dtype)
                for d in dsts[doff[t] : doff[t + 1]].tolist():
                    if d != r:
                        sends.append((d, where, packed, t))
            if is_dst[t] and src[t] != r:
                rb = np.empty(n, dtype=self.dtype)
                recvs.append((int(src[t]), rb, t))
                apply.append((where, rb, int(c.op[t])))
        self._rounds = rounds
        self._masked = not (
            s.participants[r] and s.collective in ("allreduce", "reduce")
        )

    # ------------------------------------------------------------------- run
    def _wait(self, reqs: list[Any], k: int) -> None:
        recvs, sends = self._rounds[k][1], self._rounds[k][0]

        def what(pending: list[int]) -> str:
            parts = []
            for i in pending[:4]:
                if i < len(recvs):
                    peer, _, t = recvs[i]
                    parts.append(f"transfer {t} from rank {peer}")
                else:
                    peer, _, _, t = sends[i - len(recvs)]
                    parts.append(f"transfer {t} to rank {peer}")
            more = f" and {len(pending) - 4} more" if len(pending) > 4 else ""
            return (
                f"round {k} of {self.schedule.name or 'the'} schedule (waiting for "
                f"{', '.join(parts)}{more})"
            )

        self._timed(reqs, what)

    def _timed(self, reqs: list[Any], what: Any) -> None:
        """:func:`timed_wait` with this executor's timeout and ``on_timeout``."""
        try:
            timed_wait(reqs, self.timeout_s, what, self.rank)
        except TimeoutError as exc:
            if self.on_timeout == "raise":
                raise
            print(
                f"rank {self.rank}: error: {exc}; ending the job",
                file=sys.stderr,
                flush=True,
            )
            time.sleep(min(ABORT_GRACE_S, self.timeout_s or ABORT_GRACE_S))
            self.comm.Abort(1)
            raise  # pragma: no cover - MPI_Abort does not return

    def run(self, x: Any = None) -> np.ndarray:
        """Run the schedule on this rank's input vector and return the result.

        Parameters
        ----------
        x : array_like, shape (elements,), optional
            This rank's input, copied into the executor's preallocated
            :attr:`buffer`. Without it the schedule runs in place on
            :attr:`buffer` as it stands (write the input there to save the
            copy). Cells that hold no input under the schedule's collective
            (non-root ranks of a broadcast, non-owned blocks of an allgather,
            non-participants) are set to zero, as in :func:`wafercoll.execute`.

        Returns
        -------
        numpy.ndarray
            The rank's buffer after the schedule (the executor's preallocated
            buffer itself: copy it to keep it across runs).
        """
        buf = self.buffer
        if x is not None:
            arr = np.asarray(x)
            if arr.shape != (self.elements,):
                raise ValueError(
                    f"x must have shape ({self.elements},), got {arr.shape}"
                )
            buf[...] = arr
        if self._masked:
            self._mask_input(buf)
        comm = self.comm
        for k, (sends, recvs, apply) in enumerate(self._rounds):
            reqs = [comm.Irecv(rb, source=src, tag=7) for src, rb, _ in recvs]
            for d, where, packed, _ in sends:
                if packed is None:
                    data = buf[where]
                else:
                    np.take(buf, where, out=packed)
                    data = packed
                reqs.append(comm.Isend(data, dest=d, tag=7))
            if reqs:
                self._wait(reqs, k)
            for where, rb, op in apply:
                if op:
                    if isinstance(where, slice):
                        view = buf[where]
                        np.add(view, rb, out=view)
                    else:
                        np.add.at(buf, where, rb)
                else:
                    buf[where] = rb
        return buf

    def _mask_input(self, buf: np.ndarray) -> None:
        s = self.schedule
        if not s.participants[self.rank]:
            buf[...] = 0
        elif s.collective == "broadcast" and s.root != self.rank:
            buf[...] = 0
        elif s.collective == "allgather":
            off = block_element_offsets(s, self.elements)
            for b, o in enumerate(s.owners.tolist()):
                if o != self.rank:
                    buf[off[b] : off[b + 1]] = 0

    # -------------------------------------------------------------- checking
    def reference(self, x: Any) -> np.ndarray:
        """The expected result on this rank.

        ``MPI_Allreduce`` for an allreduce; for other collectives the NumPy
        executor on the gathered inputs.
        """
        MPI = import_mpi()
        arr = np.ascontiguousarray(x, dtype=self.dtype)
        if self.schedule.collective == "allreduce":
            out = np.empty_like(arr)
            self._collective(
                self.comm.Iallreduce(arr, out, op=MPI.SUM), "MPI_Allreduce"
            )
            return out
        from ..analysis import execute

        every = np.empty((self.comm.Get_size(), arr.size), dtype=self.dtype)
        self._collective(self.comm.Iallgather(arr, every), "MPI_Allgather")
        return execute(self.schedule, every, check=False)[self.rank]

    def _collective(self, req: Any, what: str) -> None:
        self._timed([req], what)

    def check(self, x: Any, *, rtol: float = 1e-9) -> bool:
        """Run, compare with :meth:`reference` on every rank, return whether all match.

        Floating-point results may differ from MPI's in the summation order,
        so they are compared with ``rtol`` (relative to the largest sum of
        magnitudes); integers exactly.
        """
        MPI = import_mpi()
        got = self.run(x).copy()
        want = self.reference(x)
        if np.issubdtype(self.dtype, np.integer):
            ok = bool((got == want).all())
        else:
            scale = np.abs(np.asarray(x, dtype=np.float64)).max() * self.comm.Get_size()
            ok = bool(np.allclose(got, want, rtol=0, atol=rtol * max(scale, 1.0)))
        flags = np.array([1 if ok else 0], dtype=np.int32)
        every = np.empty_like(flags)
        self._collective(
            self.comm.Iallreduce(flags, every, op=MPI.MIN), "the check's MPI_Allreduce"
        )
        return bool(every[0])

    def time(self, x: Any, repeats: int = 10, *, baseline: bool = False) -> float:
        """Median over ``repeats`` barrier-synchronised runs of the slowest rank.

        With ``baseline=True`` times ``MPI_Allreduce`` on the same vector
        instead.
        """
        MPI = import_mpi()
        reps = as_int(repeats, "repeats", 1, 1 << 20)
        arr = np.ascontiguousarray(x, dtype=self.dtype)
        out = np.empty_like(arr)
        times = np.empty(reps)
        one, slowest = np.empty(1), np.empty(1)
        for i in range(reps):
            self._collective(self.comm.Ibarrier(), "the timing barrier")
            t0 = MPI.Wtime()
            if baseline:
                self._collective(
                    self.comm.Iallreduce(arr, out, op=MPI.SUM), "MPI_Allreduce"
                )
            else:
                self.run(arr)
            one[0] = MPI.Wtime() - t0
            self._collective(
                self.comm.Iallreduce(one, slowest, op=MPI.MAX), "the timing reduction"
            )
            times[i] = slowest[0]
        return float(np.median(times))
