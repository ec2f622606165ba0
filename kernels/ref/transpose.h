// kiln reference kernels: N-d permutation (Transpose) on raw bytes, for every dtype.
#pragma once

#include <cstdint>
#include <cstring>

#include "common.h"

namespace kiln_ref {

/// Walks a strided N-d index space in row-major order of `dims`, calling
/// body(dst_elem, src_elem) with linear element offsets: dst is the dense row-major position,
/// src accumulates src_strides (in elements, any sign). rank may be 0 (one element).
template <class Body>
inline void for_each_strided(int rank, const int64_t* dims, const int64_t* src_strides,
                             int64_t src_base, Body body) {
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= dims[d];
  if (count == 0) return;
  int64_t idx[kMaxRank] = {0};
  int64_t src = src_base;
  for (int64_t e = 0; e < count; ++e) {
    body(e, src);
    for (int d = rank - 1; d >= 0; --d) {
      src += src_strides[d];
      if (++idx[d] < dims[d]) break;
      src -= src_strides[d] * idx[d];
      idx[d] = 0;
    }
  }
}

/// Transpose: out = permute(in, perm), i.e. out dim d is in dim perm[d] and
/// out[i_0, ..., i_{r-1}] = in[j] with j[perm[d]] = i_d. Row-major, `elem_size` bytes per
/// element (one instantiation serves every dtype). in_dims: rank entries; perm: a permutation
/// of 0..rank-1 (the caller validates it). rank 0 copies one element; empty tensors do nothing.
/// Output dims that are contiguous in the input (and size-1 dims) are merged, so the
/// innermost contiguous run is copied with one memcpy.
inline void transpose(int rank, const int64_t* in_dims, const int64_t* perm, int64_t elem_size,
                      const void* in, void* out) {
  int64_t in_strides[kMaxRank];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_strides[d] = s;
    s *= in_dims[d];
  }
  if (s == 0) return;
  // Collapse: out dim d continues the previous kept dim when it is the next input dim.
  int64_t dims[kMaxRank], strides[kMaxRank];
  int n = 0;
  for (int d = 0; d < rank; ++d) {
    int64_t axis = perm[d];
    if (in_dims[axis] == 1) continue;
    if (n > 0 && strides[n - 1] == in_dims[axis] * in_strides[axis]) {
      dims[n - 1] *= in_dims[axis];
      strides[n - 1] = in_strides[axis];
    } else {
      dims[n] = in_dims[axis];
      strides[n] = in_strides[axis];
      ++n;
    }
  }
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  int64_t block = 1;  // elements copied per memcpy
  if (n > 0 && strides[n - 1] == 1) block = dims[--n];
  const size_t block_bytes = size_t(block * elem_size);
  for_each_strided(n, dims, strides, 0, [&](int64_t o, int64_t i) {
    std::memcpy(dst + o * int64_t(block_bytes), src + i * elem_size, block_bytes);
  });
}

}  // namespace kiln_ref
