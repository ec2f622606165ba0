#!/usr/bin/python3
"""Pattern fusions on small models, through `kiln run` at -O3 against ONNX Runtime.

Usage: /usr/bin/python3 tests/models/fusion_cases.py KILN [--work DIR]
Each case is a decomposed form an exporter writes: LayerNormalization, Gelu's tanh form and a
max-subtracted Softmax as torch 1.13 exports them at opset 14 (a small block, exported here),
and, built with onnx.helper, Softmax without the max, LayerNormalization with x*x and a
left-hand epsilon, BatchNormalization after a 2-D MatMul and a per-column Mul after a 3-D one.
Also attention with a scaled score and a mask (kiln.Attention). Per case: `kiln opt -O 3` must
show the fused op and none of the ops it replaces, and the outputs
of `kiln run` must match ONNX Runtime's (rtol 1e-5, atol 1e-6). Exits 1 naming each failure.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_flow_cases as cf  # noqa: E402  (run_case: kiln run vs ONNX Runtime)

CASES = []  # (name, graph or None, feeds, opset, fused ops, ops that must be gone)
rng = np.random.default_rng(11)


def const(name, a):
    return nh.from_array(np.asarray(a, dtype=np.float32), name)


def axes(name, values):
    return nh.from_array(np.asarray(values, dtype=np.int64), name)


x_info = h.make_tensor_value_info("x", T.FLOAT, [2, 5, 16])


def y_info(*dims):
    return h.make_tensor_value_info("y", T.FLOAT, list(dims))


x_feed = {"x": rng.standard_normal((2, 5, 16)).astype(np.float32) * 3}

# Softmax without the max subtraction, over axis 1.
CASES.append(("softmax_no_max", h.make_graph([
    h.make_node("Exp", ["x"], ["e"]),
    h.make_node("ReduceSum", ["e", "ax"], ["s"], keepdims=1),
    h.make_node("Div", ["e", "s"], ["y"]),
], "g", [x_info], [y_info(2, 5, 16)], [axes("ax", [1])]), x_feed, 17, ["Softmax"], ["Exp", "ReduceSum"]))

# LayerNormalization with x*x, epsilon on the left, gamma and beta of the last dim.
CASES.append(("layernorm_mul_form", h.make_graph([
    h.make_node("ReduceMean", ["x"], ["m"], keepdims=1, axes=[-1]),
    h.make_node("Sub", ["x", "m"], ["d"]),
    h.make_node("Mul", ["d", "d"], ["sq"]),
    h.make_node("ReduceMean", ["sq"], ["v"], keepdims=1, axes=[-1]),
    h.make_node("Add", ["eps", "v"], ["ve"]),
    h.make_node("Sqrt", ["ve"], ["sd"]),
    h.make_node("Div", ["d", "sd"], ["n"]),
    h.make_node("Mul", ["gamma", "n"], ["ng"]),
    h.make_node("Add", ["ng", "beta"], ["y"]),
], "g", [x_info], [y_info(2, 5, 16)], [const("eps", 1e-3),
                             const("gamma", rng.standard_normal(16)),
                             const("beta", rng.standard_normal(16))]),
    x_feed, 17, ["LayerNormalization"], ["Sqrt", "ReduceMean", "Div"]))

# BatchNormalization after a 2-D MatMul: folded into its weights plus a bias.
CASES.append(("batchnorm_after_matmul", h.make_graph([
    h.make_node("MatMul", ["a", "w"], ["mm"]),
    h.make_node("BatchNormalization", ["mm", "sc", "b", "mean", "var"], ["y"], epsilon=1e-3),
], "g", [h.make_tensor_value_info("a", T.FLOAT, [4, 16])], [y_info(4, 8)],
    [const("w", rng.standard_normal((16, 8))), const("sc", rng.standard_normal(8)),
     const("b", rng.standard_normal(8)), const("mean", rng.standard_normal(8)),
     const("var", rng.uniform(0.5, 2, 8))]),
    {"a": rng.standard_normal((4, 16)).astype(np.float32)}, 17, [], ["BatchNormalization"]))

# A per-column Mul after a 3-D MatMul: folded into the weights.
CASES.append(("colscale_after_matmul", h.make_graph([
    h.make_node("MatMul", ["x", "w"], ["mm"]),
    h.make_node("Mul", ["mm", "s"], ["y"]),
], "g", [x_info], [y_info(2, 5, 8)], [const("w", rng.standard_normal((16, 8))),
                             const("s", rng.standard_normal(8))]),
    x_feed, 17, [], ["Mul"]))

# Attention with the scale on the scores (a Div) and a [S, Skv] mask: kiln.Attention.
CASES.append(("attention_scores_scale_mask", h.make_graph([
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Div", ["s", "root_d"], ["ss"]),
    h.make_node("Add", ["ss", "mask"], ["sm"]),
    h.make_node("Softmax", ["sm"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], "g", [h.make_tensor_value_info("q", T.FLOAT, [2, 4, 6, 8]),
         h.make_tensor_value_info("kt", T.FLOAT, [2, 4, 8, 10]),
         h.make_tensor_value_info("v", T.FLOAT, [2, 4, 10, 8])], [y_info(2, 4, 6, 8)],
    [const("root_d", np.sqrt(8.0)),
     const("mask", np.where(rng.random((6, 10)) < 0.2, -1e4, 0.0))]),
    {"q": rng.standard_normal((2, 4, 6, 8)).astype(np.float32),
     "kt": rng.standard_normal((2, 4, 8, 10)).astype(np.float32),
     "v": rng.standard_normal((2, 4, 10, 8)).astype(np.float32)}, 17, ["kiln::Attention"],
    ["Softmax", "Div", "MatMul"]))

# A depthwise-separable block the layout pass runs channels-last: 1x1 conv, Relu, depthwise
# 3x3 stride 2 with bias, Clip, a per-channel scale and shift (one kiln.Elementwise), a residual Add of another 1x1 conv's
# output, GlobalAveragePool. The middle value is a second graph output (leaves the region).
CASES.append(("layout_nhwc_region", h.make_graph([
    h.make_node("Conv", ["xi", "w1"], ["c1"]),
    h.make_node("Relu", ["c1"], ["r1"]),
    h.make_node("Conv", ["r1", "wd", "bd"], ["d"], group=32, kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1]),
    h.make_node("Clip", ["d", "lo", "hi"], ["k"]),
    h.make_node("Mul", ["k", "scale"], ["ks"]),
    h.make_node("Add", ["ks", "shift"], ["mid"]),
    h.make_node("Conv", ["mid", "w2"], ["c2"]),
    h.make_node("Add", ["c2", "mid"], ["s"]),
    h.make_node("GlobalAveragePool", ["s"], ["y"]),
], "g", [h.make_tensor_value_info("xi", T.FLOAT, [2, 16, 9, 7])],
    [y_info(2, 32, 1, 1), h.make_tensor_value_info("mid", T.FLOAT, [2, 32, 5, 4])],
    [const("w1", rng.standard_normal((32, 16, 1, 1)) * 0.3),
     const("wd", rng.standard_normal((32, 1, 3, 3)) * 0.3), const("bd", rng.standard_normal(32)),
     const("lo", 0.0), const("hi", 6.0), const("scale", rng.standard_normal((32, 1, 1))),
     const("shift", rng.standard_normal((1, 32, 1, 1))),
     const("w2", rng.standard_normal((32, 32, 1, 1)) * 0.2)]),
    {"xi": rng.standard_normal((2, 16, 9, 7)).astype(np.float32)}, 17,
    ["kiln::NhwcConv", "kiln::Elementwise", "Transpose", "ReduceMean"],
    ["Conv", "kiln::FusedConv", "GlobalAveragePool"]))

# SiLU after a conv (x * Sigmoid(x), as torch exports nn.SiLU before opset 24) and a Relu after
# a ConvTranspose: both become the conv's epilogue.
CASES.append(("silu_and_deconv_epilogues", h.make_graph([
    h.make_node("Conv", ["xs", "ws"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Sigmoid", ["c"], ["sg"]),
    h.make_node("Mul", ["c", "sg"], ["si"]),
    h.make_node("ConvTranspose", ["si", "wt"], ["ct"], kernel_shape=[2, 2], strides=[2, 2]),
    h.make_node("Relu", ["ct"], ["y"]),
], "g", [h.make_tensor_value_info("xs", T.FLOAT, [1, 4, 6, 5])], [y_info(1, 3, 12, 10)],
    [const("ws", rng.standard_normal((8, 4, 3, 3)) * 0.4),
     const("wt", rng.standard_normal((8, 3, 2, 2)) * 0.4)]),
    {"xs": rng.standard_normal((1, 4, 6, 5)).astype(np.float32)}, 17,
    ["kiln::FusedConv", "kiln::FusedConvTranspose"], ["Sigmoid", "Mul", "Relu", "ConvTranspose"]))

# Transposes the tiled kernel takes (a batched swap of two blocks of axes once size-1 axes are
# dropped) and ones it must not (a size-1 axis moved only, three blocks rotated).
t_in = rng.standard_normal((2, 1, 3, 4)).astype(np.float32)
CASES.append(("transpose_blocks", h.make_graph([
    h.make_node("Transpose", ["t"], ["y"], perm=[3, 1, 0, 2]),
    h.make_node("Transpose", ["t"], ["a"], perm=[0, 2, 3, 1]),
    h.make_node("Transpose", ["t"], ["b"], perm=[1, 0, 2, 3]),
    h.make_node("Transpose", ["t"], ["c"], perm=[2, 3, 1, 0]),
    h.make_node("Transpose", ["t"], ["d"], perm=[0, 1, 3, 2]),
    h.make_node("Transpose", ["t"], ["e"], perm=[2, 0, 3, 1]),
], "g", [h.make_tensor_value_info("t", T.FLOAT, [2, 1, 3, 4])],
    [y_info(4, 1, 2, 3)] + [h.make_tensor_value_info(n, T.FLOAT, d) for n, d in
                            [("a", [2, 3, 4, 1]), ("b", [1, 2, 3, 4]), ("c", [3, 4, 1, 2]),
                             ("d", [2, 1, 4, 3]), ("e", [3, 2, 4, 1])]], []),
    {"t": t_in}, 17, [], []))

# Attention with a per-batch padding mask [B, 1, 1, Skv] (each batch masks other keys).
pad_mask = np.zeros((2, 1, 1, 10), dtype=np.float32)
pad_mask[0, 0, 0, 7:] = -1e4
pad_mask[1, 0, 0, 4:] = -1e4
CASES.append(("attention_padding_mask", h.make_graph([
    h.make_node("MatMul", ["q", "kt"], ["s"]),
    h.make_node("Mul", ["s", "inv_root_d"], ["ss"]),
    h.make_node("Add", ["ss", "pmask"], ["sm"]),
    h.make_node("Softmax", ["sm"], ["p"], axis=-1),
    h.make_node("MatMul", ["p", "v"], ["y"]),
], "g", [h.make_tensor_value_info("q", T.FLOAT, [2, 4, 6, 8]),
         h.make_tensor_value_info("kt", T.FLOAT, [2, 4, 8, 10]),
         h.make_tensor_value_info("v", T.FLOAT, [2, 4, 10, 8]),
         h.make_tensor_value_info("pmask", T.FLOAT, [2, 1, 1, 10])], [y_info(2, 4, 6, 8)],
    [const("inv_root_d", 1 / np.sqrt(8.0))]),
    {"q": rng.standard_normal((2, 4, 6, 8)).astype(np.float32),
     "kt": rng.standard_normal((2, 4, 8, 10)).astype(np.float32),
     "v": rng.standard_normal((2, 4, 10, 8)).astype(np.float32), "pmask": pad_mask}, 17,
    ["kiln::Attention"], ["Softmax", "MatMul"]))

TORCH_BLOCK = r'''
import sys, torch, torch.nn as nn
torch.manual_seed(3)
class Block(nn.Module):
    def __init__(s):
        super().__init__()
        s.fc, s.ln, s.act = nn.Linear(16, 16), nn.LayerNorm(16), nn.GELU(approximate="tanh")
        nn.init.normal_(s.ln.weight); nn.init.normal_(s.ln.bias)
    def forward(s, x):
        y = s.act(s.ln(s.fc(x)))
        e = torch.exp(y - y.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)
torch.onnx.export(Block().eval(), torch.randn(2, 5, 16), sys.argv[1], opset_version=14,
                  input_names=["x"], output_names=["y"])
'''


# 3x3 stride-1 convs of at least 32 channels in and out on images of at least 16 output tiles
# (4x4 each) take the Winograd F(4x4, 3x3) kernel (kernels/cpu/winograd.h): pads 1 with bias,
# Relu and a residual; pads 0 and 2; an odd-sized image (partial tiles on both edges). Winograd rounds differently from a direct
# conv, within the bound its kernel tests state (errors up to ~4e-6 of the outputs' magnitude,
# which reach 100 here): compared at rtol 1e-4, atol 5e-4.
wg_x = rng.standard_normal((2, 32, 17, 15)).astype(np.float32)
CASES.append(("winograd_conv", h.make_graph([
    h.make_node("Conv", ["wx", "wa", "ba"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["c1"], ["r1"]),
    h.make_node("Conv", ["r1", "wb"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Add", ["c2", "r1"], ["y"]),
    h.make_node("Conv", ["y", "wc"], ["z"], kernel_shape=[3, 3], pads=[2, 2, 2, 2]),
    h.make_node("Conv", ["z", "wd"], ["u"], kernel_shape=[3, 3]),
], "g", [h.make_tensor_value_info("wx", T.FLOAT, [2, 32, 17, 15])],
    [y_info(2, 40, 17, 15), h.make_tensor_value_info("u", T.FLOAT, [2, 33, 17, 15])],
    [const("wa", rng.standard_normal((40, 32, 3, 3)) * 0.1), const("ba", rng.standard_normal(40)),
     const("wb", rng.standard_normal((40, 40, 3, 3)) * 0.1),
     const("wc", rng.standard_normal((36, 40, 3, 3)) * 0.1),
     const("wd", rng.standard_normal((33, 36, 3, 3)) * 0.1)]),
    {"wx": wg_x}, 17, ["kiln::FusedConv"], ["Relu", "Add"]))
# 3x3 stride-2 convs of the same sizes take the stride-2 Winograd kernel (conv2d_winograd_s2_f32,
# its four stride-1 phases): pads 1 with bias and Relu; asymmetric pads (2, 1 begin; 0, 2 end)
# with the residual of a 1x1 stride-2 conv; odd image sizes (partial tiles on both edges).
ws_x = rng.standard_normal((2, 32, 33, 31)).astype(np.float32)
CASES.append(("winograd_s2_conv", h.make_graph([
    h.make_node("Conv", ["sx", "sa", "sb"], ["s1"], kernel_shape=[3, 3], strides=[2, 2],
                pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["s1"], ["y"]),
    h.make_node("Conv", ["sx", "sd"], ["sdn"], kernel_shape=[1, 1], strides=[2, 2]),
    h.make_node("Conv", ["sx", "sc"], ["s2"], kernel_shape=[3, 3], strides=[2, 2],
                pads=[2, 1, 0, 2]),
    h.make_node("Add", ["s2", "sdn"], ["u"]),
], "g", [h.make_tensor_value_info("sx", T.FLOAT, [2, 32, 33, 31])],
    [y_info(2, 40, 17, 16), h.make_tensor_value_info("u", T.FLOAT, [2, 36, 17, 16])],
    [const("sa", rng.standard_normal((40, 32, 3, 3)) * 0.1), const("sb", rng.standard_normal(40)),
     const("sc", rng.standard_normal((36, 32, 3, 3)) * 0.1),
     const("sd", rng.standard_normal((36, 32, 1, 1)) * 0.1)]),
    {"sx": ws_x}, 17, ["kiln::FusedConv"], ["Relu", "Add"]))
# F(4x4, 3x3) also takes 3x3 convs of fewer channels (PP-OCRv4 det's 96 -> 24 head,
# conv_cost.h's winogradChannels): on AVX2 at least 8 each and 256 in x out, on AVX-512 at least
# 16 out, 8 in and 384 in x out. 24 -> 16 with bias and Relu and 16 -> 40 (Winograd on both),
# 40 -> 8 (the direct conv on AVX-512), on an image of 5 x 5 tiles with partial tiles on both
# edges.
wn_x = rng.standard_normal((1, 24, 18, 17)).astype(np.float32)
CASES.append(("winograd_narrow_conv", h.make_graph([
    h.make_node("Conv", ["nx", "na", "nb"], ["n1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Relu", ["n1"], ["n2"]),
    h.make_node("Conv", ["n2", "nc"], ["n3"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    h.make_node("Conv", ["n3", "nd"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
], "g", [h.make_tensor_value_info("nx", T.FLOAT, [1, 24, 18, 17])], [y_info(1, 8, 18, 17)],
    [const("na", rng.standard_normal((16, 24, 3, 3)) * 0.1), const("nb", rng.standard_normal(16)),
     const("nc", rng.standard_normal((40, 16, 3, 3)) * 0.1),
     const("nd", rng.standard_normal((8, 40, 3, 3)) * 0.1)]),
    {"nx": wn_x}, 17, ["kiln::FusedConv"], ["Relu"]))
# Fused element-wise chains of transcendental ops run as vector code (vector_emit.cc, the vector
# forms of kernels/cpu/vfunctor.h with vmath.h's approximations): one chain with per-channel
# operands in NCHW ([C, 1, 1] and [1, C, 1, 1]: map_nest_f32), one over whole tensors and
# scalar constants (map_n_f32), each with a masked tail (7 x 5 x 9 elements).
vc_x = (rng.standard_normal((2, 7, 5, 9)) * 2).astype(np.float32)
CASES.append(("vector_chain_nest", h.make_graph([
    h.make_node("Tanh", ["vx"], ["a"]),
    h.make_node("Mul", ["a", "half"], ["b"]),
    h.make_node("Mul", ["vx", "third"], ["b2"]),
    h.make_node("Exp", ["b2"], ["c"]),
    h.make_node("Add", ["b", "c"], ["d"]),
    h.make_node("Softplus", ["d"], ["e"]),
    h.make_node("Mul", ["e", "vscale"], ["f"]),
    h.make_node("Add", ["f", "vshift"], ["g"]),
    h.make_node("Elu", ["g"], ["hh"], alpha=0.7),
    h.make_node("Mul", ["hh", "hh"], ["i"]),
    h.make_node("Add", ["i", "one"], ["j"]),
    h.make_node("Log", ["j"], ["k"]),
    h.make_node("Erf", ["k"], ["l"]),
    h.make_node("Sigmoid", ["l"], ["y"]),
], "g", [h.make_tensor_value_info("vx", T.FLOAT, [2, 7, 5, 9])], [y_info(2, 7, 5, 9)],
    [const("half", 0.5), const("third", 0.3), const("one", 1.0),
     const("vscale", rng.standard_normal((7, 1, 1))),
     const("vshift", rng.standard_normal((1, 7, 1, 1)))]),
    {"vx": vc_x}, 17, ["kiln::Elementwise"], []))
CASES.append(("vector_chain_dense", h.make_graph([
    h.make_node("Selu", ["wx"], ["a"]),
    h.make_node("Celu", ["a"], ["b"], alpha=1.5),
    h.make_node("Softsign", ["b"], ["c"]),
    h.make_node("Max", ["c", "wx2"], ["d"]),
    h.make_node("HardSwish", ["d"], ["e"]),
    h.make_node("Clip", ["e", "lo", "hi"], ["f"]),
    h.make_node("Abs", ["wx2"], ["g"]),
    h.make_node("Sqrt", ["g"], ["g2"]),
    h.make_node("Sub", ["f", "g2"], ["y"]),
], "g", [h.make_tensor_value_info("wx", T.FLOAT, [2, 7, 5, 9]),
         h.make_tensor_value_info("wx2", T.FLOAT, [2, 7, 5, 9])], [y_info(2, 7, 5, 9)],
    [const("lo", -0.25), const("hi", 0.75)]),
    {"wx": vc_x, "wx2": (rng.standard_normal((2, 7, 5, 9)) * 2).astype(np.float32)}, 17,
    ["kiln::Elementwise"], []))
# Pow (exponents 2, 0.5 and 3 as scalar constants, and one per element), Sin and Cos in one
# chain: vector forms since session 33 (whole-vector Pow exact, the rest per lane).
CASES.append(("vector_chain_trig_pow", h.make_graph([
    h.make_node("Pow", ["px", "two"], ["a"]),
    h.make_node("Sin", ["a"], ["b"]),
    h.make_node("Abs", ["px"], ["c"]),
    h.make_node("Pow", ["c", "half"], ["d"]),
    h.make_node("Cos", ["d"], ["e"]),
    h.make_node("Pow", ["e", "three"], ["f"]),
    h.make_node("Add", ["b", "f"], ["g"]),
    h.make_node("Mul", ["px", "big"], ["k"]),
    h.make_node("Sin", ["k"], ["l"]),
    h.make_node("Add", ["g", "l"], ["m"]),
    h.make_node("Pow", ["c", "pe"], ["n"]),
    h.make_node("Add", ["m", "n"], ["y"]),
], "g", [h.make_tensor_value_info("px", T.FLOAT, [2, 7, 5, 9]),
         h.make_tensor_value_info("pe", T.FLOAT, [2, 7, 5, 9])], [y_info(2, 7, 5, 9)],
    [const("two", 2.0), const("half", 0.5), const("three", 3.0), const("big", 3000.0)]),
    {"px": vc_x, "pe": rng.choice(np.float32([2, 0.5, 1, -1, 1.5]), (2, 7, 5, 9))}, 17,
    ["kiln::Elementwise"], []))
TOLERANCE = {"winograd_conv": (1e-4, 5e-4), "winograd_s2_conv": (1e-4, 5e-4),
             "winograd_narrow_conv": (1e-4, 5e-4)}
# Kernels a case's artifact must call (its manifest), where the host's kernel ISA is one listed.
KERNELS = {"winograd_conv": ("kiln_cpu::conv2d_winograd_f32", ("avx512", "avx2")),
           "winograd_s2_conv": ("kiln_cpu::conv2d_winograd_s2_f32", ("avx512", "avx2")),
           "winograd_narrow_conv": ("kiln_cpu::conv2d_winograd_f32", ("avx2",)),
           "vector_chain_nest": ("kiln_cpu::map_nest_f32", ("avx512", "avx2", "generic")),
           "vector_chain_dense": ("kiln_cpu::map_n_f32", ("avx512", "avx2", "generic")),
           "vector_chain_trig_pow": ("kiln_cpu::map_n_f32", ("avx512", "avx2", "generic"))}


def uses_kernel(kiln, model, work, kernel, isas):
    """Whether `kiln compile` (not built) calls KERNEL; None when the host's kernel ISA is not one
    of ISAS (the portable build's cost model does not pick Winograd)."""
    out = os.path.join(work, "kernels-" + os.path.basename(os.path.dirname(model)))
    proc = subprocess.run([kiln, "compile", model, "-o", out, "--no-build"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        return proc.stderr.strip()
    import json
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    if manifest.get("kernel_isa") not in isas:
        return None
    kernels = {op["kernel"].split("__")[0] for op in manifest["ops"]}
    return None if kernel in kernels else f"no {kernel} call (kernels: {sorted(kernels)})"


def opt_ops(kiln, model):
    """The op types `kiln opt -O 3` leaves in the main graph."""
    out = subprocess.run([kiln, "opt", model, "-O", "3"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    ops = set()
    for line in out.stdout.splitlines():
        m = re.search(r"=\s*([A-Za-z_][\w:]*)\(", line)  # past annotations such as #{layout = "NHWC"}
        if m and not line.lstrip().startswith("const"):
            ops.add(m.group(1))
    return ops


def check_fused(kiln, model, fused, gone):
    ops = opt_ops(kiln, model)
    missing = [op for op in fused if op not in ops]
    left = [op for op in gone if op in ops]
    if missing or left:
        return f"after -O3: missing {missing}, still there {left} (ops: {sorted(ops)})"
    return None


def torch_block_graph(work):
    """Exports TORCH_BLOCK into WORK/torch_block/model.onnx; returns its graph or an error."""
    import onnx
    path = os.path.join(work, "torch_block", "model.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    exp = subprocess.run([sys.executable, "-c", TORCH_BLOCK, path], capture_output=True,
                         text=True)
    if exp.returncode != 0:
        return None, f"torch export failed: {exp.stderr[-300:]}"
    return onnx.load(path).graph, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kiln")
    ap.add_argument("--work", help="keep models and outputs here (default: a temporary folder)")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="kiln-fusion.")
    os.makedirs(work, exist_ok=True)
    results = {}
    try:
        torch_graph, export_error = torch_block_graph(work)
        CASES.append(("torch_block", torch_graph, x_feed, 14,
                      ["LayerNormalization", "Gelu", "Softmax"],
                      ["Sqrt", "Tanh", "Exp", "ReduceMax", "ReduceMean"]))
        for name, graph, feeds, opset, fused, gone in CASES:
            model = os.path.join(work, name, "model.onnx")
            results[name] = export_error if graph is None else (
                cf.run_case(args.kiln, "3", work, name, graph, feeds, opset,
                            *TOLERANCE.get(name, (1e-5, 1e-6))) or
                check_fused(args.kiln, model, fused, gone) or
                (uses_kernel(args.kiln, model, work, *KERNELS[name]) if name in KERNELS else None))
            print(f"fusion_cases {name}: {results[name] or 'ok'}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    bad = [name for name, problem in results.items() if problem]
    if bad:
        sys.exit(f"fusion_cases: FAIL: {', '.join(bad)}")


if __name__ == "__main__":
    main()
