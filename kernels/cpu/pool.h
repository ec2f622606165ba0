// kiln optimized CPU kernels: f32 2-D max pooling (NCHW; 1-D as H = 1), vectorized along
// output rows for stride 1 and for stride 2 (rows first, then columns: max_pool_row_s2), with
// the semantics of kiln_ref::max_pool: taps outside the input are skipped, NaN taps are ignored
// unless every tap is NaN (then NaN). Equal taps: the reference keeps the first in row-major
// order; the stride-2 path reduces each column's rows first, so where a window's maximum is a
// zero held as both +0 and -0 its sign may differ from the reference's (the values are equal).
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

/// One output row yr of a stride-2, dilation-1 window of at most 2 L + 1 columns (K: the
/// window's side when it is a compile-time K x K, 0: s.KH x s.KW at run time; a compile-time
/// window lets the compiler unroll the taps wherever the kernel is inlined). The window's rows
/// are reduced first, in registers (vert: the maximum over the input rows of L columns, -inf in
/// lanes outside the row, which are not read), then its columns: the 2 L columns from lane 0's
/// first tap, c0 = 2 ow - PW, split into even and odd columns E and O, give tap j as E (j even)
/// or O (j odd) shifted down j / 2 lanes, the lanes shifted in from the next block's E and O.
/// Each input value is read once per output row, and a block costs two deinterleaves and a
/// shift or two instead of a deinterleave per tap pair and row (ResNet-50's 3x3 pool: 207 ->
/// ~120 us). NaN taps are skipped (max(x, best) keeps best, best starting at -inf); rows outside
/// the input are skipped. An output that stays -inf is decided by max_pool_slow, found in
/// registers (reading the stored floats back one by one stalled on store forwarding).
template <int K>
inline void max_pool_row_s2(const Pool2dShape& s, const float* xp, int64_t oh, float* yr) {
  constexpr int L = V::kLanes;
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t KH = K ? K : s.KH, KW = K ? K : s.KW;
  int64_t i0 = 0, i1 = 0;  // the taps i whose input row oh * SH - PH + i * DH is inside
  tap_range(KH, s.H, s.DH, oh * s.SH - s.PH, &i0, &i1);
  const float* r0 = xp + (oh * s.SH - s.PH + i0 * s.DH) * s.W;
  const int64_t rs = s.DH * s.W;
  auto vert = [&](int64_t c) {
    V::R m = V::set1(ninf);
    if (c >= 0 && c + L <= s.W) {
      for (int64_t i = i0; i < i1; ++i) m = V::max(V::load(r0 + (i - i0) * rs + c), m);
    } else {
      const int64_t lo = c < 0 ? (-c < L ? -c : L) : 0;
      const int64_t hi = s.W - c < L ? (s.W - c > lo ? s.W - c : lo) : L;
      for (int64_t i = i0; i < i1; ++i)
        m = V::max(V::load_range_or(r0 + (i - i0) * rs + c, int(lo), int(hi), ninf), m);
    }
    return m;
  };
  V::R e, o;
  V::deinterleave2(vert(-s.PW), vert(L - s.PW), &e, &o);
  for (int64_t b = 0; b < s.OW; b += L) {
    const int n = int(s.OW - b < L ? s.OW - b : L);
    V::R m = e;
    if (KW > 1) m = V::max(o, m);
    // The next block's columns: for the next block, or for this one's last taps.
    V::R en = V::set1(ninf), on = en;
    if (b + L < s.OW || n - 1 + (KW - 1) / 2 >= L) {
      const int64_t c = 2 * (b + L) - s.PW;
      V::deinterleave2(vert(c), vert(c + L), &en, &on);
    }
    for (int64_t j = 2; j < KW; ++j)
      m = V::max(V::shift_in(j % 2 ? o : e, j % 2 ? on : en, int(j / 2)), m);
    if (n == L)
      V::store(yr + b, m);
    else
      V::store(yr + b, m, n);
    if (V::any_eq(m, ninf, n))
      for (int64_t w = b; w < b + n; ++w)
        if (yr[w] == ninf) yr[w] = max_pool_slow(s, xp, oh, w);
    e = en;
    o = on;
  }
}

/// One plane (xp to yp); K as in max_pool_row_s2.
template <int K>
inline void max_pool_plane(const Pool2dShape& s, const float* xp, float* yp) {
  constexpr int L = V::kLanes;
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t KH = K ? K : s.KH, KW = K ? K : s.KW;
  for (int64_t oh = 0; oh < s.OH; ++oh) {
    float* yr = yp + oh * s.OW;
    if (s.SW == 2 && s.DW == 1 && KW <= 2 * L + 1) {
      max_pool_row_s2<K>(s, xp, oh, yr);
      continue;
    }
    if (s.SW != 1) {
      // Other strides: each output's taps reduced in a register, scalar.
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        float m = ninf;
        for (int64_t i = 0; i < KH; ++i) {
          const int64_t ih = oh * s.SH - s.PH + i * s.DH;
          if (ih < 0 || ih >= s.H) continue;
          const float* xr = xp + ih * s.W;
          for (int64_t j = 0; j < KW; ++j) {
            const int64_t iw = ow * s.SW - s.PW + j * s.DW;
            if (iw < 0 || iw >= s.W) continue;
            const float v = xr[iw];
            m = v > m ? v : m;  // NaN taps are skipped
          }
        }
        yr[ow] = m == ninf ? max_pool_slow(s, xp, oh, ow) : m;
      }
      continue;
    }
    for (int64_t ow = 0; ow < s.OW; ++ow) yr[ow] = ninf;
    for (int64_t i = 0; i < KH; ++i) {
      const int64_t ih = oh * s.SH - s.PH + i * s.DH;
      if (ih < 0 || ih >= s.H) continue;
      const float* xr = xp + ih * s.W;
      for (int64_t j = 0; j < KW; ++j) {
        const int64_t base = j * s.DW - s.PW;
        int64_t lo = 0, hi = 0;
        tap_range(s.OW, s.W, s.SW, base, &lo, &hi);
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
      if (yr[ow] == ninf) yr[ow] = max_pool_slow(s, xp, oh, ow);
  }
}

}  // namespace pool_detail

inline void max_pool2d_f32(const Pool2dShape& s, const float* x, float* y, ThreadPool* pool) {
  parallel_for(pool, s.planes, [&](int64_t p, int) {
    const float* xp = x + p * s.H * s.W;
    float* yp = y + p * s.OH * s.OW;
    if (s.KH == 3 && s.KW == 3)
      pool_detail::max_pool_plane<3>(s, xp, yp);
    else if (s.KH == 2 && s.KW == 2)
      pool_detail::max_pool_plane<2>(s, xp, yp);
    else
      pool_detail::max_pool_plane<0>(s, xp, yp);
  });
}

}  // namespace kiln_cpu
