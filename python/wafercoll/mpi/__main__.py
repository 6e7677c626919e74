"""``python -m wafercoll.mpi``: the same as ``wafercoll mpi``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
