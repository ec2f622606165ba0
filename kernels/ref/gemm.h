// kiln reference kernels: Gemm, batched MatMul, MatMulInteger and QLinearMatMul.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"
#include "epilogue.h"

// Matrices are row-major. Sums run over k in increasing order and accumulate in the element
// type (int32 for the integer kernels); integer arithmetic wraps instead of overflowing. Outputs
// must not alias inputs.

namespace kiln_ref {

namespace gemm_detail {

template <class T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

/// acc + a * b, wrapping for integers.
template <class T>
inline T mul_add(T acc, T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(Wide<T>(acc) + Wide<T>(a) * Wide<T>(b));
  else
    return T(acc + a * b);
}

/// y[i, :] = sum_k a[i, k] * b[k, :] for an M x K by K x N product, streaming b's rows.
template <class T>
inline void matmul_2d(int64_t M, int64_t N, int64_t K, const T* a, const T* b, T* y) {
  for (int64_t i = 0; i < M; ++i) {
    T* yr = y + i * N;
    for (int64_t j = 0; j < N; ++j) yr[j] = T(0);
    for (int64_t k = 0; k < K; ++k) {
      const T av = a[i * K + k];
      const T* br = b + k * N;
      for (int64_t j = 0; j < N; ++j) yr[j] = mul_add(yr[j], av, br[j]);
    }
  }
}

/// Calls body(a_offset, b_offset, y_offset) once per batch of a batched matmul.
template <class Body>
inline void for_each_batch(int batch_rank, const int64_t* batch_dims,
                           const int64_t* a_batch_strides, const int64_t* b_batch_strides,
                           int64_t y_matrix_size, Body body) {
  const int64_t* strides[2] = {a_batch_strides, b_batch_strides};
  int64_t y_off = 0;
  for_each_index<2>(batch_rank, batch_dims, strides, [&](const int64_t* o) {
    body(o[0], o[1], y_off);
    y_off += y_matrix_size;
  });
}

}  // namespace gemm_detail

/// Gemm: y = alpha * op(a) * op(b) + beta * c, with y [M, N]; op(a) is [M, K] (a is stored
/// [K, M] when trans_a), op(b) is [K, N] (stored [N, K] when trans_b). c is optional (nullptr)
/// and broadcast through its own strides: element (i, j) is c[i * c_stride_m + j * c_stride_n]
/// (a [N] or [1, N] bias has c_stride_m = 0, c_stride_n = 1; [M, 1] has 1, 0; a scalar 0, 0).
/// beta == 0 skips c (as onnxruntime does). Float and integer types; integer types with alpha
/// and beta of 1 compute exactly (wrapping), otherwise the epilogue runs in double and
/// truncates.
/// epi (epilogue.h) is applied to each finished row of y.
template <class T, class Epi = NoEpilogue>
inline void gemm(int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, float alpha,
                 const T* a, const T* b, float beta, const T* c, int64_t c_stride_m,
                 int64_t c_stride_n, T* y, Epi epi = Epi()) {
  const int64_t a_si = trans_a ? 1 : K, a_sk = trans_a ? M : 1;
  for (int64_t i = 0; i < M; ++i) {
    T* yr = y + i * N;
    if (trans_b) {
      for (int64_t j = 0; j < N; ++j) {
        T acc = T(0);
        for (int64_t k = 0; k < K; ++k)
          acc = gemm_detail::mul_add(acc, a[i * a_si + k * a_sk], b[j * K + k]);
        yr[j] = acc;
      }
    } else {
      for (int64_t j = 0; j < N; ++j) yr[j] = T(0);
      for (int64_t k = 0; k < K; ++k) {
        const T av = a[i * a_si + k * a_sk];
        const T* br = b + k * N;
        for (int64_t j = 0; j < N; ++j) yr[j] = gemm_detail::mul_add(yr[j], av, br[j]);
      }
    }
    const bool use_c = c != nullptr && beta != 0.0f;
    for (int64_t j = 0; j < N; ++j) {
      const T cv = use_c ? c[i * c_stride_m + j * c_stride_n] : T(0);
      if constexpr (std::is_floating_point_v<T>) {
        T v = alpha == 1.0f ? yr[j] : T(T(alpha) * yr[j]);
        if (use_c) v = T(v + (beta == 1.0f ? cv : T(T(beta) * cv)));
        yr[j] = v;
      } else if (alpha == 1.0f && (beta == 1.0f || !use_c)) {
        yr[j] = T(gemm_detail::Wide<T>(yr[j]) + gemm_detail::Wide<T>(cv));
      } else {
        yr[j] = T(double(alpha) * double(yr[j]) + (use_c ? double(beta) * double(cv) : 0.0));
      }
    }
    epi(yr, i * N, N);
  }
}

/// Batched MatMul with numpy broadcasting: y[batch..., M, N] = a[batch..., M, K] @
/// b[batch..., K, N]. batch_dims (batch_rank entries, 0 for plain 2-D) are the output's batch
/// dims; a_batch_strides / b_batch_strides give, per output batch dim, the operand's element
/// stride (its M*K or K*N matrix size times the product of its later batch dims), 0 where it
/// broadcasts (or lacks the dim). 1-D operands are the caller's: pass a [K] as M = 1 and b [K] as
/// N = 1 (then drop that dim from the output shape). y is contiguous.
template <class T>
inline void matmul(int batch_rank, const int64_t* batch_dims, const int64_t* a_batch_strides,
                   const int64_t* b_batch_strides, int64_t M, int64_t N, int64_t K, const T* a,
                   const T* b, T* y) {
  gemm_detail::for_each_batch(batch_rank, batch_dims, a_batch_strides, b_batch_strides, M * N,
                              [&](int64_t ao, int64_t bo, int64_t yo) {
                                gemm_detail::matmul_2d(M, N, K, a + ao, b + bo, y + yo);
                              });
}

/// MatMul with a fused epilogue (epilogue.h) applied to each finished row of N outputs.
template <class T, class Epi>
inline void matmul_fused(int batch_rank, const int64_t* batch_dims, const int64_t* a_batch_strides,
                         const int64_t* b_batch_strides, int64_t M, int64_t N, int64_t K,
                         const T* a, const T* b, T* y, Epi epi) {
  gemm_detail::for_each_batch(batch_rank, batch_dims, a_batch_strides, b_batch_strides, M * N,
                              [&](int64_t ao, int64_t bo, int64_t yo) {
                                gemm_detail::matmul_2d(M, N, K, a + ao, b + bo, y + yo);
                                for (int64_t i = 0; i < M; ++i)
                                  epi(y + yo + i * N, yo + i * N, N);
                              });
}

/// MatMulInteger: y (int32) = (a - a_zero_point) @ (b - b_zero_point), batched as matmul. a, b
/// are (u)int8. a_zero_point: nullptr (0), a scalar (a_zp_stride 0) or per row of a, [M]
/// (a_zp_stride 1, the same for every batch). b_zero_point likewise: scalar or per column, [N].
/// Sums wrap in int32 (as onnxruntime's).
template <class TA, class TB>
inline void matmul_integer(int batch_rank, const int64_t* batch_dims,
                           const int64_t* a_batch_strides, const int64_t* b_batch_strides,
                           int64_t M, int64_t N, int64_t K, const TA* a, const TA* a_zero_point,
                           int64_t a_zp_stride, const TB* b, const TB* b_zero_point,
                           int64_t b_zp_stride, int32_t* y) {
  gemm_detail::for_each_batch(
      batch_rank, batch_dims, a_batch_strides, b_batch_strides, M * N,
      [&](int64_t ao, int64_t bo, int64_t yo) {
        for (int64_t i = 0; i < M; ++i) {
          int32_t* yr = y + yo + i * N;
          for (int64_t j = 0; j < N; ++j) yr[j] = 0;
          const int32_t az = a_zero_point ? int32_t(a_zero_point[i * a_zp_stride]) : 0;
          for (int64_t k = 0; k < K; ++k) {
            const int32_t av = int32_t(a[ao + i * K + k]) - az;
            const TB* br = b + bo + k * N;
            for (int64_t j = 0; j < N; ++j) {
              const int32_t bz = b_zero_point ? int32_t(b_zero_point[j * b_zp_stride]) : 0;
              yr[j] = gemm_detail::mul_add(yr[j], av, int32_t(int32_t(br[j]) - bz));
            }
          }
        }
      });
}

/// Requantizes an int32 accumulator the way onnxruntime (MLAS) does:
/// saturate(round_half_even(float(acc) * multiplier) + zero_point) into TY's range.
template <class TY>
inline TY requantize(int32_t acc, float multiplier, TY zero_point) {
  const float scaled = std::nearbyint(float(acc) * multiplier);
  double v = double(scaled) + double(zero_point);
  const double lo = double(std::numeric_limits<TY>::lowest());
  const double hi = double(std::numeric_limits<TY>::max());
  if (!(v >= lo)) v = lo;  // also maps NaN to the lower bound
  if (v > hi) v = hi;
  return TY(v);
}

/// QLinearMatMul: y = requantize((a - a_zp) @ (b - b_zp), a_scale * b_scale / y_scale, y_zp),
/// batched as matmul; a, b, y are (u)int8. a's scale and zero point are per tensor; b's are per
/// tensor (b_q_stride 0) or per column, [N] (b_q_stride 1); y's per tensor. The multiplier is
/// formed in float as (a_scale * b_scale) / y_scale and applied by requantize().
template <class TA, class TB, class TY>
inline void qlinear_matmul(int batch_rank, const int64_t* batch_dims,
                           const int64_t* a_batch_strides, const int64_t* b_batch_strides,
                           int64_t M, int64_t N, int64_t K, const TA* a, float a_scale,
                           TA a_zero_point, const TB* b, const float* b_scale,
                           const TB* b_zero_point, int64_t b_q_stride, float y_scale,
                           TY y_zero_point, TY* y) {
  gemm_detail::for_each_batch(
      batch_rank, batch_dims, a_batch_strides, b_batch_strides, M * N,
      [&](int64_t ao, int64_t bo, int64_t yo) {
        for (int64_t i = 0; i < M; ++i) {
          for (int64_t j = 0; j < N; ++j) {
            const int32_t bz = int32_t(b_zero_point[j * b_q_stride]);
            int32_t acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc = gemm_detail::mul_add(acc, int32_t(int32_t(a[ao + i * K + k]) - a_zero_point),
                                         int32_t(int32_t(b[bo + k * N + j]) - bz));
            const float multiplier = a_scale * b_scale[j * b_q_stride] / y_scale;
            y[yo + i * N + j] = requantize<TY>(acc, multiplier, y_zero_point);
          }
        }
      });
}

}  // namespace kiln_ref
