// Deferred value references for readers that may meet a use before its definition.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln::textir {

/// Collects references by name that could not be bound when read (a use before the
/// definition, a subgraph output naming an outer value) and binds them once the whole model
/// is built. Names resolve like Graph::findValue: the referring graph first, then its parents.
class ValueRefs {
 public:
  /// Input `index` of `node` names `name`; `where` prefixes the error if it never resolves.
  void deferInput(Node* node, size_t index, std::string name, std::string where);
  /// The outputs of `graph`, each a name and its `where`.
  void setOutputs(Graph* graph, std::vector<std::pair<std::string, std::string>> names);
  /// Binds everything recorded; fails on the first name that is not defined.
  Status resolve();

 private:
  struct PendingInput {
    Node* node;
    size_t index;
    std::string name, where;
  };
  struct PendingOutputs {
    Graph* graph;
    std::vector<std::pair<std::string, std::string>> names;
  };
  std::vector<PendingInput> inputs_;
  std::vector<PendingOutputs> outputs_;
};

}  // namespace kiln::textir
