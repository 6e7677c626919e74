"""The ``wafercoll`` command line.

Subcommands::

    wafercoll list [--json]
    wafercoll info NAME [--json]
    wafercoll build NAME (--ranks P | --topology SPEC) --size-bytes S [--root R]
                    [--option K=V ...] -o FILE
    wafercoll verify FILE | NAME (--ranks P | --topology SPEC) --size-bytes S ...
    wafercoll simulate NAME (--ranks P | --topology SPEC) --size-bytes S [build options]
                       | --schedule FILE [--topology SPEC]
                       [--network PRESET] [--bandwidth BPS] [--latency S] [--alpha S]
                       [--packet BYTES] [--switching MODE] [--gamma S_PER_B]
                       [--ports N] [--engine {wafercoll,simgrid}] [--trace FILE]
                       [--json]
    wafercoll export NAME (--ranks P | --topology SPEC) --size-bytes S ...
                     | --schedule FILE
                     --format {json,msccl,chakra,goal} -o OUT [--proto P]
    wafercoll reproduce [--out DIR] [--only NAME ...] [--quick] [--jobs N]
                        [--check [FILE]] [--record-expectations FILE]

A schedule FILE is wafercoll JSON, MSCCL XML (``.xml``) or GOAL (``.goal``),
by its extension; GOAL files can be simulated but not verified.

``--topology`` takes ``line:N``, ``ring:N``, ``mesh:RxC``, ``torus:RxC``,
``cluster:NODESxPPN[xSOCKETS]``, ``n150[:ROW]``, ``wafer:P``, ``wafer:MxN`` or
a machine name of :mod:`wafercoll.machines` (``mcm_table_ii:9x9``); the
schedule is built for that topology and simulated on it, under the
machine's network preset unless ``--network`` names another. Sizes take
binary (``KiB``, ``MiB``: powers of 1024) or decimal (``kB``, ``MB``: powers
of 1000) units; a bare ``K`` or ``M`` is refused as ambiguous.

Exit codes: 0 on success, 1 when a schedule is defective (or a file cannot be
written, or an experiment fails), 2 for errors in the arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

from ._util import human_bytes as _human_bytes
from ._util import human_seconds as _human_seconds

__all__ = ["main"]

#: Byte units of ``--size-bytes``: decimal (kB, MB = 1000**k) and binary
#: (KiB, MiB = 1024**k). A bare ``K`` or ``M`` is refused as ambiguous.
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    **{f"{p}b": 1000**k for k, p in enumerate("kmgtp", 1)},
    **{f"{p}ib": 1 << (10 * k) for k, p in enumerate("kmgtp", 1)},
}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_TOPOLOGY_HELP = (
    "line:N, ring:N, mesh:RxC, torus:RxC, cluster:NODESxPPN[xSOCKETS], n150[:ROW], "
    "wafer:P, wafer:MxN, or a machine of wafercoll.machines (NAME[:AxB])"
)


class UsageError(Exception):
    """An error in the arguments: reported without traceback, exit code 2."""


def _size(text: str) -> int:
    """Parse a byte count: ``4096``, ``64KiB``, ``1MiB``, ``1MB`` (= 10**6)."""
    m = _SIZE_RE.match(text)
    unit = m.group(2).lower() if m else ""
    if m and unit in ("k", "m", "g", "t", "p"):
        raise argparse.ArgumentTypeError(
            f"ambiguous size {text!r}: write {m.group(1)}{unit.upper()}iB "
            f"(binary, 1024**k) or {m.group(1)}{unit.upper()}B (decimal, 1000**k)"
        )
    if not m or unit not in _SIZE_UNITS:
        raise argparse.ArgumentTypeError(
            f"invalid size {text!r} (an integer with an optional unit: B, "
            "kB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB (powers of 1024))"
        )
    return int(m.group(1)) * _SIZE_UNITS[unit]


def _size_range(text: str) -> list[int]:
    """Parse ``LO:HI[:FACTOR]`` into the sizes LO, LO * FACTOR, ... <= HI."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(
            f"invalid size range {text!r} (expected LO:HI or LO:HI:FACTOR, "
            "e.g. 1KiB:1GiB:4)"
        )
    lo, hi = _size(parts[0]), _size(parts[1])
    factor = 4
    if len(parts) == 3:
        if not re.fullmatch(r"\s*[0-9]+\s*", parts[2]) or int(parts[2]) < 2:
            raise argparse.ArgumentTypeError(
                f"invalid factor {parts[2]!r} in {text!r} (an integer >= 2)"
            )
        factor = int(parts[2])
    if lo < 1 or hi < lo:
        raise argparse.ArgumentTypeError(
            f"invalid size range {text!r} (need 1 <= LO <= HI)"
        )
    sizes = [lo]
    while sizes[-1] * factor <= hi:
        sizes.append(sizes[-1] * factor)
    if len(sizes) > 64:
        raise argparse.ArgumentTypeError(f"{text!r} gives more than 64 sizes")
    return sizes


def _topology_spec(text: str) -> tuple[str, tuple[int, ...]]:
    """Parse a ``--topology`` spec to ``(kind, sizes)``; see :data:`_TOPOLOGY_HELP`.

    ``ring`` or ``line`` alone give no sizes: a ring or line of all the ranks.
    A machine name alone gives the machine's default sizes.
    """
    from . import machines

    kind, sep, sizes = text.strip().lower().partition(":")
    parts = [p.strip() for p in sizes.split("x")] if sep else []
    counts = {
        "line": (0, 1),
        "ring": (0, 1),
        "mesh": (2,),
        "torus": (2,),
        "cluster": (2, 3),
        "n150": (0, 1),
        "wafer": (1, 2),
    }
    allowed = counts.get(kind)
    if allowed is None and kind in machines.names():
        allowed = (0, 1, 2, 3)
    ok = (
        allowed is not None
        and len(parts) in allowed
        and all(re.fullmatch(r"[0-9]+", p) for p in parts)
    )
    if not ok:
        raise argparse.ArgumentTypeError(
            f"invalid topology {text!r} (expected {_TOPOLOGY_HELP})"
        )
    return kind, tuple(int(p) for p in parts)


def _indent(text: str) -> int:
    """Parse ``--indent``: an integer from 0 to 16."""
    if not re.fullmatch(r"\s*\d{1,3}\s*", text) or int(text) > 16:
        raise argparse.ArgumentTypeError(
            f"invalid indent {text!r} (an integer from 0 to 16)"
        )
    return int(text)


def _option(text: str) -> tuple[str, Any]:
    """Parse ``key=value``; the value is read as JSON when it parses, else a string."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip().replace("-", "_"), parsed


def _add_build_args(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--ranks", "-p", type=int, metavar="P")
    p.add_argument(
        "--size-bytes",
        "-s",
        type=_size,
        required=required,
        metavar="S",
        help="vector size per rank in bytes (units: KiB, MiB, GiB = powers of 1024; "
        "kB, MB, GB = powers of 1000)",
    )
    p.add_argument(
        "--root", type=int, metavar="R", help="root rank (rooted algorithms)"
    )
    p.add_argument(
        "--option",
        type=_option,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="algorithm option, repeatable; VALUE is parsed as JSON when possible",
    )
    p.add_argument(
        "--topology",
        "-t",
        type=_topology_spec,
        metavar="SPEC",
        help=f"the machine to build for (and simulate on): {_TOPOLOGY_HELP}; "
        "--ranks defaults to its endpoints",
    )


def _add_source_args(p: argparse.ArgumentParser) -> None:
    """NAME and its build options, or --schedule FILE (simulate, export)."""
    p.add_argument(
        "name", nargs="?", metavar="NAME", help="a registered algorithm (see `list`)"
    )
    p.add_argument(
        "--schedule",
        metavar="FILE",
        help="a schedule file instead of NAME (JSON, MSCCL .xml, GOAL .goal)",
    )
    _add_build_args(p, required=False)


def _add_network_args(p: argparse.ArgumentParser) -> None:
    """The network model flags of ``simulate`` and ``advise``."""
    p.add_argument(
        "--network",
        "-n",
        metavar="PRESET",
        help="a network preset of wafercoll.network_presets() (default: the "
        "machine's preset for a machine topology, else a 1e9 B/s network); the "
        "flags below override its fields",
    )
    p.add_argument(
        "--bandwidth",
        type=float,
        metavar="BPS",
        help="link bandwidth in bytes/s (default: 1e9, or the topology's links "
        "under a preset that has none)",
    )
    p.add_argument(
        "--latency",
        type=float,
        metavar="S",
        help="latency per hop in seconds (default: 0)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        metavar="S",
        help="start-up delay per message in seconds (default: 0)",
    )
    p.add_argument(
        "--packet",
        type=_size,
        metavar="BYTES",
        help="packet size, suffixes KiB, MiB accepted (default: a message is one)",
    )
    p.add_argument(
        "--switching",
        choices=("cut_through", "store_and_forward"),
        help="switching of packets (default: cut_through)",
    )
    p.add_argument(
        "--gamma",
        type=float,
        metavar="S_PER_B",
        help="reduction cost in seconds per byte (default: 0)",
    )
    p.add_argument(
        "--ports",
        type=int,
        metavar="N",
        help="injection and ejection channels per endpoint (default: unlimited)",
    )


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="wafercoll",
        description="Build, verify and reproduce collective-communication schedules.",
    )
    parser.add_argument(
        "--version", action="version", version=f"wafercoll {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="list the registered algorithms")
    p.add_argument("--json", action="store_true", help="print the registry as JSON")

    p = sub.add_parser(
        "info", help="an algorithm's collective, families, parameters and source"
    )
    p.add_argument("name", metavar="NAME", help="a registered algorithm (see `list`)")
    p.add_argument("--json", action="store_true", help="print the record as JSON")

    p = sub.add_parser("build", help="build and verify a schedule, write it as JSON")
    p.add_argument("name", metavar="NAME", help="a registered algorithm (see `list`)")
    _add_build_args(p, required=True)
    p.add_argument(
        "--json",
        "-o",
        dest="output",
        required=True,
        metavar="FILE",
        help="where to write the schedule",
    )
    p.add_argument(
        "--indent", type=_indent, default=None, help="JSON indentation (0 to 16)"
    )

    p = sub.add_parser("verify", help="verify a schedule file or a built algorithm")
    p.add_argument(
        "target", metavar="FILE|NAME", help="a schedule JSON file or an algorithm"
    )
    _add_build_args(p, required=False)

    p = sub.add_parser(
        "simulate",
        help="simulate a schedule on a topology, print time and link utilization",
        description="Simulate a built algorithm (NAME with --ranks and "
        "--size-bytes) or a schedule file (--schedule) on a topology under a "
        "network model; see wafercoll.simulate for the model.",
    )
    _add_source_args(p)
    _add_network_args(p)
    p.add_argument(
        "--engine",
        choices=("wafercoll", "simgrid"),
        default="wafercoll",
        help="the packet-level engine (default) or SimGrid's flow-level one "
        "(needs the simgrid Python module: apt-get install python3-simgrid)",
    )
    p.add_argument(
        "--trace",
        metavar="FILE",
        help="also write the run as Trace Event JSON (Perfetto, chrome://tracing)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the result summary as JSON"
    )

    p = sub.add_parser(
        "advise",
        help="rank every registered algorithm on a machine at a size",
        description="Build, verify and simulate every registered algorithm of a "
        "collective that applies to the topology, and rank them by simulated time "
        "with their bandwidth, their optimality ratio against the lower bound "
        "(wafercoll.bounds) and their closed form where they have one. With "
        "--sizes, the winner at every size (a crossover chart).",
    )
    p.add_argument(
        "--topology", "-t", type=_topology_spec, required=True, help=_TOPOLOGY_HELP
    )
    p.add_argument(
        "--collective",
        "-c",
        default="allreduce",
        help="allreduce (default), reduce, broadcast, reduce_scatter or allgather",
    )
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument(
        "--size-bytes", "-s", type=_size, metavar="BYTES", help="size per rank"
    )
    size.add_argument(
        "--sizes",
        type=_size_range,
        metavar="LO:HI[:FACTOR]",
        help="every size from LO to HI, multiplied by FACTOR (default 4) each time",
    )
    _add_network_args(p)
    p.add_argument(
        "--keep",
        type=int,
        default=3,
        metavar="K",
        help="simulate at least the K most promising and skip those that cannot "
        "beat them (default: 3)",
    )
    p.add_argument("--exhaustive", action="store_true", help="simulate every candidate")
    p.add_argument(
        "--all", action="store_true", help="also list other families' algorithms"
    )
    p.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    p.add_argument("--plot", metavar="FILE", help="with --sizes: draw the chart")
    p.add_argument("--json", action="store_true", help="print the ranking as JSON")

    p = sub.add_parser(
        "sweep",
        help="run a grid of algorithms x topologies x sizes x networks",
        description="Run every point of the grid in a TOML file (keys algorithm, "
        "topology, size_bytes, network, options; a list each, sizes may read "
        "'1MiB') and write one CSV row per point: time, bandwidth, link "
        "utilization, lower bound, optimality ratio. Points are cached on disk, "
        "so an interrupted sweep resumes; --scheduler runs them on Dask.",
    )
    p.add_argument("spec", metavar="SPEC.toml", help="the grid")
    p.add_argument("--out", "-o", default="sweep.csv", metavar="FILE", help="CSV")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="worker processes")
    p.add_argument(
        "--scheduler", metavar="ADDRESS", help="a Dask scheduler, tcp://host:8786"
    )
    p.add_argument(
        "--cache",
        metavar="DIR",
        help="where finished points are kept (default: $WAFERCOLL_CACHE or "
        "~/.cache/wafercoll)",
    )
    p.add_argument("--no-cache", action="store_true", help="compute every point")

    p = sub.add_parser(
        "export",
        help="write a verified schedule as MSCCL XML, Chakra ET, GOAL or JSON",
        description="Build (NAME ...) or read (--schedule FILE) a schedule, "
        "verify it and write it for another tool: MSCCL XML (the MSCCL runtime "
        "on NCCL/RCCL), Chakra ET (ASTRA-sim; one OUT.RANK.et per rank), GOAL "
        "(LogGOPSim) or wafercoll JSON.",
    )
    _add_source_args(p)
    p.add_argument(
        "--format",
        "-f",
        required=True,
        choices=("json", "msccl", "chakra", "goal"),
        help="output format",
    )
    p.add_argument(
        "--output",
        "-o",
        required=True,
        metavar="OUT",
        help="the file to write (for chakra: the prefix of OUT.RANK.et)",
    )
    p.add_argument(
        "--proto",
        choices=("Simple", "LL", "LL128"),
        default="Simple",
        help="MSCCL protocol (default: Simple)",
    )

    p = sub.add_parser(
        "reproduce", help="run the experiments, write figures and REPORT.md"
    )
    p.add_argument("--out", default="figures", metavar="DIR", help="output directory")
    p.add_argument(
        "--only",
        nargs="+",
        action="extend",
        default=[],
        metavar="NAME",
        help="run only these experiments (repeatable)",
    )
    p.add_argument(
        "--quick", action="store_true", help="reduced sweeps (for smoke tests)"
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="experiments run at once, each in its own process (default 0: one "
        "per CPU core; 1: one after the other in this process)",
    )
    p.add_argument(
        "--check",
        nargs="?",
        const="",
        metavar="FILE",
        help="exit 1 when a finding that the expectations FILE (default: the "
        "package's own) records as reproduced no longer is",
    )
    p.add_argument(
        "--record-expectations",
        metavar="FILE",
        help="write the verdicts of this run (for its mode: full or quick) into "
        "an expectations FILE for --check",
    )
    return parser


def _build(args: argparse.Namespace) -> Any:
    """Build the schedule named by ``args``; UsageError for bad arguments.

    With ``--topology`` the schedule is built for that machine (and
    ``args.built_topology`` keeps it for the simulation).
    """
    import wafercoll as wc

    options = dict(args.option)
    if args.root is not None:
        options["root"] = args.root
    topology = None
    if args.topology is not None:
        topology, args.machine = _make_topology(
            args.topology, args.ranks, args.size_bytes
        )
    args.built_topology = topology
    if topology is None and args.ranks is None:
        raise UsageError(f"{args.command} {args.name} needs --ranks or --topology")
    try:
        return wc.build(
            args.name,
            ranks=args.ranks,
            size_bytes=args.size_bytes,
            topology=topology,
            **options,
        )
    except wc.ScheduleError:
        raise
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None


def _read_schedule(path: str) -> Any:
    """Load a schedule file: ScheduleError for bad content, OSError if unreadable.

    ``.xml`` files are MSCCL XML, ``.goal`` files GOAL, anything else JSON.
    """
    import wafercoll as wc

    ext = os.path.splitext(path)[1].lower()
    if ext in (".xml", ".goal"):
        reader = wc.io.read_msccl if ext == ".xml" else wc.io.read_goal
        try:
            return reader(path)
        except wc.io.FormatError as exc:
            raise wc.ScheduleError(str(exc)) from None
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise wc.ScheduleError(f"{path}: malformed JSON: {exc}") from None
    except RecursionError:
        raise wc.ScheduleError(f"{path}: JSON nested too deeply") from None
    try:
        return wc.Schedule.from_dict(doc)
    except wc.ScheduleError as exc:
        raise wc.ScheduleError(
            f"{path}: {exc}",
            kind=exc.kind,
            transfer=exc.transfer,
            rank=exc.rank,
            block=exc.block,
        ) from None
    except (ValueError, TypeError) as exc:
        raise wc.ScheduleError(f"{path}: {exc}") from None


def _summary(s: Any, rep: Any) -> str:
    return (
        f"{s.name or 'schedule'}: {rep.collective}, {rep.ranks} ranks, "
        f"{s.size_bytes} B per rank, {rep.transfers} transfers, {rep.steps} steps, "
        f"{int(s.transfer_bytes().sum())} B moved"
    )


def _cmd_list(args: argparse.Namespace) -> int:
    import wafercoll as wc

    infos = wc.algorithms()
    if args.json:
        print(json.dumps([a.to_dict() for a in infos], indent=2))
        return 0
    rows = [("NAME", "COLLECTIVE", "FAMILIES", "PARAMETERS", "SOURCE")]
    for a in infos:
        params = ", ".join(f"{k}={v}" for k, v in a.parameters.items()) or "-"
        rows.append((a.name, a.collective, ",".join(a.families), params, a.source))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r, widths, strict=False)]
        print("  ".join([*cells, r[-1]]))
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    import wafercoll as wc

    s = _build(args)
    rep = wc.verify(s)
    try:
        s.to_json(args.output, indent=args.indent)
    except OSError as exc:
        print(
            f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr
        )
        return 1
    print(f"wrote {args.output}: {_summary(s, rep)} (verified)")
    return 0


def _build_flags(args: argparse.Namespace, *, name: bool = False) -> list[str]:
    """The options given that describe an algorithm to build."""
    pairs = [
        ("--ranks", args.ranks),
        ("--size-bytes", args.size_bytes),
        ("--root", args.root),
        ("--option", args.option or None),
    ]
    if name:
        pairs.insert(0, ("NAME", args.name))
    return [flag for flag, value in pairs if value is not None]


def _missing_sizes(args: argparse.Namespace) -> list[str]:
    """The size options a build needs that were not given."""
    pairs = (("--ranks", args.ranks), ("--size-bytes", args.size_bytes))
    return [flag for flag, value in pairs if value is None]


def _schedule_file(path: str, given: list[str], where: str) -> Any:
    """Read a schedule file; None (after a message) when it cannot be read."""
    if given:
        raise UsageError(
            f"{', '.join(given)} cannot be used with {where}; "
            "they describe an algorithm to build"
        )
    try:
        return _read_schedule(path)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: cannot read {path}: {exc}", file=sys.stderr)
        return None


def _cmd_verify(args: argparse.Namespace) -> int:
    import wafercoll as wc

    if os.path.isfile(args.target):
        s = _schedule_file(
            args.target, _build_flags(args), f"a schedule file ({args.target})"
        )
        if s is None:
            return 1
        where = args.target
    else:
        known = {a.name for a in wc.algorithms()}
        if args.target not in known:
            raise UsageError(
                f"{args.target!r} is neither a file nor a registered algorithm "
                f"(algorithms: {', '.join(sorted(known))})"
            )
        missing = _missing_sizes(args)
        if args.topology is not None and "--ranks" in missing:
            missing.remove("--ranks")
        if missing:
            raise UsageError(f"verify {args.target} needs {' and '.join(missing)}")
        args.name = args.target
        s = _build(args)
        where = args.target
    rep = wc.verify(s)
    print(f"ok {where}: {_summary(s, rep)}")
    return 0


def _make_topology(
    spec: tuple[str, tuple[int, ...]], ranks: int | None, size_bytes: int | None = None
) -> tuple[Any, Any]:
    """The topology of a ``--topology`` spec, and its machine entry (or None).

    ``line`` and ``ring`` without a size take ``ranks`` endpoints; a machine
    whose parameters depend on the message size (``blue_waters``) is built
    for ``size_bytes``.
    """
    import wafercoll as wc

    kind, sizes = spec
    machine = None
    try:
        if kind in ("line", "ring"):
            if not sizes and ranks is None:
                raise UsageError(
                    f"--topology {kind} needs a size ({kind}:N) or --ranks"
                )
            topo = getattr(wc.topology, kind)(*(sizes or (ranks,)))
        elif kind in ("mesh", "torus", "cluster"):
            topo = getattr(wc.topology, kind)(*sizes)
        elif kind == "n150":
            machine = wc.machines.get("wormhole_n150")
            topo = machine.topology(*sizes)
        elif kind == "wafer":
            machine = wc.machines.get("wse2_row" if len(sizes) == 1 else "wse2_grid")
            topo = machine.topology(*sizes)
        else:
            machine = wc.machines.get(kind)
            kw = _size_kw(machine.topology, size_bytes)
            topo = machine.topology(*(sizes or machine.defaults), **kw)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--topology: {exc}") from None
    return topo, machine


def _size_kw(fn: Any, size_bytes: int | None) -> dict[str, Any]:
    """``{"size_bytes": ...}`` when ``fn`` takes it (size-dependent machines)."""
    takes = "size_bytes" in inspect.signature(fn).parameters
    return {"size_bytes": size_bytes} if takes and size_bytes is not None else {}


def _network(args: argparse.Namespace, machine: Any) -> Any:
    """The network model: ``--network``, else the machine's preset, with overrides."""
    import wafercoll as wc

    fields = {
        "bandwidth_Bps": args.bandwidth,
        "hop_latency_s": args.latency,
        "alpha_s": args.alpha,
        "packet_bytes": args.packet,
        "switching": args.switching,
        "gamma_s_per_byte": args.gamma,
        "ports": args.ports,
    }
    given = {k: v for k, v in fields.items() if v is not None}
    try:
        try:
            model = _preset_network(args.network, machine, args.size_bytes)
        except KeyError as exc:
            raise UsageError(f"--network: {exc.args[0]}") from None
        if model is None:
            return wc.NetworkModel(given.pop("bandwidth_Bps", 1e9), **given)
        return model.replace(**given) if given else model
    except TypeError as exc:
        raise UsageError(
            f"--network {args.network}: the preset needs parameters ({exc}); "
            "give the model with --bandwidth, --alpha, ... instead"
        ) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _preset_network(preset: str | None, machine: Any, size_bytes: int | None) -> Any:
    """A network preset by name, else the machine's preset, else None.

    Presets whose parameters depend on the message size get ``size_bytes``.

    Raises
    ------
    KeyError
        For an unknown preset name (the message lists the known ones).
    """
    import wafercoll as wc

    if preset is not None:
        presets = wc.network_presets()
        if preset not in presets:
            raise KeyError(f"unknown preset {preset!r}; known: {', '.join(presets)}")
        factory = presets[preset]
        return factory(**_size_kw(factory, size_bytes))
    if machine is not None:
        return machine.network(**_size_kw(machine.network, size_bytes))
    return None


def _source_file(args: argparse.Namespace) -> Any:
    """The --schedule FILE of simulate / export (None after a message)."""
    return _schedule_file(
        args.schedule, _build_flags(args, name=True), f"--schedule ({args.schedule})"
    )


def _require_name_and_size(args: argparse.Namespace) -> None:
    if args.name is None:
        raise UsageError(
            f"{args.command} needs NAME (with --ranks and --size-bytes) or "
            "--schedule FILE"
        )
    if args.size_bytes is None:
        raise UsageError(f"{args.command} needs --size-bytes")


def _cmd_simulate(args: argparse.Namespace) -> int:
    import wafercoll as wc

    args.machine = None
    if args.schedule is not None:
        s = _source_file(args)
        if s is None:
            return 1
        spec = args.topology or ("ring", ())
        topology, args.machine = _make_topology(spec, s.num_ranks)
    else:
        _require_name_and_size(args)
        info = _info(args.name)
        specific = [f for f in info.families if f != "any"]
        if args.topology is None and specific and "ring" not in specific:
            raise UsageError(
                f"{info.name} is built for {', '.join(specific)} topologies: give "
                f"--topology ({_TOPOLOGY_HELP})"
            )
        s = _build(args)
        topology = args.built_topology
        if topology is None:
            topology, _ = _make_topology(("ring", ()), s.num_ranks)
        elif specific and topology.kind not in specific:
            raise UsageError(
                f"{info.name} is built for {', '.join(specific)} topologies, "
                f"not {topology.kind}"
            )
    if s.num_ranks > topology.num_endpoints:
        raise UsageError(
            f"the schedule has {s.num_ranks} ranks but {topology.name} has "
            f"{topology.num_endpoints} endpoints"
        )
    network = _network(args, args.machine)
    traced = args.trace is not None
    try:
        result = wc.simulate(
            s,
            topology,
            network,
            engine=args.engine,
            transfers=traced,
            trace=traced,
        )
    except ImportError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    if traced:
        try:
            result.to_chrome_trace(args.trace)
        except OSError as exc:
            print(f"error: cannot write {args.trace}: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {args.trace} (open it in https://ui.perfetto.dev)")
    summary = result.summary()
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        if value is None:
            text = "-"
        elif key.endswith("_s"):
            text = _human_seconds(value)
        elif key.startswith("bytes"):
            text = _human_bytes(value)
        elif isinstance(value, float):
            text = f"{value:.6g}"
        else:
            text = str(value)
        print(f"{key.ljust(width)}  {text}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    import wafercoll as wc

    args.machine = None
    if args.schedule is not None:
        s = _source_file(args)
        if s is None:
            return 1
    else:
        _require_name_and_size(args)
        s = _build(args)
    rep = wc.verify(s)
    out = args.output
    try:
        if args.format == "json":
            s.to_json(out)
            written = [out]
        elif args.format == "msccl":
            try:
                wc.io.write_msccl(s, out, proto=args.proto)
            except ValueError as exc:
                if isinstance(exc, wc.ScheduleError):
                    raise
                print(f"error: {exc}", file=sys.stderr)
                return 1
            written = [out]
        elif args.format == "chakra":
            written = wc.io.write_chakra(s, out)
        else:
            wc.io.write_goal(s, out)
            written = [out]
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot write {out}: {exc}", file=sys.stderr)
        return 1
    where = written[0] if len(written) == 1 else f"{len(written)} files {out}.*.et"
    print(f"wrote {where} ({args.format}): {_summary(s, rep)} (verified)")
    return 0


def _info(name: str) -> Any:
    """The registry record of ``name``; UsageError when unknown."""
    import wafercoll as wc

    try:
        return wc.algorithm_info(name)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _cmd_info(args: argparse.Namespace) -> int:
    info = _info(args.name)
    record = info.to_dict()
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    builder = getattr(info.builder, "func", info.builder)  # a functools.partial
    doc = inspect.getdoc(builder) or ""
    rows = [
        ("name", info.name),
        ("collective", info.collective),
        ("families", ", ".join(info.families)),
        ("source", info.source),
        ("summary", info.summary),
        ("max ranks", str(info.max_ranks)),
    ]
    params = [f"{k} = {v!r}" for k, v in info.parameters.items()] or ["none"]
    for key, value in rows:
        print(f"{key:<11} {value}")
    print("parameters  " + "\n            ".join(params))
    if doc:
        print("\n" + doc)
    return 0


def _md(value: Any) -> str:
    """One Markdown table cell."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def _verdict_cell(f: dict[str, Any]) -> str:
    """A finding's verdict as REPORT.md shows it."""
    v = f["verdict"]
    if v == "differs" and not f.get("explanation"):
        return "**differs** (not yet explained)"
    return "**differs**" if v == "differs" else v


def _report(out: str, records: list[dict[str, Any]], quick: bool) -> str:
    """Write REPORT.md into ``out``; return its path."""
    from . import __version__
    from .experiments import VERDICTS

    everything = [(r, f) for r in records for f in r.get("findings", [])]
    counts = {v: sum(f["verdict"] == v for _, f in everything) for v in VERDICTS}
    unexplained = sum(
        f["verdict"] == "differs" and not f["explanation"] for _, f in everything
    )
    lines = [
        "# wafercoll: reproduced experiments",
        "",
        f"wafercoll {__version__}" + (", quick mode (reduced sweeps)" if quick else ""),
        "",
        "## Verdicts",
        "",
        f"{len(everything)} findings: "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + f" ({unexplained} of the differences not yet explained). A finding is "
        "*reproduced* when ours agrees with the paper within the tolerance it "
        "states, *differs* when it does not (with the explanation where it is "
        "known), *not reproducible* when the paper's value cannot be obtained "
        "here (the reason is given). Every finding is also in `findings.csv`.",
        "",
        "| experiment | claim | paper | ours | verdict |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {_md(r['name'])} ({_md(r['paper'])}) | {_md(f['quantity'])} | "
        f"{_md(f['paper'])} | {_md(f['ours'])} | {_verdict_cell(f)} |"
        for r, f in everything
    ]
    lines += [
        "",
        "## Experiments",
        "",
        "| experiment | title | files | seconds |",
        "|---|---|---|---:|",
    ]
    for r in records:
        files = ", ".join(
            f"[{os.path.basename(f)}]({os.path.basename(f)})" for f in r["files"]
        )
        status = f"{r['seconds']:.2f}" if "error" not in r else "failed"
        lines.append(f"| {_md(r['name'])} | {_md(r['title'])} | {files} | {status} |")
    for r in records:
        lines += ["", f"## {r['name']}: {r['title']}", "", f"Paper: {r['paper']}.", ""]
        lines += [f"Claim: {r['claim']}", ""]
        if "error" in r:
            lines += [f"**Failed:** `{_md(r['error'])}`"]
            continue
        png = [f for f in r["files"] if f.endswith(".png")]
        if png:
            lines += [f"![{r['name']}]({os.path.basename(png[0])})", ""]
        if r["findings"]:
            lines += [
                "| quantity | paper | ours | verdict | tolerance or explanation "
                "| note |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                "| "
                + " | ".join(_md(f[k]) for k in ("quantity", "paper", "ours"))
                + f" | {_verdict_cell(f)} | "
                + _md(
                    f["tolerance"] if f["verdict"] == "reproduced" else f["explanation"]
                )
                + f" | {_md(f['note'])} |"
                for f in r["findings"]
            ]
        else:
            lines.append("No findings recorded.")
    from ._util import write_atomic
    from .experiments import FINDING_COLUMNS, findings_columns

    table: dict[str, list[Any]] = {k: [] for k in FINDING_COLUMNS}
    for r in records:
        for k, v in findings_columns(r["name"], r.get("findings", [])).items():
            table[k].extend(v)
    write_atomic(os.path.join(out, "findings.csv"), _csv_text(table))
    path = os.path.join(out, "REPORT.md")
    write_atomic(path, "\n".join(lines) + "\n")
    return path


def _csv_text(columns: dict[str, list[Any]]) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(list(columns))
    writer.writerows(zip(*columns.values(), strict=True))
    return buf.getvalue()


#: The verdicts ``reproduce --check`` compares against (see _expectations).
EXPECTATIONS = os.path.join(
    os.path.dirname(__file__), "experiments", "expectations.json"
)


def _finding_key(experiment: str, f: dict[str, Any]) -> str:
    return f"{experiment} :: {f['quantity']}"


def _check_expectations(
    path: str, records: list[dict[str, Any]], quick: bool
) -> list[str]:
    """Findings recorded as reproduced in ``path`` that this run did not reproduce.

    Only the experiments that ran are compared; a recorded finding that no
    longer appears counts as not reproduced.
    """
    with open(path, encoding="utf-8") as fh:
        doc = json.load(fh)
    expected = doc.get("quick" if quick else "full", {})
    ran = {r["name"] for r in records}
    now = {
        _finding_key(r["name"], f): f["verdict"]
        for r in records
        for f in r.get("findings", [])
    }
    lost = []
    for key, verdict in expected.items():
        if verdict != "reproduced" or key.split(" :: ")[0] not in ran:
            continue
        got = now.get(key, "missing")
        if got != "reproduced":
            lost.append(f"{key}: was reproduced, now {got}")
    return lost


def _record_expectations(path: str, records: list[dict[str, Any]], quick: bool) -> None:
    doc: dict[str, Any] = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    mode = doc.setdefault("quick" if quick else "full", {})
    for r in records:
        for key in [k for k in mode if k.split(" :: ")[0] == r["name"]]:
            del mode[key]
        for f in r.get("findings", []):
            mode[_finding_key(r["name"], f)] = f["verdict"]
    from ._util import write_atomic

    doc["about"] = (
        "Verdicts of `wafercoll reproduce` per finding (experiment :: quantity), "
        "by mode; `reproduce --check` fails when one recorded as reproduced is "
        "not. Written by `wafercoll reproduce --record-expectations FILE`."
    )
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")


def _cmd_reproduce(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")  # no display: figures are only written to files
    from . import experiments as wx

    if args.jobs < 0:
        raise UsageError(f"--jobs must be >= 0 (0: one per CPU core), got {args.jobs}")
    registered = wx.experiments()
    if args.only:
        known = {e.name: e for e in registered}
        unknown = [n for n in args.only if n not in known]
        if unknown:
            raise UsageError(
                f"unknown experiment(s) {', '.join(unknown)}; "
                f"known: {', '.join(known) or 'none'}"
            )
        selected = [known[n] for n in dict.fromkeys(args.only)]
    else:
        selected = registered
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as exc:
        print(
            f"error: cannot create {args.out}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    if not os.access(args.out, os.W_OK | os.X_OK):
        print(f"error: cannot write into {args.out}", file=sys.stderr)
        return 2
    records, failed, start = [], 0, time.perf_counter()
    try:
        failed = _run_experiments(args, wx, selected, records)
    except KeyboardInterrupt:
        path = _report(args.out, records, args.quick)
        print(
            f"\ninterrupted: {path} lists the {len(records)} experiment(s) that "
            "finished",
            file=sys.stderr,
        )
        return 130
    path = _report(args.out, records, args.quick)
    return _finish_reproduce(args, records, failed, start, path)


#: Experiments that take longest in full mode (about 45-120 s each on one
#: core): a pool starts them first so that they do not finish last.
_LONG_FIRST = ("wafer_fig13", "mesh_fig8", "mesh_fig9", "mesh_fig11", "mesh_fig10")


def _pool_job(name: str, out: str, quick: bool) -> dict[str, Any]:
    """One experiment in a worker process (Agg backend, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    from . import experiments as wx

    return wx.run_experiment(name, out, quick=quick)


def _run_parallel(
    args: argparse.Namespace, selected: list[Any], records: list[Any], jobs: int
) -> int:
    """Run the experiments on a process pool; records in registry order."""
    import concurrent.futures as cf
    import multiprocessing as mp

    order = sorted(
        selected,
        key=lambda e: _LONG_FIRST.index(e.name) if e.name in _LONG_FIRST else 99,
    )
    done: dict[str, dict[str, Any]] = {}
    failed = 0
    pool = cf.ProcessPoolExecutor(jobs, mp_context=mp.get_context("spawn"))
    try:
        futures = {
            pool.submit(_pool_job, e.name, args.out, args.quick): e for e in order
        }
        for k, fut in enumerate(cf.as_completed(futures), 1):
            exp = futures[fut]
            try:
                done[exp.name] = fut.result()
                note = f"done in {done[exp.name]['seconds']:.2f} s"
            except Exception as exc:  # one failing experiment must not hide others
                failed += 1
                message = f"{type(exc).__name__}: {exc}"
                note = f"FAILED: {message}"
                done[exp.name] = {
                    **exp.to_dict(),
                    "files": [],
                    "findings": [],
                    "error": message,
                }
            print(f"[{k}/{len(selected)}] {exp.name} ... {note}", file=sys.stderr)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        records.extend(done[e.name] for e in selected if e.name in done)
        raise
    pool.shutdown()
    records.extend(done[e.name] for e in selected)
    return failed


def _run_experiments(
    args: argparse.Namespace, wx: Any, selected: list[Any], records: list[Any]
) -> int:
    """Run the experiments, appending their records; return how many failed."""
    jobs = args.jobs if args.jobs > 0 else (os.cpu_count() or 1)
    jobs = min(jobs, len(selected))
    if jobs > 1:
        return _run_parallel(args, selected, records, jobs)
    failed = 0
    # In a terminal, long experiments show their own sweep's progress below
    # the experiment's line.
    wx.SHOW_PROGRESS = sys.stderr.isatty()
    for i, exp in enumerate(selected, 1):
        print(
            f"[{i}/{len(selected)}] {exp.name} ...",
            end="\n" if wx.SHOW_PROGRESS else "",
            file=sys.stderr,
            flush=True,
        )
        t0 = time.perf_counter()
        try:
            records.append(wx.run_experiment(exp, args.out, quick=args.quick))
            print(f" done in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
        except Exception as exc:  # one failing experiment must not hide the others
            failed += 1
            message = f"{type(exc).__name__}: {exc}"
            print(
                f" FAILED after {time.perf_counter() - t0:.2f} s: {message}",
                file=sys.stderr,
            )
            records.append(
                {**exp.to_dict(), "files": [], "findings": [], "error": message}
            )
    return failed


def _finish_reproduce(
    args: argparse.Namespace,
    records: list[dict[str, Any]],
    failed: int,
    start: float,
    path: str,
) -> int:
    print(
        f"wrote {path}: {len(records) - failed} of {len(records)} experiments in "
        f"{time.perf_counter() - start:.1f} s",
        file=sys.stderr,
    )
    if args.record_expectations:
        _record_expectations(args.record_expectations, records, args.quick)
        print(f"recorded the verdicts in {args.record_expectations}", file=sys.stderr)
    if args.check is not None:
        source = args.check or EXPECTATIONS
        try:
            lost = _check_expectations(source, records, args.quick)
        except (OSError, ValueError) as exc:
            print(f"error: cannot read expectations {source}: {exc}", file=sys.stderr)
            return 1
        for line in lost:
            print(f"NOT REPRODUCED: {line}", file=sys.stderr)
        if lost:
            print(
                f"check failed: {len(lost)} finding(s) recorded as reproduced in "
                f"{source} are not",
                file=sys.stderr,
            )
            return 1
        print(f"check passed against {source}", file=sys.stderr)
    return 1 if failed else 0


def _cmd_advise(args: argparse.Namespace) -> int:
    import wafercoll as wc

    if args.keep < 1:
        raise UsageError(f"--keep must be >= 1, got {args.keep}")
    if args.plot and args.sizes is None:
        raise UsageError("--plot needs --sizes")
    keep = None if args.exhaustive else args.keep
    sizes = args.sizes or [args.size_bytes]
    if sizes[0] < 1:
        raise UsageError("--size-bytes must be >= 1")
    args.size_bytes = sizes[-1]
    topology, machine = _make_topology(args.topology, None, sizes[-1])
    network = _network(args, machine)
    run = wc.advise if args.sizes is None else wc.crossover
    try:
        out = run(
            topology,
            sizes[0] if args.sizes is None else sizes,
            args.collective,
            network,
            keep=keep,
            progress=not args.json,
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    results = [out] if args.sizes is None else out["advice"]
    if args.json:
        doc = [
            {
                "size_bytes": a.size_bytes,
                "lower_bound": a.bound.to_dict(),
                "candidates": [dataclasses.asdict(c) for c in a.candidates],
            }
            for a in results
        ]
        print(json.dumps(doc if args.sizes else doc[0], indent=2))
    elif args.sizes is None:
        print(results[0].table(show_all=args.all))
    else:
        width = max(len(_human_bytes(a.size_bytes)) for a in results)
        print(
            f"{args.collective} on {topology.name} under {network.name}: "
            "the fastest at each size"
        )
        for a in results:
            b = a.best
            print(
                f"{_human_bytes(a.size_bytes).rjust(width)}  {b.name}  "
                f"{_human_seconds(b.time_s)}  ratio {b.ratio:.3f}"
            )
    try:
        if args.csv:
            from ._util import write_atomic

            one = args.sizes is None
            write_atomic(
                args.csv, results[0].to_csv() if one else _crossover_csv(results)
            )
            print(f"wrote {args.csv}", file=sys.stderr)
        if args.plot:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            from .advisor import plot_crossover

            ax = plot_crossover(out)
            ax.figure.tight_layout()
            ax.figure.savefig(args.plot, dpi=150)
            plt.close(ax.figure)
            print(f"wrote {args.plot}", file=sys.stderr)
    except OSError as exc:
        print(f"error: cannot write: {exc}", file=sys.stderr)
        return 1
    return 0


def _crossover_csv(results: list[Any]) -> str:
    """One CSV for many sizes: the size, then each candidate's row."""
    lines: list[str] = []
    for a in results:
        head, *rows = a.to_csv().rstrip("\n").split("\n")
        if not lines:
            lines.append("size_bytes," + head)
        lines.extend(f"{a.size_bytes},{r}" for r in rows)
    return "\n".join(lines) + "\n"


def _cmd_sweep(args: argparse.Namespace) -> int:
    import wafercoll as wc

    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(args.spec, "rb") as f:
            grid = tomllib.load(f)
    except OSError as exc:
        print(f"error: cannot read {args.spec}: {exc}", file=sys.stderr)
        return 1
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{args.spec}: {exc}") from None
    sizes = grid.get("size_bytes")
    if isinstance(sizes, list):
        try:
            grid["size_bytes"] = [_size(v) if isinstance(v, str) else v for v in sizes]
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"{args.spec}: size_bytes: {exc}") from None
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be >= 1, got {args.jobs}")
    cache: Any = False if args.no_cache else (args.cache or True)
    try:
        df = wc.sweep(
            grid, jobs=args.jobs, scheduler=args.scheduler, cache=cache, progress=True
        )
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{args.spec}: {exc}") from None
    from ._util import write_atomic

    try:
        write_atomic(args.out, df.to_csv(index=False))
    except OSError as exc:
        print(f"error: cannot write {args.out}: {exc}", file=sys.stderr)
        return 1
    print(
        f"wrote {args.out}: {len(df)} points ({df.attrs['computed']} computed, "
        f"{df.attrs['cached']} from the cache)"
    )
    return 0


_COMMANDS = {
    "list": _cmd_list,
    "info": _cmd_info,
    "build": _cmd_build,
    "verify": _cmd_verify,
    "simulate": _cmd_simulate,
    "export": _cmd_export,
    "advise": _cmd_advise,
    "sweep": _cmd_sweep,
    "reproduce": _cmd_reproduce,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0 success, 1 defective schedule or failed experiment,
        2 invalid arguments.
    """
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
        return _COMMANDS[args.command](args)
    except UsageError as exc:
        print(f"wafercoll {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except wc.ScheduleError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # e.g. `wafercoll list --json | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
