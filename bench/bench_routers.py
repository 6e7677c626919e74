"""The router engine beside the default engine and BookSim, on flows that share links.

``simulate(..., engine="routers")`` gives each link a finite input buffer
with back-pressure and lets it take its router's input ports in turn. This
script runs both engines on sets of 300- or 200-message flows on the network
of the MCM paper's artifact (``wc.mcm.artifact_dbtree_topology(16)``: four
chiplets per router on 1-cycle channels, 21-cycle router links, 8 KiB
messages of 17 flits; ``wc.mcm.ARTIFACT`` with the anynet file's per-link
rates), with 74 packets per buffer: 4 virtual channels x 318 flits per input
port (``anynet_mesh_16_200.cfg``) over 17 flits per message.

The BookSim column is what the artifact's own BookSim (sabuj7177/TTO_HPCA_2024
156128c, ``src/booksim2``, built with its Makefile and its pybind module)
gives when driven directly with the same flows: one network interface per
chiplet, each flow's messages issued back to back as the artifact's
``src/booksim.py`` issues them, every message read out at its destination each
cycle. Those cycles were measured once and are reference data here, not
computed by this script; the script prints how far each engine is from them.

Also times the engines on the artifact's DBTree at 256 MiB on 9x9, and the
router engine behind the artifact's driver on its DBTree, Ring-2D and
MultiTree there (``--speed``: only that). With
``--fig8``, runs the artifact's own DBTree, Ring-2D and MultiTree (the
registered artifact variants with the schedules ``wafercoll reproduce`` runs
in Fig. 8) under both engines, and under the router engine behind the
artifact's driver (``wc.mcm.hmc_driver``, as ``reproduce`` runs them), at
every Fig. 8 point the artifact committed, and prints how far each is from
the artifact's cycles and how many are within 5 %.

Run: ``python bench/bench_routers.py [--fig8 | --speed]``.
"""

from __future__ import annotations

import math
import sys
import time

import wafercoll as wc
from wafercoll.experiments import mcm_common

#: (flows as (source chiplet, destination chiplet, messages), BookSim's
#: finish cycle of each flow), measured as the module docstring says.
CASES = [
    ([(4, 8, 300), (0, 9, 300)], [192431, 214208]),
    ([(4, 9, 300), (5, 12, 300), (8, 13, 300)], [212780, 214232, 181364]),
    ([(4, 9, 300), (5, 12, 300), (8, 13, 600)], [215443, 245624, 321308]),
    (
        [(0, 8, 200), (4, 9, 200), (5, 12, 200), (1, 13, 200)],
        [285251, 202427, 206378, 285632],
    ),
]

#: 4 VCs x 318 flits per input port over 17 flits per 8 KiB message.
BUFFER_PACKETS = 4 * 318 // 17


def flows_schedule(flows: list[tuple[int, int, int]], n: int) -> wc.Schedule:
    """Independent unicast flows of whole 8 KiB messages."""
    T = len(flows)
    return wc.Schedule.from_arrays(
        n,
        [8192 * m for (_, _, m) in flows],
        "unknown",
        src=[a for (a, _, _) in flows],
        dst=[b for (_, b, _) in flows],
        block_lo=list(range(T)),
        block_hi=list(range(1, T + 1)),
        deps=[],
        dep_offsets=[0] * (T + 1),
    )


def fig8() -> None:
    """Both engines, and the router one behind the artifact's driver, against
    the artifact's Fig. 8 cycles (artifact variants)."""
    print(
        "| algorithm | mesh | MiB | artifact cycles | default engine "
        "| routers engine | routers + driver |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    within: dict = {}
    for base in ("DBTree", "Ring-2D", "MultiTree"):
        name = mcm_common.ARTIFACT_VARIANTS[base][0]
        for n in (4, 5, 8, 9):
            top, net, kw = mcm_common.variant_setup(base, n, n)
            how = mcm_common.variant_engine(base, n, n)
            for mib in (1, 4, 16, 64, 256, 1024):
                size = mib << 20
                ref = mcm_common.artifact_reference(
                    mcm_common.paper_label(name), n, n, size
                )
                if not math.isfinite(ref):
                    continue
                s = wc.build(name, topology=top, size_bytes=size, **kw)
                a = wc.simulate(s, top, net).cycles / ref - 1
                b = (
                    wc.simulate(
                        s, top, net, engine="routers", buffer_packets=BUFFER_PACKETS
                    ).cycles
                    / ref
                    - 1
                )
                d = wc.simulate(s, top, net, **how).cycles / ref - 1
                c = within.setdefault(base, [0, 0, 0, 0])
                c[0] += abs(a) <= 0.05
                c[1] += abs(b) <= 0.05
                c[2] += abs(d) <= 0.05
                c[3] += 1
                print(
                    f"| {base} | {n}x{n} | {mib} | {ref:,.0f} | {a * 100:+.1f} % "
                    f"| {b * 100:+.1f} % | {d * 100:+.1f} % |",
                    flush=True,
                )
    for base, (a, b, d, n) in within.items():
        print(
            f"{base} (artifact): within 5 %: default {a}/{n}, routers {b}/{n}, "
            f"routers + driver {d}/{n}"
        )


def main() -> None:
    top = wc.mcm.artifact_dbtree_topology(16)
    net = wc.mcm.ARTIFACT.replace(bandwidth_Bps=None)
    print("| flows | BookSim | default engine | routers engine |")
    print("|---|---|---|---|")
    worst = {"fcfs": 0.0, "routers": 0.0}
    for flows, ref in CASES:
        s = flows_schedule(flows, 16)
        a = wc.simulate(s, top, net, transfers=True)
        b = wc.simulate(
            s, top, net, transfers=True, engine="routers", buffer_packets=BUFFER_PACKETS
        )
        cells = []
        for key, r in (("fcfs", a), ("routers", b)):
            got = [round(x * 1e9) for x in r.transfer_finish_s]
            errs = [(g / f - 1) * 100 for g, f in zip(got, ref, strict=True)]
            worst[key] = max(worst[key], max(abs(e) for e in errs))
            cells.append(
                ", ".join(f"{g:,} ({e:+.1f} %)" for g, e in zip(got, errs, strict=True))
            )
        name = "; ".join(f"{x}->{y} x{m}" for x, y, m in flows)
        print(
            f"| {name} | {', '.join(f'{x:,}' for x in ref)} | {cells[0]} | {cells[1]} |"
        )
    print(
        f"worst difference from BookSim: default engine {worst['fcfs']:.1f} %, "
        f"routers engine {worst['routers']:.1f} %"
    )
    speed()


def speed() -> None:
    """Best of 3 on 9x9 at 256 MiB: the artifact's DBTree under both engines,
    and the three driven variants as ``reproduce`` runs them."""
    runs = [
        ("DBTree", "engine=wafercoll", {}),
        (
            "DBTree",
            "engine=routers",
            {"engine": "routers", "buffer_packets": BUFFER_PACKETS},
        ),
    ]
    runs += [
        (base, "routers + driver", mcm_common.variant_engine(base, 9, 9))
        for base in mcm_common.DRIVEN_VARIANTS
    ]
    for base, label, extra in runs:
        top, net, kw = mcm_common.variant_setup(base, 9, 9)
        name = mcm_common.ARTIFACT_VARIANTS[base][0]
        s = wc.build(name, topology=top, size_bytes=256 << 20, **kw)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            r = wc.simulate(s, top, net, **extra)
            best = min(best, time.perf_counter() - t0)
        print(
            f"{base} (artifact) 9x9 256 MiB, {label}: {best:.2f} s, "
            f"{r.events:,} events ({best / r.events * 1e9:.0f} ns each), "
            f"{r.cycles:,.0f} cycles"
        )


if __name__ == "__main__":
    if "--fig8" in sys.argv[1:]:
        fig8()
    elif "--speed" in sys.argv[1:]:
        speed()
    else:
        main()
