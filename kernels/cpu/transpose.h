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

#if defined(__AVX512F__) && !defined(KILN_GENERIC)
/// d[j * ld + i] = s[i * ls + j] for a 16 x 16 block of floats in AVX-512 registers: 16 row
/// loads, unpacks and shuffles within 128-bit lanes, two rounds of 128-bit lane shuffles, 16
/// row stores. kStream: the stores bypass the caches (each a whole 64-byte line: d and ld
/// multiples of 16 floats, d 64-byte aligned). The masked forms with every lane set: GCC 12's
/// unmasked ones trip -Wmaybe-uninitialized in its own header.
template <bool kStream>
inline void block16(const float* s, int64_t ls, float* d, int64_t ld) {
  const __mmask16 all = 0xFFFF;
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(s + i * ls);
  // Pairs of rows interleaved, then quads: r[4q + k] holds column k + 4 m of rows 4q .. 4q + 3
  // in its m-th 128-bit lane.
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(all, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(all, r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_maskz_shuffle_ps(all, t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_maskz_shuffle_ps(all, t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_maskz_shuffle_ps(all, t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_maskz_shuffle_ps(all, t[i + 1], t[i + 3], 0xEE);
  }
  // 128-bit lanes: quads 0 and 1 (and 2 and 3) even and odd lanes, then across the halves.
  for (int i = 0; i < 8; ++i) {
    const int a = (i / 4) * 8 + i % 4;
    t[a] = _mm512_maskz_shuffle_f32x4(all, r[a], r[a + 4], 0x88);
    t[a + 4] = _mm512_maskz_shuffle_f32x4(all, r[a], r[a + 4], 0xDD);
  }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_maskz_shuffle_f32x4(all, t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_maskz_shuffle_f32x4(all, t[i], t[i + 8], 0xDD);
  }
  for (int j = 0; j < 16; ++j) {
    if constexpr (kStream)
      _mm512_stream_ps(d + j * ld, r[j]);
    else
      _mm512_storeu_ps(d + j * ld, r[j]);
  }
}
#endif

/// Transposes of at least this many bytes write around the caches where they can (block16's
/// kStream): they do not fit them anyway, and a store that misses first reads its line from
/// memory. PP-OCRv4 det's 160x160x96 NHWC -> NCHW transpose (9.8 MB, 1 thread): 1.98 ms in
/// 8x8 blocks, 1.39 in 16x16 ones, 0.67-0.78 streamed (a harness, other core busy).
constexpr int64_t kStreamBytes = int64_t(8) << 20;

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
#if defined(__AVX512F__) && !defined(KILN_GENERIC)
  // Streaming stores: whole lines only (rows a multiple of 16 floats, dst 64-byte aligned), and
  // an sfence after each unit, since a streamed store is not ordered by the pool's barrier.
  const bool stream = sizeof(T) == 4 && batch * rows * cols * 4 >= transpose_detail::kStreamBytes &&
                      rows % 16 == 0 && reinterpret_cast<uintptr_t>(dst) % 64 == 0;
#endif
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
#if defined(__AVX512F__) && !defined(KILN_GENERIC)
        if constexpr (sizeof(T) == 4) {
          const float* sf = reinterpret_cast<const float*>(s + i0 * cols + j0);
          float* df = reinterpret_cast<float*>(d + j0 * rows + i0);
          if (stream)
            transpose_detail::block16<true>(sf, cols, df, rows);
          else
            transpose_detail::block16<false>(sf, cols, df, rows);
          continue;
        }
#endif
        for (int64_t bi = 0; bi < kTile; bi += 8)
          for (int64_t bj = 0; bj < kTile; bj += 8)
            transpose_detail::block8(s + (i0 + bi) * cols + j0 + bj, cols,
                                     d + (j0 + bj) * rows + i0 + bi, rows);
      } else {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) d[j * rows + i] = s[i * cols + j];
      }
    }
#if defined(__AVX512F__) && !defined(KILN_GENERIC)
    if (stream) _mm_sfence();
#endif
  });
}

}  // namespace kiln_cpu
