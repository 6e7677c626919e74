"""The classic MPI collectives, for any number of ranks on any topology.

The algorithms of Thakur, Rabenseifner and Gropp, "Optimization of Collective
Communication Operations in MPICH" (IJHPCA 2005), written with
:mod:`wafercoll.kit` under the ``"sendrecv"`` rule (a transfer waits for the
previous send and receive of both its ranks, as MPI ``Sendrecv`` steps
posted in program order):

``generic_ring_allreduce``
    Ring reduce-scatter then allgather over ranks ``0 .. p - 1``,
    ``2 (p - 1)`` steps of ``size / p`` (:func:`wafercoll.kit.ring_allreduce`).
``generic_recursive_doubling_allreduce``
    Whole-vector exchanges with ``r XOR 2^s``; the first ``2 (p - q)`` ranks
    fold in pairs onto ``q = 2^floor(log2 p)`` (:class:`wafercoll.kit.Fold`).
``generic_rabenseifner_allreduce``
    Recursive-halving reduce-scatter, recursive-doubling allgather over ``q``
    blocks, with the same fold (:func:`wafercoll.kit.halving_doubling`).
``generic_binomial_reduce``, ``generic_binomial_broadcast``
    Binomial trees rooted at ``root``, ``ceil(log2 p)`` steps, whole vector.

Each carries its closed form in the Hockney model of the same paper
(``AlgorithmInfo.predict``), contention-free: ``alpha`` = the model's start-up
plus one hop's latency, ``beta`` = 1 / the link bandwidth, ``gamma`` the
reduction cost per byte, ``q = 2^floor(log2 p)`` and two fold steps when
``p != q``:

* ring: ``2 (p - 1) alpha + 2 (p - 1) / p S beta + (p - 1) / p S gamma``
  (exact on a ring of ``p`` with one packet per message: the closed form of
  :mod:`wafercoll.simulate`);
* recursive doubling: ``log2 q (alpha + S beta + S gamma)`` + folds;
* Rabenseifner: ``2 log2 q alpha + 2 (q - 1) / q S beta + (q - 1) / q S gamma``
  + folds;
* binomial: ``ceil(log2 p) (alpha + S beta [+ S gamma])``.

They do not apply (``None``) with ports, which the form does not model.

The rest of the family lives in two modules and is exposed here too:
:mod:`wafercoll.generic_blocks` (reduce-scatter and allgather with the
standard ownership: ring, recursive halving / doubling, Bruck) and
:mod:`wafercoll.generic_rooted` (linear, binomial and pipelined-chain gather
and scatter, the pipelined chain broadcast and van de Geijn's scatter +
allgather broadcast), each with its closed forms.

Examples
--------
>>> import wafercoll as wc
>>> s = wc.build("generic_rabenseifner_allreduce", ranks=6, size_bytes=64)
>>> wc.verify(s).steps
6
"""

from __future__ import annotations

from typing import Any

from . import kit
from ._generic_common import LOG_MAX_RANKS, RING_MAX_RANKS
from ._generic_common import MPICH_SOURCE as _SOURCE
from ._generic_common import hop_costs as _hockney
from ._util import as_int
from .algorithms import register_algorithm

__all__ = [
    "CHAIN_MAX_CHUNKS",
    "HALF_BYTES",
    "binomial_broadcast",
    "binomial_gather",
    "binomial_reduce",
    "binomial_scatter",
    "bruck_allgather",
    "chain_broadcast",
    "chain_chunks",
    "chain_gather",
    "chain_scatter",
    "cyclic_ranges",
    "linear_gather",
    "linear_scatter",
    "rabenseifner_allreduce",
    "recursive_doubling_allgather",
    "recursive_doubling_allreduce",
    "recursive_halving_reduce_scatter",
    "ring_allgather",
    "ring_allreduce",
    "ring_reduce_scatter",
    "scatter_allgather_broadcast",
]


def _fold(p: int) -> tuple[int, int]:
    """``(log2 q, fold steps)`` with ``q = 2^floor(log2 p)``."""
    k = p.bit_length() - 1
    return k, 0 if p == 1 << k else 2


def _predict_ring(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = _hockney(topology, network)
    if h is None:
        return None
    a, b, g = h
    return 2 * (p - 1) * a + (p - 1) / p * size * (2 * b + g)


def _predict_rd(p: int, size: int, topology: Any, network: Any) -> float | None:
    h = _hockney(topology, network)
    if h is None:
        return None
    a, b, g = h
    k, fold = _fold(p)
    folds = (2 * a + size * (2 * b + g)) if fold else 0.0
    return k * (a + size * (b + g)) + folds


def _predict_rabenseifner(
    p: int, size: int, topology: Any, network: Any
) -> float | None:
    h = _hockney(topology, network)
    if h is None:
        return None
    a, b, g = h
    k, fold = _fold(p)
    q = 1 << k
    folds = (2 * a + size * (2 * b + g)) if fold else 0.0
    return 2 * k * a + (q - 1) / q * size * (2 * b + g) + folds


def _predict_binomial(reduce: bool) -> Any:
    def predict(p: int, size: int, topology: Any, network: Any) -> float | None:
        h = _hockney(topology, network)
        if h is None:
            return None
        a, b, g = h
        steps = (p - 1).bit_length()
        return steps * (a + size * (b + (g if reduce else 0.0)))

    return predict


@register_algorithm(
    "generic_ring_allreduce",
    "allreduce",
    predict=_predict_ring,
    source=_SOURCE + "; ring allreduce",
    summary="unidirectional ring: reduce-scatter then allgather, 2(p-1) steps of "
    "size/p",
    max_ranks=RING_MAX_RANKS,
    label="Ring",
)
def ring_allreduce(ranks: int, size_bytes: int, *, topology: Any = None) -> Any:
    """Ring allreduce over ranks ``0 .. p - 1`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_ring_allreduce", ranks=6, size_bytes=48)
    >>> s.name, wc.verify(s).steps
    ('generic_ring_allreduce', 10)
    """
    p = ranks
    prog = kit.Program(
        p,
        kit.split_bytes(size_bytes, p),
        "allreduce",
        rule="sendrecv",
        name=f"ring(p={p})",
    )
    kit.ring_allreduce(prog, kit.row_major(p))
    return prog.schedule()


@register_algorithm(
    "generic_recursive_doubling_allreduce",
    "allreduce",
    predict=_predict_rd,
    source=_SOURCE + "; recursive doubling",
    summary="full-vector pairwise exchanges at distance 1, 2, 4, ...; extra ranks "
    "folded",
    max_ranks=LOG_MAX_RANKS,
    label="Recursive doubling",
)
def recursive_doubling_allreduce(
    ranks: int, size_bytes: int, *, topology: Any = None
) -> Any:
    """Recursive-doubling allreduce with pairwise folding (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_recursive_doubling_allreduce", ranks=6, size_bytes=48)
    >>> s.name, wc.verify(s).steps
    ('generic_recursive_doubling_allreduce', 4)
    """
    p = ranks
    prog = kit.Program(
        p, [size_bytes], "allreduce", rule="sendrecv", name=f"recursive_doubling(p={p})"
    )
    kit.recursive_doubling(prog, p, 0)
    return prog.schedule()


@register_algorithm(
    "generic_rabenseifner_allreduce",
    "allreduce",
    predict=_predict_rabenseifner,
    source=_SOURCE + "; Rabenseifner's algorithm",
    summary="reduce-scatter by recursive halving, allgather by recursive doubling",
    max_ranks=LOG_MAX_RANKS,
    label="Rabenseifner",
)
def rabenseifner_allreduce(ranks: int, size_bytes: int, *, topology: Any = None) -> Any:
    """Rabenseifner's allreduce with pairwise folding (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_rabenseifner_allreduce", ranks=6, size_bytes=48)
    >>> s.name, wc.verify(s).steps
    ('generic_rabenseifner_allreduce', 6)
    """
    p = ranks
    fold = kit.Fold(p)
    prog = kit.Program(
        p,
        kit.split_bytes(size_bytes, fold.q),
        "allreduce",
        rule="sendrecv",
        name=f"rabenseifner(p={p})",
    )
    whole = (0, fold.q)
    kit.fold_in(prog, fold, whole)
    kit.halving_doubling(prog, fold)
    kit.fold_out(prog, fold, whole)
    return prog.schedule()


@register_algorithm(
    "generic_binomial_reduce",
    "reduce",
    predict=_predict_binomial(reduce=True),
    source=_SOURCE + "; binomial tree",
    summary="binomial tree towards the root, ceil(log2 p) steps",
    parameters={"root": 0},
    label="Binomial reduce",
)
def binomial_reduce(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Binomial-tree reduce to ``root`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_binomial_reduce", ranks=6, size_bytes=48, root=2)
    >>> s.name, wc.verify(s).steps
    ('generic_binomial_reduce', 3)
    """
    p = ranks
    r = as_int(root, "root", 0, p - 1)
    prog = kit.Program(
        p,
        [size_bytes],
        "reduce",
        root=r,
        rule="sendrecv",
        name=f"binomial_reduce(p={p}, root={r})",
    )
    kit.binomial_reduce(prog, p, 0, root=r)
    return prog.schedule()


@register_algorithm(
    "generic_binomial_broadcast",
    "broadcast",
    predict=_predict_binomial(reduce=False),
    source=_SOURCE + "; binomial tree",
    summary="binomial tree from the root, one message at a time per rank",
    parameters={"root": 0},
    label="Binomial broadcast",
)
def binomial_broadcast(
    ranks: int, size_bytes: int, *, topology: Any = None, root: int = 0
) -> Any:
    """Binomial-tree broadcast from ``root`` (module docstring).

    Examples
    --------
    >>> import wafercoll as wc
    >>> s = wc.build("generic_binomial_broadcast", ranks=6, size_bytes=48, root=2)
    >>> s.name, wc.verify(s).steps
    ('generic_binomial_broadcast', 3)
    """
    p = ranks
    r = as_int(root, "root", 0, p - 1)
    prog = kit.Program(
        p,
        [size_bytes],
        "broadcast",
        root=r,
        rule="sendrecv",
        name=f"binomial_broadcast(p={p}, root={r})",
    )
    kit.binomial_broadcast(prog, p, 0, root=r)
    return prog.schedule()


# The rest of the family (module docstring), registered after the builders
# above so that those keep their place in the registry's order.
from .generic_blocks import (  # noqa: E402
    bruck_allgather,
    cyclic_ranges,
    recursive_doubling_allgather,
    recursive_halving_reduce_scatter,
    ring_allgather,
    ring_reduce_scatter,
)
from .generic_rooted import (  # noqa: E402
    CHAIN_MAX_CHUNKS,
    HALF_BYTES,
    binomial_gather,
    binomial_scatter,
    chain_broadcast,
    chain_chunks,
    chain_gather,
    chain_scatter,
    linear_gather,
    linear_scatter,
    scatter_allgather_broadcast,
)
