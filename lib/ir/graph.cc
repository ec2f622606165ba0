// Graph construction and mutation with use-list maintenance.
#include "kiln/ir/graph.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

namespace kiln {

// ---- Node ----

void Node::setInput(size_t i, Value* v) {
  if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
  if (Value* old = inputs_[i]) {
    auto& uses = old->uses_;
    auto it = std::find(uses.begin(), uses.end(), Use{this, int(i)});
    if (it != uses.end()) uses.erase(it);
  }
  inputs_[i] = v;
  if (v) v->uses_.push_back(Use{this, int(i)});
}

const Attribute* Node::attr(const std::string& name) const {
  auto it = attrs_.find(name);
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Node::attrInt(const std::string& name, int64_t dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind() == AttrKind::Int ? a->i() : dflt;
}
float Node::attrFloat(const std::string& name, float dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind() == AttrKind::Float ? a->f() : dflt;
}
std::string Node::attrString(const std::string& name, const std::string& dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind() == AttrKind::String ? a->s() : dflt;
}
std::vector<int64_t> Node::attrInts(const std::string& name, std::vector<int64_t> dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind() == AttrKind::Ints ? a->ints() : dflt;
}
std::vector<float> Node::attrFloats(const std::string& name, std::vector<float> dflt) const {
  const Attribute* a = attr(name);
  return a && a->kind() == AttrKind::Floats ? a->floats() : dflt;
}

std::vector<Graph*> Node::subgraphs() const {
  std::vector<Graph*> out;
  for (const auto& [name, a] : attrs_) {
    if (a.kind() == AttrKind::Graph) out.push_back(a.g().get());
    if (a.kind() == AttrKind::Graphs)
      for (const auto& g : a.graphs()) out.push_back(g.get());
  }
  return out;
}

std::string Node::describe() const {
  std::string s = "node '" + name_ + "' (" + opType_;
  if (!domain_.empty()) s += ", " + domain_;
  return s + ")";
}

// ---- Graph ----

Value* Graph::newValue(const std::string& name) {
  auto v = std::make_unique<Value>();
  v->name_ = name;
  v->owner_ = this;
  Value* raw = v.get();
  values_.push_back(std::move(v));
  raw->self_ = std::prev(values_.end());
  byName_[name] = raw;
  return raw;
}

Expected<Value*> Graph::addInput(const std::string& name, TensorType type) {
  if (name.empty()) return makeError("graph '{}': an input has an empty name", name_);
  if (findLocalValue(name))
    return makeError("graph '{}': input name '{}' is already defined", name_, name);
  Value* v = newValue(name);
  v->type_ = std::move(type);
  v->isGraphInput_ = true;
  inputs_.push_back(v);
  return v;
}

Expected<Value*> Graph::addInitializer(const std::string& name, Tensor data) {
  if (name.empty()) return makeError("graph '{}': an initializer has an empty name", name_);
  if (findLocalValue(name))
    return makeError("graph '{}': initializer name '{}' is already defined", name_, name);
  Value* v = newValue(name);
  v->type_ = TensorType{data.dtype(), Shape::ofStatic(data.dims())};
  v->initializer_ = std::move(data);
  initializers_.push_back(v);
  return v;
}

Expected<Node*> Graph::addNode(const std::string& opType, const std::string& domain,
                               const std::string& name, std::vector<Value*> inputs,
                               const std::vector<std::string>& outputNames) {
  for (const auto& out : outputNames)
    if (!out.empty() && findLocalValue(out))
      return makeError(
          "node '{}' ({}): output name '{}' is already defined — value names must be "
          "unique (SSA)",
          name, opType, out);
  auto n = std::make_unique<Node>();
  n->opType_ = opType;
  n->domain_ = domain;
  n->name_ = name;
  n->owner_ = this;
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  raw->self_ = std::prev(nodes_.end());
  raw->inputs_.resize(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) raw->setInput(i, inputs[i]);
  for (size_t i = 0; i < outputNames.size(); ++i) {
    std::string outName = outputNames[i].empty() ? uniqueName(name + "_unused") : outputNames[i];
    Value* v = newValue(outName);
    v->producer_ = raw;
    v->producerIndex_ = int(i);
    raw->outputs_.push_back(v);
  }
  return raw;
}

void Graph::eraseNode(Node* n) {
  for (size_t i = 0; i < n->inputs_.size(); ++i) n->setInput(i, nullptr);
  for (Value* out : n->outputs_) {
    out->producer_ = nullptr;
    byName_.erase(out->name_);
    values_.erase(out->self_);
  }
  nodes_.erase(n->self_);
}

void Graph::truncateOutputs(Node* n, size_t count) {
  while (n->outputs_.size() > count) {
    Value* out = n->outputs_.back();
    n->outputs_.pop_back();
    out->producer_ = nullptr;
    byName_.erase(out->name_);
    values_.erase(out->self_);
  }
}

void Graph::swapNames(Value* a, Value* b) {
  std::swap(a->name_, b->name_);
  byName_[a->name_] = a;
  byName_[b->name_] = b;
}

void Graph::replaceAllUsesWith(Value* from, Value* to) {
  auto uses = from->uses_;
  for (const Use& u : uses) u.node->setInput(size_t(u.index), to);
  for (Value*& o : outputs_)
    if (o == from) o = to;
}

void Graph::eraseValue(Value* v) {
  auto drop = [v](std::vector<Value*>& list) {
    list.erase(std::remove(list.begin(), list.end(), v), list.end());
  };
  drop(inputs_);
  drop(initializers_);
  drop(outputs_);
  byName_.erase(v->name_);
  values_.erase(v->self_);
}

Value* Graph::findLocalValue(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

Value* Graph::findValue(const std::string& name) const {
  for (const Graph* g = this; g; g = g->parent_)
    if (Value* v = g->findLocalValue(name)) return v;
  return nullptr;
}

std::string Graph::uniqueName(const std::string& base) const {
  for (;;) {
    std::string candidate = base + "_" + std::to_string(nameCounter_++);
    if (!findValue(candidate)) return candidate;
  }
}

namespace {
// Values of `owner` read by `g`'s nodes (directly or in nested subgraphs).
void collectOuterReads(const Graph& g, const Graph* owner, std::vector<Value*>& out) {
  for (const auto& n : g.nodes()) {
    for (Value* in : n->inputs())
      if (in && in->owner() == owner) out.push_back(in);
    for (Graph* sub : n->subgraphs()) collectOuterReads(*sub, owner, out);
  }
}
}  // namespace

Status Graph::sortTopologically() {
  // Kahn's algorithm, stable with respect to the current order.
  std::unordered_map<Node*, size_t> pending;
  std::unordered_map<Node*, std::vector<Node*>> dependents;
  std::vector<Node*> order;
  order.reserve(nodes_.size());
  for (const auto& n : nodes_) {
    std::vector<Value*> reads(n->inputs_.begin(), n->inputs_.end());
    for (Graph* sub : n->subgraphs()) collectOuterReads(*sub, this, reads);
    std::unordered_set<Node*> deps;
    for (Value* v : reads)
      if (v && v->producer_ && v->owner_ == this && v->producer_ != n.get())
        deps.insert(v->producer_);
      else if (v && v->producer_ == n.get())
        return makeError("{} reads its own output '{}': the graph has a cycle", n->describe(),
                         v->name_);
    pending[n.get()] = deps.size();
    for (Node* d : deps) dependents[d].push_back(n.get());
  }
  std::deque<Node*> ready;
  for (const auto& n : nodes_)
    if (pending[n.get()] == 0) ready.push_back(n.get());
  // Keep original relative order among ready nodes by processing a min-position queue.
  std::unordered_map<Node*, size_t> position;
  size_t pos = 0;
  for (const auto& n : nodes_) position[n.get()] = pos++;
  auto cmp = [&](Node* a, Node* b) { return position[a] > position[b]; };
  std::vector<Node*> heap(ready.begin(), ready.end());
  std::make_heap(heap.begin(), heap.end(), cmp);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), cmp);
    Node* n = heap.back();
    heap.pop_back();
    order.push_back(n);
    for (Node* d : dependents[n])
      if (--pending[d] == 0) {
        heap.push_back(d);
        std::push_heap(heap.begin(), heap.end(), cmp);
      }
  }
  if (order.size() != nodes_.size()) {
    for (const auto& n : nodes_)
      if (pending[n.get()] != 0)
        return makeError("{} is on a cycle: the graph is not acyclic", n->describe());
  }
  std::list<std::unique_ptr<Node>> sorted;
  for (Node* n : order) sorted.splice(sorted.end(), nodes_, n->self_);
  nodes_.splice(nodes_.end(), sorted);
  return Status();
}

int64_t Model::opsetVersion(const std::string& domain) const {
  for (const auto& o : meta.opsets)
    if (o.domain == domain || (domain.empty() && o.domain == "ai.onnx")) return o.version;
  return 0;
}

}  // namespace kiln
