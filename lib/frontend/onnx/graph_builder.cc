// Builds kiln graphs from ONNX GraphProtos: values, nodes, attributes and subgraphs.
#include <unordered_set>

#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

constexpr std::string_view kFixModel = "fix the model";

bool isDefaultDomain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

/// The one non-default domain kiln imports, at opset 1, for the ops it defines there.
constexpr std::string_view kTrainingDomain = "ai.onnx.preview.training";

// A node ready to enter the graph, and the source node it came from (for messages).
struct PlannedNode {
  NodeSpec spec;
  SourceNodeRef origin;
};

// Builds one graph; subgraphs recurse through buildGraph with depth + 1.
class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto& proto, Graph& g, ImportContext& ctx,
               const DeclaredTypes* parentTypes, int depth)
      : proto_(proto), g_(g), ctx_(ctx), declared_(parentTypes), depth_(depth) {}

  Status build() {
    if (depth_ > ctx_.options.maxSubgraphDepth) return tooDeep();
    g_.setDocString(proto_.doc_string());
    KILN_RETURN_IF_ERROR(addInitializers());
    KILN_RETURN_IF_ERROR(addInputs());
    declareTypes();
    KILN_RETURN_IF_ERROR(planNodes());
    KILN_RETURN_IF_ERROR(createNodes());
    KILN_RETURN_IF_ERROR(wireNodes());
    std::vector<PlannedNode>().swap(planned_);  // the graph holds everything now: lower the peak
    KILN_RETURN_IF_ERROR(addOutputs());
    KILN_RETURN_IF_ERROR(applyValueInfo());
    if (Status st = g_.sortTopologically(); !st.ok())
      return ctx_.fail(
          fmt::format("graph '{}': {}", printableName(g_.name()), printableMessage(st.message())),
          "fix the model: ONNX graphs must be acyclic");
    return Status();
  }

  Error tooDeep() const {
    return ctx_.fail(
        fmt::format("subgraphs are nested more than {} deep", ctx_.options.maxSubgraphDepth),
        "raise --max-nesting if the model is trusted (docs/limits.md)");
  }

 private:
  std::string graphName() const { return printableName(g_.name()); }

  // ONNX forbids a subgraph from redefining a name of an enclosing graph (SSA across scopes).
  bool shadowsOuter(const std::string& name) const {
    return g_.parent() && g_.parent()->findValue(name);
  }

  Status addInitializers() {
    if (proto_.sparse_initializer_size() > 0)
      return ctx_.fail(fmt::format("graph '{}': sparse initializers are unsupported", graphName()),
                       "store them as dense tensors");
    for (int i = 0; i < proto_.initializer_size(); ++i) {
      onnx::TensorProto& t = *proto_.mutable_initializer(i);
      if (t.name().empty())
        return ctx_.fail(fmt::format("graph '{}': initializer {} has no name", graphName(), i),
                         kFixModel);
      std::string what = fmt::format("initializer '{}'", printableName(t.name()));
      if (g_.findLocalValue(t.name()))
        return ctx_.fail(fmt::format("{}: is defined twice", what), kFixModel);
      if (shadowsOuter(t.name()))
        return ctx_.fail(fmt::format("{}: redefines a value of an enclosing graph", what),
                         kFixModel);
      KILN_ASSIGN_OR_RETURN(Tensor data, convertTensor(t, ctx_, what));
      if (t.has_raw_data()) std::string().swap(*t.mutable_raw_data());  // keep one copy alive
      auto v = g_.addInitializer(t.name(), std::move(data));
      if (!v) return ctx_.fail(printableMessage(v.message()), kFixModel);
      (*v)->setDocString(t.doc_string());
    }
    return Status();
  }

  Status addInputs() {
    for (const auto& vi : proto_.input()) {
      if (vi.name().empty())
        return ctx_.fail(fmt::format("graph '{}': an input has no name", graphName()), kFixModel);
      std::string what =
          fmt::format("graph '{}' input '{}'", graphName(), printableName(vi.name()));
      if (Value* v = g_.findLocalValue(vi.name())) {
        if (v->isInitializer()) continue;  // IR < 4 lists initializers as inputs: a constant
        return ctx_.fail(fmt::format("{}: is listed twice", what), kFixModel);
      }
      if (shadowsOuter(vi.name()))
        return ctx_.fail(fmt::format("{}: redefines a value of an enclosing graph", what),
                         kFixModel);
      KILN_ASSIGN_OR_RETURN(TensorType type, convertValueType(vi, ctx_, what));
      auto v = g_.addInput(vi.name(), std::move(type));
      if (!v) return ctx_.fail(printableMessage(v.message()), kFixModel);
      (*v)->setDocString(vi.doc_string());
    }
    return Status();
  }

  // Types the model states, for normalizations that create constants of an input's type.
  void declareTypes() {
    for (Value* v : g_.initializers()) declared_.add(v->name(), v->type());
    for (Value* v : g_.inputs()) declared_.add(v->name(), v->type());
    for (const auto* list : {&proto_.value_info(), &proto_.output()})
      for (const auto& vi : *list)
        if (auto t = convertValueType(vi, ctx_, "value_info"); t.ok())
          declared_.add(vi.name(), std::move(*t));
  }

  Error nodeError(const SourceNodeRef& where, std::string_view what,
                  std::string_view todo = kFixModel) const {
    return Error(formatNodeMessage(where, what, todo));
  }

  // Checks the node's domain, opset and op, converts it to a spec and normalizes it.
  Status planNode(onnx::NodeProto& np, const SourceNodeRef& where) {
    if (where.opType.empty()) return nodeError(where, "has no op_type");
    if (where.domain == kTrainingDomain) return planTrainingNode(np, where);
    if (!isDefaultDomain(where.domain))
      return nodeError(
          where, fmt::format("ops of domain '{}' are unsupported", printableName(where.domain)),
          "kiln imports only the default ONNX domain (ai.onnx); export the model "
          "without custom or contrib ops");
    if (where.opset == 0)
      return nodeError(where, "the model imports no ai.onnx opset",
                       "add an opset_import entry for the default domain");
    if (!ctx_.registry.find("", std::string(coreOpName(where.opType))))
      return nodeError(where,
                       fmt::format("op '{}' is unsupported by kiln", printableName(where.opType)),
                       "rewrite the model without it, or add the op (docs/adding-an-op.md)");
    int64_t since = onnxSinceVersion(where.opType, where.opset);
    if (since == 0)
      return nodeError(where,
                       fmt::format("op '{}' does not exist in ai.onnx opset {}",
                                   printableName(where.opType), where.opset),
                       "fix the op type or the model's opset_import");
    NodeSpec spec;
    spec.opType = where.opType;
    spec.name = where.node;
    spec.docString = np.doc_string();
    spec.inputs.assign(np.input().begin(), np.input().end());
    spec.outputs.assign(np.output().begin(), np.output().end());
    for (auto& ap : *np.mutable_attribute())
      KILN_RETURN_IF_ERROR(convertAttribute(ap, spec, where));
    NormalizeContext nctx(ctx_, g_, declared_, where, since);
    KILN_ASSIGN_OR_RETURN(std::vector<NodeSpec> specs, normalizeNode(std::move(spec), nctx));
    for (NodeSpec& s : specs) {
      if (!ctx_.registry.find(s.domain, s.opType))
        return nodeError(
            where, fmt::format("importing it needs op '{}', which kiln does not support", s.opType),
            "add the op to kiln (docs/adding-an-op.md)");
      while (!s.inputs.empty() && s.inputs.back().empty()) s.inputs.pop_back();
      while (!s.outputs.empty() && s.outputs.back().empty()) s.outputs.pop_back();
      for (std::string& out : s.outputs)  // an omitted output in the middle still has a slot
        if (out.empty()) out = ctx_.freshName(g_, s.name + "_unused");
      planned_.push_back({std::move(s), where});
    }
    return Status();
  }

  // Optimizer updates of ai.onnx.preview.training opset 1 (Adagrad, Momentum, Adam): taken
  // as they are, with no older forms to normalize.
  Status planTrainingNode(onnx::NodeProto& np, const SourceNodeRef& where) {
    if (where.opset != 1)
      return nodeError(
          where,
          fmt::format("opset {} of domain '{}' is unsupported", where.opset, kTrainingDomain),
          "kiln imports opset 1 of that domain; fix the model's opset_import");
    if (!ctx_.registry.find(where.domain, where.opType))
      return nodeError(where,
                       fmt::format("op '{}' of domain '{}' is unsupported (kiln has its Adagrad, "
                                   "Momentum and Adam)",
                                   printableName(where.opType), kTrainingDomain),
                       "rewrite the model without it, or add the op (docs/adding-an-op.md)");
    NodeSpec spec;
    spec.opType = where.opType;
    spec.domain = where.domain;
    spec.name = where.node;
    spec.docString = np.doc_string();
    spec.inputs.assign(np.input().begin(), np.input().end());
    spec.outputs.assign(np.output().begin(), np.output().end());
    for (auto& ap : *np.mutable_attribute())
      KILN_RETURN_IF_ERROR(convertAttribute(ap, spec, where));
    for (const std::string& out : spec.outputs)
      if (out.empty())
        return nodeError(where, "omits an output; kiln needs every output of an optimizer op",
                         "name every output");
    planned_.push_back({std::move(spec), where});
    return Status();
  }

  Status planNodes() {
    std::unordered_set<std::string> nodeNames;
    nodeNames.reserve(proto_.node_size());
    planned_.reserve(proto_.node_size());
    for (const auto& np : proto_.node())
      if (!np.name().empty()) nodeNames.insert(np.name());
    for (int i = 0; i < proto_.node_size(); ++i) {
      onnx::NodeProto& np = *proto_.mutable_node(i);
      std::string name = np.name();
      if (name.empty()) {  // deterministic, and distinct from the model's own node names
        std::string base = fmt::format("{}_{}", np.op_type(), i);
        name = base;
        for (int k = 1; nodeNames.count(name); ++k) name = fmt::format("{}_{}", base, k);
        nodeNames.insert(name);
      }
      SourceNodeRef where{ctx_.file, name, np.op_type(), np.domain(), ctx_.opsetFor(np.domain())};
      if (ctx_.functions.count({np.domain(), np.op_type()})) {  // a model-local function
        std::vector<InlinedNode> body;
        KILN_RETURN_IF_ERROR(inlineFunctionCall(np, where, ctx_, g_, inlined_, body));
        for (InlinedNode& b : body) KILN_RETURN_IF_ERROR(planNode(*b.proto, b.where));
        continue;
      }
      KILN_RETURN_IF_ERROR(planNode(np, where));
    }
    return Status();
  }

  Status convertAttribute(onnx::AttributeProto& ap, NodeSpec& spec, const SourceNodeRef& where) {
    const std::string& name = ap.name();
    std::string attr = fmt::format("attribute '{}'", printableName(name));
    if (name.empty()) return nodeError(where, "has an attribute without a name");
    bool dup = spec.attrs.count(name) != 0;
    for (const auto& pg : spec.graphs) dup = dup || pg.attr == name;
    if (dup) return nodeError(where, fmt::format("{} appears twice", attr));
    if (!ap.ref_attr_name().empty())
      return nodeError(where, fmt::format("{} refers to a function attribute", attr),
                       "inline the model's functions before compiling");
    using AP = onnx::AttributeProto;
    AP::AttributeType type = ap.type();
    if (type == AP::UNDEFINED) {  // very old models leave the type out: infer it
      type = ap.has_f()              ? AP::FLOAT
             : ap.has_i()            ? AP::INT
             : ap.has_s()            ? AP::STRING
             : ap.has_t()            ? AP::TENSOR
             : ap.has_g()            ? AP::GRAPH
             : ap.floats_size() > 0  ? AP::FLOATS
             : ap.ints_size() > 0    ? AP::INTS
             : ap.strings_size() > 0 ? AP::STRINGS
             : ap.tensors_size() > 0 ? AP::TENSORS
             : ap.graphs_size() > 0  ? AP::GRAPHS
                                     : AP::UNDEFINED;
    }
    std::string tensorWhat = fmt::format("tensor {} of node '{}'", attr, printableName(spec.name));
    switch (type) {
      case AP::FLOAT:
        spec.attrs[name] = Attribute(ap.f());
        break;
      case AP::INT:
        spec.attrs[name] = Attribute(int64_t(ap.i()));
        break;
      case AP::STRING:
        spec.attrs[name] = Attribute(std::string(ap.s()));
        break;
      case AP::FLOATS:
        spec.attrs[name] = Attribute(std::vector<float>(ap.floats().begin(), ap.floats().end()));
        break;
      case AP::INTS:
        spec.attrs[name] = Attribute(std::vector<int64_t>(ap.ints().begin(), ap.ints().end()));
        break;
      case AP::STRINGS:
        spec.attrs[name] =
            Attribute(std::vector<std::string>(ap.strings().begin(), ap.strings().end()));
        break;
      case AP::TENSOR: {
        KILN_ASSIGN_OR_RETURN(Tensor t, convertTensor(ap.t(), ctx_, tensorWhat));
        spec.attrs[name] = Attribute(std::move(t));
        break;
      }
      case AP::TENSORS: {
        std::vector<Tensor> ts;
        for (const auto& tp : ap.tensors()) {
          KILN_ASSIGN_OR_RETURN(Tensor t, convertTensor(tp, ctx_, tensorWhat));
          ts.push_back(std::move(t));
        }
        spec.attrs[name] = Attribute(std::move(ts));
        break;
      }
      case AP::GRAPH:
        spec.graphs.push_back({name, {ap.mutable_g()}, false});
        break;
      case AP::GRAPHS: {
        PendingGraphs pg{name, {}, true};
        for (auto& g : *ap.mutable_graphs()) pg.bodies.push_back(&g);
        spec.graphs.push_back(std::move(pg));
        break;
      }
      case AP::UNDEFINED:
        return nodeError(where, fmt::format("{} has no value", attr));
      default:
        return nodeError(
            where, fmt::format("{} is a sparse tensor or type, which kiln does not support", attr),
            "store it as a dense tensor");
    }
    return Status();
  }

  Status createNodes() {
    nodes_.reserve(planned_.size());
    for (PlannedNode& p : planned_) {
      std::unordered_set<std::string> own;
      for (const std::string& out : p.spec.outputs) {
        if (g_.findLocalValue(out) || !own.insert(out).second)
          return nodeError(p.origin,
                           fmt::format("output '{}' is already defined (by another node, an input "
                                       "or an initializer)",
                                       printableName(out)),
                           "value names must be unique (SSA); rename one of them");
        if (shadowsOuter(out))
          return nodeError(p.origin,
                           fmt::format("output '{}' redefines a value of an enclosing graph",
                                       printableName(out)),
                           "value names must be unique across a graph and its subgraphs");
      }
      auto n = g_.addNode(p.spec.opType, p.spec.domain, p.spec.name, {}, p.spec.outputs);
      if (!n) return nodeError(p.origin, printableMessage(n.message()));
      for (auto& [k, a] : p.spec.attrs) (*n)->setAttr(k, std::move(a));
      (*n)->setDocString(p.spec.docString);
      nodes_.push_back(*n);
    }
    return Status();
  }

  // Connects inputs by name (enclosing graphs included), then builds subgraphs, which may
  // read any value of this graph now that every node exists.
  Status wireNodes() {
    for (size_t i = 0; i < planned_.size(); ++i) {
      const PlannedNode& p = planned_[i];
      Node* n = nodes_[i];
      for (size_t j = 0; j < p.spec.inputs.size(); ++j) {
        const std::string& name = p.spec.inputs[j];
        if (name.empty()) {
          n->setInput(j, nullptr);
          continue;
        }
        Value* v = g_.findValue(name);
        if (!v)
          return nodeError(p.origin,
                           fmt::format("input {} '{}' is not defined by any graph input, "
                                       "initializer or node output",
                                       j, printableName(name)),
                           "fix the model (is an initializer or a graph input missing?)");
        n->setInput(j, v);
      }
      for (const PendingGraphs& pg : p.spec.graphs) {
        std::vector<Attribute::GraphPtr> graphs;
        for (size_t k = 0; k < pg.bodies.size(); ++k) {
          onnx::GraphProto& body = *pg.bodies[k];
          std::string name = !body.name().empty() ? body.name()
                             : pg.isList          ? fmt::format("{}.{}.{}", p.spec.name, pg.attr, k)
                                                  : fmt::format("{}.{}", p.spec.name, pg.attr);
          auto sub = std::make_shared<Graph>(name, &g_);
          KILN_RETURN_IF_ERROR(buildGraph(body, *sub, ctx_, &declared_, depth_ + 1));
          graphs.push_back(std::move(sub));
        }
        n->setAttr(pg.attr, pg.isList ? Attribute(std::move(graphs)) : Attribute(graphs.at(0)));
      }
    }
    return Status();
  }

  // A declared type fills in a node output that nothing has typed yet.
  void refine(Value* v, const TensorType& t, const std::string& doc) {
    if (v->owner() != &g_ || !v->producer()) return;
    if (v->type().dtype == DType::Undefined && !v->shape().rankKnown()) v->setType(t);
    if (v->docString().empty()) v->setDocString(doc);
  }

  Status addOutputs() {
    std::unordered_set<std::string> seen;
    for (const auto& vi : proto_.output()) {
      std::string what =
          fmt::format("graph '{}' output '{}'", graphName(), printableName(vi.name()));
      if (vi.name().empty())
        return ctx_.fail(fmt::format("graph '{}': an output has no name", graphName()), kFixModel);
      if (!seen.insert(vi.name()).second)
        return ctx_.fail(fmt::format("{}: is listed twice", what), kFixModel);
      Value* v = g_.findValue(vi.name());
      if (!v)
        return ctx_.fail(fmt::format("{}: is not produced by any node, input or initializer", what),
                         kFixModel);
      KILN_ASSIGN_OR_RETURN(TensorType t, convertValueType(vi, ctx_, what));
      refine(v, t, vi.doc_string());
      g_.addOutput(v);
    }
    return Status();
  }

  Status applyValueInfo() {
    for (const auto& vi : proto_.value_info()) {
      Value* v = g_.findLocalValue(vi.name());
      // value_info about sequences and other non-tensors is left to the ops that use them.
      if (!v || !vi.has_type() || vi.type().value_case() != onnx::TypeProto::kTensorType) continue;
      std::string what = fmt::format("value_info '{}'", printableName(vi.name()));
      KILN_ASSIGN_OR_RETURN(TensorType t, convertValueType(vi, ctx_, what));
      refine(v, t, vi.doc_string());
    }
    return Status();
  }

  onnx::GraphProto& proto_;
  Graph& g_;
  ImportContext& ctx_;
  DeclaredTypes declared_;
  int depth_;
  std::vector<PlannedNode> planned_;
  std::vector<Node*> nodes_;
  std::deque<onnx::NodeProto> inlined_;  ///< function body nodes instantiated for calls
};

}  // namespace

const TensorType* DeclaredTypes::find(const std::string& name) const {
  for (const DeclaredTypes* d = this; d; d = d->parent_) {
    auto it = d->types_.find(name);
    if (it != d->types_.end()) return &it->second;
  }
  return nullptr;
}

Status buildGraph(onnx::GraphProto& proto, Graph& g, ImportContext& ctx,
                  const DeclaredTypes* parentTypes, int depth) {
  return GraphBuilder(proto, g, ctx, parentTypes, depth).build();
}

Status collectNames(const onnx::GraphProto& proto, ImportContext& ctx, int depth) {
  if (depth > ctx.options.maxSubgraphDepth)
    return ctx.fail(
        fmt::format("subgraphs are nested more than {} deep", ctx.options.maxSubgraphDepth),
        "raise --max-nesting if the model is trusted (docs/limits.md)");
  for (const auto* list : {&proto.input(), &proto.output(), &proto.value_info()})
    for (const auto& vi : *list) ctx.reservedNames.insert(vi.name());
  for (const auto& t : proto.initializer()) ctx.reservedNames.insert(t.name());
  for (const auto& vi : proto.output()) ctx.readNames.insert(vi.name());
  for (const auto& n : proto.node()) {
    for (const auto& in : n.input()) {
      ctx.reservedNames.insert(in);
      ctx.readNames.insert(in);
    }
    for (const auto& out : n.output()) ctx.reservedNames.insert(out);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) KILN_RETURN_IF_ERROR(collectNames(a.g(), ctx, depth + 1));
      for (const auto& g : a.graphs()) KILN_RETURN_IF_ERROR(collectNames(g, ctx, depth + 1));
    }
  }
  return Status();
}

}  // namespace kiln::onnx_import
