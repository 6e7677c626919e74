"""The XML layer of the MSCCL import: elements with their lines, checked numbers.

:class:`ElementParser` collects ``<algo>``, ``<gpu>``, ``<tb>`` and ``<step>``
with the line each opens on and refuses misplaced or unknown elements;
:func:`int_attr` reads an integer attribute or raises a :class:`FormatError`
naming the element and line; :class:`Step` is one ``<step>`` once read. What
the steps mean is :mod:`wafercoll.io.msccl_read`'s business.
"""

from __future__ import annotations

import xml.parsers.expat
from dataclasses import dataclass
from typing import Any

from ._common import FormatError

__all__ = ["ElementParser", "Step", "int_attr"]


@dataclass
class Step:
    """One ``<step>``: its attributes, its line, and its thread block's peers.

    ``send`` / ``recv`` are the thread block's peers (-1: none), ``chan`` its
    channel; ``depid`` / ``deps`` name the step this one waits for (-1: none).
    """

    gpu: int
    tb: int
    s: int
    kind: str
    srcbuf: str
    srcoff: int
    dstbuf: str
    dstoff: int
    cnt: int
    depid: int
    deps: int
    line: int
    send: int = -1
    recv: int = -1
    chan: int = 0

    def where(self) -> str:
        """How error messages and transfer labels name this step."""
        return f"GPU {self.gpu} tb {self.tb} step {self.s}"


class ElementParser:
    """Expat-based reader that keeps line numbers for every element."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.algo: dict[str, str] | None = None
        self.gpus: list[dict[str, Any]] = []
        self.cur_gpu: dict[str, Any] | None = None
        self.cur_tb: dict[str, Any] | None = None
        self.p = xml.parsers.expat.ParserCreate()
        self.p.StartElementHandler = self.start
        self.p.EndElementHandler = self.end

    def err(
        self, msg: str, element: str | None = None, line: int | None = None
    ) -> FormatError:
        return FormatError(
            msg,
            path=self.path,
            element=element,
            line=self.p.CurrentLineNumber if line is None else line,
        )

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        line = self.p.CurrentLineNumber
        if tag == "algo":
            if self.algo is not None:
                raise self.err("a file holds one <algo>", tag)
            self.algo = dict(attrs)
        elif tag == "gpu":
            if self.algo is None or self.cur_gpu is not None:
                raise self.err("<gpu> must be a child of <algo>", tag)
            self.cur_gpu = {"attrs": dict(attrs), "line": line, "tbs": []}
        elif tag == "tb":
            if self.cur_gpu is None or self.cur_tb is not None:
                raise self.err("<tb> must be a child of <gpu>", tag)
            self.cur_tb = {"attrs": dict(attrs), "line": line, "steps": []}
        elif tag == "step":
            if self.cur_tb is None:
                raise self.err("<step> must be a child of <tb>", tag)
            self.cur_tb["steps"].append((dict(attrs), line))
        else:
            raise self.err(f"unknown element <{tag}>", tag)

    def end(self, tag: str) -> None:
        if tag == "tb":
            self.cur_gpu["tbs"].append(self.cur_tb)
            self.cur_tb = None
        elif tag == "gpu":
            self.gpus.append(self.cur_gpu)
            self.cur_gpu = None

    def parse(self, text: str) -> None:
        try:
            self.p.Parse(text, True)
        except xml.parsers.expat.ExpatError as exc:
            raise FormatError(
                f"not well-formed XML: {xml.parsers.expat.ErrorString(exc.code)}",
                path=self.path,
                line=exc.lineno,
            ) from None
        if self.algo is None:
            raise FormatError("no <algo> element", path=self.path, element="algo")


def int_attr(
    attrs: dict[str, str],
    key: str,
    where: str,
    parser: ElementParser,
    element: str,
    line: int,
    default: int | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    """Integer attribute ``key``, or ``default`` when it is absent.

    ``where`` starts the message of the :class:`FormatError` raised for a
    missing, non-integer or out-of-range (``lo`` .. ``hi``) value.
    """
    if key not in attrs:
        if default is not None:
            return default
        raise parser.err(f"{where}: attribute {key!r} is missing", element, line)
    try:
        v = int(attrs[key])
    except ValueError:
        raise parser.err(
            f"{where}: attribute {key}={attrs[key]!r} is not an integer", element, line
        ) from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise parser.err(f"{where}: {key}={v} is outside {rng}", element, line)
    return v
