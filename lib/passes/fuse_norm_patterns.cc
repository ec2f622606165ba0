// Normalization patterns of fuse-patterns: the decomposed forms torch and TF exporters write
// for ops that have their own kernel.
//   Exp(x - ReduceMax(x, a)) / ReduceSum(Exp(...), a)       → Softmax(x, axis a)
//   Exp(x) / ReduceSum(Exp(x), a)                           → Softmax(x, axis a)
//   d = x - ReduceMean(x, A); d / Sqrt(ReduceMean(d², A) + eps) [* gamma [+ beta]]
//                                                           → LayerNormalization(x, gamma, beta)
//   x * 0.5 * (1 + tanh(sqrt(2/π) * (x + 0.044715 x³)))     → Gelu(x, approximate = "tanh")
// Softmax and LayerNormalization compute the same function in a different order (and Softmax
// without the max subtraction no longer overflows), so results change in the last bits.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "passes.h"

namespace kiln {
namespace {

/// The reduced axes of a keepdims Reduce* node over a value of rank `rank`: sorted, normalized;
/// nullopt when they are not a constant, non-empty list or keepdims is 0.
std::optional<std::vector<int64_t>> keptAxes(const Node& r, int64_t rank) {
  if (r.attrInt("keepdims", 1) != 1 || r.numInputs() < 2) return std::nullopt;
  const Tensor* t = constantOf(r.input(1));
  if (!t || t->numElements() == 0) return std::nullopt;
  std::vector<int64_t> axes = t->toInts();
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return std::nullopt;
  return axes;
}

int64_t rankOf(const Value* v) { return v->shape().rankKnown() ? v->shape().rank() : -1; }

bool isF32(const Value* v) { return v && v->dtype() == DType::F32; }

/// Appends `extra` to `sources` (provenance: every node the fused op stands for).
void addSources(std::vector<const Node*>& sources, std::initializer_list<const Node*> extra) {
  for (const Node* n : extra)
    if (n) sources.push_back(n);
}

/// Div(Exp(z), ReduceSum(Exp(z), a)) with z = x - ReduceMax(x, a) or z = x → Softmax(x, a).
bool fuseSoftmax(Node& div, Rewriter& rw, const PassContext&, const std::string& p) {
  Value* e = div.input(0);
  const Node* exp = e->producer();
  if (!isF32(e) || !exp || !exp->domain().empty() || exp->opType() != "Exp")
    return rw.fail(p, div, "the dividend is not an f32 Exp");
  const Node* sum = soleProducer(div.input(1), "ReduceSum");
  if (!sum || sum->input(0) != e) return rw.fail(p, div, "the divisor is not ReduceSum of the Exp");
  if (e->uses().size() != 2) return rw.fail(p, div, "the Exp has other readers");
  const int64_t rank = rankOf(e);
  auto axes = rank > 0 ? keptAxes(*sum, rank) : std::nullopt;
  if (!axes || axes->size() != 1) return rw.fail(p, div, "ReduceSum is not over one kept axis");
  Value* x = exp->input(0);
  std::vector<const Node*> sources{exp, sum};
  if (const Node* sub = soleProducer(x, "Sub")) {
    const Node* max = soleProducer(sub->input(1), "ReduceMax");
    if (max && max->input(0) == sub->input(0)) {
      auto maxAxes = keptAxes(*max, rank);
      if (!maxAxes || *maxAxes != *axes) return rw.fail(p, div, "ReduceMax is over other axes");
      addSources(sources, {max, sub});
      x = sub->input(0);
    }
  }
  if (x->type() != div.output(0)->type()) return rw.fail(p, div, "the type changes");
  sources.push_back(&div);
  auto n = rw.create("Softmax", "", {x}, {div.output(0)->type()}, div.name(), sources);
  if (!n.ok()) return rw.fail(p, div, n.error().message());
  (*n)->setAttr("axis", Attribute(axes->front()));
  return rw.replaceNode(&div, {(*n)->output(0)});
}

/// True when `c` is a constant that broadcasts into the trailing dims `normalized` without
/// widening them (LayerNormalization's Scale and B).
bool fitsNormalized(const Value* c, const std::vector<int64_t>& normalized) {
  const Tensor* t = constantOf(c);
  if (!t || t->dtype() != DType::F32 || t->dims().size() > normalized.size()) return false;
  const auto& d = t->dims();
  for (size_t i = 0; i < d.size(); ++i) {
    int64_t want = normalized[normalized.size() - d.size() + i];
    if (d[i] != 1 && d[i] != want) return false;
  }
  return true;
}

/// The constant operand of a Mul/Add `n` whose other operand is `v`, or null.
Value* otherConstant(const Node* n, const Value* v) {
  if (!n) return nullptr;
  for (int i : {0, 1})
    if (n->input(size_t(i)) == v && constantOf(n->input(size_t(1 - i))))
      return n->input(size_t(1 - i));
  return nullptr;
}

/// Div(d, Sqrt(ReduceMean(d², A) + eps)) with d = x - ReduceMean(x, A), A the trailing axes,
/// then an optional * gamma and + beta → LayerNormalization(x, gamma, beta).
bool fuseLayerNorm(Node& div, Rewriter& rw, const PassContext&, const std::string& p) {
  Value* d = div.input(0);
  const Node* sub = d->producer();
  if (!isF32(d) || !sub || !sub->domain().empty() || sub->opType() != "Sub")
    return rw.fail(p, div, "the dividend is not an f32 Sub");
  Value* x = sub->input(0);
  const Node* mean = soleProducer(sub->input(1), "ReduceMean");
  if (!mean || mean->input(0) != x) return rw.fail(p, div, "not x - ReduceMean(x)");
  const int64_t rank = rankOf(x);
  if (rank < 1 || !isStatic(x)) return rw.fail(p, div, "x has no static shape");
  auto axes = keptAxes(*mean, rank);
  if (!axes || axes->back() != rank - 1 || axes->front() != rank - int64_t(axes->size()))
    return rw.fail(p, div, "the mean is not over the trailing axes");
  const Node* sqrt = soleProducer(div.input(1), "Sqrt");
  const Node* addEps = sqrt ? soleProducer(sqrt->input(0), "Add") : nullptr;
  if (!addEps) return rw.fail(p, div, "the divisor is not Sqrt(... + eps)");
  Value* epsValue = otherConstant(addEps, addEps->input(0)) ? addEps->input(1) : addEps->input(0);
  const Node* var = soleProducer(epsValue == addEps->input(1) ? addEps->input(0)
                                                               : addEps->input(1),
                                 "ReduceMean");
  const Tensor* eps = constantOf(epsValue);
  if (!var || !eps || eps->numElements() != 1 || eps->dtype() != DType::F32)
    return rw.fail(p, div, "the divisor is not Sqrt(ReduceMean(...) + eps)");
  if (keptAxes(*var, rank) != axes) return rw.fail(p, div, "the variance is over other axes");
  const Node* sq = soleProducer(var->input(0), "Pow");
  if (sq ? !(sq->input(0) == d && splatNear(sq->input(1), 2.0)) : true) {
    sq = soleProducer(var->input(0), "Mul");
    if (!sq || sq->input(0) != d || sq->input(1) != d)
      return rw.fail(p, div, "the variance does not read (x - mean)²");
  }
  // x - mean is read by the square (once as Pow, twice as Mul) and the Div, nothing else.
  if (d->uses().size() != (sq->opType() == "Mul" ? 3u : 2u))
    return rw.fail(p, div, "x - mean has other readers");
  if (div.output(0)->type() != x->type()) return rw.fail(p, div, "the type changes");
  std::vector<int64_t> dims = dimsOf(x);
  std::vector<int64_t> normalized(dims.end() - long(axes->size()), dims.end());
  std::vector<const Node*> sources{mean, sub, sq, var, addEps, sqrt, &div};
  // Absorb "* gamma" and "+ beta" when they are per-element constants of the normalized dims.
  Node* last = &div;
  Value* gamma = nullptr;
  Value* beta = nullptr;
  if (Node* mul = soleUser(div.output(0)); mul && mul->domain().empty() && mul->opType() == "Mul")
    if (Value* g = otherConstant(mul, div.output(0));
        g && fitsNormalized(g, normalized) && mul->output(0)->type() == x->type()) {
      gamma = g;
      last = mul;
      sources.push_back(mul);
    }
  if (gamma)
    if (Node* add = soleUser(last->output(0)); add && add->domain().empty() && add->opType() == "Add")
      if (Value* b = otherConstant(add, last->output(0));
          b && fitsNormalized(b, normalized) && add->output(0)->type() == x->type()) {
        beta = b;
        last = add;
        sources.push_back(add);
      }
  if (!gamma) {
    int64_t count = 1;
    for (int64_t dim : normalized) count *= dim;
    auto ones = rw.constant(div.name() + "_scale",
                            Tensor::fromVector(DType::F32, normalized,
                                               std::vector<float>(size_t(count), 1.0f)));
    if (!ones.ok()) return rw.fail(p, div, ones.error().message());
    gamma = *ones;
  }
  std::vector<Value*> inputs{x, gamma};
  if (beta) inputs.push_back(beta);
  auto n = rw.create("LayerNormalization", "", inputs, {x->type()}, last->name(), sources);
  if (!n.ok()) return rw.fail(p, div, n.error().message());
  (*n)->setAttr("axis", Attribute(axes->front()));
  (*n)->setAttr("epsilon", Attribute(float(eps->doubleAt(0))));
  return rw.replaceNode(last, {(*n)->output(0)});
}

/// For v = x³ (Pow(x, 3), x*x*x in either association), returns x.
Value* cubeOf(const Value* v) {
  if (const Node* pow = soleProducer(v, "Pow"); pow && splatNear(pow->input(1), 3.0))
    return pow->input(0);
  const Node* m = soleProducer(v, "Mul");
  if (!m) return nullptr;
  for (int i : {0, 1}) {
    const Node* sq = soleProducer(m->input(size_t(i)), "Mul");
    Value* x = m->input(size_t(1 - i));
    if (sq && sq->input(0) == x && sq->input(1) == x) return x;
  }
  return nullptr;
}

/// For v = 1 + tanh(sqrt(2/π) * (x + 0.044715 * x³)), returns x.
Value* tanhPart(const Value* v) {
  const Node* add = soleProducer(v, "Add");
  if (!add) return nullptr;
  for (int i : {0, 1}) {
    if (!splatNear(add->input(size_t(i)), 1.0)) continue;
    const Node* tanh = soleProducer(add->input(size_t(1 - i)), "Tanh");
    const Node* scale = tanh ? soleProducer(tanh->input(0), "Mul") : nullptr;
    if (!scale) continue;
    for (int j : {0, 1}) {
      if (!splatNear(scale->input(size_t(j)), std::sqrt(2.0 / std::numbers::pi))) continue;
      const Node* inner = soleProducer(scale->input(size_t(1 - j)), "Add");
      if (!inner) continue;
      for (int k : {0, 1}) {
        Value* x = inner->input(size_t(k));
        const Node* c = soleProducer(inner->input(size_t(1 - k)), "Mul");
        if (!c) continue;
        for (int l : {0, 1})
          if (splatNear(c->input(size_t(l)), 0.044715) && cubeOf(c->input(size_t(1 - l))) == x)
            return x;
      }
    }
  }
  return nullptr;
}

bool fuseGeluTanh(Node& n, Rewriter& rw, const PassContext&, const std::string& p) {
  if (!isF32(n.output(0))) return rw.fail(p, n, "not f32");
  Value* x = nullptr;
  for (int i : {0, 1}) {
    const Value* a = n.input(size_t(i));
    const Value* b = n.input(size_t(1 - i));
    if (Value* t = tanhPart(b); t && timesConstant(a, 0.5) == t) x = t;  // (x*0.5) * (1+tanh)
    if (const Node* m = splatNear(b, 0.5) ? soleProducer(a, "Mul") : nullptr)  // (x*(1+tanh))*0.5
      for (int j : {0, 1})
        if (Value* t = tanhPart(m->input(size_t(j))); t && m->input(size_t(1 - j)) == t) x = t;
    if (x) break;
  }
  if (!x) return rw.fail(p, n, "not x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))");
  if (x->type() != n.output(0)->type()) return rw.fail(p, n, "the type changes");
  std::vector<const Node*> matched;
  collectMatched(&n, x, matched);
  std::reverse(matched.begin(), matched.end());
  auto g = rw.create("Gelu", "", {x}, {n.output(0)->type()}, n.name(), matched);
  if (!g.ok()) return rw.fail(p, n, g.error().message());
  (*g)->setAttr("approximate", Attribute(std::string("tanh")));
  return rw.replaceNode(&n, {(*g)->output(0)});
}

}  // namespace

void addNormalizationPatterns(std::vector<std::unique_ptr<RewritePattern>>& out,
                              const PassContext& ctx) {
  out.push_back(std::make_unique<FnPattern>("fuse-softmax", "Div", fuseSoftmax, ctx));
  out.push_back(std::make_unique<FnPattern>("fuse-layernorm", "Div", fuseLayerNorm, ctx));
  out.push_back(std::make_unique<FnPattern>("fuse-gelu-tanh", "Mul", fuseGeluTanh, ctx));
}

}  // namespace kiln
