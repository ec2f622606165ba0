#!/usr/bin/env bash
# --memory-pool: buffers across several memories. The bundled model compiled with two pools runs
# on caller memory for each (tests/memory/pools_caller.c) and through kiln run, bit-identical to
# one arena; the manifest records each pool's use within its capacity; pools too small, or a
# malformed flag, give one clear line and exit 1.
# Usage: tests/memory/check_pools.sh KILN
set -euo pipefail
kiln="$(realpath "$1")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d /tmp/kiln-pools.XXXXXX)"
trap 'rm -rf "$work"' EXIT
model="$repo/models/shapes_cnn.onnx"
# One thread: the optimized convs' packing scratch is per thread (64.5 KiB here).
"$kiln" compile "$model" -o "$work/one" --name m --threads 1 >/dev/null
"$kiln" compile "$model" -o "$work/two" --name m --threads 1 --memory-pool fast:16K \
  --memory-pool slow:128K >/dev/null
/usr/bin/python3 - "$work/two/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
pools = m["memory_pools"]
assert [p["name"] for p in pools] == ["fast", "slow"], pools
assert all(0 < p["used_bytes"] <= p["capacity_bytes"] for p in pools), pools
assert m["arena_bytes"] == pools[0]["used_bytes"], m["arena_bytes"]
print("ok: manifest pools", pools)
PY
cc -std=c11 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I"$work/two" "$repo/tests/memory/pools_caller.c" "$work/two/libm.a" -lstdc++ -lm \
  -o "$work/pools_caller"
"$work/pools_caller"
"$kiln" run "$work/one" -i "$repo/models/example_triangle.npy" -o "$work/r1"
"$kiln" run "$model" --threads 1 --memory-pool fast:16K --memory-pool slow:128K --cache "$work/cache" \
  -i "$repo/models/example_triangle.npy" -o "$work/r2"
cmp "$work/r1/logits.npy" "$work/r2/logits.npy"
echo "ok: kiln run with pools is bit-identical to one arena"
fails=0
for flags in "--memory-pool fast:8K --memory-pool slow:16K" "--memory-pool nosize" \
  "--memory-pool a:0" "--memory-pool a:1K --memory-pool a:2K" "--memory-pool a:12Q"; do
  rc=0
  # shellcheck disable=SC2086
  "$kiln" compile "$model" -o "$work/bad" $flags 2>"$work/err" >/dev/null || rc=$?
  if [[ $rc -ne 1 || $(wc -l <"$work/err") -ne 1 ]]; then
    echo "FAIL: '$flags' gave exit $rc: $(cat "$work/err")"
    fails=$((fails + 1))
  else
    echo "ok: '$flags': $(cat "$work/err")"
  fi
done
grep -q "more bytes are needed" <(
  "$kiln" compile "$model" -o "$work/bad" --memory-pool fast:8K --memory-pool slow:16K 2>&1 || true)
((fails == 0))
echo "1 passed, 0 failed"
