#!/usr/bin/env bash
# End-to-end artifact test: compile the bundled model twice (different folders and working
# directories) and require byte-identical artifacts; build the folder with its own
# CMakeLists.txt alone, link it into the C example, check the answer; kiln run twice gives
# identical output bytes.
set -euo pipefail
kiln="$(realpath "$1")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"
(cd "$work/a" && "$kiln" compile "$repo/models/shapes_cnn.onnx" -o out --name shapes >/dev/null)
# The second with --no-build: every file kiln writes is compared; the libraries are the C++
# compiler's work from those files (CI time).
(cd "$work" && "$kiln" compile "$repo/models/shapes_cnn.onnx" -o b/deeper/out --name shapes \
  --no-build >/dev/null)
libs=(-x "lib*.so" -x "lib*.a")
if ! diff -r "${libs[@]}" "$work/a/out" "$work/b/deeper/out" >/dev/null; then
  echo "FAIL: two compiles of the same model differ"
  diff -rq "${libs[@]}" "$work/a/out" "$work/b/deeper/out"
  exit 1
fi
echo "ok: compiles are byte-identical"
# The optimization report: JSON with per-pass records (each with its op histogram) and fusion
# groups naming source nodes; HTML with the per-pass histogram table.
"$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/rep" --no-build \
  --report "$work/report.json" >/dev/null
"$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/rep" --no-build \
  --report "$work/report.html" >/dev/null
/usr/bin/python3 - "$work/report.json" "$work/report.html" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["nodes_after"] < r["nodes_before"], r
assert [p["pass"] for p in r["passes"]][:2] == ["canonicalize", "fold-constants"], r["passes"]
assert all("ops_after" in p for p in r["passes"])
assert r["passes"][-1]["ops_after"] == r["ops_after"], (r["passes"][-1], r["ops_after"])
fused = [g for g in r["fusion_groups"] if len(g["sources"]) >= 2]
assert fused and all(isinstance(s, str) and s for g in fused for s in g["sources"]), fused
html = open(sys.argv[2], encoding="utf-8").read()
for part in ("<h2>Passes</h2>", "<h2>Fusion groups</h2>", "<h2>Op histogram per pass</h2>",
             "<th>fuse-epilogue</th>"):
    assert part in html, part
PY
echo "ok: --report writes JSON and HTML (per-pass op histograms, fusion groups)"
# The artifact builds with only its own files and a C++17 compiler.
cp -r "$work/a/out" "$work/standalone"
rm -f "$work/standalone"/lib*.so "$work/standalone"/lib*.a
# A Debug configuration (-g, no -O of its own) still compiles model.cc at kiln's -O3: the
# generated options come after CMake's, and kernels built without optimization run ~25x slower.
# (The command list is read whole first: a reader that stops early on a pipe would end ninja
# with SIGPIPE, which pipefail turns into a failure.)
cmake -S "$work/standalone" -B "$work/standalone/build" -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
commands="$(ninja -C "$work/standalone/build" -t commands)"
model_cmd="$(awk '/-c .*model\.cc/ { print; exit }' <<<"$commands")"
last_o="$(grep -o -e ' -O[0-9s]' <<<"$model_cmd" | tail -n 1 || true)"
[[ $last_o == " -O3" ]] || { echo "FAIL: model.cc not built at -O3: $model_cmd"; exit 1; }
ninja -C "$work/standalone/build" >/dev/null
cc -std=c11 -Wall -Wextra -Werror -I"$work/standalone" "$repo/examples/classify_shapes.c" \
  "$work/standalone/build/libshapes.a" -lstdc++ -lm -o "$work/classify"
out="$("$work/classify" "$repo/models/example_triangle.npy" "$repo/models/shapes_labels.txt")"
echo "$out"
grep -q "triangle (p = 0.99" <<<"$out" || { echo "FAIL: wrong classification"; exit 1; }
# The generated code compiles warning-free with -Wall -Wextra -Werror under g++ and clang++.
# (with the flags the manifest lists for the artifact's target)
read -r -a cxx_flags <<<"$(/usr/bin/python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["cxx_flags"]))' "$work/a/out/manifest.json")"
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || continue
  "$cxx" "${cxx_flags[@]}" -Wall -Wextra -Werror -I"$work/a/out" -c "$work/a/out/model.cc" -o /dev/null
done
echo "ok: model.cc is warning-free"
# run twice: bit-identical outputs; logits match the torch reference within 1e-4.
"$kiln" run "$repo/models/shapes_cnn.onnx" -i image="$repo/models/example_triangle.npy" \
  -o "$work/r1" --cache "$work/cache" 
"$kiln" run "$work/a/out" -i "$repo/models/example_triangle.pb" -o "$work/r2"
cmp "$work/r1/logits.npy" "$work/r2/logits.npy"
/usr/bin/python3 - "$work/r1/logits.npy" <<'PY'
import sys, numpy as np
got = np.load(sys.argv[1])
ref = np.array([[-24.6637, -32.9412, 4.0611, 15.0310, 10.3404]], dtype=np.float32)
err = float(np.abs(got - ref).max())
assert err < 1e-3, (got, err)
print("ok: kiln run matches the torch logits (max abs err %.2e)" % err)
PY
# --weights external: a mapped weights file gives the same bytes; a file made for another model
# (same size, another SHA-256 in its header) is refused at create.
"$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/ext" --name shapes --weights external >/dev/null
[[ ! -e $work/ext/weights.bin && -f $work/ext/shapes.weights ]] || { echo "FAIL: no external weights file"; exit 1; }
"$kiln" run "$work/ext" -i "$repo/models/example_triangle.pb" -o "$work/r3"
cmp "$work/r1/logits.npy" "$work/r3/logits.npy"
/usr/bin/python3 - "$work/ext/shapes.weights" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[20] ^= 0xFF  # the size still matches; the recorded SHA-256 does not
open(sys.argv[1], "wb").write(data)
PY
if "$kiln" run "$work/ext" -i "$repo/models/example_triangle.pb" -o "$work/r4" 2>"$work/err"; then
  echo "FAIL: a weights file with other contents was accepted"; exit 1
fi
grep -q "weights file" "$work/err" || { echo "FAIL: unclear error: $(cat "$work/err")"; exit 1; }
echo "ok: external weights run bit-identically; a mismatched weights file is refused"
# A model with a thread pool has each pool thread read its weights at create (every create
# path calls warm_pool_threads; none without a pool), and runs as before.
for w in embedded external; do
  "$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/warm-$w" --threads 2 --weights "$w" \
    >/dev/null
done
"$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/warm-1" --threads 1 --no-build >/dev/null
calls() { grep -c "warm_pool_threads(\*out);" "$1/model.cc" || true; }
[[ $(calls "$work/warm-embedded") == 2 && $(calls "$work/warm-external") == 1 &&
  $(calls "$work/warm-1") == 0 ]] ||
  { echo "FAIL: warm_pool_threads calls: $(calls "$work/warm-embedded") embedded," \
    "$(calls "$work/warm-external") external, $(calls "$work/warm-1") at 1 thread"; exit 1; }
for w in embedded external; do
  "$kiln" run "$work/warm-$w" -i "$repo/models/example_triangle.pb" -o "$work/warm-out-$w"
  cmp "$work/r1/logits.npy" "$work/warm-out-$w/logits.npy"
done
echo "ok: pool threads read the weights at create (2 threads); the outputs are unchanged"
# Two models (distinct --name prefixes) in one program; two contexts running concurrently.
for m in m1 m2; do
  "$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/$m" --name "$m" >/dev/null
done
cc -std=c11 -Wall -Wextra -Werror -pthread -I"$work" -I"$work/m1" \
  "$repo/tests/e2e/two_contexts.c" "$work/m1/libm1.a" "$work/m2/libm2.a" -lstdc++ -lm \
  -o "$work/two_contexts"
"$work/two_contexts"
# The C API under misuse: documented status codes, no crash (built with ASan + UBSan).
"$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/api" --name m >/dev/null
cc -std=c11 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I"$work/api" "$repo/tests/e2e/api_robustness.c" "$work/api/libm.a" -lstdc++ -lm \
  -o "$work/api_robustness"
"$work/api_robustness"
# Data-dependent output sizes: the signature gives the bound, the C API the run-time shape
# (docs/dynamic-shapes.md); kiln run writes outputs at their run-time shape.
/usr/bin/python3 "$repo/tests/e2e/make_dynamic_model.py" "$work"
"$kiln" compile "$work/dyn.onnx" -o "$work/dyn" --name dyn >/dev/null
cc -std=c11 -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all \
  -I"$work/dyn" "$repo/tests/e2e/dynamic_shapes.c" "$work/dyn/libdyn.a" -lstdc++ -lm \
  -o "$work/dynamic_shapes"
"$work/dynamic_shapes"
/usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.array([0, 3, 0, 3, 1, 0], np.float32))" "$work/x.npy"
"$kiln" run "$work/dyn" -i x="$work/x.npy" -o "$work/dyn_out"
/usr/bin/python3 - "$work/dyn_out" <<'PY'
import sys, numpy as np
d = sys.argv[1]
assert np.load(d + "/nz.npy").tolist() == [[1, 3, 4]], np.load(d + "/nz.npy")
assert np.load(d + "/y.npy").tolist() == [0.0, 1.0, 3.0]
assert np.load(d + "/counts.npy").tolist() == [3, 1, 2]
print("ok: kiln run writes data-dependent outputs at their run-time shape")
PY
# Range on run-time inputs: refused without a bound, bounded by --max-dim (a count above the
# bound is bad data); a data-dependent value feeding another op is refused, naming the node.
if "$kiln" compile "$work/range.onnx" -o "$work/r0" 2>"$work/err"; then
  echo "FAIL: Range without a bound compiled"; exit 1
fi
grep -q "node 'range' (Range): .*--max-dim 'r=N'" "$work/err" || { echo "FAIL: $(cat "$work/err")"; exit 1; }
"$kiln" compile "$work/range.onnx" -o "$work/r1" --max-dim r=10 >/dev/null
/usr/bin/python3 -c "
import numpy as np, sys
for n, v in [('s', 0), ('l', 5), ('l2', 20), ('d', 1)]: np.save(sys.argv[1] + '/' + n + '.npy', np.array(v, np.float32))" "$work"
"$kiln" run "$work/r1" -i "$work/s.npy" -i "$work/l.npy" -i "$work/d.npy" -o "$work/r1_out"
/usr/bin/python3 -c "import numpy as np, sys; assert np.load(sys.argv[1]).tolist() == [0, 1, 2, 3, 4]" "$work/r1_out/r.npy"
if "$kiln" run "$work/r1" -i "$work/s.npy" -i "$work/l2.npy" -i "$work/d.npy" -o "$work/r2_out" 2>"$work/err"; then
  echo "FAIL: a Range count above --max-dim ran"; exit 1
fi
grep -q "input data out of range" "$work/err" || { echo "FAIL: $(cat "$work/err")"; exit 1; }
# A declared output size fixes the Range count through Mul and Add; other counts are bad data.
"$kiln" compile "$work/range_declared.onnx" -o "$work/r3" >/dev/null
"$kiln" run "$work/r3" -i "$work/s.npy" -i "$work/l.npy" -i "$work/d.npy" -o "$work/r3_out"
/usr/bin/python3 -c "import numpy as np, sys; assert np.load(sys.argv[1]).tolist() == [0, 3, 6, 9, 12]" "$work/r3_out/y.npy"
if "$kiln" run "$work/r3" -i "$work/s.npy" -i "$work/l2.npy" -i "$work/d.npy" -o "$work/r4_out" 2>"$work/err"; then
  echo "FAIL: a Range count other than the declared size ran"; exit 1
fi
grep -q "input data out of range" "$work/err" || { echo "FAIL: $(cat "$work/err")"; exit 1; }
if "$kiln" compile "$work/consumer.onnx" -o "$work/c0" 2>"$work/err"; then
  echo "FAIL: a consumer of a data-dependent size compiled"; exit 1
fi
grep -q "node 'cast' (Cast): input 'nz' has a data-dependent size" "$work/err" || { echo "FAIL: $(cat "$work/err")"; exit 1; }
echo "ok: --max-dim bounds Range; consumers of data-dependent sizes are refused"
echo "1 passed, 0 failed"
