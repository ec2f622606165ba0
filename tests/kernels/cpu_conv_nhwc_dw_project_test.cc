// Tests of kiln_cpu::nhwc_dw_project_f32 (kernels/cpu/conv_nhwc_fused.h): the depthwise conv
// fused into the 1x1 projection that reads it must be bit-identical to the two unfused kernels
// run one after the other (depthwise_conv2d_nhwc_f32, then gemm_f32_rowa_packed_b over all
// pixels), on MobileNetV2's shapes and edge cases (strides, dilation, pads past the kernel,
// batches, one-row images, K past a k block, channel tails), with and without bias, residual
// and activations, the output over the residual, at 1, 2 and 3 threads and with scratch sized
// for more threads than the pool runs; nothing may be written past y or the scratch.
#include <gtest/gtest.h>

#include <algorithm>
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

struct ProjectCase {
  const char* name;
  int64_t N, C, M, H, W, KH, KW, SH, SW, DH, DW, PH, PW, pb, pr;
};

// clang-format off
const ProjectCase kProjectCases[] = {
  // name                N    C    M    H    W  KH KW SH SW DH DW PH PW pb pr
  {"mbv2_14x14_576",     1, 576,  96, 14,  14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"mbv2_7x7_960",       1, 960, 160,  7,   7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"mbv2_28x28_s2",      1, 144,  32, 28,  28, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"mbv2_f1_112",        1,  32,  16, 24,  24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"odd_17x13_s2",       2,  40,  33, 17,  13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c_tail_33",          1,  33,  31, 11,  12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"one_row",            2,  20,   7,  1,   9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"pad_only_rows",      1,  24,  40,  4,   5, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3},
  {"s3_d2_5x5",          1,  24,  17, 19,  17, 5, 5, 3, 2, 2, 1, 2, 2, 3, 1},
  {"asym_pads",          1,  48,  64, 15,  14, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0},
  {"M1",                 1,  16,   1,  6,   6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
};
// clang-format on

void PrintTo(const ProjectCase& c, std::ostream* os) {
  *os << c.name;
}

template <class Act1, class Act2>
void checkProject(const ProjectCase& c, Act1 act1, Act2 act2, bool with_bias, bool with_residual,
                  uint64_t seed) {
  SCOPED_TRACE(std::string(c.name) + (with_bias ? " bias" : "") +
               (with_residual ? " residual" : ""));
  const int64_t OH = (c.H + c.PH + c.pb - c.DH * (c.KH - 1) - 1) / c.SH + 1;
  const int64_t OW = (c.W + c.PW + c.pr - c.DW * (c.KW - 1) - 1) / c.SW + 1;
  ASSERT_GT(OH, 0);
  ASSERT_GT(OW, 0);
  const kiln_cpu::Conv2dShape s{c.N, c.C,  c.H,  c.W,  c.C,  c.KH, c.KW, OH,
                                OW,  c.SH, c.SW, c.DH, c.DW, c.PH, c.PW, c.C};
  const int64_t pixels = c.N * OH * OW, d_floats = pixels * c.C, y_floats = pixels * c.M;
  Rng rng{seed};
  const Vec x = filled(c.N * c.H * c.W * c.C, Data::kRandom, rng);
  const Vec wd = filled(c.KH * c.KW * c.C, Data::kRandom, rng);  // tap-major already
  const Vec bd = filled(c.C, Data::kRandom, rng), bp = filled(c.M, Data::kRandom, rng);
  const Vec wp = filled(c.C * c.M, Data::kRandom, rng);  // Wp^T [C, M], row-major
  const Vec res = filled(y_floats, Data::kRandom, rng);
  Vec wpp(size_t(kiln_cpu::packed_b_floats(c.C, c.M)));
  kiln_cpu::pack_b_panels(wp.data(), c.C, c.M, wpp.data());
  const float* bdp = with_bias ? bd.data() : nullptr;
  const float* bpp = with_bias ? bp.data() : nullptr;
  auto e2 = [&](const float* r) { return kiln_cpu::make_epilogue(act2, nullptr, bpp, r, c.M); };

  // The unfused pair.
  Vec d(static_cast<size_t>(d_floats)), want(static_cast<size_t>(y_floats));
  kiln_cpu::depthwise_conv2d_nhwc_f32(s, x.data(), wd.data(), bdp, d.data(),
                                      kiln_cpu::make_epilogue(act1, nullptr, nullptr, nullptr, 0),
                                      nullptr);
  kiln_cpu::gemm_f32_rowa_packed_b(pixels, c.M, c.C, d.data(), c.C, wpp.data(), want.data(), c.M,
                                   e2(with_residual ? res.data() : nullptr), nullptr);

  // over: y is the residual's buffer (one k block only, as gemm_f32_rowa_packed_b allows).
  auto run = [&](int scratch_threads, kiln_cpu::ThreadPool* p, bool over) {
    const int64_t used = kiln_cpu::dw_project_scratch_floats(s, scratch_threads);
    Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    if (over) std::copy(res.begin(), res.end(), y.begin());
    const float* r = !with_residual ? nullptr : over ? y.data() : res.data();
    kiln_cpu::nhwc_dw_project_f32(s, x.data(), wd.data(), bdp, act1, c.M, wpp.data(), y.data(),
                                  e2(r), scratch.data(), scratch_threads, p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "wrote past y";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "wrote past the scratch";
    y.resize(size_t(y_floats));
    return y;
  };
  const bool over = with_residual && c.C <= kiln_cpu::kKC;
  EXPECT_TRUE(identical(want, run(1, nullptr, false))) << "1 thread";
  for (int t = 1; t <= 3; ++t) {
    EXPECT_TRUE(identical(want, run(t, threadPool(t), false))) << t << " threads";
    EXPECT_TRUE(identical(want, run(t + 2, threadPool(t), false)))
        << t << " of " << t + 2 << " threads";
    if (over) {
      EXPECT_TRUE(identical(want, run(t, threadPool(t), true))) << t << " threads, over";
    }
  }
}

class ProjectCases : public ::testing::TestWithParam<ProjectCase> {};

TEST_P(ProjectCases, Relu6NoneResidual) {  // MobileNetV2's
  KILN_REQUIRE_ISA();
  checkProject(GetParam(), kiln_ref::Clip<float>{0.0f, 6.0f}, kiln_ref::NoActivation{}, true, true,
               41);
}

TEST_P(ProjectCases, Relu6None) {
  KILN_REQUIRE_ISA();
  checkProject(GetParam(), kiln_ref::Clip<float>{0.0f, 6.0f}, kiln_ref::NoActivation{}, true, false,
               42);
}

TEST_P(ProjectCases, EluSigmoidNoBias) {  // both applied scalar over the stored values
  KILN_REQUIRE_ISA();
  checkProject(GetParam(), kiln_ref::Elu{0.5f}, kiln_ref::Sigmoid{}, false, true, 43);
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, ProjectCases, ::testing::ValuesIn(kProjectCases),
                         kiln_cpu_test::CaseName{});

// Bands: a multiple of the threads (at most the rows), each of about 4 strips of pixels.
TEST(CpuKernels, DwProjectBands) {
  auto shape = [](int64_t N, int64_t H) {
    return kiln_cpu::Conv2dShape{N, 8, H, H, 8, 3, 3, H, H, 1, 1, 1, 1, 1, 1, 8};
  };
  const int64_t mr = kiln_cpu::kMR, rows14 = (4 * mr + 13) / 14;  // 4 on AVX-512
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 14), 1), (14 + rows14 - 1) / rows14);
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 14), 2), 2 * ((7 + rows14 - 1) / rows14));
  const int64_t rows7 = (4 * mr + 6) / 7, bands7 = 2 * ((4 + rows7 - 1) / rows7);
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 7), 2), bands7);  // AVX-512: 3 and 4 rows
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 7), 1), (7 + rows7 - 1) / rows7);
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 1), 3), 1);
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 112), 2), 112);
  EXPECT_EQ(kiln_cpu::dw_project_bands(shape(1, 5), 8), 5);
  EXPECT_EQ(kiln_cpu::dw_project_scratch_floats(shape(1, 7), 2),
            ((7 + bands7 - 1) / bands7 * 7 * 8 + 15) / 16 * 16 * 2);
}

}  // namespace

namespace kiln_cpu_test {

/// A manifest case: N = 1, a 3x3 depthwise conv on C channels at stride S with pads 1, then a
/// 1x1 projection to M channels: MobileNetV2's Relu6 + residual pair, and Relu then none.
void check_nhwc_dw_project_f32(const SweepCase& k) {
  const int64_t S = k["S"];
  const ProjectCase c{"sweep", 1, k["C"], k["M"], k["H"], k["W"], 3, 3, S, S, 1, 1, 1, 1, 1, 1};
  checkProject(c, kiln_ref::Clip<float>{0.0f, 6.0f}, kiln_ref::NoActivation{}, true, true, 71);
  checkProject(c, kiln_ref::Relu{}, kiln_ref::NoActivation{}, false, false, 72);
}

}  // namespace kiln_cpu_test
