// Tests of kernels/cpu's vectorized math (vmath.h: exp, erf, GELU, sigmoid) against double
// precision std:: functions with the error bounds vmath.h states, and of the row kernels
// (rowwise.h: Softmax, LogSoftmax, LayerNormalization) against kiln_ref on rows at the edges of
// the vector width, with NaN/inf rows, null optional arguments and 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/eltwise.h"
#include "kiln_cpu/resize.h"
#include "kiln_cpu/rowwise.h"
#include "kiln_cpu/transpose.h"
#include "kiln_cpu/vmath.h"
#include "kiln_ref/norm.h"
#include "kiln_ref/pool.h"
#include "kiln_ref/softmax.h"

namespace {

using kiln_cpu::V;
using namespace kiln_cpu_test;

// f(x) for a vector of inputs, through the vector path (full vectors and a masked tail).
template <class F>
Vec applyV(const Vec& x, F f) {
  Vec y(x.size());
  constexpr int L = V::kLanes;
  size_t i = 0;
  for (; i + L <= x.size(); i += L) V::store(y.data() + i, f(V::load(x.data() + i)));
  if (i < x.size()) {
    const int r = int(x.size() - i);
    V::store(y.data() + i, f(V::load(x.data() + i, r)), r);
  }
  return y;
}

Vec grid(double lo, double hi, int n) {
  Vec x(size_t(n) + 1);
  for (int i = 0; i <= n; ++i) x[size_t(i)] = float(lo + (hi - lo) * i / n);
  return x;
}

// Distance in units in the last place of float(want).
double ulps(double want, float got) {
  const float w = float(want);
  if (w == got) return 0;
  const double ulp =
      std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) - std::fabs(w);
  return std::fabs(double(got) - want) / ulp;
}

TEST(CpuMath, ExpWithinTwoUlps) {
  KILN_REQUIRE_ISA();
  const Vec x = grid(-87.0, 88.0, 400000);
  const Vec y = applyV(x, kiln_cpu::vexp);
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) worst = std::max(worst, ulps(std::exp(double(x[i])), y[i]));
  EXPECT_LE(worst, 2.0);
  std::printf("vexp max error %.2f ulp\n", worst);
  const float inf = std::numeric_limits<float>::infinity();
  const Vec special{0.0f, -0.0f, 1.0f, 100.0f, inf, -200.0f, -inf, std::nanf("")};
  const Vec s = applyV(special, kiln_cpu::vexp);
  EXPECT_EQ(s[0], 1.0f);
  EXPECT_EQ(s[1], 1.0f);
  EXPECT_NEAR(s[2], 2.7182817f, 3e-7f);
  EXPECT_EQ(s[3], inf);
  EXPECT_EQ(s[4], inf);
  EXPECT_LE(s[5], 1.2e-38f);
  EXPECT_LE(s[6], 1.2e-38f);
  EXPECT_TRUE(std::isnan(s[7]));
}

TEST(CpuMath, ErfGeluSigmoidWithinStatedBounds) {
  KILN_REQUIRE_ISA();
  const Vec x = grid(-9.0, 9.0, 200000);
  const Vec e = applyV(x, kiln_cpu::verf), g = applyV(x, kiln_cpu::vgelu),
            s = applyV(x, kiln_cpu::vsigmoid);
  double erfErr = 0, geluErr = 0, sigUlps = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xd = x[i];
    erfErr = std::max(erfErr, std::fabs(e[i] - std::erf(xd)));
    const double gelu = 0.5 * xd * std::erfc(-xd / std::sqrt(2.0));
    geluErr = std::max(geluErr, std::fabs(g[i] - gelu) / std::max(1.0, std::fabs(xd)));
    sigUlps = std::max(sigUlps, ulps(1.0 / (1.0 + std::exp(-xd)), s[i]));
  }
  std::printf("verf max abs error %.3g, vgelu max error %.3g * max(1,|x|), vsigmoid %.2f ulp\n",
              erfErr, geluErr, sigUlps);
  EXPECT_LE(erfErr, 5e-7);
  EXPECT_LE(geluErr, 4e-7);
  EXPECT_LE(sigUlps, 4.0);
  const Vec nan = applyV(Vec{std::nanf("")}, kiln_cpu::verf);
  EXPECT_TRUE(std::isnan(nan[0]));
}

TEST(CpuRowwise, SoftmaxRowsWithNanOrInfinityFollowTheReference) {
  KILN_REQUIRE_ISA();
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t cols = V::kLanes + 3;
  for (float special : {std::nanf(""), inf, -inf}) {
    for (int64_t at : {int64_t(0), cols - 1}) {
      Vec x(size_t(2 * cols), 0.5f);
      x[size_t(cols + at)] = special;  // row 1 only
      for (bool log : {false, true}) {
        Vec want(x.size()), got(x.size());
        if (log)
          kiln_ref::log_softmax<float>(2, cols, 1, x.data(), want.data());
        else
          kiln_ref::softmax<float>(2, cols, 1, x.data(), want.data());
        kiln_cpu::softmax_rows_f32(2, cols, x.data(), got.data(), log, nullptr);
        for (int64_t i = cols; i < 2 * cols; ++i) {
          const float w = want[size_t(i)], g = got[size_t(i)];
          EXPECT_TRUE((std::isnan(w) && std::isnan(g)) || w == g)
              << "special " << special << " at " << at << " col " << i - cols << ": " << w << " vs "
              << g;
        }
      }
    }
  }
}

TEST(CpuEltwise, SigmoidMapWithinFourUlps) {
  KILN_REQUIRE_ISA();
  Rng rng{3};
  for (int64_t n : {int64_t(1), int64_t(V::kLanes + 3), kiln_cpu::kMapChunk + 17}) {
    Vec x = filled(n, Data::kRandom, rng);
    for (float& v : x) v *= 20.0f;
    Vec first;
    for (int threads : {1, 2, 3}) {
      Vec y(size_t(n + kGuard), kSentinel);
      kiln_cpu::map_n_f32(
          n, y.data(), [](V::R v) { return kiln_cpu::vapply(kiln_ref::Sigmoid{}, v); },
          threads == 1 ? nullptr : threadPool(threads), kiln_cpu::Dense{x.data()});
      EXPECT_TRUE(untouched(y, 0, 0, 0, n));
      for (int64_t i = 0; i < n; ++i)
        ASSERT_LE(ulps(1.0 / (1.0 + std::exp(-double(x[size_t(i)]))), y[size_t(i)]), 4.0) << i;
      if (first.empty()) first = y;
      EXPECT_TRUE(identical(first, y));
    }
  }
}

}  // namespace

namespace kiln_cpu_test {

/// softmax_rows_f32 (and log) on rows x cols of values in [-12, 12]: within 8 eps of kiln_ref,
/// identical at 1-3 threads and in place.
void check_softmax_rows_f32(const SweepCase& k) {
  const struct { int64_t rows, cols; } c{k["rows"], k["cols"]};
  Rng rng{uint64_t(11 + c.rows * 1000 + c.cols)};
  {
    for (bool log : {false, true}) {
      Vec x = filled(c.rows * c.cols, Data::kRandom, rng);
      for (float& v : x) v *= 12.0f;
      Vec want(x.size());
      if (log)
        kiln_ref::log_softmax<float>(c.rows, c.cols, 1, x.data(), want.data());
      else
        kiln_ref::softmax<float>(c.rows, c.cols, 1, x.data(), want.data());
      Vec first;
      for (int threads : {1, 2, 3}) {
        Vec got(x.size(), kSentinel);
        kiln_cpu::softmax_rows_f32(c.rows, c.cols, x.data(), got.data(), log,
                                   threads == 1 ? nullptr : threadPool(threads));
        Vec tol(x.size());
        // LogSoftmax subtracts values up to 24 apart (x in [-12, 12]): an absolute bound.
        for (size_t i = 0; i < x.size(); ++i)
          tol[i] = 8 * kEps * (std::fabs(want[i]) + (log ? 24.0f : 0.0f)) + 1e-7f;
        EXPECT_TRUE(near(want, got, c.rows, c.cols, c.cols, &tol))
            << c.rows << "x" << c.cols << (log ? " log" : "") << " threads " << threads;
        if (first.empty()) first = got;
        EXPECT_TRUE(identical(first, got)) << c.rows << "x" << c.cols << " threads " << threads;
      }
      // In place gives the same result.
      Vec inplace = x;
      kiln_cpu::softmax_rows_f32(c.rows, c.cols, inplace.data(), inplace.data(), log, nullptr);
      EXPECT_TRUE(identical(first, inplace));
    }
  }
}

/// layer_norm_rows_f32 on rows x cols (with and without bias) against kiln_ref, with its
/// optional Mean and InvStdDev outputs, identical at 1-3 threads.
void check_layer_norm_rows_f32(const SweepCase& k) {
  const struct { int64_t rows, cols; } c{k["rows"], k["cols"]};
  Rng rng{uint64_t(5 + c.rows * 1000 + c.cols)};
  {
    for (bool withBias : {true, false}) {
      Vec x = filled(c.rows * c.cols, Data::kRandom, rng);
      for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 3.0f + float(i % 7);
      const Vec scale = filled(c.cols, Data::kRandom, rng),
                bias = filled(c.cols, Data::kRandom, rng);
      const float* b = withBias ? bias.data() : nullptr;
      Vec want(x.size()), wantMean(size_t(c.rows)), wantInv(size_t(c.rows));
      kiln_ref::layer_norm<float, float>(c.rows, c.cols, x.data(), scale.data(), b, 1e-5f,
                                         want.data(), wantMean.data(), wantInv.data());
      Vec first;
      for (int threads : {1, 2, 3}) {
        Vec got(x.size(), kSentinel), mean(size_t(c.rows)), inv(size_t(c.rows));
        kiln_cpu::layer_norm_rows_f32(c.rows, c.cols, x.data(), scale.data(), b, 1e-5f, got.data(),
                                      mean.data(), inv.data(),
                                      threads == 1 ? nullptr : threadPool(threads));
        Vec tol(x.size());
        for (size_t i = 0; i < x.size(); ++i) tol[i] = 2e-5f * (1.0f + std::fabs(want[i]));
        EXPECT_TRUE(near(want, got, c.rows, c.cols, c.cols, &tol))
            << c.rows << "x" << c.cols << " threads " << threads;
        for (int64_t r = 0; r < c.rows; ++r) {
          EXPECT_NEAR(mean[size_t(r)], wantMean[size_t(r)],
                      1e-5f * (1 + std::fabs(wantMean[size_t(r)])));
          EXPECT_NEAR(inv[size_t(r)], wantInv[size_t(r)], 2e-5f * wantInv[size_t(r)]);
        }
        if (first.empty()) first = got;
        EXPECT_TRUE(identical(first, got));
      }
      Vec plain(x.size());  // without the optional outputs
      kiln_cpu::layer_norm_rows_f32(c.rows, c.cols, x.data(), scale.data(), b, 1e-5f, plain.data(),
                                    nullptr, nullptr, nullptr);
      EXPECT_TRUE(identical(first, plain));
    }
  }
}

/// global_average_pool_f32 on planes x spatial against kiln_ref, at 2 threads.
void check_global_average_pool_f32(const SweepCase& k) {
  const int64_t planes = k["planes"], spatial = k["spatial"];
  Rng rng{uint64_t(3 + planes * 10000 + spatial)};
  {
    const Vec x = filled(planes * spatial, Data::kRandom, rng);
    Vec want(static_cast<size_t>(planes)), got(size_t(planes + kGuard), kSentinel);
    kiln_ref::global_average_pool<float>(planes, spatial, x.data(), want.data());
    kiln_cpu::global_average_pool_f32(planes, spatial, x.data(), got.data(), threadPool(2));
    EXPECT_TRUE(untouched(got, 0, 0, 0, planes));
    for (int64_t p = 0; p < planes; ++p)
      EXPECT_NEAR(got[size_t(p)], want[size_t(p)], 1e-6 * double(spatial))
          << planes << "x" << spatial;
  }
}

/// mean_middle_f32: a channels-last GlobalAveragePool (and ReduceMean over middle axes) of
/// outer x mid x inner, within rounding of a double sum, identical at any thread count.
void check_mean_middle_f32(const SweepCase& k) {
  const int64_t outer = k["outer"], mid = k["mid"], inner = k["inner"];
  Rng rng{uint64_t(5 + outer * 100000 + mid * 1000 + inner)};
  {
    const Vec x = filled(outer * mid * inner, Data::kRandom, rng);
    Vec first;
    for (int threads : {1, 2, 3}) {
      Vec got(size_t(outer * inner + kGuard), kSentinel);
      kiln_cpu::mean_middle_f32(outer, mid, inner, x.data(), got.data(),
                                threads == 1 ? nullptr : threadPool(threads));
      EXPECT_TRUE(untouched(got, 0, 0, 0, outer * inner));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double sum = 0;
          for (int64_t m = 0; m < mid; ++m) sum += x[size_t((o * mid + m) * inner + i)];
          ASSERT_NEAR(got[size_t(o * inner + i)], sum / double(mid), 1e-6 * double(mid))
              << outer << "x" << mid << "x" << inner << " at " << o << "," << i;
        }
      if (first.empty()) first = got;
      EXPECT_TRUE(identical(first, got)) << threads << " threads";
    }
  }
}

/// transpose_2d of T: exact, batch x rows x cols, any thread count, a guard of T's past y; y
/// 64-byte aligned and one element past that (a transpose of 8 MiB or more streams its stores
/// where y is aligned: kiln_cpu::transpose_detail::kStreamBytes).
template <class T>
void checkTranspose2d(int64_t batch, int64_t rows, int64_t cols) {
  const int64_t n = batch * rows * cols;
  std::vector<T> x(static_cast<size_t>(n));
  Rng rng{uint64_t(6 + batch * 100000 + rows * 1000 + cols)};
  for (T& v : x) v = T(rng.next());
  const T guard = T(0x5a5a5a5a5a5a5a5aull);
  constexpr int64_t kAlign = 64 / int64_t(sizeof(T));
  for (int64_t offset : {int64_t(0), int64_t(1)})
    for (int threads : {1, 2, 3}) {
      std::vector<T> buf(size_t(n + kGuard + 2 * kAlign), guard);
      const int64_t skip =
          (kAlign - int64_t(reinterpret_cast<uintptr_t>(buf.data()) % 64) / int64_t(sizeof(T))) %
              kAlign +
          offset;
      T* got = buf.data() + skip;
      kiln_cpu::transpose_2d<T>(batch, rows, cols, x.data(), got,
                                threads == 1 ? nullptr : threadPool(threads));
      for (int64_t i = 0; i < skip; ++i) ASSERT_EQ(buf[size_t(i)], guard) << "wrote before y";
      for (int64_t i = n; i < n + kGuard; ++i) ASSERT_EQ(got[i], guard) << "wrote past y";
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j)
            ASSERT_EQ(got[(b * cols + j) * rows + i], x[size_t((b * rows + i) * cols + j)])
                << batch << "x" << rows << "x" << cols << " at " << b << "," << i << "," << j
                << ", " << sizeof(T) << "-byte elements, " << threads << " threads, y " << offset
                << " past 64-byte aligned";
    }
}

/// transpose_2d as generated code calls it: elements of 1, 2, 4 or 8 bytes ("bytes").
void check_transpose_2d(const SweepCase& k) {
  const int64_t batch = k["batch"], rows = k["rows"], cols = k["cols"];
  switch (k["bytes"]) {
    case 1:
      return checkTranspose2d<uint8_t>(batch, rows, cols);
    case 2:
      return checkTranspose2d<uint16_t>(batch, rows, cols);
    case 8:
      return checkTranspose2d<uint64_t>(batch, rows, cols);
    default:
      return checkTranspose2d<uint32_t>(batch, rows, cols);
  }
}

/// upsample_nearest2d_f32: planes of H x W to (H * FH) x (W * FW), each output the input at
/// (oh / FH, ow / FW): exact, any thread count.
void check_upsample_nearest2d_f32(const SweepCase& k) {
  const int64_t planes = k["planes"], H = k["H"], W = k["W"], fh = k["FH"], fw = k["FW"];
  const int64_t OH = H * fh, OW = W * fw, y_floats = planes * OH * OW;
  Rng rng{7};
  const Vec x = filled(planes * H * W, Data::kRandom, rng);
  for (int threads : {1, 2, 3}) {
    Vec got(size_t(y_floats + kGuard), kSentinel);
    kiln_cpu::upsample_nearest2d_f32(planes, H, W, fh, fw, x.data(), got.data(),
                                     threads == 1 ? nullptr : threadPool(threads));
    EXPECT_TRUE(untouched(got, 0, 0, 0, y_floats)) << threads << " threads";
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          ASSERT_EQ(got[size_t((p * OH + oh) * OW + ow)],
                    x[size_t((p * H + oh / fh) * W + ow / fw)])
              << "plane " << p << " at " << oh << "," << ow << ", " << threads << " threads";
  }
}

}  // namespace kiln_cpu_test
