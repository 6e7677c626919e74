"""Gather, scatter and the long-message broadcasts, for any number of ranks.

The root's vector of ``size_bytes`` is cut into ``p`` near-equal blocks
(``kit.split_bytes(size_bytes, p)``); a gather moves block ``i`` from rank
``i`` to the root, a scatter block ``j`` from the root to rank ``j``, each
exactly once into its target (:class:`wafercoll.Schedule`). Written with
:mod:`wafercoll.kit` under the ``"sendrecv"`` rule, as the other generic
builders (:mod:`wafercoll.generic`); position ``i`` of a tree or chain is
rank ``(root + i) mod p`` unless an ``order`` is given:

``generic_linear_gather``, ``generic_linear_scatter``
    The root receives (sends) the ``p - 1`` blocks one after another, in
    rank order from ``root + 1``: one message at a time at the root, as the
    closed form assumes (MPI codes post the messages at once and let the
    network serialise them).
``generic_binomial_gather``, ``generic_binomial_scatter``
    Binomial trees (:func:`wafercoll.kit.binomial_steps`), ``ceil(log2 p)``
    steps: at mask ``m`` position ``i`` (an odd multiple of ``m``) sends
    (receives) the blocks of its whole subtree, positions
    ``i .. min(i + m, p) - 1``, in one message (two block ranges where the
    positions wrap past rank ``p - 1``).
``generic_chain_gather``, ``generic_chain_scatter``
    A pipelined chain over ``order`` (default: positions ``0 .. p - 1``):
    the blocks are the pipeline's chunks. Gather: at step ``s`` every rank
    ``order[j]`` sends block ``order[j + s]`` to ``order[j - 1]``; scatter:
    the root sends the farthest rank's block first, every rank forwards the
    block it received in the step before, and all blocks arrive in step
    ``p - 2``. ``p - 1`` steps, neighbours only.
``generic_chain_broadcast``
    The vector cut into ``k = chunks`` chunks, pipelined down the chain
    ``order``: at step ``t`` position ``i`` sends chunk ``t - i`` to
    ``i + 1``, ``k + p - 2`` steps. The default ``k`` is the Hockney
    optimum ``k* = sqrt((p - 2) S beta / alpha)`` with ``alpha / beta`` the
    half-performance size ``n_1/2`` of a message (:data:`HALF_BYTES`, or a
    link's latency times its bandwidth if the topology's is larger),
    rounded and clamped to ``[1, min(S, CHAIN_MAX_CHUNKS)]``
    (:func:`chain_chunks`); the builder does not see the network model.
``generic_scatter_allgather_broadcast``
    Van de Geijn's broadcast: the binomial scatter above, then the ring
    allgather of :mod:`wafercoll.generic_blocks` (rank ``r`` sends block
    ``r - s`` to ``r + 1`` at step ``s``).

Closed forms, in the Hockney model of :mod:`wafercoll.generic` (``alpha``,
``beta`` of one hop, ``S = size_bytes``, ``L = ceil(log2 p)``,
contention-free, one message at a time per rank and direction), from
Thakur, Rabenseifner and Gropp (IJHPCA 2005) and Chan, Heimlich,
Purkayastha and van de Geijn, "Collective communication: theory, practice,
and experience" (CCPE 19(13), 2007):

* linear and chain gather and scatter: ``(p - 1) alpha + (p - 1) / p S beta``;
* binomial gather and scatter: ``L alpha + (p - 1) / p S beta``;
* chain broadcast of ``k`` chunks of ``S / k``:
  ``(k + p - 2) (alpha + S / k beta)`` (with ``r = S mod k`` longer chunks
  of ``ceil(S / k)``: ``(k + p - 2) alpha + ((p - 2 + r) ceil(S / k) +
  (k - r) floor(S / k)) beta``, the longest path of the pipeline);
* scatter + allgather broadcast: ``(L + p - 1) alpha + 2 (p - 1) / p S beta``.

They are exact on a fully connected topology (the chains also on a line in
chain order) when ``p`` divides ``S`` (the chain broadcast for any ``S``),
and ``None`` with ports.

Examples
--------
>>> import wafercoll as wc
>>> s = wc.build("generic_binomial_gather", ranks=6, size_bytes=60, root=2)
>>> s.targets.tolist(), wc.verify(s).steps
([2, 2, 2, 2, 2, 2], 3)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import kit
from ._generic_common import LOG_MAX_RANKS, MPICH_SOURCE, RING_MAX_RANKS, hop_costs
from ._util import as_int
from .algorithms import register_algorithm
from .generic_blocks import cyclic_ranges

__all__ = [
    "CHAIN_MAX_CHUNKS",
    "HALF_BYTES",
    "binomial_gather",
    "binomial_scatter",
    "chain_broadcast",
    "chain_chunks",
    "chain_gather",
    "chain_scatter",
    "linear_gather",
    "linear_scatter",
    "scatter_allgather_broadcast",
]

_CHAN = (
    "Chan, Heimlich, Purkayastha, van de Geijn, Collective communication: "
    "theory, practice, and experience, CCPE 19(13), 2007"
)
#: Half-performance message size ``n_1/2 = alpha / beta`` in bytes that sets
#: the default chunk count of the chain broadcast (the networks of
#: :func:`wafercoll.network_presets` range from 0 to 525 B).
HALF_BYTES = 512
#: Most chunks the chain broadcast cuts a vector into.
CHAIN_MAX_CHUNKS = 4096


# -- helpers ---------------------------------------------------------------------


def _root(root: Any, p: int) -> int:
    return as_int(root, "root", 0, p - 1)


def _order(order: Any, p: int, root: int) -> np.ndarray:
    """The chain's ranks: ``order`` checked, or ``root, root + 1, ...`` mod ``p``."""
    if order is None:
        return (np.arange(p, dtype=np.int64) + root) % p
    if isinstance(order, (str, bytes)) or not hasattr(order, "__iter__"):
        raise TypeError(
            f"order must be a sequence of ranks, got {type(order).__name__}"
        )
    o = np.asarray(list(order))
    if o.size and not np.issubdtype(o.dtype, np.integer):
        raise TypeError(f"order must hold integer ranks, got {o.dtype}")
    o = o.astype(np.int64).ravel()
    if o.size != p or not np.array_equal(np.sort(o), np.arange(p)):
        raise ValueError(
            f"order must list every rank 0 .. {p - 1} exactly once, got "
            f"{o.size} entries {o[:8].tolist()}{' ...' if o.size > 8 else ''}"
        )
    if o[0] != root:
        raise ValueError(f"order must start at the root ({root}), got {int(o[0])}")
    return o


def _program(p: int, blocks: Any, collective: str, root: int, name: str) -> kit.Program:
    return kit.Program(p, blocks, collective, root=root, rule="sendrecv", name=name)


def _rooted(
    ranks: int, size_bytes: int, root: Any, collective: str, label: str
) -> tuple[int, int, kit.Program]:
    """``(p, root, program)`` of a rooted collective over one block per rank."""
    r = _root(root, ranks)
    name = f"{label}(p={ranks}, root={r})"
    return (
        ranks,
        r,
        _program(ranks, kit.split_bytes(size_bytes, ranks), collective, r, name),
    )


def _binomial(p: int, root: int, scatter: bool) -> list[tuple[Any, Any, kit.Ranges]]:
    """``(src, dst, blocks)`` of the binomial gather or scatter steps."""
    steps = []
    for child, parent in kit.binomial_steps(p):
        mask = int(child[0] - parent[0])
        c, par = (child + root) % p, (parent + root) % p
        blocks = cyclic_ranges(c, np.minimum(mask, p - child), p)
        steps.append((par, c, blocks) if scatter else (c, par, blocks))
    return steps[::-1] if scatter else steps


def chain_chunks(ranks: int, size_bytes: int, topology: Any = None) -> int:
    """The chain broadcast's default chunk count (module docstring).

    ``round(sqrt((p - 2) S / n_1/2))`` clamped to ``[1, min(S,
    CHAIN_MAX_CHUNKS)]``, with ``n_1/2`` the larger of :data:`HALF_BYTES`
    and the topology's smallest link latency times its slowest bandwidth.

    Parameters
    ----------
    ranks : int
        Ranks of the chain.
    size_bytes : int
        Bytes of the vector.
    topology : Topology, optional
        The machine, for its links' latency and bandwidth.

    Returns
    -------
    int

    Examples
    --------
    >>> from wafercoll.generic import chain_chunks
    >>> chain_chunks(16, 1 << 20), chain_chunks(2, 1 << 20), chain_chunks(16, 1 << 30)
    (169, 1, 4096)
    """
    p = as_int(ranks, "ranks", 1)
    size = as_int(size_bytes, "size_bytes", 0)
    half = float(HALF_BYTES)
    if topology is not None and len(topology.links["src"]):
        links = topology.links
        hop = float(links["latency_s"].min()) * float(links["bandwidth_Bps"].min())
        half = max(half, hop)
    best = round(math.sqrt(max(p - 2, 0) * size / half))
    return int(min(max(best, 1), max(min(size, CHAIN_MAX_CHUNKS), 1)))


# -- closed forms ----------------------------------------------------------------


def _predict_linear(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    return (p - 1) * a + (p - 1) / p * size * b


def _predict_binomial(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    return (p - 1).bit_length() * a + (p - 1) / p * size * b


def _chain_time(p: int, size: int, k: int, a: float, b: float) -> float:
    """Longest path of the chain broadcast's pipeline (module docstring)."""
    if p == 1:
        return 0.0
    short, r = divmod(size, k)
    if r == 0:
        return (k + p - 2) * (a + short * b)
    return (k + p - 2) * a + ((p - 2 + r) * (short + 1) + (k - r) * short) * b


def _predict_chain_broadcast(
    p: int, size: int, topology: Any, network: Any
) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    return _chain_time(p, size, chain_chunks(p, size, topology), a, b)


def _predict_vdg(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = hop_costs(topology, network)
    if h is None:
        return None
    a, b, _ = h
    return ((p - 1).bit_length() + p - 1) * a + 2 * (p - 1) / p * size * b


# -- gather and scatter ------------------------------------------------------------

_ROOT = {"root": 0}
_CHAIN = {"root": 0, "order": None}


@register_algorithm(
    "generic_linear_gather",
    "gather",
    predict=_predict_linear,
    source=_CHAN + "; linear (flat tree)",
    summary="every rank sends its block to the root, which takes them one at a time",
    parameters=_ROOT,
    max_ranks=RING_MAX_RANKS,
    label="Linear gather",
)
def linear_gather(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Linear gather to ``root`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_linear_gather", ranks=5, size_bytes=40, root=1)
    >>> s.num_transfers, wc.verify(s).steps
    (4, 4)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "gather", "linear_gather")
    for j in range(1, p):
        src = (r + j) % p
        prog.step(src, r, src, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_linear_scatter",
    "scatter",
    predict=_predict_linear,
    source=_CHAN + "; linear (flat tree)",
    summary="the root sends every rank its block, one at a time",
    parameters=_ROOT,
    max_ranks=RING_MAX_RANKS,
    label="Linear scatter",
)
def linear_scatter(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Linear scatter from ``root`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_linear_scatter", ranks=5, size_bytes=40, root=1)
    >>> s.targets.tolist(), wc.verify(s).steps
    ([0, 1, 2, 3, 4], 4)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "scatter", "linear_scatter")
    for j in range(1, p):
        dst = (r + j) % p
        prog.step(r, dst, dst, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_binomial_gather",
    "gather",
    predict=_predict_binomial,
    source=MPICH_SOURCE + "; binomial gather",
    summary="binomial tree towards the root, subtrees' blocks in one message, "
    "ceil(log2 p) steps",
    parameters=_ROOT,
    max_ranks=LOG_MAX_RANKS,
    label="Binomial gather",
)
def binomial_gather(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Binomial-tree gather to ``root`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_binomial_gather", ranks=5, size_bytes=40)
    >>> s.num_transfers, wc.verify(s).steps
    (4, 3)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "gather", "binomial_gather")
    for src, dst, blocks in _binomial(p, r, scatter=False):
        prog.step(src, dst, blocks, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_binomial_scatter",
    "scatter",
    predict=_predict_binomial,
    source=MPICH_SOURCE + "; binomial scatter",
    summary="binomial tree from the root, subtrees' blocks in one message, "
    "ceil(log2 p) steps",
    parameters=_ROOT,
    max_ranks=LOG_MAX_RANKS,
    label="Binomial scatter",
)
def binomial_scatter(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Binomial-tree scatter from ``root`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_binomial_scatter", ranks=5, size_bytes=40, root=3)
    >>> s.num_transfers, wc.verify(s).steps
    (4, 3)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "scatter", "binomial_scatter")
    for src, dst, blocks in _binomial(p, r, scatter=True):
        prog.step(src, dst, blocks, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_chain_gather",
    "gather",
    predict=_predict_linear,
    source=_CHAN + "; pipelined chain",
    summary="the blocks pipelined along a chain towards the root, p-1 steps, "
    "neighbours only",
    parameters=_CHAIN,
    max_ranks=RING_MAX_RANKS,
    label="Chain gather",
)
def chain_gather(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    root: int = 0,
    order: Any = None,
) -> Any:
    """Pipelined-chain gather to ``root`` along ``order`` (module docstring).

    ``order`` lists every rank once, starting at the root (default
    ``root, root + 1, ...`` modulo ``p``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_chain_gather", ranks=4, size_bytes=40, order=[0, 2, 1, 3])
    >>> s.num_transfers, wc.verify(s).steps
    (6, 3)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "gather", "chain_gather")
    o = _order(order, p, r)
    for s in range(p - 1):
        j = np.arange(1, p - s, dtype=np.int64)
        prog.step(o[j], o[j - 1], o[j + s], "copy")
    return prog.schedule()


@register_algorithm(
    "generic_chain_scatter",
    "scatter",
    predict=_predict_linear,
    source=_CHAN + "; pipelined chain",
    summary="the blocks pipelined along a chain from the root, farthest first, "
    "p-1 steps, neighbours only",
    parameters=_CHAIN,
    max_ranks=RING_MAX_RANKS,
    label="Chain scatter",
)
def chain_scatter(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    root: int = 0,
    order: Any = None,
) -> Any:
    """Pipelined-chain scatter from ``root`` along ``order`` (module docstring).

    ``order`` lists every rank once, starting at the root (default
    ``root, root + 1, ...`` modulo ``p``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_chain_scatter", ranks=4, size_bytes=40, root=2)
    >>> s.num_transfers, wc.verify(s).steps
    (6, 3)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "scatter", "chain_scatter")
    o = _order(order, p, r)
    for s in range(p - 1):
        # position j forwards the block the root sent at step s - j
        j = np.arange(0, min(s, p - 2) + 1, dtype=np.int64)
        prog.step(o[j], o[j + 1], o[p - 1 - s + j], "copy")
    return prog.schedule()


# -- broadcasts --------------------------------------------------------------------


@register_algorithm(
    "generic_chain_broadcast",
    "broadcast",
    predict=_predict_chain_broadcast,
    source=_CHAN + "; pipelined chain (long-vector broadcast)",
    summary="the vector cut into chunks pipelined down a chain, k + p - 2 steps; "
    "k near the Hockney optimum by default",
    parameters={"root": 0, "chunks": None, "order": None},
    max_ranks=RING_MAX_RANKS,
    label="Chain broadcast",
)
def chain_broadcast(
    ranks: int,
    size_bytes: int,
    *,
    topology: Any = None,
    root: int = 0,
    chunks: int | None = None,
    order: Any = None,
) -> Any:
    """Pipelined-chain broadcast from ``root`` along ``order`` (module docstring).

    ``chunks`` (1 .. ``CHAIN_MAX_CHUNKS``) defaults to :func:`chain_chunks`;
    ``order`` lists every rank once, starting at the root (default ``root,
    root + 1, ...`` modulo ``p``).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_chain_broadcast", ranks=4, size_bytes=64, chunks=8)
    >>> s.num_blocks, s.num_transfers, wc.verify(s).steps
    (8, 24, 10)
    """
    p, r = ranks, _root(root, ranks)
    o = _order(order, p, r)
    if chunks is None:
        k = chain_chunks(p, size_bytes, topology)
    else:
        k = as_int(chunks, "chunks", 1, CHAIN_MAX_CHUNKS)
    prog = _program(
        p,
        kit.split_bytes(size_bytes, k),
        "broadcast",
        r,
        f"chain_broadcast(p={p}, root={r}, chunks={k})",
    )
    for t in range(k + p - 2):
        i = np.arange(max(0, t - k + 1), min(t, p - 2) + 1, dtype=np.int64)
        prog.step(o[i], o[i + 1], t - i, "copy")
    return prog.schedule()


@register_algorithm(
    "generic_scatter_allgather_broadcast",
    "broadcast",
    predict=_predict_vdg,
    source=MPICH_SOURCE + "; scatter + allgather (van de Geijn); " + _CHAN,
    summary="binomial scatter of p blocks, then a ring allgather",
    parameters=_ROOT,
    max_ranks=RING_MAX_RANKS,
    label="Scatter + allgather",
)
def scatter_allgather_broadcast(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Van de Geijn's broadcast: scatter, then ring allgather (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_scatter_allgather_broadcast", ranks=5, size_bytes=40)
    >>> s.num_transfers, wc.verify(s).steps
    (24, 7)
    """
    p, r, prog = _rooted(ranks, size_bytes, root, "broadcast", "scatter_allgather")
    for src, dst, blocks in _binomial(p, r, scatter=True):
        prog.step(src, dst, blocks, "copy")
    # the ring allgather: rank r sends block r - s to r + 1 at step s
    ring = np.arange(p, dtype=np.int64)
    for s in range(p - 1):
        prog.step(ring, (ring + 1) % p, (ring - s) % p, "copy")
    return prog.schedule()
