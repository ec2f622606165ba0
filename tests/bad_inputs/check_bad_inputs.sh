#!/usr/bin/env bash
# Runs `kiln inspect` on every hostile model and checks that each is rejected cleanly.
#
# Usage: tests/bad_inputs/check_bad_inputs.sh KILN CASES_DIR
# CASES_DIR is written by tests/bad_inputs/gen_bad_inputs.py. For every CASES_DIR/*.onnx:
# exit status exactly 1 (so no signal and no timeout), exactly one non-empty line on stderr
# with no control characters, done within 10 s, and nothing written into the working directory
# or the cases directory.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 KILN CASES_DIR" >&2
  exit 2
fi
kiln="$(realpath "$1")"
cases="$(realpath "$2")"
limit_s=10
shopt -s nullglob
models=("$cases"/*.onnx)
if ((${#models[@]} == 0)); then
  echo "check_bad_inputs: no cases in $cases; run tests/bad_inputs/gen_bad_inputs.py" >&2
  exit 2
fi

scratch="$(mktemp -d /tmp/kiln-bad-inputs.XXXXXX)"
trap 'rm -rf "$scratch"' EXIT
before="$(find "$cases" -mindepth 1 | sort)"
failed=0
for model in "${models[@]}"; do
  name="$(basename "$model")"
  work="$scratch/cwd-${name%.onnx}"
  mkdir "$work"
  start=$(date +%s%N)
  rc=0
  (cd "$work" && exec timeout -s KILL $((limit_s + 5)) "$kiln" inspect "$model") \
    >"$scratch/out" 2>"$scratch/err" || rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))

  problems=()
  if ((rc != 1)); then
    if ((rc > 128)); then
      problems+=("killed by signal $((rc - 128)) (exit $rc)")
    else
      problems+=("exit status $rc, expected 1")
    fi
  fi
  if ((ms > limit_s * 1000)); then
    problems+=("took ${ms} ms (limit ${limit_s} s)")
  fi
  lines=$(wc -l <"$scratch/err")
  bytes=$(wc -c <"$scratch/err")
  if [[ $lines -ne 1 || $(tail -c 1 "$scratch/err" | od -An -c | tr -d ' ') != '\n' ]]; then
    problems+=("stderr has $lines newline-terminated lines ($bytes bytes), expected exactly 1")
  elif [[ -z $(tr -d '[:space:]' <"$scratch/err") ]]; then
    problems+=("stderr line is empty")
  fi
  # Control characters other than tab and the final newline (names must be escaped).
  ctrl=$(LC_ALL=C tr -d '\t\n\040-\176\200-\377' <"$scratch/err" | wc -c)
  if ((ctrl > 0)); then
    problems+=("stderr contains $ctrl unescaped control characters")
  fi
  if [[ -n $(find "$work" -mindepth 1) ]]; then
    problems+=("wrote into the working directory: $(find "$work" -mindepth 1 -printf "%f ")")
  fi

  msg="$(head -n 1 "$scratch/err" | tr -d '\n' | LC_ALL=C tr '\000-\037\177' '?')"
  if ((${#problems[@]} == 0)); then
    printf 'ok    %-28s %5d ms  %s\n' "$name" "$ms" "$msg"
  else
    failed=$((failed + 1))
    printf 'FAIL  %-28s %5d ms  %s\n' "$name" "$ms" "$msg"
    for p in "${problems[@]}"; do printf '        - %s\n' "$p"; done
  fi
done

after="$(find "$cases" -mindepth 1 | sort)"
if [[ $before != "$after" ]]; then
  echo "FAIL  kiln wrote into the cases directory: $(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')"
  failed=$((failed + 1))
fi
echo "bad-inputs: $((${#models[@]} - failed)) passed, $failed failed"
((failed == 0))
