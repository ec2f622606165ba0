// Emit facets for the normalizations beyond nn_emit.cc's (GroupNormalization,
// LpNormalization, LRN, MeanVarianceNormalization): calls of kernels/ref/norm.h.
#include "emit_support.h"

namespace kiln {
namespace {

/// The float C type the norm kernels compute on, or an 'unsupported' error.
Expected<std::string> floatType(const Node& n, EmitContext& ctx) {
  DType t = n.input(0)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} on {} tensors", n.opType(), dtypeName(t)));
  return std::string(cTypeOf(t));
}

Status emitGroupNorm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(floatType(n, ctx).status());
  auto x = staticDims(n.input(0));
  const int64_t groups = n.attrInt("num_groups", 0);
  if (x.size() < 2 || groups < 1 || x[1] % groups != 0)
    return ctx.unsupported("GroupNormalization with these shapes");
  const int64_t scaleCount = staticNumel(n.input(1));
  if (staticNumel(n.input(2)) != scaleCount || (scaleCount != x[1] && scaleCount != groups))
    return ctx.unsupported("GroupNormalization with scale/bias of another size");
  // Opset 18 scales per group, opset 21 per channel; the element count tells them apart.
  const bool perGroup = scaleCount != x[1];
  ctx.useHeader("kiln_ref/norm.h");
  ctx.call("kiln_ref::group_norm",
           fmt::format("kiln_ref::group_norm({}, {}, {}, {}, {}, {}, {}, {}, {}, {});", x[0], x[1],
                       dimsProduct(x, 2, x.size()), groups, ctx.input(0), ctx.input(1),
                       ctx.input(2), perGroup ? "true" : "false",
                       floatLiteral(n.attrFloat("epsilon", 1e-5f)), ctx.output(0)));
  return Status();
}

Status emitLpNorm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(floatType(n, ctx).status());
  auto x = staticDims(n.input(0));
  auto axis = axisIn(n.attrInt("axis", -1), int64_t(x.size()));
  const int64_t p = n.attrInt("p", 2);
  if (!axis || (p != 1 && p != 2)) return ctx.unsupported("LpNormalization axis or p");
  size_t a = size_t(*axis);
  ctx.useHeader("kiln_ref/norm.h");
  ctx.call("kiln_ref::lp_norm",
           fmt::format("kiln_ref::lp_norm({}, {}, {}, {}, {}, {});", dimsProduct(x, 0, a), x[a],
                       dimsProduct(x, a + 1, x.size()), p, ctx.input(0), ctx.output(0)));
  return Status();
}

Status emitLrn(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(floatType(n, ctx).status());
  auto x = staticDims(n.input(0));
  const int64_t size = n.attrInt("size", 0);
  if (x.size() < 2 || size < 1) return ctx.unsupported("LRN with these shapes");
  ctx.useHeader("kiln_ref/norm.h");
  ctx.call("kiln_ref::lrn",
           fmt::format("kiln_ref::lrn({}, {}, {}, {}, {}, {}, {}, {}, {});", x[0], x[1],
                       dimsProduct(x, 2, x.size()), size, floatLiteral(n.attrFloat("alpha", 1e-4f)),
                       floatLiteral(n.attrFloat("beta", 0.75f)),
                       floatLiteral(n.attrFloat("bias", 1.0f)), ctx.input(0), ctx.output(0)));
  return Status();
}

Status emitMeanVarianceNorm(const Node& n, EmitContext& ctx) {
  KILN_RETURN_IF_ERROR(floatType(n, ctx).status());
  auto x = staticDims(n.input(0));
  const int64_t rank = int64_t(x.size());
  std::vector<int64_t> reduced(x.size(), 0);
  for (int64_t a : n.attrInts("axes", {0, 2, 3})) {
    auto na = axisIn(a, rank);
    if (!na) return ctx.unsupported("MeanVarianceNormalization axis out of range");
    reduced[size_t(*na)] = 1;
  }
  ctx.useHeader("kiln_ref/norm.h");
  ctx.call("kiln_ref::mean_variance_norm",
           fmt::format("kiln_ref::mean_variance_norm({}, {}, {}, {}, {});", rank, ctx.constArray(x),
                       ctx.constArray(reduced), ctx.input(0), ctx.output(0)));
  return Status();
}

constexpr EmitterRow kNormEmitters[] = {
    {"GroupNormalization", emitGroupNorm},
    {"LpNormalization", emitLpNorm},
    {"LRN", emitLrn},
    {"MeanVarianceNormalization", emitMeanVarianceNorm},
};

}  // namespace

void attachNormEmitters(OpRegistry& r) {
  setEmitters(r, kNormEmitters);
}

}  // namespace kiln
