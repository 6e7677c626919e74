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

import ast
import heapq
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._util import write_atomic
from ..workloads import ComputeModel, Workload
from ._common import FormatError, delimited_records, encode_varint, read_bytes
from .chakra import (
    CHAKRA_COMM_TYPES,
    CHAKRA_NODE_TYPES,
    CHAKRA_SCHEMA_VERSION,
    chakra_attr_value,
    chakra_files,
    chakra_messages,
)

__all__ = [
    "CHAKRA_COLLECTIVES",
    "chakra_workload_traces",
    "read_chakra_workload",
    "write_chakra_workload",
]

#: Chakra ``comm_type`` name -> (wafercoll collective, whether ``comm_size``
#: is one rank's block, so that ``size_bytes = comm_size * group size``).
#: See the module docstring for the sources.
CHAKRA_COLLECTIVES: dict[str, tuple[str, bool]] = {
    "ALL_REDUCE": ("allreduce", False),
    "REDUCE": ("reduce", False),
    "ALL_GATHER": ("allgather", True),
    "GATHER": ("gather", True),
    "SCATTER": ("scatter", False),
    "BROADCAST": ("broadcast", False),
    "ALL_TO_ALL": ("alltoall", False),
    "REDUCE_SCATTER": ("reduce_scatter", False),
    "REDUCE_SCATTER_BLOCK": ("reduce_scatter", False),
}
_COMM_NAMES = {v: k for k, v in CHAKRA_COMM_TYPES.items()}
#: The comm_type the writer uses for each collective.
_WRITE_TYPES = {
    c: CHAKRA_COMM_TYPES[k]
    for k, (c, _) in CHAKRA_COLLECTIVES.items()
    if k != "REDUCE_SCATTER_BLOCK"
}
_ROOTED = ("reduce", "broadcast", "gather", "scatter")
_T = CHAKRA_NODE_TYPES
_TYPE_NAMES = {v: k for k, v in _T.items()}
#: The name of the process-group node PyTorch's execution trace records.
_PG_NODE = "process_group:init"
_WORLD = "0"


@dataclass
class _RankNode:
    """One decoded ``Node`` of one rank's trace."""

    rank: int
    record: int
    id: int
    name: str
    type: int
    deps: tuple[int, ...]
    duration_us: int
    attrs: dict[str, Any]
    inputs: str
    path: str

    def where(self) -> str:
        return f"rank {self.rank} node {self.id} ({self.path}, record {self.record})"

    def num(self, key: str, default: int | None = None) -> int:
        v = self.attrs.get(key)
        if v is None:
            if default is None:
                raise FormatError(
                    f"node {self.id}: a {_TYPE_NAMES[self.type]} without {key}",
                    path=self.path,
                    element=f"record {self.record}",
                )
            return default
        if isinstance(v, (bytes, str)) or not (0 <= v < 2**64) or int(v) != v:
            raise FormatError(
                f"node {self.id}: {key} must be an integer >= 0, got {v!r}",
                path=self.path,
                element=f"record {self.record}",
            )
        return int(v)


@dataclass
class _Vertex:
    """A workload node to be: the rank nodes it is made of, per rank."""

    kind: str
    ranks: tuple[int, ...]
    members: dict[int, _RankNode]
    collective: str = ""
    size: int = 0
    options: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple[int, int]:
        r = min(self.members)
        return (min(n.id for n in self.members.values()), r)


# --------------------------------------------------------------------------- #
# Reading
# --------------------------------------------------------------------------- #
def _decode(
    files: list[str], ctrl: bool
) -> tuple[list[dict[str, Any]], list[list[_RankNode]]]:
    """Metadata attributes and nodes of every rank's file."""
    msgs = chakra_messages()  # first: it explains a missing protobuf
    from google.protobuf.message import DecodeError

    Meta, Node = msgs["GlobalMetadata"], msgs["Node"]
    metas: list[dict[str, Any]] = []
    nodes: list[list[_RankNode]] = []
    for r, path in enumerate(files):
        data, _ = read_bytes(path, "Chakra trace")
        assert isinstance(data, bytes)
        records = delimited_records(data, path)
        if not records:
            raise FormatError("empty file (no GlobalMetadata)", path=path)
        try:
            meta = Meta.FromString(records[0])
        except DecodeError as exc:
            raise FormatError(
                f"not a Chakra GlobalMetadata: {exc}", path=path, element="record 0"
            ) from None
        metas.append({a.name: chakra_attr_value(a) for a in meta.attr})
        mine: list[_RankNode] = []
        seen: set[int] = set()
        for k, body in enumerate(records[1:], start=1):
            try:
                n = Node.FromString(body)
            except DecodeError as exc:
                raise FormatError(
                    f"not a Chakra Node: {exc}", path=path, element=f"record {k}"
                ) from None
            if n.id in seen:
                raise FormatError(
                    f"node id {n.id} appears twice", path=path, element=f"record {k}"
                )
            if n.type not in _TYPE_NAMES:
                raise FormatError(
                    f"node {n.id}: unknown node type {n.type} (et_def.proto has "
                    f"{', '.join(f'{v} = {k}' for k, v in _T.items())})",
                    path=path,
                    element=f"record {k}",
                )
            seen.add(n.id)
            attrs = {a.name: chakra_attr_value(a) for a in n.attr}
            duration = n.duration_micros
            if not duration and isinstance(attrs.get("duration_micros"), int):
                duration = attrs["duration_micros"]
            mine.append(
                _RankNode(
                    r,
                    k,
                    n.id,
                    n.name,
                    n.type,
                    tuple(
                        dict.fromkeys([*n.data_deps, *(n.ctrl_deps if ctrl else ())])
                    ),
                    int(duration),
                    attrs,
                    n.inputs.values,
                    path,
                )
            )
        for n in mine:
            for d in n.deps:
                if d not in seen:
                    raise FormatError(
                        f"node {n.id} depends on node {d}, which the file lacks",
                        path=path,
                        element=f"record {n.record}",
                    )
        nodes.append(mine)
    return metas, nodes


def _group_list(text: str, n: _RankNode) -> list[dict[str, Any]] | None:
    """The group descriptions of a metadata node's ``inputs.values``."""
    text = text.strip()
    if not text:
        return None
    value: Any
    try:
        value = ast.literal_eval(text)  # Chakra writes str() of PyTorch's list
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = text
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            value = None
    ok = isinstance(value, list) and all(
        isinstance(g, dict) and "pg_name" in g and isinstance(g.get("ranks"), list)
        for g in value
    )
    if not ok:
        if _PG_NODE in n.name:
            raise FormatError(
                f"node {n.id}: the process-group description in inputs.values is "
                'not a list of {"pg_name": ..., "ranks": [...]}',
                path=n.path,
                element=f"record {n.record}",
            )
        return None
    return value


def _groups(
    comm_groups: Any, nodes: list[list[_RankNode]], p: int
) -> dict[str, tuple[int, ...]]:
    """Process group name -> its ranks in communicator order."""
    world = tuple(range(p))
    out: dict[str, tuple[int, ...]] = {_WORLD: world}
    origin: dict[str, str] = {_WORLD: "the default group"}

    def define(name: Any, ranks: Any, where: str) -> None:
        key = str(name)
        if isinstance(ranks, (str, bytes)) or not isinstance(ranks, Sequence):
            raise ValueError(f"{where}: group {key!r}: ranks must be a list of ranks")
        try:
            rs = tuple(int(x) for x in ranks)
        except (TypeError, ValueError):
            raise ValueError(
                f"{where}: group {key!r}: ranks must be integers, got {list(ranks)}"
            ) from None
        rs = rs or world
        if any(not 0 <= x < p for x in rs) or len(set(rs)) != len(rs):
            raise ValueError(
                f"{where}: group {key!r}: ranks must be distinct ranks in [0, {p}) "
                f"(one trace per rank), got {list(rs)}"
            )
        if key in out and out[key] != rs:
            raise ValueError(
                f"process group {key!r} is {list(out[key])} in {origin[key]} but "
                f"{list(rs)} in {where}"
            )
        out[key] = rs
        origin.setdefault(key, where)

    if comm_groups is not None:
        where = "comm_groups"
        if isinstance(comm_groups, (str, os.PathLike)):
            where = os.fspath(comm_groups)
            data, _ = read_bytes(comm_groups, "communicator group")
            try:
                comm_groups = json.loads(data)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise FormatError(f"not JSON: {exc}", path=where) from None
        if not isinstance(comm_groups, Mapping):
            raise TypeError(
                "comm_groups must map group names to lists of ranks, or be the "
                'path of a JSON file {"1": [0, 1], ...}'
            )
        for name, ranks in comm_groups.items():
            define(name, ranks, where)
    for rank_nodes in nodes:
        for n in rank_nodes:
            if n.type == _T["METADATA_NODE"]:
                for g in _group_list(n.inputs, n) or ():
                    define(g["pg_name"], g["ranks"], n.where())
    return out


def _compute(n: _RankNode, model: ComputeModel | None) -> dict[str, Any]:
    """The arguments of :meth:`Workload.compute` for a ``COMP_NODE``."""
    work = {
        key: float(n.num(attr))
        for key, attr in (("flops", "num_ops"), ("mem_bytes", "tensor_size"))
        if n.attrs.get(attr) is not None
    }
    if work and model is not None:
        return work
    if work and not n.duration_us:
        raise ValueError(
            f"{n.where()}: a COMP_NODE with {' and '.join(sorted(work))} but no "
            "duration_micros needs a compute model: pass compute_model="
            "(e.g. wc.workloads.Roofline(peak_flops, memory_Bps))"
        )
    return {"seconds": n.duration_us / 1e6}


def _collectives(
    nodes: list[list[_RankNode]], groups: dict[str, tuple[int, ...]]
) -> list[_Vertex]:
    """Match every group's collectives across its ranks, in trace order."""
    streams: dict[str, dict[int, list[_RankNode]]] = {}
    for rank_nodes in nodes:
        for n in rank_nodes:
            if n.type != _T["COMM_COLL_NODE"]:
                continue
            pg = n.attrs.get("pg_name")
            key = _WORLD if pg in (None, "") else str(pg)
            if key not in groups:
                raise ValueError(
                    f"{n.where()}: process group {key!r} is not described: pass "
                    "comm_groups= (a mapping or ASTRA-sim's JSON file) or keep the "
                    "trace's process_group:init metadata node"
                )
            if n.rank not in groups[key]:
                raise ValueError(
                    f"{n.where()}: rank {n.rank} is not a member of process group "
                    f"{key!r} (ranks {list(groups[key])})"
                )
            streams.setdefault(key, {}).setdefault(n.rank, []).append(n)
    out: list[_Vertex] = []
    for key, per_rank in streams.items():
        comm = groups[key]
        label = f"process group {key!r} (ranks {list(comm)})"
        count = max(len(v) for v in per_rank.values())
        for i in range(count):
            have = {r: per_rank[r][i] for r in comm if len(per_rank.get(r, ())) > i}
            ref = have[min(have, key=comm.index)]
            for r in comm:
                if r not in have:
                    raise ValueError(
                        f"{label}: rank {r} has {len(per_rank.get(r, ()))} "
                        f"collectives but {ref.where()} is collective #{i + 1} "
                        "of the group: every member must call the group's "
                        "collectives in the same order"
                    )
            ref_sig = _signature(ref, len(comm))
            for r in comm:
                sig = _signature(have[r], len(comm))
                if sig != ref_sig:
                    raise ValueError(
                        f"{label}, collective #{i + 1}: {have[r].where()} is "
                        f"{_sig_text(sig)} but {ref.where()} is {_sig_text(ref_sig)}"
                    )
            collective, size, root = ref_sig
            options: dict[str, Any] = {}
            if root is not None:
                if collective not in _ROOTED:
                    raise ValueError(f"{ref.where()}: comm_root on a {collective}")
                if root not in comm:
                    raise ValueError(
                        f"{ref.where()}: comm_root {root} is not in {label}"
                    )
                options["root"] = comm.index(root)
            algorithm = ref.attrs.get("wafercoll_algorithm")
            if isinstance(algorithm, str) and algorithm and algorithm != "auto":
                options["algorithm"] = algorithm
            out.append(_Vertex("collective", comm, have, collective, size, options))
    return out


def _signature(n: _RankNode, k: int) -> tuple[str, int, int | None]:
    """(collective, size_bytes, root rank or None) of a ``COMM_COLL_NODE``."""
    ct = n.num("comm_type")
    name = _COMM_NAMES.get(ct)
    if name not in CHAKRA_COLLECTIVES:
        what = name or f"comm_type {ct}"
        raise ValueError(
            f"{n.where()}: collective {what} is not supported (wafercoll reads "
            f"{', '.join(CHAKRA_COLLECTIVES)})"
        )
    collective, per_block = CHAKRA_COLLECTIVES[name]
    size = n.num("comm_size")
    root = n.num("comm_root") if n.attrs.get("comm_root") is not None else None
    return (collective, size * k if per_block else size, root)


def _sig_text(sig: tuple[str, int, int | None]) -> str:
    text = f"{sig[0]} of {sig[1]} bytes"
    return text if sig[2] is None else f"{text} rooted at rank {sig[2]}"


def _messages(nodes: list[list[_RankNode]]) -> list[_Vertex]:
    """Sends matched with receives by (source, destination, tag), in order."""
    p = len(nodes)
    queues: dict[tuple[int, int, int], tuple[list[_RankNode], list[_RankNode]]] = {}
    for rank_nodes in nodes:
        for n in rank_nodes:
            if n.type not in (_T["COMM_SEND_NODE"], _T["COMM_RECV_NODE"]):
                continue
            send = n.type == _T["COMM_SEND_NODE"]
            src = n.num("comm_src", n.rank if send else None)
            dst = n.num("comm_dst", None if send else n.rank)
            me, peer = (src, dst) if send else (dst, src)
            if me != n.rank or not 0 <= peer < p or peer == n.rank:
                raise ValueError(
                    f"{n.where()}: comm_src {src} / comm_dst {dst} do not fit a "
                    f"{'send' if send else 'receive'} of rank {n.rank} among {p} ranks"
                )
            q = queues.setdefault((src, dst, n.num("comm_tag", 0)), ([], []))
            q[0 if send else 1].append(n)
    out = []
    for (src, dst, tag), (sends, recvs) in queues.items():
        for s, r in zip(sends, recvs, strict=False):
            if s.num("comm_size") != r.num("comm_size"):
                raise ValueError(
                    f"{s.where()} sends {s.num('comm_size')} bytes but its receive "
                    f"{r.where()} expects {r.num('comm_size')}"
                )
            out.append(
                _Vertex("send", (src, dst), {src: s, dst: r}, size=s.num("comm_size"))
            )
        if len(sends) != len(recvs):
            more_sends = len(sends) > len(recvs)
            extra = (sends if more_sends else recvs)[min(len(sends), len(recvs))]
            raise ValueError(
                f"{extra.where()}: no matching "
                f"{'receive' if more_sends else 'send'} (comm_src {src}, "
                f"comm_dst {dst}, comm_tag {tag}): rank {src} sends "
                f"{len(sends)} and rank {dst} receives {len(recvs)}"
            )
    return out


def _order(
    vertices: list[_Vertex], nodes: list[list[_RankNode]]
) -> tuple[list[int], list[dict[int, list[int]]]]:
    """A topological order of the vertices and each one's per-rank deps."""
    at: dict[tuple[int, int], int] = {}
    for v, vx in enumerate(vertices):
        for r, n in vx.members.items():
            at[(r, n.id)] = v
    by_id = [{n.id: n for n in rank_nodes} for rank_nodes in nodes]
    memo: dict[tuple[int, int], frozenset[int]] = {}

    def through(r: int, nid: int) -> frozenset[int]:
        """Vertices a dependency on (r, nid) stands for (zero-time nodes skipped)."""
        if (r, nid) in at:
            return frozenset([at[(r, nid)]])
        stack, open_ = [nid], set()
        while stack:
            x = stack[-1]
            if (r, x) in memo:
                stack.pop()
                continue
            open_.add(x)
            todo = [
                d for d in by_id[r][x].deps if (r, d) not in at and (r, d) not in memo
            ]
            for d in todo:
                if d in open_:
                    raise ValueError(
                        f"{by_id[r][d].where()}: its dependencies form a cycle"
                    )
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            open_.discard(x)
            parts = [
                frozenset([at[(r, d)]]) if (r, d) in at else memo[(r, d)]
                for d in by_id[r][x].deps
            ]
            memo[(r, x)] = frozenset().union(*parts)
        return memo[(r, nid)]

    deps: list[dict[int, list[int]]] = []
    preds: list[set[int]] = []
    for v, vx in enumerate(vertices):
        per: dict[int, list[int]] = {}
        for r, n in vx.members.items():
            got: set[int] = set()
            for d in n.deps:
                got |= through(r, d)
            if v in got:
                raise ValueError(f"{n.where()}: depends on itself (a cycle)")
            per[r] = sorted(got)
        deps.append(per)
        preds.append({d for ds in per.values() for d in ds})
    succ: list[list[int]] = [[] for _ in vertices]
    indeg = [len(ps) for ps in preds]
    for v, ps in enumerate(preds):
        for d in ps:
            succ[d].append(v)
    heap = [(vertices[v].key(), v) for v in range(len(vertices)) if not indeg[v]]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        _, v = heapq.heappop(heap)
        order.append(v)
        for s in succ[v]:
            indeg[s] -= 1
            if not indeg[s]:
                heapq.heappush(heap, (vertices[s].key(), s))
    if len(order) < len(vertices):
        stuck = sorted(
            (v for v in range(len(vertices)) if indeg[v]),
            key=lambda v: vertices[v].key(),
        )
        names = "; ".join(
            ", ".join(n.where() for n in vertices[v].members.values())
            for v in stuck[:4]
        )
        raise ValueError(
            f"the traces' dependencies form a cycle across ranks ({len(stuck)} "
            f"operations wait on each other, e.g. {names}); a collective must be "
            "reachable on every member rank"
        )
    return order, deps


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
    metas, nodes = _decode(files, bool(ctrl_deps))
    groups = _groups(comm_groups, nodes, p)
    vertices: list[_Vertex] = []
    compute_args: dict[int, dict[str, Any]] = {}
    for rank_nodes in nodes:
        for n in rank_nodes:
            if n.type == _T["COMP_NODE"]:
                compute_args[len(vertices)] = _compute(n, compute_model)
                vertices.append(_Vertex("compute", (n.rank,), {n.rank: n}))
    vertices += _collectives(nodes, groups)
    vertices += _messages(nodes)
    order, deps = _order(vertices, nodes)
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
            wid[v] = w.compute(r, deps=dl[r], name=first.name, **compute_args[v])
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
                _WORLD
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
                    name=f"## {_PG_NODE} ##",
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
                    Attr(name="comm_type", int64_val=_WRITE_TYPES[n.collective]),
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
        parts = []
        for m in (meta, *per_rank[r]):
            body = m.SerializeToString()
            parts.append(encode_varint(len(body)))
            parts.append(body)
        out.append(b"".join(parts))
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
    if n.collective not in _WRITE_TYPES:
        raise ValueError(
            f"{what}: Chakra has no comm_type for {n.collective} (it writes "
            f"{', '.join(_WRITE_TYPES)})"
        )
    extra = set(n.options) - ({"root"} if n.collective in _ROOTED else set())
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
