"""The work ``wafercoll reproduce`` simulates: events and CPU per experiment.

Runs the experiments in this process, one after another (``run(quick)`` as
``reproduce`` calls it, without the plots), with every call of
:func:`wafercoll.simulate` counted: the calls, the packet-stage events of
the default engine (``SimResult.events``) and of the router engine (its
packet-link events), and the process CPU time spent in them. Calls refused
with :class:`wafercoll.SimulationTooLarge` count their CPU time but no events.

The last line sets the events beside ``bench/min_loop.py``'s plain
binary-heap, cut-through loop (about 70 lines, no tie keys, no bookkeeping):
their total at ``--loop-ns`` nanoseconds per event, by default its fastest
rate in the README's table (the ring on ring(1024) with 16 packets per
transfer: 1.418 s for 33.5 M events, 42 ns). The default engine takes 0.7 to
1.1 times that loop's time with one packet per transfer, and half of it where
many events share a time (its time buckets).

Run: ``python bench/reproduce_work.py [--only NAME ...] [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from typing import Any

import wafercoll as wc
import wafercoll.experiments as wx

#: ``bench/min_loop.py``'s fastest rate in the README's table (ns per event).
LOOP_NS = 42.0


class Counter:
    """Wraps :func:`wafercoll.simulate`; sums calls, events and CPU per engine.

    The sums run over the whole process; :meth:`snapshot` and :func:`since`
    give those of one experiment.
    """

    def __init__(self) -> None:
        self.calls: dict[str, int] = defaultdict(int)
        self.events: dict[str, int] = defaultdict(int)
        self.cpu: dict[str, float] = defaultdict(float)
        self.original = sys.modules["wafercoll.simulate"].simulate

    def __call__(self, *args: Any, **kw: Any) -> Any:
        engine = kw.get("engine", "wafercoll")
        t0 = time.process_time()
        try:
            result = self.original(*args, **kw)
        finally:  # a refused run (SimulationTooLarge) counts its time
            self.calls[engine] += 1
            self.cpu[engine] += time.process_time() - t0
        self.events[engine] += int(getattr(result, "events", 0))
        return result

    def install(self) -> None:
        """Replace ``simulate`` wherever a wafercoll module holds the original."""
        for name, module in list(sys.modules.items()):
            if (
                name.startswith("wafercoll")
                and getattr(module, "simulate", None) is self.original
            ):
                module.simulate = self

    def snapshot(self) -> tuple[int, int, int, float]:
        """Calls, default-engine events, router-engine events, CPU in simulate."""
        return (
            sum(self.calls.values()),
            self.events["wafercoll"],
            self.events["routers"],
            sum(self.cpu.values()),
        )


def since(counter: Counter, before: tuple[int, int, int, float]) -> list[Any]:
    """What the counter added since ``before`` (a :meth:`Counter.snapshot`)."""
    return [now - then for now, then in zip(counter.snapshot(), before, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [e.name for e in wx.experiments()]
    parser.add_argument(
        "--only", nargs="+", choices=names, metavar="NAME", help="experiments"
    )
    parser.add_argument(
        "--quick", action="store_true", help="the experiments' quick sizes"
    )
    parser.add_argument(
        "--loop-ns",
        type=float,
        default=LOOP_NS,
        help="ns per event of the minimal loop (default 42)",
    )
    args = parser.parse_args()
    if args.loop_ns <= 0:
        parser.error(f"--loop-ns must be > 0, got {args.loop_ns}")
    counter = Counter()
    counter.install()
    print(
        f"wafercoll {wc.__version__}, {'quick' if args.quick else 'full'} sizes; "
        "CPU seconds of this process"
    )
    head = ("experiment", "CPU s", "simulate s", "calls", "events", "router events")
    print("{:<24} {:>8} {:>10} {:>6} {:>14} {:>14} ns/event".format(*head))
    total_cpu = 0.0
    for exp in wx.experiments():
        if args.only and exp.name not in args.only:
            continue
        before = counter.snapshot()
        t0 = time.process_time()
        exp.run(quick=args.quick)
        cpu = time.process_time() - t0
        total_cpu += cpu
        calls, ev, rev, sim = since(counter, before)
        per = f"{1e9 * sim / (ev + rev):.0f}" if ev + rev else "-"
        row = f"{exp.name:<24} {cpu:8.1f} {sim:10.1f} {calls:6d}"
        print(f"{row} {ev:14,d} {rev:14,d} {per:>8}", flush=True)
    calls, ev, rev, sim = counter.snapshot()
    print(f"{'all':<24} {total_cpu:8.1f} {sim:10.1f} {calls:6d} {ev:14,d} {rev:14,d}")
    for engine in sorted(counter.cpu):
        n, sec = counter.events[engine], counter.cpu[engine]
        rate = f", {1e9 * sec / n:.0f} ns per event" if n else ""
        print(f"engine {engine}: {n / 1e9:.3f} G events in {sec:.1f} s{rate}")
    events = ev + rev
    print(
        f"min_loop: {events / 1e9:.3f} G events at {args.loop_ns:g} ns each "
        f"(bench/min_loop.py's loop) = {events * args.loop_ns * 1e-9:.0f} s; "
        f"simulate took {sim:.0f} s of {total_cpu:.0f} s of CPU"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
