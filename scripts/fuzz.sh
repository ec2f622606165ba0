#!/usr/bin/env bash
# Builds kiln's libFuzzer targets with clang + ASan + UBSan (build-fuzz/) and runs each for
# SECONDS (default 60) on a seed corpus generated from the repo's own models.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
#   (targets: onnx_import text_ir npy files runtime_binding)
# KILN_FUZZ_BUILD=DIR uses another build folder already configured with -DKILN_FUZZ=ON (CI's
# sanitized build, scripts/test.sh); otherwise build-fuzz/ is configured here.
# Crashes are written to <build>/crashes/<target>/; the corpus grows in <build>/corpus/.
# KILN_FUZZ_TIMEOUT=S is libFuzzer's per-input limit (default 10 s; raise it for long runs on
# a shared machine, where a starved process can pass 10 s of wall time on one input).
# KILN_FUZZ_PARALLEL=1 runs the targets at the same time instead of one after another.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(onnx_import text_ir npy files runtime_binding)
build="${KILN_FUZZ_BUILD:-build-fuzz}"
if [[ -z ${KILN_FUZZ_BUILD:-} ]]; then
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON >/dev/null
fi
ninja -C "$build" ${KILN_JOBS:+-j "$KILN_JOBS"} kiln "${targets[@]/#/fuzz_}" | tail -n 2
# Seed corpus: tiny valid inputs of each kind.
seeds="$build/seeds"
rm -rf "$seeds"
mkdir -p "$seeds"/{onnx_import,text_ir,npy,files,runtime_binding}
cp models/shapes_cnn.onnx "$seeds/onnx_import/"
for t in test_relu test_conv_with_strides_padding test_if test_slice test_gather_0; do
  d=.cache/onnx-node-tests/node/$t
  [[ -d $d ]] || continue
  cp "$d/model.onnx" "$seeds/onnx_import/$t.onnx"
  cp "$d/test_data_set_0/input_0.pb" "$seeds/files/$t.pb"
done
kiln="$build/tools/kiln/kiln"
export ASAN_OPTIONS=detect_leaks=0:detect_container_overflow=0
"$kiln" print models/shapes_cnn.onnx --full >"$seeds/text_ir/shapes.kir" 2>/dev/null || true
"$kiln" convert models/shapes_cnn.onnx -o "$seeds/files/shapes.kiln" >/dev/null 2>&1 || true
cp models/example_triangle.npy "$seeds/npy/"
# Call sequences: create, set the input, run, read the output (see fuzz_runtime_binding.cc).
printf '\000\001\002\000\000\007\006\000' >"$seeds/runtime_binding/create_set_run"
fuzz_one() {  # TARGET: one libFuzzer run; its stats at the end of <build>/fuzz_TARGET.log
  local t="$1"
  mkdir -p "$build/corpus/$t" "$build/crashes/$t"
  echo "fuzz: $t for ${seconds}s"
  if ! "$build/tests/fuzz/fuzz_$t" "$build/corpus/$t" "$seeds/$t" \
    -max_total_time="$seconds" -timeout="${KILN_FUZZ_TIMEOUT:-10}" -rss_limit_mb=4096 \
    -artifact_prefix="$build/crashes/$t/" -print_final_stats=1 2>"$build/fuzz_$t.log"; then
    echo "fuzz: $t FAILED: see $build/fuzz_$t.log and $build/crashes/$t/"
    return 1
  fi
}
status=0
if [[ ${KILN_FUZZ_PARALLEL:-0} == 1 ]]; then
  pids=()
  for t in "${targets[@]}"; do
    fuzz_one "$t" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
else
  for t in "${targets[@]}"; do fuzz_one "$t" || status=1; done
fi
for t in "${targets[@]}"; do
  echo "fuzz: $t"
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz_$t.log" || true
done
exit $status
