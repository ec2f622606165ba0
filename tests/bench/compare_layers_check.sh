#!/usr/bin/env bash
# bench/compare_layers.py on the bundled CNN: it runs both profilers, every kiln step gets a row,
# every ORT node but layout reorders and the Flatten kiln folds away is charged to a step, and
# the JSON carries both plain medians. Usage: compare_layers_check.sh KILN
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/bench/compare_layers.py" "$root/models/shapes_cnn.onnx" --kiln "$1" \
  --iters 3 --json "$work/layers.json" >"$work/table.txt"
/usr/bin/python3 - "$work/layers.json" "$root/models/shapes_cnn.onnx" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
steps = r["steps"]
assert steps and all(s["kiln_ms"] >= 0 and s["nodes"] for s in steps), steps
assert sum(1 for s in steps if s["ort_nodes"]) >= len(steps) - 1, steps  # ORT ran them too
left = [u["op"] for u in r["ort_unmatched"]]
assert all(op in ("ReorderInput", "ReorderOutput", "Flatten") for op in left), left
assert r["kiln_median_ms"] > 0 and r["ort_median_ms"] > 0, r
print(f"ok: {len(steps)} kiln steps, ORT nodes charged to {sum(1 for s in steps if s['ort_nodes'])}")
PY
tail -n 1 "$work/table.txt"
