// Factories of the individual passes (one file each) and helpers they share.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "kiln/passes/pass.h"

namespace kiln {

std::unique_ptr<Pass> makeCanonicalizePass();
std::unique_ptr<Pass> makeFoldConstantsPass();
std::unique_ptr<Pass> makeDcePass();
std::unique_ptr<Pass> makeCsePass();
std::unique_ptr<Pass> makeFuseBatchNormPass();
std::unique_ptr<Pass> makeFuseEpiloguePass();
std::unique_ptr<Pass> makeFuseElementwisePass();
std::unique_ptr<Pass> makeFusePatternsPass();
std::unique_ptr<Pass> makeLayoutPass();
std::unique_ptr<Pass> makeFuseNhwcExpandPass();
std::unique_ptr<Pass> makeFuseNhwcProjectPass();

// ---- helpers for patterns ----

/// The constant behind `v` (an initializer), or null.
const Tensor* constantOf(const Value* v);
/// True when `v` is a constant whose every element equals `x` (float or integer types).
bool isSplat(const Value* v, double x);
/// The single node reading `v`, or null when it has no or several readers (or is an output).
Node* soleUser(const Value* v);
/// True when the value's shape is fully static.
bool isStatic(const Value* v);
/// Random generators: every call differs, so they are never merged or folded.
bool isRandom(const Node& n);
/// Static dims of a value (call only when isStatic).
std::vector<int64_t> dimsOf(const Value* v);

}  // namespace kiln

namespace kiln {

/// A pattern whose rewrite is a function (most canonicalizations are a few lines).
class FnPattern final : public RewritePattern {
 public:
  using Fn = bool (*)(Node& n, Rewriter& rw, const PassContext& ctx, const std::string& name);
  FnPattern(std::string name, std::string rootOp, Fn fn, const PassContext& ctx)
      : RewritePattern(std::move(name), std::move(rootOp)), fn_(fn), ctx_(ctx) {}
  bool matchAndRewrite(Node& n, Rewriter& rw) const override { return fn_(n, rw, ctx_, name()); }

 private:
  Fn fn_;
  const PassContext& ctx_;
};

/// Replaces the node's only output with `v`; fails (with the reason) on a graph output.
bool forwardTo(Node& n, Value* v, Rewriter& rw, const std::string& pattern);

/// |a - b| within 1e-6 of |b| (constants written in decimal by exporters).
bool nearValue(double a, double b);
/// True when `v` is a one-element f32/f64 constant near `x` (nearValue).
bool splatNear(const Value* v, double x);
/// The producer of `v` when it is op `op` of the default domain and `v` has no other reader.
const Node* soleProducer(const Value* v, const char* op);
/// For v = Mul(x, c) or Mul(c, x) with c a splat near `c` (and v read once), returns x.
Value* timesConstant(const Value* v, double c);
/// The matched subtree: `n` and, recursively, the single-use producers of its inputs, stopping
/// at `x`.
void collectMatched(const Node* n, const Value* x, std::vector<const Node*>& out);
/// The normalization patterns of fuse-patterns (fuse_norm_patterns.cc): Softmax and
/// LayerNormalization from their decomposed forms, and Gelu's tanh form.
void addNormalizationPatterns(std::vector<std::unique_ptr<RewritePattern>>& out,
                              const PassContext& ctx);
/// The attention pattern of fuse-patterns (fuse_attention.cc): MatMul(Softmax(scaled Q·KT
/// [+ mask]), V) → kiln.Attention.
void addAttentionPattern(std::vector<std::unique_ptr<RewritePattern>>& out,
                         const PassContext& ctx);
/// A copy of a float constant with `f` applied to every element (f32/f64 only).
std::optional<Tensor> mapFloats(const Tensor& t, double (*f)(double));

}  // namespace kiln
