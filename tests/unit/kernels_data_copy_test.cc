// Reference data-movement kernels (kernels/ref/{transpose,copy}.h): hand-checked ONNX examples
// and random shapes against independent index mappings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "../../kernels/ref/copy.h"
#include "../../kernels/ref/transpose.h"
#include "kernels_data_test_util.h"

namespace {

using namespace kernels_test;

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

}  // namespace
