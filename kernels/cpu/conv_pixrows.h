// kiln optimized CPU kernels: f32 2-D convolution (NCHW, group 1) with the output's pixels as
// the GEMM's rows: Y^T[P, M] = im2col(X)^T[P, K] * W^T[K, M], written back transposed into
// Y[M, P].
//
// Why: conv2d_f32 puts the P output pixels of an image in the vector lanes, in panels of kNR.
// Small images waste lanes there: ResNet-50's 7x7 stage has P = 49, which takes 64 lanes (77%
// used), and its 14x14 stage 208 for 196. Here the lanes hold output channels (a multiple of
// 32 in every CNN stage) and the pixels are rows of a kMR strip, whose short last strip costs
// only the rows it has.
//
// How: the weights are B, W^T packed at compile time into pack_b_panels' layout. A is read in
// place: X itself for a 1x1 stride-1 unpadded conv (element (p, k) at x[k * P + p]), else the
// im2col matrix [K, P] built in scratch per image. Each tile of kMR pixels x kNR channels sums
// all of K in registers (k ascending: its order does not depend on the thread count), then goes
// through the epilogue and into Y column by column: a column of the tile is kMR pixels of one
// channel, contiguous in Y. Work units are (channel panel, pixel strip) pairs, panel-major, so
// consecutive units reuse the panel's weights from L2.
#pragma once

#include <cstdint>

#include "conv.h"

namespace kiln_cpu {

static_assert(kMR <= V::kLanes, "a tile's column (kMR pixels) must fit one vector");

/// A 1x1 stride-1 unpadded conv, whose im2col matrix is X.
constexpr bool conv2d_pixrows_pointwise(const Conv2dShape& s) {
  return s.KH == 1 && s.KW == 1 && s.SH == 1 && s.SW == 1 && s.PH == 0 && s.PW == 0 &&
         s.OH == s.H && s.OW == s.W;
}

constexpr bool conv2d_pixrows_applies(const Conv2dShape& s) { return s.group == 1; }

/// Scratch floats: one image's im2col matrix [K, P]; none for a pointwise conv.
constexpr int64_t conv2d_pixrows_scratch_floats(const Conv2dShape& s) {
  return conv2d_pixrows_pointwise(s) ? 0 : (s.C * s.KH * s.KW * s.OH * s.OW + 15) / 16 * 16;
}

/// Floats of the packed weights: W^T [K, M] in kNR-column panels.
constexpr int64_t conv2d_pixrows_packed_weight_floats(const Conv2dShape& s) {
  return (s.M + kNR - 1) / kNR * kNR * (s.C * s.KH * s.KW);  // packed_b_floats(K, M)
}

/// Packs w [M, C, KH, KW] as W^T panels (done at compile time): element (k, m) of panel
/// m / kNR at dst[((m / kNR) * K + k) * kNR + m % kNR], zero past M.
inline void conv2d_pixrows_pack_weights(const Conv2dShape& s, const float* w, float* dst) {
  const int64_t K = s.C * s.KH * s.KW, panels = (s.M + kNR - 1) / kNR;
  for (int64_t q = 0; q < panels; ++q)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < kNR; ++j) {
        const int64_t m = q * kNR + j;
        dst[(q * K + k) * kNR + j] = m < s.M ? w[m * K + k] : 0.0f;
      }
}

namespace pixrows_detail {

/// Rows [k0, k1) of one image's im2col matrix (x: [C, H, W]) into dst [K, P], zero where the
/// window leaves the input.
inline void im2col_rows(const Conv2dShape& s, const float* x, int64_t k0, int64_t k1,
                        float* dst) {
  const int64_t P = s.OH * s.OW, taps = s.KH * s.KW;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t c = k / taps, i = (k / s.KW) % s.KH, j = k % s.KW;
    const int64_t first = j * s.DW - s.PW;  // the input column of output column 0
    // Output columns [lo, hi) read inside the row: 0 <= ow * SW + first < W.
    int64_t lo = first >= 0 ? 0 : (-first + s.SW - 1) / s.SW;
    int64_t hi = s.W - 1 - first < 0 ? 0 : (s.W - 1 - first) / s.SW + 1;
    if (hi > s.OW) hi = s.OW;
    if (lo > hi) lo = hi;
    float* d = dst + k * P;
    for (int64_t oh = 0; oh < s.OH; ++oh, d += s.OW) {
      const int64_t ih = oh * s.SH - s.PH + i * s.DH;
      if (ih < 0 || ih >= s.H) {
        zero_floats(d, s.OW);
        continue;
      }
      const float* xr = x + (c * s.H + ih) * s.W;
      zero_floats(d, lo);
      const int64_t at = first + lo * s.SW;  // >= 0
      if (s.SW == 1)
        copy_floats(d + lo, xr + at, hi - lo);
      else if (s.SW == 2)
        copy_floats_stride2(d + lo, xr + at, hi - lo);
      else
        for (int64_t u = lo; u < hi; ++u) d[u] = xr[at + (u - lo) * s.SW];
      zero_floats(d + hi, s.OW - hi);
    }
  }
}

#if defined(KILN_CPU_AVX512)
/// col[c] = column c of the 12 x 16 block x (lanes 0-11: rows 0-11; lanes 12-15 zero). Two
/// rounds of unpacks leave rows 4g..4g+3 of column 4q + j in 128-bit lane q of t[g][j]; two
/// rounds of 128-bit lane shuffles gather each column's three pieces.
inline void transpose12x16(const __m512 (&x)[12], __m512 (&col)[16]) {
  const __mmask16 all16 = 0xFFFF;
  __m512 t[3][4];
  KILN_CPU_UNROLL
  for (int g = 0; g < 3; ++g) gemm_detail::unpack_rows4(x + 4 * g, t[g]);
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
#endif

/// One tile: R pixels [p0, p0 + R) x `cols` channels [m0, m0 + cols) of an image's output.
/// a: A at the tile's first pixel (element (r, k) at a[k * P + r]); bp: the channel panel.
template <int R, int NV, class Act>
inline void tile(int64_t K, const float* a, int64_t P, const float* bp, int cols,
                 const float* bias, const Epilogue<Act>& e, float* y, int64_t m0, int64_t p0) {
  constexpr int L = V::kLanes;
  V::R acc0[R], acc1[R];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = V::zero();
  // The panel's rows and A's rows (P floats apart) come from L2; prefetched kAhead steps on.
  constexpr int64_t kAhead = 8;
  int64_t k = 0;
  for (; k + kAhead < K; ++k, a += P, bp += kNR) {
    __builtin_prefetch(bp + kAhead * kNR, 0, 3);
    __builtin_prefetch(bp + kAhead * kNR + 16, 0, 3);
    __builtin_prefetch(a + kAhead * P, 0, 3);
    gemm_detail::rank1<R, NV>(a, bp, acc0, acc1);
  }
  for (; k < K; ++k, a += P, bp += kNR) gemm_detail::rank1<R, NV>(a, bp, acc0, acc1);
  // Transposed write: each column of the tile (R pixels of one channel) becomes one vector,
  // goes through the epilogue and is stored to its contiguous place in Y.
  auto put = [&](int j, V::R v) {
    const int64_t m = m0 + j;
    if (bias) v = V::add(v, V::set1(bias[m]));
    if (e.residual) v = V::add(v, V::load(e.residual + m * P + p0, R));
    v = ActInRegister<Act>::apply(e.act, v);
    float* yo = y + m * P + p0;
    V::store(yo, v, R);
    if constexpr (!ActInRegister<Act>::kYes)
      for (int r = 0; r < R; ++r) yo[r] = e.act(yo[r]);
  };
#if defined(KILN_CPU_AVX512)
  if constexpr (kMR == 12) {
    // In registers (a gather per column cost 9% of a K = 256 tile).
    V::R rows[12], col[16];
    KILN_CPU_UNROLL
    for (int h = 0; h < NV; ++h) {
      KILN_CPU_UNROLL
      for (int r = 0; r < 12; ++r) rows[r] = r < R ? (h == 0 ? acc0[r] : acc1[r]) : V::zero();
      transpose12x16(rows, col);
      const int n = cols - 16 * h < 16 ? cols - 16 * h : 16;
      for (int j = 0; j < n; ++j) put(16 * h + j, col[j]);
    }
    return;
  }
#endif
  alignas(64) float t[R * kNR];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) {
    V::store(t + r * kNR, acc0[r]);
    if constexpr (NV == 2) V::store(t + r * kNR + L, acc1[r]);
  }
  for (int j = 0; j < cols; ++j) put(j, V::load_strided(t + j, kNR, R));
}

template <int R, class Act>
inline void tile_rows(int rows, int64_t K, const float* a, int64_t P, const float* bp, int cols,
                      const float* bias, const Epilogue<Act>& e, float* y, int64_t m0,
                      int64_t p0) {
  if constexpr (R > 1) {
    if (rows < R) return tile_rows<R - 1>(rows, K, a, P, bp, cols, bias, e, y, m0, p0);
  }
  if (cols <= V::kLanes)
    tile<R, 1>(K, a, P, bp, cols, bias, e, y, m0, p0);
  else
    tile<R, 2>(K, a, P, bp, cols, bias, e, y, m0, p0);
}

}  // namespace pixrows_detail

/// Y = conv(X, W) + bias, then the epilogue (residual with y's layout, activation). x [N, C, H,
/// W], w_panels from conv2d_pixrows_pack_weights, bias [M] or null, y [N, M, OH, OW], scratch
/// of conv2d_pixrows_scratch_floats(s) floats (shared by the threads). Group 1 only.
template <class Act>
inline void conv2d_pixrows_f32(const Conv2dShape& s, const float* x, const float* w_panels,
                               const float* bias, float* y, const Epilogue<Act>& e,
                               float* scratch, ThreadPool* pool) {
  const int64_t K = s.C * s.KH * s.KW, P = s.OH * s.OW, M = s.M;
  const int64_t strips = (P + kMR - 1) / kMR, panels = (M + kNR - 1) / kNR;
  const bool pointwise = conv2d_pixrows_pointwise(s);
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.H * s.W;
    const float* a = xn;
    if (!pointwise) {
      constexpr int64_t kRowsPerUnit = 32;
      parallel_for(pool, (K + kRowsPerUnit - 1) / kRowsPerUnit, [&](int64_t u, int) {
        const int64_t k1 = (u + 1) * kRowsPerUnit < K ? (u + 1) * kRowsPerUnit : K;
        pixrows_detail::im2col_rows(s, xn, u * kRowsPerUnit, k1, scratch);
      });
      a = scratch;
    }
    Epilogue<Act> en = e;
    en.residual = e.residual ? e.residual + n * M * P : nullptr;
    float* yn = y + n * M * P;
    parallel_for(pool, panels * strips, [&](int64_t u, int) {
      const int64_t q = u / strips, p0 = (u % strips) * kMR, m0 = q * kNR;
      const int rows = int(P - p0 < kMR ? P - p0 : kMR);
      const int cols = int(M - m0 < kNR ? M - m0 : kNR);
      pixrows_detail::tile_rows<kMR>(rows, K, a + p0, P, w_panels + q * K * kNR, cols, bias, en,
                                     yn, m0, p0);
    });
  }
}

}  // namespace kiln_cpu
