// Tests of the reference reduction and normalization kernels (kernels/ref: reduce, norm):
// hand-checked cases (many from ONNX's node tests) and random inputs against naive,
// independently written formulations computed in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels_nn_test_util.h"
#include "ref/norm.h"
#include "ref/reduce.h"

namespace {

using namespace kernels_test;

// ============================== reductions ==============================

/// Naive reduction in double: each input element's output index from its coordinates.
template <class T>
std::vector<double> naiveReduce(const Dims& dims, const Dims& mask, const std::vector<T>& x,
                                const std::string& kind) {
  const int rank = int(dims.size());
  Dims kept;
  for (int d = 0; d < rank; ++d)
    if (!mask[size_t(d)]) kept.push_back(dims[size_t(d)]);
  const int64_t out = product(kept);
  std::vector<std::vector<double>> groups(static_cast<size_t>(out));
  for (int64_t e = 0; e < int64_t(x.size()); ++e) {
    int64_t rem = e, o = 0, scale = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t c = rem % dims[size_t(d)];
      rem /= dims[size_t(d)];
      if (!mask[size_t(d)]) {
        o += c * scale;
        scale *= dims[size_t(d)];
      }
    }
    groups[size_t(o)].push_back(double(x[size_t(e)]));
  }
  std::vector<double> r;
  for (const auto& v : groups) {
    double acc = 0;
    if (kind == "sum" || kind == "mean") {
      for (double a : v) acc += a;
      if (kind == "mean") acc /= double(v.size());
    } else if (kind == "prod") {
      acc = 1;
      for (double a : v) acc *= a;
    } else if (kind == "max" || kind == "min") {
      acc = kind == "max" ? -INFINITY : INFINITY;
      for (double a : v)
        acc = std::isnan(a) || std::isnan(acc) ? kNaN
              : kind == "max"                  ? std::max(acc, a)
                                               : std::min(acc, a);
    } else if (kind == "l1") {
      for (double a : v) acc += std::fabs(a);
    } else if (kind == "l2" || kind == "sumsq") {
      for (double a : v) acc += a * a;
      if (kind == "l2") acc = std::sqrt(acc);
    } else if (kind == "logsum") {
      for (double a : v) acc += a;
      acc = std::log(acc);
    } else if (kind == "logsumexp") {
      for (double a : v) acc += std::exp(a);
      acc = std::log(acc);
    }
    r.push_back(acc);
  }
  return r;
}

template <class T, class R>
std::vector<T> runReduce(const Dims& dims, const Dims& mask, const std::vector<T>& x, R r) {
  Dims kept;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!mask[d]) kept.push_back(dims[d]);
  std::vector<T> y(size_t(product(kept)));
  kiln_ref::reduce(int(dims.size()), dims.data(), mask.data(), x.data(), y.data(), r);
  return y;
}

template <class T>
std::vector<T> runLogSumExp(const Dims& dims, const Dims& mask, const std::vector<T>& x) {
  Dims kept;
  for (size_t d = 0; d < dims.size(); ++d)
    if (!mask[d]) kept.push_back(dims[d]);
  std::vector<T> y(size_t(product(kept)));
  std::vector<double> scratch(size_t(
      kiln_ref::reduce_log_sum_exp_scratch_bytes<T>(int(dims.size()), dims.data(), mask.data()) /
          8 +
      1));
  kiln_ref::reduce_log_sum_exp(int(dims.size()), dims.data(), mask.data(), x.data(), y.data(),
                               scratch.data());
  return y;
}

template <class T>
void checkAllReducers(const Dims& dims, const Dims& mask, std::mt19937& g, double tol) {
  auto x = randomVec<T>(g, product(dims), 0.1, 2);  // positive: LogSum is defined
  const std::string where = "mask of rank " + std::to_string(dims.size());
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceSum{}), naiveReduce(dims, mask, x, "sum"),
              tol, "sum " + where);
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceMean{}), naiveReduce(dims, mask, x, "mean"),
              tol, "mean");
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceProd{}), naiveReduce(dims, mask, x, "prod"),
              tol, "prod");
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceMax{}), naiveReduce(dims, mask, x, "max"), 0,
              "max");
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceMin{}), naiveReduce(dims, mask, x, "min"), 0,
              "min");
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceL2{}), naiveReduce(dims, mask, x, "l2"), tol,
              "l2");
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceSumSquare{}),
              naiveReduce(dims, mask, x, "sumsq"), tol, "sumsq");
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceLogSum{}),
              naiveReduce(dims, mask, x, "logsum"), tol, "logsum");
  expectClose(runLogSumExp(dims, mask, x), naiveReduce(dims, mask, x, "logsumexp"), tol, "lse");
  for (auto& v : x) v = T(v - T(1));  // mixed signs for L1
  expectClose(runReduce(dims, mask, x, kiln_ref::ReduceL1{}), naiveReduce(dims, mask, x, "l1"), tol,
              "l1");
}

TEST(KernelsNnReduce, RandomMasksMatchNaive) {
  std::mt19937 g(4);
  const std::vector<Dims> shapes = {{7}, {3, 5}, {2, 3, 4}, {3, 1, 5, 2}, {2, 3, 2, 3, 2}};
  for (const Dims& dims : shapes) {
    const int rank = int(dims.size());
    for (int m = 0; m < (1 << rank); ++m) {
      Dims mask(static_cast<size_t>(rank));
      for (int d = 0; d < rank; ++d) mask[size_t(d)] = (m >> d) & 1;
      checkAllReducers<float>(dims, mask, g, 2e-6);
      checkAllReducers<double>(dims, mask, g, 1e-13);
    }
  }
  // Scalar input (rank 0): every reducer maps x to f(x).
  std::vector<float> one = {-2.f};
  EXPECT_EQ(runReduce(Dims{}, Dims{}, one, kiln_ref::ReduceL1{})[0], 2.f);
  EXPECT_EQ(runReduce(Dims{}, Dims{}, one, kiln_ref::ReduceMean{})[0], -2.f);
}

TEST(KernelsNnReduce, OnnxExampleKeepdimsLayout) {
  // test_reduce_sum_keepdims_example: [3, 2, 2] over axis 1 -> [[4,6]],[[12,14]],[[20,22]].
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_EQ(runReduce(Dims{3, 2, 2}, Dims{0, 1, 0}, x, kiln_ref::ReduceSum{}),
            (std::vector<float>{4, 6, 12, 14, 20, 22}));
  EXPECT_EQ(runReduce(Dims{3, 2, 2}, Dims{1, 0, 1}, x, kiln_ref::ReduceMax{}),
            (std::vector<float>{10, 12}));
  EXPECT_EQ(runReduce(Dims{3, 2, 2}, Dims{1, 1, 1}, x, kiln_ref::ReduceProd{}),
            (std::vector<float>{479001600}));
}

TEST(KernelsNnReduce, NaNEmptyAndInfinities) {
  std::vector<float> x = {1, kNaNf, 3, 4, 5, 6};
  auto mx = runReduce(Dims{2, 3}, Dims{0, 1}, x, kiln_ref::ReduceMax{});
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 6.f);
  auto mn = runReduce(Dims{2, 3}, Dims{1, 0}, x, kiln_ref::ReduceMin{});
  EXPECT_EQ(mn[0], 1.f);
  EXPECT_TRUE(std::isnan(mn[1]));
  // NaN first, then numbers: still NaN.
  std::vector<float> nanFirst = {kNaNf, 1, 2};
  EXPECT_TRUE(std::isnan(runReduce(Dims{3}, Dims{1}, nanFirst, kiln_ref::ReduceMax{})[0]));
  // Empty reduced dim: identities.
  std::vector<float> empty;
  const Dims ed = {2, 0}, em = {0, 1};
  EXPECT_EQ(runReduce(ed, em, empty, kiln_ref::ReduceSum{}), (std::vector<float>{0, 0}));
  EXPECT_EQ(runReduce(ed, em, empty, kiln_ref::ReduceProd{}), (std::vector<float>{1, 1}));
  EXPECT_EQ(runReduce(ed, em, empty, kiln_ref::ReduceMax{})[0], -kInf);
  EXPECT_EQ(runReduce(ed, em, empty, kiln_ref::ReduceMin{})[0], kInf);
  EXPECT_EQ(runReduce(ed, em, empty, kiln_ref::ReduceL2{})[0], 0.f);
  EXPECT_EQ(runReduce(ed, em, empty, kiln_ref::ReduceLogSum{})[0], -kInf);
  EXPECT_TRUE(std::isnan(runReduce(ed, em, empty, kiln_ref::ReduceMean{})[0]));
  EXPECT_EQ(runLogSumExp(ed, em, empty)[1], -kInf);
  std::vector<int32_t> ei;
  EXPECT_EQ(runReduce(ed, em, ei, kiln_ref::ReduceMax{})[0],
            std::numeric_limits<int32_t>::lowest());
  EXPECT_EQ(runReduce(ed, em, ei, kiln_ref::ReduceMean{})[0], 0);
  // LogSumExp is stable for large inputs and handles infinities.
  std::vector<float> big = {1000, 1000, -kInf, -kInf, kInf, 1, kNaNf, 1};
  auto lse = runLogSumExp(Dims{4, 2}, Dims{0, 1}, big);
  EXPECT_NEAR(lse[0], 1000 + std::log(2.0), 1e-3);
  EXPECT_EQ(lse[1], -kInf);
  EXPECT_EQ(lse[2], kInf);
  EXPECT_TRUE(std::isnan(lse[3]));
}

TEST(KernelsNnReduce, IntegerTypesWrapAndTruncate) {
  std::vector<int32_t> x = {1, 2, 3, 4, 5, 7};
  EXPECT_EQ(runReduce(Dims{2, 3}, Dims{0, 1}, x, kiln_ref::ReduceMean{}),
            (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(runReduce(Dims{2, 3}, Dims{1, 0}, x, kiln_ref::ReduceProd{}),
            (std::vector<int32_t>{4, 10, 21}));
  EXPECT_EQ(runReduce(Dims{2, 3}, Dims{1, 1}, x, kiln_ref::ReduceL2{}), (std::vector<int32_t>{10}));
  std::vector<int32_t> big = {std::numeric_limits<int32_t>::max(), 1};
  EXPECT_EQ(runReduce(Dims{2}, Dims{1}, big, kiln_ref::ReduceSum{})[0],
            std::numeric_limits<int32_t>::min());  // wraps, no UB
  std::vector<int64_t> neg = {-3, 4, std::numeric_limits<int64_t>::lowest() + 1};
  EXPECT_EQ(runReduce(Dims{3}, Dims{1}, neg, kiln_ref::ReduceMin{})[0], neg[2]);
  EXPECT_EQ(runReduce(Dims{2}, Dims{1}, std::vector<int64_t>{-3, 4}, kiln_ref::ReduceL1{})[0], 7);
  std::vector<uint8_t> u8 = {200, 100, 7};
  EXPECT_EQ(runReduce(Dims{3}, Dims{1}, u8, kiln_ref::ReduceMax{})[0], 200);
  std::vector<int64_t> lse = {1, 2};
  EXPECT_EQ(runLogSumExp(Dims{2}, Dims{1}, lse)[0], 2);  // log(e + e^2) = 2.31 truncates to 2
}

/// Naive argmax/argmin over [outer, n, inner] with numpy's NaN rule, from scratch.
std::vector<int64_t> naiveArg(const std::vector<double>& x, int64_t outer, int64_t n, int64_t inner,
                              bool isMax, bool last) {
  std::vector<int64_t> r;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      std::vector<double> v;
      for (int64_t a = 0; a < n; ++a) v.push_back(x[size_t((o * n + a) * inner + j)]);
      if (last) std::reverse(v.begin(), v.end());
      int64_t best = 0;
      for (int64_t a = 0; a < n; ++a) {
        if (std::isnan(v[size_t(a)])) {
          best = a;
          break;
        }
        if (isMax ? v[size_t(a)] > v[size_t(best)] : v[size_t(a)] < v[size_t(best)]) best = a;
      }
      r.push_back(last ? n - 1 - best : best);
    }
  return r;
}

TEST(KernelsNnReduce, ArgMaxArgMin) {
  // test_argmax_keepdims_example_select_last_index: [[2, 2], [3, 10]] axis 1 -> [[1], [1]].
  std::vector<float> x = {2, 2, 3, 10};
  std::vector<int64_t> y(2);
  kiln_ref::argmax(2, 2, 1, x.data(), y.data(), true);
  EXPECT_EQ(y, (std::vector<int64_t>{1, 1}));
  kiln_ref::argmax(2, 2, 1, x.data(), y.data(), false);
  EXPECT_EQ(y, (std::vector<int64_t>{0, 1}));
  kiln_ref::argmin(1, 2, 2, x.data(), y.data(), false);  // axis 0
  EXPECT_EQ(y, (std::vector<int64_t>{0, 0}));
  std::mt19937 g(5);
  for (Dims shape : {Dims{4, 6, 3}, Dims{1, 9, 1}, Dims{3, 1, 2}, Dims{2, 5, 7}}) {
    auto xd = randomInts(g, product(shape), -3, 3);  // many ties
    std::vector<double> v(xd.begin(), xd.end());
    for (size_t i = 0; i < v.size(); i += 11) v[i] = kNaN;
    for (int last = 0; last < 2; ++last)
      for (int isMax = 0; isMax < 2; ++isMax) {
        std::vector<int64_t> got(size_t(shape[0] * shape[2]));
        if (isMax)
          kiln_ref::argmax(shape[0], shape[1], shape[2], v.data(), got.data(), last);
        else
          kiln_ref::argmin(shape[0], shape[1], shape[2], v.data(), got.data(), last);
        EXPECT_EQ(got, naiveArg(v, shape[0], shape[1], shape[2], isMax, last))
            << "max=" << isMax << " last=" << last;
      }
  }
  std::vector<int32_t> ints = {5, 9, 9, 1};
  kiln_ref::argmax(1, 4, 1, ints.data(), y.data(), true);
  EXPECT_EQ(y[0], 2);
}

// ============================== normalization ==============================

TEST(KernelsNnNorm, BatchNormMatchesFormula) {
  std::mt19937 g(6);
  const int64_t N = 2, C = 3, inner = 5;
  auto x = randomVec(g, N * C * inner, -3, 3);
  auto scale = randomVec(g, C), bias = randomVec(g, C), mean = randomVec(g, C);
  auto var = randomVec(g, C, 0.1, 2);
  std::vector<float> y(x.size());
  kiln_ref::batch_norm(N, C, inner, x.data(), scale.data(), bias.data(), mean.data(), var.data(),
                       1e-5f, y.data());
  std::vector<double> want(x.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const size_t k = size_t((n * C + c) * inner + i);
        want[k] = scale[size_t(c)] * (x[k] - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5) +
                  bias[size_t(c)];
      }
  expectClose(y, want, 2e-6);
  kiln_ref::batch_norm(N, C, inner, x.data(), scale.data(), bias.data(), mean.data(), var.data(),
                       1e-5f, x.data());  // in place
  expectClose(x, want, 2e-6);
}

/// Mean and population variance of v, in double.
std::pair<double, double> moments(const std::vector<double>& v) {
  double m = 0, s = 0;
  for (double a : v) m += a;
  m /= double(v.size());
  for (double a : v) s += (a - m) * (a - m);
  return {m, s / double(v.size())};
}

TEST(KernelsNnNorm, InstanceNorm) {
  // test_instancenorm_example.
  std::vector<float> x = {-1, 0, 1, 2, 3, 4}, s = {1, 1.5f}, b = {0, 1}, y(6);
  kiln_ref::instance_norm(1, 2, 3, x.data(), s.data(), b.data(), 1e-5f, y.data());
  const double k = 1 / std::sqrt(2.0 / 3 + 1e-5);
  expectClose(y, std::vector<double>{-k, 0, k, 1 - 1.5 * k, 1, 1 + 1.5 * k}, 1e-6);
  std::mt19937 g(7);
  const int64_t N = 2, C = 3, inner = 29;
  auto xr = randomVec(g, N * C * inner, -5, 5), sr = randomVec(g, C), br = randomVec(g, C);
  std::vector<float> yr(xr.size());
  kiln_ref::instance_norm(N, C, inner, xr.data(), sr.data(), br.data(), 1e-2f, yr.data());
  std::vector<double> want;
  for (int64_t p = 0; p < N * C; ++p) {
    std::vector<double> v(xr.begin() + p * inner, xr.begin() + (p + 1) * inner);
    auto [m, var] = moments(v);
    for (double a : v)
      want.push_back(sr[size_t(p % C)] * (a - m) / std::sqrt(var + double(1e-2f)) +
                     br[size_t(p % C)]);
  }
  expectClose(yr, want, 1e-6);
}

TEST(KernelsNnNorm, LayerNormWithStatistics) {
  std::mt19937 g(8);
  const Dims shape = {2, 3, 4, 5};
  auto x = randomVec(g, product(shape), -3, 3);
  for (int axis = 0; axis < 4; ++axis) {
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < 4; ++d) (d < axis ? rows : cols) *= shape[size_t(d)];
    auto w = randomVec(g, cols), b = randomVec(g, cols);
    std::vector<float> y(x.size()), mean(static_cast<size_t>(rows)), inv(static_cast<size_t>(rows));
    kiln_ref::layer_norm(rows, cols, x.data(), w.data(), b.data(), 1e-5f, y.data(), mean.data(),
                         inv.data());
    std::vector<double> wy, wm, wi;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> v(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      auto [m, var] = moments(v);
      const double is = 1 / std::sqrt(var + 1e-5);
      for (int64_t i = 0; i < cols; ++i)
        wy.push_back((v[size_t(i)] - m) * is * w[size_t(i)] + b[size_t(i)]);
      wm.push_back(m);
      wi.push_back(is);
    }
    expectClose(y, wy, 1e-6, "Y axis " + std::to_string(axis));
    expectClose(mean, wm, 1e-6, "Mean");
    expectClose(inv, wi, 1e-6, "InvStdDev");
    // No bias, no optional outputs, double in and float statistics type.
    std::vector<double> xd(x.begin(), x.end()), yd(x.size());
    std::vector<double> wd(w.begin(), w.end());
    kiln_ref::layer_norm<double, float>(rows, cols, xd.data(), wd.data(), nullptr, 1e-5f, yd.data(),
                                        nullptr, nullptr);
    for (size_t i = 0; i < wy.size(); ++i) wy[i] -= b[i % size_t(cols)];
    expectClose(yd, wy, 1e-6, "no bias");
  }
}

TEST(KernelsNnNorm, GroupNorm) {
  std::mt19937 g(9);
  const int64_t N = 2, C = 6, inner = 7;
  auto x = randomVec(g, N * C * inner, -2, 4);
  for (int64_t groups : {1, 2, 3, 6}) {
    for (bool perGroup : {false, true}) {
      auto s = randomVec(g, perGroup ? groups : C), b = randomVec(g, perGroup ? groups : C);
      std::vector<float> y(x.size());
      kiln_ref::group_norm(N, C, inner, groups, x.data(), s.data(), b.data(), perGroup, 1e-5f,
                           y.data());
      std::vector<double> want(x.size());
      const int64_t cg = C / groups;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t gi = 0; gi < groups; ++gi) {
          const int64_t base = (n * C + gi * cg) * inner;
          std::vector<double> v(x.begin() + base, x.begin() + base + cg * inner);
          auto [m, var] = moments(v);
          for (int64_t i = 0; i < cg * inner; ++i) {
            const size_t k = size_t(perGroup ? gi : gi * cg + i / inner);
            want[size_t(base + i)] = (v[size_t(i)] - m) / std::sqrt(var + 1e-5) * s[k] + b[k];
          }
        }
      expectClose(y, want, 1e-6, "groups " + std::to_string(groups));
    }
  }
}

TEST(KernelsNnNorm, LpNormalization) {
  std::vector<float> x = {3, 4, 0, 0, -1, 1}, y(6);
  kiln_ref::lp_norm(3, 2, 1, 2, x.data(), y.data());  // rows of 2, p = 2
  expectClose(y, std::vector<double>{0.6, 0.8, 0, 0, -1 / std::sqrt(2.0), 1 / std::sqrt(2.0)},
              1e-6);
  kiln_ref::lp_norm(1, 3, 2, 1, x.data(), y.data());  // axis 0 of [3, 2], p = 1
  expectClose(y, std::vector<double>{0.75, 0.8, 0, 0, -0.25, 0.2}, 1e-6);
}

TEST(KernelsNnNorm, LrnMatchesOnnxFormula) {
  std::mt19937 g(10);
  for (int64_t size : {1, 2, 3, 4, 5, 9}) {
    const int64_t N = 2, C = 5, inner = 6;
    auto x = randomVec(g, N * C * inner, -2, 2);
    std::vector<float> y(x.size());
    const float alpha = 0.0002f, beta = 0.75f, bias = 2.f;
    kiln_ref::lrn(N, C, inner, size, alpha, beta, bias, x.data(), y.data());
    std::vector<double> want(x.size());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          const int64_t lo = std::max<int64_t>(0, c - int64_t(std::floor((size - 1) / 2.0)));
          const int64_t hi = std::min<int64_t>(C, c + int64_t(std::ceil((size - 1) / 2.0)) + 1);
          for (int64_t k = lo; k < hi; ++k) sq += std::pow(x[size_t((n * C + k) * inner + i)], 2);
          const size_t e = size_t((n * C + c) * inner + i);
          want[e] = x[e] / std::pow(bias + double(alpha) / double(size) * sq, double(beta));
        }
    expectClose(y, want, 2e-6, "size " + std::to_string(size));
  }
}

TEST(KernelsNnNorm, MeanVarianceNormalization) {
  std::mt19937 g(11);
  const Dims dims = {3, 3, 3, 1};
  auto x = randomVec(g, product(dims), 0, 1);
  for (Dims mask : {Dims{1, 0, 1, 1}, Dims{0, 1, 0, 1}, Dims{1, 1, 1, 1}, Dims{0, 0, 1, 0}}) {
    std::vector<float> y(x.size());
    kiln_ref::mean_variance_norm(4, dims.data(), mask.data(), x.data(), y.data());
    // numpy formula of test_mvn: (x - mean) / (sqrt(mean(x^2) - mean^2) + 1e-9), per group.
    std::vector<double> xd(x.begin(), x.end()), sq(x.size());
    for (size_t i = 0; i < x.size(); ++i) sq[i] = xd[i] * xd[i];
    auto mean = naiveReduce(dims, mask, xd, "mean"), msq = naiveReduce(dims, mask, sq, "mean");
    std::vector<double> want(x.size());
    for (int64_t e = 0; e < int64_t(x.size()); ++e) {
      int64_t rem = e, o = 0, scale = 1;
      for (int d = 3; d >= 0; --d) {
        const int64_t c = rem % dims[size_t(d)];
        rem /= dims[size_t(d)];
        if (!mask[size_t(d)]) {
          o += c * scale;
          scale *= dims[size_t(d)];
        }
      }
      const double m = mean[size_t(o)];
      want[size_t(e)] = (xd[size_t(e)] - m) / (std::sqrt(msq[size_t(o)] - m * m) + 1e-9);
    }
    expectClose(y, want, 1e-5);
  }
  std::vector<float> flat(8, 3.f), out(8);  // constant input: 0, not NaN
  const Dims fd = {1, 2, 4}, fm = {1, 0, 1};
  kiln_ref::mean_variance_norm(3, fd.data(), fm.data(), flat.data(), out.data());
  EXPECT_EQ(out, std::vector<float>(8, 0.f));
}

}  // namespace
