// kiln reference kernels: activation functors (Relu ... Mish, Clip, PRelu) for unary/binary.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "common.h"

// Every functor here is a scalar function object in the style of elementwise.h: attributes are
// members (float, as ONNX stores them), operator() is templated on the element type and
// computes in that type. Use them with kiln_ref::unary (PRelu: kiln_ref::binary), e.g.
//   kiln_ref::unary(n, x, y, kiln_ref::LeakyRelu{0.01f});
//   kiln_ref::binary(rank, dims, x_strides, slope_strides, x, slope, y, kiln_ref::PRelu{});
// NaN inputs propagate (numpy semantics) unless a functor says otherwise.

namespace kiln_ref {

/// Relu: max(x, 0); float and signed integer types. NaN stays NaN.
struct Relu {
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};

/// LeakyRelu: x < 0 ? alpha * x : x (alpha defaults to 0.01).
struct LeakyRelu {
  float alpha = 0.01f;
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(T(alpha) * x) : x;
  }
};

/// PRelu: x < 0 ? slope * x : x, slope broadcast by kiln_ref::binary; float and integer types.
struct PRelu {
  template <class T>
  T operator()(T x, T slope) const {
    if constexpr (std::is_unsigned_v<T>) {
      (void)slope;
      return x;
    } else {
      return x < T(0) ? T(slope * x) : x;
    }
  }
};

/// Elu: x > 0 ? x : alpha * (exp(x) - 1).
struct Elu {
  float alpha = 1.0f;
  template <class T>
  T operator()(T x) const {
    return x > T(0) ? x : T(T(alpha) * std::expm1(x));
  }
};

/// Selu: gamma * (x > 0 ? x : alpha * (exp(x) - 1)); defaults are ONNX's float constants.
struct Selu {
  float alpha = 1.67326319217681884765625f;
  float gamma = 1.05070102214813232421875f;
  template <class T>
  T operator()(T x) const {
    return x > T(0) ? T(T(gamma) * x) : T(T(gamma) * (T(alpha) * std::expm1(x)));
  }
};

/// Celu: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
struct Celu {
  float alpha = 1.0f;
  template <class T>
  T operator()(T x) const {
    if (x != x) return x;
    const T neg = T(T(alpha) * std::expm1(x / T(alpha)));
    return T((x > T(0) ? x : T(0)) + (neg < T(0) ? neg : T(0)));
  }
};

/// Sigmoid: 1 / (1 + exp(-x)), evaluated so that exp never overflows.
struct Sigmoid {
  template <class T>
  T operator()(T x) const {
    if (x >= T(0)) return T(T(1) / (T(1) + std::exp(-x)));
    const T e = std::exp(x);
    return T(e / (T(1) + e));
  }
};

/// Swish (SiLU at alpha = 1): x * Sigmoid(alpha * x), the product in x's type, as the
/// unfused Mul(x, Sigmoid(x)) computes it.
struct Swish {
  float alpha = 1.0f;
  template <class T>
  T operator()(T x) const {
    return T(x * Sigmoid{}(alpha == 1.0f ? x : T(T(alpha) * x)));
  }
};

/// HardSigmoid: max(0, min(1, alpha * x + beta)).
struct HardSigmoid {
  float alpha = 0.2f;
  float beta = 0.5f;
  template <class T>
  T operator()(T x) const {
    const T v = T(T(alpha) * x + T(beta));
    if (v != v) return v;
    return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
  }
};

/// HardSwish: x * max(0, min(1, x / 6 + 1/2)) (ONNX: HardSigmoid with alpha 1/6, beta 0.5).
struct HardSwish {
  template <class T>
  T operator()(T x) const {
    const T v = T(x * T(1.0 / 6.0) + T(0.5));
    if (v != v) return v;
    return T(x * (v < T(0) ? T(0) : (v > T(1) ? T(1) : v)));
  }
};

/// Tanh.
struct Tanh {
  template <class T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

/// Softplus: log(1 + exp(x)), evaluated without overflow for large x.
struct Softplus {
  template <class T>
  T operator()(T x) const {
    if (x > T(0)) return T(x + std::log1p(std::exp(-x)));
    return std::log1p(std::exp(x));
  }
};

/// Softsign: x / (1 + |x|).
struct Softsign {
  template <class T>
  T operator()(T x) const {
    return T(x / (T(1) + std::fabs(x)));
  }
};

/// ThresholdedRelu: x > alpha ? x : 0. NaN gives 0 (as ONNX's x > alpha comparison does).
struct ThresholdedRelu {
  float alpha = 1.0f;
  template <class T>
  T operator()(T x) const {
    return x > T(alpha) ? x : T(0);
  }
};

/// Gelu: 0.5 x (1 + erf(x / sqrt 2)); with tanh_approx,
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
struct Gelu {
  bool tanh_approx = false;
  template <class T>
  T operator()(T x) const {
    if (tanh_approx) {
      const T c = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(T(0.5) * x * (T(1) + std::tanh(c * (x + T(0.044715) * x * x * x))));
    }
    // 1 + erf(x / sqrt 2) written as erfc(-x / sqrt 2): no cancellation for negative x.
    return T(T(0.5) * x * std::erfc(-x * T(0.7071067811865476)));
  }
};

/// Mish: x * tanh(softplus(x)).
struct Mish {
  template <class T>
  T operator()(T x) const {
    return T(x * std::tanh(Softplus{}(x)));
  }
};

/// Shrink: x < -lambd ? x + bias : (x > lambd ? x - bias : 0). Integer types compute in double
/// and truncate toward zero on the way back (as a C cast does).
struct Shrink {
  float bias = 0.0f;
  float lambd = 0.5f;
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (x < T(-lambd)) return T(x + T(bias));
      if (x > T(lambd)) return T(x - T(bias));
      return T(0);
    } else {
      const double v = double(x);
      if (v < -double(lambd)) return T(v + double(bias));
      if (v > double(lambd)) return T(v - double(bias));
      return T(0);
    }
  }
};

/// Clip: min(max(x, lo), hi) in the element type (bounds are tensors of the element type in
/// ONNX). An absent bound is ClipBounds<T>::lowest() / highest(). NaN stays NaN; lo > hi
/// gives hi, as numpy.clip and ONNX do.
template <class T>
struct Clip {
  T lo;
  T hi;
  T operator()(T x) const {
    if (x < lo) x = lo;
    if (x > hi) x = hi;
    return x;
  }
};

/// Default Clip bounds for an absent min or max input.
template <class T>
struct ClipBounds {
  static T lowest() {
    if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  static T highest() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
};

}  // namespace kiln_ref
