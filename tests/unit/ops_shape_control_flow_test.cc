// Type inference of If, Loop and Scan: subgraphs reading outer-scope values, branch merging,
// loop-carried values whose shapes change across iterations, and scan output dims.
#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;
using GraphPtr = Attribute::GraphPtr;

// Adds a node to a subgraph and returns its first output.
Value* add(Graph& g, const std::string& op, std::vector<Value*> ins, const std::string& out,
           std::vector<std::pair<std::string, Attribute>> attrs = {}) {
  Node* n = *g.addNode(op, "", out + "_node", std::move(ins), {out});
  for (auto& [k, v] : attrs) n->setAttr(k, v);
  return n->output(0);
}

// then: Identity(x); else: `elseOp`(x). Both read x from the enclosing graph.
std::string ifWith(const std::string& xType, const std::string& elseOp,
                   std::vector<std::pair<std::string, Attribute>> elseAttrs = {},
                   const Tensor* cond = nullptr) {
  OpGraph t;
  Value* x = t.in(xType);
  Value* c = cond ? t.init(*cond) : t.in("bool[]");
  auto thenG = std::make_shared<Graph>("then", &t.g);
  thenG->addOutput(add(*thenG, "Identity", {x}, "then_y"));
  auto elseG = std::make_shared<Graph>("else", &t.g);
  std::vector<Value*> ins{x};
  if (elseOp == "Unsqueeze") ins.push_back(*elseG->addInitializer("ax", i64s({0})));
  elseG->addOutput(add(*elseG, elseOp, ins, "else_y", elseAttrs));
  t.op("If", {c});
  t.node->setAttr("then_branch", Attribute(GraphPtr(thenG)));
  t.node->setAttr("else_branch", Attribute(GraphPtr(elseG)));
  return t.infer();
}

TEST(OpsControlIf, MergesBranches) {
  EXPECT_EQ(ifWith("f32[N,3]", "Neg"), "f32[N,3]");
  EXPECT_EQ(ifWith("f32[N,3]", "Transpose"), "f32[?,?]");
  EXPECT_EQ(ifWith("f32[N,3]", "Unsqueeze"), "f32[*]");
  EXPECT_TRUE(contains(ifWith("f32[2]", "Cast", {{"to", astr("i64")}}),
                       "output 0 is f32 in then_branch but i64 in else_branch"));
}

TEST(OpsControlIf, KnownConditionSelectsBranch) {
  Tensor no = Tensor::scalar<uint8_t>(DType::Bool, 0);
  EXPECT_EQ(ifWith("f32[2,3]", "Transpose", {}, &no), "f32[3,2]");
}

// then: Identity(x); else: Reshape(x, [7]), which cannot hold x's 6 elements.
struct IfWithBrokenElse {
  OpGraph t;
  std::shared_ptr<Graph> thenG, elseG;
  std::string infer(const Tensor* cond) {
    Value* x = t.in("f32[2,3]");
    Value* c = cond ? t.init(*cond) : t.in("bool[]");
    thenG = std::make_shared<Graph>("then", &t.g);
    thenG->addOutput(add(*thenG, "Identity", {x}, "then_y"));
    elseG = std::make_shared<Graph>("else", &t.g);
    Value* shape = *elseG->addInitializer("shape", i64s({7}));
    elseG->addOutput(add(*elseG, "Reshape", {x, shape}, "else_y"));
    t.op("If", {c});
    t.node->setAttr("then_branch", Attribute(GraphPtr(thenG)));
    t.node->setAttr("else_branch", Attribute(GraphPtr(elseG)));
    return t.infer();
  }
};

TEST(OpsControlIf, BranchThatCannotRunKeepsNoTypes) {
  // A run-time cond: the else branch cannot run with these shapes; the node takes then's types
  // and the else branch's values stay untyped (code generation turns it into a run-time error).
  IfWithBrokenElse r;
  EXPECT_EQ(r.infer(nullptr), "f32[2,3]");
  EXPECT_EQ(r.elseG->outputs()[0]->dtype(), DType::Undefined);
  // A known cond that takes the broken branch is still an error.
  Tensor no = Tensor::scalar<uint8_t>(DType::Bool, 0);
  IfWithBrokenElse taken;
  std::string err = taken.infer(&no);
  EXPECT_TRUE(contains(err, "(Reshape)")) << err;
  // A known cond that avoids it never infers it.
  Tensor yes = Tensor::scalar<uint8_t>(DType::Bool, 1);
  IfWithBrokenElse avoided;
  EXPECT_EQ(avoided.infer(&yes), "f32[2,3]");
}

TEST(OpsControlIf, Errors) {
  OpGraph t;
  t.op("If", {t.in("f32[]")});
  t.node->setAttr("then_branch", Attribute(GraphPtr(std::make_shared<Graph>("a", &t.g))));
  t.node->setAttr("else_branch", Attribute(GraphPtr(std::make_shared<Graph>("b", &t.g))));
  EXPECT_TRUE(contains(t.infer(), "cond must be bool"));
  OpGraph m;
  m.op("If", {m.in("bool[]")});
  EXPECT_TRUE(contains(m.infer(), "required attribute 'then_branch'"));
}

// Loop(M, cond?, y0) with body y = Add(y, x_outer) (or Concat when `grow`), scan = y.
struct LoopCase {
  OpGraph t;
  Node* loop = nullptr;
  std::string build(const std::string& y0Type, std::optional<int64_t> trips, bool withCond,
                    bool grow) {
    Value* xOuter = t.in("f32[1]");
    Value* m = trips ? t.init(i64(*trips)) : t.in("i64[]");
    Value* c = withCond ? t.in("bool[]") : nullptr;
    Value* y0 = t.in(y0Type);
    auto body = std::make_shared<Graph>("body", &t.g);
    (void)*body->addInput("iter", TensorType{});
    Value* condIn = *body->addInput("cond_in", TensorType{});
    Value* yIn = *body->addInput("y_in", TensorType{});
    Value* condOut = add(*body, "Identity", {condIn}, "cond_out");
    Value* yOut = grow ? add(*body, "Concat", {yIn, xOuter}, "y_out", {{"axis", ai(0)}})
                       : add(*body, "Add", {yIn, xOuter}, "y_out");
    Value* scan = add(*body, "Identity", {yOut}, "scan_out");
    body->setOutputs({condOut, yOut, scan});
    loop = t.op("Loop", {m, c, y0}, 2);
    loop->setAttr("body", Attribute(GraphPtr(body)));
    std::string err = t.run();
    if (!err.empty()) return "error: " + err;
    return t.type(0) + " " + t.type(1);
  }
};

TEST(OpsControlLoop, CarriedAndScanOutputs) {
  EXPECT_EQ(LoopCase().build("f32[1]", 5, false, false), "f32[1] f32[5,1]");
  EXPECT_EQ(LoopCase().build("f32[1]", 5, true, false), "f32[1] f32[?,1]");  // cond may stop it
  EXPECT_EQ(LoopCase().build("f32[1]", std::nullopt, false, false), "f32[1] f32[?,1]");
}

TEST(OpsControlLoop, CarriedShapeThatGrowsBecomesUnknown) {
  LoopCase c;
  EXPECT_EQ(c.build("f32[1]", 3, false, true), "f32[?] f32[3,?]");
  // The body was re-inferred with the widened type, not left at the first iteration's.
  Graph* body = c.loop->subgraphs()[0];
  EXPECT_EQ(toString(body->inputs()[2]->type()), "f32[?]");
  EXPECT_EQ(toString(body->outputs()[1]->type()), "f32[?]");
}

TEST(OpsControlLoop, ShapeMathInsideBodyIsNotFrozenByTheFirstRound) {
  // body: y_out = Concat(ConstantOfShape(Shape(y_in)), x_outer): its length grows each trip.
  OpGraph t;
  Value* xOuter = t.in("f32[1]");
  Value* y0 = t.in("f32[1]");
  auto body = std::make_shared<Graph>("body", &t.g);
  (void)*body->addInput("iter", TensorType{});
  Value* condIn = *body->addInput("cond_in", TensorType{});
  Value* yIn = *body->addInput("y_in", TensorType{});
  Value* shape = add(*body, "Shape", {yIn}, "shp");
  Value* zeros = add(*body, "ConstantOfShape", {shape}, "zeros");
  Value* yOut = add(*body, "Concat", {zeros, xOuter}, "y_out", {{"axis", ai(0)}});
  body->setOutputs({add(*body, "Identity", {condIn}, "cond_out"), yOut});
  t.op("Loop", {t.init(i64(4)), nullptr, y0});
  t.node->setAttr("body", Attribute(GraphPtr(body)));
  EXPECT_EQ(t.infer(), "f32[?]");
  EXPECT_EQ(toString(zeros->type()), "f32[?]");
}

// body: y_out = y_in + xs[i : i + step] (a Slice whose bounds depend on the iteration number),
// scan = y_out; `trips` constant M.
std::string sliceByIteration(int64_t trips, int64_t step, const std::string& xsType,
                             KnownValues* known = nullptr, Value** slicePtr = nullptr) {
  OpGraph t;
  Value* xs = t.in(xsType);
  Value* y0 = t.in("f32[1]");
  auto body = std::make_shared<Graph>("body", &t.g);
  Value* iter = *body->addInput("iter", TensorType{});
  Value* condIn = *body->addInput("cond_in", TensorType{});
  Value* yIn = *body->addInput("y_in", TensorType{});
  Value* stepV = *body->addInitializer("step", i64(step));
  Value* axes = *body->addInitializer("axes", i64s({0}));
  Value* start = add(*body, "Unsqueeze", {iter, axes}, "start");
  Value* end = add(*body, "Unsqueeze", {add(*body, "Add", {iter, stepV}, "e"), axes}, "end");
  Value* slice = add(*body, "Slice", {xs, start, end}, "slice");
  Value* yOut = add(*body, "Add", {yIn, slice}, "y_out");
  body->setOutputs(
      {add(*body, "Identity", {condIn}, "cond_out"), yOut, add(*body, "Identity", {yOut}, "scan")});
  t.op("Loop", {t.init(i64(trips)), nullptr, y0}, 2);
  t.node->setAttr("body", Attribute(GraphPtr(body)));
  std::string err = t.run();
  if (known) *known = t.known;
  if (slicePtr) *slicePtr = slice;
  return err.empty() ? t.type(0) + " " + t.type(1) + " slice " + toString(slice->type())
                     : "error: " + err;
}

TEST(OpsControlLoop, ShapesThatDependOnlyOnTheIterationAreSpecialized) {
  // xs[i:i+1] is one element in each of the 5 iterations.
  KnownValues known;
  Value* slice = nullptr;
  EXPECT_EQ(sliceByIteration(5, 1, "f32[5]", &known, &slice), "f32[1] f32[5,1] slice f32[1]");
  // No value computed with one iteration's number stays known.
  EXPECT_EQ(known.count(slice), 0u);
  // xs[i:i+2] of a 5-element xs is 2 elements, then 1 at i = 4: no agreed shape.
  EXPECT_EQ(sliceByIteration(5, 2, "f32[5]"), "f32[?] f32[5,?] slice f32[?]");
}

TEST(OpsControlLoop, Errors) {
  LoopCase wrongDtype;
  EXPECT_TRUE(contains(wrongDtype.build("i64[1]", 2, false, false), "one element type"));
  OpGraph t;
  t.op("Loop", {t.in("i32[]"), nullptr});
  t.node->setAttr("body", Attribute(GraphPtr(std::make_shared<Graph>("b", &t.g))));
  EXPECT_TRUE(contains(t.infer(), "M (trip count) must be i64"));
}

// Scan: state sum (f32[2]) accumulates slices of xs plus an outer-scope bias.
std::vector<std::string> scan(const std::string& xsType, std::vector<int64_t> inAxes,
                              std::vector<int64_t> outAxes) {
  OpGraph t;
  Value* bias = t.in("f32[2]");
  Value* s0 = t.in("f32[2]");
  Value* xs = t.in(xsType);
  auto body = std::make_shared<Graph>("body", &t.g);
  Value* sIn = *body->addInput("s_in", TensorType{});
  Value* xIn = *body->addInput("x_in", TensorType{});
  Value* sum = add(*body, "Add", {sIn, xIn}, "sum");
  Value* sOut = add(*body, "Add", {sum, bias}, "s_out");
  body->setOutputs({sOut, add(*body, "Identity", {sOut}, "scan_out")});
  t.op("Scan", {s0, xs}, 2);
  t.node->setAttr("body", Attribute(GraphPtr(body)));
  t.node->setAttr("num_scan_inputs", ai(1));
  if (!inAxes.empty()) t.node->setAttr("scan_input_axes", ais(inAxes));
  if (!outAxes.empty()) t.node->setAttr("scan_output_axes", ais(outAxes));
  std::string err = t.run();
  if (!err.empty()) return {"error: " + err};
  return {t.type(0), t.type(1)};
}

TEST(OpsControlScan, AxesAndOuterScope) {
  using V = std::vector<std::string>;
  EXPECT_EQ(scan("f32[5,2]", {}, {}), (V{"f32[2]", "f32[5,2]"}));
  EXPECT_EQ(scan("f32[T,2]", {}, {}), (V{"f32[2]", "f32[T,2]"}));
  EXPECT_EQ(scan("f32[2,7]", {-1}, {1}), (V{"f32[2]", "f32[2,7]"}));
  EXPECT_EQ(scan("f32[2,7]", {1}, {-1}), (V{"f32[2]", "f32[2,7]"}));
  EXPECT_TRUE(contains(scan("f32[5,2]", {2}, {})[0], "out of range"));
  EXPECT_TRUE(contains(scan("f32[5,2]", {0, 1}, {})[0], "scan_input_axes has 2 entries"));
  EXPECT_TRUE(contains(scan("f32[5,3]", {}, {})[0], "cannot broadcast"));
}

}  // namespace
}  // namespace kiln
