// Whole-graph type and shape inference, evaluating compile-time-known shape subgraphs.
#pragma once

#include <map>
#include <string>

#include <unordered_map>

#include "kiln/ir/graph.h"
#include "kiln/ops/registry.h"

namespace kiln {

/// Values known at compile time: initializers, Constant outputs, and small results of
/// evaluating ops whose inputs are all known (Shape→Gather→Concat chains).
using KnownValues = std::unordered_map<const Value*, Tensor>;

struct InferOptions {
  /// Largest tensor (elements) evaluated during inference to resolve shapes.
  int64_t maxEvalElements = 1 << 16;
  /// --max-dim: a bound for the dims of a value (by name) that the data decides, where no op
  /// gives one (Range on run-time inputs); such dims become Dim::bounded.
  std::map<std::string, int64_t> maxDims;
};

/// A dim only the data decides at run time (Range on run-time inputs) is a symbol made by
/// dataDimSymbol. When such a dim reaches a declared static size (the model's declared
/// output shape) through ops that keep it, inference binds the symbol to that size and infers
/// again: the values in between become static, and the op that makes the dim checks at run
/// time that the data gives that size (KILN_ERR_DATA otherwise).
inline std::string dataDimSymbol(const std::string& valueName) {
  return "runtime:" + valueName;
}
inline bool isDataDimSymbol(const std::string& symbol) {
  return symbol.starts_with("runtime:");
}

/// Infers dtype and shape of every value in the graph and its subgraphs, in node order.
/// An op missing from the registry fails with "unsupported op" naming the node. Inferred
/// types replace declared ones, except that a declared static dim refines an unknown one
/// and a conflict between a declared and inferred static dim is an error.
Status inferShapes(Graph& g, const OpRegistry& registry, const InferOptions& options = {},
                   KnownValues* known = nullptr);

/// Named symbolic (or unknown) dims left in the graph's inputs and outputs, e.g. "batch".
std::vector<std::string> unresolvedDims(const Graph& g);

}  // namespace kiln
