// Tests of kiln_cpu::conv_transpose2d_f32 (kernels/cpu/conv.h) against kiln_ref::conv_transpose:
// the general scatter-add path (overlapping taps, pads, dilation) and the tiled path (kernel ==
// stride: every output stored once; images of many pixel blocks dealt whole to the threads),
// exact data bit for bit, at 1, 2 and 3 threads, with no writes past y or the scratch.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/conv.h"
#include "kiln_cpu/parallel.h"
#include "kiln_ref/conv.h"

namespace {

using namespace kiln_cpu_test;

struct TransposeCase {
  const char* name;
  int64_t C, H, W, M, KH, KW, SH, SW, DH, DW, PH, PW, OH, OW;
};

// clang-format off
const TransposeCase kTransposeCases[] = {
  // name                C   H   W   M  KH KW SH SW DH DW PH PW  OH  OW
  {"tiled_2x2_s2",      24, 12, 21, 24, 2, 2, 2, 2, 1, 1, 0, 0, 24, 42},
  {"tiled_2x2_s2_M1",    5, 17,  9,  1, 2, 2, 2, 2, 1, 1, 0, 0, 34, 18},
  {"tiled_3x2_s3x2",     7, 20, 19, 13, 3, 2, 3, 2, 1, 1, 0, 0, 60, 38},
  // Blocks of input pixels dealt to the threads (conv_transpose2d_by_blocks at 2 and 3 threads:
  // 6 blocks, the last one short).
  {"tiled_2x2_s2_blocks", 6, 33, 41,  3, 2, 2, 2, 2, 1, 1, 0, 0, 66, 82},
  {"tiled_2x2_s2_blocks_M1", 24, 40, 37, 1, 2, 2, 2, 2, 1, 1, 0, 0, 80, 74},
  {"overlap_3x3_s2_p1",  6, 11, 13,  5, 3, 3, 2, 2, 1, 1, 1, 1, 21, 25},
  {"2x2_s2_out_pad",     4,  9, 30,  3, 2, 2, 2, 2, 1, 1, 0, 0, 19, 61},
  {"3x3_s1_d2",          3, 10, 20,  4, 3, 3, 1, 1, 2, 2, 2, 1, 10, 22},
};
// clang-format on

void PrintTo(const TransposeCase& c, std::ostream* os) { *os << c.name; }

class TransposeCases : public ::testing::TestWithParam<TransposeCase> {};

/// conv_transpose2d_f32 on one case (exact data): bit for bit against kiln_ref, at 1-3 threads,
/// plain and with a fused Relu + residual epilogue.
void checkTranspose(const TransposeCase& c) {
  const kiln_cpu::Conv2dShape s{1,    c.C,  c.H,  c.W,  c.M,  c.KH, c.KW, c.OH,
                                c.OW, c.SH, c.SW, c.DH, c.DW, c.PH, c.PW, 1};
  const int64_t taps = c.KH * c.KW, Mk = c.M * taps, y_floats = c.M * c.OH * c.OW;
  Rng rng{41};
  const Vec x = filled(c.C * c.H * c.W, Data::kExact, rng);
  const Vec w = filled(c.C * Mk, Data::kExact, rng), bias = filled(c.M, Data::kExact, rng);
  // The end pads that give the case's output size.
  const int64_t pe_h = (c.H - 1) * c.SH + (c.KH - 1) * c.DH + 1 - c.PH - c.OH;
  const int64_t pe_w = (c.W - 1) * c.SW + (c.KW - 1) * c.DW + 1 - c.PW - c.OW;
  const int64_t in[] = {c.H, c.W}, k[] = {c.KH, c.KW}, out[] = {c.OH, c.OW};
  const int64_t st[] = {c.SH, c.SW}, d[] = {c.DH, c.DW}, pads[] = {c.PH, c.PW, pe_h, pe_w};
  Vec want(static_cast<size_t>(y_floats));
  kiln_ref::conv_transpose(2, 1, c.C, in, c.M, k, out, st, d, pads, 1, x.data(), w.data(),
                           bias.data(), want.data());
  // The weights as the compiler packs them: pack_a of the [M*KH*KW, C] transpose.
  Vec wt(static_cast<size_t>(Mk * c.C));
  for (int64_t row = 0; row < Mk; ++row)
    for (int64_t ch = 0; ch < c.C; ++ch) wt[size_t(row * c.C + ch)] = w[size_t(ch * Mk + row)];
  Vec wp(static_cast<size_t>(kiln_cpu::conv_transpose2d_packed_weight_floats(s)));
  kiln_cpu::pack_a(wt.data(), c.C, Mk, c.C, wp.data());
  auto run = [&](kiln_cpu::ThreadPool* p) {
    const int64_t used = kiln_cpu::conv_transpose2d_scratch_floats(s, p ? p->size() : 1);
    Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::conv_transpose2d_f32(s, x.data(), wp.data(), bias.data(), y.data(), scratch.data(),
                                   p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "conv_transpose2d_f32 output";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "conv_transpose2d_f32 scratch";
    return y;
  };
  Vec base = run(nullptr);
  for (int t = 1; t <= 3; ++t) EXPECT_TRUE(identical(base, run(threadPool(t)))) << t << " threads";
  base.resize(want.size());
  EXPECT_TRUE(identical(want, base)) << "against kiln_ref::conv_transpose";

  // The fused epilogue (kiln.FusedConvTranspose): Relu(y + residual), as the reference's
  // epilogue computes it over the finished output.
  const Vec res = filled(y_floats, Data::kExact, rng);
  Vec want_fused = want;
  kiln_ref::make_epilogue<float>(kiln_ref::Relu{}, nullptr, res.data())(want_fused.data(), 0,
                                                                         y_floats);
  for (int t = 1; t <= 2; ++t) {
    const int64_t used = kiln_cpu::conv_transpose2d_scratch_floats(s, t);
    Vec y(size_t(y_floats + kGuard), kSentinel), scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::conv_transpose2d_f32(
        s, x.data(), wp.data(), bias.data(), y.data(),
        kiln_cpu::make_epilogue(kiln_ref::Relu{}, nullptr, nullptr, res.data(), 0), scratch.data(),
        t == 1 ? nullptr : threadPool(t));
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "fused output";
    y.resize(want_fused.size());
    EXPECT_TRUE(identical(want_fused, y)) << "fused epilogue, " << t << " threads";
  }
}

TEST_P(TransposeCases, MatchesReference) {
  KILN_REQUIRE_ISA();
  checkTranspose(GetParam());
}

INSTANTIATE_TEST_SUITE_P(CpuKernels, TransposeCases, ::testing::ValuesIn(kTransposeCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace

namespace kiln_cpu_test {

/// A manifest case: C x H x W in, M out, a KS x KS kernel at stride S, no pads (the full output).
void check_conv_transpose2d_f32(const SweepCase& k) {
  const int64_t H = k["H"], W = k["W"], KS = k["KS"], S = k["S"];
  checkTranspose(TransposeCase{"sweep", k["C"], H, W, k["M"], KS, KS, S, S, 1, 1, 0, 0,
                               (H - 1) * S + KS, (W - 1) * S + KS});
}

}  // namespace kiln_cpu_test
