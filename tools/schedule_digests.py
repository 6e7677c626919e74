"""Digests of every registered builder's schedules over many sizes.

Used to check that a change to the builders (or the kit under them) leaves
their schedules unchanged: run it before and after and compare::

    python tools/schedule_digests.py > before.json
    ... change ...
    python tools/schedule_digests.py --compare before.json

A digest is the SHA-256 of the schedule's JSON with every transfer's
dependency list sorted (the order in which a transfer lists its dependencies
carries no meaning), plus the simulated time on the topology the case names
(so that a change of dependency order that moved the simulator's tie-breaking
would show) and a digest of the bytes each link carried and of every
transfer's finish time (so that a change of routes would show). Cases that
raise record the exception's type instead.

Besides the builders' own machines, the generic algorithms are simulated on
stars and on custom graphs routed by shortest paths (hidden routers, several
equally short paths between a pair), so that a change to the routing of
custom topologies shows in the simulated times too.

With ``--dataflow`` every case of up to 6000 transfers is also simulated
under four dataflow models (``DATAFLOW_MODELS``: stream forwarding, data and
order edges, ports, compute costs), each digest covering link bytes and busy
times, transfer ready and finish times, rank finishes, the time, events and
packets; both files of a comparison must be made with the flag.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import wafercoll as wc
from wafercoll.algorithms import find


def _canonical(s: wc.Schedule) -> str:
    doc = s.to_dict()
    for t in doc["transfers"]:
        if "deps" in t:
            t["deps"] = sorted(t["deps"])
    doc.pop("name", None)
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def fat_tree_graph(leaves: int, per_leaf: int, spines: int) -> Any:
    """Endpoints under leaf switches joined by every spine (hidden routers).

    Between two leaves every spine gives an equally short path; odd leaves
    list their spine links from the last spine down, so that the lowest link
    id is not always the lowest spine.
    """
    e = leaves * per_leaf
    leaf0, spine0 = e, e + leaves
    links = []
    for i in range(e):
        links += [(i, leaf0 + i // per_leaf), (leaf0 + i // per_leaf, i)]
    for f in range(leaves):
        order = range(spines) if f % 2 == 0 else reversed(range(spines))
        for k in order:
            links += [(leaf0 + f, spine0 + k), (spine0 + k, leaf0 + f)]
    return wc.topology.custom(e, links, num_hidden_routers=leaves + spines)


def _torus_links(rows: int, cols: int) -> Any:
    """torus(rows, cols) as a custom graph with its links in reverse order."""
    lk = wc.topology.torus(rows, cols).links
    pairs = list(zip(lk["src"].tolist(), lk["dst"].tolist(), strict=True))[::-1]
    return wc.topology.custom(rows * cols, pairs)


def _mesh_routers(rows: int, cols: int) -> Any:
    """A mesh of hidden routers, one endpoint on each border router."""
    border = [
        (r, c)
        for r in range(rows)
        for c in range(cols)
        if r in (0, rows - 1) or c in (0, cols - 1)
    ]
    e = len(border)
    links = []
    for i, (r, c) in enumerate(border):
        links += [(i, e + r * cols + c), (e + r * cols + c, i)]
    for r in range(rows):
        for c in range(cols):
            for dr, dc in ((0, 1), (1, 0)):
                if r + dr < rows and c + dc < cols:
                    u, v = e + r * cols + c, e + (r + dr) * cols + c + dc
                    links += [(u, v), (v, u)]
    return wc.topology.custom(e, links, num_hidden_routers=rows * cols)


_CUSTOM = {
    "fat_tree": fat_tree_graph,
    "torus_links": _torus_links,
    "mesh_routers": _mesh_routers,
}


def _topo(spec: tuple[str, tuple[int, ...]] | None) -> Any:
    if spec is None:
        return None
    kind, args = spec
    if kind in _CUSTOM:
        return _CUSTOM[kind](*args)
    if kind == "cluster":
        return wc.topology.cluster(*args)
    if kind == "n150":
        return wc.topology.wormhole_n150(*args)
    if kind == "wafer_row":
        return wc.wafer.wafer_row(*args)
    if kind == "wafer_grid":
        return wc.wafer.wafer_grid(*args)
    return getattr(wc.topology, kind)(*args)


def cases() -> Iterator[tuple[str, dict[str, Any]]]:
    """``(algorithm, build arguments)`` pairs; topologies as ``(kind, args)``."""
    sizes_p = [*range(1, 34), 48, 64, 100]
    for name in (
        "generic_ring_allreduce",
        "generic_recursive_doubling_allreduce",
        "generic_rabenseifner_allreduce",
    ):
        for p in sizes_p:
            for size in (8 * p, 1000):
                yield name, {"ranks": p, "size_bytes": size}
    for name in ("generic_binomial_reduce", "generic_binomial_broadcast"):
        for p in sizes_p:
            for root in sorted({0, p // 2, p - 1}):
                yield name, {"ranks": p, "size_bytes": 64, "root": root}
    custom_topologies = [
        *(("star", (p,)) for p in (1, 2, 3, 5, 8, 16, 33, 64)),
        ("fat_tree", (4, 4, 2)),
        ("fat_tree", (3, 5, 3)),
        ("torus_links", (4, 4)),
        ("torus_links", (3, 5)),
        ("mesh_routers", (4, 4)),
        ("mesh_routers", (3, 5)),
    ]
    for name in (
        "generic_ring_allreduce",
        "generic_recursive_doubling_allreduce",
        "generic_rabenseifner_allreduce",
        "generic_binomial_broadcast",
    ):
        for spec in custom_topologies:
            for size in (64, 100_000):
                yield name, {"topology": spec, "size_bytes": size}
    for name in (
        "cluster_rd_allreduce",
        "cluster_smp_allreduce",
        "cluster_nap_allreduce",
        "cluster_dissemination_allreduce",
    ):
        for nodes, ppn in (
            (1, 1),
            (1, 4),
            (2, 2),
            (3, 4),
            (4, 4),
            (5, 3),
            (8, 2),
            (6, 4),
            (16, 4),
            (7, 5),
        ):
            yield (
                name,
                {"topology": ("cluster", (nodes, ppn)), "size_bytes": 8, "ppn": ppn},
            )
        for p, ppn in ((12, 4), (32, 8), (30, 5)):
            yield name, {"ranks": p, "size_bytes": 64, "ppn": ppn}
            perm = [(r * 7) % p for r in range(p)] if p % 7 else None
            if perm is not None:
                r2n = [perm[r] // ppn for r in range(p)]
                yield (
                    name,
                    {"ranks": p, "size_bytes": 64, "ppn": ppn, "rank_to_node": r2n},
                )
    for steps in (1, 2, 3):
        yield (
            "cluster_nap_allreduce",
            {"ranks": 64, "size_bytes": 8, "ppn": 4, "steps": steps},
        )
    shapes = [
        (2, 2),
        (2, 3),
        (3, 3),
        (3, 4),
        (4, 4),
        (5, 5),
        (4, 6),
        (6, 6),
        (8, 8),
        (9, 9),
        (1, 4),
        (4, 1),
        (2, 5),
    ]
    for alg in (
        "ring",
        "ring_bi",
        "ring_bi_odd",
        "ring_2d",
        "dbtree",
        "multitree",
        "tto",
    ):
        name = find("mesh", alg, "allreduce").name
        for m, n in shapes:
            for size in (m * n * 64, 1 << 16):
                yield name, {"topology": ("mesh", (m, n)), "size_bytes": size}
        for phase in ("reduce_scatter", "allgather"):
            if alg != "ring_2d":
                yield (
                    find("mesh", alg, phase).name,
                    {"topology": ("mesh", (4, 4)), "size_bytes": 4096},
                )
    for name in (
        "mesh_dbtree_allreduce",
        "mesh_multitree_allreduce",
        "mesh_tto_allreduce",
    ):
        for chunk in (512, 1000, 4096):
            yield (
                name,
                {
                    "topology": ("mesh", (3, 4)),
                    "size_bytes": 1 << 14,
                    "chunk_bytes": chunk,
                },
            )
    for opts in ({"sort": False}, {"rule": "paper"}, {"sync": "step"}):
        yield (
            "mesh_multitree_allreduce",
            {"topology": ("mesh", (4, 4)), "size_bytes": 8192, **opts},
        )
    yield (
        "mesh_ring_bi_odd_allreduce",
        {"topology": ("mesh", (5, 5)), "size_bytes": 4096, "exclude": "centre"},
    )
    for name in (
        "torus_swing_lo_allreduce",
        "torus_swing_bo_allreduce",
        "torus_rd_lo_allreduce",
        "torus_rd_bo_allreduce",
        "torus_shared_memory_allreduce",
        "torus_ring_bidir_allreduce",
    ):
        for p in range(1, 21):
            yield name, {"topology": ("ring", (p,)), "size_bytes": 8 * p + 5}
        for m, n in ((2, 2), (2, 3), (3, 3), (4, 4), (3, 5), (4, 6), (8, 8), (6, 6)):
            yield name, {"topology": ("torus", (m, n)), "size_bytes": 64 * m * n}
        yield name, {"topology": ("n150", (10,)), "size_bytes": 1 << 14}
    for name in ("torus_swing_bo_allreduce", "torus_rd_bo_allreduce"):
        for fb in ("shrink", "ring"):
            for p in (6, 10, 12):
                yield (
                    name,
                    {"topology": ("ring", (p,)), "size_bytes": 96, "fallback": fb},
                )
    for name in ("torus_swing_lo_allreduce", "torus_rd_bo_allreduce"):
        yield name, {"topology": ("torus", (4, 6)), "size_bytes": 4096, "first": "y"}
    for pat in ("star", "chain", "tree", "two_phase", "autogen"):
        for P in (*range(1, 18), 33, 64):
            for B in (1, 7, 64):
                yield (
                    find("wafer", pat, "reduce").name,
                    {"topology": ("wafer_row", (P,)), "size_bytes": 4 * B},
                )
                yield (
                    find("wafer", pat, "allreduce").name,
                    {
                        "topology": ("wafer_row", (P,)),
                        "size_bytes": 4 * B,
                        "root": P // 2,
                    },
                )
            yield (
                find("wafer", pat, "reduce").name,
                {
                    "topology": ("wafer_row", (P,)),
                    "size_bytes": 400,
                    "wavelets_per_block": 30,
                },
            )
    for P in (*range(1, 18), 33):
        for mapping in ("a", "b"):
            yield (
                "wafer_ring_allreduce",
                {
                    "topology": ("wafer_row", (P,)),
                    "size_bytes": 4 * 37,
                    "mapping": mapping,
                },
            )
    for m, n in ((1, 1), (1, 5), (2, 2), (3, 4), (4, 3), (5, 5), (6, 7)):
        yield (
            "wafer_2d_broadcast",
            {"topology": ("wafer_grid", (m, n)), "size_bytes": 64},
        )
        yield (
            "wafer_snake_reduce",
            {"topology": ("wafer_grid", (m, n)), "size_bytes": 64},
        )
        for pat in ("star", "chain", "tree", "two_phase", "autogen"):
            for name in ("wafer_xy_reduce", "wafer_xy_allreduce", "wafer_2d_allreduce"):
                yield (
                    name,
                    {
                        "topology": ("wafer_grid", (m, n)),
                        "size_bytes": 64,
                        "pattern": pat,
                    },
                )
        yield (
            "wafer_2d_allreduce",
            {"topology": ("wafer_grid", (m, n)), "size_bytes": 64, "pattern": "snake"},
        )
        yield (
            "wafer_xy_allreduce",
            {
                "topology": ("wafer_grid", (m, n)),
                "size_bytes": 400,
                "wavelets_per_block": 25,
            },
        )


def _simulate(s: wc.Schedule, topo: Any) -> dict[str, str]:
    """Simulated time, and a digest of every link's bytes and transfer's finish."""
    if topo is None or s.num_transfers > 20000 or topo.num_endpoints < s.num_ranks:
        return {"time_s": ""}
    net = wc.NetworkModel(1e9, hop_latency_s=1e-8, packet_bytes=256)
    r = wc.simulate(s, topo, net, transfers=True)
    h = hashlib.sha256(r.link_bytes.tobytes() + r.transfer_finish_s.tobytes())
    return {"time_s": repr(r.time_s), "links": h.hexdigest()[:16]}


#: Dataflow models of ``--dataflow`` (streams, data, order gates): cut-through
#: with flits; store-and-forward with one port and a start cost; two
#: channels per port with their own bandwidth, a switch overhead and a
#: reduction cost; one port with copy and reduction costs.
DATAFLOW_MODELS: dict[str, dict[str, Any]] = {
    "ct": {
        "bandwidth_Bps": 25e9,
        "hop_latency_s": 21e-9,
        "packet_bytes": 16,
        "flit_bytes": 8,
    },
    "sf_p1": {
        "bandwidth_Bps": 1e9,
        "hop_latency_s": 1e-8,
        "packet_bytes": 32,
        "ports": 1,
        "switching": "store_and_forward",
        "alpha_s": 1e-7,
    },
    "p2": {
        "bandwidth_Bps": None,
        "hop_latency_s": 3e-9,
        "packet_bytes": 8,
        "ports": 2,
        "port_bandwidth_Bps": 3e9,
        "switch_overhead_s": 2e-8,
        "gamma_s_per_byte": 1e-10,
    },
    "p1c": {
        "bandwidth_Bps": 2e9,
        "packet_bytes": 24,
        "ports": 1,
        "copy_s_per_byte": 1e-10,
        "gamma_s_per_byte": 2e-10,
    },
}


def _simulate_dataflow(s: wc.Schedule, topo: Any) -> dict[str, str]:
    """Per dataflow model, a digest of everything timed (or the error's type)."""
    if topo is None or s.num_transfers > 6000 or topo.num_endpoints < s.num_ranks:
        return {}
    out = {}
    for name, kw in DATAFLOW_MODELS.items():
        net = wc.NetworkModel(dependencies="dataflow", **kw)
        try:
            r = wc.simulate(s, topo, net, transfers=True)
        except Exception as exc:  # noqa: BLE001 - recorded, compared
            out["dataflow_" + name] = type(exc).__name__
            continue
        arrays = (r.link_bytes, r.link_busy_s, r.transfer_ready_s, r.transfer_finish_s)
        blob = b"".join(a.tobytes() for a in (*arrays, r.rank_finish_s))
        blob += repr((r.time_s, r.events, r.packets)).encode()
        out["dataflow_" + name] = hashlib.sha256(blob).hexdigest()[:16]
    return out


def digests(
    names: set[str] | None = None, dataflow: bool = False
) -> dict[str, dict[str, str]]:
    """Digest of every case, keyed by a readable case string."""
    out: dict[str, dict[str, str]] = {}
    for name, kw in cases():
        if names and name not in names:
            continue
        key = name + " " + json.dumps(kw, sort_keys=True)
        args = dict(kw)
        topo = _topo(args.pop("topology", None))
        try:
            with warnings.catch_warnings():  # the cases keep the old names
                warnings.simplefilter("ignore", DeprecationWarning)
                s = wc.build(name, topology=topo, **args)
        except Exception as exc:  # noqa: BLE001 - recorded, compared
            out[key] = {"error": type(exc).__name__}
            continue
        text = _canonical(s)
        out[key] = {
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "transfers": str(s.num_transfers),
            **_simulate(s, topo),
            **(_simulate_dataflow(s, topo) if dataflow else {}),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the digests as JSON, or compare them with an earlier file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", help="a JSON file written earlier by this tool")
    ap.add_argument("--only", nargs="*", help="algorithm names")
    ap.add_argument(
        "--dataflow",
        action="store_true",
        help="also simulate each case under DATAFLOW_MODELS (dependencies='dataflow')",
    )
    a = ap.parse_args(argv)
    now = digests(set(a.only) if a.only else None, a.dataflow)
    if not a.compare:
        json.dump(now, sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    with open(a.compare, encoding="utf-8") as f:
        before = json.load(f)
    bad = 0
    for key, d in now.items():
        if key not in before:
            print("new case:", key)
        elif before[key] != d:
            bad += 1
            print("DIFFERS:", key, before[key], "->", d)
    print(f"{len(now)} cases, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
