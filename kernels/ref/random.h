// kiln reference kernels: random generators (RandomUniform/Normal and their *Like forms,
// Bernoulli, training-mode Dropout).
//
// The generator is counter-based: element i of a node's output draws from mix(seed, i), a
// 64-bit avalanche hash of the seed and the index, so the numbers depend on nothing but the seed
// and the position. A run therefore gives the same numbers every time (kiln's determinism
// rule), at any thread count, and no state lives between runs. The numbers are not those of
// numpy or of another runtime: a seeded model matches itself, not them.
#pragma once

#include <cmath>
#include <cstdint>

namespace kiln_ref {

/// A 64-bit mix of (seed, counter): the SplitMix64 finalizer (Steele, Lea, Flood 2014) applied
/// to seed + (counter + 1) * golden-ratio increment.
inline uint64_t random_bits(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A uniform double in [0, 1) with 53 random bits.
inline double random_unit(uint64_t seed, uint64_t counter) {
  return double(random_bits(seed, counter) >> 11) * (1.0 / 9007199254740992.0);
}

/// RandomUniform(Like): low + (high - low) * u, u in [0, 1).
template <class T>
inline void random_uniform(int64_t n, double low, double high, uint64_t seed, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = T(low + (high - low) * random_unit(seed, uint64_t(i)));
}

/// RandomNormal(Like): mean + scale * z, z standard normal by the Box-Muller transform of two
/// uniforms drawn for each element (counters 2i and 2i+1).
template <class T>
inline void random_normal(int64_t n, double mean, double scale, uint64_t seed, T* y) {
  const double two_pi = 6.283185307179586476925286766559;
  for (int64_t i = 0; i < n; ++i) {
    const double u1 = 1.0 - random_unit(seed, uint64_t(2 * i));  // (0, 1]: log is finite
    const double u2 = random_unit(seed, uint64_t(2 * i + 1));
    y[i] = T(mean + scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
  }
}

/// Bernoulli: y[i] = 1 with probability p[i] (u < p), else 0; a p outside [0, 1] saturates.
template <class TP, class TY>
inline void bernoulli(int64_t n, const TP* p, uint64_t seed, TY* y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = random_unit(seed, uint64_t(i)) < double(p[i]) ? TY(1) : TY(0);
}

/// Dropout. Not training, or a ratio of 0: y = x and the mask is all true. Training: element i
/// is kept when u_i >= ratio (probability 1 - ratio) and scaled by 1 / (1 - ratio); a dropped
/// element is 0 with a false mask. `mask` may be null. Returns false for a ratio outside
/// [0, 1) in training mode.
template <class T>
inline bool dropout(int64_t n, const T* x, double ratio, bool training, uint64_t seed, T* y,
                    bool* mask) {
  if (!training || ratio == 0) {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = x[i];
      if (mask) mask[i] = true;
    }
    return true;
  }
  if (!(ratio > 0 && ratio < 1)) return false;
  const T scale = T(1.0 / (1.0 - ratio));
  for (int64_t i = 0; i < n; ++i) {
    const bool keep = random_unit(seed, uint64_t(i)) >= ratio;
    y[i] = keep ? T(x[i] * scale) : T(0);
    if (mask) mask[i] = keep;
  }
  return true;
}

}  // namespace kiln_ref
