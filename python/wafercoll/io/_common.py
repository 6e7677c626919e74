"""Pieces the format readers and writers share.

Errors, file handling, length-delimited protobuf records, and views of a
schedule's transfers as Python lists.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..schedule import Schedule

__all__ = [
    "MAX_FILE_BYTES",
    "FormatError",
    "RankFrontier",
    "Transfers",
    "check_verified",
    "decode_text",
    "delimited_records",
    "encode_varint",
    "frame_messages",
    "read_bytes",
    "read_text",
    "source_path",
]

#: Largest input file the readers accept (bytes); larger files are refused
#: before they are read.
MAX_FILE_BYTES = 1 << 30


class FormatError(ValueError):
    """A file does not follow its format.

    Attributes
    ----------
    path : str or None
        The file (None for text given directly).
    element : str or None
        The element, record or statement at fault.
    line : int or None
        Its line (1-based) or, for binary files, record number.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        element: str | None = None,
        line: int | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if element is not None:
            where.append(
                f"<{element}>" if not element.startswith("record") else element
            )
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path = path
        self.element = element
        self.line = line


def read_text(source: str | os.PathLike[str], what: str) -> tuple[str, str | None]:
    """Return ``(text, path)`` from a path or from the text itself.

    ``source`` is text when it holds a newline or starts with ``<``. A file
    is UTF-8, or UTF-16 / UTF-8 with a byte-order mark; anything else is a
    :class:`FormatError` naming the file and the line of the first bad byte.
    """
    text, path = read_bytes(source, what)
    if path is None:
        assert isinstance(text, str)
        return text, None
    assert isinstance(text, bytes)
    return decode_text(text, path), path


def decode_text(data: bytes, path: str | None) -> str:
    """``data`` as text: UTF-8, or as its byte-order mark says (UTF-16, UTF-8)."""
    codec = "utf-8"
    if data[:3] == b"\xef\xbb\xbf":
        codec = "utf-8-sig"
    elif data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        codec = "utf-16"
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1 if codec == "utf-8" else None
        raise FormatError(
            f"not {codec.upper().replace('-SIG', '')} text (byte {exc.start}: "
            f"{exc.reason}); save the file as UTF-8",
            path=path,
            line=line,
        ) from None


def source_path(
    source: str | bytes | os.PathLike[str], what: str
) -> tuple[str | bytes | None, str | None]:
    """``(text, None)`` for a document given directly, else ``(None, path)``.

    ``source`` is text when it holds a newline or starts with ``<``; bytes
    are a document given directly. A path must name a readable file of at
    most :data:`MAX_FILE_BYTES` bytes (checked here, before it is read).
    """
    if isinstance(source, bytes):
        return source, None
    if isinstance(source, str) and ("\n" in source or source.lstrip().startswith("<")):
        return source, None
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"source must be a path or the {what} text, got {type(source).__name__}"
        )
    path = os.fspath(source)
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise FileNotFoundError(f"cannot read {what} file {path!r}: {exc}") from exc
    if size > MAX_FILE_BYTES:
        raise ValueError(
            f"{path}: {size} bytes; {what} files larger than {MAX_FILE_BYTES} "
            "bytes are refused"
        )
    return None, path


def read_bytes(
    source: str | bytes | os.PathLike[str], what: str
) -> tuple[str | bytes, str | None]:
    """``(text, None)`` for text given directly, else ``(file bytes, path)``.

    ``source`` is text when it holds a newline or starts with ``<``; bytes
    are a document given directly, returned as they are.
    """
    text, path = source_path(source, what)
    if path is None:
        assert text is not None
        return text, None
    with open(path, "rb") as fh:
        return fh.read(), path


def frame_messages(messages: Any) -> bytes:
    """Protobuf messages as one length-delimited stream (a Chakra trace file).

    Each message's serialized bytes follow their length as a varint.

    Examples
    --------
    >>> from wafercoll.io._common import frame_messages
    >>> class M:
    ...     def SerializeToString(self):
    ...         return b"ab"
    >>> list(frame_messages([M(), M()]))  # length 2, "ab", length 2, "ab"
    [2, 97, 98, 2, 97, 98]
    """
    parts = []
    for m in messages:
        body = m.SerializeToString()
        parts.append(encode_varint(len(body)))
        parts.append(body)
    return b"".join(parts)


def encode_varint(n: int) -> bytes:
    """``n`` (>= 0) as a protobuf base-128 varint, low 7-bit group first."""
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def delimited_records(data: bytes, path: str) -> list[bytes]:
    """Split length-delimited records: each a varint length, then the bytes.

    This is how Chakra execution traces store their messages (protobuf's
    ``writeDelimitedTo`` framing). A record whose length prefix or body runs
    past the end of ``data`` is a :class:`FormatError` naming ``path`` and
    the record (0-based).
    """
    out: list[bytes] = []
    i = 0
    while i < len(data):
        k = len(out)
        shift = n = 0
        while True:
            if i >= len(data):
                raise FormatError(
                    "the file ends inside a record's length prefix (truncated?)",
                    path=path,
                    element=f"record {k}",
                )
            b = data[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
            if shift > 63:
                raise FormatError(
                    "a record's length prefix is not a varint",
                    path=path,
                    element=f"record {k}",
                )
        if i + n > len(data):
            raise FormatError(
                f"the record claims {n} bytes but {len(data) - i} remain (truncated?)",
                path=path,
                element=f"record {k}",
            )
        out.append(data[i : i + n])
        i += n
    return out


@dataclass
class Transfers:
    """A schedule's transfers as Python lists (for the writers).

    ``ranges[t]`` are transfer ``t``'s half-open block ranges; ``order`` is a
    topological order of the transfers.
    """

    src: list[int]
    dsts: list[list[int]]
    ranges: list[list[tuple[int, int]]]
    op: list[int]
    deps: list[list[int]]
    nbytes: list[int]
    order: list[int]

    @classmethod
    def of(cls, schedule: Schedule) -> Transfers:
        src, op, dsts, ranges, deps = schedule._rows(0, schedule.num_transfers)
        return cls(
            src=src,
            dsts=dsts,
            ranges=ranges,
            op=op,
            deps=deps,
            nbytes=schedule.transfer_bytes().tolist(),
            order=schedule.topological_order().tolist(),
        )

    def __len__(self) -> int:
        return len(self.src)

    def blocks(self, t: int) -> Iterator[int]:
        for lo, hi in self.ranges[t]:
            yield from range(lo, hi)


class RankFrontier:
    """Per-rank ordering of a schedule's operations, for per-rank formats.

    A format that lists each rank's operations separately (Chakra, GOAL) needs,
    for an operation of transfer ``t`` at rank ``r``, the operations at ``r``
    it must follow: those that complete, at ``r``, the nearest transfers
    before ``t`` (through the dependencies) that touch ``r``. Register each
    transfer's completing operations with :meth:`done` in a topological
    order, then ask :meth:`__call__`.

    Up to ``bitset_limit`` transfers, ancestor sets are Python integers used
    as bitsets over the topological order (the maximal ancestors touching a
    rank are found with a few big-integer operations); beyond, a memoized
    walk over the dependencies (less memory, more time).
    """

    def __init__(self, transfers: Transfers, bitset_limit: int = 40_000) -> None:
        self.tr = transfers
        self.done_at: list[dict[int, list[int]]] = [{} for _ in range(len(transfers))]
        self.memo: dict[tuple[int, int], frozenset[int]] = {}
        self.bits = len(transfers) <= bitset_limit
        if self.bits:
            order = transfers.order
            self.pos = [0] * len(order)
            for i, t in enumerate(order):
                self.pos[t] = i
            self.anc = [0] * len(order)
            self.touch: dict[int, int] = {}
            for t in order:
                a = 0
                for d in transfers.deps[t]:
                    a |= self.anc[d] | (1 << self.pos[d])
                self.anc[t] = a

    def done(self, t: int, rank: int, ops: list[int]) -> None:
        """Operations at ``rank`` that complete transfer ``t`` there."""
        self.done_at[t].setdefault(rank, []).extend(ops)
        if self.bits:
            self.touch[rank] = self.touch.get(rank, 0) | (1 << self.pos[t])

    def __call__(self, t: int, r: int) -> frozenset[int]:
        """Operations at rank ``r`` that transfer ``t`` must follow."""
        if self.bits:
            order, anc = self.tr.order, self.anc
            mask = anc[t] & self.touch.get(r, 0)
            out: list[int] = []
            while mask:
                u = order[mask.bit_length() - 1]
                out.extend(self.done_at[u][r])
                mask &= ~((1 << self.pos[u]) | anc[u])
            return frozenset(out)
        memo, done_at, deps = self.memo, self.done_at, self.tr.deps
        if (t, r) in memo:
            return memo[(t, r)]
        # Post-order over the dependencies that do not touch r, memoized per
        # (transfer, rank), so each pair is computed once.
        stack = [t]
        while stack:
            u = stack[-1]
            if (u, r) in memo:
                stack.pop()
                continue
            todo = [d for d in deps[u] if r not in done_at[d] and (d, r) not in memo]
            if todo:
                stack.extend(todo)
                continue
            stack.pop()
            parts = [
                frozenset(done_at[d][r]) if r in done_at[d] else memo[(d, r)]
                for d in deps[u]
            ]
            memo[(u, r)] = frozenset().union(*parts) if parts else frozenset()
        return memo[(t, r)]


def check_verified(schedule: Any, what: str) -> Schedule:
    """Type-check ``schedule`` and prove it correct before it is exported."""
    from ..analysis import verify

    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"{what} needs a wafercoll.Schedule, got {type(schedule).__name__}"
        )
    if schedule.switches.any():
        raise ValueError(
            f"{what}: the schedule has switch ranks (in-network reduction), which "
            "the format cannot express: its processes would run the switches' "
            "reductions"
        )
    verify(schedule)
    return schedule
