// Tests of the optimized f32 GEMM kernels of kernels/cpu (gemm_f32, gemm_f32_packed_b,
// gemm_f32_rowa_packed_b, batched matmul_f32) against the reference kernels (kernels/ref): the
// manifest's edge-size cases (check_<kernel>, kernel_sweep.h), each epilogue, the driver's
// splits and special values. Built once per SIMD layer (AVX-512, AVX2, portable);
// KILN_EXPECT_ISA names the one this binary must have. Exact data must match kiln_ref bit for
// bit, random data within a dot product's rounding bound (cpu_kernels_check.h); the three GEMM
// drivers must agree bit for bit, and every kernel must give bit-identical results at 1, 2 and
// 3 threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_manifest.h"
#include "kernel_sweep.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"
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
enum class GemmDriver { kAll, kF32, kPackedB, kRowA };

template <class Act>
void checkGemm(const GemmCase& g, Act act, Data data, uint64_t seed,
               GemmDriver only = GemmDriver::kAll) {
  SCOPED_TRACE(describe(g) + (data == Data::kExact ? " exact" : " random"));
  const int64_t M = g.M, N = g.N, K = g.K;
  const GemmOperands op = gemmOperands(g, act, data, seed);
  const int64_t lda = op.lda, ldb = op.ldb, ldc = op.ldc, ldr = op.ldr;
  const Vec &a = op.a, &b = op.b, &rb = op.rb, &cb = op.cb, &res = op.res;
  const Vec &bc = op.bc, &resc = op.resc, &tol = op.tol, &want = op.want;

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

  // C over its residual (kiln writes the output there where the residual dies at the product):
  // C starts as the residual, at C's leading dimension. Only with one k block (K <= kKC):
  // past it, earlier blocks' sums wait in C.
  auto runOverResidual = [&](bool rowA, kiln_cpu::ThreadPool* p) {
    Vec panels(size_t(kiln_cpu::packed_b_floats(K, N)));
    kiln_cpu::pack_b_panels(bc.data(), K, N, panels.data());
    Vec c(size_t(c_floats + kGuard), kSentinel);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) c[size_t(m * ldc + n)] = resc[size_t(m * N + n)];
    const auto eo = kiln_cpu::make_epilogue(act, rbp, cbp, c.data(), ldc);
    if (rowA) {
      kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, eo, p);
    } else {
      Vec scratch(size_t(kiln_cpu::gemm_f32_packed_b_scratch_floats(M, K)));
      kiln_cpu::gemm_f32_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, eo,
                                  scratch.data(), p);
    }
    return c;
  };

  const Vec base = runF32(nullptr);
  EXPECT_TRUE(near(want, base, M, N, ldc, data == Data::kRandom ? &tol : nullptr));
  const bool all = only == GemmDriver::kAll;
  if (g.residual && K <= kiln_cpu::kKC) {
    if (all || only == GemmDriver::kPackedB) {
      EXPECT_TRUE(identical(base, runOverResidual(false, threadPool(2)))) << "packed_b over C";
    }
    if (all || only == GemmDriver::kRowA) {
      EXPECT_TRUE(identical(base, runOverResidual(true, threadPool(3)))) << "rowa over C";
    }
  }
  if (all || only == GemmDriver::kF32) {
    for (int t = 1; t <= 3; ++t)
      EXPECT_TRUE(identical(base, runF32(threadPool(t)))) << t << " threads";
  }
  if (all || only == GemmDriver::kPackedB) {
    EXPECT_TRUE(identical(base, runPackedB(nullptr))) << "gemm_f32_packed_b vs gemm_f32";
    EXPECT_TRUE(identical(base, runPackedB(threadPool(3)))) << "gemm_f32_packed_b, 3 threads";
  }
  if (all || only == GemmDriver::kRowA) {
    EXPECT_TRUE(identical(base, runRowA(nullptr))) << "gemm_f32_rowa_packed_b vs gemm_f32";
    EXPECT_TRUE(identical(base, runRowA(threadPool(2)))) << "gemm_f32_rowa_packed_b, 2 threads";
  }
  // The tuner's driver plans (kiln compile --tune) change only the split and the L2 blocking.
  using Plan = kiln_cpu::GemmPlan;
  for (Plan plan : {Plan{Plan::kRows}, Plan{Plan::kColumns}, Plan{Plan::kAuto}})
    for (int t : {1, 2, 3}) {
      SCOPED_TRACE("plan split " + std::to_string(plan.split) + ", " + std::to_string(t) +
                   " threads");
      if (all || only == GemmDriver::kPackedB) {
        EXPECT_TRUE(identical(base, runPackedB(threadPool(t), plan)));
      }
      if (all || only == GemmDriver::kRowA) {
        EXPECT_TRUE(identical(base, runRowA(threadPool(t), plan)));
      }
    }
}

/// A manifest case (M, N, K) of one driver: sweepChecks' two epilogues.
void gemmSweep(const SweepCase& c, GemmDriver only) {
  sweepChecks([only](const GemmCase& g, auto act, Data data,
                     uint64_t seed) { checkGemm(g, act, data, seed, only); },
              c["M"], c["N"], c["K"]);
}

TEST(CpuKernels, BuiltForExpectedIsa) {
  std::printf("kiln_cpu kernels built for %s: kMR=%d kNR=%d lanes=%d\n", KILN_CPU_ISA, kMR, kNR,
              kiln_cpu::V::kLanes);
  EXPECT_STREQ(KILN_CPU_ISA, KILN_EXPECT_ISA);
  // kernels/cpu/manifest.json's tiles for this ISA (the generated cases also static_assert them).
  EXPECT_STREQ(kiln_manifest::kIsa, KILN_EXPECT_ISA);
  EXPECT_EQ(kMR, kiln_manifest::kMR);
  EXPECT_EQ(kNR, kiln_manifest::kNR);
  EXPECT_EQ(kiln_cpu::V::kLanes, kiln_manifest::kLanes);
  EXPECT_EQ(kiln_cpu::kKC, kiln_manifest::kKC);
  if (!cpuHasIsa())
    std::printf("this CPU cannot run the %s kernels: the tests skip\n", KILN_CPU_ISA);
}

/// Each epilogue's bias/residual combinations on shapes that leave partial tiles in both
/// directions, cross kNC and kKC, or have no K at all.
template <class Act>
void checkEpilogues(Act act) {
  epilogueChecks([](auto... args) { checkGemm(args...); }, act, {1, kMR + 1, 13},
                 {kNR - 1, kNR + 1, 257}, {0, 7, 513});
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
  checkGemm(GemmCase{M, 40, 600, true, true, true, 2}, kiln_ref::Relu{}, Data::kRandom, 5);
  checkGemm(GemmCase{M, kNR + 3, 9, false, true, false}, ScalarOnly<kiln_ref::Sigmoid>{},
            Data::kExact, 6);
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

}  // namespace

namespace kiln_cpu_test {

void check_gemm_f32(const SweepCase& c) {
  gemmSweep(c, GemmDriver::kF32);
}
void check_gemm_f32_packed_b(const SweepCase& c) {
  gemmSweep(c, GemmDriver::kPackedB);
}
void check_gemm_f32_rowa_packed_b(const SweepCase& c) {
  gemmSweep(c, GemmDriver::kRowA);
}

/// matmul_f32 on (M, N, K) in one of four batch geometries ("batch"): none; a [2, 1, M, K] x
/// b [3, K, N] (both broadcast); a [4, M, K] x b [K, N] (shared weights); a [3, M, K] x
/// b [3, K, N] (one B per batch).
void check_matmul_f32(const SweepCase& c) {
  const int64_t M = c["M"], N = c["N"], K = c["K"], geometry = c["batch"];
  for (Data data : {Data::kExact, Data::kRandom}) {
    const uint64_t seed = uint64_t(21 + geometry * 10 + (data == Data::kExact ? 0 : 5));
    if (geometry == 0) {
      checkMatmul(0, nullptr, nullptr, nullptr, M, N, K, data, seed);
    } else if (geometry == 1) {
      const int64_t dims[] = {2, 3}, as[] = {M * K, 0}, bs[] = {0, K * N};
      checkMatmul(2, dims, as, bs, M, N, K, data, seed);
    } else if (geometry == 2) {
      const int64_t dims[] = {4}, as[] = {M * K}, bs[] = {0};
      checkMatmul(1, dims, as, bs, M, N, K, data, seed);
    } else {
      const int64_t dims[] = {3}, as[] = {M * K}, bs[] = {K * N};
      checkMatmul(1, dims, as, bs, M, N, K, data, seed);
    }
  }
}

}  // namespace kiln_cpu_test
