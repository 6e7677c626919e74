"""Wafer cost model: the paper's closed forms against metrics derived from trees.

The closed forms are the paper's statements; the metrics are derived here from
the reduction trees, both by :func:`wafercoll.wafer.tree_metrics` and by a
plain loop in the test, and equation (1) is applied to them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import wafer

PS = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 64, 100, 512]
BS = [1, 2, 3, 8, 64, 1000]


def metrics_by_loops(parent: np.ndarray) -> tuple[int, int, int, int]:
    """Energy, depth, contention (messages) and distance by walking each PE up."""
    n = len(parent)
    energy = sum(v - parent[v] for v in range(1, n))
    depth = 0
    for v in range(n):
        d, u = 0, v
        while parent[u] >= 0:
            u, d = parent[u], d + 1
        depth = max(depth, d)
    received = [0] * n
    for v in range(1, n):
        received[parent[v]] += 1
    contention = max([1, *received]) if n > 1 else 0
    return energy, depth, contention, n - 1


def eq1(E: float, L: float, D: float, C: float, N: float, T_R: float) -> float:
    return max(C, (E / N if N else 0.0) + L) + (2 * T_R + 1) * D


@pytest.mark.parametrize("P", PS)
@pytest.mark.parametrize(
    "tree", [wafer.star_tree, wafer.chain_tree, wafer.binary_tree, wafer.two_phase_tree]
)
def test_tree_metrics_match_a_plain_walk(P: int, tree) -> None:
    parent = tree(P)
    m = wafer.tree_metrics(parent)
    assert (m.energy, m.depth, m.contention, m.distance) == metrics_by_loops(parent)
    assert parent[0] == -1 and np.all(parent[1:] < np.arange(1, P))


@pytest.mark.parametrize("P", [p for p in PS if p > 1])
@pytest.mark.parametrize("B", BS)
@pytest.mark.parametrize("T_R", [0, 2, 7])
def test_lemmas_follow_from_the_metrics(P: int, B: int, T_R: int) -> None:
    # Message / broadcast (Section 4): D = 1, L = P - 1, E = B (P - 1), C = B.
    assert wafer.message_time(P, B, T_R) == eq1(B * (P - 1), P - 1, 1, B, P - 1, T_R)
    assert wafer.broadcast_time(P, B, T_R) == wafer.message_time(P, B, T_R)
    # Star (Lemma 5.1): E = B P (P - 1) / 2, C = B (P - 1), D = 1.
    star = wafer.tree_metrics(wafer.star_tree(P))
    assert (star.energy, star.contention, star.depth) == (P * (P - 1) // 2, P - 1, 1)
    assert wafer.star_lemma_time(P, B, T_R) == pytest.approx(star.cycles(B, T_R))
    # Chain (Lemma 5.2): E = B (P - 1), C = B, D = P - 1.
    chain = wafer.tree_metrics(wafer.chain_tree(P))
    assert (chain.energy, chain.contention, chain.depth) == (P - 1, 1, P - 1)
    assert wafer.chain_time(P, B, T_R) == pytest.approx(chain.cycles(B, T_R))
    # Tree (Lemma 5.3) at powers of two: E = B P log2(P) / 2, C = B log2 P.
    if P & (P - 1) == 0:
        lg = int(math.log2(P))
        tree = wafer.tree_metrics(wafer.binary_tree(P))
        assert (tree.energy, tree.contention, tree.depth) == (P * lg // 2, lg, lg)
        assert wafer.tree_lemma_time(P, B, T_R) == pytest.approx(tree.cycles(B, T_R))
        assert wafer.tree_time(P, B, T_R) == pytest.approx(tree.cycles(B, T_R))
    # Two-Phase (Lemma 5.4) at squares: each phase has energy B (P - sqrt P),
    # depth 2 sqrt(P) - 2, contention 2B; the lemma bounds N and L by P.
    s = math.isqrt(P)
    if s * s == P and P >= 4:
        two = wafer.tree_metrics(wafer.two_phase_tree(P))
        assert two.energy == 2 * (P - s)
        assert (two.depth, two.contention) == (2 * s - 2, 2)
        lemma = wafer.two_phase_lemma_time(P, B, T_R)
        assert lemma == pytest.approx(eq1(2 * B * (P - s), P, 2 * s - 2, 2 * B, P, T_R))
        exact = eq1(2 * B * (P - s), P - 1, 2 * s - 2, 2 * B, P - 1, T_R)
        assert wafer.two_phase_time(P, B, T_R) == pytest.approx(exact)


@pytest.mark.parametrize("P", [2, 3, 8, 100, 512])
def test_refined_star_is_below_the_model_at_small_B(P: int) -> None:
    # Section 5.1: the pipelined Star beats its equation-(1) estimate when
    # P B / 2 + P - 1 > B (P - 1), i.e. for B < 2 (P - 1) / (P - 2).
    assert wafer.star_time(P, 1) <= wafer.star_lemma_time(P, 1)
    assert wafer.star_time(P, 1) == P + 2 * 2
    for B in (1, 2, 4, 64):
        same = B * (P - 2) >= 2 * (P - 1)
        assert (wafer.star_time(P, B) == wafer.star_lemma_time(P, B)) == same


def test_binary_tree_for_any_P() -> None:
    assert wafer.binary_tree(6).tolist() == [-1, 0, 0, 2, 0, 4]
    # 5 -> 4 -> 0 is the longest chain; the root hears from 1, 2 and 4.
    m = wafer.tree_metrics(wafer.binary_tree(6))
    assert (m.depth, m.contention) == (2, 3)


def _paper_rounds(P: int) -> tuple[list[int], list[int]]:
    """Section 5.3 as written: each round, every second active PE sends its
    partial result to the previous active PE and becomes inactive."""
    parent, round_of = [-1] * P, [0] * P
    active, r = list(range(P)), 0
    while len(active) > 1:
        r += 1
        for i in range(1, len(active), 2):
            parent[active[i]] = active[i - 1]
            round_of[active[i]] = r
        active = active[::2]
    return parent, round_of


def test_binary_tree_follows_the_papers_rounds_for_every_P() -> None:
    import math

    for P in range(1, 300):
        parent, round_of = _paper_rounds(P)
        assert wafer.binary_tree(P).tolist() == parent, P
        assert max(round_of) == (math.ceil(math.log2(P)) if P > 1 else 0)


def test_contention_counts_receives_in_sequence() -> None:
    # PE 1 takes PE 2 and PE 3 before PE 0 can take PE 4: three in a row,
    # although no PE receives more than two messages.
    m = wafer.tree_metrics([-1, 0, 1, 1, 0])
    assert m.contention == 3
    assert wafer.tree_metrics([-1, 0, 0, 2, 2]).contention == 2  # last child: pipelined
    assert wafer.tree_metrics([-1, 0, 1, 2, 3]).contention == 1


def test_two_phase_groups_from_the_far_end() -> None:
    # P = 10, S = 3: groups [7..9], [4..6], [1..3] and PE 0 alone.
    assert wafer.two_phase_group_size(10) == 3
    assert wafer.two_phase_tree(10).tolist() == [-1, 0, 1, 2, 1, 4, 5, 4, 7, 8]
    assert wafer.two_phase_tree(9).tolist() == [-1, 0, 1, 0, 3, 4, 3, 6, 7]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: wafer.chain_time(0, 1), "P must be >= 1"),
        (lambda: wafer.chain_time(4, 0), "B must be >= 1"),
        (lambda: wafer.chain_time(4, 1, T_R=-1), "T_R must be >= 0"),
        (lambda: wafer.tree_lemma_time(6, 1), "power of two"),
        (lambda: wafer.two_phase_lemma_time(10, 1), "perfect square"),
        (lambda: wafer.tree_metrics([0, 0]), "parent\\[0\\] must be -1"),
        (lambda: wafer.tree_metrics([-1, 1]), "parent\\[1\\] = 1 must be in"),
        (lambda: wafer.star_tree(1 << 40), "P must be <="),
    ],
)
def test_bad_input(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_types() -> None:
    with pytest.raises(TypeError, match="P must be an integer"):
        wafer.chain_time(4.5, 1)
    with pytest.raises(TypeError, match="parent"):
        wafer.tree_metrics([[-1]])
    assert wc.wafer is wafer
