#!/bin/sh
# kiln_kernel_manifest on kernels/cpu/manifest.json and on broken copies of it: the real one
# generates the kernel table, every ISA's cases and the benchmark shapes; each broken one stops
# with exit 1 and one line naming the kernel (or key) and what is wrong, writing nothing.
# Usage: kernel_manifest_check.sh TOOL KERNELS_DIR
set -u
tool=$1
kernels=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0

"$tool" "$kernels/manifest.json" "$kernels" lib "$work/ok" || { echo "FAIL: the manifest"; exit 1; }
for isa in avx512 avx2 generic; do
  "$tool" "$kernels/manifest.json" "$kernels" tests $isa "$work/ok/$isa" || { echo "FAIL: $isa"; exit 1; }
done
"$tool" "$kernels/manifest.json" "$kernels" bench avx512 "$work/ok" || { echo "FAIL: bench"; exit 1; }
grep -q 'gemm_f32_packed_b,' "$work/ok/kiln/cpu_kernel_table.h" || { echo "FAIL: no table"; exit 1; }
grep -q 'INSTANTIATE_TEST_SUITE_P(gemm_f32__avx2_6x16' "$work/ok/avx2/kernel_manifest_cases.cc" ||
  { echo "FAIL: avx2 cases"; exit 1; }
# mr+1 is 13 on AVX-512, 5 in the portable build
grep -q '{"M", 13}' "$work/ok/avx512/kernel_manifest_cases.cc" && grep -q '{"M", 5}' "$work/ok/generic/kernel_manifest_cases.cc" ||
  { echo "FAIL: tile expressions"; exit 1; }

# expect NAME SED-SCRIPT MESSAGE: the manifest edited by SED-SCRIPT must fail with MESSAGE.
expect() {
  sed "$2" "$kernels/manifest.json" > "$work/bad.json"
  rm -rf "$work/out"
  if "$tool" "$work/bad.json" "$kernels" tests avx512 "$work/out" > "$work/log" 2>&1; then
    echo "FAIL $1: accepted"; fails=$((fails + 1)); return
  fi
  if [ "$(wc -l < "$work/log")" -ne 1 ] || ! grep -qF -- "$3" "$work/log"; then
    echo "FAIL $1: wanted one line with '$3', got:"; cat "$work/log"; fails=$((fails + 1)); return
  fi
  if [ -e "$work/out" ]; then echo "FAIL $1: wrote output"; fails=$((fails + 1)); fi
}
expect unknown_key 's/"family": "gemm", "header": "gemv.h"/"famly": "gemm", "header": "gemv.h"/' \
  'kernel gemv_f32_packed_b: unknown key "famly"'
expect duplicate 's/"name": "gemm_f32_packed_b"/"name": "gemm_f32"/' 'kernel gemm_f32: listed twice'
expect bad_expression 's/"mr-1", "mr", "mr+1", 13, 49, 97/"mr-1", "mr+*1", 13, 49, 97/' \
  'expression "mr+*1"'
expect unknown_name 's/"K": \[0, 1, 7, "kc", "kc+1", 1280\]/"K": [0, "kk"]/' "unknown name 'kk'"
expect negative 's/"rows": \[1, 3, 33\]/"rows": ["lanes-100"]/' 'a size evaluates to -84'
expect no_function 's/"header": "pool.h"/"header": "resize.h"/' \
  'kernel max_pool2d_f32: resize.h declares no function max_pool2d_f32'
expect missing_header 's/"header": "pool.h"/"header": "nope.h"/' 'cannot read'
expect not_identifier 's/"name": "transpose_2d"/"name": "transpose 2d"/' 'must be a C++ identifier'
expect bad_suffix 's/"name": "transpose_2d", "suffix": "none"/"name": "transpose_2d", "suffix": "tiles"/' \
  '"suffix" must be'
expect no_sweep 's/"sweeps": \[{"n": \[1, "lanes-1", "lanes", "lanes+1", "3\*lanes+5", 32775\]}\]/"sweeps": []/' \
  'kernel map_n_f32: "sweeps" must list at least one sweep'
expect truncated '$d' 'not valid JSON'
expect bad_format 's/"format": 1/"format": 2/' '"format" must be 1'
expect missing_isa 's/"isa": "avx2"/"isa": "avx3"/' '"isas" lacks avx2'

[ "$fails" -eq 0 ] && echo "kernel manifest: generated for every ISA; 13 broken manifests refused"
exit "$fails"
