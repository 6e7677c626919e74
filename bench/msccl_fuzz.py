"""Differential fuzzing of the MSCCL import against a Python MSCCL runtime.

Mutates the msccl-tools files of tests/data/msccl (attributes, step types,
dropped, duplicated and swapped steps, buffers and their sizes, the in-place
flag, dependencies, non-integer and missing attributes). Every mutant that
``wafercoll.io.read_msccl`` and ``wafercoll.verify`` accept is run by the
runtime of tests/msccl_runtime.py (undefined memory as NaN, buffers in place
or not, the runtime's folding of steps into transfers, a FIFO per
connection) in random orders, and by ``wafercoll.execute``; both must compute
the collective. Prints the counts: mutants, rejected by the import, refuted
by the verifier, accepted (and agreeing), disagreements.

    python bench/msccl_fuzz.py                 # 10,000 mutants, seed 0
    python bench/msccl_fuzz.py -n 500 --seed 3
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from msccl_runtime import check, mutate  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--mutants", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    files = sorted((ROOT / "tests" / "data" / "msccl").glob("*.xml"))
    texts = [f.read_text() for f in files]
    counts: Counter[str] = Counter()
    start = time.perf_counter()
    first_bad = None
    for _ in range(args.mutants):
        text = mutate(texts[rng.integers(len(texts))], rng, int(rng.integers(1, 3)))
        try:
            counts[check(text, rng)] += 1
        except AssertionError as exc:
            counts["disagree"] += 1
            first_bad = first_bad or (text, str(exc))
        except Exception:  # a crash of the import is a finding too
            counts["crash"] += 1
            first_bad = first_bad or (text, traceback.format_exc())
    took = time.perf_counter() - start
    print(
        f"{args.mutants} mutants of {len(files)} msccl-tools files (seed "
        f"{args.seed}), {took:.0f} s: {counts['rejected']} rejected by the "
        f"import, {counts['refuted']} refuted by verify, {counts['agree']} "
        f"accepted and agreeing with the runtime, {counts['disagree']} "
        f"disagreements, {counts['crash']} crashes"
    )
    if first_bad is not None:
        print("first finding:\n" + first_bad[1] + "\n" + first_bad[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
