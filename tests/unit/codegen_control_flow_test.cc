// Control-flow code generation (lib/codegen/control_flow.cc): the flattened step order and the
// lifetimes the arena plan uses, which must keep values alive across loop iterations.
#include <gtest/gtest.h>

#include "codegen/control_flow.h"
#include "test_types.h"

namespace kiln {
namespace {

using GraphPtr = Attribute::GraphPtr;

Node* node(Graph& g, const std::string& op, std::vector<Value*> ins, const std::string& out) {
  return *g.addNode(op, "", out + "_node", std::move(ins), {out});
}

const KnownLookup kNothingKnown = [](const Value*) -> const Tensor* { return nullptr; };

// main: w = Relu(x); Loop(M, , x) with body y_out = Add(y_in, w); z = Neg(loop's y).
struct LoopProgram {
  Graph g;
  Value *x, *w, *m;
  Node *relu, *loop, *addNode, *neg;
  std::shared_ptr<Graph> body;
  LoopProgram() {
    x = *g.addInput("x", f32({2}));
    m = *g.addInitializer("m", Tensor::scalar(DType::I64, int64_t(3)));
    relu = node(g, "Relu", {x}, "w");
    w = relu->output(0);
    body = std::make_shared<Graph>("body", &g);
    Value* iter = *body->addInput("iter", TensorType{DType::I64, Shape::scalar()});
    Value* condIn = *body->addInput("cond_in", TensorType{DType::Bool, Shape::scalar()});
    Value* yIn = *body->addInput("y_in", f32({2}));
    (void)iter;
    addNode = node(*body, "Add", {yIn, w}, "y_out");
    body->setOutputs({condIn, addNode->output(0)});
    loop = *g.addNode("Loop", "", "loop", {m, nullptr, x}, {"y"});
    loop->setAttr("body", Attribute(GraphPtr(body)));
    neg = node(g, "Neg", {loop->output(0)}, "z");
    g.addOutput(neg->output(0));
  }
  std::vector<FlowStep> steps() {
    return flattenSchedule({relu, loop, neg}, {{body.get(), {addNode}}}, kNothingKnown);
  }
};

TEST(CodegenControlFlow, LoopFlattensIntoBeginBodyEnd) {
  LoopProgram p;
  auto steps = p.steps();
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps[0].node, p.relu);
  EXPECT_EQ(steps[1].kind, FlowStep::Kind::Begin);
  EXPECT_EQ(steps[2].node, p.addNode);
  EXPECT_EQ(steps[3].kind, FlowStep::Kind::End);
  EXPECT_EQ(steps[3].node, p.loop);
  EXPECT_EQ(steps[4].node, p.neg);
}

TEST(CodegenControlFlow, OuterValueReadInLoopLivesUntilTheLoopEnds) {
  LoopProgram p;
  FlowLifetimes life = flowLifetimes(p.steps());
  // w is read at step 2 by the body, but the next iteration reads it again.
  EXPECT_EQ(life.def.at(p.w), 0);
  EXPECT_EQ(life.lastUse.at(p.w), 3);
  // A value of the body itself lives within one iteration: defined 2, copied out at 3.
  Value* yOut = p.addNode->output(0);
  EXPECT_EQ(life.def.at(yOut), 2);
  EXPECT_EQ(life.lastUse.at(yOut), 3);
  // Body inputs and the loop's outputs span the whole loop.
  Value* yIn = p.body->inputs()[2];
  EXPECT_EQ(life.def.at(yIn), 1);
  EXPECT_EQ(life.lastUse.at(yIn), 3);
  Value* y = p.loop->output(0);
  EXPECT_EQ(life.def.at(y), 1);
  EXPECT_EQ(life.lastUse.at(y), 4);
  // The loop's initial value is copied once, before the first iteration.
  EXPECT_EQ(life.lastUse.at(p.x), 1);
}

// If(c) with then: a = Neg(x), else: b = Abs(x) and Relu(b); both read outer x.
struct IfProgram {
  Graph g;
  Value *x, *c;
  Node *ifNode, *thenNeg, *elseAbs, *elseRelu;
  std::shared_ptr<Graph> thenG, elseG;
  IfProgram() {
    x = *g.addInput("x", f32({3}));
    c = *g.addInput("c", TensorType{DType::Bool, Shape::scalar()});
    thenG = std::make_shared<Graph>("then", &g);
    thenNeg = node(*thenG, "Neg", {x}, "a");
    thenG->addOutput(thenNeg->output(0));
    elseG = std::make_shared<Graph>("else", &g);
    elseAbs = node(*elseG, "Abs", {x}, "b");
    elseRelu = node(*elseG, "Relu", {elseAbs->output(0)}, "b2");
    elseG->addOutput(elseRelu->output(0));
    ifNode = *g.addNode("If", "", "if", {c}, {"y"});
    ifNode->setAttr("then_branch", Attribute(GraphPtr(thenG)));
    ifNode->setAttr("else_branch", Attribute(GraphPtr(elseG)));
    g.addOutput(ifNode->output(0));
  }
  std::map<const Graph*, std::vector<Node*>> bodies() {
    return {{thenG.get(), {thenNeg}}, {elseG.get(), {elseAbs, elseRelu}}};
  }
};

TEST(CodegenControlFlow, RuntimeIfEmitsBothBranches) {
  IfProgram p;
  auto steps = flattenSchedule({p.ifNode}, p.bodies(), kNothingKnown);
  // Begin(then) Neg End(then) Begin(else) Abs Relu End(else)
  ASSERT_EQ(steps.size(), 7u);
  EXPECT_TRUE(steps[0].runtimeIf);
  EXPECT_EQ(steps[0].sub, 0);
  EXPECT_EQ(steps[3].sub, 1);
  EXPECT_EQ(steps[5].node, p.elseRelu);
  FlowLifetimes life = flowLifetimes(steps);
  // Branches run once: outer x is not kept past its last reader.
  EXPECT_EQ(life.lastUse.at(p.x), 4);
  // The If's output spans both branches (either one writes it).
  EXPECT_EQ(life.def.at(p.ifNode->output(0)), 0);
  EXPECT_EQ(life.lastUse.at(p.ifNode->output(0)), 6);
  EXPECT_EQ(life.lastUse.at(p.thenNeg->output(0)), 2);
}

TEST(CodegenControlFlow, KnownConditionEmitsOnlyTheTakenBranch) {
  IfProgram p;
  Tensor no = Tensor::scalar(DType::Bool, uint8_t(0));
  KnownLookup known = [&](const Value* v) -> const Tensor* { return v == p.c ? &no : nullptr; };
  auto steps = flattenSchedule({p.ifNode}, p.bodies(), known);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_FALSE(steps[0].runtimeIf);
  EXPECT_EQ(steps[0].sub, 1);
  EXPECT_EQ(steps[1].node, p.elseAbs);
  EXPECT_EQ(emittedSubgraphs(*p.ifNode, known), std::vector<Graph*>{p.elseG.get()});
}

TEST(CodegenControlFlow, RefusesSubgraphsOfOtherOps) {
  Graph g;
  Value* x = *g.addInput("x", f32({1}));
  Node* n = node(g, "SequenceMap", {x}, "y");
  n->setAttr("body", Attribute(GraphPtr(std::make_shared<Graph>("b", &g))));
  Status s = checkFlowNode(*n, kNothingKnown);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("node 'y_node' (SequenceMap)"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace kiln
