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
would show). Cases that raise record the exception's type instead.
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


def _topo(spec: tuple[str, tuple[int, ...]] | None) -> Any:
    if spec is None:
        return None
    kind, args = spec
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


def _simulate(s: wc.Schedule, topo: Any) -> str:
    if topo is None or s.num_transfers > 20000 or topo.num_endpoints < s.num_ranks:
        return ""
    net = wc.NetworkModel(1e9, hop_latency_s=1e-8, packet_bytes=256)
    return repr(wc.simulate(s, topo, net).time_s)


def digests(names: set[str] | None = None) -> dict[str, dict[str, str]]:
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
            "time_s": _simulate(s, topo),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the digests as JSON, or compare them with an earlier file."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--compare", help="a JSON file written earlier by this tool")
    ap.add_argument("--only", nargs="*", help="algorithm names")
    a = ap.parse_args(argv)
    now = digests(set(a.only) if a.only else None)
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
