// Elementwise fusion: a tree of f32 elementwise ops whose intermediate results are read only
// inside the tree and all have the tree's output shape becomes one kiln.Elementwise node with
// the ops as its body, so the generated code makes one pass over memory instead of one per op
// (PP-OCR's x * clip(x + 3, 0, 6) / 6 is one loop).
#include <unordered_map>

#include "kiln/ops/fused.h"
#include "passes.h"

namespace kiln {
namespace {

class FuseElementwisePass final : public Pass {
 public:
  std::string_view name() const override { return "fuse-elementwise"; }
  std::string_view summary() const override {
    return "fuses trees of f32 elementwise ops into kiln.Elementwise loops";
  }
  Expected<RewriteStats> run(Graph& g, PassContext&) override {
    Rewriter rw(g);
    // Group nodes: a node joins the group of an operand's producer when it is that value's
    // only reader and has the group's output shape. Groups are in-trees rooted at their last
    // node; root → members in topological order.
    std::unordered_map<const Node*, Node*> rootOf;
    std::unordered_map<Node*, std::vector<Node*>> members;
    std::vector<Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (Node* n : order) {
      if (!elementwiseFusable(*n) || !isStatic(n->output(0))) continue;
      std::vector<Node*> join;
      for (const Value* v : n->inputs()) {
        Node* p = v->producer();
        auto it = p ? rootOf.find(p) : rootOf.end();
        if (it == rootOf.end() || it->second != p) continue;  // only current roots grow
        if (soleUser(v) != n || v->shape() != n->output(0)->shape()) continue;
        if (std::find(join.begin(), join.end(), p) == join.end()) join.push_back(p);
      }
      std::vector<Node*> group;
      for (Node* r : join) {
        for (Node* m : members[r]) {
          group.push_back(m);
          rootOf[m] = n;
        }
        members.erase(r);
      }
      group.push_back(n);
      rootOf[n] = n;
      members[n] = std::move(group);
    }
    std::vector<Node*> roots;
    for (Node* n : order)
      if (members.count(n) && members[n].size() >= 2) roots.push_back(n);
    for (Node* root : roots) {
      // Members in graph order (the union of joined groups is not sorted).
      std::vector<Node*> group;
      for (Node* n : order)
        if (rootOf.count(n) && rootOf[n] == root) group.push_back(n);
      KILN_RETURN_IF_ERROR(fuseGroup(g, group, rw));
    }
    return rw.stats();
  }

 private:
  static Status fuseGroup(Graph& g, const std::vector<Node*>& group, Rewriter& rw) {
    Node* root = group.back();
    std::unordered_set<const Value*> inside;
    for (Node* n : group) inside.insert(n->output(0));
    std::vector<Value*> external;
    for (Node* n : group)
      for (Value* v : n->inputs())
        if (!inside.count(v) && std::find(external.begin(), external.end(), v) == external.end())
          external.push_back(v);
    std::string base = rw.freshName("fused_" + root->name());
    auto body = std::make_shared<Graph>(base + "_body", &g);
    std::unordered_map<const Value*, Value*> map;
    auto fresh = [&](const std::string& s) {
      std::string n = base + "." + s;
      while (g.findValue(n) || body->findLocalValue(n)) n += "_";
      return n;
    };
    for (size_t i = 0; i < external.size(); ++i) {
      KILN_ASSIGN_OR_RETURN(Value * in, body->addInput(fresh("x" + std::to_string(i)),
                                                       TensorType{external[i]->dtype(), Shape::scalar()}));
      map[external[i]] = in;
    }
    int k = 0;
    std::vector<const Node*> sources;
    for (Node* n : group) {
      std::vector<Value*> ins;
      for (Value* v : n->inputs()) ins.push_back(map.at(v));
      KILN_ASSIGN_OR_RETURN(Node * c, body->addNode(n->opType(), n->domain(), n->name(), ins,
                                                     {fresh("t" + std::to_string(k++))}));
      for (const auto& [key, a] : n->attributes()) c->setAttr(key, a);
      c->output(0)->setType(TensorType{n->output(0)->dtype(), Shape::scalar()});
      map[n->output(0)] = c->output(0);
      sources.push_back(n);
    }
    body->addOutput(map.at(root->output(0)));
    KILN_ASSIGN_OR_RETURN(Node * f, rw.create("Elementwise", kKilnDomain, external,
                                              {root->output(0)->type()}, base, sources));
    f->setAttr("body", Attribute(Attribute::GraphPtr(body)));
    rw.replaceAllUses(root->output(0), f->output(0));
    for (auto it = group.rbegin(); it != group.rend(); ++it) rw.erase(*it);
    rw.noteFused(int64_t(group.size()));
    rw.notePattern("fuse-elementwise-tree");
    return g.sortTopologically();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseElementwisePass() { return std::make_unique<FuseElementwisePass>(); }

}  // namespace kiln
