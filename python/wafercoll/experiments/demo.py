"""Foundation experiment: counts of the classic builders against closed forms.

For every generic builder of the foundation (ring, recursive doubling and
Rabenseifner's allreduce, binomial reduce and broadcast) and every rank count
``p`` in ``1 .. 64`` (``1 .. 16`` in quick mode), the schedule for a vector of
``S = 1 MiB`` is built, verified, and its counts are compared with the closed
forms of Thakur, Rabenseifner and Gropp (2005). With ``q = 2**floor(log2 p)``
and ``e = [p != q]`` (the non-power-of-two ranks folded onto the first ``q``):

==================  ================  ======================  =================
algorithm           steps             transfers               bytes sent (all)
==================  ================  ======================  =================
ring                ``2(p-1)``        ``2p(p-1)``             ``2(p-1) S``
recursive doubling  ``log2 q + 2e``   ``q log2 q + 2(p-q)``   transfers × ``S``
Rabenseifner        ``2log2 q + 2e``  ``2q log2 q + 2(p-q)``  ``2(q-1+p-q) S``
binomial reduce     ``ceil(log2 p)``  ``p - 1``               ``(p-1) S``
binomial broadcast  ``ceil(log2 p)``  ``p - 1``               ``(p-1) S``
==================  ================  ======================  =================

The busiest rank sends ``2(p-1) S/p`` (ring), ``(log2 q + e) S`` (recursive
doubling), ``(2(1 - 1/q) + e) S`` (Rabenseifner), ``S`` (binomial reduce) and
``ceil(log2 p) S`` (the root of a binomial broadcast). These hold exactly when
the blocks divide ``S`` evenly; otherwise (the ring for ``p`` not a power of
two) blocks differ by one byte and the busiest rank may send up to one byte
more per message than the formula.
"""

from __future__ import annotations

from typing import Any

from . import Experiment, finding, new_axes, register_experiment
from .judges import Exact

__all__ = ["closed_forms", "plot_counts", "run_counts"]

ALGORITHMS = (
    "ring",
    "recursive_doubling",
    "rabenseifner",
    "binomial_reduce",
    "binomial_broadcast",
)
#: The registry name of each short name above.
REGISTRY_NAMES = {
    "ring": "generic_ring_allreduce",
    "recursive_doubling": "generic_recursive_doubling_allreduce",
    "rabenseifner": "generic_rabenseifner_allreduce",
    "binomial_reduce": "generic_binomial_reduce",
    "binomial_broadcast": "generic_binomial_broadcast",
}
SIZE_BYTES = 1 << 20
MAX_RANKS = 64
MAX_RANKS_QUICK = 16

_STEP_FORMULAS = {
    "ring": "2(p-1)",
    "recursive_doubling": "log2 q + 2[p != q]",
    "rabenseifner": "2 log2 q + 2[p != q]",
    "binomial_reduce": "ceil(log2 p)",
    "binomial_broadcast": "ceil(log2 p)",
}


_VOLUME_FORMULAS = {
    "ring": "2p(p-1) transfers; 2(p-1)S in all; 2(p-1)S/p busiest",
    "recursive_doubling": "q log2 q + 2(p-q) transfers of S; "
    "(log2 q + [p != q])S busiest",
    "rabenseifner": "2q log2 q + 2(p-q) transfers; 2(q-1+p-q)S in all; "
    "(2(1-1/q) + [p != q])S busiest",
    "binomial_reduce": "p-1 transfers of S; S busiest",
    "binomial_broadcast": "p-1 transfers of S; ceil(log2 p)S busiest (root)",
}


def _ceil_log2(p: int) -> int:
    return (p - 1).bit_length()


def _ratio(num: int, den: int) -> int | float:
    """``num / den``, as an int when exact."""
    return num // den if num % den == 0 else num / den


def closed_forms(algorithm: str, p: int, size: int) -> dict[str, float]:
    """Closed-form counts of one builder (see the module docstring).

    Parameters
    ----------
    algorithm : str
        One of the five foundation builders.
    p : int
        Number of ranks, >= 1.
    size : int
        Vector size ``S`` in bytes.

    Returns
    -------
    dict
        ``steps``, ``transfers``, ``bytes_total`` (exact integers) and
        ``bytes_max`` (the busiest rank's bytes when blocks divide ``S``
        evenly; a float for the ring).
    """
    lg = p.bit_length() - 1  # log2 q
    q = 1 << lg
    extra = int(p != q)
    folded = p - q
    if algorithm == "ring":
        return {
            "steps": 2 * (p - 1),
            "transfers": 2 * p * (p - 1),
            "bytes_total": 2 * (p - 1) * size,
            "bytes_max": _ratio(2 * (p - 1) * size, p),
        }
    if algorithm == "recursive_doubling":
        return {
            "steps": lg + 2 * extra,
            "transfers": q * lg + 2 * folded,
            "bytes_total": (q * lg + 2 * folded) * size,
            "bytes_max": (lg + extra) * size,
        }
    if algorithm == "rabenseifner":
        return {
            "steps": 2 * lg + 2 * extra,
            "transfers": 2 * q * lg + 2 * folded,
            "bytes_total": (2 * (q - 1) + 2 * folded) * size,
            "bytes_max": _ratio(2 * (q - 1) * size, q) + extra * size,
        }
    if algorithm in ("binomial_reduce", "binomial_broadcast"):
        busiest = 1 if algorithm == "binomial_reduce" else _ceil_log2(p)
        return {
            "steps": _ceil_log2(p),
            "transfers": p - 1,
            "bytes_total": (p - 1) * size,
            "bytes_max": (busiest if p > 1 else 0) * size,
        }
    raise ValueError(f"no closed form for {algorithm!r}")


def run_counts(
    quick: bool = False,
) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    """Build and verify every builder for p = 1 .. 64 and compare the counts.

    Parameters
    ----------
    quick : bool
        Sweep ``p = 1 .. 16`` only.

    Returns
    -------
    columns : dict of lists
        ``algorithm``, ``p``, ``size_bytes``, ``steps``, ``steps_closed_form``,
        ``transfers``, ``transfers_closed_form``, ``bytes_sent_total``,
        ``bytes_sent_total_closed_form``, ``bytes_sent_max``,
        ``bytes_sent_max_closed_form``.
    findings : list of dict
        Per algorithm, whether steps and volumes matched the closed forms.
    """
    import wafercoll as wc

    top = MAX_RANKS_QUICK if quick else MAX_RANKS
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "algorithm",
            "p",
            "size_bytes",
            "steps",
            "steps_closed_form",
            "transfers",
            "transfers_closed_form",
            "bytes_sent_total",
            "bytes_sent_total_closed_form",
            "bytes_sent_max",
            "bytes_sent_max_closed_form",
        )
    }
    findings = []
    for name in ALGORITHMS:
        step_misses, volume_misses, max_slack = [], [], 0.0
        for p in range(1, top + 1):
            sched = wc.build(REGISTRY_NAMES[name], ranks=p, size_bytes=SIZE_BYTES)
            report = wc.verify(sched)
            sent = sched.stats()["bytes_sent"]
            ours = {
                "steps": int(report.steps),
                "transfers": int(sched.num_transfers),
                "bytes_total": int(sent.sum()),
                "bytes_max": int(sent.max()),
            }
            expected = closed_forms(name, p, SIZE_BYTES)
            for key, col in (
                ("steps", "steps"),
                ("transfers", "transfers"),
                ("bytes_total", "bytes_sent_total"),
                ("bytes_max", "bytes_sent_max"),
            ):
                cols[col].append(ours[key])
                cols[col + "_closed_form"].append(expected[key])
            cols["algorithm"].append(name)
            cols["p"].append(p)
            cols["size_bytes"].append(SIZE_BYTES)
            if ours["steps"] != expected["steps"]:
                step_misses.append(p)
            # Uneven blocks (S not divisible) may add one byte per message.
            slack = ours["bytes_max"] - expected["bytes_max"]
            max_slack = max(max_slack, abs(slack))
            if (
                ours["transfers"] != expected["transfers"]
                or ours["bytes_total"] != expected["bytes_total"]
                or not -1e-9 <= slack <= 2 * (p - 1)
            ):
                volume_misses.append(p)
        span = f"p = 1..{top}"
        findings.append(
            finding(
                f"steps.{name}",
                f"steps of {name} ({span})",
                _STEP_FORMULAS[name],
                _verdict(step_misses, "equal for every p"),
                Exact(0, "ranks p where the closed form fails"),
                len(step_misses),
                note="matches" if not step_misses else "MISMATCH",
            )
        )
        uneven = max_slack >= 0.5
        note = "matches" if not volume_misses else "MISMATCH"
        if uneven and not volume_misses:
            note += f"; uneven blocks: busiest rank up to {max_slack:.0f} B more"
        findings.append(
            finding(
                f"volume.{name}",
                f"transfers and bytes sent of {name} ({span})",
                _VOLUME_FORMULAS[name],
                _verdict(volume_misses, "equal for every p"),
                Exact(0, "ranks p where the closed form fails"),
                len(volume_misses),
                note=note,
            )
        )
    return cols, findings


def _verdict(misses: list[int], ok_text: str) -> str:
    """``ok_text``, or the first rank counts where the closed form failed."""
    if not misses:
        return ok_text
    head = ", ".join(str(v) for v in misses[:6])
    return f"differs at p = {head}" + (", ..." if len(misses) > 6 else "")


def plot_counts(data: dict[str, list[Any]], ax: Any = None) -> Any:
    """Steps against ranks: built schedules as markers, closed forms as lines.

    Parameters
    ----------
    data : dict of lists
        The columns of :func:`run_counts`.
    ax : matplotlib.axes.Axes, optional
        Where to draw; a new figure when omitted.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from matplotlib.lines import Line2D

    from ..plot import LEGEND_FONTSIZE

    ax = new_axes(ax)
    markers = "os^vD*"
    sizes = (7, 6, 6, 8, 5, 6)  # equal counts (binomial reduce and broadcast) nest
    algorithms = list(dict.fromkeys(data["algorithm"]))
    for i, name in enumerate(algorithms):
        rows = [k for k, a in enumerate(data["algorithm"]) if a == name]
        p = [data["p"][k] for k in rows]
        # The built schedules' counts: hollow markers, no line, under the forms.
        pts = ax.plot(
            p,
            [data["steps"][k] for k in rows],
            ls="none",
            marker=markers[i % len(markers)],
            markersize=sizes[i % len(sizes)],
            markerfacecolor="none",
            markeredgewidth=1.1,
            label=name,
            zorder=2,
        )[0]
        # The closed form: a line drawn on top, so it shows through every marker.
        ax.plot(
            p,
            [data["steps_closed_form"][k] for k in rows],
            linestyle=(0, (3, 1.5)),
            linewidth=1.2,
            color=pts.get_color(),
            zorder=3,
        )
    ax.set_xlabel("ranks p")
    ax.set_ylabel("steps (longest dependency chain)")
    ax.set_xscale("log", base=2)
    # Linear up to 4 steps, logarithmic beyond: the ring's 2(p-1) and the
    # logarithmic algorithms fit on one readable axis.
    ax.set_yscale("symlog", linthresh=4, linscale=0.6)
    top = max(data["steps"], default=1)
    ticks = [t for t in (0, 1, 2, 4, 8, 16, 32, 64, 128) if t <= 2 * top]
    ax.set_yticks(ticks, labels=[str(t) for t in ticks])
    ax.set_ylim(0, max(ticks[-1], top) * 1.15)
    p_max = max(data["p"], default=2)
    ticks_p = [t for t in (1, 2, 4, 8, 16, 32, 64, 128, 256) if t <= p_max]
    ax.set_xticks(ticks_p, labels=[str(t) for t in ticks_p])
    ax.minorticks_off()
    ax.set_title("Steps of the foundation builders (dashed: closed forms)")
    ax.grid(True, alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="0.35", linestyle=(0, (3, 1.5))))
    labels.append("closed form")
    ax.legend(handles, labels, fontsize=LEGEND_FONTSIZE, loc="upper left")
    return ax


register_experiment(
    Experiment(
        name="foundation_counts",
        title="Steps, transfers and bytes of the classic builders vs closed forms",
        paper="foundation",
        claim=(
            "Thakur, Rabenseifner and Gropp (2005): the ring allreduce takes "
            "2(p-1) steps of S/p bytes; recursive doubling log2 p steps of S; "
            "Rabenseifner's allreduce 2 log2 p steps moving 2(p-1)/p S per rank; "
            "binomial trees ceil(log2 p) steps. For p not a power of two, the "
            "p - q extra ranks (q = 2^floor(log2 p)) fold onto the first q, "
            "adding one step before and one after."
        ),
        run=run_counts,
        plot=plot_counts,
    )
)
