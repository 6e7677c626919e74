"""Property tests of the public entry points with generated, often absurd, input.

Every outcome is a correct result or a clean ``ValueError`` / ``TypeError`` /
``ScheduleError`` (never another exception, a crash or a hang). Under
``CI=true`` the ``ci`` profile runs more examples (over 2,000 in all).
"""

from __future__ import annotations

import copy
import json
import math
import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import wafercoll as wc  # noqa: E402

settings.register_profile(
    "ci", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")

CLEAN = (ValueError, TypeError, wc.ScheduleError)
# Builders that need no topology (the others are exercised with one below).
PLAIN = [
    a.name
    for a in wc.algorithms()
    if "any" in a.families or "line" in a.families or "ring" in a.families
]

ints = st.one_of(
    st.integers(-3, 70),
    st.sampled_from([0, 1, 2**31, 2**62, 2**63, 2**70, -(2**63)]),
)
weird = st.one_of(
    ints,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.none(),
    st.booleans(),
    st.lists(st.integers(0, 3), max_size=3),
)


def _reference(s: wc.Schedule, x: np.ndarray) -> np.ndarray | None:
    """The collective's result computed here (for allreduce and reduce)."""
    if s.collective == "allreduce":
        return np.broadcast_to(x[s.participants].sum(0), x.shape)
    return None


@given(
    name=st.sampled_from(PLAIN),
    ranks=ints,
    size=st.one_of(ints, st.integers(0, 1 << 20)),
)
def test_build_gives_a_correct_schedule_or_a_clean_error(name, ranks, size):
    if isinstance(ranks, int) and ranks > 64:
        ranks = ranks if ranks >= 2**31 else 64  # keep real builds small
    try:
        s = wc.build(name, ranks, size)
    except CLEAN:
        return
    wc.verify(s)
    x = np.random.default_rng(0).integers(-9, 9, size=(s.num_ranks, 8)).astype(float)
    out = wc.execute(s, x, check=False)
    want = _reference(s, x)
    if want is not None:
        rows = np.flatnonzero(s.participants)
        np.testing.assert_allclose(out[rows], want[rows])


@given(
    name=st.sampled_from(PLAIN),
    key=st.sampled_from(
        ["ranks", "size_bytes", "root", "wavelets_per_block", "T_R", "dims", "bogus"]
    ),
    value=weird,
)
def test_build_options_of_any_type(name, key, value):
    kwargs = {"ranks": 6, "size_bytes": 6 * 64}
    kwargs[key] = value
    try:
        s = wc.build(name, **kwargs)
    except CLEAN:
        return
    wc.verify(s)


BASE = wc.build("generic_rabenseifner_allreduce", 6, 6 * 64).to_dict()
json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-5, 2**64),
        st.floats(allow_nan=False),
        st.text(max_size=4),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=4), inner, max_size=3),
    ),
    max_leaves=6,
)


@given(
    path=st.lists(st.integers(0, 40), min_size=1, max_size=4),
    value=json_values,
    delete=st.booleans(),
)
def test_mutated_schedule_json_is_rejected_or_still_correct(path, value, delete):
    doc = copy.deepcopy(BASE)
    node = doc
    for step in path[:-1]:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        k = keys[step % len(keys)]
        if not isinstance(node[k], (dict, list)):
            break
        node = node[k]
    keys = list(node) if isinstance(node, dict) else list(range(len(node)))
    if keys:
        k = keys[path[-1] % len(keys)]
        if delete:
            del node[k]
        else:
            node[k] = value
    try:
        s = wc.Schedule.from_json(json.dumps(doc))
        wc.verify(s)
    except CLEAN:
        return
    x = np.random.default_rng(1).integers(-9, 9, size=(s.num_ranks, 12)).astype(float)
    want = _reference(s, x)
    if want is not None:
        out = wc.execute(s, x, check=False)
        rows = np.flatnonzero(s.participants)
        np.testing.assert_allclose(out[rows], want[rows])


network_fields = st.fixed_dictionaries(
    {},
    optional={
        "hop_latency_s": weird,
        "alpha_s": weird,
        "packet_bytes": weird,
        "gamma_s_per_byte": weird,
        "ports": weird,
        "flit_bytes": weird,
        "switching": st.sampled_from(["cut_through", "store_and_forward", "x", 3]),
        "clock_Hz": weird,
        "dependencies": st.sampled_from(["complete", "dataflow", None]),
    },
)


@given(bw=weird, fields=network_fields)
def test_network_models_and_simulation(bw, fields):
    try:
        net = wc.NetworkModel(bw, **fields)
    except CLEAN:
        return
    s = wc.build("generic_ring_allreduce", 4, 4 * 1024)
    try:
        r = wc.simulate(s, wc.ring(4), net, max_events=1 << 22)
    except CLEAN:
        return
    assert math.isfinite(r.time_s) and r.time_s >= 0
    json.dumps(r.summary(), allow_nan=False)


# --------------------------------------------------------------------------- #
# mutation: every dropped transfer and every duplicated reduce is rejected
# --------------------------------------------------------------------------- #
MUTANTS = [
    ("generic_ring_allreduce", 5),
    ("generic_recursive_doubling_allreduce", 6),
    ("generic_rabenseifner_allreduce", 7),
    ("generic_binomial_reduce", 6),
    ("generic_binomial_broadcast", 5),
    ("torus_swing_bo_allreduce", 8),
    ("wafer_two_phase_allreduce", 7),
]


def _rebuild(s, keep, extra=None):
    out = wc.Schedule(
        s.num_ranks,
        s.block_bytes,
        s.collective,
        root=s.root,
        owners=None if s.owners is None else s.owners.tolist(),
    )
    index = {}
    for t in keep:
        tr = s.transfer(t)
        index[t] = out.add_transfer(
            tr["src"],
            tr["dst"],
            tr["blocks"],
            op=tr["op"],
            deps=[index[d] for d in tr["deps"] if d in index],
        )
        if extra == t:
            out.add_transfer(
                tr["src"], tr["dst"], tr["blocks"], op=tr["op"], deps=[index[t]]
            )
    return out


@pytest.mark.parametrize(("name", "p"), MUTANTS)
def test_every_dropped_transfer_and_duplicated_reduce_is_rejected(name, p):
    s = wc.build(name, p, p * 720)
    nbytes = s.transfer_bytes()
    order = list(range(s.num_transfers))
    for t in order:
        if nbytes[t] == 0:
            continue
        with pytest.raises(wc.ScheduleError):
            wc.verify(_rebuild(s, [u for u in order if u != t]))
        if s.transfer(t)["op"] == "reduce":
            with pytest.raises(wc.ScheduleError):
                wc.verify(_rebuild(s, order, extra=t))
