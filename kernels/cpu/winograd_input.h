// kiln optimized CPU kernels: the input side of the Winograd convolutions (winograd.h): B^T d B
// per tile, written to V ([xi][c][tile]). Tiles of a tile row go in the vector lanes (each row
// split into column phases); on AVX-512, images with fewer tiles per row than lanes put tiles
// of several tile rows in the lanes (input_lanes). F(4x4, 3x3) and F(2x2, 3x3); the stride-2
// conv's input transform is in winograd_s2.h.
#pragma once

#include <cstdint>

#include "conv.h"
#include "winograd_s2.h"  // load_cols

namespace kiln_cpu {

namespace winograd_detail {
/// B^T d for one column of 6 values (vectors).
inline void input_1d(const V::R* d, V::R* r) {
  const V::R four = V::set1(4.0f), five = V::set1(5.0f), two = V::set1(2.0f);
  // r0 = 4 d0 - 5 d2 + d4; r5 = 4 d1 - 5 d3 + d5
  r[0] = V::add(V::sub(V::mul(four, d[0]), V::mul(five, d[2])), d[4]);
  r[5] = V::add(V::sub(V::mul(four, d[1]), V::mul(five, d[3])), d[5]);
  // r1 = (d3 + d4) - 4 (d1 + d2); r2 = (d4 - d3) + 4 (d1 - d2)
  r[1] = V::sub(V::add(d[3], d[4]), V::mul(four, V::add(d[1], d[2])));
  r[2] = V::add(V::sub(d[4], d[3]), V::mul(four, V::sub(d[1], d[2])));
  // r3 = (d4 - d2) + 2 (d3 - d1); r4 = (d4 - d2) - 2 (d3 - d1)
  const V::R a = V::sub(d[4], d[2]), b = V::mul(two, V::sub(d[3], d[1]));
  r[3] = V::add(a, b);
  r[4] = V::sub(a, b);
}

/// Splits columns [off, off + 4L) of xr into their 4 phases: p[q] lane t = column off + 4t + q
/// (only phases 0 and 1 when !all).
inline void load_phases(const float* xr, int64_t W, int64_t off, V::R* p, bool all) {
  constexpr int L = V::kLanes;
  V::R e1, o1, e2, o2, p2, p3;
  V::deinterleave2(load_cols(xr, W, off), load_cols(xr, W, off + L), &e1, &o1);
  V::deinterleave2(load_cols(xr, W, off + 2 * L), load_cols(xr, W, off + 3 * L), &e2, &o2);
  V::deinterleave2(e1, e2, &p[0], &p2);
  V::deinterleave2(o1, o2, &p[1], &p3);
  if (all) {
    p[2] = p2;
    p[3] = p3;
  }
}

#if defined(KILN_CPU_AVX2)
/// load_phases for F(4x4) on AVX2 where columns [off, off + 36) lie in the row: the 6 values
/// d[j] lane t = column off + 4 t + j of 8 tiles, from 128-bit halves (tiles t and t + 4 of
/// one 4-column group) and in-lane 4x4 transposes: 10 shuffles within 128-bit lanes, where
/// load_phases twice took 8 lane-crossing permutes and as many shuffles (PP-OCRv4 det's
/// 96 -> 24 convs at 160x160 spent more in the input transform than in their GEMMs).
inline void load_phases6(const float* xr, V::R* d) {
  auto group = [&](int g) {  // columns 4 g .. 4 g + 3 (tile g) and 4 g + 16 .. (tile g + 4)
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(xr + 4 * g)),
                                _mm_loadu_ps(xr + 4 * g + 16), 1);
  };
  const V::R a0 = group(0), a1 = group(1), a2 = group(2), a3 = group(3), a4 = group(4);
  // [c0 c4 c1 c5], [c2 c6 c3 c7], [c8 c12 c9 c13], [c10 c14 c11 c15] (per 128-bit lane)
  const V::R t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
  const V::R t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
  d[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  d[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  d[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  d[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
  // Phases 4 and 5: phases 0 and 1 one tile on (groups 1 .. 4).
  const V::R u0 = _mm256_unpacklo_ps(a1, a2), u2 = _mm256_unpacklo_ps(a3, a4);
  d[4] = _mm256_shuffle_ps(u0, u2, 0x44);
  d[5] = _mm256_shuffle_ps(u0, u2, 0xEE);
}
#endif

/// B^T d for one column of tm + 2 values: input_1d (tm = 4) or input_1d2 (tm = 2), defined
/// below with F(2x2, 3x3)'s transforms.
template <int TM>
inline void input_column(const V::R* d, V::R* r);

/// The input transform of one tile-row segment (tiles tx0 .. tx0 + seg of tile row ty) of
/// channel xc [H, W] into v[xi * xi_stride + t] (t = 0 .. seg), for TM x TM output tiles: per
/// chunk of L tiles (lane t reads columns TM t .. TM t + TM + 1: for TM = 4 the 4 phases of the
/// row, then phases 0 and 1 one tile on; for TM = 2 the 2 phases, then both one tile on), B^T
/// along each of the TM + 2 rows, then down the columns.
template <int TM>
inline void input_segment(const Conv2dShape& s, const float* xc, int64_t ty, int64_t tx0,
                          int64_t seg, float* v, int64_t xi_stride) {
  constexpr int L = V::kLanes, A = TM + 2;
  const int64_t col0 = TM * tx0 - s.PW;  // input column of the segment's first patch
  for (int64_t k = 0; k * L < seg; ++k) {
    const int n = int(seg - k * L < L ? seg - k * L : L);
    const int64_t off = col0 + TM * k * L;
    V::R t[A][A];  // t[i][j]: row i of the patches after B^T along it
    for (int i = 0; i < A; ++i) {
      const int64_t ih = TM * ty - s.PH + i;
      if (ih < 0 || ih >= s.H) {
        for (int j = 0; j < A; ++j) t[i][j] = V::zero();
        continue;
      }
      const float* xr = xc + ih * s.W;
      V::R d[A];
      if constexpr (TM == 4) {
#if defined(KILN_CPU_AVX2)
        if (off >= 0 && off + 36 <= s.W) {
          load_phases6(xr + off, d);
          input_column<TM>(d, t[i]);
          continue;
        }
#endif
        load_phases(xr, s.W, off, d, true);
        load_phases(xr, s.W, off + 4, d + 4, false);
      } else {
        V::deinterleave2(load_cols(xr, s.W, off), load_cols(xr, s.W, off + L), &d[0], &d[1]);
        V::deinterleave2(load_cols(xr, s.W, off + 2), load_cols(xr, s.W, off + 2 + L), &d[2],
                         &d[3]);
      }
      input_column<TM>(d, t[i]);
    }
    for (int j = 0; j < A; ++j) {
      V::R d[A], r[A];
      for (int i = 0; i < A; ++i) d[i] = t[i][j];
      input_column<TM>(d, r);
      for (int i = 0; i < A; ++i) V::store(v + (i * A + j) * xi_stride + k * L, r[i], n);
    }
  }
}

// F(2x2, 3x3) (winograd2): 4x4 input patches at (2 ty - PH, 2 tx - PW), points 0, 1, -1 and
// infinity:  B^T = | 1  0 -1  0 |   G = |   1    0    0 |   A^T = | 1  1  1  0 |
//                  | 0  1  1  0 |       | 1/2  1/2  1/2 |         | 0  1 -1 -1 |
//                  | 0 -1  1  0 |       | 1/2 -1/2  1/2 |
//                  | 0  1  0 -1 |       |   0    0    1 |
// 16 multiplies per tile and channel pair instead of 36: 1.8x the direct conv's weights, not
// 4x, for small images where F(4x4, 3x3) pads most and streams 4x the weights (ResNet-50's
// 7x7 layer: 4 tiles of 16 pixels for 49, against 16 tiles of 4).

/// B^T d for one column of 4 values (F(2x2, 3x3)).
inline void input_1d2(const V::R* d, V::R* r) {
  r[0] = V::sub(d[0], d[2]);
  r[1] = V::add(d[1], d[2]);
  r[2] = V::sub(d[2], d[1]);
  r[3] = V::sub(d[1], d[3]);
}

template <>
inline void input_column<4>(const V::R* d, V::R* r) {
  input_1d(d, r);
}
template <>
inline void input_column<2>(const V::R* d, V::R* r) {
  input_1d2(d, r);
}

#if defined(KILN_CPU_AVX512)
/// Whether input_lanes takes images of tw tiles per row: every tile row's patches within the
/// 32 columns of two loads, and rows of fewer tiles than lanes (so input_segment would leave
/// lanes empty: ResNet-50's 14x14 and 28x28 layers by F(4x4) use 4 and 7 of 16, its 7x7 layers
/// by F(2x2) 4).
constexpr bool input_lanes_apply(int64_t tw, int tm) {
  return tw < V::kLanes && tm * (tw - 1) + tm + 2 <= 2 * V::kLanes;
}

/// input_segment for n (at most L) consecutive tiles t, t + 1, ... of the image across tile rows
/// (tw tiles per row), one tile per lane: per tile row, two loads of its patch rows and a
/// permute of each patch column into its lanes. The same arithmetic per tile as input_segment,
/// so the same V; with 4 tiles per row it does the transforms' arithmetic once per 16 tiles
/// rather than per 4, and stores whole vectors.
template <int TM>
inline void input_lanes(const Conv2dShape& s, const float* xc, int64_t tw, int64_t t, int n,
                        float* v, int64_t xi_stride) {
  constexpr int L = V::kLanes, A = TM + 2;
  struct Run {
    int64_t ty, col;  // the tile row, the input column of its first patch
    __mmask16 lanes;
    __m512i idx[A];   // lane l: column TM (l - l0) + j of the two loads
  };
  Run runs[L];
  int nr = 0;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int l = 0; l < n;) {
    const int64_t ty = (t + l) / tw, tx = (t + l) % tw;
    const int len = int(tw - tx < n - l ? tw - tx : n - l);
    Run& r = runs[nr++];
    r.ty = ty;
    r.col = TM * tx - s.PW;
    r.lanes = __mmask16(V::mask(l + len) & ~V::mask(l));
    const __m512i base = _mm512_mullo_epi32(_mm512_sub_epi32(iota, _mm512_set1_epi32(l)),
                                            _mm512_set1_epi32(TM));
    for (int j = 0; j < A; ++j) r.idx[j] = _mm512_add_epi32(base, _mm512_set1_epi32(j));
    l += len;
  }
  V::R t_[A][A];
  for (int i = 0; i < A; ++i) {
    V::R d[A];
    for (int j = 0; j < A; ++j) d[j] = V::zero();
    for (int q = 0; q < nr; ++q) {
      const int64_t ih = TM * runs[q].ty - s.PH + i;
      if (ih < 0 || ih >= s.H) continue;
      const float* xr = xc + ih * s.W;
      const V::R lo = load_cols(xr, s.W, runs[q].col), hi = load_cols(xr, s.W, runs[q].col + L);
      for (int j = 0; j < A; ++j)
        d[j] = _mm512_mask_mov_ps(d[j], runs[q].lanes,
                                  _mm512_permutex2var_ps(lo, runs[q].idx[j], hi));
    }
    input_column<TM>(d, t_[i]);
  }
  for (int j = 0; j < A; ++j) {
    V::R d[A], r[A];
    for (int i = 0; i < A; ++i) d[i] = t_[i][j];
    input_column<TM>(d, r);
    for (int i = 0; i < A; ++i) V::store(v + (i * A + j) * xi_stride, r[i], n);
  }
}
#else
constexpr bool input_lanes_apply(int64_t, int) { return false; }
template <int TM>
inline void input_lanes(const Conv2dShape&, const float*, int64_t, int64_t, int, float*, int64_t) {}
#endif

}  // namespace winograd_detail

}  // namespace kiln_cpu
