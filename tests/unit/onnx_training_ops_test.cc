// ai.onnx.preview.training: import of Adagrad/Momentum/Adam (opset 1 only), their type
// inference and reference evaluation.
#include <gtest/gtest.h>

#include "kiln/ops/infer.h"
#include "onnx_test_models.h"
#include "test_types.h"

namespace kiln {
namespace {

using namespace onnx_test;

constexpr const char* kDomain = "ai.onnx.preview.training";

/// R, T and one X/G/state... group of [2] floats, calling `op` of the training domain.
onnx::ModelProto trainingModel(const std::string& op, int states, int64_t opset = 1) {
  onnx::ModelProto m = makeModel(13);
  auto* o = m.add_opset_import();
  o->set_domain(kDomain);
  o->set_version(opset);
  auto* g = m.mutable_graph();
  addInput(g, "R", {}, onnx::TensorProto::FLOAT);
  addInput(g, "T", {}, onnx::TensorProto::INT64);
  std::vector<std::string> ins{"R", "T", "X", "G"}, outs{"X_new"};
  for (const char* n : {"X", "G"}) addInput(g, n, {2});
  for (int s = 0; s < states; ++s) {
    std::string name = "S" + std::to_string(s);
    addInput(g, name, {2});
    ins.push_back(name);
    outs.push_back(name + "_new");
  }
  auto* n = addNode(g, op, ins, outs, "opt");
  n->set_domain(kDomain);
  for (const auto& out : outs) addOutput(g, out);
  return m;
}

TEST(OnnxTrainingOps, ImportAndInferAdagradMomentumAdam) {
  for (auto [op, states] : {std::pair{"Adagrad", 1}, {"Momentum", 1}, {"Adam", 2}}) {
    SCOPED_TRACE(op);
    onnx::ModelProto m = trainingModel(op, states);
    if (std::string(op) == "Momentum") {
      auto* n = m.mutable_graph()->mutable_node(0);
      attrFloat(n, "alpha", 0.9f);
      attrFloat(n, "beta", 0.1f);
      attrFloat(n, "norm_coefficient", 0);
      attrString(n, "mode", "standard");
    }
    auto r = importModel(m);
    ASSERT_TRUE(r.ok()) << r.message();
    Node* n = findNode(*r->graph, "opt");
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->domain(), kDomain);
    Status st = inferShapes(*r->graph, OpRegistry::builtin());
    ASSERT_TRUE(st.ok()) << st.message();
    for (size_t i = 0; i < n->numOutputs(); ++i)
      EXPECT_EQ(toString(n->output(i)->type()), "f32[2]");
  }
}

TEST(OnnxTrainingOps, OtherOpsetsOpsAndArityAreRefused) {
  auto r = importModel(trainingModel("Adagrad", 1, 2));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "opset 2 of domain 'ai.onnx.preview.training'")) << r.message();
  r = importModel(trainingModel("Gradient", 1));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "op 'Gradient' of domain")) << r.message();
  // Adagrad with an Adam-shaped input list: 2 + 4 inputs is no whole number of X/G/H groups.
  r = importModel(trainingModel("Adagrad", 2));
  ASSERT_TRUE(r.ok()) << r.message();
  Status st = inferShapes(*r->graph, OpRegistry::builtin());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "node 'opt' (Adagrad")) << st.message();
}

TEST(OnnxTrainingOps, EvaluateMatchesTheKernel) {
  Graph g;
  Tensor R = Tensor::fromVector<float>(DType::F32, {}, {0.5f});
  Tensor T = Tensor::fromVector<int64_t>(DType::I64, {}, {0});
  Tensor X = Tensor::fromVector<float>(DType::F32, {2}, {1, -1});
  Tensor G = Tensor::fromVector<float>(DType::F32, {2}, {2, 4});
  Tensor V = Tensor::fromVector<float>(DType::F32, {2}, {1, 1});
  std::vector<Value*> ins;
  for (auto [name, t] : {std::pair{"R", &R}, {"T", &T}, {"X", &X}, {"G", &G}, {"V", &V}})
    ins.push_back(*g.addInitializer(name, *t));
  Node* n = *g.addNode("Momentum", kDomain, "m", ins, {"X_new", "V_new"});
  n->setAttr("alpha", Attribute(0.9f));
  n->setAttr("beta", Attribute(0.1f));
  n->setAttr("norm_coefficient", Attribute(0.0f));
  n->setAttr("mode", Attribute(std::string("standard")));
  const OpDef* def = OpRegistry::builtin().find(kDomain, "Momentum");
  ASSERT_NE(def, nullptr);
  auto outs = def->evaluate(EvalContext(*n, {&R, &T, &X, &G, &V}));
  ASSERT_TRUE(outs.ok()) << outs.message();
  // T == 0: beta counts as 1, so V_new = 0.9 * V + G and X_new = X - 0.5 * V_new.
  EXPECT_FLOAT_EQ(outs->at(1).data<float>()[0], 2.9f);
  EXPECT_FLOAT_EQ(outs->at(0).data<float>()[1], -1 - 0.5f * 4.9f);
}

}  // namespace
}  // namespace kiln
