"""MSCCL XML: the algorithm format the MSCCL runtime executes on NCCL / RCCL.

A file holds one ``<algo>`` with a ``<gpu>`` per rank, each with thread blocks
``<tb>`` (one send peer, one receive peer, a channel) running ``<step>``
elements in program order. Buffers are counted in *chunks*: ``i`` (input),
``o`` (output) and ``s`` (scratch). Step types: ``s`` send, ``r`` receive,
``rrc`` receive and reduce into a local chunk, ``rcs`` / ``rrcs`` / ``rrs``
receive (and reduce), store (except ``rrs``) and send on, ``re`` / ``cpy``
local reduce / copy, ``nop`` a dependency carrier. A step waits for the step
``deps`` of thread block ``depid`` (``hasdep`` marks steps others wait for).

Sources of the schema and limits: msccl-tools ``msccl/language/ir.py``
(``ir_to_xml``, the writer of msccl-tools, commit 030a750) and the MSCCL
runtime ``src/include/msccl.h`` and its XML parser (microsoft/msccl, commit
b23e9cd): at most ``MSCCL_MAX_NUM_STEPS = 256`` steps per thread block,
``cnt < MSCCL_MAX_COUNT = 72`` chunks per step, thread-block ids contiguous
from 0, at most 32 thread blocks per channel and ``MAXCHANNELS = 32`` channels,
16-bit chunk offsets.

Export (:func:`write_msccl`) maps each block of a verified schedule onto whole
chunks (the chunk is the greatest common divisor of the block sizes), gives
every rank one thread block per peer (send and receive peer both that peer),
turns each transfer into a ``s`` step at the source and an ``r`` (copy) or
``rrc`` (reduce) step at each destination, and orders steps by the accesses
they conflict on (a step waits for the last write of each chunk it touches,
and a write for the reads since). When a destination's block is read by a
transfer that runs concurrently with the write (a pairwise exchange in one
step), the receive goes to the scratch buffer and a ``re`` / ``cpy`` step
applies it once the concurrent send has left. Steps are ordered in every
thread block by one global order in which each send is followed by its
receive, so the program cannot deadlock, even with unbuffered sends. A step
with several dependencies gets ``nop`` steps in front of it, one per extra
dependency.

Import (:func:`read_msccl`) replays the program: messages are matched per
connection (sender, receiver, channel) in order, and every message becomes a
transfer that waits for what the send step and the receive step (or, for a
receive into scratch, the ``re`` / ``cpy`` step that consumes it) wait for:
the schedule :func:`wafercoll.simulate` times. An MSCCL message is read at
its send and written at its receive, later; one wafercoll transfer reads and
writes after one set of dependencies. So the imported schedule carries an
exact verification model, which :func:`wafercoll.verify` and
:func:`wafercoll.execute` use: each message passes through a relay rank of its
own (a non-participant), read when the send step may run and delivered when
the receiving steps may. Labels name the GPU, thread block and step of both
ends, and :func:`wafercoll.verify` quotes them. The JSON of an imported
schedule keeps the timing view only.

Limits of the import, each refused with a message naming GPU, thread block and
step: a chunk that moves to a different position (wafercoll moves a block to
the same block of another rank), a send from scratch, scratch-to-scratch
``re`` / ``cpy``, ``ra`` steps, and a scratch chunk consumed without a
dependency on the receive that fills it. Input and output buffers are one
vector (exact for in-place programs; an out-of-place program must not read an
input chunk after writing the output chunk at its position). ``rrs`` (reduce
and send without storing) is read as ``rrcs``: the relay keeps the partial
sum, which a correct program overwrites.
"""

from __future__ import annotations

import heapq
import math
import os
import xml.parsers.expat
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .._util import write_atomic
from ..schedule import Schedule
from ._common import FormatError, Transfers, check_verified, read_text

__all__ = ["MSCCL_LIMITS", "msccl_xml", "read_msccl", "write_msccl"]

#: Limits of the MSCCL runtime (microsoft/msccl ``src/include/msccl.h``).
MSCCL_LIMITS = {
    "steps_per_tb": 256,  # MSCCL_MAX_NUM_STEPS
    "count": 71,  # cnt < MSCCL_MAX_COUNT = 72
    "tbs_per_channel": 32,  # send / receive peers per channel
    "thread_blocks": 216,  # MSCCL_MAX_NUM_THREAD_BLOCKS
    "channels": 32,  # MAXCHANNELS
    "offset": 32767,  # offsets and counts are int16 in the runtime's steps
}

_COLL = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reduce_scatter": "reduce_scatter",
    "reducescatter": "reduce_scatter",
    "reduce": "reduce",
    "broadcast": "broadcast",
}
_RECV_TYPES = {"r", "rrc", "rcs", "rrcs", "rrs"}
_SEND_TYPES = {"s", "rcs", "rrcs", "rrs"}
_LOCAL_TYPES = {"re", "cpy", "nop"}
_STEP_TYPES = _RECV_TYPES | _SEND_TYPES | _LOCAL_TYPES


# --------------------------------------------------------------------------- #
# export
# --------------------------------------------------------------------------- #
@dataclass
class _Node:
    rank: int
    peer: int  # thread block key: the peer rank
    kind: str  # s, r, rrc, re, cpy
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    deps: set[int] = field(default_factory=set)
    unit: int = -1


def _chunk_layout(s: Schedule) -> tuple[int, list[int], list[int]]:
    """Chunk size and each block's first chunk and chunk count.

    Blocks are laid out in index order, except that for allgather and
    reduce-scatter they are grouped by owner (rank ``r``'s blocks fill its
    slot ``[r N / p, (r + 1) N / p)``, the runtime's convention).
    """
    sizes = [int(b) for b in s.block_bytes.tolist()]
    unit = 0
    for b in sizes:
        unit = math.gcd(unit, b)
    unit = unit or 1
    order = list(range(len(sizes)))
    if s.collective in ("allgather", "reduce_scatter"):
        owners = s.owners.tolist()
        order.sort(key=lambda b: owners[b])
    start = [0] * len(sizes)
    count = [b // unit for b in sizes]
    at = 0
    for b in order:
        start[b] = at
        at += count[b]
    return unit, start, count


def _segments(
    ranges: list[tuple[int, int]], start: list[int], count: list[int], limit: int
) -> list[tuple[int, int]]:
    """Chunk ``(offset, count)`` segments of block ranges, split at ``limit``."""
    spans = sorted(
        (start[b], start[b] + count[b])
        for lo, hi in ranges
        for b in range(lo, hi)
        if count[b]
    )
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and merged[-1][1] == a:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    out = []
    for a, b in merged:
        for x in range(a, b, limit):
            out.append((x, min(limit, b - x)))
    return out


def msccl_xml(
    schedule: Schedule,
    *,
    proto: str = "Simple",
    name: str | None = None,
    min_bytes: int = 0,
    max_bytes: int | None = None,
) -> str:
    """The MSCCL XML of a verified schedule (see :func:`write_msccl`)."""
    s = check_verified(schedule, "MSCCL export")
    if proto not in ("Simple", "LL", "LL128"):
        raise ValueError(f"proto must be 'Simple', 'LL' or 'LL128', got {proto!r}")
    coll = s.collective
    p = s.num_ranks
    if not s.participants.all():
        raise ValueError(
            "MSCCL export: every GPU takes part in an MSCCL collective; this "
            f"schedule has {int(s.participants.sum())} participants of {p} ranks"
        )
    if p < 2:
        raise ValueError("MSCCL export needs at least 2 ranks")
    unit, start, count = _chunk_layout(s)
    n_chunks = sum(count)
    lim = MSCCL_LIMITS
    if n_chunks > lim["offset"]:
        raise ValueError(
            f"MSCCL export: the blocks make {n_chunks} chunks of {unit} bytes "
            f"(the gcd of the block sizes); MSCCL offsets are 16-bit "
            f"(at most {lim['offset']} chunks): use block sizes with a larger "
            "common divisor"
        )
    buf = "o" if coll == "allgather" else "i"
    per_rank = 0
    if coll in ("allgather", "reduce_scatter"):
        per_rank = n_chunks // p
        owned = [0] * p
        for b, r in enumerate(s.owners.tolist()):
            owned[r] += count[b]
        if n_chunks % p or any(c != per_rank for c in owned):
            raise ValueError(
                f"MSCCL export of {coll}: every rank must own the same number "
                f"of chunks (N / p of the N = {n_chunks} chunks of {unit} bytes); "
                f"the ranks own {owned}"
            )

    tr = Transfers.of(s)
    nodes: list[_Node] = []
    units: list[list[int]] = []  # unit -> node ids (a send and its receive, or one)
    t_nodes: list[list[int]] = [[] for _ in range(len(tr))]
    # Ancestor sets (bitsets over transfers).
    anc = [0] * len(tr)
    for t in tr.order:
        a = 0
        for d in tr.deps[t]:
            a |= anc[d] | (1 << d)
        anc[t] = a

    def concurrent(a: int, b: int) -> bool:
        return a != b and not (anc[a] >> b) & 1 and not (anc[b] >> a) & 1

    # Readers of each (rank, block): transfers whose source is rank.
    readers: dict[tuple[int, int], list[int]] = defaultdict(list)
    for t in range(len(tr)):
        for b in tr.blocks(t):
            if count[b] > 0:
                readers[(tr.src[t], b)].append(t)
    # Conflict tracking per (rank, block): writes (node ids, transfer) in
    # order, and the reads since the last write.
    writes: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    reads_since: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    pending_p: list[tuple[int, list[int]]] = []  # P node, concurrent readers
    scratch_top = [0] * p

    def last_ancestor_write(key: tuple[int, int], t: int) -> int | None:
        for node, wt in reversed(writes[key]):
            if wt == t or (anc[t] >> wt) & 1:
                return node
        return None

    for t in tr.order:
        x = tr.src[t]
        blocks = [b for b in tr.blocks(t) if count[b] > 0]
        if not blocks:
            continue
        segs = _segments(tr.ranges[t], start, count, lim["count"])
        read_deps: set[int] = set()
        for b in blocks:
            w = last_ancestor_write((x, b), t)
            if w is not None:
                read_deps.add(w)
        for d in tr.dsts[t]:
            conc = sorted(
                {r for b in blocks for r in readers.get((d, b), ()) if concurrent(r, t)}
            )
            write_deps: set[int] = set()
            for b in blocks:
                key = (d, b)
                w = last_ancestor_write(key, t)
                if w is not None:
                    write_deps.add(w)
                write_deps.update(n for n, rt in reads_since[key] if (anc[t] >> rt) & 1)
            last_r = []
            for off, cnt in segs:
                sn = len(nodes)
                nodes.append(_Node(x, d, "s", buf, off, buf, off, cnt, set(read_deps)))
                if conc:
                    soff = scratch_top[d]
                    scratch_top[d] += cnt
                    rn = _Node(d, x, "r", buf, off, "s", soff, cnt)
                else:
                    kind = "rrc" if tr.op[t] == 1 else "r"
                    rn = _Node(d, x, kind, buf, off, buf, off, cnt, set(write_deps))
                rn.deps.add(sn)
                nodes.append(rn)
                units.append([sn, sn + 1])
                t_nodes[t].extend((sn, sn + 1))
                last_r.append(sn + 1)
                if conc:
                    pn = len(nodes)
                    kind = "re" if tr.op[t] == 1 else "cpy"
                    nodes.append(
                        _Node(
                            d,
                            x,
                            kind,
                            "s",
                            rn.dstoff,
                            buf,
                            off,
                            cnt,
                            {sn + 1, *write_deps},
                        )
                    )
                    units.append([pn])
                    t_nodes[t].append(pn)
                    pending_p.append((pn, conc))
                    last_r[-1] = pn
            for b in blocks:
                key = (d, b)
                for n in last_r:
                    writes[key].append((n, t))
                reads_since[key] = []
        for b in blocks:
            reads_since[(x, b)].extend(
                (n, t) for n in t_nodes[t] if nodes[n].kind == "s"
            )
    for pn, conc in pending_p:
        for r in conc:
            nodes[pn].deps.update(n for n in t_nodes[r] if nodes[n].kind == "s")

    # One global order of units (Kahn, ties in creation order).
    for u, members in enumerate(units):
        for n in members:
            nodes[n].unit = u
    succ: list[list[int]] = [[] for _ in units]
    indeg = [0] * len(units)
    for u, members in enumerate(units):
        pre = {nodes[d].unit for n in members for d in nodes[n].deps} - {u}
        indeg[u] = len(pre)
        for v in pre:
            succ[v].append(u)
    heap = [u for u in range(len(units)) if indeg[u] == 0]
    heapq.heapify(heap)
    seq: list[int] = []
    while heap:
        u = heapq.heappop(heap)
        seq.extend(units[u])
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, v)
    if len(seq) != len(nodes):  # pragma: no cover - a verified schedule is acyclic
        raise ValueError("MSCCL export: the steps' dependencies form a cycle")

    # Thread blocks: one per (rank, peer), ids in order of first use.
    tb_of: dict[tuple[int, int], int] = {}
    tb_count = [0] * p
    programs: dict[tuple[int, int], list[int]] = defaultdict(list)  # (rank, tb)
    for n in seq:
        nd = nodes[n]
        key = (nd.rank, nd.peer)
        if key not in tb_of:
            tb_of[key] = tb_count[nd.rank]
            tb_count[nd.rank] += 1
        programs[(nd.rank, tb_of[key])].append(n)
    if max(tb_count) > lim["thread_blocks"]:
        g = tb_count.index(max(tb_count))
        raise ValueError(
            f"MSCCL export: GPU {g} needs {tb_count[g]} thread blocks (one per "
            f"peer); the runtime allows {lim['thread_blocks']}"
        )
    # A channel per pair of peers, the same at both ends, with at most
    # tbs_per_channel thread blocks of a GPU on one channel (greedy).
    chan_of: dict[tuple[int, int], int] = {}
    load: dict[tuple[int, int], int] = defaultdict(int)  # (rank, channel) -> tbs
    for a, b in sorted({(min(k), max(k)) for k in tb_of}):
        c = 0
        while (
            load[(a, c)] >= lim["tbs_per_channel"]
            or load[(b, c)] >= lim["tbs_per_channel"]
        ):
            c += 1
        if c >= lim["channels"]:  # pragma: no cover - needs > 1000 peers
            raise ValueError(
                f"MSCCL export: GPUs {a} and {b} need channel {c}; the runtime "
                f"has {lim['channels']} channels"
            )
        chan_of[(a, b)] = chan_of[(b, a)] = c
        load[(a, c)] += 1
        load[(b, c)] += 1
    nchannels = 1 + max(chan_of.values(), default=0)
    # Positions, dependencies pruned per thread block, nops for extras.
    pos: dict[int, tuple[int, int]] = {}  # node -> (tb, index among real steps)
    for (_rank, tb), prog in programs.items():
        for i, n in enumerate(prog):
            pos[n] = (tb, i)
    xml_step: dict[int, int] = {}
    lines = []
    peer_of_tb = {(rank, tb): peer for (rank, peer), tb in tb_of.items()}
    gpu_lines: dict[int, list[str]] = defaultdict(list)
    for rank in range(p):
        for tb in range(tb_count[rank]):
            prog = programs[(rank, tb)]
            seen: dict[int, int] = {}  # other tb -> highest step already waited for
            steps: list[str] = []
            k = 0
            for n in prog:
                nd = nodes[n]
                need: dict[int, int] = {}
                for d in nd.deps:
                    if nodes[d].rank != rank:
                        continue  # a message: the connection orders it
                    dtb, di = pos[d]
                    if dtb == tb:
                        continue
                    if di > need.get(dtb, -1):
                        need[dtb] = di
                need = {t2: i for t2, i in need.items() if i > seen.get(t2, -1)}
                for t2, i in need.items():
                    seen[t2] = i
                dl = sorted(need.items())
                for t2, i in dl[:-1]:
                    steps.append((k, "nop", "i", -1, "o", -1, 0, t2, i))
                    k += 1
                depid, depi = dl[-1] if dl else (-1, -1)
                steps.append(
                    (
                        k,
                        nd.kind,
                        nd.srcbuf,
                        nd.srcoff,
                        nd.dstbuf,
                        nd.dstoff,
                        nd.cnt,
                        depid,
                        depi,
                    )
                )
                xml_step[n] = k
                k += 1
            if k > lim["steps_per_tb"]:
                raise ValueError(
                    f"MSCCL export: GPU {rank} thread block {tb} (peer "
                    f"{peer_of_tb[(rank, tb)]}) needs {k} steps; the runtime "
                    f"allows {lim['steps_per_tb']} per thread block"
                )
            gpu_lines[rank].append((tb, steps))
    # Dependencies refer to real steps' XML indices; mark the targets.
    hasdep: set[tuple[int, int, int]] = set()
    real_index: dict[tuple[int, int, int], int] = {}
    for n, (tb, i) in pos.items():
        real_index[(nodes[n].rank, tb, i)] = xml_step[n]
    out_steps: dict[int, list[tuple[int, list[tuple[Any, ...]]]]] = defaultdict(list)
    for rank in range(p):
        for tb, steps in gpu_lines[rank]:
            fixed = []
            for st in steps:
                k, kind, sb, so, db, do, cnt, depid, depi = st
                deps_x = -1
                if depid >= 0:
                    deps_x = real_index[(rank, depid, depi)]
                    hasdep.add((rank, depid, deps_x))
                fixed.append((k, kind, sb, so, db, do, cnt, depid, deps_x))
            out_steps[rank].append((tb, fixed))
    algo_name = name if name is not None else (s.name or f"wafercoll_{coll}")
    mx = max_bytes if max_bytes is not None else 128 << 20
    root = s.root if s.root is not None else 0
    head = (
        f'<algo name="{_esc(algo_name)}" proto="{proto}" nchannels="{nchannels}" '
        f'nchunksperloop="{n_chunks}" ngpus="{p}" coll="{coll}" inplace="1" '
        f'outofplace="0" minBytes="{int(min_bytes)}" maxBytes="{int(mx)}" '
        f'root="{root}" chunkbytes="{unit}">'
    )
    lines.append(head)
    for rank in range(p):
        ic = oc = 0
        if coll == "allgather":
            ic, oc = per_rank, n_chunks
        elif coll == "reduce_scatter":
            ic, oc = n_chunks, per_rank
        else:
            ic = n_chunks
        lines.append(
            f'  <gpu id="{rank}" i_chunks="{ic}" o_chunks="{oc}" '
            f's_chunks="{scratch_top[rank]}">'
        )
        for tb, steps in out_steps[rank]:
            peer = peer_of_tb[(rank, tb)]
            chan = chan_of[(rank, peer)]
            lines.append(
                f'    <tb id="{tb}" send="{peer}" recv="{peer}" chan="{chan}">'
            )
            for k, kind, sb, so, db, do, cnt, depid, deps_x in steps:
                hd = 1 if (rank, tb, k) in hasdep else 0
                lines.append(
                    f'      <step s="{k}" type="{kind}" srcbuf="{sb}" srcoff="{so}" '
                    f'dstbuf="{db}" dstoff="{do}" cnt="{cnt}" depid="{depid}" '
                    f'deps="{deps_x}" hasdep="{hd}"/>'
                )
            lines.append("    </tb>")
        lines.append("  </gpu>")
    lines.append("</algo>")
    return "\n".join(lines) + "\n"


def _esc(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace('"', "&quot;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )


def write_msccl(
    schedule: Schedule,
    path: str | os.PathLike[str],
    *,
    proto: str = "Simple",
    name: str | None = None,
    min_bytes: int = 0,
    max_bytes: int | None = None,
) -> None:
    """Write a verified schedule as MSCCL XML.

    Parameters
    ----------
    schedule : Schedule
        Verified first (an incorrect schedule is refused). Collectives:
        allreduce, reduce_scatter, allgather, reduce, broadcast, with every
        rank a participant.
    path : path-like
        The file to write (atomically).
    proto : {"Simple", "LL", "LL128"}
        NCCL protocol the runtime uses.
    name : str, optional
        The ``<algo name>`` (default: the schedule's name).
    min_bytes, max_bytes : int
        Message-size window in which the runtime picks this algorithm
        (default 0 to 128 MiB).

    Notes
    -----
    Extra attributes ``root`` and ``chunkbytes`` (the chunk size in bytes)
    let :func:`read_msccl` restore the schedule exactly; the runtime ignores
    them. ``reduce`` and ``broadcast`` use the input buffer in place.

    Raises
    ------
    ScheduleError
        If the schedule does not verify.
    ValueError
        If a runtime limit cannot be met (the message names the limit, the
        GPU and the thread block).
    """
    write_atomic(
        path,
        msccl_xml(
            schedule, proto=proto, name=name, min_bytes=min_bytes, max_bytes=max_bytes
        ),
    )


# --------------------------------------------------------------------------- #
# import
# --------------------------------------------------------------------------- #
@dataclass
class _Step:
    gpu: int
    tb: int
    s: int
    kind: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    line: int
    send: int = -1
    recv: int = -1
    chan: int = 0

    def where(self) -> str:
        return f"GPU {self.gpu} tb {self.tb} step {self.s}"


class _Parser:
    """Expat-based reader that keeps line numbers for every element."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.algo: dict[str, str] | None = None
        self.gpus: list[dict[str, Any]] = []
        self.cur_gpu: dict[str, Any] | None = None
        self.cur_tb: dict[str, Any] | None = None
        self.p = xml.parsers.expat.ParserCreate()
        self.p.StartElementHandler = self.start
        self.p.EndElementHandler = self.end

    def err(
        self, msg: str, element: str | None = None, line: int | None = None
    ) -> FormatError:
        return FormatError(
            msg,
            path=self.path,
            element=element,
            line=self.p.CurrentLineNumber if line is None else line,
        )

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        line = self.p.CurrentLineNumber
        if tag == "algo":
            if self.algo is not None:
                raise self.err("a file holds one <algo>", tag)
            self.algo = dict(attrs)
        elif tag == "gpu":
            if self.algo is None or self.cur_gpu is not None:
                raise self.err("<gpu> must be a child of <algo>", tag)
            self.cur_gpu = {"attrs": dict(attrs), "line": line, "tbs": []}
        elif tag == "tb":
            if self.cur_gpu is None or self.cur_tb is not None:
                raise self.err("<tb> must be a child of <gpu>", tag)
            self.cur_tb = {"attrs": dict(attrs), "line": line, "steps": []}
        elif tag == "step":
            if self.cur_tb is None:
                raise self.err("<step> must be a child of <tb>", tag)
            self.cur_tb["steps"].append((dict(attrs), line))
        else:
            raise self.err(f"unknown element <{tag}>", tag)

    def end(self, tag: str) -> None:
        if tag == "tb":
            self.cur_gpu["tbs"].append(self.cur_tb)
            self.cur_tb = None
        elif tag == "gpu":
            self.gpus.append(self.cur_gpu)
            self.cur_gpu = None

    def parse(self, text: str) -> None:
        try:
            self.p.Parse(text, True)
        except xml.parsers.expat.ExpatError as exc:
            raise FormatError(
                f"not well-formed XML: {xml.parsers.expat.ErrorString(exc.code)}",
                path=self.path,
                line=exc.lineno,
            ) from None
        if self.algo is None:
            raise FormatError("no <algo> element", path=self.path, element="algo")


def _int_attr(
    attrs: dict[str, str],
    key: str,
    where: str,
    parser: _Parser,
    element: str,
    line: int,
    default: int | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    if key not in attrs:
        if default is not None:
            return default
        raise parser.err(f"{where}: attribute {key!r} is missing", element, line)
    try:
        v = int(attrs[key])
    except ValueError:
        raise parser.err(
            f"{where}: attribute {key}={attrs[key]!r} is not an integer", element, line
        ) from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise parser.err(f"{where}: {key}={v} is outside {rng}", element, line)
    return v


def read_msccl(
    source: str | os.PathLike[str],
    *,
    chunk_bytes: int | None = None,
) -> Schedule:
    """Read MSCCL XML (msccl-tools, synthesizers, :func:`write_msccl`) into a Schedule.

    Parameters
    ----------
    source : path-like or str
        A file, or the XML text itself.
    chunk_bytes : int, optional
        Bytes per chunk (one block per chunk). Default: the file's
        ``chunkbytes`` attribute (written by :func:`write_msccl`), else
        1 MiB.

    Returns
    -------
    Schedule
        The collective the file states, one block per chunk of
        ``nchunksperloop``, one transfer per message, with labels naming the
        GPU, thread block and step of both ends. Call
        :func:`wafercoll.verify` to prove or refute it.

    Raises
    ------
    FormatError
        For malformed XML, a missing or bad attribute, a send without its
        receive, or a step the import cannot express (the message names the
        file, element, line, GPU, thread block and step).
    """
    text, path = read_text(source, "MSCCL XML")
    ps = _Parser(path)
    ps.parse(text)
    algo = ps.algo
    assert algo is not None
    a_line = 1
    where = "<algo>"
    coll_name = algo.get("coll", "")
    if coll_name.lower() not in _COLL:
        raise ps.err(
            f"coll={coll_name!r} is not a collective wafercoll verifies "
            f"(accepted: {', '.join(sorted(set(_COLL)))})",
            "algo",
            a_line,
        )
    coll = _COLL[coll_name.lower()]
    ngpus = _int_attr(algo, "ngpus", where, ps, "algo", a_line, lo=1, hi=1 << 16)
    nchunks = _int_attr(
        algo, "nchunksperloop", where, ps, "algo", a_line, lo=1, hi=1 << 20
    )
    if chunk_bytes is None:
        cb = _int_attr(
            algo, "chunkbytes", where, ps, "algo", a_line, default=1 << 20, lo=1
        )
    else:
        from .._util import as_int

        cb = as_int(chunk_bytes, "chunk_bytes", 1)
    root = _int_attr(
        algo, "root", where, ps, "algo", a_line, default=0, lo=0, hi=ngpus - 1
    )
    if coll in ("allgather", "reduce_scatter") and nchunks % ngpus:
        raise ps.err(
            f"{coll} needs nchunksperloop ({nchunks}) divisible by ngpus ({ngpus})",
            "algo",
            a_line,
        )
    per_rank = nchunks // ngpus
    if len(ps.gpus) != ngpus:
        raise ps.err(
            f"ngpus={ngpus} but the file has {len(ps.gpus)} <gpu> elements",
            "algo",
            a_line,
        )

    # Steps, thread blocks, connections.
    steps: dict[tuple[int, int], list[_Step]] = {}
    gpu_seen: set[int] = set()
    for g in ps.gpus:
        gid = _int_attr(
            g["attrs"], "id", "<gpu>", ps, "gpu", g["line"], lo=0, hi=ngpus - 1
        )
        if gid in gpu_seen:
            raise ps.err(f"GPU {gid} appears twice", "gpu", g["line"])
        gpu_seen.add(gid)
        tb_ids = []
        for tb in g["tbs"]:
            w = f"GPU {gid} <tb>"
            tid = _int_attr(
                tb["attrs"], "id", w, ps, "tb", tb["line"], lo=0, hi=1 << 16
            )
            w = f"GPU {gid} tb {tid}"
            send = _int_attr(
                tb["attrs"], "send", w, ps, "tb", tb["line"], lo=-1, hi=ngpus - 1
            )
            recv = _int_attr(
                tb["attrs"], "recv", w, ps, "tb", tb["line"], lo=-1, hi=ngpus - 1
            )
            chan = _int_attr(
                tb["attrs"],
                "chan",
                w,
                ps,
                "tb",
                tb["line"],
                default=0,
                lo=0,
                hi=1 << 10,
            )
            if gid in (send, recv):
                raise ps.err(
                    f"{w}: a thread block cannot talk to its own GPU", "tb", tb["line"]
                )
            if tid in tb_ids:
                raise ps.err(f"{w}: thread block id repeated", "tb", tb["line"])
            tb_ids.append(tid)
            prog = []
            for i, (sa, line) in enumerate(tb["steps"]):
                ws = f"{w} step {i}"
                k = _int_attr(sa, "s", ws, ps, "step", line, lo=0)
                if k != i:
                    raise ps.err(
                        f"{ws}: steps must be numbered 0, 1, ... (found s={k})",
                        "step",
                        line,
                    )
                kind = sa.get("type", "")
                if kind not in _STEP_TYPES:
                    hint = " ('ra' is not supported)" if kind == "ra" else ""
                    raise ps.err(
                        f"{ws}: unknown step type {kind!r}{hint}", "step", line
                    )
                st = _Step(
                    gid,
                    tid,
                    i,
                    kind,
                    sa.get("srcbuf", "i"),
                    _int_attr(sa, "srcoff", ws, ps, "step", line, default=-1, lo=-1),
                    sa.get("dstbuf", "o"),
                    _int_attr(sa, "dstoff", ws, ps, "step", line, default=-1, lo=-1),
                    _int_attr(sa, "cnt", ws, ps, "step", line, default=0, lo=0),
                    _int_attr(sa, "depid", ws, ps, "step", line, default=-1, lo=-1),
                    _int_attr(sa, "deps", ws, ps, "step", line, default=-1, lo=-1),
                    line,
                    send,
                    recv,
                    chan,
                )
                if kind in _SEND_TYPES and send < 0:
                    raise ps.err(
                        f"{ws}: a {kind!r} step in a thread block without a send peer",
                        "step",
                        line,
                    )
                if kind in _RECV_TYPES and recv < 0:
                    raise ps.err(
                        f"{ws}: a {kind!r} step in a thread block without a "
                        "receive peer",
                        "step",
                        line,
                    )
                if kind != "nop" and st.cnt < 1:
                    raise ps.err(f"{ws}: cnt must be >= 1", "step", line)
                prog.append(st)
            steps[(gid, tid)] = prog
    for (gid, _tid), prog in steps.items():
        for st in prog:
            if st.depid >= 0:
                other = steps.get((gid, st.depid))
                if other is None or not 0 <= st.deps < len(other):
                    raise ps.err(
                        f"{st.where()}: depends on tb {st.depid} step {st.deps}, "
                        "which does not exist",
                        "step",
                        st.line,
                    )

    def blocks_of(st: _Step, bufname: str, off: int, gpu: int) -> list[int]:
        """Block of each chunk; scratch chunks give ``-1 - offset``."""
        if bufname == "s":
            return [-1 - (off + j) for j in range(st.cnt)]
        if bufname not in ("i", "o"):
            raise ps.err(f"{st.where()}: unknown buffer {bufname!r}", "step", st.line)
        if off < 0:
            raise ps.err(f"{st.where()}: offset must be >= 0", "step", st.line)
        base = 0
        if coll == "allgather" and bufname == "i":
            base = gpu * per_rank
            size = per_rank
        elif coll == "reduce_scatter" and bufname == "o":
            base = gpu * per_rank
            size = per_rank
        else:
            size = nchunks
        if off + st.cnt > size:
            raise ps.err(
                f"{st.where()}: chunks {off}..{off + st.cnt - 1} of buffer "
                f"{bufname!r} exceed its {size} chunks",
                "step",
                st.line,
            )
        return [base + off + j for j in range(st.cnt)]

    # Message matching per connection (sender, receiver, channel).
    sends: dict[tuple[int, int, int], list[_Step]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[_Step]] = defaultdict(list)
    conn_tb: dict[tuple[str, int, int, int], int] = {}
    for (gid, tid), prog in sorted(steps.items()):
        for st in prog:
            if st.kind in _SEND_TYPES:
                key = (gid, st.send, st.chan)
                if conn_tb.setdefault(("s", *key), tid) != tid:
                    raise ps.err(
                        f"{st.where()}: GPU {gid} sends to GPU {st.send} on channel "
                        f"{st.chan} from two thread blocks "
                        f"({conn_tb[('s', *key)]} and {tid})",
                        "step",
                        st.line,
                    )
                sends[key].append(st)
            if st.kind in _RECV_TYPES:
                key = (st.recv, gid, st.chan)
                if conn_tb.setdefault(("r", *key), tid) != tid:
                    raise ps.err(
                        f"{st.where()}: GPU {gid} receives from GPU {st.recv} on "
                        f"channel {st.chan} in two thread blocks",
                        "step",
                        st.line,
                    )
                recvs[key].append(st)
    match_recv: dict[int, _Step] = {}  # id(send step) -> receive step
    match_send: dict[int, _Step] = {}
    for key in set(sends) | set(recvs):
        ss, rr = sends.get(key, []), recvs.get(key, [])
        for a, b in zip(ss, rr, strict=False):
            if a.cnt != b.cnt:
                raise ps.err(
                    f"{a.where()} sends {a.cnt} chunks but the matching receive "
                    f"{b.where()} takes {b.cnt}",
                    "step",
                    b.line,
                )
            match_recv[id(a)] = b
            match_send[id(b)] = a
        if len(ss) != len(rr):
            x, y, c = key
            extra = ss[len(rr)] if len(ss) > len(rr) else rr[len(ss)]
            raise ps.err(
                f"{extra.where()} ({extra.kind!r}) has no matching "
                f"{'receive' if len(ss) > len(rr) else 'send'}: GPU {x} sends "
                f"{len(ss)} messages to GPU {y} on channel {c}, GPU {y} "
                f"receives {len(rr)}",
                "step",
                extra.line,
            )

    # Kahn over steps: program order, explicit dependencies, messages.
    all_steps = [st for prog in steps.values() for st in prog]
    idx = {id(st): i for i, st in enumerate(all_steps)}
    preds: list[list[int]] = [[] for _ in all_steps]
    for (gid, _tid), prog in steps.items():
        for k, st in enumerate(prog):
            i = idx[id(st)]
            if k:
                preds[i].append(idx[id(prog[k - 1])])
            if st.depid >= 0:
                preds[i].append(idx[id(steps[(gid, st.depid)][st.deps])])
            if st.kind in _RECV_TYPES:
                preds[i].append(idx[id(match_send[id(st)])])
    succ: list[list[int]] = [[] for _ in all_steps]
    indeg = [0] * len(all_steps)
    for i, pr in enumerate(preds):
        for j in pr:
            if j != i:
                succ[j].append(i)
                indeg[i] += 1
            else:
                st = all_steps[i]
                raise ps.err(f"{st.where()} waits for itself", "step", st.line)
    heap = [
        (all_steps[i].gpu, all_steps[i].tb, all_steps[i].s, i)
        for i in range(len(all_steps))
        if indeg[i] == 0
    ]
    heapq.heapify(heap)
    order = []
    while heap:
        *_, i = heapq.heappop(heap)
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                st = all_steps[j]
                heapq.heappush(heap, (st.gpu, st.tb, st.s, j))
    if len(order) != len(all_steps):
        stuck = next(st for i, st in enumerate(all_steps) if indeg[i] > 0)
        raise ps.err(
            f"the program would deadlock: {stuck.where()} waits, through "
            "program order, dependencies and messages, for itself",
            "step",
            stuck.line,
        )

    # Replay.
    t_src: list[int] = []
    t_dst: list[int] = []
    t_blocks: list[list[int]] = []
    t_op: list[str] = []
    t_deps: list[set[int]] = []
    t_sdeps: list[frozenset[int]] = []  # what the send step waited for
    t_label: list[str] = []
    t_tok: list[int] = []  # scratch tokens each transfer transitively follows
    done: dict[int, tuple[frozenset[int], int]] = {}  # step -> (transfers, tokens)
    send_info: dict[
        int, tuple[frozenset[int], int, list[int]]
    ] = {}  # send -> after, tokens, blocks
    # (gpu, scratch chunk) -> (send step, receive step, token, block)
    scratch: dict[tuple[int, int], tuple[_Step, _Step, int, int]] = {}
    n_tokens = 0

    def after(st: _Step) -> tuple[set[int], int]:
        ts: set[int] = set()
        tok = 0
        prog = steps[(st.gpu, st.tb)]
        for pre in ([prog[st.s - 1]] if st.s else []) + (
            [steps[(st.gpu, st.depid)][st.deps]] if st.depid >= 0 else []
        ):
            a, b = done[id(pre)]
            ts |= a
            tok |= b
        return ts, tok

    def closure(ts: set[int], tok: int) -> int:
        for t in ts:
            tok |= t_tok[t]
        return tok

    def new_transfer(
        src: int,
        dst: int,
        blocks: list[int],
        op: str,
        sdeps: set[int] | frozenset[int],
        rdeps: set[int],
        tok: int,
        label: str,
    ) -> int:
        t = len(t_src)
        t_src.append(src)
        t_dst.append(dst)
        t_blocks.append(blocks)
        t_op.append(op)
        t_sdeps.append(frozenset(sdeps))
        t_deps.append(set(sdeps) | rdeps)
        t_tok.append(closure(t_deps[-1], tok))
        t_label.append(label)
        return t

    for i in order:
        st = all_steps[i]
        a_ts, a_tok = after(st)
        completed: set[int] = set()
        new_tok = 0
        if st.kind in _RECV_TYPES:
            snd = match_send[id(st)]
            s_ts, s_tok, s_blocks = send_info[id(snd)]
            label = f"{snd.where()} -> {st.where()}"
            if any(b < 0 for b in s_blocks):
                raise ps.err(
                    f"{snd.where()}: sends from the scratch buffer are not supported",
                    "step",
                    snd.line,
                )
            if st.dstbuf == "s":
                if st.kind != "r":
                    raise ps.err(
                        f"{st.where()}: a {st.kind!r} step into the scratch "
                        "buffer is not supported",
                        "step",
                        st.line,
                    )
                if st.dstoff < 0:
                    raise ps.err(f"{st.where()}: offset must be >= 0", "step", st.line)
                new_tok = 1 << n_tokens
                n_tokens += 1
                for j in range(st.cnt):
                    scratch[(st.gpu, st.dstoff + j)] = (snd, st, new_tok, s_blocks[j])
            else:
                dst_blocks = blocks_of(st, st.dstbuf, st.dstoff, st.gpu)
                if dst_blocks != s_blocks:
                    raise ps.err(
                        f"{label} moves chunks {s_blocks} into chunks {dst_blocks}; "
                        "wafercoll moves a block into the same block of another rank",
                        "step",
                        st.line,
                    )
                op = "copy" if st.kind in ("r", "rcs") else "reduce"
                t = new_transfer(
                    snd.gpu, st.gpu, s_blocks, op, s_ts, a_ts, s_tok | a_tok, label
                )
                completed.add(t)
        elif st.kind in ("re", "cpy"):
            if st.srcbuf != "s":
                src_b = blocks_of(st, st.srcbuf, st.srcoff, st.gpu)
                dst_b = blocks_of(st, st.dstbuf, st.dstoff, st.gpu)
                if src_b != dst_b or st.kind == "re":
                    raise ps.err(
                        f"{st.where()}: a local {st.kind!r} between chunks {src_b} and "
                        f"{dst_b} of one GPU cannot be expressed (wafercoll moves data "
                        "between ranks)",
                        "step",
                        st.line,
                    )
            else:
                dst_b = blocks_of(st, st.dstbuf, st.dstoff, st.gpu)
                if any(b < 0 for b in dst_b):
                    raise ps.err(
                        f"{st.where()}: scratch-to-scratch {st.kind!r} is "
                        "not supported",
                        "step",
                        st.line,
                    )
                groups: dict[tuple[int, int], tuple[_Step, _Step, list[int]]] = {}
                for j in range(st.cnt):
                    ent = scratch.get((st.gpu, st.srcoff + j))
                    if ent is None:
                        raise ps.err(
                            f"{st.where()} reads scratch chunk "
                            f"{st.srcoff + j}, which no receive fills",
                            "step",
                            st.line,
                        )
                    snd, rst, tok, blk = ent
                    if blk != dst_b[j]:
                        raise ps.err(
                            f"{st.where()} applies scratch chunk "
                            f"{st.srcoff + j} (block {blk}) to chunk {dst_b[j]}; "
                            "wafercoll moves a block into the same block",
                            "step",
                            st.line,
                        )
                    groups.setdefault((id(snd), id(rst)), (snd, rst, []))[2].append(blk)
                    if not closure(a_ts, a_tok) & tok:
                        raise ps.err(
                            f"{st.where()} reads scratch chunk {st.srcoff + j} without "
                            "a dependency on the receive that fills it "
                            f"({rst.where()})",
                            "step",
                            st.line,
                        )
                for snd, rst, blks in groups.values():
                    s_ts, s_tok, _ = send_info[id(snd)]
                    r_ts, r_tok = after(rst)
                    label = f"{snd.where()} -> {rst.where()} -> {st.where()}"
                    op = "reduce" if st.kind == "re" else "copy"
                    t = new_transfer(
                        snd.gpu,
                        st.gpu,
                        blks,
                        op,
                        s_ts,
                        r_ts | a_ts,
                        s_tok | r_tok | a_tok,
                        label,
                    )
                    completed.add(t)
        if st.kind in _SEND_TYPES:
            if st.kind == "s":
                s_blocks = blocks_of(st, st.srcbuf, st.srcoff, st.gpu)
                send_info[id(st)] = (frozenset(a_ts), a_tok, s_blocks)
            else:
                # Forward what this step received (and stored).
                s_blocks = t_blocks[next(iter(completed))] if completed else []
                send_info[id(st)] = (frozenset(completed), 0, s_blocks)
        if completed:
            done[id(st)] = (frozenset(completed), new_tok)
        else:
            done[id(st)] = (frozenset(a_ts), a_tok | new_tok)

    if not t_src:
        raise ps.err("the program moves no data", "algo", a_line)
    s = Schedule(
        ngpus,
        [cb] * nchunks,
        coll,
        root=root if coll in ("reduce", "broadcast") else None,
        owners=[b // per_rank for b in range(nchunks)]
        if coll in ("allgather", "reduce_scatter")
        else None,
        name=algo.get("name", ""),
    )
    for t in range(len(t_src)):
        ranges = _runs(t_blocks[t])
        s.add_transfer(t_src[t], t_dst[t], ranges, op=t_op[t], deps=sorted(t_deps[t]))
    s.labels = t_label
    s._model = _exact_model(s, t_sdeps, t_deps, t_label)
    return s


def _exact_model(
    s: Schedule,
    sdeps: list[frozenset[int]],
    deps: list[set[int]],
    labels: list[str],
) -> Schedule:
    """The schedule :func:`wafercoll.verify` checks for an imported program.

    An MSCCL message is read at its send and written at its receive (or at
    the step that consumes it from scratch). Each message ``m`` becomes two
    transfers through a relay rank of its own (a non-participant after the
    GPUs): ``2m`` copies the data from the sender into the relay, waiting for
    what the send step waited for; ``2m + 1`` delivers it from the relay to
    the receiver, waiting for ``2m`` and for what the receiving (and
    consuming) steps waited for. Both refer to other messages by their
    delivering transfer.
    """
    p, n = s.num_ranks, s.num_transfers
    model = Schedule(
        p + n,
        s.block_bytes,
        s.collective,
        root=s.root,
        owners=None if s.owners is None else s.owners.tolist(),
        participants=range(p),
        name=s.name,
    )
    src, dst_off, dsts = s.src, s._core.dst_offsets, s._core.dsts
    roff, lo, hi = s._core.range_offsets, s._core.range_lo, s._core.range_hi
    for m in range(n):
        ranges = [
            (int(a), int(b))
            for a, b in zip(
                lo[roff[m] : roff[m + 1]], hi[roff[m] : roff[m + 1]], strict=True
            )
        ]
        relay = p + m
        model.add_transfer(
            int(src[m]), relay, ranges, deps=sorted(2 * d + 1 for d in sdeps[m])
        )
        model.add_transfer(
            relay,
            int(dsts[dst_off[m]]),
            ranges,
            op="reduce" if s.op[m] == 1 else "copy",
            deps=[2 * m, *sorted(2 * d + 1 for d in deps[m] - sdeps[m])],
        )
    model.labels = [
        f"{labels[m]} ({part})" for m in range(n) for part in ("send", "receive")
    ]
    return model


def _runs(blocks: list[int]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for b in blocks:
        if out and out[-1][1] == b:
            out[-1][1] = b + 1
        else:
            out.append([b, b + 1])
    return [(a, b) for a, b in out]
