#!/usr/bin/env python3
"""Runs kiln's pass tests: textual IR files with lit-style `// RUN:` lines checked by LLVM's
FileCheck (docs/passes.md). Substitutions: %kiln (the kiln binary), %FileCheck, %s (the file).
Exits non-zero when any RUN line fails; prints one line per file."""
import argparse
import os
import subprocess
import sys

FILECHECK_CANDIDATES = ["/usr/lib/llvm-14/bin/FileCheck", "/usr/bin/FileCheck-14", "FileCheck"]


def find_filecheck():
    for c in FILECHECK_CANDIDATES:
        if os.path.sep in c and os.access(c, os.X_OK):
            return c
        if os.path.sep not in c:
            for d in os.environ.get("PATH", "").split(os.pathsep):
                p = os.path.join(d, c)
                if os.access(p, os.X_OK):
                    return p
    sys.exit("run_pass_tests: LLVM FileCheck not found — install Debian's llvm-14-tools "
             "(scripts/setup.sh does)")


def run_file(path, kiln, filecheck):
    runs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.strip()
            if s.startswith("// RUN:"):
                runs.append(s[len("// RUN:"):].strip())
    if not runs:
        return False, "no RUN lines"
    for cmd in runs:
        cmd = cmd.replace("%kiln", kiln).replace("%FileCheck", filecheck).replace("%s", path)
        r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                           timeout=60)
        if r.returncode != 0:
            return False, f"RUN: {cmd}\n{r.stdout}{r.stderr}"
    return True, f"{len(runs)} RUN lines"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("paths", nargs="+", help="test files or folders of *.kir")
    a = ap.parse_args()
    filecheck = find_filecheck()
    files = []
    for p in a.paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".kir"))
        else:
            files.append(p)
    failed = 0
    for f in files:
        ok, msg = run_file(f, os.path.abspath(a.kiln), filecheck)
        print(f"{'PASS' if ok else 'FAIL'} {os.path.basename(f)}" + ("" if ok else f"\n{msg}"))
        failed += not ok
    print(f"pass tests: {len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
