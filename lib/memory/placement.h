// Shared by the arena planners (internal to lib/memory): request checks, aligned sizes, and
// placing one buffer among the placed buffers whose lifetimes intersect its own.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kiln/memory/plan.h"

namespace kiln::placement {

/// `n` rounded up to a multiple of `alignment` (> 0), or nullopt on overflow.
std::optional<int64_t> alignUp(int64_t n, int64_t alignment);

bool lifetimesIntersect(const BufferRequest& a, const BufferRequest& b);

/// Fails, naming the buffer, on a negative size or an empty lifetime.
Status validateRequest(const BufferRequest& r, size_t index);

/// How a planner picks among the free gaps that can hold a buffer.
enum class GapChoice {
  kFirstFit,  ///< the lowest offset that fits
  kBestFit,   ///< the smallest gap between placed buffers that fits; above them all if none does
};

/// Requests that passed validation, with their sizes rounded up to the alignment and, when
/// there are not too many, the pairs whose lifetimes intersect. Every planner starts from one,
/// so this work is done once per planArenaBest.
struct SizedRequests {
  std::span<const BufferRequest> requests;
  std::vector<int64_t> bytes;  ///< bytes[i]: request i's size rounded up to `alignment`
  int64_t alignment = 1;
  int64_t lowerBound = 0;  ///< liveLowerBound(requests, alignment)

  /// Whether neighbors() is available. Lifetimes in a real schedule are short, so the pairs
  /// are few; when they are not (past a memory cap), callers scan all buffers instead.
  bool hasNeighbors() const { return !neighborStart.empty(); }
  /// The other requests whose lifetimes intersect request i's.
  std::span<const uint32_t> neighbors(size_t i) const {
    return std::span(neighborList)
        .subspan(neighborStart[i], neighborStart[i + 1] - neighborStart[i]);
  }
  std::vector<size_t> neighborStart;  // CSR offsets into neighborList; empty if not built
  std::vector<uint32_t> neighborList;
};

Expected<SizedRequests> sizeRequests(std::span<const BufferRequest> requests, int64_t alignment);

/// The buffers placed so far. Placing a buffer looks only at the placed buffers whose
/// lifetimes intersect its own (its neighbors when known), in order of offset.
class ArenaLayout {
 public:
  explicit ArenaLayout(const SizedRequests& sized)
      : sized_(&sized), offset_(sized.requests.size(), 0), placed_(sized.requests.size(), false) {}

  /// Chooses an offset for buffer `i` by `choice` and records it there. Empty buffers overlap
  /// nothing and go to offset 0 without being recorded. Fails if the offset would overflow.
  Expected<int64_t> place(size_t i, GapChoice choice);

  /// Forgets every placed buffer, then records buffers[k] at offsets[buffers[k]] (as a
  /// previous place() chose): how the hill climber keeps the unchanged prefix of an order.
  void reset(std::span<const size_t> buffers, std::span<const int64_t> offsets);

  /// The end of the highest placed buffer: the arena size the layout needs so far.
  int64_t end() const { return end_; }

  /// How many buffers the place() calls so far have looked at; planners that iterate budget
  /// their work by it, which keeps them deterministic (unlike a clock).
  int64_t work() const { return work_; }

 private:
  void record(size_t i, int64_t offset);

  const SizedRequests* sized_;
  std::vector<int64_t> offset_;
  std::vector<bool> placed_;
  std::vector<size_t> placedList_;  // the placed non-empty buffers, in placement order
  struct Span {
    int64_t offset, end;
  };
  std::vector<Span> conflicts_;  // scratch for place(), kept to reuse its capacity
  int64_t end_ = 0;
  int64_t work_ = 0;
};

/// Places the buffers in `order` (every request index exactly once) one after another.
Expected<ArenaPlan> placeInOrder(const SizedRequests& sized, std::span<const size_t> order,
                                 GapChoice choice, std::string planner);

/// Request indices by decreasing size, ties by earlier first step, then by index.
std::vector<size_t> orderBySize(std::span<const BufferRequest> requests);

/// A plan with the placement order and gap rule that produced it, so that a local search can
/// continue from it.
struct OrderedPlan {
  std::vector<size_t> order;
  GapChoice choice = GapChoice::kFirstFit;
  ArenaPlan plan;
};

/// Hill climbing over `start`'s placement order (hill_climb.cc). The result is named
/// "hill-climb" and its arena is never larger than start's.
ArenaPlan climbFrom(const SizedRequests& sized, const OrderedPlan& start);

}  // namespace kiln::placement
