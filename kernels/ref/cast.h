// kiln reference kernels: element types (f16/bf16 tags, load/store), exact numeric conversions,
// Cast.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common.h"

namespace kiln_ref {

// ---- element types ----
//
// Kernels that compute on values are templated on an element type E: a C++ arithmetic type
// (bool, int8_t ... uint64_t, float, double) or one of the tags below for the 16-bit float
// formats, whose tensors are stored as uint16_t bit patterns. A kernel's pointers have type
// storage_t<E>; it reads with load<E> (f16/bf16 widen to float) and writes with store<E>
// (round to nearest even). Generated code names E explicitly: kiln_ref::cumsum<float>(...),
// kiln_ref::cumsum<kiln_ref::f16_tag>(...).

/// IEEE binary16 element tag (storage uint16_t).
struct f16_tag {};
/// bfloat16 element tag (storage uint16_t).
struct bf16_tag {};

template <class E>
struct elem_traits {
  using storage = E;
  using compute = E;
};
template <>
struct elem_traits<f16_tag> {
  using storage = uint16_t;
  using compute = float;
};
template <>
struct elem_traits<bf16_tag> {
  using storage = uint16_t;
  using compute = float;
};

/// The C++ type a tensor of E is stored as.
template <class E>
using storage_t = typename elem_traits<E>::storage;
/// The type values of E are computed in (float for f16/bf16, E otherwise).
template <class E>
using compute_t = typename elem_traits<E>::compute;

template <class E>
constexpr bool is_half_v = std::is_same_v<E, f16_tag> || std::is_same_v<E, bf16_tag>;
/// True for float, double, f16 and bf16.
template <class E>
constexpr bool is_floating_v = std::is_floating_point_v<E> || is_half_v<E>;
/// True for the integer types other than bool.
template <class E>
constexpr bool is_int_v = std::is_integral_v<E> && !std::is_same_v<E, bool>;

/// Reads one element as its compute type.
template <class E>
inline compute_t<E> load(storage_t<E> v) {
  if constexpr (std::is_same_v<E, f16_tag>)
    return half_to_float(v);
  else if constexpr (std::is_same_v<E, bf16_tag>)
    return bf16_to_float(v);
  else
    return v;
}

/// Writes one element from its compute type (f16/bf16 round to nearest even).
template <class E>
inline storage_t<E> store(compute_t<E> v) {
  if constexpr (std::is_same_v<E, f16_tag>)
    return float_to_half(v);
  else if constexpr (std::is_same_v<E, bf16_tag>)
    return float_to_bf16(v);
  else
    return v;
}

// ---- exact building blocks ----

/// Two's-complement wrap of the low bits of u into integer type T (defined for every value,
/// unlike a plain conversion to a signed type before C++20).
template <class T>
inline T wrap_to(uint64_t u) {
  static_assert(is_int_v<T>, "integer target");
  using U = std::make_unsigned_t<T>;
  U v = U(u);
  if constexpr (std::is_signed_v<T>) {
    if (v <= U(std::numeric_limits<T>::max())) return T(v);
    return T(-T(U(~v)) - 1);
  } else {
    return v;
  }
}

/// Round half to even, independent of the floating-point environment's rounding mode.
template <class F>
inline F round_half_even(F v) {
  F r = std::floor(v);
  F diff = v - r;
  if (diff > F(0.5)) return r + F(1);
  if (diff == F(0.5)) return std::fmod(r, F(2)) == F(0) ? r : r + F(1);
  return r;  // also NaN and infinities
}

/// double -> float, round to nearest even; overflow gives +-inf (never UB).
inline float double_to_float(double d) {
  if (d != d) return std::numeric_limits<float>::quiet_NaN();
  if (std::fabs(d) > double(FLT_MAX)) {
    // Values at or past the midpoint between FLT_MAX and 2^128 round to infinity.
    const double half_way = 0x1.ffffffp+127;
    float big = std::fabs(d) >= half_way ? std::numeric_limits<float>::infinity() : FLT_MAX;
    return d < 0 ? -big : big;
  }
  return float(d);
}

/// double -> float rounded to odd (truncate, then set the last bit when inexact). A second
/// rounding to a format with at least two fewer significand bits (f16, bf16) is then exact
/// round-to-nearest-even of the original double: no double-rounding error.
inline float double_to_float_odd(double d) {
  if (d != d) return std::numeric_limits<float>::quiet_NaN();
  if (std::fabs(d) > double(FLT_MAX)) {
    if (std::isinf(d))
      return d < 0 ? -std::numeric_limits<float>::infinity()
                   : std::numeric_limits<float>::infinity();
    return d < 0 ? -FLT_MAX : FLT_MAX;  // FLT_MAX's last bit is already odd
  }
  float f = float(d);
  if (double(f) == d) return f;
  if (std::fabs(double(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Unsigned magnitude -> float rounded to odd (see double_to_float_odd).
inline float u64_to_float_odd(uint64_t u) {
  if (u < (uint64_t(1) << 24)) return float(u);
  int shift = 0;
  while ((u >> shift) >= (uint64_t(1) << 24)) ++shift;
  uint64_t m = u >> shift;
  if (u & ((uint64_t(1) << shift) - 1)) m |= 1;
  return std::ldexp(float(m), shift);
}

/// Integer -> float rounded to odd.
template <class I>
inline float int_to_float_odd(I v) {
  if constexpr (std::is_signed_v<I>) {
    if (v < 0) return -u64_to_float_odd(uint64_t(0) - uint64_t(int64_t(v)));
  }
  return u64_to_float_odd(uint64_t(v));
}

/// Float -> integer type T, the kernels' one definition: NaN -> 0; otherwise truncate toward
/// zero; values that fit int64 wrap (two's complement) to T's width, as numpy and ORT do on
/// x86-64 for 8/16-bit targets; for uint64, [2^63, 2^64) converts exactly; anything else
/// (+-inf, |x| >= 2^63) gives INT64_MIN's low bits (x86's "integer indefinite": 0 for
/// narrower types). No input is undefined behaviour.
template <class T, class F>
inline T float_to_int(F x) {
  double t = std::trunc(double(x));
  if (t != t) return T(0);
  if (t >= -9223372036854775808.0 && t < 9223372036854775808.0) {
    return wrap_to<T>(uint64_t(int64_t(t)));
  }
  if constexpr (std::is_same_v<T, uint64_t>) {
    if (t >= 0 && t < 18446744073709551616.0) return uint64_t(t);
  }
  return wrap_to<T>(uint64_t(1) << 63);
}

// ---- Cast ----

/// One value of element type From converted to element type To (see cast()).
template <class From, class To>
inline storage_t<To> cast_value(storage_t<From> v) {
  if constexpr (std::is_same_v<From, To>) {
    return v;
  } else if constexpr (is_half_v<From>) {
    return cast_value<float, To>(load<From>(v));  // widening to float is exact
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);  // NaN -> true
  } else if constexpr (std::is_same_v<From, bool>) {
    if constexpr (is_half_v<To>)
      return store<To>(v ? 1.0f : 0.0f);
    else
      return v ? To(1) : To(0);
  } else if constexpr (is_half_v<To>) {
    // Round to odd into float, then once to nearest even: exact for every source type.
    if constexpr (std::is_same_v<From, float>)
      return store<To>(v);
    else if constexpr (std::is_same_v<From, double>)
      return store<To>(double_to_float_odd(v));
    else
      return store<To>(int_to_float_odd(v));
  } else if constexpr (is_int_v<To>) {
    if constexpr (std::is_floating_point_v<From>)
      return float_to_int<To>(v);
    else
      return wrap_to<To>(uint64_t(v));  // sign-extends, then keeps the low bits
  } else if constexpr (std::is_same_v<To, float> && std::is_same_v<From, double>) {
    return double_to_float(v);
  } else {
    return To(v);  // integer -> float/double (nearest even), float -> double (exact)
  }
}

/// Cast: out[i] = in[i] converted from From to To, for From/To among bool, int8_t ... uint64_t,
/// float, double, f16_tag, bf16_tag. n elements, any layout (elementwise).
/// Semantics: to bool: x != 0 (NaN -> true); from bool: 0/1. Float narrowing (double -> float,
/// anything -> f16/bf16) rounds to nearest even exactly once (no double rounding), overflow
/// gives +-inf, NaN stays NaN. Integer -> integer keeps the low bits (two's complement).
/// Float -> integer: see float_to_int (NaN -> 0, truncation, wrap; never UB).
template <class From, class To>
inline void cast(int64_t n, const storage_t<From>* in, storage_t<To>* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = cast_value<From, To>(in[i]);
}

/// One value of element type From converted to bfloat16 by truncation (round toward zero),
/// as ONNX's reference did for Cast before opset 19; NaN stays a quiet NaN, overflow of a
/// finite value gives the largest finite bfloat16.
template <class From>
inline uint16_t cast_value_bf16_truncate(storage_t<From> v) {
  if constexpr (std::is_same_v<From, bf16_tag> || std::is_same_v<From, bool>) {
    return cast_value<From, bf16_tag>(v);  // already exact in bfloat16
  } else {
    float f;  // rounded to odd: truncating that to bfloat16 truncates the exact value
    if constexpr (is_half_v<From>)
      f = load<From>(v);
    else if constexpr (std::is_same_v<From, float>)
      f = v;
    else if constexpr (std::is_same_v<From, double>)
      f = double_to_float_odd(v);
    else
      f = int_to_float_odd(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // quiet NaN
    return uint16_t(bits >> 16);
  }
}

/// Cast to bfloat16 by truncation: cast<From, bf16_tag> with round-toward-zero instead of
/// round-to-nearest-even (ONNX Cast before opset 19, whose reference truncated).
template <class From>
inline void cast_bf16_truncate(int64_t n, const storage_t<From>* in, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = cast_value_bf16_truncate<From>(in[i]);
}

// ---- helpers for kernels that compute in double ----

/// Widens any element to double (bool -> 0/1).
template <class E>
inline double to_double(storage_t<E> v) {
  return double(load<E>(v));
}

/// Narrows a double result to E: floats round to nearest even (overflow -> inf); integers round
/// half to even and saturate to E's range (NaN -> 0); bool is v != 0.
template <class E>
inline storage_t<E> from_double(double v) {
  if constexpr (std::is_same_v<E, double>) {
    return v;
  } else if constexpr (std::is_same_v<E, float>) {
    return double_to_float(v);
  } else if constexpr (is_half_v<E>) {
    return store<E>(double_to_float_odd(v));
  } else if constexpr (std::is_same_v<E, bool>) {
    return v != 0;
  } else {
    if (v != v) return E(0);
    double r = round_half_even(v);
    if (r <= double(std::numeric_limits<E>::min())) return std::numeric_limits<E>::min();
    if (r >= double(std::numeric_limits<E>::max())) return std::numeric_limits<E>::max();
    return E(r);
  }
}

}  // namespace kiln_ref
