// kiln reference kernels: N-d Conv, ConvInteger and ConvTranspose (direct loops, no scratch).
#pragma once

#include <cstdint>
#include <type_traits>

#include "common.h"
#include "epilogue.h"
#include "gemm.h"

// Shared conventions (also used by pool.h):
//  * Tensors are row-major NC + spatial ("NCHW"): x is [N, C, in_dims...], y is
//    [N, M, out_dims...]. `rank` is the number of spatial dims (1, 2, 3, ... up to
//    kMaxRank - 2).
//  * Per-axis attributes are arrays of `rank` entries: kernel, strides, dilations. `pads` is
//    ONNX's layout [begin_0 .. begin_{rank-1}, end_0 .. end_{rank-1}]; the caller resolves
//    auto_pad (SAME_UPPER/SAME_LOWER/VALID) into explicit pads and computes out_dims (shape
//    inference owns those rules). Only the begin pads (and, for pooling, the end pads) enter
//    the arithmetic; windows are clipped to the input, so padded positions contribute nothing.
//  * Accumulation is in the output's element type, summing over input channels, then kernel
//    positions in row-major order, for each output element.

namespace kiln_ref {

namespace sliding {

/// Floor/ceil division by a positive divisor, for numerators of either sign.
inline int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

/// The candidates t in [0, n) whose position t * step + offset lies in [0, limit), as the
/// half-open range [*lo, *hi) (empty when *lo == *hi). step > 0.
inline void valid_range(int64_t n, int64_t limit, int64_t step, int64_t offset, int64_t* lo,
                        int64_t* hi) {
  int64_t l = offset >= 0 ? 0 : ceil_div(-offset, step);
  int64_t h = limit - 1 - offset < 0 ? 0 : floor_div(limit - 1 - offset, step) + 1;
  if (h > n) h = n;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/// Calls body(a, b) for every point t of the box lo <= t < hi (rank dims, row-major order),
/// where a = a0 + sum(t[d] * a_step[d]) and b = b0 + sum(t[d] * b_step[d]). rank 0 is one point.
template <class Body>
inline void for_box(int rank, const int64_t* lo, const int64_t* hi, const int64_t* a_step,
                    const int64_t* b_step, int64_t a0, int64_t b0, Body body) {
  for (int d = 0; d < rank; ++d)
    if (lo[d] >= hi[d]) return;
  if (rank == 0) {
    body(a0, b0);
    return;
  }
  int64_t t[kMaxRank];
  int64_t a = a0, b = b0;
  for (int d = 0; d < rank; ++d) {
    t[d] = lo[d];
    a += lo[d] * a_step[d];
    b += lo[d] * b_step[d];
  }
  const int last = rank - 1;
  for (;;) {
    int64_t ai = a, bi = b;
    for (int64_t k = lo[last]; k < hi[last]; ++k, ai += a_step[last], bi += b_step[last])
      body(ai, bi);
    int d = last - 1;
    for (; d >= 0; --d) {
      ++t[d];
      a += a_step[d];
      b += b_step[d];
      if (t[d] < hi[d]) break;
      a -= (t[d] - lo[d]) * a_step[d];
      b -= (t[d] - lo[d]) * b_step[d];
      t[d] = lo[d];
    }
    if (d < 0) return;
  }
}

/// Row-major strides of dims; returns the element count.
inline int64_t row_major(int rank, const int64_t* dims, int64_t* strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= dims[d];
  }
  return s;
}

/// acc + a * b; integer arithmetic wraps instead of overflowing.
template <class T>
inline T mul_add(T acc, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return T(U(acc) + U(a) * U(b));
  } else {
    return T(acc + a * b);
  }
}

}  // namespace sliding

namespace conv_detail {

/// Shared body of conv and conv_integer: y = sum over (c, k) of (x - x_zero) * (w - w_zero[m]).
template <class TX, class TW, class TY, class Epi = NoEpilogue>
inline void conv_core(int rank, int64_t N, int64_t C, const int64_t* in_dims, int64_t M,
                      const int64_t* kernel, const int64_t* out_dims, const int64_t* strides,
                      const int64_t* dilations, const int64_t* pads, int64_t group, const TX* x,
                      TY x_zero, const TW* w, const TW* w_zero, int64_t w_zero_stride,
                      const TY* bias, TY* y, Epi epi = Epi()) {
  int64_t in_strides[kMaxRank], out_strides[kMaxRank], k_strides[kMaxRank];
  int64_t x_step[kMaxRank], lo[kMaxRank], hi[kMaxRank];
  const int64_t in_size = sliding::row_major(rank, in_dims, in_strides);
  const int64_t out_size = sliding::row_major(rank, out_dims, out_strides);
  const int64_t k_size = sliding::row_major(rank, kernel, k_strides);
  for (int d = 0; d < rank; ++d) x_step[d] = strides[d] * in_strides[d];
  const int64_t cg = C / group, mg = M / group;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / mg;
      TY* yp = y + (n * M + m) * out_size;
      const TY init = bias ? bias[m] : TY(0);
      for (int64_t i = 0; i < out_size; ++i) yp[i] = init;
      const TY wz = w_zero ? TY(w_zero[m * w_zero_stride]) : TY(0);
      for (int64_t c = 0; c < cg; ++c) {
        const TX* xp = x + (n * C + g * cg + c) * in_size;
        const TW* wp = w + (m * cg + c) * k_size;
        for (int64_t kk = 0; kk < k_size; ++kk) {
          // Output positions o whose tap o * stride - pad + k * dilation lands in the input.
          int64_t x0 = 0;
          for (int d = 0; d < rank; ++d) {
            const int64_t k = (kk / k_strides[d]) % kernel[d];
            const int64_t off = k * dilations[d] - pads[d];
            sliding::valid_range(out_dims[d], in_dims[d], strides[d], off, &lo[d], &hi[d]);
            x0 += off * in_strides[d];
          }
          const TY wv = TY(TY(wp[kk]) - wz);
          sliding::for_box(rank, lo, hi, x_step, out_strides, x0, 0, [&](int64_t xi, int64_t yi) {
            yp[yi] = sliding::mul_add(yp[yi], TY(TY(xp[xi]) - x_zero), wv);
          });
        }
      }
      epi(yp, (n * M + m) * out_size, out_size);
    }
  }
}

}  // namespace conv_detail

/// Conv (float types). x: [N, C, in_dims...]; w: [M, C / group, kernel...]; bias: [M] or
/// nullptr; y: [N, M, out_dims...]. C and M must be divisible by group (group = C, M = k * C is
/// depthwise). Output channel m reads input channels [g * C/group, (g+1) * C/group) with
/// g = m / (M / group). See the shared conventions above for pads/out_dims. x and y must not
/// alias. No scratch.
template <class T>
inline void conv(int rank, int64_t N, int64_t C, const int64_t* in_dims, int64_t M,
                 const int64_t* kernel, const int64_t* out_dims, const int64_t* strides,
                 const int64_t* dilations, const int64_t* pads, int64_t group, const T* x,
                 const T* w, const T* bias, T* y) {
  conv_detail::conv_core<T, T, T>(rank, N, C, in_dims, M, kernel, out_dims, strides, dilations,
                                  pads, group, x, T(0), w, nullptr, 0, bias, y);
}

/// Conv with a fused epilogue (epilogue.h) applied to each finished output plane [n, m]:
/// y = epi(conv(x, w) + bias). Same arguments as conv otherwise.
template <class T, class Epi>
inline void conv_fused(int rank, int64_t N, int64_t C, const int64_t* in_dims, int64_t M,
                       const int64_t* kernel, const int64_t* out_dims, const int64_t* strides,
                       const int64_t* dilations, const int64_t* pads, int64_t group, const T* x,
                       const T* w, const T* bias, T* y, Epi epi) {
  conv_detail::conv_core<T, T, T, Epi>(rank, N, C, in_dims, M, kernel, out_dims, strides,
                                       dilations, pads, group, x, T(0), w, nullptr, 0, bias, y,
                                       epi);
}

/// ConvInteger: as conv with x, w of (u)int8 types and y int32:
/// y = sum((x - x_zero_point) * (w - w_zero_point[m])). Padding is x_zero_point, so padded taps
/// contribute 0. w_zero_point may be nullptr (0), a scalar (w_zero_stride 0) or per output
/// channel [M] (w_zero_stride 1). Products and sums wrap in int32 like onnxruntime's.
template <class TX, class TW>
inline void conv_integer(int rank, int64_t N, int64_t C, const int64_t* in_dims, int64_t M,
                         const int64_t* kernel, const int64_t* out_dims, const int64_t* strides,
                         const int64_t* dilations, const int64_t* pads, int64_t group, const TX* x,
                         TX x_zero_point, const TW* w, const TW* w_zero_point,
                         int64_t w_zero_stride, int32_t* y) {
  conv_detail::conv_core<TX, TW, int32_t>(rank, N, C, in_dims, M, kernel, out_dims, strides,
                                          dilations, pads, group, x, int32_t(x_zero_point), w,
                                          w_zero_point, w_zero_stride, nullptr, y);
}

/// QLinearConv: acc = conv_integer(x, w) + bias (int32, wrapping), then
/// y = requantize(acc, x_scale * w_scale[m] / y_scale, y_zero_point) as qlinear_matmul does.
/// w_scale and w_zero_point are per tensor (w_q_stride 0) or per output channel, [M]
/// (w_q_stride 1). bias: [M] or nullptr. acc: scratch of N * M * prod(out_dims) int32.
template <class TX, class TW, class TY>
inline void qlinear_conv(int rank, int64_t N, int64_t C, const int64_t* in_dims, int64_t M,
                         const int64_t* kernel, const int64_t* out_dims, const int64_t* strides,
                         const int64_t* dilations, const int64_t* pads, int64_t group, const TX* x,
                         float x_scale, TX x_zero_point, const TW* w, const float* w_scale,
                         const TW* w_zero_point, int64_t w_q_stride, float y_scale, TY y_zero_point,
                         const int32_t* bias, int32_t* acc, TY* y) {
  conv_detail::conv_core<TX, TW, int32_t>(rank, N, C, in_dims, M, kernel, out_dims, strides,
                                          dilations, pads, group, x, int32_t(x_zero_point), w,
                                          w_zero_point, w_q_stride, bias, acc);
  int64_t out_size = 1;
  for (int d = 0; d < rank; ++d) out_size *= out_dims[d];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const float multiplier = x_scale * w_scale[m * w_q_stride] / y_scale;
      const int64_t base = (n * M + m) * out_size;
      for (int64_t i = 0; i < out_size; ++i)
        y[base + i] = requantize<TY>(acc[base + i], multiplier, y_zero_point);
    }
}

/// ConvTranspose (float types). x: [N, C, in_dims...]; w: [C, M / group, kernel...] (note: input
/// channels first); bias: [M] or nullptr; y: [N, M, out_dims...]. Every input position i and
/// kernel tap k add x[i] * w[k] to y at o = i * stride + k * dilation - pad_begin when o is
/// inside out_dims. The caller computes out_dims (from output_shape, or
/// stride * (in - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end) and the
/// begin pads (for output_shape / auto_pad, from the total padding as ONNX prescribes);
/// output_padding needs no other handling: the extra positions get only bias and the taps that
/// reach them. x and y must not alias. No scratch.
template <class T>
inline void conv_transpose(int rank, int64_t N, int64_t C, const int64_t* in_dims, int64_t M,
                           const int64_t* kernel, const int64_t* out_dims, const int64_t* strides,
                           const int64_t* dilations, const int64_t* pads, int64_t group, const T* x,
                           const T* w, const T* bias, T* y) {
  int64_t in_strides[kMaxRank], out_strides[kMaxRank], k_strides[kMaxRank];
  int64_t y_step[kMaxRank], lo[kMaxRank], hi[kMaxRank];
  const int64_t in_size = sliding::row_major(rank, in_dims, in_strides);
  const int64_t out_size = sliding::row_major(rank, out_dims, out_strides);
  const int64_t k_size = sliding::row_major(rank, kernel, k_strides);
  for (int d = 0; d < rank; ++d) y_step[d] = strides[d] * out_strides[d];
  const int64_t cg = C / group, mg = M / group;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t m = 0; m < M; ++m) {
      const int64_t g = m / mg, mi = m % mg;
      T* yp = y + (n * M + m) * out_size;
      const T init = bias ? bias[m] : T(0);
      for (int64_t i = 0; i < out_size; ++i) yp[i] = init;
      for (int64_t c = 0; c < cg; ++c) {
        const T* xp = x + (n * C + g * cg + c) * in_size;
        const T* wp = w + ((g * cg + c) * mg + mi) * k_size;
        for (int64_t kk = 0; kk < k_size; ++kk) {
          // Input positions i whose target i * stride + k * dilation - pad lands in the output.
          int64_t y0 = 0;
          for (int d = 0; d < rank; ++d) {
            const int64_t k = (kk / k_strides[d]) % kernel[d];
            const int64_t off = k * dilations[d] - pads[d];
            sliding::valid_range(in_dims[d], out_dims[d], strides[d], off, &lo[d], &hi[d]);
            y0 += off * out_strides[d];
          }
          const T wv = wp[kk];
          sliding::for_box(rank, lo, hi, in_strides, y_step, 0, y0,
                           [&](int64_t xi, int64_t yi) { yp[yi] = T(yp[yi] + xp[xi] * wv); });
        }
      }
    }
  }
}

}  // namespace kiln_ref
