"""Experiments in processes of their own, each leaving a record on disk.

``wafercoll reproduce`` runs every experiment in a fresh worker process
(forkserver where available, else spawn), at most ``jobs`` at once, so that
a worker killed from outside (the OOM killer, a batch system) costs only its
own experiment: it is retried once in a fresh process, alone, and then
marked failed with the cause (the signal or exit code and the peak memory
seen). Nothing is shared between workers, and a worker's memory goes back to
the system when its experiment ends.

Each experiment leaves ``OUT/<name>.record.json`` beside its files: while it
runs the record says ``"status": "running"`` with the worker's pid; when it
ends, the record holds what :func:`wafercoll.experiments.run_experiment`
returned plus ``status`` (``"ok"`` or ``"failed"``), ``error``, ``quick``,
``attempts``, ``peak_bytes`` and ``cpu_seconds``. A later run reads the
records back (``reproduce --resume``): an experiment whose record is
complete (:func:`complete`) is not run again, and the report is rebuilt
from the records.

The default job count (:func:`default_jobs`) follows the memory available:
the peaks of the experiments' last full and quick runs are shipped in
:data:`PEAKS`, and as many experiments run at once as their largest peaks fit
in 80 % of the available memory, at most one per CPU.

Examples
--------
>>> from wafercoll.experiments import runner
>>> runner.default_jobs(["a", "b"], peaks={"a": 2 << 30, "b": 1 << 30},
...                     available=4 << 30, cpus=8)
2
>>> runner.exit_text(-9)
'killed by signal 9 (SIGKILL)'
"""

from __future__ import annotations

import collections
import contextlib
import glob
import json
import os
import resource
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._util import exit_text, write_atomic

__all__ = [
    "MEMORY_SHARE",
    "PEAKS",
    "available_memory",
    "complete",
    "cpu_count",
    "exit_text",
    "default_jobs",
    "load_peaks",
    "read_record",
    "record_path",
    "run_in_process",
    "run_isolated",
    "write_peaks",
    "write_record",
]

#: Peak memory (MiB) and wall time (s) of each experiment's last recorded run,
#: per mode (``"full"``, ``"quick"``): a copy of a full run's ``peaks.json``.
PEAKS = os.path.join(os.path.dirname(__file__), "peaks.json")

#: The share of the available memory that the running experiments' recorded
#: peaks may add up to (the rest is the margin: page cache, other users).
MEMORY_SHARE = 0.8

#: How often (s) the parent samples its workers' memory and CPU time.
POLL_S = 0.25

MiB = 1 << 20

#: Peak assumed for an experiment without a recorded one and without any
#: recorded peak to go by.
UNKNOWN_PEAK = 1 << 30


def _mode(quick: bool) -> str:
    return "quick" if quick else "full"


# -- records -----------------------------------------------------------------------


def record_path(out: str, name: str) -> str:
    """The record file of experiment ``name`` in ``out``.

    Examples
    --------
    >>> record_path("figures", "torus_hops")
    'figures/torus_hops.record.json'
    """
    return os.path.join(out, f"{name}.record.json")


def _plain(value: Any) -> Any:
    """JSON has no NumPy scalars: their Python value, else the text."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


def write_record(out: str, record: Mapping[str, Any]) -> str:
    """Write a record (atomically) as ``<name>.record.json``; return its path.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> p = write_record(d, {"name": "x", "status": "ok", "files": []})
    >>> read_record(d, "x")["status"]
    'ok'
    """
    path = record_path(out, record["name"])
    write_atomic(path, json.dumps(record, indent=1, default=_plain) + "\n")
    return path


def read_record(out: str, name: str) -> dict[str, Any] | None:
    """The record of ``name`` in ``out``, or None when absent or unreadable.

    Examples
    --------
    >>> read_record("/nonexistent", "x") is None
    True
    """
    try:
        with open(record_path(out, name), encoding="utf-8") as fh:
            record = json.load(fh)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("name") == name else None


def complete(record: Mapping[str, Any] | None, quick: bool) -> bool:
    """Whether a record is a finished, successful run of this mode whose files exist.

    Examples
    --------
    >>> complete({"status": "ok", "quick": True, "files": []}, quick=True)
    True
    >>> complete({"status": "running", "quick": True, "files": []}, quick=True)
    False
    """
    return bool(
        record
        and record.get("status") == "ok"
        and bool(record.get("quick")) == quick
        and all(os.path.exists(f) for f in record.get("files", []))
    )


def _failed(exp: Any, error: str, **extra: Any) -> dict[str, Any]:
    return {
        **exp.to_dict(),
        "files": [],
        "findings": [],
        "status": "failed",
        "error": error,
        **extra,
    }


# -- memory and CPUs ---------------------------------------------------------------


def available_memory() -> int | None:
    """Bytes of memory available to new processes (MemAvailable), if known.

    Examples
    --------
    >>> m = available_memory()
    >>> m is None or m > 0
    True
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask, else all).

    Examples
    --------
    >>> cpu_count() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_peaks(quick: bool, path: str = PEAKS) -> dict[str, dict[str, float]]:
    """Recorded ``{name: {"peak_MiB": ..., "seconds": ...}}`` of one mode.

    Missing or unreadable files give ``{}``.

    Examples
    --------
    >>> "peak_MiB" in next(iter(load_peaks(quick=False).values()), {"peak_MiB": 0})
    True
    """
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        mode = doc.get(_mode(quick), {})
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: v for k, v in mode.items() if isinstance(v, dict)}


def write_peaks(
    path: str, records: Sequence[Mapping[str, Any]], quick: bool, base: str = PEAKS
) -> None:
    """Write ``base``'s recorded peaks, updated with this run's, to ``path``.

    Only successful records count. Copying a full run's ``peaks.json`` over
    :data:`PEAKS` ships its peaks with the package.

    Examples
    --------
    >>> import json, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "peaks.json")
    >>> rec = {"name": "x", "status": "ok", "peak_bytes": 3 << 20, "seconds": 1.25}
    >>> write_peaks(p, [rec], quick=True, base=p)
    >>> with open(p) as fh:
    ...     json.load(fh)["quick"]["x"]
    {'peak_MiB': 3.0, 'seconds': 1.2}
    """
    doc: dict[str, Any] = {}
    try:
        with open(base, encoding="utf-8") as fh:
            doc = json.load(fh)
    except (OSError, ValueError):
        pass
    mode = doc.setdefault(_mode(quick), {})
    for r in records:
        if r.get("status") == "ok" and r.get("peak_bytes"):
            mode[r["name"]] = {
                "peak_MiB": round(r["peak_bytes"] / MiB, 1),
                "seconds": round(r["seconds"], 1),
            }
    doc["about"] = (
        "Peak resident memory (MiB) and wall time (s) of each experiment's last "
        "recorded run in its own process, by mode; `wafercoll reproduce` chooses "
        "its default job count from them. Written by every run as OUT/peaks.json."
    )
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def _estimates(names: Sequence[str], peaks: Mapping[str, Any]) -> dict[str, float]:
    """Bytes each experiment is expected to peak at (unknown: the largest known)."""
    known = {
        k: (v["peak_MiB"] * MiB if isinstance(v, Mapping) else float(v))
        for k, v in peaks.items()
    }
    fallback = max(known.values(), default=UNKNOWN_PEAK)
    return {n: known.get(n, fallback) for n in names}


def default_jobs(
    names: Sequence[str],
    *,
    peaks: Mapping[str, Any] | None = None,
    available: int | None = None,
    cpus: int | None = None,
    quick: bool = False,
) -> int:
    """How many experiments to run at once by default.

    The largest ``k`` (at most ``cpus`` and ``len(names)``, at least 1) such
    that the ``k`` largest recorded peaks add up to no more than
    :data:`MEMORY_SHARE` of the available memory.

    Parameters
    ----------
    names : sequence of str
        The experiments to run.
    peaks : mapping, optional
        ``{name: bytes}`` or ``{name: {"peak_MiB": ...}}`` (default: the
        recorded ones of the mode, :func:`load_peaks`).
    available : int, optional
        Bytes available (default: :func:`available_memory`; unknown: no limit).
    cpus : int, optional
        Default: :func:`cpu_count`.
    quick : bool
        Which mode's recorded peaks to use by default.

    Examples
    --------
    >>> default_jobs(["a", "b"], peaks={"a": 1 << 30, "b": 1 << 30},
    ...              available=16 << 30, cpus=2)
    2
    >>> default_jobs(["a", "b"], peaks={"a": 3 << 30, "b": 3 << 30},
    ...              available=4 << 30, cpus=2)
    1
    """
    cap = max(1, min(cpus or cpu_count(), len(names)))
    if available is None:
        available = available_memory()
    if available is None:
        return cap
    est = _estimates(names, load_peaks(quick) if peaks is None else peaks)
    largest = sorted(est.values(), reverse=True)
    k, total = 0, 0.0
    while k < cap and total + largest[k] <= MEMORY_SHARE * available:
        total += largest[k]
        k += 1
    return max(1, k)


# -- one experiment in its own process ---------------------------------------------


def _proc_status_bytes(pid: int | str, field: str) -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` in bytes (Linux), else None."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cpu_seconds_of(pid: int) -> float | None:
    """User + system CPU seconds of a live process (Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _reset_peak() -> None:
    """Reset this process's VmHWM (Linux >= 4.0), so the next peak is its own."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass


def _own_usage() -> tuple[int, float]:
    """Peak resident bytes and CPU seconds of this process so far."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    peak = _proc_status_bytes("self", "VmHWM") or ru.ru_maxrss * 1024
    return peak, ru.ru_utime + ru.ru_stime


def _run_one(exp: Any, out: str, quick: bool, attempt: int) -> dict[str, Any]:
    """Run one experiment here and write its final record (never raises Exception)."""
    from . import run_experiment

    cpu0 = _own_usage()[1]
    _reset_peak()
    start = time.perf_counter()
    try:
        record = {**run_experiment(exp, out, quick=quick), "status": "ok"}
    except Exception as exc:  # one failing experiment must not hide the others
        record = _failed(exp, f"{type(exc).__name__}: {exc}")
        record["seconds"] = time.perf_counter() - start
    peak, cpu = _own_usage()
    record.update(
        quick=quick,
        attempts=attempt,
        pid=os.getpid(),
        peak_bytes=peak,
        cpu_seconds=cpu - cpu0,
    )
    write_record(out, record)
    return record


def _worker(name: str, out: str, quick: bool, attempt: int) -> None:
    """A worker process's entry: announce itself in the record, run, record."""
    # Ctrl-C is the parent's to handle: it stops every worker at once, and a
    # worker reacting on its own would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import matplotlib

    matplotlib.use("Agg")  # no display in a worker
    from . import get_experiment

    try:
        exp = get_experiment(name)
    except KeyError as exc:  # registered in the parent only
        blank = {"name": name, "title": "", "paper": "", "claim": ""}
        write_record(
            out,
            {
                **blank,
                "files": [],
                "findings": [],
                "quick": quick,
                "status": "failed",
                "attempts": attempt,
                "error": f"KeyError: {exc}",
            },
        )
        return
    write_record(
        out,
        {
            **exp.to_dict(),
            "status": "running",
            "pid": os.getpid(),
            "attempts": attempt,
            "quick": quick,
            "files": [],
            "findings": [],
        },
    )
    _run_one(exp, out, quick, attempt)


@contextlib.contextmanager
def _interrupt_held() -> Iterator[None]:
    """Hold Ctrl-C back while the block runs, then raise KeyboardInterrupt.

    Starting a worker must not be cut in half: interrupted between the
    request to fork and the answer with the pid, the worker would run on
    without the parent knowing it, and outlive the interrupted run. The
    first start also boots the fork server (a fraction of a second); other
    starts take milliseconds. Off the main thread signals are not delivered
    anyway, and the block runs as is.
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is None  # a handler not set from Python
    ):
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        if callable(previous):
            previous(signal.SIGINT, None)
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt


def _discard(out: str, pid: int | None, name: str) -> None:
    """Remove what a stopped worker left unfinished: temporary files, its record.

    Files are written through temporaries named ``*.tmp<pid>`` (complete
    files are renamed into place, so they stay); a record that does not say
    how the experiment ended would claim a run that no longer exists.
    """
    if pid is not None:
        pattern = os.path.join(glob.escape(out), "**", f"*.tmp{pid}")
        for tmp in glob.glob(pattern, recursive=True):
            with contextlib.suppress(OSError):
                os.remove(tmp)
    record = read_record(out, name)
    if record is not None and record.get("status") not in ("ok", "failed"):
        with contextlib.suppress(OSError):
            os.remove(record_path(out, name))


def _nothing() -> None:
    """The target of the process that boots the fork server."""


def _context() -> Any:
    import multiprocessing as mp

    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        # Workers fork from a server that has imported the experiments once.
        ctx.set_forkserver_preload(["wafercoll.experiments", "matplotlib.figure"])
        # Boot the server (its imports take a moment) with a process that
        # does nothing, so that Ctrl-C meanwhile is handled at once: the
        # workers' starts, which hold Ctrl-C back, then take milliseconds.
        warm = ctx.Process(target=_nothing, name="forkserver-boot")
        warm.start()
        warm.join()
        return ctx
    return mp.get_context("spawn")


class _Running:
    """A live worker and what the parent has seen of it."""

    def __init__(self, proc: Any, exp: Any, attempt: int, estimate: float) -> None:
        self.proc, self.exp, self.attempt = proc, exp, attempt
        self.estimate = estimate
        self.start = time.perf_counter()
        self.peak = 0
        self.cpu = 0.0

    def sample(self) -> int:
        """Update the peak and CPU time; return the resident bytes now."""
        pid = self.proc.pid
        self.peak = max(self.peak, _proc_status_bytes(pid, "VmHWM") or 0)
        self.cpu = _cpu_seconds_of(pid) or self.cpu
        return _proc_status_bytes(pid, "VmRSS") or 0


def _mib(n: float | None) -> str:
    return "?" if not n else f"{n / MiB:.0f} MiB"


def _line(record: Mapping[str, Any]) -> str:
    """``"done in 1.2 s, peak 180 MiB"`` or ``"FAILED: ..."``."""
    if record.get("status") == "ok":
        retried = " (second try)" if record.get("attempts", 1) > 1 else ""
        return (
            f"done in {record['seconds']:.1f} s, peak "
            f"{_mib(record.get('peak_bytes'))}{retried}"
        )
    return f"FAILED: {record['error']}"


def _bar(total: int) -> Any:
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        file=sys.stderr,
        unit="exp",
        disable=not sys.stderr.isatty(),
        leave=False,
        dynamic_ncols=True,
    )


def run_isolated(
    selected: Sequence[Any],
    out: str,
    *,
    quick: bool = False,
    jobs: int = 0,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run each experiment in a fresh worker process, at most ``jobs`` at once.

    The longest experiments (by their recorded time) start first. An
    experiment starts only while the recorded peaks of the running ones and
    its own fit in :data:`MEMORY_SHARE` of the memory that was available at
    the start (one always runs). A worker that dies without its final record
    is retried once, alone; if it dies again the experiment is failed with
    the cause. Progress goes to stderr: a tqdm bar in a terminal, and one
    line per experiment as it ends.

    Parameters
    ----------
    selected : sequence of Experiment
        What :func:`wafercoll.experiments.report.select` returned.
    out : str
        The output directory (it must exist).
    quick : bool
        The reduced sweeps.
    jobs : int
        Workers at once (0: :func:`default_jobs`).
    on_record : callable, optional
        Called with each final record as it arrives.

    Returns
    -------
    dict
        The final record of each experiment, by name. On KeyboardInterrupt
        (workers ignore Ctrl-C: the parent handles it) every worker is
        stopped at once, its temporary files and its "running" record are
        removed, and the exception propagates; the records of the finished
        ones are on disk.

    Examples
    --------
    >>> import tempfile
    >>> from wafercoll.experiments import report
    >>> done = run_isolated(report.select(["torus_hops"]), tempfile.mkdtemp(),
    ...                     quick=True, jobs=1)  # doctest: +SKIP
    >>> done["torus_hops"]["status"]  # doctest: +SKIP
    'ok'
    """
    from multiprocessing.connection import wait

    names = [e.name for e in selected]
    recorded = load_peaks(quick)
    estimates = _estimates(names, recorded)
    if jobs <= 0:
        jobs = default_jobs(names, peaks=recorded)
    jobs = max(1, min(jobs, len(selected)))
    available = available_memory()
    budget = MEMORY_SHARE * available if available else float("inf")
    seconds = {n: recorded.get(n, {}).get("seconds", 0.0) for n in names}
    order = sorted(selected, key=lambda e: -seconds[e.name])
    print(
        f"running {len(selected)} experiment(s) in worker processes, up to {jobs} at "
        f"once ({cpu_count()} CPUs, {_mib(available)} available)",
        file=sys.stderr,
        flush=True,
    )
    ctx = _context()
    queue: collections.deque[tuple[Any, int]] = collections.deque((e, 1) for e in order)
    running: dict[str, _Running] = {}
    done: dict[str, dict[str, Any]] = {}
    bar = _bar(len(selected))
    together = 0  # the largest sum of the workers' resident memory seen

    def say(text: str) -> None:
        bar.write(text, file=sys.stderr)

    def finish(record: dict[str, Any]) -> None:
        done[record["name"]] = record
        bar.update(1)
        say(f"[{len(done)}/{len(selected)}] {record['name']} ... {_line(record)}")
        if on_record is not None:
            on_record(record)

    def start(exp: Any, attempt: int) -> None:
        try:
            os.remove(record_path(out, exp.name))  # no stale record of a former run
        except FileNotFoundError:
            pass
        proc = ctx.Process(
            target=_worker, args=(exp.name, out, quick, attempt), name=exp.name
        )
        with _interrupt_held():  # a started worker is always in ``running``
            proc.start()
            running[exp.name] = _Running(proc, exp, attempt, estimates[exp.name])
        if bar.disable:
            again = " (second try)" if attempt > 1 else ""
            say(f"  {exp.name} started{again}, pid {proc.pid}")
        bar.set_postfix_str(", ".join(running), refresh=True)

    def reap(w: _Running) -> None:
        w.proc.join()
        del running[w.exp.name]
        record = read_record(out, w.exp.name)
        if record is not None and record.get("status") in ("ok", "failed"):
            record["peak_bytes"] = max(record.get("peak_bytes") or 0, w.peak)
            finish(record)
            return
        _discard(out, w.proc.pid, w.exp.name)  # a write the kill interrupted
        cause = (
            f"worker {exit_text(w.proc.exitcode)} after "
            f"{time.perf_counter() - w.start:.1f} s (peak {_mib(w.peak)})"
        )
        if w.attempt == 1:
            say(f"  {w.exp.name}: {cause}; retrying alone in a fresh process")
            queue.append((w.exp, 2))
            return
        record = _failed(
            w.exp,
            f"{cause}, on both tries",
            quick=quick,
            attempts=w.attempt,
            peak_bytes=w.peak,
            cpu_seconds=w.cpu,
            seconds=time.perf_counter() - w.start,
        )
        write_record(out, record)
        finish(record)

    try:
        while queue or running:
            while len(running) < jobs:
                # The first queued experiment that fits: a retry runs alone,
                # the others while the recorded peaks fit in the budget.
                used = sum(w.estimate for w in running.values())
                pick = next(
                    (
                        i
                        for i, (e, attempt) in enumerate(queue)
                        if not running
                        or (attempt == 1 and used + estimates[e.name] <= budget)
                    ),
                    None,
                )
                if pick is None:
                    break
                exp, attempt = queue[pick]
                del queue[pick]
                start(exp, attempt)
            wait([w.proc.sentinel for w in running.values()], timeout=POLL_S)
            together = max(together, sum(w.sample() for w in running.values()))
            for w in list(running.values()):
                if not w.proc.is_alive():
                    reap(w)
            bar.set_postfix_str(", ".join(running), refresh=False)
    except KeyboardInterrupt:
        _stop(list(running.values()), out)
        raise
    finally:
        bar.close()
    print(
        f"the workers' resident memory together peaked at {_mib(together)}",
        file=sys.stderr,
    )
    return done


def _stop(workers: Sequence[_Running], out: str) -> None:
    """Stop the workers at once (SIGTERM, then SIGKILL) and discard their leftovers."""
    for w in workers:
        w.proc.terminate()
    deadline = time.monotonic() + 2.0
    for w in workers:
        w.proc.join(max(0.0, deadline - time.monotonic()))
        if w.proc.exitcode is None:
            w.proc.kill()
            w.proc.join()
        _discard(out, w.proc.pid, w.exp.name)


def run_in_process(
    exp: Any, out: str, *, quick: bool = False, attempt: int = 1
) -> dict[str, Any]:
    """Run one experiment in this process and write its record; return it.

    A failing experiment gives a record with ``status`` "failed" and
    ``error``; its peak memory is that of this process during the run (where
    Linux lets the peak be reset, else since the process started).

    Examples
    --------
    >>> import tempfile
    >>> r = run_in_process("torus_hops", tempfile.mkdtemp(), quick=True)
    >>> r["status"], r["attempts"]
    ('ok', 1)
    """
    from . import get_experiment

    if isinstance(exp, str):
        exp = get_experiment(exp)
    return _run_one(exp, out, quick, attempt)
