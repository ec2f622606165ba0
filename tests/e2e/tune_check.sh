#!/usr/bin/env bash
# kiln compile --tune (docs/tuning.md): measures the candidates of the tunable ops, records the
# fastest per op signature in the tuning cache, and builds with them; a second --tune finds all
# of them cached and measures nothing; --tuning-cache without --tune uses a cache's choices
# (a choice that is not a candidate is ignored); a corrupt cache is a one-line error (exit 1);
# tuned code computes what untuned code does.
set -euo pipefail
kiln="$(realpath "$1")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
model="$repo/models/shapes_cnn.onnx"
cache="$work/tuning.json"
"$kiln" compile "$model" -o "$work/tuned" --threads 2 --tune --tuning-cache "$cache" \
  >"$work/out1" 2>"$work/err1"
grep -q "^\[tune\] .* op signatures measured (.* builds)" "$work/err1" || { cat "$work/err1"; exit 1; }
[[ ! -e "$work/tuned/.kiln-tune" ]] || { echo "FAIL: the tuner left its builds behind"; exit 1; }
# The second compile: everything cached, no measuring build (its sources are what is
# compared: --no-build).
"$kiln" compile "$model" -o "$work/again" --threads 2 --tune --tuning-cache "$cache" \
  --no-build >/dev/null 2>"$work/err2"
grep -q "are in the tuning cache" "$work/err2" || { cat "$work/err2"; exit 1; }
grep -q "measured" "$work/err2" && { echo "FAIL: a warm cache was measured again"; cat "$work/err2"; exit 1; }
cmp "$work/tuned/model.cc" "$work/again/model.cc" ||
  { echo "FAIL: the cached choices built different code"; exit 1; }
# Cache contents; then a forced choice for every key (its last candidate) and a bogus one.
/usr/bin/python3 - "$cache" "$work/tuned/manifest.json" "$work/forced.json" <<'PY'
import json, sys
cache = json.load(open(sys.argv[1]))
assert cache["format"] == "kiln-tuning-cache" and cache["version"] == 1, cache
(machine,) = cache["machines"]
entries = machine["entries"]
assert machine["cpu"] and machine["kiln_version"] and entries, machine
# The section names the CPU by its cpuid signature too, not by the brand string alone.
assert " family " in machine["cpu"] and " model " in machine["cpu"], machine["cpu"]
ops = [op for op in json.load(open(sys.argv[2]))["ops"] if "tuning" in op]
assert ops, "no tunable op in the manifest"
for op in ops:
    e = entries[op["tuning"]["key"]]
    assert op["tuning"]["choice"] == e["choice"], (op, e)
    assert e["choice"] in e["us"] and len(e["us"]) > 1, e
    assert e["us"][e["choice"]] == min(e["us"].values()), e
    assert op["tuning"]["key"].startswith(("x86-64-v4 t2 ", "x86-64-v3 t2 ", "x86-64 t2 ", "generic t2 ")), op
keys = sorted(entries)
forced = {k: {"choice": sorted(entries[k]["us"])[-1]} for k in keys}
forced[keys[0]] = {"choice": "no such kernel"}
machine["entries"] = forced
json.dump(cache, open(sys.argv[3], "w"))
print(f"ok: {len(ops)} tuned steps, {len(keys)} cached signatures")
PY
"$kiln" compile "$model" -o "$work/forced" --threads 2 --tuning-cache "$work/forced.json" >/dev/null
/usr/bin/python3 - "$work/forced.json" "$work/forced/manifest.json" <<'PY'
import json, sys
entries = json.load(open(sys.argv[1]))["machines"][0]["entries"]
first = sorted(entries)[0]
for op in json.load(open(sys.argv[2]))["ops"]:
    if "tuning" not in op:
        continue
    key, choice = op["tuning"]["key"], op["tuning"]["choice"]
    if key == first:
        assert choice != "no such kernel", op  # not a candidate: the cost model's
    else:
        assert choice == entries[key]["choice"], (op, entries[key])
print("ok: forced choices honoured, a bogus one ignored")
PY
# Tuned and untuned code agree (all candidates compute the same conv).
"$kiln" compile "$model" -o "$work/plain" --threads 2 >/dev/null
for dir in plain forced tuned; do
  "$kiln" run "$work/$dir" -i "$repo/models/example_triangle.npy" -o "$work/$dir.out" >/dev/null
done
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, pathlib
w = pathlib.Path(sys.argv[1])
def load(d):
    return [np.load(f) for f in sorted((w / d).glob("*.npy"))]
plain = load("plain.out")
assert plain
for d in ("forced.out", "tuned.out"):
    for a, b in zip(plain, load(d)):
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-4, atol=1e-5), (d, abs(a - b).max())
print("ok: tuned outputs match")
PY
# A corrupt cache: one line, exit 1, for compile and run.
head -c 40 "$cache" >"$work/truncated.json"
for cmd in "compile $model -o $work/bad --tuning-cache $work/truncated.json" \
  "compile $model -o $work/bad --tune --tuning-cache $work/truncated.json"; do
  set +e
  $kiln $cmd >/dev/null 2>"$work/err"
  rc=$?
  set -e
  [[ $rc == 1 && $(wc -l <"$work/err") == 1 ]] && grep -q "tuning cache .*: not JSON" "$work/err" ||
    { echo "FAIL ($rc): kiln $cmd"; cat "$work/err"; exit 1; }
done
echo '{"format": "kiln-tuning-cache", "version": 1, "machines": [{"cpu": 3}]}' >"$work/wrong.json"
if "$kiln" compile "$model" -o "$work/bad" --tuning-cache "$work/wrong.json" 2>"$work/err" >/dev/null; then
  echo "FAIL: a malformed cache was accepted"; exit 1
fi
grep -q "lacks" "$work/err" || { cat "$work/err"; exit 1; }
echo "ok: corrupt caches rejected"
