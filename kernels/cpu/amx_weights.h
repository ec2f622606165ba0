// kiln optimized CPU kernels: the three bf16 pieces of f32 weights and their AMX tile layout
// (amx.h), independent of the instruction set: the compiler packs them at compile time.
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln_cpu {

namespace amx_detail {

constexpr int64_t kTileBytes = 1024;  // 16 rows x 64 bytes
constexpr int64_t kKChunk = 32;       // K per tile row (16 bf16 pairs)
constexpr int64_t kMBlock = 32;       // two 16-row A tiles
constexpr int64_t kNBlock = 32;       // two 16-column B tiles
constexpr int kPieces = 3;            // at most: x = p1 + p2 + p3, each a bf16
constexpr int64_t kTileWords = kTileBytes / 2;
/// Halfwords of one 16-wide half's np pieces, and of a 32-wide block's K chunk: the tiles of a
/// chunk are half 0's pieces, then half 1's.
constexpr int64_t half_words(int np) {
  return np * kTileWords;
}
constexpr int64_t chunk_words(int np) {
  return 2 * np * kTileWords;
}

/// x as bf16 bits, rounded to nearest even (a NaN stays a NaN).
inline uint16_t bf16_bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x40);
  return uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

inline float bf16_value(uint16_t h) {
  const uint32_t b = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

/// The three bf16 pieces of x: p[0] = x rounded, p[1] = the rest rounded, p[2] = what is left
/// rounded; p[0] + p[1] + p[2] is x within 2^-27 of it (f32 itself keeps 2^-24). An infinite or
/// NaN x has p[1] = p[2] = 0.
inline void split(float x, uint16_t* p) {
  p[0] = bf16_bits(x);
  const float h = bf16_value(p[0]);
  if (h - h != 0.0f) {
    p[1] = p[2] = 0;
    return;
  }
  const float r = x - h;
  p[1] = bf16_bits(r);
  p[2] = bf16_bits(r - bf16_value(p[1]));
}

/// x's first np pieces into the same place of the piece tiles at t (kTileWords apart).
inline void put_pieces(float x, uint16_t* t, int np) {
  uint16_t p[kPieces];
  split(x, p);
  for (int q = 0; q < np; ++q) t[q * kTileWords] = p[q];
}

/// Calls f(block, chunk, half, t) for each 32-wide block's 32-deep chunks' 16-wide halves, t
/// the half's first piece tile (the layout of amx_pack_weights and amx_pack_b).
template <class F>
inline void for_each_half(int64_t blocks, int64_t nk, int np, uint16_t* dst, F f) {
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t kc = 0; kc < nk; ++kc)
      for (int half = 0; half < 2; ++half)
        f(b, kc, half, dst + (b * nk + kc) * chunk_words(np) + half * half_words(np));
}

/// x again from its np pieces (for the f32 sums of blocks holding an infinity or a NaN).
inline float joined(const uint16_t* p0, int64_t step, int np) {
  float x = bf16_value(p0[0]);
  for (int q = 1; q < np; ++q) x += bf16_value(p0[q * step]);
  return x;
}

}  // namespace amx_detail

/// Bytes of amx_pack_weights' layout for W [M, K]: per 32-row block of W and 32-deep chunk of
/// K, six 1 KiB A tiles.
constexpr int64_t amx_packed_weight_bytes(int64_t M, int64_t K, int np) {
  using namespace amx_detail;
  return (M + kMBlock - 1) / kMBlock * ((K + kKChunk - 1) / kKChunk) * chunk_words(np) * 2;
}

/// Packs W [M, K] (row-major) as A tiles of its bf16 pieces: for each 32-row block, for each
/// 32-deep chunk of K, rows 0-15's pieces 1, 2, 3, then rows 16-31's; a tile row is one row of
/// W's 32 values of the chunk in k order. Zero past M and K.
inline void amx_pack_weights(const float* w, int64_t M, int64_t K, int np, uint16_t* dst) {
  using namespace amx_detail;
  for_each_half((M + kMBlock - 1) / kMBlock, (K + kKChunk - 1) / kKChunk, np, dst,
                [&](int64_t mb, int64_t kc, int half, uint16_t* t) {
                  for (int64_t r = 0; r < 16; ++r)
                    for (int64_t j = 0; j < kKChunk; ++j) {
                      const int64_t m = mb * kMBlock + half * 16 + r, k = kc * kKChunk + j;
                      put_pieces(m < M && k < K ? w[m * K + k] : 0.0f, t + r * 32 + j, np);
                    }
                });
}

/// The AMX kernels' plan (amx.h's drive) for a run-time operand of R rows (or pixels) of K
/// against a compile-time one of C columns (or rows), at `threads` threads. The run-time
/// blocks of 32 are packed per group (their tiles, K x 192 bytes a block, within 512 KiB: the
/// weights' block a group's tiles share stays in L2 beside them), with several threads at
/// least two groups a thread where there are blocks enough. With fewer run-time blocks than
/// that and at least two weight blocks a thread (ResNet-50's and MobileNetV2's 7x7 stages),
/// all blocks are packed once into shared scratch and the threads split the weights' blocks.
constexpr int64_t amx_group_blocks(int64_t K, int64_t R, int threads, int np) {
  const int64_t nk = (K + 31) / 32, nb = (R + 31) / 32;
  int64_t g = (int64_t(512) << 10) / (nk * amx_detail::chunk_words(np) * 2);
  if (threads > 1) {
    const int64_t even = (nb + 2 * threads - 1) / (2 * threads);
    if (even < g) g = even;
  }
  return g < 1 ? 1 : g > nb ? nb : g;
}
constexpr bool amx_shared_pack(int64_t R, int64_t C, int threads) {
  return threads > 1 && (R + 31) / 32 < 2 * int64_t(threads) &&
         (C + 31) / 32 >= 2 * int64_t(threads);
}
/// Scratch bytes: the shared tiles of every block and a flag byte each, or a group's tiles per
/// thread.
constexpr int64_t amx_scratch_bytes(int64_t K, int64_t R, int64_t C, int threads, int np) {
  const int64_t per_block = (K + 31) / 32 * amx_detail::chunk_words(np) * 2, nb = (R + 31) / 32;
  if (amx_shared_pack(R, C, threads)) return nb * per_block + (nb + 63) / 64 * 64;
  return amx_group_blocks(K, R, threads, np) * per_block * (threads < 1 ? 1 : threads);
}

/// Bytes of amx_pack_b's layout for B [K, N]: per 32-column block and 32-deep chunk of K, six
/// 1 KiB B tiles.
constexpr int64_t amx_packed_b_bytes(int64_t K, int64_t N, int np) {
  return (N + 31) / 32 * ((K + 31) / 32) * amx_detail::chunk_words(np) * 2;
}

/// Packs B [K, N] (element (k, n) at b[k * sk + n * sn]) as B tiles of its bf16 pieces (the
/// VNNI layout TDPBF16PS reads: a tile row p holds rows 2p and 2p + 1 of 16 columns, as pairs):
/// for each 32-column block, for each 32-deep chunk of K, columns 0-15's pieces 1, 2, 3, then
/// columns 16-31's. Zero past K and N.
inline void amx_pack_b(const float* b, int64_t K, int64_t N, int64_t sk, int64_t sn, int np,
                       uint16_t* dst) {
  using namespace amx_detail;
  for_each_half((N + kNBlock - 1) / kNBlock, (K + kKChunk - 1) / kKChunk, np, dst,
                [&](int64_t nb, int64_t kc, int half, uint16_t* t) {
                  for (int64_t k2 = 0; k2 < kKChunk; ++k2)
                    for (int64_t j = 0; j < 16; ++j) {
                      const int64_t k = kc * kKChunk + k2, n = nb * kNBlock + half * 16 + j;
                      put_pieces(k < K && n < N ? b[k * sk + n * sn] : 0.0f,
                                 t + (k2 / 2) * 32 + j * 2 + k2 % 2, np);
                    }
                });
}

}  // namespace kiln_cpu
