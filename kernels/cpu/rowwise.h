// kiln optimized CPU kernels: f32 Softmax, LogSoftmax and LayerNormalization over the last
// axis (rows of `cols` contiguous values), vectorized along the row and split over rows between
// threads (never within a row: every reduction runs in one fixed order, so results are
// identical at any thread count).
//
// Softmax: max, then e = exp(x - max) with kiln_cpu::vexp and the sum of e, then e / sum. A row
// holding a NaN or an infinity goes through kiln_ref::softmax instead, which defines those
// cases. LayerNorm: mean and variance in f32 by lane sums (two passes), then
// (x - mean) * inv_std * scale + bias; Mean and InvStdDev outputs are optional.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln_ref/softmax.h"
#include "parallel.h"
#include "vmath.h"

namespace kiln_cpu {

namespace rowwise_detail {

/// Lane-wise max of x[0:n) and whether all values are finite.
inline float row_max(const float* x, int64_t n, bool* finite) {
  constexpr int L = V::kLanes;
  V::R m = V::set1(-std::numeric_limits<float>::infinity()), bad = V::zero();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V::R v = V::load(x + i);
    m = V::max(v, m);
    bad = V::add(bad, V::sub(v, v));  // NaN when v is NaN or infinite
  }
  alignas(64) float t[L];
  V::store(t, m);
  float mx = t[0];
  for (int k = 1; k < L; ++k) mx = t[k] > mx ? t[k] : mx;
  float tail_bad = 0.0f;
  for (; i < n; ++i) {
    mx = x[i] > mx ? x[i] : mx;
    tail_bad += x[i] - x[i];
  }
  *finite = V::reduce_add(bad) == 0.0f && tail_bad == 0.0f;
  return mx;
}

/// y = exp(x - mx) for one row (not stored when y is null), returning the sum (lane sums, then
/// the tail, in order).
inline float exp_row(const float* x, float mx, int64_t n, float* y) {
  constexpr int L = V::kLanes;
  const V::R vm = V::set1(mx);
  V::R s = V::zero();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const V::R e = vexp(V::sub(V::load(x + i), vm));
    if (y) V::store(y + i, e);
    s = V::add(s, e);
  }
  float sum = V::reduce_add(s);
  if (i < n) {
    const int r = int(n - i);
    const V::R e = vexp(V::sub(V::load(x + i, r), vm));
    alignas(64) float t[L];
    V::store(t, e);
    for (int k = 0; k < r; ++k) {
      if (y) y[i + k] = t[k];
      sum += t[k];
    }
  }
  return sum;
}

}  // namespace rowwise_detail

/// Softmax (log = false) or LogSoftmax (log = true) of each of `rows` rows of `cols` values.
/// x and y may be the same buffer.
inline void softmax_rows_f32(int64_t rows, int64_t cols, const float* x, float* y, bool log,
                             ThreadPool* pool) {
  if (cols == 0) return;
  constexpr int L = V::kLanes;
  parallel_for(pool, rows, [&](int64_t r, int) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    bool finite = true;
    const float mx = rowwise_detail::row_max(xr, cols, &finite);
    if (!finite) {
      if (log)
        kiln_ref::log_softmax<float>(1, cols, 1, xr, yr);
      else
        kiln_ref::softmax<float>(1, cols, 1, xr, yr);
      return;
    }
    if (log) {
      // y = (x - max) - log(sum exp(x - max)); x may be y, so the sum stores nothing.
      const float sum = rowwise_detail::exp_row(xr, mx, cols, nullptr);
      const V::R vm = V::set1(mx), ls = V::set1(std::log(sum));
      int64_t i = 0;
      for (; i + L <= cols; i += L) V::store(yr + i, V::sub(V::sub(V::load(xr + i), vm), ls));
      if (i < cols) {
        const int t = int(cols - i);
        V::store(yr + i, V::sub(V::sub(V::load(xr + i, t), vm), ls), t);
      }
      return;
    }
    const float sum = rowwise_detail::exp_row(xr, mx, cols, yr);
    const V::R inv = V::set1(1.0f / sum);
    int64_t i = 0;
    for (; i + L <= cols; i += L) V::store(yr + i, V::mul(V::load(yr + i), inv));
    if (i < cols) V::store(yr + i, V::mul(V::load(yr + i, int(cols - i)), inv), int(cols - i));
  });
}

/// LayerNormalization over the last `cols` values of each row: y = (x - mean) / sqrt(var +
/// epsilon) * scale + bias (bias may be null). mean_out / inv_std_out get one value per row when
/// not null. x and y may be the same buffer.
inline void layer_norm_rows_f32(int64_t rows, int64_t cols, const float* x, const float* scale,
                                const float* bias, float epsilon, float* y, float* mean_out,
                                float* inv_std_out, ThreadPool* pool) {
  constexpr int L = V::kLanes;
  parallel_for(pool, rows, [&](int64_t r, int) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    V::R s = V::zero();
    int64_t i = 0;
    for (; i + L <= cols; i += L) s = V::add(s, V::load(xr + i));
    float sum = V::reduce_add(s);
    for (int64_t k = i; k < cols; ++k) sum += xr[k];
    const float mean = cols ? sum / float(cols) : 0.0f;
    const V::R vm = V::set1(mean);
    V::R q = V::zero();
    for (i = 0; i + L <= cols; i += L) {
      const V::R d = V::sub(V::load(xr + i), vm);
      q = V::fma(d, d, q);
    }
    float sq = V::reduce_add(q);
    for (int64_t k = i; k < cols; ++k) sq += (xr[k] - mean) * (xr[k] - mean);
    const float var = cols ? sq / float(cols) : 0.0f;
    const float inv_std = 1.0f / std::sqrt(var + epsilon);
    const V::R vi = V::set1(inv_std);
    for (i = 0; i + L <= cols; i += L) {
      const V::R n = V::mul(V::sub(V::load(xr + i), vm), vi);
      const V::R b = bias ? V::load(bias + i) : V::zero();
      V::store(yr + i, V::fma(n, V::load(scale + i), b));
    }
    if (i < cols) {
      const int t = int(cols - i);
      const V::R n = V::mul(V::sub(V::load(xr + i, t), vm), vi);
      const V::R b = bias ? V::load(bias + i, t) : V::zero();
      V::store(yr + i, V::fma(n, V::load(scale + i, t), b), t);
    }
    if (mean_out) mean_out[r] = mean;
    if (inv_std_out) inv_std_out[r] = inv_std;
  });
}

}  // namespace kiln_cpu
