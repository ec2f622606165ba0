// gemm_amx_f32 (kernels/cpu/gemm_amx.h): C = A * B with B packed at compile time, in bf16
// pieces on AMX tiles, against a double-precision product within f32's dot-product bound,
// with every epilogue part, the same bits at 1, 2 and 3 threads, and over the residual.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/amx_weights.h"
#include "kiln_cpu/gemm_amx.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"

namespace kiln_cpu_test {
namespace {

#if defined(KILN_CPU_HAS_AMX_KERNELS)
#define KILN_REQUIRE_AMX_GEMM() \
  if (!cpuHasIsa() || !kiln_cpu::amx_request()) GTEST_SKIP() << "this CPU (or OS) lacks AMX-BF16"
#else
#define KILN_REQUIRE_AMX_GEMM() GTEST_SKIP() << "AMX kernels are built only for AVX-512 on Linux"
#endif

struct AmxGemmCase {
  int64_t M, N, K;
  bool row_bias, col_bias, residual;
  int np = 3;  // bf16 pieces: 3 (--amx exact) or 2 (--amx fast)
};

/// C from gemm_amx_f32 with B [K, N] given transposed in memory (b[n * K + k], as a MatMul's
/// weights may be) and A's rows lda = K + 3 apart; threads 0: no pool.
std::vector<float> runGemm(const AmxGemmCase& g, const std::vector<float>& a,
                           const std::vector<float>& bt, const std::vector<float>& rb,
                           const std::vector<float>& cb, const std::vector<float>& res, int threads,
                           bool in_place) {
  std::vector<float> c(size_t(g.M * g.N), -7.0f);
#if defined(KILN_CPU_HAS_AMX_KERNELS)
  std::vector<uint16_t> bp(size_t(kiln_cpu::amx_packed_b_bytes(g.K, g.N, g.np) / 2));
  kiln_cpu::amx_pack_b(bt.data(), g.K, g.N, /*sk=*/1, /*sn=*/g.K, g.np, bp.data());
  const int t = threads > 0 ? threads : 1;
  std::vector<uint8_t> scratch(
      size_t(kiln_cpu::gemm_amx_scratch_bytes(g.M, g.N, g.K, t, g.np) + 64));
  void* aligned = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  if (in_place) c = res;
  const float* r = g.residual ? (in_place ? c.data() : res.data()) : nullptr;
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, g.row_bias ? rb.data() : nullptr,
                                         g.col_bias ? cb.data() : nullptr, r, g.N);
  auto* pool = threads > 0 ? threadPool(threads) : nullptr;
  if (g.np == 2)
    kiln_cpu::gemm_amx_f32<2>(g.M, g.N, g.K, a.data(), g.K + 3, bp.data(), c.data(), g.N, e,
                              aligned, pool, t);
  else
    kiln_cpu::gemm_amx_f32<3>(g.M, g.N, g.K, a.data(), g.K + 3, bp.data(), c.data(), g.N, e,
                              aligned, pool, t);
#else
  (void)g, (void)a, (void)bt, (void)rb, (void)cb, (void)res, (void)threads, (void)in_place;
#endif
  return c;
}

void checkGemmPieces(const AmxGemmCase& g, uint32_t seed) {
  Rng rng{seed};
  const std::vector<float> a = filled(g.M * (g.K + 3), Data::kRandom, rng),
                           bt = filled(g.N * g.K, Data::kRandom, rng),
                           rb = filled(g.M, Data::kRandom, rng),
                           cb = filled(g.N, Data::kRandom, rng),
                           res = filled(g.M * g.N, Data::kRandom, rng);
  const std::vector<float> c = runGemm(g, a, bt, rb, cb, res, 0, false);
  for (int64_t m = 0; m < g.M; ++m)
    for (int64_t n = 0; n < g.N; ++n) {
      double sum = 0, mag = 0;
      for (int64_t k = 0; k < g.K; ++k) {
        const double t = double(a[size_t(m * (g.K + 3) + k)]) * bt[size_t(n * g.K + k)];
        sum += t;
        mag += std::fabs(t);
      }
      for (double extra :
           {g.row_bias ? double(rb[size_t(m)]) : 0.0, g.col_bias ? double(cb[size_t(n)]) : 0.0,
            g.residual ? double(res[size_t(m * g.N + n)]) : 0.0}) {
        sum += extra;
        mag += std::fabs(extra);
      }
      const double want = sum > 0 ? sum : 0.0, got = c[size_t(m * g.N + n)];
      ASSERT_LE(std::fabs(got - want),
                mag * (double(g.K + 8) * 0x1p-24 + (g.np == 2 ? 0x1p-14 : 0.0)) + 1e-30)
          << g.np << " pieces, M=" << g.M << " N=" << g.N << " K=" << g.K << " at (" << m << ", "
          << n << ")";
    }
  for (int t : {1, 2, 3}) {
    EXPECT_EQ(runGemm(g, a, bt, rb, cb, res, t, false), c) << t << " threads";
  }
  if (g.residual) {
    EXPECT_EQ(runGemm(g, a, bt, rb, cb, res, 2, true), c) << "over the residual";
  }
}

/// Both piece counts.
void checkGemm(AmxGemmCase g, uint32_t seed) {
  for (int np : {3, 2}) {
    g.np = np;
    checkGemmPieces(g, seed);
  }
}

TEST(GemmAmx, MatchesDoubleReference) {
  KILN_REQUIRE_AMX_GEMM();
  const AmxGemmCase cases[] = {
      {1, 1, 1, true, true, true},        {5, 17, 31, false, true, false},
      {32, 32, 32, true, false, true},    {33, 48, 65, true, true, true},
      {196, 96, 16, false, true, true},   {128, 70, 768, false, true, false},
      {49, 1280, 320, false, true, false}};
  uint32_t seed = 1;
  for (const AmxGemmCase& g : cases) checkGemm(g, seed++);
}

TEST(GemmAmx, NonFiniteRows) {
  KILN_REQUIRE_AMX_GEMM();
  const int64_t M = 40, N = 20, K = 40;
  std::vector<float> a(size_t(M * (K + 3)), 0.5f), bt(size_t(N * K), 0.25f);
  a[size_t(3 * (K + 3) + 5)] = std::numeric_limits<float>::infinity();   // row 3: +inf
  a[size_t(9 * (K + 3) + 1)] = std::numeric_limits<float>::quiet_NaN();  // row 9: NaN
  const std::vector<float> c = runGemm({M, N, K, false, false, false}, a, bt, {}, {}, {}, 0, false);
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_TRUE(std::isinf(c[size_t(3 * N + n)]) && c[size_t(3 * N + n)] > 0) << n;
    EXPECT_TRUE(std::isnan(c[size_t(9 * N + n)])) << n;
    EXPECT_FLOAT_EQ(c[size_t(0 * N + n)], 0.5f * 0.25f * float(K)) << n;
    EXPECT_FLOAT_EQ(c[size_t(39 * N + n)], 0.5f * 0.25f * float(K)) << n;
  }
}

}  // namespace

/// The manifest's sweep: M x N x K with column bias, residual and Relu.
void check_gemm_amx_f32(const SweepCase& k) {
  KILN_REQUIRE_AMX_GEMM();
  checkGemm(AmxGemmCase{k["M"], k["N"], k["K"], false, true, true},
            uint32_t(k["M"] * 131 + k["N"] * 7 + k["K"]));
}

}  // namespace kiln_cpu_test
