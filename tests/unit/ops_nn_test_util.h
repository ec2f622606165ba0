// Test helper for op inference: builds a one-node graph from "f32[N,3,?]" style types and
// returns the inferred output types as text (or "error: ..."), so tests read like the spec.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"
#include "test_types.h"

namespace kiln::opstest {

/// One node input: a type such as "f32[N,3,224,224]" ("" omits the input), optionally with
/// a compile-time value (an initializer) given as integers or floats.
struct Arg {
  Arg(const char* t) : type(t) {}  // NOLINT: tests pass plain type strings
  Arg(const char* t, std::vector<int64_t> v) : type(t), ints(std::move(v)) {}
  Arg(const char* t, std::vector<float> v) : type(t), floats(std::move(v)) {}
  std::string type;
  std::optional<std::vector<int64_t>> ints;
  std::optional<std::vector<float>> floats;
};

/// Runs inference on `op` with the given inputs and attributes; returns the output types
/// separated by spaces, or "error: <message>".
inline std::string infer(const std::string& op, const std::vector<Arg>& args,
                         const std::map<std::string, Attribute>& attrs = {}, int outputs = 1) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (a.type.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    TensorType t = parseType(a.type);
    if (a.ints || a.floats) {
      std::vector<int64_t> dims = t.shape.staticDims();
      Tensor v = a.ints ? Tensor::fromVector(t.dtype, dims, *a.ints)
                        : Tensor::fromVector(t.dtype, dims, *a.floats);
      ins.push_back(*g.addInitializer(name, v));
    } else {
      ins.push_back(*g.addInput(name, t));
    }
  }
  std::vector<std::string> outNames;
  for (int i = 0; i < outputs; ++i) outNames.push_back("out" + std::to_string(i));
  Node* n = *g.addNode(op, "", "n", ins, outNames);
  for (const auto& [k, v] : attrs) n->setAttr(k, v);
  Status st = inferShapes(g, OpRegistry::builtin());
  if (!st.ok()) return "error: " + st.message();
  std::string out;
  for (int i = 0; i < outputs; ++i) out += (i ? " " : "") + toString(n->output(size_t(i))->type());
  return out;
}

/// The value inference computed for the node's first output, if any.
inline std::optional<Tensor> fold(const std::string& op, const std::vector<Arg>& args,
                                  const std::map<std::string, Attribute>& attrs = {}) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (a.type.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    TensorType t = parseType(a.type);
    std::vector<int64_t> dims = t.shape.staticDims();
    Tensor v = a.ints ? Tensor::fromVector(t.dtype, dims, *a.ints)
                      : Tensor::fromVector(t.dtype, dims, a.floats.value_or(std::vector<float>{}));
    ins.push_back(*g.addInitializer("in" + std::to_string(i), v));
  }
  Node* n = *g.addNode(op, "", "n", ins, {"out"});
  for (const auto& [k, v] : attrs) n->setAttr(k, v);
  KnownValues known;
  if (!inferShapes(g, OpRegistry::builtin(), {}, &known).ok()) return std::nullopt;
  auto it = known.find(n->output(0));
  if (it == known.end()) return std::nullopt;
  return it->second;
}

inline Attribute ints(std::vector<int64_t> v) {
  return Attribute(std::move(v));
}
inline Attribute i(int64_t v) {
  return Attribute(v);
}
inline Attribute f(float v) {
  return Attribute(v);
}
inline Attribute s(const char* v) {
  return Attribute(std::string(v));
}

}  // namespace kiln::opstest
