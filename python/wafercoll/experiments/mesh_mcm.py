"""Experiments of paper 004 (MCM meshes of chiplets: rings, MultiTree, TTO).

*Enhancing Collective Communication in MCM Accelerators for Deep Learning
Training* (Laskar, Majhi et al., HPCA 2024). Every number is simulated with
:func:`wafercoll.simulate` under two presets, or counted in unit timesteps
(:data:`wafercoll.mcm.UNIT_TIMESTEP`):

* :data:`wafercoll.mcm.TABLE_II`, the network as the paper states it;
  bandwidths in GB/s = 1e9 B/s;
* :data:`wafercoll.mcm.ARTIFACT`, the network as the authors' BookSim
  artifact simulates it (357 cycles per whole 8 KiB message per link,
  chunk-level forwarding); bandwidths in GiB/s, as the authors plot them,
  beside the artifact's own committed results
  (:func:`wafercoll.mcm.artifact_cycles`) where it has a run.

* ``mesh_table1``: used-link percentage per algorithm on 8x8 and 9x9 (Table I);
* ``mesh_fig8``: AllReduce bandwidth against size, 1 MiB .. 1 GiB (Fig. 8);
* ``mesh_fig9``: scalability with 375 KiB x N, 3x3 .. 16x16 (Fig. 9);
* ``mesh_fig12``: busy links over time, 9x9, 256 MiB (Fig. 12);
* ``mesh_fig14``: TTO chunk size, 8x8, 128 MiB (Fig. 14);
* ``mesh_fig10``: one training epoch of seven DNNs on 8x8 and 9x9 (Fig. 10):
  the AllReduce of each DNN's gradients simulated under the artifact preset
  beside the artifact's own runs, the forward and backward pass from the
  systolic model (:mod:`wafercoll.mcm.systolic`), epochs by equations (1)
  and (2) (:mod:`wafercoll.mcm.training`), and the worked example of
  Section VIII-B recomputed;
* ``mesh_fig11``: the same with each layer's gradient AllReduce started as
  soon as the backward pass produced it (Fig. 11), with the per-layer times
  of the systolic model and of the artifact's SCALE-Sim runs;
* ``mesh_fig13``: one training iteration on the 6x6 Simba mesh with 32 x 32
  and 16 x 16 MAC arrays (Fig. 13), the compute from the systolic model and
  from the artifact's own SCALE-Sim cycles, side by side.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..algorithms import algorithm_info, algorithms, build
from ..mcm import (
    ARTIFACT,
    TABLE_II,
    UNIT_TIMESTEP,
    artifact_cycles,
    artifact_layers,
    artifact_training,
)
from ..palette import color, marker
from ..simulate import simulate
from ..topology import mesh
from . import Experiment, new_axes, progress, register_experiment

__all__ = [
    "algorithms_for",
    "run_fig8",
    "run_fig9",
    "run_fig12",
    "run_fig14",
    "run_table1",
    "simulate_allreduce",
    "simulate_presets",
]

MIB = 1 << 20
KIB = 1 << 10
GIB = 1 << 30
#: Agreement with the artifact's committed cycles that counts as reproduced.
ARTIFACT_TOLERANCE = 0.05


def paper_label(name: str) -> str:
    """The paper's label of a registered mesh algorithm (its registry record)."""
    return algorithm_info(name).label


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
    return simulate_presets(name, rows, cols, size, (network or TABLE_II,), **kw)[0]


def simulate_presets(
    name: str, rows: int, cols: int, size: int, networks: Any, **kw: Any
) -> list[Any]:
    """Build ``name`` once on a ``rows x cols`` mesh; simulate it per network."""
    top = mesh(rows, cols)
    s = build(name, topology=top, size_bytes=size, **kw)
    return [simulate(s, top, net) for net in networks]


def _artifact_names(label: str) -> tuple[str, ...]:
    """The artifact's names (even mesh, odd mesh) of the mesh algorithm ``label``."""
    for info in algorithms("allreduce"):
        if info.family == "mesh" and info.label == label:
            return info.artifact_names
    return ()


#: Why two of the artifact's runs are no reference for our builders.
_NOT_A_REFERENCE = {
    "Ring-2D": "the artifact's ring2dn (src/allreduce/ring2d_n_allreduce.py) "
    "builds, per chiplet, one store-and-forward chain along its row and one "
    "along its column, each reducing half of the data over that row or column "
    "only; that is neither the hierarchical Ring-2D the paper describes "
    "(Section III: reduce-scatter along one dimension, then the other) nor an "
    "AllReduce of the whole vector, so no verified schedule can move data that "
    "way; ours is the paper's Ring-2D",
    "DBTree": "the artifact's DBTree runs used --radix 1, one chiplet per BookSim "
    "node, which is not the 2D mesh of the other runs (recovered details 2.8)",
}


def _no_reference(slow: str) -> str:
    """Why the paper's comparison with ``slow`` cannot be checked against ours."""
    run = "ring2dn" if slow == "Ring-2D" else "dtree"
    return (
        f"the paper's numbers come from the artifact, whose {run} runs are no "
        f"reference for ours: {_NOT_A_REFERENCE[slow]}"
    )


def _case_ratios(
    t: np.ndarray,
    alg: np.ndarray,
    fast: str,
    slow: str | tuple[str, ...],
    keys: tuple[np.ndarray, ...],
    where: np.ndarray | None = None,
) -> np.ndarray:
    """``t`` of ``slow`` over ``t`` of ``fast``, one per distinct case of ``keys``.

    A case is one combination of the key columns (say DNN and mesh) among the
    rows ``where``; cases without both algorithms are left out.
    """
    slows = (slow,) if isinstance(slow, str) else slow
    rows = np.ones(len(alg), bool) if where is None else where
    out = []
    for case in dict.fromkeys(zip(*(k[rows] for k in keys), strict=True)):
        here = rows.copy()
        for k, v in zip(keys, case, strict=True):
            here &= k == v
        f, sl = t[here & (alg == fast)], t[here & np.isin(alg, slows)]
        if f.size and sl.size:
            out.append(sl[0] / f[0])
    return np.asarray(out, float)


def _range_finding(
    quantity: str,
    paper: tuple[float, float],
    source: str,
    sp: Any,
    note: str,
    slow: str,
) -> dict[str, Any]:
    """A speedup range of ours against one the paper states (both ends, 25 %)."""
    lo, hi = paper
    got_lo, got_hi = float(np.min(sp)), float(np.max(sp))
    f: dict[str, Any] = {
        "quantity": quantity,
        "paper": f"{lo}x to {hi}x ({source})",
        "ours": f"{got_lo:.2f}x to {got_hi:.2f}x",
        "note": note,
        "ok": bool(abs(got_lo / lo - 1) <= 0.25 and abs(got_hi / hi - 1) <= 0.25),
        "tolerance": "both ends within 25 %",
    }
    if slow in _NOT_A_REFERENCE:
        f["explanation"] = _no_reference(slow)
    return f


def artifact_reference(
    label: str,
    rows: int,
    cols: int,
    size: int,
    chunk: int = 0,
    figure: str = "fig8",
    model: str = "",
    array: int = 0,
) -> float:
    """The artifact's committed cycles for one of our points (NaN if none)."""
    names = _artifact_names(label)
    if not names:
        return math.nan
    ref = artifact_cycles(figure)
    sel = (
        (ref["algorithm"] == names[(rows * cols) % 2])
        & (ref["chiplets"] == rows * cols)
        & (ref["size_bytes"] == size)
        & (ref["model"] == model)
        & (ref["array"] == array)
    )
    if chunk:
        sel &= ref["chunk_bytes"] == chunk
    hits = ref["cycles"][sel]
    return float(hits[0]) if hits.size and rows == cols else math.nan


def _geo_mean(x: list[float]) -> float:
    a = np.asarray([v for v in x if v > 0 and math.isfinite(v)], float)
    return float(np.exp(np.log(a).mean())) if a.size else math.nan


# ------------------------------------------------------------------ Table I


def run_table1(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Used-link percentage: unit timesteps and Table II, 8x8 and 9x9."""
    shapes = [(4, 4), (5, 5)] if quick else [(8, 8), (9, 9)]
    size_t2 = MIB if quick else 64 * MIB
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "mesh",
            "algorithm",
            "unit_pct",
            "table2_pct",
            "artifact_pct",
            "links_pct",
        )
    }
    for m, n in shapes:
        N = m * n
        pieces = 2 * N * (N - 1)  # every algorithm's blocks divide it
        for name in algorithms_for(m, n):
            kw = {"chunk_bytes": 24} if name == "mesh_tto_allreduce" else {}
            top = mesh(m, n)
            s = build(name, topology=top, size_bytes=pieces, **kw)
            unit = simulate(s, top, UNIT_TIMESTEP)
            r, art = simulate_presets(name, m, n, size_t2, (TABLE_II, ARTIFACT))
            cols["artifact_pct"].append(100 * art.link_utilization)
            cols["mesh"].append(f"{m}x{n}")
            cols["algorithm"].append(paper_label(name))
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
                    f"{cols['artifact_pct'][i]:.0f} (artifact preset), "
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
    for k, (col, lab, c) in enumerate(
        (
            ("unit_pct", "unit timesteps", "#999999"),
            ("table2_pct", "Table II", "#0072B2"),
            ("artifact_pct", "artifact preset", "#D55E00"),
        )
    ):
        ax.bar(x + (k - 1) * 0.27, cols[col], 0.27, label=lab, color=c)
    ax.set_xticks(x, labels, fontsize=6)
    ax.set_ylabel("mean busy links (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Link use of AllReduce algorithms (Table I)", fontsize="medium")
    ax.legend(fontsize="small")
    return ax


# ------------------------------------------------------------------ Fig. 8


def _append_bandwidths(
    cols: dict[str, list[Any]], size: int, r: Any, a: Any, ref: float
) -> None:
    """Append one row's times and bandwidths.

    From the Table II run ``r``, the artifact-preset run ``a`` and the
    artifact's committed cycles ``ref``.
    """
    cols["time_s"].append(r.time_s)
    cols["GBps"].append(size / r.time_s / 1e9)
    cols["artifact_time_s"].append(a.time_s)
    cols["artifact_GiBps"].append(size / a.time_s / GIB)
    cols["reference_GiBps"].append(size / (ref * 1e-9) / GIB)
    cols["deviation_pct"].append(100 * (a.cycles / ref - 1))


def run_fig8(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """AllReduce bandwidth (size / time) against size on four meshes, two presets."""
    shapes = [(4, 4), (5, 5)] if quick else [(4, 4), (5, 5), (8, 8), (9, 9)]
    sizes = [MIB, 4 * MIB] if quick else [MIB * 4**k for k in range(6)]
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "mesh",
            "algorithm",
            "size_bytes",
            "time_s",
            "GBps",
            "artifact_time_s",
            "artifact_GiBps",
            "reference_GiBps",
            "deviation_pct",
        )
    }
    grid = [(m, n, size) for m, n in shapes for size in sizes]
    for m, n, size in progress(grid, "mesh_fig8"):
        for name in algorithms_for(m, n):
            r, a = simulate_presets(name, m, n, size, (TABLE_II, ARTIFACT))
            ref = artifact_reference(paper_label(name), m, n, size)
            cols["mesh"].append(f"{m}x{n}")
            cols["algorithm"].append(paper_label(name))
            cols["size_bytes"].append(size)
            _append_bandwidths(cols, size, r, a, ref)
    findings = _speedups(cols, "Fig. 8", 3.2)
    findings += _speedups(cols, "Fig. 8", 3.2, preset="artifact")
    findings += _agreement(cols, "Fig. 8")
    return cols, findings


def _agreement(cols: dict[str, list[Any]], where: str) -> list[dict[str, Any]]:
    """Per algorithm: our artifact-preset cycles against the artifact's own."""
    out = []
    dev = np.asarray(cols["deviation_pct"], dtype=float)
    alg = np.asarray(cols["algorithm"])
    for a in dict.fromkeys(cols["algorithm"]):
        d = dev[(alg == a) & np.isfinite(dev)]
        if d.size == 0:
            continue
        med, worst = float(np.median(np.abs(d))), float(np.max(np.abs(d)))
        f: dict[str, Any] = {
            "quantity": f"{where}: {a} under the artifact preset against the "
            "artifact's committed cycles",
            "paper": "the authors' BookSim results (TTO_HPCA_2024)",
            "ours": f"median |difference| {med:.1f} %, largest {worst:.1f} % "
            f"({d.size} runs; signed median {float(np.median(d)):+.1f} %)",
            "note": "mcm_artifact preset; differences are largest at 1-4 MiB, "
            "where the driver's per-flow overheads (not modelled) weigh most",
        }
        if a in _NOT_A_REFERENCE:
            f["verdict"] = "not reproducible"
            f["explanation"] = _NOT_A_REFERENCE[a]
        else:
            f["ok"] = med <= 100 * ARTIFACT_TOLERANCE
            f["tolerance"] = (
                f"median |difference| within {100 * ARTIFACT_TOLERANCE:.0f} %"
            )
        out.append(f)
    return out


def _speedups(
    cols: dict[str, list[Any]], where: str, over_ring: float, preset: str = "table_ii"
) -> list[dict[str, Any]]:
    """Mean speedups the paper states (Section VII-A, VII-B) beside ours."""
    times = cols["time_s"] if preset == "table_ii" else cols["artifact_time_s"]
    t: dict[tuple[str, Any, str], float] = {}
    for mesh_, size, alg, time in zip(
        cols["mesh"], cols["size_bytes"], cols["algorithm"], times, strict=True
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

    rows: list[tuple[str, Any, float]] = [
        ("TTO", "MultiTree", 1.6),
        ("TTO", ("RingBiEven", "RingBiOdd"), 1.4),
        ("TTO", "Ring", over_ring),
        ("RingBiOdd", "Ring", 1.9),
        ("RingBiOdd", "MultiTree", 1.1),
    ]
    if where == "Fig. 8":  # Section VII-A also compares with Ring-2D and DBTree
        rows += [
            ("TTO", "Ring-2D", 2.6),
            ("TTO", "DBTree", 5.3),
            ("RingBiOdd", "Ring-2D", 1.75),
            ("RingBiOdd", "DBTree", 3.7),
        ]
    note = (
        "Table II network as stated (25 GB/s, 21 ns, 8 KiB packets)"
        if preset == "table_ii"
        else "mcm_artifact preset (the network as the authors' BookSim runs it)"
    )
    out = []
    for fast, slow, claim in rows:
        got = ratio(fast, slow)
        if not math.isfinite(got):
            continue  # e.g. quick mode has no odd mesh for RingBiOdd
        name = slow if isinstance(slow, str) else "bidirectional ring"
        f: dict[str, Any] = {
            "quantity": f"{where}: mean speedup of {fast} over {name}"
            + ("" if preset == "table_ii" else " (artifact preset)"),
            "paper": f"{claim}x",
            "ours": f"{got:.2f}x (geometric mean over meshes and sizes)",
            "note": note,
            "ok": bool(abs(got / claim - 1) <= 0.25),
            "tolerance": "within 25 %",
        }
        if slow in _NOT_A_REFERENCE:
            f["explanation"] = _no_reference(slow)
        out.append(f)
    return out


def _panels(ax: Any, count: int) -> list[Any]:
    """Replace ``ax`` by ``count`` panels in its figure (2 columns)."""
    fig = ax.figure
    ax.remove()
    rows = (count + 1) // 2
    fig.set_size_inches(10, 3.2 * rows + 0.6)
    axes = fig.subplots(rows, 2 if count > 1 else 1, squeeze=False).ravel()
    for extra in axes[count:]:
        extra.remove()
    return list(axes[:count])


def _legend_once(axes: list[Any], **kw: Any) -> None:
    """One legend on the first panel, every label of all the panels once.

    (RingBiOdd, say, only appears on odd meshes.)
    """
    seen: dict[str, Any] = {}
    for pax in axes:
        for h, lab in zip(*pax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lab, h)
    axes[0].legend(list(seen.values()), list(seen), **kw)


def _bars(pax: Any, models: list[str], values: dict[str, list[float]]) -> Any:
    """Bars per DNN (x) and algorithm (colour); returns the bar positions."""
    x = np.arange(len(models))
    w = 0.8 / len(values)
    pos = {}
    for k, (a, vals) in enumerate(values.items()):
        pos[a] = x + (k - (len(values) - 1) / 2) * w
        pax.bar(pos[a], vals, w, color=color(a), label=a)
    pax.axhline(1.0, color="black", lw=0.8)
    pax.set_xticks(x, models, fontsize=7, rotation=20)
    pax.grid(True, axis="y", alpha=0.3)
    return pos


def plot_fig8(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """One panel per mesh: bandwidth against size per algorithm.

    Lines: the artifact preset (GiB/s); dotted: Table II as stated (GB/s
    converted to GiB/s); crosses: the artifact's committed results.
    """
    ax = new_axes(ax)
    meshes = list(dict.fromkeys(cols["mesh"]))
    axes = _panels(ax, len(meshes))
    mesh_col = np.asarray(cols["mesh"])
    alg_col = np.asarray(cols["algorithm"])
    for pax, m in zip(axes, meshes, strict=True):
        for a in dict.fromkeys(cols["algorithm"]):
            idx = np.flatnonzero((mesh_col == m) & (alg_col == a))
            if idx.size == 0:
                continue
            x = np.asarray(cols["size_bytes"], float)[idx] / MIB
            c = color(a)
            pax.plot(
                x,
                np.asarray(cols["artifact_GiBps"])[idx],
                color=c,
                marker=marker(a),
                ms=4,
                lw=1.2,
                label=a,
            )
            pax.plot(
                x,
                np.asarray(cols["GBps"])[idx] * 1e9 / GIB,
                color=c,
                ls=":",
                lw=1,
            )
            ref = np.asarray(cols["reference_GiBps"], float)[idx]
            if np.isfinite(ref).any():
                pax.plot(x, ref, color=c, ls="none", marker="x", ms=5)
        pax.set_xscale("log", base=2)
        pax.xaxis.set_major_formatter("{x:g}")
        pax.set_title(f"{m} mesh", fontsize="medium")
        pax.set_xlabel("AllReduce size (MiB)")
        pax.set_ylabel("bandwidth (GiB/s)")
        pax.grid(True, alpha=0.3)
    _legend_once(
        axes,
        fontsize=6,
        ncol=2,
        title="lines: artifact preset; dotted: Table II; x: artifact",
        title_fontsize=6,
    )
    axes[0].figure.suptitle(
        "AllReduce bandwidth on meshes of chiplets (Fig. 8)", fontsize="large"
    )
    return axes[0]


# ------------------------------------------------------------------ Fig. 9


def run_fig9(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Time of 375 KiB x N on n x n meshes, relative to Ring on 4x4 / 3x3."""
    ns = [3, 4] if quick else list(range(3, 17))
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "mesh",
            "n",
            "algorithm",
            "size_bytes",
            "time_s",
            "relative",
            "artifact_time_s",
            "artifact_relative",
        )
    }
    base: dict[str, float] = {}
    abase: dict[str, float] = {}
    for n in ns:
        size = 375 * KIB * n * n
        for name in algorithms_for(n, n):
            r, a = simulate_presets(name, n, n, size, (TABLE_II, ARTIFACT))
            cols["artifact_time_s"].append(a.time_s)
            cols["mesh"].append(f"{n}x{n}")
            cols["n"].append(n)
            cols["algorithm"].append(paper_label(name))
            cols["size_bytes"].append(size)
            cols["time_s"].append(r.time_s)
            if name == "mesh_ring_allreduce" and n in (3, 4):
                base["odd" if n % 2 else "even"] = r.time_s
                abase["odd" if n % 2 else "even"] = a.time_s
    for i, n in enumerate(cols["n"]):
        par = "odd" if n % 2 else "even"
        cols["relative"].append(cols["time_s"][i] / base[par])
        cols["artifact_relative"].append(cols["artifact_time_s"][i] / abase[par])
    findings = _speedups(cols, "Fig. 9", 2.8)
    findings += _speedups(cols, "Fig. 9", 2.8, preset="artifact")
    return cols, findings


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
                    [cols["artifact_relative"][i] for i in idx],
                    style,
                    color=color(a),
                    marker=marker(a),
                    ms=3,
                    label=f"{a} ({'odd' if parity else 'even'})",
                )
    ax.set_xlabel("chiplets N")
    ax.set_ylabel("time / Ring on 4x4 (even) or 3x3 (odd)")
    ax.set_title(
        "Scalability, 375 KiB x N, artifact preset (Fig. 9)", fontsize="medium"
    )
    ax.legend(fontsize=6, ncol=2)
    ax.grid(True, alpha=0.3)
    return ax


# ------------------------------------------------------------------ Fig. 12


def run_fig12(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Fraction of busy links over normalised time, 9x9, 256 MiB."""
    m = n = 3 if quick else 9
    size = MIB if quick else 256 * MIB
    bins = 50
    cols: dict[str, list[Any]] = {
        k: []
        for k in ("preset", "algorithm", "t_frac", "busy_pct", "time_s", "mean_pct")
    }
    top = mesh(m, n)
    means: dict[tuple[str, str], float] = {}
    for name in algorithms_for(m, n):
        s = build(name, topology=top, size_bytes=size)
        for preset, net in (("table_ii", TABLE_II), ("artifact", ARTIFACT)):
            r = simulate(s, top, net, timeline=True)
            centres, busy = r.busy_links(bins)
            means[(preset, paper_label(name))] = 100 * r.link_utilization
            for c, b in zip(centres, busy, strict=True):
                cols["preset"].append(preset)
                cols["algorithm"].append(paper_label(name))
                cols["t_frac"].append(float(c / r.time_s))
                cols["busy_pct"].append(float(100 * b / r.num_links))
                cols["time_s"].append(r.time_s)
                cols["mean_pct"].append(means[(preset, paper_label(name))])
    findings = [
        {
            "quantity": f"mean link utilization of {a} ({m}x{n}, {size // MIB} MiB)"
            + ("" if preset == "table_ii" else ", artifact preset"),
            "paper": f"about {claim} %",
            "ours": f"{means[(preset, a)]:.0f} %",
            "note": "busy time of all directed links / (links x makespan)",
            "ok": abs(means[(preset, a)] - claim) <= 10,
            "tolerance": "within 10 percentage points",
        }
        for preset in ("table_ii", "artifact")
        for a, claim in (("TTO", 83), ("RingBiOdd", 57), ("Ring", 30))
    ]
    return cols, findings


def plot_fig12(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Busy links (%) against the fraction of each run's time, per preset."""
    ax = new_axes(ax)
    presets = list(
        dict.fromkeys(cols.get("preset", ["table_ii"] * len(cols["t_frac"])))
    )
    axes = _panels(ax, len(presets))
    pre = np.asarray(cols.get("preset", ["table_ii"] * len(cols["t_frac"])))
    for pax, preset in zip(axes, presets, strict=True):
        for a in dict.fromkeys(cols["algorithm"]):
            idx = [
                i
                for i, x in enumerate(cols["algorithm"])
                if x == a and pre[i] == preset
            ]
            pax.plot(
                [cols["t_frac"][i] for i in idx],
                [cols["busy_pct"][i] for i in idx],
                color=color(a),
                label=f"{a} (mean {cols['mean_pct'][idx[0]]:.0f} %)",
            )
        pax.set_xlabel("fraction of the AllReduce time")
        pax.set_ylabel("busy links (%)")
        pax.set_ylim(0, 100)
        pax.set_title(
            "Table II as stated" if preset == "table_ii" else "artifact preset",
            fontsize="medium",
        )
        pax.legend(fontsize=7)
        pax.grid(True, alpha=0.3)
    axes[0].figure.suptitle("Link utilization over time (Fig. 12)")
    return axes[0]


# ------------------------------------------------------------------ Fig. 14


def run_fig14(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """TTO bandwidth against chunk size, 8x8, 128 MiB, under both presets."""
    m = n = 4 if quick else 8
    size = 4 * MIB if quick else 128 * MIB
    chunks = [12 * KIB * 2**k for k in range(6 if quick else 10)]
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "chunk_bytes",
            "time_s",
            "GBps",
            "artifact_time_s",
            "artifact_GiBps",
            "reference_GiBps",
            "deviation_pct",
        )
    }
    for c in chunks:
        r, a = simulate_presets(
            "mesh_tto_allreduce", m, n, size, (TABLE_II, ARTIFACT), chunk_bytes=c
        )
        ref = artifact_reference("TTO", m, n, size, c, figure="fig14")
        cols["chunk_bytes"].append(c)
        _append_bandwidths(cols, size, r, a, ref)
    bw = np.asarray(cols["GBps"])
    abw = np.asarray(cols["artifact_GiBps"])
    best = cols["chunk_bytes"][int(np.argmax(bw))]
    i_best = int(np.argmax(abw))
    abest = cols["chunk_bytes"][i_best]
    spread = 100 * (bw.max() / bw.min() - 1)
    paper = "96-192 KiB"
    findings = [
        {
            "quantity": f"best TTO chunk ({m}x{n}, {size // MIB} MiB), Table II",
            "paper": paper,
            "ours": f"{best // KIB} KiB (the whole sweep within {spread:.1f} %)",
            "note": "Table II network as stated, dataflow dependencies",
            "ok": 96 * KIB <= best <= 192 * KIB,
            "tolerance": "the best chunk within the paper's 96-192 KiB",
            "explanation": (
                "under the Table II preset TTO streams packet by packet (dataflow "
                "dependencies) and a short packet costs only its bytes, so the chunk "
                "size barely matters; the artifact preset models what makes it "
                "matter (whole 8 KiB messages, chunk-level forwarding)"
            ),
        },
        {
            "quantity": f"TTO bandwidth has an interior optimum over the chunk "
            f"({m}x{n}, {size // MIB} MiB), artifact preset",
            "paper": "bandwidth rises, peaks, then falls with the chunk (Fig. 14)",
            "ours": f"peak at {abest // KIB} KiB: {abw[i_best]:.2f} GiB/s against "
            f"{abw[0]:.2f} at {chunks[0] // KIB} KiB and {abw[-1]:.2f} at "
            f"{chunks[-1] // KIB} KiB",
            "note": "small chunks are padded to whole messages; large ones fill "
            "the trees' pipeline slowly (chunk-level forwarding)",
            "ok": bool(0 < i_best < len(chunks) - 1),
            "tolerance": "the best chunk is neither the smallest nor the largest",
        },
    ]
    ref = np.asarray(cols["reference_GiBps"], float)
    if np.isfinite(ref).all():
        flat = abw >= abw.max() * (1 - 0.025)
        rflat = ref >= ref.max() * (1 - 0.025)
        near = [c // KIB for c, f in zip(chunks, rflat, strict=True) if f]
        findings.append(
            {
                "quantity": f"best TTO chunk ({m}x{n}, {size // MIB} MiB), "
                "artifact preset",
                "paper": f"{paper}; the artifact's results peak at "
                f"{chunks[int(np.argmax(ref))] // KIB} KiB",
                "ours": f"{abest // KIB} KiB; within 2.5 % of the peak: "
                + ", ".join(
                    str(c // KIB) for c, f in zip(chunks, flat, strict=True) if f
                )
                + " KiB (the artifact: "
                + ", ".join(map(str, near))
                + " KiB)",
                "note": "mcm_artifact preset",
                "ok": 96 * KIB <= abest <= 192 * KIB,
                "tolerance": "the best chunk within the paper's 96-192 KiB",
                "explanation": "both curves are flat within 2.5 % over the same "
                "range of chunks; the artifact's small lead at its peak comes from "
                "its driver's per-flow scheduling cycles and buffer limits, which "
                "the preset does not model (more, smaller flows pay them more often)",
            }
        )
        findings += _agreement({**cols, "algorithm": ["TTO"] * len(chunks)}, "Fig. 14")
    return cols, findings


def plot_fig14(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Bandwidth against chunk size: both presets and the artifact's results."""
    ax = new_axes(ax)
    x = [c / KIB for c in cols["chunk_bytes"]]
    c = color("TTO")
    ax.plot(x, cols["artifact_GiBps"], marker="o", color=c, label="artifact preset")
    ax.plot(
        x,
        np.asarray(cols["GBps"]) * 1e9 / GIB,
        ls=":",
        marker=".",
        color="#0072B2",
        label="Table II as stated",
    )
    ref = np.asarray(cols.get("reference_GiBps", [math.nan] * len(x)), float)
    if np.isfinite(ref).any():
        ax.plot(
            x, ref, ls="none", marker="x", color="black", label="artifact's results"
        )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter("{x:g}")
    ax.set_xlabel("TTO chunk (KiB)")
    ax.set_ylabel("bandwidth (GiB/s)")
    ax.set_ylim(bottom=0)  # a 0.4 % spread stays flat, not a trend
    ax.set_title("TTO chunk size (Fig. 14)", fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(True, alpha=0.3)
    return ax


# ------------------------------------------------------------------ Fig. 10


def run_fig10(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """One training epoch per DNN and algorithm (Fig. 10), artifact preset."""
    from ..mcm import systolic, training

    shapes = [(4, 4), (5, 5)] if quick else [(8, 8), (9, 9)]
    models = ("AlphaGoZero", "alexnet") if quick else systolic.DNNS
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "mesh",
            "model",
            "algorithm",
            "chiplets_training",
            "compute_s",
            "artifact_compute_s",
            "allreduce_s",
            "reference_allreduce_s",
            "deviation_pct",
            "epoch_s",
            "artifact_epoch_s",
            "epoch_speedup_vs_ring",
            "allreduce_speedup_vs_ring",
        )
    }
    train = artifact_training()
    for m, n in shapes:
        for model in models:
            size = training.BYTES_PER_PARAMETER * systolic.dnn_parameters(model)
            compute = training.compute_time(model)
            # One sample per 256 x 256 array whatever the mesh: the artifact's
            # 8x8 cycles hold for 9x9 too.
            sel = (train["model"] == model) & (train["array_rows"] == 256)
            theirs = float(train["cycles"][sel][0]) * 1e-9 if sel.any() else math.nan
            rows = []
            for name in algorithms_for(m, n):
                label = paper_label(name)
                r = simulate_allreduce(name, m, n, size, ARTIFACT)
                ref = artifact_reference(label, m, n, size, figure="fig10", model=model)
                used = m * n - 1 if label == "TTO" else m * n
                rows.append((label, used, r.time_s, ref, 100 * (r.cycles / ref - 1)))
            ring = next(x for x in rows if x[0] == "Ring")
            ring_epoch = training.epoch_time(ring[1], compute, ring[2])
            for label, used, t, ref, dev in rows:
                epoch = training.epoch_time(used, compute, t)
                cols["mesh"].append(f"{m}x{n}")
                cols["model"].append(model)
                cols["algorithm"].append(label)
                cols["chiplets_training"].append(used)
                cols["compute_s"].append(compute)
                cols["artifact_compute_s"].append(theirs)
                cols["allreduce_s"].append(t)
                cols["reference_allreduce_s"].append(ref * 1e-9)
                cols["deviation_pct"].append(dev)
                cols["epoch_s"].append(epoch)
                cols["artifact_epoch_s"].append(
                    training.epoch_time(used, theirs, t)
                    if math.isfinite(theirs)
                    else math.nan
                )
                cols["epoch_speedup_vs_ring"].append(ring_epoch / epoch)
                cols["allreduce_speedup_vs_ring"].append(ring[2] / t)
    return cols, _fig10_findings(cols)


def _fig10_findings(cols: dict[str, list[Any]]) -> list[dict[str, Any]]:
    from ..mcm import training

    alg = np.asarray(cols["algorithm"])
    mesh_ = np.asarray(cols["mesh"])
    model = np.asarray(cols["model"])
    epoch = np.asarray(cols["epoch_s"], float)
    findings = _agreement(cols, "Fig. 10 (AllReduce of each DNN's gradients)")

    claims = [
        ("TTO", ("MultiTree",), 33, (1.04, 1.5)),
        ("TTO", ("RingBiEven", "RingBiOdd"), 29, (1.1, 1.69)),
        ("RingBiOdd", ("Ring",), 50, None),
        ("RingBiOdd", ("MultiTree",), 8, None),
    ]
    art_epoch = np.asarray(cols.get("artifact_epoch_s", [math.nan] * len(alg)), float)
    computes = [(epoch, "systolic model")]
    if np.isfinite(art_epoch).all():
        computes.append((art_epoch, "the artifact's SCALE-Sim cycles"))
    for epochs, what in computes:
        for fast, slow, reduction, span in claims:
            sp = _case_ratios(epochs, alg, fast, slow, (mesh_, model))
            if sp.size == 0:
                continue
            red = 100 * float(np.mean(1 - 1 / sp))
            name = slow[0] if len(slow) == 1 else "the bidirectional ring"
            findings.append(
                {
                    "quantity": f"Fig. 10: training-time reduction of {fast} over "
                    f"{name} (mean over DNNs and meshes; compute: {what})",
                    "paper": f"{reduction} % (abstract)",
                    "ours": f"{red:.0f} % (epoch speedups {sp.min():.2f}x to "
                    f"{sp.max():.2f}x over {sp.size} DNN x mesh cases)",
                    "note": "artifact preset AllReduce, one sample per 256 x 256 "
                    "PE, equations (1)-(2)",
                    "ok": abs(red - reduction) <= 10,
                    "tolerance": "within 10 percentage points",
                    "explanation": "an epoch is iterations x (compute + AllReduce); "
                    "the iterations follow equation (1) and the AllReduce times "
                    "agree with the artifact's own runs (the agreement findings "
                    "above); the paper's abstract does not say over which models "
                    "and meshes its reductions are averaged, and the compute "
                    "share decides the rest",
                }
            )
            if span is not None:
                findings.append(
                    _range_finding(
                        f"Fig. 10: range of {fast}'s epoch speedup over {name} "
                        f"(compute: {what})",
                        span,
                        "Section VII-C",
                        sp,
                        "per DNN and mesh",
                        slow[0],
                    )
                )
    ring = alg == "Ring"
    comp = np.asarray(cols["compute_s"], float)
    ar = np.asarray(cols["allreduce_s"], float)
    sel = ring & (model == "alexnet")
    if sel.any():
        ratio = float(np.min(comp[sel] / ar[sel]))
        findings.append(
            {
                "quantity": "Fig. 10: AlexNet's compute against its Ring AllReduce",
                "paper": "AlexNet's training time is computation dominant",
                "ours": f"compute is {ratio:.1f}x the AllReduce (or more)",
                "note": "per iteration, every mesh",
                "ok": ratio > 1,
                "tolerance": "compute above the AllReduce",
            }
        )
    # Section VIII-B's worked example, recomputed from the paper's own numbers.
    T, c_b, c_t = 1832399, 10350425, 7076228
    g = training.gain(64, T, c_b, c_t)
    over_tto_ar = g["gain"] / (g["I_tto"] * c_t)
    findings.append(
        {
            "quantity": "Section VIII-B worked example: TTO's gain over RingBiEven "
            "on 8x8, equations (1)-(2) with the paper's T, C_b, C_t",
            "paper": "gain 3930030731 cycles, i.e. 44 % improvement",
            "ours": f"gain {g['gain']:.0f} cycles ({g['I_base']} and {g['I_tto']} "
            f"iterations): {100 * g['reduction']:.1f} % of RingBiEven's epoch "
            f"({g['speedup']:.3f}x)",
            "note": "pure arithmetic on the paper's numbers",
            "ok": abs(100 * g["reduction"] - 44) <= 1,
            "tolerance": "within 1 percentage point",
            "explanation": f"the gain is reproduced exactly; 44 % is the gain over "
            f"TTO's total AllReduce time I_tto C_t ({100 * over_tto_ar:.1f} %), "
            "not over the training time, which drops by "
            f"{100 * g['reduction']:.1f} %",
        }
    )
    return findings


# ------------------------------------------------------------------ Fig. 11

#: Layers below this many parameters join the next one's AllReduce (the
#: artifact's src/model.py groups them the same way).
_SMALL_LAYER = 32768
#: Section VII-C: TTO's speedup ranges with layer-wise overlap (8x8).
_FIG11_RANGES = {
    "Ring": (0.99, 2.5),
    "Ring-2D": (0.99, 2.35),
    "DBTree": (1.03, 5.3),
    "MultiTree": (0.98, 1.54),
    "RingBiEven": (0.99, 1.6),
}


def _gradient_groups(params: list[int]) -> list[tuple[int, int]]:
    """(first layer, parameters) of each AllReduce, small layers joined on."""
    groups, pending, first = [], 0, None
    for i, p in enumerate(params):
        first = i if first is None else first
        pending += p
        if p >= _SMALL_LAYER:
            groups.append((first, pending))
            pending, first = 0, None
    if pending:
        groups.append((first, pending))
    return groups


def _overlapped(
    ready: dict[int, float], groups: list[tuple[int, int]], total: float, ar: Any
) -> float:
    """Iteration time with each group's AllReduce overlapped with the backward.

    A group's AllReduce starts once its gradient is ready and the previous
    AllReduce is done (backward order).
    """
    end = 0.0
    for first, size in sorted(groups, key=lambda g: -g[0]):
        end = max(ready[first], end) + ar(size)
    return max(total, end)


def run_fig11(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Layer-wise AllReduce overlapped with the backward pass (Fig. 11), 8x8."""
    from ..mcm import systolic, training

    m = n = 4 if quick else 8
    models = ("AlphaGoZero", "alexnet") if quick else systolic.DNNS
    lay = artifact_layers()
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "model",
            "compute",
            "algorithm",
            "iteration_s",
            "overlapped_s",
            "allreduce_sum_s",
            "hidden_pct",
            "epoch_s",
            "epoch_speedup_vs_ring",
        )
    }
    for model in models:
        layers = systolic.dnn_layers(model)
        params = [x.parameters for x in layers]
        groups = _gradient_groups(params)
        # Our readiness: forward, then backward from the last layer.
        cyc = [
            systolic.layer_cycles(x, 256, 256, input_gradient=i > 0)
            for i, x in enumerate(layers)
        ]
        fwd = sum(c["forward"] for c in cyc)
        ours, t = {}, float(fwd)
        for i in range(len(layers) - 1, -1, -1):
            t += cyc[i]["input_gradient"] + cyc[i]["weight_gradient"]
            ours[i] = t * 1e-9
        computes = [("systolic model", ours, t * 1e-9)]
        sel = (lay["model"] == model) & (lay["array"] == 256)
        if sel.any():
            theirs = {
                int(k): float(v) * 1e-9
                for k, v in zip(
                    lay["layer"][sel], lay["ready_cycles"][sel], strict=True
                )
            }
            computes.append(("artifact", theirs, max(theirs.values())))
        cache: dict[tuple[str, int], float] = {}
        rows = []
        for name in algorithms_for(m, n):
            label = paper_label(name)

            def ar(size: int, name: str = name, cache: dict = cache) -> float:
                key = (name, size)
                if key not in cache:
                    b = training.BYTES_PER_PARAMETER * size
                    cache[key] = simulate_allreduce(name, m, n, b, ARTIFACT).time_s
                return cache[key]

            used = m * n - 1 if label == "TTO" else m * n
            total_ar = sum(ar(sz) for _, sz in groups)
            for what, ready, total in computes:
                it = _overlapped(ready, groups, total, ar)
                hidden = 100 * (1 - (it - total) / total_ar) if total_ar else 100.0
                rows.append(
                    (what, label, total + total_ar, it, total_ar, hidden,
                     training.epoch_time(used, it, 0.0))
                )  # fmt: skip
        for what in dict.fromkeys(r[0] for r in rows):
            ring = next(r for r in rows if r[0] == what and r[1] == "Ring")
            for r in (r for r in rows if r[0] == what):
                cols["model"].append(model)
                cols["compute"].append(what)
                cols["algorithm"].append(r[1])
                cols["iteration_s"].append(r[2])
                cols["overlapped_s"].append(r[3])
                cols["allreduce_sum_s"].append(r[4])
                cols["hidden_pct"].append(r[5])
                cols["epoch_s"].append(r[6])
                cols["epoch_speedup_vs_ring"].append(ring[6] / r[6])
    return cols, _fig11_findings(cols)


def _fig11_findings(cols: dict[str, list[Any]]) -> list[dict[str, Any]]:
    alg = np.asarray(cols["algorithm"])
    model = np.asarray(cols["model"])
    comp = np.asarray(cols["compute"])
    epoch = np.asarray(cols["epoch_s"], float)
    hidden = np.asarray(cols["hidden_pct"], float)
    findings = []
    for what in dict.fromkeys(comp):
        for slow, span in _FIG11_RANGES.items():
            sp = _case_ratios(epoch, alg, "TTO", slow, (model,), comp == what)
            if sp.size == 0:
                continue
            findings.append(
                _range_finding(
                    f"Fig. 11: range of TTO's epoch speedup over {slow} with "
                    f"layer-wise overlap (compute: {what})",
                    span,
                    "Section VII-C",
                    sp,
                    "each gradient's AllReduce starts when the backward pass has "
                    "produced it and the previous AllReduce is done",
                    slow,
                )
            )
        heavy = ("alexnet", "FasterRCNN", "Googlenet")
        light = ("NCF_recommendation", "Transformer")
        sel = (comp == what) & (alg == "TTO")
        h = {md: hidden[sel & (model == md)] for md in heavy + light}
        if all(v.size for v in h.values()):
            hv = min(float(h[md][0]) for md in heavy)
            lv = max(float(h[md][0]) for md in light)
            findings.append(
                {
                    "quantity": "Fig. 11: share of TTO's AllReduce hidden behind the "
                    f"backward pass (compute: {what})",
                    "paper": "much overlap for AlexNet, FasterRCNN, GoogLeNet; "
                    "minimal for NCF and Transformer",
                    "ours": f"at least {hv:.0f} % for the first three, at most "
                    f"{lv:.0f} % for the last two",
                    "note": "1 - (overlapped iteration - compute) / sum of the "
                    "AllReduce times",
                    "ok": hv > lv,
                    "tolerance": "every compute-heavy DNN hides more than every "
                    "communication-heavy one",
                }
            )
    return findings


def plot_fig11(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Epoch speedup over Ring with overlap, per DNN and algorithm."""
    ax = new_axes(ax)
    comp = np.asarray(cols["compute"])
    what = "artifact" if "artifact" in set(comp) else comp[0]
    sel = comp == what
    alg = np.asarray(cols["algorithm"])[sel]
    model = np.asarray(cols["model"])[sel]
    sp = np.asarray(cols["epoch_speedup_vs_ring"], float)[sel]
    models = list(dict.fromkeys(model))
    _bars(
        ax,
        models,
        {
            a: [sp[(alg == a) & (model == md)][0] for md in models]
            for a in dict.fromkeys(alg)
        },
    )
    ax.set_ylabel("epoch speedup over Ring")
    ax.set_title(
        f"Layer-wise AllReduce overlapped with backward, 8x8 (Fig. 11; compute: "
        f"{what})",
        fontsize="medium",
    )
    ax.legend(fontsize=6, ncol=3)
    return ax


# ------------------------------------------------------------------ Fig. 13

#: Section VIII-A's TTO AllReduce speedups on Simba (32 x 32 and 16 x 16).
_FIG13_ALLREDUCE = {
    "Ring": 2.76,
    "Ring-2D": 2.52,
    "DBTree": 9.7,
    "MultiTree": 1.64,
    "RingBiEven": 1.41,
}
#: ... and its end-to-end speedup ranges per iteration.
_FIG13_E2E = {
    "Ring": (0.97, 1.8),
    "Ring-2D": (0.97, 1.73),
    "DBTree": (0.98, 5.56),
    "MultiTree": (0.97, 1.31),
    "RingBiEven": (0.97, 1.17),
}


def run_fig13(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """One iteration on Simba (6x6, 16 PEs per chiplet) for two MAC arrays."""
    from ..mcm import systolic, training

    m = n = 4 if quick else 6
    models = ("AlphaGoZero", "alexnet") if quick else systolic.DNNS
    arrays = (32, 16)
    train = artifact_training()
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "model",
            "array",
            "algorithm",
            "allreduce_s",
            "reference_allreduce_s",
            "deviation_pct",
            "compute_s",
            "artifact_compute_s",
            "iteration_s",
            "artifact_iteration_s",
        )
    }
    for model in models:
        size = training.BYTES_PER_PARAMETER * systolic.dnn_parameters(model)
        times = {
            paper_label(a): simulate_allreduce(a, m, n, size, ARTIFACT).time_s
            for a in algorithms_for(m, n)
        }
        for a in arrays:
            ours = training.compute_time(model, (a, a))
            sel = (train["model"] == model) & (train["array_rows"] == a)
            theirs = float(train["cycles"][sel][0]) * 1e-9 if sel.any() else math.nan
            for label, t in times.items():
                ref = artifact_reference(
                    label, m, n, size, figure="fig13", model=model, array=a
                )
                cols["model"].append(model)
                cols["array"].append(a)
                cols["algorithm"].append(label)
                cols["allreduce_s"].append(t)
                cols["reference_allreduce_s"].append(ref * 1e-9)
                cols["deviation_pct"].append(100 * (t * 1e9 / ref - 1))
                cols["compute_s"].append(ours)
                cols["artifact_compute_s"].append(theirs)
                cols["iteration_s"].append(ours + t)
                cols["artifact_iteration_s"].append(theirs + t)
    return cols, _fig13_findings(cols)


def _fig13_findings(cols: dict[str, list[Any]]) -> list[dict[str, Any]]:
    alg = np.asarray(cols["algorithm"])
    model = np.asarray(cols["model"])
    array = np.asarray(cols["array"])
    ar = np.asarray(cols["allreduce_s"], float)
    comp = np.asarray(cols["compute_s"], float)
    acomp = np.asarray(cols["artifact_compute_s"], float)
    findings = _agreement(cols, "Fig. 13 (AllReduce of each DNN's gradients, 6x6)")
    tto = alg == "TTO"
    if np.isfinite(acomp).any():
        ratio = comp[tto] / acomp[tto]
        worst = int(np.argmax(np.abs(np.log(ratio))))
        findings.append(
            {
                "quantity": "Fig. 13: compute per iteration, systolic model against "
                "the artifact's SCALE-Sim cycles (7 DNNs, 32 x 32 and 16 x 16)",
                "paper": "the authors' extended SCALE-Sim (TTO_HPCA_2024)",
                "ours": f"median ratio {float(np.median(ratio)):.2f}, from "
                f"{ratio.min():.2f} to {ratio.max():.2f} (furthest: "
                f"{model[tto][worst]}, {array[tto][worst]} x {array[tto][worst]})",
                "note": "output-stationary analytical runtime, one sample per PE",
                "ok": bool(abs(float(np.median(ratio)) - 1) <= 0.2),
                "tolerance": "median ratio within 20 % of 1",
            }
        )
    for slow, claim in _FIG13_ALLREDUCE.items():
        sp = _case_ratios(ar, alg, "TTO", slow, (model,), array == array[0])
        if sp.size == 0:
            continue
        got = _geo_mean(list(sp))
        f = {
            "quantity": f"Fig. 13: TTO's AllReduce speedup over {slow} (6x6, "
            "geometric mean over DNNs)",
            "paper": f"about {claim}x (Section VIII-A)",
            "ours": f"{got:.2f}x",
            "note": "mcm_artifact preset",
            "ok": bool(abs(got / claim - 1) <= 0.25),
            "tolerance": "within 25 %",
        }
        if slow in _NOT_A_REFERENCE:
            f["explanation"] = _no_reference(slow)
        findings.append(f)
    for compute, what in ((comp, "systolic model"), (acomp, "the artifact's cycles")):
        if not np.isfinite(compute).all():
            continue
        it = compute + ar
        for slow, span in _FIG13_E2E.items():
            sp = _case_ratios(it, alg, "TTO", slow, (model, array))
            if sp.size == 0:
                continue
            findings.append(
                _range_finding(
                    f"Fig. 13: range of TTO's iteration speedup over {slow} "
                    f"(compute: {what})",
                    span,
                    "Section VIII-A",
                    sp,
                    "per DNN and MAC array; AllReduce under mcm_artifact",
                    slow,
                )
            )
    # Smaller arrays: more compute, less end-to-end speedup (Section VIII-A).
    it = acomp + ar if np.isfinite(acomp).all() else comp + ar
    means = {
        int(a): _geo_mean(
            list(_case_ratios(it, alg, "TTO", "Ring", (model,), array == a))
        )
        for a in dict.fromkeys(array)
    }
    if len(means) == 2:
        big, small = sorted(means, reverse=True)
        findings.append(
            {
                "quantity": "Fig. 13: TTO's mean iteration speedup over Ring, "
                f"{big} x {big} against {small} x {small} MAC arrays",
                "paper": "smaller MAC arrays show less speedup",
                "ours": f"{means[big]:.2f}x against {means[small]:.2f}x",
                "note": "geometric mean over the DNNs",
                "ok": bool(means[small] < means[big]),
                "tolerance": "less speedup with the smaller array",
            }
        )
    return findings


def plot_fig13(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Iteration speedup over Ring per DNN and algorithm, one panel per array.

    Bars: compute from the artifact's SCALE-Sim cycles; black ticks: from
    the systolic model.
    """
    ax = new_axes(ax)
    arrays = list(dict.fromkeys(cols["array"]))
    axes = _panels(ax, len(arrays))
    alg = np.asarray(cols["algorithm"])
    model = np.asarray(cols["model"])
    array = np.asarray(cols["array"])
    it = np.asarray(cols["artifact_iteration_s"], float)
    if not np.isfinite(it).all():
        it = np.asarray(cols["iteration_s"], float)
    ours = np.asarray(cols["iteration_s"], float)
    for pax, a in zip(axes, arrays, strict=True):
        models = list(dict.fromkeys(model[array == a]))
        algs = list(dict.fromkeys(alg[array == a]))

        def over_ring(t: np.ndarray, lab: str, a: Any = a) -> list[float]:
            return list(_case_ratios(t, alg, lab, "Ring", (model,), array == a))

        pos = _bars(pax, models, {lab: over_ring(it, lab) for lab in algs})
        for lab in algs:
            pax.plot(
                pos[lab],
                over_ring(ours, lab),
                ls="none",
                marker="_",
                color="black",
                ms=6,
            )
        pax.set_ylabel("iteration speedup over Ring")
        pax.set_title(f"{a} x {a} MAC arrays", fontsize="medium")
    axes[0].legend(fontsize=6, ncol=3)
    axes[0].figure.suptitle(
        "Simba 6x6, one training iteration (Fig. 13); ticks: systolic-model compute"
    )
    return axes[0]


def plot_fig10(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Epoch speedup over Ring per DNN and algorithm, one panel per mesh."""
    ax = new_axes(ax)
    meshes = list(dict.fromkeys(cols["mesh"]))
    axes = _panels(ax, len(meshes))
    mesh_ = np.asarray(cols["mesh"])
    alg = np.asarray(cols["algorithm"])
    model = np.asarray(cols["model"])
    sp = np.asarray(cols["epoch_speedup_vs_ring"], float)
    for pax, ms in zip(axes, meshes, strict=True):
        models = list(dict.fromkeys(model[mesh_ == ms]))
        _bars(
            pax,
            models,
            {
                a: [sp[(mesh_ == ms) & (alg == a) & (model == md)][0] for md in models]
                for a in dict.fromkeys(alg[mesh_ == ms])
            },
        )
        pax.set_ylabel("epoch speedup over Ring")
        pax.set_title(f"{ms} mesh", fontsize="medium")
    _legend_once(axes, fontsize=6, ncol=4)
    axes[0].figure.suptitle(
        "One training epoch, artifact preset AllReduce + systolic compute (Fig. 10)"
    )
    return axes[0]


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
        "mesh_fig10",
        "Training time of seven DNNs on 8x8 and 9x9 (Fig. 10)",
        "TTO reduces training time by 33 % over MultiTree and 29 % over the "
        "bidirectional ring; RingBiOdd by 50 % over Ring and 8 % over MultiTree",
        run_fig10,
        plot_fig10,
    ),
    (
        "mesh_fig11",
        "Layer-wise AllReduce overlapped with the backward pass, 8x8 (Fig. 11)",
        "with overlap, TTO is 0.99-2.5x faster than Ring, 0.98-1.54x than "
        "MultiTree and 0.99-1.6x than RingBiEven; compute-heavy DNNs hide much "
        "of their AllReduce, NCF and Transformer little",
        run_fig11,
        plot_fig11,
    ),
    (
        "mesh_fig13",
        "One training iteration on Simba 6x6, 32 x 32 and 16 x 16 MAC arrays (Fig. 13)",
        "TTO's AllReduce speedups of about 2.76x, 2.52x, 9.7x, 1.64x and 1.41x "
        "over Ring, Ring-2D, DBTree, MultiTree and RingBiEven; smaller MAC "
        "arrays give less end-to-end speedup",
        run_fig13,
        plot_fig13,
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
