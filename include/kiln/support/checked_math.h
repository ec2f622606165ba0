// Overflow-checked integer arithmetic for sizes computed from untrusted models.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace kiln {

/// a*b, or nullopt if it overflows int64 or either operand is negative.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  if (a < 0 || b < 0) return std::nullopt;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// a+b, or nullopt on overflow.
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Product of dims, or nullopt if any is negative or the product overflows.
inline std::optional<int64_t> checkedProduct(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    auto m = checkedMul(n, d);
    if (!m) return std::nullopt;
    n = *m;
  }
  return n;
}

}  // namespace kiln
