// kiln optimized CPU kernels: nearest-neighbour upsampling by integer factors (Resize with
// mode nearest, coordinate_transformation_mode asymmetric, nearest_mode floor, the output an
// exact multiple of the input: out[o] = in[o / factor] on H and W), as FPN-style detectors use.
#pragma once

#include <cstdint>

#include "parallel.h"
#include "simd.h"

namespace kiln_cpu {

/// x [planes, H, W] -> y [planes, H * fh, W * fw].
inline void upsample_nearest2d_f32(int64_t planes, int64_t H, int64_t W, int64_t fh, int64_t fw,
                                   const float* x, float* y, ThreadPool* pool) {
  const int64_t OW = W * fw, OH = H * fh;
  parallel_for(pool, planes, [&](int64_t p, int) {
    const float* xp = x + p * H * W;
    float* yp = y + p * OH * OW;
    for (int64_t h = 0; h < H; ++h) {
      float* first = yp + h * fh * OW;
      const float* xr = xp + h * W;
      if (fw == 1) {
        copy_floats(first, xr, W);
      } else {
        for (int64_t w = 0; w < W; ++w) {
          const float v = xr[w];
          for (int64_t k = 0; k < fw; ++k) first[w * fw + k] = v;
        }
      }
      for (int64_t r = 1; r < fh; ++r) copy_floats(first + r * OW, first, OW);
    }
  });
}

}  // namespace kiln_cpu
