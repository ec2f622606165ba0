// Constant tensor storage: aligned heap buffers and mapped-file views.
#include "kiln/ir/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kiln/support/checked_math.h"
#include "kiln/support/file.h"

namespace kiln {
namespace {

class OwnedBuffer final : public Buffer {
 public:
  explicit OwnedBuffer(size_t size) : size_(size) {
    size_t alloc = (size + 63) / 64 * 64;
    data_ = static_cast<uint8_t*>(std::aligned_alloc(64, alloc == 0 ? 64 : alloc));
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, alloc == 0 ? 64 : alloc);
  }
  ~OwnedBuffer() override { std::free(data_); }
  const uint8_t* data() const override { return data_; }
  uint8_t* mutableData() { return data_; }
  size_t size() const override { return size_; }

 private:
  uint8_t* data_;
  size_t size_;
};

class MappedBuffer final : public Buffer {
 public:
  MappedBuffer(std::shared_ptr<MappedFile> file, uint64_t offset, uint64_t size)
      : file_(std::move(file)), offset_(offset), size_(size) {}
  const uint8_t* data() const override { return file_->data() + offset_; }
  size_t size() const override { return size_; }
  bool isMapped() const override { return true; }

 private:
  std::shared_ptr<MappedFile> file_;
  uint64_t offset_, size_;
};

Expected<int64_t> elementCount(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d < 0) return makeError("tensor has a negative dimension ({})", d);
  auto n = checkedProduct(dims);
  if (!n) return makeError("tensor element count overflows 64 bits");
  return *n;
}

}  // namespace

Expected<Tensor> Tensor::zeros(DType dtype, std::vector<int64_t> dims) {
  KILN_ASSIGN_OR_RETURN(int64_t n, elementCount(dims));
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = n;
  if (dtype == DType::String) {
    t.strings_.resize(size_t(n));
    return t;
  }
  auto bytes = dtypeStorageBytes(dtype, n);
  if (!bytes) return makeError("tensor byte size overflows 64 bits");
  t.buffer_ = std::make_shared<OwnedBuffer>(size_t(*bytes));
  return t;
}

Expected<Tensor> Tensor::fromBytes(DType dtype, std::vector<int64_t> dims, const void* data,
                                   size_t size) {
  KILN_ASSIGN_OR_RETURN(int64_t n, elementCount(dims));
  auto bytes = dtypeStorageBytes(dtype, n);
  if (!bytes || uint64_t(*bytes) != size)
    return makeError("tensor data is {} bytes but its type {} with {} elements needs {}", size,
                     dtypeName(dtype), n, bytes ? std::to_string(*bytes) : "too many");
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = n;
  auto buf = std::make_shared<OwnedBuffer>(size);
  if (size) std::memcpy(buf->mutableData(), data, size);
  t.buffer_ = std::move(buf);
  return t;
}

Expected<Tensor> Tensor::fromMapped(DType dtype, std::vector<int64_t> dims,
                                    std::shared_ptr<MappedFile> file, uint64_t offset,
                                    uint64_t size) {
  KILN_ASSIGN_OR_RETURN(int64_t n, elementCount(dims));
  auto bytes = dtypeStorageBytes(dtype, n);
  if (!bytes || uint64_t(*bytes) != size)
    return makeError("tensor data is {} bytes but its type {} with {} elements needs {}", size,
                     dtypeName(dtype), n, bytes ? std::to_string(*bytes) : "too many");
  if (offset > file->size() || size > file->size() - offset)
    return makeError(
        "{}: tensor data at offset {} length {} runs past the end of the file ({} bytes)",
        file->path(), offset, size, file->size());
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = n;
  t.buffer_ = std::make_shared<MappedBuffer>(std::move(file), offset, size);
  return t;
}

Expected<Tensor> Tensor::fromStrings(std::vector<int64_t> dims, std::vector<std::string> values) {
  KILN_ASSIGN_OR_RETURN(int64_t n, elementCount(dims));
  if (uint64_t(n) != values.size())
    return makeError("string tensor has {} values but its shape needs {}", values.size(), n);
  Tensor t;
  t.dtype_ = DType::String;
  t.dims_ = std::move(dims);
  t.numel_ = n;
  t.strings_ = std::move(values);
  return t;
}

uint8_t* Tensor::mutableBytes() {
  if (!buffer_) return nullptr;
  auto* owned = dynamic_cast<OwnedBuffer*>(buffer_.get());
  if (!owned || buffer_.use_count() > 1) {
    auto copy = std::make_shared<OwnedBuffer>(buffer_->size());
    if (buffer_->size()) std::memcpy(copy->mutableData(), buffer_->data(), buffer_->size());
    owned = copy.get();
    buffer_ = std::move(copy);
  }
  return owned->mutableData();
}

double Tensor::doubleAt(int64_t i) const {
  const uint8_t* p = bytes();
  switch (dtype_) {
    case DType::F32:
      return reinterpret_cast<const float*>(p)[i];
    case DType::F64:
      return reinterpret_cast<const double*>(p)[i];
    case DType::F16: {
      uint16_t h = reinterpret_cast<const uint16_t*>(p)[i];
      uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
      double v;
      if (exp == 0)
        v = std::ldexp(double(mant), -24);
      else if (exp == 31)
        v = mant ? NAN : INFINITY;
      else
        v = std::ldexp(double(mant | 0x400), int(exp) - 25);
      return sign ? -v : v;
    }
    case DType::BF16: {
      uint32_t bits = uint32_t(reinterpret_cast<const uint16_t*>(p)[i]) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::I4: {
      int v = (p[i / 2] >> ((i % 2) * 4)) & 0xf;
      return v >= 8 ? v - 16 : v;
    }
    case DType::U4:
      return (p[i / 2] >> ((i % 2) * 4)) & 0xf;
    case DType::I8:
      return reinterpret_cast<const int8_t*>(p)[i];
    case DType::U8:
      return p[i];
    case DType::Bool:
      return p[i] != 0;
    case DType::I16:
      return reinterpret_cast<const int16_t*>(p)[i];
    case DType::U16:
      return reinterpret_cast<const uint16_t*>(p)[i];
    case DType::I32:
      return reinterpret_cast<const int32_t*>(p)[i];
    case DType::U32:
      return reinterpret_cast<const uint32_t*>(p)[i];
    case DType::I64:
      return double(reinterpret_cast<const int64_t*>(p)[i]);
    case DType::U64:
      return double(reinterpret_cast<const uint64_t*>(p)[i]);
    default:
      return 0;
  }
}

int64_t Tensor::intAt(int64_t i) const {
  switch (dtype_) {
    case DType::I64:
      return reinterpret_cast<const int64_t*>(bytes())[i];
    case DType::U64:
      return int64_t(reinterpret_cast<const uint64_t*>(bytes())[i]);
    case DType::I32:
      return reinterpret_cast<const int32_t*>(bytes())[i];
    case DType::F32:
    case DType::F64:
    case DType::F16:
    case DType::BF16: {
      double d = doubleAt(i);
      if (!(d >= -9.2e18 && d <= 9.2e18)) return 0;
      return int64_t(d);
    }
    default:
      return int64_t(doubleAt(i));
  }
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out;
  out.reserve(size_t(numel_));
  for (int64_t i = 0; i < numel_; ++i) out.push_back(intAt(i));
  return out;
}

bool Tensor::sameContent(const Tensor& o) const {
  if (dtype_ != o.dtype_ || dims_ != o.dims_) return false;
  if (dtype_ == DType::String) return strings_ == o.strings_;
  if (byteSize() != o.byteSize()) return false;
  return byteSize() == 0 || std::memcmp(bytes(), o.bytes(), byteSize()) == 0;
}

}  // namespace kiln
