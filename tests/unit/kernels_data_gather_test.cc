// Reference gather/scatter kernels (kernels/ref/gather.h): Gather*, Scatter*, OneHot, CumSum,
// TopK and NonZero against hand-checked ONNX examples and independent formulations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "../../kernels/ref/gather.h"
#include "kernels_data_test_util.h"

namespace {

using namespace kernels_test;

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

}  // namespace
