// Lifetimes of a graph's intermediate values over an op schedule, for the memory planner.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "kiln/ir/graph.h"
#include "kiln/memory/plan.h"

namespace kiln {
namespace {

/// Gives every node nested in `sub` the step of the top-level node that holds it, and records
/// outer values that a subgraph returns directly: those are reads the use lists do not show.
void mapNestedNodes(const Graph& sub, int64_t step,
                    std::unordered_map<const Node*, int64_t>& stepOf,
                    std::unordered_map<const Value*, int64_t>& outerReads) {
  for (const Value* out : sub.outputs())
    if (out && out->owner() != &sub) {
      auto [it, inserted] = outerReads.emplace(out, step);
      if (!inserted) it->second = std::max(it->second, step);
    }
  for (const auto& n : sub.nodes()) {
    stepOf.emplace(n.get(), step);
    for (const Graph* inner : n->subgraphs())
      if (inner) mapNestedNodes(*inner, step, stepOf, outerReads);
  }
}

std::string describeValue(const Value& v) {
  if (!v.producer()) return fmt::format("value '{}'", v.name());
  return fmt::format("value '{}' (output {} of {})", v.name(), v.producerIndex(),
                     v.producer()->describe());
}

Expected<int64_t> staticBytes(const Value& v) {
  const TensorType& t = v.type();
  if (dtypeBits(t.dtype) <= 0)
    return makeError(
        "{} has type {}, which has no fixed storage size; memory planning needs a "
        "numeric element type (run type inference first)",
        describeValue(v), toString(t));
  // Data-dependent dims (docs/dynamic-shapes.md) are planned at their bound.
  auto elements = t.shape.upperBoundElements();
  if (!t.shape.isBoundedOrStatic() || !elements)
    return makeError(
        "{} has non-static type {}; memory planning needs static shapes (run shape "
        "inference, or bind symbolic dims to sizes)",
        describeValue(v), toString(t));
  auto bytes = dtypeStorageBytes(t.dtype, *elements);
  if (!bytes)
    return makeError("{} of type {} is too large: its size overflows int64", describeValue(v),
                     toString(t));
  return *bytes;
}

}  // namespace

Expected<std::vector<ValueLifetime>> computeLifetimes(const Graph& g,
                                                      std::span<const Node* const> schedule) {
  std::unordered_map<const Node*, int64_t> stepOf;
  std::unordered_map<const Value*, int64_t> outerReads;
  for (size_t s = 0; s < schedule.size(); ++s) {
    const Node* n = schedule[s];
    if (!n) return makeError("schedule step {} is null; the schedule must list nodes", s);
    if (n->owner() != &g)
      return makeError("schedule step {}: {} is not a node of graph '{}'", s, n->describe(),
                       g.name());
    if (!stepOf.emplace(n, int64_t(s)).second)
      return makeError("schedule step {}: {} is scheduled twice", s, n->describe());
  }
  if (schedule.size() != g.numNodes())
    return makeError(
        "schedule lists {} nodes but graph '{}' has {}; every node must be scheduled "
        "exactly once",
        schedule.size(), g.name(), g.numNodes());
  for (size_t s = 0; s < schedule.size(); ++s)
    for (const Graph* sub : schedule[s]->subgraphs())
      if (sub) mapNestedNodes(*sub, int64_t(s), stepOf, outerReads);

  std::unordered_set<const Value*> graphOutputs(g.outputs().begin(), g.outputs().end());
  std::vector<ValueLifetime> out;
  for (size_t s = 0; s < schedule.size(); ++s) {
    const Node* n = schedule[s];
    for (const Value* v : n->outputs()) {
      if (!v || graphOutputs.count(v)) continue;
      ValueLifetime life{v, int64_t(s), int64_t(s), 0};
      for (const Use& use : v->uses()) {
        auto it = stepOf.find(use.node);
        if (it == stepOf.end())
          return makeError(
              "{} is read by {}, which is neither scheduled nor inside a scheduled "
              "node's subgraph",
              describeValue(*v), use.node->describe());
        if (it->second < life.firstStep)
          return makeError(
              "{} is read at schedule step {} by {} before it is defined at step {}; "
              "the schedule is not topological",
              describeValue(*v), it->second, use.node->describe(), life.firstStep);
        life.lastStep = std::max(life.lastStep, it->second);
      }
      if (auto it = outerReads.find(v); it != outerReads.end()) {
        if (it->second < life.firstStep)
          return makeError(
              "{} is returned by a subgraph at schedule step {}, before it is "
              "defined at step {}; the schedule is not topological",
              describeValue(*v), it->second, life.firstStep);
        life.lastStep = std::max(life.lastStep, it->second);
      }
      KILN_ASSIGN_OR_RETURN(life.bytes, staticBytes(*v));
      out.push_back(life);
    }
  }
  return out;
}

}  // namespace kiln
