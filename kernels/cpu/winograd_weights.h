// kiln optimized CPU kernels: the weight transform of the Winograd F(4x4, 3x3) and F(2x2, 3x3)
// convs and of the stride-2 one (winograd.h), independent of the instruction set: the compiler
// runs it at compile time with the target's panel width, and conv2d_winograd_pack_weights with
// this build's.
#pragma once

#include <cstdint>

namespace kiln_cpu {

/// Output channels per chunk of winograd_transform_weights' layout for panels of nr: two
/// panels (winograd.h's GEMM chunk), fewer where M has fewer.
constexpr int64_t winograd_chunk_width(int64_t M, int64_t nr) {
  const int64_t m = (M + nr - 1) / nr * nr;
  return m < 2 * nr ? m : 2 * nr;
}

/// U_xi = (G g G^T)[i][j] (xi = a i + j, a = tm + 2: 6 for F(4x4, 3x3), 4 for F(2x2, 3x3))
/// of every filter g = w[m, c] (w [M, C, 3, 3]), in double and rounded once, packed as B
/// panels of nr output channels in the order the kernel reads them: chunk by chunk of
/// winograd_chunk_width(M, nr) output channels, in a chunk xi by xi, in an xi its panels, each
/// [C][nr]. With cw the chunk width and pw = min(cw, ceil(M / nr) * nr - m0) the padded width
/// of the chunk at m0 = m / cw * cw: dst[m0 * a * a * C + xi * pw * C + ((m - m0) / nr * C + c)
/// * nr + m % nr], zero past M (a * a * ceil(M / nr) * nr * C floats in all). One chunk's U
/// is then one contiguous stream (in a layout by xi, its 36 pieces lay a matrix apart).
/// stride = 2 (with tm = 4): the stride-2 conv's 36 weight matrices, G = GS2 (the tap-1 phase
/// as is, then F(4, 2)'s G on taps 0 and 2).
inline void winograd_transform_weights(const float* w, int64_t M, int64_t C, int64_t nr,
                                       float* dst, int tm = 4, int stride = 1) {
  static const double G4[6][3] = {{1.0 / 4, 0.0, 0.0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0.0, 0.0, 1.0}};
  static const double G2[4][3] = {
      {1.0, 0.0, 0.0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0.0, 0.0, 1.0}};
  // Row 0 takes the middle tap (the even phase's 1x1 conv); rows 1-5 are F(4, 2)'s G (points
  // 0, 1, -1, 2 and infinity, rows scaled so that its B^T is integer) on taps 0 and 2.
  static const double GS2[6][3] = {{0.0, 1.0, 0.0},        {0.5, 0.0, 0.0},
                                   {0.5, 0.0, 0.5},        {1.0 / 6, 0.0, -1.0 / 6},
                                   {1.0 / 6, 0.0, 1.0 / 3}, {0.0, 0.0, 1.0}};
  const double(*G)[3] = stride == 2 ? GS2 : tm == 2 ? G2 : G4;
  const int a = tm == 2 ? 4 : 6;
  const int64_t padded = (M + nr - 1) / nr * nr, cw = winograd_chunk_width(M, nr);
  for (int64_t i = 0; i < a * a * padded * C; ++i) dst[i] = 0.0f;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double gg[6][3];  // G g
      for (int i = 0; i < a; ++i)
        for (int b = 0; b < 3; ++b)
          gg[i][b] = G[i][0] * double(g[b]) + G[i][1] * double(g[3 + b]) +
                     G[i][2] * double(g[6 + b]);
      const int64_t m0 = m / cw * cw, pw = padded - m0 < cw ? padded - m0 : cw;
      float* chunk = dst + m0 * a * a * C + ((m - m0) / nr * C + c) * nr + m % nr;
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) {
          const double u = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
          chunk[(i * a + j) * pw * C] = float(u);
        }
    }
}

}  // namespace kiln_cpu
