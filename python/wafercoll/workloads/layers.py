"""Layer specifications of synthetic training steps.

A :class:`Layer` gives the sizes of one layer for one micro-batch: forward
FLOPs (or parameters and tokens, :meth:`Layer.from_parameters`), the bytes of
its output activation and of its gradients, and, for a mixture-of-experts
layer, its experts and routing. :func:`gpt_layers` makes the layers of a
GPT-like transformer with the standard FLOP and parameter counts.
:func:`wafercoll.workloads.training_step` turns layers into a training step.

Examples
--------
>>> from wafercoll.workloads import gpt_layers
>>> layers = gpt_layers(hidden=512, layers=4, seq_len=1024, micro_batch=2)
>>> len(layers), layers[0].activation_bytes  # b s h elements of 2 bytes
(4, 2097152)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._util import as_int, as_real

__all__ = ["Layer", "gpt_layers"]


@dataclass(frozen=True)
class Layer:
    """One layer of a model, for one micro-batch (unsharded sizes).

    Parameters
    ----------
    name : str
        A label (node names start with it).
    forward_flops : float
        FLOPs of the forward pass of one micro-batch, >= 0. For an expert
        layer, the experts' work on one micro-batch's tokens (each token
        through ``top_k`` experts): what every rank of an expert group does
        when the routing is even.
    activation_bytes : int
        Bytes of the layer's output for one micro-batch, >= 0: what a
        pipeline stage sends on, what tensor parallelism allreduces and what
        an expert layer dispatches per chosen expert.
    parameter_bytes : int
        Bytes of the layer's gradients (its parameters in the gradients'
        precision), >= 0; allreduced under data parallelism. For an expert
        layer, all experts' (each rank of an expert group holds ``1 / ep``).
    forward_mem_bytes : float
        Memory traffic of the forward pass, >= 0 (for roofline models).
    tp_allreduces : int
        Sections of the forward (and of the backward) under tensor
        parallelism, each followed by an allreduce of the activations, in
        ``[0, 16]``; 2 for a transformer layer (Shoeybi et al. 2019).
    experts : int
        0 for a dense layer; else the number of experts of a
        mixture-of-experts layer (a multiple of the layout's ``ep``).
    top_k : int
        Experts per token of an expert layer, in ``[1, experts]`` (1 for a
        dense layer).
    tokens : int
        Tokens of one micro-batch, >= 0 (needed only for skewed expert
        routing, where ``activation_bytes`` must be a multiple of it).

    Examples
    --------
    >>> from wafercoll.workloads import Layer
    >>> Layer("mlp", forward_flops=2e12, activation_bytes=1 << 20,
    ...       parameter_bytes=1 << 26).tp_allreduces
    2
    """

    name: str
    forward_flops: float
    activation_bytes: int
    parameter_bytes: int
    forward_mem_bytes: float = 0.0
    tp_allreduces: int = 2
    experts: int = 0
    top_k: int = 1
    tokens: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {type(self.name).__name__}")
        for key in ("forward_flops", "forward_mem_bytes"):
            object.__setattr__(self, key, as_real(getattr(self, key), key, 0.0))
        for key, top in (
            ("activation_bytes", None),
            ("parameter_bytes", None),
            ("tp_allreduces", 16),
            ("experts", None),
            ("tokens", None),
        ):
            object.__setattr__(self, key, as_int(getattr(self, key), key, 0, top))
        top = max(self.experts, 1)
        object.__setattr__(self, "top_k", as_int(self.top_k, "top_k", 1, top))

    @property
    def is_expert(self) -> bool:
        """Whether the layer is a mixture-of-experts layer (``experts > 0``).

        Examples
        --------
        >>> from wafercoll.workloads import Layer
        >>> Layer("moe", 1e9, 4096, 1 << 20, experts=8, top_k=2).is_expert
        True
        """
        return self.experts > 0

    @classmethod
    def from_parameters(
        cls,
        name: str,
        parameters: int,
        tokens: int,
        activation_bytes: int,
        *,
        bytes_per_element: int = 2,
        **fields: Any,
    ) -> Layer:
        """A layer whose forward costs ``2 x parameters x tokens`` FLOPs.

        One multiply and one add per parameter and token: Kaplan et al.
        2020, §2.1, ``C_forward ~ 2N`` per token (their context-dependent
        attention term is left out). The gradients take
        ``parameters x bytes_per_element`` bytes.

        Parameters
        ----------
        name : str
        parameters : int
            Parameters of the layer, >= 0.
        tokens : int
            Tokens of one micro-batch, >= 0.
        activation_bytes : int
            As for :class:`Layer`.
        bytes_per_element : int
            Bytes of one gradient element, in ``[1, 16]``.
        **fields
            Other fields of :class:`Layer`.

        Examples
        --------
        >>> from wafercoll.workloads import Layer
        >>> l = Layer.from_parameters("fc", 1000, 64, 64 * 100 * 2)
        >>> l.forward_flops, l.parameter_bytes
        (128000.0, 2000)
        """
        n = as_int(parameters, "parameters", 0)
        t = as_int(tokens, "tokens", 0)
        e = as_int(bytes_per_element, "bytes_per_element", 1, 16)
        return cls(name, 2.0 * n * t, activation_bytes, n * e, tokens=t, **fields)


def gpt_layers(
    hidden: int,
    layers: int,
    seq_len: int,
    micro_batch: int,
    *,
    bytes_per_element: int = 2,
    moe_every: int = 0,
    experts: int = 0,
    top_k: int = 2,
) -> list[Layer]:
    """The transformer layers of a GPT-like model, for one micro-batch.

    With ``h = hidden``, ``s = seq_len`` and ``b = micro_batch``, a layer's
    forward costs ``24 b s h^2 (1 + s / (6 h))`` FLOPs: ``6 b s h^2`` for
    the query, key and value projections, ``2 b s^2 h`` each for the
    attention scores and for applying them to the values, ``2 b s h^2`` for
    the output projection and ``16 b s h^2`` for the MLP of width ``4 h``
    (Narayanan et al., SC21, arXiv:2104.04473, Appendix: their
    ``96 B s l h^2 (1 + s / 6h + V / 16lh)`` per step counts forward,
    backward and recomputation, four forwards; Kaplan et al. 2020, Table 1,
    count one of the two ``s^2`` products). It has ``12 h^2 + 13 h``
    parameters (same Appendix) and outputs ``b s h`` elements. Embeddings
    and the output layer are left out (add them as :class:`Layer` s).

    With ``moe_every = k > 0``, the MLP of every ``k``-th layer (layers
    ``k - 1, 2k - 1, ...``) becomes a mixture of ``experts`` experts with
    ``top_k`` routing (Switch/GShard style): that layer is two layers, its
    attention (``8 b s h^2 + 4 b s^2 h`` FLOPs plus the router's
    ``2 b s h E``; ``4 h^2 + 8 h + h E`` parameters with both layer norms
    and the router; one tensor-parallel section) and its experts
    (``16 b s h^2 top_k`` FLOPs, ``E (8 h^2 + 5 h)`` parameters).

    Parameters
    ----------
    hidden, layers, seq_len, micro_batch : int
        Each >= 1.
    bytes_per_element : int
        Bytes of an activation and of a gradient element, in ``[1, 16]``.
    moe_every : int
        0 for a dense model, else the period of the expert layers (>= 1).
    experts : int
        Experts per expert layer (>= 1 when ``moe_every > 0``).
    top_k : int
        Experts per token, in ``[1, experts]``.

    Returns
    -------
    list of Layer

    Examples
    --------
    >>> from wafercoll.workloads import gpt_layers
    >>> l = gpt_layers(hidden=1024, layers=2, seq_len=2048, micro_batch=1)
    >>> l[0].forward_flops == 24 * 2048 * 1024**2 * (1 + 2048 / (6 * 1024))
    True
    >>> [x.name for x in gpt_layers(64, 2, 16, 1, moe_every=2, experts=4)]
    ['layer0', 'layer1.attention', 'layer1.experts']
    """
    h = as_int(hidden, "hidden", 1)
    n = as_int(layers, "layers", 1)
    s = as_int(seq_len, "seq_len", 1)
    b = as_int(micro_batch, "micro_batch", 1)
    e = as_int(bytes_per_element, "bytes_per_element", 1, 16)
    k = as_int(moe_every, "moe_every", 0)
    n_exp = as_int(experts, "experts", 1 if k else 0)
    if n_exp and not k:
        raise ValueError(f"experts ({n_exp}) needs moe_every >= 1")
    top = as_int(top_k, "top_k", 1, n_exp) if k else 0
    tokens = b * s
    act = tokens * h * e
    out: list[Layer] = []
    for i in range(n):
        if k and (i + 1) % k == 0:
            attn = 8 * tokens * h * h + 4 * b * s * s * h + 2 * tokens * h * n_exp
            out.append(
                Layer(
                    f"layer{i}.attention",
                    float(attn),
                    act,
                    (4 * h * h + 8 * h + h * n_exp) * e,
                    tp_allreduces=1,
                    tokens=tokens,
                )
            )
            out.append(
                Layer(
                    f"layer{i}.experts",
                    float(16 * tokens * h * h * top),
                    act,
                    n_exp * (8 * h * h + 5 * h) * e,
                    tp_allreduces=1,
                    experts=n_exp,
                    top_k=top,
                    tokens=tokens,
                )
            )
        else:
            flops = 24 * tokens * h * h + 4 * b * s * s * h
            out.append(
                Layer(
                    f"layer{i}",
                    float(flops),
                    act,
                    (12 * h * h + 13 * h) * e,
                    tokens=tokens,
                )
            )
    return out
