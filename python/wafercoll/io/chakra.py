"""Chakra execution traces: the per-rank input of ASTRA-sim.

A trace is one file per rank, ``<prefix>.<rank>.et``: length-delimited
protobuf records (a varint length, then the message), first a
``GlobalMetadata``, then one ``Node`` per operation. :func:`write_chakra`
writes, for every transfer, a ``COMM_SEND_NODE`` at the source per
destination and a ``COMM_RECV_NODE`` at each destination (attributes
``comm_src``, ``comm_dst``, ``comm_size``, ``comm_tag``: the tag is the
transfer's index, so each send matches exactly one receive), followed at the
destination of a reducing transfer by a ``COMP_NODE`` for the reduction
(``num_ops`` elements, ``tensor_size`` bytes). Every node's ``data_deps``
name the nodes of the same rank it must follow: those of the nearest
earlier transfers (by the schedule's dependencies) at that rank.

Schema: mlcommons/chakra ``schema/protobuf/et_def.proto`` (commit 21585d8):
package ``ChakraProtoMsg``; ``GlobalMetadata {string version = 1; repeated
AttributeProto attr = 2}``; ``Node {uint64 id = 1; string name = 2; NodeType
type = 3; repeated uint64 ctrl_deps = 4; repeated uint64 data_deps = 5;
uint64 start_time_micros = 6; uint64 duration_micros = 7; IOInfo inputs =
8; IOInfo outputs = 9; repeated AttributeProto attr = 10}``; ``IOInfo
{string values = 1; string shapes = 2; string types = 3}``;
``AttributeProto {string name = 1; string doc_string = 2; oneof value
{double double_val = 3; int32 int32_val = 7; int64 int64_val = 9; uint64
uint64_val = 13; bool bool_val = 27; string string_val = 29; ...}}``;
``NodeType`` (:data:`CHAKRA_NODE_TYPES`) and ``CollectiveCommType``
(:data:`CHAKRA_COMM_TYPES`) as listed there. Attribute names and value
types are those ASTRA-sim's feeder reads (``src/feeder/et_feeder_node.cpp``):
``comm_src``, ``comm_dst``, ``comm_tag`` (int32), ``comm_size`` (int64),
``num_ops`` (int64), ``tensor_size`` (uint64), ``is_cpu_op`` (bool).

The messages are described at run time with ``google.protobuf``'s descriptor
API (no generated code to keep in step), so the package needs ``protobuf``
(``pip install "wafercoll[interop]"``).
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from .._util import block_text, write_atomic
from ..schedule import Schedule
from ._common import (
    FormatError,
    RankFrontier,
    Transfers,
    check_verified,
    delimited_records,
    frame_messages,
    read_bytes,
)
from ._messages import Op, messages_schedule

__all__ = [
    "CHAKRA_COMM_TYPES",
    "CHAKRA_NODE_TYPES",
    "CHAKRA_SCHEMA_VERSION",
    "chakra_attr_value",
    "chakra_files",
    "chakra_messages",
    "chakra_traces",
    "read_chakra",
    "write_chakra",
]

#: NodeType values of et_def.proto.
CHAKRA_NODE_TYPES = {
    "INVALID_NODE": 0,
    "METADATA_NODE": 1,
    "MEM_LOAD_NODE": 2,
    "MEM_STORE_NODE": 3,
    "COMP_NODE": 4,
    "COMM_SEND_NODE": 5,
    "COMM_RECV_NODE": 6,
    "COMM_COLL_NODE": 7,
}
#: CollectiveCommType values of et_def.proto (the ``comm_type`` attribute).
CHAKRA_COMM_TYPES = {
    "ALL_REDUCE": 0,
    "REDUCE": 1,
    "ALL_GATHER": 2,
    "GATHER": 3,
    "SCATTER": 4,
    "BROADCAST": 5,
    "ALL_TO_ALL": 6,
    "REDUCE_SCATTER": 7,
    "REDUCE_SCATTER_BLOCK": 8,
    "BARRIER": 9,
}
#: The ``version`` the writers put in each trace's GlobalMetadata.
CHAKRA_SCHEMA_VERSION = "0.0.4"


@lru_cache(maxsize=1)
def chakra_messages() -> dict[str, Any]:
    """Message classes ``GlobalMetadata``, ``Node``, ``AttributeProto``, ``IOInfo``.

    Built from a descriptor written here after et_def.proto (the module
    docstring): every scalar value of ``AttributeProto`` (the list values
    are left out and kept as unknown fields) and ``Node``'s ``inputs`` /
    ``outputs`` (``IOInfo {string values = 1; string shapes = 2; string
    types = 3}``), where PyTorch's process-group metadata travels.

    Examples
    --------
    >>> from wafercoll.io import chakra_messages
    >>> Node = chakra_messages()["Node"]
    >>> Node.FromString(Node(id=3, duration_micros=7).SerializeToString()).id
    3
    """
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    except ImportError as exc:  # pragma: no cover - depends on environment
        raise ImportError(
            'Chakra export needs protobuf: pip install "wafercoll[interop]" '
            "(or pip install protobuf)"
        ) from exc
    F = descriptor_pb2.FieldDescriptorProto
    fd = descriptor_pb2.FileDescriptorProto(
        name="wafercoll_chakra_et_def.proto", package="ChakraProtoMsg", syntax="proto3"
    )
    enum = fd.enum_type.add(name="NodeType")
    for name, value in CHAKRA_NODE_TYPES.items():
        enum.value.add(name=name, number=value)

    def add(
        msg: Any,
        name: str,
        number: int,
        ftype: int,
        *,
        repeated: bool = False,
        type_name: str | None = None,
        oneof: int | None = None,
    ) -> None:
        f = msg.field.add(
            name=name,
            number=number,
            type=ftype,
            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL,
        )
        if type_name:
            f.type_name = type_name
        if oneof is not None:
            f.oneof_index = oneof

    attr = fd.message_type.add(name="AttributeProto")
    attr.oneof_decl.add(name="value")
    add(attr, "name", 1, F.TYPE_STRING)
    add(attr, "doc_string", 2, F.TYPE_STRING)
    for fname, number, ftype in (
        ("double_val", 3, F.TYPE_DOUBLE),
        ("float_val", 5, F.TYPE_FLOAT),
        ("int32_val", 7, F.TYPE_INT32),
        ("int64_val", 9, F.TYPE_INT64),
        ("uint32_val", 11, F.TYPE_UINT32),
        ("uint64_val", 13, F.TYPE_UINT64),
        ("sint32_val", 15, F.TYPE_SINT32),
        ("sint64_val", 17, F.TYPE_SINT64),
        ("fixed32_val", 19, F.TYPE_FIXED32),
        ("fixed64_val", 21, F.TYPE_FIXED64),
        ("sfixed32_val", 23, F.TYPE_SFIXED32),
        ("sfixed64_val", 25, F.TYPE_SFIXED64),
        ("bool_val", 27, F.TYPE_BOOL),
        ("string_val", 29, F.TYPE_STRING),
        ("bytes_val", 31, F.TYPE_BYTES),
    ):
        add(attr, fname, number, ftype, oneof=0)
    io = fd.message_type.add(name="IOInfo")
    add(io, "values", 1, F.TYPE_STRING)
    add(io, "shapes", 2, F.TYPE_STRING)
    add(io, "types", 3, F.TYPE_STRING)
    meta = fd.message_type.add(name="GlobalMetadata")
    add(meta, "version", 1, F.TYPE_STRING)
    add(
        meta,
        "attr",
        2,
        F.TYPE_MESSAGE,
        repeated=True,
        type_name=".ChakraProtoMsg.AttributeProto",
    )
    node = fd.message_type.add(name="Node")
    add(node, "id", 1, F.TYPE_UINT64)
    add(node, "name", 2, F.TYPE_STRING)
    add(node, "type", 3, F.TYPE_ENUM, type_name=".ChakraProtoMsg.NodeType")
    add(node, "ctrl_deps", 4, F.TYPE_UINT64, repeated=True)
    add(node, "data_deps", 5, F.TYPE_UINT64, repeated=True)
    add(node, "start_time_micros", 6, F.TYPE_UINT64)
    add(node, "duration_micros", 7, F.TYPE_UINT64)
    add(node, "inputs", 8, F.TYPE_MESSAGE, type_name=".ChakraProtoMsg.IOInfo")
    add(node, "outputs", 9, F.TYPE_MESSAGE, type_name=".ChakraProtoMsg.IOInfo")
    add(
        node,
        "attr",
        10,
        F.TYPE_MESSAGE,
        repeated=True,
        type_name=".ChakraProtoMsg.AttributeProto",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return {
        name: message_factory.GetMessageClass(
            pool.FindMessageTypeByName(f"ChakraProtoMsg.{name}")
        )
        for name in ("AttributeProto", "GlobalMetadata", "IOInfo", "Node")
    }


def chakra_traces(schedule: Schedule, *, element_bytes: int = 4) -> list[bytes]:
    """The ``.et`` file contents of each rank (see :func:`write_chakra`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> traces = wc.io.chakra_traces(wc.build("generic_ring_allreduce", 4, 64))
    >>> len(traces), type(traces[0]).__name__
    (4, 'bytes')
    """
    from .._util import as_int

    s = check_verified(schedule, "Chakra export")
    eb = as_int(element_bytes, "element_bytes", 1, 1 << 10)
    msgs = chakra_messages()
    Attr, Meta, Node = msgs["AttributeProto"], msgs["GlobalMetadata"], msgs["Node"]
    tr = Transfers.of(s)
    p = s.num_ranks
    nodes: list[list[Any]] = [[] for _ in range(p)]
    frontier = RankFrontier(tr)

    def attr(name: str, **value: Any) -> Any:
        return Attr(name=name, **value)

    def new(
        r: int, name: str, ntype: str, deps: frozenset[int] | set[int], attrs: list[Any]
    ) -> int:
        nid = len(nodes[r])
        nodes[r].append(
            Node(
                id=nid,
                name=name,
                type=CHAKRA_NODE_TYPES[ntype],
                data_deps=sorted(deps),
                attr=[attr("is_cpu_op", bool_val=False), *attrs],
            )
        )
        return nid

    name = s.name or s.collective
    for t in tr.order:
        x, nbytes = tr.src[t], tr.nbytes[t]
        if nbytes == 0:
            continue
        blocks = block_text(tr.ranges[t])
        send_deps = frontier(t, x)
        sends = []
        for d in tr.dsts[t]:
            comm = [
                attr("comm_src", int32_val=x),
                attr("comm_dst", int32_val=d),
                attr("comm_size", int64_val=nbytes),
                attr("comm_tag", int32_val=t),
            ]
            sends.append(
                new(
                    x,
                    f"{name} t{t} send {x}->{d} blocks {blocks}",
                    "COMM_SEND_NODE",
                    send_deps,
                    comm,
                )
            )
            rid = new(
                d,
                f"{name} t{t} recv {x}->{d} blocks {blocks}",
                "COMM_RECV_NODE",
                frontier(t, d),
                comm,
            )
            last = rid
            if tr.op[t] == 1:
                last = new(
                    d,
                    f"{name} t{t} reduce blocks {blocks}",
                    "COMP_NODE",
                    {rid},
                    [
                        attr("num_ops", int64_val=max(1, nbytes // eb)),
                        attr("tensor_size", uint64_val=nbytes),
                    ],
                )
            frontier.done(t, d, [last])
        frontier.done(t, x, sends)

    out = []
    for r in range(p):
        meta = Meta(
            version=CHAKRA_SCHEMA_VERSION,
            attr=[
                attr("schema", string_val="wafercoll export of a verified schedule"),
                attr("rank", int64_val=r),
                attr("ranks", int64_val=p),
                attr("collective", string_val=s.collective),
            ],
        )
        out.append(frame_messages((meta, *nodes[r])))
    return out


def write_chakra(
    schedule: Schedule,
    prefix: str | os.PathLike[str],
    *,
    element_bytes: int = 4,
) -> list[str]:
    """Write a verified schedule as Chakra execution traces, one per rank.

    Parameters
    ----------
    schedule : Schedule
        Verified first.
    prefix : path-like
        Files are ``f"{prefix}.{rank}.et"`` (ASTRA-sim's naming; give ASTRA-sim
        the prefix). The folder must exist.
    element_bytes : int
        Bytes per element, for the reductions' ``num_ops`` (default 4, fp32).

    Returns
    -------
    list of str
        The files written.

    Examples
    --------
    >>> import wafercoll as wc, tempfile, os
    >>> s = wc.build("generic_ring_allreduce", 4, 4096)
    >>> d = tempfile.mkdtemp()
    >>> files = wc.io.write_chakra(s, os.path.join(d, "ring"))
    >>> [os.path.basename(f) for f in files][:2]
    ['ring.0.et', 'ring.1.et']
    """
    prefix = os.fspath(prefix)
    folder = os.path.dirname(prefix) or "."
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"prefix: folder {folder!r} does not exist")
    files = []
    for r, data in enumerate(chakra_traces(schedule, element_bytes=element_bytes)):
        path = f"{prefix}.{r}.et"
        write_atomic(path, data)
        files.append(path)
    return files


def chakra_files(prefix: str | os.PathLike[str] | list[Any]) -> list[str]:
    """The trace files of ranks 0, 1, ...: ``f"{prefix}.{rank}.et"``, or a list.

    A list (or tuple) of paths is taken as the files in rank order; a prefix
    finds ``prefix.0.et``, ``prefix.1.et``, ... up to the first missing one.

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> prefix = os.path.join(tempfile.mkdtemp(), "ring")
    >>> _ = wc.io.write_chakra(wc.build("generic_ring_allreduce", 3, 48), prefix)
    >>> [os.path.basename(f) for f in wc.io.chakra_files(prefix)]
    ['ring.0.et', 'ring.1.et', 'ring.2.et']
    """
    if isinstance(prefix, (list, tuple)):
        if not prefix:
            raise ValueError("the list of Chakra trace files is empty")
        return [os.fspath(f) for f in prefix]
    prefix = os.fspath(prefix)
    files = []
    while os.path.exists(f"{prefix}.{len(files)}.et"):
        files.append(f"{prefix}.{len(files)}.et")
    if not files:
        raise FileNotFoundError(f"no Chakra traces {prefix}.0.et, {prefix}.1.et, ...")
    return files


def chakra_attr_value(attr: Any) -> Any:
    """The value of an ``AttributeProto``, whichever scalar field holds it.

    None when the attribute holds no value or a list.

    Examples
    --------
    >>> from wafercoll.io import chakra_attr_value, chakra_messages
    >>> Attr = chakra_messages()["AttributeProto"]
    >>> chakra_attr_value(Attr(name="comm_size", int64_val=4096))
    4096
    """
    which = attr.WhichOneof("value")
    return None if which is None else getattr(attr, which)


def read_chakra(
    prefix: str | os.PathLike[str] | list[Any],
    *,
    messages: Any = None,
    block_bytes: Any = None,
    collective: str | None = None,
    root: int | None = None,
    owners: Any = None,
) -> Schedule:
    """Read Chakra execution traces (one ``.et`` per rank) into a Schedule.

    Parameters
    ----------
    prefix : path-like or list of paths
        ``f"{prefix}.{rank}.et"`` for ranks 0, 1, ... (as
        :func:`write_chakra` and ASTRA-sim name them), or the files in rank
        order.
    messages, block_bytes, collective, root, owners
        As for :func:`wafercoll.io.read_goal`: Chakra carries message sizes,
        not data, so without ``messages`` the schedule's collective is
        ``"unknown"``: it simulates and is bounded from its own messages, but
        does not verify (a ``collective`` attribute of the metadata, as
        :func:`write_chakra` writes, is quoted in the reason, not trusted).

    Returns
    -------
    Schedule
        One transfer per ``COMM_SEND_NODE`` matched with the
        ``COMM_RECV_NODE`` of its destination with the same source and tag (in
        node order), waiting for what the nodes' ``data_deps`` and
        ``ctrl_deps`` require. ``COMP_NODE`` and other nodes order what
        depends on them and take no time. Labels are ``"rank r node id"``.

    Raises
    ------
    FormatError
        For a truncated or undecodable record, a node without its
        communication attributes, a dependency on an unknown node, an
        unmatched send or receive, or a cycle (naming the file and record).

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> prefix = os.path.join(tempfile.mkdtemp(), "ring")
    >>> files = wc.io.write_chakra(s, prefix)
    >>> t = wc.io.read_chakra(prefix)
    >>> t.num_ranks, t.num_transfers == s.num_transfers
    (4, True)
    """
    Node = chakra_messages()["Node"]
    Meta = chakra_messages()["GlobalMetadata"]
    from google.protobuf.message import DecodeError

    files = chakra_files(prefix)
    p = len(files)
    ops: list[dict[str, Op]] = [{} for _ in range(p)]
    reqs: list[list[tuple[str, str, str, int]]] = [[] for _ in range(p)]
    kinds = {
        CHAKRA_NODE_TYPES["COMM_SEND_NODE"]: "send",
        CHAKRA_NODE_TYPES["COMM_RECV_NODE"]: "recv",
    }
    declared: set[str] = set()  # collectives the metadata names
    for r, path in enumerate(files):
        data, _ = read_bytes(path, "Chakra trace")
        assert isinstance(data, bytes)
        by_id: dict[int, tuple[str, list[int], int]] = {}
        records = delimited_records(data, path)
        for k, body in enumerate(records):
            if k == 0:  # the GlobalMetadata: a stated collective, if any
                try:
                    meta = Meta.FromString(body)
                except DecodeError:
                    meta = None
                for a in meta.attr if meta is not None else ():
                    if a.name == "collective" and a.WhichOneof("value") == "string_val":
                        declared.add(a.string_val[:64])
            else:
                try:
                    node = Node.FromString(body)
                except DecodeError as exc:
                    raise FormatError(
                        f"not a Chakra Node: {exc}", path=path, element=f"record {k}"
                    ) from None
                label = f"node {node.id}"
                if node.id in by_id:
                    raise FormatError(
                        f"node id {node.id} appears twice",
                        path=path,
                        element=f"record {k}",
                    )
                attrs = {a.name: a for a in node.attr}
                kind = kinds.get(node.type, "calc")
                if kind == "calc":
                    ops[r][label] = Op(r, label, "calc", 0, -1, -1, k)
                else:
                    need = ("comm_src", "comm_dst", "comm_size", "comm_tag")
                    missing = [a for a in need if a not in attrs]
                    if missing:
                        raise FormatError(
                            f"{label}: a {kind} node without {', '.join(missing)}",
                            path=path,
                            element=f"record {k}",
                        )

                    def val(a: Any) -> int:
                        v = chakra_attr_value(a)
                        return 0 if v is None else int(v)

                    src, dst = val(attrs["comm_src"]), val(attrs["comm_dst"])
                    peer = dst if kind == "send" else src
                    me = src if kind == "send" else dst
                    if me != r or not 0 <= peer < p or peer == r:
                        raise FormatError(
                            f"{label}: comm_src {src} / comm_dst {dst} do not fit "
                            f"a {kind} of rank {r} among {p} ranks",
                            path=path,
                            element=f"record {k}",
                        )
                    ops[r][label] = Op(
                        r,
                        label,
                        kind,
                        val(attrs["comm_size"]),
                        peer,
                        val(attrs["comm_tag"]),
                        k,
                    )
                by_id[node.id] = (label, [*node.data_deps, *node.ctrl_deps], k)
        if not records:
            raise FormatError("empty file (no GlobalMetadata)", path=path)
        for label, deps, rec in by_id.values():
            for d in deps:
                if d not in by_id:
                    raise FormatError(
                        f"{label} depends on node {d}, which the file lacks",
                        path=path,
                        element=f"record {rec}",
                    )
                reqs[r].append((label, by_id[d][0], "requires", rec))
    name = os.path.basename(files[0]).rsplit(".", 2)[0]
    return messages_schedule(
        p,
        ops,
        reqs,
        ", ".join(files) if p <= 2 else f"{files[0]} ...",
        "Chakra",
        "read_chakra",
        name,
        messages,
        block_bytes,
        collective,
        root,
        owners,
        " / ".join(sorted(declared)) or None,
    )
