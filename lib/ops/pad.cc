// Pad (constant, reflect, edge, wrap) and CenterCropPad.
#include <numeric>

#include "dim_math.h"
#include "family_registration.h"
#include "kiln/support/checked_math.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

template <typename Ctx>
Expected<std::string> padMode(const Ctx& ctx) {
  std::string mode = ctx.node().attrString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return ctx.error("mode '{}' is not one of constant, reflect, edge, wrap", mode);
  return mode;
}

// Axes the pads apply to: the axes input (normalized), or every axis.
template <typename Ctx>
Expected<std::vector<int64_t>> padAxes(const Ctx& ctx, const std::vector<int64_t>* given,
                                       int64_t rank) {
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (!given) return axes;
  std::vector<bool> seen(size_t(rank), false);
  axes.clear();
  for (int64_t a : *given) {
    if (a < -rank || a >= rank) return ctx.error("axis {} is out of range for rank {}", a, rank);
    if (a < 0) a += rank;
    if (seen[size_t(a)]) return ctx.error("axis {} is repeated", a);
    seen[size_t(a)] = true;
    axes.push_back(a);
  }
  return axes;
}

// Output dims: d + pad_begin + pad_end on each padded axis.
template <typename Ctx>
Expected<Shape> paddedShape(const Ctx& ctx, const Shape& in, const std::vector<int64_t>& axes,
                            const std::vector<int64_t>& pads) {
  const size_t n = axes.size();
  if (pads.size() != 2 * n)
    return ctx.error("pads has {} values; expected 2 per padded axis ({})", pads.size(), 2 * n);
  Shape out = in;
  for (size_t k = 0; k < n; ++k) {
    int64_t total;
    if (__builtin_add_overflow(pads[k], pads[k + n], &total)) return ctx.error("pads overflow");
    Dim& d = out.dims()[size_t(axes[k])];
    if (!d.isStatic()) {
      if (total != 0) d = Dim::unknown();
      continue;
    }
    int64_t v;
    if (__builtin_add_overflow(d.value, total, &v) || v < 0)
      return ctx.error("pads {} and {} on axis {} of size {} leave no valid size", pads[k],
                       pads[k + n], axes[k], d.value);
    d = Dim::known(v);
  }
  return out;
}

// Source coordinate for output coordinate o on one axis, or -1 for the constant.
int64_t padSource(const std::string& mode, int64_t o, int64_t begin, int64_t d) {
  int64_t i = o - begin;
  if (i >= 0 && i < d) return i;
  if (mode == "constant") return -1;
  if (mode == "edge") return i < 0 ? 0 : d - 1;
  if (mode == "wrap") return ((i % d) + d) % d;
  if (d == 1) return 0;  // reflect
  int64_t period = 2 * (d - 1);
  int64_t m = ((i % period) + period) % period;
  return m >= d ? period - m : m;
}

struct PadOp {
  static constexpr std::string_view kName = "Pad";
  static OpSchema schema() { return {2, 4, 1, 1, {{"mode", AttrKind::String}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "pads"));
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 3, "axes"));
    KILN_RETURN_IF_ERROR(padMode(ctx).status());
    const TensorType& in = ctx.in(0);
    if (ctx.has(2) && ctx.in(2).dtype != in.dtype)
      return ctx.error("constant_value is {} but the data is {}", dtypeName(ctx.in(2).dtype),
                       dtypeName(in.dtype));
    if (!in.shape.rankKnown()) return single(in.dtype, Shape::unknownRank());
    const int64_t rank = in.shape.rank();
    auto given = knownInts(ctx, 3);
    if (ctx.has(3) && !given) return single(in.dtype, unknownDims(rank));
    KILN_ASSIGN_OR_RETURN(auto axes, padAxes(ctx, ctx.has(3) ? &*given : nullptr, rank));
    auto pads = knownInts(ctx, 1);
    if (!pads) {
      Shape out = in.shape;
      for (int64_t a : axes) out.dims()[size_t(a)] = Dim::unknown();
      return single(in.dtype, std::move(out));
    }
    KILN_ASSIGN_OR_RETURN(Shape out, paddedShape(ctx, in.shape, axes, *pads));
    return single(in.dtype, std::move(out));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    KILN_ASSIGN_OR_RETURN(std::string mode, padMode(ctx));
    const Tensor& x = ctx.in(0);
    std::vector<int64_t> given;
    if (ctx.has(3)) given = ctx.in(3).toInts();
    KILN_ASSIGN_OR_RETURN(auto axes, padAxes(ctx, ctx.has(3) ? &given : nullptr, x.rank()));
    auto pads = ctx.in(1).toInts();
    KILN_ASSIGN_OR_RETURN(Shape outShape, paddedShape(ctx, Shape::ofStatic(x.dims()), axes, pads));
    auto dims = outShape.staticDims();
    const bool hasValue = ctx.has(2) && ctx.in(2).numElements() == 1;
    if (hasValue && ctx.in(2).dtype() != x.dtype()) return ctx.error("constant_value type differs");
    KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(x.dtype(), dims));
    if (b.numElements() == 0) {
      KILN_ASSIGN_OR_RETURN(Tensor empty, std::move(b).finish());
      return std::vector<Tensor>{std::move(empty)};
    }
    // Per-axis maps from output coordinate to source coordinate (-1: constant).
    std::vector<std::vector<int64_t>> maps(dims.size());
    std::vector<int64_t> begin(dims.size(), 0);
    for (size_t k = 0; k < axes.size(); ++k) begin[size_t(axes[k])] = pads[k];
    for (size_t a = 0; a < dims.size(); ++a) {
      int64_t d = x.dims()[a];
      if (d == 0 && dims[a] > 0 && mode != "constant")
        return ctx.error("cannot {}-pad an empty axis {}", mode, a);
      for (int64_t o = 0; o < dims[a]; ++o) maps[a].push_back(padSource(mode, o, begin[a], d));
    }
    auto strides = stridesOf(x.dims());
    std::vector<int64_t> idx(dims.size(), 0);
    for (int64_t e = 0; e < b.numElements(); ++e) {
      int64_t src = 0;
      for (size_t a = 0; a < dims.size() && src >= 0; ++a) {
        int64_t c = maps[a][size_t(idx[a])];
        src = c < 0 ? -1 : src + c * strides[a];
      }
      if (src >= 0)
        b.copy(e, x, src);
      else if (hasValue)
        b.copy(e, ctx.in(2), 0);
      for (size_t a = dims.size(); a-- > 0;) {
        if (++idx[a] < dims[a]) break;
        idx[a] = 0;
      }
    }
    KILN_ASSIGN_OR_RETURN(Tensor out, std::move(b).finish());
    return std::vector<Tensor>{std::move(out)};
  }
};

struct CenterCropPadOp {
  static constexpr std::string_view kName = "CenterCropPad";
  static OpSchema schema() { return {2, 2, 1, 1, {{"axes", AttrKind::Ints}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "shape"));
    const TensorType& in = ctx.in(0);
    if (!in.shape.rankKnown()) return single(in.dtype, Shape::unknownRank());
    const int64_t rank = in.shape.rank();
    std::vector<int64_t> attrAxes = ctx.node().attrInts("axes");
    KILN_ASSIGN_OR_RETURN(auto axes,
                          padAxes(ctx, ctx.node().hasAttr("axes") ? &attrAxes : nullptr, rank));
    auto sizes = knownInts(ctx, 1);
    Shape out = in.shape;
    if (sizes && sizes->size() != axes.size())
      return ctx.error("shape has {} values for {} axes", sizes->size(), axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      if (sizes && (*sizes)[k] < 0) return ctx.error("shape[{}] is negative", k);
      out.dims()[size_t(axes[k])] = sizes ? Dim::known((*sizes)[k]) : Dim::unknown();
    }
    return single(in.dtype, std::move(out));
  }
};

}  // namespace

void registerPadOps(OpRegistry& r) {
  r.add<PadOp>();
  r.add<CenterCropPadOp>();
}

}  // namespace kiln
