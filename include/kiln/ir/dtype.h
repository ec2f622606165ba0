// Element types of tensors in kiln's IR.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln {

/// Element type. Sub-byte types (int4/uint4) pack two elements per byte, low nibble first.
enum class DType : uint8_t {
  Undefined,
  F32,
  F16,
  BF16,
  F64,
  I4,
  U4,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  Bool,
  String,
};

/// Short IR name: "f32", "i64", "bool", ...
std::string_view dtypeName(DType t);
/// Inverse of dtypeName.
std::optional<DType> parseDType(std::string_view name);
/// Bits per element (4 for int4/uint4, 0 for string and undefined).
int dtypeBits(DType t);
/// Bytes needed for n elements (rounded up for sub-byte types); nullopt on overflow.
std::optional<int64_t> dtypeStorageBytes(DType t, int64_t n);
bool isFloat(DType t);
bool isInteger(DType t);
bool isSignedInteger(DType t);

}  // namespace kiln
