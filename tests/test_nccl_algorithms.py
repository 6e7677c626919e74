"""NCCL's ring and tree collectives and the hierarchical 2D ones on GPU fabrics.

Every schedule is verified and executed on random integers, and the result
is compared with the collective's definition computed here with NumPy.
Expected traffic and times come from closed forms worked out in each test
(NCCL's constants are restated from its source, not read from the package).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.analysis import block_element_offsets
from wafercoll.gpu import fabric
from wafercoll.gpu.nccl import btree_parents, dtree_parents, tree_parents

NCCL = [
    "nccl_ring_allreduce",
    "nccl_ring_reduce_scatter",
    "nccl_ring_allgather",
    "nccl_ring_broadcast",
    "nccl_ring_reduce",
    "nccl_tree_allreduce",
]
HIER = [
    "gpu_hier2d_allreduce",
    "gpu_hier2d_reduce_scatter",
    "gpu_hier2d_allgather",
    "gpu_hier2d_alltoall",
]
ALL = NCCL + HIER
#: (nodes, GPUs per node) of small rail machines: odd and non-power-of-two.
SHAPES = [
    (1, 1),
    (1, 6),
    (2, 2),
    (3, 2),
    (3, 3),
    (3, 4),
    (5, 2),
    (5, 4),
    (6, 2),
    (6, 4),
    (7, 2),
    (7, 4),
    (3, 8),
]
SIZES = [0, 1, 37, 1000, 70001]


def _rail(nodes: int, g: int) -> wc.Topology:
    return wc.topology.rail_optimized(nodes, g, nvswitches=min(2, g) if g > 1 else 0)


def _expected(s: wc.Schedule, x: np.ndarray) -> dict[int, np.ndarray]:
    """What each rank must hold afterwards (rank -> row), from the definition."""
    p = s.num_ranks
    off = block_element_offsets(s, x.shape[1])
    kind = s.collective
    if kind == "allreduce":
        return dict.fromkeys(range(p), x.sum(axis=0))
    if kind == "reduce":
        return {s.root: x.sum(axis=0)}
    if kind == "broadcast":
        return dict.fromkeys(range(p), x[s.root])
    out: dict[int, np.ndarray] = {}
    if kind == "reduce_scatter":
        for b in range(s.num_blocks):
            r = int(s.owners[b])
            row = out.setdefault(r, np.full(x.shape[1], np.nan))
            row[off[b] : off[b + 1]] = x[:, off[b] : off[b + 1]].sum(axis=0)
        return out
    if kind == "allgather":
        full = np.empty(x.shape[1], dtype=x.dtype)
        for b in range(s.num_blocks):
            full[off[b] : off[b + 1]] = x[int(s.owners[b]), off[b] : off[b + 1]]
        return dict.fromkeys(range(p), full)
    raise AssertionError(kind)


def _check(s: wc.Schedule, seed: int = 0) -> None:
    """Verify ``s``, run it on random integers and compare with the definition."""
    assert wc.verify(s).ok
    rng = np.random.default_rng(seed)
    x = rng.integers(-(10**6), 10**6, (s.num_ranks, 2 * s.num_blocks + 5))
    out = wc.execute(s, x)
    if s.collective == "alltoall":
        off = block_element_offsets(s, x.shape[1])
        for b in np.flatnonzero(s.block_bytes > 0):
            o, t = int(s.owners[b]), int(s.targets[b])
            np.testing.assert_array_equal(
                out[t, off[b] : off[b + 1]], x[o, off[b] : off[b + 1]]
            )
        return
    for r, want in _expected(s, x).items():
        mask = ~np.isnan(want) if want.dtype.kind == "f" else slice(None)
        np.testing.assert_array_equal(out[r][mask], want[mask])


def _options(name: str, channels: int = 3) -> dict:
    return {"channels": channels} if name.startswith("nccl") else {}


# -- correctness ------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_builder_computes_its_collective_on_rail_machines(
    name: str, shape: tuple[int, int]
) -> None:
    topo = _rail(*shape)
    for k, size in enumerate(SIZES):
        s = wc.build(name, topology=topo, size_bytes=size, **_options(name))
        assert s.num_ranks == shape[0] * shape[1]
        _check(s, seed=k)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(
    "topo,g",
    [
        (wc.topology.fat_tree(4), None),
        (wc.topology.fat_tree(4), 2),
        (wc.topology.dragonfly(2, 2, 1), None),
        (wc.topology.dragonfly(2, 2, 1), 3),
    ],
)
def test_fat_trees_and_dragonflies(name: str, topo: wc.Topology, g: int | None) -> None:
    # one GPU per host unless gpus_per_node groups consecutive hosts
    s = wc.build(name, topology=topo, size_bytes=7777, gpus_per_node=g)
    assert s.num_ranks == topo.num_endpoints
    _check(s)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("chunks", [2, 5])
def test_pipelined_hier2d_allreduce(shape: tuple[int, int], chunks: int) -> None:
    topo = _rail(*shape)
    for k, size in enumerate(SIZES):
        s = wc.build(
            "gpu_hier2d_allreduce", topology=topo, size_bytes=size, chunks=chunks
        )
        assert s.num_blocks == chunks * shape[0] * shape[1]
        _check(s, seed=k)


@pytest.mark.parametrize("name", ["nccl_ring_broadcast", "nccl_ring_reduce"])
def test_rooted_rings_from_every_root(name: str) -> None:
    for root in range(12):
        s = wc.build(name, ranks=12, size_bytes=999, gpus_per_node=4, root=root)
        assert s.root == root
        _check(s, seed=root)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(
    "machine,size",
    [("dgx_h100", 1 << 18), ("dgx_b200", 3 * 10**5 + 7), ("nvl72", 1 << 14)],
)
def test_single_node_presets_with_nccl_defaults(
    name: str, machine: str, size: int
) -> None:
    topo, _ = wc.machines.resolve(machine)
    s = wc.build(name, topology=topo, size_bytes=size)
    assert s.num_ranks == topo.num_endpoints
    _check(s)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("nodes", [2, 3, 4, 5, 6, 7])
def test_dgx_h100_rail_presets(name: str, nodes: int) -> None:
    topo, _ = wc.machines.resolve(f"dgx_h100_x16_rail:{nodes}")
    s = wc.build(name, topology=topo, size_bytes=5000 * nodes + 3)
    _check(s, seed=nodes)


# -- NCCL's numbers ----------------------------------------------------------------
def test_default_channels_follow_nccls_search_arithmetic() -> None:
    # search.cc / topo.h: SM90 NVLink 20.6 GB/s, first intra speed 60;
    # SM100 40.1 GB/s and 90; ncclTopoDupChannels then ncclTopoPostset double.
    h100 = 2 * 2 * math.floor(18 * 20.6 / 60)
    b200 = 2 * 2 * math.floor(18 * 40.1 / 90)
    assert (h100, b200) == (24, 32)
    for machine, want in (("dgx_h100", h100), ("dgx_b200", b200), ("nvl72", b200)):
        topo, _ = wc.machines.resolve(machine)
        assert fabric.default_channels(topo, 1, topo.num_endpoints) == want
    # one ring per 50 GB/s NIC at 48 GB/s (sm90SpeedArrayInter), doubled by
    # ncclTopoPostset; below 8 GPUs doubled once more (ncclTopoDupChannels for
    # up to 4 rings, connect.cc's SM90 rule for 5 to 7 rings under 16)
    rail = wc.topology.dgx_h100_rail(4)
    assert fabric.default_channels(rail, 4, 8) == 2 * 8
    for g in range(1, 8):
        dup = 2 if g <= 4 else 1  # ncclTopoDupChannels
        post = 2 * dup * g  # ncclTopoPostset
        assert fabric.default_channels(None, 3, g) == (
            2 * post if post < 16 and dup == 1 else post
        )


def test_chunks_are_nccls_simple_protocol() -> None:
    step = (4 << 20) // 8  # DEFAULT_BUFFSIZE / NCCL_STEPS
    assert fabric.chunk_bytes("allreduce") == 4 * step == 2 << 20
    assert fabric.chunk_bytes("allgather") == fabric.chunk_bytes("reduce_scatter")
    assert fabric.chunk_bytes("broadcast") == step
    assert fabric.chunk_bytes("allreduce", "tree") == step


def test_small_collectives_use_fewer_channels() -> None:
    # topoGetAlgoInfo (enqueue.cc) drops channels while the size is below
    # channels x 512 threads x 64 bytes: 64 KiB keeps 2 of dgx_h100's 24, and
    # the 32 KiB-of-traffic cells (16 KiB of allreduce data) fill both
    p, size = 8, 64 << 10
    topo = wc.topology.dgx_h100()
    s = wc.build("nccl_ring_allreduce", topology=topo, size_bytes=size)
    assert s.num_transfers == 2 * 2 * (p - 1) * p
    assert sorted(set(s.block_bytes.tolist())) == [size // 2 // p]
    s = wc.build("nccl_ring_allreduce", topology=topo, size_bytes=24 << 15)
    assert s.num_transfers == 24 * 2 * (p - 1) * p


@pytest.mark.parametrize("coll", ["allreduce", "allgather", "broadcast"])
@pytest.mark.parametrize("count", [1, 16, 16385, 1 << 20, 10**7 + 3])
@pytest.mark.parametrize("channels", [1, 7, 24, 64])
def test_channel_parts_cover_the_data_in_cells(
    coll: str, count: int, channels: int
) -> None:
    p = 8
    parts = fabric.channel_parts(count, coll, p, channels)
    assert sum(parts) == count and min(parts) > 0
    assert len(parts) <= channels
    per_byte = {"allreduce": 2, "allgather": p, "broadcast": 1}[coll]
    cell = -(-(32768 // per_byte) // 16) * 16
    # every part but the last is a whole number of cells, none more than the
    # traffic share of a channel allows (rounded up to a cell)
    assert all(x % cell == 0 for x in parts[:-1])
    share = max(32768, count * per_byte) / channels
    assert max(parts) <= max(cell, math.ceil(share / (cell * per_byte)) * cell)


# -- rings --------------------------------------------------------------------------
@pytest.mark.parametrize("nodes", range(1, 8))
@pytest.mark.parametrize("g", [1, 2, 3, 4, 8])
def test_rings_stay_on_their_rail_between_nodes(nodes: int, g: int) -> None:
    rings = fabric.ring_orders(nodes, g, 5)
    p = nodes * g
    for ring in rings:
        assert sorted(ring.tolist()) == list(range(p))
        nxt = np.roll(ring, -1)
        # a node's GPUs are consecutive in the ring
        node = ring // g
        assert (np.diff(node) >= 0).sum() == p - 1 or nodes == 1
        hops = node != nxt // g
        assert hops.sum() == (nodes if nodes > 1 else 0)
        if nodes == 1:  # one cycle 0 -> 1 -> ... -> g - 1 for every channel
            start = int(np.flatnonzero(ring == 0)[0])
            assert np.roll(ring, -start).tolist() == list(range(g))
        cross = (ring % g != nxt % g) & hops
        # two GPUs per node flip rails at every node: an odd ring cannot close
        assert cross.sum() == (1 if g == 2 and nodes % 2 == 1 and nodes > 1 else 0)


@pytest.mark.parametrize("p,g", [(8, 8), (12, 4), (10, 2), (21, 3)])
@pytest.mark.parametrize("size", [0, 16 * 1024, 999_999, 3 << 21])
def test_ring_traffic_is_the_closed_form(p: int, g: int, size: int) -> None:
    sent = {}
    for coll in ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"):
        s = wc.build(
            wc.algorithm_name("nccl", "ring", coll),
            ranks=p,
            size_bytes=size,
            gpus_per_node=g,
            channels=5,
        )
        sent[coll] = int(s.transfer_bytes().sum())
    # every byte crosses p - 1 ring links per phase
    assert sent["allreduce"] == 2 * (p - 1) * size
    # a share of ceil(S / p) bytes cut the same way for every rank
    assert sent["reduce_scatter"] == sent["allgather"] == (p - 1) * size
    assert sent["broadcast"] == sent["reduce"] == (p - 1) * size


def test_ring_allreduce_bytes_per_gpu() -> None:
    # 16-byte aligned chunks of one size per channel: every GPU sends
    # 2 (p - 1) / p of the vector
    p, size = 8, 1 << 22
    s = wc.build(
        "nccl_ring_allreduce", topology=wc.topology.dgx_h100(), size_bytes=size
    )
    per_gpu = np.bincount(s.src, weights=s.transfer_bytes(), minlength=p)
    np.testing.assert_array_equal(per_gpu, 2 * (p - 1) / p * size)


# -- the double binary tree -------------------------------------------------------
def _btree_children(n: int, r: int) -> list[int]:
    """Children of ``r`` by trees.cc's child rule (down0, down1), restated."""
    bit = 1
    while bit < n and not bit & r:
        bit <<= 1
    if r == 0:
        return [bit >> 1] if n > 1 else []
    low = bit >> 1
    if low == 0:
        return []
    kids = [r - low]
    d1 = r + low
    while d1 >= n and low:
        low >>= 1
        d1 = r + low if low else -1
    return kids + ([d1] if d1 > 0 else [])


@pytest.mark.parametrize("n", range(1, 40))
def test_double_binary_tree(n: int) -> None:
    t0 = btree_parents(n)
    for r in range(n):
        assert sorted(np.flatnonzero(t0 == r).tolist()) == sorted(_btree_children(n, r))
    trees = dtree_parents(n)
    for t in trees:
        assert (t < 0).sum() == 1  # one root
        kids = np.bincount(t[t >= 0], minlength=n)
        assert kids.max(initial=0) <= 2  # binary
        depth = wc.kit.tree_depths(t)
        assert (depth >= 0).all()  # spanning, no cycle
    interior = [set(t[t >= 0].tolist()) for t in trees]
    both = interior[0] & interior[1]
    # NCCL's property: a node is interior in at most one tree (the mirror of
    # an even count); the shift of an odd count keeps node 0 interior in both
    assert both == (set() if n % 2 == 0 or n == 1 else {0})
    if n > 1:
        assert int(np.flatnonzero(trees[0] < 0)[0]) != int(
            np.flatnonzero(trees[1] < 0)[0]
        )


def test_tree_channels_split_the_data_between_the_two_trees() -> None:
    topo = wc.topology.dgx_h100_rail(5)
    size = 16 << 20
    s = wc.build("nccl_tree_allreduce", topology=topo, size_bytes=size)
    parents = tree_parents(5, 8, 16)
    t0, t1 = dtree_parents(5)
    # channel c's tree (block c mod K of every chunk): its first rank's node
    # parent is tree 0's for channels 0..7, tree 1's for 8..15
    for c in range(16):
        head = c % 8
        node_up = parents[c, head::8] // 8
        tree = t0 if c < 8 else t1
        np.testing.assert_array_equal(np.where(node_up < 0, -1, node_up), tree)
    k = 16
    bytes_per_channel = np.bincount(
        np.arange(s.num_blocks) % k, weights=s.block_bytes, minlength=k
    )
    assert bytes_per_channel[:8].sum() == bytes_per_channel[8:].sum() == size // 2
    # every block climbs p - 1 edges and comes back down
    assert int(s.transfer_bytes().sum()) == 2 * (40 - 1) * size


# -- hierarchical 2D: NIC traffic --------------------------------------------------
@pytest.mark.parametrize("nodes,g", [(2, 4), (3, 2), (5, 4), (7, 3)])
def test_hier2d_nic_traffic(nodes: int, g: int) -> None:
    p = nodes * g
    size = p * nodes * g * 16

    def inter(name: str) -> np.ndarray:
        s = wc.build(name, ranks=p, size_bytes=size, gpus_per_node=g)
        far = s.src // g != s.dst // g
        assert (s.src[far] % g == s.dst[far] % g).all()  # on the rail
        return np.bincount(s.src[far], weights=s.transfer_bytes()[far], minlength=p)

    np.testing.assert_array_equal(
        inter("gpu_hier2d_allreduce"), 2 * (nodes - 1) / (nodes * g) * size
    )
    s = wc.build(
        "gpu_hier2d_allreduce", ranks=p, size_bytes=size, gpus_per_node=g, chunks=4
    )
    far = s.src // g != s.dst // g
    np.testing.assert_array_equal(
        np.bincount(s.src[far], weights=s.transfer_bytes()[far], minlength=p),
        2 * (nodes - 1) / (nodes * g) * size,
    )
    np.testing.assert_array_equal(
        inter("gpu_hier2d_reduce_scatter"), (nodes - 1) / p * size
    )
    np.testing.assert_array_equal(inter("gpu_hier2d_allgather"), (nodes - 1) / p * size)
    # alltoall: a GPU's rail partner on node m gets the g blocks of its node
    # for m's GPU on that rail
    np.testing.assert_array_equal(
        inter("gpu_hier2d_alltoall"), (nodes - 1) * g * size / p
    )


# -- simulated time against the closed form -----------------------------------------
@pytest.mark.parametrize("merge", [False, True])
@pytest.mark.parametrize("channels", [1, None])
@pytest.mark.parametrize("size", [1 << 20, 3 << 20, 64 << 20])
def test_ring_allreduce_time_on_dgx_h100(
    merge: bool, channels: int | None, size: int
) -> None:
    # 18 NVLink 4 links of 25 GB/s split 5/4/4/5 over the four chips; every
    # ring hop i -> i+1 goes through chip i mod 4, so the slowest hop has
    # 4 links (100 GB/s); merged chips give every GPU 18 links (450 GB/s).
    # Each hop carries 2 (p - 1) / p of the vector, one chunk per step.
    bw = 18 * 25e9 if merge else 4 * 25e9
    p = 8
    topo = wc.topology.dgx_h100(merge_switches=merge)
    net = wc.machines.preset("dgx_h100")
    for name in ("nccl_ring_allreduce", "gpu_hier2d_allreduce"):
        opts = {"channels": channels} if name.startswith("nccl") else {}
        s = wc.build(name, topology=topo, size_bytes=size, **opts)
        r = wc.simulate(s, topo, net)
        assert r.time_s == pytest.approx(2 * (p - 1) / p * size / bw, rel=1e-9)
        assert r.busbw_Bps == pytest.approx(bw, rel=1e-9)


# -- the advisor ranks them -------------------------------------------------------
def test_advise_ranks_them_on_dgx_h100() -> None:
    size = 256 << 20
    adv = wc.advise("dgx_h100", size)
    ranked = {c.name for c in adv.ranked()}
    assert {"nccl_ring_allreduce", "nccl_tree_allreduce", "gpu_hier2d_allreduce"} <= (
        ranked
    )
    mine = ["nccl_ring_allreduce", "nccl_tree_allreduce", "gpu_hier2d_allreduce"]
    full = wc.advise("dgx_h100", size, names=mine, keep=None)
    for c in full.candidates:
        assert c.status == "simulated" and c.ratio >= 1.0
    ring = next(c for c in full.candidates if c.name == "nccl_ring_allreduce")
    # the advisor's bound: GPU 1 sends its whole vector through its 4 links
    # (100 GB/s) to chip 1; the ring sends 2 (p - 1) / p of it at that rate
    assert full.bound.time_s == pytest.approx(size / 100e9, rel=1e-9)
    assert ring.ratio == pytest.approx(2 * 7 / 8, rel=1e-6)
    for coll, name in (
        ("reduce_scatter", "nccl_ring_reduce_scatter"),
        ("allgather", "gpu_hier2d_allgather"),
        ("alltoall", "gpu_hier2d_alltoall"),
    ):
        adv = wc.advise("dgx_h100", 1 << 20, coll, keep=None)
        assert name in {c.name for c in adv.ranked()}


# -- bad input ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"ranks": 8, "gpus_per_node": 0}, "gpus_per_node must be >= 1"),
        ({"ranks": 8, "gpus_per_node": 3}, "multiple of gpus_per_node"),
        ({"ranks": 8}, "gpus_per_node is required"),
        ({"ranks": 8, "gpus_per_node": 4, "channels": 65}, "channels must be <= 64"),
        ({"ranks": 8, "gpus_per_node": 4, "channels": 0}, "channels must be >= 1"),
        (
            {"topology": wc.topology.rail_optimized(3, 4), "gpus_per_node": 2},
            "contradicts",
        ),
    ],
)
def test_bad_input_names_the_parameter(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wc.build("nccl_ring_allreduce", size_bytes=64, **kwargs)


def test_bad_root_and_hier2d_input() -> None:
    with pytest.raises(ValueError, match="root must be <= 7"):
        wc.build("nccl_ring_broadcast", ranks=8, size_bytes=8, gpus_per_node=8, root=8)
    with pytest.raises(ValueError, match="multiple of gpus_per_node"):
        wc.build("gpu_hier2d_alltoall", ranks=10, size_bytes=80, gpus_per_node=4)
    with pytest.raises(ValueError, match="chunks must be >= 1"):
        wc.build(
            "gpu_hier2d_allreduce", ranks=8, size_bytes=8, gpus_per_node=4, chunks=0
        )
    with pytest.raises(ValueError, match="applies to nvswitch, rail_optimized"):
        wc.build("gpu_hier2d_allreduce", topology=wc.mesh(2, 2), size_bytes=8)
