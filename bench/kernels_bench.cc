// Benchmarks of the optimized f32 CPU kernels (kernels/cpu): GEMM, GEMV and convolution speed on
// square and model-shaped problems, each also as a percentage of this core's FMA peak, which
// the same binary measures with a 12-accumulator FMA loop. Build and run (1 thread; -O3
// -ffp-contract=off for the host's widest ISA: v4, v3 or generic):
//   ninja -C build kiln_kernels_bench
//   build/bench/kiln_kernels_bench                        # all benchmarks
//   build/bench/kiln_kernels_bench --benchmark_filter=gemm_vs_peak  # or gemm_packed_b/1024, eltwise
//   KILN_BENCH_THREADS=2 build/bench/kiln_kernels_bench   # on a thread pool of 2
//   KILN_BENCH_COLD_WEIGHTS=1 (weights from memory), KILN_BENCH_DIRTY_INPUT=1 (input rewritten
//   by the threads before each run: pixel-rows and Winograd convs; =rows, =caller: other
//   writers), as in a model run; memory_bench.cc's bandwidth and cross-core hand-off figures
// Counters: GFLOPS (2*M*N*K per iteration over wall time) and pct_peak (GFLOPS as a percentage
// of peak_gflops, the measured FMA peak times the thread count); for the few-row products bound
// by reading the weights (gemv_packed_b, gemm_packed_b/1x...), GB_s of weights read.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "kernel_bench_shapes.h"
#include "kiln/target/target.h"
#include "kiln_cpu/conv.h"
#include "kiln_cpu/conv_direct.h"
#include "kiln_cpu/conv_nhwc.h"
#include "kiln_cpu/conv_nhwc_fused.h"
#include "kiln_cpu/conv_pixrows.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/gemv.h"
#include "kiln_cpu/parallel.h"
#include "kiln_cpu/simd.h"
#include "kiln_cpu/winograd.h"
#include "kiln_ref/activation.h"

namespace {

using kiln_cpu::V;

constexpr int kPeakAccumulators = 12;

/// iters rounds of kPeakAccumulators independent FMAs (enough in flight to cover the FMA
/// latency on every current x86 core), 2 * kLanes flops each. Returns a sum of the
/// accumulators so the loop cannot be dropped; callers pass `scale` from fmaScale() (a volatile
/// read) so that calls cannot be hoisted or merged either.
__attribute__((noinline)) float fmaLoop(int64_t iters, float scale) {
  V::R acc[kPeakAccumulators];
  KILN_CPU_UNROLL
  for (int r = 0; r < kPeakAccumulators; ++r) acc[r] = V::set1(1.0f + 0.001f * float(r));
  const V::R m = V::set1(scale), a = V::set1(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
    KILN_CPU_UNROLL
    for (int r = 0; r < kPeakAccumulators; ++r) acc[r] = V::fma(acc[r], m, a);
  }
  V::R sum = acc[0];
  KILN_CPU_UNROLL
  for (int r = 1; r < kPeakAccumulators; ++r) sum = V::add(sum, acc[r]);
  float lanes[V::kLanes];
  V::store(lanes, sum);
  return lanes[0];
}

/// fmaLoop's multiplier, read from a volatile so that no call can be folded. (It was a local
/// laundered by benchmark::DoNotOptimize, which GCC 12 at -O3 passed on from a stack slot it
/// never wrote: a denormal there cost an Intel core a microcode assist per FMA, the "peak"
/// 0.9 GFLOP/s; AMD's cores take denormals at full speed, so it went unseen.)
volatile float g_fma_scale = 0.9999999f;
float fmaScale() {
  return g_fma_scale;
}

constexpr double kFlopsPerFmaRound = 2.0 * kPeakAccumulators * V::kLanes;

/// One core's FMA peak in GFLOP/s: the best of several timed runs of fmaLoop.
double corePeakGflops() {
  static const double peak = [] {
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const int64_t iters = 20'000'000;
      const float scale = fmaScale();
      const auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(fmaLoop(iters, scale));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, kFlopsPerFmaRound * double(iters) / s * 1e-9);
    }
    return best;
  }();
  return peak;
}

}  // namespace

// KILN_BENCH_THREADS and the pool, shared with memory_bench.cc.
int benchThreads() {
  const char* env = std::getenv("KILN_BENCH_THREADS");
  const int t = env ? std::atoi(env) : 1;
  return t < 1 ? 1 : t;
}

/// The pool every benchmark runs on (null for one thread: the kernels run on the caller).
kiln_cpu::ThreadPool* benchPool() {
  static kiln_cpu::ThreadPool pool;
  static const bool started = pool.start(benchThreads());
  (void)started;
  return benchThreads() > 1 ? &pool : nullptr;
}

namespace {

std::vector<float> randomFloats(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = float(s >> 8) / float(1u << 24) - 0.5f;
  }
  return v;
}

/// Times a benchmark's iteration loop on the wall clock (the benchmarks use real time: the
/// kernels may run on a pool) for counters in plain GFLOP/s rather than a rate per second.
struct WallTimer {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

/// GFLOPS and pct_peak (of the measured FMA peak times the thread count) for a finished loop.
void setFlopCounters(benchmark::State& state, double seconds, double flops_per_iter) {
  const double gflops = flops_per_iter * double(state.iterations()) / seconds * 1e-9;
  state.counters["GFLOPS"] = gflops;
  state.counters["pct_peak"] = 100.0 * gflops / (corePeakGflops() * benchThreads());
}

/// The packed weights a benchmark's runs read: with KILN_BENCH_COLD_WEIGHTS=1 a rotation over
/// copies of at least 96 MB (more than the L3), streamed from memory as in a model; else one.
class Weights {
 public:
  explicit Weights(const std::vector<float>& w) : w_(w) {
    const char* env = std::getenv("KILN_BENCH_COLD_WEIGHTS");
    if (!env || std::string(env) != "1" || w.empty()) return;
    const size_t bytes = w.size() * sizeof(float), n = (size_t(96) << 20) / bytes + 2;
    copies_.assign(n, w);
  }
  /// The weights for the next run.
  const float* next() {
    if (copies_.empty()) return w_.data();
    const float* p = copies_[i_].data();
    i_ = i_ + 1 < copies_.size() ? i_ + 1 : 0;
    return p;
  }

 private:
  const std::vector<float>& w_;
  std::vector<std::vector<float>> copies_;
  size_t i_ = 0;
};

/// KILN_BENCH_DIRTY_INPUT: before each timed run the input is stored again (the same values;
/// not timed), as the op before it in a model leaves it: `1` or `channels`, the pool's threads
/// each their share of the channels (a kernel splitting its output channels); `rows`, each its
/// share of every channel's rows (a kernel splitting its pixels); `caller`, the calling thread
/// alone. Session 33 measured the same 2-thread penalty under all three (docs/targets.md).
enum class Dirty { kNone, kChannels, kRows, kCaller };
Dirty dirtyInput() {
  const char* env = std::getenv("KILN_BENCH_DIRTY_INPUT");
  const std::string v = env ? env : "";
  if (v == "1" || v == "channels") return Dirty::kChannels;
  if (v == "rows") return Dirty::kRows;
  if (v == "caller") return Dirty::kCaller;
  return Dirty::kNone;
}

/// Stores every float of x again (the same value), `channels` planes, as `how` says.
void rewriteInput(std::vector<float>& x, int64_t channels, Dirty how) {
  const int64_t plane = int64_t(x.size()) / channels;
  auto touch = [&](int64_t c, int64_t j0, int64_t j1) {
    float* p = x.data() + c * plane;
    for (int64_t j = j0; j < j1; ++j) p[j] = p[j] * 1.0f + 0.0f;
  };
  if (how == Dirty::kChannels) {
    kiln_cpu::parallel_for(benchPool(), channels, [&](int64_t c, int) { touch(c, 0, plane); });
  } else if (how == Dirty::kRows) {
    constexpr int64_t kParts = 64;  // contiguous shares: thread t gets the t-th band of rows
    kiln_cpu::parallel_for(benchPool(), kParts, [&](int64_t u, int) {
      for (int64_t c = 0; c < channels; ++c) touch(c, u * plane / kParts, (u + 1) * plane / kParts);
    });
  } else if (how == Dirty::kCaller) {
    for (int64_t c = 0; c < channels; ++c) touch(c, 0, plane);
  }
}

void BM_PeakFma(benchmark::State& state) {
  const int64_t iters = 1 << 20;
  const WallTimer timer;
  for (auto _ : state) {
    const float scale = fmaScale();
    benchmark::DoNotOptimize(fmaLoop(iters, scale));
  }
  state.counters["GFLOPS"] =
      kFlopsPerFmaRound * double(iters) * double(state.iterations()) / timer.seconds() * 1e-9;
}

/// A, B packed ahead (pack_b_panels), C and the driver's scratch of an M x N x K product.
struct PackedBProduct {
  PackedBProduct(int64_t M, int64_t N, int64_t K)
      : a(randomFloats(M * K, 1)), panels(size_t(kiln_cpu::packed_b_floats(K, N))),
        c(size_t(M * N)), scratch(size_t(kiln_cpu::gemm_f32_packed_b_scratch_floats(M, K))) {
    kiln_cpu::pack_b_panels(randomFloats(K * N, 2).data(), K, N, panels.data());
  }
  std::vector<float> a, panels, c, scratch;
  const kiln_cpu::Epilogue<kiln_ref::NoActivation> e =
      kiln_cpu::make_epilogue(kiln_ref::NoActivation{}, nullptr, nullptr, nullptr, 0);
};

/// gemm_f32_packed_b against an FMA-loop slice of its flops, interleaved on one thread, the best
/// of each kept (a busy host slows both alike); pct_peak: best product over best slice.
void BM_GemmVsPeak(benchmark::State& state, int64_t M, int64_t N, int64_t K) {
  if (benchThreads() != 1) return state.SkipWithError("one thread: the FMA loop uses one core");
  PackedBProduct g(M, N, K);
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const auto rounds = int64_t(flops / kFlopsPerFmaRound);
  double best_gemm = 0, best_peak = 0;
  for (auto _ : state) {
    const float scale = fmaScale();
    const WallTimer slice;
    benchmark::DoNotOptimize(fmaLoop(rounds, scale));
    best_peak = std::max(best_peak, kFlopsPerFmaRound * double(rounds) / slice.seconds() * 1e-9);
    const WallTimer product;
    kiln_cpu::gemm_f32_packed_b(M, N, K, g.a.data(), K, g.panels.data(), g.c.data(), N, g.e,
                                g.scratch.data(), nullptr);
    benchmark::ClobberMemory();
    best_gemm = std::max(best_gemm, flops / product.seconds() * 1e-9);
  }
  state.counters["GFLOPS"] = best_gemm;
  state.counters["peak_GFLOPS"] = best_peak;
  state.counters["pct_peak"] = 100.0 * best_gemm / best_peak;
}

/// C = A * B with B packed ahead (pack_b_panels), as for MatMul/Gemm with constant weights;
/// rowa: A read in place (gemm_f32_rowa_packed_b, a channels-last 1x1 conv), else packed.
void BM_GemmPackedB(benchmark::State& state, int64_t M, int64_t N, int64_t K, bool rowa) {
  PackedBProduct g(M, N, K);
  Weights weights(g.panels);
  const WallTimer timer;
  for (auto _ : state) {
    const float* bp = weights.next();
    if (rowa)
      kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, g.a.data(), K, bp, g.c.data(), N, g.e,
                                       benchPool());
    else
      kiln_cpu::gemm_f32_packed_b(M, N, K, g.a.data(), K, bp, g.c.data(), N, g.e,
                                  g.scratch.data(), benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(), 2.0 * double(M) * double(N) * double(K));
}

/// C[M, N] = A * B for a few rows (a classifier at batch 1), B packed ahead, by gemv_f32_packed_b
/// or (gemv false) gemm_f32_packed_b; bound by streaming B (counter GB_s). cold: each run reads
/// another of enough copies of B to fill 64 MiB (more than the L3), as in a model run; hot: one.
void BM_FewRows(benchmark::State& state, bool gemv, int64_t M, int64_t N, int64_t K, bool cold) {
  PackedBProduct g(M, N, K);
  const int64_t floats = kiln_cpu::packed_b_floats(K, N);
  const int64_t copies = cold ? ((int64_t(64) << 20) / (floats * 4) + 1) : 1;
  std::vector<float> panels(size_t(floats * copies));
  for (int64_t i = 0; i < copies; ++i)
    std::copy(g.panels.begin(), g.panels.end(), panels.begin() + i * floats);
  int64_t i = 0;
  const WallTimer timer;
  for (auto _ : state) {
    const float* bp = &panels[size_t(i * floats)];
    i = i + 1 < copies ? i + 1 : 0;
    if (gemv)
      kiln_cpu::gemv_f32_packed_b(M, N, K, g.a.data(), K, bp, g.c.data(), N, g.e, benchPool());
    else
      kiln_cpu::gemm_f32_packed_b(M, N, K, g.a.data(), K, bp, g.c.data(), N, g.e,
                                  g.scratch.data(), benchPool());
    benchmark::ClobberMemory();
  }
  state.counters["GB_s"] =
      double(floats) * 4.0 * double(state.iterations()) / timer.seconds() * 1e-9;
}

/// C = A * B with both operands packed at run time (B an activation).
void BM_GemmF32(benchmark::State& state, int64_t M, int64_t N, int64_t K) {
  const std::vector<float> a = randomFloats(M * K, 1), b = randomFloats(K * N, 2);
  std::vector<float> c(size_t(M * N));
  std::vector<float> scratch(
      size_t(kiln_cpu::gemm_f32_scratch_floats(M, N, K, benchPool() ? benchPool()->size() : 1)));
  const auto e = kiln_cpu::make_epilogue(kiln_ref::NoActivation{}, nullptr, nullptr, nullptr, 0);
  const WallTimer timer;
  for (auto _ : state) {
    kiln_cpu::gemm_f32(M, N, K, a.data(), K, b.data(), N, c.data(), N, e, scratch.data(),
                       benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(), 2.0 * double(M) * double(N) * double(K));
}

/// conv2d_f32 (implicit GEMM) with bias and Relu, batch 1, square input, "same" padding; with
/// `residual`, also a residual input added before the Relu (a ResNet block's last conv).
void BM_Conv(benchmark::State& state, int64_t C, int64_t HW, int64_t M, int64_t k, int64_t stride,
             bool residual) {
  const int64_t pad = k / 2, out = (HW + 2 * pad - k) / stride + 1;
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, M, k, k, out, out, stride, stride, 1, 1, pad, pad, 1};
  const std::vector<float> x = randomFloats(C * HW * HW, 3), w = randomFloats(M * C * k * k, 4);
  const std::vector<float> bias = randomFloats(M, 5);
  std::vector<float> wp(size_t(kiln_cpu::conv2d_packed_weight_floats(s))), y(size_t(M * out * out));
  std::vector<float> scratch(
      size_t(kiln_cpu::conv2d_scratch_floats(s, benchPool() ? benchPool()->size() : 1)));
  kiln_cpu::conv2d_pack_weights(s, w.data(), wp.data());
  const std::vector<float> res = randomFloats(residual ? M * out * out : 0, 9);
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr,
                                         residual ? res.data() : nullptr, 0);
  const WallTimer timer;
  for (auto _ : state) {
    kiln_cpu::conv2d_f32(s, x.data(), wp.data(), bias.data(), y.data(), e, scratch.data(),
                         benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(), 2.0 * double(M) * double(C * k * k) * double(out * out));
}

/// conv2d_pixrows_f32 (the output's pixels as the GEMM's rows) on BM_Conv's problems, or with
/// kNhwc its channels-last form conv2d_pixrows_nhwc_f32 (as for MobileNetV2's stem).
template <bool kNhwc>
void BM_ConvPixrows(benchmark::State& state, int64_t C, int64_t HW, int64_t M, int64_t k,
                    int64_t stride, bool residual) {
  const int64_t pad = k / 2, out = (HW + 2 * pad - k) / stride + 1;
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, M, k, k, out, out, stride, stride, 1, 1, pad, pad, 1};
  std::vector<float> x = randomFloats(C * HW * HW, 3);
  const std::vector<float> w = randomFloats(M * C * k * k, 4), bias = randomFloats(M, 5);
  std::vector<float> wp(size_t(kiln_cpu::conv2d_pixrows_packed_weight_floats(s)));
  std::vector<float> y(size_t(M * out * out)),
      scratch(size_t(kNhwc ? kiln_cpu::conv2d_pixrows_nhwc_scratch_floats(s, benchThreads())
                           : kiln_cpu::conv2d_pixrows_scratch_floats(s)) +
              1);
  kiln_cpu::conv2d_pixrows_pack_weights(s, w.data(), wp.data());
  const std::vector<float> res = randomFloats(residual ? M * out * out : 0, 9);
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr,
                                         residual ? res.data() : nullptr, 0);
  Weights weights(wp);
  const Dirty dirty = dirtyInput();
  double seconds = 0;
  for (auto _ : state) {
    const float* w_now = weights.next();
    rewriteInput(x, C, dirty);
    const WallTimer timer;
    if constexpr (kNhwc)
      kiln_cpu::conv2d_pixrows_nhwc_f32(s, x.data(), w_now, bias.data(), y.data(), e,
                                        scratch.data(), benchPool());
    else
      kiln_cpu::conv2d_pixrows_f32(s, x.data(), w_now, bias.data(), y.data(), e,
                                   scratch.data(), benchPool());
    benchmark::ClobberMemory();
    seconds += timer.seconds();
  }
  setFlopCounters(state, seconds, 2.0 * double(M) * double(C * k * k) * double(out * out));
}

/// The band budget kiln compile gives conv2d_direct_f32 (conv_emit.cc's directConvBandBudget):
/// 1 MiB of planes less the weights when they fit (at least 1/4 of it), at least one row's.
int64_t directBandBudget(const kiln_cpu::Conv2dShape& s) {
  constexpr int64_t kMax = int64_t(1) << 18;
  const int64_t weights = s.M * s.C * s.KH * s.KW;
  const int64_t budget = weights < kMax ? std::max(kMax - weights, kMax / 4) : kMax;
  return std::max(budget, kiln_cpu::conv_direct_detail::planes_for_band(s, 1).floats);
}

/// conv2d_direct_f32 (no im2col; what the compiler emits for kernels wider than 1x1) on the
/// same problems as BM_Conv, with the compiler's band budget (directBandBudget).
void BM_ConvDirect(benchmark::State& state, int64_t C, int64_t HW, int64_t M, int64_t k,
                   int64_t stride) {
  const int64_t pad = k / 2, out = (HW + 2 * pad - k) / stride + 1;
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, M, k, k, out, out, stride, stride, 1, 1, pad, pad, 1};
  const int64_t budget = directBandBudget(s);
  const std::vector<float> x = randomFloats(C * HW * HW, 3), w = randomFloats(M * C * k * k, 4);
  const std::vector<float> bias = randomFloats(M, 5);
  std::vector<float> wp(size_t(kiln_cpu::conv2d_direct_packed_weight_floats(s)));
  std::vector<float> y(size_t(M * out * out));
  std::vector<float> scratch(size_t(
      kiln_cpu::conv2d_direct_scratch_floats(s, benchPool() ? benchPool()->size() : 1, budget)));
  kiln_cpu::conv2d_direct_pack_weights(s, w.data(), wp.data());
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr, nullptr, 0);
  const WallTimer timer;
  for (auto _ : state) {
    kiln_cpu::conv2d_direct_f32(s, x.data(), wp.data(), bias.data(), y.data(), e, scratch.data(),
                                budget, benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(), 2.0 * double(M) * double(C * k * k) * double(out * out));
}

/// conv2d_winograd_f32 (F(4x4, 3x3); tm = 2: conv2d_winograd2_f32) on BM_ConvDirect's 3x3
/// stride-1 problems, bias and Relu; GFLOPS counts the direct conv's 2*M*C*9*OH*OW flops.
void BM_ConvWinograd(benchmark::State& state, int64_t C, int64_t HW, int64_t M, int tm) {
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, M, 3, 3, HW, HW, 1, 1, 1, 1, 1, 1, 1};
  std::vector<float> x = randomFloats(C * HW * HW, 3);
  const std::vector<float> w = randomFloats(M * C * 9, 4), bias = randomFloats(M, 5);
  std::vector<float> wp(size_t(kiln_cpu::conv2d_winograd_packed_weight_floats(s, tm)));
  std::vector<float> y(size_t(M * HW * HW));
  std::vector<float> scratch(size_t(
      kiln_cpu::conv2d_winograd_scratch_floats(s, benchPool() ? benchPool()->size() : 1, tm)));
  kiln_cpu::conv2d_winograd_pack_weights(s, w.data(), wp.data(), tm);
  Weights weights(wp);
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr, nullptr, 0);
  const Dirty dirty = dirtyInput();
  double seconds = 0;
  for (auto _ : state) {
    const float* u = weights.next();
    rewriteInput(x, C, dirty);
    const WallTimer timer;
    if (tm == 2)
      kiln_cpu::conv2d_winograd2_f32(s, x.data(), u, bias.data(), y.data(), e, scratch.data(),
                                     benchPool());
    else
      kiln_cpu::conv2d_winograd_f32(s, x.data(), u, bias.data(), y.data(), e, scratch.data(),
                                    benchPool());
    benchmark::ClobberMemory();
    seconds += timer.seconds();
  }
  setFlopCounters(state, seconds, 2.0 * double(M) * double(C * 9) * double(HW * HW));
}

/// depthwise_conv2d_f32, 3x3 "same", with bias and Relu (MobileNetV2's shapes).
void BM_Depthwise(benchmark::State& state, int64_t C, int64_t HW, int64_t stride) {
  const int64_t out = (HW + 2 - 3) / stride + 1;
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, C, 3, 3, out, out, stride, stride, 1, 1, 1, 1, C};
  const std::vector<float> x = randomFloats(C * HW * HW, 6), w = randomFloats(C * 9, 7);
  const std::vector<float> bias = randomFloats(C, 8);
  std::vector<float> y(size_t(C * out * out));
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr, nullptr, 0);
  const int64_t per = kiln_cpu::depthwise_scratch_floats(s);
  std::vector<float> scratch(size_t(per * benchThreads()));
  const WallTimer timer;
  for (auto _ : state) {
    kiln_cpu::depthwise_conv2d_f32(s, x.data(), w.data(), bias.data(), y.data(), e,
                                   scratch.data(), per, benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(), 2.0 * double(C) * 9.0 * double(out * out));
}

/// depthwise_conv2d_nhwc_f32 on BM_Depthwise's problems (x, y in NHWC), with bias and Relu.
void BM_DepthwiseNhwc(benchmark::State& state, int64_t C, int64_t HW, int64_t stride) {
  const int64_t out = (HW + 2 - 3) / stride + 1;
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, C, 3, 3, out, out, stride, stride, 1, 1, 1, 1, C};
  const std::vector<float> x = randomFloats(C * HW * HW, 6), w = randomFloats(C * 9, 7);
  const std::vector<float> bias = randomFloats(C, 8);
  std::vector<float> wp(size_t(C * 9)), y(size_t(C * out * out));
  kiln_cpu::depthwise_nhwc_pack_weights(s, w.data(), wp.data());
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr, nullptr, 0);
  const WallTimer timer;
  for (auto _ : state) {
    kiln_cpu::depthwise_conv2d_nhwc_f32(s, x.data(), wp.data(), bias.data(), y.data(), e,
                                        benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(), 2.0 * double(C) * 9.0 * double(out * out));
}

/// nhwc_expand_dw_f32: a 1x1 expansion (Cin -> C channels) fused into the 3x3 depthwise conv
/// that reads it, NHWC, both with bias and Relu6, as MobileNetV2's blocks 2-4 run it (the bands
/// sized for the pool's threads). FLOPs: the expansion's and the depthwise conv's.
void BM_ExpandDw(benchmark::State& state, int64_t Cin, int64_t C, int64_t HW, int64_t stride) {
  const int64_t out = (HW + 2 - 3) / stride + 1;
  const kiln_cpu::Conv2dShape s{1, C, HW, HW, C, 3, 3, out, out, stride, stride, 1, 1, 1, 1, C};
  const std::vector<float> x = randomFloats(HW * HW * Cin, 6), w1 = randomFloats(Cin * C, 7);
  const std::vector<float> b1 = randomFloats(C, 8), wd = randomFloats(C * 9, 9);
  const std::vector<float> bd = randomFloats(C, 10);
  std::vector<float> panels(size_t(kiln_cpu::packed_b_floats(Cin, C))), wdp(size_t(C * 9));
  kiln_cpu::pack_b_panels(w1.data(), Cin, C, panels.data());
  kiln_cpu::depthwise_nhwc_pack_weights(s, wd.data(), wdp.data());
  std::vector<float> scratch(size_t(kiln_cpu::expand_dw_scratch_floats(s, benchThreads())));
  std::vector<float> y(size_t(C * out * out));
  const kiln_ref::Clip<float> relu6{0.0f, 6.0f};
  const auto e = kiln_cpu::make_epilogue(relu6, nullptr, nullptr, nullptr, 0);
  const WallTimer timer;
  for (auto _ : state) {
    kiln_cpu::nhwc_expand_dw_f32(s, Cin, x.data(), panels.data(), b1.data(), relu6, wdp.data(),
                                 bd.data(), y.data(), e, scratch.data(), benchThreads(),
                                 benchPool());
    benchmark::ClobberMemory();
  }
  setFlopCounters(state, timer.seconds(),
                  2.0 * double(HW * HW) * double(Cin * C) + 18.0 * double(C * out * out));
}

std::string dims(int64_t M, int64_t N, int64_t K) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

/// Registers `fn(args...)` as "<prefix>/<name>" in the unit given.
template <class... Args>
void add(const std::string& name, benchmark::TimeUnit unit, Args&&... args) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<Args>(args)...)
      ->UseRealTime()
      ->Unit(unit);
}

/// One problem of kernels/cpu/manifest.json, registered as its kernel's benchmark (the names
/// the performance notes in docs/ quote: gemm_packed_b/MxNxK/model, conv2d_f32/layer, ...).
void registerShape(const kiln_bench::KernelShape& s) {
  const std::string kernel = s.kernel, model = s.model;
  const auto ms = benchmark::kMillisecond, us = benchmark::kMicrosecond;
  if (kernel == "gemm_f32") {
    add("gemm_f32/" + dims(s["M"], s["N"], s["K"]) + "/" + model, ms, BM_GemmF32, s["M"], s["N"],
        s["K"]);
  } else if (kernel == "gemm_f32_packed_b" || kernel == "gemm_f32_rowa_packed_b") {
    const bool rowa = kernel == "gemm_f32_rowa_packed_b";
    add(std::string(rowa ? "gemm_rowa/" : "gemm_packed_b/") + dims(s["M"], s["N"], s["K"]) + "/" +
            model,
        rowa ? us : ms, BM_GemmPackedB, s["M"], s["N"], s["K"], rowa);
  } else if (kernel == "gemv_f32_packed_b") {
    // Classifiers at batch 1 (and a batch of 4): GEMV against the GEMM driver, cold and hot B.
    for (bool cold : {true, false})
      for (bool gemv : {true, false})
        add(std::string(gemv ? "gemv" : "gemm") + "_packed_b/" + dims(s["M"], s["N"], s["K"]) +
                "/" + model + (cold ? "/cold" : "/hot"),
            us, BM_FewRows, gemv, s["M"], s["N"], s["K"], cold);
  } else if (kernel == "conv2d_f32" || kernel == "conv2d_pixrows_f32" ||
             kernel == "conv2d_pixrows_nhwc_f32") {
    const bool res = s.get("R", 0) != 0;
    const std::string name = kernel + "/" + model + (res ? "_residual" : "");
    if (kernel == "conv2d_f32")
      add(name, ms, BM_Conv, s["C"], s["HW"], s["M"], s["KS"], s["S"], res);
    else if (kernel == "conv2d_pixrows_f32")
      add(name, ms, BM_ConvPixrows<false>, s["C"], s["HW"], s["M"], s["KS"], s["S"], res);
    else
      add(name, ms, BM_ConvPixrows<true>, s["C"], s["HW"], s["M"], s["KS"], s["S"], res);
  } else if (kernel == "conv2d_direct_f32") {
    add(kernel + "/" + model, ms, BM_ConvDirect, s["C"], s["HW"], s["M"], s["KS"], s["S"]);
  } else if (kernel == "conv2d_winograd_f32" || kernel == "conv2d_winograd2_f32") {
    add(kernel + "/" + model, ms, BM_ConvWinograd, s["C"], s["HW"], s["M"],
        kernel == "conv2d_winograd_f32" ? 4 : 2);
  } else if (kernel == "depthwise_conv2d_f32") {
    add(kernel + "/" + model, us, BM_Depthwise, s["C"], s["HW"], s["S"]);
  } else if (kernel == "depthwise_conv2d_nhwc_f32") {
    add(kernel + "/" + model, us, BM_DepthwiseNhwc, s["C"], s["HW"], s["S"]);
  } else if (kernel == "nhwc_expand_dw_f32") {
    add(kernel + "/" + model, us, BM_ExpandDw, s["Cin"], s["C"], s["HW"], s["S"]);
  } else {
    std::fprintf(stderr, "kernels/cpu/manifest.json: no benchmark runs %s\n", s.kernel);
    std::exit(1);
  }
}

void registerAll() {
  add("peak_fma_12acc", benchmark::kMicrosecond, BM_PeakFma);
  benchmark::RegisterBenchmark("gemm_vs_peak/1024x1024x1024/square", BM_GemmVsPeak, 1024, 1024,
                               1024)
      ->Iterations(60)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  for (const kiln_bench::KernelShape& s : kiln_bench::kManifestShapes) registerShape(s);
}

}  // namespace

void registerEltwiseBenchmarks();  // eltwise_bench.cc
void registerMemoryBenchmarks();   // memory_bench.cc
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("kiln_cpu_isa", KILN_CPU_ISA);
  benchmark::AddCustomContext("kiln_cpu_tile",
                              std::to_string(kiln_cpu::kMR) + "x" + std::to_string(kiln_cpu::kNR));
  benchmark::AddCustomContext("threads", std::to_string(benchThreads()));
  benchmark::AddCustomContext("core_peak_gflops", std::to_string(corePeakGflops()));
  // Which machine kind (the brand string alone does not tell a Zen 4 from a Zen 5 here).
  benchmark::AddCustomContext("host_cpu", kiln::tuningMachineName(kiln::detectHost()));
  registerAll();
  registerEltwiseBenchmarks();
  registerMemoryBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
