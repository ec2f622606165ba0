// kiln reference kernels: Max/Average/Lp pooling (N-d, global), MaxUnpool and MaxRoiPool.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"
#include "conv.h"

// Layout and attribute conventions are conv.h's: x is [N, C, in_dims...] and y is
// [N, C, out_dims...]; the kernels take planes = N * C. pads is ONNX's [begins..., ends...];
// the caller resolves auto_pad and computes out_dims, including ceil_mode (whose last window
// may hang past the end padding: it is clipped, never read out of bounds). Pooling reduces in
// the element type.

namespace kiln_ref {

namespace pool_detail {

/// For each output position of one plane (row-major), computes its window's taps that land
/// inside the input, as a box [lo, hi) of kernel indices, and calls
/// body(out_index, lo, hi, start) with start[d] = o[d] * stride[d] - pad_begin[d] (the input
/// coordinate of kernel index 0).
template <class Body>
inline void for_each_window(int rank, const int64_t* in_dims, const int64_t* kernel,
                            const int64_t* out_dims, const int64_t* strides,
                            const int64_t* dilations, const int64_t* pads, Body body) {
  int64_t o[kMaxRank], lo[kMaxRank], hi[kMaxRank], start[kMaxRank];
  int64_t out_count = 1;
  for (int d = 0; d < rank; ++d) {
    o[d] = 0;
    out_count *= out_dims[d];
  }
  for (int64_t e = 0; e < out_count; ++e) {
    for (int d = 0; d < rank; ++d) {
      start[d] = o[d] * strides[d] - pads[d];
      sliding::valid_range(kernel[d], in_dims[d], dilations[d], start[d], &lo[d], &hi[d]);
    }
    body(e, lo, hi, start);
    for (int d = rank - 1; d >= 0; --d) {
      if (++o[d] < out_dims[d]) break;
      o[d] = 0;
    }
  }
}

template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return (void)v, false;
}

template <class T>
inline T lowest() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}

}  // namespace pool_detail

/// MaxPool over planes = N * C planes (float types, int8, uint8). Each output is the largest
/// non-NaN tap of its window (padding is never a candidate; ties keep the first tap in
/// row-major window order); a window of only NaNs gives NaN. indices (int64, same shape as y)
/// is optional (nullptr): the flat position of the chosen tap in the whole input tensor,
/// plane * prod(in_dims) + its spatial offset, which is row-major for storage_order 0 and
/// column-major (first spatial dim fastest) for storage_order 1. A window with no tap in the
/// input (impossible with valid pads) gives -inf (lowest) and index -1.
template <class T>
inline void max_pool(int rank, int64_t planes, const int64_t* in_dims, const int64_t* kernel,
                     const int64_t* out_dims, const int64_t* strides, const int64_t* dilations,
                     const int64_t* pads, const T* x, T* y, int64_t* indices, int storage_order) {
  int64_t in_strides[kMaxRank], col_strides[kMaxRank], a_step[kMaxRank], b_step[kMaxRank];
  const int64_t in_size = sliding::row_major(rank, in_dims, in_strides);
  int64_t out_size = 1;
  for (int d = 0; d < rank; ++d) out_size *= out_dims[d];
  int64_t s = 1;
  for (int d = 0; d < rank; ++d) {
    col_strides[d] = s;
    s *= in_dims[d];
  }
  const int64_t* idx_strides = storage_order == 1 ? col_strides : in_strides;
  for (int d = 0; d < rank; ++d) {
    a_step[d] = dilations[d] * in_strides[d];
    b_step[d] = dilations[d] * idx_strides[d];
  }
  for (int64_t p = 0; p < planes; ++p) {
    const T* xp = x + p * in_size;
    T* yp = y + p * out_size;
    int64_t* ip = indices ? indices + p * out_size : nullptr;
    pool_detail::for_each_window(
        rank, in_dims, kernel, out_dims, strides, dilations, pads,
        [&](int64_t e, const int64_t* lo, const int64_t* hi, const int64_t* start) {
          int64_t a0 = 0, b0 = 0;
          for (int d = 0; d < rank; ++d) {
            a0 += start[d] * in_strides[d];
            b0 += start[d] * idx_strides[d];
          }
          T best = pool_detail::lowest<T>();
          int64_t best_index = -1, first_index = -1;
          bool found = false;
          sliding::for_box(rank, lo, hi, a_step, b_step, a0, b0, [&](int64_t a, int64_t b) {
            const T v = xp[a];
            if (first_index < 0) first_index = b;
            if (pool_detail::is_nan(v)) return;
            if (!found || v > best) {
              best = v;
              best_index = b;
              found = true;
            }
          });
          if (!found && first_index >= 0) {  // every tap is NaN
            if constexpr (std::is_floating_point_v<T>) best = std::numeric_limits<T>::quiet_NaN();
            best_index = first_index;
          }
          yp[e] = best;
          if (ip) ip[e] = best_index < 0 ? -1 : p * in_size + best_index;
        });
  }
}

/// AveragePool (float types): the sum of a window's taps that lie in the input divided by
/// their count, or, with count_include_pad, by the number of window positions inside the
/// padded extent [-pad_begin, in + pad_end) (positions past the end padding, which ceil_mode
/// can create, are never counted, as in onnxruntime). A window with nothing to count gives 0.
template <class T>
inline void average_pool(int rank, int64_t planes, const int64_t* in_dims, const int64_t* kernel,
                         const int64_t* out_dims, const int64_t* strides, const int64_t* dilations,
                         const int64_t* pads, bool count_include_pad, const T* x, T* y) {
  int64_t in_strides[kMaxRank], a_step[kMaxRank];
  const int64_t in_size = sliding::row_major(rank, in_dims, in_strides);
  int64_t out_size = 1;
  for (int d = 0; d < rank; ++d) {
    out_size *= out_dims[d];
    a_step[d] = dilations[d] * in_strides[d];
  }
  for (int64_t p = 0; p < planes; ++p) {
    const T* xp = x + p * in_size;
    T* yp = y + p * out_size;
    pool_detail::for_each_window(
        rank, in_dims, kernel, out_dims, strides, dilations, pads,
        [&](int64_t e, const int64_t* lo, const int64_t* hi, const int64_t* start) {
          int64_t a0 = 0, count = 1;
          for (int d = 0; d < rank; ++d) {
            a0 += start[d] * in_strides[d];
            if (count_include_pad) {
              int64_t plo = 0, phi = 0;
              sliding::valid_range(kernel[d], in_dims[d] + pads[d] + pads[rank + d], dilations[d],
                                   start[d] + pads[d], &plo, &phi);
              count *= phi - plo;
            } else {
              count *= hi[d] - lo[d];
            }
          }
          T sum = T(0);
          sliding::for_box(rank, lo, hi, a_step, a_step, a0, 0,
                           [&](int64_t a, int64_t) { sum = T(sum + xp[a]); });
          yp[e] = count > 0 ? T(sum / T(count)) : T(0);
        });
  }
}

namespace pool_detail {

template <class T>
inline T pow_abs(T v, int64_t p) {
  const T a = std::fabs(v);
  if (p == 1) return a;
  if (p == 2) return T(a * a);
  return std::pow(a, T(p));
}

template <class T>
inline T root(T sum, int64_t p) {
  if (p == 1) return sum;
  if (p == 2) return std::sqrt(sum);
  return std::pow(sum, T(1) / T(p));
}

}  // namespace pool_detail

/// LpPool (float types): (sum over the window's in-input taps of |x|^p)^(1/p); padding adds 0.
/// p is ONNX's integer attribute (default 2).
template <class T>
inline void lp_pool(int rank, int64_t planes, const int64_t* in_dims, const int64_t* kernel,
                    const int64_t* out_dims, const int64_t* strides, const int64_t* dilations,
                    const int64_t* pads, int64_t p, const T* x, T* y) {
  int64_t in_strides[kMaxRank], a_step[kMaxRank];
  const int64_t in_size = sliding::row_major(rank, in_dims, in_strides);
  int64_t out_size = 1;
  for (int d = 0; d < rank; ++d) {
    out_size *= out_dims[d];
    a_step[d] = dilations[d] * in_strides[d];
  }
  for (int64_t pl = 0; pl < planes; ++pl) {
    const T* xp = x + pl * in_size;
    T* yp = y + pl * out_size;
    pool_detail::for_each_window(
        rank, in_dims, kernel, out_dims, strides, dilations, pads,
        [&](int64_t e, const int64_t* lo, const int64_t* hi, const int64_t* start) {
          int64_t a0 = 0;
          for (int d = 0; d < rank; ++d) a0 += start[d] * in_strides[d];
          T sum = T(0);
          sliding::for_box(rank, lo, hi, a_step, a_step, a0, 0, [&](int64_t a, int64_t) {
            sum = T(sum + pool_detail::pow_abs(xp[a], p));
          });
          yp[e] = pool_detail::root(sum, p);
        });
  }
}

/// GlobalAveragePool: y[p] = mean of plane p's `spatial` contiguous values (x: [planes,
/// spatial], y: [planes]; planes = N * C, spatial = prod(spatial dims)). Float types.
template <class T>
inline void global_average_pool(int64_t planes, int64_t spatial, const T* x, T* y) {
  for (int64_t p = 0; p < planes; ++p) {
    T sum = T(0);
    for (int64_t i = 0; i < spatial; ++i) sum = T(sum + x[p * spatial + i]);
    y[p] = T(sum / T(spatial));
  }
}

/// GlobalMaxPool: y[p] = max of plane p; a NaN anywhere in the plane gives NaN (numpy.max, which
/// generates ONNX's expected output). Layout as global_average_pool.
template <class T>
inline void global_max_pool(int64_t planes, int64_t spatial, const T* x, T* y) {
  for (int64_t p = 0; p < planes; ++p) {
    T best = pool_detail::lowest<T>();
    for (int64_t i = 0; i < spatial; ++i) {
      const T v = x[p * spatial + i];
      if (pool_detail::is_nan(best)) break;
      if (pool_detail::is_nan(v) || v > best) best = v;
    }
    y[p] = best;
  }
}

/// GlobalLpPool: y[p] = (sum of |x|^p over plane)^(1/p). Layout as global_average_pool.
template <class T>
inline void global_lp_pool(int64_t planes, int64_t spatial, int64_t p, const T* x, T* y) {
  for (int64_t pl = 0; pl < planes; ++pl) {
    T sum = T(0);
    for (int64_t i = 0; i < spatial; ++i)
      sum = T(sum + pool_detail::pow_abs(x[pl * spatial + i], p));
    y[pl] = pool_detail::root(sum, p);
  }
}

/// MaxUnpool: y (planes x out_dims, zero-filled here) receives every x[i] at indices[i], which
/// is a flat index into the tensor of shape [planes, idx_dims...] (as MaxPool's Indices output
/// gives it); idx_dims is the default unpool output (in - 1) * stride + kernel - pad_begin -
/// pad_end per dim. When out_dims (the optional output_shape) is larger, each position keeps its
/// coordinates and the extra trailing positions stay 0 (the ONNX reference). x, indices:
/// x_count elements. Indices outside [0, planes * prod(idx_dims)) or landing outside out_dims are
/// skipped; for duplicates the last write wins.
template <class T>
inline void max_unpool(int rank, int64_t planes, int64_t x_count, const int64_t* idx_dims,
                       const int64_t* out_dims, const T* x, const int64_t* indices, T* y) {
  int64_t out_strides[kMaxRank];
  const int64_t out_size = sliding::row_major(rank, out_dims, out_strides);
  int64_t idx_size = 1;
  for (int d = 0; d < rank; ++d) idx_size *= idx_dims[d];
  for (int64_t i = 0; i < planes * out_size; ++i) y[i] = T(0);
  for (int64_t i = 0; i < x_count; ++i) {
    const int64_t flat = indices[i];
    if (flat < 0 || idx_size == 0 || flat >= planes * idx_size) continue;
    int64_t rem = flat % idx_size, off = (flat / idx_size) * out_size;
    bool inside = true;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t coord = rem % idx_dims[d];
      rem /= idx_dims[d];
      if (coord >= out_dims[d]) inside = false;
      off += coord * out_strides[d];
    }
    if (inside) y[off] = x[i];
  }
}

/// MaxRoiPool (Caffe semantics, as onnxruntime): x: [N, C, H, W]; rois: [num_rois, 5] rows of
/// (batch_index, x1, y1, x2, y2) in input image coordinates; y: [num_rois, C, pooled_h,
/// pooled_w]. Each roi is scaled by spatial_scale and rounded (half away from zero) to a
/// pixel box of at least 1x1, split into pooled_h x pooled_w bins (floor/ceil boundaries,
/// clipped to the image). A bin's maximum ignores NaNs (lowest() if all are NaN); an empty bin
/// gives 0, an out-of-range batch index a roi of 0s. Float types.
template <class T>
inline void max_roi_pool(int64_t N, int64_t C, int64_t H, int64_t W, int64_t num_rois,
                         const T* rois, int64_t pooled_h, int64_t pooled_w, float spatial_scale,
                         const T* x, T* y) {
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); };
  for (int64_t r = 0; r < num_rois; ++r) {
    const T* roi = rois + r * 5;
    T* yr = y + r * C * pooled_h * pooled_w;
    const int64_t batch = int64_t(roi[0]);
    if (!(batch >= 0 && batch < N)) {
      for (int64_t i = 0; i < C * pooled_h * pooled_w; ++i) yr[i] = T(0);
      continue;
    }
    const T scale = T(spatial_scale);
    const int64_t x1 = int64_t(std::round(T(roi[1] * scale)));
    const int64_t y1 = int64_t(std::round(T(roi[2] * scale)));
    const int64_t x2 = int64_t(std::round(T(roi[3] * scale)));
    const int64_t y2 = int64_t(std::round(T(roi[4] * scale)));
    const int64_t roi_h = y2 - y1 + 1 < 1 ? 1 : y2 - y1 + 1;
    const int64_t roi_w = x2 - x1 + 1 < 1 ? 1 : x2 - x1 + 1;
    const T bin_h = T(T(roi_h) / T(pooled_h)), bin_w = T(T(roi_w) / T(pooled_w));
    for (int64_t c = 0; c < C; ++c) {
      const T* xp = x + (batch * C + c) * H * W;
      for (int64_t ph = 0; ph < pooled_h; ++ph) {
        const int64_t hs = clamp(int64_t(std::floor(T(ph) * bin_h)) + y1, 0, H);
        const int64_t he = clamp(int64_t(std::ceil(T(ph + 1) * bin_h)) + y1, 0, H);
        for (int64_t pw = 0; pw < pooled_w; ++pw) {
          const int64_t ws = clamp(int64_t(std::floor(T(pw) * bin_w)) + x1, 0, W);
          const int64_t we = clamp(int64_t(std::ceil(T(pw + 1) * bin_w)) + x1, 0, W);
          T best = T(0);
          if (he > hs && we > ws) {
            best = std::numeric_limits<T>::lowest();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w)
                if (xp[h * W + w] > best) best = xp[h * W + w];
          }
          yr[(c * pooled_h + ph) * pooled_w + pw] = best;
        }
      }
    }
  }
}

}  // namespace kiln_ref
