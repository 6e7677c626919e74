#!/usr/bin/env bash
# Build the documentation site into build/docs: the API reference from the
# docstrings (numpydoc) and every notebook executed (myst-nb). Warnings are
# errors, and so are warnings printed by an executed notebook cell.
#
# Works from a fresh virtual environment: the build tools come first, then
# wafercoll (editable, rebuilt incrementally in build/) with the docs extra.
#
#   PYTHON=path/to/python     the interpreter to install into and build with
#   WAFERCOLL_DOCS_EXECUTE=off   skip running the notebooks
#   WAFERCOLL_DOCS_INTERSPHINX=1 link to the Python, NumPy, pandas and
#                                Matplotlib docs (downloads their inventories;
#                                off by default so that an offline build, as
#                                in CI, passes with -W)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" cmake ninja
"$PY" -m pip install -q --no-build-isolation -e ".[docs]"
"$PY" -m sphinx -W --keep-going -q -b html docs build/docs
echo "wrote build/docs/index.html"
