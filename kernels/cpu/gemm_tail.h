// kiln optimized CPU kernels: the GEMM driver's tail of 1-4 columns past a block's whole panels
// with packed A (gemm.h's gemm_packed_a runs it after the block's strips): G strips x T columns
// of fma chains instead of kMR x kNR tiles that would wait on the fma latency.
#pragma once

#include <cstdint>

#include "gemm_split.h"
#include "simd.h"
#include "vfunctor.h"

namespace kiln_cpu {

template <class Act>
struct Epilogue;  // gemm.h

namespace gemm_detail {

/// The last `T` (1-4) columns of a block, past its whole panels, for G strips of packed A at
/// once: C[strip g's rows, n + j] (+)= A[strip g] * B[:, j], a strip's kMR rows in one vector
/// times column j broadcast, G x T chains of fmas. A tile of the whole panel (micro<R, 1>) for
/// these columns runs kMR chains that wait on the fma latency for T useful columns of kLanes:
/// ResNet-50's 7x7 stage (49 pixels: three panels and one column) spent ~5% of its 1-thread
/// time there on a Zen 3. Each element is the same k-ascending fma chain as micro's, and the
/// epilogue the same operations in the same order: results are bit-identical.
/// a: strip 0's k block ([kc][kMR]), strip g at a + g * a_stride; `valid` strips of them are
/// real (the others repeat the last, not stored); rows: C rows from strip 0's first, in all.
template <int T, int G, class Act>
inline void tail_columns(int64_t kc, const float* a, int64_t a_stride, int valid, const float* b,
                         int64_t ldb, float* c, int64_t ldc, int64_t rows, bool accumulate,
                         bool last, const Epilogue<Act>& e, int64_t m, int64_t n) {
  const float* as[G];
  KILN_CPU_UNROLL
  for (int g = 0; g < G; ++g) as[g] = a + (g < valid ? g : valid - 1) * a_stride;
  V::R acc[G][T];
  KILN_CPU_UNROLL
  for (int g = 0; g < G; ++g) {
    KILN_CPU_UNROLL
    for (int j = 0; j < T; ++j) acc[g][j] = V::zero();
  }
  // A strip's k row is kMR floats: a full vector load reads into the next row, except at the
  // last k, which (for the last strip of A) may be the end of the buffer.
  constexpr bool kShortRows = kMR < V::kLanes;
  const int64_t full = kShortRows && kc > 0 ? kc - 1 : kc;
  auto step = [&](int64_t k, bool masked) __attribute__((always_inline)) {
    V::R bk[T];
    KILN_CPU_UNROLL
    for (int j = 0; j < T; ++j) bk[j] = V::set1(b[k * ldb + j]);
    KILN_CPU_UNROLL
    for (int g = 0; g < G; ++g) {
      const V::R av = masked ? V::load(as[g] + k * kMR, kMR) : V::load(as[g] + k * kMR);
      KILN_CPU_UNROLL
      for (int j = 0; j < T; ++j) acc[g][j] = V::fma(av, bk[j], acc[g][j]);
    }
  };
  for (int64_t k = 0; k < full; ++k) step(k, false);
  if (full < kc) step(full, true);
  float lanes[V::kLanes];
  for (int g = 0; g < valid; ++g) {
    const int64_t r_end = rows - g * kMR < kMR ? rows - g * kMR : kMR;
    for (int j = 0; j < T; ++j) {
      V::store(lanes, acc[g][j]);
      const int64_t col = n + j;
      for (int64_t r = 0; r < r_end; ++r) {
        const int64_t row = m + g * kMR + r;
        float* cp = c + (g * kMR + r) * ldc + j;
        float v = lanes[r];
        if (accumulate) v = *cp + v;
        if (last) {
          if (e.row_bias) v = v + e.row_bias[row];
          if (e.col_bias) v = v + e.col_bias[col];
          if (e.residual) v = v + e.residual[row * e.ld_residual + col];
          v = act_value(e.act, v);
        }
        *cp = v;
      }
    }
  }
}

/// tail_columns over the strips [0, strips) of a block's rows, G at a time.
template <int T, class Act>
inline void tail_strips_of(int64_t kc, const float* a, int64_t a_stride, int64_t strips,
                        const float* b, int64_t ldb, float* c, int64_t ldc, int64_t rows,
                        bool accumulate, bool last, const Epilogue<Act>& e, int64_t m,
                        int64_t n) {
  constexpr int G = T == 1 ? 12 : T == 2 ? 6 : T == 3 ? 3 : 2;
  for (int64_t s = 0; s < strips; s += G) {
    const int valid = int(strips - s < G ? strips - s : G);
    tail_columns<T, G>(kc, a + s * a_stride, a_stride, valid, b, ldb, c + s * kMR * ldc, ldc,
                       rows - s * kMR, accumulate, last, e, m + s * kMR, n);
  }
}

/// tail_strips_of for a tail of `tail` (1-4) columns.
template <class Act>
inline void tail_strips(int tail, int64_t kc, const float* a, int64_t a_stride, int64_t strips,
                        const float* b, int64_t ldb, float* c, int64_t ldc, int64_t rows,
                        bool accumulate, bool last, const Epilogue<Act>& e, int64_t m,
                        int64_t n) {
  switch (tail) {
    case 1:
      return tail_strips_of<1>(kc, a, a_stride, strips, b, ldb, c, ldc, rows, accumulate, last,
                               e, m, n);
    case 2:
      return tail_strips_of<2>(kc, a, a_stride, strips, b, ldb, c, ldc, rows, accumulate, last,
                               e, m, n);
    case 3:
      return tail_strips_of<3>(kc, a, a_stride, strips, b, ldb, c, ldc, rows, accumulate, last,
                               e, m, n);
    default:
      return tail_strips_of<4>(kc, a, a_stride, strips, b, ldb, c, ldc, rows, accumulate, last,
                               e, m, n);
  }
}

}  // namespace gemm_detail

}  // namespace kiln_cpu
