// kiln optimized CPU kernels: vectorized f32 math for softmax, normalization and activations.
//
//   exp(x)    range reduction x = n ln2 + r (|r| <= ln2/2, ln2 split in two parts), e^r by the
//             degree-7 polynomial 1 + r + r^2 P(r) with the Cephes expf coefficients, times
//             2^n. Measured max error: 2 ulp over [-87, 88] (tests/kernels). Below -87.33
//             the result is 2^-126 (no denormals: an absolute error under 1.2e-38); above
//             88.7228 (log FLT_MAX) it is +inf; NaN stays NaN.
//   erf(x)    Abramowitz & Stegun 7.1.26: 1 - t (a1 + t (a2 + ...)) e^{-x^2}, t = 1 / (1 + p|x|),
//             with x's sign; absolute error <= 1.5e-7 plus f32 rounding (measured 4.7e-7).
//   gelu(x)   0.5 x (1 + erf(x / sqrt 2)): absolute error <= 2e-7 |x|.
//   sigmoid   1 / (1 + exp(-x)): relative error a few ulp.
//   expm1(x)  e^x - 1: for |x| < 1 the degree-11 Taylor polynomial (no cancellation near 0),
//             else exp(x) - 1. Stated bound 4 ulp.
//   log(x)    x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m-1)/(m+1),
//             by the odd series to s^11; e ln2 added in two parts. Stated bound 2 ulp; log(0)
//             = -inf, log(x < 0) = NaN, log(inf) = inf; denormals are scaled by 2^23 first.
//   softplus  log(1 + e^-|x|) (+ x for x > 0), the log1p as log(w) u / (w - 1), w = 1 + u
//             (Goldberg's form: no cancellation for small u). Stated bound 4 ulp; 0 below
//             -87.34, where e^x < 2^-126.
//   tanh(x)   sign(x) u / (u + 2), u = expm1(2 min(|x|, 10)). Stated bound 4 ulp.
//   sin(x), cos(x)  for |x| <= 8192: x = j pi/2 + r (|r| <= pi/4; pi/2 in three parts, Cody and
//             Waite, each step one fma), sin r and cos r by the Cephes sinf/cosf polynomials,
//             the quadrant j mod 4 picking and signing one of them. Stated bound 2 ulp plus
//             an absolute 2e-11 |x| (pi/2's three parts are not pi/2: near a zero of sin or cos
//             far from 0 only the absolute part holds). Lanes beyond 8192, infinities and
//             NaN take std::sin / std::cos (kernels/ref's functors) lane by lane.
// These are approximations: results differ from kernels/ref's std:: functions in the last bits
// (within the bounds above) but are identical run to run and at any thread count.
#pragma once

#include <cmath>

#include "simd.h"

namespace kiln_cpu {

/// e^x lane by lane (see the header comment for the error bound).
inline V::R vexp(V::R x) {
  // hi lies just above log(FLT_MAX): every x beyond it overflows to +inf.
  const V::R hi = V::set1(88.73f), lo = V::set1(-87.33654f);
  // x86 min/max return the second operand when one is NaN: x goes second, NaN stays NaN.
  const V::R c = V::min(hi, V::max(lo, x));
  const V::R n = V::round(V::mul(c, V::set1(1.44269504088896341f)));
  V::R r = V::fma(n, V::set1(-0.693359375f), c);
  r = V::fma(n, V::set1(2.12194440e-4f), r);
  V::R p = V::set1(1.9875691500e-4f);
  p = V::fma(p, r, V::set1(1.3981999507e-3f));
  p = V::fma(p, r, V::set1(8.3334519073e-3f));
  p = V::fma(p, r, V::set1(4.1665795894e-2f));
  p = V::fma(p, r, V::set1(1.6666665459e-1f));
  p = V::fma(p, r, V::set1(5.0000001201e-1f));
  p = V::fma(p, V::mul(r, r), V::add(r, V::set1(1.0f)));
  return V::scale2(p, n);
}

/// erf(x) lane by lane (Abramowitz & Stegun 7.1.26).
inline V::R verf(V::R x) {
  const V::R a = V::abs(x);
  const V::R t = V::div(V::set1(1.0f), V::fma(V::set1(0.3275911f), a, V::set1(1.0f)));
  V::R p = V::set1(1.061405429f);
  p = V::fma(p, t, V::set1(-1.453152027f));
  p = V::fma(p, t, V::set1(1.421413741f));
  p = V::fma(p, t, V::set1(-0.284496736f));
  p = V::fma(p, t, V::set1(0.254829592f));
  p = V::mul(p, t);
  const V::R e = vexp(V::sub(V::zero(), V::mul(a, a)));
  const V::R y = V::sub(V::set1(1.0f), V::mul(p, e));
  return V::copysign(y, x);
}

/// GELU with the erf form: 0.5 x (1 + erf(x / sqrt 2)).
inline V::R vgelu(V::R x) {
  const V::R e = verf(V::mul(x, V::set1(0.70710678118654752f)));
  return V::mul(V::mul(V::set1(0.5f), x), V::add(V::set1(1.0f), e));
}

/// 1 / (1 + e^-x).
inline V::R vsigmoid(V::R x) {
  const V::R e = vexp(V::sub(V::zero(), x));
  return V::div(V::set1(1.0f), V::add(V::set1(1.0f), e));
}

/// e^x - 1 lane by lane.
inline V::R vexpm1(V::R x) {
  // 1/k! for k = 11 down to 2, Horner on x: x + x^2 (1/2 + x (1/6 + ...)).
  static constexpr float kInvFact[] = {2.5052108e-8f, 2.7557319e-7f, 2.7557319e-6f, 2.4801587e-5f,
                                       1.9841270e-4f, 1.3888889e-3f, 8.3333333e-3f, 4.1666667e-2f,
                                       1.6666667e-1f, 0.5f};
  V::R p = V::set1(kInvFact[0]);
  KILN_CPU_UNROLL for (int i = 1; i < 10; ++i) p = V::fma(p, x, V::set1(kInvFact[i]));
  p = V::fma(V::mul(x, x), p, x);
  const V::R e = V::sub(vexp(x), V::set1(1.0f));  // NaN x: NaN
  return V::lt_select(V::abs(x), V::set1(1.0f), p, e);
}

/// Natural log lane by lane.
inline V::R vlog(V::R x) {
  const V::R one = V::set1(1.0f), min_normal = V::set1(1.17549435e-38f);
  // Denormals are scaled into the normal range; the exponent takes the 23 back.
  const V::R xs = V::lt_select(x, min_normal, V::mul(x, V::set1(8388608.0f)), x);
  V::R e = V::lt_select(x, min_normal, V::set1(-23.0f), V::zero());
  V::R m = V::significand(xs);
  e = V::add(e, V::exponent(xs));
  // m in [1, 2) -> [sqrt(1/2), sqrt(2)): halve the upper part, one more in the exponent.
  const V::R sqrt2 = V::set1(1.41421356f);
  e = V::lt_select(sqrt2, m, V::add(e, one), e);
  m = V::lt_select(sqrt2, m, V::mul(m, V::set1(0.5f)), m);
  const V::R f = V::sub(m, one);  // exact (Sterbenz)
  const V::R s = V::div(f, V::add(V::set1(2.0f), f));
  const V::R z = V::mul(s, s);
  V::R p = V::set1(1.0f / 11.0f);
  p = V::fma(p, z, V::set1(1.0f / 9.0f));
  p = V::fma(p, z, V::set1(1.0f / 7.0f));
  p = V::fma(p, z, V::set1(1.0f / 5.0f));
  p = V::fma(p, z, V::set1(1.0f / 3.0f));
  const V::R s2 = V::add(s, s);
  const V::R logm = V::fma(V::mul(s2, z), p, s2);
  // e ln2 = e 0.693359375 (exact for |e| < 2^14) + e (-2.12194440e-4).
  V::R r = V::add(V::fma(e, V::set1(-2.12194440e-4f), logm), V::mul(e, V::set1(0.693359375f)));
  const V::R inf = V::set1(__builtin_inff());
  r = V::lt_select(V::set1(3.40282347e38f), x, inf, r);                     // +inf
  r = V::lt_select(x, V::zero(), V::set1(__builtin_nanf("")), r);           // x < 0
  r = V::lt_select(V::abs(x), V::set1(1e-45f), V::sub(V::zero(), inf), r);  // +-0
  return V::nan_select(x, x, r);
}

/// log(1 + e^x) lane by lane, without overflow for large x.
inline V::R vsoftplus(V::R x) {
  const V::R one = V::set1(1.0f);
  const V::R u = vexp(V::sub(V::zero(), V::abs(x)));  // (0, 1]
  const V::R w = V::add(one, u), d = V::sub(w, one);  // d exact
  // log1p(u) = log(w) u / d; d = 0 (u below half an ulp of 1) gives u.
  const V::R l = V::lt_select(d, V::set1(1e-45f), u, V::mul(vlog(w), V::div(u, d)));
  // Below vexp's range e^x (< 2^-126) is 0, not vexp's floor: x * softplus(x) (Mish) must
  // not become x * 2^-126.
  const V::R r = V::lt_select(x, V::set1(-87.33654f), V::zero(), l);
  return V::lt_select(V::zero(), x, V::add(x, l), r);  // NaN x: l is NaN
}

/// tanh(x) lane by lane.
inline V::R vtanh(V::R x) {
  // tanh(10) rounds to 1; the clamp keeps u + 2 finite. NaN stays NaN (the second operand).
  const V::R a = V::min(V::set1(10.0f), V::abs(x));
  const V::R u = vexpm1(V::add(a, a));
  return V::copysign(V::div(u, V::add(u, V::set1(2.0f))), x);
}

/// sin(x) (Cos false) or cos(x) (Cos true) lane by lane (see the header comment for the bound).
template <bool Cos>
inline V::R vsincos(V::R x) {
  constexpr float kMaxReduced = 8192.0f;
  const V::R j = V::round(V::mul(x, V::set1(0.636619772367581343f)));
  V::R r = V::fma(j, V::set1(-1.5703125f), x);
  r = V::fma(j, V::set1(-4.837512969970703125e-4f), r);
  r = V::fma(j, V::set1(-7.54978995489188216e-8f), r);
  const V::R z = V::mul(r, r);
  V::R ps = V::set1(-1.9515295891e-4f);
  ps = V::fma(ps, z, V::set1(8.3321608736e-3f));
  ps = V::fma(ps, z, V::set1(-1.6666654611e-1f));
  const V::R sin_r = V::fma(V::mul(ps, z), r, r);  // r = -0 stays -0
  V::R pc = V::set1(2.443315711809948e-5f);
  pc = V::fma(pc, z, V::set1(-1.388731625493765e-3f));
  pc = V::fma(pc, z, V::set1(4.166664568298827e-2f));
  const V::R cos_r = V::fma(V::mul(pc, z), z, V::fma(z, V::set1(-0.5f), V::set1(1.0f)));
  // Quadrant q = (j + Cos) mod 4 (exact: |j| < 2^13): odd takes cos r, 2 and 3 negate.
  const V::R jq = Cos ? V::add(j, V::set1(1.0f)) : j;
  const V::R q = V::sub(jq, V::mul(V::set1(4.0f), V::floor(V::mul(jq, V::set1(0.25f)))));
  const V::R odd = V::sub(q, V::mul(V::set1(2.0f), V::floor(V::mul(q, V::set1(0.5f)))));
  const V::R y = V::lt_select(V::set1(0.5f), odd, cos_r, sin_r);
  V::R res = V::lt_select(V::set1(1.5f), q, V::sub(V::zero(), y), y);
  // sin x rounds to x below 2^-12 (x^3 / 6 is under 2^-25 x), and the reduction made -0 +0.
  if constexpr (!Cos) res = V::lt_select(V::abs(x), V::set1(2.44140625e-4f), x, res);
  // Every lane within the reduction's range (false for NaN lanes too): done.
  const V::R a = V::abs(x);
  if (V::all_eq(V::min(a, V::set1(kMaxReduced)), a)) return res;
  float xs[V::kLanes], rs[V::kLanes];
  V::store(xs, x);
  V::store(rs, res);
  for (int i = 0; i < V::kLanes; ++i)
    if (!(std::fabs(xs[i]) <= kMaxReduced)) rs[i] = Cos ? std::cos(xs[i]) : std::sin(xs[i]);
  return V::load(rs);
}

inline V::R vsin(V::R x) {
  return vsincos<false>(x);
}
inline V::R vcos(V::R x) {
  return vsincos<true>(x);
}

}  // namespace kiln_cpu
