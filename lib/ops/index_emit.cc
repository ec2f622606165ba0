// Emit facets for the indexing ops (Gather, GatherElements, GatherND, ScatterElements,
// Scatter, ScatterND, OneHot) and CumSum and TopK: calls of kernels/ref/gather.h. Kernels
// that read run-time indices return nonzero on a bad one; the generated code then returns
// KILN_ERR_DATA.
#include "emit_support.h"

namespace kiln {
namespace {

std::string voidIn(EmitContext& ctx, size_t i) {
  return "static_cast<const void*>(" + ctx.input(i) + ")";
}
std::string voidOut(EmitContext& ctx, size_t i) {
  return "static_cast<void*>(" + ctx.output(i) + ")";
}

/// Index tensors must be int32 or int64 (the kernels' index types).
Status requireIndices(const Node& n, size_t i, EmitContext& ctx) {
  DType t = n.input(i)->dtype();
  if (t != DType::I32 && t != DType::I64)
    return ctx.unsupported(fmt::format("{} with {} indices", n.opType(), dtypeName(t)));
  return Status();
}

Status emitGather(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  KILN_RETURN_IF_ERROR(requireIndices(n, 1, ctx));
  auto x = staticDims(n.input(0));
  auto axis = axisIn(n.attrInt("axis", 0), int64_t(x.size()));
  if (!axis) return ctx.unsupported("Gather axis out of range");
  size_t a = size_t(*axis);
  ctx.useHeader("kiln_ref/gather.h");
  callChecked(ctx, "kiln_ref::gather",
              fmt::format("kiln_ref::gather({}, {}, {}, {}, {}, {}, {}, {})", dimsProduct(x, 0, a),
                          x[a], dimsProduct(x, a + 1, x.size()), ctx.input(1),
                          staticNumel(n.input(1)), es, voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

Status emitGatherElements(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  KILN_RETURN_IF_ERROR(requireIndices(n, 1, ctx));
  auto x = staticDims(n.input(0)), idx = staticDims(n.input(1));
  auto axis = axisIn(n.attrInt("axis", 0), int64_t(x.size()));
  if (!axis || x.size() != idx.size()) return ctx.unsupported("GatherElements axis or ranks");
  ctx.useHeader("kiln_ref/gather.h");
  callChecked(ctx, "kiln_ref::gather_elements",
              fmt::format("kiln_ref::gather_elements({}, {}, {}, {}, {}, {}, {}, {})", x.size(),
                          ctx.constArray(x), ctx.constArray(idx), *axis, ctx.input(1), es,
                          voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

Status emitGatherND(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  KILN_RETURN_IF_ERROR(requireIndices(n, 1, ctx));
  auto x = staticDims(n.input(0)), idx = staticDims(n.input(1));
  int64_t b = n.attrInt("batch_dims", 0);
  if (x.empty() || idx.empty() || b < 0 || b >= int64_t(std::min(x.size(), idx.size())) ||
      idx.back() < 1 || b + idx.back() > int64_t(x.size()))
    return ctx.unsupported("GatherND with these shapes");
  ctx.useHeader("kiln_ref/gather.h");
  callChecked(ctx, "kiln_ref::gather_nd",
              fmt::format("kiln_ref::gather_nd({}, {}, {}, {}, {}, {}, {}, {}, {})", x.size(),
                          ctx.constArray(x), idx.size(), ctx.constArray(idx), b, ctx.input(1), es,
                          voidIn(ctx, 0), voidOut(ctx, 0)));
  return Status();
}

struct ReductionRow {
  const char* name;
  const char* spelling;
};
constexpr ReductionRow kReductions[] = {{"none", "kiln_ref::kScatterNone"},
                                        {"add", "kiln_ref::kScatterAdd"},
                                        {"mul", "kiln_ref::kScatterMul"},
                                        {"max", "kiln_ref::kScatterMax"},
                                        {"min", "kiln_ref::kScatterMin"}};

Expected<std::string> reductionOf(const Node& n, EmitContext& ctx) {
  std::string name = n.attrString("reduction", "none");
  for (const auto& row : kReductions)
    if (name == row.name) return std::string(row.spelling);
  return ctx.unsupported(fmt::format("{} reduction '{}'", n.opType(), name));
}

Status emitScatterElements(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string reduction, reductionOf(n, ctx));
  KILN_RETURN_IF_ERROR(requireIndices(n, 1, ctx));
  auto x = staticDims(n.input(0)), idx = staticDims(n.input(1));
  auto axis = axisIn(n.attrInt("axis", 0), int64_t(x.size()));
  if (!axis || x.size() != idx.size() || idx != staticDims(n.input(2)))
    return ctx.unsupported("ScatterElements axis or shapes");
  ctx.useHeader("kiln_ref/gather.h");
  callChecked(ctx, "kiln_ref::scatter_elements",
              fmt::format("kiln_ref::scatter_elements<{}>({}, {}, {}, {}, {}, {}, {}, {}, {})", e,
                          x.size(), ctx.constArray(x), ctx.constArray(idx), *axis, ctx.input(1),
                          ctx.input(2), reduction, ctx.input(0), ctx.output(0)));
  return Status();
}

Status emitScatterND(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  KILN_ASSIGN_OR_RETURN(std::string reduction, reductionOf(n, ctx));
  KILN_RETURN_IF_ERROR(requireIndices(n, 1, ctx));
  auto x = staticDims(n.input(0)), idx = staticDims(n.input(1));
  if (idx.empty() || idx.back() > int64_t(x.size())) return ctx.unsupported("ScatterND shapes");
  ctx.useHeader("kiln_ref/gather.h");
  callChecked(ctx, "kiln_ref::scatter_nd",
              fmt::format("kiln_ref::scatter_nd<{}>({}, {}, {}, {}, {}, {}, {}, {}, {})", e,
                          x.size(), ctx.constArray(x), idx.size(), ctx.constArray(idx),
                          ctx.input(1), ctx.input(2), reduction, ctx.input(0), ctx.output(0)));
  return Status();
}

Status emitOneHot(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(2), ctx));
  DType it = n.input(0)->dtype();
  if (it == DType::F16 || it == DType::BF16 || it == DType::Bool || cTypeOf(it).empty())
    return ctx.unsupported(fmt::format("OneHot with {} indices", dtypeName(it)));
  auto idx = staticDims(n.input(0)), out = staticDims(n.output(0));
  auto axis = axisIn(n.attrInt("axis", -1), int64_t(out.size()));
  if (!axis || out.size() != idx.size() + 1) return ctx.unsupported("OneHot axis out of range");
  size_t a = size_t(*axis);
  ctx.useHeader("kiln_ref/gather.h");
  ctx.call("kiln_ref::one_hot",
           fmt::format("kiln_ref::one_hot({}, {}, {}, {}, {}, {}, {});", dimsProduct(idx, 0, a),
                       out[a], dimsProduct(idx, a, idx.size()), ctx.input(0), voidIn(ctx, 2), es,
                       voidOut(ctx, 0)));
  return Status();
}

/// One kernel call per possible axis when the axis is known only at run time: a switch over
/// the normalized axis (out of range: KILN_ERR_DATA). `callFor(axis)` gives the statement.
template <typename CallFor>
std::string switchOverAxis(const std::string& axisExpr, int64_t rank, CallFor callFor) {
  std::string s = fmt::format(
      "{{ int64_t axis = int64_t(*{}); if (axis < 0) axis += {}; "
      "switch (axis) {{ ",
      axisExpr, rank);
  for (int64_t a = 0; a < rank; ++a) s += fmt::format("case {}: {} break; ", a, callFor(a));
  return s + "default: return KILN_ERR_DATA; } }";
}

Status emitCumSum(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  if (n.input(0)->dtype() == DType::Bool) return ctx.unsupported("CumSum on bool tensors");
  auto x = staticDims(n.input(0));
  const int64_t rank = int64_t(x.size());
  if (rank == 0) return ctx.unsupported("CumSum of a scalar");
  std::string in = ctx.input(0), out = ctx.output(0);
  int exclusive = n.attrInt("exclusive", 0) != 0, reverse = n.attrInt("reverse", 0) != 0;
  auto callFor = [&](int64_t a) {
    size_t k = size_t(a);
    return fmt::format("kiln_ref::cumsum<{}>({}, {}, {}, {}, {}, {}, {});", e, dimsProduct(x, 0, k),
                       x[k], dimsProduct(x, k + 1, x.size()), exclusive, reverse, in, out);
  };
  ctx.useHeader("kiln_ref/gather.h");
  if (auto given = constInts(ctx, n, 1); given && given->size() == 1) {
    auto a = axisIn((*given)[0], rank);
    if (!a) return ctx.unsupported("CumSum axis out of range");
    ctx.call("kiln_ref::cumsum", callFor(*a));
  } else {
    if (!isInteger(n.input(1)->dtype()) || staticNumel(n.input(1)) != 1)
      return ctx.unsupported("CumSum with a non-scalar axis");
    ctx.call("kiln_ref::cumsum", switchOverAxis(ctx.input(1), rank, callFor));
  }
  return Status();
}

/// TopK with K read at run time: the outputs are sized by the axis (the bound), packed at
/// [outer, K, inner], the rest zeroed; K outside [0, axis] is bad data.
Status emitTopKRuntimeK(const Node& n, EmitContext& ctx, const std::string& e,
                        const std::vector<int64_t>& x, size_t a) {
  if (n.input(1)->dtype() != DType::I64 || staticNumel(n.input(1)) != 1)
    return ctx.unsupported("TopK with a non-int64 K");
  std::string values = ctx.runtimeDim(0, a), indices = ctx.runtimeDim(1, a);
  if (values.empty() || indices.empty() || !n.output(1)->shape()[a].isBounded())
    return ctx.unsupported("TopK outputs of different sizes");
  const int64_t outer = dimsProduct(x, 0, a), inner = dimsProduct(x, a + 1, x.size());
  ctx.call("kiln_ref::topk",
           fmt::format("{{ const int64_t k = *{0}; if (k < 0 || k > {2}) return KILN_ERR_DATA; "
                       "kiln_ref::topk<{4}>({1}, {2}, {3}, k, {5}, {6}, {7}, {8}, {9}); "
                       "const int64_t used = {1} * k * {3}, cap = {1} * {2} * {3}; "
                       "std::memset(static_cast<void*>({7} + used), 0, size_t(cap - used) * "
                       "sizeof(*{7})); for (int64_t t = used; t < cap; ++t) {8}[t] = 0; "
                       "{10} = k; {11} = k; }}",
                       ctx.input(1), outer, x[a], inner, e, n.attrInt("largest", 1) != 0 ? 1 : 0,
                       ctx.input(0), ctx.output(0), ctx.output(1), ctx.scratch(x[a] * 8), values,
                       indices));
  return Status();
}

Status emitTopK(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  if (n.input(0)->dtype() == DType::Bool) return ctx.unsupported("TopK on bool tensors");
  if (n.numOutputs() < 2 || !n.output(0) || !n.output(1))
    return ctx.unsupported("TopK with an omitted output");
  auto x = staticDims(n.input(0)), y = staticDims(n.output(0));
  auto axis = axisIn(n.attrInt("axis", -1), int64_t(x.size()));
  if (!axis || y.size() != x.size()) return ctx.unsupported("TopK axis out of range");
  size_t a = size_t(*axis);
  const int64_t k = y[a];
  ctx.useHeader("kiln_ref/gather.h");
  if (n.output(0)->shape()[a].isBounded()) return emitTopKRuntimeK(n, ctx, e, x, a);
  if (!constInts(ctx, n, 1)) {
    if (n.input(1)->dtype() != DType::I64 || staticNumel(n.input(1)) != 1)
      return ctx.unsupported("TopK with a non-int64 K");
    // The output shape fixed K when the code was generated.
    ctx.call("check", fmt::format("if (*{} != {}) return KILN_ERR_DATA;", ctx.input(1), k));
  }
  ctx.call("kiln_ref::topk",
           fmt::format("kiln_ref::topk<{}>({}, {}, {}, {}, {}, {}, {}, {}, {});", e,
                       dimsProduct(x, 0, a), x[a], dimsProduct(x, a + 1, x.size()), k,
                       n.attrInt("largest", 1) != 0 ? 1 : 0, ctx.input(0), ctx.output(0),
                       ctx.output(1), ctx.scratch(x[a] * 8)));
  return Status();
}

constexpr EmitterRow kIndexEmitters[] = {
    {"Gather", emitGather},
    {"GatherElements", emitGatherElements},
    {"GatherND", emitGatherND},
    {"ScatterElements", emitScatterElements},
    {"Scatter", emitScatterElements},
    {"ScatterND", emitScatterND},
    {"OneHot", emitOneHot},
    {"CumSum", emitCumSum},
    {"TopK", emitTopK},
};

}  // namespace

void attachIndexEmitters(OpRegistry& r) {
  setEmitters(r, kIndexEmitters);
}

}  // namespace kiln
