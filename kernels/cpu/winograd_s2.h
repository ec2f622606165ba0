// kiln optimized CPU kernels: the input side of the stride-2 Winograd conv
// (conv2d_winograd_s2_f32, winograd.h's driver with 81 positions and 36 weight matrices), and
// load_cols, which both input transforms read rows with.
#pragma once

#include <cstdint>

#include "conv.h"

namespace kiln_cpu {

namespace winograd_detail {

/// Columns [off, off + L) of an input row xr [W], zero outside it (masked loads at the edges).
inline V::R load_cols(const float* xr, int64_t W, int64_t off) {
  constexpr int L = V::kLanes;
  if (off >= 0 && off + L <= W) return V::load(xr + off);
  const int64_t a = off < 0 ? -off : 0, b = W - off < L ? W - off : L;
  if (b <= a) return V::zero();
  return V::load_range(xr + off, int(a), int(b));
}

// The stride-2 conv (conv2d_winograd_s2_f32). Output o of a row reads input 2 o - P + kh, so a
// 4 x 4 output tile reads the 9 x 9 patch at (8 ty - PH, 8 tx - PW), output o of the tile its
// patch values 2 o + kh. By the parity of the patch index the conv splits, per dimension, into
// tap 1 on the odd values (1, 3, 5, 7: a 1-tap conv, 4 values for 4 outputs) and taps 0 and 2
// on the even ones (0, 2, 4, 6, 8: a 2-tap conv, which F(4, 2) computes with 5 products
// instead of 8). Per dimension the 9 values become 9 positions (input_1d_s2: the 4 odd ones
// as they are, then F(4, 2)'s B^T on the 5 even ones), 81 per tile and channel; the output
// transform is T = [I | A^T of F(4, 2)] (output_1d_s2). The positions of the 1-tap phase share
// their weight (G's row 0), so the 6 x 6 weight matrices (winograd_transform_weights' GS2)
// each serve 16, 4 or 1 of the 81 GEMMs (group_positions): 81 products per 16 outputs and
// channel pair instead of the direct conv's 144, for 4x its weights (as F(4x4, 3x3)).
//   B^T of F(4, 2) = | 2 -1 -2  1  0 |   G = | 1/2    0 |   (its rows 1-5 in GS2, on taps 0, 2)
//                    | 0  2  1 -1  0 |       | 1/2  1/2 |
//                    | 0 -2  3 -1  0 |       | 1/6 -1/6 |
//                    | 0 -1  0  1  0 |       | 1/6  1/3 |
//                    | 0  2 -1 -2  1 |       |   0    1 |

/// The stride-2 conv's transform of one row or column of a patch (9 values, vectors).
inline void input_1d_s2(const V::R* d, V::R* r) {
  r[0] = d[1];
  r[1] = d[3];
  r[2] = d[5];
  r[3] = d[7];
  const V::R two = V::set1(2.0f), e31 = V::sub(d[6], d[2]);
  // e0..e4 = d0, d2, d4, d6, d8: r4..r8 = B^T e.
  r[4] = V::add(V::mul(two, V::sub(d[0], d[4])), e31);
  r[5] = V::sub(V::add(V::mul(two, d[2]), d[4]), d[6]);
  r[6] = V::sub(V::sub(V::mul(V::set1(3.0f), d[4]), V::mul(two, d[2])), d[6]);
  r[7] = e31;
  r[8] = V::sub(V::add(V::mul(two, V::sub(d[2], d[6])), d[8]), d[4]);
}

#if defined(KILN_CPU_AVX512)
/// Where the stride-2 transform reads n (<= L) consecutive tiles t, t + 1, ... of an image of
/// tw tiles per row, one tile per lane, as runs of at most 7 tiles of one tile row: a run's
/// patch rows span 8 len + 1 <= 57 columns, which two deinterleave2 of four loads split into
/// their even and odd columns (32 each), and patch column j of lane l is then lane
/// 4 (l - l0) + j / 2 of the even (j even) or odd (j odd) ones: one permute per column.
struct S2Lanes {
  struct Run {
    int64_t r0, col;  // the input row of patch row 0, the input column of the first patch's 0
    bool wide;        // more than 32 columns (four loads, not two)
    __mmask16 lanes;
    __m512i idx[9];
  };
  Run runs[V::kLanes];
  int count;
};

inline void s2_lanes(const Conv2dShape& s, int64_t tw, int64_t t, int n, S2Lanes* p) {
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  p->count = 0;
  for (int l = 0; l < n;) {
    const int64_t ty = (t + l) / tw, tx = (t + l) % tw;
    int len = int(tw - tx < n - l ? tw - tx : n - l);
    if (len > 7) len = 7;
    S2Lanes::Run& r = p->runs[p->count++];
    r.r0 = 8 * ty - s.PH;
    r.col = 8 * tx - s.PW;
    r.wide = 8 * len + 1 > 32;
    r.lanes = __mmask16(V::mask(l + len) & ~V::mask(l));
    const __m512i base =
        _mm512_mullo_epi32(_mm512_sub_epi32(iota, _mm512_set1_epi32(l)), _mm512_set1_epi32(4));
    for (int j = 0; j < 9; ++j) r.idx[j] = _mm512_add_epi32(base, _mm512_set1_epi32(j / 2));
    l += len;
  }
}

/// Patch row i of the tiles of p in channel xc [H, W] (zero outside the image): d[j], column j.
inline void s2_patch_row(const Conv2dShape& s, const S2Lanes& p, const float* xc, int i,
                         V::R* d) {
  for (int j = 0; j < 9; ++j) d[j] = V::zero();
  for (int q = 0; q < p.count; ++q) {
    const S2Lanes::Run& r = p.runs[q];
    const int64_t ih = r.r0 + i;
    if (ih < 0 || ih >= s.H) continue;
    const float* xr = xc + ih * s.W;
    V::R e0, o0, e1 = V::zero(), o1 = V::zero();
    V::deinterleave2(load_cols(xr, s.W, r.col), load_cols(xr, s.W, r.col + 16), &e0, &o0);
    if (r.wide)
      V::deinterleave2(load_cols(xr, s.W, r.col + 32), load_cols(xr, s.W, r.col + 48), &e1,
                       &o1);
    for (int j = 0; j < 9; ++j)
      d[j] = _mm512_mask_mov_ps(d[j], r.lanes,
                                j % 2 == 0 ? _mm512_permutex2var_ps(e0, r.idx[j], e1)
                                           : _mm512_permutex2var_ps(o0, r.idx[j], o1));
  }
}
#else
/// Where the stride-2 transform reads n (<= L) consecutive tiles t, t + 1, ... of an image of
/// tw tiles per row, one tile per lane: base[i][l], the offset in a channel of lane l's patch
/// row i, column 0; bit l of row[i] / col[j]: lane l's patch row i / column j is inside the
/// image (lanes past n: never).
struct S2Lanes {
  int32_t base[9][V::kLanes];
  uint32_t row[9], col[9];
};

inline void s2_lanes(const Conv2dShape& s, int64_t tw, int64_t t, int n, S2Lanes* p) {
  for (int i = 0; i < 9; ++i) p->row[i] = p->col[i] = 0;
  for (int l = 0; l < V::kLanes; ++l) {
    const int64_t ty = (t + l) / tw, tx = (t + l) % tw;
    const int64_t r0 = 8 * ty - s.PH, c0 = 8 * tx - s.PW;
    for (int i = 0; i < 9; ++i) {
      p->base[i][l] = l < n ? int32_t((r0 + i) * s.W + c0) : 0;
      if (l < n && r0 + i >= 0 && r0 + i < s.H) p->row[i] |= 1u << l;
      if (l < n && c0 + i >= 0 && c0 + i < s.W) p->col[i] |= 1u << l;
    }
  }
}

/// Patch row i of the tiles of p in channel xc (zero outside the image), a scalar gather.
inline void s2_patch_row(const Conv2dShape&, const S2Lanes& p, const float* xc, int i,
                         V::R* d) {
  alignas(64) float buf[V::kLanes];
  for (int j = 0; j < 9; ++j) {
    const uint32_t in = p.row[i] & p.col[j];
    for (int l = 0; l < V::kLanes; ++l) buf[l] = (in >> l) & 1u ? xc[p.base[i][l] + j] : 0.0f;
    d[j] = V::load(buf);
  }
}
#endif

/// The stride-2 transform of the tiles of p in channel xc [H, W] into v[xi * xi_stride + l]
/// (xi = 9 a + b, l < n): the patch's rows by input_1d_s2, then its columns.
inline void input_s2(const Conv2dShape& s, const S2Lanes& p, const float* xc, float* v,
                     int64_t xi_stride, int n) {
  V::R t[9][9];  // t[i][j]: row i of the patches after the transform along it
  for (int i = 0; i < 9; ++i) {
    V::R d[9];
    s2_patch_row(s, p, xc, i, d);
    input_1d_s2(d, t[i]);
  }
  for (int j = 0; j < 9; ++j) {
    V::R d[9], r[9];
    for (int i = 0; i < 9; ++i) d[i] = t[i][j];
    input_1d_s2(d, r);
    for (int i = 0; i < 9; ++i) V::store(v + (i * 9 + j) * xi_stride, r[i], n);
  }
}

/// The positions whose GEMMs take weight matrix g (pos[], returned count): the stride-2 conv's
/// (g = 6 ga + gb, row ga of G for the patch rows, gb for the columns: xi = 9 a + b for a in
/// 0..3 when ga = 0, else a = 3 + ga, b alike), xi = g alone for stride 1.
template <bool S2>
inline int group_positions(int g, int* pos) {
  if constexpr (!S2) {
    pos[0] = g;
    return 1;
  }
  const int ga = g / 6, gb = g % 6;
  const int a0 = ga == 0 ? 0 : 3 + ga, a1 = ga == 0 ? 4 : 4 + ga;
  const int b0 = gb == 0 ? 0 : 3 + gb, b1 = gb == 0 ? 4 : 4 + gb;
  int k = 0;
  for (int a = a0; a < a1; ++a)
    for (int b = b0; b < b1; ++b) pos[k++] = 9 * a + b;
  return k;
}

}  // namespace winograd_detail

}  // namespace kiln_cpu
