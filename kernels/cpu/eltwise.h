// kiln optimized CPU kernels: f32 elementwise maps and plane reductions, vectorized and split
// over threads in fixed chunks (each output element is computed by one thread from its own
// inputs, so results are identical at any thread count).
//   sigmoid_f32              y = 1 / (1 + exp(-x)) with kiln_cpu::vsigmoid (vmath.h bounds)
//   global_average_pool_f32  y[p] = mean of plane p: lane sums, then the tail, in one order
//   mean_middle_f32          y[o][i] = mean over m of x[o][m][i] (ReduceMean over a run of
//                            middle axes, e.g. channels-last GlobalAveragePool): vectors of i
#pragma once

#include <cstdint>

#include "parallel.h"
#include "vmath.h"

namespace kiln_cpu {

/// Elements per unit of work handed to a thread.
constexpr int64_t kMapChunk = 16384;

/// y[i] = f(x[i]) for a vector function f; x and y may be the same buffer.
template <class F>
inline void map_f32(int64_t n, const float* x, float* y, F f, ThreadPool* pool) {
  constexpr int L = V::kLanes;
  const int64_t units = (n + kMapChunk - 1) / kMapChunk;
  parallel_for(pool, units, [&](int64_t u, int) {
    const int64_t b = u * kMapChunk, e = b + kMapChunk < n ? b + kMapChunk : n;
    int64_t i = b;
    for (; i + L <= e; i += L) V::store(y + i, f(V::load(x + i)));
    if (i < e) V::store(y + i, f(V::load(x + i, int(e - i))), int(e - i));
  });
}

inline void sigmoid_f32(int64_t n, const float* x, float* y, ThreadPool* pool) {
  map_f32(
      n, x, y, [](V::R v) { return vsigmoid(v); }, pool);
}

/// y[o][i] = (sum over m < mid of x[o][m][i], in order of m) / mid, vectorized over i. Units:
/// (o, block of i), each output summed by one thread in one order.
inline void mean_middle_f32(int64_t outer, int64_t mid, int64_t inner, const float* x, float* y,
                            ThreadPool* pool) {
  constexpr int L = V::kLanes;
  constexpr int64_t kBlock = 4 * L;  // four accumulators in flight
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const V::R scale = V::set1(1.0f / float(mid));
  parallel_for(pool, outer * blocks, [&](int64_t u, int) {
    const int64_t o = u / blocks, i0 = (u % blocks) * kBlock;
    const int64_t n = inner - i0 < kBlock ? inner - i0 : kBlock;
    const float* xo = x + o * mid * inner + i0;
    V::R acc[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
    const int vecs = int((n + L - 1) / L);
    for (int64_t m = 0; m < mid; ++m) {
      const float* r = xo + m * inner;
      for (int v = 0; v < vecs; ++v) {
        const int cnt = int(n - v * L < L ? n - v * L : L);
        acc[v] = V::add(acc[v], cnt == L ? V::load(r + v * L) : V::load(r + v * L, cnt));
      }
    }
    float* yo = y + o * inner + i0;
    for (int v = 0; v < vecs; ++v) {
      const int cnt = int(n - v * L < L ? n - v * L : L);
      const V::R mean = V::mul(acc[v], scale);
      if (cnt == L)
        V::store(yo + v * L, mean);
      else
        V::store(yo + v * L, mean, cnt);
    }
  });
}

/// GlobalAveragePool over `planes` planes of `spatial` values.
inline void global_average_pool_f32(int64_t planes, int64_t spatial, const float* x, float* y,
                                    ThreadPool* pool) {
  constexpr int L = V::kLanes;
  parallel_for(pool, planes, [&](int64_t p, int) {
    const float* xp = x + p * spatial;
    V::R s0 = V::zero(), s1 = V::zero();
    int64_t i = 0;
    for (; i + 2 * L <= spatial; i += 2 * L) {
      s0 = V::add(s0, V::load(xp + i));
      s1 = V::add(s1, V::load(xp + i + L));
    }
    float sum = V::reduce_add(V::add(s0, s1));
    for (; i < spatial; ++i) sum += xp[i];
    y[p] = sum / float(spatial);
  });
}

}  // namespace kiln_cpu
