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

/// Infers dtype and shape of every value in the graph and its subgraphs, in node order.
/// An op missing from the registry fails with "unsupported op" naming the node. Inferred
/// types replace declared ones, except that a declared static dim refines an unknown one
/// and a conflict between a declared and inferred static dim is an error.
Status inferShapes(Graph& g, const OpRegistry& registry, const InferOptions& options = {},
                   KnownValues* known = nullptr);

/// Named symbolic (or unknown) dims left in the graph's inputs and outputs, e.g. "batch".
std::vector<std::string> unresolvedDims(const Graph& g);

}  // namespace kiln
