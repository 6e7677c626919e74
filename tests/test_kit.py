"""The algorithm kit: dependency rules, splitter, orders and skeletons."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import kit
from wafercoll.kit.cells import cell_deps, chunk_cell_deps, tiled_cell_deps

PKG = Path(wc.__file__).resolve().parent


def _deps(s: wc.Schedule) -> list[list[int]]:
    return [sorted(s.transfer(i)["deps"]) for i in range(s.num_transfers)]


# -- rules ---------------------------------------------------------------------
def test_sendrecv_rule_waits_for_both_ranks_previous_send_and_receive() -> None:
    prog = kit.Program(4, [8], rule="sendrecv")
    a = prog.step([0, 2], [1, 3], 0, "reduce")  # 0->1, 2->3
    b = prog.step([1], [3], 0, "reduce")  # waits for 0->1 (into 1) and 2->3 (into 3)
    c = prog.step([3], [0], 0, "copy")  # waits for 1->3 (into 3, 3's last receive),
    # and 0->1 (0's last send)
    s = prog.schedule()
    assert a.tolist() == [0, 1] and b.tolist() == [2] and c.tolist() == [3]
    assert _deps(s) == [[], [], [0, 1], [0, 2]]


def test_sendrecv_transfers_of_one_step_do_not_wait_for_each_other() -> None:
    prog = kit.Program(2, [8], rule="sendrecv")
    prog.step([0, 1], [1, 0], 0, "reduce")  # a pairwise exchange
    s = prog.schedule()
    assert _deps(s) == [[], []]
    assert wc.verify(s).ok


def test_sendrecv_group_waits_for_every_rank_of_the_group() -> None:
    prog = kit.Program(6, [8], rule="sendrecv")
    r = np.arange(6)
    prog.step(r, (r + 1) % 6, 0, "copy")  # ids 0..5: i -> i + 1
    # group 0: 0->1, 1->2 (ranks 0, 1, 2); group 1: 3->4, 4->5 (ranks 3, 4, 5)
    prog.step([0, 1, 3, 4], [1, 2, 4, 5], 0, "copy", group=[0, 0, 1, 1])
    s = prog.schedule()
    # every previous send and receive of the group's ranks: rank 0 received
    # transfer 5 and sent 0, rank 1 received 0 and sent 1, rank 2 received 1
    # and sent 2
    assert _deps(s)[6] == _deps(s)[7] == [0, 1, 2, 5]
    assert _deps(s)[8] == _deps(s)[9] == [2, 3, 4, 5]


def test_step_rule_waits_for_every_transfer_of_the_latest_step() -> None:
    prog = kit.Program(4, [8, 8], rule="step")
    prog.step([0, 1], [1, 0], 0, "reduce")  # step A: ids 0, 1 (ranks 0, 1)
    prog.step([2], [3], 1, "reduce")  # step B: id 2 (ranks 2, 3)
    prog.step([0], [2], 1, "copy")  # waits for A (rank 0) and B (rank 2)
    s = prog.schedule()
    assert _deps(s) == [[], [], [], [0, 1, 2]]


def test_cells_rule_matches_cell_deps_and_tiling() -> None:
    rng = np.random.default_rng(3)
    T, ranks, blocks = 60, 5, 4
    src = rng.integers(0, ranks, T)
    dst = (src + rng.integers(1, ranks, T)) % ranks
    blk = rng.integers(0, blocks, T)
    stream = rng.integers(-1, 3, T)
    prog = kit.Program(ranks, [4] * blocks, rule="cells")
    prog.step(src, dst, blk, "reduce", stream=stream)
    s = prog.schedule()
    flat, off = cell_deps(ranks, blocks, src, dst, blk, blk + 1, stream)
    assert _deps(s) == [sorted(flat[off[i] : off[i + 1]].tolist()) for i in range(T)]
    # tiled chunks equal the untiled program
    E, C = 7, 5
    src1, dst1 = src[:E], dst[:E]
    blk1, st1 = blk[:E] % 2, np.abs(stream[:E])
    f2, o2 = tiled_cell_deps(ranks, 2 * C, C, 2, src1, dst1, blk1, st1)
    full_blk = np.tile(blk1, C) + np.repeat(np.arange(C) * 2, E)
    f1, o1 = cell_deps(
        ranks,
        2 * C,
        np.tile(src1, C),
        np.tile(dst1, C),
        full_blk,
        full_blk + 1,
        np.tile(st1, C),
    )
    assert o1.tolist() == o2.tolist() and f1.tolist() == f2.tolist()


def _tiled_by_steps(ranks, blocks, E, C, stride, src, dst, lo, hi, op, first, later):
    """What Program.tile should build, one step() per copy (an independent way)."""
    prog = kit.Program(ranks, [4] * blocks, rule="explicit")
    for c in range(C):
        flat, off = first if c == 0 else later
        shift = 0 if c == 0 else (c - 1) * E
        lists = [(flat[off[i] : off[i + 1]] + shift).tolist() for i in range(E)]
        prog.step(src, dst, (lo + c * stride, hi + c * stride), op, deps=lists)
    return prog.schedule()


@pytest.mark.parametrize("C", [0, 1, 2, 3, 7])
@pytest.mark.parametrize("E", [1, 5, 12])
def test_tile_equals_one_step_per_copy(C: int, E: int) -> None:
    rng = np.random.default_rng(100 * C + E)
    ranks, stride = 6, 3
    blocks = stride * max(C, 1) + 1
    src = rng.integers(0, ranks, E)
    dst = (src + rng.integers(1, ranks, E)) % ranks
    lo = rng.integers(0, stride, E)
    hi = lo + rng.integers(1, 3, E)
    op = rng.integers(0, 2, E)

    def lists(base: int) -> tuple[np.ndarray, np.ndarray]:
        # random distinct increasing earlier ids, up to 3 per transfer
        rows = [
            np.unique(rng.integers(0, base + i, rng.integers(0, 4)))
            if base + i > 0
            else np.zeros(0, np.int64)
            for i in range(E)
        ]
        off = np.zeros(E + 1, np.int64)
        off[1:] = np.cumsum([r.size for r in rows])
        flat = np.concatenate(rows).astype(np.int64) if E else np.zeros(0, np.int64)
        return flat, off

    first, later = lists(0), lists(E)
    prog = kit.Program(ranks, [4] * blocks, rule="explicit")
    ids = prog.tile(
        src,
        dst,
        (lo, hi),
        op,
        chunks=C,
        block_stride=stride,
        deps=first,
        later_deps=later,
    )
    s = prog.schedule()
    ref = _tiled_by_steps(
        ranks, blocks, E, C, stride, src, dst, lo, hi, op, first, later
    )
    assert list(ids) == list(range(C * E)) and s.num_transfers == C * E
    assert s.to_dict()["transfers"] == ref.to_dict()["transfers"]


def test_tile_of_chunk_cell_deps_equals_the_cells_rule() -> None:
    rng = np.random.default_rng(5)
    ranks, K, C, E = 5, 2, 6, 9
    src = rng.integers(0, ranks, E)
    dst = (src + rng.integers(1, ranks, E)) % ranks
    blk = rng.integers(0, K, E)
    st = rng.integers(0, 2, E)
    first, later = chunk_cell_deps(ranks, K * C, C, K, src, dst, blk, st)
    prog = kit.Program(ranks, [4] * (K * C), rule="explicit")
    prog.tile(
        src, dst, blk, "reduce", chunks=C, block_stride=K, deps=first, later_deps=later
    )
    cells = kit.Program(ranks, [4] * (K * C), rule="cells")
    for c in range(C):
        cells.step(src, dst, blk + c * K, "reduce", stream=st)
    assert _deps(prog.schedule()) == _deps(cells.schedule())


def test_tile_errors_name_the_problem() -> None:
    none = (np.zeros(0, np.int64), np.zeros(4, np.int64))
    args = ([0, 1, 2], [1, 2, 0], [0, 1, 0])

    def prog(rule: str = "explicit") -> kit.Program:
        return kit.Program(3, [4] * 6, rule=rule)

    with pytest.raises(ValueError, match="explicit dependencies"):
        prog("cells").tile(*args, chunks=2, block_stride=2, deps=none, later_deps=none)
    with pytest.raises(ValueError, match="chunks"):
        prog().tile(*args, chunks=-1, block_stride=2, deps=none, later_deps=none)
    with pytest.raises(ValueError, match="block_stride"):
        prog().tile(*args, chunks=2, block_stride=-2, deps=none, later_deps=none)
    with pytest.raises(
        ValueError, match=r"copy 3 of 4 .* reaches block 7, outside \[0, 6\)"
    ):
        prog().tile(*args, chunks=4, block_stride=2, deps=none, later_deps=none)
    with pytest.raises(ValueError, match="later_deps is needed"):
        prog().tile(*args, chunks=2, block_stride=2, deps=none)
    with pytest.raises(ValueError, match="offsets must be 4 values"):
        prog().tile(*args, chunks=1, block_stride=2, deps=(np.zeros(0), [0, 0]))
    with pytest.raises(TypeError, match="CSR lists"):
        prog().tile(*args, chunks=1, block_stride=2, deps=[[], [], []])
    with pytest.raises(ValueError, match="src holds 3"):
        prog().tile([0, 1, 3], [1, 2, 0], 0, chunks=1, block_stride=2, deps=none)
    # copy 1 may not depend on a transfer after its own
    fwd = (np.array([5]), np.array([0, 1, 1, 1]))
    p = prog()
    with pytest.raises(wc.ScheduleError, match="earlier transfer"):
        p.tile(*args, chunks=3, block_stride=2, deps=none, later_deps=fwd)
    with pytest.raises(RuntimeError, match="schedule"):
        p.tile(*args, chunks=1, block_stride=2, deps=none)


@pytest.mark.parametrize("rule", ["sendrecv", "step", "cells"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_steps_equals_one_step_call_per_slice(rule: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ranks, blocks = 7, 5
    sizes = rng.integers(0, 9, rng.integers(1, 12))  # empty steps too
    off = np.concatenate([[0], np.cumsum(sizes)])
    T = int(off[-1])
    src = rng.integers(0, ranks, T)  # a rank may send twice in one step
    dst = (src + rng.integers(1, ranks, T)) % ranks
    lo = rng.integers(0, blocks, T)
    hi = np.minimum(lo + rng.integers(1, 3, T), blocks)
    op = rng.integers(0, 2, T)
    st = rng.integers(-1, 2, T)

    def program() -> kit.Program:
        p = kit.Program(ranks, [4] * blocks, rule=rule)
        p.step([0, 1], [1, 2], 0, "reduce")  # state from before the batch
        return p

    one = program()
    for a, b in zip(off[:-1], off[1:], strict=True):
        if b > a:
            one.step(src[a:b], dst[a:b], (lo[a:b], hi[a:b]), op[a:b], stream=st[a:b])
    many = program()
    ids = many.steps(src, dst, (lo, hi), op, offsets=off, stream=st)
    assert ids.tolist() == list(range(2, 2 + T))
    assert many.schedule().to_dict() == one.schedule().to_dict()


def test_steps_under_sendrecv_matches_the_ring_it_replaced() -> None:
    # the ring of kit.ring_allreduce, one step() per step (as it was written)
    for p, g in ((1, 1), (2, 1), (5, 1), (6, 3), (9, 2)):
        order = np.arange(p * g).reshape(g, p)
        ref = kit.Program(p * g, kit.split_bytes(1 << 12, p), rule="sendrecv")
        for st in kit.ring_steps(order):
            ref.step(st.src, st.dst, st.block, st.op)
        new = kit.Program(p * g, kit.split_bytes(1 << 12, p), rule="sendrecv")
        kit.ring_allreduce(new, order)
        a, b = new.schedule(), ref.schedule()
        assert a.to_dict() == b.to_dict()
        if p > 1 and g == 1:
            assert wc.verify(a).ok


@pytest.mark.parametrize("rule", ["sendrecv", "step", "cells"])
def test_reserve_changes_nothing_built(rule: str) -> None:
    order = np.arange(10).reshape(2, 5)

    def build(room: int | None) -> dict:
        p = kit.Program(10, kit.split_bytes(1 << 10, 5), rule=rule)
        p.step([0], [1], 0, "copy")  # room asked for after transfers exist
        if room is not None:
            p.reserve(room)
        kit.ring_allreduce(p, order, stream=0 if rule == "cells" else -1)
        return p.schedule().to_dict()

    ref = build(None)
    for room in (
        0,
        3,
        2 * 2 * 4 * 5,
        10**6,
        2**40,
    ):  # none, short, exact, beyond the limit
        assert build(room) == ref


def test_reserve_refuses_bad_counts() -> None:
    p = kit.Program(4, [8], rule="sendrecv")
    with pytest.raises(ValueError, match="transfers"):
        p.reserve(-1)
    with pytest.raises(TypeError, match="transfers"):
        p.reserve(2.5)  # type: ignore[arg-type]
    p.schedule()
    with pytest.raises(RuntimeError, match="schedule"):
        p.reserve(4)


def test_steps_errors_name_the_problem() -> None:
    def prog() -> kit.Program:
        return kit.Program(3, [4] * 3, rule="sendrecv")

    with pytest.raises(ValueError, match="offsets must start at 0"):
        prog().steps([0, 1], [1, 2], 0, offsets=[1, 2])
    with pytest.raises(ValueError, match="offsets must start at 0"):
        prog().steps([0, 1], [1, 2], 0, offsets=[0, 2, 1])
    with pytest.raises(ValueError, match=r"offsets\[-1\] = 3 transfers"):
        prog().steps([0, 1], [1, 2], 0, offsets=[0, 3])
    with pytest.raises(TypeError, match="Multi or Ranges"):
        prog().steps([0], kit.Multi.of([[1, 2]]), 0, offsets=[0, 1])
    with pytest.raises(ValueError, match="dst holds 3"):
        prog().steps([0, 1], [1, 3], 0, offsets=[0, 2])
    with pytest.raises(ValueError, match="op must be"):
        prog().steps([0, 1], [1, 2], 0, "sum", offsets=[0, 2])
    p = prog()
    with pytest.raises(wc.ScheduleError, match="source rank"):
        p.steps([0, 1, 2], [1, 2, 2], 0, offsets=[0, 1, 3])
    assert p.count == 0
    with pytest.raises(RuntimeError, match="schedule"):
        p.steps([0], [1], 0, offsets=[0, 1])


def test_explicit_rule_and_multicast_and_ranges() -> None:
    prog = kit.Program(4, [2, 2, 2], "broadcast", root=0, rule="explicit")
    t0 = prog.send(0, [1, 2], (0, 3))
    prog.step([1, 2], [3, 0], kit.Ranges([0, 2], [1, 3], [0, 1, 2]), deps=[t0, t0])
    with pytest.raises(wc.ScheduleError):
        wc.verify(prog.schedule())  # rank 3 misses block 1; rank 0 overwritten
    prog = kit.Program(4, [2, 2, 2], "broadcast", root=0, rule="explicit")
    t0 = prog.send(0, [1, 2, 3], (0, 3))
    s = prog.schedule()
    assert s.transfer(t0)["dst"] == [1, 2, 3]
    assert wc.verify(s).ok


def test_program_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="rule must be one of"):
        kit.Program(2, [8], rule="async")
    prog = kit.Program(2, [8])
    with pytest.raises(ValueError, match="src holds 5"):
        prog.step([5], [0], 0)
    prog = kit.Program(2, [8])
    with pytest.raises(ValueError, match="same number of transfers"):
        prog.step([0, 1, 0], [1, 0], 0)
    with pytest.raises(ValueError, match="blocks holds 3"):
        prog.step([0], [1], 3)
    with pytest.raises(wc.ScheduleError, match="source rank"):
        prog.step([0], [0], 0)
    prog = kit.Program(2, [8])
    prog.step([0], [1], 0, "reduce")
    prog.schedule()
    with pytest.raises(RuntimeError):
        prog.step([1], [0], 0)
    with pytest.raises(ValueError, match="collective must be one of"):
        kit.Program(2, [8], "allsum")


# -- splitter and orders -------------------------------------------------------
@pytest.mark.parametrize("total", [0, 1, 7, 64, 1000, 4096 + 3])
@pytest.mark.parametrize("parts", [1, 2, 3, 7, 64])
def test_split_bytes_parts(total: int, parts: int) -> None:
    b = kit.split_bytes(total, parts)
    assert b.sum() == total and b.size == parts
    assert b.max() - b.min() <= 1 and (np.diff(b) <= 0).all()


@pytest.mark.parametrize("total", [0, 4, 40, 4 * 1001])
@pytest.mark.parametrize("chunk", [4, 12, 400])
def test_split_bytes_chunks_of_wavelets(total: int, chunk: int) -> None:
    b = kit.split_bytes(total, chunk=chunk, unit=4)
    assert b.sum() == total and (b % 4 == 0).all()
    assert (b[:-1] == chunk).all() and 0 <= b[-1] <= chunk


def test_split_bytes_errors() -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        kit.split_bytes(10, 2, unit=4)
    with pytest.raises(ValueError, match="too small"):
        kit.split_bytes(3, 4, allow_empty=False)
    with pytest.raises(ValueError, match="exactly one"):
        kit.split_bytes(8)


def _torus_hop(a: int, b: int, m: int, n: int) -> bool:
    (ra, ca), (rb, cb) = divmod(a, n), divmod(b, n)
    dr, dc = (ra - rb) % m, (ca - cb) % n
    return (dr in (1, m - 1) and dc == 0) or (dc in (1, n - 1) and dr == 0)


@pytest.mark.parametrize("m", range(1, 8))
@pytest.mark.parametrize("n", range(1, 8))
def test_orders_are_permutations_with_short_hops(m: int, n: int) -> None:
    p = m * n
    for order in (kit.snake(m, n), kit.torus_cycle(m, n), kit.row_major(p)):
        assert sorted(order.tolist()) == list(range(p))
    sn = kit.snake(m, n)
    for a, b in zip(sn[:-1], sn[1:], strict=True):
        assert abs(a // n - b // n) + abs(a % n - b % n) == 1
    cyc = kit.torus_cycle(m, n)
    hops = [_torus_hop(int(a), int(b), m, n) for a, b in zip(cyc, np.roll(cyc, -1))]
    if p > 2 and m > 1 and n > 1:
        # every hop a torus link, but the closing one when both sides are odd
        assert all(hops[:-1]) and (hops[-1] or (m % 2 and n % 2))
    f = kit.folded(p)
    assert sorted(f.tolist()) == list(range(p))
    assert (np.abs(np.diff(np.append(f, f[0]))) <= 2).all()


# -- skeletons -----------------------------------------------------------------
@pytest.mark.parametrize("p", [1, 2, 3, 5, 8, 12])
def test_ring_skeleton_over_any_order(p: int) -> None:
    order = np.random.default_rng(p).permutation(p)
    prog = kit.Program(p, kit.split_bytes(16 * p, p), rule="sendrecv")
    kit.ring_allreduce(prog, order)
    s = prog.schedule()
    assert s.num_transfers == 2 * p * (p - 1)
    assert wc.verify(s).ok
    x = np.random.default_rng(0).integers(0, 9, (p, 2 * p))
    assert (wc.execute(s, x) == x.sum(axis=0)).all()
    # the reduce-scatter alone leaves block ring_owners[b] at its owner
    owners = kit.ring_owners(order)
    prog = kit.Program(
        p, kit.split_bytes(16 * p, p), "reduce_scatter", owners=owners, rule="sendrecv"
    )
    kit.ring_allreduce(prog, order, phase="reduce_scatter")
    assert wc.verify(prog.schedule()).ok


def test_many_rings_at_once() -> None:
    rows = np.arange(12).reshape(3, 4)  # three rings of four
    steps = list(kit.ring_steps(rows))
    assert len(steps) == 6
    assert steps[0].group.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    assert steps[0].dst.tolist() == np.roll(rows, -1, axis=1).ravel().tolist()
    assert kit.ring_owners(rows)[:, 0].tolist() == [3, 7, 11]


@pytest.mark.parametrize("p", range(1, 41))
def test_butterflies_and_binomial_trees(p: int) -> None:
    x = np.random.default_rng(p).integers(-50, 50, (p, 3 * p))
    for style in ("pairs", "upper"):
        prog = kit.Program(p, [24 * p], rule="sendrecv")
        kit.recursive_doubling(prog, p, 0, style=style)
        s = prog.schedule()
        assert wc.verify(s).ok
        assert (wc.execute(s, x) == x.sum(axis=0)).all()
    fold = kit.Fold(p)
    prog = kit.Program(p, kit.split_bytes(24 * p, fold.q), rule="sendrecv")
    kit.fold_in(prog, fold, (0, fold.q))
    kit.halving_doubling(prog, fold)
    kit.fold_out(prog, fold, (0, fold.q))
    assert wc.verify(prog.schedule()).ok
    for root in {0, p // 2, p - 1}:
        prog = kit.Program(p, [8], "reduce", root=root, rule="sendrecv")
        kit.binomial_reduce(prog, p, 0, root=root)
        s = prog.schedule()
        assert wc.verify(s).ok and s.num_steps == (p - 1).bit_length()
        prog = kit.Program(p, [8], "broadcast", root=root, rule="sendrecv")
        kit.binomial_broadcast(prog, p, 0, root=root)
        assert wc.verify(prog.schedule()).ok


# -- the kit is the only way builders make schedules ----------------------------
def test_no_builder_constructs_schedules_outside_the_kit() -> None:
    """Only the kit (and the Schedule class itself) build core schedules."""
    allowed = {PKG / "schedule.py"} | set((PKG / "kit").glob("*.py"))
    pattern = re.compile(r"from_arrays|_core\.Schedule\b|\.append_csr\(")
    offenders = [
        f"{path.relative_to(PKG)}:{i}"
        for path in PKG.rglob("*.py")
        if path not in allowed
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line) and not line.lstrip().startswith("#")
    ]
    assert offenders == []


# -- core modules stand below the paper packages, without import circles ----------
_FAMILIES = ("wafer", "cluster", "wormhole", "mcm", "experiments")
_CORE = ("schedule", "topology", "analysis", "simulate", "kit", "algorithms", "plot")


def _module_imports(top_level_only: bool = False) -> dict[str, set[str]]:
    """Imports inside the package, function-level ones included: module -> modules."""
    import ast

    mods: dict[str, Path] = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = name.split(".") if name else []
        pkg = here if is_pkg else here[:-1]
        out: set[str] = set()
        tree = ast.parse(path.read_text())
        nodes = tree.body if top_level_only else ast.walk(tree)
        for node in nodes:
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            for alias in node.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if sub in mods else target)
        graph[name] = {m for m in out if m in mods and m and m != name}
    return graph


def test_core_modules_import_no_paper_package() -> None:
    graph = _module_imports()
    bad = [
        (m, t)
        for m, targets in graph.items()
        if m.split(".")[0] in _CORE
        for t in targets
        if t.split(".")[0] in _FAMILIES
    ]
    assert bad == []


def test_no_import_circles() -> None:
    # A submodule may import names from its own package (defined before the
    # package imports the submodule); every other edge counts.
    graph = {
        m: {t for t in ts if not m.startswith(t + ".")}
        for m, ts in _module_imports().items()
    }
    graph.pop("", None)  # the package's __init__ imports everything on purpose
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                cycles.append([*stack[stack.index(t) :], t])
            elif t not in state:
                visit(t, [*stack, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def _private_imports() -> list[str]:
    """``from .x import _name`` where ``_name`` is not a module: a private name
    taken across a module boundary."""
    import ast

    found = []
    for path in sorted(PKG.rglob("*.py")):
        here = path.parent
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = here
            for _ in range(node.level - 1):
                base = base.parent
            target = (
                base.joinpath(*(node.module or "").split(".")) if node.module else base
            )
            for alias in node.names:
                if not alias.name.startswith("_") or alias.name == "__version__":
                    continue
                sub = target / alias.name
                if (
                    any(sub.parent.glob(alias.name + ".*"))
                    or (sub / "__init__.py").exists()
                ):
                    continue  # a private module of the package, not a private name
                found.append(f"{path.relative_to(PKG)}:{node.lineno}: {alias.name}")
    return found


def test_no_private_name_crosses_a_module() -> None:
    assert _private_imports() == []


def test_split_weighted_is_proportional_and_exact() -> None:
    from fractions import Fraction

    rng = np.random.default_rng(3)
    for _ in range(200):
        w = rng.integers(0, 9, size=int(rng.integers(1, 12))).astype(float)
        if w.sum() == 0:
            w[0] = 1.0
        total = int(rng.integers(0, 10_000))
        got = kit.split_weighted(total, w)
        assert int(got.sum()) == total
        # Each part is the floor or the ceiling of its exact share.
        for g, wi in zip(got.tolist(), w.tolist(), strict=True):
            exact = Fraction(total) * Fraction(wi) / Fraction(w.sum())
            assert exact - 1 < g < exact + 1
    with pytest.raises(ValueError, match="weights"):
        kit.split_weighted(10, [0, 0])
    with pytest.raises(ValueError, match="total"):
        kit.split_weighted(-1, [1])


@pytest.mark.parametrize("seed", range(6))
def test_csr_deps_are_taken_as_distinct_sorted_lists(seed) -> None:
    # Explicit CSR lists, some sorted (taken as they are), some not, with
    # repeats, -1s and empty lists (normalised): the schedule's lists are
    # the sorted distinct non-negative ids of each, computed here by sets.
    rng = np.random.default_rng(seed)
    prog = kit.Program(4, [8] * 4, "allgather", rule="explicit")
    prog.step(np.arange(4), (np.arange(4) + 1) % 4, np.arange(4))  # ids 0..3
    t = 12
    lists = []
    for i in range(t):
        k = int(rng.integers(0, 4))
        x = rng.integers(-1, 4 + i, size=k)
        lists.append(np.sort(np.unique(x[x >= 0])) if seed % 2 else x)
    off = np.concatenate([[0], np.cumsum([len(x) for x in lists])])
    flat = np.concatenate(lists).astype(np.int64)
    src = np.arange(t) % 4
    prog.step(src, (src + 1) % 4, np.arange(t) % 4, deps=(flat, off))
    s = prog.schedule()
    for i, x in enumerate(lists):
        assert s.transfer(4 + i)["deps"] == sorted({int(v) for v in x if v >= 0})


def _last_before_brute(qk, qp, ik, ip) -> list[int]:
    """The largest item position below each query's with its key, or -1."""
    out = []
    for k, p in zip(qk.tolist(), qp.tolist(), strict=True):
        found = [
            b for a, b in zip(ik.tolist(), ip.tolist(), strict=True) if a == k and b < p
        ]
        out.append(max(found, default=-1))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_last_before_finds_the_latest_earlier_item(seed: int) -> None:
    from wafercoll.kit.cells import _last_before_lexsort, last_before

    rng = np.random.default_rng(seed)
    nq, ni = rng.integers(0, 60, size=2)
    # few keys (some negative) and positions, so that keys and positions repeat
    qk, ik = rng.integers(-3, 4, nq), rng.integers(-3, 4, ni)
    qp, ip = rng.integers(0, 20, nq), rng.integers(0, 20, ni)
    want = _last_before_brute(qk, qp, ik, ip)
    assert last_before(qk, qp, ik, ip).tolist() == want
    assert _last_before_lexsort(qk, qp, ik, ip).tolist() == want
    # keys and positions too wide to pack into one integer take the lexsort
    wide = np.array([-(2**40), 2**40])
    qk2, ik2 = np.concatenate([qk, wide]), np.concatenate([ik, wide])
    qp2, ip2 = np.concatenate([qp, [2**30, 0]]), np.concatenate([ip, [0, 2**30]])
    want2 = _last_before_brute(qk2, qp2, ik2, ip2)
    assert last_before(qk2, qp2, ik2, ip2).tolist() == want2
