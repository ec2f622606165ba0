// kiln optimized CPU kernels: a 1x1 "expand" conv fused into the depthwise conv that reads it,
// on NHWC data (MobileNetV2's inverted residual blocks, whose 1x1 conv multiplies the channels
// by 6 before a 3x3 depthwise conv):
//   E = act1(X * W1^T + b1)                         X [N, H, W, Cin], E [N, H, W, C]
//   Y = act2(depthwise(E, Wd) + bd (+ residual))    Y [N, OH, OW, C]
// without E in memory. Per band of output rows, the E rows its windows read are computed into
// a per-thread buffer that stays in L2 (gemm_f32_rowa_packed_b over those rows' pixels, as the
// unfused 1x1 conv computes them), and the band's output rows are read from there
// (nhwc_detail::dw_output_row, as the unfused depthwise conv reads E). Every sum is the unfused
// kernels' own, so Y is bit-identical to running the two convs apart; what changes is that the
// largest tensor of the block (MobileNetV2's 112x112x96: 4.8 MB) is neither written to nor
// read back from memory. Neighbouring bands' windows share KH - SH rows of E, which both
// compute. Units are (image, band) pairs: bit-identical at any thread count.
//
// And a depthwise conv fused into the 1x1 "projection" conv that alone reads its output
// (MobileNetV2's blocks again, the other end):
//   D = act1(depthwise(X, Wd) + bd)                 X [N, H, W, C], D [N, OH, OW, C]
//   Y = act2(D * Wp^T + bp (+ residual))            Y [N, OH, OW, M]
// Per band of output rows, D's rows go to a per-thread buffer (nhwc_detail::dw_output_row) and
// the projection's GEMM reads them from there (gemm_f32_rowa_packed_b over the band's pixels).
// Bands share no rows of D, so nothing is computed twice; D never goes to memory, and a thread
// projects the rows it has just computed. Bit-identical to the two convs apart.
#pragma once

#include <cstdint>
#include <cstring>

#include "conv_nhwc.h"
#include "gemm.h"

namespace kiln_cpu {

/// Floats of E one band may hold: three halves of the L2 share at one thread (768 KiB where the
/// share is 512 KiB, three quarters of a 1 MiB L2), the share at more. Neighbouring bands both
/// compute the KH - SH rows of E they share, so larger bands compute fewer twice: MobileNetV2
/// at 1 thread ran 1.6% faster with 768 KiB than with 512 (1 MiB: 0.8% slower). At 2 threads
/// 768 KiB measured no faster and added 258 KB to MobileNetV2's arena (a band per thread).
/// Session 30, a Zen 1 with a 512 KiB L2: 768 KiB bands spilled E to L3 (the share there is 256
/// KiB: bands of 384 KiB at 1 thread).
constexpr int64_t expand_dw_band_floats(int threads) {
  return (threads > 1 ? KILN_CPU_L2_SHARE_BYTES : KILN_CPU_L2_SHARE_BYTES * 3 / 2) / 4;
}

/// Rows of E that `rows` output rows of the depthwise conv s read (at most; fewer at borders).
constexpr int64_t expand_dw_in_rows(const Conv2dShape& s, int64_t rows) {
  return (rows - 1) * s.SH + (s.KH - 1) * s.DH + 1;
}

/// Output rows per band for the depthwise conv s (its input is E: s.C channels of s.H x s.W):
/// the most whose E rows fit expand_dw_band_floats, at least one, and few enough that every
/// thread gets two bands.
constexpr int64_t expand_dw_band_rows(const Conv2dShape& s, int threads) {
  int64_t rows = s.OH;
  while (rows > 1 && expand_dw_in_rows(s, rows) * s.W * s.C > expand_dw_band_floats(threads))
    --rows;
  const int64_t even = (s.N * s.OH + 2 * threads - 1) / (2 * threads);
  if (threads > 1 && even < rows) rows = even > 0 ? even : 1;
  return rows;
}

/// Scratch floats: one band of E per thread.
constexpr int64_t expand_dw_scratch_floats(const Conv2dShape& s, int threads) {
  const int64_t in = expand_dw_in_rows(s, expand_dw_band_rows(s, threads));
  return ((in < s.H ? in : s.H) * s.W * s.C + 15) / 16 * 16 * threads;
}

/// Spans of output rows per image: each a unit of work whose bands run in order, passing the
/// E rows two bands share from one to the next (one span at one thread; two per thread at
/// more, at most the bands, so that the pool can even out the threads' shares).
constexpr int64_t expand_dw_spans(const Conv2dShape& s, int threads) {
  const int64_t band = expand_dw_band_rows(s, threads), bands = (s.OH + band - 1) / band;
  const int64_t want = threads > 1 ? 2 * int64_t(threads) : 1;
  return bands < want ? bands : want;
}

/// The fused pair. s: the depthwise conv (group == C == M; its input E has s.C channels); Cin:
/// X's channels; w1_panels: W1^T [Cin, C] packed by pack_b_panels; b1: [C] or null; act1: the
/// 1x1 conv's activation; wd: the depthwise filter tap-major (depthwise_nhwc_pack_weights);
/// bd: [C] or null; e: the depthwise conv's epilogue (residual [N, OH, OW, C] or null, act2).
/// scratch: expand_dw_scratch_floats(s, threads), for at least the pool's thread count (the
/// bands are sized for `threads`; a pool lowered at run time uses fewer of them).
/// Units are spans of output rows (expand_dw_spans); inside a span, each band's E rows that
/// the last band computed too (the KH - SH rows their windows share) move to the front of the
/// buffer and only the new rows are computed: E is computed once per row but at the spans'
/// borders (before session 30 every band recomputed them: 6-17% more expand work on
/// MobileNetV2's shapes with bands of a 512 KiB L2's share).
template <class Act1, class Act2>
inline void nhwc_expand_dw_f32(const Conv2dShape& s, int64_t Cin, const float* x,
                               const float* w1_panels, const float* b1, Act1 act1,
                               const float* wd, const float* bd, float* y,
                               const Epilogue<Act2>& e, float* scratch, int threads,
                               ThreadPool* pool) {
  if (s.N <= 0 || s.C <= 0 || s.OH <= 0 || s.OW <= 0) return;
  const int64_t band = expand_dw_band_rows(s, threads);
  const int64_t spans = expand_dw_spans(s, threads);
  const int64_t per = expand_dw_scratch_floats(s, threads) / threads;
  const nhwc_detail::DwGeometry g = nhwc_detail::dw_geometry(s);
  const Epilogue<Act1> e1 = make_epilogue(act1, nullptr, b1, nullptr, 0);
  const int64_t row_out = s.OW * s.C, row_e = s.W * s.C;
  parallel_for(pool, s.N * spans, [&](int64_t unit, int tid) {
    const int64_t n = unit / spans, span = unit % spans;
    const int64_t s0 = span * s.OH / spans, s1 = (span + 1) * s.OH / spans;
    float* eb = scratch + int64_t(tid) * per;
    int64_t lo = 0, hi = 0;  // the E rows eb holds, from eb on
    for (int64_t oh0 = s0; oh0 < s1; oh0 += band) {
      const int64_t oh1 = s1 < oh0 + band ? s1 : oh0 + band;
      // E rows [want_lo, want_hi): what the band's windows read inside the image.
      int64_t want_lo = oh0 * s.SH - s.PH;
      int64_t want_hi = (oh1 - 1) * s.SH - s.PH + (s.KH - 1) * s.DH + 1;
      if (want_lo < 0) want_lo = 0;
      if (want_hi > s.H) want_hi = s.H;
      if (want_hi < want_lo) want_hi = want_lo;
      int64_t have = 0;  // rows at the front of eb that are already E rows [want_lo, ...)
      if (want_lo >= lo && want_lo < hi) {
        have = (hi < want_hi ? hi : want_hi) - want_lo;
        if (want_lo > lo)
          std::memmove(eb, eb + (want_lo - lo) * row_e, size_t(have * row_e) * sizeof(float));
      }
      if (want_hi > want_lo + have)
        gemm_f32_rowa_packed_b((want_hi - want_lo - have) * s.W, s.C, Cin,
                               x + (n * s.H + want_lo + have) * s.W * Cin, Cin, w1_panels,
                               eb + have * row_e, s.C, e1, nullptr);
      lo = want_lo;
      hi = want_hi;
      for (int64_t oh = oh0; oh < oh1; ++oh) {
        const int64_t out = (n * s.OH + oh) * row_out;
        nhwc_detail::dw_output_row(s, g, eb, lo, oh, 0, s.C, wd, bd,
                                   e.residual ? e.residual + out : nullptr, y + out, e);
      }
    }
  });
}

/// Bands of output rows per image of nhwc_dw_project_f32: bands of about the rows whose pixels
/// fill 4 register strips of the projection (fewer would leave its tiles short), a multiple of
/// the threads (at most the rows), so that each thread's bands are the rows the 1x1 conv before
/// wrote (gemm_split_rowa: equal shares of the rows). Band b: rows [b OH / bands, (b + 1) OH /
/// bands). (Bands of 4 rows at 14x14 and 2 threads, 8 rows against 6, ran 5-9% slower.)
constexpr int64_t dw_project_bands(const Conv2dShape& s, int threads) {
  const int64_t target = s.OW > 0 ? (4 * kMR + s.OW - 1) / s.OW : 1;
  const int64_t t = threads < 1 ? 1 : threads < s.OH ? threads : s.OH;
  const int64_t per_thread = (s.OH + t - 1) / t;  // rows
  const int64_t bands = t * ((per_thread + target - 1) / target);
  return bands < 1 ? 1 : bands > s.OH ? s.OH : bands;
}

/// Scratch floats of nhwc_dw_project_f32: one band of D per thread.
constexpr int64_t dw_project_scratch_floats(const Conv2dShape& s, int threads) {
  const int64_t bands = dw_project_bands(s, threads), rows = (s.OH + bands - 1) / bands;
  return (rows * s.OW * s.C + 15) / 16 * 16 * (threads < 1 ? 1 : threads);
}

/// The fused pair. s: the depthwise conv (group == C == M); act1: its activation, bd its bias
/// ([C] or null), wd its filter tap-major (depthwise_nhwc_pack_weights); M: Y's channels;
/// wp_panels: Wp^T [C, M] packed by pack_b_panels; e: the projection's epilogue (col_bias [M] or
/// null, residual [N, OH, OW, M] with ld_residual M, or null; act2), y: [N, OH, OW, M] (may be
/// the residual itself, where the projection has one k block, as for gemm_f32_rowa_packed_b).
/// scratch: dw_project_scratch_floats(s, threads), for at least the pool's thread count.
template <class Act1, class Act2>
inline void nhwc_dw_project_f32(const Conv2dShape& s, const float* x, const float* wd,
                                const float* bd, Act1 act1, int64_t M, const float* wp_panels,
                                float* y, const Epilogue<Act2>& e, float* scratch, int threads,
                                ThreadPool* pool) {
  if (s.N <= 0 || s.C <= 0 || s.OH <= 0 || s.OW <= 0 || M <= 0) return;
  const int64_t bands = dw_project_bands(s, threads);
  const int64_t per = dw_project_scratch_floats(s, threads) / (threads < 1 ? 1 : threads);
  const nhwc_detail::DwGeometry g = nhwc_detail::dw_geometry(s);
  const Epilogue<Act1> e1 = make_epilogue(act1, nullptr, nullptr, nullptr, 0);
  const int64_t row_d = s.OW * s.C, plane = s.H * s.W * s.C;
  parallel_for(pool, s.N * bands, [&](int64_t unit, int tid) {
    const int64_t n = unit / bands, b = unit % bands;
    const int64_t oh0 = b * s.OH / bands, oh1 = (b + 1) * s.OH / bands;
    float* db = scratch + int64_t(tid) * per;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      nhwc_detail::dw_output_row(s, g, x + n * plane, 0, oh, 0, s.C, wd, bd, nullptr,
                                 db + (oh - oh0) * row_d, e1);
    const int64_t p0 = (n * s.OH + oh0) * s.OW;
    Epilogue<Act2> eb = e;
    eb.residual = e.residual ? e.residual + p0 * e.ld_residual : nullptr;
    gemm_f32_rowa_packed_b((oh1 - oh0) * s.OW, M, s.C, db, s.C, wp_panels, y + p0 * M, M, eb,
                           nullptr);
  });
}

}  // namespace kiln_cpu
