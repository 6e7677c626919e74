"""The registry of schedule builders.

Every algorithm is registered with its collective, the topology families it
applies to, its source (paper and section) and its parameters, and is built
with :func:`build`::

    >>> import wafercoll as wc
    >>> s = wc.build("ring", ranks=6, size_bytes=1 << 20)
    >>> wc.verify(s).steps
    10
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import _core
from ._util import as_int
from .schedule import Schedule

__all__ = ["AlgorithmInfo", "algorithms", "build", "register"]

ANY = "any"


@dataclass(frozen=True)
class AlgorithmInfo:
    """A registered schedule builder.

    Attributes
    ----------
    name : str
        Registry key.
    collective : str
        The collective its schedules implement.
    families : tuple of str
        Topology families it applies to (``"any"``: ranks only, any topology
        with enough endpoints).
    source : str
        Where the algorithm comes from (paper, section).
    summary : str
        One line on what it does.
    parameters : dict
        Options beyond ``ranks`` and ``size_bytes``, with their defaults.
    max_ranks : int
        Largest rank count the builder accepts.
    """

    name: str
    collective: str
    families: tuple[str, ...]
    source: str
    summary: str
    builder: Callable[..., Any] = field(repr=False, compare=False)
    parameters: dict[str, Any] = field(default_factory=dict)
    max_ranks: int = 1 << 24

    def to_dict(self) -> dict[str, Any]:
        """The record without the builder function."""
        return {
            "name": self.name,
            "collective": self.collective,
            "families": list(self.families),
            "source": self.source,
            "summary": self.summary,
            "parameters": dict(self.parameters),
            "max_ranks": self.max_ranks,
        }


_REGISTRY: dict[str, AlgorithmInfo] = {}


def register(info: AlgorithmInfo) -> AlgorithmInfo:
    """Add a builder to the registry (names must be unique)."""
    if info.name in _REGISTRY:
        raise ValueError(f"algorithm {info.name!r} is already registered")
    _REGISTRY[info.name] = info
    return info


def algorithms(collective: str | None = None) -> list[AlgorithmInfo]:
    """All registered algorithms, optionally only those of one collective."""
    return [
        a
        for a in _REGISTRY.values()
        if collective is None or a.collective == collective
    ]


def build(
    name: str,
    ranks: int | None = None,
    size_bytes: int | None = None,
    topology: Any = None,
    **options: Any,
) -> Schedule:
    """Build the schedule of a registered algorithm.

    Parameters
    ----------
    name : str
        A name from :func:`algorithms`.
    ranks : int, optional
        Number of ranks; defaults to the topology's number of endpoints.
    size_bytes : int
        Size of every rank's vector in bytes (>= 0).
    topology : Topology, optional
        The machine. Ranks ``0 .. ranks-1`` are its endpoints.
    **options
        Algorithm parameters (see ``AlgorithmInfo.parameters``).

    Raises
    ------
    ValueError
        For an unknown name, missing or out-of-range sizes, a topology of
        another family or with too few endpoints, or unknown options.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    info = _REGISTRY.get(name)
    if info is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown algorithm {name!r}; registered: {known}")
    if topology is not None:
        kind = getattr(topology, "kind", None)
        if kind is None:
            raise TypeError("topology must be a wafercoll.Topology")
        if ANY not in info.families and kind not in info.families:
            raise ValueError(
                f"{name} applies to {', '.join(info.families)} topologies, not {kind}"
            )
        if ranks is None:
            ranks = topology.num_endpoints
    if ranks is None:
        raise ValueError("ranks is required (or pass a topology)")
    p = as_int(ranks, "ranks", 1, info.max_ranks)
    if topology is not None and p > topology.num_endpoints:
        raise ValueError(
            f"ranks = {p} exceeds the {topology.num_endpoints} endpoints "
            f"of {topology.name}"
        )
    if size_bytes is None:
        raise ValueError("size_bytes is required")
    size = as_int(size_bytes, "size_bytes", 0, 1 << 62)
    unknown = set(options) - set(info.parameters)
    if unknown:
        accepted = ", ".join(info.parameters) or "none"
        raise TypeError(
            f"{name}: unexpected option {sorted(unknown)[0]!r} (accepted: {accepted})"
        )
    opts = {**info.parameters, **options}
    core = info.builder(p, size, topology=topology, **opts)
    return core if isinstance(core, Schedule) else Schedule._wrap(core)


def _rooted(fn: Callable[..., Any]) -> Callable[..., Any]:
    def builder(p: int, size: int, *, topology: Any = None, root: int = 0) -> Any:
        return fn(p, size, as_int(root, "root", 0, p - 1))

    return builder


def _plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    def builder(p: int, size: int, *, topology: Any = None) -> Any:
        return fn(p, size)

    return builder


_GENERIC = "classic MPI collectives (Thakur, Rabenseifner, Gropp 2005)"
register(
    AlgorithmInfo(
        "ring",
        "allreduce",
        (ANY,),
        _GENERIC + "; ring allreduce",
        "unidirectional ring: reduce-scatter then allgather, 2(p-1) steps of size/p",
        _plain(_core.ring_allreduce),
        max_ranks=4096,
    )
)
register(
    AlgorithmInfo(
        "recursive_doubling",
        "allreduce",
        (ANY,),
        _GENERIC + "; recursive doubling",
        "full-vector pairwise exchanges at distance 1, 2, 4, ...; extra ranks folded",
        _plain(_core.recursive_doubling_allreduce),
        max_ranks=1 << 20,
    )
)
register(
    AlgorithmInfo(
        "rabenseifner",
        "allreduce",
        (ANY,),
        _GENERIC + "; Rabenseifner's algorithm",
        "reduce-scatter by recursive halving, allgather by recursive doubling",
        _plain(_core.rabenseifner_allreduce),
        max_ranks=1 << 20,
    )
)
register(
    AlgorithmInfo(
        "binomial_reduce",
        "reduce",
        (ANY,),
        _GENERIC + "; binomial tree",
        "binomial tree towards the root, ceil(log2 p) steps",
        _rooted(_core.binomial_reduce),
        {"root": 0},
    )
)
register(
    AlgorithmInfo(
        "binomial_broadcast",
        "broadcast",
        (ANY,),
        _GENERIC + "; binomial tree",
        "binomial tree from the root, one message at a time per rank",
        _rooted(_core.binomial_broadcast),
        {"root": 0},
    )
)
