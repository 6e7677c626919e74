"""The Tenstorrent Wormhole n150: a 10 x 12 NoC torus with an 8 x 8 compute grid.

Physical grid (recovered details, Section 4.1, from tt-metal's
``wormhole_b0_80_arch.yaml``; ``x`` = column 0..9, ``y`` = row 0..11)::

          x=0 1 2 3 4 5 6 7 8 9
    y= 0    D E E E E D E E E E
    y= 1    D T T T T D T T T T      T Tensix core     E Ethernet
    y= 2    R T T T T D T T T T      D DRAM tile       A ARC
    y= 3    P T T T T D T T T T      P PCIe            R router only
    y= 4    R T T T T D T T T T
    y= 5    D T T T T D T T T T
    y= 6    D E E E E D E E E E
    y= 7    D T T T T D T T T T
    y= 8    R T T T T D T T T T
    y= 9    R T T T T D T T T T
    y=10    A T T T T D T T T T
    y=11    D T T T T D T T T T

One Tensix row is fused off (harvested) on an n150 (Section 4.4). The
logical compute grid maps logical column ``i`` to the ``i``-th Tensix column
``1 2 3 4 6 7 8 9`` and logical row ``j`` to the ``j``-th Tensix row that is
not harvested (tt-metal's SoC descriptor). With the harvested row 10 or 11,
logical rows 0..7 are physical rows 1 2 3 4 5 7 8 9.

Two NoCs, each a unidirectional 2D torus that wraps both ways (Section 4.2):
NoC 0 flows ``+x`` and ``+y`` and routes ``x`` first, then ``y``; NoC 1
flows ``-x`` and ``-y`` and routes ``y`` first, then ``x``. A route from
``(sx, sy)`` to ``(dx, dy)`` thus has ``(dx - sx) mod 10 + (dy - sy) mod 12``
hops on NoC 0 and ``(sx - dx) mod 10 + (sy - dy) mod 12`` on NoC 1. Every
tile is a node, so the hidden rows and columns (DRAM, Ethernet, ARC, PCIe,
router-only tiles, harvested and unused Tensix tiles) carry traffic but hold
no data.

The NoC of a transfer: the thesis's kernels assign one NoC per step (the
``step_directions`` of Section 5.1.1). A schedule transfer carries no NoC,
so the topology fixes one per pair of cores: ``noc=0`` or ``noc=1`` sends
everything on that NoC, ``noc="shortest"`` picks per pair the NoC with fewer
hops (ties go to NoC 0). For a step along one dimension, which is every step
of Swing and recursive doubling, the shortest NoC is the one of the step's
direction, so ``"shortest"`` reproduces the thesis's per-step choice.

DRAM (for the shared-memory allreduce): a DRAM controller (a hidden router)
hangs off one DRAM tile (``dram_tile``) by a link each way of
``dram_bandwidth_Bps``; behind it sit ``cores + 1`` endpoints, the DRAM
regions of :func:`wafercoll.wormhole.builders.shared_memory_schedule` (one per
core's vector and one for the result), each linked to the controller at the
same bandwidth. Core-to-DRAM routes follow the TT-Metalium convention of the
thesis's shared-memory kernel (Listing A.7): writes on NoC 0, reads on NoC 1.

Endpoints: ``0 .. rows*cols - 1`` the logical cores in row-major order, then
the DRAM regions. Hidden routers: every other tile, then the controller.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import as_int, as_real
from ._base import Topology, custom, recorded

__all__ = [
    "CLOCK_HZ",
    "DRAM_CHANNEL_BPS",
    "FLIT_BYTES",
    "HOP_CYCLES",
    "LINK_BYTES_PER_CYCLE",
    "MAX_PACKET_BYTES",
    "PHYSICAL_COLS",
    "PHYSICAL_ROWS",
    "TENSIX_COLS",
    "TENSIX_ROWS",
    "WormholeN150",
    "noc_hops",
    "wormhole_n150",
]

# Constants (recovered details, Sections 4.1-4.4, with their sources there).
#: Physical grid: 10 columns (x) by 12 rows (y) (Section 4.1).
PHYSICAL_COLS, PHYSICAL_ROWS = 10, 12
#: Columns and rows that hold Tensix cores (Section 4.1).
TENSIX_COLS = (1, 2, 3, 4, 6, 7, 8, 9)
TENSIX_ROWS = (1, 2, 3, 4, 5, 7, 8, 9, 10, 11)
#: DRAM tiles: all of column 5 and six tiles of column 0 (Section 4.1).
DRAM_TILES = frozenset(
    [(5, y) for y in range(PHYSICAL_ROWS)] + [(0, y) for y in (0, 1, 5, 6, 7, 11)]
)
#: Router-to-router latency in cycles (Section 4.3; thesis Section 4.2: ~9).
HOP_CYCLES = 9
#: Link throughput: one 32-byte flit per cycle per NoC (Section 4.3).
LINK_BYTES_PER_CYCLE = 32
FLIT_BYTES = 32
#: Largest packet: 256 data flits (Section 4.3).
MAX_PACKET_BYTES = 8192
#: The standard 1 GHz clock (Section 4.3; thesis Table 4.1).
CLOCK_HZ = 1e9
#: One DRAM channel: 288 GB/s over 6 channels (thesis Table 4.1; Section 4.1).
DRAM_CHANNEL_BPS = 288e9 / 6


def noc_hops(src_xy: Any, dst_xy: Any, noc: int) -> int:
    """Hops from physical tile ``src_xy`` to ``dst_xy`` on NoC 0 or NoC 1.

    Parameters
    ----------
    src_xy, dst_xy : (int, int)
        Physical ``(x, y)``.
    noc : {0, 1}

    Returns
    -------
    int
        ``(dx - sx) mod 10 + (dy - sy) mod 12`` on NoC 0, the reverse on NoC 1.
    """
    (sx, sy), (dx, dy) = src_xy, dst_xy
    if noc == 0:
        return (dx - sx) % PHYSICAL_COLS + (dy - sy) % PHYSICAL_ROWS
    if noc == 1:
        return (sx - dx) % PHYSICAL_COLS + (sy - dy) % PHYSICAL_ROWS
    raise ValueError(f"noc must be 0 or 1, got {noc!r}")


class WormholeN150(Topology):
    """A :class:`~wafercoll.Topology` of the n150 with its physical layout.

    Create it with :func:`wormhole_n150`. Beyond a topology it knows the
    physical position of every node and the logical compute grid.

    Attributes
    ----------
    harvested_row : int
        The fused-off Tensix row (physical ``y``).
    noc : int or str
        ``0``, ``1`` or ``"shortest"`` (see the module docstring).
    compute_shape : (int, int)
        Logical ``(rows, cols)`` of the compute grid.
    num_cores : int
        ``rows * cols``: endpoints ``0 .. num_cores - 1`` are the cores.
    dram_endpoints : range
        The DRAM region endpoints (empty without DRAM).
    """

    def __init__(self, core: Any, meta: dict[str, Any]) -> None:
        super().__init__(core)
        self.harvested_row: int = meta["harvested_row"]
        self.noc: int | str = meta["noc"]
        self.compute_shape: tuple[int, int] = meta["compute_shape"]
        self.num_cores: int = self.compute_shape[0] * self.compute_shape[1]
        self.dram_endpoints = range(self.num_cores, meta["num_endpoints"])
        self.dram_tile: tuple[int, int] | None = meta["dram_tile"]
        self._xy: list[tuple[int, int] | None] = meta["xy"]

    @property
    def default_ranks(self) -> int:
        """The cores (DRAM regions hold data but run no ranks).

        Examples
        --------
        >>> import wafercoll as wc
        >>> t = wc.topology.wormhole_n150()
        >>> t.default_ranks, t.num_endpoints
        (64, 129)
        """
        return self.num_cores

    def physical_xy(self, node: int) -> tuple[int, int]:
        """Physical ``(x, y)`` of a tile node.

        Raises
        ------
        ValueError
            For a DRAM region or the DRAM controller, which are not tiles.
        """
        v = self._id(node, "node", False)
        xy = self._xy[v]
        if xy is None:
            raise ValueError(f"node {v} is DRAM, not a tile of the grid")
        return xy

    def coords(self, node: int) -> tuple[int, int]:
        """Logical ``(row, col)`` of a core (endpoint ``row * cols + col``)."""
        v = self._id(node, "node", False)
        if v >= self.num_cores:
            raise ValueError(f"node {v} is not a core of the compute grid")
        return divmod(v, self.compute_shape[1])

    def core_at_physical(self, x: int, y: int) -> int:
        """The core endpoint at physical ``(x, y)``; ValueError if none."""
        for v in range(self.num_cores):
            if self._xy[v] == (x, y):
                return v
        raise ValueError(f"no core of the compute grid at physical ({x}, {y})")

    def tile_kind(self, x: int, y: int) -> str:
        """Tile letter of the layout: T, D, E, A, P or R (H for harvested)."""
        return _tile_kind(
            as_int(x, "x", 0, 9), as_int(y, "y", 0, 11), self.harvested_row
        )


def _tile_kind(x: int, y: int, harvested: int) -> str:
    if (x, y) in DRAM_TILES:
        return "D"
    if y in (0, 6):
        return "E"
    if x == 0:
        return {3: "P", 10: "A"}.get(y, "R")
    return "H" if y == harvested else "T"


@recorded
def wormhole_n150(
    harvested_row: int = 10,
    noc: int | str = "shortest",
    *,
    rows: int = 8,
    cols: int = 8,
    dram: bool = True,
    dram_tile: tuple[int, int] = (0, 0),
    dram_bandwidth_Bps: float = DRAM_CHANNEL_BPS,
    link_bandwidth_Bps: float = LINK_BYTES_PER_CYCLE * CLOCK_HZ,
) -> WormholeN150:
    """The Wormhole n150's physical NoC torus with a logical compute grid.

    Parameters
    ----------
    harvested_row : int
        Physical row ``y`` of the fused-off Tensix row, one of
        1, 2, 3, 4, 5, 7, 8, 9, 10, 11 (default 10, which matches the
        thesis's hop counts; recovered details, Section 4.5).
    noc : {0, 1, "shortest"}
        NoC of every core-to-core route (see the module docstring).
    rows, cols : int
        Logical compute grid, at most 9 x 8 (the Tensix rows left after
        harvesting by the Tensix columns); default the 8 x 8 of tt-metal's
        n150 core descriptor.
    dram : bool
        Add the DRAM controller and ``rows * cols + 1`` DRAM regions.
    dram_tile : (int, int)
        Physical ``(x, y)`` of the DRAM tile the controller hangs off.
    dram_bandwidth_Bps : float
        Bandwidth of the DRAM links (default one channel, 48 GB/s).
    link_bandwidth_Bps : float
        Bandwidth of every NoC link (default 32 B/cycle at 1 GHz).

    Returns
    -------
    WormholeN150
        Kind ``"wormhole_n150"``; link latencies are 0 (the hop latency is
        in :func:`wafercoll.wormhole.machine.n150_network`).

    Raises
    ------
    ValueError
        For a harvested row that is not a Tensix row, a grid larger than the
        physical one, a ``noc`` other than 0, 1, "shortest", or a
        ``dram_tile`` that is not a DRAM tile.

    Examples
    --------
    >>> import wafercoll as wc
    >>> n150 = wc.topology.wormhole_n150(harvested_row=10)
    >>> n150.num_endpoints >= 64
    True
    """
    harvested = as_int(harvested_row, "harvested_row")
    if harvested not in TENSIX_ROWS:
        raise ValueError(
            f"harvested_row must be a Tensix row {list(TENSIX_ROWS)}, got {harvested}"
        )
    if noc not in (0, 1, "shortest") or isinstance(noc, bool):
        raise ValueError(f"noc must be 0, 1 or 'shortest', got {noc!r}")
    usable = [y for y in TENSIX_ROWS if y != harvested]
    nr = as_int(rows, "rows", 1)
    nc = as_int(cols, "cols", 1)
    if nr > len(usable) or nc > len(TENSIX_COLS):
        raise ValueError(
            f"a {nr}x{nc} compute grid is larger than the n150's "
            f"{len(usable)}x{len(TENSIX_COLS)} usable Tensix cores "
            f"(rows must be <= {len(usable)}, cols <= {len(TENSIX_COLS)})"
        )
    if not isinstance(dram_tile, (tuple, list)) or len(dram_tile) != 2:
        raise TypeError(f"dram_tile must be an (x, y) pair, got {dram_tile!r}")
    dtile = (as_int(dram_tile[0], "dram_tile x"), as_int(dram_tile[1], "dram_tile y"))
    if dtile not in DRAM_TILES:
        raise ValueError(
            f"dram_tile must be a DRAM tile (column 5, or x = 0 with y in "
            f"0, 1, 5, 6, 7, 11), got {dtile}"
        )
    dram_bw = as_real(dram_bandwidth_Bps, "dram_bandwidth_Bps", positive=True)
    link_bw = as_real(link_bandwidth_Bps, "link_bandwidth_Bps", positive=True)

    cores = nr * nc
    regions = cores + 1 if dram else 0
    endpoints = cores + regions
    node_of: dict[tuple[int, int], int] = {}
    for ly in range(nr):
        for lx in range(nc):
            node_of[(TENSIX_COLS[lx], usable[ly])] = ly * nc + lx
    nxt = endpoints
    for y in range(PHYSICAL_ROWS):
        for x in range(PHYSICAL_COLS):
            if (x, y) not in node_of:
                node_of[(x, y)] = nxt
                nxt += 1
    controller = nxt if dram else -1
    num_nodes = nxt + (1 if dram else 0)
    xy: list[tuple[int, int] | None] = [None] * num_nodes
    for pos, v in node_of.items():
        xy[v] = pos

    # Links: NoC 0 (+x, +y) and NoC 1 (-x, -y) out of every tile.
    links: list[tuple[int, int]] = []
    link_id: dict[tuple[int, int], int] = {}
    for y in range(PHYSICAL_ROWS):
        for x in range(PHYSICAL_COLS):
            a = node_of[(x, y)]
            for dx, dy in ((1, 0), (0, 1), (-1, 0), (0, -1)):
                b = node_of[((x + dx) % PHYSICAL_COLS, (y + dy) % PHYSICAL_ROWS)]
                link_id[(a, b)] = len(links)
                links.append((a, b))
    bw = [link_bw] * len(links)
    if dram:
        for a, b in [(node_of[dtile], controller), (controller, node_of[dtile])] + [
            pair
            for r in range(cores, endpoints)
            for pair in ((controller, r), (r, controller))
        ]:
            link_id[(a, b)] = len(links)
            links.append((a, b))
            bw.append(dram_bw)

    def walk(src: tuple[int, int], dst: tuple[int, int], which: int) -> list[int]:
        """Link ids of the dimension-ordered route on one NoC."""
        (x, y), (tx, ty) = src, dst
        step = 1 if which == 0 else -1
        out = []
        order = ("x", "y") if which == 0 else ("y", "x")
        for dim in order:
            while (x if dim == "x" else y) != (tx if dim == "x" else ty):
                nx, ny = (
                    ((x + step) % PHYSICAL_COLS, y)
                    if dim == "x"
                    else (x, (y + step) % PHYSICAL_ROWS)
                )
                out.append(link_id[(node_of[(x, y)], node_of[(nx, ny)])])
                x, y = nx, ny
        return out

    def core_noc(a: tuple[int, int], b: tuple[int, int]) -> int:
        if noc == "shortest":
            return 0 if noc_hops(a, b, 0) <= noc_hops(a, b, 1) else 1
        return int(noc)

    def route(src: int, dst: int) -> list[int]:
        if src < cores and dst < cores:
            a, b = xy[src], xy[dst]
            return walk(a, b, core_noc(a, b))  # type: ignore[arg-type]
        if src < cores:  # write to DRAM: NoC 0, then into the controller
            return walk(xy[src], dtile, 0) + [  # type: ignore[arg-type]
                link_id[(node_of[dtile], controller)],
                link_id[(controller, dst)],
            ]
        if dst < cores:  # read from DRAM: out of the controller, then NoC 1
            return [
                link_id[(src, controller)],
                link_id[(controller, node_of[dtile])],
            ] + walk(dtile, xy[dst], 1)  # type: ignore[arg-type]
        return [link_id[(src, controller)], link_id[(controller, dst)]]

    core = custom(
        endpoints,
        np.asarray(links, dtype=np.int64),
        num_hidden_routers=num_nodes - endpoints,
        bandwidth_Bps=np.asarray(bw),
        latency_s=0.0,
        routes=route,
        kind="wormhole_n150",
        name=f"wormhole_n150(harvested_row={harvested}, noc={noc}, {nr}x{nc})",
    )._core
    meta = {
        "harvested_row": harvested,
        "noc": noc,
        "compute_shape": (nr, nc),
        "num_endpoints": endpoints,
        "dram_tile": dtile if dram else None,
        "xy": xy,
    }
    return WormholeN150(core, meta)
