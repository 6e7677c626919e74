"""GOAL import: wafercoll.io.read_goal on files of 4,096 to 65,536 ranks.

Two schedules of p log2 p messages each, written the way LogGOPSim's schedgen
writes GOAL (one ``lN:`` operation per line, ``requires`` lines after them):

(a) dissemination barrier (Hensgen, Finkel, Manber 1988): in round k rank r
    sends to r + 2^k and receives from r - 2^k (mod p); its round-k send
    requires its round-(k-1) receive.
(b) recursive-doubling allreduce: in round k rank r exchanges 4 KiB with
    r XOR 2^k, then a ``calc`` (the reduction) requires both; the next
    round's send and receive require that calc.

Each file is read ``--repeat`` times and the best wall time kept; transfers
per second = messages / best time (target: at least 1,000,000). After
timing, each schedule is checked against closed forms: p log2 p transfers,
every peer at a power-of-two distance, and the number of dependencies, which
follows from the reader's rule that a message waits for the transfers its
send and its receive wait for: (a) one per message after round 0, p (L - 1)
in all; (b) 2k for a message of round k (the k receives before it at each
of the two ranks, through the calcs), p L (L - 1) in all, with L = log2 p.

``--reference`` also times the former Python reader (tests/goal_reference.py,
the reference the tests compare the core with) once per file: minutes at
16,384 ranks.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from _common import best_of, main, print_table, verdict

import wafercoll as wc

TARGET = 1_000_000  # transfers per second


def dissemination(p: int, size: int = 8) -> Iterator[str]:
    """The lines of a dissemination barrier on ``p`` ranks."""
    rounds = (p - 1).bit_length()
    yield f"// dissemination barrier, {p} ranks, {size} B messages"
    yield f"num_ranks {p}"
    for r in range(p):
        yield f"rank {r} {{"
        for k in range(rounds):
            s, v = 2 * k + 1, 2 * k + 2
            yield f"l{s}: send {size}b to {(r + (1 << k)) % p} tag {k}"
            yield f"l{v}: recv {size}b from {(r - (1 << k)) % p} tag {k}"
            if k:
                yield f"l{s} requires l{s - 1}"
        yield "}"


def recursive_doubling(p: int, size: int = 4096) -> Iterator[str]:
    """The lines of a recursive-doubling allreduce on ``p`` (a power of 2) ranks."""
    rounds = (p - 1).bit_length()
    yield f"// recursive-doubling allreduce, {p} ranks, {size} B"
    yield f"num_ranks {p}"
    for r in range(p):
        yield f"rank {r} {{"
        for k in range(rounds):
            s, v, c = 3 * k + 1, 3 * k + 2, 3 * k + 3
            peer = r ^ (1 << k)
            yield f"l{s}: send {size}b to {peer} tag {k}"
            yield f"l{v}: recv {size}b from {peer} tag {k}"
            yield f"l{c}: calc 100"
            yield f"l{c} requires l{v}"
            yield f"l{c} requires l{s}"
            if k:
                yield f"l{s} requires l{s - 1}"
                yield f"l{v} requires l{s - 1}"
        yield "}"


def write(path: Path, lines: Iterator[str]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) >= 1 << 16:
                fh.write("\n".join(batch) + "\n")
                batch.clear()
        fh.write("\n".join(batch) + "\n")


def check(s: wc.Schedule, p: int, kind: str) -> str:
    """Closed forms the read schedule must meet (module docstring)."""
    levels = (p - 1).bit_length()
    src, dst = s.src, s.dst
    deps, _ = s.dependencies()
    if kind == "dissemination":
        dist = (dst.astype(np.int64) - src) % p
        want_deps = p * (levels - 1)
    else:
        dist = (src ^ dst).astype(np.int64)
        want_deps = p * levels * (levels - 1)
    problems = []
    if s.num_transfers != p * levels:
        problems.append(f"{s.num_transfers} transfers, want {p * levels}")
    if not bool(np.all((dist > 0) & ((dist & (dist - 1)) == 0))):
        problems.append("a peer at a distance that is not a power of 2")
    if deps.size != want_deps:
        problems.append(f"{deps.size} dependencies, want {want_deps}")
    if problems:
        raise AssertionError(f"{kind} p={p}: " + "; ".join(problems))
    return f"{deps.size:,} deps"


CASES: dict[str, Callable[[int], Iterator[str]]] = {
    "dissemination": dissemination,
    "recursive_doubling": recursive_doubling,
}


def reference_reader() -> Callable[[Any], wc.Schedule]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from goal_reference import read_goal_reference

    return read_goal_reference


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ranks", type=int, nargs="+", default=[4096, 16384, 65536], metavar="P"
    )
    parser.add_argument("--dir", help="keep the GOAL files here (default: temporary)")
    parser.add_argument(
        "--reference", action="store_true", help="also time the Python reference"
    )


def report(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.dir or tmp)
        where.mkdir(parents=True, exist_ok=True)
        for p in args.ranks:
            for kind, lines in CASES.items():
                path = where / f"{kind}_{p}.goal"
                if not path.exists():
                    write(path, lines(p))
                seconds, s = best_of(lambda f=path: wc.io.read_goal(f), args.repeat)
                row = {
                    "case": f"{kind} p={p}",
                    "MB": os.path.getsize(path) / 1e6,
                    "transfers": s.num_transfers,
                    "best_s": seconds,
                    "Mtransfers_per_s": s.num_transfers / seconds / 1e6,
                    "check": check(s, p, kind),
                }
                if args.reference:
                    t0 = time.perf_counter()
                    before = reference_reader()(path)
                    row["reference_s"] = time.perf_counter() - t0
                    if before != s:
                        raise AssertionError(f"{kind} p={p}: not the reference's")
                rows.append(row)
                del s
    columns = [
        ("case", ""),
        ("MB", ".1f"),
        ("transfers", ",d"),
        ("best_s", ".3f"),
        ("Mtransfers_per_s", ".2f"),
        ("check", ""),
    ]
    if args.reference:
        columns.append(("reference_s", ".1f"))
    print_table(rows, columns)
    slow = [r["case"] for r in rows if r["Mtransfers_per_s"] * 1e6 < TARGET]
    print(verdict(not slow, "target of 1 M transfers/s on every file", slow))
    return rows


if __name__ == "__main__":
    raise SystemExit(main(__doc__, report, repeat=3, options=options))
