// kiln optimized CPU kernels: f32 elementwise maps and plane reductions, vectorized and split
// over threads in fixed chunks (each output element is computed by one thread from its own
// inputs, so results are identical at any thread count).
//   map_n_f32, map_nest_f32  y = f(operands...) for a vector function f (an activation, a math
//                            op or a fused element-wise chain, through vfunctor.h): operands
//                            read at y's flat index (Dense), scalars (Splat), or in a loop
//                            nest of up to three levels with per-level strides (Nested)
//   global_average_pool_f32  y[p] = mean of plane p: lane sums, then the tail, in one order
//   mean_middle_f32          y[o][i] = mean over m of x[o][m][i] (ReduceMean over a run of
//                            middle axes, e.g. channels-last GlobalAveragePool): vectors of i
#pragma once

#include <cstdint>

#include "parallel.h"
#include "vfunctor.h"
#include "vmath.h"

namespace kiln_cpu {

/// Elements per unit of work handed to a thread.
constexpr int64_t kMapChunk = 16384;

/// An operand read at the output's flat index.
struct Dense {
  const float* p;
};
/// A scalar operand.
struct Splat {
  float x;
};
/// An operand of map_nest_f32: element (i0, i1, i2) is p[i0 * s0 + i1 * s1 + i2 * kInner],
/// kInner 1 (contiguous along the innermost level) or 0 (one value per innermost row).
template <int kInner>
struct Nested {
  const float* p;
  int64_t s0, s1;
};

namespace eltwise_detail {
inline V::R lanes(const Dense& d, int64_t i) {
  return V::load(d.p + i);
}
inline V::R lanes(const Dense& d, int64_t i, int n) {
  return V::load(d.p + i, n);
}
inline V::R lanes(const Splat& s, int64_t) {
  return V::set1(s.x);
}
inline V::R lanes(const Splat& s, int64_t, int) {
  return V::set1(s.x);
}
inline Splat row(const Splat& s, int64_t, int64_t) {
  return s;
}
inline Dense row(const Nested<1>& o, int64_t i0, int64_t i1) {
  return Dense{o.p + i0 * o.s0 + i1 * o.s1};
}
inline Splat row(const Nested<0>& o, int64_t i0, int64_t i1) {
  return Splat{o.p[i0 * o.s0 + i1 * o.s1]};
}

/// y[i] = f(operands at i) for i in [b, e): whole vectors, then one masked tail. A lane's
/// result depends only on that lane's operands, so the split into vectors changes nothing.
template <class F, class... Ops>
inline void map_span(int64_t b, int64_t e, float* y, const F& f, const Ops&... ops) {
  constexpr int L = V::kLanes;
  int64_t i = b;
  for (; i + L <= e; i += L) V::store(y + i, f(lanes(ops, i)...));
  if (i < e) {
    const int n = int(e - i);
    V::store(y + i, f(lanes(ops, i, n)...), n);
  }
}
}  // namespace eltwise_detail

/// y[i] = f(ops[i]...) for i in [0, n), in chunks of kMapChunk over the pool. y may be one of
/// the Dense operands (each lane is read before it is written).
template <class F, class... Ops>
inline void map_n_f32(int64_t n, float* y, F f, ThreadPool* pool, Ops... ops) {
  const int64_t units = (n + kMapChunk - 1) / kMapChunk;
  parallel_for(pool, units, [&](int64_t u, int) {
    const int64_t b = u * kMapChunk, e = b + kMapChunk < n ? b + kMapChunk : n;
    eltwise_detail::map_span(b, e, y, f, ops...);
  });
}

/// y[(i0 d1 + i1) d2 + i2] = f(ops at (i0, i1, i2)...) over a d0 x d1 x d2 nest (a broadcast
/// collapsed to three levels: a per-channel scale is [C, P] * [C, 1] in NCHW, [P, C] * [C] in
/// NHWC); the threads split i0 in blocks of about kMapChunk elements.
template <class F, class... Ops>
inline void map_nest_f32(int64_t d0, int64_t d1, int64_t d2, float* y, F f, ThreadPool* pool,
                         Ops... ops) {
  const int64_t inner = d1 * d2 > 0 ? d1 * d2 : 1;
  const int64_t per = kMapChunk / inner > 1 ? kMapChunk / inner : 1;
  parallel_for(pool, (d0 + per - 1) / per, [&](int64_t u, int) {
    const int64_t end = (u + 1) * per < d0 ? (u + 1) * per : d0;
    for (int64_t i0 = u * per; i0 < end; ++i0)
      for (int64_t i1 = 0; i1 < d1; ++i1)
        eltwise_detail::map_span(0, d2, y + (i0 * d1 + i1) * d2, f,
                                 eltwise_detail::row(ops, i0, i1)...);
  });
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
