// kiln optimized CPU kernels: f32 2-D convolution without im2col (NCHW; 1-D as H = 1). The
// input of each channel group is copied once into zero-padded phase planes: the padded plane
// split by (row % SH, column % SW) into SH x SW planes of Hq x Wq (one plane at stride 1, of Wq
// = OW + (KW - 1) * DW columns). In them every output pixel (oh, ow) has one flat index f = oh *
// Wq + ow, and tap (c, i, j) of every output reads channel c's phase plane of (i * DH % SH, j *
// DW % SW) at f + (i * DH / SH) * Wq + j * DW / SW: a block of kNR consecutive flat outputs
// reads kNR consecutive floats. So the microkernel takes its B vectors straight from the
// planes; nothing is packed per block, where im2col writes KH * KW copies of the input. The Wq
// - OW columns past each output row are computed and dropped (2 of 58 for a 56-wide 3x3 layer).
// The outputs are computed in bands of rows whose planes fit a budget (the caller's: about the
// L2 cache), each band's planes filled just before its tiles run.
//
// A is the weights packed at compile time in strips of kMR output channels, each strip's whole K
// contiguous (conv2d_direct_pack_weights). Each tile of kMR output channels x kNR flat outputs
// runs the whole K in registers, k ascending, then gets the epilogue (bias, residual,
// activation) on its way to y. Work is split over tiles only, so results do not depend on the
// thread count.
#pragma once

#include <cstdint>

#include "conv.h"
#include "vfunctor.h"

namespace kiln_cpu {

namespace conv_direct_detail {

/// Geometry of the phase planes of one channel group for a band of OHb output rows (the
/// outputs are computed band by band, each band's planes refilled, so the planes stay within a
/// budget: about the L2 cache).
struct Planes {
  int64_t OHb;            // output rows per band (the last band may have fewer)
  int64_t Hq, Wq, plane;  // one phase plane of a band: plane = Hq * Wq
  int64_t channel;        // floats per channel: SH * SW planes
  int64_t floats;         // the planes of Cg channels, then kNR zeros read past the last
};

constexpr Planes planes_for_band(const Conv2dShape& s, int64_t OHb) {
  Planes p{};
  p.OHb = OHb;
  const int64_t needH = (OHb - 1) * s.SH + (s.KH - 1) * s.DH + 1;
  const int64_t needW = (s.OW - 1) * s.SW + (s.KW - 1) * s.DW + 1;
  p.Hq = (needH + s.SH - 1) / s.SH;
  p.Wq = (needW + s.SW - 1) / s.SW;
  p.plane = p.Hq * p.Wq;
  p.channel = s.SH * s.SW * p.plane;
  p.floats = ((s.C / s.group) * p.channel + kNR + 15) / 16 * 16;
  return p;
}

/// The tallest band whose planes take at most max_floats (one row when none does: the caller
/// checks conv2d_direct_applies).
constexpr Planes planes_of(const Conv2dShape& s, int64_t max_floats) {
  int64_t rows = s.OH;
  while (rows > 1 && planes_for_band(s, rows).floats > max_floats) --rows;
  return planes_for_band(s, rows);
}

/// The planes of band rows [oh0, oh0 + OHb) for channel xc's input [H, W], into pc (zeroed
/// first): padded row r = ih + PH (r - oh0 * SH in [0, Hq * SH)) to row (r - oh0 * SH) / SH of the
/// planes of phase r % SH, padded column q = iw + PW likewise; padding the outputs never read
/// is left out.
inline void fill_planes(const Conv2dShape& s, const Planes& d, int64_t oh0, const float* xc,
                        float* pc) {
  zero_floats(pc, d.channel);
  const int64_t r0 = oh0 * s.SH;  // the band's first padded row
  const int64_t ih0 = r0 - s.PH > 0 ? r0 - s.PH : 0;
  const int64_t ih1 = r0 + d.Hq * s.SH - s.PH < s.H ? r0 + d.Hq * s.SH - s.PH : s.H;
  const int64_t cols = d.Wq * s.SW - s.PW < s.W ? d.Wq * s.SW - s.PW : s.W;
  int64_t rm = (ih0 + s.PH - r0) % s.SH, rq = (ih0 + s.PH - r0) / s.SH;
  for (int64_t ih = ih0; ih < ih1; ++ih, rq += ++rm == s.SH, rm = rm == s.SH ? 0 : rm) {
    conv_detail::scatter_row_phases(xc + ih * s.W, cols, s.SW, s.PW, d.plane,
                                    pc + rm * s.SW * d.plane + rq * d.Wq);
  }
}

/// y[0:n) = act(src[0:n) + *bias + residual[0:n)) (bias and residual may be null: skipped, as
/// gemm.h's epilogue skips them), vectors with masks.
template <class Act>
inline void finish_run(const float* src, float* y, const float* residual, int64_t n,
                       const float* bias, const Act& act) {
  constexpr int L = V::kLanes;
  const V::R vb = V::set1(bias ? *bias : 0.0f);
  for (int64_t u = 0; u < n; u += L) {
    const int c = int(n - u < L ? n - u : L);
    V::R v = V::load(src + u, c);
    if (bias) v = V::add(v, vb);
    if (residual) v = V::add(v, V::load(residual + u, c));
    V::store(y + u, ActInRegister<Act>::apply(act, v), c);
    if (!ActInRegister<Act>::kYes)
      for (int t = 0; t < c; ++t) y[u + t] = act_value(act, y[u + t]);
  }
}

/// The accumulators of one tile: the strip of packed weights `ap` (kMR rows, [K][kMR]) times
/// the flat outputs [f, f + kNR) of the planes `xp` for its first R rows, handed to done(acc0,
/// acc1). NV = 1 when at most L of the columns are wanted. Row k of B (channel c, tap t) is at
/// xp + c * channel + tap[t].
template <int R, int NV, class Done>
__attribute__((always_inline)) inline void tile_acc(int64_t K, const float* ap, const float* xp,
                                                    int64_t channel, const int64_t* tap,
                                                    int64_t taps, Done done) {
  V::R acc0[R], acc1[R];
  KILN_CPU_UNROLL
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = V::zero();
  const float* xc = xp;
  for (int64_t k = 0, t = 0; k < K; ++k, ap += kMR) {
    const float* bp = xc + tap[t];
    if (++t == taps) {
      t = 0;
      xc += channel;
    }
    gemm_detail::rank1<R, NV>(ap, bp, acc0, acc1);
  }
  done(acc0, acc1);
}

/// One tile (tile_acc) into out[r * kNR + col] for its first R rows.
template <int R, int NV>
inline void tile(int64_t K, const float* ap, const float* xp, int64_t channel, const int64_t* tap,
                 int64_t taps, float* out) {
  tile_acc<R, NV>(K, ap, xp, channel, tap, taps, [&](const V::R* acc0, const V::R* acc1) {
    constexpr int L = V::kLanes;
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r) {
      V::store(out + r * kNR, acc0[r]);
      if constexpr (NV == 2) V::store(out + r * kNR + L, acc1[r]);
    }
  });
}

/// A tile whose columns are one output row's [n, n + cols) (row tiles): the epilogue in
/// registers, straight into y (rows of ldy floats from output channel m; e's row_bias and
/// residual are the group's, ld_residual = ldy).
template <int R, int NV, class Act>
inline void tile_to_y(int64_t K, const float* ap, const float* xp, int64_t channel,
                      const int64_t* tap, int64_t taps, float* y, int64_t ldy, int cols,
                      const Epilogue<Act>& e, int64_t m, int64_t n) {
  tile_acc<R, NV>(K, ap, xp, channel, tap, taps, [&](const V::R* acc0, const V::R* acc1) {
    KILN_CPU_UNROLL
    for (int r = 0; r < R; ++r)
      gemm_detail::finish_row(acc0[r], NV == 2 ? acc1[r] : V::zero(), y + (m + r) * ldy + n,
                              cols, true, e, m + r, n);
  });
}

template <int R>
inline void tile_rows(int rows, bool narrow, int64_t K, const float* ap, const float* xp,
                      int64_t channel, const int64_t* tap, int64_t taps, float* out) {
  if constexpr (R > 1) {
    if (rows < R) return tile_rows<R - 1>(rows, narrow, K, ap, xp, channel, tap, taps, out);
  }
  if (narrow)
    tile<R, 1>(K, ap, xp, channel, tap, taps, out);
  else
    tile<R, 2>(K, ap, xp, channel, tap, taps, out);
}

template <int R, class Act>
inline void tile_rows_to_y(int rows, int64_t K, const float* ap, const float* xp, int64_t channel,
                           const int64_t* tap, int64_t taps, float* y, int64_t ldy, int cols,
                           const Epilogue<Act>& e, int64_t m, int64_t n) {
  if constexpr (R > 1) {
    if (rows < R)
      return tile_rows_to_y<R - 1>(rows, K, ap, xp, channel, tap, taps, y, ldy, cols, e, m, n);
  }
  if (cols <= V::kLanes)
    tile_to_y<R, 1>(K, ap, xp, channel, tap, taps, y, ldy, cols, e, m, n);
  else
    tile_to_y<R, 2>(K, ap, xp, channel, tap, taps, y, ldy, cols, e, m, n);
}

/// Whether the tiles run row by row (each tile's columns inside one output row, its epilogue
/// in registers straight into y) rather than over the flat outputs (tiles across rows, the Wq -
/// OW columns past each row computed and dropped, each tile stored and then copied to y): where
/// rows fill the vector lanes at least as well. ResNet-50's stem (OW = 112, Wq = 115): rows
/// fill all lanes, the flat tiles 97%. A 28-wide row fills 28 of 32 lanes, its flat tiles 94%.
constexpr bool row_tiles(const Conv2dShape& s, const Planes& d) {
  const int64_t L = V::kLanes;
  const int64_t row_lanes = (s.OW + L - 1) / L * L * s.OH;
  const int64_t flat = (s.OH - 1) * d.Wq + s.OW;
  const int64_t flat_lanes = (flat + kNR - 1) / kNR * kNR;
  return row_lanes <= flat_lanes;
}

}  // namespace conv_direct_detail

/// Whether conv2d_direct_f32 takes this shape: a kernel wider than 1x1, at most 64 taps, begin
/// pads inside the kernel's extent, and the planes of a one-row band within `max_plane_floats`
/// floats (the caller's budget; taller bands are used where they fit).
constexpr bool conv2d_direct_applies(const Conv2dShape& s, int64_t max_plane_floats) {
  return s.KH * s.KW > 1 && s.KH * s.KW <= 64 &&
         s.PH <= (s.KH - 1) * s.DH && s.PW <= (s.KW - 1) * s.DW &&
         conv_direct_detail::planes_for_band(s, 1).floats <= max_plane_floats;
}

/// Floats of conv2d_direct_f32's packed weights: per group, strips of kMR rows, each [K][kMR]
/// (strip-major: a tile reads its strip's whole K as one stream), rounded up to 64 bytes.
constexpr int64_t conv2d_direct_packed_weight_floats(const Conv2dShape& s) {
  const int64_t Mg = s.M / s.group, K = s.C / s.group * s.KH * s.KW;
  return s.group * (((Mg + kMR - 1) / kMR * kMR * K + 15) / 16 * 16);
}

/// Packs conv weights w [M, C/group, KH, KW] for conv2d_direct_f32 (done at compile time):
/// element (row r of strip q, k) of group g at g * (per group) + (q * K + k) * kMR + r, zero past
/// the group's rows.
inline void conv2d_direct_pack_weights(const Conv2dShape& s, const float* w, float* dst) {
  const int64_t G = s.group, Mg = s.M / G, K = s.C / G * s.KH * s.KW;
  const int64_t per = conv2d_direct_packed_weight_floats(s) / G;
  for (int64_t g = 0; g < G; ++g)
    for (int64_t q = 0; q * kMR < Mg; ++q)
      for (int64_t r = 0; r < kMR; ++r) {
        const int64_t m = q * kMR + r;
        float* d = dst + g * per + q * K * kMR + r;
        for (int64_t k = 0; k < K; ++k) d[k * kMR] = m < Mg ? w[(g * Mg + m) * K + k] : 0.0f;
      }
}

/// Scratch floats conv2d_direct_f32 needs with bands of at most max_plane_floats of planes: the
/// tallest band's phase planes, one set per thread with several threads or several bands (each
/// thread then fills and computes whole bands, so no core reads planes another core wrote), then
/// one kMR x kNR tile per thread.
constexpr int64_t conv2d_direct_scratch_floats(const Conv2dShape& s, int threads,
                                               int64_t max_plane_floats) {
  const conv_direct_detail::Planes d = conv_direct_detail::planes_of(s, max_plane_floats);
  const int64_t plane_sets = d.OHb < s.OH || threads > 1 ? threads : 1;
  return d.floats * plane_sets + int64_t(threads) * kMR * kNR;
}

namespace conv_direct_detail {

/// The tiles of rows [mb0, mb1) x flat outputs [f0, f1) of the band starting at output row oh0,
/// from its planes xp, through the epilogue into y (the group's output; residual likewise).
template <class Act>
inline void band_tiles(const Conv2dShape& s, const Planes& d, int64_t K, const float* wg,
                       const float* xp, const int64_t* tap, int64_t oh0, int64_t mb0, int64_t mb1,
                       int64_t f0, int64_t f1, const float* bg, float* yg, const float* rg,
                       const Epilogue<Act>& e, float* out) {
  const int64_t taps = s.KH * s.KW, P = s.OH * s.OW;
  for (int64_t m = mb0; m < mb1; m += kMR) {
    const int rows = int(mb1 - m < kMR ? mb1 - m : kMR);
    for (int64_t f = f0; f < f1; f += kNR) {
      const int64_t cols = f1 - f < kNR ? f1 - f : kNR;
      tile_rows<kMR>(rows, cols <= V::kLanes, K, wg + m * K, xp + f, d.channel, tap, taps, out);
      // The tile's flat columns, row segment by row segment, into y.
      int64_t oh = oh0 + f / d.Wq, ow = f % d.Wq;
      for (int64_t q = 0; q < cols;) {
        const int64_t run = ow < s.OW ? (s.OW - ow < cols - q ? s.OW - ow : cols - q) : 0;
        if (run > 0)
          for (int r = 0; r < rows; ++r) {
            const int64_t o = (m + r) * P + oh * s.OW + ow;
            finish_run(out + r * kNR + q, yg + o, rg ? rg + o : nullptr, run,
                       bg ? bg + m + r : nullptr, e.act);
          }
        const int64_t step = d.Wq - ow < cols - q ? d.Wq - ow : cols - q;
        q += step;
        ow += step;
        if (ow == d.Wq) {
          ow = 0;
          ++oh;
        }
      }
    }
  }
}

/// Row tiles [t0, t1) x rows [mb0, mb1) of the band starting at output row oh0 (tile t: band
/// row t / per_row, columns from (t % per_row) * kNR), through the epilogue into y (the
/// group's output; eg's row_bias and residual the group's, ld_residual = OH * OW).
template <class Act>
inline void band_row_tiles(const Conv2dShape& s, const Planes& d, int64_t K, const float* wg,
                           const float* xp, const int64_t* tap, int64_t oh0, int64_t mb0,
                           int64_t mb1, int64_t t0, int64_t t1, float* yg,
                           const Epilogue<Act>& eg) {
  const int64_t taps = s.KH * s.KW, P = s.OH * s.OW, per_row = (s.OW + kNR - 1) / kNR;
  for (int64_t m = mb0; m < mb1; m += kMR) {
    const int rows = int(mb1 - m < kMR ? mb1 - m : kMR);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t / per_row, ow = (t % per_row) * kNR;
      const int cols = int(s.OW - ow < kNR ? s.OW - ow : kNR);
      tile_rows_to_y<kMR>(rows, K, wg + m * K, xp + r * d.Wq + ow, d.channel, tap, taps, yg, P,
                          cols, eg, m, (oh0 + r) * s.OW + ow);
    }
  }
}

}  // namespace conv_direct_detail

/// The same convolution as conv2d_f32 (bias, epilogue, y) for shapes where
/// conv2d_direct_applies(s, max_plane_floats), with weights from conv2d_direct_pack_weights;
/// scratch: conv2d_direct_scratch_floats (the same max_plane_floats, at least the pool's
/// threads).
template <class Act>
inline void conv2d_direct_f32(const Conv2dShape& s, const float* x, const float* w_packed,
                              const float* bias, float* y, const Epilogue<Act>& e, float* scratch,
                              int64_t max_plane_floats, ThreadPool* pool,
                              GemmPlan plan = {}) {
  using conv_direct_detail::band_tiles;
  // d0: the tallest band within the budget (the scratch's layout); d: the bands run, as many
  // as d0 needs rounded up to a multiple of the threads, of even heights (ResNet-50's 56 -> 28
  // stride-2 conv: 14 + 14 rows, not 16 + 12 that left one of 2 threads idle for 2 rows). With
  // several threads, at least one band per thread even where one band would fit: each thread
  // fills the planes it reads, and takes all the output channels of its rows. (ResNet-50's stem
  // at 2 threads in one shared band: a thread read the planes of the channels the other had
  // filled, and its 64 channels split 36 + 28 rows, strips of 12.)
  const conv_direct_detail::Planes d0 = conv_direct_detail::planes_of(s, max_plane_floats);
  const int threads = pool ? pool->size() : 1;
  const conv_direct_detail::Planes d = [&] {
    if (d0.OHb >= s.OH && (threads == 1 || s.OH < threads)) return d0;
    int64_t n = (s.OH + d0.OHb - 1) / d0.OHb;
    if (n % threads != 0 && (n + threads - 1) / threads * threads <= s.OH)
      n = (n + threads - 1) / threads * threads;
    return conv_direct_detail::planes_for_band(s, (s.OH + n - 1) / n);
  }();
  const int64_t G = s.group, Cg = s.C / G, Mg = s.M / G;
  const int64_t taps = s.KH * s.KW, K = Cg * taps, P = s.OH * s.OW;
  int64_t tap[64];
  for (int64_t t = 0; t < taps; ++t) {
    const int64_t ri = (t / s.KW) * s.DH, cj = (t % s.KW) * s.DW;
    tap[t] = ((ri % s.SH) * s.SW + cj % s.SW) * d.plane + (ri / s.SH) * d.Wq + cj / s.SW;
  }
  const int64_t bands = (s.OH + d.OHb - 1) / d.OHb;
  const bool rows = conv_direct_detail::row_tiles(s, d);
  const int64_t per_row = (s.OW + kNR - 1) / kNR;
  // Group g's epilogue for row tiles: its bias and residual, rows of OH * OW.
  auto group_epilogue = [&](int64_t g, int64_t yoff) {
    Epilogue<Act> eg = e;
    eg.row_bias = bias ? bias + g * Mg : nullptr;
    eg.col_bias = nullptr;
    eg.residual = e.residual ? e.residual + yoff : nullptr;
    eg.ld_residual = P;
    return eg;
  };
  const int64_t plane_sets = d0.OHb < s.OH || threads > 1 ? threads : 1;
  float* tiles = scratch + d0.floats * plane_sets;
  const int64_t wper = conv2d_direct_packed_weight_floats(s) / G;
  // Fills the planes of band oh0 (channels [c0, c1), c1 == Cg + 1 including the zero tail).
  auto fill = [&](const float* xg, float* xp, int64_t oh0, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      if (c == Cg)
        zero_floats(xp + Cg * d.channel, d.floats - Cg * d.channel);
      else
        conv_direct_detail::fill_planes(s, d, oh0, xg + c * s.H * s.W, xp + c * d.channel);
  };
  auto flat_of = [&](int64_t oh0) {
    const int64_t rows_b = s.OH - oh0 < d.OHb ? s.OH - oh0 : d.OHb;
    return (rows_b - 1) * d.Wq + s.OW;
  };
  if (bands > 1) {
    // Several bands: each unit is one band of one image and group, filled and computed by one
    // thread in its own planes.
    parallel_for(pool, s.N * G * bands, [&](int64_t unit, int tid) {
      const int64_t n = unit / (G * bands), g = unit / bands % G, oh0 = unit % bands * d.OHb;
      float* xp = scratch + int64_t(tid) * d0.floats;
      fill(x + (n * s.C + g * Cg) * s.H * s.W, xp, oh0, 0, Cg + 1);
      const int64_t yoff = (n * s.M + g * Mg) * P;
      if (rows) {
        const int64_t band_rows = s.OH - oh0 < d.OHb ? s.OH - oh0 : d.OHb;
        conv_direct_detail::band_row_tiles(s, d, K, w_packed + g * wper, xp, tap, oh0, 0, Mg, 0,
                                           band_rows * per_row, y + yoff, group_epilogue(g, yoff));
        return;
      }
      band_tiles(s, d, K, w_packed + g * wper, xp, tap, oh0, 0, Mg, 0, flat_of(oh0),
                 bias ? bias + g * Mg : nullptr, y + yoff,
                 e.residual ? e.residual + yoff : nullptr, e, tiles + int64_t(tid) * kMR * kNR);
    });
    return;
  }
  // One band holds every row: the threads share its planes and split its tiles.
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const float* xg = x + (n * s.C + g * Cg) * s.H * s.W;
      parallel_for(pool, Cg + 1, [&](int64_t c, int) { fill(xg, scratch, 0, c, c + 1); });
      // Row tiles: the split's columns count kNR per tile.
      const int64_t flat = rows ? s.OH * per_row * kNR : flat_of(0), yoff = (n * s.M + g * Mg) * P;
      const gemm_detail::GemmSplit split = gemm_detail::gemm_split(Mg, flat, threads, plan);
      const int64_t n_blocks = (flat + split.block - 1) / split.block;
      const int64_t m_blocks = (Mg + split.m_chunk - 1) / split.m_chunk;
      parallel_for(pool, n_blocks * m_blocks, [&](int64_t unit, int tid) {
        const int64_t f0 = (unit / m_blocks) * split.block;
        const int64_t mb0 = (unit % m_blocks) * split.m_chunk;
        const int64_t mb1 = Mg < mb0 + split.m_chunk ? Mg : mb0 + split.m_chunk;
        if (rows) {
          const int64_t f1 = flat < f0 + split.block ? flat : f0 + split.block;
          conv_direct_detail::band_row_tiles(s, d, K, w_packed + g * wper, scratch, tap, 0, mb0,
                                             mb1, f0 / kNR, (f1 + kNR - 1) / kNR, y + yoff,
                                             group_epilogue(g, yoff));
          return;
        }
        band_tiles(s, d, K, w_packed + g * wper, scratch, tap, 0, mb0,
                   Mg < mb0 + split.m_chunk ? Mg : mb0 + split.m_chunk, f0,
                   flat < f0 + split.block ? flat : f0 + split.block,
                   bias ? bias + g * Mg : nullptr, y + yoff,
                   e.residual ? e.residual + yoff : nullptr, e, tiles + int64_t(tid) * kMR * kNR);
      });
    }
}

}  // namespace kiln_cpu
