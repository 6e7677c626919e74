"""Experiments of paper 001 (node-aware allreduce on clusters: RD, SMP, NAP).

``node_aware_locality``: the modelled cost of one message by locality
(on-socket, on-node across sockets, off-node) against its size, with the
authors' measured ping-pong points (the paper's Fig. 5);
``node_aware_scale``: modelled cost against the process count (p = 2^7 ...
2^16, ppn 16, 8-byte reductions); ``node_aware_size``: against the vector
size (8 B ... 16 KiB at p = 32768). Both evaluate the equations (4)-(6) with
the max-rate model (:func:`wafercoll.cluster.costs.allreduce_time`, recovered
details §1.7-1.8) and the authors' model script (``form="script"``), under two
Blue Waters parameter sets:

* :data:`~wafercoll.cluster.model.BLUE_WATERS_MEASURED` (the default),
  fitted from the authors' ping-pong measurements by their own procedure:
  the set the paper's figures were drawn with (§1.7a);
* :data:`~wafercoll.cluster.model.BLUE_WATERS`, the "standard" network rows
  hard-coded in the authors' model file, shown beside it;

and simulate the builders' schedules on a cluster topology
(:func:`simulation_setup`, measured set). They report NAP's speedup and the
size from which SMP overtakes NAP.

The simulation (``sim_s``, :func:`simulation_setup`) charges a message
class by class: each process link has latency ``alpha_l / 2`` and rate
``R_b = 1 / beta`` of the network class, each NIC link ``(alpha - alpha_l) /
2`` and ``R_N``, so an on-node message costs ``alpha_l + beta s`` (the
network's ``beta``, not ``beta_l``), an off-node one ``alpha + s / min(R_b,
R_N)`` with ``k`` senders sharing the NIC as in the max-rate model; the
protocol regime is that of the vector size. ``socket_sim_s`` simulates with
the socket level (``cluster_machine(sockets=2)``): on-socket, cross-socket
and off-node messages each at their own class's start-up and rate.

The socket level: ``socket_model_s`` evaluates the equations with
``sockets=2`` (Blue Waters XE nodes hold two processors; 8 of the 16
processes on each), which splits every on-node exchange phase into
on-socket and cross-socket steps; the plots draw it dashed.
:func:`wafercoll.cluster.cluster_machine` takes ``sockets`` too (per-class
start-up costs in the simulation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cluster import cluster_machine, costs
from ..cluster.model import (
    BLUE_WATERS,
    BLUE_WATERS_MEASURED,
    LOCALITIES,
    ClusterParams,
    fit_blue_waters,
)
from . import Experiment, finding, new_axes, register_experiment
from .judges import AtLeast, Exact, Faster

__all__ = [
    "fastest_by_size",
    "run_locality",
    "run_scale",
    "run_size",
    "simulation_setup",
]

_NAP_FASTEST = "NAP's lead: the faster of RD and SMP over NAP"
#: Grid points per protocol regime of :func:`fastest_by_size` before bisection.
_CROSSING_GRID = 64


def fastest_by_size(
    nodes: int,
    ppn: int,
    params: ClusterParams,
    lo: int = 1,
    hi: int = 16 << 10,
    **kw: Any,
) -> list[tuple[int, str]]:
    """Where each of RD, SMP and NAP is modelled fastest, to the byte.

    Each protocol regime (the model's cost is continuous within one) is
    sampled at :data:`_CROSSING_GRID` sizes; every bracket where the fastest
    algorithm changes is halved down to one byte. Returns ``(first size,
    algorithm)`` per window, from ``lo`` to ``hi``; ``kw`` goes to
    :func:`wafercoll.cluster.costs.allreduce_time`.
    """
    from ..cluster.model import EAGER_MAX_BYTES, SHORT_MAX_BYTES

    def best(sizes: Any) -> np.ndarray:
        x = np.asarray(sizes, dtype=np.float64)
        t = np.vstack(
            [np.atleast_1d(costs.allreduce_time(a, nodes, ppn, x, params, **kw))
             for a in ALGOS]
        )  # fmt: skip
        return np.argmin(t, axis=0)

    edges = sorted({lo, hi + 1} | {e for e in (SHORT_MAX_BYTES, EAGER_MAX_BYTES)
                                     if lo < e <= hi})  # fmt: skip
    grid: list[int] = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        grid += sorted({int(v) for v in np.linspace(a, b - 1, _CROSSING_GRID)})
    grid = sorted(set(grid))
    w = best(grid)
    starts = [(grid[0], int(w[0]))]
    for i in np.flatnonzero(w[1:] != w[:-1]):
        left, right = grid[i], grid[i + 1]
        # Halve until adjacent. A window narrower than the grid's step inside
        # one regime would be missed: the tests compare with every byte.
        while right - left > 1:
            mid = (left + right) // 2
            if best([mid])[0] == w[i]:
                left = mid
            else:
                right = mid
        starts.append((right, int(w[i + 1])))
    out: list[tuple[int, str]] = []
    for size, k in starts:
        if not out or out[-1][1] != ALGOS[k]:
            out.append((size, ALGOS[k]))
    return out


PPN = 16
#: Sockets per Blue Waters XE node: two AMD Opteron 6276 processors (NCSA's
#: Blue Waters system description); the authors' on-node ping-pong data
#: separate on-socket and cross-socket pairs (bw_output/on_node). With ppn 16,
#: 8 processes per socket.
SOCKETS = 2
MEASURED = BLUE_WATERS_MEASURED
ALGOS = ("rd", "smp", "nap")
_BUILDERS = {
    "rd": "cluster_rd_allreduce",
    "smp": "cluster_smp_allreduce",
    "nap": "cluster_nap_allreduce",
}


def simulation_setup(
    nodes: int,
    ppn: int,
    size_bytes: float,
    params: ClusterParams = BLUE_WATERS_MEASURED,
    sockets: int | None = None,
) -> tuple[Any, Any]:
    """The cluster topology and network model that mimic ``params`` at a size.

    The machine entry ``blue_waters`` of :mod:`wafercoll.machines`
    (:func:`wafercoll.cluster.cluster_machine`); ``sockets`` adds the
    socket level.
    """
    return cluster_machine(nodes, ppn, size_bytes, params, sockets)


def _simulate(
    algo: str, nodes: int, ppn: int, size: int, sockets: int | None = None
) -> float:
    import wafercoll as wc

    topo, model = simulation_setup(nodes, ppn, size, MEASURED, sockets)
    s = wc.build(_BUILDERS[algo], nodes * ppn, size, ppn=ppn)
    return float(wc.simulate(s, topo, model).time_s)


def _rows(points: list[tuple[int, int]], sim_max_p: int) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "algorithm",
            "p",
            "nodes",
            "ppn",
            "size_bytes",
            "model_s",
            "script_s",
            "standard_model_s",
            "standard_script_s",
            "socket_model_s",
            "sim_s",
            "socket_sim_s",
        )
    }
    for p, size in points:
        n = p // PPN
        for a in ALGOS:
            cols["algorithm"].append(a)
            cols["p"].append(p)
            cols["nodes"].append(n)
            cols["ppn"].append(PPN)
            cols["size_bytes"].append(size)
            for prefix, params in (("", MEASURED), ("standard_", BLUE_WATERS)):
                for col, form in (("model_s", "equations"), ("script_s", "script")):
                    cols[prefix + col].append(
                        costs.allreduce_time(a, n, PPN, size, params, form=form)
                    )
            cols["socket_model_s"].append(
                costs.allreduce_time(a, n, PPN, size, MEASURED, sockets=SOCKETS)
            )
            cols["sim_s"].append(
                _simulate(a, n, PPN, size) if p <= sim_max_p else np.nan
            )
            cols["socket_sim_s"].append(
                _simulate(a, n, PPN, size, SOCKETS) if p <= sim_max_p else np.nan
            )
    return cols


def _get(cols: dict[str, list[Any]], algo: str, key: str, col: str) -> np.ndarray:
    a = np.asarray(cols["algorithm"])
    x = np.asarray(cols[key], dtype=float)
    v = np.asarray(cols[col], dtype=float)
    sel = a == algo
    order = np.argsort(x[sel])
    return v[sel][order]


def run_scale(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Cost against p at 8 bytes (the paper's model_coll_scale figure)."""
    exps = range(7, 13) if quick else range(7, 17)
    cols = _rows([(1 << e, 8) for e in exps], 1 << 12 if quick else 1 << 16)
    top = max(cols["p"])
    last = {
        col: {a: _get(cols, a, "p", col)[-1] for a in ALGOS}
        for col in (
            "model_s",
            "script_s",
            "standard_model_s",
            "socket_model_s",
            "sim_s",
            "socket_sim_s",
        )
    }

    def speedups(col: str) -> str:
        t = last[col]
        return f"{t['rd'] / t['nap']:.2f}x / {t['smp'] / t['nap']:.2f}x"

    def nap_lead(col: str) -> float:
        t = last[col]
        return float(min(t["rd"], t["smp"]) / t["nap"])

    paper = "NAP is fastest for small reductions at scale (Fig. 10)"
    sa = [P.classes["network"]["short"].alpha_s for P in (BLUE_WATERS, MEASURED)]
    fastest = Faster(why=_NAP_FASTEST)
    rows = [
        (
            "script",
            f"NAP speedup over RD / SMP at p = {top}, 8 B, as the figure was drawn",
            paper,
            "script_s",
            "the authors' model script (§1.7a) with Blue Waters fitted "
            "from their ping-pong files (blue_waters_measured)",
        ),
        (
            "equations",
            f"the same with equations (4)-(6), max-rate, p = {top}",
            paper,
            "model_s",
            "blue_waters_measured (§1.7b)",
        ),
        (
            "standard",
            f"the same with the hard-coded standard network set, p = {top}",
            paper,
            "standard_model_s",
            "network rows hard-coded in nodecomm_model.py (blue_waters, "
            "§1.8), which the figures did not use: their short-message alpha is "
            f"{sa[0]:.2g} s against the fitted {sa[1]:.2g} s",
        ),
        (
            "sockets",
            f"the same with the socket level ({SOCKETS} sockets of "
            f"{PPN // SOCKETS}), p = {top}",
            paper,
            "socket_model_s",
            "equations (4)-(6) with on-node steps split into on-socket "
            "and cross-socket ones (allreduce_time(sockets=2)); NAP's on-node "
            "share is the largest, so it gains most from cheap on-socket steps",
        ),
        (
            "simulated",
            f"NAP speedup over RD / SMP at p = {top}, 8 B (simulated)",
            paper + "; checked here by simulation",
            "sim_s",
            "packet-level simulation of the verified schedules, blue_waters_measured",
        ),
        (
            "simulated_sockets",
            f"the same simulated with the socket level ({SOCKETS} "
            f"sockets of {PPN // SOCKETS}), p = {top}",
            paper + "; checked here by simulation",
            "socket_sim_s",
            "cluster_machine(sockets=2): each locality class at its own "
            "start-up and rate, off-node messages through per-process lanes",
        ),
    ]
    findings = [
        finding(
            f"nap_fastest.{fid}",
            quantity,
            claim,
            speedups(col),
            fastest,
            nap_lead(col),
            note=note,
        )
        for fid, quantity, claim, col, note in rows
    ]
    return cols, findings


def run_size(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Cost against size at p = 32768 (the paper's model_coll_size figure)."""
    p = 1 << 12 if quick else 1 << 15
    sizes = [8 << k for k in range(12)]
    cols = _rows([(p, s) for s in sizes], p)
    n = p // PPN
    fine = np.arange(8, (16 << 10) + 1, 8)

    def cross(params: ClusterParams, **kw: Any) -> float | None:
        return costs.crossover_size(n, PPN, fine, params, **kw)

    def show(x: float | None) -> str:
        return f"{x:g} B" if x is not None else "never (up to 16 KiB)"

    x_script = cross(MEASURED, form="script")
    x_eq = cross(MEASURED)
    x_std = cross(BLUE_WATERS)
    x_sock = cross(MEASURED, sockets=SOCKETS)
    x_post = cross(fit_blue_waters("postal"), network="postal", form="script")
    sim_smp = _get(cols, "smp", "size_bytes", "sim_s")
    sim_nap = _get(cols, "nap", "size_bytes", "sim_s")
    wins = np.flatnonzero(sim_smp < sim_nap)
    x_sim = sizes[int(wins[0])] if wins.size else None
    at = {a: _get(cols, a, "size_bytes", "script_s")[0] for a in ALGOS}
    ra = [P.classes["network"]["rendezvous"].alpha_s for P in (BLUE_WATERS, MEASURED)]
    threshold = Exact(8000, "B: the first size of the 8-byte grid where SMP wins")
    findings = [
        finding(
            "nap_fastest.script",
            f"NAP speedup over RD / SMP at p = {p}, 8 B, as the figure was drawn",
            "NAP is fastest for small sizes (Fig. 11)",
            f"{at['rd'] / at['nap']:.2f}x / {at['smp'] / at['nap']:.2f}x",
            Faster(why=_NAP_FASTEST),
            min(at["rd"], at["smp"]) / at["nap"],
            note="the authors' model script with blue_waters_measured (§1.7a)",
        ),
        finding(
            "smp_from.script",
            f"size from which SMP beats NAP, p = {p}, as the figure was drawn",
            "SMP wins for large sizes; in the figure from 8000 B (§1.7a)",
            show(x_script),
            threshold,
            x_script,
            note="the authors' model script with blue_waters_measured",
        ),
        finding(
            "smp_from.equations",
            "the same with equations (4)-(6), max-rate",
            "8000 B",
            show(x_eq),
            threshold,
            x_eq,
            note="blue_waters_measured (§1.7b)",
        ),
        finding(
            "smp_from.standard",
            "the same with the hard-coded standard network set",
            "8000 B",
            show(x_std),
            threshold,
            x_std,
            note="blue_waters (nodecomm_model.py's hard-coded rows, §1.8)",
            explanation="the figures were drawn with the fitted set; the "
            f"hard-coded rendezvous alpha ({ra[0]:.2g} s) is {ra[0] / ra[1]:.1f} "
            f"times the fitted one ({ra[1]:.2g} s), and NAP sends "
            f"{int(np.log2(n)) - int(np.ceil(np.log2(n) / np.log2(PPN)))} fewer "
            "network messages than SMP, so SMP wins only at larger sizes",
        ),
        finding(
            "smp_from.sockets",
            f"the same with the socket level ({SOCKETS} sockets of {PPN // SOCKETS})",
            "(the paper's equations have one on-node class)",
            show(x_sock),
            threshold,
            x_sock,
            note="equations (4)-(6), blue_waters_measured, on-node steps split "
            "into on-socket and cross-socket ones (allreduce_time(sockets=2))",
            not_reproducible="the paper models no socket level in its allreduce "
            "equations (only Fig. 5 shows the classes); shown as the socket-level "
            "curve beside the figure's",
        ),
        finding(
            "smp_from.postal",
            "the same under the committed postal setting",
            "SMP never wins (§1.7a)",
            show(x_post),
            Exact(None, "(no size of the grid where SMP wins)"),
            x_post,
            note="the authors' script with the network postal-fitted over all "
            "points (blue_waters_measured_postal, as nodecomm_model.py is "
            "committed): max-rate is what makes SMP win at large sizes",
        ),
        finding(
            "smp_from.simulated",
            "first size of the 8 * 2^k grid where SMP beats NAP (sim.)",
            "(not in the paper)",
            f"{x_sim} B" if x_sim is not None else "never (up to 16 KiB)",
            threshold,
            x_sim,
            note="simulation charges on-node bytes at the network beta",
            not_reproducible="the paper has no simulation of the schedules; shown "
            "for information beside the model's crossover",
        ),
    ]
    for form, what in (("script", "as the figure was drawn"), ("equations", "")):
        wins = fastest_by_size(n, PPN, MEASURED, form=form)
        findings.append(
            finding(
                f"fastest_windows.{form}",
                f"the fastest algorithm at every size 1 B-16 KiB, p = {p} "
                f"({what or 'equations (4)-(6), max-rate'})",
                "NAP fastest for small sizes, SMP from 8000 B (Fig. 11, §1.7a)",
                "; ".join(f"{w} from {lo} B" for lo, w in wins),
                Exact([[1, "nap"], [8000, "smp"]], "(first size, fastest) windows"),
                [[lo, w] for lo, w in wins],
                note="every crossing of the three closed forms, found by "
                f"bisection to the byte ({_CROSSING_GRID} points per protocol "
                "regime, then halving each bracket where the fastest changes)",
                explanation="the paper's figure samples sizes 8 * 2^k B; RD's "
                "windows fall between its points (256-512 B and 4096-8192 B), "
                "so the figure cannot show them",
            )
        )
    return cols, findings


def _plot(cols: dict[str, list[Any]], key: str, ax: Any, title: str) -> Any:
    from ..palette import color, marker

    ax = new_axes(ax)
    for a in ALGOS:
        x = np.sort(
            np.asarray(cols[key], dtype=float)[np.asarray(cols["algorithm"]) == a]
        )
        dots = {"marker": marker(a), "linestyle": "none"}
        styles = (
            ("script_s", {"label": a.upper()}),
            ("standard_model_s", {"ls": ":", "lw": 1}),
            ("socket_model_s", {"ls": "--", "lw": 1}),
            ("sim_s", {**dots, "markersize": 4}),
            ("socket_sim_s", {**dots, "markersize": 6, "markerfacecolor": "none"}),
        )
        for col, style in styles:
            ax.plot(x, 1e6 * _get(cols, a, key, col), color=color(a), **style)
    from matplotlib import ticker
    from matplotlib.lines import Line2D

    from ..plot import LEGEND_FONTSIZE, log2_ticks

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    lo, hi = ax.get_xlim()
    # Plain numbers (128, 4096; 8 B, 4 KiB), never 2^7 or 6x10^1.
    log2_ticks(ax.xaxis, lo, hi, most=8, label=None if key == "p" else _bytes)
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("processes" if key == "p" else "bytes per process")
    ax.set_ylabel("time (µs)")
    ax.set_title(title, fontsize="medium")
    grey = "0.35"
    keys = [
        (Line2D([], [], color=grey), "as the figure was drawn"),
        (Line2D([], [], color=grey, ls=":", lw=1), "hard-coded set"),
        (Line2D([], [], color=grey, ls="--", lw=1), f"{SOCKETS} sockets per node"),
        (Line2D([], [], color=grey, ls="none", marker="o", ms=4), "simulated"),
        (
            Line2D([], [], color=grey, ls="none", marker="o", ms=6, mfc="none"),
            "simulated, sockets",
        ),
    ]
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(
        handles + [h for h, _ in keys],
        labels + [lab for _, lab in keys],
        fontsize=LEGEND_FONTSIZE,
        ncol=4,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.14),
        frameon=False,
    )
    ax.grid(True, alpha=0.3)
    return ax


def _bytes(v: float) -> str:
    return f"{v / 1024:g} KiB" if v >= 1024 else f"{v:g} B"


def plot_scale(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Model lines and simulated dots against the process count."""
    return _plot(
        cols, "p", ax, "Allreduce of 8 B, ppn 16 (Blue Waters fitted, max-rate)"
    )


def plot_size(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Model lines and simulated dots against the vector size."""
    p = max(cols["p"]) if cols["p"] else 0
    return _plot(cols, "size_bytes", ax, f"Allreduce on p = {p}, ppn 16")


def run_locality(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """One message by locality against size (Fig. 5), model and measurements.

    The model is :data:`MEASURED` (max-rate, one sender: postal per protocol
    regime); the measured points are the authors' one-pair ping-pong times
    (round trip / 2) of :func:`~wafercoll.cluster.model.blue_waters_pingpong`.
    """
    from ..cluster.model import blue_waters_pingpong

    sizes = [1 << k for k in range(0, 17 if quick else 21)]
    cols: dict[str, list[Any]] = {
        k: [] for k in ("kind", "locality", "size_bytes", "time_s")
    }

    def model(loc: str, size: float) -> float:
        if loc == "network":
            return MEASURED.network_time(size, 1)
        return MEASURED.local_time(size, loc)

    for loc in LOCALITIES:
        for size in sizes:
            cols["kind"].append("model")
            cols["locality"].append(loc)
            cols["size_bytes"].append(size)
            cols["time_s"].append(model(loc, size))
    d = blue_waters_pingpong()
    errors = {}
    for loc in LOCALITIES:
        sel = (d["locality"] == loc) & (d["pairs"] == 1)
        meas = d["round_trip_s"][sel] / 2
        size = d["size_bytes"][sel]
        for s_, t_ in zip(size, meas, strict=True):
            cols["kind"].append("measured")
            cols["locality"].append(loc)
            cols["size_bytes"].append(int(s_))
            cols["time_s"].append(float(t_))
        fit = np.array([model(loc, float(x)) for x in size])
        errors[loc] = float(np.median(np.abs(fit / meas - 1)))
    fit_note = (
        "fitted model against the one-pair measurements: median error "
        + ", ".join(f"{loc} {100 * e:.0f} %" for loc, e in errors.items())
    )

    def ratio(a: str, b: str, size: int) -> float:
        return model(a, size) / model(b, size)

    small = [s for s in sizes if s < 8000]  # short and eager regimes
    large = [s for s in sizes if s >= 8000]  # rendezvous
    r_small = [ratio("node", "socket", s) for s in small]
    r_large = [ratio("node", "socket", s) for s in large]
    n_all = [ratio("network", "node", s) for s in sizes]
    cheaper = AtLeast(
        1.5, why="the smallest ratio; 'significantly', a band stated here"
    )
    findings = [
        finding(
            "cost_ratio.node_over_socket.small",
            "on-node (across sockets) / on-socket message cost, "
            f"{small[0]}-{small[-1]} B",
            "intra-socket messages are significantly cheaper (Fig. 5)",
            f"{min(r_small):.2f}x to {max(r_small):.2f}x",
            cheaper,
            min(r_small),
            note="blue_waters_measured, one sender; " + fit_note,
        ),
        finding(
            "cost_ratio.node_over_socket.rendezvous",
            f"the same for rendezvous messages, {large[0]}-{large[-1]} B",
            "intra-socket messages are significantly cheaper (Fig. 5)",
            f"{min(r_large):.2f}x to {max(r_large):.2f}x",
            cheaper,
            min(r_large),
            note="blue_waters_measured, one sender",
            explanation="the fitted per-byte costs of the two classes are "
            "almost equal in the rendezvous regime ("
            + " and ".join(
                f"{MEASURED.classes[c]['rendezvous'].beta_s_per_byte:.3g}"
                for c in ("socket", "node")
            )
            + " s/B from the authors' files), so large messages cost nearly the "
            "same on and across sockets; the paper's statement holds for small ones",
        ),
        finding(
            "cost_ratio.network_over_node",
            f"off-node / on-node message cost, {sizes[0]}-{sizes[-1]} B",
            "inter-node communication is notably more expensive (Fig. 5)",
            f"{min(n_all):.2f}x to {max(n_all):.2f}x",
            AtLeast(1.5, why="the smallest ratio; 'notably', a band stated here"),
            min(n_all),
            note="blue_waters_measured, one sender (max-rate with k = 1)",
        ),
    ]
    return cols, findings


def plot_locality(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Model lines and measured points per locality."""
    ax = new_axes(ax)
    kind = np.asarray(cols["kind"])
    loc = np.asarray(cols["locality"])
    size = np.asarray(cols["size_bytes"], float)
    t = np.asarray(cols["time_s"], float)
    for i, name in enumerate(LOCALITIES):
        c = ("#009E73", "#0072B2", "#D55E00")[i]
        m = (kind == "model") & (loc == name)
        ax.plot(size[m], 1e6 * t[m], color=c, label=f"{name} (model)")
        m = (kind == "measured") & (loc == name)
        ax.plot(size[m], 1e6 * t[m], ls="none", marker="o", ms=3, color=c, alpha=0.6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("time (µs)")
    ax.set_title(
        "One message on Blue Waters by locality (Fig. 5); dots: measured",
        fontsize="medium",
    )
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


_CLAIM = (
    "Bienz, Olson, Gropp (ExaMPI 2019), model figures: NAP is modelled faster "
    "than RD and SMP for small reductions at scale; SMP overtakes NAP for "
    "large messages."
)
register_experiment(
    Experiment(
        name="node_aware_locality",
        title="Node-aware allreduce: one message by locality (Fig. 5)",
        paper="001",
        claim="Bienz, Olson, Gropp (ExaMPI 2019), Fig. 5: intra-socket messages "
        "are significantly cheaper than inter-socket ones, and inter-node "
        "communication is notably more expensive than intra-node",
        run=run_locality,
        plot=plot_locality,
    )
)
register_experiment(
    Experiment(
        name="node_aware_scale",
        title="Node-aware allreduce: cost against process count",
        paper="001",
        claim=_CLAIM,
        run=run_scale,
        plot=plot_scale,
    )
)
register_experiment(
    Experiment(
        name="node_aware_size",
        title="Node-aware allreduce: cost against size at p = 32768",
        paper="001",
        claim=_CLAIM,
        run=run_size,
        plot=plot_size,
    )
)
