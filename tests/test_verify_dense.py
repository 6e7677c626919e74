"""The verifier's dense cell state: the same outcome whatever the representation.

A rank whose cells fall into many runs of one state is kept as one piece per
block (``dense_after`` runs, an internal knob of ``_core.verify``). The
outcome, report or error, must not depend on it: each schedule and each of
its defects is verified with the state never dense, always dense and with
the default threshold, and the three answers must be equal; and again with
the cells split by blocks between two threads (``split``, another internal
knob), which must give the same verdict and error.
"""

from __future__ import annotations

import numpy as np
import pytest

import wafercoll as wc
from wafercoll import _core

NEVER, ALWAYS = 1 << 62, 0


def _answer(s: wc.Schedule, dense_after: int, split: str = "never") -> tuple[str, str]:
    try:
        rep = _core.verify(s._core, dense_after, split)
    except Exception as exc:  # the error kind and message are the answer
        return (type(exc).__name__, str(exc))
    if split != "never":  # work measures count each window's work
        rep = {k: rep[k] for k in ("transfers", "steps")}
    return ("ok", repr(sorted(rep.items())))


def _answer_counts(rep: dict) -> tuple[str, str]:
    """The answer of a split verification for a one-walk report ``rep``."""
    return ("ok", repr(sorted({k: rep[k] for k in ("transfers", "steps")}.items())))


def _mutants(s: wc.Schedule, rng: np.random.Generator, count: int) -> list[wc.Schedule]:
    doc = s.to_dict()
    out = []
    n = len(doc["transfers"])
    for k in range(count):
        d = s.to_dict()
        t = d["transfers"][int(rng.integers(n))]
        kind = k % 4
        if kind == 0 and t["deps"]:
            t["deps"] = t["deps"][1:]  # a missing dependency: a race
        elif kind == 1:
            t["op"] = "copy" if t["op"] == "reduce" else "reduce"
        elif kind == 2:
            t["blocks"] = [int(rng.integers(len(d["block_bytes"])))]
        else:
            t["dst"] = [(t["dst"][0] + 1) % d["ranks"]]
            if t["dst"][0] == t["src"]:
                t["dst"] = [(t["src"] + 1) % d["ranks"]]
        out.append(wc.Schedule.from_dict(d))
    return out


@pytest.mark.parametrize(
    ("name", "p"),
    [
        ("generic_ring_allreduce", 61),
        ("generic_ring_allreduce", 100),
        ("generic_rabenseifner_allreduce", 96),
        ("generic_recursive_doubling_allreduce", 70),
        # windows of at most 8 blocks start dense (one block; blocks with
        # owners, whose runs are filled before)
        ("generic_recursive_doubling_allreduce", 9),
        ("generic_ring_allgather", 7),
    ],
)
def test_dense_state_does_not_change_the_outcome(name: str, p: int) -> None:
    s = wc.build(name, p, p * 8)
    rng = np.random.default_rng(p)
    answers = []
    for m in [s, *_mutants(s, rng, 24)]:
        a = [_answer(m, x) for x in (NEVER, ALWAYS, 48)]
        assert a[0] == a[1] == a[2]
        # Split by blocks between two threads: the same verdict and error.
        split = [_answer(m, x, "always") for x in (NEVER, 48)]
        if a[0][0] == "ok":
            one = _core.verify(m._core, 48, "never")
            assert split[0] == split[1] == _answer_counts(one)
        else:
            assert split[0] == split[1] == a[0]
        answers.append(a[0][0])
    assert answers[0] == "ok"
    assert any(x != "ok" for x in answers[1:])  # the defects were caught


def test_split_by_blocks_is_reported_and_checked() -> None:
    s = wc.build("generic_ring_allreduce", 12, 12 * 8)
    assert _core.verify(s._core, 48, "always")["windows"] == 2
    assert _core.verify(s._core, 48, "never")["windows"] == 1
    assert wc.verify(s).windows == 1  # small: one walk
    with pytest.raises(ValueError, match="split must be"):
        _core.verify(s._core, 48, "sometimes")
