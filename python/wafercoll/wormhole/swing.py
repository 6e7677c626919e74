"""Peers and block rules of Swing and recursive doubling on tori.

Swing (De Sensi, Bonato, Saam, Hoefler, NSDI 2024; the thesis ``002``,
Section 3.2) pairs rank ``r`` at step ``s`` of a ring of ``p`` ranks with

* ``pi(r, s) = (r + rho(s)) mod p`` if ``r`` is even, ``(r - rho(s)) mod p``
  if ``r`` is odd, where
* ``rho(s) = sum_{i=0}^{s} (-2)^i = (1 - (-2)^(s+1)) / 3`` = 1, -1, 3, -5, 11, ...

(equations 3.1 and 3.2 of the thesis). Recursive doubling pairs ``r`` with
``r XOR 2^s``. On a 2D torus each step works in one dimension and uses that
dimension's own step counter (equation 3.3); the dimensions alternate,
starting with ``first`` (``"x"``, the thesis's horizontal first step, or
``"y"``), and a dimension of size ``d`` takes ``ceil(log2 d)`` steps
(recovered details, Section 5.2).

Ranks are row-major: rank ``y * cols + x`` sits at row ``y`` and column
``x`` (the layout of :func:`wafercoll.wormhole`).

The bandwidth-optimal block rule (recovered details, Section 5.3): with
``Reach(q, s)`` the ranks reached from ``q`` using steps ``s, s+1, ...``
(``q`` included), rank ``r`` sends block ``b`` at step ``s`` of the
reduce-scatter to ``pi(r, s)`` if ``b`` is in ``Reach(pi(r, s), s + 1)``;
when several steps qualify (``p`` not a power of two) the latest one wins,
and ``r`` never sends its own block. Block ``b`` ends at rank ``b``. For
every even size this gives a correct reduce-scatter in which each rank sends
each other block exactly once (the tests check it with the verifier).
:func:`reduce_scatter_steps` extends it to sides the peer rule cannot pair
(odd sides; sides of recursive doubling that are not powers of two) with a
ring over the side's odd factor, so the reduce-scatter stays minimal.

Examples
--------
>>> from wafercoll.wormhole import swing_peer
>>> [swing_peer(0, s, 8) for s in range(3)]
[1, 7, 3]
>>> from wafercoll.wormhole.swing import send_blocks
>>> send_blocks("swing", (1, 8))[0]
[[1, 2, 5, 6], [4, 7], [3]]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._util import as_int

__all__ = [
    "ALGORITHMS",
    "MAX_GRID_RANKS",
    "rd_peer",
    "reduce_scatter_steps",
    "rho",
    "send_blocks",
    "send_mask",
    "step_plan",
    "steps_of",
    "swing_peer",
    "peer_table",
]

#: Peer rules: ``"swing"`` and ``"rd"`` (recursive doubling).
ALGORITHMS = ("swing", "rd")
#: Largest number of ranks the peer tables and block rules accept (the block
#: masks take ``ceil(log2 p) * p * p`` bytes).
MAX_GRID_RANKS = 1024


def rho(s: int) -> int:
    """Signed Swing distance of step ``s``: ``(1 - (-2)^(s+1)) / 3``.

    Parameters
    ----------
    s : int
        Step, ``0 <= s <= 60``.

    Returns
    -------
    int
        1, -1, 3, -5, 11, -21, ... (equation 3.2 of the thesis).

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> [wormhole.rho(s) for s in range(5)]
    [1, -1, 3, -5, 11]
    """
    k = as_int(s, "s", 0, 60)
    return (1 - (-2) ** (k + 1)) // 3


def steps_of(d: int) -> int:
    """Steps a dimension of size ``d`` takes: ``ceil(log2 d)`` (0 for d = 1)."""
    return (as_int(d, "d", 1) - 1).bit_length()


def swing_peer(r: int, s: int, p: int) -> int:
    """Swing's peer of rank ``r`` at step ``s`` on a ring of ``p`` ranks.

    Parameters
    ----------
    r : int
        Rank, ``0 <= r < p``.
    s : int
        Step, ``0 <= s <= 60``.
    p : int
        Ring size, ``p >= 1``.

    Returns
    -------
    int
        ``(r + rho(s)) mod p`` for even ``r``, ``(r - rho(s)) mod p`` for odd
        ``r`` (equation 3.1 of the thesis). An involution for even ``p``.

    Raises
    ------
    TypeError, ValueError
        For a non-integer or out-of-range argument.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> [wormhole.swing_peer(0, s, 8) for s in range(3)]
    [1, 7, 3]
    """
    n = as_int(p, "p", 1)
    rank = as_int(r, "r", 0, n - 1)
    d = rho(s)
    return (rank + d) % n if rank % 2 == 0 else (rank - d) % n


def rd_peer(r: int, s: int, p: int) -> int:
    """Recursive doubling's peer of rank ``r`` at step ``s``: ``r XOR 2^s``.

    Parameters
    ----------
    r : int
        Rank, ``0 <= r < p``.
    s : int
        Step, ``0 <= s < log2 p``.
    p : int
        Number of ranks, a power of two.

    Raises
    ------
    ValueError
        If ``p`` is not a power of two or ``s`` is not a step of it.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> [wormhole.rd_peer(0, s, 8) for s in range(3)]
    [1, 2, 4]
    """
    n = as_int(p, "p", 1)
    if n & (n - 1):
        raise ValueError(f"p must be a power of two for recursive doubling, got {n}")
    rank = as_int(r, "r", 0, n - 1)
    k = as_int(s, "s", 0, max(n.bit_length() - 2, 0))
    if n == 1:
        raise ValueError("p = 1 has no recursive-doubling steps")
    return rank ^ (1 << k)


def _check_dims(dims: Any) -> tuple[int, int]:
    """``(rows, cols)`` from a pair or a single ring size."""
    if isinstance(dims, (int, np.integer)):
        dims = (1, dims)
    if not isinstance(dims, (tuple, list)) or len(dims) != 2:
        raise TypeError(f"dims must be an int or a (rows, cols) pair, got {dims!r}")
    rows = as_int(dims[0], "rows", 1)
    cols = as_int(dims[1], "cols", 1)
    if rows * cols > MAX_GRID_RANKS:
        raise ValueError(
            f"rows * cols = {rows * cols} exceeds the limit of {MAX_GRID_RANKS} ranks"
        )
    return rows, cols


def _check_first(first: Any) -> int:
    """Axis of the first step: 1 for ``"x"`` (columns), 0 for ``"y"`` (rows)."""
    if first not in ("x", "y"):
        raise ValueError(f"first must be 'x' or 'y', got {first!r}")
    return 1 if first == "x" else 0


def step_plan(dims: Any, first: str = "x") -> list[tuple[str, int]]:
    """Dimension and per-dimension step of every step on a ``rows x cols`` torus.

    Parameters
    ----------
    dims : int or (int, int)
        ``(rows, cols)``, or ``p`` for a ring of ``p`` (one row).
    first : {"x", "y"}
        Dimension of the first step; the dimensions then alternate, skipping
        one whose ``ceil(log2 d)`` steps are used up.

    Returns
    -------
    list of (str, int)
        ``("x", k)``: the ``k``-th step along the rows (changing the column);
        ``("y", k)``: along the columns. On 8 x 8 with ``first="x"``:
        x0, y0, x1, y1, x2, y2.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> wormhole.step_plan((4, 4))
    [('x', 0), ('y', 0), ('x', 1), ('y', 1)]
    """
    rows, cols = _check_dims(dims)
    axis = _check_first(first)
    count = [steps_of(rows), steps_of(cols)]
    used = [0, 0]
    out: list[tuple[str, int]] = []
    while used[0] < count[0] or used[1] < count[1]:
        if used[axis] < count[axis]:
            out.append(("y" if axis == 0 else "x", used[axis]))
            used[axis] += 1
        axis ^= 1
    return out


def _coord_peers(algorithm: str, d: int, k: int) -> np.ndarray:
    """Peer coordinate of every coordinate ``0 .. d-1`` at that dimension's step k."""
    c = np.arange(d, dtype=np.int64)
    if algorithm == "swing":
        dist = rho(k)
        return np.where(c % 2 == 0, (c + dist) % d, (c - dist) % d)
    if d & (d - 1):
        raise ValueError(
            f"recursive doubling needs power-of-two dimensions, got a side of {d}"
        )
    return c ^ (1 << k)


def peer_table(algorithm: str, dims: Any, first: str = "x") -> np.ndarray:
    """Peer of every rank at every step.

    Parameters
    ----------
    algorithm : {"swing", "rd"}
        Peer rule; ``"rd"`` needs power-of-two sides.
    dims : int or (int, int)
        ``(rows, cols)`` or a ring size.
    first : {"x", "y"}
        Dimension of the first step (see :func:`step_plan`).

    Returns
    -------
    numpy.ndarray
        ``(steps, rows * cols)`` int64; ``[s, r]`` is the peer of ``r`` at
        step ``s``.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> wormhole.peer_table("swing", (1, 8)).tolist()[:2]
    [[1, 0, 3, 2, 5, 4, 7, 6], [7, 2, 1, 4, 3, 6, 5, 0]]
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be 'swing' or 'rd', got {algorithm!r}")
    rows, cols = _check_dims(dims)
    plan = step_plan((rows, cols), first)
    y, x = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    table = np.empty((len(plan), rows * cols), dtype=np.int64)
    for s, (dim, k) in enumerate(plan):
        if dim == "x":
            table[s] = y * cols + _coord_peers(algorithm, cols, k)[x]
        else:
            table[s] = _coord_peers(algorithm, rows, k)[y] * cols + x
    return table


def send_mask(peers: np.ndarray) -> np.ndarray:
    """Reduce-scatter blocks by the latest-step reach rule.

    Parameters
    ----------
    peers : numpy.ndarray
        ``(steps, p)`` table of involutions (:func:`peer_table`).

    Returns
    -------
    numpy.ndarray
        ``(steps, p, p)`` bool: ``[s, r, b]`` when rank ``r`` sends block
        ``b`` to ``peers[s, r]`` at step ``s``.

    Raises
    ------
    ValueError
        If a step is not an involution, or some block is never sent by some
        rank (the steps do not connect every pair).
    """
    table = np.asarray(peers, dtype=np.int64)
    steps, p = table.shape
    idx = np.arange(p)
    for s in range(steps):
        if not np.array_equal(table[s][table[s]], idx):
            raise ValueError(f"step {s} does not pair the ranks (not an involution)")
    reach = np.eye(p, dtype=bool)  # Reach(q, steps) = {q}
    assigned = np.eye(p, dtype=bool)  # a rank never sends its own block
    mask = np.zeros((steps, p, p), dtype=bool)
    # Walking the steps backwards, reach holds Reach(., s + 1) when step s is
    # handled, and the first step that claims a block is the latest one.
    for s in range(steps - 1, -1, -1):
        via = reach[table[s]]
        mask[s] = via & ~assigned
        assigned |= mask[s]
        reach |= via
    if not assigned.all():
        r, b = np.argwhere(~assigned)[0]
        raise ValueError(f"rank {r} never sends block {b}: the steps miss a pair")
    return mask


def _side_stages(algorithm: str, d: int) -> list[tuple[str, int, int]]:
    """How one side of ``d`` coordinates is reduce-scattered.

    Returns ``(kind, stride, size)`` stages whose digits
    ``(c // stride) % size`` of a coordinate ``c`` together fix ``c``:
    Swing pairs a whole even side; recursive doubling pairs the
    power-of-two factor ``2^k`` of ``d = 2^k m`` (stride 1) and a ring
    reduce-scatters the odd factor ``m`` (stride ``2^k``); an odd Swing side
    is one ring.
    """
    if d == 1:
        return []
    if algorithm == "swing":
        return [("swing", 1, d)] if d % 2 == 0 else [("ring", 1, d)]
    two = d & -d
    stages = [("rd", 1, two)] if two > 1 else []
    if d > two:
        stages.append(("ring", two, d // two))
    return stages


class _Stage:
    """A 1-D reduce-scatter over the digit ``(c // stride) % n`` of one axis.

    A ring of ``n`` takes ``n - 1`` steps: at step ``t`` digit ``u`` sends
    block ``(u - t - 1) mod n`` to ``u + 1`` and adds the block
    ``(u - t - 2) mod n`` from ``u - 1``, so ``u`` ends with block ``u``; its
    steps are made when asked for (a table of them would take ``n^3`` bytes).
    Swing and recursive doubling take their peers and :func:`send_mask`.
    """

    def __init__(
        self, axis: int, kind: str, stride: int, n: int, coord: np.ndarray
    ) -> None:
        self.axis, self.kind, self.stride, self.n = axis, kind, stride, n
        self.digit = (coord // stride) % n  # every rank's digit
        # [r, b]: rank r still holds block b's digit of this stage (not sent).
        self.held = np.ones((coord.size, coord.size), dtype=bool)
        if kind == "ring":
            self.steps = n - 1
        else:
            self._peers = np.stack(
                [_coord_peers(kind, n, k) for k in range(steps_of(n))]
            )
            self._sends = send_mask(self._peers)
            self.steps = len(self._peers)

    def peers(self, t: int) -> np.ndarray:
        """``(n,)``: the digit each digit sends to at step ``t``."""
        if self.kind == "ring":
            return (np.arange(self.n, dtype=np.int64) + 1) % self.n
        return self._peers[t]

    def sends(self, t: int) -> np.ndarray:
        """``(n, n)`` bool: ``[u, b]`` when digit ``u`` sends digit ``b``."""
        if self.kind != "ring":
            return self._sends[t]
        u = np.arange(self.n)
        out = np.zeros((self.n, self.n), dtype=bool)
        out[u, (u - t - 1) % self.n] = True
        return out


def reduce_scatter_steps(
    algorithm: str, dims: Any, first: str = "x"
) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """The bandwidth-optimal reduce-scatter on any ``rows x cols`` torus.

    Each side is cut into stages (see below) and each stage is a 1-D
    reduce-scatter over one digit of the coordinate. A step of a stage moves
    the blocks whose digit of that stage the 1-D rule sends and whose other
    digits the rank still holds (the product of the 1-D rules, which on
    power-of-two sides is the reach rule of :func:`send_mask`). Every rank
    ends with its own block and sends each other block exactly once:
    ``(p - 1) / p`` of the vector.

    Stages of a side of ``d = 2^k m`` (``m`` odd):

    * Swing, ``d`` even: Swing's peers and the latest-step block rule on the
      whole side, ``ceil(log2 d)`` steps;
    * recursive doubling: ``r XOR 2^s`` on the ``2^k`` factor (neighbouring
      coordinates), ``k`` steps;
    * the odd factor (and a whole odd Swing side): a ring reduce-scatter
      between coordinates ``2^k`` apart (the ring closes through the
      torus's wrap link), ``m - 1`` steps.

    The peer-rule steps of both sides alternate as in :func:`step_plan`;
    the ring stages follow, the dimension of ``first`` first.

    Parameters
    ----------
    algorithm : {"swing", "rd"}
    dims : int or (int, int)
        ``(rows, cols)`` or a ring size; any sizes.
    first : {"x", "y"}
        Dimension of the first step.

    Yields
    ------
    label : str
        ``"x:rd1"``, ``"y:ring0"``, ...: dimension, stage kind and step.
    dst : numpy.ndarray
        ``(p,)`` int64, where each rank sends at this step.
    mask : numpy.ndarray
        ``(p, p)`` bool, ``[r, b]`` when rank ``r`` sends block ``b``.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> steps = wormhole.reduce_scatter_steps("swing", (1, 4))
    >>> [(name, peers.tolist()) for name, peers, _ in steps]
    [('x:swing0', [1, 0, 3, 2]), ('x:swing1', [3, 2, 1, 0])]
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be 'swing' or 'rd', got {algorithm!r}")
    rows, cols = _check_dims(dims)
    axis = _check_first(first)
    p = rows * cols
    coord = np.divmod(np.arange(p, dtype=np.int64), cols)
    stages = [
        _Stage(ax, kind, stride, n, coord[ax])
        for ax, d in ((0, rows), (1, cols))
        for kind, stride, n in _side_stages(algorithm, d)
    ]
    # Peer-rule steps alternate between the dimensions (as in step_plan);
    # each dimension has at most one peer-rule stage.
    rule = [
        [st for st in stages if st.axis == ax and st.kind != "ring"] for ax in (0, 1)
    ]
    left = [r[0].steps if r else 0 for r in rule]
    order: list[tuple[_Stage, int]] = []
    ax = axis
    while left[0] or left[1]:
        if left[ax]:
            st = rule[ax][0]
            order.append((st, st.steps - left[ax]))
            left[ax] -= 1
        ax ^= 1
    for ax in (axis, axis ^ 1):
        for st in stages:
            if st.axis == ax and st.kind == "ring":
                order.extend((st, t) for t in range(st.steps))
    ranks = np.arange(p, dtype=np.int64)
    scale = (cols, 1)
    for st, t in order:
        u = st.digit
        dst = ranks + (st.peers(t)[u] - u) * st.stride * scale[st.axis]
        sent = st.sends(t)[np.ix_(u, u)]
        mask = sent.copy()
        for other in stages:
            if other is not st:
                mask &= other.held
        st.held &= ~sent
        yield f"{'yx'[st.axis]}:{st.kind}{t}", dst, mask


def send_blocks(algorithm: str, dims: Any, first: str = "x") -> list[list[list[int]]]:
    """Blocks each rank sends at each reduce-scatter step (bandwidth-optimal).

    Parameters
    ----------
    algorithm : {"swing", "rd"}
    dims : int or (int, int)
        Any sizes: sides the peer rule does not pair get the ring stages of
        :func:`reduce_scatter_steps`.
    first : {"x", "y"}

    Returns
    -------
    list
        ``out[r][s]`` is the sorted list of blocks rank ``r`` sends at step
        ``s``; for ``p = 8``, rank 0: ``[[1, 2, 5, 6], [4, 7], [3]]``.

    Examples
    --------
    >>> from wafercoll import wormhole
    >>> wormhole.send_blocks("swing", (1, 4))[0]
    [[1, 2], [3]]
    """
    masks = [m for _, _, m in reduce_scatter_steps(algorithm, dims, first)]
    p = masks[0].shape[0] if masks else 1
    return [[np.flatnonzero(m[r]).tolist() for m in masks] for r in range(p)]
