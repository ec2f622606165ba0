// kiln reference kernel: Einsum over labelled axes (sums of products, any number of operands).
#pragma once

#include <cstdint>

#include "common.h"

namespace kiln_ref {

/// Einsum with the equation resolved by the caller into labels: label l has extent dims[l];
/// labels [0, num_out) are the output's axes in order (y is contiguous over them), the rest are
/// summed. strides[i * num_labels + l] is operand i's element stride along label l (0 where the
/// operand lacks or broadcasts it; a label repeated in one operand adds its strides, which
/// reads a diagonal). Accumulates in T. y must not alias the inputs.
template <class T>
inline void einsum(int num_inputs, const T* const* inputs, int num_labels, const int64_t* dims,
                   const int64_t* strides, int num_out, T* y) {
  int64_t out_count = 1, red_count = 1;
  for (int l = 0; l < num_labels; ++l) (l < num_out ? out_count : red_count) *= dims[l];
  int64_t idx[kMaxRank];
  for (int64_t o = 0; o < out_count; ++o) {
    int64_t rem = o;
    for (int l = num_out - 1; l >= 0; --l) {
      idx[l] = rem % dims[l];
      rem /= dims[l];
    }
    T acc = T(0);
    for (int64_t k = 0; k < red_count; ++k) {
      rem = k;
      for (int l = num_labels - 1; l >= num_out; --l) {
        idx[l] = rem % dims[l];
        rem /= dims[l];
      }
      T prod = T(1);
      for (int i = 0; i < num_inputs; ++i) {
        int64_t off = 0;
        for (int l = 0; l < num_labels; ++l) off += idx[l] * strides[i * num_labels + l];
        prod = T(prod * inputs[i][off]);
      }
      acc = T(acc + prod);
    }
    y[o] = acc;
  }
}

}  // namespace kiln_ref
