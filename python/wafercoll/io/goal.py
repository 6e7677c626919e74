"""GOAL: the schedule language of LogGOPSim (and ATLAHS).

A GOAL file lists, per rank, labelled operations and the dependencies between
them::

    num_ranks 2
    rank 0 {
      l1: send 1024b to 1 tag 7
      l2: calc 500
      l2 requires l1
    }
    rank 1 {
      l1: recv 1024b from 0 tag 7
    }

``send SIZEb to PEER tag TAG``, ``recv SIZEb from PEER tag TAG`` (optionally
followed by ``cpu N`` and ``nic N``), ``calc TIME``; ``lA requires lB`` (``lA``
starts after ``lB`` completes) and ``lA irequires lB`` (after ``lB`` starts);
comments ``//`` and ``/* */``. Source: spcl/LogGOPSim, the grammar of
``src/LogGOPSim/txt2bin.re`` and the example ``binary_tree_32.goal``
(commit 76451de). LogGOPSim matches a receive with the sends from its peer
with its tag in order; so does :func:`read_goal`.

:func:`write_goal` writes a verified schedule (tag = transfer index, one send
per destination, a ``calc`` for each reduction when a cost is given).
:func:`read_goal` reads a GOAL file into a Schedule that
:func:`wafercoll.simulate` times. GOAL carries message sizes, not data: the
schedule it returns states no collective (``"unknown"``) and cannot be
verified unless ``messages`` says which blocks each message moves (then it is
an ordinary schedule of the given collective).

To run an exported file in LogGOPSim::

    txt2bin -i ring.goal -o ring.bin
    LogGOPSim -f ring.bin -L 3000 -o 1500 -g 1000 -G 6

(times in nanoseconds, ``G`` per byte). :meth:`wafercoll.NetworkModel.loggp`
with :func:`wafercoll.topology.star` charges the same parameters.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from .._util import as_real, write_atomic
from ..schedule import Schedule
from ._common import (
    FormatError,
    RankFrontier,
    Transfers,
    check_verified,
    read_text,
)
from ._messages import GoalMessage, Op, messages_schedule

__all__ = ["GoalMessage", "goal_text", "read_goal", "write_goal"]


# --------------------------------------------------------------------------- #
# export
# --------------------------------------------------------------------------- #
def goal_text(schedule: Schedule, *, reduce_ns_per_byte: float = 0.0) -> str:
    """The GOAL text of a verified schedule (see :func:`write_goal`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> text = wc.io.goal_text(wc.build("generic_ring_allreduce", 2, 16))
    >>> text.splitlines()[1]
    'num_ranks 2'
    """
    s = check_verified(schedule, "GOAL export")
    cost = as_real(reduce_ns_per_byte, "reduce_ns_per_byte", 0.0)
    tr = Transfers.of(s)
    p = s.num_ranks
    ops: list[list[str]] = [[] for _ in range(p)]
    reqs: list[list[tuple[int, int]]] = [[] for _ in range(p)]
    frontier = RankFrontier(tr)

    def new(r: int, text: str, deps: Any) -> int:
        ops[r].append(text)
        lab = len(ops[r])
        for d in sorted(deps):
            reqs[r].append((lab, d))
        return lab

    for t in tr.order:
        x, nbytes = tr.src[t], tr.nbytes[t]
        if nbytes == 0:
            continue
        sdeps = frontier(t, x)
        sends = []
        for d in tr.dsts[t]:
            sends.append(new(x, f"send {nbytes}b to {d} tag {t}", sdeps))
            last = new(d, f"recv {nbytes}b from {x} tag {t}", frontier(t, d))
            if tr.op[t] == 1 and cost > 0:
                last = new(d, f"calc {max(1, round(nbytes * cost))}", {last})
            frontier.done(t, d, [last])
        frontier.done(t, x, sends)

    out = [
        f"// {s.name or s.collective}: {s.collective} of {s.size_bytes} bytes on "
        f"{p} ranks, {s.num_transfers} transfers (tag = transfer index)",
        f"num_ranks {p}",
    ]
    for r in range(p):
        out.append(f"rank {r} {{")
        out.extend(f"l{i + 1}: {text}" for i, text in enumerate(ops[r]))
        out.extend(f"l{a} requires l{b}" for a, b in reqs[r])
        out.append("}")
    return "\n".join(out) + "\n"


def write_goal(
    schedule: Schedule,
    path: str | os.PathLike[str],
    *,
    reduce_ns_per_byte: float = 0.0,
) -> None:
    """Write a verified schedule as a GOAL file for LogGOPSim.

    Parameters
    ----------
    schedule : Schedule
        Verified first.
    path : path-like
    reduce_ns_per_byte : float
        When > 0, each reduction becomes a ``calc`` of ``bytes *
        reduce_ns_per_byte`` nanoseconds after its receive.

    Notes
    -----
    Every transfer becomes one ``send`` per destination at the source and a
    ``recv`` at each destination, with the transfer's index as tag. ``requires``
    edges order each rank's operations after those of the nearest earlier
    transfers (by the schedule's dependencies) at that rank. Run it with
    ``txt2bin -i FILE.goal -o FILE.bin && LogGOPSim -f FILE.bin``.

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.goal")
    >>> wc.io.write_goal(wc.build("generic_ring_allreduce", 4, 64), path)
    >>> os.path.getsize(path) > 0
    True
    """
    write_atomic(path, goal_text(schedule, reduce_ns_per_byte=reduce_ns_per_byte))


# --------------------------------------------------------------------------- #
# import
# --------------------------------------------------------------------------- #
_TOKEN = re.compile(
    r"""[ \t\r]*(?:
      (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*:?)
    | (?P<num>-?\d+b?)
    | (?P<brace>[{}])
    | (?P<nl>\n)
    )""",
    re.S | re.X,
)


def _tokens(text: str, path: str | None) -> list[tuple[str, int]]:
    toks: list[tuple[str, int]] = []
    pos, line = 0, 1
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            rest = text[pos:].lstrip(" \t\r")
            if not rest:
                break
            line += text[pos : n - len(rest)].count("\n")
            raise FormatError(
                f"unexpected text {rest.split(maxsplit=1)[0][:20]!r}",
                path=path,
                line=line,
            )
        line += text[pos : m.start(m.lastgroup)].count("\n")
        tok = m.group(m.lastgroup)
        if m.lastgroup == "nl":
            toks.append(("\n", line))
            line += 1
        elif m.lastgroup == "comment":
            line += tok.count("\n")
        else:
            toks.append((tok, line))
        pos = m.end()
    return toks


def _parse(
    text: str, path: str | None
) -> tuple[int, list[dict[str, Op]], list[list[tuple[str, str, str, int]]]]:
    toks = _tokens(text, path)
    # Split into statements (a line each; braces are statements of their own).
    stmts: list[list[tuple[str, int]]] = []
    cur: list[tuple[str, int]] = []
    for tok, line in toks:
        if tok == "\n":
            if cur:
                stmts.append(cur)
            cur = []
        elif tok in "{}":
            if cur:
                cur.append((tok, line))
                stmts.append(cur)
            else:
                stmts.append([(tok, line)])
            cur = []
        else:
            cur.append((tok, line))
    if cur:
        stmts.append(cur)

    def err(msg: str, line: int, element: str = "statement") -> FormatError:
        return FormatError(msg, path=path, element=element, line=line)

    def num(tok: str, line: int, what: str, suffix_b: bool = False) -> int:
        t = tok[:-1] if suffix_b and tok.endswith("b") else tok
        if not re.fullmatch(r"-?\d+", t):
            raise err(f"{what} must be an integer, got {tok!r}", line)
        return int(t)

    if not stmts or [t for t, _ in stmts[0][:1]] != ["num_ranks"] or len(stmts[0]) != 2:
        raise err(
            "a GOAL file starts with 'num_ranks N'",
            stmts[0][0][1] if stmts else 1,
            "num_ranks",
        )
    p = num(stmts[0][1][0], stmts[0][1][1], "num_ranks")
    if not 1 <= p <= 1 << 20:
        raise err(
            f"num_ranks must be in [1, {1 << 20}], got {p}", stmts[0][0][1], "num_ranks"
        )
    ops: list[dict[str, Op]] = [dict() for _ in range(p)]
    reqs: list[list[tuple[str, str, str, int]]] = [[] for _ in range(p)]
    rank: int | None = None
    seen_ranks: set[int] = set()
    for st in stmts[1:]:
        words = [t for t, _ in st]
        line = st[0][1]
        if words[0] == "rank":
            if rank is not None:
                raise err("'rank' inside a rank block (missing '}')", line, "rank")
            if len(words) != 3 or words[2] != "{":
                raise err("expected 'rank N {'", line, "rank")
            rank = num(words[1], line, "rank")
            if not 0 <= rank < p:
                raise err(f"rank {rank} is outside [0, {p - 1}]", line, "rank")
            if rank in seen_ranks:
                raise err(f"rank {rank} appears twice", line, "rank")
            seen_ranks.add(rank)
            continue
        if words == ["}"]:
            if rank is None:
                raise err("'}' without a rank block", line, "rank")
            rank = None
            continue
        if rank is None:
            raise err(f"{' '.join(words)!r} outside a rank block", line)
        if len(words) == 3 and words[1] in ("requires", "irequires"):
            reqs[rank].append((words[0], words[2], words[1], line))
            continue
        if not words[0].endswith(":"):
            raise err(
                "expected 'label: operation' or 'lA requires lB', got "
                f"{' '.join(words)!r}",
                line,
            )
        label = words[0][:-1]
        if label in ops[rank]:
            raise err(f"label {label!r} is defined twice in rank {rank}", line)
        body = words[1:]
        if not body:
            raise err(f"{label}: missing operation", line)
        kind = body[0]
        if kind in ("send", "recv"):
            prep = "to" if kind == "send" else "from"
            if len(body) < 6 or body[2] != prep or body[4] != "tag":
                raise err(f"expected '{kind} SIZEb {prep} PEER tag TAG'", line, kind)
            extra = body[6:]
            while extra:
                if len(extra) < 2 or extra[0] not in ("cpu", "nic"):
                    raise err(
                        f"unexpected {' '.join(extra)!r} after the {kind}", line, kind
                    )
                num(extra[1], line, extra[0])
                extra = extra[2:]
            size = num(body[1], line, "size", suffix_b=True)
            peer = num(body[3], line, "peer")
            tag = num(body[5], line, "tag")
            if size < 0:
                raise err(f"size must be >= 0, got {size}", line, kind)
            if peer == -1 or tag == -1:
                raise err(
                    f"{kind} with any-source / any-tag (-1) is not supported: the "
                    "match would depend on timing",
                    line,
                    kind,
                )
            if not 0 <= peer < p or peer == rank:
                raise err(
                    f"peer {peer} must be another rank in [0, {p - 1}]", line, kind
                )
            ops[rank][label] = Op(rank, label, kind, size, peer, tag, line)
        elif kind == "calc":
            if len(body) < 2:
                raise err("expected 'calc TIME'", line, kind)
            num(body[1], line, "calc time")
            ops[rank][label] = Op(rank, label, kind, int(body[1]), -1, -1, line)
        else:
            raise err(f"unknown operation {kind!r} (send, recv or calc)", line)
    if rank is not None:
        raise err(
            f"rank {rank}: missing '}}' at the end of the file",
            stmts[-1][-1][1],
            "rank",
        )
    for r in range(p):
        for a, b, _kind, line in reqs[r]:
            for lab in (a, b):
                if lab not in ops[r]:
                    raise err(
                        f"rank {r}: label {lab!r} is not defined", line, "requires"
                    )
    return p, ops, reqs


def read_goal(
    source: str | os.PathLike[str],
    *,
    messages: Callable[[GoalMessage], tuple[Any, str]] | None = None,
    block_bytes: Sequence[int] | None = None,
    collective: str | None = None,
    root: int | None = None,
    owners: Sequence[int] | None = None,
) -> Schedule:
    """Read a GOAL file (LogGOPSim / schedgen) into a Schedule.

    Parameters
    ----------
    source : path-like or str
        A file, or the GOAL text itself.
    messages : callable, optional
        ``messages(msg) -> (blocks, op)`` for each :class:`GoalMessage`: the
        blocks it moves (as for :meth:`Schedule.add_transfer`) and ``"copy"``
        or ``"reduce"``. With it (and ``block_bytes`` and ``collective``) the
        result is an ordinary schedule that :func:`wafercoll.verify` checks.
    block_bytes : sequence of int, optional
        Block sizes, with ``messages``.
    collective, root, owners
        The collective the file computes, with ``messages``.

    Returns
    -------
    Schedule
        One transfer per message (a send matched with the receive from its
        peer with its tag, in order), waiting for what both operations
        require. An operation that requires a send waits for what the send
        waits for, not for its delivery (in LogGOPSim a send completes
        locally once injected); so sends of one rank that LogGOPSim injects
        in program order may here share the rank's link in another order.
        ``calc`` operations order the operations that require them but take
        no time. Without ``messages`` each message
        moves a block of its own size and the schedule's collective is
        ``"unknown"`` (GOAL has no way to state one): it can be simulated,
        and :mod:`wafercoll.bounds` bounds it from its own messages, but not
        verified: :func:`wafercoll.verify` raises and says why.

    Raises
    ------
    FormatError
        For a malformed file (naming file, statement and line), a file that
        is not UTF-8 (or UTF-16 with a byte-order mark), an unmatched send or
        receive, or operations that wait for each other in a cycle.

    Examples
    --------
    >>> import os, tempfile
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 64)
    >>> path = os.path.join(tempfile.mkdtemp(), "ring.goal")
    >>> wc.io.write_goal(s, path)
    >>> t = wc.io.read_goal(path)
    >>> t.num_ranks, t.num_transfers == s.num_transfers
    (4, True)
    """
    text, path = read_text(source, "GOAL")
    p, ops, reqs = _parse(text, path)
    name = os.path.basename(path) if path else "goal"
    return messages_schedule(
        p,
        ops,
        reqs,
        path,
        "GOAL",
        "read_goal",
        name,
        messages,
        block_bytes,
        collective,
        root,
        owners,
    )
