// Graph construction, use lists, topological sort and the verifier.
#include <gtest/gtest.h>

#include "kiln/ir/graph.h"
#include "kiln/ir/verifier.h"
#include "test_types.h"

namespace kiln {
namespace {

TEST(Graph, BuildsAndTracksUses) {
  Graph g;
  Value* x = *g.addInput("x", f32({2, 3}));
  Node* a = *g.addNode("Relu", "", "relu", {x}, {"y"});
  Node* b = *g.addNode("Add", "", "add", {a->output(0), x}, {"z"});
  g.addOutput(b->output(0));
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(a->output(0)->producer(), a);
  EXPECT_TRUE(verifyGraph(g).ok());
  g.replaceAllUsesWith(a->output(0), x);
  EXPECT_EQ(x->uses().size(), 3u);
  EXPECT_TRUE(a->output(0)->uses().empty());
  g.eraseNode(a);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_TRUE(verifyGraph(g).ok());
}

TEST(Graph, RejectsDuplicateNames) {
  Graph g;
  ASSERT_TRUE(g.addInput("x", f32({1})).ok());
  EXPECT_FALSE(g.addInput("x", f32({1})).ok());
  Value* x = g.inputs()[0];
  EXPECT_FALSE(g.addNode("Relu", "", "r", {x}, {"x"}).ok());
}

TEST(Graph, SortsTopologicallyAndDetectsCycles) {
  Graph g;
  Value* x = *g.addInput("x", f32({1}));
  Node* second = *g.addNode("Relu", "", "second", {nullptr}, {"b"});
  Node* first = *g.addNode("Relu", "", "first", {x}, {"a"});
  second->setInput(0, first->output(0));
  g.addOutput(second->output(0));
  EXPECT_FALSE(verifyGraph(g).ok());  // use before definition
  ASSERT_TRUE(g.sortTopologically().ok());
  EXPECT_EQ(g.nodes().front()->name(), "first");
  EXPECT_TRUE(verifyGraph(g).ok());
  first->setInput(0, second->output(0));  // now a cycle
  auto st = g.sortTopologically();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cycle"), std::string::npos);
}

TEST(Graph, SubgraphReadsOuterScope) {
  Graph g;
  Value* x = *g.addInput("x", f32({1}));
  Value* c = *g.addInput("c", {DType::Bool, Shape::scalar()});
  auto thenG = std::make_shared<Graph>("then", &g);
  Node* inner = *thenG->addNode("Neg", "", "neg", {x}, {"t_out"});
  thenG->addOutput(inner->output(0));
  auto elseG = std::make_shared<Graph>("else", &g);
  Node* inner2 = *elseG->addNode("Abs", "", "abs", {x}, {"e_out"});
  elseG->addOutput(inner2->output(0));
  Node* iff = *g.addNode("If", "", "if", {c}, {"y"});
  iff->setAttr("then_branch", Attribute(Attribute::GraphPtr(thenG)));
  iff->setAttr("else_branch", Attribute(Attribute::GraphPtr(elseG)));
  g.addOutput(iff->output(0));
  EXPECT_TRUE(verifyGraph(g).ok());
  EXPECT_EQ(g.findValue("x"), x);
  EXPECT_EQ(thenG->findValue("x"), x);
  EXPECT_EQ(thenG->findLocalValue("x"), nullptr);
  // An inner value may not shadow an outer one.
  auto bad = std::make_shared<Graph>("bad", &g);
  ASSERT_TRUE(bad->addNode("Neg", "", "n", {x}, {"x"}).ok());
  iff->setAttr("else_branch", Attribute(Attribute::GraphPtr(bad)));
  EXPECT_FALSE(verifyGraph(g).ok());
}

TEST(Tensor, ChecksSizesAndOverflow) {
  EXPECT_FALSE(Tensor::zeros(DType::F32, {-5}).ok());
  EXPECT_FALSE(Tensor::zeros(DType::F32, {1LL << 40, 1LL << 40}).ok());
  float v[2] = {1, 2};
  EXPECT_FALSE(Tensor::fromBytes(DType::F32, {3}, v, sizeof v).ok());
  auto t = Tensor::fromBytes(DType::F32, {2}, v, sizeof v);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->doubleAt(1), 2.0);
  auto i4 = Tensor::zeros(DType::I4, {3});
  ASSERT_TRUE(i4.ok());
  EXPECT_EQ(i4->byteSize(), 2u);
}

}  // namespace
}  // namespace kiln
