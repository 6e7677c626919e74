"""Modules that are also callable.

``wc.mesh`` and ``wc.torus`` are both topology constructors (``wc.torus(8, 8)``)
and the packages of the algorithms for those machines (``wc.torus.swing_peer``).
The package module's class is swapped for :class:`CallableModule`, whose call
forwards to the constructor named by the module's ``__call_target__``.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class CallableModule(types.ModuleType):
    """A module whose call forwards to its ``__call_target__``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__dict__["__call_target__"](*args, **kwargs)


def make_callable(module_name: str, target: Any) -> None:
    """Make ``sys.modules[module_name]`` callable as ``target``."""
    module = sys.modules[module_name]
    module.__dict__["__call_target__"] = target
    module.__class__ = CallableModule
