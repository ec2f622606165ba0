#!/usr/bin/env bash
# Bit-identical outputs at 1, 2 and 3 threads (the thread pool splits work over independent
# outputs only): the bundled CNN, and MobileNetV2 (im2col and depthwise convs, Gemm) and the
# BERT-like encoder (MatMul with packed weights, batched attention MatMuls) when MODELS_DIR
# has them. Usage: threads_determinism.sh KILN [MODELS_DIR [MODEL ...]] (default models:
# mobilenetv2 bert).
set -euo pipefail
kiln="$(realpath "$1")"
models_dir="${2:-}"
shift $(($# < 2 ? $# : 2))
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(mobilenetv2 bert)
want() { [[ " ${wanted[*]} " == *" $1 "* ]]; }
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
check() {  # name model [kiln run flags...]
  local name=$1 model=$2
  shift 2
  for t in 1 2 3; do
    "$kiln" run "$model" --threads "$t" --cache "$work/cache" -o "$work/$name-t$t" "$@" >/dev/null
  done
  for f in "$work/$name-t1"/*.npy; do
    for t in 2 3; do
      cmp "$f" "$work/$name-t$t/$(basename "$f")" ||
        { echo "FAIL: $name: $(basename "$f") differs between 1 and $t threads"; exit 1; }
    done
  done
  echo "ok: $name: outputs bit-identical at 1, 2 and 3 threads"
}
check shapes_cnn "$repo/models/shapes_cnn.onnx" -i image="$repo/models/example_triangle.npy"
if [[ -n $models_dir ]]; then
  /usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
np.save(sys.argv[1] + "/image.npy", rng.standard_normal((1, 3, 224, 224)).astype(np.float32))
np.save(sys.argv[1] + "/tokens.npy", rng.standard_normal((1, 128, 768)).astype(np.float32))
PY
  if want mobilenetv2 && [[ -f $models_dir/mobilenetv2.onnx ]]; then
    check mobilenetv2 "$models_dir/mobilenetv2.onnx" -i "$work/image.npy"
  fi
  if want bert && [[ -f $models_dir/bert.onnx ]]; then
    check bert "$models_dir/bert.onnx" -i "$work/tokens.npy"
  fi
fi
