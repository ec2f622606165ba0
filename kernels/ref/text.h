// kiln reference kernels: TfIdfVectorizer over integer tokens.
#pragma once

#include <cstdint>

namespace kiln_ref {

enum TfIdfMode : int { kTfIdfTF = 0, kTfIdfIDF = 1, kTfIdfTFIDF = 2 };

/// TfIdfVectorizer of x [rows, cols] (each row a token sequence) into y [rows, out_size].
/// The pool holds the n-grams grouped by length: those of length n start at element
/// ngram_counts[n - 1] and end where the next length starts (or at pool_size); n-gram k, in pool
/// order over all lengths, goes to column ngram_indexes[k]. An n-gram of length n in
/// [min_n, max_n] is counted at each start i and skip s in [0, max_skip] (only s = 0 for
/// n = 1) where x[i], x[i + (s + 1)], ..., x[i + (n - 1)(s + 1)] lie in the row and equal it.
/// The column gets the count (TF), weights[k] when the count is > 0 (IDF), or count *
/// weights[k] (TFIDF); weights may be nullptr (all 1). Columns of no n-gram stay 0.
/// A straightforward O(n-grams * cols * skips) scan.
template <class I>
inline void tfidf_vectorizer(int64_t rows, int64_t cols, const I* x, int64_t min_n, int64_t max_n,
                             int64_t max_skip, int mode, const int64_t* pool, int64_t pool_size,
                             const int64_t* ngram_counts, int64_t levels,
                             const int64_t* ngram_indexes, const float* weights, int64_t out_size,
                             float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const I* row = x + r * cols;
    float* out = y + r * out_size;
    for (int64_t c = 0; c < out_size; ++c) out[c] = 0.0f;
    int64_t k = 0;  // ordinal of the first n-gram of the current length
    for (int64_t level = 0; level < levels; ++level) {
      const int64_t n = level + 1;
      const int64_t begin = ngram_counts[level];
      const int64_t end = level + 1 < levels ? ngram_counts[level + 1] : pool_size;
      for (int64_t g = begin; g + n <= end; g += n, ++k) {
        if (n < min_n || n > max_n) continue;
        const int64_t* gram = pool + g;
        int64_t count = 0;
        const int64_t skips = n == 1 ? 0 : max_skip;
        for (int64_t s = 0; s <= skips; ++s) {
          const int64_t step = s + 1;
          for (int64_t i = 0; i + (n - 1) * step < cols; ++i) {
            bool match = true;
            for (int64_t q = 0; q < n && match; ++q) match = int64_t(row[i + q * step]) == gram[q];
            if (match) ++count;
          }
        }
        const float w = weights ? weights[k] : 1.0f;
        const float value = mode == kTfIdfTF    ? float(count)
                            : mode == kTfIdfIDF ? (count > 0 ? w : 0.0f)
                                                : float(count) * w;
        out[ngram_indexes[k]] = value;
      }
    }
  }
}

}  // namespace kiln_ref
