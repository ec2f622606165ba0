// kiln optimized CPU kernels: f32 2-D convolution (NCHW; 1-D as H = 1).
//  * conv2d_f32: implicit GEMM. Per image and group, Y[M, OH*OW] = W[M, C*kh*kw] * im2col(X),
//    with im2col packed a block at a time straight into the GEMM's B panels (gemm.h); a 1x1
//    stride-1 unpadded conv packs plain rows of X. The weights are the A operand, packed at
//    compile time (conv2d_pack_weights).
//  * depthwise_conv2d_f32: group == C == M, one filter per channel, over phase planes of the
//    padded input so every tap is a full-vector load at one flat offset (any stride/dilation).
// Both take the epilogue of gemm.h (row_bias = the conv bias, per output channel; residual
// with the output's layout) and split work over output channels / pixel blocks only.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gemm.h"
#include "vfunctor.h"

namespace kiln_cpu {

/// Shape of a 2-D convolution; pads are the begin pads (the end pads only shape OH/OW).
struct Conv2dShape {
  int64_t N, C, H, W;      // input
  int64_t M, KH, KW;       // output channels, kernel
  int64_t OH, OW;          // output spatial dims
  int64_t SH, SW, DH, DW;  // strides, dilations
  int64_t PH, PW;          // begin pads
  int64_t group;
};

/// A 1x1 stride-1 unpadded conv, whose im2col matrix is X itself.
constexpr bool conv2d_pointwise(const Conv2dShape& s) {
  return s.KH == 1 && s.KW == 1 && s.SH == 1 && s.SW == 1 && s.PH == 0 && s.PW == 0 &&
         s.OH == s.H && s.OW == s.W;
}

namespace conv_detail {

/// Packs rows [k0, k0 + kc) x columns [p0, p0 + pc) of the im2col matrix of one image's
/// channel group (x: [Cg, H, W]) into kNR-column panels, zero where the window leaves the
/// input or past pc.
inline void pack_im2col(const Conv2dShape& s, const float* x, int64_t k0, int64_t kc, int64_t p0,
                        int64_t pc, float* dst) {
  const int64_t HW = s.H * s.W;
  // A 1x1 stride-1 conv's im2col matrix is X: its rows whole, a partial panel's zeros by masked
  // loads and full stores. (Per panel, a copy and a zero fill of the rest took 115 ns a panel
  // row on a Zen 3, its masked store and `rep stos` slow there: ResNet-50's 7x7 1x1 convs spent
  // more time packing than multiplying at 2 threads.)
  if (conv2d_pointwise(s)) return pack_b_rows(x, HW, k0, kc, p0, pc, dst);
  const int64_t panels = (pc + kNR - 1) / kNR;
  // Each panel's first output pixel, as (row, column): no division in the loops below.
  int64_t oh0[kNC / kNR], ow0[kNC / kNR];
  for (int64_t q = 0; q < panels; ++q) {
    oh0[q] = (p0 + q * kNR) / s.OW;
    ow0[q] = (p0 + q * kNR) % s.OW;
  }
  // Row k of im2col is input channel c, kernel tap (i, j); stepped, not divided.
  int64_t c = k0 / (s.KH * s.KW), i = (k0 / s.KW) % s.KH, j = k0 % s.KW;
  for (int64_t k = 0; k < kc; ++k) {
    const float* xc = x + c * HW;
    const int64_t base = j * s.DW - s.PW;
    for (int64_t q = 0; q < panels; ++q) {
      float* d = dst + (q * kc + k) * kNR;
      const int64_t cols = pc - q * kNR < kNR ? pc - q * kNR : kNR;
      int64_t oh = oh0[q], ow = ow0[q], t = 0;
      while (t < cols) {
        // The run of this output row inside the panel.
        const int64_t run = s.OW - ow < cols - t ? s.OW - ow : cols - t;
        const int64_t ih = oh * s.SH - s.PH + i * s.DH;
        if (ih < 0 || ih >= s.H) {
          zero_floats(d + t, run);
        } else {
          const float* xr = xc + ih * s.W;
          // iw = (ow + u) * SW + base: valid for u in [lo, hi).
          const int64_t first = ow * s.SW + base;
          int64_t lo = first >= 0 ? 0 : (-first + s.SW - 1) / s.SW;
          int64_t hi = s.W - 1 - first < 0 ? 0 : (s.W - 1 - first) / s.SW + 1;
          if (hi > run) hi = run;
          if (lo > hi) lo = hi;
          zero_floats(d + t, lo);
          copy_floats_strided(d + t + lo, xr + first + lo * s.SW, hi - lo, s.SW);
          zero_floats(d + t + hi, run - hi);
        }
        t += run;
        ow = 0;
        ++oh;
      }
      zero_floats(d + t, kNR - t);
    }
    if (++j == s.KW) {
      j = 0;
      if (++i == s.KH) {
        i = 0;
        ++c;
      }
    }
  }
}

}  // namespace conv_detail

/// Whether conv2d_f32 reads a 1x1 stride-1 conv's full panels of X in place (Panels::ldb)
/// rather than packing them: with 32-column panels (AVX-512) a panel's row is two cache lines of
/// one page, and reading in place took ResNet-50's 1x1 shapes from 75-84% to 83-92% of peak;
/// with 16-column panels (AVX2) it is one line of a new page every k step, and packing each
/// block once for all the strips is 3-17% faster (a Zen 3, those shapes, data from L3).
constexpr bool kPointwiseInPlace = kNR >= 32;

/// A strided 1x1 conv reading inside the image only: conv2d_f32 copies the pixels it reads into
/// scratch and runs a pointwise conv on them. (Packing its panels from x spent 17% of ResNet-50's
/// 256 -> 512 56x56 stride-2 conv: per channel a few short runs, 12.5 KB from the last's.)
constexpr bool conv2d_strided_pointwise(const Conv2dShape& s) {
  return s.KH == 1 && s.KW == 1 && (s.SH != 1 || s.SW != 1) && s.PH == 0 && s.PW == 0 &&
         (s.OH - 1) * s.SH < s.H && (s.OW - 1) * s.SW < s.W;
}

/// The pointwise conv conv2d_f32 runs on the copy of a strided one's input, for one image.
constexpr Conv2dShape conv2d_subsampled(Conv2dShape p) {
  p.N = 1, p.H = p.OH, p.W = p.OW;
  p.SH = p.SW = p.DH = p.DW = 1;
  return p;
}

/// Floats of that copy (one image), first in conv2d_f32's scratch; 0 for other convs.
constexpr int64_t conv2d_subsample_floats(const Conv2dShape& s) {
  return conv2d_strided_pointwise(s) ? (s.C * s.OH * s.OW + 15) / 16 * 16 : 0;
}

/// Scratch floats conv2d_f32 needs for `threads` threads.
constexpr int64_t conv2d_scratch_floats(const Conv2dShape& s, int threads) {
  return conv2d_subsample_floats(s) +
         gemm_pack_floats(s.OH * s.OW, s.C / s.group * s.KH * s.KW) * threads;
}

/// Floats of the packed weights of conv2d_f32: per group, pack_a of its [M/G, C/G*KH*KW] rows.
inline int64_t conv2d_packed_weight_floats(const Conv2dShape& s) {
  return s.group * packed_a_floats(s.M / s.group, s.C / s.group * s.KH * s.KW);
}

/// Packs conv weights w [M, C/group, KH, KW] for conv2d_f32 (done at compile time).
inline void conv2d_pack_weights(const Conv2dShape& s, const float* w, float* dst) {
  const int64_t G = s.group, Mg = s.M / G, K = s.C / G * s.KH * s.KW;
  for (int64_t g = 0; g < G; ++g)
    pack_a(w + g * Mg * K, K, Mg, K, dst + g * packed_a_floats(Mg, K));
}

/// Y = conv(X, W) + bias, then the epilogue (residual, activation). x [N, C, H, W], w_packed
/// from conv2d_pack_weights, bias [M] or null, y [N, M, OH, OW]. e.row_bias must be null (the
/// bias is the conv's own); e.residual has y's layout.
template <class Act>
inline void conv2d_f32(const Conv2dShape& s, const float* x, const float* w_packed,
                       const float* bias, float* y, const Epilogue<Act>& e, float* scratch,
                       ThreadPool* pool, GemmPlan plan = {}) {
  const int64_t G = s.group, Cg = s.C / G, Mg = s.M / G;
  const int64_t K = Cg * s.KH * s.KW, P = s.OH * s.OW;
  if (conv2d_strided_pointwise(s)) {
    // The input pixels the conv reads, per image, then a pointwise conv on them: the same
    // sums in the same order (bit-identical to packing its im2col panels from x).
    const Conv2dShape p = conv2d_subsampled(s);
    float* const sub = scratch;
    for (int64_t n = 0; n < s.N; ++n) {
      const float* xn = x + n * s.C * s.H * s.W;
      parallel_for(pool, s.C, [&](int64_t c, int) {
        for (int64_t oh = 0; oh < s.OH; ++oh) {
          const float* src = xn + (c * s.H + oh * s.SH) * s.W;
          copy_floats_strided(sub + (c * s.OH + oh) * s.OW, src, s.OW, s.SW);
        }
      });
      Epilogue<Act> en = e;
      en.residual = e.residual ? e.residual + n * s.M * P : nullptr;
      conv2d_f32(p, sub, w_packed, bias, y + n * s.M * P, en, scratch + conv2d_subsample_floats(s),
                 pool, plan);
    }
    return;
  }
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const float* xg = x + (n * s.C + g * Cg) * s.H * s.W;
      const int64_t yoff = (n * s.M + g * Mg) * P;
      Epilogue<Act> eg = e;
      eg.row_bias = bias ? bias + g * Mg : nullptr;
      eg.residual = e.residual ? e.residual + yoff : nullptr;
      eg.ld_residual = P;
      const float* wg = w_packed + g * packed_a_floats(Mg, K);
      // A 1x1 stride-1 unpadded conv's im2col matrix is X itself (rows of P pixels): its full
      // kNR-column panels are read in place (kPointwiseInPlace); only a last partial one is packed
      // (a full-width read of it would run past X). The same sums in the same order.
      const bool pointwise = conv2d_pointwise(s);
      const int64_t in_place = pointwise && kPointwiseInPlace ? P / kNR * kNR : 0;
      if (in_place > 0)
        gemm_packed_a(
            Mg, in_place, K, wg,
            [&](int64_t k0, int64_t, int64_t p0, int64_t, float*) {
              return Panels{xg + k0 * P + p0, kNR, P};
            },
            y + yoff, P, eg, nullptr, pool, 0, plan);
      if (in_place == P) continue;
      Epilogue<Act> er = eg;
      er.residual = eg.residual ? eg.residual + in_place : nullptr;
      gemm_packed_a(
          Mg, P - in_place, K, wg,
          [&](int64_t k0, int64_t kc, int64_t p0, int64_t pc, float* buf) {
            conv_detail::pack_im2col(s, xg, k0, kc, in_place + p0, pc, buf);
            return Panels{buf, kc * kNR};
          },
          y + yoff + in_place, P, er, scratch, pool, 0, plan);
    }
}

/// Pixels of one ConvTranspose column block (the GEMM's N per block).
constexpr int64_t kConvTransposeBlock = 256;

/// Floats of the packed weights of conv_transpose2d_f32 (pack_a of the [M*KH*KW, C] transpose).
inline int64_t conv_transpose2d_packed_weight_floats(const Conv2dShape& s) {
  return packed_a_floats(s.M * s.KH * s.KW, s.C);
}

/// Whether the taps of a ConvTranspose tile its output: kernel == stride, no pads, no dilation,
/// no output padding, so every output gets exactly one column value (stored once).
constexpr bool conv_transpose2d_tiled(const Conv2dShape& s) {
  return s.KH == s.SH && s.KW == s.SW && s.DH == 1 && s.DW == 1 && s.PH == 0 && s.PW == 0 &&
         s.OH == s.H * s.SH && s.OW == s.W * s.SW;
}

/// Whether conv_transpose2d_f32 deals whole blocks of input pixels to the threads (each thread
/// its own GEMM and its pixels' outputs) rather than splitting each block's GEMM and scatter:
/// tiled taps (no two blocks write one output) and at least two blocks per thread.
constexpr bool conv_transpose2d_by_blocks(const Conv2dShape& s, int threads) {
  const int64_t blocks = (s.H * s.W + kConvTransposeBlock - 1) / kConvTransposeBlock;
  return conv_transpose2d_tiled(s) && threads > 1 && blocks >= 2 * threads;
}

/// Scratch floats conv_transpose2d_f32 needs for `threads` threads: per thread a column block
/// [M*KH*KW, kConvTransposeBlock] (all used where conv_transpose2d_by_blocks, else the first),
/// then per thread a B block. Enough for any smaller pool too ({P}_set_threads).
inline int64_t conv_transpose2d_scratch_floats(const Conv2dShape& s, int threads) {
  const int64_t hw = s.H * s.W, block = hw < kConvTransposeBlock ? hw : kConvTransposeBlock;
  return ((s.M * s.KH * s.KW * block + 15) / 16 * 16 + gemm_pack_floats(block, s.C)) * threads;
}

/// ConvTranspose, group 1: x [N, C, H, W] (the shape's input), y [N, M, OH, OW]; every input
/// pixel p and tap (i, j) add x[:, p] . w[:, m, i, j] to y[m] at (h * SH - PH + i * DH,
/// w * SW - PW + j * DW) when inside. Per block of input pixels, the columns
/// col[(m, i, j), p] = sum_c w[c, m, i, j] * x[c, p] come from the GEMM (weights packed at
/// compile time: pack_a of the [M*KH*KW, C] transpose), then are added into y (split over
/// output channels, so no two threads write one element; or, conv_transpose2d_by_blocks, whole
/// blocks dealt to the threads). bias [M] or null. The epilogue's residual (y's layout) and
/// activation apply to each finished output: act((sum + bias) + residual) (e.row_bias /
/// col_bias unused). The sums are the same under either split: bit-identical at any threads.
template <class Act>
inline void conv_transpose2d_f32(const Conv2dShape& s, const float* x, const float* wt_packed,
                                 const float* bias, float* y, const Epilogue<Act>& e,
                                 float* scratch, ThreadPool* pool) {
  const int64_t HW = s.H * s.W, OHW = s.OH * s.OW, taps = s.KH * s.KW, Mk = s.M * taps;
  const int64_t block = HW < kConvTransposeBlock ? HW : kConvTransposeBlock;
  const int threads = pool ? pool->size() : 1;
  const bool by_blocks = conv_transpose2d_by_blocks(s, threads);
  const int64_t col_floats = (Mk * block + 15) / 16 * 16;
  float* pack = scratch + col_floats * threads;
  const auto none = make_epilogue(kiln_ref::NoActivation{}, nullptr, nullptr, nullptr, 0);
  // Kernel == stride, no pads, no dilation, no output padding: the taps tile y, so every output
  // gets exactly one column value and is stored once (col + bias: the same sum as bias + col).
  const bool tiled = conv_transpose2d_tiled(s);
  // The columns of input pixels [p0, p0 + pc) of image xn into col (the GEMM on `gemm_pool`'s
  // threads, its B blocks in `pk`).
  auto columns = [&](const float* xn, int64_t p0, int64_t pc, float* col, float* pk,
                     ThreadPool* gemm_pool) {
    gemm_packed_a(
        Mk, pc, s.C, wt_packed,
        [&](int64_t k0, int64_t kc, int64_t n0, int64_t nc, float* buf) {
          pack_b_rows(xn + p0, HW, k0, kc, n0, nc, buf);
          return Panels{buf, kc * kNR};
        },
        col, pc, none, pk, gemm_pool);
  };
  // Output channel m's values from the columns of pixels [p0, p0 + pc) in col.
  auto scatter = [&](float* yn, int64_t m, int64_t p0, int64_t pc, const float* col) {
    float* ym = yn + m * OHW;
    if (tiled) {
      const float b = bias ? bias[m] : 0.0f;
      // Stride 2 across (a 2-wide kernel, U-Net style upsampling): the taps (i, 0) and (i, 1)
      // of L pixels make 2L adjacent outputs, interleaved in registers, with the residual and
      // activation there too (the same operations as the scalar loop below, lane by lane).
      // PP-OCRv4 det's 24-channel ConvTranspose with its residual and Relu stored one output
      // at a time.
      if constexpr (ActInRegister<Act>::kYes) {
        if (s.KW == 2 && s.SW == 2) {
          constexpr int L = V::kLanes;
          const V::R bv = V::set1(b);
          for (int64_t i = 0; i < s.KH; ++i) {
            const float* c0 = col + (m * taps + i * 2) * pc;
            const float* c1 = c0 + pc;
            int64_t h = p0 / s.W, w = p0 % s.W;
            for (int64_t q = 0; q < pc;) {
              const int64_t run = s.W - w < pc - q ? s.W - w : pc - q;
              float* yr = ym + (h * s.SH + i) * s.OW + 2 * w;
              const float* rr = e.residual ? e.residual + (yr - y) : nullptr;
              int64_t u = 0;
              for (; u + L <= run; u += L) {
                V::R lo, hi;
                V::interleave2(V::add(V::load(c0 + q + u), bv), V::add(V::load(c1 + q + u), bv),
                               &lo, &hi);
                if (rr) {
                  lo = V::add(lo, V::load(rr + 2 * u));
                  hi = V::add(hi, V::load(rr + 2 * u + L));
                }
                V::store(yr + 2 * u, ActInRegister<Act>::apply(e.act, lo));
                V::store(yr + 2 * u + L, ActInRegister<Act>::apply(e.act, hi));
              }
              for (; u < run; ++u)
                for (int j = 0; j < 2; ++j) {
                  float v = (j ? c1 : c0)[q + u] + b;
                  if (rr) v += rr[2 * u + j];
                  yr[2 * u + j] = act_value(e.act, v);
                }
              q += run;
              w = 0;
              ++h;
            }
          }
          return;
        }
      }
      for (int64_t t = 0; t < taps; ++t) {
        const float* cr = col + (m * taps + t) * pc;
        float* yt = ym + (t / s.KW) * s.OW + t % s.KW;  // tap (i, j) of input pixel (0, 0)
        int64_t h = p0 / s.W, w = p0 % s.W;
        for (int64_t q = 0; q < pc;) {
          const int64_t run = s.W - w < pc - q ? s.W - w : pc - q;
          float* yr = yt + h * s.SH * s.OW + w * s.SW;
          if (!e.residual && std::is_same_v<Act, kiln_ref::NoActivation>) {
            for (int64_t u = 0; u < run; ++u) yr[u * s.SW] = cr[q + u] + b;
          } else {
            const float* rr = e.residual ? e.residual + (yr - y) : nullptr;
            for (int64_t u = 0; u < run; ++u) {
              float v = cr[q + u] + b;
              if (rr) v += rr[u * s.SW];
              yr[u * s.SW] = act_value(e.act, v);
            }
          }
          q += run;
          w = 0;
          ++h;
        }
      }
      return;
    }
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t i = t / s.KW, j = t % s.KW;
      const float* cr = col + (m * taps + t) * pc;
      int64_t h = p0 / s.W, w = p0 % s.W;
      for (int64_t q = 0; q < pc; ++q) {
        const int64_t oh = h * s.SH - s.PH + i * s.DH, ow = w * s.SW - s.PW + j * s.DW;
        if (oh >= 0 && oh < s.OH && ow >= 0 && ow < s.OW) ym[oh * s.OW + ow] += cr[q];
        if (++w == s.W) {
          w = 0;
          ++h;
        }
      }
    }
  };
  const int64_t blocks = (HW + block - 1) / block;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * s.C * HW;
    float* yn = y + n * s.M * OHW;
    if (by_blocks) {
      // PP-OCRv4 det's 24 -> 1 ConvTranspose (320x320 -> 640x640) ran its one output channel's
      // scatter on one thread, two pool dispatches per block of 256 pixels.
      parallel_for(pool, blocks, [&](int64_t b, int tid) {
        const int64_t p0 = b * block, pc = HW - p0 < block ? HW - p0 : block;
        float* col = scratch + int64_t(tid) * col_floats;
        columns(xn, p0, pc, col, pack + int64_t(tid) * gemm_pack_floats(block, s.C), nullptr);
        for (int64_t m = 0; m < s.M; ++m) scatter(yn, m, p0, pc, col);
      });
      continue;
    }
    if (!tiled)
      parallel_for(pool, s.M, [&](int64_t m, int) {
        const float b = bias ? bias[m] : 0.0f;
        for (int64_t o = 0; o < OHW; ++o) yn[m * OHW + o] = b;
      });
    for (int64_t p0 = 0; p0 < HW; p0 += block) {
      const int64_t pc = HW - p0 < block ? HW - p0 : block;
      columns(xn, p0, pc, scratch, pack, pool);
      parallel_for(pool, s.M, [&](int64_t m, int) { scatter(yn, m, p0, pc, scratch); });
    }
    // Overlapping taps: outputs are final only now; the epilogue runs per output channel.
    if (!tiled && (e.residual || !std::is_same_v<Act, kiln_ref::NoActivation>))
      parallel_for(pool, s.M, [&](int64_t m, int) {
        float* ym = yn + m * OHW;
        const float* rm = e.residual ? e.residual + (ym - y) : nullptr;
        int64_t o = 0;
        if constexpr (ActInRegister<Act>::kYes)
          for (; o + V::kLanes <= OHW; o += V::kLanes) {
            V::R v = V::load(ym + o);
            if (rm) v = V::add(v, V::load(rm + o));
            V::store(ym + o, ActInRegister<Act>::apply(e.act, v));
          }
        for (; o < OHW; ++o) ym[o] = act_value(e.act, rm ? ym[o] + rm[o] : ym[o]);
      });
  }
}

/// conv_transpose2d_f32 without an epilogue.
inline void conv_transpose2d_f32(const Conv2dShape& s, const float* x, const float* wt_packed,
                                 const float* bias, float* y, float* scratch, ThreadPool* pool) {
  conv_transpose2d_f32(s, x, wt_packed, bias, y,
                       make_epilogue(kiln_ref::NoActivation{}, nullptr, nullptr, nullptr, 0),
                       scratch, pool);
}

namespace conv_detail {

/// Input row xr[0:cols) into the phase planes' row prow: padded column q = iw + PW goes to
/// phase plane q % SW (planes `plane` floats apart), index q / SW. Stride 1 is one copy; stride
/// 2 splits pairs of vectors into even and odd columns; other strides are counted, not divided.
inline void scatter_row_phases(const float* xr, int64_t cols, int64_t SW, int64_t PW, int64_t plane,
                               float* prow) {
  constexpr int L = V::kLanes;
  if (SW == 1) {
    copy_floats(prow + PW, xr, cols);
    return;
  }
  if (SW == 2) {
    float* de = prow + (PW % 2) * plane + PW / 2;
    float* dd = prow + ((PW + 1) % 2) * plane + (PW + 1) / 2;
    int64_t k = 0;
    for (; 2 * k + 2 * L <= cols; k += L) {
      V::R ev, od;
      V::deinterleave2(V::load(xr + 2 * k), V::load(xr + 2 * k + L), &ev, &od);
      V::store(de + k, ev);
      V::store(dd + k, od);
    }
    // The last r < 2 L columns with masks (a 56-wide row ran 24 of its 56 columns scalar).
    const int r = int(cols - 2 * k);
    if (r > 0) {
      V::R ev, od;
      const V::R lo = V::load(xr + 2 * k, r < L ? r : L);
      V::deinterleave2(lo, V::load(xr + 2 * k + L, r > L ? r - L : 0), &ev, &od);
      V::store(de + k, ev, (r + 1) / 2);
      if (r > 1) V::store(dd + k, od, r / 2);
    }
    return;
  }
  int64_t qm = PW % SW, qd = PW / SW;
  for (int64_t iw = 0; iw < cols; ++iw) {
    prow[qm * plane + qd] = xr[iw];
    if (++qm == SW) {
      qm = 0;
      ++qd;
    }
  }
}

/// Geometry of depthwise_conv2d_f32's phase planes: the zero-padded input plane split into
/// SH x SW planes by (row % SH, column % SW), each Hq x Wq, so that every tap of every output
/// pixel (oh, ow) reads plane[tap phase][(oh + tap row offset) * Wq + ow + tap column offset]:
/// one flat index f = oh * Wq + ow for all taps, read a full vector at a time.
struct DepthwisePlanes {
  int64_t Hq, Wq, plane, flat;  // plane = Hq * Wq; flat = outputs computed (OH * Wq rounded up)
  int64_t scratch;              // floats per thread: the planes, then the flat outputs
};

constexpr DepthwisePlanes depthwise_planes(const Conv2dShape& s) {
  DepthwisePlanes d{};
  const int64_t needH = (s.OH - 1) * s.SH + (s.KH - 1) * s.DH + 1;
  const int64_t needW = (s.OW - 1) * s.SW + (s.KW - 1) * s.DW + 1;
  const int64_t Hp = needH > s.H + s.PH ? needH : s.H + s.PH;
  const int64_t Wp = needW > s.W + s.PW ? needW : s.W + s.PW;
  d.Hq = (Hp + s.SH - 1) / s.SH;
  d.Wq = (Wp + s.SW - 1) / s.SW;
  d.plane = d.Hq * d.Wq;
  d.flat = (s.OH * d.Wq + 63) / 64 * 64;  // whole groups of 4 vectors at any lane count
  const int64_t planes = (s.SH * s.SW * d.plane + d.flat + 15) / 16 * 16;
  d.scratch = planes + d.flat;
  return d;
}

}  // namespace conv_detail

/// Scratch floats per thread for depthwise_conv2d_f32.
constexpr int64_t depthwise_scratch_floats(const Conv2dShape& s) {
  return conv_detail::depthwise_planes(s).scratch;
}

/// Depthwise: group == C == M, one filter per channel. Same arguments as conv2d_f32, plus
/// `scratch_per_thread` floats of scratch for each thread (depthwise_scratch_floats; with less,
/// or none, plain loops run). Per channel, the padded input is split into phase planes
/// (conv_detail::DepthwisePlanes), every output of the flat index range is accumulated over the
/// taps four vectors at a time (no masks: lanes past a row's end are computed and dropped),
/// then each output row gets the epilogue and is stored.
template <class Act>
inline void depthwise_conv2d_f32(const Conv2dShape& s, const float* x, const float* w,
                                 const float* bias, float* y, const Epilogue<Act>& e,
                                 float* scratch, int64_t scratch_per_thread, ThreadPool* pool) {
  constexpr int L = V::kLanes;
  const int64_t HW = s.H * s.W, P = s.OH * s.OW, taps = s.KH * s.KW;
  const conv_detail::DepthwisePlanes d = conv_detail::depthwise_planes(s);
  const bool planes = scratch && d.scratch <= scratch_per_thread;
  const int64_t planesFloats = d.scratch - d.flat;
  // Where each tap reads, relative to the planes and the flat output index (the same for every
  // channel: computed once, no division per channel).
  int64_t tap_offset[64];
  const bool offsets = taps <= 64;
  for (int64_t t = 0; offsets && t < taps; ++t) {
    const int64_t ri = (t / s.KW) * s.DH, cj = (t % s.KW) * s.DW;
    tap_offset[t] = ((ri % s.SH) * s.SW + cj % s.SW) * d.plane + (ri / s.SH) * d.Wq + cj / s.SW;
  }
  parallel_for(pool, s.N * s.C, [&](int64_t unit, int thread) {
    const int64_t c = unit % s.C;
    const float* xc = x + unit * HW;
    const float* wc = w + c * taps;
    float* yc = y + unit * P;
    const float* rc = e.residual ? e.residual + unit * P : nullptr;
    if (!planes) {  // the plain loops
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          float acc = 0.0f;
          for (int64_t i = 0; i < s.KH; ++i) {
            const int64_t ih = oh * s.SH - s.PH + i * s.DH;
            if (ih < 0 || ih >= s.H) continue;
            for (int64_t j = 0; j < s.KW; ++j) {
              const int64_t iw = ow * s.SW - s.PW + j * s.DW;
              if (iw >= 0 && iw < s.W) acc += wc[i * s.KW + j] * xc[ih * s.W + iw];
            }
          }
          if (bias) acc += bias[c];
          if (rc) acc += rc[oh * s.OW + ow];
          yc[oh * s.OW + ow] = act_value(e.act, acc);
        }
      return;
    }
    float* pl = scratch + thread * scratch_per_thread;
    float* out = pl + planesFloats;
    // The phase planes of the zero-padded input (and the over-read tail) from this channel.
    zero_floats(pl, planesFloats);
    // Padded row r = ih + PH goes to row r / SH of the planes of phase r % SH: counted.
    int64_t rm = s.PH % s.SH, rq = s.PH / s.SH;
    for (int64_t ih = 0; ih < s.H; ++ih, rq += ++rm == s.SH, rm = rm == s.SH ? 0 : rm) {
      float* prow = pl + rm * s.SW * d.plane + rq * d.Wq;
      const float* xr = xc + ih * s.W;
      conv_detail::scatter_row_phases(xr, s.W, s.SW, s.PW, d.plane, prow);
    }
    for (int64_t f = 0; f < d.flat; f += 4 * L) {
      V::R a0 = V::zero(), a1 = V::zero(), a2 = V::zero(), a3 = V::zero();
      for (int64_t t = 0; t < taps; ++t) {
        const float* p;
        if (offsets) {
          p = pl + tap_offset[t] + f;
        } else {
          const int64_t ri = (t / s.KW) * s.DH, cj = (t % s.KW) * s.DW;
          p = pl + ((ri % s.SH) * s.SW + cj % s.SW) * d.plane + (ri / s.SH) * d.Wq + cj / s.SW + f;
        }
        const V::R wv = V::set1(wc[t]);
        a0 = V::fma(wv, V::load(p), a0);
        a1 = V::fma(wv, V::load(p + L), a1);
        a2 = V::fma(wv, V::load(p + 2 * L), a2);
        a3 = V::fma(wv, V::load(p + 3 * L), a3);
      }
      V::store(out + f, a0);
      V::store(out + f + L, a1);
      V::store(out + f + 2 * L, a2);
      V::store(out + f + 3 * L, a3);
    }
    // Output rows: bias, residual, activation, then the store.
    const V::R vb = V::set1(bias ? bias[c] : 0.0f);
    for (int64_t oh = 0; oh < s.OH; ++oh) {
      const float* o = out + oh * d.Wq;
      float* yr = yc + oh * s.OW;
      const float* rr = rc ? rc + oh * s.OW : nullptr;
      for (int64_t ow = 0; ow < s.OW; ow += L) {
        const int n = int(s.OW - ow < L ? s.OW - ow : L);
        V::R v = n == L ? V::load(o + ow) : V::load(o + ow, n);
        if (bias) v = V::add(v, vb);
        if (rr) v = V::add(v, n == L ? V::load(rr + ow) : V::load(rr + ow, n));
        v = ActInRegister<Act>::apply(e.act, v);
        if (n == L)
          V::store(yr + ow, v);
        else
          V::store(yr + ow, v, n);
        if (!ActInRegister<Act>::kYes)
          for (int u = 0; u < n; ++u) yr[ow + u] = act_value(e.act, yr[ow + u]);
      }
    }
  });
}

}  // namespace kiln_cpu
