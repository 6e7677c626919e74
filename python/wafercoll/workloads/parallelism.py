"""Synthetic training steps: data, tensor, pipeline and expert parallelism.

For users without traces: give the layers (:class:`~wafercoll.workloads.Layer`,
or :func:`~wafercoll.workloads.gpt_layers` for a GPT-like transformer), a
:class:`~wafercoll.workloads.Layout` of the ranks and a compute model, and
:func:`training_step` returns the :class:`~wafercoll.workloads.Workload` of
one training step.

The layout
    ``dp x tp x pp`` ranks. Rank ``tp_i + tp * (dp_i + dp * pp_i)`` by
    default: tensor-parallel innermost, so that the ranks of a TP group are
    consecutive, then data-parallel, pipeline stages outermost (Megatron-LM's
    default order ``tp-cp-ep-dp-pp``, ``megatron/core/parallel_state.py``).
    Expert parallelism splits the data-parallel dimension, as in
    Megatron-LM and DeepSpeed-MoE: an EP group is ``ep`` consecutive
    data-parallel indices, and an expert's gradients are reduced over the
    ``dp / ep`` ranks that hold the same experts.
Data parallel
    Per layer a forward and a backward compute; the backward takes
    ``backward_factor`` (default 2) times the forward's work: the gradients
    with respect to the inputs and to the weights each cost about one
    forward (Kaplan et al., "Scaling Laws for Neural Language Models",
    arXiv:2001.08361, 2020, §2.1; Narayanan et al. 2021, below, Appendix).
    Gradients are allreduced over the DP group per layer, or in buckets of
    at least ``bucket_bytes`` filled in backward order (PyTorch DDP: Li et
    al., "PyTorch Distributed", VLDB 13(12), 2020). A bucket's allreduce
    waits for the backward of its layers (last micro-batch) and for the
    previous bucket's allreduce on the same group (collectives of one
    communicator run in launch order, as in NCCL), never the other way:
    the backward of earlier layers goes on, so communication overlaps it.
    Then an optimizer step per rank after its last backward and all of its
    allreduces, moving ``optimizer_traffic`` bytes per gradient byte.
Tensor parallel
    Megatron-style (Shoeybi et al., "Megatron-LM", arXiv:1909.08053, 2019,
    §3 and Fig. 4): a transformer layer's forward computes in two sections
    (self-attention, MLP), each followed by an allreduce of the
    activations over the TP group, and its backward likewise: four
    allreduces per layer. Each TP rank computes ``1 / tp`` of the layer's
    work and holds ``1 / tp`` of its parameters. :attr:`Layer.tp_allreduces`
    sets the number of sections (the work is split evenly between them).
Pipeline parallel
    1F1B (PipeDream-Flush: Narayanan et al., "Memory-Efficient
    Pipeline-Parallel DNN Training", ICML 2021; Megatron-LM's schedule:
    Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
    Clusters Using Megatron-LM", SC21, arXiv:2104.04473, §2.2.1): ``pp``
    stages of consecutive layers, ``m`` micro-batches; stage ``s`` runs
    ``w = min(pp - s - 1, m)`` forwards (warm-up), then ``m - w`` pairs of
    one forward and one backward (steady state), then ``w`` backwards
    (cool-down) (:func:`pipeline_order`). Activations go forward and
    gradients back as ``send`` nodes from each rank to the rank with the
    same ``(dp, tp)`` index in the neighbouring stage (each TP rank sends
    the whole activation: the scatter/gather optimization of §4.1 is not
    modelled). A receiver enters a send when the sender has produced the
    message, so waiting for the previous stage is idle time in
    :meth:`~wafercoll.workloads.WorkloadResult.breakdown` and only the
    transfer is communication. With equal work ``f + b`` per micro-batch
    and stage and free communication, the step takes ``(m + pp - 1)(f + b)``
    and each stage idles ``(pp - 1) / (m + pp - 1)`` of it (the paper's
    bubble fraction ``(pp - 1) / m`` is the same idle time over the ideal
    time ``m (f + b)``).
Expert parallel
    A layer with ``experts > 0`` is a mixture-of-experts FFN: an all-to-all
    dispatch of its tokens inside the EP group, the experts' compute and an
    all-to-all combine, and two all-to-alls again in the backward (the
    gradients of combine and dispatch; GShard: Lepikhin et al., ICLR 2021;
    DeepSpeed-MoE: Rajbhandari et al., ICML 2022). Every rank sends
    ``top_k x activation_bytes`` (each token goes to ``top_k`` experts,
    no capacity limit): an even ``alltoall`` by default, or, with
    ``moe_zipf_s``, an ``alltoallv`` whose matrix comes from
    :func:`wafercoll.alltoall.moe_matrix`, with each rank's expert work
    scaled by the tokens it receives.

Combinations: any ``dp x tp x pp``, and ``ep`` dividing ``dp`` with
``tp = 1``; expert layers with ``tp > 1`` (expert tensor parallelism) are
refused. Micro-batches without pipelining are gradient accumulation.

Examples
--------
>>> import wafercoll as wc
>>> from wafercoll.workloads import Layer, Layout, Roofline, training_step
>>> layers = [Layer(f"l{i}", 1e9, 4096, 8192) for i in range(4)]
>>> w = training_step(layers, Layout(dp=2, pp=2), Roofline(1e12, 1e12),
...                   microbatches=4)
>>> w.counts()  # per rank 2 layers x 4 mb x 2 + 1; per stage 2; 2 x 4 x 2
{'compute': 68, 'collective': 4, 'send': 16}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._util import as_int, as_real
from ..algorithms import algorithms as registered
from ..alltoall import moe_matrix
from .compute import ComputeModel
from .graph import Workload
from .layers import Layer
from .layout import Layout

__all__ = ["OPTIMIZER_TRAFFIC", "pipeline_order", "training_step"]

#: Memory bytes an optimizer step moves per byte of gradient, by default:
#: mixed-precision Adam keeps fp32 weights, momentum and variance (12 bytes
#: per parameter; Rajbhandari et al., "ZeRO", SC20, §3.1) and 2-byte
#: gradients and weights; one step reads the gradient and the three fp32
#: states (14 bytes) and writes the three states and the 2-byte weight
#: (14 bytes): 28 bytes per parameter, 14 per gradient byte.
OPTIMIZER_TRAFFIC = 14.0


# -- the 1F1B order ----------------------------------------------------------------
def pipeline_order(stages: int, microbatches: int, stage: int) -> list[tuple[str, int]]:
    """The 1F1B order of one stage: ``("F", i)`` and ``("B", i)`` in turn.

    Warm-up ``w = min(stages - stage - 1, microbatches)`` forwards, then
    ``microbatches - w`` pairs of a forward and a backward, then ``w``
    backwards (Narayanan et al., SC21, §2.2.1, Fig. 4).

    Parameters
    ----------
    stages : int
        Pipeline stages, >= 1.
    microbatches : int
        Micro-batches per step, >= 1.
    stage : int
        In ``[0, stages - 1]``.

    Examples
    --------
    >>> from wafercoll.workloads import pipeline_order
    >>> " ".join(f"{k}{i}" for k, i in pipeline_order(4, 5, 1))
    'F0 F1 F2 B0 F3 B1 F4 B2 B3 B4'
    """
    p = as_int(stages, "stages", 1)
    m = as_int(microbatches, "microbatches", 1)
    s = as_int(stage, "stage", 0, p - 1)
    w = min(p - s - 1, m)
    out = [("F", i) for i in range(w)]
    for i in range(m - w):
        out += [("F", w + i), ("B", i)]
    out += [("B", i) for i in range(m - w, m)]
    return out


# -- the step -----------------------------------------------------------------------
def training_step(
    layers: Sequence[Layer],
    layout: Layout | None = None,
    compute_model: ComputeModel | None = None,
    *,
    microbatches: int = 1,
    stages: Sequence[int] | None = None,
    bucket_bytes: int | None = None,
    backward_factor: float = 2.0,
    optimizer_traffic: float = OPTIMIZER_TRAFFIC,
    algorithms: Mapping[str, str] | None = None,
    moe_zipf_s: float | None = None,
    moe_seed: int = 0,
    name: str = "",
) -> Workload:
    """The workload of one training step of ``layers`` on ``layout`` (see the module).

    Parameters
    ----------
    layers : sequence of Layer
        The model, first layer first (at least one).
    layout : Layout, optional
        The ranks' groups (default: one rank).
    compute_model : ComputeModel
        Turns each compute node's FLOPs and memory bytes into seconds
        (e.g. :class:`~wafercoll.workloads.Roofline`).
    microbatches : int
        Micro-batches per step and data-parallel replica, >= 1.
    stages : sequence of int, optional
        Layers per pipeline stage (``layout.pp`` entries, each >= 1, summing
        to ``len(layers)``); default: as even as possible, earlier stages
        taking the remainder.
    bucket_bytes : int, optional
        Gradient bucket size, >= 1: layers join a bucket in backward order
        until it holds at least this many bytes (dense and expert gradients
        apart). Default: one allreduce per layer.
    backward_factor : float
        Backward work over forward work, >= 0 (default 2, see the module).
    optimizer_traffic : float
        Memory bytes the optimizer step moves per byte of the rank's
        gradients, >= 0 (default :data:`OPTIMIZER_TRAFFIC`).
    algorithms : mapping of str to str, optional
        Algorithm per collective (``"allreduce"``, ``"alltoall"``,
        ``"alltoallv"``); default ``"auto"``.
    moe_zipf_s : float, optional
        Skew (>= 0) of the expert routing; None: even all-to-alls.
    moe_seed : int
        Seed of the skewed routing (expert layer ``j`` uses ``moe_seed + j``).
    name : str
        The workload's label.

    Returns
    -------
    Workload

    Raises
    ------
    ValueError
        For an input out of range, more stages than layers, or a
        combination that is not supported (expert layers with ``tp > 1``,
        ``ep > 1`` without expert layers, experts not a multiple of ``ep``).

    Examples
    --------
    Two tensor-parallel ranks, one transformer layer, one micro-batch:
    four allreduces of the activations (two forward, two backward).

    >>> import wafercoll as wc
    >>> from wafercoll.workloads import Layout, gpt_layers, roofline, training_step
    >>> layers = gpt_layers(hidden=256, layers=1, seq_len=128, micro_batch=1)
    >>> w = training_step(layers, Layout(tp=2), roofline("h100_sxm_bf16"))
    >>> [(n.collective, n.size_bytes) for n in w if n.kind == "collective"]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('allreduce', 65536), ('allreduce', 65536), ('allreduce', 65536),
     ('allreduce', 65536)]
    """
    return _Step(
        layers,
        Layout() if layout is None else layout,
        compute_model,
        microbatches=microbatches,
        stages=stages,
        bucket_bytes=bucket_bytes,
        backward_factor=backward_factor,
        optimizer_traffic=optimizer_traffic,
        algorithms=algorithms,
        moe_zipf_s=moe_zipf_s,
        moe_seed=moe_seed,
        name=name,
    ).build()


def _even_stages(n: int, p: int) -> list[int]:
    q, r = divmod(n, p)
    return [q + (1 if s < r else 0) for s in range(p)]


class _Step:
    """Builds one training step (see :func:`training_step`)."""

    def __init__(
        self,
        layers: Any,
        layout: Any,
        compute_model: Any,
        *,
        microbatches: Any,
        stages: Any,
        bucket_bytes: Any,
        backward_factor: Any,
        optimizer_traffic: Any,
        algorithms: Any,
        moe_zipf_s: Any,
        moe_seed: Any,
        name: Any,
    ) -> None:
        if isinstance(layers, Layer) or not isinstance(layers, Sequence):
            raise TypeError("layers must be a sequence of Layer")
        self.layers = list(layers)
        if not self.layers:
            raise ValueError("layers must hold at least one Layer")
        for i, x in enumerate(self.layers):
            if not isinstance(x, Layer):
                raise TypeError(f"layers[{i}] must be a Layer, got {type(x).__name__}")
        if not isinstance(layout, Layout):
            raise TypeError(f"layout must be a Layout, got {type(layout).__name__}")
        if not isinstance(compute_model, ComputeModel):
            raise TypeError(
                "compute_model must be a wafercoll.workloads.ComputeModel "
                "(e.g. Roofline(peak_flops, memory_Bps)), got "
                f"{type(compute_model).__name__}"
            )
        self.lay = layout
        self.m = as_int(microbatches, "microbatches", 1, 1 << 20)
        self.bwd = as_real(backward_factor, "backward_factor", 0.0)
        self.opt = as_real(optimizer_traffic, "optimizer_traffic", 0.0)
        self.bucket = (
            None if bucket_bytes is None else as_int(bucket_bytes, "bucket_bytes", 1)
        )
        self.zipf = (
            None if moe_zipf_s is None else as_real(moe_zipf_s, "moe_zipf_s", 0.0)
        )
        self.seed = as_int(moe_seed, "moe_seed", 0, (1 << 63) - 1)
        self.algo = self._algorithms(algorithms)
        self.stage_layers = self._stages(stages)
        self._check_experts()
        self.w = Workload(layout.ranks, str(name), compute_model)
        # Per rank: the last compute node (compute runs in program order).
        self.last: dict[int, int] = {}
        # Per (layer, rank): the layer's last backward compute (its gradients).
        self.grad: dict[tuple[int, int], int] = {}
        # Per (direction, stage, micro-batch): rank -> the send it waits for.
        self.inbox: dict[tuple[str, int, int], dict[int, int]] = {}
        self.matrices: dict[int, np.ndarray] = {}
        self.cache: dict[tuple[str, int], Any] = {}
        # The last stage's forward outputs per micro-batch (rank -> node), and
        # per rank the end of its latest pass (the optimizer waits for it).
        self.outbox: dict[int, dict[int, Any]] = {}
        self.tail: dict[int, Any] = {}

    # -- checks ---------------------------------------------------------------
    def _algorithms(self, algorithms: Any) -> dict[str, str]:
        out = dict.fromkeys(("allreduce", "alltoall", "alltoallv"), "auto")
        if algorithms is None:
            return out
        if not isinstance(algorithms, Mapping):
            raise TypeError("algorithms must be a mapping of collective to algorithm")
        for coll, alg in algorithms.items():
            if coll not in out:
                raise ValueError(
                    f"algorithms: keys must be among {', '.join(out)}, got {coll!r}"
                )
            names = [a.name for a in registered(coll)]
            if alg != "auto" and alg not in names:
                raise ValueError(
                    f"algorithms[{coll!r}] must be 'auto' or a registered {coll} "
                    f"algorithm, got {alg!r}"
                )
            out[coll] = alg
        return out

    def _stages(self, stages: Any) -> list[list[int]]:
        n, p = len(self.layers), self.lay.pp
        if p > n:
            raise ValueError(f"pp ({p}) must be <= the number of layers ({n})")
        if stages is None:
            counts = _even_stages(n, p)
        else:
            if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence):
                raise TypeError("stages must be a sequence of layer counts")
            counts = [as_int(c, "stages", 1) for c in stages]
            if len(counts) != p or sum(counts) != n:
                raise ValueError(
                    f"stages must hold pp = {p} counts summing to {n} layers, "
                    f"got {list(counts)}"
                )
        out, first = [], 0
        for c in counts:
            out.append(list(range(first, first + c)))
            first += c
        return out

    def _check_experts(self) -> None:
        ep = self.lay.ep
        moe = [x for x in self.layers if x.is_expert]
        if ep > 1 and not moe:
            raise ValueError(f"ep = {ep} needs at least one expert layer (experts > 0)")
        if moe and self.lay.tp > 1:
            raise ValueError(
                f"expert layers with tp > 1 are not supported (expert tensor "
                f"parallelism); got tp = {self.lay.tp} and expert layer {moe[0].name!r}"
            )
        for x in moe:
            if x.experts % ep:
                raise ValueError(
                    f"layer {x.name!r}: experts ({x.experts}) must be a multiple of "
                    f"ep ({ep})"
                )
            if self.zipf is not None and ep > 1:
                if x.tokens < 1 or x.activation_bytes % x.tokens:
                    raise ValueError(
                        f"layer {x.name!r}: skewed routing needs tokens >= 1 dividing "
                        f"activation_bytes, got tokens={x.tokens}, "
                        f"activation_bytes={x.activation_bytes}"
                    )

    # -- building blocks ----------------------------------------------------------
    def _ranks(self, s: int) -> list[int]:
        """The ranks of stage ``s``, by data-parallel then tensor-parallel index."""
        key = ("stage", s)
        if key not in self.cache:
            lay = self.lay
            self.cache[key] = [
                lay.rank(dp=d, tp=t, pp=s) for d in range(lay.dp) for t in range(lay.tp)
            ]
        return self.cache[key]

    def _groups(self, kind: str, s: int) -> list[tuple[int, ...]]:
        """The distinct groups of ``kind`` among the ranks of stage ``s``."""
        key = (kind, s)
        if key not in self.cache:
            groups = (self.lay.group(kind, r) for r in self._ranks(s))
            self.cache[key] = list(dict.fromkeys(groups))
        return self.cache[key]

    def _compute(
        self, r: int, flops: float, mem: float, deps: list[Any], name: str
    ) -> int:
        dl = [d for d in [self.last.get(r), *deps] if d is not None]
        k = self.w.compute(r, flops=flops, mem_bytes=mem, deps=dl, name=name)
        self.last[r] = k
        return k

    def _collective(
        self,
        coll: str,
        size: int,
        comm: tuple[int, ...],
        cur: dict[int, Any],
        name: str,
        **opt: Any,
    ) -> int:
        deps = {r: [cur[r]] if cur.get(r) is not None else [] for r in comm}
        return self.w.collective(
            coll, size, comm, algorithm=self.algo[coll], deps=deps, name=name, **opt
        )

    def _matrix(self, j: int, x: Layer) -> np.ndarray:
        if j not in self.matrices:
            self.matrices[j] = moe_matrix(
                self.lay.ep,
                x.tokens,
                x.activation_bytes // x.tokens,
                experts=x.experts,
                top_k=x.top_k,
                zipf_s=float(self.zipf or 0.0),
                seed=self.seed + j,
            )
        return self.matrices[j]

    # -- one layer, one micro-batch, one direction, every rank of a stage -------------
    def _dense(self, li: int, s: int, cur: dict[int, Any], d: str, mb: int) -> None:
        x, t, ranks = self.layers[li], self.lay.tp, self._ranks(s)
        k = max(x.tp_allreduces, 1) if t > 1 else 1
        scale = (1.0 if d == "forward" else self.bwd) / (t * k)
        for j in range(k):
            part = f"[{j}]" if k > 1 else ""
            for r in ranks:
                cur[r] = self._compute(
                    r,
                    x.forward_flops * scale,
                    x.forward_mem_bytes * scale,
                    [cur[r]],
                    f"{x.name}{part} {d} mb{mb}",
                )
                if d == "backward":
                    self.grad[li, r] = cur[r]
            if t > 1 and x.tp_allreduces:
                for g in self._groups("tp", s):
                    a = self._collective(
                        "allreduce",
                        x.activation_bytes,
                        g,
                        cur,
                        f"{x.name}{part} tp {d} mb{mb}",
                    )
                    cur.update(dict.fromkeys(g, a))

    def _expert(self, li: int, s: int, cur: dict[int, Any], d: str, mb: int) -> None:
        x, ep, ranks = self.layers[li], self.lay.ep, self._ranks(s)
        scale = 1.0 if d == "forward" else self.bwd
        groups = self._groups("ep", s) if ep > 1 else []
        share = dict.fromkeys(ranks, 1.0)
        if self.zipf is not None and ep > 1:
            mat = self._matrix(sum(y.is_expert for y in self.layers[:li]), x)
            recv = mat.sum(axis=0).astype(np.float64)
            mean = float(recv.mean())
            for g in groups:
                for i, r in enumerate(g):
                    share[r] = recv[i] / mean if mean > 0 else 1.0
            first = ("alltoallv", 0, {"matrix": mat})
            second = ("alltoallv", 0, {"matrix": mat.T.copy()})
        else:
            size = x.activation_bytes * x.top_k
            first = second = ("alltoall", size, {})
        labels = (
            ("dispatch", "combine")
            if d == "forward"
            else ("combine grad", "dispatch grad")
        )
        self._alltoalls(groups, first, cur, f"{x.name} {labels[0]} mb{mb}")
        for r in ranks:
            cur[r] = self._compute(
                r,
                x.forward_flops * scale * share[r],
                x.forward_mem_bytes * scale * share[r],
                [cur[r]],
                f"{x.name} {d} mb{mb}",
            )
            if d == "backward":
                self.grad[li, r] = cur[r]
        self._alltoalls(groups, second, cur, f"{x.name} {labels[1]} mb{mb}")

    def _alltoalls(
        self, groups: list[Any], spec: Any, cur: dict[int, Any], name: str
    ) -> None:
        coll, size, opt = spec
        for g in groups:
            a = self._collective(coll, size, g, cur, name, **opt)
            cur.update(dict.fromkeys(g, a))

    # -- pipeline ops ---------------------------------------------------------------
    def _op(self, kind: str, s: int, mb: int) -> None:
        """Forward or backward of micro-batch ``mb`` on every rank of stage ``s``."""
        lay = self.lay
        ranks = self._ranks(s)
        box = self.inbox.pop((kind, s, mb), {})
        if kind == "B" and s == lay.pp - 1:  # the loss: from its own forward
            box = self.outbox.pop(mb)
        cur: dict[int, Any] = {r: box.get(r) for r in ranks}
        d = "forward" if kind == "F" else "backward"
        order = self.stage_layers[s]
        for li in order if kind == "F" else reversed(order):
            if self.layers[li].is_expert:
                self._expert(li, s, cur, d, mb)
            else:
                self._dense(li, s, cur, d, mb)
        if kind == "F" and s == lay.pp - 1:
            self.outbox[mb] = dict(cur)
        self.tail.update(cur)
        nxt = s + 1 if kind == "F" else s - 1
        if 0 <= nxt < lay.pp:
            # The activation of the boundary layer, or its gradient.
            edge = self.layers[order[-1] if kind == "F" else order[0] - 1]
            what = "activation" if kind == "F" else "gradient"
            box = self.inbox.setdefault((kind, nxt, mb), {})
            for r, dst in zip(ranks, self._ranks(nxt), strict=True):  # same (dp, tp)
                box[dst] = self.w.send(
                    r,
                    dst,
                    edge.activation_bytes,
                    deps={r: [cur[r]], dst: [cur[r]]},
                    name=f"{what} s{s}->s{nxt} mb{mb}",
                )

    def _gradients(self, s: int) -> None:
        """Bucketed gradient allreduces and the optimizer step of stage ``s``."""
        lay = self.lay
        ranks = self._ranks(s)
        held = 0  # gradient bytes per rank (the same on every rank of a stage)
        done: dict[int, list[int]] = {r: [] for r in ranks}
        for expert in (False, True):
            kind = "edp" if expert else "dp"
            share = lay.ep if expert else lay.tp
            width = lay.dp // lay.ep if expert else lay.dp
            buckets: list[list[int]] = []
            size = 0
            for li in reversed(self.stage_layers[s]):
                x = self.layers[li]
                if x.is_expert != expert or x.parameter_bytes == 0:
                    continue
                if not buckets or self.bucket is None or size >= self.bucket:
                    buckets.append([])
                    size = 0
                buckets[-1].append(li)
                size += math.ceil(x.parameter_bytes / share)
            sizes = [
                sum(math.ceil(self.layers[li].parameter_bytes / share) for li in b)
                for b in buckets
            ]
            held += sum(sizes)
            if width == 1:
                continue
            prev: dict[int, int] = {}
            for b, nbytes in zip(buckets, sizes, strict=True):
                label = self.layers[b[0]].name
                if len(b) > 1:
                    label += ".." + self.layers[b[-1]].name
                for g in self._groups(kind, s):
                    deps = {
                        r: [self.grad[b[-1], r], *([prev[r]] if r in prev else [])]
                        for r in g
                    }
                    a = self.w.collective(
                        "allreduce",
                        nbytes,
                        g,
                        algorithm=self.algo["allreduce"],
                        deps=deps,
                        name=f"{label} {kind} gradients",
                    )
                    for r in g:
                        prev[r] = a
            for r in ranks:
                if r in prev:
                    done[r].append(prev[r])
        for r in ranks:
            deps = [self.tail[r], *done[r]]
            self._compute(r, 0.0, self.opt * held, deps, "optimizer")

    def build(self) -> Workload:
        p, m = self.lay.pp, self.m
        todo = [pipeline_order(p, m, s) for s in range(p)]
        at = [0] * p
        emitted: set[tuple[str, int, int]] = set()
        while any(at[s] < len(todo[s]) for s in range(p)):
            moved = False
            for s in range(p):
                while at[s] < len(todo[s]):
                    kind, mb = todo[s][at[s]]
                    src = s - 1 if kind == "F" else s + 1
                    if 0 <= src < p and (kind, src, mb) not in emitted:
                        break
                    self._op(kind, s, mb)
                    emitted.add((kind, s, mb))
                    at[s] += 1
                    moved = True
            if not moved:  # 1F1B never deadlocks; this guards the generator
                raise RuntimeError("pipeline order deadlocked")
        for s in range(p):
            self._gradients(s)
        return self.w
