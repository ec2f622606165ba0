// kiln reference kernels: data movement on raw bytes (Concat, Split, Slice, Expand, Tile, Pad,
// DepthToSpace, SpaceToDepth, Trilu, ReverseSequence, Compress).
#pragma once

#include <cstdint>
#include <cstring>

#include "common.h"
#include "transpose.h"

// Every kernel here moves elements of `elem_size` bytes without looking at them, so one
// instantiation serves every dtype (bool, f16, int64, ...). Tensors are dense row-major. Shapes
// are checked by the caller (shape inference); kernels that read runtime indices or lengths
// validate those and return a nonzero int before writing anything when one is bad.

namespace kiln_ref {

namespace copy_detail {

inline void copy_bytes(void* dst, const void* src, int64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, size_t(bytes));
}

inline void row_major_strides(int rank, const int64_t* dims, int64_t* strides) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= dims[d];
  }
}

inline int64_t product(int rank, const int64_t* dims) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= dims[d];
  return n;
}

}  // namespace copy_detail

/// Concat: inputs[k] viewed as [outer, axis_dims[k], inner] (outer = product of the dims
/// before the axis, inner = product after it), out is [outer, sum(axis_dims), inner].
inline void concat(int64_t n_inputs, const void* const* inputs, const int64_t* axis_dims,
                   int64_t outer, int64_t inner, int64_t elem_size, void* out) {
  unsigned char* dst = static_cast<unsigned char*>(out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n_inputs; ++k) {
      const int64_t bytes = axis_dims[k] * inner * elem_size;
      copy_detail::copy_bytes(dst, static_cast<const unsigned char*>(inputs[k]) + o * bytes, bytes);
      dst += bytes;
    }
  }
}

/// Split: in viewed as [outer, sum(axis_dims), inner]; outputs[k] gets [outer, axis_dims[k],
/// inner] (the caller resolves `split`/num_outputs into axis_dims).
inline void split(const void* in, int64_t n_outputs, void* const* outputs, const int64_t* axis_dims,
                  int64_t outer, int64_t inner, int64_t elem_size) {
  const unsigned char* src = static_cast<const unsigned char*>(in);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < n_outputs; ++k) {
      const int64_t bytes = axis_dims[k] * inner * elem_size;
      copy_detail::copy_bytes(static_cast<unsigned char*>(outputs[k]) + o * bytes, src, bytes);
      src += bytes;
    }
  }
}

/// Slice: out[i_0..i_{r-1}] = in[starts[d] + i_d * steps[d]] over every axis d (steps may be
/// negative, never 0). The caller normalizes ONNX starts/ends/axes/steps: for each of the
/// `rank` axes it passes the first index read (clamped to a valid index when out_dims[d] > 0),
/// the step (1 for axes not sliced) and the output extent out_dims[d].
inline void slice(int rank, const int64_t* in_dims, const int64_t* starts, const int64_t* steps,
                  const int64_t* out_dims, int64_t elem_size, const void* in, void* out) {
  if (copy_detail::product(rank, out_dims) == 0) return;
  int64_t in_strides[kMaxRank], src_strides[kMaxRank];
  copy_detail::row_major_strides(rank, in_dims, in_strides);
  int64_t base = 0;
  for (int d = 0; d < rank; ++d) {
    base += starts[d] * in_strides[d];
    src_strides[d] = steps[d] * in_strides[d];
  }
  // A unit-step innermost axis is copied as one run.
  int n = rank;
  int64_t block = 1;
  if (rank > 0 && steps[rank - 1] == 1) block = out_dims[--n];
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  for_each_strided(n, out_dims, src_strides, base, [&](int64_t o, int64_t i) {
    std::memcpy(dst + o * block * elem_size, src + i * elem_size, size_t(block * elem_size));
  });
}

/// Resolves ONNX Slice parameters read at run time into slice()'s per-axis starts and steps:
/// n entries of starts/ends, axes (nullptr: 0..n-1; negative counts from the end) and steps
/// (nullptr: all 1), clamped as ONNX specifies. Axes not listed keep start 0, step 1.
/// Returns 1 (writing nothing to the tensors) when an axis is out of range or repeated, a
/// step is 0, or an extent differs from out_dims (the shape the caller was built for).
template <class I>
inline int slice_resolve(int rank, const int64_t* in_dims, const int64_t* out_dims, int64_t n,
                         const I* starts, const I* ends, const I* axes, const I* steps,
                         int64_t* out_starts, int64_t* out_steps) {
  bool seen[kMaxRank] = {};
  for (int d = 0; d < rank; ++d) {
    out_starts[d] = 0;
    out_steps[d] = 1;
  }
  for (int64_t k = 0; k < n; ++k) {
    int64_t a = axes ? int64_t(axes[k]) : k;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank || seen[a]) return 1;
    seen[a] = true;
    const int64_t step = steps ? int64_t(steps[k]) : 1, dim = in_dims[a];
    if (step == 0) return 1;
    int64_t s = int64_t(starts[k]), e = int64_t(ends[k]), count = 0;
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = s < 0 ? 0 : (s > dim ? dim : s);
      e = e < 0 ? 0 : (e > dim ? dim : e);
      count = e > s ? (e - s - 1) / step + 1 : 0;
    } else if (dim > 0) {
      s = s < 0 ? 0 : (s > dim - 1 ? dim - 1 : s);
      e = e < -1 ? -1 : (e > dim - 1 ? dim - 1 : e);
      count = s > e ? int64_t(uint64_t(s - e - 1) / (uint64_t(0) - uint64_t(step))) + 1 : 0;
    }
    if (count != out_dims[a]) return 1;
    out_starts[a] = count > 0 ? s : 0;
    out_steps[a] = count > 1 ? step : 1;
  }
  for (int d = 0; d < rank; ++d)
    if (!seen[d] && out_dims[d] != in_dims[d]) return 1;
  return 0;
}

/// Reverse (tflite REVERSE_V2, or Slice with step -1): out = in with the axes whose
/// reverse_axes[d] is nonzero flipped. dims and reverse_axes have `rank` entries.
inline void reverse(int rank, const int64_t* dims, const int64_t* reverse_axes, int64_t elem_size,
                    const void* in, void* out) {
  int64_t starts[kMaxRank], steps[kMaxRank];
  for (int d = 0; d < rank; ++d) {
    const bool flip = reverse_axes[d] != 0;
    starts[d] = flip ? dims[d] - 1 : 0;
    steps[d] = flip ? -1 : 1;
  }
  slice(rank, dims, starts, steps, dims, elem_size, in, out);
}

/// Expand (numpy broadcast copy): out[out_dims] from in[in_dims], in_rank <= out_rank; in's
/// dims align with out's last in_rank dims and are either equal to them or 1.
inline void expand(int in_rank, const int64_t* in_dims, int out_rank, const int64_t* out_dims,
                   int64_t elem_size, const void* in, void* out) {
  if (copy_detail::product(out_rank, out_dims) == 0) return;
  int64_t in_strides[kMaxRank], src_strides[kMaxRank];
  copy_detail::row_major_strides(in_rank, in_dims, in_strides);
  const int lead = out_rank - in_rank;
  for (int d = 0; d < out_rank; ++d) {
    const int k = d - lead;
    src_strides[d] = (k < 0 || in_dims[k] == 1) ? 0 : in_strides[k];
  }
  int n = out_rank;
  int64_t block = 1;
  if (out_rank > 0 && src_strides[out_rank - 1] == 1) block = out_dims[--n];
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  for_each_strided(n, out_dims, src_strides, 0, [&](int64_t o, int64_t i) {
    std::memcpy(dst + o * block * elem_size, src + i * elem_size, size_t(block * elem_size));
  });
}

/// Tile: out dims are in_dims[d] * repeats[d]; out[i] = in[i_d mod in_dims[d]].
inline void tile(int rank, const int64_t* in_dims, const int64_t* repeats, int64_t elem_size,
                 const void* in, void* out) {
  int64_t out_dims[kMaxRank], in_strides[kMaxRank];
  for (int d = 0; d < rank; ++d) out_dims[d] = in_dims[d] * repeats[d];
  if (copy_detail::product(rank, out_dims) == 0) return;
  copy_detail::row_major_strides(rank, in_dims, in_strides);
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  if (rank == 0) {
    std::memcpy(dst, src, size_t(elem_size));
    return;
  }
  // Each output row (last axis) is the matching input row repeated.
  const int64_t row_bytes = in_dims[rank - 1] * elem_size;
  const int64_t rows = copy_detail::product(rank - 1, out_dims);
  int64_t idx[kMaxRank] = {0};
  for (int64_t r = 0; r < rows; ++r) {
    int64_t src_row = 0;
    for (int d = 0; d < rank - 1; ++d) src_row += (idx[d] % in_dims[d]) * in_strides[d];
    for (int64_t k = 0; k < repeats[rank - 1]; ++k) {
      std::memcpy(dst, src + src_row * elem_size, size_t(row_bytes));
      dst += row_bytes;
    }
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
}

/// Pad modes (ONNX Pad `mode`).
enum PadMode : int { kPadConstant = 0, kPadReflect = 1, kPadEdge = 2, kPadWrap = 3 };

namespace copy_detail {

// Source index along one axis for output position o, or -1 for the constant value. The axis
// is first cropped to [lo, lo + n) (negative pads), then padded by `before` (>= 0).
inline int64_t pad_source(int64_t o, int64_t before, int64_t lo, int64_t n, int mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return lo + i;
  switch (mode) {
    case kPadEdge:
      return lo + (i < 0 ? 0 : n - 1);
    case kPadWrap:
      return lo + ((i % n) + n) % n;
    case kPadReflect: {
      if (n == 1) return lo;
      const int64_t period = 2 * (n - 1);
      int64_t m = ((i % period) + period) % period;
      return lo + (m < n ? m : period - m);
    }
    default:
      return -1;
  }
}

}  // namespace copy_detail

/// Pad: pads has 2*rank entries, ONNX order [begin_0..begin_{r-1}, end_0..end_{r-1}], either
/// sign (negative crops); out dim d = in_dims[d] + begin_d + end_d (>= 0, checked by the
/// caller). Negative pads crop first, then the remaining positive pads are filled by `mode`:
/// constant copies `value` (elem_size bytes; nullptr means all-zero bytes), edge repeats the
/// border element, reflect mirrors without repeating it (numpy 'reflect', any pad width), wrap
/// repeats periodically. Returns 1 (writing nothing) when a non-constant mode must pad an axis
/// whose cropped extent is 0; 0 on success.
inline int pad(int rank, const int64_t* in_dims, const int64_t* pads, int mode, const void* value,
               int64_t elem_size, const void* in, void* out) {
  int64_t out_dims[kMaxRank], before[kMaxRank], lo[kMaxRank], n[kMaxRank];
  int64_t in_strides[kMaxRank];
  for (int d = 0; d < rank; ++d) {
    const int64_t b = pads[d], e = pads[d + rank];
    out_dims[d] = in_dims[d] + b + e;
    before[d] = b > 0 ? b : 0;
    lo[d] = b < 0 ? -b : 0;
    n[d] = in_dims[d] - lo[d] - (e < 0 ? -e : 0);
  }
  const int64_t total = copy_detail::product(rank, out_dims);
  if (total == 0) return 0;
  if (mode != kPadConstant) {
    for (int d = 0; d < rank; ++d)
      if (n[d] <= 0) return 1;
  }
  copy_detail::row_major_strides(rank, in_dims, in_strides);
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  auto put_value = [&](unsigned char* p, int64_t count) {
    for (int64_t k = 0; k < count; ++k, p += elem_size) {
      if (value)
        std::memcpy(p, value, size_t(elem_size));
      else
        std::memset(p, 0, size_t(elem_size));
    }
  };
  if (rank == 0) {
    std::memcpy(dst, src, size_t(elem_size));
    return 0;
  }
  const int last = rank - 1;
  const int64_t width = out_dims[last];
  const int64_t rows = total / width;
  int64_t idx[kMaxRank] = {0};
  for (int64_t r = 0; r < rows; ++r, dst += width * elem_size) {
    int64_t row = 0;
    bool inside = true;
    for (int d = 0; d < last && inside; ++d) {
      int64_t s = copy_detail::pad_source(idx[d], before[d], lo[d], n[d], mode);
      inside = s >= 0;
      row += s * in_strides[d];
    }
    if (!inside) {
      put_value(dst, width);
    } else {
      const unsigned char* src_row = src + row * elem_size;
      // Middle run [before, before + n) maps to [lo, lo + n): one memcpy.
      const int64_t mid_begin = before[last];
      const int64_t mid_end = mid_begin + (n[last] > 0 ? n[last] : 0);
      for (int64_t o = 0; o < width; ++o) {
        if (o == mid_begin && mid_end > mid_begin) {
          std::memcpy(dst + o * elem_size, src_row + lo[last] * elem_size,
                      size_t((mid_end - mid_begin) * elem_size));
          o = mid_end - 1;
          continue;
        }
        int64_t s = copy_detail::pad_source(o, before[last], lo[last], n[last], mode);
        if (s < 0)
          put_value(dst + o * elem_size, 1);
        else
          std::memcpy(dst + o * elem_size, src_row + s * elem_size, size_t(elem_size));
      }
    }
    for (int d = last - 1; d >= 0; --d) {
      if (++idx[d] < out_dims[d]) break;
      idx[d] = 0;
    }
  }
  return 0;
}

/// Whether pads read at run time (2*rank entries, pad()'s order) turn in_dims into out_dims
/// (the shape the caller was built for): 0 when they do, 1 otherwise (also for pads so large
/// that their sum would overflow).
inline int pads_match(int rank, const int64_t* in_dims, const int64_t* pads,
                      const int64_t* out_dims) {
  const int64_t limit = int64_t(1) << 62;
  for (int d = 0; d < rank; ++d) {
    const int64_t b = pads[d], e = pads[d + rank];
    if (b < -limit || b > limit || e < -limit || e > limit) return 1;
    if (in_dims[d] + b + e != out_dims[d]) return 1;
  }
  return 0;
}

/// DepthToSpace: in [N, C, H, W] -> out [N, C/(b*b), H*b, W*b], b = blocksize.
/// DCR (crd == 0): out[n, c, h*b+i, w*b+j] = in[n, (i*b + j) * C/(b*b) + c, h, w];
/// CRD (crd != 0): out[n, c, h*b+i, w*b+j] = in[n, c*b*b + i*b + j, h, w].
inline void depth_to_space(int64_t N, int64_t C, int64_t H, int64_t W, int64_t b, int crd,
                           int64_t elem_size, const void* in, void* out) {
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  const int64_t oc = C / (b * b), oh = H * b, ow = W * b;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < oc; ++c)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t i = y % b, j = x % b;
          const int64_t ic = crd ? c * b * b + i * b + j : (i * b + j) * oc + c;
          const int64_t s = ((n * C + ic) * H + y / b) * W + x / b;
          std::memcpy(dst, src + s * elem_size, size_t(elem_size));
          dst += elem_size;
        }
}

/// SpaceToDepth: in [N, C, H, W] -> out [N, C*b*b, H/b, W/b] with
/// out[n, (i*b + j) * C + c, h, w] = in[n, c, h*b+i, w*b+j].
inline void space_to_depth(int64_t N, int64_t C, int64_t H, int64_t W, int64_t b, int64_t elem_size,
                           const void* in, void* out) {
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  const int64_t oc = C * b * b, oh = H / b, ow = W / b;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < oc; ++k)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          const int64_t c = k % C, i = (k / C) / b, j = (k / C) % b;
          const int64_t s = ((n * C + c) * H + y * b + i) * W + x * b + j;
          std::memcpy(dst, src + s * elem_size, size_t(elem_size));
          dst += elem_size;
        }
}

/// Trilu: in/out are [batch, rows, cols]; keeps element (i, j) when j - i >= k (upper != 0)
/// or j - i <= k (upper == 0) and writes zero bytes elsewhere. k is any int64.
inline void trilu(int64_t batch, int64_t rows, int64_t cols, int64_t k, int upper,
                  int64_t elem_size, const void* in, void* out) {
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j, src += elem_size, dst += elem_size) {
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        if (keep)
          std::memcpy(dst, src, size_t(elem_size));
        else
          std::memset(dst, 0, size_t(elem_size));
      }
}

/// ReverseSequence: in/out are [d0, d1, inner] where one of axes 0/1 is the batch axis and the
/// other the time axis (time_axis is 0 or 1, ONNX's only choices); for batch b the first
/// seq_lens[b] time steps are reversed, the rest copied. Returns 1 (writing nothing) when a
/// length is outside [0, time extent]; 0 on success.
inline int reverse_sequence(int64_t d0, int64_t d1, int64_t inner, int time_axis,
                            const int64_t* seq_lens, int64_t elem_size, const void* in, void* out) {
  const int64_t batch = time_axis == 0 ? d1 : d0, steps = time_axis == 0 ? d0 : d1;
  for (int64_t b = 0; b < batch; ++b)
    if (seq_lens[b] < 0 || seq_lens[b] > steps) return 1;
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  const int64_t row = inner * elem_size;
  for (int64_t a = 0; a < d0; ++a)
    for (int64_t c = 0; c < d1; ++c) {
      const int64_t b = time_axis == 0 ? c : a, t = time_axis == 0 ? a : c;
      const int64_t st = t < seq_lens[b] ? seq_lens[b] - 1 - t : t;
      const int64_t sa = time_axis == 0 ? st : a, sc = time_axis == 0 ? c : st;
      copy_detail::copy_bytes(dst + (a * d1 + c) * row, src + (sa * d1 + sc) * row, row);
    }
  return 0;
}

/// Compress: in viewed as [outer, axis_dim, inner] (axis absent: outer = inner = 1, axis_dim =
/// element count); keeps the slices along the axis whose condition entry is true. The
/// condition may be shorter than the axis (missing entries are false). Writes
/// [outer, count, inner] and returns count; returns -1 (writing nothing) when a true entry
/// lies past the end of the axis.
inline int64_t compress(int64_t outer, int64_t axis_dim, int64_t inner, const bool* condition,
                        int64_t condition_len, int64_t elem_size, const void* in, void* out) {
  int64_t count = 0;
  for (int64_t k = 0; k < condition_len; ++k) {
    if (!condition[k]) continue;
    if (k >= axis_dim) return -1;
    ++count;
  }
  const unsigned char* src = static_cast<const unsigned char*>(in);
  unsigned char* dst = static_cast<unsigned char*>(out);
  const int64_t row = inner * elem_size;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < condition_len && k < axis_dim; ++k) {
      if (!condition[k]) continue;
      copy_detail::copy_bytes(dst, src + (o * axis_dim + k) * row, row);
      dst += row;
    }
  return count;
}

}  // namespace kiln_ref
