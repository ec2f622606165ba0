// kiln reference kernels: shared definitions (C++17, header-only, no heap, no exceptions).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln_ref {

/// Highest tensor rank the reference kernels index.
constexpr int kMaxRank = 32;

/// IEEE half <-> float conversions (round-to-nearest-even on narrowing).
inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 112) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return uint16_t(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00);  // rounds to inf
  if (absx < 0x38800000u) {                                 // subnormal or zero in half
    if (absx < 0x33000000u) return uint16_t(sign);
    uint32_t mant = (absx & 0x7fffff) | 0x800000;
    int shift = 126 - int(absx >> 23);  // 14..24
    uint32_t half = mant >> (shift), rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = ((absx - 0x38000000u) >> 13);
  uint32_t rem = absx & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return uint16_t(sign | half);
}

inline float bf16_to_float(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  uint32_t lsb = (x >> 16) & 1;
  return uint16_t((x + 0x7fff + lsb) >> 16);
}

/// Walks an N-d row-major index space, keeping one linear offset per operand whose strides
/// (0 on broadcast dims) are given; calls body(offsets) for every element in order.
template <int kOperands, typename Body>
inline void for_each_index(int rank, const int64_t* dims, const int64_t* const* strides,
                           Body body) {
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) count *= dims[d];
  int64_t idx[kMaxRank] = {0};
  int64_t off[kOperands] = {0};
  for (int64_t e = 0; e < count; ++e) {
    body(off);
    for (int d = rank - 1; d >= 0; --d) {
      ++idx[d];
      for (int k = 0; k < kOperands; ++k) off[k] += strides[k][d];
      if (idx[d] < dims[d]) break;
      for (int k = 0; k < kOperands; ++k) off[k] -= strides[k][d] * idx[d];
      idx[d] = 0;
    }
  }
}

}  // namespace kiln_ref

namespace kiln_ref {

/// A float from its bit pattern (for NaN payloads in generated constants).
inline float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace kiln_ref
