"""Performance models of paper 001: postal, intra/inter split, max-rate, protocols.

Formulas (recovered details §1.2):

* postal with computation: ``T = alpha m + beta s + gamma f`` for ``m``
  messages, ``s`` bytes and ``f`` bytes reduced on the critical path;
* intra/inter split: ``T = alpha_l m_l + beta_l s_l + alpha m_g + beta s_g
  + gamma f`` with on-node ``(alpha_l, beta_l)`` and network ``(alpha, beta)``;
* max-rate (Gropp, Olson, Samfass, EuroMPI 2016): ``k`` processes of a node
  each sending ``s`` bytes off-node at once take
  ``T = alpha + k s / min(R_N, k R_b)``, ``R_b = 1 / beta`` the per-process
  rate and ``R_N`` the NIC's injection rate; ``k = 1`` is the postal cost;
* protocol regimes by message size: *short* below 500 B, *eager* below
  8000 B, *rendezvous* otherwise (BlueWatersModel ``arch_model.py``).

Parameter sets are :class:`ClusterParams` objects: one :class:`Postal` per
locality class (``socket``, ``node``, ``network``) and protocol, the NIC rate
per protocol (``None`` where the source gives none: that regime is postal)
and ``gamma``. Two sets describe Blue Waters:

* :data:`BLUE_WATERS_MEASURED`, fitted here at import from the authors'
  ping-pong measurements (:func:`blue_waters_pingpong`, shipped with the
  package) by the authors' own procedure (:func:`fit_max_rate`): the set the
  paper's model figures were drawn with (recovered details §1.7a);
* :data:`BLUE_WATERS`, the network rows hard-coded as the "standard"
  max-rate model in the authors' ``nodecomm_model.py``, with the same
  fitted on-node and on-socket rows.

:func:`fit_postal` and :func:`fit_max_rate` fit a user set from ping-pong
data.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._util import as_int, as_real

__all__ = [
    "BLUE_WATERS",
    "BLUE_WATERS_MEASURED",
    "EAGER_MAX_BYTES",
    "LOCALITIES",
    "PROTOCOLS",
    "RAPTOR_BENCHMARK",
    "SHORT_MAX_BYTES",
    "ClusterParams",
    "Postal",
    "blue_waters_pingpong",
    "fit_blue_waters",
    "fit_max_rate",
    "fit_pingpong",
    "fit_postal",
    "max_rate_time",
    "postal_time",
    "protocol",
    "read_pingpong",
    "split_time",
]

#: Messages below this size use the short protocol (arch_model.py, §1.2).
SHORT_MAX_BYTES = 500
#: Messages below this size (and at least SHORT_MAX_BYTES) are sent eagerly.
EAGER_MAX_BYTES = 8000
PROTOCOLS = ("short", "eager", "rendezvous")
LOCALITIES = ("socket", "node", "network")


def _arr(x: Any, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError(f"{name} must be finite and >= 0")
    return a


def postal_time(
    messages: Any,
    size_bytes: Any,
    flops: Any = 0.0,
    *,
    alpha_s: float,
    beta_s_per_byte: float,
    gamma_s_per_byte: float = 0.0,
) -> Any:
    """Postal model with computation: ``alpha m + beta s + gamma f``.

    Parameters
    ----------
    messages, size_bytes, flops : array_like
        Messages, bytes and bytes reduced on the critical path (>= 0).
    alpha_s, beta_s_per_byte, gamma_s_per_byte : float
        Latency per message, time per byte sent and per byte reduced.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> t = cluster.postal_time(3, 1024, alpha_s=1e-6, beta_s_per_byte=1e-9)
    >>> f"{t * 1e6:.3f} us"
    '4.024 us'
    """
    a = as_real(alpha_s, "alpha_s", 0.0)
    b = as_real(beta_s_per_byte, "beta_s_per_byte", 0.0)
    g = as_real(gamma_s_per_byte, "gamma_s_per_byte", 0.0)
    out = (
        a * _arr(messages, "messages")
        + b * _arr(size_bytes, "size_bytes")
        + g * _arr(flops, "flops")
    )
    return out if out.ndim else float(out)


def split_time(
    local_messages: Any,
    local_bytes: Any,
    network_messages: Any,
    network_bytes: Any,
    flops: Any = 0.0,
    *,
    local: Postal,
    network: Postal,
    gamma_s_per_byte: float = 0.0,
) -> Any:
    """Intra/inter-node split of the postal model.

    ``alpha_l m_l + beta_l s_l + alpha m_g + beta s_g + gamma f`` with
    ``local = (alpha_l, beta_l)`` and ``network = (alpha, beta)``.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> local = cluster.Postal(alpha_s=1e-6, beta_s_per_byte=1e-10)
    >>> network = cluster.Postal(alpha_s=4e-6, beta_s_per_byte=5e-10)
    >>> t = cluster.split_time(2, 1024, 1, 1024, local=local, network=network)
    >>> f"{t * 1e6:.2f} us"
    '6.61 us'
    """
    t = postal_time(
        local_messages, local_bytes, flops, **local.kw(), gamma_s_per_byte=0.0
    )
    return t + postal_time(
        network_messages,
        network_bytes,
        flops,
        **network.kw(),
        gamma_s_per_byte=gamma_s_per_byte,
    )


def max_rate_time(
    senders: Any,
    size_bytes: Any,
    *,
    alpha_s: float,
    R_b_Bps: float,
    R_N_Bps: float | None,
) -> Any:
    """Max-rate model: ``alpha + k s / min(R_N, k R_b)``.

    Parameters
    ----------
    senders : array_like of int
        ``k >= 1``, processes of one node sending off-node at the same time.
    size_bytes : array_like
        Bytes each of them sends.
    alpha_s : float
        Latency of a message.
    R_b_Bps : float
        Per-process rate (``1 / beta``).
    R_N_Bps : float or None
        NIC injection rate; ``None`` means unlimited (the postal model).

    Examples
    --------
    >>> from wafercoll import cluster
    >>> t = cluster.max_rate_time(4, 1e6, alpha_s=2e-6, R_b_Bps=2e9, R_N_Bps=5e9)
    >>> f"{t * 1e6:.0f} us"
    '802 us'
    """
    k = np.asarray(senders, dtype=np.float64)
    if (k < 1).any() or not np.isfinite(k).all():
        raise ValueError("senders must be >= 1")
    a = as_real(alpha_s, "alpha_s", 0.0)
    rb = as_real(R_b_Bps, "R_b_Bps", positive=True)
    rate = k * rb
    if R_N_Bps is not None:
        rate = np.minimum(as_real(R_N_Bps, "R_N_Bps", positive=True), rate)
    out = a + k * _arr(size_bytes, "size_bytes") / rate
    return out if out.ndim else float(out)


def protocol(
    size_bytes: Any,
    short_max: int = SHORT_MAX_BYTES,
    eager_max: int = EAGER_MAX_BYTES,
) -> Any:
    """Protocol of a message: ``"short"``, ``"eager"`` or ``"rendezvous"``.

    Short below ``short_max`` bytes, eager below ``eager_max``, rendezvous
    otherwise (BlueWatersModel ``arch_model.py``; recovered details §1.2).
    Returns a str for a scalar and an array of str otherwise.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> cluster.protocol(8), cluster.protocol(4096), cluster.protocol(1 << 20)
    ('short', 'eager', 'rendezvous')
    """
    s = _arr(size_bytes, "size_bytes")
    lo = as_int(short_max, "short_max", 0)
    hi = as_int(eager_max, "eager_max", lo)
    idx = (s >= lo).astype(int) + (s >= hi).astype(int)
    out = np.asarray(PROTOCOLS)[idx]
    return str(out) if out.ndim == 0 else out


@dataclasses.dataclass(frozen=True)
class Postal:
    """Latency and inverse bandwidth of one locality class and protocol.

    Attributes
    ----------
    alpha_s : float
        Latency per message in seconds.
    beta_s_per_byte : float
        Seconds per byte (``1 / R_b``).
    """

    alpha_s: float
    beta_s_per_byte: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "alpha_s", as_real(self.alpha_s, "alpha_s", 0.0))
        object.__setattr__(
            self,
            "beta_s_per_byte",
            as_real(self.beta_s_per_byte, "beta_s_per_byte", positive=True),
        )

    def kw(self) -> dict[str, float]:
        """The keyword arguments of :func:`postal_time`."""
        return {"alpha_s": self.alpha_s, "beta_s_per_byte": self.beta_s_per_byte}

    def time(self, size_bytes: Any) -> Any:
        """``alpha + beta s``."""
        return postal_time(1, size_bytes, **self.kw())


@dataclasses.dataclass(frozen=True)
class ClusterParams:
    """A named parameter set of the cluster models.

    Attributes
    ----------
    name : str
    classes : mapping
        ``classes[locality][protocol]`` is a :class:`Postal`, for the
        localities ``socket``, ``node`` and ``network`` and the protocols
        ``short``, ``eager`` and ``rendezvous``.
    nic_Bps : mapping
        NIC injection rate ``R_N`` per protocol, or ``None`` (postal).
    gamma_s_per_byte : float
        Reduction cost per byte.
    ppn : int
        Processes per node the set was measured with.
    sources : mapping
        Where each entry comes from.
    """

    name: str
    classes: Mapping[str, Mapping[str, Postal]]
    nic_Bps: Mapping[str, float | None]
    gamma_s_per_byte: float
    ppn: int
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for loc in LOCALITIES:
            for proto in PROTOCOLS:
                if not isinstance(self.classes.get(loc, {}).get(proto), Postal):
                    raise ValueError(f"classes[{loc!r}][{proto!r}] must be a Postal")
        for proto in PROTOCOLS:
            v = self.nic_Bps.get(proto)
            if v is not None:
                as_real(v, f"nic_Bps[{proto!r}]", positive=True)
        as_real(self.gamma_s_per_byte, "gamma_s_per_byte", 0.0)
        as_int(self.ppn, "ppn", 1)

    def postal(self, locality: str, size_bytes: float) -> Postal:
        """The :class:`Postal` of a locality class for a message size."""
        if locality not in LOCALITIES:
            raise ValueError(f"locality must be one of {LOCALITIES}, got {locality!r}")
        return self.classes[locality][protocol(size_bytes)]

    def local_time(self, size_bytes: float, locality: str = "node") -> float:
        """``alpha_l + beta_l s`` of one on-node message (protocol by size)."""
        return float(self.postal(locality, size_bytes).time(size_bytes))

    def network_time(
        self, size_bytes: float, senders: int = 1, model: str = "max_rate"
    ) -> float:
        """Cost of an off-node message while ``senders`` of its node send.

        ``model="max_rate"``: ``alpha + k s / min(R_N, k R_b)`` with the
        regime's ``R_N`` (postal where the regime has none);
        ``model="postal"``: ``alpha + beta s`` whatever ``k``.
        """
        if model not in ("max_rate", "postal"):
            raise ValueError(f"model must be 'max_rate' or 'postal', got {model!r}")
        pp = self.postal("network", size_bytes)
        rn = self.nic_Bps[protocol(size_bytes)] if model == "max_rate" else None
        k = 1 if model == "postal" else max(int(senders), 1)
        return float(
            max_rate_time(
                k,
                size_bytes,
                alpha_s=pp.alpha_s,
                R_b_Bps=1.0 / pp.beta_s_per_byte,
                R_N_Bps=rn,
            )
        )

    def replace(self, **changes: Any) -> ClusterParams:
        """A copy with some fields changed (a user-supplied set)."""
        return dataclasses.replace(self, **changes)


def _classes(table: Mapping[str, tuple[tuple[float, float], ...]]) -> dict:
    return {
        loc: {pr: Postal(a, b) for pr, (a, b) in zip(PROTOCOLS, rows, strict=True)}
        for loc, rows in table.items()
    }


_BW_MODEL = "bienz2/BlueWatersModel"
#: Blue Waters (Cray XE6, ppn 16) with the network rows of the "standard"
#: max-rate model hard-coded in the authors' nodecomm_model.py (recovered
#: details §1.8). The paper's figures were drawn with
#: :data:`BLUE_WATERS_MEASURED` instead (§1.7a).
BLUE_WATERS = ClusterParams(
    name="blue_waters",
    classes=_classes(
        {
            # on-socket ping-pong, fitted (recovered details §1.8, [RUN])
            "socket": ((4.42e-7, 4.56e-10), (5.32e-7, 3.11e-10), (1.67e-6, 1.60e-10)),
            # on-node ping-pong, 16 ppn node, fitted (§1.8, [RUN])
            "node": ((8.28e-7, 2.10e-9), (1.21e-6, 1.04e-9), (2.46e-6, 1.61e-10)),
            # hard-coded "standard" max-rate model of nodecomm_model.py (§1.8)
            "network": ((4.0e-6, 1.6e-9), (1.1e-5, 5.9e-10), (2.0e-5, 2.8e-10)),
        }
    ),
    nic_Bps={"short": None, "eager": None, "rendezvous": 1.0 / 1.8e-10},
    gamma_s_per_byte=0.115543 / 8.0e7,
    ppn=16,
    sources={
        "socket": f"{_BW_MODEL}, fitted from on-socket ping-pong data (§1.8)",
        "node": f"{_BW_MODEL}, fitted from on-node ping-pong data (§1.8)",
        "network": f"{_BW_MODEL} nodecomm_model.py, standard max-rate model (§1.8)",
        "nic_Bps": f"{_BW_MODEL} nodecomm_model.py: 1/R_N = 1.8e-10 s/B (§1.8)",
        "gamma": f"{_BW_MODEL} plot_nap_collective_model.py: 0.115543 s / 8e7 B "
        "(§1.7a)",
        "cutoffs": f"{_BW_MODEL} arch_model.py: short < 500 B, eager < 8000 B (§1.2)",
        "ppn": "Streamline allreduce benchmark default, 16 (§1.8)",
    },
)

#: The set in raptor-library/raptor examples/benchmark_setup.cpp (§1.8; the
#: machine is not named there). The network eager and rendezvous rows use
#: the first of the two rates given.
RAPTOR_BENCHMARK = ClusterParams(
    name="raptor_benchmark",
    classes=_classes(
        {
            "socket": (
                (8.86e-7, 1 / 1.10e9),
                (1.05e-6, 1 / 1.59e9),
                (3.37e-6, 1 / 3.13e9),
            ),
            "node": (
                (1.70e-6, 1 / 2.47e8),
                (2.36e-6, 1 / 4.84e8),
                (5.01e-6, 1 / 3.07e9),
            ),
            "network": (
                (4.25e-6, 1 / 7.01e8),
                (1.34e-5, 1 / 9.84e8),
                (9.43e-6, 1 / 2.01e9),
            ),
        }
    ),
    nic_Bps={"short": None, "eager": None, "rendezvous": 6.25e9},
    gamma_s_per_byte=0.115543 / 8.0e7,
    ppn=16,
    sources={
        "all": "raptor-library/raptor examples/benchmark_setup.cpp (§1.8)",
        "gamma": "as BLUE_WATERS (§1.7a)",
    },
)


def fit_postal(
    sizes: Any,
    times: Any,
    *,
    round_trip: bool = False,
    by_protocol: bool = False,
) -> Postal | dict[str, Postal]:
    """Fit ``alpha + beta s`` to measured message times by least squares.

    Parameters
    ----------
    sizes : array_like
        Message sizes in bytes.
    times : array_like
        Measured times in seconds, one per size.
    round_trip : bool
        The times are ping-pong round trips: fit ``t / 2`` (as the authors
        did, recovered details §1.8).
    by_protocol : bool
        Fit each protocol regime (short, eager, rendezvous) separately and
        return a dict; every regime then needs two distinct sizes.

    Returns
    -------
    Postal or dict of str to Postal
        Negative fitted values are clipped to 0 for alpha and to a tiny
        positive value for beta.

    Raises
    ------
    ValueError
        For arrays of different lengths, fewer than two distinct sizes, or
        negative or non-finite values.

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll import cluster
    >>> sizes = np.array([8.0, 64.0, 512.0])
    >>> fit = cluster.fit_postal(sizes, 1e-6 + 2e-10 * sizes)
    >>> round(fit.alpha_s * 1e6, 9), round(fit.beta_s_per_byte * 1e10, 9)
    (1.0, 2.0)
    """
    s = _arr(sizes, "sizes").ravel()
    t = _arr(times, "times").ravel()
    if s.shape != t.shape:
        raise ValueError(
            f"sizes and times must have the same length, got {s.size} and {t.size}"
        )
    if round_trip:
        t = t / 2.0

    def fit(ss: np.ndarray, tt: np.ndarray, what: str) -> Postal:
        if np.unique(ss).size < 2:
            raise ValueError(f"{what} needs at least two distinct sizes")
        A = np.stack([np.ones_like(ss), ss], axis=1)
        (a, b), *_ = np.linalg.lstsq(A, tt, rcond=None)
        return Postal(max(float(a), 0.0), max(float(b), 1e-300))

    if not by_protocol:
        return fit(s, t, "fit_postal")
    proto = np.asarray(protocol(s)).reshape(s.shape)
    return {
        pr: fit(s[proto == pr], t[proto == pr], f"fit_postal ({pr} regime)")
        for pr in PROTOCOLS
    }


#: The max-rate model's threshold: fits and costs treat ``senders >= 4`` as
#: NIC-bound (BlueWatersModel nodecomm_model.py, class MaxRateModel).
MAX_RATE_MIN_SENDERS = 4


def fit_max_rate(
    sizes: Any,
    times: Any,
    senders: Any,
    *,
    round_trip: bool = False,
    min_senders: int = MAX_RATE_MIN_SENDERS,
) -> tuple[dict[str, Postal], float]:
    """Fit the max-rate model to off-node ping-pong data, as the authors did.

    The procedure of BlueWatersModel ``nodecomm_model.py`` (class
    ``MaxRateModel`` inside ``StandardArch``; recovered details §1.2, §1.8):

    * short and eager regimes: ``alpha + beta s`` by least squares over all
      points, whatever the number of senders;
    * rendezvous regime: ``alpha`` and ``beta`` by least squares over the
      points with fewer than ``min_senders`` senders, then ``1 / R_N`` by
      least squares (no intercept) of ``t - alpha`` on ``k s`` over the
      points with ``k >= min_senders`` senders.

    Parameters
    ----------
    sizes : array_like
        Message size of each point in bytes.
    times : array_like
        Time of each point in seconds.
    senders : array_like of int
        Processes of the node sending at once (>= 1) at each point.
    round_trip : bool
        The times are ping-pong round trips: fit ``t / 2``.
    min_senders : int
        Points with at least this many senders are NIC-bound.

    Returns
    -------
    (dict of str to Postal, float)
        The postal fit per protocol and the rendezvous ``R_N`` in bytes per
        second.

    Raises
    ------
    ValueError
        For arrays of different lengths, negative or non-finite values, a
        regime with fewer than two distinct sizes, or no NIC-bound point, or
        a fitted ``1 / R_N`` that is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> from wafercoll import cluster
    >>> sizes = np.array([8, 64, 1000, 4000, 1e5, 1e6, 1e5, 1e6])
    >>> senders = np.array([1, 1, 1, 1, 1, 1, 8, 8])
    >>> times = 2e-6 + senders * sizes / np.minimum(5e9, senders * 2e9)
    >>> fits, R_N = cluster.fit_max_rate(sizes, times, senders)
    >>> sorted(fits), f"{R_N:.2e} B/s"
    (['eager', 'rendezvous', 'short'], '5.00e+09 B/s')
    """
    s = _arr(sizes, "sizes").ravel()
    t = _arr(times, "times").ravel()
    k = _arr(senders, "senders").ravel()
    if not (s.shape == t.shape == k.shape):
        raise ValueError(
            "sizes, times and senders must have the same length, got "
            f"{s.size}, {t.size} and {k.size}"
        )
    if (k < 1).any():
        raise ValueError("senders must be >= 1")
    m = as_int(min_senders, "min_senders", 2)
    if round_trip:
        t = t / 2.0
    proto = np.asarray(protocol(s)).reshape(s.shape)
    out: dict[str, Postal] = {}
    for pr in ("short", "eager"):
        sel = proto == pr
        out[pr] = fit_postal(s[sel], t[sel])
    rend = proto == "rendezvous"
    alone = rend & (k < m)
    if np.unique(s[alone]).size < 2:
        raise ValueError(
            f"fit_max_rate needs rendezvous points with fewer than {m} senders "
            "at two distinct sizes at least"
        )
    out["rendezvous"] = fit_postal(s[alone], t[alone])
    busy = rend & (k >= m)
    if not busy.any():
        raise ValueError(f"fit_max_rate needs rendezvous points with >= {m} senders")
    x = k[busy] * s[busy]
    inv_rn = float(np.dot(x, t[busy] - out["rendezvous"].alpha_s) / np.dot(x, x))
    if not inv_rn > 0:
        raise ValueError(f"the fitted 1 / R_N is not positive ({inv_rn:g} s/B)")
    return out, 1.0 / inv_rn


_PINGPONG = "blue_waters_pingpong.csv"
_BW_COMMIT = "4ecec3e9a1f803e87c4075a487a01afef9819ec3"


_PINGPONG_NAMES = ("locality", "block", "size_bytes", "pairs", "round_trip_s")


def _parse_pingpong(text: str, where: str) -> dict[str, np.ndarray]:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines or tuple(c.strip() for c in lines[0].split(",")) != _PINGPONG_NAMES:
        raise ValueError(
            f"{where}: the first row must be the header {','.join(_PINGPONG_NAMES)}"
        )
    loc, block, size, pairs, rt = [], [], [], [], []
    for n, ln in enumerate(lines[1:], start=2):
        f = [c.strip() for c in ln.split(",")]
        try:
            if len(f) != 5 or f[0] not in LOCALITIES:
                raise ValueError
            loc.append(f[0])
            block.append(int(f[1]))
            size.append(float(f[2]))
            pairs.append(int(f[3]))
            rt.append(float(f[4]))
        except ValueError:
            raise ValueError(
                f"{where}: data row {n - 1} ({ln!r}) must be locality (one of "
                f"{', '.join(LOCALITIES)}), block, size_bytes, pairs, round_trip_s"
            ) from None
    out = {
        "locality": np.array(loc, dtype=str),
        "block": np.array(block, dtype=np.int64),
        "size_bytes": np.array(size, dtype=np.float64),
        "pairs": np.array(pairs, dtype=np.int64),
        "round_trip_s": np.array(rt, dtype=np.float64),
    }
    for a in out.values():
        a.setflags(write=False)
    return out


@functools.lru_cache(maxsize=1)
def _pingpong_arrays() -> tuple[np.ndarray, ...]:
    from importlib.resources import files

    text = files("wafercoll.cluster").joinpath("data", _PINGPONG).read_text()
    d = _parse_pingpong(text, _PINGPONG)
    return tuple(d[k] for k in _PINGPONG_NAMES)


def read_pingpong(path: Any) -> dict[str, np.ndarray]:
    """Read ping-pong measurements written by ``python -m wafercoll.mpi pingpong``.

    The CSV has the columns of :func:`blue_waters_pingpong` (lines starting
    with ``#`` are comments). Raises ``ValueError`` naming the file and the
    row for a malformed file, ``FileNotFoundError`` for a missing one.

    Examples
    --------
    >>> import os, tempfile
    >>> from wafercoll import cluster
    >>> data = cluster.blue_waters_pingpong()
    >>> path = os.path.join(tempfile.mkdtemp(), "pp.csv")
    >>> with open(path, "w") as f:
    ...     print(",".join(data), file=f)
    ...     for row in zip(*data.values()):
    ...         print(",".join(str(v) for v in row), file=f)
    >>> sorted(cluster.read_pingpong(path)) == sorted(data)
    True
    """
    import os

    path = os.fspath(path)
    with open(path, encoding="utf-8") as fh:
        return _parse_pingpong(fh.read(), path)


def blue_waters_pingpong() -> dict[str, np.ndarray]:
    """The authors' Blue Waters ping-pong measurements (read-only arrays).

    Source: github.com/bienz2/BlueWatersModel (BSD 2-Clause), commit
    ``4ecec3e9``, files ``bw_output/orig/max_rate`` (``locality ==
    "network"``: one node's processes and another node's, 1 to 16 pairs at
    once), ``bw_output/on_node/on_node.out`` (``"node"``: across the two
    sockets, 1 to 8 pairs) and ``bw_output/on_node/on_socket.out``
    (``"socket"``), converted by ``tools/import_blue_waters.py``.

    Returns
    -------
    dict
        ``locality`` (str), ``block`` (measurement block of the file),
        ``size_bytes``, ``pairs`` (pairs communicating at once) and
        ``round_trip_s``, one entry per measurement.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> data = cluster.blue_waters_pingpong()
    >>> sorted(data)
    ['block', 'locality', 'pairs', 'round_trip_s', 'size_bytes']
    """
    names = ("locality", "block", "size_bytes", "pairs", "round_trip_s")
    return dict(zip(names, _pingpong_arrays(), strict=True))


def fit_pingpong(
    data: Mapping[str, Any] | Any,
    *,
    name: str = "fitted",
    network: str = "max_rate",
    gamma_s_per_byte: float | None = None,
    ppn: int | None = None,
    sources: Mapping[str, str] | None = None,
) -> ClusterParams:
    """Fit a :class:`ClusterParams` from ping-pong measurements by locality.

    The authors' procedure (BlueWatersModel ``nodecomm_model.py``; recovered
    details §1.7a, §1.8): the times are round trips, halved; on-node and
    on-socket classes are postal fits per protocol over all points; the
    network class is :func:`fit_max_rate` (NIC-bound from 4 senders) when the
    data have rendezvous points with 4 or more pairs, else a postal fit with
    no NIC limit.

    Parameters
    ----------
    data : mapping or path
        Columns as :func:`blue_waters_pingpong` returns them, or the path of
        a CSV of ``python -m wafercoll.mpi pingpong`` (:func:`read_pingpong`).
    name : str
    network : {"max_rate", "postal"}
        ``"postal"`` fits the network class over all points, whatever the
        number of pairs (the committed setting of ``nodecomm_model.py``).
    gamma_s_per_byte : float, optional
        Reduction cost per byte (default: :data:`BLUE_WATERS`'s).
    ppn : int, optional
        Processes per node of the machine (default 16).
    sources : mapping, optional
        Extra source notes.

    Returns
    -------
    ClusterParams
        A locality the data lack takes the next one's fit: ``socket`` takes
        ``node``'s, ``node`` takes ``socket``'s (the source says so).

    Raises
    ------
    ValueError
        For data without on-node or on-socket points, without network
        points, or with a regime that has fewer than two distinct sizes.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> params = cluster.fit_pingpong(cluster.blue_waters_pingpong(), name="bw")
    >>> params.name, sorted(params.classes)
    ('bw', ['network', 'node', 'socket'])
    """
    if network not in ("max_rate", "postal"):
        raise ValueError(f"network must be 'max_rate' or 'postal', got {network!r}")
    d = data if isinstance(data, Mapping) else read_pingpong(data)
    loc_col = np.asarray(d["locality"])
    size = np.asarray(d["size_bytes"], dtype=np.float64)
    half = np.asarray(d["round_trip_s"], dtype=np.float64) / 2.0
    pairs = np.asarray(d["pairs"], dtype=np.int64)
    src = dict(sources or {})
    classes: dict[str, dict[str, Postal]] = {}
    for loc in ("socket", "node"):
        sel = loc_col == loc
        if sel.any():
            classes[loc] = fit_postal(size[sel], half[sel], by_protocol=True)
            src.setdefault(loc, "postal fit per protocol of t/2 (§1.8)")
    if not classes:
        raise ValueError("fit_pingpong needs on-node or on-socket measurements")
    for loc, other in (("socket", "node"), ("node", "socket")):
        if loc not in classes:
            classes[loc] = classes[other]
            src[loc] = f"no {loc} measurements: the {other} fit"
    sel = loc_col == "network"
    if not sel.any():
        raise ValueError("fit_pingpong needs network (off-node) measurements")
    busy = (pairs[sel] >= MAX_RATE_MIN_SENDERS) & (size[sel] >= EAGER_MAX_BYTES)
    rn = None
    if network == "max_rate" and busy.any():
        classes["network"], rn = fit_max_rate(size[sel], half[sel], pairs[sel])
        src.setdefault(
            "network",
            "max-rate fit of t/2 as nodecomm_model.py MaxRateModel (short, eager: "
            "all points; rendezvous: < 4 senders) (§1.2, §1.7a)",
        )
        src.setdefault(
            "nic_Bps", "rendezvous points with >= 4 senders, t/2 - alpha on k s (§1.2)"
        )
    else:
        classes["network"] = fit_postal(size[sel], half[sel], by_protocol=True)
        src.setdefault("network", "postal fit per protocol of t/2 over all points")
        src.setdefault("nic_Bps", "none (postal)")
    src.setdefault("gamma", BLUE_WATERS.sources["gamma"])
    src.setdefault("cutoffs", BLUE_WATERS.sources["cutoffs"])
    return ClusterParams(
        name=name,
        classes=classes,
        nic_Bps={"short": None, "eager": None, "rendezvous": rn},
        gamma_s_per_byte=BLUE_WATERS.gamma_s_per_byte
        if gamma_s_per_byte is None
        else gamma_s_per_byte,
        ppn=16 if ppn is None else ppn,
        sources=src,
    )


def fit_blue_waters(network: str = "max_rate") -> ClusterParams:
    """Fit :data:`BLUE_WATERS_MEASURED` from :func:`blue_waters_pingpong`.

    :func:`fit_pingpong` on the authors' measurements (BlueWatersModel
    ``nodecomm_model.py``; recovered details §1.7a, §1.8), with ``gamma``
    and ``ppn`` as :data:`BLUE_WATERS`.

    Parameters
    ----------
    network : {"max_rate", "postal"}
        ``"max_rate"``: the figures' set. ``"postal"``: postal fits per
        protocol over all off-node points and no NIC limit, the setting the
        committed ``nodecomm_model.py`` has (``network_model =
        StandardArch(LocalModel)``), named ``blue_waters_measured_postal``.

    Examples
    --------
    >>> from wafercoll import cluster
    >>> params = cluster.fit_blue_waters()
    >>> params.name, sorted(params.classes)
    ('blue_waters_measured', ['network', 'node', 'socket'])
    """
    src = f"{_BW_MODEL} {_BW_COMMIT[:8]}"
    files = {
        "socket": "bw_output/on_node/on_socket.out",
        "node": "bw_output/on_node/on_node.out",
        "network": "bw_output/orig/max_rate",
        "nic_Bps": "bw_output/orig/max_rate",
    }
    fitted = fit_pingpong(
        blue_waters_pingpong(),
        name="blue_waters_measured" + ("_postal" if network == "postal" else ""),
        network=network,
        ppn=BLUE_WATERS.ppn,
    )
    sources = {
        k: f"{src} {files[k]}, {v}" if k in files else v
        for k, v in fitted.sources.items()
    }
    sources["ppn"] = BLUE_WATERS.sources["ppn"]
    return fitted.replace(sources=sources)


#: Blue Waters fitted from the authors' measurements (:func:`fit_blue_waters`):
#: the parameter set of the paper's model figures (recovered details §1.7a).
BLUE_WATERS_MEASURED = fit_blue_waters()
