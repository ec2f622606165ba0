// Builders for the sample models in ir_sample_models.h.
#include "ir_sample_models.h"

#include <cstring>

namespace kiln::testing {
namespace {

Tensor raw(DType d, std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  return Tensor::fromBytes(d, std::move(dims), bytes.data(), bytes.size()).value();
}

template <typename T>
Tensor vec(DType d, std::vector<int64_t> dims, std::vector<T> v) {
  return Tensor::fromVector<T>(d, std::move(dims), v);
}

float bitsToFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

Value* add(Graph& g, const std::string& name, Tensor t) {
  return g.addInitializer(name, std::move(t)).value();
}

}  // namespace

std::vector<std::string> hostileNames() {
  return {"a\"b",
          "back\\slash",
          "new\nline",
          "*/",
          "/* c */",
          "//x",
          std::string("\xff\xfe\x80", 3),
          std::string("nul\0byte", 8),
          "%",
          "@x",
          "none",
          "const",
          "return",
          "doc",
          "graph",
          "1.5",
          "-1",
          "\xe9\x87\x8d\xe3\x81\xbf",
          "tab\there",
          "sp ace",
          "\xed\xa0\x80 surrogate",
          "\xc0\xaf overlong",
          "x:y",
          "{}[]()",
          "\x7f del"};
}

Model kitchenSinkModel(int64_t bigElements) {
  Model m;
  m.meta.producerName = "pytorch";
  m.meta.producerVersion = "2.1.0";
  m.meta.domain = "ai.example";
  m.meta.docString = "a model\nwith \"quotes\"";
  m.meta.irVersion = 8;
  m.meta.modelVersion = 3;
  m.meta.opsets = {{"", 17}, {"com.microsoft", 1}, {"ai.onnx.ml", 3}};
  m.meta.sourceSha256 = std::string(64, 'a');
  m.meta.sourceFormat = "onnx";
  m.meta.kilnVersion = "0.1.0";
  m.meta.props = {{"author", "me"}, {"author", "again"}, {"k\n", std::string("\xff", 1)}};
  m.meta.hints = {{"simd", "avx512"}, {"threads", "4"}};

  Graph& g = *m.graph;
  g.setDocString("the main graph");
  TensorType xType{DType::F32, Shape({Dim::named("N"), Dim::known(3), Dim::unknown(),
                                      Dim::named("batch size")})};
  Value* x = g.addInput("x", xType).value();
  x->annotations().layout = "NCHW";
  x->annotations().device = "cpu:0";
  x->setDocString("the image");
  Value* c = g.addInput("cond", {DType::Bool, Shape::scalar()}).value();
  Value* any = g.addInput("anything", {}).value();
  Value* r = g.addInput("ranked?", {DType::I64, Shape::unknownRank()}).value();

  // Every dtype, with the float values that are hard to round-trip.
  Value* f32 = add(g, "w_f32",
                   vec<uint32_t>(DType::F32, {2, 4},
                                 {0x7fc00000, 0x7fc00001, 0xffa00005, 0x80000000, 0x7f800000,
                                  0xff800000, 0x00000001, 0x3dcccccd}));
  add(g, "w_f64",
      vec<uint64_t>(DType::F64, {5},
                    {0x7ff8000000000000ull, 0x7ff0000000000001ull, 0x8000000000000000ull,
                     0x0000000000000001ull, 0x3fb999999999999aull}));
  add(g, "w_f16", vec<uint16_t>(DType::F16, {6}, {0x7e00, 0x7c01, 0xfe00, 0x8000, 0x0001, 0x2e66}));
  add(g, "w_bf16", vec<uint16_t>(DType::BF16, {5}, {0x7fc0, 0x7f81, 0x8000, 0x0001, 0x3dcd}));
  add(g, "w_i4", raw(DType::I4, {3}, {0x8f, 0x07}));  // -1, -8, 7
  add(g, "w_u4", raw(DType::U4, {2, 2}, {0x21, 0xf0}));
  add(g, "w_i4_pad", raw(DType::I4, {1}, {0x53}));  // non-zero padding nibble: prints as hex
  add(g, "w_i8", vec<int8_t>(DType::I8, {3}, {-128, 0, 127}));
  add(g, "w_u8", vec<uint8_t>(DType::U8, {2}, {0, 255}));
  add(g, "w_i16", vec<int16_t>(DType::I16, {2}, {-32768, 32767}));
  add(g, "w_u16", vec<uint16_t>(DType::U16, {1}, {65535}));
  add(g, "w_i32", vec<int32_t>(DType::I32, {2}, {INT32_MIN, INT32_MAX}));
  add(g, "w_u32", vec<uint32_t>(DType::U32, {1}, {UINT32_MAX}));
  Value* i64 = add(g, "w_i64", vec<int64_t>(DType::I64, {2}, {INT64_MIN, INT64_MAX}));
  add(g, "w_u64", vec<uint64_t>(DType::U64, {1}, {UINT64_MAX}));
  add(g, "w_bool", vec<uint8_t>(DType::Bool, {3}, {1, 0, 1}));
  add(g, "w_bool_odd", vec<uint8_t>(DType::Bool, {1}, {2}));
  add(g, "w_str", Tensor::fromStrings({2}, {"hello", std::string("\x00\xff\"\n", 4)}).value());
  add(g, "w_empty", Tensor::zeros(DType::F32, {0, 3}).value());
  add(g, "w_scalar", Tensor::scalar<float>(DType::F32, -0.0f));
  std::vector<float> big(static_cast<size_t>(bigElements));
  for (size_t i = 0; i < big.size(); ++i) big[i] = float(i) * 0.25f - 7.0f;
  Value* wBig = add(g, "w_big", vec<float>(DType::F32, {bigElements}, big));
  wBig->annotations().layout = "OI";
  wBig->setDocString("a big weight");

  // Every attribute kind, including empty lists and a NaN float.
  Node* conv = g.addNode("Conv", "", "conv1", {x, f32, nullptr}, {"y"}).value();
  conv->setAttr("i", Attribute(int64_t(-7)));
  conv->setAttr("f", Attribute(bitsToFloat(0x7fa00001)));
  conv->setAttr("f_neg_zero", Attribute(-0.0f));
  conv->setAttr("f_one", Attribute(1.0f));
  conv->setAttr("s", Attribute(std::string("same\tupper")));
  conv->setAttr("t", Attribute(vec<int64_t>(DType::I64, {3}, {1, -2, 3})));
  conv->setAttr("ints", Attribute(std::vector<int64_t>{0, 0, 1, 1}));
  conv->setAttr("floats", Attribute(std::vector<float>{0.5f, 1e-7f, 3e38f, -0.0f}));
  conv->setAttr("strings", Attribute(std::vector<std::string>{"a", "", "b\"c"}));
  conv->setAttr("tensors", Attribute(std::vector<Tensor>{vec<float>(DType::F32, {1}, {2.5f}),
                                                         Tensor::scalar<int32_t>(DType::I32, 4)}));
  conv->setAttr("e_ints", Attribute(std::vector<int64_t>{}));
  conv->setAttr("e_floats", Attribute(std::vector<float>{}));
  conv->setAttr("e_strings", Attribute(std::vector<std::string>{}));
  conv->setAttr("e_tensors", Attribute(std::vector<Tensor>{}));
  conv->setAttr("e_graphs", Attribute(std::vector<Attribute::GraphPtr>{}));
  conv->setAttr("weird key\n", Attribute(int64_t(1)));
  conv->setAttr("undef", Attribute(Tensor()));
  conv->annotations().fusionGroup = 4;
  conv->annotations().device = "cpu:1";
  conv->setDocString("a convolution");
  Value* y = conv->output(0);
  y->setType(xType);
  y->annotations().quant = QuantParams{{0.5f, bitsToFloat(0x7fc00002)}, {0, -3}, 1, DType::U8};
  y->setDocString("conv out");

  // Multiple outputs, a domain, no node name, an omitted output type.
  Node* topk = g.addNode("TopK", "com.microsoft", "", {y, nullptr, i64}, {"vals", "idx"}).value();
  topk->output(0)->setType({DType::F32, Shape::unknownRank()});
  topk->output(1)->setType({DType::I64, Shape({Dim::known(0), Dim::named("K")})});
  // A node with no outputs.
  g.addNode("Print", "", "printer", {topk->output(1)}, {}).value();

  // If whose branches read outer values; the then-branch nests an If reading `x` two up.
  Node* iff = g.addNode("If", "", "if", {c}, {"z"}).value();
  auto thenG = std::make_shared<Graph>("then", &g);
  thenG->setDocString("then branch");
  Node* inner = thenG->addNode("If", "", "inner_if", {c}, {"t_inner"}).value();
  auto innerThen = std::make_shared<Graph>("inner_then", thenG.get());
  Node* neg = innerThen->addNode("Neg", "", "neg", {x}, {"t_neg"}).value();
  innerThen->addOutput(neg->output(0));
  auto innerElse = std::make_shared<Graph>("inner_else", thenG.get());
  innerElse->addOutput(y);  // an outer value returned directly
  inner->setAttr("then_branch", Attribute(innerThen));
  inner->setAttr("else_branch", Attribute(innerElse));
  thenG->addOutput(inner->output(0));
  auto elseG = std::make_shared<Graph>("else", &g);
  Value* k = elseG->addInitializer("else_k", Tensor::scalar<float>(DType::F32, 2.0f)).value();
  Node* mul = elseG->addNode("Mul", "", "mul", {x, k}, {"e_mul"}).value();
  elseG->addOutput(mul->output(0));
  iff->setAttr("then_branch", Attribute(thenG));
  iff->setAttr("else_branch", Attribute(elseG));

  // Loop with a body that has inputs, and a Scan; plus a graphs-list attribute.
  Node* loop = g.addNode("Loop", "", "loop", {i64, c, x}, {"loop_out"}).value();
  auto body = std::make_shared<Graph>("body", &g);
  Value* iter = body->addInput("iter", {DType::I64, Shape::scalar()}).value();
  Value* cin = body->addInput("cond_in", {DType::Bool, Shape::scalar()}).value();
  Value* carried = body->addInput("carried", xType).value();
  Node* bAdd = body->addNode("Add", "", "body_add", {carried, x}, {"carried_out"}).value();
  Node* bId = body->addNode("Identity", "", "", {cin}, {"cond_out"}).value();
  (void)iter;
  body->setOutputs({bId->output(0), bAdd->output(0)});
  loop->setAttr("body", Attribute(body));
  Node* scan = g.addNode("Scan", "", "scan", {x}, {"scan_out"}).value();
  auto sbody = std::make_shared<Graph>("scan_body", &g);
  Value* sin = sbody->addInput("s_in", {}).value();
  sbody->addOutput(sin);
  scan->setAttr("body", Attribute(sbody));
  scan->setAttr("num_scan_inputs", Attribute(int64_t(1)));
  auto alt1 = std::make_shared<Graph>("alt1", &g);
  alt1->addOutput(any);
  auto alt2 = std::make_shared<Graph>("alt2", &g);
  scan->setAttr("alternatives", Attribute(std::vector<Attribute::GraphPtr>{alt1, alt2}));

  // Outputs include a graph input and an initializer directly.
  g.setOutputs({iff->output(0), loop->output(0), scan->output(0), x, wBig, r});
  return m;
}

Model hostileNamesModel() {
  Model m;
  std::vector<std::string> names = hostileNames();
  Graph& g = *m.graph;
  g.setName("graph \"main\"\n");
  m.meta.producerName = names[0];
  std::vector<Value*> inputs;
  for (size_t i = 0; i < names.size(); ++i)
    inputs.push_back(
        g.addInput("in " + names[i], {DType::F32, Shape({Dim::named(names[i])})}).value());
  Value* prev = inputs[0];
  for (size_t i = 0; i < names.size(); ++i) {
    Node* n = g.addNode(names[i], names[(i + 1) % names.size()], names[(i + 2) % names.size()],
                        {prev, inputs[i]}, {names[i]})
                  .value();
    n->setAttr(names[(i + 3) % names.size()], Attribute(names[(i + 4) % names.size()]));
    n->setDocString(names[i]);
    n->output(0)->annotations().layout = names[i];
    prev = n->output(0);
  }
  auto sub = std::make_shared<Graph>(names[6], &g);
  sub->addOutput(prev);
  Node* last = g.addNode("If", "", "", {inputs[1]}, {"if out"}).value();
  last->setAttr("then_branch", Attribute(sub));
  g.setOutputs({last->output(0), prev, inputs[2]});
  return m;
}

}  // namespace kiln::testing
