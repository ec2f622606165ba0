#!/usr/bin/env bash
# Sets up (packages, including torch for the public models), builds, and runs kiln's whole
# test suite with CTest: unit tests, kernel header checks, ONNX node-test import conformance,
# the four public models, the bundled example, and hostile inputs.
# Usage: scripts/test.sh [extra ctest args, e.g. -L conformance]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
scripts/setup.sh --models
ctest --test-dir build --output-on-failure -j "${KILN_TEST_JOBS:-2}" --timeout 3600 "$@"

# Hostile inputs again under AddressSanitizer + UndefinedBehaviorSanitizer.
if [[ ${KILN_SKIP_SANITIZE:-0} != 1 ]]; then
  # -O0 without debug info: sanitizer reports still name functions; builds a third faster.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DCMAKE_C_FLAGS_DEBUG=-O0 -DKILN_SANITIZE=ON >/dev/null
  ninja -C build-asan ${KILN_JOBS:+-j "$KILN_JOBS"} kiln | tail -n 3
  export ASAN_OPTIONS=detect_leaks=0:detect_container_overflow=0 UBSAN_OPTIONS=halt_on_error=1
  tests/bad_inputs/check_bad_inputs.sh build-asan/tools/kiln/kiln build/tests/bad_inputs
  # Every 7th node test through the sanitized compiler, its generated code sanitized too.
  KILN_CXXFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" \
    /usr/bin/python3 tests/conformance/run_node_tests.py --kiln build-asan/tools/kiln/kiln \
    --every 7 -j 2 --timeout 600 --report build-asan/conformance-sample.json | tail -n 3
fi
