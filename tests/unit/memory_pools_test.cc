// planPools: every buffer lands in a pool it fits, live buffers never overlap within a pool,
// and a model that cannot fit says how many bytes are missing.
#include <gtest/gtest.h>

#include <random>

#include "kiln/memory/pools.h"

namespace kiln {
namespace {

std::vector<std::string> labelsFor(size_t n) {
  std::vector<std::string> labels;
  for (size_t i = 0; i < n; ++i) labels.push_back("b" + std::to_string(i));
  return labels;
}

// Each pool's buffers, checked as an arena plan of their own.
void expectValid(const std::vector<BufferRequest>& reqs, const PoolPlan& plan,
                 const std::vector<MemoryPool>& pools) {
  ASSERT_EQ(plan.pool.size(), reqs.size());
  for (size_t k = 0; k < pools.size(); ++k) {
    std::vector<BufferRequest> sub;
    ArenaPlan p;
    for (size_t i = 0; i < reqs.size(); ++i)
      if (plan.pool[i] == int(k)) {
        sub.push_back(reqs[i]);
        p.offsets.push_back(plan.offsets[i]);
      }
    p.arenaBytes = plan.usedBytes[k];
    EXPECT_TRUE(checkPlan(sub, p).ok()) << checkPlan(sub, p).message();
    EXPECT_LE(plan.usedBytes[k], pools[k].capacityBytes) << pools[k].name;
  }
}

TEST(MemoryPools, FastPoolTakesTheMostReadBuffers) {
  // Two buffers live at once; only one fits the fast pool: the one read more goes there.
  std::vector<BufferRequest> reqs = {{1024, 0, 3}, {1024, 0, 3}};
  std::vector<int64_t> benefit = {1, 5};
  std::vector<MemoryPool> pools = {{"fast", 1024}, {"slow", 4096}};
  auto plan = planPools(reqs, benefit, pools, labelsFor(2));
  ASSERT_TRUE(plan.ok()) << plan.message();
  EXPECT_EQ(plan->pool[1], 0);
  EXPECT_EQ(plan->pool[0], 1);
  expectValid(reqs, *plan, pools);
}

TEST(MemoryPools, TooSmallSaysHowManyBytesAreMissing) {
  std::vector<BufferRequest> reqs = {{1000, 0, 1}, {3000, 1, 2}};
  std::vector<MemoryPool> pools = {{"a", 1024}, {"b", 2048}};
  auto plan = planPools(reqs, std::vector<int64_t>{1, 1}, pools, labelsFor(2));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("buffer 'b1' (3000 bytes) fits in none"), std::string::npos)
      << plan.message();
  EXPECT_NE(plan.message().find("at least 960 more bytes"), std::string::npos) << plan.message();
}

TEST(MemoryPools, BadInputIsRefused) {
  std::vector<BufferRequest> reqs = {{64, 0, 0}};
  EXPECT_FALSE(planPools(reqs, std::vector<int64_t>{1}, {}, labelsFor(1)).ok());
  std::vector<MemoryPool> negative = {{"x", -1}};
  EXPECT_FALSE(planPools(reqs, std::vector<int64_t>{1}, negative, labelsFor(1)).ok());
  std::vector<MemoryPool> one = {{"x", 64}};
  EXPECT_FALSE(planPools(reqs, std::vector<int64_t>{}, one, labelsFor(1)).ok());
}

TEST(MemoryPools, RandomCasesAreValidAndDeterministic) {
  std::mt19937_64 rng(11);
  for (int c = 0; c < 300; ++c) {
    size_t n = 1 + rng() % 40;
    std::vector<BufferRequest> reqs;
    std::vector<int64_t> benefit;
    for (size_t i = 0; i < n; ++i) {
      int64_t first = int64_t(rng() % 30), len = int64_t(rng() % 8);
      reqs.push_back({int64_t(1 + rng() % 5000), first, first + len});
      benefit.push_back(int64_t(rng() % 4));
    }
    int64_t bound = liveLowerBound(reqs);
    // Pools that together hold 1.5x the bound, split 1:2, so both get used.
    std::vector<MemoryPool> pools = {{"fast", bound / 2 + 64}, {"slow", bound + 4096}};
    auto plan = planPools(reqs, benefit, pools, labelsFor(n));
    if (!plan.ok()) {
      EXPECT_NE(plan.message().find("more bytes are needed"), std::string::npos);
      continue;
    }
    expectValid(reqs, *plan, pools);
    auto again = planPools(reqs, benefit, pools, labelsFor(n));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->pool, plan->pool);
    EXPECT_EQ(again->offsets, plan->offsets);
  }
}

}  // namespace
}  // namespace kiln
