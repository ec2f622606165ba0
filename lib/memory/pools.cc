// planPools: buffers across several memories, largest benefit first, first fit per pool.
#include "kiln/memory/pools.h"

#include <algorithm>
#include <numeric>

#include "placement.h"

namespace kiln {

Expected<PoolPlan> planPools(std::span<const BufferRequest> requests,
                             std::span<const int64_t> benefit, std::span<const MemoryPool> pools,
                             std::span<const std::string> labels, int64_t alignment) {
  if (pools.empty()) return makeError("no memory pools given");
  if (benefit.size() != requests.size() || labels.size() != requests.size())
    return makeError("planPools: one benefit and one label per request are needed");
  for (const auto& p : pools)
    if (p.capacityBytes < 0) return makeError("memory pool '{}' has a negative size", p.name);
  KILN_ASSIGN_OR_RETURN(placement::SizedRequests sized,
                        placement::sizeRequests(requests, alignment));
  PoolPlan plan;
  plan.lowerBoundBytes = sized.lowerBound;
  plan.pool.assign(requests.size(), -1);
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (benefit[a] != benefit[b]) return benefit[a] > benefit[b];
    return sized.bytes[a] < sized.bytes[b];
  });
  std::vector<placement::ArenaLayout> layouts(pools.size(), placement::ArenaLayout(sized));
  std::vector<std::vector<size_t>> members(pools.size());
  int64_t capacity = 0;
  for (const auto& p : pools) capacity += p.capacityBytes;
  for (size_t i : order) {
    int64_t shortest = INT64_MAX;  // the least any pool lacks for this buffer
    for (size_t k = 0; k < pools.size() && plan.pool[i] < 0; ++k) {
      KILN_ASSIGN_OR_RETURN(int64_t offset, layouts[k].place(i, placement::GapChoice::kFirstFit));
      if (layouts[k].end() <= pools[k].capacityBytes) {
        plan.pool[i] = int(k);
        plan.offsets[i] = offset;
        members[k].push_back(i);
      } else {
        shortest = std::min(shortest, layouts[k].end() - pools[k].capacityBytes);
        layouts[k].reset(members[k], plan.offsets);  // undo the trial placement
      }
    }
    if (plan.pool[i] < 0) {
      int64_t missing = std::max(sized.lowerBound - capacity, shortest);
      return makeError(
          "the model does not fit the memory pools: buffer '{}' ({} bytes) fits in none; at "
          "least {} more bytes are needed (all buffers need at least {} bytes at once, the pools "
          "hold {})",
          labels[i], requests[i].bytes, missing, sized.lowerBound, capacity);
    }
  }
  // Re-plan each pool's buffers with every planner; keep that plan where it is tighter.
  plan.usedBytes.assign(pools.size(), 0);
  plan.planners.assign(pools.size(), "first-fit by benefit");
  for (size_t k = 0; k < pools.size(); ++k) {
    plan.usedBytes[k] = layouts[k].end();
    std::vector<BufferRequest> sub;
    for (size_t i : members[k]) sub.push_back(requests[i]);
    auto best = planArenaBest(sub, alignment);
    if (best.ok() && best->arenaBytes < plan.usedBytes[k]) {
      for (size_t m = 0; m < members[k].size(); ++m) plan.offsets[members[k][m]] = best->offsets[m];
      plan.usedBytes[k] = best->arenaBytes;
      plan.planners[k] = best->planner;
    }
  }
  return plan;
}

}  // namespace kiln
