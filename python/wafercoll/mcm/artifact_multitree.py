"""MultiTree as the MCM paper's artifact runs it: its trees, its driver's order.

The paper's MultiTree is ``mesh_multitree_allreduce`` (:mod:`.builders`): the
trees of :func:`wafercoll.mcm.multitree` and a dataflow reading of their
steps. The authors' artifact (github.com/sabuj7177/TTO_HPCA_2024 commit
``156128c5``) differs in two ways, and ``mesh_multitree_artifact_allreduce``
(label "MultiTree (artifact)") reproduces both, so that its runs can be set
beside the artifact's committed cycles:

Trees
-----
The run script (``utils/run_scripts/bw/multitree_bw.sh``) passes
``--load-tree``: ``MultiTreeAllreduce.compute_trees``
(``src/allreduce/multitree_allreduce.py``) then reads the trees from
``src/SavedTrees/multitree_<N>``; without it, it builds them and writes them
to that file (l. 245), so the file holds the trees of the last run that built
them. The files are shipped in ``data/mcm_artifact_multitrees.csv``
(``tools/import_mcm_multitree.py``) and returned by
:func:`artifact_multitree`. On 3x3, 5x5, 6x6, 8x8 and 9x9 they are the trees
of ``multitree(side, side)``, which are also the trees ``compute_trees``
builds; on 4x4 every saved tree differs (same ``T = 10``), and the committed
4x4 results were not run with them: the artifact run without ``--load-tree``
(its own trees, equal to ``multitree(4, 4)`` edge for edge) gives exactly the
committed cycles at 1, 4 and 16 MiB (63,074, 247,705 and 977,902), with the
saved trees 65,143 and 241,897 at 1 and 4 MiB. So ``trees="computed"`` (the
default) builds from ``multitree(side, side)`` and ``trees="saved"`` from the
shipped files; the two differ on 4x4 only.

Schedule (the driver's rule)
----------------------------
``MultiTreeAllreduce.generate_schedule`` (``multitree_allreduce.py``
l. 281-310) turns tree ``r``'s edge ``(child c, parent q, time t)`` into a
reduce-scatter flow ``c -> q`` of chunk ``r`` at step ``T - 1 - t`` and an
allgather flow ``q -> c`` at step ``t`` (one flow per child; chunk ``r`` is
``1 / N`` of the vector, ``ceil`` of it in 8 KiB messages, ``hmc.py``
l. 99). The driver, ``HMC`` in ``src/hmc.py``, runs them per chiplet, with
``strict_schedule`` and four network interfaces (``--radix 4``; each
interface is a BookSim node of its own, ``booksim.py`` l. 63-77):

1. *Data.* A reduce-scatter flow waits until every child of ``c`` in tree
   ``r`` has delivered its whole flow and it has been aggregated
   (``depending_children``, cleared per child in ``finish_aggregation_
   update``, l. 354-376); an allgather flow waits for the whole chunk from
   ``q``'s parent (``incoming_message_update``, l. 911-927). Flows are not
   pipelined chunk by chunk.
2. *Children in parallel.* A parent counts each child's messages apart
   (``messages_received[flow][child]``, l. 165-173, 883) and aggregates each
   child's flow when it is complete, so two children of one parent send
   their copies of chunk ``r`` at the same time. A schedule must order two
   writes into one block (:mod:`wafercoll.schedule`), so such a reduction is
   cut into :data:`SIBLING_PARTS` parts of the chunk, sent one after another,
   and a later child's part ``k`` waits only for the earlier child's part
   ``k``: the children overlap, the later one lagging one part.
3. *Steps in order, per chiplet.* A chiplet works through its own steps
   (steps in which it sends nothing are skipped, l. 420-434). Within a step a
   flow starts as soon as it is ready, on the lowest free interface (trees
   in order, l. 436-444); the next step starts only when every flow of this
   one has been *issued* (``new_step`` with ``strict_schedule``: all
   interfaces free again, l. 409-411). There is no barrier between chiplets.
4. *One queue per interface.* An interface's messages reach the router in
   order (``to_network_message_buffers``, BookSim's ``_input_buffer`` and
   ``_partial_packets``), so two flows of one interface to the same
   neighbour follow one another; flows from different interfaces share the
   link. Flow ``i`` of a step is given interface ``i``, and a flow waits for
   the previous flow of its interface to the same neighbour.
5. *Reduce-scatter, then allgather.* A chiplet starts its allgather once all
   its reduce-scatter flows are issued and its own chunk is fully reduced
   (the last entry of its schedule, l. 632-640); the allgather's steps run
   in order as in 3.
6. *Issued is not delivered.* An interface hands a flow's messages, one per
   cycle, to queues that the network drains (``send_reduce_message_
   evaluate``, l. 542-572): its own ``message_buffer_size`` (32 messages,
   every committed run), BookSim's ``msg_buf_size`` (16) and the injection
   queue of ``inject_buf_size`` 80 flits (4 messages of 17 flits), then the
   router's input port of the interface and the next router's input port
   for the link, each ``num_vcs`` 4 x ``vc_buf_size`` 318 flits (74
   messages; the modified BookSim link is not pipelined, so flits wait in it
   on the next router's credits). A flow of ``m`` messages is issued when all
   but the last ``L = 200`` (:data:`ISSUE_LAG_MESSAGES`) have left for these
   queues, or as soon as it starts when ``m <= L``. Running the artifact's
   driver and BookSim on 4x4 with 128 messages per flow shows this: the
   second flow of an interface to one neighbour is issued when 200 messages
   are still queued.

Two ways to run it
------------------
``dependencies="interfaces"`` (the default) writes rules 3, 4 and 6 into
the schedule's own dependencies, for any engine: flow ``i`` of a step is
given interface ``i`` and waits for the previous flow of its interface to
the same neighbour; a flow of ``m > L`` messages is two transfers, its
first ``m - L`` messages and the rest, and "issued" is the completion of
the first (a shorter flow is issued when it is ready); a later child's
part ``k`` waits only for the earlier child's part ``k``. On the default
engine 10 of the 24 Fig. 8 points at 1 MiB to 1 GiB in steps of 4x are
within 5 % of the committed cycles:
where flows are longer than ``L`` messages it is within 5 %, with shorter
flows 5-20 % slow.

``dependencies="artifact"`` keeps only the driver's data dependencies
(rules 1, 2 and 5's wait for the chiplet's own chunk), one transfer per
flow, the children of a parent reducing into it at once (a race
:func:`wafercoll.verify` refuses), and leaves the driver to the simulator:
``wc.simulate(s, mesh, ARTIFACT, engine="routers", buffer_packets=74,
driver=wc.mcm.hmc_driver(name, rows, cols))`` (:mod:`wafercoll.mcm.hmc`).
That driver runs rules 3-6 as the artifact's driver and BookSim do, with
what the dependencies could not say: which interface a flow gets depends on
when it starts (the first of ``free_nis``, a Python set, in its iteration
order); an interface's messages enter the router in order whatever their
link, so a flow waits behind the interface's earlier flows to other
neighbours too; once the 52 messages of buffers in front of its channel are
full, the hand-over is paced by that channel (a flit per cycle), so a flow
of 71 messages holds its interface for about 320 cycles, not 71 (Ring-2D on
3x3 in the artifact's log: 314); and each child's flow is aggregated in
turn. With it 41 of the 44 Fig. 8 points (every size the artifact ran,
1 MiB to 1 GiB in steps of 2x) and 13 of the 14 Fig. 9 points are within
5 % (``wafercoll reproduce --only mesh_fig8 mesh_fig9``; Fig. 9 on all 14
meshes with the trees ``compute_trees`` builds, which equal the saved ones
edge for edge on all but 4x4). The artifact's own log shows
what the dependencies missed: on 5x5 at 4 MiB (rerun: 219,661 cycles,
the committed figure), chiplet 24, a leaf in the trees of its first eight
steps, sends its flows of steps 0-3 to chiplet 23 through interface 0 one
after another (they arrive at 7,509, 15,006, 22,503 and 30,000), and its
step-5 flow to chiplet 23, on interface 1 from cycle 895, gets the link
only after them (42,495): with the dependencies the step-5 flow starts at
time 0 beside the step-0 one and the two share the link.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int, frozen_csr
from ..algorithms import AlgorithmInfo, register
from ..schedule import Schedule
from .builders import mesh_shape
from .machine import ARTIFACT_MESSAGE_BYTES
from .trees import MultiTree, multitree

__all__ = [
    "ARTIFACT_MULTITREE_CHIPLETS",
    "ISSUE_LAG_MESSAGES",
    "SIBLING_PARTS",
    "artifact_multitree",
    "driver_flows",
]

#: Chiplet counts whose saved trees are shipped (square meshes).
ARTIFACT_MULTITREE_CHIPLETS = (9, 16, 25, 36, 64, 81)
#: The driver's ``message_buffer_size`` (messages), every committed run.
DRIVER_BUFFER_MESSAGES = 32
#: BookSim's ``msg_buf_size`` default (messages), ``booksim_config.cpp``.
BOOKSIM_MESSAGE_BUFFER = 16
#: BookSim's ``inject_buf_size`` default (flits), ``booksim_config.cpp``.
BOOKSIM_INJECT_FLITS = 80
#: ``num_vcs`` x ``vc_buf_size`` of ``anynet_mesh_*_200.cfg`` (flits): one
#: router input port.
ROUTER_PORT_FLITS = 4 * 318
#: Flits of one 8 KiB message: 16 of 512 B and a head flit.
MESSAGE_FLITS = 17
#: Messages a flow has still to send when the driver counts it issued: the
#: three queues in front of the router, the router's input port of the
#: interface and the input port of the next router (whose credits the
#: non-pipelined link spends while the flits wait in it).
ISSUE_LAG_MESSAGES = (
    DRIVER_BUFFER_MESSAGES
    + BOOKSIM_MESSAGE_BUFFER
    + BOOKSIM_INJECT_FLITS // MESSAGE_FLITS
    + 2 * (ROUTER_PORT_FLITS // MESSAGE_FLITS)
)
#: Parts of a chunk that sibling reductions write one after another.
SIBLING_PARTS = 8
_PHASES = ("allreduce", "reduce_scatter", "allgather")
#: ``dependencies`` of the builder: the interfaces kept in the dependencies
#: (the default), or only the driver's data dependencies, one transfer per
#: flow, for :class:`wafercoll.Driver` to run.
_DEPENDENCIES = ("interfaces", "artifact")
#: ``trees`` of the builder: what ``compute_trees`` builds, or the saved files.
_TREES = ("computed", "saved")


@functools.lru_cache(maxsize=1)
def _edges() -> dict[int, np.ndarray]:
    """Rows ``(root, child, parent, step)`` per chiplet count, in file order."""
    text = files("wafercoll.mcm").joinpath("data", "mcm_artifact_multitrees.csv")
    lines = [ln for ln in text.read_text().splitlines() if ln and ln[0] != "#"]
    a = np.array([ln.split(",") for ln in lines[1:]], dtype=np.int64)
    out = {}
    for n in np.unique(a[:, 0]):
        rows = a[a[:, 0] == n, 1:]
        rows.setflags(write=False)
        out[int(n)] = rows
    return out


def artifact_multitree(rows: int, cols: int) -> MultiTree:
    """The MultiTree trees the artifact saved for a ``rows x cols`` mesh.

    Parameters
    ----------
    rows, cols : int
        A square mesh whose chiplet count is in
        :data:`ARTIFACT_MULTITREE_CHIPLETS`.

    Returns
    -------
    MultiTree
        ``parents``, ``times`` and ``steps`` as in
        :func:`wafercoll.mcm.multitree`; ``rule`` is ``"artifact"``.

    Examples
    --------
    >>> from wafercoll import mcm
    >>> t = mcm.artifact_multitree(4, 4)
    >>> t.steps, int(t.parents[0, 15]), int(t.times[0, 15])
    (10, 14, 6)
    """
    m, n = int(rows), int(cols)
    if m != n or m * n not in ARTIFACT_MULTITREE_CHIPLETS:
        raise ValueError(
            f"the artifact saved MultiTree trees for square meshes of "
            f"{', '.join(map(str, ARTIFACT_MULTITREE_CHIPLETS))} chiplets; "
            f"not for {m}x{n}"
        )
    N = m * n
    e = _edges()[N]
    parents = np.full((N, N), -2, dtype=np.int64)
    times = np.full((N, N), -1, dtype=np.int64)
    parents[np.arange(N), np.arange(N)] = -1
    parents[e[:, 0], e[:, 1]] = e[:, 2]
    times[e[:, 0], e[:, 1]] = e[:, 3]
    return MultiTree(m, n, parents, times, int(e[:, 3].max()) + 1, "artifact", True)


def _cuts(messages: int, lag: int, parts: int) -> list[int]:
    """Message boundaries of a chunk: ``parts`` near-equal parts and ``m - lag``."""
    cuts = {round(i * messages / parts) for i in range(parts + 1)}
    if messages > lag:
        cuts.add(messages - lag)
    return sorted(cuts)


class _Flows:
    """Flows of whole chunks over the chunk's parts (see the module docstring).

    The transfers are kept here and added to the program in one step at the
    end (:meth:`flush`): thousands of one-transfer steps would cost more
    than the rest of the build.
    """

    def __init__(
        self, prog: kit.Program, first: list[int], issue: list[int], kids: list
    ) -> None:
        self.prog = prog
        self.first = first  # per tree: its first block id
        self.issue = issue  # per tree: the part whose end issues a flow, or -1
        self.nparts = [0] * len(first)
        self.kids = kids  # kids[tree][chiplet]: children in the tree
        self.last: dict[tuple[int, int, int], int] = {}  # (tree, src, dst) -> id
        self.queue: dict[tuple[int, int, int], int] = {}  # (src, ni, dst) -> id
        self.into: dict[tuple[int, int], list[int]] = {}  # (tree, dst) -> parts
        self.base = len(prog)  # id of the first transfer kept here
        # per transfer kept: source, destination, block range, op, dependencies
        self.rows: list[tuple[int, int, int, int, int]] = []
        self.deps: list[list[int]] = []

    def send(
        self, tree: int, src: int, dst: int, op: str, deps: set[int], ni: int
    ) -> set[int]:
        """Add a flow after ``deps``; return what "issued" waits for."""
        n = self.nparts[tree]
        i = self.issue[tree]
        prev = self.into.get((tree, dst)) if op == "reduce" else None
        if op == "reduce" and len(self.kids[tree][dst]) > 1:
            spans = [(k, k + 1) for k in range(n)]  # siblings follow part by part
        elif 0 <= i < n - 1:
            spans = [(0, i + 1), (i + 1, n)]
        else:
            spans = [(0, n)]
        ids: list[int] = []
        q = self.queue.get((src, ni, dst))
        code = 1 if op == "reduce" else 0
        for lo, hi in spans:
            after = set(deps) if not ids else {ids[-1]}
            if not ids and q is not None:
                after.add(q)
            if prev is not None:
                after.update(prev[lo:hi])
            b = self.first[tree]
            t = self.base + len(self.rows)
            self.rows.append((src, dst, b + lo, b + hi, code))
            self.deps.append(sorted(after))
            ids.extend([t] * (hi - lo))
        self.last[tree, src, dst] = ids[-1]
        self.queue[src, ni, dst] = ids[-1]
        if op == "reduce":
            self.into[tree, dst] = ids
        return {ids[i]} if i >= 0 else set(deps)

    def flush(self) -> None:
        """Add every flow kept to the program, in the order they were sent."""
        if not self.rows:
            return
        src, dst, lo, hi, op = np.asarray(self.rows, np.int64).T
        self.prog.step(src, dst, (lo, hi), op, deps=self.deps)
        self.base += len(self.rows)
        self.rows, self.deps = [], []


def _trees(m: int, n: int, trees: str) -> MultiTree:
    if trees not in _TREES:
        raise ValueError(f"trees must be one of {', '.join(_TREES)}; got {trees!r}")
    if trees == "saved":
        return artifact_multitree(m, n)
    return multitree(m, n)


@functools.lru_cache(maxsize=8)
def _driver_rows(m: int, n: int, trees: str, phase: str) -> dict[str, np.ndarray]:
    """The flows of :func:`driver_flows`, cached (read-only arrays)."""
    mt = _trees(m, n, trees)
    p, T, par = m * n, mt.steps, mt.parents
    kids: list[list[list[int]]] = [[[] for _ in range(p)] for _ in range(p)]
    for r in range(p):
        for v in np.flatnonzero(par[r] >= 0).tolist():
            kids[r][int(par[r, v])].append(v)
    rr, vv = np.nonzero(par >= 0)
    tt = mt.times[rr, vv].tolist()
    rr, vv = rr.tolist(), vv.tolist()
    rows: list[tuple[int, int, int, int, int]] = []  # src, dst, chunk, reduce, step
    deps: list[list[int]] = []
    rs: dict[tuple[int, int], int] = {}  # (tree, child) -> its reduce flow
    if phase in ("allreduce", "reduce_scatter"):
        for s, r, v in sorted(zip([T - 1 - t for t in tt], rr, vv, strict=True)):
            rs[r, v] = len(rows)
            rows.append((v, int(par[r, v]), r, 1, s))
        for i in range(len(rows)):
            v, _, r, _, _ = rows[i]
            deps.append(sorted(rs[r, c] for c in kids[r][v]))
    if phase in ("allreduce", "allgather"):
        ag: dict[tuple[int, int], int] = {}  # (tree, child) -> its copy flow
        for t, r, c in sorted(zip(tt, rr, vv, strict=True)):
            q = int(par[r, c])
            ag[r, c] = len(rows)
            rows.append((q, c, r, 0, T + t))
            d = {rs[q, k] for k in kids[q][q]} if rs else set()  # own chunk reduced
            if q != r:
                d.add(ag[r, q])
            deps.append(sorted(d))
    out = {
        k: np.asarray([row[j] for row in rows], np.int64)
        for j, k in enumerate(("src", "dst", "chunk", "reduce", "step"))
    }
    for v in out.values():
        v.setflags(write=False)
    out["dep_flat"], out["dep_offsets"] = frozen_csr(deps)
    return out


def driver_flows(
    rows: int, cols: int, trees: str = "computed", phase: str = "allreduce"
) -> dict[str, np.ndarray]:
    """The flows of ``dependencies="artifact"``, in the schedule's order.

    One transfer per flow of ``generate_schedule``: tree ``r``'s edge
    ``(child c, parent q, time t)`` is a reduction ``c -> q`` of chunk ``r``
    at the chiplet's step ``T - 1 - t`` and a copy ``q -> c`` at step
    ``T + t``. A reduction waits for the reductions of ``c``'s children in
    tree ``r``; a copy for the chunk from ``q``'s parent and for ``q``'s own
    chunk (the driver's allgather starts after it). Two children of one
    parent reduce into it at once, as the driver lets them (``hmc.py``
    counts each child's messages apart): a race the verifier refuses.

    Returns
    -------
    dict of str to ndarray
        ``src``, ``dst``, ``chunk``, ``reduce`` (1 or 0) and ``step`` (the
        chiplet's issue step, for :class:`wafercoll.Driver`) per flow, and
        the dependencies as CSR ``dep_flat``, ``dep_offsets`` (read-only).

    Examples
    --------
    >>> from wafercoll.mcm.artifact_multitree import driver_flows
    >>> f = driver_flows(3, 3)
    >>> f["src"].size, int(f["reduce"].sum())  # 9 trees of 8 edges, both ways
    (144, 72)
    """
    m = as_int(rows, "rows", 1, 64)
    n = as_int(cols, "cols", 1, 64)
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}; got {phase!r}")
    return _driver_rows(m, n, trees, phase)


def _multitree_artifact(
    p: int,
    size: int,
    *,
    topology: Any = None,
    issue_lag_messages: int = ISSUE_LAG_MESSAGES,
    sibling_parts: int = SIBLING_PARTS,
    phase: str = "allreduce",
    trees: str = "computed",
    dependencies: str = "interfaces",
) -> Schedule:
    m, n = mesh_shape("mesh_multitree_artifact_allreduce", p, topology)
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}; got {phase!r}")
    if dependencies not in _DEPENDENCIES:
        raise ValueError(
            f"dependencies must be one of {', '.join(_DEPENDENCIES)}; "
            f"got {dependencies!r}"
        )
    if dependencies == "artifact":
        if size < p:
            raise ValueError(f"size_bytes = {size} cannot fill {p} non-empty chunks")
        f = driver_flows(m, n, trees, phase)
        prog = kit.Program(
            p,
            kit.split_bytes(size, p, allow_empty=False),
            phase,
            rule="explicit",
            owners=None if phase == "allreduce" else list(range(p)),
            name=f"mesh_multitree_artifact({m}x{n}, {size} B, {trees}, driver's flows)",
        )
        prog.step(
            f["src"],
            f["dst"],
            f["chunk"],
            f["reduce"],
            deps=(f["dep_flat"], f["dep_offsets"]),
        )
        return prog.schedule()
    lag = int(issue_lag_messages)
    if lag < 0:
        raise ValueError(f"issue_lag_messages must be >= 0, got {lag}")
    parts = int(sibling_parts)
    if parts < 1:
        raise ValueError(f"sibling_parts must be >= 1, got {parts}")
    if size < p:
        raise ValueError(f"size_bytes = {size} cannot fill {p} non-empty chunks")
    if trees not in _TREES:
        raise ValueError(f"trees must be one of {', '.join(_TREES)}; got {trees!r}")
    mt = artifact_multitree(m, n)  # also refuses meshes the artifact never ran
    if trees == "computed":
        mt = multitree(m, n)
    T = mt.steps
    chunk = kit.split_bytes(size, p, allow_empty=False)
    msg = ARTIFACT_MESSAGE_BYTES
    sizes: list[int] = []
    first: list[int] = []
    issue: list[int] = []
    counts: list[int] = []
    for b in chunk.tolist():
        k = -(-b // msg)
        cuts = _cuts(k, lag, min(parts, k))
        edges = [min(c * msg, b) for c in cuts]
        first.append(len(sizes))
        sizes.extend(np.diff(edges).tolist())
        counts.append(len(cuts) - 1)
        issue.append(cuts.index(k - lag) - 1 if k > lag else -1)
    owners = np.concatenate([np.full(c, r) for r, c in enumerate(counts)])
    prog = kit.Program(
        p,
        np.asarray(sizes, np.int64),
        phase,
        rule="explicit",
        owners=None if phase == "allreduce" else owners.tolist(),
        name=f"mesh_multitree_artifact({m}x{n}, {size} B, T={T}, lag={lag}, {trees})",
    )
    par = mt.parents
    kids: list[list[list[int]]] = [[[] for _ in range(p)] for _ in range(p)]
    for r in range(p):
        for v in np.flatnonzero(par[r] >= 0).tolist():
            kids[r][int(par[r, v])].append(v)
    fl = _Flows(prog, first, issue, kids)
    fl.nparts = counts
    rr, vv = np.nonzero(par >= 0)
    tt = mt.times[rr, vv]
    qq = par[rr, vv]
    # per chiplet: its flows step by step, trees in order (generate_schedule)
    rs_steps: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(p)]
    ag_steps: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(p)]
    for r, v, q, t in zip(
        rr.tolist(), vv.tolist(), qq.tolist(), tt.tolist(), strict=True
    ):
        rs_steps[v].setdefault(T - 1 - t, []).append((r, q))
        ag_steps[q].setdefault(t, []).append((r, v))
    issued: list[set[int]] = [set() for _ in range(p)]  # previous step's flows
    pending: list[set[int]] = [set() for _ in range(p)]
    if phase in ("allreduce", "reduce_scatter"):
        for s in range(T):  # flows in step order: their inputs come first
            for v in range(p):
                for ni, (r, q) in enumerate(sorted(rs_steps[v].get(s, []))):
                    data = {fl.last[r, c, v] for c in kids[r][v]}
                    pending[v] |= fl.send(r, v, q, "reduce", data | issued[v], ni)
            for v in range(p):
                if s in rs_steps[v]:
                    issued[v], pending[v] = pending[v], set()
    if phase in ("allreduce", "allgather"):
        for v in range(p):  # the allgather starts after the chiplet's own chunk
            if phase == "allreduce":
                issued[v] |= {fl.last[v, c, v] for c in kids[v][v]}
            else:
                issued[v] = set()
        for s in range(T):
            for q in range(p):
                for ni, (r, c) in enumerate(sorted(ag_steps[q].get(s, []))):
                    data = set() if q == r else {fl.last[r, int(par[r, q]), q]}
                    pending[q] |= fl.send(r, q, c, "copy", data | issued[q], ni)
            for q in range(p):
                if s in ag_steps[q]:
                    issued[q], pending[q] = pending[q], set()
    fl.flush()
    return prog.schedule()


register(
    AlgorithmInfo.of(
        "mesh",
        "multitree",
        "allreduce",
        variant="artifact",
        families=("mesh",),
        source=(
            "github.com/sabuj7177/TTO_HPCA_2024 commit 156128c5: trees of "
            "compute_trees (or src/SavedTrees/multitree_<N>); schedule src/allreduce/"
            "multitree_allreduce.py generate_schedule and the driver src/hmc.py "
            "(strict_schedule, four interfaces); not the paper's MultiTree"
        ),
        summary=(
            "MultiTree as the MCM artifact runs it: its trees, whole flows, "
            "each chiplet's steps in order (the artifact's meshes 3x3 .. 9x9)"
        ),
        builder=_multitree_artifact,
        parameters={
            "issue_lag_messages": ISSUE_LAG_MESSAGES,
            "sibling_parts": SIBLING_PARTS,
            "trees": "computed",
            "dependencies": "interfaces",
        },
        max_ranks=256,
        label="MultiTree (artifact)",
        artifact_names=("multitree", "multitree"),
    )
)
