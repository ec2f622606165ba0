// Gather, GatherElements, GatherND, ScatterElements, Scatter and ScatterND.
#include "dim_math.h"
#include "family_registration.h"
#include "tensor_copy.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;
using Tensors = Expected<std::vector<Tensor>>;

struct GatherOp {
  static constexpr std::string_view kName = "Gather";
  static OpSchema schema() { return {2, 2, 1, 1, {{"axis", AttrKind::Int}}}; }
  // Bounds-checked, non-negative index, or an error naming the bad index.
  template <typename Ctx>
  static Expected<int64_t> index(const Ctx& ctx, int64_t v, int64_t dim) {
    if (v < -dim || v >= dim)
      return ctx.error("index {} is out of range for an axis of size {}", v, dim);
    return v < 0 ? v + dim : v;
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "indices"));
    const TensorType& data = ctx.in(0);
    const Shape& idx = ctx.in(1).shape;
    if (!data.shape.rankKnown() || !idx.rankKnown())
      return single(data.dtype, Shape::unknownRank());
    if (data.shape.rank() == 0) return ctx.error("data must have rank >= 1");
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.shape.rank()));
    const Dim& axisDim = data.shape[size_t(axis)];
    if (auto vals = knownInts(ctx, 1); vals && axisDim.isStatic())
      for (int64_t v : *vals) KILN_RETURN_IF_ERROR(index(ctx, v, axisDim.value).status());
    std::vector<Dim> out(data.shape.dims().begin(), data.shape.dims().begin() + axis);
    out.insert(out.end(), idx.dims().begin(), idx.dims().end());
    out.insert(out.end(), data.shape.dims().begin() + axis + 1, data.shape.dims().end());
    return single(data.dtype, Shape(std::move(out)));
  }
  static Tensors evaluate(const EvalContext& ctx) {
    KILN_RETURN_IF_ERROR(requireInputs(ctx, 2));
    const Tensor &x = ctx.in(0), &indices = ctx.in(1);
    int64_t r = x.rank(), axis = ctx.node().attrInt("axis", 0);
    if (r == 0 || axis < -r || axis >= r)
      return ctx.error("axis {} is out of range for rank {}", axis, r);
    if (axis < 0) axis += r;
    if (!isInteger(indices.dtype())) return ctx.error("indices must be integers");
    std::vector<int64_t> dims(x.dims().begin(), x.dims().begin() + axis);
    dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
    dims.insert(dims.end(), x.dims().begin() + axis + 1, x.dims().end());
    int64_t outer = 1, inner = 1, axisLen = x.dims()[size_t(axis)];
    for (int64_t d = 0; d < axis; ++d) outer *= x.dims()[size_t(d)];
    for (int64_t d = axis + 1; d < r; ++d) inner *= x.dims()[size_t(d)];
    KILN_ASSIGN_OR_RETURN(TensorBuilder b, TensorBuilder::create(x.dtype(), dims));
    const int64_t n = indices.numElements();
    for (int64_t j = 0; j < n; ++j) {
      KILN_ASSIGN_OR_RETURN(int64_t k, index(ctx, indices.intAt(j), axisLen));
      for (int64_t o = 0; o < outer; ++o)
        b.copy((o * n + j) * inner, x, (o * axisLen + k) * inner, inner);
    }
    KILN_ASSIGN_OR_RETURN(Tensor out, std::move(b).finish());
    return std::vector<Tensor>{std::move(out)};
  }
};

struct GatherElementsOp {
  static constexpr std::string_view kName = "GatherElements";
  static OpSchema schema() { return {2, 2, 1, 1, {{"axis", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "indices"));
    const TensorType& data = ctx.in(0);
    const Shape& idx = ctx.in(1).shape;
    if (data.shape.rankKnown() && idx.rankKnown()) {
      if (data.shape.rank() != idx.rank())
        return ctx.error("data has rank {} but indices rank {}; they must match", data.shape.rank(),
                         idx.rank());
      KILN_RETURN_IF_ERROR(
          normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.shape.rank()).status());
    }
    return single(data.dtype, idx);
  }
};

struct GatherNDOp {
  static constexpr std::string_view kName = "GatherND";
  static OpSchema schema() { return {2, 2, 1, 1, {{"batch_dims", AttrKind::Int}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "indices"));
    const TensorType& data = ctx.in(0);
    const Shape& idx = ctx.in(1).shape;
    if (!data.shape.rankKnown() || !idx.rankKnown())
      return single(data.dtype, Shape::unknownRank());
    int64_t r = data.shape.rank(), q = idx.rank(), b = ctx.node().attrInt("batch_dims", 0);
    if (r < 1 || q < 1) return ctx.error("data and indices must have rank >= 1");
    if (b < 0 || b >= std::min(r, q))
      return ctx.error("batch_dims {} must be in [0, {})", b, std::min(r, q));
    const Dim& last = idx[size_t(q - 1)];
    if (!last.isStatic()) return single(data.dtype, Shape::unknownRank());
    int64_t k = last.value;
    if (k < 1 || k > r - b)
      return ctx.error("indices' last dim is {}; it must be in [1, {}]", k, r - b);
    for (int64_t i = 0; i < b; ++i)
      if (!unifyDim(data.shape[size_t(i)], idx[size_t(i)]))
        return ctx.error("batch dim {} differs between data ({}) and indices ({})", i,
                         data.shape[size_t(i)].value, idx[size_t(i)].value);
    std::vector<Dim> out(idx.dims().begin(), idx.dims().end() - 1);
    out.insert(out.end(), data.shape.dims().begin() + b + k, data.shape.dims().end());
    return single(data.dtype, Shape(std::move(out)));
  }
};

// ScatterElements and its deprecated alias Scatter: data with updates written at indices.
template <bool kAlias>
struct ScatterElementsOp {
  static constexpr std::string_view kName = kAlias ? "Scatter" : "ScatterElements";
  static OpSchema schema() {
    return {3, 3, 1, 1, {{"axis", AttrKind::Int}, {"reduction", AttrKind::String}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "indices"));
    const TensorType& data = ctx.in(0);
    const Shape &idx = ctx.in(1).shape, &upd = ctx.in(2).shape;
    if (ctx.in(2).dtype != data.dtype)
      return ctx.error("updates are {} but data is {}", dtypeName(ctx.in(2).dtype),
                       dtypeName(data.dtype));
    std::string red = ctx.node().attrString("reduction", "none");
    if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
      return ctx.error("reduction '{}' is not one of none, add, mul, max, min", red);
    if (idx.rankKnown() && upd.rankKnown()) {
      if (idx.rank() != upd.rank())
        return ctx.error("indices {} and updates {} must have the same shape", toString(idx),
                         toString(upd));
      for (size_t i = 0; i < idx.dims().size(); ++i)
        if (!unifyDim(idx[i], upd[i]))
          return ctx.error("indices {} and updates {} must have the same shape", toString(idx),
                           toString(upd));
    }
    if (data.shape.rankKnown()) {
      if (idx.rankKnown() && idx.rank() != data.shape.rank())
        return ctx.error("indices have rank {} but data has rank {}", idx.rank(),
                         data.shape.rank());
      KILN_RETURN_IF_ERROR(
          normalizeAxis(ctx, ctx.node().attrInt("axis", 0), data.shape.rank()).status());
    }
    return single(data.dtype, data.shape);
  }
};

struct ScatterNDOp {
  static constexpr std::string_view kName = "ScatterND";
  static OpSchema schema() { return {3, 3, 1, 1, {{"reduction", AttrKind::String}}}; }
  static Types inferTypes(const InferContext& ctx) {
    KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "indices"));
    const TensorType& data = ctx.in(0);
    if (ctx.in(2).dtype != data.dtype)
      return ctx.error("updates are {} but data is {}", dtypeName(ctx.in(2).dtype),
                       dtypeName(data.dtype));
    std::string red = ctx.node().attrString("reduction", "none");
    if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
      return ctx.error("reduction '{}' is not one of none, add, mul, max, min", red);
    const Shape &idx = ctx.in(1).shape, &upd = ctx.in(2).shape;
    if (data.shape.rankKnown() && idx.rankKnown() && upd.rankKnown() && idx.rank() >= 1 &&
        idx[size_t(idx.rank() - 1)].isStatic()) {
      // updates.shape == indices.shape[:-1] + data.shape[k:]
      int64_t k = idx[size_t(idx.rank() - 1)].value, r = data.shape.rank(), q = idx.rank();
      if (k > r) return ctx.error("indices' last dim {} exceeds the data rank {}", k, r);
      if (upd.rank() != q - 1 + r - k)
        return ctx.error("updates have rank {}, expected {}", upd.rank(), q - 1 + r - k);
    }
    return single(data.dtype, data.shape);
  }
};

}  // namespace

void registerGatherScatterOps(OpRegistry& r) {
  r.add<GatherOp>();
  r.add<GatherElementsOp>();
  r.add<GatherNDOp>();
  r.add<ScatterElementsOp<false>>();
  r.add<ScatterElementsOp<true>>();
  r.add<ScatterNDOp>();
}

}  // namespace kiln
