// Reference Resize kernel (kernels/ref/resize.h): onnx 1.12 node-test data, random cases against
// a port of onnx's reference implementation, and integer element types.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../../kernels/ref/resize.h"
#include "kernels_data_test_util.h"

namespace {

using namespace kernels_test;

// ============================== resize.h ==============================

struct ResizeNodeCase {
  const char* name;
  int mode, coord, nearest;
  float cubic_a;
  int exclude_outside;
  float extrapolation;
  Dims in_dims;
  std::vector<float> x, roi, scales;
  Dims sizes, out_dims;
  std::vector<float> expected;
};

// Resize's caller-side shape logic: scales given -> out = floor(in * scale); sizes given ->
// scale = out / in.
void resize_call(const ResizeNodeCase& c, std::vector<float>& out, Dims& out_dims,
                 std::vector<float>& scales) {
  const int rank = int(c.in_dims.size());
  out_dims.assign(static_cast<size_t>(rank), 0);
  scales.assign(static_cast<size_t>(rank), 1.f);
  for (int d = 0; d < rank; ++d) {
    if (!c.scales.empty()) {
      scales[size_t(d)] = c.scales[size_t(d)];
      out_dims[size_t(d)] =
          int64_t(std::floor(double(c.in_dims[size_t(d)]) * double(c.scales[size_t(d)])));
    } else {
      out_dims[size_t(d)] = c.sizes[size_t(d)];
      scales[size_t(d)] = float(double(c.sizes[size_t(d)]) / double(c.in_dims[size_t(d)]));
    }
  }
  out.assign(static_cast<size_t>(numel(out_dims)), -1.f);
  std::vector<unsigned char> scratch(
      size_t(kiln_ref::resize_scratch_bytes(rank, out_dims.data(), scales.data(), c.mode, 0)));
  kiln_ref::resize<float>(rank, c.in_dims.data(), out_dims.data(), scales.data(),
                          c.roi.empty() ? nullptr : c.roi.data(), c.mode, c.coord, c.nearest,
                          c.cubic_a, c.exclude_outside, c.extrapolation, 0, c.x.data(), out.data(),
                          scratch.data());
}

// onnx 1.12 backend node tests (.cache/onnx-node-tests), generated once from the .pb files.
const ResizeNodeCase kResizeNodeCases[] = {
    {"test_resize_downsample_scales_cubic",
     2,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 0.800000011920929f, 0.800000011920929f},
     {},
     {1, 1, 3, 3},
     {1.47119140625f, 2.78125f, 4.08251953125f, 6.71142578125f, 8.021484375f, 9.32275390625f,
      11.91650390625f, 13.2265625f, 14.52783203125f}},
    {"test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
     2,
     0,
     0,
     -0.5f,
     1,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 0.800000011920929f, 0.800000011920929f},
     {},
     {1, 1, 3, 3},
     {1.3681267499923706f, 2.669501304626465f, 4.013336658477783f, 6.573625087738037f, 7.875f,
      9.21883487701416f, 11.948966026306152f, 13.250341415405273f, 14.594176292419434f}},
    {"test_resize_downsample_scales_cubic_align_corners",
     2,
     3,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 0.800000011920929f, 0.800000011920929f},
     {},
     {1, 1, 3, 3},
     {1.0f, 2.3951916694641113f, 3.7903831005096436f, 6.580766201019287f, 7.975957870483398f,
      9.371149063110352f, 12.161532402038574f, 13.556723594665527f, 14.951915740966797f}},
    {"test_resize_downsample_scales_linear",
     1,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {1.0f, 1.0f, 0.6000000238418579f, 0.6000000238418579f},
     {},
     {1, 1, 1, 2},
     {2.6666665077209473f, 4.3333330154418945f}},
    {"test_resize_downsample_scales_linear_align_corners",
     1,
     3,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {1.0f, 1.0f, 0.6000000238418579f, 0.6000000238418579f},
     {},
     {1, 1, 1, 2},
     {1.0f, 3.142857074737549f}},
    {"test_resize_downsample_scales_nearest",
     0,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {1.0f, 1.0f, 0.6000000238418579f, 0.6000000238418579f},
     {},
     {1, 1, 1, 2},
     {1.0f, 3.0f}},
    {"test_resize_downsample_sizes_cubic",
     2,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 3, 3},
     {1, 1, 3, 3},
     {1.6307870149612427f, 3.004629611968994f, 4.378472328186035f, 7.126157283782959f, 8.5f,
      9.873842239379883f, 12.621527671813965f, 13.995369911193848f, 15.369213104248047f}},
    {"test_resize_downsample_sizes_linear_pytorch_half_pixel",
     1,
     2,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 3, 1},
     {1, 1, 3, 1},
     {1.6666666269302368f, 7.0f, 12.333333015441895f}},
    {"test_resize_downsample_sizes_nearest",
     0,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {},
     {1, 1, 1, 3},
     {1, 1, 1, 3},
     {1.0f, 2.0f, 4.0f}},
    {"test_resize_tf_crop_and_resize",
     1,
     5,
     0,
     -0.75f,
     0,
     10.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {0.0f, 0.0f, 0.4000000059604645f, 0.6000000238418579f, 1.0f, 1.0f, 1.2000000476837158f,
      1.7000000476837158f},
     {},
     {1, 1, 3, 3},
     {1, 1, 3, 3},
     {7.600000381469727f, 10.0f, 10.0f, 12.40000057220459f, 10.0f, 10.0f, 10.0f, 10.0f, 10.0f}},
#include "kernels_data_resize_upsample_cases.inc"
};

TEST(KernelsDataResize, OnnxNodeTests) {
  for (const auto& c : kResizeNodeCases) {
    std::vector<float> out, scales;
    Dims out_dims;
    resize_call(c, out, out_dims, scales);
    EXPECT_EQ(out_dims, c.out_dims) << c.name;
    expect_close(out, c.expected, 1e-5, 1e-6, c.name);
  }
}

// Independent formulation: a port of onnx's reference (nested 1-D interpolation, neighbours
// found by sorting an edge-padded line by distance), including opset 18's antialias filters.
struct RefResize {
  int mode, coord, nearest, exclude, antialias;
  double a, extrap;
  std::vector<double> coeffs(double ratio, double scale) const {
    if (mode == kiln_ref::kResizeNearest) {
      if (ratio == std::floor(ratio)) return {0, 1};
      switch (nearest) {
        case kiln_ref::kNearestRoundPreferCeil:
          return {double(ratio < 0.5), double(ratio >= 0.5)};
        case kiln_ref::kNearestFloor:
          return {1, 0};
        case kiln_ref::kNearestCeil:
          return {0, 1};
        default:
          return {double(ratio <= 0.5), double(ratio > 0.5)};
      }
    }
    if (!antialias) {
      if (mode == kiln_ref::kResizeLinear) return {1 - ratio, ratio};
      const double A = a;
      return {((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A,
              ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
              ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1,
              ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) -
                  4 * A};
    }
    const double s = std::min(scale, 1.0);
    std::vector<double> c;
    double sum = 0;
    if (mode == kiln_ref::kResizeLinear) {
      const int64_t start = int64_t(std::floor(-1 / s) + 1), fp = 2 - 2 * start;
      for (int64_t i = start; i < start + fp; ++i)
        c.push_back(std::min(std::max(1 - std::fabs((double(i) - ratio) * s), 0.0), 1.0));
    } else {
      const int64_t is = int64_t(std::floor(-2 / s) + 1), ie = 2 - is;
      for (int64_t i = is; i < ie; ++i) {
        const double x = std::fabs(s * (double(i) - ratio)), x2 = x * x, x3 = x * x2;
        c.push_back(x <= 1 ? (a + 2) * x3 - (a + 3) * x2 + 1
                           : (x < 2 ? a * x3 - 5 * a * x2 + 8 * a * x - 4 * a : 0.0));
      }
    }
    for (double v : c) sum += v;
    for (double& v : c) v /= sum;
    return c;
  }
  double interp_1d(const std::vector<double>& data, double scale, int64_t out_int, int64_t x,
                   double r0, double r1) const {
    const int64_t in = int64_t(data.size());
    const double ow = scale * double(in), xr = double(x);
    double xo;
    switch (coord) {
      case kiln_ref::kCoordAlignCorners:
        xo = ow == 1 ? 0 : xr * double(in - 1) / (ow - 1);
        break;
      case kiln_ref::kCoordAsymmetric:
        xo = xr / scale;
        break;
      case kiln_ref::kCoordTfCropAndResize:
        xo = ow == 1 ? (r1 - r0) * double(in - 1) / 2 : xr * (r1 - r0) * double(in - 1) / (ow - 1);
        xo += r0 * double(in - 1);
        if (xo < 0 || xo > double(in - 1)) return extrap;
        break;
      case kiln_ref::kCoordPytorchHalfPixel:
        xo = ow == 1 ? 0 : (xr + 0.5) / scale - 0.5;
        break;
      case kiln_ref::kCoordHalfPixelSymmetric:
        xo = double(in) / 2 * (1 - double(out_int) / ow) + (xr + 0.5) / scale - 0.5;
        break;
      default:
        xo = (xr + 0.5) / scale - 0.5;
    }
    const double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
    std::vector<double> c = coeffs(ratio, scale);
    const int64_t n = int64_t(c.size()), pad = (n + 1) / 2;
    std::vector<int64_t> cand;
    for (int64_t i = 0; i < in + 2 * pad; ++i) cand.push_back(i);
    const double xp = xo + double(pad);
    std::sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
      const double dp = std::fabs(xp - double(p)), dq = std::fabs(xp - double(q));
      return dp < dq || (dp == dq && p < q);
    });
    cand.resize(static_cast<size_t>(n));
    std::sort(cand.begin(), cand.end());
    if (exclude) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = cand[size_t(k)] - pad;
        if (i < 0 || i >= in) c[size_t(k)] = 0;
        sum += c[size_t(k)];
      }
      for (double& v : c) v /= sum;
    }
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = std::min(std::max(cand[size_t(k)] - pad, int64_t(0)), in - 1);
      acc += c[size_t(k)] * data[size_t(i)];
    }
    return acc;
  }
  // data: a row-major block with dims[axis..]; returns the interpolated value at out coord x.
  double interp_nd(const std::vector<double>& data, size_t axis, const Dims& dims,
                   const std::vector<float>& scales, const Dims& out_dims, const Dims& x,
                   const std::vector<float>& roi) const {
    const size_t rank = dims.size();
    const double r0 = roi.empty() ? 0 : double(roi[axis]),
                 r1 = roi.empty() ? 1 : double(roi[axis + rank]);
    if (axis + 1 == rank)
      return interp_1d(data, double(scales[axis]), out_dims[axis], x[axis], r0, r1);
    const int64_t sub = int64_t(data.size()) / dims[axis];
    std::vector<double> line;
    for (int64_t i = 0; i < dims[axis]; ++i) {
      std::vector<double> part(data.begin() + i * sub, data.begin() + (i + 1) * sub);
      line.push_back(interp_nd(part, axis + 1, dims, scales, out_dims, x, roi));
    }
    return interp_1d(line, double(scales[axis]), out_dims[axis], x[axis], r0, r1);
  }
};

TEST(KernelsDataResize, RandomAgainstReferencePort) {
  Rng r;
  const float kScales[] = {0.25f, 0.5f, 0.75f, 1.0f, 1.5f, 2.0f, 3.0f, 0.375f};
  for (int iter = 0; iter < 300; ++iter) {
    const int rank = int(r.uniform(1, 3));
    RefResize ref{int(r.uniform(0, 2)), int(r.uniform(0, 5)), int(r.uniform(0, 3)),
                  int(r.uniform(0, 1)), int(r.uniform(0, 1)), r.uniform(0, 1) ? -0.75 : -0.5,
                  r.real(-2, 2)};
    if (ref.mode == kiln_ref::kResizeNearest) ref.exclude = ref.antialias = 0;
    Dims in_dims = r.dims(rank, 1, 5), out_dims(static_cast<size_t>(rank));
    std::vector<float> scales(static_cast<size_t>(rank)), roi;
    for (int d = 0; d < rank; ++d) {
      scales[size_t(d)] = kScales[r.uniform(0, 7)];
      out_dims[size_t(d)] =
          int64_t(std::floor(double(in_dims[size_t(d)]) * double(scales[size_t(d)])));
    }
    if (ref.coord == kiln_ref::kCoordTfCropAndResize) {
      roi.resize(static_cast<size_t>(2 * rank));
      for (int d = 0; d < rank; ++d) {
        roi[size_t(d)] = float(r.uniform(-2, 6)) / 8;
        roi[size_t(d + rank)] = float(r.uniform(2, 10)) / 8;
      }
    }
    const int64_t n_in = numel(in_dims), n_out = numel(out_dims);
    std::vector<float> x(static_cast<size_t>(n_in));
    std::vector<double> xd(static_cast<size_t>(n_in));
    for (int64_t i = 0; i < n_in; ++i) xd[size_t(i)] = x[size_t(i)] = float(r.uniform(-50, 50)) / 4;
    std::vector<float> out(static_cast<size_t>(n_out), 1e30f);
    std::vector<unsigned char> scratch(static_cast<size_t>(kiln_ref::resize_scratch_bytes(
        rank, out_dims.data(), scales.data(), ref.mode, ref.antialias)));
    kiln_ref::resize<float>(rank, in_dims.data(), out_dims.data(), scales.data(),
                            roi.empty() ? nullptr : roi.data(), ref.mode, ref.coord, ref.nearest,
                            float(ref.a), ref.exclude, float(ref.extrap), ref.antialias, x.data(),
                            out.data(), scratch.data());
    for (int64_t o = 0; o < n_out; ++o) {
      const double want =
          ref.interp_nd(xd, 0, in_dims, scales, out_dims, unravel(o, out_dims), roi);
      ASSERT_NEAR(double(out[size_t(o)]), double(float(want)), 1e-4 * (1 + std::fabs(want)))
          << "iter " << iter << " mode " << ref.mode << " coord " << ref.coord << " aa "
          << ref.antialias << " out " << o;
    }
  }
}

TEST(KernelsDataResize, IntegerNearestCopiesAndLinearRounds) {
  // int64 values beyond double precision survive nearest resizing bit-exactly.
  const int64_t big = (int64_t(1) << 62) + 1;
  const int64_t x[2] = {big, -big}, in_dims[1] = {2}, out_dims[1] = {4};
  int64_t y[4];
  const float s[1] = {2};
  std::vector<unsigned char> scratch(
      size_t(kiln_ref::resize_scratch_bytes(1, out_dims, s, kiln_ref::kResizeNearest, 0)));
  kiln_ref::resize<int64_t>(1, in_dims, out_dims, s, nullptr, kiln_ref::kResizeNearest,
                            kiln_ref::kCoordAsymmetric, kiln_ref::kNearestFloor, -0.75f, 0, 0.f, 0,
                            x, y, scratch.data());
  EXPECT_EQ(std::vector<int64_t>(y, y + 4), (std::vector<int64_t>{big, big, -big, -big}));
  // uint8 linear: 0 and 255 at half_pixel 2x -> 0, 64, 191, 255 (63.75 and 191.25 rounded).
  const uint8_t u[2] = {0, 255};
  uint8_t uy[4];
  std::vector<unsigned char> sc2(
      size_t(kiln_ref::resize_scratch_bytes(1, out_dims, s, kiln_ref::kResizeLinear, 0)));
  kiln_ref::resize<uint8_t>(1, in_dims, out_dims, s, nullptr, kiln_ref::kResizeLinear,
                            kiln_ref::kCoordHalfPixel, 0, -0.75f, 0, 0.f, 0, u, uy, sc2.data());
  EXPECT_EQ(std::vector<int>(uy, uy + 4), (std::vector<int>{0, 64, 191, 255}));
  // Rank 0 resizes nothing but copies the scalar.
  const float one = 7.f;
  float got = 0;
  kiln_ref::resize<float>(0, nullptr, nullptr, nullptr, nullptr, 1, 0, 0, -0.75f, 0, 0.f, 0, &one,
                          &got, nullptr);
  EXPECT_EQ(got, 7.f);
}

}  // namespace
