// kiln reference kernels: indexing ops (Gather, GatherElements, GatherND, ScatterElements,
// ScatterND, OneHot) and CumSum, TopK, NonZero.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cast.h"
#include "common.h"
#include "transpose.h"

// Conventions: dense row-major tensors; I is the index type (int32_t or int64_t). Index
// tensors are runtime data: negative entries count from the end (ONNX), and every kernel
// that reads them returns an int that is nonzero when one is out of range, in which case it
// has written nothing to its output (indices are checked before the first write). Pure data
// movement works on raw bytes of `elem_size`; reductions and comparisons are templated on the
// element type E of cast.h (float, int32_t, kiln_ref::f16_tag, ...).

namespace kiln_ref {

namespace gather_detail {

// Normalizes index v against extent n; false when outside [-n, n).
template <class I>
inline bool normalize(I v, int64_t n, int64_t* out) {
  int64_t i = int64_t(v);
  if (i < 0) i += n;
  if (i < 0 || i >= n) return false;
  *out = i;
  return true;
}

template <class I>
inline bool all_valid(const I* idx, int64_t count, int64_t n) {
  int64_t unused;
  for (int64_t k = 0; k < count; ++k)
    if (!normalize(idx[k], n, &unused)) return false;
  return true;
}

inline int64_t product(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

inline void strides_of(int rank, const int64_t* dims, int64_t* strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= dims[d];
  }
}

}  // namespace gather_detail

/// Gather: data viewed as [outer, axis_dim, inner]; out is [outer, n_indices, inner] with
/// out[o, k, :] = data[o, indices[k], :] (n_indices = element count of the indices tensor;
/// ONNX's output shape is data.shape[:axis] + indices.shape + data.shape[axis+1:]).
/// Returns 1 on an index outside [-axis_dim, axis_dim), else 0.
template <class I>
inline int gather(int64_t outer, int64_t axis_dim, int64_t inner, const I* indices,
                  int64_t n_indices, int64_t elem_size, const void* data, void* out) {
  if (outer * inner > 0 && !gather_detail::all_valid(indices, n_indices, axis_dim)) return 1;
  const unsigned char* src = static_cast<const unsigned char*>(data);
  unsigned char* dst = static_cast<unsigned char*>(out);
  const int64_t row = inner * elem_size;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n_indices; ++k, dst += row) {
      int64_t i = 0;
      gather_detail::normalize(indices[k], axis_dim, &i);
      if (row > 0) std::memcpy(dst, src + (o * axis_dim + i) * row, size_t(row));
    }
  return 0;
}

/// GatherElements: out has the shape of indices (idx_dims, `rank` entries, same rank as data);
/// out[p] = data[p with p[axis] replaced by indices[p]]. axis is normalized to [0, rank).
/// Returns 1 on an index outside [-data_dims[axis], data_dims[axis]), else 0.
template <class I>
inline int gather_elements(int rank, const int64_t* data_dims, const int64_t* idx_dims, int axis,
                           const I* indices, int64_t elem_size, const void* data, void* out) {
  const int64_t count = gather_detail::product(rank, idx_dims);
  if (!gather_detail::all_valid(indices, count, data_dims[axis])) return 1;
  int64_t strides[kMaxRank] = {};
  gather_detail::strides_of(rank, data_dims, strides);
  const int64_t axis_stride = strides[axis];
  strides[axis] = 0;
  const unsigned char* src = static_cast<const unsigned char*>(data);
  unsigned char* dst = static_cast<unsigned char*>(out);
  for_each_strided(rank, idx_dims, strides, 0, [&](int64_t o, int64_t s) {
    int64_t i = 0;
    gather_detail::normalize(indices[o], data_dims[axis], &i);
    std::memcpy(dst + o * elem_size, src + (s + i * axis_stride) * elem_size, size_t(elem_size));
  });
  return 0;
}

/// GatherND: with b = batch_dims and K = idx_dims[idx_rank - 1] (b + K <= data_rank), data is
/// [B, data_dims[b..b+K), S] (B = product of the first b dims, S = product of the rest) and
/// indices are [B, M, K]; out is [B, M, S] with out[n, m, :] = data[n, indices[n, m, :], :].
/// Returns 1 on an index outside its dim's [-d, d), else 0.
template <class I>
inline int gather_nd(int data_rank, const int64_t* data_dims, int idx_rank, const int64_t* idx_dims,
                     int batch_dims, const I* indices, int64_t elem_size, const void* data,
                     void* out) {
  const int64_t K = idx_dims[idx_rank - 1];
  const int64_t B = gather_detail::product(batch_dims, data_dims);
  const int64_t M = gather_detail::product(idx_rank - 1 - batch_dims, idx_dims + batch_dims);
  const int64_t S =
      gather_detail::product(data_rank - batch_dims - int(K), data_dims + batch_dims + K);
  const int64_t per_batch = gather_detail::product(data_rank - batch_dims, data_dims + batch_dims);
  for (int64_t t = 0; t < B * M; ++t)
    for (int64_t j = 0; j < K; ++j) {
      int64_t unused;
      if (!gather_detail::normalize(indices[t * K + j], data_dims[batch_dims + j], &unused))
        return 1;
    }
  const unsigned char* src = static_cast<const unsigned char*>(data);
  unsigned char* dst = static_cast<unsigned char*>(out);
  const int64_t row = S * elem_size;
  for (int64_t n = 0; n < B; ++n)
    for (int64_t m = 0; m < M; ++m, dst += row) {
      const I* tuple = indices + (n * M + m) * K;
      int64_t off = 0;
      for (int64_t j = 0; j < K; ++j) {
        int64_t i = 0;
        gather_detail::normalize(tuple[j], data_dims[batch_dims + j], &i);
        off = off * data_dims[batch_dims + j] + i;
      }
      if (row > 0) std::memcpy(dst, src + (n * per_batch + off * S) * elem_size, size_t(row));
    }
  return 0;
}

/// Scatter reductions (ONNX `reduction`).
enum ScatterReduction : int {
  kScatterNone = 0,
  kScatterAdd = 1,
  kScatterMul = 2,
  kScatterMax = 3,
  kScatterMin = 4
};

/// a (op) b for a scatter reduction: integers wrap (two's complement, never UB), floats follow
/// IEEE with NaN propagating through max/min (numpy maximum/minimum), f16/bf16 compute in float
/// and round once; for bool add/max are `or`, mul/min are `and`.
template <class E>
inline storage_t<E> scatter_combine(storage_t<E> a, storage_t<E> b, int reduction) {
  if constexpr (std::is_same_v<E, bool>) {
    return (reduction == kScatterAdd || reduction == kScatterMax) ? (a || b)
           : (reduction == kScatterNone)                          ? b
                                                                  : (a && b);
  } else if constexpr (is_int_v<E>) {
    switch (reduction) {
      case kScatterAdd:
        return wrap_to<E>(uint64_t(a) + uint64_t(b));
      case kScatterMul:
        return wrap_to<E>(uint64_t(a) * uint64_t(b));
      case kScatterMax:
        return a < b ? b : a;
      case kScatterMin:
        return b < a ? b : a;
      default:
        return b;
    }
  } else {
    using C = compute_t<E>;
    const C x = load<E>(a), y = load<E>(b);
    switch (reduction) {
      case kScatterAdd:
        return store<E>(C(x + y));
      case kScatterMul:
        return store<E>(C(x * y));
      case kScatterMax:
        if (x != x || y != y) return store<E>(std::numeric_limits<C>::quiet_NaN());
        return x < y ? b : a;
      case kScatterMin:
        if (x != x || y != y) return store<E>(std::numeric_limits<C>::quiet_NaN());
        return y < x ? b : a;
      default:
        return b;
    }
  }
}

/// ScatterElements: out = data, then for every position p of indices/updates (idx_dims, same
/// rank as data): out[p with p[axis] = indices[p]] = combine(that, updates[p]), visiting p in
/// row-major order (so with kScatterNone the last duplicate wins). out may alias data.
/// Returns 1 (writing nothing) on an index outside [-data_dims[axis], data_dims[axis]).
template <class E, class I>
inline int scatter_elements(int rank, const int64_t* data_dims, const int64_t* idx_dims, int axis,
                            const I* indices, const storage_t<E>* updates, int reduction,
                            const storage_t<E>* data, storage_t<E>* out) {
  const int64_t count = gather_detail::product(rank, idx_dims);
  if (!gather_detail::all_valid(indices, count, data_dims[axis])) return 1;
  const int64_t n = gather_detail::product(rank, data_dims);
  if (out != data) {
    for (int64_t k = 0; k < n; ++k) out[k] = data[k];
  }
  int64_t strides[kMaxRank] = {};
  gather_detail::strides_of(rank, data_dims, strides);
  const int64_t axis_stride = strides[axis];
  strides[axis] = 0;
  for_each_strided(rank, idx_dims, strides, 0, [&](int64_t p, int64_t s) {
    int64_t i = 0;
    gather_detail::normalize(indices[p], data_dims[axis], &i);
    storage_t<E>& dst = out[s + i * axis_stride];
    dst = scatter_combine<E>(dst, updates[p], reduction);
  });
  return 0;
}

/// ScatterND: with K = idx_dims[idx_rank - 1], indices are [M, K] and updates [M, S] where
/// S = product of data_dims[K:]; out = data, then for m in order the slice
/// out[indices[m, :], ...] is combined element-wise with updates[m, :] (kScatterNone: the last
/// duplicate wins). out may alias data. Returns 1 (writing nothing) on a bad index.
template <class E, class I>
inline int scatter_nd(int data_rank, const int64_t* data_dims, int idx_rank,
                      const int64_t* idx_dims, const I* indices, const storage_t<E>* updates,
                      int reduction, const storage_t<E>* data, storage_t<E>* out) {
  const int64_t K = idx_dims[idx_rank - 1];
  const int64_t M = gather_detail::product(idx_rank - 1, idx_dims);
  const int64_t S = gather_detail::product(data_rank - int(K), data_dims + K);
  for (int64_t t = 0; t < M; ++t)
    for (int64_t j = 0; j < K; ++j) {
      int64_t unused;
      if (!gather_detail::normalize(indices[t * K + j], data_dims[j], &unused)) return 1;
    }
  const int64_t n = gather_detail::product(data_rank, data_dims);
  if (out != data) {
    for (int64_t k = 0; k < n; ++k) out[k] = data[k];
  }
  for (int64_t m = 0; m < M; ++m) {
    int64_t off = 0;
    for (int64_t j = 0; j < K; ++j) {
      int64_t i = 0;
      gather_detail::normalize(indices[m * K + j], data_dims[j], &i);
      off = off * data_dims[j] + i;
    }
    storage_t<E>* dst = out + off * S;
    const storage_t<E>* upd = updates + m * S;
    for (int64_t s = 0; s < S; ++s) dst[s] = scatter_combine<E>(dst[s], upd[s], reduction);
  }
  return 0;
}

/// OneHot: indices viewed as [outer, inner] (split at the output axis); out is
/// [outer, depth, inner] of elem_size-byte elements with out[o, d, i] = values[1] (on) when
/// index[o, i] (negative counts from depth) equals d, else values[0] (off). values points to
/// the two-element ONNX `values` tensor. Indices outside [-depth, depth) give an all-off row;
/// float indices are truncated toward zero (NaN is out of range).
template <class I>
inline void one_hot(int64_t outer, int64_t depth, int64_t inner, const I* indices,
                    const void* values, int64_t elem_size, void* out) {
  const unsigned char* off_value = static_cast<const unsigned char*>(values);
  const unsigned char* on_value = off_value + elem_size;
  unsigned char* dst = static_cast<unsigned char*>(out);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (int64_t i = 0; i < inner; ++i, dst += elem_size) {
        const I v = indices[o * inner + i];
        int64_t hot = -1;
        if constexpr (std::is_floating_point_v<I>) {
          const double t = std::trunc(double(v));
          if (t >= double(-depth) && t < double(depth))
            hot = t < 0 ? int64_t(t) + depth : int64_t(t);
        } else {
          if (!gather_detail::normalize(v, depth, &hot)) hot = -1;
        }
        std::memcpy(dst, hot == d ? on_value : off_value, size_t(elem_size));
      }
}

/// CumSum: in/out are [outer, n, inner]; running sums along the middle axis. exclusive: each
/// output excludes its own element (the first is 0); reverse: sums run from the end. Integers
/// wrap; f16/bf16 round the running sum to the element type at every step (as a sequence of
/// Adds would). out may alias in.
template <class E>
inline void cumsum(int64_t outer, int64_t n, int64_t inner, int exclusive, int reverse,
                   const storage_t<E>* in, storage_t<E>* out) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      storage_t<E> acc = store<E>(compute_t<E>(0));
      for (int64_t t = 0; t < n; ++t) {
        const int64_t k = reverse ? n - 1 - t : t;
        const int64_t at = (o * n + k) * inner + i;
        const storage_t<E> x = in[at];
        const storage_t<E> next = scatter_combine<E>(acc, x, kScatterAdd);
        out[at] = exclusive ? acc : next;
        acc = next;
      }
    }
}

namespace gather_detail {

// Strict "a ranks before b" for TopK: larger (or smaller) first, NaN above every number,
// ties broken by the lower index.
template <class E>
struct TopKOrder {
  const storage_t<E>* lane;
  int64_t stride;
  bool largest;
  bool operator()(int64_t ia, int64_t ib) const {
    const compute_t<E> a = load<E>(lane[ia * stride]), b = load<E>(lane[ib * stride]);
    bool a_gt = false, b_gt = false;
    if constexpr (is_floating_v<E>) {
      const bool an = a != a, bn = b != b;
      a_gt = (an && !bn) || (!an && !bn && a > b);
      b_gt = (bn && !an) || (!an && !bn && b > a);
    } else {
      a_gt = a > b;
      b_gt = b > a;
    }
    if (a_gt != b_gt) return largest ? a_gt : b_gt;
    return ia < ib;
  }
};

}  // namespace gather_detail

/// Scratch bytes topk() needs for an axis of n elements.
inline int64_t topk_scratch_bytes(int64_t n) {
  return n * int64_t(sizeof(int64_t));
}

/// TopK: in is [outer, n, inner]; values/indices are [outer, k, inner] (0 <= k <= n, checked
/// by the caller): the k largest (largest != 0) or smallest elements along the middle axis in
/// order, ties broken by the lower index (ONNX); NaN ranks above every number (numpy sort
/// order). Output is always sorted, which satisfies sorted = 0 as well. scratch: at least
/// topk_scratch_bytes(n) bytes, 8-byte aligned.
template <class E>
inline void topk(int64_t outer, int64_t n, int64_t inner, int64_t k, int largest,
                 const storage_t<E>* in, storage_t<E>* values, int64_t* indices, void* scratch) {
  if (k == 0) return;  // nothing to write; `in` may be null for an empty axis
  int64_t* order = static_cast<int64_t*>(scratch);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const storage_t<E>* lane = in + o * n * inner + i;
      for (int64_t t = 0; t < n; ++t) order[t] = t;
      std::partial_sort(order, order + k, order + n,
                        gather_detail::TopKOrder<E>{lane, inner, largest != 0});
      for (int64_t t = 0; t < k; ++t) {
        const int64_t at = (o * k + t) * inner + i;
        values[at] = lane[order[t] * inner];
        indices[at] = order[t];
      }
    }
}

/// NonZero, first pass: how many of the n elements are nonzero (NaN counts, -0.0 does not).
template <class E>
inline int64_t nonzero_count(int64_t n, const storage_t<E>* in) {
  int64_t count = 0;
  for (int64_t k = 0; k < n; ++k) count += load<E>(in[k]) != compute_t<E>(0);
  return count;
}

/// NonZero, second pass: out is int64 [rank, count] (count from nonzero_count): column c holds
/// the coordinates of the c-th nonzero element in row-major order. rank 0 writes nothing.
template <class E>
inline void nonzero(int rank, const int64_t* dims, const storage_t<E>* in, int64_t count,
                    int64_t* out) {
  const int64_t n = gather_detail::product(rank, dims);
  int64_t idx[kMaxRank] = {0};
  int64_t c = 0;
  for (int64_t k = 0; k < n && c < count; ++k) {
    if (load<E>(in[k]) != compute_t<E>(0)) {
      for (int d = 0; d < rank; ++d) out[d * count + c] = idx[d];
      ++c;
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace kiln_ref
