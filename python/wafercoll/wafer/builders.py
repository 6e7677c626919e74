"""Schedules of the 1D wafer patterns, registered with :func:`wafercoll.build`.

Every pattern is a reduction tree (:mod:`wafercoll.wafer.model`) turned into
a schedule by the core's ``tree_reduce``: the vector of ``B = size_bytes / 4``
wavelets is sent along every tree edge, in blocks of ``wavelets_per_block``
wavelets (by default one block: a single transfer per edge), each block as
soon as the children's copies of it have arrived. A PE takes its children's
streams one at a time, left to right. With the
:func:`~wafercoll.wafer.wse2_network` network model the simulator forwards
each stream wavelet by wavelet, as the wafer does, whatever the block size;
:func:`wafercoll.metrics` derives their energy, distance, depth and
contention (also independent of the block size).

The flooding broadcast of Lemma 4.1 (``wafer_flood_broadcast``,
:func:`flood_broadcast`) is one multicast from PE 0 down the row: the
routers copy every wavelet on as it passes, so the whole row receives the
vector in ``B + P + 2 T_R`` cycles (:func:`wafercoll.wafer.broadcast_time`).

Examples
--------
>>> import wafercoll as wc
>>> s = wc.build("wafer_chain_reduce", 8, 4 * 16)      # 8 PEs, 16 wavelets
>>> m = wc.metrics(s, wc.wafer.wafer_row(8))
>>> (m.depth, m.contention, m.cycles(T_R=2)) == (7, 16, wc.wafer.chain_time(8, 16))
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import kit
from .._util import as_int, as_real
from ..algorithms import AlgorithmInfo, register
from ..topology import Topology, line
from .model import T_R_DEFAULT, binary_tree, chain_tree, star_tree, two_phase_tree
from .reduce1d import autogen

__all__ = [
    "CS2_CLOCK_HZ",
    "WAVELET_BYTES",
    "flood_broadcast",
    "tree_schedule",
    "wafer_row",
]

#: Bytes per wavelet: the WSE moves 32-bit packets (the paper, Section 2.2).
WAVELET_BYTES = 4
#: Clock of the CS-2 in the paper's experiments (Section 8.1: 850 MHz).
CS2_CLOCK_HZ = 850e6


def wafer_row(ranks: int, clock_Hz: float = CS2_CLOCK_HZ) -> Topology:
    """A row of ``ranks`` PEs (the paper's P): a line carrying a wavelet per cycle.

    Links have ``4 * clock_Hz`` bytes per second (the paper, Section 2.2).
    Their own latency is 0: the cycle a wavelet takes per hop is the
    ``hop_latency_s`` of :func:`wafercoll.wafer.wse2_network`, the model to
    simulate with.

    Examples
    --------
    >>> from wafercoll import wafer
    >>> wafer.wafer_row(8)
    <Topology line(8): 8 endpoints, 14 links>
    """
    p = as_int(ranks, "ranks", 1)
    clock = as_real(clock_Hz, "clock_Hz", positive=True)
    return line(p, bandwidth_Bps=WAVELET_BYTES * clock, latency_s=0.0)


def size_wavelets(size_bytes: Any) -> tuple[int, int]:
    """The checked vector size in bytes (a positive multiple of 4) and in wavelets."""
    size = as_int(size_bytes, "size_bytes", WAVELET_BYTES)
    if size % WAVELET_BYTES:
        raise ValueError(
            f"size_bytes must be a multiple of {WAVELET_BYTES} (32-bit wavelets), "
            f"got {size}"
        )
    return size, size // WAVELET_BYTES


def _check_row_tree(par: np.ndarray) -> None:
    """A pre-order, non-crossing tree on a row rooted at PE 0 (Section 5.5)."""
    n = par.size
    if n == 0 or par[0] != -1:
        raise ValueError("parent[0] must be -1 (PE 0 is the root)")
    kids: list[list[int]] = [[] for _ in range(n)]
    for v in range(1, n):
        p = int(par[v])
        if not 0 <= p < v:
            raise ValueError(
                f"parent[{v}] = {p} must be in [0, {v}) (send to the left)"
            )
        kids[p].append(v)
    end = [0] * n
    for v in range(n - 1, -1, -1):
        e = v + 1
        for c in kids[v]:
            if c != e:
                raise ValueError(
                    f"parent is not a pre-order non-crossing tree: PE {c} should "
                    f"start at PE {e}"
                )
            e = end[c]
        end[v] = e


def tree_schedule(
    parent: Any,
    size_bytes: int,
    wavelets_per_block: int | None = None,
    *,
    row: bool = True,
) -> Any:
    """The Reduce schedule of a reduction tree.

    Parameters
    ----------
    parent : array of int
        ``parent[r]`` is the rank ``r`` sends to; the root has -1.
    size_bytes : int
        Vector size, a multiple of 4 (32-bit wavelets).
    wavelets_per_block : int, optional
        Block size in wavelets. The default, the whole vector, makes one
        transfer per stream: the verifier and executor see one message per
        tree edge, and the simulator's dataflow mode (the wafer preset)
        forwards it packet by packet, so the wavelet pipeline is kept. With
        1, every wavelet is its own transfer (the same times, many more
        transfers).
    row : bool
        Require a row tree of Section 5.5: rooted at PE 0, pre-order,
        non-crossing. With ``row=False`` any rooted tree over the ranks is
        accepted (a rank takes its children in increasing rank order).

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll import wafer
    >>> s = wafer.tree_schedule(wafer.chain_tree(4), 4 * 8)
    >>> s.collective, s.num_transfers, wc.verify(s).ok
    ('reduce', 3, True)
    """
    size, B = size_wavelets(size_bytes)
    w = (
        B
        if wavelets_per_block is None
        else as_int(wavelets_per_block, "wavelets_per_block", 1)
    )
    par = np.asarray(parent)
    if par.ndim != 1 or not np.issubdtype(par.dtype, np.integer):
        raise TypeError("parent must be a 1-D integer array")
    if row:
        _check_row_tree(par)
    return kit.tree_reduce(par, size, w * WAVELET_BYTES)


def flood_broadcast(
    ranks: int, size_bytes: int, wavelets_per_block: int | None = None
) -> Any:
    """The flooding broadcast of Lemma 4.1: one multicast from PE 0 to every PE.

    PE 0 sends its vector once; the routers of the row copy every wavelet to
    their PE and on to the next router, so a single multicast transfer to
    PEs ``1 .. ranks - 1`` is the whole schedule (none on one PE). On a
    :func:`wafer_row` the simulator's dataflow mode streams it wavelet by
    wavelet: ``B + P + 2 T_R`` cycles for ``B`` wavelets on ``P`` PEs
    (:func:`wafercoll.wafer.broadcast_time`).

    Parameters
    ----------
    ranks : int
        PEs of the row (the paper's P), >= 1.
    size_bytes : int
        Vector size, a positive multiple of 4 (32-bit wavelets).
    wavelets_per_block : int, optional
        Block size in wavelets (the last block takes the rest). The default,
        the whole vector, is one block; with 1 every wavelet is a block of
        its own, all moved by the same multicast (the same times).

    Returns
    -------
    wafercoll.Schedule
        A broadcast rooted at PE 0.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.wafer.flood_broadcast(8, 4 * 16)            # 8 PEs, 16 wavelets
    >>> wc.verify(s).ok, s.num_transfers
    (True, 1)
    >>> net = wc.wafer.wse2_network(2)                     # T_R = 2
    >>> wc.simulate(s, wc.wafer.wafer_row(8), net).cycles  # B + P + 2 T_R
    28.0
    """
    p = as_int(ranks, "ranks", 1)
    size, B = size_wavelets(size_bytes)
    w = (
        B
        if wavelets_per_block is None
        else min(B, as_int(wavelets_per_block, "wavelets_per_block", 1))
    )
    blocks = kit.split_bytes(size, chunk=w * WAVELET_BYTES, unit=WAVELET_BYTES)
    prog = kit.Program(
        p,
        blocks,
        "broadcast",
        rule="sendrecv",
        root=0,
        name=f"wafer_flood(P={p}, B={B})",
    )
    if p > 1:
        prog.send(0, list(range(1, p)), (0, len(blocks)))
    return prog.schedule()


def _flood_builder(
    p: int, size: int, *, topology: Any = None, wavelets_per_block: int | None = None
) -> Any:
    return flood_broadcast(p, size, wavelets_per_block)


def _pattern(name: str, tree: Callable[[int], np.ndarray]) -> Callable[..., Any]:
    def builder(
        p: int,
        size: int,
        *,
        topology: Any = None,
        wavelets_per_block: int | None = None,
    ) -> Any:
        s = tree_schedule(tree(p), size, wavelets_per_block)
        s.name = f"{name}(P={p}, B={size // WAVELET_BYTES})"
        return s

    return builder


def _autogen_builder(
    p: int,
    size: int,
    *,
    topology: Any = None,
    wavelets_per_block: int | None = None,
    T_R: float = T_R_DEFAULT,
) -> Any:
    B = max(1, as_int(size, "size_bytes", WAVELET_BYTES) // WAVELET_BYTES)
    t = autogen(p, B, T_R)
    s = tree_schedule(t.parent, size, wavelets_per_block)
    s.name = f"wafer_autogen(P={p}, B={B}, T_R={T_R:g})"
    return s


_SOURCE = "Luczynski, Gianinazzi et al., Near-Optimal Wafer-Scale Reduce, HPDC 2024"
_MAX = 1 << 16
#: The paper's names of the 1D patterns (Section 5).
PATTERN_LABELS = {
    "star": "Star",
    "chain": "Chain",
    "tree": "Tree",
    "two_phase": "Two-Phase",
    "autogen": "Auto-Gen",
}
for _alg, _tree, _sec, _summary in (
    ("star", star_tree, "5.1", "every PE streams its vector to the root"),
    (
        "chain",
        chain_tree,
        "5.2",
        "every PE adds and forwards to its left neighbour",
    ),
    ("tree", binary_tree, "5.3", "binary tree: halve the active PEs every round"),
    (
        "two_phase",
        two_phase_tree,
        "5.4",
        "chains in groups of floor(sqrt P) from the far end, then a chain of leaders",
    ),
):
    register(
        AlgorithmInfo.of(
            "wafer",
            _alg,
            "reduce",
            families=("line",),
            source=f"{_SOURCE}, Section {_sec}",
            summary=_summary,
            builder=_pattern(f"wafer_{_alg}", _tree),
            parameters={"wavelets_per_block": None},
            max_ranks=_MAX,
            label=PATTERN_LABELS[_alg],
        )
    )
register(
    AlgorithmInfo.of(
        "wafer",
        "autogen",
        "reduce",
        families=("line",),
        source=f"{_SOURCE}, Section 5.5",
        summary="the reduction tree that minimises the cost model (Auto-Gen DP) "
        "for this B",
        builder=_autogen_builder,
        parameters={"wavelets_per_block": None, "T_R": T_R_DEFAULT},
        max_ranks=_MAX,
        label=PATTERN_LABELS["autogen"],
    )
)
register(
    AlgorithmInfo.of(
        "wafer",
        "flood",
        "broadcast",
        families=("line",),
        source=f"{_SOURCE}, Section 4.2 (Lemma 4.1)",
        summary="one multicast from PE 0 down the row; the routers copy every "
        "wavelet on",
        builder=_flood_builder,
        parameters={"wavelets_per_block": None},
        max_ranks=_MAX,
        label="Flooding broadcast",
    )
)
