"""The verifier and the NumPy executor: builders pass, defects are caught.

Expected outputs are computed independently with NumPy (column sums, the
root's row), and a pure-Python reference executor runs verified schedules in
random completion orders to check the verifier's claim of order independence.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import wafercoll as wc

FIRST_BUILDERS = [
    "generic_ring_allreduce",
    "generic_recursive_doubling_allreduce",
    "generic_rabenseifner_allreduce",
    "generic_binomial_reduce",
    "generic_binomial_broadcast",
]


def expected_output(s: wc.Schedule, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expected buffers and a mask of the cells the collective defines."""
    p, n = x.shape
    out = np.zeros_like(x)
    mask = np.zeros(x.shape, dtype=bool)
    part = s.participants
    if s.collective in ("allreduce", "reduce"):
        total = x[part].sum(axis=0)
        rows = np.flatnonzero(part) if s.collective == "allreduce" else [s.root]
        out[rows] = total
        mask[rows] = True
    elif s.collective == "broadcast":
        out[part] = x[s.root]
        mask[part] = True
    else:
        raise NotImplementedError(s.collective)
    return out, mask


@pytest.mark.parametrize("name", FIRST_BUILDERS)
def test_builders_verify_and_execute_for_p_1_to_64(name, rng):
    for p in range(1, 65):
        s = wc.build(name, ranks=p, size_bytes=8 * 40)
        rep = wc.verify(s)
        assert rep.transfers == s.num_transfers
        x = rng.integers(-(2**40), 2**40, size=(p, 40), dtype=np.int64)
        y = wc.execute(s, x, check=False)
        want, mask = expected_output(s, x)
        np.testing.assert_array_equal(y[mask], want[mask], err_msg=f"{name} p={p}")


@pytest.mark.parametrize("root", [0, 3, 6])
def test_rooted_builders_any_root(root, rng):
    for name in ("generic_binomial_reduce", "generic_binomial_broadcast"):
        s = wc.build(name, ranks=7, size_bytes=24, root=root)
        assert s.root == root
        x = rng.standard_normal((7, 3))
        want, mask = expected_output(s, x)
        np.testing.assert_allclose(wc.execute(s, x)[mask], want[mask], rtol=1e-12)


def test_step_and_message_counts_match_closed_forms():
    for p in range(1, 70):
        q = 1 << int(math.floor(math.log2(p)))
        fold = 0 if q == p else 2
        lg = int(math.log2(q))
        steps = {
            "generic_ring_allreduce": 2 * (p - 1),
            "generic_recursive_doubling_allreduce": lg + fold,
            "generic_rabenseifner_allreduce": 2 * lg + fold,
            "generic_binomial_reduce": math.ceil(math.log2(p)) if p > 1 else 0,
            "generic_binomial_broadcast": math.ceil(math.log2(p)) if p > 1 else 0,
        }
        for name, want in steps.items():
            s = wc.build(name, ranks=p, size_bytes=p * 64)
            assert s.num_steps == want, (name, p)
        ring = wc.build("generic_ring_allreduce", ranks=p, size_bytes=p * 64)
        # every rank sends 2(p-1) messages of size/p
        assert ring.stats()["bytes_sent"].tolist() == [2 * (p - 1) * 64] * p


def _without(doc: dict, i: int) -> dict:
    """Drop transfer i and renumber the dependencies that remain."""
    out = dict(doc)
    transfers = []
    for j, t in enumerate(doc["transfers"]):
        if j == i:
            continue
        deps = [d - (d > i) for d in t["deps"] if d != i]
        transfers.append({**t, "deps": deps})
    out["transfers"] = transfers
    return out


def _raises(doc: dict) -> bool:
    try:
        wc.verify(wc.Schedule.from_dict(doc))
    except wc.ScheduleError:
        return True
    return False


@pytest.mark.parametrize("name", FIRST_BUILDERS)
@pytest.mark.parametrize("p", [2, 3, 5, 6, 8, 11])
def test_removing_any_transfer_is_caught(name, p):
    doc = wc.build(name, ranks=p, size_bytes=96).to_dict()
    for i in range(len(doc["transfers"])):
        assert _raises(_without(doc, i)), f"{name} p={p}: dropping transfer {i} passed"
        # dropped without renumbering: indices shift under the dependencies
        raw = dict(doc, transfers=doc["transfers"][:i] + doc["transfers"][i + 1 :])
        assert _raises(raw), f"{name} p={p}: deleting transfer {i} passed"


@pytest.mark.parametrize(
    "name",
    [
        "generic_ring_allreduce",
        "generic_recursive_doubling_allreduce",
        "generic_rabenseifner_allreduce",
        "generic_binomial_reduce",
    ],
)
@pytest.mark.parametrize("p", [2, 3, 4, 7, 9])
def test_appending_a_copy_of_any_reducing_transfer_is_caught(name, p):
    doc = wc.build(name, ranks=p, size_bytes=96).to_dict()
    for t in doc["transfers"]:
        if t["op"] != "reduce":
            continue
        mutated = dict(doc, transfers=doc["transfers"] + [dict(t)])
        assert _raises(mutated)


def _expect_error(s: wc.Schedule, kind: str, transfer=None, rank=None, block=None):
    with pytest.raises(wc.ScheduleError) as info:
        wc.verify(s)
    err = info.value
    assert err.kind == kind, str(err)
    for attr, want in (("transfer", transfer), ("rank", rank), ("block", block)):
        if want is not None:
            assert getattr(err, attr) == want, (attr, str(err))
    return err


def test_write_write_race_names_transfer_rank_block():
    s = wc.Schedule(3, [4, 4], "reduce", root=0)
    s.add_transfer(1, 0, [(0, 2)], op="reduce")
    s.add_transfer(2, 0, [1], op="reduce")
    err = _expect_error(s, "race", transfer=1, rank=0, block=1)
    assert "neither depends on the other" in str(err)


def test_read_that_depends_on_timing_is_a_race():
    s = wc.Schedule(4, [4], "reduce", root=0)
    s.add_transfer(2, 0, [0], op="reduce")  # t0 writes rank 0
    s.add_transfer(3, 2, [0], op="copy")  # t1 unrelated to t0
    s.add_transfer(
        0, 1, [0], op="copy", deps=[1]
    )  # t2 may start before or after t0 lands
    _expect_error(s, "race", transfer=2, rank=0, block=0)


def test_overwrite_before_read_completes_is_a_race():
    s = wc.Schedule(4, [4], "broadcast", root=0)
    a = s.add_transfer(0, 1, [0])
    c = s.add_transfer(0, 2, [0])
    d = s.add_transfer(0, 3, [0])
    s.add_transfer(1, 3, [0], deps=[a, d])  # reads rank 1 once d is done
    s.add_transfer(2, 1, [0], deps=[a, c])  # may overwrite rank 1 before d is done
    err = _expect_error(s, "race", transfer=3, rank=1, block=0)
    assert "overwrites" in str(err)
    # a pairwise exchange with equal dependencies is not a race
    ok = wc.Schedule(3, [4], "broadcast", root=0)
    a = ok.add_transfer(0, 1, [0])
    b = ok.add_transfer(0, 2, [0])
    ok.add_transfer(1, 2, [0], deps=[a, b])
    ok.add_transfer(2, 1, [0], deps=[a, b])
    wc.verify(ok)


def test_double_count_missing_and_empty_read():
    s = wc.Schedule(2, [4], "reduce", root=0)
    a = s.add_transfer(1, 0, [0], op="reduce")
    s.add_transfer(1, 0, [0], op="reduce", deps=[a])
    _expect_error(s, "double_count", transfer=1, rank=0, block=0)

    s = wc.Schedule(3, [4, 4], "allreduce")
    s.add_transfer(0, 1, [(0, 2)], op="reduce")
    err = _expect_error(s, "missing")
    assert "contribution of rank" in str(err)

    s = wc.Schedule(3, [4], "broadcast", root=0)
    s.add_transfer(1, 2, [0])
    s.add_transfer(0, 1, [0], deps=[0])
    _expect_error(s, "empty_read", transfer=0, rank=1, block=0)


def test_cycle_and_forward_dependencies():
    doc = {
        "ranks": 2,
        "block_bytes": [4],
        "collective": {"kind": "allreduce"},
        "transfers": [
            {"src": 0, "dst": [1], "blocks": [0], "op": "reduce", "deps": [1]},
            {"src": 1, "dst": [0], "blocks": [0], "op": "reduce", "deps": [0]},
        ],
    }
    _expect_error(wc.Schedule.from_dict(doc), "cycle")
    # forward references without a cycle are fine
    doc["transfers"][1]["deps"] = []
    doc["transfers"][0]["deps"] = []
    wc.verify(wc.Schedule.from_dict(doc))


def test_allgather_reduce_scatter_and_participants(rng):
    # allgather on 3 ranks, block b owned by rank b: everyone copies to everyone
    s = wc.Schedule(3, [8, 8, 8], "allgather")
    for r in range(3):
        s.add_transfer(r, [q for q in range(3) if q != r], [r])
    wc.verify(s)
    x = rng.integers(0, 100, size=(3, 6))
    y = wc.execute(s, x)
    want = np.concatenate([x[0, 0:2], x[1, 2:4], x[2, 4:6]])
    np.testing.assert_array_equal(y, np.tile(want, (3, 1)))
    # reducing into an empty cell is a copy of the owner's block; a block that
    # never reaches a rank is reported missing there
    ok = wc.Schedule(2, [8, 8], "allgather")
    ok.add_transfer(0, 1, [0], op="reduce")
    ok.add_transfer(1, 0, [1], op="copy")
    wc.verify(ok)
    bad = wc.Schedule(3, [8, 8, 8], "allgather")
    bad.add_transfer(0, [1, 2], [0])
    bad.add_transfer(1, [0, 2], [1])
    bad.add_transfer(2, [0], [2])
    _expect_error(bad, "missing", rank=1, block=2)
    # reduce_scatter with custom owners: block 0 -> rank 1, block 1 -> rank 0
    rs = wc.Schedule(2, [4, 4], "reduce_scatter", owners=[1, 0])
    rs.add_transfer(0, 1, [0], op="reduce")
    rs.add_transfer(1, 0, [1], op="reduce")
    wc.verify(rs)
    # rank 2 relays but holds no input and needs no output
    relay = wc.Schedule(3, [4], "allreduce", participants=[0, 1])
    a = relay.add_transfer(0, 2, [0], op="copy")
    b = relay.add_transfer(2, 1, [0], op="reduce", deps=[a])
    relay.add_transfer(1, 0, [0], op="copy", deps=[b])
    wc.verify(relay)
    x = rng.integers(0, 100, size=(3, 5))
    y = wc.execute(relay, x)
    np.testing.assert_array_equal(y[:2], np.tile(x[0] + x[1], (2, 1)))


# --- order independence: a reference executor with random completion orders --


def reference_execute(
    s: wc.Schedule, x: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Snapshot sources when the last dependency completes; complete in random order."""
    p, n = x.shape
    doc = s.to_dict()
    offs = wc.analysis.block_element_offsets(s, n)
    init, _ = _initial(s, x, offs)
    buf = init.copy()
    transfers = doc["transfers"]
    waiting = [len(t["deps"]) for t in transfers]
    succ = [[] for _ in transfers]
    for i, t in enumerate(transfers):
        for d in t["deps"]:
            succ[d].append(i)

    def cells(t):
        for b in t["blocks"]:
            lo, hi = (b, b + 1) if isinstance(b, int) else b
            yield slice(offs[lo], offs[hi])

    started = {}
    for i, w in enumerate(waiting):
        if w == 0:
            started[i] = [
                buf[transfers[i]["src"], c].copy() for c in cells(transfers[i])
            ]
    while started:
        i = list(started)[rng.integers(len(started))]
        data = started.pop(i)
        t = transfers[i]
        for d in t["dst"]:
            for c, v in zip(cells(t), data):
                buf[d, c] = buf[d, c] + v if t["op"] == "reduce" else v
        for j in succ[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                started[j] = [
                    buf[transfers[j]["src"], c].copy() for c in cells(transfers[j])
                ]
    return buf


def _initial(s, x, offs):
    p, _ = x.shape
    holds = np.zeros((p, s.num_blocks), dtype=bool)
    part = s.participants
    if s.collective == "broadcast":
        holds[s.root] = True
    elif s.collective == "allgather":
        holds[s.owners, np.arange(s.num_blocks)] = True
    else:
        holds[part] = True
    holds &= part[:, None]
    buf = np.zeros_like(x)
    for r in range(p):
        for b in range(s.num_blocks):
            if holds[r, b]:
                buf[r, offs[b] : offs[b + 1]] = x[r, offs[b] : offs[b + 1]]
    return buf, holds


def random_schedule(rng):
    p = int(rng.integers(2, 5))
    nb = int(rng.integers(1, 3))
    kind = ["reduce", "allreduce", "broadcast"][int(rng.integers(3))]
    root = int(rng.integers(p)) if kind != "allreduce" else None
    s = wc.Schedule(p, [4] * nb, kind, root=root)
    for i in range(int(rng.integers(1, 9))):
        src = int(rng.integers(p))
        dst = [
            int(d)
            for d in rng.permutation([q for q in range(p) if q != src])[
                : int(rng.integers(1, 3))
            ]
        ]
        lo = int(rng.integers(nb))
        hi = int(rng.integers(lo + 1, nb + 1))
        deps = [int(d) for d in range(i) if rng.random() < 0.4]
        op = "reduce" if kind != "broadcast" and rng.random() < 0.7 else "copy"
        s.add_transfer(src, dst, [(lo, hi)], op=op, deps=deps)
    return s


def test_verified_random_schedules_are_order_independent(rng):
    passed = 0
    for _ in range(4000):
        s = random_schedule(rng)
        try:
            wc.verify(s)
        except wc.ScheduleError:
            continue
        passed += 1
        x = rng.integers(-50, 50, size=(s.num_ranks, 2 * s.num_blocks))
        want, mask = expected_output(s, x)
        fast = wc.execute(s, x, check=False)
        np.testing.assert_array_equal(fast[mask], want[mask])
        for _ in range(4):
            ref = reference_execute(s, x, rng)
            np.testing.assert_array_equal(ref, fast)
    assert passed >= 20  # the property must actually be exercised


def test_execute_arguments(rng):
    s = wc.build("generic_ring_allreduce", ranks=4, size_bytes=64)
    with pytest.raises(ValueError, match=r"shape \(ranks, elements\) = \(4, n\)"):
        wc.execute(s, np.zeros((3, 8)))
    with pytest.raises(TypeError, match="numeric"):
        wc.execute(s, np.array([["a"] * 4] * 4))
    with pytest.raises(TypeError, match="Schedule"):
        wc.verify("generic_ring_allreduce")
    y = wc.execute(s, np.ones((4, 10), dtype=np.float32))
    assert y.dtype == np.float32 and np.all(y == 4)
    # fewer elements than blocks: some blocks are empty, sums still exact
    x = rng.integers(0, 9, size=(4, 3))
    np.testing.assert_array_equal(wc.execute(s, x), np.tile(x.sum(0), (4, 1)))


def test_large_schedule_of_one_block_is_verified_on_two_threads():
    # Recursive doubling over 8192 ranks: 106,496 transfers, all over its one
    # block, so not split by blocks: the chain cover is made beside the set-up
    # and the backward pass runs beside the forward one, over cells dense from
    # the start. A defect near the end is found and named as in small cases.
    p = 8192
    s = wc.build("generic_recursive_doubling_allreduce", p, 8)
    assert len(s) >= 1 << 16
    rep = wc.verify(s)
    assert rep.ok and rep.windows == 1 and rep.steps == 13
    deps, off = s.dependencies()
    lo, hi, boff = s.block_ranges()
    dst, doff = s.destinations()
    src, op = s.src, s.op

    def rebuilt(src, dst, op, deps, off):
        return wc.Schedule.from_arrays(
            p,
            s.block_bytes,
            "allreduce",
            src=src,
            dst=dst,
            block_lo=np.zeros(len(src), dtype=np.int64),
            block_hi=np.ones(len(src), dtype=np.int64),
            op=op,
            deps=deps,
            dep_offsets=off,
        )

    assert (lo == 0).all() and (hi == 1).all() and (np.diff(boff) == 1).all()
    assert (np.diff(doff) == 1).all()
    assert wc.verify(rebuilt(src, dst, op, deps, off)).ok
    # the last transfer again, after it and after the last write into its
    # source: its contribution counted twice
    last = len(s) - 1
    into_src = int(np.flatnonzero(dst == src[last])[-1])
    twice = rebuilt(
        np.append(src, src[last]),
        np.append(dst, dst[last]),
        np.append(op, op[last]),
        np.append(deps, sorted((into_src, last))),
        np.append(off, off[-1] + 2),
    )
    _expect_error(
        twice, "double_count", transfer=last + 1, rank=int(dst[last]), block=0
    )
    # a transfer of the last step that waits for nothing: it writes its
    # destination's cell, which the step before wrote, unordered
    t = len(s) - 100
    n = off[t + 1] - off[t]
    racy = rebuilt(
        src,
        dst,
        op,
        np.delete(deps, np.arange(off[t], off[t + 1])),
        np.concatenate([off[: t + 1], off[t + 1 :] - n]),
    )
    _expect_error(racy, "race", transfer=t, rank=int(dst[t]))
