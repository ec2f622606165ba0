// Operator reordering for memory: a topological order of a graph's nodes with a lower peak of
// live intermediate bytes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kiln/support/status.h"

namespace kiln {

class Graph;
class Node;

/// Bounds and units for scheduleForMemory.
struct ScheduleOptions {
  /// Sizes are rounded up to this before summing, as the arena planner does (see liveLowerBound).
  int64_t alignment = 64;
  /// Most ready-node evaluations per heuristic. A heuristic that would need more (a graph
  /// with very many nodes ready at once) is abandoned; the bound keeps the time deterministic.
  int64_t maxEvaluations = int64_t(1) << 24;
};

/// The peak of live intermediate bytes (liveLowerBound over computeLifetimes) of `schedule`.
/// Fails as computeLifetimes does.
Expected<int64_t> schedulePeakBytes(const Graph& g, std::span<const Node* const> schedule,
                                    int64_t alignment = 64);

/// A topological order of `g`'s nodes whose peak of live intermediate bytes (what no arena
/// plan can go below) is as low as a few greedy list schedulers find: among the nodes whose
/// inputs are ready, each prefers, in its own way, the node that frees the most bytes or
/// allocates the fewest, or finishes the branch it is on. The lowest peak wins; the original
/// order is returned unless one is strictly lower, so it never gets worse. A read inside a
/// node's subgraph counts as a read by that node. Deterministic; time about nodes x
/// heuristics x nodes ready at once. Fails, as computeLifetimes does, if `original` is not a
/// topological order of every node of `g` or a value has no static size.
Expected<std::vector<const Node*>> scheduleForMemory(const Graph& g,
                                                     std::span<const Node* const> original,
                                                     const ScheduleOptions& options = {});

}  // namespace kiln
