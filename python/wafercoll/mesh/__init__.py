"""Collectives on meshes of chiplets: rings, trees, MultiTree and TTO.

Calling the module builds a mesh topology: ``wc.mesh(rows, cols)`` is
:func:`wafercoll.topology.mesh`.
"""

from __future__ import annotations

from .._callable_module import make_callable
from ..topology import mesh as _mesh

__all__: list[str] = []

make_callable(__name__, _mesh)
