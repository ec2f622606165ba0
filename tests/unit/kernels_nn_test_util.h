// Helpers the reference NN kernel tests (kernels_nn_*_test.cc) share: seeded random inputs, a
// tolerance comparison against double references and sliding-window shape arithmetic. One
// definition here: the test sources build as unity batches, where file-local copies collide.
// C++17, like the tests (tests/CMakeLists.txt builds them at C++17 too).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace kernels_test {

using Dims = std::vector<int64_t>;
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

inline int64_t product(const Dims& d) {
  int64_t p = 1;
  for (int64_t v : d) p *= v;
  return p;
}

template <class T = float>
std::vector<T> randomVec(std::mt19937& g, int64_t n, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& e : v) e = T(u(g));
  return v;
}

inline std::vector<int32_t> randomInts(std::mt19937& g, int64_t n, int lo, int hi) {
  std::uniform_int_distribution<int> u(lo, hi);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& e : v) e = u(g);
  return v;
}

/// |got - want| <= tol * (1 + |want|), NaN matching NaN; reports the first few mismatches.
template <class T, class U>
void expectClose(const std::vector<T>& got, const std::vector<U>& want, double tol,
                 const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    const double g = double(got[i]), w = double(want[i]);
    if (std::isnan(w) || std::isnan(g)) {
      if (std::isnan(w) != std::isnan(g)) {
        ADD_FAILURE() << what << " [" << i << "] got " << g << " want " << w;
        ++bad;
      }
      continue;
    }
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= tol * (1 + std::fabs(w)))) {
      ADD_FAILURE() << what << " [" << i << "] got " << g << " want " << w;
      ++bad;
    }
  }
}

/// Sliding-window output size with the floor rule (ceil_mode handled by callers that need it).
inline int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe,
                         bool ceil_mode = false) {
  const int64_t span = in + pb + pe - ((k - 1) * d + 1);
  int64_t steps = span / s;
  if (ceil_mode && span % s != 0) {
    ++steps;
    if (steps * s >= in + pb) --steps;
  }
  return steps + 1;
}

/// Pads a spatial list to 3 entries (leading `fill`), so naive loops can always be 3-D.
inline Dims lift3(const Dims& v, int64_t fill, size_t offset = 0, size_t rank = 0) {
  if (rank == 0) rank = v.size();
  Dims r(3 - rank, fill);
  for (size_t d = 0; d < rank; ++d) r.push_back(v[offset + d]);
  return r;
}

}  // namespace kernels_test
