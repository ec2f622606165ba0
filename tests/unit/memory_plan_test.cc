// The arena planner (hand-made and random interval sets) and lifetimes computed from graphs.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/memory/plan.h"
#include "test_types.h"

namespace kiln {
namespace {

using Requests = std::vector<BufferRequest>;

ArenaPlan planOrDie(const Requests& r, int64_t alignment = 64) {
  auto plan = planArena(r, alignment);
  EXPECT_TRUE(plan.ok()) << plan.message();
  if (!plan.ok()) return {};
  EXPECT_TRUE(checkPlan(r, *plan).ok()) << checkPlan(r, *plan).message();
  EXPECT_GE(plan->arenaBytes, plan->lowerBoundBytes);
  return *plan;
}

TEST(MemoryPlan, ChainReusesEveryOtherBuffer) {
  // a -> b -> c: a is dead by the time c is written, so c takes a's place.
  Requests r = {{100, 0, 1}, {100, 1, 2}, {100, 2, 3}};
  ArenaPlan p = planOrDie(r);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 128, 0}));
  EXPECT_EQ(p.arenaBytes, 256);
  EXPECT_EQ(p.lowerBoundBytes, 256);
  EXPECT_EQ(p.planner, "greedy-by-size");
}

TEST(MemoryPlan, Diamond) {
  // t0 feeds a and b (steps 1, 2), which both feed c (step 3).
  Requests r = {{64, 0, 2}, {64, 1, 3}, {64, 2, 3}, {64, 3, 3}};
  ArenaPlan p = planOrDie(r);
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 64, 128, 0}));
  EXPECT_EQ(p.arenaBytes, 192);
  EXPECT_EQ(p.lowerBoundBytes, 192);
}

TEST(MemoryPlan, ReusesAFreedBuffer) {
  Requests r = {{1000, 0, 1}, {10, 1, 2}, {1000, 2, 3}};
  ArenaPlan p = planOrDie(r);
  EXPECT_EQ(p.offsets[0], 0);
  EXPECT_EQ(p.offsets[2], 0);  // same bytes as the first, which died at step 1
  EXPECT_EQ(p.offsets[1], 1024);
  EXPECT_EQ(p.arenaBytes, 1088);
}

TEST(MemoryPlan, FillsAGapBetweenLiveBuffers) {
  Requests r = {{192, 0, 0}, {128, 1, 1}, {128, 0, 1}, {64, 1, 1}};
  ArenaPlan p = planOrDie(r);
  // 192@0 and 128@0 never meet; 128 (live at both steps) goes above both; the 64-byte buffer
  // fits the hole [128, 192) that the 192-byte one left at step 1.
  EXPECT_EQ(p.offsets, (std::vector<int64_t>{0, 0, 192, 128}));
  EXPECT_EQ(p.arenaBytes, 320);
  EXPECT_EQ(p.lowerBoundBytes, 320);
}

TEST(MemoryPlan, AlignsEveryOffsetAndTheArena) {
  Requests r = {{1, 0, 0}, {65, 0, 0}, {3, 0, 0}};
  EXPECT_EQ(planOrDie(r, 64).offsets, (std::vector<int64_t>{192, 0, 128}));
  EXPECT_EQ(planOrDie(r, 64).arenaBytes, 256);
  EXPECT_EQ(planOrDie(r, 16).offsets, (std::vector<int64_t>{96, 0, 80}));
  EXPECT_EQ(planOrDie(r, 16).arenaBytes, 112);
  EXPECT_EQ(planOrDie(r, 1).offsets, (std::vector<int64_t>{68, 0, 65}));
  EXPECT_EQ(planOrDie(r, 1).arenaBytes, 69);
  EXPECT_EQ(liveLowerBound(r, 1), 69);
  EXPECT_EQ(liveLowerBound(r), 256);
}

TEST(MemoryPlan, EmptyAndZeroSizedBuffers) {
  ArenaPlan none = planOrDie({});
  EXPECT_TRUE(none.offsets.empty());
  EXPECT_EQ(none.arenaBytes, 0);
  ArenaPlan zeros = planOrDie({{0, 0, 5}, {64, 0, 5}, {0, 2, 3}});
  EXPECT_EQ(zeros.offsets, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(zeros.arenaBytes, 64);
}

TEST(MemoryPlan, RejectsBadRequests) {
  EXPECT_FALSE(planArena(Requests{{-1, 0, 0}}).ok());
  EXPECT_FALSE(planArena(Requests{{8, 3, 2}}).ok());
  EXPECT_FALSE(planArena(Requests{{8, 0, 0}}, 0).ok());
  EXPECT_FALSE(planArena(Requests{{8, 0, 0}}, -64).ok());
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto aligned = planArena(Requests{{kMax, 0, 0}});
  ASSERT_FALSE(aligned.ok());
  EXPECT_NE(aligned.message().find("overflow"), std::string::npos) << aligned.message();
  // Each fits, but three at once cannot be addressed.
  int64_t third = int64_t(1) << 62;
  auto sum = planArena(Requests{{third, 0, 0}, {third, 0, 0}, {third, 0, 0}});
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.message().find("overflow"), std::string::npos) << sum.message();
  EXPECT_EQ(liveLowerBound(Requests{{third, 0, 0}, {third, 0, 0}, {third, 0, 0}}), kMax);
  EXPECT_EQ(liveLowerBound(Requests{{kMax, 0, 0}}), kMax);
  EXPECT_EQ(liveLowerBound(Requests{{-5, 0, 0}, {8, 2, 1}}), 0);
}

TEST(MemoryPlan, CheckPlanFindsConflicts) {
  Requests r = {{100, 0, 1}, {100, 1, 2}};
  ArenaPlan good = planOrDie(r);
  ArenaPlan overlap = good;
  overlap.offsets = {0, 64};
  auto st = checkPlan(r, overlap);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("overlap"), std::string::npos) << st.message();
  ArenaPlan small = good;
  small.arenaBytes = 150;
  EXPECT_FALSE(checkPlan(r, small).ok());
  ArenaPlan negative = good;
  negative.offsets = {-128, 0};
  EXPECT_FALSE(checkPlan(r, negative).ok());
  ArenaPlan missing = good;
  missing.offsets.pop_back();
  EXPECT_FALSE(checkPlan(r, missing).ok());
  // Disjoint lifetimes may share bytes.
  Requests apart = {{100, 0, 0}, {100, 1, 1}};
  EXPECT_TRUE(checkPlan(apart, ArenaPlan{{0, 0}, 100, 100, "hand"}).ok());
}

// Brute force: every pair of buffers with intersecting lifetimes is disjoint in memory.
bool pairwiseDisjoint(const Requests& r, const std::vector<int64_t>& offsets) {
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t j = i + 1; j < r.size(); ++j) {
      bool together = r[i].firstStep <= r[j].lastStep && r[j].firstStep <= r[i].lastStep;
      bool share = offsets[i] < offsets[j] + r[j].bytes && offsets[j] < offsets[i] + r[i].bytes;
      if (together && share && r[i].bytes > 0 && r[j].bytes > 0) return false;
    }
  return true;
}

int64_t bruteLowerBound(const Requests& r, int64_t alignment) {
  int64_t best = 0;
  for (int64_t step = 0; step <= 40; ++step) {
    int64_t live = 0;
    for (const BufferRequest& b : r)
      if (b.firstStep <= step && step <= b.lastStep)
        live += (b.bytes + alignment - 1) / alignment * alignment;
    best = std::max(best, live);
  }
  return best;
}

TEST(MemoryPlan, RandomIntervalSetsGiveValidDeterministicPlans) {
  std::mt19937 rng(12345);
  const int64_t alignments[] = {1, 4, 16, 64, 100};
  int corruptedButValid = 0, corruptedAndCaught = 0;
  for (int iter = 0; iter < 5000; ++iter) {
    Requests r(rng() % 41);
    for (BufferRequest& b : r) {
      // A few sizes repeat on purpose so the tie-breaks are exercised.
      b.bytes = rng() % 8 == 0 ? 0 : rng() % 4 == 0 ? 256 : int64_t(rng() % 5000);
      b.firstStep = rng() % 40;
      b.lastStep = b.firstStep + rng() % (rng() % 2 ? 3 : 41 - b.firstStep);
    }
    int64_t alignment = alignments[rng() % 5];
    SCOPED_TRACE("iteration " + std::to_string(iter));
    auto plan = planArena(r, alignment);
    ASSERT_TRUE(plan.ok()) << plan.message();
    ASSERT_TRUE(checkPlan(r, *plan).ok()) << checkPlan(r, *plan).message();
    ASSERT_TRUE(pairwiseDisjoint(r, plan->offsets));
    ASSERT_EQ(plan->lowerBoundBytes, bruteLowerBound(r, alignment));
    ASSERT_GE(plan->arenaBytes, plan->lowerBoundBytes);
    ASSERT_EQ(plan->arenaBytes % alignment, 0);
    int64_t total = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      ASSERT_EQ(plan->offsets[i] % alignment, 0);
      total += (r[i].bytes + alignment - 1) / alignment * alignment;
    }
    ASSERT_LE(plan->arenaBytes, total);
    auto again = planArena(r, alignment);
    ASSERT_TRUE(again.ok());
    ASSERT_EQ(again->offsets, plan->offsets);
    ASSERT_EQ(again->arenaBytes, plan->arenaBytes);

    // checkPlan must agree with brute force on a corrupted plan.
    if (!r.empty()) {
      ArenaPlan bad = *plan;
      size_t i = rng() % r.size();
      bad.offsets[i] = bad.offsets[rng() % r.size()] + int64_t(rng() % 3) * 32;
      for (size_t j = 0; j < r.size(); ++j)
        bad.arenaBytes = std::max(bad.arenaBytes, bad.offsets[j] + r[j].bytes);
      bool valid = pairwiseDisjoint(r, bad.offsets);
      ASSERT_EQ(checkPlan(r, bad).ok(), valid) << checkPlan(r, bad).message();
      ++(valid ? corruptedButValid : corruptedAndCaught);
    }
  }
  // Both outcomes must occur often, or the checkPlan comparison above proves little.
  EXPECT_GT(corruptedButValid, 500);
  EXPECT_GT(corruptedAndCaught, 500);
}

Value* addTyped(Graph& g, const std::string& op, std::vector<Value*> ins, const std::string& out,
                TensorType type, Node** node = nullptr) {
  Node* n = *g.addNode(op, "", op + "_" + out, std::move(ins), {out});
  n->output(0)->setType(std::move(type));
  if (node) *node = n;
  return n->output(0);
}

std::vector<const Node*> inOrder(const Graph& g) {
  std::vector<const Node*> s;
  for (const auto& n : g.nodes()) s.push_back(n.get());
  return s;
}

TEST(MemoryPlan, LifetimesFromAGraph) {
  Graph g;
  Value* x = *g.addInput("x", f32({2, 3}));
  Value* w = *g.addInitializer("w", *Tensor::zeros(DType::F32, {2, 3}));
  Value* a = addTyped(g, "Relu", {x}, "a", f32({2, 3}));
  Value* b = addTyped(g, "Mul", {a, w}, "b", f32({2, 3}));
  Value* c = addTyped(g, "Add", {a, b}, "c", f32({2, 3}));
  Node* split = *g.addNode("Split", "", "split", {c}, {"d", "e"});
  split->output(0)->setType(f32({1, 3}));
  split->output(1)->setType({DType::I64, Shape::ofStatic({1, 3})});  // never read
  Value* y = addTyped(g, "Relu", {split->output(0)}, "y", f32({1, 3}));
  g.addOutput(y);

  auto lives = computeLifetimes(g, inOrder(g));
  ASSERT_TRUE(lives.ok()) << lives.message();
  ASSERT_EQ(lives->size(), 5u);  // a b c d e; not x, w or y
  struct Want {
    const char* name;
    int64_t first, last, bytes;
  };
  Want want[] = {
      {"a", 0, 2, 24}, {"b", 1, 2, 24}, {"c", 2, 3, 24}, {"d", 3, 4, 12}, {"e", 3, 3, 24}};
  for (size_t i = 0; i < 5; ++i) {
    const ValueLifetime& l = (*lives)[i];
    EXPECT_EQ(l.value->name(), want[i].name);
    EXPECT_EQ(l.firstStep, want[i].first) << want[i].name;
    EXPECT_EQ(l.lastStep, want[i].last) << want[i].name;
    EXPECT_EQ(l.bytes, want[i].bytes) << want[i].name;
  }

  // End to end: lifetimes become requests, and the plan is valid.
  Requests r;
  for (const ValueLifetime& l : *lives) r.push_back({l.bytes, l.firstStep, l.lastStep});
  ArenaPlan p = planOrDie(r);
  EXPECT_EQ(p.arenaBytes, p.lowerBoundBytes);  // 3 x 64 at step 2
}

TEST(MemoryPlan, SubgraphReadsExtendTheOuterValue) {
  Graph g;
  Value* x = *g.addInput("x", f32({4}));
  Value* cond = *g.addInput("cond", {DType::Bool, Shape::scalar()});
  Value* a = addTyped(g, "Relu", {x}, "a", f32({4}));
  Value* b = addTyped(g, "Neg", {x}, "b", f32({4}));
  Value* c = addTyped(g, "Abs", {x}, "c", f32({4}));
  // The then-branch reads `a` two levels deep; the else-branch returns `b` unchanged.
  auto thenG = std::make_shared<Graph>("then", &g);
  auto innerG = std::make_shared<Graph>("inner", thenG.get());
  Value* t = addTyped(*innerG, "Neg", {a}, "t", f32({4}));
  innerG->addOutput(t);
  Node* wrap = *thenG->addNode("Loop", "", "loop", {}, {"u"});
  wrap->setAttr("body", Attribute(Attribute::GraphPtr(innerG)));
  thenG->addOutput(wrap->output(0));
  auto elseG = std::make_shared<Graph>("else", &g);
  elseG->addOutput(b);
  Node* iff = *g.addNode("If", "", "if", {cond}, {"y"});
  iff->setAttr("then_branch", Attribute(Attribute::GraphPtr(thenG)));
  iff->setAttr("else_branch", Attribute(Attribute::GraphPtr(elseG)));
  iff->output(0)->setType(f32({4}));
  Value* z = addTyped(g, "Add", {iff->output(0), c}, "z", f32({4}));
  g.addOutput(z);

  auto lives = computeLifetimes(g, inOrder(g));
  ASSERT_TRUE(lives.ok()) << lives.message();
  ASSERT_EQ(lives->size(), 4u);  // a b c y
  EXPECT_EQ((*lives)[0].value, a);
  EXPECT_EQ((*lives)[0].lastStep, 3);  // read inside the If at step 3
  EXPECT_EQ((*lives)[1].value, b);
  EXPECT_EQ((*lives)[1].lastStep, 3);  // returned by the else-branch
  EXPECT_EQ((*lives)[2].value, c);
  EXPECT_EQ((*lives)[2].lastStep, 4);
  EXPECT_EQ((*lives)[3].value, iff->output(0));
  EXPECT_EQ((*lives)[3].firstStep, 3);
  EXPECT_EQ((*lives)[3].lastStep, 4);
}

TEST(MemoryPlan, LifetimeErrorsNameTheProblem) {
  Graph g;
  Value* x = *g.addInput("x", f32({2}));
  Node* n0 = nullptr;
  Node* n1 = nullptr;
  Value* a =
      addTyped(g, "Relu", {x}, "a", {DType::F32, Shape({Dim::known(2), Dim::named("N")})}, &n0);
  Value* y = addTyped(g, "Relu", {a}, "y", f32({2}), &n1);
  g.addOutput(y);

  auto dynamic = computeLifetimes(g, inOrder(g));
  ASSERT_FALSE(dynamic.ok());
  EXPECT_NE(dynamic.message().find("'a'"), std::string::npos) << dynamic.message();
  EXPECT_NE(dynamic.message().find("static"), std::string::npos) << dynamic.message();

  a->setType({DType::Undefined, Shape::ofStatic({2})});
  auto untyped = computeLifetimes(g, inOrder(g));
  ASSERT_FALSE(untyped.ok());
  EXPECT_NE(untyped.message().find("'a'"), std::string::npos) << untyped.message();

  a->setType(f32({2}));
  ASSERT_TRUE(computeLifetimes(g, inOrder(g)).ok());
  std::vector<const Node*> backwards = {n1, n0};
  auto order = computeLifetimes(g, backwards);
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.message().find("topological"), std::string::npos) << order.message();
  std::vector<const Node*> partial = {n0};
  EXPECT_FALSE(computeLifetimes(g, partial).ok());
  std::vector<const Node*> twice = {n0, n0};
  EXPECT_FALSE(computeLifetimes(g, twice).ok());
  std::vector<const Node*> withNull = {n0, nullptr};
  EXPECT_FALSE(computeLifetimes(g, withNull).ok());
  Graph other;
  Node* stranger = *other.addNode("Relu", "", "stranger", {}, {"s"});
  std::vector<const Node*> foreign = {n0, stranger};
  EXPECT_FALSE(computeLifetimes(g, foreign).ok());
}

}  // namespace
}  // namespace kiln
