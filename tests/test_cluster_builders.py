"""Node-aware allreduce builders (paper 001): correctness, partner rules, counts."""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.cluster import costs, nap_plan, rank_table

NAMES = (
    "cluster_rd_allreduce",
    "cluster_smp_allreduce",
    "cluster_nap_allreduce",
    "cluster_dissemination_allreduce",
)
PPNS = (1, 2, 3, 4, 8, 16)


def _transfers(s: wc.Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """src, dst, op and step of every transfer (single-destination schedules)."""
    tr = s.to_dict()["transfers"]
    dst = np.array([t["dst"][0] for t in tr], dtype=np.int64)
    assert all(len(t["dst"]) == 1 for t in tr)
    return s.src.astype(np.int64), dst, s.op.astype(np.int64), s.steps()


@pytest.mark.parametrize("ppn", PPNS)
def test_every_builder_verifies_and_executes(ppn: int) -> None:
    rng = np.random.default_rng(ppn)
    for n in range(1, 41):
        p = n * ppn
        x = rng.integers(-1000, 1000, size=(p, 3))
        for name in NAMES:
            s = wc.build(name, p, 3 * 8, ppn=ppn)
            assert wc.verify(s).ranks == p
            y = wc.execute(s, x)
            np.testing.assert_array_equal(y, np.broadcast_to(x.sum(axis=0), y.shape))


@pytest.mark.parametrize("name", NAMES[1:])
def test_rank_to_node_relabels_the_smp_schedule(name: str) -> None:
    rng = np.random.default_rng(7)
    nodes, ppn = 6, 4
    r2n = rng.permutation(np.repeat(np.arange(nodes), ppn))
    a = wc.build(name, nodes * ppn, 8, ppn=ppn)
    b = wc.build(name, nodes * ppn, 8, ppn=ppn, rank_to_node=r2n)
    wc.verify(b)
    table = rank_table(nodes * ppn, ppn, r2n)
    assert (r2n[table] == np.arange(nodes)[:, None]).all()
    sa, da, _, _ = _transfers(a)
    sb, db, _, _ = _transfers(b)
    # SMP rank r = node * ppn + local is rank table[node, local] in b.
    flat = table.ravel()
    np.testing.assert_array_equal(flat[sa], sb)
    np.testing.assert_array_equal(flat[da], db)
    topo = wc.topology.cluster(nodes, ppn, rank_to_node=r2n)
    c = wc.build(name, topology=topo, size_bytes=8)
    assert c.to_json().replace(c.name, "") == b.to_json().replace(b.name, "")


def test_rd_ignores_the_node_layout() -> None:
    r2n = np.random.default_rng(3).permutation(np.repeat(np.arange(5), 4))
    a = wc.build("cluster_rd_allreduce", 20, 8, ppn=4, rank_to_node=r2n)
    assert a.to_json() == wc.build("cluster_rd_allreduce", 20, 8).to_json()


@pytest.mark.parametrize("p", [1, 2, 8, 64, 256])
def test_rd_matches_generic_recursive_doubling_for_powers_of_two(p: int) -> None:
    a = _transfers(wc.build("cluster_rd_allreduce", p, 8))
    b = _transfers(wc.build("generic_recursive_doubling_allreduce", p, 8))
    key = lambda t: sorted(zip(t[3].tolist(), t[0].tolist(), t[1].tolist()))  # noqa: E731
    assert key(a) == key(b)


@pytest.mark.parametrize("p", [3, 6, 12, 40])
def test_rd_folds_the_highest_ranks_onto_the_lowest(p: int) -> None:
    src, dst, op, _ = _transfers(wc.build("cluster_rd_allreduce", p, 8))
    q = 1 << (p.bit_length() - 1)
    fold_in = (op == 1) & ((src >= q) | (dst >= q))
    assert sorted(zip(src[fold_in].tolist(), dst[fold_in].tolist())) == [
        (r, r - q) for r in range(q, p)
    ]
    assert sorted(zip(src[op == 0].tolist(), dst[op == 0].tolist())) == [
        (r, r + q) for r in range(p - q)
    ]


def _inter_steps(s: wc.Schedule, ppn: int) -> list[set[tuple[int, int]]]:
    src, dst, _, step = _transfers(s)
    off = src // ppn != dst // ppn
    return [
        set(zip(src[off & (step == k)].tolist(), dst[off & (step == k)].tolist()))
        for k in sorted(set(step[off].tolist()))
    ]


def _authors_pairs(n: int, ppn: int, g: list[int]) -> list[set[tuple[int, int]]]:
    """The partner rule of recovered details §1.5, written out per process."""
    out, B = [], 1
    for gi in g:
        pairs = set()
        for m in range(n):
            G, j = (m // B) % gi, m % B
            del j
            for ell in range(ppn):
                if ell == G or ell >= gi:
                    continue
                partner = (m + (ell - G) * B) * ppn + G
                pairs.add((m * ppn + ell, partner))
        out.append(pairs)
        B *= gi
    return out


@pytest.mark.parametrize(
    ("n", "ppn", "g"),
    [
        (8, 4, [4, 2]),
        (16, 4, [4, 4]),
        (6, 4, [3, 2]),
        (6, 4, [2, 3]),
        (40, 8, [8, 5]),
        (32, 2, [2, 2, 2, 2, 2]),
        (12, 3, [3, 2, 2]),
    ],
)
def test_nap_follows_the_authors_partner_rule(n: int, ppn: int, g: list[int]) -> None:
    s = wc.build("cluster_nap_allreduce", n * ppn, 8, ppn=ppn, steps=g)
    wc.verify(s)
    got = _inter_steps(s, ppn)
    want = _authors_pairs(n, ppn, g)
    assert got == want
    for pairs in want:  # the rule is symmetric and always crosses nodes
        assert all((b, a) in pairs and a // ppn != b // ppn for a, b in pairs)


@pytest.mark.parametrize(("n", "ppn"), [(64, 4), (48, 4), (256, 16), (40, 16), (8, 2)])
def test_default_nap_plan_is_the_authors_list_where_it_applies(
    n: int, ppn: int
) -> None:
    # The authors' step list (recovered details §1.5): divide by ppn while
    # size > ppn, then append the rest.
    size, g = n, []
    while size > ppn:
        assert size % ppn == 0 or n == 40
        size //= ppn
        g.append(ppn)
    if size > 1:
        g.append(size)
    if math.prod(g) != n:  # the authors' list is wrong here (n = 40, ppn = 16)
        assert len(nap_plan(n, ppn)) == math.ceil(math.log(n, ppn))
        return
    s = wc.build("cluster_nap_allreduce", n * ppn, 8, ppn=ppn)
    assert _inter_steps(s, ppn) == _authors_pairs(n, ppn, g)


@pytest.mark.parametrize("ppn", [2, 3, 4, 8])
def test_nap_needs_ceil_log_ppn_inter_steps_for_any_node_count(ppn: int) -> None:
    for n in range(2, 70):
        s = wc.build("cluster_nap_allreduce", n * ppn, 8, ppn=ppn)
        src, dst, _, _ = _transfers(s)
        off = src // ppn != dst // ppn
        k = 0
        while ppn**k < n:
            k += 1
        sends = np.bincount(src[off], minlength=n * ppn)
        recvs = np.bincount(dst[off], minlength=n * ppn)
        # every process sends and receives at most once per inter-node step
        assert sends.max() <= k and recvs.max() == k, (n, ppn)


def _counts_of(s: wc.Schedule, ppn: int) -> dict[str, object]:
    """Counts measured on the dependency DAG of the schedule."""
    src, dst, op, _ = _transfers(s)
    deps = [t["deps"] for t in s.to_dict()["transfers"]]
    off = src // ppn != dst // ppn
    inter = np.zeros(src.size, dtype=np.int64)  # off-node transfers on a chain
    intra = np.zeros(src.size, dtype=np.int64)
    for t in s.topological_order().tolist():
        inter[t] = max((inter[d] for d in deps[t]), default=0) + int(off[t])
        intra[t] = max((intra[d] for d in deps[t]), default=0) + int(not off[t])
    levels = sorted(set(inter[off].tolist()))
    senders = [int(np.bincount(src[off & (inter == k)] // ppn).max()) for k in levels]
    red = np.bincount(dst[op == 1], minlength=s.num_ranks)
    return {
        "steps": s.num_steps,
        "inter_steps": int(inter.max()) if src.size else 0,
        "intra_steps": int(intra.max()) if src.size else 0,
        "senders_per_node": senders,
        "reductions": int(red.max()),
    }


CASES = [(1, 4), (16, 4), (64, 4), (8, 2), (32, 8), (256, 16), (48, 4), (6, 4), (9, 3)]


@pytest.mark.parametrize(("n", "ppn"), CASES)
@pytest.mark.parametrize("name", NAMES)
def test_closed_form_counts_match_the_schedules(name: str, n: int, ppn: int) -> None:
    s = wc.build(name, n * ppn, 8, ppn=ppn)
    got = _counts_of(s, ppn)
    want = costs.step_counts(name, n, ppn)
    for key, value in got.items():
        if want[key] is not None:
            assert value == want[key], key


@pytest.mark.parametrize(("n", "ppn", "k"), [(16, 4, 2), (256, 16, 2), (64, 4, 3)])
def test_counts_table_of_the_paper_for_powers_of_ppn(n: int, ppn: int, k: int) -> None:
    # recovered details §1.7 table, for n = ppn**k
    lg = int(math.log2(ppn))
    rd = costs.step_counts("rd", n, ppn)
    smp = costs.step_counts("smp", n, ppn)
    nap = costs.step_counts("nap", n, ppn)
    assert (rd["intra_steps"], rd["inter_steps"]) == (lg, k * lg)
    assert rd["senders_per_node"] == [ppn] * (k * lg)
    assert (smp["intra_steps"], smp["inter_steps"]) == (2 * lg, k * lg)
    assert smp["senders_per_node"] == [1] * (k * lg)
    assert (nap["intra_steps"], nap["inter_steps"]) == ((k + 1) * lg, k)
    assert nap["senders_per_node"] == [ppn - 1] * k
    assert nap["reductions_paper"] == (k + 1) * lg + k
    assert nap["reductions"] == (k + 1) * lg  # the copy formulation saves k adds
    s = wc.build("cluster_rd_allreduce", n * ppn, 8, ppn=ppn)
    src, dst, _, step = _transfers(s)
    off = src // ppn != dst // ppn
    for t in sorted(set(step[off].tolist())):  # RD: all ppn to ONE remote node
        sel = off & (step == t)
        for m in range(n):
            assert len(set((dst[sel & (src // ppn == m)] // ppn).tolist())) == 1


def test_bad_input_is_refused_with_the_parameter_named() -> None:
    with pytest.raises(ValueError, match="ppn = 3 must divide"):
        wc.build("cluster_nap_allreduce", 16, 8, ppn=3)
    with pytest.raises(ValueError, match=r"steps\[0\] = 8 exceeds ppn = 4"):
        wc.build("cluster_nap_allreduce", 32, 8, ppn=4, steps=[8])
    with pytest.raises(ValueError, match="multiply to 8, not to the node count 6"):
        wc.build("cluster_nap_allreduce", 24, 8, ppn=4, steps=[4, 2])
    with pytest.raises(ValueError, match="exactly ppn = 2"):
        wc.build("cluster_smp_allreduce", 4, 8, ppn=2, rank_to_node=[0, 0, 0, 1])
    with pytest.raises(ValueError, match="rank_to_node must be 4 integers"):
        wc.build("cluster_smp_allreduce", 4, 8, ppn=2, rank_to_node=[0, 1])
    with pytest.raises(ValueError, match="ppn is required"):
        wc.build("cluster_smp_allreduce", 4, 8)
    with pytest.raises(TypeError, match="ppn must be an integer"):
        wc.build("cluster_smp_allreduce", 4, 8, ppn=2.0)
    with pytest.raises(ValueError, match="ranks must be <="):
        wc.cluster.rank_table(1 << 23, 1)


def test_large_builds_stay_vectorised() -> None:
    s = wc.build("cluster_nap_allreduce", 1 << 14, 8, ppn=16)
    c = costs.step_counts("nap", 1 << 10, 16)
    assert s.num_steps == c["steps"]
