"""Mesh AllReduce builders (paper 004): verified, executed, timesteps simulated.

Expected timestep counts are derived in the comments from the algorithms'
structure (tree heights, ring lengths, chunk counts); the MultiTree step
counts are those of the reference code's run (recovered details 2.3), an
independent implementation.
"""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import mcm

SHAPES = [(m, n) for m in range(2, 10) for n in range(2, 10) if m <= n and m * n <= 30]
SHAPES += [
    (3, 2),
    (4, 3),
    (5, 3),
    (7, 2),
    (8, 8),
    (9, 9),
    (1, 2),
    (1, 5),
    (1, 6),
    (6, 1),
]
SIZES = [997, 4096]


def _applies(name: str, m: int, n: int) -> bool:
    line = m == 1 or n == 1
    odd = (m * n) % 2 == 1
    if name == "mesh_ring_bi_allreduce":
        return not line and not odd
    if name == "mesh_ring_bi_odd_allreduce":
        return not line and odd
    return True


@pytest.mark.parametrize("name", mcm.MESH_ALGORITHMS)
def test_every_builder_verifies_and_executes(
    name: str, rng: np.random.Generator
) -> None:
    for m, n in SHAPES:
        if not _applies(name, m, n):
            continue
        top = wc.topology.mesh(m, n)
        for size in SIZES:
            s = wc.build(name, topology=top, size_bytes=size)
            wc.verify(s)
            x = rng.integers(-1000, 1000, size=(m * n, size))
            out = wc.execute(s, x, check=False)
            part = s.participants
            want = x[part].sum(axis=0)
            assert np.array_equal(out[part], np.broadcast_to(want, out[part].shape)), (
                name,
                m,
                n,
                size,
            )


@pytest.mark.parametrize(
    "name", ["mesh_tto_allreduce", "mesh_multitree_allreduce", "mesh_dbtree_allreduce"]
)
@pytest.mark.parametrize("chunk", [25, 100, 333])
def test_chunked_trees_verify(name: str, chunk: int, rng: np.random.Generator) -> None:
    for m, n in [(2, 3), (3, 3), (4, 4), (1, 4)]:
        s = wc.build(
            name, topology=wc.topology.mesh(m, n), size_bytes=1001, chunk_bytes=chunk
        )
        wc.verify(s)
        x = rng.standard_normal((m * n, 1001))
        out = wc.execute(s, x, check=False)
        part = s.participants
        assert np.allclose(out[part], x[part].sum(axis=0))


@pytest.mark.parametrize("phase", ["reduce_scatter", "allgather"])
@pytest.mark.parametrize(
    "name",
    ["mesh_tto_allreduce", "mesh_multitree_allreduce", "mesh_ring_bi_odd_allreduce"],
)
def test_single_phases_verify(name: str, phase: str) -> None:
    for m, n in [(3, 3), (5, 5), (3, 5)]:
        kw = {"chunk_bytes": 50} if name == "mesh_tto_allreduce" else {}
        s = wc.build(
            name.replace("allreduce", phase),
            topology=wc.topology.mesh(m, n),
            size_bytes=600,
            **kw,
        )
        assert s.collective == phase
        wc.verify(s)


def test_ring_bi_odd_centre_and_corners() -> None:
    for n in (3, 5, 7):
        for ex in ("centre", (0, 0), (0, n - 1), (n - 1, 0), "corner"):
            s = wc.build(
                "mesh_ring_bi_odd_allreduce",
                topology=wc.topology.mesh(n, n),
                size_bytes=500,
                exclude=ex,
            )
            wc.verify(s)


def test_tto_trees_are_disjoint_and_span() -> None:
    for m in range(2, 10):
        for n in range(2, 10):
            tr = mcm.tto_trees(m, n)
            assert tr.excluded == (m - 1) * n
            links: set[tuple[int, int]] = set()
            for par, root in zip(tr.parents, tr.roots, strict=True):
                assert par[root] == -1
                members = np.flatnonzero(par != -2)
                want = set(range(m * n))
                if root == n - 1:
                    want.discard(tr.excluded)
                assert set(members.tolist()) == want
                for v in np.flatnonzero(par >= 0):
                    u = int(par[v])
                    # a mesh link, used once over the three trees (reduce direction)
                    assert abs(u // n - v // n) + abs(u % n - v % n) == 1
                    assert (int(v), u) not in links
                    links.add((int(v), u))
                depth = mcm.tree_depths(par)
                assert depth[root] == 0 and (depth[members] >= 0).all()
            # N - 1 edges in the corner trees, N - 2 in the third
            assert len(links) == 3 * m * n - 4
            assert tr.height == m + n - 2


def test_hamiltonian_cycles_are_cycles() -> None:
    def check(cyc: np.ndarray, m: int, n: int, skip: int | None) -> None:
        want = set(range(m * n)) - ({skip} if skip is not None else set())
        assert sorted(cyc.tolist()) == sorted(want)
        top = wc.topology.mesh(m, n)
        for a, b in zip(cyc, np.roll(cyc, -1), strict=True):
            assert top.link_id(int(a), int(b)) >= 0

    for m in range(2, 12):
        for n in range(2, 12):
            if (m * n) % 2 == 0:
                check(mcm.hamiltonian_cycle(m, n), m, n, None)
                with pytest.raises(ValueError, match="exclude"):
                    mcm.hamiltonian_cycle(m, n, exclude="corner")
                continue
            with pytest.raises(ValueError, match="no Hamiltonian cycle"):
                mcm.hamiltonian_cycle(m, n)
            for r, c in [(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)]:
                check(mcm.hamiltonian_cycle(m, n, (r, c)), m, n, r * n + c)
            if m == n:
                check(mcm.hamiltonian_cycle(m, n, "centre"), m, n, (m * n) // 2)
    path = mcm.hamiltonian_path(3, 4)
    top = wc.topology.mesh(3, 4)
    assert sorted(path.tolist()) == list(range(12))
    assert all(top.link_id(int(a), int(b)) >= 0 for a, b in zip(path, path[1:]))


# ------------------------------------------------------------------ timesteps


def _steps(name: str, m: int, n: int, size: int, **kw: object) -> float:
    top = wc.topology.mesh(m, n)
    name = name.replace("allreduce", str(kw.pop("phase", "allreduce")))
    s = wc.build(name, topology=top, size_bytes=size, **kw)
    return wc.simulate(s, top, mcm.FIGURE_TIMESTEPS).cycles


def test_fig5_two_corner_trees_on_a_line() -> None:
    # 1x4 line, 5 chunks of 4 pieces. Two trees: 2 pieces per edge, height 3,
    # chunk c leaves its last edge at 2 (3 + c - 1): 2 * 7 = 14. Four trees
    # (MultiTree, one piece per tree, T = 3 steps) one chunk after the other:
    # 3 * 5 = 15.
    chunks, pieces = 5, 4
    two = _steps(
        "mesh_tto_allreduce",
        1,
        4,
        chunks * pieces,
        chunk_bytes=pieces,
        phase="reduce_scatter",
    )
    assert two == 2 * (3 + chunks - 1)
    mt = mcm.multitree(1, 4)
    assert mt.steps == 3
    four = _steps(
        "mesh_multitree_allreduce",
        1,
        4,
        chunks * pieces,
        chunk_bytes=pieces,
        phase="reduce_scatter",
        sync="step",
    )
    assert four == mt.steps * chunks
    assert two < four


def test_fig7_tto_against_multitree_3x3() -> None:
    # 3x3, 5 chunks of 9 pieces (one per MultiTree tree). TTO: 3 pieces per
    # tree edge, height H = 4: 3 (H + C - 1) = 24. MultiTree with the MCM
    # setting (sort on): T = 6 steps per chunk, 30.
    C = 5
    tto = _steps(
        "mesh_tto_allreduce", 3, 3, 9 * C, chunk_bytes=9, phase="reduce_scatter"
    )
    assert tto == 3 * (mcm.tto_trees(3, 3).height + C - 1)
    T = mcm.multitree(3, 3, sort=True).steps
    mt = _steps(
        "mesh_multitree_allreduce",
        3,
        3,
        9 * C,
        chunk_bytes=9,
        phase="reduce_scatter",
        sync="step",
    )
    assert mt == T * C
    assert (tto, mt) == (24, 30)


@pytest.mark.parametrize("exclude", ["corner", "centre"])
def test_ring_bi_odd_3x3_takes_2_times_n_minus_1_timesteps(exclude: str) -> None:
    # 8 ring nodes, each half in 8 parts (16 pieces): 1 + 7 timesteps of
    # reduce-scatter, 7 + 1 of allgather.
    K = 8
    assert _steps("mesh_ring_bi_odd_allreduce", 3, 3, 2 * K, exclude=exclude) == 2 * K
    assert (
        _steps("mesh_ring_bi_odd_allreduce", 3, 3, 2 * K, phase="reduce_scatter") == K
    )


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("C", [1, 4, 9])
def test_tto_phase_is_h_plus_c_minus_1(n: int, C: int) -> None:
    # one piece per tree per chunk (chunks of 3 pieces), H = 2n - 2
    H = 2 * n - 2
    for phase in ("reduce_scatter", "allgather"):
        got = _steps("mesh_tto_allreduce", n, n, 3 * C, chunk_bytes=3, phase=phase)
        assert got == H + C - 1
    both = _steps("mesh_tto_allreduce", n, n, 3 * C, chunk_bytes=3)
    assert H + C - 1 < both <= 2 * (H + C - 1)


@pytest.mark.parametrize(
    ("d", "ref_off", "ref_on", "clean"),
    [(3, 5, 6, 5), (4, 10, 10, 8), (5, 14, 14, 12), (6, 19, 20, 18)],
)
def test_multitree_steps_from_the_simulator(
    d: int, ref_off: int, ref_on: int, clean: int
) -> None:
    # recovered details 2.3 (the reference code run on d x d meshes)
    N = d * d
    for sort, rule, want in (
        (False, "reference", ref_off),
        (True, "reference", ref_on),
        (False, "clean", clean),
    ):
        assert mcm.multitree(d, d, sort=sort, rule=rule).steps == want
        got = _steps(
            "mesh_multitree_allreduce",
            d,
            d,
            N,
            sort=sort,
            rule=rule,
            phase="reduce_scatter",
            sync="step",
        )
        assert got == want


def test_multitree_reference_test_vectors() -> None:
    # recovered details 2.3: 2x2 (sort off) tree 0 and 3x3 tree 4
    t = mcm.multitree(2, 2, sort=False)
    assert t.steps == 2
    assert {(v, int(t.parents[0, v]), int(t.times[0, v])) for v in (1, 2, 3)} == {
        (2, 0, 0),
        (1, 0, 0),
        (3, 2, 1),
    }
    t = mcm.multitree(3, 3, sort=False)
    got = {(v, int(t.parents[4, v]), int(t.times[4, v])) for v in range(9) if v != 4}
    assert got == {
        (1, 4, 0),
        (7, 4, 0),
        (3, 4, 0),
        (5, 4, 1),
        (0, 1, 1),
        (8, 7, 1),
        (2, 1, 2),
        (6, 3, 2),
    }


def test_double_binary_tree_rules() -> None:
    for n in range(2, 40):
        t0, t1 = mcm.double_binary_tree(n)
        for t in (t0, t1):
            assert (t < 0).sum() == 1
            depth = mcm.tree_depths(t)
            assert (depth >= 0).all()
            kids = np.bincount(t[t >= 0], minlength=n)
            assert kids.max() <= 2
        if n % 2 == 0:  # mirror: odd ranks are leaves of tree 0, even of tree 1
            assert all(np.bincount(t0[t0 >= 0], minlength=n)[1::2] == 0)
            assert all(np.bincount(t1[t1 >= 0], minlength=n)[0::2] == 0)


# --------------------------------------------------------------- bad input


def test_bad_input_names_the_alternative() -> None:
    with pytest.raises(ValueError, match="mesh_ring_bi_odd_allreduce"):
        wc.build(
            "mesh_ring_bi_allreduce", topology=wc.topology.mesh(3, 3), size_bytes=100
        )
    with pytest.raises(ValueError, match="mesh_ring_bi_allreduce"):
        wc.build(
            "mesh_ring_bi_odd_allreduce",
            topology=wc.topology.mesh(4, 4),
            size_bytes=100,
        )
    with pytest.raises(ValueError, match="chunk_bytes.*exceeds"):
        wc.build(
            "mesh_tto_allreduce",
            topology=wc.topology.mesh(3, 3),
            size_bytes=100,
            chunk_bytes=101,
        )
    for name in mcm.MESH_ALGORITHMS:
        with pytest.raises(ValueError, match="1x1"):
            wc.build(name, topology=wc.topology.mesh(1, 1), size_bytes=100)
        with pytest.raises(ValueError, match="mesh"):
            wc.build(name, ranks=4, size_bytes=100)
    with pytest.raises(ValueError, match="size_bytes"):
        wc.build("mesh_ring_allreduce", topology=wc.topology.mesh(4, 4), size_bytes=3)
    with pytest.raises(ValueError, match="chunks"):
        wc.build(
            "mesh_tto_allreduce",
            topology=wc.topology.mesh(3, 3),
            size_bytes=1 << 30,
            chunk_bytes=3,
        )
    with pytest.raises(TypeError, match="unexpected option 'phase'"):
        # the phases are algorithms of their own: mesh_tto_reduce_scatter
        wc.build(
            "mesh_tto_allreduce",
            topology=wc.topology.mesh(3, 3),
            size_bytes=99,
            phase="reduce",
        )
    with pytest.raises(ValueError, match="sync"):
        wc.build(
            "mesh_multitree_allreduce",
            topology=wc.topology.mesh(3, 3),
            size_bytes=99,
            sync="x",
        )
    with pytest.raises(TypeError):
        wc.build(
            "mesh_tto_allreduce",
            topology=wc.topology.mesh(3, 3),
            size_bytes=99,
            chunk_bytes=1.5,
        )


def test_presets_are_registered_and_documented() -> None:
    assert "mcm_table_ii" in wc.network_presets()
    assert "mcm_figure_timesteps" in wc.network_presets()
    t2 = mcm.TABLE_II
    assert (t2.bandwidth_Bps, t2.packet_bytes, t2.flit_bytes) == (25e9, 8192, 512)
    assert t2.switching == "cut_through" and t2.hop_latency_s == 21e-9
    u = mcm.FIGURE_TIMESTEPS
    assert u.switching == "store_and_forward" and u.packet_bytes is None
    # one transfer of k pieces over h hops: h * k timesteps
    s = wc.Schedule(9, [5], "broadcast", root=0)
    s.add_transfer(0, 8, [0])
    assert wc.simulate(s, wc.topology.mesh(3, 3), u).cycles == 4 * 5


def test_table_ii_single_transfer_closed_form() -> None:
    # cut-through with flits F: h lat + (h - 1) F / bw + S / bw (simulate docs)
    S, h = 3 * 8192, 3
    s = wc.Schedule(4, [S], "broadcast", root=0)
    s.add_transfer(0, 3, [0])
    r = wc.simulate(s, wc.topology.mesh(1, 4), mcm.TABLE_II)
    bw, lat, F = 25e9, 21e-9, 512
    assert r.time_s == pytest.approx(h * lat + (h - 1) * F / bw + S / bw, rel=1e-12)


@pytest.mark.parametrize("name", ["wafercoll.mcm", "wafercoll.kit.orders"])
def test_docstring_examples(name: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), verbose=False)
    assert result.attempted > 0 and result.failed == 0
