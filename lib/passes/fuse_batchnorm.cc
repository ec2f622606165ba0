// Folds inference BatchNormalization, and Mul/Add by per-channel constants, into the weights
// and bias of the Conv / ConvTranspose / Gemm / MatMul (constant 2-D weights) that feeds them:
//   bn(conv(x, W) + b) = conv(x, W * s) + (b - mean) * s + beta,  s = scale / sqrt(var + eps)
// computed in double and rounded once, so results move by rounding only. A MatMul's channels
// are its output columns (the last axis): BatchNormalization folds into a 2-D MatMul, Mul/Add by
// per-column constants into any; the folded bias becomes an Add after the MatMul, which
// fuse-epilogue then takes into the kernel.
#include <cmath>

#include "passes.h"

namespace kiln {
namespace {

/// A producer whose output channels can absorb a per-channel affine map y → y * s + t.
struct Affine {
  Node* node = nullptr;
  int64_t channels = 0;
  size_t axis = 1;  ///< the channel axis of the output (1; the last one for MatMul)
};

std::optional<Affine> affineProducer(const Value* y) {
  Node* p = y->producer();
  if (!p || !p->domain().empty() || soleUser(y) == nullptr) return std::nullopt;
  if (y->dtype() != DType::F32 || !isStatic(y)) return std::nullopt;
  const std::string& op = p->opType();
  if (op != "Conv" && op != "ConvTranspose" && op != "Gemm" && op != "MatMul") return std::nullopt;
  if (!constantOf(p->input(1)) || (p->numInputs() > 2 && p->input(2) && !constantOf(p->input(2))))
    return std::nullopt;
  auto yd = dimsOf(y);
  if (yd.size() < 2) return std::nullopt;
  if (op == "MatMul") {  // A [..., K] x W [K, N]: per output column
    if (constantOf(p->input(1))->dims().size() != 2) return std::nullopt;
    return Affine{p, yd.back(), yd.size() - 1};
  }
  if (op == "Gemm") {
    // Only alpha = beta = 1 and a per-column C (or none) keep the map per output column.
    if (p->attrFloat("alpha", 1) != 1 || p->attrFloat("beta", 1) != 1) return std::nullopt;
    if (p->input(2)) {
      auto c = dimsOf(p->input(2));
      int64_t n = dimsOf(y)[1];
      if (!(c == std::vector<int64_t>{n} || c == std::vector<int64_t>{1, n})) return std::nullopt;
    }
  }
  return Affine{p, yd[1], 1};
}

/// Per-channel values of a constant that broadcasts along `axis` of a rank-`rank` output with
/// `channels` channels (a scalar, or one whose only non-1 dim is `axis`); nullopt otherwise.
std::optional<std::vector<double>> perChannel(const Value* v, size_t rank, int64_t channels,
                                              size_t axis) {
  const Tensor* t = constantOf(v);
  if (!t || (t->dtype() != DType::F32)) return std::nullopt;
  auto d = t->dims();
  if (d.size() > rank) return std::nullopt;
  std::vector<int64_t> full(rank - d.size(), 1);
  full.insert(full.end(), d.begin(), d.end());
  for (size_t i = 0; i < rank; ++i)
    if (full[i] != 1 && !(i == axis && full[i] == channels)) return std::nullopt;
  std::vector<double> out(static_cast<size_t>(channels));
  bool perC = full.size() > axis && full[axis] == channels && channels != 1;
  for (int64_t c = 0; c < channels; ++c) out[size_t(c)] = t->doubleAt(perC ? c : 0);
  return out;
}

/// MatMul(x, W*s) then, unless the folded bias is all zero, + bias (per output column).
bool applyToMatMul(Node& p, Node& user, Expected<Value*> wv, const std::vector<float>& nb,
                   Rewriter& rw, const std::string& pattern) {
  if (!wv.ok()) return rw.fail(pattern, user, "cannot add the folded weights");
  const TensorType& type = user.output(0)->type();
  bool anyBias = false;
  for (float v : nb) anyBias = anyBias || v != 0.0f;
  auto mm = rw.create("MatMul", "", {p.input(0), *wv}, {type}, p.name(), {&p, &user});
  if (!mm.ok()) return rw.fail(pattern, user, mm.error().message());
  Value* out = (*mm)->output(0);
  if (anyBias) {
    auto bv = rw.constant(p.name() + "_bias_folded",
                          Tensor::fromVector(DType::F32, {int64_t(nb.size())}, nb));
    if (!bv.ok()) return rw.fail(pattern, user, "cannot add the folded bias");
    auto add = rw.create("Add", "", {out, *bv}, {type}, user.name(), {&user});
    if (!add.ok()) return rw.fail(pattern, user, add.error().message());
    out = (*add)->output(0);
  }
  if (!rw.replaceNode(&user, {out})) return false;
  rw.erase(&p);
  rw.noteFused(2);
  return true;
}

/// Rewrites producer `a` to compute y * s + t per output channel, replacing `user`'s output.
bool applyAffine(const Affine& a, Node& user, const std::vector<double>& s,
                 const std::vector<double>& t, Rewriter& rw, const std::string& pattern) {
  Node* p = a.node;
  const Tensor& w = *constantOf(p->input(1));
  std::vector<float> nw(w.data<float>(), w.data<float>() + w.numElements());
  auto wd = w.dims();
  const std::string& op = p->opType();
  const int64_t C = a.channels;
  if (op == "Conv") {  // W [M, C/g, k...]
    int64_t per = w.numElements() / wd[0];
    for (int64_t m = 0; m < wd[0]; ++m)
      for (int64_t i = 0; i < per; ++i) nw[size_t(m * per + i)] = float(nw[size_t(m * per + i)] * s[size_t(m)]);
  } else if (op == "ConvTranspose") {  // W [C_in, M/g, k...]; output channel g*(M/g) + j
    int64_t group = p->attrInt("group", 1);
    int64_t mg = wd[1], cin = wd[0], per = w.numElements() / (wd[0] * wd[1]);
    if (group <= 0 || cin % group != 0 || mg * group != C) return rw.fail(pattern, user, "groups do not match the channels");
    for (int64_t c = 0; c < cin; ++c)
      for (int64_t j = 0; j < mg; ++j) {
        int64_t m = (c / (cin / group)) * mg + j;
        for (int64_t i = 0; i < per; ++i) {
          size_t k = size_t((c * mg + j) * per + i);
          nw[k] = float(nw[k] * s[size_t(m)]);
        }
      }
  } else {  // Gemm: B [K, N] or [N, K] with transB; MatMul: W [K, N]
    bool tb = op == "Gemm" && p->attrInt("transB", 0) != 0;
    int64_t rows = wd[0], cols = wd[1];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        size_t k = size_t(r * cols + c);
        nw[k] = float(nw[k] * s[size_t(tb ? r : c)]);
      }
  }
  std::vector<float> nb(static_cast<size_t>(C));
  const Tensor* b = p->numInputs() > 2 ? constantOf(p->input(2)) : nullptr;
  for (int64_t m = 0; m < C; ++m) {
    double bias = b ? b->doubleAt(b->numElements() == 1 ? 0 : m) : 0.0;
    nb[size_t(m)] = float(bias * s[size_t(m)] + t[size_t(m)]);
  }
  auto wv = rw.constant(p->input(1)->name() + "_folded", Tensor::fromVector(DType::F32, wd, nw));
  if (op == "MatMul") return applyToMatMul(*p, user, wv, nb, rw, pattern);
  auto bv = rw.constant(p->name() + "_bias_folded", Tensor::fromVector(DType::F32, {C}, nb));
  if (!wv.ok() || !bv.ok()) return rw.fail(pattern, user, "cannot add the folded weights");
  auto n = rw.create(op, "", {p->input(0), *wv, *bv}, {user.output(0)->type()}, p->name(), {p, &user});
  if (!n.ok()) return rw.fail(pattern, user, n.error().message());
  for (const auto& [k, v] : p->attributes()) (*n)->setAttr(k, v);
  if (!rw.replaceNode(&user, {(*n)->output(0)})) return false;
  rw.erase(p);
  rw.noteFused(2);
  return true;
}

bool foldBatchNorm(Node& n, Rewriter& rw, const PassContext&, const std::string& pattern) {
  if (n.numOutputs() > 1 && !n.output(1)->uses().empty())
    return rw.fail(pattern, n, "training outputs are used");
  if (n.attrInt("training_mode", 0) != 0) return rw.fail(pattern, n, "training mode");
  auto a = affineProducer(n.input(0));
  if (!a || a->axis != 1)
    return rw.fail(pattern, n, "the input is not a sole-use f32 Conv/ConvTranspose/Gemm/2-D MatMul with constant weights");
  std::vector<std::vector<double>> p;
  for (size_t i = 1; i <= 4; ++i) {  // scale, B, mean, var: constant [C] vectors
    const Tensor* t = constantOf(n.input(i));
    if (!t || t->dtype() != DType::F32 || t->dims() != std::vector<int64_t>{a->channels})
      return rw.fail(pattern, n, "scale, B, mean and var must be constant f32 [C] vectors");
    std::vector<double> v(size_t(a->channels));
    for (int64_t c = 0; c < a->channels; ++c) v[size_t(c)] = t->doubleAt(c);
    p.push_back(std::move(v));
  }
  double eps = n.attrFloat("epsilon", 1e-5f);
  std::vector<double> s(size_t(a->channels)), t(size_t(a->channels));
  for (size_t c = 0; c < s.size(); ++c) {
    s[c] = p[0][c] / std::sqrt(p[3][c] + eps);
    t[c] = p[1][c] - p[2][c] * s[c];
  }
  return applyAffine(*a, n, s, t, rw, pattern);
}

/// Mul/Add by a per-channel constant after Conv/ConvTranspose/Gemm.
bool foldChannelAffine(Node& n, Rewriter& rw, const PassContext&, const std::string& pattern) {
  bool mul = n.opType() == "Mul";
  for (int i : {0, 1}) {
    auto a = affineProducer(n.input(size_t(i)));
    // MatMul + per-column Add is already the biased form fuse-epilogue takes.
    if (!a || (!mul && a->node->opType() == "MatMul")) continue;
    const Value* y = n.input(size_t(i));
    if (n.output(0)->type() != y->type()) continue;
    auto c = perChannel(n.input(size_t(1 - i)), size_t(y->shape().rank()), a->channels, a->axis);
    if (!c) continue;
    std::vector<double> s(c->size(), 1.0), t(c->size(), 0.0);
    if (mul) s = *c; else t = *c;
    // y * s + t with y = conv + b: W*s, b*s (+t); exactly the same map for Add (s = 1).
    return applyAffine(*a, n, s, t, rw, pattern);
  }
  return rw.fail(pattern, n, "not a per-channel constant applied to a sole-use Conv/ConvTranspose/Gemm/MatMul output");
}

class FuseBatchNormPass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-batchnorm"; }
  std::string_view summary() const override {
    return "folds inference BatchNormalization and per-channel Mul/Add constants into "
           "Conv/ConvTranspose/Gemm/MatMul weights and bias";
  }
  Expected<RewriteStats> run(Graph& g, PassContext& ctx) override {
    std::vector<std::unique_ptr<RewritePattern>> patterns;
    patterns.push_back(std::make_unique<FnPattern>("fold-batchnorm", "BatchNormalization", foldBatchNorm, ctx));
    patterns.push_back(std::make_unique<FnPattern>("fold-channel-mul", "Mul", foldChannelAffine, ctx));
    patterns.push_back(std::make_unique<FnPattern>("fold-channel-add", "Add", foldChannelAffine, ctx));
    Rewriter rw(g);
    rw.setTrace(ctx.trace);
    KILN_RETURN_IF_ERROR(applyPatternsGreedily(g, patterns, rw).status());
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseBatchNormPass() { return std::make_unique<FuseBatchNormPass>(); }

}  // namespace kiln
