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
// im2col matrix [K, P] built in scratch per image (channels-last output: per block of pixels,
// or phase planes per band of rows, conv2d_pixrows_planes). Each tile of kMR pixels x kNR
// channels sums all of K in registers (k ascending: its order does not depend on the thread
// count), then goes through the epilogue and into Y column by column: a column of the tile is
// kMR pixels of one channel, contiguous in Y. Work units are (channel panel, pixel strip)
// pairs, panel-major, so consecutive units reuse the panel's weights from L2.
#pragma once

#include <cstdint>

#include "conv.h"
#include "conv_direct.h"
#include "conv_im2col.h"

namespace kiln_cpu {

static_assert(kMR <= V::kLanes, "a tile's column (kMR pixels) must fit one vector");

constexpr bool conv2d_pixrows_applies(const Conv2dShape& s) { return s.group == 1; }

/// Bytes of A (a K-chunk's rows of the im2col matrix, or of X read in place) and of two
/// channel panels' chunks (the tiles' and the one being prefetched) that conv2d_pixrows_f32
/// keeps in L2 at once. K is cut into chunks that fit: ResNet-50's 14x14 -> 7x7 stride-2 conv
/// (K = 4608, P = 49) would otherwise stream 0.9 MB of im2col and a 0.6 MB panel through a
/// 1 MB L2 for every tile (KILN_CPU_L2_SHARE_BYTES: simd.h).
constexpr int64_t kPixrowsChunkBytes = KILN_CPU_L2_SHARE_BYTES;

/// K-chunks of conv2d_pixrows_f32: the fewest whose A and panel rows fit kPixrowsChunkBytes,
/// for images of at most 4 kNR pixels (a panel at least a quarter of A). There the panel,
/// re-read by every strip, is what spills from L2. With larger images (ResNet-50's 14x14
/// stage) A spills instead and chunks cost more than they save: 2 threads ran its K = 1024
/// and 2304 convs 7-13% slower in chunks.
constexpr int64_t conv2d_pixrows_chunks(const Conv2dShape& s) {
  const int64_t K = s.C * s.KH * s.KW, P = s.OH * s.OW;
  if (P > 4 * kNR) return 1;
  const int64_t per_k = (P + 2 * kNR) * int64_t(sizeof(float));
  const int64_t c = (K * per_k + kPixrowsChunkBytes - 1) / kPixrowsChunkBytes;
  return c < 1 ? 1 : (c > K ? K : c);
}

/// Rows of a K-chunk (the last may have fewer).
constexpr int64_t conv2d_pixrows_chunk_rows(const Conv2dShape& s) {
  const int64_t K = s.C * s.KH * s.KW, c = conv2d_pixrows_chunks(s);
  return (K + c - 1) / c;
}

/// Scratch floats of conv2d_pixrows_f32: a K-chunk of one image's im2col matrix [K, P] (none
/// for a pointwise conv), then with several chunks the tiles' partial sums (kMR x kNR each).
constexpr int64_t conv2d_pixrows_scratch_floats(const Conv2dShape& s) {
  const int64_t P = s.OH * s.OW, strips = (P + kMR - 1) / kMR, panels = (s.M + kNR - 1) / kNR;
  const int64_t a = conv2d_pointwise(s) ? 0 : (conv2d_pixrows_chunk_rows(s) * P + 15) / 16 * 16;
  return a + (conv2d_pixrows_chunks(s) > 1 ? panels * strips * kMR * kNR : 0);
}

/// Pixels per block of conv2d_pixrows_nhwc_f32: whole strips whose im2col (K x block) fits
/// 64 KiB, at least one strip, at most the image.
constexpr int64_t conv2d_pixrows_block(const Conv2dShape& s) {
  const int64_t K = s.C * s.KH * s.KW, P = s.OH * s.OW;
  int64_t strips = (int64_t(1) << 14) / (K * kMR);
  if (strips < 1) strips = 1;
  const int64_t b = strips * kMR;
  return b < P ? b : P;
}

/// Output rows per band of conv2d_pixrows_nhwc_f32's phase planes (conv2d_pixrows_planes).
constexpr int64_t kPixrowsPlaneBandRows = 4;

/// Whether conv2d_pixrows_nhwc_f32 reads A from phase planes (conv_direct.h's layout, a band
/// of kPixrowsPlaneBandRows output rows at a time) instead of an im2col block: a kernel wider
/// than 1x1, at most 64 taps, begin pads inside the kernel's extent. A tile is kMR pixels of
/// one output row: for tap k their inputs are kMR consecutive floats of one plane, broadcast
/// from there. MobileNetV2's stem (3 -> 32, 3x3 stride 2, 224x224): 167-172 -> 146-148 us at 1
/// thread, the same sums (bit-identical to the im2col path).
constexpr bool conv2d_pixrows_planes(const Conv2dShape& s) {
  return !conv2d_pointwise(s) && s.KH * s.KW > 1 && s.KH * s.KW <= 64 &&
         s.PH <= (s.KH - 1) * s.DH && s.PW <= (s.KW - 1) * s.DW;
}

/// Scratch floats of conv2d_pixrows_nhwc_f32 for `threads` threads: a band's phase planes each
/// (conv2d_pixrows_planes), else a block's im2col each; none for a pointwise conv.
constexpr int64_t conv2d_pixrows_nhwc_scratch_floats(const Conv2dShape& s, int threads) {
  if (conv2d_pixrows_planes(s))
    return conv_direct_detail::planes_for_band(
               s, s.OH < kPixrowsPlaneBandRows ? s.OH : kPixrowsPlaneBandRows)
               .floats *
           threads;
  return conv2d_pointwise(s) ? 0 : s.C * s.KH * s.KW * conv2d_pixrows_block(s) * threads;
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

/// What a tile prefetches besides its k loop's operands: `ahead_lines` 64-byte lines from
/// `ahead` (part of the next channel panel), to L2, evenly over the k loop; and one in eight of
/// the same lines of the panel after that (`far`), a hint that starts the hardware prefetcher's
/// stream on it a panel early, as the Winograd conv's U panels do.
struct TileAux {
  const float* ahead = nullptr;
  int64_t ahead_lines = 0;
  const float* far = nullptr;
  /// K-chunks: the sums so far (null: start from zero), and where to leave them instead of
  /// finishing the tile (null: the last chunk). kMR rows of kNR floats.
  const float* sums_in = nullptr;
  float* sums_out = nullptr;
  /// Up to this k step, A's lines kFarA steps ahead are also asked for (into L2): at 2+
  /// threads, where the op before left half of the input in the other core's cache and the
  /// 8-step prefetch is too late for it (0: none; at 1 thread they cost 1.5% of ResNet-50).
  int64_t far_a_until = 0;
};

/// How far ahead (k steps) TileAux::far_a_until prefetches A.
constexpr int64_t kFarA = 40;

/// One tile: R pixels [p0, p0 + R) x `cols` channels [m0, m0 + cols) of an image's output
/// (M channels; kNhwc: y and e.residual are [P, M], else [M, P]). a: A at the tile's first
/// pixel (element (r, k) at a[k * lda + r]); bp: the channel panel.
template <bool kNhwc, int R, int NV, class Act>
inline void tile(int64_t K, const float* a, int64_t lda, int64_t P, const float* bp, int cols,
                 const float* bias, const Epilogue<Act>& e, float* y, int64_t M, int64_t m0,
                 int64_t p0, const TileAux& aux) {
  constexpr int L = V::kLanes;
  V::R acc0[R], acc1[R];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) {
    acc0[r] = aux.sums_in ? V::load(aux.sums_in + r * kNR) : V::zero();
    acc1[r] = NV == 2 && aux.sums_in ? V::load(aux.sums_in + r * kNR + L) : V::zero();
  }
  const float* const ahead = aux.ahead;
  const int64_t ahead_lines = aux.ahead_lines;
  const float* const far = aux.far;
  // The panel's rows and A's rows (P floats apart) come from L2; prefetched kAhead steps on.
  // The residual's lines for the epilogue (from L3 in a model run): one of its rows per k
  // step, its first and last float (a row may straddle two lines).
  constexpr int64_t kAhead = 8;
  const int64_t res_rows = e.residual ? (kNhwc ? R : cols) : 0;
  const int64_t res_ld = kNhwc ? M : P, res_len = kNhwc ? cols : R;
  const float* res = e.residual ? e.residual + (kNhwc ? p0 * M + m0 : m0 * P + p0) : nullptr;
  // Written over the residual (EmitContext::outputOverInput): its lines are read for writing.
  // At 2 threads the other core has read them since (the block's first conv reads all of
  // them), and a line read for sharing makes the store wait on the other cache's copy being
  // invalidated: ResNet-50's 14x14 residual convs at 2 threads 375-390 -> 335-350 us.
  const bool in_place = res && res == y + (kNhwc ? p0 * M + m0 : m0 * P + p0);
  int64_t k = 0;
  const int64_t steps = K - kAhead;
  int64_t spread = 0, line = 0;
  for (; k + kAhead < K; ++k, a += lda, bp += kNR) {
    __builtin_prefetch(bp + kAhead * kNR, 0, 3);
    __builtin_prefetch(bp + kAhead * kNR + 16, 0, 3);
    __builtin_prefetch(a + kAhead * lda, 0, 3);
    if (k < aux.far_a_until) {
      __builtin_prefetch(a + kFarA * lda, 0, 2);
      __builtin_prefetch(a + kFarA * lda + R - 1, 0, 2);  // a tile's R floats may span 2 lines
    }
    if (k < res_rows) {
      if (in_place) {
        prefetch_write(res + k * res_ld);
        prefetch_write(res + k * res_ld + res_len - 1);
      } else {
        __builtin_prefetch(res + k * res_ld, 0, 3);
        __builtin_prefetch(res + k * res_ld + res_len - 1, 0, 3);
      }
    }
    // Line i of the next panel's share at step i * steps / ahead_lines: spread over the whole
    // k loop, not two a step from its start, which asked memory for a 49-pixel tile's share
    // (820 lines) in its first 410 steps (kiln_kernels_bench, weights from memory, 1 thread:
    // ResNet-50's 7x7 512 -> 2048 conv 141 -> 175 GFLOP/s, its 1024 -> 2048 stride-2 one 130 ->
    // 153; 2 threads 259 -> 312 and 236 -> 285).
    for (spread += ahead_lines; spread >= steps && line < ahead_lines; spread -= steps, ++line) {
      __builtin_prefetch(ahead + 16 * line, 0, 2);
      if ((line & 7) == 0 && far) __builtin_prefetch(far + 16 * line, 0, 2);
    }
    gemm_detail::rank1<R, NV>(a, bp, acc0, acc1);
  }
  for (; k < K; ++k, a += lda, bp += kNR) gemm_detail::rank1<R, NV>(a, bp, acc0, acc1);
  if (aux.sums_out) {
    // Not the last K-chunk: the sums wait in scratch, exactly, for the next chunk's k steps.
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) {
      V::store(aux.sums_out + r * kNR, acc0[r]);
      if constexpr (NV == 2) V::store(aux.sums_out + r * kNR + L, acc1[r]);
    }
    return;
  }
  if constexpr (kNhwc) {
    // Channels-last: the tile's rows are the pixels' rows of y, as a GEMM's would be.
    const Epilogue<Act> en = make_epilogue(e.act, nullptr, bias, e.residual, M);
    const gemm_detail::TileCols tc = gemm_detail::tile_cols(en, m0, cols, true);
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r)
      gemm_detail::finish_row(acc0[r], acc1[r], y + (p0 + r) * M + m0, cols, true, en, p0 + r,
                              m0, tc);
    return;
  }
  // Transposed write: each column of the tile (R pixels of one channel) becomes one vector,
  // goes through the epilogue and is stored to its contiguous place in Y.
  auto adds = [&](int j, V::R v) {
    const int64_t m = m0 + j;
    if (bias) v = V::add(v, V::set1(bias[m]));
    if (e.residual) v = V::add(v, V::load(e.residual + m * P + p0, R));
    return v;
  };
  auto out = [&](int j, V::R v) {
    v = ActInRegister<Act>::apply(e.act, v);
    float* yo = y + (m0 + j) * P + p0;
    V::store(yo, v, R);
    if constexpr (!ActInRegister<Act>::kYes)
      for (int r = 0; r < R; ++r) yo[r] = act_value(e.act, yo[r]);
  };
#if defined(KILN_CPU_AVX512)
  if constexpr (kMR == 12) {
    // In registers (a gather per column cost 9% of a K = 256 tile).
    V::R rows[12], col[16];
    KILN_CPU_UNROLL
    for (int h = 0; h < NV; ++h) {
      KILN_CPU_UNROLL
      for (int r = 0; r < 12; ++r) rows[r] = r < R ? (h == 0 ? acc0[r] : acc1[r]) : V::zero();
      gemm_detail::transpose12x16(rows, col);
      const int n = cols - 16 * h < 16 ? cols - 16 * h : 16;
      // Every column's residual loaded before any column is stored (a load behind a store to
      // y waits on it when their addresses match modulo 4 KiB; the residual may be y itself).
      KILN_CPU_UNROLL
      for (int j = 0; j < 16; ++j)
        if (j < n) col[j] = adds(16 * h + j, col[j]);
      KILN_CPU_UNROLL
      for (int j = 0; j < 16; ++j)
        if (j < n) out(16 * h + j, col[j]);
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
  for (int j = 0; j < cols; ++j) out(j, adds(j, V::load_strided(t + j, kNR, R)));
}

template <bool kNhwc, int R, class Act>
inline void tile_rows(int rows, int64_t K, const float* a, int64_t lda, int64_t P,
                      const float* bp, int cols, const float* bias, const Epilogue<Act>& e,
                      float* y, int64_t M, int64_t m0, int64_t p0, const TileAux& aux = {}) {
  if constexpr (R > 1) {
    if (rows < R)
      return tile_rows<kNhwc, R - 1>(rows, K, a, lda, P, bp, cols, bias, e, y, M, m0, p0, aux);
  }
  if (cols <= V::kLanes)
    tile<kNhwc, R, 1>(K, a, lda, P, bp, cols, bias, e, y, M, m0, p0, aux);
  else
    tile<kNhwc, R, 2>(K, a, lda, P, bp, cols, bias, e, y, M, m0, p0, aux);
}

/// One channels-last tile from phase planes: R pixels of one output row x `cols` channels
/// [m0, m0 + cols) into y [P, M] at pixel p0. xp: the planes at the tile's first pixel (tap t of
/// channel c at xp + c * channel + tap[t]); bp: the channel panel. The k order and the fmas are
/// tile<true>'s over the im2col block, so the values are the same.
template <int R, int NV, class Act>
inline void plane_tile(int64_t K, const float* xp, int64_t channel, const int64_t* tap,
                       int64_t taps, const float* bp, int cols, const float* bias,
                       const Epilogue<Act>& e, float* y, int64_t M, int64_t m0, int64_t p0) {
  V::R acc0[R], acc1[R];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = V::zero();
  const float* xc = xp;
  for (int64_t k = 0, t = 0; k < K; ++k, bp += kNR) {
    gemm_detail::rank1<R, NV>(xc + tap[t], bp, acc0, acc1);
    if (++t == taps) {
      t = 0;
      xc += channel;
    }
  }
  const Epilogue<Act> en = make_epilogue(e.act, nullptr, bias, e.residual, M);
  const gemm_detail::TileCols tc = gemm_detail::tile_cols(en, m0, cols, true);
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r)
    gemm_detail::finish_row(acc0[r], acc1[r], y + (p0 + r) * M + m0, cols, true, en, p0 + r, m0,
                            tc);
}

template <int R, class Act>
inline void plane_tile_rows(int rows, int64_t K, const float* xp, int64_t channel,
                            const int64_t* tap, int64_t taps, const float* bp, int cols,
                            const float* bias, const Epilogue<Act>& e, float* y, int64_t M,
                            int64_t m0, int64_t p0) {
  if constexpr (R > 1) {
    if (rows < R)
      return plane_tile_rows<R - 1>(rows, K, xp, channel, tap, taps, bp, cols, bias, e, y, M,
                                    m0, p0);
  }
  if (cols <= V::kLanes)
    plane_tile<R, 1>(K, xp, channel, tap, taps, bp, cols, bias, e, y, M, m0, p0);
  else
    plane_tile<R, 2>(K, xp, channel, tap, taps, bp, cols, bias, e, y, M, m0, p0);
}

/// conv2d_pixrows_nhwc_f32 from phase planes (conv2d_pixrows_planes): units are bands of
/// kPixrowsPlaneBandRows output rows of one image, each thread filling the band's planes in
/// its scratch; a band's rows are cut into tiles of balanced widths (112 pixels: 10 tiles of
/// 11 or 12, not 9 of 12 and one of 4).
template <class Act>
inline void conv2d_pixrows_planes_nhwc(const Conv2dShape& s, const float* x,
                                       const float* w_panels, const float* bias, float* y,
                                       const Epilogue<Act>& e, float* scratch, ThreadPool* pool) {
  namespace cd = conv_direct_detail;
  const int64_t band = s.OH < kPixrowsPlaneBandRows ? s.OH : kPixrowsPlaneBandRows;
  const cd::Planes d = cd::planes_for_band(s, band);
  const int64_t taps = s.KH * s.KW, K = s.C * taps, P = s.OH * s.OW, M = s.M;
  const int64_t bands = (s.OH + band - 1) / band, panels = (M + kNR - 1) / kNR;
  const int64_t tiles = (s.OW + kMR - 1) / kMR;
  int64_t tap[64];
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t ri = (t / s.KW) * s.DH, cj = (t % s.KW) * s.DW;
    tap[t] = ((ri % s.SH) * s.SW + cj % s.SW) * d.plane + (ri / s.SH) * d.Wq + cj / s.SW;
  }
  parallel_for(pool, s.N * bands, [&](int64_t unit, int tid) {
    const int64_t n = unit / bands, oh0 = unit % bands * band;
    const int64_t oh1 = s.OH < oh0 + band ? s.OH : oh0 + band;
    float* xp = scratch + int64_t(tid) * d.floats;
    const float* xn = x + n * s.C * s.H * s.W;
    for (int64_t c = 0; c < s.C; ++c)
      cd::fill_planes(s, d, oh0, xn + c * s.H * s.W, xp + c * d.channel);
    zero_floats(xp + s.C * d.channel, d.floats - s.C * d.channel);
    Epilogue<Act> en = e;
    en.residual = e.residual ? e.residual + n * P * M : nullptr;
    float* yn = y + n * P * M;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t ow0 = t * s.OW / tiles, ow1 = (t + 1) * s.OW / tiles;
        for (int64_t q = 0; q < panels; ++q)
          plane_tile_rows<kMR>(int(ow1 - ow0), K, xp + (oh - oh0) * d.Wq + ow0, d.channel, tap,
                               taps, w_panels + q * K * kNR,
                               int(M - q * kNR < kNR ? M - q * kNR : kNR), bias, en, yn, M,
                               q * kNR, oh * s.OW + ow0);
      }
  });
}

/// The driver of conv2d_pixrows_f32 and conv2d_pixrows_nhwc_f32. Channels-first output
/// (small images): one im2col matrix per image, units (channel panel, pixel strip), so even 49
/// pixels give every thread work. Channels-last (a network's stem: 12544 pixels, K = 27): units
/// are blocks of conv2d_pixrows_block(s) pixels, each thread building its block's im2col in its
/// scratch, where the tiles then find it in L2 (one im2col of the whole image is 27 streams
/// through L3 for every strip).
template <bool kNhwc, class Act>
inline void conv2d_pixrows(const Conv2dShape& s, const float* x, const float* w_panels,
                           const float* bias, float* y, const Epilogue<Act>& e, float* scratch,
                           ThreadPool* pool) {
  const int64_t K = s.C * s.KH * s.KW, P = s.OH * s.OW, M = s.M;
  const int64_t strips = (P + kMR - 1) / kMR, panels = (M + kNR - 1) / kNR;
  const bool pointwise = conv2d_pointwise(s);
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * s.H * s.W;
    Epilogue<Act> en = e;
    en.residual = e.residual ? e.residual + n * M * P : nullptr;
    float* yn = y + n * M * P;
    if (kNhwc && !pointwise) {
      const int64_t PB = conv2d_pixrows_block(s), blocks = (P + PB - 1) / PB;
      parallel_for(pool, blocks, [&](int64_t u, int tid) {
        const int64_t b0 = u * PB, pc = P - b0 < PB ? P - b0 : PB;
        float* a = scratch + tid * K * PB;
        im2col_rows(s, xn, 0, K, b0, pc, a, PB);
        for (int64_t r = 0; r < pc; r += kMR)
          for (int64_t q = 0; q < panels; ++q) {
            const int rows = int(pc - r < kMR ? pc - r : kMR);
            const int cols = int(M - q * kNR < kNR ? M - q * kNR : kNR);
            tile_rows<kNhwc, kMR>(rows, K, a + r, PB, P, w_panels + q * K * kNR, cols, bias, en,
                                  yn, M, q * kNR, b0 + r);
          }
      });
      continue;
    }
    // K in chunks whose A and panel rows stay in L2 (conv2d_pixrows_chunks); between chunks a
    // tile's sums wait in scratch, so its k order, and so its value, is the unchunked one.
    // (Channels-last output reaches here only pointwise, with no scratch: one chunk.)
    const int64_t chunks = kNhwc ? 1 : conv2d_pixrows_chunks(s);
    const int64_t KC = kNhwc ? K : conv2d_pixrows_chunk_rows(s);
    float* const sums = chunks > 1 ? scratch + (pointwise ? 0 : (KC * P + 15) / 16 * 16) : nullptr;
    // The panels' chunks in the order the tiles take them (chunk-major): a pointer to the
    // i-th and its lines, or null past the last.
    auto panel_chunk = [&](int64_t i, int64_t* lines) -> const float* {
      if (i >= chunks * panels) return nullptr;
      const int64_t k0 = i / panels * KC;
      *lines = (K - k0 < KC ? K - k0 : KC) * kNR / 16;
      return w_panels + (i % panels) * K * kNR + k0 * kNR;
    };
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t k0 = c * KC, kc = K - k0 < KC ? K - k0 : KC;
      const float* a = xn + k0 * P;
      if (!pointwise) {
        constexpr int64_t kRowsPerUnit = 32;
        parallel_for(pool, (kc + kRowsPerUnit - 1) / kRowsPerUnit, [&](int64_t u, int) {
          const int64_t r0 = k0 + u * kRowsPerUnit;
          const int64_t r1 = r0 + kRowsPerUnit < k0 + kc ? r0 + kRowsPerUnit : k0 + kc;
          float* dst = scratch + (r0 - k0) * P;
          if (plane_floats(s) > 0)
            im2col_plane_rows(s, xn, r0, r1, dst, P);
          else
            im2col_rows(s, xn, r0, r1, 0, P, dst, P);
        });
        a = scratch;
      }
      const bool last = c + 1 == chunks;
      Epilogue<Act> ec = en;
      if (!last) ec.residual = nullptr;  // not read before the last chunk
      // Each strip of a panel prefetches its share of the next panel chunk's lines to L2: at
      // batch 1 a deep layer's weights come from memory (ResNet-50's 7x7 stage: 4-9 MB a
      // layer, read once), and a panel's first strip would otherwise wait on them.
      parallel_for(pool, panels * strips, [&](int64_t u, int) {
        // Strips of balanced heights (49 pixels: 10, 10, 10, 10, 9, not 12, 12, 12, 12, 1): a
        // tile of a few rows waits on its fma chains' latency.
        const int64_t q = u / strips, t = u % strips, m0 = q * kNR;
        const int64_t p0 = t * P / strips;
        const int rows = int((t + 1) * P / strips - p0);
        const int cols = int(M - m0 < kNR ? M - m0 : kNR);
        TileAux aux;
        if (pool && pool->size() > 1) aux.far_a_until = kc - kFarA;
        int64_t next_lines = 0, far_lines = 0;
        const float* next = panel_chunk(c * panels + q + 1, &next_lines);
        const float* far = panel_chunk(c * panels + q + 2, &far_lines);
        const int64_t share = (next_lines + strips - 1) / strips, first = t * share;
        if (next && first < next_lines) {
          aux.ahead_lines = next_lines - first < share ? next_lines - first : share;
          aux.ahead = next + first * 16;
          if (far && first < far_lines) aux.far = far + first * 16;
        }
        if (sums) {
          float* tile_sums = sums + u * kMR * kNR;
          if (c > 0) aux.sums_in = tile_sums;
          if (!last) aux.sums_out = tile_sums;
        }
        tile_rows<kNhwc, kMR>(rows, kc, a + p0, P, P, w_panels + q * K * kNR + k0 * kNR, cols,
                              bias, ec, yn, M, m0, p0, aux);
      });
    }
  }
}

}  // namespace pixrows_detail

/// Y = conv(X, W) + bias, then the epilogue (residual with y's layout, activation). x [N, C, H,
/// W], w_panels from conv2d_pixrows_pack_weights, bias [M] or null, y [N, M, OH, OW], scratch
/// of conv2d_pixrows_scratch_floats(s) floats (shared by the threads). Group 1 only.
template <class Act>
inline void conv2d_pixrows_f32(const Conv2dShape& s, const float* x, const float* w_panels,
                               const float* bias, float* y, const Epilogue<Act>& e,
                               float* scratch, ThreadPool* pool) {
  pixrows_detail::conv2d_pixrows<false>(s, x, w_panels, bias, y, e, scratch, pool);
}

/// The same conv with y (and e.residual) channels-last, [N, OH, OW, M]: x stays [N, C, H, W].
/// scratch: conv2d_pixrows_nhwc_scratch_floats(s, threads) for the pool's threads (or 1).
/// The tiles' rows are y's rows, so nothing is transposed; the sums are conv2d_pixrows_f32's
/// (bit-identical values). For a conv whose output enters an NHWC region (MobileNetV2's stem).
template <class Act>
inline void conv2d_pixrows_nhwc_f32(const Conv2dShape& s, const float* x, const float* w_panels,
                                    const float* bias, float* y, const Epilogue<Act>& e,
                                    float* scratch, ThreadPool* pool) {
  if (conv2d_pixrows_planes(s))
    return pixrows_detail::conv2d_pixrows_planes_nhwc(s, x, w_panels, bias, y, e, scratch, pool);
  pixrows_detail::conv2d_pixrows<true>(s, x, w_panels, bias, y, e, scratch, pool);
}

}  // namespace kiln_cpu
