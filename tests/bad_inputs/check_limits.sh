#!/usr/bin/env bash
# Every import limit with a flag (docs/limits.md): lowered below the bundled model, kiln exits 1
# with one line naming the flag; at the default the model loads. The kernels' rank limit is
# checked at compile time.
# Usage: tests/bad_inputs/check_limits.sh KILN CASES_DIR (CASES_DIR from gen_bad_inputs.py)
set -euo pipefail
kiln="$(realpath "$1")"
cases="$(realpath "$2")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
model="$repo/models/shapes_cnn.onnx"
work="$(mktemp -d /tmp/kiln-limits.XXXXXX)"
trap 'rm -rf "$work"' EXIT
failed=0
expect_refused() {  # MODEL FLAG-TEXT ARGS...
  local m="$1" want="$2"
  shift 2
  local rc=0
  "$kiln" inspect "$m" "$@" >/dev/null 2>"$work/err" || rc=$?
  if [[ $rc -ne 1 || $(wc -l <"$work/err") -ne 1 ]] || ! grep -q -- "$want" "$work/err"; then
    echo "FAIL  inspect $(basename "$m") $*: exit $rc, stderr: $(cat "$work/err")"
    failed=$((failed + 1))
  else
    echo "ok    $(basename "$m") $*: $(cut -c 1-150 "$work/err")"
  fi
}
expect_loaded() {
  local m="$1"
  shift
  if ! "$kiln" inspect "$m" "$@" >/dev/null 2>"$work/err"; then
    echo "FAIL  inspect $(basename "$m") $* was refused: $(cat "$work/err")"
    failed=$((failed + 1))
  else
    echo "ok    $(basename "$m") $* loads"
  fi
}
expect_refused "$model" "--max-model-bytes" --max-model-bytes 1000
expect_refused "$model" "--max-tensor-bytes" --max-tensor-bytes 100
expect_refused "$model" "--max-rank" --max-rank 3
expect_loaded "$model"
expect_refused "$cases/nested_if_100.onnx" "--max-nesting"
expect_loaded "$cases/nested_if_100.onnx" --max-nesting 200
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
rc=0
"$kiln" compile "$work/rank33.onnx" -o "$work/out" 2>"$work/err" || rc=$?
if [[ $rc -ne 1 ]] || ! grep -q "above the kernels' limit of 32" "$work/err"; then
  echo "FAIL  rank-33 compile: exit $rc, $(cat "$work/err")"
  failed=$((failed + 1))
else
  echo "ok    rank33.onnx compile: $(cat "$work/err")"
fi
echo "limits: $((7 - failed)) passed, $failed failed"
((failed == 0))
