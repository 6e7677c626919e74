"""The generic gather, scatter, reduce-scatter, allgather and long-message
broadcast builders: verified and executed for every rank count, their closed
forms against the simulator, their bounds, and the 16-rank line broadcast."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import _generic_common, generic, generic_blocks, generic_rooted

GATHER = ["generic_linear_gather", "generic_binomial_gather", "generic_chain_gather"]
SCATTER = [
    "generic_linear_scatter",
    "generic_binomial_scatter",
    "generic_chain_scatter",
]
REDUCE_SCATTER = [
    "generic_ring_reduce_scatter",
    "generic_recursive_halving_reduce_scatter",
]
ALLGATHER = [
    "generic_ring_allgather",
    "generic_recursive_doubling_allgather",
    "generic_bruck_allgather",
]
BROADCAST = ["generic_chain_broadcast", "generic_scatter_allgather_broadcast"]
NEW = GATHER + SCATTER + REDUCE_SCATTER + ALLGATHER + BROADCAST
ROOTED = GATHER + SCATTER + BROADCAST


def _options(name: str, p: int) -> dict:
    return {"root": (2 * p) // 3} if name in ROOTED else {}


def _near_equal(total: int, parts: int) -> list[int]:
    """The documented layout, written out: the first total % parts one larger."""
    return [total // parts + (b < total % parts) for b in range(parts)]


def _expected(name: str, x: np.ndarray, p: int, root: int | None) -> dict:
    """Cells the collective defines: {rank: (element slice, values)} lists.

    One element per byte, so the elements of block ``b`` are the bytes of
    the documented layout.
    """
    S = x.shape[1]
    collective = wc.algorithm_info(name).collective
    if collective == "broadcast":
        return {r: [(slice(0, S), x[root])] for r in range(p)}
    off = np.concatenate([[0], np.cumsum(_near_equal(S, p))])
    blk = [slice(int(off[b]), int(off[b + 1])) for b in range(p)]
    if collective == "gather":
        return {root: [(blk[b], x[b, blk[b]]) for b in range(p)]}
    if collective == "scatter":
        return {j: [(blk[j], x[root, blk[j]])] for j in range(p)}
    if collective == "reduce_scatter":
        return {r: [(blk[r], x[:, blk[r]].sum(axis=0))] for r in range(p)}
    whole = np.concatenate([x[b, blk[b]] for b in range(p)])
    return {r: [(slice(0, S), whole)] for r in range(p)}


def _check(name: str, s: wc.Schedule, p: int, size: int, rng) -> None:
    """Verified, laid out as documented, and right on random data."""
    assert wc.verify(s).ok
    assert s.name == name and s.num_ranks == p
    info = wc.algorithm_info(name)
    root = s.root if info.collective in ("gather", "scatter", "broadcast") else None
    if info.collective != "broadcast":
        assert s.block_bytes.tolist() == _near_equal(size, p)
    if info.collective in ("reduce_scatter", "allgather"):
        assert s.owners.tolist() == list(range(p))
    if size == 0:
        return
    x = rng.integers(-1000, 1000, size=(p, size))
    out = wc.execute(s, x)
    for r, cells in _expected(name, x, p, root).items():
        for where, want in cells:
            np.testing.assert_array_equal(out[r, where], want, err_msg=f"rank {r}")


def test_the_registry_lists_the_family() -> None:
    for names, collective in (
        (GATHER, "gather"),
        (SCATTER, "scatter"),
        (REDUCE_SCATTER, "reduce_scatter"),
        (ALLGATHER, "allgather"),
        (BROADCAST, "broadcast"),
    ):
        listed = {a.name: a for a in wc.algorithms(collective)}
        for name in names:
            info = listed[name]
            assert info.family == "generic" and info.predict is not None
            assert info.source and info.label
            # wafercoll.generic exposes every builder
            assert getattr(generic, info.builder.__name__) is info.builder


@pytest.mark.parametrize("name", NEW)
def test_every_rank_count_verifies_and_executes(name: str) -> None:
    rng = np.random.default_rng(31)
    for p in range(1, 34):
        # odd byte counts, fewer bytes than ranks, and empty vectors
        for size in sorted({0, 1, max(p - 1, 1), 3 * p + 1, 64 * p}):
            s = wc.build(name, ranks=p, size_bytes=size, **_options(name, p))
            _check(name, s, p, size, rng)


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize(
    "topology",
    [wc.mesh(3, 3), wc.mesh(2, 4), wc.torus(3, 5), wc.torus(4, 4)],
    ids=lambda t: t.name,
)
def test_meshes_and_tori(name: str, topology: wc.Topology) -> None:
    p = topology.num_endpoints
    s = wc.build(name, topology=topology, size_bytes=40 * p + 7, **_options(name, p))
    _check(name, s, p, 40 * p + 7, np.random.default_rng(5))


@pytest.mark.parametrize("name", ROOTED)
def test_every_root(name: str) -> None:
    rng = np.random.default_rng(7)
    for p in (5, 8):
        for root in range(p):
            s = wc.build(name, ranks=p, size_bytes=6 * p + 1, root=root)
            assert s.root == root
            _check(name, s, p, 6 * p + 1, rng)


@pytest.mark.parametrize(
    "name", ["generic_chain_gather", "generic_chain_scatter", "generic_chain_broadcast"]
)
def test_chains_follow_their_order(name: str) -> None:
    order = [3, 0, 5, 1, 4, 2]
    s = wc.build(name, ranks=6, size_bytes=61, root=3, order=order)
    _check(name, s, 6, 61, np.random.default_rng(3))
    # every transfer is between neighbours of the order
    pos = {r: i for i, r in enumerate(order)}
    for t in range(s.num_transfers):
        tr = s.transfer(t)
        assert abs(pos[tr["src"]] - pos[tr["dst"][0]]) == 1


def _blocks(transfer: dict) -> list[int]:
    """The block indices of a transfer's JSON ``blocks`` field."""
    out: list[int] = []
    for b in transfer["blocks"]:
        out.extend(range(b[0], b[1]) if isinstance(b, list) else [b])
    return sorted(out)


def test_binomial_gather_sends_whole_subtrees() -> None:
    # p = 8, root 5: position 4 (rank 1) gathers positions 4..7 (ranks 1..4),
    # which it sends to the root in one message at the last step
    s = wc.build("generic_binomial_gather", ranks=8, size_bytes=8, root=5)
    last = s.transfer(s.num_transfers - 1)
    assert (last["src"], last["dst"]) == (1, [5])
    assert _blocks(last) == [1, 2, 3, 4]
    # the wrap past rank 7: position 2 (rank 7) sends positions 2, 3 (ranks 7, 0)
    wrapped = [
        s.transfer(t)
        for t in range(s.num_transfers)
        if s.transfer(t)["src"] == 7 and s.transfer(t)["dst"] == [5]
    ]
    assert len(wrapped) == 1 and _blocks(wrapped[0]) == [0, 7]


# -- closed forms --------------------------------------------------------------------


def _crossbar(p: int) -> wc.Topology:
    """A link per ordered pair: every message one hop, nothing shared."""
    return wc.custom(p, [(i, j) for i in range(p) for j in range(p) if i != j])


NET = wc.NetworkModel(1e9, alpha_s=1e-6, hop_latency_s=1e-7, gamma_s_per_byte=3e-10)
A, B, G = 1e-6 + 1e-7, 1e-9, 3e-10  # one hop's alpha, beta and gamma under NET


def _textbook(name: str, p: int, S: int) -> float:
    """The published forms, written out (p divides S; L = ceil(log2 p))."""
    L = math.ceil(math.log2(p))
    part = (p - 1) / p * S
    forms = {
        "generic_linear_gather": (p - 1) * A + part * B,
        "generic_chain_gather": (p - 1) * A + part * B,
        "generic_binomial_gather": L * A + part * B,
        "generic_linear_scatter": (p - 1) * A + part * B,
        "generic_chain_scatter": (p - 1) * A + part * B,
        "generic_binomial_scatter": L * A + part * B,
        "generic_ring_reduce_scatter": (p - 1) * A + part * (B + G),
        "generic_ring_allgather": (p - 1) * A + part * B,
        "generic_bruck_allgather": L * A + part * B,
        "generic_scatter_allgather_broadcast": (L + p - 1) * A + 2 * part * B,
    }
    if p == 1 << (p.bit_length() - 1):
        forms["generic_recursive_halving_reduce_scatter"] = L * A + part * (B + G)
        forms["generic_recursive_doubling_allgather"] = L * A + part * B
    return forms[name]


@pytest.mark.parametrize("name", [n for n in NEW if n != "generic_chain_broadcast"])
@pytest.mark.parametrize("p", [2, 3, 4, 6, 8, 11])
def test_closed_forms_are_exact_without_contention(name: str, p: int) -> None:
    topo = _crossbar(p)
    S = p * 3000
    s = wc.build(name, topology=topo, size_bytes=S, **_options(name, p))
    t = wc.simulate(s, topo, NET).time_s
    pred = wc.algorithm_info(name).predict(p, S, topo, NET)
    assert t == pytest.approx(pred, rel=1e-9)
    try:
        assert pred == pytest.approx(_textbook(name, p, S), rel=1e-9)
    except KeyError:  # the fold's recurrence: no single published form
        assert name.startswith("generic_recursive_")
    assert wc.algorithm_info(name).predict(p, S, topo, NET.replace(ports=1)) is None


@pytest.mark.parametrize("p", [2, 3, 5, 9, 16])
@pytest.mark.parametrize("size", [1000, 4096, 99_991])
def test_chain_broadcast_form_is_exact_on_a_line(p: int, size: int) -> None:
    # (k + p - 2) steps; with r = S mod k longer chunks the longest path
    # takes p - 2 + r of them
    topo = wc.line(p)
    s = wc.build("generic_chain_broadcast", topology=topo, size_bytes=size)
    k = s.num_blocks
    assert k == generic.chain_chunks(p, size, topo)
    short, r = divmod(size, k)
    want = (k + p - 2) * A + ((p - 2 + r) * (short + (r > 0)) + (k - r) * short) * B
    if p == 2:
        want = A + size * B  # one message
    t = wc.simulate(s, topo, NET).time_s
    assert t == pytest.approx(want, rel=1e-9)
    pred = wc.algorithm_info("generic_chain_broadcast").predict(p, size, topo, NET)
    assert pred == pytest.approx(want, rel=1e-9)


def test_ring_forms_are_exact_on_a_ring() -> None:
    for name in ("generic_ring_reduce_scatter", "generic_ring_allgather"):
        for p in (3, 7, 12):
            topo, S = wc.ring(p), p * 5000
            t = wc.simulate(wc.build(name, topology=topo, size_bytes=S), topo, NET)
            assert t.time_s == pytest.approx(_textbook(name, p, S), rel=1e-9)


def test_default_chunks_minimise_the_hockney_time() -> None:
    # With alpha / beta = HALF_BYTES the default chunk count is the best one
    # (brute force over every k), and the time is near the pipeline's optimum
    # (sqrt((p - 2) alpha) + sqrt(S beta))^2.
    b = 1e-9
    a = generic.HALF_BYTES * b
    for p, S in ((4, 1 << 16), (16, 1 << 20), (33, 12345)):
        k = generic.chain_chunks(p, S)

        def time(k: int, p: int = p, S: int = S) -> float:
            return (k + p - 2) * (a + S / k * b)

        best = min(time(j) for j in range(1, min(S, generic.CHAIN_MAX_CHUNKS) + 1))
        assert time(k) == pytest.approx(best, rel=1e-4)
        optimum = (math.sqrt((p - 2) * a) + math.sqrt(S * b)) ** 2
        assert best >= optimum * (1 - 1e-12)
        assert time(k) <= optimum * 1.01
    # a topology whose hops are slow to start takes fewer, larger chunks
    slow = wc.line(16, latency_s=1e-5)
    assert generic.chain_chunks(16, 1 << 20, slow) < generic.chain_chunks(16, 1 << 20)
    assert generic.chain_chunks(1, 1 << 20) == 1
    assert generic.chain_chunks(16, 0) == 1


# -- bounds ----------------------------------------------------------------------------


def test_a_16_rank_line_broadcast_is_within_1_1_of_its_bound() -> None:
    topo, S = wc.line(16), 1 << 20
    net = wc.NetworkModel(1e9)
    bound = wc.bounds.lower_bound(topo, net, "broadcast", S).time_s
    chain = wc.build("generic_chain_broadcast", topology=topo, size_bytes=S)
    ratio = wc.simulate(chain, topo, net).time_s / bound
    # k = 169 chunks: (169 + 14) / 169 of S / bandwidth, the bound's S / bandwidth
    assert chain.num_blocks == 169
    assert ratio == pytest.approx(183 / 169, rel=1e-3)
    assert ratio <= 1.1
    binomial = wc.build("generic_binomial_broadcast", topology=topo, size_bytes=S)
    assert wc.simulate(binomial, topo, net).time_s / bound == pytest.approx(4.0)


@pytest.mark.parametrize("name", NEW)
def test_simulated_times_respect_the_lower_bound(name: str) -> None:
    net = wc.NetworkModel(1e9, hop_latency_s=1e-8, packet_bytes=2048)
    info = wc.algorithm_info(name)
    for topo in (
        wc.line(7),
        wc.ring(6),
        wc.mesh(3, 3),
        wc.torus(3, 4),
        wc.topology.cluster(3, 2),
    ):
        p = topo.num_endpoints
        S = 24 * 1024 + 3
        opts = _options(name, p)
        s = wc.build(name, topology=topo, size_bytes=S, **opts)
        t = wc.simulate(s, topo, net).time_s
        bound = wc.bounds.lower_bound(topo, net, info.collective, S, **opts)
        assert t >= bound.time_s * (1 - 1e-9), (topo.name, bound.binding)


# -- bad input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "options", "error", "match"),
    [
        ("generic_chain_broadcast", {"chunks": 0}, ValueError, "chunks must be >= 1"),
        (
            "generic_chain_broadcast",
            {"chunks": 1 << 20},
            ValueError,
            "chunks must be <=",
        ),
        (
            "generic_chain_broadcast",
            {"chunks": 2.5},
            TypeError,
            "chunks must be an int",
        ),
        ("generic_chain_gather", {"order": [0, 1, 1, 3]}, ValueError, "exactly once"),
        ("generic_chain_gather", {"order": [0, 1, 2]}, ValueError, "exactly once"),
        (
            "generic_chain_scatter",
            {"order": [1, 0, 2, 3]},
            ValueError,
            "start at the root",
        ),
        ("generic_chain_broadcast", {"order": [0.0, 1, 2, 3]}, TypeError, "integer"),
        ("generic_chain_broadcast", {"order": "0123"}, TypeError, "sequence"),
        ("generic_binomial_gather", {"root": 4}, ValueError, "root must be <= 3"),
        ("generic_ring_allgather", {"root": 0}, TypeError, "unexpected option 'root'"),
    ],
)
def test_bad_options_are_named(
    name: str, options: dict, error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        wc.build(name, ranks=4, size_bytes=64, **options)


def test_module_examples_run() -> None:
    for module in (_generic_common, generic_blocks, generic_rooted):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0
