#!/usr/bin/env bash
# Targets and the create-time CPU check: the bundled model compiled for x86-64-v4, x86-64-v3,
# x86-64 and generic gives the right answer here (a target this host lacks, such as x86-64-v4
# on an AVX2-only machine, must refuse at create instead); under qemu-x86_64 emulating a CPU
# without AVX (Nehalem), the AVX-512 and AVX2 builds refuse at create with KILN_ERR_CPU ("this
# CPU lacks an instruction set ...") instead of dying of SIGILL, and the x86-64 and generic
# builds still run. Also: every target's model.cc compiles warning-free with its own flags.
set -euo pipefail
kiln="$(realpath "$1")"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
qemu="$(command -v qemu-x86_64 || true)"
for target in x86-64-v4 x86-64-v3 x86-64 generic; do
  out="$work/$target"
  "$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$out" --name shapes --target "$target" \
    --threads 2 >/dev/null
  grep -q "\"target\": \"$target\"" "$out/manifest.json" || { echo "FAIL: manifest target"; exit 1; }
  flags=()
  case $target in
    x86-64-v4) flags=(-march=x86-64-v4) ;;
    x86-64-v3) flags=(-march=x86-64-v3) ;;
    x86-64) flags=(-march=x86-64) ;;
    generic) flags=(-DKILN_GENERIC) ;;
  esac
  for cxx in g++ clang++; do
    command -v "$cxx" >/dev/null || continue
    "$cxx" -std=c++17 -Wall -Wextra -Werror "${flags[@]}" -I"$out" -c "$out/model.cc" -o /dev/null
  done
  cc -std=c11 -Wall -Wextra -Werror -I"$out" "$repo/examples/classify_shapes.c" \
    "$out/libshapes.a" -lstdc++ -lm -lpthread -o "$work/classify-$target"
  # A host without the target's ISA (an AVX2-only machine for x86-64-v4) must refuse at
  # create, on real hardware as under qemu below.
  host_runs=1
  case $target in
    x86-64-v4) needs=(avx512f avx512bw avx512vl avx512dq avx512cd avx2 fma) ;;
    x86-64-v3) needs=(avx2 fma bmi2 movbe) ;;
    *) needs=() ;;
  esac
  for flag in "${needs[@]}"; do
    grep -qw "$flag" /proc/cpuinfo || host_runs=0
  done
  set +e
  answer="$("$work/classify-$target" "$repo/models/example_triangle.npy" \
    "$repo/models/shapes_labels.txt" 2>&1)"
  rc=$?
  set -e
  if [[ $host_runs == 1 ]]; then
    [[ $rc == 0 ]] && grep -q "triangle (p = 0.99" <<<"$answer" ||
      { echo "FAIL: $target: exit $rc: $answer"; exit 1; }
    echo "ok: $target runs here: $answer"
  else
    if [[ $rc != 1 ]] || ! grep -q "lacks an instruction set" <<<"$answer"; then
      echo "FAIL: $target on this CPU, which lacks it: exit $rc: $answer"; exit 1
    fi
    echo "ok: $target refused on this CPU, which lacks it: $answer"
  fi
  [[ -n $qemu ]] || continue
  set +e
  emulated="$("$qemu" -cpu Nehalem "$work/classify-$target" "$repo/models/example_triangle.npy" \
    "$repo/models/shapes_labels.txt" 2>&1)"
  rc=$?
  set -e
  case $target in
    x86-64-v4 | x86-64-v3)
      if [[ $rc != 1 ]] || ! grep -q "lacks an instruction set" <<<"$emulated"; then
        echo "FAIL: $target on a CPU without AVX: exit $rc: $emulated"; exit 1
      fi
      echo "ok: $target refused on a CPU without AVX: $emulated" ;;
    *)
      [[ $rc == 0 ]] && grep -q "triangle (p = 0.99" <<<"$emulated" ||
        { echo "FAIL: $target under qemu: exit $rc: $emulated"; exit 1; }
      echo "ok: $target runs on a CPU without AVX" ;;
  esac
done
[[ -n $qemu ]] || echo "note: qemu-x86_64 not installed (Debian qemu-user); the emulated-CPU checks were skipped"
# The named targets never ask for the Zen 4 form of the AVX-512 GEMM's 17-24-column tiles
# (KILN_CPU_YMM_TAIL, lib/target's splitZmmFma); --target host does exactly on an AMD family 25
# CPU with AVX-512 (Zen 4, which runs a 512-bit FMA as two halves), and the library it builds
# gives the same answer.
grep -q "KILN_CPU_YMM_TAIL" "$work/x86-64-v4/model.cc" &&
  { echo "FAIL: x86-64-v4 asked for KILN_CPU_YMM_TAIL"; exit 1; }
"$kiln" compile "$repo/models/shapes_cnn.onnx" -o "$work/host" --name shapes >/dev/null
zen4=0
if grep -q "^vendor_id.*AuthenticAMD" /proc/cpuinfo && grep -qw avx512f /proc/cpuinfo &&
  grep -q "^cpu family[[:space:]]*: 25$" /proc/cpuinfo; then
  zen4=1
fi
if grep -q "^#define KILN_CPU_YMM_TAIL 1$" "$work/host/model.cc"; then got=1; else got=0; fi
[[ $got == "$zen4" ]] ||
  { echo "FAIL: --target host: KILN_CPU_YMM_TAIL $got on a CPU where Zen 4 is $zen4"; exit 1; }
cc -std=c11 -I"$work/host" "$repo/examples/classify_shapes.c" "$work/host/libshapes.a" -lstdc++ \
  -lm -lpthread -o "$work/classify-host"
answer="$("$work/classify-host" "$repo/models/example_triangle.npy" "$repo/models/shapes_labels.txt")"
grep -q "triangle (p = 0.99" <<<"$answer" || { echo "FAIL: host: $answer"; exit 1; }
echo "ok: host (KILN_CPU_YMM_TAIL $got) runs here: $answer"
