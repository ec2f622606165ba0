// See peak.h. Each loop keeps 12 accumulators (enough to cover the FMA latency on two ports).
#include "peak.h"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

#if defined(__x86_64__)
__attribute__((target("avx512f"))) float loop512(long iters) {
  __m512 a[12];
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(float(i));
  for (long n = 0; n < iters; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm512_fmadd_ps(a[i], x, y);
  }
  __m512 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, a[i]);
  float out[16];
  _mm512_storeu_ps(out, s);  // (GCC 12's _mm512_reduce_add_ps trips -Wuninitialized)
  return out[0] + out[15];
}

__attribute__((target("avx2,fma"))) float loop256(long iters) {
  __m256 a[12];
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(float(i));
  for (long n = 0; n < iters; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], x, y);
  }
  __m256 s = a[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, a[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}
#endif

float loopScalar(long iters) {
  float a[12];
  for (int i = 0; i < 12; ++i) a[i] = float(i);
  for (long n = 0; n < iters; ++n) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = a[i] * 0.999999f + 1e-7f;
  }
  float s = 0;
  for (float v : a) s += v;
  return s;
}

template <class F>
double gflops(F loop, int lanes) {
  volatile float sink = 0;
  long iters = 1 << 16;
  for (;;) {
    auto t0 = Clock::now();
    sink = sink + loop(iters);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0.05) return 2.0 * 12 * lanes * double(iters) / s / 1e9;
    iters *= 2;
  }
}

}  // namespace

double measurePeakGflops(const char** isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    *isa = "AVX-512";
    return gflops(loop512, 16);
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    *isa = "AVX2";
    return gflops(loop256, 8);
  }
#endif
  *isa = "scalar";
  return gflops(loopScalar, 1);
}

}  // namespace kiln::cli
