"""Read a schedule file of any supported format, chosen by its extension."""

from __future__ import annotations

import json
import os

from .._errors import ScheduleError
from ..schedule import Schedule
from ._common import FormatError
from .goal import read_goal
from .msccl import read_msccl

__all__ = ["read_schedule"]


def read_schedule(path: str | os.PathLike[str]) -> Schedule:
    """A schedule from a file: ``.xml`` MSCCL XML, ``.goal`` GOAL, else JSON.

    Raises
    ------
    ScheduleError
        For malformed content (the message names the file and the problem).
    OSError, UnicodeDecodeError
        When the file cannot be read.

    Examples
    --------
    >>> import tempfile, os, wafercoll as wc
    >>> path = os.path.join(tempfile.mkdtemp(), "r.json")
    >>> _ = wc.build("generic_ring_allreduce", 4, 64).to_json(path)
    >>> wc.io.read_schedule(path).num_ranks
    4
    """
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if ext in (".xml", ".goal"):
        try:
            return read_msccl(path) if ext == ".xml" else read_goal(path)
        except FormatError as exc:
            raise ScheduleError(str(exc)) from None
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        return Schedule.from_dict(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path}: malformed JSON: {exc}") from None
    except RecursionError:
        raise ScheduleError(f"{path}: JSON nested too deeply") from None
    except ScheduleError as exc:
        raise ScheduleError(
            f"{path}: {exc}",
            kind=exc.kind,
            transfer=exc.transfer,
            rank=exc.rank,
            block=exc.block,
        ) from None
    except (ValueError, TypeError) as exc:
        raise ScheduleError(f"{path}: {exc}") from None
