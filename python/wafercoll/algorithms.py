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
``allgather``), with an optional variant before it
(``torus_swing_bo_allreduce``). Variants that build another collective are
registered under their own names (``mesh_tto_reduce_scatter``), so
``wc.algorithms("reduce_scatter")`` finds them.

The parts of a name are data: every :class:`AlgorithmInfo` carries its
``family``, ``algorithm``, ``variant`` and ``collective``, a human ``label``
(the paper's name, used in figures and reports) and the names the authors'
artifacts give it. Code that needs the algorithm of a family asks the
registry (:func:`find`) instead of assembling a name, and code that needs a
name's parts reads its record (:func:`algorithm_info`) instead of parsing
it; :func:`algorithm_name` is the one place a name is put together.

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

Plugins are loaded the first time the whole registry is read
(:func:`algorithms`, ``wafercoll list``) or a name is asked for that is not
registered yet; one that fails to load gives a
:class:`~wafercoll.WafercollWarning` and is left out. A registered name never
changes its meaning when they load (:func:`register` refuses a name taken,
and a plugin's record of a name taken is skipped), so a built-in name is
built without reading the installed packages' entry points (some 40 ms of a
fresh process: ``importlib.metadata`` and every distribution's metadata).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import WafercollWarning
from ._util import as_int, did_you_mean
from .network import NetworkModel
from .schedule import COLLECTIVES, Schedule

__all__ = [
    "ENTRY_POINT_GROUP",
    "AlgorithmInfo",
    "algorithm_info",
    "algorithm_name",
    "algorithms",
    "algorithms_table",
    "build",
    "find",
    "lookup",
    "register",
    "register_algorithm",
    "unregister_algorithm",
]

#: The entry-point group through which other packages add algorithms.
ENTRY_POINT_GROUP = "wafercoll.algorithms"
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")

ANY = "any"


def algorithm_name(
    family: str, algorithm: str, collective: str, variant: str = ""
) -> str:
    """The registry name of ``<family>_<algorithm>[_<variant>]_<collective>``.

    The one place where a name is assembled from its parts; everything else
    looks algorithms up by their parts with :func:`find`.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.algorithm_name("torus", "swing", "allreduce", variant="bo")
    'torus_swing_bo_allreduce'
    """
    parts = [family, algorithm, variant, collective]
    return "_".join(str(x) for x in parts if x)


@dataclass(frozen=True)
class AlgorithmInfo:
    """A registered schedule builder.

    Attributes
    ----------
    name : str
        Registry key, ``<family>_<algorithm>[_<variant>]_<collective>``.
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
    family : str
        The package (or plugin) that holds the builder: the name's first part.
    algorithm : str
        The algorithm's own part of the name (``"tto"``, ``"swing"``).
    variant : str
        The variant part (``"lo"``, ``"bo"``), or ``""``.
    label : str
        The paper's name for it, as figures and reports print it
        (``"TTO"``, ``"Swing (BO)"``).
    artifact_names : tuple of str
        The names the authors' artifact gives it, if any (for the meshes of
        chiplets: the artifact's name on even meshes, then on odd meshes).
    network_parameters : tuple of str
        Parameters that plan for the network the schedule runs on, each named
        after the :class:`~wafercoll.NetworkModel` field whose value it takes
        (the synthesizer's ``spray``): :func:`wafercoll.advise` and
        :func:`wafercoll.sweep` pass the network's value
        (:meth:`network_options`).

    Examples
    --------
    >>> import wafercoll as wc
    >>> info = wc.algorithm_info("mesh_ring_bi_odd_allreduce")
    >>> info.family, info.algorithm, info.label
    ('mesh', 'ring_bi_odd', 'RingBiOdd')
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
    family: str = ""
    algorithm: str = ""
    variant: str = ""
    label: str = ""
    artifact_names: tuple[str, ...] = ()
    network_parameters: tuple[str, ...] = ()

    def network_options(self, network: Any) -> dict[str, Any]:
        """The options that ``network_parameters`` take from ``network``.

        Examples
        --------
        >>> import wafercoll as wc
        >>> info = wc.algorithm_info("synth_treepack_allgather")
        >>> info.network_options(wc.NetworkModel(1e9, packet_bytes=4096, spray=True))
        {'spray': True}
        """
        return {k: getattr(network, k) for k in self.network_parameters}

    def __post_init__(self) -> None:
        # A record made with only a name (a plugin's) gets its parts from the
        # name's documented shape; records of this package state them.
        name = str(self.name)
        family = self.family or name.split("_", 1)[0]
        algorithm = self.algorithm
        if not algorithm:
            rest = name[len(family) + 1 :]
            suffix = "_" + str(self.collective)
            rest = rest[: -len(suffix)] if rest.endswith(suffix) else rest
            if self.variant and rest.endswith("_" + self.variant):
                rest = rest[: -len(self.variant) - 1]
            algorithm = rest or name
        object.__setattr__(self, "family", family)
        object.__setattr__(self, "algorithm", algorithm)
        object.__setattr__(self, "label", self.label or algorithm)
        object.__setattr__(self, "artifact_names", tuple(self.artifact_names))

    @property
    def short_name(self) -> str:
        """The name within its family and collective: ``"swing_bo"``, ``"tto"``."""
        return f"{self.algorithm}_{self.variant}" if self.variant else self.algorithm

    @classmethod
    def of(
        cls,
        family: str,
        algorithm: str,
        collective: str,
        *,
        variant: str = "",
        **fields: Any,
    ) -> AlgorithmInfo:
        """A record named from its parts (:func:`algorithm_name`)."""
        return cls(
            name=algorithm_name(family, algorithm, collective, variant),
            collective=collective,
            family=family,
            algorithm=algorithm,
            variant=variant,
            **fields,
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
            "family": self.family,
            "algorithm": self.algorithm,
            "variant": self.variant,
            "label": self.label,
            "artifact_names": list(self.artifact_names),
        }

    def describe(self) -> str:
        """The record as text, with the builder's docstring (``wafercoll info``)."""
        import inspect

        rows = [
            ("name", self.name),
            ("collective", self.collective),
            ("families", ", ".join(self.families)),
            ("source", self.source),
            ("summary", self.summary),
            ("max ranks", str(self.max_ranks)),
        ]
        params = [f"{k} = {v!r}" for k, v in self.parameters.items()] or ["none"]
        lines = [f"{key:<11} {value}" for key, value in rows]
        lines.append("parameters  " + "\n            ".join(params))
        doc = inspect.getdoc(getattr(self.builder, "func", self.builder)) or ""
        return "\n".join(lines) + ("\n\n" + doc if doc else "")


_REGISTRY: dict[str, AlgorithmInfo] = {}
_PLUGINS_LOADED = False


def _check_name(name: Any) -> str:
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

    Examples
    --------
    >>> import dataclasses
    >>> import wafercoll as wc
    >>> base = wc.algorithm_info("generic_ring_allreduce")
    >>> info = dataclasses.replace(base, name="mylab_ring_allreduce", family="mylab")
    >>> wc.register(info).name
    'mylab_ring_allreduce'
    >>> wc.build("mylab_ring_allreduce", ranks=3, size_bytes=24).num_transfers
    12
    >>> wc.unregister_algorithm("mylab_ring_allreduce")
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
    label: str = "",
    variant: str = "",
    artifact_names: tuple[str, ...] = (),
    network_parameters: tuple[str, ...] = (),
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
    label : str, optional
        The name figures and reports print (default: the algorithm part).
    variant : str, optional
        The variant part of the name, if it has one.
    artifact_names : tuple of str, optional
        The names an artifact of the algorithm's source gives it.
    network_parameters : tuple of str, optional
        Entries of ``parameters`` named after :class:`~wafercoll.NetworkModel`
        fields, which the advisor and sweeps set from the network they
        simulate under (:attr:`AlgorithmInfo.network_parameters`).

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
    fields = {f.name for f in dataclasses.fields(NetworkModel)}
    for k in network_parameters:
        if k not in params or k not in fields:
            raise ValueError(
                f"network_parameters: {k!r} must be one of the parameters and a "
                "NetworkModel field"
            )

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
                variant=variant,
                label=label,
                artifact_names=artifact_names,
                network_parameters=tuple(network_parameters),
            )
        )
        return fn

    return deco


def unregister_algorithm(name: str) -> None:
    """Remove a registered algorithm (for notebooks and tests that add one).

    Examples
    --------
    >>> import dataclasses
    >>> import wafercoll as wc
    >>> base = wc.algorithm_info("generic_ring_allreduce")
    >>> info = dataclasses.replace(base, name="mylab_tmp_allreduce", family="mylab")
    >>> _ = wc.register(info)
    >>> wc.unregister_algorithm("mylab_tmp_allreduce")
    >>> "mylab_tmp_allreduce" in {a.name for a in wc.algorithms()}
    False
    """
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

    Examples
    --------
    >>> import wafercoll as wc
    >>> names = [a.name for a in wc.algorithms("broadcast")]
    >>> names[:2]
    ['generic_binomial_broadcast', 'generic_chain_broadcast']
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


def algorithms_table(infos: list[AlgorithmInfo] | None = None) -> str:
    """Name, collective, families, parameters and source, one aligned row each.

    What ``wafercoll list`` prints; ``infos`` defaults to every registered one.
    """
    rows = [("NAME", "COLLECTIVE", "FAMILIES", "PARAMETERS", "SOURCE")]
    for a in algorithms() if infos is None else infos:
        params = ", ".join(f"{k}={v}" for k, v in a.parameters.items()) or "-"
        rows.append((a.name, a.collective, ",".join(a.families), params, a.source))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)), r[-1]])
        for r in rows
    )


def _unknown(name: str) -> ValueError:
    """The error for an unregistered name, with the closest registered ones."""
    hint = did_you_mean(name, _REGISTRY)
    hint = hint or "; `wafercoll list` or wc.algorithms() names them all"
    return ValueError(f"unknown algorithm {name!r}{hint}")


def lookup(name: Any) -> AlgorithmInfo | None:
    """The registry record of ``name``, or None when it is not registered.

    For lookups that also take other spellings (short names of a family);
    :func:`algorithm_info` raises instead.

    Examples
    --------
    >>> from wafercoll.algorithms import lookup
    >>> lookup("cluster_nap_allreduce").algorithm
    'nap'
    >>> lookup("nap") is None
    True
    """
    return _REGISTRY[name] if isinstance(name, str) and _registered(name) else None


def _registered(name: str) -> bool:
    """Whether ``name`` is registered, the plugins loaded first if it is not."""
    if name not in _REGISTRY:
        _load_plugins()
    return name in _REGISTRY


def _resolve(name: Any) -> str:
    """``name`` checked against the registry."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if not _registered(name):
        raise _unknown(name)
    return name


def algorithm_info(name: str) -> AlgorithmInfo:
    """The registry record of ``name``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.algorithm_info("cluster_nap_allreduce").label
    'NAP'
    """
    return _REGISTRY[_resolve(name)]


def find(
    family: str, algorithm: str, collective: str, variant: str = ""
) -> AlgorithmInfo:
    """The registered algorithm with these parts.

    Parameters
    ----------
    family, algorithm, collective, variant : str
        The parts of its name (:attr:`AlgorithmInfo.family` and so on).

    Raises
    ------
    ValueError
        If no registered algorithm has them.

    Examples
    --------
    >>> import wafercoll as wc
    >>> from wafercoll.algorithms import find
    >>> find("wafer", "chain", "reduce").name
    'wafer_chain_reduce'
    """
    parts = (family, algorithm, collective, variant)

    def match() -> AlgorithmInfo | None:
        return next(
            (
                info
                for info in _REGISTRY.values()
                if (info.family, info.algorithm, info.collective, info.variant) == parts
            ),
            None,
        )

    info = match()
    if info is None:  # perhaps a plugin's
        _load_plugins()
        info = match()
    if info is None:
        raise _unknown(algorithm_name(family, algorithm, collective, variant))
    return info


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

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", ranks=4, size_bytes=64)
    >>> s.name, s.num_ranks, s.num_transfers
    ('generic_ring_allreduce', 4, 24)
    >>> s = wc.build("mesh_tto_allreduce", topology=wc.mesh(3, 3), size_bytes=576)
    >>> wc.verify(s).ok
    True
    """
    name = _resolve(name)
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
            ranks = topology.default_ranks
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
    # One name per thing: a built schedule goes by its registry key.
    s.name = name
    # Switch ranks run on the topology's hidden routers (node r for rank r).
    room = None if topology is None else topology.num_endpoints
    if topology is not None and s.switches.any():
        room = topology.num_nodes
    if room is not None and s.num_ranks > room:
        raise ValueError(
            f"{name} built {s.num_ranks} ranks (helpers included) but "
            f"{topology.name} has {room} {'nodes' if s.switches.any() else 'endpoints'}"
            f"; it needs a topology of the families {', '.join(info.families)} with "
            "room for them"
        )
    return s
