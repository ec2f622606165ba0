// Tests of the seeded random kernels (kernels/ref/random.h): determinism, ranges, the moments
// of the distributions, Bernoulli and training-mode Dropout semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "ref/random.h"

namespace {

constexpr int64_t kN = 200000;

TEST(RandomKernels, SameSeedSameNumbersOtherSeedOthers) {
  std::vector<float> a(1000), b(1000), c(1000);
  kiln_ref::random_uniform(1000, 0.0, 1.0, 42, a.data());
  kiln_ref::random_uniform(1000, 0.0, 1.0, 42, b.data());
  kiln_ref::random_uniform(1000, 0.0, 1.0, 43, c.data());
  EXPECT_EQ(a, b);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == c[i];
  EXPECT_LT(same, 5);
}

TEST(RandomKernels, UniformRangeAndMoments) {
  std::vector<double> y(kN);
  kiln_ref::random_uniform(kN, -2.0, 6.0, 7, y.data());
  double sum = 0, sq = 0;
  for (double v : y) {
    ASSERT_GE(v, -2.0);
    ASSERT_LT(v, 6.0);
    sum += v;
    sq += v * v;
  }
  const double mean = sum / kN, var = sq / kN - mean * mean;
  EXPECT_NEAR(mean, 2.0, 0.05);        // (low + high) / 2
  EXPECT_NEAR(var, 64.0 / 12.0, 0.1);  // (high - low)^2 / 12
  for (uint64_t i = 0; i < 1000; ++i) {
    const double u = kiln_ref::random_unit(i, i * 7);
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(RandomKernels, NormalMoments) {
  std::vector<double> y(kN);
  kiln_ref::random_normal(kN, 3.0, 0.5, 11, y.data());
  double sum = 0, sq = 0;
  for (double v : y) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  const double mean = sum / kN, var = sq / kN - mean * mean;
  EXPECT_NEAR(mean, 3.0, 0.01);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.01);
}

TEST(RandomKernels, BernoulliFrequencyAndSaturation) {
  std::vector<float> p(kN, 0.3f);
  p[0] = 0.0f;
  p[1] = 1.0f;
  p[2] = -1.0f;
  p[3] = 2.0f;
  std::vector<int32_t> y(kN);
  kiln_ref::bernoulli(kN, p.data(), 5, y.data());
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 1);
  EXPECT_EQ(y[2], 0);
  EXPECT_EQ(y[3], 1);
  int64_t ones = 0;
  for (int32_t v : y) {
    ASSERT_TRUE(v == 0 || v == 1);
    ones += v;
  }
  EXPECT_NEAR(double(ones) / kN, 0.3, 0.01);
}

TEST(RandomKernels, DropoutTraining) {
  std::vector<float> x(kN), y(kN);
  for (int64_t i = 0; i < kN; ++i) x[size_t(i)] = float(i % 97) - 48.0f;
  std::vector<char> maskStore(kN);
  bool* mask = reinterpret_cast<bool*>(maskStore.data());
  ASSERT_TRUE(kiln_ref::dropout(kN, x.data(), 0.25, true, 9, y.data(), mask));
  int64_t dropped = 0;
  for (int64_t i = 0; i < kN; ++i) {
    const size_t k = size_t(i);
    if (mask[k]) {
      EXPECT_EQ(y[k], float(x[k] * (1.0f / 0.75f))) << i;
    } else {
      EXPECT_EQ(y[k], 0.0f) << i;
      ++dropped;
    }
  }
  EXPECT_NEAR(double(dropped) / kN, 0.25, 0.01);
  // A bad ratio in training mode is reported, not computed.
  EXPECT_FALSE(kiln_ref::dropout(4, x.data(), 1.0, true, 9, y.data(), mask));
  EXPECT_FALSE(kiln_ref::dropout(4, x.data(), -0.5, true, 9, y.data(), mask));
}

TEST(RandomKernels, DropoutInferenceOrZeroRatioIsIdentity) {
  std::vector<float> x{1.5f, -2.0f, 0.0f, 7.0f}, y(4);
  std::vector<char> maskStore(4, 0);
  bool* mask = reinterpret_cast<bool*>(maskStore.data());
  for (auto [ratio, training] : {std::pair{0.5, false}, std::pair{0.0, true}}) {
    ASSERT_TRUE(kiln_ref::dropout(4, x.data(), ratio, training, 1, y.data(), mask));
    EXPECT_EQ(y, x);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(mask[i]);
  }
  ASSERT_TRUE(kiln_ref::dropout(4, x.data(), 0.5, false, 1, y.data(), nullptr));
  EXPECT_EQ(y, x);
}

}  // namespace
