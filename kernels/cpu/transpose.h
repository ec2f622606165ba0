// kiln optimized CPU kernels: the batched 2-D transpose, dst[b][j][i] = src[b][i][j], that
// every layout change between channels-first and channels-last is (NCHW -> NHWC: rows = C,
// cols = H * W; back: rows = H * W, cols = C). Any trivially copyable element type.
#pragma once

#include <cstdint>

#if defined(__AVX2__) && !defined(KILN_GENERIC)
#include <immintrin.h>
#endif

#include "parallel.h"

namespace kiln_cpu {

namespace transpose_detail {

#if defined(__AVX2__) && !defined(KILN_GENERIC)
/// Transposes the 8 x 8 matrix r[row] (lanes: columns) in place: unpacks, shuffles and lane
/// permutes in AVX2 registers.
inline void transpose8(__m256* r) {
  // Pairs of rows interleaved, then quads: u_k holds column k of rows 0-3 (low lane) or of
  // columns 4+k (high lane), likewise v_k for rows 4-7.
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 v0 = _mm256_shuffle_ps(t4, t6, 0x44), v1 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 v2 = _mm256_shuffle_ps(t5, t7, 0x44), v3 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, v0, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, v1, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, v2, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, v3, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, v0, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, v1, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, v2, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, v3, 0x31);
}
#endif

/// d[j * ld + i] = s[i * ls + j] for an 8 x 8 block of 4-byte elements: 8 full-row loads,
/// transpose8 and 8 full-row stores in AVX2 (a scalar block elsewhere).
template <class T>
inline void block8(const T* s, int64_t ls, T* d, int64_t ld) {
#if defined(__AVX2__) && !defined(KILN_GENERIC)
  if constexpr (sizeof(T) == 4) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + i * ls));
    transpose8(r);
    for (int j = 0; j < 8; ++j) _mm256_storeu_ps(reinterpret_cast<float*>(d + j * ld), r[j]);
    return;
  }
#endif
  for (int64_t j = 0; j < 8; ++j)
    for (int64_t i = 0; i < 8; ++i) d[j * ld + i] = s[i * ls + j];
}

}  // namespace transpose_detail

/// dst[b][j][i] = src[b][i][j] for b < batch, i < rows, j < cols, in square tiles so that
/// both the reads and the writes use whole cache lines. Work units are (batch, row tile,
/// column chunk): independent outputs, so any thread count gives the same bytes.
template <class T>
inline void transpose_2d(int64_t batch, int64_t rows, int64_t cols, const T* src, T* dst,
                         ThreadPool* pool) {
  constexpr int64_t kTile = 16, kChunk = 256;  // kChunk: columns per unit (a multiple of kTile)
  if (batch <= 0 || rows <= 0 || cols <= 0) return;
  const int64_t row_tiles = (rows + kTile - 1) / kTile, chunks = (cols + kChunk - 1) / kChunk;
  parallel_for(pool, batch * row_tiles * chunks, [&](int64_t unit, int) {
    const int64_t b = unit / (row_tiles * chunks), rest = unit % (row_tiles * chunks);
    const int64_t i0 = (rest / chunks) * kTile, c0 = (rest % chunks) * kChunk;
    const int64_t i1 = rows < i0 + kTile ? rows : i0 + kTile;
    const int64_t c1 = cols < c0 + kChunk ? cols : c0 + kChunk;
    const T* s = src + b * rows * cols;
    T* d = dst + b * rows * cols;
    for (int64_t j0 = c0; j0 < c1; j0 += kTile) {
      const int64_t j1 = c1 < j0 + kTile ? c1 : j0 + kTile;
      if (i1 - i0 == kTile && j1 - j0 == kTile) {
        for (int64_t bi = 0; bi < kTile; bi += 8)
          for (int64_t bj = 0; bj < kTile; bj += 8)
            transpose_detail::block8(s + (i0 + bi) * cols + j0 + bj, cols,
                                     d + (j0 + bj) * rows + i0 + bi, rows);
      } else {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) d[j * rows + i] = s[i * cols + j];
      }
    }
  });
}

}  // namespace kiln_cpu
