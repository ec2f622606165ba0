// Epilogue fusion: Conv / ConvTranspose / Gemm / MatMul followed by a bias Add (MatMul), a residual Add and an
// activation (or y * Sigmoid(y), SiLU, as "Swish") become one kiln.FusedConv / FusedGemm / FusedMatMul whose kernel applies
// act((y + bias) + residual) to each finished output block, in the order the unfused ops did,
// so results are bit-identical.
#include <algorithm>

#include "kiln/ops/fused.h"
#include "passes.h"

namespace kiln {
namespace {

const char* const kActivations[] = {"Relu",     "LeakyRelu", "Sigmoid", "HardSigmoid",
                                    "HardSwish", "Tanh",     "Gelu",    "Elu",
                                    "Selu",     "Softplus",  "Softsign", "Mish",
                                    "Clip",     "ThresholdedRelu"};

/// The fused op a producer turns into, or null when it cannot take an epilogue.
const char* fusedNameOf(const Node& p) {
  if (p.domain().empty()) {
    if (p.opType() == "Conv") return "FusedConv";
    if (p.opType() == "ConvTranspose") return "FusedConvTranspose";
    if (p.opType() == "Gemm") return "FusedGemm";
    if (p.opType() == "MatMul") return "FusedMatMul";
    return nullptr;
  }
  if (p.domain() == kKilnDomain &&
      (p.opType() == "FusedConv" || p.opType() == "FusedConvTranspose" ||
       p.opType() == "FusedGemm" || p.opType() == "FusedMatMul"))
    return p.opType().c_str();
  return nullptr;
}

/// The producer of `y` when it can absorb one more epilogue step and `user` is its only reader.
Node* base(const Value* y, const Node& user) {
  Node* p = y ? y->producer() : nullptr;
  if (!p || !fusedNameOf(*p) || soleUser(y) != &user) return nullptr;
  if (y->dtype() != DType::F32 || !isStatic(y) || p->hasAttr(kActivationAttr)) return nullptr;
  if (p->opType() == "MatMul" || p->opType() == "FusedMatMul")
    if (y->shape().rank() < 2) return nullptr;  // 1-D operands change the output's rank
  return p;
}

/// Replaces `p` and `user` by the fused form of `p` with `inputs` (4 slots) and returns it.
Node* fuse(Node* p, Node& user, std::vector<Value*> inputs, Rewriter& rw) {
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  auto n = rw.create(fusedNameOf(*p), kKilnDomain, inputs, {user.output(0)->type()}, p->name(),
                     {p, &user});
  if (!n.ok()) return nullptr;
  for (const auto& [k, v] : p->attributes()) (*n)->setAttr(k, v);
  if (!rw.replaceNode(&user, {(*n)->output(0)})) {
    rw.erase(*n);
    return nullptr;
  }
  rw.erase(p);
  rw.noteFused(2);
  return *n;
}

std::vector<Value*> slots(const Node& p) {
  std::vector<Value*> in(4, nullptr);
  for (size_t i = 0; i < p.numInputs() && i < 4; ++i) in[i] = p.input(i);
  return in;
}

bool fuseActivation(Node& n, Rewriter& rw, const PassContext&, const std::string& pattern) {
  Node* p = base(n.input(0), n);
  if (!p) return rw.fail(pattern, n, "the input is not a sole-use f32 Conv/Gemm/MatMul without an activation");
  if (n.output(0)->type() != n.input(0)->type()) return rw.fail(pattern, n, "the type changes");
  // ConvTranspose's epilogue runs per element as scalar code: a Sigmoid or Tanh there is slower
  // than the separate vectorized kernel (PP-OCR det's last deconv: 1.2 -> 2.6 ms), so only
  // activations that cost a compare or two fuse.
  const bool deconv = p->opType() == "ConvTranspose" || p->opType() == "FusedConvTranspose";
  if (deconv && n.opType() != "Relu" && n.opType() != "LeakyRelu" && n.opType() != "Clip" &&
      n.opType() != "HardSigmoid" && n.opType() != "HardSwish")
    return rw.fail(pattern, n, "ConvTranspose takes only Relu, LeakyRelu, Clip, HardSigmoid, HardSwish");
  std::vector<std::pair<std::string, Attribute>> attrs;
  if (n.opType() == "Clip") {
    for (size_t i : {size_t(1), size_t(2)}) {
      if (!n.input(i)) continue;
      const Tensor* t = constantOf(n.input(i));
      if (!t || t->numElements() != 1 || t->dtype() != DType::F32)
        return rw.fail(pattern, n, "Clip bounds are not constant f32 scalars");
      attrs.emplace_back(i == 1 ? "activation_min" : "activation_max", Attribute(float(t->doubleAt(0))));
    }
  }
  for (const auto& [k, v] : n.attributes()) attrs.emplace_back("activation_" + k, v);
  std::string act = n.opType();  // n is gone once fused
  Node* f = fuse(p, n, slots(*p), rw);
  if (!f) return false;
  f->setAttr(kActivationAttr, Attribute(act));
  for (auto& [k, v] : attrs) f->setAttr(k, std::move(v));
  return true;
}

/// y * Sigmoid(y) (SiLU; either operand order), y read only by the two and produced by a
/// Conv/Gemm/MatMul that can take an epilogue → its fused form with activation "Swish".
bool fuseSwish(Node& n, Rewriter& rw, const PassContext&, const std::string& pattern) {
  for (int i : {0, 1}) {
    Value* y = n.input(size_t(i));
    Value* s = n.input(size_t(1 - i));
    Node* sig = s ? s->producer() : nullptr;
    if (!sig || !sig->domain().empty() || sig->opType() != "Sigmoid" || sig->input(0) != y ||
        soleUser(s) != &n)
      continue;
    Node* p = y ? y->producer() : nullptr;
    if (!p || !fusedNameOf(*p) || p->hasAttr(kActivationAttr) || y->dtype() != DType::F32 ||
        !isStatic(y) || y->uses().size() != 2 ||
        n.output(0)->type() != y->type())
      continue;
    if (std::any_of(rw.graph().outputs().begin(), rw.graph().outputs().end(),
                    [&](const Value* o) { return o == y || o == s; }))
      continue;
    if ((p->opType() == "MatMul" || p->opType() == "FusedMatMul") && y->shape().rank() < 2) continue;
    std::vector<Value*> in = slots(*p);
    while (!in.empty() && !in.back()) in.pop_back();
    auto f = rw.create(fusedNameOf(*p), kKilnDomain, in, {n.output(0)->type()}, p->name(),
                       {p, sig, &n});
    if (!f.ok()) return false;
    for (const auto& [k, v] : p->attributes()) (*f)->setAttr(k, v);
    (*f)->setAttr(kActivationAttr, Attribute(std::string("Swish")));
    if (!rw.replaceNode(&n, {(*f)->output(0)})) {
      rw.erase(*f);
      return false;
    }
    rw.erase(sig);
    rw.erase(p);
    rw.noteFused(3);
    return true;
  }
  return rw.fail(pattern, n, "not y * Sigmoid(y) with y a Conv/Gemm/MatMul output read by only the two");
}

/// MatMul(A, B) + bias[N] → FusedMatMul(A, B, bias).
bool fuseMatMulBias(Node& n, Rewriter& rw, const PassContext&, const std::string& pattern) {
  for (int i : {0, 1}) {
    Node* p = base(n.input(size_t(i)), n);
    if (!p || (p->opType() != "MatMul" && p->opType() != "FusedMatMul")) continue;
    if (p->input(2) || p->input(3)) continue;  // already has a bias or residual
    const Value* b = n.input(size_t(1 - i));
    const Tensor* t = constantOf(b);
    const Value* y = p->output(0);
    if (!t || b->dtype() != DType::F32 || n.output(0)->type() != y->type()) continue;
    int64_t N = dimsOf(y).back();
    auto bd = t->dims();
    bool vec = !bd.empty() && bd.back() == N && t->numElements() == N && bd.size() <= dimsOf(y).size();
    if (!vec) continue;
    Value* bias = n.input(size_t(1 - i));
    if (bd.size() != 1) {
      auto c = rw.constant(b->name() + "_vec", Tensor::fromBytes(DType::F32, {N}, t->bytes(), t->byteSize()).value());
      if (!c.ok()) continue;
      bias = *c;
    }
    auto in = slots(*p);
    in[2] = bias;
    return fuse(p, n, in, rw) != nullptr;
  }
  return rw.fail(pattern, n, "not a sole-use MatMul plus a constant vector along its last axis");
}

/// y + r with r of y's type → residual input of the fused producer of y.
bool fuseResidual(Node& n, Rewriter& rw, const PassContext&, const std::string& pattern) {
  for (int i : {0, 1}) {
    Node* p = base(n.input(size_t(i)), n);
    if (!p || p->input(3)) continue;
    Value* r = n.input(size_t(1 - i));
    const Value* y = p->output(0);
    if (r == y || r->type() != y->type() || n.output(0)->type() != y->type()) continue;
    auto in = slots(*p);
    in[3] = r;
    return fuse(p, n, in, rw) != nullptr;
  }
  return rw.fail(pattern, n, "no operand is a sole-use Conv/Gemm/MatMul output of the other's type");
}

class FuseEpiloguePass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-epilogue"; }
  std::string_view summary() const override {
    return "fuses MatMul bias, residual Add and activations into kiln.FusedConv/FusedGemm/"
           "FusedMatMul epilogues";
  }
  Expected<RewriteStats> run(Graph& g, PassContext& ctx) override {
    std::vector<std::unique_ptr<RewritePattern>> patterns;
    patterns.push_back(std::make_unique<FnPattern>("fuse-matmul-bias", "Add", fuseMatMulBias, ctx));
    patterns.push_back(std::make_unique<FnPattern>("fuse-residual", "Add", fuseResidual, ctx));
    patterns.push_back(std::make_unique<FnPattern>("fuse-swish", "Mul", fuseSwish, ctx));
    for (const char* a : kActivations)
      patterns.push_back(std::make_unique<FnPattern>("fuse-activation", a, fuseActivation, ctx));
    Rewriter rw(g);
    rw.setTrace(ctx.trace);
    KILN_RETURN_IF_ERROR(applyPatternsGreedily(g, patterns, rw).status());
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseEpiloguePass() { return std::make_unique<FuseEpiloguePass>(); }

}  // namespace kiln
