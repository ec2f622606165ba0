// Arena layout: the live-size lower bound, the greedy-by-size planner, and the plan checker.
#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <utility>

#include "kiln/memory/plan.h"
#include "kiln/support/checked_math.h"
#include "placement.h"

namespace kiln {
namespace {

using placement::alignUp;
using placement::validateRequest;

constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

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
  KILN_ASSIGN_OR_RETURN(placement::SizedRequests sized,
                        placement::sizeRequests(requests, alignment));
  return placement::placeInOrder(sized, placement::orderBySize(requests),
                                 placement::GapChoice::kFirstFit, "greedy-by-size");
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
