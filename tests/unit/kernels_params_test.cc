// Run-time parameter resolution in the reference kernels (copy.h slice_resolve/pads_match,
// reduce.h reduce_axes) against the ONNX spec's clamping rules and hand-checked cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ref/copy.h"
#include "ref/reduce.h"

namespace {

using Dims = std::vector<int64_t>;

// ONNX Slice's clamping as the spec words it (it differs from Python's slices in one corner:
// with a negative step, a start before the first element clamps to 0, not to "before 0").
// Returns {first index, count}.
std::pair<int64_t, int64_t> onnxSlice(int64_t start, int64_t end, int64_t step, int64_t len) {
  if (start < 0) start += len;
  if (end < 0) end += len;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, len);
    end = std::clamp<int64_t>(end, 0, len);
    return {start, end > start ? (end - start - 1) / step + 1 : 0};
  }
  if (len == 0) return {0, 0};
  start = std::clamp<int64_t>(start, 0, len - 1);
  end = std::clamp<int64_t>(end, -1, len - 1);
  return {start, start > end ? (start - end - 1) / (-step) + 1 : 0};
}

TEST(KernelsParams, SliceResolveMatchesTheSpec) {
  std::mt19937_64 gen(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  };
  for (int iter = 0; iter < 2000; ++iter) {
    const int rank = int(pick(1, 3));
    Dims in(static_cast<size_t>(rank));
    for (auto& d : in) d = pick(0, 6);
    // Slice a random subset of axes, in random order, with negative axes sometimes.
    std::vector<int64_t> starts, ends, axes, steps;
    Dims out = in, first(size_t(rank), 0), step(size_t(rank), 1);
    for (int d = 0; d < rank; ++d) {
      if (pick(0, 2) == 0) continue;
      int64_t s = pick(-9, 9), e = pick(-9, 9), st = pick(-3, 3);
      if (st == 0) st = 1;
      if (pick(0, 5) == 0)
        e = st > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
      starts.push_back(s);
      ends.push_back(e);
      steps.push_back(st);
      axes.push_back(pick(0, 1) ? d : d - rank);
      auto [f, c] = onnxSlice(s, e, st, in[size_t(d)]);
      out[size_t(d)] = c;
      first[size_t(d)] = c > 0 ? f : 0;
      step[size_t(d)] = c > 1 ? st : 1;
    }
    int64_t gotStarts[kiln_ref::kMaxRank], gotSteps[kiln_ref::kMaxRank];
    ASSERT_EQ(
        kiln_ref::slice_resolve(rank, in.data(), out.data(), int64_t(starts.size()), starts.data(),
                                ends.data(), axes.data(), steps.data(), gotStarts, gotSteps),
        0);
    for (int d = 0; d < rank; ++d) {
      EXPECT_EQ(gotStarts[d], first[size_t(d)]) << "iter " << iter << " axis " << d;
      EXPECT_EQ(gotSteps[d], step[size_t(d)]) << "iter " << iter << " axis " << d;
    }
    // Any other output extent is refused.
    if (!starts.empty()) {
      Dims wrong = out;
      int64_t a = axes[0] < 0 ? axes[0] + rank : axes[0];
      wrong[size_t(a)] += 1;
      EXPECT_EQ(kiln_ref::slice_resolve(rank, in.data(), wrong.data(), int64_t(starts.size()),
                                        starts.data(), ends.data(), axes.data(), steps.data(),
                                        gotStarts, gotSteps),
                1);
    }
  }
}

TEST(KernelsParams, SliceResolveDefaultsAndBadParameters) {
  const Dims in = {4, 5}, out = {2, 5};
  const int32_t starts[] = {1}, ends[] = {3};
  int64_t s[kiln_ref::kMaxRank], st[kiln_ref::kMaxRank];
  // Default axes (0..n-1) and steps (1), int32 parameters.
  ASSERT_EQ(kiln_ref::slice_resolve<int32_t>(2, in.data(), out.data(), 1, starts, ends, nullptr,
                                             nullptr, s, st),
            0);
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[1], 0);
  EXPECT_EQ(st[0], 1);
  const int32_t zeroStep[] = {0}, badAxis[] = {2}, axes2[] = {0, -2}, two[] = {1, 1},
                twoEnds[] = {3, 3};
  EXPECT_EQ(kiln_ref::slice_resolve<int32_t>(2, in.data(), out.data(), 1, starts, ends, nullptr,
                                             zeroStep, s, st),
            1);
  EXPECT_EQ(kiln_ref::slice_resolve<int32_t>(2, in.data(), out.data(), 1, starts, ends, badAxis,
                                             nullptr, s, st),
            1);
  // A repeated axis (0 and -2) is refused.
  EXPECT_EQ(kiln_ref::slice_resolve<int32_t>(2, in.data(), out.data(), 2, two, twoEnds, axes2,
                                             nullptr, s, st),
            1);
}

TEST(KernelsParams, PadsMatch) {
  const Dims in = {3, 4}, out = {5, 3};
  const int64_t good[] = {1, 0, 1, -1}, bad[] = {1, 0, 0, -1};
  const int64_t huge = std::numeric_limits<int64_t>::max();
  const int64_t overflow[] = {huge, 0, huge, -1};
  EXPECT_EQ(kiln_ref::pads_match(2, in.data(), good, out.data()), 0);
  EXPECT_EQ(kiln_ref::pads_match(2, in.data(), bad, out.data()), 1);
  EXPECT_EQ(kiln_ref::pads_match(2, in.data(), overflow, out.data()), 1);
}

TEST(KernelsParams, ReduceAxes) {
  const Dims in = {2, 3, 4};
  int64_t mask[kiln_ref::kMaxRank];
  const int64_t axes[] = {-1, 0};
  const Dims keep = {1, 3, 1}, drop = {3};
  ASSERT_EQ(kiln_ref::reduce_axes(3, in.data(), 2, axes, 1, 3, keep.data(), mask), 0);
  EXPECT_EQ(mask[0], 1);
  EXPECT_EQ(mask[1], 0);
  EXPECT_EQ(mask[2], 1);
  EXPECT_EQ(kiln_ref::reduce_axes(3, in.data(), 2, axes, 0, 1, drop.data(), mask), 0);
  EXPECT_EQ(kiln_ref::reduce_axes(3, in.data(), 2, axes, 0, 3, keep.data(), mask), 1);
  EXPECT_EQ(kiln_ref::reduce_axes(3, in.data(), 2, axes, 1, 1, drop.data(), mask), 1);
  const int32_t outOfRange[] = {3};
  EXPECT_EQ(kiln_ref::reduce_axes(3, in.data(), 1, outOfRange, 1, 3, keep.data(), mask), 1);
  // Repeated axes reduce once.
  const int64_t twice[] = {1, -2};
  const Dims mid = {2, 1, 4};
  EXPECT_EQ(kiln_ref::reduce_axes(3, in.data(), 2, twice, 1, 3, mid.data(), mask), 0);
}

}  // namespace
