// kiln reference kernels: the recurrent layers RNN, GRU and LSTM (ONNX equations).
#pragma once

#include <cmath>
#include <cstdint>

#include "common.h"

// Shapes (G gates: 1 RNN; 3 GRU in order z, r, h; 4 LSTM in order i, o, f, c; D directions):
//   x [S, B, I] (layout 0) or [B, S, I] (layout 1); w [D, G*H, I]; r [D, G*H, H];
//   bias [D, 2*G*H] (the W biases, then the R biases) or nullptr; seq_lens [B] or nullptr (all
//   S); init_h, init_c [D, B, H] (layout 0) or [B, D, H] (layout 1), or nullptr (zeros);
//   peephole [D, 3*H] (LSTM: i, o, f) or nullptr.
//   y [S, D, B, H] (layout 0) or [B, S, D, H] (layout 1); y_h, y_c like init_h. Each output may be
//   nullptr. Steps at or after seq_lens[b] write 0 into y; y_h and y_c hold the last valid step.
// Direction d of D runs forward, except when `reverse` (direction "reverse", D = 1) or d = 1
// (bidirectional), which run from step seq_lens[b] - 1 down to 0.
// Activations: acts holds `per_dir` kinds (RecurrentActivation) for each direction in order
// (RNN 1: f; GRU 2: f, g; LSTM 3: f, g, h), alphas and betas their parameters. clip > 0 bounds
// every activation input to [-clip, clip]. scratch: (G + 3) * H elements of T.

namespace kiln_ref {

enum RecurrentActivation : int {
  kActSigmoid = 0,
  kActTanh = 1,
  kActRelu = 2,
  kActLeakyRelu = 3,
  kActThresholdedRelu = 4,
  kActHardSigmoid = 5,
  kActElu = 6,
  kActAffine = 7,
  kActScaledTanh = 8,
  kActSoftsign = 9,
  kActSoftplus = 10,
};

namespace recurrent_detail {

inline double activate(int64_t kind, double x, double alpha, double beta, double clip) {
  if (clip > 0) x = x < -clip ? -clip : (x > clip ? clip : x);
  switch (kind) {
    case kActSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case kActTanh:
      return std::tanh(x);
    case kActRelu:
      return x > 0 ? x : 0.0;
    case kActLeakyRelu:
      return x >= 0 ? x : alpha * x;
    case kActThresholdedRelu:
      return x > alpha ? x : 0.0;
    case kActHardSigmoid: {
      const double v = alpha * x + beta;
      return v < 0 ? 0.0 : (v > 1 ? 1.0 : v);
    }
    case kActElu:
      return x >= 0 ? x : alpha * (std::exp(x) - 1);
    case kActAffine:
      return alpha * x + beta;
    case kActScaledTanh:
      return alpha * std::tanh(beta * x);
    case kActSoftsign:
      return x / (1 + std::fabs(x));
    default:  // kActSoftplus
      return std::log1p(std::exp(-std::fabs(x))) + (x > 0 ? x : 0.0);
  }
}

/// sum_k v[k] * m[row * n + k].
template <class T>
inline double dot_row(const T* m, int64_t row, int64_t n, const T* v) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) s += double(m[row * n + k]) * double(v[k]);
  return s;
}

}  // namespace recurrent_detail

/// One RNN (gates 1), GRU (gates 3) or LSTM (gates 4) layer; see the conventions above.
/// linear_before_reset (GRU) applies the reset gate after the recurrent product; input_forget
/// (LSTM) couples the gates as f = 1 - i. Returns 1 (writing nothing) when a sequence length is
/// outside [0, S], else 0.
template <class T>
inline int recurrent(int gates, int64_t S, int64_t B, int64_t I, int64_t H, int D, int reverse,
                     int layout, const T* x, const T* w, const T* r, const T* bias,
                     const int32_t* seq_lens, const T* init_h, const T* init_c, const T* peephole,
                     int per_dir, const int64_t* acts, const float* alphas, const float* betas,
                     float clip, int linear_before_reset, int input_forget, T* y, T* y_h, T* y_c,
                     T* scratch) {
  using recurrent_detail::activate;
  using recurrent_detail::dot_row;
  if (seq_lens)
    for (int64_t b = 0; b < B; ++b)
      if (seq_lens[b] < 0 || seq_lens[b] > S) return 1;
  const int64_t GH = int64_t(gates) * H;
  T* h = scratch;
  T* c = h + H;
  T* g = c + H;
  T* tmp = g + GH;
  auto x_at = [&](int64_t t, int64_t b) { return x + (layout ? b * S + t : t * B + b) * I; };
  auto state_at = [&](int d, int64_t b) { return (layout ? b * D + d : d * B + b) * H; };
  auto y_at = [&](int64_t t, int d, int64_t b) {
    return (layout ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  };
  for (int d = 0; d < D; ++d) {
    const bool backward = reverse || d == 1;
    const T* wd = w + d * GH * I;
    const T* rd = r + d * GH * H;
    const T* wb = bias ? bias + d * 2 * GH : nullptr;
    const T* rb = bias ? wb + GH : nullptr;
    const T* pd = peephole ? peephole + d * 3 * H : nullptr;
    const int64_t* act = acts + d * per_dir;
    const float* al = alphas + d * per_dir;
    const float* be = betas + d * per_dir;
    auto f = [&](int k, double v) { return activate(act[k], v, al[k], be[k], clip); };
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = seq_lens ? int64_t(seq_lens[b]) : S;
      for (int64_t j = 0; j < H; ++j) {
        h[j] = init_h ? init_h[state_at(d, b) + j] : T(0);
        c[j] = init_c ? init_c[state_at(d, b) + j] : T(0);
      }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = backward ? len - 1 - step : step;
        const T* xt = x_at(t, b);
        // Input and (except GRU's candidate) recurrent products with both biases.
        for (int64_t row = 0; row < GH; ++row) {
          double v = dot_row(wd, row, I, xt) + (wb ? double(wb[row]) : 0.0);
          const bool gru_candidate = gates == 3 && row >= 2 * H;
          if (!gru_candidate) v += dot_row(rd, row, H, h) + (rb ? double(rb[row]) : 0.0);
          g[row] = T(v);
        }
        if (gates == 1) {
          for (int64_t j = 0; j < H; ++j) h[j] = T(f(0, double(g[j])));
        } else if (gates == 3) {
          for (int64_t j = 0; j < 2 * H; ++j) g[j] = T(f(0, double(g[j])));  // z, r
          const T* z = g;
          const T* rg = g + H;
          for (int64_t k = 0; k < H; ++k) tmp[k] = T(rg[k] * h[k]);
          for (int64_t j = 0; j < H; ++j) {
            const double rbh = rb ? double(rb[2 * H + j]) : 0.0;
            const double v =
                linear_before_reset
                    ? double(g[2 * H + j]) + double(rg[j]) * (dot_row(rd, 2 * H + j, H, h) + rbh)
                    : double(g[2 * H + j]) + dot_row(rd, 2 * H + j, H, tmp) + rbh;
            c[j] = T(f(1, v));  // the candidate; c is free outside LSTM
          }
          for (int64_t j = 0; j < H; ++j)
            h[j] = T((1.0 - double(z[j])) * double(c[j]) + double(z[j]) * double(h[j]));
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double ci = double(c[j]);
            const double i = f(0, double(g[j]) + (pd ? double(pd[j]) * ci : 0.0));
            const double fg =
                input_forget ? 1.0 - i
                             : f(0, double(g[2 * H + j]) + (pd ? double(pd[2 * H + j]) * ci : 0.0));
            const double cand = f(1, double(g[3 * H + j]));
            const double cn = fg * ci + i * cand;
            const double o = f(0, double(g[H + j]) + (pd ? double(pd[H + j]) * cn : 0.0));
            c[j] = T(cn);
            tmp[j] = T(o * f(2, cn));
          }
          for (int64_t j = 0; j < H; ++j) h[j] = tmp[j];
        }
        if (y)
          for (int64_t j = 0; j < H; ++j) y[y_at(t, d, b) + j] = h[j];
      }
      if (y)
        for (int64_t t = len; t < S; ++t)
          for (int64_t j = 0; j < H; ++j) y[y_at(t, d, b) + j] = T(0);
      for (int64_t j = 0; j < H; ++j) {
        if (y_h) y_h[state_at(d, b) + j] = h[j];
        if (y_c) y_c[state_at(d, b) + j] = c[j];
      }
    }
  }
  return 0;
}

}  // namespace kiln_ref
