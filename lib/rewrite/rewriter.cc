// Rewriter and the greedy pattern driver.
#include "kiln/rewrite/rewriter.h"

#include <algorithm>
#include <unordered_map>

namespace kiln {

RewriteStats& RewriteStats::operator+=(const RewriteStats& o) {
  nodesAdded += o.nodesAdded;
  nodesRemoved += o.nodesRemoved;
  nodesFused += o.nodesFused;
  initializersAdded += o.initializersAdded;
  initializersRemoved += o.initializersRemoved;
  for (const auto& [k, v] : o.patterns) patterns[k] += v;
  return *this;
}

std::vector<std::string> sourcesOf(const std::vector<const Node*>& nodes) {
  std::vector<std::string> out;
  auto add = [&](const std::string& s) {
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  for (const Node* n : nodes) {
    if (!n) continue;
    if (n->annotations().sources.empty())
      add(n->name());
    else
      for (const std::string& s : n->annotations().sources) add(s);
  }
  return out;
}

std::string Rewriter::freshName(const std::string& base) const {
  return g_.findValue(base) ? g_.uniqueName(base) : base;
}

Expected<Node*> Rewriter::create(const std::string& opType, const std::string& domain,
                                 std::vector<Value*> inputs, const std::vector<TensorType>& types,
                                 const std::string& nameHint,
                                 const std::vector<const Node*>& sources) {
  std::string nodeName = nameHint.empty() ? opType : nameHint;
  std::vector<std::string> outNames;
  for (size_t i = 0; i < types.size(); ++i) {
    std::string candidate =
        freshName(types.size() == 1 ? nodeName : nodeName + "_" + std::to_string(i));
    while (std::find(outNames.begin(), outNames.end(), candidate) != outNames.end())
      candidate = g_.uniqueName(candidate);
    outNames.push_back(candidate);
  }
  KILN_ASSIGN_OR_RETURN(Node * n,
                        g_.addNode(opType, domain, nodeName, std::move(inputs), outNames));
  for (size_t i = 0; i < types.size(); ++i) n->output(i)->setType(types[i]);
  n->annotations().sources = sourcesOf(sources);
  ++stats_.nodesAdded;
  return n;
}

Expected<Value*> Rewriter::constant(const std::string& nameHint, Tensor data) {
  KILN_ASSIGN_OR_RETURN(Value * v, g_.addInitializer(freshName(nameHint), std::move(data)));
  ++stats_.initializersAdded;
  return v;
}

namespace {
bool isGraphOutput(const Graph& g, const Value* v) {
  const auto& outs = g.outputs();
  return std::find(outs.begin(), outs.end(), v) != outs.end();
}
}  // namespace

bool Rewriter::canReplace(const Value* from, const Value* to) const {
  if (!isGraphOutput(g_, from)) return true;
  return to && to->producer() && to->owner() == &g_ && !isGraphOutput(g_, to);
}

void Rewriter::replaceAllUses(Value* from, Value* to) {
  auto uses = from->uses();
  for (const Use& u : uses) u.node->setInput(size_t(u.index), to);
  if (isGraphOutput(g_, from)) {
    std::vector<Value*> outs = g_.outputs();
    for (Value*& o : outs)
      if (o == from) o = to;
    g_.setOutputs(std::move(outs));
    g_.swapNames(from, to);
  }
}

bool Rewriter::replaceNode(Node* n, const std::vector<Value*>& replacements) {
  for (size_t i = 0; i < n->numOutputs(); ++i) {
    Value* out = n->output(i);
    Value* to = i < replacements.size() ? replacements[i] : nullptr;
    if (!to && (!out->uses().empty() || isGraphOutput(g_, out))) return false;
    if (to && !canReplace(out, to)) return false;
  }
  for (size_t i = 0; i < n->numOutputs(); ++i)
    if (i < replacements.size() && replacements[i]) replaceAllUses(n->output(i), replacements[i]);
  erase(n);
  return true;
}

void Rewriter::setInput(Node* n, size_t i, Value* v) { n->setInput(i, v); }

namespace {
void dropSubgraphUses(Graph& g) {
  for (const auto& n : g.nodes()) {
    for (size_t i = 0; i < n->numInputs(); ++i) n->setInput(i, nullptr);
    for (Graph* sub : n->subgraphs()) dropSubgraphUses(*sub);
  }
}
}  // namespace

void Rewriter::erase(Node* n) {
  for (Graph* sub : n->subgraphs()) dropSubgraphUses(*sub);
  erased_.insert(n);
  g_.eraseNode(n);
  ++stats_.nodesRemoved;
}

bool Rewriter::eraseInitializer(Value* v) {
  if (!v->isInitializer() || !v->uses().empty() || isGraphOutput(g_, v)) return false;
  g_.eraseValue(v);
  ++stats_.initializersRemoved;
  return true;
}

bool Rewriter::fail(const std::string& pattern, const Node& n, std::string_view why) {
  if (trace_) *trace_ << pattern << ": " << n.describe() << ": " << why << "\n";
  return false;
}

Expected<bool> applyPatternsGreedily(
    Graph& g, const std::vector<std::unique_ptr<RewritePattern>>& patterns, Rewriter& rw,
    const GreedyOptions& options) {
  std::unordered_map<std::string, std::vector<const RewritePattern*>> byRoot;
  for (const auto& p : patterns) byRoot[p->rootDomain() + "::" + p->rootOp()].push_back(p.get());
  bool any = false;
  for (int sweep = 0;; ++sweep) {
    if (sweep >= options.maxSweeps)
      return makeError("graph '{}': rewrite patterns did not reach a fixpoint in {} sweeps",
                       g.name(), options.maxSweeps);
    std::vector<Node*> snapshot;
    for (const auto& n : g.nodes()) snapshot.push_back(n.get());
    rw.forgetErased();
    bool changed = false;
    for (Node* n : snapshot) {
      if (rw.erased(n)) continue;
      auto it = byRoot.find(n->domain() + "::" + n->opType());
      if (it == byRoot.end()) continue;
      for (const RewritePattern* p : it->second) {
        if (p->matchAndRewrite(*n, rw)) {
          rw.notePattern(p->name());
          changed = true;
          break;  // the node may be gone; later sweeps revisit what remains
        }
      }
    }
    if (!changed) break;
    any = true;
    KILN_RETURN_IF_ERROR(g.sortTopologically());
  }
  return any;
}

}  // namespace kiln
