#!/usr/bin/python3
"""Writes hostile ONNX files that kiln must reject cleanly (exit 1, one line on stderr).

Usage: /usr/bin/python3 tests/bad_inputs/gen_bad_inputs.py OUT_DIR
Writes OUT_DIR/<case>.onnx for every case below, plus weights.bin (a 16-byte external-data file)
and cases.txt (one "<case>.onnx  <what it is>" line per case). Deterministic; rewrites each run.
OUT_DIR/limits/ holds models at and past the limits for check_limits.sh (some load, some run).
"""
import os
import random
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import raw_onnx

F32 = TensorProto.FLOAT


def model(nodes, inputs, outputs, initializers=(), opsets=(("", 13),), value_info=()):
    graph = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(initializers),
                              value_info=list(value_info))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets],
                          producer_name="kiln-bad-inputs")
    m.ir_version = 8
    return m.SerializeToString()


def vi(name, shape, dtype=F32):
    return helper.make_tensor_value_info(name, dtype, shape)


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [1, 4])],
                 [vi("y", [1, 4])], **kw)


def external_tensor(name, location, dims=(4,), offset=None, length=None):
    t = TensorProto(name=name, data_type=F32, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def add_with_initializer(tensor):
    """y = x + W, where W is the given (hostile) initializer."""
    return model([helper.make_node("Add", ["x", tensor.name], ["y"], name="add")],
                 [vi("x", [4])], [vi("y", [4])], initializers=[tensor])


def nested_if(depth):
    """An If whose then-branch holds an If ... `depth` levels deep."""
    def leaf(i):
        return helper.make_graph([helper.make_node("Identity", ["x"], [f"e{i}"])], f"e{i}", [],
                                 [vi(f"e{i}", [1])])

    inner = leaf(0)
    for i in range(1, depth):
        node = helper.make_node("If", ["c"], [f"o{i}"], then_branch=inner, else_branch=leaf(i))
        inner = helper.make_graph([node], f"g{i}", [], [vi(f"o{i}", [1])])
    top = helper.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=leaf(depth))
    return model([top], [vi("c", [], TensorProto.BOOL), vi("x", [1])], [vi("y", [1])])


def cases():
    good = relu_model()
    rng = random.Random(1234)
    c = {}
    c["empty"] = (b"", "a zero-byte file")
    c["truncated"] = (good[: len(good) // 2], "a valid model cut in half")
    c["random_bytes"] = (bytes(rng.randrange(256) for _ in range(4096)), "4 KiB of random bytes")
    c["cycle"] = (model([helper.make_node("Relu", ["b"], ["a"], name="n1"),
                         helper.make_node("Relu", ["a"], ["b"], name="n2")],
                        [vi("x", [1])], [vi("b", [1])]), "two nodes that read each other")
    c["undefined_value"] = (model([helper.make_node("Relu", ["nowhere"], ["y"], name="relu")],
                                  [vi("x", [1, 4])], [vi("y", [1, 4])]),
                            "a node reads a value nothing defines")
    c["duplicate_output"] = (model([helper.make_node("Relu", ["x"], ["y"], name="r1"),
                                    helper.make_node("Sigmoid", ["x"], ["y"], name="r2")],
                                   [vi("x", [4])], [vi("y", [4])]),
                             "two nodes write the same value name")
    c["negative_dim"] = (model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                               [vi("x", [1, -5])], [vi("y", [1, -5])]), "an input dim of -5")
    huge = TensorProto(name="W", data_type=F32, dims=[1 << 32, 1 << 32, 16])
    c["numel_overflow"] = (add_with_initializer(huge),
                           "an initializer of 2^32 x 2^32 x 16 elements (overflows 64 bits)")
    c["external_traversal"] = (add_with_initializer(external_tensor("W", "../../etc/passwd")),
                               "external data at ../../etc/passwd")
    c["external_absolute"] = (add_with_initializer(external_tensor("W", "/etc/passwd")),
                              "external data at an absolute path")
    c["external_missing"] = (add_with_initializer(external_tensor("W", "no_such_file.bin")),
                             "external data in a file that does not exist")
    c["external_out_of_range"] = (add_with_initializer(
        external_tensor("W", "weights.bin", offset=1000, length=16)),
        "external data past the end of weights.bin")
    short = TensorProto(name="W", data_type=F32, dims=[1000], raw_data=b"\0" * 8)
    c["raw_data_short"] = (add_with_initializer(short), "raw_data of 8 bytes for 1000 floats")
    ints = TensorProto(name="W", data_type=TensorProto.INT64, dims=[5], int64_data=[1, 2, 3])
    c["typed_data_short"] = (model([helper.make_node("Add", ["x", "W"], ["y"], name="add")],
                                   [vi("x", [5], TensorProto.INT64)],
                                   [vi("y", [5], TensorProto.INT64)], initializers=[ints]),
                             "int64_data of 3 values for dims [5]")
    evil = 'evil */ "quoted" \'single\' \\ back\nsecond line\r\x1b[31mred\x00nul'
    c["hostile_names"] = (model([helper.make_node("NoSuchOp", ["x"], [evil + "_out"], name=evil)],
                                [vi("x", [1])], [vi(evil + "_out", [1])]),
                          "an unknown op whose node and value names hold */, quotes, newlines, "
                          "an ANSI escape and a NUL")
    c["unknown_op"] = (model([helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")],
                             [vi("x", [1, 4])], [vi("y", [1, 4])]),
                       "an op that no ONNX opset defines")
    c["com_microsoft_op"] = (model([helper.make_node("FusedConv", ["x", "w"], ["y"], name="fc",
                                                     domain="com.microsoft")],
                                   [vi("x", [1, 1, 4, 4]), vi("w", [1, 1, 1, 1])],
                                   [vi("y", [1, 1, 4, 4])],
                                   opsets=(("", 13), ("com.microsoft", 1))),
                             "a com.microsoft contrib op (FusedConv)")
    c["opset_99"] = (relu_model(opsets=(("", 99),)), "default-domain opset 99")
    c["nested_if_100"] = (nested_if(100), "If subgraphs nested 100 deep")
    c["nested_if_10000"] = (raw_onnx.nested_if(10000),
                            "If subgraphs nested 10,000 deep (raw protobuf)")
    c["nested_messages_1000"] = (raw_onnx.nested_messages(1000),
                                 "graph > node > attribute > graph ... 1,000 messages deep, "
                                 "without If (raw protobuf)")
    shape = numpy_helper.from_array(np.array([1 << 32, 1 << 32, 16], np.int64), "shape")
    c["reshape_overflow"] = (model([helper.make_node("Reshape", ["x", "shape"], ["y"],
                                                     name="reshape")],
                                   [vi("x", [4])], [vi("y", None)], initializers=[shape]),
                             "a Reshape to [2^32, 2^32, 16] (the product overflows 64 bits)")
    return c


def loop_model(const_trip_count):
    """y = x + (number of iterations): a Loop with trip count 2^62, as a constant without a
    condition, or as graph inputs M and cond (data, given at run time)."""
    i64, b = TensorProto.INT64, TensorProto.BOOL
    one = numpy_helper.from_array(np.ones(1, np.float32), "one")
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "one"], ["acc_out"])], "body",
        [vi("iter", [], i64), vi("cond_in", [], b), vi("acc_in", [1])],
        [vi("cond_out", [], b), vi("acc_out", [1])], initializer=[one])
    if const_trip_count:
        trip = numpy_helper.from_array(np.array(1 << 62, np.int64), "M")
        return model([helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)],
                     [vi("x", [1])], [vi("y", [1])], initializers=[trip])
    return model([helper.make_node("Loop", ["M", "cond", "x"], ["y"], body=body)],
                 [vi("M", [], i64), vi("cond", [], b), vi("x", [1])], [vi("y", [1])])


def limit_cases():
    return {
        "chain_1m.onnx": raw_onnx.identity_chain(1_000_000),
        "chain_250k.onnx": raw_onnx.identity_chain(250_000),
        "loop_2p62_const.onnx": loop_model(True),
        "loop_2p62_input.onnx": loop_model(False),
    }


def write_limit_cases(out):
    os.makedirs(out)
    for name, data in limit_cases().items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    # Inputs of loop_2p62_input.onnx.
    for name, value in (("M", np.array(1 << 62, np.int64)), ("M5", np.array(5, np.int64)),
                        ("cond", np.array(True)),
                        ("x", np.zeros(1, np.float32))):
        np.save(os.path.join(out, name + ".npy"), value)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    listing = []
    for name, (data, what) in sorted(cases().items()):
        with open(os.path.join(tmp, name + ".onnx"), "wb") as f:
            f.write(data)
        listing.append(f"{name}.onnx  {what}")
    with open(os.path.join(tmp, "weights.bin"), "wb") as f:
        f.write(bytes(range(16)))
    with open(os.path.join(tmp, "cases.txt"), "w") as f:
        f.write("\n".join(listing) + "\n")
    write_limit_cases(os.path.join(tmp, "limits"))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    print(f"gen_bad_inputs: {len(listing)} hostile models in {out}")


if __name__ == "__main__":
    main()
