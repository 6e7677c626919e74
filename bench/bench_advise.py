"""Time ``wafercoll advise`` on the 9x9 mesh at 256 MiB (target: < 10 s).

Runs the command in a fresh process, as a user would, and prints the wall time
and the ranking's head.
"""

from __future__ import annotations

import subprocess
import sys
import time


def main() -> None:
    cmd = [
        sys.executable,
        "-m",
        "wafercoll",
        "advise",
        "--topology",
        "mesh:9x9",
        "--size-bytes",
        "256MiB",
        "--network",
        "mcm_table_ii",
    ]
    times = []
    for _ in range(3):
        t = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - t)
    print("\n".join(out.splitlines()[:6]))
    print(
        f"wafercoll advise mesh:9x9 256MiB: best {min(times):.2f} s, "
        f"worst {max(times):.2f} s of 3 (target < 10 s)"
    )


if __name__ == "__main__":
    main()
