"""Analytic costs and step counts of RD, SMP, NAP and dissemination (paper 001).

Cost equations (recovered details §1.7b, the paper's equations (4)-(6)
written with the max-rate model ``T_mr(k, s) = alpha + k s / min(R_N, k R_b)``;
``T_l(s) = alpha_l + beta_l s`` is the on-node cost):

* RD:  ``log2(ppn) T_l(s) + log2(n) T_mr(ppn, s) + log2(p) gamma s``
* SMP: ``2 log2(ppn) T_l(s) + log2(n) T_mr(1, s) + log2(p) gamma s``
* NAP: ``(k+1) log2(ppn) T_l(s) + sum_i T_mr(g_i - 1, s)
  + ((k+1) log2(ppn) + k) gamma s`` with the step sizes ``g_i`` of
  :func:`wafercoll.cluster.nap_plan` (``k`` of them).

``form="script"`` gives what the authors' model script computes instead
(§1.7a): NAP with ``log2(p)`` on-node steps, ``ceil(log2 n / log2 ppn)``
network steps each charged for ``ppn`` senders, and
``(log2 p + log2 ppn) gamma s``; RD and SMP as above. The locality-aware
dissemination (§1.6) is charged like NAP with ``ceil(log_{ppn+1} M)``
network steps of ``a_i`` senders (**[INFERRED]**: no equation is published).

:func:`step_counts` gives the intra-/inter-node steps, senders and
reductions of the schedules that :mod:`wafercoll.cluster.builders` makes,
in closed form; the tests compare them with the schedules themselves.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .._util import as_int
from .builders import nap_plan
from .model import BLUE_WATERS, ClusterParams

__all__ = [
    "ALGORITHMS",
    "allreduce_time",
    "compare_bench",
    "crossover_size",
    "plot_bench",
    "read_bench",
    "step_counts",
]

ALGORITHMS = ("rd", "smp", "nap", "dissemination")


def _check(algorithm: str, nodes: int, ppn: int) -> tuple[str, int, int]:
    # short names ("nap") or registry names (cluster_nap_allreduce), whose
    # record says which algorithm they are
    from ..algorithms import lookup

    name = str(algorithm)
    info = lookup(name)
    if info is not None and info.family == "cluster":
        name = info.algorithm
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    n = as_int(nodes, "nodes", 1, 1 << 22)
    q = as_int(ppn, "ppn", 1, 1 << 22)
    return name, n, q


def _rd_steps(q: int) -> int:
    """Steps of recursive doubling with the authors' fold on ``q`` ranks."""
    if q <= 1:
        return 0
    return (q.bit_length() - 1) + (2 if q & (q - 1) else 0)


def _rd_reductions(q: int) -> int:
    """Most reducing receives of one rank in that recursive doubling."""
    if q <= 1:
        return 0
    return (q.bit_length() - 1) + (1 if q & (q - 1) else 0)


def _spread_steps(c: int, q: int) -> int:
    k, h = 0, max(c, 1)
    while h < q:
        h *= 2
        k += 1
    return k


def _dissemination_active(n: int, q: int) -> tuple[list[int], int]:
    P = 1
    while P * (q + 1) <= n:
        P *= q + 1
    M = (n // P) * P
    active, S = [], 1
    while S < M:
        active.append(min(q, -(-M // S) - 1))
        S *= q + 1
    return active, n - M


@functools.lru_cache(maxsize=256)
def _levels_cached(n: int, q: int, steps: tuple[int, ...] | None) -> tuple[int, ...]:
    plan = nap_plan(n, q, steps)
    return tuple(max(len(sizes) for _, sizes in level) for level in plan)


def _levels(n: int, q: int, steps: Any) -> list[int]:
    """The largest block count ``c_i`` of every NAP inter-node step."""
    key = None if steps is None else tuple(steps)
    return list(_levels_cached(n, q, key))


def step_counts(
    algorithm: str, nodes: int, ppn: int, steps: Any = None
) -> dict[str, Any]:
    """Steps, senders and reductions of a builder's schedule, in closed form.

    Parameters
    ----------
    algorithm : {"rd", "smp", "nap", "dissemination"}
        Also accepted with the builder names (``nap_allreduce``, ...).
    nodes, ppn : int
        Node count and processes per node (SMP rank order).
    steps : sequence of int, optional
        NAP's explicit step sizes.

    Returns
    -------
    dict
        ``steps`` (rounds of the schedule), ``inter_steps`` (rounds with
        off-node messages), ``intra_steps`` (the others),
        ``senders_per_node`` (processes of a node sending off-node in each
        inter-node round), ``reductions`` (most reducing receives of one
        rank) and ``reductions_paper`` (the count of the paper's table,
        recovered details §1.7). For RD with ``p`` or ``ppn`` not a power of
        two the intra/inter split is not given (``None``). NAP counts hold
        where every inter-node step combines groups of one block count
        (e.g. ``n = ppn**a * r``, ``r <= ppn``).

    Examples
    --------
    >>> from wafercoll import cluster
    >>> cluster.step_counts("nap", 16, 4)["steps"]
    8
    """
    name, n, q = _check(algorithm, nodes, ppn)
    p = n * q
    lg = math.log2
    if name == "rd" or (name == "nap" and q == 1 and n > 1):
        pow2 = p & (p - 1) == 0 and q & (q - 1) == 0
        inter = int(round(lg(n))) if pow2 else None
        return {
            "steps": _rd_steps(p),
            "inter_steps": inter,
            "intra_steps": None if inter is None else _rd_steps(p) - inter,
            "senders_per_node": [q] * inter if inter is not None else None,
            "reductions": _rd_reductions(p),
            "reductions_paper": lg(p),
        }
    if name == "smp":
        up = _spread_steps(1, q)  # ceil(log2 ppn)
        inter = _rd_steps(n)
        return {
            "steps": 2 * up + inter,
            "inter_steps": inter,
            "intra_steps": 2 * up,
            "senders_per_node": [1] * inter,
            "reductions": up + _rd_reductions(n),
            "reductions_paper": lg(p),
        }
    if name == "nap":
        cs = _levels(n, q, steps)
        k = len(cs)
        intra = _rd_steps(q) + sum(_rd_steps(c) + _spread_steps(c, q) for c in cs)
        return {
            "steps": intra + k,
            "inter_steps": k,
            "intra_steps": intra,
            "senders_per_node": [c - 1 for c in cs],
            "reductions": _rd_reductions(q) + sum(_rd_reductions(c) for c in cs),
            "reductions_paper": (k + 1) * lg(q) + k if q > 1 else lg(p),
        }
    active, extra = _dissemination_active(n, q)
    k = len(active) + (2 if extra else 0)
    intra = _rd_steps(q) + sum(_rd_steps(a) + _spread_steps(a, q) for a in active)
    return {
        "steps": intra + k,
        "inter_steps": k,
        "intra_steps": intra,
        "senders_per_node": ([q] if extra else []) + active + ([q] if extra else []),
        "reductions": _rd_reductions(q)
        + sum(_rd_reductions(a) + 1 for a in active)
        + (1 if extra else 0),
        "reductions_paper": None,
    }


def allreduce_time(
    algorithm: str,
    nodes: int,
    ppn: int,
    size_bytes: Any,
    params: ClusterParams = BLUE_WATERS,
    *,
    network: str = "max_rate",
    form: str = "equations",
    steps: Any = None,
    sockets: int | None = None,
) -> Any:
    """Modelled time of an allreduce of ``size_bytes`` per process.

    Parameters
    ----------
    algorithm : {"rd", "smp", "nap", "dissemination"}
    nodes, ppn : int
        ``p = nodes * ppn`` processes.
    size_bytes : float or array_like
        Vector size ``s`` in bytes; the protocol regime follows ``s``.
    params : ClusterParams
        Default :data:`~wafercoll.cluster.model.BLUE_WATERS`.
    network : {"max_rate", "postal"}
        Off-node cost model (``postal``: every sender alone).
    form : {"equations", "script"}
        The equations (4)-(6) with the max-rate model, or the authors' model
        script (see the module docstring).
    steps : sequence of int, optional
        NAP's step sizes (default: :func:`~wafercoll.cluster.nap_plan`).
    sockets : int, optional
        Sockets per node (dividing ``ppn``), for the socket level of the
        equations: a node's ranks fill its sockets in order, ``ppn /
        sockets`` each, and every on-node exchange phase of ``log2(ppn)``
        recursive-doubling steps splits into ``log2(ppn / sockets)`` steps
        within a socket (the ``socket`` class) and ``log2(sockets)`` across
        sockets (the ``node`` class), the partners at distance ``2^i`` in
        rank order sharing a socket while ``2^i < ppn / sockets``. ``None``
        (default): every on-node message is of the ``node`` class, as in the
        paper's equations. Only with ``form="equations"``.

    Returns
    -------
    float or numpy.ndarray
        Seconds, with the shape of ``size_bytes``.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> t = cluster.allreduce_time("nap", 64, 16, 8)
    >>> f"{t * 1e6:.1f} us"
    '18.3 us'
    """
    name, n, q = _check(algorithm, nodes, ppn)
    if form not in ("equations", "script"):
        raise ValueError(f"form must be 'equations' or 'script', got {form!r}")
    if not isinstance(params, ClusterParams):
        raise TypeError("params must be a wafercoll.cluster.model.ClusterParams")
    if sockets is not None:
        if form != "equations":
            raise ValueError("sockets applies to form='equations' only")
        k_s = as_int(sockets, "sockets", 1, q)
        if q % k_s:
            raise ValueError(f"sockets must divide ppn = {q}, got {k_s}")
    sizes = np.asarray(size_bytes, dtype=np.float64)
    if (sizes < 0).any() or not np.isfinite(sizes).all():
        raise ValueError("size_bytes must be finite and >= 0")
    lg = math.log2
    p = n * q

    def one(s: float) -> float:
        tl = params.local_time(s)
        tg = params.network_time  # (s, senders, model)
        gs = params.gamma_s_per_byte * s
        # One on-node exchange phase (log2(ppn) steps), by locality class.
        if sockets is None:
            intra = lg(q) * tl
        else:
            intra = lg(q // k_s) * params.local_time(s, "socket") + lg(k_s) * tl
        if name == "rd":
            return intra + lg(n) * tg(s, q, network) + lg(p) * gs
        if name == "smp":
            return 2 * intra + lg(n) * tg(s, 1, network) + lg(p) * gs
        if name == "nap" and form == "script":
            k = math.ceil(lg(n) / lg(q) - 1e-12) if q > 1 and n > 1 else 0
            return lg(p) * tl + k * tg(s, q, network) + (lg(p) + lg(q)) * gs
        if name == "nap":
            if q == 1:
                return lg(n) * tg(s, 1, network) + lg(p) * gs
            cs = _levels(n, q, steps)
            k = len(cs)
            net = sum(tg(s, c - 1, network) for c in cs)
            return (k + 1) * intra + net + ((k + 1) * lg(q) + k) * gs
        active, extra = _dissemination_active(n, q)
        k = len(active)
        net = sum(tg(s, a, network) for a in active)
        if extra:
            net += 2 * tg(s, q, network)
        return (k + 1) * intra + net + ((k + 1) * lg(q) + k) * gs

    out = np.vectorize(one, otypes=[np.float64])(sizes)
    return float(out) if out.ndim == 0 else out


def crossover_size(
    nodes: int,
    ppn: int,
    sizes: Any,
    params: ClusterParams = BLUE_WATERS,
    *,
    fast: str = "smp",
    slow: str = "nap",
    network: str = "max_rate",
    form: str = "equations",
    sockets: int | None = None,
) -> float | None:
    """The smallest of ``sizes`` from which ``fast`` is modelled faster than ``slow``.

    Returns ``None`` when ``fast`` never wins on ``sizes``. The keywords are
    those of :func:`allreduce_time`.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> cluster.crossover_size(64, 16, [8, 512, 8192, 65536])
    65536.0
    """
    s = np.sort(np.asarray(sizes, dtype=np.float64).ravel())
    kw = {"network": network, "form": form, "sockets": sockets}
    a = allreduce_time(fast, nodes, ppn, s, params, **kw)
    b = allreduce_time(slow, nodes, ppn, s, params, **kw)
    wins = np.flatnonzero(np.asarray(a) < np.asarray(b))
    return None if wins.size == 0 else float(s[wins[0]])


_BENCH_COLUMNS = ("algorithm", "ranks", "ppn", "size_bytes", "time_s")


def read_bench(path: Any) -> list[dict[str, Any]]:
    """Rows of a ``python -m wafercoll.mpi bench`` CSV (numbers parsed).

    Raises ``ValueError`` naming the file and the row for a malformed file.

    Examples
    --------
    >>> import os, tempfile
    >>> from wafercoll import cluster
    >>> path = os.path.join(tempfile.mkdtemp(), "bench.csv")
    >>> with open(path, "w") as f:
    ...     print("algorithm,ranks,ppn,size_bytes,time_s", file=f)
    ...     print("cluster_nap_allreduce,8,4,8,2.1e-05", file=f)
    >>> rows = cluster.read_bench(path)
    >>> rows[0]["algorithm"], rows[0]["time_s"]
    ('cluster_nap_allreduce', 2.1e-05)
    """
    import csv
    import os

    path = os.fspath(path)
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in _BENCH_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
        rows = []
        for n, r in enumerate(reader, start=1):
            try:
                rows.append(
                    {
                        **r,
                        "ranks": int(r["ranks"]),
                        "ppn": int(r["ppn"]),
                        "size_bytes": int(float(r["size_bytes"])),
                        "time_s": float(r["time_s"]),
                        "mpi_allreduce_s": float(r.get("mpi_allreduce_s") or "nan"),
                    }
                )
            except ValueError:
                raise ValueError(
                    f"{path}: row {n}: ranks, ppn and size_bytes must be integers "
                    "and time_s a number"
                ) from None
    return rows


def compare_bench(
    bench: Any,
    params: ClusterParams = BLUE_WATERS,
    *,
    network: str = "max_rate",
    form: str = "equations",
) -> dict[str, list[Any]]:
    """Measured allreduce times beside the model's, row by row.

    Parameters
    ----------
    bench : path or list of dict
        A ``python -m wafercoll.mpi bench`` CSV or its rows
        (:func:`read_bench`). Rows of algorithms without a cost equation
        (anything but RD, SMP, NAP and the dissemination) are skipped.
    params : ClusterParams
        For example :func:`wafercoll.cluster.model.fit_pingpong` of a
        ``python -m wafercoll.mpi pingpong`` run on the same machine.
    network, form
        As :func:`allreduce_time`.

    Returns
    -------
    dict of str to list
        Columns ``algorithm``, ``ranks``, ``ppn``, ``size_bytes``,
        ``measured_s``, ``mpi_allreduce_s``, ``model_s`` and
        ``measured_over_model``.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> rows = [{"algorithm": "cluster_nap_allreduce", "ranks": 8, "ppn": 4,
    ...          "size_bytes": 8, "time_s": 2.1e-05}]
    >>> cols = cluster.compare_bench(rows)
    >>> cols["algorithm"], f"{cols['model_s'][0] * 1e6:.1f} us"
    (['nap'], '7.4 us')
    """
    rows = read_bench(bench) if not isinstance(bench, list) else bench
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "algorithm",
            "ranks",
            "ppn",
            "size_bytes",
            "measured_s",
            "mpi_allreduce_s",
            "model_s",
            "measured_over_model",
        )
    }
    for r in rows:
        try:
            name, n, q = _check(r["algorithm"], r["ranks"] // r["ppn"], r["ppn"])
        except ValueError:
            continue
        if n * q != r["ranks"]:
            continue
        model = allreduce_time(
            name, n, q, r["size_bytes"], params, network=network, form=form
        )
        cols["algorithm"].append(name)
        cols["ranks"].append(r["ranks"])
        cols["ppn"].append(q)
        cols["size_bytes"].append(r["size_bytes"])
        cols["measured_s"].append(r["time_s"])
        cols["mpi_allreduce_s"].append(r.get("mpi_allreduce_s", math.nan))
        cols["model_s"].append(model)
        cols["measured_over_model"].append(
            r["time_s"] / model if model > 0 else math.nan
        )
    return cols


def plot_bench(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Model lines and measured points of :func:`compare_bench`, in µs.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> rows = [{"algorithm": "cluster_nap_allreduce", "ranks": 8, "ppn": 4,
    ...          "size_bytes": s, "time_s": 2e-05} for s in (8, 64)]
    >>> ax = cluster.plot_bench(cluster.compare_bench(rows))
    >>> len(ax.lines) > 0
    True
    """
    from ..palette import color, marker
    from ..plot import FIGSIZE, new_axes

    ax = new_axes(ax, figsize=FIGSIZE)
    alg = np.asarray(cols["algorithm"])
    x = np.asarray(cols["size_bytes"], dtype=float)
    for a in dict.fromkeys(cols["algorithm"]):
        sel = alg == a
        order = np.argsort(x[sel])
        xs = x[sel][order]
        c = color(a)
        model = 1e6 * np.asarray(cols["model_s"], float)[sel][order]
        meas = 1e6 * np.asarray(cols["measured_s"], float)[sel][order]
        ax.plot(xs, model, color=c, label=f"{a.upper()} (model)")
        ax.plot(
            xs,
            meas,
            ls="none",
            marker=marker(a),
            color=c,
            label=f"{a.upper()} (measured)",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("bytes per process")
    ax.set_ylabel("time (µs)")
    ax.set_title("Allreduce: measured against the fitted model", fontsize="medium")
    ax.legend(fontsize="small", ncols=2)
    ax.grid(True, alpha=0.3)
    return ax
