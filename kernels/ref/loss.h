// kiln reference kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#pragma once

#include <cmath>
#include <cstdint>

#include "common.h"

// Layout for both: scores x are [N, C, D] (D = d1 * ... * dk, 1 for a 2-D input), target is
// [N, D] of class indices, weight is [C] or nullptr. The unreduced loss of element (n, d) is
// -weight[t] * logp(n, t, d) with t = target[n, d], or 0 where t equals ignore_index (when
// has_ignore). Reductions (ONNX): none writes the [N, D] losses; sum writes their sum; mean
// writes the sum divided by the sum of the weights of the elements not ignored (their count
// without weights), NaN when that is 0. Sums are accumulated in double. A target outside
// [0, C) that is not ignore_index makes the kernels return 1 before writing anything.

namespace kiln_ref {

enum LossReduction : int { kLossNone = 0, kLossSum = 1, kLossMean = 2 };

namespace loss_detail {

/// Checks every target; 0 when each is ignored or in [0, C).
template <class I>
inline int check_targets(int64_t count, int64_t C, const I* target, int has_ignore,
                         int64_t ignore_index) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = int64_t(target[i]);
    if (has_ignore && t == ignore_index) continue;
    if (t < 0 || t >= C) return 1;
  }
  return 0;
}

/// The shared loss loop: neg_logp(n, c, d) gives -log p of class c at (n, d).
template <class T, class I, class NegLogP>
inline void reduce_losses(int64_t N, int64_t D, const I* target, const T* weight, int reduction,
                          int has_ignore, int64_t ignore_index, T* loss, NegLogP neg_logp) {
  double sum = 0, weight_sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      const int64_t t = int64_t(target[n * D + d]);
      T value = T(0);
      if (!(has_ignore && t == ignore_index)) {
        const T w = weight ? weight[t] : T(1);
        value = T(w * neg_logp(n, t, d));
        weight_sum += double(w);
      }
      if (reduction == kLossNone)
        loss[n * D + d] = value;
      else
        sum += double(value);
    }
  if (reduction == kLossSum) loss[0] = T(sum);
  if (reduction == kLossMean) loss[0] = T(sum / weight_sum);  // 0 / 0 is NaN, as numpy's
}

}  // namespace loss_detail

/// NegativeLogLikelihoodLoss: x holds log-probabilities, the loss of (n, d) is
/// -weight[t] * x[n, t, d]. Returns 1 on a target out of range, else 0.
template <class T, class I>
inline int nll_loss(int64_t N, int64_t C, int64_t D, const T* x, const I* target, const T* weight,
                    int reduction, int has_ignore, int64_t ignore_index, T* loss) {
  if (loss_detail::check_targets(N * D, C, target, has_ignore, ignore_index)) return 1;
  loss_detail::reduce_losses(
      N, D, target, weight, reduction, has_ignore, ignore_index, loss,
      [&](int64_t n, int64_t c, int64_t d) { return T(-x[(n * C + c) * D + d]); });
  return 0;
}

/// SoftmaxCrossEntropyLoss: log_softmax of x over C, then the NLL loss above. log_prob
/// ([N, C, D], the op's optional second output) receives the log-softmax when not nullptr;
/// it must not alias x. Returns 1 on a target out of range, else 0.
template <class T, class I>
inline int softmax_cross_entropy_loss(int64_t N, int64_t C, int64_t D, const T* x, const I* target,
                                      const T* weight, int reduction, int has_ignore,
                                      int64_t ignore_index, T* loss, T* log_prob) {
  if (loss_detail::check_targets(N * D, C, target, has_ignore, ignore_index)) return 1;
  // log p(c) = x[c] - max - log(sum(exp(x - max))), computed per (n, d) where it is needed.
  auto log_norm = [&](int64_t n, int64_t d) {
    const T* xr = x + n * C * D + d;
    T mx = xr[0];
    for (int64_t c = 1; c < C; ++c)
      if (xr[c * D] > mx) mx = xr[c * D];
    T sum = T(0);
    for (int64_t c = 0; c < C; ++c) sum += T(std::exp(xr[c * D] - mx));
    return T(mx + T(std::log(sum)));
  };
  if (log_prob && C > 0)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        const T norm = log_norm(n, d);
        for (int64_t c = 0; c < C; ++c) {
          const int64_t i = (n * C + c) * D + d;
          log_prob[i] = T(x[i] - norm);
        }
      }
  loss_detail::reduce_losses(N, D, target, weight, reduction, has_ignore, ignore_index, loss,
                             [&](int64_t n, int64_t c, int64_t d) {
                               if (log_prob) return T(-log_prob[(n * C + c) * D + d]);
                               return T(log_norm(n, d) - x[(n * C + c) * D + d]);
                             });
  return 0;
}

}  // namespace kiln_ref
