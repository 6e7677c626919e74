"""The network model: what moving bytes through a topology costs.

:class:`NetworkModel` holds the costs (bandwidth, latencies, packets,
switching, ports, reduction) that :func:`wafercoll.simulate` and
:mod:`wafercoll.bounds` both read; the checks of a (topology, network) pair
and of a simulation's inputs live here too, so that neither of those modules
needs the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _core
from ._util import as_bool, as_int, as_real, html_table
from .schedule import Schedule
from .topology import Topology

__all__ = ["NetworkModel", "check_machine", "check_schedule_inputs"]

_SWITCHING = ("cut_through", "store_and_forward")
# Ranges of the network parameters: wide enough for any machine, narrow enough
# that simulated times stay finite (1 B/s .. 1e18 B/s, delays up to a day).
_MIN_BPS, _MAX_BPS = 1.0, 1e18
_MAX_DELAY_S = 86_400.0
_MAX_PACKET_BYTES = 1 << 40


@dataclasses.dataclass(frozen=True)
class NetworkModel:
    """Costs of moving bytes through a topology (units are in the names).

    Parameters
    ----------
    bandwidth_Bps : float or None
        Bandwidth of every link in bytes per second; ``None`` takes each
        link's own bandwidth from the topology.
    hop_latency_s : float
        Latency added at every hop (on top of the link's own latency).
    alpha_s : float
        Start-up delay of every message.
    packet_bytes : int or None
        Packet size; ``None``: a whole message is one packet.
    switching : {"cut_through", "store_and_forward"}
        Whether a packet may leave a router before it has fully arrived.
    gamma_s_per_byte : float
        Reduction cost at the destination of a reducing transfer.
    ports : int or None
        Injection and ejection channels per endpoint; ``None``: unlimited and
        free (no port stages).
    flit_bytes : int or None
        Flit size: packets occupy whole flits, and under cut-through a head
        flit must arrive before the packet moves on.
    port_bandwidth_Bps : float or None
        Bandwidth of a port channel; ``None``: ``bandwidth_Bps`` (or, with
        topology bandwidths, the fastest link at the endpoint).
    port_latency_s : float
        Latency of a port channel (e.g. the wafer's ramp).
    clock_Hz : float or None
        Clock of the machine; when set, results also report cycles.
    copy_s_per_byte : float
        Cost at the destination of storing a copied byte (the counterpart of
        ``gamma_s_per_byte`` for copying transfers).
    pad_packets : bool
        Every packet occupies ``packet_bytes`` on the wire: the last packet
        of a transfer is padded to full size (fixed-size messages, as in
        BookSim, where a short chunk still costs a whole message). Needs
        ``packet_bytes``.
    dependencies : {"complete", "dataflow"}
        ``"complete"``: a transfer starts when its dependencies have completed
        (program order, as in MPI). ``"dataflow"``: a dependency that
        delivered data to the transfer's source lets it start once that data
        is delivered (processing overlaps with forwarding); a dependency that
        only shares a destination lets it travel at once but enter its last
        stage into that destination after the earlier transfer's last packet
        (writes stay ordered); other dependencies wait for completion. This
        is how a spatial dataflow machine such as the wafer streams.
    switch_overhead_s : float
        Time an ejection channel needs, once free, before it takes a transfer
        that follows another one into it: switching to a new incoming stream
        (on the wafer, reconfiguring the router between senders). The first
        transfer into a channel is set up before the start, and a stream that
        arrives later than the switch ends waits for nothing extra. Needs
        ``ports``.
    switch_reduce_Bps : float or None
        Input bytes per second that one switch rank (in-network reduction:
        NVLink SHARP, InfiniBand SHARP; see :mod:`wafercoll.schedule`) reduces;
        ``None``: reduction is free (the switch keeps up with any input). A
        switch that reduces ``k`` inputs at line rate ``B`` needs ``k B``.
        No vendor figure for this rate was found (see
        :mod:`wafercoll.innet`), so no preset sets it.
    switch_buffer_bytes : int or None
        The largest message into or out of a switch rank; a schedule with a
        larger one is refused (cut its data into more blocks). ``None``: no
        limit.
    ecmp : bool
        Equal-cost multipath per flow. ``False``: every message follows the
        topology's route. ``True``: each transfer's copy to one destination
        (a flow) takes a shortest path in hops (through hidden routers only,
        where the topology has any), choosing at every node among
        the out-links one hop nearer its destination (in increasing link id)
        number ``splitmix64(t * 2**32 + slot) ^ splitmix64(node)`` modulo
        their count, ``t`` the transfer and ``slot`` its destination slot
        (SplitMix64: Steele, Lea and Flood, OOPSLA 2014). A flow keeps its
        path; different flows spread over a fat tree's or NVSwitch chips'
        equal paths. Needs ``nodes x endpoints <= 2**27``.
    spray : bool
        Packet spraying: each packet of a transfer to one destination takes
        a shortest path in hops of its own. Where several out-links lead one
        hop nearer, the packets through a node are dealt to them by smooth
        weighted round robin, weights in proportion to the links'
        bandwidths (the smallest integers, up to 8 per unit of the slowest
        link, in their exact ratio: a DGX H100 GPU's 5, 4, 4 and 5 NVLinks to
        its four NVSwitch chips; else the ratios rounded to eighths, at most
        1024 each), the sequence rotated per flow by the hash of ``ecmp``.
        Packet ``k`` takes entry ``(k // stride + rotation) % length``,
        ``stride`` the product of the sequence lengths of its earlier
        choices; so ``n`` packets over ``c`` equal links put
        ``floor(n / c)`` or ``ceil(n / c)`` on each, and a source whose
        first links part sends on all of them at once. Transfers with
        several destinations follow the topology's routes. Spraying acts
        per packet: give ``packet_bytes`` (a whole message is one packet
        otherwise). Needs ``dependencies="complete"``, no
        ``switch_overhead_s`` and ``ecmp=False``; same size limit as
        ``ecmp``.
    name : str
        Label of the model (presets set it).

    Examples
    --------
    >>> import wafercoll as wc
    >>> net = wc.NetworkModel(1e9, hop_latency_s=1e-6, packet_bytes=4096)
    >>> net.replace(switching="store_and_forward").switching
    'store_and_forward'
    """

    bandwidth_Bps: float | None
    hop_latency_s: float = 0.0
    alpha_s: float = 0.0
    packet_bytes: int | None = None
    switching: str = "cut_through"
    gamma_s_per_byte: float = 0.0
    ports: int | None = None
    flit_bytes: int | None = None
    port_bandwidth_Bps: float | None = None
    port_latency_s: float = 0.0
    clock_Hz: float | None = None
    copy_s_per_byte: float = 0.0
    dependencies: str = "complete"
    name: str = "custom"
    pad_packets: bool = False
    switch_overhead_s: float = 0.0
    switch_reduce_Bps: float | None = None
    switch_buffer_bytes: int | None = None
    ecmp: bool = False
    spray: bool = False

    def __post_init__(self) -> None:
        def fix(field: str, value: Any) -> None:
            object.__setattr__(self, field, value)

        if self.bandwidth_Bps is not None:
            fix(
                "bandwidth_Bps",
                as_real(
                    self.bandwidth_Bps, "bandwidth_Bps", _MIN_BPS, maximum=_MAX_BPS
                ),
            )
        for key in ("hop_latency_s", "alpha_s", "port_latency_s", "switch_overhead_s"):
            fix(key, as_real(getattr(self, key), key, 0.0, maximum=_MAX_DELAY_S))
        if self.packet_bytes is not None:
            fix(
                "packet_bytes",
                as_int(self.packet_bytes, "packet_bytes", 1, _MAX_PACKET_BYTES),
            )
        if self.switching not in _SWITCHING:
            raise ValueError(
                f"switching must be 'cut_through' or 'store_and_forward', "
                f"got {self.switching!r}"
            )
        fix(
            "gamma_s_per_byte",
            as_real(self.gamma_s_per_byte, "gamma_s_per_byte", 0.0, maximum=1.0),
        )
        if self.ports is not None:
            fix("ports", as_int(self.ports, "ports", 1, 1024))
        if self.flit_bytes is not None:
            fix(
                "flit_bytes",
                as_int(self.flit_bytes, "flit_bytes", 1, _MAX_PACKET_BYTES),
            )
            if self.packet_bytes is not None and self.flit_bytes > self.packet_bytes:
                raise ValueError(
                    f"flit_bytes = {self.flit_bytes} must not exceed "
                    f"packet_bytes = {self.packet_bytes}"
                )
        if self.port_bandwidth_Bps is not None:
            fix(
                "port_bandwidth_Bps",
                as_real(
                    self.port_bandwidth_Bps,
                    "port_bandwidth_Bps",
                    _MIN_BPS,
                    maximum=_MAX_BPS,
                ),
            )
        if self.clock_Hz is not None:
            fix("clock_Hz", as_real(self.clock_Hz, "clock_Hz", 1e-6, maximum=1e18))
        fix(
            "copy_s_per_byte",
            as_real(self.copy_s_per_byte, "copy_s_per_byte", 0.0, maximum=1.0),
        )
        if self.dependencies not in ("complete", "dataflow"):
            raise ValueError(
                "dependencies must be 'complete' or 'dataflow', "
                f"got {self.dependencies!r}"
            )
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        for key in ("pad_packets", "ecmp", "spray"):
            fix(key, as_bool(getattr(self, key), key))
        if self.spray and self.ecmp:
            raise ValueError(
                "spray and ecmp exclude each other: choose per packet (spray=True) "
                "or per flow (ecmp=True)"
            )
        if self.spray and self.dependencies != "complete":
            raise ValueError(
                "spray=True needs dependencies='complete' (dataflow streams follow "
                "one route)"
            )
        if self.spray and self.switch_overhead_s > 0:
            raise ValueError(
                "spray=True needs switch_overhead_s = 0 (a sprayed transfer's "
                "packets reach an ejection channel out of order)"
            )
        if self.pad_packets and self.packet_bytes is None:
            raise ValueError("pad_packets=True needs packet_bytes (the padded size)")
        if self.switch_reduce_Bps is not None:
            fix(
                "switch_reduce_Bps",
                as_real(
                    self.switch_reduce_Bps,
                    "switch_reduce_Bps",
                    _MIN_BPS,
                    maximum=_MAX_BPS,
                ),
            )
        if self.switch_buffer_bytes is not None:
            fix(
                "switch_buffer_bytes",
                as_int(
                    self.switch_buffer_bytes,
                    "switch_buffer_bytes",
                    1,
                    _MAX_PACKET_BYTES,
                ),
            )
        if self.switch_overhead_s > 0 and self.ports is None:
            raise ValueError(
                "switch_overhead_s > 0 needs ports (it is charged on the "
                "endpoints' ejection channels)"
            )

    # -- presets --------------------------------------------------------------
    @classmethod
    def ideal(cls, bandwidth_Bps: float = 1e9) -> NetworkModel:
        """Bandwidth only: no latency, no start-up, messages as one packet."""
        return cls(bandwidth_Bps, name="ideal")

    @classmethod
    def hockney(cls, alpha_s: float, bandwidth_Bps: float) -> NetworkModel:
        """The alpha-beta (Hockney) model: ``alpha + S / bandwidth`` per message.

        Hockney, "The communication challenge for MPP", Parallel Computing
        20(3), 1994.
        """
        return cls(bandwidth_Bps, alpha_s=alpha_s, name="hockney")

    @classmethod
    def unit_timestep(cls, piece_bytes: int) -> NetworkModel:
        """One piece of ``piece_bytes`` per link per timestep, store-and-forward.

        Time is measured in timesteps (``clock_Hz = 1``: ``result.cycles`` is
        the number of timesteps). A transfer of ``k`` pieces over ``h`` hops
        takes ``h + k - 1`` timesteps when its packets are pieces; with the
        default (a transfer is one packet) it takes ``h * k``. This is the
        counting of timestep figures in the collective-algorithm literature.
        """
        p = as_int(piece_bytes, "piece_bytes", 1)
        return cls(
            float(p), switching="store_and_forward", clock_Hz=1.0, name="unit_timestep"
        )

    @classmethod
    def loggp(
        cls, L_s: float, o_s: float, g_s: float, G_s_per_byte: float
    ) -> NetworkModel:
        """LogGP (Alexandrov et al., SPAA 1995), for :func:`wafercoll.topology.star`.

        LogGOPSim charges a message of ``s`` bytes ``o`` at the sender, ``L``
        in the network, ``(s - 1) G`` of transmission and ``o`` at the
        receiver: ``2 o + L + (s - 1) G`` end to end (spcl/LogGOPSim,
        ``src/LogGOPSim/LogGOPSim.cpp``). On a star (every rank's uplink
        into one switch and downlink out of it), this model charges
        ``alpha = 2 o``, ``L / 2`` per hop and ``G`` per byte: ``2 o + L + s G``
        for a message alone, and a rank's messages share its uplink (sends)
        and downlink (receives) as LogGOPSim's NIC serializes them.

        Differences from LogGOPSim: the last byte's ``G`` is charged (one
        ``G`` per message), the per-message gap ``g`` is not modelled (the
        link is busy ``s G`` per message, so ``g`` matters only when it
        exceeds that), and ``o`` is a start-up delay, not CPU time that
        serializes a rank's operations. All times in seconds.
        """
        L = as_real(L_s, "L_s", 0.0)
        o = as_real(o_s, "o_s", 0.0)
        as_real(g_s, "g_s", 0.0)
        G = as_real(G_s_per_byte, "G_s_per_byte", positive=True)
        return cls(1.0 / G, hop_latency_s=L / 2, alpha_s=2 * o, name="loggp")

    def replace(self, **changes: Any) -> NetworkModel:
        """A copy with some fields changed (every field is overridable)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The model as plain data."""
        return dataclasses.asdict(self)

    def _repr_html_(self) -> str:
        return html_table(f"Network model {self.name}", self.to_dict().items())

    def _core_model(self) -> Any:
        """The compiled core's model of this network (``_core.NetworkModel``)."""
        m = _core.NetworkModel()
        m.bandwidth_Bps = self.bandwidth_Bps or 0.0
        m.hop_latency_s = self.hop_latency_s
        m.alpha_s = self.alpha_s
        m.packet_bytes = self.packet_bytes or 0
        m.flit_bytes = self.flit_bytes or 0
        m.switching = self.switching
        m.gamma_s_per_byte = self.gamma_s_per_byte
        m.copy_s_per_byte = self.copy_s_per_byte
        m.pad_packets = self.pad_packets
        m.dependencies = self.dependencies
        m.ports = self.ports or 0
        m.port_bandwidth_Bps = self.port_bandwidth_Bps or 0.0
        m.port_latency_s = self.port_latency_s
        m.switch_overhead_s = self.switch_overhead_s
        m.clock_Hz = self.clock_Hz or 0.0
        m.switch_reduce_Bps = self.switch_reduce_Bps or 0.0
        m.switch_buffer_bytes = self.switch_buffer_bytes or 0
        m.ecmp = self.ecmp
        m.spray = self.spray
        return m


def check_schedule_inputs(
    schedule: Any, topology: Any, network: Any, placement: Any
) -> tuple[Schedule, Topology, NetworkModel, list[int]]:
    """Check the arguments of a simulation or a bound; the placement as a list.

    Raises
    ------
    TypeError
        Unless a Schedule, a Topology, a NetworkModel and, when given, a
        sequence of endpoint ids.
    ValueError
        For a negative endpoint id.
    """
    if not isinstance(schedule, Schedule):
        raise TypeError(
            f"schedule must be a wafercoll.Schedule, got {type(schedule).__name__}"
        )
    check_machine(topology, network)
    if placement is None:
        return schedule, topology, network, []
    if isinstance(placement, (str, bytes)) or not isinstance(
        placement, (Sequence, np.ndarray)
    ):
        raise TypeError(
            "placement must be a sequence of endpoint ids, one per rank (a switch "
            "rank's: a hidden router)"
        )
    pl = [as_int(x, f"placement[{i}]", 0) for i, x in enumerate(placement)]
    return schedule, topology, network, pl


def check_machine(topology: Any, network: Any) -> None:
    """TypeError unless a Topology and a NetworkModel."""
    if not isinstance(topology, Topology):
        raise TypeError(
            f"topology must be a wafercoll.Topology, got {type(topology).__name__}"
        )
    if not isinstance(network, NetworkModel):
        raise TypeError(
            f"network must be a wafercoll.NetworkModel, got {type(network).__name__}"
        )
