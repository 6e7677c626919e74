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

Rule 6 is written with the schedule's own means: a flow of ``m > L``
messages is two transfers, its first ``m - L`` messages and the rest (which
waits for the first), and "issued" is the completion of the first; a flow of
``m <= L`` messages is issued when it is ready, so the next step waits for
what the flow waited for.

Not modelled: the aggregation's compute time (``npu.aggregate``, a few
hundred cycles per run), the driver's per-event cycles, BookSim's
round-robin arbitration (the default engine serves packets first come,
first served; ``engine="routers"`` takes turns: 13 of the 24 Fig. 8 points
within 5 %, all six on 4x4, against 10 with the default engine; rule 6
already stands for the queues, so it is not used for the comparisons)
and the head-of-line blocking between an interface's flows to
different neighbours once the router's input port is full.

Where flows are longer than the queues of rule 6 (more than ``L``
messages) this model is within 5 % of the committed Fig. 8 cycles (18 of 19
points within 2.5 %); with shorter flows it is 5-20 % slower, and we have
not found why. One candidate is ruled out: the driver takes a child's flow
as received when the message flagged ``end`` arrives (``incoming_message_
evaluate``, l. 882-885), and in the artifact's own run (its driver and
BookSim, 5x5, 21 messages per flow) 103 of the 600 reduce-scatter flows were
taken as complete with 546 of their messages still in the network (the last
packet overtakes earlier ones in the router's virtual channels); but the
same run with a driver that waits for all the messages takes 220375 cycles
against 219661, so this does not account for the difference (ours: 259234).
Not adopted, because it contradicts the driver: with
``issue_lag_messages=0`` (a flow counted issued only once it has fully
arrived, so a chiplet's steps follow one another) 20 of the 24 Fig. 8
points are within 5 % (9.5 % fast to 2.4 % slow), against 10 with ``L = 200``;
but ``send_reduce_message_update`` frees an interface as soon as its last
message is in the 32-message buffer, long before it arrives.
The gap lies in how flows of different interfaces share a link: queueing all
of a chiplet's flows to one neighbour in one queue, as if on one interface,
makes this model 4-11 % fast at the same points instead of 5-20 % slow.
The artifact's own log of 5x5 at 4 MiB (rerun: 219,661 cycles, the committed
figure) shows it. Chiplet 24, a leaf in the trees of its first eight steps,
starts the flows of those steps between cycles 1 and 1,609. Its flows of
steps 0-3 to chiplet 23 (interface 0) arrive at 7,509, 15,006, 22,503 and
30,000, one after another at the link's full rate. Its step-5 flow to chiplet
23, on interface 1 from cycle 895, gets the link only after them and arrives
at 42,495. Here the step-5 flow starts at time 0 with the step-0 one (a
leaf's steps wait for nothing, as a short flow counts as issued when it
starts), the two share the link, and the step-0 flow arrives at 14,649.
The driver gives a flow the lowest interface free when it starts, which
depends on the run's timing; with the interfaces the artifact's own 4x4 run
at 1 MiB used (read from its log) as BookSim nodes of their own on the
artifact's router graph and ``engine="routers"``, this model gives 63,853
cycles against the committed 63,074 (+1.2 %); the same on 5x5 gives +9.3 %,
so there the interfaces do not account for the difference either.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from typing import Any

import numpy as np

from .. import kit
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


def _multitree_artifact(
    p: int,
    size: int,
    *,
    topology: Any = None,
    issue_lag_messages: int = ISSUE_LAG_MESSAGES,
    sibling_parts: int = SIBLING_PARTS,
    phase: str = "allreduce",
    trees: str = "computed",
) -> Schedule:
    m, n = mesh_shape("mesh_multitree_artifact_allreduce", p, topology)
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}; got {phase!r}")
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
        },
        max_ranks=81,
        label="MultiTree (artifact)",
        artifact_names=("multitree", "multitree"),
    )
)
