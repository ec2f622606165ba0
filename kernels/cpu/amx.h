// kiln CPU kernels: what the AMX kernels share (conv_amx.h, gemm_amx.h). Each f32 operand is
// split in NP bf16 pieces and a product taken as the piece products that matter (block), summed
// in f32 by TDPBF16PS. NP = 3 (`--amx exact`): x = p1 + p2 + p3 within 2^-27, six products, a
// product as close as f32's own rounding (2^-24). NP = 2 (`--amx fast`): three products, about
// 2^-16 a product; it failed tests/models/compare_ort.py's max-abs bound on PP-OCRv4 det (2.6e-4
// against 1e-4) with cosine 1.0, so it is not a default. The sums are not the f32 kernels'
// bits, but each output's k order is fixed: the same bits on every run and at every thread
// count.
//
// The compile-time operand (weights) is split and packed by amx_weights.h; the run-time one a
// group of 32-wide blocks at a time, by the kernel's own packer, into the thread's scratch.
// C is 2 x 2 tiles of 16 x 16 f32 (32 x 32) held in the tile registers over all of K.
//
// Needs AVX512-BF16, AMX-TILE and AMX-BF16 and the process's permission for the tile data
// (amx_request(), at create).
#pragma once

#include <cstdint>

#include "amx_weights.h"
#include "parallel.h"
#include "simd.h"

#if defined(KILN_CPU_AVX512) && defined(__x86_64__) && defined(__linux__)
#define KILN_CPU_HAS_AMX_KERNELS 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kiln_cpu {

#if defined(KILN_CPU_HAS_AMX_KERNELS)

/// Whether this CPU has what the AMX kernels run (cpuid: AVX512-BF16, AMX-TILE, AMX-BF16; not
/// __builtin_cpu_supports, whose AMX names clang 14 lacks), and if so asks Linux for the AMX
/// tile data state for this process (threads started later inherit it). False where either
/// is missing, or the kernel refuses (or predates AMX: Linux 5.16).
inline bool amx_request() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool tile = d & (1u << 24), bf16 = d & (1u << 22);
  if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5)) || !tile || !bf16) return false;
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

/// 32 floats (a: words 0-15, b: words 16-31) as three bf16 pieces (amx_weights.h's split,
/// rounded to nearest even by VCVTNE2PS2BF16; a NaN stays a NaN): p[0] = x rounded, p[1] the
/// rest rounded, p[2] what is left rounded; p[1] = p[2] = 0 where p[0] is not finite (inf -
/// inf would be a NaN). bad: the lanes of a or b (either) holding an infinity or a NaN.
struct Pieces {
  __m512i p[kPieces];
  __mmask16 bad;
};
KILN_AMX_TARGET inline Pieces pieces(__m512 a, __m512 b) {
  // A word's bf16 bits back to f32 (the high half of a 32-bit lane).
  auto widen = [](__m512i h, int half) {
    const __m256i w = half ? _mm512_maskz_extracti64x4_epi64(__mmask8(0xff), h, 1)
                           : _mm512_maskz_extracti64x4_epi64(__mmask8(0xff), h, 0);
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(
        __mmask16(0xffff), _mm512_maskz_cvtepu16_epi32(__mmask16(0xffff), w), 16));
  };
  Pieces r;
  r.p[0] = _mm512_castps_si512(reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(b, a)));
  __m512 ha = widen(r.p[0], 0), hb = widen(r.p[0], 1);
  const __mmask16 fa = _mm512_cmp_ps_mask(_mm512_sub_ps(ha, ha), _mm512_setzero_ps(), _CMP_EQ_OQ);
  const __mmask16 fb = _mm512_cmp_ps_mask(_mm512_sub_ps(hb, hb), _mm512_setzero_ps(), _CMP_EQ_OQ);
  __m512 ra = _mm512_maskz_sub_ps(fa, a, ha), rb = _mm512_maskz_sub_ps(fb, b, hb);
  r.p[1] = _mm512_castps_si512(reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(rb, ra)));
  ra = _mm512_sub_ps(ra, widen(r.p[1], 0));
  rb = _mm512_sub_ps(rb, widen(r.p[1], 1));
  r.p[2] = _mm512_castps_si512(reinterpret_cast<__m512>(_mm512_cvtne2ps_pbh(rb, ra)));
  r.bad = __mmask16(~(fa & fb));
  return r;
}

/// A tiles 4 and 5 (rows 0-15 and 16-31 of a chunk's piece, hw halfwords apart), and B tiles 6
/// and 7 (columns 0-15 and 16-31). The tile numbers must be literals (GCC's intrinsics paste
/// them into the assembly).
KILN_AMX_TARGET inline void load_a(const uint16_t* p, int64_t hw) {
  _tile_loadd(4, p, 64);
  _tile_loadd(5, p + hw, 64);
}
KILN_AMX_TARGET inline void load_b(const uint16_t* p, int64_t hw) {
  _tile_loadd(6, p, 64);
  _tile_loadd(7, p + hw, 64);
}

/// C tiles 0-3 (rows 0-15 / 16-31 x columns 0-15 / 16-31) += A tiles 4, 5 x B tiles 6, 7.
KILN_AMX_TARGET inline void dp_2x2() {
  _tile_dpbf16ps(0, 4, 6);
  _tile_dpbf16ps(1, 4, 7);
  _tile_dpbf16ps(2, 5, 6);
  _tile_dpbf16ps(3, 5, 7);
}

/// One 32 x 32 block of C over all of K from A's and B's tiles of NP pieces, into c (32 rows
/// of 32 floats). NP = 3 ("exact"): per chunk the six products of pieces whose ranks sum to at
/// most 4 (1x1, 1x2, 1x3, 2x1, 2x2, 3x1); those left out are below 2^-26 of a product and the
/// pieces keep each operand within 2^-27, so a product is as close as f32's own rounding.
/// NP = 2 ("fast"): 1x1, 2x1, 1x2; about 2^-16 of a product (the 2x2 term and the pieces' own
/// rounding, 2^-18 each).
template <int NP>
KILN_AMX_TARGET inline void block(int64_t nk, const uint16_t* a, const uint16_t* b, float* c) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  constexpr int64_t T = kTileWords, H = half_words(NP);
  for (int64_t kc = 0; kc < nk; ++kc, a += chunk_words(NP), b += chunk_words(NP)) {
    load_a(a, H);
    load_b(b, H);
    dp_2x2();  // 1x1
    load_a(a + T, H);
    dp_2x2();  // 2x1
    if constexpr (NP == 3) {
      load_b(b + T, H);
      dp_2x2();  // 2x2
      load_a(a + 2 * T, H);
      load_b(b, H);
      dp_2x2();  // 3x1
    }
    load_a(a, H);
    load_b(b + T, H);
    dp_2x2();  // 1x2
    if constexpr (NP == 3) {
      load_b(b + 2 * T, H);
      dp_2x2();  // 1x3
    }
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

/// The AMX kernels' loop. The run-time operand's `rt_blocks` blocks of 32 (rows or pixels)
/// are packed by pack(b0, nb, dst, bad) (per_block halfwords a block; bad[i]: block b0 + i
/// holds an infinity or a NaN), a group of `group` blocks at a time into the thread's scratch,
/// then finish(cb, b, bad, tiles) runs every one of the compile-time operand's `ct_blocks`
/// blocks of 32 against each (its weights' block stays in L2 for the group). shared: all blocks
/// are packed once into shared scratch first, then the threads split the compile-time blocks
/// (amx_shared_pack: with fewer than two groups a thread, each would pack all of them).
template <class Pack, class Finish>
inline void drive(int64_t rt_blocks, int64_t ct_blocks, int64_t per_block, int64_t group,
                  bool shared, void* scratch, ThreadPool* pool, Pack pack, Finish finish) {
  const int threads = pool ? pool->size() : 1;
  uint16_t* const tiles = static_cast<uint16_t*>(scratch);
  if (shared) {
    uint8_t* bad = reinterpret_cast<uint8_t*>(tiles + rt_blocks * per_block);
    parallel_for(pool, rt_blocks,
                 [&](int64_t b, int) { pack(b, 1, tiles + b * per_block, bad + b); });
    const int64_t groups = ct_blocks < 4 * threads ? ct_blocks : 4 * threads;
    parallel_for(pool, groups, [&](int64_t g, int) {
      configure();
      for (int64_t cb = g * ct_blocks / groups; cb < (g + 1) * ct_blocks / groups; ++cb)
        for (int64_t b = 0; b < rt_blocks; ++b) finish(cb, b, bad[b] != 0, tiles + b * per_block);
      release();
    });
    return;
  }
  parallel_for(pool, (rt_blocks + group - 1) / group, [&](int64_t u, int tid) {
    uint16_t* t = tiles + tid * group * per_block;
    const int64_t b0 = u * group, nb = rt_blocks - b0 < group ? rt_blocks - b0 : group;
    uint8_t bad[128];
    pack(b0, nb, t, bad);
    configure();
    for (int64_t cb = 0; cb < ct_blocks; ++cb)
      for (int64_t b = 0; b < nb; ++b) finish(cb, b0 + b, bad[b] != 0, t + b * per_block);
    release();
  });
}

}  // namespace amx_detail

#endif  // KILN_CPU_HAS_AMX_KERNELS

}  // namespace kiln_cpu
