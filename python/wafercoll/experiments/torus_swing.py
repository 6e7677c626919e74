"""Experiments of paper 002 (Swing and recursive doubling on tori, Wormhole n150)."""

from __future__ import annotations
