// Structural verification of graphs.
#include "kiln/ir/verifier.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace {

struct Scope {
  std::unordered_set<const Value*> defined;
  std::unordered_set<std::string> names;
  const Scope* parent = nullptr;
  bool has(const Value* v) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->defined.count(v)) return true;
    return false;
  }
  bool hasName(const std::string& n) const {
    for (const Scope* s = this; s; s = s->parent)
      if (s->names.count(n)) return true;
    return false;
  }
};

Status verifyIn(const Graph& g, const Scope* parentScope, int depth) {
  if (depth > 1000) return makeError("graph '{}': subgraphs nested too deeply", g.name());
  Scope scope;
  scope.parent = parentScope;
  auto define = [&](const Value* v, const char* what) -> Status {
    if (v->owner() != &g)
      return makeError("graph '{}': {} '{}' belongs to another graph", g.name(), what, v->name());
    if (scope.hasName(v->name()) || !scope.names.insert(v->name()).second)
      return makeError("graph '{}': value name '{}' is defined more than once", g.name(),
                       v->name());
    scope.defined.insert(v);
    return Status();
  };
  for (const Value* v : g.inputs()) KILN_RETURN_IF_ERROR(define(v, "input"));
  for (const Value* v : g.initializers()) {
    // An initializer may double as an input (ONNX IR < 4 style); define once.
    if (scope.defined.count(v)) continue;
    KILN_RETURN_IF_ERROR(define(v, "initializer"));
    const Tensor* t = v->initializer();
    if (!t) return makeError("graph '{}': initializer '{}' has no data", g.name(), v->name());
    if (v->dtype() != t->dtype() || v->shape() != Shape::ofStatic(t->dims()))
      return makeError("graph '{}': initializer '{}' is declared {} but holds {}", g.name(),
                       v->name(), toString(v->type()),
                       toString(TensorType{t->dtype(), Shape::ofStatic(t->dims())}));
  }
  for (const auto& np : g.nodes()) {
    const Node& n = *np;
    if (n.owner() != &g)
      return makeError("{}: listed in a graph that does not own it", n.describe());
    for (size_t i = 0; i < n.numInputs(); ++i) {
      const Value* in = n.input(i);
      if (!in) continue;
      if (!scope.has(in))
        return makeError(
            "{}: input {} '{}' is not defined before its use (undefined value or a "
            "cycle)",
            n.describe(), i, in->name());
      const auto& uses = in->uses();
      if (std::find(uses.begin(), uses.end(), Use{const_cast<Node*>(&n), int(i)}) == uses.end())
        return makeError("{}: use list of '{}' is missing input {}", n.describe(), in->name(), i);
    }
    for (Graph* sub : n.subgraphs()) {
      if (sub->parent() != &g)
        return makeError("{}: subgraph '{}' does not name its enclosing graph as parent",
                         n.describe(), sub->name());
      KILN_RETURN_IF_ERROR(verifyIn(*sub, &scope, depth + 1));
    }
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      const Value* out = n.output(i);
      if (!out) return makeError("{}: output {} is null", n.describe(), i);
      if (out->producer() != &n || out->producerIndex() != int(i))
        return makeError("{}: output '{}' does not name this node as producer", n.describe(),
                         out->name());
      KILN_RETURN_IF_ERROR(define(out, "output"));
    }
  }
  for (const Value* v : g.outputs())
    if (!v || !scope.has(v))
      return makeError("graph '{}': output '{}' is not defined", g.name(), v ? v->name() : "");
  return Status();
}

}  // namespace

Status verifyGraph(const Graph& g) {
  return verifyIn(g, nullptr, 0);
}

}  // namespace kiln
