// Placing buffers across several memories (e.g. a small fast TCM and a larger SRAM).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kiln/memory/plan.h"
#include "kiln/support/status.h"

namespace kiln {

/// One memory the buffers may live in, fastest first in the list given to planPools.
struct MemoryPool {
  std::string name;
  int64_t capacityBytes = 0;
};

/// Which pool each buffer lives in and where.
struct PoolPlan {
  std::vector<int> pool;              ///< pool[i]: index of request i's pool
  std::vector<int64_t> offsets;       ///< offsets[i]: request i's offset inside its pool
  std::vector<int64_t> usedBytes;     ///< per pool: its arena size (<= its capacity)
  std::vector<std::string> planners;  ///< per pool: the planner whose placement was kept
  int64_t lowerBoundBytes = 0;        ///< liveLowerBound of all requests
};

/// Places every request in one of `pools`, largest benefit first: each buffer, in order of
/// decreasing `benefit[i]` (e.g. how often it is read; ties: the smaller first), goes to the
/// first pool where it still fits at the lowest free offset. Each pool's buffers are then
/// re-planned with planArenaBest when that packs them tighter. Deterministic. Fails, saying
/// how many bytes are missing, when some buffer fits in no pool.
Expected<PoolPlan> planPools(std::span<const BufferRequest> requests,
                             std::span<const int64_t> benefit, std::span<const MemoryPool> pools,
                             std::span<const std::string> labels, int64_t alignment = 64);

}  // namespace kiln
