"""Collectives on tori: Swing and recursive doubling, the Wormhole n150.

Calling the module builds a torus topology: ``wc.torus(rows, cols)`` is
:func:`wafercoll.topology.torus`.
"""

from __future__ import annotations

from .._callable_module import make_callable
from ..topology import torus as _torus

__all__: list[str] = []

make_callable(__name__, _torus)
