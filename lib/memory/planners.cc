// The greedy-by-breadth and best-fit planners, and planArenaBest, which keeps the best of all.
#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <utility>

#include "kiln/memory/plan.h"
#include "kiln/support/checked_math.h"
#include "placement.h"

namespace kiln {
namespace {

using placement::GapChoice;
using placement::OrderedPlan;
using placement::SizedRequests;

constexpr std::array<std::string_view, 4> kPlannerNames = {"greedy-by-size", "greedy-by-breadth",
                                                           "best-fit", "hill-climb"};

/// Greedy-by-breadth's placement order. Every buffer is live at its own first step, and the
/// buffers live at any step are all live at the latest first step at or before it, so ranking
/// only the first steps visits every buffer and every maximal live set.
std::vector<size_t> orderByBreadth(const SizedRequests& sized) {
  std::span<const BufferRequest> requests = sized.requests;
  const size_t n = requests.size();
  std::vector<size_t> bySize = placement::orderBySize(requests);
  std::vector<size_t> sizeRank(n);
  for (size_t k = 0; k < n; ++k) sizeRank[bySize[k]] = k;

  // One sweep over starts and ends gives each first step's breadth.
  std::vector<size_t> byFirst(n), byLast(n);
  std::iota(byFirst.begin(), byFirst.end(), size_t{0});
  std::iota(byLast.begin(), byLast.end(), size_t{0});
  std::sort(byFirst.begin(), byFirst.end(), [&](size_t a, size_t b) {
    return requests[a].firstStep != requests[b].firstStep
               ? requests[a].firstStep < requests[b].firstStep
               : a < b;
  });
  std::sort(byLast.begin(), byLast.end(),
            [&](size_t a, size_t b) { return requests[a].lastStep < requests[b].lastStep; });
  struct Step {
    int64_t step;
    size_t starter;  // a buffer that starts at this step: every buffer live here meets it
    __extension__ __int128 breadth;  // cannot overflow: that would take 2^64 buffers
  };
  std::vector<Step> steps;
  __extension__ __int128 live = 0;
  for (size_t a = 0, e = 0; a < n;) {
    const int64_t step = requests[byFirst[a]].firstStep;
    Step s{step, byFirst[a], 0};
    for (; a < n && requests[byFirst[a]].firstStep == step; ++a) live += sized.bytes[byFirst[a]];
    for (; e < n && requests[byLast[e]].lastStep < step; ++e) live -= sized.bytes[byLast[e]];
    s.breadth = live;
    steps.push_back(s);
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    return a.breadth != b.breadth ? a.breadth > b.breadth : a.step < b.step;
  });

  std::vector<size_t> order;
  order.reserve(n);
  std::vector<bool> queued(n, false);
  std::vector<size_t> atStep;
  for (const Step& s : steps) {
    if (order.size() == n) break;
    atStep.clear();
    auto consider = [&](size_t i) {
      if (!queued[i] && requests[i].firstStep <= s.step && s.step <= requests[i].lastStep)
        atStep.push_back(i);
    };
    consider(s.starter);
    if (sized.hasNeighbors()) {
      for (uint32_t i : sized.neighbors(s.starter)) consider(i);
    } else {
      for (size_t i = 0; i < n; ++i)
        if (i != s.starter) consider(i);
    }
    std::sort(atStep.begin(), atStep.end(),
              [&](size_t x, size_t y) { return sizeRank[x] < sizeRank[y]; });
    for (size_t i : atStep) {
      queued[i] = true;
      order.push_back(i);
    }
  }
  return order;
}

/// Runs the greedy planners in kPlannerNames order. With `stopAtBound`, stops after the first
/// plan that meets the lower bound: a later one can only tie, and ties go to the earlier.
Expected<std::vector<OrderedPlan>> greedyPlans(const SizedRequests& sized, bool stopAtBound) {
  std::vector<size_t> bySize = placement::orderBySize(sized.requests);
  struct Recipe {
    std::string_view name;
    bool byBreadth;  // else by size
    GapChoice choice;
  };
  const Recipe recipes[] = {{kPlannerNames[0], false, GapChoice::kFirstFit},
                            {kPlannerNames[1], true, GapChoice::kBestFit},
                            {kPlannerNames[2], false, GapChoice::kBestFit}};
  std::vector<OrderedPlan> plans;
  for (const Recipe& recipe : recipes) {
    OrderedPlan p;
    p.order = recipe.byBreadth ? orderByBreadth(sized) : bySize;
    p.choice = recipe.choice;
    KILN_ASSIGN_OR_RETURN(
        p.plan, placement::placeInOrder(sized, p.order, p.choice, std::string(recipe.name)));
    bool atBound = p.plan.arenaBytes <= sized.lowerBound;
    plans.push_back(std::move(p));
    if (stopAtBound && atBound) break;
  }
  return plans;
}

/// The smallest arena among `plans`, the earliest on ties.
const OrderedPlan& smallest(const std::vector<OrderedPlan>& plans) {
  const OrderedPlan* best = &plans.front();
  for (const OrderedPlan& p : plans)
    if (p.plan.arenaBytes < best->plan.arenaBytes) best = &p;
  return *best;
}

}  // namespace

Expected<ArenaPlan> planArenaGreedyByBreadth(std::span<const BufferRequest> requests,
                                             int64_t alignment) {
  KILN_ASSIGN_OR_RETURN(SizedRequests sized, placement::sizeRequests(requests, alignment));
  return placement::placeInOrder(sized, orderByBreadth(sized), GapChoice::kBestFit,
                                 std::string(kPlannerNames[1]));
}

Expected<ArenaPlan> planArenaBestFit(std::span<const BufferRequest> requests, int64_t alignment) {
  KILN_ASSIGN_OR_RETURN(SizedRequests sized, placement::sizeRequests(requests, alignment));
  return placement::placeInOrder(sized, placement::orderBySize(requests), GapChoice::kBestFit,
                                 std::string(kPlannerNames[2]));
}

Expected<ArenaPlan> planArenaHillClimb(std::span<const BufferRequest> requests, int64_t alignment) {
  KILN_ASSIGN_OR_RETURN(SizedRequests sized, placement::sizeRequests(requests, alignment));
  KILN_ASSIGN_OR_RETURN(std::vector<OrderedPlan> plans, greedyPlans(sized, false));
  return placement::climbFrom(sized, smallest(plans));
}

std::span<const std::string_view> arenaPlannerNames() {
  return kPlannerNames;
}

Expected<ArenaPlan> planArenaBest(std::span<const BufferRequest> requests, int64_t alignment) {
  KILN_ASSIGN_OR_RETURN(SizedRequests sized, placement::sizeRequests(requests, alignment));
  KILN_ASSIGN_OR_RETURN(std::vector<OrderedPlan> plans, greedyPlans(sized, true));
  const OrderedPlan& best = smallest(plans);
  if (best.plan.arenaBytes <= sized.lowerBound) return best.plan;
  // No greedy plan met the bound, so all of them ran and the climb starts where
  // planArenaHillClimb's does: the result is exactly that planner's.
  ArenaPlan climbed = placement::climbFrom(sized, best);
  if (climbed.arenaBytes < best.plan.arenaBytes) return climbed;
  return best.plan;
}

}  // namespace kiln
