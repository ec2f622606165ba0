#!/usr/bin/env bash
# Sets up (packages, including torch for the public models), builds, and runs kiln's whole
# test suite with CTest: unit tests, kernel header checks, ONNX node-test import conformance,
# the four public models, the bundled example, and hostile inputs; then, under ASan + UBSan,
# the hostile inputs, the unit and CPU kernel tests, each fuzz target briefly and a sample of the
# node tests.
# Usage: scripts/test.sh [extra ctest args, e.g. -L conformance]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# Each phase's seconds go to the log (CI has a time budget: `.ci/run` under 30 minutes).
phase() { echo "test.sh: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }
phase_start=$SECONDS
scripts/setup.sh --models
phase "set-up and build"
ctest --test-dir build --output-on-failure -j "${KILN_TEST_JOBS:-2}" --timeout 3600 "$@"
phase "CTest"

# The sanitized stage: ONE clang build with ASan + UBSan and libFuzzer coverage (-DKILN_FUZZ=ON)
# serves the hostile inputs, the unit tests, the fuzz targets and a node-test sample.
if [[ ${KILN_SKIP_SANITIZE:-0} != 1 ]]; then
  stage_start=$(date +%s)
  # build-asan was a gcc build before: a compiler change needs a fresh cache.
  if [[ -f build-asan/CMakeCache.txt ]] &&
    ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++$' build-asan/CMakeCache.txt; then
    rm -rf build-asan
  fi
  # -O0 without debug info: sanitizer reports still name functions; builds a third faster.
  CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DCMAKE_C_FLAGS_DEBUG=-O0 -DKILN_FUZZ=ON >/dev/null
  fuzz_targets=(onnx_import text_ir npy files runtime_binding)
  # The CPU kernels at the widest SIMD layer this host runs (AVX-512 where it has it; a binary
  # built for an ISA the host lacks would die of SIGILL).
  kernels_isa=generic
  if grep -qw avx512f /proc/cpuinfo; then
    kernels_isa=avx512
  elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    kernels_isa=avx2
  fi
  show_failure() {  # LOG: the end of a failed step's log (sanitizer reports included)
    tail -n 40 "$1"
    echo "test.sh: failed, full log in $1" >&2
    exit 1
  }
  # kiln_memory_tests (the planner's unit tests) run unsanitized in CTest; the sanitized kiln
  # below runs the planner on every hostile input and node test it compiles.
  ninja -C build-asan ${KILN_JOBS:+-j "$KILN_JOBS"} kiln kiln_unit_tests \
    "kiln_cpu_kernels_$kernels_isa" \
    "${fuzz_targets[@]/#/fuzz_}" >build-asan/build.log 2>&1 || show_failure build-asan/build.log
  phase "the sanitized build"
  export ASAN_OPTIONS=detect_leaks=0:detect_container_overflow=0 UBSAN_OPTIONS=halt_on_error=1
  tests/bad_inputs/check_bad_inputs.sh build-asan/tools/kiln/kiln build/tests/bad_inputs
  phase "sanitized bad inputs"
  # The unit suite and the CPU kernels at the host's ISA, each binary run once (not a process
  # per test as ctest runs them), the kernels as three gtest shards, all four side by side (two
  # shards left one of them 40 s behind the other: 147 and 107 CPU seconds). The
  # portable kernel build runs unsanitized in CTest (its code paths are the same loops with
  # narrower vectors). The Winograd BlocksAndChunks cases (512 channels; the same code paths as
  # the smaller Winograd cases run here) and EdgeSizes (image sizes against each other: the
  # manifest's Winograd sweeps and the Pads cases run here) run unsanitized in CTest only: CI time.
  # So do the Winograd Channels cases (every C against every M: the sweeps' channel counts run
  # here) and the GEMM / GEMV epilogue tables with in-register activations: the sanitized run
  # keeps GemmEpilogueScalarActivation (every bias and residual combination, and the pass over
  # the stored tile) and the manifest sweeps (column bias, residual, padded leading dimensions
  # at every edge size). Those left out were 105 of the sanitized run's 376 CPU seconds.
  run_logged() {  # LOG BINARY ARGS...: runs in the background, its pid in $!
    local log=$1
    shift
    "$@" >"$log" 2>&1 &
  }
  unsanitized_only=*BlocksAndChunks*:CpuWinograd*.EdgeSizes:CpuWinograd*.Channels
  unsanitized_only+=:CpuKernels.GemmEpilogueNone:CpuKernels.GemmEpilogueRelu
  unsanitized_only+=:CpuKernels.GemmEpilogueClip:CpuKernels.GemvEpilogues
  pids=() logs=()
  run_logged build-asan/kiln_unit_tests.log build-asan/tests/kiln_unit_tests --gtest_brief=1
  pids+=($!) logs+=(build-asan/kiln_unit_tests.log)
  for shard in 0 1 2; do
    log="build-asan/kiln_cpu_kernels_$kernels_isa.$shard.log"
    GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$shard run_logged "$log" \
      "build-asan/tests/kiln_cpu_kernels_$kernels_isa" --gtest_brief=1 --gtest_filter="-$unsanitized_only"
    pids+=($!) logs+=("$log")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || show_failure "${logs[$i]}"
    tail -n 1 "${logs[$i]}"
  done
  phase "sanitized unit and kernel tests"
  # Each fuzz target for a short fixed time (scripts/fuzz.sh runs them longer), all five at once:
  # 15 s of wall time shared by five processes on two cores is the 6 CPU seconds each had one
  # after another (38 s with a core idle), and the per-input limit grows to match.
  KILN_FUZZ_BUILD=build-asan KILN_FUZZ_PARALLEL=1 KILN_FUZZ_TIMEOUT=25 \
    scripts/fuzz.sh "${KILN_CI_FUZZ_SECONDS:-15}" "${fuzz_targets[@]}"
  phase "fuzzing"
  # Every 45th node test through the sanitized compiler, its generated code sanitized too.
  KILN_CXXFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" \
    /usr/bin/python3 tests/conformance/run_node_tests.py --kiln build-asan/tools/kiln/kiln \
    --every 45 -j 2 --timeout 600 --report build-asan/conformance-sample.json | tail -n 3
  echo "test.sh: sanitized stage took $(($(date +%s) - stage_start)) s"
fi
