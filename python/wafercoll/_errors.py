"""Exceptions and warnings of wafercoll."""

from __future__ import annotations

__all__ = [
    "CacheError",
    "ScheduleError",
    "SchedulerError",
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
