"""Chakra execution traces as workloads: compute, collectives and messages.

:func:`read_chakra_workload` reads the per-rank traces that PyTorch (through
Chakra's converter), Chakra's generators and ASTRA-sim use into one
:class:`~wafercoll.workloads.Workload`; :func:`write_chakra_workload` writes
one back. The files are those of :mod:`wafercoll.io.chakra`
(``<prefix>.<rank>.et``, length-delimited protobuf records, a
``GlobalMetadata`` then one ``Node`` per operation).

Schema: mlcommons/chakra ``schema/protobuf/et_def.proto`` (commit 21585d8):
``Node`` fields ``id = 1``, ``name = 2``, ``type = 3``, ``ctrl_deps = 4``,
``data_deps = 5``, ``duration_micros = 7``, ``inputs = 8`` (``IOInfo``),
``attr = 10``; ``NodeType`` ``METADATA_NODE = 1``, ``MEM_LOAD_NODE = 2``,
``MEM_STORE_NODE = 3``, ``COMP_NODE = 4``, ``COMM_SEND_NODE = 5``,
``COMM_RECV_NODE = 6``, ``COMM_COLL_NODE = 7``; ``CollectiveCommType``
``ALL_REDUCE = 0`` ... ``BARRIER = 9``. Attribute names are those
ASTRA-sim's workload layer reads (astra-sim ``astra-sim/workload/
Workload.cc`` and Chakra's ``src/feeder/et_feeder_node.cpp``): ``num_ops``,
``tensor_size``, ``comm_type``, ``comm_size``, ``comm_src``, ``comm_dst``,
``comm_tag``, ``pg_name``, ``is_cpu_op``.

How nodes are read
------------------
``COMP_NODE``
    A compute node of its rank. With a ``compute_model``, a node stating its
    work (``num_ops`` FLOPs and/or ``tensor_size`` bytes) takes the model's
    time for it, as ASTRA-sim's roofline mode does; otherwise the node takes
    its ``duration_micros`` (ASTRA-sim's replay). A node that states work
    but no duration, read without a model, is an error. A node that states
    neither is a zero-time compute node: proto3 cannot tell an absent
    duration from 0, and PyTorch traces hold many such nodes (ASTRA-sim
    replays them in 1 ns).
``COMM_COLL_NODE``
    One collective node per matched set of member nodes (below), with each
    rank's own dependencies. ``comm_size`` is, as in ASTRA-sim's collective
    implementations (``final_data_size`` of ``system/collective/Ring.cc``)
    and in Chakra's PyTorch converter (the bytes of the operator's input
    tensors), the buffer each rank *contributes*, which is the whole vector
    except for the gathers:

    ======================  ==============  ===============================
    comm_type               collective      ``size_bytes``
    ======================  ==============  ===============================
    ALL_REDUCE              allreduce       comm_size
    REDUCE                  reduce          comm_size
    BROADCAST               broadcast       comm_size
    ALL_TO_ALL              alltoall        comm_size (a rank's send buffer)
    REDUCE_SCATTER, _BLOCK  reduce_scatter  comm_size (the input vector)
    SCATTER                 scatter         comm_size (the root's buffer)
    ALL_GATHER              allgather       comm_size x group size
    GATHER                  gather          comm_size x group size
    ======================  ==============  ===============================

    ``BARRIER`` (no wafercoll collective) and unknown types are refused. The
    root of a rooted collective is the ``comm_root`` attribute (a global
    rank; a wafercoll addition that ASTRA-sim ignores), else the group's
    first rank.
``COMM_SEND_NODE`` / ``COMM_RECV_NODE``
    A send of ``comm_src`` (default: the trace's rank) and a receive of
    ``comm_dst`` (default: the trace's rank) with the same source,
    destination and ``comm_tag`` (default 0) are matched in trace order
    into one message (``comm_size`` bytes, equal on both sides), waiting
    for the sender's dependencies at the sender and the receiver's at the
    receiver. ``comm_src`` and ``comm_dst`` are global ranks.
``METADATA_NODE``, ``MEM_LOAD_NODE``, ``MEM_STORE_NODE``, ``INVALID_NODE``
    Take no time: a node that depends on one depends on its dependencies
    instead. A ``METADATA_NODE`` whose ``inputs.values`` holds PyTorch's
    process-group description (``process_group:init``) defines groups.

``data_deps`` and ``ctrl_deps`` are both dependencies (``ctrl_deps=False``
follows ``data_deps`` only, as Chakra's feeder does).

Process groups
--------------
A collective without ``pg_name``, or with ``"0"``, spans every rank in rank
order (ASTRA-sim's default group). Other names are looked up in
``comm_groups`` (a mapping, or the path of ASTRA-sim's
``--comm-group-configuration`` JSON file ``{"1": [0, 1, 2, 3], ...}``) and
in the traces' ``process_group:init`` metadata nodes (a JSON list of
``{"pg_name": ..., "ranks": [...]}``; empty ranks mean every rank, as
PyTorch writes the default group). The order of a group's ranks is the
communicator's order. Within each group, the ``k``-th collective of every
member rank (in trace order) forms one collective node; members must agree
on the collective and on ``comm_size``.

Examples
--------
>>> import os, tempfile
>>> import wafercoll as wc
>>> w = wc.workload(4, name="dp")
>>> f = [w.compute(r, 1e-3, name="fwd") for r in range(4)]
>>> g = w.collective("allreduce", 1 << 20, deps={r: [f[r]] for r in range(4)})
>>> prefix = os.path.join(tempfile.mkdtemp(), "dp")
>>> files = wc.io.write_chakra_workload(w, prefix)
>>> back = wc.io.read_chakra_workload(prefix)
>>> back.counts(), back.node(g).size_bytes
({'compute': 4, 'collective': 1, 'send': 0}, 1048576)
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .._util import write_atomic
from ..workloads import ComputeModel, Workload
from ._chakra_graph import (
    CHAKRA_COLLECTIVES,
    DEFAULT_GROUP,
    PG_INIT_NODE,
    ROOTED,
    WRITE_TYPES,
    Vertex,
    compute_args,
    decode_traces,
    match_collectives,
    match_messages,
    order_vertices,
    process_groups,
)
from ._common import frame_messages
from .chakra import (
    CHAKRA_NODE_TYPES,
    CHAKRA_SCHEMA_VERSION,
    chakra_files,
    chakra_messages,
)

__all__ = [
    "CHAKRA_COLLECTIVES",
    "chakra_workload_traces",
    "read_chakra_workload",
    "write_chakra_workload",
]

_T = CHAKRA_NODE_TYPES


def read_chakra_workload(
    prefix_or_files: str | os.PathLike[str] | list[Any],
    *,
    compute_model: ComputeModel | None = None,
    comm_groups: Mapping[Any, Sequence[int]] | str | os.PathLike[str] | None = None,
    ctrl_deps: bool = True,
    name: str | None = None,
) -> Workload:
    """Read Chakra execution traces (one per rank) into a Workload.

    Parameters
    ----------
    prefix_or_files : path-like or list of paths
        ``f"{prefix}.{rank}.et"`` for ranks 0, 1, ... (ASTRA-sim's naming),
        or the files in rank order (:func:`wafercoll.io.chakra_files`).
    compute_model : ComputeModel, optional
        Times compute nodes that state their work (``num_ops``,
        ``tensor_size``); see the module docstring.
    comm_groups : mapping or path-like, optional
        Process groups: name -> ranks in communicator order, or the path of
        ASTRA-sim's communicator-group JSON file.
    ctrl_deps : bool
        Follow ``ctrl_deps`` as well as ``data_deps`` (default). Chakra's own
        feeder, which ASTRA-sim uses, follows ``data_deps`` only; Chakra's
        PyTorch converter puts an operator's caller in ``ctrl_deps`` and the
        execution order in ``data_deps``.
    name : str, optional
        The workload's name (default: the traces' ``name`` metadata, else the
        prefix's file name).

    Returns
    -------
    Workload
        Nodes in a topological order of the traces' dependencies; node names
        are the traces' (a collective takes its first member's).

    Raises
    ------
    FormatError
        For a truncated or undecodable record, a node without a required
        attribute, or a dependency on a node the file lacks (naming the file
        and record).
    ValueError
        For collectives that do not match across the members of a group,
        unmatched messages, an unsupported ``comm_type``, an undescribed
        process group, or a cycle (naming rank, node and group).

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> w = wc.workload(2)
    >>> a = w.compute(0, 2e-6)
    >>> _ = w.send(0, 1, 4096, deps=[a])
    >>> prefix = os.path.join(tempfile.mkdtemp(), "pair")
    >>> _ = wc.io.write_chakra_workload(w, prefix)
    >>> back = wc.io.read_chakra_workload(prefix)
    >>> [(n.kind, n.ranks, n.deps) for n in back]
    [('compute', (0,), {0: ()}), ('send', (0, 1), {0: (0,), 1: ()})]
    """
    files = chakra_files(prefix_or_files)
    p = len(files)
    metas, nodes = decode_traces(files, bool(ctrl_deps))
    groups = process_groups(comm_groups, nodes, p)
    vertices: list[Vertex] = []
    timing: dict[int, dict[str, Any]] = {}
    for rank_nodes in nodes:
        for n in rank_nodes:
            if n.type == _T["COMP_NODE"]:
                timing[len(vertices)] = compute_args(n, compute_model)
                vertices.append(Vertex("compute", (n.rank,), {n.rank: n}))
    vertices += match_collectives(nodes, groups)
    vertices += match_messages(nodes)
    order, deps = order_vertices(vertices, nodes)
    if name is None:
        stated = metas[0].get("name")
        if isinstance(stated, str):
            name = stated
        elif isinstance(prefix_or_files, (list, tuple)):
            name = ""
        else:
            name = os.path.basename(os.fspath(prefix_or_files))
    w = Workload(p, name, compute_model)
    wid: dict[int, int] = {}
    for v in order:
        vx = vertices[v]
        dl = {r: [wid[d] for d in ds] for r, ds in deps[v].items()}
        first = vx.members[vx.ranks[0]]
        if vx.kind == "compute":
            (r,) = vx.ranks
            wid[v] = w.compute(r, deps=dl[r], name=first.name, **timing[v])
        elif vx.kind == "collective":
            opts = dict(vx.options)
            algorithm = opts.pop("algorithm", "auto")
            wid[v] = w.collective(
                vx.collective,
                vx.size,
                vx.ranks,
                algorithm=algorithm,
                deps=dl,
                name=first.name,
                **opts,
            )
        else:
            src, dst = vx.ranks
            wid[v] = w.send(src, dst, vx.size, deps=dl, name=first.name)
    return w


# --------------------------------------------------------------------------- #
# Writing
# --------------------------------------------------------------------------- #
def _pg_names(w: Workload) -> dict[tuple[int, ...], str]:
    """Communicator -> pg_name: "0" for every rank in order, then 1, 2, ..."""
    world = tuple(range(w.ranks))
    names: dict[tuple[int, ...], str] = {}
    for n in w:
        if n.kind == "collective" and n.ranks not in names:
            names[n.ranks] = (
                DEFAULT_GROUP
                if n.ranks == world
                else str(sum(1 for c in names if c != world) + 1)
            )
    return names


def chakra_workload_traces(
    workload: Workload, *, remote_deps: str = "error"
) -> list[bytes]:
    """The ``.et`` file contents of each rank (see :func:`write_chakra_workload`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> w = wc.workload(2)
    >>> _ = w.collective("allgather", 64)
    >>> [len(t) > 0 for t in wc.io.chakra_workload_traces(w)]
    [True, True]
    """
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a Workload, got {type(workload).__name__}")
    if remote_deps not in ("error", "drop"):
        raise ValueError(f"remote_deps must be 'error' or 'drop', got {remote_deps!r}")
    w = workload
    msgs = chakra_messages()
    Attr, Meta, Node = msgs["AttributeProto"], msgs["GlobalMetadata"], msgs["Node"]
    IOInfo = msgs["IOInfo"]
    pgs = _pg_names(w)
    per_rank: list[list[Any]] = [[] for _ in range(w.ranks)]
    if pgs:
        desc = json.dumps(
            [
                {"pg_name": g, "ranks": list(c), "group_size": len(c)}
                for c, g in pgs.items()
            ]
        )
        for r in range(w.ranks):
            per_rank[r].append(
                Node(
                    id=0,
                    name=f"## {PG_INIT_NODE} ##",
                    type=_T["METADATA_NODE"],
                    inputs=IOInfo(values=repr([desc]), types="['String']"),
                )
            )
    for n in w:
        _check_writable(w, n, remote_deps == "drop")
        for r in n.ranks:
            attrs = [Attr(name="is_cpu_op", bool_val=False)]
            node = Node(
                id=n.id + 1,
                name=n.name,
                data_deps=[d + 1 for d in n.deps[r] if r in w.node(d).ranks],
            )
            if n.kind == "compute":
                node.type = _T["COMP_NODE"]
                node.duration_micros = round(n.seconds * 1e6)
                if n.flops or n.mem_bytes:
                    attrs.append(Attr(name="num_ops", int64_val=round(n.flops)))
                    attrs.append(
                        Attr(name="tensor_size", uint64_val=round(n.mem_bytes))
                    )
            elif n.kind == "collective":
                node.type = _T["COMM_COLL_NODE"]
                k = len(n.ranks)
                size = n.size_bytes
                if n.collective in ("allgather", "gather"):
                    size //= k
                attrs += [
                    Attr(name="comm_type", int64_val=WRITE_TYPES[n.collective]),
                    Attr(name="comm_size", int64_val=size),
                    Attr(name="pg_name", string_val=pgs[n.ranks]),
                ]
                if "root" in n.options:
                    root = n.ranks[int(n.options["root"])]
                    attrs.append(Attr(name="comm_root", int64_val=root))
                if n.algorithm != "auto":
                    attrs.append(
                        Attr(name="wafercoll_algorithm", string_val=n.algorithm)
                    )
            else:
                src, dst = n.ranks
                node.type = _T["COMM_SEND_NODE" if r == src else "COMM_RECV_NODE"]
                attrs += [
                    Attr(name="comm_src", int32_val=src),
                    Attr(name="comm_dst", int32_val=dst),
                    Attr(name="comm_size", int64_val=n.size_bytes),
                    Attr(name="comm_tag", int32_val=n.id),
                ]
            node.attr.extend(attrs)
            per_rank[r].append(node)
    out = []
    for r in range(w.ranks):
        meta = Meta(
            version=CHAKRA_SCHEMA_VERSION,
            attr=[
                Attr(name="schema", string_val="wafercoll workload export"),
                Attr(name="rank", int64_val=r),
                Attr(name="ranks", int64_val=w.ranks),
                Attr(name="name", string_val=w.name),
            ],
        )
        out.append(frame_messages((meta, *per_rank[r])))
    return out


def _implied(w: Workload, n: Any, r: int, d: int) -> bool:
    """Whether a receiver's wait for a node it takes no part in is implied.

    Receiver ``r`` of send ``n`` waiting for ``d`` means "d done at all its
    ranks"; the message cannot arrive before it leaves, so the sender
    waiting for ``d`` implies it when that wait means the same: ``d`` is the
    sender's alone, or does not involve the sender.
    """
    if n.kind != "send" or r != n.ranks[1]:
        return False
    src = n.ranks[0]
    dr = w.node(d).ranks
    return d in n.deps[src] and (src not in dr or dr == (src,))


def _check_writable(w: Workload, n: Any, drop: bool) -> None:
    """Refuse what a per-rank Chakra trace cannot state (naming the node)."""
    what = f"node {n.id} ({n.kind}{' ' + n.collective if n.collective else ''})"
    if n.kind == "join":
        raise ValueError(
            f"{what}: a join belongs to no rank, and a Chakra trace holds one "
            "file per rank; express the barrier with per-rank deps instead"
        )
    for r in n.ranks:
        for d in n.deps[r] if not drop else ():
            if r not in w.node(d).ranks and not _implied(w, n, r, d):
                raise ValueError(
                    f"{what}: at rank {r} it depends on node {d}, which rank {r} "
                    "takes no part in; a Chakra trace's dependencies stay within "
                    "one rank's file: give the node per-rank deps ({rank: [...]}) "
                    "or write with remote_deps='drop'"
                )
    if n.kind != "collective":
        return
    if n.collective not in WRITE_TYPES:
        raise ValueError(
            f"{what}: Chakra has no comm_type for {n.collective} (it writes "
            f"{', '.join(WRITE_TYPES)})"
        )
    extra = set(n.options) - ({"root"} if n.collective in ROOTED else set())
    if extra:
        raise ValueError(
            f"{what}: option(s) {', '.join(sorted(extra))} have no Chakra attribute"
        )
    k = len(n.ranks)
    if n.collective in ("allgather", "gather") and n.size_bytes % k:
        raise ValueError(
            f"{what}: Chakra states a {n.collective}'s size per rank, and "
            f"size_bytes {n.size_bytes} is not a multiple of the {k} ranks"
        )


def write_chakra_workload(
    workload: Workload, prefix: str | os.PathLike[str], *, remote_deps: str = "error"
) -> list[str]:
    """Write a workload as Chakra execution traces, one per rank.

    Rank ``r``'s file holds, in node order, every node ``r`` takes part in:
    a ``COMP_NODE`` (``duration_micros``, rounded to the microsecond, plus
    ``num_ops`` / ``tensor_size`` for work given as FLOPs and bytes), a
    ``COMM_COLL_NODE`` (``comm_type``, ``comm_size`` as the module
    docstring maps it, ``pg_name``, and ``comm_root`` for a root option), or
    the ``COMM_SEND_NODE`` / ``COMM_RECV_NODE`` of a message (``comm_tag``
    is the node id). Node ``i`` has Chakra id ``i + 1`` and ``data_deps``
    its dependencies at ``r``. Id 0 is a ``METADATA_NODE`` describing the
    process groups as PyTorch does (``process_group:init``, read by
    ASTRA-sim): ``"0"`` is every rank in order, other communicators are
    numbered from 1.

    Parameters
    ----------
    workload : Workload
    prefix : path-like
        Files are ``f"{prefix}.{rank}.et"``; the folder must exist.
    remote_deps : {"error", "drop"}
        A dependency of a node at rank ``r`` on a node ``r`` takes no part in
        (``deps=[...]`` given as one list for a collective, say) cannot be
        stated in ``r``'s trace: ``"error"`` refuses it, ``"drop"`` leaves it
        out (``r`` then enters when its own dependencies are met; the
        collective still waits for the other ranks' data). Either way a
        message's receiver waiting for what its sender waits for is left out
        without loss: the message cannot arrive before it is sent.

    Returns
    -------
    list of str
        The files written.

    Raises
    ------
    ValueError
        For what a Chakra trace cannot state: a dependency on a node the
        rank takes no part in, an alltoallv, builder options other than
        ``root``, or an allgather / gather whose size is not a multiple of
        its ranks.

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> w = wc.workload(4)
    >>> _ = w.collective("reduce_scatter", 4096, [0, 2])
    >>> files = wc.io.write_chakra_workload(w, os.path.join(tempfile.mkdtemp(), "w"))
    >>> [os.path.basename(f) for f in files]
    ['w.0.et', 'w.1.et', 'w.2.et', 'w.3.et']
    """
    prefix = os.fspath(prefix)
    folder = os.path.dirname(prefix) or "."
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"prefix: folder {folder!r} does not exist")
    files = []
    traces = chakra_workload_traces(workload, remote_deps=remote_deps)
    for r, data in enumerate(traces):
        path = f"{prefix}.{r}.et"
        write_atomic(path, data)
        files.append(path)
    return files
