// Whole-graph shape inference with compile-time evaluation of shape subgraphs.
#include "kiln/ops/infer.h"

#include <map>
#include <set>

namespace kiln {
namespace {

// Merges a declared type (from the model) into an inferred one. A data symbol (a size only the
// run time knows, see dataDimSymbol) that meets a declared static size is recorded in
// `bindings`: the op that makes it checks that size at run time.
Expected<TensorType> mergeDeclared(const Node& n, const Value& v, TensorType inferred,
                                   std::map<std::string, int64_t>& bindings) {
  const TensorType& declared = v.type();
  if (declared.dtype != DType::Undefined && inferred.dtype != DType::Undefined &&
      declared.dtype != inferred.dtype)
    return makeError("{}: output '{}' is declared {} but the op produces {}", n.describe(),
                     v.name(), dtypeName(declared.dtype), dtypeName(inferred.dtype));
  if (inferred.dtype == DType::Undefined) inferred.dtype = declared.dtype;
  if (!declared.shape.rankKnown()) return inferred;
  if (!inferred.shape.rankKnown()) {
    inferred.shape = declared.shape;
    return inferred;
  }
  if (declared.shape.rank() != inferred.shape.rank())
    return makeError("{}: output '{}' is declared with shape {} but the op produces {}",
                     n.describe(), v.name(), toString(declared.shape), toString(inferred.shape));
  for (size_t i = 0; i < declared.shape.dims().size(); ++i) {
    const Dim& d = declared.shape[i];
    Dim& o = inferred.shape.dims()[i];
    if (d.isStatic() && o.isStatic() && d.value != o.value)
      return makeError("{}: output '{}' is declared with shape {} but the op produces {}",
                       n.describe(), v.name(), toString(declared.shape), toString(inferred.shape));
    // A data-dependent dim keeps its bound: the declared size is only the example's.
    if (o.isBounded()) continue;
    if (o.isSymbolic() && isDataDimSymbol(o.symbol) && d.isStatic())
      bindings.emplace(o.symbol, d.value);
    if (!o.isStatic() && (d.isStatic() || (d.isSymbolic() && !o.isSymbolic()))) o = d;
  }
  return inferred;
}

class Inferer {
 public:
  Inferer(const OpRegistry& r, const InferOptions& o, KnownValues& k)
      : registry_(r), options_(o), known_(k) {}

  // Data symbols bound to a static size by a declared shape downstream.
  const std::map<std::string, int64_t>& bindings() const { return bindings_; }

  Status run(Graph& g, int depth) {
    if (depth > 256) return makeError("graph '{}': subgraphs nested more than 256 deep", g.name());
    for (Value* v : g.initializers()) known_[v] = *v->initializer();
    for (const auto& np : g.nodes()) KILN_RETURN_IF_ERROR(inferNode(*np, depth));
    return Status();
  }

 private:
  Status inferNode(Node& n, int depth) {
    const OpDef* def = registry_.find(n.domain(), n.opType());
    if (!def)
      return makeError(
          "{}: unsupported op{} — kiln has no definition for it; replace it or file "
          "an issue",
          n.describe(), n.domain().empty() ? "" : " in domain '" + n.domain() + "'");
    const OpSchema& s = def->schema;
    int nin = int(n.numInputs());
    while (nin > 0 && !n.input(size_t(nin - 1))) --nin;
    if (nin < s.minInputs || (s.maxInputs >= 0 && nin > s.maxInputs))
      return makeError("{}: has {} inputs, expected {}{}", n.describe(), nin, s.minInputs,
                       s.maxInputs == s.minInputs ? ""
                       : s.maxInputs < 0          ? " or more"
                                                  : " to " + std::to_string(s.maxInputs));
    int nout = int(n.numOutputs());
    if (nout < s.minOutputs || (s.maxOutputs >= 0 && nout > s.maxOutputs))
      return makeError("{}: has {} outputs, expected {} to {}", n.describe(), nout, s.minOutputs,
                       s.maxOutputs < 0 ? std::string("any") : std::to_string(s.maxOutputs));
    for (const AttrSpec& a : s.attrs) {
      const Attribute* attr = n.attr(std::string(a.name));
      if (!attr && a.required)
        return makeError("{}: required attribute '{}' is missing", n.describe(), a.name);
      if (attr && attr->kind() != a.kind)
        return makeError("{}: attribute '{}' is {}, expected {}", n.describe(), a.name,
                         attrKindName(attr->kind()), attrKindName(a.kind));
    }
    std::vector<TensorType> ins;
    std::vector<const Tensor*> vals;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      const Value* v = n.input(i);
      ins.push_back(v ? v->type() : TensorType{});
      if (v && v->dtype() == DType::Undefined)
        return makeError("{}: input '{}' has no known type", n.describe(), v->name());
      auto it = v ? known_.find(v) : known_.end();
      vals.push_back(it == known_.end() ? nullptr : &it->second);
    }
    InferContext ctx(
        n, ins, vals,
        [this, depth](Graph& body, const std::vector<TensorType>& bodyIns)
            -> Expected<std::vector<TensorType>> { return inferBody(body, bodyIns, depth + 1); });
    KILN_ASSIGN_OR_RETURN(auto outs, def->inferTypes(ctx));
    if (outs.size() < n.numOutputs())
      return makeError("{}: inference produced {} types for {} outputs", n.describe(), outs.size(),
                       n.numOutputs());
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      Value* v = n.output(i);
      for (Dim& d : outs[i].shape.dims())
        if (d.isSymbolic())
          if (auto b = bindings_.find(d.symbol); b != bindings_.end()) d = Dim::known(b->second);
      KILN_ASSIGN_OR_RETURN(auto t, mergeDeclared(n, *v, outs[i], bindings_));
      if (auto hint = options_.maxDims.find(v->name()); hint != options_.maxDims.end())
        for (Dim& d : t.shape.dims())
          if (!d.isStatic() && !d.isBounded()) d = Dim::bounded(hint->second);
      v->setType(std::move(t));
    }
    tryEvaluate(n, *def, vals);
    return Status();
  }

  // Evaluates small nodes whose inputs are all known, so shape math resolves.
  void tryEvaluate(Node& n, const OpDef& def, const std::vector<const Tensor*>& vals) {
    // A re-inferred subgraph (a loop body widened to its fixpoint) must not keep values
    // computed from its earlier, narrower types.
    for (Value* out : n.outputs()) known_.erase(out);
    if (!def.evaluate || !n.subgraphs().empty()) return;
    if (!def.hasRequiredInputs(n)) return;  // a required input left empty ("")
    for (size_t i = 0; i < n.numInputs(); ++i)
      if (n.input(i) && !vals[i] && !evaluableWithoutValue(n, i)) return;
    for (size_t i = 0; i < n.numOutputs(); ++i) {
      auto count = n.output(i)->shape().numElements();
      if (!count || *count > options_.maxEvalElements) return;
    }
    auto outs = def.evaluate(EvalContext(n, vals));
    if (!outs.ok()) return;  // not evaluable here; the value simply stays unknown
    for (size_t i = 0; i < n.numOutputs() && i < outs->size(); ++i)
      known_[n.output(i)] = std::move((*outs)[i]);
  }

  // Shape/Size need only the input's static type, not its data.
  static bool evaluableWithoutValue(const Node& n, size_t i) {
    return (n.opType() == "Shape" || n.opType() == "Size") && n.domain().empty() && i == 0 &&
           n.input(0)->shape().isStatic();
  }

  Expected<std::vector<TensorType>> inferBody(Graph& body, const std::vector<TensorType>& ins,
                                              int depth) {
    if (ins.size() != body.inputs().size())
      return makeError("graph '{}': expects {} inputs, the op supplies {}", body.name(),
                       body.inputs().size(), ins.size());
    for (size_t i = 0; i < ins.size(); ++i) {
      Value* v = body.inputs()[i];
      TensorType t = ins[i];
      // Keep a declared body-input type where it is more precise.
      if (v->type().shape.rankKnown() && !t.shape.rankKnown()) t.shape = v->type().shape;
      if (t.dtype == DType::Undefined) t.dtype = v->dtype();
      v->setType(t);
    }
    KILN_RETURN_IF_ERROR(run(body, depth));
    std::vector<TensorType> outs;
    for (const Value* v : body.outputs()) outs.push_back(v->type());
    return outs;
  }

  const OpRegistry& registry_;
  const InferOptions& options_;
  KnownValues& known_;
  std::map<std::string, int64_t> bindings_;
};

// True when a dim of the graph (or its subgraphs) is still a data symbol that is now bound.
bool hasBoundDataSymbol(const Graph& g, const std::map<std::string, int64_t>& bindings) {
  for (const auto& np : g.nodes()) {
    for (const Value* v : np->outputs())
      if (v && v->shape().rankKnown())
        for (const Dim& d : v->shape().dims())
          if (d.isSymbolic() && bindings.count(d.symbol)) return true;
    for (const auto& body : np->subgraphs())
      if (hasBoundDataSymbol(*body, bindings)) return true;
  }
  return false;
}

}  // namespace

Status inferShapes(Graph& g, const OpRegistry& registry, const InferOptions& options,
                   KnownValues* known) {
  KnownValues local;
  Inferer inf(registry, options, known ? *known : local);
  KILN_RETURN_IF_ERROR(inf.run(g, 0));
  // A run-time size that a declared shape downstream fixes (Range on a run-time size whose
  // result reaches a declared graph output): infer again with that size static, so every
  // value between them is static; the op's code checks the size at run time.
  for (int round = 0; round < 4 && hasBoundDataSymbol(g, inf.bindings()); ++round)
    KILN_RETURN_IF_ERROR(inf.run(g, 0));
  return Status();
}

std::vector<std::string> unresolvedDims(const Graph& g) {
  std::set<std::string> names;
  auto scan = [&](const std::vector<Value*>& vs) {
    for (const Value* v : vs) {
      if (!v->shape().rankKnown()) {
        names.insert(v->name() + ":rank");
        continue;
      }
      for (size_t i = 0; i < v->shape().dims().size(); ++i) {
        const Dim& d = v->shape()[i];
        if (d.isSymbolic())
          names.insert(d.symbol);
        else if (!d.isStatic())
          names.insert(v->name() + ":" + std::to_string(i));
      }
    }
  };
  scan(g.inputs());
  scan(g.outputs());
  return {names.begin(), names.end()};
}

}  // namespace kiln
