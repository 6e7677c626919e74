"""The algorithm kit: the one way schedules are written in wafercoll.

Every built-in builder is written with this kit, and so is a user's new
algorithm. It has four layers:

* :class:`Program` (:mod:`wafercoll.kit.program`): transfers collected for
  one collective, ranks and block layout, with the dependency rule named up
  front (``"sendrecv"``, ``"step"``, ``"cells"``, ``"explicit"``) and turned
  into a verified-ready :class:`wafercoll.Schedule` by
  :meth:`Program.schedule`;
* :func:`split_bytes`: the one block splitter (:func:`split_weighted`: in
  proportion to weights);
* logical orders (:mod:`wafercoll.kit.orders`): row-major, folded, snake,
  Hamiltonian cycles of meshes (with an excluded node) and tori;
* collective skeletons over any order, tree or peer function: rings
  (:mod:`wafercoll.kit.ring`), butterflies with folding
  (:mod:`wafercoll.kit.butterfly`), binomial trees
  (:mod:`wafercoll.kit.binomial`), reduce / broadcast / allreduce over
  ``K`` trees given as parent arrays, chunked (:mod:`wafercoll.kit.trees`,
  with the compiled single-tree reduce as the kit's fast path).

A new algorithm in a few lines (a ring allreduce over the snake of a grid):

>>> import wafercoll as wc
>>> from wafercoll import kit
>>> order = kit.snake(3, 4)
>>> prog = kit.Program(12, kit.split_bytes(4096, 12), "allreduce", rule="sendrecv")
>>> kit.ring_allreduce(prog, order)
>>> s = prog.schedule()
>>> wc.verify(s).ok
True
"""

from __future__ import annotations

from .binomial import binomial_broadcast, binomial_reduce, binomial_steps
from .blocks import MAX_BLOCKS, split_bytes, split_weighted
from .butterfly import (
    Fold,
    exchange,
    fold_in,
    fold_out,
    halving_doubling,
    recursive_doubling,
    recursive_doubling_gather,
    recursive_halving,
    xor_peer,
)
from .orders import (
    excluded_node,
    folded,
    hamiltonian_cycle,
    hamiltonian_path,
    row_major,
    snake,
    torus_cycle,
)
from .program import RULES, Multi, Program, Ranges
from .ring import RingStep, ring_allreduce, ring_owners, ring_steps
from .trees import tree_depths, tree_reduce, trees_program

__all__ = [
    "MAX_BLOCKS",
    "RULES",
    "Fold",
    "Multi",
    "Program",
    "Ranges",
    "RingStep",
    "binomial_broadcast",
    "binomial_reduce",
    "binomial_steps",
    "exchange",
    "excluded_node",
    "fold_in",
    "fold_out",
    "folded",
    "halving_doubling",
    "recursive_doubling_gather",
    "recursive_halving",
    "hamiltonian_cycle",
    "hamiltonian_path",
    "recursive_doubling",
    "ring_allreduce",
    "ring_owners",
    "ring_steps",
    "row_major",
    "snake",
    "split_bytes",
    "split_weighted",
    "torus_cycle",
    "tree_depths",
    "tree_reduce",
    "trees_program",
    "xor_peer",
]
