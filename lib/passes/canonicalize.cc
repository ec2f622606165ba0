// Canonicalization: no-op removal, Constant → initializer, algebraic identities, and one
// normal form for equivalent spellings, so later passes match fewer shapes of the same thing.
// Every rewrite here is exact (bit-identical results) unless PassOptions::fastMath says
// otherwise; the one exception, x + 0 → x, can only change the sign of a zero.
#include <cmath>
#include <numeric>

#include "passes.h"

namespace kiln {
namespace {

using Ctx = PassContext;
using S = std::string;

bool sameType(const Value* a, const Value* b) {
  return a && b && isStatic(a) && isStatic(b) && a->type() == b->type();
}

bool isFloat(const Value* v) { return v->dtype() == DType::F32 || v->dtype() == DType::F64; }

// ---- no-ops ----

bool removeIdentity(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  return forwardTo(n, n.input(0), rw, p);
}

bool removeInferenceDropout(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (const Value* mode = n.input(2); mode && !isSplat(mode, 0))
    return rw.fail(p, n, "training_mode is not a constant false");
  return forwardTo(n, n.input(0), rw, p);
}

bool removeSameTypeOp(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (!sameType(n.input(0), n.output(0)))
    return rw.fail(p, n, "the output type differs from the input type");
  return forwardTo(n, n.input(0), rw, p);
}

bool removeNoOpCast(Node& n, Rewriter& rw, const Ctx& c, const S& p) {
  return removeSameTypeOp(n, rw, c, p);
}

bool removeNoOpTranspose(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  auto perm = n.attrInts("perm");
  const Value* x = n.input(0);
  if (!x->shape().rankKnown()) return rw.fail(p, n, "unknown rank");
  if (perm.empty() && x->shape().rank() > 1) return rw.fail(p, n, "default perm reverses axes");
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return rw.fail(p, n, "perm is not the identity");
  return forwardTo(n, n.input(0), rw, p);
}

bool removeNoOpSlice(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (!sameType(n.input(0), n.output(0))) return rw.fail(p, n, "the slice changes the shape");
  if (const Value* steps = n.input(4)) {
    const Tensor* t = constantOf(steps);
    if (!t) return rw.fail(p, n, "steps are not constant");
    for (int64_t i = 0; i < t->numElements(); ++i)
      if (t->intAt(i) <= 0) return rw.fail(p, n, "a negative step reverses an axis");
  }
  return forwardTo(n, n.input(0), rw, p);
}

bool removeNoOpPad(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (!isSplat(n.input(1), 0)) return rw.fail(p, n, "pads are not constant zeros");
  return forwardTo(n, n.input(0), rw, p);
}

bool removeNoOpTile(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (!isSplat(n.input(1), 1)) return rw.fail(p, n, "repeats are not constant ones");
  return forwardTo(n, n.input(0), rw, p);
}

bool removeSingleConcat(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (n.numInputs() != 1) return rw.fail(p, n, "more than one input");
  return forwardTo(n, n.input(0), rw, p);
}

bool constantToInitializer(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  const Attribute* a = n.attr("value");
  if (!a || a->kind() != AttrKind::Tensor) return rw.fail(p, n, "no tensor 'value' attribute");
  if (!rw.canReplace(n.output(0), nullptr))
    return rw.fail(p, n, "its output is a graph output, which an initializer cannot be");
  auto c = rw.constant(n.output(0)->name(), a->t());
  if (!c.ok()) return rw.fail(p, n, c.error().message());
  return rw.replaceNode(&n, {*c});
}

// ---- reshape and transpose chains ----

bool isReshapeLike(const Node* n) {
  if (!n || !n->domain().empty()) return false;
  const S& op = n->opType();
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

bool mergeReshapes(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  Node* prev = n.input(0)->producer();
  if (!isReshapeLike(prev)) return rw.fail(p, n, "the input is not produced by a reshape");
  if (!isStatic(n.output(0))) return rw.fail(p, n, "the output shape is not static");
  auto dims = dimsOf(n.output(0));
  auto shape = rw.constant(n.name() + "_shape", Tensor::fromVector(DType::I64, {int64_t(dims.size())}, dims));
  if (!shape.ok()) return rw.fail(p, n, shape.error().message());
  auto r = rw.create("Reshape", "", {prev->input(0), *shape}, {n.output(0)->type()}, n.name(),
                     {prev, &n});
  if (!r.ok()) return rw.fail(p, n, r.error().message());
  return rw.replaceNode(&n, {(*r)->output(0)});
}

bool mergeTransposes(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  Node* prev = n.input(0)->producer();
  if (!prev || prev->opType() != "Transpose" || !prev->domain().empty())
    return rw.fail(p, n, "the input is not produced by a Transpose");
  const Value* x = prev->input(0);
  if (!x->shape().rankKnown()) return rw.fail(p, n, "unknown rank");
  size_t rank = size_t(x->shape().rank());
  auto permOf = [rank](const Node& t) {
    auto perm = t.attrInts("perm");
    if (perm.empty())
      for (size_t i = 0; i < rank; ++i) perm.push_back(int64_t(rank - 1 - i));
    return perm;
  };
  auto p1 = permOf(*prev), p2 = permOf(n);
  if (p1.size() != rank || p2.size() != rank) return rw.fail(p, n, "perm rank mismatch");
  std::vector<int64_t> combined(rank);
  for (size_t i = 0; i < rank; ++i) combined[i] = p1[size_t(p2[i])];
  auto r = rw.create("Transpose", "", {prev->input(0)}, {n.output(0)->type()}, n.name(),
                     {prev, &n});
  if (!r.ok()) return rw.fail(p, n, r.error().message());
  (*r)->setAttr("perm", Attribute(combined));
  return rw.replaceNode(&n, {(*r)->output(0)});
}

// ---- algebra ----

/// Index of the operand that is a splat of `x` while the other operand alone already has the
/// output's type (so dropping the op changes neither shape nor dtype); -1 otherwise.
int neutralOperand(const Node& n, double x, bool commutative) {
  for (int i : {1, 0}) {
    if (i == 0 && !commutative) break;
    if (isSplat(n.input(size_t(i)), x) && sameType(n.input(size_t(1 - i)), n.output(0))) return i;
  }
  return -1;
}

bool dropNeutral(Node& n, Rewriter& rw, const S& p, double x, bool commutative) {
  int i = neutralOperand(n, x, commutative);
  if (i < 0) return rw.fail(p, n, fmt::format("no operand is a constant {} that keeps the type", x));
  return forwardTo(n, n.input(size_t(1 - i)), rw, p);
}

bool mulByOne(Node& n, Rewriter& rw, const Ctx&, const S& p) { return dropNeutral(n, rw, p, 1, true); }
bool addZero(Node& n, Rewriter& rw, const Ctx&, const S& p) { return dropNeutral(n, rw, p, 0, true); }
bool subZero(Node& n, Rewriter& rw, const Ctx&, const S& p) { return dropNeutral(n, rw, p, 0, false); }
bool divByOne(Node& n, Rewriter& rw, const Ctx&, const S& p) { return dropNeutral(n, rw, p, 1, false); }
bool powOne(Node& n, Rewriter& rw, const Ctx&, const S& p) { return dropNeutral(n, rw, p, 1, false); }

bool powTwo(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  if (!isSplat(n.input(1), 2) || !sameType(n.input(0), n.output(0)))
    return rw.fail(p, n, "the exponent is not a constant 2 that keeps the type");
  auto r = rw.create("Mul", "", {n.input(0), n.input(0)}, {n.output(0)->type()}, n.name(), {&n});
  if (!r.ok()) return rw.fail(p, n, r.error().message());
  return rw.replaceNode(&n, {(*r)->output(0)});
}

double negate(double x) { return -x; }
double reciprocal(double x) { return 1.0 / x; }

/// x - c → x + (-c): exact in IEEE arithmetic, and one form for bias-like constants.
bool subConstToAdd(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  const Tensor* c = constantOf(n.input(1));
  if (!c || !isFloat(n.input(1))) return rw.fail(p, n, "the subtrahend is not a float constant");
  auto neg = mapFloats(*c, negate);
  auto k = rw.constant(n.input(1)->name() + "_neg", *neg);
  if (!k.ok()) return rw.fail(p, n, k.error().message());
  auto r = rw.create("Add", "", {n.input(0), *k}, {n.output(0)->type()}, n.name(), {&n});
  if (!r.ok()) return rw.fail(p, n, r.error().message());
  return rw.replaceNode(&n, {(*r)->output(0)});
}

/// x / c → x * (1/c) where every 1/c is exact (c a power of two whose reciprocal is normal),
/// or for any c under fast math.
bool divConstToMul(Node& n, Rewriter& rw, const Ctx& ctx, const S& p) {
  const Tensor* c = constantOf(n.input(1));
  if (!c || !isFloat(n.input(1))) return rw.fail(p, n, "the divisor is not a float constant");
  auto recip = mapFloats(*c, reciprocal);
  if (!ctx.options.fastMath) {
    for (int64_t i = 0; i < c->numElements(); ++i) {
      double d = c->doubleAt(i), r = recip->doubleAt(i);
      int e = 0;
      if (!std::isfinite(d) || d == 0 || std::frexp(std::fabs(d), &e) != 0.5 || r * d != 1.0 ||
          std::fpclassify(float(r)) != FP_NORMAL)
        return rw.fail(p, n, "1/c is not exact for every element (use --fast-math)");
    }
  }
  auto k = rw.constant(n.input(1)->name() + "_recip", *recip);
  if (!k.ok()) return rw.fail(p, n, k.error().message());
  auto r = rw.create("Mul", "", {n.input(0), *k}, {n.output(0)->type()}, n.name(), {&n});
  if (!r.ok()) return rw.fail(p, n, r.error().message());
  return rw.replaceNode(&n, {(*r)->output(0)});
}

/// MatMul(A[M,K], B[K,N] constant) + c (constant [N] or [1,N]) → Gemm(A, B, c).
bool matmulAddToGemm(Node& n, Rewriter& rw, const Ctx&, const S& p) {
  for (int i : {0, 1}) {
    Node* mm = n.input(size_t(i))->producer();
    const Value* bias = n.input(size_t(1 - i));
    if (!mm || mm->opType() != "MatMul" || !mm->domain().empty()) continue;
    if (soleUser(mm->output(0)) != &n) continue;
    const Value *a = mm->input(0), *b = mm->input(1);
    if (!isStatic(a) || !isStatic(b) || a->shape().rank() != 2 || b->shape().rank() != 2 ||
        a->dtype() != DType::F32 || !constantOf(b))
      continue;
    int64_t N = dimsOf(b)[1];
    if (!constantOf(bias) || bias->dtype() != DType::F32) continue;
    auto bd = dimsOf(bias);
    if (!(bd == std::vector<int64_t>{N} || bd == std::vector<int64_t>{1, N})) continue;
    if (!sameType(mm->output(0), n.output(0))) continue;
    auto r = rw.create("Gemm", "", {mm->input(0), mm->input(1), n.input(size_t(1 - i))},
                       {n.output(0)->type()}, n.name(), {mm, &n});
    if (!r.ok()) return rw.fail(p, n, r.error().message());
    return rw.replaceNode(&n, {(*r)->output(0)});
  }
  return rw.fail(p, n, "not MatMul(2-D, constant 2-D) + constant bias of [N] or [1,N]");
}

struct Row {
  const char* name;
  const char* root;
  FnPattern::Fn fn;
};
const Row kPatterns[] = {
    {"remove-identity", "Identity", removeIdentity},
    {"remove-inference-dropout", "Dropout", removeInferenceDropout},
    {"remove-noop-cast", "Cast", removeNoOpCast},
    {"remove-noop-reshape", "Reshape", removeSameTypeOp},
    {"remove-noop-reshape", "Flatten", removeSameTypeOp},
    {"remove-noop-reshape", "Squeeze", removeSameTypeOp},
    {"remove-noop-reshape", "Unsqueeze", removeSameTypeOp},
    {"remove-noop-expand", "Expand", removeSameTypeOp},
    {"remove-noop-transpose", "Transpose", removeNoOpTranspose},
    {"remove-noop-slice", "Slice", removeNoOpSlice},
    {"remove-noop-pad", "Pad", removeNoOpPad},
    {"remove-noop-tile", "Tile", removeNoOpTile},
    {"remove-single-concat", "Concat", removeSingleConcat},
    {"constant-to-initializer", "Constant", constantToInitializer},
    {"merge-reshapes", "Reshape", mergeReshapes},
    {"merge-reshapes", "Flatten", mergeReshapes},
    {"merge-reshapes", "Squeeze", mergeReshapes},
    {"merge-reshapes", "Unsqueeze", mergeReshapes},
    {"merge-transposes", "Transpose", mergeTransposes},
    {"mul-by-one", "Mul", mulByOne},
    {"add-zero", "Add", addZero},
    {"sub-zero", "Sub", subZero},
    {"div-by-one", "Div", divByOne},
    {"pow-one", "Pow", powOne},
    {"pow-two", "Pow", powTwo},
    {"sub-const-to-add", "Sub", subConstToAdd},
    {"div-const-to-mul", "Div", divConstToMul},
    {"matmul-add-to-gemm", "Add", matmulAddToGemm},
};

class CanonicalizePass final : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }
  std::string_view summary() const override {
    return "removes no-op nodes, turns Constant into initializers, applies exact algebraic "
           "identities and merges reshape/transpose chains";
  }
  Expected<RewriteStats> run(Graph& g, PassContext& ctx) override {
    std::vector<std::unique_ptr<RewritePattern>> patterns;
    for (const Row& r : kPatterns) patterns.push_back(std::make_unique<FnPattern>(r.name, r.root, r.fn, ctx));
    Rewriter rw(g);
    rw.setTrace(ctx.trace);
    KILN_RETURN_IF_ERROR(applyPatternsGreedily(g, patterns, rw).status());
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }

}  // namespace kiln
