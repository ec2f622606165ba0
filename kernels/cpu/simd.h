// kiln optimized CPU kernels: a small f32 SIMD layer. Each kernel is written once against
// kiln_cpu::V and instantiates for the instruction set the generated code is compiled for:
//   AVX-512F (-march=x86-64-v4)  16 lanes, 32 registers   KILN_CPU_ISA "avx512"
//   AVX2+FMA (-march=x86-64-v3)   8 lanes, 16 registers   KILN_CPU_ISA "avx2"
//   portable C++ (any compiler)   4 lanes (plain arrays)  KILN_CPU_ISA "generic"
// KILN_GENERIC forces the portable path (kiln's `generic` target). The portable path computes
// a * b + c as a product then a sum (no fused multiply-add), the vector paths with FMA, so
// results differ between targets in the last bits but are identical run to run.
#pragma once

#include <cstdint>

#if !defined(KILN_GENERIC) && defined(__AVX512F__)
#define KILN_CPU_AVX512 1
#define KILN_CPU_ISA "avx512"
#include <immintrin.h>
#elif !defined(KILN_GENERIC) && defined(__AVX2__) && defined(__FMA__)
#define KILN_CPU_AVX2 1
#define KILN_CPU_ISA "avx2"
#include <immintrin.h>
#else
#define KILN_CPU_GENERIC 1
#define KILN_CPU_ISA "generic"
#endif

// Full unrolling of short fixed-count loops (register blocking); GCC and clang both read it.
#define KILN_CPU_UNROLL _Pragma("GCC unroll 16")

namespace kiln_cpu {

#if defined(KILN_CPU_AVX512)

struct V {
  static constexpr int kLanes = 16;
  static constexpr int kRegisters = 32;
  using R = __m512;
  static R zero() { return _mm512_setzero_ps(); }
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static R load(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  /// Lanes [a, b) from p[a..b), zero elsewhere; lanes outside are not read.
  static R load_range(const float* p, int a, int b) {
    return _mm512_maskz_loadu_ps(__mmask16(mask(b) & ~mask(a)), p);
  }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, R v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  /// max(a, b) and min(a, b) returning b where either is NaN or both are zeros (x86 rules).
  // The masked forms: GCC 12's unmasked ones trip -Wmaybe-uninitialized in its own header.
  static R max(R a, R b) { return _mm512_maskz_max_ps(__mmask16(0xFFFF), a, b); }
  static R min(R a, R b) { return _mm512_maskz_min_ps(__mmask16(0xFFFF), a, b); }
  static __mmask16 mask(int n) { return __mmask16((1u << n) - 1u); }  // n in [0, 16]
};

#elif defined(KILN_CPU_AVX2)

struct V {
  static constexpr int kLanes = 8;
  static constexpr int kRegisters = 16;
  using R = __m256;
  static R zero() { return _mm256_setzero_ps(); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R load(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static R load_range(const float* p, int a, int b) {
    return _mm256_maskload_ps(p, _mm256_andnot_si256(mask(a), mask(b)));
  }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, R v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R max(R a, R b) { return _mm256_max_ps(a, b); }
  static R min(R a, R b) { return _mm256_min_ps(a, b); }
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
};

#else

struct V {
  static constexpr int kLanes = 4;
  static constexpr int kRegisters = 16;
  struct R {
    float v[4];
  };
  static R zero() { return R{{0.0f, 0.0f, 0.0f, 0.0f}}; }
  static R set1(float x) { return R{{x, x, x, x}}; }
  static R load(const float* p) { return R{{p[0], p[1], p[2], p[3]}}; }
  static R load(const float* p, int n) {
    R r = zero();
    for (int i = 0; i < n; ++i) r.v[i] = p[i];
    return r;
  }
  static R load_range(const float* p, int a, int b) {
    R r = zero();
    for (int i = a; i < b; ++i) r.v[i] = p[i];
    return r;
  }
  static void store(float* p, R v) {
    for (int i = 0; i < 4; ++i) p[i] = v.v[i];
  }
  static void store(float* p, R v, int n) {
    for (int i = 0; i < n; ++i) p[i] = v.v[i];
  }
  static R fma(R a, R b, R c) {
    for (int i = 0; i < 4; ++i) c.v[i] = c.v[i] + a.v[i] * b.v[i];
    return c;
  }
  static R add(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] + b.v[i];
    return a;
  }
  static R mul(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] * b.v[i];
    return a;
  }
  static R max(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] > b.v[i] ? a.v[i] : b.v[i];
    return a;
  }
  static R min(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] < b.v[i] ? a.v[i] : b.v[i];
    return a;
  }
};

#endif

/// d[0:n) = s[0:n), full vectors then one masked tail (no library call for short rows).
inline void copy_floats(float* d, const float* s, int64_t n) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(d + i, V::load(s + i));
  if (i < n) V::store(d + i, V::load(s + i, int(n - i)), int(n - i));
}

/// d[0:n) = 0.
inline void zero_floats(float* d, int64_t n) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(d + i, V::zero());
  if (i < n) V::store(d + i, V::zero(), int(n - i));
}

}  // namespace kiln_cpu
