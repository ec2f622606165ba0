// kiln optimized CPU kernels: f32 3x3 stride-1 convolution by Winograd F(4x4, 3x3) (NCHW), and
// by F(2x2, 3x3) for small images (conv2d_winograd2_f32: the same driver with 2x2 tiles, 16
// transformed positions; its transforms are described at input_1d2 in winograd_input.h); 3x3
// stride 2 by its four stride-1 phases (conv2d_winograd_s2_f32: 81 positions, 36 weight
// matrices; see input_1d_s2 in winograd_s2.h). The input transforms are in winograd_input.h,
// the output transforms in winograd_output.h, the weight transforms in winograd_weights.h.
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
//    of [C][kNR], zero past M, in the order the GEMMs read them: chunk by chunk of output
//    channels (two panels, winograd_chunk_width), in a chunk xi by xi
//    (winograd_transform_weights), so each chunk's U is one contiguous stream from memory.
//  * V_xi is written by the input transform as [xi][c][tile] (tiles contiguous): the transform
//    runs with the tiles of a tile row in the vector lanes (input rows split into 4 column
//    phases with deinterleave2, so lane t reads columns 4t..4t+5); on AVX-512, images of fewer
//    tiles per row than lanes put consecutive tiles across tile rows in the lanes instead
//    (input_lanes: 16 tiles of a 14x14 image per vector, not 4), and the register tile reads
//    its 12 tiles of channel c as 12 consecutive floats (the stride between channels is the
//    block's tile count). Each register tile runs all C channels in registers, c ascending,
//    then is stored to M_xi[tile][m] (a chunk of at most two panels at a time). This
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
#include "winograd_input.h"
#include "winograd_output.h"
#include "winograd_s2.h"
#include "winograd_weights.h"

namespace kiln_cpu {

namespace winograd_detail {

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
/// Width of one output-channel chunk (two panels; fewer where M has fewer): U's layout's.
constexpr int64_t chunk_width(const Conv2dShape& s) {
  return winograd_chunk_width(s.M, kNR);
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
  const int64_t mcw = chunk_width(s), chunks = (M + mcw - 1) / mcw, P = s.OH * s.OW;
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
      // The chunk's U (winograd_transform_weights' layout): its weight matrices one after
      // the other, each its panels, so the chunk streams from memory in one run.
      const int64_t pw = (cols + kNR - 1) / kNR * kNR;
      const float* uc = w_packed + mc0 * GROUPS * C;
      // The XI GEMMs of the chunk: mo[xi][t][m - mc0]; per weight matrix g, those of its
      // positions (one for stride 1), each panel of U_g for all of them in turn.
      for (int g = 0; g < GROUPS; ++g) {
        int pos[16];
        const int np = group_positions<S2>(g, pos);
        const float* ux = uc + g * pw * C;
        for (int64_t j = 0; j < cols; j += kNR) {
          const bool narrow = cols - j <= L;
          // The panel after this one (the chunk's next, its next matrix's first, or the next
          // chunk's first of this part: the one that follows in memory), fetched during this
          // panel's first strip: U streams from memory when it is not in cache.
          const float* next = j + kNR < cols || g + 1 < GROUPS || ch + 1 < ch1
                                  ? ux + (j / kNR + 1) * C * kNR
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
