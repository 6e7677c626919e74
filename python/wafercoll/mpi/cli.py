"""``wafercoll mpi``: benchmarks on a real MPI job, and the model fit.

* ``bench``: time a schedule next to MPI_Allreduce;
* ``pingpong``: round trips by locality and concurrent pairs (the input of
  the paper 001 models);
* ``fit``: fit a cluster parameter set to a ``pingpong`` CSV and, with
  ``--bench``, put a ``bench`` CSV's measured times beside the model (no MPI
  needed)::

    mpirun -n 8 wafercoll mpi pingpong --ppn 4 --csv pp.csv
    mpirun -n 8 wafercoll mpi bench --ppn 4 --csv bench.csv
    wafercoll mpi fit pp.csv --bench bench.csv --plot model.png

``python -m wafercoll.mpi`` runs the same commands.

Run ``bench`` and ``pingpong`` under ``mpirun``; every rank takes part, rank 0
prints the table and writes the CSV. A rank that fails (bad arguments, a build error, a
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
    """Comma-separated sizes with units (B, kB, KiB, MiB, GiB...)."""
    from ..units import parse_size

    out = []
    for item in text.split(","):
        try:
            v = parse_size(item, "--sizes")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if v < 1:
            raise argparse.ArgumentTypeError("--sizes: sizes must be >= 1 byte")
        out.append(v)
    return out


def add_subcommands(ap: argparse.ArgumentParser) -> None:
    """Add ``bench``, ``pingpong`` and ``fit`` to a parser (``wafercoll mpi``)."""
    sub = ap.add_subparsers(dest="mpi_command", metavar="COMMAND", required=True)
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
    pp = sub.add_parser(
        "pingpong", help="round trips by locality and number of concurrent pairs"
    )
    pp.add_argument(
        "--ppn",
        type=int,
        default=None,
        help="ranks per logical node (default: shared-memory split)",
    )
    pp.add_argument(
        "--sizes",
        type=_sizes,
        default=[4 << k for k in range(17)],
        help="comma-separated message sizes (default 4 B .. 256 KiB, powers of 2)",
    )
    pp.add_argument("--max-pairs", type=int, default=None)
    pp.add_argument("--repeats", type=int, default=20)
    pp.add_argument("--timeout", type=float, default=60.0)
    pp.add_argument("--csv", default="wafercoll_pingpong.csv")
    f = sub.add_parser(
        "fit", help="fit the cluster model to a pingpong CSV (no MPI needed)"
    )
    f.add_argument("pingpong_csv")
    f.add_argument("--bench", nargs="+", default=None, help="bench CSV(s) to compare")
    f.add_argument("--plot", default=None, help="figure of the comparison (PNG/SVG)")
    f.add_argument("--network", choices=("max_rate", "postal"), default="max_rate")


def _write_check(path: str) -> str | None:
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        return f"cannot write into {folder}"
    return None


def run_pingpong(args: argparse.Namespace) -> int:
    """The ``pingpong`` command; return the exit status."""
    from .executor import import_mpi
    from .layout import detect_layout
    from .pingpong import pingpong, write_pingpong_csv

    comm = import_mpi().COMM_WORLD
    ppn = args.ppn if args.ppn is not None else detect_layout(comm)[0]
    rows = pingpong(
        comm,
        args.sizes,
        ppn,
        max_pairs=args.max_pairs,
        repeats=args.repeats,
        timeout_s=args.timeout,
    )
    if comm.Get_rank() == 0:
        print(f"{'locality':<10}{'bytes':>10}{'pairs':>7}{'round trip [us]':>18}")
        for r in rows:
            print(
                f"{r['locality']:<10}{r['size_bytes']:>10}{r['pairs']:>7}"
                f"{r['round_trip_s'] * 1e6:>18.2f}"
            )
        if args.csv:
            write_pingpong_csv(
                args.csv,
                rows,
                f"wafercoll mpi pingpong, {comm.Get_size()} ranks, "
                f"ppn {ppn}, {args.repeats} round trips per point",
            )
    return 0


def run_fit(args: argparse.Namespace) -> int:
    """The ``fit`` command; return the exit status."""
    from ..cluster import costs, model

    params = model.fit_pingpong(
        args.pingpong_csv,
        name=os.path.basename(args.pingpong_csv),
        network=args.network,
    )
    print(f"fitted {params.name} ({args.network}):")
    print(f"{'class':<10}{'protocol':<12}{'alpha [us]':>12}{'beta [ns/B]':>13}")
    for loc in model.LOCALITIES:
        for proto in model.PROTOCOLS:
            pp = params.classes[loc][proto]
            print(
                f"{loc:<10}{proto:<12}{pp.alpha_s * 1e6:>12.3f}"
                f"{pp.beta_s_per_byte * 1e9:>13.4f}"
            )
    rn = params.nic_Bps["rendezvous"]
    print(f"NIC rate (rendezvous): {'none' if rn is None else f'{rn / 1e9:.3f} GB/s'}")
    if args.bench is None:
        return 0
    rows = [r for path in args.bench for r in costs.read_bench(path)]
    cols = costs.compare_bench(rows, params, network=args.network)
    if not cols["algorithm"]:
        print(
            f"{', '.join(args.bench)}: no rows of rd, smp, nap or dissemination",
            file=sys.stderr,
        )
        return 1
    print(
        f"{'algorithm':<15}{'p':>5}{'ppn':>5}{'bytes':>10}{'measured [us]':>15}"
        f"{'model [us]':>12}{'ratio':>8}"
    )
    for i in range(len(cols["algorithm"])):
        print(
            f"{cols['algorithm'][i]:<15}{cols['ranks'][i]:>5}{cols['ppn'][i]:>5}"
            f"{cols['size_bytes'][i]:>10}{cols['measured_s'][i] * 1e6:>15.1f}"
            f"{cols['model_s'][i] * 1e6:>12.1f}{cols['measured_over_model'][i]:>8.2f}"
        )
    if args.plot:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from .._util import atomic_path

        fig = Figure(figsize=(6.4, 4.2), layout="constrained")
        FigureCanvasAgg(fig)
        costs.plot_bench(cols, fig.add_subplot())
        ext = os.path.splitext(args.plot)[1].lstrip(".").lower() or "png"
        with atomic_path(args.plot) as tmp:
            fig.savefig(tmp, format=ext, dpi=150)
        print(f"wrote {args.plot}")
    return 0


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


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``wafercoll mpi`` command; return the exit status."""
    for opt in ("csv", "plot"):
        path = getattr(args, opt, None)
        problem = _write_check(path) if path else None
        if problem:
            print(f"error: --{opt}: {problem}", file=sys.stderr)
            return 2
    if args.mpi_command == "fit":
        try:
            return run_fit(args)
        except (OSError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    from .executor import abort_on_error, import_mpi

    try:
        import_mpi()
    except ImportError as exc:  # pragma: no cover - depends on environment
        print(f"wafercoll.mpi: error: {exc}", file=sys.stderr, flush=True)
        return 1
    with abort_on_error():
        return bench(args) if args.mpi_command == "bench" else run_pingpong(args)
    return 1  # pragma: no cover - abort_on_error re-raises


def main(argv: Sequence[str] | None = None) -> int:
    """``wafercoll mpi ARGS`` (what ``python -m wafercoll.mpi ARGS`` runs).

    The same parser and runner as the ``mpi`` command of the wafercoll CLI,
    built here so that this module does not import the CLI (which imports it).
    """
    ap = argparse.ArgumentParser(
        prog="wafercoll mpi", description="benchmarks on a real MPI job"
    )
    add_subcommands(ap)
    return run(ap.parse_args(sys.argv[1:] if argv is None else argv))
