// Scan/Loop slice kernels (kernels/ref/scan.h) against hand-computed slices.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ref/scan.h"

namespace {

// seq [2, 3, 2] floats: element (o, l, i) = 100 o + 10 l + i.
std::vector<float> sequence() {
  std::vector<float> s;
  for (int o = 0; o < 2; ++o)
    for (int l = 0; l < 3; ++l)
      for (int i = 0; i < 2; ++i) s.push_back(float(100 * o + 10 * l + i));
  return s;
}

TEST(ScanKernels, ReadsMiddleAxisSlice) {
  auto seq = sequence();
  std::vector<float> slice(4, -1.f);
  kiln_ref::scan_slice_read(seq.data(), slice.data(), 2, 3, 2 * sizeof(float), 1);
  EXPECT_EQ(slice, (std::vector<float>{10, 11, 110, 111}));
  kiln_ref::scan_slice_read(seq.data(), slice.data(), 2, 3, 2 * sizeof(float), 2);
  EXPECT_EQ(slice, (std::vector<float>{20, 21, 120, 121}));
}

TEST(ScanKernels, ReadsOuterAxisSlice) {
  auto seq = sequence();  // as [1, 2, 6]: axis 0 of [2, 6]
  std::vector<float> slice(6, -1.f);
  kiln_ref::scan_slice_read(seq.data(), slice.data(), 1, 2, 6 * sizeof(float), 1);
  EXPECT_EQ(slice, (std::vector<float>{100, 101, 110, 111, 120, 121}));
}

TEST(ScanKernels, ReadsLastAxisSlice) {
  auto seq = sequence();  // as [6, 2, 1 float]: the last axis
  std::vector<float> slice(6, -1.f);
  kiln_ref::scan_slice_read(seq.data(), slice.data(), 6, 2, sizeof(float), 1);
  EXPECT_EQ(slice, (std::vector<float>{1, 11, 21, 101, 111, 121}));
}

TEST(ScanKernels, WriteIsTheInverseOfRead) {
  auto seq = sequence();
  std::vector<float> rebuilt(seq.size(), -1.f), slice(4);
  for (int64_t l = 0; l < 3; ++l) {
    kiln_ref::scan_slice_read(seq.data(), slice.data(), 2, 3, 2 * sizeof(float), l);
    kiln_ref::scan_slice_write(slice.data(), rebuilt.data(), 2, 3, 2 * sizeof(float), l);
  }
  EXPECT_EQ(rebuilt, seq);
}

TEST(ScanKernels, WriteTouchesOnlyItsSlice) {
  std::vector<int64_t> seq(6, 7);  // [2, 3, 1]
  const int64_t slice[2] = {-4, 9};
  kiln_ref::scan_slice_write(slice, seq.data(), 2, 3, sizeof(int64_t), 2);
  EXPECT_EQ(seq, (std::vector<int64_t>{7, 7, -4, 7, 7, 9}));
}

TEST(ScanKernels, EmptySliceWritesNothing) {
  std::vector<unsigned char> seq(4, 5), slice(2, 1);
  kiln_ref::scan_slice_read(seq.data(), slice.data(), 2, 2, 0, 1);
  kiln_ref::scan_slice_write(slice.data(), seq.data(), 0, 2, 1, 1);
  EXPECT_EQ(slice, (std::vector<unsigned char>{1, 1}));
  EXPECT_EQ(seq, (std::vector<unsigned char>(4, 5)));
}

}  // namespace
