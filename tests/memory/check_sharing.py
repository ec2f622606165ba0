#!/usr/bin/python3
"""Memory sharing in generated code: views, in-place writes and Concat inputs placed in the output.

Usage: /usr/bin/python3 tests/memory/check_sharing.py KILN
Builds small ONNX models, compiles each with `kiln compile`, and checks from manifest.json that
memory is shared where it is legal and not where it is illegal (the value is read later, is a
graph input or output, or is a constant), then runs each with `kiln run` against numpy, and at
-O0 (no sharing) too. Prints one line per case; exits 1 on any failure.
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
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

F = TensorProto.FLOAT


def vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def build(nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def relu(x):
    return np.maximum(x, 0)


def cases(rng):
    """name: (model, inputs, expected outputs, manifest checks {key: predicate})."""
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    shape = numpy_helper.from_array(np.array([1, 256], np.int64), "shape")
    w = numpy_helper.from_array(rng.standard_normal((1, 4, 8, 8)).astype(np.float32), "w")
    c = {}
    # Reshape between two ops: a view, no copy.
    c["reshape_view"] = (
        build([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Reshape", ["a", "shape"], ["b"]),
               helper.make_node("Sigmoid", ["b"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 256])], [shape]),
        {"x": x}, {"y": 1 / (1 + np.exp(-relu(x).reshape(1, 256)))},
        {"views": lambda v: v == 1, "memcpy calls": lambda v: v == 0})
    # Reshape producing a graph output: the output needs its own buffer, so a copy.
    c["reshape_to_output_copies"] = (
        build([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Reshape", ["a", "shape"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 256])], [shape]),
        {"x": x}, {"y": relu(x).reshape(1, 256)},
        {"views": lambda v: v == 0, "memcpy calls": lambda v: v == 1})
    # A chain of unary ops: each writes over its dead input.
    c["chain_in_place"] = (
        build([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
               helper.make_node("Exp", ["b"], ["d"]), helper.make_node("Sigmoid", ["d"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])]),
        {"x": x}, {"y": 1 / (1 + np.exp(-np.exp(-relu(x))))},
        {"in_place": lambda v: v == 2})
    # The input is read again later: no in-place write over it; the graph input is never
    # overwritten either (Relu of x is not in place).
    c["live_input_not_overwritten"] = (
        build([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["b"]),
               helper.make_node("Add", ["a", "b"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])]),
        {"x": x}, {"y": relu(x) - relu(x)},
        {"in_place": lambda v: v == 0})
    # A constant operand is never overwritten (Add's other operand is a graph input).
    c["constant_not_overwritten"] = (
        build([helper.make_node("Add", ["x", "w"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 8, 8])], [w]),
        {"x": x}, {"y": x + numpy_helper.to_array(w)},
        {"in_place": lambda v: v == 0})
    # Concat on the channel axis with batch 1: both producers write into the output directly.
    c["concat_in_place"] = (
        build([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
               helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
               helper.make_node("Sigmoid", ["cat"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 8, 8, 8])]),
        {"x": x}, {"y": 1 / (1 + np.exp(-np.concatenate([relu(x), -x], axis=1)))},
        {"concat_inputs_in_place": lambda v: v == 2, "memcpy calls": lambda v: v == 0})
    # An input also read by another op, and one along an axis with dims before it > 1 rows:
    # copied, not placed.
    c["concat_shared_input_copied"] = (
        build([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
               helper.make_node("Concat", ["a", "b"], ["cat"], axis=1),
               helper.make_node("Concat", ["a", "a"], ["cat2"], axis=2),
               helper.make_node("ReduceSum", ["cat2"], ["s"], keepdims=1),
               helper.make_node("Add", ["cat", "s"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 8, 8, 8])]),
        {"x": x}, {"y": np.concatenate([relu(x), -x], axis=1) +
                   np.concatenate([relu(x), relu(x)], axis=2).sum(keepdims=True)},
        {"concat_inputs_in_place": lambda v: v == 1})
    # Split and Slice along the outer non-1 axis: views of the input, no copy.
    split = numpy_helper.from_array(np.array([1, 3], np.int64), "split")
    starts = numpy_helper.from_array(np.array([1], np.int64), "starts")
    ends = numpy_helper.from_array(np.array([3], np.int64), "ends")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    c["split_slice_views"] = (
        build([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Split", ["a", "split"], ["s0", "s1"], axis=1),
               helper.make_node("Slice", ["a", "starts", "ends", "axes"], ["sl"]),
               helper.make_node("Sigmoid", ["s0"], ["y0"]),
               helper.make_node("Neg", ["s1"], ["y1"]),
               helper.make_node("Exp", ["sl"], ["y2"])],
              [vi("x", [1, 4, 8, 8])],
              [vi("y0", [1, 1, 8, 8]), vi("y1", [1, 3, 8, 8]), vi("y2", [1, 2, 8, 8])],
              [split, starts, ends, axes]),
        {"x": x}, {"y0": 1 / (1 + np.exp(-relu(x)[:, :1])), "y1": -relu(x)[:, 1:],
                   "y2": np.exp(relu(x)[:, 1:3])},
        {"views": lambda v: v == 3, "memcpy calls": lambda v: v == 0})
    # A Slice with a step, and a Split on an inner axis: not contiguous, so real copies.
    steps = numpy_helper.from_array(np.array([2], np.int64), "steps")
    ends4 = numpy_helper.from_array(np.array([4], np.int64), "ends4")
    c["strided_slice_copies"] = (
        build([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Slice", ["a", "starts", "ends4", "axes", "steps"], ["sl"]),
               helper.make_node("Exp", ["sl"], ["y"]),
               helper.make_node("Split", ["x"], ["t0", "t1"], axis=3),
               helper.make_node("Neg", ["t1"], ["y1"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 2, 8, 8]), vi("y1", [1, 4, 8, 4])],
              [starts, ends4, axes, steps]),
        {"x": x}, {"y": np.exp(relu(x)[:, 1:4:2]), "y1": -x[..., 4:]},
        {"views": lambda v: v == 0})
    # A conv whose fused residual (Relu(x), read by the first conv too) dies at it: the output
    # goes over the residual (-O3's passes fuse the Add and Relu into the second conv).
    w1 = numpy_helper.from_array(rng.standard_normal((4, 4, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 4, 1, 1)).astype(np.float32), "w2")
    a = relu(x)
    d = relu(conv(a, numpy_helper.to_array(w1), pad=1))
    c["conv_over_residual"] = (
        build([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Conv", ["a", "w1"], ["c1"], pads=[1, 1, 1, 1]),
               helper.make_node("Relu", ["c1"], ["d"]),
               helper.make_node("Conv", ["d", "w2"], ["c2"]),
               helper.make_node("Add", ["c2", "a"], ["s"]),
               helper.make_node("Relu", ["s"], ["r"]),
               helper.make_node("GlobalAveragePool", ["r"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 1, 1])], [w1, w2]),
        {"x": x},
        {"y": relu(conv(d, numpy_helper.to_array(w2)) + a).mean(axis=(2, 3), keepdims=True)},
        {"in_place": lambda v: v >= 1})
    # The residual is also the conv's input: the conv reads it throughout, so its output needs
    # a buffer of its own.
    c["conv_residual_is_input"] = (
        build([helper.make_node("Relu", ["x"], ["a"]),
               helper.make_node("Conv", ["a", "w2"], ["c2"]),
               helper.make_node("Add", ["c2", "a"], ["s"]),
               helper.make_node("GlobalAveragePool", ["s"], ["y"])],
              [vi("x", [1, 4, 8, 8])], [vi("y", [1, 4, 1, 1])], [w2]),
        {"x": x},
        {"y": (conv(a, numpy_helper.to_array(w2)) + a).mean(axis=(2, 3), keepdims=True)},
        {"in_place": lambda v: v == 0})
    # A channels-last depthwise conv whose input dies at it writes its output over that input,
    # shifted down by a row and a pixel (planned with that much room before it).
    wa = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32) * 0.3, "wa")
    wd = numpy_helper.from_array(rng.standard_normal((16, 1, 3, 3)).astype(np.float32) * 0.3, "wd")
    wp = numpy_helper.from_array(rng.standard_normal((8, 16, 1, 1)).astype(np.float32) * 0.3, "wp")
    xi = rng.standard_normal((1, 3, 12, 12)).astype(np.float32)
    b = relu(conv(xi, numpy_helper.to_array(wa), pad=1))
    d = relu(depthwise(b, numpy_helper.to_array(wd), pad=1))
    stem = [helper.make_node("Conv", ["x", "wa"], ["a"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["a"], ["b"]),
            helper.make_node("Conv", ["b", "wd"], ["c"], pads=[1, 1, 1, 1], group=16),
            helper.make_node("Relu", ["c"], ["d"])]
    c["depthwise_over_input"] = (
        build(stem + [helper.make_node("Conv", ["d", "wp"], ["y"])],
              [vi("x", [1, 3, 12, 12])], [vi("y", [1, 8, 12, 12])], [wa, wd, wp]),
        {"x": xi}, {"y": conv(d, numpy_helper.to_array(wp))},
        {"over_shifted_input": lambda v: v == 1})
    # Its input read again after it: the conv's output needs a buffer of its own.
    c["depthwise_input_read_after"] = (
        build(stem + [helper.make_node("Mul", ["d", "b"], ["e"]),
                      helper.make_node("Conv", ["e", "wp"], ["y"])],
              [vi("x", [1, 3, 12, 12])], [vi("y", [1, 8, 12, 12])], [wa, wd, wp]),
        {"x": xi}, {"y": conv(d * b, numpy_helper.to_array(wp))},
        {"over_shifted_input": lambda v: v == 0})
    return c


# Cases compiled with -O3's whole pass pipeline (the others run dce only).
FULL_PIPELINE = {"conv_over_residual", "conv_residual_is_input", "depthwise_over_input",
                 "depthwise_input_read_after"}
# At one thread, where a depthwise conv over its input needs no row bands (at more threads its
# 12 rows would be too few to pay for them; tests/kernels covers the bands).
ONE_THREAD = {"depthwise_over_input", "depthwise_input_read_after"}


def conv(x, w, pad=0):
    """NCHW conv, stride 1, symmetric pads, no bias."""
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kh, kw = w.shape[2:]
    oh, ow = xp.shape[2] - kh + 1, xp.shape[3] - kw + 1
    y = np.zeros((x.shape[0], w.shape[0], oh, ow), np.float64)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y.astype(np.float32)


def depthwise(x, w, pad=0):
    """NCHW depthwise conv (group = channels), stride 1, symmetric pads, no bias."""
    return np.concatenate([conv(x[:, k:k + 1], w[k:k + 1], pad) for k in range(x.shape[1])], 1)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    kiln = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kiln-sharing.") as tmp:
        for name, (model, inputs, expected, checks) in cases(np.random.default_rng(7)).items():
            path = os.path.join(tmp, name + ".onnx")
            with open(path, "wb") as f:
                f.write(model.SerializeToString())
            problems = []
            # The FULL_PIPELINE cases build the conv kernels (seconds each): -O3 only (the
            # others check that -O0 shares nothing).
            for opt in ("3",) if name in FULL_PIPELINE else ("3", "0"):
                out = os.path.join(tmp, f"{name}-O{opt}")
                # The graph passes would fuse these small chains into one loop; the cases test
                # the memory planner, so only dce runs (memory sharing follows -O), but for the
                # FULL_PIPELINE cases (fused convs).
                passes = [] if name in FULL_PIPELINE else ["--passes", "dce"]
                passes += ["--threads", "1"] if name in ONE_THREAD else []
                proc = subprocess.run([kiln, "compile", path, "-o", out, "-O", opt] + passes,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    problems.append(f"-O{opt} compile failed: {proc.stderr.strip()}")
                    continue
                manifest = json.load(open(os.path.join(out, "manifest.json")))
                mem = dict(manifest["memory"])
                mem["memcpy calls"] = sum(op["kernel"] == "memcpy" for op in manifest["ops"])
                if opt == "3":
                    for key, ok in checks.items():
                        if not ok(mem[key]):
                            problems.append(f"{key} = {mem[key]}")
                elif mem["views"] or mem["in_place"] or mem["concat_inputs_in_place"]:
                    problems.append(f"-O0 shares memory: {mem}")
                files = []
                for k, v in inputs.items():
                    np.save(os.path.join(tmp, f"{name}_{k}.npy"), v)
                    files += ["-i", f"{k}={os.path.join(tmp, f'{name}_{k}.npy')}"]
                res = os.path.join(out, "results")
                proc = subprocess.run([kiln, "run", out, "-o", res] + files,
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    problems.append(f"-O{opt} run failed: {proc.stderr.strip()}")
                    continue
                for k, want in expected.items():
                    got = np.load(os.path.join(res, k + ".npy"))
                    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                        problems.append(f"-O{opt} output {k} differs by "
                                        f"{np.abs(got - want).max():.3g}")
            print(f"{'ok  ' if not problems else 'FAIL'} {name}" +
                  (": " + "; ".join(problems) if problems else ""))
            failures += bool(problems)
    print(f"{len(cases(np.random.default_rng(7))) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
