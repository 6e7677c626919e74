"""``python -m wafercoll``: the command line (see :mod:`wafercoll.cli`)."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
