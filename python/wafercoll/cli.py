"""The ``wafercoll`` command line: parsing and printing only.

Subcommands: list, info, build, verify, simulate, advise, sweep, export,
reproduce, mpi (``wafercoll COMMAND --help``). One convention for every
command: ``-o/--output FILE`` (``-``, the default for most, is stdout) and
``--format {text,json,csv}`` where a command has those outputs; messages
about files written go to stderr when the data went to stdout.
``--topology`` (or ``--machine``) takes a spec of
:func:`wafercoll.machines.resolve`; sizes, rates and times take units
(:mod:`wafercoll.units`: ``64KiB``, ``25GB/s``, ``1us``).

Exit codes: 0 on success, 1 when a schedule is defective (or a file cannot be
written, or an experiment fails), 2 for errors in the arguments, 130 when
interrupted (Ctrl-C: the work stops within a second, worker processes and
threads included, and no file is left half-written).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import units
from ._util import atomic_path, csv_rows, human_bytes, human_seconds, write_atomic
from .machines import SPEC_HELP

__all__ = ["main"]


class UsageError(Exception):
    """An error in the arguments: reported without traceback, exit code 2."""


class Failure(Exception):
    """A file that cannot be read or written: reported as is, exit code 1."""


@contextlib.contextmanager
def _writing(path: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise Failure(f"cannot write {path}: {exc.strerror or exc}") from None


def _typed(parse: Callable[[str, str], Any], flag: str) -> Callable[[str], Any]:
    """An argparse type from a units parser; its message names ``flag``."""

    def convert(text: str) -> Any:
        try:
            return parse(text, flag)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__
    return convert


def _option(text: str) -> tuple[str, Any]:
    """``key=value``; the value is read as JSON when it parses, else a string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip().replace("-", "_"), parsed


def _add_output(p: argparse.ArgumentParser, formats: Sequence[str] = ()) -> None:
    p.add_argument(
        "-o", "--output", default="-", metavar="FILE", help="where (- = stdout)"
    )
    if formats:
        p.add_argument("--format", choices=formats, default=formats[0])


def _add_build_args(p: argparse.ArgumentParser) -> None:
    size = _typed(units.parse_size, "--size-bytes")
    p.add_argument(
        "--ranks", "-p", type=int, metavar="P", help="default: all endpoints"
    )
    p.add_argument("--size-bytes", "-s", type=size, metavar="S", help="64KiB, 1MB")
    p.add_argument("--root", type=int, metavar="R", help="root (rooted algorithms)")
    opt = "an algorithm parameter (wafercoll info NAME), repeatable"
    p.add_argument("--option", type=_option, action="append", default=[], help=opt)
    p.add_argument("--topology", "--machine", "-t", metavar="SPEC", help=SPEC_HELP)


def _add_source_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME", help="a registered algorithm")
    p.add_argument("--schedule", metavar="FILE", help="JSON, MSCCL .xml or GOAL .goal")
    _add_build_args(p)


def _add_network_args(p: argparse.ArgumentParser) -> None:
    preset = "wafercoll.network_presets() (default: the machine's, or 1 GB/s)"
    p.add_argument("--preset", "--network", "-n", metavar="PRESET", help=preset)
    time = units.parse_time
    for flag, field, parse, help_ in (
        ("--bandwidth", "bandwidth_Bps", units.parse_rate, "per link: 25GB/s, 1e9"),
        ("--latency", "hop_latency_s", time, "per hop: 1us, 500ns, 2e-6 (seconds)"),
        ("--alpha", "alpha_s", time, "start-up delay per message: 2us"),
        ("--gamma", "gamma_s_per_byte", time, "reduction time per byte: 0.1ns"),
        ("--packet", "packet_bytes", units.parse_size, "packet size: 4KiB"),
        ("--ports", "ports", int, "injection and ejection channels per endpoint"),
    ):
        kind = int if parse is int else _typed(parse, flag)
        p.add_argument(flag, dest=field, type=kind, metavar="X", help=help_)
    p.add_argument("--switching", choices=("cut_through", "store_and_forward"))
    p.add_argument(
        "--ecmp",
        action="store_const",
        const=True,
        default=None,
        help="equal-cost multipath: each flow picks one of the shortest paths",
    )
    p.add_argument(
        "--spray",
        action="store_const",
        const=True,
        default=None,
        help="packet spraying: packets are dealt over the shortest paths "
        "(give --packet)",
    )


def _parser() -> argparse.ArgumentParser:
    from . import __version__
    from .mpi.cli import add_subcommands

    parser = argparse.ArgumentParser(
        prog="wafercoll",
        description="Build, verify, simulate and reproduce collective schedules.",
    )
    parser.add_argument(
        "--version", action="version", version=f"wafercoll {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("list", help="list the registered algorithms")
    _add_output(p, ("text", "json"))
    p = sub.add_parser("info", help="an algorithm's collective, parameters and source")
    p.add_argument("name", metavar="NAME")
    _add_output(p, ("text", "json"))
    p = sub.add_parser("build", help="build and verify a schedule, write it as JSON")
    p.add_argument("name", metavar="NAME")
    _add_build_args(p)
    _add_output(p)
    p.add_argument("--indent", type=int, choices=range(17), metavar="0..16")
    p = sub.add_parser("verify", help="verify a schedule file or a built algorithm")
    p.add_argument("target", metavar="FILE|NAME")
    _add_build_args(p)
    p = sub.add_parser("simulate", help="simulate a schedule on a machine")
    _add_source_args(p)
    _add_network_args(p)
    p.add_argument(
        "--engine", choices=("wafercoll", "simgrid", "routers"), default="wafercoll"
    )
    p.add_argument(
        "--buffer-packets",
        type=int,
        metavar="N",
        help="with --engine routers: packets per link input buffer (default 16)",
    )
    p.add_argument("--trace", metavar="FILE", help="also write Trace Event JSON")
    _add_output(p, ("text", "json", "csv"))
    p = sub.add_parser("advise", help="rank every algorithm on a machine at a size")
    p.add_argument("--topology", "--machine", "-t", dest="topology", required=True)
    p.add_argument("--collective", "-c", default="allreduce")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--size-bytes", "-s", type=_typed(units.parse_size, "-s"))
    size.add_argument(
        "--matrix",
        metavar="FILE|moe:K=V,...",
        help="alltoallv bytes from rank i to j: a .npy/.csv/.json p x p matrix, or "
        "moe:tokens=4096,bytes=8KiB,top_k=2,zipf=1.0,experts=P,seed=0",
    )
    size.add_argument(
        "--sizes",
        type=_typed(units.parse_size_range, "--sizes"),
        metavar="LO:HI[:FACTOR]",
        help="every size from LO to HI, times FACTOR (default 4) each time",
    )
    _add_network_args(p)
    p.add_argument("--keep", type=int, default=3, metavar="K")
    p.add_argument("--exhaustive", action="store_true", help="simulate every one")
    p.add_argument("--all", action="store_true", help="list other families' too")
    p.add_argument("--plot", metavar="FILE", help="with --sizes: draw the chart")
    _add_output(p, ("text", "json", "csv"))
    p = sub.add_parser("sweep", help="run a grid of algorithms x machines x sizes")
    p.add_argument("spec", metavar="GRID.toml")
    p.add_argument("-o", "--output", default="sweep.csv", metavar="FILE")
    p.add_argument("--jobs", "-j", type=int, metavar="N")
    p.add_argument("--scheduler", metavar="ADDRESS", help="tcp://host:8786 (Dask)")
    p.add_argument("--cache", metavar="DIR")
    p.add_argument("--no-cache", action="store_true")
    p = sub.add_parser("export", help="write a verified schedule for another tool")
    _add_source_args(p)
    p.add_argument(
        "--format", "-f", required=True, choices=("json", "msccl", "chakra", "goal")
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT")
    p.add_argument("--proto", choices=("Simple", "LL", "LL128"), default="Simple")
    p = sub.add_parser("reproduce", help="run the experiments, write REPORT.md")
    p.add_argument("-o", "--output", "--out", dest="out", default="figures")
    p.add_argument("--only", nargs="+", action="extend", default=[], metavar="NAME")
    p.add_argument("--quick", action="store_true", help="reduced sweeps (a smoke test)")
    jobs = "worker processes at once (0: as many as memory and cores allow)"
    p.add_argument("--jobs", type=int, default=0, metavar="N", help=jobs)
    chk = "exit 1 if a finding FILE (default: the package's) says reproduced is not"
    p.add_argument("--check", nargs="?", const="", metavar="FILE", help=chk)
    res = "skip experiments whose record in DIR (default: --out) is complete"
    p.add_argument("--resume", nargs="?", const="", metavar="DIR", help=res)
    p.add_argument("--record-expectations", metavar="FILE", help="write the verdicts")
    add_subcommands(sub.add_parser("mpi", help="benchmarks on a real MPI job"))
    return parser


def _emit(path: str, text: str) -> None:
    """Write ``text`` to ``path``, or to stdout for ``-``."""
    if path == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    with _writing(path):
        write_atomic(path, text)


def _note(path: str, message: str) -> None:
    """A message about a write: stderr when the data went to stdout."""
    print(message, file=sys.stderr if path == "-" else sys.stdout)


def _info(name: str) -> Any:
    import wafercoll as wc

    try:
        return wc.algorithm_info(name)
    except ValueError as exc:  # "unknown algorithm 'x'; did you mean 'y'?"
        raise UsageError(str(exc)) from None


def _resolve(args: argparse.Namespace, ranks: int | None) -> tuple[Any, Any]:
    from . import machines

    try:
        return machines.resolve(args.topology, ranks=ranks, size_bytes=args.size_bytes)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--topology: {exc}") from None


def _build(args: argparse.Namespace, planned: dict[str, Any] | None = None) -> Any:
    """Build ``args.name``; with --topology, for that machine (kept in args).

    ``planned``: options the builder takes from the network it will run on
    (``AlgorithmInfo.network_options``); those given with --option win.
    """
    import wafercoll as wc

    options = {**(planned or {}), **dict(args.option)}
    if args.root is not None:
        options["root"] = args.root
    args.machine_topology, args.machine_network = None, None
    if args.topology is not None:
        args.machine_topology, args.machine_network = _resolve(args, args.ranks)
    elif args.ranks is None:
        raise UsageError(f"{args.command} {args.name} needs --ranks or --topology")
    try:
        return wc.build(
            args.name,
            ranks=args.ranks,
            size_bytes=args.size_bytes,
            topology=args.machine_topology,
            **options,
        )
    except wc.ScheduleError:
        raise
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


def _schedule_file(path: str, args: argparse.Namespace, where: str) -> Any:
    """Read a schedule file, unless build options were given too."""
    import wafercoll as wc

    pairs = [
        ("NAME", getattr(args, "name", None) if where.startswith("--") else None),
        ("--ranks", args.ranks),
        ("--size-bytes", args.size_bytes),
        ("--root", args.root),
        ("--option", args.option or None),
    ]
    given = [flag for flag, value in pairs if value is not None]
    if given:
        raise UsageError(
            f"{', '.join(given)} cannot be used with {where}; "
            "they describe an algorithm to build"
        )
    try:
        return wc.io.read_schedule(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise Failure(f"cannot read {path}: {exc}") from None


def _source(args: argparse.Namespace, planned: dict[str, Any] | None = None) -> Any:
    """The schedule of simulate / export: --schedule FILE or NAME built."""
    if args.schedule is not None:
        return _schedule_file(args.schedule, args, f"--schedule ({args.schedule})")
    if args.name is None:
        raise UsageError(f"{args.command} needs NAME (with --size-bytes) or --schedule")
    if args.size_bytes is None:
        raise UsageError(f"{args.command} needs --size-bytes")
    return _build(args, planned)


def _summary(s: Any, rep: Any) -> str:
    return (
        f"{s.name or 'schedule'}: {rep.collective}, {rep.ranks} ranks, "
        f"{s.size_bytes} B per rank, {rep.transfers} transfers, {rep.steps} steps, "
        f"{int(s.transfer_bytes().sum())} B moved"
    )


_NETWORK_FIELDS = ("bandwidth_Bps", "hop_latency_s", "alpha_s", "packet_bytes")
_NETWORK_FIELDS += ("switching", "gamma_s_per_byte", "ports", "ecmp", "spray")


def _network(args: argparse.Namespace, base: Any) -> Any:
    """The network model of the flags; warns on stderr for a default one."""
    from . import machines

    fields = {f: getattr(args, f) for f in _NETWORK_FIELDS}
    try:
        net = machines.network_model(
            args.preset, base=base, size_bytes=args.size_bytes, **fields
        )
    except TypeError as exc:
        hint = "give the model with --bandwidth, --alpha, ... instead"
        raise UsageError(f"--preset {args.preset}: {exc}; {hint}") from None
    except ValueError as exc:
        raise UsageError(f"--preset: {exc}" if args.preset else str(exc)) from None
    if net.name == "default" and net.hop_latency_s == 0 and net.alpha_s == 0:
        print(
            f"warning: the default network has zero latency ({_network_line(net)})",
            file=sys.stderr,
        )
    return net


def _network_line(net: Any) -> str:
    bw = net.bandwidth_Bps
    rate = "per link" if bw is None else f"{bw / 1e9:.3g} GB/s"
    line = f"{net.name} (latency {human_seconds(net.hop_latency_s)}, bandwidth {rate})"
    return line + ("; pass --preset or --latency" if net.name == "default" else "")


def _cmd_list(args: argparse.Namespace) -> int:
    from .algorithms import algorithms, algorithms_table

    if args.format == "json":
        text = json.dumps([a.to_dict() for a in algorithms()], indent=2)
    else:
        text = algorithms_table()
    _emit(args.output, text)
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    info = _info(args.name)
    text = json.dumps(info.to_dict(), indent=2) if args.format == "json" else None
    _emit(args.output, text or info.describe())
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    import wafercoll as wc

    if args.size_bytes is None:
        raise UsageError("build needs --size-bytes")
    s = _build(args)
    rep = wc.verify(s)
    _emit(args.output, s.to_json(indent=args.indent))
    _note(args.output, f"wrote {args.output}: {_summary(s, rep)} (verified)")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    import wafercoll as wc

    if os.path.isfile(args.target):
        s = _schedule_file(args.target, args, f"a schedule file ({args.target})")
    else:
        try:
            wc.algorithm_info(args.target)
        except ValueError as exc:
            msg = f"{args.target!r} is neither a file nor a registered algorithm"
            raise UsageError(f"{msg} ({exc})") from None
        if args.size_bytes is None or (args.ranks or args.topology) is None:
            need = "--ranks (or --topology) and --size-bytes"
            raise UsageError(f"verify {args.target} needs {need}")
        args.name = args.target
        s = _build(args)
    print(f"ok {args.target}: {_summary(s, wc.verify(s))}")
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    import wafercoll as wc
    from wafercoll import bounds

    if args.topology is None:
        info = _info(args.name) if args.schedule is None and args.name else None
        specific = [f for f in info.families if f != "any"] if info else []
        where = f"{info.name} is built for {', '.join(specific)}" if specific else ""
        raise UsageError(
            f"simulate needs --topology SPEC (or --machine NAME) to say where it "
            f"runs{': ' + where if where else ''}; e.g. -t ring:{args.ranks or 8}, "
            "-t mesh:4x4, -t torus:8x8, -t wormhole_n150, -t mcm_table_ii:3x3 "
            f"({SPEC_HELP})"
        )
    network, planned = None, None
    if args.schedule is None and args.name is not None and args.size_bytes is not None:
        # A builder that plans for its network (the synthesizer under
        # --spray) is given the network it will run on.
        info = _info(args.name)
        if info.network_parameters:
            network = _network(args, _resolve(args, args.ranks)[1])
            planned = info.network_options(network)
    s = _source(args, planned)
    if args.schedule is not None:
        args.machine_topology, args.machine_network = _resolve(args, s.num_ranks)
    topology = args.machine_topology
    if network is None:
        network = _network(args, args.machine_network)
    traced = args.trace is not None
    try:
        extra = {}
        if args.buffer_packets is not None:
            extra["buffer_packets"] = args.buffer_packets
        result = wc.simulate(
            s,
            topology,
            network,
            engine=args.engine,
            transfers=traced,
            trace=traced,
            **extra,
        )
    except (ImportError, ValueError, TypeError, RuntimeError) as exc:
        raise UsageError(str(exc)) from None
    if traced:
        with _writing(args.trace):
            result.to_chrome_trace(args.trace)
        print(
            f"wrote {args.trace} (open it in https://ui.perfetto.dev)", file=sys.stderr
        )
    bound = bounds.result_bound(result)
    summary: dict[str, Any] = {}
    for key, value in result.summary().items():
        summary[key] = value
        if key == "cycles":
            summary["lower_bound_s"] = None if bound is None else bound.time_s
            summary["optimality_ratio"] = (
                None if bound is None else bounds.optimality_ratio(result, bound)
            )
    if args.format == "json":
        _emit(args.output, json.dumps(summary, indent=2))
    elif args.format == "csv":
        _emit(args.output, csv_rows([summary]))
    else:
        summary["network"] = _network_line(network)
        width = max(len(k) for k in summary)
        lines = [f"{k.ljust(width)}  {_show(k, v)}" for k, v in summary.items()]
        _emit(args.output, "\n".join(lines))
    return 0


def _show(key: str, value: Any) -> str:
    """One value of a simulation summary, in units people read."""
    if value is None:
        return "-"
    if key.endswith("_s"):
        return human_seconds(value)
    if key.startswith("bytes"):
        return human_bytes(value)
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _cmd_export(args: argparse.Namespace) -> int:
    import wafercoll as wc

    s = _source(args)
    rep, out = wc.verify(s), args.output
    if args.format == "chakra" and out == "-":
        raise UsageError("--format chakra writes one file per rank: give -o PREFIX")
    try:
        if args.format == "chakra":
            with _writing(out):
                written = wc.io.write_chakra(s, out)
        else:
            text = {
                "json": s.to_json,
                "msccl": lambda: wc.io.msccl_xml(s, proto=args.proto),
                "goal": lambda: wc.io.goal_text(s),
            }[args.format]()
            _emit(out, text)
            written = [out]
    except (ImportError, ValueError) as exc:  # a defective schedule among them
        raise Failure(str(exc)) from None
    where = written[0] if len(written) == 1 else f"{len(written)} files {out}.*.et"
    _note(out, f"wrote {where} ({args.format}): {_summary(s, rep)} (verified)")
    return 0


def _cmd_advise(args: argparse.Namespace) -> int:
    import wafercoll as wc
    from wafercoll import advisor

    if args.keep < 1:
        raise UsageError(f"--keep must be >= 1, got {args.keep}")
    if args.plot and args.sizes is None:
        raise UsageError("--plot needs --sizes")
    if args.matrix is not None:
        if args.collective != "alltoallv":
            raise UsageError("--matrix needs --collective alltoallv")
        args.size_bytes = 1
    elif args.sizes is None and args.size_bytes is None:
        raise UsageError("one of --size-bytes, --sizes or --matrix is required")
    sizes = args.sizes or [args.size_bytes]
    if sizes[0] < 1:
        raise UsageError("--size-bytes must be >= 1")
    args.size_bytes = sizes[-1]
    topology, preset = _resolve(args, None)
    network = _network(args, preset)
    keep = None if args.exhaustive else args.keep
    run, what = (wc.advise, sizes[0]) if args.sizes is None else (wc.crossover, sizes)
    progress = args.format == "text"
    extra = {}
    if args.matrix is not None:
        try:
            extra["matrix"] = wc.alltoall.read_matrix(
                args.matrix, topology.num_endpoints
            )
        except (OSError, ValueError, TypeError) as exc:
            raise UsageError(f"--matrix: {exc}") from None
    try:
        out = run(
            topology,
            what,
            args.collective,
            network,
            keep=keep,
            progress=progress,
            **extra,
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    results = [out] if args.sizes is None else out["advice"]
    if args.format == "json":
        docs = [a.to_dict() for a in results]
        text = json.dumps(docs if args.sizes else docs[0], indent=2)
    elif args.format == "csv":
        one = args.sizes is None
        text = results[0].to_csv() if one else advisor.crossover_csv(results)
    elif args.sizes is None:
        text = results[0].table(show_all=args.all)
    else:
        text = advisor.crossover_table(out)
    _emit(args.output, text)
    if args.output != "-":
        print(f"wrote {args.output}", file=sys.stderr)
    if args.plot:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 4), layout="constrained")
        FigureCanvasAgg(fig)
        advisor.plot_crossover(out, ax=fig.add_subplot())
        ext = os.path.splitext(args.plot)[1].lstrip(".").lower() or "png"
        with _writing(args.plot), atomic_path(args.plot) as tmp:
            fig.savefig(tmp, format=ext, dpi=150)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    import wafercoll as wc

    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    if args.scheduler is not None and not args.scheduler.strip():
        raise UsageError(
            "--scheduler needs a Dask scheduler address such as tcp://host:8786 "
            "(leave it out to run on local processes)"
        )
    if args.cache is not None and not args.cache:
        raise UsageError("--cache needs a directory (or use --no-cache)")
    cache: Any = False if args.no_cache else (args.cache or True)
    try:
        grid = wc.sweeps.read_grid(args.spec)
    except OSError as exc:
        raise Failure(f"cannot read {args.spec}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a FormatError naming the file
        raise UsageError(str(exc)) from None
    try:
        df = wc.sweep(
            grid, jobs=args.jobs, scheduler=args.scheduler, cache=cache, progress=True
        )
    except wc.sweeps.CacheError as exc:
        raise Failure(f"--cache: {exc}" if args.cache else str(exc)) from None
    except wc.sweeps.SchedulerError as exc:
        raise Failure(f"--scheduler: {exc}") from None
    except wc.sweeps.WorkerLostError as exc:
        raise Failure(str(exc)) from None
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        if msg.startswith("scheduler "):
            raise UsageError(f"--{msg}") from None
        raise UsageError(msg if args.spec in msg else f"{args.spec}: {msg}") from None
    _emit(args.output, df.to_csv(index=False))
    _note(
        args.output,
        f"wrote {args.output}: {len(df)} points ({df.attrs['computed']} computed, "
        f"{df.attrs['cached']} from the cache)",
    )
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")  # no display: figures are only written to files
    from .experiments import report

    if args.jobs < 0:
        raise UsageError(f"--jobs must be >= 0 (0: as memory allows), got {args.jobs}")
    try:
        selected = report.select(args.only)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return report.reproduce(
        args.resume or args.out,
        selected,
        quick=args.quick,
        jobs=args.jobs,
        check=args.check,
        record=args.record_expectations,
        resume=args.resume is not None,
    )


_COMMANDS = {n[5:]: fn for n, fn in list(globals().items()) if n.startswith("_cmd_")}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``); the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # argparse exits on --help, --version and errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    import wafercoll as wc

    try:
        if args.command == "mpi":
            from .mpi.cli import run

            return run(args)
        return _COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"wafercoll {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (Failure, wc.ScheduleError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C: files are written whole or not at all
        print(f"\nwafercoll {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `wafercoll list --format json | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
