// Common subexpression elimination: nodes with the same op, attributes and inputs compute the
// same values, and initializers with the same bytes are the same constant.
#include <unordered_map>

#include "kiln/support/sha256.h"
#include "passes.h"

namespace kiln {
namespace {

std::string tensorKey(const Tensor& t) {
  std::string k = fmt::format("{}[{}]", int(t.dtype()), fmt::join(t.dims(), ","));
  if (t.dtype() == DType::String) {
    for (const std::string& s : t.strings()) k += fmt::format("{}:{};", s.size(), s);
    return k;
  }
  return k + sha256Hex(std::string_view(reinterpret_cast<const char*>(t.bytes()), t.byteSize()));
}

/// Type, dims and up to 64 bytes from each end: equal tensors have equal keys.
std::string cheapKey(const Tensor& t) {
  std::string k = fmt::format("{}[{}]", int(t.dtype()), fmt::join(t.dims(), ","));
  if (t.dtype() == DType::String) return k + std::to_string(t.strings().size());
  const char* b = reinterpret_cast<const char*>(t.bytes());
  if (!b || t.byteSize() == 0) return k;
  size_t n = t.byteSize(), edge = std::min<size_t>(n, 64);
  k.append(b, edge);
  k.append(b + n - edge, edge);
  return k;
}

/// A canonical key of a node's attributes; nullopt when they hold a subgraph.
std::optional<std::string> attrsKey(const Node& n) {
  std::string k;
  for (const auto& [name, a] : n.attributes()) {
    k += name + "=" + std::to_string(int(a.kind())) + ":";
    switch (a.kind()) {
      case AttrKind::Int: k += std::to_string(a.i()); break;
      case AttrKind::Float: k += fmt::format("{:a}", a.f()); break;
      case AttrKind::String: k += fmt::format("{}:{}", a.s().size(), a.s()); break;
      case AttrKind::Tensor: k += tensorKey(a.t()); break;
      case AttrKind::Ints: k += fmt::format("{}", fmt::join(a.ints(), ",")); break;
      case AttrKind::Floats:
        for (float f : a.floats()) k += fmt::format("{:a},", f);
        break;
      case AttrKind::Strings:
        for (const std::string& s : a.strings()) k += fmt::format("{}:{};", s.size(), s);
        break;
      case AttrKind::Tensors:
        for (const Tensor& t : a.tensors()) k += tensorKey(t) + ";";
        break;
      case AttrKind::Graph:
      case AttrKind::Graphs: return std::nullopt;
    }
    k += "|";
  }
  return k;
}

class CsePass final : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  std::string_view summary() const override {
    return "merges nodes with equal op, attributes and inputs, and initializers with equal "
           "contents";
  }
  Expected<RewriteStats> run(Graph& g, PassContext&) override {
    Rewriter rw(g);
    // Identical initializers first, so nodes reading copies of one constant match below. A
    // cheap key (type, dims, the first and last bytes) picks candidates; equal bytes decide.
    std::unordered_map<std::string, std::vector<Value*>> candidates;
    std::vector<Value*> inits(g.initializers().begin(), g.initializers().end());
    for (Value* v : inits) {
      const Tensor& t = *v->initializer();
      std::string key = cheapKey(t);
      Value* same = nullptr;
      for (Value* c : candidates[key])
        if (c->initializer()->sameContent(t)) same = c;
      if (!same) {
        candidates[key].push_back(v);
        continue;
      }
      if (!rw.canReplace(v, same)) continue;
      rw.replaceAllUses(v, same);
      rw.eraseInitializer(v);
      rw.notePattern("merge-equal-initializers");
    }
    std::unordered_map<std::string, Node*> seen;
    std::vector<Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (Node* n : order) {
      if (isRandom(*n)) continue;
      auto attrs = attrsKey(*n);
      if (!attrs) continue;
      std::string key = n->domain() + "::" + n->opType() + "(";
      for (const Value* in : n->inputs()) key += fmt::format("{},", static_cast<const void*>(in));
      key += ")" + std::to_string(n->numOutputs()) + "{" + *attrs + "}";
      auto [it, fresh] = seen.emplace(key, n);
      if (fresh) continue;
      std::vector<Value*> repl(it->second->outputs().begin(), it->second->outputs().end());
      if (rw.replaceNode(n, repl))
        rw.notePattern("merge-equal-nodes");
    }
    return rw.stats();
  }
};

}  // namespace

std::unique_ptr<Pass> makeCsePass() { return std::make_unique<CsePass>(); }

}  // namespace kiln
