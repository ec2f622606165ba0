// Emit facets for the integer and quantized NN ops ConvInteger, QLinearConv, MatMulInteger
// and QLinearMatMul: calls of kernels/ref/conv.h and gemm.h. Scales and zero points may be
// run-time inputs; per-tensor values are read as element 0, per-channel ones as arrays.
#include "emit_support.h"

namespace kiln {
namespace {

bool present(const Node& n, size_t i) {
  return i < n.numInputs() && n.input(i) != nullptr;
}

/// (u)int8 C type of input i, or an error.
Expected<std::string> int8Type(const Node& n, size_t i, EmitContext& ctx) {
  DType t = n.input(i)->dtype();
  if (t != DType::I8 && t != DType::U8)
    return ctx.unsupported(fmt::format("{} with {} operands", n.opType(), dtypeName(t)));
  return std::string(cTypeOf(t));
}

/// The stride of a quantization parameter: 0 for one value, 1 for `perChannel` values.
std::optional<int64_t> paramStride(const Node& n, size_t i, int64_t perChannel) {
  const int64_t count = staticNumel(n.input(i));
  if (count == 1) return 0;
  if (count == perChannel && staticDims(n.input(i)).size() == 1) return 1;
  return std::nullopt;
}

/// Element 0 of a per-tensor input as a value expression; `dflt` when the input is absent.
std::string scalarOf(const Node& n, size_t i, EmitContext& ctx, const std::string& dflt) {
  return present(n, i) ? "(" + ctx.input(i) + ")[0]" : dflt;
}

Status requireF32Scales(const Node& n, EmitContext& ctx, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (n.input(i)->dtype() != DType::F32)
      return ctx.unsupported(
          fmt::format("{} with {} scales", n.opType(), dtypeName(n.input(i)->dtype())));
  return Status();
}

/// The conv geometry arguments shared by conv_integer and qlinear_conv (x is input 0, w `wi`).
Expected<std::string> convGeometry(const Node& n, size_t wi, EmitContext& ctx) {
  auto x = staticDims(n.input(0)), wd = staticDims(n.input(wi));
  if (x.size() < 3 || wd.size() != x.size())
    return ctx.unsupported(fmt::format("{} with inconsistent ranks", n.opType()));
  SlidingWindow w = slidingWindowOf(n, std::vector<int64_t>(wd.begin() + 2, wd.end()));
  if (!w.valid()) return ctx.unsupported(fmt::format("inconsistent {} attributes", n.opType()));
  return fmt::format("{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}", w.rank, x[0], x[1],
                     ctx.constArray(w.in), wd[0], ctx.constArray(w.kernel), ctx.constArray(w.out),
                     ctx.constArray(w.strides), ctx.constArray(w.dilations), ctx.constArray(w.pads),
                     n.attrInt("group", 1));
}

Status emitConvInteger(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string tx, int8Type(n, 0, ctx));
  KILN_ASSIGN_OR_RETURN(std::string tw, int8Type(n, 1, ctx));
  KILN_ASSIGN_OR_RETURN(std::string geometry, convGeometry(n, 1, ctx));
  const int64_t M = staticDims(n.input(1))[0];
  int64_t wStride = 0;
  if (present(n, 3)) {
    auto s = paramStride(n, 3, M);
    if (!s) return ctx.unsupported("ConvInteger w_zero_point that is neither scalar nor [M]");
    wStride = *s;
  }
  if (present(n, 2) && staticNumel(n.input(2)) != 1)
    return ctx.unsupported("ConvInteger with a per-channel x_zero_point");
  ctx.useHeader("kiln_ref/conv.h");
  ctx.call("kiln_ref::conv_integer",
           fmt::format("kiln_ref::conv_integer<{}, {}>({}, {}, {}, {}, {}, {}, {});", tx, tw,
                       geometry, ctx.input(0), scalarOf(n, 2, ctx, tx + "(0)"), ctx.input(1),
                       present(n, 3) ? ctx.input(3) : "static_cast<const " + tw + "*>(nullptr)",
                       wStride, ctx.output(0)));
  return Status();
}

// x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
Status emitQLinearConv(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string tx, int8Type(n, 0, ctx));
  KILN_ASSIGN_OR_RETURN(std::string tw, int8Type(n, 3, ctx));
  KILN_ASSIGN_OR_RETURN(std::string ty, int8Type(n, 7, ctx));
  KILN_RETURN_IF_ERROR(requireF32Scales(n, ctx, {1, 4, 6}));
  KILN_ASSIGN_OR_RETURN(std::string geometry, convGeometry(n, 3, ctx));
  const int64_t M = staticDims(n.input(3))[0];
  auto sScale = paramStride(n, 4, M), sZero = paramStride(n, 5, M);
  if (!sScale || !sZero || *sScale != *sZero)
    return ctx.unsupported("QLinearConv w_scale/w_zero_point of different or unsupported sizes");
  if (staticNumel(n.input(1)) != 1 || staticNumel(n.input(2)) != 1 ||
      staticNumel(n.input(6)) != 1 || staticNumel(n.input(7)) != 1)
    return ctx.unsupported("QLinearConv with per-channel x or y quantization");
  if (present(n, 8) && n.input(8)->dtype() != DType::I32)
    return ctx.unsupported("QLinearConv bias that is not int32");
  const std::string acc =
      fmt::format("reinterpret_cast<int32_t*>({})", ctx.scratch(staticNumel(n.output(0)) * 4));
  ctx.useHeader("kiln_ref/conv.h");
  ctx.call("kiln_ref::qlinear_conv",
           fmt::format("kiln_ref::qlinear_conv<{}, {}, {}>({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {}, {});",
                       tx, tw, ty, geometry, ctx.input(0), scalarOf(n, 1, ctx, ""),
                       scalarOf(n, 2, ctx, ""), ctx.input(3), ctx.input(4), ctx.input(5), *sScale,
                       scalarOf(n, 6, ctx, ""), scalarOf(n, 7, ctx, ""),
                       present(n, 8) ? ctx.input(8) : "static_cast<const int32_t*>(nullptr)", acc,
                       ctx.output(0)));
  return Status();
}

/// The batched geometry arguments of the matmul kernels for operands a (input 0), b (`bi`).
std::string matmulGeometry(const BatchedMatMul& g, EmitContext& ctx) {
  return fmt::format("{}, {}, {}, {}, {}, {}, {}", g.batch.size(), ctx.constArray(g.batch),
                     ctx.constArray(g.aStrides), ctx.constArray(g.bStrides), g.M, g.N, g.K);
}

Status emitMatMulInteger(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string ta, int8Type(n, 0, ctx));
  KILN_ASSIGN_OR_RETURN(std::string tb, int8Type(n, 1, ctx));
  BatchedMatMul g = batchedMatMulOf(staticDims(n.input(0)), staticDims(n.input(1)));
  int64_t aStride = 0, bStride = 0;
  if (present(n, 2)) {
    auto s = paramStride(n, 2, g.M);
    if (!s) return ctx.unsupported("MatMulInteger a_zero_point that is neither scalar nor [M]");
    aStride = *s;
  }
  if (present(n, 3)) {
    auto s = paramStride(n, 3, g.N);
    if (!s) return ctx.unsupported("MatMulInteger b_zero_point that is neither scalar nor [N]");
    bStride = *s;
  }
  auto opt = [&](size_t i, const std::string& t) {
    return present(n, i) ? ctx.input(i) : "static_cast<const " + t + "*>(nullptr)";
  };
  ctx.useHeader("kiln_ref/gemm.h");
  ctx.call("kiln_ref::matmul_integer",
           fmt::format("kiln_ref::matmul_integer<{}, {}>({}, {}, {}, {}, {}, {}, {}, {});", ta, tb,
                       matmulGeometry(g, ctx), ctx.input(0), opt(2, ta), aStride, ctx.input(1),
                       opt(3, tb), bStride, ctx.output(0)));
  return Status();
}

// a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
Status emitQLinearMatMul(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string ta, int8Type(n, 0, ctx));
  KILN_ASSIGN_OR_RETURN(std::string tb, int8Type(n, 3, ctx));
  KILN_ASSIGN_OR_RETURN(std::string ty, int8Type(n, 7, ctx));
  KILN_RETURN_IF_ERROR(requireF32Scales(n, ctx, {1, 4, 6}));
  BatchedMatMul g = batchedMatMulOf(staticDims(n.input(0)), staticDims(n.input(3)));
  auto sScale = paramStride(n, 4, g.N), sZero = paramStride(n, 5, g.N);
  if (!sScale || !sZero || *sScale != *sZero)
    return ctx.unsupported("QLinearMatMul b_scale/b_zero_point of different or unsupported sizes");
  if (staticNumel(n.input(1)) != 1 || staticNumel(n.input(2)) != 1 ||
      staticNumel(n.input(6)) != 1 || staticNumel(n.input(7)) != 1)
    return ctx.unsupported("QLinearMatMul with per-row a or y quantization");
  ctx.useHeader("kiln_ref/gemm.h");
  ctx.call("kiln_ref::qlinear_matmul",
           fmt::format("kiln_ref::qlinear_matmul<{}, {}, {}>({}, {}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {});",
                       ta, tb, ty, matmulGeometry(g, ctx), ctx.input(0), scalarOf(n, 1, ctx, ""),
                       scalarOf(n, 2, ctx, ""), ctx.input(3), ctx.input(4), ctx.input(5), *sScale,
                       scalarOf(n, 6, ctx, ""), scalarOf(n, 7, ctx, ""), ctx.output(0)));
  return Status();
}

}  // namespace

void attachQuantNnEmitters(OpRegistry& r) {
  r.setEmit("", "ConvInteger", emitConvInteger);
  r.setEmit("", "QLinearConv", emitQLinearConv);
  r.setEmit("", "MatMulInteger", emitMatMulInteger);
  r.setEmit("", "QLinearMatMul", emitQLinearMatMul);
}

}  // namespace kiln
