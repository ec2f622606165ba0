// kiln optimized CPU kernels: the im2col matrix [K, P] of an NCHW image, rows of it at a time,
// for the pixel-rows convolution (conv_pixrows.h): from a zero-padded plane per channel for
// small images (im2col_plane_rows), else run by run of output rows (im2col_rows).
#pragma once

#include <cstdint>

#include "conv.h"

namespace kiln_cpu {
namespace pixrows_detail {

/// Floats of the zero-padded channel plane of im2col_plane_rows (with the vector loads'
/// slack), or 0 when that path does not apply: output rows of at most kLanes columns at stride
/// 1 or 2 (ResNet-50's 7x7 and 14x14 stages) and a plane of at most kPlaneFloats.
constexpr int64_t kPlaneFloats = 4096;
constexpr int64_t plane_floats(const Conv2dShape& s) {
  if (s.OW > V::kLanes || (s.SW != 1 && s.SW != 2)) return 0;
  const int64_t hp = (s.OH - 1) * s.SH + (s.KH - 1) * s.DH + 1;
  const int64_t wp = (s.OW - 1) * s.SW + (s.KW - 1) * s.DW + 1;
  const int64_t n = hp * wp + 2 * V::kLanes;
  return n <= kPlaneFloats ? n : 0;
}

/// im2col_rows of whole images for plane_floats(s) > 0: per channel, the input window (rows
/// -PH.., columns -PW..) goes once into a zero-padded plane on the stack; then every output row
/// of a tap is one vector load from it (two and their even lanes at stride 2) and one store,
/// unmasked where it stays inside the row of dst (the next output row overwrites the rest).
/// A 1x1 kernel whose every output reads inside the image (no pads) reads its rows straight
/// from x (masked loads: nothing past the row's last input is read), no plane. The plane's rows are
/// whole-vector stores, each running on into the next row, which the next stores overwrite
/// (plane_floats' slack takes the last row's): per row a zero, a masked copy and a zero fill (two
/// masked stores) cost ResNet-50's 1x1 stride-2 convs at 7x7 10% of their time.
inline void im2col_plane_rows(const Conv2dShape& s, const float* x, int64_t k0, int64_t k1,
                              float* dst, int64_t ld) {
  constexpr int L = V::kLanes;
  const int64_t hp = (s.OH - 1) * s.SH + (s.KH - 1) * s.DH + 1;
  const int64_t wp = (s.OW - 1) * s.SW + (s.KW - 1) * s.DW + 1;
  const int64_t taps = s.KH * s.KW, P = s.OH * s.OW;
  const bool direct =
      taps == 1 && s.PH == 0 && s.PW == 0 && (s.OH - 1) * s.SH < s.H && (s.OW - 1) * s.SW < s.W;
  alignas(64) float plane[kPlaneFloats];
  // Input columns [c0, c1) of a plane row (plane column cp = iw + PW) lie inside the image.
  const int64_t c0 = s.PW > 0 ? s.PW : 0;
  const int64_t c1 = s.W + s.PW < wp ? s.W + s.PW : wp;
  // Floats of an output row's input: OW, or at stride 2 up to the last one read.
  const int row_floats = int(s.SW == 1 ? s.OW : 2 * s.OW - 1);
  for (int64_t k = k0, c = -1; k < k1; ++k) {
    if (!direct && k / taps != c) {
      c = k / taps;
      for (int64_t r = 0; r < hp; ++r) {
        float* pr = plane + r * wp;
        const int64_t ih = r - s.PH;
        const bool inside = ih >= 0 && ih < s.H && c0 < c1;
        // xr[cp]: plane column cp of this row (masked lanes outside [c0, c1) are not read).
        const float* xr = x + (c * s.H + (inside ? ih : 0)) * s.W - s.PW;
        for (int64_t f = 0; f < wp; f += L) {
          const int64_t a = c0 - f > 0 ? c0 - f : 0, b = c1 - f < L ? c1 - f : L;
          V::store(pr + f, inside && a < b ? V::load_range(xr + f, int(a), int(b)) : V::zero());
        }
      }
      zero_floats(plane + hp * wp, 2 * L);
    }
    const int64_t i = (k / s.KW) % s.KH, j = k % s.KW;
    // The tap's first input row and the step between output rows' inputs.
    const float* src = direct ? x + k * s.H * s.W : plane + i * s.DH * wp + j * s.DW;
    const int64_t step = direct ? s.SH * s.W : s.SH * wp;
    float* d = dst + (k - k0) * ld;
    for (int64_t oh = 0; oh < s.OH; ++oh, src += step, d += s.OW) {
      V::R v;
      if (s.SW == 1) {
        v = direct ? V::load(src, row_floats) : V::load(src);
      } else {
        V::R odd;
        if (direct)
          V::deinterleave2(V::load(src, row_floats < L ? row_floats : L),
                           V::load(src + L, row_floats > L ? row_floats - L : 0), &v, &odd);
        else
          V::deinterleave2(V::load(src), V::load(src + L), &v, &odd);
      }
      if ((oh + 1) * s.OW + L <= P + s.OW && oh + 1 < s.OH)
        V::store(d, v);
      else
        V::store(d, v, int(s.OW));
    }
  }
}

/// Rows [k0, k1) x pixels [p0, p0 + pc) of one image's im2col matrix (x: [C, H, W]) into
/// dst (element (k, p) at dst[(k - k0) * ld + p - p0]), zero where the window leaves the input.
inline void im2col_rows(const Conv2dShape& s, const float* x, int64_t k0, int64_t k1,
                        int64_t p0, int64_t pc, float* dst, int64_t ld) {
  const int64_t taps = s.KH * s.KW;
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t c = k / taps, i = (k / s.KW) % s.KH, j = k % s.KW;
    const int64_t first = j * s.DW - s.PW;  // the input column of output column 0
    // Output columns [lo, hi) read inside the row: 0 <= ow * SW + first < W.
    int64_t lo = first >= 0 ? 0 : (-first + s.SW - 1) / s.SW;
    int64_t hi = s.W - 1 - first < 0 ? 0 : (s.W - 1 - first) / s.SW + 1;
    if (hi > s.OW) hi = s.OW;
    if (lo > hi) lo = hi;
    float* d = dst + (k - k0) * ld;
    // Runs of output rows: [ow0, ow1) of row oh.
    for (int64_t p = p0, oh = p0 / s.OW, ow0 = p0 % s.OW; p < p0 + pc; ++oh, ow0 = 0) {
      const int64_t ow1 = s.OW < ow0 + (p0 + pc - p) ? s.OW : ow0 + (p0 + pc - p);
      float* dr = d + (p - p0) - ow0;  // dr[ow]: output column ow of this row
      const int64_t ih = oh * s.SH - s.PH + i * s.DH;
      if (ih < 0 || ih >= s.H) {
        zero_floats(dr + ow0, ow1 - ow0);
      } else {
        const float* xr = x + (c * s.H + ih) * s.W;
        const int64_t a = lo > ow0 ? lo : ow0, b = hi < ow1 ? hi : ow1;
        if (a >= b) {
          zero_floats(dr + ow0, ow1 - ow0);
        } else {
          zero_floats(dr + ow0, a - ow0);
          const int64_t at = first + a * s.SW;  // >= 0
          copy_floats_strided(dr + a, xr + at, b - a, s.SW);
          zero_floats(dr + b, ow1 - b);
        }
      }
      p += ow1 - ow0;
    }
  }
}

}  // namespace pixrows_detail
}  // namespace kiln_cpu
