// kiln optimized CPU kernels: the GEMM microkernel's k step (gemm.h's micro), and for tiles of
// 17-24 columns on AVX-512 (NV = 3) in the form for the core: two rows to a 512-bit fma, or
// with KILN_CPU_YMM_TAIL (generated code on a Zen 4) a 256-bit fma per row.
#pragma once

#include <cstdint>

#include "simd.h"

namespace kiln_cpu {
namespace gemm_detail {

/// Whether tiles of at most kLanes * 3 / 2 columns (17-24: MobileNetV2's 24-channel
/// projections) run their last 8 columns two rows to a vector (AVX-512 builds): rows r and r + 1
/// share one 512-bit fma for columns 16-23, its lanes 0-7 row r's and 8-15 row r + 1's (the
/// broadcasts of their A values blended). A pair of rows then takes 3 fmas, not 4 (a 512-bit one
/// per row for columns 0-15 and a 256-bit one per row for 16-23, as until session 35): on cores
/// that execute a 512-bit fma in one pass (Zen 5) a 256-bit fma costs as much, and the 24-column
/// tile ran no faster than a 32-column one (3136 x 24 x 144: 72% -> 90% of the FMA loop's peak,
/// session 35). On cores that split a 512-bit fma into two 256-bit halves (Zen 4) a 256-bit fma
/// costs half of one, and the pairs' blends cost on top: there generated code defines
/// KILN_CPU_YMM_TAIL (lib/target's splitZmmFma, `--target host` only) and columns 16-23 take a
/// 256-bit fma per row, no blends (3136 x 24 x 144 on a Zen 4: 245-249 -> 203-205 us, 71% ->
/// 86% of the FMA loop; MobileNetV2 1.1-1.7% faster at 1 thread, session 46). The sums are the
/// same fmas lane by lane either way, so results do not change.
#if defined(KILN_CPU_AVX512)
constexpr bool kHalfTail = true;

/// rank1 for a tile of 17-24 columns: columns 0-15 per row, columns 16-23 (24-31 are zero in the
/// panel and not multiplied) in pair[r / 2] for rows r and r + 1 (an odd R's last row alone in
/// the low half), or with KILN_CPU_YMM_TAIL in pair[r], a 256-bit accumulator per row.
#if defined(KILN_CPU_YMM_TAIL)
using HalfR = __m256;
inline HalfR half_zero() {
  return _mm256_setzero_ps();
}
inline V::R half_widen(HalfR h, int) {
  return _mm512_insertf32x8(_mm512_setzero_ps(), h, 0);
}
constexpr int kHalfPerRow = 1;
#else
constexpr int kHalfPerRow = 2;
/// A pair of rows' columns 16-23 (rank1_24).
using HalfR = __m512;
inline HalfR half_zero() {
  return _mm512_setzero_ps();
}
/// Row r's columns 16-23 of its pair, as lanes 0-7 (8-15 zero).
inline V::R half_widen(HalfR h, int r) {
  return r % 2 == 0 ? _mm512_maskz_mov_ps(__mmask16(0x00FF), h)
                    : _mm512_maskz_shuffle_f32x4(__mmask16(0x00FF), h, h, _MM_SHUFFLE(3, 2, 3, 2));
}
#endif
template <int R>
__attribute__((always_inline)) inline void rank1_24(const float* ap, const float* bp, __m512* acc0,
                                                    HalfR* pair, int64_t as) {
  const __m512 b0 = _mm512_loadu_ps(bp);
  // Columns 16-23 in both halves (GCC 12's _mm512_broadcast_f32x8 warns in its header).
  const __m256 b8 = _mm256_loadu_ps(bp + 16);
  const __m512 b1 = __builtin_shufflevector(b8, b8, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
#if defined(KILN_CPU_YMM_TAIL)
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) {
    const float a = ap[r * as];
    acc0[r] = _mm512_fmadd_ps(_mm512_set1_ps(a), b0, acc0[r]);
    pair[r] = _mm256_fmadd_ps(_mm256_set1_ps(a), b8, pair[r]);
  }
  (void)b1;
#else
  KILN_CPU_UNROLL
  for (int r = 0; r < R; r += 2) {
    const __m512 av = _mm512_set1_ps(ap[r * as]);
    acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
    if (r + 1 < R) {
      const __m512 aw = _mm512_set1_ps(ap[(r + 1) * as]);
      acc0[r + 1] = _mm512_fmadd_ps(aw, b0, acc0[r + 1]);
      const __m512 a2 = _mm512_mask_blend_ps(__mmask16(0xFF00), av, aw);
      pair[r / 2] = _mm512_fmadd_ps(a2, b1, pair[r / 2]);
    } else {
      pair[r / 2] = _mm512_fmadd_ps(av, b1, pair[r / 2]);
    }
  }
#endif
}
#else
constexpr bool kHalfTail = false;
constexpr int kHalfPerRow = 2;
using HalfR = V::R;  // unused: no NV = 3 tiles
inline HalfR half_zero() {
  return V::zero();
}
inline V::R half_widen(HalfR h, int) {
  return h;
}
#endif

/// One k step of a tile: acc{0,1}[r] += a[r * as] * b[0:2L) for the R rows (NV = 1: b[0:L)
/// only); as = 1 for a packed A strip, lda for a row-major A read in place. Inlined into the k
/// loops, so the accumulators stay in registers.
template <int R, int NV>
__attribute__((always_inline)) inline void rank1(const float* ap, const float* bp, V::R* acc0,
                                                 V::R* acc1, int64_t as = 1) {
  const V::R b0 = V::load(bp);
  if constexpr (NV == 2) {
    const V::R b1 = V::load(bp + V::kLanes);
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) {
      const V::R av = V::set1(ap[r * as]);
      acc0[r] = V::fma(av, b0, acc0[r]);
      acc1[r] = V::fma(av, b1, acc1[r]);
    }
  } else {
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) acc0[r] = V::fma(V::set1(ap[r * as]), b0, acc0[r]);
  }
}

/// One k step of a micro tile (NV = 3: rank1_24).
template <int R, int NV>
__attribute__((always_inline)) inline void step(const float* ap, const float* bp, V::R* acc0,
                                                V::R* acc1, HalfR* half, int64_t as) {
#if defined(KILN_CPU_AVX512)
  if constexpr (NV == 3) {
    rank1_24<R>(ap, bp, acc0, half, as);
    return;
  }
#endif
  (void)half;
  rank1<R, NV == 3 ? 2 : NV>(ap, bp, acc0, acc1, as);
}

}  // namespace gemm_detail
}  // namespace kiln_cpu
