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
// These are approximations: results differ from kernels/ref's std:: functions in the last bits
// (within the bounds above) but are identical run to run and at any thread count.
#pragma once

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

}  // namespace kiln_cpu
