"""``python -m wafercoll.mpi bench``: time a schedule next to MPI_Allreduce.

Run under ``mpirun``; every rank builds the schedule, rank 0 prints the table
and writes the CSV. A rank that fails (bad arguments, a build error, a
partner that does not answer within ``--timeout``) prints one line naming
itself and what it waited for, and aborts the whole job (``MPI_Abort``, exit
status 1), so no rank is left waiting.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from collections.abc import Sequence

import numpy as np

_DTYPES = {
    "float64": np.float64,
    "float32": np.float32,
    "int64": np.int64,
    "int32": np.int32,
}


def _sizes(text: str) -> list[int]:
    """Comma-separated sizes with the main CLI's units (B, kB, KiB, MiB, GiB...)."""
    from ..cli import _size

    out = []
    for item in text.split(","):
        try:
            v = _size(item)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"--sizes: {exc}") from None
        if v < 1:
            raise argparse.ArgumentTypeError("--sizes: sizes must be >= 1 byte")
        out.append(v)
    return out


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m wafercoll.mpi")
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time a schedule next to MPI_Allreduce")
    b.add_argument(
        "--algorithm",
        default="cluster_nap_allreduce",
        help="a registered allreduce builder (wafercoll list)",
    )
    b.add_argument(
        "--ppn",
        type=int,
        default=None,
        help="processes per node (default: shared-memory split)",
    )
    b.add_argument(
        "--sizes",
        type=_sizes,
        default=[8, 1024, 65536],
        help="comma-separated vector sizes in bytes (8,1KiB,1MiB,1GiB; kB and MB "
        "are powers of 1000)",
    )
    b.add_argument("--repeats", type=int, default=20)
    b.add_argument("--dtype", choices=sorted(_DTYPES), default="float64")
    b.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds one round may take before every rank fails",
    )
    b.add_argument(
        "--csv",
        default="wafercoll_mpi_bench.csv",
        help="CSV written by rank 0 ('' for none)",
    )
    b.add_argument("--seed", type=int, default=0)
    return ap


def bench(args: argparse.Namespace) -> int:
    """Run the benchmark; return the exit status."""
    import wafercoll as wc

    from .executor import MPIExecutor, import_mpi
    from .layout import detect_layout

    MPI = import_mpi()
    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    dtype = np.dtype(_DTYPES[args.dtype])
    if args.ppn is None:
        ppn, r2n = detect_layout(comm)
        if (r2n == np.arange(p) // ppn).all():
            r2n = None
    else:
        ppn, r2n = args.ppn, None
    info = {a.name: a for a in wc.algorithms()}.get(args.algorithm)
    if info is None or info.collective != "allreduce":
        raise ValueError(
            f"--algorithm must name an allreduce builder, got {args.algorithm!r}"
        )
    opts = {}
    if "ppn" in info.parameters:
        opts["ppn"] = ppn
    if "rank_to_node" in info.parameters and r2n is not None:
        opts["rank_to_node"] = r2n
    rows = []
    rng = np.random.default_rng(args.seed + rank)
    for size in args.sizes:
        if size % dtype.itemsize:
            raise ValueError(
                f"--sizes: {size} is not a multiple of the "
                f"{dtype.itemsize}-byte {dtype.name}"
            )
        elements = size // dtype.itemsize
        sched = wc.build(args.algorithm, p, size, **opts)
        ex = MPIExecutor(sched, elements, comm, dtype=dtype, timeout_s=args.timeout)
        x = rng.integers(-1000, 1000, size=elements).astype(dtype)
        ok = ex.check(x)
        t = ex.time(x, args.repeats)
        t_mpi = ex.time(x, args.repeats, baseline=True)
        rows.append(
            {
                "algorithm": args.algorithm,
                "ranks": p,
                "ppn": ppn,
                "size_bytes": size,
                "correct": ok,
                "time_s": t,
                "mpi_allreduce_s": t_mpi,
                "ratio": t / t_mpi,
            }
        )
    if rank == 0:
        print(
            f"{'algorithm':<24}{'p':>4}{'ppn':>5}{'bytes':>10}{'ok':>4}"
            f"{'time [us]':>12}{'MPI [us]':>12}{'ratio':>8}"
        )
        for r in rows:
            print(
                f"{r['algorithm']:<24}{r['ranks']:>4}{r['ppn']:>5}"
                f"{r['size_bytes']:>10}{'yes' if r['correct'] else 'NO':>4}"
                f"{r['time_s'] * 1e6:>12.1f}{r['mpi_allreduce_s'] * 1e6:>12.1f}"
                f"{r['ratio']:>8.2f}"
            )
        if args.csv:
            with open(args.csv, "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
    return 0 if all(r["correct"] for r in rows) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m wafercoll.mpi``."""
    args = _parser().parse_args(argv)
    if args.csv:
        folder = os.path.dirname(os.path.abspath(args.csv))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            print(f"error: --csv: cannot write into {folder}", file=sys.stderr)
            return 2
    from .executor import abort_on_error, import_mpi

    try:
        import_mpi()
    except ImportError as exc:  # pragma: no cover - depends on environment
        print(f"wafercoll.mpi: error: {exc}", file=sys.stderr, flush=True)
        return 1
    with abort_on_error():
        return bench(args)
    return 1  # pragma: no cover - abort_on_error re-raises


if __name__ == "__main__":
    sys.exit(main())
