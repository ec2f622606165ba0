// Reference data-movement and misc kernels (kernels/ref/{transpose,copy,gather,cast,resize,misc}.h)
// against hand-checked ONNX examples, onnx 1.12 node-test data and independent formulations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "../../kernels/ref/cast.h"
#include "../../kernels/ref/copy.h"
#include "../../kernels/ref/gather.h"
#include "../../kernels/ref/misc.h"
#include "../../kernels/ref/resize.h"
#include "../../kernels/ref/transpose.h"

namespace {

using Dims = std::vector<int64_t>;
using Bytes = std::vector<unsigned char>;

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

Dims unravel(int64_t linear, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = linear % dims[k];
    linear /= dims[k];
  }
  return idx;
}

int64_t ravel(const Dims& idx, const Dims& dims) {
  int64_t r = 0;
  for (size_t k = 0; k < dims.size(); ++k) r = r * dims[k] + idx[k];
  return r;
}

struct Rng {
  std::mt19937_64 gen{12345};
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen); }
  Bytes bytes(int64_t n) {
    Bytes b(static_cast<size_t>(n > 0 ? n : 0));
    for (auto& v : b) v = static_cast<unsigned char>(uniform(0, 255));
    return b;
  }
  Dims dims(int rank, int64_t lo, int64_t hi) {
    Dims d(static_cast<size_t>(rank));
    for (auto& v : d) v = uniform(lo, hi);
    return d;
  }
};

int64_t pick_elem_size(Rng& r) {
  static const int64_t sizes[] = {1, 2, 3, 4, 8};
  return sizes[r.uniform(0, 4)];
}

// Copies element `from` of src to element `to` of dst (elem_size bytes).
void put(Bytes& dst, int64_t to, const Bytes& src, int64_t from, int64_t es) {
  std::memcpy(dst.data() + to * es, src.data() + from * es, size_t(es));
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                  double atol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::fabs(double(got[i]) - double(want[i])), atol + rtol * std::fabs(double(want[i])))
        << what << " element " << i << " got " << got[i] << " want " << want[i];
}

// ============================== transpose ==============================

TEST(KernelsDataTranspose, HandChecked) {
  const float in[6] = {1, 2, 3, 4, 5, 6};  // [2, 3]
  float out[6];
  const int64_t dims[2] = {2, 3}, perm[2] = {1, 0};
  kiln_ref::transpose(2, dims, perm, 4, in, out);
  const float want[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], want[i]);
  // rank 0: one element.
  const double s = 3.5;
  double t = 0;
  kiln_ref::transpose(0, nullptr, nullptr, 8, &s, &t);
  EXPECT_EQ(t, 3.5);
}

TEST(KernelsDataTranspose, RandomAgainstIndexMapping) {
  Rng r;
  for (int iter = 0; iter < 400; ++iter) {
    const int rank = int(r.uniform(0, 6));
    Dims dims = r.dims(rank, 1, 4);
    if (rank > 0 && r.uniform(0, 15) == 0) dims[size_t(r.uniform(0, rank - 1))] = 0;
    Dims perm(static_cast<size_t>(rank));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), r.gen);
    const int64_t es = pick_elem_size(r), n = numel(dims);
    Bytes in = r.bytes(n * es), out(static_cast<size_t>(n * es), 0xAB),
          want(static_cast<size_t>(n * es));
    Dims out_dims(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) out_dims[size_t(d)] = dims[size_t(perm[size_t(d)])];
    for (int64_t o = 0; o < n; ++o) {
      Dims oi = unravel(o, out_dims), ii(static_cast<size_t>(rank));
      for (int d = 0; d < rank; ++d) ii[size_t(perm[size_t(d)])] = oi[size_t(d)];
      put(want, o, in, ravel(ii, dims), es);
    }
    kiln_ref::transpose(rank, dims.data(), perm.data(), es, in.data(), out.data());
    ASSERT_EQ(out, want) << "iteration " << iter << " rank " << rank;
  }
}

// ============================== copy.h ==============================

TEST(KernelsDataCopy, ConcatSplitRandomRoundTrip) {
  Rng r;
  for (int iter = 0; iter < 200; ++iter) {
    const int rank = int(r.uniform(1, 5));
    const int axis = int(r.uniform(0, rank - 1));
    Dims base = r.dims(rank, 1, 3);
    const int64_t k = r.uniform(1, 4), es = pick_elem_size(r);
    std::vector<Dims> shapes;
    std::vector<Bytes> ins;
    Dims axis_dims;
    int64_t total_axis = 0;
    for (int64_t i = 0; i < k; ++i) {
      Dims s = base;
      s[size_t(axis)] = r.uniform(0, 3);
      axis_dims.push_back(s[size_t(axis)]);
      total_axis += s[size_t(axis)];
      shapes.push_back(s);
      ins.push_back(r.bytes(numel(s) * es));
    }
    Dims out_dims = base;
    out_dims[size_t(axis)] = total_axis;
    const int64_t n = numel(out_dims);
    Bytes want(static_cast<size_t>(n * es)), out(static_cast<size_t>(n * es), 0xCD);
    for (int64_t o = 0; o < n; ++o) {
      Dims idx = unravel(o, out_dims);
      int64_t a = idx[size_t(axis)], which = 0;
      while (a >= axis_dims[size_t(which)]) a -= axis_dims[size_t(which++)];
      idx[size_t(axis)] = a;
      put(want, o, ins[size_t(which)], ravel(idx, shapes[size_t(which)]), es);
    }
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= base[size_t(d)];
    for (int d = axis + 1; d < rank; ++d) inner *= base[size_t(d)];
    std::vector<const void*> ptrs;
    for (auto& b : ins) ptrs.push_back(b.data());
    kiln_ref::concat(k, ptrs.data(), axis_dims.data(), outer, inner, es, out.data());
    ASSERT_EQ(out, want) << "concat iteration " << iter;
    std::vector<Bytes> parts;
    std::vector<void*> outs;
    for (int64_t i = 0; i < k; ++i) parts.emplace_back(ins[size_t(i)].size(), 0);
    for (auto& p : parts) outs.push_back(p.data());
    kiln_ref::split(out.data(), k, outs.data(), axis_dims.data(), outer, inner, es);
    for (int64_t i = 0; i < k; ++i) ASSERT_EQ(parts[size_t(i)], ins[size_t(i)]) << "split " << iter;
  }
}

TEST(KernelsDataCopy, SliceRandomWithNegativeSteps) {
  Rng r;
  for (int iter = 0; iter < 400; ++iter) {
    const int rank = int(r.uniform(0, 6));
    Dims dims = r.dims(rank, 1, 5), starts(static_cast<size_t>(rank)),
         steps(static_cast<size_t>(rank)), out_dims(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) {
      const int64_t n = dims[size_t(d)];
      int64_t step = r.uniform(1, 3) * (r.uniform(0, 1) ? 1 : -1);
      const int64_t start = r.uniform(0, n - 1);
      // End exclusive, anywhere in the step's direction (possibly giving 0 elements).
      const int64_t end = step > 0 ? r.uniform(start, n) : r.uniform(-1, start);
      const int64_t span = step > 0 ? end - start : start - end, st = step > 0 ? step : -step;
      starts[size_t(d)] = start;
      steps[size_t(d)] = step;
      out_dims[size_t(d)] = (span + st - 1) / st;
    }
    const int64_t es = pick_elem_size(r), n = numel(out_dims);
    Bytes in = r.bytes(numel(dims) * es), out(static_cast<size_t>(n * es), 0x11),
          want(static_cast<size_t>(n * es));
    for (int64_t o = 0; o < n; ++o) {
      Dims idx = unravel(o, out_dims);
      for (int d = 0; d < rank; ++d)
        idx[size_t(d)] = starts[size_t(d)] + idx[size_t(d)] * steps[size_t(d)];
      put(want, o, in, ravel(idx, dims), es);
    }
    kiln_ref::slice(rank, dims.data(), starts.data(), steps.data(), out_dims.data(), es, in.data(),
                    out.data());
    ASSERT_EQ(out, want) << "iteration " << iter;
  }
}

TEST(KernelsDataCopy, ReverseAxes) {
  const int32_t in[6] = {1, 2, 3, 4, 5, 6};  // [2, 3]
  int32_t out[6];
  const int64_t dims[2] = {2, 3}, flip_cols[2] = {0, 1}, flip_both[2] = {1, 1};
  kiln_ref::reverse(2, dims, flip_cols, 4, in, out);
  EXPECT_EQ(std::vector<int32_t>(out, out + 6), (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  kiln_ref::reverse(2, dims, flip_both, 4, in, out);
  EXPECT_EQ(std::vector<int32_t>(out, out + 6), (std::vector<int32_t>{6, 5, 4, 3, 2, 1}));
}

TEST(KernelsDataCopy, ExpandRandom) {
  Rng r;
  for (int iter = 0; iter < 300; ++iter) {
    const int out_rank = int(r.uniform(0, 6)), in_rank = int(r.uniform(0, out_rank));
    Dims out_dims = r.dims(out_rank, 1, 3), in_dims(static_cast<size_t>(in_rank));
    if (out_rank > 0 && r.uniform(0, 10) == 0) out_dims[size_t(r.uniform(0, out_rank - 1))] = 0;
    for (int k = 0; k < in_rank; ++k) {
      const int64_t od = out_dims[size_t(out_rank - in_rank + k)];
      in_dims[size_t(k)] = r.uniform(0, 1) ? od : 1;
    }
    const int64_t es = pick_elem_size(r), n = numel(out_dims);
    Bytes in = r.bytes(numel(in_dims) * es), out(static_cast<size_t>(n * es), 0),
          want(static_cast<size_t>(n * es));
    for (int64_t o = 0; o < n; ++o) {
      Dims oi = unravel(o, out_dims), ii(static_cast<size_t>(in_rank));
      for (int k = 0; k < in_rank; ++k)
        ii[size_t(k)] = in_dims[size_t(k)] == 1 ? 0 : oi[size_t(out_rank - in_rank + k)];
      put(want, o, in, ravel(ii, in_dims), es);
    }
    kiln_ref::expand(in_rank, in_dims.data(), out_rank, out_dims.data(), es, in.data(), out.data());
    ASSERT_EQ(out, want) << "iteration " << iter;
  }
}

TEST(KernelsDataCopy, TileRandomAndExample) {
  // ONNX tile_precomputed: [[0, 1], [2, 3]] repeats [2, 2].
  const int32_t x[4] = {0, 1, 2, 3};
  int32_t y[16];
  const int64_t dims[2] = {2, 2}, reps[2] = {2, 2};
  kiln_ref::tile(2, dims, reps, 4, x, y);
  EXPECT_EQ(std::vector<int32_t>(y, y + 16),
            (std::vector<int32_t>{0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3}));
  Rng r;
  for (int iter = 0; iter < 300; ++iter) {
    const int rank = int(r.uniform(0, 5));
    Dims in_dims = r.dims(rank, 1, 3), repeats = r.dims(rank, 0, 3),
         out_dims(static_cast<size_t>(rank));
    for (int d = 0; d < rank; ++d) out_dims[size_t(d)] = in_dims[size_t(d)] * repeats[size_t(d)];
    const int64_t es = pick_elem_size(r), n = numel(out_dims);
    Bytes in = r.bytes(numel(in_dims) * es), out(static_cast<size_t>(n * es), 0),
          want(static_cast<size_t>(n * es));
    for (int64_t o = 0; o < n; ++o) {
      Dims idx = unravel(o, out_dims);
      for (int d = 0; d < rank; ++d) idx[size_t(d)] %= in_dims[size_t(d)];
      put(want, o, in, ravel(idx, in_dims), es);
    }
    kiln_ref::tile(rank, in_dims.data(), repeats.data(), es, in.data(), out.data());
    ASSERT_EQ(out, want) << "iteration " << iter;
  }
}

TEST(KernelsDataCopy, PadMatchesNumpy) {
  // np.pad([1,2,3], 7, mode) and np.pad([1,2], 5, 'reflect') from numpy 1.24.
  const int32_t x3[3] = {1, 2, 3}, x2[2] = {1, 2}, x1[1] = {1};
  int32_t out[17];
  const int64_t d3[1] = {3}, d2[1] = {2}, d1[1] = {1}, p7[2] = {7, 7}, p5[2] = {5, 5},
                p2[2] = {2, 2};
  ASSERT_EQ(kiln_ref::pad(1, d3, p7, kiln_ref::kPadReflect, nullptr, 4, x3, out), 0);
  EXPECT_EQ(std::vector<int32_t>(out, out + 17),
            (std::vector<int32_t>{2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2}));
  ASSERT_EQ(kiln_ref::pad(1, d3, p7, kiln_ref::kPadWrap, nullptr, 4, x3, out), 0);
  EXPECT_EQ(std::vector<int32_t>(out, out + 17),
            (std::vector<int32_t>{3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1}));
  ASSERT_EQ(kiln_ref::pad(1, d2, p5, kiln_ref::kPadReflect, nullptr, 4, x2, out), 0);
  EXPECT_EQ(std::vector<int32_t>(out, out + 12),
            (std::vector<int32_t>{2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}));
  ASSERT_EQ(kiln_ref::pad(1, d1, p2, kiln_ref::kPadReflect, nullptr, 4, x1, out), 0);
  EXPECT_EQ(std::vector<int32_t>(out, out + 5), (std::vector<int32_t>{1, 1, 1, 1, 1}));
  // ONNX constant_pad style: value bytes of the element type.
  const float v = 1.5f, xf[2] = {7, 8};
  float of[5];
  const int64_t p12[2] = {1, 2};
  ASSERT_EQ(kiln_ref::pad(1, d2, p12, kiln_ref::kPadConstant, &v, 4, xf, of), 0);
  EXPECT_EQ(std::vector<float>(of, of + 5), (std::vector<float>{1.5f, 7, 8, 1.5f, 1.5f}));
  // Edge/reflect/wrap of an axis cropped to nothing is an error, and writes nothing.
  const int64_t crop_all[2] = {-1, 1};
  out[0] = 42;
  EXPECT_EQ(kiln_ref::pad(1, d1, crop_all, kiln_ref::kPadEdge, nullptr, 4, x1, out), 1);
  EXPECT_EQ(out[0], 42);
  EXPECT_EQ(kiln_ref::pad(1, d1, crop_all, kiln_ref::kPadConstant, nullptr, 4, x1, out), 0);
  EXPECT_EQ(out[0], 0);
}

// Independent formulation: crop explicitly, then map each padded coordinate by bouncing,
// stepping or clamping until it lands inside.
int64_t bounce(int64_t i, int64_t n, int mode) {
  if (mode == kiln_ref::kPadEdge) return std::min(std::max(i, int64_t(0)), n - 1);
  if (mode == kiln_ref::kPadWrap) {
    while (i < 0) i += n;
    while (i >= n) i -= n;
    return i;
  }
  if (n == 1) return 0;
  while (i < 0 || i >= n) {
    if (i < 0) i = -i;
    if (i >= n) i = 2 * (n - 1) - i;
  }
  return i;
}

TEST(KernelsDataCopy, PadRandomAllModes) {
  Rng r;
  for (int iter = 0; iter < 400; ++iter) {
    const int rank = int(r.uniform(0, 4));
    const int mode = int(r.uniform(0, 3));
    Dims dims = r.dims(rank, 1, 4), pads(static_cast<size_t>(2 * rank)),
         lo(static_cast<size_t>(rank)), cropped(static_cast<size_t>(rank)),
         out_dims(static_cast<size_t>(rank));
    bool ok = true;
    for (int d = 0; d < rank; ++d) {
      int64_t b = r.uniform(-2, 4), e = r.uniform(-2, 4);
      const int64_t keep = dims[size_t(d)] - std::max(-b, int64_t(0)) - std::max(-e, int64_t(0));
      if (keep < (mode == kiln_ref::kPadConstant ? 0 : 1)) b = e = 0;
      pads[size_t(d)] = b;
      pads[size_t(d + rank)] = e;
      lo[size_t(d)] = std::max(-b, int64_t(0));
      cropped[size_t(d)] = dims[size_t(d)] - lo[size_t(d)] - std::max(-e, int64_t(0));
      out_dims[size_t(d)] = dims[size_t(d)] + b + e;
      ok = ok && out_dims[size_t(d)] >= 0;
    }
    ASSERT_TRUE(ok);
    const int64_t es = pick_elem_size(r), n = numel(out_dims);
    Bytes in = r.bytes(numel(dims) * es), value = r.bytes(es);
    Bytes out(static_cast<size_t>(n * es), 0x5A), want(static_cast<size_t>(n * es));
    for (int64_t o = 0; o < n; ++o) {
      Dims idx = unravel(o, out_dims);
      bool constant = false;
      for (int d = 0; d < rank && !constant; ++d) {
        const int64_t i = idx[size_t(d)] - std::max(pads[size_t(d)], int64_t(0));
        if (i >= 0 && i < cropped[size_t(d)]) {
          idx[size_t(d)] = lo[size_t(d)] + i;
        } else if (mode == kiln_ref::kPadConstant) {
          constant = true;
        } else {
          idx[size_t(d)] = lo[size_t(d)] + bounce(i, cropped[size_t(d)], mode);
        }
      }
      if (constant)
        std::memcpy(want.data() + o * es, value.data(), size_t(es));
      else
        put(want, o, in, ravel(idx, dims), es);
    }
    ASSERT_EQ(kiln_ref::pad(rank, dims.data(), pads.data(), mode, value.data(), es, in.data(),
                            out.data()),
              0);
    ASSERT_EQ(out, want) << "iteration " << iter << " mode " << mode;
  }
}

TEST(KernelsDataCopy, DepthToSpaceBothModesAndSpaceToDepthInverse) {
  // ONNX depthtospace_example (DCR) and crd_mode_example, x = arange(16) reshaped [1, 8, 1, 2]
  // and [1, 8, 2, 3] respectively: checked against the reshape/transpose definitions.
  Rng r;
  for (int iter = 0; iter < 100; ++iter) {
    const int64_t b = r.uniform(1, 3), N = r.uniform(1, 2), oc = r.uniform(1, 3),
                  H = r.uniform(1, 3), W = r.uniform(1, 3), C = oc * b * b;
    const int crd = int(r.uniform(0, 1));
    const int64_t es = pick_elem_size(r), n = N * C * H * W;
    Bytes in = r.bytes(n * es), out(static_cast<size_t>(n * es)), want(static_cast<size_t>(n * es)),
          back(static_cast<size_t>(n * es));
    // DCR: [N, b, b, oc, H, W] -> [N, oc, H, b, W, b]; CRD: [N, oc, b, b, H, W] -> same.
    const Dims src_dims = crd ? Dims{N, oc, b, b, H, W} : Dims{N, b, b, oc, H, W};
    const Dims out_dims{N, oc, H, b, W, b};
    for (int64_t o = 0; o < n; ++o) {
      Dims i = unravel(o, out_dims);  // n, c, h, i, w, j
      Dims s =
          crd ? Dims{i[0], i[1], i[3], i[5], i[2], i[4]} : Dims{i[0], i[3], i[5], i[1], i[2], i[4]};
      put(want, o, in, ravel(s, src_dims), es);
    }
    kiln_ref::depth_to_space(N, C, H, W, b, crd, es, in.data(), out.data());
    ASSERT_EQ(out, want) << "iteration " << iter;
    if (!crd) {  // SpaceToDepth is DCR's inverse.
      kiln_ref::space_to_depth(N, oc, H * b, W * b, b, es, out.data(), back.data());
      ASSERT_EQ(back, in) << "iteration " << iter;
    }
  }
}

TEST(KernelsDataCopy, TriluExamples) {
  // ONNX triu/tril on a 4x5 matrix for several k, against the definition.
  const int64_t rows = 4, cols = 5;
  std::vector<int64_t> x(rows * cols * 2), y(x.size());
  std::iota(x.begin(), x.end(), 1);
  for (int64_t k : {int64_t(-7), int64_t(-1), int64_t(0), int64_t(2), int64_t(6),
                    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()})
    for (int upper = 0; upper < 2; ++upper) {
      kiln_ref::trilu(2, rows, cols, k, upper, 8, x.data(), y.data());
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < rows; ++i)
          for (int64_t j = 0; j < cols; ++j) {
            const int64_t at = (b * rows + i) * cols + j;
            const bool keep = upper ? j >= i + std::max<int64_t>(std::min<int64_t>(k, 99), -99)
                                    : j <= i + std::max<int64_t>(std::min<int64_t>(k, 99), -99);
            EXPECT_EQ(y[size_t(at)], keep ? x[size_t(at)] : 0) << k << " " << upper;
          }
    }
}

TEST(KernelsDataCopy, ReverseSequenceOnnxExamples) {
  // reversesequence_time: x [4, 4] time-major, lengths [4, 3, 2, 1].
  const float x[16] = {0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15};
  const int64_t lens[4] = {4, 3, 2, 1};
  float y[16];
  ASSERT_EQ(kiln_ref::reverse_sequence(4, 4, 1, 0, lens, 4, x, y), 0);
  const float want_t[16] = {3, 6, 9, 12, 2, 5, 8, 13, 1, 4, 10, 14, 0, 7, 11, 15};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], want_t[i]) << i;
  // reversesequence_batch: x [4, 4] batch-major, lengths [1, 2, 3, 4].
  const float xb[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  const int64_t lb[4] = {1, 2, 3, 4};
  ASSERT_EQ(kiln_ref::reverse_sequence(4, 4, 1, 1, lb, 4, xb, y), 0);
  const float want_b[16] = {0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 15, 14, 13, 12};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[i], want_b[i]) << i;
  const int64_t bad[4] = {1, 5, 0, 0};
  y[0] = -1;
  EXPECT_EQ(kiln_ref::reverse_sequence(4, 4, 1, 1, bad, 4, xb, y), 1);
  EXPECT_EQ(y[0], -1);
}

TEST(KernelsDataCopy, CompressOnnxExamples) {
  const float x[6] = {1, 2, 3, 4, 5, 6};  // [3, 2]
  float y[6];
  const bool c0[3] = {false, true, true};
  EXPECT_EQ(kiln_ref::compress(1, 3, 2, c0, 3, 4, x, y), 2);  // axis 0
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{3, 4, 5, 6}));
  const bool c1[2] = {false, true};
  EXPECT_EQ(kiln_ref::compress(3, 2, 1, c1, 2, 4, x, y), 1);  // axis 1
  EXPECT_EQ(std::vector<float>(y, y + 3), (std::vector<float>{2, 4, 6}));
  const bool cd[5] = {false, true, false, false, true};  // default axis: flattened
  EXPECT_EQ(kiln_ref::compress(1, 6, 1, cd, 5, 4, x, y), 2);
  EXPECT_EQ(std::vector<float>(y, y + 2), (std::vector<float>{2, 5}));
  const bool too_long[4] = {false, false, false, true};
  EXPECT_EQ(kiln_ref::compress(1, 3, 2, too_long, 4, 4, x, y), -1);
}

// ============================== gather.h ==============================

TEST(KernelsDataGather, GatherRandomWithNegativeIndicesAndErrors) {
  Rng r;
  for (int iter = 0; iter < 300; ++iter) {
    const int64_t outer = r.uniform(0, 3), axis_dim = r.uniform(1, 5), inner = r.uniform(0, 3),
                  nidx = r.uniform(0, 6), es = pick_elem_size(r);
    std::vector<int32_t> idx(static_cast<size_t>(nidx));
    for (auto& v : idx) v = int32_t(r.uniform(-axis_dim, axis_dim - 1));
    Bytes data = r.bytes(outer * axis_dim * inner * es);
    Bytes out(static_cast<size_t>(outer * nidx * inner * es), 0), want(out.size());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < nidx; ++k)
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t a = idx[size_t(k)] < 0 ? idx[size_t(k)] + axis_dim : idx[size_t(k)];
          put(want, (o * nidx + k) * inner + i, data, (o * axis_dim + a) * inner + i, es);
        }
    ASSERT_EQ(
        kiln_ref::gather(outer, axis_dim, inner, idx.data(), nidx, es, data.data(), out.data()), 0);
    ASSERT_EQ(out, want);
    if (nidx > 0 && outer * inner > 0) {
      idx[size_t(r.uniform(0, nidx - 1))] = int32_t(r.uniform(0, 1) ? axis_dim : -axis_dim - 1);
      Bytes untouched(out.size(), 0x77), copy = untouched;
      EXPECT_EQ(kiln_ref::gather(outer, axis_dim, inner, idx.data(), nidx, es, data.data(),
                                 untouched.data()),
                1);
      EXPECT_EQ(untouched, copy);
    }
  }
}

TEST(KernelsDataGather, GatherElementsOnnxAndRandom) {
  // gather_elements_0: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]], axis 1.
  const float d0[4] = {1, 2, 3, 4};
  const int64_t i0[4] = {0, 0, 1, 0}, dims[2] = {2, 2};
  float y[4];
  ASSERT_EQ(kiln_ref::gather_elements(2, dims, dims, 1, i0, 4, d0, y), 0);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{1, 1, 4, 3}));
  // gather_elements_negative_indices: data [[1..9]] 3x3, indices [[-1, -2, 0], [-2, 0, 0]], axis 0.
  const float d1[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const int64_t i1[6] = {-1, -2, 0, -2, 0, 0}, dd[2] = {3, 3}, id[2] = {2, 3};
  float y1[6];
  ASSERT_EQ(kiln_ref::gather_elements(2, dd, id, 0, i1, 4, d1, y1), 0);
  EXPECT_EQ(std::vector<float>(y1, y1 + 6), (std::vector<float>{7, 5, 3, 4, 2, 3}));
  const int64_t ibad[6] = {3, 0, 0, 0, 0, 0};
  EXPECT_EQ(kiln_ref::gather_elements(2, dd, id, 0, ibad, 4, d1, y1), 1);
  Rng r;
  for (int iter = 0; iter < 200; ++iter) {
    const int rank = int(r.uniform(1, 5)), axis = int(r.uniform(0, rank - 1));
    Dims ddims = r.dims(rank, 1, 4), idims = ddims;
    for (int d = 0; d < rank; ++d) idims[size_t(d)] = r.uniform(0, ddims[size_t(d)]);
    idims[size_t(axis)] = r.uniform(0, 4);
    const int64_t es = pick_elem_size(r), n = numel(idims), ad = ddims[size_t(axis)];
    std::vector<int64_t> idx(static_cast<size_t>(n));
    for (auto& v : idx) v = r.uniform(-ad, ad - 1);
    Bytes data = r.bytes(numel(ddims) * es), out(static_cast<size_t>(n * es)),
          want(static_cast<size_t>(n * es));
    for (int64_t o = 0; o < n; ++o) {
      Dims p = unravel(o, idims);
      p[size_t(axis)] = idx[size_t(o)] < 0 ? idx[size_t(o)] + ad : idx[size_t(o)];
      put(want, o, data, ravel(p, ddims), es);
    }
    ASSERT_EQ(kiln_ref::gather_elements(rank, ddims.data(), idims.data(), axis, idx.data(), es,
                                        data.data(), out.data()),
              0);
    ASSERT_EQ(out, want) << iter;
  }
}

TEST(KernelsDataGather, GatherNdOnnxExamples) {
  // gathernd_example_int32: data [[0,1],[2,3]], indices [[0,0],[1,1]] -> [0, 3].
  const int32_t d[4] = {0, 1, 2, 3};
  const int64_t dd[2] = {2, 2}, i0[4] = {0, 0, 1, 1}, id0[2] = {2, 2};
  int32_t y[8];
  ASSERT_EQ(kiln_ref::gather_nd(2, dd, 2, id0, 0, i0, 4, d, y), 0);
  EXPECT_EQ(y[0], 0);
  EXPECT_EQ(y[1], 3);
  // gathernd_example_float32: data [2,2,2], indices [[[0,1]],[[1,0]]] -> [[[2,3]],[[4,5]]].
  const float f[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  const int64_t fd[3] = {2, 2, 2}, fi[4] = {0, 1, 1, 0}, fid[3] = {2, 1, 2};
  float fy[4];
  ASSERT_EQ(kiln_ref::gather_nd(3, fd, 3, fid, 0, fi, 4, f, fy), 0);
  EXPECT_EQ(std::vector<float>(fy, fy + 4), (std::vector<float>{2, 3, 4, 5}));
  // gathernd_example_int32_batch_dim1: data [2,2,2], indices [[1],[0]] -> [[2,3],[4,5]].
  const int64_t bi[2] = {1, 0}, bid[2] = {2, 1};
  int32_t di[8] = {0, 1, 2, 3, 4, 5, 6, 7}, by[4];
  ASSERT_EQ(kiln_ref::gather_nd(3, fd, 2, bid, 1, bi, 4, di, by), 0);
  EXPECT_EQ(std::vector<int32_t>(by, by + 4), (std::vector<int32_t>{2, 3, 4, 5}));
  // Negative index wraps; out-of-range fails.
  const int64_t neg[2] = {-1, -2};
  ASSERT_EQ(kiln_ref::gather_nd(3, fd, 2, bid, 1, neg, 4, di, by), 0);
  EXPECT_EQ(std::vector<int32_t>(by, by + 4), (std::vector<int32_t>{2, 3, 4, 5}));
  const int64_t bad[2] = {2, 0};
  EXPECT_EQ(kiln_ref::gather_nd(3, fd, 2, bid, 1, bad, 4, di, by), 1);
}

TEST(KernelsDataGather, ScatterElementsOnnxExamples) {
  // scatter_elements_with_axis / negative indices / duplicate add / duplicate mul, max, min.
  const float data[5] = {1, 2, 3, 4, 5}, upd[2] = {1.1f, 2.1f};
  const int64_t dd[2] = {1, 5}, id[2] = {1, 2};
  float y[5];
  const int64_t ia[2] = {1, 3}, in[2] = {1, -3}, dup[2] = {1, 1};
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, ia, upd,
                                                        kiln_ref::kScatterNone, data, y)),
            0);
  EXPECT_EQ(std::vector<float>(y, y + 5), (std::vector<float>{1, 1.1f, 3, 2.1f, 5}));
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, in, upd,
                                                        kiln_ref::kScatterNone, data, y)),
            0);
  EXPECT_EQ(std::vector<float>(y, y + 5), (std::vector<float>{1, 1.1f, 2.1f, 4, 5}));
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, dup, upd,
                                                        kiln_ref::kScatterAdd, data, y)),
            0);
  EXPECT_FLOAT_EQ(y[1], 5.2f);
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, dup, upd,
                                                        kiln_ref::kScatterMul, data, y)),
            0);
  EXPECT_FLOAT_EQ(y[1], 2 * 1.1f * 2.1f);
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, dup, upd,
                                                        kiln_ref::kScatterMax, data, y)),
            0);
  EXPECT_FLOAT_EQ(y[1], 2.1f);
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, dup, upd,
                                                        kiln_ref::kScatterMin, data, y)),
            0);
  EXPECT_FLOAT_EQ(y[1], 1.1f);
  // scatter_elements_without_axis: zeros 3x3, indices [[1,0,2],[0,2,1]], axis 0.
  const float z[9] = {0};
  const float u2[6] = {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f};
  const int64_t i2[6] = {1, 0, 2, 0, 2, 1}, d2[2] = {3, 3}, id2[2] = {2, 3};
  float y2[9];
  ASSERT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, d2, id2, 0, i2, u2,
                                                        kiln_ref::kScatterNone, z, y2)),
            0);
  EXPECT_EQ(std::vector<float>(y2, y2 + 9),
            (std::vector<float>{2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f}));
  // A bad index fails before any write, even in place.
  float inplace[5] = {1, 2, 3, 4, 5};
  const int64_t bad[2] = {0, 5};
  EXPECT_EQ((kiln_ref::scatter_elements<float, int64_t>(2, dd, id, 1, bad, upd,
                                                        kiln_ref::kScatterNone, inplace, inplace)),
            1);
  EXPECT_EQ(std::vector<float>(inplace, inplace + 5), (std::vector<float>{1, 2, 3, 4, 5}));
  // Integer reductions wrap instead of overflowing.
  const int32_t big[1] = {std::numeric_limits<int32_t>::max()}, one[1] = {1};
  int32_t yi[1];
  const int64_t d1[1] = {1}, zero_idx[1] = {0};
  ASSERT_EQ((kiln_ref::scatter_elements<int32_t, int64_t>(1, d1, d1, 0, zero_idx, one,
                                                          kiln_ref::kScatterAdd, big, yi)),
            0);
  EXPECT_EQ(yi[0], std::numeric_limits<int32_t>::min());
}

TEST(KernelsDataGather, ScatterNdOnnxExamples) {
  // scatternd: data [4,4,4], indices [[0],[2]], updates [2,4,4].
  std::vector<float> data = {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6,
                             7, 8, 8, 7, 6, 5, 4, 3, 2, 1, 8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4,
                             5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> upd = {5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8,
                            1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
  const int64_t dd[3] = {4, 4, 4}, id[2] = {2, 1}, idx[2] = {0, 2}, dup[2] = {0, 0};
  std::vector<float> y(64);
  ASSERT_EQ((kiln_ref::scatter_nd<float, int64_t>(3, dd, 2, id, idx, upd.data(),
                                                  kiln_ref::kScatterNone, data.data(), y.data())),
            0);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(y[size_t(i)], upd[size_t(i)]);
  for (int i = 16; i < 32; ++i) EXPECT_EQ(y[size_t(i)], data[size_t(i)]);
  for (int i = 32; i < 48; ++i) EXPECT_EQ(y[size_t(i)], upd[size_t(i - 16)]);
  ASSERT_EQ((kiln_ref::scatter_nd<float, int64_t>(3, dd, 2, id, dup, upd.data(),
                                                  kiln_ref::kScatterAdd, data.data(), y.data())),
            0);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(y[size_t(i)], data[size_t(i)] + upd[size_t(i)] + upd[size_t(i + 16)]);
  ASSERT_EQ((kiln_ref::scatter_nd<float, int64_t>(3, dd, 2, id, dup, upd.data(),
                                                  kiln_ref::kScatterMul, data.data(), y.data())),
            0);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(y[size_t(i)], data[size_t(i)] * upd[size_t(i)] * upd[size_t(i + 16)]);
  // Element-level indices (K = rank) with a negative entry, and an out-of-range one.
  const int64_t full[6] = {0, 0, 0, -1, -1, -1}, fid[2] = {2, 3};
  const float two[2] = {100, 200};
  ASSERT_EQ((kiln_ref::scatter_nd<float, int64_t>(3, dd, 2, fid, full, two, kiln_ref::kScatterMax,
                                                  data.data(), y.data())),
            0);
  EXPECT_EQ(y[0], 100);
  EXPECT_EQ(y[63], 200);
  const int64_t bad[6] = {0, 0, 4, 0, 0, 0};
  EXPECT_EQ((kiln_ref::scatter_nd<float, int64_t>(3, dd, 2, fid, bad, two, kiln_ref::kScatterNone,
                                                  data.data(), y.data())),
            1);
}

TEST(KernelsDataGather, OneHotOnnxExamples) {
  // onehot_negative_indices: indices [0, -7, -8], depth 10, values [1, 3], axis -1.
  const int64_t idx[3] = {0, -7, -8};
  const float values[2] = {1, 3};
  float y[40];
  kiln_ref::one_hot(3, 10, 1, idx, values, 4, y);
  for (int r = 0; r < 3; ++r)
    for (int d = 0; d < 10; ++d) {
      const int hot = r == 0 ? 0 : (r == 1 ? 3 : 2);
      EXPECT_EQ(y[r * 10 + d], d == hot ? 3.f : 1.f);
    }
  // onehot_with_axis: float indices [[1, 9], [2, 4]], depth 10, axis 1 -> [2, 10, 2].
  const float fidx[4] = {1, 9, 2, 4};
  kiln_ref::one_hot(2, 10, 2, fidx, values, 4, y);
  for (int o = 0; o < 2; ++o)
    for (int d = 0; d < 10; ++d)
      for (int i = 0; i < 2; ++i)
        EXPECT_EQ(y[(o * 10 + d) * 2 + i], int(fidx[o * 2 + i]) == d ? 3.f : 1.f);
  // Out of range (and NaN) give all-off rows; fractional floats truncate.
  const float odd[4] = {10, -11, std::nanf(""), -0.5f};
  kiln_ref::one_hot(4, 10, 1, odd, values, 4, y);
  for (int d = 0; d < 30; ++d) EXPECT_EQ(y[d], 1.f) << d;
  for (int d = 0; d < 10; ++d) EXPECT_EQ(y[30 + d], d == 0 ? 3.f : 1.f);
}

TEST(KernelsDataGather, CumSumOnnxExamples) {
  const double x[5] = {1, 2, 3, 4, 5};
  double y[5];
  kiln_ref::cumsum<double>(1, 5, 1, 0, 0, x, y);
  EXPECT_EQ(std::vector<double>(y, y + 5), (std::vector<double>{1, 3, 6, 10, 15}));
  kiln_ref::cumsum<double>(1, 5, 1, 1, 0, x, y);
  EXPECT_EQ(std::vector<double>(y, y + 5), (std::vector<double>{0, 1, 3, 6, 10}));
  kiln_ref::cumsum<double>(1, 5, 1, 0, 1, x, y);
  EXPECT_EQ(std::vector<double>(y, y + 5), (std::vector<double>{15, 14, 12, 9, 5}));
  kiln_ref::cumsum<double>(1, 5, 1, 1, 1, x, y);
  EXPECT_EQ(std::vector<double>(y, y + 5), (std::vector<double>{14, 12, 9, 5, 0}));
  // cumsum_2d_axis_1: [[1,2,3],[4,5,6]] -> [[1,3,6],[4,9,15]]; axis 0 -> [[1,2,3],[5,7,9]].
  const int32_t m[6] = {1, 2, 3, 4, 5, 6};
  int32_t r[6];
  kiln_ref::cumsum<int32_t>(2, 3, 1, 0, 0, m, r);
  EXPECT_EQ(std::vector<int32_t>(r, r + 6), (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  kiln_ref::cumsum<int32_t>(1, 2, 3, 0, 0, m, r);
  EXPECT_EQ(std::vector<int32_t>(r, r + 6), (std::vector<int32_t>{1, 2, 3, 5, 7, 9}));
  // f16: the running sum is rounded to f16 each step (2048 + 1 stays 2048).
  const uint16_t h[3] = {kiln_ref::float_to_half(2048), kiln_ref::float_to_half(1),
                         kiln_ref::float_to_half(1)};
  uint16_t hy[3];
  kiln_ref::cumsum<kiln_ref::f16_tag>(1, 3, 1, 0, 0, h, hy);
  EXPECT_EQ(kiln_ref::half_to_float(hy[2]), 2048.f);
}

TEST(KernelsDataGather, TopKExamplesTiesNanAndRandom) {
  const float x[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // [3, 4], axis 1
  float v[9];
  int64_t i[9], scratch[4];
  ASSERT_EQ(kiln_ref::topk_scratch_bytes(4), 32);
  kiln_ref::topk<float>(3, 4, 1, 3, 1, x, v, i, scratch);
  EXPECT_EQ(std::vector<float>(v, v + 3), (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(std::vector<int64_t>(i, i + 9), (std::vector<int64_t>{3, 2, 1, 3, 2, 1, 3, 2, 1}));
  kiln_ref::topk<float>(3, 4, 1, 3, 0, x, v, i, scratch);
  EXPECT_EQ(std::vector<int64_t>(i, i + 3), (std::vector<int64_t>{0, 1, 2}));
  // Ties: lower index first, both directions; NaN ranks above everything.
  const float t[6] = {1, 3, 3, std::nanf(""), 1, 2};
  float tv[6];
  int64_t ti[6], ts[6];
  kiln_ref::topk<float>(1, 6, 1, 6, 1, t, tv, ti, ts);
  EXPECT_EQ(std::vector<int64_t>(ti, ti + 6), (std::vector<int64_t>{3, 1, 2, 5, 0, 4}));
  kiln_ref::topk<float>(1, 6, 1, 6, 0, t, tv, ti, ts);
  EXPECT_EQ(std::vector<int64_t>(ti, ti + 6), (std::vector<int64_t>{0, 4, 5, 1, 2, 3}));
  // Random int8 lanes (many ties) along a middle axis vs a stable sort.
  Rng r;
  for (int iter = 0; iter < 100; ++iter) {
    const int64_t outer = r.uniform(1, 3), n = r.uniform(0, 9), inner = r.uniform(1, 3),
                  k = r.uniform(0, n);
    const int largest = int(r.uniform(0, 1));
    std::vector<int8_t> in(static_cast<size_t>(outer * n * inner));
    for (auto& e : in) e = int8_t(r.uniform(-3, 3));
    std::vector<int8_t> vals(static_cast<size_t>(outer * k * inner));
    std::vector<int64_t> idxs(vals.size()), sc(static_cast<size_t>(n));
    kiln_ref::topk<int8_t>(outer, n, inner, k, largest, in.data(), vals.data(), idxs.data(),
                           sc.data());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t c = 0; c < inner; ++c) {
        std::vector<int64_t> ord(static_cast<size_t>(n));
        std::iota(ord.begin(), ord.end(), 0);
        auto at = [&](int64_t t2) { return in[size_t((o * n + t2) * inner + c)]; };
        std::stable_sort(ord.begin(), ord.end(), [&](int64_t a, int64_t b) {
          return largest ? at(a) > at(b) : at(a) < at(b);
        });
        for (int64_t t2 = 0; t2 < k; ++t2) {
          EXPECT_EQ(idxs[size_t((o * k + t2) * inner + c)], ord[size_t(t2)]);
          EXPECT_EQ(vals[size_t((o * k + t2) * inner + c)], at(ord[size_t(t2)]));
        }
      }
  }
}

TEST(KernelsDataGather, NonZeroOnnxExample) {
  // nonzero_example: [[1, 0], [1, 1]] -> [[0, 1, 1], [0, 0, 1]].
  const bool x[4] = {true, false, true, true};
  const int64_t dims[2] = {2, 2};
  const int64_t count = kiln_ref::nonzero_count<bool>(4, x);
  ASSERT_EQ(count, 3);
  int64_t out[6];
  kiln_ref::nonzero<bool>(2, dims, x, count, out);
  EXPECT_EQ(std::vector<int64_t>(out, out + 6), (std::vector<int64_t>{0, 1, 1, 0, 0, 1}));
  const float f[4] = {-0.0f, std::nanf(""), 0.0f, 2.0f};
  EXPECT_EQ(kiln_ref::nonzero_count<float>(4, f), 2);
}

// ============================== cast.h ==============================

TEST(KernelsDataCast, HalfRoundTripsEveryPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = uint16_t(b);
    const float f = kiln_ref::half_to_float(h);
    uint16_t back = 0;
    kiln_ref::cast<float, kiln_ref::f16_tag>(1, &f, &back);
    if (f != f) {
      EXPECT_TRUE((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0);
      continue;
    }
    ASSERT_EQ(back, h) << b;
    double d = f;
    kiln_ref::cast<double, kiln_ref::f16_tag>(1, &d, &back);
    ASSERT_EQ(back, h) << b;
    uint16_t bf = 0;
    kiln_ref::cast<kiln_ref::f16_tag, kiln_ref::bf16_tag>(1, &h, &bf);
    ASSERT_EQ(kiln_ref::bf16_to_float(bf), kiln_ref::bf16_to_float(kiln_ref::float_to_bf16(f)));
  }
}

TEST(KernelsDataCast, NarrowingRoundsOnce) {
  // Just below the f16 overflow midpoint (65520): a double->float->f16 path would round twice
  // and give inf; the exact answer is 65504.
  const double below = 65519.99999999;
  uint16_t h;
  kiln_ref::cast<double, kiln_ref::f16_tag>(1, &below, &h);
  EXPECT_EQ(kiln_ref::half_to_float(h), 65504.f);
  const double at = 65520.0;
  kiln_ref::cast<double, kiln_ref::f16_tag>(1, &at, &h);
  EXPECT_TRUE(std::isinf(kiln_ref::half_to_float(h)));
  // int64 -> bf16 where int64 -> float would land on a bf16 tie: 2^24 + 2^16 + 1 rounds up.
  const int64_t v = (int64_t(1) << 24) + (int64_t(1) << 16) + 1;
  kiln_ref::cast<int64_t, kiln_ref::bf16_tag>(1, &v, &h);
  EXPECT_EQ(double(kiln_ref::bf16_to_float(h)), double((int64_t(1) << 24) + (int64_t(1) << 17)));
  const int64_t tie = (int64_t(1) << 24) + (int64_t(1) << 16);  // exact tie: to even
  kiln_ref::cast<int64_t, kiln_ref::bf16_tag>(1, &tie, &h);
  EXPECT_EQ(double(kiln_ref::bf16_to_float(h)), double(int64_t(1) << 24));
  // double -> float: overflow to inf only past the midpoint above FLT_MAX.
  const double d[5] = {1e300, -1e300, 3.4028235e38, 0.1, 3.4028235677973366e38};
  float f[5];
  kiln_ref::cast<double, float>(5, d, f);
  EXPECT_TRUE(std::isinf(f[4]));  // exactly the midpoint: ties to even, which is inf
  EXPECT_TRUE(std::isinf(f[0]) && f[0] > 0);
  EXPECT_TRUE(std::isinf(f[1]) && f[1] < 0);
  EXPECT_EQ(f[2], std::numeric_limits<float>::max());
  EXPECT_EQ(f[3], 0.1f);
}

TEST(KernelsDataCast, FloatToIntDefinedEverywhere) {
  const float x[10] = {2.9f,     -2.9f,     300.f, -1.f,  std::nanf(""),
                       INFINITY, -INFINITY, 3e9f,  1e20f, -0.5f};
  int8_t i8[10];
  uint8_t u8[10];
  int32_t i32[10];
  int64_t i64[10];
  uint64_t u64[10];
  kiln_ref::cast<float, int8_t>(10, x, i8);
  kiln_ref::cast<float, uint8_t>(10, x, u8);
  kiln_ref::cast<float, int32_t>(10, x, i32);
  kiln_ref::cast<float, int64_t>(10, x, i64);
  kiln_ref::cast<float, uint64_t>(10, x, u64);
  EXPECT_EQ(std::vector<int>(i8, i8 + 10), (std::vector<int>{2, -2, 44, -1, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<int>(u8, u8 + 10), (std::vector<int>{2, 254, 44, 255, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(i32[7], int32_t(3000000000LL - 4294967296LL));  // wraps through int64
  EXPECT_EQ(i32[4], 0);
  EXPECT_EQ(i64[5], std::numeric_limits<int64_t>::min());  // +inf: x86's indefinite value
  EXPECT_EQ(i64[8], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(i64[1], -2);
  EXPECT_EQ(u64[8], uint64_t(1) << 63);  // 1e20 > 2^64: indefinite
  const double big = 1.8e19;             // in [2^63, 2^64): exact
  uint64_t ub;
  kiln_ref::cast<double, uint64_t>(1, &big, &ub);
  EXPECT_EQ(ub, uint64_t(18000000000000000000ULL));
}

TEST(KernelsDataCast, IntegersBoolAndHalfToInt) {
  const int64_t v[4] = {-1, 256, 70000, std::numeric_limits<int64_t>::min()};
  uint8_t u[4];
  int16_t s[4];
  bool b[4];
  kiln_ref::cast<int64_t, uint8_t>(4, v, u);
  kiln_ref::cast<int64_t, int16_t>(4, v, s);
  kiln_ref::cast<int64_t, bool>(4, v, b);
  EXPECT_EQ(std::vector<int>(u, u + 4), (std::vector<int>{255, 0, 112, 0}));
  EXPECT_EQ(std::vector<int>(s, s + 4), (std::vector<int>{-1, 256, 4464, 0}));
  EXPECT_EQ(std::vector<bool>(b, b + 4), (std::vector<bool>{true, true, true, true}));
  const float f[3] = {0.0f, -0.0f, std::nanf("")};
  bool fb[3];
  kiln_ref::cast<float, bool>(3, f, fb);
  EXPECT_EQ(std::vector<bool>(fb, fb + 3), (std::vector<bool>{false, false, true}));
  const bool tb[2] = {true, false};
  uint16_t hb[2];
  float ff[2];
  kiln_ref::cast<bool, kiln_ref::bf16_tag>(2, tb, hb);
  kiln_ref::cast<bool, float>(2, tb, ff);
  EXPECT_EQ(hb[0], 0x3f80);
  EXPECT_EQ(hb[1], 0);
  EXPECT_EQ(ff[0], 1.f);
  const uint16_t h[2] = {kiln_ref::float_to_half(-3.75f), kiln_ref::float_to_half(65504.f)};
  int32_t hi[2];
  kiln_ref::cast<kiln_ref::f16_tag, int32_t>(2, h, hi);
  EXPECT_EQ(hi[0], -3);
  EXPECT_EQ(hi[1], 65504);
  const uint64_t top = ~uint64_t(0);
  float tf;
  kiln_ref::cast<uint64_t, float>(1, &top, &tf);
  EXPECT_EQ(tf, 18446744073709551616.f);
}

// ============================== resize.h ==============================

struct ResizeNodeCase {
  const char* name;
  int mode, coord, nearest;
  float cubic_a;
  int exclude_outside;
  float extrapolation;
  Dims in_dims;
  std::vector<float> x, roi, scales;
  Dims sizes, out_dims;
  std::vector<float> expected;
};

// Resize's caller-side shape logic: scales given -> out = floor(in * scale); sizes given ->
// scale = out / in.
void resize_call(const ResizeNodeCase& c, std::vector<float>& out, Dims& out_dims,
                 std::vector<float>& scales) {
  const int rank = int(c.in_dims.size());
  out_dims.assign(static_cast<size_t>(rank), 0);
  scales.assign(static_cast<size_t>(rank), 1.f);
  for (int d = 0; d < rank; ++d) {
    if (!c.scales.empty()) {
      scales[size_t(d)] = c.scales[size_t(d)];
      out_dims[size_t(d)] =
          int64_t(std::floor(double(c.in_dims[size_t(d)]) * double(c.scales[size_t(d)])));
    } else {
      out_dims[size_t(d)] = c.sizes[size_t(d)];
      scales[size_t(d)] = float(double(c.sizes[size_t(d)]) / double(c.in_dims[size_t(d)]));
    }
  }
  out.assign(static_cast<size_t>(numel(out_dims)), -1.f);
  std::vector<unsigned char> scratch(
      size_t(kiln_ref::resize_scratch_bytes(rank, out_dims.data(), scales.data(), c.mode, 0)));
  kiln_ref::resize<float>(rank, c.in_dims.data(), out_dims.data(), scales.data(),
                          c.roi.empty() ? nullptr : c.roi.data(), c.mode, c.coord, c.nearest,
                          c.cubic_a, c.exclude_outside, c.extrapolation, 0, c.x.data(), out.data(),
                          scratch.data());
}

// onnx 1.12 backend node tests (.cache/onnx-node-tests), generated once from the .pb files.
const ResizeNodeCase kResizeNodeCases[] = {
    {"test_resize_downsample_scales_cubic",
     2,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 0.800000011920929f, 0.800000011920929f},
     {},
     {1, 1, 3, 3},
     {1.47119140625f, 2.78125f, 4.08251953125f, 6.71142578125f, 8.021484375f, 9.32275390625f,
      11.91650390625f, 13.2265625f, 14.52783203125f}},
    {"test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
     2,
     0,
     0,
     -0.5f,
     1,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 0.800000011920929f, 0.800000011920929f},
     {},
     {1, 1, 3, 3},
     {1.3681267499923706f, 2.669501304626465f, 4.013336658477783f, 6.573625087738037f, 7.875f,
      9.21883487701416f, 11.948966026306152f, 13.250341415405273f, 14.594176292419434f}},
    {"test_resize_downsample_scales_cubic_align_corners",
     2,
     3,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 0.800000011920929f, 0.800000011920929f},
     {},
     {1, 1, 3, 3},
     {1.0f, 2.3951916694641113f, 3.7903831005096436f, 6.580766201019287f, 7.975957870483398f,
      9.371149063110352f, 12.161532402038574f, 13.556723594665527f, 14.951915740966797f}},
    {"test_resize_downsample_scales_linear",
     1,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {1.0f, 1.0f, 0.6000000238418579f, 0.6000000238418579f},
     {},
     {1, 1, 1, 2},
     {2.6666665077209473f, 4.3333330154418945f}},
    {"test_resize_downsample_scales_linear_align_corners",
     1,
     3,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {1.0f, 1.0f, 0.6000000238418579f, 0.6000000238418579f},
     {},
     {1, 1, 1, 2},
     {1.0f, 3.142857074737549f}},
    {"test_resize_downsample_scales_nearest",
     0,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {1.0f, 1.0f, 0.6000000238418579f, 0.6000000238418579f},
     {},
     {1, 1, 1, 2},
     {1.0f, 3.0f}},
    {"test_resize_downsample_sizes_cubic",
     2,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 3, 3},
     {1, 1, 3, 3},
     {1.6307870149612427f, 3.004629611968994f, 4.378472328186035f, 7.126157283782959f, 8.5f,
      9.873842239379883f, 12.621527671813965f, 13.995369911193848f, 15.369213104248047f}},
    {"test_resize_downsample_sizes_linear_pytorch_half_pixel",
     1,
     2,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 3, 1},
     {1, 1, 3, 1},
     {1.6666666269302368f, 7.0f, 12.333333015441895f}},
    {"test_resize_downsample_sizes_nearest",
     0,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f},
     {},
     {},
     {1, 1, 1, 3},
     {1, 1, 1, 3},
     {1.0f, 2.0f, 4.0f}},
    {"test_resize_tf_crop_and_resize",
     1,
     5,
     0,
     -0.75f,
     0,
     10.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {0.0f, 0.0f, 0.4000000059604645f, 0.6000000238418579f, 1.0f, 1.0f, 1.2000000476837158f,
      1.7000000476837158f},
     {},
     {1, 1, 3, 3},
     {1, 1, 3, 3},
     {7.600000381469727f, 10.0f, 10.0f, 12.40000057220459f, 10.0f, 10.0f, 10.0f, 10.0f, 10.0f}},
    {"test_resize_upsample_scales_cubic",
     2,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 2.0f, 2.0f},
     {},
     {1, 1, 8, 8},
     {0.47265625f,  0.76953125f,  1.24609375f,  1.875f,       2.28125f,     2.91015625f,
      3.38671875f,  3.68359375f,  1.66015625f,  1.95703125f,  2.43359375f,  3.0625f,
      3.46875f,     4.09765625f,  4.57421875f,  4.87109375f,  3.56640625f,  3.86328125f,
      4.33984375f,  4.96875f,     5.375f,       6.00390625f,  6.48046875f,  6.77734375f,
      6.08203125f,  6.37890625f,  6.85546875f,  7.484375f,    7.890625f,    8.51953125f,
      8.99609375f,  9.29296875f,  7.70703125f,  8.00390625f,  8.48046875f,  9.109375f,
      9.515625f,    10.14453125f, 10.62109375f, 10.91796875f, 10.22265625f, 10.51953125f,
      10.99609375f, 11.625f,      12.03125f,    12.66015625f, 13.13671875f, 13.43359375f,
      12.12890625f, 12.42578125f, 12.90234375f, 13.53125f,    13.9375f,     14.56640625f,
      15.04296875f, 15.33984375f, 13.31640625f, 13.61328125f, 14.08984375f, 14.71875f,
      15.125f,      15.75390625f, 16.23046875f, 16.52734375f}},
    {"test_resize_upsample_scales_cubic_A_n0p5_exclude_outside",
     2,
     0,
     0,
     -0.5f,
     1,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 2.0f, 2.0f},
     {},
     {1, 1, 8, 8},
     {0.5588235259056091f,
      0.8149420619010925f,
      1.3569824695587158f,
      1.8970588445663452f,
      2.3970587253570557f,
      2.9371352195739746f,
      3.479175567626953f,
      3.7352941036224365f,
      1.583297610282898f,
      1.8394160270690918f,
      2.3814566135406494f,
      2.9215328693389893f,
      3.4215328693389893f,
      3.961609125137329f,
      4.503649711608887f,
      4.759768009185791f,
      3.7514593601226807f,
      4.007577896118164f,
      4.549618244171143f,
      5.089694499969482f,
      5.589694499969482f,
      6.129770755767822f,
      6.671811580657959f,
      6.927929878234863f,
      5.911764621734619f,
      6.167883396148682f,
      6.70992374420166f,
      7.25f,
      7.75f,
      8.29007625579834f,
      8.832117080688477f,
      9.088234901428223f,
      7.911764621734619f,
      8.167882919311523f,
      8.70992374420166f,
      9.25f,
      9.75f,
      10.29007625579834f,
      10.832117080688477f,
      11.088234901428223f,
      10.072070121765137f,
      10.3281888961792f,
      10.87022876739502f,
      11.41030502319336f,
      11.91030502319336f,
      12.4503812789917f,
      12.992422103881836f,
      13.248540878295898f,
      12.24023151397705f,
      12.496350288391113f,
      13.03839111328125f,
      13.57846736907959f,
      14.07846736907959f,
      14.61854362487793f,
      15.16058349609375f,
      15.416702270507812f,
      13.264705657958984f,
      13.520824432373047f,
      14.062865257263184f,
      14.602941513061523f,
      15.102941513061523f,
      15.643017768859863f,
      16.18505859375f,
      16.441177368164062f}},
    {"test_resize_upsample_scales_cubic_align_corners",
     2,
     3,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 2.0f, 2.0f},
     {},
     {1, 1, 8, 8},
     {1.0f,
      1.3411078453063965f,
      1.8002915382385254f,
      2.3294460773468018f,
      2.6705539226531982f,
      3.1997084617614746f,
      3.6588921546936035f,
      4.0f,
      2.364431381225586f,
      2.7055394649505615f,
      3.1647229194641113f,
      3.6938774585723877f,
      4.034985542297363f,
      4.5641398429870605f,
      5.0233235359191895f,
      5.364431381225586f,
      4.201166152954102f,
      4.542273998260498f,
      5.001457691192627f,
      5.530612468719482f,
      5.871720314025879f,
      6.400874614715576f,
      6.860058307647705f,
      7.201166152954102f,
      6.317784309387207f,
      6.6588921546936035f,
      7.118075847625732f,
      7.64723014831543f,
      7.988337993621826f,
      8.517492294311523f,
      8.976675987243652f,
      9.317784309387207f,
      7.682215690612793f,
      8.023324012756348f,
      8.482507705688477f,
      9.011661529541016f,
      9.35276985168457f,
      9.881924629211426f,
      10.341108322143555f,
      10.682215690612793f,
      9.798833847045898f,
      10.139941215515137f,
      10.599124908447266f,
      11.128279685974121f,
      11.469388008117676f,
      11.998541831970215f,
      12.457725524902344f,
      12.798833847045898f,
      11.635568618774414f,
      11.976675987243652f,
      12.435859680175781f,
      12.965014457702637f,
      13.306122779846191f,
      13.83527660369873f,
      14.29446029663086f,
      14.635568618774414f,
      13.0f,
      13.341108322143555f,
      13.800292015075684f,
      14.329445838928223f,
      14.670554161071777f,
      15.199707984924316f,
      15.658891677856445f,
      16.0f}},
    {"test_resize_upsample_scales_cubic_asymmetric",
     2,
     4,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {1.0f, 1.0f, 2.0f, 2.0f},
     {},
     {1, 1, 8, 8},
     {1.0f,    1.40625f,  2.0f,    2.5f,    3.0f,    3.59375f,  4.0f,    4.09375f,
      2.625f,  3.03125f,  3.625f,  4.125f,  4.625f,  5.21875f,  5.625f,  5.71875f,
      5.0f,    5.40625f,  6.0f,    6.5f,    7.0f,    7.59375f,  8.0f,    8.09375f,
      7.0f,    7.40625f,  8.0f,    8.5f,    9.0f,    9.59375f,  10.0f,   10.09375f,
      9.0f,    9.40625f,  10.0f,   10.5f,   11.0f,   11.59375f, 12.0f,   12.09375f,
      11.375f, 11.78125f, 12.375f, 12.875f, 13.375f, 13.96875f, 14.375f, 14.46875f,
      13.0f,   13.40625f, 14.0f,   14.5f,   15.0f,   15.59375f, 16.0f,   16.09375f,
      13.375f, 13.78125f, 14.375f, 14.875f, 15.375f, 15.96875f, 16.375f, 16.46875f}},
    {"test_resize_upsample_scales_linear",
     1,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 2},
     {1.0f, 2.0f, 3.0f, 4.0f},
     {},
     {1.0f, 1.0f, 2.0f, 2.0f},
     {},
     {1, 1, 4, 4},
     {1.0f, 1.25f, 1.75f, 2.0f, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3.0f, 3.25f,
      3.75f, 4.0f}},
    {"test_resize_upsample_scales_linear_align_corners",
     1,
     3,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 2},
     {1.0f, 2.0f, 3.0f, 4.0f},
     {},
     {1.0f, 1.0f, 2.0f, 2.0f},
     {},
     {1, 1, 4, 4},
     {1.0f, 1.3333333730697632f, 1.6666666269302368f, 2.0f, 1.6666666269302368f, 2.0f,
      2.3333332538604736f, 2.6666667461395264f, 2.3333332538604736f, 2.6666667461395264f, 3.0f,
      3.3333332538604736f, 3.0f, 3.3333332538604736f, 3.6666667461395264f, 4.0f}},
    {"test_resize_upsample_scales_nearest",
     0,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 2},
     {1.0f, 2.0f, 3.0f, 4.0f},
     {},
     {1.0f, 1.0f, 2.0f, 3.0f},
     {},
     {1, 1, 4, 6},
     {1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f,
      3.0f, 3.0f, 3.0f, 4.0f, 4.0f, 4.0f, 3.0f, 3.0f, 3.0f, 4.0f, 4.0f, 4.0f}},
    {"test_resize_upsample_sizes_cubic",
     2,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 9, 10},
     {1, 1, 9, 10},
     {0.45507922768592834f,
      0.6405792236328125f,
      0.9715791940689087f,
      1.4225791692733765f,
      1.9073292016983032f,
      2.2233293056488037f,
      2.7080790996551514f,
      3.1590793132781982f,
      3.490079164505005f,
      3.675579309463501f,
      1.3943796157836914f,
      1.579879641532898f,
      1.9108796119689941f,
      2.361879587173462f,
      2.8466296195983887f,
      3.1626296043395996f,
      3.6473796367645264f,
      4.098379611968994f,
      4.429379463195801f,
      4.614879608154297f,
      2.9513068199157715f,
      3.1368069648742676f,
      3.467806816101074f,
      3.918807029724121f,
      4.403556823730469f,
      4.71955680847168f,
      5.2043070793151855f,
      5.655306816101074f,
      5.986307144165039f,
      6.171806812286377f,
      5.2052507400512695f,
      5.390750885009766f,
      5.721750736236572f,
      6.172750473022461f,
      6.657500743865967f,
      6.973500728607178f,
      7.458250522613525f,
      7.909250736236572f,
      8.240250587463379f,
      8.425750732421875f,
      6.889750003814697f,
      7.075250148773193f,
      7.40625f,
      7.857250213623047f,
      8.342000007629395f,
      8.657999992370605f,
      9.142749786376953f,
      9.59375f,
      9.924750328063965f,
      10.110250473022461f,
      8.574249267578125f,
      8.759749412536621f,
      9.090749740600586f,
      9.541749000549316f,
      10.02649974822998f,
      10.342499732971191f,
      10.827249526977539f,
      11.278249740600586f,
      11.609249114990234f,
      11.79474925994873f,
      10.828192710876465f,
      11.013692855834961f,
      11.344693183898926f,
      11.795693397521973f,
      12.28044319152832f,
      12.596443176269531f,
      13.081192970275879f,
      13.532193183898926f,
      13.86319351196289f,
      14.04869270324707f,
      12.385120391845703f,
      12.5706205368042f,
      12.901619911193848f,
      13.352620124816895f,
      13.837369918823242f,
      14.153369903564453f,
      14.638120651245117f,
      15.089119911193848f,
      15.420120239257812f,
      15.605620384216309f,
      13.324420928955078f,
      13.509921073913574f,
      13.840920448303223f,
      14.29192066192627f,
      14.776670455932617f,
      15.092670440673828f,
      15.577421188354492f,
      16.02842140197754f,
      16.359420776367188f,
      16.544919967651367f}},
    {"test_resize_upsample_sizes_nearest",
     0,
     0,
     0,
     -0.75f,
     0,
     0.0f,
     {1, 1, 2, 2},
     {1.0f, 2.0f, 3.0f, 4.0f},
     {},
     {},
     {1, 1, 7, 8},
     {1, 1, 7, 8},
     {1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f,
      2.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f, 2.0f, 2.0f, 2.0f, 2.0f, 1.0f, 1.0f, 1.0f, 1.0f,
      2.0f, 2.0f, 2.0f, 2.0f, 3.0f, 3.0f, 3.0f, 3.0f, 4.0f, 4.0f, 4.0f, 4.0f, 3.0f, 3.0f,
      3.0f, 3.0f, 4.0f, 4.0f, 4.0f, 4.0f, 3.0f, 3.0f, 3.0f, 3.0f, 4.0f, 4.0f, 4.0f, 4.0f}},
    {"test_resize_upsample_sizes_nearest_ceil_half_pixel",
     0,
     0,
     3,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 8, 8},
     {1, 1, 8, 8},
     {1.0f,  2.0f,  2.0f,  3.0f,  3.0f,  4.0f,  4.0f,  4.0f,  5.0f,  6.0f,  6.0f,  7.0f,  7.0f,
      8.0f,  8.0f,  8.0f,  5.0f,  6.0f,  6.0f,  7.0f,  7.0f,  8.0f,  8.0f,  8.0f,  9.0f,  10.0f,
      10.0f, 11.0f, 11.0f, 12.0f, 12.0f, 12.0f, 9.0f,  10.0f, 10.0f, 11.0f, 11.0f, 12.0f, 12.0f,
      12.0f, 13.0f, 14.0f, 14.0f, 15.0f, 15.0f, 16.0f, 16.0f, 16.0f, 13.0f, 14.0f, 14.0f, 15.0f,
      15.0f, 16.0f, 16.0f, 16.0f, 13.0f, 14.0f, 14.0f, 15.0f, 15.0f, 16.0f, 16.0f, 16.0f}},
    {"test_resize_upsample_sizes_nearest_floor_align_corners",
     0,
     3,
     2,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 8, 8},
     {1, 1, 8, 8},
     {1.0f,  1.0f,  1.0f,  2.0f,  2.0f,  3.0f,  3.0f,  4.0f,  1.0f,  1.0f,  1.0f,  2.0f, 2.0f,
      3.0f,  3.0f,  4.0f,  1.0f,  1.0f,  1.0f,  2.0f,  2.0f,  3.0f,  3.0f,  4.0f,  5.0f, 5.0f,
      5.0f,  6.0f,  6.0f,  7.0f,  7.0f,  8.0f,  5.0f,  5.0f,  5.0f,  6.0f,  6.0f,  7.0f, 7.0f,
      8.0f,  9.0f,  9.0f,  9.0f,  10.0f, 10.0f, 11.0f, 11.0f, 12.0f, 9.0f,  9.0f,  9.0f, 10.0f,
      10.0f, 11.0f, 11.0f, 12.0f, 13.0f, 13.0f, 13.0f, 14.0f, 14.0f, 15.0f, 15.0f, 16.0f}},
    {"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
     0,
     4,
     1,
     -0.75f,
     0,
     0.0f,
     {1, 1, 4, 4},
     {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f, 16.0f},
     {},
     {},
     {1, 1, 8, 8},
     {1, 1, 8, 8},
     {1.0f,  2.0f,  2.0f,  3.0f,  3.0f,  4.0f,  4.0f,  4.0f,  5.0f,  6.0f,  6.0f,  7.0f,  7.0f,
      8.0f,  8.0f,  8.0f,  5.0f,  6.0f,  6.0f,  7.0f,  7.0f,  8.0f,  8.0f,  8.0f,  9.0f,  10.0f,
      10.0f, 11.0f, 11.0f, 12.0f, 12.0f, 12.0f, 9.0f,  10.0f, 10.0f, 11.0f, 11.0f, 12.0f, 12.0f,
      12.0f, 13.0f, 14.0f, 14.0f, 15.0f, 15.0f, 16.0f, 16.0f, 16.0f, 13.0f, 14.0f, 14.0f, 15.0f,
      15.0f, 16.0f, 16.0f, 16.0f, 13.0f, 14.0f, 14.0f, 15.0f, 15.0f, 16.0f, 16.0f, 16.0f}},
};

TEST(KernelsDataResize, OnnxNodeTests) {
  for (const auto& c : kResizeNodeCases) {
    std::vector<float> out, scales;
    Dims out_dims;
    resize_call(c, out, out_dims, scales);
    EXPECT_EQ(out_dims, c.out_dims) << c.name;
    expect_close(out, c.expected, 1e-5, 1e-6, c.name);
  }
}

// Independent formulation: a port of onnx's reference (nested 1-D interpolation, neighbours
// found by sorting an edge-padded line by distance), including opset 18's antialias filters.
struct RefResize {
  int mode, coord, nearest, exclude, antialias;
  double a, extrap;
  std::vector<double> coeffs(double ratio, double scale) const {
    if (mode == kiln_ref::kResizeNearest) {
      if (ratio == std::floor(ratio)) return {0, 1};
      switch (nearest) {
        case kiln_ref::kNearestRoundPreferCeil:
          return {double(ratio < 0.5), double(ratio >= 0.5)};
        case kiln_ref::kNearestFloor:
          return {1, 0};
        case kiln_ref::kNearestCeil:
          return {0, 1};
        default:
          return {double(ratio <= 0.5), double(ratio > 0.5)};
      }
    }
    if (!antialias) {
      if (mode == kiln_ref::kResizeLinear) return {1 - ratio, ratio};
      const double A = a;
      return {((A * (ratio + 1) - 5 * A) * (ratio + 1) + 8 * A) * (ratio + 1) - 4 * A,
              ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1,
              ((A + 2) * (1 - ratio) - (A + 3)) * (1 - ratio) * (1 - ratio) + 1,
              ((A * ((1 - ratio) + 1) - 5 * A) * ((1 - ratio) + 1) + 8 * A) * ((1 - ratio) + 1) -
                  4 * A};
    }
    const double s = std::min(scale, 1.0);
    std::vector<double> c;
    double sum = 0;
    if (mode == kiln_ref::kResizeLinear) {
      const int64_t start = int64_t(std::floor(-1 / s) + 1), fp = 2 - 2 * start;
      for (int64_t i = start; i < start + fp; ++i)
        c.push_back(std::min(std::max(1 - std::fabs((double(i) - ratio) * s), 0.0), 1.0));
    } else {
      const int64_t is = int64_t(std::floor(-2 / s) + 1), ie = 2 - is;
      for (int64_t i = is; i < ie; ++i) {
        const double x = std::fabs(s * (double(i) - ratio)), x2 = x * x, x3 = x * x2;
        c.push_back(x <= 1 ? (a + 2) * x3 - (a + 3) * x2 + 1
                           : (x < 2 ? a * x3 - 5 * a * x2 + 8 * a * x - 4 * a : 0.0));
      }
    }
    for (double v : c) sum += v;
    for (double& v : c) v /= sum;
    return c;
  }
  double interp_1d(const std::vector<double>& data, double scale, int64_t out_int, int64_t x,
                   double r0, double r1) const {
    const int64_t in = int64_t(data.size());
    const double ow = scale * double(in), xr = double(x);
    double xo;
    switch (coord) {
      case kiln_ref::kCoordAlignCorners:
        xo = ow == 1 ? 0 : xr * double(in - 1) / (ow - 1);
        break;
      case kiln_ref::kCoordAsymmetric:
        xo = xr / scale;
        break;
      case kiln_ref::kCoordTfCropAndResize:
        xo = ow == 1 ? (r1 - r0) * double(in - 1) / 2 : xr * (r1 - r0) * double(in - 1) / (ow - 1);
        xo += r0 * double(in - 1);
        if (xo < 0 || xo > double(in - 1)) return extrap;
        break;
      case kiln_ref::kCoordPytorchHalfPixel:
        xo = ow == 1 ? 0 : (xr + 0.5) / scale - 0.5;
        break;
      case kiln_ref::kCoordHalfPixelSymmetric:
        xo = double(in) / 2 * (1 - double(out_int) / ow) + (xr + 0.5) / scale - 0.5;
        break;
      default:
        xo = (xr + 0.5) / scale - 0.5;
    }
    const double ratio = xo == std::floor(xo) ? 1 : xo - std::floor(xo);
    std::vector<double> c = coeffs(ratio, scale);
    const int64_t n = int64_t(c.size()), pad = (n + 1) / 2;
    std::vector<int64_t> cand;
    for (int64_t i = 0; i < in + 2 * pad; ++i) cand.push_back(i);
    const double xp = xo + double(pad);
    std::sort(cand.begin(), cand.end(), [&](int64_t p, int64_t q) {
      const double dp = std::fabs(xp - double(p)), dq = std::fabs(xp - double(q));
      return dp < dq || (dp == dq && p < q);
    });
    cand.resize(static_cast<size_t>(n));
    std::sort(cand.begin(), cand.end());
    if (exclude) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        const int64_t i = cand[size_t(k)] - pad;
        if (i < 0 || i >= in) c[size_t(k)] = 0;
        sum += c[size_t(k)];
      }
      for (double& v : c) v /= sum;
    }
    double acc = 0;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = std::min(std::max(cand[size_t(k)] - pad, int64_t(0)), in - 1);
      acc += c[size_t(k)] * data[size_t(i)];
    }
    return acc;
  }
  // data: a row-major block with dims[axis..]; returns the interpolated value at out coord x.
  double interp_nd(const std::vector<double>& data, size_t axis, const Dims& dims,
                   const std::vector<float>& scales, const Dims& out_dims, const Dims& x,
                   const std::vector<float>& roi) const {
    const size_t rank = dims.size();
    const double r0 = roi.empty() ? 0 : double(roi[axis]),
                 r1 = roi.empty() ? 1 : double(roi[axis + rank]);
    if (axis + 1 == rank)
      return interp_1d(data, double(scales[axis]), out_dims[axis], x[axis], r0, r1);
    const int64_t sub = int64_t(data.size()) / dims[axis];
    std::vector<double> line;
    for (int64_t i = 0; i < dims[axis]; ++i) {
      std::vector<double> part(data.begin() + i * sub, data.begin() + (i + 1) * sub);
      line.push_back(interp_nd(part, axis + 1, dims, scales, out_dims, x, roi));
    }
    return interp_1d(line, double(scales[axis]), out_dims[axis], x[axis], r0, r1);
  }
};

TEST(KernelsDataResize, RandomAgainstReferencePort) {
  Rng r;
  const float kScales[] = {0.25f, 0.5f, 0.75f, 1.0f, 1.5f, 2.0f, 3.0f, 0.375f};
  for (int iter = 0; iter < 300; ++iter) {
    const int rank = int(r.uniform(1, 3));
    RefResize ref{int(r.uniform(0, 2)), int(r.uniform(0, 5)), int(r.uniform(0, 3)),
                  int(r.uniform(0, 1)), int(r.uniform(0, 1)), r.uniform(0, 1) ? -0.75 : -0.5,
                  r.real(-2, 2)};
    if (ref.mode == kiln_ref::kResizeNearest) ref.exclude = ref.antialias = 0;
    Dims in_dims = r.dims(rank, 1, 5), out_dims(static_cast<size_t>(rank));
    std::vector<float> scales(static_cast<size_t>(rank)), roi;
    for (int d = 0; d < rank; ++d) {
      scales[size_t(d)] = kScales[r.uniform(0, 7)];
      out_dims[size_t(d)] =
          int64_t(std::floor(double(in_dims[size_t(d)]) * double(scales[size_t(d)])));
    }
    if (ref.coord == kiln_ref::kCoordTfCropAndResize) {
      roi.resize(static_cast<size_t>(2 * rank));
      for (int d = 0; d < rank; ++d) {
        roi[size_t(d)] = float(r.uniform(-2, 6)) / 8;
        roi[size_t(d + rank)] = float(r.uniform(2, 10)) / 8;
      }
    }
    const int64_t n_in = numel(in_dims), n_out = numel(out_dims);
    std::vector<float> x(static_cast<size_t>(n_in));
    std::vector<double> xd(static_cast<size_t>(n_in));
    for (int64_t i = 0; i < n_in; ++i) xd[size_t(i)] = x[size_t(i)] = float(r.uniform(-50, 50)) / 4;
    std::vector<float> out(static_cast<size_t>(n_out), 1e30f);
    std::vector<unsigned char> scratch(static_cast<size_t>(kiln_ref::resize_scratch_bytes(
        rank, out_dims.data(), scales.data(), ref.mode, ref.antialias)));
    kiln_ref::resize<float>(rank, in_dims.data(), out_dims.data(), scales.data(),
                            roi.empty() ? nullptr : roi.data(), ref.mode, ref.coord, ref.nearest,
                            float(ref.a), ref.exclude, float(ref.extrap), ref.antialias, x.data(),
                            out.data(), scratch.data());
    for (int64_t o = 0; o < n_out; ++o) {
      const double want =
          ref.interp_nd(xd, 0, in_dims, scales, out_dims, unravel(o, out_dims), roi);
      ASSERT_NEAR(double(out[size_t(o)]), double(float(want)), 1e-4 * (1 + std::fabs(want)))
          << "iter " << iter << " mode " << ref.mode << " coord " << ref.coord << " aa "
          << ref.antialias << " out " << o;
    }
  }
}

TEST(KernelsDataResize, IntegerNearestCopiesAndLinearRounds) {
  // int64 values beyond double precision survive nearest resizing bit-exactly.
  const int64_t big = (int64_t(1) << 62) + 1;
  const int64_t x[2] = {big, -big}, in_dims[1] = {2}, out_dims[1] = {4};
  int64_t y[4];
  const float s[1] = {2};
  std::vector<unsigned char> scratch(
      size_t(kiln_ref::resize_scratch_bytes(1, out_dims, s, kiln_ref::kResizeNearest, 0)));
  kiln_ref::resize<int64_t>(1, in_dims, out_dims, s, nullptr, kiln_ref::kResizeNearest,
                            kiln_ref::kCoordAsymmetric, kiln_ref::kNearestFloor, -0.75f, 0, 0.f, 0,
                            x, y, scratch.data());
  EXPECT_EQ(std::vector<int64_t>(y, y + 4), (std::vector<int64_t>{big, big, -big, -big}));
  // uint8 linear: 0 and 255 at half_pixel 2x -> 0, 64, 191, 255 (63.75 and 191.25 rounded).
  const uint8_t u[2] = {0, 255};
  uint8_t uy[4];
  std::vector<unsigned char> sc2(
      size_t(kiln_ref::resize_scratch_bytes(1, out_dims, s, kiln_ref::kResizeLinear, 0)));
  kiln_ref::resize<uint8_t>(1, in_dims, out_dims, s, nullptr, kiln_ref::kResizeLinear,
                            kiln_ref::kCoordHalfPixel, 0, -0.75f, 0, 0.f, 0, u, uy, sc2.data());
  EXPECT_EQ(std::vector<int>(uy, uy + 4), (std::vector<int>{0, 64, 191, 255}));
  // Rank 0 resizes nothing but copies the scalar.
  const float one = 7.f;
  float got = 0;
  kiln_ref::resize<float>(0, nullptr, nullptr, nullptr, nullptr, 1, 0, 0, -0.75f, 0, 0.f, 0, &one,
                          &got, nullptr);
  EXPECT_EQ(got, 7.f);
}

// ============================== misc.h ==============================

TEST(KernelsDataMisc, RangeEyeFill) {
  // range_float_type_positive_delta: (1, 5, 2) -> [1, 3]; int32 negative delta (10, 6, -3).
  EXPECT_EQ(kiln_ref::range_count<float>(1.f, 5.f, 2.f), 2);
  EXPECT_EQ(kiln_ref::range_count<int32_t>(10, 6, -3), 2);
  EXPECT_EQ(kiln_ref::range_count<int32_t>(10, 6, 3), 0);
  EXPECT_EQ(kiln_ref::range_count<int32_t>(1, 2, 0), -1);
  EXPECT_EQ(kiln_ref::range_count<int64_t>(std::numeric_limits<int64_t>::min(),
                                           std::numeric_limits<int64_t>::max(),
                                           std::numeric_limits<int64_t>::max()),
            3);
  int32_t ri[2];
  kiln_ref::range<int32_t>(10, -3, 2, ri);
  EXPECT_EQ(ri[0], 10);
  EXPECT_EQ(ri[1], 7);
  float rf[3];
  kiln_ref::range<float>(0.5f, 0.25f, 3, rf);
  EXPECT_EQ(std::vector<float>(rf, rf + 3), (std::vector<float>{0.5f, 0.75f, 1.0f}));
  // eyelike_with_dtype style: [3, 4], k = 1.
  uint16_t e[12];
  kiln_ref::eye_like<kiln_ref::f16_tag>(3, 4, 1, e);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(e[i * 4 + j], j - i == 1 ? 0x3c00 : 0);
  int64_t fv = -5, filled[3];
  kiln_ref::fill(3, 8, &fv, filled);
  EXPECT_EQ(std::vector<int64_t>(filled, filled + 3), (std::vector<int64_t>{-5, -5, -5}));
}

TEST(KernelsDataMisc, QuantizeDequantizeOnnxExamples) {
  // quantizelinear: x / 2 + 128 with saturation.
  const float x[6] = {0, 2, 3, 1000, -254, -1000}, s = 2;
  const uint8_t zp = 128;
  uint8_t y[6];
  kiln_ref::quantize_linear<float, uint8_t>(1, 1, 6, x, &s, &zp, y);
  EXPECT_EQ(std::vector<int>(y, y + 6), (std::vector<int>{128, 129, 130, 255, 1, 0}));
  // Half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2, -0.5 -> 0, -1.5 -> -2; NaN -> zero point.
  const float h[6] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, std::nanf("")}, one = 1;
  int8_t q[6];
  const int8_t z3 = 3;
  kiln_ref::quantize_linear<float, int8_t>(1, 1, 6, h, &one, nullptr, q);
  EXPECT_EQ(std::vector<int>(q, q + 5), (std::vector<int>{0, 2, 2, 0, -2}));
  EXPECT_EQ(q[5], 0);
  kiln_ref::quantize_linear<float, int8_t>(1, 1, 6, h, &one, &z3, q);
  EXPECT_EQ(q[5], 3);
  // quantizelinear_axis: [1, 3, 3, 2], per-channel scale/zero point.
  const float xa[18] = {-162, 10, -100, 232, -20,  -50,  -76,  0,    0,
                        252,  32, -44,  245, -485, -960, -270, -375, -470};
  const float sa[3] = {2, 4, 5};
  const uint8_t za[3] = {84, 24, 196};
  uint8_t ya[18];
  kiln_ref::quantize_linear<float, uint8_t>(1, 3, 6, xa, sa, za, ya);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(int(ya[c * 6 + i]), int(xa[c * 6 + i] / sa[c]) + za[c]) << c << " " << i;
  // dequantizelinear: (x - 128) * 2.
  const uint8_t dx[4] = {0, 3, 128, 255};
  float dy[4];
  kiln_ref::dequantize_linear<uint8_t, float>(1, 1, 4, dx, &s, &zp, dy);
  EXPECT_EQ(std::vector<float>(dy, dy + 4), (std::vector<float>{-256, -250, 0, 254}));
  // Per-axis dequantize into f16, and int32 without a zero point.
  uint16_t hy[3];
  const uint16_t hs[3] = {kiln_ref::float_to_half(2), kiln_ref::float_to_half(4),
                          kiln_ref::float_to_half(5)};
  const uint8_t three[3] = {85, 25, 197};
  kiln_ref::dequantize_linear<uint8_t, kiln_ref::f16_tag>(1, 3, 1, three, hs, za, hy);
  EXPECT_EQ(kiln_ref::half_to_float(hy[0]), 2.f);
  EXPECT_EQ(kiln_ref::half_to_float(hy[1]), 4.f);
  EXPECT_EQ(kiln_ref::half_to_float(hy[2]), 5.f);
  const int32_t i32[2] = {-7, 1 << 30};
  float iy[2];
  kiln_ref::dequantize_linear<int32_t, float>(1, 1, 2, i32, &s, nullptr, iy);
  EXPECT_EQ(iy[0], -14.f);
  EXPECT_EQ(iy[1], 2147483648.f);
}

TEST(KernelsDataMisc, DynamicQuantizeLinearOnnxExamples) {
  struct Case {
    std::vector<float> x;
    float scale;
    int zp;
    std::vector<int> y;
  };
  const Case cases[] = {
      {{0, 2, -3, -2.5f, 1.34f, 0.5f}, 0.0196078438f, 153, {153, 255, 0, 26, 221, 179}},
      {{-1.0f, -2.1f, -1.3f, -2.5f, -3.34f, -4.0f}, 0.0156862754f, 255, {191, 121, 172, 96, 42, 0}},
      {{1, 2.1f, 1.3f, 2.5f, 3.34f, 4.0f, 1.5f, 2.6f, 3.9f, 4.0f, 3.0f, 2.345f},
       0.0156862754f,
       0,
       {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149}},
  };
  for (const auto& c : cases) {
    std::vector<uint8_t> y(c.x.size());
    float scale = 0;
    uint8_t zp = 0;
    kiln_ref::dynamic_quantize_linear(int64_t(c.x.size()), c.x.data(), y.data(), &scale, &zp);
    EXPECT_FLOAT_EQ(scale, c.scale);
    EXPECT_EQ(int(zp), c.zp);
    EXPECT_EQ(std::vector<int>(y.begin(), y.end()), c.y);
  }
  const float zeros[2] = {0, 0};
  uint8_t y[2], zp = 9;
  float scale = 0;
  kiln_ref::dynamic_quantize_linear(2, zeros, y, &scale, &zp);
  EXPECT_EQ(scale, 1.f);
  EXPECT_EQ(int(zp), 0);
}

struct GridSampleNodeCase {
  const char* name;
  int mode, padding, align_corners;
  Dims x_dims;
  std::vector<float> x;
  Dims grid_dims;
  std::vector<float> grid;
  Dims out_dims;
  std::vector<float> expected;
};

const GridSampleNodeCase kGridSampleNodeCases[] = {
    {"test_gridsample",
     1,
     0,
     0,
     {1, 1, 4, 4},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f,
      15.0f},
     {1, 6, 6, 2},
     {-1.0f,
      -1.0f,
      -0.6000000238418579f,
      -1.0f,
      -0.20000000298023224f,
      -1.0f,
      0.20000000298023224f,
      -1.0f,
      0.6000000238418579f,
      -1.0f,
      1.0f,
      -1.0f,
      -1.0f,
      -0.6000000238418579f,
      -0.6000000238418579f,
      -0.6000000238418579f,
      -0.20000000298023224f,
      -0.6000000238418579f,
      0.20000000298023224f,
      -0.6000000238418579f,
      0.6000000238418579f,
      -0.6000000238418579f,
      1.0f,
      -0.6000000238418579f,
      -1.0f,
      -0.20000000298023224f,
      -0.6000000238418579f,
      -0.20000000298023224f,
      -0.20000000298023224f,
      -0.20000000298023224f,
      0.20000000298023224f,
      -0.20000000298023224f,
      0.6000000238418579f,
      -0.20000000298023224f,
      1.0f,
      -0.20000000298023224f,
      -1.0f,
      0.20000000298023224f,
      -0.6000000238418579f,
      0.20000000298023224f,
      -0.20000000298023224f,
      0.20000000298023224f,
      0.20000000298023224f,
      0.20000000298023224f,
      0.6000000238418579f,
      0.20000000298023224f,
      1.0f,
      0.20000000298023224f,
      -1.0f,
      0.6000000238418579f,
      -0.6000000238418579f,
      0.6000000238418579f,
      -0.20000000298023224f,
      0.6000000238418579f,
      0.20000000298023224f,
      0.6000000238418579f,
      0.6000000238418579f,
      0.6000000238418579f,
      1.0f,
      0.6000000238418579f,
      -1.0f,
      1.0f,
      -0.6000000238418579f,
      1.0f,
      -0.20000000298023224f,
      1.0f,
      0.20000000298023224f,
      1.0f,
      0.6000000238418579f,
      1.0f,
      1.0f,
      1.0f},
     {1, 1, 6, 6},
     {0.0f,
      0.15000000596046448f,
      0.550000011920929f,
      0.949999988079071f,
      1.350000023841858f,
      0.75f,
      0.6000000238418579f,
      1.5f,
      2.299999952316284f,
      3.0999999046325684f,
      3.9000000953674316f,
      2.0999999046325684f,
      2.200000047683716f,
      4.699999809265137f,
      5.5f,
      6.300000190734863f,
      7.099999904632568f,
      3.700000047683716f,
      3.799999952316284f,
      7.900000095367432f,
      8.699999809265137f,
      9.5f,
      10.300000190734863f,
      5.300000190734863f,
      5.400000095367432f,
      11.100000381469727f,
      11.899999618530273f,
      12.699999809265137f,
      13.5f,
      6.900000095367432f,
      3.0f,
      6.150000095367432f,
      6.550000190734863f,
      6.949999809265137f,
      7.349999904632568f,
      3.75f}},
    {"test_gridsample_aligncorners_true",
     1,
     0,
     1,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {0.0f, 1.25f, 2.0f, 2.5f, 2.5f, 2.0f, 3.75f, 5.0f}},
    {"test_gridsample_bicubic",
     2,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {-0.14059999585151672f, 0.38280001282691956f, 1.7555999755859375f, 2.9688000679016113f,
      2.9688000679016113f, 1.7555999755859375f, 5.144499778747559f, 1.3905999660491943f}},
    {"test_gridsample_bilinear",
     1,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {0.0f, 0.5f, 1.7000000476837158f, 2.5f, 2.5f, 1.7000000476837158f, 4.5f, 1.25f}},
    {"test_gridsample_border_padding",
     1,
     1,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-10.0f, -10.0f, -5.0f, -5.0f, -0.20000000298023224f, -0.20000000298023224f, 10.0f, 10.0f,
      10.0f, 10.0f, -0.20000000298023224f, -0.20000000298023224f, 5.0f, 5.0f, 10.0f, 10.0f},
     {1, 1, 2, 4},
     {0.0f, 0.0f, 1.7000000476837158f, 5.0f, 5.0f, 1.7000000476837158f, 5.0f, 5.0f}},
    {"test_gridsample_nearest",
     0,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-1.0f, -1.0f, -0.5f, -0.5f, -0.20000000298023224f, -0.20000000298023224f, 0.0f, 0.0f, 0.0f,
      0.0f, -0.20000000298023224f, -0.20000000298023224f, 0.5f, 0.5f, 1.0f, 1.0f},
     {1, 1, 2, 4},
     {0.0f, 0.0f, 2.0f, 2.0f, 2.0f, 2.0f, 5.0f, 0.0f}},
    {"test_gridsample_reflection_padding",
     1,
     2,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-10.0f, -10.0f, -5.0f, -5.0f, -0.20000000298023224f, -0.20000000298023224f, 10.0f, 10.0f,
      10.0f, 10.0f, -0.20000000298023224f, -0.20000000298023224f, 5.0f, 5.0f, 10.0f, 10.0f},
     {1, 1, 2, 4},
     {2.5f, 0.0f, 1.7000000476837158f, 2.5f, 2.5f, 1.7000000476837158f, 5.0f, 2.5f}},
    {"test_gridsample_zeros_padding",
     1,
     0,
     0,
     {1, 1, 3, 2},
     {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},
     {1, 2, 4, 2},
     {-10.0f, -10.0f, -5.0f, -5.0f, -0.20000000298023224f, -0.20000000298023224f, 10.0f, 10.0f,
      10.0f, 10.0f, -0.20000000298023224f, -0.20000000298023224f, 5.0f, 5.0f, 10.0f, 10.0f},
     {1, 1, 2, 4},
     {0.0f, 0.0f, 1.7000000476837158f, 0.0f, 0.0f, 1.7000000476837158f, 0.0f, 0.0f}},
};

TEST(KernelsDataMisc, GridSampleOnnxNodeTests) {
  for (const auto& c : kGridSampleNodeCases) {
    std::vector<float> out(c.expected.size(), -99.f);
    const Dims in_sp(c.x_dims.begin() + 2, c.x_dims.end());
    const Dims out_sp(c.grid_dims.begin() + 1, c.grid_dims.end() - 1);
    kiln_ref::grid_sample<float, float>(2, c.x_dims[0], c.x_dims[1], in_sp.data(), out_sp.data(),
                                        c.grid.data(), c.mode, c.padding, c.align_corners,
                                        c.x.data(), out.data());
    expect_close(out, c.expected, 1e-3, 1e-4, c.name);  // expected values have 4 decimals
  }
}

TEST(KernelsDataMisc, GridSampleOneDimAndDegenerate) {
  // 1-D spatial (opset 20): x = [0, 10, 20], linear, align_corners: grid -1, 0, 0.25, 1.
  const float x[3] = {0, 10, 20}, g[4] = {-1, 0, 0.25f, 1};
  const int64_t in_sp[1] = {3}, out_sp[1] = {4};
  float y[4];
  kiln_ref::grid_sample<float, float>(1, 1, 1, in_sp, out_sp, g, kiln_ref::kGridLinear,
                                      kiln_ref::kGridZeros, 1, x, y);
  EXPECT_EQ(std::vector<float>(y, y + 4), (std::vector<float>{0, 10, 12.5f, 20}));
  // A width-1 input with reflection and align_corners never divides by zero.
  const float one[1] = {4};
  const int64_t w1[1] = {1};
  const float far[4] = {-3, 0.7f, 2, 9};
  kiln_ref::grid_sample<float, float>(1, 1, 1, w1, out_sp, far, kiln_ref::kGridCubic,
                                      kiln_ref::kGridReflection, 1, one, y);
  for (float v : y) EXPECT_TRUE(std::isfinite(v));
}

struct RoiAlignNodeCase {
  const char* name;
  int64_t out_h, out_w, sampling_ratio;
  float spatial_scale;
  int half_pixel;
  Dims x_dims;
  std::vector<float> x, rois;
  Dims batch;
  std::vector<float> expected;
};

const RoiAlignNodeCase kRoiAlignNodeCases[] = {
    {"test_roialign_aligned_false",
     5,
     5,
     2,
     1.0f,
     0,
     {1, 1, 10, 10},
     {0.27639999985694885f, 0.7149999737739563f,  0.19580000638961792f,  0.3416000008583069f,
      0.46380001306533813f, 0.02590000070631504f, 0.2962999939918518f,   0.6517999768257141f,
      0.48559999465942383f, 0.7250000238418579f,  0.963699996471405f,    0.08950000256299973f,
      0.29190000891685486f, 0.6753000020980835f,  0.023399999365210533f, 0.6132000088691711f,
      0.8084999918937683f,  0.5324000120162964f,  0.8992000222206116f,   0.44670000672340393f,
      0.3264999985694885f,  0.8478999733924866f,  0.9697999954223633f,   0.24709999561309814f,
      0.9336000084877014f,  0.18780000507831573f, 0.4765999913215637f,   0.4307999908924103f,
      0.3400000035762787f,  0.21619999408721924f, 0.020600000396370888f, 0.1720000058412552f,
      0.21549999713897705f, 0.43939998745918274f, 0.06530000269412994f,  0.34060001373291016f,
      0.7724000215530396f,  0.3921000063419342f,  0.2540999948978424f,   0.5799000263214111f,
      0.40619999170303345f, 0.21940000355243683f, 0.447299987077713f,    0.46869999170303345f,
      0.7109000086784363f,  0.932699978351593f,   0.9815000295639038f,   0.6320000290870667f,
      0.1728000044822693f,  0.6118999719619751f,  0.30970001220703125f,  0.1282999962568283f,
      0.4984000027179718f,  0.5067999958992004f,  0.4278999865055084f,   0.01730000041425228f,
      0.43880000710487366f, 0.0430000014603138f,  0.46709999442100525f,  0.711899995803833f,
      0.10109999775886536f, 0.8476999998092651f,  0.4726000130176544f,   0.1776999980211258f,
      0.9922999739646912f,  0.4041999876499176f,  0.18690000474452972f,  0.7795000076293945f,
      0.9945999979972839f,  0.9689000248908997f,  0.13660000264644623f,  0.3671000003814697f,
      0.7010999917984009f,  0.6233999729156494f,  0.9866999983787537f,   0.5584999918937683f,
      0.6984999775886536f,  0.5608999729156494f,  0.8787999749183655f,   0.9927999973297119f,
      0.5697000026702881f,  0.8511000275611877f,  0.6711000204086304f,   0.9405999779701233f,
      0.8751000165939331f,  0.7495999932289124f,  0.16500000655651093f,  0.10490000247955322f,
      0.1559000015258789f,  0.2513999938964844f,  0.701200008392334f,    0.40560001134872437f,
      0.7878999710083008f,  0.34610000252723694f, 0.04149999842047691f,  0.29980000853538513f,
      0.5094000101089478f,  0.3727000057697296f,  0.5482000112533569f,   0.050200000405311584f},
     {0.0f, 0.0f, 9.0f, 9.0f, 0.0f, 5.0f, 4.0f, 9.0f, 5.0f, 5.0f, 9.0f, 9.0f},
     {0, 0, 0},
     {0.46639999747276306f, 0.4465999901294708f,  0.34049999713897705f, 0.5687999725341797f,
      0.6068000197410583f,  0.37139999866485596f, 0.4296000003814697f,  0.38350000977516174f,
      0.5562000274658203f,  0.35100001096725464f, 0.2768000066280365f,  0.48829999566078186f,
      0.5221999883651733f,  0.5527999997138977f,  0.4171000123023987f,  0.47130000591278076f,
      0.4844000041484833f,  0.6904000043869019f,  0.492000013589859f,   0.8773999810218811f,
      0.6238999962806702f,  0.7124999761581421f,  0.6288999915122986f,  0.33550000190734863f,
      0.34950000047683716f, 0.30219998955726624f, 0.43050000071525574f, 0.46959999203681946f,
      0.3977999985218048f,  0.5422999858856201f,  0.36559998989105225f, 0.7049999833106995f,
      0.5164999961853027f,  0.3172000050544739f,  0.7014999985694885f,  0.29120001196861267f,
      0.5059000253677368f,  0.647599995136261f,   0.6234999895095825f,  0.8299000263214111f,
      0.5916000008583069f,  0.7389000058174133f,  0.704800009727478f,   0.8371999859809875f,
      0.8892999887466431f,  0.6226999759674072f,  0.6152999997138977f,  0.7096999883651733f,
      0.6154000163078308f,  0.4584999978542328f,  0.23839999735355377f, 0.3379000127315521f,
      0.3716999888420105f,  0.6100000143051147f,  0.7601000070571899f,  0.3767000138759613f,
      0.3785000145435333f,  0.7146999835968018f,  0.9243000149726868f,  0.9726999998092651f,
      0.5748999714851379f,  0.5825999975204468f,  0.570900022983551f,   0.761900007724762f,
      0.8769999742507935f,  0.5354999899864197f,  0.2565999925136566f,  0.21410000324249268f,
      0.27959999442100525f, 0.36000001430511475f, 0.43650001287460327f, 0.35040000081062317f,
      0.28870001435279846f, 0.366100013256073f,   0.23489999771118164f}},
    {"test_roialign_aligned_true",
     5,
     5,
     2,
     1.0f,
     1,
     {1, 1, 10, 10},
     {0.27639999985694885f, 0.7149999737739563f,  0.19580000638961792f,  0.3416000008583069f,
      0.46380001306533813f, 0.02590000070631504f, 0.2962999939918518f,   0.6517999768257141f,
      0.48559999465942383f, 0.7250000238418579f,  0.963699996471405f,    0.08950000256299973f,
      0.29190000891685486f, 0.6753000020980835f,  0.023399999365210533f, 0.6132000088691711f,
      0.8084999918937683f,  0.5324000120162964f,  0.8992000222206116f,   0.44670000672340393f,
      0.3264999985694885f,  0.8478999733924866f,  0.9697999954223633f,   0.24709999561309814f,
      0.9336000084877014f,  0.18780000507831573f, 0.4765999913215637f,   0.4307999908924103f,
      0.3400000035762787f,  0.21619999408721924f, 0.020600000396370888f, 0.1720000058412552f,
      0.21549999713897705f, 0.43939998745918274f, 0.06530000269412994f,  0.34060001373291016f,
      0.7724000215530396f,  0.3921000063419342f,  0.2540999948978424f,   0.5799000263214111f,
      0.40619999170303345f, 0.21940000355243683f, 0.447299987077713f,    0.46869999170303345f,
      0.7109000086784363f,  0.932699978351593f,   0.9815000295639038f,   0.6320000290870667f,
      0.1728000044822693f,  0.6118999719619751f,  0.30970001220703125f,  0.1282999962568283f,
      0.4984000027179718f,  0.5067999958992004f,  0.4278999865055084f,   0.01730000041425228f,
      0.43880000710487366f, 0.0430000014603138f,  0.46709999442100525f,  0.711899995803833f,
      0.10109999775886536f, 0.8476999998092651f,  0.4726000130176544f,   0.1776999980211258f,
      0.9922999739646912f,  0.4041999876499176f,  0.18690000474452972f,  0.7795000076293945f,
      0.9945999979972839f,  0.9689000248908997f,  0.13660000264644623f,  0.3671000003814697f,
      0.7010999917984009f,  0.6233999729156494f,  0.9866999983787537f,   0.5584999918937683f,
      0.6984999775886536f,  0.5608999729156494f,  0.8787999749183655f,   0.9927999973297119f,
      0.5697000026702881f,  0.8511000275611877f,  0.6711000204086304f,   0.9405999779701233f,
      0.8751000165939331f,  0.7495999932289124f,  0.16500000655651093f,  0.10490000247955322f,
      0.1559000015258789f,  0.2513999938964844f,  0.701200008392334f,    0.40560001134872437f,
      0.7878999710083008f,  0.34610000252723694f, 0.04149999842047691f,  0.29980000853538513f,
      0.5094000101089478f,  0.3727000057697296f,  0.5482000112533569f,   0.050200000405311584f},
     {0.0f, 0.0f, 9.0f, 9.0f, 0.0f, 5.0f, 4.0f, 9.0f, 5.0f, 5.0f, 9.0f, 9.0f},
     {0, 0, 0},
     {0.517799973487854f,   0.3434000015258789f,  0.3228999972343445f,  0.4474000036716461f,
      0.6344000101089478f,  0.40310001373291016f, 0.5365999937057495f,  0.44279998540878296f,
      0.4860999882221222f,  0.40230000019073486f, 0.25119999051094055f, 0.4002000093460083f,
      0.515500009059906f,   0.6953999996185303f,  0.3465000092983246f,  0.33500000834465027f,
      0.460099995136261f,   0.588100016117096f,   0.34389999508857727f, 0.6848999857902527f,
      0.49320000410079956f, 0.7141000032424927f,  0.8216999769210815f,  0.47189998626708984f,
      0.40389999747276306f, 0.3070000112056732f,  0.21870000660419464f, 0.3337000012397766f,
      0.4880000054836273f,  0.4869999885559082f,  0.18709999322891235f, 0.49140000343322754f,
      0.5561000108718872f,  0.41920000314712524f, 0.3686000108718872f,  0.14329999685287476f,
      0.4607999920845032f,  0.597100019454956f,   0.531000018119812f,   0.498199999332428f,
      0.27880001068115234f, 0.43860000371932983f, 0.6021999716758728f,  0.699999988079071f,
      0.7523999810218811f,  0.5774000287055969f,  0.7024000287055969f,  0.7250999808311462f,
      0.7337999939918518f,  0.8162999749183655f,  0.23929999768733978f, 0.4074999988079071f,
      0.3379000127315521f,  0.2524999976158142f,  0.47429999709129333f, 0.3671000003814697f,
      0.2702000141143799f,  0.4104999899864197f,  0.6419000029563904f,  0.8307999968528748f,
      0.5555999875068665f,  0.4542999863624573f,  0.5564000010490417f,  0.7501999735832214f,
      0.9300000071525574f,  0.6625999808311462f,  0.5616999864578247f,  0.4812999963760376f,
      0.49540001153945923f, 0.6662999987602234f,  0.6636000275611877f,  0.37209999561309814f,
      0.20559999346733093f, 0.19280000030994415f, 0.24779999256134033f}},
};

TEST(KernelsDataMisc, RoiAlignOnnxNodeTests) {
  for (const auto& c : kRoiAlignNodeCases) {
    std::vector<float> out(c.expected.size());
    ASSERT_EQ(kiln_ref::roi_align<float>(c.x_dims[0], c.x_dims[1], c.x_dims[2], c.x_dims[3],
                                         int64_t(c.batch.size()), c.rois.data(), c.batch.data(),
                                         c.out_h, c.out_w, c.sampling_ratio, c.spatial_scale, 0,
                                         c.half_pixel, c.x.data(), out.data()),
              0);
    expect_close(out, c.expected, 1e-3, 1e-4, c.name);
  }
}

TEST(KernelsDataMisc, RoiAlignMaxModeAndBadBatch) {
  // 2x2 input, one bin over the whole map with one sample at its centre (1, 1) -> clamped to the
  // last pixel: all weight on x[1][1]. Max of weighted corner terms (ORT semantics).
  const float x[4] = {1, 2, 3, 4}, roi[4] = {0, 0, 2, 2};
  const int64_t b[1] = {0}, bad[1] = {1};
  float y = 0;
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, roi, b, 1, 1, 1, 1.f, 1, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 4.f);
  // Sample at (0.5, 0.5) (roi 0..1 with output_half_pixel): avg = 2.5, max term = 0.25 * 4.
  const float r2[4] = {0, 0, 1, 1};
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, r2, b, 1, 1, 1, 1.f, 0, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 2.5f);
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, r2, b, 1, 1, 1, 1.f, 1, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 1.f);
  // output_half_pixel forces a degenerate roi to 1x1 (sample at 0.5, 0.5); half_pixel does not
  // (the empty roi samples at -0.5, clamped to pixel 0).
  const float dot[4] = {0, 0, 0, 0};
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, dot, b, 1, 1, 1, 1.f, 0, 0, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 2.5f);
  ASSERT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, dot, b, 1, 1, 1, 1.f, 0, 1, x, &y), 0);
  EXPECT_FLOAT_EQ(y, 1.f);
  y = -1;
  EXPECT_EQ(kiln_ref::roi_align<float>(1, 1, 2, 2, 1, r2, bad, 1, 1, 1, 1.f, 0, 0, x, &y), 1);
  EXPECT_EQ(y, -1.f);
}

struct NmsNodeCase {
  const char* name;
  int center_point_box;
  Dims box_dims, score_dims;
  int64_t max_out;
  float iou, score_threshold;
  int has_score_threshold;
  std::vector<float> boxes, scores;
  std::vector<int64_t> expected;
};

const NmsNodeCase kNmsNodeCases[] = {
    {"test_nonmaxsuppression_center_point_box_format",
     1,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.0f,
     1,
     {0.5f, 0.5f,
      1.0f, 1.0f,
      0.5f, 0.6000000238418579f,
      1.0f, 1.0f,
      0.5f, 0.4000000059604645f,
      1.0f, 1.0f,
      0.5f, 10.5f,
      1.0f, 1.0f,
      0.5f, 10.600000381469727f,
      1.0f, 1.0f,
      0.5f, 100.5f,
      1.0f, 1.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 0, 0, 5}},
    {"test_nonmaxsuppression_flipped_coordinates",
     0,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.0f,
     1,
     {1.0f, 1.0f,
      0.0f, 0.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, 0.8999999761581421f,
      1.0f, -0.10000000149011612f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      1.0f, 10.100000381469727f,
      0.0f, 11.100000381469727f,
      1.0f, 101.0f,
      0.0f, 100.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 0, 0, 5}},
    {"test_nonmaxsuppression_identical_boxes",
     0,
     {1, 10, 4},
     {1, 1, 10},
     3,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f,
      1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f,
      0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f, 1.0f, 1.0f},
     {0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f,
      0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f, 0.8999999761581421f,
      0.8999999761581421f, 0.8999999761581421f},
     {0, 0, 0}},
    {"test_nonmaxsuppression_limit_output_size",
     0,
     {1, 6, 4},
     {1, 1, 6},
     2,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f},
     {0, 0, 3, 0, 0, 0}},
    {"test_nonmaxsuppression_single_box",
     0,
     {1, 1, 4},
     {1, 1, 1},
     3,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f, 1.0f, 1.0f},
     {0.8999999761581421f},
     {0, 0, 0}},
    {"test_nonmaxsuppression_suppress_by_IOU",
     0,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 0, 0, 5}},
    {"test_nonmaxsuppression_suppress_by_IOU_and_scores",
     0,
     {1, 6, 4},
     {1, 1, 6},
     3,
     0.5f,
     0.4000000059604645f,
     1,
     {0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f},
     {0, 0, 3, 0, 0, 0}},
    {"test_nonmaxsuppression_two_batches",
     0,
     {2, 6, 4},
     {2, 1, 6},
     2,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f,
      0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f, 0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f,
      0.5f, 0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 1, 0, 3, 1, 0, 0}},
    {"test_nonmaxsuppression_two_classes",
     0,
     {1, 6, 4},
     {1, 2, 6},
     2,
     0.5f,
     0.0f,
     1,
     {0.0f, 0.0f,
      1.0f, 1.0f,
      0.0f, 0.10000000149011612f,
      1.0f, 1.100000023841858f,
      0.0f, -0.10000000149011612f,
      1.0f, 0.8999999761581421f,
      0.0f, 10.0f,
      1.0f, 11.0f,
      0.0f, 10.100000381469727f,
      1.0f, 11.100000381469727f,
      0.0f, 100.0f,
      1.0f, 101.0f},
     {0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f, 0.5f,
      0.30000001192092896f, 0.8999999761581421f, 0.75f, 0.6000000238418579f, 0.949999988079071f,
      0.5f, 0.30000001192092896f},
     {0, 0, 3, 0, 0, 0, 0, 1, 3, 0, 1, 0}},
};

TEST(KernelsDataMisc, NonMaxSuppressionOnnxNodeTests) {
  for (const auto& c : kNmsNodeCases) {
    const int64_t B = c.box_dims[0], n = c.box_dims[1], C = c.score_dims[1];
    const int64_t cap = B * C * std::min(c.max_out, n);
    std::vector<int64_t> sel(static_cast<size_t>(cap * 3 + 3)),
        scratch(static_cast<size_t>(kiln_ref::nms_scratch_bytes(n) / 8));
    const int64_t count = kiln_ref::non_max_suppression(
        B, n, C, c.boxes.data(), c.scores.data(), c.max_out, c.iou, c.score_threshold,
        c.has_score_threshold, c.center_point_box, sel.data(), cap, scratch.data());
    ASSERT_GE(count, 0) << c.name;
    sel.resize(static_cast<size_t>(count * 3));
    EXPECT_EQ(sel, c.expected) << c.name;
  }
  // IoU exactly at the threshold does not suppress (strictly greater); flipped corners and
  // center-point boxes describe the same rectangles.
  const float two_boxes[8] = {0, 0, 2, 1, 1, 1, 0, 0},
              centers[8] = {0.5f, 1, 1, 2, 0.5f, 0.5f, 1, 1};
  const float two_scores[2] = {0.9f, 0.8f};
  int64_t picked[6], scr[4];
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, two_scores, 5, 0.5f, 0, 0, 0, picked,
                                          2, scr),
            2);
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, two_scores, 5, 0.49f, 0, 0, 0, picked,
                                          2, scr),
            1);
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, centers, two_scores, 5, 0.49f, 0, 0, 1, picked,
                                          2, scr),
            1);
  // Score threshold is strict; NaN scores never qualify.
  const float nan_scores[2] = {std::nanf(""), 0.5f};
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, nan_scores, 5, 0.99f, 0.5f, 1, 0,
                                          picked, 2, scr),
            0);
  EXPECT_EQ(kiln_ref::non_max_suppression(1, 2, 1, two_boxes, nan_scores, 5, 0.99f, 0, 0, 0, picked,
                                          2, scr),
            1);
  EXPECT_EQ(picked[2], 1);
  // Capacity too small -> -1; max_output 0 -> nothing.
  const auto& c = kNmsNodeCases[0];
  std::vector<int64_t> sel(3), scratch(64);
  EXPECT_EQ(
      kiln_ref::non_max_suppression(1, c.box_dims[1], 1, c.boxes.data(), c.scores.data(), 3, 0.5f,
                                    0, 0, c.center_point_box, sel.data(), 0, scratch.data()),
      -1);
  EXPECT_EQ(
      kiln_ref::non_max_suppression(1, c.box_dims[1], 1, c.boxes.data(), c.scores.data(), 0, 0.5f,
                                    0, 0, c.center_point_box, sel.data(), 0, scratch.data()),
      0);
}

}  // namespace
