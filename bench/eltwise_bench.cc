// Benchmarks of the element-wise vector forms (kernels/cpu/vfunctor.h through eltwise.h's
// map_n_f32) against the kernels/ref scalar functors they replace in generated code, over a
// tensor of 2^20 floats spread over [-10, 10] (one thread); Pow by a constant exponent too. Part of
// kiln_kernels_bench:
//   build/bench/kiln_kernels_bench --benchmark_filter=eltwise
// Counter: items_per_second (elements).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln_cpu/eltwise.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/elementwise.h"

namespace {

std::vector<float> spread(int64_t n) {
  std::vector<float> x(size_t(n), 0.0f);
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float((i * 7919) % 20000) / 1000.0f - 10.0f;
  return x;
}

/// Pow by a constant exponent as a unary functor (a fused chain's Pow with a Splat exponent),
/// of |x| where `abs` (a square root's operand: negative lanes take the per-lane path).
struct PowBy {
  float e;
  bool abs = false;
  float operator()(float x) const { return kiln_ref::Pow{}(abs ? std::fabs(x) : x, e); }
};

}  // namespace

template <>
struct kiln_cpu::VectorForm<PowBy> {
  static constexpr bool kYes = true;
  static constexpr bool kExact = true;
  static V::R apply(const PowBy& p, V::R x) {
    return VectorForm<kiln_ref::Pow>::apply(kiln_ref::Pow{}, p.abs ? V::abs(x) : x, V::set1(p.e));
  }
};

namespace {

template <class Act>
void BM_Eltwise(benchmark::State& state, Act act, bool vector) {
  const int64_t n = int64_t(1) << 20;
  const std::vector<float> x = spread(n);
  std::vector<float> y(size_t(n), 0.0f);
  for (auto _ : state) {
    if (vector) {
      kiln_cpu::map_n_f32(
          n, y.data(), [&](kiln_cpu::V::R a) { return kiln_cpu::vapply(act, a); }, nullptr,
          kiln_cpu::Dense{x.data()});
    } else {
      for (int64_t i = 0; i < n; ++i) y[size_t(i)] = act(x[size_t(i)]);
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

template <class Act>
void registerPair(const char* name, Act act) {
  for (bool vector : {false, true})
    benchmark::RegisterBenchmark(
        (std::string("eltwise/") + name + (vector ? "/vector" : "/scalar")).c_str(),
        [act, vector](benchmark::State& s) { BM_Eltwise(s, act, vector); })
        ->Unit(benchmark::kMicrosecond);
}

}  // namespace

/// Called by kernels_bench.cc's main before the run.
void registerEltwiseBenchmarks() {
  registerPair("sigmoid", kiln_ref::Sigmoid{});
  registerPair("tanh", kiln_ref::Tanh{});
  registerPair("gelu", kiln_ref::Gelu{false});
  registerPair("silu", kiln_ref::Swish{1.0f});
  registerPair("mish", kiln_ref::Mish{});
  registerPair("elu", kiln_ref::Elu{1.0f});
  registerPair("exp", kiln_ref::Exp{});
  registerPair("log", kiln_ref::Log{});
  registerPair("hardswish", kiln_ref::HardSwish{});
  registerPair("sin", kiln_ref::Sin{});
  registerPair("cos", kiln_ref::Cos{});
  registerPair("pow2", PowBy{2.0f});
  registerPair("pow0.5", PowBy{0.5f, true});
  registerPair("pow3", PowBy{3.0f});  // no exact float form: the scalar functor per lane
}
