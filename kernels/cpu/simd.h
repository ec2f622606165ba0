// kiln optimized CPU kernels: a small f32 SIMD layer. Each kernel is written once against
// kiln_cpu::V and instantiates for the instruction set the generated code is compiled for:
//   AVX-512F (-march=x86-64-v4)  16 lanes, 32 registers   KILN_CPU_ISA "avx512"
//   AVX2+FMA (-march=x86-64-v3)   8 lanes, 16 registers   KILN_CPU_ISA "avx2"
//   portable C++ (any compiler)   4 lanes (plain arrays)  KILN_CPU_ISA "generic"
// KILN_GENERIC forces the portable path (kiln's `generic` target). The portable path computes
// a * b + c as a product then a sum (no fused multiply-add), the vector paths with FMA, so
// results differ between targets in the last bits but are identical run to run.
#pragma once

#include <cmath>
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

/// The bytes of a core's L2 a kernel may fill with one working set (pixel-rows K-chunks, the
/// fused expand + depthwise conv's bands): half of a 1 MiB L2, which larger L2s keep. Generated
/// code for a host with a smaller L2 defines it as half of that L2 (Target::l2Share).
#ifndef KILN_CPU_L2_SHARE_BYTES
#define KILN_CPU_L2_SHARE_BYTES (int64_t(512) << 10)
#endif

// Full unrolling of short fixed-count loops (register blocking); GCC and clang both read it.
#define KILN_CPU_UNROLL _Pragma("GCC unroll 16")

namespace kiln_cpu {

/// Asks for p's line in a state this core may write (PREFETCHW), not shared with another
/// core's cache. For a line about to be written that the other core has read since it was
/// last written here: with a plain prefetch the store waits on the other cache's copy being
/// invalidated. Every AVX-512 x86 CPU has PREFETCHW; GCC emits it only with -mprfchw, which
/// x86-64-v4 does not imply. Elsewhere a plain prefetch.
inline void prefetch_write(const void* p) {
#if defined(KILN_CPU_AVX512)
  __asm__ volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

/// Sum of t[0:n) (n a power of two) by halving: the vector lanes' fixed reduction order.
inline float pairwise_sum(float* t, int n) {
  for (; n > 1; n /= 2)
    for (int i = 0; i < n / 2; ++i) t[i] = t[i] + t[i + n / 2];
  return t[0];
}

#if defined(KILN_CPU_AVX512)

struct V {
  static constexpr int kLanes = 16;
  static constexpr int kRegisters = 32;
  using R = __m512;
  static R zero() { return _mm512_setzero_ps(); }
  static float first(R a) { return _mm512_cvtss_f32(a); }  // lane 0
  static R set1(float x) { return _mm512_set1_ps(x); }
  static R load(const float* p) { return _mm512_loadu_ps(p); }
  static R load(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  /// Lanes [a, b) from p[a..b), zero elsewhere; lanes outside are not read.
  static R load_range(const float* p, int a, int b) {
    return _mm512_maskz_loadu_ps(__mmask16(mask(b) & ~mask(a)), p);
  }
  /// Lanes [a, b) from p[a..b), `fill` elsewhere; lanes outside are not read.
  static R load_range_or(const float* p, int a, int b, float fill) {
    return _mm512_mask_loadu_ps(set1(fill), __mmask16(mask(b) & ~mask(a)), p);
  }
  static void store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, R v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  /// Lanes [0, n) from p[0], p[stride], p[2 * stride], ... (a gather), the others zero.
  static R load_strided(const float* p, int stride, int n) {
    const __m512i idx =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(stride));
    return _mm512_mask_i32gather_ps(zero(), mask(n), idx, p, 4);
  }
  static R fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm512_add_ps(a, b); }
  static R sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R div(R a, R b) { return _mm512_div_ps(a, b); }
  /// Nearest integer (ties to even), as a float.
  static R round(R a) {
    return _mm512_maskz_roundscale_ps(__mmask16(0xFFFF), a, _MM_FROUND_TO_NEAREST_INT);
  }
  /// a * 2^n for integral n in [-126, 127].
  static R scale2(R a, R n) { return _mm512_maskz_scalef_ps(__mmask16(0xFFFF), a, n); }
  /// a with b's sign (maskz forms: GCC 12's unmasked logic ops warn in its own header).
  static R copysign(R a, R b) {
    const __mmask16 all = 0xFFFF;
    const __m512i sign = _mm512_set1_epi32(int(0x80000000u));
    const __m512i ai = _mm512_castps_si512(a), bi = _mm512_castps_si512(b);
    return _mm512_castsi512_ps(_mm512_maskz_or_epi32(all, _mm512_maskz_andnot_epi32(all, sign, ai),
                                                     _mm512_maskz_and_epi32(all, sign, bi)));
  }
  static R abs(R a) {
    return _mm512_castsi512_ps(_mm512_maskz_and_epi32(__mmask16(0xFFFF), _mm512_castps_si512(a),
                                                      _mm512_set1_epi32(0x7FFFFFFF)));
  }
  /// Splits the 2L floats a:b into the even-indexed and the odd-indexed ones.
  static void deinterleave2(R a, R b, R* even, R* odd) {
    const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    *even = _mm512_permutex2var_ps(a, ie, b);
    *odd = _mm512_permutex2var_ps(a, io, b);
  }
  /// The 2L floats a0 b0 a1 b1 ...: lo the first L of them, hi the rest.
  static void interleave2(R a, R b, R* lo, R* hi) {
    const __m512i il = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i ih =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    *lo = _mm512_permutex2var_ps(a, il, b);
    *hi = _mm512_permutex2var_ps(a, ih, b);
  }
  /// Lanes s..L-1 of lo, then lanes 0..s-1 of hi (s in [0, L]): lo:hi shifted down s lanes.
  static R shift_in(R lo, R hi, int s) {
    const __m512i i =
        _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(s));
    return _mm512_permutex2var_ps(lo, i, hi);
  }
  /// Whether some lane of a equals x (ordered: NaN equals nothing), without leaving registers.
  static bool any_eq(R a, float x) {
    return _mm512_cmp_ps_mask(a, _mm512_set1_ps(x), _CMP_EQ_OQ) != 0;
  }
  /// The same over lanes [0, n) only.
  static bool any_eq(R a, float x, int n) {
    return _mm512_mask_cmp_ps_mask(mask(n), a, _mm512_set1_ps(x), _CMP_EQ_OQ) != 0;
  }
  /// Whether every lane of a equals b's (ordered: a NaN lane makes it false).
  static bool all_eq(R a, R b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ) == 0xFFFF; }
  /// Lane sum in a fixed order (pairwise over lanes 0..15): the same for the same input.
  static float reduce_add(R a) {
    alignas(64) float t[16];
    _mm512_store_ps(t, a);
    return pairwise_sum(t, 16);
  }
  static R sqrt(R a) { return _mm512_maskz_sqrt_ps(__mmask16(0xFFFF), a); }
  static R floor(R a) {
    return _mm512_maskz_roundscale_ps(__mmask16(0xFFFF), a,
                                      _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  }
  static R ceil(R a) {
    return _mm512_maskz_roundscale_ps(__mmask16(0xFFFF), a,
                                      _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
  }
  /// a < b ? x : y lane by lane (ordered: y where a or b is NaN).
  static R lt_select(R a, R b, R x, R y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
  }
  /// a is NaN ? x : y lane by lane.
  static R nan_select(R a, R x, R y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), y, x);
  }
  /// For positive finite normal a = m 2^e with m in [1, 2): m, and e as a float.
  static R significand(R a) {
    return _mm512_maskz_getmant_ps(__mmask16(0xFFFF), a, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
  }
  static R exponent(R a) { return _mm512_maskz_getexp_ps(__mmask16(0xFFFF), a); }
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
  static float first(R a) { return _mm256_cvtss_f32(a); }
  static R set1(float x) { return _mm256_set1_ps(x); }
  static R load(const float* p) { return _mm256_loadu_ps(p); }
  static R load(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static R load_range(const float* p, int a, int b) {
    return _mm256_maskload_ps(p, _mm256_andnot_si256(mask(a), mask(b)));
  }
  static R load_range_or(const float* p, int a, int b, float fill) {
    const __m256i m = _mm256_andnot_si256(mask(a), mask(b));
    return _mm256_blendv_ps(set1(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store(float* p, R v) { _mm256_storeu_ps(p, v); }
  /// Lanes [0, n) to p[0..n), n in [0, 8]: 4, 2 and 1-float stores, not vmaskmovps, which is
  /// microcoded on AMD's Zen 2 and 3 (a Zen 3: 6-7.5 against 2-3.7 ns a store, n random).
  static void store(float* p, R v, int n) {
    __m128 part = _mm256_castps256_ps128(v);
    if (n >= 4) {
      _mm_storeu_ps(p, part);
      part = _mm256_extractf128_ps(v, 1);
      p += 4;
      n -= 4;
      if (n == 4) return _mm_storeu_ps(p, part);
    }
    if (n >= 2) {
      _mm_storel_pi(reinterpret_cast<__m64*>(p), part);
      part = _mm_movehl_ps(part, part);
      p += 2;
      n -= 2;
    }
    if (n > 0) _mm_store_ss(p, part);
  }
  static R load_strided(const float* p, int stride, int n) {
    const __m256i idx =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(stride));
    return _mm256_mask_i32gather_ps(zero(), p, idx, _mm256_castsi256_ps(mask(n)), 4);
  }
  static R fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R add(R a, R b) { return _mm256_add_ps(a, b); }
  static R sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R div(R a, R b) { return _mm256_div_ps(a, b); }
  static R round(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // In two factors 2^(n/2) and 2^(n - n/2), so n = 128 (e^88.5) stays finite.
  static R scale2(R a, R n) {
    const __m256i k = _mm256_cvtps_epi32(n), k1 = _mm256_srai_epi32(k, 1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256i e1 = _mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23);
    const __m256i e2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(k, k1), bias), 23);
    return _mm256_mul_ps(_mm256_mul_ps(a, _mm256_castsi256_ps(e1)), _mm256_castsi256_ps(e2));
  }
  static R copysign(R a, R b) {
    const R sign = _mm256_castsi256_ps(_mm256_set1_epi32(int(0x80000000u)));
    return _mm256_or_ps(_mm256_andnot_ps(sign, a), _mm256_and_ps(sign, b));
  }
  static R abs(R a) { return _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }
  static void deinterleave2(R a, R b, R* even, R* odd) {
    // [a0 a2 b0 b2 | a4 a6 b4 b6] -> 64-bit lanes 0, 2, 1, 3 -> [a0 a2 a4 a6 b0 b2 b4 b6]
    const R e = _mm256_shuffle_ps(a, b, 0x88), o = _mm256_shuffle_ps(a, b, 0xDD);
    *even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8));
    *odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8));
  }
  static void interleave2(R a, R b, R* lo, R* hi) {
    const R l = _mm256_unpacklo_ps(a, b), h = _mm256_unpackhi_ps(a, b);  // a0 b0 a1 b1 | a4 ..
    *lo = _mm256_permute2f128_ps(l, h, 0x20);
    *hi = _mm256_permute2f128_ps(l, h, 0x31);
  }
  static R shift_in(R lo, R hi, int s) {
    const __m256i i =
        _mm256_add_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(s));
    const __m256i from_hi = _mm256_cmpgt_epi32(i, _mm256_set1_epi32(7));
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, i), _mm256_permutevar8x32_ps(hi, i),
                            _mm256_castsi256_ps(from_hi));
  }
  static bool any_eq(R a, float x) {
    return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(x), _CMP_EQ_OQ)) != 0;
  }
  static bool any_eq(R a, float x, int n) {
    return (_mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(x), _CMP_EQ_OQ)) & ((1 << n) - 1)) !=
           0;
  }
  static bool all_eq(R a, R b) {
    return _mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ)) == 0xFF;
  }
  static float reduce_add(R a) {
    alignas(32) float t[8];
    _mm256_store_ps(t, a);
    return pairwise_sum(t, 8);
  }
  static R sqrt(R a) { return _mm256_sqrt_ps(a); }
  static R floor(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static R ceil(R a) { return _mm256_round_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC); }
  static R lt_select(R a, R b, R x, R y) {
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ));
  }
  static R nan_select(R a, R x, R y) {
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static R significand(R a) {
    const __m256i bits = _mm256_castps_si256(a);
    return _mm256_castsi256_ps(_mm256_or_si256(
        _mm256_and_si256(bits, _mm256_set1_epi32(0x007FFFFF)), _mm256_set1_epi32(0x3F800000)));
  }
  static R exponent(R a) {
    const __m256i e = _mm256_srli_epi32(_mm256_castps_si256(a), 23);
    return _mm256_cvtepi32_ps(_mm256_sub_epi32(e, _mm256_set1_epi32(127)));
  }
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
  static float first(R a) { return a.v[0]; }
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
  static R load_range_or(const float* p, int a, int b, float fill) {
    R r = set1(fill);
    for (int i = a; i < b; ++i) r.v[i] = p[i];
    return r;
  }
  static void store(float* p, R v) {
    for (int i = 0; i < 4; ++i) p[i] = v.v[i];
  }
  static void store(float* p, R v, int n) {
    for (int i = 0; i < n; ++i) p[i] = v.v[i];
  }
  static R load_strided(const float* p, int stride, int n) {
    R r = zero();
    for (int i = 0; i < n; ++i) r.v[i] = p[i * stride];
    return r;
  }
  static R fma(R a, R b, R c) {
    for (int i = 0; i < 4; ++i) c.v[i] = c.v[i] + a.v[i] * b.v[i];
    return c;
  }
  static R add(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] + b.v[i];
    return a;
  }
  static R sub(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] - b.v[i];
    return a;
  }
  static R mul(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] * b.v[i];
    return a;
  }
  static R div(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = a.v[i] / b.v[i];
    return a;
  }
  static R round(R a) {
    for (int i = 0; i < 4; ++i) a.v[i] = std::nearbyint(a.v[i]);
    return a;
  }
  static R scale2(R a, R n) {
    for (int i = 0; i < 4; ++i)  // a NaN n (from a NaN input) must not reach int()
      a.v[i] = n.v[i] == n.v[i] ? std::ldexp(a.v[i], int(n.v[i])) : a.v[i] + n.v[i];
    return a;
  }
  static R copysign(R a, R b) {
    for (int i = 0; i < 4; ++i) a.v[i] = std::copysign(a.v[i], b.v[i]);
    return a;
  }
  static R abs(R a) {
    for (int i = 0; i < 4; ++i) a.v[i] = std::fabs(a.v[i]);
    return a;
  }
  static void deinterleave2(R a, R b, R* even, R* odd) {
    *even = R{{a.v[0], a.v[2], b.v[0], b.v[2]}};
    *odd = R{{a.v[1], a.v[3], b.v[1], b.v[3]}};
  }
  static void interleave2(R a, R b, R* lo, R* hi) {
    *lo = R{{a.v[0], b.v[0], a.v[1], b.v[1]}};
    *hi = R{{a.v[2], b.v[2], a.v[3], b.v[3]}};
  }
  static R shift_in(R lo, R hi, int s) {
    R r;
    for (int i = 0; i < 4; ++i) r.v[i] = i + s < 4 ? lo.v[i + s] : hi.v[i + s - 4];
    return r;
  }
  static bool any_eq(R a, float x) {
    return a.v[0] == x || a.v[1] == x || a.v[2] == x || a.v[3] == x;
  }
  static bool any_eq(R a, float x, int n) {
    for (int i = 0; i < n; ++i)
      if (a.v[i] == x) return true;
    return false;
  }
  static bool all_eq(R a, R b) {
    return a.v[0] == b.v[0] && a.v[1] == b.v[1] && a.v[2] == b.v[2] && a.v[3] == b.v[3];
  }
  static float reduce_add(R a) { return pairwise_sum(a.v, 4); }
  static R sqrt(R a) {
    for (int i = 0; i < 4; ++i) a.v[i] = std::sqrt(a.v[i]);
    return a;
  }
  static R floor(R a) {
    for (int i = 0; i < 4; ++i) a.v[i] = std::floor(a.v[i]);
    return a;
  }
  static R ceil(R a) {
    for (int i = 0; i < 4; ++i) a.v[i] = std::ceil(a.v[i]);
    return a;
  }
  static R lt_select(R a, R b, R x, R y) {
    for (int i = 0; i < 4; ++i) y.v[i] = a.v[i] < b.v[i] ? x.v[i] : y.v[i];
    return y;
  }
  static R nan_select(R a, R x, R y) {
    for (int i = 0; i < 4; ++i) y.v[i] = a.v[i] != a.v[i] ? x.v[i] : y.v[i];
    return y;
  }
  static R significand(R a) {
    int e = 0;
    for (int i = 0; i < 4; ++i) a.v[i] = 2.0f * std::frexp(a.v[i], &e);
    return a;
  }
  static R exponent(R a) {
    int e = 0;
    for (int i = 0; i < 4; ++i) {
      std::frexp(a.v[i], &e);
      a.v[i] = float(e - 1);
    }
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

/// d[u] = s[2 * u] for u in [0, n), reading no further than s[2 * n - 2]: pairs of loads split
/// into their even floats while a whole pair lies inside, then one masked pair (lanes past
/// s[2 * n - 2] not read) and a masked store. (A scalar tail cost a 28-pixel row 12 scalar
/// copies: ResNet-50's 1x1 stride-2 convs pack such rows for every k.)
inline void copy_floats_stride2(float* d, const float* s, int64_t n) {
  constexpr int L = V::kLanes;
  int64_t u = 0;
  for (; u + L < n; u += L) {
    V::R even, odd;
    V::deinterleave2(V::load(s + 2 * u), V::load(s + 2 * u + L), &even, &odd);
    V::store(d + u, even);
  }
  if (u < n) {
    const int r = int(n - u), floats = 2 * r - 1;  // 1 <= r <= L
    V::R even, odd;
    V::deinterleave2(V::load(s + 2 * u, floats < L ? floats : L),
                     floats > L ? V::load(s + 2 * u + L, floats - L) : V::zero(), &even, &odd);
    V::store(d + u, even, r);
  }
}

/// d[u] = s[u * stride] for u in [0, n), reading nothing past the last: copy_floats at stride
/// 1, copy_floats_stride2 at 2, else one float at a time.
inline void copy_floats_strided(float* d, const float* s, int64_t n, int64_t stride) {
  if (stride == 1)
    copy_floats(d, s, n);
  else if (stride == 2)
    copy_floats_stride2(d, s, n);
  else
    for (int64_t u = 0; u < n; ++u) d[u] = s[u * stride];
}

/// d[0:n) = 0.
inline void zero_floats(float* d, int64_t n) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) V::store(d + i, V::zero());
  if (i < n) V::store(d + i, V::zero(), int(n - i));
}

}  // namespace kiln_cpu
