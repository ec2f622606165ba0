// Tests of kernels/cpu/attention.h: the fused attention must give, bit for bit, what the
// unfused ops compute with the same kernels (scale, gemm_f32, mask add, softmax_rows_f32,
// gemm_f32), at every scale placement, with and without a broadcast or per-batch mask, on sizes at the
// tile edges, at 1, 2 and 3 threads, without writing outside its output and scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cpu_kernels_check.h"
#include "kernel_sweep.h"
#include "kiln_cpu/attention.h"

namespace {

using namespace kiln_cpu_test;

struct Case {
  int64_t batch, S, Skv, D, Dv;
  int scale_at;
  bool divides;
  int mask;  // 0: none, 1: [S, Skv], 2: [1, Skv] (a padding row), 3: [S, 1],
             // 4: [batch, 1, Skv] (a padding row per batch, through mask_batch_offsets)
};

int64_t maskOffset(const kiln_cpu::AttentionShape& a, int64_t b) {
  return a.mask_batch_offsets ? a.mask_batch_offsets[b] : 0;
}

// The unfused ops, step by step, with the same kernels.
Vec unfused(const Case& c, const kiln_cpu::AttentionShape& a, const Vec& q, const Vec& kt,
            const Vec& v, const Vec& mask) {
  Vec y(size_t(c.batch * c.S * c.Dv));
  const auto none = kiln_cpu::make_epilogue(kiln_ref::NoActivation{}, nullptr, nullptr, nullptr, 0);
  Vec scratch(size_t(kiln_cpu::gemm_f32_scratch_floats(c.S, c.Skv + c.Dv, c.D + c.Skv, 1)));
  for (int64_t b = 0; b < c.batch; ++b) {
    Vec qs(q.begin() + b * c.S * c.D, q.begin() + (b + 1) * c.S * c.D);
    if (c.scale_at == kiln_cpu::kScaleQ)
      for (float& x : qs) x = c.divides ? x / a.scale : x * a.scale;
    Vec scores(size_t(c.S * c.Skv));
    kiln_cpu::gemm_f32(c.S, c.Skv, c.D, qs.data(), c.D, kt.data() + b * c.D * c.Skv, c.Skv,
                       scores.data(), c.Skv, none, scratch.data(), nullptr);
    if (c.scale_at == kiln_cpu::kScaleScores)
      for (float& x : scores) x = c.divides ? x / a.scale : x * a.scale;
    if (c.mask)
      for (int64_t r = 0; r < c.S; ++r)
        for (int64_t k = 0; k < c.Skv; ++k)
          scores[size_t(r * c.Skv + k)] +=
              mask[size_t(maskOffset(a, b) + r * a.mask_row_stride + k * a.mask_col_stride)];
    kiln_cpu::softmax_rows_f32(c.S, c.Skv, scores.data(), scores.data(), false, nullptr);
    kiln_cpu::gemm_f32(c.S, c.Dv, c.Skv, scores.data(), c.Skv, v.data() + b * c.Skv * c.Dv, c.Dv,
                       y.data() + b * c.S * c.Dv, c.Dv, none, scratch.data(), nullptr);
  }
  return y;
}

// The same function in double precision, written out directly (no shared kernels).
std::vector<double> naive(const Case& c, const kiln_cpu::AttentionShape& a, const Vec& q,
                          const Vec& kt, const Vec& v, const Vec& mask) {
  std::vector<double> y(size_t(c.batch * c.S * c.Dv), 0.0), p(size_t(c.Skv));
  const double s = c.divides ? 1.0 / a.scale : a.scale;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t i = 0; i < c.S; ++i) {
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < c.Skv; ++j) {
        double d = 0;
        for (int64_t k = 0; k < c.D; ++k)
          d += double(q[size_t((b * c.S + i) * c.D + k)]) * kt[size_t((b * c.D + k) * c.Skv + j)];
        if (c.scale_at != kiln_cpu::kScaleNone) d *= s;
        if (c.mask)
          d += mask[size_t(maskOffset(a, b) + i * a.mask_row_stride + j * a.mask_col_stride)];
        p[size_t(j)] = d;
        mx = std::max(mx, d);
      }
      for (double& x : p) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < c.Skv; ++j)
        for (int64_t k = 0; k < c.Dv; ++k)
          y[size_t((b * c.S + i) * c.Dv + k)] +=
              p[size_t(j)] / sum * v[size_t((b * c.Skv + j) * c.Dv + k)];
    }
  return y;
}

void check(const Case& c) {
  Rng rng{uint64_t(c.batch * 131 + c.S * 17 + c.Skv * 7 + c.D)};
  const Vec q = filled(c.batch * c.S * c.D, Data::kRandom, rng);
  const Vec kt = filled(c.batch * c.D * c.Skv, Data::kRandom, rng);
  const Vec v = filled(c.batch * c.Skv * c.Dv, Data::kRandom, rng);
  const int64_t rows = c.mask == 2 || c.mask == 4 ? 1 : c.S, cols = c.mask == 3 ? 1 : c.Skv;
  Vec mask = filled((c.mask == 4 ? c.batch : 1) * rows * cols, Data::kRandom, rng);
  std::vector<int64_t> offsets;
  for (int64_t b = 0; c.mask == 4 && b < c.batch; ++b) offsets.push_back(b * c.Skv);
  for (float& m : mask) m = m < -0.8f ? -30.0f : m;  // some nearly masked-out positions
  kiln_cpu::AttentionShape a{c.batch, c.S, c.Skv, c.D, c.Dv,
                             rows == 1 ? 0 : cols, cols == 1 ? 0 : 1, 0.125f, c.scale_at,
                             c.divides};
  if (c.divides) a.scale = 3.0f;
  if (c.mask == 4) a.mask_batch_offsets = offsets.data();
  const Vec want = unfused(c, a, q, kt, v, mask);
  const std::vector<double> exact = naive(c, a, q, kt, v, mask);
  for (size_t i = 0; i < exact.size(); ++i)
    ASSERT_NEAR(want[i], exact[i], 1e-5 * (1.0 + double(c.D)))
        << "element " << i << " of batch " << c.batch << " S " << c.S << " Skv " << c.Skv
        << " D " << c.D << " Dv " << c.Dv << " scale_at " << c.scale_at << " mask " << c.mask;
  const int64_t y_floats = c.batch * c.S * c.Dv;
  auto run = [&](kiln_cpu::ThreadPool* p) {
    const int64_t used =
        kiln_cpu::attention_scratch_floats(c.S, c.Skv, c.D, c.Dv) * (p ? p->size() : 1);
    Vec y(size_t(y_floats + kGuard), kSentinel);
    Vec scratch(size_t(used + kGuard), kSentinel);
    kiln_cpu::attention_f32(a, q.data(), kt.data(), v.data(), c.mask ? mask.data() : nullptr,
                            y.data(), scratch.data(), p);
    EXPECT_TRUE(untouched(y, 0, 0, 0, y_floats)) << "attention output";
    EXPECT_TRUE(untouched(scratch, 0, 0, 0, used)) << "attention scratch";
    y.resize(size_t(y_floats));
    return y;
  };
  const Vec base = run(nullptr);
  EXPECT_TRUE(identical(want, base)) << "fused vs unfused, S " << c.S << " Skv " << c.Skv;
  for (int t = 1; t <= 3; ++t) EXPECT_TRUE(identical(base, run(threadPool(t)))) << t << " threads";
}

TEST(CpuAttention, BitIdenticalToTheUnfusedOps) {
  KILN_REQUIRE_ISA();
  using kiln_cpu::kMR;
  using kiln_cpu::kNR;
  const Case cases[] = {
      {1, 1, 1, 1, 1, kiln_cpu::kScaleNone, false, 0},
      {12, 16, 16, 8, 8, kiln_cpu::kScaleQ, false, 0},
      {3, kMR + 1, kNR - 1, 5, kNR + 1, kiln_cpu::kScaleScores, true, 1},
      {2, kMR - 1, kNR + 3, 64, 7, kiln_cpu::kScaleQ, true, 2},
      {5, 7, 13, 3, 17, kiln_cpu::kScaleScores, false, 3},
      {2, 33, 300, 40, 24, kiln_cpu::kScaleQ, false, 1},
      {4, 9, kNR + 5, 16, 12, kiln_cpu::kScaleScores, false, 4},
  };
  for (const Case& c : cases) check(c);
}

}  // namespace

namespace kiln_cpu_test {

/// A manifest case: 2 batches of S queries over Skv keys, head sizes D and Dv, no mask or a
/// padding row per batch (mask 4), Q scaled.
void check_attention_f32(const SweepCase& k) {
  check(Case{2, k["S"], k["Skv"], k["D"], k["Dv"], kiln_cpu::kScaleQ, false, int(k["mask"])});
}

}  // namespace kiln_cpu_test
