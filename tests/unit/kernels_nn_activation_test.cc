// Tests of the reference activation and softmax kernels (kernels/ref: activation, elementwise,
// softmax): hand-checked cases (many from ONNX's node tests) and random inputs against naive,
// independently written formulations computed in double.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels_nn_test_util.h"
#include "ref/activation.h"
#include "ref/elementwise.h"
#include "ref/softmax.h"

namespace {

using namespace kernels_test;

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

}  // namespace
