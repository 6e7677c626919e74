"""MultiTree as the MCM paper's artifact runs it: its saved trees, its driver's order.

The paper's MultiTree is ``mesh_multitree_allreduce`` (:mod:`.builders`): the
trees of :func:`wafercoll.mcm.multitree` and a dataflow reading of their
steps. The authors' artifact (github.com/sabuj7177/TTO_HPCA_2024 commit
``156128c5``) differs in two ways, and ``mesh_multitree_artifact_allreduce``
(label "MultiTree (artifact)") reproduces both, so that its runs can be set
beside the artifact's committed cycles:

Trees
-----
Every committed MultiTree run loaded its trees from ``src/SavedTrees/
multitree_<N>`` (``--load-tree``; ``MultiTreeAllreduce.compute_trees`` in
``src/allreduce/multitree_allreduce.py``). They are shipped in
``data/mcm_artifact_multitrees.csv`` (``tools/import_mcm_multitree.py``) and
returned by :func:`artifact_multitree`. On 3x3, 5x5, 6x6, 8x8 and 9x9 they are
the trees of ``multitree(side, side)``; on 4x4 every tree differs (same
``T = 10``).

Schedule (the driver's rule)
----------------------------
``MultiTreeAllreduce.generate_schedule`` turns tree ``r``'s edge
``(child c, parent q, time t)`` into a reduce-scatter flow ``c -> q`` of chunk
``r`` at step ``T - 1 - t`` and an allgather flow ``q -> c`` at step ``t``
(one flow per child; chunk ``r`` is ``1 / N`` of the vector). The driver,
``HMC`` in ``src/hmc.py``, runs them per chiplet, with ``strict_schedule``
and four network interfaces (``--radix 4``; one flow per interface):

1. *Data.* A reduce-scatter flow waits until every child of ``c`` in tree
   ``r`` has delivered its whole flow and it has been aggregated
   (``depending_children``, cleared in ``finish_aggregation_update``); an
   allgather flow waits for the whole chunk from ``q``'s parent in tree ``r``
   (``incoming_message_update``). Flows are not pipelined chunk by chunk.
2. *Steps in order, per chiplet.* A chiplet works through its own steps
   (``reduce_scatter_schedule[0]``; steps in which it sends nothing are
   skipped). Within a step a flow starts as soon as it is ready; the next
   step starts only when every flow of this one has been *issued*
   (``new_step`` with ``strict_schedule``: all interfaces free again,
   ``reduce_scatter_evaluate``). There is no barrier between chiplets.
3. *Reduce-scatter, then allgather.* A chiplet starts its allgather once all
   its reduce-scatter flows are issued and its own chunk is fully reduced
   (the last entry of its schedule, ``send_reduce_message_update``); the
   allgather's steps run in order as in 2.
4. *Issued is not delivered.* An interface hands a flow's 8 KiB messages, one
   per cycle, to buffers that the network drains (``send_reduce_message_
   evaluate``): its own ``message_buffer_size`` (32 messages, every committed
   run), BookSim's ``msg_buf_size`` (16, ``booksim_config.cpp``) and the
   injection queue of ``inject_buf_size`` 80 flits (4 messages of 17 flits;
   ``ScaleTrafficManager::_Inject``). A flow of ``m`` messages is therefore
   issued when all but the last ``L = 52`` (:data:`ISSUE_LAG_MESSAGES`) have
   left these buffers, or as soon as it starts when ``m <= L``.

Rule 4 is written with the schedule's own means: a flow of ``m > L``
messages is two transfers, its first ``m - L`` messages and the rest (which
waits for the first), and "issued" is the completion of the first; a flow of
``m <= L`` messages is issued when it is ready, so the next step waits for
what the flow waited for. The router's virtual-channel buffers (4 x 318
flits) can hold more messages still; they are part of the network, not of the
driver, and are not counted in ``L``.

Not modelled: the aggregation's compute time (``npu.aggregate``, a few
hundred cycles per run), the driver's per-event cycles and BookSim's
arbitration among the interfaces (the simulator serves packets first come,
first served).
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
from .trees import MultiTree

__all__ = ["ARTIFACT_MULTITREE_CHIPLETS", "ISSUE_LAG_MESSAGES", "artifact_multitree"]

#: Chiplet counts whose saved trees are shipped (square meshes).
ARTIFACT_MULTITREE_CHIPLETS = (9, 16, 25, 36, 64, 81)
#: The driver's ``message_buffer_size`` (messages), every committed run.
DRIVER_BUFFER_MESSAGES = 32
#: BookSim's ``msg_buf_size`` default (messages), ``booksim_config.cpp``.
BOOKSIM_MESSAGE_BUFFER = 16
#: BookSim's ``inject_buf_size`` default (flits), ``booksim_config.cpp``.
BOOKSIM_INJECT_FLITS = 80
#: Flits of one 8 KiB message: 16 of 512 B and a head flit.
MESSAGE_FLITS = 17
#: Messages a flow has still to send when the driver counts it issued.
ISSUE_LAG_MESSAGES = (
    DRIVER_BUFFER_MESSAGES
    + BOOKSIM_MESSAGE_BUFFER
    + BOOKSIM_INJECT_FLITS // MESSAGE_FLITS
)
_PHASES = ("allreduce", "reduce_scatter", "allgather")


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


class _Flows:
    """Transfers of whole flows, each issued after all but ``lag`` messages."""

    def __init__(self, prog: kit.Program, blocks: np.ndarray, lag: int) -> None:
        self.prog = prog
        self.blocks = blocks  # per tree: its block ids (one, or body and tail)
        self.lag = lag
        self.last: dict[tuple[int, int, int], int] = {}  # (tree, src, dst) -> id

    def send(
        self, tree: int, src: int, dst: int, op: str, deps: set[int], order: int = -1
    ) -> set[int]:
        """Add a flow after ``deps`` (and ``order``); return what "issued" waits for.

        ``order`` is the earlier reduction into the same chunk of ``dst``,
        which the schedule needs before this one but the driver does not
        wait for before it starts sending (it is left out of "issued").
        """
        b = self.blocks[tree]
        after = sorted(deps | ({order} if order >= 0 else set()))
        first = int(self.prog.step(src, dst, int(b[0]), op, deps=[after])[0])
        last = first
        if b.size > 1:  # the messages still buffered when the flow is issued
            last = int(self.prog.step(src, dst, int(b[1]), op, deps=first)[0])
        self.last[tree, src, dst] = last
        return {first} if b.size > 1 else set(deps)


def _multitree_artifact(
    p: int,
    size: int,
    *,
    topology: Any = None,
    issue_lag_messages: int = ISSUE_LAG_MESSAGES,
    phase: str = "allreduce",
) -> Schedule:
    m, n = mesh_shape("mesh_multitree_artifact_allreduce", p, topology)
    if phase not in _PHASES:
        raise ValueError(f"phase must be one of {', '.join(_PHASES)}; got {phase!r}")
    lag = int(issue_lag_messages)
    if lag < 0:
        raise ValueError(f"issue_lag_messages must be >= 0, got {lag}")
    if size < p:
        raise ValueError(f"size_bytes = {size} cannot fill {p} non-empty chunks")
    mt = artifact_multitree(m, n)
    T = mt.steps
    chunk = kit.split_bytes(size, p, allow_empty=False)
    msg = ARTIFACT_MESSAGE_BYTES
    sizes: list[int] = []
    blocks = []
    for b in chunk.tolist():
        k = -(-b // msg)
        parts = [b] if k <= lag else [(k - lag) * msg, b - (k - lag) * msg]
        blocks.append(np.arange(len(sizes), len(sizes) + len(parts)))
        sizes.extend(parts)
    owners = np.concatenate([np.full(bl.size, r) for r, bl in enumerate(blocks)])
    prog = kit.Program(
        p,
        np.asarray(sizes, np.int64),
        phase,
        rule="explicit",
        owners=None if phase == "allreduce" else owners.tolist(),
        name=f"mesh_multitree_artifact({m}x{n}, {size} B, T={T}, lag={lag})",
    )
    fl = _Flows(prog, blocks, lag)
    par = mt.parents
    kids: list[list[list[int]]] = [[[] for _ in range(p)] for _ in range(p)]
    for r in range(p):
        for v in np.flatnonzero(par[r] >= 0).tolist():
            kids[r][int(par[r, v])].append(v)
    rr, vv = np.nonzero(par >= 0)
    tt = mt.times[rr, vv]
    qq = par[rr, vv]
    # per chiplet: its flows step by step, roots in order (generate_schedule)
    rs_steps: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(p)]
    ag_steps: list[dict[int, list[tuple[int, int]]]] = [{} for _ in range(p)]
    for r, v, q, t in zip(
        rr.tolist(), vv.tolist(), qq.tolist(), tt.tolist(), strict=True
    ):
        rs_steps[v].setdefault(T - 1 - t, []).append((r, q))
        ag_steps[q].setdefault(t, []).append((r, v))
    issued: list[set[int]] = [set() for _ in range(p)]  # previous step's flows
    pending: list[set[int]] = [set() for _ in range(p)]
    into: dict[tuple[int, int], int] = {}  # (tree, chiplet) -> last reduction
    if phase in ("allreduce", "reduce_scatter"):
        for s in range(T):  # flows in step order: their inputs come first
            for v in range(p):
                for r, q in rs_steps[v].get(s, []):
                    data = {fl.last[r, c, v] for c in kids[r][v]}
                    before = into.get((r, q), -1)  # writes into one chunk: ordered
                    pending[v] |= fl.send(r, v, q, "reduce", data | issued[v], before)
                    into[r, q] = fl.last[r, v, q]
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
                for r, c in ag_steps[q].get(s, []):
                    data = set() if q == r else {fl.last[r, int(par[r, q]), q]}
                    pending[q] |= fl.send(r, q, c, "copy", data | issued[q])
            for q in range(p):
                if s in ag_steps[q]:
                    issued[q], pending[q] = pending[q], set()
    return prog.schedule()


register(
    AlgorithmInfo.of(
        "mesh",
        "multitree",
        "allreduce",
        variant="artifact",
        families=("mesh",),
        source=(
            "github.com/sabuj7177/TTO_HPCA_2024 commit 156128c5: trees "
            "src/SavedTrees/multitree_<N>; schedule src/allreduce/"
            "multitree_allreduce.py generate_schedule and the driver src/hmc.py "
            "(strict_schedule, four interfaces); not the paper's MultiTree"
        ),
        summary=(
            "MultiTree as the MCM artifact runs it: its saved trees, whole flows, "
            "each chiplet's steps in order (saved meshes 3x3 .. 9x9)"
        ),
        builder=_multitree_artifact,
        parameters={"issue_lag_messages": ISSUE_LAG_MESSAGES},
        max_ranks=81,
        label="MultiTree (artifact)",
        artifact_names=("multitree", "multitree"),
    )
)
