// Operator reordering for memory: scheduleForMemory on branchy graphs, chains and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/memory/plan.h"
#include "kiln/memory/schedule.h"
#include "test_types.h"

namespace kiln {
namespace {

Node* addTypedNode(Graph& g, const std::string& op, std::vector<Value*> ins, const std::string& out,
                   TensorType type) {
  Node* n = *g.addNode(op, "", op + "_" + out, std::move(ins), {out});
  n->output(0)->setType(std::move(type));
  return n;
}

/// Every node exactly once, each after the producers of what it reads (directly or inside a
/// subgraph, which computeLifetimes checks) and of the graph outputs it reads.
void expectTopological(const Graph& g, const std::vector<const Node*>& order) {
  ASSERT_EQ(order.size(), g.numNodes());
  auto pos = [&](const Node* n) {
    return std::find(order.begin(), order.end(), n) - order.begin();
  };
  for (const auto& n : g.nodes()) {
    ASSERT_LT(size_t(pos(n.get())), order.size()) << n->describe();
    for (const Value* in : n->inputs()) {
      if (!in || !in->producer()) continue;
      EXPECT_LT(pos(in->producer()), pos(n.get())) << n->describe();
    }
  }
  EXPECT_TRUE(computeLifetimes(g, order).ok()) << computeLifetimes(g, order).message();
}

int64_t peak(const Graph& g, const std::vector<const Node*>& order) {
  auto p = schedulePeakBytes(g, order);
  EXPECT_TRUE(p.ok()) << p.message();
  return p.ok() ? *p : -1;
}

TEST(MemorySchedule, FinishesOneBranchBeforeStartingTheOther) {
  // Two branches, each a large map reduced to a scalar, interleaved so that both large maps
  // are live at once; running each branch to its reduction first keeps only one alive.
  Graph g;
  Value* x = *g.addInput("x", f32({256}));
  Node* p1 = addTypedNode(g, "Relu", {x}, "p1", f32({256}));
  Node* p2 = addTypedNode(g, "Neg", {x}, "p2", f32({256}));
  Node* q1 = addTypedNode(g, "ReduceSum", {p1->output(0)}, "q1", f32({1}));
  Node* q2 = addTypedNode(g, "ReduceSum", {p2->output(0)}, "q2", f32({1}));
  Node* y = addTypedNode(g, "Add", {q1->output(0), q2->output(0)}, "y", f32({1}));
  g.addOutput(y->output(0));
  std::vector<const Node*> original = {p1, p2, q1, q2, y};
  ASSERT_EQ(peak(g, original), 1024 + 1024 + 64);

  auto order = scheduleForMemory(g, original);
  ASSERT_TRUE(order.ok()) << order.message();
  expectTopological(g, *order);
  EXPECT_EQ(peak(g, *order), 1024 + 64 + 64);
  EXPECT_EQ(*order, (std::vector<const Node*>{p1, q1, p2, q2, y}));
  auto again = scheduleForMemory(g, original);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *order);  // deterministic

  // Out of budget, every heuristic is abandoned and the original order stands.
  auto starved = scheduleForMemory(g, original, ScheduleOptions{64, 1});
  ASSERT_TRUE(starved.ok()) << starved.message();
  EXPECT_EQ(*starved, original);
}

TEST(MemorySchedule, ThreeWayBranchesWithAJoin) {
  // x fans out to three branches of two ops; the original runs them breadth first.
  Graph g;
  Value* x = *g.addInput("x", f32({64}));
  std::vector<const Node*> original;
  Node* heads[3];
  Node* tails[3];
  for (int b = 0; b < 3; ++b) {
    std::string id = std::to_string(b);
    heads[b] = addTypedNode(g, "Relu", {x}, "h" + id, f32({64, 16}));
    original.push_back(heads[b]);
  }
  for (int b = 0; b < 3; ++b) {
    tails[b] =
        addTypedNode(g, "ReduceMean", {heads[b]->output(0)}, "t" + std::to_string(b), f32({4}));
    original.push_back(tails[b]);
  }
  Node* join = addTypedNode(
      g, "Sum", {tails[0]->output(0), tails[1]->output(0), tails[2]->output(0)}, "y", f32({4}));
  g.addOutput(join->output(0));
  original.push_back(join);
  int64_t before = peak(g, original);
  auto order = scheduleForMemory(g, original);
  ASSERT_TRUE(order.ok()) << order.message();
  expectTopological(g, *order);
  EXPECT_LT(peak(g, *order), before);
  EXPECT_EQ(peak(g, *order), 4096 + 3 * 64);
}

TEST(MemorySchedule, NeverWorseOnAChain) {
  Graph g;
  Value* v = *g.addInput("x", f32({32}));
  std::vector<const Node*> original;
  for (int i = 0; i < 6; ++i) {
    Node* n =
        addTypedNode(g, i % 2 ? "Relu" : "Neg", {v}, "c" + std::to_string(i), f32({32 * (i + 1)}));
    original.push_back(n);
    v = n->output(0);
  }
  g.addOutput(v);
  auto order = scheduleForMemory(g, original);
  ASSERT_TRUE(order.ok()) << order.message();
  EXPECT_EQ(*order, original);  // a chain has only one topological order
}

TEST(MemorySchedule, KeepsSubgraphReadsAndGraphOutputsInOrder) {
  // `a` is read only inside the If's then-branch, and `o` is a graph output that a later node
  // reads: the scheduler must see both dependencies even though `b` looks cheaper to run.
  Graph g;
  Value* x = *g.addInput("x", f32({16}));
  Value* cond = *g.addInput("cond", {DType::Bool, Shape::scalar()});
  Node* a = addTypedNode(g, "Relu", {x}, "a", f32({16}));
  Node* o = addTypedNode(g, "Neg", {x}, "o", f32({16}));
  g.addOutput(o->output(0));
  Node* b = addTypedNode(g, "Abs", {o->output(0)}, "b", f32({16}));
  auto thenG = std::make_shared<Graph>("then", &g);
  Node* t = addTypedNode(*thenG, "Neg", {a->output(0)}, "t", f32({16}));
  thenG->addOutput(t->output(0));
  auto elseG = std::make_shared<Graph>("else", &g);
  elseG->addOutput(x);
  Node* iff = *g.addNode("If", "", "if", {cond}, {"z"});
  iff->setAttr("then_branch", Attribute(Attribute::GraphPtr(thenG)));
  iff->setAttr("else_branch", Attribute(Attribute::GraphPtr(elseG)));
  iff->output(0)->setType(f32({16}));
  Node* y = addTypedNode(g, "Add", {iff->output(0), b->output(0)}, "y", f32({16}));
  g.addOutput(y->output(0));
  std::vector<const Node*> original = {a, o, b, iff, y};
  auto order = scheduleForMemory(g, original);
  ASSERT_TRUE(order.ok()) << order.message();
  expectTopological(g, *order);
  auto pos = [&](const Node* n) { return std::find(order->begin(), order->end(), n); };
  EXPECT_LT(pos(a), pos(iff));
  EXPECT_LT(pos(o), pos(b));
  EXPECT_LE(peak(g, *order), peak(g, original));

  // A schedule that runs `b` before the producer of the graph output it reads is refused,
  // although computeLifetimes, which ignores graph outputs, would accept it.
  std::vector<const Node*> bad = {a, b, o, iff, y};
  auto refused = scheduleForMemory(g, bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("topological"), std::string::npos) << refused.message();
}

TEST(MemorySchedule, RejectsBadInput) {
  Graph g;
  Value* x = *g.addInput("x", f32({4}));
  Node* n0 = addTypedNode(g, "Relu", {x}, "a", f32({4}));
  Node* n1 = addTypedNode(g, "Relu", {n0->output(0)}, "y", f32({4}));
  g.addOutput(n1->output(0));
  std::vector<const Node*> backwards = {n1, n0};
  EXPECT_FALSE(scheduleForMemory(g, backwards).ok());
  std::vector<const Node*> partial = {n0};
  EXPECT_FALSE(scheduleForMemory(g, partial).ok());
  std::vector<const Node*> fine = {n0, n1};
  EXPECT_FALSE(scheduleForMemory(g, fine, ScheduleOptions{0}).ok());
  EXPECT_TRUE(scheduleForMemory(g, fine).ok());
}

}  // namespace
}  // namespace kiln
