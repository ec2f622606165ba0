#!/usr/bin/env bash
# Every import limit with a flag (docs/limits.md): lowered below the bundled model, kiln exits 1
# with one line naming the flag; at the default the model loads. The kernels' rank limit is
# checked at compile time; the Loop iteration limit at run time (kiln run, KILN_ERR_DATA).
# Hostile cases here end within 10 s; a model at the default node limit loads within 30 s.
# Usage: tests/bad_inputs/check_limits.sh KILN CASES_DIR (CASES_DIR from gen_bad_inputs.py)
set -euo pipefail
kiln="$(realpath "$1")"
cases="$(realpath "$2")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
model="$repo/models/shapes_cnn.onnx"
work="$(mktemp -d /tmp/kiln-limits.XXXXXX)"
trap 'rm -rf "$work"' EXIT
failed=0
passed=0
limit_s=10
timed() {  # SECONDS CMD...: runs CMD in an empty working directory; sets rc and ms
  local seconds="$1"
  shift
  rm -rf "$work/cwd" && mkdir "$work/cwd"
  local start=$(date +%s%N)
  rc=0
  (cd "$work/cwd" && exec timeout -s KILL "$seconds" "$@") >/dev/null 2>"$work/err" || rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [[ -n $(find "$work/cwd" -mindepth 1) ]]; then
    echo "      wrote into its working directory: $(find "$work/cwd" -mindepth 1 -printf '%f ')" \
      >>"$work/err"
    rc=99
  fi
}
check() {  # OK? DESCRIPTION
  if [[ $1 == 1 ]]; then
    echo "ok    $2 (${ms} ms): $(cut -c 1-150 "$work/err")"
    passed=$((passed + 1))
  else
    echo "FAIL  $2: exit $rc after ${ms} ms, stderr: $(cat "$work/err")"
    failed=$((failed + 1))
  fi
}
refused_with() {  # TEXT: exit 1, one line on stderr containing TEXT, within limit_s
  [[ $rc -eq 1 && $(wc -l <"$work/err") -eq 1 && $ms -le $((limit_s * 1000)) ]] &&
    grep -q -- "$1" "$work/err" && echo 1
}
expect_refused() {  # MODEL FLAG-TEXT ARGS...
  local m="$1" want="$2"
  shift 2
  timed $((limit_s + 5)) "$kiln" inspect "$m" "$@"
  check "$(refused_with "$want")" "inspect $(basename "$m") $*"
}
expect_loaded() {  # MODEL ARGS...: loads within 30 s
  local m="$1"
  shift
  timed 35 "$kiln" inspect "$m" "$@"
  check "$([[ $rc -eq 0 && $ms -le 30000 ]] && echo 1)" "inspect $(basename "$m") $* loads"
}
expect_refused "$model" "--max-model-bytes" --max-model-bytes 1000
expect_refused "$model" "--max-tensor-bytes" --max-tensor-bytes 100
expect_refused "$model" "--max-rank" --max-rank 3
expect_loaded "$model"
expect_refused "$cases/nested_if_100.onnx" "--max-nesting"
expect_loaded "$cases/nested_if_100.onnx" --max-nesting 200
# Nodes are counted over every subgraph: nested_if_100 has 100 Ifs and 101 Identities.
expect_refused "$cases/nested_if_100.onnx" "--max-nodes" --max-nesting 200 --max-nodes 200
expect_loaded "$cases/nested_if_100.onnx" --max-nesting 200 --max-nodes 201
# A million nodes are refused before parsing; at the default limit (250,000) a chain loads.
expect_refused "$cases/limits/chain_1m.onnx" "--max-nodes"
expect_loaded "$cases/limits/chain_250k.onnx"
expect_refused "$cases/limits/chain_250k.onnx" "--max-nodes" --max-nodes 249999
# The .kiln and textual IR readers count nodes too (the bundled model, converted).
"$kiln" convert "$model" -o "$work/model.kiln" >/dev/null
"$kiln" print "$model" --full >"$work/model.kir"
expect_refused "$work/model.kiln" "--max-nodes" --max-nodes 1
expect_loaded "$work/model.kiln"
timed $((limit_s + 5)) "$kiln" opt "$work/model.kir" -O 0 --max-nodes 1
check "$(refused_with "--max-nodes")" "opt model.kir --max-nodes 1"
timed $((limit_s + 5)) "$kiln" opt "$work/model.kir" -O 0
check "$([[ $rc -eq 0 ]] && echo 1)" "opt model.kir loads"
# 10,000 nested Ifs stay refused at the highest --max-nesting, without a stack overflow.
expect_refused "$cases/nested_if_10000.onnx" "--max-nesting" --max-nesting 1000
# 1,000 nested messages (graph > node > attribute > ...) parse at --max-nesting 1000 and are
# refused by the importer (the innermost node reads an undefined value).
expect_refused "$cases/nested_messages_1000.onnx" "is not defined" --max-nesting 1000
# A Loop with trip count 2^62 compiles; running it stops at --max-loop-iterations with
# KILN_ERR_DATA: before the first iteration for a constant trip count without a condition,
# after the limit's iterations for a trip count and a condition given as inputs.
loop_run() {  # MODEL ARGS...
  timed $((limit_s + 5)) "$kiln" run "$1" -o "$work/out" --cache "$work/cache" "${@:2}"
}
loop_run "$cases/limits/loop_2p62_const.onnx" -i "$cases/limits/x.npy"
check "$(refused_with "Loop over its iteration limit")" "run loop_2p62_const.onnx"
loop_inputs=(-i "$cases/limits/M.npy" -i "$cases/limits/cond.npy" -i "$cases/limits/x.npy")
loop_run "$cases/limits/loop_2p62_input.onnx" "${loop_inputs[@]/M.npy/M5.npy}"  # the model works
check "$([[ $rc -eq 0 && -f $work/out/y.npy ]] && echo 1)" "run loop_2p62_input.onnx with M = 5"
loop_run "$cases/limits/loop_2p62_input.onnx" "${loop_inputs[@]}"
check "$(refused_with "Loop over its iteration limit")" "run loop_2p62_input.onnx"
loop_run "$cases/limits/loop_2p62_input.onnx" "${loop_inputs[@]}" --max-loop-iterations 10
check "$(refused_with "Loop over its iteration limit")" \
  "run loop_2p62_input.onnx --max-loop-iterations 10"
# Rank 33 imports (under --max-rank 64) but the kernels take at most 32 dims.
/usr/bin/python3 - "$work/rank33.onnx" <<'PY'
import sys
import numpy as np
np.float = float; np.int = int; np.bool = bool; np.object = object
from onnx import helper
dims = [1] * 33
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", 1, dims)],
                      [helper.make_tensor_value_info("y", 1, dims)])
open(sys.argv[1], "wb").write(
    helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
PY
timed $((limit_s + 5)) "$kiln" compile "$work/rank33.onnx" -o "$work/out"
check "$(refused_with "above the kernels' limit of 32")" "compile rank33.onnx"
echo "limits: $passed passed, $failed failed"
((failed == 0))
