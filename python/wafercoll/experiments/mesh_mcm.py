"""Experiments of paper 004 (MCM meshes of chiplets: rings, MultiTree, TTO).

*Enhancing Collective Communication in MCM Accelerators for Deep Learning
Training* (Laskar, Majhi et al., HPCA 2024). Every number is simulated with
:func:`wafercoll.simulate` on the paper's Table II network
(:data:`wafercoll.mesh.TABLE_II`) or counted in unit timesteps
(:data:`wafercoll.mesh.UNIT_TIMESTEP`); bandwidths are in GB/s = 1e9 B/s
(the authors' plots use GiB/s, recovered details 2.8).

* ``mesh_table1``: used-link percentage per algorithm on 8x8 and 9x9 (Table I);
* ``mesh_fig8``: AllReduce bandwidth against size, 1 MiB .. 1 GiB (Fig. 8);
* ``mesh_fig9``: scalability with 375 KiB x N, 3x3 .. 16x16 (Fig. 9);
* ``mesh_fig12``: busy links over time, 9x9, 256 MiB (Fig. 12);
* ``mesh_fig14``: TTO chunk size, 8x8, 128 MiB (Fig. 14).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..algorithms import build
from ..mesh import TABLE_II, UNIT_TIMESTEP
from ..simulate import simulate
from ..topology import mesh
from . import Experiment, new_axes, register_experiment

__all__ = [
    "algorithms_for",
    "run_fig8",
    "run_fig9",
    "run_fig12",
    "run_fig14",
    "run_table1",
    "simulate_allreduce",
]

MIB = 1 << 20
KIB = 1 << 10
LABELS = {
    "mesh_ring_allreduce": "Ring",
    "mesh_ring_bi_allreduce": "RingBiEven",
    "mesh_ring_bi_odd_allreduce": "RingBiOdd",
    "mesh_ring_2d_allreduce": "Ring-2D",
    "mesh_dbtree_allreduce": "DBTree",
    "mesh_multitree_allreduce": "MultiTree",
    "mesh_tto_allreduce": "TTO",
}


def algorithms_for(rows: int, cols: int) -> list[str]:
    """The algorithms the paper runs on a mesh (RingBiEven or RingBiOdd)."""
    bi = "mesh_ring_bi_odd_allreduce" if (rows * cols) % 2 else "mesh_ring_bi_allreduce"
    return [
        "mesh_ring_allreduce",
        bi,
        "mesh_ring_2d_allreduce",
        "mesh_dbtree_allreduce",
        "mesh_multitree_allreduce",
        "mesh_tto_allreduce",
    ]


def simulate_allreduce(
    name: str, rows: int, cols: int, size: int, network: Any = None, **kw: Any
) -> Any:
    """Build ``name`` on a ``rows x cols`` mesh and simulate it (Table II)."""
    top = mesh(rows, cols)
    s = build(name, topology=top, size_bytes=size, **kw)
    return simulate(s, top, network or TABLE_II)


def _geo_mean(x: list[float]) -> float:
    a = np.asarray([v for v in x if v > 0 and math.isfinite(v)], float)
    return float(np.exp(np.log(a).mean())) if a.size else math.nan


# ------------------------------------------------------------------ Table I


def run_table1(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Used-link percentage: unit timesteps and Table II, 8x8 and 9x9."""
    shapes = [(4, 4), (5, 5)] if quick else [(8, 8), (9, 9)]
    size_t2 = MIB if quick else 64 * MIB
    cols: dict[str, list[Any]] = {
        k: [] for k in ("mesh", "algorithm", "unit_pct", "table2_pct", "links_pct")
    }
    for m, n in shapes:
        N = m * n
        pieces = 2 * N * (N - 1)  # every algorithm's blocks divide it
        for name in algorithms_for(m, n):
            kw = {"chunk_bytes": 24} if name == "mesh_tto_allreduce" else {}
            top = mesh(m, n)
            s = build(name, topology=top, size_bytes=pieces, **kw)
            unit = simulate(s, top, UNIT_TIMESTEP)
            r = simulate_allreduce(name, m, n, size_t2)
            cols["mesh"].append(f"{m}x{n}")
            cols["algorithm"].append(LABELS[name])
            cols["unit_pct"].append(100 * unit.link_utilization)
            cols["table2_pct"].append(100 * r.link_utilization)
            cols["links_pct"].append(100 * r.links_used / r.num_links)
    paper = {
        ("even", "Ring"): 29,
        ("odd", "Ring"): 28,
        ("even", "RingBiEven"): 57,
        ("even", "Ring-2D"): 55,
        ("odd", "Ring-2D"): 53,
        ("even", "MultiTree"): 53,
        ("odd", "MultiTree"): 51,
    }
    findings = []
    for i, alg in enumerate(cols["algorithm"]):
        m = int(cols["mesh"][i].split("x")[0])
        key = ("odd" if m % 2 else "even", alg)
        if key not in paper:
            continue
        findings.append(
            {
                "quantity": f"used links, {alg} on {cols['mesh'][i]} (%)",
                "paper": f"{paper[key]} (8x8 / 9x9)",
                "ours": (
                    f"{cols['unit_pct'][i]:.0f} (unit timesteps), "
                    f"{cols['table2_pct'][i]:.0f} (Table II), "
                    f"{cols['links_pct'][i]:.0f} of links carry data"
                ),
                "note": "mean busy fraction of all directed links over the run",
                "ok": abs(cols["unit_pct"][i] - paper[key]) <= 3,
                "tolerance": "within 3 percentage points (unit-timestep run)",
            }
        )
    return cols, findings


def plot_table1(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Bars of the used-link percentage per algorithm and mesh."""
    ax = new_axes(ax)
    labels = [f"{a}\n{m}" for a, m in zip(cols["algorithm"], cols["mesh"], strict=True)]
    x = np.arange(len(labels))
    ax.bar(x - 0.2, cols["unit_pct"], 0.4, label="unit timesteps")
    ax.bar(x + 0.2, cols["table2_pct"], 0.4, label="Table II")
    ax.set_xticks(x, labels, fontsize=6)
    ax.set_ylabel("used links (%)")
    ax.legend()
    return ax


# ------------------------------------------------------------------ Fig. 8


def run_fig8(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """AllReduce bandwidth (size / time) against size on four meshes."""
    shapes = [(4, 4), (5, 5)] if quick else [(4, 4), (5, 5), (8, 8), (9, 9)]
    sizes = [MIB, 4 * MIB] if quick else [MIB * 4**k for k in range(6)]
    cols: dict[str, list[Any]] = {
        k: [] for k in ("mesh", "algorithm", "size_bytes", "time_s", "GBps")
    }
    for m, n in shapes:
        for size in sizes:
            for name in algorithms_for(m, n):
                r = simulate_allreduce(name, m, n, size)
                cols["mesh"].append(f"{m}x{n}")
                cols["algorithm"].append(LABELS[name])
                cols["size_bytes"].append(size)
                cols["time_s"].append(r.time_s)
                cols["GBps"].append(size / r.time_s / 1e9)
    return cols, _speedups(cols, "Fig. 8", 3.2)


def _speedups(
    cols: dict[str, list[Any]], where: str, over_ring: float
) -> list[dict[str, Any]]:
    """Mean speedups the paper states (Section VII-A, VII-B) beside ours."""
    t: dict[tuple[str, Any, str], float] = {}
    for mesh_, size, alg, time in zip(
        cols["mesh"], cols["size_bytes"], cols["algorithm"], cols["time_s"], strict=True
    ):
        t[(mesh_, size, alg)] = time

    def ratio(fast: str, slow: str | tuple[str, ...]) -> float:
        slows = (slow,) if isinstance(slow, str) else slow
        out = []
        for (ms, sz, alg), v in t.items():
            if alg != fast:
                continue
            for sl in slows:
                if (ms, sz, sl) in t:
                    out.append(t[(ms, sz, sl)] / v)
        return _geo_mean(out)

    rows = [
        ("TTO", "MultiTree", 1.6),
        ("TTO", ("RingBiEven", "RingBiOdd"), 1.4),
        ("TTO", "Ring", over_ring),
        ("RingBiOdd", "Ring", 1.9),
        ("RingBiOdd", "MultiTree", 1.1),
    ]
    out = []
    for fast, slow, claim in rows:
        got = ratio(fast, slow)
        name = slow if isinstance(slow, str) else "bidirectional ring"
        out.append(
            {
                "quantity": f"{where}: mean speedup of {fast} over {name}",
                "paper": f"{claim}x",
                "ours": f"{got:.2f}x (geometric mean over meshes and sizes)",
                "note": "Table II network as stated (25 GB/s, 21 ns, 8 KiB packets)",
                "ok": bool(math.isfinite(got) and abs(got / claim - 1) <= 0.25),
                "tolerance": "within 25 %",
            }
        )
    return out


def plot_fig8(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Bandwidth against size, one line per algorithm and mesh."""
    ax = new_axes(ax)
    keys = sorted(
        {(m, a) for m, a in zip(cols["mesh"], cols["algorithm"], strict=True)}
    )
    for m, a in keys:
        idx = [
            i
            for i in range(len(cols["mesh"]))
            if cols["mesh"][i] == m and cols["algorithm"][i] == a
        ]
        ax.plot(
            [cols["size_bytes"][i] / MIB for i in idx],
            [cols["GBps"][i] for i in idx],
            marker="o",
            ms=3,
            lw=1,
            label=f"{a} {m}",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("AllReduce size (MiB)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.legend(fontsize=5, ncol=3)
    return ax


# ------------------------------------------------------------------ Fig. 9


def run_fig9(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Time of 375 KiB x N on n x n meshes, relative to Ring on 4x4 / 3x3."""
    ns = [3, 4] if quick else list(range(3, 17))
    cols: dict[str, list[Any]] = {
        k: [] for k in ("mesh", "n", "algorithm", "size_bytes", "time_s", "relative")
    }
    base: dict[str, float] = {}
    for n in ns:
        size = 375 * KIB * n * n
        for name in algorithms_for(n, n):
            r = simulate_allreduce(name, n, n, size)
            cols["mesh"].append(f"{n}x{n}")
            cols["n"].append(n)
            cols["algorithm"].append(LABELS[name])
            cols["size_bytes"].append(size)
            cols["time_s"].append(r.time_s)
            if name == "mesh_ring_allreduce" and n in (3, 4):
                base["odd" if n % 2 else "even"] = r.time_s
    for i, n in enumerate(cols["n"]):
        cols["relative"].append(cols["time_s"][i] / base["odd" if n % 2 else "even"])
    return cols, _speedups(cols, "Fig. 9", 2.8)


def plot_fig9(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Relative time against chiplets, one line per algorithm (even and odd)."""
    ax = new_axes(ax)
    for a in sorted(set(cols["algorithm"])):
        for parity, style in ((0, "-"), (1, "--")):
            idx = [
                i
                for i in range(len(cols["n"]))
                if cols["algorithm"][i] == a and cols["n"][i] % 2 == parity
            ]
            if idx:
                ax.plot(
                    [cols["n"][i] ** 2 for i in idx],
                    [cols["relative"][i] for i in idx],
                    style,
                    marker="o",
                    ms=3,
                    label=f"{a} ({'odd' if parity else 'even'})",
                )
    ax.set_xlabel("chiplets N")
    ax.set_ylabel("time / Ring on 4x4 (even) or 3x3 (odd)")
    ax.legend(fontsize=6, ncol=2)
    return ax


# ------------------------------------------------------------------ Fig. 12


def run_fig12(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Fraction of busy links over normalised time, 9x9, 256 MiB."""
    m = n = 3 if quick else 9
    size = MIB if quick else 256 * MIB
    bins = 50
    cols: dict[str, list[Any]] = {
        k: [] for k in ("algorithm", "t_frac", "busy_pct", "time_s", "mean_pct")
    }
    top = mesh(m, n)
    means: dict[str, float] = {}
    for name in algorithms_for(m, n):
        s = build(name, topology=top, size_bytes=size)
        r = simulate(s, top, TABLE_II, timeline=True)
        centres, busy = r.busy_links(bins)
        means[LABELS[name]] = 100 * r.link_utilization
        for c, b in zip(centres, busy, strict=True):
            cols["algorithm"].append(LABELS[name])
            cols["t_frac"].append(float(c / r.time_s))
            cols["busy_pct"].append(float(100 * b / r.num_links))
            cols["time_s"].append(r.time_s)
            cols["mean_pct"].append(means[LABELS[name]])
    findings = [
        {
            "quantity": f"mean link utilization of {a} ({m}x{n}, {size // MIB} MiB)",
            "paper": f"about {claim} %",
            "ours": f"{means[a]:.0f} %",
            "note": "busy time of all directed links / (links x makespan)",
            "ok": abs(means[a] - claim) <= 10,
            "tolerance": "within 10 percentage points",
        }
        for a, claim in (("TTO", 83), ("RingBiOdd", 57), ("Ring", 30))
    ]
    return cols, findings


def plot_fig12(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Busy links (%) against the fraction of each run's time."""
    ax = new_axes(ax)
    for a in dict.fromkeys(cols["algorithm"]):
        idx = [i for i, x in enumerate(cols["algorithm"]) if x == a]
        ax.plot(
            [cols["t_frac"][i] for i in idx],
            [cols["busy_pct"][i] for i in idx],
            label=f"{a} (mean {cols['mean_pct'][idx[0]]:.0f} %)",
        )
    ax.set_xlabel("fraction of the AllReduce time")
    ax.set_ylabel("busy links (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7)
    return ax


# ------------------------------------------------------------------ Fig. 14


def run_fig14(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """TTO bandwidth against chunk size, 8x8, 128 MiB."""
    m = n = 4 if quick else 8
    size = 4 * MIB if quick else 128 * MIB
    chunks = [12 * KIB * 2**k for k in range(6 if quick else 10)]
    cols: dict[str, list[Any]] = {k: [] for k in ("chunk_bytes", "time_s", "GBps")}
    for c in chunks:
        r = simulate_allreduce("mesh_tto_allreduce", m, n, size, chunk_bytes=c)
        cols["chunk_bytes"].append(c)
        cols["time_s"].append(r.time_s)
        cols["GBps"].append(size / r.time_s / 1e9)
    best = cols["chunk_bytes"][int(np.argmax(cols["GBps"]))]
    findings = [
        {
            "quantity": f"best TTO chunk ({m}x{n}, {size // MIB} MiB)",
            "paper": "96-192 KiB",
            "ours": f"{best // KIB} KiB",
            "note": (
                "our model has no per-packet fragmentation cost below 8 KiB, "
                "so small chunks lose only the per-chunk latency"
            ),
            "ok": 96 * KIB <= best <= 192 * KIB,
            "tolerance": "the best chunk within the paper's 96-192 KiB",
            "explanation": (
                "under the Table II preset TTO streams packet by packet (dataflow "
                "dependencies) and small chunks cost no fragmentation, so the chunk "
                "size barely matters; the paper's BookSim artifact rounds chunks up "
                "to whole 8 KiB messages and holds each link per flit (recovered "
                "details 2.6-2.8), which this preset does not model yet"
            ),
        }
    ]
    return cols, findings


def plot_fig14(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Bandwidth against chunk size."""
    ax = new_axes(ax)
    ax.plot([c / KIB for c in cols["chunk_bytes"]], cols["GBps"], marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("TTO chunk (KiB)")
    ax.set_ylabel("bandwidth (GB/s)")
    return ax


for _name, _title, _claim, _run, _plot in (
    (
        "mesh_table1",
        "Used-link percentage of AllReduce algorithms on 8x8 and 9x9 (Table I)",
        "Ring uses 29 % / 28 %, bidirectional ring 57 %, Ring-2D 55 % / 53 %, "
        "MultiTree 53 % / 51 % of the links",
        run_table1,
        plot_table1,
    ),
    (
        "mesh_fig8",
        "AllReduce bandwidth against size on 4x4, 5x5, 8x8, 9x9 (Fig. 8)",
        "TTO is fastest everywhere: 1.6x over MultiTree, 1.4x over the "
        "bidirectional ring; RingBiOdd 1.9x over Ring",
        run_fig8,
        plot_fig8,
    ),
    (
        "mesh_fig9",
        "Scalability with 375 KiB x N, 3x3 .. 16x16 (Fig. 9)",
        "all scale linearly; TTO best: 2.8x over Ring, 1.6x over MultiTree, "
        "1.4x over the bidirectional ring",
        run_fig9,
        plot_fig9,
    ),
    (
        "mesh_fig12",
        "Link utilization over time, 9x9, 256 MiB (Fig. 12)",
        "TTO keeps about 83 % of links busy, RingBiOdd 57 %, Ring 30 %",
        run_fig12,
        plot_fig12,
    ),
    (
        "mesh_fig14",
        "TTO chunk size, 8x8, 128 MiB (Fig. 14)",
        "TTO's bandwidth peaks for chunks of 96-192 KiB",
        run_fig14,
        plot_fig14,
    ),
):
    register_experiment(Experiment(_name, _title, "004", _claim, _run, _plot))
