"""Per-rank message programs into a Schedule: what the GOAL and Chakra readers share.

Both formats list, per rank, operations (send, receive, computation) and which
operation waits for which; a send meets the receive from its peer with its tag
in order. :func:`messages_schedule` matches them, orders all operations and
makes one transfer per message; :class:`Op` is an operation as the readers
hand it over, :class:`GoalMessage` a message as ``messages=`` callbacks see it.
The Chakra reader uses it; the GOAL reader does the same in the compiled core
(``cpp/src/io/goal_match.cpp``), which the tests compare with it.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..schedule import Schedule
from ._common import FormatError

__all__ = ["GoalMessage", "Op", "messages_schedule", "opaque_reason"]


@dataclass(frozen=True)
class GoalMessage:
    """One message of a GOAL file (what ``read_goal(messages=...)`` maps).

    ``index`` counts the messages in the order of the returned transfers;
    ``send_label`` and ``recv_label`` are the operations' labels.
    """

    index: int
    src: int
    dst: int
    tag: int
    size: int
    send_label: str
    recv_label: str


@dataclass
class Op:
    """One operation of one rank, as a reader hands it over.

    ``peer`` and ``tag`` are -1 for ``calc``; ``line`` is the operation's
    line (GOAL) or record number (Chakra), for error messages and ties.
    """

    rank: int
    label: str
    kind: str  # send, recv, calc
    size: int
    peer: int
    tag: int
    line: int


def opaque_reason(fmt: str, reader: str, declared: str | None = None) -> str:
    """Why a schedule read from a message program cannot be verified.

    ``declared`` is what the file says it computes, if anything (quoted,
    never trusted: the messages alone are no proof of it).
    """
    claim = f" (it says: {declared})" if declared else ""
    return (
        f"a {fmt} file carries message sizes, not data{claim}, so this "
        f"schedule cannot be verified: pass {reader}(..., messages=f, "
        "block_bytes=..., collective=...) with f(msg) -> (blocks, op) to say "
        "which blocks each message moves"
    )


def messages_schedule(
    p: int,
    ops: list[dict[str, Op]],
    reqs: list[list[tuple[str, str, str, int]]],
    path: str | None,
    fmt: str,
    reader: str,
    name: str,
    messages: Callable[[GoalMessage], tuple[Any, str]] | None,
    block_bytes: Sequence[int] | None,
    collective: str | None,
    root: int | None,
    owners: Sequence[int] | None,
    declared: str | None = None,
) -> Schedule:
    """A schedule from per-rank send / recv / calc operations (GOAL, Chakra).

    ``ops[r]`` maps labels to operations; ``reqs[r]`` holds ``(a, b, kind,
    line)``: operation ``a`` requires ``b``. Errors name ``path`` and the
    operation's line (for Chakra, its record). Without ``messages`` the
    schedule's collective is ``"unknown"``; ``declared`` is what the file
    says it computes, if anything (quoted in the reason it cannot be
    verified, never trusted: the messages alone are no proof of it).
    """

    def where(op: Op) -> dict[str, Any]:
        if fmt == "GOAL":
            return {"path": path, "element": op.kind, "line": op.line}
        return {"path": path, "element": f"record {op.line}"}

    # Matching: k-th send x->y with tag g <-> k-th recv at y from x with tag g,
    # in the order of the file. Keys are checked in the order they first
    # appear (rank by rank), so that of several mismatches the first is told.
    sends: dict[tuple[int, int, int], list[Op]] = defaultdict(list)
    recvs: dict[tuple[int, int, int], list[Op]] = defaultdict(list)
    keys: dict[tuple[int, int, int], None] = {}
    for r in range(p):
        for op in ops[r].values():
            if op.kind == "send":
                key = (r, op.peer, op.tag)
                sends[key].append(op)
                keys[key] = None
            elif op.kind == "recv":
                key = (op.peer, r, op.tag)
                recvs[key].append(op)
                keys[key] = None
    partner: dict[int, Op] = {}
    for key in keys:
        ss, rr = sends.get(key, []), recvs.get(key, [])
        for a, b in zip(ss, rr, strict=False):
            if a.size != b.size:
                raise FormatError(
                    f"rank {a.rank} {a.label} sends {a.size} bytes; the matching "
                    f"receive, rank {b.rank} {b.label}, takes {b.size}",
                    **where(b),
                )
            partner[id(a)] = b
            partner[id(b)] = a
        if len(ss) != len(rr):
            extra = ss[len(rr)] if len(ss) > len(rr) else rr[len(ss)]
            x, y, g = key
            raise FormatError(
                f"rank {extra.rank} {extra.label} ({extra.kind}) has no match: rank "
                f"{x} sends {len(ss)} messages with tag {g} to rank {y}, which "
                f"receives {len(rr)}",
                **where(extra),
            )
    # Kahn over operations: requires (after completion), irequires (after
    # start; the same here: operations start when their predecessors allow),
    # and message edges.
    allops = [op for r in range(p) for op in ops[r].values()]
    idx = {id(op): i for i, op in enumerate(allops)}
    preds: list[list[int]] = [[] for _ in allops]
    for r in range(p):
        for a, b, _kind, _line in reqs[r]:
            preds[idx[id(ops[r][a])]].append(idx[id(ops[r][b])])
    for op in allops:
        if op.kind == "recv":
            preds[idx[id(op)]].append(idx[id(partner[id(op)])])
    succ: list[list[int]] = [[] for _ in allops]
    indeg = [0] * len(allops)
    for i, pr in enumerate(preds):
        for j in pr:
            succ[j].append(i)
            indeg[i] += 1
    heap = [
        (allops[i].rank, allops[i].line, i) for i in range(len(allops)) if indeg[i] == 0
    ]
    heapq.heapify(heap)
    order: list[int] = []
    while heap:
        *_, i = heapq.heappop(heap)
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(heap, (allops[j].rank, allops[j].line, j))
    if len(order) != len(allops):
        stuck = next(op for i, op in enumerate(allops) if indeg[i] > 0)
        raise FormatError(
            f"rank {stuck.rank} {stuck.label} waits for itself through "
            "requires and messages (the schedule would deadlock)",
            **where(stuck),
        )
    done: dict[int, set[int]] = {}
    send_after: dict[int, set[int]] = {}
    msgs: list[GoalMessage] = []
    deps: list[set[int]] = []
    for i in order:
        op = allops[i]
        after: set[int] = set()
        for j in preds[i]:
            if (
                allops[j].kind == "send"
                and op.kind == "recv"
                and partner.get(id(op)) is allops[j]
            ):
                continue
            after |= done[j]
        if op.kind == "send":
            send_after[i] = after
            done[i] = after
        elif op.kind == "recv":
            snd = partner[id(op)]
            t = len(msgs)
            msgs.append(
                GoalMessage(t, snd.rank, op.rank, op.tag, op.size, snd.label, op.label)
            )
            deps.append(send_after[idx[id(snd)]] | after)
            done[i] = {t}
        else:
            done[i] = after
    if not msgs:
        raise FormatError(f"the {fmt} input has no messages", path=path)
    if messages is None:
        # The file states no collective the messages could be checked
        # against: the schedule is its messages (one block each), and its
        # bounds come from them alone.
        s = Schedule(p, [max(m.size, 0) for m in msgs], "unknown", name=name)
        for m in msgs:
            s.add_transfer(m.src, m.dst, [m.index], deps=sorted(deps[m.index]))
        s._opaque = opaque_reason(fmt, reader, declared)
    else:
        if not callable(messages):
            raise TypeError("messages must be a callable msg -> (blocks, op)")
        if block_bytes is None or collective is None:
            raise ValueError(
                f"{reader}(messages=...) also needs block_bytes and collective"
            )
        s = Schedule(p, block_bytes, collective, root=root, owners=owners, name=name)
        for m in msgs:
            blocks, op = messages(m)
            s.add_transfer(m.src, m.dst, blocks, op=op, deps=sorted(deps[m.index]))
    s.labels = [
        f"rank {m.src} {m.send_label} -> rank {m.dst} {m.recv_label} (tag {m.tag})"
        for m in msgs
    ]
    return s
