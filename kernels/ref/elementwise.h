// kiln reference kernels: broadcasting elementwise unary, binary and ternary ops.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"

namespace kiln_ref {

template <class T>
using IfInt = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int>;
template <class T>
using IfFloat = std::enable_if_t<std::is_floating_point_v<T>, int>;

// ---- scalar functions (one struct per op; templated on the element type) ----

struct Add {
  template <class T>
  T operator()(T a, T b) const {
    return T(a + b);
  }
};
struct Sub {
  template <class T>
  T operator()(T a, T b) const {
    return T(a - b);
  }
};
struct Mul {
  template <class T>
  T operator()(T a, T b) const {
    return T(a * b);
  }
};
struct Div {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);  // undefined in ONNX; never trap
      if constexpr (std::is_signed_v<T>)
        if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
    }
    return T(a / b);
  }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    return a < b ? b : a;
  }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    return b < a ? b : a;
  }
};
/// Mod with fmod=0: integer result takes the divisor's sign (Python %).
struct ModFloor {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        T r = T(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
      } else {
        return T(a % b);
      }
    } else {
      T r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
    }
  }
};
/// Mod with fmod=1: result takes the dividend's sign (C fmod).
struct ModTrunc {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return T(0);
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);
      return T(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
/// Applies F to f16 operands (uint16_t bits) widened to float and rounds the result back.
/// Exact for Max, Min and ModTrunc: their results are an operand or an exact remainder.
template <class F>
struct HalfVia {
  uint16_t operator()(uint16_t a, uint16_t b) const {
    return float_to_half(F{}(half_to_float(a), half_to_float(b)));
  }
};
struct BitAnd {
  template <class T, IfInt<T> = 0>
  T operator()(T a, T b) const {
    return T(a & b);
  }
};
struct BitOr {
  template <class T, IfInt<T> = 0>
  T operator()(T a, T b) const {
    return T(a | b);
  }
};
struct BitXor {
  template <class T, IfInt<T> = 0>
  T operator()(T a, T b) const {
    return T(a ^ b);
  }
};
struct ShiftLeft {
  template <class T, IfInt<T> = 0>
  T operator()(T a, T b) const {
    return b >= T(sizeof(T) * 8) ? T(0) : T(a << b);
  }
};
struct ShiftRight {
  template <class T, IfInt<T> = 0>
  T operator()(T a, T b) const {
    return b >= T(sizeof(T) * 8) ? T(0) : T(a >> b);
  }
};
struct Equal {
  template <class T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Less {
  template <class T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Greater {
  template <class T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct LessEq {
  template <class T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterEq {
  template <class T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct And {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  bool operator()(bool a, bool b) const { return a != b; }
};

/// Pow with a possibly different exponent type (ONNX Pow-15 allows it).
struct Pow {
  template <class T, class U>
  T operator()(T a, U b) const {
    if constexpr (std::is_integral_v<T> && std::is_integral_v<U>) {
      if (b < 0) return a == 1 ? T(1) : (a == T(-1) ? ((b & 1) ? T(-1) : T(1)) : T(0));
      T r = 1, base = a;
      for (U e = b; e > 0; e >>= 1) {
        if (e & 1) r = T(r * base);
        base = T(base * base);
      }
      return r;
    } else {
      return T(std::pow(double(a), double(b)));
    }
  }
};

// ---- unary functions ----

struct Neg {
  template <class T>
  T operator()(T a) const {
    return T(-a);
  }
};
struct Abs {
  template <class T>
  T operator()(T a) const {
    if constexpr (std::is_unsigned_v<T>)
      return a;
    else
      return a < 0 ? T(-a) : a;
  }
};
struct Sign {
  template <class T>
  T operator()(T a) const {
    if constexpr (std::is_floating_point_v<T>)
      if (a != a) return a;
    return T((T(0) < a) - (a < T(0)));
  }
};
struct Not {
  bool operator()(bool a) const { return !a; }
};
struct BitNot {
  template <class T, IfInt<T> = 0>
  T operator()(T a) const {
    return T(~a);
  }
};
struct Reciprocal {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return T(1) / a;
  }
};
struct Sqrt {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::sqrt(a);
  }
};
struct Exp {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::exp(a);
  }
};
struct Log {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::log(a);
  }
};
struct Floor {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::floor(a);
  }
};
struct Ceil {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::ceil(a);
  }
};
/// Round half to even.
struct Round {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::nearbyint(a);
  }
};
struct Sin {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::sin(a);
  }
};
struct Cos {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::cos(a);
  }
};
struct Tan {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::tan(a);
  }
};
struct Asin {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::asin(a);
  }
};
struct Acos {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::acos(a);
  }
};
struct Atan {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::atan(a);
  }
};
struct Sinh {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::sinh(a);
  }
};
struct Cosh {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::cosh(a);
  }
};
struct Asinh {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::asinh(a);
  }
};
struct Acosh {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::acosh(a);
  }
};
struct Atanh {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::atanh(a);
  }
};
struct Erf {
  template <class T, IfFloat<T> = 0>
  T operator()(T a) const {
    return std::erf(a);
  }
};
struct IsNaN {
  template <class T, IfFloat<T> = 0>
  bool operator()(T a) const {
    return a != a;
  }
};
struct IsInf {
  bool negative, positive;
  template <class T, IfFloat<T> = 0>
  bool operator()(T a) const {
    return (positive && a == std::numeric_limits<T>::infinity()) ||
           (negative && a == -std::numeric_limits<T>::infinity());
  }
};

// ---- loops ----

/// out[i] = f(x[i]) over n contiguous elements.
template <class T, class R, class F>
inline void unary(int64_t n, const T* x, R* out, F f) {
  for (int64_t i = 0; i < n; ++i) out[i] = R(f(x[i]));
}

/// out = f(a, b) with numpy broadcasting. a_strides/b_strides are per output dim, 0 where
/// broadcast. When both strides equal the output's contiguous strides, pass rank 1.
template <class A, class B, class R, class F>
inline void binary(int rank, const int64_t* out_dims, const int64_t* a_strides,
                   const int64_t* b_strides, const A* a, const B* b, R* out, F f) {
  const int64_t* strides[3];
  int64_t out_strides[kMaxRank];
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; --d) {
    out_strides[d] = s;
    s *= out_dims[d];
  }
  strides[0] = a_strides;
  strides[1] = b_strides;
  strides[2] = out_strides;
  for_each_index<3>(rank, out_dims, strides,
                    [&](const int64_t* o) { out[o[2]] = R(f(a[o[0]], b[o[1]])); });
}

/// out = cond ? x : y with broadcasting.
template <class T>
inline void where(int rank, const int64_t* out_dims, const int64_t* c_strides,
                  const int64_t* x_strides, const int64_t* y_strides, const bool* c, const T* x,
                  const T* y, T* out) {
  const int64_t* strides[3] = {c_strides, x_strides, y_strides};
  int64_t e = 0;
  for_each_index<3>(rank, out_dims, strides,
                    [&](const int64_t* o) { out[e++] = c[o[0]] ? x[o[1]] : y[o[2]]; });
}

}  // namespace kiln_ref

namespace kiln_ref {

/// x[i] /= divisor (Mean's final step).
template <class T>
inline void divide_by(int64_t n, T* x, int64_t divisor) {
  for (int64_t i = 0; i < n; ++i) x[i] = T(x[i] / T(divisor));
}

}  // namespace kiln_ref
