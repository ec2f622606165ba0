// Dead code elimination: nodes nobody reads, unused trailing outputs of multi-output ops,
// and initializers nobody reads. Graph inputs and outputs are the API and stay.
#include "passes.h"

namespace kiln {
namespace {

bool isOutput(const Graph& g, const Value* v) {
  for (const Value* o : g.outputs())
    if (o == v) return true;
  return false;
}

bool unused(const Graph& g, const Value* v) { return v->uses().empty() && !isOutput(g, v); }

class DcePass final : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  std::string_view summary() const override {
    return "removes unused nodes, unused trailing outputs of multi-output ops and unused "
           "initializers";
  }
  Expected<RewriteStats> run(Graph& g, PassContext& ctx) override {
    Rewriter rw(g);
    // Reverse order: a chain of dead nodes dies in one walk.
    std::vector<Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      bool dead = n->numOutputs() > 0;
      for (const Value* out : n->outputs()) dead = dead && unused(g, out);
      if (dead) {
        rw.erase(n);
        continue;
      }
      // Trailing outputs nobody reads are dropped where the op declares them optional.
      const OpDef* def = ctx.registry.find(n->domain(), n->opType());
      if (!def) continue;
      size_t keep = n->numOutputs();
      while (keep > size_t(std::max(def->schema.minOutputs, 1)) && unused(g, n->output(keep - 1)))
        --keep;
      if (keep < n->numOutputs()) {
        g.truncateOutputs(n, keep);
        rw.notePattern("drop-unused-outputs");
      }
    }
    std::vector<Value*> inits(g.initializers().begin(), g.initializers().end());
    for (Value* v : inits) rw.eraseInitializer(v);
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeDcePass() { return std::make_unique<DcePass>(); }

}  // namespace kiln
