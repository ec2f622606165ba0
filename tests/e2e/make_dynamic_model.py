"""Writes a small model with data-dependent output sizes (NonZero, Unique) for
tests/e2e/dynamic_shapes.c: input x f32[6]; outputs nz, y, counts, inv."""
import sys

import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])
outs = [
    helper.make_tensor_value_info("nz", TensorProto.INT64, [1, "n"]),
    helper.make_tensor_value_info("y", TensorProto.FLOAT, ["u"]),
    helper.make_tensor_value_info("counts", TensorProto.INT64, ["u"]),
    helper.make_tensor_value_info("inv", TensorProto.INT64, [6]),
]
nodes = [
    helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
    helper.make_node("Unique", ["x"], ["y", "idx", "inv", "counts"], name="unique", sorted=1),
]
graph = helper.make_graph(nodes, "dyn", [x], outs)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
