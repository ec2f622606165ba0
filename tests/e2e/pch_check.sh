#!/usr/bin/env bash
# kiln run's precompiled header (docs/artifact.md): built once into CACHE/pch for a model whose
# code includes the CPU kernels; the library it builds is byte-identical to one built without
# it (KILN_NO_PCH=1); a corrupt one in the cache neither breaks a build nor changes it; and the
# build really includes it (a header that cannot compile, behind a corrupt .gch, fails it).
# Skipped (77) when c++ is not GCC (clang builds take no precompiled header).
# Usage: pch_check.sh KILN
set -euo pipefail
kiln="$(realpath "$1")"
"${CXX:-c++}" --version | grep -q "Free Software Foundation" || { echo "skip: not GCC"; exit 77; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A small model on the CPU kernels and the thread pool (a fused element-wise chain), quick to
# build at the default -O3. (At -O0 GCC may emit the functions in another order with the
# precompiled header: the same code laid out differently.)
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 1000])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 1000])
nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["s", "x"], ["y"])]
graph = helper.make_graph(nodes, "silu", [x], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), f"{sys.argv[1]}/silu.onnx")
np.save(f"{sys.argv[1]}/x.npy", np.random.default_rng(3).standard_normal((8, 1000)).astype(np.float32))
PY
run() {  # CACHE OUT [env...]: kiln run on it
  local cache=$1 out=$2
  shift 2
  env "$@" "$kiln" run "$work/silu.onnx" -i "$work/x.npy" --threads 2 -o "$out" \
    --cache "$cache" >/dev/null
}
lib() {  # CACHE: the one compiled library in it
  local libs=("$1"/[0-9a-f]*/lib*.so)
  [[ ${#libs[@]} == 1 && -f ${libs[0]} ]] || { echo "FAIL: $1 holds ${#libs[@]} libraries"; exit 1; }
  echo "${libs[0]}"
}
run "$work/c1" "$work/o1"
gchs=("$work"/c1/pch/*/kiln_pch.h.gch)
[[ ${#gchs[@]} == 1 && -f ${gchs[0]} && $(stat -c %s "${gchs[0]}") -gt 1000000 ]] ||
  { echo "FAIL: no precompiled header in the cache"; ls -lR "$work/c1/pch"; exit 1; }
run "$work/c2" "$work/o2" KILN_NO_PCH=1
[[ ! -e $work/c2/pch ]] || { echo "FAIL: KILN_NO_PCH=1 still built one"; exit 1; }
cmp "$(lib "$work/c1")" "$(lib "$work/c2")" ||
  { echo "FAIL: the library differs with the precompiled header"; exit 1; }
diff -r "$work/o1" "$work/o2" >/dev/null || { echo "FAIL: outputs differ"; exit 1; }
echo "ok: precompiled header built; library byte-identical without it"
# A corrupt .gch: GCC ignores it (-Winvalid-pch) and parses the header's text instead.
head -c 4096 /dev/urandom >"${gchs[0]}"
rm -rf "$work"/c1/[0-9a-f]*[0-9a-f]
run "$work/c1" "$work/o3"
cmp "$(lib "$work/c1")" "$(lib "$work/c2")" ||
  { echo "FAIL: a corrupt precompiled header changed the library"; exit 1; }
echo "ok: a corrupt precompiled header is ignored"
# ... so a header text that cannot compile shows the build includes it.
echo '#error kiln_pch.h was included' >"$(dirname "${gchs[0]}")/kiln_pch.h"
rm -rf "$work"/c1/[0-9a-f]*[0-9a-f]
if run "$work/c1" "$work/o4" 2>"$work/err"; then
  echo "FAIL: the build did not include the precompiled header"; exit 1
fi
grep -q "kiln_pch.h was included" "$work"/c1/*.failed/build.log ||
  { echo "FAIL: unexpected build failure:"; cat "$work/err"; exit 1; }
echo "ok: the build includes it"
