// Arena layout: the live-size lower bound, the greedy-by-size planner, and the plan checker.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <utility>

#include "kiln/memory/plan.h"
#include "kiln/support/checked_math.h"

namespace kiln {
namespace {

constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

/// `n` rounded up to a multiple of `alignment` (> 0), or nullopt on overflow.
std::optional<int64_t> alignUp(int64_t n, int64_t alignment) {
  int64_t rem = n % alignment;
  if (rem == 0) return n;
  return checkedAdd(n, alignment - rem);
}

bool lifetimesIntersect(const BufferRequest& a, const BufferRequest& b) {
  return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep;
}

Status validateRequest(const BufferRequest& r, size_t index) {
  if (r.bytes < 0)
    return makeError("buffer {}: negative size {} bytes; sizes must be >= 0", index, r.bytes);
  if (r.firstStep > r.lastStep)
    return makeError("buffer {}: first step {} is after last step {}; a lifetime must not be empty",
                     index, r.firstStep, r.lastStep);
  return Status();
}

}  // namespace

int64_t liveLowerBound(std::span<const BufferRequest> requests, int64_t alignment) {
  if (alignment <= 0) alignment = 1;
  // Sweep over lifetime starts and ends. At equal steps starts go first: lifetimes are
  // inclusive, so a buffer ending at step t is still live alongside one starting at t.
  struct Event {
    int64_t step;
    bool isEnd;
    int64_t bytes;
  };
  std::vector<Event> events;
  events.reserve(requests.size() * 2);
  for (const BufferRequest& r : requests) {
    if (r.bytes <= 0 || r.firstStep > r.lastStep) continue;
    int64_t bytes = alignUp(r.bytes, alignment).value_or(kMaxBytes);
    events.push_back({r.firstStep, false, bytes});
    events.push_back({r.lastStep, true, bytes});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.step != b.step ? a.step < b.step : (!a.isEnd && b.isEnd);
  });
  // A 128-bit running sum cannot overflow (that would take 2^64 buffers); clamp at the end.
  __extension__ typedef __int128 Wide;
  Wide live = 0, best = 0;
  for (const Event& e : events) {
    live += e.isEnd ? -Wide(e.bytes) : Wide(e.bytes);
    best = std::max(best, live);
  }
  return best > Wide(kMaxBytes) ? kMaxBytes : int64_t(best);
}

Expected<ArenaPlan> planArena(std::span<const BufferRequest> requests, int64_t alignment) {
  if (alignment <= 0) return makeError("arena alignment must be positive, got {}", alignment);
  std::vector<int64_t> rounded(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    KILN_RETURN_IF_ERROR(validateRequest(requests[i], i));
    auto r = alignUp(requests[i].bytes, alignment);
    if (!r)
      return makeError("buffer {}: {} bytes overflows int64 when aligned to {}", i,
                       requests[i].bytes, alignment);
    rounded[i] = *r;
  }

  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const BufferRequest& ra = requests[a];
    const BufferRequest& rb = requests[b];
    if (ra.bytes != rb.bytes) return ra.bytes > rb.bytes;
    if (ra.firstStep != rb.firstStep) return ra.firstStep < rb.firstStep;
    return a < b;
  });

  ArenaPlan plan;
  plan.planner = "greedy-by-size";
  plan.offsets.assign(requests.size(), 0);
  // Placed non-empty buffers, kept sorted by offset so each gap search is one linear scan.
  struct Placed {
    int64_t offset;
    int64_t end;  // offset + rounded size: the next aligned offset after the buffer
    size_t index;
  };
  std::vector<Placed> placed;
  std::vector<const Placed*> conflicts;
  int64_t arenaEnd = 0;
  for (size_t i : order) {
    if (rounded[i] == 0) continue;  // an empty buffer overlaps nothing; offset 0 is fine
    conflicts.clear();
    for (const Placed& p : placed)
      if (lifetimesIntersect(requests[p.index], requests[i])) conflicts.push_back(&p);
    // `placed` is sorted by offset, so `conflicts` is too: take the first gap that fits.
    int64_t offset = 0;
    for (const Placed* p : conflicts) {
      auto end = checkedAdd(offset, rounded[i]);
      if (!end) break;
      if (*end <= p->offset) break;
      offset = std::max(offset, p->end);
    }
    auto end = checkedAdd(offset, rounded[i]);
    if (!end)
      return makeError(
          "buffer {}: arena offset overflows int64 ({} + {} bytes); the model "
          "needs more memory than can be addressed",
          i, offset, rounded[i]);
    plan.offsets[i] = offset;
    arenaEnd = std::max(arenaEnd, *end);
    Placed entry{offset, *end, i};
    auto at =
        std::upper_bound(placed.begin(), placed.end(), entry,
                         [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    placed.insert(at, entry);
  }
  plan.arenaBytes = arenaEnd;  // every end is aligned, so the arena size is too
  plan.lowerBoundBytes = liveLowerBound(requests, alignment);
  return plan;
}

Status checkPlan(std::span<const BufferRequest> requests, const ArenaPlan& plan) {
  if (plan.offsets.size() != requests.size())
    return makeError("plan has {} offsets for {} buffers", plan.offsets.size(), requests.size());
  if (plan.arenaBytes < 0) return makeError("plan has negative arena size {}", plan.arenaBytes);
  std::vector<size_t> byStart;
  byStart.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    KILN_RETURN_IF_ERROR(validateRequest(requests[i], i));
    int64_t offset = plan.offsets[i];
    if (offset < 0) return makeError("buffer {}: negative offset {}", i, offset);
    auto end = checkedAdd(offset, requests[i].bytes);
    if (!end || *end > plan.arenaBytes)
      return makeError("buffer {}: [{}, +{}) does not fit in the {}-byte arena", i, offset,
                       requests[i].bytes, plan.arenaBytes);
    if (requests[i].bytes > 0) byStart.push_back(i);
  }
  // Sweep over time keeping the live buffers ordered by offset. The live set is pairwise
  // disjoint (we stop at the first overlap), so a new buffer can only overlap its neighbours.
  std::stable_sort(byStart.begin(), byStart.end(), [&](size_t a, size_t b) {
    return requests[a].firstStep < requests[b].firstStep;
  });
  std::map<int64_t, size_t> liveByOffset;
  auto endsLater = [&](size_t a, size_t b) { return requests[a].lastStep > requests[b].lastStep; };
  std::priority_queue<size_t, std::vector<size_t>, decltype(endsLater)> byEnd(endsLater);
  for (size_t i : byStart) {
    const BufferRequest& r = requests[i];
    while (!byEnd.empty() && requests[byEnd.top()].lastStep < r.firstStep) {
      liveByOffset.erase(plan.offsets[byEnd.top()]);
      byEnd.pop();
    }
    int64_t offset = plan.offsets[i];
    int64_t end = offset + r.bytes;  // checked above
    auto next = liveByOffset.lower_bound(offset);
    auto overlap = [&](size_t j) {
      return makeError(
          "buffers {} and {} are live together (steps [{}, {}] and [{}, {}]) but "
          "overlap in memory ([{}, {}) and [{}, {}))",
          j, i, requests[j].firstStep, requests[j].lastStep, r.firstStep, r.lastStep,
          plan.offsets[j], plan.offsets[j] + requests[j].bytes, offset, end);
    };
    if (next != liveByOffset.end() && next->first < end) return overlap(next->second);
    if (next != liveByOffset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + requests[prev->second].bytes > offset) return overlap(prev->second);
    }
    liveByOffset.emplace(offset, i);
    byEnd.push(i);
  }
  return Status();
}

}  // namespace kiln
