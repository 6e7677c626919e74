"""Chakra ET and GOAL output decoded by independent readers, GOAL input,
the LogGP preset and Chrome traces."""

from __future__ import annotations

import json
import re
import struct
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

import wafercoll as wc
from wafercoll.io import FormatError, read_goal, write_chakra, write_goal

pytest.importorskip("google.protobuf")


# --------------------------------------------------------------------------- #
# a protobuf wire-format decoder (no protobuf package involved)
# --------------------------------------------------------------------------- #
def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = out = 0
    while True:
        b = buf[i]
        i += 1
        out |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return out, i


def _fields(buf: bytes) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) of a message."""
    out, i = [], 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            v, i = buf[i : i + n], i + n
        elif wt == 1:
            v, i = struct.unpack("<d", buf[i : i + 8])[0], i + 8
        elif wt == 5:
            v, i = buf[i : i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wt}")
        out.append((num, wt, v))
    return out


def _records(data: bytes) -> list[bytes]:
    recs, i = [], 0
    while i < len(data):
        n, i = _varint(data, i)
        recs.append(data[i : i + n])
        i += n
    assert i == len(data)
    return recs


def _attr(buf: bytes) -> tuple[str, object]:
    f = _fields(buf)
    name = next(v for n, _, v in f if n == 1).decode()
    vals = {n: v for n, _, v in f if n != 1}
    assert len(vals) == 1, vals
    ((num, v),) = vals.items()
    if num == 29:
        v = v.decode()
    return name, (num, v)


def decode_node(buf: bytes) -> dict:
    node = {"id": 0, "type": 0, "data_deps": [], "attr": {}}  # proto3 defaults
    for num, wt, v in _fields(buf):
        if num == 1:
            node["id"] = v
        elif num == 2:
            node["name"] = v.decode()
        elif num == 3:
            node["type"] = v
        elif num == 5:
            if wt == 2:  # packed
                j = 0
                while j < len(v):
                    d, j = _varint(v, j)
                    node["data_deps"].append(d)
            else:
                node["data_deps"].append(v)
        elif num == 10:
            k, val = _attr(v)
            node["attr"][k] = val
    return node


def _signed32(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


@pytest.mark.parametrize(
    ("name", "p"),
    [
        ("generic_ring_allreduce", 5),
        ("generic_binomial_broadcast", 7),
        ("generic_rabenseifner_allreduce", 6),
        ("torus_swing_bo_allreduce", 8),
    ],
)
def test_chakra_matches_the_schedule_transfer_for_transfer(tmp_path, name, p):
    s = wc.build(name, p, 720720)
    files = write_chakra(s, tmp_path / "et")
    assert [f.rsplit("/", 1)[1] for f in files] == [f"et.{r}.et" for r in range(p)]
    sends, recvs, comps = [], [], Counter()
    for r, f in enumerate(files):
        recs = _records(Path(f).read_bytes())
        meta = _fields(recs[0])
        assert next(v for n, _, v in meta if n == 1) == b"0.0.4"
        nodes = [decode_node(b) for b in recs[1:]]
        assert [n["id"] for n in nodes] == list(range(len(nodes)))
        for n in nodes:
            assert all(d < n["id"] for d in n["data_deps"])  # a DAG in file order
            a = n["attr"]
            assert a["is_cpu_op"] == (27, 0)
            if n["type"] in (5, 6):
                src, dst = _signed32(a["comm_src"][1]), _signed32(a["comm_dst"][1])
                tag, size = a["comm_tag"][1], a["comm_size"][1]
                assert a["comm_src"][0] == 7 and a["comm_size"][0] == 9
                (sends if n["type"] == 5 else recvs).append((src, dst, tag, size))
                assert r == (src if n["type"] == 5 else dst)
            else:
                assert n["type"] == 4 and a["tensor_size"][0] == 13
                comps[r] += 1
    want = []
    nbytes = s.transfer_bytes()
    for t in range(s.num_transfers):
        for d in s.transfer(t)["dst"]:
            want.append((s.transfer(t)["src"], d, t, int(nbytes[t])))
    assert sorted(sends) == sorted(want)
    assert sorted(recvs) == sorted(want)
    red = Counter()
    for t in range(s.num_transfers):
        if s.transfer(t)["op"] == "reduce":
            for d in s.transfer(t)["dst"]:
                red[d] += 1
    assert comps == red


def test_chakra_dependencies_follow_each_rank_order(tmp_path):
    # Ring allreduce: at every rank, the k-th send waits for the (k-1)-th
    # receive's completion (reduce in the first half).
    s = wc.build("generic_ring_allreduce", 4, 4096)
    files = write_chakra(s, tmp_path / "ring")
    nodes = [decode_node(b) for b in _records(Path(files[0]).read_bytes())[1:]]
    sends = [n for n in nodes if n["type"] == 5]
    assert not sends[0]["data_deps"]
    assert all(n["data_deps"] for n in sends[1:])


def test_chakra_bad_prefix(tmp_path):
    s = wc.build("generic_ring_allreduce", 2, 64)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_chakra(s, tmp_path / "missing" / "x")


# --------------------------------------------------------------------------- #
# GOAL
# --------------------------------------------------------------------------- #
def parse_goal(text: str) -> dict:
    """A GOAL reader for the tests (line based, LogGOPSim's grammar)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    ranks: dict[int, dict] = {}
    cur = None
    for raw in text.splitlines():
        line = raw.split("//")[0].strip()
        if not line:
            continue
        if m := re.fullmatch(r"num_ranks (\d+)", line):
            n = int(m[1])
        elif m := re.fullmatch(r"rank (\d+) \{", line):
            cur = ranks.setdefault(int(m[1]), {"ops": {}, "req": []})
        elif line == "}":
            cur = None
        elif m := re.fullmatch(
            r"(\w+): (send|recv) (\d+)b (?:to|from) (\d+) tag (\d+)", line
        ):
            cur["ops"][m[1]] = (m[2], int(m[3]), int(m[4]), int(m[5]))
        elif m := re.fullmatch(r"(\w+): calc (\d+)", line):
            cur["ops"][m[1]] = ("calc", int(m[2]))
        elif m := re.fullmatch(r"(\w+) requires (\w+)", line):
            cur["req"].append((m[1], m[2]))
        else:
            raise AssertionError(line)
    return {"n": n, "ranks": ranks}


@pytest.mark.parametrize(
    ("name", "p"),
    [
        ("generic_ring_allreduce", 5),
        ("generic_binomial_reduce", 9),
        ("generic_recursive_doubling_allreduce", 6),
    ],
)
def test_goal_matches_the_schedule_and_reads_back(tmp_path, name, p):
    s = wc.build(name, p, 720720)
    f = tmp_path / "s.goal"
    write_goal(s, f, reduce_ns_per_byte=0.5)
    g = parse_goal(f.read_text())
    assert g["n"] == p and sorted(g["ranks"]) == list(range(p))
    sends, recvs, calcs = [], [], 0
    for r, blk in g["ranks"].items():
        for op in blk["ops"].values():
            if op[0] == "send":
                sends.append((r, op[2], op[3], op[1]))
            elif op[0] == "recv":
                recvs.append((op[2], r, op[3], op[1]))
            else:
                calcs += 1
        for a, b in blk["req"]:
            assert a in blk["ops"] and b in blk["ops"]
    nbytes = s.transfer_bytes()
    want = sorted(
        (s.transfer(t)["src"], d, t, int(nbytes[t]))
        for t in range(s.num_transfers)
        for d in s.transfer(t)["dst"]
    )
    assert sorted(sends) == want and sorted(recvs) == want
    assert calcs == sum(
        len(s.transfer(t)["dst"])
        for t in range(s.num_transfers)
        if s.transfer(t)["op"] == "reduce"
    )
    # Read back: same messages, same simulated time on a star under LogGP.
    back = read_goal(f)
    assert back.num_transfers == len(want)
    topo = wc.topology.star(p)
    net = wc.NetworkModel.loggp(3e-6, 1.5e-6, 1e-6, 1e-9)
    assert wc.simulate(back, topo, net).time_s == pytest.approx(
        wc.simulate(s, topo, net).time_s, rel=1e-12
    )
    with pytest.raises(
        wc.ScheduleError, match="carries message sizes, not data"
    ) as info:
        wc.verify(back)
    assert info.value.kind == "unverifiable"
    with pytest.raises(wc.ScheduleError, match="not data"):
        wc.execute(back, np.zeros((p, 4)))


SCHEDGEN = """\
/* binomial broadcast of 1 KiB from rank 0, written the way schedgen writes */
num_ranks 4

rank 0 {
l1: send 1024b to 2 tag 0
l2: send 1024b to 1 tag 0
l2 requires l1
}

rank 1 {
l1: recv 1024b from 0 tag 0
}

rank 2 {
l1: recv 1024b from 0 tag 0
l2: send 1024b to 3 tag 0
l3: calc 100 // a local step
l2 requires l1
l3 requires l2
}

rank 3 {
l1: recv 1024b from 2 tag 0
}
"""


def test_schedgen_style_goal_imports_and_simulates():
    s = read_goal(SCHEDGEN)
    assert s.num_transfers == 3  # the file's three send/recv pairs
    assert sorted(s.transfer_bytes().tolist()) == [1024] * 3
    assert s.transfer_label(2).startswith("rank ")
    # 2->3 waits for 0->2: two message times on the critical path under
    # LogGP on a star, plus at most one transmission if 0->1 (which only
    # waits for the send of 0->2 to start) takes rank 0's uplink first.
    L, o, G = 2e-6, 1e-6, 1e-9
    r = wc.simulate(s, wc.topology.star(4), wc.NetworkModel.loggp(L, o, 0.0, G))
    one = 2 * o + L + 1024 * G
    assert 2 * one * (1 - 1e-12) <= r.time_s <= (2 * one + 1024 * G) * (1 + 1e-12)


def test_goal_with_a_message_map_is_verified():
    def blocks(msg):
        return [0], "copy"

    s = read_goal(SCHEDGEN, messages=blocks, block_bytes=[1024], collective="broadcast")
    assert wc.verify(s).steps == 2


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            "rank 0 {\n}\n",
            r"line 1, <num_ranks>: a GOAL file starts with 'num_ranks N'",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n}\nrank 1 {\nl1: recv 8b from 0 tag 1\n}\n",
            r"line 3, <send>: rank 0 l1 \(send\) has no match",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: sned 8b to 1 tag 0\n}\n",
            r"line 3, <statement>: unknown operation 'sned'",
        ),
        ("num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\n", r"missing '}'"),
        (
            "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\nl1 requires l9\n}\n",
            r"line 4, <requires>: rank 0: label 'l9'",
        ),
        ("num_ranks 2\nrank 0 {\nl1: recv 8b from -1 tag 0\n}\n", r"any-source"),
        ("num_ranks 2\nrank 0 {\nl1: send 8b to 5 tag 0\n}\n", r"peer 5"),
        (
            "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0\nl2: recv 8b from 1 tag 0\nl1 requires l2\n}\nrank 1 {\nl1: send 8b to 0 tag 0\nl2: recv 8b from 0 tag 0\nl1 requires l2\n}\n",
            r"deadlock",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send 8b to 1 tag 0 %\n}\n",
            r"line 3.*unexpected text '%'",
        ),
    ],
)
def test_malformed_goal_names_file_statement_and_line(tmp_path, text, match):
    f = tmp_path / "bad.goal"
    f.write_text(text)
    with pytest.raises(FormatError, match=match) as info:
        read_goal(f)
    assert str(f) in str(info.value)


def test_loggp_preset_matches_the_loggp_message_cost():
    L, o, g, G = 5e-6, 2e-6, 1e-6, 2e-9
    net = wc.NetworkModel.loggp(L, o, g, G)
    s = wc.Schedule(3, [4000], "broadcast")
    s.add_transfer(0, 2, [0])
    r = wc.simulate(s, wc.topology.star(3), net)
    # LogGOPSim: 2o + L + (s-1)G; the preset charges s G (one G more).
    assert r.time_s == pytest.approx(2 * o + L + (4000 - 1) * G + G, rel=1e-12)
    with pytest.raises(ValueError, match="G_s_per_byte"):
        wc.NetworkModel.loggp(L, o, g, 0.0)


# --------------------------------------------------------------------------- #
# Chrome traces
# --------------------------------------------------------------------------- #
def test_chrome_trace_has_an_event_per_transfer_and_busy_interval(tmp_path):
    s = wc.build("generic_ring_allreduce", 5, 5 * 4096)
    net = wc.NetworkModel(1e9, hop_latency_s=1e-7, packet_bytes=1024)
    r = wc.simulate(s, wc.ring(5), net, transfers=True, trace=True)
    f = tmp_path / "t.json"
    r.to_chrome_trace(f)
    doc = json.loads(f.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    for e in xs:
        assert {"ph", "ts", "dur", "pid", "tid", "name"} <= e.keys()
        assert e["dur"] >= 0
    tr = [e for e in xs if e["cat"] == "transfer"]
    assert sorted(e["args"]["transfer"] for e in tr) == list(range(s.num_transfers))
    for e in tr:
        t = e["args"]["transfer"]
        assert e["tid"] == s.transfer(t)["src"]
        assert e["ts"] == pytest.approx(r.transfer_ready_s[t] * 1e6)
        assert "step" in e["name"] and "blocks" in e["name"] and " B)" in e["name"]
    # Busy intervals: merge the packet services per link independently.
    svc = r.trace()
    on = svc["kind"] == 0
    want = 0
    per = defaultdict(list)
    for lk, a, b in zip(
        svc["link"][on], svc["start_s"][on], svc["finish_s"][on], strict=True
    ):
        per[int(lk)].append((a, b))
    busy = {}
    for lk, iv in per.items():
        iv.sort()
        merged = [list(iv[0])]
        for a, b in iv[1:]:
            if a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        want += len(merged)
        busy[lk] = sum(b - a for a, b in merged)
    links = [e for e in xs if e["cat"] == "link"]
    assert len(links) == want
    for lk, total in busy.items():
        got = sum(e["dur"] for e in links if e["tid"] == lk) / 1e6
        assert got == pytest.approx(total, rel=1e-9)
        assert got == pytest.approx(r.link_busy_s[lk], rel=1e-9)


def test_chrome_trace_needs_the_recordings():
    s = wc.build("generic_ring_allreduce", 3, 3 * 64)
    r = wc.simulate(s, wc.ring(3), wc.NetworkModel(1e9))
    with pytest.raises(ValueError, match="transfers=True, trace=True"):
        r.chrome_trace()


# --------------------------------------------------------------------------- #
# Chakra input
# --------------------------------------------------------------------------- #
def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


@pytest.mark.parametrize(
    ("name", "p"), [("generic_ring_allreduce", 5), ("torus_swing_bo_allreduce", 8)]
)
def test_chakra_reads_back_with_the_same_messages_and_time(tmp_path, name, p):
    s = wc.build(name, p, 720720)
    write_chakra(s, tmp_path / "x")
    back = wc.io.read_chakra(tmp_path / "x")
    assert back.num_ranks == p
    want = sorted(
        (s.transfer(t)["src"], d, int(s.transfer_bytes()[t]))
        for t in range(s.num_transfers)
        for d in s.transfer(t)["dst"]
    )
    got = sorted(
        (
            back.transfer(t)["src"],
            back.transfer(t)["dst"][0],
            int(back.transfer_bytes()[t]),
        )
        for t in range(back.num_transfers)
    )
    assert got == want
    net = wc.NetworkModel.loggp(3e-6, 1e-6, 0.0, 1e-9)
    assert wc.simulate(back, wc.topology.star(p), net).time_s == pytest.approx(
        wc.simulate(s, wc.topology.star(p), net).time_s, rel=1e-12
    )
    with pytest.raises(wc.ScheduleError, match="read_chakra"):
        wc.verify(back)


def test_malformed_chakra_names_file_and_record(tmp_path):
    s = wc.build("generic_ring_allreduce", 3, 3 * 64)
    files = write_chakra(s, tmp_path / "x")
    data = Path(files[1]).read_bytes()
    Path(files[1]).write_bytes(data[:-3])
    with pytest.raises(FormatError, match=r"x\.1\.et, record \d+: .*truncated"):
        wc.io.read_chakra(tmp_path / "x")
    recs = _records(data)
    bad = b"\x0a\xff\x01"  # field 1 claims 255 bytes
    Path(files[1]).write_bytes(
        b"".join(_varint_bytes(len(r)) + r for r in recs[:2])
        + _varint_bytes(len(bad))
        + bad
    )
    with pytest.raises(FormatError, match=r"x\.1\.et, record 2: not a Chakra Node"):
        wc.io.read_chakra(tmp_path / "x")
    with pytest.raises(FileNotFoundError, match="no Chakra traces"):
        wc.io.read_chakra(tmp_path / "nothing")


def test_goal_that_is_not_utf8_names_the_file(tmp_path):
    import wafercoll as wc
    from wafercoll.io import FormatError

    s = wc.build("generic_ring_allreduce", 4, 64)
    f = tmp_path / "ring.goal"
    wc.io.write_goal(s, f)
    text = f.read_text()
    f.write_bytes(b"// r\xe9seau\n" + text.encode())
    with pytest.raises(FormatError, match=r"ring.goal, line 1: not UTF-8 text"):
        wc.io.read_goal(f)
    # UTF-16 with a byte-order mark is read as such.
    f.write_bytes(text.encode("utf-16"))
    assert wc.io.read_goal(f).num_transfers == s.num_transfers


# --------------------------------------------------------------------------- #
# imported message programs state no collective: bounded by their own messages
# --------------------------------------------------------------------------- #
def test_goal_import_is_an_unknown_collective_bounded_by_its_messages(tmp_path):
    # The reproducer: a GOAL ring allreduce read back used to be
    # bounded as a broadcast of 112 blocks (7.34 ms against a run of 1.84 ms).
    p, S = 8, 1 << 20
    s = wc.build("generic_ring_allreduce", p, S)
    f = tmp_path / "a.goal"
    write_goal(s, f)
    back = read_goal(f)
    assert back.collective == "unknown" and back.num_transfers == 2 * (p - 1) * p
    topo, net = wc.ring(p), wc.NetworkModel(1e9)
    r = wc.simulate(back, topo, net)
    b = wc.bounds.result_bound(r)
    assert r.time_s >= b.time_s
    # Each rank receives 2 (p - 1) S / p bytes; any routing of these messages
    # can bring them in over both of its links: half the time of the one
    # link the ring uses, as for the built schedule against its collective.
    assert b.time_s == pytest.approx(2 * (p - 1) * S / p / 2e9, rel=1e-9)
    assert wc.bounds.optimality_ratio(r, b) == pytest.approx(2.0, rel=1e-9)
    assert r.time_s >= wc.bounds.schedule_lower_bound(back, topo, net).time_s


def test_goal_simulate_cli_reports_a_ratio_of_at_least_one(tmp_path, capsys):
    from wafercoll.cli import main

    f = str(tmp_path / "a.goal")
    argv = ["export", "generic_ring_allreduce", "-p", "8", "-s", "1MiB"]
    assert main([*argv, "-f", "goal", "-o", f]) == 0
    capsys.readouterr()
    assert (
        main(["simulate", "--schedule", f, "--topology", "ring:8", "--format", "json"])
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["time_s"] == pytest.approx(14 * (1 << 17) / 1e9, rel=1e-9)
    assert doc["optimality_ratio"] >= 1.0
    assert doc["lower_bound_s"] <= doc["time_s"]


def test_unknown_collective_verifies_nothing_and_executes_unchecked(tmp_path):
    back = read_goal(SCHEDGEN)
    assert back.collective == "unknown"
    with pytest.raises(wc.ScheduleError, match="not data") as info:
        wc.verify(back)
    assert info.value.kind == "unverifiable"
    with pytest.raises(wc.ScheduleError, match="not data"):
        wc.execute(back, np.ones((4, 3)))
    # Unchecked, the messages move data (a block per message, each rank
    # starting with its own input everywhere): no collective is claimed.
    x = np.arange(12.0).reshape(4, 3)
    out = wc.execute(back, x, check=False)
    assert out.shape == x.shape
    # The kind survives JSON and pickling; without the reader's note verify
    # still refuses, now because no collective is stated.
    again = wc.Schedule.from_json(back.to_json())
    assert again.collective == "unknown"
    with pytest.raises(wc.ScheduleError, match="states no collective") as info:
        wc.verify(again)
    assert info.value.kind == "unverifiable"
    import pickle

    assert pickle.loads(pickle.dumps(back)).collective == "unknown"
    # A cycle is still found: the dependencies are checkable.
    cyc = wc.Schedule.from_arrays(
        2,
        [8],
        "unknown",
        src=[0, 1],
        dst=[1, 0],
        block_lo=[0, 0],
        block_hi=[1, 1],
        deps=[1, 0],
        dep_offsets=[0, 1, 2],
    )
    with pytest.raises(wc.ScheduleError) as info:
        wc.verify(cyc)
    assert info.value.kind == "cycle"
    with pytest.raises(ValueError, match="participants"):
        wc.Schedule(2, [8], "unknown", participants=[0])


def test_chakra_import_quotes_the_collective_its_metadata_states(tmp_path):
    s = wc.build("generic_ring_allreduce", 3, 3 * 64)
    write_chakra(s, tmp_path / "x")
    back = wc.io.read_chakra(tmp_path / "x")
    assert back.collective == "unknown"
    with pytest.raises(wc.ScheduleError, match=r"it says: allreduce"):
        wc.verify(back)
    r = wc.simulate(back, wc.ring(3), wc.NetworkModel(1e9))
    assert wc.bounds.optimality_ratio(r) >= 1.0
