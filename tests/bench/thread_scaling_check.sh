#!/usr/bin/env bash
# bench/thread_scaling.py on the bundled CNN: one compile, profiled runs at 1 and 2 threads; every
# step gets a row with both times, a speedup and the time lost against perfect scaling, the
# kernels' sums add up to the totals, and bad arguments are one-line errors with exit 1.
# Usage: thread_scaling_check.sh KILN
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
script="$root/bench/thread_scaling.py"
KILN_CXXFLAGS=-O1 /usr/bin/python3 "$script" "$root/models/shapes_cnn.onnx" --kiln "$1" \
  --rounds 2 --iters 3 --json "$work/scaling.json" >"$work/table.txt"
tail -n 1 "$work/table.txt"
/usr/bin/python3 - "$work/scaling.json" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
steps = r["steps"]
assert r["threads"] == 2 and steps, r
for s in steps:
    assert s["us_1"] > 0 and s["us_2"] > 0 and s["kernel"] and s["node"], s
    assert math.isclose(s["speedup"], s["us_1"] / s["us_2"], rel_tol=1e-9), s
    assert math.isclose(s["lost_us"], s["us_2"] - s["us_1"] / 2, rel_tol=1e-9, abs_tol=1e-9), s
    assert 0 <= s["idle_pct"] <= 100, s
assert math.isclose(r["total_us_1"], sum(s["us_1"] for s in steps), rel_tol=1e-9), r
k = r["by_kernel"]
assert sum(v["steps"] for v in k.values()) == len(steps), k
assert math.isclose(sum(v["us_2"] for v in k.values()), r["total_us_2"], rel_tol=1e-9), k
print(f"ok: {len(steps)} steps, {len(k)} kernels")
PY
for bad in "--threads 1" "--rounds 0"; do
  if /usr/bin/python3 "$script" "$root/models/shapes_cnn.onnx" --kiln "$1" $bad \
    >"$work/bad.txt" 2>&1; then
    echo "FAIL: $bad was accepted"; exit 1
  fi
  [[ $(wc -l <"$work/bad.txt") -eq 1 ]] || { echo "FAIL: $bad:"; cat "$work/bad.txt"; exit 1; }
done
if /usr/bin/python3 "$script" "$work/missing.onnx" --kiln "$1" >"$work/bad.txt" 2>&1; then
  echo "FAIL: a missing model was accepted"; exit 1
fi
echo "ok: bad arguments are one-line errors"
