"""TTO and RingBiOdd as the artifact's driver runs them (mcm.artifact_driver)."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.mcm.artifact_driver import driver_order
from wafercoll.mcm.trees import tto_trees

TTO = "mesh_tto_artifact_allreduce"
RBO = "mesh_ring_bi_odd_artifact_allreduce"


def test_registered_beside_the_papers_algorithms() -> None:
    for name, paper, label, art in (
        (TTO, "mesh_tto_allreduce", "TTO (artifact)", "mesh_overlap_2d_1"),
        (RBO, "mesh_ring_bi_odd_allreduce", "RingBiOdd (artifact)", "ring_odd_bi"),
    ):
        info = wc.algorithm_info(name)
        assert info.variant == "artifact"
        assert info.algorithm == wc.algorithm_info(paper).algorithm
        assert info.label == label != wc.algorithm_info(paper).label
        assert info.artifact_names == (art, art)


def test_driver_order_children_at_once_links_in_turn_barrier() -> None:
    # one tree rooted at 0: children 2 and 3 of 1, 1 of 0; two chunks.
    # ids: reduce-scatter chunk 0: 0 (2->1), 1 (3->1), 2 (1->0); chunk 1:
    # 3, 4, 5; allgather chunk 0: 6 (0->1), 7 (1->2), 8 (1->3); chunk 1: 9-11
    flat, off = driver_order(
        [2, 3, 1, 0, 1, 1], [1, 1, 0, 1, 2, 3], [0] * 6, [1, 1, 1, 0, 0, 0], [0], 2
    )
    deps = [flat[off[t] : off[t + 1]].tolist() for t in range(12)]
    assert deps == [
        [],  # the children 2 and 3 start at once
        [],
        [0, 1],  # 1 forwards after both children, in either order
        [0],  # the next chunk on a link after the previous one
        [1],
        [2, 3, 4],
        [5],  # the root's allgather after the last chunk's reduction
        [6],
        [6],
        [5, 6],
        [7, 9],
        [8, 9],
    ]


def test_driver_order_rejects_ragged_input() -> None:
    with pytest.raises(ValueError, match="one entry per transfer"):
        driver_order([0, 1], [1], [0, 0], [1, 1], [0], 1)
    with pytest.raises(ValueError, match="chunks"):
        driver_order([1], [0], [0], [1], [0], 0)


@pytest.mark.parametrize("side", [3, 4, 5, 6])
@pytest.mark.parametrize("chunks", [1, 3])
def test_tto_takes_two_pipelines_of_height_plus_chunks(side: int, chunks: int) -> None:
    # children reduce at once, so the reduce-scatter is a pipeline of
    # height + chunks - 1 unit steps; the allgather waits for all of it and
    # is another such pipeline
    m = wc.topology.mesh(side, side)
    h = wc.mcm.tto_trees(side, side).height
    s = wc.build(
        TTO, topology=m, size_bytes=3 * chunks, chunk_bytes=3, dependencies="artifact"
    )
    got = wc.simulate(s, m, wc.NetworkModel.unit_timestep(1)).cycles
    assert got == 2 * (h + chunks - 1)


def test_tto_children_race_as_in_the_artifact() -> None:
    m = wc.topology.mesh(4, 4)
    s = wc.build(TTO, topology=m, size_bytes=1 << 16, dependencies="artifact")
    with pytest.raises(wc.ScheduleError, match="race"):
        wc.verify(s)


@pytest.mark.parametrize(
    ("rows", "cols", "size", "chunk"),
    [
        (2, 2, 10, 4),
        (3, 3, 1000, 96),
        (4, 4, 4099, 300),
        (3, 5, 777, 100),
        (5, 5, 12345, 3000),
        (4, 7, 999, 999),
        (6, 6, 5000, 700),
    ],
)
def test_tto_data_dependencies_are_a_verified_allreduce(
    rows: int, cols: int, size: int, chunk: int
) -> None:
    m = wc.topology.mesh(rows, cols)
    s = wc.build(TTO, topology=m, size_bytes=size, chunk_bytes=chunk)
    assert wc.verify(s).ok
    rng = np.random.default_rng(rows * 100 + cols)
    x = rng.integers(-1000, 1000, size=(rows * cols, size))
    out = wc.execute(s, x, check=False)
    part = s.participants
    assert np.array_equal(
        out[part], np.broadcast_to(x[part].sum(axis=0), out[part].shape)
    )


def test_tto_data_dependencies_order_siblings_so_they_cost_time() -> None:
    # with siblings in turn the unit-step time can only grow, and on 6x6 (a
    # chiplet with two children in some tree) it does
    m = wc.topology.mesh(6, 6)
    unit = wc.NetworkModel.unit_timestep(1)
    t = {
        d: wc.simulate(
            wc.build(TTO, topology=m, size_bytes=9, chunk_bytes=3, dependencies=d),
            m,
            unit,
        ).cycles
        for d in ("data", "artifact")
    }
    assert t["data"] > t["artifact"]
    with pytest.raises(ValueError, match="dependencies"):
        wc.build(TTO, topology=m, size_bytes=9, dependencies="none")


def test_tto_message_bytes_pads_every_chunk_of_every_tree() -> None:
    # 1.5 chunks of 96 KiB: two chunks, each tree's share of a chunk
    # ceil(98304 / 3 / 8192) = 4 messages, the short last chunk too
    m = wc.topology.mesh(4, 4)
    s = wc.build(TTO, topology=m, size_bytes=147456, message_bytes=8192)
    assert np.asarray(s.block_bytes).tolist() == [4 * 8192] * 6
    with pytest.raises(ValueError, match="message_bytes"):
        wc.build(TTO, topology=m, size_bytes=147456, message_bytes=0)


def test_tto_within_one_percent_of_the_artifacts_4x4_run() -> None:
    ref = wc.mcm.artifact_cycles("fig8")
    run = (
        (ref["algorithm"] == "mesh_overlap_2d_1")
        & (ref["chiplets"] == 16)
        & (ref["size_bytes"] == 1 << 20)
    )
    (committed,) = ref["cycles"][run].tolist()
    m = wc.topology.mesh(4, 4)
    s = wc.build(
        TTO, topology=m, size_bytes=1 << 20, message_bytes=8192, dependencies="artifact"
    )
    got = wc.simulate(s, m, wc.mcm.ARTIFACT).cycles
    assert abs(got / committed - 1) < 0.01


@pytest.mark.parametrize(
    ("side", "size", "part"),
    [
        # ceil(2^20 / (8192 * 81)) = 2 messages, x 81 / 160 -> 2 messages
        (9, 1 << 20, 2 * 8192),
        # ceil(2^20 / (8192 * 25)) = 6, x 25 / 48 = 3.125 -> 4 messages
        (5, 1 << 20, 4 * 8192),
        # ceil(2^21 / (8192 * 9)) = 29, x 9 / 16 = 16.3 -> 17 messages
        (3, 1 << 21, 17 * 8192),
    ],
)
def test_ring_bi_odd_parts_are_the_drivers_whole_messages(
    side: int, size: int, part: int
) -> None:
    m = wc.topology.mesh(side, side)
    s = wc.build(RBO, topology=m, size_bytes=size, message_bytes=8192)
    assert np.asarray(s.block_bytes).tolist() == [part] * (2 * (side * side - 1))
    assert wc.verify(s).ok
    centre = (side // 2) * side + side // 2
    sent = {s.transfer(t)["src"] for t in range(s.num_transfers)}
    assert centre in sent  # excluded from the rings, not from the data
    ring = wc.build(RBO, topology=m, size_bytes=size)
    assert int(np.sum(ring.block_bytes)) == size  # default: an even split


@pytest.mark.parametrize("msgs", [1, 8, 64])
def test_artifact_preset_one_flow_costs_what_the_artifact_measured(msgs: int) -> None:
    # measured in the artifact's BookSim and driver: a flow of M messages to a
    # neighbour is received 357 M + 12 cycles after the previous one was
    # (357 per message, 3 router cycles, 9 per flow)
    m = wc.topology.mesh(1, 2)
    s = wc.Schedule(2, [8192 * msgs], "unknown")
    s.add_transfer(0, 1, 0, op="copy")
    assert wc.simulate(s, m, wc.mcm.ARTIFACT).cycles == 357 * msgs + 12


def test_tto_data_dependencies_verify_beyond_a_quarter_million_transfers() -> None:
    # 9x9, 600 chunks, each a reduction and a copy over every edge of the
    # three trees: every link's transfers chain across the chunks and the
    # allgather waits for the whole reduce-scatter, the shape whose
    # verification grew as the square of the transfers (minutes at this size)
    m = wc.topology.mesh(9, 9)
    edges = int(np.sum(tto_trees(9, 9).parents >= 0))
    s = wc.build(TTO, topology=m, size_bytes=600 * 4096, chunk_bytes=4096)
    assert s.num_transfers == 600 * 2 * edges > 1 << 18
    report = wc.verify(s)
    assert report.ok
    assert report.transfers == s.num_transfers
    # the driver's concurrent sibling reductions are still refused
    art = wc.build(
        TTO,
        topology=m,
        size_bytes=600 * 4096,
        chunk_bytes=4096,
        dependencies="artifact",
    )
    with pytest.raises(wc.ScheduleError) as err:
        wc.verify(art)
    assert err.value.kind == "race"


def test_tto_both_orders_share_one_transfer_limit() -> None:
    m = wc.topology.mesh(3, 3)
    for deps in ("data", "artifact"):
        with pytest.raises(ValueError, match="exceed 33554432 transfers"):
            wc.build(
                TTO,
                topology=m,
                size_bytes=1 << 32,
                chunk_bytes=1 << 12,
                dependencies=deps,
            )
