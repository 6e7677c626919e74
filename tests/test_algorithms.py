"""The builder registry and wc.build's argument checking."""

from __future__ import annotations

import pytest

import wafercoll as wc


def test_registry_records():
    names = {a.name for a in wc.algorithms()}
    assert {
        "generic_ring_allreduce",
        "generic_recursive_doubling_allreduce",
        "generic_rabenseifner_allreduce",
        "generic_binomial_reduce",
        "generic_binomial_broadcast",
    } <= names
    for a in wc.algorithms():
        d = a.to_dict()
        assert d["collective"] in wc.COLLECTIVES
        assert d["families"] and d["source"] and d["summary"]
    assert "generic_binomial_reduce" in {a.name for a in wc.algorithms("reduce")}
    assert all(a.collective == "reduce" for a in wc.algorithms("reduce"))


def test_build_with_topology_defaults_ranks():
    t = wc.topology.torus(3, 4)
    s = wc.build("generic_rabenseifner_allreduce", topology=t, size_bytes=1 << 10)
    assert s.num_ranks == 12
    with pytest.raises(ValueError, match="exceeds the 12 endpoints"):
        wc.build("generic_ring_allreduce", ranks=13, topology=t, size_bytes=8)


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        (
            ("nope",),
            {"ranks": 4, "size_bytes": 8},
            ValueError,
            "unknown algorithm 'nope'",
        ),
        ((3,), {"ranks": 4, "size_bytes": 8}, TypeError, "name must be a string"),
        (
            ("generic_ring_allreduce",),
            {"ranks": 0, "size_bytes": 8},
            ValueError,
            "ranks must be >= 1",
        ),
        (
            ("generic_ring_allreduce",),
            {"ranks": 4.5, "size_bytes": 8},
            TypeError,
            "ranks must be an integer",
        ),
        (
            ("generic_ring_allreduce",),
            {"ranks": 4, "size_bytes": -1},
            ValueError,
            "size_bytes must be >= 0",
        ),
        (
            ("generic_ring_allreduce",),
            {"ranks": 4},
            ValueError,
            "size_bytes is required",
        ),
        (
            ("generic_ring_allreduce",),
            {"size_bytes": 4},
            ValueError,
            "ranks is required",
        ),
        (
            ("generic_ring_allreduce",),
            {"ranks": 100000, "size_bytes": 4},
            ValueError,
            "ranks must be <= 4096",
        ),
        (
            ("generic_ring_allreduce",),
            {"ranks": 4, "size_bytes": 8, "root": 1},
            TypeError,
            "unexpected option 'root'",
        ),
        (
            ("generic_binomial_reduce",),
            {"ranks": 4, "size_bytes": 8, "root": 4},
            ValueError,
            "root must be <= 3",
        ),
        (
            ("generic_ring_allreduce",),
            {"ranks": 4, "size_bytes": 8, "topology": "mesh"},
            TypeError,
            "Topology",
        ),
    ],
)
def test_bad_build_arguments(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        wc.build(*args, **kwargs)


def test_register_rejects_duplicates():
    info = wc.algorithms()[0]
    with pytest.raises(ValueError, match="already registered"):
        wc.register(info)
