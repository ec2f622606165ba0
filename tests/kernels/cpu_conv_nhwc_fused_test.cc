// Tests of kiln_cpu::nhwc_expand_dw_f32 (kernels/cpu/conv_nhwc_fused.h): the fused 1x1 +
// depthwise pair must be bit-identical to the two unfused kernels run one after the other
// (gemm_f32_rowa_packed_b over all pixels, then depthwise_conv2d_nhwc_f32), on MobileNetV2's
// shapes and edge cases (pads past the kernel, strides 1-3, dilation, bands at image borders,
// one-row images), with every epilogue kind, at 1, 2 and 3 threads and with scratch sized for
// more threads than the pool runs; nothing may be written past y or the scratch.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/conv_nhwc.h"
#include "kiln_cpu/conv_nhwc_fused.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"

namespace {

using namespace kiln_cpu_test;

struct FusedCase {
  const char* name;
  int64_t N, Cin, C, H, W, KH, KW, SH, SW, DH, DW, PH, PW, pb, pr;
};

// clang-format off
const FusedCase kFusedCases[] = {
  // name                N Cin   C    H    W  KH KW SH SW DH DW PH PW pb pr
  {"mbv2_block3_s1",     1, 24, 144, 56,  56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"mbv2_block2_s2",     1, 16,  96, 40,  40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"odd_17x13_s2",       2,  7,  40, 17,  13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c_tail_33",          1,  5,  33, 11,  12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"one_row",            2,  3,  20,  1,   9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"pad_only_rows",      1,  4,  24,  4,   5, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3},
  {"s3_d2_5x5",          1,  6,  24, 19,  17, 5, 5, 3, 2, 2, 1, 2, 2, 3, 1},
  {"asym_pads",          1,  8,  48, 15,  14, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0},
  {"K>kKC",              1, 600, 32,  9,   8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
};
// clang-format on

void PrintTo(const FusedCase& c, std::ostream* os) { *os << c.name; }

template <class Act1, class Act2>
void checkFused(const FusedCase& c, Act1 act1, Act2 act2, bool with_bias, bool with_residual,
                uint64_t seed) {
  SCOPED_TRACE(std::string(c.name) + (with_bias ? " bias" : "") +
               (with_residual ? " residual" : ""));
  const int64_t OH = (c.H + c.PH + c.pb - c.DH * (c.KH - 1) - 1) / c.SH + 1;
  const int64_t OW = (c.W + c.PW + c.pr - c.DW * (c.KW - 1) - 1) / c.SW + 1;
  ASSERT_GT(OH, 0);
  ASSERT_GT(OW, 0);
  const kiln_cpu::Conv2dShape s{c.N, c.C,  c.H,  c.W,  c.C,  c.KH, c.KW, OH,
                                OW,  c.SH, c.SW, c.DH, c.DW, c.PH, c.PW, c.C};
  const int64_t pixels = c.N * c.H * c.W, y_floats = c.N * OH * OW * c.C;
  Rng rng{seed};
  const Vec x = filled(pixels * c.Cin, Data::kRandom, rng);
  const Vec w1 = filled(c.Cin * c.C, Data::kRandom, rng);  // W1^T [Cin, C], row-major
  const Vec b1 = filled(c.C, Data::kRandom, rng), bd = filled(c.C, Data::kRandom, rng);
  const Vec wd = filled(c.KH * c.KW * c.C, Data::kRandom, rng);  // tap-major already
  const Vec res = filled(y_floats, Data::kRandom, rng);
  Vec w1p(size_t(kiln_cpu::packed_b_floats(c.Cin, c.C)));
  kiln_cpu::pack_b_panels(w1.data(), c.Cin, c.C, w1p.data());
  const float* b1p = with_bias ? b1.data() : nullptr;
  const float* bdp = with_bias ? bd.data() : nullptr;
  const auto e2 = kiln_cpu::make_epilogue(act2, nullptr, nullptr,
                                          with_residual ? res.data() : nullptr, 0);

  // The unfused pair.
  Vec e(static_cast<size_t>(pixels * c.C)), want(static_cast<size_t>(y_floats));
  kiln_cpu::gemm_f32_rowa_packed_b(pixels, c.C, c.Cin, x.data(), c.Cin, w1p.data(), e.data(),
                                   c.C, kiln_cpu::make_epilogue(act1, nullptr, b1p, nullptr, c.C),
                                   nullptr);
  kiln_cpu::depthwise_conv2d_nhwc_f32(s, e.data(), wd.data(), bdp, want.data(), e2, nullptr);

  auto run = [&](int scratch_threads, kiln_cpu::ThreadPool* p) {
    const int64_t used = kiln_cpu::expand_dw_scratch_floats(s, scratch_threads);
    Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::nhwc_expand_dw_f32(s, c.Cin, x.data(), w1p.data(), b1p, act1, wd.data(), bdp,
                                 y.data(), e2, scratch.data(), scratch_threads, p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "wrote past y";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "wrote past the scratch";
    y.resize(size_t(y_floats));
    return y;
  };
  EXPECT_TRUE(identical(want, run(1, nullptr))) << "1 thread";
  for (int t = 1; t <= 3; ++t) {
    EXPECT_TRUE(identical(want, run(t, threadPool(t)))) << t << " threads";
    EXPECT_TRUE(identical(want, run(t + 2, threadPool(t)))) << t << " of " << t + 2 << " threads";
  }
}

class FusedCases : public ::testing::TestWithParam<FusedCase> {};

TEST_P(FusedCases, Relu6Relu6) {  // MobileNetV2's
  KILN_REQUIRE_ISA();
  const kiln_ref::Clip<float> relu6{0.0f, 6.0f};
  checkFused(GetParam(), relu6, relu6, true, false, 21);
}

TEST_P(FusedCases, NoneReluResidual) {
  KILN_REQUIRE_ISA();
  checkFused(GetParam(), kiln_ref::NoActivation{}, kiln_ref::Relu{}, false, true, 22);
}

TEST_P(FusedCases, EluSigmoid) {  // both applied scalar over the stored values
  KILN_REQUIRE_ISA();
  checkFused(GetParam(), kiln_ref::Elu{0.5f}, kiln_ref::Sigmoid{}, true, true, 23);
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, FusedCases, ::testing::ValuesIn(kFusedCases),
                         kiln_cpu_test::CaseName{});

}  // namespace

namespace kiln_cpu_test {

/// A manifest case: N = 1, Cin channels expanded to C, H x W, a 3x3 depthwise conv at stride S
/// with pads 1: MobileNetV2's Relu6 pair with bias, and no activation then Relu with residual.
void check_nhwc_expand_dw_f32(const SweepCase& k) {
  const int64_t S = k["S"];
  const FusedCase c{"sweep", 1, k["Cin"], k["C"], k["H"], k["W"], 3, 3, S, S, 1, 1, 1, 1, 1, 1};
  const kiln_ref::Clip<float> relu6{0.0f, 6.0f};
  checkFused(c, relu6, relu6, true, false, 61);
  checkFused(c, kiln_ref::NoActivation{}, kiln_ref::Relu{}, false, true, 62);
}

}  // namespace kiln_cpu_test
