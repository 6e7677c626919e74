"""Wafer AllReduce (Section 6) and 2D (Section 7) schedules.

Every schedule is verified and executed on random integers; the 2D broadcast
and the snake are checked against their metrics (Lemma 7.1, the chain's
lemma) and simulated on the wafer model, where both are exact. Expected
values are derived in the comments.
"""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import wafer
from wafercoll.wafer import builders2d as b2

PATTERNS = list(wafer.REDUCE_ALGORITHMS)
SIZES_1D = [1, 2, 3, 5, 7, 8, 12, 16, 31, 33, 64]
GRIDS = [(1, 1), (1, 5), (5, 1), (2, 3), (3, 3), (5, 4), (7, 8), (8, 8)]
T_R = 2


def roots(P: int) -> list[int]:
    return sorted({0, 1 % P, P // 3, P // 2, P - 1})


def random_inputs(rng: np.random.Generator, P: int, B: int) -> np.ndarray:
    return rng.integers(-(10**6), 10**6, size=(P, B), dtype=np.int64)


# -- 1D AllReduce -----------------------------------------------------------------
@pytest.mark.parametrize("pattern", PATTERNS)
def test_reduce_then_broadcast_verifies_and_executes(
    pattern: str, rng: np.random.Generator
) -> None:
    for P in SIZES_1D:
        for root in roots(P):
            for B, w in ((1, None), (5, None), (5, 2)):
                s = wc.build(
                    f"wafer_{pattern}_allreduce",
                    P,
                    4 * B,
                    wafer.wafer_row(P),
                    root=root,
                    wavelets_per_block=w,
                )
                assert s.collective == "allreduce"
                wc.verify(s)
                x = random_inputs(rng, P, B)
                out = wc.execute(s, x)
                assert np.array_equal(out, np.tile(x.sum(axis=0), (P, 1))), (P, root)


def _sorted_deps(s: wc.Schedule) -> list[dict]:
    out = s.to_dict()["transfers"]
    for t in out:
        t["deps"] = sorted(t.get("deps", []))
    return out


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("P", [2, 7, 16, 33])
def test_root_zero_reduces_with_the_1d_pattern_then_multicasts(
    pattern: str, P: int
) -> None:
    B = 6
    for w in (None, 2):
        ar = wc.build(f"wafer_{pattern}_allreduce", P, 4 * B, wavelets_per_block=w)
        red = wc.build(f"wafer_{pattern}_reduce", P, 4 * B, wavelets_per_block=w)
        n = red.num_transfers
        # the same transfers and dependencies (a dependency list is a set)
        assert _sorted_deps(ar)[:n] == _sorted_deps(red)
        into_root = [t for t in range(n) if red.transfer(t)["dst"] == [0]]
        nb = ar.num_blocks
        assert ar.num_transfers == n + nb
        for b in range(nb):
            bc = ar.transfer(n + b)
            assert (bc["src"], bc["dst"], bc["blocks"]) == (0, list(range(1, P)), [b])
            assert bc["op"] == "copy"
            # Block b waits for the root's incoming copies of block b.
            assert sorted(bc["deps"]) == sorted(
                t for t in into_root if red.transfer(t)["blocks"] == [b]
            )


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("P", [1, 2, 6, 17, 40])
def test_rooted_tree_is_the_pattern_on_each_side(pattern: str, P: int) -> None:
    B = 8
    for root in roots(P):
        parent = b2.rooted_tree(pattern, P, root, B)
        assert parent[root] == -1 and np.count_nonzero(parent == -1) == 1
        right = b2.pattern_tree(pattern, P - root, B)
        left = b2.pattern_tree(pattern, root + 1, B)
        for i in range(1, P - root):
            assert parent[root + i] == root + right[i]
        for i in range(1, root + 1):
            assert parent[root - i] == root - left[i]
    assert np.array_equal(
        b2.rooted_tree(pattern, P, 0, B), b2.pattern_tree(pattern, P, B)
    )


@pytest.mark.parametrize("mapping", b2.RING_MAPPINGS)
def test_ring_verifies_and_executes(mapping: str, rng: np.random.Generator) -> None:
    for P in SIZES_1D:
        for B in sorted({1, 3, P, 2 * P + 1, 40}):
            s = wc.build(
                "wafer_ring_allreduce", P, 4 * B, wafer.wafer_row(P), mapping=mapping
            )
            assert s.num_transfers == 2 * P * (P - 1)
            # P blocks of floor(B / P) or ceil(B / P) wavelets: when P does not
            # divide B they differ by one wavelet (and are empty when B < P).
            sizes = s.block_bytes // 4
            assert sizes.size == P and sizes.sum() == B
            assert set(sizes.tolist()) <= {B // P, -(-B // P)}
            wc.verify(s)
            x = random_inputs(rng, P, B)
            assert np.array_equal(wc.execute(s, x), np.tile(x.sum(axis=0), (P, 1)))


@pytest.mark.parametrize("P", [1, 2, 3, 6, 7, 64])
def test_ring_orders_are_the_mappings_of_figure_7(P: int) -> None:
    a = b2.ring_order(P, "a")
    assert a.tolist() == list(range(P))
    b = b2.ring_order(P, "b")
    assert sorted(b.tolist()) == list(range(P)) and b[0] == 0
    # Fig. 7b: every PE talks to PEs at most two apart, the wrap-around too.
    assert np.all(np.abs(b - np.roll(b, -1)) <= 2)
    if P >= 3:
        # The two mappings' longest hops: P - 1 (a's wrap-around) and 2.
        assert np.abs(a - np.roll(a, -1)).max() == P - 1
        assert np.abs(b - np.roll(b, -1)).max() == 2


@pytest.mark.parametrize("P", [2, 5, 12])
def test_ring_mapping_a_is_the_generic_ring(P: int) -> None:
    # With P dividing B the blocks are those of the generic builder; the
    # transfers and dependencies are the same.
    B = 3 * P
    ours = wc.build("wafer_ring_allreduce", P, 4 * B, mapping="a").to_dict()[
        "transfers"
    ]
    generic = wc.build("generic_ring_allreduce", P, 4 * B).to_dict()["transfers"]
    for t in (*ours, *generic):
        t["deps"] = sorted(t["deps"])
    assert ours == generic


# -- 2D ----------------------------------------------------------------------------
@pytest.mark.parametrize(("M", "N"), GRIDS)
def test_2d_schedules_verify_and_execute(
    M: int, N: int, rng: np.random.Generator
) -> None:
    grid = wafer.wafer_grid(M, N)
    P = M * N
    B = 3
    x = random_inputs(rng, P, B)
    total = np.tile(x.sum(axis=0), (P, 1))

    def run(name: str, **opts: object) -> np.ndarray:
        s = wc.build(name, size_bytes=4 * B, topology=grid, **opts)
        wc.verify(s)
        return wc.execute(s, x)

    assert np.array_equal(run("wafer_2d_broadcast"), np.tile(x[0], (P, 1)))
    assert np.array_equal(run("wafer_snake_reduce")[0], total[0])
    for pattern in PATTERNS:
        for w in (None, 1):
            opts = {"pattern": pattern, "wavelets_per_block": w}
            assert np.array_equal(run("wafer_xy_reduce", **opts)[0], total[0])
            assert np.array_equal(run("wafer_xy_allreduce", **opts), total)
    for pattern in b2.PATTERNS_2D:
        assert np.array_equal(run("wafer_2d_allreduce", pattern=pattern), total)


@pytest.mark.parametrize(("M", "N"), [*GRIDS, (3, 5), (4, 6), (6, 4)])
@pytest.mark.parametrize("mapping", b2.RING_MAPPINGS)
def test_xy_ring_allreduce_verifies_and_executes(
    M: int, N: int, mapping: str, rng: np.random.Generator
) -> None:
    import math

    P = M * N
    L = math.lcm(M, N)
    for B in sorted({1, 3, L, 2 * L + 1}):
        s = wc.build(
            "wafer_xy_ring_allreduce",
            size_bytes=4 * B,
            topology=wafer.wafer_grid(M, N),
            mapping=mapping,
        )
        # lcm(M, N) blocks; each row ring moves every block 2 (N - 1) times
        # among its N PEs, each column ring 2 (M - 1) times among its M.
        sizes = s.block_bytes // 4
        assert sizes.size == L and sizes.sum() == B
        assert s.num_transfers == 2 * L * (M * (N - 1) + N * (M - 1))
        wc.verify(s)
        x = random_inputs(rng, P, B)
        assert np.array_equal(wc.execute(s, x), np.tile(x.sum(axis=0), (P, 1)))


def test_xy_ring_allreduce_refuses_grids_with_too_many_blocks() -> None:
    with pytest.raises(ValueError, match="lcm"):
        wc.build("wafer_xy_ring_allreduce", 511 * 512, 4 * 10**6, shape=(511, 512))
    with pytest.raises(ValueError, match="mapping must be 'a' or 'b'"):
        wc.build("wafer_xy_ring_allreduce", 4, 16, shape=(2, 2), mapping="c")


@pytest.mark.parametrize(("M", "N"), GRIDS)
def test_snake_path_ends_at_the_root_with_one_hop_per_step(M: int, N: int) -> None:
    order = b2.snake_order(M, N)
    assert order[0] == 0 and sorted(order.tolist()) == list(range(M * N))
    r, c = np.divmod(order, N)
    assert np.all(np.abs(np.diff(r)) + np.abs(np.diff(c)) == 1)
    parent = b2.snake_tree(M, N)
    assert parent[0] == -1
    assert np.array_equal(parent[order[1:]], order[:-1])


@pytest.mark.parametrize(("M", "N"), [(3, 3), (5, 4), (7, 8)])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_xy_tree_reduces_rows_then_column_zero(M: int, N: int, pattern: str) -> None:
    B = 4
    parent = b2.xy_tree(pattern, M, N, B).reshape(M, N)
    row = b2.pattern_tree(pattern, N, B)
    col = b2.pattern_tree(pattern, M, B)
    for r in range(M):
        assert np.array_equal(parent[r, 1:], r * N + row[1:])
        assert parent[r, 0] == (col[r] * N if r else -1)
    # A column-0 PE takes its row children (lower ranks) before its column
    # children; the schedule's transfers into it follow that order.
    s = wc.build("wafer_xy_reduce", M * N, 4 * B, shape=(M, N), pattern=pattern)
    for r in range(M):
        srcs = [t["src"] for t in s.to_dict()["transfers"] if t["dst"] == [r * N]]
        assert srcs == sorted(srcs)


def test_xy_autogen_chooses_a_tree_per_axis() -> None:
    B = 64
    parent = b2.xy_tree("autogen", 4, 40, B).reshape(4, 40)
    assert np.array_equal(parent[0, 1:], wafer.autogen(40, B).parent[1:])
    assert np.array_equal(parent[1:, 0] // 40, wafer.autogen(4, B).parent[1:])


@pytest.mark.parametrize(("M", "N"), [(1, 2), (2, 3), (3, 3), (5, 4), (7, 8), (8, 8)])
@pytest.mark.parametrize("B", [1, 4, 16])
def test_metrics_of_the_2d_broadcast_and_the_snake(M: int, N: int, B: int) -> None:
    grid = wafer.wafer_grid(M, N)
    P = M * N
    bc = wc.metrics(
        wc.build("wafer_2d_broadcast", size_bytes=4 * B, topology=grid), grid
    )
    # Lemma 7.1: depth 1, distance M + N - 2 (to the far corner), energy
    # B (P - 1) over the P - 1 links of the multicast tree, contention B.
    assert (bc.energy, bc.distance, bc.depth, bc.contention, bc.links) == (
        B * (P - 1),
        M + N - 2,
        1,
        B,
        P - 1,
    )
    assert bc.cycles(T_R) == pytest.approx(B + M + N - 2 + 2 * T_R + 1)
    sn = wc.metrics(
        wc.build("wafer_snake_reduce", size_bytes=4 * B, topology=grid), grid
    )
    # A chain of P PEs whose every edge is one hop (Lemma 5.2).
    assert (sn.energy, sn.distance, sn.depth, sn.contention, sn.links) == (
        B * (P - 1),
        P - 1,
        P - 1,
        B,
        P - 1,
    )
    assert sn.cycles(T_R) == pytest.approx(wafer.chain_time(P, B, T_R))


# -- simulation on the wafer model --------------------------------------------------
def cycles(s: wc.Schedule, topology: wc.Topology) -> float:
    return wc.simulate(s, topology, wc.wafer.wse2_network(T_R)).cycles


@pytest.mark.parametrize(
    ("M", "N"), [(1, 2), (1, 17), (6, 1), (2, 3), (3, 3), (5, 4), (7, 8), (8, 8)]
)
@pytest.mark.parametrize("B", [1, 2, 7, 32])
def test_simulated_2d_broadcast_and_snake_are_exact(M: int, N: int, B: int) -> None:
    grid = wafer.wafer_grid(M, N)
    P = M * N
    # Broadcast: one multicast, copied by the routers for free; the far
    # corner's wavelet takes T_R up the ramp, M + N - 2 hops, T_R down and one
    # cycle to store, and B wavelets pipeline (Lemma 7.1). On a 1 x P or
    # P x 1 grid it is the flooding broadcast of Lemma 4.1.
    bc = wc.build("wafer_2d_broadcast", size_bytes=4 * B, topology=grid)
    assert cycles(bc, grid) == pytest.approx(B + M + N - 2 + 2 * T_R + 1, rel=1e-9)
    if min(M, N) == 1:
        assert cycles(bc, grid) == pytest.approx(wafer.broadcast_time(P, B), rel=1e-9)
    # Snake: every step of the chain is one hop between grid neighbours, so
    # each PE costs what a row chain's does, T_R + 1 + 1 + T_R: the root
    # stores the last wavelet at B + (2 T_R + 2)(P - 1) (Lemma 5.2). The turns
    # change the link direction, not the cost of a hop.
    sn = wc.build("wafer_snake_reduce", size_bytes=4 * B, topology=grid)
    assert cycles(sn, grid) == pytest.approx(B + (2 * T_R + 2) * (P - 1), rel=1e-9)
    assert cycles(sn, grid) == pytest.approx(wafer.chain_time(P, B, T_R), rel=1e-9)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("P", [2, 9, 32])
@pytest.mark.parametrize("B", [1, 8, 64])
def test_simulated_reduce_then_broadcast_overlaps_the_two(
    pattern: str, P: int, B: int
) -> None:
    # The multicast forwards the root's sum wavelet by wavelet as it is
    # formed, so the AllReduce costs no more than the reduce followed by the
    # broadcast (the paper's T_REDUCE + T_BCAST) and no less than the
    # reduce. With B = 1 and root 0, it is exactly the reduce plus a
    # one-wavelet broadcast, less the cycle in which the root adds (it
    # forwards the wavelet in the same instruction).
    row = wafer.wafer_row(P)
    red = cycles(wc.build(f"wafer_{pattern}_reduce", P, 4 * B), row)
    for root in roots(P):
        ar = cycles(wc.build(f"wafer_{pattern}_allreduce", P, 4 * B, root=root), row)
        if root == 0:
            assert red <= ar <= red + wafer.broadcast_time(P, B, T_R) + 1e-9
            if B == 1:
                expected = red + wafer.broadcast_time(P, 1, T_R) - 1
                assert ar == pytest.approx(expected, rel=1e-9)
        else:
            far = max(root, P - 1 - root) + 1  # the broadcast's longest side
            assert ar >= wafer.broadcast_time(far, B, T_R) - 1e-9


@pytest.mark.parametrize(("M", "N"), [(2, 3), (3, 3), (4, 5)])
@pytest.mark.parametrize("B", [1, 3, 8])
def test_one_transfer_per_stream_simulates_like_one_per_wavelet(
    M: int, N: int, B: int
) -> None:
    # As for the 1D patterns: streams are forwarded packet by packet and a
    # PE's children are taken one whole stream after another either way.
    # (Not so for wafer_xy_allreduce: its column stream into a PE must follow
    # the row broadcast into it; as single transfers the whole stream waits
    # for the whole broadcast, per wavelet only for that wavelet, and the two
    # differ by a few cycles either way.)
    grid = wafer.wafer_grid(M, N)
    row = wafer.wafer_row(M * N)
    for name, topo, opts in (
        ("wafer_chain_allreduce", row, {"root": M * N // 2}),
        ("wafer_two_phase_allreduce", row, {"root": 1}),
        ("wafer_xy_reduce", grid, {"pattern": "tree"}),
        ("wafer_2d_allreduce", grid, {"pattern": "two_phase"}),
        ("wafer_2d_allreduce", grid, {"pattern": "snake"}),
        ("wafer_snake_reduce", grid, {}),
    ):
        one = wc.build(name, size_bytes=4 * B, topology=topo, **opts)
        per = wc.build(
            name, size_bytes=4 * B, topology=topo, wavelets_per_block=1, **opts
        )
        assert cycles(one, topo) == pytest.approx(cycles(per, topo), rel=1e-12), name


# -- registry and errors -------------------------------------------------------------
def test_registry_entries() -> None:
    info = {a.name: a for a in wc.algorithms()}
    for pattern in PATTERNS:
        a = info[f"wafer_{pattern}_allreduce"]
        assert (a.collective, a.families) == ("allreduce", ("line",))
        assert "Section 6.1" in a.source
    assert info["wafer_ring_allreduce"].parameters == {"mapping": "a"}
    expected = {
        "wafer_2d_broadcast": "broadcast",
        "wafer_xy_reduce": "reduce",
        "wafer_snake_reduce": "reduce",
        "wafer_xy_allreduce": "allreduce",
        "wafer_2d_allreduce": "allreduce",
    }
    for name, coll in expected.items():
        assert (info[name].collective, info[name].families) == (coll, ("mesh",))
        assert "Section 7" in info[name].source
    grid = wafer.wafer_grid(3, 5)
    assert grid.kind == "mesh" and grid.shape == (3, 5)
    assert grid.links["bandwidth_Bps"][0] == pytest.approx(4 * wafer.CS2_CLOCK_HZ)


def test_bad_input_names_the_parameter() -> None:
    grid = wafer.wafer_grid(2, 3)
    with pytest.raises(ValueError, match="multiple of 4"):
        wc.build("wafer_chain_allreduce", 4, 10)
    with pytest.raises(ValueError, match="multiple of 4"):
        wc.build("wafer_ring_allreduce", 4, 6)
    with pytest.raises(ValueError, match="root must be <= 3"):
        wc.build("wafer_chain_allreduce", 4, 16, root=4)
    with pytest.raises(ValueError, match="mapping must be 'a' or 'b'"):
        wc.build("wafer_ring_allreduce", 4, 16, mapping="c")
    with pytest.raises(ValueError, match="pattern must be one of"):
        wc.build("wafer_xy_reduce", size_bytes=16, topology=grid, pattern="snake")
    with pytest.raises(ValueError, match="pattern must be one of"):
        wc.build("wafer_2d_allreduce", size_bytes=16, topology=grid, pattern="ring")
    with pytest.raises(ValueError, match="shape=\\(M, N\\)"):
        wc.build("wafer_snake_reduce", 6, 16)
    with pytest.raises(ValueError, match="must equal M \\* N"):
        wc.build("wafer_2d_broadcast", 5, 16, grid)
    with pytest.raises(ValueError, match="does not match"):
        wc.build("wafer_2d_broadcast", size_bytes=16, topology=grid, shape=(3, 2))
    with pytest.raises(ValueError, match="applies to mesh"):
        wc.build("wafer_xy_reduce", size_bytes=16, topology=wafer.wafer_row(6))
    with pytest.raises(ValueError, match="applies to line"):
        wc.build("wafer_ring_allreduce", size_bytes=16, topology=grid)
    with pytest.raises(ValueError, match="rows must be >= 1"):
        wafer.wafer_grid(0, 3)
