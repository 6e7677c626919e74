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

import itertools
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from . import machines
from .network import NetworkModel
from .topology import Topology

__all__ = ["COLUMNS", "default_cache", "read_grid", "sweep"]

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
    "link_utilization",
    "lower_bound_s",
    "optimality_ratio",
    "differs",
    "error",
)
_KEYS = ("algorithm", "topology", "size_bytes", "network", "options")


def default_cache() -> str:
    """``$WAFERCOLL_CACHE`` or ``~/.cache/wafercoll``: where sweeps keep results."""
    return os.environ.get(
        "WAFERCOLL_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "wafercoll")
    )


def read_grid(path: str | os.PathLike[str]) -> dict[str, Any]:
    r"""A grid from a TOML file; sizes may be strings with units (``"1MiB"``).

    Raises
    ------
    OSError
        When the file cannot be read.
    ValueError
        For malformed TOML or sizes (the message names the file).

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
    from .units import parse_size

    with open(path, "rb") as f:
        try:
            grid = tomllib.load(f)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None
    sizes = grid.get("size_bytes")
    if isinstance(sizes, list):
        try:
            grid["size_bytes"] = [
                parse_size(v, "size_bytes") if isinstance(v, str) else v for v in sizes
            ]
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None
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
    from .algorithms import build
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
        "link_utilization": None,
        "lower_bound_s": None,
        "optimality_ratio": None,
        "differs": "",
        "error": "",
    }
    try:
        s = build(algorithm, size_bytes=size_bytes, topology=topology, **dict(options))
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
        link_utilization=r.link_utilization,
        lower_bound_s=bound.time_s,
        optimality_ratio=optimality_ratio(r, bound),
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
        Run the points on Dask: a scheduler address (``"tcp://host:8786"``)
        or a client (e.g. of a ``distributed.LocalCluster``).
    cache : path, True, False or None
        Where finished points are kept (``True``: :func:`default_cache`;
        ``False``/``None``: no cache).
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
        topology spec or network preset.

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

    points = _points(grid)
    args = [_resolve(p) for p in points]
    fn: Any = _run_point
    cached_flags = [False] * len(args)
    if cache is True:
        cache = default_cache()
    if cache:
        import joblib

        memory = joblib.Memory(os.fspath(cache), verbose=0)
        fn = memory.cache(_run_point)
        cached_flags = [fn.check_call_in_cache(*a) for a in args]
    todo = [i for i, c in enumerate(cached_flags) if not c]
    rows: list[Any] = [None] * len(args)
    for i, c in enumerate(cached_flags):
        if c:
            rows[i] = fn(*args[i])
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="sweep", unit="point", file=sys.stderr)
    try:
        if not todo:
            pass
        elif scheduler is not None:
            _run_dask(scheduler, fn, args, todo, rows, bar)
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
                _run_pool(workers, fn, args, todo, rows, bar)
    finally:
        if bar is not None:
            bar.close()
    df = pd.DataFrame(rows, columns=list(COLUMNS))
    df.attrs["computed"] = len(todo)
    df.attrs["cached"] = len(args) - len(todo)
    return df


def _run_pool(
    workers: int, fn: Any, args: list[Any], todo: list[int], rows: list[Any], bar: Any
) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(workers, len(todo)), mp_context=ctx) as pool:
        futures = {pool.submit(fn, *args[i]): i for i in todo}
        for fut in as_completed(futures):
            rows[futures[fut]] = fut.result()
            if bar is not None:
                bar.update()


def _run_dask(
    scheduler: Any, fn: Any, args: list[Any], todo: list[int], rows: list[Any], bar: Any
) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "sweep(scheduler=...) needs Dask distributed: "
            "pip install 'dask[distributed]'"
        ) from exc
    own = not isinstance(scheduler, Client)
    client = Client(scheduler) if own else scheduler
    try:
        futures = {client.submit(fn, *args[i], pure=False): i for i in todo}
        for fut in as_completed(list(futures)):
            rows[futures[fut]] = fut.result()
            if bar is not None:
                bar.update()
    finally:
        if own:
            client.close()
