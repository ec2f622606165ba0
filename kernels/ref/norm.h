// kiln reference kernels: Batch/Instance/Layer/Group normalization, LpNormalization, LRN and
// MeanVarianceNormalization.
#pragma once

#include <cmath>
#include <cstdint>

#include "common.h"

// Layouts are row-major. "[N, C, inner]" means NCHW-style tensors viewed with all spatial dims
// flattened into inner (inner = 1 for [N, C] inputs). Float types.
//
// Precision: the statistics of Instance/Layer/Group/MeanVariance normalization and the norms
// of LpNormalization are accumulated in double and the normalized value is computed in double,
// then rounded once to T. numpy (which generates the ONNX expected outputs) sums float32
// pairwise, so a naive float32 running sum over a large plane (e.g. 224x224) drifts further from
// it than the tests' tolerance allows; double removes that drift. BatchNormalization and LRN
// compute in T, like onnxruntime.

namespace kiln_ref {

/// BatchNormalization, inference mode: y = scale * (x - mean) / sqrt(var + epsilon) + bias per
/// channel. x, y: [N, C, inner]; scale, bias, mean, var: [C]. x and y may alias.
template <class T>
inline void batch_norm(int64_t N, int64_t C, int64_t inner, const T* x, const T* scale,
                       const T* bias, const T* mean, const T* var, float epsilon, T* y) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const T sd = std::sqrt(T(var[c] + T(epsilon)));
      const T s = scale[c], b = bias[c], m = mean[c];
      const int64_t base = (n * C + c) * inner;
      for (int64_t i = 0; i < inner; ++i) y[base + i] = T(s * T(x[base + i] - m) / sd + b);
    }
  }
}

/// BatchNormalization, training mode (opset 14+): per channel, the batch mean and population
/// variance over N and inner (in double) normalize x: y = scale * (x - mean) /
/// sqrt(var + epsilon) + bias; running_mean = input_mean * momentum + mean * (1 - momentum) and
/// running_var likewise (each may be nullptr). x, y: [N, C, inner]; the rest [C]. N * inner must
/// be > 0. x and y may alias (a channel's values are all read before any is written).
template <class T>
inline void batch_norm_training(int64_t N, int64_t C, int64_t inner, const T* x, const T* scale,
                                const T* bias, const T* input_mean, const T* input_var,
                                float epsilon, float momentum, T* y, T* running_mean,
                                T* running_var) {
  const double count = double(N * inner);
  for (int64_t c = 0; c < C; ++c) {
    double sum = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) sum += double(x[(n * C + c) * inner + i]);
    const double mean = sum / count;
    double sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const double d = double(x[(n * C + c) * inner + i]) - mean;
        sq += d * d;
      }
    const double var = sq / count;
    const double inv_std = 1.0 / std::sqrt(var + double(epsilon));
    const double s = double(scale[c]), b = double(bias[c]);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t e = (n * C + c) * inner + i;
        y[e] = T(s * (double(x[e]) - mean) * inv_std + b);
      }
    const double mo = double(momentum);
    if (running_mean) running_mean[c] = T(double(input_mean[c]) * mo + mean * (1.0 - mo));
    if (running_var) running_var[c] = T(double(input_var[c]) * mo + var * (1.0 - mo));
  }
}

namespace norm_detail {

/// Mean and 1/sqrt(variance + epsilon) of n contiguous values (two passes, in double).
template <class T>
inline void moments(const T* x, int64_t n, double epsilon, double* mean, double* inv_std) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i]);
  const double m = sum / double(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = double(x[i]) - m;
    sq += d * d;
  }
  *mean = m;
  *inv_std = 1.0 / std::sqrt(sq / double(n) + epsilon);
}

}  // namespace norm_detail

/// InstanceNormalization: per (n, c) plane, y = scale[c] * (x - mean) / sqrt(var + epsilon) +
/// bias[c] with the plane's mean and (population) variance. x, y: [N, C, inner]; scale, bias:
/// [C]. x and y may alias.
template <class T>
inline void instance_norm(int64_t N, int64_t C, int64_t inner, const T* x, const T* scale,
                          const T* bias, float epsilon, T* y) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      const int64_t base = (n * C + c) * inner;
      double mean = 0, inv_std = 0;
      norm_detail::moments(x + base, inner, double(epsilon), &mean, &inv_std);
      const double s = double(scale[c]) * inv_std, b = double(bias[c]);
      for (int64_t i = 0; i < inner; ++i) y[base + i] = T((double(x[base + i]) - mean) * s + b);
    }
  }
}

/// LayerNormalization: x viewed as [rows, cols] where rows = prod(dims[:axis]) and cols =
/// prod(dims[axis:]); each row is normalized, then y = normalized * scale + bias. scale and
/// bias are [cols] (the caller expands any broadcast to the normalized shape); bias may be
/// nullptr. mean_out and inv_std_out ([rows], element type U: the stash_type, float in ONNX)
/// are optional (nullptr). Variance is the population variance; inv_std = 1/sqrt(var + eps).
/// Computation is in double (at least as precise as stash_type=1 asks). x and y may alias.
template <class T, class U = T>
inline void layer_norm(int64_t rows, int64_t cols, const T* x, const T* scale, const T* bias,
                       float epsilon, T* y, U* mean_out, U* inv_std_out) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    double mean = 0, inv_std = 0;
    norm_detail::moments(xr, cols, double(epsilon), &mean, &inv_std);
    for (int64_t i = 0; i < cols; ++i) {
      const double v = (double(xr[i]) - mean) * inv_std * double(scale[i]);
      yr[i] = T(bias ? v + double(bias[i]) : v);
    }
    if (mean_out) mean_out[r] = U(mean);
    if (inv_std_out) inv_std_out[r] = U(inv_std);
  }
}

/// GroupNormalization: channels are split into `groups` consecutive groups of C / groups; each
/// (n, group) block of (C / groups) * inner values is normalized with its mean and population
/// variance, then y = normalized * scale + bias with per-channel scale/bias ([C], opset 21) or,
/// when scale_per_group, per-group scale/bias ([groups], opset 18). x, y: [N, C, inner]; C must
/// be divisible by groups. x and y may alias.
template <class T>
inline void group_norm(int64_t N, int64_t C, int64_t inner, int64_t groups, const T* x,
                       const T* scale, const T* bias, bool scale_per_group, float epsilon, T* y) {
  const int64_t cg = C / groups;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t base = (n * C + g * cg) * inner;
      double mean = 0, inv_std = 0;
      norm_detail::moments(x + base, cg * inner, double(epsilon), &mean, &inv_std);
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t k = scale_per_group ? g : g * cg + c;
        const double s = double(scale[k]) * inv_std, b = double(bias[k]);
        const int64_t off = base + c * inner;
        for (int64_t i = 0; i < inner; ++i) y[off + i] = T((double(x[off + i]) - mean) * s + b);
      }
    }
  }
}

/// LpNormalization along one axis: y = x / ||x||_p (p = 1 or 2) over the axis; x, y are
/// [outer, n, inner] with n the axis size. A zero norm gives y = 0 (as onnxruntime does). x and
/// y may alias.
template <class T>
inline void lp_norm(int64_t outer, int64_t n, int64_t inner, int64_t p, const T* x, T* y) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const int64_t base = o * n * inner + j;
      double acc = 0;
      for (int64_t a = 0; a < n; ++a) {
        const double v = double(x[base + a * inner]);
        acc += p == 1 ? std::fabs(v) : v * v;
      }
      const double norm = p == 1 ? acc : std::sqrt(acc);
      for (int64_t a = 0; a < n; ++a)
        y[base + a * inner] = norm == 0 ? T(0) : T(double(x[base + a * inner]) / norm);
    }
  }
}

/// LRN (across channels): y = x / (bias + alpha / size * square_sum)^beta where square_sum sums
/// x^2 over channels [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] clipped to [0, C).
/// x, y: [N, C, inner]. y is used as the accumulator, so x and y must not alias.
template <class T>
inline void lrn(int64_t N, int64_t C, int64_t inner, int64_t size, float alpha, float beta,
                float bias, const T* x, T* y) {
  const T scale = T(double(alpha) / double(size));
  const int64_t before = (size - 1) / 2, after = size / 2;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      T* yr = y + (n * C + c) * inner;
      for (int64_t i = 0; i < inner; ++i) yr[i] = T(0);
      const int64_t lo = c - before < 0 ? 0 : c - before;
      const int64_t hi = c + after >= C ? C - 1 : c + after;
      for (int64_t k = lo; k <= hi; ++k) {
        const T* xk = x + (n * C + k) * inner;
        for (int64_t i = 0; i < inner; ++i) yr[i] = T(yr[i] + xk[i] * xk[i]);
      }
      const T* xc = x + (n * C + c) * inner;
      for (int64_t i = 0; i < inner; ++i)
        yr[i] = T(xc[i] / std::pow(T(T(bias) + scale * yr[i]), T(beta)));
    }
  }
}

/// MeanVarianceNormalization: y = (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) with the
/// statistics taken over the dims whose `reduced` entry is nonzero (ONNX default axes
/// [0, 2, 3]). x, y: row-major with `dims`. The variance is clamped at 0, so a constant input
/// gives 0 instead of the NaN that rounding could otherwise produce. x and y may alias.
template <class T>
inline void mean_variance_norm(int rank, const int64_t* dims, const int64_t* reduced, const T* x,
                               T* y) {
  int64_t kept_dims[kMaxRank], kept_strides[kMaxRank], red_dims[kMaxRank], red_strides[kMaxRank];
  int kept_rank = 0, red_rank = 0;
  int64_t stride = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      red_dims[red_rank] = dims[d];
      red_strides[red_rank++] = stride;
      count *= dims[d];
    } else {
      kept_dims[kept_rank] = dims[d];
      kept_strides[kept_rank++] = stride;
    }
    stride *= dims[d];
  }
  // Collected innermost first; for_each_index wants outermost first.
  for (int i = 0; i < kept_rank / 2; ++i) {
    int64_t t = kept_dims[i];
    kept_dims[i] = kept_dims[kept_rank - 1 - i];
    kept_dims[kept_rank - 1 - i] = t;
    t = kept_strides[i];
    kept_strides[i] = kept_strides[kept_rank - 1 - i];
    kept_strides[kept_rank - 1 - i] = t;
  }
  for (int i = 0; i < red_rank / 2; ++i) {
    int64_t t = red_dims[i];
    red_dims[i] = red_dims[red_rank - 1 - i];
    red_dims[red_rank - 1 - i] = t;
    t = red_strides[i];
    red_strides[i] = red_strides[red_rank - 1 - i];
    red_strides[red_rank - 1 - i] = t;
  }
  const int64_t* kept_list[1] = {kept_strides};
  const int64_t* red_list[1] = {red_strides};
  for_each_index<1>(kept_rank, kept_dims, kept_list, [&](const int64_t* k) {
    const int64_t base = k[0];
    double sum = 0, sum_sq = 0;
    for_each_index<1>(red_rank, red_dims, red_list, [&](const int64_t* r) {
      const double v = double(x[base + r[0]]);
      sum += v;
      sum_sq += v * v;
    });
    const double mean = sum / double(count);
    double var = sum_sq / double(count) - mean * mean;
    if (var < 0) var = 0;
    const double denom = std::sqrt(var) + 1e-9;
    for_each_index<1>(red_rank, red_dims, red_list, [&](const int64_t* r) {
      y[base + r[0]] = T((double(x[base + r[0]]) - mean) / denom);
    });
  });
}

}  // namespace kiln_ref
