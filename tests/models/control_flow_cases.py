#!/usr/bin/python3
"""If, Loop and Scan through `kiln run` against ONNX Runtime on small generated models.

Usage: /usr/bin/python3 tests/models/control_flow_cases.py KILN [--work DIR] [--opt N]
Builds models with onnx.helper that the node tests do not cover: a Loop stopped by its
condition, a Loop with a constant trip count and scan outputs, Scan with several axes and
directions, an If inside a Loop body reading values two graphs out, nested Loops (the inner trip
count computed per outer iteration), an If on a run-time condition, both ways, and Scan-8
(a batch axis, opset 8). Outputs must
match ONNX Runtime's (rtol 1e-5, atol 1e-6); exits 1 naming each case that does not.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = []


def save(name, graph, feeds, opset=17):
    CASES.append((name, graph, feeds, opset))


# 1. Loop with M and cond: while i < M and sum < limit; carried sum, iteration-dependent; scan
#    output not allowed (cond) -> carried only. body reads outer 'step'.
body = h.make_graph([
    h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
    h.make_node("Mul", ["fi", "step"], ["inc"]),
    h.make_node("Add", ["s_in", "inc"], ["s_out"]),
    h.make_node("ReduceSum", ["s_out"], ["tot"], keepdims=0),
    h.make_node("Less", ["tot", "limit"], ["c_out"]),
], "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
            h.make_tensor_value_info("s_in", T.FLOAT, [3])],
   [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("s_out", T.FLOAT, [3])])
g = h.make_graph([
    h.make_node("Relu", ["x"], ["step"]),
    h.make_node("Loop", ["M", "c0", "x"], ["s"], body=body),
    h.make_node("Neg", ["s"], ["y"]),
], "g", [h.make_tensor_value_info("x", T.FLOAT, [3]), h.make_tensor_value_info("M", T.INT64, []),
         h.make_tensor_value_info("c0", T.BOOL, []), h.make_tensor_value_info("limit", T.FLOAT, [])],
   [h.make_tensor_value_info("y", T.FLOAT, [3])])
save("loop_cond", g, {"x": np.array([0.5, -1, 2], np.float32), "M": np.array(10, np.int64),
                      "c0": np.array(True), "limit": np.array(20.0, np.float32)})

# 2. Loop with constant M (no cond): carried + 2 scan outputs (one iteration-number based).
body = h.make_graph([
    h.make_node("Add", ["a_in", "x"], ["a_out"]),
    h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
    h.make_node("Mul", ["a_out", "fi"], ["sc"]),
    h.make_node("Identity", ["c"], ["c_out"]),
    h.make_node("Cast", ["i"], ["ii"], to=T.INT32),
], "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
            h.make_tensor_value_info("a_in", T.FLOAT, [2, 2])],
   [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("a_out", T.FLOAT, [2, 2]),
    h.make_tensor_value_info("sc", T.FLOAT, [2, 2]), h.make_tensor_value_info("ii", T.INT32, [])])
M = nh.from_array(np.array(4, np.int64), "M")
g = h.make_graph([h.make_node("Loop", ["M", "", "a0"], ["a", "scan", "iters"], body=body)], "g",
    [h.make_tensor_value_info("x", T.FLOAT, [2, 2]), h.make_tensor_value_info("a0", T.FLOAT, [2, 2])],
    [h.make_tensor_value_info("a", T.FLOAT, [2, 2]), h.make_tensor_value_info("scan", T.FLOAT, [4, 2, 2]),
     h.make_tensor_value_info("iters", T.INT32, [4])], initializer=[M])
save("loop_scan_const", g, {"x": np.arange(4, dtype=np.float32).reshape(2, 2),
                            "a0": np.ones((2, 2), np.float32)})

# 3. Scan with two scan inputs (one reversed, axis 1), state, two scan outputs (axis 1, reverse).
scan_body = body = h.make_graph([
    h.make_node("Add", ["st_in", "u"], ["t"]),
    h.make_node("Mul", ["t", "v"], ["st_out"]),
    h.make_node("Sub", ["st_out", "u"], ["o1"]),
    h.make_node("Identity", ["t"], ["o2"]),
], "body", [h.make_tensor_value_info("st_in", T.FLOAT, [2]), h.make_tensor_value_info("u", T.FLOAT, [2]),
            h.make_tensor_value_info("v", T.FLOAT, [2])],
   [h.make_tensor_value_info("st_out", T.FLOAT, [2]), h.make_tensor_value_info("o1", T.FLOAT, [2]),
    h.make_tensor_value_info("o2", T.FLOAT, [2])])
g = h.make_graph([h.make_node("Scan", ["s0", "U", "V"], ["s", "O1", "O2"], body=body, num_scan_inputs=2,
                              scan_input_axes=[0, 1], scan_input_directions=[0, 1],
                              scan_output_axes=[1, 0], scan_output_directions=[1, 0])], "g",
    [h.make_tensor_value_info("s0", T.FLOAT, [2]), h.make_tensor_value_info("U", T.FLOAT, [3, 2]),
     h.make_tensor_value_info("V", T.FLOAT, [2, 3])],
    [h.make_tensor_value_info("s", T.FLOAT, [2]), h.make_tensor_value_info("O1", T.FLOAT, [2, 3]),
     h.make_tensor_value_info("O2", T.FLOAT, [3, 2])])
save("scan_axes", g, {"s0": np.array([1, 2], np.float32),
                      "U": np.arange(6, dtype=np.float32).reshape(3, 2) * 0.5,
                      "V": np.arange(6, dtype=np.float32).reshape(2, 3) * 0.1 + 1}, opset=16)

# 4. If inside a Loop body (runtime cond per iteration), reading outer values at two depths.
thenb = h.make_graph([h.make_node("Add", ["acc_in", "x"], ["t1"])], "then", [],
                     [h.make_tensor_value_info("t1", T.FLOAT, [3])])
elseb = h.make_graph([h.make_node("Mul", ["acc_in", "w"], ["e1"])], "else", [],
                     [h.make_tensor_value_info("e1", T.FLOAT, [3])])
two = nh.from_array(np.array(2, np.int64), "two"); zero = nh.from_array(np.array(0, np.int64), "zero")
body = h.make_graph([
    h.make_node("Mod", ["i", "two"], ["r"]),
    h.make_node("Equal", ["r", "zero"], ["even"]),
    h.make_node("If", ["even"], ["acc_out"], then_branch=thenb, else_branch=elseb),
    h.make_node("Identity", ["c"], ["c_out"]),
], "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
            h.make_tensor_value_info("acc_in", T.FLOAT, [3])],
   [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [3])],
   initializer=[two, zero])
g = h.make_graph([
    h.make_node("Sigmoid", ["x"], ["w"]),
    h.make_node("Loop", ["M", "", "x"], ["acc"], body=body),
], "g", [h.make_tensor_value_info("x", T.FLOAT, [3]), h.make_tensor_value_info("M", T.INT64, [])],
   [h.make_tensor_value_info("acc", T.FLOAT, [3])])
save("loop_if", g, {"x": np.array([1, -2, 0.5], np.float32), "M": np.array(5, np.int64)})

# 5. Nested loops: outer M=3 const, inner trip = outer i + 1 (runtime), carried sum; scan of outer.
inner = h.make_graph([
    h.make_node("Cast", ["j"], ["fj"], to=T.FLOAT),
    h.make_node("Add", ["q_in", "fj"], ["q1"]),
    h.make_node("Add", ["q1", "bias"], ["q_out"]),
    h.make_node("Identity", ["c2"], ["c2_out"]),
], "inner", [h.make_tensor_value_info("j", T.INT64, []), h.make_tensor_value_info("c2", T.BOOL, []),
             h.make_tensor_value_info("q_in", T.FLOAT, [2])],
   [h.make_tensor_value_info("c2_out", T.BOOL, []), h.make_tensor_value_info("q_out", T.FLOAT, [2])])
one = nh.from_array(np.array(1, np.int64), "one")
outer = h.make_graph([
    h.make_node("Add", ["i", "one"], ["n"]),
    h.make_node("Loop", ["n", "", "p_in"], ["p_out"], body=inner),
    h.make_node("Identity", ["p_out"], ["snap"]),
    h.make_node("Identity", ["c"], ["c_out"]),
], "outer", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
             h.make_tensor_value_info("p_in", T.FLOAT, [2])],
   [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("p_out", T.FLOAT, [2]),
    h.make_tensor_value_info("snap", T.FLOAT, [2])], initializer=[one])
M3 = nh.from_array(np.array(3, np.int64), "M3")
g = h.make_graph([
    h.make_node("Abs", ["x"], ["bias"]),
    h.make_node("Loop", ["M3", "", "x"], ["p", "snaps"], body=outer),
], "g", [h.make_tensor_value_info("x", T.FLOAT, [2])],
   [h.make_tensor_value_info("p", T.FLOAT, [2]), h.make_tensor_value_info("snaps", T.FLOAT, [3, 2])],
   initializer=[M3])
save("nested_loops", g, {"x": np.array([0.25, -1], np.float32)})

# 6. Runtime If with different branch work and output shapes equal; cond from data.
thenb = h.make_graph([h.make_node("Transpose", ["x"], ["tt"], perm=[1, 0]),
                      h.make_node("Relu", ["tt"], ["to"])], "then", [],
                     [h.make_tensor_value_info("to", T.FLOAT, [2, 2])])
elseb = h.make_graph([h.make_node("Neg", ["x"], ["eo"])], "else", [],
                     [h.make_tensor_value_info("eo", T.FLOAT, [2, 2])])
g = h.make_graph([
    h.make_node("ReduceSum", ["x"], ["sx"], keepdims=0),
    h.make_node("Greater", ["sx", "zero_f"], ["pos"]),
    h.make_node("If", ["pos"], ["y"], then_branch=thenb, else_branch=elseb),
    h.make_node("Add", ["y", "x"], ["z"]),
], "g", [h.make_tensor_value_info("x", T.FLOAT, [2, 2])], [h.make_tensor_value_info("z", T.FLOAT, [2, 2])],
   initializer=[nh.from_array(np.array(0, np.float32), "zero_f")])
save("if_pos", g, {"x": np.array([[1, -2], [3, 4]], np.float32)})
save("if_neg", g, {"x": np.array([[-1, -2], [3, -4]], np.float32)})

# 6. Scan-8 (opset 8): case 3's body with a batch axis, two scan inputs (one reversed), a state,
#    two scan outputs; kiln rewrites it into a Loop over the batch around a Loop over the sequence.
g = h.make_graph([h.make_node("Scan", ["", "s0", "U", "V"], ["s", "O1", "O2"], body=scan_body,
                              num_scan_inputs=2, directions=[0, 1])], "g",
    [h.make_tensor_value_info("s0", T.FLOAT, [3, 2]), h.make_tensor_value_info("U", T.FLOAT, [3, 4, 2]),
     h.make_tensor_value_info("V", T.FLOAT, [3, 4, 2])],
    [h.make_tensor_value_info("s", T.FLOAT, [3, 2]), h.make_tensor_value_info("O1", T.FLOAT, [3, 4, 2]),
     h.make_tensor_value_info("O2", T.FLOAT, [3, 4, 2])])
save("scan8_batch", g, {"s0": np.array([[1, 2], [0, -1], [3, 0.5]], np.float32),
                        "U": np.arange(24, dtype=np.float32).reshape(3, 4, 2) * 0.25,
                        "V": np.cos(np.arange(24, dtype=np.float32)).reshape(3, 4, 2)}, opset=8)


def run_case(kiln, opt, work, name, graph, feeds, opset, rtol=1e-5, atol=1e-6):
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    args = []
    for k, v in feeds.items():
        np.save(os.path.join(d, f"in_{k}.npy"), v)
        args.append(f"{k}={os.path.join(d, f'in_{k}.npy')}")
    ort = subprocess.run(["node", os.path.join(REPO, "tests", "models", "ort_run.js"), path,
                          os.path.join(d, "ort")] + args, capture_output=True, text=True)
    if ort.returncode != 0:
        return f"ONNX Runtime failed: {ort.stderr.strip()}"
    cmd = [kiln, "run", path, "-o", os.path.join(d, "kiln"), "--cache", os.path.join(work, "cache"),
           "-O", opt]
    for a in args:
        cmd += ["-i", a]
    got = subprocess.run(cmd, capture_output=True, text=True)
    if got.returncode != 0:
        return f"kiln run failed: {got.stderr.strip()}"
    for f in sorted(os.listdir(os.path.join(d, "ort"))):
        ref = np.load(os.path.join(d, "ort", f))
        out = os.path.join(d, "kiln", f)
        if not os.path.isfile(out):
            return f"kiln wrote no {f}"
        k = np.load(out)
        if k.shape != ref.shape or not np.allclose(k, ref, rtol=rtol, atol=atol):
            return f"{f}: kiln {k.ravel()[:8]} vs ONNX Runtime {ref.ravel()[:8]}"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kiln")
    ap.add_argument("--work", help="keep models and outputs here (default: a temporary folder)")
    ap.add_argument("--opt", default="3", help="kiln's -O level")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="kiln-control-flow.")
    os.makedirs(work, exist_ok=True)
    failed = []
    try:
        for case in CASES:
            problem = run_case(args.kiln, args.opt, work, *case)
            print(f"control_flow_cases {case[0]}: {problem or 'ok'}")
            if problem:
                failed.append(case[0])
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    if failed:
        sys.exit(f"control_flow_cases: FAIL: {', '.join(failed)}")


if __name__ == "__main__":
    main()
