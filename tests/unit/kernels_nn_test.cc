// Tests of the reference NN kernels (kernels/ref: conv, gemm, pool, norm, softmax, activation,
// reduce): hand-checked cases (many from ONNX's node tests) and random inputs against naive,
// independently written formulations computed in double.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ref/activation.h"
#include "ref/conv.h"
#include "ref/elementwise.h"
#include "ref/gemm.h"
#include "ref/norm.h"
#include "ref/pool.h"
#include "ref/reduce.h"
#include "ref/softmax.h"

namespace {

using Dims = std::vector<int64_t>;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

int64_t product(const Dims& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

template <class T = float>
std::vector<T> randomVec(std::mt19937& g, int64_t n, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& e : v) e = T(u(g));
  return v;
}

std::vector<int32_t> randomInts(std::mt19937& g, int64_t n, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(g);
  return v;
}

/// |got - want| <= tol * (1 + |want|), NaN matching NaN; reports the first few mismatches.
template <class T, class U>
void expectClose(const std::vector<T>& got, const std::vector<U>& want, double tol,
                 const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double g = double(got[i]), w = double(want[i]);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) {
        ADD_FAILURE() << what << " [" << i << "] got " << g << " want " << w;
        ++bad;
      }
      continue;
    }
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w)))) {
      ADD_FAILURE() << what << " [" << i << "] got " << g << " want " << w;
      ++bad;
    }
  }
}

/// Sliding-window output size with the floor rule (ceil_mode handled by callers that need it).
int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                  bool ceil_mode = false) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t steps = span / s;
  if (ceil_mode && span % s != 0) {
    ++steps;
    if (steps * s >= in + pb) --steps;
  }
  return steps + 1;
}

// ============================== activations ==============================

TEST(KernelsNnActivation, HandValues) {
  using namespace kiln_ref;
  EXPECT_EQ(Relu{}(-1.5f), 0.f);
  EXPECT_EQ(Relu{}(2.5f), 2.5f);
  EXPECT_EQ(Relu{}(int8_t(-7)), 0);
  EXPECT_TRUE(std::isnan(Relu{}(kNaNf)));
  EXPECT_FLOAT_EQ(LeakyRelu{0.1f}(-2.f), -0.2f);
  EXPECT_FLOAT_EQ(LeakyRelu{}(-100.f), -1.f);
  EXPECT_FLOAT_EQ(Elu{2.f}(-1.f), float(2 * (std::exp(-1.0) - 1)));
  EXPECT_EQ(Elu{}(0.f), 0.f);
  EXPECT_FLOAT_EQ(Selu{}(1.f), 1.05070102f);
  EXPECT_FLOAT_EQ((Selu{2.f, 3.f}(-1.f)), float(3 * 2 * (std::exp(-1.0) - 1)));
  EXPECT_FLOAT_EQ(Celu{2.f}(-1.f), float(2 * (std::exp(-0.5) - 1)));
  EXPECT_FLOAT_EQ(Celu{2.f}(3.f), 3.f);
  EXPECT_FLOAT_EQ(Sigmoid{}(0.f), 0.5f);
  EXPECT_EQ(Sigmoid{}(-1000.f), 0.f);
  EXPECT_EQ(Sigmoid{}(1000.f), 1.f);
  EXPECT_FLOAT_EQ(HardSigmoid{}(1.f), 0.7f);
  EXPECT_EQ(HardSigmoid{}(10.f), 1.f);
  EXPECT_EQ(HardSigmoid{}(-10.f), 0.f);
  EXPECT_FLOAT_EQ(HardSwish{}(1.f), float(1 * (1 / 6.0 + 0.5)));
  EXPECT_EQ(HardSwish{}(4.f), 4.f);
  EXPECT_EQ(HardSwish{}(-4.f), 0.f);
  EXPECT_FLOAT_EQ(Softplus{}(0.f), float(std::log(2.0)));
  EXPECT_FLOAT_EQ(Softplus{}(200.f), 200.f);  // no overflow to inf
  EXPECT_EQ(Softplus{}(-200.f), 0.f);
  EXPECT_FLOAT_EQ(Softsign{}(3.f), 0.75f);
  EXPECT_EQ(ThresholdedRelu{2.f}(2.f), 0.f);
  EXPECT_EQ(ThresholdedRelu{2.f}(2.5f), 2.5f);
  EXPECT_NEAR(Gelu{}(1.0), 0.8413447460685429, 1e-15);
  EXPECT_NEAR(Gelu{true}(1.0), 0.8411919906082768, 1e-15);
  EXPECT_NEAR(Gelu{}(-3.0), -0.004049694094890287, 1e-17);
  EXPECT_NEAR(Gelu{}(-10.f), -7.619853024160593e-23f, 1e-28f);  // erfc: no cancellation
  EXPECT_NEAR(Mish{}(1.0), 0.8650983882673103, 1e-15);
  EXPECT_NEAR(Tanh{}(0.5), std::tanh(0.5), 0);
  // ONNX test_shrink: hard (lambd 1.5) and soft (lambd 1.5, bias 1.5).
  const float xs[] = {-2, -1, 0, 1, 2};
  const float hard[] = {-2, 0, 0, 0, 2}, soft[] = {-0.5f, 0, 0, 0, 0.5f};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Shrink({0.f, 1.5f})(xs[i]), hard[i]);
    EXPECT_EQ(Shrink({1.5f, 1.5f})(xs[i]), soft[i]);
  }
  EXPECT_EQ(Shrink({1.f, 2.f})(int32_t(-5)), -4);
  EXPECT_EQ(Shrink({1.f, 2.f})(int32_t(5)), 4);
}

TEST(KernelsNnActivation, MatchFormulasOnRandomInputs) {
  std::mt19937 g(1);
  auto x = randomVec<double>(g, 500, -12, 12);
  x.push_back(0.0);
  auto check = [&](auto fn, auto formula, const char* name) {
    std::vector<double> got(x.size()), want(x.size());
    kiln_ref::unary(int64_t(x.size()), x.data(), got.data(), fn);
    for (size_t i = 0; i < x.size(); ++i) want[i] = formula(x[i]);
    expectClose(got, want, 1e-12, name);
    std::vector<float> xf(x.begin(), x.end()), gotf(x.size());
    kiln_ref::unary(int64_t(x.size()), xf.data(), gotf.data(), fn);
    for (size_t i = 0; i < x.size(); ++i) want[i] = formula(double(xf[i]));
    expectClose(gotf, want, 2e-6, name);
  };
  check(
      kiln_ref::Relu{}, [](double v) { return v > 0 ? v : 0; }, "Relu");
  check(
      kiln_ref::LeakyRelu{0.3f}, [](double v) { return v >= 0 ? v : double(0.3f) * v; }, "Leaky");
  check(
      kiln_ref::Elu{0.7f}, [](double v) { return v >= 0 ? v : double(0.7f) * (std::exp(v) - 1); },
      "Elu");
  check(
      kiln_ref::Selu{},
      [](double v) {
        const double a = double(1.67326319217681884765625f), s = double(1.05070102214813232421875f);
        return std::max(v, 0.0) * s + (std::exp(std::min(v, 0.0)) - 1) * a * s;
      },
      "Selu");
  check(
      kiln_ref::Celu{1.3f},
      [](double v) {
        const double a = double(1.3f);
        return std::max(0.0, v) + std::min(0.0, a * (std::exp(v / a) - 1));
      },
      "Celu");
  check(
      kiln_ref::Sigmoid{}, [](double v) { return 1 / (1 + std::exp(-v)); }, "Sigmoid");
  check(
      kiln_ref::HardSigmoid{0.25f, 0.4f},
      [](double v) { return std::max(0.0, std::min(1.0, 0.25 * v + double(0.4f))); }, "HardSig");
  check(
      kiln_ref::HardSwish{}, [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); },
      "HardSwish");
  check(
      kiln_ref::Tanh{}, [](double v) { return std::tanh(v); }, "Tanh");
  check(
      kiln_ref::Softplus{}, [](double v) { return std::log(std::exp(v) + 1); }, "Softplus");
  check(
      kiln_ref::Softsign{}, [](double v) { return v / (1 + std::fabs(v)); }, "Softsign");
  check(
      kiln_ref::ThresholdedRelu{0.5f}, [](double v) { return v > 0.5 ? v : 0; }, "ThrRelu");
  check(
      kiln_ref::Gelu{}, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); },
      "Gelu");
  check(
      kiln_ref::Gelu{true},
      [](double v) {
        return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
      },
      "GeluTanh");
  check(
      kiln_ref::Mish{}, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }, "Mish");
  check(
      kiln_ref::Shrink{0.2f, 0.6f},
      [](double v) {
        return v < -double(0.6f) ? v + double(0.2f) : v > double(0.6f) ? v - double(0.2f) : 0;
      },
      "Shrink");
}

TEST(KernelsNnActivation, ClipAndPRelu) {
  using kiln_ref::Clip;
  using kiln_ref::ClipBounds;
  EXPECT_EQ((Clip<float>{-1, 1}(-2.f)), -1.f);
  EXPECT_EQ((Clip<float>{-1, 1}(0.5f)), 0.5f);
  EXPECT_EQ((Clip<float>{-1, 1}(2.f)), 1.f);
  EXPECT_EQ((Clip<float>{2, 1}(0.f)), 1.f);  // min > max gives max (numpy.clip)
  EXPECT_EQ((Clip<float>{2, 1}(5.f)), 1.f);
  EXPECT_TRUE(std::isnan(Clip<float>{-1, 1}(kNaNf)));
  EXPECT_EQ((Clip<float>{ClipBounds<float>::lowest(), 0}(-kInf)), -kInf);
  EXPECT_EQ((Clip<int8_t>{ClipBounds<int8_t>::lowest(), 5}(int8_t(-128))), -128);
  EXPECT_EQ((Clip<int8_t>{ClipBounds<int8_t>::lowest(), 5}(int8_t(100))), 5);
  EXPECT_EQ((Clip<uint64_t>{3, ClipBounds<uint64_t>::highest()}(uint64_t(1))), 3u);

  // PRelu with a per-channel slope [3, 1, 1] broadcast over x [2, 3, 2, 2].
  std::mt19937 g(2);
  auto x = randomVec(g, 24);
  std::vector<float> slope = {0.1f, -0.5f, 2.f}, y(24);
  const int64_t dims[] = {2, 3, 4}, xs[] = {12, 4, 1}, ss[] = {0, 1, 0};
  kiln_ref::binary(3, dims, xs, ss, x.data(), slope.data(), y.data(), kiln_ref::PRelu{});
  for (int i = 0; i < 24; ++i) {
    const float s = slope[size_t((i / 4) % 3)];
    EXPECT_EQ(y[size_t(i)], x[size_t(i)] < 0 ? s * x[size_t(i)] : x[size_t(i)]) << i;
  }
  EXPECT_EQ(kiln_ref::PRelu{}(int32_t(-4), int32_t(3)), -12);
  EXPECT_EQ(kiln_ref::PRelu{}(uint32_t(4), uint32_t(3)), 4u);
}

// ============================== softmax ==============================

TEST(KernelsNnSoftmax, OnnxExamples) {
  std::vector<float> x = {-1, 0, 1}, y(3);
  kiln_ref::softmax(1, 3, 1, x.data(), y.data());
  expectClose(y, std::vector<double>{0.09003057, 0.24472847, 0.66524096}, 1e-6);
  kiln_ref::log_softmax(1, 3, 1, x.data(), y.data());
  expectClose(y, std::vector<double>{-2.40760596, -1.40760596, -0.40760596}, 1e-6);
  // test_softmax_axis_1 style: huge values stay finite because the max is subtracted.
  std::vector<float> big = {0, 1, 2, 3, 10000, 10001, 10002, 10003}, out(8);
  kiln_ref::softmax(2, 4, 1, big.data(), out.data());
  const std::vector<double> row = {0.032058604, 0.087144318, 0.236882818, 0.643914260};
  std::vector<double> want(row);
  want.insert(want.end(), row.begin(), row.end());
  expectClose(out, want, 1e-6);
  // In place.
  kiln_ref::softmax(2, 4, 1, big.data(), big.data());
  expectClose(big, want, 1e-6);
}

TEST(KernelsNnSoftmax, RandomAxesMatchNaive) {
  std::mt19937 g(3);
  for (Dims shape : {Dims{3, 4, 5}, Dims{1, 7, 1}, Dims{2, 1, 3}, Dims{5, 13, 2}}) {
    auto x = randomVec<double>(g, product(shape), -20, 20);
    for (int axis = 0; axis < 3; ++axis) {
      int64_t outer = 1, inner = 1, n = shape[size_t(axis)];
      for (int d = 0; d < axis; ++d) outer *= shape[size_t(d)];
      for (int d = axis + 1; d < 3; ++d) inner *= shape[size_t(d)];
      std::vector<double> sm(x.size()), lsm(x.size()), wsm(x.size()), wlsm(x.size());
      kiln_ref::softmax(outer, n, inner, x.data(), sm.data());
      kiln_ref::log_softmax(outer, n, inner, x.data(), lsm.data());
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < inner; ++j) {
          auto at = [&](int64_t a) { return size_t((o * n + a) * inner + j); };
          double sum = 0;
          for (int64_t a = 0; a < n; ++a) sum += std::exp(x[at(a)]);
          for (int64_t a = 0; a < n; ++a) {
            wsm[at(a)] = std::exp(x[at(a)]) / sum;
            wlsm[at(a)] = x[at(a)] - std::log(sum);
          }
        }
      expectClose(sm, wsm, 1e-12, "softmax");
      expectClose(lsm, wlsm, 1e-12, "log_softmax");
    }
  }
}

TEST(KernelsNnSoftmax, HardmaxTiesAndNaN) {
  std::vector<float> x = {3, 0, 1, 2, 2, 5, 1, 0, 0, 1, 3, 2, 0, 1, 2, 3}, y(16);
  kiln_ref::hardmax(4, 4, 1, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  std::vector<float> ties = {3, 3, 3, 1}, t(4);
  kiln_ref::hardmax(1, 4, 1, ties.data(), t.data());
  EXPECT_EQ(t, (std::vector<float>{1, 0, 0, 0}));
  // Along axis 0 of [2, 3]: column-wise.
  std::vector<float> cols = {1, 5, 2, 4, 5, kNaNf}, c(6);
  kiln_ref::hardmax(1, 2, 3, cols.data(), c.data());
  EXPECT_EQ(c, (std::vector<float>{0, 1, 0, 1, 0, 1}));  // tie -> first; NaN is the max
  std::vector<float> nan = {1, kNaNf, 2}, s(3);
  kiln_ref::softmax(1, 3, 1, nan.data(), s.data());
  EXPECT_TRUE(std::isnan(s[0]) && std::isnan(s[2]));
}

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

// ============================== convolution ==============================

/// A convolution problem; spatial rank 1..3. out is derived with the floor rule.
struct ConvCase {
  int64_t N, C, M, group;
  Dims in, kernel, strides, dilations, pads;  // pads: begins then ends
  bool bias;
  Dims out() const {
    Dims o;
    const size_t r = in.size();
    for (size_t d = 0; d < r; ++d)
      o.push_back(windowOut(in[d], kernel[d], strides[d], dilations[d], pads[d], pads[r + d]));
    return o;
  }
};

/// Pads a spatial list to 3 entries (leading `fill`), so naive loops can always be 3-D.
Dims lift3(const Dims& v, int64_t fill, size_t offset = 0, size_t rank = 0) {
  if (rank == 0) rank = v.size();
  Dims r(3 - rank, fill);
  for (size_t d = 0; d < rank; ++d) r.push_back(v[offset + d]);
  return r;
}

/// The textbook definition: copy x into an explicitly zero-padded buffer, then for every
/// output element sum the dilated window (7+ nested loops), in double.
std::vector<double> naiveConv(const ConvCase& p, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& b) {
  const size_t r = p.in.size();
  Dims I = lift3(p.in, 1), K = lift3(p.kernel, 1), S = lift3(p.strides, 1),
       D = lift3(p.dilations, 1), PB = lift3(p.pads, 0, 0, r), PE = lift3(p.pads, 0, r, r),
       O = lift3(p.out(), 1);
  Dims P = {I[0] + PB[0] + PE[0], I[1] + PB[1] + PE[1], I[2] + PB[2] + PE[2]};
  std::vector<double> padded(size_t(p.N * p.C * P[0] * P[1] * P[2]), 0.0);
  for (int64_t nc = 0; nc < p.N * p.C; ++nc)
    for (int64_t i0 = 0; i0 < I[0]; ++i0)
      for (int64_t i1 = 0; i1 < I[1]; ++i1)
        for (int64_t i2 = 0; i2 < I[2]; ++i2)
          padded[size_t(((nc * P[0] + i0 + PB[0]) * P[1] + i1 + PB[1]) * P[2] + i2 + PB[2])] =
              x[size_t(((nc * I[0] + i0) * I[1] + i1) * I[2] + i2)];
  const int64_t cg = p.C / p.group, mg = p.M / p.group;
  std::vector<double> y;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t o0 = 0; o0 < O[0]; ++o0)
        for (int64_t o1 = 0; o1 < O[1]; ++o1)
          for (int64_t o2 = 0; o2 < O[2]; ++o2) {
            double acc = p.bias ? b[size_t(m)] : 0.0;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t k0 = 0; k0 < K[0]; ++k0)
                for (int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                    const int64_t ic = (m / mg) * cg + c;
                    const int64_t p0 = o0 * S[0] + k0 * D[0], p1 = o1 * S[1] + k1 * D[1],
                                  p2 = o2 * S[2] + k2 * D[2];
                    acc += padded[size_t((((n * p.C + ic) * P[0] + p0) * P[1] + p1) * P[2] + p2)] *
                           w[size_t((((m * cg + c) * K[0] + k0) * K[1] + k1) * K[2] + k2)];
                  }
            y.push_back(acc);
          }
  return y;
}

void checkConv(const ConvCase& p, std::mt19937& g) {
  const Dims out = p.out();
  auto x = randomVec(g, p.N * p.C * product(p.in));
  auto w = randomVec(g, p.M * (p.C / p.group) * product(p.kernel));
  auto b = randomVec(g, p.M);
  std::vector<float> y(size_t(p.N * p.M * product(out)), -999.f);
  kiln_ref::conv(int(p.in.size()), p.N, p.C, p.in.data(), p.M, p.kernel.data(), out.data(),
                 p.strides.data(), p.dilations.data(), p.pads.data(), p.group, x.data(), w.data(),
                 p.bias ? b.data() : nullptr, y.data());
  std::string what = "conv in=" + std::to_string(p.in[0]) + " k=" + std::to_string(p.kernel[0]) +
                     " s=" + std::to_string(p.strides[0]) + " g=" + std::to_string(p.group);
  expectClose(y, naiveConv(p, x, w, b), 1e-5, what);
}

TEST(KernelsNnConv, OnnxExamples) {
  std::vector<float> x(35), w(9, 1.f);
  for (int i = 0; i < 35; ++i) x[size_t(i)] = float(i);
  const Dims in = {5, 5}, k = {3, 3}, one = {1, 1}, two = {2, 2};
  auto run = [&](const Dims& inD, const Dims& s, const Dims& pads) {
    Dims out = {windowOut(inD[0], 3, s[0], 1, pads[0], pads[2]),
                windowOut(inD[1], 3, s[1], 1, pads[1], pads[3])};
    std::vector<float> y(size_t(product(out)));
    kiln_ref::conv(2, 1, 1, inD.data(), 1, k.data(), out.data(), s.data(), one.data(), pads.data(),
                   1, x.data(), w.data(), static_cast<const float*>(nullptr), y.data());
    return y;
  };
  EXPECT_EQ(run(in, one, {1, 1, 1, 1}),
            (std::vector<float>{12,  21, 27, 33,  24,  33,  54,  63, 72,  51,  63,  99, 108,
                                117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84}));
  EXPECT_EQ(run(in, one, {0, 0, 0, 0}),
            (std::vector<float>{54, 63, 72, 99, 108, 117, 144, 153, 162}));
  const Dims in75 = {7, 5};
  EXPECT_EQ(run(in75, two, {1, 1, 1, 1}),
            (std::vector<float>{12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124}));
  EXPECT_EQ(run(in75, two, {0, 0, 0, 0}), (std::vector<float>{54, 72, 144, 162, 234, 252}));
  EXPECT_EQ(run(in75, two, {1, 0, 1, 0}),
            (std::vector<float>{21, 33, 99, 117, 189, 207, 171, 183}));
  // auto_pad SAME_LOWER, stride 2 on 5x5: total pad 2 -> begin 1, end 1.
  EXPECT_EQ(run(in, two, {1, 1, 1, 1}), (std::vector<float>{12, 27, 24, 63, 108, 81, 72, 117, 84}));
}

TEST(KernelsNnConv, RandomMatchesNaive) {
  std::mt19937 g(12);
  const std::vector<ConvCase> cases = {
      // 2-D basics: bias, padding, stride, dilation, asymmetric pads.
      {2, 3, 4, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {1, 2, 3, 1, {11, 13}, {3, 2}, {2, 3}, {1, 1}, {0, 1, 2, 0}, false},
      {1, 3, 2, 1, {9, 9}, {3, 3}, {1, 1}, {2, 3}, {2, 1, 0, 3}, true},
      // Stride larger than the kernel, kernel larger than the input (with padding).
      {1, 2, 2, 1, {10, 7}, {2, 1}, {3, 4}, {1, 1}, {0, 0, 0, 0}, true},
      {1, 1, 2, 1, {3, 2}, {5, 4}, {1, 1}, {1, 1}, {2, 2, 2, 2}, true},
      {2, 2, 3, 1, {2, 3}, {4, 5}, {2, 1}, {1, 1}, {3, 1, 2, 4}, false},
      // Size-1 and prime extents.
      {1, 1, 1, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true},
      {3, 5, 7, 1, {13, 1}, {5, 1}, {1, 1}, {1, 1}, {2, 0, 2, 0}, true},
      // 1-D and 3-D.
      {2, 3, 5, 1, {17}, {4}, {3}, {2}, {3, 1}, true},
      {1, 1, 1, 1, {5}, {7}, {1}, {1}, {3, 3}, false},
      {1, 2, 3, 1, {5, 4, 6}, {3, 2, 3}, {1, 2, 1}, {1, 1, 2}, {1, 0, 2, 1, 1, 0}, true},
      {2, 2, 2, 2, {3, 5, 4}, {2, 3, 1}, {2, 1, 3}, {2, 1, 1}, {1, 1, 0, 0, 1, 2}, false},
      // Groups and depthwise (group = C), with channel multiplier 2.
      {2, 6, 4, 2, {8, 7}, {3, 3}, {1, 2}, {1, 1}, {1, 1, 1, 1}, true},
      {1, 6, 6, 3, {5, 5}, {2, 2}, {1, 1}, {2, 2}, {0, 1, 1, 0}, true},
      {2, 4, 4, 4, {6, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true},
      {1, 3, 6, 3, {7, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true},
      {1, 5, 5, 5, {11}, {5}, {2}, {3}, {6, 6}, false},
  };
  for (const ConvCase& c : cases) checkConv(c, g);
}

TEST(KernelsNnConv, ConvIntegerOnnxExamplesAndZeroPoints) {
  // test_convinteger_without_padding / with_padding: x 2..10 (3x3), x_zero_point 1, w 2x2 ones.
  std::vector<uint8_t> x = {2, 3, 4, 5, 6, 7, 8, 9, 10}, w = {1, 1, 1, 1};
  const Dims in = {3, 3}, k = {2, 2}, one = {1, 1};
  auto run = [&](const Dims& pads) {
    Dims out = {windowOut(3, 2, 1, 1, pads[0], pads[2]), windowOut(3, 2, 1, 1, pads[1], pads[3])};
    std::vector<int32_t> y(size_t(product(out)));
    kiln_ref::conv_integer(2, 1, 1, in.data(), 1, k.data(), out.data(), one.data(), one.data(),
                           pads.data(), 1, x.data(), uint8_t(1), w.data(),
                           static_cast<const uint8_t*>(nullptr), 0, y.data());
    return y;
  };
  EXPECT_EQ(run({0, 0, 0, 0}), (std::vector<int32_t>{12, 16, 24, 28}));
  EXPECT_EQ(run({1, 1, 1, 1}),
            (std::vector<int32_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
  // Random int8 x uint8 with per-channel weight zero points, groups and padding, vs naiveConv
  // on the zero-point-shifted values (exact in double).
  std::mt19937 g(13);
  ConvCase p{2, 4, 6, 2, {6, 5}, {3, 2}, {2, 1}, {1, 2}, {1, 0, 2, 1}, false};
  const Dims out = p.out();
  auto xi = randomInts(g, p.N * p.C * product(p.in), -128, 127);
  auto wi = randomInts(g, p.M * 2 * product(p.kernel), 0, 255);
  auto wzi = randomInts(g, p.M, 0, 255);
  const int8_t xz = -3;
  std::vector<int8_t> x8(xi.begin(), xi.end());
  std::vector<uint8_t> w8(wi.begin(), wi.end()), wz(wzi.begin(), wzi.end());
  std::vector<float> xs, ws;
  for (int32_t v : xi) xs.push_back(float(v - xz));
  for (size_t i = 0; i < wi.size(); ++i) ws.push_back(float(wi[i] - wzi[i / size_t(2 * 6)]));
  std::vector<int32_t> y(size_t(p.N * p.M * product(out)));
  kiln_ref::conv_integer(2, p.N, p.C, p.in.data(), p.M, p.kernel.data(), out.data(),
                         p.strides.data(), p.dilations.data(), p.pads.data(), p.group, x8.data(),
                         xz, w8.data(), wz.data(), 1, y.data());
  expectClose(y, naiveConv(p, xs, ws, {}), 0);
}

/// ConvTranspose by gathering: y[o] = sum over (c, k) with o = i * s + k * d - pad_begin.
std::vector<double> naiveConvTranspose(const ConvCase& p, const Dims& out,
                                       const std::vector<float>& x, const std::vector<float>& w,
                                       const std::vector<float>& b) {
  const size_t r = p.in.size();
  Dims I = lift3(p.in, 1), K = lift3(p.kernel, 1), S = lift3(p.strides, 1),
       D = lift3(p.dilations, 1), PB = lift3(p.pads, 0, 0, r), O = lift3(out, 1);
  const int64_t cg = p.C / p.group, mg = p.M / p.group;
  std::vector<double> y;
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t o0 = 0; o0 < O[0]; ++o0)
        for (int64_t o1 = 0; o1 < O[1]; ++o1)
          for (int64_t o2 = 0; o2 < O[2]; ++o2) {
            double acc = p.bias ? b[size_t(m)] : 0.0;
            const int64_t o[3] = {o0, o1, o2};
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t k0 = 0; k0 < K[0]; ++k0)
                for (int64_t k1 = 0; k1 < K[1]; ++k1)
                  for (int64_t k2 = 0; k2 < K[2]; ++k2) {
                    const int64_t kk[3] = {k0, k1, k2};
                    int64_t i[3];
                    bool hit = true;
                    for (int d = 0; d < 3; ++d) {
                      const int64_t t = o[d] + PB[size_t(d)] - kk[d] * D[size_t(d)];
                      i[d] = t / S[size_t(d)];
                      hit = hit && t >= 0 && t % S[size_t(d)] == 0 && i[d] < I[size_t(d)];
                    }
                    if (!hit) continue;
                    const int64_t ic = (m / mg) * cg + c;
                    acc += double(x[size_t((((n * p.C + ic) * I[0] + i[0]) * I[1] + i[1]) * I[2] +
                                           i[2])]) *
                           w[size_t(((((ic * mg) + m % mg) * K[0] + k0) * K[1] + k1) * K[2] + k2)];
                  }
            y.push_back(acc);
          }
  return y;
}

TEST(KernelsNnConv, ConvTransposeOnnxExamples) {
  std::vector<float> x = {0, 1, 2, 3, 4, 5, 6, 7, 8}, w(18, 1.f);
  const Dims in = {3, 3}, k = {3, 3}, one = {1, 1};
  auto run = [&](const Dims& out, const Dims& s, const Dims& d, const Dims& pads, const Dims& kk,
                 const std::vector<float>& ww, int64_t M) {
    std::vector<float> y(size_t(M * product(out)));
    kiln_ref::conv_transpose(2, 1, 1, in.data(), M, kk.data(), out.data(), s.data(), d.data(),
                             pads.data(), 1, x.data(), ww.data(),
                             static_cast<const float*>(nullptr), y.data());
    return std::vector<float>(y.begin(), y.begin() + product(out));  // first output channel
  };
  EXPECT_EQ(run({5, 5}, one, one, {0, 0, 0, 0}, k, w, 2),
            (std::vector<float>{0,  1,  3, 3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                27, 15, 9, 20, 33, 24, 13, 6,  13, 21, 15, 8}));
  // test_convtranspose_pads: strides [3, 2], pads [1, 2, 1, 2] -> [7, 3].
  EXPECT_EQ(
      run({7, 3}, {3, 2}, one, {1, 2, 1, 2}, k, w, 2),
      (std::vector<float>{1, 1, 3, 1, 1, 3, 7, 4, 9, 7, 4, 9, 7, 4, 9, 13, 7, 15, 13, 7, 15}));
  // test_convtranspose_autopad_same: SAME_UPPER, strides 2 -> [6, 6], begin pads 0.
  EXPECT_EQ(run({6, 6}, {2, 2}, one, {0, 0, 1, 1}, k, w, 2),
            (std::vector<float>{0, 0, 1, 1, 3, 2, 0, 0, 1,  1,  3,  2,  3, 3, 8,  5, 12, 7,
                                3, 3, 7, 4, 9, 5, 9, 9, 20, 11, 24, 13, 6, 6, 13, 7, 15, 8}));
  // test_convtranspose_output_shape / kernel_shape: [10, 8] with strides 3, 2 (output_padding).
  auto y = run({10, 8}, {3, 2}, one, {0, 0, 0, 0}, k, w, 2);
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 8),
            (std::vector<float>{0, 0, 1, 1, 3, 2, 2, 0}));
  EXPECT_EQ(std::vector<float>(y.end() - 8, y.end()), std::vector<float>(8, 0.f));
  // test_convtranspose_dilations.
  x = {3, 8, 1, 9, 5, 7, 3, 2, 6};
  EXPECT_EQ(run({5, 5}, one, {2, 2}, {0, 0, 0, 0}, {2, 2}, {7, 2, 1, 9}, 1),
            (std::vector<float>{21, 56, 13, 16, 2,  63, 35, 67, 10, 14, 24, 22, 76,
                                76, 21, 9,  5,  88, 45, 63, 3,  2,  33, 18, 54}));
}

TEST(KernelsNnConv, ConvTransposeRandomMatchesNaive) {
  std::mt19937 g(14);
  struct TCase {
    ConvCase p;
    Dims outputPadding;
  };
  const std::vector<TCase> cases = {
      {{1, 2, 3, 1, {4, 5}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true}, {0, 0}},
      {{2, 3, 2, 1, {3, 4}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 1, 1}, false}, {1, 2}},
      {{1, 2, 2, 1, {5, 3}, {2, 3}, {3, 1}, {2, 2}, {0, 2, 1, 0}, true}, {2, 0}},
      {{1, 4, 6, 2, {4, 4}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true}, {1, 1}},
      {{2, 3, 3, 3, {5}, {4}, {3}, {1}, {2, 1}, true}, {0}},  // depthwise 1-D
      {{1, 1, 1, 1, {1}, {1}, {1}, {1}, {0, 0}, false}, {0}},
      {{1, 2, 2, 1, {2, 3, 2}, {2, 2, 3}, {2, 1, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}, true},
       {1, 0, 1}},
      {{1, 1, 2, 1, {2, 2}, {5, 5}, {4, 4}, {1, 1}, {0, 0, 0, 0}, false}, {3, 3}},  // stride > k
  };
  for (const TCase& t : cases) {
    const ConvCase& p = t.p;
    const size_t r = p.in.size();
    Dims out;
    for (size_t d = 0; d < r; ++d)
      out.push_back(p.strides[d] * (p.in[d] - 1) + t.outputPadding[d] +
                    (p.kernel[d] - 1) * p.dilations[d] + 1 - p.pads[d] - p.pads[r + d]);
    auto x = randomVec(g, p.N * p.C * product(p.in));
    auto w = randomVec(g, p.C * (p.M / p.group) * product(p.kernel));
    auto b = randomVec(g, p.M);
    std::vector<float> y(size_t(p.N * p.M * product(out)), -999.f);
    kiln_ref::conv_transpose(int(r), p.N, p.C, p.in.data(), p.M, p.kernel.data(), out.data(),
                             p.strides.data(), p.dilations.data(), p.pads.data(), p.group, x.data(),
                             w.data(), p.bias ? b.data() : nullptr, y.data());
    expectClose(y, naiveConvTranspose(p, out, x, w, b), 1e-5, "rank " + std::to_string(r));
  }
}

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

// ============================== gemm / matmul ==============================

TEST(KernelsNnGemm, AllTransposesAndBroadcasts) {
  std::mt19937 g(17);
  struct Shape {
    int64_t M, N, K;
  };
  for (Shape sh :
       {Shape{3, 5, 4}, Shape{1, 1, 1}, Shape{7, 2, 13}, Shape{4, 6, 1}, Shape{2, 3, 0}}) {
    const int64_t M = sh.M, N = sh.N, K = sh.K;
    auto a = randomVec(g, M * K), b = randomVec(g, K * N), cFull = randomVec(g, M * N);
    struct CForm {
      int64_t sm, sn;
    };
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (CForm cf : {CForm{N, 1}, CForm{0, 1}, CForm{1, 0}, CForm{0, 0}}) {
          for (float alpha : {1.f, 0.5f}) {
            for (float beta : {1.f, -2.f, 0.f}) {
              std::vector<float> y(size_t(M * N));
              kiln_ref::gemm(M, N, K, ta, tb, alpha, a.data(), b.data(), beta, cFull.data(), cf.sm,
                             cf.sn, y.data());
              std::vector<double> want;
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j) {
                  double acc = 0;
                  for (int64_t k = 0; k < K; ++k)
                    acc += double(ta ? a[size_t(k * M + i)] : a[size_t(i * K + k)]) *
                           (tb ? b[size_t(j * K + k)] : b[size_t(k * N + j)]);
                  want.push_back(alpha * acc + beta * cFull[size_t(i * cf.sm + j * cf.sn)]);
                }
              expectClose(y, want, 1e-6, "gemm");
            }
          }
        }
    std::vector<float> y(size_t(M * N));  // no C
    kiln_ref::gemm(M, N, K, false, false, 2.f, a.data(), b.data(), 1.f,
                   static_cast<const float*>(nullptr), 0, 0, y.data());
    std::vector<double> want;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(a[size_t(i * K + k)]) * b[size_t(k * N + j)];
        want.push_back(2 * acc);
      }
    expectClose(y, want, 1e-6, "gemm without C");
  }
  // Integer Gemm: exact with alpha = beta = 1, wraps on overflow.
  std::vector<int32_t> a = {1, 2, 3, 4}, b = {5, 6, 7, 8}, c = {100, 200}, y(4);
  kiln_ref::gemm(2, 2, 2, false, false, 1.f, a.data(), b.data(), 1.f, c.data(), 0, 1, y.data());
  EXPECT_EQ(y, (std::vector<int32_t>{119, 222, 143, 250}));
  std::vector<int32_t> big = {std::numeric_limits<int32_t>::max()}, two = {2}, yb(1);
  kiln_ref::gemm(1, 1, 1, false, false, 1.f, big.data(), two.data(), 0.f,
                 static_cast<const int32_t*>(nullptr), 0, 0, yb.data());
  EXPECT_EQ(yb[0], -2);
}

TEST(KernelsNnGemm, BatchedMatMulBroadcasting) {
  std::mt19937 g(18);
  // a [2, 1, 3, 4] @ b [3, 4, 5] -> [2, 3, 3, 5]; a broadcasts over dim 1, b over dim 0.
  const int64_t M = 3, K = 4, N = 5;
  auto a = randomVec(g, 2 * M * K), b = randomVec(g, 3 * K * N);
  const Dims batch = {2, 3}, as = {M * K, 0}, bs = {0, K * N};
  std::vector<float> y(size_t(6 * M * N));
  kiln_ref::matmul(2, batch.data(), as.data(), bs.data(), M, N, K, a.data(), b.data(), y.data());
  std::vector<double> want;
  for (int64_t b0 = 0; b0 < 2; ++b0)
    for (int64_t b1 = 0; b1 < 3; ++b1)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double acc = 0;
          for (int64_t k = 0; k < K; ++k)
            acc += double(a[size_t(b0 * M * K + i * K + k)]) * b[size_t(b1 * K * N + k * N + j)];
          want.push_back(acc);
        }
  expectClose(y, want, 1e-6, "batched");
  // Plain 2-D and 1-D operands (vector @ matrix: M = 1; matrix @ vector: N = 1).
  std::vector<float> v = {1, 2, 3, 4}, m = {1, 0, 0, 1, 1, 1, 2, 2}, out(2);
  kiln_ref::matmul(0, nullptr, nullptr, nullptr, 1, 2, 4, v.data(), m.data(), out.data());
  EXPECT_EQ(out, (std::vector<float>{1 + 3 + 8, 2 + 3 + 8}));
  std::vector<float> mt = {1, 0, 1, 2, 0, 1, 1, 2}, out2(2);
  kiln_ref::matmul(0, nullptr, nullptr, nullptr, 2, 1, 4, mt.data(), v.data(), out2.data());
  EXPECT_EQ(out2, (std::vector<float>{1 + 3 + 8, 2 + 3 + 8}));
  // Integer MatMul.
  std::vector<int64_t> ai = {1, -2, 3, 4}, bi = {5, 6, 7, 8}, yi(4);
  kiln_ref::matmul(0, nullptr, nullptr, nullptr, 2, 2, 2, ai.data(), bi.data(), yi.data());
  EXPECT_EQ(yi, (std::vector<int64_t>{-9, -10, 43, 50}));
}

TEST(KernelsNnGemm, MatMulIntegerAndQLinearMatMul) {
  // test_matmulinteger.
  std::vector<uint8_t> A = {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0}, B = {1, 4, 2, 5, 3, 6};
  const uint8_t az = 12, bz = 0;
  std::vector<int32_t> Y(8);
  kiln_ref::matmul_integer(0, nullptr, nullptr, nullptr, 4, 2, 3, A.data(), &az, 0, B.data(), &bz,
                           0, Y.data());
  EXPECT_EQ(Y, (std::vector<int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
  // Per-row a / per-column b zero points, int8 x uint8, batched, vs naive.
  std::mt19937 g(19);
  const int64_t M = 3, N = 4, K = 5;
  auto ai = randomInts(g, 2 * M * K, -128, 127), bi = randomInts(g, K * N, 0, 255);
  auto azi = randomInts(g, M, -128, 127), bzi = randomInts(g, N, 0, 255);
  std::vector<int8_t> a8(ai.begin(), ai.end()), az8(azi.begin(), azi.end());
  std::vector<uint8_t> b8(bi.begin(), bi.end()), bz8(bzi.begin(), bzi.end());
  const Dims batch = {2}, as = {M * K}, bs = {0};
  std::vector<int32_t> y(size_t(2 * M * N)), want;
  kiln_ref::matmul_integer(1, batch.data(), as.data(), bs.data(), M, N, K, a8.data(), az8.data(), 1,
                           b8.data(), bz8.data(), 1, y.data());
  for (int64_t bt = 0; bt < 2; ++bt)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += int64_t(ai[size_t(bt * M * K + i * K + k)] - azi[size_t(i)]) *
                 (bi[size_t(k * N + j)] - bzi[size_t(j)]);
        want.push_back(int32_t(acc));
      }
  EXPECT_EQ(y, want);
  // test_qlinearmatmul_2D and _3D.
  std::vector<uint8_t> qa = {208, 236, 0, 238, 3, 214, 255, 29},
                       qb = {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247};
  const float bScale = 0.00705f;
  const uint8_t bZero = 114;
  std::vector<uint8_t> qy(6);
  kiln_ref::qlinear_matmul(0, nullptr, nullptr, nullptr, 2, 3, 4, qa.data(), 0.0066f, uint8_t(113),
                           qb.data(), &bScale, &bZero, 0, 0.0107f, uint8_t(118), qy.data());
  EXPECT_EQ(qy, (std::vector<uint8_t>{168, 115, 255, 1, 66, 151}));
  std::vector<uint8_t> qa3(qa), qb3(qb), qy3(12);
  qa3.insert(qa3.end(), qa.begin(), qa.end());
  qb3.insert(qb3.end(), qb.begin(), qb.end());
  const Dims b3 = {2}, as3 = {8}, bs3 = {12};
  kiln_ref::qlinear_matmul(1, b3.data(), as3.data(), bs3.data(), 2, 3, 4, qa3.data(), 0.0066f,
                           uint8_t(113), qb3.data(), &bScale, &bZero, 0, 0.0107f, uint8_t(118),
                           qy3.data());
  EXPECT_EQ(qy3, (std::vector<uint8_t>{168, 115, 255, 1, 66, 151, 168, 115, 255, 1, 66, 151}));
  // Requantization rounds half to even and saturates.
  EXPECT_EQ(kiln_ref::requantize<int8_t>(5, 0.5f, int8_t(0)), 2);
  EXPECT_EQ(kiln_ref::requantize<int8_t>(7, 0.5f, int8_t(0)), 4);
  EXPECT_EQ(kiln_ref::requantize<int8_t>(-1000, 1.f, int8_t(3)), -128);
  EXPECT_EQ(kiln_ref::requantize<uint8_t>(1000, 1.f, uint8_t(3)), 255);
}

}  // namespace
