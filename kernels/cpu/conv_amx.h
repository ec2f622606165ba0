// kiln CPU kernels: f32 pointwise convolution on AMX tiles, in bf16 pieces (amx.h). Y[M, P] = W[M,
// K] * X[K, P] for a 1x1 stride-1 unpadded conv (NCHW): W's pieces are the A tiles (packed at
// compile time, amx_weights.h), X's the B tiles, packed at run time a group of 32-pixel blocks at a
// time (two rows of X interleaved per tile row).
#pragma once

#include <cstdint>

#include "amx.h"
#include "conv.h"

namespace kiln_cpu {

/// Whether conv2d_amx_f32 takes the conv: group 1, 1x1 stride 1, no pads (X is the GEMM's B).
constexpr bool conv2d_amx_applies(const Conv2dShape& s) {
  return s.group == 1 && conv2d_pointwise(s);
}

/// Bytes of the packed weights (amx_weights.h's layout for W [M, C]).
constexpr int64_t conv2d_amx_packed_weight_bytes(const Conv2dShape& s, int np) {
  return amx_packed_weight_bytes(s.M, s.C, np);
}

/// Packs w [M, C] (a 1x1 conv's weights) for conv2d_amx_f32 (done at compile time).
inline void conv2d_amx_pack_weights(const Conv2dShape& s, const float* w, int np, uint16_t* dst) {
  amx_pack_weights(w, s.M, s.C, np, dst);
}

/// Scratch bytes of conv2d_amx_f32 at `threads` threads (amx_weights.h's plan over the pixels).
constexpr int64_t conv2d_amx_scratch_bytes(const Conv2dShape& s, int threads, int np) {
  return amx_scratch_bytes(s.C, s.OH * s.OW, s.M, threads, np);
}

#if defined(KILN_CPU_HAS_AMX_KERNELS)

namespace amx_detail {

/// 16 pixels of rows k and k + 1 of X (x0, x1; null: zeros), the first `cols` of them, split
/// into one row of each piece's B tile (rows kTileWords apart from `row`): lane j holds pixel
/// j's (row k, row k + 1) as two bf16. Returns the lanes holding an infinity or a NaN.
template <int NP>
KILN_AMX_TARGET inline __mmask16 split_pair_row(const float* x0, const float* x1, int cols,
                                                uint16_t* row) {
  const __mmask16 m = __mmask16((1u << cols) - 1u);
  const Pieces h = pieces(x0 ? _mm512_maskz_loadu_ps(m, x0) : _mm512_setzero_ps(),
                          x1 ? _mm512_maskz_loadu_ps(m, x1) : _mm512_setzero_ps());
  // Interleave: word 2j <- x0's j (word j), word 2j + 1 <- x1's j (word 16 + j).
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                       23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  for (int q = 0; q < NP; ++q)
    _mm512_storeu_si512(row + q * kTileWords,
                        _mm512_maskz_permutexvar_epi16(__mmask32(0xffffffffu), idx, h.p[q]));
  return h.bad & m;
}

/// Packs pixel blocks [b0, b0 + nb) of X [K, P] (32 pixels each, the last may be short) as
/// B tiles, block after block: per K chunk, the pieces of its pixels 0-15, then of 16-31. Each
/// pair of X's rows is read across all nb blocks at once (a row's run of pixels, not 32 floats
/// of each of K rows a page apart). bad[i]: whether block b0 + i holds an infinity or a NaN.
template <int NP>
KILN_AMX_TARGET inline void pack_blocks(const float* x, int64_t K, int64_t P, int64_t b0,
                                        int64_t nb, uint16_t* dst, uint8_t* bad) {
  const int64_t nk = (K + kKChunk - 1) / kKChunk;
  for (int64_t i = 0; i < nb; ++i) bad[i] = 0;
  for (int64_t kc = 0; kc < nk; ++kc)
    for (int64_t p = 0; p < 16; ++p) {
      const int64_t k = kc * kKChunk + 2 * p;
      const float* x0 = k < K ? x + k * P : nullptr;
      const float* x1 = k + 1 < K ? x + (k + 1) * P : nullptr;
      for (int64_t j = 0; j < 2 * nb; ++j) {
        const int64_t p0 = b0 * kNBlock + 16 * j;
        const int cols = int(P - p0 <= 0 ? 0 : P - p0 > 16 ? 16 : P - p0);
        uint16_t* row =
            dst + ((j / 2) * nk + kc) * chunk_words(NP) + (j % 2) * half_words(NP) + p * 32;
        if (split_pair_row<NP>(cols > 0 && x0 ? x0 + p0 : nullptr,
                               cols > 0 && x1 ? x1 + p0 : nullptr, cols, row))
          bad[j / 2] = 1;
      }
    }
}

/// C block [m0, m0 + 32) x [n0, n0 + nc) in f32 FMA-free sums over W's joined pieces: for a
/// pixel block holding an infinity or a NaN, where a piece product inf * 0 would make a NaN
/// that f32 arithmetic does not (x = inf, a weight exactly in bf16).
inline void block_f32(int64_t K, int np, const uint16_t* a, const float* x, int64_t P, int64_t n0,
                      int64_t nc, int64_t mc, float* c) {
  for (int64_t r = 0; r < mc; ++r) {
    const uint16_t* row = a + (r / 16) * half_words(np) + (r % 16) * 32;
    for (int64_t j = 0; j < nc; ++j) c[r * kNBlock + j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const float w = joined(row + (k / kKChunk) * chunk_words(np) + k % kKChunk, kTileWords, np);
      const float* xk = x + k * P + n0;
      for (int64_t j = 0; j < nc; ++j) c[r * kNBlock + j] += w * xk[j];
    }
  }
}

}  // namespace amx_detail

/// Y = conv(X, W) + bias, then the epilogue (residual [N, M, OH, OW], activation), for a conv
/// conv2d_amx_applies takes. w_packed from conv2d_amx_pack_weights; scratch:
/// conv2d_amx_scratch_bytes(s, plan_threads) (at most plan_threads in the pool), 64-byte aligned.
/// A 32-pixel block holding an infinity or a NaN sums in f32 over W's pieces (block_f32).
template <int NP, class Act>
inline void conv2d_amx_f32(const Conv2dShape& s, const float* x, const uint16_t* w_packed,
                           const float* bias, float* y, const Epilogue<Act>& e, void* scratch,
                           ThreadPool* pool, int plan_threads) {
  using namespace amx_detail;
  const int64_t K = s.C, M = s.M, P = s.OH * s.OW, nk = (K + kKChunk - 1) / kKChunk;
  // The plan of the scratch's threads (a pool lowered by set_threads runs it with fewer).
  const int threads = plan_threads > 0 ? plan_threads : 1;
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * K * P;
    float* yn = y + n * M * P;
    // The bias by rows (output channels), the residual with y's layout.
    const Epilogue<Act> en =
        make_epilogue(e.act, bias, static_cast<const float*>(nullptr),
                      e.residual ? e.residual + n * M * P : static_cast<const float*>(nullptr), P);
    drive((P + kNBlock - 1) / kNBlock, (M + kMBlock - 1) / kMBlock, nk * chunk_words(NP),
          amx_group_blocks(K, P, threads, NP), amx_shared_pack(P, M, threads), scratch, pool,
          [&](int64_t b0, int64_t nb, uint16_t* dst, uint8_t* bad) {
            pack_blocks<NP>(xn, K, P, b0, nb, dst, bad);
          },
          [&](int64_t mb, int64_t pb, bool bad, const uint16_t* bt) {
            const int64_t m0 = mb * kMBlock, mc = M - m0 < kMBlock ? M - m0 : kMBlock;
            const int64_t n0 = pb * kNBlock, nc = P - n0 < kNBlock ? P - n0 : kNBlock;
            alignas(64) float c[kMBlock * kNBlock];
            if (bad)
              block_f32(K, NP, w_packed + mb * nk * chunk_words(NP), xn, P, n0, nc, mc, c);
            else
              block<NP>(nk, w_packed + mb * nk * chunk_words(NP), bt, c);
            for (int64_t r = 0; r < mc; ++r)
              gemm_detail::finish_row(V::load(c + r * kNBlock), V::load(c + r * kNBlock + 16),
                                      yn + (m0 + r) * P + n0, int(nc), true, en, m0 + r, n0);
          });
  }
}

#endif  // KILN_CPU_HAS_AMX_KERNELS

}  // namespace kiln_cpu
