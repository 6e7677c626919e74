"""Auto-Gen and the lower bound against independent searches.

The exhaustive search enumerates every pre-order, non-crossing reduction tree;
the plain dynamic programs follow the paper's recurrences with an O(n) inner
loop (no convexity argument), so they check the fast C++ versions.
"""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest

from wafercoll import wafer

BS = [1, 2, 3, 8, 64, 1000]
INF = math.inf


def all_trees(n: int) -> list[list[int]]:
    """Every pre-order non-crossing tree on PEs 0..n-1 rooted at 0 (parent lists)."""

    @functools.cache
    def forests(lo: int, hi: int) -> tuple[tuple[tuple[int, int], ...], ...]:
        # Ways to cover [lo, hi) by consecutive subtrees; edges (child, parent)
        # for the subtrees' insides, roots listed separately via a marker -1.
        if lo == hi:
            return ((),)
        out = []
        for mid in range(lo + 1, hi + 1):  # first subtree [lo, mid) rooted at lo
            for inside in forests(lo + 1, mid):
                inner = tuple((c, lo) if p == -1 else (c, p) for c, p in inside)
                for rest in forests(mid, hi):
                    out.append(((lo, -1), *inner, *rest))
        return tuple(out)

    trees = []
    for f in forests(1, n):
        parent = [-1] * n
        for c, p in f:
            parent[c] = 0 if p == -1 else p
        trees.append(parent)
    return trees or [[-1]]


def contention(parent: list[int]) -> int:
    """Receive slots in sequence: C(v) = max(m, max_j C(child_j) + m - j)."""
    kids: list[list[int]] = [[] for _ in parent]
    for v in range(1, len(parent)):
        kids[parent[v]].append(v)

    def need(v: int) -> int:
        m = len(kids[v])
        return max([m] + [need(c) + m - j for j, c in enumerate(kids[v], 1)])

    return max(1, need(0))


def eq1_tree(parent: list[int], B: int, T_R: float) -> float:
    n = len(parent)
    if n == 1:
        return 0.0
    energy = sum(v - parent[v] for v in range(1, n))
    depth = [0] * n
    for v in range(1, n):
        depth[v] = depth[parent[v]] + 1
    c = contention(parent)
    return max(B * c, B * energy / (n - 1) + n - 1) + (2 * T_R + 1) * max(depth)


@pytest.mark.parametrize("n", range(1, 10))
@pytest.mark.parametrize("T_R", [0, 2])
def test_autogen_equals_exhaustive_search(n: int, T_R: float) -> None:
    trees = all_trees(n)
    catalan = math.comb(2 * (n - 1), n - 1) // n if n > 1 else 1
    assert len(trees) == catalan  # ordered trees on n nodes
    for B in BS:
        best = min(eq1_tree(t, B, T_R) for t in trees)
        got = wafer.autogen(n, B, T_R)
        assert got.cycles == pytest.approx(best, rel=1e-12)
        assert wafer.autogen_cycles(n, B, T_R)[-1] == pytest.approx(best, rel=1e-12)


def plain_autogen_table(P: int) -> np.ndarray:
    """E[n, d, c] by the paper's recurrence with an O(n) inner minimum."""
    E = np.full((P + 1, P, P), INF)
    E[1, :, :] = 0
    for n in range(2, P + 1):
        for d in range(1, P):
            for c in range(1, P):
                E[n, d, c] = min(
                    E[i, d, c - 1] + E[n - i, d - 1, c] + i for i in range(1, n)
                )
    return E


@pytest.mark.parametrize("T_R", [0, 2, 7])
def test_fast_dp_matches_plain_dp_for_every_row_length(T_R: float) -> None:
    P = 22
    E = plain_autogen_table(P)
    k = 2 * T_R + 1
    for B in BS:
        fast = wafer.autogen_cycles(P, B, T_R)
        for n in range(2, P + 1):
            best = min(
                max(B * c, B * E[n, d, c] / (n - 1) + n - 1) + k * d
                for d in range(1, P)
                for c in range(1, P)
                if E[n, d, c] < INF
            )
            assert fast[n - 1] == pytest.approx(best, rel=1e-12), (B, n)
            if n in (2, 7, 16, 22):
                assert wafer.autogen(n, B, T_R).cycles == pytest.approx(best, rel=1e-12)


def plain_lower_bound(P: int, B: int, T_R: float) -> list[float]:
    E = np.full((P + 1, P), INF)
    E[1, :] = 0
    for D in range(1, P):
        for n in range(2, P + 1):
            E[n, D] = min(
                E[i, D] + E[n - i, D - 1] + min(i, n - i + 1) for i in range(1, n)
            )
    k = 2 * T_R + 1
    out = [0.0]
    for n in range(2, P + 1):
        out.append(min(B * E[n, D] / (n - 1) + n - 1 + k * D for D in range(1, P)))
    return out


@pytest.mark.parametrize("B", BS)
def test_lower_bound_matches_plain_recursion(B: int) -> None:
    P = 26
    assert wafer.lower_bound_cycles(P, B, 2) == pytest.approx(
        plain_lower_bound(P, B, 2)
    )


def is_preorder_noncrossing(parent: np.ndarray) -> bool:
    n = len(parent)
    kids: list[list[int]] = [[] for _ in range(n)]
    for v in range(1, n):
        if not 0 <= parent[v] < v:
            return False
        kids[parent[v]].append(v)

    def span(v: int) -> int:  # subtree of v must be [v, span(v))
        end = v + 1
        for c in kids[v]:
            if c != end:
                return -1
            end = span(c)
            if end < 0:
                return -1
        return end

    return span(0) == n


@pytest.mark.parametrize("P", [2, 3, 5, 8, 13, 17, 31, 32, 33, 64])
@pytest.mark.parametrize("B", BS)
def test_autogen_beats_fixed_patterns_and_respects_the_bound(P: int, B: int) -> None:
    t = wafer.autogen(P, B)
    fixed = {
        "star (eq. 1)": wafer.tree_cycles(wafer.star_tree(P), B),
        "chain": wafer.tree_cycles(wafer.chain_tree(P), B),
        "tree": wafer.tree_cycles(wafer.binary_tree(P), B),
        "two_phase": wafer.tree_cycles(wafer.two_phase_tree(P), B),
    }
    for name, value in fixed.items():
        assert t.cycles <= value * (1 + 1e-12), name
    assert wafer.lower_bound(P, B) <= t.cycles * (1 + 1e-12)
    # The tree found is a valid pattern and re-evaluates to the DP's cycles.
    assert is_preorder_noncrossing(t.parent)
    m = wafer.tree_metrics(t.parent)
    assert (m.depth, m.contention, m.energy) == (t.depth, t.contention, t.energy)
    assert m.contention == contention(t.parent.tolist())
    assert m.cycles(B) == pytest.approx(t.cycles, rel=1e-12)
    assert t.depth <= t.depth_bound and t.contention <= t.contention_bound


def test_fixed_pattern_upper_bound_matches_the_trees() -> None:
    from wafercoll import _core

    for B in (1, 8, 1000):
        got = _core.wafer_fixed_pattern_cycles(80, B, 2.0)
        for n in range(2, 81):
            want = min(
                wafer.tree_cycles(f(n), B)
                for f in (
                    wafer.star_tree,
                    wafer.chain_tree,
                    wafer.binary_tree,
                    wafer.two_phase_tree,
                )
            )
            assert got[n - 1] == pytest.approx(want, rel=1e-12), (B, n)


def test_reduce_time_dispatch() -> None:
    assert wafer.reduce_time("chain", 16, 8) == wafer.chain_time(16, 8)
    assert wafer.reduce_time("star", 16, 8) == wafer.star_time(16, 8)
    assert wafer.reduce_time("autogen", 16, 8) == wafer.autogen(16, 8).cycles
    with pytest.raises(ValueError, match="algorithm must be one of"):
        wafer.reduce_time("ring", 16, 8)


def test_optimality_ratios_table() -> None:
    r = wafer.optimality_ratios([4, 9, 16], [1, 32])
    assert len(r["P"]) == 3 * 2 * len(wafer.REDUCE_ALGORITHMS)
    assert np.allclose(r["ratio"], r["cycles"] / r["lower_bound"])
    auto = r["algorithm"] == "autogen"
    assert np.all(r["ratio"][auto] >= 1 - 1e-12)
    for p, b, c in zip(r["P"][auto], r["B"][auto], r["cycles"][auto]):
        assert c == pytest.approx(wafer.autogen(int(p), int(b)).cycles)


def test_refined_star_can_fall_below_the_bound() -> None:
    # Reported, not hidden: at B = 1 the pipelined Star (P + 2 T_R) is below
    # the bound, whose energy and distance terms add up instead of overlapping.
    P = 64
    assert wafer.star_time(P, 1) < wafer.lower_bound(P, 1)
    assert wafer.star_lemma_time(P, 1) >= wafer.lower_bound(P, 1)


def test_routing_plan() -> None:
    t = wafer.autogen(40, 16)
    plan = t.routing_plan()
    text = json.dumps(plan)
    assert json.loads(text) == plan
    assert plan["colours"] == [0, 1]
    pes = plan["pes"]
    for v in range(1, 40):
        p = int(t.parent[v])
        assert pes[v]["colour"] != (pes[p]["colour"] if p else 0) or p == 0
        # The stream of v is configured at its sender, its receiver and every
        # router in between, on its colour, once each.
        for u in range(p, v + 1):
            streams = [c for c in pes[u]["configurations"] if c["stream"] == v]
            assert len(streams) == 1 and streams[0]["colour"] == pes[v]["colour"]
    chain = wafer.routing_plan(wafer.chain_tree(6))
    assert not any(pe["control_wavelet"] for pe in chain["pes"])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: wafer.autogen(0, 1), "P must be >= 1"),
        (lambda: wafer.autogen(8, 0), "B must be >= 1"),
        (lambda: wafer.autogen(8, 1, T_R=-1), "T_R must be >= 0"),
        (lambda: wafer.autogen(1 << 17, 1), "P must be <= 65536"),
        (lambda: wafer.lower_bound(8, 0), "B must be >= 1"),
        (lambda: wafer.optimality_ratios([1], [1]), "Ps\\[i\\] must be >= 2"),
    ],
)
def test_bad_input(call, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_tables_that_would_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="GiB"):
        wafer.autogen(60000, 1)
