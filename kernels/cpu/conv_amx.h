// kiln CPU kernels: f32 pointwise convolution on AMX tiles, in three bf16 products (bf16x3).
//
// Y[M, P] = W[M, K] * X[K, P] for a 1x1 stride-1 unpadded conv (NCHW), with every f32 operand
// split in two bf16 halves, x = hi + lo (hi = x rounded to bf16, lo = the rest rounded to
// bf16), and each product taken as hi*hi + hi*lo + lo*hi, summed in f32 by TDPBF16PS. The
// dropped lo*lo term and lo's own rounding leave a relative error of about 2^-16 per product
// (f32's is 2^-24; Winograd F(4x4)'s transforms lose more): the sums are not f32's, and not
// bit-identical to the other conv kernels', but they are the same on every run and at every
// thread count (each output's k order is fixed).
//
// W is split and packed at compile time (conv2d_amx_pack_weights); X a block of 32 pixels at a
// time at run time, into the thread's scratch. A unit of work is one such block and a range of
// 32-row blocks of W: C tiles 2 x 2 (32 output channels x 32 pixels) stay in the tile
// registers over all of K.
//
// Needs AMX-TILE and AMX-BF16 (the target's `amx` feature) and the process's permission to use
// the tile data (kiln_cpu::amx_request(), at create).
#pragma once

#include <cstdint>
#include <cstring>

#include "amx_weights.h"
#include "conv.h"
#include "parallel.h"

#if defined(KILN_CPU_AVX512) && defined(__x86_64__) && defined(__linux__)
#define KILN_CPU_HAS_AMX_KERNELS 1
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kiln_cpu {

/// Whether conv2d_amx_f32 takes the conv: group 1, 1x1 stride 1, no pads (X is the GEMM's B).
constexpr bool conv2d_amx_applies(const Conv2dShape& s) {
  return s.group == 1 && conv2d_pointwise(s);
}

namespace amx_detail {

constexpr int64_t k_chunks(const Conv2dShape& s) {
  return (s.C + kKChunk - 1) / kKChunk;
}
constexpr int64_t m_blocks(const Conv2dShape& s) {
  return (s.M + kMBlock - 1) / kMBlock;
}

}  // namespace amx_detail

/// Bytes of the packed weights (amx_weights.h's layout for W [M, C]).
constexpr int64_t conv2d_amx_packed_weight_bytes(const Conv2dShape& s) {
  return amx_packed_weight_bytes(s.M, s.C);
}

/// Packs w [M, C] (a 1x1 conv's weights) for conv2d_amx_f32 (done at compile time).
inline void conv2d_amx_pack_weights(const Conv2dShape& s, const float* w, uint16_t* dst) {
  amx_pack_weights(w, s.M, s.C, dst);
}

/// Scratch bytes of conv2d_amx_f32 at `threads` threads (amx_weights.h's plan).
constexpr int64_t conv2d_amx_scratch_bytes(const Conv2dShape& s, int threads) {
  return amx_conv_scratch_bytes(s.C, s.OH * s.OW, threads);
}

#if defined(KILN_CPU_HAS_AMX_KERNELS)

/// Asks Linux for the AMX tile data state for this process (once; threads started later
/// inherit it). False where the kernel refuses (or predates AMX).
inline bool amx_request() {
  constexpr long kReqPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqPerm, kXtileData) == 0;
}

namespace amx_detail {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

#define KILN_AMX_TARGET __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512bf16")))

/// 16 pixels of rows k and k + 1 of X (x0, x1; null: zeros), the first `cols` of them, split
/// into one row of a hi B tile and of a lo B tile: lane j holds pixel j's (row k, row k + 1)
/// as two bf16. Returns the lanes holding an infinity or a NaN.
KILN_AMX_TARGET inline __mmask16 split_pair_row(const float* x0, const float* x1, int cols,
                                                uint16_t* hi_row, uint16_t* lo_row) {
  const __mmask16 m = __mmask16((1u << cols) - 1u);
  const __m512 a = x0 ? _mm512_maskz_loadu_ps(m, x0) : _mm512_setzero_ps();
  const __m512 b = x1 ? _mm512_maskz_loadu_ps(m, x1) : _mm512_setzero_ps();
  // hi: both rows rounded to bf16 (nearest even; NaN stays NaN), a's in the low 256 bits.
  const __m512i h = _mm512_castps_si512(reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(b, a)));
  // Back to f32 (bf16 bits in the high half of each 32-bit lane) for the rest.
  const __m512 ha = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(
      __mmask16(0xffff),
      _mm512_maskz_cvtepu16_epi32(__mmask16(0xffff),
                                  _mm512_maskz_extracti64x4_epi64(__mmask8(0xff), h, 0)),
      16));
  const __m512 hb = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(
      __mmask16(0xffff),
      _mm512_maskz_cvtepu16_epi32(__mmask16(0xffff),
                                  _mm512_maskz_extracti64x4_epi64(__mmask8(0xff), h, 1)),
      16));
  // lo = x - hi, zero where hi is not finite (inf - inf would be a NaN).
  const __mmask16 fa = _mm512_cmp_ps_mask(_mm512_sub_ps(ha, ha), _mm512_setzero_ps(), _CMP_EQ_OQ);
  const __mmask16 fb = _mm512_cmp_ps_mask(_mm512_sub_ps(hb, hb), _mm512_setzero_ps(), _CMP_EQ_OQ);
  const __m512i l = _mm512_castps_si512(reinterpret_cast<__m512>(
      _mm512_cvtne2ps_pbh(_mm512_maskz_sub_ps(fb, b, hb), _mm512_maskz_sub_ps(fa, a, ha))));
  // Interleave: word 2j <- a's j (word j), word 2j + 1 <- b's j (word 16 + j).
  const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                       23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  _mm512_storeu_si512(hi_row, _mm512_maskz_permutexvar_epi16(__mmask32(0xffffffffu), idx, h));
  _mm512_storeu_si512(lo_row, _mm512_maskz_permutexvar_epi16(__mmask32(0xffffffffu), idx, l));
  return __mmask16(~(fa & fb)) & m;
}

/// Packs pixel blocks [b0, b0 + nb) of X [K, P] (32 pixels each, the last may be short) as
/// B tiles, block after block: per K chunk, hi and lo of its pixels 0-15, then of 16-31. Each
/// pair of X's rows is read across all nb blocks at once (a row's run of pixels, not 32 floats
/// of each of K rows a page apart). bad[i]: whether block b0 + i holds an infinity or a NaN.
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
        uint16_t* hi = dst + ((j / 2) * nk + kc) * 2048 + (j % 2) * 1024 + p * 32;
        if (split_pair_row(cols > 0 && x0 ? x0 + p0 : nullptr, cols > 0 && x1 ? x1 + p0 : nullptr,
                           cols, hi, hi + 512))
          bad[j / 2] = 1;
      }
    }
}

/// C block [m0, m0 + 32) x [n0, n0 + nc) in f32 FMA-free sums over W = hi + lo: for a pixel
/// block holding an infinity or a NaN, where hi * lo's product inf * 0 would make a NaN that
/// f32 arithmetic does not (x = inf, a weight exactly in bf16).
inline void block_f32(int64_t K, int64_t nk, const uint16_t* a, const float* x, int64_t P,
                      int64_t n0, int64_t nc, int64_t mc, float* c) {
  for (int64_t r = 0; r < mc; ++r) {
    const uint16_t* row = a + (r / 16) * 1024 + (r % 16) * 32;
    for (int64_t j = 0; j < nc; ++j) c[r * kNBlock + j] = 0.0f;
    for (int64_t k = 0; k < K; ++k) {
      const uint16_t* t = row + (k / kKChunk) * 2048 + k % kKChunk;
      const float w = bf16_value(t[0]) + bf16_value(t[512]);
      const float* xk = x + k * P + n0;
      for (int64_t j = 0; j < nc; ++j) c[r * kNBlock + j] += w * xk[j];
    }
  }
  (void)nk;
}

/// A tiles 4 and 5 (W rows 0-15 and 16-31 of a chunk: its hi tiles at p, its lo at p + 512),
/// and B tiles 6 and 7 (pixels 0-15 and 16-31). The tile numbers must be literals (GCC's
/// intrinsics paste them into the assembly).
KILN_AMX_TARGET inline void load_a(const uint16_t* p) {
  _tile_loadd(4, p, 64);
  _tile_loadd(5, p + 1024, 64);
}
KILN_AMX_TARGET inline void load_b(const uint16_t* p) {
  _tile_loadd(6, p, 64);
  _tile_loadd(7, p + 1024, 64);
}

/// C tiles 0-3 (W rows 0-15 / 16-31 x pixels 0-15 / 16-31) += A tiles 4, 5 x B tiles 6, 7.
KILN_AMX_TARGET inline void dp_2x2() {
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

/// One 32 x 32 block of C over all of K: A tiles a (per chunk: hi0, lo0, hi1, lo1), B tiles b
/// (per chunk: hi0, lo0, hi1, lo1), into c (32 rows of 32 floats).
KILN_AMX_TARGET inline void block(int64_t nk, const uint16_t* a, const uint16_t* b, float* c) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t kc = 0; kc < nk; ++kc, a += 2048, b += 2048) {
    // hi * hi, then lo(A) * hi(B), then hi(A) * lo(B); lo * lo is left out.
    load_a(a);
    load_b(b);
    dp_2x2();
    load_a(a + 512);
    dp_2x2();
    load_a(a);
    load_b(b + 512);
    dp_2x2();
  }
  _tile_stored(0, c, 128);
  _tile_stored(1, c + 16, 128);
  _tile_stored(2, c + 16 * 32, 128);
  _tile_stored(3, c + 16 * 32 + 16, 128);
}

KILN_AMX_TARGET inline void configure() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  // GCC 12 does not count LDTILECFG as reading cfg and drops the stores above without this.
  asm volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}

KILN_AMX_TARGET inline void release() {
  _tile_release();
}

}  // namespace amx_detail

namespace amx_detail {

/// C block (W rows block mb x pixel block nb) over all of K from its B tiles bt, then the
/// epilogue into y [M, P] (bias, residual with y's layout, activation); f32 sums over W's
/// halves where the block holds an infinity or a NaN (block_f32).
template <class Act>
inline void finish_block(int64_t K, int64_t M, int64_t P, int64_t mb, int64_t nb, bool bad,
                         const uint16_t* w_packed, const uint16_t* bt, const float* x,
                         const float* bias, const Epilogue<Act>& e, const float* res, float* y) {
  const int64_t nk = (K + kKChunk - 1) / kKChunk;
  const int64_t m0 = mb * kMBlock, mc = M - m0 < kMBlock ? M - m0 : kMBlock;
  const int64_t n0 = nb * kNBlock, nc = P - n0 < kNBlock ? P - n0 : kNBlock;
  alignas(64) float c[kMBlock * kNBlock];
  if (bad)
    block_f32(K, nk, w_packed + mb * nk * 2048, x, P, n0, nc, mc, c);
  else
    block(nk, w_packed + mb * nk * 2048, bt, c);
  for (int64_t r = 0; r < mc; ++r) {
    const int64_t m = m0 + r;
    float* yo = y + m * P + n0;
    const float* ro = res ? res + m * P + n0 : nullptr;
    for (int64_t h = 0; h < nc; h += V::kLanes) {
      const int cnt = int(nc - h < V::kLanes ? nc - h : V::kLanes);
      V::R v = V::load(c + r * kNBlock + h);
      if (bias) v = V::add(v, V::set1(bias[m]));
      if (ro) v = V::add(v, V::load(ro + h, cnt));
      v = ActInRegister<Act>::apply(e.act, v);
      V::store(yo + h, v, cnt);
      if constexpr (!ActInRegister<Act>::kYes)
        for (int i = 0; i < cnt; ++i) yo[h + i] = act_value(e.act, yo[h + i]);
    }
  }
}

}  // namespace amx_detail

/// Y = conv(X, W) + bias, then the epilogue (residual [N, M, OH, OW], activation), for a conv
/// conv2d_amx_applies takes. w_packed from conv2d_amx_pack_weights; scratch:
/// conv2d_amx_scratch_bytes(s, threads) for the pool's threads (or 1), 64-byte aligned.
/// Each output's sums run in one k order whatever the threads: the same bits at any count.
template <class Act>
inline void conv2d_amx_f32(const Conv2dShape& s, const float* x, const uint16_t* w_packed,
                           const float* bias, float* y, const Epilogue<Act>& e, void* scratch,
                           ThreadPool* pool) {
  using namespace amx_detail;
  const int64_t K = s.C, M = s.M, P = s.OH * s.OW, nk = k_chunks(s), mb_all = m_blocks(s);
  const int64_t nb_all = (P + kNBlock - 1) / kNBlock, per_block = nk * 2048;
  const int threads = pool ? pool->size() : 1;
  const int64_t G = amx_conv_group_blocks(K, P);
  uint16_t* const tiles = static_cast<uint16_t*>(scratch);
  for (int64_t n = 0; n < s.N; ++n) {
    const float* xn = x + n * K * P;
    float* yn = y + n * M * P;
    const float* rn = e.residual ? e.residual + n * M * P : nullptr;
    if (amx_conv_shared_pack(K, P, threads)) {
      // Every block packed once, then the threads split W's row blocks.
      uint8_t* bad = reinterpret_cast<uint8_t*>(tiles + nb_all * per_block);
      parallel_for(pool, nb_all, [&](int64_t b, int) {
        pack_blocks(xn, K, P, b, 1, tiles + b * per_block, bad + b);
      });
      const int64_t groups = mb_all < 4 * threads ? mb_all : 4 * threads;
      parallel_for(pool, groups, [&](int64_t g, int) {
        configure();
        for (int64_t mb = g * mb_all / groups; mb < (g + 1) * mb_all / groups; ++mb)
          for (int64_t b = 0; b < nb_all; ++b)
            finish_block(K, M, P, mb, b, bad[b], w_packed, tiles + b * per_block, xn, bias, e, rn,
                         yn);
        release();
      });
      continue;
    }
    // A group of G pixel blocks per unit: packed into the thread's scratch, then every W row
    // block over them (W's block stays in L2 for the group's blocks).
    parallel_for(pool, (nb_all + G - 1) / G, [&](int64_t u, int tid) {
      uint16_t* t = tiles + tid * G * per_block;
      const int64_t b0 = u * G, nb = nb_all - b0 < G ? nb_all - b0 : G;
      uint8_t bad[128];
      pack_blocks(xn, K, P, b0, nb, t, bad);
      configure();
      for (int64_t mb = 0; mb < mb_all; ++mb)
        for (int64_t b = 0; b < nb; ++b)
          finish_block(K, M, P, mb, b0 + b, bad[b], w_packed, t + b * per_block, xn, bias, e, rn,
                       yn);
      release();
    });
  }
}

#endif  // KILN_CPU_HAS_AMX_KERNELS

}  // namespace kiln_cpu
