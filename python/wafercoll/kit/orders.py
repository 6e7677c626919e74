"""Logical orders of ranks: the rings, paths and cycles algorithms run over.

An algorithm such as the ring allreduce runs over any *order* of ranks; the
order is a separate value handed to it (ASTRA-sim's logical topologies do the
same). The orders the papers use, all as int64 arrays of rank ids:

* :func:`row_major` (``0 .. p - 1``) and :func:`folded` (even ranks up, odd
  ranks down: every hop of a line at most two apart, the wafer's Fig. 7b);
* :func:`snake` (boustrophedon, ``hamiltonian_path``): a path of neighbours
  through a ``rows x cols`` grid;
* :func:`hamiltonian_cycle`: a cycle of mesh neighbours through every node,
  or through all but an excluded one on an odd-sized mesh;
* :func:`torus_cycle`: a cycle through every node of a torus (wrap links
  allowed).

Hamiltonian cycles and paths in rectangular meshes
--------------------------------------------------
Cells are ``(row, col)`` with node id ``row * cols + col`` (the numbering of
:func:`wafercoll.topology.mesh`). A mesh is bipartite, so a cycle through every
node exists only when ``rows * cols`` is even and both sides are >= 2; an
odd-sized mesh (both sides odd) has a cycle through all nodes but one cell of
the majority colour, such as a corner or, on a square mesh, the centre.

The constructions are those of the recovered details (``spec/recovered-details.md``
section 3):

* section 3.1, one side even: row 0 left to right, then the columns right to
  left over rows ``1 .. rows - 1``, alternately down and up (the ring of the
  MultiTree and MCM code, ``kncube.py``); with only ``rows`` even, the same on
  the transposed grid;
* section 3.2, both sides odd, a corner removed: row 0 from column 1, the
  columns ``cols - 1 .. 2`` alternately down and up, then columns 1 and 0
  zig-zag upward; other corners by mirroring;
* section 3.3, square odd mesh without the centre: the 3 x 3 block around the
  centre and then concentric square rings, joined through the centre row left
  of the centre (the MCM authors' ``find_odd_ring.py`` layout, written anew).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_int

__all__ = [
    "excluded_node",
    "folded",
    "hamiltonian_cycle",
    "hamiltonian_path",
    "row_major",
    "snake",
    "torus_cycle",
]

_MAX_SIDE = 4096


def _sides(rows: Any, cols: Any) -> tuple[int, int]:
    m = as_int(rows, "rows", 1, _MAX_SIDE)
    n = as_int(cols, "cols", 1, _MAX_SIDE)
    return m, n


def excluded_node(rows: int, cols: int, exclude: Any) -> int:
    """Node id named by ``exclude`` on a ``rows x cols`` mesh.

    Parameters
    ----------
    rows, cols : int
    exclude : {"corner", "centre", "center"}, int or (row, col)
        ``"corner"`` is the bottom-right corner (node 9 of the paper's Fig. 3,
        numbered from 1), ``"centre"`` the middle cell (both sides odd), an
        int a node id and a pair a cell.

    Returns
    -------
    int

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.excluded_node(3, 3, "corner"), kit.excluded_node(3, 3, "centre")
    (8, 4)
    >>> kit.excluded_node(3, 3, (1, 2))
    5
    """
    m, n = _sides(rows, cols)
    if isinstance(exclude, str):
        if exclude == "corner":
            return m * n - 1
        if exclude in ("centre", "center"):
            if m % 2 == 0 or n % 2 == 0:
                raise ValueError(f"exclude='centre' needs both sides odd, got {m}x{n}")
            return (m // 2) * n + n // 2
        raise ValueError(
            f"exclude must be 'corner', 'centre', a node id or (row, col); "
            f"got {exclude!r}"
        )
    if isinstance(exclude, (tuple, list)) and len(exclude) == 2:
        r = as_int(exclude[0], "exclude row", 0, m - 1)
        c = as_int(exclude[1], "exclude col", 0, n - 1)
        return r * n + c
    return as_int(exclude, "exclude", 0, m * n - 1)


def _even_cycle(m: int, n: int) -> list[tuple[int, int]]:
    """Section 3.1 with ``n`` even: row 0, then the columns snake back."""
    cells = [(0, c) for c in range(n)]
    down = True
    for c in range(n - 1, -1, -1):
        rows = range(1, m) if down else range(m - 1, 0, -1)
        cells.extend((r, c) for r in rows)
        down = not down
    return cells


def _corner_cycle(m: int, n: int) -> list[tuple[int, int]]:
    """Section 3.2: both sides odd (>= 3), corner (0, 0) removed."""
    cells = [(0, c) for c in range(1, n)]
    down = True
    for c in range(n - 1, 1, -1):
        rows = range(1, m) if down else range(m - 1, 0, -1)
        cells.extend((r, c) for r in rows)
        down = not down
    first = True
    for r in range(m - 1, 0, -1):
        cells.extend([(r, 1), (r, 0)] if first else [(r, 0), (r, 1)])
        first = not first
    return cells


def _centre_cycle(n: int) -> list[tuple[int, int]]:
    """Section 3.3: square odd ``n x n`` without the centre.

    Ring ``k`` is the square at Chebyshev distance ``k`` from the centre
    ``(h, h)``. Ring 1 starts left of the centre and turns clockwise; each
    further ring is entered next to its cell on the centre row, turns the
    other way round and leaves towards the next ring; the cells of the centre
    row left of ring 1 are visited last, leading back to the start.
    """
    h = n // 2
    K = h
    cells = [(h, h - 1), (h - 1, h - 1), (h - 1, h), (h - 1, h + 1)]
    cells += [(h, h + 1), (h + 1, h + 1), (h + 1, h), (h + 1, h - 1)]
    side = 1  # the row offset (from h) where the walk stands on the left column
    for k in range(2, K + 1):
        lo, hi = h - k, h + k
        # Border of ring k, starting at (h + side, lo) and walking away from the
        # centre row, all the way round to (h - side, lo).
        if side == 1:  # go down, then right, up, left, down to (h - 1, lo)
            walk = [(r, lo) for r in range(h + 1, hi + 1)]
            walk += [(hi, c) for c in range(lo + 1, hi + 1)]
            walk += [(r, hi) for r in range(hi - 1, lo - 1, -1)]
            walk += [(lo, c) for c in range(hi - 1, lo - 1, -1)]
            walk += [(r, lo) for r in range(lo + 1, h)]
        else:  # go up, then right, down, left, up to (h + 1, lo)
            walk = [(r, lo) for r in range(h - 1, lo - 1, -1)]
            walk += [(lo, c) for c in range(lo + 1, hi + 1)]
            walk += [(r, hi) for r in range(lo + 1, hi + 1)]
            walk += [(hi, c) for c in range(hi - 1, lo - 1, -1)]
            walk += [(r, lo) for r in range(hi - 1, h, -1)]
        cells += walk
        side = -side
    cells += [(h, c) for c in range(h - K, h - 1)]
    return cells


def hamiltonian_cycle(rows: int, cols: int, exclude: Any = None) -> np.ndarray:
    """A cycle of neighbour links through every node (but ``exclude``).

    Parameters
    ----------
    rows, cols : int
        Mesh size, each >= 2.
    exclude : None, {"corner", "centre"}, int or (row, col)
        ``None``: every node (needs ``rows * cols`` even). Otherwise the node
        left out, on an odd-sized mesh: any corner (section 3.2, mirrored), or
        the centre of a square mesh (section 3.3).

    Returns
    -------
    numpy.ndarray
        Node ids in cycle order (int64), starting at the smallest id; the last
        node is a neighbour of the first.

    Raises
    ------
    ValueError
        For a mesh with a side of 1 (no cycle: use :func:`hamiltonian_path`),
        an odd-sized mesh without ``exclude``, an even-sized mesh with one, or
        an excluded cell for which no construction is available.

    Examples
    --------
    >>> from wafercoll.kit import hamiltonian_cycle
    >>> hamiltonian_cycle(4, 4).tolist()
    [0, 1, 2, 3, 7, 11, 15, 14, 10, 6, 5, 9, 13, 12, 8, 4]
    >>> hamiltonian_cycle(3, 3, exclude="corner").tolist()
    [0, 1, 2, 5, 4, 7, 6, 3]
    """
    m, n = _sides(rows, cols)
    if m < 2 or n < 2:
        raise ValueError(
            f"a {m}x{n} mesh has no Hamiltonian cycle (a side of 1 is a line); "
            "use hamiltonian_path"
        )
    odd = (m * n) % 2 == 1
    if exclude is None:
        if odd:
            raise ValueError(
                f"an odd-sized {m}x{n} mesh has no Hamiltonian cycle; pass "
                "exclude='corner' or exclude='centre' to leave one node out"
            )
        if n % 2 == 0:
            cells = _even_cycle(m, n)
        else:
            cells = [(r, c) for c, r in _even_cycle(n, m)]
    else:
        if not odd:
            raise ValueError(
                f"exclude applies to odd-sized meshes; a {m}x{n} mesh has a "
                "cycle through every node (exclude=None)"
            )
        x = excluded_node(m, n, exclude)
        xr, xc = divmod(x, n)
        centre = (m // 2, n // 2)
        if xr in (0, m - 1) and xc in (0, n - 1):
            cells = _corner_cycle(m, n)
            flip_r, flip_c = xr == m - 1, xc == n - 1
            cells = [
                (m - 1 - r if flip_r else r, n - 1 - c if flip_c else c)
                for r, c in cells
            ]
        elif (xr, xc) == centre and m == n:
            cells = _centre_cycle(n)
        else:
            raise ValueError(
                f"exclude=({xr}, {xc}): cycles are constructed without a corner, "
                "or without the centre of a square mesh"
            )
    ids = np.array([r * n + c for r, c in cells], dtype=np.int64)
    k = int(np.argmin(ids))
    return np.roll(ids, -k)


def hamiltonian_path(rows: int, cols: int) -> np.ndarray:
    """The boustrophedon path: row 0 left to right, row 1 right to left, ...

    Parameters
    ----------
    rows, cols : int
        Mesh size, each >= 1.

    Returns
    -------
    numpy.ndarray
        Node ids in path order (int64); consecutive nodes are neighbours.

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.hamiltonian_path(2, 3).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    m, n = _sides(rows, cols)
    ids = np.arange(m * n, dtype=np.int64).reshape(m, n)
    ids[1::2] = ids[1::2, ::-1]
    return ids.ravel()


#: The boustrophedon path under its common name.
snake = hamiltonian_path


def row_major(p: int) -> np.ndarray:
    """Ranks ``0 .. p - 1`` in order (a ring of ``p`` closes ``p - 1 -> 0``).

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.row_major(4).tolist()
    [0, 1, 2, 3]
    """
    return np.arange(as_int(p, "p", 1, 1 << 24), dtype=np.int64)


def folded(p: int) -> np.ndarray:
    """Even ranks left to right, then odd ranks right to left.

    On a line every pair of consecutive ranks, the closing pair included, is
    at most two apart (the wafer paper's ring mapping of Fig. 7b).

    >>> folded(6).tolist()
    [0, 2, 4, 5, 3, 1]

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.folded(6).tolist()
    [0, 2, 4, 5, 3, 1]
    """
    n = as_int(p, "p", 1, 1 << 24)
    evens = np.arange(0, n, 2, dtype=np.int64)
    odds = np.arange(1, n, 2, dtype=np.int64)[::-1]
    return np.concatenate([evens, odds])


def torus_cycle(rows: int, cols: int) -> np.ndarray:
    """A cycle through every node of a ``rows x cols`` torus.

    With an even number of rows (or columns) every hop is a mesh neighbour:
    along row 0, back and forth over columns ``1 .. cols-1`` of the other
    rows, and home up column 0. With both odd, every row is walked rightwards
    (wrapping) starting below the previous row's last node; only the closing
    hop is longer than one link. A ring of ``p`` (``rows = 1``) is
    ``0 .. p-1``.

    >>> torus_cycle(2, 3).tolist()
    [0, 1, 2, 5, 4, 3]

    Examples
    --------
    >>> from wafercoll import kit
    >>> kit.torus_cycle(2, 3).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    m, n = _sides(rows, cols)
    return np.asarray(_torus_cycle(m, n), dtype=np.int64)


def _torus_cycle(rows: int, cols: int) -> list[int]:
    if rows == 1 or cols == 1:
        return list(range(rows * cols))
    if rows % 2 and cols % 2 == 0:
        order = _torus_cycle(cols, rows)
        return [(r % rows) * cols + r // rows for r in order]
    if rows % 2 == 0:
        order = list(range(cols))
        for y in range(1, rows):
            xs = range(1, cols) if y % 2 == 0 else range(cols - 1, 0, -1)
            order += [y * cols + x for x in xs]
        order += [y * cols for y in range(rows - 1, 0, -1)]
        return order
    order = []
    start = 0
    for y in range(rows):
        order += [y * cols + (start + i) % cols for i in range(cols)]
        start = (start + cols - 1) % cols
    return order
