"""The artifact's Ring-2D (``ring2dn``): walks, data split, flits, verification."""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.mcm.artifact_ring2d import bounce_walk, ring2dn_transfers

NAME = "mesh_ring_2d_artifact_allreduce"
SHAPES = [
    (2, 2),
    (2, 3),
    (3, 3),
    (3, 4),
    (4, 4),
    (5, 5),
    (4, 6),
    (6, 6),
    (8, 8),
    (1, 4),
]


def _build(m: int, n: int, size: int, **kw: object) -> wc.Schedule:
    return wc.build(NAME, topology=wc.topology.mesh(m, n), size_bytes=size, **kw)


def _driver(m: int, n: int, interfaces: int, lag: int) -> wc.Schedule:
    """1 MiB with the driver's messages, dependencies and ``interfaces``."""
    return _build(
        m,
        n,
        1 << 20,
        message_bytes=8192,
        dependencies="artifact",
        interfaces=interfaces,
        issue_lag_messages=lag,
    )


def test_registered_beside_the_papers_ring_2d() -> None:
    info = wc.algorithm_info(NAME)
    paper = wc.algorithm_info("mesh_ring_2d_allreduce")
    assert (info.family, info.algorithm, info.variant) == (
        "mesh",
        "ring_2d",
        "artifact",
    )
    assert info.label == "Ring-2D (artifact)" != paper.label
    assert info.artifact_names == ("ring2dn", "ring2dn")


@pytest.mark.parametrize("L", range(1, 10))
def test_bounce_walk_visits_the_line_in_2L_minus_3_hops(L: int) -> None:
    for c in range(L):
        w = bounce_walk(L, c)
        assert w[0] == c and set(w.tolist()) == set(range(L))
        assert np.all(np.abs(np.diff(w)) == 1)  # neighbour hops only
        hops = L - 1 if c == 0 else 2 * L - 3
        assert w.size - 1 == max(hops, 0)
        if c > 0:
            assert w[-1] == c - 1


@pytest.mark.parametrize(("m", "n"), SHAPES)
def test_a_verified_allreduce_that_runs_on_numpy(m: int, n: int) -> None:
    N = m * n
    s = _build(m, n, 8 * 2 * N + 8 * 3)  # uneven pieces on purpose
    assert wc.verify(s).ok
    x = np.random.default_rng(m * 100 + n).integers(-1000, 1000, (N, 37))
    out = wc.execute(s, x)
    assert np.array_equal(out, np.broadcast_to(x.sum(axis=0), out.shape))


@pytest.mark.parametrize(("m", "n"), [(4, 4), (5, 5), (3, 4)])
def test_transfer_counts_follow_the_walks(m: int, n: int) -> None:
    t = ring2dn_transfers(m, n)

    def hops(L: int) -> int:
        return (L - 1) + (L - 1) * (2 * L - 3)  # root 0, then the others

    per_phase = m * hops(n) + n * hops(m)  # every row and column chain
    for ph in range(4):
        assert int((t["phase"] == ph).sum()) == per_phase
    # every transfer goes to a mesh neighbour
    dr = np.abs(t["src"] // n - t["dst"] // n)
    dc = np.abs(t["src"] % n - t["dst"] % n)
    assert np.all(dr + dc == 1)


@pytest.mark.parametrize(
    ("N", "params", "flits"),
    [(16, 1048576, 391680)],  # HPCA_2024_final/bandwidth/ring2dn, link "flits"
)
def test_flits_equal_the_artifacts_link_flits(N: int, params: int, flits: int) -> None:
    D = int(round(N**0.5))
    s = _build(D, D, 4 * params, message_bytes=8192)
    t = ring2dn_transfers(D, D)
    sizes = np.asarray(s.block_bytes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    bytes_ = starts[t["hi"]] - starts[t["lo"]]
    messages = -(-bytes_ // 8192)
    assert 17 * int(messages.sum()) == flits  # 16 data flits + 1 head, one hop


def test_message_rounding_is_the_drivers() -> None:
    # 5x5, 1 MiB: base = ceil(2^20 / 8192 / 25) = 6 messages per unit; the
    # first phase carries ceil(6 x 5 / 2) = 15, the second ceil(6 / 2) = 3
    s = _build(5, 5, 1 << 20, message_bytes=8192)
    sizes = np.asarray(s.block_bytes)
    assert sizes.sum() == 25 * 6 * 8192
    assert -(-5 * sizes[0] // 8192) == 15 and -(-sizes[0] // 8192) == 3


def test_the_artifacts_own_dependencies_are_no_allreduce() -> None:
    # The driver clears a dependency by (flow, child), and both phases use the
    # same flows: the second phase does not wait for the data it forwards.
    s = _build(3, 3, 18 * 8, dependencies="artifact")
    with pytest.raises(wc.ScheduleError, match="race: .* write block 10 of rank 1"):
        wc.verify(s)
    x = np.zeros((9, 18), dtype=np.int64)
    for r in range(9):
        x[r] = 1 << r  # the bits of a sum name the ranks in it
    out = wc.execute(s, x, check=False)  # one order the dependencies allow
    assert out[0, 0] == 0b000111111  # rank 0 misses ranks 6, 7 and 8
    assert np.all(out != 0b111111111)


def test_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="dependencies"):
        _build(2, 2, 64, dependencies="lockstep")
    with pytest.raises(ValueError, match="size_bytes"):
        _build(3, 3, 10)
    with pytest.raises(ValueError, match="message_bytes"):
        _build(2, 2, 64, message_bytes=8191)


def _pair_bytes(s: wc.Schedule) -> dict[tuple[int, int], int]:
    out: dict[tuple[int, int], int] = {}
    b = np.asarray(s.transfer_bytes())
    for a, d, x in zip(np.asarray(s.src), np.asarray(s.dst), b, strict=True):
        out[int(a), int(d)] = out.get((int(a), int(d)), 0) + int(x)
    return out


@pytest.mark.parametrize(
    ("m", "n", "size"), [(3, 3, 3 << 20), (4, 4, 1 << 22), (5, 5, 1 << 20)]
)
def test_interfaces_move_the_same_bytes_in_more_transfers(
    m: int, n: int, size: int
) -> None:
    kw = {"message_bytes": 8192, "dependencies": "artifact"}
    plain = _build(m, n, size, **kw)
    split = _build(m, n, size, interfaces=4, issue_lag_messages=3, **kw)
    assert _pair_bytes(split) == _pair_bytes(plain)
    assert split.size_bytes == plain.size_bytes
    # every flow longer than 3 messages and a remainder is two transfers
    t = ring2dn_transfers(m, n)
    piece = int(np.asarray(plain.block_bytes)[0])
    fb = (t["hi"] - t["lo"]) * piece
    tail = 3 * 8192 + fb % 8192
    assert len(split) == len(plain) + int(np.count_nonzero(fb > tail))
    # a lag longer than every flow splits none
    whole = _build(m, n, size, interfaces=4, issue_lag_messages=1 << 20, **kw)
    assert len(whole) == len(plain)


@pytest.mark.parametrize(("m", "n"), [(3, 3), (3, 4), (4, 4)])
def test_one_interface_without_lag_sends_one_flow_at_a_time(m: int, n: int) -> None:
    top = wc.topology.mesh(m, n)
    s = _driver(m, n, 1, 0)
    r = wc.simulate(s, top, wc.mcm.ARTIFACT, transfers=True)
    src = np.asarray(s.src)
    for v in range(m * n):
        ids = np.flatnonzero(src == v)
        ids = ids[np.argsort(r.transfer_ready_s[ids], kind="stable")]
        start, end = r.transfer_ready_s[ids], r.transfer_finish_s[ids]
        assert np.all(start[1:] >= end[:-1] - 1e-15)
    # four interfaces let flows overlap, and end sooner
    four = _driver(m, n, 4, 0)
    assert wc.simulate(four, top, wc.mcm.ARTIFACT).time_s < r.time_s


def test_interfaces_need_the_drivers_dependencies_and_messages() -> None:
    with pytest.raises(ValueError, match="interfaces needs"):
        _build(3, 3, 1 << 20, message_bytes=8192, interfaces=4)
    with pytest.raises(ValueError, match="interfaces needs"):
        _build(3, 3, 1 << 20, dependencies="artifact", interfaces=4)
    with pytest.raises(ValueError, match="interfaces"):
        _build(3, 3, 1 << 20, message_bytes=8192, dependencies="artifact", interfaces=0)
    with pytest.raises(ValueError, match="issue_lag_messages"):
        _build(
            3,
            3,
            1 << 20,
            message_bytes=8192,
            dependencies="artifact",
            interfaces=4,
            issue_lag_messages=-1,
        )


@pytest.mark.parametrize(("m", "n"), [(3, 3), (4, 4), (3, 5)])
def test_interfaces_keep_each_chiplets_timestep_order(m: int, n: int) -> None:
    # a flow starts no earlier than the chiplet's flows of earlier timesteps
    top = wc.topology.mesh(m, n)
    s = _driver(m, n, 2, 1 << 20)
    t = ring2dn_transfers(m, n)
    assert len(s) == t["src"].size  # no flow is split
    ready = wc.simulate(s, top, wc.mcm.ARTIFACT, transfers=True).transfer_ready_s
    for v in range(m * n):
        ids = np.flatnonzero(t["src"] == v)
        for i in ids:
            earlier = ids[t["timestep"][ids] < t["timestep"][i]]
            assert np.all(ready[i] >= ready[earlier] - 1e-15)
