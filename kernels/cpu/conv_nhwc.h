// kiln optimized CPU kernels: f32 depthwise convolution on NHWC data (channels contiguous), for
// the compiler's NHWC regions of depthwise-separable networks (MobileNetV2, PP-OCR).
//  * depthwise_conv2d_nhwc_f32: group == C == M, one filter per channel, vectorized across
//    channels. 3x3 filters with column dilation 1 and column stride 1 or 2 (MobileNet's) take
//    the sliding-window path: per output row and channel vector the 9 weight vectors stay in
//    registers, and each tile of nhwc_slide_pixels() pixels loads every input column of its
//    windows once per window row. Other shapes take the general path: tiles of kNhwcPixels
//    pixels x kNhwcVectors channel vectors, each tap's weight vectors loaded once per tile and
//    reused by every pixel. In both, pixels whose window columns all lie inside the input run
//    without column checks; border pixels skip the taps that leave it (zero padding). The
//    channel tail uses masked loads and stores: nothing past x, w, bias, residual or y is read
//    or written.
//  * depthwise_nhwc_pack_weights: ONNX's [C, 1, KH, KW] filter, tap-major ([KH * KW][C]).
// Per output the sum runs from 0 over the in-bounds taps in order (row i, then column j), then
// adds bias, then residual, then applies the activation (in registers when ActInRegister has
// it, else scalar over the stored values). Work is split over (image, output row, channel
// chunk) units only, so results are bit-identical at any thread count; no heap. The output may
// also be written over the input, shifted below it (depthwise_nhwc_shift_floats; scratch for
// row bands' first rows at more than one thread), with the same sums.
#pragma once

#include <cstdint>
#include <cstring>

#include "conv.h"
#include "gemm.h"
#include "parallel.h"
#include "simd.h"
#include "vfunctor.h"

// Full unrolling of the sliding tiles' window columns (up to 17).
#define KILN_CPU_NHWC_UNROLL _Pragma("GCC unroll 32")
// The 3x3 tiles are inlined into their row loop, which keeps the filter in registers.
#if defined(__GNUC__)
#define KILN_CPU_NHWC_INLINE inline __attribute__((always_inline))
#else
#define KILN_CPU_NHWC_INLINE inline
#endif

namespace kiln_cpu {

/// Vectors of channels (kNhwcVectors) and output pixels (kNhwcPixels) per register tile.
constexpr int kNhwcVectors = V::kRegisters == 32 ? 4 : 2;
constexpr int kNhwcPixels = 4;
/// The same for the 3x3 sliding-window tiles (stride 1 or 2), which also hold the row's 9
/// weight vectors per channel vector in registers: with 32 registers, two channel vectors of
/// 4 pixels (8 accumulators, 18 weights), a lone last vector 8 pixels; with 16, one of 4.
/// Two vectors per pass read a pixel's channels as one stream (32 channels: both lines of
/// each pixel in one pass over the rows, not one line each in two): hot, 112x112x32 131-133
/// -> 97-128 us, 112x112x96 s2 189 -> 168; in MobileNetV2 features.1's 201 -> 160 (session
/// 48, Zen 4; docs/targets.md).
constexpr int kNhwcSlideVectors = V::kRegisters == 32 ? 2 : 1;
template <int NV>
constexpr int nhwc_slide_pixels() {
  return V::kRegisters == 32 ? (NV == 1 ? 8 : 4) : 4;
}

/// dst[(i * KW + j) * C + c] = w_oihw[(c * KH + i) * KW + j]: the tap-major filter the NHWC
/// depthwise kernel reads; dst holds KH * KW * C floats.
inline void depthwise_nhwc_pack_weights(const Conv2dShape& s, const float* w_oihw, float* dst) {
  const int64_t taps = s.KH * s.KW;
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t t = 0; t < taps; ++t) dst[t * s.C + c] = w_oihw[c * taps + t];
}

namespace nhwc_detail {

/// What every tile of one output row (n, oh) needs.
struct DwRow {
  const float* x;     // image n: [H, W, C]
  const float* w;     // packed filter: [KH * KW, C]
  const float* bias;  // [C] or null
  const float* res;   // residual row (n, oh): [OW, C], or null
  float* y;           // output row (n, oh): [OW, C]
  int64_t C, KW;
  int64_t row_stride;  // W * C
  int64_t ih0, DH;     // input row of tap row i: ih0 + i * DH
  int64_t i0, i1;      // tap rows inside the input: [i0, i1)
  int64_t SW, PW, DW;
  int64_t pix_stride;  // SW * C: between neighbouring output pixels' windows
  int64_t tap_stride;  // DW * C: between neighbouring taps of a window row
};

/// First and one-past-last tap index k in [0, K) with base + k * step inside [0, limit).
inline void tap_range(int64_t base, int64_t step, int64_t K, int64_t limit, int64_t* lo,
                      int64_t* hi) {
  int64_t a = base < 0 ? (-base + step - 1) / step : 0;
  int64_t b = limit - 1 - base < 0 ? 0 : (limit - 1 - base) / step + 1;
  if (a > K) a = K;
  if (b > K) b = K;
  if (b < a) b = a;
  *lo = a;
  *hi = b;
}

/// Holds v in a register: stops the compiler from re-reading a vector loaded once as a memory
/// operand of each of its FMAs (the sliding tiles' point is to load each input vector once).
inline void in_register(V::R& v) {
#if (defined(KILN_CPU_AVX512) || defined(KILN_CPU_AVX2)) && defined(__GNUC__)
  __asm__ volatile("" : "+v"(v));
#else
  (void)v;
#endif
}

/// Lanes [0, n) of p when `masked` (the block's tail vector), else a full vector. `masked` is
/// a constant once the tile's loops are unrolled.
inline V::R load_v(const float* p, bool masked, int n) {
  return masked ? V::load(p, n) : V::load(p);
}

/// Adds bias and residual to a finished tile, applies the activation and stores it: pixels
/// [ow0, ow0 + NP) x NV vectors from channel c (the last one `tail` channels with kTail).
template <int NP, int NV, bool kTail, class Act>
inline void store_tile(const DwRow& r, const V::R (&acc)[NP][NV], int64_t ow0, int64_t c, int tail,
                       const Epilogue<Act>& e) {
  constexpr int L = V::kLanes;
  // Locals: the stores below could alias the row struct as far as the compiler knows.
  const float* const bias = r.bias;
  const float* const res = r.res;
  float* const y = r.y;
  const int64_t C = r.C;
  V::R bv[NV];
  KILN_CPU_UNROLL
  for (int v = 0; v < NV; ++v)
    bv[v] = bias ? load_v(bias + c + v * L, kTail && v == NV - 1, tail) : V::zero();
  KILN_CPU_UNROLL
  for (int p = 0; p < NP; ++p) {
    const int64_t at = (ow0 + p) * C + c;
    KILN_CPU_UNROLL
    for (int v = 0; v < NV; ++v) {
      const bool masked = kTail && v == NV - 1;
      V::R a = acc[p][v];
      if (bias) a = V::add(a, bv[v]);
      if (res) a = V::add(a, load_v(res + at + v * L, masked, tail));
      a = ActInRegister<Act>::apply(e.act, a);
      if (masked)
        V::store(y + at + v * L, a, tail);
      else
        V::store(y + at + v * L, a);
    }
    if (!ActInRegister<Act>::kYes) {
      const int n = kTail ? (NV - 1) * L + tail : NV * L;
      for (int u = 0; u < n; ++u) y[at + u] = act_value(e.act, y[at + u]);
    }
  }
}

/// NP output pixels [ow0, ow0 + NP) x NV channel vectors from channel c; taps j in [j0, j1) of
/// every window row (every pixel of the tile has the same in-bounds j range). With kTail the
/// last vector holds only `tail` channels (masked).
template <int NP, int NV, bool kTail, class Act>
inline void dw_tile(const DwRow& r, int64_t ow0, int64_t j0, int64_t j1, int64_t c, int tail,
                    const Epilogue<Act>& e) {
  constexpr int L = V::kLanes;
  V::R acc[NP][NV];
  KILN_CPU_UNROLL
  for (int p = 0; p < NP; ++p) {
    KILN_CPU_UNROLL
    for (int v = 0; v < NV; ++v) acc[p][v] = V::zero();
  }
  // Offset of tap (i, j0) of pixel ow0 from the image start (>= 0: j0 is in bounds).
  const int64_t col = (ow0 * r.SW - r.PW + j0 * r.DW) * r.C + c;
  for (int64_t i = j0 < j1 ? r.i0 : r.i1; i < r.i1; ++i) {
    const float* xp = r.x + (r.ih0 + i * r.DH) * r.row_stride + col;
    const float* wp = r.w + (i * r.KW + j0) * r.C + c;
    for (int64_t j = j0; j < j1; ++j, xp += r.tap_stride, wp += r.C) {
      V::R wv[NV];
      KILN_CPU_UNROLL
      for (int v = 0; v < NV; ++v) wv[v] = load_v(wp + v * L, kTail && v == NV - 1, tail);
      KILN_CPU_UNROLL
      for (int p = 0; p < NP; ++p) {
        KILN_CPU_UNROLL
        for (int v = 0; v < NV; ++v)
          acc[p][v] = V::fma(
              wv[v], load_v(xp + p * r.pix_stride + v * L, kTail && v == NV - 1, tail), acc[p][v]);
      }
    }
  }
  store_tile<NP, NV, kTail>(r, acc, ow0, c, tail, e);
}

/// One output row for the NV channel vectors from c: left border pixels, the interior
/// [owa, owb) in tiles of kNhwcPixels (then 2, then 1), right border pixels.
template <int NV, bool kTail, class Act>
inline void dw_row_block(const DwRow& r, int64_t OW, int64_t W, int64_t owa, int64_t owb, int64_t c,
                         int tail, const Epilogue<Act>& e) {
  int64_t ow = 0, j0, j1;
  for (; ow < owa; ++ow) {
    tap_range(ow * r.SW - r.PW, r.DW, r.KW, W, &j0, &j1);
    dw_tile<1, NV, kTail>(r, ow, j0, j1, c, tail, e);
  }
  for (; ow + kNhwcPixels <= owb; ow += kNhwcPixels)
    dw_tile<kNhwcPixels, NV, kTail>(r, ow, 0, r.KW, c, tail, e);
  if (kNhwcPixels > 2 && ow + 2 <= owb) {
    dw_tile<2, NV, kTail>(r, ow, 0, r.KW, c, tail, e);
    ow += 2;
  }
  for (; ow < owb; ++ow) dw_tile<1, NV, kTail>(r, ow, 0, r.KW, c, tail, e);
  for (; ow < OW; ++ow) {
    tap_range(ow * r.SW - r.PW, r.DW, r.KW, W, &j0, &j1);
    dw_tile<1, NV, kTail>(r, ow, j0, j1, c, tail, e);
  }
}

/// The 3x3 filter of NV channel vectors, held in registers for a whole output row.
template <int NV>
struct Taps3x3 {
  V::R w[3][3][NV];
};

/// The sliding-window tile for 3x3 filters, DW == 1, stride SW (1 or 2), for pixels whose
/// window columns all lie inside the input: NP output pixels from ow0 x NV channel vectors
/// from c. Their windows cover NQ = (NP - 1) * SW + 3 input columns; per window row, each
/// column's vectors are loaded once and feed every pixel p with a tap j = q - p * SW in
/// [0, 3). Per pixel the taps still come in order: rows in turn, q ascending with j.
template <int NP, int NV, int SW, bool kTail, class Act>
KILN_CPU_NHWC_INLINE void dw_slide_tile(const DwRow& r, const Taps3x3<NV>& t, int64_t ow0,
                                        int64_t c, int tail, const Epilogue<Act>& e) {
  constexpr int L = V::kLanes, NQ = (NP - 1) * SW + 3;
  const int64_t C = r.C;
  V::R acc[NP][NV];
  KILN_CPU_UNROLL
  for (int p = 0; p < NP; ++p) {
    KILN_CPU_UNROLL
    for (int v = 0; v < NV; ++v) acc[p][v] = V::zero();
  }
  KILN_CPU_UNROLL
  for (int i = 0; i < 3; ++i) {
    if (i < r.i0 || i >= r.i1) continue;
    const float* xp = r.x + (r.ih0 + i * r.DH) * r.row_stride + (ow0 * SW - r.PW) * C + c;
    KILN_CPU_NHWC_UNROLL
    for (int q = 0; q < NQ; ++q, xp += C) {
      V::R xv[NV];
      KILN_CPU_UNROLL
      for (int v = 0; v < NV; ++v) {
        xv[v] = load_v(xp + v * L, kTail && v == NV - 1, tail);
        in_register(xv[v]);
      }
      KILN_CPU_UNROLL
      for (int p = 0; p < NP; ++p) {
        const int j = q - p * SW;
        if (j < 0 || j >= 3) continue;
        KILN_CPU_UNROLL
        for (int v = 0; v < NV; ++v) acc[p][v] = V::fma(t.w[i][j][v], xv[v], acc[p][v]);
      }
    }
  }
  store_tile<NP, NV, kTail>(r, acc, ow0, c, tail, e);
}

/// One border pixel of the 3x3 path: the window columns [j0, j1) inside the input.
template <int NV, int SW, bool kTail, class Act>
KILN_CPU_NHWC_INLINE void dw_slide_edge(const DwRow& r, const Taps3x3<NV>& t, int64_t ow, int64_t W,
                                        int64_t c, int tail, const Epilogue<Act>& e) {
  constexpr int L = V::kLanes;
  const int64_t C = r.C, iw0 = ow * SW - r.PW;
  int64_t j0, j1;
  tap_range(iw0, 1, 3, W, &j0, &j1);
  V::R acc[1][NV];
  KILN_CPU_UNROLL
  for (int v = 0; v < NV; ++v) acc[0][v] = V::zero();
  KILN_CPU_UNROLL
  for (int i = 0; i < 3; ++i) {
    if (i < r.i0 || i >= r.i1) continue;
    const float* xr = r.x + (r.ih0 + i * r.DH) * r.row_stride + c;
    KILN_CPU_UNROLL
    for (int j = 0; j < 3; ++j) {
      if (j < j0 || j >= j1) continue;
      const float* xp = xr + (iw0 + j) * C;
      KILN_CPU_UNROLL
      for (int v = 0; v < NV; ++v)
        acc[0][v] = V::fma(t.w[i][j][v], load_v(xp + v * L, kTail && v == NV - 1, tail), acc[0][v]);
    }
  }
  store_tile<1, NV, kTail>(r, acc, ow, c, tail, e);
}

/// One output row of the 3x3 path for NV channel vectors from c, the filter loaded once:
/// border pixels through dw_slide_edge, the interior [owa, owb) in sliding tiles of
/// nhwc_slide_pixels<NV>(), then 4, 2, 1.
template <int NV, int SW, bool kTail, class Act>
inline void dw_slide_row(const DwRow& r, int64_t OW, int64_t W, int64_t owa, int64_t owb, int64_t c,
                         int tail, const Epilogue<Act>& e) {
  constexpr int L = V::kLanes, NP = nhwc_slide_pixels<NV>();
  Taps3x3<NV> t;
  KILN_CPU_UNROLL
  for (int i = 0; i < 3; ++i) {
    KILN_CPU_UNROLL
    for (int j = 0; j < 3; ++j) {
      KILN_CPU_UNROLL
      for (int v = 0; v < NV; ++v)
        t.w[i][j][v] = load_v(r.w + (i * 3 + j) * r.C + c + v * L, kTail && v == NV - 1, tail);
    }
  }
  int64_t ow = 0;
  for (; ow < owa; ++ow) dw_slide_edge<NV, SW, kTail>(r, t, ow, W, c, tail, e);
  for (; ow + NP <= owb; ow += NP) dw_slide_tile<NP, NV, SW, kTail>(r, t, ow, c, tail, e);
  if (NP > 4 && ow + 4 <= owb) {
    dw_slide_tile<4, NV, SW, kTail>(r, t, ow, c, tail, e);
    ow += 4;
  }
  if (NP > 2 && ow + 2 <= owb) {
    dw_slide_tile<2, NV, SW, kTail>(r, t, ow, c, tail, e);
    ow += 2;
  }
  if (ow < owb) dw_slide_tile<1, NV, SW, kTail>(r, t, ow++, c, tail, e);
  for (; ow < OW; ++ow) dw_slide_edge<NV, SW, kTail>(r, t, ow, W, c, tail, e);
}

/// Which loops a row runs: the general tiles, or the sliding window (3x3, DW 1, SW 1 or 2).
enum class DwPath { kGeneral, kSlide1, kSlide2 };

/// One output row for the channel block [c, c + cn), cn in [1, NV * L].
template <DwPath kPath, int NV, class Act>
inline void dw_dispatch(const DwRow& r, int64_t OW, int64_t W, int64_t owa, int64_t owb, int64_t c,
                        int64_t cn, const Epilogue<Act>& e) {
  constexpr int L = V::kLanes;
  if constexpr (NV > 1) {
    if (cn <= (NV - 1) * L) {
      dw_dispatch<kPath, NV - 1>(r, OW, W, owa, owb, c, cn, e);
      return;
    }
  }
  const int tail = int(cn - (NV - 1) * L);
  if constexpr (kPath == DwPath::kGeneral) {
    if (tail == L)
      dw_row_block<NV, false>(r, OW, W, owa, owb, c, tail, e);
    else
      dw_row_block<NV, true>(r, OW, W, owa, owb, c, tail, e);
  } else {
    constexpr int SW = kPath == DwPath::kSlide1 ? 1 : 2;
    if (tail == L)
      dw_slide_row<NV, SW, false>(r, OW, W, owa, owb, c, tail, e);
    else
      dw_slide_row<NV, SW, true>(r, OW, W, owa, owb, c, tail, e);
  }
}

/// All channels [c0, c1) of one output row, in blocks of NV vectors.
template <DwPath kPath, int NV, class Act>
inline void dw_row(const DwRow& r, int64_t OW, int64_t W, int64_t owa, int64_t owb, int64_t c0,
                   int64_t c1, const Epilogue<Act>& e) {
  constexpr int64_t kBlock = int64_t(NV) * V::kLanes;
  for (int64_t c = c0; c < c1; c += kBlock)
    dw_dispatch<kPath, NV>(r, OW, W, owa, owb, c, c1 - c < kBlock ? c1 - c : kBlock, e);
}

/// The depthwise conv's path (the 3x3 sliding windows where they apply) and its interior
/// output columns [owa, owb): every tap column inside the input.
struct DwGeometry {
  DwPath path;
  int64_t owa, owb;
};

inline DwGeometry dw_geometry(const Conv2dShape& s) {
  DwGeometry g;
  g.path = s.KH != 3 || s.KW != 3 || s.DW != 1 ? DwPath::kGeneral
           : s.SW == 1                         ? DwPath::kSlide1
           : s.SW == 2                         ? DwPath::kSlide2
                                               : DwPath::kGeneral;
  g.owa = (s.PW + s.SW - 1) / s.SW;
  const int64_t last = s.W - 1 + s.PW - (s.KW - 1) * s.DW;  // ow * SW <= last
  g.owb = last < 0 ? 0 : last / s.SW + 1;
  if (g.owa > s.OW) g.owa = s.OW;
  if (g.owb > s.OW) g.owb = s.OW;
  if (g.owb < g.owa) g.owb = g.owa;
  return g;
}

/// Channels [c0, c1) of output row oh of one image. x_rows: the image's input rows from row
/// row0 on ([rows][W][C]; the rows the window reads must be there); res_row (or null) and
/// y_row: the output row's residual and output ([OW][C]).
template <class Act>
inline void dw_output_row(const Conv2dShape& s, const DwGeometry& g, const float* x_rows,
                          int64_t row0, int64_t oh, int64_t c0, int64_t c1, const float* w,
                          const float* bias, const float* res_row, float* y_row,
                          const Epilogue<Act>& e) {
  DwRow r;
  r.x = x_rows;
  r.w = w;
  r.bias = bias;
  r.res = res_row;
  r.y = y_row;
  r.C = s.C;
  r.KW = s.KW;
  r.row_stride = s.W * s.C;
  const int64_t ih0 = oh * s.SH - s.PH;
  r.DH = s.DH;
  tap_range(ih0, s.DH, s.KH, s.H, &r.i0, &r.i1);
  r.ih0 = ih0 - row0;
  r.SW = s.SW;
  r.PW = s.PW;
  r.DW = s.DW;
  r.pix_stride = s.SW * s.C;
  r.tap_stride = s.DW * s.C;
  if (g.path == DwPath::kSlide1)
    dw_row<DwPath::kSlide1, kNhwcSlideVectors>(r, s.OW, s.W, g.owa, g.owb, c0, c1, e);
  else if (g.path == DwPath::kSlide2)
    dw_row<DwPath::kSlide2, kNhwcSlideVectors>(r, s.OW, s.W, g.owa, g.owb, c0, c1, e);
  else
    dw_row<DwPath::kGeneral, kNhwcVectors>(r, s.OW, s.W, g.owa, g.owb, c0, c1, e);
}

}  // namespace nhwc_detail

/// Floats below its input where the depthwise conv s writes its output over it
/// (depthwise_conv2d_nhwc_f32 with y == x - shift): PH rows and PW pixels, so that each output
/// pixel lands on the input pixel that the last window to read it (its own) has passed.
constexpr int64_t depthwise_nhwc_shift_floats(const Conv2dShape& s) {
  return (s.PH * s.W + s.PW) * s.C;
}

/// Whether s may be written over its input that way: one image, stride 1, dilation 1, the
/// output the input's size.
constexpr bool depthwise_nhwc_over_input_ok(const Conv2dShape& s) {
  return s.N == 1 && s.SH == 1 && s.SW == 1 && s.DH == 1 && s.DW == 1 && s.OH == s.H &&
         s.OW == s.W && s.PH >= 0 && s.PW >= 0 && s.PH < s.KH && s.PW < s.KW;
}

/// Channels per unit where the threads split the channels of a conv written over its input:
/// the register tile's channels (the 3x3 sliding tiles' or the general tiles').
constexpr int64_t depthwise_nhwc_over_input_unit(const Conv2dShape& s) {
  const bool slide = s.KH == 3 && s.KW == 3 && s.DW == 1;
  return int64_t(slide ? kNhwcSlideVectors : kNhwcVectors) * V::kLanes;
}

/// Row bands of a conv written over its input at `threads` threads: one per thread, at most
/// one per output row. The ops before and after a channels-last depthwise conv split the rows
/// the same way (gemm_split_rowa), so each thread reads what it wrote: a core reads what the
/// other core wrote at memory speed here. (With the channels split instead, MobileNetV2's
/// 14x14 depthwise convs took as long at 2 threads as at 1, and the projections after them
/// ran 10-20% slower.)
constexpr int64_t depthwise_nhwc_over_input_bands(const Conv2dShape& s, int threads) {
  return threads <= 1 ? 1 : threads < s.OH ? threads : s.OH;
}

/// Whether writing over the input pays at `threads`: always with one band; with row bands where
/// a band has at least 4 KH rows (its first KH rows are computed aside and copied). Else
/// the conv runs out of place, over (row, channel chunk) units. At 2 threads MobileNetV2's
/// 28x28 convs run ~1.5x faster over their input than out of place, its 14x14 ones ~1.3x
/// slower.
constexpr bool depthwise_nhwc_over_input_pays(const Conv2dShape& s, int threads) {
  const int64_t bands = depthwise_nhwc_over_input_bands(s, threads);
  return depthwise_nhwc_over_input_ok(s) && (bands == 1 || s.OH > 4 * s.KH * bands);
}

/// Scratch floats for a conv written over its input: every band but the first computes its
/// first KH output rows here (they overwrite input the band before still reads: KH - 1 rows
/// and, with PW, the last pixels of one more) and they are copied into place once that band
/// has run.
constexpr int64_t depthwise_nhwc_scratch_floats(const Conv2dShape& s, int threads) {
  return (depthwise_nhwc_over_input_bands(s, threads) - 1) * s.KH * s.OW * s.C;
}

namespace nhwc_detail {

/// The conv written over its input (y == x - depthwise_nhwc_shift_floats(s)). Output (r, c) is
/// stored over input (r - PH, c - PW), whose readers are the outputs (r - KH + 1 .. r, c - KW +
/// 1 .. c): in row-major order none comes after (r, c), and a tile stores after all its loads.
/// So each unit runs its rows in ascending order: a channel range over all rows, or a band of
/// rows whose first KH (those that overwrite input the band before reads) go to scratch and
/// are copied into place once the band before has run. Same sums as the out-of-place conv.
template <class Act>
inline void depthwise_over_input(const Conv2dShape& s, const DwGeometry& g, const float* x,
                                 const float* w, const float* bias, float* y,
                                 const Epilogue<Act>& e, float* scratch, int threads,
                                 ThreadPool* pool) {
  const int64_t row_out = s.OW * s.C;
  const int64_t bands = depthwise_nhwc_over_input_bands(s, threads);
  if (bands == 1 && pool && pool->size() > 1) {
    // One band at more than one thread: the channel units (independent, in any order) split.
    const int64_t cu = depthwise_nhwc_over_input_unit(s), units = (s.C + cu - 1) / cu;
    parallel_for(pool, units, [&](int64_t unit, int) {
      const int64_t c0 = unit * cu, c1 = c0 + cu < s.C ? c0 + cu : s.C;
      for (int64_t oh = 0; oh < s.OH; ++oh)
        dw_output_row(s, g, x, 0, oh, c0, c1, w, bias, nullptr, y + oh * row_out, e);
    });
    return;
  }
  if (bands == 1) {
    for (int64_t oh = 0; oh < s.OH; ++oh)
      dw_output_row(s, g, x, 0, oh, 0, s.C, w, bias, nullptr, y + oh * row_out, e);
    return;
  }
  // Band j's first KH rows (its deferred rows) overwrite input that band j - 1 still reads, so
  // they go to scratch, and are copied into place once both are done with them: by
  // whichever of the two threads marks its part of boundary j second (band j - 1 all its rows,
  // band j its deferred rows, which it computes first). No second job, and no thread waits.
  // Bands shorter than KH rows: band j - 2 may read that input too, so the copies wait for the
  // job's end.
  const bool handoff = bands <= ThreadPool::kMaxThreads && s.OH / bands >= s.KH;
  std::atomic<unsigned> boundary[ThreadPool::kMaxThreads];
  for (int64_t j = 0; handoff && j < bands; ++j) boundary[j].store(0, std::memory_order_relaxed);
  auto rows = [&](int64_t band, int64_t* a, int64_t* b, int64_t* d) {
    *a = band * s.OH / bands;
    *b = (band + 1) * s.OH / bands;
    *d = band == 0 ? 0 : *b - *a < s.KH ? *b - *a : s.KH;
  };
  auto copy = [&](int64_t j) {
    int64_t a, b, d;
    rows(j, &a, &b, &d);
    std::memcpy(y + a * row_out, scratch + (j - 1) * s.KH * row_out,
                size_t(d * row_out) * sizeof(float));
  };
  auto mark = [&](int64_t j, unsigned bit) {
    if (handoff && j > 0 && j < bands &&
        (boundary[j].fetch_or(bit, std::memory_order_acq_rel) | bit) == 3u)
      copy(j);
  };
  parallel_for(pool, bands, [&](int64_t band, int) {
    int64_t a, b, d;
    rows(band, &a, &b, &d);
    float* tmp = scratch + (band > 0 ? band - 1 : 0) * s.KH * row_out;
    for (int64_t oh = a; oh < b; ++oh) {
      dw_output_row(s, g, x, 0, oh, 0, s.C, w, bias, nullptr,
                    oh < a + d ? tmp + (oh - a) * row_out : y + oh * row_out, e);
      if (oh + 1 == a + d) mark(band, 2u);  // the deferred rows are in scratch
    }
    if (d == 0) mark(band, 2u);
    mark(band + 1, 1u);  // done reading the rows band + 1's deferred rows overwrite
  });
  if (!handoff)
    for (int64_t j = 1; j < bands; ++j) copy(j);
}

}  // namespace nhwc_detail

/// Depthwise conv on NHWC data: x [N, H, W, C], y [N, OH, OW, C], group == C == M.
/// w: the filter packed tap-major, w[(i * KW + j) * C + c] (depthwise_nhwc_pack_weights makes
/// it from ONNX's [C, 1, KH, KW]). bias: [C] or null. e.residual: [N, OH, OW, C] or null
/// (e.row_bias, e.col_bias and e.ld_residual are unused). Per output: acc = 0 + the in-bounds
/// taps' w * x in tap order (i-major, then j), then + bias[c], + residual, then the activation.
/// Split over (n, oh, channel chunk) units: bit-identical at any thread count. No scratch.
/// y may also be x - depthwise_nhwc_shift_floats(s) where depthwise_nhwc_over_input_ok(s) and
/// there is no residual: the output written over the input (the buffer holds the shift's
/// floats before x), bit-identical to the conv out of place; then scratch holds
/// depthwise_nhwc_scratch_floats(s, threads) and the pool runs at most `threads` threads.
template <class Act>
inline void depthwise_conv2d_nhwc_f32(const Conv2dShape& s, const float* x, const float* w,
                                      const float* bias, float* y, const Epilogue<Act>& e,
                                      ThreadPool* pool, float* scratch = nullptr, int threads = 1) {
  constexpr int64_t kBlock = int64_t(kNhwcVectors) * V::kLanes;  // channels per register tile
  if (s.N <= 0 || s.C <= 0 || s.OH <= 0 || s.OW <= 0) return;
  const nhwc_detail::DwGeometry g = nhwc_detail::dw_geometry(s);
  if (y + depthwise_nhwc_shift_floats(s) == x && depthwise_nhwc_over_input_ok(s) && !e.residual) {
    nhwc_detail::depthwise_over_input(s, g, x, w, bias, y, e, scratch, threads, pool);
    return;
  }
  // Channel chunks of up to 4 tile blocks per unit, so small planes with many channels (7x7 x
  // 960) still give the pool enough units.
  const int64_t chunk = 4 * kBlock;
  const int64_t chunks = (s.C + chunk - 1) / chunk;
  const int64_t plane_in = s.H * s.W * s.C, plane_out = s.OH * s.OW * s.C;
  parallel_for(pool, s.N * s.OH * chunks, [&](int64_t unit, int) {
    const int64_t ch = unit % chunks, row = unit / chunks;
    const int64_t n = row / s.OH, oh = row % s.OH;
    const int64_t out_row = n * plane_out + oh * s.OW * s.C;
    const int64_t c0 = ch * chunk, c1 = (ch + 1) * chunk < s.C ? (ch + 1) * chunk : s.C;
    nhwc_detail::dw_output_row(s, g, x + n * plane_in, 0, oh, c0, c1, w, bias,
                               e.residual ? e.residual + out_row : nullptr, y + out_row, e);
  });
}

}  // namespace kiln_cpu
