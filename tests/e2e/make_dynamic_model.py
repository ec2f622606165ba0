"""Writes small models with data-dependent output sizes into folder argv[1]:
dyn.onnx (NonZero, Unique; input x f32[6]; outputs nz, y, counts, inv) for
tests/e2e/dynamic_shapes.c, range.onnx (Range on run-time scalars: needs --max-dim r=N),
range_declared.onnx (the same Range feeding Mul and Add, with the graph output declared [5]: the
declared size fixes the count, checked at run time) and consumer.onnx (NonZero feeding Cast: refused)."""
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
onnx.save(model, sys.argv[1] + "/dyn.onnx")

scalars = [helper.make_tensor_value_info(n, TensorProto.FLOAT, []) for n in ["start", "limit", "delta"]]
graph = helper.make_graph(
    [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range")], "range", scalars,
    [helper.make_tensor_value_info("r", TensorProto.FLOAT, ["n"])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          sys.argv[1] + "/range.onnx")

two = helper.make_tensor("two", TensorProto.FLOAT, [], [2.0])
graph = helper.make_graph(
    [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
     helper.make_node("Mul", ["r", "two"], ["r2"], name="mul"),
     helper.make_node("Add", ["r2", "r"], ["y"], name="add")], "range_declared", scalars,
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])], [two])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          sys.argv[1] + "/range_declared.onnx")

graph = helper.make_graph(
    [helper.make_node("NonZero", ["x"], ["nz"], name="nonzero"),
     helper.make_node("Cast", ["nz"], ["c"], name="cast", to=TensorProto.FLOAT)], "consumer", [x],
    [helper.make_tensor_value_info("c", TensorProto.FLOAT, None)])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
          sys.argv[1] + "/consumer.onnx")
