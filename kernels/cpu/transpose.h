// kiln optimized CPU kernels: the batched 2-D transpose, dst[b][j][i] = src[b][i][j], that
// every layout change between channels-first and channels-last is (NCHW -> NHWC: rows = C,
// cols = H * W; back: rows = H * W, cols = C). Any trivially copyable element type.
#pragma once

#include <cstdint>

#include "parallel.h"

namespace kiln_cpu {

/// dst[b][j][i] = src[b][i][j] for b < batch, i < rows, j < cols, in square tiles so that
/// both the reads and the writes use whole cache lines. Work units are (batch, row tile,
/// column chunk): independent outputs, so any thread count gives the same bytes.
template <class T>
inline void transpose_2d(int64_t batch, int64_t rows, int64_t cols, const T* src, T* dst,
                         ThreadPool* pool) {
  constexpr int64_t kTile = 16, kChunk = 256;  // kChunk: columns per unit (a multiple of kTile)
  if (batch <= 0 || rows <= 0 || cols <= 0) return;
  const int64_t row_tiles = (rows + kTile - 1) / kTile, chunks = (cols + kChunk - 1) / kChunk;
  parallel_for(pool, batch * row_tiles * chunks, [&](int64_t unit, int) {
    const int64_t b = unit / (row_tiles * chunks), rest = unit % (row_tiles * chunks);
    const int64_t i0 = (rest / chunks) * kTile, c0 = (rest % chunks) * kChunk;
    const int64_t i1 = rows < i0 + kTile ? rows : i0 + kTile;
    const int64_t c1 = cols < c0 + kChunk ? cols : c0 + kChunk;
    const T* s = src + b * rows * cols;
    T* d = dst + b * rows * cols;
    for (int64_t j0 = c0; j0 < c1; j0 += kTile) {
      const int64_t j1 = c1 < j0 + kTile ? c1 : j0 + kTile;
      if (i1 - i0 == kTile && j1 - j0 == kTile) {
        for (int64_t j = j0; j < j0 + kTile; ++j)
          for (int64_t i = 0; i < kTile; ++i) d[j * rows + i0 + i] = s[(i0 + i) * cols + j];
      } else {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) d[j * rows + i] = s[i * cols + j];
      }
    }
  });
}

}  // namespace kiln_cpu
