// Tests of the reference kernels for the training optimizers, Det, DFT/STFT/MelWeightMatrix,
// TfIdfVectorizer, training-mode BatchNormalization and f16 Max/Min/Mod: hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ref/common.h"
#include "ref/elementwise.h"
#include "ref/linalg.h"
#include "ref/norm.h"
#include "ref/pool.h"
#include "ref/signal.h"
#include "ref/text.h"
#include "ref/training.h"

namespace {

constexpr double kTol = 1e-6;

// ---- optimizers ----

TEST(TrainingKernels, AdagradFollowsTheSpec) {
  // r = 0.1 / (1 + 2 * 0.5) = 0.05; g = 0.1 * 2 + 1 = 1.2; h = 1 + 1.44 = 2.44;
  // x = 2 - 0.05 * 1.2 / (sqrt(2.44) + 0.01).
  const float R = 0.1f, X = 2, G = 1, H = 1;
  const int64_t T = 2;
  float x = 0, h = 0;
  kiln_ref::adagrad<float>(1, &R, &T, &X, &G, &H, 0.5, 0.01, 0.1, &x, &h);
  EXPECT_NEAR(h, 2.44, 1e-6);
  EXPECT_NEAR(x, 2 - 0.05 * 1.2 / (std::sqrt(2.44) + 0.01), 1e-6);
}

TEST(TrainingKernels, MomentumStandardNesterovAndFirstStep) {
  const double R = 0.5, X[2] = {1, -1}, G[2] = {2, 4}, V[2] = {1, 1};
  double x[2], v[2];
  int64_t T = 3;
  // g = 0.5 * X + G = {2.5, 3.5}; v = 0.9 * 1 + 0.1 * g = {1.15, 1.25}; x = X - 0.5 * v.
  kiln_ref::momentum<double>(2, &R, &T, X, G, V, 0.9, 0.1, 0.5, false, x, v);
  EXPECT_NEAR(v[0], 1.15, kTol);
  EXPECT_NEAR(v[1], 1.25, kTol);
  EXPECT_NEAR(x[0], 1 - 0.575, kTol);
  EXPECT_NEAR(x[1], -1 - 0.625, kTol);
  // Nesterov: x = X - R * (g + alpha * v).
  kiln_ref::momentum<double>(2, &R, &T, X, G, V, 0.9, 0.1, 0.5, true, x, v);
  EXPECT_NEAR(x[0], 1 - 0.5 * (2.5 + 0.9 * 1.15), kTol);
  // T == 0 uses beta 1: v = 0.9 + g.
  T = 0;
  kiln_ref::momentum<double>(2, &R, &T, X, G, V, 0.9, 0.1, 0.5, false, x, v);
  EXPECT_NEAR(v[0], 0.9 + 2.5, kTol);
  EXPECT_NEAR(x[0], 1 - 0.5 * 3.4, kTol);
}

TEST(TrainingKernels, AdamWithAndWithoutBiasCorrection) {
  const double R = 0.1, X = 1, G = 0.5, V = 0.2, H = 0.3;
  double x, v, h;
  int64_t T = 0;
  // g = 0.5 (no norm); v = 0.9 * 0.2 + 0.1 * 0.5 = 0.23; h = 0.99 * 0.3 + 0.01 * 0.25 = 0.2995.
  kiln_ref::adam<double>(1, &R, &T, &X, &G, &V, &H, 0.9, 0.99, 1e-3, 0, 0, &x, &v, &h);
  EXPECT_NEAR(v, 0.23, kTol);
  EXPECT_NEAR(h, 0.2995, kTol);
  EXPECT_NEAR(x, 1 - 0.1 * 0.23 / (std::sqrt(0.2995) + 1e-3), kTol);
  // T = 2: r = 0.1 * sqrt(1 - 0.99^2) / (1 - 0.9^2); norm_coefficient_post scales the result.
  T = 2;
  kiln_ref::adam<double>(1, &R, &T, &X, &G, &V, &H, 0.9, 0.99, 1e-3, 0, 0.5, &x, &v, &h);
  const double r = 0.1 * std::sqrt(1 - 0.9801) / (1 - 0.81);
  EXPECT_NEAR(x, 0.5 * (1 - r * 0.23 / (std::sqrt(0.2995) + 1e-3)), kTol);
}

// ---- Det ----

TEST(LinalgKernels, DetPivotsSingularBatchedAndEmpty) {
  // The first pivot is 0, so a row swap is needed; det = -4.
  const double a[9] = {0, 2, 1, 1, 1, 1, 2, 0, 3};
  double y = 0, scratch[9];
  kiln_ref::det<double>(1, 3, a, &y, scratch);
  EXPECT_NEAR(y, -4, 1e-12);
  // Batched 2x2: det [[1,2],[3,4]] = -2, singular [[1,2],[2,4]] = 0, [[2,0],[0,3]] = 6.
  const float b[12] = {1, 2, 3, 4, 1, 2, 2, 4, 2, 0, 0, 3};
  float yb[3];
  kiln_ref::det<float>(3, 2, b, yb, scratch);
  EXPECT_FLOAT_EQ(yb[0], -2);
  EXPECT_FLOAT_EQ(yb[1], 0);
  EXPECT_FLOAT_EQ(yb[2], 6);
  // 0x0 matrices have determinant 1; NaN propagates.
  float ye[2] = {5, 5};
  kiln_ref::det<float>(2, 0, b, ye, nullptr);
  EXPECT_EQ(ye[0], 1);
  EXPECT_EQ(ye[1], 1);
  const float n[4] = {std::numeric_limits<float>::quiet_NaN(), 1, 2, 3};
  kiln_ref::det<float>(1, 2, n, yb, scratch);
  EXPECT_TRUE(std::isnan(yb[0]));
}

// ---- DFT, STFT, MelWeightMatrix ----

TEST(SignalKernels, DftOfARealSignalAndItsInverse) {
  const float x[4] = {1, 2, 3, 4};  // [outer 1, n 4, inner 1, real]
  float y[8];
  ASSERT_EQ(kiln_ref::dft<float>(1, 4, 1, 1, 4, 4, false, false, x, y), 0);
  const float want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  float back[8];
  ASSERT_EQ(kiln_ref::dft<float>(1, 4, 1, 2, 4, 4, false, true, y, back), 0);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(back[2 * i], x[i], 1e-5);
    EXPECT_NEAR(back[2 * i + 1], 0, 1e-5);
  }
  // Onesided keeps 4 / 2 + 1 = 3 bins.
  float half[6];
  ASSERT_EQ(kiln_ref::dft<float>(1, 4, 1, 1, 4, 3, true, false, x, half), 0);
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(half[i], want[i], 1e-5);
}

TEST(SignalKernels, DftStridesPaddingAndBadSizes) {
  // [n 2, inner 2]: transforms columns {1, 3} and {2, 4} independently.
  const double x[4] = {1, 2, 3, 4};
  double y[8];
  ASSERT_EQ(kiln_ref::dft<double>(1, 2, 2, 1, 2, 2, false, false, x, y), 0);
  const double want[8] = {4, 0, 6, 0, -2, 0, -2, 0};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
  // dft_length 4 zero-pads {1, 2}: X[k] = 1 + 2 e^{-i pi k / 2}.
  const double s[2] = {1, 2};
  double p[8];
  ASSERT_EQ(kiln_ref::dft<double>(1, 2, 1, 1, 4, 4, false, false, s, p), 0);
  const double wantP[8] = {3, 0, 1, -2, -1, 0, 1, 2};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(p[i], wantP[i], 1e-12) << i;
  // The output dim must match the run-time length.
  EXPECT_EQ(kiln_ref::dft<double>(1, 2, 1, 1, 3, 4, false, false, s, p), 1);
  EXPECT_EQ(kiln_ref::dft<double>(1, 2, 1, 1, 0, 1, false, false, s, p), 1);
}

TEST(SignalKernels, StftWithWindowAndChecks) {
  float x[8];
  for (int i = 0; i < 8; ++i) x[i] = float(i);
  const float w[4] = {0.5f, 1, 1, 0.5f};
  float y[3 * 3 * 2];
  // frame_length 4, step 2: 3 frames of 3 one-sided bins.
  ASSERT_EQ(kiln_ref::stft<float>(1, 8, 1, 2, 4, w, 4, 3, 3, true, x, y), 0);
  const float want[18] = {4.5f,  0,     -2, 0.5f,  -0.5f, 0,  10.5f, 0,     -3,
                          -0.5f, -0.5f, 0,  16.5f, 0,     -4, -1.5f, -0.5f, 0};
  for (int i = 0; i < 18; ++i) EXPECT_NEAR(y[i], want[i], 1e-5) << i;
  EXPECT_EQ(kiln_ref::stft<float>(1, 8, 1, 3, 4, w, 4, 3, 3, true, x, y), 1);  // 2 frames
  EXPECT_EQ(kiln_ref::stft<float>(1, 8, 1, 2, 4, w, 5, 3, 3, true, x, y), 1);  // window size
  EXPECT_EQ(kiln_ref::stft<float>(1, 8, 1, 0, 4, w, 4, 3, 3, true, x, y), 1);  // step 0
  EXPECT_EQ(kiln_ref::stft<float>(1, 8, 1, 2, 9, nullptr, 0, 3, 3, true, x, y), 1);
}

TEST(SignalKernels, MelWeightMatrixTriangles) {
  // 2 mel bins, dft_length 64, 8 kHz, 100 Hz .. 4 kHz: points at bins 0, 4, 10 and 18.
  std::vector<float> y(33 * 2, -1.0f);
  ASSERT_EQ(kiln_ref::mel_weight_matrix<float>(2, 64, 8000, 100, 4000, 33, 2, y.data()), 0);
  auto at = [&](int r, int c) { return y[size_t(r * 2 + c)]; };
  EXPECT_FLOAT_EQ(at(0, 0), 0);
  EXPECT_FLOAT_EQ(at(2, 0), 0.5f);
  EXPECT_FLOAT_EQ(at(4, 0), 1);
  EXPECT_FLOAT_EQ(at(7, 0), 0.5f);
  EXPECT_FLOAT_EQ(at(10, 0), 0);
  EXPECT_FLOAT_EQ(at(4, 1), 0);
  EXPECT_FLOAT_EQ(at(7, 1), 0.5f);
  EXPECT_FLOAT_EQ(at(10, 1), 1);
  EXPECT_FLOAT_EQ(at(14, 1), 0.5f);
  EXPECT_FLOAT_EQ(at(18, 1), 0);
  EXPECT_FLOAT_EQ(at(32, 1), 0);
  // Sizes must agree with the static output; a point past the last bin is an error.
  EXPECT_EQ(kiln_ref::mel_weight_matrix<float>(3, 64, 8000, 100, 4000, 33, 2, y.data()), 1);
  EXPECT_EQ(kiln_ref::mel_weight_matrix<float>(2, 64, 8000, 100, 9000, 33, 2, y.data()), 1);
  EXPECT_EQ(kiln_ref::mel_weight_matrix<float>(2, 64, 0, 100, 4000, 33, 2, y.data()), 1);
}

// ---- TfIdfVectorizer ----

TEST(TextKernels, TfIdfCountsSkipGramsPerRow) {
  // ONNX's test_tfidfvectorizer_tf_uniandbigrams_skip5.
  const int32_t x[12] = {1, 1, 3, 3, 3, 7, 8, 6, 7, 5, 6, 8};
  const int64_t pool[10] = {2, 3, 5, 4, 5, 6, 7, 8, 6, 7}, counts[2] = {0, 4},
                indexes[7] = {0, 1, 2, 3, 4, 5, 6};
  float y[7];
  kiln_ref::tfidf_vectorizer(1, 12, x, 1, 2, 5, kiln_ref::kTfIdfTF, pool, 10, counts, 2, indexes,
                             static_cast<const float*>(nullptr), 7, y);
  const float want[7] = {0, 3, 1, 0, 1, 3, 1};
  for (int i = 0; i < 7; ++i) EXPECT_EQ(y[i], want[i]) << i;
  // Two rows of 6: n-grams never cross rows ((3, 7)-(8, 6) is no bigram); only bigrams
  // without skips.
  float yb[14];
  kiln_ref::tfidf_vectorizer(2, 6, x, 2, 2, 0, kiln_ref::kTfIdfTF, pool, 10, counts, 2, indexes,
                             static_cast<const float*>(nullptr), 7, yb);
  const float wantB[14] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1};  // (5,6), (6,7)
  for (int i = 0; i < 14; ++i) EXPECT_EQ(yb[i], wantB[i]) << i;
}

TEST(TextKernels, TfIdfWeightsModesAndIndexMapping) {
  const int64_t x[5] = {4, 4, 9, 4, 9};
  const int64_t pool[4] = {4, 9, 4, 9}, counts[2] = {0, 2}, indexes[3] = {2, 0, 1};
  const float w[3] = {0.5f, 2, 3};
  float y[3];
  // Unigram 4 appears 3 times (column 2), 9 twice (column 0), bigram (4, 9) twice (column 1).
  kiln_ref::tfidf_vectorizer(1, 5, x, 1, 2, 0, kiln_ref::kTfIdfTF, pool, 4, counts, 2, indexes, w,
                             3, y);
  EXPECT_EQ(y[0], 2);
  EXPECT_EQ(y[1], 2);
  EXPECT_EQ(y[2], 3);
  kiln_ref::tfidf_vectorizer(1, 5, x, 1, 2, 0, kiln_ref::kTfIdfIDF, pool, 4, counts, 2, indexes, w,
                             3, y);
  EXPECT_EQ(y[0], 2);
  EXPECT_EQ(y[1], 3);
  EXPECT_EQ(y[2], 0.5f);
  // Only unigrams: the bigram's column stays 0.
  kiln_ref::tfidf_vectorizer(1, 5, x, 1, 1, 0, kiln_ref::kTfIdfTFIDF, pool, 4, counts, 2, indexes,
                             w, 3, y);
  EXPECT_EQ(y[0], 4);
  EXPECT_EQ(y[1], 0);
  EXPECT_EQ(y[2], 1.5f);
}

// ---- BatchNormalization, training mode ----

TEST(NormKernels, BatchNormTrainingUsesBatchStatistics) {
  // x [N 2, C 1, inner 2] = {1, 3, 5, 7}: mean 4, population variance 5.
  const float x[4] = {1, 3, 5, 7}, scale = 2, bias = 1, mean = 10, var = 20;
  float y[4], rm, rv;
  kiln_ref::batch_norm_training<float>(2, 1, 2, x, &scale, &bias, &mean, &var, 0.0f, 0.9f, y, &rm,
                                       &rv);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[i], 2 * (x[i] - 4) / std::sqrt(5.0) + 1, 1e-6);
  EXPECT_NEAR(rm, 10 * 0.9 + 4 * 0.1, 1e-6);
  EXPECT_NEAR(rv, 20 * 0.9 + 5 * 0.1, 1e-5);
  // The running statistics are optional.
  kiln_ref::batch_norm_training<float>(2, 1, 2, x, &scale, &bias, &mean, &var, 0.0f, 0.9f, y,
                                       static_cast<float*>(nullptr), static_cast<float*>(nullptr));
  EXPECT_NEAR(y[0], 2 * (1 - 4) / std::sqrt(5.0) + 1, 1e-6);
}

// ---- MaxPool on int8 / uint8 ----

TEST(PoolKernels, MaxPoolInt8NeverPicksPadding) {
  // 2x2 input, 2x2 window, stride 1, one padding row/column on each side: 3x3 output. Windows
  // that see a single negative value must return it, not the padding.
  const int8_t x[4] = {-5, -3, -7, -128};
  const int64_t in[2] = {2, 2}, k[2] = {2, 2}, out[2] = {3, 3}, st[2] = {1, 1}, dil[2] = {1, 1},
                pads[4] = {1, 1, 1, 1};
  int8_t y[9];
  int64_t idx[9];
  kiln_ref::max_pool<int8_t>(2, 1, in, k, out, st, dil, pads, x, y, idx, 0);
  const int8_t want[9] = {-5, -3, -3, -5, -3, -3, -7, -7, -128};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(y[i], want[i]) << i;
  EXPECT_EQ(idx[8], 3);
  const uint8_t u[4] = {0, 255, 7, 3};
  const int64_t k2[2] = {2, 2}, o1[2] = {1, 1}, s2[2] = {2, 2}, p0[4] = {0, 0, 0, 0};
  uint8_t yu = 0;
  kiln_ref::max_pool<uint8_t>(2, 1, in, k2, o1, s2, dil, p0, u, &yu, nullptr, 0);
  EXPECT_EQ(yu, 255);
}

// ---- f16 Max/Min/Mod ----

TEST(ElementwiseKernels, HalfViaFloatIsExactForMaxMinFmod) {
  auto h = [](float f) { return kiln_ref::float_to_half(f); };
  auto f = [](uint16_t v) { return kiln_ref::half_to_float(v); };
  kiln_ref::HalfVia<kiln_ref::Max> max;
  kiln_ref::HalfVia<kiln_ref::Min> min;
  kiln_ref::HalfVia<kiln_ref::ModTrunc> mod;
  EXPECT_EQ(f(max(h(1.5f), h(-2.0f))), 1.5f);
  EXPECT_EQ(f(min(h(1.5f), h(-2.0f))), -2.0f);
  EXPECT_EQ(f(mod(h(-4.25f), h(3.0f))), -1.25f);  // fmod keeps the dividend's sign
  EXPECT_EQ(f(mod(h(7.0f), h(-2.5f))), 2.0f);
  EXPECT_TRUE(std::isnan(f(max(h(std::numeric_limits<float>::quiet_NaN()), h(1.0f)))));
}

}  // namespace
