#!/usr/bin/env bash
# bench/kernel_ab.py: two versions of the GEMM and depthwise kernels (here both HEAD's, so a local
# change to the kernels cannot fail it) built into one binary and timed in alternation, at 2
# threads with the weights from memory: every shape gets a row with both times and a ratio, the
# outputs agree bit for bit, and bad arguments are one-line errors with exit 1.
# Usage: kernel_ab_check.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
ab="$root/bench/kernel_ab.py"
/usr/bin/python3 "$ab" --base HEAD --b-rev HEAD --shapes smoke 20,33,7,1,r dw:24,9,11,2 \
  dw:40,6,7,1 --rounds 2 --threads 2 \
  --cold-mb 8 --opt 1 >"$work/out.txt"
cat "$work/out.txt"
/usr/bin/python3 - "$work/out.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
rows = [l for l in lines if re.match(r"\d+x\d+x\d+ \([01], [rp]\)", l)]
assert len(rows) == 3, rows  # the smoke preset's two shapes and the one given
dw = [l for l in lines if re.match(r"dw \d+x\d+x\d+ s[12] ", l)]
assert [r.split()[1:3] for r in dw] == [["24x9x11", "s2"], ["40x6x7", "s1"]], dw
for r in rows + dw:
    a_us, a_gf, b_us, b_gf, ratio = (float(x) for x in r.split()[-5:])
    # Times only positive: CTest runs other tests beside this one, so no bound on the ratio.
    assert a_us > 0 and b_us > 0 and a_gf > 0 and b_gf > 0 and ratio > 0, r
assert lines[0].startswith("A: kernels at HEAD; B: kernels at HEAD;"), lines[0]
assert "weights from memory (8 MB of copies each)" in lines[0], lines[0]
# Both versions are HEAD's: the outputs must agree.
assert lines[-1].endswith("outputs bit-identical"), lines[-1]
print("ok:", len(rows), "products and", len(dw), "depthwise convs")
PY
expect_fail() {  # expect_fail PATTERN ARGS...: exit 1 and PATTERN on stderr
  local pattern="$1"
  shift
  if /usr/bin/python3 "$ab" "$@" >"$work/o" 2>"$work/e"; then
    echo "kernel_ab $* succeeded" >&2
    exit 1
  fi
  grep -q "$pattern" "$work/e" || { cat "$work/e" >&2; exit 1; }
}
expect_fail "bad shape '12,0,4,0,r'" --shapes 12,0,4,0,r
expect_fail "bad shape 'nonsense'" --shapes nonsense
expect_fail "bad shape 'dw:8,8,8,3'" --shapes dw:8,8,8,3
expect_fail "bad shape 'dw:0,8,8,1'" --shapes dw:0,8,8,1
expect_fail "cannot read kernels/cpu at 'no-such-rev'" --base no-such-rev --shapes smoke
echo "ok: bad arguments refused"
