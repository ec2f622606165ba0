#!/usr/bin/env bash
# Profiling hooks: without --profile the generated code has no timing code and profile_count
# is 0; `kiln compile --profile` times every kernel call; `kiln bench --profile FILE` writes a
# Chrome/Perfetto trace with one complete event per manifest op (op, kernel, source nodes,
# FLOPs, bytes); `kiln bench --profile` prints the top ops with their % of the measured peak.
# And `kiln bench A --versus B`, the A/B of two builds of a model (profiled and plain here).
set -euo pipefail
kiln="$(realpath "$1")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model="$repo/models/shapes_cnn.onnx"
"$kiln" compile "$model" -o "$work/plain" >/dev/null
if grep -q "now_ns\|prof_ns" "$work/plain/model.cc"; then
  echo "FAIL: timing code compiled in without --profile"; exit 1
fi
if "$kiln" bench "$work/plain" --profile 2>"$work/err"; then
  echo "FAIL: bench --profile accepted an artifact built without it"; exit 1
fi
grep -q "not compiled with --profile" "$work/err" || { cat "$work/err"; exit 1; }
"$kiln" compile "$model" -o "$work/prof" --profile >/dev/null
"$kiln" bench "$work/prof" --profile "$work/trace.json" --iters 5 >/dev/null
"$kiln" bench "$model" --profile --iters 5 --cache "$work/cache" >"$work/top.txt"
grep -q "^profile: .* steps, .* ms per run in kernels; peak .* GFLOP/s" "$work/top.txt" ||
  { cat "$work/top.txt"; exit 1; }
/usr/bin/python3 - "$work/prof/manifest.json" "$work/trace.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
trace = json.load(open(sys.argv[2]))
ops, events = manifest["ops"], trace["traceEvents"]
assert manifest["profile"] is True
assert len(events) == len(ops) > 0, (len(events), len(ops))
end = 0.0
for op, ev in zip(ops, events):
    assert ev["ph"] == "X" and ev["name"] == op["op"] and ev["cat"] == op["kernel"], ev
    assert ev["args"]["flops"] == op["flops"] and ev["args"]["bytes"] == op["bytes"] > 0, ev
    assert ev["dur"] >= 0 and ev["ts"] >= end - 1e-3, (ev, end)  # in order, not overlapping
    assert ev["args"]["mean_us"] > 0, ev  # the step's mean over the timed runs
    end = ev["ts"] + ev["dur"]
convs = [op for op in ops if op["op"] in ("Conv", "FusedConv")]
assert convs and all(op["flops"] > 0 for op in convs), convs
print(f"ok: trace of {len(events)} steps matches the manifest ops")
PY
sed -n 1,6p "$work/top.txt"
"$kiln" bench "$work/plain" --versus "$work/prof" --iters 4 --burst 2 --json >"$work/ab.json"
/usr/bin/python3 - "$work/ab.json" "$work/plain" "$work/prof" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["a"]["model"] == sys.argv[2] and j["b"]["model"] == sys.argv[3], j
assert j["a"]["median_ms"] > 0 and j["b"]["median_ms"] > 0, j
r = j["ratio_b_over_a"]
assert 0 < r["q1"] <= r["median"] <= r["q3"], r
assert j["rounds"] == 4 and j["burst"] == 2, j
print(f"ok: --versus B/A {r['median']:.3f}")
PY
if "$kiln" bench "$work/plain" --versus "$work/prof" --profile 2>"$work/err"; then
  echo "FAIL: --versus accepted --profile"; exit 1
fi
grep -q "does not take --profile" "$work/err" || { cat "$work/err"; exit 1; }
