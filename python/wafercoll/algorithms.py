"""The registry of schedule builders, and how to add your own.

Every algorithm is registered with its collective, the topology families it
applies to, its source (paper and section) and its parameters, and is built
with :func:`build`::

    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", ranks=6, size_bytes=1 << 20)
    >>> wc.verify(s).steps
    10

Names
-----
Every name reads ``<family>_<algorithm>_<collective>``: the family is the
package that holds the builder (``generic`` for the classic MPI algorithms
that run on any topology, ``cluster``, ``torus``, ``mesh``, ``wafer`` for
the papers' machines, or a plugin's own), the algorithm is the paper's name
for it and the collective is the one the schedule implements
(``allreduce``, ``reduce``, ``broadcast``, ``reduce_scatter``,
``allgather``). Variants that build another collective are registered
under their own names (``mesh_tto_reduce_scatter``), so
``wc.algorithms("reduce_scatter")`` finds them. The names of earlier
releases still build, with a :class:`DeprecationWarning` naming the new one
(:data:`RENAMED`).

Your own algorithm
------------------
Write it with :mod:`wafercoll.kit` and register it with
:func:`register_algorithm`, as a decorator::

    @wc.register_algorithm("mylab_bine_allreduce", "allreduce", source="...")
    def bine(ranks, size_bytes, *, topology=None):
        prog = wc.kit.Program(ranks, ..., rule="sendrecv")
        ...
        return prog.schedule()

A separate pip package makes its algorithms visible to every wafercoll
session (``wafercoll list``, :func:`build`, the CLI) through the entry-point
group ``wafercoll.algorithms``; in its ``pyproject.toml``::

    [project.entry-points."wafercoll.algorithms"]
    bine = "mylab.bine"        # a module that registers on import, or an
                               # AlgorithmInfo, or a function that registers

Plugins are loaded the first time the registry is read; one that fails to
load gives a :class:`~wafercoll.WafercollWarning` and is left out.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import WafercollWarning
from ._util import as_int
from .schedule import COLLECTIVES, Schedule

__all__ = [
    "ENTRY_POINT_GROUP",
    "RENAMED",
    "AlgorithmInfo",
    "algorithm_info",
    "algorithms",
    "build",
    "register",
    "register_algorithm",
    "unregister_algorithm",
]

#: The entry-point group through which other packages add algorithms.
ENTRY_POINT_GROUP = "wafercoll.algorithms"
#: Names of earlier releases and the names they now have (they still build,
#: with a DeprecationWarning). A mesh name with ``phase=`` maps to the
#: variant of that collective.
RENAMED: dict[str, str] = {
    "ring": "generic_ring_allreduce",
    "recursive_doubling": "generic_recursive_doubling_allreduce",
    "rabenseifner": "generic_rabenseifner_allreduce",
    "binomial_reduce": "generic_binomial_reduce",
    "binomial_broadcast": "generic_binomial_broadcast",
    "rd_allreduce": "cluster_rd_allreduce",
    "smp_allreduce": "cluster_smp_allreduce",
    "nap_allreduce": "cluster_nap_allreduce",
    "locality_dissemination": "cluster_dissemination_allreduce",
    "mesh_ring": "mesh_ring_allreduce",
    "mesh_ring_bi": "mesh_ring_bi_allreduce",
    "mesh_ring_bi_odd": "mesh_ring_bi_odd_allreduce",
    "mesh_ring_2d": "mesh_ring_2d_allreduce",
    "mesh_dbtree": "mesh_dbtree_allreduce",
    "mesh_multitree": "mesh_multitree_allreduce",
    "mesh_tto": "mesh_tto_allreduce",
    "swing_lo": "torus_swing_lo_allreduce",
    "swing_bo": "torus_swing_bo_allreduce",
    "rd_lo": "torus_rd_lo_allreduce",
    "rd_bo": "torus_rd_bo_allreduce",
    "shared_memory": "torus_shared_memory_allreduce",
    "ring_bidir": "torus_ring_bidir_allreduce",
    "wafer_star": "wafer_star_reduce",
    "wafer_chain": "wafer_chain_reduce",
    "wafer_tree": "wafer_tree_reduce",
    "wafer_two_phase": "wafer_two_phase_reduce",
    "wafer_autogen": "wafer_autogen_reduce",
    "wafer_star_bcast": "wafer_star_allreduce",
    "wafer_chain_bcast": "wafer_chain_allreduce",
    "wafer_tree_bcast": "wafer_tree_allreduce",
    "wafer_two_phase_bcast": "wafer_two_phase_allreduce",
    "wafer_autogen_bcast": "wafer_autogen_allreduce",
    "wafer_ring": "wafer_ring_allreduce",
}
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")

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
    predict : callable or None
        Closed-form time, ``predict(ranks, size_bytes, topology, network)``
        in seconds (``None`` where the form does not apply), for
        :func:`wafercoll.advise`.
    """

    name: str
    collective: str
    families: tuple[str, ...]
    source: str
    summary: str
    builder: Callable[..., Any] = field(repr=False, compare=False)
    parameters: dict[str, Any] = field(default_factory=dict)
    max_ranks: int = 1 << 24
    predict: Callable[..., float | None] | None = field(
        default=None, repr=False, compare=False
    )

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
            "predicts": self.predict is not None,
        }


_REGISTRY: dict[str, AlgorithmInfo] = {}
_PLUGINS_LOADED = False


def _check_name(name: Any) -> str:
    if isinstance(name, str) and name in RENAMED:  # pragma: no cover - transition
        return name
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"algorithm name {name!r} must read <family>_<algorithm>_<collective> "
            "in lower case (letters, digits, underscores), e.g. "
            "'mylab_bine_allreduce'"
        )
    return name


def register(info: AlgorithmInfo) -> AlgorithmInfo:
    """Add a builder to the registry (names must be unique).

    Raises
    ------
    ValueError
        For a name taken already, a malformed name or an unknown collective.
    """
    if not isinstance(info, AlgorithmInfo):
        raise TypeError(f"register takes an AlgorithmInfo, got {type(info).__name__}")
    if info.collective not in COLLECTIVES:
        raise ValueError(
            f"collective must be one of {', '.join(COLLECTIVES)}; "
            f"got {info.collective!r}"
        )
    _check_name(info.name)
    if info.name in _REGISTRY:
        raise ValueError(f"algorithm {info.name!r} is already registered")
    if not callable(info.builder):
        raise TypeError(f"{info.name}: the builder must be callable")
    _REGISTRY[info.name] = info
    return info


def register_algorithm(
    name: str,
    collective: str,
    *,
    families: tuple[str, ...] | list[str] = (ANY,),
    source: str = "",
    summary: str = "",
    parameters: dict[str, Any] | None = None,
    max_ranks: int = 1 << 24,
    predict: Callable[..., float | None] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a builder under ``name``; use as a decorator.

    The builder is called as ``builder(ranks, size_bytes, topology=...,
    **options)`` with checked ``ranks`` and ``size_bytes`` and the options of
    ``parameters`` (defaults filled in), and returns a
    :class:`wafercoll.Schedule` (written with :mod:`wafercoll.kit`).

    Parameters
    ----------
    name : str
        ``<family>_<algorithm>_<collective>`` (module docstring).
    collective : str
        The collective of the schedules it builds.
    families : sequence of str
        Topology families it applies to (``"any"``: any topology with enough
        endpoints, or none).
    source : str
        Paper and section (or "original").
    summary : str
        One line on what it does (default: the docstring's first line).
    parameters : dict, optional
        Options beyond ``ranks`` and ``size_bytes``, with their defaults.
    max_ranks : int
        Largest rank count accepted.
    predict : callable, optional
        Closed-form time ``predict(ranks, size_bytes, topology, network)`` in
        seconds, or ``None`` where it does not apply.

    Returns
    -------
    callable
        A decorator that registers the function and returns it unchanged.

    Examples
    --------
    Every rank sends to rank 0, which multicasts the sum back:

    >>> import numpy as np, wafercoll as wc
    >>> @wc.register_algorithm("demo_star_allreduce", "allreduce", source="example")
    ... def star(ranks, size_bytes, *, topology=None):
    ...     prog = wc.kit.Program(ranks, [size_bytes], rule="sendrecv")
    ...     for r in range(1, ranks):
    ...         prog.send(r, 0, 0, "reduce")
    ...     prog.send(0, list(range(1, ranks)), 0, "copy")
    ...     return prog.schedule()
    >>> wc.verify(wc.build("demo_star_allreduce", ranks=5, size_bytes=8)).ok
    True
    >>> wc.unregister_algorithm("demo_star_allreduce")
    """
    fams = tuple(families)
    params = dict(parameters or {})

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        doc = (fn.__doc__ or "").strip().splitlines()
        register(
            AlgorithmInfo(
                name,
                collective,
                fams,
                source,
                summary or (doc[0] if doc else name),
                fn,
                params,
                max_ranks,
                predict,
            )
        )
        return fn

    return deco


def unregister_algorithm(name: str) -> None:
    """Remove a registered algorithm (for notebooks and tests that add one)."""
    if name not in _REGISTRY:
        raise ValueError(f"algorithm {name!r} is not registered")
    del _REGISTRY[name]


def _load_plugins() -> None:
    """Import the entry points of :data:`ENTRY_POINT_GROUP` (once)."""
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            if isinstance(obj, AlgorithmInfo):
                if obj.name not in _REGISTRY:
                    register(obj)
            elif callable(obj) and not isinstance(obj, type):
                obj()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break us
            warnings.warn(
                f"the wafercoll plugin {ep.name!r} ({ep.value}) failed to load: "
                f"{type(exc).__name__}: {exc}",
                WafercollWarning,
                stacklevel=3,
            )


def algorithms(collective: str | None = None) -> list[AlgorithmInfo]:
    """All registered algorithms, optionally only those of one collective.

    Algorithms of installed plugins (entry-point group
    ``wafercoll.algorithms``) are included.
    """
    if collective is not None and collective not in COLLECTIVES:
        raise ValueError(
            f"collective must be one of {', '.join(COLLECTIVES)}; got {collective!r}"
        )
    _load_plugins()
    return [
        a
        for a in _REGISTRY.values()
        if collective is None or a.collective == collective
    ]


def _resolve(name: Any, options: dict[str, Any]) -> str:
    """The registered name for ``name`` (old names warn); may consume ``phase``."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    _load_plugins()
    if name in _REGISTRY:
        return name
    new = RENAMED.get(name)
    if new is None:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown algorithm {name!r}; registered: {known}")
    phase = options.get("phase")
    if name.startswith("mesh_") and phase in ("reduce_scatter", "allgather"):
        options.pop("phase")
        new = new[: -len("allreduce")] + phase
    elif phase == "allreduce":
        options.pop("phase")
    warnings.warn(
        f"algorithm name {name!r} is deprecated; use {new!r}",
        DeprecationWarning,
        stacklevel=3,
    )
    return new


def algorithm_info(name: str) -> AlgorithmInfo:
    """The registry record of ``name`` (an old name warns and is resolved)."""
    return _REGISTRY[_resolve(name, {})]


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
        A name from :func:`algorithms` (old names warn and still build).
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
    name = _resolve(name, options)
    info = _REGISTRY[name]
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
    s = info.builder(p, size, topology=topology, **opts)
    if not isinstance(s, Schedule):
        raise TypeError(
            f"{name}: the builder returned {type(s).__name__}, not a wafercoll.Schedule"
        )
    if s.collective != info.collective:
        raise ValueError(
            f"{name} is registered as a {info.collective} but built a "
            f"{s.collective} schedule"
        )
    if topology is not None and s.num_ranks > topology.num_endpoints:
        raise ValueError(
            f"{name} built {s.num_ranks} ranks (helpers included) but "
            f"{topology.name} has {topology.num_endpoints} endpoints; it needs a "
            f"topology of the families {', '.join(info.families)} with room for them"
        )
    return s
