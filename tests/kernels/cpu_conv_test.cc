// Tests of the optimized f32 convolutions of kernels/cpu (conv2d_f32, the direct conv, the
// pixel-rows conv in both output layouts, the NCHW depthwise conv) against kiln_ref::conv_fused:
// hand-written geometries (pads, dilations, groups, 1-D) and the manifest's edge-size sweeps
// (check_<kernel>). Exact data bit for bit, random data within a dot product's bound, every
// kernel bit-identical at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/conv.h"
#include "kiln_cpu/conv_direct.h"
#include "kiln_cpu/conv_pixrows.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/conv.h"
#include "kiln_ref/epilogue.h"

namespace {

using namespace kiln_cpu_test;

struct ConvCase {
  const char* name;
  int64_t N, C, H, W, M, KH, KW, SH, SW, DH, DW;
  int64_t pt, pl, pb, pr;  // begin (top, left) and end (bottom, right) pads
  int64_t group;
};

void PrintTo(const ConvCase& c, std::ostream* os) {
  *os << c.name;
}

kiln_cpu::Conv2dShape shapeOf(const ConvCase& c) {
  const int64_t OH = (c.H + c.pt + c.pb - c.DH * (c.KH - 1) - 1) / c.SH + 1;
  const int64_t OW = (c.W + c.pl + c.pr - c.DW * (c.KW - 1) - 1) / c.SW + 1;
  return kiln_cpu::Conv2dShape{c.N, c.C,  c.H,  c.W,  c.M,  c.KH, c.KW, OH,
                               OW,  c.SH, c.SW, c.DH, c.DW, c.pt, c.pl, c.group};
}

/// kiln_ref::conv_fused on the case: rank 1 (W only) for a 1-D case given as H = 1, so the
/// oracle sees the 1-D problem itself.
template <class Act>
void refConv(const ConvCase& c, const kiln_cpu::Conv2dShape& s, const float* x, const float* w,
             const float* bias, const float* residual, Act act, float* y) {
  const bool one_d = c.H == 1 && c.KH == 1 && c.pt == 0 && c.pb == 0;
  const int64_t in2[] = {c.H, c.W}, k2[] = {c.KH, c.KW}, o2[] = {s.OH, s.OW};
  const int64_t st2[] = {c.SH, c.SW}, d2[] = {c.DH, c.DW}, p2[] = {c.pt, c.pl, c.pb, c.pr};
  const int64_t p1[] = {c.pl, c.pr};
  const int r = one_d ? 1 : 2, o = one_d ? 1 : 0;
  kiln_ref::conv_fused<float>(r, c.N, c.C, in2 + o, c.M, k2 + o, o2 + o, st2 + o, d2 + o,
                              one_d ? p1 : p2, c.group, x, w, bias, y,
                              kiln_ref::make_epilogue<float>(act, nullptr, residual));
}

/// conv2d_f32 (and depthwise_conv2d_f32 when group == C == M) against kiln_ref on one case,
/// across thread counts, and for writes outside y and the scratch.
template <class Act>
void checkConv(const ConvCase& c, Act act, bool with_bias, bool with_residual, Data data,
               uint64_t seed, const std::string& only = "") {
  // `only`: the kernel a manifest case is for (empty: every kernel that takes the case); a
  // kernel asked for a case it does not take is a failure (a manifest sweep outside its domain).
  auto runs = [&](const char* kernel) { return only.empty() || only == kernel; };
  SCOPED_TRACE(std::string(c.name) + (with_bias ? " bias" : "") +
               (with_residual ? " residual" : "") + (data == Data::kExact ? " exact" : " random"));
  const kiln_cpu::Conv2dShape s = shapeOf(c);
  ASSERT_GT(s.OH, 0);
  ASSERT_GT(s.OW, 0);
  const int64_t taps = c.KH * c.KW, K = c.C / c.group * taps, P = s.OH * s.OW;
  const int64_t y_floats = c.N * c.M * P;
  Rng rng{seed};
  const Vec x = filled(c.N * c.C * c.H * c.W, data, rng), w = filled(c.M * K, data, rng);
  const Vec bias = filled(c.M, data, rng), res = filled(y_floats, data, rng);
  const float* bp = with_bias ? bias.data() : nullptr;
  const float* rp = with_residual ? res.data() : nullptr;

  Vec want(static_cast<size_t>(y_floats));
  refConv(c, s, x.data(), w.data(), bp, rp, act, want.data());
  Vec tol;
  if (data == Data::kRandom) {
    const Vec ax = absolute(x), aw = absolute(w), ab = absolute(bias), ar = absolute(res);
    Vec abs_sum(static_cast<size_t>(y_floats));
    refConv(c, s, ax.data(), aw.data(), with_bias ? ab.data() : nullptr,
            with_residual ? ar.data() : nullptr, kiln_ref::NoActivation{}, abs_sum.data());
    tol = dotTolerance(abs_sum, want, K);
  }
  const Vec* tolp = data == Data::kRandom ? &tol : nullptr;
  const auto e = kiln_cpu::make_epilogue(act, nullptr, nullptr, rp, 0);

  const int64_t packed = kiln_cpu::conv2d_packed_weight_floats(s);
  Vec wp(size_t(packed + kGuard), kSentinel);
  kiln_cpu::conv2d_pack_weights(s, w.data(), wp.data());
  EXPECT_TRUE(untouched(wp, 0, 0, 0, packed)) << "conv2d_pack_weights";
  using Plan = kiln_cpu::GemmPlan;
  // over: y starts as the residual and is the epilogue's residual (kiln writes the output over
  // a residual that dies at the conv): the same values.
  auto outputFor = [&](bool over) {
    Vec y(size_t(y_floats + kGuard), kSentinel);
    if (over) std::copy(res.begin(), res.end(), y.begin());
    return y;
  };
  auto epilogueFor = [&](Vec& y, bool over) {
    auto eo = e;
    if (over) eo.residual = y.data();
    return eo;
  };
  auto runConv = [&](kiln_cpu::ThreadPool* p, Plan plan = {}, bool over = false) {
    const int64_t used = kiln_cpu::conv2d_scratch_floats(s, p ? p->size() : 1);
    Vec y = outputFor(over), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::conv2d_f32(s, x.data(), wp.data(), bp, y.data(), epilogueFor(y, over), scratch.data(),
                         p, plan);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "conv2d_f32 output";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "conv2d_f32 scratch";
    return y;
  };
  if (runs("conv2d_f32")) {
    const Vec base = runConv(nullptr);
    EXPECT_TRUE(near(want, base, c.N * c.M, P, P, tolp)) << "conv2d_f32";
    for (int t = 1; t <= 3; ++t)
      EXPECT_TRUE(identical(base, runConv(threadPool(t)))) << t << " threads";
    // The tuner's driver plans: the same sums.
    for (Plan plan : {Plan{Plan::kRows}, Plan{Plan::kColumns}})
      EXPECT_TRUE(identical(base, runConv(threadPool(2), plan))) << "plan " << plan.split;
    // Over the residual with one k block only (past it, earlier blocks' sums wait in y).
    if (with_residual && K <= kiln_cpu::kKC) {
      EXPECT_TRUE(identical(base, runConv(threadPool(3), {}, true))) << "over the residual";
    }
  }

  const bool direct_applies = kiln_cpu::conv2d_direct_applies(s, int64_t(1) << 20);
  if (!direct_applies && only == "conv2d_direct_f32") ADD_FAILURE() << "outside its domain";
  if (direct_applies && runs("conv2d_direct_f32")) {
    // Without im2col, on its own packing: its own k order (all of K in registers), so near the
    // reference, and bit-identical across thread counts and band heights (one band of all
    // rows, and bands of 2 rows: a budget that fits no more).
    const int64_t dpacked = kiln_cpu::conv2d_direct_packed_weight_floats(s);
    Vec wd(size_t(dpacked + kGuard), kSentinel);
    kiln_cpu::conv2d_direct_pack_weights(s, w.data(), wd.data());
    EXPECT_TRUE(untouched(wd, 0, 0, 0, dpacked)) << "conv2d_direct_pack_weights";
    auto runDirect = [&](kiln_cpu::ThreadPool* p, int64_t budget, Plan plan = {},
                         bool over = false) {
      const int64_t used = kiln_cpu::conv2d_direct_scratch_floats(s, p ? p->size() : 1, budget);
      Vec y = outputFor(over), scratch(size_t(used + kGuard), kSentinel);
      kiln_cpu::conv2d_direct_f32(s, x.data(), wd.data(), bp, y.data(), epilogueFor(y, over),
                                  scratch.data(), budget, p, plan);
      EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "conv2d_direct_f32 output";
      EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "conv2d_direct_f32 scratch";
      return y;
    };
    const int64_t all = int64_t(1) << 20,
                  two = kiln_cpu::conv_direct_detail::planes_for_band(s, 2).floats;
    const Vec direct = runDirect(nullptr, all);
    EXPECT_TRUE(near(want, direct, c.N * c.M, P, P, tolp)) << "conv2d_direct_f32";
    for (int t = 1; t <= 3; ++t) {
      EXPECT_TRUE(identical(direct, runDirect(threadPool(t), all)))
          << "direct, " << t << " threads";
      EXPECT_TRUE(identical(direct, runDirect(threadPool(t), two))) << "2-row bands, " << t;
    }
    for (Plan plan : {Plan{Plan::kRows}, Plan{Plan::kColumns}})
      EXPECT_TRUE(identical(direct, runDirect(threadPool(3), all, plan))) << "plan " << plan.split;
    if (with_residual) {
      EXPECT_TRUE(identical(direct, runDirect(threadPool(2), all, {}, true))) << "over residual";
      EXPECT_TRUE(identical(direct, runDirect(threadPool(3), two, {}, true))) << "over, 2 rows";
    }
  } else if (only.empty()) {
    EXPECT_FALSE(c.KH * c.KW > 1 && c.pt <= (c.KH - 1) * c.DH && c.pl <= (c.KW - 1) * c.DW)
        << "a case the direct conv should take";
  }

  const bool pix_applies = kiln_cpu::conv2d_pixrows_applies(s);
  const bool nhwc = runs("conv2d_pixrows_nhwc_f32");
  if (!pix_applies && only.find("pixrows") != std::string::npos)
    ADD_FAILURE() << "outside its domain";
  if (pix_applies && (runs("conv2d_pixrows_f32") || nhwc)) {
    // Pixels as the GEMM's rows, on its own packing and order (all of K in registers).
    const int64_t pp = kiln_cpu::conv2d_pixrows_packed_weight_floats(s);
    Vec wq(size_t(pp + kGuard), kSentinel);
    kiln_cpu::conv2d_pixrows_pack_weights(s, w.data(), wq.data());
    EXPECT_TRUE(untouched(wq, 0, 0, 0, pp)) << "conv2d_pixrows_pack_weights";
    auto runPix = [&](kiln_cpu::ThreadPool* p, bool over = false) {
      const int64_t used = kiln_cpu::conv2d_pixrows_scratch_floats(s);
      Vec y = outputFor(over), scratch(size_t(used + kGuard), kSentinel);
      kiln_cpu::conv2d_pixrows_f32(s, x.data(), wq.data(), bp, y.data(), epilogueFor(y, over),
                                   scratch.data(), p);
      EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "conv2d_pixrows_f32 output";
      EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "conv2d_pixrows_f32 scratch";
      return y;
    };
    if (std::string(c.name).find("K_chunks") != std::string::npos) {
      EXPECT_GT(kiln_cpu::conv2d_pixrows_chunks(s), 1) << "a case meant to take K-chunks";
    }
    const Vec pix = runPix(nullptr);
    EXPECT_TRUE(near(want, pix, c.N * c.M, P, P, tolp)) << "conv2d_pixrows_f32";
    for (int t = 1; t <= 3; ++t)
      EXPECT_TRUE(identical(pix, runPix(threadPool(t)))) << "pixrows, " << t << " threads";
    if (with_residual) {
      EXPECT_TRUE(identical(pix, runPix(threadPool(2), true))) << "over residual";
    }
    // Channels-last output and residual: the same values. at(i): element i's place in [N, P, M].
    auto at = [&](int64_t i) { return size_t((i / (c.M * P) * P + i % P) * c.M + i / P % c.M); };
    Vec rn(res.size()), back(static_cast<size_t>(y_floats));
    for (int64_t i = 0; i < y_floats; ++i) rn[at(i)] = res[size_t(i)];
    for (int t = 1; t <= 3 && nhwc; ++t) {  // from phase planes where conv2d_pixrows_planes(s)
      Vec sn(size_t(kiln_cpu::conv2d_pixrows_nhwc_scratch_floats(s, t) + kGuard), kSentinel),
          yn(size_t(y_floats + kGuard), kSentinel);
      kiln_cpu::conv2d_pixrows_nhwc_f32(
          s, x.data(), wq.data(), bp, yn.data(),
          kiln_cpu::make_epilogue(act, nullptr, nullptr, rp ? rn.data() : nullptr, 0), sn.data(),
          threadPool(t));
      EXPECT_TRUE(untouched(yn, 0, 0, 0, y_floats)) << "conv2d_pixrows_nhwc_f32 output";
      EXPECT_TRUE(untouched(sn, 0, 0, 0, sn.size() - kGuard)) << "nhwc scratch, " << t;
      for (int64_t i = 0; i < y_floats; ++i) back[size_t(i)] = yn[at(i)];
      EXPECT_TRUE(identical(Vec(pix.begin(), pix.begin() + y_floats), back)) << "nhwc, " << t;
    }
  }

  const bool depthwise = c.group == c.C && c.M == c.C;
  if (!depthwise && only == "depthwise_conv2d_f32") ADD_FAILURE() << "outside its domain";
  if (depthwise && runs("depthwise_conv2d_f32")) {
    // With scratch for 3 threads (the phase-plane path), and without (the plain loops).
    const int64_t per = kiln_cpu::depthwise_scratch_floats(s);
    auto runDw = [&](kiln_cpu::ThreadPool* p, bool withScratch) {
      Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(3 * per + kGuard), kSentinel);
      kiln_cpu::depthwise_conv2d_f32(s, x.data(), w.data(), bp, y.data(), e,
                                     withScratch ? scratch.data() : nullptr, per, p);
      EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "depthwise_conv2d_f32 output";
      EXPECT_TRUE(untouched(scratch, 0, 0, 0, 3 * per)) << "depthwise_conv2d_f32 scratch";
      return y;
    };
    const Vec dw = runDw(nullptr, true);
    EXPECT_TRUE(near(want, dw, c.N * c.M, P, P, tolp)) << "depthwise_conv2d_f32";
    EXPECT_TRUE(near(want, runDw(nullptr, false), c.N * c.M, P, P, tolp)) << "plain loops";
    for (int t = 1; t <= 3; ++t)
      EXPECT_TRUE(identical(dw, runDw(threadPool(t), true))) << "depthwise, " << t << " threads";
  }
}

// clang-format off
const ConvCase kConvCases[] = {
  // name               N  C   H   W   M  KH KW SH SW DH DW pt pl pb pr group
  {"pointwise",         2, 16,  7,  9, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"pointwise_K>kKC",   2, 600, 5,  7, 15, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  // Read in place: only full panels (P = 512, several column blocks), and full + partial.
  {"pointwise_panels",  1, 20, 16, 32, 14, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"pointwise_wide",    2,  7,  9, 61, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"1x1_s2",            2,  8,  9, 11, 12, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1},
  {"1x1_pad",           2,  5,  6,  7,  9, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1},
  {"3x3_s1_p1",         2,  8, 13, 11, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"3x3_s2_p1",         2,  6, 15, 13, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
  {"3x3_d2_p2",         2,  4, 11, 12,  7, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},
  {"3x3_asym_begin",    2,  5,  9, 10,  6, 3, 3, 1, 1, 1, 1, 2, 0, 0, 2, 1},
  {"3x3_s2_asym",       2,  3, 10,  9,  5, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 1},
  {"3x3_pad_only_rows", 2,  3,  4,  5,  4, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3, 1},
  {"3x3_K>kKC_P>kNC",   2, 64, 17, 19, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"5x5_s1_p2",         2,  5, 11,  9,  7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1},
  {"5x5_s2_d12_asym",   2,  4, 13, 15,  6, 5, 5, 2, 2, 1, 2, 1, 2, 2, 1, 1},
  {"7x7_s2_p3_stem",    2,  3, 23, 21, 16, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1},
  {"7x7_d2",            2,  2, 19, 17,  5, 7, 7, 1, 1, 2, 2, 4, 6, 6, 4, 1},
  // The direct conv: flat blocks across row ends, M past a strip, K past kKC, end pads.
  {"3x3_s1_p1_wide",    1,  5,  6, 58, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"3x3_s1_p0_tall",    2,  3, 20,  7, 25, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"3x3_d2_K>kKC",      1, 61,  9, 10, 13, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},
  {"5x5_p1_end_pad",    1,  2, 12, 11,  3, 5, 5, 1, 1, 1, 1, 1, 2, 4, 3, 1},
  {"3x3_s3x2_wide",     1,  3, 13, 70, 13, 3, 3, 3, 2, 1, 1, 1, 1, 1, 0, 1},
  {"3x3_s2_d2_odd_pad", 1,  4, 15, 45,  7, 3, 3, 2, 2, 2, 2, 3, 1, 0, 2, 1},
  // Row tiles (rows fill the lanes at least as well as flat tiles): whole 32-column tiles and
  // a 16-column one per row, output channels past a strip.
  {"3x3_s1_row_tiles",  1,  5,  7, 32, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"7x7_s2_row_tiles",  1,  3, 10, 96, 20, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1},
  // Stride-2 rows wide enough for copy_floats_stride2's vector pairs.
  {"7x7_s2_p3_wide",    1,  3,  9, 112, 16, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1},
  {"3x3_s2_p1_wide",    1,  4,  6, 75,  8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},
  {"1x1_s2_wide",       1,  8,  4, 56, 12, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1},
  // ResNet's last stages: 7x7 and 14x14 images, channels past a panel (pixrows' tiles).
  {"7x7_pointwise_M>kNR", 2, 40, 7,  7, 70, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"7x7_3x3_K>kKC",     1, 60,  7,  7, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"14x14_1x1_s2",      1, 24, 14, 14, 64, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1},
  // Strided 1x1 convs: conv2d_f32 copies the pixels they read (conv2d_strided_pointwise), pixel
  // rows read them straight from x (im2col_plane_rows); an end pad past the image takes neither.
  {"1x1_s2x1",          1, 12, 14, 14, 40, 1, 1, 2, 1, 1, 1, 0, 0, 0, 0, 1},
  {"1x1_s3x1",          2,  6, 10,  9,  5, 1, 1, 3, 1, 1, 1, 0, 0, 0, 0, 1},
  {"1x1_s1x3",          2,  5,  7, 20, 13, 1, 1, 1, 3, 1, 1, 0, 0, 0, 0, 1},
  {"1x1_s2_end_pad",    2,  5,  8,  8,  7, 1, 1, 2, 2, 1, 1, 0, 0, 1, 1, 1},
  {"group2_1x1_s2",     2,  6,  9,  9, 10, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 2},
  // K past conv2d_pixrows_chunks' L2 budget: 2 K-chunks (a short last one) with partial sums.
  {"5x5_3x3_K_chunks",  1, 361, 5,  5, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"5x5_1x1_K_chunks",  1, 3301, 5, 5, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"1x7",               2,  4,  9, 13,  6, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, 1},
  {"group2_3x3",        2,  8,  9,  7, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2},
  {"group2_1x1",        2,  6,  5,  9, 10, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2},
  {"group2_5x5_s2",     2,  4, 11, 10,  6, 5, 5, 2, 2, 1, 1, 2, 2, 1, 1, 2},
  {"dw_3x3_s1_p1",      2, 10, 13, 11, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 10},
  {"dw_3x3_s1_wide",    2,  3,  5, 37,  3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3},
  {"dw_3x3_s2_p1",      2,  7, 15, 17,  7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 7},
  {"dw_3x3_s2_asym",    2,  4, 12, 12,  4, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 4},
  {"dw_5x5_d2_asym",    2,  6, 14, 13,  6, 5, 5, 1, 1, 2, 2, 3, 5, 5, 3, 6},
  {"dw_7x7_s2_p3",      2,  5, 17, 19,  5, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 5},
  {"dw_1x1",            2,  9,  3,  5,  9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 9},
  {"dw_3x3_s3x1_d2x1",  2,  5, 16, 14,  5, 3, 3, 3, 1, 2, 1, 2, 1, 1, 2, 5},
  {"dw_3x5_s1x3_d1x2",  1,  3, 11, 23,  3, 3, 5, 1, 3, 1, 2, 0, 4, 2, 0, 3},
  {"dw_3x3_7x7_mbv2",   1, 20,  7,  7, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 20},
  {"dw_3x3_s2_wide",    1,  3,  6, 70,  3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3},
  {"dw_3x3_s2_wide_p0", 1,  2,  5, 67,  2, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, 2},
  {"dw_x2_multiplier",  2,  4,  7,  9,  8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4},
  {"1d_k3_p1",          2,  4,  1, 50,  6, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1},
  {"1d_k5_s2_d2_asym",  2,  3,  1, 41,  5, 1, 5, 1, 2, 1, 2, 0, 3, 0, 1, 1},
  {"1d_k7_s1_K>kKC",    2, 80,  1, 29,  9, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, 1},
  {"1d_dw_k7_s1",       2,  6,  1, 45,  6, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, 6},
  {"1d_dw_k3_s2",       2,  5,  1, 30,  5, 1, 3, 1, 2, 1, 1, 0, 1, 0, 0, 5},
};
// clang-format on

class ConvCases : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvCases, MatchesReference) {
  KILN_REQUIRE_ISA();
  const ConvCase& c = GetParam();
  checkConv(c, kiln_ref::NoActivation{}, false, false, Data::kExact, 11);
  checkConv(c, kiln_ref::Relu{}, true, true, Data::kExact, 12);
  checkConv(c, kiln_ref::Relu{}, true, true, Data::kRandom, 13);
  checkConv(c, kiln_ref::Clip<float>{-0.5f, 0.5f}, true, false, Data::kRandom, 14);
  checkConv(c, ScalarOnly<kiln_ref::Sigmoid>{}, false, true, Data::kExact, 15);  // the scalar pass
  checkConv(c, kiln_ref::Sigmoid{}, true, true, Data::kRandom, 16);  // vsigmoid in registers
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, ConvCases, ::testing::ValuesIn(kConvCases),
                         kiln_cpu_test::CaseName{});

}  // namespace

namespace kiln_cpu_test {
namespace {

/// A manifest conv case: N = 1, C x H x W in, M out (group C for the depthwise conv), a KS x KS
/// kernel at stride S with "same" pads (KS / 2 on every side), on exact data with bias, residual
/// and Relu, and on random data with bias and an in-register Sigmoid.
void convSweep(const SweepCase& k, const std::string& kernel) {
  const bool dw = kernel == "depthwise_conv2d_f32";
  const int64_t C = k["C"], M = dw ? C : k["M"], KS = k["KS"], S = k["S"], P = KS / 2;
  const ConvCase c{"sweep", 1, C, k["H"], k["W"], M, KS, KS, S, S, 1, 1, P, P, P, P, dw ? C : 1};
  checkConv(c, kiln_ref::Relu{}, true, true, Data::kExact, 31, kernel);
  checkConv(c, kiln_ref::Sigmoid{}, true, false, Data::kRandom, 32, kernel);
}

}  // namespace

void check_conv2d_f32(const SweepCase& c) {
  convSweep(c, "conv2d_f32");
}
void check_conv2d_direct_f32(const SweepCase& c) {
  convSweep(c, "conv2d_direct_f32");
}
void check_conv2d_pixrows_f32(const SweepCase& c) {
  convSweep(c, "conv2d_pixrows_f32");
}
void check_conv2d_pixrows_nhwc_f32(const SweepCase& c) {
  convSweep(c, "conv2d_pixrows_nhwc_f32");
}
void check_depthwise_conv2d_f32(const SweepCase& c) {
  convSweep(c, "depthwise_conv2d_f32");
}

}  // namespace kiln_cpu_test
