// Helpers for emit facets: C types of dtypes and exact literals.
#include <cmath>
#include <cstring>

#include "kiln/ops/emit.h"

namespace kiln {

std::string_view cTypeOf(DType t) {
  switch (t) {
    case DType::F32:
      return "float";
    case DType::F64:
      return "double";
    case DType::F16:
    case DType::BF16:
      return "uint16_t";
    case DType::I8:
      return "int8_t";
    case DType::I16:
      return "int16_t";
    case DType::I32:
      return "int32_t";
    case DType::I64:
      return "int64_t";
    case DType::U8:
      return "uint8_t";
    case DType::U16:
      return "uint16_t";
    case DType::U32:
      return "uint32_t";
    case DType::U64:
      return "uint64_t";
    case DType::Bool:
      return "bool";
    default:
      return "";
  }
}

std::string intListLiteral(const std::vector<int64_t>& values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) s += ", ";
    // INT64_MIN cannot be written as a plain literal.
    if (values[i] == INT64_MIN)
      s += "(-9223372036854775807LL - 1)";
    else
      s += std::to_string(values[i]) +
           (values[i] > 2147483647 || values[i] < -2147483647 ? "LL" : "");
  }
  return s + "}";
}

std::string floatLiteral(float v) {
  if (std::isnan(v)) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return fmt::format("kiln_ref::bits_to_float(0x{:08x}u)", bits);
  }
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  return fmt::format("{:a}f", v);
}

}  // namespace kiln
