// kiln optimized CPU kernels: fused scaled-dot-product attention, f32.
//   q' = q * s or q / s         (scale_at == kScaleQ)
//   scores = q' K^T             (K^T given as [D, Skv], the layout exporters' Transpose makes)
//   scores = scores * s or / s  (scale_at == kScaleScores)
//   scores += mask              (optional; an [S, Skv] mask per batch, either dim may
//                                broadcast; mask_batch_offsets: where each batch's starts)
//   y = softmax(scores) V
// per batch (heads x batch), each batch on one thread with its scores in that thread's
// scratch instead of an arena tensor. The steps are the ones the unfused ops run (the same
// GEMM and softmax kernels, elementwise operations in the same order), so results are
// bit-identical to them and to any thread count.
#pragma once

#include <cstdint>

#include "gemm.h"
#include "rowwise.h"

namespace kiln_cpu {

enum AttentionScaleAt : int { kScaleNone = 0, kScaleQ = 1, kScaleScores = 2 };

struct AttentionShape {
  int64_t batch, S, Skv, D, Dv;
  int64_t mask_row_stride, mask_col_stride;  ///< 0 where the mask broadcasts
  float scale;
  int scale_at;  ///< AttentionScaleAt
  bool scale_divides;
  /// Where batch b's [S, Skv] mask starts (a padding mask [B, 1, 1, Skv] differs per batch);
  /// null: at 0 for every batch.
  const int64_t* mask_batch_offsets = nullptr;
};

/// Floats of scratch one thread needs: the scaled q, the scores and the GEMMs' packing.
constexpr int64_t attention_scratch_floats(int64_t S, int64_t Skv, int64_t D, int64_t Dv) {
  const int64_t g1 = gemm_f32_scratch_floats(S, Skv, D, 1);
  const int64_t g2 = gemm_f32_scratch_floats(S, Dv, Skv, 1);
  const int64_t round = 16;  // keep each region 64-byte aligned
  const int64_t qs = (S * D + round - 1) / round * round;
  const int64_t sc = (S * Skv + round - 1) / round * round;
  return qs + sc + (g1 > g2 ? g1 : g2);
}

/// q [batch, S, D], kt [batch, D, Skv], v [batch, Skv, Dv] → y [batch, S, Dv]. scratch holds
/// attention_scratch_floats(...) floats per thread of `pool` (one without a pool).
inline void attention_f32(const AttentionShape& a, const float* q, const float* kt,
                          const float* v, const float* mask, float* y, float* scratch,
                          ThreadPool* pool) {
  const int64_t per = attention_scratch_floats(a.S, a.Skv, a.D, a.Dv);
  const int64_t qs = (a.S * a.D + 15) / 16 * 16, sc = (a.S * a.Skv + 15) / 16 * 16;
  const Epilogue<kiln_ref::NoActivation> none =
      make_epilogue(kiln_ref::NoActivation{}, nullptr, nullptr, nullptr, 0);
  parallel_for(pool, a.batch, [&](int64_t b, int tid) {
    float* mine = scratch + per * tid;
    float* scores = mine + qs;
    float* gemm_scratch = scores + sc;
    const float* qb = q + b * a.S * a.D;
    if (a.scale_at == kScaleQ) {
      float* scaled = mine;
      for (int64_t i = 0; i < a.S * a.D; ++i)
        scaled[i] = a.scale_divides ? qb[i] / a.scale : qb[i] * a.scale;
      qb = scaled;
    }
    gemm_f32(a.S, a.Skv, a.D, qb, a.D, kt + b * a.D * a.Skv, a.Skv, scores, a.Skv, none,
             gemm_scratch, nullptr);
    if (a.scale_at == kScaleScores)
      for (int64_t i = 0; i < a.S * a.Skv; ++i)
        scores[i] = a.scale_divides ? scores[i] / a.scale : scores[i] * a.scale;
    if (mask) {
      const float* mb = mask + (a.mask_batch_offsets ? a.mask_batch_offsets[b] : 0);
      for (int64_t r = 0; r < a.S; ++r)
        for (int64_t c = 0; c < a.Skv; ++c)
          scores[r * a.Skv + c] += mb[r * a.mask_row_stride + c * a.mask_col_stride];
    }
    softmax_rows_f32(a.S, a.Skv, scores, scores, false, nullptr);
    gemm_f32(a.S, a.Dv, a.Skv, scores, a.Skv, v + b * a.Skv * a.Dv, a.Dv, y + b * a.S * a.Dv,
             a.Dv, none, gemm_scratch, nullptr);
  });
}

}  // namespace kiln_cpu
