"""MultiTree as the MCM artifact runs it: its saved trees and its driver's order."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.mcm.artifact_multitree import (
    ARTIFACT_MULTITREE_CHIPLETS,
    ISSUE_LAG_MESSAGES,
    artifact_multitree,
)

NAME = "mesh_multitree_artifact_allreduce"
SMALL = (3, 4, 5, 6)


def _edges(parents: np.ndarray, times: np.ndarray, r: int) -> set[tuple[int, ...]]:
    v = np.flatnonzero(parents[r] >= 0)
    return {(int(c), int(parents[r, c]), int(times[r, c])) for c in v}


@pytest.mark.parametrize("n", ARTIFACT_MULTITREE_CHIPLETS)
def test_saved_trees_span_the_mesh_over_its_links(n: int) -> None:
    side = int(round(n**0.5))
    t = artifact_multitree(side, side)
    assert t.parents.shape == (n, n)
    links = set()
    for v in range(n):
        r, c = divmod(v, side)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if 0 <= r + dr < side and 0 <= c + dc < side:
                links.add((v, (r + dr) * side + c + dc))
    used = set()
    for root in range(n):
        par = t.parents[root]
        assert par[root] == -1 and np.all(par[np.arange(n) != root] >= 0)
        for v in range(n):  # every node reaches the root, joining after its parent
            u, hops = v, 0
            while u != root:
                assert (int(par[u]), u) in links
                if par[u] != root:
                    assert t.times[root, par[u]] < t.times[root, u]
                u, hops = int(par[u]), hops + 1
                assert hops < n
        for v in np.flatnonzero(par >= 0):  # a link serves one tree per step
            key = (int(par[v]), int(v), int(t.times[root, v]))
            assert key not in used
            used.add(key)
    assert t.steps == int(t.times.max()) + 1


@pytest.mark.parametrize("side", [3, 5])
def test_saved_trees_equal_ours_on_3x3_and_5x5(side: int) -> None:
    saved = artifact_multitree(side, side)
    ours = wc.mcm.multitree(side, side)
    assert saved.steps == ours.steps
    for r in range(side * side):
        assert _edges(saved.parents, saved.times, r) == _edges(
            ours.parents, ours.times, r
        )


def test_saved_trees_differ_from_ours_on_4x4() -> None:
    saved = artifact_multitree(4, 4)
    ours = wc.mcm.multitree(4, 4)
    assert saved.steps == ours.steps == 10
    same = [
        r
        for r in range(16)
        if _edges(saved.parents, saved.times, r) == _edges(ours.parents, ours.times, r)
    ]
    assert same == []
    # Tree 0: the artifact adds 0's children 4 and 1, then grows down column 0
    # and along row 0 a step at a time; ours takes 5 under 4 at step 1 and
    # reaches 15 a step later.
    assert saved.parents[0, 5] == 4 and saved.times[0, 5] == 2
    assert ours.parents[0, 5] == 4 and ours.times[0, 5] == 1
    assert saved.times[0, 15] == 6 and ours.times[0, 15] == 7


def test_trees_computed_by_default_saved_on_request() -> None:
    """The default builds from multitree (as the committed 4x4 runs did).

    On 4x4 the saved trees differ, so the two schedules differ; on 3x3 the
    saved trees are multitree's and the schedules are the same.
    """
    for side, same in ((3, True), (4, False)):
        top = wc.topology.mesh(side, side)
        size = side * side * 4 * 8192
        default = wc.build(NAME, topology=top, size_bytes=size)
        saved = wc.build(NAME, topology=top, size_bytes=size, trees="saved")
        ref = wc.build(NAME, topology=top, size_bytes=size, trees="computed")
        assert wc.verify(saved).ok
        assert np.array_equal(default.src, ref.src)
        assert np.array_equal(default.dst, ref.dst)
        equal = (
            default.num_transfers == saved.num_transfers
            and np.array_equal(default.src, saved.src)
            and np.array_equal(default.dst, saved.dst)
        )
        assert equal == same
    with pytest.raises(ValueError, match="trees must be one of computed, saved"):
        wc.build(NAME, topology=wc.topology.mesh(3, 3), size_bytes=9 * 8192, trees="x")


def test_rejects_meshes_without_saved_trees() -> None:
    with pytest.raises(ValueError, match="saved MultiTree trees"):
        artifact_multitree(7, 7)
    with pytest.raises(ValueError, match="saved MultiTree trees"):
        artifact_multitree(4, 5)


def test_registered_beside_the_papers_multitree() -> None:
    info = wc.algorithm_info(NAME)
    assert info.variant == "artifact"
    assert info.label == "MultiTree (artifact)"
    assert info.artifact_names == ("multitree", "multitree")
    assert wc.algorithm_info("mesh_multitree_allreduce").label == "MultiTree"


@pytest.mark.parametrize("side", SMALL)
@pytest.mark.parametrize("messages", [1, ISSUE_LAG_MESSAGES + 3])
def test_verifies_and_runs(side: int, messages: int) -> None:
    n = side * side
    top = wc.topology.mesh(side, side)
    size = n * messages * 8192
    s = wc.build(NAME, topology=top, size_bytes=size)
    assert wc.verify(s).ok
    x = np.random.default_rng(side).standard_normal((n, 4 * n))
    y = wc.execute(s, x)
    np.testing.assert_allclose(y, np.broadcast_to(x.sum(axis=0), y.shape))
    # a flow is one transfer, or two (issued, then the rest) when it is longer
    # than the issue lag; a reduction whose parent has other children in the
    # tree is cut into the chunk's parts (eight, and the cut at m - lag); the
    # trees are those the artifact computes (multitree)
    t = wc.mcm.multitree(side, side)
    per_flow = 2 if messages > ISSUE_LAG_MESSAGES else 1
    cuts = {round(i * messages / min(8, messages)) for i in range(min(8, messages) + 1)}
    if messages > ISSUE_LAG_MESSAGES:
        cuts.add(messages - ISSUE_LAG_MESSAGES)
    parts = len(cuts) - 1
    expected = 0
    for r in range(n):
        par = t.parents[r]
        nkids = np.bincount(par[par >= 0], minlength=n)
        for v in np.flatnonzero(par >= 0):
            expected += per_flow  # the allgather copy
            expected += parts if nkids[par[v]] > 1 else per_flow
    assert s.num_transfers == expected


def test_issue_lag_from_the_buffers() -> None:
    # driver 32 + BookSim 16 + 80 flits // 17 + two router ports of 4 x 318 flits
    assert ISSUE_LAG_MESSAGES == 32 + 16 + 4 + 2 * (1272 // 17) == 200


def test_sibling_reductions_overlap_part_by_part() -> None:
    """Cutting chunks into parts lets a parent's children send at once.

    With one part, a second child of a parent waits for the first child's whole
    flow; with eight it waits for one part, so the allreduce is faster.
    """
    top = wc.topology.mesh(4, 4)
    size = 16 * 1024 * 8192
    one = wc.build(NAME, topology=top, size_bytes=size, sibling_parts=1)
    eight = wc.build(NAME, topology=top, size_bytes=size)
    assert wc.verify(one).ok and wc.verify(eight).ok
    c1 = wc.simulate(one, top, wc.mcm.ARTIFACT).cycles
    c8 = wc.simulate(eight, top, wc.mcm.ARTIFACT).cycles
    assert c8 < 0.95 * c1
    # and never below the busiest link: some link serves one flow per step
    assert c8 >= 2 * artifact_multitree(4, 4).steps * 1024 * 357


def test_rejects_bad_parameters() -> None:
    top = wc.topology.mesh(3, 3)
    with pytest.raises(ValueError, match="sibling_parts"):
        wc.build(NAME, topology=top, size_bytes=9 * 8192, sibling_parts=0)
    with pytest.raises(ValueError, match="issue_lag_messages"):
        wc.build(NAME, topology=top, size_bytes=9 * 8192, issue_lag_messages=-1)


@pytest.mark.parametrize("phase", ["reduce_scatter", "allgather"])
def test_phases_verify(phase: str) -> None:
    top = wc.topology.mesh(4, 4)
    info = wc.algorithm_info(NAME)
    s = info.builder(16, 16 * 8192, topology=top, phase=phase)
    assert s.collective == phase
    assert wc.verify(s).ok


@pytest.mark.slow
@pytest.mark.parametrize("side", [8, 9])
def test_verifies_on_large_meshes(side: int) -> None:
    top = wc.topology.mesh(side, side)
    s = wc.build(NAME, topology=top, size_bytes=side * side * 8192)
    assert wc.verify(s).ok
    x = np.random.default_rng(side).standard_normal((side * side, 2 * side * side))
    np.testing.assert_allclose(wc.execute(s, x)[-1], x.sum(axis=0))


def test_one_message_flows_take_about_two_t_steps() -> None:
    """One 8 KiB message per flow: at least 2T message times on the critical path."""
    top = wc.topology.mesh(3, 3)
    s = wc.build(NAME, topology=top, size_bytes=9 * 8192)
    c = wc.simulate(s, top, wc.mcm.ARTIFACT).cycles
    assert c >= 2 * artifact_multitree(3, 3).steps * 357


def test_no_issue_lag_counts_a_flow_issued_when_it_has_arrived() -> None:
    # issue_lag_messages=0: a flow is issued only once every message has
    # left, so no flow is cut in two at its issue point.
    top = wc.topology.mesh(4, 4)
    size = 16 * 64 * 8192
    none = wc.build(NAME, topology=top, size_bytes=size, issue_lag_messages=0)
    lag = wc.build(NAME, topology=top, size_bytes=size, issue_lag_messages=16)
    assert wc.verify(none).ok and wc.verify(lag).ok
    assert none.num_transfers < lag.num_transfers
    assert wc.simulate(none, top, wc.mcm.ARTIFACT).cycles > 0


@pytest.mark.parametrize("side", [3, 4, 5, 7])
def test_driver_flows_are_one_transfer_per_tree_edge(side: int) -> None:
    from wafercoll.mcm.artifact_multitree import driver_flows

    p = side * side
    top = wc.topology.mesh(side, side)
    s = wc.build(NAME, topology=top, size_bytes=p * 8192, dependencies="artifact")
    f = driver_flows(side, side)
    mt = wc.mcm.multitree(side, side)
    # every tree edge once each way: a reduction up, a copy down
    assert s.num_transfers == f["src"].size == 2 * p * (p - 1)
    assert np.array_equal(np.asarray(s.src), f["src"])
    T = mt.steps
    red = f["reduce"] == 1
    for i in np.flatnonzero(red)[:50]:
        r, v, q = int(f["chunk"][i]), int(f["src"][i]), int(f["dst"][i])
        assert mt.parents[r, v] == q
        assert f["step"][i] == T - 1 - mt.times[r, v]
        # it waits for exactly the reductions of v's children in tree r
        lo, hi = f["dep_offsets"][i], f["dep_offsets"][i + 1]
        kids = {int(c) for c in np.flatnonzero(mt.parents[r] == v)}
        assert {int(f["src"][d]) for d in f["dep_flat"][lo:hi]} == kids
    # copies come after every reduction, each at step T + its tree time
    assert (f["step"][~red] >= T).all()


def test_driver_flows_let_siblings_reduce_at_once() -> None:
    # as the artifact's driver does: a race, which the verifier refuses
    top = wc.topology.mesh(3, 3)
    s = wc.build(NAME, topology=top, size_bytes=9 * 8192, dependencies="artifact")
    with pytest.raises(wc.ScheduleError) as e:
        wc.verify(s)
    assert e.value.kind == "race"
    # the allgather alone has no reductions and is a verified allgather
    info = wc.algorithm_info(NAME)
    g = info.builder(
        9, 9 * 8192, topology=top, dependencies="artifact", phase="allgather"
    )
    assert g.collective == "allgather" and wc.verify(g).ok
    x = np.random.default_rng(0).standard_normal((9, 9))
    out = wc.execute(g, x)
    assert np.allclose(out, np.broadcast_to(np.diag(x), (9, 9)))


def test_driver_mode_rejects_bad_dependencies() -> None:
    top = wc.topology.mesh(3, 3)
    with pytest.raises(ValueError, match="dependencies"):
        wc.build(NAME, topology=top, size_bytes=9 * 8192, dependencies="data")
    with pytest.raises(ValueError, match="non-empty"):
        wc.build(NAME, topology=top, size_bytes=4, dependencies="artifact")
