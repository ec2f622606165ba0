// Checks shared by the kernels/cpu tests: deterministic data, comparisons against the
// reference kernels (exact, within a dot product's rounding bound, or bit for bit), guards
// against writes outside a kernel's output, and the thread pools the tests run on.
//
// Two kinds of data: "exact" values (multiples of 1/8 in [-2, 2]) make every product and sum
// exact in f32, so an optimized kernel must match kiln_ref bit for bit whatever its summation
// order or use of FMA; "random" values (uniform in [-1, 1]) must match within the rounding
// bound of a K-term dot product.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kiln_cpu/parallel.h"
#include "kiln_cpu/simd.h"

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

}  // namespace kiln_cpu_test
