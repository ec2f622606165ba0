// kiln reference kernels: DFT, STFT and MelWeightMatrix (plain O(n^2) transforms in double).
#pragma once

#include <cmath>
#include <cstdint>

// The transforms are the textbook sums, O(n^2) per transformed line, accumulated in double:
// X[k] = sum_j x[j] * exp(-+2 pi i j k / n) (sign + and a 1/n factor for the inverse). The
// twiddle angle uses (j * k) mod n so that large indices keep their accuracy. Sizes that come
// from run-time inputs (dft_length, frame_step, frame_length, ...) are passed in as values and
// checked against the static output dims the caller was compiled for: a mismatch returns 1
// before anything is written.

namespace kiln_ref {

namespace signal_detail {

constexpr double kTwoPi = 6.283185307179586476925286766559;

/// One output bin k of an n-point transform of `count` samples read by sample(j, re, im).
template <class Sample>
inline void dft_bin(int64_t n, int64_t count, int64_t k, bool inverse, Sample sample, double& re,
                    double& im) {
  re = 0;
  im = 0;
  const double sign = inverse ? 1.0 : -1.0;
  for (int64_t j = 0; j < count; ++j) {
    double xr = 0, xi = 0;
    sample(j, xr, xi);
    const double angle = kTwoPi * double((j * k) % n) / double(n);
    const double c = std::cos(angle), s = sign * std::sin(angle);
    re += xr * c - xi * s;
    im += xr * s + xi * c;
  }
  if (inverse) {
    re /= double(n);
    im /= double(n);
  }
}

}  // namespace signal_detail

/// DFT along one axis. x is viewed as [outer, n_in, inner, c_in] (c_in 1: real, 2: complex
/// interleaved), y as [outer, n_out, inner, 2]. `length` is the transform size (dft_length, or
/// n_in when absent): the signal is zero-padded or truncated to it. n_out must be length, or
/// length / 2 + 1 when onesided; otherwise (or for length < 1) returns 1.
template <class T>
inline int dft(int64_t outer, int64_t n_in, int64_t inner, int64_t c_in, int64_t length,
               int64_t n_out, bool onesided, bool inverse, const T* x, T* y) {
  if (length < 1 || n_out != (onesided ? length / 2 + 1 : length) || (c_in != 1 && c_in != 2))
    return 1;
  const int64_t count = length < n_in ? length : n_in;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* xl = x + (o * n_in * inner + i) * c_in;
      auto sample = [&](int64_t j, double& re, double& im) {
        re = double(xl[j * inner * c_in]);
        im = c_in == 2 ? double(xl[j * inner * c_in + 1]) : 0.0;
      };
      for (int64_t k = 0; k < n_out; ++k) {
        double re, im;
        signal_detail::dft_bin(length, count, k, inverse, sample, re, im);
        T* out = y + ((o * n_out + k) * inner + i) * 2;
        out[0] = T(re);
        out[1] = T(im);
      }
    }
  return 0;
}

/// STFT of x [batch, len, c_in] into y [batch, frames, bins, 2]: frame f starts at
/// f * step and holds frame_length samples, each multiplied by window[j] when window is not
/// null (window_len must then equal frame_length). Returns 1 unless step >= 1,
/// 1 <= frame_length <= len, frames == (len - frame_length) / step + 1 and bins ==
/// (onesided ? frame_length / 2 + 1 : frame_length).
template <class T>
inline int stft(int64_t batch, int64_t len, int64_t c_in, int64_t step, int64_t frame_length,
                const T* window, int64_t window_len, int64_t frames, int64_t bins, bool onesided,
                const T* x, T* y) {
  if (step < 1 || frame_length < 1 || frame_length > len || (c_in != 1 && c_in != 2) ||
      (window && window_len != frame_length) || frames != (len - frame_length) / step + 1 ||
      bins != (onesided ? frame_length / 2 + 1 : frame_length))
    return 1;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      const T* xf = x + (b * len + f * step) * c_in;
      auto sample = [&](int64_t j, double& re, double& im) {
        const double w = window ? double(window[j]) : 1.0;
        re = double(xf[j * c_in]) * w;
        im = c_in == 2 ? double(xf[j * c_in + 1]) * w : 0.0;
      };
      for (int64_t k = 0; k < bins; ++k) {
        double re, im;
        signal_detail::dft_bin(frame_length, frame_length, k, false, sample, re, im);
        T* out = y + ((b * frames + f) * bins + k) * 2;
        out[0] = T(re);
        out[1] = T(im);
      }
    }
  return 0;
}

/// MelWeightMatrix [rows = dft_length / 2 + 1, cols = num_mel_bins] as the ONNX spec's
/// reference computes it: num_mel_bins + 2 points evenly spaced on the mel scale
/// (mel = 2595 log10(1 + hz / 700)) from lower to upper edge, step (high - low) /
/// (num_mel_bins + 2), each mapped to the spectrogram bin floor((dft_length + 1) * hz /
/// sample_rate); column i is the triangle rising from point i to point i + 1 and falling to
/// point i + 2. Returns 1 when the sizes disagree with rows and cols, sample_rate <= 0, or a
/// point falls outside [0, rows).
template <class T>
inline int mel_weight_matrix(int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate,
                             double lower_hz, double upper_hz, int64_t rows, int64_t cols, T* y) {
  if (num_mel_bins != cols || dft_length < 1 || dft_length / 2 + 1 != rows || sample_rate <= 0)
    return 1;
  const double low = 2595.0 * std::log10(1.0 + lower_hz / 700.0);
  const double high = 2595.0 * std::log10(1.0 + upper_hz / 700.0);
  const double step = (high - low) / double(num_mel_bins + 2);
  auto point = [&](int64_t i) {
    const double hz = 700.0 * (std::pow(10.0, (double(i) * step + low) / 2595.0) - 1.0);
    const double b = std::floor(double(dft_length + 1) * hz / double(sample_rate));
    return b >= 0 && b < double(rows) ? int64_t(b) : int64_t(-1);
  };
  for (int64_t i = 0; i < num_mel_bins + 2; ++i)
    if (point(i) < 0) return 1;
  for (int64_t e = 0; e < rows * cols; ++e) y[e] = T(0);
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t left = point(i), center = point(i + 1), right = point(i + 2);
    if (center == left) {
      y[center * cols + i] = T(1);
    } else {
      for (int64_t j = left; j <= center; ++j)
        y[j * cols + i] = T(double(j - left) / double(center - left));
    }
    for (int64_t j = center; j < right; ++j)
      y[j * cols + i] = T(double(right - j) / double(right - center));
  }
  return 0;
}

}  // namespace kiln_ref
