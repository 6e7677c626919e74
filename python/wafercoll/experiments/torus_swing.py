"""Experiments of paper 002 (Swing and recursive doubling on tori and the Wormhole n150)."""

from __future__ import annotations
