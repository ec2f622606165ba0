// Dtype-agnostic element copying for reference evaluation of data-movement ops.
#include "tensor_copy.h"

#include <cstring>

#include "kiln/support/checked_math.h"

namespace kiln {

Expected<Tensor> allocateResult(DType dtype, std::vector<int64_t> dims) {
  if (dtype == DType::Undefined) return makeError("cannot build a tensor of undefined type");
  for (int64_t d : dims)
    if (d < 0) return makeError("tensor has a negative dimension ({})", d);
  auto n = checkedProduct(dims);
  // Strings count as pointer-sized elements for the limit.
  auto bytes = n ? (dtype == DType::String ? checkedMul(*n, 8) : dtypeStorageBytes(dtype, *n))
                 : std::nullopt;
  if (!bytes || *bytes > kMaxEvalBytes)
    return makeError("result of {} elements is too large to evaluate at compile time",
                     n ? std::to_string(*n) : std::string("too many"));
  return Tensor::zeros(dtype, std::move(dims));
}

Expected<TensorBuilder> TensorBuilder::create(DType dtype, std::vector<int64_t> dims) {
  TensorBuilder b;
  KILN_ASSIGN_OR_RETURN(b.tensor_, allocateResult(dtype, std::move(dims)));
  if (dtype == DType::String) {
    b.strings_.resize(size_t(b.tensor_.numElements()));
  } else {
    int bits = dtypeBits(dtype);
    b.elemBytes_ = bits % 8 == 0 ? bits / 8 : 0;
    b.data_ = b.tensor_.mutableBytes();
  }
  return b;
}

void TensorBuilder::copy(int64_t dst, const Tensor& src, int64_t srcIndex, int64_t count) {
  if (failed_ || count == 0) return;
  if (src.dtype() != tensor_.dtype() || count < 0 || dst < 0 || srcIndex < 0 ||
      dst > tensor_.numElements() - count || srcIndex > src.numElements() - count) {
    failed_ = true;
    return;
  }
  if (tensor_.dtype() == DType::String) {
    for (int64_t k = 0; k < count; ++k)
      strings_[size_t(dst + k)] = src.strings()[size_t(srcIndex + k)];
  } else if (elemBytes_ > 0) {
    std::memcpy(data_ + dst * elemBytes_, src.bytes() + srcIndex * elemBytes_,
                size_t(count * elemBytes_));
  } else {
    // Two 4-bit elements per byte, low nibble first.
    for (int64_t k = 0; k < count; ++k) {
      int64_t s = srcIndex + k, d = dst + k;
      uint8_t nibble = (src.bytes()[s / 2] >> ((s % 2) * 4)) & 0xf;
      uint8_t& out = data_[d / 2];
      out = uint8_t((out & ~(0xf << ((d % 2) * 4))) | (nibble << ((d % 2) * 4)));
    }
  }
}

Expected<Tensor> TensorBuilder::finish() && {
  if (failed_) return makeError("internal error: element copy out of range or of mismatched type");
  if (tensor_.dtype() == DType::String)
    return Tensor::fromStrings(tensor_.dims(), std::move(strings_));
  return std::move(tensor_);
}

Status requireInputs(const EvalContext& ctx, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (!ctx.has(i)) return ctx.error("input {} is missing", i);
  return Status();
}

Expected<Tensor> takeStrided(const Tensor& src, std::vector<int64_t> dims,
                             const std::vector<int64_t>& strides, int64_t base) {
  KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(src.dtype(), dims));
  forEachStrided(dims, strides, base, [&](int64_t o, int64_t s) { b.copy(o, src, s); });
  return std::move(b).finish();
}

Expected<Tensor> withDims(const Tensor& src, std::vector<int64_t> dims) {
  KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(src.dtype(), std::move(dims)));
  if (b.numElements() != src.numElements())
    return makeError("cannot view {} elements as {} elements", src.numElements(), b.numElements());
  b.copy(0, src, 0, src.numElements());
  return std::move(b).finish();
}

}  // namespace kiln
