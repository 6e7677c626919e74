"""Experiments of paper 004 (MCM meshes of chiplets: rings, MultiTree, TTO)."""

from __future__ import annotations
