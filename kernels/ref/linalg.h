// kiln reference kernels: linear algebra (Det).
#pragma once

#include <cmath>
#include <cstdint>

namespace kiln_ref {

/// Bytes of workspace det() needs for m x m matrices.
inline int64_t det_scratch_bytes(int64_t m) {
  return m * m * int64_t(sizeof(double));
}

/// Det of `batch` row-major m x m matrices x into y[batch]: LU decomposition with partial
/// pivoting (the largest |pivot| of each column, the first on ties) in double, in `scratch`
/// (det_scratch_bytes(m) bytes, 8-byte aligned). An exactly zero pivot column gives 0; m == 0
/// gives 1 (the empty product). NaN inputs propagate.
template <class T>
inline void det(int64_t batch, int64_t m, const T* x, T* y, void* scratch) {
  double* a = static_cast<double*>(scratch);
  for (int64_t b = 0; b < batch; ++b) {
    const T* xb = x + b * m * m;
    for (int64_t e = 0; e < m * m; ++e) a[e] = double(xb[e]);
    double d = 1.0;
    for (int64_t c = 0; c < m; ++c) {
      int64_t p = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r * m + c]) > std::fabs(a[p * m + c])) p = r;
      if (a[p * m + c] == 0.0) {  // singular; NaN pivots fall through and propagate
        d = 0.0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < m; ++k) {
          const double t = a[c * m + k];
          a[c * m + k] = a[p * m + k];
          a[p * m + k] = t;
        }
        d = -d;
      }
      const double pivot = a[c * m + c];
      d *= pivot;
      for (int64_t r = c + 1; r < m; ++r) {
        const double f = a[r * m + c] / pivot;
        for (int64_t k = c; k < m; ++k) a[r * m + k] -= f * a[c * m + k];
      }
    }
    y[b] = T(d);
  }
}

}  // namespace kiln_ref
