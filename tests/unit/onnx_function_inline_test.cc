// ONNX import: calls of model-local functions are inlined (names, attributes, opsets, nesting).
#include <gtest/gtest.h>

#include "kiln/ir/verifier.h"
#include "onnx_test_models.h"
#include "test_types.h"

namespace kiln {
namespace {

using namespace onnx_test;

/// Inner values get fresh names derived from "<call>/<name>" (with a uniquing suffix).
bool derivedFrom(const std::string& name, const std::string& base) {
  return name.rfind(base, 0) == 0;
}

Model importOk(const onnx::ModelProto& m) {
  auto r = importModel(m);
  EXPECT_TRUE(r.ok()) << r.message();
  if (!r.ok()) return Model();
  return std::move(*r);
}

/// Adds function `name` of domain "local" with the given formal inputs, outputs and
/// attributes; returns it for its nodes to be added.
onnx::FunctionProto* addFunction(onnx::ModelProto& m, const std::string& name,
                                 std::vector<std::string> ins, std::vector<std::string> outs,
                                 std::vector<std::string> attrs = {}, int64_t opset = 13) {
  auto* f = m.add_functions();
  f->set_name(name);
  f->set_domain("local");
  for (const auto& i : ins) f->add_input(i);
  for (const auto& o : outs) f->add_output(o);
  for (const auto& a : attrs) f->add_attribute(a);
  auto* o = f->add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  return f;
}

/// A node of a function body (same fields as a graph node).
onnx::NodeProto* addBodyNode(onnx::FunctionProto* f, const std::string& op,
                             const std::vector<std::string>& ins,
                             const std::vector<std::string>& outs, const std::string& name = "",
                             const std::string& domain = "") {
  auto* n = f->add_node();
  n->set_op_type(op);
  n->set_name(name);
  n->set_domain(domain);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

/// A model with inputs x, x2 (f32 [2,3]) and the domain "local" imported.
onnx::ModelProto baseModel() {
  onnx::ModelProto m = makeModel(13);
  auto* o = m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  addInput(m.mutable_graph(), "x");
  addInput(m.mutable_graph(), "x2");
  return m;
}

onnx::NodeProto* addCall(onnx::ModelProto& m, const std::string& fn,
                         const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                         const std::string& name) {
  auto* n = addNode(m.mutable_graph(), fn, ins, outs, name);
  n->set_domain("local");
  return n;
}

TEST(OnnxFunctionInline, BindsInputsOutputsAndRenamesInnerValues) {
  onnx::ModelProto m = baseModel();
  auto* f = addFunction(m, "AddMul", {"a", "b"}, {"c"});
  addBodyNode(f, "Add", {"a", "b"}, {"t"}, "add");
  addBodyNode(f, "Mul", {"t", "a"}, {"c"});
  addCall(m, "AddMul", {"x", "x2"}, {"y"}, "call");
  addOutput(m.mutable_graph(), "y");
  Model model = importOk(m);
  ASSERT_TRUE(model.graph);
  EXPECT_TRUE(verifyGraph(*model.graph).ok());
  Node* add = findNode(*model.graph, "call/add");
  Node* mul = findNode(*model.graph, "call/Mul_1");
  ASSERT_NE(add, nullptr);
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(add->input(0)->name(), "x");
  EXPECT_EQ(add->input(1)->name(), "x2");
  EXPECT_TRUE(derivedFrom(add->output(0)->name(), "call/t")) << add->output(0)->name();
  EXPECT_EQ(mul->input(0), add->output(0));
  EXPECT_EQ(mul->input(1)->name(), "x");
  EXPECT_EQ(mul->output(0)->name(), "y");
  EXPECT_EQ(model.graph->outputs().at(0), mul->output(0));
}

TEST(OnnxFunctionInline, NestedCallsAndTwoCallsGetDistinctNames) {
  onnx::ModelProto m = baseModel();
  auto* inner = addFunction(m, "NegF", {"a"}, {"b"});
  addBodyNode(inner, "Neg", {"a"}, {"b"}, "neg");
  auto* outer = addFunction(m, "Outer", {"a"}, {"c"});
  addBodyNode(outer, "NegF", {"a"}, {"t"}, "inner", "local");
  addBodyNode(outer, "Relu", {"t"}, {"c"}, "relu");
  addCall(m, "Outer", {"x"}, {"y1"}, "first");
  addCall(m, "Outer", {"x2"}, {"y2"}, "second");
  addOutput(m.mutable_graph(), "y1");
  addOutput(m.mutable_graph(), "y2");
  Model model = importOk(m);
  ASSERT_TRUE(model.graph);
  for (const char* call : {"first", "second"}) {
    SCOPED_TRACE(call);
    Node* neg = findNode(*model.graph, std::string(call) + "/inner/neg");
    Node* relu = findNode(*model.graph, std::string(call) + "/relu");
    ASSERT_NE(neg, nullptr);
    ASSERT_NE(relu, nullptr);
    EXPECT_EQ(neg->input(0)->name(), std::string(call) == "first" ? "x" : "x2");
    EXPECT_EQ(relu->input(0), neg->output(0));
    EXPECT_TRUE(derivedFrom(neg->output(0)->name(), std::string(call) + "/t"));
  }
  EXPECT_EQ(model.graph->nodes().size(), 4u);
}

TEST(OnnxFunctionInline, RefAttrNameTakesTheCallsAttributeOrTheOpDefault) {
  onnx::ModelProto m = baseModel();
  auto* f = addFunction(m, "Leaky", {"a"}, {"b"}, {"slope"});
  auto* body = addBodyNode(f, "LeakyRelu", {"a"}, {"b"}, "lr");
  auto* ref = addAttr(body, "alpha", onnx::AttributeProto::FLOAT);
  ref->set_ref_attr_name("slope");
  auto* set = addCall(m, "Leaky", {"x"}, {"y1"}, "set");
  attrFloat(set, "slope", 0.25f);
  addCall(m, "Leaky", {"x2"}, {"y2"}, "unset");  // no slope: LeakyRelu's default alpha
  addOutput(m.mutable_graph(), "y1");
  addOutput(m.mutable_graph(), "y2");
  Model model = importOk(m);
  ASSERT_TRUE(model.graph);
  Node* a = findNode(*model.graph, "set/lr");
  Node* b = findNode(*model.graph, "unset/lr");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->attrFloat("alpha", -1), 0.25f);
  EXPECT_FALSE(b->hasAttr("alpha"));
  EXPECT_FALSE(b->hasAttr("slope"));
}

TEST(OnnxFunctionInline, FunctionOpsetImportsDecideTheBodysOpForms) {
  // The model is at opset 13, the function at 11, where Squeeze takes axes as an attribute:
  // the importer rewrites it to the core form (axes as an input).
  onnx::ModelProto m = makeModel(13);
  auto* o = m.add_opset_import();
  o->set_domain("local");
  o->set_version(1);
  addInput(m.mutable_graph(), "x", {1, 3});
  auto* f = addFunction(m, "Sq", {"a"}, {"b"}, {}, 11);
  attrInts(addBodyNode(f, "Squeeze", {"a"}, {"b"}, "sq"), "axes", {0});
  addCall(m, "Sq", {"x"}, {"y"}, "call");
  addOutput(m.mutable_graph(), "y");
  Model model = importOk(m);
  ASSERT_TRUE(model.graph);
  Node* sq = findNode(*model.graph, "call/sq");
  ASSERT_NE(sq, nullptr);
  EXPECT_EQ(sq->numInputs(), 2u);
  EXPECT_FALSE(sq->hasAttr("axes"));
}

TEST(OnnxFunctionInline, OmittedOptionalInputsAndOutputs) {
  onnx::ModelProto m = baseModel();
  auto* f = addFunction(m, "Two", {"a", "b"}, {"c", "d"});
  addBodyNode(f, "Relu", {"a"}, {"c"}, "r");
  addBodyNode(f, "Neg", {"a"}, {"d"}, "n");
  addCall(m, "Two", {"x"}, {"y"}, "call");  // input b and output d left out
  addOutput(m.mutable_graph(), "y");
  Model model = importOk(m);
  ASSERT_TRUE(model.graph);
  Node* n = findNode(*model.graph, "call/n");
  ASSERT_NE(n, nullptr);
  EXPECT_TRUE(derivedFrom(n->output(0)->name(), "call/d")) << n->output(0)->name();
  EXPECT_EQ(n->input(0)->name(), "x");
}

TEST(OnnxFunctionInline, RecursionAndBadBodiesAreClearErrors) {
  {
    onnx::ModelProto m = baseModel();
    addBodyNode(addFunction(m, "F", {"a"}, {"b"}), "G", {"a"}, {"b"}, "g", "local");
    addBodyNode(addFunction(m, "G", {"a"}, {"b"}), "F", {"a"}, {"b"}, "f", "local");
    addCall(m, "F", {"x"}, {"y"}, "call");
    addOutput(m.mutable_graph(), "y");
    auto r = importModel(m);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), "function 'local.F' is recursive")) << r.message();
    EXPECT_TRUE(contains(r.message(), "local.F -> local.G -> local.F")) << r.message();
  }
  {
    onnx::ModelProto m = baseModel();
    addBodyNode(addFunction(m, "F", {"a"}, {"b"}), "Add", {"a", "outer"}, {"b"}, "add");
    addCall(m, "F", {"x"}, {"y"}, "call");
    addOutput(m.mutable_graph(), "y");
    auto r = importModel(m);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), "reads 'outer'")) << r.message();
  }
  {
    onnx::ModelProto m = baseModel();
    addBodyNode(addFunction(m, "F", {"a"}, {"b"}), "Relu", {"a"}, {"b"});
    addCall(m, "F", {"x", "x2"}, {"y"}, "call");
    addOutput(m.mutable_graph(), "y");
    auto r = importModel(m);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), "passes 2 inputs")) << r.message();
    EXPECT_TRUE(contains(r.message(), "node 'call'")) << r.message();
  }
}

}  // namespace
}  // namespace kiln
