// kiln optimized CPU kernels: the output side of the Winograd convolutions (winograd.h): A^T m
// A per tile, bias, residual and activation on the way to y. F(4x4, 3x3) on AVX-512 transposes
// a tile's 16 pixel vectors in registers (16 x 16, 64 permutes) so each channel's 4 rows of 4 go
// to y as masked 128-bit stores, on AVX2 two 8 x 8 transposes do the same per 8 channels;
// F(2x2, 3x3) and the portable path go through a small buffer, scalar.
#pragma once

#include <cstdint>

#include "conv.h"
#include "transpose.h"
#include "vfunctor.h"

namespace kiln_cpu {

namespace winograd_detail {

/// A^T m for one column of 6 values (vectors).
inline void output_1d(const V::R* m, V::R* o) {
  const V::R s12 = V::add(m[1], m[2]), d12 = V::sub(m[1], m[2]);
  const V::R s34 = V::add(m[3], m[4]), d34 = V::sub(m[3], m[4]);
  o[0] = V::add(V::add(m[0], s12), s34);
  o[1] = V::add(d12, V::mul(V::set1(2.0f), d34));
  o[2] = V::add(s12, V::mul(V::set1(4.0f), s34));
  o[3] = V::add(V::add(d12, V::mul(V::set1(8.0f), d34)), m[5]);
}

/// A^T m for one column of 4 values (F(2x2, 3x3)).
inline void output_1d2(const V::R* m, V::R* o) {
  o[0] = V::add(V::add(m[0], m[1]), m[2]);
  o[1] = V::sub(V::sub(m[1], m[2]), m[3]);
}

/// The stride-2 conv's T m for one column of 9 values: the even phase's 4 products as they are
/// plus A^T of F(4, 2) (points 0, 1, -1, 2 and infinity) on the odd phase's 5:
///   T = | 1 0 0 0  1 1  1 1 0 |
///       | 0 1 0 0  0 1 -1 2 0 |
///       | 0 0 1 0  0 1  1 4 0 |
///       | 0 0 0 1  0 1 -1 8 1 |
inline void output_1d_s2(const V::R* m, V::R* o) {
  const V::R s56 = V::add(m[5], m[6]), d56 = V::sub(m[5], m[6]);
  o[0] = V::add(V::add(m[0], m[4]), V::add(s56, m[7]));
  o[1] = V::add(V::add(m[1], d56), V::mul(V::set1(2.0f), m[7]));
  o[2] = V::add(V::add(m[2], s56), V::mul(V::set1(4.0f), m[7]));
  o[3] = V::add(V::add(V::add(m[3], d56), V::mul(V::set1(8.0f), m[7])), m[8]);
}

template <int TM, bool S2>
inline void output_column(const V::R* m, V::R* o) {
  if constexpr (S2)
    output_1d_s2(m, o);
  else if constexpr (TM == 4)
    output_1d(m, o);
  else
    output_1d2(m, o);
}

/// A^T m A + bias (bias[l] or null) of one tile for TM x TM output tiles: src[xi * ms + l] (the M
/// chunk at the tile and channel group) into o[i * TM + j], pixel (i, j) of the nl channels.
/// S2 (TM = 4): the stride-2 conv's T m T^T over its 9 x 9 positions.
template <int TM, bool S2 = false>
inline void output_pixels(const float* src, int64_t ms, const float* bias, int nl, V::R* o) {
  constexpr int A = S2 ? 9 : TM + 2;
  V::R tmp[A][TM];  // A^T applied down each column j
  for (int j = 0; j < A; ++j) {
    V::R col[A];
    for (int i = 0; i < A; ++i) col[i] = V::load(src + (i * A + j) * ms);
    output_column<TM, S2>(col, tmp[j]);
  }
  const V::R vb = bias ? V::load(bias, nl) : V::zero();
  for (int i = 0; i < TM; ++i) {
    V::R row[A];
    for (int j = 0; j < A; ++j) row[j] = tmp[j][i];
    output_column<TM, S2>(row, o + i * TM);
    for (int j = 0; j < TM; ++j)
      if (bias) o[i * TM + j] = V::add(o[i * TM + j], vb);
  }
}

/// The scalar end of an output transform: pixel (i, j) of channel l at ob[(i * TM + j) * L +
/// l], + residual (y's layout, or null), then act, into y[l * P + i * OW + j] for the rh x rw
/// pixels inside the output.
template <int TM, class Act>
inline void store_pixels(const float* ob, int nl, int rh, int rw, float* y, const float* residual,
                         int64_t P, int64_t OW, const Act& act) {
  constexpr int L = V::kLanes;
  for (int l = 0; l < nl; ++l) {
    float* yl = y + l * P;
    const float* rl = residual ? residual + l * P : nullptr;
    for (int i = 0; i < rh; ++i)
      for (int j = 0; j < rw; ++j) {
        float val = ob[(i * TM + j) * L + l];
        if (rl) val = val + rl[i * OW + j];
        yl[i * OW + j] = act_value(act, val);
      }
  }
}

/// output_group for F(2x2, 3x3): the 2x2 pixels of one tile for nl output channels, through
/// ob (4 x L floats), scalar per channel.
template <class Act>
inline void output_group2(const float* src, int64_t ms, const float* bias, int nl, int rh, int rw,
                          float* y, const float* residual, int64_t P, int64_t OW, const Act& act,
                          float* ob) {
  constexpr int L = V::kLanes;
  V::R o[4];
  output_pixels<2>(src, ms, bias, nl, o);
  for (int p = 0; p < 4; ++p) V::store(ob + p * L, o[p]);
  store_pixels<2>(ob, nl, rh, rw, y, residual, P, OW, act);
}

#if defined(KILN_CPU_AVX512)
/// Transposes the 16 x 16 matrix r[row] (lanes: columns) in place: the off-diagonal blocks
/// swapped at distances 8, 4, 2 and 1.
inline void transpose16(__m512* r) {
  KILN_CPU_UNROLL
  for (int d = 8; d >= 1; d /= 2) {
    alignas(64) int lo[16], hi[16];
    for (int l = 0; l < 16; ++l) {
      lo[l] = (l & d) ? 16 + l - d : l;
      hi[l] = (l & d) ? 16 + l : l + d;
    }
    const __m512i ilo = _mm512_load_si512(lo), ihi = _mm512_load_si512(hi);
    for (int i = 0; i < 16; ++i)
      if ((i & d) == 0) {
        const __m512 a = r[i], b = r[i + d];
        r[i] = _mm512_permutex2var_ps(a, ilo, b);
        r[i + d] = _mm512_permutex2var_ps(a, ihi, b);
      }
  }
}
#endif

/// The output transform of one tile for nl (<= L) output channels: src[xi * ms + l] (the M
/// chunk at the tile and channel group), then bias (bias[l], or null), into y[l * P + i * OW +
/// j] for the rh x rw pixels inside the output, each + residual (same layout, or null), then
/// the activation: act((A^T m A + bias) + residual). ob: L x 16 floats of scratch. S2: the
/// stride-2 conv's (81 positions of src, output_pixels<4, true>).
template <bool S2 = false, class Act>
inline void output_group(const float* src, int64_t ms, const float* bias, int nl, int rh, int rw,
                         float* y, const float* residual, int64_t P, int64_t OW, const Act& act,
                         float* ob) {
  V::R o[16];  // o[i * 4 + j]: pixel (i, j) of the nl channels
  output_pixels<4, S2>(src, ms, bias, nl, o);
#if defined(KILN_CPU_AVX512)
  // Transposed in registers (o[l]: the 16 pixels of channel l, row-major), each row of 4 to y
  // with 128-bit masked loads and stores.
  transpose16(o);
  const __mmask8 cm = __mmask8((1u << rw) - 1u);
  for (int l = 0; l < nl; ++l) {
    float* yl = y + l * P;
    V::R q = o[l];
    if (residual) {
      const float* rl = residual + l * P;
      // Mask forms: GCC 12's unmasked insert/extract warn (maybe-uninitialized) in its header.
      const __mmask16 all = 0xFFFF;
      __m512 r = _mm512_maskz_loadu_ps(__mmask16(cm), rl);
      if (rh > 1) r = _mm512_mask_insertf32x4(r, all, r, _mm_maskz_loadu_ps(cm, rl + OW), 1);
      if (rh > 2) r = _mm512_mask_insertf32x4(r, all, r, _mm_maskz_loadu_ps(cm, rl + 2 * OW), 2);
      if (rh > 3) r = _mm512_mask_insertf32x4(r, all, r, _mm_maskz_loadu_ps(cm, rl + 3 * OW), 3);
      q = V::add(q, r);
    }
    q = ActInRegister<Act>::apply(act, q);
    const __mmask8 four = 0xF;
    _mm_mask_storeu_ps(yl, cm, _mm512_maskz_extractf32x4_ps(four, q, 0));
    if (rh > 1) _mm_mask_storeu_ps(yl + OW, cm, _mm512_maskz_extractf32x4_ps(four, q, 1));
    if (rh > 2) _mm_mask_storeu_ps(yl + 2 * OW, cm, _mm512_maskz_extractf32x4_ps(four, q, 2));
    if (rh > 3) _mm_mask_storeu_ps(yl + 3 * OW, cm, _mm512_maskz_extractf32x4_ps(four, q, 3));
    if (!ActInRegister<Act>::kYes)
      for (int i = 0; i < rh; ++i)
        for (int j = 0; j < rw; ++j) yl[i * OW + j] = act_value(act, yl[i * OW + j]);
  }
  (void)ob;
#elif defined(KILN_CPU_AVX2)
  // Two 8 x 8 transposes in registers (pixels 0-7 are output rows 0-1, 8-15 rows 2-3): o[h * 8
  // + l] holds channel l's rows 2h and 2h + 1, each to y as a masked 128-bit store.
  transpose_detail::transpose8(o);
  transpose_detail::transpose8(o + 8);
  const __m128i cm = _mm_cmpgt_epi32(_mm_set1_epi32(rw), _mm_setr_epi32(0, 1, 2, 3));
  for (int l = 0; l < nl; ++l) {
    float* yl = y + l * P;
    for (int h = 0; 2 * h < rh; ++h) {
      const int64_t r0 = 2 * h * OW, r1 = r0 + OW;
      const bool two = 2 * h + 1 < rh;
      V::R q = o[h * 8 + l];
      if (residual) {
        const float* rl = residual + l * P;
        const __m128 a = _mm_maskload_ps(rl + r0, cm);
        const __m128 b = two ? _mm_maskload_ps(rl + r1, cm) : _mm_setzero_ps();
        q = V::add(q, _mm256_set_m128(b, a));
      }
      q = ActInRegister<Act>::apply(act, q);
      if (rw == 4) {  // a whole row: plain stores (a masked one is microcoded on Zen 2 and 3)
        _mm_storeu_ps(yl + r0, _mm256_castps256_ps128(q));
        if (two) _mm_storeu_ps(yl + r1, _mm256_extractf128_ps(q, 1));
      } else {
        _mm_maskstore_ps(yl + r0, cm, _mm256_castps256_ps128(q));
        if (two) _mm_maskstore_ps(yl + r1, cm, _mm256_extractf128_ps(q, 1));
      }
    }
    if (!ActInRegister<Act>::kYes)
      for (int i = 0; i < rh; ++i)
        for (int j = 0; j < rw; ++j) yl[i * OW + j] = act_value(act, yl[i * OW + j]);
  }
  (void)ob;
#else
  constexpr int L = V::kLanes;
  for (int p = 0; p < 16; ++p) V::store(ob + p * L, o[p]);
  store_pixels<4>(ob, nl, rh, rw, y, residual, P, OW, act);
#endif
}

}  // namespace winograd_detail

}  // namespace kiln_cpu
