// Tests of kernels/cpu/parallel.h (the generated code's thread pool): every unit of a job runs
// exactly once, on a thread id in [0, size()), whatever the unit count against the threads; a
// thread runs its own share in ascending order; a job still completes when a worker joins late
// (asleep) or never (its share is taken by the others).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "kiln_cpu/parallel.h"

namespace {

/// Runs `units` units on pool p; returns how often each ran (and checks the thread ids).
std::vector<int> runCounts(kiln_cpu::ThreadPool* p, int64_t units) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(units));
  std::atomic<int> bad_id{0};
  kiln_cpu::parallel_for(p, units, [&](int64_t u, int tid) {
    if (tid < 0 || tid >= (p ? p->size() : 1)) bad_id.fetch_add(1);
    counts[size_t(u)].fetch_add(1);
  });
  EXPECT_EQ(bad_id.load(), 0) << "thread ids out of range";
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

TEST(CpuParallel, EveryUnitOnce) {
  for (int threads : {1, 2, 3, 4, 7}) {
    kiln_cpu::ThreadPool pool;
    ASSERT_TRUE(pool.start(threads));
    for (int64_t units : {0, 1, 2, 3, 5, 7, 8, 13, 64, 1000, 4099}) {
      for (int rep = 0; rep < 20; ++rep) {
        const std::vector<int> c = runCounts(&pool, units);
        for (int64_t u = 0; u < units; ++u)
          ASSERT_EQ(c[size_t(u)], 1) << threads << " threads, " << units << " units, unit " << u;
      }
    }
  }
  const std::vector<int> c = runCounts(nullptr, 9);  // no pool: the caller runs all
  for (int v : c) EXPECT_EQ(v, 1);
}

TEST(CpuParallel, OwnShareInAscendingOrder) {
  // Thread t's share is [t * units / size, (t + 1) * units / size): the units a thread runs
  // from its own share come in ascending order (a kernel's unit prefetches the next one's data).
  for (int threads : {2, 3}) {
    kiln_cpu::ThreadPool pool;
    ASSERT_TRUE(pool.start(threads));
    const int64_t units = 301;
    for (int rep = 0; rep < 30; ++rep) {
      std::vector<std::vector<int64_t>> ran(static_cast<size_t>(threads));
      kiln_cpu::parallel_for(&pool, units, [&](int64_t u, int tid) {
        ran[size_t(tid)].push_back(u);  // each thread appends to its own list only
      });
      for (int t = 0; t < threads; ++t) {
        const int64_t lo = t * units / threads, hi = (t + 1) * units / threads;
        int64_t last = -1;
        for (int64_t u : ran[size_t(t)])
          if (u >= lo && u < hi) {
            EXPECT_GT(u, last) << "thread " << t << " ran its share out of order";
            last = u;
          }
      }
    }
  }
}

TEST(CpuParallel, SleepingWorkersStillComplete) {
  // Past the workers' spin window they sleep; the caller then starts alone and takes their
  // shares, and a worker that wakes late finds nothing left or joins in: every unit once.
  kiln_cpu::ThreadPool pool;
  ASSERT_TRUE(pool.start(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  for (int rep = 0; rep < 5; ++rep) {
    const std::vector<int> c = runCounts(&pool, 37);
    for (int v : c) ASSERT_EQ(v, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
  }
}

}  // namespace
