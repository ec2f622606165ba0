// kiln reference kernels: N-d Resize (nearest / N-linear / N-cubic, every ONNX coordinate
// transformation, antialias), following the ONNX reference implementation's math.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "cast.h"
#include "common.h"

namespace kiln_ref {

/// Resize `mode`.
enum ResizeMode : int { kResizeNearest = 0, kResizeLinear = 1, kResizeCubic = 2 };
/// Resize `coordinate_transformation_mode`.
enum ResizeCoordMode : int {
  kCoordHalfPixel = 0,
  kCoordHalfPixelSymmetric = 1,
  kCoordPytorchHalfPixel = 2,
  kCoordAlignCorners = 3,
  kCoordAsymmetric = 4,
  kCoordTfCropAndResize = 5
};
/// Resize `nearest_mode`.
enum ResizeNearestMode : int {
  kNearestRoundPreferFloor = 0,
  kNearestRoundPreferCeil = 1,
  kNearestFloor = 2,
  kNearestCeil = 3
};

namespace resize_detail {

// Interpolation taps per output coordinate along an axis with this scale.
inline int64_t taps(int mode, int antialias, double scale) {
  if (mode == kResizeNearest) return 1;
  if (antialias && scale < 1.0) {
    const double support = mode == kResizeLinear ? 1.0 : 2.0;
    const int64_t start = int64_t(std::floor(-support / scale)) + 1;
    return 2 - 2 * start;
  }
  return mode == kResizeLinear ? 2 : 4;
}

// Scratch layout of one axis: count[out] (int64; -1 = outside the crop, use the
// extrapolation value), index[out * taps] (int64), weight[out * taps] (double).
inline int64_t axis_bytes(int64_t out, int64_t taps) {
  return out * 8 + out * taps * 16;
}

// Keys cubic kernel with parameter a at distance x.
inline double cubic(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Input coordinate of output coordinate x (ONNX Resize formulas; length_resized = scale * in).
inline double source_coord(int coord_mode, int64_t x, double scale, int64_t in, int64_t out,
                           double roi_start, double roi_end) {
  double len = scale * double(in);
  // Sizes given: the caller's scale is out / in rounded; use the exact length.
  if (std::fabs(len - double(out)) <= 1e-5 * (double(out) > 1 ? double(out) : 1.0))
    len = double(out);
  const double xr = double(x);
  switch (coord_mode) {
    case kCoordHalfPixelSymmetric: {
      const double adjustment = double(out) / len;
      const double center = double(in) / 2;
      return center * (1 - adjustment) + (xr + 0.5) / scale - 0.5;
    }
    case kCoordPytorchHalfPixel:
      return len > 1 ? (xr + 0.5) / scale - 0.5 : 0.0;
    case kCoordAlignCorners:
      return len == 1 ? 0.0 : xr * double(in - 1) / (len - 1);
    case kCoordAsymmetric:
      return xr / scale;
    case kCoordTfCropAndResize:
      if (len == 1) return 0.5 * (roi_start + roi_end) * double(in - 1);
      return roi_start * double(in - 1) + xr * (roi_end - roi_start) * double(in - 1) / (len - 1);
    default:
      return (xr + 0.5) / scale - 0.5;  // half_pixel
  }
}

inline int64_t clamp_index(int64_t i, int64_t n) {
  return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

// Fills one axis' taps for every output coordinate.
inline void plan_axis(int mode, int coord_mode, int nearest_mode, double cubic_a,
                      int exclude_outside, int antialias, double scale, int64_t in, int64_t out,
                      double roi_start, double roi_end, int64_t* count, int64_t* index,
                      double* weight) {
  const int64_t n = taps(mode, antialias, scale);
  for (int64_t x = 0; x < out; ++x) {
    int64_t* idx = index + x * n;
    double* w = weight + x * n;
    double xo = source_coord(coord_mode, x, scale, in, out, roi_start, roi_end);
    if (!(xo > -1e15)) xo = -1e15;  // keeps the int64 conversions below defined (and NaN)
    if (xo > 1e15) xo = 1e15;
    if (coord_mode == kCoordTfCropAndResize && (xo < 0 || xo > double(in - 1))) {
      count[x] = -1;
      continue;
    }
    const double fl = std::floor(xo);
    if (mode == kResizeNearest) {
      double r = fl;
      if (xo != fl) {
        const double frac = xo - fl;
        switch (nearest_mode) {
          case kNearestRoundPreferCeil:
            r = frac < 0.5 ? fl : fl + 1;
            break;
          case kNearestFloor:
            r = fl;
            break;
          case kNearestCeil:
            r = fl + 1;
            break;
          default:
            r = frac <= 0.5 ? fl : fl + 1;
            break;
        }
      }
      count[x] = 1;
      idx[0] = clamp_index(int64_t(r), in);
      w[0] = 1;
      continue;
    }
    // ratio in (0, 1]: an integral coordinate takes its left neighbour with ratio 1.
    double ratio = xo - fl;
    int64_t base = int64_t(fl);
    if (ratio == 0) {
      ratio = 1;
      base -= 1;
    }
    const int64_t first = 1 - n / 2;  // taps sit at base + first ... base + n / 2
    double sum = 0;
    for (int64_t t = 0; t < n; ++t) {
      const double dist = double(first + t) - ratio;
      double v;
      if (antialias) {
        const double s = scale < 1 ? scale : 1;
        if (mode == kResizeLinear) {
          v = 1 - std::fabs(dist * s);
          v = v < 0 ? 0 : v;
        } else {
          v = cubic(dist * s, cubic_a);
        }
      } else if (mode == kResizeLinear) {
        v = t == 0 ? 1 - ratio : ratio;
      } else {
        v = cubic(dist, cubic_a);
      }
      const int64_t pos = base + first + t;
      if (exclude_outside && (pos < 0 || pos >= in)) v = 0;
      w[t] = v;
      idx[t] = clamp_index(pos, in);
      sum += v;
    }
    if ((antialias || exclude_outside) && sum != 0)
      for (int64_t t = 0; t < n; ++t) w[t] /= sum;
    // A tap of weight exactly 1 with the rest 0 is a plain copy: keep just that tap.
    count[x] = n;
    for (int64_t t = 0; t < n; ++t) {
      if (w[t] != 1) continue;
      bool rest_zero = true;
      for (int64_t u = 0; u < n; ++u) rest_zero = rest_zero && (u == t || w[u] == 0);
      if (rest_zero) {
        idx[0] = idx[t];
        w[0] = 1;
        count[x] = 1;
      }
      break;
    }
  }
}

}  // namespace resize_detail

/// Scratch bytes resize() needs (8-byte aligned) for these output dims, scales and mode.
inline int64_t resize_scratch_bytes(int rank, const int64_t* out_dims, const float* scales,
                                    int mode, int antialias) {
  int64_t bytes = 0;
  for (int d = 0; d < rank; ++d)
    bytes += resize_detail::axis_bytes(out_dims[d],
                                       resize_detail::taps(mode, antialias, double(scales[d])));
  return bytes;
}

/// Resize over all `rank` axes of a row-major tensor: in_dims -> out_dims, scales[d] the
/// per-axis scale (ONNX `scales`, or out/in as the caller computed it when `sizes` is given,
/// or the keep_aspect_ratio_policy scale; axes not resized have 1). roi: 2*rank normalized
/// [starts..., ends...] used only by kCoordTfCropAndResize (may be null otherwise); the
/// caller expands `axes` to every axis. Enum arguments: ResizeMode, ResizeCoordMode,
/// ResizeNearestMode. cubic_coeff_a (ONNX default -0.75), exclude_outside and antialias
/// (linear/cubic only; widens the filter by 1/scale when downsampling) as in ONNX.
/// Semantics follow onnx's reference: the source coordinate uses length_resized =
/// scale * in_dim (exactly out_dim when that is within rounding), neighbours outside the input
/// repeat the edge, tf_crop_and_resize coordinates outside [0, in-1] give
/// extrapolation_value. Linear/cubic accumulate in double; integer outputs round half to even
/// and saturate. A tap of weight exactly 1 (an integral source coordinate) copies the element.
/// pytorch_half_pixel maps a length-1 axis to coordinate 0 (ONNX spec text).
/// Every in_dims[d] must be >= 1 where the output is non-empty (else the output is zeroed).
/// scratch: resize_scratch_bytes(rank, out_dims, scales, mode, antialias) bytes.
template <class E>
inline void resize(int rank, const int64_t* in_dims, const int64_t* out_dims, const float* scales,
                   const float* roi, int mode, int coord_mode, int nearest_mode,
                   float cubic_coeff_a, int exclude_outside, float extrapolation_value,
                   int antialias, const storage_t<E>* in, storage_t<E>* out, void* scratch) {
  int64_t total = 1;
  bool empty_in = false;
  for (int d = 0; d < rank; ++d) {
    total *= out_dims[d];
    empty_in = empty_in || in_dims[d] == 0;
  }
  if (total == 0) return;
  if (empty_in) {
    for (int64_t k = 0; k < total; ++k) out[k] = from_double<E>(0.0);
    return;
  }
  // Per-axis tap tables.
  int64_t* count[kMaxRank];
  int64_t* index[kMaxRank];
  double* weight[kMaxRank];
  int64_t ntaps[kMaxRank], in_strides[kMaxRank];
  unsigned char* p = static_cast<unsigned char*>(scratch);
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = s;
    s *= in_dims[d];
  }
  for (int d = 0; d < rank; ++d) {
    const double scale = double(scales[d]);
    ntaps[d] = resize_detail::taps(mode, antialias, scale);
    count[d] = reinterpret_cast<int64_t*>(p);
    index[d] = count[d] + out_dims[d];
    weight[d] = reinterpret_cast<double*>(index[d] + out_dims[d] * ntaps[d]);
    p += resize_detail::axis_bytes(out_dims[d], ntaps[d]);
    const double rs = roi ? double(roi[d]) : 0.0, re = roi ? double(roi[d + rank]) : 1.0;
    resize_detail::plan_axis(mode, coord_mode, nearest_mode, double(cubic_coeff_a), exclude_outside,
                             antialias, scale, in_dims[d], out_dims[d], rs, re, count[d], index[d],
                             weight[d]);
  }
  const storage_t<E> extrapolated = from_double<E>(double(extrapolation_value));
  int64_t o[kMaxRank] = {0};  // output coordinate
  int64_t t[kMaxRank];        // tap counter per axis
  for (int64_t e = 0; e < total; ++e) {
    bool outside = false, single = true;
    int64_t off = 0;
    for (int d = 0; d < rank; ++d) {
      const int64_t c = count[d][o[d]];
      outside = outside || c < 0;
      single = single && c == 1;
      if (c == 1) off += index[d][o[d] * ntaps[d]] * in_strides[d];
    }
    if (outside) {
      out[e] = extrapolated;
    } else if (single) {
      out[e] = in[off];
    } else {
      double acc = 0;
      for (int d = 0; d < rank; ++d) t[d] = 0;
      for (;;) {
        double w = 1;
        int64_t src = 0;
        for (int d = 0; d < rank; ++d) {
          const int64_t k = o[d] * ntaps[d] + t[d];
          w *= weight[d][k];
          src += index[d][k] * in_strides[d];
        }
        acc += w * to_double<E>(in[src]);
        int d = rank - 1;
        for (; d >= 0; --d) {
          if (++t[d] < count[d][o[d]]) break;
          t[d] = 0;
        }
        if (d < 0) break;
      }
      out[e] = from_double<E>(acc);
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++o[d] < out_dims[d]) break;
      o[d] = 0;
    }
  }
}

}  // namespace kiln_ref
