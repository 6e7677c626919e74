"""Property tests of switch ranks: the verifier against an independent oracle.

Random programs: ``k`` GPUs reduce every block into switch rank ``k`` (some
reductions waiting for others at random), the switch forwards the sum to a
second switch ``k + 1`` or multicasts it back directly, and the multicast
waits for a random subset of what it needs. The oracle here decides from
reachability alone whether the program is correct (every reduction into a
switch happens before the switch's read), a race (one does not), or a double
count (a GPU reduces one block twice, all ordered); the verifier must agree,
and a correct program must execute to the sum.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import wafercoll as wc  # noqa: E402

# Per test, not a global profile: other modules' profiles stay as they are.
EXAMPLES = 400 if os.environ.get("CI") == "true" else 80


def reaches(deps: list[list[int]], a: int, b: int) -> bool:
    """Whether transfer a is b or a transitive dependency of b (depth-first)."""
    stack, seen = [b], set()
    while stack:
        x = stack.pop()
        if x == a:
            return True
        if x not in seen:
            seen.add(x)
            stack.extend(deps[x])
    return False


@st.composite
def programs(draw):
    k = draw(st.integers(1, 5))
    two_levels = draw(st.booleans())
    sw, top = k, k + 1
    ranks = k + 2 if two_levels else k + 1
    s = wc.Schedule(ranks, [8], "allreduce", switches=list(range(k, ranks)))
    deps: list[list[int]] = []
    into: list[int] = []  # reductions into the first switch
    twice = draw(st.integers(-1, k - 1))
    for g in [*range(k), *([twice] if twice >= 0 else [])]:
        d = (
            sorted(set(draw(st.lists(st.sampled_from(into), max_size=2))))
            if into
            else []
        )
        into.append(s.add_transfer(g, sw, [0], op="reduce", deps=d))
        deps.append(d)
    drop = draw(st.integers(-1, len(into) - 1))
    waits = [t for i, t in enumerate(into) if i != drop]
    reader = sw
    if two_levels:
        waits = [s.add_transfer(sw, top, [0], op="reduce", deps=waits)]
        deps.append([t for i, t in enumerate(into) if i != drop])
        reader = top
    s.add_transfer(reader, list(range(k)), [0], deps=waits)
    deps.append(waits)
    first_read = len(into)  # the first transfer that reads the first switch
    raced = any(not reaches(deps, t, first_read) for t in into)
    return s, k, twice >= 0, raced


@settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(programs())
def test_the_verifier_agrees_with_the_oracle(case) -> None:
    s, k, doubled, raced = case
    if raced:
        with pytest.raises(wc.ScheduleError) as e:
            wc.verify(s)
        # a double count may be found first when the duplicate is ordered
        assert e.value.kind in (("race", "double_count") if doubled else ("race",))
    elif doubled:
        with pytest.raises(wc.ScheduleError) as e:
            wc.verify(s)
        assert e.value.kind == "double_count"
    else:
        assert wc.verify(s).ok
        x = np.random.default_rng(k).integers(-5, 5, (s.num_ranks, 3))
        assert (wc.execute(s, x)[:k] == x[:k].sum(0)).all()
        t = wc.topology.star(s.num_ranks - 1)
        if s.num_ranks - 1 > k:  # a second switch needs a second router: skip
            return
        assert wc.simulate(s, t, wc.NetworkModel(1e9)).time_s > 0
