// kiln optimized CPU kernels: f32 GEMV, C[M, N] = A[M, K] * B for a handful of rows (M <= 4: a
// classifier's fully connected layer at batch 1) with B packed by pack_b_panels (gemm.h).
//
// Such a product is bound by streaming B (MobileNetV2's 1280x1000 classifier: 5 MB per run, 2.5
// FLOP per byte), not by the FMAs. The GEMM driver reads B in 64 KB pieces (kKC rows of one
// panel, then the same rows of the next panel: a new stream every 64 KB) with one panel's two
// accumulator chains in flight. Here each panel is read from top to bottom, several panels
// side by side (independent streams, 2 * rows * panels accumulator chains), with a software
// prefetch a fixed distance ahead in every stream.
//
// Summation order: exactly the GEMM driver's (gemm.h): per output element, k ascending in
// blocks of kKC from zero, each block added to the sum of the earlier ones (through C, as the
// driver does), then the epilogue. So the results are bit-identical to gemm_f32_packed_b and
// gemm_f32_rowa_packed_b, and (work split over output columns only) at any thread count.
#pragma once

#include <cstdint>

#include "gemm.h"
#include "parallel.h"
#include "simd.h"

namespace kiln_cpu {

/// Rows the GEMV kernel is meant for: beyond, the GEMM microkernel's 12-row tile reads B once
/// for many rows and wins. (gemv_f32_packed_b takes any M, kGemvMaxRows rows at a time.)
constexpr int kGemvMaxRows = 4;

namespace gemv_detail {

/// Panels read side by side for R rows: 2 * R * P accumulator chains, about 8. Measured on Zen 4
/// at 1 thread, 1x1000x1280, without the prefetch below: B from memory, 2 chains (one panel) 22
/// GB/s, 8 chains 29, 16 no better; B in L3, 8 chains 90 GB/s, 16 chains 80, 32 (spilled) 19.
/// Several streams at once keep more of B's lines in flight than one.
constexpr int panels_per_group(int rows) {
  return 4 / rows > 1 ? 4 / rows : 1;
}

/// A software prefetch every kPrefetchEvery k steps, kPrefetchFloats ahead in each stream, to
/// L2: a hint that keeps the hardware prefetcher's streams going (B from memory: 33 -> 37 GB/s,
/// the mean of three alternating runs; B in L3 unchanged). Every line prefetched (each k step)
/// cost more in instructions than it gained (B in L3: 90 -> 58 GB/s); other distances (4-16 KB)
/// and intervals (4-16 k steps) measured the same within noise.
constexpr int64_t kPrefetchFloats = 1024;
constexpr int64_t kPrefetchEvery = 8;

/// Rows [m, m + R) x panels [0, P) of a group (panel p at b + p * K * kNR, its first column
/// n + p * kNR, cols[p] of its columns in C): all of K, block by block as the GEMM driver sums.
template <int R, int P, class Act>
inline void group(int64_t K, const float* a, int64_t lda, const float* b, float* c, int64_t ldc,
                  const int* cols, const Epilogue<Act>& e, int64_t m, int64_t n) {
  constexpr int L = V::kLanes;
  const int64_t stride = K * kNR;
  // K == 0 runs once with kc == 0: the epilogue of zeros.
  for (int64_t k0 = 0; k0 < K || k0 == 0; k0 += kKC) {
    const int64_t kc = K - k0 < kKC ? K - k0 : kKC;
    V::R acc[R][P][2];
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) {
      KILN_CPU_UNROLL
      for (int p = 0; p < P; ++p) acc[r][p][0] = acc[r][p][1] = V::zero();
    }
    const float* bk = b + k0 * kNR;
    const float* ak = a + k0;
    for (int64_t k = 0; k < kc; ++k, bk += kNR, ++ak) {
      // Past a panel's end this prefetches the next panel's top (or past B's end: a prefetch
      // never faults), which its own stream reads soon anyway.
      if ((k & (kPrefetchEvery - 1)) == 0) {
        KILN_CPU_UNROLL
        for (int p = 0; p < P; ++p) __builtin_prefetch(bk + p * stride + kPrefetchFloats, 0, 2);
      }
      V::R b0[P], b1[P];
      KILN_CPU_UNROLL
      for (int p = 0; p < P; ++p) {
        b0[p] = V::load(bk + p * stride);
        b1[p] = V::load(bk + p * stride + L);
      }
      KILN_CPU_UNROLL
      for (int r = 0; r < R; ++r) {
        const V::R av = V::set1(ak[r * lda]);
        KILN_CPU_UNROLL
        for (int p = 0; p < P; ++p) {
          acc[r][p][0] = V::fma(av, b0[p], acc[r][p][0]);
          acc[r][p][1] = V::fma(av, b1[p], acc[r][p][1]);
        }
      }
    }
    // The block's sums join the earlier blocks' in C, C's value first (gemm.h's micro: the same
    // additions, operands in the same order), all loads before any store (C's rows may lie a
    // multiple of 4 KiB apart), then on the last block the epilogue.
    const bool accumulate = k0 > 0, last = k0 + kc >= K;
    if (accumulate) {
      KILN_CPU_UNROLL
      for (int r = 0; r < R; ++r) {
        KILN_CPU_UNROLL
        for (int p = 0; p < P; ++p) {
          const float* cp = c + r * ldc + p * kNR;
          const int c0 = cols[p] < L ? cols[p] : L, c1 = cols[p] > L ? cols[p] - L : 0;
          acc[r][p][0] = V::add(V::load(cp, c0), acc[r][p][0]);
          acc[r][p][1] = V::add(V::load(cp + L, c1), acc[r][p][1]);
        }
      }
    }
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) {
      KILN_CPU_UNROLL
      for (int p = 0; p < P; ++p)
        gemm_detail::finish_row(acc[r][p][0], acc[r][p][1], c + r * ldc + p * kNR, cols[p], last, e,
                                m + r, n + p * kNR);
    }
    if (K == 0) break;
  }
}

/// group<R, P> for the first `panels` (<= P) panels of a group: P counted down at compile time.
template <int R, int P, class Act>
inline void group_of(int panels, int64_t K, const float* a, int64_t lda, const float* b, float* c,
                     int64_t ldc, const int* cols, const Epilogue<Act>& e, int64_t m, int64_t n) {
  if constexpr (P > 1) {
    if (panels < P) return group_of<R, P - 1>(panels, K, a, lda, b, c, ldc, cols, e, m, n);
  }
  group<R, P>(K, a, lda, b, c, ldc, cols, e, m, n);
}

/// Rows [m, m + R) x panels [p0, p1), P panels at a time.
template <int R, class Act>
inline void rows_panels(int64_t N, int64_t K, const float* a, int64_t lda, const float* b_panels,
                        float* c, int64_t ldc, const Epilogue<Act>& e, int64_t m, int64_t p0,
                        int64_t p1) {
  constexpr int P = panels_per_group(R);
  for (int64_t p = p0; p < p1; p += P) {
    const int panels = int(p1 - p < P ? p1 - p : P);
    int cols[P];
    for (int q = 0; q < panels; ++q) {
      const int64_t left = N - (p + q) * kNR;
      cols[q] = int(left < kNR ? left : kNR);
    }
    group_of<R, P>(panels, K, a + m * lda, lda, b_panels + p * K * kNR, c + m * ldc + p * kNR, ldc,
                   cols, e, m, p * kNR);
  }
}

/// rows_panels for `rows` (1..kGemvMaxRows) rows: R counted down at compile time.
template <int R, class Act>
inline void rows_of(int rows, int64_t N, int64_t K, const float* a, int64_t lda,
                    const float* b_panels, float* c, int64_t ldc, const Epilogue<Act>& e, int64_t m,
                    int64_t p0, int64_t p1) {
  if constexpr (R > 1) {
    if (rows < R) return rows_of<R - 1>(rows, N, K, a, lda, b_panels, c, ldc, e, m, p0, p1);
  }
  rows_panels<R>(N, K, a, lda, b_panels, c, ldc, e, m, p0, p1);
}

}  // namespace gemv_detail

/// C = A * B (+ epilogue) for few rows: A row-major (lda) read in place, B packed by
/// pack_b_panels (K rows, N columns), no scratch. Bit-identical to gemm_f32_packed_b on the same
/// operands. Work units: runs of whole panels (the same count per unit, up to one) times chunks
/// of kGemvMaxRows rows; with T threads a multiple of T of them.
template <class Act>
inline void gemv_f32_packed_b(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                              const float* b_panels, float* c, int64_t ldc, const Epilogue<Act>& e,
                              ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  const int64_t panels = (N + kNR - 1) / kNR, T = pool ? pool->size() : 1;
  const int64_t chunks = (M + kGemvMaxRows - 1) / kGemvMaxRows;
  // One row chunk's panels in groups; with threads, as many units as groups rounded up to a
  // multiple of T (at most one per panel), so every thread gets the same share of B.
  const int64_t per = gemv_detail::panels_per_group(int(M < kGemvMaxRows ? M : kGemvMaxRows));
  const int64_t groups = (panels + per - 1) / per;
  int64_t units = T <= 1 ? 1 : (groups + T - 1) / T * T;
  if (units > panels) units = panels;
  parallel_for(pool, chunks * units, [&](int64_t u, int) {
    const int64_t m = (u / units) * kGemvMaxRows, cu = u % units;
    const int rows = int(M - m < kGemvMaxRows ? M - m : kGemvMaxRows);
    const int64_t p0 = cu * panels / units, p1 = (cu + 1) * panels / units;
    gemv_detail::rows_of<kGemvMaxRows>(rows, N, K, a, lda, b_panels, c, ldc, e, m, p0, p1);
  });
}

}  // namespace kiln_cpu
