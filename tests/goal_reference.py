"""The GOAL reader as it was written in Python, kept as the reference that
the compiled reader (``wafercoll.io.read_goal``) is compared with.

It is the former ``wafercoll.io.goal._parse`` with the rules the compiled
reader states (``cpp/include/wafercoll/io/goal.hpp``), each marked "(new)":
numbers are ASCII digits (``\\d`` matched any Unicode digit), a size or tag
must fit in 64 bits, and text that ends in whitespace Python's ``str.split``
knows but the tokenizer does not (a vertical tab, say) is an unexpected text
rather than an IndexError. Matching and ordering are the package's own
``messages_schedule`` (which the Chakra reader uses), whose keys are checked
in the order they first appear.
"""

from __future__ import annotations

import os
import re

from wafercoll.io import FormatError
from wafercoll.io._common import read_text
from wafercoll.io._messages import Op, messages_schedule


def read_goal_reference(source, *, messages=None, block_bytes=None, collective=None):
    """``wafercoll.io.read_goal`` as the Python reference computes it."""
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
        None,
        None,
    )


_TOKEN = re.compile(
    r"""[ \t\r]*(?:
      (?P<comment>//[^\n]*|/\*.*?\*/)
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*:?)
    | (?P<num>-?[0-9]+b?)  # (new) ASCII digits
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
            words = rest.split(maxsplit=1)  # (new) none: rest is whitespace
            raise FormatError(
                f"unexpected text {(words[0] if words else rest)[:20]!r}",
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
        if not re.fullmatch(r"-?[0-9]+", t):  # (new) ASCII digits
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
            # (new) LogGOPSim keeps 64-bit sizes and 32-bit tags
            if size >= 1 << 63:
                raise err(f"size must fit in 64 bits, got {size}", line, kind)
            if not -(1 << 63) <= tag < 1 << 63:
                raise err(f"tag must fit in 64 bits, got {tag}", line, kind)
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
