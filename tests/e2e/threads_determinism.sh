#!/usr/bin/env bash
# Determinism of compiles and of runs, per model:
#  - two compiles of the same model, into two different output folders from two different
#    working directories, give byte-identical artifacts (diff -r): every file kiln writes (the
#    second compile with --no-build: the libraries are the C++ compiler's work, from the same
#    sources, and building them twice took a third of this test's time);
#  - one artifact (compiled for 3 threads) run at 1 thread twice, then at 2 and 3 threads
#    (kiln run --run-threads: the same code, {P}_set_threads) gives bit-identical outputs (the
#    thread pool splits work over independent outputs only, never over a reduction).
# The bundled CNN always; the public models named (default: the four of issue 6, ResNet-50,
# MobileNetV2, BERT and PP-OCRv4 det; ppocr_v4_rec on request) that MODELS_DIR has.
# Usage: threads_determinism.sh KILN [MODELS_DIR [MODEL ...]]
set -euo pipefail
kiln="$(realpath "$1")"
models_dir="${2:+$(realpath "$2")}"
shift $(($# < 2 ? $# : 2))
wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=(resnet50 mobilenetv2 bert ppocr_v4_det)
want() { [[ " ${wanted[*]} " == *" $1 "* ]]; }
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
check() {  # name model [kiln run/compile flags...]
  local name=$1 model start=$SECONDS
  model="$(realpath "$2")"
  shift 2
  local flags=() runflags=()
  while (($#)); do
    case "$1" in
      -i) runflags+=("$1" "$2"); shift 2 ;;
      *) flags+=("$1"); shift ;;
    esac
  done
  mkdir -p "$work/$name/cwd1" "$work/$name/cwd2/deeper"
  (cd "$work/$name/cwd1" && "$kiln" compile "$model" --threads 3 -o ../a "${flags[@]}" >/dev/null)
  (cd "$work/$name/cwd2/deeper" && "$kiln" compile "$model" --threads 3 -o "$work/$name/b" \
    --no-build "${flags[@]}" >/dev/null)
  local libs=(-x "lib*.so" -x "lib*.a")
  if ! diff -r "${libs[@]}" "$work/$name/a" "$work/$name/b" >/dev/null; then
    echo "FAIL: $name: two compiles (other folder, other working directory) differ:"
    diff -rq "${libs[@]}" "$work/$name/a" "$work/$name/b" | head -n 5
    exit 1
  fi
  rm -rf "$work/$name/b"
  for t in 1 1r 2 3; do
    "$kiln" run "$work/$name/a" --run-threads "${t%r}" -o "$work/$name/out-$t" \
      "${runflags[@]}" >/dev/null
  done
  local n=0
  for f in "$work/$name/out-1"/*.npy; do
    for t in 1r 2 3; do
      cmp -s "$f" "$work/$name/out-$t/$(basename "$f")" ||
        { echo "FAIL: $name: $(basename "$f") differs between run 1 (1 thread) and $t"; exit 1; }
    done
    n=$((n + 1))
  done
  ((n > 0)) || { echo "FAIL: $name: no outputs written"; exit 1; }
  echo "ok: $name: compiles byte-identical; $n output(s) bit-identical at 1 (twice), 2 and 3" \
    "threads ($((SECONDS - start)) s)"
  rm -rf "$work/$name"
}
check shapes_cnn "$repo/models/shapes_cnn.onnx" -i image="$repo/models/example_triangle.npy"
if [[ -n $models_dir ]]; then
  /usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
for name, shape in [("image", (1, 3, 224, 224)), ("tokens", (1, 128, 768)),
                    ("det", (1, 3, 640, 640)), ("rec", (1, 3, 48, 320))]:
    np.save(f"{sys.argv[1]}/{name}.npy", rng.standard_normal(shape).astype(np.float32))
PY
  ran=0
  for m in "${wanted[@]}"; do
    model="$models_dir/$m.onnx"
    [[ -f $model ]] || { echo "FAIL: $model is missing (scripts/gen_models.sh)"; exit 1; }
    case "$m" in
      resnet50 | mobilenetv2) check "$m" "$model" -i "$work/image.npy" ;;
      bert) check "$m" "$model" -i "$work/tokens.npy" ;;
      ppocr_v4_det) check "$m" "$model" --shape x=1,3,640,640 -i "$work/det.npy" ;;
      ppocr_v4_rec) check "$m" "$model" --shape x=1,3,48,320 -i "$work/rec.npy" ;;
      *) echo "FAIL: unknown model '$m'"; exit 1 ;;
    esac
    ran=$((ran + 1))
  done
  echo "ok: $ran public model(s) deterministic"
fi
