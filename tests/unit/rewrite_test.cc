// The rewriter (graph outputs keep their names, provenance merges), the greedy driver's
// fixpoint guard, and the pass manager's pipelines, parsing and failure reporting.
#include <gtest/gtest.h>

#include "kiln/ir/verifier.h"
#include "kiln/ops/infer.h"
#include "kiln/passes/pass.h"
#include "kiln/rewrite/rewriter.h"
#include "test_types.h"

namespace kiln {
namespace {

TEST(Rewriter, GraphOutputsKeepTheirNames) {
  Graph g;
  Value* x = *g.addInput("x", f32({4}));
  Node* relu = *g.addNode("Relu", "", "relu", {x}, {"y"});
  g.addOutput(relu->output(0));
  Rewriter rw(g);
  // A graph input cannot take the output's place (it would rename the input).
  EXPECT_FALSE(rw.canReplace(relu->output(0), x));
  EXPECT_FALSE(rw.replaceNode(relu, {x}));
  auto neg = rw.create("Neg", "", {x}, {f32({4})}, "neg", {relu});
  ASSERT_TRUE(neg.ok());
  EXPECT_TRUE(rw.canReplace(relu->output(0), (*neg)->output(0)));
  EXPECT_TRUE(rw.replaceNode(relu, {(*neg)->output(0)}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer(), *neg);
  EXPECT_EQ((*neg)->annotations().sources, std::vector<std::string>{"relu"});
  EXPECT_TRUE(verifyGraph(g).ok());
  EXPECT_EQ(rw.stats().nodesAdded, 1);
  EXPECT_EQ(rw.stats().nodesRemoved, 1);
}

TEST(Rewriter, SourcesMergeInOrderWithoutRepeats) {
  Graph g;
  Value* x = *g.addInput("x", f32({4}));
  Node* a = *g.addNode("Relu", "", "a", {x}, {"ya"});
  Node* b = *g.addNode("Neg", "", "b", {a->output(0)}, {"yb"});
  b->annotations().sources = {"a", "c"};
  EXPECT_EQ(sourcesOf({a, b}), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(sourcesOf({b, a}), (std::vector<std::string>{"a", "c"}));
}

class AlwaysFires final : public RewritePattern {
 public:
  AlwaysFires() : RewritePattern("always", "Relu") {}
  bool matchAndRewrite(Node& n, Rewriter& rw) const override {
    auto r = rw.create("Relu", "", {n.input(0)}, {n.output(0)->type()}, n.name(), {&n});
    return r.ok() && rw.replaceNode(&n, {(*r)->output(0)});
  }
};

TEST(GreedyDriver, ReportsAPatternCycle) {
  Graph g;
  Value* x = *g.addInput("x", f32({4}));
  Node* relu = *g.addNode("Relu", "", "relu", {x}, {"y"});
  g.addOutput(relu->output(0));
  std::vector<std::unique_ptr<RewritePattern>> patterns;
  patterns.push_back(std::make_unique<AlwaysFires>());
  Rewriter rw(g);
  auto r = applyPatternsGreedily(g, patterns, rw, GreedyOptions{4});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("fixpoint"), std::string::npos);
}

TEST(PassManager, PipelinesAndPassLists) {
  EXPECT_TRUE(pipelineFor(0).empty());
  EXPECT_LT(pipelineFor(1).size(), pipelineFor(2).size());
  for (int level = 0; level <= 3; ++level)
    for (const std::string& p : pipelineFor(level)) EXPECT_NE(createPass(p), nullptr) << p;
  auto ok = parsePassList("canonicalize,dce");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->size(), 2u);
  auto bad = parsePassList("canonicalize,nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("unknown pass 'nope'"), std::string::npos);
  EXPECT_NE(bad.error().message().find("fuse-epilogue"), std::string::npos);
}

TEST(PassManager, RunsAndCountsEachPass) {
  Model m;
  Graph& g = *m.graph;
  Value* x = *g.addInput("x", f32({4}));
  Node* id = *g.addNode("Identity", "", "id", {x}, {"a"});
  Node* dead = *g.addNode("Neg", "", "dead", {x}, {"d"});
  (void)dead;
  Node* relu = *g.addNode("Relu", "", "relu", {id->output(0)}, {"y"});
  g.addOutput(relu->output(0));
  ASSERT_TRUE(inferShapes(g, OpRegistry::builtin()).ok());
  PassRunOptions options;
  auto records = runPasses(m, {"canonicalize", "dce"}, options);
  ASSERT_TRUE(records.ok()) << records.error().message();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].stats.patterns.at("remove-identity"), 1);
  EXPECT_EQ((*records)[1].nodesBefore, 2);
  EXPECT_EQ((*records)[1].nodesAfter, 1);
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(g.outputs()[0]->producer()->input(0), x);
  EXPECT_NE(passStatsTable(*records).find("canonicalize"), std::string::npos);
}

}  // namespace
}  // namespace kiln
