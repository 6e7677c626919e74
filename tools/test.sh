#!/usr/bin/env bash
# Run every test of wafercoll: the C++ core with GoogleTest (through ctest) and
# the Python package with pytest (which also executes the notebooks).
#
# Needs a C++17 compiler and GoogleTest (Debian/Ubuntu: apt-get install libgtest-dev).
# Everything else comes from PyPI. Builds are incremental (build/).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

echo "== installing wafercoll (editable) with its test dependencies"
"$PY" -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" cmake ninja
"$PY" -m pip install -q --no-build-isolation -e ".[test]"

echo "== C++ tests (GoogleTest)"
if ! cmake --preset dev >build-cpp.log 2>&1; then
  cat build-cpp.log
  echo "error: configuring the C++ tests failed; is GoogleTest installed (libgtest-dev)?" >&2
  exit 1
fi
cmake --build --preset dev
ctest --preset dev
rm -f build-cpp.log

echo "== Python tests (pytest)"
"$PY" -m pytest "$@"
