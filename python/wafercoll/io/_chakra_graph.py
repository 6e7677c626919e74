"""Decoding and matching for :mod:`wafercoll.io.chakra_workload`.

Each rank's trace is decoded into :class:`RankNode` records; compute nodes,
collectives matched across each process group's members, and messages
matched by (source, destination, tag) become :class:`Vertex` records, which
:func:`order_vertices` puts in a topological order of the union of the
per-rank dependency graphs (zero-time nodes passed through). The mapping and
its sources are described in :mod:`wafercoll.io.chakra_workload`.
"""

from __future__ import annotations

import ast
import heapq
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..workloads import ComputeModel
from ._common import FormatError, delimited_records, read_bytes
from .chakra import (
    CHAKRA_COMM_TYPES,
    CHAKRA_NODE_TYPES,
    chakra_attr_value,
    chakra_messages,
)

__all__ = [
    "CHAKRA_COLLECTIVES",
    "COMM_NAMES",
    "DEFAULT_GROUP",
    "PG_INIT_NODE",
    "ROOTED",
    "WRITE_TYPES",
    "RankNode",
    "Vertex",
    "compute_args",
    "decode_traces",
    "match_collectives",
    "match_messages",
    "order_vertices",
    "process_groups",
]


#: Chakra ``comm_type`` name -> (wafercoll collective, whether ``comm_size``
#: is one rank's block, so that ``size_bytes = comm_size * group size``).
#: See :mod:`wafercoll.io.chakra_workload` for the sources.
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
#: Chakra comm_type value -> its name.
COMM_NAMES = {v: k for k, v in CHAKRA_COMM_TYPES.items()}
#: The comm_type the writer uses for each collective.
WRITE_TYPES = {
    c: CHAKRA_COMM_TYPES[k]
    for k, (c, _) in CHAKRA_COLLECTIVES.items()
    if k != "REDUCE_SCATTER_BLOCK"
}
#: The collectives with a root (the ``root`` builder option).
ROOTED = ("reduce", "broadcast", "gather", "scatter")
_T = CHAKRA_NODE_TYPES
_TYPE_NAMES = {v: k for k, v in _T.items()}
#: The name of the process-group node PyTorch's execution trace records.
PG_INIT_NODE = "process_group:init"
#: The process group of every rank in rank order (ASTRA-sim's default).
DEFAULT_GROUP = "0"


@dataclass
class RankNode:
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
class Vertex:
    """A workload node to be: the rank nodes it is made of, per rank."""

    kind: str
    ranks: tuple[int, ...]
    members: dict[int, RankNode]
    collective: str = ""
    size: int = 0
    options: dict[str, Any] = field(default_factory=dict)

    def key(self) -> tuple[int, int]:
        r = min(self.members)
        return (min(n.id for n in self.members.values()), r)


def decode_traces(
    files: list[str], ctrl: bool
) -> tuple[list[dict[str, Any]], list[list[RankNode]]]:
    """Metadata attributes and nodes of every rank's file."""
    msgs = chakra_messages()  # first: it explains a missing protobuf
    from google.protobuf.message import DecodeError

    Meta, Node = msgs["GlobalMetadata"], msgs["Node"]
    metas: list[dict[str, Any]] = []
    nodes: list[list[RankNode]] = []
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
        mine: list[RankNode] = []
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
                RankNode(
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


def _group_list(text: str, n: RankNode) -> list[dict[str, Any]] | None:
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
        if PG_INIT_NODE in n.name:
            raise FormatError(
                f"node {n.id}: the process-group description in inputs.values is "
                'not a list of {"pg_name": ..., "ranks": [...]}',
                path=n.path,
                element=f"record {n.record}",
            )
        return None
    return value


def process_groups(
    comm_groups: Any, nodes: list[list[RankNode]], p: int
) -> dict[str, tuple[int, ...]]:
    """Process group name -> its ranks in communicator order."""
    world = tuple(range(p))
    out: dict[str, tuple[int, ...]] = {DEFAULT_GROUP: world}
    origin: dict[str, str] = {DEFAULT_GROUP: "the default group"}

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


def compute_args(n: RankNode, model: ComputeModel | None) -> dict[str, Any]:
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


def match_collectives(
    nodes: list[list[RankNode]], groups: dict[str, tuple[int, ...]]
) -> list[Vertex]:
    """Match every group's collectives across its ranks, in trace order."""
    streams: dict[str, dict[int, list[RankNode]]] = {}
    for rank_nodes in nodes:
        for n in rank_nodes:
            if n.type != _T["COMM_COLL_NODE"]:
                continue
            pg = n.attrs.get("pg_name")
            key = DEFAULT_GROUP if pg in (None, "") else str(pg)
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
    out: list[Vertex] = []
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
                if collective not in ROOTED:
                    raise ValueError(f"{ref.where()}: comm_root on a {collective}")
                if root not in comm:
                    raise ValueError(
                        f"{ref.where()}: comm_root {root} is not in {label}"
                    )
                options["root"] = comm.index(root)
            algorithm = ref.attrs.get("wafercoll_algorithm")
            if isinstance(algorithm, str) and algorithm and algorithm != "auto":
                options["algorithm"] = algorithm
            out.append(Vertex("collective", comm, have, collective, size, options))
    return out


def _signature(n: RankNode, k: int) -> tuple[str, int, int | None]:
    """(collective, size_bytes, root rank or None) of a ``COMM_COLL_NODE``."""
    ct = n.num("comm_type")
    name = COMM_NAMES.get(ct)
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


def match_messages(nodes: list[list[RankNode]]) -> list[Vertex]:
    """Sends matched with receives by (source, destination, tag), in order."""
    p = len(nodes)
    queues: dict[tuple[int, int, int], tuple[list[RankNode], list[RankNode]]] = {}
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
                Vertex("send", (src, dst), {src: s, dst: r}, size=s.num("comm_size"))
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


def order_vertices(
    vertices: list[Vertex], nodes: list[list[RankNode]]
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
