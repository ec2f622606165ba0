// kiln reference kernels: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare and
// ArgMax/ArgMin.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"

// Reductions take the input's dims and a mask `reduced` (one int64 per input dim, nonzero =
// reduced). The output is row-major over the kept dims, which is the same memory layout with
// keepdims=1 (reduced dims become 1) or keepdims=0 (they are dropped). ONNX's empty `axes` with
// noop_with_empty_axes=0 means every dim is reduced; with noop_with_empty_axes=1 the caller
// copies. Accumulation is in the element type (as onnxruntime does); signed integer overflow
// wraps (two's complement) instead of being undefined. Reducing an empty set gives the
// identity: 0 for sums, 1 for Prod, -inf (lowest) for Max, +inf (highest) for Min, NaN for a
// float Mean (0 for an integer Mean), -inf for LogSum and LogSumExp.

namespace kiln_ref {

namespace reduce_detail {

/// Wrapping integer arithmetic (via unsigned); plain arithmetic for floats.
template <class T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <class T>
inline T add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(Wide<T>(a) + Wide<T>(b));
  else
    return T(a + b);
}
template <class T>
inline T mul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(Wide<T>(a) * Wide<T>(b));
  else
    return T(a * b);
}
template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return (void)v, false;
}
template <class T>
inline T abs_value(T v) {
  if constexpr (std::is_unsigned_v<T>)
    return v;
  else if constexpr (std::is_integral_v<T>)
    return v < T(0) ? T(Wide<T>(0) - Wide<T>(v)) : v;
  else
    return v < T(0) ? T(-v) : v;
}
/// log/sqrt of an accumulated value: in T for floats, through double for integers.
template <class T, class F>
inline T through_double(T v, F f) {
  if constexpr (std::is_floating_point_v<T>)
    return f(v);
  else
    return T(f(double(v)));
}
template <class T>
inline T lowest() {
  if constexpr (std::is_floating_point_v<T>)
    return -std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::lowest();
}
template <class T>
inline T highest() {
  if constexpr (std::is_floating_point_v<T>)
    return std::numeric_limits<T>::infinity();
  else
    return std::numeric_limits<T>::max();
}

/// Output strides per input dim: row-major over the kept dims, 0 on reduced dims. Returns
/// the number of output elements; *reduce_count gets the number of inputs per output.
inline int64_t output_strides(int rank, const int64_t* dims, const int64_t* reduced,
                              int64_t* strides, int64_t* reduce_count) {
  int64_t out = 1, count = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[d]) {
      strides[d] = 0;
      count *= dims[d];
    } else {
      strides[d] = out;
      out *= dims[d];
    }
  }
  *reduce_count = count;
  return out;
}

}  // namespace reduce_detail

// ---- reducers: init() is the identity, step() folds one value, finish() maps the result ----

struct ReduceSum {
  template <class T>
  T init() const {
    return T(0);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::add(a, v);
  }
  template <class T>
  T finish(T a, int64_t) const {
    return a;
  }
};
struct ReduceMean {
  template <class T>
  T init() const {
    return T(0);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::add(a, v);
  }
  template <class T>
  T finish(T a, int64_t count) const {
    if constexpr (std::is_floating_point_v<T>)
      return T(a / T(count));  // 0/0 = NaN when empty
    else
      return count == 0 ? T(0) : T(a / T(count));
  }
};
struct ReduceProd {
  template <class T>
  T init() const {
    return T(1);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::mul(a, v);
  }
  template <class T>
  T finish(T a, int64_t) const {
    return a;
  }
};
/// Max and Min propagate NaN (numpy.max semantics).
struct ReduceMax {
  template <class T>
  T init() const {
    return reduce_detail::lowest<T>();
  }
  template <class T>
  T step(T a, T v) const {
    if (reduce_detail::is_nan(a)) return a;
    return (reduce_detail::is_nan(v) || v > a) ? v : a;
  }
  template <class T>
  T finish(T a, int64_t) const {
    return a;
  }
};
struct ReduceMin {
  template <class T>
  T init() const {
    return reduce_detail::highest<T>();
  }
  template <class T>
  T step(T a, T v) const {
    if (reduce_detail::is_nan(a)) return a;
    return (reduce_detail::is_nan(v) || v < a) ? v : a;
  }
  template <class T>
  T finish(T a, int64_t) const {
    return a;
  }
};
struct ReduceL1 {
  template <class T>
  T init() const {
    return T(0);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::add(a, reduce_detail::abs_value(v));
  }
  template <class T>
  T finish(T a, int64_t) const {
    return a;
  }
};
struct ReduceL2 {
  template <class T>
  T init() const {
    return T(0);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::add(a, reduce_detail::mul(v, v));
  }
  template <class T>
  T finish(T a, int64_t) const {
    return reduce_detail::through_double(a, [](auto s) { return std::sqrt(s); });
  }
};
struct ReduceSumSquare {
  template <class T>
  T init() const {
    return T(0);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::add(a, reduce_detail::mul(v, v));
  }
  template <class T>
  T finish(T a, int64_t) const {
    return a;
  }
};
struct ReduceLogSum {
  template <class T>
  T init() const {
    return T(0);
  }
  template <class T>
  T step(T a, T v) const {
    return reduce_detail::add(a, v);
  }
  template <class T>
  T finish(T a, int64_t) const {
    return reduce_detail::through_double(a, [](auto s) { return std::log(s); });
  }
};

/// Builds reduce()'s `reduced` mask from n ONNX axes read at run time (negative counts from
/// the end). Returns 1 when an axis is out of range or the result does not have the output
/// dims the caller was built for (out_rank/out_dims, with keepdims as ONNX's attribute);
/// else 0.
template <class I>
inline int reduce_axes(int rank, const int64_t* dims, int64_t n, const I* axes, int keepdims,
                       int out_rank, const int64_t* out_dims, int64_t* reduced) {
  for (int d = 0; d < rank; ++d) reduced[d] = 0;
  for (int64_t k = 0; k < n; ++k) {
    int64_t a = int64_t(axes[k]);
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return 1;
    reduced[a] = 1;
  }
  int o = 0;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d] && !keepdims) continue;
    if (o >= out_rank || out_dims[o] != (reduced[d] ? 1 : dims[d])) return 1;
    ++o;
  }
  return o == out_rank ? 0 : 1;
}

/// Reduces x (row-major, `dims`) over the dims whose `reduced` entry is nonzero into y (see the
/// layout note above) with one of the reducers above, e.g. kiln_ref::ReduceSum{}. Streams once
/// through x, using y as the accumulator; x and y must not alias. rank 0 is a scalar.
template <class T, class R>
inline void reduce(int rank, const int64_t* dims, const int64_t* reduced, const T* x, T* y, R r) {
  int64_t strides[kMaxRank];
  int64_t count = 0;
  const int64_t out_count = reduce_detail::output_strides(rank, dims, reduced, strides, &count);
  for (int64_t i = 0; i < out_count; ++i) y[i] = r.template init<T>();
  if (count > 0) {
    const int64_t* stride_list[1] = {strides};
    int64_t e = 0;
    for_each_index<1>(rank, dims, stride_list,
                      [&](const int64_t* o) { y[o[0]] = r.template step<T>(y[o[0]], x[e++]); });
  }
  for (int64_t i = 0; i < out_count; ++i) y[i] = r.template finish<T>(y[i], count);
}

/// Scratch bytes reduce_log_sum_exp needs: one accumulator per output element (T for float
/// types, double for integer types).
template <class T>
inline int64_t reduce_log_sum_exp_scratch_bytes(int rank, const int64_t* dims,
                                                const int64_t* reduced) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, double>;
  int64_t out = 1;
  for (int d = 0; d < rank; ++d)
    if (!reduced[d]) out *= dims[d];
  return out * int64_t(sizeof(Acc));
}

/// ReduceLogSumExp: log(sum(exp(x))), computed stably as max + log(sum(exp(x - max))). Same
/// layout as reduce(); scratch (8-byte aligned) holds reduce_log_sum_exp_scratch_bytes(...).
/// An infinite or NaN max is the result; an empty set gives -inf.
template <class T>
inline void reduce_log_sum_exp(int rank, const int64_t* dims, const int64_t* reduced, const T* x,
                               T* y, void* scratch) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, T, double>;
  Acc* sum = static_cast<Acc*>(scratch);
  int64_t strides[kMaxRank];
  int64_t count = 0;
  const int64_t out_count = reduce_detail::output_strides(rank, dims, reduced, strides, &count);
  const int64_t* stride_list[1] = {strides};
  for (int64_t i = 0; i < out_count; ++i) {
    y[i] = reduce_detail::lowest<T>();
    sum[i] = Acc(0);
  }
  if (count > 0) {
    int64_t e = 0;
    ReduceMax mx;
    for_each_index<1>(rank, dims, stride_list,
                      [&](const int64_t* o) { y[o[0]] = mx.step<T>(y[o[0]], x[e++]); });
    e = 0;
    for_each_index<1>(rank, dims, stride_list, [&](const int64_t* o) {
      const Acc m = Acc(y[o[0]]);
      const Acc v = Acc(x[e++]);
      if (std::isfinite(m)) sum[o[0]] = Acc(sum[o[0]] + std::exp(Acc(v - m)));
    });
  }
  for (int64_t i = 0; i < out_count; ++i) {
    const Acc m = Acc(y[i]);
    if (count > 0 && std::isfinite(m))
      y[i] = T(m + std::log(sum[i]));
    else if (count == 0)
      y[i] = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                  : std::numeric_limits<T>::lowest();
  }
}

namespace reduce_detail {

/// Whether v replaces the current best index's value cur for ArgMax (kMax) or ArgMin. NaN
/// beats every number (numpy.argmax/argmin return the first NaN); with last=true ties (and
/// later NaNs) move the answer to the later index.
template <bool kMax, class T>
inline bool arg_beats(T v, T cur, bool last) {
  if (is_nan(cur)) return last && is_nan(v);
  if (is_nan(v)) return true;
  if (last && v == cur) return true;
  return kMax ? v > cur : v < cur;
}

template <bool kMax, class T>
inline void arg_reduce(int64_t outer, int64_t n, int64_t inner, const T* x, int64_t* y,
                       bool select_last_index) {
  for (int64_t o = 0; o < outer; ++o) {
    const T* xb = x + o * n * inner;
    int64_t* yb = y + o * inner;
    for (int64_t j = 0; j < inner; ++j) yb[j] = 0;
    for (int64_t a = 1; a < n; ++a) {
      const T* row = xb + a * inner;
      for (int64_t j = 0; j < inner; ++j)
        if (arg_beats<kMax>(row[j], xb[yb[j] * inner + j], select_last_index)) yb[j] = a;
    }
  }
}

}  // namespace reduce_detail

/// ArgMax along one axis: x is row-major [outer, n, inner] (n = the axis size), y is int64
/// [outer, inner] (the keepdims=1 and keepdims=0 layouts are the same). First maximum wins
/// unless select_last_index; a NaN counts as the maximum. n must be >= 1 (y is 0 when n = 0).
template <class T>
inline void argmax(int64_t outer, int64_t n, int64_t inner, const T* x, int64_t* y,
                   bool select_last_index) {
  reduce_detail::arg_reduce<true>(outer, n, inner, x, y, select_last_index);
}

/// ArgMin along one axis; as argmax, with a NaN counting as the minimum (numpy.argmin).
template <class T>
inline void argmin(int64_t outer, int64_t n, int64_t inner, const T* x, int64_t* y,
                   bool select_last_index) {
  reduce_detail::arg_reduce<false>(outer, n, inner, x, y, select_last_index);
}

}  // namespace kiln_ref
