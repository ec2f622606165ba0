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
        for (int64_t ow = 0; ow < s.OW; ++ow) {
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
