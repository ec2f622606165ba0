// Dtype-agnostic element copying and numeric conversion for reference evaluation of
// data-movement ops (gather, slice, concat, transpose, reshape) and Cast.
#pragma once

#include <string>
#include <vector>

#include "kiln/ir/tensor.h"
#include "kiln/ops/registry.h"
#include "kiln/support/status.h"

namespace kiln {

/// Largest tensor (bytes) reference evaluation creates: folding anything bigger into a
/// compiled artifact is never worth it, and refusing keeps allocation failures out.
inline constexpr int64_t kMaxEvalBytes = int64_t(1) << 30;

/// A zero-filled tensor for an evaluation result; fails on bad dims or past kMaxEvalBytes.
Expected<Tensor> allocateResult(DType dtype, std::vector<int64_t> dims);

/// Builds a tensor of any dtype (strings and 4-bit types included) by copying elements from
/// tensors of the same dtype, so data-movement ops need no per-type code. Out-of-range or
/// mismatched copies are recorded and reported by finish() rather than trusted.
class TensorBuilder {
 public:
  /// A zero-filled (empty-string) tensor of the given type; fails on bad or overflowing dims.
  static Expected<TensorBuilder> create(DType dtype, std::vector<int64_t> dims);
  int64_t numElements() const { return tensor_.numElements(); }
  /// Copies `count` consecutive elements src[srcIndex...] to this[dstIndex...].
  void copy(int64_t dstIndex, const Tensor& src, int64_t srcIndex, int64_t count = 1);
  /// The built tensor, or an error if any copy was out of range or of another dtype.
  Expected<Tensor> finish() &&;

 private:
  TensorBuilder() = default;
  Tensor tensor_;
  std::vector<std::string> strings_;
  uint8_t* data_ = nullptr;
  int elemBytes_ = 0;  ///< 0 for sub-byte and string types
  bool failed_ = false;
};

/// Calls fn(outIndex, srcIndex) for every element of an output with `dims` (row-major),
/// where srcIndex = base + sum(index[d] * strides[d]); strides may be 0 or negative.
template <typename Fn>
void forEachStrided(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    int64_t base, Fn fn) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  const size_t rank = dims.size();
  std::vector<int64_t> idx(rank, 0);
  int64_t src = base;
  for (int64_t e = 0; e < total; ++e) {
    fn(e, src);
    for (size_t d = rank; d-- > 0;) {
      ++idx[d];
      src += strides[d];
      if (idx[d] < dims[d]) break;
      src -= strides[d] * idx[d];
      idx[d] = 0;
    }
  }
}

/// Fails unless inputs 0..count-1 are present (evaluate may be called on any node).
Status requireInputs(const EvalContext& ctx, size_t count);

/// out[i] = src[base + sum(index[d] * strides[d])] for an output of `dims`.
Expected<Tensor> takeStrided(const Tensor& src, std::vector<int64_t> dims,
                             const std::vector<int64_t>& strides, int64_t base);
/// The same elements with new dims (element counts must match).
Expected<Tensor> withDims(const Tensor& src, std::vector<int64_t> dims);

/// Converts every element to `to` with the Cast kernel the generated code runs
/// (kiln_ref::cast: float→int truncates toward zero and wraps, integer narrowing wraps,
/// anything nonzero and NaN are true, float narrowing rounds to nearest even once); with
/// truncateBf16, casts to bf16 round toward zero (kiln_ref::cast_bf16_truncate). Strings are
/// only converted to strings.
Expected<Tensor> castTensor(const Tensor& src, DType to, bool truncateBf16 = false);

}  // namespace kiln
