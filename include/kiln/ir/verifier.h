// Structural verifier: acyclic, defined-before-use, consistent use lists, unique names.
#pragma once

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln {

/// Checks a graph and its subgraphs: nodes in topological order (so acyclic), every input
/// defined in this graph or an enclosing one before its use, use lists matching inputs,
/// value names unique across the graph and its nested scopes, outputs defined, initializer
/// types matching their data. Returns the first problem found.
Status verifyGraph(const Graph& g);

}  // namespace kiln
