// kiln reference kernels: fused epilogues applied to finished output blocks of conv, gemm and
// matmul. An epilogue computes, for each element of a block, act((y + bias) + residual) in the
// element type, in that order, which is exactly what the unfused Add/Add/activation sequence
// computes, so fusion does not change results.
#pragma once

#include <cstdint>

namespace kiln_ref {

/// The identity activation (no activation fused).
struct NoActivation {
  template <class T>
  T operator()(T x) const {
    return x;
  }
};

/// No epilogue: the kernels' default.
struct NoEpilogue {
  template <class T>
  void operator()(T*, int64_t, int64_t) const {}
};

/// Called as epi(y_block, offset, count): y_block points at the block's first element, which
/// is element `offset` of the whole output. bias (nullptr: none) is indexed by the position
/// within the block (a row of N columns); residual (nullptr: none) has the output's layout.
template <class T, class Act>
struct Epilogue {
  Act act;
  const T* bias = nullptr;
  const T* residual = nullptr;
  void operator()(T* y, int64_t offset, int64_t count) const {
    for (int64_t i = 0; i < count; ++i) {
      T v = y[i];
      if (bias) v = T(v + bias[i]);
      if (residual) v = T(v + residual[offset + i]);
      y[i] = act(v);
    }
  }
};

/// Deduces the element type from the residual/bias pointers: make_epilogue<float>(act, b, r).
template <class T, class Act>
inline Epilogue<T, Act> make_epilogue(Act act, const T* bias, const T* residual) {
  return Epilogue<T, Act>{act, bias, residual};
}

}  // namespace kiln_ref
