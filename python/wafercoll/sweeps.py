"""Design sweeps: algorithm x machine x size x network grids, cached and parallel.

:func:`sweep` runs every point of a grid (build, verify, simulate, bound) and
returns a tidy pandas DataFrame, one row per point. Points are computed on a
local process pool by default, or on a Dask cluster (``scheduler=``, an
address such as ``"tcp://host:8786"`` or a ``distributed.Client``), and each
finished point is stored on disk by ``joblib.Memory``, keyed by the point's
content (its algorithm, options, size, the topology's factory call and the
network model): a second call is served from the cache, and a sweep that was
interrupted computes only the points it had not finished.

A grid is a dict of lists (their Cartesian product) or a list of point
dicts, with the keys

``algorithm``
    a registered name;
``topology``
    a :class:`~wafercoll.Topology` or a spec of
    :func:`wafercoll.machines.resolve` (``"mesh:9x9"``, ``"torus:4x4"``,
    ``"ring:8"``, ``"wormhole_n150"``, ``"wse2_grid:16x16"``, ``"cluster:4x16"``);
``size_bytes``
    bytes per rank;
``network``
    a :class:`~wafercoll.NetworkModel` or a preset name of
    :func:`wafercoll.network_presets` (default: the machine's preset for a
    machine spec, else :func:`wafercoll.machines.default_network`, 1 GB/s);
``options``
    a dict of builder options (default none).

Ctrl-C stops a sweep within a second: the local workers are stopped at once
(Dask tasks are cancelled), and the cache keeps only whole entries, those of
the points that finished. A cache entry that cannot be read (truncated, say)
is computed again and counted as computed. Errors name what they are about:
:class:`CacheError` (the cache directory), :class:`SchedulerError` (the Dask
scheduler's address), :class:`WorkerLostError` (a worker process that died,
and the points that did not finish).

Examples
--------
>>> import wafercoll as wc
>>> df = wc.sweep({"algorithm": ["generic_ring_allreduce"],
...                "topology": ["ring:4"], "size_bytes": [1024, 4096]},
...               jobs=1, cache=None, progress=False)
>>> list(df["size_bytes"])
[1024, 4096]
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from . import machines
from ._errors import CacheError, SchedulerError, WorkerLostError
from ._util import cache_root, exit_text
from .network import NetworkModel
from .topology import Topology

__all__ = [
    "COLUMNS",
    "SCHEDULER_TIMEOUT_S",
    "CacheError",
    "SchedulerError",
    "WorkerLostError",
    "default_cache",
    "read_grid",
    "sweep",
]

#: Seconds to reach a Dask scheduler given by its address before
#: :class:`SchedulerError` (Dask's own default waits 30 s).
SCHEDULER_TIMEOUT_S = 10.0

#: The port of a scheduler address without one (Dask's default).
_DASK_PORT = 8786

#: Columns of the DataFrame, in order.
COLUMNS = (
    "algorithm",
    "topology",
    "size_bytes",
    "network",
    "options",
    "status",
    "transfers",
    "time_s",
    "bandwidth_Bps",
    "busbw_Bps",
    "link_utilization",
    "lower_bound_s",
    "optimality_ratio",
    "differs",
    "error",
)
_KEYS = ("algorithm", "topology", "size_bytes", "network", "options")


def default_cache() -> str:
    """``$WAFERCOLL_CACHE`` or ``~/.cache/wafercoll``: where sweeps keep results."""
    return cache_root()


def read_grid(path: str | os.PathLike[str]) -> dict[str, Any]:
    r"""A grid from a TOML file; sizes may be strings with units (``"1MiB"``).

    Raises
    ------
    OSError
        When the file cannot be read.
    wafercoll.io.FormatError
        For a file that is not UTF-8 (as TOML requires), malformed TOML or
        sizes (a ``ValueError``; the message names the file).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "g.toml")
    >>> with open(path, "w") as f:
    ...     _ = f.write('algorithm = ["x"]\nsize_bytes = ["1KiB", 8]\n')
    >>> read_grid(path)["size_bytes"]
    [1024, 8]
    """
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    from .io import FormatError
    from .units import parse_size

    name = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            f"not UTF-8 text (byte {exc.start}: {exc.reason}); TOML files are "
            "UTF-8: save it as UTF-8",
            path=name,
            line=line,
        ) from None
    try:
        grid = tomllib.loads(text.removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise FormatError(str(exc), path=name) from None
    sizes = grid.get("size_bytes")
    if isinstance(sizes, list):
        try:
            grid["size_bytes"] = [
                parse_size(v, "size_bytes") if isinstance(v, str) else v for v in sizes
            ]
        except ValueError as exc:
            raise FormatError(str(exc), path=name) from None
    return grid


def _network(spec: Any, base: NetworkModel | None, size_bytes: int) -> NetworkModel:
    """A point's network model: given, a preset name, the machine's, or the default."""
    if isinstance(spec, NetworkModel):
        return spec
    if spec is not None and not isinstance(spec, str):
        raise TypeError(
            "network must be a NetworkModel or a preset name, got "
            f"{type(spec).__name__}"
        )
    return machines.network_model(spec, base=base, size_bytes=size_bytes)


def _points(grid: Any) -> list[dict[str, Any]]:
    """The grid as a list of complete point dicts (checked)."""
    if isinstance(grid, Mapping):
        unknown = set(grid) - set(_KEYS)
        if unknown:
            raise ValueError(
                f"unknown grid key {sorted(unknown)[0]!r}; keys: {', '.join(_KEYS)}"
            )
        for key in ("algorithm", "topology", "size_bytes"):
            if key not in grid:
                raise ValueError(f"the grid needs {key!r}")
        axes = {}
        for k in _KEYS:
            v = grid.get(k, [None] if k != "options" else [{}])
            if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Sequence):
                v = [v]
            axes[k] = list(v)
        pts = [
            dict(zip(_KEYS, combo, strict=True))
            for combo in itertools.product(*axes.values())
        ]
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        pts = []
        for i, p in enumerate(grid):
            if not isinstance(p, Mapping):
                raise TypeError(f"grid[{i}] must be a dict, got {type(p).__name__}")
            unknown = set(p) - set(_KEYS)
            if unknown:
                raise ValueError(f"grid[{i}]: unknown key {sorted(unknown)[0]!r}")
            pts.append({"network": None, "options": {}, **p})
    else:
        raise TypeError(
            "grid must be a dict of lists or a list of dicts, got "
            f"{type(grid).__name__}"
        )
    if not pts:
        raise ValueError("the grid is empty")
    for p in pts:
        if p["options"] is None:
            p["options"] = {}
        if not isinstance(p["options"], Mapping):
            raise TypeError(
                f"options must be a dict, got {type(p['options']).__name__}"
            )
    return pts


def _resolve(point: dict[str, Any]) -> tuple[Any, ...]:
    """A point as the hashable, picklable arguments of :func:`_run_point`."""
    from ._util import as_int

    size = as_int(point["size_bytes"], "size_bytes", 1)
    topo, preset = machines.resolve(point["topology"], size_bytes=size)
    net = _network(point["network"], preset, size)
    options = tuple(sorted(dict(point["options"]).items()))
    return (str(point["algorithm"]), topo, size, net, options)


def _run_point(
    algorithm: str,
    topology: Topology,
    size_bytes: int,
    network: NetworkModel,
    options: tuple[tuple[str, Any], ...],
) -> dict[str, Any]:
    """Build, verify, simulate and bound one point (its row of the table)."""
    from .algorithms import algorithm_info, build
    from .analysis import verify
    from .bounds import optimality_ratio, result_bound
    from .simulate import simulate

    row: dict[str, Any] = {
        "algorithm": algorithm,
        "topology": topology.name,
        "size_bytes": size_bytes,
        "network": network.name,
        "options": ", ".join(f"{k}={v!r}" for k, v in options),
        "status": "ok",
        "transfers": None,
        "time_s": None,
        "bandwidth_Bps": None,
        "busbw_Bps": None,
        "link_utilization": None,
        "lower_bound_s": None,
        "optimality_ratio": None,
        "differs": "",
        "error": "",
    }
    try:
        kw = {**algorithm_info(algorithm).network_options(network), **dict(options)}
        s = build(algorithm, size_bytes=size_bytes, topology=topology, **kw)
        verify(s)
        r = simulate(s, topology, network)
    except (ValueError, TypeError) as exc:
        row["status"] = "not applicable"
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    except Exception as exc:  # noqa: BLE001 - a verification failure, say
        row["status"] = "failed"
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row
    bound = result_bound(r)
    row.update(
        transfers=s.num_transfers,
        time_s=r.time_s,
        bandwidth_Bps=size_bytes / r.time_s if r.time_s > 0 else None,
        busbw_Bps=r.busbw_Bps,
        link_utilization=r.link_utilization,
        lower_bound_s=None if bound is None else bound.time_s,
        optimality_ratio=None if bound is None else optimality_ratio(r, bound),
        # Schedules of one collective may compute different things (other
        # owners, fewer participants): say how, beside the numbers.
        differs=s.differs_from_standard(topology.default_ranks),
    )
    return row


def sweep(
    grid: Any,
    *,
    jobs: int | None = None,
    scheduler: Any = None,
    cache: str | os.PathLike[str] | None | bool = True,
    progress: bool = True,
) -> Any:
    """Run every point of a grid; a pandas DataFrame, one row per point.

    Parameters
    ----------
    grid : dict of lists, or list of dicts
        The points (module docstring).
    jobs : int, optional
        Local worker processes (default: one per core; 1 runs in this
        process). Ignored with ``scheduler``.
    scheduler : str or distributed.Client, optional
        Run the points on Dask: a scheduler address (``"tcp://host:8786"``,
        reached within :data:`SCHEDULER_TIMEOUT_S`) or a client (e.g. of a
        ``distributed.LocalCluster``).
    cache : path, True, False or None
        Where finished points are kept (``True``: :func:`default_cache`;
        ``False``/``None``: no cache). The directory is created if needed
        and must be writable.
    progress : bool
        A tqdm progress bar (on stderr).

    Returns
    -------
    pandas.DataFrame
        :data:`COLUMNS`, in grid order; ``differs`` says how a schedule's
        collective differs from the standard one on the machine (other
        owners, fewer participants: :meth:`wafercoll.Schedule.differs_from_standard`),
        empty when it computes the standard collective. ``df.attrs["computed"]`` and
        ``df.attrs["cached"]`` count the points computed now and read from
        the cache.

    Raises
    ------
    ValueError, TypeError
        For a malformed grid (the message names the key), an unknown
        topology spec or network preset, or a scheduler that is neither an
        address nor a client.
    CacheError
        When the cache directory cannot be created or written (an
        ``OSError`` naming it), before anything is computed.
    SchedulerError
        When the scheduler's address cannot be reached (a
        ``ConnectionError`` naming it).
    WorkerLostError
        When a worker process dies (killed, out of memory); the message
        names the cause and the points that did not finish. The finished
        ones are in the cache.
    KeyboardInterrupt
        On Ctrl-C, once the workers are stopped.

    Examples
    --------
    Two algorithms on a ring of 8 at two sizes, on one process without a
    cache; the bidirectional ring takes half the unidirectional one's time:

    >>> import wafercoll as wc
    >>> df = wc.sweep({"algorithm": ["generic_ring_allreduce",
    ...                              "torus_ring_bidir_allreduce"],
    ...                "topology": ["ring:8"], "size_bytes": [1 << 16, 1 << 20]},
    ...               jobs=1, cache=None, progress=False)
    >>> len(df)
    4
    >>> t = df[df["size_bytes"] == 1 << 20].set_index("algorithm")["time_s"]
    >>> float(round(t["generic_ring_allreduce"] / t["torus_ring_bidir_allreduce"], 6))
    2.0
    """
    import pandas as pd

    _check_scheduler(scheduler)
    points = _points(grid)
    args = [_resolve(p) for p in points]
    fn: Any = _run_point
    rows: list[Any] = [None] * len(args)
    cache_dir = None
    if cache is True:
        cache = default_cache()
    if cache:
        cache_dir = os.fspath(cache)
        fn = _open_cache(cache_dir).cache(_run_point)
        for i, a in enumerate(args):
            rows[i] = _stored_row(fn, a)
    todo = [i for i, r in enumerate(rows) if r is None]
    client, own = None, False
    if scheduler is not None and todo:
        client, own = _client(scheduler)
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="sweep", unit="point", file=sys.stderr)
    try:
        if not todo:
            pass
        elif client is not None:
            _run_dask(client, fn, args, todo, rows, bar, points)
        else:
            workers = (os.cpu_count() or 1) if jobs is None else int(jobs)
            if workers < 1:
                raise ValueError(f"jobs must be >= 1, got {jobs}")
            if workers == 1 or len(todo) == 1:
                for i in todo:
                    rows[i] = fn(*args[i])
                    if bar is not None:
                        bar.update()
            else:
                _run_pool(workers, fn, args, todo, rows, bar, points, cache_dir)
    finally:
        if bar is not None:
            bar.close()
        if own:
            client.close()
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs["computed"] = len(todo)
    df.attrs["cached"] = len(args) - len(todo)
    return df


def _open_cache(path: str) -> Any:
    """A ``joblib.Memory`` in ``path``, checked to be a writable directory."""
    import joblib

    def refuse(problem: str) -> CacheError:
        hint = "give a writable directory (cache=..., --cache DIR) or none (--no-cache)"
        if path == default_cache():
            hint += "; the default comes from $WAFERCOLL_CACHE or ~/.cache/wafercoll"
        return CacheError(f"the sweep cache {path} {problem}; {hint}", path)

    if os.path.exists(path) and not os.path.isdir(path):
        raise refuse("is a file, not a directory")
    store = os.path.join(path, "joblib")
    try:
        os.makedirs(store, exist_ok=True)
    except OSError as exc:
        what = "written" if os.path.isdir(path) else "created"
        raise refuse(f"cannot be {what} ({exc.strerror or exc})") from None
    try:
        fd, probe = tempfile.mkstemp(dir=store, prefix=".write-test-")
        os.close(fd)
        os.remove(probe)
    except OSError as exc:
        raise refuse(f"cannot be written ({exc.strerror or exc})") from None
    return joblib.Memory(path, verbose=0)


def _stored_row(fn: Any, a: tuple[Any, ...]) -> dict[str, Any] | None:
    """A point's row from the cache; None if absent or unreadable (then removed).

    joblib would print the loading error's traceback and compute the point
    again unseen; here the entry is dropped quietly and the point is computed
    like any missing one, so it is counted as computed.
    """
    ref = None
    row: Any = None
    try:
        if not fn.check_call_in_cache(*a):
            return None
        ref = fn.call_and_shelve(*a)  # in the cache: a reference, nothing computed
        row = ref.get()
    except Exception:  # noqa: BLE001 - truncated, unpicklable: any unreadable entry
        row = None
    if isinstance(row, dict) and set(COLUMNS) <= set(row):
        return row
    if ref is not None:
        with contextlib.suppress(Exception):
            ref.clear()
    return None


def _describe(a: tuple[Any, ...]) -> str:
    """A point in words: ``generic_ring_allreduce on ring(8), 1024 B, default``."""
    algorithm, topo, size, net, options = a
    opts = "".join(f", {k}={v!r}" for k, v in options)
    return f"{algorithm} on {topo.name}, {size} B, {net.name}{opts}"


def _unfinished(
    rows: list[Any], args: list[Any], points: list[dict[str, Any]]
) -> tuple[str, list[dict[str, Any]]]:
    """The points without a row: ``"3 of 8 points did not finish (...)"`` and them."""
    left = [i for i, r in enumerate(rows) if r is None]
    shown = "; ".join(_describe(args[i]) for i in left[:3])
    more = f"; and {len(left) - 3} more" if len(left) > 3 else ""
    text = f"{len(left)} of {len(rows)} points did not finish ({shown}{more})"
    return text, [points[i] for i in left]


def _again(cache_dir: str | None) -> str:
    if cache_dir:
        return (
            f"the finished points are in the cache {cache_dir}: run the sweep "
            "again to compute only the others"
        )
    return "run it again (with a cache, the finished points would be kept)"


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent, which stops them all at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_pool(
    workers: int,
    fn: Any,
    args: list[Any],
    todo: list[int],
    rows: list[Any],
    bar: Any,
    points: list[dict[str, Any]],
    cache_dir: str | None,
) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        min(workers, len(todo)), mp_context=ctx, initializer=_ignore_sigint
    )
    procs: dict[int, Any] = {}
    try:
        futures = {pool.submit(fn, *args[i]): i for i in todo}
        procs.update(getattr(pool, "_processes", None) or {})
        for fut in as_completed(futures):
            try:
                rows[futures[fut]] = fut.result()
            except BrokenProcessPool:
                raise _lost_worker(procs, rows, args, points, cache_dir) from None
            if bar is not None:
                bar.update()
    except BaseException:  # Ctrl-C, a lost worker: stop the others at once
        procs.update(getattr(pool, "_processes", None) or {})
        _stop_pool(pool, list(procs.values()), cache_dir)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _lost_worker(
    procs: dict[int, Any],
    rows: list[Any],
    args: list[Any],
    points: list[dict[str, Any]],
    cache_dir: str | None,
) -> WorkerLostError:
    """The error of a pool whose worker died: who, how, and what is missing."""
    causes = []
    for pid, proc in procs.items():
        code = _exit_code(proc)
        # The pool stops the remaining workers itself with SIGTERM.
        if code not in (None, 0, -signal.SIGTERM):
            causes.append(f"pid {pid} {exit_text(code)}")
    cause = ", ".join(causes) or "cause unknown"
    text, left = _unfinished(rows, args, points)
    return WorkerLostError(
        f"a sweep worker process died ({cause}); {text}; {_again(cache_dir)}", left
    )


def _exit_code(proc: Any, wait: float = 3.0) -> int | None:
    """A pool worker's exit status, or None if it still runs after ``wait`` s.

    The pool's own manager thread also waits for its workers: when it reaps
    a dead one first, our ``waitpid`` finds no child and ``exitcode`` stays
    None until that thread stores the status. So poll until it appears.
    """
    deadline = time.monotonic() + wait
    proc.join(min(wait, 1.0))
    while proc.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.exitcode


def _stop_pool(pool: Any, procs: list[Any], cache_dir: str | None) -> None:
    """Stop a process pool's workers now, and drop their half-written cache files.

    A shutdown without waiting drops the pool's reference to its manager
    thread, so the later ``shutdown(wait=True)`` cannot join it; the thread
    would then close its wake-up pipe while the interpreter's exit handler
    (``concurrent.futures.process._python_exit``) writes to it, which prints
    an ``OSError`` traceback after Ctrl-C (Python 3.11). So the thread is
    joined here, once the workers are gone.
    """
    manager = getattr(pool, "_executor_manager_thread", None)
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
    else:
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            with contextlib.suppress(Exception):
                proc.terminate()
    for proc in procs:
        proc.join(2.0)
        if proc.exitcode is None:
            proc.kill()
            proc.join()
    if manager is not None:
        manager.join(5.0)
    if cache_dir:
        _drop_partial_writes(cache_dir, [p.pid for p in procs if p.pid is not None])


def _drop_partial_writes(cache_dir: str, pids: list[int]) -> None:
    """Remove joblib's temporaries (``<file>.<uuid>-<pid>-<thread>``) of ``pids``.

    joblib writes each file of an entry to such a temporary and renames it
    into place; a worker stopped mid-write leaves the temporary behind.
    """
    store = os.path.join(glob.escape(cache_dir), "joblib", "**", "*")
    wanted = {str(p) for p in pids}
    for path in glob.glob(store, recursive=True):
        m = re.search(r"\.[0-9a-f]{32}-(\d+)-\d+$", path)
        if m and m.group(1) in wanted:
            with contextlib.suppress(OSError):
                os.remove(path)


def _check_scheduler(scheduler: Any) -> None:
    """Refuse a scheduler that is neither an address nor a Dask client."""
    if scheduler is None:
        return
    if isinstance(scheduler, str):
        if not scheduler.strip():
            raise ValueError(
                "scheduler must be a Dask scheduler address such as "
                "tcp://host:8786 (or a distributed.Client), got ''"
            )
        _address(scheduler)
        return
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover - depends on the environment
        Client = None  # noqa: N806
    if Client is None or not isinstance(scheduler, Client):
        raise TypeError(
            "scheduler must be an address (tcp://host:8786) or a "
            f"distributed.Client, got {type(scheduler).__name__}"
        )


def _address(address: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a scheduler address (host and port for TCP)."""
    try:
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:  # pragma: no cover - depends on the environment
        return "", "", None
    try:
        scheme, location = parse_address(address, strict=False)
        if scheme not in ("tcp", "tls"):
            return scheme, location, None
        host, port = parse_host_port(location, _DASK_PORT)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"scheduler {address!r} is not an address: {exc}") from None
    if not host:
        raise ValueError(f"scheduler {address!r} is not an address: no host")
    return scheme, host, int(port)


def _connect(address: str) -> Any:
    """A Dask client of the scheduler at ``address``, or :class:`SchedulerError`."""
    import socket

    from distributed import Client

    hint = "is a Dask scheduler running there (dask scheduler)?"
    t = SCHEDULER_TIMEOUT_S
    scheme, host, port = _address(address)
    if port is not None:  # a quick first check: is anything listening?
        try:
            with socket.create_connection((host, port), timeout=t):
                pass
        except OSError as exc:
            why = exc.strerror or str(exc) or type(exc).__name__
            if isinstance(exc, TimeoutError):
                why = f"no answer within {t:g} s"
            raise SchedulerError(
                f"cannot reach the Dask scheduler at {address} ({why}); {hint}",
                address,
            ) from None
    failure = _handshake(address, t)
    if failure is None:
        try:
            return Client(address, timeout=t)
        except Exception as exc:  # noqa: BLE001 - whatever answered is not a scheduler
            failure = exc
    if isinstance(failure, TimeoutError):
        why = f"it accepted the connection but did not answer within {t:g} s"
    else:
        why = f"{type(failure).__name__}: {failure}"
        why = why if len(why) <= 200 else why[:200] + "..."
    raise SchedulerError(
        f"no Dask scheduler answered at {address} ({why}); {hint}", address
    ) from None


def _handshake(address: str, timeout: float) -> BaseException | None:
    """Dask's connection handshake with ``address``, bounded by ``timeout``.

    ``distributed.Client(timeout=...)`` bounds the connection but not the
    handshake after it: a server that accepts and stays silent would hold it
    forever. Here the handshake runs on an event loop of its own, on a
    thread (the caller may be inside an event loop, as in Jupyter), under
    ``asyncio.wait_for``. Returns what went wrong, or None.
    """
    import asyncio
    import threading

    from distributed.comm import connect

    outcome: list[BaseException | None] = []

    async def attempt() -> None:
        comm = await connect(address, timeout=timeout)
        await comm.close()

    def run() -> None:
        try:
            asyncio.run(asyncio.wait_for(attempt(), timeout))
            outcome.append(None)
        except asyncio.TimeoutError:
            outcome.append(TimeoutError())
        except BaseException as exc:  # noqa: BLE001 - reported to the caller
            outcome.append(exc)

    probe = threading.Thread(target=run, name="dask-handshake", daemon=True)
    probe.start()
    probe.join(timeout + 1.0)
    return outcome[0] if outcome else TimeoutError()


def _client(scheduler: Any) -> tuple[Any, bool]:
    """The Dask client of ``scheduler`` and whether it is ours to close."""
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "sweep(scheduler=...) needs Dask distributed: "
            "pip install 'dask[distributed]'"
        ) from exc
    if isinstance(scheduler, Client):
        return scheduler, False
    return _connect(scheduler), True


def _run_dask(
    client: Any,
    fn: Any,
    args: list[Any],
    todo: list[int],
    rows: list[Any],
    bar: Any,
    points: list[dict[str, Any]],
) -> None:
    from distributed import KilledWorker, as_completed

    futures: dict[Any, int] = {}
    try:
        futures = {client.submit(fn, *args[i], pure=False): i for i in todo}
        for fut in as_completed(list(futures)):
            try:
                rows[futures[fut]] = fut.result()
            except KilledWorker as exc:
                i = futures[fut]
                text, left = _unfinished(rows, args, points)
                raise WorkerLostError(
                    f"the Dask workers computing {_describe(args[i])} died ({exc}); "
                    f"{text}",
                    left,
                ) from None
            if bar is not None:
                bar.update()
    except BaseException:  # Ctrl-C, a lost worker: cancel what is left
        with contextlib.suppress(Exception):
            client.cancel(list(futures))
        raise
