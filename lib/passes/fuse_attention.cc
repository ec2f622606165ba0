// The attention pattern of fuse-patterns: scaled-dot-product attention as torch exports it
// (nn.MultiheadAttention, F.scaled_dot_product_attention at opset 14-17):
//   MatMul(Softmax(MatMul(Q·s, KT) [+ mask], axis = -1), V)       (the scale on Q)
//   MatMul(Softmax(MatMul(Q, KT)·s [+ mask], axis = -1), V)       (the scale on the scores)
// with ·s a Mul or Div by a scalar constant (or absent) and a mask that broadcasts to the
// scores (an [S, Skv] matrix, or one per batch such as a [B, 1, 1, Skv] padding mask) → kiln.Attention(Q, KT, V, mask). The batch dims
// (batch x heads) of Q, KT and V must be equal. kernels/cpu/attention.h runs the same steps
// per batch, so results are bit-identical to the unfused ops.
#include <algorithm>

#include "kiln/ops/fused.h"
#include "passes.h"

namespace kiln {
namespace {

/// A Mul or Div of `v`'s producer by a scalar constant: {the other operand, scale, divides}.
struct Scaled {
  Value* x = nullptr;
  float scale = 1.0f;
  bool divides = false;
  const Node* node = nullptr;
};

std::optional<Scaled> scaledValue(const Value* v) {
  for (const char* op : {"Mul", "Div"}) {
    const Node* n = soleProducer(v, op);
    if (!n) continue;
    const bool div = op[0] == 'D';
    for (int i = div ? 1 : 0; i < 2; ++i) {  // a Div scales only by its divisor
      const Tensor* c = constantOf(n->input(size_t(i)));
      if (c && c->dtype() == DType::F32 && c->numElements() == 1)
        return Scaled{n->input(size_t(1 - i)), c->data<float>()[0], div, n};
    }
  }
  return std::nullopt;
}

bool staticF32(const Value* v) { return v && v->dtype() == DType::F32 && isStatic(v); }

/// True when `mask` broadcasts to the scores' dims without growing them: each dim 1 or the
/// scores' (an [S, Skv] matrix, a [B, 1, 1, Skv] padding mask, ...).
bool maskFits(const Value* mask, const std::vector<int64_t>& scores) {
  if (!staticF32(mask)) return false;
  auto m = dimsOf(mask);
  if (m.size() > scores.size()) return false;
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i] != 1 && m[i] != scores[scores.size() - m.size() + i]) return false;
  return true;
}

bool fuseAttention(Node& root, Rewriter& rw, const PassContext&, const std::string& p) {
  const Node* softmax = soleProducer(root.input(0), "Softmax");
  Value* v = root.input(1);
  if (!softmax) return rw.fail(p, root, "the left operand is not a Softmax read only here");
  const Value* z = softmax->input(0);
  if (!staticF32(z) || !staticF32(v) || !staticF32(root.output(0)))
    return rw.fail(p, root, "not static f32");
  const int64_t rank = int64_t(dimsOf(z).size());
  const int64_t axis = softmax->attrInt("axis", -1);
  if (rank < 2 || (axis != -1 && axis != rank - 1))
    return rw.fail(p, root, "the Softmax is not over the last axis");
  std::vector<const Node*> sources{softmax};
  Value* mask = nullptr;
  if (const Node* add = soleProducer(z, "Add")) {  // scores + mask, either order
    for (int i : {0, 1}) {
      const Value* s = add->input(size_t(i));
      if (s->producer() && soleUser(s) &&
          (soleProducer(s, "MatMul") || (scaledValue(s) && soleProducer(scaledValue(s)->x, "MatMul")))) {
        mask = add->input(size_t(1 - i));
        z = s;
        break;
      }
    }
    if (!mask || !maskFits(mask, dimsOf(z))) return rw.fail(p, root, "the Add is not scores + mask");
    sources.push_back(add);
  }
  std::string scaleAt = "none";
  float scale = 1.0f;
  bool divides = false;
  const Node* qk = soleProducer(z, "MatMul");
  if (!qk) {
    auto s = scaledValue(z);
    qk = s ? soleProducer(s->x, "MatMul") : nullptr;
    if (!qk) return rw.fail(p, root, "the scores are not MatMul(Q, KT), scaled or not");
    scaleAt = "scores", scale = s->scale, divides = s->divides;
    sources.push_back(s->node);
  }
  sources.push_back(qk);
  Value* q = qk->input(0);
  Value* kt = qk->input(1);
  if (scaleAt == "none")
    if (auto s = scaledValue(q)) {
      q = s->x, scaleAt = "q", scale = s->scale, divides = s->divides;
      sources.push_back(s->node);
    }
  if (!staticF32(q) || !staticF32(kt)) return rw.fail(p, root, "Q or KT is not static f32");
  auto qd = dimsOf(q), kd = dimsOf(kt), vd = dimsOf(v);
  if (qd.size() != size_t(rank) || kd.size() != qd.size() || vd.size() != qd.size() ||
      !std::equal(qd.begin(), qd.end() - 2, kd.begin()) ||
      !std::equal(qd.begin(), qd.end() - 2, vd.begin()))
    return rw.fail(p, root, "Q, KT and V do not share their batch dims");
  std::reverse(sources.begin(), sources.end());
  sources.push_back(&root);
  std::vector<Value*> inputs{q, kt, v};
  if (mask) inputs.push_back(mask);
  auto n = rw.create("Attention", kKilnDomain, inputs, {root.output(0)->type()}, root.name(),
                     sources);
  if (!n.ok()) return rw.fail(p, root, n.error().message());
  (*n)->setAttr("scale_at", Attribute(scaleAt));
  if (scaleAt != "none") {
    (*n)->setAttr("scale", Attribute(scale));
    (*n)->setAttr("scale_divides", Attribute(int64_t(divides ? 1 : 0)));
  }
  if (!rw.replaceNode(&root, {(*n)->output(0)})) return false;
  rw.noteFused(int64_t(sources.size()));
  return true;
}

}  // namespace

void addAttentionPattern(std::vector<std::unique_ptr<RewritePattern>>& out,
                         const PassContext& ctx) {
  out.push_back(std::make_unique<FnPattern>("fuse-attention", "MatMul", fuseAttention, ctx));
}

}  // namespace kiln
