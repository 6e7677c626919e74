"""The XML layer of the MSCCL import: elements with their lines, checked numbers.

:class:`ElementParser` collects ``<algo>``, ``<gpu>``, ``<tb>`` and ``<step>``
with the line each opens on and refuses misplaced or unknown elements;
:func:`int_attr` reads an integer attribute or raises a :class:`FormatError`
naming the element and line; :class:`Step` is one ``<step>`` once read. What
the steps mean is :mod:`wafercoll.io.msccl_read`'s business.
"""

from __future__ import annotations

import re
import xml.parsers.expat
from dataclasses import dataclass
from typing import Any

from ._common import FormatError

__all__ = ["ElementParser", "Step", "int_attr"]


@dataclass
class Step:
    """One ``<step>``: its attributes, its line, and its thread block's peers.

    ``send`` / ``recv`` are the thread block's peers (-1: none), ``chan`` its
    channel; ``depid`` / ``deps`` name the step this one waits for (-1: none);
    ``hasdep`` says whether the step signals the steps that wait for it.
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
    hasdep: int = 0
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

    def parse(self, text: str | bytes) -> None:
        """Parse the document; bytes are decoded as their XML declaration says."""
        if isinstance(text, bytes):
            _check_encoding(text, self.path)
        try:
            self.p.Parse(text, True)
        except (LookupError, ValueError) as exc:
            # pyexpat looks a declared encoding up among Python's codecs.
            raise FormatError(
                f"the encoding the XML declaration names cannot be read: {exc}",
                path=self.path,
                line=1,
            ) from None
        except xml.parsers.expat.ExpatError as exc:
            raise FormatError(
                f"not well-formed XML: {xml.parsers.expat.ErrorString(exc.code)}",
                path=self.path,
                line=exc.lineno,
            ) from None
        if self.algo is None:
            raise FormatError("no <algo> element", path=self.path, element="algo")


#: An integer attribute as the MSCCL runtime's XML reader expects it: decimal
#: digits with an optional minus sign (no ``+``, spaces, ``_`` or ``0x``).
_INT = re.compile(r"-?[0-9]+\Z")

#: The start of an XML declaration that names its encoding.
_DECLARED = re.compile(rb"<\?xml[^>]*\sencoding\s*=", re.S)


def _check_encoding(data: bytes, path: str | None) -> None:
    """Refuse bytes that are not UTF-8 when nothing declares another encoding.

    A byte-order mark or an ``encoding`` in the XML declaration hands the
    decoding to expat (UTF-8, UTF-16 and Python's single-byte codecs).
    """
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:3] == b"\xef\xbb\xbf":
        return
    if _DECLARED.match(data.lstrip()[:200]):
        return
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            f"not UTF-8 text (byte {exc.start} is {data[exc.start]:#04x}) and no "
            'XML declaration names another encoding (e.g. <?xml version="1.0" '
            'encoding="latin-1"?>)',
            path=path,
            line=line,
        ) from None


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
    missing, non-integer or out-of-range (``lo`` .. ``hi``) value. Only
    decimal digits with an optional ``-`` are integers (``1.5``, ``nan``,
    ``0x10``, ``+1`` and `` 1`` are not).
    """
    if key not in attrs:
        if default is not None:
            return default
        raise parser.err(f"{where}: attribute {key!r} is missing", element, line)
    if not _INT.match(attrs[key]):
        raise parser.err(
            f"{where}: attribute {key}={attrs[key]!r} is not an integer", element, line
        )
    v = int(attrs[key])
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise parser.err(f"{where}: {key}={v} is outside {rng}", element, line)
    return v
