"""Ring-2D as the MCM paper's BookSim artifact builds it (``ring2dn``).

The artifact of *Enhancing Collective Communication in MCM Accelerators for
Deep Learning Training* (Laskar, Majhi et al., HPCA 2024; repository
sabuj7177/TTO_HPCA_2024, commit 156128c, ``src/allreduce/ring2d_n_allreduce.py``
driven by ``src/hmc.py``) times a Ring-2D that differs from the hierarchical
rings of the paper's text (``mesh_ring_2d_allreduce``). Registered as
``mesh_ring_2d_artifact_allreduce`` (label "Ring-2D (artifact)").

Data split
----------
The vector is cut into ``2 N`` pieces (``N = rows x cols`` chiplets). Half A
goes along the rows first: the row chain of root ``(r, c)`` reduces
``A_c`` (the ``rows`` pieces ``A_{c, 0..rows-1}``) over row ``r``, then the
column chain of ``(r, c)`` reduces ``A_{c, r}`` over column ``c``. Half B goes
columns first (``B_r`` over column ``c``, then ``B_{r, c}`` over row ``r``).
The artifact's ``datachunk`` is ``D / 2`` units in the first phase and
``1 / 2`` in the second, a unit being one chiplet's ``1 / N`` share: with
``message_bytes`` set, the unit is rounded up to whole messages as its
driver does (``base_num_messages = ceil(bytes / message_size / N)``, a
transfer of ``ceil(base x datachunk)`` messages), so the vector holds
``N x base x message_bytes`` bytes.

Bounce chains
-------------
Every chiplet is the root of one chain per dimension, a walk along its line
of ``L`` chiplets (:func:`bounce_walk`): from position ``c`` to the far end,
back to the near end, and on to ``c - 1``, ``2 L - 3`` hops (``L - 1`` from
position 0). The reduce-scatter runs the walk backwards into the root
(a chiplet reduces the running sum the first time it passes and copies it on
the way back), the allgather forwards. The artifact's timesteps: reduce-scatter
first phase at ``T - 1 - t`` for hop ``t`` (``T = 2 D - 3``), second phase at
``2 T - 1 - t``; allgather of the second-phase pieces at ``t``, of the
first-phase blocks at ``T + t``.

Dependencies
------------
``dependencies="data"`` (default) lists the transfers in that timestep order
under the kit's ``"cells"`` rule: every hop waits for the data it forwards,
the second phase for the chiplet's first-phase result, the allgather of a
row block for all its column pieces. This is a correct AllReduce
(:func:`wafercoll.verify`).

``dependencies="artifact"`` is what the artifact's driver executes. Its
schedule names a dependency by ``(flow, child)`` (``(flow, parent)`` in the
allgather), and the two phases use the same flow ids on the same chains, so
the first phase's arrival clears the second phase's dependency too
(``finish_aggregation_update`` removes the pair at every timestep): in the
second phase only the first sender of a chain waits (for its own first-phase
result), in the allgather's second phase only the root's first send (for the
last hop of *one* column chain, ``other_node``'s). A chiplet starts its sends
in timestep order (``reduce_scatter_schedule[0]``), which this mode keeps by
letting each send inherit the dependencies of the chiplet's sends of the
previous timestep (it starts no earlier than they do). These dependencies are
not an AllReduce: on a 3x3 mesh the verifier finds two unordered writes to
one block of rank 1 (a second-phase hop that may land before the first-phase
hop it follows), and an execution that runs the second phase before the
first leaves ranks without part of the sum.

Interfaces
----------
With ``interfaces`` set (the driver's ``--radix``, 4 in every committed run)
and ``dependencies="artifact"``, the schedule also keeps the driver's
network interfaces (``src/hmc.py``: ``free_nis``, ``reduce_scatter_evaluate``
and ``send_reduce_message_update``; ``src/booksim.py``: each interface is a
BookSim node of its own):

* a chiplet's ``k``-th send (in its timestep order) goes out through
  interface ``k mod interfaces`` and starts once the interface's previous
  flow, send ``k - interfaces``, is *issued*; when both go to the same
  neighbour it waits for that flow to arrive whole (one interface's
  messages reach the router in order);
* a flow is issued, and its interface free again, when all but its last
  ``issue_lag_messages`` messages have left for the queues in front of the
  network (the driver's 32-message buffer, BookSim's message and injection
  queues and two router input ports:
  :data:`wafercoll.mcm.artifact_multitree.ISSUE_LAG_MESSAGES`, 200). A flow
  of more messages is two transfers, its first messages and its last
  ``issue_lag_messages`` (with the remainder of a half message), and
  "issued" is the end of the first; a shorter flow is issued when it starts;
  with ``issue_lag_messages=0`` a flow is issued when it has arrived;
* a chiplet's allgather starts once its last reduce-scatter flows are
  issued (the driver turns to the allgather with every interface free);
* a flow starts no earlier than the flows of the chiplet's earlier
  timesteps, their waits for an interface included (the driver takes a
  timestep's flows only once every flow of the previous one has an
  interface).

Interfaces are assigned in turn, where the driver takes the first free
one of a Python set at the cycle a flow starts (an interface is busy one
cycle per message it hands to its buffer), so that short flows of
successive timesteps often share interface 0 and its queue; no static order
follows that. The blocks are cut at the message boundaries the splits need
(the same cut in every piece), so the schedule has more blocks and transfers
than without; the bytes on every link are the same. On the default engine
12 of the 24 Fig. 8 points at 1 MiB to 1 GiB in steps of 4x are within
5 % of the committed cycles.

The driver itself
-----------------
Without ``interfaces``, ``dependencies="artifact"`` is one transfer per
flow, and :func:`wafercoll.mcm.hmc_driver` runs the driver in the simulator
(``engine="routers"``, :class:`wafercoll.Driver`) with the timestep order
of :func:`driver_steps`: the interface a flow gets is decided when it
starts, an interface's messages enter the router in order whatever their
link, the hand-over is paced by the interface's channel once the buffers in
front of it are full, and each child's flow is aggregated in turn. This is
how ``wafercoll reproduce`` runs Ring-2D (artifact): 43 of the 44 Fig. 8
points (every size the artifact ran) and 13 of the 14 Fig. 9 points within 5 %.

The artifact's committed ``link_flits`` equal ``17`` flits times the messages
these transfers carry, hop by hop, in all 44 fig8 ``ring2dn`` runs.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int, frozen_csr
from ..algorithms import AlgorithmInfo, register
from ..schedule import Schedule
from .artifact_multitree import ISSUE_LAG_MESSAGES

__all__ = ["bounce_walk", "driver_steps", "ring2dn_transfers"]

_DEPENDENCIES = ("data", "artifact")
_MAX_SIZE = 1 << 40
# phases in the artifact's order: reduce-scatter first and second phase,
# allgather of the second-phase pieces, allgather of the first-phase blocks
_RS1, _RS2, _AG1, _AG2 = 0, 1, 2, 3


def bounce_walk(length: int, start: int) -> np.ndarray:
    """Positions visited by the artifact's chain of root ``start`` on a line.

    From ``start`` to the far end, back to position 0, then on to
    ``start - 1``: ``2 length - 3`` hops; from ``start = 0`` straight to the
    far end, ``length - 1`` hops (``compute_trees`` of
    ``ring2d_n_allreduce.py``).

    Parameters
    ----------
    length : int
        Chiplets on the line (>= 1).
    start : int
        Position of the root, ``0 <= start < length``.

    Returns
    -------
    numpy.ndarray of int64
        The positions in walk order, the root first.

    Examples
    --------
    >>> from wafercoll.mcm.artifact_ring2d import bounce_walk
    >>> bounce_walk(4, 1).tolist()
    [1, 2, 3, 2, 1, 0]
    >>> bounce_walk(4, 0).tolist()
    [0, 1, 2, 3]
    """
    L = as_int(length, "length", 1)
    c = as_int(start, "start", 0, L - 1)
    if L == 1:
        return np.zeros(1, dtype=np.int64)
    if c == 0:
        return np.arange(L, dtype=np.int64)
    return np.concatenate(
        [np.arange(c, L), np.arange(L - 2, -1, -1), np.arange(1, c)]
    ).astype(np.int64)


def ring2dn_transfers(rows: int, cols: int) -> dict[str, np.ndarray]:
    """Every transfer of the artifact's Ring-2D, in its timestep order.

    Parameters
    ----------
    rows, cols : int
        Mesh shape; node id ``r * cols + c``.

    Returns
    -------
    dict of str to ndarray
        ``phase`` (0, 1: reduce-scatter first and second phase; 2, 3:
        allgather of the second-phase pieces and of the first-phase blocks),
        ``timestep`` (the artifact's, allgather after the ``2 T``
        reduce-scatter steps), ``src``, ``dst``, ``lo``, ``hi`` (block range),
        ``op`` (1 reduce, 0 copy), ``chain`` (index of the chain: root,
        dimension and half), ``hop`` (position on the walk, 0 at the root)
        and ``T``, one entry per transfer, stable-sorted by ``timestep``.

    Examples
    --------
    >>> from wafercoll.mcm.artifact_ring2d import ring2dn_transfers
    >>> t = ring2dn_transfers(4, 4)
    >>> int(t["T"]), t["src"].size
    (5, 576)
    """
    m = as_int(rows, "rows", 1)
    n = as_int(cols, "cols", 1)
    N = m * n
    T = max(2 * m - 3, 2 * n - 3, 1)
    cols_out: dict[str, list[int]] = {
        k: [] for k in ("phase", "timestep", "src", "dst", "lo", "hi", "op", "chain")
    }
    cols_out["hop"] = []
    chain = 0
    for v in range(N):
        r, c = divmod(v, n)
        row = r * n + bounce_walk(n, c)
        col = bounce_walk(m, r) * n + c
        # (phase of the reduce-scatter, walk, block range): half A rows then
        # columns, half B columns then rows
        for ph, w, lo, hi in (
            (_RS1, row, c * m, (c + 1) * m),
            (_RS1, col, N + r * n, N + (r + 1) * n),
            (_RS2, col, c * m + r, c * m + r + 1),
            (_RS2, row, N + r * n + c, N + r * n + c + 1),
        ):
            k = w.size - 1
            seen = {int(w[k])}
            ag = _AG2 if ph == _RS1 else _AG1
            for t in range(k - 1, -1, -1):  # reduce-scatter: the walk backwards
                a, b = int(w[t + 1]), int(w[t])
                _append(cols_out, ph, ph * T + T - 1 - t, a, b, lo, hi, b not in seen)
                cols_out["chain"].append(chain)
                cols_out["hop"].append(t)
                seen.add(b)
            for t in range(k):  # allgather: forwards
                step = (ag - 2) * T + t + 2 * T
                _append(cols_out, ag, step, int(w[t]), int(w[t + 1]), lo, hi, False)
                cols_out["chain"].append(chain)
                cols_out["hop"].append(t)
            chain += 1
    out = {k: np.asarray(v, dtype=np.int64) for k, v in cols_out.items()}
    order = np.argsort(out["timestep"], kind="stable")
    out = {k: v[order] for k, v in out.items()}
    out["T"] = np.int64(T)
    return out


def _append(
    cols: dict[str, list[int]],
    phase: int,
    step: int,
    src: int,
    dst: int,
    lo: int,
    hi: int,
    reduce: bool,
) -> None:
    for key, val in (
        ("phase", phase),
        ("timestep", step),
        ("src", src),
        ("dst", dst),
        ("lo", lo),
        ("hi", hi),
        ("op", int(reduce)),
    ):
        cols[key].append(val)


def _artifact_deps(t: dict[str, np.ndarray], m: int, n: int) -> list[list[int]]:
    """The dependencies the artifact's driver enforces (module docstring)."""
    N = m * n
    # plain lists for the loops below, which read single items
    ph, src, dst, lo = (t[k].tolist() for k in ("phase", "src", "dst", "lo"))
    chain, hop = t["chain"].tolist(), t["hop"].tolist()
    step = t["timestep"]
    E = len(src)
    deps: list[set[int]] = [set() for _ in range(E)]
    # transfers of each (chain, phase) in time order
    seq: dict[tuple[int, int], list[int]] = {}
    for i in range(E):
        seq.setdefault((chain[i], ph[i]), []).append(i)
    # the first-phase hop into each root, keyed by (root, block lo)
    rs1_final = {(dst[i], lo[i]): i for i in range(E) if ph[i] == _RS1 and hop[i] == 0}
    # the last allgather hop of each second-phase chain, keyed by (root, lo)
    ag1_last: dict[tuple[int, int], int] = {}
    for (_, p), ids in seq.items():
        if p == _AG1:
            ag1_last[(src[ids[0]], lo[ids[0]])] = ids[-1]
    for (_, p), ids in seq.items():
        first = ids[0]
        if p in (_RS1, _AG1):  # real chains: each hop waits for the one before
            for a, b in zip(ids[:-1], ids[1:], strict=True):
                deps[b].add(a)
        elif p == _RS2:  # only the first sender waits, for its first phase
            e = src[first]
            er, ec = divmod(e, n)
            own = ec * m if lo[first] < N else N + er * n
            if (e, own) in rs1_final:
                deps[first].add(rs1_final[(e, own)])
        else:  # _AG2: the root's first send waits for other_node's last hop
            v = src[first]
            r, c = divmod(v, n)
            if lo[first] < N:  # row block A_c: the column chain of the node below
                o = v + n if r < m - 1 else c
                key = (o, c * m + o // n)
            else:  # column block B_r: the row chain of the node to the right
                o = v - n + 1 if c == n - 1 else v + 1
                key = (o, N + r * n + o % n)
            if key in ag1_last:
                deps[first].add(ag1_last[key])
    # a chiplet's allgather starts after its own first-phase results
    finals: dict[int, list[int]] = {}
    for (root, _), i in rs1_final.items():
        finals.setdefault(root, []).append(i)
    for i in range(E):
        if ph[i] >= _AG1:
            deps[i].update(finals.get(src[i], []))
    # timestep order per chiplet: a send starts no earlier than those of the
    # chiplet's previous timestep (it inherits their dependencies)
    phase, source, steps = t["phase"], t["src"], step.tolist()
    for group in (phase <= _RS2, phase >= _AG1):
        ids = np.flatnonzero(group)
        ids = ids[np.lexsort((step[ids], source[ids]))].tolist()
        prev: set[int] = set()
        cur: set[int] = set()
        for j, i in enumerate(ids):
            if j == 0 or src[i] != src[ids[j - 1]]:
                prev, cur = set(), set()
            elif steps[i] != steps[ids[j - 1]]:
                prev |= cur
                cur = set()
            deps[i] |= prev
            cur |= deps[i]
    return [sorted(d) for d in deps]


def driver_steps(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Issue steps of ``dependencies="artifact"`` for :class:`wafercoll.Driver`.

    The driver (``src/hmc.py``, run without ``--strict-schedule``) takes a
    chiplet's flows timestep by timestep: a flow may take an interface once
    every flow of the chiplet's earlier timesteps has one. It turns to the
    allgather once its reduce-scatter schedule is done and every interface
    is free again, so the first allgather timestep of a chiplet is strict.

    Returns
    -------
    step, strict : ndarray
        Per transfer of ``mesh_ring_2d_artifact_allreduce(...,
        dependencies="artifact")`` without ``interfaces``, in its order.

    Examples
    --------
    >>> from wafercoll.mcm.artifact_ring2d import driver_steps
    >>> step, strict = driver_steps(3, 3)
    >>> step.size, int(strict.sum())  # strict: each chiplet's first allgather step
    (192, 18)
    """
    m = as_int(rows, "rows", 1)
    n = as_int(cols, "cols", 1)
    t, _ = _driver_flows(m, n)
    step = t["timestep"]
    ag = t["phase"] >= _AG1
    first = np.full(m * n, np.iinfo(np.int64).max)
    np.minimum.at(first, t["src"][ag], step[ag])
    strict = ag & (step == first[t["src"]])
    return step.copy(), strict


def _shape(p: int, topology: Any) -> tuple[int, int]:
    from .builders import mesh_shape

    return mesh_shape("mesh_ring_2d_artifact_allreduce", p, topology)


def _block_sizes(N: int, size: int, message_bytes: Any) -> np.ndarray:
    if size > _MAX_SIZE:
        raise ValueError(f"size_bytes = {size} exceeds {_MAX_SIZE} (1 TiB)")
    if message_bytes is None:
        if size < 2 * N:
            raise ValueError(
                f"size_bytes = {size} cannot fill the {2 * N} pieces of a "
                f"{N}-chiplet Ring-2D; use size_bytes >= {2 * N}"
            )
        return kit.split_bytes(size, 2 * N, allow_empty=False)
    msg = as_int(message_bytes, "message_bytes", 2)
    if msg % 2:
        raise ValueError(f"message_bytes must be even (half units), got {msg}")
    base = max(-(-size // (N * msg)), 1)
    return np.full(2 * N, base * msg // 2, dtype=np.int64)


def _ring_2d_artifact(
    p: int,
    size: int,
    *,
    topology: Any = None,
    message_bytes: Any = None,
    dependencies: str = "data",
    interfaces: Any = None,
    issue_lag_messages: int = ISSUE_LAG_MESSAGES,
) -> Schedule:
    m, n = _shape(p, topology)
    if dependencies not in _DEPENDENCIES:
        raise ValueError(
            f"dependencies must be one of {', '.join(_DEPENDENCIES)}; "
            f"got {dependencies!r}"
        )
    sizes = _block_sizes(p, as_int(size, "size_bytes", 1), message_bytes)
    t, driver_deps = _driver_flows(m, n)
    name = f"mesh_ring_2d_artifact({m}x{n}, {int(sizes.sum())} B, {dependencies})"
    blocks = (t["lo"], t["hi"])
    if interfaces is not None:
        nis = as_int(interfaces, "interfaces", 1, 64)
        lag = as_int(issue_lag_messages, "issue_lag_messages", 0)
        if dependencies != "artifact" or message_bytes is None:
            raise ValueError(
                "interfaces needs dependencies='artifact' and message_bytes "
                "(the driver's interfaces send whole messages)"
            )
        msg = as_int(message_bytes, "message_bytes", 2)
        sub, rows, deps = _interface_flows(m, n, int(sizes[0]), msg, nis, lag)
        prog = kit.Program(
            p,
            np.tile(sub, 2 * p),
            "allreduce",
            rule="explicit",
            name=f"{name[:-1]}, {nis} interfaces, lag {lag})",
        )
        src, dst, lo, hi, op = rows
        prog.step(src, dst, (lo, hi), op, deps=deps)
        return prog.schedule()
    if dependencies == "data":
        prog = kit.Program(p, sizes, "allreduce", rule="cells", name=name)
        prog.step(t["src"], t["dst"], blocks, t["op"])
    else:
        prog = kit.Program(p, sizes, "allreduce", rule="explicit", name=name)
        prog.step(t["src"], t["dst"], blocks, t["op"], deps=driver_deps)
    return prog.schedule()


@functools.lru_cache(maxsize=8)
def _driver_flows(
    m: int, n: int
) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The transfers of a mesh and the driver's dependencies (cached, CSR)."""
    t = ring2dn_transfers(m, n)
    for v in t.values():
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
    return t, frozen_csr(_artifact_deps(t, m, n))


def _interface_flows(
    m: int, n: int, piece: int, msg: int, nis: int, lag: int
) -> tuple[np.ndarray, tuple[np.ndarray, ...], tuple[np.ndarray, np.ndarray]]:
    """The flows of the ``m x n`` Ring-2D through ``nis`` interfaces.

    ``piece`` is the bytes of one of the ``2 N`` pieces (module docstring).
    Returns the sub-block sizes of a piece, the transfers (source,
    destination, first and end block, op) and their dependencies (CSR
    ``(flat, offsets)``).
    """
    t, _ = _driver_flows(m, n)
    fbytes = (t["hi"] - t["lo"]) * piece
    # the last lag messages, with what is left of a half message; a flow
    # longer than that is two transfers
    tail = lag * msg + fbytes % msg if lag else np.zeros(fbytes.size, np.int64)
    split = (tail > 0) & (fbytes > tail)
    cuts = sorted({int(c) for c in (fbytes - tail)[split] % piece} - {0})
    edges = [0, *cuts, piece]
    K = len(edges) - 1
    deps = _interface_deps(m, n, nis, lag > 0, split.tobytes())
    lo, hi = t["lo"] * K, t["hi"] * K
    whole, off = np.divmod(fbytes - tail, piece)
    mid = lo + whole * K + np.searchsorted(edges, off)
    # a split flow: its first messages, then the rest
    rep = 1 + split
    first = _first_transfers(split)
    cols = [np.repeat(t[k], rep) for k in ("src", "dst")]
    start, end = np.repeat(lo, rep), np.repeat(hi, rep)
    start[first[split] + 1] = mid[split]
    end[first[split]] = mid[split]
    op = np.repeat(t["op"], rep)
    return np.diff(edges).astype(np.int64), (*cols, start, end, op), deps


def _first_transfers(split: np.ndarray) -> np.ndarray:
    """Id of every flow's first transfer, a flow being two where ``split``."""
    return np.cumsum(1 + split) - 1 - split


@functools.lru_cache(maxsize=8)
def _interface_deps(
    m: int, n: int, nis: int, lagged: bool, split_bytes: bytes
) -> tuple[np.ndarray, np.ndarray]:
    """Dependencies of the transfers of :func:`_interface_flows` (cached, CSR).

    ``split_bytes``: per flow whether it is two transfers (its first
    messages and its last ``issue_lag_messages``); ``lagged``: whether
    ``issue_lag_messages > 0`` (else a flow is issued once it has arrived).
    They depend on the size only through which flows are split, so the
    sweeps over sizes build them a few times per mesh.
    """
    t, (dflat, doff) = _driver_flows(m, n)
    src, dst, ph, step = t["src"], t["dst"], t["phase"], t["timestep"]
    E = src.size
    split = np.frombuffer(split_bytes, dtype=bool)
    head_at = _first_transfers(split)
    # plain lists: this loop reads single items, which numpy serves slowly
    last_at = head_at + split  # id of a flow's last transfer (its arrival)
    head, last = head_at.tolist(), last_at.tolist()
    splits = split.tolist()
    start: list[set[int]] = [set() for _ in range(E)]
    # What waiting for a transfer already implies: its head for a flow's
    # tail, the flow's own dependencies for its head (kept current as
    # start[] fills). Waiting for a set d implies waiting for each member's
    # cover; dropping those keeps the same start times, and the sets stay
    # small as they carry forward.
    cover: list[Any] = [()] * (E + int(split.sum()))
    for f in range(E):
        cover[head[f]] = start[f]
        if splits[f]:
            cover[head[f] + 1] = (head[f],)

    def pruned(d: set[int]) -> set[int]:
        return d.difference(*[cover[x] for x in d])

    def issued(j: int) -> Any:
        if not lagged:
            return (last[j],)
        return (head[j],) if splits[j] else start[j]

    seqs: dict[int, list[int]] = {}
    for i in np.lexsort((np.arange(E), step, src)).tolist():
        seqs.setdefault(int(src[i]), []).append(i)
    pos = [0] * E
    for seq in seqs.values():
        for k, i in enumerate(seq):
            pos[i] = k
    phase, steps, srcs, dsts = ph.tolist(), step.tolist(), src.tolist(), dst.tolist()
    rs = {v: [i for i in seq if phase[i] <= _RS2] for v, seq in seqs.items()}
    # what the chiplet's flows of earlier timesteps waited for, and this one's
    prev: dict[int, set[int]] = {v: set() for v in seqs}
    cur: dict[int, set[int]] = {v: set() for v in seqs}
    arrivals = last_at[dflat].tolist()
    offs = doff.tolist()
    # every flow waits only for flows of earlier timesteps: in timestep
    # order, what it waits for is known when it comes
    for i in np.lexsort((np.arange(E), step)).tolist():
        v, k = srcs[i], pos[i]
        seq = seqs[v]
        if k and steps[i] != steps[seq[k - 1]]:
            prev[v] = pruned(prev[v] | cur[v])
            cur[v] = set()
        d = set(arrivals[offs[i] : offs[i + 1]])
        d |= prev[v]
        if k >= nis:
            j = seq[k - nis]
            if dsts[j] == dsts[i]:
                d.add(last[j])
            else:
                d.update(issued(j))
        if phase[i] >= _AG1:
            for j in rs[v][-nis:]:
                d.update(issued(j))
        start[i] = pruned(d)
        cover[head[i]] = start[i]
        cur[v] |= start[i]
    lists: list[list[int]] = []
    for i in range(E):
        lists.append(sorted(start[i]))
        if splits[i]:
            lists.append([head[i]])
    return frozen_csr(lists)


register(
    AlgorithmInfo.of(
        "mesh",
        "ring_2d",
        "allreduce",
        variant="artifact",
        families=("mesh",),
        source="sabuj7177/TTO_HPCA_2024 src/allreduce/ring2d_n_allreduce.py "
        "(commit 156128c)",
        summary="the artifact's Ring-2D: per-root bounce chains, half rows then "
        "columns, half columns then rows",
        builder=_ring_2d_artifact,
        parameters={
            "message_bytes": None,
            "dependencies": "data",
            "interfaces": None,
            "issue_lag_messages": ISSUE_LAG_MESSAGES,
        },
        max_ranks=1 << 12,
        label="Ring-2D (artifact)",
        artifact_names=("ring2dn", "ring2dn"),
    )
)
