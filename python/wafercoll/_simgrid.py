"""SimGrid as a second simulation engine (``simulate(..., engine="simgrid")``).

The schedule's transfers are replayed as SimGrid S4U communications
(``Comm.sendto_async`` between hosts) over a platform built from the
wafercoll topology: a host per endpoint, a SimGrid link per topology link
(its bandwidth, its latency plus the model's ``hop_latency_s``), the
topology's own routes, and a private link per source of infinite bandwidth
and latency ``alpha_s`` in front of every route (the per-message start-up).
A transfer starts when its dependencies have completed; a multicast is one
communication per destination. A transfer of 0 B is no SimGrid communication
(SimGrid 3.32 never completes one of those among others in ``wait_any``): it
arrives, as in wafercoll, ``alpha_s`` plus its route's latencies after it
starts. SimGrid shares each link's bandwidth among
the flows crossing it (max-min fairness, its CM02 model with the TCP
corrections off), where wafercoll moves packets first come, first served.

Without contention the two agree (a message alone takes its latencies plus
``bytes / bottleneck bandwidth`` in both); under contention they differ, and
the difference is the point of a cross-check. Packets, switching, ports,
flits and reduction or copy costs do not exist in a flow model: such
network models are refused.

SimGrid keeps one simulation per process, so each run is a child process
(``python -m wafercoll._simgrid``) that reads the problem from and writes
the result to a temporary folder. The ``simgrid`` module is SimGrid's own
Python binding: Debian/Ubuntu ``apt-get install python3-simgrid`` (found
there also from a virtual environment) or ``pip install simgrid``.
"""

from __future__ import annotations

import glob
import heapq
import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
from typing import Any

import numpy as np

__all__ = ["find_simgrid", "simgrid_available"]

_DEB_DIRS = ("/usr/lib/python3/dist-packages",)


def find_simgrid() -> str | None:
    """Path of an importable ``simgrid`` extension module, or None."""
    spec = importlib.util.find_spec("simgrid")
    if spec is not None and spec.origin:
        return spec.origin
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    for d in _DEB_DIRS:
        for path in glob.glob(os.path.join(d, f"simgrid{suffix}")):
            return path
    return None


def simgrid_available() -> bool:
    """Whether ``engine="simgrid"`` can run here."""
    return find_simgrid() is not None


def _import_simgrid() -> Any:
    path = find_simgrid()
    if path is None:
        raise ImportError(
            'engine="simgrid" needs SimGrid\'s Python module: apt-get install '
            "python3-simgrid (Debian/Ubuntu) or pip install simgrid"
        )
    spec = importlib.util.find_spec("simgrid")
    if spec is not None:
        import simgrid

        return simgrid
    spec = importlib.util.spec_from_file_location("simgrid", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = mod
    spec.loader.exec_module(mod)
    return mod


_UNSUPPORTED = (
    ("gamma_s_per_byte", 0.0),
    ("copy_s_per_byte", 0.0),
    ("ports", None),
    ("dependencies", "complete"),
    ("pad_packets", False),
    ("switch_overhead_s", 0.0),
    ("ecmp", False),
    ("spray", False),
)


def run(schedule: Any, topology: Any, network: Any, placement: np.ndarray) -> dict:
    """Simulate with SimGrid; the raw result dict of ``SimResult``."""
    for name, default in _UNSUPPORTED:
        if getattr(network, name) != default:
            raise ValueError(
                f'engine="simgrid" is a flow-level model without {name}; '
                f"use a network model with {name}={default!r}"
            )
    if find_simgrid() is None:
        _import_simgrid()  # raises the ImportError with the install hint
    s = schedule
    c = s._core
    nbytes = s.transfer_bytes()
    links = topology.links
    bw = np.asarray(links["bandwidth_Bps"], float)
    if network.bandwidth_Bps is not None:
        bw = np.full_like(bw, network.bandwidth_Bps)
    lat = np.asarray(links["latency_s"], float) + network.hop_latency_s
    src = [int(placement[r]) for r in c.src.tolist()]
    # Each array once: the core writes out a fresh copy on every access.
    doff, dsts = c.dst_offsets.tolist(), c.dsts.tolist()
    eoff, deps = c.dep_offsets.tolist(), c.deps.tolist()
    pairs = sorted(
        {
            (src[t], int(placement[d]))
            for t in range(len(src))
            for d in dsts[doff[t] : doff[t + 1]]
        }
    )
    routes = {f"{a},{b}": topology.route(a, b).tolist() for a, b in pairs}
    problem = {
        "endpoints": int(topology.num_endpoints),
        "bandwidth": bw.tolist(),
        "latency": lat.tolist(),
        "alpha": float(network.alpha_s),
        "routes": routes,
        "src": src,
        "dst": [
            [int(placement[d]) for d in dsts[doff[t] : doff[t + 1]]]
            for t in range(len(src))
        ],
        "bytes": nbytes.tolist(),
        "deps": [deps[eoff[t] : eoff[t + 1]] for t in range(len(src))],
    }
    with tempfile.TemporaryDirectory(prefix="wafercoll-simgrid-") as tmp:
        inp, out = os.path.join(tmp, "in.json"), os.path.join(tmp, "out.json")
        with open(inp, "w", encoding="utf-8") as fh:
            json.dump(problem, fh)
        proc = subprocess.run(
            [sys.executable, "-m", "wafercoll._simgrid", inp, out],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not os.path.exists(out):
            raise RuntimeError(
                f"the SimGrid run failed (exit {proc.returncode}):\n"
                f"{proc.stderr.strip()[-2000:]}"
            )
        with open(out, encoding="utf-8") as fh:
            res = json.load(fh)
    ready = np.asarray(res["ready"], float)
    finish = np.asarray(res["finish"], float)
    p = s.num_ranks
    rank_finish = np.zeros(p)
    tsrc = c.src
    for t in range(len(src)):
        rank_finish[tsrc[t]] = max(rank_finish[tsrc[t]], finish[t])
        for d in dsts[doff[t] : doff[t + 1]]:
            rank_finish[d] = max(rank_finish[d], finish[t])
    link_bytes = np.zeros(topology.num_links, dtype=np.int64)
    for t in range(len(src)):
        for d in problem["dst"][t]:
            for lk in routes[f"{src[t]},{d}"]:
                link_bytes[lk] += int(nbytes[t])
    e = topology.num_endpoints
    return {
        "time_s": float(finish.max()) if finish.size else 0.0,
        "rank_finish_s": rank_finish,
        "link_busy_s": link_bytes / bw,
        "link_bytes": link_bytes,
        "injection_busy_s": np.zeros(e),
        "ejection_busy_s": np.zeros(e),
        "compute_busy_s": np.zeros(e),
        "events": int(res["events"]),
        "packets": int(sum(len(d) for d in problem["dst"])),
        "transfer_ready_s": ready,
        "transfer_finish_s": finish,
    }


def _worker(inp: str, out: str) -> None:
    """Child process: build the platform, replay the transfers, write times."""
    with open(inp, encoding="utf-8") as fh:
        pb = json.load(fh)
    sg = _import_simgrid()
    engine = sg.Engine(
        [
            "wafercoll",
            "--cfg=network/model:CM02",
            "--cfg=network/crosstraffic:0",
            "--cfg=network/TCP-gamma:0",
            "--log=root.thres:critical",
        ]
    )
    zone = sg.NetZone.create_full_zone("wafercoll")
    hosts = [zone.create_host(f"e{i}", 1e9) for i in range(pb["endpoints"])]
    links = []
    for i, (b, lat) in enumerate(zip(pb["bandwidth"], pb["latency"], strict=True)):
        lk = zone.create_link(f"l{i}", b)
        lk.set_latency(lat)
        links.append(lk.seal())
    used_src = sorted({int(k.split(",")[0]) for k in pb["routes"]})
    start_link = {}
    for a in used_src:
        lk = zone.create_link(f"alpha{a}", 1e30)
        lk.set_latency(pb["alpha"])
        lk.set_sharing_policy(sg.Link.SharingPolicy.FATPIPE, None)
        start_link[a] = lk.seal()
    for key, route in pb["routes"].items():
        a, b = (int(x) for x in key.split(","))
        zone.add_route(
            hosts[a].netpoint,
            hosts[b].netpoint,
            None,
            None,
            [sg.LinkInRoute(start_link[a])] + [sg.LinkInRoute(links[i]) for i in route],
            False,
        )
    zone.seal()
    T = len(pb["src"])
    ready = [0.0] * T
    finish = [-1.0] * T
    route_lat = {
        key: pb["alpha"] + sum(pb["latency"][i] for i in route)
        for key, route in pb["routes"].items()
    }
    waiting = [len(set(d)) for d in pb["deps"]]
    children: list[list[int]] = [[] for _ in range(T)]
    for t, deps in enumerate(pb["deps"]):
        for d in set(deps):
            children[d].append(t)
    events = [0]

    def driver() -> None:
        comms: list[Any] = []
        owner: list[int] = []
        left = [0] * T
        # Arrivals of 0 B transfers: (time, transfer), earliest first.
        timers: list[tuple[float, int]] = []

        def launch(t: int) -> None:
            ready[t] = engine.clock
            left[t] = len(pb["dst"][t])
            a = pb["src"][t]
            for d in pb["dst"][t]:
                if pb["bytes"][t] == 0:
                    heapq.heappush(timers, (engine.clock + route_lat[f"{a},{d}"], t))
                    continue
                comms.append(sg.Comm.sendto_async(hosts[a], hosts[d], pb["bytes"][t]))
                owner.append(t)

        def done(t: int) -> None:
            finish[t] = engine.clock
            for ch in children[t]:
                waiting[ch] -= 1
                if waiting[ch] == 0:
                    launch(ch)

        for t in range(T):
            if waiting[t] == 0:
                launch(t)

        def arrived(t: int) -> None:
            events[0] += 1
            left[t] -= 1
            if left[t] == 0:
                done(t)

        while comms or timers:
            if timers and timers[0][0] <= engine.clock:
                arrived(heapq.heappop(timers)[1])
                continue
            if not comms:
                sg.this_actor.sleep_until(timers[0][0])
                continue
            if timers:
                i = sg.Comm.wait_any_for(comms, timers[0][0] - engine.clock)
                if i < 0:
                    continue
            else:
                i = sg.Comm.wait_any(comms)
            t = owner[i]
            comms.pop(i)
            owner.pop(i)
            arrived(t)

    sg.Actor.create("driver", hosts[0], driver)
    engine.run()
    stuck = [t for t in range(T) if finish[t] < 0]
    if stuck:
        raise RuntimeError(
            f"SimGrid left {len(stuck)} of {T} transfers unfinished "
            f"(transfer {stuck[0]} first)"
        )
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"ready": ready, "finish": finish, "events": events[0]}, fh)


if __name__ == "__main__":  # pragma: no cover - run in a child process
    _worker(sys.argv[1], sys.argv[2])
