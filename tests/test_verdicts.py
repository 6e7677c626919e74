"""The verdict standard: every finding's judge, fed values on both sides of it.

Every registered experiment runs once in quick mode; each of its findings
carries its judge (as plain data) and our measured value(s). The judge is
rebuilt and given values just inside and just outside every edge of its
tolerance: the verdict must flip there. The identities that are no longer
findings are tested here instead.
"""

from __future__ import annotations

import math

import pytest

import wafercoll.experiments as wx
from wafercoll import wafer
from wafercoll.experiments import judges as jd


@pytest.fixture(scope="module")
def findings():
    out = []
    for exp in wx.experiments():
        _, fs = wx.split_result(exp.run(quick=True), exp.name)
        out += [(exp.name, f) for f in fs]
    return out


def test_every_finding_has_an_id_a_judge_and_a_stated_tolerance(findings):
    assert findings
    seen = set()
    for name, f in findings:
        key = f"{name}.{f['id']}"
        assert key not in seen, key
        seen.add(key)
        judge = jd.judge_from_dict(f["judge"])
        assert not isinstance(judge, jd.Identity), key
        assert f["tolerance"] == judge.tolerance and f["tolerance"], key
        assert f["verdict"] in wx.VERDICTS, key
        if f["verdict"] == "not reproducible":
            assert f["explanation"], key
        else:
            # The verdict is the judge's on our measured value.
            assert judge.verdict(f["measured"]) == f["verdict"], key


def test_every_judge_flips_at_its_tolerance(findings):
    kinds = set()
    for name, f in findings:
        judge = jd.judge_from_dict(f["judge"])
        kinds.add(judge.kind)
        if isinstance(judge, jd.Calibrated):
            assert f["verdict"] == "calibrated"
            assert judge.verdict(f["measured"]) != "reproduced"
            continue
        probes = judge.probes()
        assert any(ok for _, ok in probes), (name, f["id"])
        assert any(not ok for _, ok in probes), (name, f["id"])
        for value, ok in probes:
            want = "reproduced" if ok else "differs"
            assert judge.verdict(value) == want, (name, f["id"], value)
    # The run exercises most kinds of judge.
    assert {"value", "faster", "range", "up_to", "exact", "calibrated"} <= kinds


def test_no_comparative_judge_accepts_the_opposite_direction(findings):
    for name, f in findings:
        judge = jd.judge_from_dict(f["judge"])
        if isinstance(judge, jd.Faster):
            assert not judge.accepts(1.0) and not judge.accepts(0.99), f["id"]
        if isinstance(judge, jd.Range) and judge.ratio:
            b_lo, b_hi = judge.bands()
            for end, band in ((judge.lo, b_lo), (judge.hi, b_hi)):
                v = float(end)
                if v > 1:
                    assert 1.0 not in band and 0.999 not in band, (name, f["id"])
                if v < 1:
                    assert 1.0 not in band and 1.001 not in band, (name, f["id"])


# -- the judges themselves ---------------------------------------------------------
@pytest.mark.parametrize(
    "judge, inside, outside",
    [
        (jd.Value("1.6"), [1.55, 1.6, 1.6499], [1.5499, 1.65]),
        (jd.Value("8"), [7.5, 8.49], [7.49, 8.5, -8]),
        (jd.Faster("1.1"), [1.05, 1.14], [1.15, 1.04, 0.9, 1.0]),
        (jd.Faster("1.02", rel=0.05, why="w"), [1.0001, 1.07], [1.0, 0.97]),
        (jd.Faster(), [1.0001, 50], [1.0, 0.5]),
        (jd.UpTo("5.9"), [5.85, 5.94], [6.74, 5.0]),
        (jd.Range("0.99", "1.6"), [(0.99, 1.6), (0.985, 1.64)], [(0.81, 1.21)]),
        (jd.Range("0.99", "1.6"), [], [(1.0, 1.6), (0.99, 1.65), (1.6, 0.99)]),
        (jd.AtLeast(1.5), [1.5, 9], [1.49]),
        (jd.AtMost(0, strict=True), [-1], [0, 1]),
        (jd.Exact([1, 2]), [[1, 2], (1, 2)], [[2, 1], [1, 2, 3]]),
        (jd.Exact(None), [None], [0, 8000]),
    ],
)
def test_judge_inside_and_outside(judge, inside, outside):
    for v in inside:
        assert judge.accepts(v), (judge, v)
    for v in outside:
        assert not judge.accepts(v), (judge, v)
    assert jd.judge_from_dict(judge.to_dict()) == judge


def test_judges_refuse_unstated_tolerances():
    with pytest.raises(ValueError, match="printed text"):
        jd.Value(1.6)  # a float has no printed precision
    with pytest.raises(ValueError, match="needs why"):
        jd.Value("2", rel=0.1)
    with pytest.raises(ValueError, match="exceed 1"):
        jd.Faster("0.9")
    with pytest.raises(ValueError, match="reversed"):
        jd.Range("2", "1")
    with pytest.raises(ValueError, match="unknown judge"):
        jd.judge_from_dict({"kind": "close enough"})
    with pytest.raises(TypeError, match="identity"):
        jd.Identity("a minimum over a set").accepts(1)


def test_calibrated_is_never_reproduced():
    j = jd.Calibrated(params=1, points=1, held_out=4)
    assert j.verdict(0.0) == "calibrated" and "solved exactly" in j.tolerance
    assert "4 held-out" in j.tolerance


def test_nan_and_missing_values_are_not_reproduced():
    for j in (jd.Value("1"), jd.Faster(), jd.AtLeast(0), jd.UpTo("2")):
        assert not j.accepts(math.nan) and not j.accepts(None)
    assert not jd.Range("1", "2").accepts(None)


# -- identities: no longer findings, tested ------------------------------------------
@pytest.mark.parametrize("alg", ["star+bcast", "chain+bcast", "two_phase+bcast"])
def test_the_model_root_is_never_worse_than_pe_0(alg):
    for b in (1, 16, 256):
        _, t = wafer.best_root(alg, 64, b)
        assert t <= wafer.allreduce_time(alg, 64, b) * (1 + 1e-12)


def test_autogen_is_at_most_every_fixed_reduce_over_p():
    for p in (4, 16, 64):
        ag = wafer.reduce_time("autogen", p, 256)
        for a in ("chain", "tree", "two_phase"):
            assert ag <= wafer.reduce_time(a, p, 256) * (1 + 1e-12)
