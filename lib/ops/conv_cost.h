// The cost model's choice among the Winograd convs (lib/ops/conv_emit.cc): which of F(4x4, 3x3),
// F(2x2, 3x3) and the stride-2 one comes first in a conv's candidates, for the target and the
// thread count. `s` is a conv's shape, [N, C, H, W, M, KH, KW, OH, OW, SH, SW, DH, DW, PH, PW,
// group] (kiln_cpu::Conv2dShape).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/target/target.h"

namespace kiln::cpu_detail {

/// Output tiles of side tm (4: F(4x4, 3x3) and the stride-2 conv, 2: F(2x2, 3x3)) that cover
/// the conv's output image.
inline int64_t winogradTiles(const std::vector<int64_t>& s, int64_t tm) {
  return ((s[7] + tm - 1) / tm) * ((s[8] + tm - 1) / tm);
}

/// Whether the target's GEMM microkernels are SIMD ones (AVX-512 or AVX2), where Winograd's
/// transforms pay for themselves: the portable build's are not measured.
inline bool winogradIsa(const Target& t) {
  return t.isa == Isa::Avx512 || t.isa == Isa::Avx2;
}

/// The channels at which the cost model picks F(4x4, 3x3): at least 32 in and out (ResNet-50's
/// layers; measured on AVX-512 and AVX2), and fewer where the conv alone measured Winograd
/// faster than the direct conv (`kiln compile --tune` on one-conv models, 3x3 pad 1, Relu):
/// - AVX2 (session 29, a Zen 3 at 1 thread): at least 8 each with at least 256 products per
///   pixel (in x out). PP-OCRv4 det's 96 -> 24 head 1.84x at 160x160, 2.09x at 80x80, 1.74x at
///   20x20 (2.15x at 160x160 on 2 threads; `kiln compile --tune` on the model picked it at 40x40
///   and up); 24 -> 16 1.52x, 16 -> 16 1.37x, 64 -> 8 1.31x, 8 -> 64 1.44x at 80x80, 128 -> 8
///   1.20x at 40x40; below that little is left (16 -> 8 1.06x, 8 -> 8 1.07x on 2 threads).
/// - AVX-512 (session 52, a Zen 4; 1 / 2 threads): at least 16 out, 8 in and 384 products. The
///   96 -> 24 head 1.37 / 1.58x at 160x160, 1.67 / 1.62x at 80x80, 1.23 / 1.64x at 40x40,
///   2.07 / 1.66x at 20x20 (in the model 1.64-1.76x, PP-OCRv4 det 1.2x faster at 1 thread);
///   24 -> 16 2.03 / 1.39x and 8 -> 64 1.55 / 1.26x at 80x80, 16 -> 24 1.76 / 2.56x and 32 ->
///   16 1.67 / 1.10x at 40x40. Left out: 16 -> 16 at 80x80 1.34 / 0.81x, 8 -> 16 at 160x160
///   1.00 / 0.79x, and 8 outputs, whose GEMM fills half of a vector (128 -> 8 at 40x40 1.47 /
///   0.86x, 64 -> 8 0.83 / 0.46x, 16 -> 8 0.69 / 0.81x, 8 -> 8 0.69 / 0.74x at 80x80).
inline bool winogradChannels(const std::vector<int64_t>& s, const Target& t) {
  if (s[1] >= 32 && s[4] >= 32) return true;
  if (t.isa == Isa::Avx2) return std::min(s[1], s[4]) >= 8 && s[1] * s[4] >= 256;
  return t.isa == Isa::Avx512 && s[4] >= 16 && s[1] >= 8 && s[1] * s[4] >= 384;
}

/// Whether a Winograd conv of `tiles` output tiles and `products` products per tile (36 for
/// F(4x4, 3x3), 16 for F(2x2, 3x3)) would wait on its transformed weights U on this host: its
/// GEMM does tiles / 2 flops per byte of U, which comes from memory once a run where it is
/// larger than L2; a core with two 512-bit FMA units (Target::dualZmmFma) runs about 230 GFLOP/s
/// against 15 GB/s read from memory, so fewer than 32 tiles leave the FMAs waiting. Session 54,
/// an Intel Xeon with AMX, ResNet-50 (`kiln bench --versus --profile`, 100 rounds; session 53's
/// `kiln compile --tune` picked the same):
/// - 7x7, 512 channels, F(2x2) (U 16.8 MB): the pixel-rows conv instead 0.86 of the time at 1
///   thread, 0.93 at 2.
/// - 14x14, 256 channels, F(4x4) (U 9.4 MB): F(2x2) instead 0.96 at 1 thread, but 1.06-1.10 at
///   2, where two cores read U at twice one core's rate: F(4x4) is kept there (threads > 1).
inline bool winogradStarved(const std::vector<int64_t>& s, const Target& t, int64_t tiles,
                            int64_t products) {
  const int64_t l2 = t.l2 > 0 ? t.l2 : int64_t(2) << 20;  // unknown: a Sapphire Rapids core's
  return t.dualZmmFma && tiles < 32 && products * s[1] * s[4] * 4 > l2;
}

/// The cost model's Winograd rule: on AVX-512, where kernels/cpu's bench measured F(4x4, 3x3)
/// 2.6-3.1x faster than the direct conv, and on AVX2 (a Zen 3 host, `kiln compile --tune` on
/// ResNet-50 at 1 thread: 2.2x at 56², 2.75x at 28², 2.2x at 14²), winogradChannels' channels
/// and images of at least 16 output tiles (ResNet-50's 56², 28², 14² layers). Smaller images
/// gain less (1.4x at 7x7) for 4x the weights; --tune may still pick it there.
inline bool winogradByDefault(const std::vector<int64_t>& s, const Target& t, int threads) {
  const int64_t tiles = winogradTiles(s, 4);
  return winogradIsa(t) && winogradChannels(s, t) && tiles >= 16 &&
         (threads > 1 || !winogradStarved(s, t, tiles, 36));
}

/// The rule for F(2x2, 3x3) (conv2d_winograd2_f32): where F(4x4, 3x3) is not the pick for the
/// image's size but F(2x2, 3x3) still has 16 tiles (ResNet-50's 7x7 layer, 512 channels: 1.40
/// against the pixel-rows conv's 2.21 ms in kernels/cpu's bench at 1 thread, 0.74 against 1.18
/// at 2; on AVX2 4.9 against the im2col conv's 7.8 ms for the three layers), for 16/9 of the
/// weights where F(4x4, 3x3) takes 4x and streams them from memory.
inline bool winograd2ByDefault(const std::vector<int64_t>& s, const Target& t, int threads) {
  const int64_t tiles = winogradTiles(s, 2);
  return winogradIsa(t) && s[1] >= 32 && s[4] >= 32 && !winogradByDefault(s, t, threads) &&
         tiles >= 16 && !winogradStarved(s, t, tiles, 16);
}

/// The rule for the stride-2 Winograd conv (conv2d_winograd_s2_f32, 81 products per 16 outputs
/// against the direct conv's 144): F(4x4, 3x3)'s, on the output image (ResNet-50's 56 -> 28
/// and 28 -> 14 layers; its 14 -> 7 one, 4 tiles, would stream 37.7 MB of weights).
inline bool winogradS2ByDefault(const std::vector<int64_t>& s, const Target& t) {
  return winogradIsa(t) && s[1] >= 32 && s[4] >= 32 && winogradTiles(s, 4) >= 16;
}

}  // namespace kiln::cpu_detail
