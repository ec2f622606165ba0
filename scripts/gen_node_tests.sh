#!/usr/bin/env bash
# Generates the ONNX backend node tests (model.onnx + test_data_set_0/*.pb) into a cache dir.
#
# Usage: scripts/gen_node_tests.sh [OUT]   (default: <repo>/.cache/onnx-node-tests)
# Writes OUT/node/<test>/..., OUT/manifest.json (ops and I/O kinds per test, from
# scripts/node_test_manifest.py) and OUT/.complete. Skips the work when OUT/.complete exists.
# Generation happens in a temporary sibling directory that is renamed into place only when
# complete, so an interrupted run is never mistaken for a finished one.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/.cache/onnx-node-tests}"
py=/usr/bin/python3  # Debian's interpreter: the one with python3-onnx and numpy

parent="$(dirname "$out")"
mkdir -p "$parent"
# Serialize concurrent runs (e.g. two CTest fixtures) on a lock next to the output.
exec 9>"$out.lock"
flock 9

if [[ -f $out/.complete ]]; then
  if [[ ! -f $out/manifest.json ]]; then
    "$py" "$repo/scripts/node_test_manifest.py" "$out" >/dev/null
  fi
  echo "gen_node_tests: $out already complete ($(cat "$out/.complete") node tests)"
  exit 0
fi

if ! "$py" -c 'import onnx, numpy' 2>/dev/null; then
  echo "gen_node_tests: $py cannot import onnx and numpy; install python3-onnx python3-numpy (scripts/setup.sh)" >&2
  exit 1
fi

tmp="$(mktemp -d "$parent/.onnx-node-tests.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

log="$tmp.log"
# numpy >= 1.24 removed the aliases onnx 1.12's test generators still use.
if ! "$py" - "$tmp" >"$log" 2>&1 <<'EOF'; then
import sys
import numpy as np
np.float = float; np.int = int; np.bool = bool; np.object = object
out = sys.argv[1]
sys.argv = ['x', 'generate-data', '-o', out]
from onnx.backend.test import cmd_tools
cmd_tools.main()
EOF
  tail -n 30 "$log" >&2
  echo "gen_node_tests: generator failed (log: $log)" >&2
  exit 1
fi
rm -f "$log"

count=0
for d in "$tmp"/node/*/; do
  if [[ -f $d/model.onnx && -d $d/test_data_set_0 ]]; then
    count=$((count + 1))
  fi
done
if ((count < 900)); then
  echo "gen_node_tests: only $count complete node tests generated (expected about 922)" >&2
  exit 1
fi
"$py" "$repo/scripts/node_test_manifest.py" "$tmp" >/dev/null
echo "$count" >"$tmp/.complete"

# Replace any stale, incomplete output, then move the finished tree into place.
if [[ -e $out ]]; then
  rm -rf "$out"
fi
mv "$tmp" "$out"
trap - EXIT
echo "gen_node_tests: $count node tests in $out"
