"""Every named machine in one table: topology, network preset and sources.

A :class:`Machine` pairs a topology constructor with the network model that
the papers give for it, and says where each number comes from. This table is
the one place network presets are defined: :func:`network_presets` reads it
(plus the three generic models ``ideal``, ``hockney`` and
``unit_timestep`` of :class:`wafercoll.NetworkModel`), the command line's
``--network PRESET`` and ``--topology MACHINE[:ARGS]`` read it, and so do
the experiments.

=====================  ===========================  ==========================
machine                topology                     network preset
=====================  ===========================  ==========================
``wse2_row``           ``wafer_row(P)``             ``wse2``
``wse2_grid``          ``wafer_grid(M, N)``         ``wse2``
``wormhole_n150``      ``wormhole_n150(row)``       ``wormhole_n150``
``mcm_table_ii``       ``mesh(rows, cols)``         ``mcm_table_ii``
``mcm_artifact``       ``mesh(rows, cols)``         ``mcm_artifact``
``mcm_unit_timestep``  ``mesh(rows, cols)``         ``mcm_unit_timestep``
``blue_waters``        ``cluster(nodes, ppn)``      ``blue_waters``
=====================  ===========================  ==========================

Examples
--------
>>> import wafercoll as wc
>>> m = wc.machines.get("mcm_table_ii")
>>> topo, net = m.make(3, 3)
>>> (topo.num_endpoints, net.name)
(9, 'mcm_table_ii')
>>> sorted(wc.machines.names())[:3]
['blue_waters', 'mcm_artifact', 'mcm_table_ii']
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .cluster.machine import cluster_machine
from .mcm.machine import artifact, table_ii, unit_timestep
from .simulate import NetworkModel
from .topology import Topology, mesh, wormhole_n150
from .wafer.builders import wafer_row
from .wafer.builders2d import wafer_grid
from .wafer.machine import wse2_network
from .wormhole.machine import n150_network

__all__ = ["Machine", "get", "machines", "names", "network_presets"]


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
            "mcm_unit_timestep",
            "a mesh of chiplets counted in the MCM paper's unit timesteps (paper 004)",
            "mesh",
            mesh,
            unit_timestep,
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
    )
}


def names() -> list[str]:
    """The machine names."""
    return list(_TABLE)


def machines() -> list[Machine]:
    """Every machine of the table."""
    return list(_TABLE.values())


def get(name: str) -> Machine:
    """The machine called ``name``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).
    """
    if not isinstance(name, str) or name not in _TABLE:
        raise ValueError(f"unknown machine {name!r}; known: {', '.join(_TABLE)}")
    return _TABLE[name]


def network_presets() -> dict[str, Callable[..., NetworkModel]]:
    """Named constructors of network models: the generic ones and every machine's.

    ``ideal``, ``hockney`` and ``unit_timestep`` are the generic models of
    :class:`~wafercoll.NetworkModel`; the others are the presets of the
    machines in the table (``wse2``, also under its earlier name ``wafer``,
    ``wormhole_n150``, ``mcm_table_ii``, ``mcm_artifact``, ``mcm_unit_timestep``,
    ``blue_waters``).
    """
    presets: dict[str, Callable[..., NetworkModel]] = {
        "ideal": NetworkModel.ideal,
        "hockney": NetworkModel.hockney,
        "unit_timestep": NetworkModel.unit_timestep,
        "wse2": wse2_network,
        "wafer": wse2_network,
    }
    for m in _TABLE.values():
        if m.network is not wse2_network:
            presets.setdefault(m.name, m.network)
    return presets
