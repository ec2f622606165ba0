// kiln optimized CPU kernels: the GEMM's tile sizes and how its driver (gemm.h) splits an
// output over threads. Split choices only decide which thread computes which tiles, never the
// order of a sum, so results are bit-identical at any thread count and under any choice.
#pragma once

#include <cstdint>

#include "simd.h"

namespace kiln_cpu {

constexpr int kNR = 2 * V::kLanes;
constexpr int kMR = V::kRegisters == 32 ? 12 : (V::kLanes == 8 ? 6 : 4);
constexpr int64_t kKC = 512;           // rows of B per packed block (a panel: 64 KiB on AVX-512)
constexpr int64_t kNC = 8 * kNR;       // columns of B per packed block
constexpr int64_t kMC = 16 * kMR;      // rows of A per unit when M is split

/// A tuning choice for the GEMM driver (kiln compile --tune): how work is split over threads.
/// Every choice computes the same sums in the same order (work is split over output tiles
/// only), so results are bit-identical across choices.
struct GemmPlan {
  enum Split : int { kAuto = 0, kRows = 1, kColumns = 2 };
  int split = kAuto;
};

namespace gemm_detail {

/// How gemm_packed_a splits C[M, N] into work units: column blocks of `block` columns (a
/// multiple of kNR, at most kNC) times row chunks of `m_chunk` rows (a multiple of kMR). With
/// several threads the blocks are sized by balanced_block, so no thread is left with a larger
/// share than the tiles force: rows are split when M > N (each chunk packs its own copy of the B
/// block and the weights are read once), else columns, with rows split too when there are fewer
/// column blocks than threads, or when a small product's blocks deal unevenly (rebalance_split).
struct GemmSplit {
  int64_t block, m_chunk;
  /// bands > 0: the rows are cut into `bands` bands of equal rows ([b * M / bands, (b + 1) *
  /// M / bands), m_chunk unused), and units are numbered band outside, column blocks inside, so
  /// that a thread's share of them is whole bands; else column blocks outside, row chunks
  /// of m_chunk rows inside.
  int64_t bands = 0;
};

/// The most parts a thread gets when `parts` are cut into blocks of b (the last one short) and
/// the blocks are dealt to T threads in turn: ceil(blocks / T) full blocks, less the last
/// block's shortfall when its thread is the only one with that many.
constexpr int64_t split_load(int64_t parts, int64_t T, int64_t b) {
  const int64_t blocks = (parts + b - 1) / b, per = (blocks + T - 1) / T;
  const int64_t with_per = blocks - (per - 1) * T;  // threads holding `per` blocks
  return with_per >= 2 ? per * b : (per - 1) * b + (parts - (blocks - 1) * b);
}

/// Block size (in parts: strips or panels) for T threads, at most max_block: the largest whose
/// busiest thread gets within 1/64 of the least any block size gives (18 panels on 2 threads:
/// blocks of 3, 9 panels each; blocks of 5 would leave one thread 10).
constexpr int64_t balanced_block(int64_t parts, int64_t T, int64_t max_block) {
  int64_t best = split_load(parts, T, 1);
  for (int64_t b = 2; b <= max_block; ++b) {
    const int64_t l = split_load(parts, T, b);
    best = l < best ? l : best;
  }
  for (int64_t b = max_block; b > 1; --b)
    if (split_load(parts, T, b) * 64 <= best * 65) return b;
  return 1;
}

/// The busiest thread's work, in rows x panels, when the units of {block, m_chunk} (column
/// blocks outside, row chunks inside, as gemm_packed_a numbers them) are dealt to T threads in
/// turn, which is how the pool's shared counter hands out units of about equal cost.
inline int64_t split_makespan(int64_t M, int64_t panels, int64_t T, int64_t block_panels,
                              int64_t m_chunk) {
  int64_t load[64] = {};
  if (T > 64) T = 64;
  int64_t u = 0, most = 0;
  for (int64_t p0 = 0; p0 < panels; p0 += block_panels) {
    const int64_t bp = panels - p0 < block_panels ? panels - p0 : block_panels;
    for (int64_t m0 = 0; m0 < M; m0 += m_chunk, ++u) {
      int64_t& l = load[u % T];
      l += bp * (M - m0 < m_chunk ? M - m0 : m_chunk);
      most = l > most ? l : most;
    }
  }
  return most;
}

/// `split` (gemm_split's rule), unless it gives a thread more than 3% over an even share of a
/// small product (at most 128 tiles): MobileNetV2's 49 x 160 projections, 5 panels of 5 strips
/// on 2 threads, got 3 against 2 panels. Then the product is cut into the row chunks times
/// column blocks whose busiest thread has least work (ties: fewer, larger units), which took
/// those projections from 90 to 74 us at 2 threads.
inline GemmSplit rebalance_split(int64_t M, int64_t N, int64_t T, GemmSplit split) {
  const int64_t strips = (M + kMR - 1) / kMR, panels = (N + kNR - 1) / kNR;
  if (strips * panels > 128) return split;  // before any counting: gemm_split runs every call
  const int64_t ideal = (M * panels + T - 1) / T;
  int64_t best = split_makespan(M, panels, T, split.block / kNR, split.m_chunk);
  if (best * 100 <= ideal * 103) return split;
  int64_t best_units = (panels * kNR + split.block - 1) / split.block *
                       ((M + split.m_chunk - 1) / split.m_chunk);
  for (int64_t bp = 1; bp <= kNC / kNR && bp <= panels; ++bp)
    for (int64_t k = 1; k <= 4 * T && k <= strips; ++k) {
      const int64_t m_chunk = (strips + k - 1) / k * kMR;
      if (m_chunk > kMC && m_chunk < strips * kMR) continue;
      const int64_t units = (panels + bp - 1) / bp * ((M + m_chunk - 1) / m_chunk);
      const int64_t l = split_makespan(M, panels, T, bp, m_chunk);
      if (l < best || (l == best && units < best_units)) {
        best = l;
        best_units = units;
        split = {bp * kNR, m_chunk};
      }
    }
  return split;
}

/// The busiest thread's columns, in quarters of a panel, when blocks of `block` panels are
/// dealt to T threads as the pool deals units (contiguous even shares), a tail of at most 4
/// columns past the whole panels counting a quarter (gemm.h's tail_columns).
inline int64_t column_load(int64_t N, int64_t T, int64_t block) {
  const int64_t full = N / kNR, tail = N % kNR, panels = full + (tail > 0);
  const int64_t tail_cost = tail == 0 ? 0 : tail <= 4 ? 1 : 4;
  const int64_t units = (panels + block - 1) / block;
  int64_t most = 0;
  for (int64_t t = 0; t < T; ++t) {
    int64_t load = 0;
    for (int64_t p = t * units / T * block; p < (t + 1) * units / T * block && p < panels; ++p)
      load += p < full ? 4 : tail_cost;
    most = load > most ? load : most;
  }
  return most;
}

/// Panels per column block of a column split on T threads: balanced_block's, unless the tail is
/// tail_columns' (cheap_tail: A packed, at most 4 columns) and another block deals the columns
/// more evenly, counting the tail as the quarter panel it costs (ResNet-50's 14x14 stage, 196
/// pixels: 12 panels and 4 columns, in blocks of 7 gave two threads 7 and 5 panels and the tail;
/// blocks of 6 give 6 and 6; largest block among the best).
inline int64_t column_block(int64_t N, int64_t T, bool cheap_tail) {
  int64_t best = balanced_block((N + kNR - 1) / kNR, T, kNC / kNR);
  if (!cheap_tail || N % kNR == 0 || N % kNR > 4) return best;
  int64_t least = column_load(N, T, best);
  for (int64_t b = kNC / kNR; b >= 1; --b) {
    const int64_t l = column_load(N, T, b);
    if (l < least) best = b, least = l;
  }
  return best;
}

/// cheap_tail: A is packed (gemm.h runs a tail of at most 4 columns in tail_columns).
inline GemmSplit gemm_split(int64_t M, int64_t N, int threads, GemmPlan plan = {},
                            bool cheap_tail = false) {
  const int64_t strips = (M + kMR - 1) / kMR, panels = (N + kNR - 1) / kNR, T = threads;
  if (T <= 1) return {kNC, strips * kMR};
  auto even = [](int64_t parts, int64_t units) { return (parts + units - 1) / units; };
  if (plan.split == GemmPlan::kRows && strips >= T)
    return {kNC, balanced_block(strips, T, kMC / kMR) * kMR};
  if (plan.split == GemmPlan::kColumns) return {column_block(N, T, cheap_tail) * kNR, strips * kMR};
  // Not rebalanced: cutting MobileNetV2's 196 x 64 products by columns instead of 108 against
  // 88 rows slowed the depthwise convs two steps later by more than it saved.
  if (M > N && strips >= 2 * T) return {kNC, balanced_block(strips, T, kMC / kMR) * kMR};
  const int64_t block = balanced_block(panels, T, kNC / kNR) * kNR, n_blocks = even(N, block);
  int64_t m_chunk = strips * kMR;
  if (n_blocks < T && strips >= 2 * T) m_chunk = even(strips, even(T, n_blocks)) * kMR;
  return rebalance_split(M, N, T, {block, m_chunk});
}

/// gemm_split for a product whose A is read in place (gemm_f32_rowa_packed_b: a channels-last
/// 1x1 conv, A the pixels x input channels): where the rows are split (gemm_split's choice, or
/// because the weights are the smaller operand: K x N below M x (K + N) / 2), they are cut into
/// T x k bands of equal rows (RowA strips need not be whole kMR: they are balanced; k: bands
/// of at most kMC rows), numbered band-major, so that a thread's share of the units is 1/T of
/// the rows, as the ops before and after a channels-last conv split them (the depthwise convs:
/// by output rows). A core reads what the other core wrote at memory speed here (no shared fast
/// cache): with a column split, MobileNetV2's depthwise convs after its 14x14 expansions read
/// half their input from the other core, and with bands of whole kMR strips (108 and 88 of 196
/// rows) the projections after them did, for a tenth of theirs.
inline GemmSplit gemm_split_rowa(int64_t M, int64_t N, int64_t K, int threads,
                                 GemmPlan plan = {}) {
  const GemmSplit split = gemm_split(M, N, threads, plan);
  const int64_t T = threads, strips = (M + kMR - 1) / kMR;
  const bool rows = split.m_chunk < strips * kMR;
  if (T <= 1 || plan.split != GemmPlan::kAuto || strips < 2 * T ||
      (!rows && 2 * K * N >= M * (K + N)))
    return split;
  const int64_t per_thread = (strips + T - 1) / T, k = (per_thread * kMR + kMC - 1) / kMC;
  return {kNC, 0, T * k};
}

}  // namespace gemm_detail

}  // namespace kiln_cpu
