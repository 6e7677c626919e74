"""Synthetic training steps: data, tensor, pipeline and expert parallelism.

For users without traces: give the layers (:class:`Layer`, or
:func:`gpt_layers` for a GPT-like transformer), a :class:`Layout` of the
ranks and a compute model, and :func:`training_step` returns the
:class:`~wafercoll.workloads.Workload` of one training step.

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
    Then an optimizer step per rank after all of its allreduces.
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
    modelled). With equal work ``f + b`` per micro-batch and stage and free
    communication, the step takes ``(m + pp - 1)(f + b)`` and each stage
    idles ``(pp - 1) / (m + pp - 1)`` of it (the paper's bubble fraction
    ``(pp - 1) / m`` is the same idle time over the ideal time ``m (f + b)``).
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
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util import as_int, as_real
from ..algorithms import algorithms as registered
from ..alltoall import moe_matrix
from ..kit import hamiltonian_path
from ..topology import Topology
from .compute import ComputeModel
from .graph import Workload
from .layers import Layer

__all__ = [
    "DIMENSIONS",
    "OPTIMIZER_TRAFFIC",
    "Layout",
    "pipeline_order",
    "training_step",
]

#: The dimensions of a :class:`Layout` order.
DIMENSIONS = ("tp", "dp", "pp")

#: Memory bytes an optimizer step moves per byte of gradient, by default:
#: mixed-precision Adam keeps fp32 weights, momentum and variance (12 bytes
#: per parameter; Rajbhandari et al., "ZeRO", SC20, §3.1) and 2-byte
#: gradients and weights; one step reads the gradient and the three fp32
#: states (14 bytes) and writes the three states and the 2-byte weight
#: (14 bytes): 28 bytes per parameter, 14 per gradient byte.
OPTIMIZER_TRAFFIC = 14.0


# -- the layout -------------------------------------------------------------------
@dataclass(frozen=True)
class Layout:
    """How ``dp x tp x pp`` ranks split into groups (``ep`` divides ``dp``).

    A rank's coordinates ``(dp_i, tp_i, pp_i)`` are mixed-radix digits of
    its number in ``order``, innermost first: with the default
    ``("tp", "dp", "pp")``, rank ``tp_i + tp * (dp_i + dp * pp_i)``.

    Parameters
    ----------
    dp, tp, pp : int
        Data-parallel replicas, tensor-parallel ranks per group and pipeline
        stages, each >= 1.
    ep : int
        Expert-parallel group size, >= 1, dividing ``dp``.
    order : tuple of str
        A permutation of :data:`DIMENSIONS`, innermost first.

    Examples
    --------
    >>> from wafercoll.workloads import Layout
    >>> lay = Layout(dp=2, tp=2, pp=2)
    >>> lay.ranks, lay.rank(dp=1, tp=0, pp=1), lay.coords(6)
    (8, 6, (1, 0, 1))
    >>> lay.groups("tp")
    [(0, 1), (2, 3), (4, 5), (6, 7)]
    """

    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    order: tuple[str, ...] = DIMENSIONS

    def __post_init__(self) -> None:
        for key in ("dp", "tp", "pp", "ep"):
            object.__setattr__(self, key, as_int(getattr(self, key), key, 1, 1 << 24))
        if self.dp % self.ep:
            raise ValueError(
                f"ep must divide dp (expert groups split the data-parallel "
                f"ranks), got ep={self.ep}, dp={self.dp}"
            )
        order = self.order
        if (
            not isinstance(order, (tuple, list))
            or len(order) != len(DIMENSIONS)
            or set(order) != set(DIMENSIONS)
        ):
            raise ValueError(
                f"order must be a permutation of {DIMENSIONS}, got {order!r}"
            )
        object.__setattr__(self, "order", tuple(order))
        if self.ranks > 1 << 24:
            raise ValueError(f"dp * tp * pp must be <= {1 << 24}, got {self.ranks}")

    @classmethod
    def for_ranks(
        cls,
        ranks: int,
        *,
        tp: int = 1,
        pp: int = 1,
        ep: int = 1,
        order: tuple[str, ...] = DIMENSIONS,
    ) -> Layout:
        """The layout of ``ranks`` ranks: ``dp = ranks / (tp * pp)``.

        ``ranks`` may be a topology's ``default_ranks``: every endpoint of a
        mesh of chiplets, a torus or a cluster.

        Examples
        --------
        >>> from wafercoll.workloads import Layout
        >>> Layout.for_ranks(16, tp=4, pp=2).dp
        2
        """
        n = as_int(ranks, "ranks", 1, 1 << 24)
        t = as_int(tp, "tp", 1)
        p = as_int(pp, "pp", 1)
        if n % (t * p):
            raise ValueError(f"ranks ({n}) must be a multiple of tp * pp = {t * p}")
        return cls(dp=n // (t * p), tp=t, pp=p, ep=ep, order=order)

    @property
    def ranks(self) -> int:
        """``dp * tp * pp``.

        Examples
        --------
        >>> from wafercoll.workloads import Layout
        >>> Layout(dp=3, tp=2).ranks
        6
        """
        return self.dp * self.tp * self.pp

    def _sizes(self) -> dict[str, int]:
        return {"dp": self.dp, "tp": self.tp, "pp": self.pp}

    def rank(self, *, dp: int = 0, tp: int = 0, pp: int = 0) -> int:
        """The rank with coordinates ``(dp, tp, pp)``.

        Examples
        --------
        >>> from wafercoll.workloads import Layout
        >>> Layout(dp=2, tp=4, order=("dp", "tp", "pp")).rank(dp=1, tp=2)
        5
        """
        sizes = self._sizes()
        idx = {"dp": dp, "tp": tp, "pp": pp}
        r, scale = 0, 1
        for d in self.order:
            r += as_int(idx[d], d, 0, sizes[d] - 1) * scale
            scale *= sizes[d]
        return r

    def coords(self, rank: int) -> tuple[int, int, int]:
        """``(dp_i, tp_i, pp_i)`` of ``rank``.

        Examples
        --------
        >>> from wafercoll.workloads import Layout
        >>> Layout(dp=2, tp=2, pp=2).coords(5)
        (0, 1, 1)
        """
        r = as_int(rank, "rank", 0, self.ranks - 1)
        sizes = self._sizes()
        idx = {}
        for d in self.order:
            r, idx[d] = divmod(r, sizes[d])
        return idx["dp"], idx["tp"], idx["pp"]

    def group(self, kind: str, rank: int) -> tuple[int, ...]:
        """The ranks of ``rank``'s group of ``kind``, in group order.

        ``kind`` is ``"tp"`` (same ``dp_i, pp_i``), ``"dp"`` (same ``tp_i,
        pp_i``), ``"pp"`` (same ``dp_i, tp_i``: one rank per stage), ``"ep"``
        (the ``ep`` consecutive data-parallel indices around ``dp_i``) or
        ``"edp"`` (the ranks holding the same experts: same ``dp_i mod ep``).

        Examples
        --------
        >>> from wafercoll.workloads import Layout
        >>> lay = Layout(dp=4, tp=2, ep=2)
        >>> lay.group("dp", 1), lay.group("ep", 4), lay.group("edp", 2)
        ((1, 3, 5, 7), (4, 6), (2, 6))
        """
        d, t, p = self.coords(rank)
        if kind == "tp":
            return tuple(self.rank(dp=d, tp=i, pp=p) for i in range(self.tp))
        if kind == "dp":
            return tuple(self.rank(dp=i, tp=t, pp=p) for i in range(self.dp))
        if kind == "pp":
            return tuple(self.rank(dp=d, tp=t, pp=i) for i in range(self.pp))
        if kind == "ep":
            first = d - d % self.ep
            return tuple(self.rank(dp=first + i, tp=t, pp=p) for i in range(self.ep))
        if kind == "edp":
            return tuple(
                self.rank(dp=i, tp=t, pp=p)
                for i in range(d % self.ep, self.dp, self.ep)
            )
        raise ValueError(f"kind must be one of tp, dp, pp, ep, edp; got {kind!r}")

    def groups(self, kind: str) -> list[tuple[int, ...]]:
        """Every group of ``kind`` (see :meth:`group`), by their first rank.

        Examples
        --------
        >>> from wafercoll.workloads import Layout
        >>> Layout(dp=2, pp=2).groups("pp")
        [(0, 2), (1, 3)]
        """
        seen: dict[tuple[int, ...], None] = {}
        for r in range(self.ranks):
            seen.setdefault(self.group(kind, r), None)
        return sorted(seen)

    def placement(self, topology: Topology) -> np.ndarray:
        """Endpoints for the ranks on ``topology`` that keep TP groups close.

        On a grid (mesh, torus, a mesh of chiplets) whose columns ``tp``
        does not divide, the boustrophedon path
        (:func:`wafercoll.kit.hamiltonian_path`), so every two consecutive
        ranks are neighbours; on a cluster, ranks in node order (a TP group
        stays inside a node when ``tp`` divides the processes per node);
        otherwise rank ``r`` on endpoint ``r`` (a TP group is a row segment
        of a grid). Pass it as ``placement=`` when simulating.

        Examples
        --------
        >>> import wafercoll as wc
        >>> from wafercoll.workloads import Layout
        >>> Layout(dp=2, tp=3).placement(wc.mesh(2, 3)).tolist()
        [0, 1, 2, 3, 4, 5]
        >>> Layout(dp=3, tp=2).placement(wc.mesh(2, 3)).tolist()
        [0, 1, 2, 5, 4, 3]
        """
        if not isinstance(topology, Topology):
            raise TypeError(
                f"topology must be a Topology, got {type(topology).__name__}"
            )
        n = self.ranks
        if topology.num_endpoints < n:
            raise ValueError(
                f"topology {topology.name} has {topology.num_endpoints} endpoints, "
                f"fewer than the layout's {n} ranks"
            )
        rows, cols = topology.shape
        if rows > 1 and rows * cols == topology.num_endpoints and cols % self.tp:
            return hamiltonian_path(rows, cols)[:n].copy()
        if topology.kind == "cluster":
            return np.argsort(topology.node_of, kind="stable")[:n].astype(np.int64)
        return np.arange(n, dtype=np.int64)


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
        self.model = compute_model
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
    def _dense(
        self, li: int, ranks: list[int], cur: dict[int, Any], d: str, mb: int
    ) -> None:
        x, t = self.layers[li], self.lay.tp
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
                for g in dict.fromkeys(self.lay.group("tp", r) for r in ranks):
                    a = self._collective(
                        "allreduce",
                        x.activation_bytes,
                        g,
                        cur,
                        f"{x.name}{part} tp {d} mb{mb}",
                    )
                    cur.update(dict.fromkeys(g, a))

    def _expert(
        self, li: int, ranks: list[int], cur: dict[int, Any], d: str, mb: int
    ) -> None:
        x, ep = self.layers[li], self.lay.ep
        scale = 1.0 if d == "forward" else self.bwd
        groups = (
            list(dict.fromkeys(self.lay.group("ep", r) for r in ranks))
            if ep > 1
            else []
        )
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
        ranks = [
            lay.rank(dp=d, tp=t, pp=s) for d in range(lay.dp) for t in range(lay.tp)
        ]
        box = self.inbox.pop((kind, s, mb), {})
        cur: dict[int, Any] = {r: box.get(r) for r in ranks}
        d = "forward" if kind == "F" else "backward"
        order = self.stage_layers[s]
        for li in order if kind == "F" else reversed(order):
            if self.layers[li].is_expert:
                self._expert(li, ranks, cur, d, mb)
            else:
                self._dense(li, ranks, cur, d, mb)
        nxt = s + 1 if kind == "F" else s - 1
        if 0 <= nxt < lay.pp:
            # The activation of the boundary layer, or its gradient.
            edge = self.layers[order[-1] if kind == "F" else order[0] - 1]
            what = "activation" if kind == "F" else "gradient"
            box = self.inbox.setdefault((kind, nxt, mb), {})
            for r in ranks:
                dp_i, tp_i, _ = lay.coords(r)
                dst = lay.rank(dp=dp_i, tp=tp_i, pp=nxt)
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
        ranks = [
            lay.rank(dp=d, tp=t, pp=s) for d in range(lay.dp) for t in range(lay.tp)
        ]
        held = dict.fromkeys(ranks, 0)
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
            for r in ranks:
                held[r] += sum(
                    math.ceil(self.layers[li].parameter_bytes / share)
                    for b in buckets
                    for li in b
                )
            if width == 1:
                continue
            prev: dict[int, int] = {}
            for b in buckets:
                nbytes = sum(
                    math.ceil(self.layers[li].parameter_bytes / share) for li in b
                )
                label = self.layers[b[0]].name
                if len(b) > 1:
                    label += ".." + self.layers[b[-1]].name
                for g in dict.fromkeys(lay.group(kind, r) for r in ranks):
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
            self._compute(r, 0.0, self.opt * held[r], done[r], "optimizer")

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
