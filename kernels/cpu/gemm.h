// kiln optimized CPU kernels: f32 GEMM. A register-blocked microkernel (kMR rows x kNR
// columns of accumulators: 12x32 on AVX-512, 6x16 on AVX2, 4x8 portable) over B packed into
// column panels, a cache-blocked driver, and a fused epilogue (row bias, column bias, residual,
// activation) applied to each finished tile while it is still in registers.
//
// Layouts:
//  * A is row-major with k contiguous: element (m, k) at a[m * lda + k]. Conv weights [M, C, kh,
//    kw] are already in this form (lda = C * kh * kw).
//  * B is read through panels: panel j holds columns [j * kNR, (j + 1) * kNR) of a block of
//    rows, row after row ([rows][kNR], columns past N zero). Constant B (MatMul/Gemm weights) is
//    packed so at compile time (pack_b_panels, the same function the compiler calls); other B
//    is packed per block at run time into scratch.
//
// Summation order: per output element, k ascending within blocks of kKC, the blocks summed in
// order. Work is split over output tiles only, so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <cstring>

#include "gemm_half_tail.h"
#include "gemm_pack.h"
#include "gemm_split.h"
#include "gemm_tail.h"
#include "kiln_ref/activation.h"
#include "kiln_ref/epilogue.h"
#include "kiln_ref/gemm.h"
#include "parallel.h"
#include "simd.h"
#include "vfunctor.h"

namespace kiln_cpu {

/// Floats of run-time packing scratch one thread needs for an N-column, K-deep product: one
/// block of at most kKC x kNC, no bigger than the product needs (small models stay small).
constexpr int64_t gemm_pack_floats(int64_t N, int64_t K) {
  const int64_t kc = K < kKC ? K : kKC;
  const int64_t n = (N + kNR - 1) / kNR * kNR;
  const int64_t nc = n < kNC ? n : kNC;
  return (kc * nc + 15) / 16 * 16;
}

/// What the epilogue adds to a finished tile, in this order: row_bias[m] (per output row, e.g.
/// a conv's per-channel bias), col_bias[n] (a Gemm bias row), residual (same layout as C with
/// leading dimension ld_residual), then the activation. Null pointers are skipped.
template <class Act>
struct Epilogue {
  Act act;
  const float* row_bias = nullptr;
  const float* col_bias = nullptr;
  const float* residual = nullptr;
  int64_t ld_residual = 0;
};

template <class Act>
inline Epilogue<Act> make_epilogue(Act act, const float* row_bias, const float* col_bias,
                                   const float* residual, int64_t ld_residual) {
  return Epilogue<Act>{act, row_bias, col_bias, residual, ld_residual};
}

/// Activations applied in registers (vfunctor.h's table); others run as scalar code over the
/// stored tile.
template <class Act>
using ActInRegister = VectorForm<Act>;

namespace gemm_detail {

/// n floats from p (n in [0, 2L]) as two vectors, the lanes past n zero: full loads when all
/// 2L are there (a tile of whole panels), masked ones only for a partial tile (on AVX2 a masked
/// load also needs its mask built: a tile of 6 rows built and loaded 24 of them per tile).
inline void load_pair(const float* p, int n, V::R* lo, V::R* hi) {
  constexpr int L = V::kLanes;
  if (n == 2 * L) {
    *lo = V::load(p);
    *hi = V::load(p + L);
  } else {
    *lo = V::load(p, n < L ? n : L);
    *hi = V::load(p + L, n > L ? n - L : 0);
  }
}

/// A tile's slice of the column bias, e.col_bias[n, n + cols), loaded once for all its rows
/// (each row's own loads could not be merged by the compiler: the rows' stores to C might
/// alias the bias). Zero where there is none or the tile is not the last k block.
struct TileCols {
  V::R b0 = V::zero(), b1 = V::zero();
};
template <class Act>
inline TileCols tile_cols(const Epilogue<Act>& e, int64_t n, int cols, bool last) {
  TileCols t;
  if (last && e.col_bias) load_pair(e.col_bias + n, cols, &t.b0, &t.b1);
  return t;
}

/// The epilogue's adds on one output row's two accumulator vectors (C's earlier k blocks
/// already added), in place: row bias, column bias (tc: tile_cols), residual.
template <class Act>
inline void add_row(V::R& v0, V::R& v1, int cols, const Epilogue<Act>& e, int64_t m, int64_t n,
                    const TileCols& tc) {
  if (e.row_bias) {
    const V::R rb = V::set1(e.row_bias[m]);
    v0 = V::add(v0, rb);
    v1 = V::add(v1, rb);
  }
  if (e.col_bias) {
    v0 = V::add(v0, tc.b0);
    v1 = V::add(v1, tc.b1);
  }
  if (e.residual) {
    V::R r0, r1;
    load_pair(e.residual + m * e.ld_residual + n, cols, &r0, &r1);
    v0 = V::add(v0, r0);
    v1 = V::add(v1, r1);
  }
}

/// One output row after add_row (last) or a partial sum (not last): the activation, into c.
/// A row of at most L columns (a tile of one vector: 16-channel convs on AVX-512) stores v0 only:
/// v1's store of no lanes still cost a masked store per row (MobileNetV2's 12544x16x32
/// projection 9-11% faster without it on a Zen 4, session 47).
template <class Act>
inline void store_row(V::R v0, V::R v1, float* c, int cols, bool last, const Epilogue<Act>& e) {
  constexpr int L = V::kLanes;
  if (last) {
    v0 = ActInRegister<Act>::apply(e.act, v0);
    v1 = ActInRegister<Act>::apply(e.act, v1);
  }
  if (cols == kNR) {
    V::store(c, v0);
    V::store(c + L, v1);
  } else if (cols == L) {
    V::store(c, v0);
  } else if (cols < L) {
    V::store(c, v0, cols);
  } else {
    V::store(c, v0);
    V::store(c + L, v1, cols - L);
  }
  if (last && !ActInRegister<Act>::kYes)
    for (int j = 0; j < cols; ++j) c[j] = act_value(e.act, c[j]);
}

/// One output row's two accumulator vectors (C's earlier k blocks already added) through the
/// epilogue and into c; tc: the tile's column bias (tile_cols).
template <class Act>
inline void finish_row(V::R v0, V::R v1, float* c, int cols, bool last, const Epilogue<Act>& e,
                       int64_t m, int64_t n, const TileCols& tc) {
  if (last) add_row(v0, v1, cols, e, m, n, tc);
  store_row(v0, v1, c, cols, last, e);
}

/// finish_row for a row on its own (its column bias loaded here).
template <class Act>
inline void finish_row(V::R v0, V::R v1, float* c, int cols, bool last, const Epilogue<Act>& e,
                       int64_t m, int64_t n) {
  finish_row(v0, v1, c, cols, last, e, m, n, tile_cols(e, n, cols, last));
}

/// How many k steps ahead micro asks for the row of a B read in place.
constexpr int64_t kInPlaceAhead = 8;

/// micro's request for the row of a B read in place kInPlaceAhead k steps on. Always inlined:
/// as a lambda, GCC 12 split its body into a function of prefetches only, found it free of
/// side effects and deleted every call (session 53: no prefetch in the generated code).
template <int NV>
__attribute__((always_inline)) inline void fetch_in_place(const float* b, int64_t ldb) {
  __builtin_prefetch(b + kInPlaceAhead * ldb, 0, 3);
  if constexpr (NV >= 2) __builtin_prefetch(b + kInPlaceAhead * ldb + V::kLanes, 0, 3);
}

/// Memory a tile's k loop brings in for a later tile: `lines` 64-byte lines from `p` (none
/// when p is null). Packed A: the next strip, into L1, a line per k step from the loop's start.
/// spread: part of the next block of B (weights read in place), into L2, evenly over the loop.
struct Ahead {
  const float* p = nullptr;
  int64_t lines = 0;
  bool spread = false;
};

/// C[0:R, 0:cols] (+)= A[0:R, 0:kc] * B[0:kc, 0:cols] from a packed A strip (ap[k * kMR + r])
/// and a B panel (bp[k * kNR + col]). accumulate: add to what C holds (a later k block);
/// last: the final k block, apply the epilogue. (m, n): the tile's origin in the whole output.
/// RowA: A is row-major (element (r, k) at ap[r * lda + k]), read in place; else a packed
/// strip (ap[k * kMR + r]).
/// ldb: the step between B's rows in the panel (kNR when packed; a B read in place, wider).
///
/// Never inlined: its many instantiations (NV, kFull, kLda) inlined into micro_rows made GCC's
/// inlining elsewhere collapse (tiles 1.9-2.7x slower in bench/kernel_ab.py, session 49).
template <int R, int NV, bool RowA, class Act, bool kFull = false, int kLda = 0>
__attribute__((noinline)) inline void micro(int64_t kc, const float* ap, int64_t lda,
                                            const float* bp, int64_t ldb, float* c, int64_t ldc,
                                            int cols, bool accumulate, bool last,
                                            const Epilogue<Act>& e_in, int64_t m, int64_t n,
                                            Ahead ahead) {
  // The row loops must unroll fully so the accumulators live in registers. NV = 1: the tile
  // has at most L columns, so the second vector of the panel (all zeros) is not multiplied.
  constexpr int L = V::kLanes;
  // kFull: whole vectors (cols == NV * L), one k block, nothing ahead, no row bias, as
  // constants (micro_rows checks them): no branches on them, fewer live registers, same sums.
  // Small-K products gain most (session 49, docs/targets.md: 12544x16x32 0.88-0.95 of the
  // time; K >= 64 level; NV = 3 no gain).
  if constexpr (kFull) {
    static_assert(NV != 3, "kFull tiles are whole vectors");
    cols = NV * L;
    accumulate = false;
    last = true;
    ahead = Ahead{};
  }
  if constexpr (kLda > 0) lda = kLda;
  Epilogue<Act> e_full = e_in;
  if constexpr (kFull) e_full.row_bias = nullptr;
  const Epilogue<Act>& e = kFull ? e_full : e_in;
  V::R acc0[R], acc1[R];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = V::zero();
  // NV = 3: a tile of 17-24 columns (kHalfTail), the last 8 columns of rows r and r + 1 in
  // half[r / 2].
  HalfR half[NV == 3 ? (R + kHalfPerRow - 1) / kHalfPerRow : 1];
  KILN_CPU_UNROLL
  for (int r = 0; r < (NV == 3 ? (R + kHalfPerRow - 1) / kHalfPerRow : 1); ++r)
    half[r] = half_zero();
  // The residual's lines of this tile (for writing where y is written over it, as pixel rows'
  // tiles do), and with 16-column panels (AVX2) those two panels on (the next tiles of these
  // rows): 3-7% on ResNet-50's residual 1x1 convs, residual from memory (a Zen 3). Not in short
  // rows (MobileNetV2's projections: 2% slower at 1 thread), nor with 32-column panels (Zen 5:
  // a tile's 24 lines plus 24 ahead crowded L1; without, ResNet-50's residual convs 3-5% faster).
  if (last && e.residual) {
    const bool next = kNR < 32 && n + 3 * kNR <= e.ld_residual;
    const bool in_place = e.residual + m * e.ld_residual + n == c && e.ld_residual == ldc;
    auto fetch = [in_place](const float* p) {
      in_place ? prefetch_write(p) : __builtin_prefetch(p, 0, 3);
    };
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) {
      const float* rr = e.residual + (m + r) * e.ld_residual + n;
      fetch(rr);
      if constexpr (NV >= 2) fetch(rr + L);
      if (next) {
        fetch(rr + 2 * kNR);
        if constexpr (NV >= 2) fetch(rr + 2 * kNR + L);
      }
    }
  }
  // B read in place (ldb != kNR: a 1x1 conv's X, each k step's row a whole image after the
  // last, on a new page, where no hardware prefetcher follows): each step asks for the row
  // kInPlaceAhead steps on into L1. Session 53, an Intel Xeon (AVX-512, two FMA pipes), ResNet-50
  // at 1 thread: its 1x1 convs of 256-1024 input channels 0.82-0.91 of the time, the model 0.973
  // (`kiln bench --versus`, 30 rounds); 4 or 16 steps ahead were no better. (A Zen 4 was level.)
  const bool in_place = ldb != kNR;
  int64_t k = 0;
  if (ahead.spread) {
    // Line i at step i * kc / lines: a block's first strip would otherwise wait on memory for
    // each panel (MobileNetV2's 7x7 1x1 convs, weights of 0.6-1.6 MB read once a run).
    for (int64_t acc = 0, line = 0; k < kc; ++k) {
      for (acc += ahead.lines; acc >= kc && line < ahead.lines; acc -= kc, ++line)
        __builtin_prefetch(ahead.p + 16 * line, 0, 2);
      if (in_place) fetch_in_place<NV>(bp, ldb);
      step<R, NV>(ap, bp, acc0, acc1, half, RowA ? lda : 1);
      ap += RowA ? 1 : kMR;
      bp += ldb;
    }
  }
  for (const int64_t k1 = ahead.spread ? 0 : ahead.lines < kc ? ahead.lines : kc; k < k1; ++k) {
    __builtin_prefetch(ahead.p + k * 16, 0, 3);
    if (in_place) fetch_in_place<NV>(bp, ldb);
    step<R, NV>(ap, bp, acc0, acc1, half, RowA ? lda : 1);
    ap += RowA ? 1 : kMR;
    bp += ldb;
  }
  for (; k < kc; ++k) {
    if (in_place) fetch_in_place<NV>(bp, ldb);
    step<R, NV>(ap, bp, acc0, acc1, half, RowA ? lda : 1);
    ap += RowA ? 1 : kMR;
    bp += ldb;
  }
  if constexpr (NV == 3) {
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) acc1[r] = half_widen(half[r / kHalfPerRow], r);
  }
  // accumulate: C + tile, all rows loaded before any is stored: C's rows are often a multiple
  // of 4 KiB apart, and a load behind a store to the same address modulo 4 KiB waits for it.
  if (accumulate) {
    if (cols == kNR) {
      KILN_CPU_UNROLL
      for (int r = 0; r < R; ++r) {
        acc0[r] = V::add(V::load(c + r * ldc), acc0[r]);
        if constexpr (NV >= 2) acc1[r] = V::add(V::load(c + r * ldc + L), acc1[r]);
      }
    } else {
      const int c0 = cols < L ? cols : L, c1 = cols > L ? cols - L : 0;
      KILN_CPU_UNROLL
      for (int r = 0; r < R; ++r) {
        acc0[r] = V::add(V::load(c + r * ldc, c0), acc0[r]);
        if constexpr (NV >= 2) acc1[r] = V::add(V::load(c + r * ldc + L, c1), acc1[r]);
      }
    }
  }
  // Every row's adds (the residual's loads) before any row is stored: a load behind a store
  // to C waits on it when their addresses match modulo 4 KiB, and the residual may be C itself.
  const TileCols tc = tile_cols(e, n, cols, last);
  if (last) {
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) add_row(acc0[r], acc1[r], cols, e, m + r, n, tc);
  }
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) store_row(acc0[r], acc1[r], c + r * ldc, cols, last, e);
}

/// micro's kFull tile of cols == L (NV = 1) or kNR (NV = 2) columns; kLda > 0: A's leading
/// dimension as a constant (lda == kLda).
template <int R, bool RowA, int kLda, class Act>
inline void micro_full(int64_t kc, const float* ap, int64_t lda, const float* bp, int64_t ldb,
                       float* c, int64_t ldc, int cols, const Epilogue<Act>& e, int64_t m,
                       int64_t n) {
  if (cols == V::kLanes)
    micro<R, 1, RowA, Act, true, kLda>(kc, ap, lda, bp, ldb, c, ldc, cols, false, true, e, m, n,
                                       {});
  else
    micro<R, 2, RowA, Act, true, kLda>(kc, ap, lda, bp, ldb, c, ldc, cols, false, true, e, m, n,
                                       {});
}

template <int R, bool RowA, class Act>
inline void micro_rows(int rows, int64_t kc, const float* ap, int64_t lda, const float* bp,
                       int64_t ldb, float* c, int64_t ldc, int cols, bool accumulate, bool last,
                       const Epilogue<Act>& e, int64_t m, int64_t n, Ahead ahead = {}) {
  if constexpr (R > 1) {
    if (rows < R)
      return micro_rows<R - 1, RowA>(rows, kc, ap, lda, bp, ldb, c, ldc, cols, accumulate, last, e,
                                     m, n, ahead);
  }
  if (!accumulate && last && !ahead.p && !e.row_bias && (cols == kNR || cols == V::kLanes)) {
    if constexpr (RowA && R == kMR) {
      // A read in place with few columns (channels-last 1x1 convs of 16, 24 or 32 input
      // channels): its rows' offsets r * lda become constants, so the tile needs one address
      // register for A, not one per row (with 12 rows, some of those spilled to the stack).
      // Session 49, Zen 4, bench/kernel_ab.py: 12544x16x32 0.93-0.95 of kFull's time,
      // 12544x96x16 0.94-1.01, 3136x144x24 0.97-0.98; MobileNetV2 about 1% faster.
      if (lda == 16) return micro_full<R, RowA, 16>(kc, ap, lda, bp, ldb, c, ldc, cols, e, m, n);
      if (lda == 24) return micro_full<R, RowA, 24>(kc, ap, lda, bp, ldb, c, ldc, cols, e, m, n);
      if (lda == 32) return micro_full<R, RowA, 32>(kc, ap, lda, bp, ldb, c, ldc, cols, e, m, n);
    }
    micro_full<R, RowA, 0>(kc, ap, lda, bp, ldb, c, ldc, cols, e, m, n);
  } else if (cols <= V::kLanes)
    micro<R, 1, RowA>(kc, ap, lda, bp, ldb, c, ldc, cols, accumulate, last, e, m, n, ahead);
  else if (kHalfTail && cols <= V::kLanes * 3 / 2)
    micro<R, 3, RowA>(kc, ap, lda, bp, ldb, c, ldc, cols, accumulate, last, e, m, n, ahead);
  else
    micro<R, 2, RowA>(kc, ap, lda, bp, ldb, c, ldc, cols, accumulate, last, e, m, n, ahead);
}

}  // namespace gemm_detail

/// A block of B as panels: panel j of the block at p + j * stride, its rows ldb apart (kNR
/// when packed; B read in place has whole rows of kNR columns, each a row of B apart).
struct Panels {
  const float* p;
  int64_t stride;
  int64_t ldb = kNR;
};

/// The blocked driver: C[M, N] = A[M, K] * B[K, N], then the epilogue. `ap` is A packed
/// (pack_a); B comes from `panel(k0, kc, n0, nc, buf)`, which returns the block of rows
/// [k0, k0 + kc) x columns [n0, n0 + nc) as panels, packing into buf (gemm_pack_floats(N, K) floats
/// of this thread's scratch) when it must. Work units are column blocks x row chunks.
/// RowA: `ap` is A itself, row-major with leading dimension lda, read in place (no packing).
/// PrefetchB: B is constant panels (weights packed at compile time) that `panel` returns
/// without packing, so the next block can be asked for ahead (`panel(..., nullptr)`).
template <bool RowA = false, bool PrefetchB = RowA, class Act, class PanelFn>
inline void gemm_packed_a(int64_t M, int64_t N, int64_t K, const float* ap, PanelFn panel, float* c,
                          int64_t ldc, const Epilogue<Act>& e, float* scratch, ThreadPool* pool,
                          int64_t lda = 0, GemmPlan plan = {}) {
  if (M <= 0 || N <= 0) return;
  const int threads = pool ? pool->size() : 1;
  const gemm_detail::GemmSplit split = RowA ? gemm_detail::gemm_split_rowa(M, N, K, threads, plan)
                                            : gemm_detail::gemm_split(M, N, threads, plan, true);
  const int64_t block = split.block, m_chunk = split.m_chunk;
  const int64_t n_blocks = (N + block - 1) / block;
  const int64_t m_blocks = split.bands > 0 ? split.bands : (M + m_chunk - 1) / m_chunk;
  parallel_for(pool, n_blocks * m_blocks, [&](int64_t unit, int tid) {
    const bool bands = split.bands > 0;
    const int64_t n0 = (bands ? unit % n_blocks : unit / m_blocks) * block;
    const int64_t mb = bands ? unit / n_blocks : unit % m_blocks;
    const int64_t nc = N - n0 < block ? N - n0 : block;
    const int64_t mb0 = bands ? mb * M / m_blocks : mb * m_chunk;
    const int64_t mb1 = bands ? (mb + 1) * M / m_blocks : M < mb0 + m_chunk ? M : mb0 + m_chunk;
    float* buf = scratch ? scratch + int64_t(tid) * gemm_pack_floats(N, K) : nullptr;
    // K == 0 runs once with kc == 0: the epilogue of zeros.
    for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kKC) {
      const int64_t kc = K - k0 < kKC ? K - k0 : kKC;
      const bool accumulate = k0 > 0, last = k0 + kc >= K;
      const Panels bp = panel(k0, kc, n0, nc, buf);
      // PrefetchB (B: weights read in place, streamed from memory once a run in a model): the
      // block of B this thread most likely takes next (the next k block, else the next unit's:
      // the pool hands a thread its share of units in order) comes into L2 while this one is
      // used, so that its first strip does not wait on memory. nkc x nnc: its rows x columns;
      // nb.p null: none. With packed A too since session 23: the BERT-like encoder (128-row
      // products, 2.4-9.4 MB of weights each) 61.0 -> 55.6 ms at 1 thread, 33.2 -> 31.8 at 2.
      Panels nb{nullptr, 0};
      int64_t nkc = 0, nnc = 0;
      if constexpr (PrefetchB) {
        const int64_t nk0 = last ? 0 : k0 + kc, nn0 = last ? n0 + block : n0;
        if (nn0 < N && (!last || m_blocks == 1 || split.bands > 0)) {
          nkc = K - nk0 < kKC ? K - nk0 : kKC;
          nnc = N - nn0 < block ? N - nn0 : block;
          nb = panel(nk0, nkc, nn0, nnc, nullptr);
        }
      }
      // Strip by strip: each strip of A (kMR x kc, 24 KB) is used across all the block's
      // panels while it is in L1, the block of B (kc x nc) stays in L2 across the strips. (Panel
      // by panel instead, a 64 KB panel does not stay in a 48 KB L1 across the strips either,
      // and the strips of A stream in from L3 once per panel rather than once per block.)
      // A read in place (RowA) takes strips of balanced heights (49 rows: 10, 10, 10, 10, 9,
      // not 12, 12, 12, 12, 1, whose 1-row tile waits on its fma chains' latency); packed A
      // comes in strips of kMR.
      const int64_t strips = (mb1 - mb0 + kMR - 1) / kMR;
      // Packed A: a tail of at most 4 columns past the block's whole panels runs after the
      // strips, in tail_columns (from two strips on, where it has chains to spare), not as
      // kMR x kNR tiles.
      const int64_t tail = !RowA && strips >= 2 && nc % kNR <= 4 ? nc % kNR : 0;
      const int64_t tiled = nc - tail;
      // RowA's strip ends mb0 + (q + 1) * (mb1 - mb0) / strips, stepped without a division
      // per strip (a 64-bit idiv, ~40 cycles on a Zen 1, against a tile of 384 at K = 32).
      const int64_t step = strips > 0 ? (mb1 - mb0) / strips : 0;
      const int64_t extra = strips > 0 ? (mb1 - mb0) % strips : 0;
      int64_t strip_end = mb0, carry = 0;
      for (int64_t q = 0, m = mb0; q < strips; ++q) {
        if constexpr (RowA) {
          strip_end += step;
          carry += extra;
          if (carry >= strips) {
            ++strip_end;
            carry -= strips;
          }
        }
        const int64_t m_end = RowA ? strip_end : (mb1 < m + kMR ? mb1 : m + kMR);
        const int rows = int(m_end - m);
        const float* am = RowA ? ap + m * lda + k0 : ap + packed_a_index(M, K, m / kMR, k0, 0);
        // Packed A: the strip after this one (this k block's next, else the next k block's
        // first) comes into L1 during this strip's last tile.
        gemm_detail::Ahead next;
        if (!RowA && m + kMR < mb1) {
          next = {am + kc * kMR, kc * kMR / 16};
        } else if (!RowA && !last) {
          const int64_t kc1 = K - k0 - kc < kKC ? K - k0 - kc : kKC;
          next = {ap + packed_a_index(M, K, mb0 / kMR, k0 + kc, 0), kc1 * kMR / 16};
        }
        // PrefetchB: the next block's panel j comes into L2 during tile j of the block's first
        // strip, evenly over its k loop (with packed A, the first strip's last tile brings the
        // next strip of A into L1 instead, and the second strip's first tile takes its panel).
        // Spread over all the strips (a share of each panel per strip, until session 28), the
        // last strips' share came just in time at best: in a loud hour on a Zen 3 (another
        // tenant on the core's L2 and L3), BERT's 128-row products and MobileNetV2's 49- and
        // 196-row 1x1 convs with K > 256 ran 1.2-1.3x slower than with the whole block asked
        // for during the first strip (1.00-1.04 slower in a calm one).
        // With two strips or more and weights of more than one block (session 35): the first
        // strip's tile j takes this block's panel j + 1 instead, and the second strip the next
        // block's panels (packed A: the third strip's first tile the last panel). The first
        // strip reads the block's panels from memory where they are cold (the weights of a
        // model larger than L3 are, once a run), and the next block asked for one block ahead
        // had not stopped that: MobileNetV2's 7x7 1x1 convs (A read in place, 49 rows, 0.6-1.6
        // MB of weights) ran 5-11% faster in the model at 1 thread (features.18: 268 -> 239
        // us); BERT's 128-row products (packed A, 2.4-9.4 MB) 2-3% faster with cold weights.
        const int64_t panel_lines = (nkc * kNR + 15) / 16, last_panel = (tiled - 1) / kNR;
        // (Packed A from three strips: the third takes the next block's last panel.)
        const bool own_first = PrefetchB && strips >= (RowA ? 2 : 3) && nb.p;
        const int64_t q_next = own_first ? 1 : 0;  // the strip that takes the next block
        for (int64_t j = 0; j < tiled; j += kNR) {
          const int cols = int(nc - j < kNR ? nc - j : kNR);
          const float* bj = bp.p + (j / kNR) * bp.stride;
          gemm_detail::Ahead ahead = j + kNR >= tiled ? next : gemm_detail::Ahead{};
          const int64_t take = q == q_next                          ? j / kNR
                               : q == q_next + 1 && j == 0 && !RowA ? last_panel
                                                                    : -1;
          if (PrefetchB && nb.p && take >= 0 && take * kNR < nnc && !ahead.p)
            ahead = {nb.p + take * nb.stride, panel_lines, true};
          if (own_first && q == 0 && j + kNR < tiled && !ahead.p)
            ahead = {bj + bp.stride, (kc * kNR + 15) / 16, true};
          gemm_detail::micro_rows<kMR, RowA>(rows, kc, am, lda, bj, bp.ldb, c + m * ldc + n0 + j,
                                             ldc, cols, accumulate, last, e, m, n0 + j, ahead);
        }
        m = m_end;
      }
      if (tail > 0) {
        const float* a0 = ap + packed_a_index(M, K, mb0 / kMR, k0, 0);
        const float* bt = bp.p + (tiled / kNR) * bp.stride;
        float* ct = c + mb0 * ldc + n0 + tiled;
        const int64_t rows = mb1 - mb0, n = n0 + tiled;
        gemm_detail::tail_strips(int(tail), kc, a0, kc * kMR, strips, bt, bp.ldb, ct, ldc, rows,
                                 accumulate, last, e, mb0, n);
      }
      if (K == 0) break;
    }
  });
}

/// Scratch floats gemm_f32 needs (packed A, then one B block per thread).
constexpr int64_t gemm_f32_scratch_floats(int64_t M, int64_t N, int64_t K, int threads) {
  return packed_a_floats(M, K) + gemm_pack_floats(N, K) * threads;
}

/// Scratch floats gemm_f32_packed_b needs (packed A).
inline int64_t gemm_f32_packed_b_scratch_floats(int64_t M, int64_t K) {
  return packed_a_floats(M, K);
}

namespace gemm_detail {
inline void pack_a_parallel(const float* a, int64_t lda, int64_t M, int64_t K, float* dst,
                            ThreadPool* pool) {
  const int64_t strips = (M + kMR - 1) / kMR;
  const int64_t per = 8;
  parallel_for(pool, (strips + per - 1) / per, [&](int64_t u, int) {
    const int64_t s1 = (u + 1) * per < strips ? (u + 1) * per : strips;
    pack_a_strips(a, lda, M, K, u * per, s1, dst);
  });
}
}  // namespace gemm_detail

/// C = A * B (+ epilogue), A row-major (lda), B row-major K x N (ldb), both packed at run time
/// into scratch (gemm_f32_scratch_floats).
template <class Act>
inline void gemm_f32(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float* c, int64_t ldc, const Epilogue<Act>& e, float* scratch,
                     ThreadPool* pool) {
  gemm_detail::pack_a_parallel(a, lda, M, K, scratch, pool);
  gemm_packed_a(
      M, N, K, scratch,
      [&](int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* buf) {
        pack_b_rows(b, ldb, k0, kc, n0, nc, buf);
        return Panels{buf, kc * kNR};
      },
      c, ldc, e, scratch + packed_a_floats(M, K), pool);
}

/// C = A * B (+ epilogue) with B packed by pack_b_panels (K rows, N columns); A is packed at
/// run time into scratch (gemm_f32_packed_b_scratch_floats).
template <class Act>
inline void gemm_f32_packed_b(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                              const float* b_panels, float* c, int64_t ldc, const Epilogue<Act>& e,
                              float* scratch, ThreadPool* pool, GemmPlan plan = {}) {
  gemm_detail::pack_a_parallel(a, lda, M, K, scratch, pool);
  gemm_packed_a<false, true>(
      M, N, K, scratch,
      [&](int64_t k0, int64_t, int64_t n0, int64_t, float*) {
        return Panels{b_panels + (n0 / kNR * K + k0) * kNR, K * kNR};
      },
      c, ldc, e, nullptr, pool, 0, plan);
}

/// C = A * B (+ epilogue) with A row-major (lda) read in place, not packed, and B packed by
/// pack_b_panels: no scratch. For products whose A is used once and has few columns, such as
/// a channels-last 1x1 conv (A: the pixels x input channels), where packing A would cost as
/// much as the product. Same sums in the same order as gemm_f32_packed_b (bit-identical).
template <class Act>
inline void gemm_f32_rowa_packed_b(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                                   const float* b_panels, float* c, int64_t ldc,
                                   const Epilogue<Act>& e, ThreadPool* pool, GemmPlan plan = {}) {
  gemm_packed_a<true>(
      M, N, K, a,
      [&](int64_t k0, int64_t, int64_t n0, int64_t, float*) {
        return Panels{b_panels + (n0 / kNR * K + k0) * kNR, K * kNR};
      },
      c, ldc, e, nullptr, pool, lda, plan);
}

/// Batched MatMul with numpy broadcasting (the geometry of kiln_ref::matmul: batch dims,
/// per-operand batch strides, 0 where an operand broadcasts), each product a gemm_f32 with the
/// epilogue (col_bias per column; residual with y's layout). Scratch: gemm_f32_scratch_floats.
template <class Act>
inline void matmul_f32(int batch_rank, const int64_t* batch_dims, const int64_t* a_batch_strides,
                       const int64_t* b_batch_strides, int64_t M, int64_t N, int64_t K,
                       const float* a, const float* b, float* y, const Epilogue<Act>& e,
                       float* scratch, ThreadPool* pool) {
  kiln_ref::gemm_detail::for_each_batch(batch_rank, batch_dims, a_batch_strides, b_batch_strides,
                                        M * N, [&](int64_t ao, int64_t bo, int64_t yo) {
                                          Epilogue<Act> eb = e;
                                          eb.residual = e.residual ? e.residual + yo : nullptr;
                                          eb.ld_residual = N;
                                          gemm_f32(M, N, K, a + ao, K, b + bo, N, y + yo, N, eb,
                                                   scratch, pool);
                                        });
}

}  // namespace kiln_cpu
