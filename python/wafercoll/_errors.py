"""Exceptions and warnings of wafercoll."""

from __future__ import annotations

__all__ = [
    "CacheError",
    "ScheduleError",
    "SchedulerError",
    "SimulationTooLarge",
    "WafercollWarning",
    "WorkerLostError",
]


class ScheduleError(ValueError):
    """A schedule is malformed or does not compute its collective.

    Raised by :meth:`wafercoll.Schedule.from_json` and :func:`wafercoll.verify`.

    Attributes
    ----------
    kind : str
        What went wrong: ``"field"`` (a malformed transfer), ``"dependency"``,
        ``"cycle"``, ``"race"`` (two transfers touch a block without an order
        that makes the result independent of timing), ``"empty_read"`` (a
        block is sent before anything arrived in it), ``"double_count"``,
        ``"missing"`` or ``"unexpected"`` (the postcondition fails), or
        ``"unverifiable"`` (the schedule was read from a format without data,
        such as GOAL, and carries no block semantics).
    transfer, rank, block : int or None
        The first offending transfer (in dependency order), rank and block,
        where they apply.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str = "field",
        transfer: int | None = None,
        rank: int | None = None,
        block: int | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.transfer = None if transfer is None or transfer < 0 else int(transfer)
        self.rank = None if rank is None or rank < 0 else int(rank)
        self.block = None if block is None or block < 0 else int(block)


class SimulationTooLarge(ValueError):
    """A simulation would take more packet-stage events than ``max_events``.

    Raised by :func:`wafercoll.simulate` and :func:`wafercoll.simulate_tasks`
    before any run state is allocated, so that a sweep can skip a run it
    cannot afford and still record how large it would have been, without
    preparing the run twice (once for :func:`wafercoll.simulation_events`,
    once to simulate).

    Attributes
    ----------
    events : int
        The packet-stage events counted: exactly what the run would take,
        except with packet spraying, where the count stops early at the
        packets of one-destination transfers (a lower bound).
    max_events : int
        The limit the run was refused under.

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", 4, 4_000_000)
    >>> net = wc.NetworkModel(1e9, packet_bytes=1000)
    >>> try:
    ...     wc.simulate(s, wc.ring(4), net, max_events=100)
    ... except wc.SimulationTooLarge as e:
    ...     print(e.events, e.max_events)
    24000 100
    """

    def __init__(self, message: str, *, events: int, max_events: int) -> None:
        super().__init__(message)
        self.events = int(events)
        self.max_events = int(max_events)


class WafercollWarning(UserWarning):
    """Base class of the warnings wafercoll emits."""


class CacheError(OSError):
    """A sweep's cache directory cannot be created or written.

    Raised by :func:`wafercoll.sweep` before any point is computed.

    Attributes
    ----------
    path : str
        The directory.
    """

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class SchedulerError(ConnectionError):
    """A Dask scheduler cannot be reached (:func:`wafercoll.sweep`).

    Attributes
    ----------
    address : str
        The scheduler's address as given.
    """

    def __init__(self, message: str, address: str) -> None:
        super().__init__(message)
        self.address = address


class WorkerLostError(RuntimeError):
    """A worker process died while it computed sweep points.

    Attributes
    ----------
    unfinished : list
        The points (dicts of the grid's keys) that did not finish.
    """

    def __init__(self, message: str, unfinished: list | None = None) -> None:
        super().__init__(message)
        self.unfinished = list(unfinished or [])
