#!/usr/bin/env bash
# The manifest's arena_bytes is all the intermediate memory a run touches: compile MODEL, build
# its generated code and tests/memory/guard_page.c with AddressSanitizer + UBSan, and run it on a
# caller arena of exactly arena_bytes that ends at a PROT_NONE page.
# Usage: tests/memory/check_arena_bound.sh KILN MODEL [kiln compile flags...]
set -euo pipefail
kiln="$(realpath "$1")"
model="$(realpath "$2")"
shift 2
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d /tmp/kiln-arena-bound.XXXXXX)"
trap 'rm -rf "$work"' EXIT
"$kiln" compile "$model" -o "$work/m" --name m --no-build "$@" >/dev/null
cd "$work/m"
# -O0: ASan checks every load and store at any level (the guard page catches the rest), and
# the whole check is about twice as quick as at -O1, the build's time not made up by the slower
# run (session 39, this script end to end: MobileNetV2 24 -> 10 s, PP-OCRv4 det 49 -> 23,
# ResNet-50 57 -> 31, BERT 35 -> 24; at -O2 MobileNetV2 took 90 s).
san=(-fsanitize=address,undefined -fno-sanitize-recover=all -O0)
# The target's flags, as the manifest lists them (-march=..., -pthread for the thread pool).
read -r -a cxx_flags <<<"$(/usr/bin/python3 -c 'import json; print(" ".join(json.load(open("manifest.json"))["cxx_flags"]))')"
objs=()
for src in model.cc $(ls weights.S 2>/dev/null); do
  flags=("${cxx_flags[@]}")
  [[ $src == *.S ]] && flags=()
  c++ "${flags[@]}" "${san[@]}" -I. -c "$src" -o "$work/$(basename "$src").o"
  objs+=("$work/$(basename "$src").o")
done
cc -std=c11 "${san[@]}" -I. -c "$repo/tests/memory/guard_page.c" -o "$work/guard_page.o"
c++ "${san[@]}" -pthread "$work/guard_page.o" "${objs[@]}" -o "$work/guard_page"
ASAN_OPTIONS=detect_leaks=1 "$work/guard_page"
