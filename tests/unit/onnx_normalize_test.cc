// ONNX import: older opset forms become kiln's core forms; subgraphs and outer-scope reads.
#include <gtest/gtest.h>

#include "kiln/ir/verifier.h"
#include "onnx_test_models.h"
#include "test_types.h"

namespace kiln {
namespace {

using namespace onnx_test;

// A model with input x (declared f32 [2,3] unless `declared` is false) and one node.
struct OneNode {
  onnx::ModelProto model;
  onnx::NodeProto* node;
};
OneNode oneNode(int64_t opset, const std::string& op, std::vector<std::string> inputs = {"x"},
                std::vector<std::string> outputs = {"y"}, bool declared = true) {
  OneNode m{makeModel(opset), nullptr};
  auto* g = m.model.mutable_graph();
  if (declared) {
    addInput(g, "x");
  } else {  // x comes from a node, with no declared type
    addInput(g, "x0");
    addNode(g, "Relu", {"x0"}, {"x"}, "relu");
  }
  m.node = addNode(g, op, inputs, outputs, "n");
  for (const auto& o : outputs)
    if (!o.empty()) addOutput(g, o);
  return m;
}

Model importVerified(const onnx::ModelProto& m) {
  auto r = importModel(m);
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return Model();
  EXPECT_TRUE(verifyGraph(*r->graph).ok()) << verifyGraph(*r->graph).message();
  return std::move(r).value();
}

std::vector<int64_t> constInts(const Node* n, size_t input) {
  const Value* v = n->input(input);
  if (!v || !v->initializer()) return {-999};
  return v->initializer()->toInts();
}

TEST(OnnxNormalize, SqueezeAxesAttributeBecomesInput) {
  OneNode m = oneNode(11, "Squeeze");
  attrInts(m.node, "axes", {0, -1});
  Model model = importVerified(m.model);
  Node* n = findNode(*model.graph, "n");
  ASSERT_NE(n, nullptr);
  EXPECT_FALSE(n->hasAttr("axes"));
  ASSERT_EQ(n->numInputs(), 2u);
  EXPECT_EQ(n->input(1)->dtype(), DType::I64);
  EXPECT_EQ(constInts(n, 1), (std::vector<int64_t>{0, -1}));
  // At opset 13 axes is already an input and nothing changes.
  OneNode m13 = oneNode(13, "Squeeze");
  Model model13 = importVerified(m13.model);
  EXPECT_EQ(findNode(*model13.graph, "n")->numInputs(), 1u);
}

TEST(OnnxNormalize, ReduceAxesMoveToInputsByOpset) {
  OneNode sum = oneNode(11, "ReduceSum");
  attrInts(sum.node, "axes", {1});
  attrInt(sum.node, "keepdims", 0);
  Model a = importVerified(sum.model);
  Node* n = findNode(*a.graph, "n");
  EXPECT_EQ(constInts(n, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(n->attrInt("keepdims", 1), 0);
  OneNode mean17 = oneNode(17, "ReduceMean");
  attrInts(mean17.node, "axes", {0});
  Model b = importVerified(mean17.model);
  EXPECT_EQ(constInts(findNode(*b.graph, "n"), 1), (std::vector<int64_t>{0}));
  OneNode mean18 = oneNode(18, "ReduceMean", {"x", "ax"});
  *mean18.model.mutable_graph()->add_initializer() = [] {
    onnx::TensorProto t;
    t.set_name("ax");
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(1);
    t.add_int64_data(1);
    return t;
  }();
  Model c = importVerified(mean18.model);
  EXPECT_EQ(findNode(*c.graph, "n")->input(1)->name(), "ax");
}

TEST(OnnxNormalize, SoftmaxBeforeOpset13IsDecomposed) {
  OneNode m = oneNode(11, "Softmax");  // default axis 1 on a [2,3] input: coerced to 2-D
  m.model.mutable_graph()->mutable_input(0)->clear_type();
  Model model = importVerified(m.model);
  const Graph& g = *model.graph;
  ASSERT_EQ(g.numNodes(), 4u);
  Node* sm = findNode(g, "n");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->attrInt("axis", 0), 1);
  Node* flatten = sm->input(0)->producer();
  ASSERT_NE(flatten, nullptr);
  EXPECT_EQ(flatten->opType(), "Flatten");
  EXPECT_EQ(flatten->attrInt("axis", 0), 1);
  EXPECT_EQ(flatten->input(0)->name(), "x");
  Node* reshape = g.outputs()[0]->producer();
  EXPECT_EQ(g.outputs()[0]->name(), "y");
  EXPECT_EQ(reshape->opType(), "Reshape");
  EXPECT_EQ(reshape->attrInt("allowzero", 0), 1);
  EXPECT_EQ(reshape->input(0)->producer(), sm);
  Node* shape = reshape->input(1)->producer();
  EXPECT_EQ(shape->opType(), "Shape");
  EXPECT_EQ(shape->input(0)->name(), "x");

  // axis -1, or the last axis of a declared rank, means the same in both forms.
  OneNode last = oneNode(11, "Softmax");
  attrInt(last.node, "axis", -1);
  EXPECT_EQ(importVerified(last.model).graph->numNodes(), 1u);
  OneNode declared = oneNode(11, "LogSoftmax");  // x is declared [2,3]; axis 1 is the last
  Model d = importVerified(declared.model);
  ASSERT_EQ(d.graph->numNodes(), 1u);
  EXPECT_EQ(d.graph->nodes().front()->attrInt("axis", 0), -1);
  OneNode modern = oneNode(13, "Softmax");
  EXPECT_FALSE(importVerified(modern.model).graph->nodes().front()->hasAttr("axis"));
}

TEST(OnnxNormalize, Clip6AttributesBecomeTypedInputs) {
  OneNode m = oneNode(9, "Clip");
  attrFloat(m.node, "min", 0.0f);
  attrFloat(m.node, "max", 6.0f);
  Model model = importVerified(m.model);
  Node* n = findNode(*model.graph, "n");
  ASSERT_EQ(n->numInputs(), 3u);
  ASSERT_TRUE(n->input(1)->isInitializer());
  EXPECT_EQ(n->input(1)->dtype(), DType::F32);
  EXPECT_EQ(n->input(1)->initializer()->rank(), 0);
  EXPECT_EQ(n->input(2)->initializer()->data<float>()[0], 6.0f);
  EXPECT_FALSE(n->hasAttr("min"));

  // Only max, on an input of undeclared type: min is omitted, max is cast like the input.
  OneNode u = oneNode(9, "Clip", {"x"}, {"y"}, /*declared=*/false);
  attrFloat(u.node, "max", 6.0f);
  Model mu = importVerified(u.model);
  Node* nu = findNode(*mu.graph, "n");
  ASSERT_EQ(nu->numInputs(), 3u);
  EXPECT_EQ(nu->input(1), nullptr);
  Node* cast = nu->input(2)->producer();
  ASSERT_NE(cast, nullptr);
  EXPECT_EQ(cast->opType(), "CastLike");
  EXPECT_EQ(cast->input(1)->name(), "x");
  EXPECT_EQ(cast->input(0)->initializer()->data<float>()[0], 6.0f);
}

TEST(OnnxNormalize, Slice1AttributesBecomeInputs) {
  OneNode m = oneNode(9, "Slice");
  attrInts(m.node, "starts", {0});
  attrInts(m.node, "ends", {2});
  attrInts(m.node, "axes", {1});
  Model model = importVerified(m.model);
  Node* n = findNode(*model.graph, "n");
  ASSERT_EQ(n->numInputs(), 4u);
  EXPECT_EQ(constInts(n, 1), (std::vector<int64_t>{0}));
  EXPECT_EQ(constInts(n, 2), (std::vector<int64_t>{2}));
  EXPECT_EQ(constInts(n, 3), (std::vector<int64_t>{1}));
  EXPECT_TRUE(n->attributes().empty());
  OneNode missing = oneNode(9, "Slice");
  auto r = importModel(missing.model);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(),
                       "node 'n' (Slice, ai.onnx, opset 9): required attribute "
                       "'starts' is missing"))
      << r.message();
}

TEST(OnnxNormalize, UpsampleBecomesResize) {
  OneNode m9 = oneNode(9, "Upsample", {"x", "scales"});
  *m9.model.mutable_graph()->add_initializer() = floatTensor("scales", {2}, {1, 2});
  Model a = importVerified(m9.model);
  Node* n = findNode(*a.graph, "n");
  EXPECT_EQ(n->opType(), "Resize");
  ASSERT_EQ(n->numInputs(), 3u);
  EXPECT_EQ(n->input(1), nullptr);  // roi omitted
  EXPECT_EQ(n->input(2)->name(), "scales");
  EXPECT_EQ(n->attrString("mode", ""), "nearest");
  EXPECT_EQ(n->attrString("coordinate_transformation_mode", ""), "asymmetric");
  EXPECT_EQ(n->attrString("nearest_mode", ""), "floor");

  OneNode m7 = oneNode(7, "Upsample");
  attrString(m7.node, "mode", "linear");
  auto* s = addAttr(m7.node, "scales", onnx::AttributeProto::FLOATS);
  s->add_floats(1);
  s->add_floats(3);
  Model b = importVerified(m7.model);
  Node* r = findNode(*b.graph, "n");
  EXPECT_EQ(r->opType(), "Resize");
  EXPECT_EQ(r->attrString("mode", ""), "linear");
  EXPECT_FALSE(r->hasAttr("nearest_mode"));
  EXPECT_EQ(r->input(2)->initializer()->data<float>()[1], 3.0f);

  OneNode r10 = oneNode(10, "Resize", {"x", "scales"});
  *r10.model.mutable_graph()->add_initializer() = floatTensor("scales", {2}, {1, 2});
  Model rnModel = importVerified(r10.model);
  Node* rn = findNode(*rnModel.graph, "n");
  EXPECT_EQ(rn->input(1), nullptr);
  EXPECT_EQ(rn->input(2)->name(), "scales");
}

TEST(OnnxNormalize, CastToBFloat16TruncatesBeforeOpset19) {
  // ONNX's reference truncated float→bfloat16 before opset 19; opset 19 rounds to nearest even.
  auto roundMode = [](int64_t opset, int to) {
    OneNode cast = oneNode(opset, "Cast");
    attrInt(cast.node, "to", to);
    Model m = importVerified(cast.model);
    return findNode(*m.graph, "n")->attrString("round_mode", "(none)");
  };
  EXPECT_EQ(roundMode(13, onnx::TensorProto::BFLOAT16), "truncate");
  EXPECT_EQ(roundMode(19, onnx::TensorProto::BFLOAT16), "(none)");
  EXPECT_EQ(roundMode(13, onnx::TensorProto::FLOAT16), "(none)");
  OneNode like = oneNode(15, "CastLike", {"x", "x"});
  EXPECT_EQ(findNode(*importVerified(like.model).graph, "n")->attrString("round_mode", ""), "truncate");
  OneNode like19 = oneNode(19, "CastLike", {"x", "x"});
  EXPECT_FALSE(findNode(*importVerified(like19.model).graph, "n")->hasAttr("round_mode"));
}

TEST(OnnxNormalize, ConstantsCastsAndOtherAttributeForms) {
  OneNode c = oneNode(13, "Constant", {}, {"y"});
  attrInts(c.node, "value_ints", {4, 5});
  Model cnModel = importVerified(c.model);
  Node* cn = findNode(*cnModel.graph, "n");
  ASSERT_TRUE(cn->hasAttr("value"));
  EXPECT_EQ(cn->attributes().size(), 1u);
  EXPECT_EQ(cn->attr("value")->t().toInts(), (std::vector<int64_t>{4, 5}));
  OneNode cf = oneNode(13, "Constant", {}, {"y"});
  attrFloat(cf.node, "value_float", 2.5f);
  Model tModel = importVerified(cf.model);
  const Tensor& t = findNode(*tModel.graph, "n")->attr("value")->t();
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.data<float>()[0], 2.5f);

  OneNode cast = oneNode(13, "Cast");
  attrInt(cast.node, "to", onnx::TensorProto::INT64);
  EXPECT_EQ(findNode(*importVerified(cast.model).graph, "n")->attrString("to", ""), "i64");
  OneNode bad = oneNode(13, "Cast");
  attrInt(bad.node, "to", onnx::TensorProto::COMPLEX64);
  auto r = importModel(bad.model);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "COMPLEX64")) << r.message();

  OneNode topk = oneNode(9, "TopK", {"x"}, {"v", "i"});
  attrInt(topk.node, "k", 2);
  EXPECT_EQ(constInts(findNode(*importVerified(topk.model).graph, "n"), 1), (std::vector<int64_t>{2}));

  OneNode split = oneNode(11, "Split", {"x"}, {"a", "b"});
  attrInts(split.node, "split", {1, 2});
  attrInt(split.node, "axis", 1);
  Model snModel = importVerified(split.model);
  Node* sn = findNode(*snModel.graph, "n");
  EXPECT_EQ(constInts(sn, 1), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(sn->hasAttr("num_outputs"));
  OneNode even = oneNode(13, "Split", {"x"}, {"a", "b"});
  EXPECT_EQ(findNode(*importVerified(even.model).graph, "n")->attrInt("num_outputs", 0), 2);

  OneNode pad = oneNode(9, "Pad");
  attrInts(pad.node, "pads", {0, 1, 0, 1});
  attrFloat(pad.node, "value", 1.5f);
  attrString(pad.node, "mode", "constant");
  Model pnModel = importVerified(pad.model);
  Node* pn = findNode(*pnModel.graph, "n");
  EXPECT_EQ(constInts(pn, 1), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(pn->input(2)->initializer()->data<float>()[0], 1.5f);
  EXPECT_EQ(pn->attrString("mode", ""), "constant");

  OneNode drop = oneNode(9, "Dropout");
  attrFloat(drop.node, "ratio", 0.3f);
  EXPECT_FALSE(findNode(*importVerified(drop.model).graph, "n")->hasAttr("ratio"));
}

TEST(OnnxNormalize, BatchNormalizationInInferenceForm) {
  auto bn = [](std::vector<std::string> outs) {
    OneNode m = oneNode(7, "BatchNormalization", {"x", "s", "b", "m", "v"}, outs);
    for (const char* p : {"s", "b", "m", "v"})
      *m.model.mutable_graph()->add_initializer() = floatTensor(p, {3}, {1, 1, 1});
    attrInt(m.node, "spatial", 1);
    return m;
  };
  OneNode ok = bn({"y", "", "", "sm", "sv"});
  // Unused training outputs are dropped (they are graph outputs here only if listed).
  ok.model.mutable_graph()->mutable_output()->DeleteSubrange(1, 2);
  Model nModel = importVerified(ok.model);
  Node* n = findNode(*nModel.graph, "n");
  EXPECT_EQ(n->numOutputs(), 1u);
  EXPECT_FALSE(n->hasAttr("spatial"));
  OneNode used = bn({"y", "mean"});
  auto r = importModel(used.model);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "inference")) << r.message();
}

TEST(OnnxNormalize, GroupNorm18RepeatsScaleAndBiasPerChannel) {
  OneNode m = oneNode(18, "GroupNormalization", {"x", "s", "b"});
  *m.model.mutable_graph()->add_initializer() = floatTensor("s", {2}, {1, 2});
  *m.model.mutable_graph()->add_initializer() = floatTensor("b", {2}, {0, 0});
  attrInt(m.node, "num_groups", 2);
  Model model = importVerified(m.model);
  Node* n = findNode(*model.graph, "n");
  for (size_t i = 1; i <= 2; ++i) {
    Node* reshape = n->input(i)->producer();
    ASSERT_NE(reshape, nullptr);
    EXPECT_EQ(reshape->opType(), "Reshape");
    Node* expand = reshape->input(0)->producer();
    EXPECT_EQ(expand->opType(), "Expand");
    EXPECT_EQ(expand->input(0)->producer()->opType(), "Unsqueeze");
    EXPECT_EQ(expand->input(0)->producer()->input(0)->name(), i == 1 ? "s" : "b");
    EXPECT_EQ(expand->input(1)->producer()->opType(), "Concat");
  }
  OneNode m21 = oneNode(21, "GroupNormalization", {"x", "s", "b"});
  attrInt(m21.node, "num_groups", 2);
  *m21.model.mutable_graph()->add_initializer() = floatTensor("s", {3}, {1, 2, 3});
  *m21.model.mutable_graph()->add_initializer() = floatTensor("b", {3}, {0, 0, 0});
  Model model21 = importVerified(m21.model);
  EXPECT_EQ(model21.graph->numNodes(), 1u);
}

// ---- Subgraphs ----

TEST(OnnxSubgraph, BranchesReadOuterValues) {
  onnx::ModelProto m = makeModel(13);
  auto* g = m.mutable_graph();
  addInput(g, "x0");
  addInput(g, "c", {}, onnx::TensorProto::BOOL);
  auto* iff = addNode(g, "If", {"c"}, {"y"}, "if");
  addNode(g, "Relu", {"x0"}, {"x"}, "relu");  // defined after the If that reads it
  auto* thenG = addAttr(iff, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g();
  thenG->set_name("then");
  addNode(thenG, "Neg", {"x"}, {"t"}, "neg");
  addOutput(thenG, "t");
  auto* elseG = addAttr(iff, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g();
  addNode(elseG, "Softmax", {"x"}, {"e"}, "sm");
  addOutput(elseG, "x");  // an outer value as a branch output
  addOutput(g, "y");
  Model model = importVerified(m);
  const Graph& main = *model.graph;
  EXPECT_EQ(main.nodes().front()->name(), "relu");  // sorted before its outer-scope reader
  Node* ifNode = findNode(main, "if");
  ASSERT_NE(ifNode, nullptr);
  std::vector<Graph*> subs = ifNode->subgraphs();
  ASSERT_EQ(subs.size(), 2u);  // else_branch, then_branch (attribute-name order)
  Graph* thenSub = subs[1];
  EXPECT_EQ(thenSub->name(), "then");
  EXPECT_EQ(thenSub->parent(), &main);
  EXPECT_EQ(subs[0]->name(), "if.else_branch");
  Node* neg = findNode(*thenSub, "neg");
  EXPECT_EQ(neg->input(0), main.findValue("x"));
  EXPECT_EQ(subs[0]->outputs()[0], main.findValue("x"));
}

TEST(OnnxSubgraph, LoopBodyInputsAndLimits) {
  onnx::ModelProto m = makeModel(13);
  auto* g = m.mutable_graph();
  addInput(g, "n", {}, onnx::TensorProto::INT64);
  addInput(g, "x");
  auto* loop = addNode(g, "Loop", {"n", "", "x"}, {"xf"}, "loop");
  auto* body = addAttr(loop, "body", onnx::AttributeProto::GRAPH)->mutable_g();
  body->add_input()->set_name("i");  // body inputs may be untyped
  body->add_input()->set_name("cond");
  body->add_input()->set_name("xi");
  addNode(body, "Identity", {"cond"}, {"cond_out"}, "id");
  addNode(body, "Add", {"xi", "x"}, {"xo"}, "add");
  addOutput(body, "cond_out");
  addOutput(body, "xo");
  addOutput(g, "xf");
  Model model = importVerified(m);
  Graph* b = findNode(*model.graph, "loop")->subgraphs().at(0);
  ASSERT_EQ(b->inputs().size(), 3u);
  EXPECT_EQ(b->inputs()[2]->name(), "xi");
  EXPECT_EQ(b->inputs()[0]->type().dtype, DType::Undefined);
  EXPECT_EQ(findNode(*b, "add")->input(1)->owner(), model.graph.get());

  // A body may not redefine an outer name.
  addNode(body, "Neg", {"xi"}, {"n"}, "shadow");
  auto r = importModel(m);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "redefines a value of an enclosing graph")) << r.message();
}

// `depth` Ifs, each then-branch holding the next, and a Not in the innermost.
onnx::ModelProto nested(int depth) {
  onnx::ModelProto m = makeModel(13);
  addInput(m.mutable_graph(), "c", {}, onnx::TensorProto::BOOL);
  onnx::GraphProto* g = m.mutable_graph();
  for (int i = 0; i < depth; ++i) {
    auto* n = addNode(g, "If", {"c"}, {"y" + std::to_string(i)}, "if" + std::to_string(i));
    addOutput(g, "y" + std::to_string(i));
    g = addAttr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g();
  }
  addNode(g, "Not", {"c"}, {"leaf"}, "leaf");
  addOutput(g, "leaf");
  return m;
}

TEST(OnnxSubgraph, NestingDepthIsLimited) {
  EXPECT_TRUE(importModel(nested(5)).ok());
  OnnxImportOptions shallow;
  shallow.maxSubgraphDepth = 3;
  auto r = importModel(nested(5), "", shallow);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "nested more than 3 deep")) << r.message();
  auto deep = importModel(nested(70));
  ASSERT_FALSE(deep.ok());
  EXPECT_TRUE(contains(deep.message(), "nested")) << deep.message();
  EXPECT_FALSE(importModel(nested(400)).ok());  // the parser's recursion limit holds
}

TEST(OnnxSubgraph, NodeCountIsLimitedBeforeParsing) {
  onnx::ModelProto m = nested(5);  // six nodes
  OnnxImportOptions options;
  options.registry = &testRegistry();
  options.maxNodes = 6;
  EXPECT_TRUE(importOnnxBytes(serialize(m), "m.onnx", "", options).ok());
  options.maxNodes = 5;
  auto r = importOnnxBytes(serialize(m), "m.onnx", "", options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "more than 5 nodes (subgraphs included)")) << r.message();
  EXPECT_TRUE(contains(r.message(), "--max-nodes")) << r.message();
  // Counted on the wire before the protobuf is parsed: corrupt bytes after the graph do not
  // hide the count, while under the limit the parser reports them.
  std::string corrupt = serialize(m) + "\xff\xff\xff";
  r = importOnnxBytes(corrupt, "m.onnx", "", options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "more than 5 nodes")) << r.message();
  options.maxNodes = 6;
  r = importOnnxBytes(corrupt, "m.onnx", "", options);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "not a valid ONNX model")) << r.message();
}

}  // namespace
}  // namespace kiln
