"""Experiments of paper 001 (node-aware allreduce on clusters: RD, SMP, NAP)."""

from __future__ import annotations
