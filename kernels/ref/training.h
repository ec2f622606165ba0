// kiln reference kernels: the ai.onnx.preview.training optimizer updates Adagrad, Momentum, Adam.
#pragma once

#include <cmath>
#include <cstdint>

// Each kernel updates one tensor of n elements: X (the weights), G (its gradient) and the
// optimizer state, all contiguous and of the same length; R (learning rate, T's float type)
// and step (T, the update count, int64) are scalars read at run time. The math is the ONNX
// operator spec's, computed in double per element and rounded once to T. Outputs must not
// overlap inputs other than the element they replace (element i is read before it is written).

namespace kiln_ref {

/// Adagrad: r = R / (1 + step * decay_factor); g = norm_coefficient * X + G;
/// H_new = H + g * g; X_new = X - r * g / (sqrt(H_new) + epsilon).
template <class T>
inline void adagrad(int64_t n, const T* R, const int64_t* step, const T* X, const T* G, const T* H,
                    double decay_factor, double epsilon, double norm_coefficient, T* X_new,
                    T* H_new) {
  const double r = double(R[0]) / (1.0 + double(step[0]) * decay_factor);
  for (int64_t i = 0; i < n; ++i) {
    const double g = norm_coefficient * double(X[i]) + double(G[i]);
    const double h = double(H[i]) + g * g;
    const double x = double(X[i]) - r * g / (std::sqrt(h) + epsilon);
    H_new[i] = T(h);
    X_new[i] = T(x);
  }
}

/// Momentum: g = norm_coefficient * X + G; b = step > 0 ? beta : 1; V_new = alpha * V + b * g;
/// standard: X_new = X - R * V_new; nesterov: X_new = X - R * (g + alpha * V_new).
template <class T>
inline void momentum(int64_t n, const T* R, const int64_t* step, const T* X, const T* G, const T* V,
                     double alpha, double beta, double norm_coefficient, bool nesterov, T* X_new,
                     T* V_new) {
  const double r = double(R[0]);
  const double b = step[0] > 0 ? beta : 1.0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = norm_coefficient * double(X[i]) + double(G[i]);
    const double v = alpha * double(V[i]) + b * g;
    const double x = nesterov ? double(X[i]) - r * (g + alpha * v) : double(X[i]) - r * v;
    V_new[i] = T(v);
    X_new[i] = T(x);
  }
}

/// Adam: g = norm_coefficient * X + G; V_new = alpha * V + (1 - alpha) * g;
/// H_new = beta * H + (1 - beta) * g * g; r = step > 0 ? R * sqrt(1 - beta^step) /
/// (1 - alpha^step) : R; X_new = (1 - norm_coefficient_post) * (X - r * V_new /
/// (sqrt(H_new) + epsilon)).
template <class T>
inline void adam(int64_t n, const T* R, const int64_t* step, const T* X, const T* G, const T* V,
                 const T* H, double alpha, double beta, double epsilon, double norm_coefficient,
                 double norm_coefficient_post, T* X_new, T* V_new, T* H_new) {
  double r = double(R[0]);
  if (step[0] > 0) {
    const double t = double(step[0]);
    r = r * std::sqrt(1.0 - std::pow(beta, t)) / (1.0 - std::pow(alpha, t));
  }
  for (int64_t i = 0; i < n; ++i) {
    const double g = norm_coefficient * double(X[i]) + double(G[i]);
    const double v = alpha * double(V[i]) + (1.0 - alpha) * g;
    const double h = beta * double(H[i]) + (1.0 - beta) * g * g;
    const double x = double(X[i]) - r * v / (std::sqrt(h) + epsilon);
    V_new[i] = T(v);
    H_new[i] = T(h);
    X_new[i] = T((1.0 - norm_coefficient_post) * x);
  }
}

}  // namespace kiln_ref
