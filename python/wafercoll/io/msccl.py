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
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .._util import write_atomic
from ..schedule import Schedule
from ._common import Transfers, check_verified
from .msccl_read import read_msccl

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
