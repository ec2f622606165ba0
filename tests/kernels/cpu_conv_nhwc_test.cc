// Tests of kiln_cpu::depthwise_conv2d_nhwc_f32 and depthwise_nhwc_pack_weights
// (kernels/cpu/conv_nhwc.h) against kiln_ref::conv_fused on the same problem in NCHW (the test
// transposes inputs and outputs): channel counts around the vector width and the register
// tile, planes from 1x1 to 56x56, strides, dilations, asymmetric and zero pads, 1-D, with and
// without bias and residual, activations fused in registers and one applied scalar. Exact data
// must match bit for bit, random data within a dot product's rounding bound; every result must
// be bit-identical at 1, 2 and 3 threads, with nothing written before or after y.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/conv.h"
#include "kiln_cpu/conv_nhwc.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/conv.h"
#include "kiln_ref/epilogue.h"

namespace {

using namespace kiln_cpu_test;

struct NhwcCase {
  const char* name;
  int64_t N, C, H, W, KH, KW, SH, SW, DH, DW;
  int64_t pt, pl, pb, pr;  // begin (top, left) and end (bottom, right) pads
};

// clang-format off
const NhwcCase kNhwcCases[] = {
  // name                 N    C   H   W  KH KW SH SW DH DW pt pl pb pr
  {"c1_7x7_3x3_s1",       1,   1,  7,  7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c3_13x13_3x3_s2",     1,   3, 13, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c15_14x14_3x3_s2",    2,  15, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c16_56x56_3x3_s1",    1,  16, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c24_57x56_3x3_s2",    1,  24, 57, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c17_13x7_3x3_s1",     2,  17, 13,  7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c40_13x13_5x5_p2",    1,  40, 13, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},
  {"c96_7x7_3x3_s1",      1,  96,  7,  7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c96_7x7_3x3_s2",      1,  96,  7,  7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c96_14x14_3x3_s2",    1,  96, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c300_5x6_3x3_s1",     1, 300,  5,  6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c40_7x13_1x3",        1,  40,  7, 13, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},
  {"c17_13x7_3x1",        1,  17, 13,  7, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0},
  {"c33_13x11_3x3_d2",    2,  33, 13, 11, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
  {"c24_9x10_asym",       1,  24,  9, 10, 3, 3, 1, 1, 1, 1, 2, 0, 0, 2},
  {"c20_10x9_s2_asym",    1,  20, 10,  9, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0},
  {"c16_13x12_7x7_nopad", 1,  16, 13, 12, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0},
  {"c17_9x11_5x5_s2_d12", 1,  17,  9, 11, 5, 5, 2, 1, 1, 2, 1, 2, 2, 1},
  {"c40_1x1_3x3",         1,  40,  1,  1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c17_2x2_3x3",         2,  17,  2,  2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
  {"c3_2x2_3x3_s2",       1,   3,  2,  2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
  {"c17_11x13_3x3_s3",    1,  17, 11, 13, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1},
  {"c20_13x9_3x3_s2x1",   1,  20, 13,  9, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1},
  {"c5_4x5_pad_only",     1,   5,  4,  5, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3},
  {"1d_c40_w29_k3",       2,  40,  1, 29, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},
  {"1d_c17_w31_k5_s2_d2", 1,  17,  1, 31, 1, 5, 1, 2, 1, 2, 0, 3, 0, 2},
};
// clang-format on

void PrintTo(const NhwcCase& c, std::ostream* os) {
  *os << c.name;
}

kiln_cpu::Conv2dShape shapeOf(const NhwcCase& c) {
  const int64_t OH = (c.H + c.pt + c.pb - c.DH * (c.KH - 1) - 1) / c.SH + 1;
  const int64_t OW = (c.W + c.pl + c.pr - c.DW * (c.KW - 1) - 1) / c.SW + 1;
  return kiln_cpu::Conv2dShape{c.N, c.C,  c.H,  c.W,  c.C,  c.KH, c.KW, OH,
                               OW,  c.SH, c.SW, c.DH, c.DW, c.pt, c.pl, c.C};
}

/// [N, A, B, C] -> [N, C, A, B] (NHWC to NCHW) or back with `back`.
Vec transposed(const Vec& v, int64_t N, int64_t C, int64_t HW, bool back) {
  Vec r(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < HW; ++p)
      for (int64_t c = 0; c < C; ++c) {
        const size_t nhwc = size_t((n * HW + p) * C + c), nchw = size_t((n * C + c) * HW + p);
        if (back)
          r[nhwc] = v[nchw];
        else
          r[nchw] = v[nhwc];
      }
  return r;
}

/// kiln_ref::conv_fused on the NCHW form of the case (rank 1 for a 1-D case given as H = 1),
/// returned in NHWC. x, residual: NHWC; w: ONNX's [C, 1, KH, KW].
template <class Act>
Vec refNhwc(const NhwcCase& c, const kiln_cpu::Conv2dShape& s, const Vec& x, const Vec& w,
            const float* bias, const Vec* residual, Act act) {
  const bool one_d = c.H == 1 && c.KH == 1 && c.pt == 0 && c.pb == 0;
  const int64_t in2[] = {c.H, c.W}, k2[] = {c.KH, c.KW}, o2[] = {s.OH, s.OW};
  const int64_t st2[] = {c.SH, c.SW}, d2[] = {c.DH, c.DW}, p2[] = {c.pt, c.pl, c.pb, c.pr};
  const int64_t p1[] = {c.pl, c.pr};
  const int r = one_d ? 1 : 2, o = one_d ? 1 : 0;
  const int64_t P = s.OH * s.OW;
  const Vec xc = transposed(x, c.N, c.C, c.H * c.W, false);
  const Vec rc = residual ? transposed(*residual, c.N, c.C, P, false) : Vec();
  Vec y(size_t(c.N * c.C * P));
  kiln_ref::conv_fused<float>(
      r, c.N, c.C, in2 + o, c.C, k2 + o, o2 + o, st2 + o, d2 + o, one_d ? p1 : p2, c.C, xc.data(),
      w.data(), bias, y.data(),
      kiln_ref::make_epilogue<float>(act, nullptr, residual ? rc.data() : nullptr));
  return transposed(y, c.N, c.C, P, true);
}

/// depthwise_conv2d_nhwc_f32 against the reference on one case and epilogue, across thread
/// counts, with guards before and after y.
template <class Act>
void checkNhwc(const NhwcCase& c, Act act, bool with_bias, bool with_residual, Data data,
               uint64_t seed) {
  SCOPED_TRACE(std::string(c.name) + (with_bias ? " bias" : "") +
               (with_residual ? " residual" : "") + (data == Data::kExact ? " exact" : " random"));
  const kiln_cpu::Conv2dShape s = shapeOf(c);
  ASSERT_GT(s.OH, 0);
  ASSERT_GT(s.OW, 0);
  const int64_t taps = c.KH * c.KW, P = s.OH * s.OW, y_floats = c.N * c.C * P;
  Rng rng{seed};
  const Vec x = filled(c.N * c.H * c.W * c.C, data, rng), w = filled(c.C * taps, data, rng);
  const Vec bias = filled(c.C, data, rng), res = filled(y_floats, data, rng);
  const float* bp = with_bias ? bias.data() : nullptr;
  const Vec* rp = with_residual ? &res : nullptr;

  const Vec want = refNhwc(c, s, x, w, bp, rp, act);
  Vec tol;
  if (data == Data::kRandom) {
    const Vec ax = absolute(x), aw = absolute(w), ab = absolute(bias), ar = absolute(res);
    const Vec abs_sum = refNhwc(c, s, ax, aw, with_bias ? ab.data() : nullptr,
                                with_residual ? &ar : nullptr, kiln_ref::NoActivation{});
    tol = dotTolerance(abs_sum, want, taps);
  }
  Vec wp(size_t(taps * c.C));
  kiln_cpu::depthwise_nhwc_pack_weights(s, w.data(), wp.data());
  const auto e = kiln_cpu::make_epilogue(act, nullptr, nullptr, rp ? rp->data() : nullptr, 0);
  auto run = [&](kiln_cpu::ThreadPool* p) {
    // kGuard sentinels before and after y.
    Vec buf(size_t(kGuard + y_floats + kGuard), kSentinel);
    kiln_cpu::depthwise_conv2d_nhwc_f32(s, x.data(), wp.data(), bp, buf.data() + kGuard, e, p);
    const Vec before(buf.begin(), buf.begin() + kGuard);
    EXPECT_TRUE(untouched(before, 0, 0, 0, 0)) << "wrote before y";
    const Vec after(buf.begin() + kGuard, buf.end());
    EXPECT_TRUE(untouched(after, 0, 0, 0, y_floats)) << "wrote after y";
    return Vec(buf.begin() + kGuard, buf.begin() + kGuard + y_floats);
  };
  const Vec base = run(nullptr);
  EXPECT_TRUE(near(want, base, c.N * P, c.C, c.C, data == Data::kRandom ? &tol : nullptr))
      << "depthwise_conv2d_nhwc_f32 against kiln_ref::conv_fused";
  for (int t = 1; t <= 3; ++t) EXPECT_TRUE(identical(base, run(threadPool(t)))) << t << " threads";
}

class NhwcCases : public ::testing::TestWithParam<NhwcCase> {};

TEST_P(NhwcCases, PlainExact) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::NoActivation{}, false, false, Data::kExact, 11);
}

TEST_P(NhwcCases, BiasReluExact) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::Relu{}, true, false, Data::kExact, 12);
}

TEST_P(NhwcCases, BiasResidualClipExact) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::Clip<float>{-1.5f, 2.0f}, true, true, Data::kExact, 13);
}

TEST_P(NhwcCases, ResidualEluExact) {  // without a vector form: scalar over the stored values
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), ScalarOnly<kiln_ref::Elu>{{0.5f}}, false, true, Data::kExact, 14);
}

TEST_P(NhwcCases, ResidualEluRandom) {  // Elu's vector form (vexpm1) in registers
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::Elu{0.5f}, false, true, Data::kRandom, 17);
}

TEST_P(NhwcCases, BiasRandom) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::NoActivation{}, true, false, Data::kRandom, 15);
}

TEST_P(NhwcCases, BiasResidualReluRandom) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::Relu{}, true, true, Data::kRandom, 16);
}

TEST_P(NhwcCases, ResidualClipRandom) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::Clip<float>{0.0f, 0.25f}, false, true, Data::kRandom, 17);
}

TEST_P(NhwcCases, BiasResidualEluRandom) {
  KILN_REQUIRE_ISA();
  checkNhwc(GetParam(), kiln_ref::Elu{1.0f}, true, true, Data::kRandom, 18);
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, NhwcCases, ::testing::ValuesIn(kNhwcCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CpuKernels, DepthwiseNhwcPackWeights) {
  const kiln_cpu::Conv2dShape s{1, 5, 4, 4, 5, 3, 2, 4, 4, 1, 1, 1, 1, 1, 0, 5};
  const int64_t taps = s.KH * s.KW, floats = taps * s.C;
  Vec w(static_cast<size_t>(floats));
  for (int64_t i = 0; i < floats; ++i) w[size_t(i)] = float(i);  // w[c][i][j]: c * 6 + i * 2 + j
  Vec dst(size_t(floats + kGuard), kSentinel);
  kiln_cpu::depthwise_nhwc_pack_weights(s, w.data(), dst.data());
  for (int64_t i = 0; i < s.KH; ++i)
    for (int64_t j = 0; j < s.KW; ++j)
      for (int64_t c = 0; c < s.C; ++c)
        EXPECT_EQ(dst[size_t((i * s.KW + j) * s.C + c)], float(c * taps + i * s.KW + j))
            << "tap (" << i << "," << j << ") channel " << c;
  EXPECT_TRUE(untouched(dst, 0, 0, 0, floats)) << "wrote past the packed filter";
}

}  // namespace

namespace kiln_cpu_test {

/// A manifest case: N = 1, C channels of H x W, a KS x KS kernel at stride S with "same" pads,
/// on exact data with bias, residual and Clip, and on random data with bias, residual and Elu.
void check_depthwise_conv2d_nhwc_f32(const SweepCase& k) {
  const int64_t KS = k["KS"], S = k["S"], P = KS / 2;
  const NhwcCase c{"sweep", 1, k["C"], k["H"], k["W"], KS, KS, S, S, 1, 1, P, P, P, P};
  checkNhwc(c, kiln_ref::Clip<float>{-1.5f, 2.0f}, true, true, Data::kExact, 51);
  checkNhwc(c, kiln_ref::Elu{1.0f}, true, true, Data::kRandom, 52);
}

}  // namespace kiln_cpu_test
