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
with its tag in order; so does :func:`read_goal`. Numbers are ASCII digits;
a size or a tag must fit in 64 bits.

:func:`read_goal` tokenizes, parses and matches in the compiled core (with
the GIL released), a million messages or more a second, and keeps no Python
object per operation: the labels of the transfers are made when first asked
for.

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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _core
from .._util import INT_LIMIT, as_int, as_real, write_atomic
from ..kit import Program
from ..schedule import Schedule
from ._common import (
    FormatError,
    RankFrontier,
    Transfers,
    check_verified,
    decode_text,
    source_path,
)
from ._messages import GoalMessage, opaque_reason

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
def _format_error(exc: ValueError, path: str | None) -> FormatError:
    """The FormatError of the core's GoalError ``exc`` on the file ``path``."""
    message, element, line, kind, word = exc.args
    if kind == _ENCODING and path is not None:
        # The core only finds that the bytes are neither UTF-8 nor UTF-16;
        # Python's decoder says where, as for every other reader.
        with open(path, "rb") as fh:
            decode_text(fh.read(), path)
    if kind == _UNEXPECTED:
        message = f"unexpected text {word.decode('utf-8', 'surrogatepass')!r}"
    return FormatError(message, path=path, element=element or None, line=line or None)


# GoalError kinds (cpp/include/wafercoll/io/goal.hpp, GoalError::Kind)
_ENCODING, _UNEXPECTED = 1, 2


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
        is not UTF-8 (or UTF-16 with a byte-order mark), a number that is not
        one (or a size or tag beyond 64 bits), an unmatched send or receive
        (the first in rank order), or operations that wait for each other in
        a cycle.
    TypeError
        If ``source`` is neither a path nor text (bytes are refused).

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
    text, path = source_path(source, "GOAL")
    if isinstance(text, bytes):
        raise TypeError("source must be a path or the GOAL text (str), got bytes")
    try:
        if path is None:
            # str -> UTF-8; lone surrogates pass, to be refused as unexpected text
            res = _core.read_goal_text(text.encode("utf-8", "surrogatepass"))
        else:
            # opened here for the errors any file gives (a directory, no
            # permission); the core reads it by name
            with open(path, "rb"):
                res = _core.read_goal_file(os.fsencode(path))
    except _core.GoalError as exc:
        raise _format_error(exc, path) from None
    name = os.path.basename(path) if path else "goal"
    labels = _Labels(res)
    if messages is None:
        s = _opaque_schedule(res, name)
    else:
        s = _mapped_schedule(
            res, labels, messages, block_bytes, collective, root, owners, name
        )
    s.labels = labels  # a lazy sequence: kept as it is
    return s


class _Labels(Sequence[str]):
    """The labels of a GOAL file's transfers, made when first asked for.

    ``"rank S LABEL -> rank D LABEL (tag G)"``: the send's and the receive's
    labels. A list of a million strings would cost more than reading the
    file, and most schedules never show them; one label is made from the
    arrays, all of them at once by the core.
    """

    def __init__(self, res: dict[str, Any]) -> None:
        self._arrays = tuple(
            res[k] for k in ("src", "dst", "tag", "send_op", "recv_op", "label_offsets")
        ) + (res["label_text"],)
        self._list: list[str] | None = None

    def __len__(self) -> int:
        return len(self._list) if self._list is not None else len(self._arrays[0])

    def op_label(self, op: int) -> str:
        """The label of operation ``op`` (rank-major index)."""
        off, text = self._arrays[5], self._arrays[6]
        return bytes(text[off[op] : off[op + 1]]).decode("ascii")

    def __getitem__(self, index: Any) -> Any:
        if self._list is not None or not isinstance(index, int):
            return self._all()[index]
        src, dst, tag, send_op, recv_op = self._arrays[:5]
        t = range(len(src))[index]  # IndexError as for a list
        return (
            f"rank {src[t]} {self.op_label(send_op[t])} -> rank {dst[t]} "
            f"{self.op_label(recv_op[t])} (tag {tag[t]})"
        )

    def __iter__(self) -> Any:
        return iter(self._all())

    def _all(self) -> list[str]:
        if self._list is None:
            self._list = _core.goal_labels(*self._arrays).decode("ascii").split("\n")
            self._arrays = ()
        return self._list


def _opaque_schedule(res: dict[str, Any], name: str) -> Schedule:
    """One block per message, the collective unknown (nothing to verify)."""
    sizes = res["size"]
    big = np.flatnonzero(sizes > INT_LIMIT)
    if big.size:  # as Schedule(...) refuses a list of sizes
        as_int(int(sizes[big[0]]), f"block_bytes[{int(big[0])}]", 0)
    prog = Program(res["num_ranks"], sizes, "unknown", rule="explicit", name=name)
    t = sizes.size
    prog.step(
        res["src"],
        res["dst"],
        np.arange(t, dtype=np.int64),
        deps=(res["deps"], res["dep_offsets"]),
    )
    s = prog.schedule()
    s._opaque = opaque_reason("GOAL", "read_goal")
    return s


def _mapped_schedule(
    res: dict[str, Any],
    labels: _Labels,
    messages: Any,
    block_bytes: Sequence[int] | None,
    collective: str | None,
    root: int | None,
    owners: Sequence[int] | None,
    name: str,
) -> Schedule:
    """The blocks ``messages(msg)`` says every message moves."""
    if not callable(messages):
        raise TypeError("messages must be a callable msg -> (blocks, op)")
    if block_bytes is None or collective is None:
        raise ValueError(
            "read_goal(messages=...) also needs block_bytes and collective"
        )
    s = Schedule(
        res["num_ranks"], block_bytes, collective, root=root, owners=owners, name=name
    )
    off = res["dep_offsets"].tolist()
    deps = res["deps"].tolist()
    rows = zip(
        res["src"].tolist(),
        res["dst"].tolist(),
        res["tag"].tolist(),
        res["size"].tolist(),
        res["send_op"].tolist(),
        res["recv_op"].tolist(),
        strict=True,
    )
    for t, (src, dst, tag, size, so, ro) in enumerate(rows):
        sl, rl = labels.op_label(so), labels.op_label(ro)
        blocks, op = messages(GoalMessage(t, src, dst, tag, size, sl, rl))
        s.add_transfer(src, dst, blocks, op=op, deps=deps[off[t] : off[t + 1]])
    return s
