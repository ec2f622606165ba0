// Tests of the reference convolution kernels (kernels/ref/conv.h: Conv, ConvInteger,
// ConvTranspose): hand-checked cases (many from ONNX's node tests) and random inputs against
// naive, independently written formulations computed in double.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels_nn_test_util.h"
#include "ref/conv.h"

namespace {

using namespace kernels_test;

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

}  // namespace
