#!/usr/bin/env bash
# kiln's main job on the bundled model: set up, build, compile models/shapes_cnn.onnx into a
# standalone C library, link it into a small C program, and classify the bundled image.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
scripts/setup.sh
kiln=build/tools/kiln/kiln
out=build/example
rm -rf "$out"
mkdir -p "$out"
"$kiln" compile models/shapes_cnn.onnx -o "$out/shapes" --name shapes
cc -std=c11 -O2 -I"$out/shapes" examples/classify_shapes.c "$out/shapes/libshapes.a" \
  -lstdc++ -lm -o "$out/classify_shapes"
"$out/classify_shapes" models/example_triangle.npy models/shapes_labels.txt
