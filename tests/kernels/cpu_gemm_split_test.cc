// Tests of how the GEMM driver splits a product over threads (kernels/cpu/gemm_split.h) where
// the split is about which core's data a thread reads, not only about balance: the bands of
// pixels of a product whose A is read in place (gemm_split_rowa). That every split computes the
// same bits is checked with the kernels themselves (cpu_kernels_test.cc's checkGemm runs the
// in-place driver at 1, 2 and 3 threads). Built once per SIMD layer.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cpu_kernels_check.h"
#include "kiln_cpu/gemm_split.h"

namespace {

using namespace kiln_cpu_test;
using kiln_cpu::kMR;
using kiln_cpu::kNR;

// A read in place (channels-last 1x1 convs): where rows are split, or the weights are the
// smaller operand, a thread's share of the units (the pool deals each thread a contiguous 1/T
// of them) is 1/T of the rows, give or take a band's rounding, as the depthwise convs around
// them split their pixels; each share holds every column.
TEST(CpuKernels, GemmSplitRowABandsFollowThePixels) {
  KILN_REQUIRE_ISA();
  namespace gd = kiln_cpu::gemm_detail;
  struct Shape {
    int64_t M, N, K;
    bool bands;
  };
  // MobileNetV2 at 2 threads: 14x14 expansion (was split by columns), 14x14 and 112x112
  // projections (were row chunks of whole strips: 108 / 88 of 196 rows); a 7x7 expansion
  // keeps its column split (its 0.6 MB of weights would be read by both cores).
  for (const Shape& sh : {Shape{196, 384, 64, true}, Shape{196, 64, 384, true},
                          Shape{12544, 16, 32, true}, Shape{49, 960, 160, false}}) {
    for (int T : {2, 3}) {
      SCOPED_TRACE(std::to_string(sh.M) + "x" + std::to_string(sh.N) + "x" +
                   std::to_string(sh.K) + ", " + std::to_string(T) + " threads");
      const gd::GemmSplit s = gd::gemm_split_rowa(sh.M, sh.N, sh.K, T);
      EXPECT_EQ(s.bands > 0, sh.bands);
      if (s.bands == 0) continue;
      const int64_t n_blocks = (sh.N + s.block - 1) / s.block, units = s.bands * n_blocks;
      EXPECT_EQ(s.bands % T, 0);
      EXPECT_GE(sh.M / s.bands, kMR);  // bands of at least a strip
      for (int t = 1; t < T; ++t) {
        const int64_t u = t * units / T;  // the first unit of thread t's share
        EXPECT_EQ(u % n_blocks, 0);       // a band's first column block
        const int64_t band = u / n_blocks;
        EXPECT_EQ(band * sh.M / s.bands, t * sh.M / T) << "share " << t;
      }
    }
  }
  // The tuner's plans keep their meaning.
  EXPECT_EQ(gd::gemm_split_rowa(196, 384, 64, 2, {kiln_cpu::GemmPlan::kColumns}).bands, 0);
  EXPECT_EQ(gd::gemm_split_rowa(196, 384, 64, 1).bands, 0);
}

// A column split with packed A counts a tail of at most 4 columns as the quarter panel that
// tail_columns costs: 12 panels and 4 columns on 2 threads as blocks of 6 (6 and 6 + tail), not
// balanced_block's 7 (7 and 5 + tail); never a busier thread than balanced_block's blocks, and
// the same blocks where the tail is not tail_columns' (A in place, or wider than 4 columns).
// That the split keeps the bits: cpu_kernels_test.cc's GemmRowChunks.
TEST(CpuKernels, GemmColumnSplitCountsTheTail) {
  KILN_REQUIRE_ISA();
  namespace gd = kiln_cpu::gemm_detail;
  const int64_t max_block = kiln_cpu::kNC / kNR;
  EXPECT_EQ(gd::column_block(12 * kNR + 4, 2, true), 6);
  EXPECT_EQ(gd::column_load(12 * kNR + 4, 2, 6), 25);
  EXPECT_EQ(gd::gemm_split(4 * kMR, 12 * kNR + 4, 2, {kiln_cpu::GemmPlan::kColumns}, true).block,
            6 * kNR);
  for (int64_t n = 1; n <= 20 * kNR; n += 3)
    for (int T : {2, 3, 4}) {
      const int64_t panels = (n + kNR - 1) / kNR, old = gd::balanced_block(panels, T, max_block);
      const int64_t b = gd::column_block(n, T, true);
      ASSERT_TRUE(b >= 1 && b <= max_block) << n << " columns, " << T << " threads";
      EXPECT_LE(gd::column_load(n, T, b), gd::column_load(n, T, old)) << n << ", " << T;
      EXPECT_EQ(gd::column_block(n, T, false), old) << n << ", " << T;
      if (n % kNR == 0 || n % kNR > 4) {
        EXPECT_EQ(b, old) << n << ", " << T;
      }
    }
}

}  // namespace
