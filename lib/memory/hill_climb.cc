// Hill climbing over the order in which buffers are placed: a local search that starts from a
// greedy plan and keeps each reordering that does not grow the arena.
#include <algorithm>
#include <utility>

#include "placement.h"

namespace kiln::placement {
namespace {

/// SplitMix64: a tiny generator whose sequence is fixed by its definition. std::mt19937 is too,
/// but the standard distributions over it differ between library implementations, and plans
/// must be the same wherever the compiler runs.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  /// A number in [0, n), n > 0. The modulo bias is irrelevant for picking moves.
  size_t below(size_t n) { return size_t(next() % n); }

 private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

constexpr uint64_t kSeed = 0x6b696c6e;  // "kiln"
// Tries per buffer, and a cap on the work (buffers looked at; about 0.1 s) so that large graphs,
// where one re-placement costs O(buffers x overlapping buffers), stay fast. Both bounds are
// deterministic, unlike a clock.
constexpr int64_t kTriesPerBuffer = 8;
constexpr int64_t kWorkBudget = int64_t(1) << 22;

}  // namespace

ArenaPlan climbFrom(const SizedRequests& sized, const OrderedPlan& start) {
  ArenaPlan best = start.plan;
  best.planner = "hill-climb";
  // Empty buffers take no space; moving them would only waste tries.
  std::vector<size_t> order;
  for (size_t i : start.order)
    if (sized.bytes[i] > 0) order.push_back(i);
  const size_t n = order.size();
  if (n < 2 || best.arenaBytes <= sized.lowerBound) return best;

  // Buffers that end at the top of the arena are what a better plan must move; counting them
  // breaks ties between equal arenas, so the search walks plateaus toward fewer of them.
  auto topCount = [&](const std::vector<int64_t>& offsets, int64_t arena) {
    int64_t count = 0;
    for (size_t i : order) count += offsets[i] + sized.bytes[i] == arena;
    return count;
  };
  std::vector<int64_t> offsets = best.offsets;
  int64_t arena = best.arenaBytes;
  int64_t tops = topCount(offsets, arena);

  SplitMix64 rng(kSeed);
  ArenaLayout layout(sized);
  std::vector<size_t> candidate;
  std::vector<size_t> topPositions;
  std::vector<int64_t> trial;
  const int64_t tries = kTriesPerBuffer * int64_t(n);
  // Each try also copies and scans the order a few times: count that with the placement work.
  auto spent = [&](int64_t t) { return layout.work() + t * 4 * int64_t(n); };
  for (int64_t t = 0; t < tries && spent(t) < kWorkBudget && arena > sized.lowerBound; ++t) {
    candidate = order;
    size_t from;  // the first position whose buffer changes; those before keep their offsets
    topPositions.clear();
    for (size_t k = 1; k < n; ++k)
      if (offsets[order[k]] + sized.bytes[order[k]] == arena) topPositions.push_back(k);
    if (rng.below(2) == 0 && !topPositions.empty()) {
      // Place a top buffer earlier, before some of the buffers that pushed it up.
      size_t pos = topPositions[rng.below(topPositions.size())];
      from = rng.below(pos);
      std::rotate(candidate.begin() + from, candidate.begin() + pos, candidate.begin() + pos + 1);
    } else {
      size_t a = rng.below(n), b = rng.below(n);
      if (a == b) continue;
      std::swap(candidate[a], candidate[b]);
      from = std::min(a, b);
    }
    layout.reset(std::span(candidate).first(from), offsets);
    trial = offsets;
    bool outgrown = false;
    for (size_t k = from; k < n && !outgrown; ++k) {
      Expected<int64_t> offset = layout.place(candidate[k], start.choice);
      // A trial that outgrows the current arena (or int64) cannot be kept: stop placing it.
      outgrown = !offset.ok() || layout.end() > arena;
      if (!outgrown) trial[candidate[k]] = *offset;
    }
    if (outgrown) continue;
    int64_t trialArena = layout.end();
    int64_t trialTops = topCount(trial, trialArena);
    if (trialArena == arena && trialTops > tops) continue;
    order.swap(candidate);
    offsets.swap(trial);
    arena = trialArena;
    tops = trialTops;
  }
  best.offsets = std::move(offsets);
  best.arenaBytes = arena;
  return best;
}

}  // namespace kiln::placement
