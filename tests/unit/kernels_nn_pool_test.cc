// Tests of the reference pooling kernels (kernels/ref/pool.h): hand-checked cases (many from
// ONNX's node tests) and random inputs against naive, independently written formulations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels_nn_test_util.h"
#include "ref/pool.h"

namespace {

using namespace kernels_test;

// ============================== pooling ==============================

struct PoolCase {
  int64_t planes;
  Dims in, kernel, strides, dilations, pads;
  bool ceil;
  Dims out() const {
    Dims o;
    const size_t r = in.size();
    for (size_t d = 0; d < r; ++d)
      o.push_back(
          windowOut(in[d], kernel[d], strides[d], dilations[d], pads[d], pads[r + d], ceil));
    return o;
  }
};

struct NaivePool {
  std::vector<double> max, avgExcl, avgIncl, lp3;
  std::vector<int64_t> argRow, argCol;
};

/// Visits every window position (in padded coordinates, 3-D lifted), classifying each tap as
/// input, padding, or beyond the padding (ceil_mode overhang).
NaivePool naivePool(const PoolCase& p, const std::vector<float>& x) {
  const size_t r = p.in.size();
  Dims I = lift3(p.in, 1), K = lift3(p.kernel, 1), S = lift3(p.strides, 1),
       D = lift3(p.dilations, 1), PB = lift3(p.pads, 0, 0, r), PE = lift3(p.pads, 0, r, r),
       O = lift3(p.out(), 1);
  NaivePool res;
  const int64_t inSize = I[0] * I[1] * I[2];
  for (int64_t pl = 0; pl < p.planes; ++pl)
    for (int64_t o0 = 0; o0 < O[0]; ++o0)
      for (int64_t o1 = 0; o1 < O[1]; ++o1)
        for (int64_t o2 = 0; o2 < O[2]; ++o2) {
          double best = -INFINITY, sum = 0, lp = 0;
          int64_t inCount = 0, padCount = 0, bestRow = -1, bestCol = -1;
          const int64_t o[3] = {o0, o1, o2};
          for (int64_t k0 = 0; k0 < K[0]; ++k0)
            for (int64_t k1 = 0; k1 < K[1]; ++k1)
              for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                const int64_t kk[3] = {k0, k1, k2};
                int64_t i[3];
                bool inside = true, inPadded = true;
                for (int d = 0; d < 3; ++d) {
                  const int64_t q = o[d] * S[size_t(d)] + kk[d] * D[size_t(d)];  // padded coord
                  i[d] = q - PB[size_t(d)];
                  inside = inside && i[d] >= 0 && i[d] < I[size_t(d)];
                  inPadded = inPadded && q < I[size_t(d)] + PB[size_t(d)] + PE[size_t(d)];
                }
                if (inPadded) ++padCount;
                if (!inside) continue;
                ++inCount;
                const double v = x[size_t(pl * inSize + (i[0] * I[1] + i[1]) * I[2] + i[2])];
                sum += v;
                lp += std::pow(std::fabs(v), 3);
                if (v > best) {
                  best = v;
                  bestRow = pl * inSize + (i[0] * I[1] + i[1]) * I[2] + i[2];
                  // Column-major over the original spatial dims (first spatial dim fastest).
                  int64_t col = 0, scale = 1;
                  for (size_t d = 3 - r; d < 3; ++d) {
                    col += i[d] * scale;
                    scale *= I[d];
                  }
                  bestCol = pl * inSize + col;
                }
              }
          res.max.push_back(best);
          res.avgExcl.push_back(inCount ? sum / double(inCount) : 0);
          res.avgIncl.push_back(padCount ? sum / double(padCount) : 0);
          res.lp3.push_back(std::cbrt(lp));
          res.argRow.push_back(bestRow);
          res.argCol.push_back(bestCol);
        }
  return res;
}

TEST(KernelsNnPool, RandomMatchesNaive) {
  std::mt19937 g(15);
  const std::vector<PoolCase> cases = {
      {3, {28, 28}, {3, 3}, {1, 1}, {1, 1}, {2, 2, 2, 2}, false},  // test_*pool_2d_pads
      {2, {32, 32}, {5, 5}, {3, 3}, {1, 1}, {0, 0, 0, 0}, false},  // *_2d_strides
      {1, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true},     // *_2d_ceil
      {2, {4, 4}, {2, 2}, {1, 1}, {2, 2}, {0, 0, 0, 0}, false},    // maxpool_2d_dilations
      {2, {7, 11}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 1, 1}, true},    // ceil + asymmetric pads
      {1, {9, 10}, {2, 3}, {4, 5}, {2, 1}, {1, 2, 0, 1}, false},   // stride > kernel
      {2, {13}, {4}, {3}, {2}, {2, 3}, true},                      // 1-D
      {1, {1}, {1}, {1}, {1}, {0, 0}, false},
      {1, {5, 4, 6}, {2, 3, 2}, {2, 1, 3}, {1, 2, 1}, {1, 1, 0, 0, 1, 1}, true},  // 3-D
      {2, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {2, 2, 2, 2}, false},  // window mostly padding
  };
  for (const PoolCase& p : cases) {
    const Dims out = p.out();
    const int r = int(p.in.size());
    auto x = randomVec(g, p.planes * product(p.in), -5, 5);
    const NaivePool want = naivePool(p, x);
    const size_t n = size_t(p.planes * product(out));
    std::vector<float> mx(n), avgE(n), avgI(n), lp(n);
    std::vector<int64_t> row(n), col(n);
    const std::string what = "pool rank " + std::to_string(r) + " in0 " + std::to_string(p.in[0]);
    kiln_ref::max_pool(r, p.planes, p.in.data(), p.kernel.data(), out.data(), p.strides.data(),
                       p.dilations.data(), p.pads.data(), x.data(), mx.data(), row.data(), 0);
    expectClose(mx, want.max, 0, "max " + what);
    EXPECT_EQ(row, want.argRow) << what;
    kiln_ref::max_pool(r, p.planes, p.in.data(), p.kernel.data(), out.data(), p.strides.data(),
                       p.dilations.data(), p.pads.data(), x.data(), mx.data(), col.data(), 1);
    EXPECT_EQ(col, want.argCol) << what;
    kiln_ref::average_pool(r, p.planes, p.in.data(), p.kernel.data(), out.data(), p.strides.data(),
                           p.dilations.data(), p.pads.data(), false, x.data(), avgE.data());
    expectClose(avgE, want.avgExcl, 1e-6, "avg " + what);
    kiln_ref::average_pool(r, p.planes, p.in.data(), p.kernel.data(), out.data(), p.strides.data(),
                           p.dilations.data(), p.pads.data(), true, x.data(), avgI.data());
    expectClose(avgI, want.avgIncl, 1e-6, "avg incl " + what);
    kiln_ref::lp_pool(r, p.planes, p.in.data(), p.kernel.data(), out.data(), p.strides.data(),
                      p.dilations.data(), p.pads.data(), 3, x.data(), lp.data());
    expectClose(lp, want.lp3, 1e-5, "lp " + what);
  }
}

TEST(KernelsNnPool, OnnxExamples) {
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[size_t(i)] = float(i + 1);
  const Dims in = {5, 5}, one = {1, 1};
  // test_maxpool_with_argmax_2d_precomputed_pads: kernel 5, pads 2 -> 5x5 with indices.
  const Dims k5 = {5, 5}, p2 = {2, 2, 2, 2}, out5 = {5, 5};
  std::vector<float> y(25);
  std::vector<int64_t> idx(25);
  kiln_ref::max_pool(2, 1, in.data(), k5.data(), out5.data(), one.data(), one.data(), p2.data(),
                     x.data(), y.data(), idx.data(), 0);
  EXPECT_EQ(y, (std::vector<float>{13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                                   25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25}));
  EXPECT_EQ(idx, (std::vector<int64_t>{12, 13, 14, 14, 14, 17, 18, 19, 19, 19, 22, 23, 24,
                                       24, 24, 22, 23, 24, 24, 24, 22, 23, 24, 24, 24}));
  // test_averagepool_2d_precomputed_pads and _count_include_pad.
  kiln_ref::average_pool(2, 1, in.data(), k5.data(), out5.data(), one.data(), one.data(), p2.data(),
                         false, x.data(), y.data());
  expectClose(
      y, std::vector<double>{7,  7.5,  8,  8.5,  9,  9.5,  10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5,
                             14, 14.5, 15, 15.5, 16, 16.5, 17, 17.5, 18, 18.5, 19},
      1e-6);
  kiln_ref::average_pool(2, 1, in.data(), k5.data(), out5.data(), one.data(), one.data(), p2.data(),
                         true, x.data(), y.data());
  expectClose(y, std::vector<double>{2.52,  3.6,  4.8,  4.08, 3.24, 4.56, 6.4,  8.4, 7.04,
                                     5.52,  7.2,  10,   13,   10.8, 8.4,  6.96, 9.6, 12.4,
                                     10.24, 7.92, 6.12, 8.4,  10.8, 8.88, 6.84},
              1e-6);
  // test_maxpool_with_argmax_2d_precomputed_strides: storage_order 1.
  const Dims k2 = {2, 2}, s2 = {2, 2}, p0 = {0, 0, 0, 0}, out2 = {2, 2};
  std::vector<float> y2(4);
  std::vector<int64_t> i2(4);
  kiln_ref::max_pool(2, 1, in.data(), k2.data(), out2.data(), s2.data(), one.data(), p0.data(),
                     x.data(), y2.data(), i2.data(), 1);
  EXPECT_EQ(y2, (std::vector<float>{7, 9, 17, 19}));
  EXPECT_EQ(i2, (std::vector<int64_t>{6, 16, 8, 18}));
  kiln_ref::average_pool(2, 1, in.data(), k2.data(), out2.data(), s2.data(), one.data(), p0.data(),
                         false, x.data(), y2.data());
  EXPECT_EQ(y2, (std::vector<float>{4, 6, 14, 16}));
  // test_maxpool_2d_precomputed_same_upper: kernel 3, stride 2, pads [1, 1, 1, 1] -> 3x3.
  const Dims k3 = {3, 3}, p1 = {1, 1, 1, 1}, out3 = {3, 3};
  std::vector<float> y3(9);
  kiln_ref::max_pool(2, 1, in.data(), k3.data(), out3.data(), s2.data(), one.data(), p1.data(),
                     x.data(), y3.data(), static_cast<int64_t*>(nullptr), 0);
  EXPECT_EQ(y3, (std::vector<float>{7, 9, 10, 17, 19, 20, 22, 24, 25}));
  // test_averagepool_2d_ceil: 4x4, kernel 3, stride 2, ceil -> 2x2.
  std::vector<float> x4(16);
  for (int i = 0; i < 16; ++i) x4[size_t(i)] = float(i + 1);
  const Dims in4 = {4, 4};
  kiln_ref::average_pool(2, 1, in4.data(), k3.data(), out2.data(), s2.data(), one.data(), p0.data(),
                         false, x4.data(), y2.data());
  EXPECT_EQ(y2, (std::vector<float>{6, 7.5, 12, 13.5}));
  kiln_ref::max_pool(2, 1, in4.data(), k3.data(), out2.data(), s2.data(), one.data(), p0.data(),
                     x4.data(), y2.data(), static_cast<int64_t*>(nullptr), 0);
  EXPECT_EQ(y2, (std::vector<float>{11, 12, 15, 16}));
}

TEST(KernelsNnPool, MaxPoolNaNTiesAndIntegers) {
  // NaN taps are skipped; an all-NaN window gives NaN with the first tap's index.
  std::vector<float> x = {kNaNf, 1, kNaNf, kNaNf, 2, 2};
  const Dims in = {6}, k = {2}, s = {2}, d = {1}, p = {0, 0}, out = {3};
  std::vector<float> y(3);
  std::vector<int64_t> idx(3);
  kiln_ref::max_pool(1, 1, in.data(), k.data(), out.data(), s.data(), d.data(), p.data(), x.data(),
                     y.data(), idx.data(), 0);
  EXPECT_EQ(y[0], 1.f);
  EXPECT_EQ(idx[0], 1);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(idx[1], 2);
  EXPECT_EQ(y[2], 2.f);
  EXPECT_EQ(idx[2], 4);  // tie: first tap
  // Second plane's indices include the plane offset.
  std::vector<int8_t> xi = {-128, -100, 5, -7, 3, 3, 3, 3};
  const Dims in4 = {4}, out2 = {2};
  std::vector<int8_t> yi(4);
  std::vector<int64_t> ii(4);
  kiln_ref::max_pool(1, 2, in4.data(), k.data(), out2.data(), s.data(), d.data(), p.data(),
                     xi.data(), yi.data(), ii.data(), 0);
  EXPECT_EQ(yi, (std::vector<int8_t>{-100, 5, 3, 3}));
  EXPECT_EQ(ii, (std::vector<int64_t>{1, 2, 4, 6}));
}

TEST(KernelsNnPool, GlobalPools) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -2, 2, kNaNf, 0, 0, 0, 0, 0};
  std::vector<float> y(2);
  kiln_ref::global_average_pool(2, 9, x.data(), y.data());
  EXPECT_EQ(y[0], 5.f);  // test_globalaveragepool_precomputed
  EXPECT_TRUE(std::isnan(y[1]));
  kiln_ref::global_max_pool(2, 9, x.data(), y.data());
  EXPECT_EQ(y[0], 9.f);
  EXPECT_TRUE(std::isnan(y[1]));  // numpy.max propagates NaN
  kiln_ref::global_lp_pool(1, 3, 2, std::vector<float>{3, 0, -4}.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 5.f);
  kiln_ref::global_lp_pool(1, 3, 1, std::vector<float>{3, 0, -4}.data(), y.data());
  EXPECT_FLOAT_EQ(y[0], 7.f);
  kiln_ref::global_lp_pool(1, 2, 3, std::vector<double>{1, 2}.data(),
                           std::vector<double>(1).data());
}

TEST(KernelsNnPool, MaxUnpool) {
  // test_maxunpool_export_without_output_shape and with_output_shape.
  std::vector<float> x = {1, 2, 3, 4}, y(16);
  std::vector<int64_t> idx = {5, 7, 13, 15};
  const Dims d4 = {4, 4}, d5 = {5, 5};
  kiln_ref::max_unpool(2, 1, 4, d4.data(), d4.data(), x.data(), idx.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4}));
  std::vector<float> x2 = {5, 6, 7, 8}, y2(25, -1.f);
  kiln_ref::max_unpool(2, 1, 4, d4.data(), d5.data(), x2.data(), idx.data(), y2.data());
  EXPECT_EQ(y2, (std::vector<float>{0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0,
                                    0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0}));
  // Round trip through MaxPool indices over two planes; out-of-range indices are skipped.
  std::mt19937 g(16);
  auto xr = randomVec(g, 2 * 36);
  const Dims in = {6, 6}, k = {2, 2}, s = {2, 2}, one = {1, 1}, p = {0, 0, 0, 0}, out = {3, 3};
  std::vector<float> pooled(18), back(72);
  std::vector<int64_t> ind(18);
  kiln_ref::max_pool(2, 2, in.data(), k.data(), out.data(), s.data(), one.data(), p.data(),
                     xr.data(), pooled.data(), ind.data(), 0);
  ind[0] = 1000;
  kiln_ref::max_unpool(2, 2, 18, in.data(), in.data(), pooled.data(), ind.data(), back.data());
  int nonzero = 0;
  for (size_t i = 0; i < 72; ++i)
    if (back[i] != 0) {
      ++nonzero;
      EXPECT_EQ(back[i], xr[i]);
    }
  EXPECT_EQ(nonzero, 17);
}

TEST(KernelsNnPool, MaxRoiPool) {
  // 1x1x6x6 image 0..35; roi (0, 0, 0, 3, 3) at scale 1 -> 4x4 box, 2x2 bins of 2x2.
  std::vector<float> x(72);
  for (int i = 0; i < 72; ++i) x[size_t(i)] = float(i % 36) * (i < 36 ? 1.f : -1.f);
  std::vector<float> rois = {0,      0, 0, 3, 3, /**/ 0, 2, 2, 10, 10, /**/ 1, 1, 1, 1, 1,
                             /**/ 5, 0, 0, 1, 1};
  std::vector<float> y(4 * 2 * 2 * 2);
  kiln_ref::max_roi_pool(1, 2, 6, 6, 4, rois.data(), 2, 2, 1.f, x.data(), y.data());
  // roi 0, channel 0: bins rows {0,1}/{2,3}, cols likewise -> maxima 7, 9, 19, 21.
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 4), (std::vector<float>{7, 9, 19, 21}));
  // channel 1 holds negatives: the maxima are the bins' top-left values.
  EXPECT_EQ(std::vector<float>(y.begin() + 4, y.begin() + 8),
            (std::vector<float>{-0, -2, -12, -14}));
  // roi 1: box 2..10 (clipped to 5): roi 9x9, bins [0,5)->rows 2..6 clipped [2,6), [4,9)+2 ->
  // [6,6) empty -> 0.
  EXPECT_EQ(std::vector<float>(y.begin() + 8, y.begin() + 12), (std::vector<float>{35, 0, 0, 0}));
  // roi 2 lies in batch 1 (out of range for N = 1): zeros. roi 3 likewise (batch 5).
  for (size_t i = 16; i < 32; ++i) EXPECT_EQ(y[i], 0.f);
}

}  // namespace
