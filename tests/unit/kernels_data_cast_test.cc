// Reference Cast kernels (kernels/ref/cast.h): half and float narrowing, float to integer and
// integer/bool conversions, checked bit pattern by bit pattern and on edge values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "../../kernels/ref/cast.h"
#include "kernels_data_test_util.h"

namespace {

using namespace kernels_test;

// ============================== cast.h ==============================

TEST(KernelsDataCast, HalfRoundTripsEveryPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = uint16_t(b);
    const float f = kiln_ref::half_to_float(h);
    uint16_t back = 0;
    kiln_ref::cast<float, kiln_ref::f16_tag>(1, &f, &back);
    if (f != f) {
      EXPECT_TRUE((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0);
      continue;
    }
    ASSERT_EQ(back, h) << b;
    double d = f;
    kiln_ref::cast<double, kiln_ref::f16_tag>(1, &d, &back);
    ASSERT_EQ(back, h) << b;
    uint16_t bf = 0;
    kiln_ref::cast<kiln_ref::f16_tag, kiln_ref::bf16_tag>(1, &h, &bf);
    ASSERT_EQ(kiln_ref::bf16_to_float(bf), kiln_ref::bf16_to_float(kiln_ref::float_to_bf16(f)));
  }
}

TEST(KernelsDataCast, NarrowingRoundsOnce) {
  // Just below the f16 overflow midpoint (65520): a double->float->f16 path would round twice
  // and give inf; the exact answer is 65504.
  const double below = 65519.99999999;
  uint16_t h;
  kiln_ref::cast<double, kiln_ref::f16_tag>(1, &below, &h);
  EXPECT_EQ(kiln_ref::half_to_float(h), 65504.f);
  const double at = 65520.0;
  kiln_ref::cast<double, kiln_ref::f16_tag>(1, &at, &h);
  EXPECT_TRUE(std::isinf(kiln_ref::half_to_float(h)));
  // int64 -> bf16 where int64 -> float would land on a bf16 tie: 2^24 + 2^16 + 1 rounds up.
  const int64_t v = (int64_t(1) << 24) + (int64_t(1) << 16) + 1;
  kiln_ref::cast<int64_t, kiln_ref::bf16_tag>(1, &v, &h);
  EXPECT_EQ(double(kiln_ref::bf16_to_float(h)), double((int64_t(1) << 24) + (int64_t(1) << 17)));
  const int64_t tie = (int64_t(1) << 24) + (int64_t(1) << 16);  // exact tie: to even
  kiln_ref::cast<int64_t, kiln_ref::bf16_tag>(1, &tie, &h);
  EXPECT_EQ(double(kiln_ref::bf16_to_float(h)), double(int64_t(1) << 24));
  // double -> float: overflow to inf only past the midpoint above FLT_MAX.
  const double d[5] = {1e300, -1e300, 3.4028235e38, 0.1, 3.4028235677973366e38};
  float f[5];
  kiln_ref::cast<double, float>(5, d, f);
  EXPECT_TRUE(std::isinf(f[4]));  // exactly the midpoint: ties to even, which is inf
  EXPECT_TRUE(std::isinf(f[0]) && f[0] > 0);
  EXPECT_TRUE(std::isinf(f[1]) && f[1] < 0);
  EXPECT_EQ(f[2], std::numeric_limits<float>::max());
  EXPECT_EQ(f[3], 0.1f);
}

TEST(KernelsDataCast, FloatToIntDefinedEverywhere) {
  const float x[10] = {2.9f,     -2.9f,     300.f, -1.f,  std::nanf(""),
                       INFINITY, -INFINITY, 3e9f,  1e20f, -0.5f};
  int8_t i8[10];
  uint8_t u8[10];
  int32_t i32[10];
  int64_t i64[10];
  uint64_t u64[10];
  kiln_ref::cast<float, int8_t>(10, x, i8);
  kiln_ref::cast<float, uint8_t>(10, x, u8);
  kiln_ref::cast<float, int32_t>(10, x, i32);
  kiln_ref::cast<float, int64_t>(10, x, i64);
  kiln_ref::cast<float, uint64_t>(10, x, u64);
  EXPECT_EQ(std::vector<int>(i8, i8 + 10), (std::vector<int>{2, -2, 44, -1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<int>(u8, u8 + 10), (std::vector<int>{2, 254, 44, 255, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(i32[7], int32_t(3000000000LL - 4294967296LL));  // wraps through int64
  EXPECT_EQ(i32[4], 0);
  EXPECT_EQ(i64[5], std::numeric_limits<int64_t>::min());  // +inf: x86's indefinite value
  EXPECT_EQ(i64[8], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64[1], -2);
  EXPECT_EQ(u64[8], uint64_t(1) << 63);  // 1e20 > 2^64: indefinite
  const double big = 1.8e19;             // in [2^63, 2^64): exact
  uint64_t ub;
  kiln_ref::cast<double, uint64_t>(1, &big, &ub);
  EXPECT_EQ(ub, uint64_t(18000000000000000000ULL));
}

TEST(KernelsDataCast, IntegersBoolAndHalfToInt) {
  const int64_t v[4] = {-1, 256, 70000, std::numeric_limits<int64_t>::min()};
  uint8_t u[4];
  int16_t s[4];
  bool b[4];
  kiln_ref::cast<int64_t, uint8_t>(4, v, u);
  kiln_ref::cast<int64_t, int16_t>(4, v, s);
  kiln_ref::cast<int64_t, bool>(4, v, b);
  EXPECT_EQ(std::vector<int>(u, u + 4), (std::vector<int>{255, 0, 112, 0}));
  EXPECT_EQ(std::vector<int>(s, s + 4), (std::vector<int>{-1, 256, 4464, 0}));
  EXPECT_EQ(std::vector<bool>(b, b + 4), (std::vector<bool>{true, true, true, true}));
  const float f[3] = {0.0f, -0.0f, std::nanf("")};
  bool fb[3];
  kiln_ref::cast<float, bool>(3, f, fb);
  EXPECT_EQ(std::vector<bool>(fb, fb + 3), (std::vector<bool>{false, false, true}));
  const bool tb[2] = {true, false};
  uint16_t hb[2];
  float ff[2];
  kiln_ref::cast<bool, kiln_ref::bf16_tag>(2, tb, hb);
  kiln_ref::cast<bool, float>(2, tb, ff);
  EXPECT_EQ(hb[0], 0x3f80);
  EXPECT_EQ(hb[1], 0);
  EXPECT_EQ(ff[0], 1.f);
  const uint16_t h[2] = {kiln_ref::float_to_half(-3.75f), kiln_ref::float_to_half(65504.f)};
  int32_t hi[2];
  kiln_ref::cast<kiln_ref::f16_tag, int32_t>(2, h, hi);
  EXPECT_EQ(hi[0], -3);
  EXPECT_EQ(hi[1], 65504);
  const uint64_t top = ~uint64_t(0);
  float tf;
  kiln_ref::cast<uint64_t, float>(1, &top, &tf);
  EXPECT_EQ(tf, 18446744073709551616.f);
}

}  // namespace
