// Checks shared by the kernels/cpu tests: deterministic data, comparisons against the
// reference kernels (exact, within a dot product's rounding bound, or bit for bit), guards
// against writes outside a kernel's output, the thread pools the tests run on, and the GEMM-like
// kernels' (gemm.h, gemv.h) cases, oracle and sweeps.
//
// Two kinds of data: "exact" values (multiples of 1/8 in [-2, 2]) make every product and sum
// exact in f32, so an optimized kernel must match kiln_ref bit for bit whatever its summation
// order or use of FMA; "random" values (uniform in [-1, 1]) must match within the rounding
// bound of a K-term dot product.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "kiln_cpu/parallel.h"
#include "kiln_cpu/simd.h"
#include "kiln_cpu/vfunctor.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/epilogue.h"
#include "kiln_ref/gemm.h"

namespace kiln_cpu_test {

using Vec = std::vector<float>;

constexpr float kEps = std::numeric_limits<float>::epsilon();
constexpr float kSentinel = -777.25f;  // never a result: marks memory a kernel must not write
constexpr int64_t kGuard = 64;         // sentinel floats after every output and scratch buffer

enum class Data { kExact, kRandom };

/// A small deterministic generator (the same values on every platform and library).
struct Rng {
  uint64_t s;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(s >> 33);
  }
  float value(Data d) {
    if (d == Data::kExact) return float(int(next() % 33) - 16) / 8.0f;
    return float(next() % 2000001u) / 1000000.0f - 1.0f;
  }
};

inline Vec filled(int64_t n, Data d, Rng& rng) {
  Vec v(size_t(n > 0 ? n : 0));
  for (float& x : v) x = rng.value(d);
  return v;
}

inline Vec absolute(const Vec& v) {
  Vec r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = std::fabs(v[i]);
  return r;
}

/// Runs this binary's kernels only where the CPU has the instructions they were built for.
inline bool cpuHasIsa() {
#if defined(KILN_CPU_AVX512)
  return __builtin_cpu_supports("avx512f");
#elif defined(KILN_CPU_AVX2)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return true;
#endif
}

#define KILN_REQUIRE_ISA() \
  if (!cpuHasIsa()) GTEST_SKIP() << "this CPU lacks " KILN_CPU_ISA

/// Thread pools of 1, 2 and 3 threads, started once.
inline kiln_cpu::ThreadPool* threadPool(int threads) {
  static kiln_cpu::ThreadPool pools[4];
  static bool started[4] = {};
  if (!started[threads]) {
    pools[threads].start(threads);
    started[threads] = true;
  }
  return &pools[threads];
}

/// Where want (the oracle) and got differ: exact data must match exactly (NaN matching NaN),
/// random data within tol[i]. Reports the first few differences with their (row, column).
inline ::testing::AssertionResult near(const Vec& want, const Vec& got, int64_t rows, int64_t cols,
                                       int64_t ld_got, const Vec* tol) {
  int bad = 0;
  std::string msg;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float w = want[size_t(r * cols + c)], g = got[size_t(r * ld_got + c)];
      const bool ok = (std::isnan(w) && std::isnan(g)) ||
                      (tol ? std::fabs(w - g) <= (*tol)[size_t(r * cols + c)] : w == g);
      if (ok) continue;
      if (++bad <= 5)
        msg += " (" + std::to_string(r) + "," + std::to_string(c) + "): want " + std::to_string(w) +
               " got " + std::to_string(g) + ";";
    }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << rows * cols << " differ:" << msg;
}

/// Bitwise equality of two outputs with the same layout.
inline ::testing::AssertionResult identical(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << b[i] << " (not bit-identical)";
  return ::testing::AssertionSuccess();
}

/// Bitwise equality, except that a NaN matches any NaN: the sign and payload of a NaN that x86
/// arithmetic makes depend on which operand the compiler puts first in a commutative add or
/// multiply, which the portable build's loops leave to GCC's vectorizer.
inline ::testing::AssertionResult identicalValues(const Vec& a, const Vec& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a[i] << " vs " << b[i] << " (not bit-identical)";
  return ::testing::AssertionSuccess();
}

/// Nothing past `used` floats (the guard) was written; within rows of ld, columns >= cols.
inline ::testing::AssertionResult untouched(const Vec& buf, int64_t rows, int64_t cols, int64_t ld,
                                            int64_t used) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < ld; ++c)
      if (buf[size_t(r * ld + c)] != kSentinel)
        return ::testing::AssertionFailure() << "wrote padding at (" << r << "," << c << ")";
  for (size_t i = size_t(used); i < buf.size(); ++i)
    if (buf[i] != kSentinel)
      return ::testing::AssertionFailure() << "wrote past the end at +" << i - size_t(used);
  return ::testing::AssertionSuccess();
}

/// Tolerance of a dot product of `terms` terms whose |terms| sum to abs_sum, computed in two
/// orders (each within terms * eps * abs_sum of the exact value), plus the activation's own
/// rounding of the result.
inline Vec dotTolerance(const Vec& abs_sum, const Vec& want, int64_t terms) {
  Vec tol(abs_sum.size());
  for (size_t i = 0; i < tol.size(); ++i)
    tol[i] = 2.0f * float(terms + 3) * kEps * abs_sum[i] + 4.0f * kEps * std::fabs(want[i]) +
             std::numeric_limits<float>::min();
  return tol;
}

/// A GEMM test case: C[M, N] = A[M, K] * B[K, N] with the epilogue's parts that are set.
struct GemmCase {
  int64_t M, N, K;
  bool row_bias = false, col_bias = false, residual = false;
  int64_t pad = 0;  // extra columns in lda, ldb, ldc and ld_residual
};

/// INSTANTIATE_TEST_SUITE_P's name generator for cases with a `name`: every character that is
/// not a letter or a digit becomes '_'.
struct CaseName {
  template <class Info>
  std::string operator()(const Info& info) const {
    std::string n = info.param.name;
    for (char& ch : n)
      if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
  }
};

inline std::string describe(const GemmCase& g) {
  return "M=" + std::to_string(g.M) + " N=" + std::to_string(g.N) + " K=" + std::to_string(g.K) +
         (g.row_bias ? " row_bias" : "") + (g.col_bias ? " col_bias" : "") +
         (g.residual ? " residual" : "") + (g.pad ? " padded" : "");
}

/// The edge values of a list without repeats (kNR - 1 is 31 on AVX-512, and so on).
inline std::vector<int64_t> distinct(std::vector<int64_t> v) {
  std::vector<int64_t> r;
  for (int64_t x : v)
    if (std::find(r.begin(), r.end(), x) == r.end()) r.push_back(x);
  return r;
}

/// The checks of a GEMM sweep on one (M, N, K), check(GemmCase, activation, data, seed) being a
/// kernel's check: a plain product on exact data, and a column bias + residual + Relu epilogue
/// on random data with padded leading dimensions.
template <class Check>
void sweepChecks(Check check, int64_t M, int64_t N, int64_t K) {
  check(GemmCase{M, N, K}, kiln_ref::NoActivation{}, Data::kExact, uint64_t(M * 1000 + N));
  check(GemmCase{M, N, K, false, true, true, 3}, kiln_ref::Relu{}, Data::kRandom,
        uint64_t(K * 7919 + N));
}

/// Names "M<m>_K<k>" of the tests of a suite over (M, K).
inline std::string nameMK(const ::testing::TestParamInfo<std::tuple<int64_t, int64_t>>& info) {
  return "M" + std::to_string(std::get<0>(info.param)) + "_K" +
         std::to_string(std::get<1>(info.param));
}

/// The epilogue checks of a GEMM-like kernel (check as for sweepChecks): each combination of
/// row bias, column bias and residual (none, each alone, all) with `act`, on every shape of
/// Ms x Ns x Ks with leading dimensions padded by one, on exact and on random data.
template <class Check, class Act>
void epilogueChecks(Check check, Act act, const std::vector<int64_t>& Ms,
                    const std::vector<int64_t>& Ns, const std::vector<int64_t>& Ks) {
  const bool combos[][3] = {{false, false, false},
                            {true, false, false},
                            {false, true, false},
                            {false, false, true},
                            {true, true, true}};
  uint64_t seed = 1;
  for (const auto& bias : combos)
    for (int64_t M : Ms)
      for (int64_t N : Ns)
        for (int64_t K : Ks) {
          const GemmCase g{M, N, K, bias[0], bias[1], bias[2], 1};
          check(g, act, Data::kExact, ++seed);
          check(g, act, Data::kRandom, ++seed);
        }
}

/// The rows x cols matrix stored with leading dimension ld in v, densely (ld = cols).
inline Vec dense(const Vec& v, int64_t rows, int64_t cols, int64_t ld) {
  Vec d(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) d[size_t(r * cols + c)] = v[size_t(r * ld + c)];
  return d;
}

/// The oracle of a GEMM with the CPU kernels' epilogue on dense operands (a M x K, b K x N,
/// residual M x N; null biases and residual skipped): kiln_ref::gemm with the row bias as its C
/// operand, the column bias and residual through kiln_ref::Epilogue (the CPU epilogue's order).
/// With tol, also the rounding bound of each output for random data (dotTolerance).
template <class Act>
Vec referenceGemm(int64_t M, int64_t N, int64_t K, const Vec& a, const Vec& b, const Vec* row_bias,
                  const Vec* col_bias, const Vec* residual, Act act, Vec* tol = nullptr) {
  auto run = [&](const Vec& a_, const Vec& b_, const Vec* rb, const Vec* cb, const Vec* res,
                 auto act_) {
    Vec y(size_t(M * N));
    kiln_ref::gemm<float>(M, N, K, false, false, 1.0f, a_.data(), b_.data(), 1.0f,
                          rb ? rb->data() : nullptr, 1, 0, y.data(),
                          kiln_ref::make_epilogue<float>(act_, cb ? cb->data() : nullptr,
                                                         res ? res->data() : nullptr));
    return y;
  };
  Vec want = run(a, b, row_bias, col_bias, residual, act);
  if (tol) {
    auto abs = [](const Vec* v) { return v ? absolute(*v) : Vec(); };
    const Vec arb = abs(row_bias), acb = abs(col_bias), ares = abs(residual);
    const Vec abs_sum =
        run(absolute(a), absolute(b), row_bias ? &arb : nullptr, col_bias ? &acb : nullptr,
            residual ? &ares : nullptr, kiln_ref::NoActivation{});
    *tol = dotTolerance(abs_sum, want, K);
  }
  return want;
}

/// A GEMM case's seeded operands at its padded leading dimensions (pad extra columns; the
/// residual's one more), their dense copies, and kiln_ref's result with, for random data, each
/// output's rounding bound.
struct GemmOperands {
  int64_t lda, ldb, ldc, ldr;
  Vec a, b, rb, cb, res, ac, bc, resc, tol, want;
};

template <class Act>
GemmOperands gemmOperands(const GemmCase& g, Act act, Data data, uint64_t seed) {
  const int64_t M = g.M, N = g.N, K = g.K;
  GemmOperands o{K + g.pad, N + g.pad, N + g.pad, N + g.pad + 1, {}, {}, {}, {}, {}, {}, {},
                 {},        {},        {}};
  Rng rng{seed};
  o.a = filled(M * o.lda, data, rng);
  o.b = filled(K * o.ldb, data, rng);
  o.rb = filled(M, data, rng);
  o.cb = filled(N, data, rng);
  o.res = filled(M * o.ldr, data, rng);
  o.ac = dense(o.a, M, K, o.lda);
  o.bc = dense(o.b, K, N, o.ldb);
  o.resc = dense(o.res, M, N, o.ldr);
  o.want =
      referenceGemm(M, N, K, o.ac, o.bc, g.row_bias ? &o.rb : nullptr, g.col_bias ? &o.cb : nullptr,
                    g.residual ? &o.resc : nullptr, act, data == Data::kRandom ? &o.tol : nullptr);
  return o;
}

/// A kernels/ref functor without a vector form (kernels/cpu/vfunctor.h): epilogues apply it by
/// the scalar pass over what they stored, the path of any activation that has none, which must
/// match kernels/ref exactly.
template <class F>
struct ScalarOnly {
  F f;
  float operator()(float x) const { return f(x); }
};

/// act's vector form applied to each element of v alone (a one-lane load): what an epilogue
/// that applies act in registers must give for the values it would otherwise store.
template <class Act>
Vec vectorApplied(Act act, Vec v) {
  for (float& x : v) {
    kiln_cpu::V::store(&x, kiln_cpu::vapply(act, kiln_cpu::V::load(&x, 1)), 1);
  }
  return v;
}

}  // namespace kiln_cpu_test
