// kiln optimized CPU kernels: the weight transform of the Winograd F(4x4, 3x3) and F(2x2, 3x3)
// convs and of the stride-2 one (winograd.h), independent of the instruction set: the compiler
// runs it at compile time with the target's panel width, and conv2d_winograd_pack_weights with
// this build's.
#pragma once

#include <cstdint>

namespace kiln_cpu {

/// U_xi = (G g G^T)[i][j] (xi = a i + j, a = tm + 2: 6 for F(4x4, 3x3), 4 for F(2x2, 3x3))
/// of every filter g = w[m, c] (w [M, C, 3, 3]), in double and rounded once, packed per xi as
/// B panels of nr output channels: dst[xi * per + ((m / nr) * C + c) * nr + m % nr], per =
/// ceil(M / nr) * nr * C, zero past M. stride = 2 (with tm = 4): the stride-2 conv's 36
/// weight matrices, G = GS2 (the tap-1 phase as is, then F(4, 2)'s G on taps 0 and 2).
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
  const int64_t per = (M + nr - 1) / nr * nr * C;
  for (int64_t i = 0; i < a * a * per; ++i) dst[i] = 0.0f;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float* g = w + (m * C + c) * 9;
      double gg[6][3];  // G g
      for (int i = 0; i < a; ++i)
        for (int b = 0; b < 3; ++b)
          gg[i][b] = G[i][0] * double(g[b]) + G[i][1] * double(g[3 + b]) +
                     G[i][2] * double(g[6 + b]);
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j) {
          const double u = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
          dst[(i * a + j) * per + ((m / nr) * C + c) * nr + m % nr] = float(u);
        }
    }
}

}  // namespace kiln_cpu
