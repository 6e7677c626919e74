"""Benchmark: wafercoll beside LogGOPSim on its own model, SimGrid, BookSim, a loop.

LogGOPSim (the spcl/LogGOPSim repository, commit 76451de) simulates LogGP on
GOAL schedules. Both simulators here read the same GOAL file, made by
LogGOPSim's ``schedgen``:

* ``dissemination``: schedgen's dissemination barrier, p * ceil(log2 p)
  messages of 1 byte, rank r's round-k send waiting for its round-(k-1)
  receive.
* ``doublering``: schedgen's ``doublering``, a ring each way; every rank but
  0 forwards after it has received, so each ring is a chain of p messages.

(schedgen's ``allreduce_recdoub`` is left out: from 256 ranks on its receives
do not all match a send.) LogGOPSim runs with its defaults (L = 2500 ns,
o = 1500 ns, g = 1000 ns, G = 6 ns per byte, its file ``loggopsim_cmdline.ggo``);
wafercoll simulates ``wc.NetworkModel.loggp`` with the same numbers on
``wc.topology.star(p)``, the network LogGP assumes. The two models differ
slightly (wafercoll charges one more G per message and models neither g nor
the CPU time of o; see ``NetworkModel.loggp``), so the simulated times are
printed side by side, not required to be equal.

``wc.io.read_goal`` parses and matches GOAL in the C++ core. Above
``--read-max`` ranks (default 262,144: every size) it is not run, and the
simulation is given the same messages built directly with
``wc.Schedule.from_arrays`` (:func:`direct_schedule`); the script checks
first, at small sizes, that these schedules have exactly the messages and
dependencies ``read_goal`` gives and simulate to the same finish times.

Each measurement runs in a child process of its own, and the peak memory is
that child's (``os.wait4``'s ``ru_maxrss``; for wafercoll's simulation, the
peak resident set since the simulation started, read from ``VmHWM`` after a
reset through ``/proc/self/clear_refs``, beside the resident set before it).
Reading is timed apart from simulating: LogGOPSim's ``txt2bin`` against
``wc.io.read_goal``, then ``LogGOPSim -f`` against ``wc.simulate`` (which
includes building the star). The schedule read by ``read_goal`` is pickled
once without its labels (text for people, which the simulation does not
read), and the simulation child loads that pickle (not timed, before the
memory peak is reset), so the read and the simulation are measured in
separate processes.

``--baseline-python PY`` also runs the simulation children under another
interpreter, one with an earlier wafercoll installed: before and after a
change in one run. SimGrid (``engine="simgrid"``, when SimGrid's Python
module is installed) is timed at ``--simgrid-sizes`` (it is far slower).

``--mcm-artifact DIR`` also runs the MCM artifact's BookSim on TTO
(sabuj7177/TTO_HPCA_2024, commit 156128c: ``src/simulate.py`` with the
command of its run script ``utils/run_scripts/bw/mesh_overlap_2d_1_bw.sh`` for
4x4 chiplets, under ``PYTHONHASHSEED=0``, with the interpreter
``--mcm-python`` that has its BookSim module) at ``--mcm-sizes-mib`` (1 and
16), beside a process of wafercoll that builds and simulates TTO as the
artifact runs it (``mesh_tto_artifact_allreduce`` under
``wc.mcm.ARTIFACT``, :func:`wafercoll.experiments.mcm_common.simulate_variant`).
Both are whole processes (Python start-up included: the artifact's is a
Python program driving BookSim), timed with their peaks; wafercoll's build
and simulation are also timed alone, and both cycle counts are printed.
The artifact's set-up is its readme's (a virtual environment with its
``requirements.txt``, ``make lib`` in ``src/booksim2/src`` with flex and
bison installed, ``python update_cfg_files.py`` in ``src``).

``--min-loop`` also runs ``bench/min_loop.py``'s cases (``--cxx``): wafercoll's
simulation against a minimal binary-heap event loop of the same events, the
limit. ``--only-extra`` skips the GOAL cases.

Building LogGOPSim (not done in CI; Debian/Ubuntu)::

    apt-get install g++ gengetopt re2c libgraphviz-dev
    # in a checkout of spcl/LogGOPSim:
    cd src/LogGOPSim
    gengetopt -F loggopsim_cmdline -i loggopsim_cmdline.ggo
    gengetopt -F txt2bin_cmdline -i txt2bin_cmdline.ggo
    re2c txt2bin.re -o txt2bin.cpp
    g++ -std=c++11 -O2 -DNDEBUG -I/usr/include/graphviz LogGOPSim.cpp \\
        loggopsim_cmdline.c -lcgraph -o $DIR/LogGOPSim
    g++ -O2 txt2bin.cpp txt2bin_cmdline.c -o $DIR/txt2bin
    cd ../Schedgen
    gengetopt -F schedgen_cmdline -i schedgen_cmdline.ggo
    g++ -std=c++11 -O2 buffer_element.cpp schedgen.cpp process_trace.cpp \\
        schedgen_cmdline.c -o $DIR/schedgen

(the repository's own CMake build also wants MPI, Fortran and Clang for its
tracing libraries). Then, from the repository root::

    python bench/peers.py --loggopsim $DIR
    python bench/peers.py --sizes 4096 16384 --patterns dissemination
    python bench/peers.py --baseline-python /path/to/old/venv/bin/python
    python bench/peers.py --only-extra --min-loop \\
        --mcm-artifact /path/to/TTO_HPCA_2024 --mcm-python /path/to/venv/bin/python

Without the LogGOPSim binaries (``--loggopsim``, else ``$LOGGOPSIM_DIR``,
else ``PATH``) LogGOPSim is skipped; without ``schedgen`` the GOAL files are
written by this script (the same operations, checked against schedgen's
output whenever schedgen is there), and wafercoll is still timed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MIB = 1 << 20
#: LogGOPSim's default LogGP parameters (spcl/LogGOPSim, src/LogGOPSim/
#: loggopsim_cmdline.ggo: L 2500 ns, o 1500 ns, g 1000 ns, G 6 ns per byte).
LOGGP = {"L_s": 2.5e-6, "o_s": 1.5e-6, "g_s": 1e-6, "G_s_per_byte": 6e-9}
PATTERNS = ("dissemination", "doublering")


# --------------------------------------------------------------- GOAL files


def _rank_goal(pattern: str, p: int, r: int) -> str:
    """Rank r's block of :func:`goal_text`: sends to, receives from, requires."""
    lines = [f"\nrank {r} {{\n"]
    if pattern == "dissemination":
        # Labels 2k+1 (send, round k) and 2k+2 (recv); sends after round 0
        # require the previous round's receive.
        k, dist = 0, 1
        while dist < p:
            lines.append(f"l{2 * k + 1}: send 1b to {(r + dist) % p} tag 0\n")
            if k:
                lines.append(f"l{2 * k + 1} requires l{2 * k}\n")
            lines.append(f"l{2 * k + 2}: recv 1b from {(r - dist) % p} tag 0\n")
            k, dist = k + 1, dist << 1
    elif pattern == "doublering":
        # Forward ring (l1, l2), then backward (l3, l4); rank 0 starts both.
        for first, step in ((1, 1), (3, -1)):
            lines.append(f"l{first}: send 1b to {(r + step) % p} tag 0\n")
            lines.append(f"l{first + 1}: recv 1b from {(r - step) % p} tag 0\n")
            if r > 0:
                lines.append(f"l{first} requires l{first + 1}\n")
    else:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    lines.append("}\n")
    return "".join(lines)


def goal_text(pattern: str, p: int) -> str:
    """The GOAL text schedgen writes for ``pattern`` on ``p`` ranks, 1 byte.

    Written from the operations schedgen's patterns perform (its ``-p
    dissemination`` and ``-p doublering``), in the same order and with the
    same labels, so the files are identical (checked against schedgen by
    :func:`check_goal_writer` whenever schedgen is found).
    """
    return f"num_ranks {p}\n" + "".join(_rank_goal(pattern, p, r) for r in range(p))


def make_goal(pattern: str, p: int, work: Path, schedgen: str | None) -> Path:
    """The GOAL file of ``pattern`` on ``p`` ranks (kept in ``work``)."""
    path = work / f"{pattern}_{p}.goal"
    if path.exists():
        return path
    if schedgen:
        subprocess.run(
            [schedgen, "-p", pattern, "-s", str(p), "-o", str(path)],
            check=True,
            capture_output=True,
        )
    else:
        path.write_text(goal_text(pattern, p))
    return path


def check_goal_writer(schedgen: str, work: Path) -> None:
    """Fail loudly if :func:`goal_text` no longer matches schedgen's output."""
    for pattern in PATTERNS:
        for p in (1, 2, 7, 16):
            path = work / f"check_{pattern}_{p}.goal"
            subprocess.run(
                [schedgen, "-p", pattern, "-s", str(p), "-o", str(path)],
                check=True,
                capture_output=True,
            )
            if path.read_text() != goal_text(pattern, p):
                raise AssertionError(f"goal_text({pattern!r}, {p}) != schedgen's file")


def direct_schedule(pattern: str, p: int) -> Any:
    """The messages and dependencies of :func:`goal_text`, without a file.

    Message ``k * p + r`` of dissemination is rank r's round-k send to
    ``r + 2^k``; it waits for the round-(k-1) message rank r received.
    Doublering's message ``r`` goes from r to ``r + 1`` and ``p + r`` from r
    to ``r - 1``; for ``r > 0`` each waits for the message r received on the
    same ring. Every message is one block of 1 byte, collective
    ``"unknown"``, as ``read_goal`` makes them.
    """
    import numpy as np

    import wafercoll as wc

    r = np.arange(p, dtype=np.int64)
    if pattern == "dissemination":
        rounds = (p - 1).bit_length()
        src = np.tile(r, rounds)
        k = np.repeat(np.arange(rounds, dtype=np.int64), p)
        dst = (src + (1 << k)) % p
        prev = (src - (1 << np.maximum(k - 1, 0))) % p
        dep = np.where(k > 0, (k - 1) * p + prev, -1)
    elif pattern == "doublering":
        src = np.concatenate([r, r])
        dst = np.concatenate([(r + 1) % p, (r - 1) % p])
        forward = np.where(r > 0, r - 1, -1)
        backward = np.where(r > 0, p + (r + 1) % p, -1)
        dep = np.concatenate([forward, backward])
    else:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    t = src.size
    has = dep >= 0
    return wc.Schedule.from_arrays(
        p,
        np.ones(t, dtype=np.int64),
        "unknown",
        src=src,
        dst=dst,
        block_lo=np.arange(t),
        block_hi=np.arange(t) + 1,
        deps=dep[has],
        dep_offsets=np.concatenate([[0], np.cumsum(has)]),
        name=f"{pattern}_{p}",
    )


def check_direct_schedule(work: Path) -> None:
    """Fail loudly unless :func:`direct_schedule` is what ``read_goal`` reads."""
    import numpy as np

    import wafercoll as wc

    net = wc.NetworkModel.loggp(**LOGGP)

    def messages(s: Any) -> list[tuple[int, int, tuple]]:
        src, dst = s.src.tolist(), s.dst.tolist()
        deps, off = s.dependencies()
        return sorted(
            (src[i], dst[i], tuple(sorted((src[j], dst[j]) for j in deps[a:b])))
            for i, (a, b) in enumerate(zip(off[:-1], off[1:], strict=True))
        )

    for pattern in PATTERNS:
        for p in (2, 7, 64, 100):
            path = work / f"check_direct_{pattern}_{p}.goal"
            path.write_text(goal_text(pattern, p))
            a, b = wc.io.read_goal(path), direct_schedule(pattern, p)
            fa, fb = (
                np.sort(
                    wc.simulate(
                        s, wc.topology.star(p), net, transfers=True
                    ).transfer_finish_s
                )
                for s in (a, b)
            )
            if messages(a) != messages(b) or not np.array_equal(fa, fb):
                raise AssertionError(f"direct_schedule({pattern!r}, {p}) != read_goal")


# ------------------------------------------------------------ child processes


def _status_kib(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        m = re.search(rf"{field}:\s+(\d+)", f.read())
    return int(m.group(1)) if m else 0


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False if not allowed."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def child_read(goal: str, pickled: str) -> dict[str, Any]:
    """Time ``read_goal`` of one file; pickle the schedule for the sim child."""
    import wafercoll as wc

    t0 = time.perf_counter()
    s = wc.io.read_goal(goal)
    read_s = time.perf_counter() - t0
    s.labels = None  # text for people; the simulation does not read it
    with open(pickled, "wb") as f:
        pickle.dump(s, f, protocol=pickle.HIGHEST_PROTOCOL)
    # VmHWM, the peak of this process's own memory since exec: ru_maxrss
    # would also count the parent's, inherited at fork.
    return {
        "read_s": read_s,
        "transfers": s.num_transfers,
        "read_peak_mib": _status_kib("VmHWM") / 1024,
    }


def child_sim(source: str, engine: str) -> dict[str, Any]:
    """Time star + simulate of one schedule and measure its memory.

    ``source`` is a pickle written by :func:`child_read`, or
    ``direct:PATTERN:P`` for :func:`direct_schedule`.
    """
    import gc

    import wafercoll as wc

    out: dict[str, Any] = {"import_rss_mib": _status_kib("VmRSS") / 1024}
    if source.startswith("direct:"):
        _, pattern, p = source.split(":")
        s = direct_schedule(pattern, int(p))
    else:
        with open(source, "rb") as f:
            s = pickle.load(f)
    gc.collect()
    net = wc.NetworkModel.loggp(**LOGGP)
    out["transfers"] = s.num_transfers
    out["before_sim_rss_mib"] = _status_kib("VmRSS") / 1024
    reset = _reset_peak()
    t0 = time.perf_counter()
    try:
        topo = wc.topology.star(s.num_ranks)
        r = wc.simulate(s, topo, net, engine=engine)
    except ValueError as err:  # an earlier build may refuse the size
        out["error"] = str(err)
        return out
    out["sim_s"] = time.perf_counter() - t0
    out["sim_time_s"] = float(r.time_s)
    # The process's peak since the simulation started (interpreter, NumPy,
    # wafercoll and the schedule included), or since the process started
    # where the peak cannot be reset.
    out["sim_peak_mib"] = _status_kib("VmHWM") / 1024
    out["peak_since_sim"] = reset
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if children:  # SimGrid runs in a process of its own (counted from fork)
        out["engine_process_peak_mib"] = children
    return out


def run_python(cmd: list[str], timeout: float) -> dict[str, Any]:
    """Run a child of this script; the JSON it prints last, or the error."""
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:g} s"}
    wall = time.perf_counter() - t0
    if proc.returncode:
        return {"error": (proc.stderr or proc.stdout)[-800:], "process_s": wall}
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"error": "no result: " + proc.stdout[-800:], "process_s": wall}
    out["process_s"] = wall
    return out


def run_timed(
    cmd: list[str],
    timeout: float,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run a program (in ``cwd``, with ``env``): wall time, peak RSS, output.

    The peak comes from GNU time (``/usr/bin/time -f %M``), which forks the
    program from its own small process. ``wait4``'s ``ru_maxrss`` would also
    count this Python process's memory, which the child holds from fork
    until exec; it is used, and said to be an upper bound, without GNU time.
    """
    gnu_time = "/usr/bin/time"
    peak_file = None
    if os.access(gnu_time, os.X_OK):
        fd, peak_file = tempfile.mkstemp(suffix=".time")
        os.close(fd)
        cmd = [gnu_time, "-f", "%M", "-o", peak_file, *cmd]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env=env,
    )
    assert proc.stdout is not None
    chunks = []
    for line in proc.stdout:  # drain, so the child never blocks on the pipe
        chunks.append(line)
        if time.perf_counter() - t0 > timeout:
            proc.kill()
            break
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = status  # reaped here, not by Popen
    text = "".join(chunks)
    out: dict[str, Any] = {"wall_s": time.perf_counter() - t0, "output": text}
    if peak_file:
        with open(peak_file, encoding="ascii") as f:
            kib = f.read().split()
        os.unlink(peak_file)
        out["peak_mib"] = int(kib[-1]) / 1024 if kib else math.nan
    else:
        out["peak_mib"] = usage.ru_maxrss / 1024
        out["peak_is_upper_bound"] = True
    if status:
        out["error"] = text[-800:] or f"exit status {status}"
    return out


# --------------------------------------------------------------------- runs


def find_tools(directory: str | None) -> dict[str, str | None]:
    """Paths of LogGOPSim, txt2bin and schedgen (None where not found)."""
    found: dict[str, str | None] = {}
    for name in ("LogGOPSim", "txt2bin", "schedgen"):
        path = os.path.join(directory, name) if directory else None
        found[name] = path if path and os.access(path, os.X_OK) else shutil.which(name)
    return found


def loggopsim(tools: dict[str, str | None], goal: Path, timeout: float) -> dict:
    """txt2bin and LogGOPSim on one GOAL file: times, peaks, simulated time."""
    if not (tools["LogGOPSim"] and tools["txt2bin"]):
        return {"skipped": "LogGOPSim not found"}
    binary = goal.with_suffix(".bin")
    conv = run_timed([tools["txt2bin"], "-i", str(goal), "-o", str(binary)], timeout)
    if "error" in conv:
        return {"error": "txt2bin: " + conv["error"]}
    sim = run_timed([tools["LogGOPSim"], "-b", "-f", str(binary)], timeout)
    binary.unlink(missing_ok=True)
    if "error" in sim:
        return {"error": "LogGOPSim: " + sim["error"]}
    m = re.search(r"Maximum finishing time at host \d+: (\d+)", sim["output"])
    return {
        "read_s": conv["wall_s"],
        "read_peak_mib": conv["peak_mib"],
        "sim_s": sim["wall_s"],
        "sim_peak_mib": sim["peak_mib"],
        "sim_time_s": int(m.group(1)) * 1e-9 if m else math.nan,
    }


def _fmt(v: Any, f: str) -> str:
    if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)):
        return format(v, f)
    return "-"


def print_row(row: dict[str, Any]) -> None:
    """Print one case: per simulator its read, simulation and memory."""
    case = f"{row['pattern']} p={row['p']:,}"
    for who, d in row["results"].items():
        note = d.get("skipped") or d.get("error")
        if note:
            print(f"{case:<24} {who:<22} {note.strip().splitlines()[-1][:70]}")
            continue
        read = _fmt(d.get("read_s"), "8.2f")
        mem = _fmt(d.get("read_peak_mib"), "8.0f")
        peak = max(d.get("sim_peak_mib", 0), d.get("engine_process_peak_mib", 0))
        sim_s, sim_mib = _fmt(d.get("sim_s"), "8.3f"), _fmt(peak, "8.1f")
        print(
            f"{case:<24} {who:<22} {read:>8} {mem:>8} {sim_s:>8} {sim_mib:>8} "
            f"{_fmt(d.get('sim_time_s'), '13.6e')}  {d.get('schedule', '')}"
        )


def measure(args: argparse.Namespace, tools: dict, pattern: str, p: int) -> dict:
    """Every simulator on one case."""
    work = Path(args.work)
    goal = make_goal(pattern, p, work, tools["schedgen"])
    results: dict[str, Any] = {}
    main_sizes = p in args.sizes
    if main_sizes:
        results["LogGOPSim"] = loggopsim(tools, goal, args.timeout)
    source, read = f"direct:{pattern}:{p}", {}
    if p <= args.read_max:
        pickled = goal.with_suffix(".pickle")
        cmd = [sys.executable, __file__, "--child-read", str(goal), str(pickled)]
        read = run_python(cmd, args.timeout)
        if "error" not in read:
            source = str(pickled)
    else:
        read = {"read_note": f"not run (p > --read-max {args.read_max})"}

    def sim(python: str, engine: str) -> dict[str, Any]:
        cmd = [python, __file__, "--child-sim", source, "--engine", engine]
        out = run_python(cmd, args.timeout)
        out["schedule"] = "read_goal" if source.endswith(".pickle") else "direct"
        return out

    if main_sizes:
        keep = ("read_s", "read_peak_mib", "read_note", "error")
        results["wafercoll"] = {
            **sim(sys.executable, "wafercoll"),
            **{
                ("read_error" if k == "error" else k): v
                for k, v in read.items()
                if k in keep
            },
        }
        if args.baseline_python:
            results["wafercoll (before)"] = sim(args.baseline_python, "wafercoll")
    if args.simgrid and p in args.simgrid_sizes:
        results["SimGrid (engine=)"] = sim(sys.executable, "simgrid")
    if source.endswith(".pickle"):
        Path(source).unlink(missing_ok=True)
    return {"pattern": pattern, "p": p, "results": results}


# ------------------------------------------- the MCM artifact's BookSim, TTO

#: The MCM artifact's name of TTO (its ``--allreduce`` value; sabuj7177/
#: TTO_HPCA_2024 156128c, ``utils/run_scripts/bw/mesh_overlap_2d_1_bw.sh``).
TTO_ALLREDUCE = "mesh_overlap_2d_1"
#: 4x4 chiplets, the mesh of the comparison.
TTO_CHIPLETS = 16


def _on_path(directory: Path) -> None:
    """Make the scripts in ``directory`` importable (once)."""
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))


def child_mcm(size: int) -> dict[str, Any]:
    """Build and simulate TTO as the artifact runs it, on 4x4 (this process)."""
    from wafercoll.experiments.mcm_common import simulate_variant

    t0 = time.perf_counter()
    r = simulate_variant("TTO", 4, 4, size)
    return {"sim_s": time.perf_counter() - t0, "cycles": int(round(r.cycles))}


def booksim_tto(artifact: Path, python: str, size: int, timeout: float) -> dict:
    """The artifact's TTO on 4x4 at ``size`` bytes, as its run script runs it.

    The command is the run script's (``tools/rerun_mcm_artifact.py`` fills
    in its variables), run with ``python`` (the artifact's interpreter, its
    BookSim module built) under ``PYTHONHASHSEED=0``. Returns the process's
    wall time and peak memory and the cycles of its result file.
    """
    _on_path(Path(__file__).resolve().parent.parent / "tools")
    from rerun_mcm_artifact import RUN_SCRIPTS, expand, script_command

    script = (
        artifact / "utils/run_scripts/bw" / RUN_SCRIPTS[TTO_ALLREDUCE]
    ).read_text()
    with tempfile.TemporaryDirectory() as tmp:
        args = expand(
            script_command(script, TTO_CHIPLETS), artifact, size // 4, Path(tmp)
        )
        env = dict(os.environ, SIMHOME=str(artifact), PYTHONHASHSEED="0")
        env["BOOKSIMSRC"] = str(artifact / "src/booksim2/src")
        cmd = [python, str(artifact / "src/simulate.py"), *args]
        out = run_timed(cmd, timeout, cwd=artifact / "src", env=env)
        found = list(Path(tmp).rglob("*.json"))
        if "error" in out or len(found) != 1:
            return {"error": out.get("error", "no result file")}
        result = json.loads(found[0].read_text())
    cycles = int(result["results"]["performance"]["allreduce"]["total"])
    return {"process_s": out["wall_s"], "peak_mib": out["peak_mib"], "cycles": cycles}


def mcm_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """BookSim (the artifact) against wafercoll on TTO 4x4, per size."""
    artifact = Path(args.mcm_artifact).resolve()
    print(
        f"\nTTO on 4x4 chiplets, the MCM artifact's BookSim ({artifact}) against "
        "wafercoll's artifact variant (whole processes; wafercoll's build + "
        "simulate also alone)"
    )
    print(
        f"{'size':>8} {'BookSim s':>10} {'MiB':>6} {'cycles':>10} "
        f"{'ours s':>8} {'MiB':>6} {'sim s':>7} {'cycles':>10} "
        f"{'differ':>8} {'faster':>8}"
    )
    rows = []
    for mib in args.mcm_sizes_mib:
        size = mib * MIB
        theirs = booksim_tto(artifact, args.mcm_python, size, args.timeout)
        cmd = [sys.executable, __file__, "--child-mcm", str(size)]
        run = run_timed(cmd, args.timeout)
        ours = dict(run)
        if "error" not in run:
            ours.update(json.loads(run["output"].strip().splitlines()[-1]))
        row = {"size_mib": mib, "booksim": theirs, "wafercoll": ours}
        rows.append(row)
        for who, d in (("BookSim", theirs), ("wafercoll", ours)):
            if "error" in d:
                print(f"{mib:>5} MiB {who}: {d['error'].strip().splitlines()[-1][:70]}")
        if "error" in theirs or "error" in ours:
            continue
        print(
            f"{mib:>4} MiB {theirs['process_s']:>10.2f} {theirs['peak_mib']:>6.0f} "
            f"{theirs['cycles']:>10,} {ours['wall_s']:>8.2f} {ours['peak_mib']:>6.0f} "
            f"{ours['sim_s']:>7.3f} {ours['cycles']:>10,} "
            f"{ours['cycles'] / theirs['cycles'] - 1:>+8.2%} "
            f"{theirs['process_s'] / ours['wall_s']:>7.1f}x",
            flush=True,
        )
    return rows


# ------------------------------------------------------- the minimal loop


def min_loop_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """``bench/min_loop.py``'s cases: wafercoll against the minimal loop."""
    _on_path(Path(__file__).resolve().parent)
    import min_loop

    print(
        "\nAgainst the limit, a minimal binary-heap event loop (bench/min_loop.py; "
        "simulate whole against the loop alone, best of 3)"
    )
    print(
        f"{'case':<16} {'transfers':>10} {'simulate s':>10} {'loop s':>8} "
        f"{'ratio':>6} same"
    )
    rows = []
    for row in min_loop.run_cases(min_loop.CASES, args.cxx, 3):
        rows.append(row)
        print(
            f"{row['case']:<16} {row['transfers']:>10,} {row['wafercoll_s']:>10.3f} "
            f"{row['loop_s']:>8.3f} {row['ratio']:>5.2f}x "
            f"{'yes' if row['same'] else 'NO'}",
            flush=True,
        )
    return rows


def goal_rows(args: argparse.Namespace, tools: dict, work: Path) -> list[dict]:
    """LogGOPSim, wafercoll and SimGrid on the GOAL cases, printed as they run."""
    if tools["schedgen"]:
        check_goal_writer(tools["schedgen"], work)
    check_direct_schedule(work)
    print(
        f"\n{'case':<24} {'simulator':<22} {'read s':>8} {'read MiB':>8} "
        f"{'sim s':>8} {'sim MiB':>8} {'simulated s':>13}"
    )
    rows = []
    sizes = set(args.sizes) | (set(args.simgrid_sizes) if args.simgrid else set())
    for pattern in args.patterns:
        for p in sorted(sizes):
            row = measure(args, tools, pattern, p)
            rows.append(row)
            print_row(row)
            sys.stdout.flush()
    print("\nwafercoll's simulation against LogGOPSim's (target: faster everywhere):")
    for row in rows:
        a = row["results"].get("LogGOPSim", {})
        b = row["results"].get("wafercoll", {})
        if "sim_s" in a and "sim_s" in b:
            print(
                f"  {row['pattern']} p={row['p']:,}: {a['sim_s'] / b['sim_s']:.2f}x "
                f"({a['sim_s']:.3f} s / {b['sim_s']:.3f} s); memory "
                f"{a['sim_peak_mib']:.0f} / {b['sim_peak_mib']:.0f} MiB; simulated "
                f"time differs by {b['sim_time_s'] / a['sim_time_s'] - 1:+.3%}"
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loggopsim", metavar="DIR", help="LogGOPSim binaries")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[4096, 16384, 65536, 262144]
    )
    parser.add_argument("--patterns", nargs="+", choices=PATTERNS, default=PATTERNS)
    parser.add_argument("--simgrid-sizes", type=int, nargs="*", default=[256, 1024])
    parser.add_argument("--read-max", type=int, default=262144, help="read_goal up to")
    parser.add_argument("--baseline-python", metavar="PY", help="an earlier build")
    parser.add_argument("--work", default="/tmp/wafercoll-peers", help="GOAL files")
    parser.add_argument("--timeout", type=float, default=1800.0, help="per child, s")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--child-read", nargs=2, metavar=("GOAL", "PICKLE"))
    parser.add_argument("--child-sim", metavar="SOURCE")
    parser.add_argument("--engine", default="wafercoll")
    parser.add_argument(
        "--mcm-artifact", metavar="DIR", help="a set-up clone of the MCM artifact"
    )
    parser.add_argument(
        "--mcm-python", default=sys.executable, metavar="PY", help="its interpreter"
    )
    parser.add_argument("--mcm-sizes-mib", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--child-mcm", type=int, metavar="BYTES")
    parser.add_argument(
        "--min-loop", action="store_true", help="also run min_loop.py's cases"
    )
    parser.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    parser.add_argument(
        "--only-extra",
        action="store_true",
        help="skip the GOAL cases (with --mcm-artifact or --min-loop)",
    )
    args = parser.parse_args()
    if args.child_mcm:
        print(json.dumps(child_mcm(args.child_mcm)))
        return 0
    if args.child_read:
        print(json.dumps(child_read(*args.child_read)))
        return 0
    if args.child_sim:
        print(json.dumps(child_sim(args.child_sim, args.engine)))
        return 0

    import wafercoll as wc
    from wafercoll._simgrid import simgrid_available

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tools = find_tools(args.loggopsim or os.environ.get("LOGGOPSIM_DIR"))
    args.simgrid = simgrid_available()
    print(
        f"wafercoll {wc.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs; LogGOPSim: "
        f"{tools['LogGOPSim'] or 'not found, skipped'}; SimGrid: "
        f"{'yes' if args.simgrid else 'not installed, skipped'}"
    )
    if args.only_extra and not (args.mcm_artifact or args.min_loop):
        parser.error("--only-extra needs --mcm-artifact or --min-loop")
    if args.mcm_artifact and not Path(args.mcm_artifact, "src/simulate.py").is_file():
        parser.error(f"--mcm-artifact: no src/simulate.py in {args.mcm_artifact}")
    out: dict[str, Any] = {}
    if not args.only_extra:
        out["goal"] = goal_rows(args, tools, work)
    if args.mcm_artifact:
        out["mcm_tto"] = mcm_rows(args)
    if args.min_loop:
        out["min_loop"] = min_loop_rows(args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
