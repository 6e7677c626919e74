"""The compiled GOAL reader against the Python reference, and its own rules.

``read_goal`` parses and matches in the C++ core; ``goal_reference`` is the
reader as it was written in Python (with the rules the core states). On
random valid programs and on mutants of them, both must give equal
schedules (transfers, order, dependencies, blocks, labels) or the same error
(type, message, line, element).
"""

from __future__ import annotations

import numpy as np
import pytest
from goal_reference import read_goal_reference

import wafercoll as wc
from wafercoll.io import FormatError, read_goal


# --------------------------------------------------------------------------- #
# random programs
# --------------------------------------------------------------------------- #
def _label(rng: np.random.Generator, k: int) -> str:
    style = int(rng.integers(3))
    return (f"l{k}", f"op_{k}x", f"L{k}_{k % 3}")[style]


def _num(rng: np.random.Generator, v: int) -> str:
    """``v`` in decimal, sometimes with leading zeros."""
    if v >= 0 and rng.random() < 0.1:
        return "0" * int(rng.integers(1, 3)) + str(v)
    return str(v)


def random_program(rng: np.random.Generator) -> str:
    """A valid GOAL program: messages in a global order, requires backwards.

    Every edge (requires, message) goes from an earlier event of the global
    order to a later one, so the program has no cycle, and the k-th send of
    a (source, destination, tag) meets its k-th receive.
    """
    p = int(rng.integers(2, 7))
    ops: list[list[tuple[str, str]]] = [[] for _ in range(p)]  # (label, text)
    reqs: list[list[tuple[str, str, str]]] = [[] for _ in range(p)]

    def add(r: int, text: str) -> None:
        k = len(ops[r])
        label = _label(rng, k)
        ops[r].append((label, text))
        for _ in range(int(rng.integers(0, 3)) if k else 0):
            before = ops[r][int(rng.integers(k))][0]
            kind = "requires" if rng.random() < 0.8 else "irequires"
            reqs[r].append((label, kind, before))

    for _ in range(int(rng.integers(1, 4 * p))):
        src, dst = (int(x) for x in rng.choice(p, 2, replace=False))
        tag = int(rng.integers(3))
        size = int(rng.choice([0, 1, 8, 1024, 65536]))
        extra = " cpu 0 nic 1" if rng.random() < 0.1 else ""
        add(
            src,
            f"send {_num(rng, size)}b to {_num(rng, dst)} tag {_num(rng, tag)}{extra}",
        )
        add(dst, f"recv {size}b from {src} tag {tag}")
        if rng.random() < 0.3:
            add(int(rng.integers(p)), f"calc {int(rng.integers(0, 500))}")
    extra_ranks = int(rng.integers(0, 2))
    out = ["// random program", f"num_ranks {p + extra_ranks}"]
    for r in rng.permutation(p + extra_ranks).tolist():
        if r >= p or not ops[r]:
            if rng.random() < 0.5:
                out.append(f"rank {r} {{\n}}")
            continue
        lines = [f"{label}: {text}" for label, text in ops[r]]
        for a, kind, b in reqs[r]:
            # anywhere in the block, even before the labels it names
            at = int(rng.integers(len(lines) + 1)) if rng.random() < 0.5 else len(lines)
            lines.insert(at, f"{a} {kind} {b}")
        pad = " \t" if rng.random() < 0.2 else ""
        out.append(f"rank {r} {{")
        for line in lines:
            out.append(pad + line + (" // note" if rng.random() < 0.1 else ""))
            if rng.random() < 0.05:
                out.append("/* a comment\n   over two lines */")
        out.append("}")
    text = "\n".join(out) + "\n"
    return text.replace("\n", "\r\n") if rng.random() < 0.1 else text


# --------------------------------------------------------------------------- #
# mutants
# --------------------------------------------------------------------------- #
TOKENS = [
    "-1", "0", "-0", "007", "99999999999999999999", "18446744073709551616b",
    "9223372036854775808", "x", "{", "}", "rank", "requires", "irequires",
    "send", "recv", "calc", "to", "from", "tag", "cpu", "%", "\u0663", "l1:",
    "l1", "5bb", "/*", "*/", "//", "\x0b", "\u00e9", "num_ranks", "1048577",
]  # fmt: skip
CHARS = ["{", "}", "\n", "%", "\x0c", "/", "*", ":", "-", "b", "\u00e9", "\u3000"]


def mutate(rng: np.random.Generator, text: str) -> str:
    lines = text.split("\n")
    what = int(rng.integers(9))
    i = int(rng.integers(len(lines)))
    if what == 7:  # a requires edge in a rank's block, maybe closing a cycle
        opens = [k for k, ln in enumerate(lines) if ln.startswith("rank ")]
        k = opens[int(rng.integers(len(opens)))] if opens else 0
        labels = []
        for ln in lines[k + 1 :]:
            if ln.strip().startswith("}"):
                break
            if ": " in ln:
                labels.append(ln.split(":")[0].strip())
        if len(labels) > 1:
            a, b = (str(x) for x in rng.choice(labels, 2))  # a == b: a self-loop
            lines.insert(k + 1, f"{a} requires {b}")
    elif what == 0:
        del lines[i]
    elif what == 8:  # several operations gone: several keys unmatched
        for _ in range(3):
            del lines[int(rng.integers(len(lines)))]
    elif what == 1:
        lines.insert(i, lines[int(rng.integers(len(lines)))])
    elif what == 2:
        j = int(rng.integers(len(lines)))
        lines[i], lines[j] = lines[j], lines[i]
    elif what == 3:
        words = lines[i].split(" ")
        words[int(rng.integers(len(words)))] = str(rng.choice(TOKENS))
        lines[i] = " ".join(words)
    elif what == 4:
        pos = int(rng.integers(len(text) + 1))
        return text[:pos] + str(rng.choice(CHARS)) + text[pos:]
    elif what == 5:
        return text[: int(rng.integers(len(text) + 1))]
    else:
        words = lines[i].split(" ")
        words.insert(int(rng.integers(len(words) + 1)), str(rng.choice(TOKENS)))
        lines[i] = " ".join(words)
    return "\n".join(lines)


def outcome(read, source):
    """``("ok", schedule)`` or the error as (type, message, line, element)."""
    try:
        return ("ok", read(source))
    except (ValueError, TypeError, OSError) as exc:
        return (
            type(exc).__name__,
            str(exc),
            getattr(exc, "line", None),
            getattr(exc, "element", None),
        )


def assert_same(source) -> tuple:
    got = outcome(read_goal, source)
    want = outcome(read_goal_reference, source)
    assert got[0] == want[0], (got, want)
    if got[0] == "ok":
        a, b = got[1], want[1]
        assert a == b  # transfers, blocks, deps, name, labels, reason
        assert a.labels == b.labels and a.name == b.name
        for x, y in zip(a.dependencies(), b.dependencies(), strict=True):
            assert np.array_equal(x, y)
    else:
        assert got == want
    return got


def test_random_programs_read_as_the_reference_reads_them(rng, tmp_path):
    for k in range(150):
        text = random_program(rng)
        assert assert_same(text)[0] == "ok", text
        if k % 5 == 0:  # one label at a time (made from the arrays), then all
            s, want = read_goal(text), read_goal_reference(text).labels
            n = s.num_transfers
            assert [s.transfer_label(t) for t in range(n)] == want
            assert s.transfer_label(-1) is None and s.transfer_label(n) is None
            assert s.labels == want and s.transfer_label(n - 1) == want[-1]
        if k % 10 == 0:  # from a file too, UTF-8 and UTF-16
            f = tmp_path / f"p{k}.goal"
            f.write_text(text, encoding="utf-16" if k % 20 else "utf-8", newline="")
            assert assert_same(f)[0] == "ok"


def test_mutants_fail_or_read_as_the_reference_says(rng, tmp_path):
    kinds: set[str] = set()
    for k in range(600):
        text = random_program(rng)
        for _ in range(int(rng.integers(1, 3))):
            text = mutate(rng, text)
        got = assert_same(text)
        kinds.add(got[1].split(": ", 1)[-1][:12] if got[0] != "ok" else "ok")
        if k % 25 == 0:
            f = tmp_path / f"m{k}.goal"
            f.write_text(text, encoding="utf-8", newline="")
            assert_same(f)
    # the mutants reach many different errors, not one over and over
    assert len(kinds) >= 15, kinds


def _one_block(msg, seen: list) -> tuple[list[int], str]:
    seen.append(msg)
    return [0], "copy"


def test_mapped_messages_are_the_references(rng):
    for _ in range(20):
        text = random_program(rng)
        core: list = []
        reference: list = []
        kw = {"block_bytes": [8], "collective": "broadcast"}
        a = read_goal(text, messages=lambda m, out=core: _one_block(m, out), **kw)
        b = read_goal_reference(
            text, messages=lambda m, out=reference: _one_block(m, out), **kw
        )
        assert a == b
        assert core == reference and core


def test_simulated_times_equal_the_references(rng):
    for _ in range(5):
        text = random_program(rng)
        a, b = read_goal(text), read_goal_reference(text)
        topo = wc.topology.star(a.num_ranks)
        net = wc.NetworkModel.loggp(3e-6, 1.5e-6, 1e-6, 1e-9)
        ra, rb = wc.simulate(a, topo, net), wc.simulate(b, topo, net)
        assert ra.time_s == rb.time_s
        assert np.array_equal(ra.rank_finish_s, rb.rank_finish_s)


# --------------------------------------------------------------------------- #
# the reader's own rules
# --------------------------------------------------------------------------- #
RING3 = """num_ranks 3
rank 0 {
a: send 8b to 1 tag 0
b: recv 8b from 2 tag 0
b requires a
}
rank 1 {
a: recv 8b from 0 tag 0
b: send 8b to 2 tag 0
b requires a
}
rank 2 {
a: recv 8b from 1 tag 0
b: send 8b to 0 tag 0
b requires a
}
"""


def test_a_ring_reads_as_three_chained_transfers():
    s = read_goal(RING3)
    # 0->1 first; 1->2 after it arrived at 1; 2->0 after 1->2 arrived at 2
    assert s.src.tolist() == [0, 1, 2] and s.dst.tolist() == [1, 2, 0]
    deps, dep_off = s.dependencies()
    assert [deps[dep_off[t] : dep_off[t + 1]].tolist() for t in range(3)] == [
        [],
        [0],
        [1],
    ]
    assert s.labels == [
        "rank 0 a -> rank 1 a (tag 0)",
        "rank 1 b -> rank 2 a (tag 0)",
        "rank 2 b -> rank 0 b (tag 0)",
    ]


def test_rank_blocks_in_any_order_read_alike():
    blocks = RING3.split("}\n")[:-1]
    head, first = blocks[0].split("\n", 1)
    shuffled = head + "\n" + "}\n".join([blocks[2], blocks[1], first]) + "}\n"
    assert read_goal(shuffled) == read_goal(RING3)


@pytest.mark.parametrize("codec", ["utf-8-sig", "utf-16-le", "utf-16-be"])
def test_byte_order_marks(tmp_path, codec):
    f = tmp_path / "r.goal"
    bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(codec, b"")
    f.write_bytes(bom + RING3.encode(codec))
    assert (
        read_goal(f) == read_goal(RING3).__class__.from_json(read_goal(RING3).to_json())
        or read_goal(f).labels == read_goal(RING3).labels
    )
    assert read_goal(f).labels == read_goal(RING3).labels


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"num_ranks 2\n\xc0\xaf\n", r"line 2: not UTF-8 text \(byte 12"),
        (b"\xff\xfen\x00u\x00m", r"not UTF-16 text"),
        (b"\xfe\xff\xdc\x00", r"not UTF-16 text"),
        (b"num_ranks 2\n\xed\xa0\x80\n", r"line 2: not UTF-8 text"),
    ],
)
def test_encoding_errors_name_the_byte(tmp_path, data, match):
    f = tmp_path / "bad.goal"
    f.write_bytes(data)
    with pytest.raises(FormatError, match=match):
        read_goal(f)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        # numbers are ASCII digits, as in LogGOPSim's grammar
        ("num_ranks \u0663\n", r"line 1: unexpected text '\u0663'"),
        ("num_ranks 2 \u00e9t\u00e9 x\n", r"unexpected text '\u00e9t\u00e9'"),
        ("num_ranks 2\n\x0b", r"line 2: unexpected text '\\x0b'"),
        ("num_ranks 2\x0b\n}", r"line 1: unexpected text '}'"),
        (
            "num_ranks 0099999999999999999999999\n",
            r"num_ranks must be in \[1, 1048576\], got 99999999999999999999999$",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send 9223372036854775808b to 1 tag 0\n}\n",
            r"line 3, <send>: size must fit in 64 bits, got 9223372036854775808",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send 1b to 1 tag -9223372036854775809\n}\n",
            r"<send>: tag must fit in 64 bits, got -9223372036854775809",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1: send -007b to 1 tag 0\n}\n",
            r"size must be >= 0, got -7",
        ),
        (
            "num_ranks 2\nrank 0 {\nl1 requires l2\nl2: calc 5 %\n}\n",
            r"unexpected text '%'",  # the tokenizer first, everywhere
        ),
        (
            "num_ranks 3\nrank 1 {\na requires b\n}\nrank 0 {\nc requires d\n}\n",
            r"line 6, <requires>: rank 0: label 'c' is not defined",
        ),
        (
            "num_ranks /*\n*/ x\n",
            r"line 2, <statement>: num_ranks must be an integer, got 'x'",
        ),
        (
            "num_ranks 3\nrank 0 {\na: send 1b to 1 tag 0\nb: send 1b to 2 tag 0\n}\n",
            r"line 3, <send>: rank 0 a \(send\) has no match",  # first key first
        ),
    ],
)
def test_errors_name_line_and_element(text, match):
    with pytest.raises(FormatError, match=match):
        read_goal(text)
    assert_same(text)


def test_bytes_are_not_goal_text():
    with pytest.raises(TypeError, match="GOAL text"):
        read_goal(RING3.encode())


def test_the_size_limit_of_the_schedule_is_kept():
    text = "num_ranks 2\nrank 0 {\na: send 4611686018427387904b to 1 tag 0\n}\n"
    text += "rank 1 {\na: recv 4611686018427387904b from 0 tag 0\n}\n"
    with pytest.raises(ValueError, match=r"block_bytes\[0\] must be <= "):
        read_goal(text)
    assert_same(text)
