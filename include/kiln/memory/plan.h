// Static memory planning: buffer lifetimes over an op schedule, and their layout in one arena.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/support/status.h"

namespace kiln {

class Graph;
class Node;
class Value;

/// One buffer to place: its size and the schedule steps (indices into the op schedule) during
/// which it must hold its contents. Both steps are inclusive.
struct BufferRequest {
  int64_t bytes = 0;
  int64_t firstStep = 0;
  int64_t lastStep = 0;
};

/// Where each requested buffer lives inside one arena.
struct ArenaPlan {
  std::vector<int64_t> offsets;  ///< offsets[i] is the byte offset of request i
  int64_t arenaBytes = 0;        ///< arena size, a multiple of the plan's alignment
  int64_t lowerBoundBytes = 0;   ///< liveLowerBound() of the requests, for reporting
  std::string planner;           ///< which planner produced the offsets
};

/// The largest sum of sizes (each rounded up to `alignment`) of buffers live at the same step.
/// No plan can use a smaller arena. Malformed requests (negative size, firstStep > lastStep)
/// contribute nothing; the sum saturates at INT64_MAX rather than overflowing.
int64_t liveLowerBound(std::span<const BufferRequest> requests, int64_t alignment = 64);

/// Greedy-by-size placement (as in TFLite Micro): largest buffers first (ties by firstStep, then
/// request index), each at the lowest `alignment`-multiple offset that overlaps no placed buffer
/// whose lifetime intersects its own. Deterministic. Fails on malformed requests, a
/// non-positive alignment, or sizes that overflow int64.
Expected<ArenaPlan> planArena(std::span<const BufferRequest> requests, int64_t alignment = 64);

/// Greedy by breadth (Pisarchyk & Lee 2020, "Efficient Memory Management for Deep Neural Net
/// Inference"): steps in order of decreasing breadth (the sum of the sizes live at the step,
/// ties by earlier step); at each step its unplaced buffers, largest first, each at the
/// smallest gap between placed buffers that fits. Deterministic; fails as planArena does.
Expected<ArenaPlan> planArenaGreedyByBreadth(std::span<const BufferRequest> requests,
                                             int64_t alignment = 64);

/// Greedy by size with best-fit offsets (the same paper's "greedy by size for offset
/// calculation"): planArena's order, but each buffer takes the smallest gap that fits instead
/// of the lowest. Deterministic; fails as planArena does.
Expected<ArenaPlan> planArenaBestFit(std::span<const BufferRequest> requests,
                                     int64_t alignment = 64);

/// Local search over the placement order (as TVM USMP's hill climb): starts from the best of
/// the three greedy planners, then repeatedly moves a buffer that touches the top of the arena
/// earlier in the order or swaps two buffers, re-places, and keeps the change unless the arena
/// grows. Its work is bounded by the number of buffers and a fixed budget, and its pseudo-random
/// choices come from a fixed seed, so it is deterministic. Never worse than its start.
Expected<ArenaPlan> planArenaHillClimb(std::span<const BufferRequest> requests,
                                       int64_t alignment = 64);

/// The planners planArenaBest tries, in its order of preference on ties: "greedy-by-size",
/// "greedy-by-breadth", "best-fit", "hill-climb".
std::span<const std::string_view> arenaPlannerNames();

/// Runs every planner and keeps the smallest arena (ties: the earlier in arenaPlannerNames());
/// `planner` names the winner. Stops early once a plan meets the lower bound, which no later
/// planner can beat. Fails as planArena does.
Expected<ArenaPlan> planArenaBest(std::span<const BufferRequest> requests, int64_t alignment = 64);

/// Verifies a plan: one non-negative offset per request, every buffer inside arenaBytes, and no
/// two buffers with intersecting lifetimes sharing a byte. The message names the first conflict.
Status checkPlan(std::span<const BufferRequest> requests, const ArenaPlan& plan);

/// The lifetime of one intermediate value over a schedule.
struct ValueLifetime {
  const Value* value = nullptr;
  int64_t firstStep = 0;  ///< the step of the node that defines the value
  int64_t lastStep = 0;   ///< the step of its last reader (== firstStep if it is never read)
  int64_t bytes = 0;      ///< storage size from the value's static type
};

/// Lifetimes of the intermediate values of `g` (node outputs that are not graph outputs),
/// in the order of their defining nodes in `schedule` and then output index. `schedule` must
/// list every node of `g` exactly once, each after the producers of what it reads. A read by a
/// node inside a subgraph counts as a read by the node of `g` that holds the subgraph. Graph
/// inputs, graph outputs and initializers are excluded: the caller or the weights own them.
/// Fails, naming the value or node, on a dynamic shape or a malformed schedule.
Expected<std::vector<ValueLifetime>> computeLifetimes(const Graph& g,
                                                      std::span<const Node* const> schedule);

}  // namespace kiln
