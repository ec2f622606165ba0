// Reference kernels with data-dependent output sizes (kernels/ref/dynamic.h: Unique) against
// the ONNX spec's examples and hand-checked edge cases (NaN, -0.0, empty, omitted outputs).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../../kernels/ref/dynamic.h"

namespace {

struct UniqueResult {
  int64_t count = 0;
  std::vector<float> y;
  std::vector<int64_t> indices, inverse, counts;
};

// Runs unique<float> over [outer, n, inner] with every output buffer prefilled with 99 (so the
// zeroed tails are checked too).
UniqueResult runUnique(const std::vector<float>& x, int64_t outer, int64_t n, int64_t inner,
                       int sorted) {
  UniqueResult r;
  r.y.assign(size_t(outer * n * inner), 99.0f);
  r.indices.assign(size_t(n), 99);
  r.inverse.assign(size_t(n), 99);
  r.counts.assign(size_t(n), 99);
  std::vector<int64_t> scratch(size_t(kiln_ref::unique_scratch_bytes(n) / 8));
  r.count = kiln_ref::unique<float>(outer, n, inner, sorted, x.data(), r.y.data(), r.indices.data(),
                                    r.inverse.data(), r.counts.data(), scratch.data());
  return r;
}

using F = std::vector<float>;
using I = std::vector<int64_t>;

TEST(KernelsDynamicUnique, NotSortedWithoutAxis) {
  auto r = runUnique({2, 1, 1, 3, 4, 3}, 1, 6, 1, 0);
  EXPECT_EQ(r.count, 4);
  EXPECT_EQ(r.y, (F{2, 1, 3, 4, 0, 0}));
  EXPECT_EQ(r.indices, (I{0, 1, 3, 4, 0, 0}));
  EXPECT_EQ(r.inverse, (I{0, 1, 1, 2, 3, 2}));
  EXPECT_EQ(r.counts, (I{1, 2, 2, 1, 0, 0}));
}

TEST(KernelsDynamicUnique, SortedWithoutAxis) {
  auto r = runUnique({2, 1, 1, 3, 4, 3}, 1, 6, 1, 1);
  EXPECT_EQ(r.count, 4);
  EXPECT_EQ(r.y, (F{1, 2, 3, 4, 0, 0}));
  EXPECT_EQ(r.indices, (I{1, 0, 3, 4, 0, 0}));
  EXPECT_EQ(r.inverse, (I{1, 0, 0, 2, 3, 2}));
  EXPECT_EQ(r.counts, (I{2, 1, 2, 1, 0, 0}));
}

TEST(KernelsDynamicUnique, SortedWithAxis0) {
  // Rows of [[1,0,0],[1,0,0],[2,3,4]].
  auto r = runUnique({1, 0, 0, 1, 0, 0, 2, 3, 4}, 1, 3, 3, 1);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.y, (F{1, 0, 0, 2, 3, 4, 0, 0, 0}));
  EXPECT_EQ(r.indices, (I{0, 2, 0}));
  EXPECT_EQ(r.inverse, (I{0, 0, 1}));
  EXPECT_EQ(r.counts, (I{2, 1, 0}));
}

TEST(KernelsDynamicUnique, SortedWithMiddleAxis3d) {
  // [2, 4, 2] along axis 1: slices [1,1 | 1,1], [0,1 | 0,1], [2,1 | 2,1], [0,1 | 0,1].
  auto r = runUnique({1, 1, 0, 1, 2, 1, 0, 1, 1, 1, 0, 1, 2, 1, 0, 1}, 2, 4, 2, 1);
  EXPECT_EQ(r.count, 3);
  // Packed [2, 3, 2], then zeros up to the [2, 4, 2] bound.
  EXPECT_EQ(r.y, (F{0, 1, 1, 1, 2, 1, 0, 1, 1, 1, 2, 1, 0, 0, 0, 0}));
  EXPECT_EQ(r.indices, (I{1, 0, 2, 0}));
  EXPECT_EQ(r.inverse, (I{1, 0, 2, 0}));
  EXPECT_EQ(r.counts, (I{2, 1, 1, 0}));
}

TEST(KernelsDynamicUnique, SortedLastAxis) {
  // Columns of [[1,0,0],[1,0,0],[2,3,3]]: [1,1,2], [0,0,3], [0,0,3].
  auto r = runUnique({1, 0, 0, 1, 0, 0, 2, 3, 3}, 3, 3, 1, 1);
  EXPECT_EQ(r.count, 2);
  EXPECT_EQ(r.y, (F{0, 1, 0, 1, 3, 2, 0, 0, 0}));
  EXPECT_EQ(r.indices, (I{1, 0, 0}));
  EXPECT_EQ(r.inverse, (I{1, 0, 0}));
  EXPECT_EQ(r.counts, (I{2, 1, 0}));
}

TEST(KernelsDynamicUnique, NanGroupsTogetherAndSortsLast) {
  const float nan = std::nanf("");
  auto r = runUnique({nan, 1, nan, -0.0f, 0.0f}, 1, 5, 1, 1);
  ASSERT_EQ(r.count, 3);
  EXPECT_EQ(r.y[0], 0.0f);
  EXPECT_TRUE(std::signbit(r.y[0]));  // the first occurrence (-0.0) is kept
  EXPECT_EQ(r.y[1], 1.0f);
  EXPECT_TRUE(std::isnan(r.y[2]));
  EXPECT_EQ(r.indices, (I{3, 1, 0, 0, 0}));
  EXPECT_EQ(r.inverse, (I{2, 1, 2, 0, 0}));
  EXPECT_EQ(r.counts, (I{2, 1, 2, 0, 0}));
  auto u = runUnique({nan, 1, nan, -0.0f, 0.0f}, 1, 5, 1, 0);
  ASSERT_EQ(u.count, 3);
  EXPECT_TRUE(std::isnan(u.y[0]));
  EXPECT_EQ(u.indices, (I{0, 1, 3, 0, 0}));
  EXPECT_EQ(u.inverse, (I{0, 1, 0, 2, 2}));
  EXPECT_EQ(u.counts, (I{2, 1, 2, 0, 0}));
}

TEST(KernelsDynamicUnique, EmptyAndAllEqual) {
  auto e = runUnique({}, 1, 0, 1, 1);
  EXPECT_EQ(e.count, 0);
  auto same = runUnique({7, 7, 7}, 1, 3, 1, 0);
  EXPECT_EQ(same.count, 1);
  EXPECT_EQ(same.y, (F{7, 0, 0}));
  EXPECT_EQ(same.inverse, (I{0, 0, 0}));
  EXPECT_EQ(same.counts, (I{3, 0, 0}));
}

TEST(KernelsDynamicUnique, IntegersWithOmittedOutputs) {
  const int64_t x[5] = {5, -3, 5, 9, -3};
  int64_t y[5] = {1, 1, 1, 1, 1}, inverse[5] = {};
  std::vector<int64_t> scratch(size_t(kiln_ref::unique_scratch_bytes(5) / 8));
  EXPECT_EQ(kiln_ref::unique<int64_t>(1, 5, 1, 1, x, y, nullptr, inverse, nullptr, scratch.data()),
            3);
  EXPECT_EQ(I(y, y + 5), (I{-3, 5, 9, 0, 0}));
  EXPECT_EQ(I(inverse, inverse + 5), (I{1, 0, 1, 2, 0}));
}

}  // namespace
