// Placing one buffer among already placed ones (first or best fit), shared by every planner.
#include "placement.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

#include "kiln/support/checked_math.h"

namespace kiln::placement {

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

namespace {

// Past this many neighbor entries (4 bytes each) the planners scan instead: slower, but the
// memory stays bounded when a hostile or odd schedule makes every lifetime overlap.
constexpr size_t kMaxNeighborEntries = size_t(1) << 23;

/// Fills sized.neighbors, unless there would be more than kMaxNeighborEntries.
void findNeighbors(SizedRequests& sized) {
  std::span<const BufferRequest> r = sized.requests;
  const size_t n = r.size();
  if (n >= std::numeric_limits<uint32_t>::max()) return;
  std::vector<size_t> byFirst(n);
  std::iota(byFirst.begin(), byFirst.end(), size_t{0});
  std::sort(byFirst.begin(), byFirst.end(), [&](size_t a, size_t b) {
    return r[a].firstStep != r[b].firstStep ? r[a].firstStep < r[b].firstStep : a < b;
  });
  // A buffer meets exactly those that start after it (in this order) and no later than its
  // last step: each pair is found once, from its earlier-starting side.
  auto forEachPair = [&](auto&& visit) {
    for (size_t a = 0; a < n; ++a)
      for (size_t b = a + 1; b < n && r[byFirst[b]].firstStep <= r[byFirst[a]].lastStep; ++b)
        if (!visit(byFirst[a], byFirst[b])) return;
  };
  std::vector<size_t> degree(n, 0);
  size_t entries = 0;
  forEachPair([&](size_t i, size_t j) {
    ++degree[i];
    ++degree[j];
    entries += 2;
    return entries <= kMaxNeighborEntries;
  });
  if (entries > kMaxNeighborEntries) return;
  sized.neighborStart.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) sized.neighborStart[i + 1] = sized.neighborStart[i] + degree[i];
  sized.neighborList.resize(entries);
  std::vector<size_t> fill(sized.neighborStart.begin(), sized.neighborStart.end() - 1);
  forEachPair([&](size_t i, size_t j) {
    sized.neighborList[fill[i]++] = uint32_t(j);
    sized.neighborList[fill[j]++] = uint32_t(i);
    return true;
  });
}

}  // namespace

Expected<SizedRequests> sizeRequests(std::span<const BufferRequest> requests, int64_t alignment) {
  if (alignment <= 0) return makeError("arena alignment must be positive, got {}", alignment);
  SizedRequests sized;
  sized.requests = requests;
  sized.alignment = alignment;
  sized.bytes.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    KILN_RETURN_IF_ERROR(validateRequest(requests[i], i));
    auto r = alignUp(requests[i].bytes, alignment);
    if (!r)
      return makeError("buffer {}: {} bytes overflows int64 when aligned to {}", i,
                       requests[i].bytes, alignment);
    sized.bytes[i] = *r;
  }
  sized.lowerBound = liveLowerBound(requests, alignment);
  findNeighbors(sized);
  return sized;
}

Expected<int64_t> ArenaLayout::place(size_t i, GapChoice choice) {
  const int64_t size = sized_->bytes[i];
  if (size == 0) return int64_t{0};  // an empty buffer overlaps nothing
  conflicts_.clear();
  auto consider = [&](size_t j) {
    if (placed_[j]) conflicts_.push_back({offset_[j], offset_[j] + sized_->bytes[j]});
  };
  if (sized_->hasNeighbors()) {
    std::span<const uint32_t> neighbors = sized_->neighbors(i);
    work_ += int64_t(neighbors.size()) + 1;
    for (uint32_t j : neighbors) consider(j);
  } else {
    work_ += int64_t(placedList_.size()) + 1;
    for (size_t j : placedList_)
      if (lifetimesIntersect(sized_->requests[j], sized_->requests[i])) consider(j);
  }
  std::sort(conflicts_.begin(), conflicts_.end(), [](const Span& a, const Span& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.end < b.end;
  });

  // Conflicts may overlap one another in memory (their own lifetimes need not meet), so a gap
  // starts at the highest end seen so far.
  int64_t top = 0;
  std::optional<int64_t> best;
  int64_t bestGap = 0;
  for (const Span& c : conflicts_) {
    int64_t gap = c.offset - top;
    if (gap >= size) {
      if (choice == GapChoice::kFirstFit) {
        best = top;
        break;
      }
      if (!best || gap < bestGap) {
        best = top;
        bestGap = gap;
      }
    }
    top = std::max(top, c.end);
  }
  int64_t offset = best.value_or(top);
  if (!checkedAdd(offset, size))
    return makeError(
        "buffer {}: arena offset overflows int64 ({} + {} bytes); the model "
        "needs more memory than can be addressed",
        i, offset, size);
  record(i, offset);
  return offset;
}

void ArenaLayout::record(size_t i, int64_t offset) {
  offset_[i] = offset;
  placed_[i] = true;
  placedList_.push_back(i);
  end_ = std::max(end_, offset + sized_->bytes[i]);
}

void ArenaLayout::reset(std::span<const size_t> buffers, std::span<const int64_t> offsets) {
  for (size_t j : placedList_) placed_[j] = false;
  placedList_.clear();
  end_ = 0;
  for (size_t i : buffers)
    if (sized_->bytes[i] > 0) record(i, offsets[i]);
}

Expected<ArenaPlan> placeInOrder(const SizedRequests& sized, std::span<const size_t> order,
                                 GapChoice choice, std::string planner) {
  ArenaPlan plan;
  plan.planner = std::move(planner);
  plan.offsets.assign(sized.requests.size(), 0);
  ArenaLayout layout(sized);
  for (size_t i : order) {
    KILN_ASSIGN_OR_RETURN(plan.offsets[i], layout.place(i, choice));
  }
  plan.arenaBytes = layout.end();  // every end is aligned, so the arena size is too
  plan.lowerBoundBytes = sized.lowerBound;
  return plan;
}

std::vector<size_t> orderBySize(std::span<const BufferRequest> requests) {
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const BufferRequest& ra = requests[a];
    const BufferRequest& rb = requests[b];
    if (ra.bytes != rb.bytes) return ra.bytes > rb.bytes;
    if (ra.firstStep != rb.firstStep) return ra.firstStep < rb.firstStep;
    return a < b;
  });
  return order;
}

}  // namespace kiln::placement
