// Tests of kernels/cpu/pool.h (max pooling) against kiln_ref::max_pool on windows, strides,
// dilations and pads at the edges of the vector blocks, with NaN, -inf and signed-zero planes:
// same bits (or both NaN) as the reference, and bit-identical results at 1, 2 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/parallel.h"
#include "kiln_cpu/pool.h"
#include "kiln_ref/pool.h"

namespace {

using namespace kiln_cpu_test;

// ---------------------------------------------------------------------------------------------
// Max pooling

struct PoolCase {
  const char* name;
  int64_t H, W, KH, KW, SH, SW, DH, DW;
  int64_t pt, pl, pb, pr;
  int64_t extra;  // outputs past floor mode's (ceil_mode: windows that start in the end pad)
};

void PrintTo(const PoolCase& c, std::ostream* os) {
  *os << c.name;
}

/// Same bits, or both NaN (a -0 must stay -0: MaxPool keeps the first of equal taps).
::testing::AssertionResult sameValues(const Vec& want, const Vec& got) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::isnan(want[i]) && std::isnan(got[i])) &&
        std::memcmp(&want[i], &got[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << ": want " << want[i] << " got " << got[i];
  return ::testing::AssertionSuccess();
}

// clang-format off
const PoolCase kPoolCases[] = {
  // name            H   W  KH KW SH SW DH DW pt pl pb pr extra
  {"2x2_s2_odd",     9, 11, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0},
  {"3x3_s1_p1_wide", 7, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},
  {"3x3_s2_p1",     13, 15, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
  {"3x3_s2_ceil",   12, 10, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1},
  {"5x5_s1_p2_spp", 11, 13, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 0},
  {"3x3_d2_asym",   10, 12, 3, 3, 1, 1, 2, 2, 2, 0, 0, 2, 0},
  {"2x2_pad_only",   5,  6, 2, 2, 1, 1, 1, 1, 2, 2, 0, 0, 0},
  {"7x7_global",     7,  7, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 0},
  {"1d_k3_s1_p1",    1, 50, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 0},
  {"1d_k4_s2",       1, 41, 1, 4, 1, 2, 1, 1, 0, 1, 0, 2, 0},
  // Stride 2 rows wide enough for the vector blocks (and their overlapping last block).
  {"3x3_s2_p1_resnet", 6, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},
  {"3x3_s2_ceil_wide", 5, 71, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1},
  {"2x2_s2_wide",      4, 66, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0},
  {"5x5_s2_p2_wide",   7, 97, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 0},
  {"1d_k4_s2_wide",    1, 150, 1, 4, 1, 2, 1, 1, 0, 3, 0, 2, 0},
  {"3x3_s2_d2_wide",   7, 80, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0},
};
// clang-format on

class PoolCases : public ::testing::TestWithParam<PoolCase> {};

// Planes of plain values, all NaN, -inf with NaNs, signed zeros, values with NaNs, and values
// with bands of NaN and of -inf: the reference's NaN rules (ignored unless every tap is NaN) and
// first-of-equal-taps ties.
void checkPool(const PoolCase& c) {
  const int64_t planes = 6, HW = c.H * c.W;
  const int64_t OH = (c.H + c.pt + c.pb - c.DH * (c.KH - 1) - 1) / c.SH + 1 + (c.H > 1) * c.extra;
  const int64_t OW = (c.W + c.pl + c.pr - c.DW * (c.KW - 1) - 1) / c.SW + 1 + c.extra;
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  Rng rng{31};
  Vec x = filled(planes * HW, Data::kExact, rng);
  for (int64_t i = 0; i < HW; ++i) {
    x[size_t(HW + i)] = nan;
    x[size_t(2 * HW + i)] = i % 3 == 0 ? nan : -inf;
    x[size_t(3 * HW + i)] = (rng.next() & 1) ? -0.0f : 0.0f;
    if (i % 4 == 1) x[size_t(4 * HW + i)] = nan;
    // Numbers but for a band of NaN columns and one of -inf and NaN: windows inside them give
    // NaN and -inf beside lanes of numbers (the vector blocks' -inf test).
    if (i % c.W >= 8 && i % c.W < 16) x[size_t(5 * HW + i)] = nan;
    if (i % c.W >= 20 && i % c.W < 28) x[size_t(5 * HW + i)] = i % 5 == 0 ? nan : -inf;
  }
  const bool one_d = c.H == 1 && c.KH == 1;
  const int64_t in2[] = {c.H, c.W}, k2[] = {c.KH, c.KW}, o2[] = {OH, OW}, s2[] = {c.SH, c.SW};
  const int64_t d2[] = {c.DH, c.DW}, p2[] = {c.pt, c.pl, c.pb, c.pr}, p1[] = {c.pl, c.pr};
  const int o = one_d ? 1 : 0;
  Vec want(static_cast<size_t>(planes * OH * OW));
  kiln_ref::max_pool<float>(one_d ? 1 : 2, planes, in2 + o, k2 + o, o2 + o, s2 + o, d2 + o,
                            one_d ? p1 : p2, x.data(), want.data(), nullptr, 0);
  const kiln_cpu::Pool2dShape s{planes, c.H,  c.W,  c.KH, c.KW, OH,  OW,
                                c.SH,   c.SW, c.DH, c.DW, c.pt, c.pl};
  auto run = [&](kiln_cpu::ThreadPool* p) {
    Vec y(static_cast<size_t>(planes * OH * OW + kGuard), kSentinel);
    kiln_cpu::max_pool2d_f32(s, x.data(), y.data(), p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, planes * OH * OW)) << "max_pool2d_f32 output";
    return y;
  };
  Vec base = run(nullptr);
  for (int t = 1; t <= 3; ++t) EXPECT_TRUE(identical(base, run(threadPool(t)))) << t << " threads";
  base.resize(want.size());
  EXPECT_TRUE(sameValues(want, base));
}

TEST_P(PoolCases, MaxPoolMatchesReference) {
  KILN_REQUIRE_ISA();
  checkPool(GetParam());
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, PoolCases, ::testing::ValuesIn(kPoolCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace

namespace kiln_cpu_test {

/// A manifest case: H x W planes, a KS x KS window at stride S with pads P on every side.
void check_max_pool2d_f32(const SweepCase& k) {
  const int64_t KS = k["KS"], S = k["S"], P = k["P"];
  checkPool(PoolCase{"sweep", k["H"], k["W"], KS, KS, S, S, 1, 1, P, P, P, P, 0});
}

}  // namespace kiln_cpu_test
