// kiln CPU kernels: f32 C = A * B with a constant B (weights) on AMX tiles, in bf16 pieces
// (amx.h). A [M, K] (row-major, read at run time: a MatMul's activations, a
// channels-last 1x1 conv's pixels) gives the A tiles, packed a group of 32-row blocks at a time;
// B's pieces are the B tiles, packed at compile time (amx_weights.h's amx_pack_b).
#pragma once

#include <cstdint>

#include "amx.h"
#include "gemm.h"

namespace kiln_cpu {

/// Scratch bytes of gemm_amx_f32 at `threads` threads (amx_weights.h's plan over A's rows).
constexpr int64_t gemm_amx_scratch_bytes(int64_t M, int64_t N, int64_t K, int threads, int np) {
  return amx_scratch_bytes(K, M, N, threads, np);
}

#if defined(KILN_CPU_HAS_AMX_KERNELS)

namespace amx_detail {

/// Packs A's rows of blocks [b0, b0 + nb) (32 rows each; rows past M zero) as A tiles, block
/// after block: per K chunk, rows 0-15's pieces 1, 2, 3, then rows 16-31's. A tile row is one
/// row's 32 values of the chunk, read straight from A. bad[i]: block b0 + i holds an infinity
/// or a NaN.
template <int NP>
KILN_AMX_TARGET inline void pack_rows(const float* a, int64_t lda, int64_t M, int64_t K, int64_t b0,
                                      int64_t nb, uint16_t* dst, uint8_t* bad) {
  const int64_t nk = (K + kKChunk - 1) / kKChunk;
  for (int64_t i = 0; i < nb; ++i) {
    bad[i] = 0;
    for (int64_t r = 0; r < kMBlock; ++r) {
      const int64_t m = (b0 + i) * kMBlock + r;
      const float* row = m < M ? a + m * lda : nullptr;
      uint16_t* t = dst + i * nk * chunk_words(NP) + (r / 16) * half_words(NP) + (r % 16) * 32;
      for (int64_t kc = 0; kc < nk; ++kc, t += chunk_words(NP)) {
        const int64_t k0 = kc * kKChunk, left = row ? K - k0 : 0;
        const __mmask16 m0 = __mmask16(left >= 16 ? 0xffff : (1u << (left > 0 ? left : 0)) - 1u);
        const __mmask16 m1 = __mmask16(left >= 32  ? 0xffff
                                       : left > 16 ? (1u << (left - 16)) - 1u
                                                   : 0);
        const Pieces h = pieces(_mm512_maskz_loadu_ps(m0, row ? row + k0 : a),
                                _mm512_maskz_loadu_ps(m1, row ? row + k0 + 16 : a));
        for (int q = 0; q < NP; ++q) _mm512_storeu_si512(t + q * kTileWords, h.p[q]);
        if (h.bad) bad[i] = 1;
      }
    }
  }
}

/// C block (A's rows [m0, m0 + mc) x B's columns [n0, n0 + nc)) in f32 sums over B's joined
/// pieces: for a block of A holding an infinity or a NaN (a piece product inf * 0 would be a
/// NaN).
inline void gemm_block_f32(int64_t K, int np, const float* a, int64_t lda, int64_t m0, int64_t mc,
                           const uint16_t* bt, int64_t nc, float* c) {
  for (int64_t r = 0; r < mc; ++r) {
    const float* row = a + (m0 + r) * lda;
    for (int64_t j = 0; j < nc; ++j) {
      const uint16_t* col = bt + (j / 16) * half_words(np) + (j % 16) * 2;
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k)
        sum += row[k] *
               joined(col + (k / kKChunk) * chunk_words(np) + ((k % kKChunk) / 2) * 32 + k % 2,
                      kTileWords, np);
      c[r * kNBlock + j] = sum;
    }
  }
}

}  // namespace amx_detail

/// C[M, N] = A[M, K] * B (+ the epilogue: row and column bias, residual, activation), A
/// row-major (lda), B packed by amx_pack_b, C row-major (ldc). scratch:
/// gemm_amx_scratch_bytes(M, N, K, plan_threads) (at most plan_threads in the pool). A 32-row block
/// of A holding an infinity or a NaN sums in f32 over B's pieces. C may be the residual itself.
template <int NP, class Act>
inline void gemm_amx_f32(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
                         const uint16_t* b_packed, float* c, int64_t ldc, const Epilogue<Act>& e,
                         void* scratch, ThreadPool* pool, int plan_threads) {
  using namespace amx_detail;
  const int64_t nk = (K + kKChunk - 1) / kKChunk;
  // The plan of the scratch's threads (a pool lowered by set_threads runs it with fewer).
  const int threads = plan_threads > 0 ? plan_threads : 1;
  drive((M + kMBlock - 1) / kMBlock, (N + kNBlock - 1) / kNBlock, nk * chunk_words(NP),
        amx_group_blocks(K, M, threads, NP), amx_shared_pack(M, N, threads), scratch, pool,
        [&](int64_t b0, int64_t nb, uint16_t* dst, uint8_t* bad) {
          pack_rows<NP>(a, lda, M, K, b0, nb, dst, bad);
        },
        [&](int64_t nb, int64_t mb, bool bad, const uint16_t* at) {
          const int64_t m0 = mb * kMBlock, mc = M - m0 < kMBlock ? M - m0 : kMBlock;
          const int64_t n0 = nb * kNBlock, nc = N - n0 < kNBlock ? N - n0 : kNBlock;
          const uint16_t* bt = b_packed + nb * nk * chunk_words(NP);
          alignas(64) float cb[kMBlock * kNBlock];
          if (bad)
            gemm_block_f32(K, NP, a, lda, m0, mc, bt, nc, cb);
          else
            block<NP>(nk, at, bt, cb);
          for (int64_t r = 0; r < mc; ++r)
            gemm_detail::finish_row(V::load(cb + r * kNBlock), V::load(cb + r * kNBlock + 16),
                                    c + (m0 + r) * ldc + n0, int(nc), true, e, m0 + r, n0);
        });
}

#endif  // KILN_CPU_HAS_AMX_KERNELS

}  // namespace kiln_cpu
