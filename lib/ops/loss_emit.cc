// Emit facets for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: one checked call of
// kernels/ref/loss.h (a target out of range is a data error at run time).
#include "emit_support.h"

namespace kiln {
namespace {

Status emitLoss(const Node& n, EmitContext& ctx) {
  const bool sce = n.opType() == "SoftmaxCrossEntropyLoss";
  DType t = n.input(0)->dtype(), it = n.input(1)->dtype();
  if (t != DType::F32 && t != DType::F64)
    return ctx.unsupported(fmt::format("{} on {} scores", n.opType(), dtypeName(t)));
  if (it != DType::I32 && it != DType::I64)
    return ctx.unsupported(fmt::format("{} with {} targets", n.opType(), dtypeName(it)));
  auto x = staticDims(n.input(0));
  if (x.size() < 2) return ctx.unsupported(fmt::format("{} on a tensor of rank < 2", n.opType()));
  const std::string T(cTypeOf(t)), I(cTypeOf(it));
  const bool hasWeight = n.numInputs() > 2 && n.input(2);
  if (hasWeight && (n.input(2)->dtype() != t || staticNumel(n.input(2)) != x[1]))
    return ctx.unsupported(fmt::format("{} weight of another type or size", n.opType()));
  std::string red = n.attrString("reduction", "mean");
  int reduction = red == "none" ? 0 : (red == "sum" ? 1 : 2);  // kiln_ref::LossReduction
  std::string weight = hasWeight ? ctx.input(2) : "static_cast<const " + T + "*>(nullptr)";
  std::string ignore = intListLiteral({n.attrInt("ignore_index", 0)});  // "{v}"
  std::string common =
      fmt::format("{}, {}, {}, {}, {}, {}, {}, {}, int64_t({})", x[0], x[1],
                  dimsProduct(x, 2, x.size()), ctx.input(0), ctx.input(1), weight, reduction,
                  n.hasAttr("ignore_index") ? 1 : 0, ignore.substr(1, ignore.size() - 2));
  ctx.useHeader("kiln_ref/loss.h");
  if (!sce) {
    callChecked(ctx, "kiln_ref::nll_loss",
                fmt::format("kiln_ref::nll_loss<{}, {}>({}, {})", T, I, common, ctx.output(0)));
    return Status();
  }
  const bool logProb = n.numOutputs() > 1 && n.output(1);
  callChecked(
      ctx, "kiln_ref::softmax_cross_entropy_loss",
      fmt::format("kiln_ref::softmax_cross_entropy_loss<{}, {}>({}, {}, {})", T, I, common,
                  ctx.output(0), logProb ? ctx.output(1) : "static_cast<" + T + "*>(nullptr)"));
  return Status();
}

}  // namespace

void attachLossEmitters(OpRegistry& r) {
  r.setEmit("", "NegativeLogLikelihoodLoss", emitLoss);
  r.setEmit("", "SoftmaxCrossEntropyLoss", emitLoss);
}

}  // namespace kiln
