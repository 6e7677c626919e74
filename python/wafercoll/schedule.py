"""Schedules: the plain data every analysis of wafercoll consumes.

A :class:`Schedule` has ``ranks`` ranks, each holding a vector cut into the same
blocks (sizes in bytes), and a list of *transfers*. A transfer moves a set of
blocks from one source rank to one or more destination ranks, either copying
them (``op="copy"``) or adding them into the destination's blocks
(``op="reduce"``), and it depends on earlier transfers.

Data semantics
--------------
The verifier, the executors and the simulator all follow these rules:

* a transfer starts once all its dependencies have completed and reads its
  source blocks as they stand at that moment, i.e. exactly the result of the
  transfers that happen before it (its transitive dependencies); it writes its
  destinations when it completes;
* two writes to the same block of the same rank must be ordered by
  dependencies;
* a transfer may write a block that another transfer reads concurrently only
  if every dependency of the reader happens before the writer, so the write
  cannot land before the read starts. A pairwise exchange in one step (both
  sides with the same dependencies) is the typical case and is well defined.

A schedule that :func:`wafercoll.verify` accepts computes its collective in
every execution order the dependencies allow.

Collectives
-----------
``reduce`` (``root`` ends with the sum of all participants' vectors),
``allreduce`` (every participant ends with the sum), ``reduce_scatter`` (the
owner of each block ends with that block's sum), ``allgather`` (every
participant ends with each block of its owner) and ``broadcast`` (every
participant ends with the root's vector). ``participants`` lists the ranks that
hold input and need output (default: all); other ranks only relay data. Cells
that hold no input start at zero.

Switch ranks (in-network reduction and multicast: NVLink SHARP, InfiniBand
SHARP). ``switches`` lists ranks that run on switches (a topology's hidden
routers; the simulator places rank ``r`` on node ``r`` by default, and the
fabrics number their switches after the GPUs). A switch rank owns no data,
holds no input, needs no output (it never participates), and reduces what it
receives into its buffer and forwards the sum, usually by one multicast. It
differs from an ordinary relay in one rule: a switch accumulates atomically,
so reductions into one of its cells need not be ordered among themselves,
while every other pair of accesses to it (a copy and any write, a read and
any write) must be. A contribution reduced twice is refuted as for any rank.

The block-moving collectives reduce nothing: block ``b`` starts at rank
``owners[b]`` and must arrive, exactly once, at rank ``targets[b]`` (a block
of zero bytes carries nothing and need not).
``alltoall`` has ``p * p`` blocks, block ``i * p + j`` being rank ``i``'s
block ``j``, which ends in rank ``j``'s slot ``i`` (the same block index:
a rank's buffer is indexed by block, so "slot ``i`` of rank ``j``" is cell
``(j, i * p + j)``); ``alltoallv`` is the same layout with a byte count per
pair (a ``p x p`` matrix, row-major, zeros allowed: see
:func:`wafercoll.alltoallv_blocks`); ``gather`` moves block ``i`` from rank
``i`` to the ``root``, ``scatter`` block ``j`` from the ``root`` to rank
``j``. Other layouts pass ``owners`` and ``targets`` explicitly.

``unknown`` states no collective: the schedule is its transfers and nothing
more (an imported message program that does not say what it computes, such
as a GOAL file). It can be simulated, bounded from the traffic its transfers
carry (:mod:`wafercoll.bounds`) and executed without a check (every rank
starts with its own input in every block), but :func:`wafercoll.verify` has
no result to prove and refuses it after checking its dependencies.

JSON
----
:meth:`Schedule.to_json` writes an object with the keys ``format``,
``version``, ``name``, ``ranks``, ``block_bytes``, ``collective`` (``kind``,
``root``, ``owners``, ``targets``, ``participants`` and, when there are any,
``switches``) and ``transfers``: a list
of objects such as
``{"src": 0, "dst": [1], "blocks": [[0, 4], 7], "op": "reduce", "deps": [2]}``,
where a block entry is a block index or a half-open ``[lo, hi]`` range. A
schedule whose data semantics are those of a finer schedule (an imported MSCCL
program: see :mod:`wafercoll.io.msccl`) adds that one as ``model``, a document of
the same form over more ranks, which :func:`wafercoll.verify` and
:func:`wafercoll.execute` use. :meth:`Schedule.from_json` validates everything
and names the transfer index and field of the first problem.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from . import _core
from ._errors import ScheduleError
from ._util import as_int, int_array, write_atomic

__all__ = ["COLLECTIVES", "KINDS", "MOVING", "Schedule", "alltoallv_blocks"]

#: The collectives a schedule can implement (and builders build).
COLLECTIVES = (
    "reduce",
    "allreduce",
    "reduce_scatter",
    "allgather",
    "broadcast",
    "alltoall",
    "alltoallv",
    "gather",
    "scatter",
)
#: What a schedule may declare: a collective, or ``"unknown"`` (no claim).
KINDS = (*COLLECTIVES, "unknown")
#: The kinds that move blocks from an owner to a target and reduce nothing.
MOVING = ("alltoall", "alltoallv", "gather", "scatter")
_ROOTED = ("reduce", "broadcast", "gather", "scatter")
_FORMAT = "wafercoll.schedule"
_VERSION = 1
_OPS = {"copy": 0, "reduce": 1}
_TRANSFER_KEYS = {"src", "dst", "blocks", "op", "deps", "label"}
_TOP_KEYS = {
    "format",
    "version",
    "name",
    "ranks",
    "block_bytes",
    "collective",
    "transfers",
    "model",
}
_MAX_JSON_TRANSFERS = 1 << 26


def _rank_per_block(value: Any, name: str, ranks: int, blocks: int) -> list[int]:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(
            f"{name} must be a sequence of ranks (one per block), got "
            f"{type(value).__name__}"
        )
    out = [as_int(o, f"{name}[{i}]", 0, ranks - 1) for i, o in enumerate(value)]
    if len(out) != blocks:
        raise ValueError(
            f"{name} must have one entry per block ({blocks}), got {len(out)}"
        )
    return out


def _moving_defaults(
    kind: str, ranks: int, blocks: int, root: int
) -> tuple[list[int], list[int]]:
    """Standard owners and targets of a block-moving collective."""
    if kind in ("alltoall", "alltoallv"):
        if blocks != ranks * ranks:
            raise ValueError(
                f"an {kind} of {ranks} ranks has ranks * ranks = {ranks * ranks} "
                f"blocks (block i*p + j goes from rank i to rank j), got {blocks}; "
                "pass owners= and targets= for another layout"
            )
        return [b // ranks for b in range(blocks)], [b % ranks for b in range(blocks)]
    if blocks != ranks:
        raise ValueError(
            f"a {kind} of {ranks} ranks has one block per rank, got {blocks}; "
            "pass owners= and targets= for another layout"
        )
    if kind == "gather":
        return list(range(ranks)), [root] * ranks
    return [root] * ranks, list(range(ranks))


def alltoallv_blocks(matrix: Any) -> list[int]:
    """Block sizes of an ``alltoallv`` from its ``p x p`` byte-count matrix.

    ``matrix[i][j]`` is the number of bytes rank ``i`` sends to rank ``j``
    (the MPI ``sendcounts`` of rank ``i``, in bytes); block ``i * p + j`` gets
    that size. Zeros are allowed (a pair that exchanges nothing).

    Parameters
    ----------
    matrix : array_like of int, shape (p, p)
        Non-negative byte counts.

    Returns
    -------
    list of int
        ``p * p`` block sizes, row-major.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.alltoallv_blocks([[0, 3], [5, 0]])
    [0, 3, 5, 0]
    >>> s = wc.Schedule(2, wc.alltoallv_blocks([[0, 3], [5, 0]]), "alltoallv")
    >>> s.owners.tolist(), s.targets.tolist()
    ([0, 0, 1, 1], [0, 1, 0, 1])
    """
    m = np.asarray(matrix)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 1:
        raise ValueError(
            f"matrix must be a square p x p array of byte counts, got shape {m.shape}"
        )
    if m.size and not np.issubdtype(m.dtype, np.integer):
        if m.dtype == np.bool_ or not np.issubdtype(m.dtype, np.floating):
            raise TypeError(f"matrix must hold integer byte counts, got {m.dtype}")
        if not np.all(np.isfinite(m)) or not np.all(np.mod(m, 1) == 0):
            raise ValueError("matrix must hold whole numbers of bytes")
    if (m < 0).any():
        i, j = map(int, np.argwhere(m < 0)[0])
        raise ValueError(f"matrix[{i}][{j}] must be >= 0, got {m[i, j]}")
    return [int(x) for x in m.ravel()]


def _check_collective(
    kind: Any,
    ranks: int,
    blocks: int,
    root: Any,
    owners: Any,
    participants: Any,
    targets: Any = None,
    switches: Any = None,
) -> tuple[str, int, list[int], list[int], list[int], list[int]]:
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"collective must be one of {', '.join(KINDS)}; got {kind!r}")
    root_i = -1
    if kind in _ROOTED:
        root_i = as_int(0 if root is None else root, "root", 0, ranks - 1)
    elif root is not None:
        raise ValueError(f"root applies only to {', '.join(_ROOTED)}, not {kind}")
    owners_l: list[int] = []
    targets_l: list[int] = []
    if kind in MOVING:
        if owners is None or targets is None:
            std_owners, std_targets = _moving_defaults(kind, ranks, blocks, root_i)
        owners_l = (
            std_owners
            if owners is None
            else _rank_per_block(owners, "owners", ranks, blocks)
        )
        targets_l = (
            std_targets
            if targets is None
            else _rank_per_block(targets, "targets", ranks, blocks)
        )
    elif targets is not None:
        raise ValueError(f"targets apply only to {', '.join(MOVING)}, not {kind}")
    elif kind in ("reduce_scatter", "allgather"):
        if owners is None:
            if blocks != ranks:
                raise ValueError(
                    f"owners is required for a {kind} with {blocks} blocks and "
                    f"{ranks} ranks (the default, block b owned by rank b, needs "
                    "one block per rank)"
                )
            owners_l = list(range(ranks))
        else:
            if isinstance(owners, (str, bytes)) or not hasattr(owners, "__iter__"):
                raise TypeError(
                    f"owners must be a sequence of ranks (one per block), got "
                    f"{type(owners).__name__}"
                )
            owners_l = [
                as_int(o, f"owners[{i}]", 0, ranks - 1) for i, o in enumerate(owners)
            ]
            if len(owners_l) != blocks:
                raise ValueError(
                    f"owners must have one entry per block ({blocks}), "
                    f"got {len(owners_l)}"
                )
    elif owners is not None:
        raise ValueError(
            "owners apply only to reduce_scatter, allgather and "
            f"{', '.join(MOVING)}, not {kind}"
        )
    part_l: list[int] = []
    if participants is not None and kind == "unknown":
        raise ValueError(
            "participants do not apply to an unknown collective (it states no "
            "input or output)"
        )
    if participants is not None:
        if isinstance(participants, (str, bytes)) or not hasattr(
            participants, "__iter__"
        ):
            raise TypeError(
                "participants must be a sequence of ranks, got "
                f"{type(participants).__name__}"
            )
        part_set = sorted(
            {as_int(r, "participants", 0, ranks - 1) for r in participants}
        )
        if not part_set:
            raise ValueError("participants must name at least one rank")
        mask = [0] * ranks
        for r in part_set:
            mask[r] = 1
        part_l = mask
    sw_l = _switch_mask(switches, kind, ranks, part_l, root_i, owners_l, targets_l)
    return kind, root_i, owners_l, part_l, targets_l, sw_l


def _switch_mask(
    switches: Any,
    kind: str,
    ranks: int,
    part_l: list[int],
    root: int,
    owners: list[int],
    targets: list[int],
) -> list[int]:
    """The per-rank switch mask (empty: no switch ranks), checked."""
    if switches is None:
        return []
    if isinstance(switches, (str, bytes)) or not hasattr(switches, "__iter__"):
        raise TypeError(
            f"switches must be a sequence of ranks, got {type(switches).__name__}"
        )
    sw = sorted({as_int(r, "switches", 0, ranks - 1) for r in switches})
    if not sw:
        return []
    if kind == "unknown":
        raise ValueError(
            "switches do not apply to an unknown collective (it states no input "
            "or output)"
        )
    if len(sw) == ranks:
        raise ValueError("switches: at least one rank must not be a switch")
    for r in sw:
        if part_l and part_l[r]:
            raise ValueError(
                f"switches: rank {r} is listed in participants too; a switch rank "
                "holds no input and needs no output"
            )
        if r == root or r in owners or r in targets:
            raise ValueError(
                f"switches: rank {r} is the root or a block's owner or target; "
                "those must be ordinary ranks"
            )
    mask = [0] * ranks
    for r in sw:
        mask[r] = 1
    return mask


class Schedule:
    """A collective-communication schedule (see the module docstring).

    Parameters
    ----------
    ranks : int
        Number of ranks, >= 1.
    block_bytes : sequence of int
        Sizes of the blocks of every rank's vector, in bytes (>= 0 each).
    collective : str
        One of ``reduce``, ``allreduce``, ``reduce_scatter``, ``allgather``,
        ``broadcast``, or ``unknown`` (no claim; see the module docstring).
    root : int, optional
        Root of a ``reduce`` or ``broadcast`` (default 0).
    owners : sequence of int, optional
        Owner rank of every block, for ``reduce_scatter`` and ``allgather``
        (default: block ``b`` is owned by rank ``b``; needs one block per rank).
    participants : iterable of int, optional
        Ranks that hold input and need the output (default: all but the
        switch ranks).
    switches : iterable of int, optional
        Switch ranks (see the module docstring; default: none). Not
        participants, roots, owners or targets.
    name : str
        A label.

    Examples
    --------
    A pairwise exchange that sums two vectors:

    >>> import wafercoll as wc
    >>> s = wc.Schedule(2, [8], "allreduce")
    >>> s.add_transfer(0, 1, [0], op="reduce")
    0
    >>> s.add_transfer(1, 0, [0], op="reduce")
    1
    >>> wc.verify(s).steps
    1
    """

    __slots__ = ("_core", "_labels", "_opaque", "_model")

    def __init__(
        self,
        ranks: int,
        block_bytes: Sequence[int] | np.ndarray,
        collective: str = "allreduce",
        *,
        root: int | None = None,
        owners: Sequence[int] | None = None,
        participants: Iterable[int] | None = None,
        targets: Sequence[int] | None = None,
        switches: Iterable[int] | None = None,
        name: str = "",
    ) -> None:
        p = as_int(ranks, "ranks", 1, int(_core_limit("ranks")))
        sizes = _block_sizes(block_bytes)
        kind, root_i, owners_l, part_l, targets_l, sw_l = _check_collective(
            collective, p, len(sizes), root, owners, participants, targets, switches
        )
        self._core = _core.Schedule(
            p, sizes, kind, root_i, owners_l, part_l, targets_l, sw_l
        )
        self._core.name = str(name)
        self._labels: list[str] | None = None
        # Why the transfers carry no data semantics (None: they do).
        self._opaque: str | None = None
        # A finer schedule with the same data semantics, which verify() and
        # execute() use instead (None: this one); see wafercoll.io.msccl.
        self._model: Schedule | None = None

    # -- pickling and equality ----------------------------------------------
    def _state(self) -> dict[str, Any]:
        """Everything that defines the schedule, as plain data and arrays."""
        c = self._core
        part = np.asarray(c.participants, dtype=np.uint8)  # a mask per rank
        return {
            "ranks": int(c.num_ranks),
            "block_bytes": np.asarray(c.block_bytes),
            "kind": c.kind,
            "root": int(c.root),
            "owners": np.asarray(c.owners, dtype=np.int64),
            "targets": np.asarray(c.targets, dtype=np.int64),
            "participants": part,
            "switches": np.asarray(c.switches, dtype=np.uint8),
            "src": np.asarray(c.src),
            "op": np.asarray(c.op),
            "dst_offsets": np.asarray(c.dst_offsets),
            "dst": np.asarray(c.dsts),
            "range_offsets": np.asarray(c.range_offsets),
            "range_lo": np.asarray(c.range_lo),
            "range_hi": np.asarray(c.range_hi),
            "dep_offsets": np.asarray(c.dep_offsets),
            "deps": np.asarray(c.deps),
            "name": c.name,
            "labels": None if self._labels is None else list(self._labels),
            "opaque": self._opaque,
            "model": self._model,
        }

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        """Pickle by value, as the arrays of :meth:`_state`.

        Fast for millions of transfers: no JSON on the way.
        """
        return (_schedule_from_state, (self._state(),))

    def __eq__(self, other: object) -> bool:
        """Same ranks, blocks, collective, transfers, name and labels."""
        if not isinstance(other, Schedule):
            return NotImplemented
        a, b = self._state(), other._state()
        for key, value in a.items():
            if isinstance(value, np.ndarray):
                if not np.array_equal(value, b[key]):
                    return False
            elif value != b[key]:
                return False
        return True

    __hash__ = None  # type: ignore[assignment] - mutable (add_transfer)

    @classmethod
    def _wrap(cls, core: Any) -> Schedule:
        obj = cls.__new__(cls)
        obj._core = core
        obj._labels = None
        obj._opaque = None
        obj._model = None
        return obj

    # -- construction -------------------------------------------------------
    def add_transfer(
        self,
        src: int,
        dst: int | Sequence[int],
        blocks: int | Sequence[int | Sequence[int]],
        *,
        op: str = "copy",
        deps: Iterable[int] = (),
    ) -> int:
        """Append a transfer and return its index.

        Parameters
        ----------
        src : int
            Source rank.
        dst : int or sequence of int
            Destination rank(s); several make a multicast.
        blocks : int or sequence
            Blocks moved: a block index, or a list of block indices and
            half-open ``(lo, hi)`` ranges.
        op : {"copy", "reduce"}
            Copy over the destination's blocks or add into them.
        deps : iterable of int
            Earlier transfers this one waits for.
        """
        i = self.num_transfers
        src_i = as_int(src, "src", 0, self.num_ranks - 1)
        dsts = _rank_list(dst, "dst", self.num_ranks)
        ranges = _block_ranges(blocks, self.num_blocks, f"transfer {i}: field 'blocks'")
        if op not in _OPS:
            raise ValueError(f"op must be 'copy' or 'reduce', got {op!r}")
        dep_l = [as_int(d, "deps", 0, max(i - 1, 0)) for d in deps]
        if i == 0 and dep_l:
            raise ValueError("deps: the first transfer cannot depend on anything")
        return int(self._core.add_transfer(src_i, dsts, ranges, op, dep_l))

    @classmethod
    def from_arrays(
        cls,
        ranks: int,
        block_bytes: Sequence[int] | np.ndarray,
        collective: str,
        *,
        src: Any,
        dst: Any,
        dst_offsets: Any = None,
        block_lo: Any,
        block_hi: Any,
        block_offsets: Any = None,
        op: Any = None,
        deps: Any = (),
        dep_offsets: Any = None,
        root: int | None = None,
        owners: Sequence[int] | None = None,
        participants: Iterable[int] | None = None,
        targets: Sequence[int] | None = None,
        switches: Iterable[int] | None = None,
        name: str = "",
    ) -> Schedule:
        """Build a schedule of many transfers at once from CSR arrays.

        Transfer ``i`` sends from ``src[i]`` to the ranks
        ``dst[dst_offsets[i]:dst_offsets[i+1]]`` the block ranges
        ``[block_lo[j], block_hi[j])`` for ``j`` in
        ``block_offsets[i]:block_offsets[i+1]`` and waits for the transfers
        ``deps[dep_offsets[i]:dep_offsets[i+1]]``. This is how builders that
        emit millions of transfers avoid a Python call per transfer.

        Parameters
        ----------
        ranks, block_bytes, collective, root, owners, participants, targets
            As for :class:`Schedule`.
        switches, name
            As for :class:`Schedule`.
        src : array_like of int, shape (T,)
            Source rank of every transfer.
        dst, dst_offsets : array_like of int
            Destinations in CSR form (``dst_offsets`` has ``T + 1`` entries,
            starting at 0; default: one destination per transfer).
        block_lo, block_hi, block_offsets : array_like of int
            Half-open block ranges in CSR form (default offsets: one range
            per transfer).
        op : array_like of {0, 1} or str, optional
            0 (or ``"copy"``) and 1 (or ``"reduce"``), per transfer or one for
            all; default copy.
        deps, dep_offsets : array_like of int, optional
            Dependencies in CSR form (default: none). They may name later
            transfers; :func:`wafercoll.verify` reports a cycle.

        Raises
        ------
        ScheduleError
            If an array is malformed; the message names the transfer and field.
        """
        p = as_int(ranks, "ranks", 1, int(_core_limit("ranks")))
        sizes = _block_sizes(block_bytes)
        kind, root_i, owners_l, part_l, targets_l, sw_l = _check_collective(
            collective, p, len(sizes), root, owners, participants, targets, switches
        )
        src_a = np.asarray(src, dtype=np.int64).ravel()
        t = src_a.size
        if op is None or isinstance(op, str):
            code = _OPS[op or "copy"] if (op or "copy") in _OPS else None
            if code is None:
                raise ValueError(f"op must be 'copy' or 'reduce', got {op!r}")
            op_a = np.full(t, code, dtype=np.uint8)
        else:
            op_a = np.asarray(op).ravel()
            if op_a.shape != (t,) or not np.isin(op_a, (0, 1)).all():
                raise ValueError("op must hold 0 (copy) or 1 (reduce) per transfer")
        if dep_offsets is None:
            dep_offsets = np.zeros(t + 1, dtype=np.int64)
        one = np.arange(t + 1, dtype=np.int64)
        dst_offsets = one if dst_offsets is None else dst_offsets
        block_offsets = one if block_offsets is None else block_offsets
        arrays = {}
        for key, value, dtype in (
            ("src", src_a, np.int32),
            ("dst", dst, np.int32),
            ("dst_offsets", dst_offsets, np.int64),
            ("block_lo", block_lo, np.int32),
            ("block_hi", block_hi, np.int32),
            ("block_offsets", block_offsets, np.int64),
            ("deps", deps, np.int32),
            ("dep_offsets", dep_offsets, np.int64),
        ):
            arrays[key] = int_array(value, key, dtype)
        for key in ("dst_offsets", "block_offsets", "dep_offsets"):
            if arrays[key].shape != (t + 1,):
                raise ValueError(
                    f"{key} must have len(src) + 1 = {t + 1} entries, "
                    f"got {arrays[key].size}"
                )
        try:
            core = _core.Schedule.from_arrays(
                p,
                sizes,
                kind,
                root_i,
                owners_l,
                part_l,
                arrays["src"],
                op_a.astype(np.uint8),
                arrays["dst_offsets"],
                arrays["dst"],
                arrays["block_offsets"],
                arrays["block_lo"],
                arrays["block_hi"],
                arrays["dep_offsets"],
                arrays["deps"],
                targets_l,
                sw_l,
            )
        except (ValueError, IndexError) as exc:
            raise ScheduleError(str(exc)) from exc
        core.name = str(name)
        return cls._wrap(core)

    # -- basic properties ---------------------------------------------------
    @property
    def num_ranks(self) -> int:
        """Number of ranks."""
        return int(self._core.num_ranks)

    @property
    def num_blocks(self) -> int:
        """Number of blocks of each rank's vector."""
        return int(self._core.num_blocks)

    @property
    def num_transfers(self) -> int:
        """Number of transfers."""
        return int(self._core.num_transfers)

    def __len__(self) -> int:
        return self.num_transfers

    @property
    def block_bytes(self) -> np.ndarray:
        """Size of every block in bytes (int64 array)."""
        return self._core.block_bytes

    @property
    def size_bytes(self) -> int:
        """Size of one rank's whole vector in bytes."""
        return int(self._core.total_bytes)

    @property
    def collective(self) -> str:
        """The collective the schedule implements."""
        return str(self._core.kind)

    @property
    def root(self) -> int | None:
        """Root rank (reduce, broadcast, gather, scatter) or None."""
        r = int(self._core.root)
        return None if r < 0 else r

    @property
    def owners(self) -> np.ndarray | None:
        """Owner (start) rank of every block, or None.

        Set for reduce_scatter, allgather and the block-moving kinds.
        """
        o = self._core.owners
        return o if len(o) else None

    @property
    def targets(self) -> np.ndarray | None:
        """Target rank of every block (alltoall, alltoallv, gather, scatter) or None.

        Examples
        --------
        >>> import wafercoll as wc
        >>> wc.Schedule(2, [1, 1, 1, 1], "alltoall").targets.tolist()
        [0, 1, 0, 1]
        """
        t = self._core.targets
        return t if len(t) else None

    def differs_from_standard(self, ranks: int | None = None) -> str:
        """How this schedule's collective differs from the standard one, or ``""``.

        The standard collective of a kind on ``p`` ranks: ranks ``0 .. p - 1``
        participate (further ranks may relay, as helpers); a reduce-scatter's
        or allgather's blocks are owned one contiguous, evenly sized share
        per participant in rank order; an alltoall's, gather's and scatter's
        blocks have the layout of :class:`~wafercoll.Schedule` with default
        ``owners`` and ``targets``. Schedules that differ compute something
        else (TTO's reduce-scatter leaves the sums on a few owners), so
        rankings say so beside them.

        Parameters
        ----------
        ranks : int, optional
            ``p`` (default: the schedule's rank count).

        Examples
        --------
        >>> import wafercoll as wc
        >>> wc.Schedule(4, [8] * 4, "allgather").differs_from_standard()
        ''
        >>> s = wc.Schedule(4, [8] * 4, "allgather", owners=[0, 0, 1, 1])
        >>> s.differs_from_standard()
        'owners: 2 of 4 ranks hold blocks'
        >>> wc.Schedule(4, [8], participants=[0, 1, 2]).differs_from_standard()
        'participants: 3 of 4 ranks'
        >>> wc.Schedule(5, [8], participants=[0, 1, 2, 3]).differs_from_standard(4)
        ''
        """
        p = self.num_ranks if ranks is None else int(ranks)
        notes = []
        part = np.flatnonzero(self.participants)
        if len(part) != p or (part != np.arange(p)).any():
            notes.append(f"participants: {len(part)} of {p} ranks")
        if self.switches.any():
            n_sw = int(self.switches.sum())
            notes.append(f"switches: {n_sw} switch ranks reduce in the network")
        kind = self.collective
        owners = self.owners
        if kind in ("reduce_scatter", "allgather") and owners is not None:
            held = np.unique(owners)
            if len(held) != p and self.size_bytes >= p:
                notes.append(f"owners: {len(held)} of {p} ranks hold blocks")
            elif (np.diff(owners) < 0).any():
                notes.append("owners: blocks owned in another order than the ranks'")
            else:
                own = np.bincount(owners, weights=self.block_bytes, minlength=p)
                runs = np.bincount(owners, minlength=p)
                if (np.abs(own - self.size_bytes / p) >= np.maximum(runs, 1)).any():
                    notes.append("owners: uneven shares of the vector")
        elif kind in MOVING:
            try:
                std = _moving_defaults(kind, p, self.num_blocks, self.root or 0)
            except ValueError:
                std = None
            if (
                std is None
                or owners.tolist() != std[0]
                or self.targets.tolist() != std[1]
            ):
                notes.append(
                    "layout: blocks move between other ranks than the standard"
                )
        return "; ".join(notes)

    @property
    def participants(self) -> np.ndarray:
        """Boolean mask of participating ranks."""
        return self._core.participants.astype(bool)

    @property
    def switches(self) -> np.ndarray:
        """Boolean mask of switch ranks (see the module docstring).

        Examples
        --------
        >>> import wafercoll as wc
        >>> wc.Schedule(3, [8], switches=[2]).switches.tolist()
        [False, False, True]
        """
        return self._core.switches.astype(bool)

    @property
    def name(self) -> str:
        """A free-form label (builders put their name and parameters here)."""
        return str(self._core.name)

    @name.setter
    def name(self, value: str) -> None:
        self._core.name = str(value)

    @property
    def labels(self) -> list[str] | None:
        """Where each transfer came from, as text (None: no labels).

        Importers set them (``"GPU 2 tb 1 step 4 -> GPU 3 tb 0 step 2"`` for
        an MSCCL file, say); :func:`wafercoll.verify` appends the labels of the
        transfers its error names, and the JSON keeps them (key ``label``).
        """
        return None if self._labels is None else list(self._labels)

    @labels.setter
    def labels(self, value: Sequence[str] | None) -> None:
        """Set the labels: one string per transfer, or None.

        A list or tuple is copied (each item as ``str``); any other
        :class:`collections.abc.Sequence` of strings is kept as it is, so an
        importer can make its labels when they are first read. The length
        is checked now.
        """
        if value is None:
            self._labels = None
            return
        if isinstance(value, Sequence) and not isinstance(value, (list, tuple, str)):
            if len(value) != self.num_transfers:
                raise ValueError(
                    f"labels must have one entry per transfer ({self.num_transfers}), "
                    f"got {len(value)}"
                )
            self._labels = value
            return
        labels = [str(v) for v in value]
        if len(labels) != self.num_transfers:
            raise ValueError(
                f"labels must have one entry per transfer ({self.num_transfers}), "
                f"got {len(labels)}"
            )
        self._labels = labels

    def transfer_label(self, index: int) -> str | None:
        """Label of transfer ``index`` (None without one)."""
        if self._labels is None or not 0 <= index < len(self._labels):
            return None
        return self._labels[index]

    # -- transfers as arrays ------------------------------------------------
    @property
    def src(self) -> np.ndarray:
        """Source rank of every transfer."""
        return self._core.src

    @property
    def dst(self) -> np.ndarray:
        """First destination rank of every transfer (see :meth:`destinations`)."""
        return self._core.dsts[self._core.dst_offsets[:-1]]

    def destinations(self) -> tuple[np.ndarray, np.ndarray]:
        """Every transfer's destinations in CSR form ``(ranks, offsets)``.

        Transfer ``t`` goes to ``ranks[offsets[t]:offsets[t + 1]]`` (more
        than one for a multicast).
        """
        return self._core.dsts, self._core.dst_offsets

    def block_ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every transfer's block ranges in CSR form ``(lo, hi, offsets)``.

        Transfer ``t`` carries the half-open ranges ``[lo[j], hi[j])`` for
        ``j`` in ``offsets[t]:offsets[t + 1]``.

        Examples
        --------
        >>> import wafercoll as wc
        >>> lo, hi, off = wc.build("generic_ring_allreduce", 3, 24).block_ranges()
        >>> int(off[-1]) == len(lo) == 12
        True
        """
        return self._core.range_lo, self._core.range_hi, self._core.range_offsets

    def dependencies(self) -> tuple[np.ndarray, np.ndarray]:
        """Every transfer's dependencies in CSR form ``(deps, offsets)``.

        Transfer ``t`` waits for ``deps[offsets[t]:offsets[t + 1]]``.

        Examples
        --------
        >>> import wafercoll as wc
        >>> deps, off = wc.build("generic_ring_allreduce", 3, 24).dependencies()
        >>> len(off)
        13
        """
        return self._core.deps, self._core.dep_offsets

    @property
    def op(self) -> np.ndarray:
        """Operation of every transfer: 0 = copy, 1 = reduce (uint8)."""
        return self._core.op

    def transfer_bytes(self) -> np.ndarray:
        """Payload of every transfer in bytes (int64 array)."""
        return self._core.transfer_bytes()

    def transfer(self, index: int) -> dict[str, Any]:
        """Return transfer ``index`` as a dict with the JSON field names."""
        i = (
            as_int(index, "index", 0, self.num_transfers - 1)
            if self.num_transfers
            else None
        )
        if i is None:
            raise IndexError("the schedule has no transfers")
        return self._transfers(i, i + 1)[0]

    def _rows(
        self, start: int, stop: int
    ) -> tuple[
        list[int],
        list[int],
        list[list[int]],
        list[list[tuple[int, int]]],
        list[list[int]],
    ]:
        """Transfers ``start .. stop - 1`` as Python lists.

        Sources, ops, and per transfer its destinations, ``(lo, hi)`` block
        ranges and dependencies. Only the requested slice of the core's arrays
        is converted.
        """
        c = self._core

        def split(offsets: Any, *values: Any) -> list[list[Any]]:
            off = np.asarray(offsets[start : stop + 1], dtype=np.int64)
            cols = [v[off[0] : off[-1]].tolist() for v in values]
            rel = (off - off[0]).tolist()
            rows = cols[0] if len(cols) == 1 else list(zip(*cols, strict=True))
            return [rows[rel[i] : rel[i + 1]] for i in range(len(rel) - 1)]

        return (
            c.src[start:stop].tolist(),
            c.op[start:stop].tolist(),
            split(c.dst_offsets, c.dsts),
            split(c.range_offsets, c.range_lo, c.range_hi),
            split(c.dep_offsets, c.deps),
        )

    def _transfers(self, start: int, stop: int) -> list[dict[str, Any]]:
        src, op, dsts, ranges, deps = self._rows(start, stop)
        return [
            {
                "src": src[i],
                "dst": dsts[i],
                "blocks": [lo if hi - lo == 1 else [lo, hi] for lo, hi in ranges[i]],
                "op": "reduce" if op[i] else "copy",
                "deps": deps[i],
            }
            for i in range(len(src))
        ]

    # -- derived views ------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """Steps and per-rank counts.

        Returns
        -------
        dict
            ``step`` (per transfer: length of the longest dependency chain
            before it), ``num_steps``, and per rank ``messages_sent``,
            ``messages_received``, ``bytes_sent``, ``bytes_received`` (a
            multicast counts once for its sender and once per destination).
        """
        return dict(self._core.stats())

    def steps(self) -> np.ndarray:
        """Step (round) of every transfer: the longest dependency chain before it."""
        return self._core.stats()["step"]

    @property
    def num_steps(self) -> int:
        """Number of rounds: 1 + the largest step (0 without transfers)."""
        return int(self._core.stats()["num_steps"])

    def topological_order(self) -> np.ndarray:
        """A deterministic order of the transfers that respects dependencies."""
        return self._core.topological_order()

    def to_pandas(self) -> Any:
        """Transfers as a pandas DataFrame (one row per transfer)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on environment
            raise ImportError(
                "Schedule.to_pandas() needs pandas: pip install pandas"
            ) from exc
        rows = self._transfers(0, self.num_transfers)
        df = pd.DataFrame(rows, columns=["src", "dst", "blocks", "op", "deps"])
        df["bytes"] = self.transfer_bytes()
        df["step"] = self.steps()
        df.index.name = "transfer"
        return df

    # -- JSON ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The schedule as plain Python data (the JSON document)."""
        owners = self.owners
        targets = self.targets
        part = self.participants
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "name": self.name,
            "ranks": self.num_ranks,
            "block_bytes": self.block_bytes.tolist(),
            "collective": {
                "kind": self.collective,
                "root": self.root,
                "owners": None if owners is None else owners.tolist(),
                "targets": None if targets is None else targets.tolist(),
                "participants": None if part.all() else np.flatnonzero(part).tolist(),
                **(
                    {"switches": np.flatnonzero(self.switches).tolist()}
                    if self.switches.any()
                    else {}
                ),
            },
            "transfers": self._labelled(self._transfers(0, self.num_transfers)),
            **({} if self._model is None else {"model": self._model.to_dict()}),
        }

    def _labelled(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self._labels is not None and len(self._labels) == len(rows):
            for row, label in zip(rows, self._labels, strict=True):
                row["label"] = label
        return rows

    def to_json(
        self, path: str | os.PathLike[str] | None = None, *, indent: int | None = None
    ) -> str:
        """Serialise to JSON; also write it to ``path`` when given."""
        text = json.dumps(self.to_dict(), indent=indent)
        if path is not None:
            write_atomic(path, text)
        return text

    @classmethod
    def from_json(cls, source: str | os.PathLike[str]) -> Schedule:
        """Read a schedule from JSON text or from a file path.

        Raises
        ------
        ScheduleError
            If the document is not valid JSON or not a valid schedule; the
            message names the transfer index and field.
        """
        text = os.fspath(source)
        where = ""
        is_text = isinstance(source, str) and (
            text.lstrip()[:1] in ("{", "[") or "\n" in text
        )
        if not is_text:
            if not os.path.exists(text):
                raise FileNotFoundError(f"no schedule file {text!r}")
            where = f"{text}: "
            try:
                with open(text, encoding="utf-8") as fh:
                    text = fh.read()
            except UnicodeDecodeError as exc:
                raise ScheduleError(
                    f"{where}not UTF-8 text (byte {exc.start})", kind="json"
                ) from None
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScheduleError(f"{where}malformed JSON: {exc}", kind="json") from exc
        except RecursionError:
            raise ScheduleError(
                f"{where}JSON nested too deeply to be a schedule", kind="json"
            ) from None
        try:
            return cls.from_dict(doc)
        except ScheduleError as exc:
            if not where:
                raise
            raise ScheduleError(
                f"{where}{exc}",
                kind=exc.kind,
                transfer=exc.transfer,
                rank=exc.rank,
                block=exc.block,
            ) from None

    @classmethod
    def from_dict(cls, doc: Any) -> Schedule:
        """Build a schedule from the plain data of :meth:`to_dict`."""
        if not isinstance(doc, dict):
            raise ScheduleError("a schedule document must be a JSON object")
        if doc.get("format", _FORMAT) != _FORMAT:
            raise ScheduleError(
                f"field 'format' must be {_FORMAT!r}, got {doc.get('format')!r}"
            )
        if doc.get("version", _VERSION) != _VERSION:
            raise ScheduleError(
                f"field 'version' must be {_VERSION}, got {doc.get('version')!r}"
            )
        for key in ("ranks", "block_bytes", "collective", "transfers"):
            if key not in doc:
                raise ScheduleError(f"missing field {key!r}")
        unknown = sorted(set(doc) - _TOP_KEYS)
        if unknown:
            raise ScheduleError(
                f"unknown field(s) {', '.join(map(repr, unknown))} (accepted: "
                f"{', '.join(sorted(_TOP_KEYS))})"
            )
        coll = doc["collective"]
        if isinstance(coll, str):
            coll = {"kind": coll}
        if not isinstance(coll, dict) or "kind" not in coll:
            raise ScheduleError("field 'collective' must be an object with a 'kind'")
        transfers = doc["transfers"]
        if not isinstance(transfers, list):
            raise ScheduleError("field 'transfers' must be a list of objects")
        if len(transfers) > _MAX_JSON_TRANSFERS:
            raise ScheduleError(
                f"field 'transfers' holds more than {_MAX_JSON_TRANSFERS} transfers"
            )
        try:
            p = as_int(doc["ranks"], "ranks", 1, int(_core_limit("ranks")))
            sizes = _block_sizes(doc["block_bytes"], "block_bytes")
            kind, root, owners, part, targets, sw = _check_collective(
                coll["kind"],
                p,
                len(sizes),
                coll.get("root"),
                coll.get("owners"),
                coll.get("participants"),
                coll.get("targets"),
                coll.get("switches"),
            )
        except (TypeError, ValueError) as exc:
            raise ScheduleError(str(exc)) from exc
        nb = len(sizes)
        src: list[int] = []
        ops: list[int] = []
        doff, dsts = [0], []
        roff, rlo, rhi = [0], [], []
        eoff, deps = [0], []
        for i, t in enumerate(transfers):
            where = f"transfer {i}"
            if not isinstance(t, dict):
                raise ScheduleError(f"{where}: must be an object", transfer=i)
            unknown = set(t) - _TRANSFER_KEYS
            if unknown:
                raise ScheduleError(
                    f"{where}: unknown field {sorted(unknown)[0]!r}", transfer=i
                )
            for key in ("src", "dst", "blocks"):
                if key not in t:
                    raise ScheduleError(f"{where}: missing field {key!r}", transfer=i)
            try:
                src.append(as_int(t["src"], f"{where}: field 'src'", 0, p - 1))
                dsts.extend(_rank_list(t["dst"], f"{where}: field 'dst'", p))
                doff.append(len(dsts))
                for lo, hi in _block_ranges(
                    t["blocks"], nb, f"{where}: field 'blocks'"
                ):
                    rlo.append(lo)
                    rhi.append(hi)
                roff.append(len(rlo))
                op = t.get("op", "copy")
                if not isinstance(op, str) or op not in _OPS:
                    raise ValueError(
                        f"{where}: field 'op' must be 'copy' or 'reduce', got {op!r}"
                    )
                ops.append(_OPS[op])
                d = t.get("deps", [])
                if not isinstance(d, list):
                    raise TypeError(
                        f"{where}: field 'deps' must be a list of transfer indices"
                    )
                deps.extend(
                    as_int(x, f"{where}: field 'deps'", 0, len(transfers) - 1)
                    for x in d
                )
                eoff.append(len(deps))
            except ScheduleError:
                raise
            except (TypeError, ValueError) as exc:
                raise ScheduleError(str(exc), transfer=i) from exc
        core = _core.Schedule.from_arrays(
            p,
            sizes,
            kind,
            root,
            owners,
            part,
            np.asarray(src, np.int32),
            np.asarray(ops, np.uint8),
            np.asarray(doff, np.int64),
            np.asarray(dsts, np.int32),
            np.asarray(roff, np.int64),
            np.asarray(rlo, np.int32),
            np.asarray(rhi, np.int32),
            np.asarray(eoff, np.int64),
            np.asarray(deps, np.int32),
            targets,
            sw,
        )
        core.name = str(doc.get("name", ""))
        out = cls._wrap(core)
        labels = [t.get("label") for t in transfers]
        if any(label is not None for label in labels):
            out._labels = ["" if label is None else str(label) for label in labels]
        if doc.get("model") is not None:
            out._model = _model_from_dict(out, doc["model"])
        return out

    # -- display ------------------------------------------------------------
    def _summary(self) -> list[tuple[str, str]]:
        st = self.stats()
        rows = [
            (
                "collective",
                self.collective + ("" if self.root is None else f" (root {self.root})"),
            ),
            ("ranks", str(self.num_ranks)),
            ("blocks", f"{self.num_blocks} ({self.size_bytes} bytes per rank)"),
            ("transfers", str(self.num_transfers)),
            ("steps", str(st["num_steps"])),
            ("max bytes sent by a rank", str(int(st["bytes_sent"].max()))),
        ]
        return rows

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return (
            f"<Schedule{label}: {self.collective}, {self.num_ranks} ranks, "
            f"{self.num_blocks} blocks, {self.num_transfers} transfers>"
        )

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td>{html.escape(v)}</td></tr>"
            for k, v in self._summary()
        )
        title = html.escape(self.name or "Schedule")
        return f"<table><caption>{title}</caption>{rows}</table>"


def _model_from_dict(s: Schedule, doc: Any) -> Schedule:
    """The verification model of ``s`` from field ``model`` of its document.

    It holds the same blocks and collective over more ranks, of which the
    first ``s.num_ranks`` participate.
    """
    if isinstance(doc, dict) and doc.get("model") is not None:
        raise ScheduleError("field 'model': a model has no model of its own")
    try:
        model = Schedule.from_dict(doc)
    except ScheduleError as exc:
        raise ScheduleError(f"field 'model': {exc}", kind=exc.kind) from None
    p = s.num_ranks
    same = (
        model.num_ranks >= p
        and np.array_equal(model.block_bytes, s.block_bytes)
        and (model.collective, model.root) == (s.collective, s.root)
        and np.array_equal(
            np.asarray([] if model.owners is None else model.owners),
            np.asarray([] if s.owners is None else s.owners),
        )
        and np.array_equal(
            np.asarray([] if model.targets is None else model.targets),
            np.asarray([] if s.targets is None else s.targets),
        )
        and np.flatnonzero(model.participants).tolist() == list(range(p))
    )
    if not same:
        raise ScheduleError(
            f"field 'model': must have the schedule's blocks and collective over "
            f"at least its {p} ranks, of which exactly those participate"
        )
    return model


def _core_limit(what: str) -> int:
    return {"ranks": 1 << 24, "blocks": 1 << 26}[what]


def _block_sizes(block_bytes: Any, name: str = "block_bytes") -> list[int]:
    if isinstance(block_bytes, (str, bytes)) or not hasattr(block_bytes, "__iter__"):
        raise TypeError(f"{name} must be a sequence of block sizes in bytes")
    if (
        isinstance(block_bytes, np.ndarray)
        and np.issubdtype(block_bytes.dtype, np.integer)
        and block_bytes.ndim == 1
    ):
        # the builders' case: checked at once instead of one by one
        if block_bytes.size and int(block_bytes.min()) < 0:
            i = int(np.argmax(block_bytes < 0))
            as_int(int(block_bytes[i]), f"{name}[{i}]", 0)
        sizes = block_bytes.tolist()
    else:
        sizes = [as_int(b, f"{name}[{i}]", 0) for i, b in enumerate(block_bytes)]
    if not sizes:
        raise ValueError(f"{name} must list at least one block")
    if len(sizes) > _core_limit("blocks"):
        raise ValueError(f"{name}: at most {_core_limit('blocks')} blocks")
    return sizes


def _rank_list(value: Any, name: str, ranks: int) -> list[int]:
    if isinstance(value, (list, tuple, np.ndarray)):
        out = [as_int(v, name, 0, ranks - 1) for v in value]
        if not out:
            raise ValueError(f"{name} must list at least one rank")
        return out
    return [as_int(value, name, 0, ranks - 1)]


def _block_ranges(value: Any, blocks: int, name: str) -> list[tuple[int, int]]:
    items = value if isinstance(value, (list, tuple, np.ndarray)) else [value]
    out = []
    for item in items:
        if isinstance(item, (list, tuple, np.ndarray)):
            if len(item) != 2:
                raise ValueError(
                    f"{name}: a range must be [lo, hi], got {list(item)!r}"
                )
            lo = as_int(item[0], name, 0, blocks - 1)
            hi = as_int(item[1], name, lo + 1, blocks)
        else:
            lo = as_int(item, name, 0, blocks - 1)
            hi = lo + 1
        out.append((lo, hi))
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out


def _schedule_from_state(state: dict[str, Any]) -> Schedule:
    """Rebuild a pickled :class:`Schedule` (see :meth:`Schedule.__reduce__`)."""
    ranks = state["ranks"]
    part = state["participants"]
    part_l = [] if bool(part.all()) else [int(x) for x in part]
    # A mask per rank (pickles of earlier versions have none).
    sw = np.asarray(state.get("switches", ()), dtype=np.uint8)
    switches = [int(x) for x in sw] if sw.any() else []
    core = _core.Schedule.from_arrays(
        ranks,
        [int(b) for b in state["block_bytes"]],
        state["kind"],
        state["root"],
        [int(o) for o in state["owners"]],
        part_l,
        state["src"],
        state["op"],
        state["dst_offsets"],
        state["dst"],
        state["range_offsets"],
        state["range_lo"],
        state["range_hi"],
        state["dep_offsets"],
        state["deps"],
        [int(t) for t in state.get("targets", ())],
        switches,
    )
    core.name = state["name"]
    s = Schedule._wrap(core)
    s._labels = state["labels"]
    s._opaque = state["opaque"]
    s._model = state["model"]
    return s
