// kiln optimized CPU kernels: the GEMM's tile sizes and how its driver (gemm.h) splits an
// output over threads. Split choices only decide which thread computes which tiles, never the
// order of a sum, so results are bit-identical at any thread count and under any choice.
#pragma once

#include <cstdint>

#include "simd.h"

namespace kiln_cpu {

constexpr int kNR = 2 * V::kLanes;
constexpr int kMR = V::kRegisters == 32 ? 12 : (V::kLanes == 8 ? 6 : 4);
constexpr int64_t kKC = 256;           // rows of B per packed block (a panel: 32 KiB on AVX-512)
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
/// column blocks than threads.
struct GemmSplit {
  int64_t block, m_chunk;
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

inline GemmSplit gemm_split(int64_t M, int64_t N, int threads, GemmPlan plan = {}) {
  const int64_t strips = (M + kMR - 1) / kMR, panels = (N + kNR - 1) / kNR, T = threads;
  if (T <= 1) return {kNC, strips * kMR};
  auto even = [](int64_t parts, int64_t units) { return (parts + units - 1) / units; };
  if (plan.split == GemmPlan::kRows && strips >= T)
    return {kNC, balanced_block(strips, T, kMC / kMR) * kMR};
  if (plan.split == GemmPlan::kColumns)
    return {balanced_block(panels, T, kNC / kNR) * kNR, strips * kMR};
  if (M > N && strips >= 2 * T) return {kNC, balanced_block(strips, T, kMC / kMR) * kMR};
  const int64_t block = balanced_block(panels, T, kNC / kNR) * kNR, n_blocks = even(N, block);
  int64_t m_chunk = strips * kMR;
  if (n_blocks < T && strips >= 2 * T) m_chunk = even(strips, even(T, n_blocks)) * kMR;
  return {block, m_chunk};
}

}  // namespace gemm_detail

}  // namespace kiln_cpu
