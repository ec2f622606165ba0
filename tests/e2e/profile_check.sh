#!/usr/bin/env bash
# Profiling hooks: without --profile the generated code has no timing code and profile_count
# is 0; `kiln compile --profile` times every kernel call; `kiln bench --profile FILE` writes a
# Chrome/Perfetto trace with one complete event per manifest op (op, kernel, source nodes,
# FLOPs, bytes); `kiln bench --profile` prints the top ops with their % of the measured peak.
# And `kiln bench A --versus B`, the A/B of two builds of a model (profiled and plain here), and
# with --profile its per-step table. And the threads' idle time per step.
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
# Idle thread time per step ({P}_profile_idle): none at 1 thread; at 2, at most the worker's
# whole step, and all of it where a step runs on the caller alone (the classifier's gemv, one
# work unit).
for t in 1 2; do
  "$kiln" compile "$model" -o "$work/prof_t$t" --profile --threads "$t" >/dev/null
  "$kiln" bench "$work/prof_t$t" --profile "$work/idle_t$t.json" --iters 5 >/dev/null
  "$kiln" bench "$work/prof_t$t" --profile --iters 5 >"$work/top_t$t.txt"
done
grep -q "^threads idle .* ms per run in all, .*% of 2 x the kernels' time" "$work/top_t2.txt" ||
  { cat "$work/top_t2.txt"; exit 1; }
if grep -q "^threads idle" "$work/top_t1.txt"; then cat "$work/top_t1.txt"; exit 1; fi
/usr/bin/python3 - "$work/idle_t1.json" "$work/idle_t2.json" <<'PY'
import json, sys
one = json.load(open(sys.argv[1]))["traceEvents"]
two = json.load(open(sys.argv[2]))["traceEvents"]
assert one and all(e["args"]["idle_us"] == 0 and e["args"]["idle_pct"] == 0 for e in one), one
for e in two:
    a = e["args"]
    # The threads are never idle together but for the pool's hand-offs (a 1 us step: 51%).
    assert a["idle_us"] >= 0 and a["idle_pct"] >= 0, e
    assert a["idle_us"] <= 1.02 * a["mean_us"] + 1.0, e
alone = [e for e in two if "gemv" in e["cat"]]
assert alone and all(abs(e["args"]["idle_pct"] - 50) < 0.01 for e in alone), alone
print(f"ok: idle time of {len(two)} steps at 2 threads")
PY
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
  echo "FAIL: --versus --profile accepted a build without timing hooks"; exit 1
fi
grep -q "not compiled with --profile" "$work/err" || { cat "$work/err"; exit 1; }
if "$kiln" bench "$work/prof" --versus "$work/prof" --profile "$work/x.json" 2>"$work/err"; then
  echo "FAIL: --versus accepted --profile FILE"; exit 1
fi
grep -q "without a FILE" "$work/err" || { cat "$work/err"; exit 1; }
# --versus --profile: the steps of two profiled builds, round by round (the same build twice
# here, a copy: every step pairs up).
cp -r "$work/prof" "$work/prof2"
"$kiln" bench "$work/prof" --versus "$work/prof2" --profile --iters 3 --burst 2 --json \
  >"$work/abs.json"
/usr/bin/python3 - "$work/abs.json" "$work/prof/manifest.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
ops = json.load(open(sys.argv[2]))["ops"]
steps = j["steps"]
assert len(steps) == len(ops) > 0, (len(steps), len(ops))
for st, op in zip(steps, ops):
    assert st["nodes"] == ",".join(op["nodes"]) and st["kernel_a"] == st["kernel_b"] == op["kernel"], st
    assert st["a_us"] >= 0 and st["b_us"] >= 0 and st["ratio_b_over_a"] >= 0, st
assert any(st["a_us"] > 0 and st["ratio_b_over_a"] > 0 for st in steps), steps
print(f"ok: --versus --profile paired {len(steps)} steps")
PY
"$kiln" bench "$work/prof" --versus "$work/prof2" --profile --iters 2 --burst 1 >"$work/abs.txt"
grep -q "^steps: .* us (A) and .* us (B) summed, B/A" "$work/abs.txt" || { cat "$work/abs.txt"; exit 1; }
