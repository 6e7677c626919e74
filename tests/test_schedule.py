"""Schedule construction, derived views and JSON round trips."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import wafercoll as wc

BUILDERS = [
    "generic_ring_allreduce",
    "generic_recursive_doubling_allreduce",
    "generic_rabenseifner_allreduce",
    "generic_binomial_reduce",
    "generic_binomial_broadcast",
]


def test_add_transfer_and_views():
    s = wc.Schedule(3, [4, 4, 8], "allreduce", name="hand")
    t0 = s.add_transfer(0, [1, 2], [(0, 2)], op="reduce")
    t1 = s.add_transfer(1, 2, [2], op="copy", deps=[t0])
    assert (t0, t1) == (0, 1)
    assert len(s) == 2 and s.num_blocks == 3 and s.size_bytes == 16
    assert s.transfer_bytes().tolist() == [8, 8]
    assert s.steps().tolist() == [0, 1]
    st = s.stats()
    # a multicast counts once for the sender, once per destination
    assert st["messages_sent"].tolist() == [1, 1, 0]
    assert st["bytes_received"].tolist() == [0, 8, 16]
    assert s.transfer(0) == {
        "src": 0,
        "dst": [1, 2],
        "blocks": [[0, 2]],
        "op": "reduce",
        "deps": [],
    }
    assert "hand" in repr(s) and "<table>" in s._repr_html_()


def test_adjacent_ranges_are_merged_and_overlaps_refused():
    s = wc.Schedule(2, [1] * 6, "allreduce")
    s.add_transfer(0, 1, [(3, 5), (0, 2), 2], op="copy")
    assert s.transfer(0)["blocks"] == [[0, 5]]
    with pytest.raises(wc.ScheduleError, match="block 1 twice"):
        s.add_transfer(0, 1, [(0, 2), 1])


@pytest.mark.parametrize(
    ("kwargs", "match", "exc"),
    [
        ({"ranks": 0, "block_bytes": [1]}, "ranks must be >= 1", ValueError),
        ({"ranks": 2.0, "block_bytes": [1]}, "ranks must be an integer", TypeError),
        (
            {"ranks": 2, "block_bytes": [-1]},
            r"block_bytes\[0\] must be >= 0",
            ValueError,
        ),
        ({"ranks": 2, "block_bytes": []}, "at least one block", ValueError),
        (
            {"ranks": 2, "block_bytes": [1], "collective": "allscatter"},
            "collective must be",
            ValueError,
        ),
        (
            {"ranks": 2, "block_bytes": [1], "collective": "gather"},
            "one block per rank",
            ValueError,
        ),
        (
            {"ranks": 3, "block_bytes": [1] * 4, "collective": "alltoall"},
            r"ranks \* ranks = 9 blocks",
            ValueError,
        ),
        (
            {
                "ranks": 2,
                "block_bytes": [1, 1],
                "collective": "allreduce",
                "targets": [0, 1],
            },
            "targets apply only",
            ValueError,
        ),
        (
            {"ranks": 2, "block_bytes": [1], "collective": "reduce", "root": 2},
            "root must be <= 1",
            ValueError,
        ),
        (
            {"ranks": 2, "block_bytes": [1], "collective": "allgather"},
            "owners is required",
            ValueError,
        ),
    ],
)
def test_bad_schedule_arguments(kwargs, match, exc):
    with pytest.raises(exc, match=match):
        wc.Schedule(**kwargs)


def test_bad_transfers():
    s = wc.Schedule(3, [1, 1], "allreduce")
    with pytest.raises(ValueError, match="src must be <= 2"):
        s.add_transfer(3, 1, [0])
    with pytest.raises(ValueError, match="contains the source"):
        s.add_transfer(1, [2, 1], [0])
    with pytest.raises(ValueError, match="blocks"):
        s.add_transfer(0, 1, [2])
    with pytest.raises(ValueError, match="op must be"):
        s.add_transfer(0, 1, [0], op="sum")
    with pytest.raises(ValueError, match="first transfer cannot depend"):
        s.add_transfer(0, 1, [0], deps=[0])
    assert len(s) == 0  # nothing half-added


@pytest.mark.parametrize("n", [3, 63, 64, 65, 500])
def test_repeated_destination_named(n):
    # Short lists are checked pairwise, long ones (a broadcast to a whole
    # wafer) against the ranks seen: both name the first repeat.
    s = wc.Schedule(n + 2, [1], "allreduce")
    dsts = list(range(1, n + 1))
    with pytest.raises(wc.ScheduleError, match=f"lists rank {n // 2 + 1} twice"):
        s.add_transfer(0, dsts[: n // 2 + 1] + [n // 2 + 1] + dsts[n // 2 + 1 :], [0])
    s.add_transfer(0, dsts, [0])  # no repeat: accepted
    assert len(s) == 1


@pytest.mark.parametrize("name", BUILDERS)
@pytest.mark.parametrize("p", [1, 2, 5, 8, 13])
def test_json_round_trip(name, p, rng):
    s = wc.build(name, ranks=p, size_bytes=1000)
    text = s.to_json()
    doc = json.loads(text)
    assert (
        isinstance(doc["transfers"], list) and len(doc["transfers"]) == s.num_transfers
    )
    t = wc.Schedule.from_json(text)
    assert t.to_dict() == s.to_dict()
    wc.verify(t)
    x = rng.integers(-1000, 1000, size=(p, 31))
    np.testing.assert_array_equal(wc.execute(t, x), wc.execute(s, x))


def test_json_file_round_trip(tmp_path):
    s = wc.build("generic_rabenseifner_allreduce", ranks=6, size_bytes=64)
    path = tmp_path / "s.json"
    s.to_json(path, indent=1)
    assert wc.Schedule.from_json(path).to_dict() == s.to_dict()
    assert wc.Schedule.from_json(str(path)).name == s.name


def _doc():
    return wc.build("generic_ring_allreduce", ranks=3, size_bytes=30).to_dict()


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda d: d.pop("transfers"), "missing field 'transfers'"),
        (lambda d: d.update(ranks="3"), "ranks must be an integer"),
        (
            lambda d: d["transfers"][4].update(src=7),
            r"transfer 4: field 'src' must be <= 2",
        ),
        (
            lambda d: d["transfers"][2].update(dst=[]),
            "transfer 2: field 'dst' must list",
        ),
        (
            lambda d: d["transfers"][1].update(blocks=[[2, 1]]),
            "transfer 1: field 'blocks'",
        ),
        (lambda d: d["transfers"][3].update(op="max"), "transfer 3: field 'op'"),
        (
            lambda d: d["transfers"][5].update(deps=[99]),
            "transfer 5: field 'deps' must be <= 11",
        ),
        (
            lambda d: d["transfers"][5].update(deps=[5]),
            "transfer 5: field 'deps' lists the transfer itself",
        ),
        (
            lambda d: d["transfers"][0].update(colour=1),
            "transfer 0: unknown field 'colour'",
        ),
        (lambda d: d["transfers"][0].pop("src"), "transfer 0: missing field 'src'"),
        (lambda d: d["collective"].update(kind="scan"), "collective must be one of"),
        (lambda d: d.update(transfers={}), "must be a list"),
    ],
)
def test_malformed_documents_name_field_and_index(mutate, match):
    doc = _doc()
    mutate(doc)
    with pytest.raises(wc.ScheduleError, match=match):
        wc.Schedule.from_dict(doc)


def test_malformed_json_text():
    with pytest.raises(wc.ScheduleError, match="malformed JSON"):
        wc.Schedule.from_json('{"ranks": 2, ')
    with pytest.raises(wc.ScheduleError, match="JSON object"):
        wc.Schedule.from_json("[1, 2]")


def test_to_pandas():
    pd = pytest.importorskip("pandas")
    df = wc.build("generic_binomial_reduce", ranks=5, size_bytes=8).to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["src", "dst", "blocks", "op", "deps", "bytes", "step"]
    assert len(df) == 4 and (df["op"] == "reduce").all()


def test_from_arrays_matches_add_transfer():
    rng = np.random.default_rng(3)
    p = 7
    ref = wc.build("generic_ring_allreduce", ranks=p, size_bytes=7 * 64)
    rows = [ref.transfer(i) for i in range(ref.num_transfers)]
    src = [r["src"] for r in rows]
    dst = [d for r in rows for d in r["dst"]]
    doff = np.cumsum([0] + [len(r["dst"]) for r in rows])
    blocks = [
        b if isinstance(b, list) else [b, b + 1] for r in rows for b in r["blocks"]
    ]
    boff = np.cumsum([0] + [len(r["blocks"]) for r in rows])
    deps = [d for r in rows for d in r["deps"]]
    eoff = np.cumsum([0] + [len(r["deps"]) for r in rows])
    ops = [1 if r["op"] == "reduce" else 0 for r in rows]
    arrays = dict(
        src=src,
        dst=dst,
        block_lo=[b[0] for b in blocks],
        block_hi=[b[1] for b in blocks],
        op=ops,
        deps=deps,
        dep_offsets=eoff,
    )
    s = wc.Schedule.from_arrays(
        p,
        ref.block_bytes,
        "allreduce",
        dst_offsets=doff,
        block_offsets=boff,
        **arrays,
    )
    assert s.to_dict()["transfers"] == ref.to_dict()["transfers"]
    x = rng.standard_normal((p, ref.num_blocks))
    out = wc.execute(s, x)
    assert np.allclose(out, x.sum(axis=0))
    # The ring sends one block to one rank per transfer: the offsets may be
    # left out.
    assert (np.diff(doff) == 1).all() and (np.diff(boff) == 1).all()
    short = wc.Schedule.from_arrays(p, ref.block_bytes, "allreduce", **arrays)
    assert short.to_dict()["transfers"] == ref.to_dict()["transfers"]


def test_from_arrays_rejects_bad_arrays():
    kw = dict(src=[0], dst=[1], block_lo=[0], block_hi=[1], block_offsets=[0, 1])
    with pytest.raises(ValueError, match="dst_offsets"):
        wc.Schedule.from_arrays(2, [8], "allreduce", dst_offsets=[0], **kw)
    with pytest.raises(wc.ScheduleError, match="dst"):
        wc.Schedule.from_arrays(
            2, [8], "allreduce", dst_offsets=[0, 1], **{**kw, "dst": [9]}
        )
    with pytest.raises(ValueError, match="op"):
        wc.Schedule.from_arrays(2, [8], "allreduce", dst_offsets=[0, 1], op="sum", **kw)


def _chain(n: int, multicast_at: int | None) -> tuple[wc.Schedule, list, list, list]:
    """A chain of n unicast one-range transfers on 5 ranks, except that the
    transfer at ``multicast_at`` has two destinations and two block ranges.

    Returns the schedule and, per transfer, the destinations, ranges and
    dependencies it was given.
    """
    s = wc.Schedule(5, [8] * 4, "allreduce")
    dsts, ranges, deps = [], [], []
    for t in range(n):
        src = t % 5
        d = [(src + 1) % 5]
        r = [(t % 4, t % 4 + 1)]
        if t == multicast_at:
            d.append((src + 2) % 5)
            r = [(0, 1), (2, 3)]
        e = [t - 1] if t else []
        s.add_transfer(src, d, r, deps=e)
        dsts.append(d)
        ranges.append(r)
        deps.append(e)
    return s, dsts, ranges, deps


def _offsets(rows: list) -> list[int]:
    out = [0]
    for row in rows:
        out.append(out[-1] + len(row))
    return out


@pytest.mark.parametrize(
    ("name", "ranks", "size", "regular"),
    [
        ("generic_recursive_doubling_allreduce", 64, 8, True),
        ("generic_recursive_doubling_allreduce", 6, 8, False),
        ("generic_ring_allreduce", 6, 600, True),
        ("generic_ring_allreduce", 7, 700, True),
    ],
)
def test_regular_dependency_offsets_are_not_stored(name, ranks, size, regular):
    # Recursive doubling on a power of two has no dependencies in its first
    # step and four per transfer after; the ring none, then three. Such
    # offsets are not stored (4 bytes per transfer saved); recursive doubling
    # on 6 ranks (extra steps for the ranks beyond 4) stores them, 4 bytes
    # per offset. The bytes per transfer beside them: src 4, op 1, one
    # destination 4 and the block range (4 for one block per range, the first
    # block; nothing when every transfer moves the same single block).
    s = wc.build(name, ranks, size)
    deps, off = s.dependencies()
    counts = np.diff(off)
    lo, hi, _ = s.block_ranges()
    n = len(s)
    # regular: a run of empty rows, then rows of one length
    zeros = int(np.argmax(counts > 0)) if counts.any() else n
    assert (
        bool((counts[:zeros] == 0).all() and (counts[zeros:] == counts[-1]).all())
        == regular
    )
    same_range = bool((lo == lo[0]).all() and (hi == hi[0]).all())
    ranges = 0 if same_range else 4 * n
    stored = 0 if regular else 4 * (n + 1)
    assert s._core.transfer_array_bytes == 9 * n + ranges + 4 * len(deps) + stored
    assert off.tolist() == np.concatenate([[0], np.cumsum(counts)]).tolist()


@pytest.mark.parametrize("multicast_at", [None, 0, 6, 11])
def test_offsets_read_the_same_whichever_transfer_is_a_multicast(multicast_at):
    # The core stores no destination or range offsets while every transfer
    # has one of each; Python sees the full int64 arrays all the same.
    n = 12
    s, dsts, ranges, deps = _chain(n, multicast_at)
    ranks, doff = s.destinations()
    lo, hi, roff = s.block_ranges()
    dl, eoff = s.dependencies()
    for arr in (doff, roff, eoff):
        assert arr.dtype == np.int64 and len(arr) == n + 1
    assert doff.tolist() == _offsets(dsts)
    assert roff.tolist() == _offsets(ranges)
    assert eoff.tolist() == _offsets(deps)
    assert ranks.tolist() == [d for row in dsts for d in row]
    assert list(zip(lo.tolist(), hi.tolist(), strict=True)) == [
        x for row in ranges for x in row
    ]
    assert dl.tolist() == [d for row in deps for d in row]
    assert s.dst.tolist() == [row[0] for row in dsts]
    for t in (0, n // 2, n - 1):
        assert s.transfer(t)["dst"] == dsts[t]
    # Bytes per transfer: src 4, op 1, 4 per destination, 4 per range (every
    # range here is one block, kept as its first block), 4 per dependency, and
    # 4 per destination and range offset once a transfer is a multicast. The
    # dependency offsets are not stored: none for the first transfer, one for
    # every later one.
    extra = 0 if multicast_at is None else 4 + 4 + 2 * 4 * (n + 1)
    assert s._core.transfer_array_bytes == n * 13 + (n - 1) * 4 + extra
    back = pickle.loads(pickle.dumps(s))
    assert back == s
    assert back.destinations()[1].tolist() == doff.tolist()
    assert back.block_ranges()[2].tolist() == roff.tolist()
    assert back._core.transfer_array_bytes == s._core.transfer_array_bytes
    again = wc.Schedule.from_arrays(
        5,
        [8] * 4,
        "allreduce",
        src=s.src,
        dst=ranks,
        dst_offsets=doff,
        block_lo=lo,
        block_hi=hi,
        block_offsets=roff,
        deps=dl,
        dep_offsets=eoff,
    )
    assert again == s


def test_rejected_transfer_in_a_batch_leaves_no_range_behind():
    # Transfer 1 of the batch names block 1 twice ([0, 2) and [1, 3)): the
    # batch stops there with transfer 0 added, and the schedule stays whole
    # (its range list matches its offsets, so it pickles).
    s = wc.Schedule(3, [8] * 4, "allreduce")
    with pytest.raises(wc.ScheduleError, match="twice"):
        s._core.append_csr(
            np.array([0, 1], np.int32),
            np.array([0, 0], np.uint8),
            None,
            np.array([1, 2], np.int32),
            np.array([0, 1, 3]),
            np.array([0, 0, 1], np.int32),
            np.array([1, 2, 3], np.int32),
            np.array([0, 0, 0]),
            np.array([], np.int32),
        )
    assert len(s) == 1
    lo, hi, off = s.block_ranges()
    assert (lo.tolist(), hi.tolist(), off.tolist()) == ([0], [1], [0, 1])
    assert pickle.loads(pickle.dumps(s)) == s


@pytest.mark.parametrize("field", ["src", "dst", "lo", "deps"])
def test_int64_batch_is_checked_before_it_narrows(field):
    # 2**32 + 1 narrows to 1 in 32 bits, a valid rank, block and transfer:
    # read in place from int64 arrays, it must be rejected as what it is.
    s = wc.Schedule(3, [8] * 4, "allreduce")
    s._core.append_csr(
        np.array([0]),
        np.array([0], np.uint8),
        None,
        np.array([1]),
        None,
        np.array([0]),
        np.array([1]),
        None,
        np.array([[-1]]),
    )
    wide = 2**32 + 1
    arrays = {"src": [2], "dst": [0], "lo": [1], "deps": [[0]]}
    arrays[field] = [[wide]] if field == "deps" else [wide]
    with pytest.raises(wc.ScheduleError, match=str(wide)):
        s._core.append_csr(
            np.array(arrays["src"]),
            np.array([0], np.uint8),
            None,
            np.array(arrays["dst"]),
            None,
            np.array(arrays["lo"]),
            np.array([2]),
            None,
            np.array(arrays["deps"]),
        )
    assert len(s) == 1
