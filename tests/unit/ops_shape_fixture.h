// One-node graphs for the shape/tensor/control-flow/misc op tests: types written as strings
// ("f32[N,3,?]"), inference through inferShapes, evaluation through the op's evaluate facet.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/infer.h"
#include "kiln/ops/registry.h"
#include "test_types.h"

namespace kiln::opstest {

inline Tensor i64s(std::vector<int64_t> v) {
  return Tensor::fromVector<int64_t>(DType::I64, {int64_t(v.size())}, v);
}
inline Tensor i64s(std::vector<int64_t> v, std::vector<int64_t> dims) {
  return Tensor::fromVector<int64_t>(DType::I64, std::move(dims), v);
}
inline Tensor f32s(std::vector<float> v, std::vector<int64_t> dims) {
  return Tensor::fromVector<float>(DType::F32, std::move(dims), v);
}
inline Tensor i64(int64_t v) {
  return Tensor::scalar<int64_t>(DType::I64, v);
}

inline Attribute ai(int64_t v) {
  return Attribute(v);
}
inline Attribute ais(std::vector<int64_t> v) {
  return Attribute(std::move(v));
}
inline Attribute astr(std::string v) {
  return Attribute(std::move(v));
}

/// A graph under construction with one node under test (more nodes may be chained).
class OpGraph {
 public:
  Graph g;
  KnownValues known;
  Node* node = nullptr;

  /// A graph input of the given type string.
  Value* in(const std::string& type) {
    return *g.addInput("in" + std::to_string(counter_++), parseType(type));
  }
  /// An initializer (a value known at compile time).
  Value* init(Tensor t) {
    return *g.addInitializer("c" + std::to_string(counter_++), std::move(t));
  }
  /// Appends a node; it becomes `node`.
  Node* op(const std::string& opType, std::vector<Value*> inputs, size_t numOutputs = 1) {
    std::vector<std::string> outs;
    for (size_t i = 0; i < numOutputs; ++i) outs.push_back("v" + std::to_string(counter_++));
    node = *g.addNode(opType, "", opType + std::to_string(counter_++), std::move(inputs), outs);
    return node;
  }
  /// Runs inference; returns "" or the error message.
  std::string run() {
    Status s = inferShapes(g, OpRegistry::builtin(), {}, &known);
    return s.ok() ? std::string() : s.message();
  }
  /// Runs inference and renders output i of the last node ("f32[N,3]"), or "error: ...".
  std::string infer(size_t i = 0) {
    std::string err = run();
    if (!err.empty()) return "error: " + err;
    return toString(node->output(i)->type());
  }
  std::string type(size_t i = 0) const { return toString(node->output(i)->type()); }
  /// The compile-time value of output i of the last node, if inference resolved it.
  const Tensor* value(size_t i = 0) const {
    auto it = known.find(node->output(i));
    return it == known.end() ? nullptr : &it->second;
  }

 private:
  int counter_ = 0;
};

/// Calls an op's evaluate facet on constant inputs (null entries are omitted inputs).
inline Expected<std::vector<Tensor>> evaluate(Node& n, const std::vector<const Tensor*>& ins) {
  const OpDef* def = OpRegistry::builtin().find(n.domain(), n.opType());
  if (!def || !def->evaluate) return makeError("no evaluate for {}", n.opType());
  // evaluate's precondition, as inference and constant folding enforce it.
  if (!def->hasRequiredInputs(n)) return makeError("a required input of {} is empty", n.opType());
  return def->evaluate(EvalContext(n, ins));
}

/// The elements of a tensor as int64 (for compact comparisons).
inline std::vector<int64_t> ints(const Tensor& t) {
  return t.toInts();
}
inline std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numElements(); ++i) v.push_back(t.doubleAt(i));
  return v;
}

}  // namespace kiln::opstest
