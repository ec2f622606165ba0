#!/usr/bin/python3
"""Writes manifest.json for a generated ONNX node-test tree: per test, its ops and I/O kinds.

Usage: /usr/bin/python3 scripts/node_test_manifest.py ROOT   (ROOT holds node/<test>/model.onnx)
tests/conformance/node_import_test.cc reads it to attribute results to ops and to recognise
tests whose inputs or outputs are sequences or optionals, which kiln's tensor IR does not carry.
"""
import json
import os
import sys

import onnx


def value_kind(value_info):
    kind = value_info.type.WhichOneof("value") or "unknown"
    return kind[:-len("_type")] if kind.endswith("_type") else kind


def describe(model_path):
    model = onnx.load(model_path)
    graph = model.graph
    ops = sorted({(n.domain + "." if n.domain not in ("", "ai.onnx") else "") + n.op_type
                  for n in graph.node})
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return {
        "ops": ops,
        "opset": opset,
        "inputs": [{"name": v.name, "kind": value_kind(v)} for v in graph.input],
        "outputs": [{"name": v.name, "kind": value_kind(v)} for v in graph.output],
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    node_dir = os.path.join(root, "node")
    tests = {}
    for name in sorted(os.listdir(node_dir)):
        path = os.path.join(node_dir, name, "model.onnx")
        if os.path.isfile(path):
            tests[name] = describe(path)
    tmp = os.path.join(root, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"onnx_version": onnx.__version__, "tests": tests}, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(root, "manifest.json"))
    print(f"node_test_manifest: {len(tests)} tests described in {root}/manifest.json")


if __name__ == "__main__":
    main()
