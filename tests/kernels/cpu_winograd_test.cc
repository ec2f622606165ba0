// Tests of kiln_cpu::conv2d_winograd_f32, conv2d_winograd2_f32 and conv2d_winograd_s2_f32
// (kernels/cpu/winograd.h: Winograd F(4x4, 3x3), F(2x2, 3x3) and the stride-2 conv by its
// phases; the CpuWinograd2 and CpuWinogradS2 tests) against kiln_ref::conv_fused:
// edge image sizes (partial tiles at the right and bottom, images smaller than a tile), begin
// and end pads 0..2, channel counts at the edges of the register tile and
// the output-channel chunks, several tile blocks per image (blocks starting mid tile row), bias,
// residual, Relu and Sigmoid; bit-identical at 1, 2 and 3 threads, with no writes past y, the
// packed weights or the scratch.
//
// Winograd is not exact even on the "exact" data of cpu_kernels_check.h (G has 1/6 and 1/24),
// so both kinds of data are checked within a tolerance scaled by sum |w| |x| (+ |bias| +
// |residual|) of each output: kWinogradFactor * (C + 16) * eps of it. The transforms amplify
// rounding by a bounded factor (B^T's rows sum to at most 10 in absolute value, A^T's to 18),
// and the GEMM over the C channels adds about C roundings; the largest error measured is under
// half the bound (WinogradError prints it). A wrong transform coefficient, even 8.001 for 8 in
// A^T, exceeds the bound 100-fold and more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/parallel.h"
#include "kiln_cpu/winograd.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/conv.h"
#include "kiln_ref/epilogue.h"

namespace {

using namespace kiln_cpu_test;

constexpr float kWinogradFactor = 8.0f;

/// The output tile side under test: 4 (conv2d_winograd_f32) or 2 (conv2d_winograd2_f32).
int g_tm = 4;
/// The stride under test: 2 for conv2d_winograd_s2_f32 (g_tm 4).
int g_stride = 1;

struct WCase {
  int64_t N, C, H, W, M;
  int64_t pt, pl, pb, pr;  // begin (top, left) and end (bottom, right) pads
};

std::string describe(const WCase& c) {
  return "N=" + std::to_string(c.N) + " C=" + std::to_string(c.C) + " H=" + std::to_string(c.H) +
         " W=" + std::to_string(c.W) + " M=" + std::to_string(c.M) + " pads=" +
         std::to_string(c.pt) + "," + std::to_string(c.pl) + "," + std::to_string(c.pb) + "," +
         std::to_string(c.pr);
}

kiln_cpu::Conv2dShape shapeOf(const WCase& c) {
  return kiln_cpu::Conv2dShape{c.N,
                               c.C,
                               c.H,
                               c.W,
                               c.M,
                               3,
                               3,
                               (c.H + c.pt + c.pb - 3) / g_stride + 1,
                               (c.W + c.pl + c.pr - 3) / g_stride + 1,
                               g_stride,
                               g_stride,
                               1,
                               1,
                               c.pt,
                               c.pl,
                               1};
}

template <class Act>
void refConv(const WCase& c, const kiln_cpu::Conv2dShape& s, const float* x, const float* w,
             const float* bias, const float* residual, Act act, float* y) {
  const int64_t in[] = {c.H, c.W}, k[] = {3, 3}, out[] = {s.OH, s.OW}, one[] = {1, 1};
  const int64_t pads[] = {c.pt, c.pl, c.pb, c.pr}, strides[] = {s.SH, s.SW};
  kiln_ref::conv_fused<float>(2, c.N, c.C, in, c.M, k, out, strides, one, pads, 1, x, w, bias, y,
                              kiln_ref::make_epilogue<float>(act, nullptr, residual));
}

/// The largest |got - want| / (eps * sum|w||x|...) seen, over all checks (WinogradError).
double& worstRatio() {
  static double r = 0.0;
  return r;
}
double& worstBoundUse() {  // the largest |got - want| / tol
  static double r = 0.0;
  return r;
}

template <class Act>
void checkWinograd(const WCase& c, Act act, bool with_bias, bool with_residual, Data data,
                   uint64_t seed) {
  SCOPED_TRACE(describe(c) + (with_bias ? " bias" : "") + (with_residual ? " residual" : "") +
               (data == Data::kExact ? " exact" : " random") + " F(" + std::to_string(g_tm) +
               "x" + std::to_string(g_tm) + ", 3x3) stride " + std::to_string(g_stride));
  const kiln_cpu::Conv2dShape s = shapeOf(c);
  ASSERT_TRUE(g_stride == 2 ? kiln_cpu::conv2d_winograd_s2_applies(s)
                            : kiln_cpu::conv2d_winograd_applies(s));
  const int64_t P = s.OH * s.OW, y_floats = c.N * c.M * P;
  Rng rng{seed};
  const Vec x = filled(c.N * c.C * c.H * c.W, data, rng), w = filled(c.M * c.C * 9, data, rng);
  const Vec bias = filled(c.M, data, rng), res = filled(y_floats, data, rng);
  const float* bp = with_bias ? bias.data() : nullptr;
  const float* rp = with_residual ? res.data() : nullptr;

  Vec want(static_cast<size_t>(y_floats)), abs_sum(static_cast<size_t>(y_floats));
  refConv(c, s, x.data(), w.data(), bp, rp, act, want.data());
  const Vec ax = absolute(x), aw = absolute(w), ab = absolute(bias), ar = absolute(res);
  refConv(c, s, ax.data(), aw.data(), with_bias ? ab.data() : nullptr,
          with_residual ? ar.data() : nullptr, kiln_ref::NoActivation{}, abs_sum.data());
  Vec tol(static_cast<size_t>(y_floats));
  for (size_t i = 0; i < tol.size(); ++i)
    tol[i] = kWinogradFactor * float(c.C + 16) * kEps * abs_sum[i] + 4.0f * kEps * std::fabs(want[i]) +
             std::numeric_limits<float>::min();

  const int64_t packed = kiln_cpu::conv2d_winograd_packed_weight_floats(s, g_tm);
  Vec wp(size_t(packed + kGuard), kSentinel);
  kiln_cpu::conv2d_winograd_pack_weights(s, w.data(), wp.data(), g_tm);
  EXPECT_TRUE(untouched(wp, 0, 0, 0, packed)) << "conv2d_winograd_pack_weights";
  const auto e = kiln_cpu::make_epilogue(act, nullptr, nullptr, rp, 0);
  auto run = [&](kiln_cpu::ThreadPool* p) {
    const int64_t used = kiln_cpu::conv2d_winograd_scratch_floats(s, p ? p->size() : 1, g_tm);
    Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    if (g_stride == 2)
      kiln_cpu::conv2d_winograd_s2_f32(s, x.data(), wp.data(), bp, y.data(), e, scratch.data(), p);
    else if (g_tm == 2)
      kiln_cpu::conv2d_winograd2_f32(s, x.data(), wp.data(), bp, y.data(), e, scratch.data(), p);
    else
      kiln_cpu::conv2d_winograd_f32(s, x.data(), wp.data(), bp, y.data(), e, scratch.data(), p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "conv2d_winograd_f32 output";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "conv2d_winograd_f32 scratch";
    return y;
  };
  const Vec base = run(nullptr);
  EXPECT_TRUE(near(want, base, c.N * c.M, P, P, &tol)) << "conv2d_winograd_f32";
  for (int t = 1; t <= 3; ++t)
    EXPECT_TRUE(identical(base, run(threadPool(t)))) << t << " threads";
  // The error measured against the bound (only where the activation does not squash it).
  if (std::is_same<Act, kiln_ref::NoActivation>::value || std::is_same<Act, kiln_ref::Relu>::value)
    for (size_t i = 0; i < tol.size(); ++i) {
      const double err = std::fabs(double(base[i]) - double(want[i]));
      if (abs_sum[i] > 0)
        worstRatio() = std::max(worstRatio(), err / (double(kEps) * abs_sum[i] * double(c.C + 16)));
      worstBoundUse() = std::max(worstBoundUse(), err / double(tol[i]));
    }
}

void checkAll(const WCase& c, uint64_t seed) {
  checkWinograd(c, kiln_ref::NoActivation{}, false, false, Data::kRandom, seed);
  checkWinograd(c, kiln_ref::Relu{}, true, true, Data::kExact, seed + 1);
  checkWinograd(c, kiln_ref::Relu{}, true, false, Data::kRandom, seed + 2);
  checkWinograd(c, kiln_ref::Sigmoid{}, false, true, Data::kRandom, seed + 3);
  checkWinograd(c, kiln_ref::NoActivation{}, true, true, Data::kExact, seed + 4);
}

TEST(CpuWinograd, Applies) {
  const kiln_cpu::Conv2dShape ok{1, 8, 10, 10, 8, 3, 3, 10, 10, 1, 1, 1, 1, 1, 1, 1};
  static_assert(kiln_cpu::conv2d_winograd_applies(
                    kiln_cpu::Conv2dShape{1, 8, 10, 10, 8, 3, 3, 10, 10, 1, 1, 1, 1, 1, 1, 1}),
                "constexpr");
  static_assert(kiln_cpu::conv2d_winograd_scratch_floats(
                    kiln_cpu::Conv2dShape{1, 64, 56, 56, 64, 3, 3, 56, 56, 1, 1, 1, 1, 1, 1, 1},
                    3) > 0,
                "constexpr");
  static_assert(kiln_cpu::conv2d_winograd_packed_weight_floats(
                    kiln_cpu::Conv2dShape{1, 3, 5, 5, 33, 3, 3, 5, 5, 1, 1, 1, 1, 1, 1, 1}) ==
                    36 * 3 * ((33 + kiln_cpu::kNR - 1) / kiln_cpu::kNR * kiln_cpu::kNR),
                "packed weights");
  EXPECT_TRUE(kiln_cpu::conv2d_winograd_applies(ok));
  auto with = [&](auto f) {
    kiln_cpu::Conv2dShape s = ok;
    f(s);
    return kiln_cpu::conv2d_winograd_applies(s);
  };
  EXPECT_FALSE(with([](auto& s) { s.KH = 5; }));
  EXPECT_FALSE(with([](auto& s) { s.KW = 1; }));
  EXPECT_FALSE(with([](auto& s) { s.SH = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.SW = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.DH = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.DW = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.group = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.PH = 3; }));
  EXPECT_FALSE(with([](auto& s) { s.PW = 3; }));
  EXPECT_FALSE(with([](auto& s) { s.OH = 0; }));
  EXPECT_FALSE(with([](auto& s) { s.OW = 0; }));
  EXPECT_TRUE(with([](auto& s) { s.PH = 0; s.PW = 2; }));
}

TEST(CpuWinogradS2, Applies) {
  const kiln_cpu::Conv2dShape ok{1, 128, 56, 56, 128, 3, 3, 28, 28, 2, 2, 1, 1, 1, 1, 1};
  static_assert(kiln_cpu::conv2d_winograd_s2_applies(
                    kiln_cpu::Conv2dShape{1, 8, 10, 10, 8, 3, 3, 5, 5, 2, 2, 1, 1, 1, 1, 1}),
                "constexpr");
  EXPECT_TRUE(kiln_cpu::conv2d_winograd_s2_applies(ok));
  EXPECT_FALSE(kiln_cpu::conv2d_winograd_applies(ok));
  auto with = [&](auto f) {
    kiln_cpu::Conv2dShape s = ok;
    f(s);
    return kiln_cpu::conv2d_winograd_s2_applies(s);
  };
  EXPECT_FALSE(with([](auto& s) { s.SH = 1; }));
  EXPECT_FALSE(with([](auto& s) { s.SW = 1; }));
  EXPECT_FALSE(with([](auto& s) { s.SH = s.SW = 3; }));
  EXPECT_FALSE(with([](auto& s) { s.KH = 5; }));
  EXPECT_FALSE(with([](auto& s) { s.DW = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.group = 2; }));
  EXPECT_FALSE(with([](auto& s) { s.PW = 3; }));
  EXPECT_FALSE(with([](auto& s) { s.H = 60000; s.W = 60000; }));  // gather offsets past 2^31
  EXPECT_FALSE(with([](auto& s) { s.H = int64_t(1) << 40; s.W = int64_t(1) << 40; }));
  // The same 36 weight matrices as F(4x4, 3x3); one tile's scratch holds 81 positions, not 36.
  const kiln_cpu::Conv2dShape s1{1, 128, 28, 28, 128, 3, 3, 28, 28, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(kiln_cpu::conv2d_winograd_packed_weight_floats(ok),
            kiln_cpu::conv2d_winograd_packed_weight_floats(s1));
  const kiln_cpu::Conv2dShape one1{1, 8, 4, 4, 8, 3, 3, 4, 4, 1, 1, 1, 1, 1, 1, 1};
  const kiln_cpu::Conv2dShape one2{1, 8, 8, 8, 8, 3, 3, 4, 4, 2, 2, 1, 1, 1, 1, 1};
  EXPECT_GT(kiln_cpu::conv2d_winograd_scratch_floats(one2, 1),
            2 * kiln_cpu::conv2d_winograd_scratch_floats(one1, 1));
}

/// Runs a test body for F(4x4, 3x3) (CpuWinograd), F(2x2, 3x3) (CpuWinograd2) and the stride-2
/// conv (CpuWinogradS2).
#define WINOGRAD_TESTS(name)           \
  void name##Body();                   \
  TEST(CpuWinograd, name) {            \
    KILN_REQUIRE_ISA();                \
    g_tm = 4;                          \
    name##Body();                      \
  }                                    \
  TEST(CpuWinograd2, name) {           \
    KILN_REQUIRE_ISA();                \
    g_tm = 2;                          \
    name##Body();                      \
    g_tm = 4;                          \
  }                                    \
  TEST(CpuWinogradS2, name) {          \
    KILN_REQUIRE_ISA();                \
    g_stride = 2;                      \
    name##Body();                      \
    g_stride = 1;                      \
  }                                    \
  void name##Body()

// Every image size of the edge list against every other, C, M and the pads rotating.
WINOGRAD_TESTS(EdgeSizes) {
  const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 14, 17};
  const int64_t chans[] = {1, 3, 12, 13, 32, 33, 64};
  uint64_t seed = 100;
  int k = 0;
  for (int64_t H : sizes)
    for (int64_t W : sizes) {
      ++k;
      const int64_t pt = k % 3, pl = (k / 3) % 3, pb = (k / 2) % 3, pr = (k / 5) % 3;
      if (H + pt + pb < 3 || W + pl + pr < 3) continue;  // no output
      const int64_t C = chans[k % 7], M = chans[(k * 3 + 1) % 7];
      checkWinograd(WCase{2, C, H, W, M, pt, pl, pb, pr}, kiln_ref::Relu{}, k % 2 == 0,
                    k % 3 == 0, k % 4 == 0 ? Data::kExact : Data::kRandom, seed++);
    }
}

// Every C against every M (one image size with a partial tile each way, pads 1).
WINOGRAD_TESTS(Channels) {
  const int64_t chans[] = {1, 3, 12, 13, 32, 33, 64};
  uint64_t seed = 300;
  for (int64_t C : chans)
    for (int64_t M : chans)
      checkWinograd(WCase{2, C, 9, 7, M, 1, 1, 1, 1}, kiln_ref::NoActivation{}, true, false,
                    Data::kRandom, seed++);
}

WINOGRAD_TESTS(Pads) {
  uint64_t seed = 500;
  for (int64_t pt = 0; pt <= 2; ++pt)
    for (int64_t pl = 0; pl <= 2; ++pl)
      for (int64_t pe = 0; pe <= 2; ++pe)
        checkAll(WCase{2, 5, 10, 11, 7, pt, pl, pe, 2 - pe}, seed += 10);
}

// Several tile blocks per image (blocks start mid tile row), several output-channel chunks
// (the last one partial and narrower than a vector), units split over chunks when the blocks
// are fewer than the threads, a deep C (no k blocks: each tile sums all of C in registers).
WINOGRAD_TESTS(BlocksAndChunks) {
  const WCase cases[] = {
      {1, 64, 40, 37, 64, 1, 1, 1, 1},    // 10 x 10 tiles: blocks of 48 tiles
      {2, 256, 17, 19, 40, 1, 2, 1, 0},   // blocks of 12 tiles, 2 chunks (the last partial)
      {1, 16, 6, 30, 130, 0, 1, 2, 1},    // 3 chunks (the last of 2 channels), 1 block
      {2, 300, 9, 9, 70, 2, 2, 0, 0},     // C = 300, M = 64 + 6
      {1, 3, 70, 66, 5, 1, 1, 1, 1},      // many blocks of 96 tiles, wide rows (> 16 tiles)
      {1, 5, 9, 101, 7, 1, 1, 1, 1},      // rows whose middle 8-tile chunks lie inside the row
      {1, 4, 6, 77, 6, 0, 0, 2, 1},       // (AVX2's load_phases6), from column 0 without pads
      {1, 512, 7, 7, 512, 1, 1, 1, 1},    // ResNet-50's last 3x3: 4 tiles
      {1, 256, 14, 14, 128, 1, 1, 1, 1},  // 16 tiles: the whole image one block (strips of 12
                                          // and 4), 2 chunks (split at 2 and 3 threads)
  };
  uint64_t seed = 700;
  for (const WCase& c : cases) {
    checkWinograd(c, kiln_ref::Relu{}, true, true, Data::kRandom, seed++);
    checkWinograd(c, kiln_ref::NoActivation{}, false, false, Data::kExact, seed++);
  }
}

WINOGRAD_TESTS(Epilogues) {
  checkAll(WCase{2, 13, 14, 17, 33, 1, 1, 1, 1}, 900);
  checkAll(WCase{2, 32, 8, 9, 12, 0, 2, 2, 0}, 910);
  checkWinograd(WCase{2, 12, 5, 7, 13, 1, 1, 1, 1}, kiln_ref::Clip<float>{-0.5f, 0.5f}, true,
                true, Data::kRandom, 920);
}

// Runs last (gtest keeps the order of a file's tests): how close the errors came to the bound,
// over both tile sizes.
TEST(CpuWinograd2, WinogradError) {
  KILN_REQUIRE_ISA();
  std::printf("[ winograd ] max |err| / (eps * (C + 16) * sum|w||x|) = %.3f (factor %.1f); "
              "max |err| / tol = %.4f\n",
              worstRatio(), double(kWinogradFactor), worstBoundUse());
  EXPECT_LE(worstBoundUse(), 1.0);
}

}  // namespace

namespace kiln_cpu_test {
namespace {

/// A manifest case: N = 1, C x H x W in, M out, pads 1, on exact data with bias, residual and
/// Relu, and on random data with bias and an in-register Sigmoid.
void winogradSweep(const SweepCase& k, int tm, int stride) {
  g_tm = tm;
  g_stride = stride;
  const WCase c{1, k["C"], k["H"], k["W"], k["M"], 1, 1, 1, 1};
  checkWinograd(c, kiln_ref::Relu{}, true, true, Data::kExact, 41);
  checkWinograd(c, kiln_ref::Sigmoid{}, true, false, Data::kRandom, 42);
  g_tm = 4;
  g_stride = 1;
}

}  // namespace

void check_conv2d_winograd_f32(const SweepCase& c) {
  winogradSweep(c, 4, 1);
}
void check_conv2d_winograd2_f32(const SweepCase& c) {
  winogradSweep(c, 2, 1);
}
void check_conv2d_winograd_s2_f32(const SweepCase& c) {
  winogradSweep(c, 4, 2);
}

}  // namespace kiln_cpu_test
