"""Routing plans of the 2D X-Y Reduce and the colour check in the simulator.

The plan's invariants are counted from the X-Y tree: every stream appears once
per router on its path (send, forwards, receive), and two configurations of a
router that differ in both input and output never share a colour (the safety
condition of the "accept" rule). The one-colour chain's collisions follow
from the pipeline. A PE's sum of wavelet k leaves ``2 T_R + 1`` cycles after
its child's wavelet k left the router for the ramp, so the two streams share
``B - (2 T_R + 1)`` cycles at every PE that both receives and sends.
"""

from __future__ import annotations

import doctest
import itertools
import json

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import wafer
from wafercoll.wafer import routing2d
from wafercoll.wafer.builders2d import xy_tree

PATTERNS = ["star", "chain", "tree", "two_phase", "autogen"]
GRIDS = [(1, 1), (1, 7), (7, 1), (3, 4), (5, 5), (4, 7), (8, 8)]
BS = [1, 3, 16]


def build(M: int, N: int, B: int, pattern: str, **kw: object) -> wc.Schedule:
    """The X-Y Reduce schedule the plan of (M, N, B, pattern) describes."""
    return wc.build(
        "wafer_xy_reduce", M * N, 4 * B, wafer.wafer_grid(M, N), pattern=pattern, **kw
    )


def test_module_examples() -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert doctest.testmod(routing2d, optionflags=flags).failed == 0


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize(("M", "N"), GRIDS)
@pytest.mark.parametrize("B", BS)
def test_plan_follows_the_xy_tree(pattern: str, M: int, N: int, B: int) -> None:
    plan = wafer.routing_plan_2d(M, N, B, pattern=pattern)
    parent = xy_tree(pattern, M, N, B)
    pes = plan["pes"]
    grid = wafer.wafer_grid(M, N)
    assert [p["parent"] for p in pes] == parent.tolist()
    assert [(p["row"], p["col"]) for p in pes] == [
        (r, c) for r in range(M) for c in range(N)
    ]
    # Each stream: one send at its source, one forward per router it passes,
    # one receive at its parent, so hops + 1 configurations in all.
    seen: dict[int, list[str]] = {}
    for p in pes:
        for cfg in p["configurations"]:
            seen.setdefault(cfg["stream"], []).append(cfg["event"])
            assert cfg["colour"] == pes[cfg["stream"]]["colour"]
    for v in range(1, M * N):
        events = seen[v]
        hops = grid.hops(v, int(parent[v]))
        assert len(events) == hops + 1
        assert events.count("send") == events.count("receive") == 1
        assert events.count("forward") == hops - 1
    assert set(seen) == set(range(1, M * N))
    for v, p in enumerate(pes):
        kids = [u for u in range(M * N) if parent[u] == v]
        got = [c["stream"] for c in p["configurations"] if c["event"] == "receive"]
        # A column-0 PE takes its row (ranks v + 1 ..) before column 0.
        assert got == kids
        if v:
            send = next(c for c in p["configurations"] if c["event"] == "send")
            assert p["phase"] == ("row" if p["col"] else "column")
            out = "west" if p["phase"] == "row" else "north"
            assert (send["rx"], send["tx"]) == ("ramp", out)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize(("M", "N"), GRIDS)
@pytest.mark.parametrize("B", BS)
def test_colours_are_safe_and_few(pattern: str, M: int, N: int, B: int) -> None:
    plan = wafer.routing_plan_2d(M, N, B, pattern=pattern)
    pes = plan["pes"]
    used = sorted({p["colour"] for p in pes if p["colour"] is not None})
    assert plan["colours"] == used
    assert plan["num_colours"] == len(used) <= 3 <= plan["colours_available"] == 24
    for p in pes:
        cfgs = p["configurations"]
        for a, b in itertools.combinations(cfgs, 2):
            if a["rx"] != b["rx"] and a["tx"] != b["tx"]:
                assert a["colour"] != b["colour"], (p["pe"], a, b)
        if p["phase"] == "column" and N > 1:
            assert p["colour"] != 1  # the colour of the row streams into column 0
    counts = [
        max(
            (sum(c["colour"] == k for c in p["configurations"]) for k in used),
            default=0,
        )
        for p in pes
    ]
    assert plan["max_configurations_per_colour"] == max(counts)
    assert plan["routers_over_limit"] == sum(c > 4 for c in counts)


def test_colour_counts_by_depth() -> None:
    # Chains alternate colours, a depth-1 tree (Star) needs one per axis.
    assert wafer.routing_plan_2d(3, 4, 8, pattern="chain")["colours"] == [0, 1, 2]
    assert wafer.routing_plan_2d(1, 6, 8, pattern="chain")["colours"] == [0, 1]
    assert wafer.routing_plan_2d(6, 1, 8, pattern="chain")["colours"] == [0, 2]
    assert wafer.routing_plan_2d(4, 5, 8, pattern="star")["colours"] == [1, 2]
    assert wafer.routing_plan_2d(1, 1, 8)["colours"] == []


@pytest.mark.parametrize(("M", "N"), [(3, 4), (5, 5), (8, 8), (1, 6), (6, 1)])
def test_star_control_wavelets(M: int, N: int) -> None:
    # On a Star row every stream but the last is followed, at the root and at
    # its own router, by another configuration on its colour.
    plan = wafer.routing_plan_2d(M, N, 4, pattern="star")
    expected = M * max(N - 2, 0) + max(M - 2, 0)
    assert plan["control_wavelets"] == expected
    assert plan["max_configurations_per_colour"] == max(N, M) - 1


def test_chain_needs_no_control_wavelets() -> None:
    plan = wafer.routing_plan_2d(5, 6, 16, pattern="chain")
    assert plan["control_wavelets"] == 0
    assert plan["max_configurations_per_colour"] == 1


@pytest.mark.parametrize("pattern", PATTERNS)
def test_json_round_trip(pattern: str) -> None:
    plan = wafer.routing_plan_2d(4, 5, 3, pattern=pattern)
    text = wafer.routing_plan_2d_json(4, 5, 3, pattern=pattern)
    assert json.loads(text) == plan
    assert json.loads(json.dumps(plan)) == plan


def test_plan_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="pattern"):
        wafer.routing_plan_2d(3, 3, 4, pattern="snake")
    with pytest.raises(ValueError, match="M"):
        wafer.routing_plan_2d(0, 3, 4)
    with pytest.raises(ValueError, match="B"):
        wafer.routing_plan_2d(3, 3, 0)
    with pytest.raises(ValueError, match="T_R"):
        wafer.routing_plan_2d(3, 3, 4, T_R=-1)


def test_colour_of_transfers() -> None:
    plan = wafer.routing_plan_2d(3, 4, 8, pattern="tree")
    s = build(3, 4, 8, "tree")
    colours = wafer.colour_of_transfers(s, plan)
    assert colours.shape == (s.num_transfers,)
    for i in range(s.num_transfers):
        assert colours[i] == plan["pes"][int(s.src[i])]["colour"]
    # Blocks of one wavelet: eight transfers per stream, one colour.
    blocks = build(3, 4, 8, "tree", wavelets_per_block=1)
    per_block = wafer.colour_of_transfers(blocks, plan)
    assert per_block.size == 8 * colours.size
    assert set(zip(blocks.src.tolist(), per_block.tolist())) == set(
        zip(s.src.tolist(), colours.tolist())
    )
    with pytest.raises(ValueError, match="not a stream"):
        wafer.colour_of_transfers(build(3, 4, 8, "chain"), plan)
    with pytest.raises(ValueError, match="ranks"):
        wafer.colour_of_transfers(build(2, 4, 8, "tree"), plan)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize(("M", "N"), [(1, 7), (7, 1), (3, 4), (5, 5), (4, 7), (8, 8)])
@pytest.mark.parametrize("B", BS)
def test_plan_has_no_collisions(pattern: str, M: int, N: int, B: int) -> None:
    grid = wafer.wafer_grid(M, N)
    s = build(M, N, B, pattern)
    plan = wafer.routing_plan_2d(M, N, B, pattern=pattern)
    report = wafer.check_colour_collisions(s, grid, wafer.colour_of_transfers(s, plan))
    assert report["rule"] == "accept"
    assert report["collisions"] == [] and report["num_collisions"] == 0
    # Every wavelet is served by each router on its path and by the ramp up.
    hops = sum(
        grid.hops(int(s.src[i]), int(s.transfer(i)["dst"][0]))
        for i in range(s.num_transfers)
    )
    assert report["events"] == B * (hops + s.num_transfers)
    sim = wc.simulate(s, grid, wc.wafer.wse2_network())
    assert report["cycles"] == round(sim.cycles)


@pytest.mark.parametrize(
    ("P", "B", "T_R"), [(5, 9, 2), (8, 16, 2), (6, 16, 1), (4, 5, 2)]
)
@pytest.mark.parametrize("axis", ["row", "column"])
def test_one_colour_chain_collides(P: int, B: int, T_R: float, axis: str) -> None:
    M, N = (1, P) if axis == "row" else (P, 1)
    grid = wafer.wafer_grid(M, N)
    s = build(M, N, B, "chain", T_R=T_R)
    net = wc.wafer.wse2_network(T_R=T_R)
    report = wafer.check_colour_collisions(s, grid, np.zeros(s.num_transfers), net)
    expected = (P - 2) * max(0, B - int(2 * T_R + 1))
    assert report["num_collisions"] == expected
    into, out = ("east", "west") if axis == "row" else ("south", "north")
    for c in report["collisions"]:
        assert c["colour"] == 0
        assert sorted(c["inputs"]) == sorted(["ramp", into])
        assert c["router"] not in (0, P - 1)
    # The plan's two colours remove them all.
    plan = wafer.routing_plan_2d(M, N, B, T_R, "chain")
    ok = wafer.check_colour_collisions(s, grid, wafer.colour_of_transfers(s, plan), net)
    assert ok["num_collisions"] == 0
    assert out in {c["tx"] for p in plan["pes"] for c in p["configurations"]}


@pytest.mark.parametrize("pattern", PATTERNS)
def test_one_colour_collides_in_2d(pattern: str) -> None:
    grid = wafer.wafer_grid(8, 8)
    s = build(8, 8, 16, pattern)
    report = wafer.check_colour_collisions(s, grid, np.full(s.num_transfers, 5))
    assert report["num_collisions"] > 0
    assert report["num_collisions"] >= len(report["collisions"]) > 0
    for c in report["collisions"]:
        assert c["colour"] == 5 and len(set(c["inputs"])) >= 2


def test_columns_on_the_row_colour_collide_at_column_0() -> None:
    # Column streams on colour 1 (that of the row streams into column 0) meet
    # the rows at column-0 routers, and only there.
    M, N, B = 4, 4, 8
    grid = wafer.wafer_grid(M, N)
    s = build(M, N, B, "star")
    plan = wafer.routing_plan_2d(M, N, B, pattern="star")
    colours = wafer.colour_of_transfers(s, plan)
    colours[colours == 2] = 1
    report = wafer.check_colour_collisions(s, grid, colours)
    assert report["num_collisions"] > 0
    assert {c["router"] % N for c in report["collisions"]} == {0}
    assert {tuple(sorted(c["inputs"])) for c in report["collisions"]} == {
        ("east", "ramp")
    }


def test_arrive_rule_sees_streams_the_wafer_would_stall() -> None:
    # The simulator lets a Star's later streams run into routers that, on the
    # wafer, would not accept them yet: under "arrive" they meet the router's
    # own send, under "accept" (the router's service order) they do not.
    grid = wafer.wafer_grid(1, 5)
    s = build(1, 5, 8, "star")
    colours = wafer.colour_of_transfers(
        s, wafer.routing_plan_2d(1, 5, 8, pattern="star")
    )
    accept = wafer.check_colour_collisions(s, grid, colours)
    arrive = wafer.check_colour_collisions(s, grid, colours, rule="arrive")
    assert accept["num_collisions"] == 0
    assert arrive["num_collisions"] > 0
    assert {tuple(sorted(c["inputs"])) for c in arrive["collisions"]} == {
        ("east", "ramp")
    }
    # The chain has no stream passing over another: no collisions either way.
    chain = build(1, 5, 8, "chain")
    plan = wafer.routing_plan_2d(1, 5, 8, pattern="chain")
    rep = wafer.check_colour_collisions(
        chain, grid, wafer.colour_of_transfers(chain, plan), rule="arrive"
    )
    assert rep["num_collisions"] == 0


def test_check_rejects_bad_input() -> None:
    grid = wafer.wafer_grid(2, 3)
    s = build(2, 3, 4, "chain")
    with pytest.raises(ValueError, match="colours"):
        wafer.check_colour_collisions(s, grid, [0])
    with pytest.raises(ValueError, match="rule"):
        wafer.check_colour_collisions(s, grid, np.zeros(s.num_transfers), rule="x")
    with pytest.raises(ValueError, match="clock"):
        wafer.check_colour_collisions(
            s, grid, np.zeros(s.num_transfers), wc.NetworkModel(4e9)
        )
