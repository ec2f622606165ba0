// kiln optimized CPU kernels: packing the f32 GEMM's operands into the layouts its microkernel
// reads (gemm.h): B into column panels of kNR (at compile time for weights, per block at run
// time otherwise), A into k-block-major strips of kMR rows (AVX-512: a 12x16 register
// transpose). Packing copies values; it changes no sum.
#pragma once

#include <cstdint>

#include "gemm_split.h"
#include "simd.h"

namespace kiln_cpu {

/// Packs rows [k0, k0 + kc) and columns [n0, n0 + nc) of a row-major B (element (k, n) at
/// b[k * ldb + n]) into panels of kNR columns: dst[(j * kc + k) * kNR + col], zero past nc.
inline void pack_b_rows(const float* b, int64_t ldb, int64_t k0, int64_t kc, int64_t n0,
                        int64_t nc, float* dst) {
  if (kc <= 0) return;  // nothing to pack (and b may be null for an empty B)
  // Row by row, each row of the block one contiguous read (panel by panel, a short read every
  // row of B apart), into every panel.
  constexpr int L = V::kLanes;
  const int64_t full = nc / kNR, tail = nc - full * kNR;
  const int t0 = int(tail < L ? tail : L), t1 = int(tail > L ? tail - L : 0);
  for (int64_t k = 0; k < kc; ++k) {
    const float* s = b + (k0 + k) * ldb + n0;
    float* d = dst + k * kNR;
    for (int64_t j = 0; j < full; ++j, s += kNR, d += kc * kNR) {
      V::store(d, V::load(s));
      V::store(d + L, V::load(s + L));
    }
    if (tail > 0) {  // zeros past nc
      V::store(d, V::load(s, t0));
      V::store(d + L, V::load(s + L, t1));
    }
  }
}

/// Floats pack_b_panels writes for a K x N matrix.
inline int64_t packed_b_floats(int64_t K, int64_t N) { return (N + kNR - 1) / kNR * kNR * K; }

/// Packs a whole row-major K x N matrix into full-height panels: panel j (columns j * kNR ...)
/// is [K][kNR] at dst + j * K * kNR. Used at compile time for constant B.
inline void pack_b_panels(const float* b, int64_t K, int64_t N, float* dst) {
  pack_b_rows(b, N, 0, K, 0, N, dst);
}

/// Floats of a packed A (strips of kMR rows, each [K][kMR]), rounded up to 64 bytes.
constexpr int64_t packed_a_floats(int64_t M, int64_t K) {
  return ((M + kMR - 1) / kMR * kMR * K + 15) / 16 * 16;
}

/// Where element (row r of strip s, k) of a packed A lies. The layout is k-block major: the
/// rows [k0, k0 + kc) of all strips (k0 a multiple of kKC, kc = min(kKC, K - k0)) are one
/// contiguous run, strip after strip ([strip][kc][kMR]), so the driver streams A in the order
/// it reads it (one k block of every strip) and the prefetchers see one sequential stream.
constexpr int64_t packed_a_index(int64_t M, int64_t K, int64_t s, int64_t k, int64_t r) {
  const int64_t k0 = k / kKC * kKC, kc = K - k0 < kKC ? K - k0 : kKC;
  return k0 * ((M + kMR - 1) / kMR * kMR) + (s * kc + (k - k0)) * kMR + r;
}

#if defined(KILN_CPU_AVX512)
namespace gemm_detail {

/// Two rounds of unpacks of four rows x[0..3]: t[j]'s 128-bit lane q holds the four rows'
/// column 4 * q + j. (Masked forms: GCC 12's unmasked ones trip -Wmaybe-uninitialized in its
/// own header.)
inline void unpack_rows4(const __m512* x, __m512* t) {
  const __mmask16 all16 = 0xFFFF;
  const __mmask8 all8 = 0xFF;
  const __m512d l01 = _mm512_castps_pd(_mm512_maskz_unpacklo_ps(all16, x[0], x[1]));
  const __m512d h01 = _mm512_castps_pd(_mm512_maskz_unpackhi_ps(all16, x[0], x[1]));
  const __m512d l23 = _mm512_castps_pd(_mm512_maskz_unpacklo_ps(all16, x[2], x[3]));
  const __m512d h23 = _mm512_castps_pd(_mm512_maskz_unpackhi_ps(all16, x[2], x[3]));
  t[0] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(all8, l01, l23));
  t[1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(all8, l01, l23));
  t[2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(all8, h01, h23));
  t[3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(all8, h01, h23));
}

/// pack_a_strips for one strip of 12 rows (rows < 12 of them in A) on AVX-512: per k block,
/// 16 k at a time, rows in groups of 4: two rounds of unpacks leave rows 4g..4g+3 at
/// k = 4 * q + j in 128-bit lane q of t[j], stored as the 4 floats they are in the strip
/// (masked forms: GCC 12's unmasked ones trip -Wmaybe-uninitialized in its own header).
inline void pack_a_strip12(const float* a, int64_t lda, int64_t M, int64_t K, int64_t s,
                           int rows, float* dst) {
  constexpr int kRows = 12;
  const __mmask8 all4 = 0xF;
  for (int64_t k0 = 0; k0 < K; k0 += kKC) {
    const int64_t kc = K - k0 < kKC ? K - k0 : kKC;
    float* d = dst + packed_a_index(M, K, s, k0, 0);
    const float* src = a + s * kRows * lda + k0;
    int64_t k = 0;
    for (; k + 16 <= kc; k += 16) {
      KILN_CPU_UNROLL
      for (int g = 0; g < 3; ++g) {
        __m512 x[4];
        KILN_CPU_UNROLL
        for (int i = 0; i < 4; ++i)
          x[i] = 4 * g + i < rows ? _mm512_loadu_ps(src + (4 * g + i) * lda + k)
                                  : _mm512_setzero_ps();
        __m512 t[4];
        unpack_rows4(x, t);
        float* dg = d + k * kRows + 4 * g;
        KILN_CPU_UNROLL
        for (int j = 0; j < 4; ++j) {
          _mm_storeu_ps(dg + j * kRows, _mm512_maskz_extractf32x4_ps(all4, t[j], 0));
          _mm_storeu_ps(dg + (4 + j) * kRows, _mm512_maskz_extractf32x4_ps(all4, t[j], 1));
          _mm_storeu_ps(dg + (8 + j) * kRows, _mm512_maskz_extractf32x4_ps(all4, t[j], 2));
          _mm_storeu_ps(dg + (12 + j) * kRows, _mm512_maskz_extractf32x4_ps(all4, t[j], 3));
        }
      }
    }
    for (; k < kc; ++k)
      for (int r = 0; r < kRows; ++r) d[k * kRows + r] = r < rows ? src[r * lda + k] : 0.0f;
  }
}

/// col[c] = column c of the 12 x 16 block x (lanes 0-11: rows 0-11; lanes 12-15 zero). Two
/// rounds of unpacks leave rows 4g..4g+3 of column 4q + j in 128-bit lane q of t[g][j]; two
/// rounds of 128-bit lane shuffles gather each column's three pieces.
inline void transpose12x16(const __m512 (&x)[12], __m512 (&col)[16]) {
  const __mmask16 all16 = 0xFFFF;
  __m512 t[3][4];
  KILN_CPU_UNROLL
  for (int g = 0; g < 3; ++g) unpack_rows4(x + 4 * g, t[g]);
  const __m512 z = _mm512_setzero_ps();
  KILN_CPU_UNROLL
  for (int j = 0; j < 4; ++j) {
    // u0: lanes 0, 2 of t0 and t1; u1: lanes 1, 3; w0, w1: the same of t2 and zeros.
    const __m512 u0 = _mm512_maskz_shuffle_f32x4(all16, t[0][j], t[1][j], 0x88);
    const __m512 u1 = _mm512_maskz_shuffle_f32x4(all16, t[0][j], t[1][j], 0xDD);
    const __m512 w0 = _mm512_maskz_shuffle_f32x4(all16, t[2][j], z, 0x88);
    const __m512 w1 = _mm512_maskz_shuffle_f32x4(all16, t[2][j], z, 0xDD);
    col[j] = _mm512_maskz_shuffle_f32x4(all16, u0, w0, 0x88);       // lane q = 0
    col[4 + j] = _mm512_maskz_shuffle_f32x4(all16, u1, w1, 0x88);   // q = 1
    col[8 + j] = _mm512_maskz_shuffle_f32x4(all16, u0, w0, 0xDD);   // q = 2
    col[12 + j] = _mm512_maskz_shuffle_f32x4(all16, u1, w1, 0xDD);  // q = 3
  }
}
}  // namespace gemm_detail
#endif

/// Packs strips [s0, s1) of a row-major A (element (m, k) at a[m * lda + k]) into the layout
/// of packed_a_index, zero past M.
inline void pack_a_strips(const float* a, int64_t lda, int64_t M, int64_t K, int64_t s0,
                          int64_t s1, float* dst) {
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t rows = M - s * kMR < kMR ? M - s * kMR : kMR;
#if defined(KILN_CPU_AVX512)
    if constexpr (kMR == 12) {
      gemm_detail::pack_a_strip12(a, lda, M, K, s, int(rows), dst);
      continue;
    }
#endif
    for (int64_t r = 0; r < kMR; ++r) {
      const float* src = r < rows ? a + (s * kMR + r) * lda : nullptr;
      for (int64_t k0 = 0; k0 < K; k0 += kKC) {
        const int64_t kc = K - k0 < kKC ? K - k0 : kKC;
        float* d = dst + packed_a_index(M, K, s, k0, r);
        for (int64_t k = 0; k < kc; ++k) d[k * kMR] = r < rows ? src[k0 + k] : 0.0f;
      }
    }
  }
}

/// Packs a whole A; used at compile time for constant A (conv weights).
inline void pack_a(const float* a, int64_t lda, int64_t M, int64_t K, float* dst) {
  pack_a_strips(a, lda, M, K, 0, (M + kMR - 1) / kMR, dst);
}

}  // namespace kiln_cpu
