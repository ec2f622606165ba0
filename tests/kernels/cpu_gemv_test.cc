// Tests of the few-row product gemv_f32_packed_b (kernels/cpu/gemv.h) against kiln_ref::gemm and,
// bit for bit, against the GEMM driver on the same packed B (gemm_f32_rowa_packed_b: gemv.h
// promises the driver's sums in the driver's order), at 1, 2 and 3 threads, on shapes at the
// edges of the panels (N around kNR and a classifier's 1000) and of the driver's k blocks (K
// around kKC, and a classifier's 1280), with every epilogue. Built once per SIMD layer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/gemm.h"
#include "kiln_cpu/gemv.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/activation.h"

namespace {

using namespace kiln_cpu_test;
using kiln_cpu::kNR;

/// gemv_f32_packed_b on one case: near kiln_ref, identical to the GEMM driver, identical at 1,
/// 2 and 3 threads, and writing nothing outside C. (g.pad pads A, C and the residual; B is
/// dense, as pack_b_panels reads it.)
template <class Act>
void checkGemv(const GemmCase& g, Act act, Data data, uint64_t seed) {
  SCOPED_TRACE(describe(g) + (data == Data::kExact ? " exact" : " random"));
  const int64_t M = g.M, N = g.N, K = g.K;
  const int64_t lda = K + g.pad, ldc = N + g.pad, ldr = N + g.pad + 1;
  Rng rng{seed};
  const Vec a = filled(M * lda, data, rng), b = filled(K * N, data, rng);
  const Vec rb = filled(M, data, rng), cb = filled(N, data, rng), res = filled(M * ldr, data, rng);
  const Vec resc = dense(res, M, N, ldr);
  Vec tol;
  const Vec want = referenceGemm(M, N, K, dense(a, M, K, lda), b, g.row_bias ? &rb : nullptr,
                                 g.col_bias ? &cb : nullptr, g.residual ? &resc : nullptr, act,
                                 data == Data::kRandom ? &tol : nullptr);

  const int64_t packed = kiln_cpu::packed_b_floats(K, N);
  Vec panels(size_t(packed + kGuard), kSentinel);
  kiln_cpu::pack_b_panels(b.data(), K, N, panels.data());
  const auto e = kiln_cpu::make_epilogue(act, g.row_bias ? rb.data() : nullptr,
                                         g.col_bias ? cb.data() : nullptr,
                                         g.residual ? res.data() : nullptr, ldr);
  const int64_t c_floats = M * ldc;
  auto runGemv = [&](kiln_cpu::ThreadPool* p) {
    Vec c(size_t(c_floats + kGuard), kSentinel);
    kiln_cpu::gemv_f32_packed_b(M, N, K, a.data(), lda, panels.data(), c.data(), ldc, e, p);
    EXPECT_TRUE(untouched(c, M, N, ldc, c_floats)) << (p ? p->size() : 0) << " threads";
    return c;
  };
  Vec driver(size_t(c_floats + kGuard), kSentinel);
  kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, a.data(), lda, panels.data(), driver.data(), ldc, e,
                                   nullptr);

  const Vec base = runGemv(nullptr);
  EXPECT_TRUE(near(want, base, M, N, ldc, data == Data::kRandom ? &tol : nullptr));
  EXPECT_TRUE(identical(driver, base)) << "gemv_f32_packed_b vs gemm_f32_rowa_packed_b";
  for (int t = 1; t <= 3; ++t)
    EXPECT_TRUE(identical(base, runGemv(threadPool(t)))) << t << " threads";
}

/// Every bias/residual combination with each activation (ScalarOnly<kiln_ref::Sigmoid>: not in
/// registers, the scalar pass over the stored row), on shapes with a partial last panel, a partial
/// group of panels, and a k block boundary.
TEST(CpuKernels, GemvEpilogues) {
  KILN_REQUIRE_ISA();
  auto each = [](auto act) {
    epilogueChecks([](auto... args) { checkGemv(args...); }, act, {1, 3}, {kNR + 1, 1000},
                   {0, 7, 513});
  };
  each(kiln_ref::NoActivation{});
  each(kiln_ref::Relu{});
  each(kiln_ref::Clip<float>{-0.75f, 1.25f});
  each(kiln_ref::HardSwish{});
  each(ScalarOnly<kiln_ref::Sigmoid>{});
}

// NaN and infinities: as the GEMM driver (the same operations in the same order).
TEST(CpuKernels, GemvSpecialValues) {
  KILN_REQUIRE_ISA();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  const int64_t M = 2, N = kNR + 5, K = 600;
  Rng rng{78};
  Vec a = filled(M * K, Data::kExact, rng), b = filled(K * N, Data::kExact, rng);
  a[2] = inf;
  a[K + 4] = -inf;
  a[K + 280] = nan;
  b[6 * N + 7] = nan;
  b[270 * N + 1] = inf;
  Vec panels(size_t(kiln_cpu::packed_b_floats(K, N)));
  kiln_cpu::pack_b_panels(b.data(), K, N, panels.data());
  const Vec cb = filled(N, Data::kExact, rng);
  auto check = [&](auto act) {
    const auto e = kiln_cpu::make_epilogue(act, nullptr, cb.data(), nullptr, 0);
    Vec want(size_t(M * N)), got(size_t(M * N));
    kiln_cpu::gemm_f32_rowa_packed_b(M, N, K, a.data(), K, panels.data(), want.data(), N, e,
                                     nullptr);
    kiln_cpu::gemv_f32_packed_b(M, N, K, a.data(), K, panels.data(), got.data(), N, e,
                                threadPool(2));
    EXPECT_TRUE(identicalValues(want, got));
  };
  check(kiln_ref::NoActivation{});
  check(kiln_ref::Relu{});
  check(kiln_ref::Clip<float>{-1.0f, 1.0f});
  check(ScalarOnly<kiln_ref::Sigmoid>{});
}

}  // namespace

namespace kiln_cpu_test {

/// A manifest case (M, N, K; M = 5 is a second chunk of rows after kGemvMaxRows): sweepChecks'
/// two epilogues.
void check_gemv_f32_packed_b(const SweepCase& c) {
  sweepChecks([](auto... args) { checkGemv(args...); }, c["M"], c["N"], c["K"]);
}

}  // namespace kiln_cpu_test
