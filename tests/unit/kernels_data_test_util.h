// Helpers the reference data-kernel tests (kernels_data_*_test.cc) share: seeded random shapes
// and bytes, row-major index (un)ravelling, element copies and a float comparison. One
// definition here: the test sources build as unity batches, where file-local copies collide.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace kernels_test {

using Dims = std::vector<int64_t>;
using Bytes = std::vector<unsigned char>;

inline int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

inline Dims unravel(int64_t linear, const Dims& dims) {
  Dims idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = linear % dims[k];
    linear /= dims[k];
  }
  return idx;
}

inline int64_t ravel(const Dims& idx, const Dims& dims) {
  int64_t r = 0;
  for (size_t k = 0; k < dims.size(); ++k) r = r * dims[k] + idx[k];
  return r;
}

struct Rng {
  std::mt19937_64 gen{12345};
  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(gen); }
  Bytes bytes(int64_t n) {
    Bytes b(static_cast<size_t>(n > 0 ? n : 0));
    for (auto& v : b) v = static_cast<unsigned char>(uniform(0, 255));
    return b;
  }
  Dims dims(int rank, int64_t lo, int64_t hi) {
    Dims d(static_cast<size_t>(rank));
    for (auto& v : d) v = uniform(lo, hi);
    return d;
  }
};

inline int64_t pick_elem_size(Rng& r) {
  static const int64_t sizes[] = {1, 2, 3, 4, 8};
  return sizes[r.uniform(0, 4)];
}

// Copies element `from` of src to element `to` of dst (elem_size bytes).
inline void put(Bytes& dst, int64_t to, const Bytes& src, int64_t from, int64_t es) {
  std::memcpy(dst.data() + to * es, src.data() + from * es, size_t(es));
}

inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol,
                         double atol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_LE(std::fabs(double(got[i]) - double(want[i])), atol + rtol * std::fabs(double(want[i])))
        << what << " element " << i << " got " << got[i] << " want " << want[i];
}

}  // namespace kernels_test
