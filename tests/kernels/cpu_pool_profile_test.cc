// Tests of kernels/cpu/parallel.h's idle count in `kiln compile --profile` builds
// (KILN_CPU_POOL_PROFILE, its own executable: the define changes ThreadPool's members, so no
// other test file may share its binary). take_idle_ns(wall) is the threads' idle time over a
// step of `wall` ns: the caller's waits for the workers' last units plus each worker's time
// outside units. Units sleep here, so the figures hold on a loaded machine too.
#define KILN_CPU_POOL_PROFILE 1
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "kiln_cpu/parallel.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kMs = 1000000;

/// Runs `units` units of sleep_ms(u) ms each on `pool` as one step; returns {wall, idle} ns.
template <class F>
std::pair<int64_t, int64_t> step(kiln_cpu::ThreadPool* pool, int64_t units, F sleep_ms) {
  const auto t0 = Clock::now();
  kiln_cpu::parallel_for(pool, units, [&](int64_t u, int) {
    std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms(u)));
  });
  const int64_t wall = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
  return {wall, int64_t(pool->take_idle_ns(uint64_t(wall)))};
}

TEST(CpuPoolProfile, OneThreadIsNeverIdle) {
  kiln_cpu::ThreadPool pool;
  ASSERT_TRUE(pool.start(1));
  EXPECT_EQ(step(&pool, 4, [](int64_t) { return 2; }).second, 0);
}

TEST(CpuPoolProfile, StepOnTheCallerAloneIdlesTheWorkers) {
  // One unit runs on the caller without the pool: each worker idles the whole step.
  for (int threads : {2, 3}) {
    kiln_cpu::ThreadPool pool;
    ASSERT_TRUE(pool.start(threads));
    const auto [wall, idle] = step(&pool, 1, [](int64_t) { return 5; });
    EXPECT_EQ(idle, int64_t(threads - 1) * wall) << threads << " threads";
  }
}

TEST(CpuPoolProfile, UnevenUnitsLeaveOneThreadWaiting) {
  // Two units, one 30 ms and one none: whichever thread runs the long one, the other waits
  // (or never joins) for about 30 ms. The two threads' time is 2 x wall, of which the long
  // unit keeps one busy for at least its 30 ms: idle <= 2 x wall - 30 ms. (Not idle <= wall:
  // a worker that claims the long unit and then waits for its vCPU leaves both threads idle at
  // once; on a loaded CI machine that made idle 1.3-1.7 ms more than the wall.)
  kiln_cpu::ThreadPool pool;
  ASSERT_TRUE(pool.start(2));
  for (int64_t slow : {0, 1}) {
    const auto [wall, idle] = step(&pool, 2, [&](int64_t u) { return u == slow ? 30 : 0; });
    EXPECT_GE(idle, 25 * kMs) << "slow unit " << slow;
    EXPECT_LE(idle, 2 * wall - 29 * kMs) << "slow unit " << slow;
  }
}

TEST(CpuPoolProfile, EvenUnitsKeepBothBusyAndCountsReset) {
  kiln_cpu::ThreadPool pool;
  ASSERT_TRUE(pool.start(2));
  // 8 units of 5 ms: each thread sleeps through its share; the idle time is what the 40 ms of
  // units leave of the two threads' 2 x wall (none on an unloaded machine, where wall is 20 ms).
  const auto [wall, idle] = step(&pool, 8, [](int64_t) { return 5; });
  EXPECT_GE(wall, 20 * kMs);
  EXPECT_GE(idle, 0);
  EXPECT_LE(idle, 2 * wall - 39 * kMs);
  // The count was taken: a step with no work at all adds only the worker's idle wall.
  EXPECT_EQ(pool.take_idle_ns(1000), 1000u);
}

}  // namespace
