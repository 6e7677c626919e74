#!/usr/bin/env bash
# The compiled core under AddressSanitizer and UndefinedBehaviorSanitizer:
# the GoogleTest suite (preset `sanitize`), then the extension built with the
# same flags into its own virtual environment and a pytest subset run against
# it (the fuzz and hardening tests, the verifier, schedules, the simulator).
# Any report fails the run. Used by .ci/run; takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

echo "== C++ tests under ASan + UBSan"
cmake --preset sanitize >build-sanitize.log 2>&1 || { cat build-sanitize.log; exit 1; }
cmake --build --preset sanitize
ctest --preset sanitize
rm -f build-sanitize.log

echo "== Python tests against an ASan + UBSan build of the extension"
FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g"
"$PY" -m venv build/sanitize-venv
VPY=build/sanitize-venv/bin/python
"$VPY" -m pip install -q --upgrade pip
"$VPY" -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" cmake ninja
"$VPY" -m pip install -q --no-build-isolation ".[test]" -Cbuild-dir=build/sanitize-py \
  -Ccmake.build-type=Debug \
  "-Ccmake.define.CMAKE_CXX_FLAGS=$FLAGS" \
  "-Ccmake.define.CMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined"
# Python itself is not instrumented: preload the sanitizer runtimes, and do
# not report the interpreter's own allocations as leaks.
PRELOAD="$(${CXX:-g++} -print-file-name=libasan.so) $(${CXX:-g++} -print-file-name=libubsan.so)"
# Run from a folder without the sources, so the installed (instrumented)
# package is the one imported.
mkdir -p build/sanitize-run
cd build/sanitize-run
LD_PRELOAD="$PRELOAD" \
  ASAN_OPTIONS="detect_leaks=0:abort_on_error=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "../../$VPY" -m pytest -q -p no:cacheprovider -c ../../pyproject.toml \
  --rootdir ../.. \
  ../../tests/test_fuzz.py ../../tests/test_hardening.py ../../tests/test_verify.py \
  ../../tests/test_schedule.py ../../tests/test_simulate.py ../../tests/test_io_msccl.py \
  -k "not round_trips and not ctrl_c"
