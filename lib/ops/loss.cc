// Loss ops NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: per-element or reduced.
#include "ref/loss.h"
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

/// The reduction attribute as kiln_ref::LossReduction.
int reductionOf(const Node& n) {
  std::string red = n.attrString("reduction", "mean");
  return red == "none" ? kiln_ref::kLossNone
                       : (red == "sum" ? kiln_ref::kLossSum : kiln_ref::kLossMean);
}

template <typename T, typename I>
Status evalLoss(const EvalContext& ctx, std::vector<Tensor>& outs, bool sce) {
  const Tensor &x = ctx.in(0), &target = ctx.in(1);
  const int64_t N = x.dims()[0], C = x.dims()[1];
  const int64_t D = N * C == 0 ? 0 : x.numElements() / (N * C);
  const Node& n = ctx.node();
  const int reduction = reductionOf(n);
  std::vector<int64_t> lossDims;
  if (reduction == kiln_ref::kLossNone) lossDims = target.dims();
  KILN_ASSIGN_OR_RETURN(Tensor loss, Tensor::zeros(x.dtype(), lossDims));
  Tensor logProb;
  if (sce) {
    KILN_ASSIGN_OR_RETURN(logProb, Tensor::zeros(x.dtype(), x.dims()));
  }
  const T* weight = ctx.has(2) ? ctx.in(2).data<T>() : nullptr;
  const int hasIgnore = n.hasAttr("ignore_index") ? 1 : 0;
  const int64_t ignore = n.attrInt("ignore_index", 0);
  int rc = sce ? kiln_ref::softmax_cross_entropy_loss<T, I>(
                     N, C, D, x.data<T>(), target.data<I>(), weight, reduction, hasIgnore, ignore,
                     loss.mutableData<T>(), logProb.mutableData<T>())
               : kiln_ref::nll_loss<T, I>(N, C, D, x.data<T>(), target.data<I>(), weight, reduction,
                                          hasIgnore, ignore, loss.mutableData<T>());
  if (rc != 0) return ctx.error("a target is outside [0, {}) and is not ignore_index", C);
  outs.push_back(std::move(loss));
  if (sce) outs.push_back(std::move(logProb));
  return Status();
}

/// Reference evaluation of both losses (f32/f64 scores, i32/i64 targets).
Expected<std::vector<Tensor>> evaluateLoss(const EvalContext& ctx, bool sce) {
  const Tensor &x = ctx.in(0), &target = ctx.in(1);
  if (x.rank() < 2 || target.rank() != x.rank() - 1 || target.dims()[0] != x.dims()[0] ||
      (ctx.has(2) && (ctx.in(2).dtype() != x.dtype() || ctx.in(2).numElements() != x.dims()[1])))
    return ctx.error("scores, target and weight shapes do not match");
  for (int64_t i = 2; i < x.rank(); ++i)
    if (target.dims()[size_t(i - 1)] != x.dims()[size_t(i)])
      return ctx.error("scores, target and weight shapes do not match");
  std::vector<Tensor> outs;
  Status s;
  const bool i64 = target.dtype() == DType::I64;
  if (!i64 && target.dtype() != DType::I32)
    return ctx.error("no compile-time evaluation for {} targets", dtypeName(target.dtype()));
  if (x.dtype() == DType::F32)
    s = i64 ? evalLoss<float, int64_t>(ctx, outs, sce) : evalLoss<float, int32_t>(ctx, outs, sce);
  else if (x.dtype() == DType::F64)
    s = i64 ? evalLoss<double, int64_t>(ctx, outs, sce) : evalLoss<double, int32_t>(ctx, outs, sce);
  else
    return ctx.error("no compile-time evaluation for {}", dtypeName(x.dtype()));
  KILN_RETURN_IF_ERROR(s);
  return outs;
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
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    return evaluateLoss(ctx, false);
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
  static Expected<std::vector<Tensor>> evaluate(const EvalContext& ctx) {
    return evaluateLoss(ctx, true);
  }
};

}  // namespace

void registerLossOps(OpRegistry& r) {
  addIfAbsent<NegativeLogLikelihoodLossOp>(r);
  addIfAbsent<SoftmaxCrossEntropyLossOp>(r);
}

}  // namespace kiln
