"""Every named machine in one table: topology, network preset and sources.

A :class:`Machine` pairs a topology constructor with the network model that
the papers give for it, and says where each number comes from. This table is
the one place network presets are defined: :func:`network_presets` reads it
(plus the three generic models ``ideal``, ``hockney`` and
``unit_timestep`` of :class:`wafercoll.NetworkModel`), the command line's
``--preset PRESET`` and ``--topology MACHINE[:ARGS]`` read it, and so do
the experiments.

:func:`resolve` is the one place a spec string (``"mesh:9x9"``,
``"ring:16"``, ``"wormhole_n150"``, ``"mcm_table_ii:3x3"``) becomes a topology and
its machine's network preset; the command line, :func:`wafercoll.sweep` and
:func:`wafercoll.advise` all call it. :func:`preset` and
:func:`network_model` turn a preset name and field overrides into a
:class:`~wafercoll.NetworkModel`.

========================  =======================  ========================
machine                   topology                 network preset
========================  =======================  ========================
``wse2_row``              ``wafer_row(P)``         ``wse2``
``wse2_grid``             ``wafer_grid(M, N)``     ``wse2``
``wormhole_n150``         ``wormhole_n150(row)``   ``wormhole_n150``
``mcm_table_ii``          ``mesh(rows, cols)``     ``mcm_table_ii``
``mcm_artifact``          ``mesh(rows, cols)``     ``mcm_artifact``
``mcm_figure_timesteps``  ``mesh(rows, cols)``     ``mcm_figure_timesteps``
``blue_waters``           ``cluster(nodes, ppn)``  ``blue_waters``
``dgx_h100``              ``dgx_h100()``           ``dgx_h100``
``dgx_b200``              ``dgx_b200()``           ``dgx_b200``
``nvl72``                 ``gb200_nvl72()``        ``nvl72``
``dgx_h100_x16_rail``     ``dgx_h100_rail(16)``    ``dgx_h100_x16_rail``
``fat_tree_k8``           ``fat_tree(8)``          ``fat_tree_k8``
``dragonfly_a8``          ``dragonfly(8, 4, 4)``   ``dragonfly_a8``
========================  =======================  ========================

Examples
--------
>>> import wafercoll as wc
>>> m = wc.machines.get("mcm_table_ii")
>>> topo, net = m.make(3, 3)
>>> (topo.num_endpoints, net.name)
(9, 'mcm_table_ii')
>>> sorted(wc.machines.names())[:3]
['blue_waters', 'dgx_b200', 'dgx_h100']
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._util import did_you_mean
from .cluster.machine import cluster_machine
from .mcm.machine import artifact, figure_timesteps, table_ii
from .network import NetworkModel
from .topology import (
    Topology,
    cluster,
    dgx_b200,
    dgx_h100,
    dgx_h100_rail,
    dragonfly,
    fat_tree,
    gb200_nvl72,
    line,
    mesh,
    ring,
    torus,
    wormhole_n150,
)
from .wafer.builders import wafer_row
from .wafer.builders2d import wafer_grid
from .wafer.machine import wse2_network
from .wormhole.machine import n150_network

__all__ = [
    "DEFAULT_BANDWIDTH_BPS",
    "SPEC_HELP",
    "Machine",
    "default_network",
    "get",
    "machines",
    "names",
    "network_model",
    "network_presets",
    "parse_spec",
    "preset",
    "resolve",
]


@dataclass(frozen=True)
class Machine:
    """A named machine: how to build its topology and its network model.

    Attributes
    ----------
    name : str
        Table key (also accepted by ``--topology`` and ``--network``).
    summary : str
        One line on what it is.
    family : str
        The topology family (``Topology.kind``) of what :attr:`topology` builds.
    topology : callable
        ``topology(*args, **kwargs) -> Topology`` (the sizes: PEs, grid, nodes).
    network : callable
        ``network(**kwargs) -> NetworkModel``: the preset, with its model
        parameters as keyword arguments.
    sources : tuple of str
        Where every number of the preset comes from.
    defaults : tuple
        Topology arguments used when none are given (the paper's main size).
    """

    name: str
    summary: str
    family: str
    topology: Callable[..., Topology] = field(repr=False)
    network: Callable[..., NetworkModel] = field(repr=False)
    sources: tuple[str, ...] = ()
    defaults: tuple[Any, ...] = ()

    def make(
        self, *args: Any, size_bytes: float | None = None, **kwargs: Any
    ) -> tuple[Topology, NetworkModel]:
        """The topology (``args``, or :attr:`defaults`) and the network preset.

        Keyword arguments go to the topology constructor. ``size_bytes``
        is for machines whose network depends on the message size
        (``blue_waters``: the protocol regime); it goes to both.
        """
        net_kw: dict[str, Any] = {}
        if size_bytes is not None:
            if "size_bytes" not in inspect.signature(self.network).parameters:
                raise ValueError(
                    f"{self.name}: its network does not depend on size_bytes"
                )
            kwargs["size_bytes"] = net_kw["size_bytes"] = size_bytes
        return self.topology(*(args or self.defaults), **kwargs), self.network(**net_kw)

    def to_dict(self) -> dict[str, Any]:
        """The entry as plain data (without the functions)."""
        return {
            "name": self.name,
            "summary": self.summary,
            "family": self.family,
            "topology": _signature(self.topology),
            "network": _signature(self.network),
            "sources": list(self.sources),
            "defaults": list(self.defaults),
        }


def _signature(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__name__}{inspect.signature(fn)}"


def _blue_waters_network(size_bytes: float = 8) -> NetworkModel:
    """The Blue Waters network model at one message size (protocol regime)."""
    return cluster_machine(1, 1, size_bytes)[1]


def _blue_waters_topology(nodes: int, ppn: int, size_bytes: float = 8) -> Topology:
    """The Blue Waters cluster of ``nodes x ppn`` at one message size."""
    return cluster_machine(nodes, ppn, size_bytes)[0]


def _fabric_network(name: str) -> Callable[..., NetworkModel]:
    """A preset that takes every link's own bandwidth from the fabric's topology.

    No per-hop or start-up latency was sourced for these fabrics, so none is
    assumed (``hop_latency_s = alpha_s = 0``): the preset is bandwidth-only.
    Add a latency with :func:`network_model` overrides.
    """

    def network(hop_latency_s: float = 0.0, alpha_s: float = 0.0) -> NetworkModel:
        return NetworkModel(
            None, hop_latency_s=hop_latency_s, alpha_s=alpha_s, name=name
        )

    network.__name__ = f"{name}_network"
    network.__qualname__ = network.__name__
    return network


_NVLINK4 = (
    "NVLink 4: 18 links per GPU, 900 GB/s bidirectional per GPU (NVIDIA developer "
    "blog, Upgrading Multi-GPU Interconnectivity with the Third-Generation NVIDIA "
    "NVSwitch, 2022; NVIDIA Hopper architecture page)"
)
_NVLINK5 = (
    "NVLink 5: 18 links per GPU, 100 GB/s bidirectional per link, 1.8 TB/s per GPU "
    "(NVIDIA GB200 NVL72 figures as quoted by Slicast, NVIDIA introduces NVLink "
    "Switch)"
)
_NO_LATENCY = "latency: none sourced, none assumed (bandwidth-only preset)"
_FABRIC_MACHINES = (
    Machine(
        "dgx_h100",
        "NVIDIA DGX H100: 8 GPUs on 4 NVSwitch chips, 5/4/4/5 NVLink 4 links each",
        "nvswitch",
        dgx_h100,
        _fabric_network("dgx_h100"),
        (
            _NVLINK4,
            "4 NVSwitch chips on HGX H100, every GPU on all four (NVIDIA developer "
            "blog, Introducing NVIDIA HGX H100, 2022); "
            "the 5/4/4/5 split is not from a vendor page we read (Hot Chips 34, "
            "as commonly reported)",
            _NO_LATENCY,
        ),
    ),
    Machine(
        "dgx_b200",
        "NVIDIA DGX B200: 8 GPUs on 2 NVLink switch chips, 9/9 NVLink 5 links each",
        "nvswitch",
        dgx_b200,
        _fabric_network("dgx_b200"),
        (
            _NVLINK5,
            "2 NVLink switch chips on HGX B200 (ServeTheHome/Ingrasys, Computex "
            "2024); the 9/9 split is assumed",
            _NO_LATENCY,
        ),
    ),
    Machine(
        "nvl72",
        "NVIDIA GB200 NVL72: 72 GPUs, one NVLink 5 link to each of 18 switch chips",
        "nvswitch",
        gb200_nvl72,
        _fabric_network("nvl72"),
        (
            _NVLINK5,
            "9 NVLink switch trays per rack (NVIDIA Base Command Manager manual, "
            "NVLink Switch Integration), 18 NVLink switches (Slicast, ibid.)",
            _NO_LATENCY,
        ),
    ),
    Machine(
        "dgx_h100_x16_rail",
        "16 DGX H100 nodes on a rail-optimised ConnectX-7 network (8 rails, 4 spines)",
        "rail_optimized",
        dgx_h100_rail,
        _fabric_network("dgx_h100_x16_rail"),
        (
            _NVLINK4,
            "ConnectX-7 400 Gb/s per GPU, rail N = GPU N of every server (Juniper, "
            "AI Data Center Network with Juniper Apstra, NVIDIA GPUs and WEKA: Rail "
            "Optimized Fabric)",
            "4 spines and non-blocking leaves: an assumption",
            _NO_LATENCY,
        ),
        (16,),
    ),
    Machine(
        "fat_tree_k8",
        "k = 8 fat tree (Al-Fares et al., SIGCOMM 2008): 128 hosts, 80 switches",
        "fat_tree",
        fat_tree,
        _fabric_network("fat_tree_k8"),
        (
            "Al-Fares, Loukissas, Vahdat, A Scalable, Commodity Data Center Network "
            "Architecture, SIGCOMM 2008, Sections 3.2-3.3",
            "50 GB/s (400 Gb/s) ports: an assumption",
            _NO_LATENCY,
        ),
        (8,),
    ),
    Machine(
        "dragonfly_a8",
        "dragonfly a = 8, p = h = 4, g = 33 (Kim et al., ISCA 2008): 1056 hosts",
        "dragonfly",
        dragonfly,
        _fabric_network("dragonfly_a8"),
        (
            "Kim, Dally, Scott, Abts, Technology-Driven, Highly-Scalable Dragonfly "
            "Topology, ISCA 2008, Section 3 (balanced a = 2p = 2h, g = ah + 1)",
            "50 GB/s on every wire: an assumption",
            _NO_LATENCY,
        ),
        (8, 4, 4),
    ),
)
_WAFER_SOURCES = (
    "Near-Optimal Wafer-Scale Reduce, Section 2.2: one 32-bit wavelet per link "
    "per cycle, one cycle per hop, one ramp per PE of T_R = 2 cycles each way",
    "ibid., Section 8.1: the CS-2 runs at 850 MHz",
)
_TABLE: dict[str, Machine] = {
    m.name: m
    for m in (
        Machine(
            "wse2_row",
            "a row of P PEs of the Cerebras WSE-2 (paper 000, 1D)",
            "line",
            wafer_row,
            wse2_network,
            _WAFER_SOURCES,
            (512,),
        ),
        Machine(
            "wse2_grid",
            "an M x N grid of PEs of the Cerebras WSE-2 (paper 000, 2D)",
            "mesh",
            wafer_grid,
            wse2_network,
            _WAFER_SOURCES,
            (32, 32),
        ),
        Machine(
            "wormhole_n150",
            "Tenstorrent Wormhole n150: 8x8 cores on a 10x12 NoC torus (paper 002)",
            "wormhole_n150",
            wormhole_n150,
            n150_network,
            (
                "recovered details 4.1: tt-metal wormhole_b0_80_arch.yaml (layout)",
                "recovered details 4.2-4.3: tt-isa-documentation NoC README "
                "(9 cycles per hop, 32 B per cycle, 1 GHz, 8 KiB packets)",
            ),
            (10,),
        ),
        Machine(
            "mcm_table_ii",
            "a mesh of chiplets under the MCM paper's Table II network (paper 004)",
            "mesh",
            mesh,
            table_ii,
            (
                "Enhancing Collective Communication in MCM Accelerators, Table II: "
                "25 GB/s links, 8192 B packets, 512 B flits, 21 ns per flit, "
                "virtual cut-through, 1 GHz",
            ),
            (8, 8),
        ),
        Machine(
            "mcm_artifact",
            "a mesh of chiplets as the MCM paper's BookSim artifact simulates it "
            "(paper 004)",
            "mesh",
            mesh,
            artifact,
            (
                "sabuj7177/TTO_HPCA_2024 156128c5: anynet_mesh_*_200.cfg, "
                "per_message_time 357 (17 flits x 21 cycles per 8 KiB message), "
                "src/hmc.py (whole messages, chunk-level forwarding); recovered "
                "details 2.8",
            ),
            (8, 8),
        ),
        Machine(
            "mcm_figure_timesteps",
            "a mesh of chiplets counted in the MCM paper's unit timesteps (paper 004)",
            "mesh",
            mesh,
            figure_timesteps,
            ("ibid., Figs. 3, 5, 7: one piece per link per timestep",),
            (3, 3),
        ),
        Machine(
            "blue_waters",
            "Blue Waters nodes x ppn, postal parameters by protocol (paper 001)",
            "cluster",
            _blue_waters_topology,
            _blue_waters_network,
            (
                "Node-Aware Improvements to Allreduce, Section 4; recovered details "
                "1.8 (bienz2/BlueWatersModel parameter files)",
            ),
            (64, 16),
        ),
        *_FABRIC_MACHINES,
    )
}


def names() -> list[str]:
    """The machine names.

    Examples
    --------
    >>> import wafercoll as wc
    >>> wc.machines.names()[:3]
    ['wse2_row', 'wse2_grid', 'wormhole_n150']
    """
    return list(_TABLE)


def machines() -> list[Machine]:
    """Every machine of the table.

    Examples
    --------
    >>> import wafercoll as wc
    >>> [m.family for m in wc.machines.machines()][:3]
    ['line', 'mesh', 'wormhole_n150']
    """
    return list(_TABLE.values())


def get(name: str) -> Machine:
    """The machine called ``name``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).

    Examples
    --------
    >>> import wafercoll as wc
    >>> m = wc.machines.get("mcm_table_ii")
    >>> m.family, m.defaults
    ('mesh', (8, 8))
    >>> topo, net = m.make(3, 3)
    >>> topo.num_endpoints, net.bandwidth_Bps
    (9, 25000000000.0)
    """
    if not isinstance(name, str) or name not in _TABLE:
        hint = did_you_mean(name, _TABLE) if isinstance(name, str) else ""
        raise ValueError(f"unknown machine {name!r}{hint} (known: {', '.join(_TABLE)})")
    return _TABLE[name]


def network_presets() -> dict[str, Callable[..., NetworkModel]]:
    """Named constructors of network models: the generic ones and every machine's.

    ``ideal``, ``hockney`` and ``unit_timestep`` are the generic models of
    :class:`~wafercoll.NetworkModel`; the others are the presets of the
    machines in the table (``wse2``, ``wormhole_n150``, ``mcm_table_ii``,
    ``mcm_artifact``, ``mcm_figure_timesteps``,
    ``blue_waters``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> presets = wc.network_presets()
    >>> presets["mcm_table_ii"]().bandwidth_Bps
    25000000000.0
    >>> presets["hockney"](alpha_s=1e-6, bandwidth_Bps=1e9).alpha_s
    1e-06
    """
    presets: dict[str, Callable[..., NetworkModel]] = {
        "ideal": NetworkModel.ideal,
        "hockney": NetworkModel.hockney,
        "unit_timestep": NetworkModel.unit_timestep,
        "wse2": wse2_network,
    }
    for m in _TABLE.values():
        if m.network is not wse2_network:
            presets.setdefault(m.name, m.network)
    return presets


# -- specs: the one resolver ------------------------------------------------------

#: The spellings :func:`resolve` accepts, for messages and help texts.
SPEC_HELP = (
    "line:N, ring:N, mesh:RxC, torus:RxC, cluster:NODESxPPN[xSOCKETS], or a "
    "machine of wafercoll.machines (NAME[:AxB]: wse2_row:P, wse2_grid:MxN, "
    "wormhole_n150[:ROW], mcm_table_ii:RxC, blue_waters:NODESxPPN, dgx_h100, "
    "dgx_b200, nvl72, dgx_h100_x16_rail[:NODES], fat_tree_k8[:K], "
    "dragonfly_a8[:AxPxH], ...)"
)
#: How many sizes each topology kind takes (``ring`` alone: all the ranks).
_KIND_SIZES = {
    "line": (0, 1),
    "ring": (0, 1),
    "mesh": (2,),
    "torus": (2,),
    "cluster": (2, 3),
}
#: Bandwidth of the network used when neither a preset nor a machine names one.
DEFAULT_BANDWIDTH_BPS = 1e9


def parse_spec(spec: str) -> tuple[str, tuple[int, ...]]:
    """Split a topology spec into its kind and its sizes, checked.

    Parameters
    ----------
    spec : str
        ``KIND[:AxB...]``; see :data:`SPEC_HELP`. ``ring`` or ``line`` alone
        give no sizes (a ring or line of all the ranks); a machine name alone
        gives the machine's default sizes.

    Returns
    -------
    (str, tuple of int)
        The kind (lower case) and the sizes.

    Raises
    ------
    TypeError
        If ``spec`` is not a string.
    ValueError
        For an unknown kind (with the closest known ones) or sizes that do
        not fit it.

    Examples
    --------
    >>> from wafercoll import machines
    >>> machines.parse_spec("mesh:9x9")
    ('mesh', (9, 9))
    >>> machines.parse_spec("ring")
    ('ring', ())
    """
    if not isinstance(spec, str):
        raise TypeError(f"topology spec must be a string, got {type(spec).__name__}")
    kind, sep, sizes = spec.strip().lower().partition(":")
    parts = [p.strip() for p in sizes.split("x")] if sep else []
    allowed = _KIND_SIZES.get(kind)
    if allowed is None and kind in _TABLE:
        allowed = (0, 1, 2, 3)
    if allowed is None:
        hint = did_you_mean(kind, [*_KIND_SIZES, *_TABLE])
        raise ValueError(
            f"invalid topology {spec!r}: unknown kind {kind!r}{hint} "
            f"(expected {SPEC_HELP})"
        )
    if len(parts) not in allowed or not all(re.fullmatch(r"[0-9]+", p) for p in parts):
        raise ValueError(f"invalid topology {spec!r} (expected {SPEC_HELP})")
    return kind, tuple(int(p) for p in parts)


def _size_kw(fn: Callable[..., Any], size_bytes: int | None) -> dict[str, Any]:
    """``{"size_bytes": ...}`` when ``fn`` takes it (size-dependent machines)."""
    takes = "size_bytes" in inspect.signature(fn).parameters
    return {"size_bytes": size_bytes} if takes and size_bytes is not None else {}


def resolve(
    spec: str | Topology, *, ranks: int | None = None, size_bytes: int | None = None
) -> tuple[Topology, NetworkModel | None]:
    """The topology a spec names, and its machine's network preset.

    This is the one resolver of spec strings: the command line's
    ``--topology``, :func:`wafercoll.sweep` grids and :func:`wafercoll.advise`
    all call it.

    Parameters
    ----------
    spec : str or Topology
        ``line:N``, ``ring:N``, ``mesh:RxC``, ``torus:RxC``,
        ``cluster:NODESxPPN[xSOCKETS]`` or a machine name of :func:`names`
        with optional sizes (``wse2_row:P``, ``wse2_grid:MxN``,
        ``wormhole_n150[:ROW]``, ``mcm_table_ii:3x3``). A Topology is
        returned as it is, with no preset.
    ranks : int, optional
        Endpoints of ``line`` or ``ring`` given without a size.
    size_bytes : int, optional
        The message size, for machines whose parameters depend on it
        (``blue_waters``: the protocol regime).

    Returns
    -------
    (Topology, NetworkModel or None)
        The topology, and the machine's network preset (``None`` for the
        plain families ``line``, ``ring``, ``mesh``, ``torus`` and
        ``cluster``, which have none).

    Raises
    ------
    TypeError
        If ``spec`` is not a string.
    ValueError
        For an unknown kind (with "did you mean"), sizes that do not fit it,
        or ``line``/``ring`` without a size or ``ranks``.

    Examples
    --------
    >>> import wafercoll as wc
    >>> topo, net = wc.machines.resolve("mesh:3x3")
    >>> topo.name, net
    ('mesh(3x3)', None)
    >>> topo, net = wc.machines.resolve("mcm_table_ii:3x3")
    >>> topo.num_endpoints, net.name
    (9, 'mcm_table_ii')
    >>> wc.machines.resolve("ring", ranks=4)[0].name
    'ring(4)'
    """
    if isinstance(spec, Topology):
        return spec, None
    if not isinstance(spec, str):
        raise TypeError(
            f"topology must be a wafercoll.Topology or a spec string, got "
            f"{type(spec).__name__}"
        )
    kind, sizes = parse_spec(spec)
    machine = None
    try:
        if kind in ("line", "ring"):
            if not sizes and ranks is None:
                raise ValueError(f"{kind} needs a size ({kind}:N) or a rank count")
            topo = (line if kind == "line" else ring)(*(sizes or (ranks,)))
        elif kind in ("mesh", "torus", "cluster"):
            topo = {"mesh": mesh, "torus": torus, "cluster": cluster}[kind](*sizes)
        else:
            machine = _TABLE[kind]
            kw = _size_kw(machine.topology, size_bytes)
            topo = machine.topology(*(sizes or machine.defaults), **kw)
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"topology {spec!r}: {exc}") from None
    if machine is None:
        return topo, None
    return topo, machine.network(**_size_kw(machine.network, size_bytes))


def preset(name: str, *, size_bytes: int | None = None) -> NetworkModel:
    """The network model of a named preset of :func:`network_presets`.

    Parameters
    ----------
    name : str
        A preset name (``"mcm_table_ii"``, ``"wse2"``, ``"ideal"``, ...).
    size_bytes : int, optional
        The message size, for presets that depend on it (``blue_waters``).

    Raises
    ------
    ValueError
        For an unknown name (with "did you mean" and the known ones).
    TypeError
        For a preset that needs parameters (``hockney``, ``unit_timestep``):
        build those with :class:`~wafercoll.NetworkModel`'s constructors.

    Examples
    --------
    >>> from wafercoll import machines
    >>> machines.preset("mcm_table_ii").bandwidth_Bps
    25000000000.0
    """
    presets = network_presets()
    if not isinstance(name, str) or name not in presets:
        hint = did_you_mean(name, presets) if isinstance(name, str) else ""
        raise ValueError(f"unknown preset {name!r}{hint} (known: {', '.join(presets)})")
    factory = presets[name]
    try:
        return factory(**_size_kw(factory, size_bytes))
    except TypeError as exc:
        raise TypeError(f"preset {name!r} needs parameters ({exc})") from None


def default_network(**fields: Any) -> NetworkModel:
    """The network used when nothing names one: 1 GB/s links, nothing else.

    It is named ``"default"`` so that results say that no model was chosen;
    ``fields`` override its fields (``hop_latency_s=1e-6``).

    Examples
    --------
    >>> from wafercoll import machines
    >>> net = machines.default_network()
    >>> net.name, net.bandwidth_Bps, net.hop_latency_s
    ('default', 1000000000.0, 0.0)
    """
    fields.setdefault("bandwidth_Bps", DEFAULT_BANDWIDTH_BPS)
    fields.setdefault("name", "default")
    return NetworkModel(**fields)


def network_model(
    name: str | None = None,
    *,
    base: NetworkModel | None = None,
    size_bytes: int | None = None,
    **overrides: Any,
) -> NetworkModel:
    """A network model from a preset name, a machine's preset or the default.

    Parameters
    ----------
    name : str, optional
        A preset of :func:`network_presets`; it wins over ``base``.
    base : NetworkModel, optional
        The model to start from without ``name`` (a machine's preset, as
        :func:`resolve` returns it); without either,
        :func:`default_network`.
    size_bytes : int, optional
        For presets that depend on the message size.
    **overrides
        Fields of :class:`~wafercoll.NetworkModel` to change; ``None``
        values are ignored.

    Raises
    ------
    ValueError, TypeError
        As :func:`preset` and :class:`~wafercoll.NetworkModel` do.

    Examples
    --------
    >>> from wafercoll import machines
    >>> machines.network_model(hop_latency_s=1e-6).hop_latency_s
    1e-06
    >>> machines.network_model("mcm_table_ii", alpha_s=1e-6).name
    'mcm_table_ii'
    """
    given = {k: v for k, v in overrides.items() if v is not None}
    model = preset(name, size_bytes=size_bytes) if name is not None else base
    if model is None:
        return default_network(**given)
    return model.replace(**given) if given else model
