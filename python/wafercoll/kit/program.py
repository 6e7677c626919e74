"""The program object: transfers collected for one collective, with a dependency rule.

A :class:`Program` is how every schedule of wafercoll is written, by the
built-in builders and by users alike. It holds the collective (ranks, block
layout, root / owners / participants) and collects transfers in *program
order*, one call of :meth:`Program.step` at a time: a call adds any number of
transfers at once (NumPy arrays, so builders of millions of transfers make a
few thousand calls, not millions) and returns their ids. The dependencies of
the transfers are derived by the program's **rule**, named when the program
is created; a call may add explicit dependencies on top (``deps=``).

Rules
-----
``"sendrecv"`` (per-rank program order, MPI ``Sendrecv`` steps)
    A transfer ``a -> b`` waits for the previous send and the previous receive
    of both ``a`` and ``b``, as a send/receive pair posted in program order on
    both sides would. Transfers of one call do not wait for each other, so a
    call is one step of pairwise exchanges. Writes into a rank are then
    ordered, forwarded data has arrived, and a rank's sends form a chain that
    orders its reads before later writes into it. With ``group=`` every
    transfer of a group waits for the previous events of every rank of its
    group (a cyclic shift without a receive buffer needs this).
``"step"`` (step-synchronous)
    A transfer waits for *every* transfer of the latest earlier step (call)
    that involved its source or one of its destinations, as a kernel that
    synchronises with its peers at every step does.
``"cells"`` (dataflow over the cells a transfer reads and writes)
    Transfers are listed in an order in which they could run one at a time,
    each with a *stream* tag (``stream=``, -1 for none). A transfer waits for
    (1) the last earlier transfer that wrote the cell (rank, block) it reads,
    (2) the last earlier one that wrote a cell it writes, (3) the last earlier
    one that read a cell it writes, and (4) the last earlier one with the
    same source, destination and stream. Under the simulator's
    ``dependencies="dataflow"`` reading, rules (2) and (4) only order packets
    entering the last link, so chunks stream through trees piece by piece.
    Single destination, one block range per transfer.
``"explicit"``
    Only the dependencies given with ``deps=``.

Blocks and destinations
-----------------------
``blocks`` is a block index (scalar or one per transfer), a ``(lo, hi)``
pair of half-open bounds (scalars or arrays), or :class:`Ranges` for several
ranges per transfer. ``dst`` is a rank per transfer, or :class:`Multi` for
several destinations (a multicast).

Examples
--------
A ring allreduce on 4 ranks, written by hand (``wafercoll.kit.ring_allreduce``
does the same over any order):

>>> import numpy as np, wafercoll as wc
>>> from wafercoll import kit
>>> p = 4
>>> prog = kit.Program(p, kit.split_bytes(64, p), "allreduce", rule="sendrecv")
>>> r = np.arange(p)
>>> for k in range(p - 1):
...     _ = prog.step(r, (r + 1) % p, (r - k) % p, op="reduce")
>>> for k in range(p - 1):
...     _ = prog.step(r, (r + 1) % p, (r + 1 - k) % p, op="copy")
>>> s = prog.schedule()
>>> wc.verify(s).steps
6
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from .._errors import ScheduleError
from .._util import as_int
from ..schedule import Schedule

__all__ = ["RULES", "Multi", "Program", "Ranges"]

#: The dependency rules a :class:`Program` knows.
RULES = ("sendrecv", "step", "cells", "explicit")
_OPS = {"copy": 0, "reduce": 1, 0: 0, 1: 1}
#: Largest number of dependencies one program may collect (memory guard).
MAX_DEPENDENCIES = 1 << 28


@dataclass(frozen=True)
class Ranges:
    """Several block ranges per transfer, in CSR form.

    Transfer ``i`` of the call moves ``[lo[j], hi[j])`` for ``j`` in
    ``offsets[i]:offsets[i + 1]``.
    """

    lo: Any
    hi: Any
    offsets: Any


@dataclass(frozen=True)
class Multi:
    """Several destinations per transfer (multicasts), in CSR form.

    Transfer ``i`` of the call goes to ``ranks[offsets[i]:offsets[i + 1]]``.
    A list of lists is accepted by :meth:`Multi.of`.
    """

    ranks: Any
    offsets: Any

    @classmethod
    def of(cls, lists: Iterable[Sequence[int]]) -> Multi:
        """From one list of destination ranks per transfer."""
        ls = [list(x) for x in lists]
        off = np.zeros(len(ls) + 1, dtype=np.int64)
        off[1:] = np.cumsum([len(x) for x in ls])
        flat = np.fromiter(chain.from_iterable(ls), dtype=np.int64, count=off[-1])
        return cls(flat, off)


def _i64(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.bool_) or not np.all(np.mod(arr, 1) == 0):
            raise TypeError(f"expected integers, got {arr.dtype}")
    return arr.astype(np.int64, copy=False).ravel()


def _csr_rows(counts: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(counts.size, dtype=np.int64), counts)


def _unique_rows(
    rows: np.ndarray, vals: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the distinct non-negative ``vals`` of every row ``0 .. n-1`` (sorted)."""
    keep = vals >= 0
    if not keep.all():
        rows, vals = rows[keep], vals[keep]
    # Rows already in order with increasing values (dependency lists read
    # from a file, say) need no sort: one linear check instead.
    if rows.size and not bool(
        np.all(
            (rows[1:] > rows[:-1]) | ((rows[1:] == rows[:-1]) & (vals[1:] > vals[:-1]))
        )
    ):
        o = np.lexsort((vals, rows))
        rows, vals = rows[o], vals[o]
        first = np.ones(rows.size, bool)
        first[1:] = (rows[1:] != rows[:-1]) | (vals[1:] != vals[:-1])
        rows, vals = rows[first], vals[first]
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=off[1:])
    return vals.astype(np.int64), off


def _sorted_csr(deps: tuple[Any, Any], n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """``(flat, offsets)`` of CSR lists that are already distinct and sorted.

    When every list of ``deps`` is strictly increasing and non-negative, it is
    what :func:`_unique_rows` would return; else None. One linear pass, where
    sorting would cost a lexsort.
    """
    flat, off = np.asarray(deps[0]).ravel(), _i64(deps[1])
    if flat.size and not np.issubdtype(flat.dtype, np.integer):
        return None  # the general path says what is wrong
    if (
        off.size != n + 1
        or int(off[0]) != 0
        or int(off[-1]) != flat.size
        or bool((off[1:] < off[:-1]).any())
        or (flat.size and int(flat.min()) < 0)
    ):
        return None
    # Every place where the values do not rise must start a list: a
    # position p < off[-1] starts a (non-empty) list exactly when p is an
    # offset, as the offsets do not decrease. Boolean masks only.
    rising = flat[1:] > flat[:-1]
    if not bool(rising.all()):
        start = np.zeros(flat.size + 1, bool)
        start[off] = True
        rising |= start[1 : flat.size]
        if not bool(rising.all()):
            return None
    return flat, off


def _op_codes(op: Any, t: int) -> np.ndarray:
    """The op code (0 copy, 1 reduce) of each of ``t`` transfers, as uint8."""
    if isinstance(op, str) or np.ndim(op) == 0:
        code = _OPS.get(op if isinstance(op, str) else int(op))
        if code is None:
            raise ValueError(f"op must be 'copy' or 'reduce', got {op!r}")
        return np.full(t, code, dtype=np.uint8)
    op_a = np.asarray(op).astype(np.uint8).ravel()
    if op_a.size != t:
        raise ValueError(f"op must have one entry per transfer ({t})")
    return op_a


def _unicast_fields(
    src: Any, dst: Any, blocks: Any, n: int | None, what: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(src, dst, lo, hi)`` of transfers with one destination and one range.

    ``blocks`` is a block per transfer or ``(lo, hi)``; scalars broadcast to
    ``n`` transfers (None: the longest field's). ``what`` completes the
    message when the fields disagree.
    """
    if isinstance(blocks, tuple):
        lo, hi = _i64(blocks[0]), _i64(blocks[1])
    else:
        lo = _i64(blocks)
        hi = lo + 1
    fields = (_i64(src), _i64(dst), lo, hi)
    if n is None:
        n = max(a.size for a in fields)
    out = tuple(np.broadcast_to(a, (n,)) if a.size == 1 else a for a in fields)
    if any(a.size != n for a in out):
        raise ValueError(f"src, dst and blocks must describe {what}")
    return out  # type: ignore[return-value]


def _checked(a: np.ndarray, bound: int, what: str) -> np.ndarray:
    """``a``, checked to lie in ``[0, bound)``.

    No int32 copy: the core reads int64 arrays in place (and checks them
    again before it narrows them).
    """
    if a.size and (int(a.min()) < 0 or int(a.max()) >= bound):
        bad = a[(a < 0) | (a >= bound)][0]
        raise ValueError(f"{what} holds {int(bad)}, outside [0, {bound})")
    return a


def _dedupe_matrix(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct non-negative entries of every row (sorted), and their counts."""
    m = np.sort(m, axis=1)
    if m.shape[1] > 1:
        m[:, 1:][m[:, 1:] == m[:, :-1]] = -1
    valid = m >= 0
    return m[valid], valid.sum(axis=1).astype(np.int64)


class Program:
    """Transfers of one collective in program order, with a dependency rule.

    Parameters
    ----------
    ranks : int
        Number of ranks, >= 1.
    block_bytes : sequence of int
        Block sizes of every rank's vector (see :func:`split_bytes`).
    collective : str
        As for :class:`wafercoll.Schedule`.
    rule : {"sendrecv", "step", "cells", "explicit"}
        How dependencies follow from the program (module docstring).
    root, owners, targets, participants, switches, name
        As for :class:`wafercoll.Schedule` (``switches``: ranks that run on
        switches and reduce in the network).
    max_dependencies : int
        Refuse programs with more dependencies than this (a memory guard;
        fixed-width rules count their candidate slots).
    """

    def __init__(
        self,
        ranks: int,
        block_bytes: Sequence[int] | np.ndarray,
        collective: str = "allreduce",
        *,
        rule: str = "sendrecv",
        root: int | None = None,
        owners: Sequence[int] | np.ndarray | None = None,
        participants: Iterable[int] | None = None,
        targets: Sequence[int] | np.ndarray | None = None,
        name: str = "",
        max_dependencies: int = MAX_DEPENDENCIES,
        switches: Iterable[int] | None = None,
    ) -> None:
        if rule not in RULES:
            raise ValueError(f"rule must be one of {', '.join(RULES)}; got {rule!r}")
        self.ranks = as_int(ranks, "ranks", 1, 1 << 24)
        self.block_bytes = np.asarray(block_bytes, dtype=np.int64).ravel()
        self.num_blocks = int(self.block_bytes.size)
        self.collective = collective
        self.rule = rule
        self.root = root
        self.owners = owners
        self.targets = targets
        self.participants = participants
        self.name = name
        self.count = 0
        self.max_dependencies = as_int(max_dependencies, "max_dependencies", 0)
        self._done = False
        # The schedule under construction: checked now (a bad collective fails
        # here, not after a long build). Rules other than "cells" append every
        # step to it at once; "cells" keeps the calls' arrays until its
        # dependencies can be derived from the whole program.
        self._schedule = Schedule(
            self.ranks,
            self.block_bytes,
            collective,
            root=root,
            owners=None if owners is None else np.asarray(owners).tolist(),
            participants=participants,
            targets=None if targets is None else np.asarray(targets).tolist(),
            switches=switches,
            name=name,
        )
        # per call ("cells" only): src, op, dst (flat), dst counts, lo, hi,
        # range counts, deps (flat), dep counts, stream
        self._src: list[np.ndarray] = []
        self._op: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._ndst: list[np.ndarray | None] = []
        self._lo: list[np.ndarray] = []
        self._hi: list[np.ndarray] = []
        self._nrng: list[np.ndarray | None] = []
        self._deps: list[np.ndarray] = []
        self._ndep: list[np.ndarray] = []
        self._stream: list[np.ndarray] = []
        self._num_deps = 0
        if rule == "sendrecv":
            self._last_in = np.full(self.ranks, -1, dtype=np.int64)
            self._last_out = np.full(self.ranks, -1, dtype=np.int64)
        elif rule == "step":
            self._touch = np.full((self.ranks, 1), -1, dtype=np.int64)

    # -- adding transfers ------------------------------------------------------
    def __len__(self) -> int:
        return self.count

    def reserve(self, transfers: int) -> None:
        """Make room for ``transfers`` more transfers at once (a hint).

        A builder that knows how many transfers it will add saves the
        schedule's arrays their doublings as they grow: each doubling copies
        an array into fresh memory twice its size. What the program builds
        is the same either way.

        Parameters
        ----------
        transfers : int
            How many more transfers are expected, at least 0. More than the
            schedule can hold reserves only up to its limit.

        Examples
        --------
        >>> from wafercoll import kit
        >>> prog = kit.Program(4, kit.split_bytes(64, 4), "allreduce")
        >>> prog.reserve(2 * 4 * 3)
        >>> kit.ring_allreduce(prog, kit.folded(4))
        >>> len(prog)
        24
        """
        self._check_open()
        n = as_int(transfers, "transfers", 0)
        self._schedule._core.reserve(n)

    def step(
        self,
        src: Any,
        dst: Any,
        blocks: Any,
        op: Any = "copy",
        *,
        deps: Any = None,
        stream: Any = -1,
        group: Any = None,
    ) -> np.ndarray:
        """Add transfers (one step of the program) and return their ids.

        Parameters
        ----------
        src : int or array_like of int
            Source rank of every transfer (a scalar is broadcast).
        dst : int, array_like of int, or Multi
            Destination of every transfer, or several (:class:`Multi`).
        blocks : int, array_like, (lo, hi) or Ranges
            The blocks every transfer moves (module docstring).
        op : {"copy", "reduce"} or array_like of {0, 1}
            Per call or per transfer.
        deps : array_like, list of lists, or (flat, offsets), optional
            Explicit dependencies: one id (or -1 for none) per transfer, a
            list of id lists, or CSR ``(flat, offsets)``; added to the rule's.
        stream : int or array_like of int
            Stream tag per transfer (rule ``"cells"``; -1: none).
        group : array_like of int, optional
            Rule ``"sendrecv"``: group of every transfer; a transfer waits
            for the previous events of every rank of its group.

        Returns
        -------
        numpy.ndarray of int64
            The ids of the new transfers, in order.
        """
        # -- shapes: T transfers
        if isinstance(dst, Multi):
            dflat = _i64(dst.ranks)
            doff = _i64(dst.offsets)
            t = doff.size - 1
            ndst = np.diff(doff)
        else:
            dflat = None
            ndst = None
            t = -1
        src_a = _i64(src)
        if t < 0:
            d_a = _i64(dst)
            t = max(src_a.size, d_a.size)
            if isinstance(blocks, (Ranges, tuple)) or np.ndim(blocks) == 0:
                pass
            else:
                t = max(t, int(np.asarray(blocks).size))
            dflat = np.broadcast_to(d_a, (t,)) if d_a.size == 1 else d_a
            ndst = np.ones(t, dtype=np.int64)
        if src_a.size == 1:
            src_a = np.broadcast_to(src_a, (t,))
        if src_a.size != t or dflat.size != int(ndst.sum()):
            raise ValueError(
                f"src and dst must describe the same number of transfers "
                f"(got {src_a.size} sources for {t} transfers)"
            )
        self._check_open()
        if t == 0:
            return np.zeros(0, dtype=np.int64)
        # -- blocks
        if isinstance(blocks, Ranges):
            lo = _i64(blocks.lo)
            hi = _i64(blocks.hi)
            roff = _i64(blocks.offsets)
            if roff.size != t + 1:
                raise ValueError("Ranges.offsets must have one entry per transfer + 1")
            nrng = np.diff(roff)
        else:
            if isinstance(blocks, tuple):
                lo = (
                    np.broadcast_to(_i64(blocks[0]), (t,))
                    if np.size(blocks[0]) == 1
                    else _i64(blocks[0])
                )
                hi = (
                    np.broadcast_to(_i64(blocks[1]), (t,))
                    if np.size(blocks[1]) == 1
                    else _i64(blocks[1])
                )
            else:
                b = _i64(blocks)
                lo = np.broadcast_to(b, (t,)) if b.size == 1 else b
                hi = lo + 1
            if lo.size != t or hi.size != t:
                raise ValueError(f"blocks must give one range per transfer ({t})")
            nrng = None
        # -- op
        op_a = _op_codes(op, t)
        # checked before the rule's state moves; the core's types (ranks,
        # blocks and ids fit in int32)
        src_c = _checked(src_a, self.ranks, "src")
        dst_c = _checked(dflat, self.ranks, "dst")
        lo_c = _checked(lo, self.num_blocks, "blocks")
        hi_c = _checked(hi, self.num_blocks + 1, "blocks")
        ids = self.count + np.arange(t, dtype=np.int64)
        drows = _csr_rows(ndst) if dflat.size != t else None
        # -- dependencies of the rule
        rows: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        matrix = None  # fixed-width candidates of the common case (fast path)
        if self.rule == "sendrecv":
            matrix = self._sendrecv(src_a, dflat, drows, ids, group, rows, vals)
        elif self.rule == "step":
            matrix = self._step_rule(src_a, dflat, drows, ids, rows, vals)
        sorted_csr = None  # explicit CSR lists alone, already distinct and sorted
        if matrix is None and not rows and isinstance(deps, tuple) and len(deps) == 2:
            sorted_csr = _sorted_csr(deps, t)
        if deps is not None and sorted_csr is None:
            r, v = self._explicit(deps, t)
            rows.append(r)
            vals.append(v)
        padded = None  # the core drops -1s and repeats of fixed-width rows
        dep_off = None  # the offsets of ndep, when the caller gave them
        if sorted_csr is not None:
            dep_vals, dep_off = sorted_csr
            ndep = np.diff(dep_off) if self.rule == "cells" else None
        elif matrix is not None and not rows and self.rule != "cells":
            padded = np.ascontiguousarray(matrix, dtype=np.int64)
            dep_vals, ndep = padded, None
        elif matrix is not None and not rows:
            dep_vals, ndep = _dedupe_matrix(matrix)
        else:
            if matrix is not None:
                rows.append(np.repeat(np.arange(t, dtype=np.int64), matrix.shape[1]))
                vals.append(matrix.ravel())
            if rows:
                dep_vals, dep_off = _unique_rows(
                    np.concatenate(rows), np.concatenate(vals), t
                )
                ndep = np.diff(dep_off)
            else:
                dep_vals = np.zeros(0, dtype=np.int64)
                ndep = np.zeros(t, dtype=np.int64)
        self._count_deps(dep_vals.size)
        st = _i64(stream)
        st = np.broadcast_to(st, (t,)) if st.size == 1 else st
        if st.size != t:
            raise ValueError(f"stream must have one entry per transfer ({t})")
        ndst_k = ndst if isinstance(dst, Multi) else None
        if self.rule == "cells":
            # kept until schedule(): in 32 bits, half the memory
            self._src.append(src_c.astype(np.int32))
            self._op.append(op_a)
            self._dst.append(dst_c.astype(np.int32))
            self._ndst.append(ndst_k)
            self._lo.append(lo_c.astype(np.int32))
            self._hi.append(hi_c.astype(np.int32))
            self._nrng.append(nrng)
            self._deps.append(dep_vals.astype(np.int32))
            self._ndep.append(ndep)
            self._stream.append(st.astype(np.int32))
        else:
            self._append(
                src_c, op_a, ndst_k, dst_c, nrng, lo_c, hi_c, ndep, dep_vals, dep_off
            )
        self.count += t
        return ids

    def send(
        self,
        src: int,
        dst: int | Sequence[int],
        blocks: Any,
        op: Any = "copy",
        **kw: Any,
    ) -> int:
        """Add one transfer and return its id (a one-transfer :meth:`step`)."""
        d = Multi.of([dst]) if isinstance(dst, (list, tuple, np.ndarray)) else dst
        if isinstance(blocks, tuple):
            blocks = (np.asarray([blocks[0]]), np.asarray([blocks[1]]))
        deps = kw.pop("deps", None)
        if deps is not None:
            deps = [list(np.atleast_1d(deps))]
        return int(self.step([src], d, blocks, op, deps=deps, **kw)[0])

    def steps(
        self,
        src: Any,
        dst: Any,
        blocks: Any,
        op: Any = "copy",
        *,
        offsets: Any,
        stream: Any = -1,
    ) -> np.ndarray:
        """Add several steps at once (one :meth:`step` per slice of the arrays).

        Step ``j`` is transfers ``offsets[j] .. offsets[j + 1] - 1``. The
        schedule is what one :meth:`step` call per step would build (the same
        dependencies, the same ids). Under the ``"sendrecv"`` rule the core
        derives the dependencies step after step in one call, without a
        Python round per step; other rules take the steps one by one.

        Parameters
        ----------
        src, dst : int or array_like of int
            Source and (single) destination of every transfer.
        blocks : int, array_like, or (lo, hi)
            A block per transfer, or half-open ranges.
        op : {"copy", "reduce"} or array_like of {0, 1}
            Per call or per transfer.
        offsets : array_like of int
            ``S + 1`` step boundaries, from 0 to the number of transfers,
            not decreasing.
        stream : int or array_like of int
            As for :meth:`step` (rule ``"cells"``).

        Returns
        -------
        numpy.ndarray of int64
            The ids of the new transfers, in order.
        """
        off = _i64(offsets)
        if off.size < 1 or int(off[0]) != 0 or bool((off[1:] < off[:-1]).any()):
            raise ValueError("offsets must start at 0 and not decrease")
        if isinstance(dst, Multi) or isinstance(blocks, Ranges):
            raise TypeError(
                "steps() takes one destination and one block range per transfer; "
                "use step() for Multi or Ranges"
            )
        T = int(off[-1])
        src_a, dst_a, lo, hi = _unicast_fields(
            src, dst, blocks, T, f"offsets[-1] = {T} transfers"
        )
        op_a = _op_codes(op, T)
        st = _i64(stream)
        if st.size not in (1, T):
            raise ValueError(f"stream must have one entry per transfer ({T})")
        if self.rule != "sendrecv":
            ids = []
            for a, b in zip(off[:-1].tolist(), off[1:].tolist(), strict=True):
                if b > a:
                    tag = st if st.size == 1 else st[a:b]
                    ids.append(
                        self.step(
                            src_a[a:b],
                            dst_a[a:b],
                            (lo[a:b], hi[a:b]),
                            op_a[a:b],
                            stream=tag,
                        )
                    )
            return np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        self._check_open()
        if T == 0:
            return np.zeros(0, dtype=np.int64)
        _checked(src_a, self.ranks, "src")
        _checked(dst_a, self.ranks, "dst")
        _checked(lo, self.num_blocks, "blocks")
        _checked(hi, self.num_blocks + 1, "blocks")
        self._count_deps(4 * T)  # the rule's candidate slots, as step() counts
        self._core_append(
            self._schedule._core.append_sendrecv,
            *(np.ascontiguousarray(a) for a in (src_a, op_a, dst_a, lo, hi, off)),
            self._last_in,
            self._last_out,
        )
        ids = self.count + np.arange(T, dtype=np.int64)
        self.count += T
        return ids

    def tile(
        self,
        src: Any,
        dst: Any,
        blocks: Any,
        op: Any = "copy",
        *,
        chunks: int,
        block_stride: int,
        deps: tuple[Any, Any],
        later_deps: tuple[Any, Any] | None = None,
    ) -> range:
        """Add ``chunks`` copies of one chunk's transfers (rule ``"explicit"``).

        The pipelining of a program over chunks of its data, written straight
        into the schedule: copy ``c`` of the ``E`` transfers given moves their
        blocks shifted by ``c * block_stride``. Copy 0 depends on ``deps``,
        copy 1 on ``later_deps``, and copy ``c >= 2`` on copy 1's lists
        shifted by ``(c - 1) E`` ids, so the copies are never made as arrays
        (:func:`wafercoll.kit.cells.chunk_cell_deps` gives both lists for the
        ``"cells"`` rule's dependencies of a chunked program). The schedule
        is what ``chunks`` :meth:`step` calls with the shifted arrays would
        build.

        Parameters
        ----------
        src, dst : int or array_like of int
            One chunk's sources and (single) destinations.
        blocks : int, array_like, or (lo, hi)
            One chunk's block per transfer, or its half-open ranges.
        op : {"copy", "reduce"} or array_like of {0, 1}
            Per call or per transfer.
        chunks : int
            Copies, >= 0.
        block_stride : int
            Blocks between one copy's blocks and the next's, >= 0.
        deps : (flat, offsets)
            Copy 0's dependency lists in CSR form (``E + 1`` offsets from 0),
            ids of the whole program, each list distinct and increasing.
        later_deps : (flat, offsets), optional
            Copy 1's lists, likewise; needed when ``chunks > 1``.

        Returns
        -------
        range
            The ids of the new transfers, in order.
        """
        if self.rule != "explicit":
            raise ValueError(
                f"tile() takes explicit dependencies; this program's rule is "
                f"{self.rule!r}"
            )
        self._check_open()
        C = as_int(chunks, "chunks", 0)
        stride = as_int(block_stride, "block_stride", 0)
        src_a, dst_a, lo, hi = _unicast_fields(
            src, dst, blocks, None, "the same number of transfers"
        )
        E = src_a.size
        op_a = _op_codes(op, E)
        if E == 0 or C == 0:
            return range(self.count, self.count)
        _checked(src_a, self.ranks, "src")
        _checked(dst_a, self.ranks, "dst")
        _checked(lo, self.num_blocks, "blocks")
        last = int(hi.max()) + (C - 1) * stride
        if last > self.num_blocks:
            raise ValueError(
                f"blocks: copy {C - 1} of {C} (block_stride {stride}) reaches block "
                f"{last - 1}, outside [0, {self.num_blocks})"
            )

        def csr(d: Any, what: str) -> tuple[np.ndarray, np.ndarray]:
            if not (isinstance(d, tuple) and len(d) == 2):
                raise TypeError(f"{what} must be CSR lists (flat, offsets)")
            flat, off = _i64(d[0]), _i64(d[1])
            if off.size != E + 1 or int(off[0]) != 0 or int(off[-1]) != flat.size:
                raise ValueError(
                    f"{what}: offsets must be {E + 1} values from 0 to len(flat)"
                )
            return np.ascontiguousarray(flat), np.ascontiguousarray(off)

        first, first_off = csr(deps, "deps")
        if C > 1:
            if later_deps is None:
                raise ValueError("later_deps is needed when chunks > 1")
            later, later_off = csr(later_deps, "later_deps")
        else:
            later, later_off = np.zeros(0, np.int64), np.zeros(E + 1, np.int64)
        self._count_deps(first.size + (C - 1) * later.size)
        self._core_append(
            self._schedule._core.append_tiled,
            *(np.ascontiguousarray(a) for a in (src_a, op_a, dst_a, lo, hi)),
            first_off,
            first,
            later_off,
            later,
            C,
            stride,
        )
        ids = range(self.count, self.count + C * E)
        self.count += C * E
        return ids

    # -- rules -----------------------------------------------------------------
    def _sendrecv(
        self,
        s: np.ndarray,
        d: np.ndarray,
        drows: np.ndarray | None,
        ids: np.ndarray,
        group: Any,
        rows: list[np.ndarray],
        vals: list[np.ndarray],
    ) -> np.ndarray | None:
        li, lo_ = self._last_in, self._last_out
        t = ids.size
        matrix = None
        if group is None and drows is None:
            matrix = np.stack([li[s], lo_[s], li[d], lo_[d]], axis=1)
            lo_[s] = ids
            li[d] = ids
            return matrix
        tr = np.arange(t, dtype=np.int64)
        dr = tr if drows is None else drows
        ev_rows = [tr, tr, dr, dr]
        ev_vals = [li[s], lo_[s], li[d], lo_[d]]
        if group is None:
            rows.extend(ev_rows)
            vals.extend(ev_vals)
        else:
            g = _i64(group)
            if g.size != t:
                raise ValueError(f"group must have one entry per transfer ({t})")
            gv, goff = _unique_rows(
                g[np.concatenate(ev_rows)], np.concatenate(ev_vals), int(g.max()) + 1
            )
            cnt = np.diff(goff)[g]
            rows.append(np.repeat(tr, cnt))
            start = np.repeat(goff[g] - np.cumsum(cnt) + cnt, cnt)
            vals.append(gv[start + np.arange(int(cnt.sum()), dtype=np.int64)])
        # the last send of a source / receive of a destination wins
        lo_[s] = ids
        li[d] = ids if drows is None else ids[drows]
        return matrix

    def _step_rule(
        self,
        s: np.ndarray,
        d: np.ndarray,
        drows: np.ndarray | None,
        ids: np.ndarray,
        rows: list[np.ndarray],
        vals: list[np.ndarray],
    ) -> np.ndarray | None:
        touch = self._touch
        t = ids.size
        tr = np.arange(t, dtype=np.int64)
        dr = tr if drows is None else drows
        k = touch.shape[1]
        matrix = None
        if drows is None:
            matrix = np.concatenate([touch[s], touch[d]], axis=1)
        else:
            rows.append(np.repeat(tr, k))
            vals.append(touch[s].ravel())
            rows.append(np.repeat(dr, k))
            vals.append(touch[d].ravel())
        # the new touch lists of the ranks of this step
        rk = np.concatenate([s, d])
        tk = np.concatenate([ids, ids[dr]])
        o = np.argsort(rk, kind="stable")
        rk, tk = rk[o], tk[o]
        first = np.ones(rk.size, bool)
        first[1:] = rk[1:] != rk[:-1]
        start = np.maximum.accumulate(np.where(first, np.arange(rk.size), 0))
        pos = np.arange(rk.size) - start
        width = int(pos.max()) + 1
        if width > touch.shape[1]:
            wider = np.full((self.ranks, width), -1, dtype=np.int64)
            wider[:, : touch.shape[1]] = touch
            touch = self._touch = wider
        touch[rk[first]] = -1
        touch[rk, pos] = tk
        return matrix

    def _explicit(self, deps: Any, t: int) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(deps, tuple) and len(deps) == 2:
            flat, off = _i64(deps[0]), _i64(deps[1])
            if off.size != t + 1:
                raise ValueError(f"deps offsets must have {t + 1} entries")
            return _csr_rows(np.diff(off)), flat
        if isinstance(deps, list) and any(
            isinstance(x, (list, tuple, np.ndarray)) for x in deps
        ):
            if len(deps) != t:
                raise ValueError(f"deps must give one list per transfer ({t})")
            # map and chain iterate in C: half the time of generator
            # expressions on a million lists (mesh_fig11's builders)
            cnt = np.fromiter(map(len, deps), dtype=np.int64, count=t)
            flat = np.fromiter(
                chain.from_iterable(deps), dtype=np.int64, count=int(cnt.sum())
            )
            return _csr_rows(cnt), flat
        a = _i64(deps)
        if a.size == 1 and t > 1:
            a = np.broadcast_to(a, (t,))
        if a.size != t:
            raise ValueError(f"deps must give one id per transfer ({t})")
        return np.arange(t, dtype=np.int64), a

    # -- the schedule ----------------------------------------------------------
    def _check_open(self) -> None:
        if self._done:
            raise RuntimeError(
                "the program's schedule() was taken; start a new Program"
            )

    def _count_deps(self, k: int) -> None:
        """Count ``k`` more dependencies (or candidate slots) against the guard."""
        self._num_deps += k
        if self._num_deps > self.max_dependencies:
            raise ValueError(
                f"{self.name or 'program'}: more than {self.max_dependencies} "
                "dependencies; use fewer ranks or blocks"
            )

    def _core_append(self, append: Any, *args: Any) -> None:
        """One of the core's bulk appends; a refusal ends the program.

        The transfers of the batch before the refused one stay added, so the
        program can take no more.
        """
        try:
            append(*args)
        except (ValueError, IndexError, OverflowError) as exc:
            self._done = True
            if isinstance(exc, ScheduleError):
                raise
            raise ScheduleError(str(exc)) from exc

    def _append(
        self,
        src: np.ndarray,
        op: np.ndarray,
        ndst: np.ndarray | None,
        dst: np.ndarray,
        nrng: np.ndarray | None,
        lo: np.ndarray,
        hi: np.ndarray,
        ndep: np.ndarray | None,
        deps: np.ndarray,
        dep_off: np.ndarray | None = None,
    ) -> None:
        def offsets(counts: np.ndarray | None) -> np.ndarray | None:
            if counts is None:
                return None
            o = np.zeros(counts.size + 1, dtype=np.int64)
            np.cumsum(counts, out=o[1:])
            return o

        self._core_append(
            self._schedule._core.append_csr,
            src,
            op,
            offsets(ndst),
            dst,
            offsets(nrng),
            lo,
            hi,
            offsets(ndep) if dep_off is None else dep_off,
            deps,
        )

    def schedule(self) -> Schedule:
        """The :class:`wafercoll.Schedule` of every transfer added.

        Ends the program: later :meth:`step` calls raise.
        """
        if self._done:
            raise RuntimeError("schedule() was taken already (or a step failed)")
        if self.rule == "cells" and self._src:
            from .cells import cell_deps

            def cat(parts: list[np.ndarray]) -> np.ndarray:
                return np.concatenate(parts)

            def counts(parts: list[np.ndarray | None]) -> np.ndarray | None:
                if all(x is None for x in parts):
                    return None
                return cat(
                    [
                        np.ones(a.size, np.int64) if x is None else x
                        for x, a in zip(parts, self._src, strict=True)
                    ]
                )

            src, dst = cat(self._src), cat(self._dst)
            lo, hi = cat(self._lo), cat(self._hi)
            ndst, nrng = counts(self._ndst), counts(self._nrng)
            if (ndst is not None and (ndst != 1).any()) or (
                nrng is not None and (nrng != 1).any()
            ):
                raise ValueError(
                    "rule 'cells' takes one destination and one block range "
                    "per transfer"
                )
            flat, off = cell_deps(
                self.ranks, self.num_blocks, src, dst, lo, hi, cat(self._stream)
            )
            ex_cnt = cat(self._ndep)
            rows = np.concatenate(
                [_csr_rows(np.diff(off)), _csr_rows(ex_cnt.astype(np.int64))]
            )
            deps, dep_off = _unique_rows(
                rows, np.concatenate([flat, cat(self._deps)]), self.count
            )
            self._append(
                src, cat(self._op), None, dst, None, lo, hi, np.diff(dep_off), deps
            )
            for parts in (self._src, self._dst, self._lo, self._hi, self._deps):
                parts.clear()
        self._done = True
        return self._schedule

    def __repr__(self) -> str:
        return (
            f"Program({self.collective}, ranks={self.ranks}, blocks={self.num_blocks}, "
            f"rule={self.rule!r}, transfers={self.count})"
        )
