#!/usr/bin/env bash
# Run every test of wafercoll: the C++ core with GoogleTest (through ctest) and
# the Python package with pytest (which also executes the notebooks).
#
# Needs a C++17 compiler and GoogleTest (Debian/Ubuntu: apt-get install libgtest-dev).
# With an MPI implementation (Debian/Ubuntu: apt-get install openmpi-bin
# libopenmpi-dev) it also runs the MPI executor's tests on 8 processes; under
# CI=true a missing MPI is an error. Everything else comes from PyPI. Builds
# are incremental (build/).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

echo "== installing wafercoll (editable) with its test dependencies"
"$PY" -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" cmake ninja
"$PY" -m pip install -q --no-build-isolation -e ".[test]"
if command -v mpirun >/dev/null 2>&1; then
  "$PY" -m pip install -q "mpi4py>=3.1"
fi

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

echo "== MPI tests (8 processes)"
if command -v mpirun >/dev/null 2>&1 && "$PY" -c "import mpi4py" 2>/dev/null; then
  MPIRUN=(mpirun --oversubscribe -n 8)
  if [ "$(id -u)" -eq 0 ]; then MPIRUN+=(--allow-run-as-root); fi
  # One pytest per rank, each with its own temporary directory (a shared one
  # would be cleaned up by eight processes at once).
  mkdir -p build/mpi-tmp
  "${MPIRUN[@]}" bash -c 'exec "$0" -m pytest -q -p no:cacheprovider \
    --basetemp="build/mpi-tmp/rank${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}" tests/mpi' "$PY"
elif [ "${CI:-}" = "true" ]; then
  echo "error: CI needs mpirun and mpi4py for the MPI tests" >&2
  exit 1
else
  echo "skipped: no mpirun or mpi4py (install openmpi-bin libopenmpi-dev and mpi4py)"
fi
