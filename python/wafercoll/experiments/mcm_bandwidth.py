"""Paper 004's AllReduce on meshes of chiplets: links, bandwidth, scalability.

Every AllReduce is simulated under :data:`wafercoll.mcm.TABLE_II` (the
network as the paper states it) and :data:`wafercoll.mcm.ARTIFACT` (as the
authors' BookSim artifact simulates it), or counted in unit timesteps:

* ``mesh_table1``: used-link percentage per algorithm on 8x8 and 9x9 (Table I);
* ``mesh_fig8``: AllReduce bandwidth against size, 1 MiB .. 1 GiB (Fig. 8);
* ``mesh_fig9``: scalability with 375 KiB x N, 3x3 .. 16x16 (Fig. 9);
* ``mesh_fig12``: busy links over time, 9x9, 256 MiB (Fig. 12).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..algorithms import build
from ..mcm import ARTIFACT, FIGURE_TIMESTEPS, TABLE_II
from ..palette import REFERENCE_LABELS, color, marker, reference_style
from ..simulate import simulate
from ..topology import mesh
from . import finding, new_axes, progress
from .judges import Faster, Value
from .mcm_common import (
    GIB,
    KIB,
    MIB,
    agreement,
    algorithms_for,
    append_bandwidths,
    artifact_counterpart,
    artifact_reference,
    artifact_variant_runs,
    geo_mean,
    graded,
    legend_once,
    overall_agreement,
    panels,
    paper_label,
    simulate_presets,
    slug,
)

__all__ = [
    "plot_fig8",
    "plot_fig9",
    "plot_fig12",
    "plot_table1",
    "run_fig8",
    "run_fig9",
    "run_fig12",
    "run_table1",
]


# ------------------------------------------------------------------ Table I


#: Table I's used-link percentages (8x8 for "even", 9x9 for "odd").
TABLE1_PAPER_PCT = {
    ("even", "Ring"): 29,
    ("odd", "Ring"): 28,
    ("even", "RingBiEven"): 57,
    ("even", "Ring-2D"): 55,
    ("odd", "Ring-2D"): 53,
    ("even", "MultiTree"): 53,
    ("odd", "MultiTree"): 51,
}


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
            "paper_pct",
        )
    }
    for m, n in shapes:
        N = m * n
        pieces = 2 * N * (N - 1)  # every algorithm's blocks divide it
        for name in algorithms_for(m, n):
            kw = {"chunk_bytes": 24} if name == "mesh_tto_allreduce" else {}
            top = mesh(m, n)
            s = build(name, topology=top, size_bytes=pieces, **kw)
            unit = simulate(s, top, FIGURE_TIMESTEPS)
            r, art = simulate_presets(name, m, n, size_t2, (TABLE_II, ARTIFACT))
            cols["artifact_pct"].append(100 * art.link_utilization)
            cols["mesh"].append(f"{m}x{n}")
            cols["algorithm"].append(paper_label(name))
            cols["unit_pct"].append(100 * unit.link_utilization)
            cols["table2_pct"].append(100 * r.link_utilization)
            cols["links_pct"].append(100 * r.links_used / r.num_links)
            parity = "odd" if m % 2 else "even"
            cols["paper_pct"].append(
                TABLE1_PAPER_PCT.get((parity, paper_label(name)), math.nan)
            )
    paper = TABLE1_PAPER_PCT
    findings = []
    for i, alg in enumerate(cols["algorithm"]):
        m = int(cols["mesh"][i].split("x")[0])
        key = ("odd" if m % 2 else "even", alg)
        if key not in paper:
            continue
        findings.append(
            finding(
                f"used_links.{slug(alg)}.{key[0]}",
                f"used links, {alg} on {cols['mesh'][i]} (%)",
                f"{paper[key]} (8x8 / 9x9)",
                f"{cols['unit_pct'][i]:.1f} (unit timesteps), "
                f"{cols['table2_pct'][i]:.0f} (Table II), "
                f"{cols['artifact_pct'][i]:.0f} (artifact preset), "
                f"{cols['links_pct'][i]:.0f} of links carry data",
                Value(str(paper[key]), unit=" %"),
                cols["unit_pct"][i],
                note="mean busy fraction of all directed links over the "
                "unit-timestep run (the table's counting)",
            )
        )
    return cols, findings


def plot_table1(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Bars of the used-link percentage per algorithm and mesh.

    Hollow pentagons: the percentage Table I states (where it states one).
    """
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
    paper = np.asarray(cols.get("paper_pct", [math.nan] * len(x)), float)
    if np.isfinite(paper).any():
        ax.plot(x, paper, **reference_style("black"), label=REFERENCE_LABELS["paper"])
    ax.set_xticks(x, labels, fontsize=7.5, rotation=90)
    ax.set_ylabel("mean busy links (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Link use of AllReduce algorithms (Table I)", fontsize="medium")
    ax.legend(
        fontsize=8, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.06),
        frameon=False,
    )  # fmt: skip
    return ax


# ------------------------------------------------------------------ Fig. 8


def run_fig8(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """AllReduce bandwidth (size / time) against size on four meshes, two presets."""
    shapes = [(4, 4), (5, 5)] if quick else [(4, 4), (5, 5), (8, 8), (9, 9)]
    # every size the artifact ran (its run scripts: 1 MiB to 1 GiB in steps
    # of 2x; Section VII-A: "from 1MB to 1GB")
    sizes = [MIB, 4 * MIB] if quick else [MIB * 2**k for k in range(11)]
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
    skipped: list[str] = []
    for m, n, size in progress(grid, "mesh_fig8"):
        for name in algorithms_for(m, n):
            r, a = simulate_presets(name, m, n, size, (TABLE_II, ARTIFACT))
            ref = artifact_reference(paper_label(name), m, n, size)
            cols["mesh"].append(f"{m}x{n}")
            cols["algorithm"].append(paper_label(name))
            cols["size_bytes"].append(size)
            append_bandwidths(cols, size, r, a, ref)
        # the artifact's own schedules, under the artifact preset only
        runs, miss = artifact_variant_runs(m, n, size)
        skipped += [s for s in miss if s not in skipped]
        for label, a, ref in runs:
            cols["mesh"].append(f"{m}x{n}")
            cols["algorithm"].append(label)
            cols["size_bytes"].append(size)
            append_bandwidths(cols, size, None, a, ref)
    findings = _speedups(cols, "Fig. 8", "3.2")
    findings += _speedups(cols, "Fig. 8", "3.2", preset="artifact")
    findings += agreement(cols, "Fig. 8", skipped)
    findings.append(overall_agreement(cols, "Fig. 8"))
    return cols, findings


def _speedups(
    cols: dict[str, list[Any]], where: str, over_ring: str, preset: str = "table_ii"
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
        return geo_mean(out)

    rows: list[tuple[str, Any, str]] = [
        ("TTO", "MultiTree", "1.6"),
        ("TTO", ("RingBiEven", "RingBiOdd"), "1.4"),
        ("TTO", "Ring", over_ring),
        ("RingBiOdd", "Ring", "1.9"),
        ("RingBiOdd", "MultiTree", "1.1"),
    ]
    if where == "Fig. 8":  # Section VII-A also compares with Ring-2D and DBTree
        rows += [
            ("TTO", "Ring-2D", "2.6"),
            ("TTO", "DBTree", "5.3"),
            ("RingBiOdd", "Ring-2D", "1.75"),
            ("RingBiOdd", "DBTree", "3.7"),
        ]
    note = (
        "Table II network as stated (25 GB/s, 21 ns, 8 KiB packets)"
        if preset == "table_ii"
        else "mcm_artifact preset (the network as the authors' BookSim runs it)"
    )
    # Under the artifact preset, a comparison with a label whose artifact run
    # is another schedule or machine is with that run where it ran beside ours.
    present = cols["algorithm"] if preset == "artifact" else ()
    out = []
    for fast, slow, claim in rows:
        slows = (slow,) if isinstance(slow, str) else slow
        against = tuple(artifact_counterpart(sl, present) for sl in slows)
        got = ratio(fast, against)
        if not math.isfinite(got):
            continue  # e.g. quick mode has no odd mesh for RingBiOdd
        name = slow if isinstance(slow, str) else "bidirectional ring"
        here = note
        if against != slows:
            here += f"; against {', '.join(against)}, the artifact's own run"
        f = finding(
            f"speedup.{slug(fast)}_over_{slug(name)}"
            + ("" if preset == "table_ii" else ".artifact"),
            f"{where}: mean speedup of {fast} over {name}"
            + ("" if preset == "table_ii" else " (artifact preset)"),
            f"{claim}x",
            f"{got:.2f}x (geometric mean over meshes and sizes)",
            Faster(claim),
            got,
            note=here,
        )
        out.append(graded(f, slow, present))
    return out


def plot_fig8(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """One panel per mesh: bandwidth against size per algorithm.

    Lines: the artifact preset (GiB/s); dotted: Table II as stated (GB/s
    converted to GiB/s); dash-dotted, hollow markers: the artifact's own
    schedules (artifact preset only); hollow pentagons: the artifact's
    committed results.
    """
    ax = new_axes(ax)
    meshes = list(dict.fromkeys(cols["mesh"]))
    axes = panels(ax, len(meshes))
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
                **_variant_style(a),
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
                pax.plot(x, ref, **reference_style(c))
        pax.set_xscale("log", base=2)
        pax.xaxis.set_major_formatter("{x:g}")
        pax.set_title(f"{m} mesh", fontsize="medium")
        pax.set_xlabel("AllReduce size (MiB)")
        pax.grid(True, alpha=0.3)
    axes[0].figure.supylabel("bandwidth (GiB/s)", fontsize="medium")
    legend_once(axes, keys=_preset_keys(cols.get("reference_GiBps", ())))
    axes[0].figure.suptitle(
        "AllReduce bandwidth on meshes of chiplets (Fig. 8)", fontsize="large"
    )
    return axes[0]


def _variant_style(label: str) -> dict[str, Any]:
    """Line style of the artifact's own schedules (they share their colour)."""
    return {"ls": "-.", "mfc": "none"} if label.endswith("(artifact)") else {}


def _preset_keys(reference: Any) -> list[tuple[Any, str]]:
    """Legend keys of the line styles: presets and, if any, the artifact."""
    from matplotlib.lines import Line2D

    keys = [
        (Line2D([], [], color="0.4", lw=1.2), "artifact preset (ours)"),
        (Line2D([], [], color="0.4", lw=1, ls=":"), "Table II as stated (ours)"),
    ]
    if np.isfinite(np.asarray(reference, float)).any():
        keys.append(
            (Line2D([], [], **reference_style("0.2")), REFERENCE_LABELS["artifact"])
        )
    return keys


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
            "artifact_ref_time_s",
            "deviation_pct",
        )
    }
    skipped: list[str] = []
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
            ref = artifact_reference(paper_label(name), n, n, size, figure="fig9")
            cols["artifact_ref_time_s"].append(ref * 1e-9)  # 1 GHz cycles
            cols["deviation_pct"].append(100 * (a.cycles / ref - 1))
            if name == "mesh_ring_allreduce" and n in (3, 4):
                base["odd" if n % 2 else "even"] = r.time_s
                abase["odd" if n % 2 else "even"] = a.time_s
        # the artifact's own schedules, under the artifact preset only
        runs, miss = artifact_variant_runs(n, n, size, figure="fig9")
        skipped += miss
        for label, a, ref in runs:
            cols["mesh"].append(f"{n}x{n}")
            cols["n"].append(n)
            cols["algorithm"].append(label)
            cols["size_bytes"].append(size)
            cols["time_s"].append(math.nan)
            cols["artifact_time_s"].append(a.time_s)
            cols["artifact_ref_time_s"].append(ref * 1e-9)
            cols["deviation_pct"].append(100 * (a.cycles / ref - 1))
    for i, n in enumerate(cols["n"]):
        par = "odd" if n % 2 else "even"
        cols["relative"].append(cols["time_s"][i] / base[par])
        cols["artifact_relative"].append(cols["artifact_time_s"][i] / abase[par])
    findings = _speedups(cols, "Fig. 9", "2.8")
    findings += _speedups(cols, "Fig. 9", "2.8", preset="artifact")
    findings += agreement(cols, "Fig. 9", skipped)
    findings.append(overall_agreement(cols, "Fig. 9"))
    return cols, findings


def plot_fig9(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Relative time against chiplets, one line per algorithm (even and odd).

    Lines: ours under the artifact preset (hollow markers: the artifact's own
    schedules); hollow pentagons: the artifact's committed runs, relative to
    its own Ring on 4x4 (even) or 3x3 (odd).
    """
    from matplotlib.lines import Line2D

    from ..plot import figure_legend

    ax = new_axes(ax)
    n = np.asarray(cols["n"])
    alg = np.asarray(cols["algorithm"])
    ref = np.asarray(cols.get("artifact_ref_time_s", [math.nan] * n.size), float)
    ref_rel = np.full(n.size, math.nan)
    for parity, first in ((0, 4), (1, 3)):
        base = ref[(alg == "Ring") & (n == first)]
        if base.size and math.isfinite(base[0]):
            ref_rel[n % 2 == parity] = ref[n % 2 == parity] / base[0]
    for a in dict.fromkeys(cols["algorithm"]):
        for parity, style in ((0, "-"), (1, "--")):
            idx = np.flatnonzero((alg == a) & (n % 2 == parity))
            if idx.size == 0:
                continue
            x = n[idx] ** 2
            ax.plot(
                x,
                np.asarray(cols["artifact_relative"], float)[idx],
                style,
                color=color(a),
                marker=marker(a),
                ms=4,
                label=a,
                **({"mfc": "none"} if _variant_style(a) else {}),
            )
            if np.isfinite(ref_rel[idx]).any():
                ax.plot(x, ref_rel[idx], **reference_style(color(a)))
    ax.set_xlabel("chiplets N (n x n mesh)")
    ax.set_ylabel("time / Ring on 4x4 (even) or 3x3 (odd)")
    ax.set_title(
        "Scalability, 375 KiB x N, artifact preset (Fig. 9)", fontsize="medium"
    )
    ax.grid(True, alpha=0.3)
    seen: dict[str, Any] = {}
    for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
        seen.setdefault(lab, h)
    seen["even n (ours)"] = Line2D([], [], color="0.4")
    seen["odd n (ours)"] = Line2D([], [], color="0.4", ls="--")
    if np.isfinite(ref_rel).any():
        seen[REFERENCE_LABELS["artifact"]] = Line2D([], [], **reference_style("0.2"))
    figure_legend(ax.figure, list(seen.values()), list(seen), ncol=5)
    return ax


# ------------------------------------------------------------------ Fig. 12


#: Mean link utilization the paper states for Fig. 12 (Section VII-D, %).
FIG12_PAPER_MEAN_PCT = {"TTO": 83, "RingBiOdd": 57, "Ring": 30}


def run_fig12(quick: bool = False) -> tuple[dict[str, list[Any]], list[dict]]:
    """Fraction of busy links over normalised time, 9x9, 256 MiB."""
    m = n = 3 if quick else 9
    size = MIB if quick else 256 * MIB
    bins = 50
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "preset",
            "algorithm",
            "t_frac",
            "busy_pct",
            "time_s",
            "mean_pct",
            "paper_mean_pct",
        )
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
                cols["paper_mean_pct"].append(
                    FIG12_PAPER_MEAN_PCT.get(paper_label(name), math.nan)
                )
    findings = [
        finding(
            f"link_utilization.{slug(a)}"
            + ("" if preset == "table_ii" else ".artifact"),
            f"mean link utilization of {a} ({m}x{n}, {size // MIB} MiB)"
            + ("" if preset == "table_ii" else ", artifact preset"),
            f"about {claim} %",
            f"{means[(preset, a)]:.0f} %",
            Value(
                claim,
                abs=5,
                why="'about', read off Fig. 12: a band stated here",
                unit=" %",
            ),
            means[(preset, a)],
            note="busy time of all directed links / (links x makespan)",
        )
        for preset in ("table_ii", "artifact")
        for a, claim in FIG12_PAPER_MEAN_PCT.items()
    ]
    return cols, findings


def plot_fig12(cols: dict[str, list[Any]], ax: Any = None) -> Any:
    """Busy links (%) against the fraction of each run's time, per preset.

    Each line's mean is in its legend entry; hollow pentagons at the right
    edge mark the mean utilization the paper states.
    """
    ax = new_axes(ax)
    presets = list(
        dict.fromkeys(cols.get("preset", ["table_ii"] * len(cols["t_frac"])))
    )
    axes = panels(ax, len(presets))
    pre = np.asarray(cols.get("preset", ["table_ii"] * len(cols["t_frac"])))
    paper = np.asarray(cols.get("paper_mean_pct", [math.nan] * pre.size), float)
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
            if math.isfinite(paper[idx[0]]):
                pax.plot(
                    1.03, paper[idx[0]], clip_on=False, **reference_style(color(a))
                )
        if np.isfinite(paper).any():
            pax.plot([], [], **reference_style("0.2"), label=REFERENCE_LABELS["paper"])
        pax.set_xlabel("fraction of the AllReduce time")
        pax.set_xlim(0, 1.06)
        pax.set_ylim(0, 105)  # a line at 100 % stays clear of the frame
        pax.set_title(
            "Table II as stated" if preset == "table_ii" else "artifact preset",
            fontsize="medium",
        )
        pax.legend(
            fontsize=8,
            ncol=2,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.2),
            frameon=False,
        )
        pax.grid(True, alpha=0.3)
    axes[0].figure.supylabel("busy links (%)", fontsize="medium")
    axes[0].figure.suptitle("Link utilization over time (Fig. 12)")
    return axes[0]
