// kiln reference kernels: generators (Range, EyeLike, ConstantOfShape), quantization
// (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear) and image ops (GridSample,
// RoiAlign, NonMaxSuppression).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cast.h"
#include "common.h"

// Element types E follow cast.h (float, int64_t, kiln_ref::f16_tag, ...); tensors are dense
// row-major.

namespace kiln_ref {

// ---- generators ----

/// Range, element count: max(ceil((limit - start) / delta), 0), computed exactly for integers
/// (no overflow) and in double for floats. Returns -1 when delta is 0 (the caller reports it).
template <class E>
inline int64_t range_count(storage_t<E> start, storage_t<E> limit, storage_t<E> delta) {
  if constexpr (is_int_v<E>) {
    if (delta == 0) return -1;
    if ((delta > 0 && limit <= start) || (delta < 0 && limit >= start)) return 0;
    const uint64_t span =
        delta > 0 ? uint64_t(limit) - uint64_t(start) : uint64_t(start) - uint64_t(limit);
    const uint64_t step = delta > 0 ? uint64_t(delta) : uint64_t(0) - uint64_t(delta);
    return int64_t(span / step + (span % step != 0));
  } else {
    const double s = to_double<E>(start), l = to_double<E>(limit), d = to_double<E>(delta);
    if (d == 0 || d != d) return -1;
    const double n = std::ceil((l - s) / d);
    if (!(n > 0)) return 0;
    return n >= 9.2e18 ? int64_t(9200000000000000000) : int64_t(n);
  }
}

/// Range: out[i] = start + i * delta for i < n (n from range_count), computed in the element
/// type as the ONNX spec's loop does (integers wrap; f16/bf16 compute in float).
template <class E>
inline void range(storage_t<E> start, storage_t<E> delta, int64_t n, storage_t<E>* out) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (is_int_v<E>) {
      out[i] = wrap_to<E>(uint64_t(start) + uint64_t(i) * uint64_t(delta));
    } else {
      using C = compute_t<E>;
      out[i] = store<E>(C(load<E>(start) + C(i) * load<E>(delta)));
    }
  }
}

/// EyeLike: out is [rows, cols], 1 where col - row == k, 0 elsewhere.
template <class E>
inline void eye_like(int64_t rows, int64_t cols, int64_t k, storage_t<E>* out) {
  const storage_t<E> one = store<E>(compute_t<E>(1)), zero = store<E>(compute_t<E>(0));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = c - r == k ? one : zero;
}

/// ConstantOfShape: n copies of the elem_size-byte `value`.
inline void fill(int64_t n, int64_t elem_size, const void* value, void* out) {
  unsigned char* dst = static_cast<unsigned char*>(out);
  for (int64_t i = 0; i < n; ++i, dst += elem_size) std::memcpy(dst, value, size_t(elem_size));
}

// ---- quantization ----

/// QuantizeLinear: x viewed as [outer, axis_dim, inner]; scale and zero_point have axis_dim
/// entries (per-axis) — per-tensor is outer = 1, axis_dim = 1, inner = element count.
/// y = saturate(round_half_even(x / scale) + zero_point) with x / scale in x's compute type
/// (float for f16/bf16), saturation to Q's range, NaN -> zero_point. zero_point may be null
/// (0). X: float, double, f16_tag, bf16_tag (scale has X's type). Q: any integer type.
template <class X, class Q>
inline void quantize_linear(int64_t outer, int64_t axis_dim, int64_t inner, const storage_t<X>* x,
                            const storage_t<X>* scale, const Q* zero_point, Q* y) {
  using C = compute_t<X>;
  const double lo = double(std::numeric_limits<Q>::min());
  const double hi = double(std::numeric_limits<Q>::max());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < axis_dim; ++a) {
      const C s = load<X>(scale[a]);
      const double zp = zero_point ? double(zero_point[a]) : 0.0;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * axis_dim + a) * inner + i;
        const C q = C(load<X>(x[at]) / s);
        double v = double(round_half_even(q)) + zp;
        if (v != v) v = zp;
        v = v < lo ? lo : (v > hi ? hi : v);
        y[at] = Q(v);
      }
    }
}

/// DequantizeLinear: x viewed as [outer, axis_dim, inner] (per-tensor: axis_dim = 1);
/// y = (x - zero_point) * scale with the difference exact (int64) and the product in Y's
/// compute type (float for f16/bf16, rounded once). zero_point may be null (0).
/// Q: any integer type; Y (scale's type): float, double, f16_tag, bf16_tag.
template <class Q, class Y>
inline void dequantize_linear(int64_t outer, int64_t axis_dim, int64_t inner, const Q* x,
                              const storage_t<Y>* scale, const Q* zero_point, storage_t<Y>* y) {
  using C = compute_t<Y>;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < axis_dim; ++a) {
      const C s = load<Y>(scale[a]);
      const int64_t zp = zero_point ? int64_t(zero_point[a]) : 0;
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * axis_dim + a) * inner + i;
        y[at] = store<Y>(C(C(int64_t(x[at]) - zp) * s));
      }
    }
}

/// DynamicQuantizeLinear (uint8): range = [min(0, min x), max(0, max x)] (NaN ignored),
/// scale = range / 255 (1 when the range is empty, where the formula would divide by 0),
/// zero_point = saturate(round_half_even(-min / scale)), y = saturate(round_half_even(x / scale)
/// + zero_point) (NaN -> zero_point). All arithmetic in float, as onnx's reference.
inline void dynamic_quantize_linear(int64_t n, const float* x, uint8_t* y, float* y_scale,
                                    uint8_t* y_zero_point) {
  float mn = 0, mx = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
  }
  float scale = (mx - mn) / 255.0f;
  if (scale == 0 || !std::isfinite(scale)) scale = 1;
  float zpf = round_half_even(0.0f - mn / scale);
  zpf = zpf < 0 ? 0 : (zpf > 255 ? 255 : zpf);
  const uint8_t zp = uint8_t(zpf);
  quantize_linear<float, uint8_t>(1, 1, n, x, &scale, &zp, y);
  *y_scale = scale;
  *y_zero_point = zp;
}

// ---- GridSample ----

/// GridSample `mode` (opset 16 names bilinear/bicubic are linear/cubic).
enum GridSampleMode : int { kGridNearest = 0, kGridLinear = 1, kGridCubic = 2 };
/// GridSample `padding_mode`.
enum GridSamplePadding : int { kGridZeros = 0, kGridBorder = 1, kGridReflection = 2 };

namespace misc_detail {

// Reflects x into [lo, hi] by repeated mirroring at the borders (onnx reference / PyTorch).
inline double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double dx = lo - x;
    const double k = std::floor(dx / range), r = dx - k * range;
    return std::fmod(k, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const double k = std::floor(dx / range), r = dx - k * range;
    return std::fmod(k, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

inline double keys_cubic(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Element index read for integer tap i along an axis of extent d, or -1 for zero padding.
inline int64_t grid_tap(double i, int64_t d, int padding, double lo, double hi) {
  if (padding == kGridBorder) return i < 0 ? 0 : (i > double(d - 1) ? d - 1 : int64_t(i));
  if (padding == kGridReflection) {
    const int64_t k = int64_t(reflect(i, lo, hi));
    return k < 0 ? 0 : (k >= d ? d - 1 : k);
  }
  return (i >= 0 && i < double(d)) ? int64_t(i) : -1;
}

}  // namespace misc_detail

/// GridSample over `rank` spatial dims (opset 16 is rank 2; opset 20 allows more): x is
/// [N, C, in_spatial...], grid is [N, out_spatial..., rank] of normalized coordinates in
/// [-1, 1] whose last axis is ordered innermost-first (x, y, z), out is
/// [N, C, out_spatial...]. Follows onnx's reference: coordinates are unnormalized with or
/// without align_corners; nearest rounds half to even (rank 3: half away from zero, as
/// PyTorch); a coordinate outside the border range is clamped (border) or mirrored
/// (reflection) before interpolation, and each tap outside the input reads 0 (zeros), the
/// edge (border) or its mirror (reflection). Cubic uses a = -0.75. Computes in double;
/// integer outputs round half to even. X: any numeric E; G: float, double, f16_tag, bf16_tag.
template <class E, class G>
inline void grid_sample(int rank, int64_t N, int64_t C, const int64_t* in_spatial,
                        const int64_t* out_spatial, const storage_t<G>* grid, int mode, int padding,
                        int align_corners, const storage_t<E>* x, storage_t<E>* out) {
  int64_t in_size = 1, out_size = 1, in_strides[kMaxRank];
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = in_size;
    in_size *= in_spatial[d];
  }
  for (int d = 0; d < rank; ++d) out_size *= out_spatial[d];
  const int ntaps = mode == kGridNearest ? 1 : (mode == kGridLinear ? 2 : 4);
  int64_t tap_index[kMaxRank][4];
  double tap_weight[kMaxRank][4];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < out_size; ++p) {
      const storage_t<G>* g = grid + (n * out_size + p) * rank;
      for (int d = 0; d < rank; ++d) {
        const int64_t len = in_spatial[d];
        const double v = to_double<G>(g[rank - 1 - d]);
        double c = align_corners ? (v + 1) / 2 * double(len - 1) : ((v + 1) * double(len) - 1) / 2;
        const double lo = align_corners ? 0.0 : -0.5;
        const double hi = align_corners ? double(len - 1) : double(len) - 0.5;
        if (mode == kGridNearest) {
          c = rank == 3 ? (c >= 0 ? std::floor(c + 0.5) : std::ceil(c - 0.5)) : round_half_even(c);
        }
        if (!(c > -1e15)) c = -1e15;  // keeps the integer conversions defined (and NaN)
        if (c > 1e15) c = 1e15;
        if (c < lo || c > hi) {
          if (padding == kGridBorder)
            c = c < 0 ? 0 : (c > double(len - 1) ? double(len - 1) : c);
          else if (padding == kGridReflection)
            c = misc_detail::reflect(c, lo, hi);
        }
        if (mode == kGridNearest) {
          tap_index[d][0] = misc_detail::grid_tap(std::trunc(c), len, padding, lo, hi);
          tap_weight[d][0] = 1;
          continue;
        }
        const double f = std::floor(c), t = c - f;
        for (int k = 0; k < ntaps; ++k) {
          const double pos = f + double(k - (ntaps == 4 ? 1 : 0));
          tap_index[d][k] = misc_detail::grid_tap(pos, len, padding, lo, hi);
          tap_weight[d][k] =
              ntaps == 2 ? (k == 0 ? 1 - t : t) : misc_detail::keys_cubic(double(k - 1) - t, -0.75);
        }
      }
      for (int64_t ch = 0; ch < C; ++ch) {
        const storage_t<E>* plane = x + (n * C + ch) * in_size;
        int tap[kMaxRank] = {0};
        double acc = 0;
        bool single_value = ntaps == 1;
        storage_t<E> copied = from_double<E>(0.0);
        for (;;) {
          double w = 1;
          int64_t src = 0;
          bool zero = false;
          for (int d = 0; d < rank; ++d) {
            const int64_t i = tap_index[d][tap[d]];
            zero = zero || i < 0;
            w *= tap_weight[d][tap[d]];
            src += i * in_strides[d];
          }
          if (!zero) {
            if (single_value)
              copied = plane[src];
            else
              acc += w * to_double<E>(plane[src]);
          }
          int d = rank - 1;
          for (; d >= 0; --d) {
            if (++tap[d] < ntaps) break;
            tap[d] = 0;
          }
          if (d < 0) break;
        }
        out[(n * C + ch) * out_size + p] = single_value ? copied : from_double<E>(acc);
      }
    }
}

// ---- RoiAlign ----

/// RoiAlign: x is [N, C, H, W], rois [num_rois, 4] as (x1, y1, x2, y2) in input coordinates
/// times spatial_scale, batch_indices [num_rois], out [num_rois, C, out_h, out_w]. Each output
/// bin averages (max_mode == 0) or takes the max of (max_mode != 0) sampling_ratio^2 bilinear
/// samples (sampling_ratio 0: ceil(roi extent / bins) per axis). half_pixel != 0 shifts by
/// -0.5 (coordinate_transformation_mode half_pixel); output_half_pixel instead forces rois to at
/// least 1x1. Max mode follows onnx's reference and ORT: each sample contributes the largest
/// of its four weighted corner terms. Samples beyond [-1, H] x [-1, W] contribute 0.
/// Computes in double. Returns 1 (writing nothing) when a batch index is outside [0, N).
template <class E>
inline int roi_align(int64_t N, int64_t C, int64_t H, int64_t W, int64_t num_rois,
                     const storage_t<E>* rois, const int64_t* batch_indices, int64_t out_h,
                     int64_t out_w, int64_t sampling_ratio, float spatial_scale, int max_mode,
                     int half_pixel, const storage_t<E>* x, storage_t<E>* out) {
  for (int64_t r = 0; r < num_rois; ++r)
    if (batch_indices[r] < 0 || batch_indices[r] >= N) return 1;
  if (H <= 0 || W <= 0) {  // nothing to sample: zeros
    for (int64_t k = 0; k < num_rois * C * out_h * out_w; ++k) out[k] = from_double<E>(0.0);
    return 0;
  }
  const double offset = half_pixel ? 0.5 : 0.0, scale = double(spatial_scale);
  for (int64_t r = 0; r < num_rois; ++r) {
    const storage_t<E>* box = rois + r * 4;
    const double x0 = to_double<E>(box[0]) * scale - offset;
    const double y0 = to_double<E>(box[1]) * scale - offset;
    double roi_w = to_double<E>(box[2]) * scale - offset - x0;
    double roi_h = to_double<E>(box[3]) * scale - offset - y0;
    if (!half_pixel) {
      roi_w = roi_w > 1 ? roi_w : 1;
      roi_h = roi_h > 1 ? roi_h : 1;
    }
    const double bin_h = roi_h / double(out_h), bin_w = roi_w / double(out_w);
    // Adaptive grids: ceil(bin extent) samples (0 for empty or NaN extents, capped at 1e6).
    auto adaptive = [](double extent) {
      return extent > 0 ? int64_t(std::ceil(extent < 1e6 ? extent : 1e6)) : int64_t(0);
    };
    const int64_t grid_h = sampling_ratio > 0 ? sampling_ratio : adaptive(bin_h);
    const int64_t grid_w = sampling_ratio > 0 ? sampling_ratio : adaptive(bin_w);
    const double count = grid_h * grid_w > 1 ? double(grid_h * grid_w) : 1.0;
    for (int64_t c = 0; c < C; ++c) {
      const storage_t<E>* plane = x + (batch_indices[r] * C + c) * H * W;
      for (int64_t ph = 0; ph < out_h; ++ph)
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy) {
            double y = y0 + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h);
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double xx = x0 + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w);
              double terms[4] = {0, 0, 0, 0};
              if (y >= -1.0 && y <= double(H) && xx >= -1.0 && xx <= double(W)) {
                double yy = y > 0 ? y : 0, xc = xx > 0 ? xx : 0;
                int64_t y_lo = int64_t(yy), x_lo = int64_t(xc), y_hi, x_hi;
                if (y_lo >= H - 1) {
                  y_hi = y_lo = H - 1;
                  yy = double(y_lo);
                } else {
                  y_hi = y_lo + 1;
                }
                if (x_lo >= W - 1) {
                  x_hi = x_lo = W - 1;
                  xc = double(x_lo);
                } else {
                  x_hi = x_lo + 1;
                }
                const double ly = yy - double(y_lo), lx = xc - double(x_lo);
                const double hy = 1 - ly, hx = 1 - lx;
                terms[0] = hy * hx * to_double<E>(plane[y_lo * W + x_lo]);
                terms[1] = hy * lx * to_double<E>(plane[y_lo * W + x_hi]);
                terms[2] = ly * hx * to_double<E>(plane[y_hi * W + x_lo]);
                terms[3] = ly * lx * to_double<E>(plane[y_hi * W + x_hi]);
              }
              if (max_mode) {
                const double m =
                    std::max(std::max(terms[0], terms[1]), std::max(terms[2], terms[3]));
                acc = first ? m : std::max(acc, m);
                first = false;
              } else {
                acc += terms[0] + terms[1] + terms[2] + terms[3];
              }
            }
          }
          if (!max_mode) acc /= count;
          out[((r * C + c) * out_h + ph) * out_w + pw] = from_double<E>(acc);
        }
    }
  }
  return 0;
}

// ---- NonMaxSuppression ----

/// Scratch bytes non_max_suppression() needs (8-byte aligned) for num_boxes boxes.
inline int64_t nms_scratch_bytes(int64_t num_boxes) {
  return num_boxes * 16;
}

namespace misc_detail {

struct Box {
  float x0, y0, x1, y1;
};

inline Box nms_box(const float* b, int center_point_box) {
  if (center_point_box) {
    const float hw = b[2] / 2, hh = b[3] / 2;
    return {b[0] - hw, b[1] - hh, b[0] + hw, b[1] + hh};
  }
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// ORT's test: IoU > threshold, with empty boxes and empty overlaps never suppressing.
inline bool nms_suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float iw = std::max(std::min(a.x1, b.x1) - std::max(a.x0, b.x0), 0.0f);
  const float ih = std::max(std::min(a.y1, b.y1) - std::max(a.y0, b.y0), 0.0f);
  const float inter = iw * ih;
  if (inter <= 0) return false;
  const float area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

}  // namespace misc_detail

/// NonMaxSuppression: boxes [B, num_boxes, 4] ([y1, x1, y2, x2] corners in either order, or
/// [x_center, y_center, w, h] when center_point_box), scores [B, num_classes, num_boxes].
/// Per batch and class: candidates are the boxes whose score is > score_threshold (when
/// has_score_threshold; NaN scores never qualify), visited by score descending, ties by lower
/// box index; a candidate is kept unless its IoU with an already kept box of that class is
/// > iou_threshold; at most max_output_per_class (<= 0: none) are kept. Writes int64 triples
/// (batch, class, box) in batch, class, selection order to `selected` (room for `capacity`
/// triples; B * num_classes * min(max_output_per_class, num_boxes) always suffices) and
/// returns how many; returns -1 if they do not fit. Arithmetic in float, as ORT.
/// scratch: nms_scratch_bytes(num_boxes) bytes.
inline int64_t non_max_suppression(int64_t B, int64_t num_boxes, int64_t num_classes,
                                   const float* boxes, const float* scores,
                                   int64_t max_output_per_class, float iou_threshold,
                                   float score_threshold, int has_score_threshold,
                                   int center_point_box, int64_t* selected, int64_t capacity,
                                   void* scratch) {
  int64_t* order = static_cast<int64_t*>(scratch);
  int64_t* kept = order + num_boxes;
  int64_t total = 0;
  if (max_output_per_class <= 0) return 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < num_classes; ++c) {
      const float* s = scores + (b * num_classes + c) * num_boxes;
      const float* bx = boxes + b * num_boxes * 4;
      int64_t n = 0;
      for (int64_t i = 0; i < num_boxes; ++i) {
        if (s[i] != s[i]) continue;
        if (has_score_threshold && !(s[i] > score_threshold)) continue;
        order[n++] = i;
      }
      std::sort(order, order + n,
                [s](int64_t i, int64_t j) { return s[i] > s[j] || (s[i] == s[j] && i < j); });
      int64_t nkept = 0;
      for (int64_t k = 0; k < n && nkept < max_output_per_class; ++k) {
        const misc_detail::Box cand = misc_detail::nms_box(bx + order[k] * 4, center_point_box);
        bool suppressed = false;
        for (int64_t j = 0; j < nkept && !suppressed; ++j)
          suppressed = misc_detail::nms_suppresses(
              misc_detail::nms_box(bx + kept[j] * 4, center_point_box), cand, iou_threshold);
        if (suppressed) continue;
        kept[nkept++] = order[k];
        if (total >= capacity) return -1;
        selected[total * 3 + 0] = b;
        selected[total * 3 + 1] = c;
        selected[total * 3 + 2] = order[k];
        ++total;
      }
    }
  return total;
}

}  // namespace kiln_ref
