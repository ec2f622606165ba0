// Reference misc kernels (kernels/ref/misc.h): Range, EyeLike, quantization and GridSample
// against hand-checked ONNX examples and onnx 1.12 node-test data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "../../kernels/ref/misc.h"
#include "kernels_data_test_util.h"

namespace {

using namespace kernels_test;

// ============================== misc.h ==============================

TEST(KernelsDataMisc, RangeEyeFill) {
  // range_float_type_positive_delta: (1, 5, 2) -> [1, 3]; int32 negative delta (10, 6, -3).
  EXPECT_EQ(kiln_ref::range_count<float>(1.f, 5.f, 2.f), 2);
  EXPECT_EQ(kiln_ref::range_count<int32_t>(10, 6, -3), 2);
  EXPECT_EQ(kiln_ref::range_count<int32_t>(10, 6, 3), 0);
  EXPECT_EQ(kiln_ref::range_count<int32_t>(1, 2, 0), -1);
  EXPECT_EQ(kiln_ref::range_count<int64_t>(std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::max(),
                                           std::numeric_limits<int64_t>::max()),
            3);
  int32_t ri[2];
  kiln_ref::range<int32_t>(10, -3, 2, ri);
  EXPECT_EQ(ri[0], 10);
  EXPECT_EQ(ri[1], 7);
  float rf[3];
  kiln_ref::range<float>(0.5f, 0.25f, 3, rf);
  EXPECT_EQ(std::vector<float>(rf, rf + 3), (std::vector<float>{0.5f, 0.75f, 1.0f}));
  // eyelike_with_dtype style: [3, 4], k = 1.
  uint16_t e[12];
  kiln_ref::eye_like<kiln_ref::f16_tag>(3, 4, 1, e);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(e[i * 4 + j], j - i == 1 ? 0x3c00 : 0);
  int64_t fv = -5, filled[3];
  kiln_ref::fill(3, 8, &fv, filled);
  EXPECT_EQ(std::vector<int64_t>(filled, filled + 3), (std::vector<int64_t>{-5, -5, -5}));
}

TEST(KernelsDataMisc, QuantizeDequantizeOnnxExamples) {
  // quantizelinear: x / 2 + 128 with saturation.
  const float x[6] = {0, 2, 3, 1000, -254, -1000}, s = 2;
  const uint8_t zp = 128;
  uint8_t y[6];
  kiln_ref::quantize_linear<float, uint8_t>(1, 1, 6, x, &s, &zp, y);
  EXPECT_EQ(std::vector<int>(y, y + 6), (std::vector<int>{128, 129, 130, 255, 1, 0}));
  // Half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2; NaN -> zero point.
  const float h[6] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, std::nanf("")}, one = 1;
  int8_t q[6];
  const int8_t z3 = 3;
  kiln_ref::quantize_linear<float, int8_t>(1, 1, 6, h, &one, nullptr, q);
  EXPECT_EQ(std::vector<int>(q, q + 5), (std::vector<int>{0, 2, 2, 0, -2}));
  EXPECT_EQ(q[5], 0);
  kiln_ref::quantize_linear<float, int8_t>(1, 1, 6, h, &one, &z3, q);
  EXPECT_EQ(q[5], 3);
  // quantizelinear_axis: [1, 3, 3, 2], per-channel scale/zero point.
  const float xa[18] = {-162, 10, -100, 232, -20,  -50,  -76,  0,    0,
                        252,  32, -44,  245, -485, -960, -270, -375, -470};
  const float sa[3] = {2, 4, 5};
  const uint8_t za[3] = {84, 24, 196};
  uint8_t ya[18];
  kiln_ref::quantize_linear<float, uint8_t>(1, 3, 6, xa, sa, za, ya);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(int(ya[c * 6 + i]), int(xa[c * 6 + i] / sa[c]) + za[c]) << c << " " << i;
  // dequantizelinear: (x - 128) * 2.
  const uint8_t dx[4] = {0, 3, 128, 255};
  float dy[4];
  kiln_ref::dequantize_linear<uint8_t, float>(1, 1, 4, dx, &s, &zp, dy);
  EXPECT_EQ(std::vector<float>(dy, dy + 4), (std::vector<float>{-256, -250, 0, 254}));
  // Per-axis dequantize into f16, and int32 without a zero point.
  uint16_t hy[3];
  const uint16_t hs[3] = {kiln_ref::float_to_half(2), kiln_ref::float_to_half(4),
                          kiln_ref::float_to_half(5)};
  const uint8_t three[3] = {85, 25, 197};
  kiln_ref::dequantize_linear<uint8_t, kiln_ref::f16_tag>(1, 3, 1, three, hs, za, hy);
  EXPECT_EQ(kiln_ref::half_to_float(hy[0]), 2.f);
  EXPECT_EQ(kiln_ref::half_to_float(hy[1]), 4.f);
  EXPECT_EQ(kiln_ref::half_to_float(hy[2]), 5.f);
  const int32_t i32[2] = {-7, 1 << 30};
  float iy[2];
  kiln_ref::dequantize_linear<int32_t, float>(1, 1, 2, i32, &s, nullptr, iy);
  EXPECT_EQ(iy[0], -14.f);
  EXPECT_EQ(iy[1], 2147483648.f);
}

TEST(KernelsDataMisc, DynamicQuantizeLinearOnnxExamples) {
  struct Case {
    std::vector<float> x;
    float scale;
    int zp;
    std::vector<int> y;
  };
  const Case cases[] = {
      {{0, 2, -3, -2.5f, 1.34f, 0.5f}, 0.0196078438f, 153, {153, 255, 0, 26, 221, 179}},
      {{-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f}, 0.0156862754f, 255, {191, 121, 172, 96, 42, 0}},
      {{1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f},
       0.0156862754f,
       0,
       {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149}},
  };
  for (const auto& c : cases) {
    std::vector<uint8_t> y(c.x.size());
    float scale = 0;
    uint8_t zp = 0;
    kiln_ref::dynamic_quantize_linear(int64_t(c.x.size()), c.x.data(), y.data(), &scale, &zp);
    EXPECT_FLOAT_EQ(scale, c.scale);
    EXPECT_EQ(int(zp), c.zp);
    EXPECT_EQ(std::vector<int>(y.begin(), y.end()), c.y);
  }
  const float zeros[2] = {0, 0};
  uint8_t y[2], zp = 9;
  float scale = 0;
  kiln_ref::dynamic_quantize_linear(2, zeros, y, &scale, &zp);
  EXPECT_EQ(scale, 1.f);
  EXPECT_EQ(int(zp), 0);
}

struct GridSampleNodeCase {
  const char* name;
  int mode, padding, align_corners;
  Dims x_dims;
  std::vector<float> x;
  Dims grid_dims;
  std::vector<float> grid;
  Dims out_dims;
  std::vector<float> expected;
};

const GridSampleNodeCase kGridSampleNodeCases[] = {
    {"test_gridsample",
     1,
     0,
     0,
     {1, 1, 4, 4},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f},
     {1, 6, 6, 2},
     {-1.0f,
      -1.0f,
      -0.6000000238418579f,
      -1.0f,
      -0.20000000298023224f,
      -1.0f,
      0.20000000298023224f,
      -1.0f,
      0.6000000238418579f,
      -1.0f,
      1.0f,
      -1.0f,
      -1.0f,
      -0.6000000238418579f,
      -0.6000000238418579f,
      -0.6000000238418579f,
      -0.20000000298023224f,
      -0.6000000238418579f,
      0.20000000298023224f,
      -0.6000000238418579f,
      0.6000000238418579f,
      -0.6000000238418579f,
      1.0f,
      -0.6000000238418579f,
      -1.0f,
      -0.20000000298023224f,
      -0.6000000238418579f,
      -0.20000000298023224f,
      -0.20000000298023224f,
      -0.20000000298023224f,
      0.20000000298023224f,
      -0.20000000298023224f,
      0.6000000238418579f,
      -0.20000000298023224f,
      1.0f,
      -0.20000000298023224f,
      -1.0f,
      0.20000000298023224f,
      -0.6000000238418579f,
      0.20000000298023224f,
      -0.20000000298023224f,
      0.20000000298023224f,
      0.20000000298023224f,
      0.20000000298023224f,
      0.6000000238418579f,
      0.20000000298023224f,
      1.0f,
      0.20000000298023224f,
      -1.0f,
      0.6000000238418579f,
      -0.6000000238418579f,
      0.6000000238418579f,
      -0.20000000298023224f,
      0.6000000238418579f,
      0.20000000298023224f,
      0.6000000238418579f,
      0.6000000238418579f,
      0.6000000238418579f,
      1.0f,
      0.6000000238418579f,
      -1.0f,
      1.0f,
      -0.6000000238418579f,
      1.0f,
      -0.20000000298023224f,
      1.0f,
      0.20000000298023224f,
      1.0f,
      0.6000000238418579f,
      1.0f,
      1.0f,
      1.0f},
     {1, 1, 6, 6},
     {0.0f,
      0.15000000596046448f,
      0.550000011920929f,
      0.949999988079071f,
      1.350000023841858f,
      0.75f,
      0.6000000238418579f,
      1.5f,
      2.299999952316284f,
      3.0999999046325684f,
      3.9000000953674316f,
      2.0999999046325684f,
      2.200000047683716f,
      4.699999809265137f,
      5.5f,
      6.300000190734863f,
      7.099999904632568f,
      3.700000047683716f,
      3.799999952316284f,
      7.900000095367432f,
      8.699999809265137f,
      9.5f,
      10.300000190734863f,
      5.300000190734863f,
      5.400000095367432f,
      11.100000381469727f,
      11.899999618530273f,
      12.699999809265137f,
      13.5f,
      6.900000095367432f,
      3.0f,
      6.150000095367432f,
      6.550000190734863f,
      6.949999809265137f,
      7.349999904632568f,
      3.75f}},
    {"test_gridsample_aligncorners_true",
     1,
     0,
     1,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {0.0f, 1.25f, 2.0f, 2.5f, 2.5f, 2.0f, 3.75f, 5.0f}},
    {"test_gridsample_bicubic",
     2,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {-0.14059999585151672f, 0.38280001282691956f, 1.7555999755859375f, 2.9688000679016113f,
      2.9688000679016113f, 1.7555999755859375f, 5.144499778747559f, 1.3905999660491943f}},
    {"test_gridsample_bilinear",
     1,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {0.0f, 0.5f, 1.7000000476837158f, 2.5f, 2.5f, 1.7000000476837158f, 4.5f, 1.25f}},
    {"test_gridsample_border_padding",
     1,
     1,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-10.0f, -10.0f, -5.0f, -5.0f, -0.20000000298023224f, -0.20000000298023224f, 10.0f, 10.0f,
      10.0f, 10.0f, -0.20000000298023224f, -0.20000000298023224f, 5.0f, 5.0f, 10.0f, 10.0f},
     {1, 1, 2, 4},
     {0.0f, 0.0f, 1.7000000476837158f, 5.0f, 5.0f, 1.7000000476837158f, 5.0f, 5.0f}},
    {"test_gridsample_nearest",
     0,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {0.0f, 0.0f, 2.0f, 2.0f, 2.0f, 2.0f, 5.0f, 0.0f}},
    {"test_gridsample_reflection_padding",
     1,
     2,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-10.0f, -10.0f, -5.0f, -5.0f, -0.20000000298023224f, -0.20000000298023224f, 10.0f, 10.0f,
      10.0f, 10.0f, -0.20000000298023224f, -0.20000000298023224f, 5.0f, 5.0f, 10.0f, 10.0f},
     {1, 1, 2, 4},
     {2.5f, 0.0f, 1.7000000476837158f, 2.5f, 2.5f, 1.7000000476837158f, 5.0f, 2.5f}},
    {"test_gridsample_zeros_padding",
     1,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-10.0f, -10.0f, -5.0f, -5.0f, -0.20000000298023224f, -0.20000000298023224f, 10.0f, 10.0f,
      10.0f, 10.0f, -0.20000000298023224f, -0.20000000298023224f, 5.0f, 5.0f, 10.0f, 10.0f},
     {1, 1, 2, 4},
     {0.0f, 0.0f, 1.7000000476837158f, 0.0f, 0.0f, 1.7000000476837158f, 0.0f, 0.0f}},
};

TEST(KernelsDataMisc, GridSampleOnnxNodeTests) {
  for (const auto& c : kGridSampleNodeCases) {
    std::vector<float> out(c.expected.size(), -99.f);
    const Dims in_sp(c.x_dims.begin() + 2, c.x_dims.end());
    const Dims out_sp(c.grid_dims.begin() + 1, c.grid_dims.end() - 1);
    kiln_ref::grid_sample<float, float>(2, c.x_dims[0], c.x_dims[1], in_sp.data(), out_sp.data(),
                                        c.grid.data(), c.mode, c.padding, c.align_corners,
                                        c.x.data(), out.data());
    expect_close(out, c.expected, 1e-3, 1e-4, c.name);  // expected values have 4 decimals
  }
}

TEST(KernelsDataMisc, GridSampleOneDimAndDegenerate) {
  // 1-D spatial (opset 20): x = [0, 10, 20], linear, align_corners: grid -1, 0, 0.25, 1.
  const float x[3] = {0, 10, 20}, g[4] = {-1, 0, 0.25f, 1};
  const int64_t in_sp[1] = {3}, out_sp[1] = {4};
  float y[4];
  kiln_ref::grid_sample<float, float>(1, 1, 1, in_sp, out_sp, g, kiln_ref::kGridLinear,
                                      kiln_ref::kGridZeros, 1, x, y);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{0, 10, 12.5f, 20}));
  // A width-1 input with reflection and align_corners never divides by zero.
  const float one[1] = {4};
  const int64_t w1[1] = {1};
  const float far[4] = {-3, 0.7f, 2, 9};
  kiln_ref::grid_sample<float, float>(1, 1, 1, w1, out_sp, far, kiln_ref::kGridCubic,
                                      kiln_ref::kGridReflection, 1, one, y);
  for (float v : y) EXPECT_TRUE(std::isfinite(v));
}

}  // namespace
