// Constant tensor data: owned (64-byte aligned) or a view into a memory-mapped file.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/support/status.h"

namespace kiln {

class MappedFile;

/// Immutable bytes behind a Tensor.
class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual const uint8_t* data() const = 0;
  virtual size_t size() const = 0;
  /// True when the bytes live in a mapped file rather than heap memory.
  virtual bool isMapped() const { return false; }
};

/// A tensor with known dims and data. Copies share the underlying buffer.
class Tensor {
 public:
  Tensor() = default;
  /// Zero-filled tensor; fails on negative dims or sizes that overflow.
  static Expected<Tensor> zeros(DType dtype, std::vector<int64_t> dims);
  /// Takes ownership of `bytes` (must be exactly the storage size).
  static Expected<Tensor> fromBytes(DType dtype, std::vector<int64_t> dims, const void* data,
                                    size_t size);
  /// Views `size` bytes at `offset` of a mapped file without copying.
  static Expected<Tensor> fromMapped(DType dtype, std::vector<int64_t> dims,
                                     std::shared_ptr<MappedFile> file, uint64_t offset,
                                     uint64_t size);
  static Expected<Tensor> fromStrings(std::vector<int64_t> dims, std::vector<std::string> values);
  template <typename T>
  static Tensor fromVector(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
    auto t = fromBytes(dtype, std::move(dims), values.data(), values.size() * sizeof(T));
    return std::move(t).value();
  }
  /// A 0-d tensor.
  template <typename T>
  static Tensor scalar(DType dtype, T v) {
    return fromVector<T>(dtype, {}, std::vector<T>{v});
  }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return int64_t(dims_.size()); }
  int64_t numElements() const { return numel_; }
  bool valid() const { return dtype_ != DType::Undefined; }
  /// Raw storage (not meaningful for strings).
  const uint8_t* bytes() const { return buffer_ ? buffer_->data() : nullptr; }
  size_t byteSize() const { return buffer_ ? buffer_->size() : 0; }
  bool isMapped() const { return buffer_ && buffer_->isMapped(); }
  template <typename T>
  const T* data() const {
    return reinterpret_cast<const T*>(bytes());
  }
  /// Writable storage: copies the bytes first when shared or mapped.
  uint8_t* mutableBytes();
  template <typename T>
  T* mutableData() {
    return reinterpret_cast<T*>(mutableBytes());
  }
  const std::vector<std::string>& strings() const { return strings_; }
  /// Element i converted to int64 (integer, bool and float types); for shapes and indices.
  int64_t intAt(int64_t i) const;
  /// Element i converted to double (numeric types).
  double doubleAt(int64_t i) const;
  /// All elements as int64 (e.g. a shape tensor).
  std::vector<int64_t> toInts() const;
  /// Bitwise equality of dtype, dims and content.
  bool sameContent(const Tensor& other) const;

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  std::shared_ptr<Buffer> buffer_;
  std::vector<std::string> strings_;
};

}  // namespace kiln
