"""MSCCL XML import: a program of thread blocks replayed into a Schedule.

The format and the limits of the import are described in
:mod:`wafercoll.io.msccl`. The reader runs five phases, each a method of
:class:`_MscclReader` that leaves its result on the reader for the next:

parse
    XML to one :class:`Step` list per (GPU, thread block), every attribute
    checked where it is read, so an error names the element and its line.
fold
    Steps to the transfers the runtime executes, as its XML reader builds
    them: ``nop`` steps hand their dependency to the next step, consecutive
    ``re`` steps into one chunk are fused into one reduction, and each wait
    for a step becomes a wait for the flag of the first step from there on
    that sets one (``hasdep="1"``).
match
    Pair sends with receives per connection (sender, receiver, channel), in
    program order: the runtime delivers a connection's messages in order.
order
    One order of all transfers that respects program order, dependencies
    and messages; a cycle among them is a deadlock.
replay
    Walk that order and write each transfer's reads and writes of chunks
    into the verification model (:func:`wafercoll.verify` and
    :func:`wafercoll.execute` use it), and each message into the Schedule
    :func:`wafercoll.simulate` times. The model is then checked for reads of
    chunks that hold no data (an import error).
"""

from __future__ import annotations

import heapq
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import ScheduleError
from ..kit.program import Program, Ranges
from ..schedule import Schedule
from ._common import FormatError, read_bytes
from ._msccl_parse import ElementParser, Step, int_attr

__all__ = ["read_msccl"]

#: The ``coll`` attribute's spellings, by the collective each names.
_COLL = {
    "allreduce": "allreduce",
    "allgather": "allgather",
    "reduce_scatter": "reduce_scatter",
    "reducescatter": "reduce_scatter",
    "reduce": "reduce",
    "broadcast": "broadcast",
    "alltoall": "alltoall",
}
_RECV_TYPES = {"r", "rrc", "rcs", "rrcs", "rrs"}
_SEND_TYPES = {"s", "rcs", "rrcs", "rrs"}
_LOCAL_TYPES = {"re", "cpy", "nop"}
_STEP_TYPES = _RECV_TYPES | _SEND_TYPES | _LOCAL_TYPES
#: The operands each step type uses, as the runtime's reader checks them:
#: ``src`` (``srcbuf`` / ``srcoff``) and ``dst`` (``dstbuf`` / ``dstoff``).
_OPERANDS = {
    "s": ("src",),
    "r": ("dst",),
    "rcs": ("dst",),
    "rrs": ("src",),
    "rrc": ("src", "dst"),
    "rrcs": ("src", "dst"),
    "cpy": ("src", "dst"),
    "re": ("src", "dst"),
    "nop": (),
}
_PROTOCOLS = ("Simple", "LL", "LL128")

#: Limits of the runtime (microsoft/msccl b23e9cd, src/include/msccl.h and
#: src/graph/topo.cc): steps per thread block, chunks per step (cnt <
#: MSCCL_MAX_COUNT), thread blocks per GPU, send (or receive) thread blocks
#: per channel, channels (MAXCHANNELS), reductions fused into one, and the
#: 16-bit chunk offsets.
_MAX_STEPS = 256
_MAX_COUNT = 72
_MAX_TBS = 216
_MAX_TBS_PER_CHANNEL = 32
_MAX_CHANNELS = 32
_MAX_REDUCE_FUSION = 16
_MAX_OFFSET = (1 << 15) - 1

#: The line errors about ``<algo>`` attributes name. Always line 1, where
#: ``<algo>`` opens in the files msccl-tools and :func:`write_msccl` write.
_ALGO_LINE = 1

_Cell = tuple[int, int]  # (model rank, block)
_Row = tuple[int, int, list[int], str, list[int]]  # src, dst, blocks, op, deps


@dataclass
class _Op:
    """One transfer of the runtime: a step and what the runtime folds into it.

    The ``nop`` s before it hand it their dependencies (``waits``); a ``re``
    carries the steps fused into it (``parts``).
    """

    step: Step
    parts: list[Step]
    waits: list[tuple[int, int, Step]]  # (thread block, step, the step asking)
    hasdep: int
    flag: int = 0  # the value the thread block's flag takes after it
    pos: int = 0  # position among its thread block's transfers
    index: int = 0  # index among all transfers
    preds: list[int] = field(default_factory=list)


class _MscclReader:
    """One import: parse, fold, match, order, replay.

    Errors are raised in the phase that finds them, in the order the steps
    are met, so a file with several problems reports the same first one on
    every read.
    """

    def __init__(self, text: str | bytes, path: str | None, chunk_bytes: int | None):
        self.text = text
        self.chunk_bytes = chunk_bytes
        self.ps = ElementParser(path)
        # parse
        self.steps: dict[tuple[int, int], list[Step]] = {}
        self.sizes: dict[int, dict[str, int]] = {}  # GPU -> buffer -> chunks
        self.gpu_line: dict[int, int] = {}
        # fold / match / order
        self.ops: dict[tuple[int, int], list[_Op]] = {}
        self.all_ops: list[_Op] = []
        self.match_send: dict[int, _Op] = {}  # receiving op index -> sending op
        self.sequence: list[int] = []
        # replay: the model's transfers and what each reads, the messages
        self.m_rows: list[_Row] = []
        self.m_label: list[str] = []
        self.m_reads: list[tuple[Step | None, dict[int, str]]] = []
        self.n_ranks = 0
        self.relay_free: list[int] = []
        self.done: dict[int, list[int]] = {}  # op -> model transfers ending it
        self.msg_of: dict[int, tuple[list[_Cell], list[int]]] = {}  # send op
        self.scratch: dict[tuple[int, int], _Cell] = {}  # (GPU, chunk) -> cell
        self.scratch_layers: dict[int, list[tuple[int, set[int]]]] = {}
        self.t_rows: list[_Row] = []
        self.t_label: list[str] = []
        self.t_done: dict[int, frozenset[int]] = {}  # op -> messages before

    def run(self) -> Schedule:
        self.parse()
        self.fold()
        self.match()
        self.order()
        return self.replay()

    def err(self, st: Step, msg: str) -> FormatError:
        return self.ps.err(f"{st.where()}: {msg}", "step", st.line)

    # ------------------------------------------------------------------ parse
    def parse(self) -> None:
        """XML to steps: the ``<algo>`` header, then each GPU and thread block."""
        self.ps.parse(self.text)
        self._read_header()
        gpu_seen: set[int] = set()
        for g in self.ps.gpus:
            gid = self._read_gpu(g)
            if gid in gpu_seen:
                raise self.ps.err(f"GPU {gid} appears twice", "gpu", g["line"])
            gpu_seen.add(gid)
            tb_ids: list[int] = []
            conn: dict[tuple[str, int, int], int] = {}
            for tb in g["tbs"]:
                tid, prog = self._read_tb(gid, tb, tb_ids, conn)
                self.steps[(gid, tid)] = prog
            missing = sorted(set(range(len(tb_ids))) - set(tb_ids))
            if missing:
                raise self.ps.err(
                    f"GPU {gid}: thread block {missing[0]} is missing (the runtime "
                    "numbers thread blocks 0, 1, ... without gaps)",
                    "gpu",
                    g["line"],
                )
        # Only now that every thread block is known can ``depid`` be checked.
        for (gid, _tid), prog in self.steps.items():
            for st in prog:
                if st.depid >= 0:
                    other = self.steps.get((gid, st.depid))
                    if other is None or not 0 <= st.deps < len(other):
                        raise self.err(
                            st,
                            f"depends on tb {st.depid} step {st.deps}, which "
                            "does not exist",
                        )

    def _read_header(self) -> None:
        """The collective, its size in chunks, buffers in place or not."""
        ps, algo, where, line = self.ps, self.ps.algo, "<algo>", _ALGO_LINE
        assert algo is not None
        for key in ("name", "proto", "coll"):
            if key not in algo:
                raise ps.err(f"attribute {key!r} is missing", "algo", line)
        self.algo_name = algo["name"]
        if algo["proto"] not in _PROTOCOLS:
            raise ps.err(
                f"proto={algo['proto']!r} is not a protocol of the runtime "
                f"(accepted: {', '.join(_PROTOCOLS)})",
                "algo",
                line,
            )
        coll_name = algo["coll"]
        if coll_name.lower() not in _COLL:
            raise ps.err(
                f"coll={coll_name!r} is not a collective wafercoll verifies "
                f"(accepted: {', '.join(sorted(set(_COLL)))})",
                "algo",
                line,
            )
        coll = self.coll = _COLL[coll_name.lower()]

        def num(key: str, lo: int, hi: int | None = None, default: int | None = None):
            return int_attr(algo, key, where, ps, "algo", line, default, lo, hi)

        ngpus = self.ngpus = num("ngpus", 1, 1 << 16)
        nchunks = self.nchunks = num("nchunksperloop", 1, 1 << 20)
        num("nchannels", 1)
        self.inplace = num("inplace", 0, 1)
        if "nthreads" in algo and num("nthreads", 32) % 32:
            raise ps.err("nthreads must be a multiple of 32", "algo", line)
        lo_b = num("minBytes", 0, default=0)
        hi_b = num("maxBytes", 0, default=1 << 27)
        if lo_b > hi_b:
            raise ps.err(
                f"minBytes={lo_b} is greater than maxBytes={hi_b}", "algo", line
            )
        if self.chunk_bytes is None:
            self.cb = num("chunkbytes", 1, default=1 << 20)
        else:
            from .._util import as_int

            self.cb = as_int(self.chunk_bytes, "chunk_bytes", 1)
        self.root = num("root", 0, ngpus - 1, default=0)
        if coll in ("allgather", "reduce_scatter", "alltoall") and nchunks % ngpus:
            raise ps.err(
                f"{coll} needs nchunksperloop ({nchunks}) divisible by ngpus ({ngpus})",
                "algo",
                line,
            )
        self.per_rank = nchunks // ngpus
        # An alltoall's loop is one GPU's buffer: every GPU sends per_rank
        # chunks to each GPU, so the collective has ngpus * nchunks blocks.
        self.n_blocks = nchunks * ngpus if coll == "alltoall" else nchunks
        if coll == "alltoall" and self.inplace:
            raise ps.err(
                "an in-place alltoall overwrites each input chunk with another "
                "GPU's chunk; the import follows every block in a place of its "
                'own (out of place, inplace="0", as msccl-tools writes it)',
                "algo",
                line,
            )
        if len(ps.gpus) != ngpus:
            raise ps.err(
                f"ngpus={ngpus} but the file has {len(ps.gpus)} <gpu> elements",
                "algo",
                line,
            )

    def _read_gpu(self, g: dict[str, Any]) -> int:
        """A ``<gpu>``: its id and the sizes of its three buffers."""
        ps, attrs, line = self.ps, g["attrs"], g["line"]
        gid = int_attr(attrs, "id", "<gpu>", ps, "gpu", line, lo=0, hi=self.ngpus - 1)
        w = f"GPU {gid}"
        sizes = {
            b: int_attr(attrs, f"{b}_chunks", w, ps, "gpu", line, lo=0, hi=1 << 20)
            for b in "ios"
        }
        # The runtime's check: a declared input (output) holds the whole
        # loop, or the GPU's slice of it for an allgather's input (a
        # reduce-scatter's output).
        for b, sliced in (("i", "allgather"), ("o", "reduce_scatter")):
            want = self.per_rank if self.coll == sliced else self.nchunks
            if sizes[b] and sizes[b] != want:
                raise ps.err(
                    f"{w}: {b}_chunks={sizes[b]} but a {self.coll} of "
                    f"nchunksperloop={self.nchunks} has {want} chunks there "
                    "(or 0: the buffer is not used)",
                    "gpu",
                    line,
                )
        self.sizes[gid] = sizes
        self.gpu_line[gid] = line
        return gid

    def _read_tb(
        self,
        gid: int,
        tb: dict[str, Any],
        tb_ids: list[int],
        conn: dict[tuple[str, int, int], int],
    ) -> tuple[int, list[Step]]:
        """A thread block's peers and channel, then its steps."""
        ps, attrs, line, hi = self.ps, tb["attrs"], tb["line"], self.ngpus - 1
        tid = int_attr(
            attrs, "id", f"GPU {gid} <tb>", ps, "tb", line, lo=0, hi=_MAX_TBS - 1
        )
        w = f"GPU {gid} tb {tid}"
        # -1: no peer that way (a thread block may only send or only receive).
        send = int_attr(attrs, "send", w, ps, "tb", line, lo=-1, hi=hi)
        recv = int_attr(attrs, "recv", w, ps, "tb", line, lo=-1, hi=hi)
        chan = int_attr(attrs, "chan", w, ps, "tb", line, lo=0, hi=_MAX_CHANNELS - 1)
        if gid in (send, recv):
            raise ps.err(f"{w}: a thread block cannot talk to its own GPU", "tb", line)
        if tid in tb_ids:
            raise ps.err(f"{w}: thread block id repeated", "tb", line)
        tb_ids.append(tid)
        # A connection (peer, channel) has one sending and one receiving
        # thread block: the runtime hands each its connection's FIFO and
        # step counters, which two thread blocks would corrupt.
        for way, peer in (("send", send), ("recv", recv)):
            if peer < 0:
                continue
            other = conn.setdefault((way, peer, chan), tid)
            if other != tid:
                verb = "send to" if way == "send" else "receive from"
                raise ps.err(
                    f"{w}: thread blocks {other} and {tid} both {verb} GPU {peer} "
                    f"on channel {chan}; a connection has one sending and one "
                    "receiving thread block",
                    "tb",
                    line,
                )
            n_way = sum(1 for k in conn if k[0] == way and k[2] == chan)
            if n_way > _MAX_TBS_PER_CHANNEL:
                raise ps.err(
                    f"{w}: more than {_MAX_TBS_PER_CHANNEL} thread blocks {way} "
                    f"on channel {chan} (the runtime's limit)",
                    "tb",
                    line,
                )
        if len(tb["steps"]) > _MAX_STEPS:
            raise ps.err(
                f"{w}: {len(tb['steps'])} steps; the runtime allows {_MAX_STEPS}",
                "tb",
                line,
            )
        peers = (send, recv, chan)
        prog = [
            self._read_step(gid, tid, i, sa, sline, peers)
            for i, (sa, sline) in enumerate(tb["steps"])
        ]
        return tid, prog

    def _read_step(
        self,
        gid: int,
        tid: int,
        i: int,
        sa: dict[str, str],
        line: int,
        peers: tuple[int, int, int],
    ) -> Step:
        """Step ``i`` of a thread block whose (send, recv, chan) are ``peers``.

        Every attribute the runtime reads is required, whatever the type.
        """
        ps, ws = self.ps, f"GPU {gid} tb {tid} step {i}"
        # Dependencies name steps by index, so a gap or reordering would make
        # them point elsewhere: the numbering must be the position.
        k = int_attr(sa, "s", ws, ps, "step", line, lo=0)
        if k != i:
            raise ps.err(
                f"{ws}: steps must be numbered 0, 1, ... (found s={k})", "step", line
            )
        if "type" not in sa:
            raise ps.err(f"{ws}: attribute 'type' is missing", "step", line)
        kind = sa["type"]
        if kind not in _STEP_TYPES:
            hint = " ('ra' is not supported)" if kind == "ra" else ""
            raise ps.err(f"{ws}: unknown step type {kind!r}{hint}", "step", line)

        def num(key: str, lo: int, hi: int | None = None) -> int:
            return int_attr(sa, key, ws, ps, "step", line, lo=lo, hi=hi)

        def buf(key: str) -> str:
            if key not in sa:
                raise ps.err(f"{ws}: attribute {key!r} is missing", "step", line)
            if sa[key] not in ("i", "o", "s"):
                raise ps.err(
                    f"{ws}: {key}={sa[key]!r} is not a buffer (i, o or s)",
                    "step",
                    line,
                )
            return sa[key]

        # Arguments are evaluated in order, so the first bad attribute is the
        # one reported.
        st = Step(
            gid,
            tid,
            i,
            kind,
            srcbuf=buf("srcbuf"),
            srcoff=num("srcoff", -1, _MAX_OFFSET),
            dstbuf=buf("dstbuf"),
            dstoff=num("dstoff", -1, _MAX_OFFSET),
            cnt=num("cnt", 0) if kind == "nop" else num("cnt", 1, _MAX_COUNT - 1),
            depid=num("depid", -1, _MAX_TBS - 1),
            deps=num("deps", -1, _MAX_STEPS - 1),
            line=line,
            hasdep=num("hasdep", 0, 1),
            send=peers[0],
            recv=peers[1],
            chan=peers[2],
        )
        if st.depid >= 0 and st.deps < 0:
            raise ps.err(f"{ws}: depid={st.depid} needs deps >= 0", "step", line)
        if kind in _SEND_TYPES and st.send < 0:
            raise ps.err(
                f"{ws}: a {kind!r} step in a thread block without a send peer",
                "step",
                line,
            )
        if kind in _RECV_TYPES and st.recv < 0:
            raise ps.err(
                f"{ws}: a {kind!r} step in a thread block without a receive peer",
                "step",
                line,
            )
        size = self.sizes[gid]
        for operand in _OPERANDS[kind]:
            b, off = (
                (st.srcbuf, st.srcoff) if operand == "src" else (st.dstbuf, st.dstoff)
            )
            if off < 0 or off + st.cnt > size[b]:
                raise ps.err(
                    f"{ws}: {operand}buf={b!r} {operand}off={off} cnt={st.cnt} "
                    f"reaches outside the {size[b]} chunks GPU {gid} declares "
                    f"({b}_chunks)",
                    "step",
                    line,
                )
        return st

    # ------------------------------------------------------------------- fold
    def fold(self) -> None:
        """The runtime's transfers per thread block, then what each waits for."""
        for key, prog in self.steps.items():
            self.ops[key] = self._fold_tb(prog)
        for ops in self.ops.values():
            for op in ops:
                op.index = len(self.all_ops)
                self.all_ops.append(op)
        for (gid, _tid), ops in self.ops.items():
            for op in ops:
                if op.pos:
                    op.preds.append(ops[op.pos - 1].index)
                for bid, k, asker in op.waits:
                    op.preds.append(self._signal(gid, bid, k, asker).index)

    def _fold_tb(self, prog: list[Step]) -> list[_Op]:
        """One thread block's steps as the runtime's transfers.

        As the runtime's XML reader (its src/graph/topo.cc) builds them.

        A ``nop`` only adds its dependency to those of the next transfer. A
        ``re`` without a dependency of its own that follows a ``re`` into
        the same chunk, from the same buffer, is fused into it (unless that
        one sets a flag, or 16 reductions were met), and the fused
        transfer's flag is that of its last step. The flag counter advances
        by the number of dependencies a transfer waits for (at least one)
        plus its extra fused reductions, so it matches the step numbers as
        long as every ``nop`` has a dependency.
        """
        ops: list[_Op] = []
        pending: list[tuple[int, int, Step]] = []
        chain: tuple[str, int, str] | None = None
        n_red = 0
        counter = 0
        for st in prog:
            if st.depid >= 0:
                pending.append((st.depid, st.deps, st))
            if st.kind == "nop":
                continue
            cont = st.kind == "re" and chain == (st.dstbuf, st.dstoff, st.srcbuf)
            cont = cont and st.depid < 0
            if cont:
                op = ops[-1]
                if st.cnt != op.step.cnt:
                    raise self.err(
                        st,
                        f"the runtime fuses this 're' into {op.step.where()} (same "
                        "destination, no dependency of its own) and applies the "
                        f"last cnt ({st.cnt}) to both, but that one has cnt="
                        f"{op.step.cnt}",
                    )
                op.parts.append(st)
                op.hasdep = st.hasdep
                op.flag += 1
                counter += 1
            else:
                if pending and st.depid < 0:
                    raise self.err(
                        st,
                        "follows 'nop' steps with dependencies but has none itself; "
                        "the runtime refuses such a chain (the step after the "
                        "'nop' s must carry a dependency too)",
                    )
                flag = counter + max(len(pending), 1) - 1
                op = _Op(st, [st], pending, st.hasdep, flag=flag, pos=len(ops))
                ops.append(op)
                pending = []
                counter = flag + 1
            chain = None
            if st.kind == "re":
                n_red += 1
                if not (st.hasdep or n_red == _MAX_REDUCE_FUSION):
                    chain = (st.dstbuf, st.dstoff, st.srcbuf)
        return ops

    def _signal(self, gid: int, bid: int, k: int, asker: Step) -> _Op:
        """The transfer whose flag releases a wait for step ``k`` of ``bid``.

        The first one from step ``k`` on that sets the flag.
        """
        for op in self.ops[(gid, bid)]:
            if op.hasdep and op.flag >= k:
                return op
        raise self.err(
            asker,
            f"waits for tb {bid} step {k}, but no step of tb {bid} from there on "
            'signals (hasdep="1"), so the wait never ends',
        )

    # ------------------------------------------------------------------ match
    def match(self) -> None:
        """Pair the k-th send of each connection with its k-th receive."""
        sends: dict[tuple[int, int, int], list[_Op]] = defaultdict(list)
        recvs: dict[tuple[int, int, int], list[_Op]] = defaultdict(list)
        for (gid, _tid), ops in sorted(self.ops.items()):
            for op in ops:
                st = op.step
                if st.kind in _SEND_TYPES:
                    sends[(gid, st.send, st.chan)].append(op)
                if st.kind in _RECV_TYPES:
                    recvs[(st.recv, gid, st.chan)].append(op)
        for key in sorted(set(sends) | set(recvs)):
            ss, rr = sends.get(key, []), recvs.get(key, [])
            for a, b in zip(ss, rr, strict=False):
                if a.step.cnt != b.step.cnt:
                    raise self.err(
                        b.step,
                        f"receives {b.step.cnt} chunks but the matching send "
                        f"{a.step.where()} sends {a.step.cnt}",
                    )
                self.match_send[b.index] = a
                b.preds.append(a.index)
            if len(ss) != len(rr):
                x, y, c = key
                extra = (ss[len(rr)] if len(ss) > len(rr) else rr[len(ss)]).step
                raise self.ps.err(
                    f"{extra.where()} ({extra.kind!r}) has no matching "
                    f"{'receive' if len(ss) > len(rr) else 'send'}: GPU {x} sends "
                    f"{len(ss)} messages to GPU {y} on channel {c}, GPU {y} "
                    f"receives {len(rr)}",
                    "step",
                    extra.line,
                )

    # ------------------------------------------------------------------ order
    def order(self) -> None:
        """Kahn over transfers: program order, dependencies, messages.

        Ties go to the lowest (GPU, thread block, position), so the replay,
        and with it the numbering of transfers, is the same on every read.
        """
        ops = self.all_ops
        succ: list[list[int]] = [[] for _ in ops]
        indeg = [0] * len(ops)
        for op in ops:
            for j in op.preds:
                if j == op.index:
                    raise self.err(op.step, "waits for itself")
                succ[j].append(op.index)
                indeg[op.index] += 1

        def key(i: int) -> tuple[int, int, int, int]:
            return (ops[i].step.gpu, ops[i].step.tb, ops[i].pos, i)

        heap = [key(i) for i in range(len(ops)) if indeg[i] == 0]
        heapq.heapify(heap)
        while heap:
            i = heapq.heappop(heap)[-1]
            self.sequence.append(i)
            for j in succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, key(j))
        if len(self.sequence) != len(ops):
            stuck = next(op.step for op in ops if indeg[op.index] > 0)
            raise self.err(
                stuck,
                "the program would deadlock: this step waits, through program "
                "order, dependencies and messages, for itself",
            )

    # ----------------------------------------------------------------- cells
    def _relay(self) -> int:
        """A rank of the model that is no GPU: it only relays data."""
        r = self.n_ranks
        self.n_ranks += 1
        return r

    def _fresh(self, blocks: list[int]) -> list[_Cell]:
        """Cells of new relay ranks for ``blocks`` (a repeat takes a new rank)."""
        seen: dict[int, int] = {}
        ranks: list[int] = []
        out = []
        for b in blocks:
            k = seen.get(b, 0)
            seen[b] = k + 1
            while len(ranks) <= k:
                ranks.append(self._relay())
            out.append((ranks[k], b))
        return out

    def _cells(self, st: Step, operand: str) -> list[_Cell | None]:
        """The chunks ``operand`` of ``st`` names, as cells of the model.

        Input and output are the GPU's rank (one vector when the program
        runs in place, as the runtime aliases them; else the output is a
        relay rank of its own); a scratch chunk is a cell of a relay rank,
        holding the block first written into it (None before that).
        """
        g = st.gpu
        b, off = (st.srcbuf, st.srcoff) if operand == "src" else (st.dstbuf, st.dstoff)
        idx = range(off, off + st.cnt)
        if b == "s":
            return [self.scratch.get((g, j)) for j in idx]
        if self.coll == "alltoall":
            rank = g if b == "i" else self.out_rank[g]
            return [(rank, self._alltoall_block(g, j, b == "o")) for j in idx]
        coll, base = self.coll, g * self.per_rank
        slice_of = "allgather" if b == "i" else "reduce_scatter"
        if self.inplace:
            # In place, the runtime's input of an allgather (output of a
            # reduce-scatter) is the GPU's slice of the other buffer.
            shift = base if coll == slice_of else 0
            return [(g, shift + j) for j in idx]
        rank = g if b == "i" else self.out_rank[g]
        shift = base if coll == slice_of else 0
        return [(rank, shift + j) for j in idx]

    def _alltoall_block(self, g: int, j: int, output: bool) -> int:
        """The block of an alltoall's chunk ``j`` of GPU ``g``.

        Input chunk ``j`` is GPU ``g``'s chunk ``j % k`` for GPU ``j // k``;
        output chunk ``j`` holds GPU ``j // k``'s chunk ``j % k`` for ``g``
        (``k = per_rank``); block ``(i * p + t) * k + c`` is GPU ``i``'s chunk
        ``c`` for GPU ``t``.
        """
        k, p = self.per_rank, self.ngpus
        src, dst = (j // k, g) if output else (g, j // k)
        return (src * p + dst) * k + j % k

    def _write_cells(self, st: Step, blocks: list[int]) -> list[_Cell]:
        """Destination cells of ``st`` for data of ``blocks``.

        A scratch chunk takes the block on its first write and keeps it.
        """
        cells = self._cells(st, "dst")
        out = []
        for j, (c, blk) in enumerate(zip(cells, blocks, strict=True)):
            if st.dstbuf == "s":
                key = (st.gpu, st.dstoff + j)
                if c is None:
                    c = self.scratch[key] = self._scratch_cell(st.gpu, blk)
                elif c[1] != blk:
                    raise self.err(
                        st,
                        f"writes block {blk} into scratch chunk {st.dstoff + j}, "
                        f"which holds block {c[1]}; the import follows one block "
                        "per scratch chunk",
                    )
            elif c is None or c[1] != blk:
                raise self.err(
                    st,
                    f"writes block {blk} into chunk {st.dstoff + j} of buffer "
                    f"{st.dstbuf!r}, the place of block {c[1] if c else '?'}; "
                    "wafercoll moves a block into the same block of another rank",
                )
            out.append(c)
        return out

    def _scratch_cell(self, g: int, blk: int) -> _Cell:
        layers = self.scratch_layers.setdefault(g, [])
        for rank, used in layers:
            if blk not in used:
                used.add(blk)
                return (rank, blk)
        layers.append((self._relay(), {blk}))
        return (layers[-1][0], blk)

    def _read_cells(
        self, st: Step, operand: str, blocks: list[int] | None = None
    ) -> list[_Cell]:
        """Source cells of ``st``; with ``blocks``, they must hold those."""
        cells = self._cells(st, operand)
        b, off = (st.srcbuf, st.srcoff) if operand == "src" else (st.dstbuf, st.dstoff)
        out = []
        for j, c in enumerate(cells):
            if c is None:
                raise self.err(
                    st,
                    f"reads scratch chunk {off + j}, which no step writes before "
                    "(its content is undefined)",
                )
            if blocks is not None and c[1] != blocks[j]:
                raise self.err(
                    st,
                    f"combines chunk {off + j} of buffer {b!r} (block {c[1]}) with "
                    f"block {blocks[j]}; wafercoll reduces a block into the same "
                    "block",
                )
            out.append(c)
        return out

    def _no_overlap(self, st: Step, a: list[_Cell], b: list[_Cell]) -> None:
        if a != b and set(a) & set(b):
            raise self.err(
                st,
                "its source and destination chunks overlap without coinciding; "
                "the runtime's threads would read chunks others write",
            )

    # ------------------------------------------------------------ model rows
    def _move(
        self,
        src: list[_Cell],
        dst: list[_Cell],
        op: str,
        deps: list[int] | set[int],
        st: Step | None,
        what: str,
        names: list[str] | None = None,
    ) -> list[int]:
        """Model transfers moving ``src`` to ``dst`` cell by cell.

        One transfer per pair of ranks; ``names`` say, per chunk, what a
        local read reads (for the error about a chunk without data).
        """
        groups: dict[tuple[int, int], list[int]] = {}
        name_of: dict[tuple[int, int], dict[int, str]] = {}
        for j, ((sr, sb), (dr, db)) in enumerate(zip(src, dst, strict=True)):
            assert sb == db
            if (sr, sb) == (dr, db):
                continue  # a copy of a chunk onto itself
            groups.setdefault((sr, dr), []).append(sb)
            if names is not None:
                name_of.setdefault((sr, dr), {})[sb] = names[j]
        ids = []
        d = sorted(set(deps))
        for (sr, dr), blocks in groups.items():
            ids.append(len(self.m_rows))
            self.m_rows.append((sr, dr, sorted(blocks), op, d))
            where = st.where() if st is not None else f"GPU {dr}"
            self.m_label.append(f"{where} ({what})")
            self.m_reads.append((st, name_of.get((sr, dr), {})))
        return ids

    def _names(self, st: Step, operand: str) -> list[str]:
        b, off = (st.srcbuf, st.srcoff) if operand == "src" else (st.dstbuf, st.dstoff)
        return [f"chunk {off + j} of buffer {b!r}" for j in range(st.cnt)]

    # ----------------------------------------------------------------- replay
    def replay(self) -> Schedule:
        """Each transfer's reads and writes into the model, in order.

        A transfer starts with a marker (a copy of its own), waiting for the
        transfers it follows; its reads wait for the marker, so a write by
        a transfer not ordered after it cannot pass for ordered. A message is
        read into a relay rank at its send and delivered from there.
        """
        p = self.ngpus
        self.n_ranks = p
        self.out_rank = [self._relay() for _ in range(p)] if not self.inplace else []
        # The marker source: a copy, at the start, of a chunk with input.
        r0, b0 = (self.root if self.coll == "broadcast" else 0), 0
        z = self._relay()
        self.init = self._move([(r0, b0)], [(z, b0)], "copy", [], None, "start")
        self.z = (z, b0)
        for i in self.sequence:
            self._replay_op(self.all_ops[i])
        if not self.t_rows:
            raise self.ps.err("the program moves no data", "algo", _ALGO_LINE)
        if not self.inplace:
            self._deliver_outputs()
        return self._schedule()

    def _replay_op(self, op: _Op) -> None:
        st, kind = op.step, op.step.kind
        after: set[int] = set(self.init)
        t_after: frozenset[int] = frozenset()
        for j in op.preds:
            after.update(self.done[j])
            t_after = t_after | self.t_done[j]
        marker = self._move(
            [self.z], self._fresh([self.z[1]]), "copy", after, st, "start"
        )
        done: list[int] = []
        t_done = t_after
        if kind == "s":
            cells = self._read_cells(st, "src")
            relay = self._fresh([c[1] for c in cells])
            ids = self._move(
                cells, relay, "copy", marker, st, "send", self._names(st, "src")
            )
            self.msg_of[op.index] = (relay, ids)
            done = ids
        elif kind in _RECV_TYPES:
            done, t_done = self._receive(op, after, marker, t_after)
        elif kind == "cpy":
            src = self._read_cells(st, "src")
            dst = self._write_cells(st, [c[1] for c in src])
            self._no_overlap(st, src, dst)
            done = self._move(
                src, dst, "copy", marker, st, "copy", self._names(st, "src")
            )
        elif kind == "re":
            done = self._reduce_local(op, marker)
        self.done[op.index] = done or marker
        self.t_done[op.index] = t_done

    def _receive(
        self, op: _Op, after: set[int], marker: list[int], t_after: frozenset[int]
    ) -> tuple[list[int], frozenset[int]]:
        """A receiving step: deliver, or reduce with the local chunks.

        Then store (unless ``rrs``) and forward (``rcs``, ``rrs``, ``rrcs``).
        """
        st, kind = op.step, op.step.kind
        snd = self.match_send[op.index]
        msg, ready = self.msg_of[snd.index]
        blocks = [c[1] for c in msg]
        start = sorted(set(marker) | set(ready))
        done: list[int] = []
        value, value_ready = msg, ready
        if kind in ("rrc", "rrs", "rrcs"):
            local = self._read_cells(st, "src", blocks)
            acc = self._fresh(blocks)
            got = self._move(
                local, acc, "copy", marker, st, "local operand", self._names(st, "src")
            )
            red = self._move(msg, acc, "reduce", set(got) | set(ready), st, "reduce")
            value, value_ready = acc, red
            done = red
            start = red
        if kind != "rrs":
            dst = self._write_cells(st, blocks)
            if kind in ("rrc", "rrcs"):
                self._no_overlap(st, self._cells(st, "src"), dst)  # type: ignore[arg-type]
            done = done + self._move(value, dst, "copy", start, st, "store")
        if kind in _SEND_TYPES:
            fwd = self._fresh(blocks)
            ids = self._move(
                value, fwd, "copy", set(value_ready) | set(start), st, "forward"
            )
            self.msg_of[op.index] = (fwd, ids)
            done = done + ids
        # The timing view: one transfer per message, from sender to receiver.
        t = len(self.t_rows)
        t_deps = t_after
        rop = "reduce" if kind in ("rrc", "rrs", "rrcs") else "copy"
        self.t_rows.append((snd.step.gpu, st.gpu, blocks, rop, sorted(t_deps)))
        self.t_label.append(f"{snd.step.where()} -> {st.where()}")
        return done, frozenset([t])

    def _reduce_local(self, op: _Op, marker: list[int]) -> list[int]:
        """A ``re`` and the steps fused into it, summed in a relay, stored."""
        st = op.step
        dst = self._read_cells(st, "dst")
        blocks = [c[1] for c in dst]
        acc = self._fresh(blocks)
        prev = self._move(
            dst, acc, "copy", marker, st, "destination", self._names(st, "dst")
        )
        for part in op.parts:
            src = self._read_cells(part, "src", blocks)
            self._no_overlap(part, src, dst)
            prev = self._move(
                src, acc, "reduce", prev, part, "reduce", self._names(part, "src")
            )
        return self._move(acc, dst, "copy", prev, op.parts[-1], "store")

    def _deliver_outputs(self) -> None:
        """Out of place, copy the output buffers into the GPUs' ranks.

        After everything else: the collective is checked at the GPU's rank.
        """
        has_succ = {d for row in self.m_rows for d in row[4]}
        sinks = [t for t in range(len(self.m_rows)) if t not in has_succ]
        per, n = self.per_rank, self.nchunks
        for g in range(self.ngpus):
            if self.coll == "reduce" and g != self.root:
                continue
            if self.coll == "alltoall":
                blocks = [self._alltoall_block(g, j, True) for j in range(n)]
            elif self.coll == "reduce_scatter":
                blocks = list(range(g * per, (g + 1) * per))
            else:
                blocks = list(range(n))
            src = [(self.out_rank[g], b) for b in blocks]
            names = [f"output chunk {j}" for j in range(len(blocks))]
            self._move(
                src, [(g, b) for b in blocks], "copy", sinks, None, "output", names
            )

    def _schedule(self) -> Schedule:
        """The Schedule of the messages, with the exact model it verifies by."""
        coll, per_rank = self.coll, self.per_rank
        kw: dict[str, Any] = {
            "root": self.root if coll in ("reduce", "broadcast") else None,
            "owners": [b // per_rank for b in range(self.nchunks)]
            if coll in ("allgather", "reduce_scatter")
            else None,
            "name": self.algo_name,
        }
        if coll == "alltoall":
            # Block (i * p + j) * k + c: chunk c of GPU i's data for GPU j.
            pair = np.arange(self.n_blocks) // per_rank
            kw["owners"] = (pair // self.ngpus).tolist()
            kw["targets"] = (pair % self.ngpus).tolist()
        s = _build(self.ngpus, [self.cb] * self.n_blocks, coll, self.t_rows, kw)
        s.labels = self.t_label
        model = _build(
            self.n_ranks,
            [self.cb] * self.n_blocks,
            coll,
            self.m_rows,
            {**kw, "participants": range(self.ngpus)},
        )
        model.labels = self.m_label
        self._check_defined(model)
        s._model = model
        return s

    def _check_defined(self, model: Schedule) -> None:
        """Refuse a read of a chunk that holds no data when its step runs.

        Cells without data are empty in the model; the verifier names the
        first read of one (in an order of the model's transfers). Other
        findings are left to :func:`wafercoll.verify`.
        """
        from .. import _core

        try:
            _core.verify(model._core)
        except ScheduleError as exc:
            if exc.kind != "empty_read" or exc.transfer is None:
                return
            st, names = self.m_reads[exc.transfer]
            what = names.get(exc.block, f"block {exc.block}")
            if st is None:
                g = self.m_rows[exc.transfer][1]
                raise self.ps.err(
                    f"GPU {g}: {what} is never written (the program runs out "
                    "of place, so the output buffer starts undefined)",
                    "gpu",
                    self.gpu_line[g],
                ) from None
            raise self.err(
                st,
                f"reads {what}, which holds no defined data when the step runs "
                "(no step writes it before, in some order the program allows)",
            ) from None


def read_msccl(
    source: str | bytes | os.PathLike[str],
    *,
    chunk_bytes: int | None = None,
) -> Schedule:
    """Read MSCCL XML (msccl-tools, synthesizers, :func:`write_msccl`) into a Schedule.

    Parameters
    ----------
    source : path-like, str or bytes
        A file, or the XML document itself (bytes are decoded as the XML
        declaration or byte-order mark says).
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
        For malformed XML or an encoding that cannot be read, a missing or
        bad attribute, a send without its receive, a read of a chunk that
        holds no data, or a step the import cannot express (the message
        names the file, element, line, GPU, thread block and step).

    Examples
    --------
    Export a ring AllReduce on 4 ranks, read it back and prove it correct:

    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> t = wc.io.read_msccl(wc.io.msccl_xml(s))
    >>> t.collective, t.num_ranks, t.num_transfers
    ('allreduce', 4, 24)
    >>> wc.verify(t).steps  # 2 (p - 1) steps of a ring
    6
    >>> t.labels[0]
    'GPU 0 tb 0 step 0 -> GPU 1 tb 0 step 0'
    >>> wc.io.read_msccl(wc.io.msccl_xml(s), chunk_bytes=1024).block_bytes.tolist()
    [1024, 1024, 1024, 1024]
    """
    text, path = read_bytes(source, "MSCCL XML")
    return _MscclReader(text, path, chunk_bytes).run()


def _build(
    ranks: int, block_bytes: list[int], coll: str, rows: list[_Row], kw: dict
) -> Schedule:
    """A schedule of ``(src, dst, blocks, op, deps)`` rows, written with the kit.

    The core checks them as :meth:`Schedule.add_transfer` does.
    """
    prog = Program(ranks, block_bytes, coll, rule="explicit", **kw)
    src = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    dst = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    ops = np.fromiter((r[3] == "reduce" for r in rows), np.uint8, len(rows))
    roff, lo, hi, doff, deps = [0], [], [], [0], []
    for r in rows:
        for a, b in _runs(r[2]):
            lo.append(a)
            hi.append(b)
        roff.append(len(lo))
        deps.extend(r[4])
        doff.append(len(deps))
    prog.step(
        src,
        dst,
        Ranges(np.asarray(lo), np.asarray(hi), np.asarray(roff)),
        ops,
        deps=(np.asarray(deps, np.int64), np.asarray(doff, np.int64)),
    )
    return prog.schedule()


def _runs(blocks: list[int]) -> list[tuple[int, int]]:
    """Blocks as half-open ``(lo, hi)`` runs of consecutive blocks, in order."""
    out: list[list[int]] = []
    for b in sorted(blocks):
        if out and out[-1][1] == b:
            out[-1][1] = b + 1
        else:
            out.append([b, b + 1])
    return [(a, b) for a, b in out]
