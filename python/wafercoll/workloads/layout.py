"""How the ranks of a training step split into parallel groups.

A :class:`Layout` numbers ``dp x tp x pp`` ranks by their data-parallel,
tensor-parallel and pipeline coordinates, tensor-parallel innermost by
default so that a TP group's ranks are consecutive (Megatron-LM's default
order ``tp-cp-ep-dp-pp``, ``megatron/core/parallel_state.py``), and names
every group: ``tp``, ``dp``, ``pp``, and for expert parallelism ``ep``
(consecutive data-parallel indices, as in Megatron-LM and DeepSpeed-MoE)
and ``edp`` (the ranks that hold the same experts).
:meth:`Layout.placement` maps the ranks onto a machine (a mesh of chiplets,
a torus, a cluster) so that TP groups sit on neighbours.

Examples
--------
>>> from wafercoll.workloads import Layout
>>> lay = Layout(dp=2, tp=4, pp=2)
>>> lay.group("tp", 5), lay.group("dp", 5), lay.group("pp", 5)
((4, 5, 6, 7), (1, 5), (5, 13))
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._util import as_int
from ..kit import hamiltonian_path
from ..topology import Topology

__all__ = ["DIMENSIONS", "Layout"]

#: The dimensions of a :class:`Layout` order.
DIMENSIONS = ("tp", "dp", "pp")


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
