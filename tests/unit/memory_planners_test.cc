// The arena planners beyond greedy-by-size: hand-made cases with a known optimum, and property
// tests over random interval sets (valid plans, lower bound, planArenaBest never worse).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

#include "kiln/memory/plan.h"

namespace kiln {
namespace {

using Requests = std::vector<BufferRequest>;
using PlannerFn = Expected<ArenaPlan> (*)(std::span<const BufferRequest>, int64_t);

struct Planner {
  const char* name;
  PlannerFn plan;
};
// In arenaPlannerNames() order, which is planArenaBest's order of preference.
const Planner kPlanners[] = {{"greedy-by-size", planArena},
                             {"greedy-by-breadth", planArenaGreedyByBreadth},
                             {"best-fit", planArenaBestFit},
                             {"hill-climb", planArenaHillClimb}};

ArenaPlan run(PlannerFn planner, const Requests& r, int64_t alignment) {
  auto plan = planner(r, alignment);
  EXPECT_TRUE(plan.ok()) << plan.message();
  if (!plan.ok()) return {};
  EXPECT_TRUE(checkPlan(r, *plan).ok()) << checkPlan(r, *plan).message();
  return *plan;
}

/// The smallest arena any plan can have (alignment 1). Some order placed first-fit reaches it:
/// placing an optimal plan's buffers by increasing offset, each lands at or below its optimal
/// offset, so trying every order is exact. Small inputs only.
int64_t bruteForceOptimum(const Requests& r) {
  std::vector<size_t> order(r.size());
  std::iota(order.begin(), order.end(), size_t{0});
  int64_t best = std::numeric_limits<int64_t>::max();
  do {
    std::vector<int64_t> offset(r.size(), -1);
    int64_t top = 0;
    for (size_t i : order) {
      std::vector<std::pair<int64_t, int64_t>> taken;
      for (size_t j = 0; j < r.size(); ++j)
        if (offset[j] >= 0 && r[i].firstStep <= r[j].lastStep && r[j].firstStep <= r[i].lastStep)
          taken.push_back({offset[j], offset[j] + r[j].bytes});
      std::sort(taken.begin(), taken.end());
      int64_t at = 0;
      for (auto [begin, end] : taken) {
        if (at + r[i].bytes <= begin) break;
        at = std::max(at, end);
      }
      offset[i] = at;
      top = std::max(top, at + r[i].bytes);
    }
    best = std::min(best, top);
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

TEST(MemoryPlanners, NamesAreInPreferenceOrder) {
  auto names = arenaPlannerNames();
  ASSERT_EQ(names.size(), std::size(kPlanners));
  for (size_t k = 0; k < names.size(); ++k) {
    EXPECT_EQ(names[k], kPlanners[k].name);
    EXPECT_EQ(run(kPlanners[k].plan, {{8, 0, 1}, {8, 1, 2}}, 8).planner, kPlanners[k].name);
  }
}

TEST(MemoryPlanners, EveryPlannerSolvesAChain) {
  Requests r = {{100, 0, 1}, {100, 1, 2}, {100, 2, 3}, {100, 3, 4}};
  for (const Planner& p : kPlanners) {
    ArenaPlan plan = run(p.plan, r, 64);
    EXPECT_EQ(plan.arenaBytes, 256) << p.name;
    EXPECT_EQ(plan.lowerBoundBytes, 256) << p.name;
  }
  ArenaPlan best = run(planArenaBest, r, 64);
  EXPECT_EQ(best.arenaBytes, 256);
  EXPECT_EQ(best.planner, "greedy-by-size");  // the first at the bound wins the tie
}

// Cases where the planners differ: one greedy planner, or only the hill climb, reaches the
// lower bound (so the optimum). Every planner's arena (alignment 1), in kPlanners order.
struct KnownCase {
  const char* why;
  Requests requests;
  int64_t arenas[std::size(kPlanners)];
  const char* winner;  // planArenaBest's pick
};

const KnownCase kKnownCases[] = {
    {"Breadth order places the 3-byte buffer of steps 1..3 (at a wide step) before the 4-byte "
     "buffer of steps 3..5. Size order gives that 4-byte buffer offset 0 first, and the 3-byte "
     "one, live alongside it and another 4-byte buffer, has to go on top.",
     {{4, 3, 5}, {3, 1, 3}, {4, 0, 0}, {4, 0, 1}, {3, 2, 2}},
     {11, 8, 11, 8},
     "greedy-by-breadth"},
    {"Found by random search: the order of greedy-by-size, and only the choice of gap differs.",
     {{2, 5, 6},
      {4, 3, 5},
      {3, 4, 6},
      {3, 2, 4},
      {5, 2, 4},
      {1, 4, 6},
      {4, 3, 5},
      {1, 4, 6},
      {5, 4, 5},
      {6, 2, 3}},
     {27, 27, 26, 26},
     "best-fit"},
    {"The greedy orders place the two 4-byte buffers first, both at offset 0 (their lifetimes "
     "are disjoint), and the 2-byte buffers, live alongside both, stack on top. The optimum "
     "puts the 4-byte buffers at different offsets, which only a different order finds.",
     {{4, 3, 5}, {4, 0, 1}, {2, 2, 3}, {2, 1, 2}},
     {8, 8, 8, 6},
     "hill-climb"},
};

TEST(MemoryPlanners, KnownCasesWhereOnePlannerFindsTheOptimum) {
  for (const KnownCase& c : kKnownCases) {
    SCOPED_TRACE(c.why);
    const int64_t bound = liveLowerBound(c.requests, 1);
    EXPECT_EQ(*std::min_element(std::begin(c.arenas), std::end(c.arenas)), bound);
    for (size_t k = 0; k < std::size(kPlanners); ++k)
      EXPECT_EQ(run(kPlanners[k].plan, c.requests, 1).arenaBytes, c.arenas[k]) << kPlanners[k].name;
    ArenaPlan best = run(planArenaBest, c.requests, 1);
    EXPECT_EQ(best.arenaBytes, bound);
    EXPECT_EQ(best.planner, c.winner);
  }
  // The small cases are also checked against the exhaustive optimum.
  EXPECT_EQ(bruteForceOptimum(kKnownCases[0].requests), 8);
  EXPECT_EQ(bruteForceOptimum(kKnownCases[2].requests), 6);
}

TEST(MemoryPlanners, EveryPlannerRejectsBadRequests) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int64_t third = int64_t(1) << 62;
  for (const Planner& p : kPlanners) {
    SCOPED_TRACE(p.name);
    EXPECT_FALSE(p.plan(Requests{{-1, 0, 0}}, 64).ok());
    EXPECT_FALSE(p.plan(Requests{{8, 3, 2}}, 64).ok());
    EXPECT_FALSE(p.plan(Requests{{8, 0, 0}}, 0).ok());
    EXPECT_FALSE(p.plan(Requests{{kMax, 0, 0}}, 64).ok());
    auto sum = p.plan(Requests{{third, 0, 0}, {third, 0, 0}, {third, 0, 0}}, 64);
    ASSERT_FALSE(sum.ok());
    EXPECT_NE(sum.message().find("overflow"), std::string::npos) << sum.message();
    ArenaPlan empty = run(p.plan, {}, 64);
    EXPECT_EQ(empty.arenaBytes, 0);
    ArenaPlan zeros = run(p.plan, {{0, 0, 5}, {64, 0, 5}, {0, 2, 3}}, 64);
    EXPECT_EQ(zeros.arenaBytes, 64);
  }
  EXPECT_FALSE(planArenaBest(Requests{{-1, 0, 0}}, 64).ok());
  EXPECT_FALSE(planArenaBest(Requests{{8, 0, 0}}, -1).ok());
}

Requests randomRequests(std::mt19937& rng, size_t count) {
  Requests r(count);
  // Fewer steps than buffers, so that many lifetimes overlap and placement matters.
  const int64_t steps = int64_t(count) / 2 + 1;
  for (BufferRequest& b : r) {
    // Mostly activation-like sizes, some large ones, repeats and empties for the tie-breaks.
    uint32_t kind = rng() % 10;
    b.bytes = kind == 0   ? 0
              : kind == 1 ? 4096
              : kind <= 3 ? int64_t(rng() % (1 << 20))
                          : int64_t(rng() % 8192) + 1;
    b.firstStep = rng() % steps;
    int64_t span = rng() % 2 == 0 ? int64_t(rng() % steps) : int64_t(rng() % 4);
    b.lastStep = std::min(steps, b.firstStep + span);
  }
  return r;
}

TEST(MemoryPlanners, RandomIntervalSetsGiveValidPlansAndBestIsNeverWorse) {
  std::mt19937 rng(20240611);
  const int64_t alignments[] = {1, 16, 64};
  double ratioSum[std::size(kPlanners) + 1] = {};
  int atBound[std::size(kPlanners) + 1] = {};
  int measured = 0;
  for (int iter = 0; iter < 500; ++iter) {
    Requests r = randomRequests(rng, 1 + rng() % 60);
    int64_t alignment = alignments[rng() % 3];
    SCOPED_TRACE("iteration " + std::to_string(iter));
    ArenaPlan plans[std::size(kPlanners)];
    for (size_t k = 0; k < std::size(kPlanners); ++k) {
      plans[k] = run(kPlanners[k].plan, r, alignment);
      ASSERT_EQ(plans[k].planner, kPlanners[k].name);
      ASSERT_EQ(plans[k].lowerBoundBytes, liveLowerBound(r, alignment));
      ASSERT_GE(plans[k].arenaBytes, plans[k].lowerBoundBytes) << kPlanners[k].name;
      ASSERT_EQ(plans[k].arenaBytes % alignment, 0) << kPlanners[k].name;
      for (int64_t offset : plans[k].offsets) ASSERT_EQ(offset % alignment, 0);
    }
    // The climb starts from the best greedy plan and never makes it worse.
    for (size_t k = 0; k + 1 < std::size(kPlanners); ++k)
      ASSERT_LE(plans[3].arenaBytes, plans[k].arenaBytes);

    ArenaPlan best = run(planArenaBest, r, alignment);
    size_t winner = std::size(kPlanners);
    for (size_t k = std::size(kPlanners); k-- > 0;) {
      ASSERT_LE(best.arenaBytes, plans[k].arenaBytes) << kPlanners[k].name;
      if (plans[k].arenaBytes == best.arenaBytes) winner = k;
    }
    ASSERT_LT(winner, std::size(kPlanners));
    EXPECT_EQ(best.planner, kPlanners[winner].name);  // ties go to the earlier planner
    EXPECT_EQ(best.offsets, plans[winner].offsets);

    ArenaPlan again = run(planArenaBest, r, alignment);
    ASSERT_EQ(again.offsets, best.offsets);  // deterministic
    ASSERT_EQ(run(planArenaHillClimb, r, alignment).offsets, plans[3].offsets);

    if (best.lowerBoundBytes > 0) {
      ++measured;
      for (size_t k = 0; k < std::size(kPlanners); ++k) {
        ratioSum[k] += double(plans[k].arenaBytes) / double(plans[k].lowerBoundBytes);
        atBound[k] += plans[k].arenaBytes == plans[k].lowerBoundBytes;
      }
      ratioSum[std::size(kPlanners)] += double(best.arenaBytes) / double(best.lowerBoundBytes);
      atBound[std::size(kPlanners)] += best.arenaBytes == best.lowerBoundBytes;
    }
  }
  ASSERT_GT(measured, 0);
  // The figures docs/ and reviews quote; printed, not asserted beyond sanity.
  for (size_t k = 0; k <= std::size(kPlanners); ++k) {
    double mean = ratioSum[k] / measured;
    const char* name = k < std::size(kPlanners) ? kPlanners[k].name : "planArenaBest";
    std::printf("[ ratio    ] %-18s mean arena/lower bound %.5f, at the bound in %d of %d cases\n",
                name, mean, atBound[k], measured);
    EXPECT_LT(mean, 1.5) << name;
  }
}

TEST(MemoryPlanners, ManyOverlappingBuffersGiveTheSamePlans) {
  // 3000 empty buffers that all overlap one another are too many pairs to index, so the
  // planners scan instead; being empty, they must not change where the others go.
  std::mt19937 rng(99);
  for (int iter = 0; iter < 3; ++iter) {
    Requests r = randomRequests(rng, 40);
    Requests crowded = r;
    crowded.resize(r.size() + 3000, BufferRequest{0, -5, 1000});
    for (const Planner& p : kPlanners) {
      SCOPED_TRACE(p.name);
      ArenaPlan alone = run(p.plan, r, 64);
      ArenaPlan among = run(p.plan, crowded, 64);
      EXPECT_EQ(among.arenaBytes, alone.arenaBytes);
      among.offsets.resize(r.size());
      EXPECT_EQ(among.offsets, alone.offsets);
    }
  }
}

TEST(MemoryPlanners, SmallRandomCasesAgainstTheExactOptimum) {
  std::mt19937 rng(7);
  int optimal = 0;
  const int cases = 300;
  for (int iter = 0; iter < cases; ++iter) {
    Requests r(2 + rng() % 5);
    for (BufferRequest& b : r) {
      b.bytes = 1 + rng() % 10;
      b.firstStep = rng() % 6;
      b.lastStep = b.firstStep + rng() % 3;
    }
    SCOPED_TRACE("iteration " + std::to_string(iter));
    int64_t optimum = bruteForceOptimum(r);
    ArenaPlan best = run(planArenaBest, r, 1);
    ASSERT_GE(best.arenaBytes, optimum);
    ASSERT_GE(optimum, best.lowerBoundBytes);
    optimal += best.arenaBytes == optimum;
  }
  std::printf("[ optimum  ] planArenaBest optimal in %d of %d small cases\n", optimal, cases);
  EXPECT_GE(optimal, cases * 95 / 100);
}

}  // namespace
}  // namespace kiln
