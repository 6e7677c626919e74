#!/usr/bin/env bash
# Build the documentation site into build/docs: the API reference from the
# docstrings (numpydoc) and every notebook executed (myst-nb). Warnings are
# errors. Set WAFERCOLL_DOCS_EXECUTE=off to skip running the notebooks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q --no-build-isolation -e ".[docs]"
"$PY" -m sphinx -W --keep-going -q -b html docs build/docs
echo "wrote build/docs/index.html"
