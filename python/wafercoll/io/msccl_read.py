"""MSCCL XML import: a program of thread blocks replayed into a Schedule.

The format and the limits of the import are described in
:mod:`wafercoll.io.msccl`. The reader runs four phases, each a method of
:class:`_MscclReader` that leaves its result on the reader for the next:

parse
    XML to one :class:`Step` list per (GPU, thread block), every attribute
    checked where it is read, so an error names the element and its line.
match
    Pair sends with receives per connection (sender, receiver, channel), in
    program order: the runtime delivers a connection's messages in order.
order
    One order of all steps that respects program order, explicit
    dependencies and messages; a cycle among them is a deadlock.
replay
    Walk that order, turn each message into a transfer that waits for what
    its send and its receiving steps waited for, and build the Schedule with
    its exact verification model (:func:`_exact_model`).
"""

from __future__ import annotations

import heapq
import os
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..schedule import Schedule
from ._common import read_text
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
}
_RECV_TYPES = {"r", "rrc", "rcs", "rrcs", "rrs"}
_SEND_TYPES = {"s", "rcs", "rrcs", "rrs"}
_LOCAL_TYPES = {"re", "cpy", "nop"}
_STEP_TYPES = _RECV_TYPES | _SEND_TYPES | _LOCAL_TYPES

#: The line errors about ``<algo>`` attributes name. Always line 1, where
#: ``<algo>`` opens in the files msccl-tools and :func:`write_msccl` write.
_ALGO_LINE = 1


@dataclass
class _Messages:
    """The transfers the replay makes, one per message, in replay order.

    ``sdeps[t]`` is what the send step waited for, ``deps[t]`` that and what
    the receiving steps waited for: the exact model needs the two apart.
    ``tok[t]`` is a bitset of the scratch receives ``t`` transitively
    follows (see :meth:`_MscclReader._receive_into_scratch`).
    """

    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    blocks: list[list[int]] = field(default_factory=list)
    op: list[str] = field(default_factory=list)
    deps: list[set[int]] = field(default_factory=list)
    sdeps: list[frozenset[int]] = field(default_factory=list)
    label: list[str] = field(default_factory=list)
    tok: list[int] = field(default_factory=list)

    def closure(self, ts: set[int], tok: int) -> int:
        """Tokens ``tok`` and those every transfer of ``ts`` follows."""
        for t in ts:
            tok |= self.tok[t]
        return tok

    def add(
        self,
        src: int,
        dst: int,
        blocks: list[int],
        op: str,
        sdeps: set[int] | frozenset[int],
        rdeps: set[int],
        tok: int,
        label: str,
    ) -> int:
        t = len(self.src)
        self.src.append(src)
        self.dst.append(dst)
        self.blocks.append(blocks)
        self.op.append(op)
        self.sdeps.append(frozenset(sdeps))
        self.deps.append(set(sdeps) | rdeps)
        self.tok.append(self.closure(self.deps[-1], tok))
        self.label.append(label)
        return t


class _MscclReader:
    """One import: :meth:`parse`, :meth:`match`, :meth:`order`, :meth:`replay`.

    Errors are raised in the phase that finds them, in the order the steps
    are met, so a file with several problems reports the same first one on
    every read.
    """

    def __init__(self, text: str, path: str | None, chunk_bytes: int | None):
        self.text = text
        self.chunk_bytes = chunk_bytes
        self.ps = ElementParser(path)
        # parse: (gpu, tb) -> its steps in program order
        self.steps: dict[tuple[int, int], list[Step]] = {}
        # match: id(receive step) -> its send step
        self.match_send: dict[int, Step] = {}
        # order: every step, and the replay order as indices into it
        self.all_steps: list[Step] = []
        self.sequence: list[int] = []
        # replay
        self.msgs = _Messages()
        self.done: dict[int, tuple[frozenset[int], int]] = {}  # step -> after it
        self.send_info: dict[int, tuple[frozenset[int], int, list[int]]] = {}
        self.scratch: dict[tuple[int, int], tuple[Step, Step, int, int]] = {}
        self.n_tokens = 0

    def run(self) -> Schedule:
        self.parse()
        self.match()
        self.order()
        return self.replay()

    # ------------------------------------------------------------------ parse
    def parse(self) -> None:
        """XML to steps: the ``<algo>`` header, then each thread block."""
        self.ps.parse(self.text)
        self._read_header()
        gpu_seen: set[int] = set()
        for g in self.ps.gpus:
            gid = int_attr(
                g["attrs"],
                "id",
                "<gpu>",
                self.ps,
                "gpu",
                g["line"],
                lo=0,
                hi=self.ngpus - 1,
            )
            if gid in gpu_seen:
                raise self.ps.err(f"GPU {gid} appears twice", "gpu", g["line"])
            gpu_seen.add(gid)
            tb_ids: list[int] = []
            for tb in g["tbs"]:
                tid, prog = self._read_tb(gid, tb, tb_ids)
                self.steps[(gid, tid)] = prog
        # Only now that every thread block is known can ``depid`` be checked.
        for (gid, _tid), prog in self.steps.items():
            for st in prog:
                if st.depid >= 0:
                    other = self.steps.get((gid, st.depid))
                    if other is None or not 0 <= st.deps < len(other):
                        raise self.ps.err(
                            f"{st.where()}: depends on tb {st.depid} step "
                            f"{st.deps}, which does not exist",
                            "step",
                            st.line,
                        )

    def _read_header(self) -> None:
        """The collective, its size in chunks and the chunk size."""
        ps, algo, where, line = self.ps, self.ps.algo, "<algo>", _ALGO_LINE
        assert algo is not None
        self.algo_name = algo.get("name", "")
        coll_name = algo.get("coll", "")
        if coll_name.lower() not in _COLL:
            raise ps.err(
                f"coll={coll_name!r} is not a collective wafercoll verifies "
                f"(accepted: {', '.join(sorted(set(_COLL)))})",
                "algo",
                line,
            )
        coll = self.coll = _COLL[coll_name.lower()]
        ngpus = int_attr(algo, "ngpus", where, ps, "algo", line, lo=1, hi=1 << 16)
        self.ngpus = ngpus
        nchunks = self.nchunks = int_attr(
            algo, "nchunksperloop", where, ps, "algo", line, lo=1, hi=1 << 20
        )
        if self.chunk_bytes is None:
            self.cb = int_attr(
                algo, "chunkbytes", where, ps, "algo", line, default=1 << 20, lo=1
            )
        else:
            from .._util import as_int

            self.cb = as_int(self.chunk_bytes, "chunk_bytes", 1)
        self.root = int_attr(
            algo, "root", where, ps, "algo", line, default=0, lo=0, hi=ngpus - 1
        )
        if coll in ("allgather", "reduce_scatter") and nchunks % ngpus:
            raise ps.err(
                f"{coll} needs nchunksperloop ({nchunks}) divisible by ngpus ({ngpus})",
                "algo",
                line,
            )
        self.per_rank = nchunks // ngpus
        if len(ps.gpus) != ngpus:
            raise ps.err(
                f"ngpus={ngpus} but the file has {len(ps.gpus)} <gpu> elements",
                "algo",
                line,
            )

    def _read_tb(
        self, gid: int, tb: dict[str, Any], tb_ids: list[int]
    ) -> tuple[int, list[Step]]:
        """A thread block's peers and channel, then its steps."""
        ps, attrs, line, hi = self.ps, tb["attrs"], tb["line"], self.ngpus - 1
        tid = int_attr(attrs, "id", f"GPU {gid} <tb>", ps, "tb", line, lo=0, hi=1 << 16)
        w = f"GPU {gid} tb {tid}"
        # -1: no peer that way (a thread block may only send or only receive).
        send = int_attr(attrs, "send", w, ps, "tb", line, lo=-1, hi=hi)
        recv = int_attr(attrs, "recv", w, ps, "tb", line, lo=-1, hi=hi)
        chan = int_attr(attrs, "chan", w, ps, "tb", line, default=0, lo=0, hi=1 << 10)
        if gid in (send, recv):
            raise ps.err(f"{w}: a thread block cannot talk to its own GPU", "tb", line)
        if tid in tb_ids:
            raise ps.err(f"{w}: thread block id repeated", "tb", line)
        tb_ids.append(tid)
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
        """Step ``i`` of a thread block whose (send, recv, chan) are ``peers``."""
        ps, ws = self.ps, f"GPU {gid} tb {tid} step {i}"
        # Dependencies name steps by index, so a gap or reordering would make
        # them point elsewhere: the numbering must be the position.
        k = int_attr(sa, "s", ws, ps, "step", line, lo=0)
        if k != i:
            raise ps.err(
                f"{ws}: steps must be numbered 0, 1, ... (found s={k})", "step", line
            )
        kind = sa.get("type", "")
        if kind not in _STEP_TYPES:
            hint = " ('ra' is not supported)" if kind == "ra" else ""
            raise ps.err(f"{ws}: unknown step type {kind!r}{hint}", "step", line)

        def num(key: str, default: int, lo: int) -> int:
            return int_attr(sa, key, ws, ps, "step", line, default=default, lo=lo)

        # Arguments are evaluated in order, so the first bad attribute is the
        # one reported.
        st = Step(
            gid,
            tid,
            i,
            kind,
            srcbuf=sa.get("srcbuf", "i"),
            srcoff=num("srcoff", -1, -1),
            dstbuf=sa.get("dstbuf", "o"),
            dstoff=num("dstoff", -1, -1),
            cnt=num("cnt", 0, 0),
            depid=num("depid", -1, -1),
            deps=num("deps", -1, -1),
            line=line,
            send=peers[0],
            recv=peers[1],
            chan=peers[2],
        )
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
        if kind != "nop" and st.cnt < 1:
            raise ps.err(f"{ws}: cnt must be >= 1", "step", line)
        return st

    def _blocks(self, st: Step, bufname: str, off: int, gpu: int) -> list[int]:
        """Block of each chunk; scratch chunks give ``-1 - offset``.

        Input and output are one vector (see the module notes); an
        allgather's input and a reduce-scatter's output are the GPU's own
        slice of it.
        """
        if bufname == "s":
            return [-1 - (off + j) for j in range(st.cnt)]
        if bufname not in ("i", "o"):
            raise self.ps.err(
                f"{st.where()}: unknown buffer {bufname!r}", "step", st.line
            )
        if off < 0:
            raise self.ps.err(f"{st.where()}: offset must be >= 0", "step", st.line)
        base = 0
        size = self.nchunks
        if (self.coll, bufname) in (("allgather", "i"), ("reduce_scatter", "o")):
            base = gpu * self.per_rank
            size = self.per_rank
        if off + st.cnt > size:
            raise self.ps.err(
                f"{st.where()}: chunks {off}..{off + st.cnt - 1} of buffer "
                f"{bufname!r} exceed its {size} chunks",
                "step",
                st.line,
            )
        return [base + off + j for j in range(st.cnt)]

    # ------------------------------------------------------------------ match
    def match(self) -> None:
        """Pair the k-th send of each connection with its k-th receive."""
        sends, recvs = self._connections()
        for key in set(sends) | set(recvs):
            ss, rr = sends.get(key, []), recvs.get(key, [])
            for a, b in zip(ss, rr, strict=False):
                if a.cnt != b.cnt:
                    raise self.ps.err(
                        f"{a.where()} sends {a.cnt} chunks but the matching "
                        f"receive {b.where()} takes {b.cnt}",
                        "step",
                        b.line,
                    )
                self.match_send[id(b)] = a
            if len(ss) != len(rr):
                x, y, c = key
                extra = ss[len(rr)] if len(ss) > len(rr) else rr[len(ss)]
                raise self.ps.err(
                    f"{extra.where()} ({extra.kind!r}) has no matching "
                    f"{'receive' if len(ss) > len(rr) else 'send'}: GPU {x} sends "
                    f"{len(ss)} messages to GPU {y} on channel {c}, GPU {y} "
                    f"receives {len(rr)}",
                    "step",
                    extra.line,
                )

    def _connections(
        self,
    ) -> tuple[
        dict[tuple[int, int, int], list[Step]], dict[tuple[int, int, int], list[Step]]
    ]:
        """Sends and receives per connection (sender, receiver, channel).

        A connection belongs to one thread block at each end: two would make
        the order of its messages, and so the matching, undefined.
        """
        sends: dict[tuple[int, int, int], list[Step]] = defaultdict(list)
        recvs: dict[tuple[int, int, int], list[Step]] = defaultdict(list)
        conn_tb: dict[tuple[str, int, int, int], int] = {}
        for (gid, tid), prog in sorted(self.steps.items()):
            for st in prog:
                if st.kind in _SEND_TYPES:
                    key = (gid, st.send, st.chan)
                    if conn_tb.setdefault(("s", *key), tid) != tid:
                        raise self.ps.err(
                            f"{st.where()}: GPU {gid} sends to GPU {st.send} on "
                            f"channel {st.chan} from two thread blocks "
                            f"({conn_tb[('s', *key)]} and {tid})",
                            "step",
                            st.line,
                        )
                    sends[key].append(st)
                if st.kind in _RECV_TYPES:
                    key = (st.recv, gid, st.chan)
                    if conn_tb.setdefault(("r", *key), tid) != tid:
                        raise self.ps.err(
                            f"{st.where()}: GPU {gid} receives from GPU {st.recv} "
                            f"on channel {st.chan} in two thread blocks",
                            "step",
                            st.line,
                        )
                    recvs[key].append(st)
        return sends, recvs

    # ------------------------------------------------------------------ order
    def order(self) -> None:
        """Kahn over steps: program order, explicit dependencies, messages.

        Ties go to the lowest (GPU, thread block, step), so the replay, and
        with it the transfers' numbering, is the same on every read.
        """
        all_steps = self.all_steps = [st for p in self.steps.values() for st in p]
        preds = self._predecessors()
        succ: list[list[int]] = [[] for _ in all_steps]
        indeg = [0] * len(all_steps)
        for i, pr in enumerate(preds):
            for j in pr:
                if j != i:
                    succ[j].append(i)
                    indeg[i] += 1
                else:
                    st = all_steps[i]
                    raise self.ps.err(f"{st.where()} waits for itself", "step", st.line)
        heap = [
            (all_steps[i].gpu, all_steps[i].tb, all_steps[i].s, i)
            for i in range(len(all_steps))
            if indeg[i] == 0
        ]
        heapq.heapify(heap)
        order = self.sequence
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
            raise self.ps.err(
                f"the program would deadlock: {stuck.where()} waits, through "
                "program order, dependencies and messages, for itself",
                "step",
                stuck.line,
            )

    def _predecessors(self) -> list[list[int]]:
        """For each step (index into ``all_steps``), the steps it waits for."""
        idx = {id(st): i for i, st in enumerate(self.all_steps)}
        preds: list[list[int]] = [[] for _ in self.all_steps]
        for (gid, _tid), prog in self.steps.items():
            for k, st in enumerate(prog):
                i = idx[id(st)]
                if k:
                    preds[i].append(idx[id(prog[k - 1])])
                if st.depid >= 0:
                    preds[i].append(idx[id(self.steps[(gid, st.depid)][st.deps])])
                if st.kind in _RECV_TYPES:
                    preds[i].append(idx[id(self.match_send[id(st)])])
        return preds

    # ----------------------------------------------------------------- replay
    def replay(self) -> Schedule:
        """Replay the steps in order into transfers; build the Schedule.

        Each step records in ``done`` what a later step that waits for it
        waits for: the transfers it completed (a receive completes its
        message), else what it itself waited for, with the scratch tokens.
        """
        for i in self.sequence:
            st = self.all_steps[i]
            a_ts, a_tok = self._after(st)
            completed: set[int] = set()
            new_tok = 0
            if st.kind in _RECV_TYPES:
                new_tok = self._receive(st, a_ts, a_tok, completed)
            elif st.kind in ("re", "cpy"):
                self._local(st, a_ts, a_tok, completed)
            if st.kind in _SEND_TYPES:
                self._record_send(st, a_ts, a_tok, completed)
            if completed:
                self.done[id(st)] = (frozenset(completed), new_tok)
            else:
                self.done[id(st)] = (frozenset(a_ts), a_tok | new_tok)
        if not self.msgs.src:
            raise self.ps.err("the program moves no data", "algo", _ALGO_LINE)
        return self._schedule()

    def _after(self, st: Step) -> tuple[set[int], int]:
        """Transfers and tokens ``st`` waits for (program order and ``depid``)."""
        ts: set[int] = set()
        tok = 0
        prog = self.steps[(st.gpu, st.tb)]
        for pre in ([prog[st.s - 1]] if st.s else []) + (
            [self.steps[(st.gpu, st.depid)][st.deps]] if st.depid >= 0 else []
        ):
            a, b = self.done[id(pre)]
            ts |= a
            tok |= b
        return ts, tok

    def _receive(
        self, st: Step, a_ts: set[int], a_tok: int, completed: set[int]
    ) -> int:
        """A receive: a transfer, or data parked in scratch (its new token)."""
        snd = self.match_send[id(st)]
        s_ts, s_tok, s_blocks = self.send_info[id(snd)]
        label = f"{snd.where()} -> {st.where()}"
        if any(b < 0 for b in s_blocks):
            raise self.ps.err(
                f"{snd.where()}: sends from the scratch buffer are not supported",
                "step",
                snd.line,
            )
        if st.dstbuf == "s":
            return self._receive_into_scratch(st, snd, s_blocks)
        dst_blocks = self._blocks(st, st.dstbuf, st.dstoff, st.gpu)
        if dst_blocks != s_blocks:
            raise self.ps.err(
                f"{label} moves chunks {s_blocks} into chunks {dst_blocks}; "
                "wafercoll moves a block into the same block of another rank",
                "step",
                st.line,
            )
        op = "copy" if st.kind in ("r", "rcs") else "reduce"
        t = self.msgs.add(
            snd.gpu, st.gpu, s_blocks, op, s_ts, a_ts, s_tok | a_tok, label
        )
        completed.add(t)
        return 0

    def _receive_into_scratch(self, st: Step, snd: Step, s_blocks: list[int]) -> int:
        """Park a message in scratch until a ``re`` / ``cpy`` step applies it.

        No transfer yet: the message becomes one when it is applied. The
        receive gets a token (a bit) that every later step depending on it
        carries, so the applying step can prove it waited for the data.
        """
        if st.kind != "r":
            raise self.ps.err(
                f"{st.where()}: a {st.kind!r} step into the scratch "
                "buffer is not supported",
                "step",
                st.line,
            )
        if st.dstoff < 0:
            raise self.ps.err(f"{st.where()}: offset must be >= 0", "step", st.line)
        new_tok = 1 << self.n_tokens
        self.n_tokens += 1
        for j in range(st.cnt):
            self.scratch[(st.gpu, st.dstoff + j)] = (snd, st, new_tok, s_blocks[j])
        return new_tok

    def _local(self, st: Step, a_ts: set[int], a_tok: int, completed: set[int]) -> None:
        """A ``re`` / ``cpy`` step: applying scratch, or a no-op in place."""
        if st.srcbuf == "s":
            self._apply_scratch(st, a_ts, a_tok, completed)
            return
        # Between the input and output buffers (one vector here), only a
        # copy of a chunk onto itself means nothing to wafercoll.
        src_b = self._blocks(st, st.srcbuf, st.srcoff, st.gpu)
        dst_b = self._blocks(st, st.dstbuf, st.dstoff, st.gpu)
        if src_b != dst_b or st.kind == "re":
            raise self.ps.err(
                f"{st.where()}: a local {st.kind!r} between chunks {src_b} and "
                f"{dst_b} of one GPU cannot be expressed (wafercoll moves data "
                "between ranks)",
                "step",
                st.line,
            )

    def _apply_scratch(
        self, st: Step, a_ts: set[int], a_tok: int, completed: set[int]
    ) -> None:
        """Apply scratch chunks: one transfer per message they came from.

        The transfer is the message itself, waiting for what its send, its
        receive and this step waited for.
        """
        dst_b = self._blocks(st, st.dstbuf, st.dstoff, st.gpu)
        if any(b < 0 for b in dst_b):
            raise self.ps.err(
                f"{st.where()}: scratch-to-scratch {st.kind!r} is not supported",
                "step",
                st.line,
            )
        groups: dict[tuple[int, int], tuple[Step, Step, list[int]]] = {}
        for j in range(st.cnt):
            ent = self.scratch.get((st.gpu, st.srcoff + j))
            if ent is None:
                raise self.ps.err(
                    f"{st.where()} reads scratch chunk {st.srcoff + j}, which no "
                    "receive fills",
                    "step",
                    st.line,
                )
            snd, rst, tok, blk = ent
            if blk != dst_b[j]:
                raise self.ps.err(
                    f"{st.where()} applies scratch chunk {st.srcoff + j} (block "
                    f"{blk}) to chunk {dst_b[j]}; wafercoll moves a block into "
                    "the same block",
                    "step",
                    st.line,
                )
            groups.setdefault((id(snd), id(rst)), (snd, rst, []))[2].append(blk)
            if not self.msgs.closure(a_ts, a_tok) & tok:
                raise self.ps.err(
                    f"{st.where()} reads scratch chunk {st.srcoff + j} without a "
                    f"dependency on the receive that fills it ({rst.where()})",
                    "step",
                    st.line,
                )
        for snd, rst, blks in groups.values():
            s_ts, s_tok, _ = self.send_info[id(snd)]
            r_ts, r_tok = self._after(rst)
            label = f"{snd.where()} -> {rst.where()} -> {st.where()}"
            op = "reduce" if st.kind == "re" else "copy"
            t = self.msgs.add(
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

    def _record_send(
        self, st: Step, a_ts: set[int], a_tok: int, completed: set[int]
    ) -> None:
        """What the message of a sending step waits for, and its blocks."""
        if st.kind == "s":
            s_blocks = self._blocks(st, st.srcbuf, st.srcoff, st.gpu)
            self.send_info[id(st)] = (frozenset(a_ts), a_tok, s_blocks)
        else:
            # rcs / rrcs / rrs forward what this step received (and stored):
            # the message waits for that receive only.
            blocks = self.msgs.blocks
            s_blocks = blocks[next(iter(completed))] if completed else []
            self.send_info[id(st)] = (frozenset(completed), 0, s_blocks)

    def _schedule(self) -> Schedule:
        """The Schedule of the replayed messages, with its exact model."""
        m, coll, per_rank = self.msgs, self.coll, self.per_rank
        s = Schedule(
            self.ngpus,
            [self.cb] * self.nchunks,
            coll,
            root=self.root if coll in ("reduce", "broadcast") else None,
            owners=[b // per_rank for b in range(self.nchunks)]
            if coll in ("allgather", "reduce_scatter")
            else None,
            name=self.algo_name,
        )
        for t in range(len(m.src)):
            ranges = _runs(m.blocks[t])
            s.add_transfer(
                m.src[t], m.dst[t], ranges, op=m.op[t], deps=sorted(m.deps[t])
            )
        s.labels = m.label
        s._model = _exact_model(s, m.sdeps, m.deps, m.label)
        return s


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
    text, path = read_text(source, "MSCCL XML")
    return _MscclReader(text, path, chunk_bytes).run()


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
    """Blocks as half-open ``(lo, hi)`` runs of consecutive blocks, in order."""
    out: list[list[int]] = []
    for b in blocks:
        if out and out[-1][1] == b:
            out[-1][1] = b + 1
        else:
            out.append([b, b + 1])
    return [(a, b) for a, b in out]
