// The AVX-512 GEMM tiles of 17-24 columns built with KILN_CPU_YMM_TAIL (kernels/cpu/gemm.h:
// columns 16-23 in a 256-bit fma per row, what generated code uses on cores that run a 512-bit
// fma as two halves, AMD Zen 4), against kernels/ref: exact data bit for bit, random data within
// a dot product's rounding bound, every epilogue part, the three drivers bit-identical to each
// other and at 1-3 threads. A binary of its own: the macro changes gemm.h's inline functions,
// which must not meet the default build's in one program. The default build's tiles are the
// kiln_cpu_kernels_avx512 binary's.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cpu_kernels_check.h"
#include "kiln_cpu/gemm.h"
#include "kiln_ref/activation.h"

#if !defined(KILN_CPU_YMM_TAIL) || !defined(KILN_CPU_AVX512)
#error "build with -march=x86-64-v4 -DKILN_CPU_YMM_TAIL=1"
#endif

namespace {

using namespace kiln_cpu_test;

template <class Act>
void checkTail(const GemmCase& g, Act act, Data data, uint64_t seed) {
  SCOPED_TRACE(describe(g) + (data == Data::kExact ? " exact" : " random"));
  const int64_t M = g.M, N = g.N, K = g.K;
  const GemmOperands op = gemmOperands(g, act, data, seed);
  const int64_t lda = op.lda, ldb = op.ldb, ldc = op.ldc;
  const Vec &a = op.a, &b = op.b;
  const auto e = kiln_cpu::make_epilogue(act, g.row_bias ? op.rb.data() : nullptr,
                                         g.col_bias ? op.cb.data() : nullptr,
                                         g.residual ? op.res.data() : nullptr, op.ldr);
  Vec panels(size_t(kiln_cpu::packed_b_floats(K, N)));
  kiln_cpu::pack_b_panels(op.bc.data(), K, N, panels.data());
  const int64_t c_floats = M * ldc;
  auto rowA = [&](int threads) {
    Vec c(size_t(c_floats + kGuard), kSentinel);
    kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, e,
                                     threadPool(threads));
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << "rowa, " << threads << " threads";
    return c;
  };
  auto packedB = [&](int threads) {
    Vec c(size_t(c_floats + kGuard), kSentinel);
    Vec scratch(size_t(kiln_cpu::gemm_f32_packed_b_scratch_floats(M, K)));
    kiln_cpu::gemm_f32_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, e,
                                scratch.data(), threadPool(threads));
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << "packed_b, " << threads << " threads";
    return c;
  };
  auto f32 = [&](int threads) {
    const int64_t used = kiln_cpu::gemm_f32_scratch_floats(M, N, K, threads);
    Vec c(size_t(c_floats + kGuard), kSentinel);
    Vec scratch(static_cast<size_t>(used));
    kiln_cpu::gemm_f32(M, N, K, a.data(), lda, b.data(), ldb, c.data(), ldc, e, scratch.data(),
                       threadPool(threads));
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << "f32, " << threads << " threads";
    return c;
  };
  const Vec base = rowA(1);
  EXPECT_TRUE(near(op.want, base, M, N, ldc, data == Data::kRandom ? &op.tol : nullptr));
  for (int t = 1; t <= 3; ++t) {
    if (t > 1) {
      EXPECT_TRUE(identical(base, rowA(t))) << "rowa, " << t << " threads";
    }
    EXPECT_TRUE(identical(base, packedB(t))) << "packed_b, " << t << " threads";
    EXPECT_TRUE(identical(base, f32(t))) << "f32, " << t << " threads";
  }
}

// Columns: the tails the macro changes (17-24, alone and after whole panels), and neighbours
// that do not take them (16, 25, 32). Rows: every tile height up to kMR and past it. Depths: one
// k step, odd ones, and more than one kKC block (earlier blocks' sums wait in C).
TEST(CpuYmmTail, AgainstReferenceAndAcrossDrivers) {
  KILN_REQUIRE_ISA();
  uint64_t seed = 1;
  for (int64_t N : {16, 17, 19, 23, 24, 25, 32, 49, 56, 88})
    for (int64_t M : {1, 2, 5, 11, 12, 13, 25, 49})
      for (int64_t K : {1, 7, 24, 144, 600}) {
        const GemmCase g{M, N, K, M % 2 == 1, N % 2 == 0, K % 3 == 0, M == 13 ? 3 : 0};
        for (Data d : {Data::kExact, Data::kRandom}) {
          checkTail(g, kiln_ref::NoActivation{}, d, seed++);
          if (K == 24 || K == 144) checkTail(g, kiln_ref::Clip<float>{0.0f, 6.0f}, d, seed++);
        }
      }
}

// MobileNetV2's 24-channel projections (56x56 pixels, 96 and 144 input channels) with their
// residual, and a scalar-path activation over the stored tile.
TEST(CpuYmmTail, ModelShapes) {
  KILN_REQUIRE_ISA();
  checkTail(GemmCase{3136, 24, 96, true, false, false}, kiln_ref::NoActivation{}, Data::kRandom, 7);
  checkTail(GemmCase{3136, 24, 144, true, false, true}, kiln_ref::NoActivation{}, Data::kRandom, 8);
  checkTail(GemmCase{49, 24, 144, true, true, true}, ScalarOnly<kiln_ref::Relu>{}, Data::kExact, 9);
}

}  // namespace
