// Helpers for emit facets: C types of dtypes, exact literals, kernel element types and
// compile-time inputs.
#include "emit_support.h"

#include <cmath>
#include <cstring>

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

std::vector<int64_t> staticDims(const Value* v) {
  return v->shape().staticDims();
}

int64_t staticNumel(const Value* v) {
  return *v->shape().numElements();
}

int64_t dimsProduct(const std::vector<int64_t>& d, size_t b, size_t e) {
  int64_t p = 1;
  for (size_t i = b; i < e && i < d.size(); ++i) p *= d[i];
  return p;
}

std::string_view kernelElemType(DType t) {
  switch (t) {
    case DType::F16:
      return "kiln_ref::f16_tag";
    case DType::BF16:
      return "kiln_ref::bf16_tag";
    default:
      return cTypeOf(t);
  }
}

Expected<std::string> valueKernelType(const Node& n, const Value* v, EmitContext& ctx) {
  std::string_view e = kernelElemType(v->dtype());
  if (e.empty())
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(v->dtype())));
  return std::string(e);
}

Expected<std::string> plainKernelType(const Node& n, const Value* v, EmitContext& ctx) {
  DType t = v->dtype();
  if (t == DType::F16 || t == DType::BF16 || cTypeOf(t).empty())
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(t)));
  return std::string(cTypeOf(t));
}

Expected<int64_t> elementBytes(const Node& n, const Value* v, EmitContext& ctx) {
  int bits = dtypeBits(v->dtype());
  if (bits <= 0 || bits % 8 != 0 || cTypeOf(v->dtype()).empty())
    return ctx.unsupported(fmt::format("{} on {} tensors (sub-byte or non-numeric elements)",
                                       n.opType(), dtypeName(v->dtype())));
  return int64_t(bits / 8);
}

std::optional<std::vector<int64_t>> constInts(EmitContext& ctx, const Node& n, size_t i) {
  if (i >= n.numInputs() || !n.input(i) || !isInteger(n.input(i)->dtype())) return std::nullopt;
  const Tensor* t = ctx.value(i);
  if (!t) return std::nullopt;
  return t->toInts();
}

std::optional<int64_t> axisIn(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

void callChecked(EmitContext& ctx, const std::string& kernel, const std::string& expr) {
  ctx.call(kernel, fmt::format("if ({} != 0) return KILN_ERR_DATA;", expr));
}

}  // namespace kiln
