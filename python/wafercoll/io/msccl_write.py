"""MSCCL XML export: a verified schedule as thread-block programs.

The format and the mapping are described in :mod:`wafercoll.io.msccl`.
:func:`msccl_xml` runs :class:`_MscclWriter` through these stages, in order:

checks and chunk layout (:meth:`_MscclWriter.__init__`, :func:`_chunk_layout`)
    Refuse what MSCCL cannot express; map each block onto whole chunks.
step graph (:meth:`~_MscclWriter.build_steps`)
    Each transfer becomes send, receive (and, through scratch, apply) steps,
    each waiting for the steps whose accesses it conflicts with.
global order (:meth:`~_MscclWriter.global_order`)
    One order of all steps, each send directly followed by its receive.
thread blocks and channels (:meth:`~_MscclWriter.thread_blocks`,
:meth:`~_MscclWriter.channels`)
    One thread block per (rank, peer); one channel per pair of peers.
programs (:meth:`~_MscclWriter.programs`)
    Each thread block's steps, with ``nop`` steps for extra dependencies.
emission (:meth:`~_MscclWriter.xml`)
    The XML text.
"""

from __future__ import annotations

import heapq
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from .._util import write_atomic
from ..schedule import Schedule
from ._common import Transfers, check_verified

__all__ = ["MSCCL_LIMITS", "msccl_xml", "write_msccl"]

#: Limits of the MSCCL runtime (microsoft/msccl ``src/include/msccl.h``).
MSCCL_LIMITS = {
    "steps_per_tb": 256,  # MSCCL_MAX_NUM_STEPS
    "count": 71,  # cnt < MSCCL_MAX_COUNT = 72
    "tbs_per_channel": 32,  # send / receive peers per channel
    "thread_blocks": 216,  # MSCCL_MAX_NUM_THREAD_BLOCKS
    "channels": 32,  # MAXCHANNELS
    "offset": 32767,  # offsets and counts are int16 in the runtime's steps
}


@dataclass
class _Node:
    """One step to be, before it has a thread block and an index."""

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


class _Row(NamedTuple):
    """A ``<step>`` of a thread block; ``deps`` first counts real steps only."""

    k: int
    kind: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int


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


class _MscclWriter:
    """One export; the stages run in the order of the module notes.

    Nodes are the steps before they have a thread block; a *unit* is what
    the global order keeps together (a send and its receive, or one apply).
    """

    def __init__(self, schedule: Schedule, proto: str) -> None:
        if isinstance(schedule, Schedule) and schedule.switches.any():
            raise ValueError(
                "MSCCL export: the MSCCL runtime has no switch ranks (in-network "
                "reduction); its GPUs would have to run the switches' reductions"
            )
        s = self.s = check_verified(schedule, "MSCCL export")
        if proto not in ("Simple", "LL", "LL128"):
            raise ValueError(f"proto must be 'Simple', 'LL' or 'LL128', got {proto!r}")
        self.proto = proto
        coll, p = self.coll, self.p = s.collective, s.num_ranks
        if not s.participants.all():
            raise ValueError(
                "MSCCL export: every GPU takes part in an MSCCL collective; this "
                f"schedule has {int(s.participants.sum())} participants of {p} ranks"
            )
        if p < 2:
            raise ValueError("MSCCL export needs at least 2 ranks")
        if coll in ("alltoallv", "gather", "scatter"):
            raise ValueError(
                f"MSCCL export: the MSCCL runtime has no {coll} (its collectives: "
                "allreduce, allgather, reduce_scatter, alltoall, reduce, broadcast)"
            )
        self.unit, self.start, self.count = _chunk_layout(s)
        n_chunks = self.n_chunks = sum(self.count)
        if n_chunks > MSCCL_LIMITS["offset"] and coll != "alltoall":
            raise ValueError(
                f"MSCCL export: the blocks make {n_chunks} chunks of {self.unit} "
                f"bytes (the gcd of the block sizes); MSCCL offsets are 16-bit "
                f"(at most {MSCCL_LIMITS['offset']} chunks): use block sizes with "
                "a larger common divisor"
            )
        # Allgather gathers into the output buffer; alltoall runs out of
        # place (each block has a place in an input and in an output); the
        # other collectives work in place in the input buffer.
        self.buf = "o" if coll == "allgather" else "i"
        self.per_rank = 0
        self.loop = n_chunks  # nchunksperloop: chunks of one GPU's buffer
        self.loc: dict[tuple[int, int], tuple[str, int]] = {}
        if coll in ("allgather", "reduce_scatter"):
            self._check_equal_shares()
        if coll == "alltoall":
            self._alltoall_layout()
        self.tr = Transfers.of(s)
        self.nodes: list[_Node] = []
        self.units: list[list[int]] = []  # unit -> node ids
        self.t_nodes: list[list[int]] = [[] for _ in range(len(self.tr))]
        self.scratch_top = [0] * p  # scratch chunks used per rank

    def _check_equal_shares(self) -> None:
        """The runtime gives every rank the slice ``N / p`` of the buffer."""
        p, n_chunks = self.p, self.n_chunks
        self.per_rank = n_chunks // p
        owned = [0] * p
        for b, r in enumerate(self.s.owners.tolist()):
            owned[r] += self.count[b]
        if n_chunks % p or any(c != self.per_rank for c in owned):
            raise ValueError(
                f"MSCCL export of {self.coll}: every rank must own the same number "
                f"of chunks (N / p of the N = {n_chunks} chunks of {self.unit} "
                f"bytes); the ranks own {owned}"
            )

    def _alltoall_layout(self) -> None:
        """Each block's chunks in its owner's input and its target's output.

        GPU ``i``'s input holds its data for GPU ``j`` at ``[j K, (j + 1) K)``
        and GPU ``j``'s output receives it at ``[i K, (i + 1) K)`` (msccl-tools'
        ``AllToAll``), ``K`` the chunks of every pair; blocks of one pair
        follow in index order. A block a rank only relays gets scratch.
        """
        s, p = self.s, self.p
        owners, targets = s.owners.tolist(), s.targets.tolist()
        pair = [[0] * p for _ in range(p)]
        at_in: dict[int, int] = {}
        at_out: dict[int, int] = {}
        for b in range(s.num_blocks):
            i, j = owners[b], targets[b]
            at_in[b] = at_out[b] = pair[i][j]
            pair[i][j] += self.count[b]
        k = pair[0][0]
        if any(c != k for row in pair for c in row):
            raise ValueError(
                "MSCCL export of alltoall: every pair of GPUs must exchange the "
                f"same number of chunks of {self.unit} bytes; the pairs have "
                f"{sorted({c for row in pair for c in row})}"
            )
        self.loop = p * k
        if self.loop > MSCCL_LIMITS["offset"]:
            raise ValueError(
                f"MSCCL export: a GPU's buffer has {self.loop} chunks; MSCCL "
                f"offsets are 16-bit (at most {MSCCL_LIMITS['offset']} chunks)"
            )
        for b in range(s.num_blocks):
            i, j = owners[b], targets[b]
            self.loc[(i, b)] = ("i", j * k + at_in[b])
            if i != j:
                self.loc[(j, b)] = ("o", i * k + at_out[b])
        self.k = k

    def _where(self, rank: int, b: int) -> tuple[str, int]:
        """Buffer and first chunk of block ``b`` at ``rank``."""
        if self.coll != "alltoall":
            return self.buf, self.start[b]
        key = (rank, b)
        if key not in self.loc:  # a block the rank relays
            self.loc[key] = ("s", self.scratch_top[rank])
            self.scratch_top[rank] += self.count[b]
        return self.loc[key]

    def _pieces(
        self, x: int, d: int, blocks: list[int]
    ) -> list[tuple[str, int, str, int, int]]:
        """``(srcbuf, srcoff, dstbuf, dstoff, cnt)`` runs moving ``blocks``.

        A run is contiguous at both ends, split at the runtime's count limit.
        """
        limit = MSCCL_LIMITS["count"]
        runs: list[list] = []
        for b in sorted(blocks, key=lambda b: self._where(x, b)):
            sb, so = self._where(x, b)
            db, do = self._where(d, b)
            n = self.count[b]
            last = runs[-1] if runs else None
            if last is not None and (
                last[0],
                last[1] + last[4],
                last[2],
                last[3] + last[4],
            ) == (sb, so, db, do):
                last[4] += n
            else:
                runs.append([sb, so, db, do, n])
        out = []
        for sb, so, db, do, n in runs:
            for a in range(0, n, limit):
                out.append((sb, so + a, db, do + a, min(limit, n - a)))
        return out

    # ------------------------------------------------------------- step graph
    def build_steps(self) -> None:
        """Nodes for every transfer, in a topological order of the transfers.

        A node waits for the last write of each chunk it touches and a write
        also for the reads since; "last" means the last by a transfer the
        node's transfer depends on, since concurrent ones are unordered.
        """
        tr = self.tr
        # Ancestor sets (bitsets over transfers).
        anc = self.anc = [0] * len(tr)
        for t in tr.order:
            a = 0
            for d in tr.deps[t]:
                a |= anc[d] | (1 << d)
            anc[t] = a
        # Readers of each (rank, block): transfers whose source is rank.
        self.readers: dict[tuple[int, int], list[int]] = defaultdict(list)
        for t in range(len(tr)):
            for b in tr.blocks(t):
                if self.count[b] > 0:
                    self.readers[(tr.src[t], b)].append(t)
        # Per (rank, block): writes (node, transfer) in order, and the reads
        # since the last write.
        self.writes: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
        self.reads_since: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(
            list
        )
        self.pending: list[tuple[int, list[int]]] = []  # apply node, readers
        for t in tr.order:
            self._emit_transfer(t)
        # An apply node overwrites what concurrent transfers read: it waits
        # for their sends, known only now that every transfer has nodes.
        if self.coll == "alltoall":
            self._emit_own_blocks()
        nodes = self.nodes
        for pn, conc in self.pending:
            for r in conc:
                nodes[pn].deps.update(
                    n for n in self.t_nodes[r] if nodes[n].kind == "s"
                )

    def _emit_own_blocks(self) -> None:
        """Out of place, each GPU copies its own block from input to output.

        The copy joins the thread block of the GPU's first peer; nothing
        else touches those chunks, so it waits for nothing.
        """
        k, limit = self.k, MSCCL_LIMITS["count"]
        first_peer: dict[int, int] = {}
        for nd in self.nodes:
            first_peer.setdefault(nd.rank, nd.peer)
        for g in range(self.p):
            peer = first_peer.get(g, (g + 1) % self.p)
            for a in range(0, k, limit):
                n = min(limit, k - a)
                off = g * k + a
                self.units.append([len(self.nodes)])
                self.nodes.append(_Node(g, peer, "cpy", "i", off, "o", off, n))

    def _concurrent(self, a: int, b: int) -> bool:
        anc = self.anc
        return a != b and not (anc[a] >> b) & 1 and not (anc[b] >> a) & 1

    def _last_ancestor_write(self, key: tuple[int, int], t: int) -> int | None:
        for node, wt in reversed(self.writes[key]):
            if wt == t or (self.anc[t] >> wt) & 1:
                return node
        return None

    def _emit_transfer(self, t: int) -> None:
        """The nodes of transfer ``t``: per destination, per chunk segment."""
        tr = self.tr
        x = tr.src[t]
        blocks = [b for b in tr.blocks(t) if self.count[b] > 0]
        if not blocks:
            return
        read_deps: set[int] = set()
        for b in blocks:
            w = self._last_ancestor_write((x, b), t)
            if w is not None:
                read_deps.add(w)
        for d in tr.dsts[t]:
            if self.coll == "alltoall":
                segs = self._pieces(x, d, blocks)
            else:
                segs = [
                    (self.buf, off, self.buf, off, cnt)
                    for off, cnt in _segments(
                        tr.ranges[t], self.start, self.count, MSCCL_LIMITS["count"]
                    )
                ]
            self._emit_delivery(t, d, blocks, segs, read_deps)
        for b in blocks:
            self.reads_since[(x, b)].extend(
                (n, t) for n in self.t_nodes[t] if self.nodes[n].kind == "s"
            )

    def _emit_delivery(
        self,
        t: int,
        d: int,
        blocks: list[int],
        segs: list[tuple[str, int, str, int, int]],
        read_deps: set[int],
    ) -> None:
        """Transfer ``t``'s nodes towards destination ``d``."""
        anc_t = self.anc[t]
        # Transfers that read these blocks at d and may run alongside t (a
        # pairwise exchange): t's data must wait in scratch until they left.
        conc = sorted(
            {
                r
                for b in blocks
                for r in self.readers.get((d, b), ())
                if self._concurrent(r, t)
            }
        )
        write_deps: set[int] = set()
        for b in blocks:
            key = (d, b)
            w = self._last_ancestor_write(key, t)
            if w is not None:
                write_deps.add(w)
            write_deps.update(n for n, rt in self.reads_since[key] if (anc_t >> rt) & 1)
        last_w = [
            self._emit_segment(t, d, seg, read_deps, write_deps, conc) for seg in segs
        ]
        for b in blocks:
            key = (d, b)
            for n in last_w:
                self.writes[key].append((n, t))
            self.reads_since[key] = []

    def _emit_segment(
        self,
        t: int,
        d: int,
        seg: tuple[str, int, str, int, int],
        read_deps: set[int],
        write_deps: set[int],
        conc: list[int],
    ) -> int:
        """A send and its receive (and apply); returns the node that writes.

        ``seg``: ``(srcbuf, srcoff, dstbuf, dstoff, cnt)``, the chunks at the
        sender and at the receiver.
        """
        nodes, x = self.nodes, self.tr.src[t]
        sbuf, soff_, buf, off, cnt = seg
        reduce = self.tr.op[t] == 1
        sn = len(nodes)
        nodes.append(_Node(x, d, "s", sbuf, soff_, buf, off, cnt, set(read_deps)))
        if conc:
            soff = self.scratch_top[d]
            self.scratch_top[d] += cnt
            rn = _Node(d, x, "r", buf, off, "s", soff, cnt)
        else:
            kind = "rrc" if reduce else "r"
            rn = _Node(d, x, kind, buf, off, buf, off, cnt, set(write_deps))
        rn.deps.add(sn)
        nodes.append(rn)
        self.units.append([sn, sn + 1])
        self.t_nodes[t].extend((sn, sn + 1))
        if not conc:
            return sn + 1
        pn = len(nodes)
        kind = "re" if reduce else "cpy"
        deps = {sn + 1, *write_deps}
        nodes.append(_Node(d, x, kind, "s", rn.dstoff, buf, off, cnt, deps))
        self.units.append([pn])
        self.t_nodes[t].append(pn)
        self.pending.append((pn, conc))
        return pn

    # ----------------------------------------------------------- global order
    def global_order(self) -> list[int]:
        """Nodes in one order of units (Kahn, ties in creation order).

        Every thread block runs its steps in this one order, and each send
        is directly followed by its receive, so the program cannot deadlock,
        even with unbuffered sends.
        """
        nodes, units = self.nodes, self.units
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
        return seq

    # ------------------------------------------------ thread blocks, channels
    def thread_blocks(self, seq: list[int]) -> None:
        """One thread block per (rank, peer), ids in order of first use."""
        self.tb_of: dict[tuple[int, int], int] = {}
        tb_count = self.tb_count = [0] * self.p
        # (rank, tb) -> its nodes in the global order
        self.tb_nodes: dict[tuple[int, int], list[int]] = defaultdict(list)
        for n in seq:
            nd = self.nodes[n]
            key = (nd.rank, nd.peer)
            if key not in self.tb_of:
                self.tb_of[key] = tb_count[nd.rank]
                tb_count[nd.rank] += 1
            self.tb_nodes[(nd.rank, self.tb_of[key])].append(n)
        if max(tb_count) > MSCCL_LIMITS["thread_blocks"]:
            g = tb_count.index(max(tb_count))
            raise ValueError(
                f"MSCCL export: GPU {g} needs {tb_count[g]} thread blocks (one per "
                f"peer); the runtime allows {MSCCL_LIMITS['thread_blocks']}"
            )
        self.peer_of_tb = {(rank, tb): peer for (rank, peer), tb in self.tb_of.items()}

    def channels(self) -> None:
        """A channel per pair of peers, the same at both ends.

        Greedy: the lowest channel on which neither GPU already has
        ``tbs_per_channel`` thread blocks.
        """
        lim = MSCCL_LIMITS
        self.chan_of: dict[tuple[int, int], int] = {}
        load: dict[tuple[int, int], int] = defaultdict(int)  # (rank, chan) -> tbs
        for a, b in sorted({(min(k), max(k)) for k in self.tb_of}):
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
            self.chan_of[(a, b)] = self.chan_of[(b, a)] = c
            load[(a, c)] += 1
            load[(b, c)] += 1
        self.nchannels = 1 + max(self.chan_of.values(), default=0)

    # --------------------------------------------------------------- programs
    def programs(self) -> None:
        """Each thread block's rows, dependencies as XML step indices.

        Rows are built per thread block first; a dependency can name a
        thread block built later, so indices are resolved in a second pass.
        """
        # node -> (tb, index among the tb's real steps)
        self.pos: dict[int, tuple[int, int]] = {}
        for (_rank, tb), prog in self.tb_nodes.items():
            for i, n in enumerate(prog):
                self.pos[n] = (tb, i)
        self.xml_step: dict[int, int] = {}  # node -> its XML step index
        rows = {
            (rank, tb): self._tb_rows(rank, tb)
            for rank in range(self.p)
            for tb in range(self.tb_count[rank])
        }
        real_index = {
            (self.nodes[n].rank, tb, i): self.xml_step[n]
            for n, (tb, i) in self.pos.items()
        }
        # The steps other steps wait for (hasdep="1").
        self.hasdep: set[tuple[int, int, int]] = set()
        self.rows: dict[tuple[int, int], list[_Row]] = {}
        for (rank, tb), tb_rows in rows.items():
            fixed = []
            for row in tb_rows:
                if row.depid >= 0:
                    deps_x = real_index[(rank, row.depid, row.deps)]
                    self.hasdep.add((rank, row.depid, deps_x))
                    row = row._replace(deps=deps_x)
                fixed.append(row)
            self.rows[(rank, tb)] = fixed

    def _tb_rows(self, rank: int, tb: int) -> list[_Row]:
        """Rows of one thread block, ``deps`` counting real steps.

        A step names one dependency; the others get a ``nop`` each in front
        of it. Dependencies already implied by an earlier wait of this thread
        block on the same other block are dropped.
        """
        nodes, pos = self.nodes, self.pos
        seen: dict[int, int] = {}  # other tb -> highest step already waited for
        rows: list[_Row] = []
        for n in self.tb_nodes[(rank, tb)]:
            nd = nodes[n]
            need: dict[int, int] = {}
            for d in nd.deps:
                if nodes[d].rank != rank:
                    continue  # a message: the connection orders it
                dtb, di = pos[d]
                if dtb != tb and di > need.get(dtb, -1):
                    need[dtb] = di
            need = {t2: i for t2, i in need.items() if i > seen.get(t2, -1)}
            seen.update(need)
            dl = sorted(need.items())
            for t2, i in dl[:-1]:
                rows.append(_Row(len(rows), "nop", "i", -1, "o", -1, 0, t2, i))
            depid, depi = dl[-1] if dl else (-1, -1)
            self.xml_step[n] = len(rows)
            rows.append(
                _Row(
                    len(rows),
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
        if len(rows) > MSCCL_LIMITS["steps_per_tb"]:
            raise ValueError(
                f"MSCCL export: GPU {rank} thread block {tb} (peer "
                f"{self.peer_of_tb[(rank, tb)]}) needs {len(rows)} steps; the "
                f"runtime allows {MSCCL_LIMITS['steps_per_tb']} per thread block"
            )
        return rows

    # --------------------------------------------------------------- emission
    def xml(self, name: str | None, min_bytes: int, max_bytes: int | None) -> str:
        """The XML text: ``<algo>``, a ``<gpu>`` per rank, its ``<tb>`` s."""
        s, coll, p, n_chunks = self.s, self.coll, self.p, self.n_chunks
        algo_name = name if name is not None else (s.name or f"wafercoll_{coll}")
        mx = max_bytes if max_bytes is not None else 128 << 20
        root = s.root if s.root is not None else 0
        # root and chunkbytes are extra: read_msccl restores the schedule
        # exactly from them, the runtime ignores them.
        inplace = 0 if coll == "alltoall" else 1
        lines = [
            f'<algo name="{_esc(algo_name)}" proto="{self.proto}" '
            f'nchannels="{self.nchannels}" nchunksperloop="{self.loop}" ngpus="{p}" '
            f'coll="{coll}" inplace="{inplace}" outofplace="{1 - inplace}" '
            f'minBytes="{int(min_bytes)}" '
            f'maxBytes="{int(mx)}" root="{root}" chunkbytes="{self.unit}">'
        ]
        ic, oc = n_chunks, 0
        if coll == "allgather":
            ic, oc = self.per_rank, n_chunks
        elif coll == "reduce_scatter":
            ic, oc = n_chunks, self.per_rank
        elif coll == "alltoall":
            ic = oc = self.loop
        for rank in range(p):
            lines.append(
                f'  <gpu id="{rank}" i_chunks="{ic}" o_chunks="{oc}" '
                f's_chunks="{self.scratch_top[rank]}">'
            )
            for tb in range(self.tb_count[rank]):
                lines.extend(self._tb_xml(rank, tb))
            lines.append("  </gpu>")
        lines.append("</algo>")
        return "\n".join(lines) + "\n"

    def _tb_xml(self, rank: int, tb: int) -> list[str]:
        peer = self.peer_of_tb[(rank, tb)]
        chan = self.chan_of[(rank, peer)]
        lines = [f'    <tb id="{tb}" send="{peer}" recv="{peer}" chan="{chan}">']
        for r in self.rows[(rank, tb)]:
            hd = 1 if (rank, tb, r.k) in self.hasdep else 0
            lines.append(
                f'      <step s="{r.k}" type="{r.kind}" srcbuf="{r.srcbuf}" '
                f'srcoff="{r.srcoff}" dstbuf="{r.dstbuf}" dstoff="{r.dstoff}" '
                f'cnt="{r.cnt}" depid="{r.depid}" deps="{r.deps}" hasdep="{hd}"/>'
            )
        lines.append("    </tb>")
        return lines


def _esc(text: str) -> str:
    return (
        text.replace("&", "&amp;")
        .replace('"', "&quot;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )


def msccl_xml(
    schedule: Schedule,
    *,
    proto: str = "Simple",
    name: str | None = None,
    min_bytes: int = 0,
    max_bytes: int | None = None,
) -> str:
    """The MSCCL XML of a verified schedule (see :func:`write_msccl`).

    Examples
    --------
    A ring AllReduce of 64 bytes on 4 ranks: one chunk of 16 bytes per rank;
    each GPU has 2 (p - 1) = 6 sends and 6 receives (3 of them reducing).

    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> xml = wc.io.msccl_xml(s)
    >>> print(xml.splitlines()[0])
    <algo name="generic_ring_allreduce" ... nchunksperloop="4" ngpus="4"
    coll="allreduce" ... chunkbytes="16">
    >>> xml.count("<gpu "), xml.count("<step ")
    (4, 48)
    >>> wc.io.read_msccl(xml).num_transfers == s.num_transfers
    True
    """
    w = _MscclWriter(schedule, proto)
    w.build_steps()
    w.thread_blocks(w.global_order())
    w.channels()
    w.programs()
    return w.xml(name, min_bytes, max_bytes)


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
        allreduce, reduce_scatter, allgather, reduce, broadcast and alltoall
        (out of place, the same chunks between every pair of GPUs), with every
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

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.xml")
    >>> wc.io.write_msccl(s, path, proto="LL")
    >>> t = wc.io.read_msccl(path)  # chunkbytes restores the 16-byte blocks
    >>> t.block_bytes.tolist(), t.num_transfers == s.num_transfers
    ([16, 16, 16, 16], True)
    >>> wc.verify(t).collective
    'allreduce'
    """
    write_atomic(
        path,
        msccl_xml(
            schedule, proto=proto, name=name, min_bytes=min_bytes, max_bytes=max_bytes
        ),
    )
