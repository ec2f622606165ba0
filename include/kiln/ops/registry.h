// The op registry: one definition per op carrying schema, type inference and evaluation.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/emit.h"
#include "kiln/support/status.h"

namespace kiln {

/// Input/output arity and attributes an op accepts.
/// Core ops use ONNX names with the newest opset's semantics (inputs where the newest opset
/// takes inputs, e.g. Squeeze axes, Slice starts); the frontend rewrites older forms.
struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  bool required = false;
};
struct OpSchema {
  int minInputs = 0;
  int maxInputs = 0;  ///< -1: variadic
  int minOutputs = 1;
  int maxOutputs = 1;  ///< -1: variadic
  std::vector<AttrSpec> attrs;
};

/// What an op's type inference sees.
class InferContext {
 public:
  using SubgraphInfer =
      std::function<Expected<std::vector<TensorType>>(Graph&, const std::vector<TensorType>&)>;
  InferContext(const Node& node, std::vector<TensorType> inputs, std::vector<const Tensor*> values,
               SubgraphInfer subgraphInfer)
      : node_(node),
        inputs_(std::move(inputs)),
        values_(std::move(values)),
        subgraphInfer_(std::move(subgraphInfer)) {}

  const Node& node() const { return node_; }
  size_t numInputs() const { return inputs_.size(); }
  /// True when input i is present (not omitted).
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i].dtype != DType::Undefined; }
  const TensorType& in(size_t i) const { return inputs_[i]; }
  /// The input's value when known at compile time (initializer, Constant, folded shape math).
  const Tensor* value(size_t i) const { return i < values_.size() ? values_[i] : nullptr; }
  /// Infers a subgraph given its input types (sets them on the body's inputs).
  Expected<std::vector<TensorType>> inferSubgraph(Graph& body,
                                                  const std::vector<TensorType>& ins) const {
    return subgraphInfer_(body, ins);
  }
  /// An error prefixed with the node: "node 'n' (Op): <message>".
  template <typename... Args>
  Error error(fmt::format_string<Args...> f, Args&&... args) const {
    return Error(node_.describe() + ": " + fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const Node& node_;
  std::vector<TensorType> inputs_;
  std::vector<const Tensor*> values_;
  SubgraphInfer subgraphInfer_;
};

/// What an op's reference evaluation sees: every present input has a value.
class EvalContext {
 public:
  EvalContext(const Node& node, std::vector<const Tensor*> inputs)
      : node_(node), inputs_(std::move(inputs)) {}
  const Node& node() const { return node_; }
  size_t numInputs() const { return inputs_.size(); }
  bool has(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& in(size_t i) const { return *inputs_[i]; }
  template <typename... Args>
  Error error(fmt::format_string<Args...> f, Args&&... args) const {
    return Error(node_.describe() + ": " + fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
};

using InferFn = Expected<std::vector<TensorType>> (*)(const InferContext&);
using EvalFn = Expected<std::vector<Tensor>> (*)(const EvalContext&);

/// Every facet of one op. Facets other than schema and inference are optional.
struct OpDef {
  std::string name;
  std::string domain;
  OpSchema schema;
  InferFn inferTypes = nullptr;
  EvalFn evaluate = nullptr;  ///< reference evaluation, also used for constant folding
  EmitFn emit = nullptr;      ///< code generation: a call to a kernel

  /// True when every input the schema requires (index < minInputs) is present: the
  /// precondition of `evaluate`, which may read those inputs without checking.
  bool hasRequiredInputs(const Node& n) const {
    for (size_t i = 0; i < size_t(schema.minInputs > 0 ? schema.minInputs : 0); ++i)
      if (i >= n.numInputs() || !n.input(i)) return false;
    return true;
  }
};

/// Explicitly populated table of op definitions, keyed by (domain, name).
class OpRegistry {
 public:
  /// Registers an op class with static kName, schema(), inferTypes() and optionally
  /// kDomain, evaluate() and emit().
  template <typename Op>
  void add() {
    OpDef d;
    d.name = std::string(Op::kName);
    if constexpr (requires { Op::kDomain; }) d.domain = std::string(Op::kDomain);
    d.schema = Op::schema();
    d.inferTypes = &Op::inferTypes;
    if constexpr (requires { &Op::evaluate; }) d.evaluate = &Op::evaluate;
    if constexpr (requires { &Op::emit; }) d.emit = &Op::emit;
    addDef(std::move(d));
  }
  /// Registers a table row (used by elementwise families).
  void addDef(OpDef def);
  const OpDef* find(const std::string& domain, const std::string& name) const;
  /// Sets the emit facet of an already registered op (no-op when it is not registered).
  void setEmit(const std::string& domain, const std::string& name, EmitFn emit);
  std::vector<const OpDef*> all() const;

  /// The registry with every built-in op; built once, immutable afterwards.
  static const OpRegistry& builtin();

 private:
  std::map<std::pair<std::string, std::string>, OpDef> defs_;
};

/// Registration entry points, one per op family (lib/ops/<family>.cc).
void registerElementwiseOps(OpRegistry& r);
void registerActivationOps(OpRegistry& r);
void registerConvOps(OpRegistry& r);
void registerPoolOps(OpRegistry& r);
void registerMatMulOps(OpRegistry& r);
void registerNormOps(OpRegistry& r);
void registerReduceOps(OpRegistry& r);
void registerShapeOps(OpRegistry& r);
void registerTensorOps(OpRegistry& r);
void registerControlFlowOps(OpRegistry& r);
void registerMiscOps(OpRegistry& r);
/// The optimizer's fused ops in domain "kiln" (fused.cc).
void registerFusedOps(OpRegistry& r);
/// Emit facets for NN and data-movement ops (lib/ops/nn_emit.cc), attached after registration.
void attachNnEmitters(OpRegistry& r);

}  // namespace kiln
