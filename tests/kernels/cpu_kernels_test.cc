// Tests of the optimized f32 CPU kernels (kernels/cpu: GEMM, batched MatMul, conv, depthwise
// conv) against the reference kernels (kernels/ref) on shapes at the edges of the
// register and cache tiles. Built once per SIMD layer (AVX-512, AVX2, portable);
// KILN_EXPECT_ISA names the one this binary must have. Exact data must match kiln_ref bit for
// bit, random data within a dot product's rounding bound (cpu_kernels_check.h);
// gemm_f32 and gemm_f32_packed_b must agree bit for bit, and every kernel must give
// bit-identical results at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "cpu_kernels_check.h"
#include "kiln_cpu/conv.h"
#include "kiln_cpu/conv_direct.h"
#include "kiln_cpu/conv_pixrows.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/conv.h"
#include "kiln_ref/epilogue.h"
#include "kiln_ref/gemm.h"

#ifndef KILN_EXPECT_ISA
#error "build with -DKILN_EXPECT_ISA=\"avx512\" / \"avx2\" / \"generic\""
#endif

namespace {

using namespace kiln_cpu_test;
using kiln_cpu::kMR;
using kiln_cpu::kNR;

// ---------------------------------------------------------------------------------------------
// GEMM

/// Checks gemm_f32 and gemm_f32_packed_b on one case: against kiln_ref::gemm (row bias as its
/// C operand, column bias and residual through kiln_ref::Epilogue: the same order as the CPU
/// epilogue), against each other, across thread counts, and for writes outside C.
template <class Act>
void checkGemm(const GemmCase& g, Act act, Data data, uint64_t seed) {
  SCOPED_TRACE(describe(g) + (data == Data::kExact ? " exact" : " random"));
  const int64_t M = g.M, N = g.N, K = g.K;
  const int64_t lda = K + g.pad, ldb = N + g.pad, ldc = N + g.pad, ldr = N + g.pad + 1;
  Rng rng{seed};
  const Vec a = filled(M * lda, data, rng), b = filled(K * ldb, data, rng);
  const Vec rb = filled(M, data, rng), cb = filled(N, data, rng), res = filled(M * ldr, data, rng);
  const Vec ac = dense(a, M, K, lda), bc = dense(b, K, N, ldb), resc = dense(res, M, N, ldr);
  Vec tol;
  const Vec want =
      referenceGemm(M, N, K, ac, bc, g.row_bias ? &rb : nullptr, g.col_bias ? &cb : nullptr,
                    g.residual ? &resc : nullptr, act, data == Data::kRandom ? &tol : nullptr);

  const float* rbp = g.row_bias ? rb.data() : nullptr;
  const float* cbp = g.col_bias ? cb.data() : nullptr;
  const auto e = kiln_cpu::make_epilogue(act, rbp, cbp, g.residual ? res.data() : nullptr, ldr);
  const int64_t c_floats = M * ldc;
  auto runF32 = [&](kiln_cpu::ThreadPool* p) {
    const int threads = p ? p->size() : 1;
    const int64_t used = kiln_cpu::gemm_f32_scratch_floats(M, N, K, threads);
    Vec c(size_t(c_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::gemm_f32(M, N, K, a.data(), lda, b.data(), ldb, c.data(), ldc, e, scratch.data(), p);
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << threads << " threads";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "scratch, " << threads << " threads";
    return c;
  };
  auto runPackedB = [&](kiln_cpu::ThreadPool* p, kiln_cpu::GemmPlan plan = {}) {
    Vec panels(size_t(kiln_cpu::packed_b_floats(K, N) + kGuard), kSentinel);
    kiln_cpu::pack_b_panels(bc.data(), K, N, panels.data());
    EXPECT_TRUE(untouched(panels, 0, 0, 0, kiln_cpu::packed_b_floats(K, N))) << "pack_b_panels";
    const int64_t used = kiln_cpu::gemm_f32_packed_b_scratch_floats(M, K);
    Vec c(size_t(c_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::gemm_f32_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, e,
                                scratch.data(), p, plan);
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << "packed_b";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "packed_b scratch";
    return c;
  };

  // A read in place: no scratch at all.
  auto runRowA = [&](kiln_cpu::ThreadPool* p, kiln_cpu::GemmPlan plan = {}) {
    Vec panels(size_t(kiln_cpu::packed_b_floats(K, N)));
    kiln_cpu::pack_b_panels(bc.data(), K, N, panels.data());
    Vec c(size_t(c_floats + kGuard), kSentinel);
    kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, e, p,
                                     plan);
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << "rowa_packed_b";
    return c;
  };

  const Vec base = runF32(nullptr);
  EXPECT_TRUE(near(want, base, M, N, ldc, data == Data::kRandom ? &tol : nullptr));
  EXPECT_TRUE(identical(base, runPackedB(nullptr))) << "gemm_f32_packed_b vs gemm_f32";
  EXPECT_TRUE(identical(base, runRowA(nullptr))) << "gemm_f32_rowa_packed_b vs gemm_f32";
  EXPECT_TRUE(identical(base, runRowA(threadPool(2)))) << "gemm_f32_rowa_packed_b, 2 threads";
  for (int t = 1; t <= 3; ++t)
    EXPECT_TRUE(identical(base, runF32(threadPool(t)))) << t << " threads";
  EXPECT_TRUE(identical(base, runPackedB(threadPool(3)))) << "gemm_f32_packed_b, 3 threads";
  // The tuner's driver plans (kiln compile --tune) change only the split and the L2 blocking.
  using Plan = kiln_cpu::GemmPlan;
  for (Plan plan : {Plan{Plan::kRows}, Plan{Plan::kColumns}, Plan{Plan::kAuto}})
    for (int t : {1, 2, 3}) {
      SCOPED_TRACE("plan split " + std::to_string(plan.split) + ", " + std::to_string(t) +
                   " threads");
      EXPECT_TRUE(identical(base, runPackedB(threadPool(t), plan)));
      EXPECT_TRUE(identical(base, runRowA(threadPool(t), plan)));
    }
}

const std::vector<int64_t> kGemmM = distinct({1, kMR - 1, kMR, kMR + 1, 13, 49, 97});
// kNR * 3 / 4 and kNR + 17: last panels of 24 and 17 columns (AVX-512's 256-bit tails); 3,
// kNR + 2 and 3 * kNR + 4 with 1, 257, kNR + 1: tails of 1-4 columns past whole panels
// (gemm.h's tail_columns with packed A, micro tiles with A in place: bit-identical).
const int64_t kGemmN[] = {1,           kNR - 1,  kNR, kNR + 1, 31,         257,
                          kNR * 3 / 4, kNR + 17, 3,   kNR + 2, 3 * kNR + 4};
const int64_t kGemmK[] = {0, 1, 7, 255, 256, 257};

TEST(CpuKernels, BuiltForExpectedIsa) {
  std::printf("kiln_cpu kernels built for %s: kMR=%d kNR=%d lanes=%d\n", KILN_CPU_ISA, kMR, kNR,
              kiln_cpu::V::kLanes);
  EXPECT_STREQ(KILN_CPU_ISA, KILN_EXPECT_ISA);
  const std::string isa = KILN_EXPECT_ISA;
  const int mr = isa == "avx512" ? 12 : isa == "avx2" ? 6 : 4;
  const int nr = isa == "avx512" ? 32 : isa == "avx2" ? 16 : 8;
  EXPECT_EQ(kMR, mr);
  EXPECT_EQ(kNR, nr);
  if (!cpuHasIsa())
    std::printf("this CPU cannot run the %s kernels: the tests skip\n", KILN_CPU_ISA);
}

// Every (M, N, K) of the edge lists: plain products on exact data, and a Relu + column bias +
// residual epilogue on random data with padded leading dimensions.
class GemmSweep : public ::testing::TestWithParam<std::tuple<int64_t, int64_t>> {};

TEST_P(GemmSweep, MatchesReference) {
  KILN_REQUIRE_ISA();
  const auto [M, K] = GetParam();
  for (int64_t N : kGemmN) sweepChecks([](auto... args) { checkGemm(args...); }, M, N, K);
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, GemmSweep,
                         ::testing::Combine(::testing::ValuesIn(kGemmM),
                                            ::testing::ValuesIn(kGemmK)),
                         nameMK);

/// Each epilogue's bias/residual combinations on shapes that leave partial tiles in both
/// directions, cross kNC and kKC, or have no K at all.
template <class Act>
void checkEpilogues(Act act) {
  epilogueChecks([](auto... args) { checkGemm(args...); }, act, {1, kMR + 1, 13},
                 {kNR - 1, kNR + 1, 257}, {0, 7, 257});
}

TEST(CpuKernels, GemmEpilogueNone) {
  KILN_REQUIRE_ISA();
  checkEpilogues(kiln_ref::NoActivation{});
}
TEST(CpuKernels, GemmEpilogueRelu) {
  KILN_REQUIRE_ISA();
  checkEpilogues(kiln_ref::Relu{});
}
TEST(CpuKernels, GemmEpilogueClip) {
  KILN_REQUIRE_ISA();
  checkEpilogues(kiln_ref::Clip<float>{-0.75f, 1.25f});
}
TEST(CpuKernels, GemmEpilogueScalarActivation) {  // the scalar pass over the stored tile
  KILN_REQUIRE_ISA();
  checkEpilogues(ScalarOnly<kiln_ref::Sigmoid>{});
}

// M large enough that the driver splits rows into chunks (kMC) when threads outnumber column
// blocks; the split changes with the thread count, the results must not.
TEST(CpuKernels, GemmRowChunks) {
  KILN_REQUIRE_ISA();
  const int64_t M = 2 * kiln_cpu::kMC + kMR + 1;
  checkGemm(GemmCase{M, 40, 300, true, true, true, 2}, kiln_ref::Relu{}, Data::kRandom, 5);
  checkGemm(GemmCase{M, kNR + 3, 9, false, true, false}, ScalarOnly<kiln_ref::Sigmoid>{}, Data::kExact, 6);
  // 12 panels and 4 columns: column splits in blocks of 6 (GemmColumnSplitCountsTheTail).
  checkGemm(GemmCase{4 * kMR + 1, 12 * kNR + 4, 37, false, true, true}, kiln_ref::Relu{},
            Data::kRandom, 8);
}

// Small products whose column blocks cannot be dealt evenly (5 panels of 4 strips and a row on
// 2 threads: 3 against 2 panels) are cut into row chunks too, so no thread gets more than 3%
// over an even share at 2 threads; every split stays in whole strips and panels, and results
// stay the same.
TEST(CpuKernels, GemmSplitRebalancesSmallProducts) {
  KILN_REQUIRE_ISA();
  namespace gd = kiln_cpu::gemm_detail;
  const int64_t M = 4 * kMR + 1, N = 5 * kNR;
  for (int T : {2, 3}) {
    const gd::GemmSplit s = gd::gemm_split(M, N, T);
    EXPECT_EQ(s.block % kNR, 0);
    EXPECT_EQ(s.m_chunk % kMR, 0);
    const int64_t most = gd::split_makespan(M, 5, T, s.block / kNR, s.m_chunk);
    // 3 threads: 5 x 49 row-panels cannot be cut within 3% (the rule alone gave one 2 panels).
    EXPECT_LE(most * 100, (5 * M + T - 1) / T * (T == 2 ? 103 : 110)) << T << " threads";
  }
  for (int64_t m = 1; m <= 6 * kMR; m += 5)
    for (int64_t n = 1; n <= 9 * kNR; n += kNR / 2 + 3)
      for (int T : {2, 3, 4}) {
        const gd::GemmSplit s = gd::gemm_split(m, n, T);
        ASSERT_TRUE(s.block > 0 && s.block % kNR == 0 && s.block <= kiln_cpu::kNC)
            << m << "x" << n << ", " << T << " threads: block " << s.block;
        ASSERT_TRUE(s.m_chunk > 0 && s.m_chunk % kMR == 0)
            << m << "x" << n << ", " << T << " threads: m_chunk " << s.m_chunk;
      }
  checkGemm(GemmCase{M, N, 37, false, true, true}, kiln_ref::Relu{}, Data::kRandom, 7);
}

// NaN and infinities propagate as in the reference (x86 max/min keep NaN in Relu and Clip).
TEST(CpuKernels, GemmSpecialValues) {
  KILN_REQUIRE_ISA();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const int64_t M = kMR + 2, K = 9;
  // N = kNR + 1: the last column runs in tail_columns (an infinity in its B column too).
  for (int64_t N : {kNR + 5, kNR + 1}) {
    SCOPED_TRACE("N = " + std::to_string(N));
    Rng rng{77};
    Vec a = filled(M * K, Data::kExact, rng), b = filled(K * N, Data::kExact, rng);
    a[1 * K + 2] = inf;
    a[3 * K + 4] = -inf;
    a[5 * K + 0] = nan;
    b[6 * N + 7] = nan;
    b[2 * N + 1] = inf;
    b[4 * N + kNR] = -inf;
    const Vec cb = filled(N, Data::kExact, rng);
    auto check = [&](auto act) {
      Vec want(size_t(M * N));
      kiln_ref::gemm<float>(M, N, K, false, false, 1.0f, a.data(), b.data(), 0.0f, nullptr, 0, 0,
                            want.data(), kiln_ref::make_epilogue<float>(act, cb.data(), nullptr));
      Vec got(size_t(M * N)), scratch(size_t(kiln_cpu::gemm_f32_scratch_floats(M, N, K, 1)));
      kiln_cpu::gemm_f32(M, N, K, a.data(), K, b.data(), N, got.data(), N,
                         kiln_cpu::make_epilogue(act, nullptr, cb.data(), nullptr, 0),
                         scratch.data(), nullptr);
      EXPECT_TRUE(near(want, got, M, N, N, nullptr));
    };
    check(kiln_ref::NoActivation{});
    check(kiln_ref::Relu{});
    check(kiln_ref::Clip<float>{-1.0f, 1.0f});
    check(kiln_ref::Clip<float>{1.0f, -1.0f});  // lo > hi gives hi
    check(ScalarOnly<kiln_ref::Sigmoid>{});
  }
}

// ---------------------------------------------------------------------------------------------
// Convolution

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
               uint64_t seed) {
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
  auto runConv = [&](kiln_cpu::ThreadPool* p, Plan plan = {}) {
    const int64_t used = kiln_cpu::conv2d_scratch_floats(s, p ? p->size() : 1);
    Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::conv2d_f32(s, x.data(), wp.data(), bp, y.data(), e, scratch.data(), p, plan);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "conv2d_f32 output";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "conv2d_f32 scratch";
    return y;
  };
  const Vec base = runConv(nullptr);
  EXPECT_TRUE(near(want, base, c.N * c.M, P, P, tolp)) << "conv2d_f32";
  for (int t = 1; t <= 3; ++t)
    EXPECT_TRUE(identical(base, runConv(threadPool(t)))) << t << " threads";
  // The tuner's driver plans: the same sums.
  for (Plan plan : {Plan{Plan::kRows}, Plan{Plan::kColumns}})
    EXPECT_TRUE(identical(base, runConv(threadPool(2), plan))) << "plan " << plan.split;

  if (kiln_cpu::conv2d_direct_applies(s, int64_t(1) << 20)) {
    // Without im2col, on its own packing: its own k order (all of K in registers), so near the
    // reference, and bit-identical across thread counts and band heights (one band of all
    // rows, and bands of 2 rows: a budget that fits no more).
    const int64_t dpacked = kiln_cpu::conv2d_direct_packed_weight_floats(s);
    Vec wd(size_t(dpacked + kGuard), kSentinel);
    kiln_cpu::conv2d_direct_pack_weights(s, w.data(), wd.data());
    EXPECT_TRUE(untouched(wd, 0, 0, 0, dpacked)) << "conv2d_direct_pack_weights";
    auto runDirect = [&](kiln_cpu::ThreadPool* p, int64_t budget, Plan plan = {}) {
      const int64_t used = kiln_cpu::conv2d_direct_scratch_floats(s, p ? p->size() : 1, budget);
      Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
      kiln_cpu::conv2d_direct_f32(s, x.data(), wd.data(), bp, y.data(), e, scratch.data(), budget,
                                  p, plan);
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
  } else {
    EXPECT_FALSE(c.KH * c.KW > 1 && c.pt <= (c.KH - 1) * c.DH && c.pl <= (c.KW - 1) * c.DW)
        << "a case the direct conv should take";
  }

  if (kiln_cpu::conv2d_pixrows_applies(s)) {
    // Pixels as the GEMM's rows, on its own packing and order (all of K in registers).
    const int64_t pp = kiln_cpu::conv2d_pixrows_packed_weight_floats(s);
    Vec wq(size_t(pp + kGuard), kSentinel);
    kiln_cpu::conv2d_pixrows_pack_weights(s, w.data(), wq.data());
    EXPECT_TRUE(untouched(wq, 0, 0, 0, pp)) << "conv2d_pixrows_pack_weights";
    auto runPix = [&](kiln_cpu::ThreadPool* p) {
      const int64_t used = kiln_cpu::conv2d_pixrows_scratch_floats(s);
      Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
      kiln_cpu::conv2d_pixrows_f32(s, x.data(), wq.data(), bp, y.data(), e, scratch.data(), p);
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
    // Channels-last output and residual: the same values. at(i): element i's place in [N, P, M].
    auto at = [&](int64_t i) { return size_t((i / (c.M * P) * P + i % P) * c.M + i / P % c.M); };
    Vec rn(res.size()), back(static_cast<size_t>(y_floats));
    for (int64_t i = 0; i < y_floats; ++i) rn[at(i)] = res[size_t(i)];
    for (int t = 1; t <= 3; ++t) {  // from phase planes where conv2d_pixrows_planes(s)
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

  if (c.group == c.C && c.M == c.C) {
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
  {"pointwise_K>kKC",   2, 300, 5,  7, 15, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},
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
  {"3x3_K>kKC_P>kNC",   2, 32, 17, 19, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"5x5_s1_p2",         2,  5, 11,  9,  7, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1},
  {"5x5_s2_d12_asym",   2,  4, 13, 15,  6, 5, 5, 2, 2, 1, 2, 1, 2, 2, 1, 1},
  {"7x7_s2_p3_stem",    2,  3, 23, 21, 16, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1},
  {"7x7_d2",            2,  2, 19, 17,  5, 7, 7, 1, 1, 2, 2, 4, 6, 6, 4, 1},
  // The direct conv: flat blocks across row ends, M past a strip, K past kKC, end pads.
  {"3x3_s1_p1_wide",    1,  5,  6, 58, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"3x3_s1_p0_tall",    2,  3, 20,  7, 25, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1},
  {"3x3_d2_K>kKC",      1, 31,  9, 10, 13, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},
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
  {"7x7_3x3_K>kKC",     1, 30,  7,  7, 33, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},
  {"14x14_1x1_s2",      1, 24, 14, 14, 64, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1},
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
  {"1d_k7_s1_K>kKC",    2, 40,  1, 29,  9, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, 1},
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
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// ---------------------------------------------------------------------------------------------
// Batched MatMul

/// matmul_f32 against kiln_ref::matmul_fused (column bias and residual as its epilogue) on one
/// batch geometry: batch dims and per-operand batch strides, 0 where an operand broadcasts.
void checkMatmul(int rank, const int64_t* dims, const int64_t* as, const int64_t* bs, int64_t M,
                 int64_t N, int64_t K, Data data, uint64_t seed) {
  SCOPED_TRACE("rank " + std::to_string(rank) + " M=" + std::to_string(M) +
               " N=" + std::to_string(N) + " K=" + std::to_string(K));
  int64_t a_size = M * K, b_size = K * N, batches = 1;
  for (int d = 0; d < rank; ++d) {
    a_size += (dims[d] - 1) * as[d];
    b_size += (dims[d] - 1) * bs[d];
    batches *= dims[d];
  }
  const int64_t y_floats = batches * M * N;
  Rng rng{seed};
  const Vec a = filled(a_size, data, rng), b = filled(b_size, data, rng);
  const Vec cb = filled(N, data, rng), res = filled(y_floats, data, rng);
  Vec want(static_cast<size_t>(y_floats));
  kiln_ref::matmul_fused<float>(
      rank, dims, as, bs, M, N, K, a.data(), b.data(), want.data(),
      kiln_ref::make_epilogue<float>(kiln_ref::Relu{}, cb.data(), res.data()));
  Vec tol;
  if (data == Data::kRandom) {
    const Vec aa = absolute(a), ab = absolute(b), acb = absolute(cb), ares = absolute(res);
    Vec abs_sum(static_cast<size_t>(y_floats));
    kiln_ref::matmul_fused<float>(
        rank, dims, as, bs, M, N, K, aa.data(), ab.data(), abs_sum.data(),
        kiln_ref::make_epilogue<float>(kiln_ref::NoActivation{}, acb.data(), ares.data()));
    tol = dotTolerance(abs_sum, want, K);
  }
  const auto e = kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, cb.data(), res.data(), 0);
  auto run = [&](kiln_cpu::ThreadPool* p) {
    const int64_t used = kiln_cpu::gemm_f32_scratch_floats(M, N, K, p ? p->size() : 1);
    Vec y(static_cast<size_t>(y_floats + kGuard), kSentinel);
    Vec scratch(static_cast<size_t>(used + kGuard), kSentinel);
    kiln_cpu::matmul_f32(rank, dims, as, bs, M, N, K, a.data(), b.data(), y.data(), e,
                         scratch.data(), p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "matmul_f32 output";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "matmul_f32 scratch";
    return y;
  };
  const Vec base = run(nullptr);
  EXPECT_TRUE(near(want, base, batches * M, N, N, data == Data::kRandom ? &tol : nullptr));
  for (int t = 1; t <= 3; ++t) EXPECT_TRUE(identical(base, run(threadPool(t)))) << t << " threads";
}

TEST(CpuKernels, MatmulBatchedBroadcast) {
  KILN_REQUIRE_ISA();
  for (Data data : {Data::kExact, Data::kRandom}) {
    checkMatmul(0, nullptr, nullptr, nullptr, kMR + 1, kNR + 3, 257, data, 21);
    {  // a [2, 1, M, K] x b [3, K, N]: both broadcast
      const int64_t M = 5, N = 40, K = 19, dims[] = {2, 3};
      const int64_t as[] = {M * K, 0}, bs[] = {0, K * N};
      checkMatmul(2, dims, as, bs, M, N, K, data, 22);
    }
    {  // a [4, 1, K] x b [K, N]: a batch of row vectors, shared weights
      const int64_t M = 1, N = 2 * kNR + 1, K = 64, dims[] = {4};
      const int64_t as[] = {M * K}, bs[] = {0};
      checkMatmul(1, dims, as, bs, M, N, K, data, 23);
    }
    {  // a [3, M, K] x b [3, K, 1]: matrix-vector products
      const int64_t M = 2 * kMR + 3, N = 1, K = 300, dims[] = {3};
      const int64_t as[] = {M * K}, bs[] = {K * N};
      checkMatmul(1, dims, as, bs, M, N, K, data, 24);
    }
  }
}

}  // namespace
