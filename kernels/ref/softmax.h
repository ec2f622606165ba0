// kiln reference kernels: Softmax, LogSoftmax and Hardmax along one axis.
#pragma once

#include <cmath>
#include <cstdint>

#include "common.h"

// Layout for all three: x and y are row-major [outer, n, inner] views of the tensor, where n is
// the size of the softmax axis, outer the product of the dims before it and inner the product
// of the dims after it. For opset < 13 (the input is coerced to 2-D at `axis`), pass
// outer = prod(dims[:axis]), n = prod(dims[axis:]), inner = 1. Float types; the sums are
// accumulated in the element type (as onnxruntime does). x and y may be the same buffer.

namespace kiln_ref {

namespace softmax_detail {

/// True when v should replace the current best: NaN counts as the largest value and the first
/// maximum wins (numpy.argmax semantics).
template <class T>
inline bool beats(T v, T best) {
  if (best != best) return false;
  return v != v || v > best;
}

}  // namespace softmax_detail

/// Softmax: y = exp(x - max) / sum(exp(x - max)) along the axis.
template <class T>
inline void softmax(int64_t outer, int64_t n, int64_t inner, const T* x, T* y) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xr = x + o * n * inner + j;
      T* yr = y + o * n * inner + j;
      if (n == 0) continue;
      T mx = xr[0];
      for (int64_t a = 1; a < n; ++a)
        mx = softmax_detail::beats(xr[a * inner], mx) ? xr[a * inner] : mx;
      T sum = T(0);
      for (int64_t a = 0; a < n; ++a) {
        const T e = std::exp(T(xr[a * inner] - mx));
        yr[a * inner] = e;
        sum = T(sum + e);
      }
      for (int64_t a = 0; a < n; ++a) yr[a * inner] = T(yr[a * inner] / sum);
    }
  }
}

/// LogSoftmax: y = (x - max) - log(sum(exp(x - max))) along the axis.
template <class T>
inline void log_softmax(int64_t outer, int64_t n, int64_t inner, const T* x, T* y) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xr = x + o * n * inner + j;
      T* yr = y + o * n * inner + j;
      if (n == 0) continue;
      T mx = xr[0];
      for (int64_t a = 1; a < n; ++a)
        mx = softmax_detail::beats(xr[a * inner], mx) ? xr[a * inner] : mx;
      T sum = T(0);
      for (int64_t a = 0; a < n; ++a) sum = T(sum + std::exp(T(xr[a * inner] - mx)));
      const T log_sum = std::log(sum);
      for (int64_t a = 0; a < n; ++a) yr[a * inner] = T(T(xr[a * inner] - mx) - log_sum);
    }
  }
}

/// Hardmax: 1 at the first maximum along the axis (a NaN counts as the maximum), 0 elsewhere.
/// Float types. x and y must not alias.
template <class T>
inline void hardmax(int64_t outer, int64_t n, int64_t inner, const T* x, T* y) {
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      const T* xr = x + o * n * inner + j;
      T* yr = y + o * n * inner + j;
      int64_t best = 0;
      for (int64_t a = 1; a < n; ++a)
        if (softmax_detail::beats(xr[a * inner], xr[best * inner])) best = a;
      for (int64_t a = 0; a < n; ++a) yr[a * inner] = T(a == best ? 1 : 0);
    }
  }
}

}  // namespace kiln_ref
