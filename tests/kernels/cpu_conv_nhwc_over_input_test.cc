// Tests of kiln_cpu::depthwise_conv2d_nhwc_f32 writing its output over its own input
// (y == x - depthwise_nhwc_shift_floats(s), the buffer holding that headroom before x): the
// result must be bit-identical to the same conv out of place, at 1, 2 and 3 threads, with the
// scratch sized for as many threads as the pool runs or more (row bands with deferred rows,
// handed over between threads or copied at the end), or for one thread where the pool runs
// more (the channel split), and nothing may be written outside the headroom, x or the scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "cpu_kernels_check.h"
#include "kiln_cpu/conv_nhwc.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"

namespace {

using namespace kiln_cpu_test;

struct OverCase {
  const char* name;
  int64_t C, H, W, K;  // a K x K filter, pads (K - 1) / 2: the output the input's size
};

// clang-format off
const OverCase kOverCases[] = {
  // name                  C    H    W  K
  {"mbv2_f1_32x112",      32, 112, 112, 3},
  {"mbv2_576x14",        576,  14,  14, 3},
  {"c144_28x28",         144,  28,  28, 3},
  {"c1_7x7",               1,   7,   7, 3},
  {"c17_9x5",             17,   9,   5, 3},
  {"c33_5x13",            33,   5,  13, 3},
  {"c64_3x3",             64,   3,   3, 3},  // bands shorter than KH rows: copies at the end
  {"c40_13x11_5x5",       40,  13,  11, 5},
  {"c96_2x9",             96,   2,   9, 3},
  {"c20_1x1",             20,   1,   1, 3},
  {"c24_6x7_1x1",         24,   6,   7, 1},  // no pads: each output over its own input
  {"c130_4x31",          130,   4,  31, 3},
};
// clang-format on

void PrintTo(const OverCase& c, std::ostream* os) {
  *os << c.name;
}

template <class Act>
void checkOver(const OverCase& c, Act act, bool with_bias, uint64_t seed) {
  SCOPED_TRACE(std::string(c.name) + (with_bias ? " bias" : ""));
  const int64_t P = (c.K - 1) / 2;
  const kiln_cpu::Conv2dShape s{1, c.C, c.H, c.W, c.C, c.K, c.K, c.H, c.W, 1, 1, 1, 1, P, P, c.C};
  ASSERT_TRUE(kiln_cpu::depthwise_nhwc_over_input_ok(s));
  const int64_t n = c.H * c.W * c.C, shift = kiln_cpu::depthwise_nhwc_shift_floats(s);
  Rng rng{seed};
  const Vec x = filled(n, Data::kRandom, rng);
  const Vec w = filled(c.K * c.K * c.C, Data::kRandom, rng), b = filled(c.C, Data::kRandom, rng);
  const float* bias = with_bias ? b.data() : nullptr;
  const auto e = kiln_cpu::make_epilogue(act, nullptr, nullptr, nullptr, 0);
  Vec want(static_cast<size_t>(n));
  kiln_cpu::depthwise_conv2d_nhwc_f32(s, x.data(), w.data(), bias, want.data(), e, nullptr);

  auto run = [&](int scratch_threads, kiln_cpu::ThreadPool* p) {
    const int64_t used = kiln_cpu::depthwise_nhwc_scratch_floats(s, scratch_threads);
    // [guard][headroom: shift floats][x: n floats][guard]
    Vec buf(size_t(kGuard + shift + n + kGuard), kSentinel),
        scratch(size_t(used + kGuard), kSentinel);
    float* xin = buf.data() + kGuard + shift;
    std::copy(x.begin(), x.end(), xin);
    kiln_cpu::depthwise_conv2d_nhwc_f32(s, xin, w.data(), bias, xin - shift, e, p, scratch.data(),
                                        scratch_threads);
    EXPECT_TRUE(std::all_of(buf.begin(), buf.begin() + kGuard, [](float v) {
      return v == kSentinel;
    })) << "wrote before the headroom";
    EXPECT_TRUE(untouched(buf, 0, 0, 0, kGuard + shift + n)) << "wrote past x";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "wrote past the scratch";
    return Vec(buf.begin() + kGuard, buf.begin() + kGuard + n);
  };
  EXPECT_TRUE(identical(want, run(1, nullptr))) << "1 thread";
  for (int t = 1; t <= 3; ++t) {
    EXPECT_TRUE(identical(want, run(t, threadPool(t)))) << t << " threads";
    EXPECT_TRUE(identical(want, run(t + 2, threadPool(t)))) << t << " of " << t + 2 << " threads";
    EXPECT_TRUE(identical(want, run(t + 1, nullptr))) << "scratch for " << t + 1 << ", no pool";
    EXPECT_TRUE(identical(want, run(1, threadPool(t)))) << "1 of " << t << " threads";
  }
}

class OverCases : public ::testing::TestWithParam<OverCase> {};

TEST_P(OverCases, Relu6Bias) {  // MobileNetV2's
  KILN_REQUIRE_ISA();
  checkOver(GetParam(), kiln_ref::Clip<float>{0.0f, 6.0f}, true, 31);
}

TEST_P(OverCases, Plain) {
  KILN_REQUIRE_ISA();
  checkOver(GetParam(), kiln_ref::NoActivation{}, false, 32);
}

TEST_P(OverCases, EluBias) {  // applied scalar over the stored values
  KILN_REQUIRE_ISA();
  checkOver(GetParam(), kiln_ref::Elu{0.5f}, true, 33);
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, OverCases, ::testing::ValuesIn(kOverCases),
                         kiln_cpu_test::CaseName{});

// The shapes that may not be written over their input: strides, dilations, batches, outputs of
// another size.
TEST(CpuKernels, DepthwiseNhwcOverInputShapes) {
  const kiln_cpu::Conv2dShape ok{1, 8, 5, 5, 8, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 8};
  EXPECT_TRUE(kiln_cpu::depthwise_nhwc_over_input_ok(ok));
  EXPECT_EQ(kiln_cpu::depthwise_nhwc_shift_floats(ok), (5 + 1) * 8);
  auto with = [&ok](int64_t kiln_cpu::Conv2dShape::*f, int64_t v, int64_t oh) {
    kiln_cpu::Conv2dShape s = ok;
    s.*f = v;
    s.OH = oh;
    return kiln_cpu::depthwise_nhwc_over_input_ok(s);
  };
  EXPECT_FALSE(with(&kiln_cpu::Conv2dShape::N, 2, 5));   // a batch
  EXPECT_FALSE(with(&kiln_cpu::Conv2dShape::SH, 2, 3));  // a stride
  EXPECT_FALSE(with(&kiln_cpu::Conv2dShape::DW, 2, 5));  // a dilation
  EXPECT_FALSE(with(&kiln_cpu::Conv2dShape::PH, 0, 3));  // a smaller output
}

// Where the conv runs over its input at 2 threads: in row bands where a band has more than 4 KH
// rows (MobileNetV2's 28x28 and 56x56 convs, PP-OCRv4 det's 80x80 ones), else out of place
// (its 14x14 and 7x7 ones, PP-OCRv4 det's 40x40 and 20x20 5x5 ones); at one thread always.
TEST(CpuKernels, DepthwiseNhwcOverInputPaysAtTwoThreads) {
  auto shape = [](int64_t C, int64_t H, int64_t K) {
    const int64_t P = (K - 1) / 2;
    return kiln_cpu::Conv2dShape{1, C, H, H, C, K, K, H, H, 1, 1, 1, 1, P, P, C};
  };
  for (const auto& [s, pays] : {std::pair{shape(144, 56, 3), true},
                                {shape(192, 28, 3), true},
                                {shape(96, 80, 3), true},
                                {shape(384, 14, 3), false},
                                {shape(960, 7, 3), false},
                                {shape(192, 40, 5), false},
                                {shape(384, 20, 5), false}}) {
    SCOPED_TRACE(testing::Message()
                 << s.C << "x" << s.H << "x" << s.W << " " << s.KH << "x" << s.KW);
    EXPECT_EQ(kiln_cpu::depthwise_nhwc_over_input_bands(s, 2), 2);
    EXPECT_EQ(kiln_cpu::depthwise_nhwc_over_input_pays(s, 2), pays);
    EXPECT_EQ(kiln_cpu::depthwise_nhwc_scratch_floats(s, 2), s.KH * s.W * s.C);
    EXPECT_TRUE(kiln_cpu::depthwise_nhwc_over_input_pays(s, 1));
    EXPECT_EQ(kiln_cpu::depthwise_nhwc_scratch_floats(s, 1), 0);
  }
}

}  // namespace
