// Lowering helpers around buildProgram (generate.cc): Constant nodes to initializers, the
// static-shape and type checks of signature values, signature entries, symbol prefixes.
#include <algorithm>

#include "dynamic_shapes.h"
#include "graph_prep.h"
#include "kiln/ops/emit.h"
#include "ref/common.h"
#include "source_text.h"

namespace kiln {

/// Points subgraph outputs (at any depth below g) that are `from` at `to`.
namespace {

void replaceInSubgraphOutputs(const Graph& g, Value* from, Value* to) {
  for (const auto& n : g.nodes())
    for (Graph* sub : n->subgraphs()) {
      std::vector<Value*> outs = sub->outputs();
      std::replace(outs.begin(), outs.end(), from, to);
      sub->setOutputs(std::move(outs));
      replaceInSubgraphOutputs(*sub, from, to);
    }
}

}  // namespace

/// Constant nodes become initializers so their data lands in the weights blob (in subgraphs
/// too; a subgraph may return an outer Constant directly).
Status constantsToInitializers(Graph& g) {
  for (const auto& n : g.nodes())
    for (Graph* sub : n->subgraphs()) KILN_RETURN_IF_ERROR(constantsToInitializers(*sub));
  std::vector<Node*> constants;
  for (const auto& n : g.nodes())
    if (n->opType() == "Constant" && n->domain().empty()) constants.push_back(n.get());
  for (Node* n : constants) {
    const Attribute* a = n->attr("value");
    if (!a || a->kind() != AttrKind::Tensor)
      return makeError("{}: Constant without a tensor 'value' attribute", n->describe());
    KILN_ASSIGN_OR_RETURN(Value * init,
                          g.addInitializer(g.uniqueName(n->output(0)->name() + "_const"), a->t()));
    g.replaceAllUsesWith(n->output(0), init);
    replaceInSubgraphOutputs(g, n->output(0), init);
    g.eraseNode(n);
  }
  return Status();
}

Status checkStatic(const Value* v, const char* role) {
  if (!v->shape().isBoundedOrStatic())
    return makeError(
        "{} '{}' has shape {} — code generation needs static shapes; fix the "
        "model's dynamic dims with --shape NAME=d0,d1,...",
        role, commentSafe(v->name()), toString(v->shape()));
  // The kernels index with fixed arrays of kiln_ref::kMaxRank entries.
  if (v->shape().rank() > kiln_ref::kMaxRank)
    return makeError("{} '{}' has rank {}, above the kernels' limit of {}", role,
                     commentSafe(v->name()), v->shape().rank(), kiln_ref::kMaxRank);
  if (cTypeOf(v->dtype()).empty())
    return makeError("{} '{}' has type {}, which code generation does not support yet", role,
                     commentSafe(v->name()), dtypeName(v->dtype()));
  auto elements = v->shape().upperBoundElements();
  if (!elements || !dtypeStorageBytes(v->dtype(), *elements))
    return makeError("{} '{}' is too large", role, commentSafe(v->name()));
  return Status();
}

SignatureEntry signatureOf(const Value* v) {
  SignatureEntry e;
  e.name = v->name();
  e.dtype = v->dtype();
  e.dims = v->shape().upperBoundDims();
  e.bytes = plannedBytes(v);
  return e;
}

std::string symbolPrefixFor(const std::string& name) {
  std::string base = name;
  if (auto slash = base.find_last_of('/'); slash != std::string::npos)
    base = base.substr(slash + 1);
  if (auto dot = base.find('.'); dot != std::string::npos && dot > 0) base = base.substr(0, dot);
  return identifierFrom(base);
}

}  // namespace kiln
