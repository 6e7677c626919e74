"""Swing and recursive doubling on tori: peers, block rules and the schedules.

Expected values come from the definitions, recomputed here by other means
(sums instead of the closed form, set recursion instead of the bitmask rule,
byte counts from the vector size).
"""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.wormhole import builders, swing

GRID_BUILDERS = [
    "torus_swing_lo_allreduce",
    "torus_swing_bo_allreduce",
    "torus_rd_lo_allreduce",
    "torus_rd_bo_allreduce",
]
ALL_BUILDERS = [
    *GRID_BUILDERS,
    "torus_ring_bidir_allreduce",
    "torus_shared_memory_allreduce",
]


def rho_by_sum(s):
    return sum((-2) ** i for i in range(s + 1))


def test_swing_peer_is_the_papers_formula():
    for p in range(1, 40):
        for s in range(8):
            for r in range(p):
                d = rho_by_sum(s)
                want = (r + d) % p if r % 2 == 0 else (r - d) % p
                assert wc.wormhole.swing_peer(r, s, p) == want
    assert [wc.wormhole.rho(s) for s in range(8)] == [rho_by_sum(s) for s in range(8)]


@pytest.mark.parametrize("p", range(2, 65, 2))
def test_swing_peer_is_an_involution_for_even_p(p):
    for s in range(8):
        for r in range(p):
            q = wc.wormhole.swing_peer(r, s, p)
            assert q != r and wc.wormhole.swing_peer(q, s, p) == r
            assert (q - r) % 2 == 1  # even ranks pair with odd ranks


def test_rd_peer_and_bad_input():
    assert [wc.wormhole.rd_peer(5, s, 8) for s in range(3)] == [4, 7, 1]
    with pytest.raises(ValueError, match="power of two"):
        wc.wormhole.rd_peer(0, 0, 6)
    with pytest.raises(ValueError, match="r must be"):
        wc.wormhole.swing_peer(8, 0, 8)
    with pytest.raises(ValueError, match="p must be"):
        wc.wormhole.swing_peer(0, 0, 0)
    with pytest.raises(TypeError):
        wc.wormhole.swing_peer(0.5, 0, 8)
    with pytest.raises(ValueError, match="first"):
        wc.wormhole.step_plan((8, 8), first="z")
    with pytest.raises(ValueError, match="limit"):
        wc.wormhole.peer_table("swing", (64, 64))


def reach_sets(peers):
    """Reach(q, s) by the recursion of the thesis's Listing 3.1, as Python sets."""
    steps, p = peers.shape
    memo = {}

    def reach(q, s):
        if s == steps:
            return {q}
        if (q, s) not in memo:
            memo[q, s] = reach(q, s + 1) | reach(int(peers[s, q]), s + 1)
        return memo[q, s]

    return reach


def test_block_sets_of_the_paper_example():
    blocks = wc.wormhole.send_blocks("swing", 8)
    assert [set(b) for b in blocks[0]] == [{1, 2, 5, 6}, {4, 7}, {3}]
    assert [set(b) for b in blocks[1]] == [{0, 3, 4, 7}, {2, 5}, {6}]


@pytest.mark.parametrize(
    "alg,dims", [("swing", 8), ("swing", (4, 4)), ("rd", 16), ("rd", (4, 8))]
)
def test_block_sets_are_the_reach_sets_for_powers_of_two(alg, dims):
    peers = wc.wormhole.peer_table(alg, dims)
    reach = reach_sets(peers)
    blocks = wc.wormhole.send_blocks(alg, dims)
    for r, per_step in enumerate(blocks):
        for s, b in enumerate(per_step):
            assert set(b) == reach(int(peers[s, r]), s + 1)


def test_step_plan_alternates_and_skips():
    assert wc.wormhole.step_plan((8, 8)) == [
        ("x", 0),
        ("y", 0),
        ("x", 1),
        ("y", 1),
        ("x", 2),
        ("y", 2),
    ]
    assert wc.wormhole.step_plan((2, 8), first="y") == [
        ("y", 0),
        ("x", 0),
        ("x", 1),
        ("x", 2),
    ]


def run(name, dims, size, rng):
    p = dims[0] * dims[1]
    topo = wc.ring(p) if dims[0] == 1 else wc.topology.torus(*dims)
    if name == "torus_shared_memory_allreduce":
        # Its DRAM helper ranks need endpoints a plain torus does not have:
        # build() refuses the torus, so give the shape alone.
        with pytest.raises(ValueError, match="endpoints"):
            wc.build(name, size_bytes=size, topology=topo)
        s = wc.build(name, p, size, dims=dims)
    else:
        s = wc.build(name, size_bytes=size, topology=topo)
    wc.verify(s)
    x = rng.integers(-1000, 1000, size=(s.num_ranks, 2 * p + 1))
    out = wc.execute(s, x)
    want = x[:p].sum(axis=0)
    assert (out[:p] == want).all(), (name, dims)
    return s


@pytest.mark.parametrize("name", ALL_BUILDERS)
def test_builders_on_rings(name, rng):
    for p in range(2, 34):
        for size in (8 * p, 8 * p + 5):
            run(name, (1, p), size, rng)


@pytest.mark.parametrize("name", ALL_BUILDERS)
def test_builders_on_2d_tori(name, rng):
    for r in range(1, 9):
        for c in range(1, 9):
            if r > 1:
                run(name, (r, c), 8 * r * c + 3, rng)


@pytest.mark.parametrize("fallback", ["shrink", "ring"])
@pytest.mark.parametrize("name", ["torus_swing_bo_allreduce", "torus_rd_bo_allreduce"])
def test_both_fallbacks_on_every_size(name, fallback, rng):
    grids = [(1, p) for p in range(2, 34)]
    grids += [(r, c) for r in range(2, 8) for c in range(1, 8)]
    for dims in grids:
        p = dims[0] * dims[1]
        s = wc.build(name, p, 8 * p + 5, dims=dims, fallback=fallback)
        wc.verify(s)
        x = rng.integers(-1000, 1000, size=(p, 2 * p + 1))
        assert (wc.execute(s, x) == x.sum(axis=0)).all(), dims


def rs_bytes(s):
    """Bytes each rank sends in reducing transfers (the reduce-scatter)."""
    red = s.op == 1
    return np.bincount(s.src[red], s.transfer_bytes()[red], s.num_ranks)


EVEN_GRIDS = [(1, p) for p in range(2, 34, 2)] + [
    (r, c) for r in range(2, 9) for c in range(1, 9) if r * c % 2 == 0
]


@pytest.mark.parametrize("name", ["torus_swing_bo_allreduce", "torus_rd_bo_allreduce"])
def test_bo_sends_the_minimum_for_every_even_p(name):
    for dims in EVEN_GRIDS:
        p = dims[0] * dims[1]
        s = wc.build(name, p, 64 * p, dims=dims)
        assert np.array_equal(rs_bytes(s), np.full(p, (p - 1) * 64)), dims
        sent = s.stats()["bytes_sent"]
        assert np.array_equal(sent, np.full(p, 2 * (p - 1) * 64)), dims
        # Unequal blocks: each rank still sends every block but its own once.
        s = wc.build(name, p, 64 * p + 5, dims=dims)
        assert np.array_equal(rs_bytes(s), 64 * p + 5 - np.asarray(s.block_bytes))


def side_steps(alg, d):
    """Reduce-scatter steps of one side under the ring fallback, by hand."""
    if d == 1:
        return 0
    if alg == "swing":
        return (d - 1).bit_length() if d % 2 == 0 else d - 1
    k = 0
    while d % 2 == 0:
        d, k = d // 2, k + 1
    return k + d - 1


@pytest.mark.parametrize("alg", ["swing", "rd"])
def test_ring_fallback_steps_and_hops(alg):
    # Step count: the peer rule's steps plus m - 1 ring steps per odd factor
    # m; every ring step goes 2^k coordinates along one side, which is 2^k
    # hops on the torus (the wrap link closes the ring).
    for dims in [(1, 6), (1, 10), (1, 12), (1, 24), (3, 4), (6, 6), (5, 6), (3, 3)]:
        p = dims[0] * dims[1]
        s = wc.build(f"torus_{alg}_bo_allreduce", p, 8 * p, dims=dims, fallback="ring")
        rs = sum(side_steps(alg, d) for d in dims)
        assert s.num_steps == 2 * rs, dims
        topo = wc.ring(p) if dims[0] == 1 else wc.topology.torus(*dims)
        for label, dst, _ in wc.wormhole.reduce_scatter_steps(alg, dims):
            if "ring" not in label:
                continue
            d = dims[1] if label[0] == "x" else dims[0]
            two = 1 if alg == "swing" else d & -d
            assert {topo.hops(a, int(b)) for a, b in enumerate(dst)} == {two}


def test_ring_fallback_matches_the_reach_rule_where_the_rule_applies():
    # On sides the peer rule pairs, the product of 1-D rules is the 2-D
    # latest-step reach rule of send_mask.
    for alg, dims in [("swing", (6, 4)), ("swing", (2, 10)), ("rd", (4, 8))]:
        for first in "xy":
            want = swing.send_mask(wc.wormhole.peer_table(alg, dims, first))
            got = [m for _, _, m in wc.wormhole.reduce_scatter_steps(alg, dims, first)]
            assert np.array_equal(np.stack(got), want)


def test_rd_bo_on_six_ranks_by_hand():
    # Ring fallback: RD on the factor 2 ({0,1}, {2,3}, {4,5}), then a ring
    # 0 -> 2 -> 4 -> 0 (and 1 -> 3 -> 5 -> 1) over the factor 3.
    blocks = wc.wormhole.send_blocks("rd", 6)
    assert blocks[0] == [[1, 3, 5], [4], [2]]
    assert blocks[3] == [[0, 2, 4], [1], [5]]
    s = wc.build("torus_rd_bo_allreduce", 6, 600)
    assert s.num_steps == 2 * 3
    assert (s.stats()["bytes_sent"] == 2 * 500).all()


def test_non_power_of_two_shrinks():
    # rd_bo on 6 ranks with the shrink fallback: ranks 4, 5 add their vector
    # into 2, 3 and wait; the 4 others run recursive doubling on 4 blocks;
    # 2 and 3 copy the result back.
    size = 4 * 100
    s = wc.build("torus_rd_bo_allreduce", 6, size, fallback="shrink")
    sent = s.stats()["bytes_sent"]
    assert sent.tolist() == [
        2 * 3 * 100,
        2 * 3 * 100,
        2 * 3 * 100 + size,
        2 * 3 * 100 + size,
        size,
        size,
    ]
    lo = wc.build("torus_swing_lo_allreduce", 6, size)
    assert lo.num_steps == 1 + 2 + 1
    # Odd p: "auto" shrinks; "ring" stays minimal.
    auto = wc.build("torus_swing_bo_allreduce", 5, 500)
    assert auto.num_steps == 1 + 2 * 2 + 1
    ring = wc.build("torus_swing_bo_allreduce", 5, 500, fallback="ring")
    assert (rs_bytes(ring) == 400).all() and ring.num_steps == 2 * 4


def test_lo_sends_the_whole_vector_every_step():
    s = wc.build("torus_swing_lo_allreduce", 64, 1000, dims=(8, 8))
    assert s.num_steps == 6
    assert (s.stats()["bytes_sent"] == 6 * 1000).all()


def test_hamiltonian_ring_uses_neighbour_links():
    for dims in [(2, 3), (4, 4), (3, 4), (8, 8), (6, 5)]:
        order = wc.wormhole.hamiltonian_ring(dims)
        assert sorted(order) == list(range(dims[0] * dims[1]))
        t = wc.topology.torus(*dims)
        hops = [t.hops(a, b) for a, b in zip(order, order[1:] + order[:1])]
        assert hops == [1] * len(order)
    order = wc.wormhole.hamiltonian_ring((3, 5))
    t = wc.topology.torus(3, 5)
    hops = [t.hops(a, b) for a, b in zip(order, order[1:] + order[:1])]
    assert sorted(order) == list(range(15)) and hops[:-1] == [1] * 14


def test_ring_bidir_bytes():
    p, size = 16, 16 * 2 * 10
    s = wc.build(
        "torus_ring_bidir_allreduce", topology=wc.topology.torus(4, 4), size_bytes=size
    )
    assert (s.stats()["bytes_sent"] == 2 * (p - 1) * size // p).all()
    assert s.num_steps == 2 * (p - 1)


def test_ring_bidir_follows_the_ring_both_ways():
    # Rebuilt transfer by transfer from the ring's definition: at step t of
    # the reduce-scatter the rank at ring position i sends the block of
    # position i - t to position i + 1 (half 0) and the block of position
    # i + t to position i - 1 (half 1); the allgather does the same from
    # i + 1 - t (half 0) and i - 1 + t (half 1) and copies.
    for dims in [(1, 2), (1, 5), (2, 3), (3, 3), (4, 4), (3, 5)]:
        p = dims[0] * dims[1]
        order = wc.wormhole.hamiltonian_ring(dims)
        s = wc.build("torus_ring_bidir_allreduce", p, 2 * p * 8, dims=dims)
        k = 0
        for phase, op in ((0, "reduce"), (1, "copy")):
            for t in range(p - 1):
                for i in range(p):
                    for half, step in ((0, 1), (1, -1)):
                        j = (i - step * (t - phase)) % p
                        got = s.transfer(k)
                        assert got["src"] == order[i]
                        assert got["dst"] == [order[(i + step) % p]]
                        assert got["blocks"] == [half * p + order[j]]
                        assert got["op"] == op
                        k += 1
        assert k == s.num_transfers


def test_shared_memory_shape():
    s = wc.build("torus_shared_memory_allreduce", 4, 400)
    assert s.num_ranks == 9
    assert s.participants.tolist() == [True] * 4 + [False] * 5
    # write 400, read 3 slices of 100, write 100 (cores); the DRAM sends.
    assert s.stats()["bytes_sent"][:4].tolist() == [500] * 4


def test_build_rejects_bad_input():
    with pytest.raises(ValueError, match="does not match"):
        wc.build(
            "torus_swing_bo_allreduce",
            ranks=12,
            size_bytes=64,
            topology=wc.topology.torus(4, 4),
        )
    with pytest.raises(ValueError, match="applies to"):
        wc.build(
            "torus_swing_bo_allreduce", size_bytes=64, topology=wc.topology.mesh(4, 4)
        )
    with pytest.raises(ValueError, match="first"):
        wc.build("torus_swing_lo_allreduce", 8, 64, first="diagonal")
    with pytest.raises(ValueError, match="ranks"):
        wc.build("torus_swing_lo_allreduce", 1 << 20, 64)
    with pytest.raises(ValueError, match="limit"):
        builders.ring_bidir_schedule((32, 33), 64)
    with pytest.raises(ValueError, match="variant"):
        builders.allreduce_schedule("swing", "xo", 8, 64)
    with pytest.raises(ValueError, match="fallback must be"):
        wc.build("torus_rd_bo_allreduce", 6, 64, fallback="pad")
    with pytest.raises(ValueError, match="bandwidth-optimal variants only"):
        wc.build("torus_rd_lo_allreduce", 6, 64, fallback="ring")


def test_send_mask_rejects_a_non_involution():
    with pytest.raises(ValueError, match="involution"):
        swing.send_mask(np.array([[1, 2, 0]]))
