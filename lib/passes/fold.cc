// Constant folding through the ops' reference evaluation (the same kernels the generated code
// runs). Shape subgraphs (Shape → Gather → Concat → Reshape) fold whenever the shapes are
// static; other nodes fold when every input is a constant and the result does not grow the
// weights by more than PassOptions::foldGrowthBytes.
#include "kiln/ops/infer.h"
#include "passes.h"

namespace kiln {
namespace {

class FoldConstantsPass final : public Pass {
 public:
  std::string_view name() const override { return "fold-constants"; }
  std::string_view summary() const override {
    return "evaluates nodes whose inputs are constants (or whose results follow from static "
           "shapes) into initializers, within a growth budget";
  }
  Expected<RewriteStats> run(Graph& g, PassContext& ctx) override {
    Rewriter rw(g);
    KnownValues known;
    InferOptions io;
    io.maxEvalElements = ctx.options.maxEvalElements;
    io.maxDims = ctx.options.maxDims;
    KILN_RETURN_IF_ERROR(inferShapes(g, ctx.registry, io, &known));
    std::vector<Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (Node* n : order) {
      if (!n->subgraphs().empty() || isRandom(*n) || n->numOutputs() == 0) continue;
      bool outputs = false;  // a graph output cannot become an initializer (its name is API)
      for (const Value* v : g.outputs())
        for (const Value* out : n->outputs()) outputs = outputs || v == out;
      if (outputs) continue;
      std::vector<Tensor> results;
      bool allKnown = true;
      for (const Value* out : n->outputs()) {
        auto it = known.find(out);
        if (it == known.end() || out->isInitializer()) {
          allKnown = false;
          break;
        }
        results.push_back(it->second);
      }
      if (!allKnown) {
        results.clear();
        auto r = evaluate(*n, ctx);
        if (!r) continue;
        results = std::move(*r);
      }
      std::vector<Value*> repl;
      for (size_t i = 0; i < results.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(Value * c, rw.constant(n->output(i)->name(), results[i]));
        repl.push_back(c);
      }
      for (const Value* out : n->outputs()) known.erase(out);
      std::string what = "fold " + n->opType();  // n is gone once replaced
      if (rw.replaceNode(n, repl)) rw.notePattern(what);
    }
    std::vector<Value*> inits(g.initializers().begin(), g.initializers().end());
    for (Value* v : inits) rw.eraseInitializer(v);
    return rw.stats();
  }

 private:
  /// The node's results when every present input is a constant, the op can be evaluated and
  /// the results fit the budget; nullopt otherwise.
  static std::optional<std::vector<Tensor>> evaluate(const Node& n, PassContext& ctx) {
    const OpDef* def = ctx.registry.find(n.domain(), n.opType());
    if (!def || !def->evaluate || !def->hasRequiredInputs(n)) return std::nullopt;
    std::vector<const Tensor*> ins;
    int64_t inBytes = 0;
    for (const Value* v : n.inputs()) {
      if (!v) {
        ins.push_back(nullptr);
        continue;
      }
      const Tensor* t = constantOf(v);
      if (!t) return std::nullopt;
      inBytes += int64_t(t->byteSize());
      ins.push_back(t);
    }
    int64_t outBytes = 0;
    for (const Value* out : n.outputs()) {
      if (!isStatic(out)) return std::nullopt;
      auto bytes = dtypeStorageBytes(out->dtype(), *out->shape().numElements());
      if (!bytes) return std::nullopt;
      outBytes += int64_t(*bytes);
    }
    if (outBytes > inBytes + ctx.options.foldGrowthBytes) return std::nullopt;
    auto r = def->evaluate(EvalContext(n, ins));
    if (!r.ok() || r->size() != n.numOutputs()) return std::nullopt;
    for (size_t i = 0; i < r->size(); ++i)
      if ((*r)[i].dtype() != n.output(i)->dtype() ||
          (*r)[i].dims() != n.output(i)->shape().staticDims())
        return std::nullopt;  // an evaluation that disagrees with inference is not trusted
    return std::move(*r);
  }
};

}  // namespace

std::unique_ptr<Pass> makeFoldConstantsPass() { return std::make_unique<FoldConstantsPass>(); }

}  // namespace kiln
