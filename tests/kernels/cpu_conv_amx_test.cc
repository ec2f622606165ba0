// conv2d_amx_f32 (kernels/cpu/conv_amx.h): a 1x1 conv in bf16 pieces on AMX tiles, against a
// double-precision reference within f32's dot-product bound (its sums are not f32's bits), the
// same bits at 1, 2 and 3 threads, over its residual, and non-finite inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/amx_weights.h"
#include "kiln_cpu/conv_amx.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"

namespace kiln_cpu_test {
namespace {

#if defined(KILN_CPU_HAS_AMX_KERNELS)
bool hostHasAmx() {
  static const bool ok = kiln_cpu::amx_request();
  return ok;
}
#define KILN_REQUIRE_AMX() \
  if (!cpuHasIsa() || !hostHasAmx()) GTEST_SKIP() << "this CPU (or OS) lacks AMX-BF16"
#else
#define KILN_REQUIRE_AMX() GTEST_SKIP() << "AMX kernels are built only for AVX-512 on Linux"
#endif

struct AmxCase {
  int64_t C, H, W, M;
  bool bias, residual;
  int np = 3;  // bf16 pieces: 3 (--amx exact) or 2 (--amx fast)
};

/// The error bound of np pieces relative to the sum of the terms' magnitudes over K terms:
/// f32's own dot-product bound for 3, plus 2^-14 for 2 (about 2^-16 a product).
double pieceBound(int np, int64_t K) {
  return double(K + 8) * 0x1p-24 + (np == 2 ? 0x1p-14 : 0.0);
}

/// y from conv2d_amx_f32 (threads: 0 for no pool), output over the residual when in_place.
std::vector<float> runAmx(const AmxCase& c, const std::vector<float>& x,
                          const std::vector<float>& w, const std::vector<float>& b,
                          const std::vector<float>& res, int threads, bool in_place) {
  std::vector<float> y(size_t(c.M * c.H * c.W), -7.0f);
#if defined(KILN_CPU_HAS_AMX_KERNELS)
  const kiln_cpu::Conv2dShape s{1, c.C, c.H, c.W, c.M, 1, 1, c.H, c.W, 1, 1, 1, 1, 0, 0, 1};
  EXPECT_TRUE(kiln_cpu::conv2d_amx_applies(s));
  std::vector<uint16_t> wp(size_t(kiln_cpu::conv2d_amx_packed_weight_bytes(s, c.np) / 2));
  kiln_cpu::conv2d_amx_pack_weights(s, w.data(), c.np, wp.data());
  const int pool_threads = threads > 0 ? threads : 1;
  std::vector<uint8_t> scratch(
      size_t(kiln_cpu::conv2d_amx_scratch_bytes(s, pool_threads, c.np) + 64));
  void* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  if (in_place) y = res;
  const float* r = c.residual ? (in_place ? y.data() : res.data()) : nullptr;
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr, r, 0);
  auto* pool = threads > 0 ? threadPool(threads) : nullptr;
  const float* bp = c.bias ? b.data() : nullptr;
  if (c.np == 2)
    kiln_cpu::conv2d_amx_f32<2>(s, x.data(), wp.data(), bp, y.data(), e, aligned, pool,
                                pool_threads);
  else
    kiln_cpu::conv2d_amx_f32<3>(s, x.data(), wp.data(), bp, y.data(), e, aligned, pool,
                                pool_threads);
#else
  (void)c, (void)x, (void)w, (void)b, (void)res, (void)threads, (void)in_place;
#endif
  return y;
}

/// Checks y against the double-precision conv within f32's own dot-product bound: |y - ref| <=
/// (K + 8) * 2^-24 * (the sum of the terms' magnitudes). The pieces keep each product within
/// f32's rounding (a two-piece split, 2^-16 a product, fails it at small K).
::testing::AssertionResult closeToReference(const AmxCase& c, const std::vector<float>& x,
                                            const std::vector<float>& w,
                                            const std::vector<float>& b,
                                            const std::vector<float>& res,
                                            const std::vector<float>& y) {
  const int64_t P = c.H * c.W;
  for (int64_t m = 0; m < c.M; ++m)
    for (int64_t p = 0; p < P; ++p) {
      double sum = c.bias ? b[size_t(m)] : 0.0, mag = std::fabs(sum);
      for (int64_t k = 0; k < c.C; ++k) {
        const double t = double(w[size_t(m * c.C + k)]) * x[size_t(k * P + p)];
        sum += t;
        mag += std::fabs(t);
      }
      if (c.residual) {
        sum += res[size_t(m * P + p)];
        mag += std::fabs(res[size_t(m * P + p)]);
      }
      const double want = sum > 0 ? sum : 0.0, got = y[size_t(m * P + p)];
      if (!(std::fabs(got - want) <= mag * pieceBound(c.np, c.C) + 1e-30))
        return ::testing::AssertionFailure()
               << c.np << " pieces, C=" << c.C << " HxW=" << c.H << "x" << c.W << " M=" << c.M
               << ": y[" << m << ", " << p << "] = " << got << ", the double conv " << want
               << " (terms " << mag << ")";
    }
  return ::testing::AssertionSuccess();
}

void checkPieces(const AmxCase& c, uint32_t seed) {
  Rng rng{seed};
  const int64_t P = c.H * c.W;
  const std::vector<float> x = filled(c.C * P, Data::kRandom, rng),
                           w = filled(c.M * c.C, Data::kRandom, rng),
                           b = filled(c.M, Data::kRandom, rng),
                           res = filled(c.M * P, Data::kRandom, rng);
  const std::vector<float> y1 = runAmx(c, x, w, b, res, 0, false);
  EXPECT_TRUE(closeToReference(c, x, w, b, res, y1));
  // Each output's k order is fixed: the same bits at any thread count, and over the residual.
  for (int t : {1, 2, 3}) {
    EXPECT_EQ(runAmx(c, x, w, b, res, t, false), y1) << t << " threads";
  }
  if (c.residual) {
    EXPECT_EQ(runAmx(c, x, w, b, res, 2, true), y1) << "over the residual";
  }
}

/// Both piece counts.
void checkCase(AmxCase c, uint32_t seed) {
  for (int np : {3, 2}) {
    c.np = np;
    checkPieces(c, seed);
  }
}

TEST(ConvAmx, MatchesDoubleReference) {
  KILN_REQUIRE_AMX();
  // Edges of the 32-deep K chunks, 32-row W blocks and 32-pixel blocks; ResNet-50-like sizes.
  const AmxCase cases[] = {{1, 1, 1, 1, true, false},     {31, 3, 5, 15, true, true},
                           {32, 4, 8, 16, false, true},   {33, 5, 7, 33, true, true},
                           {64, 7, 7, 96, true, true},    {100, 2, 17, 70, true, false},
                           {256, 14, 14, 64, true, true}, {2048, 1, 7, 40, false, false}};
  uint32_t seed = 1;
  for (const AmxCase& c : cases) checkCase(c, seed++);
}

TEST(ConvAmx, NonFiniteInputs) {
  KILN_REQUIRE_AMX();
  const AmxCase c{40, 2, 20, 20, true, false};
  const int64_t P = c.H * c.W;
  std::vector<float> x(size_t(c.C * P), 0.5f), w(size_t(c.M * c.C), 0.25f), b(size_t(c.M), 0.0f);
  x[size_t(3 * P + 5)] = std::numeric_limits<float>::infinity();   // pixel 5: +inf
  x[size_t(7 * P + 9)] = std::numeric_limits<float>::quiet_NaN();  // pixel 9: NaN
  const std::vector<float> y = runAmx(c, x, w, b, {}, 0, false);
  for (int64_t m = 0; m < c.M; ++m) {
    EXPECT_TRUE(std::isinf(y[size_t(m * P + 5)]) && y[size_t(m * P + 5)] > 0) << m;
    EXPECT_TRUE(std::isnan(y[size_t(m * P + 9)])) << m;
    EXPECT_FLOAT_EQ(y[size_t(m * P + 0)], 0.5f * 0.25f * float(c.C)) << m;
  }
}

}  // namespace

/// The manifest's sweep: C x H x W in, M out, 1x1 (KS = 1, S = 1), bias, residual and Relu.
void check_conv2d_amx_f32(const SweepCase& k) {
  KILN_REQUIRE_AMX();
  checkCase(AmxCase{k["C"], k["H"], k["W"], k["M"], true, true},
            uint32_t(k["C"] * 131 + k["M"] * 7 + k["W"]));
}

}  // namespace kiln_cpu_test
