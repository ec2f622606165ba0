#!/usr/bin/python3
"""A valid model whose node and value names hold `*/`, `//`, quotes, backslashes, `#include`, a
newline and a non-UTF-8 byte, and whose output names collide once sanitized for file names.

Usage: /usr/bin/python3 tests/bad_inputs/check_hostile_names.py KILN
It must compile (names never reach the generated source raw: it builds with -Wall -Wextra
-Werror), run, and write one distinct .npy per output with the right values. Exits 1 on failure.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

np.float = float  # onnx 1.12 still uses the aliases numpy 1.24 removed
np.int = int
np.bool = bool
np.object = object
from onnx import TensorProto, helper  # noqa: E402

EVIL = 'a*/ b // "q" \\ #include <x>\n\xff'
OUTPUTS = ["a/b", "a_b", "A:B"]  # all become a_b(.npy), A_B on case-folding file systems


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    kiln = sys.argv[1]
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3])  # noqa: E731
    nodes = [helper.make_node("Relu", ["x"], [EVIL], name=EVIL),
             helper.make_node("Neg", [EVIL], [OUTPUTS[0]], name="*/"),
             helper.make_node("Sigmoid", [EVIL], [OUTPUTS[1]], name="// \\"),
             helper.make_node("Exp", [EVIL], [OUTPUTS[2]], name="#include <stdio.h>")]
    graph = helper.make_graph(nodes, "g", [vi("x")], [vi(n) for n in OUTPUTS])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = (np.arange(6, dtype=np.float32).reshape(2, 3) - 3) / 2
    r = np.maximum(x, 0)
    want = [-r, 1 / (1 + np.exp(-r)), np.exp(r)]
    problems = []
    with tempfile.TemporaryDirectory(prefix="kiln-hostile-names.") as tmp:
        path = os.path.join(tmp, "hostile.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        np.save(os.path.join(tmp, "x.npy"), x)
        out = os.path.join(tmp, "out")
        proc = subprocess.run([kiln, "compile", path, "-o", out], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"check_hostile_names: compile failed: {proc.stderr.strip()}")
        with open(os.path.join(out, "manifest.json")) as f:
            cxx_flags = json.load(f)["cxx_flags"]  # the target's -march, -pthread
        for cxx in ("g++", "clang++"):
            proc = subprocess.run([cxx] + cxx_flags + ["-Wall", "-Wextra", "-Werror", "-I", out,
                                   "-c", os.path.join(out, "model.cc"), "-o", os.devnull],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                problems.append(f"{cxx} rejects model.cc: {proc.stderr.strip()[:300]}")
        source = open(os.path.join(out, "model.cc"), "rb").read()
        # Names may appear inside comments, escaped: never as a line of their own (the
        # newline in EVIL would start one), never as raw non-UTF-8 bytes.
        lines = [ln.strip() for ln in source.split(b"\n")]
        if any(ln.startswith(b"#include <x>") or ln.startswith(b"\xff") for ln in lines) or \
                b"\xff" in source:
            problems.append("a name reached model.cc unescaped")
        res = os.path.join(tmp, "res")
        proc = subprocess.run([kiln, "run", out, "-i", os.path.join(tmp, "x.npy"), "-o", res],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"check_hostile_names: run failed: {proc.stderr.strip()}")
        files = sorted(os.listdir(res))
        if files != ["A_B-2.npy", "a_b-1.npy", "a_b.npy"]:
            problems.append(f"output files {files}, expected a_b.npy, a_b-1.npy, A_B-2.npy")
        else:
            for name, w in zip(["a_b.npy", "a_b-1.npy", "A_B-2.npy"], want):
                got = np.load(os.path.join(res, name))
                if not np.allclose(got, w, rtol=1e-6, atol=1e-6):
                    problems.append(f"{name} holds the wrong values")
    if problems:
        for p in problems:
            print(f"check_hostile_names: FAIL: {p}")
        return 1
    print("check_hostile_names: ok: compiled, warning-free, 3 distinct outputs with the right values")
    return 0


if __name__ == "__main__":
    sys.exit(main())
