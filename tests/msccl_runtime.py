"""An MSCCL runtime in Python, and a mutator of MSCCL XML, for the tests.

Written from the runtime's description (microsoft/msccl b23e9cd: the XML
reader in src/graph/topo.cc, the interpreter in
src/collectives/device/msccl_interpreter.h), independently of
:mod:`wafercoll.io.msccl_read`, with ElementTree and NumPy:

* buffers: input ``i``, output ``o`` and scratch ``s`` of every GPU, memory
  no step wrote is NaN; a program with ``inplace="1"`` runs with the input
  inside the output (allgather), the output inside the input
  (reduce-scatter), or both the same (the other collectives), as the
  runtime's in-place calls pass them;
* transfers as the runtime's reader builds them: a ``nop`` passes its
  dependency on to the next step, consecutive ``re`` steps into the same
  chunk without a dependency are fused, a thread block's flag advances by
  the runtime's counting and is published only by steps with ``hasdep="1"``;
* one FIFO per connection (sender, receiver, channel); a thread block runs
  its next transfer once its dependencies' flags are up and, for a receive,
  a message waits; which ready thread block runs next is drawn at random.

``mutate`` changes a program the way a careless or hostile user would.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from collections import defaultdict, deque

import numpy as np

RECV = ("r", "rcs", "rrc", "rrs", "rrcs")
SEND = ("s", "rcs", "rrs", "rrcs")
TYPES = ("s", "r", "rcs", "rrc", "rrs", "rrcs", "cpy", "re", "nop")


class Deadlock(Exception):
    """No thread block can move."""


def _transfers(steps: list[dict[str, str]]) -> list[dict]:
    """A thread block's steps as the runtime's transfers, with their flags."""
    out: list[dict] = []
    waits: list[tuple[int, int]] = []
    fuse_key = None
    reductions = 0
    counter = 0
    for st in steps:
        depid = int(st["depid"])
        if depid >= 0:
            waits.append((depid, int(st["deps"])))
        kind = st["type"]
        if kind == "nop":
            continue
        key = (st["dstbuf"], int(st["dstoff"]), st["srcbuf"])
        if kind == "re" and depid < 0 and fuse_key == key:
            tr = out[-1]
            tr["srcoffs"].append(int(st["srcoff"]))
            tr["cnt"] = int(st["cnt"])
            tr["hasdep"] = st["hasdep"] == "1"
            tr["flag"] += 1
            counter += 1
        else:
            flag = counter + max(len(waits), 1) - 1
            out.append(
                {
                    "type": kind,
                    "srcbuf": st["srcbuf"],
                    "srcoffs": [int(st["srcoff"])],
                    "dstbuf": st["dstbuf"],
                    "dstoff": int(st["dstoff"]),
                    "cnt": int(st["cnt"]),
                    "waits": waits,
                    "hasdep": st["hasdep"] == "1",
                    "flag": flag,
                }
            )
            waits = []
            counter = flag + 1
        fuse_key = None
        if kind == "re":
            reductions += 1
            if st["hasdep"] != "1" and reductions != 16:
                fuse_key = key
    return out


class Program:
    """A parsed MSCCL program, ready to run on inputs."""

    def __init__(self, text: str | bytes) -> None:
        algo = ET.fromstring(text)
        self.coll = algo.get("coll").lower().replace("reducescatter", "reduce_scatter")
        self.p = int(algo.get("ngpus"))
        self.n = int(algo.get("nchunksperloop"))
        self.root = int(algo.get("root", "0"))
        self.inplace = algo.get("inplace") == "1"
        self.per = self.n // self.p
        self.scratch = {}
        self.tbs = {}
        for g in algo.iter("gpu"):
            gid = int(g.get("id"))
            self.scratch[gid] = int(g.get("s_chunks"))
            for tb in g.iter("tb"):
                key = (gid, int(tb.get("id")))
                steps = [dict(st.attrib) for st in tb.iter("step")]
                self.tbs[key] = (
                    int(tb.get("send")),
                    int(tb.get("recv")),
                    int(tb.get("chan")),
                    _transfers(steps),
                )

    def buffers(self, x: np.ndarray) -> tuple[dict, dict]:
        """Each GPU's buffers holding its input ``x[g]`` (chunks x width)."""
        p, n, per, coll = self.p, self.n, self.per, self.coll
        width = x.shape[2]
        mem, out = {}, {}
        for g in range(p):
            nan = np.full((n, width), np.nan)
            if coll == "allgather":
                inp = np.array(x[g, g * per : (g + 1) * per])
            elif coll == "broadcast" and g != self.root:
                inp = np.full((n, width), np.nan)
            else:
                inp = np.array(x[g])
            if self.inplace and coll == "alltoall":
                i = o = inp  # MSCCL's in-place alltoall: one buffer
            elif self.inplace:
                if coll == "allgather":
                    o = nan
                    o[g * per : (g + 1) * per] = inp
                    i = o[g * per : (g + 1) * per]
                elif coll == "reduce_scatter":
                    i = inp
                    o = i[g * per : (g + 1) * per]
                else:
                    i = o = inp
            else:
                i = inp
                o = nan[:per] if coll == "reduce_scatter" else nan
            s = np.full((self.scratch[g], width), np.nan)
            mem[g] = {"i": i, "o": o, "s": s}
            out[g] = o
        return mem, out

    def run(self, x: np.ndarray, rng: np.random.Generator) -> dict[int, np.ndarray]:
        """Run on inputs ``x`` (GPUs x chunks x width); the output buffers."""
        mem, out = self.buffers(x)
        pc = dict.fromkeys(self.tbs, 0)
        flag = dict.fromkeys(self.tbs, -1)
        fifo: dict[tuple[int, int, int], deque] = defaultdict(deque)

        def ready(key) -> bool:
            send, recv, chan, trs = self.tbs[key]
            tr = trs[pc[key]]
            for bid, k in tr["waits"]:
                if (key[0], bid) not in flag or flag[(key[0], bid)] < k:
                    return False
            if tr["type"] in RECV:
                return bool(fifo[(recv, key[0], chan)])
            return True

        live = [k for k in self.tbs if self.tbs[k][3]]
        while live:
            cand = [k for k in live if ready(k)]
            if not cand:
                raise Deadlock(f"thread blocks {live[:4]} wait")
            key = cand[rng.integers(len(cand))]
            self._step(key, pc[key], mem, fifo)
            tr = self.tbs[key][3][pc[key]]
            if tr["hasdep"]:
                flag[key] = tr["flag"]
            pc[key] += 1
            if pc[key] == len(self.tbs[key][3]):
                live.remove(key)
        if any(fifo.values()):
            raise Deadlock("messages left undelivered")
        return out

    def _step(self, key, i, mem, fifo) -> None:
        g = key[0]
        send, recv, chan, trs = self.tbs[key]
        tr = trs[i]
        kind, cnt = tr["type"], tr["cnt"]
        buf = mem[g]

        def src(off: int) -> np.ndarray:
            v = buf[tr["srcbuf"]][off : off + cnt]
            assert v.shape[0] == cnt, "out of bounds"
            return v.copy()

        d0 = tr["dstoff"]
        dst = buf[tr["dstbuf"]][d0 : d0 + cnt] if kind not in ("s", "rrs") else None
        if dst is not None:
            assert dst.shape[0] == cnt, "out of bounds"
        if kind == "s":
            fifo[(g, send, chan)].append(src(tr["srcoffs"][0]))
            return
        if kind in RECV:
            msg = fifo[(recv, g, chan)].popleft()
            assert msg.shape[0] == cnt, "count mismatch"
            val = msg if kind in ("r", "rcs") else msg + src(tr["srcoffs"][0])
            if kind != "rrs":
                dst[:] = val
            if kind in SEND:
                fifo[(g, send, chan)].append(val.copy())
            return
        if kind == "cpy":
            dst[:] = src(tr["srcoffs"][0])
            return
        assert kind == "re"
        acc = dst.copy()
        for off in tr["srcoffs"]:
            acc = src(off) + acc
        dst[:] = acc

    def expected(self, x: np.ndarray) -> dict[int, np.ndarray]:
        """What each GPU's output buffer must hold (NaN: anything)."""
        p, n, per, coll = self.p, self.n, self.per, self.coll
        total = x.sum(axis=0)
        want = {}
        for g in range(p):
            if coll == "allreduce" or (coll == "reduce" and g == self.root):
                want[g] = total
            elif coll == "reduce":
                want[g] = np.full_like(total, np.nan)
            elif coll == "broadcast":
                want[g] = x[self.root]
            elif coll == "allgather":
                want[g] = x[np.arange(n) // per, np.arange(n)]
            elif coll == "alltoall":
                # output chunk j: GPU j // per's chunk j % per for g
                j = np.arange(n)
                want[g] = x[j // per, g * per + j % per]
            else:  # reduce_scatter: the output is the GPU's slice
                want[g] = total[g * per : (g + 1) * per]
        return want


def matches(got: np.ndarray, want: np.ndarray) -> bool:
    """``got`` equals ``want`` wherever ``want`` is defined."""
    m = ~np.isnan(want)
    return got.shape == want.shape and bool(np.array_equal(got[m], want[m]))


# --------------------------------------------------------------------------- #
# mutations
# --------------------------------------------------------------------------- #
_STEP_INTS = ("srcoff", "dstoff", "cnt", "depid", "deps", "hasdep", "s")
_ODD = ("nan", "1.5", "0x10", "", " 1", "+1", "1e3", "-0")


def _renumber(tb: ET.Element) -> None:
    for k, st in enumerate(tb.findall("step")):
        st.set("s", str(k))


def _new_int(old: str, rng: np.random.Generator) -> str:
    try:
        v = int(old)
    except ValueError:
        v = 0
    r = rng.random()
    if r < 0.5:
        return str(v + int(rng.choice([-2, -1, 1, 2])))
    if r < 0.8:
        return str(int(rng.integers(-1, 9)))
    return str(int(rng.choice([-2, 16, 72, 255, 256, 40000])))


def mutate(text: str, rng: np.random.Generator, k: int = 1) -> str:
    """``text`` with ``k`` random changes of attributes, steps or buffers."""
    algo = ET.fromstring(text)
    for _ in range(k):
        _mutate_once(algo, rng)
    return ET.tostring(algo, encoding="unicode")


def _mutate_once(algo: ET.Element, rng: np.random.Generator) -> None:
    gpus = algo.findall("gpu")
    g = gpus[rng.integers(len(gpus))]
    tbs = g.findall("tb")
    tb = tbs[rng.integers(len(tbs))] if tbs else None
    steps = tb.findall("step") if tb is not None else []
    st = steps[rng.integers(len(steps))] if steps else None
    what = rng.integers(16)
    if st is None or what == 15:
        el, keys = algo, ("inplace", "nchunksperloop", "ngpus", "coll", "root")
        key = keys[rng.integers(len(keys))]
        if key == "inplace":
            algo.set(key, "0" if algo.get(key) == "1" else "1")
        elif key == "coll":
            algo.set(key, str(rng.choice(["allreduce", "allgather", "reduce_scatter"])))
        else:
            algo.set(key, _new_int(el.get(key, "0"), rng))
    elif what <= 4:  # a number of a step
        key = _STEP_INTS[rng.integers(len(_STEP_INTS))]
        st.set(key, _new_int(st.get(key, "0"), rng))
    elif what == 5:  # a buffer
        key = ("srcbuf", "dstbuf")[rng.integers(2)]
        st.set(key, str(rng.choice(["i", "o", "s"])))
    elif what in (6, 7):  # a step type
        st.set("type", str(rng.choice(TYPES)))
    elif what == 8:  # swap two neighbouring steps
        k = int(rng.integers(max(len(steps) - 1, 1)))
        if len(steps) > 1:
            a, b = steps[k], steps[k + 1]
            tb.remove(b)
            tb.insert(list(tb).index(a), b)
            _renumber(tb)
    elif what == 9:  # drop a step
        tb.remove(st)
        _renumber(tb)
    elif what == 10:  # duplicate a step
        tb.insert(list(tb).index(st) + 1, copy.deepcopy(st))
        _renumber(tb)
    elif what == 11:  # a thread block's peers or channel
        key = ("send", "recv", "chan")[rng.integers(3)]
        tb.set(key, _new_int(tb.get(key), rng))
    elif what == 12:  # a buffer size
        key = ("i_chunks", "o_chunks", "s_chunks")[rng.integers(3)]
        g.set(key, _new_int(g.get(key), rng))
    elif what == 13:  # an attribute that is no integer, or none
        key = _STEP_INTS[rng.integers(len(_STEP_INTS))]
        if rng.random() < 0.3:
            st.attrib.pop(key, None)
        else:
            st.set(key, str(rng.choice(_ODD)))
    else:  # a dependency on another step
        others = [t for t in tbs if t is not tb]
        if others:
            o = others[rng.integers(len(others))]
            st.set("depid", o.get("id"))
            st.set("deps", str(rng.integers(max(len(o.findall("step")), 1))))


def _execute_alltoall(s, x: np.ndarray, k: int) -> np.ndarray:
    """:func:`wafercoll.execute` of an imported alltoall, in MSCCL's buffers.

    wafercoll's alltoall has a block per (source, target, chunk): block
    ``(i * p + j) * k + c`` is GPU ``i``'s chunk ``j * k + c``, and it ends in
    GPU ``j``'s output chunk ``i * k + c``.
    """
    import wafercoll as wc

    p, n, width = x.shape
    mine = np.zeros((p, p * n, width))
    for g in range(p):
        mine[g, g * n : (g + 1) * n] = x[g]
    out = wc.execute(s, mine.reshape(p, p * n * width)).reshape(p, p * n, width)
    got = np.empty_like(x)
    for g in range(p):
        j = np.arange(n)
        got[g] = out[g, ((j // k) * p + g) * k + j % k]
    return got


# --------------------------------------------------------------------------- #
# the differential check
# --------------------------------------------------------------------------- #
def check(text: str, rng: np.random.Generator, runs: int = 2, width: int = 2) -> str:
    """Import ``text``; if the import and the verifier accept it, run it.

    Returns ``"rejected"`` (a FormatError from the import), ``"refuted"``
    (a ScheduleError from :func:`wafercoll.verify`) or ``"agree"``: the
    runtime above, in ``runs`` random orders, and :func:`wafercoll.execute`
    of the import both compute the collective on random data. Raises
    AssertionError on a disagreement.
    """
    import wafercoll as wc
    from wafercoll.io import FormatError, read_msccl

    try:
        s = read_msccl(text)
    except FormatError:
        return "rejected"
    try:
        wc.verify(s)
    except wc.ScheduleError:
        return "refuted"
    prog = Program(text)
    p, n = prog.p, prog.n
    x = rng.integers(-50, 50, size=(p, n, width)).astype(np.float64)
    want = prog.expected(x)
    if prog.coll == "alltoall":
        ours = _execute_alltoall(s, x, prog.per)
    else:
        ours = wc.execute(s, x.reshape(p, n * width)).reshape(p, n, width)
    for g in range(p):
        mine = ours[g]
        if prog.coll == "reduce_scatter":
            mine = mine[g * prog.per : (g + 1) * prog.per]
        assert matches(mine, want[g]), f"execute differs from the collective at GPU {g}"
    for _ in range(runs):
        try:
            got = prog.run(x, rng)
        except Deadlock as exc:
            raise AssertionError(
                f"accepted, but the runtime deadlocks: {exc}"
            ) from None
        for g in range(p):
            assert matches(got[g], want[g]), (
                f"accepted and verified, but the runtime computes at GPU {g}:\n"
                f"{got[g][..., 0]}\ninstead of\n{want[g][..., 0]}"
            )
    return "agree"
