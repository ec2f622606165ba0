// kiln optimized CPU kernels: f32 3x3 stride-1 convolution by Winograd F(4x4, 3x3) (NCHW), and
// by F(2x2, 3x3) for small images (conv2d_winograd2_f32: the same driver with 2x2 tiles, 16
// transformed positions; its transforms are described at input_1d2); 3x3 stride 2 by its four
// stride-1 phases (conv2d_winograd_s2_f32: 81 positions, 36 weight matrices; see input_1d_s2).
//
// Each 4x4 output tile comes from the 6x6 input patch at (4 ty - PH, 4 tx - PW), zero outside
// the input; tiles past OH/OW are computed and not stored. With the interpolation points
// 0, 1, -1, 2, -2 and infinity (Lavin and Gray), per output/input channel pair
//   Y = A^T [ (G g G^T) . (B^T d B) ] A
//        B^T = | 4  0 -5  0  1  0 |    G = |  1/4     0     0 |    A^T = | 1  1  1  1  1  0 |
//              | 0 -4 -4  1  1  0 |        | -1/6  -1/6  -1/6 |          | 0  1 -1  2 -2  0 |
//              | 0  4 -4 -1  1  0 |        | -1/6   1/6  -1/6 |          | 0  1  1  4  4  0 |
//              | 0 -2 -1  2  1  0 |        | 1/24  1/12   1/6 |          | 0  1 -1  8 -8  1 |
//              | 0  2 -1 -2  1  0 |        | 1/24 -1/12   1/6 |
//              | 0  4  0 -5  0  1 |        |    0     0     1 |
// so the 9 * 16 multiplies of a tile and channel pair become 36, summed over the input channels
// as 36 independent GEMMs per block of tiles: M_xi[tile, m] = sum_c V_xi[tile, c] U_xi[c, m]
// (xi = one of the 6x6 transformed positions).
//
// Layout choices (explained because they differ from conv.h's GEMM orientation):
//  * The tiles are the GEMM's rows (kMR = 12 per register tile) and the output channels its
//    columns (kNR = 32). ResNet-style channel counts are multiples of 32, so no column is
//    wasted, and a small image (7x7: 4 tiles) still runs full-width vectors: with the tiles as
//    columns, 4 tiles would fill 4 of 16 lanes.
//  * U_xi = G g G^T (computed in double, rounded once) is packed at compile time as B panels
//    (pack_b_panels' layout: per xi, [M / kNR][C][kNR], zero past M).
//  * V_xi is written by the input transform as [xi][c][tile] (tiles contiguous): the transform
//    runs with the tiles of a tile row in the vector lanes (input rows split into 4 column
//    phases with deinterleave2, so lane t reads columns 4t..4t+5); on AVX-512, images of fewer
//    tiles per row than lanes put consecutive tiles across tile rows in the lanes instead
//    (input_lanes: 16 tiles of a 14x14 image per vector, not 4), and the register tile reads
//    its 12 tiles of channel c as 12 consecutive floats (the stride between channels is the
//    block's tile count). Each register tile runs all C channels in registers, c ascending,
//    then is stored to M_xi[tile][m] (a chunk of at most kMc output channels at a time). This
//    loop (tile_rows, on gemm.h's rank1) replaces gemm_packed_a: A here is V in place ([c][tile],
//    not pack_a's layout), K needs no kKC blocking, and M takes no epilogue.
//  * The output transform runs with output channels in the lanes (M's layout). On AVX-512 the
//    16 pixel vectors of a tile are transposed in registers (16 x 16, 64 permutes) so each
//    channel's 4 rows of 4 go to y (and come from the residual) as masked 128-bit stores
//    (loads), with the activation in registers; AVX2 and the portable path go through a small
//    buffer, scalar. Channel groups are the outer loop, tiles the inner: consecutive tiles fill
//    the same lines of y. The epilogue's order is gemm.h's: act((sum + bias) + residual).
//  * The 36 matrices of V and of M lie an odd number of 64-byte lines apart (not a multiple of
//    4 KiB: the 36 streams of the transforms would otherwise share one L1 set).
//  * Blocks of tiles (kMR multiples, from C and M so the block's V and M chunk stay near L2)
//    of one image are the work units; with fewer blocks than threads the output-channel chunks
//    are split too: the threads then transform a block's input channels together into one
//    shared V, and each part of its chunks reads it. Every output is the same arithmetic
//    whichever unit or thread computes it: results do not depend on the thread count.
//
// Numerics: the transforms scale values by up to 10 (B) and 8 (A) per dimension, so the
// rounding error is larger than a direct conv's: bounded by a constant times eps * sum|w||x|
// per output (the tests use 8 * (C + 16) * eps * sum|w||x|; measured maxima are under half of
// it).
//
// When it pays: U is 36/9 = 4x the direct conv's weights and each U value is used once per tile
// of the block, so with few tiles (ResNet-50's 512-channel 7x7 layer at batch 1: 4 tiles, 37.7
// MB of U) the kernel is bound by streaming U from memory; it still beat the direct conv there
// on the machine measured (1.9 vs 2.8 ms at 1 thread), by far less than on larger images
// (2.6-3.1x). The input edges are read with V::load_range at offsets that may start before a
// row (masked lanes are not read).
#pragma once

#include <cstdint>

#include "conv.h"
#include "winograd_output.h"
#include "winograd_s2.h"
#include "winograd_weights.h"

namespace kiln_cpu {

namespace winograd_detail {

constexpr int64_t kMc = 2 * kNR;            // output channels per GEMM chunk (M's width)
constexpr int64_t kBlockBudget = 1 << 18;   // floats of a block's V plus M chunk (1 MiB)
// The stride-2 conv's (2 MiB; its 81 positions per tile left blocks of 10 and 8 tiles: 2 MiB
// made ResNet-50's 128-channel layer 504 -> 460 us and its 256-channel one 667 -> 633 at 2
// threads, 819 -> 812 and 993 -> 969 at 1).
constexpr int64_t kBlockBudgetS2 = 1 << 19;
constexpr int64_t kMaxBlockStrips = 8;      // at most 8 * kMR tiles per block

// tm: the output tile's side, 4 for F(4x4, 3x3) or 2 for F(2x2, 3x3); xis(tm) transformed
// positions, (tm + 2)^2.
constexpr int64_t tiles_h(const Conv2dShape& s, int tm) { return (s.OH + tm - 1) / tm; }
constexpr int64_t tiles_w(const Conv2dShape& s, int tm) { return (s.OW + tm - 1) / tm; }
constexpr int xis(int tm) { return (tm + 2) * (tm + 2); }
/// Transformed positions per tile and channel: xis(tm), or 81 for the stride-2 conv.
constexpr int64_t positions(const Conv2dShape& s, int tm) { return s.SH == 2 ? 81 : xis(tm); }
/// Width of one output-channel chunk, rounded up to whole panels.
constexpr int64_t chunk_width(const Conv2dShape& s) {
  const int64_t m = (s.M + kNR - 1) / kNR * kNR;
  return m < kMc ? m : kMc;
}

/// Tiles per block: the image's tiles when their V (xis x C) and M chunk (xis x chunk) fit the
/// budget (every block streams all of U: ResNet-50's 14x14 layer, 16 tiles, ran as blocks of
/// 12 and 4 tiles, then 8 and 8, reading its 9.4 MB of U twice), else kMR multiples that fit,
/// at least one strip, at most kMaxBlockStrips.
constexpr int64_t block_tiles(const Conv2dShape& s, int tm) {
  const int64_t per_tile = positions(s, tm) * (s.C + chunk_width(s));
  const int64_t image = tiles_h(s, tm) * tiles_w(s, tm);
  const int64_t budget = s.SH == 2 ? kBlockBudgetS2 : kBlockBudget;
  if (image * per_tile <= budget && image <= kMaxBlockStrips * kMR) return image;
  int64_t strips = budget / (per_tile * kMR);
  if (strips < 1) strips = 1;
  if (strips > kMaxBlockStrips) strips = kMaxBlockStrips;
  const int64_t tiles = tiles_h(s, tm) * tiles_w(s, tm);
  return strips * kMR < tiles ? strips * kMR : tiles;
}

constexpr int64_t round16(int64_t n) { return (n + 15) / 16 * 16; }

/// The stride between the 36 matrices of V or M: n floats rounded up to an odd number of
/// 64-byte lines, so the 36 are not a multiple of 4 KiB apart (all in one L1 set).
constexpr int64_t xi_stride(int64_t n) {
  const int64_t lines = (n + 15) / 16;
  return (lines % 2 == 0 ? lines + 1 : lines) * 16;
}

/// One thread's scratch: V, then the M chunk, then the output transform's 16 x kLanes buffer.
struct Scratch {
  int64_t v, m, out, total;
};
constexpr Scratch scratch_of(const Conv2dShape& s, int tm) {
  const int64_t tb = block_tiles(s, tm);
  Scratch r{};
  r.v = 0;
  r.m = r.v + positions(s, tm) * xi_stride(s.C * tb);
  r.out = r.m + positions(s, tm) * xi_stride(tb * chunk_width(s));
  r.total = r.out + round16(16 * V::kLanes);
  return r;
}

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

/// One register tile: rows (tiles) [0, R) x kNR columns (NV = 1: the first L only) of
/// M = V * U over all C: a[c * lda + r], b[c * kNR + col], out[r * ldo + col].
/// Not inlined: inlined into conv2d's lambda, GCC 12 (AVX2, 16 registers) kept one of the 12
/// accumulators of the prefetching loop on the stack, a load-fma-store chain per k step
/// (ResNet-50's 7x7 F(2x2) layers 1.10x faster at 1 thread in the kernel alone, the model 1.03x
/// at 2 threads); a call per tile costs nothing next to its C k steps.
template <int R, int NV>
__attribute__((noinline)) void tile(int64_t C, const float* a, int64_t lda, const float* b, float* out,
                 int64_t ldo, const float* ahead) {
  V::R acc0[R], acc1[R];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = V::zero();
  if (ahead) {
    // The panel after `ahead`, one line in 2 KB: a hint that starts the hardware prefetcher's
    // stream on it a panel early (cold U, kiln_kernels_bench at 1 thread: the 14x14 F(4x4)
    // layer 0.56 -> 0.48 ms, the 7x7 F(2x2) one 1.10 -> 0.87; U in L3 0.45 / 0.79).
    const float* far = ahead + C * kNR;
    for (int64_t c = 0; c < C; ++c, a += lda, b += kNR, ahead += kNR) {
      __builtin_prefetch(ahead, 0, 2);
      __builtin_prefetch(ahead + 16, 0, 2);
      if ((c & 15) == 0) __builtin_prefetch(far + c * kNR, 0, 2);
      gemm_detail::rank1<R, NV>(a, b, acc0, acc1);
    }
  } else {
    for (int64_t c = 0; c < C; ++c, a += lda, b += kNR)
      gemm_detail::rank1<R, NV>(a, b, acc0, acc1);
  }
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) {
    V::store(out + r * ldo, acc0[r]);
    if constexpr (NV == 2) V::store(out + r * ldo + V::kLanes, acc1[r]);
  }
}

/// `ahead`: the panel (C x kNR floats) the next tiles read, prefetched to L2 a line per step
/// (1 line per kNR / 16 floats of the current one), or null.
template <int R>
inline void tile_rows(int rows, bool narrow, int64_t C, const float* a, int64_t lda,
                      const float* b, float* out, int64_t ldo, const float* ahead) {
  if constexpr (R > 1) {
    if (rows < R) return tile_rows<R - 1>(rows, narrow, C, a, lda, b, out, ldo, ahead);
  }
  if (narrow)
    tile<R, 1>(C, a, lda, b, out, ldo, ahead);
  else
    tile<R, 2>(C, a, lda, b, out, ldo, ahead);
}

}  // namespace winograd_detail

/// Whether conv2d_winograd_f32 computes this conv: 3x3 kernel, stride 1, dilation 1, group 1,
/// pads (PH, PW) each in [0, 2] (begin pads; OH/OW in the shape give the end pads), OH >= 1,
/// OW >= 1.
constexpr bool conv2d_winograd_applies(const Conv2dShape& s) {
  return s.KH == 3 && s.KW == 3 && s.SH == 1 && s.SW == 1 && s.DH == 1 && s.DW == 1 &&
         s.group == 1 && s.PH >= 0 && s.PH <= 2 && s.PW >= 0 && s.PW <= 2 && s.OH >= 1 &&
         s.OW >= 1 && s.N >= 1 && s.C >= 1 && s.M >= 1;
}

/// Whether conv2d_winograd_s2_f32 computes this conv: as conv2d_winograd_applies but stride 2
/// (both ways), and the image small enough for 32-bit gather offsets.
constexpr bool conv2d_winograd_s2_applies(const Conv2dShape& s) {
  return s.KH == 3 && s.KW == 3 && s.SH == 2 && s.SW == 2 && s.DH == 1 && s.DW == 1 &&
         s.group == 1 && s.PH >= 0 && s.PH <= 2 && s.PW >= 0 && s.PW <= 2 && s.OH >= 1 &&
         s.OW >= 1 && s.N >= 1 && s.C >= 1 && s.M >= 1 && s.H >= 1 && s.W >= 1 &&
         s.H < (int64_t(1) << 31) && s.W < (int64_t(1) << 31) &&
         (s.H + 16) * (s.W + 16) < (int64_t(1) << 31);
}

/// Floats of the transformed, packed weights: per weight matrix (36 xi; 16 for tm = 2,
/// F(2x2, 3x3); 36 for the stride-2 conv), U_xi [C, M] as B panels of kNR output channels
/// ([M / kNR][C][kNR], zero past M).
constexpr int64_t conv2d_winograd_packed_weight_floats(const Conv2dShape& s, int tm = 4) {
  return winograd_detail::xis(tm) * ((s.M + kNR - 1) / kNR * kNR) * s.C;
}

/// Transforms (G g G^T per output/input channel pair, in double, rounded once) and packs the
/// weights w [M, C, 3, 3] (at compile time); tm = 2: for F(2x2, 3x3); a stride-2 shape: for
/// conv2d_winograd_s2_f32.
inline void conv2d_winograd_pack_weights(const Conv2dShape& s, const float* w, float* dst,
                                         int tm = 4) {
  winograd_transform_weights(w, s.M, s.C, kNR, dst, tm, s.SH == 2 ? 2 : 1);
}

/// Scratch floats for `threads` threads (tm = 2: conv2d_winograd2_f32's).
constexpr int64_t conv2d_winograd_scratch_floats(const Conv2dShape& s, int threads,
                                                 int tm = 4) {
  return winograd_detail::scratch_of(s, tm).total * threads;
}

namespace winograd_detail {

/// conv2d_winograd_f32 (TM = 4), conv2d_winograd2_f32 (TM = 2) and conv2d_winograd_s2_f32
/// (TM = 4, S2: XI = 81 positions, GROUPS = 36 weight matrices).
template <int TM, bool S2, class Act>
inline void conv2d(const Conv2dShape& s, const float* x, const float* w_packed, const float* bias,
                   float* y, const Epilogue<Act>& e, float* scratch, ThreadPool* pool) {
  constexpr int L = V::kLanes, XI = S2 ? 81 : xis(TM), GROUPS = S2 ? 36 : XI;
  const Scratch sc = scratch_of(s, TM);
  const int64_t C = s.C, M = s.M, TW = tiles_w(s, TM), tiles = tiles_h(s, TM) * TW;
  const int threads = pool ? pool->size() : 1;
  // Even shares over the threads (the block size changes no sum: each tile's products run
  // over C alone). The image's tiles go to the fewest blocks that fit the scratch (TB tiles),
  // rounded up to a multiple of the threads while each block keeps a whole strip, as evenly as
  // tiles allow (sizes differ by at most one): ResNet-50's 28x28 layer, 49 tiles, runs blocks
  // of 25 and 24 at 1 and 2 threads, not 36 and 13 (1 thread) or 24, 24 and a 1-tile block that
  // streamed all of U for one tile while the other thread waited (2 threads). An image of
  // fewer than two strips per thread also splits its output channels (the 14x14 layer, 16
  // tiles: one block, its chunks in two parts).
  const int64_t TB = block_tiles(s, TM);
  int64_t blocks = (tiles + TB - 1) / TB;
  if (threads > 1 && blocks % threads != 0) {
    const int64_t up = (blocks + threads - 1) / threads * threads;
    if (tiles / up >= kMR) blocks = up;
  }
  // Block blk: tiles [t0, t0 + tb).
  auto block_of = [&](int64_t blk, int64_t* t0, int64_t* tb) {
    *t0 = blk * tiles / blocks;
    *tb = (blk + 1) * tiles / blocks - *t0;
  };
  const int64_t mcw = chunk_width(s), chunks = (M + mcw - 1) / mcw;
  const int64_t uper = conv2d_winograd_packed_weight_floats(s, TM) / GROUPS, P = s.OH * s.OW;
  const int64_t base_units = s.N * blocks;
  int64_t parts = base_units >= threads ? 1 : (threads + base_units - 1) / base_units;
  if (threads > 1 && parts < threads && s.N * tiles < 2 * int64_t(threads) * kMR)
    parts = threads;
  if (parts > chunks) parts = chunks;
  const int64_t per_part = (chunks + parts - 1) / parts;
  parts = (chunks + per_part - 1) / per_part;
  // Input transform of channels [c0, c1) of block blk of image n into v: V[xi][c][t],
  // t = tile - t0.
  auto transform_in = [&](int64_t n, int64_t blk, int64_t c0, int64_t c1, float* v) {
    int64_t t0, tb;
    block_of(blk, &t0, &tb);
    const int64_t vs = xi_stride(C * tb);
    if constexpr (S2) {
      for (int64_t t = t0; t < t0 + tb; t += L) {
        const int cnt = int(t0 + tb - t < L ? t0 + tb - t : L);
        S2Lanes lanes;
        s2_lanes(s, TW, t, cnt, &lanes);
        // The input rows these tiles read, prefetched a channel ahead: the transform otherwise
        // waits on them (ResNet-50's 128-channel layer, whose input is 1.6 MB: 836 -> 792 us).
        const int64_t ty0 = t / TW, ty1 = (t + cnt - 1) / TW;
        const int64_t r0 = 8 * ty0 - s.PH < 0 ? 0 : 8 * ty0 - s.PH;
        const int64_t r1 = 8 * ty1 - s.PH + 9 < s.H ? 8 * ty1 - s.PH + 9 : s.H;
        for (int64_t c = c0; c < c1; ++c) {
          const float* xc = x + (n * C + c) * s.H * s.W;
          if (c + 1 < c1)
            for (int64_t f = r0 * s.W; f < r1 * s.W; f += 16)
              __builtin_prefetch(xc + s.H * s.W + f, 0, 3);
          input_s2(s, lanes, xc, v + c * tb + (t - t0), vs, cnt);
        }
      }
      return;
    }
    if (input_lanes_apply(TW, TM)) {
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t t = t0; t < t0 + tb; t += L)
          input_lanes<TM>(s, x + (n * C + c) * s.H * s.W, TW, t,
                          int(t0 + tb - t < L ? t0 + tb - t : L), v + c * tb + (t - t0), vs);
      return;
    }
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t t = t0; t < t0 + tb;) {
        const int64_t ty = t / TW, tx = t % TW;
        const int64_t seg = TW - tx < t0 + tb - t ? TW - tx : t0 + tb - t;
        input_segment<TM>(s, x + (n * C + c) * s.H * s.W, ty, tx, seg, v + c * tb + (t - t0),
                          vs);
        t += seg;
      }
  };
  // The GEMMs and output transform of part `part`'s output-channel chunks from V in v.
  auto products_out = [&](int64_t n, int64_t blk, int64_t part, const float* v, float* buf) {
    float* mo = buf + sc.m;
    int64_t t0, tb;
    block_of(blk, &t0, &tb);
    const int64_t vs = xi_stride(C * tb), ms = xi_stride(tb * mcw);
    // The block's strips: a whole first strip (it runs while U's panel comes from memory), the
    // rest as even as kMR allows (25 tiles: 12, 7, 6, not 12, 12, 1: a strip of one or two rows
    // waits on its fmas' latency). 16 tiles stay 12, 4: as 8, 8 the 14x14 layers at 2 threads
    // were 5-8% slower.
    const int64_t first = tb < kMR ? tb : kMR, rest = (tb - first + kMR - 1) / kMR;
    auto strip_row = [&](int64_t q) { return q == 0 ? 0 : first + (q - 1) * (tb - first) / rest; };
    const int64_t ch1 = (part + 1) * per_part < chunks ? (part + 1) * per_part : chunks;
    for (int64_t ch = part * per_part; ch < ch1; ++ch) {
      const int64_t mc0 = ch * mcw, cols = M - mc0 < mcw ? M - mc0 : mcw;
      // The XI GEMMs of the chunk: mo[xi][t][m - mc0]; per weight matrix g, those of its
      // positions (one for stride 1), each panel of U_g for all of them in turn.
      for (int g = 0; g < GROUPS; ++g) {
        int pos[16];
        const int np = group_positions<S2>(g, pos);
        const float* ux = w_packed + g * uper + (mc0 / kNR) * C * kNR;
        for (int64_t j = 0; j < cols; j += kNR) {
          const bool narrow = cols - j <= L;
          // The panel after this one (the next g's first past the chunk's last), fetched
          // during this panel's first strip: U streams from memory when it is not in cache.
          const float* next = j + kNR < cols    ? ux + (j / kNR + 1) * C * kNR
                              : g + 1 < GROUPS ? ux + uper
                                               : nullptr;
          for (int k = 0; k < np; ++k) {
            const float* vx = v + pos[k] * vs;
            float* mx = mo + pos[k] * ms;
            for (int64_t q = 0; q <= rest; ++q) {
              const int64_t r = strip_row(q);
              const int rows = int((q == rest ? tb : strip_row(q + 1)) - r);
              tile_rows<kMR>(rows, narrow, C, vx + r, tb, ux + (j / kNR) * C * kNR,
                             mx + r * mcw + j, mcw, k == 0 && q == 0 ? next : nullptr);
            }
          }
        }
      }
      // Output transform, bias, residual, activation into y.
      float* ob = buf + sc.out;
      // Channel groups outside, tiles inside: consecutive tiles fill the same lines of y.
      for (int64_t g = 0; g < cols; g += L) {
        const int nl = int(cols - g < L ? cols - g : L);
        for (int64_t t = 0; t < tb; ++t) {
          const int64_t ty = (t0 + t) / TW, tx = (t0 + t) % TW;
          const int64_t oh0 = TM * ty, ow0 = TM * tx;
          const int rh = int(s.OH - oh0 < TM ? s.OH - oh0 : TM);
          const int rw = int(s.OW - ow0 < TM ? s.OW - ow0 : TM);
          const int64_t yo = (n * M + mc0 + g) * P + oh0 * s.OW + ow0;
          if constexpr (S2)
            output_group<true>(mo + t * mcw + g, ms, bias ? bias + mc0 + g : nullptr, nl, rh, rw,
                               y + yo, e.residual ? e.residual + yo : nullptr, P, s.OW, e.act,
                               ob);
          else if constexpr (TM == 4)
            output_group(mo + t * mcw + g, ms, bias ? bias + mc0 + g : nullptr, nl, rh, rw,
                         y + yo, e.residual ? e.residual + yo : nullptr, P, s.OW, e.act, ob);
          else
            output_group2(mo + t * mcw + g, ms, bias ? bias + mc0 + g : nullptr, nl, rh, rw,
                          y + yo, e.residual ? e.residual + yo : nullptr, P, s.OW, e.act, ob);
        }
      }
    }
  };
  if (parts == 1) {
    parallel_for(pool, base_units, [&](int64_t unit, int tid) {
      float* buf = scratch + int64_t(tid) * sc.total;
      transform_in(unit / blocks, unit % blocks, 0, C, buf + sc.v);
      products_out(unit / blocks, unit % blocks, 0, buf + sc.v, buf);
    });
    return;
  }
  // Parts share a block's V: the threads transform its channels together into the first
  // thread's V, then each part reads it (ResNet-50's 14x14 layer at 2 threads: each part redid
  // the whole transform, 0.12 of 0.52 ms).
  constexpr int64_t kChannelsPerUnit = 16;
  float* shared_v = scratch + sc.v;
  for (int64_t unit = 0; unit < base_units; ++unit) {
    const int64_t n = unit / blocks, blk = unit % blocks;
    parallel_for(pool, (C + kChannelsPerUnit - 1) / kChannelsPerUnit, [&](int64_t u, int) {
      const int64_t c0 = u * kChannelsPerUnit;
      transform_in(n, blk, c0, C < c0 + kChannelsPerUnit ? C : c0 + kChannelsPerUnit, shared_v);
    });
    parallel_for(pool, parts, [&](int64_t part, int tid) {
      products_out(n, blk, part, shared_v, scratch + int64_t(tid) * sc.total);
    });
  }
}

}  // namespace winograd_detail

/// y = conv(x, w) + bias, then the epilogue (e.residual with y's NCHW layout, then e.act), x
/// [N, C, H, W], y [N, M, OH, OW]; bias [M] or null; e.row_bias / e.col_bias are null (unused).
/// w_packed from conv2d_winograd_pack_weights; scratch: conv2d_winograd_scratch_floats (at
/// least the pool's threads).
template <class Act>
inline void conv2d_winograd_f32(const Conv2dShape& s, const float* x, const float* w_packed,
                                const float* bias, float* y, const Epilogue<Act>& e,
                                float* scratch, ThreadPool* pool) {
  winograd_detail::conv2d<4, false>(s, x, w_packed, bias, y, e, scratch, pool);
}

/// conv2d_winograd_f32 by F(2x2, 3x3): w_packed from conv2d_winograd_pack_weights(s, w, dst,
/// 2), scratch conv2d_winograd_scratch_floats(s, threads, 2).
template <class Act>
inline void conv2d_winograd2_f32(const Conv2dShape& s, const float* x, const float* w_packed,
                                 const float* bias, float* y, const Epilogue<Act>& e,
                                 float* scratch, ThreadPool* pool) {
  winograd_detail::conv2d<2, false>(s, x, w_packed, bias, y, e, scratch, pool);
}

/// conv2d_winograd_f32 for 3x3 stride-2 convs (conv2d_winograd_s2_applies) by their four
/// stride-1 phases: w_packed from conv2d_winograd_pack_weights(s, w, dst) (the shape's stride
/// picks the stride-2 transform), scratch conv2d_winograd_scratch_floats(s, threads).
template <class Act>
inline void conv2d_winograd_s2_f32(const Conv2dShape& s, const float* x, const float* w_packed,
                                   const float* bias, float* y, const Epilogue<Act>& e,
                                   float* scratch, ThreadPool* pool) {
  winograd_detail::conv2d<4, true>(s, x, w_packed, bias, y, e, scratch, pool);
}

}  // namespace kiln_cpu
