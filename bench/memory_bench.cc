// Memory benchmarks beside the kernels' (part of kiln_kernels_bench), for telling a kernel's
// 2-thread loss apart from the machine's (docs/targets.md, session 33):
//   build/bench/kiln_kernels_bench --benchmark_filter=memory
//   KILN_BENCH_THREADS=2 build/bench/kiln_kernels_bench --benchmark_filter=memory/read
// memory/read/<KiB>: each of the pool's threads sums its own buffer of KiB, many times a unit,
// so the counter bytes_per_second (all threads together) shows L1, L2, L3 and memory bandwidth
// and how it grows with threads. memory/handoff/<KiB>/{self,other}: a buffer written by this
// thread or by another one, then read by this thread (the read timed): what a kernel pays for
// reading the output the op before it left in the other core's cache.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "kiln_cpu/parallel.h"
#include "kiln_cpu/simd.h"

using kiln_cpu::V;

int benchThreads();                 // kernels_bench.cc
kiln_cpu::ThreadPool* benchPool();  // kernels_bench.cc

namespace {

/// The sum of p[0, n) (n a multiple of 4 vectors) in four independent chains.
float sumFloats(const float* p, int64_t n) {
  constexpr int L = V::kLanes;
  V::R a = V::zero(), b = a, c = a, d = a;
  for (int64_t i = 0; i < n; i += 4 * L) {
    a = V::add(a, V::load(p + i));
    b = V::add(b, V::load(p + i + L));
    c = V::add(c, V::load(p + i + 2 * L));
    d = V::add(d, V::load(p + i + 3 * L));
  }
  return V::reduce_add(V::add(V::add(a, b), V::add(c, d)));
}

void BM_Read(benchmark::State& state, int64_t kib) {
  const int threads = benchThreads();
  const int64_t n = kib * 256;  // floats
  std::vector<std::vector<float>> bufs(size_t(threads), std::vector<float>(size_t(n), 1.0f));
  // At least ~1 ms of reading per unit, so every thread is in before the caller ends its own.
  const int64_t reps = std::max<int64_t>(1, (int64_t(64) << 20) / (n * 4));
  std::vector<float> sink(size_t(threads) * 16, 0.0f);
  for (auto _ : state) {
    kiln_cpu::parallel_for(benchPool(), threads, [&](int64_t u, int) {
      float s = 0;
      for (int64_t r = 0; r < reps; ++r) {
        const float* p = bufs[size_t(u)].data();
        benchmark::DoNotOptimize(p);  // each rep reads again: not hoisted out of the loop
        s += sumFloats(p, n);
      }
      sink[size_t(u) * 16] += s;
    });
    benchmark::DoNotOptimize(sink.data());
  }
  state.SetBytesProcessed(state.iterations() * threads * reps * n * 4);
}

/// Written by this thread or by another (a second std::thread taking turns), then read here.
void BM_Handoff(benchmark::State& state, int64_t kib, bool other) {
  const int64_t n = kib * 256;
  std::vector<float> buf(size_t(n), 1.0f);
  std::atomic<int> turn{0};  // 1: the writer's turn, 2: written, -1: stop
  std::thread writer([&] {
    for (float v = 1.0f;; v += 1.0f) {
      int t;
      while ((t = turn.load(std::memory_order_acquire)) != 1)
        if (t < 0) return;
      for (int64_t i = 0; i < n; ++i) buf[size_t(i)] = v;
      turn.store(2, std::memory_order_release);
    }
  });
  double seconds = 0;
  float sink = 0;
  for (auto _ : state) {
    if (other) {
      turn.store(1, std::memory_order_release);
      while (turn.load(std::memory_order_acquire) != 2) {
      }
    } else {
      for (int64_t i = 0; i < n; ++i) buf[size_t(i)] += 1.0f;
    }
    const float* p = buf.data();
    benchmark::DoNotOptimize(p);
    const auto t0 = std::chrono::steady_clock::now();
    sink += sumFloats(p, n);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(t);
    seconds += t;
  }
  turn.store(-1, std::memory_order_release);
  writer.join();
  benchmark::DoNotOptimize(sink);
  state.counters["GB_s"] = double(n) * 4.0 * double(state.iterations()) / seconds * 1e-9;
}

}  // namespace

/// Called by kernels_bench.cc's main before the run.
void registerMemoryBenchmarks() {
  for (int64_t kib : {16, 256, 768, 4096, 16384, 131072})
    benchmark::RegisterBenchmark(("memory/read/" + std::to_string(kib) + "KiB").c_str(),
                                 [kib](benchmark::State& s) { BM_Read(s, kib); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  for (int64_t kib : {128, 512, 2048})
    for (bool other : {false, true})
      benchmark::RegisterBenchmark(("memory/handoff/" + std::to_string(kib) + "KiB/" +
                                    (other ? "other" : "self"))
                                       .c_str(),
                                   [kib, other](benchmark::State& s) { BM_Handoff(s, kib, other); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
}
