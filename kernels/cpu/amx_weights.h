// kiln optimized CPU kernels: the bf16 halves of f32 weights and their AMX tile layout
// (conv_amx.h), independent of the instruction set: the compiler packs them at compile time.
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln_cpu {

namespace amx_detail {

constexpr int64_t kTileBytes = 1024;  // 16 rows x 64 bytes
constexpr int64_t kKChunk = 32;       // K per tile row (16 bf16 pairs)
constexpr int64_t kMBlock = 32;       // two 16-row A tiles
constexpr int64_t kNBlock = 32;       // two 16-column B tiles

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

/// The two bf16 halves of x, hi + lo ~ x (hi: x rounded; lo: the rest, rounded). An infinite
/// or NaN x has lo zero.
inline void split(float x, uint16_t* hi, uint16_t* lo) {
  *hi = bf16_bits(x);
  const float h = bf16_value(*hi);
  *lo = (h - h == 0.0f) ? bf16_bits(x - h) : uint16_t(0);
}

}  // namespace amx_detail

/// Bytes of conv2d_amx_pack_weights' layout for W [M, K]: per 32-row block of W and 32-deep
/// chunk of K, four 1 KiB A tiles.
constexpr int64_t amx_packed_weight_bytes(int64_t M, int64_t K) {
  using namespace amx_detail;
  return (M + kMBlock - 1) / kMBlock * ((K + kKChunk - 1) / kKChunk) * 4 * kTileBytes;
}

/// Packs W [M, K] (row-major) as A tiles of its bf16 halves: for each 32-row block, for each
/// 32-deep chunk of K, rows 0-15's hi, rows 0-15's lo, rows 16-31's hi, rows 16-31's lo; a
/// tile row is one row of W's 32 values of the chunk in k order. Zero past M and K.
inline void amx_pack_weights(const float* w, int64_t M, int64_t K, uint16_t* dst) {
  using namespace amx_detail;
  const int64_t nk = (K + kKChunk - 1) / kKChunk, mbs = (M + kMBlock - 1) / kMBlock;
  for (int64_t mb = 0; mb < mbs; ++mb)
    for (int64_t kc = 0; kc < nk; ++kc) {
      uint16_t* t = dst + (mb * nk + kc) * 4 * (kTileBytes / 2);
      for (int half = 0; half < 2; ++half)
        for (int64_t r = 0; r < 16; ++r)
          for (int64_t j = 0; j < kKChunk; ++j) {
            const int64_t m = mb * kMBlock + half * 16 + r, k = kc * kKChunk + j;
            uint16_t hi = 0, lo = 0;
            if (m < M && k < K) split(w[m * K + k], &hi, &lo);
            t[(half * 2) * 512 + r * 32 + j] = hi;
            t[(half * 2 + 1) * 512 + r * 32 + j] = lo;
          }
    }
}

/// conv_amx.h's plan for a 1x1 conv of K input channels over P pixels at `threads` threads:
/// pixel blocks of 32 packed per group (their B tiles, K x 128 bytes a block, within 512 KiB:
/// the W block a group's tiles share stays in L2 beside them), and whether all blocks are
/// packed once into shared scratch first (with several threads and fewer than two groups per
/// thread: the threads then split W's rows, not the pixels, and each would pack all of X).
constexpr int64_t amx_conv_group_blocks(int64_t K, int64_t P) {
  const int64_t nk = (K + 31) / 32, nb = (P + 31) / 32, g = 128 / nk;
  return g < 1 ? 1 : g > nb ? nb : g;
}
constexpr bool amx_conv_shared_pack(int64_t K, int64_t P, int threads) {
  const int64_t nb = (P + 31) / 32, g = amx_conv_group_blocks(K, P);
  return threads > 1 && (nb + g - 1) / g < 2 * int64_t(threads);
}
/// Scratch bytes: the shared B tiles of every block and a flag byte each, or a group's B tiles
/// per thread.
constexpr int64_t amx_conv_scratch_bytes(int64_t K, int64_t P, int threads) {
  const int64_t per_block = (K + 31) / 32 * 4096, nb = (P + 31) / 32;
  if (amx_conv_shared_pack(K, P, threads)) return nb * per_block + (nb + 63) / 64 * 64;
  return amx_conv_group_blocks(K, P) * per_block * (threads < 1 ? 1 : threads);
}

}  // namespace kiln_cpu
