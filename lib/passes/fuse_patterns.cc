// Pattern fusions: decomposed forms exporters produce, recognized and replaced by the op
// they spell, which has its own kernel:
//   x * 0.5 * (1 + erf(x / sqrt 2))   (either association) → Gelu(x)
//   x * HardSigmoid(x; 1/6, 0.5)                          → HardSwish(x)
//   x * clip(x + 3, 0, 6) / 6   (either association)        → HardSwish(x)
// the normalization patterns of fuse_norm_patterns.cc (Softmax, LayerNormalization, Gelu's
// tanh form) and the attention pattern of fuse_attention.cc.
#include <algorithm>
#include <cmath>

#include "passes.h"

namespace kiln {
namespace {

/// For v = 1 + erf(x / sqrt 2) (or x * (1/sqrt 2)), returns x.
Value* erfPart(const Value* v) {
  const Node* add = soleProducer(v, "Add");
  if (!add) return nullptr;
  for (int i : {0, 1}) {
    if (!splatNear(add->input(size_t(i)), 1.0)) continue;
    const Node* erf = soleProducer(add->input(size_t(1 - i)), "Erf");
    if (!erf) continue;
    const Value* s = erf->input(0);
    if (const Node* d = soleProducer(s, "Div"); d && splatNear(d->input(1), std::sqrt(2.0)))
      return d->input(0);
    if (const Node* m = soleProducer(s, "Mul"))
      for (int j : {0, 1})
        if (splatNear(m->input(size_t(j)), 1.0 / std::sqrt(2.0))) return m->input(size_t(1 - j));
  }
  return nullptr;
}

bool replaceWith(Node& root, const char* op, Value* x, Rewriter& rw, const std::string& p) {
  if (x->type() != root.output(0)->type()) return rw.fail(p, root, "the type changes");
  std::vector<const Node*> matched;
  collectMatched(&root, x, matched);
  std::reverse(matched.begin(), matched.end());
  auto n = rw.create(op, "", {x}, {root.output(0)->type()}, root.name(), matched);
  if (!n.ok()) return rw.fail(p, root, n.error().message());
  return rw.replaceNode(&root, {(*n)->output(0)});
}

bool fuseGelu(Node& n, Rewriter& rw, const PassContext&, const std::string& p) {
  if (n.output(0)->dtype() != DType::F32) return rw.fail(p, n, "not f32");
  for (int i : {0, 1}) {
    const Value* a = n.input(size_t(i));
    const Value* b = n.input(size_t(1 - i));
    // (x * 0.5) * (1 + erf(x / sqrt 2))
    if (Value* x = erfPart(b); x && timesConstant(a, 0.5) == x) return replaceWith(n, "Gelu", x, rw, p);
    // (x * (1 + erf(x / sqrt 2))) * 0.5
    if (splatNear(b, 0.5)) {
      if (const Node* m = soleProducer(a, "Mul"))
        for (int j : {0, 1})
          if (Value* x = erfPart(m->input(size_t(j))); x && m->input(size_t(1 - j)) == x)
            return replaceWith(n, "Gelu", x, rw, p);
    }
  }
  return rw.fail(p, n, "not x * 0.5 * (1 + erf(x / sqrt 2))");
}

/// For v = clip(x + 3, 0, 6), returns x.
Value* relu6OfXPlus3(const Value* v) {
  const Node* clip = soleProducer(v, "Clip");
  if (!clip || clip->numInputs() != 3 || !splatNear(clip->input(1), 0.0) ||
      !splatNear(clip->input(2), 6.0))
    return nullptr;
  const Node* add = soleProducer(clip->input(0), "Add");
  if (!add) return nullptr;
  for (int i : {0, 1})
    if (splatNear(add->input(size_t(i)), 3.0)) return add->input(size_t(1 - i));
  return nullptr;
}

/// Div(x * clip(x + 3, 0, 6), 6) → HardSwish(x).
bool fuseHardSwishDiv(Node& n, Rewriter& rw, const PassContext&, const std::string& p) {
  const Node* m = splatNear(n.input(1), 6.0) ? soleProducer(n.input(0), "Mul") : nullptr;
  if (m)
    for (int i : {0, 1})
      if (Value* x = relu6OfXPlus3(m->input(size_t(i))); x && m->input(size_t(1 - i)) == x)
        return replaceWith(n, "HardSwish", x, rw, p);
  return rw.fail(p, n, "not (x * clip(x + 3, 0, 6)) / 6");
}

bool fuseHardSwish(Node& n, Rewriter& rw, const PassContext&, const std::string& p) {
  for (int i : {0, 1}) {  // x * (clip(x + 3, 0, 6) / 6)
    const Node* d = soleProducer(n.input(size_t(i)), "Div");
    if (!d || !splatNear(d->input(1), 6.0)) continue;
    if (Value* x = relu6OfXPlus3(d->input(0)); x && n.input(size_t(1 - i)) == x)
      return replaceWith(n, "HardSwish", x, rw, p);
  }
  for (int i : {0, 1}) {
    const Node* hs = soleProducer(n.input(size_t(i)), "HardSigmoid");
    if (!hs || hs->input(0) != n.input(size_t(1 - i))) continue;
    if (!nearValue(hs->attrFloat("alpha", 0.2f), 1.0 / 6) || !nearValue(hs->attrFloat("beta", 0.5f), 0.5))
      continue;
    return replaceWith(n, "HardSwish", n.input(size_t(1 - i)), rw, p);
  }
  return rw.fail(p, n, "not x * HardSigmoid(x) with alpha 1/6 and beta 0.5");
}

class FusePatternsPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-patterns"; }
  std::string_view summary() const override {
    return "recognizes decomposed Gelu (erf and tanh forms), HardSwish (x*HardSigmoid(x), "
           "x*clip(x+3,0,6)/6), Softmax, LayerNormalization and attention (MatMul(Softmax(Q*s KT "
           "+ mask), V) -> kiln.Attention) and replaces them by the op";
  }
  Expected<RewriteStats> run(Graph& g, PassContext& ctx) override {
    std::vector<std::unique_ptr<RewritePattern>> patterns;
    patterns.push_back(std::make_unique<FnPattern>("fuse-gelu", "Mul", fuseGelu, ctx));
    patterns.push_back(std::make_unique<FnPattern>("fuse-hardswish", "Mul", fuseHardSwish, ctx));
    patterns.push_back(std::make_unique<FnPattern>("fuse-hardswish", "Div", fuseHardSwishDiv, ctx));
    addNormalizationPatterns(patterns, ctx);
    addAttentionPattern(patterns, ctx);
    Rewriter rw(g);
    rw.setTrace(ctx.trace);
    KILN_RETURN_IF_ERROR(applyPatternsGreedily(g, patterns, rw).status());
    // The matched subtrees are now unread; dce removes them.
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFusePatternsPass() { return std::make_unique<FusePatternsPass>(); }

}  // namespace kiln
