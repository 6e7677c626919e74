"""Shared by the tests of the GPU and datacenter fabrics and of multipath
routing: the small machine specs every fabric test runs on, and SplitMix64
(Steele, Lea and Flood, OOPSLA 2014) written independently of the core, as
the stated hash of ECMP and packet spraying."""

from __future__ import annotations

#: One small instance of every fabric family in wafercoll.machines.
FABRIC_PRESETS = [
    "dgx_h100",
    "dgx_b200",
    "nvl72",
    "dgx_h100_x16_rail:2",
    "fat_tree_k8:4",
    "dragonfly_a8:4x2x2",
]

MASK = (1 << 64) - 1


def splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)
