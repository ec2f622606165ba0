// kiln optimized CPU kernels: f32 2-D max pooling (NCHW; 1-D as H = 1), vectorized along
// output rows for stride 1, with the semantics of kiln_ref::max_pool: taps outside the input
// are skipped, NaN taps are ignored unless every tap is NaN (then NaN).
#pragma once

#include <cstdint>
#include <limits>

#include "parallel.h"
#include "simd.h"

namespace kiln_cpu {

struct Pool2dShape {
  int64_t planes;          // N * C
  int64_t H, W, KH, KW;    // input, window
  int64_t OH, OW;          // output
  int64_t SH, SW, DH, DW;  // strides, dilations
  int64_t PH, PW;          // begin pads
};

namespace pool_detail {

/// [lo, hi): the outputs o in [0, n) whose tap o * stride + base lies in [0, limit).
inline void tap_range(int64_t n, int64_t limit, int64_t stride, int64_t base, int64_t* lo,
                      int64_t* hi) {
  int64_t l = base >= 0 ? 0 : (-base + stride - 1) / stride;
  int64_t h = limit - 1 - base < 0 ? 0 : (limit - 1 - base) / stride + 1;
  if (h > n) h = n;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/// The exact result for one output whose vector result was -inf: -inf when some tap is a
/// number (all -inf), NaN when every tap is NaN, -inf with no tap at all.
inline float max_pool_slow(const Pool2dShape& s, const float* xp, int64_t oh, int64_t ow) {
  bool any = false, number = false;
  for (int64_t i = 0; i < s.KH; ++i) {
    const int64_t ih = oh * s.SH - s.PH + i * s.DH;
    if (ih < 0 || ih >= s.H) continue;
    for (int64_t j = 0; j < s.KW; ++j) {
      const int64_t iw = ow * s.SW - s.PW + j * s.DW;
      if (iw < 0 || iw >= s.W) continue;
      any = true;
      const float v = xp[ih * s.W + iw];
      if (v == v) number = true;
    }
  }
  return any && !number ? std::numeric_limits<float>::quiet_NaN()
                        : -std::numeric_limits<float>::infinity();
}

/// L outputs of a stride-2, dilation-1 row from ow0 on, all taps' columns inside the row
/// (ow0 * 2 - PW >= 0 and the last pair load ends inside it): taps j and j + 1 are the even and
/// odd floats of one pair of loads at column ow0 * 2 - PW + j. NaN taps are skipped (max(x,
/// best) keeps best); rows outside the input are skipped. Returns whether an output is -inf
/// (then max_pool_slow decides it), tested in registers: reading the stored floats back one by
/// one stalled on store forwarding, a third of ResNet-50's max pool.
inline bool max_pool_stride2_block(const Pool2dShape& s, const float* xp, int64_t oh,
                                   int64_t ow0, float* y) {
  constexpr int L = V::kLanes;
  V::R m = V::set1(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < s.KH; ++i) {
    const int64_t ih = oh * s.SH - s.PH + i * s.DH;
    if (ih < 0 || ih >= s.H) continue;
    const float* p = xp + ih * s.W + ow0 * 2 - s.PW;
    for (int64_t j = 0; j < s.KW; j += 2) {
      V::R even, odd;
      V::deinterleave2(V::load(p + j), V::load(p + j + L), &even, &odd);
      m = V::max(even, m);
      if (j + 1 < s.KW) m = V::max(odd, m);
    }
  }
  V::store(y, m);
  return V::any_eq(m, -std::numeric_limits<float>::infinity());
}

}  // namespace pool_detail

inline void max_pool2d_f32(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  constexpr int L = V::kLanes;
  const float ninf = -std::numeric_limits<float>::infinity();
  parallel_for(pool, s.planes, [&](int64_t p, int) {
    const float* xp = x + p * s.H * s.W;
    float* yp = y + p * s.OH * s.OW;
    for (int64_t oh = 0; oh < s.OH; ++oh) {
      float* yr = yp + oh * s.OW;
      if (s.SW != 1) {
        // Strided: each output's taps reduced in a register, no read-modify-write of y.
        // Stride 2, dilation 1: blocks of L outputs whose loads stay inside the row run as
        // vectors (pairs of loads split into even and odd taps); the rest run scalar.
        int64_t vlo = s.OW, vhi = s.OW;  // vector blocks start in [vlo, vhi]
        if (s.SW == 2 && s.DW == 1) {
          const int64_t jlast = (s.KW - 1) & ~int64_t(1);
          vlo = (s.PW + 1) / 2;
          vhi = (s.W - 2 * L - jlast + s.PW) / 2;  // last block start with in-row loads
          if (vhi > s.OW - L) vhi = s.OW - L;
          if (vhi < vlo) vlo = vhi = s.OW;
        }
        bool suspect = false;  // a vector block may hold -inf outputs
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          if (ow == vlo) {
            // Blocks at vlo, vlo + L, ..., and one last block ending at vhi + L (max is
            // idempotent, so an overlap is harmless).
            for (int64_t b = vlo;; b = b + L < vhi ? b + L : vhi) {
              suspect |= pool_detail::max_pool_stride2_block(s, xp, oh, b, yr + b);
              if (b == vhi) break;
            }
            ow = vhi + L - 1;
            continue;
          }
          float m = ninf;
          for (int64_t i = 0; i < s.KH; ++i) {
            const int64_t ih = oh * s.SH - s.PH + i * s.DH;
            if (ih < 0 || ih >= s.H) continue;
            const float* xr = xp + ih * s.W;
            for (int64_t j = 0; j < s.KW; ++j) {
              const int64_t iw = ow * s.SW - s.PW + j * s.DW;
              if (iw < 0 || iw >= s.W) continue;
              const float v = xr[iw];
              m = v > m ? v : m;  // NaN taps are skipped
            }
          }
          yr[ow] = m == ninf ? pool_detail::max_pool_slow(s, xp, oh, ow) : m;
        }
        if (suspect)
          for (int64_t ow = vlo; ow < vhi + L; ++ow)
            if (yr[ow] == ninf) yr[ow] = pool_detail::max_pool_slow(s, xp, oh, ow);
        continue;
      }
      for (int64_t ow = 0; ow < s.OW; ++ow) yr[ow] = ninf;
      for (int64_t i = 0; i < s.KH; ++i) {
        const int64_t ih = oh * s.SH - s.PH + i * s.DH;
        if (ih < 0 || ih >= s.H) continue;
        const float* xr = xp + ih * s.W;
        for (int64_t j = 0; j < s.KW; ++j) {
          const int64_t base = j * s.DW - s.PW;
          int64_t lo = 0, hi = 0;
          pool_detail::tap_range(s.OW, s.W, s.SW, base, &lo, &hi);
          {
            // max(x, best) keeps best where x is NaN (x86 MAXPS rules; the portable V too).
            int64_t ow = lo;
            for (; ow + L <= hi; ow += L)
              V::store(yr + ow, V::max(V::load(xr + ow + base), V::load(yr + ow)));
            if (ow < hi) {
              const int n = int(hi - ow);
              V::store(yr + ow, V::max(V::load(xr + ow + base, n), V::load(yr + ow, n)), n);
            }
          }
        }
      }
      for (int64_t ow = 0; ow < s.OW; ++ow)
        if (yr[ow] == ninf) yr[ow] = pool_detail::max_pool_slow(s, xp, oh, ow);
    }
  });
}

}  // namespace kiln_cpu
