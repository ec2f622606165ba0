// Element type names and sizes.
#include "kiln/ir/dtype.h"

#include "kiln/support/checked_math.h"

namespace kiln {
namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  int bits;
};
constexpr DTypeInfo kInfo[] = {
    {DType::Undefined, "undefined", 0},
    {DType::F32, "f32", 32},
    {DType::F16, "f16", 16},
    {DType::BF16, "bf16", 16},
    {DType::F64, "f64", 64},
    {DType::I4, "i4", 4},
    {DType::U4, "u4", 4},
    {DType::I8, "i8", 8},
    {DType::U8, "u8", 8},
    {DType::I16, "i16", 16},
    {DType::U16, "u16", 16},
    {DType::I32, "i32", 32},
    {DType::U32, "u32", 32},
    {DType::I64, "i64", 64},
    {DType::U64, "u64", 64},
    {DType::Bool, "bool", 8},
    {DType::String, "string", 0},
};
}  // namespace

std::string_view dtypeName(DType t) {
  return kInfo[size_t(t)].name;
}

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& i : kInfo)
    if (i.name == name) return i.type;
  return std::nullopt;
}

int dtypeBits(DType t) {
  return kInfo[size_t(t)].bits;
}

std::optional<int64_t> dtypeStorageBytes(DType t, int64_t n) {
  if (n < 0) return std::nullopt;
  int bits = dtypeBits(t);
  if (bits == 4) return n / 2 + (n % 2);
  return checkedMul(n, bits / 8);
}

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}
bool isSignedInteger(DType t) {
  return t == DType::I4 || t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}
bool isInteger(DType t) {
  return isSignedInteger(t) || t == DType::U4 || t == DType::U8 || t == DType::U16 ||
         t == DType::U32 || t == DType::U64;
}

}  // namespace kiln
