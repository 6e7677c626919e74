"""In-network reduction across a network: InfiniBand SHARP and NVLS between nodes.

The builders of the switch tree (``fabric_sharp_allreduce``, NCCL's CollNet)
and of NVLS across nodes (``fabric_nvls_tree_allreduce``, NCCL's NVLS_TREE
and NVLS with CollNet); the model, its closed forms and the switch
parameters are described in :mod:`wafercoll.innet`, which also exports these
names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kit
from ._innet_common import (
    NVLS_SOURCE,
    SHARP_SOURCE,
    check_chunks,
    check_size,
    links_of,
    node_layout,
    program,
    reduce_in_tree,
    switch_tree,
)
from ._util import as_int
from .algorithms import register_algorithm
from .schedule import Schedule

__all__ = ["nvls_domains", "nvls_tree_allreduce", "sharp_allreduce", "sharp_tree"]


def sharp_tree(ranks: int, topology: Any = None) -> dict[int, int]:
    """The aggregation tree of :func:`sharp_allreduce`: the parent of every node in it.

    Parameters
    ----------
    ranks : int
        GPUs ``0 .. ranks - 1``, >= 1.
    topology : Topology, optional
        Default: one switch, node ``ranks``.

    Returns
    -------
    dict
        ``{node: parent}`` for the GPUs and the switches of the tree; the
        root maps to -1.

    Raises
    ------
    ValueError
        For a topology without switches, or GPUs no switch tree joins.

    Examples
    --------
    >>> import wafercoll as wc
    >>> tree = wc.innet.sharp_tree(4, wc.topology.fat_tree(4))
    >>> tree[0], tree[2], tree[16], tree[tree[16]]  # host, edge, aggregation, root
    (16, 17, 24, -1)
    """
    p = as_int(ranks, "ranks", 1)
    if topology is None:
        return {**{i: p for i in range(p)}, p: -1}
    _, e = node_layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
    return switch_tree(list(range(p)), topology)


@register_algorithm(
    "fabric_sharp_allreduce",
    "allreduce",
    families=("fat_tree", "rail_optimized", "dragonfly", "star", "nvswitch"),
    parameters={"chunks": 1},
    source=SHARP_SOURCE,
    summary="InfiniBand SHARP: the switches reduce up an aggregation tree and the "
    "root multicasts the sum to every GPU",
    label="SHARP",
    max_ranks=1 << 12,
)
def sharp_allreduce(
    ranks: int, size_bytes: int, *, topology: Any = None, chunks: int = 1
) -> Schedule:
    """SHARP allreduce of GPUs ``0 .. ranks - 1`` in the switches' aggregation tree.

    The model and the tree are in :mod:`wafercoll.innet` and
    :func:`sharp_tree`.

    Parameters
    ----------
    ranks : int
        GPUs (or hosts), >= 1.
    size_bytes : int
        Bytes of every GPU's vector.
    topology : Topology, optional
        A switched network (``fat_tree``, ``rail_optimized``, ``star``);
        default: one switch, rank ``ranks``.
    chunks : int, optional
        Pipeline chunks, 1 to 4096, that stream through the tree one after
        the other.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> t = wc.topology.fat_tree(4)
    >>> s = wc.build("fabric_sharp_allreduce", topology=t, ranks=5, size_bytes=9)
    >>> x = np.random.default_rng(1).integers(0, 9, (s.num_ranks, 9))
    >>> out = wc.execute(s, x)
    >>> bool((out[:5] == x[:5].sum(0)).all())
    True
    """
    p = ranks
    k = check_chunks(chunks)
    n, e = node_layout(p, topology)
    parent = sharp_tree(p, topology)
    check_size(k * (len(parent) + 1), k)
    sizes = [int(x) for x in kit.split_bytes(size_bytes, k)]
    prog = program(n, e, p, sizes, f"sharp_allreduce(p={p}, chunks={k})")
    gpus = list(range(p))
    last: dict[int, int] = {}  # each GPU's and switch's previous send: streams in order
    for c in range(k):
        reduce_in_tree(
            prog, parent, gpus, c, {g: [last.get(g, -1)] for g in gpus}, last
        )
    return prog.schedule()


def nvls_domains(
    ranks: int, topology: Any
) -> list[tuple[list[int], list[tuple[int, float]]]]:
    """The NVSwitch domains of GPUs ``0 .. ranks - 1``: their GPUs and switch chips.

    A node's switch chips are the hidden routers linked to GPUs only (not to
    other switches); GPUs wired to the same chips form a domain. Each chip
    comes with its weight as in :func:`nvls_switches`.

    Parameters
    ----------
    ranks : int
        GPUs, >= 1.
    topology : Topology

    Returns
    -------
    list of (list of int, list of (int, float))
        Per domain, in order of its first GPU: its GPUs and its chips.

    Raises
    ------
    ValueError
        When a GPU has no chip of its own, or the domains differ in GPU or
        chip count or in the chips' weights (the blocks are laid out once
        for all of them).

    Examples
    --------
    >>> import wafercoll as wc
    >>> doms = wc.innet.nvls_domains(16, wc.topology.dgx_h100_rail(2))
    >>> [(g[0], len(g), [n for n, _ in sw]) for g, sw in doms]
    [(0, 8, [28, 29, 30, 31]), (8, 8, [32, 33, 34, 35])]
    """
    p = as_int(ranks, "ranks", 1)
    _, e = node_layout(p, topology)
    if p > e:
        raise ValueError(f"ranks = {p} exceeds the {e} endpoints of {topology.name}")
    src, dst = links_of(topology)[:2]
    networked = set(np.unique(src[(src >= e) & (dst >= e)]).tolist())
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in range(p):
        chips = tuple(
            sorted(
                {
                    int(v)
                    for v in dst[(src == i) & (dst >= e)]
                    if int(v) not in networked
                }
            )
        )
        if not chips:
            raise ValueError(
                f"GPU {i} of {topology.name} has no NVSwitch chip of its own"
            )
        groups.setdefault(chips, []).append(i)
    out = []
    for chips, gpus in sorted(groups.items(), key=lambda kv: kv[1][0]):
        sub = [
            (j, float(np.min(links_of(topology)[2][(dst == j) & np.isin(src, gpus)])))
            for j in chips
        ]
        out.append((gpus, sub))
    first = out[0]
    for gpus, sub in out[1:]:
        if len(gpus) != len(first[0]) or [w for _, w in sub] != [
            w for _, w in first[1]
        ]:
            raise ValueError(
                f"the NVSwitch domains of GPUs 0 .. {p - 1} of {topology.name} differ "
                "in size or link bandwidths; take whole, alike nodes"
            )
    return out


@register_algorithm(
    "fabric_nvls_tree_allreduce",
    "allreduce",
    families=("rail_optimized", "nvswitch"),
    parameters={"chunks": 1, "inter": "tree"},
    source=NVLS_SOURCE + "; NVLS_TREE and NVLS with CollNet across nodes",
    summary="NVLS inside every node (reduce-scatter in the NVSwitch to head GPUs), "
    "the heads' chunks reduced across nodes (a binary tree of GPUs or SHARP in the "
    "network switches), then multicast by each node's NVSwitch",
    label="NVLS tree",
    max_ranks=1 << 12,
)
def nvls_tree_allreduce(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    chunks: int = 1,
    inter: str = "tree",
) -> Schedule:
    """NVLS within each node, a reduction across nodes between the head GPUs.

    NCCL's NVLS_TREE (``src/device/all_reduce.h``): inside a node every GPU
    reduces its share into the NVSwitch chips, which hand block ``h``'s sum
    to head GPU ``h``; the heads of block ``h`` in all nodes reduce it
    across nodes and get the total back; each head stores it into its node's
    chip, which multicasts it to the node's other GPUs. Across nodes,
    ``inter="tree"``: a binary tree of the heads (node ``d``'s parent is node
    ``(d - 1) // 2``), reducing up and copying down; ``inter="sharp"``: the
    heads reduce in the network's switches (:func:`sharp_tree` of the
    heads), as NCCL's NVLS with CollNet (SHARP) does.

    Parameters
    ----------
    ranks : int
        GPUs: whole nodes, alike (:func:`nvls_domains`).
    size_bytes : int
        Bytes of every GPU's vector.
    topology : Topology
        Nodes of NVSwitch chips on a network: ``rail_optimized(...,
        nvswitches=q)``, ``dgx_h100_rail``; a single NVSwitch domain
        (``gb200_nvl72``) gives plain NVLS through its heads.
    chunks : int, optional
        Pipeline chunks, 1 to 4096.
    inter : {"tree", "sharp"}, optional
        The reduction across nodes.

    Returns
    -------
    Schedule

    Examples
    --------
    >>> import numpy as np, wafercoll as wc
    >>> t = wc.topology.rail_optimized(3, 2, nvswitches=2)
    >>> s = wc.build("fabric_nvls_tree_allreduce", topology=t, size_bytes=11)
    >>> x = np.random.default_rng(0).integers(0, 9, (s.num_ranks, 11))
    >>> bool((wc.execute(s, x)[:6] == x[:6].sum(0)).all())
    True
    """
    if topology is None:
        raise ValueError(
            "topology is required: nodes of NVSwitch chips on a network, e.g. "
            "wc.topology.dgx_h100_rail(2)"
        )
    if inter not in ("tree", "sharp"):
        raise ValueError(f"inter must be 'tree' or 'sharp', got {inter!r}")
    p = ranks
    k = check_chunks(chunks)
    n, e = node_layout(p, topology)
    doms = nvls_domains(p, topology)
    g, nsw = len(doms[0][0]), len(doms[0][1])
    check_size(k * nsw * (p + g * len(doms) * (g + 6)), k)
    shares = [
        int(x) for x in kit.split_weighted(size_bytes, [w for _, w in doms[0][1]])
    ]
    per = [kit.split_bytes(shares[j], k * g) for j in range(nsw)]
    sizes = [
        int(per[j][c * g + h]) for c in range(k) for j in range(nsw) for h in range(g)
    ]
    label = f"nvls_tree_allreduce(p={p}, chunks={k}, inter={inter})"
    prog = program(n, e, p, sizes, label)
    last = np.full((p, nsw), -1, dtype=np.int64)
    trees: dict[int, dict[int, int]] = {}
    sent: dict[int, int] = {}
    for c in range(k):
        for j in range(nsw):
            b0 = (c * nsw + j) * g
            red = []
            for gpus, chips in doms:
                ids = prog.step(
                    gpus, chips[j][0], (b0, b0 + g), "reduce", deps=last[gpus, j]
                )
                last[gpus, j] = ids
                red.append(list(ids))
            for h in range(g):
                b = b0 + h
                heads = [gpus[h] for gpus, _ in doms]
                local = [
                    prog.send(chips[j][0], heads[d], b, "copy", deps=red[d])
                    for d, (_, chips) in enumerate(doms)
                ]
                if len(doms) == 1:
                    final = local
                elif inter == "tree":
                    final = _binary_tree(prog, heads, b, local)
                else:
                    if h not in trees:
                        trees[h] = switch_tree(heads, topology)
                    ready = {x: [local[d]] for d, x in enumerate(heads)}
                    final = [
                        reduce_in_tree(prog, trees[h], heads, b, ready, sent)
                    ] * len(doms)
                for d, (gpus, chips) in enumerate(doms):
                    store = prog.send(heads[d], chips[j][0], b, "copy", deps=[final[d]])
                    others = [x for x in gpus if x != heads[d]]
                    if others:
                        prog.send(chips[j][0], others, b, "copy", deps=[store])
    return prog.schedule()


def _binary_tree(
    prog: kit.Program, heads: list[int], block: int, local: list[int]
) -> list[int]:
    """Allreduce of ``block`` over ``heads`` in a binary tree; per head, its last write.

    Head ``d`` holds its node's sum once ``local[d]`` is done; it reduces
    into its parent (``(d - 1) // 2``) once its own children have reduced
    into it; reductions into one head are chained; the root's total is
    copied down the tree.
    """
    m = len(heads)
    done = list(local)  # per head: its latest write
    for d in range(m - 1, 0, -1):
        up = (d - 1) // 2
        done[up] = prog.send(
            heads[d], heads[up], block, "reduce", deps=[done[d], done[up]]
        )
    final = list(done)
    for d in range(1, m):
        final[d] = prog.send(
            heads[(d - 1) // 2], heads[d], block, "copy", deps=[final[(d - 1) // 2]]
        )
    return final
