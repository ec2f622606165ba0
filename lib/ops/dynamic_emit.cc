// Emit facets for ops whose output size the data decides: NonZero, Unique, Compress,
// NonMaxSuppression (kernels/ref/dynamic.h, gather.h, copy.h, misc.h). Buffers are sized by the
// compile-time bound; the generated code stores the run-time size in ctx.runtimeDim
// (docs/dynamic-shapes.md).
#include <algorithm>
#include <utility>

#include "emit_support.h"

namespace kiln {
namespace {

bool present(const Node& n, size_t i) {
  return i < n.numInputs() && n.input(i) != nullptr;
}
bool presentOutput(const Node& n, size_t i) {
  return i < n.numOutputs() && n.output(i) != nullptr;
}

/// Statement recording `count` (a C++ expression) as the size of dim `dim` of output `out`:
/// the run-time size slot of a data-dependent dim, or a check against a static one.
Expected<std::string> recordSize(const Node& n, EmitContext& ctx, size_t out, size_t dim,
                                 const std::string& count) {
  if (!presentOutput(n, out)) return std::string();
  const Shape& s = n.output(out)->shape();
  if (dim >= s.dims().size()) return (ctx.unsupported("output rank does not match the op"));
  if (s[dim].isStatic())
    return fmt::format(" if ({} != {}) return KILN_ERR_DATA;", count, s[dim].value);
  std::string slot = ctx.runtimeDim(out, dim);
  if (slot.empty()) return (ctx.unsupported("a data-dependent output size with no bound"));
  return fmt::format(" {} = {};", slot, count);
}

std::string optionalOut(const Node& n, EmitContext& ctx, size_t i) {
  return presentOutput(n, i) ? ctx.output(i) : std::string("nullptr");
}

Status emitNonZero(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  auto x = staticDims(n.input(0));
  const int64_t numel = staticNumel(n.input(0)), rank = int64_t(x.size());
  KILN_ASSIGN_OR_RETURN(std::string record, recordSize(n, ctx, 0, 1, "c"));
  ctx.useHeader("kiln_ref/gather.h");
  // Packed [rank, c] at the start of the [rank, numel] buffer; the rest zeroed.
  ctx.call("kiln_ref::nonzero",
           fmt::format("{{ const int64_t c = kiln_ref::nonzero_count<{0}>({1}, {2}); "
                       "kiln_ref::nonzero<{0}>({3}, {4}, {2}, c, {5}); "
                       "std::memset({5} + {3} * c, 0, size_t({3} * ({1} - c)) * 8);{6} }}",
                       e, numel, ctx.input(0), rank, ctx.constArray(x), ctx.output(0), record));
  return Status();
}

Status emitUnique(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::string e, valueKernelType(n, n.input(0), ctx));
  auto x = staticDims(n.input(0));
  int64_t outer = 1, count = staticNumel(n.input(0)), inner = 1;
  size_t yDim = 0;
  if (n.hasAttr("axis")) {
    auto axis = axisIn(n.attrInt("axis", 0), int64_t(x.size()));
    if (!axis) return ctx.unsupported("Unique axis out of range");
    yDim = size_t(*axis);
    outer = dimsProduct(x, 0, yDim);
    count = x[yDim];
    inner = dimsProduct(x, yDim + 1, x.size());
  }
  std::string record;
  for (auto [out, dim] : {std::pair<size_t, size_t>{0, yDim}, {1, 0}, {3, 0}}) {
    KILN_ASSIGN_OR_RETURN(std::string r, recordSize(n, ctx, out, dim, "u"));
    record += r;
  }
  ctx.useHeader("kiln_ref/dynamic.h");
  ctx.call("kiln_ref::unique",
           fmt::format("{{ const int64_t u = kiln_ref::unique<{}>({}, {}, {}, {}, {}, {}, {}, {}, "
                       "{}, {});{} }}",
                       e, outer, count, inner, n.attrInt("sorted", 1) != 0 ? 1 : 0, ctx.input(0),
                       ctx.output(0), optionalOut(n, ctx, 1), optionalOut(n, ctx, 2),
                       optionalOut(n, ctx, 3), ctx.scratch(4 * std::max<int64_t>(count, 1) * 8),
                       record));
  return Status();
}

Status emitCompress(const Node& n, EmitContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t es, elementBytes(n, n.input(0), ctx));
  if (n.input(1)->dtype() != DType::Bool)
    return ctx.unsupported("Compress with a non-bool condition");
  auto x = staticDims(n.input(0));
  int64_t outer = 1, count = staticNumel(n.input(0)), inner = 1;
  size_t yDim = 0;
  if (n.hasAttr("axis")) {
    auto axis = axisIn(n.attrInt("axis", 0), int64_t(x.size()));
    if (!axis) return ctx.unsupported("Compress axis out of range");
    yDim = size_t(*axis);
    outer = dimsProduct(x, 0, yDim);
    count = x[yDim];
    inner = dimsProduct(x, yDim + 1, x.size());
  }
  const int64_t condLen = staticNumel(n.input(1));
  if (condLen > count)
    return ctx.unsupported(
        fmt::format("condition has {} elements, more than the {} slices", condLen, count));
  KILN_ASSIGN_OR_RETURN(std::string record, recordSize(n, ctx, 0, yDim, "c"));
  const int64_t row = inner * es, capacity = outer * std::min(count, condLen) * row;
  ctx.useHeader("kiln_ref/copy.h");
  ctx.call("kiln_ref::compress",
           fmt::format("{{ const int64_t c = kiln_ref::compress({}, {}, {}, {}, {}, {}, {}, {}); "
                       "if (c < 0) return KILN_ERR_DATA; std::memset(reinterpret_cast<unsigned "
                       "char*>({}) + {} * c, 0, size_t({} - {} * c));{} }}",
                       outer, count, inner, ctx.input(1), condLen, es, ctx.input(0), ctx.output(0),
                       ctx.output(0), outer * row, capacity, outer * row, record));
  return Status();
}

Status emitNonMaxSuppression(const Node& n, EmitContext& ctx) {
  for (size_t i : {0, 1})
    if (n.input(i)->dtype() != DType::F32)
      return ctx.unsupported("NonMaxSuppression on non-f32 boxes or scores");
  auto boxes = staticDims(n.input(0)), scores = staticDims(n.input(1));
  if (boxes.size() != 3 || scores.size() != 3 || boxes[2] != 4 || boxes[0] != scores[0] ||
      boxes[1] != scores[2])
    return ctx.unsupported(
        "NonMaxSuppression needs boxes [batches, boxes, 4] and scores [batches, classes, boxes]");
  const DType scalarTypes[] = {DType::Undefined, DType::Undefined, DType::I64, DType::F32,
                               DType::F32};
  for (size_t i = 2; i < 5; ++i)
    if (present(n, i) && (n.input(i)->dtype() != scalarTypes[i] || staticNumel(n.input(i)) != 1))
      return ctx.unsupported(fmt::format("NonMaxSuppression input {} must be one {} element", i,
                                         dtypeName(scalarTypes[i])));
  const int64_t capacity = staticDims(n.output(0))[0];
  KILN_ASSIGN_OR_RETURN(std::string record, recordSize(n, ctx, 0, 0, "s"));
  auto scalar = [&](size_t i, const char* absent) {
    return present(n, i) ? "*" + ctx.input(i) : std::string(absent);
  };
  ctx.useHeader("kiln_ref/misc.h");
  ctx.call("kiln_ref::non_max_suppression",
           fmt::format("{{ const int64_t s = kiln_ref::non_max_suppression({}, {}, {}, {}, {}, "
                       "{}, {}, {}, {}, {}, {}, {}, {}); if (s < 0) return KILN_ERR_DATA; "
                       "for (int64_t r = s * 3; r < {} * 3; ++r) {}[r] = 0;{} }}",
                       boxes[0], boxes[1], scores[1], ctx.input(0), ctx.input(1),
                       scalar(2, "int64_t(0)"), scalar(3, "0.0f"), scalar(4, "0.0f"),
                       present(n, 4) ? 1 : 0, n.attrInt("center_point_box", 0) != 0 ? 1 : 0,
                       ctx.output(0), capacity, ctx.scratch(std::max<int64_t>(boxes[1], 1) * 16),
                       capacity, ctx.output(0), record));
  return Status();
}

constexpr EmitterRow kDynamicEmitters[] = {
    {"NonZero", emitNonZero},
    {"Unique", emitUnique},
    {"Compress", emitCompress},
    {"NonMaxSuppression", emitNonMaxSuppression},
};

}  // namespace

void attachDynamicEmitters(OpRegistry& r) {
  setEmitters(r, kDynamicEmitters);
}

}  // namespace kiln
