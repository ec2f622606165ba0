// kiln optimized CPU kernels: the vector form of kernels/ref's scalar functors, lane by lane.
// VectorForm<F>::apply(f, x...) computes what f(x...) computes, on V::R lanes; kYes says
// whether F has one (the default is the identity with kYes false, so that a kernel can apply
// the scalar functor to what it stored instead). Where the scalar functor is IEEE arithmetic,
// comparisons and selects, the vector form does the same operations in the same order and is
// bit-identical to it (kExact); where it calls a libm function (exp, log, tanh, erf, expm1,
// log1p, sin, cos) the vector form uses vmath.h's approximations, within the bounds stated
// there, identical on every run and at any thread count. Pow is exact (vfunctor_detail::pow). One
// table serves the GEMM and conv epilogues (an activation in registers), standalone activations and
// math ops, and the fused element-wise chains (kiln.Elementwise).
#pragma once

#include "kiln_ref/activation.h"
#include "kiln_ref/elementwise.h"
#include "kiln_ref/epilogue.h"
#include "vmath.h"

namespace kiln_cpu {

template <class F>
struct VectorForm {
  static constexpr bool kYes = false;
  static constexpr bool kExact = false;
  static V::R apply(const F&, V::R v) { return v; }
};

/// f(x...) through its vector form.
template <class F, class... R>
inline V::R vapply(const F& f, R... x) {
  static_assert(VectorForm<F>::kYes, "no vector form for this functor");
  return VectorForm<F>::apply(f, x...);
}

/// act applied to one value as its vector form applies it to a lane (the scalar functor where
/// the two are identical or there is no vector form): code that finishes one output at a time
/// (tails, scalar transforms) gives what the vector code gives, whatever the split of the work.
template <class Act>
inline float act_value(const Act& act, float x) {
  if constexpr (VectorForm<Act>::kYes && !VectorForm<Act>::kExact)
    return V::first(VectorForm<Act>::apply(act, V::set1(x)));
  else
    return act(x);
}

/// Clip with per-lane bounds, as kiln_ref::Clip: x < lo gives lo, then x > hi gives hi (so lo >
/// hi gives hi), NaN stays NaN.
inline V::R vclip(V::R x, V::R lo, V::R hi) {
  x = V::lt_select(x, lo, lo, x);
  return V::lt_select(hi, x, hi, x);
}

namespace vfunctor_detail {
inline V::R neg(V::R x) {
  return V::mul(V::set1(-1.0f), x);
}  // -0 for 0, unlike 0 - x

/// kiln_ref::Pow (f32) lane by lane, bit-identical to it: the scalar functor rounds pow in
/// double to float, which float arithmetic gives exactly for the exponents of every lane being
/// 2 (a a: the double square is exact), 1, -1 (1 / a) and 0.5 (sqrt a, for lanes a >= 0 or -0:
/// |sqrt a| makes pow(-0, 0.5) +0); double rounding through double is innocuous for products,
/// quotients and square roots of floats. Other exponents, and vectors with a NaN lane, take the
/// scalar functor lane by lane. A chain's exponent is almost always a constant (a Splat), so
/// the branch goes the same way for a whole loop.
inline V::R pow(V::R a, V::R b) {
  if (V::all_eq(a, a)) {
    if (V::all_eq(b, V::set1(2.0f))) return V::mul(a, a);
    if (V::all_eq(b, V::set1(1.0f))) return a;
    if (V::all_eq(b, V::set1(-1.0f))) return V::div(V::set1(1.0f), a);
    if (V::all_eq(b, V::set1(0.5f)) && V::all_eq(V::abs(a), a)) return V::abs(V::sqrt(a));
  }
  float x[V::kLanes], y[V::kLanes];
  V::store(x, a);
  V::store(y, b);
  for (int i = 0; i < V::kLanes; ++i) x[i] = kiln_ref::Pow{}(x[i], y[i]);
  return V::load(x);
}
}  // namespace vfunctor_detail

// One specialization per functor: K_EXACT is whether it is bit-identical to the scalar one.
#define KILN_CPU_VECTOR_FORM(F, K_EXACT, PARAMS, BODY) \
  template <>                                          \
  struct VectorForm<F> {                               \
    static constexpr bool kYes = true;                 \
    static constexpr bool kExact = K_EXACT;            \
    [[maybe_unused]] static V::R apply PARAMS BODY     \
  };

// ---- activations (kiln_ref/activation.h, kiln_ref/epilogue.h) ----
KILN_CPU_VECTOR_FORM(kiln_ref::NoActivation, true, (const kiln_ref::NoActivation&, V::R x),
                     { return x; })
// max(0, x) returns x for NaN and for -0, like kiln_ref::Relu.
KILN_CPU_VECTOR_FORM(kiln_ref::Relu, true, (const kiln_ref::Relu&, V::R x),
                     { return V::max(V::zero(), x); })
KILN_CPU_VECTOR_FORM(kiln_ref::LeakyRelu, true, (const kiln_ref::LeakyRelu& f, V::R x),
                     { return V::lt_select(x, V::zero(), V::mul(V::set1(f.alpha), x), x); })
KILN_CPU_VECTOR_FORM(kiln_ref::ThresholdedRelu, true, (const kiln_ref::ThresholdedRelu& f, V::R x),
                     { return V::lt_select(V::set1(f.alpha), x, x, V::zero()); })
KILN_CPU_VECTOR_FORM(kiln_ref::Clip<float>, true, (const kiln_ref::Clip<float>& c, V::R x),
                     { return V::min(V::set1(c.hi), V::max(V::set1(c.lo), x)); })
KILN_CPU_VECTOR_FORM(kiln_ref::HardSigmoid, true, (const kiln_ref::HardSigmoid& h, V::R x), {
  const V::R v = V::add(V::mul(V::set1(h.alpha), x), V::set1(h.beta));
  return V::min(V::set1(1.0f), V::max(V::zero(), v));  // NaN v stays NaN
})
KILN_CPU_VECTOR_FORM(kiln_ref::HardSwish, true, (const kiln_ref::HardSwish&, V::R x), {
  const V::R v = V::add(V::mul(x, V::set1(float(1.0 / 6.0))), V::set1(0.5f));
  return V::mul(x, V::min(V::set1(1.0f), V::max(V::zero(), v)));  // NaN x: NaN
})
KILN_CPU_VECTOR_FORM(kiln_ref::Softsign, true, (const kiln_ref::Softsign&, V::R x),
                     { return V::div(x, V::add(V::set1(1.0f), V::abs(x))); })
KILN_CPU_VECTOR_FORM(kiln_ref::Shrink, true, (const kiln_ref::Shrink& f, V::R x), {
  const V::R hi = V::lt_select(V::set1(f.lambd), x, V::sub(x, V::set1(f.bias)), V::zero());
  return V::lt_select(x, V::set1(-f.lambd), V::add(x, V::set1(f.bias)), hi);
})
KILN_CPU_VECTOR_FORM(kiln_ref::Sigmoid, false, (const kiln_ref::Sigmoid&, V::R x),
                     { return vsigmoid(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Swish, false, (const kiln_ref::Swish& f, V::R x), {
  return V::mul(x, vsigmoid(f.alpha == 1.0f ? x : V::mul(V::set1(f.alpha), x)));
})
KILN_CPU_VECTOR_FORM(kiln_ref::Tanh, false, (const kiln_ref::Tanh&, V::R x), { return vtanh(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Gelu, false, (const kiln_ref::Gelu& f, V::R x), {
  if (!f.tanh_approx) return vgelu(x);
  const V::R inner = V::add(x, V::mul(V::mul(V::mul(V::set1(0.044715f), x), x), x));
  const V::R t = vtanh(V::mul(V::set1(0.7978845608028654f), inner));
  return V::mul(V::mul(V::set1(0.5f), x), V::add(V::set1(1.0f), t));
})
KILN_CPU_VECTOR_FORM(kiln_ref::Elu, false, (const kiln_ref::Elu& f, V::R x),
                     { return V::lt_select(V::zero(), x, x, V::mul(V::set1(f.alpha), vexpm1(x))); })
KILN_CPU_VECTOR_FORM(kiln_ref::Selu, false, (const kiln_ref::Selu& f, V::R x), {
  const V::R neg = V::mul(V::set1(f.gamma), V::mul(V::set1(f.alpha), vexpm1(x)));
  return V::lt_select(V::zero(), x, V::mul(V::set1(f.gamma), x), neg);
})
KILN_CPU_VECTOR_FORM(kiln_ref::Celu, false, (const kiln_ref::Celu& f, V::R x), {
  const V::R neg = V::mul(V::set1(f.alpha), vexpm1(V::div(x, V::set1(f.alpha))));
  const V::R r = V::add(V::lt_select(V::zero(), x, x, V::zero()),
                        V::lt_select(neg, V::zero(), neg, V::zero()));
  return V::nan_select(x, x, r);
})
KILN_CPU_VECTOR_FORM(kiln_ref::Softplus, false, (const kiln_ref::Softplus&, V::R x),
                     { return vsoftplus(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Mish, false, (const kiln_ref::Mish&, V::R x),
                     { return V::mul(x, vtanh(vsoftplus(x))); })

// ---- arithmetic and math (kiln_ref/elementwise.h), f32 ----
KILN_CPU_VECTOR_FORM(kiln_ref::Add, true, (const kiln_ref::Add&, V::R a, V::R b),
                     { return V::add(a, b); })
KILN_CPU_VECTOR_FORM(kiln_ref::Sub, true, (const kiln_ref::Sub&, V::R a, V::R b),
                     { return V::sub(a, b); })
KILN_CPU_VECTOR_FORM(kiln_ref::Mul, true, (const kiln_ref::Mul&, V::R a, V::R b),
                     { return V::mul(a, b); })
KILN_CPU_VECTOR_FORM(kiln_ref::Div, true, (const kiln_ref::Div&, V::R a, V::R b),
                     { return V::div(a, b); })
// NaN if either is NaN (the canonical quiet NaN, as the scalar functor returns), else a < b ?
// b : a (so max(-0, +0) is a, as there).
KILN_CPU_VECTOR_FORM(kiln_ref::Max, true, (const kiln_ref::Max&, V::R a, V::R b), {
  const V::R nan = V::set1(__builtin_nanf(""));
  return V::nan_select(a, nan, V::nan_select(b, nan, V::lt_select(a, b, b, a)));
})
KILN_CPU_VECTOR_FORM(kiln_ref::Min, true, (const kiln_ref::Min&, V::R a, V::R b), {
  const V::R nan = V::set1(__builtin_nanf(""));
  return V::nan_select(a, nan, V::nan_select(b, nan, V::lt_select(b, a, b, a)));
})
KILN_CPU_VECTOR_FORM(kiln_ref::Neg, true, (const kiln_ref::Neg&, V::R x),
                     { return vfunctor_detail::neg(x); })
// a < 0 ? -a : a, so -0 stays -0 as in the scalar functor.
KILN_CPU_VECTOR_FORM(kiln_ref::Abs, true, (const kiln_ref::Abs&, V::R x),
                     { return V::lt_select(x, V::zero(), vfunctor_detail::neg(x), x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Sign, true, (const kiln_ref::Sign&, V::R x), {
  const V::R one = V::set1(1.0f);
  const V::R s =
      V::lt_select(V::zero(), x, one, V::lt_select(x, V::zero(), V::set1(-1.0f), V::zero()));
  return V::nan_select(x, x, s);
})
KILN_CPU_VECTOR_FORM(kiln_ref::Reciprocal, true, (const kiln_ref::Reciprocal&, V::R x),
                     { return V::div(V::set1(1.0f), x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Sqrt, true, (const kiln_ref::Sqrt&, V::R x), { return V::sqrt(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Floor, true, (const kiln_ref::Floor&, V::R x),
                     { return V::floor(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Ceil, true, (const kiln_ref::Ceil&, V::R x), { return V::ceil(x); })
// nearbyint under the default rounding mode: ties to even.
KILN_CPU_VECTOR_FORM(kiln_ref::Round, true, (const kiln_ref::Round&, V::R x),
                     { return V::round(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Exp, false, (const kiln_ref::Exp&, V::R x), { return vexp(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Log, false, (const kiln_ref::Log&, V::R x), { return vlog(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Erf, false, (const kiln_ref::Erf&, V::R x), { return verf(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Sin, false, (const kiln_ref::Sin&, V::R x), { return vsin(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Cos, false, (const kiln_ref::Cos&, V::R x), { return vcos(x); })
KILN_CPU_VECTOR_FORM(kiln_ref::Pow, true, (const kiln_ref::Pow&, V::R a, V::R b),
                     { return vfunctor_detail::pow(a, b); })

#undef KILN_CPU_VECTOR_FORM

}  // namespace kiln_cpu
