// Loss ops NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: per-element or reduced.
#include "dim_math.h"
#include "family_registration.h"

namespace kiln {
namespace {

using Types = Expected<std::vector<TensorType>>;

// Shared checks: scores [N, C, d1..dk], target [N, d1..dk] (integers), weight [C].
// Returns the unreduced loss shape [N, d1..dk].
Expected<Shape> lossShape(const InferContext& ctx) {
  KILN_RETURN_IF_ERROR(requireIntegerInput(ctx, 1, "target"));
  std::string red = ctx.node().attrString("reduction", "mean");
  if (red != "none" && red != "sum" && red != "mean")
    return ctx.error("reduction '{}' is not one of none, sum, mean", red);
  const Shape &x = ctx.in(0).shape, &t = ctx.in(1).shape;
  if (ctx.has(2) && ctx.in(2).dtype != ctx.in(0).dtype)
    return ctx.error("weight is {} but the input is {}", dtypeName(ctx.in(2).dtype),
                     dtypeName(ctx.in(0).dtype));
  if (!x.rankKnown()) return t;
  if (x.rank() < 2) return ctx.error("input must be [N, C, ...], got {}", toString(x));
  std::vector<Dim> out{x[0]};
  out.insert(out.end(), x.dims().begin() + 2, x.dims().end());
  if (t.rankKnown()) {
    if (t.rank() != x.rank() - 1)
      return ctx.error("target {} must have rank {} (the input's without C)", toString(t),
                       x.rank() - 1);
    for (size_t i = 0; i < out.size(); ++i) {
      auto u = unifyDim(out[i], t[i]);
      if (!u) return ctx.error("target {} does not match input {}", toString(t), toString(x));
      out[i] = *u;
    }
  }
  if (ctx.has(2) && ctx.in(2).shape.rankKnown() &&
      (ctx.in(2).shape.rank() != 1 || !unifyDim(ctx.in(2).shape[0], x[1])))
    return ctx.error("weight {} must be 1-D with C elements", toString(ctx.in(2).shape));
  return Shape(std::move(out));
}

struct NegativeLogLikelihoodLossOp {
  static constexpr std::string_view kName = "NegativeLogLikelihoodLoss";
  static OpSchema schema() {
    return {2, 3, 1, 1, {{"reduction", AttrKind::String}, {"ignore_index", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(Shape s, lossShape(ctx));
    bool none = ctx.node().attrString("reduction", "mean") == "none";
    return single(ctx.in(0).dtype, none ? s : Shape::scalar());
  }
};

struct SoftmaxCrossEntropyLossOp {
  static constexpr std::string_view kName = "SoftmaxCrossEntropyLoss";
  static OpSchema schema() {
    return {2, 3, 1, 2, {{"reduction", AttrKind::String}, {"ignore_index", AttrKind::Int}}};
  }
  static Types inferTypes(const InferContext& ctx) {
    KILN_ASSIGN_OR_RETURN(Shape s, lossShape(ctx));
    bool none = ctx.node().attrString("reduction", "mean") == "none";
    DType t = ctx.in(0).dtype;
    return std::vector<TensorType>{{t, none ? s : Shape::scalar()}, {t, ctx.in(0).shape}};
  }
};

}  // namespace

void registerLossOps(OpRegistry& r) {
  addIfAbsent<NegativeLogLikelihoodLossOp>(r);
  addIfAbsent<SoftmaxCrossEntropyLossOp>(r);
}

}  // namespace kiln
