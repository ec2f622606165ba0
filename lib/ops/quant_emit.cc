// Emit facets for QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: calls of
// kernels/ref/misc.h, per-tensor or per-axis (blocked quantization is refused).
#include "emit_support.h"

namespace kiln {
namespace {

/// The quantized integer C type of v (8/16/32-bit integers; 4-bit types are refused).
Expected<std::string> quantizedType(const Node& n, const Value* v, EmitContext& ctx) {
  DType t = v->dtype();
  if (!isInteger(t) || dtypeBits(t) < 8 || cTypeOf(t).empty())
    return ctx.unsupported(fmt::format("{} with {} quantized values", n.opType(), dtypeName(t)));
  return std::string(cTypeOf(t));
}

/// [outer, axis_dim, inner] of x for a per-tensor or per-axis scale.
Expected<std::string> quantGeometry(const Node& n, EmitContext& ctx) {
  auto x = staticDims(n.input(0));
  if (n.attrInt("block_size", 0) != 0) return ctx.unsupported("blocked quantization");
  const int64_t scales = staticNumel(n.input(1));
  if (scales == 1 && staticDims(n.input(1)).size() <= 1)
    return fmt::format("1, 1, {}", staticNumel(n.input(0)));
  auto axis = axisIn(n.attrInt("axis", 1), int64_t(x.size()));
  if (!axis || x[size_t(*axis)] != scales) return ctx.unsupported("quantization scale shape");
  size_t a = size_t(*axis);
  return fmt::format("{}, {}, {}", dimsProduct(x, 0, a), x[a], dimsProduct(x, a + 1, x.size()));
}

std::string zeroPoint(const Node& n, EmitContext& ctx, const std::string& q) {
  if (n.numInputs() > 2 && n.input(2)) return ctx.input(2);
  return "static_cast<const " + q + "*>(nullptr)";
}

Status emitQuantize(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string x, valueKernelType(n, n.input(0), ctx));
  if (!isFloat(n.input(0)->dtype())) return ctx.unsupported("QuantizeLinear of integers");
  KILN_ASSIGN_OR_RETURN(std::string q, quantizedType(n, n.output(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string geometry, quantGeometry(n, ctx));
  if (n.input(1)->dtype() != n.input(0)->dtype())
    return ctx.unsupported("QuantizeLinear with a scale of another type");
  if (n.numInputs() > 2 && n.input(2) && n.input(2)->dtype() != n.output(0)->dtype())
    return ctx.unsupported("QuantizeLinear with a zero point of another type");
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call("kiln_ref::quantize_linear",
           fmt::format("kiln_ref::quantize_linear<{}, {}>({}, {}, {}, {}, {});", x, q, geometry,
                       ctx.input(0), ctx.input(1), zeroPoint(n, ctx, q), ctx.output(0)));
  return Status();
}

Status emitDequantize(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string q, quantizedType(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string y, valueKernelType(n, n.output(0), ctx));
  if (!isFloat(n.output(0)->dtype()) || n.input(1)->dtype() != n.output(0)->dtype())
    return ctx.unsupported("DequantizeLinear with these types");
  if (n.numInputs() > 2 && n.input(2) && n.input(2)->dtype() != n.input(0)->dtype())
    return ctx.unsupported("DequantizeLinear with a zero point of another type");
  KILN_ASSIGN_OR_RETURN(std::string geometry, quantGeometry(n, ctx));
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call("kiln_ref::dequantize_linear",
           fmt::format("kiln_ref::dequantize_linear<{}, {}>({}, {}, {}, {}, {});", q, y, geometry,
                       ctx.input(0), ctx.input(1), zeroPoint(n, ctx, q), ctx.output(0)));
  return Status();
}

Status emitDynamicQuantize(const Node& n, EmitContext& ctx) {
  if (n.input(0)->dtype() != DType::F32 || n.numOutputs() < 3 || !n.output(0) || !n.output(1) ||
      !n.output(2))
    return ctx.unsupported("DynamicQuantizeLinear of non-f32 input or with omitted outputs");
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call(
      "kiln_ref::dynamic_quantize_linear",
      fmt::format("kiln_ref::dynamic_quantize_linear({}, {}, {}, {}, {});", staticNumel(n.input(0)),
                  ctx.input(0), ctx.output(0), ctx.output(1), ctx.output(2)));
  return Status();
}

}  // namespace

void attachQuantEmitters(OpRegistry& r) {
  r.setEmit("", "QuantizeLinear", emitQuantize);
  r.setEmit("", "DequantizeLinear", emitDequantize);
  r.setEmit("", "DynamicQuantizeLinear", emitDynamicQuantize);
}

}  // namespace kiln
