"""What the in-network builders share (:mod:`wafercoll.innet`, ``innet_tree``).

Their sources, size guards, the rank layout (GPUs, then every hidden router
as a switch rank), the program
they all open, and the switch tree with the walk that reduces a block up it
and multicasts the sum from its root.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kit
from ._util import as_int

__all__ = [
    "MAX_CHUNKS",
    "MAX_TRANSFERS",
    "NVLS_SOURCE",
    "SHARP_SOURCE",
    "check_chunks",
    "check_size",
    "links_of",
    "node_layout",
    "program",
    "reduce_in_tree",
    "switch_tree",
]

NVLS_SOURCE = (
    "NVIDIA NCCL, src/device/all_reduce.h (NVLS: reduce-scatter by multimem "
    "load-reduce in the NVSwitch, all-gather by multimem store multicast)"
)
SHARP_SOURCE = (
    "NVIDIA SHARP (Graham et al., COMHPC 2016) as used by NCCL CollNet: "
    "reduction along the switches' aggregation tree, multicast of the result"
)
#: Pipeline chunks a builder accepts (a guard on the schedule's size).
MAX_CHUNKS = 1 << 12
#: Transfers a builder may emit (a memory guard: 2^24 transfers are ~1 GiB).
MAX_TRANSFERS = 1 << 24


def check_size(transfers: int, chunks: int) -> None:
    """ValueError when a schedule would hold more than ``MAX_TRANSFERS``."""
    if transfers > MAX_TRANSFERS:
        raise ValueError(
            f"chunks = {chunks} would make {transfers} transfers, more than "
            f"{MAX_TRANSFERS}; use fewer chunks"
        )


def links_of(topology: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lk = topology.links
    return (
        np.asarray(lk["src"], dtype=np.int64),
        np.asarray(lk["dst"], dtype=np.int64),
        np.asarray(lk["bandwidth_Bps"], dtype=np.float64),
    )


def node_layout(ranks: int, topology: Any) -> tuple[int, int]:
    """(schedule ranks, endpoints); without a topology, one switch: rank ``ranks``."""
    if topology is None:
        return ranks + 1, ranks
    e, n = topology.num_endpoints, topology.num_nodes
    if n == e:
        raise ValueError(
            f"topology {topology.name} has no hidden routers: in-network "
            "reduction needs switches (e.g. wc.topology.dgx_h100(), fat_tree)"
        )
    return n, e


def check_chunks(chunks: Any) -> int:
    return as_int(chunks, "chunks", 1, MAX_CHUNKS)


def program(
    n: int,
    e: int,
    p: int,
    sizes: list[int],
    name: str,
    collective: str = "allreduce",
    owners: list[int] | None = None,
) -> kit.Program:
    """A program over ``n`` ranks: GPUs ``0 .. p - 1`` take part, ranks >= e switch."""
    return kit.Program(
        n,
        sizes,
        collective,
        rule="explicit",
        participants=range(p),
        switches=range(e, n),
        owners=owners,
        name=name,
    )


def switch_tree(gpus: list[int], topology: Any) -> dict[int, int]:
    """:func:`sharp_tree` of any GPUs (endpoint ids) of a topology with switches."""
    n, e = topology.num_nodes, topology.num_endpoints
    src, dst, _ = links_of(topology)
    between = (src >= e) & (dst >= e)
    cand = set(np.unique(src[between]).tolist()) or set(range(e, n))
    nbr: dict[int, list[int]] = {r: [] for r in cand}
    for u, v in zip(src[between].tolist(), dst[between].tolist(), strict=True):
        if u in cand and v in cand:
            nbr[u].append(v)
    for r in nbr:
        nbr[r] = sorted(set(nbr[r]))
    attach = [
        sorted({int(v) for v in dst[(src == i) & (dst >= e)] if int(v) in cand})
        for i in gpus
    ]
    if any(not a for a in attach):
        raise ValueError(f"a GPU of {topology.name} has no link to a network switch")

    def bfs(root: int) -> dict[int, int]:
        dist, queue = {root: 0}, [root]
        for u in queue:
            for v in nbr[u]:
                if v not in dist:
                    dist[v] = dist[u] + 1
                    queue.append(v)
        return dist

    best, best_cost, best_dist = -1, None, {}
    for r in sorted(cand):
        dist = bfs(r)
        far = [min((dist[a] for a in att if a in dist), default=None) for att in attach]
        if any(x is None for x in far):
            continue
        cost = max(far)  # type: ignore[type-var]
        if best_cost is None or cost < best_cost:
            best, best_cost, best_dist = r, cost, dist
    if best < 0:
        raise ValueError(f"no switch of {topology.name} reaches all of GPUs {gpus}")
    parent: dict[int, int] = {best: -1}
    for k, i in enumerate(gpus):
        a = min(
            (x for x in attach[k] if x in best_dist), key=lambda x: (best_dist[x], x)
        )
        parent[i] = a
        while a not in parent:
            up = min(v for v in nbr[a] if best_dist.get(v, -1) == best_dist[a] - 1)
            parent[a] = up
            a = up
    return parent


def reduce_in_tree(
    prog: kit.Program,
    parent: dict[int, int],
    gpus: list[int],
    block: int,
    ready: dict[int, list[int]],
    last: dict[int, int],
) -> int:
    """One block up a switch tree and back: returns the root's multicast.

    GPU ``g`` reduces ``block`` into its parent after ``ready[g]``; a switch
    forwards the sum to its parent once every child's reduction is in (and
    after its previous send, ``last``); the root multicasts the sum to the
    GPUs.
    """
    member = set(gpus)
    root = next(v for v, u in parent.items() if u < 0)
    depth = {}
    for v in parent:
        d, x = 0, v
        while parent[x] >= 0:
            x, d = parent[x], d + 1
        depth[v] = d
    into: dict[int, list[int]] = {v: [] for v in parent if v not in member}
    for g in gpus:
        t = prog.send(
            g, parent[g], block, "reduce", deps=[x for x in ready[g] if x >= 0]
        )
        last[g] = t
        into[parent[g]].append(t)
    # Switches deepest first: each forwards after all its children.
    inner = sorted((v for v in into if v != root), key=lambda v: (-depth[v], v))
    for v in inner:
        deps = into[v] + ([last[v]] if v in last else [])
        t = prog.send(v, parent[v], block, "reduce", deps=deps)
        last[v] = t
        into[parent[v]].append(t)
    return prog.send(root, gpus, block, "copy", deps=into[root])
