// kiln reference kernels whose output size is decided by the data: Unique (NonZero is in
// gather.h, Compress in copy.h, NonMaxSuppression in misc.h). unique() writes its outputs packed
// at the run-time size, zeroes the rest of each buffer (sized by the compile-time bound) and
// returns the run-time size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "cast.h"
#include "common.h"

namespace kiln_ref {

namespace dynamic_detail {

// Three-way comparison of two slices of a [outer, n, inner] tensor along the middle axis:
// elements compared in row-major order; NaN equals NaN and ranks above every number
// (so sorting is a strict weak order), -0.0 equals 0.0.
template <class E>
inline int compare_slices(const storage_t<E>* in, int64_t outer, int64_t n, int64_t inner,
                          int64_t a, int64_t b) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const compute_t<E> x = load<E>(in[(o * n + a) * inner + i]);
      const compute_t<E> y = load<E>(in[(o * n + b) * inner + i]);
      if constexpr (is_floating_v<E>) {
        const bool xn = x != x, yn = y != y;
        if (xn || yn) {
          if (xn && yn) continue;
          return xn ? 1 : -1;
        }
      }
      if (x < y) return -1;
      if (y < x) return 1;
    }
  return 0;
}

}  // namespace dynamic_detail

/// Scratch bytes unique() needs for n slices.
inline int64_t unique_scratch_bytes(int64_t n) {
  return 4 * (n > 0 ? n : 1) * int64_t(sizeof(int64_t));
}

/// Unique over the n slices of in [outer, n, inner] along the middle axis (outer = inner = 1
/// without an axis). Returns the unique count u and writes y [outer, u, inner], indices [u]
/// (first occurrence), counts [u] and inverse [n]; sorted != 0 orders the unique slices
/// ascending (lexicographically), else by first occurrence. y's buffer holds outer * n * inner
/// elements and indices/counts n each: everything past the run-time size is zeroed. indices,
/// inverse and counts may be null (omitted outputs). scratch: unique_scratch_bytes(n) bytes,
/// 8-byte aligned.
template <class E>
inline int64_t unique(int64_t outer, int64_t n, int64_t inner, int sorted, const storage_t<E>* in,
                      storage_t<E>* y, int64_t* indices, int64_t* inverse, int64_t* counts,
                      void* scratch) {
  int64_t* order = static_cast<int64_t*>(scratch);  // slices in sorted order
  int64_t* group = order + n;                       // slice -> its group (sorted rank)
  int64_t* first = group + n;                       // group -> first slice
  int64_t* position = first + n;                    // group -> output position
  for (int64_t a = 0; a < n; ++a) order[a] = a;
  std::sort(order, order + n, [&](int64_t a, int64_t b) {
    const int c = dynamic_detail::compare_slices<E>(in, outer, n, inner, a, b);
    return c != 0 ? c < 0 : a < b;  // ties by index: a group starts with its first slice
  });
  int64_t u = 0;
  for (int64_t k = 0; k < n; ++k) {
    if (k == 0 ||
        dynamic_detail::compare_slices<E>(in, outer, n, inner, order[k - 1], order[k]) != 0)
      first[u++] = order[k];
    group[order[k]] = u - 1;
  }
  if (sorted) {
    for (int64_t g = 0; g < u; ++g) position[g] = g;
  } else {
    // Groups by first occurrence: reuse `order` for the group order.
    for (int64_t g = 0; g < u; ++g) order[g] = g;
    std::sort(order, order + u, [&](int64_t a, int64_t b) { return first[a] < first[b]; });
    for (int64_t k = 0; k < u; ++k) position[order[k]] = k;
  }
  const int64_t slot = int64_t(sizeof(storage_t<E>));
  if (outer * n * inner > 0)
    std::memset(static_cast<void*>(y), 0, size_t(outer * n * inner * slot));
  for (int64_t g = 0; g < u; ++g) {
    const int64_t k = position[g];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<void*>(y + (o * u + k) * inner), in + (o * n + first[g]) * inner,
                  size_t(inner * slot));
    if (indices) indices[k] = first[g];
  }
  if (indices)
    for (int64_t k = u; k < n; ++k) indices[k] = 0;
  if (counts) {
    for (int64_t k = 0; k < n; ++k) counts[k] = 0;
    for (int64_t a = 0; a < n; ++a) ++counts[position[group[a]]];
  }
  if (inverse)
    for (int64_t a = 0; a < n; ++a) inverse[a] = position[group[a]];
  return u;
}

}  // namespace kiln_ref
