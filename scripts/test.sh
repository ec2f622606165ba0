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
