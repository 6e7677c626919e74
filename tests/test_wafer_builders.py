"""Wafer 1D Reduce schedules: verified, executed, measured and simulated.

Expected metrics come from the closed forms in the paper's proofs, written out
here; simulated cycles from the wafer model's stage costs, derived in the
comments.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import wafer

PATTERNS = [
    "wafer_star_reduce",
    "wafer_chain_reduce",
    "wafer_tree_reduce",
    "wafer_two_phase_reduce",
    "wafer_autogen_reduce",
]
TREES = {
    "wafer_star_reduce": wafer.star_tree,
    "wafer_chain_reduce": wafer.chain_tree,
    "wafer_tree_reduce": wafer.binary_tree,
    "wafer_two_phase_reduce": wafer.two_phase_tree,
}


@pytest.mark.parametrize("name", PATTERNS)
def test_every_pattern_verifies_and_executes(
    name: str, rng: np.random.Generator
) -> None:
    B = 3
    for P in range(1, 101):
        s = wc.build(name, P, 4 * B, wafer.wafer_row(P))
        wc.verify(s)
        x = rng.integers(-1000, 1000, size=(P, B))
        out = wc.execute(s, x)
        assert np.array_equal(out[0], x.sum(axis=0)), P


@pytest.mark.parametrize("P", [2, 3, 4, 9, 16, 25, 32, 64, 100])
@pytest.mark.parametrize("B", [1, 3, 8])
def test_metrics_reproduce_the_lemmas(P: int, B: int) -> None:
    row = wafer.wafer_row(P)

    def m(name: str) -> wc.SpatialMetrics:
        return wc.metrics(wc.build(name, P, 4 * B), row)

    star = m("wafer_star_reduce")
    assert (star.energy, star.distance, star.depth, star.contention, star.links) == (
        B * P * (P - 1) // 2,
        P - 1,
        1,
        B * (P - 1),
        P - 1,
    )
    chain = m("wafer_chain_reduce")
    assert (chain.energy, chain.distance, chain.depth, chain.contention) == (
        B * (P - 1),
        P - 1,
        P - 1,
        B,
    )
    assert chain.cycles(2) == pytest.approx(wafer.chain_time(P, B))
    if P & (P - 1) == 0:
        lg = int(math.log2(P))
        tree = m("wafer_tree_reduce")
        assert (tree.energy, tree.distance, tree.depth, tree.contention) == (
            B * P * lg // 2,
            P - 1,
            lg,
            B * lg,
        )
        assert tree.cycles(2) == pytest.approx(wafer.tree_lemma_time(P, B))
    r = math.isqrt(P)
    if r * r == P and P >= 4:
        two = m("wafer_two_phase_reduce")
        assert (two.energy, two.depth, two.contention) == (
            2 * B * (P - r),
            2 * r - 2,
            2 * B,
        )


@pytest.mark.parametrize("P", range(2, 65))
def test_autogen_beats_every_built_pattern(P: int) -> None:
    row = wafer.wafer_row(P)
    for B in (1, 2, 3, 8, 64, 1000):
        w = max(1, B // 8)  # metrics do not depend on the block size
        fixed = {
            name: wc.metrics(
                wc.build(name, P, 4 * B, wavelets_per_block=w), row
            ).cycles()
            for name in TREES
        }
        auto = wafer.autogen(P, B)
        built = wc.build("wafer_autogen_reduce", P, 4 * B, wavelets_per_block=w)
        assert wc.metrics(built, row).cycles() == pytest.approx(auto.cycles, rel=1e-12)
        for name, value in fixed.items():
            assert auto.cycles <= value * (1 + 1e-12), (name, B)
        assert wafer.lower_bound(P, B) <= auto.cycles * (1 + 1e-12)


def test_metrics_do_not_depend_on_block_size() -> None:
    row = wafer.wafer_row(20)
    for name in PATTERNS:
        ms = {
            wc.metrics(wc.build(name, 20, 4 * 24, wavelets_per_block=w), row)
            for w in (1, 2, 3, 8, 24)
        }
        assert len(ms) == 1, name


# -- simulation on the wafer model ----------------------------------------------------
T_R = 2


def cycles(s: wc.Schedule, P: int) -> float:
    return wc.simulate(s, wafer.wafer_row(P), wc.wafer.wse2_network(T_R)).cycles


@pytest.mark.parametrize("P", [2, 3, 8, 17, 40])
@pytest.mark.parametrize("B", [1, 2, 7, 32])
def test_simulated_message_broadcast_and_chain_are_the_papers_forms(
    P: int, B: int
) -> None:
    # A wavelet: T_R up the ramp, one cycle per hop, T_R down the ramp, one
    # cycle to cross the receiving ramp, one to store; B wavelets pipeline.
    # Message over P - 1 hops: B + P + 2 T_R (Section 4.1).
    msg = wc.Schedule(P, [4] * B, "allgather", owners=[P - 1] * B)
    msg.add_transfer(P - 1, 0, [(0, B)])
    assert cycles(msg, P) == pytest.approx(B + (P - 1) + 2 * T_R + 1, rel=1e-9)
    assert cycles(msg, P) == pytest.approx(wafer.message_time(P, B), rel=1e-9)
    # Flooding broadcast: one multicast, the farthest PE last (Lemma 4.1).
    bc = wc.Schedule(P, [4] * B, "broadcast", root=0)
    bc.add_transfer(0, list(range(1, P)), [(0, B)])
    assert cycles(bc, P) == pytest.approx(wafer.broadcast_time(P, B), rel=1e-9)
    # Chain: a PE adds and forwards each wavelet as it arrives, so each PE
    # costs T_R + 1 + 1 + T_R; the root stores the last wavelet B - 1 cycles
    # after the first, plus one: B + (2 T_R + 2)(P - 1) (Lemma 5.2).
    chain = wc.build("wafer_chain_reduce", P, 4 * B)
    expected = (P - 1) * (2 * T_R + 2) + (B - 1) + 1
    assert cycles(chain, P) == pytest.approx(expected, rel=1e-9)
    assert cycles(chain, P) == pytest.approx(wafer.chain_time(P, B), rel=1e-9)


@pytest.mark.parametrize("P", [2, 5, 16, 33])
@pytest.mark.parametrize("B", [1, 4, 16])
def test_simulated_star_is_one_cycle_above_the_refined_form(P: int, B: int) -> None:
    # The root's ramp takes the streams back to back: the first wavelet
    # reaches it after T_R + 1 cycles, (P - 1) B wavelets cross it, then T_R
    # down and one to add: (P - 1) B + 2 T_R + 2. The refined form
    # B (P - 1) + 2 T_R + 1 omits the hop of the nearest PE; at B = 1 it is
    # below the paper's own message time from the farthest PE.
    star = wc.build("wafer_star_reduce", P, 4 * B)
    assert cycles(star, P) == pytest.approx((P - 1) * B + 2 * T_R + 2, rel=1e-9)
    assert cycles(star, P) == pytest.approx(wafer.star_time(P, B) + 1, rel=1e-9)
    if B == 1:
        assert wafer.star_time(P, 1) < wafer.message_time(P, 1)


def test_wafer_row_and_builder_errors() -> None:
    row = wafer.wafer_row(8)
    assert row.kind == "line" and row.num_endpoints == 8
    with pytest.raises(ValueError, match="multiple of 4"):
        wc.build("wafer_chain_reduce", 8, 10)
    with pytest.raises(ValueError, match="applies to line"):
        wc.build("wafer_chain_reduce", 8, 16, wc.topology.mesh(2, 4))
    with pytest.raises(ValueError, match="pre-order"):
        wafer.tree_schedule([-1, 0, 0, 1], 16)
    with pytest.raises(ValueError, match="must be in"):
        wafer.tree_schedule([-1, 2, 0], 16)
    with pytest.raises(ValueError, match="wavelets_per_block must be >= 1"):
        wc.build("wafer_chain_reduce", 8, 16, wavelets_per_block=0)


@pytest.mark.parametrize("P", [3, 5, 16, 33])
@pytest.mark.parametrize("B", [1, 3, 20])
def test_one_transfer_per_stream_simulates_like_one_per_wavelet(P: int, B: int) -> None:
    # The dataflow model forwards a stream packet by packet and holds a
    # stream behind an earlier one on every shared link, so cutting the
    # stream into one transfer per wavelet changes nothing.
    for name in PATTERNS:
        per_wavelet = wc.build(name, P, 4 * B, wavelets_per_block=1)
        per_stream = wc.build(name, P, 4 * B)
        assert per_stream.num_transfers == P - 1
        assert cycles(per_wavelet, P) == pytest.approx(cycles(per_stream, P), rel=1e-12)


# -- the flooding broadcast (Lemma 4.1) -----------------------------------------------

FLOOD_PES = [1, 2, 3, 5, 6, 7, 9, 12, 17, 31, 33, 64, 100, 127]


@pytest.mark.parametrize("P", FLOOD_PES)
@pytest.mark.parametrize("w", [None, 1, 3])
def test_flood_broadcast_verifies_and_copies_the_root(
    rng: np.random.Generator, P: int, w: int | None
) -> None:
    for B in (1, 2, 5, 16):
        s = wc.build("wafer_flood_broadcast", P, 4 * B, wavelets_per_block=w)
        assert wc.verify(s).ok
        assert s.collective == "broadcast" and s.root == 0
        # one multicast of every block; blocks of w wavelets, the last shorter
        assert s.num_transfers == (P > 1)
        assert s.num_blocks == (1 if w is None else math.ceil(B / w))
        assert int(s.block_bytes.sum()) == 4 * B
        x = rng.standard_normal((P, B))
        assert np.array_equal(wc.execute(s, x), np.tile(x[0], (P, 1)))


@pytest.mark.parametrize("P", [2, 3, 7, 12, 33, 100])
@pytest.mark.parametrize("B", [1, 6, 64])
def test_flood_broadcast_simulates_to_lemma_4_1(P: int, B: int) -> None:
    # Lemma 4.1: B wavelets stream through P PEs with two ramps: B + P + 2 T_R.
    row = wafer.wafer_row(P)
    for T_R in (0, 2, 5):
        for w in (None, 1):
            s = wafer.flood_broadcast(P, 4 * B, w)
            got = wc.simulate(s, row, wafer.wse2_network(T_R)).cycles
            assert got == B + P + 2 * T_R


@pytest.mark.parametrize(("P", "B"), [(2, 1), (5, 3), (8, 16), (31, 7), (100, 256)])
def test_flood_broadcast_is_the_one_multicast_written_by_hand(P: int, B: int) -> None:
    def plain(s: wc.Schedule) -> dict:
        d = s.to_dict()
        d.pop("name")
        return d

    whole = wc.Schedule(P, [4 * B], "broadcast", root=0)
    whole.add_transfer(0, list(range(1, P)), 0)
    per_wavelet = wc.Schedule(P, [4] * B, "broadcast", root=0)
    per_wavelet.add_transfer(0, list(range(1, P)), [(0, B)])
    assert plain(wafer.flood_broadcast(P, 4 * B)) == plain(whole)
    assert plain(wafer.flood_broadcast(P, 4 * B, 1)) == plain(per_wavelet)


def test_flood_broadcast_registry_record_and_bad_input() -> None:
    info = wc.algorithm_info("wafer_flood_broadcast")
    assert (info.family, info.algorithm, info.collective) == (
        "wafer",
        "flood",
        "broadcast",
    )
    assert info.label == "Flooding broadcast"
    assert wc.build("wafer_flood_broadcast", 4, 8).name == "wafer_flood_broadcast"
    with pytest.raises(ValueError, match="multiple of 4"):
        wafer.flood_broadcast(4, 6)
    with pytest.raises(ValueError, match="wavelets_per_block"):
        wafer.flood_broadcast(4, 8, 0)
