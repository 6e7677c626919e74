"""Node-aware collectives on clusters of multi-core nodes (RD, SMP, NAP)."""

from __future__ import annotations

__all__: list[str] = []
