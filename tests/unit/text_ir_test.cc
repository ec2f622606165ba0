// Textual IR: print/parse round trips, hand-written syntax, and error handling.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>

#include "ir_sample_models.h"
#include "kiln/ir/text.h"
#include "kiln/ir/verifier.h"

namespace kiln {
namespace {

// Parses `text`, failing the test with the parser's message if it does not parse.
Model parseOk(const std::string& text) {
  auto m = parseModel(text, "test.kir");
  EXPECT_TRUE(m.ok()) << m.message() << "\n" << text;
  return m.ok() ? std::move(m).value() : Model();
}

std::string parseError(const std::string& text) {
  auto m = parseModel(text, "bad.kir");
  EXPECT_FALSE(m.ok()) << text;
  if (m.ok()) return "";
  EXPECT_EQ(m.message().find('\n'), std::string::npos) << m.message();
  EXPECT_EQ(m.message().rfind("bad.kir:", 0), 0u) << m.message();
  return m.message();
}

TEST(TextIr, RoundTripsEveryFeatureByteIdentically) {
  Model m = testing::kitchenSinkModel();
  ASSERT_TRUE(verifyGraph(*m.graph).ok()) << verifyGraph(*m.graph).message();
  std::string text = printModel(m);
  Model back = parseOk(text);
  EXPECT_EQ(printModel(back), text);
  EXPECT_EQ(back.meta, m.meta);
  EXPECT_TRUE(verifyGraph(*back.graph).ok()) << verifyGraph(*back.graph).message();
  // Tensors come back bit for bit, including NaN payloads and padding nibbles (hex path).
  ASSERT_EQ(back.graph->initializers().size(), m.graph->initializers().size());
  for (size_t i = 0; i < m.graph->initializers().size(); ++i) {
    const Value* a = m.graph->initializers()[i];
    const Value* b = back.graph->initializers()[i];
    EXPECT_EQ(a->name(), b->name());
    EXPECT_EQ(a->type(), b->type()) << a->name();
    EXPECT_TRUE(a->initializer()->sameContent(*b->initializer())) << a->name();
  }
  // Subgraphs are rebuilt with their parents and outer-scope reads bound to outer values.
  const Node* iff = nullptr;
  for (const auto& n : back.graph->nodes())
    if (n->opType() == "If") iff = n.get();
  ASSERT_NE(iff, nullptr);
  const Graph* thenG = iff->attr("then_branch")->g().get();
  EXPECT_EQ(thenG->parent(), back.graph.get());
  const Graph* innerThen = thenG->nodes().front()->attr("then_branch")->g().get();
  EXPECT_EQ(innerThen->nodes().front()->input(0), back.graph->inputs()[0]);
}

TEST(TextIr, ShowsInferredTypesAnnotationsAndDocs) {
  std::string text = printModel(testing::kitchenSinkModel());
  EXPECT_NE(text.find("%y: f32[N,3,?,\"batch size\"] #{quant = {scales = [0.5, nan(0x400002)], "
                      "zero_points = [0, -3], axis = 1, storage = u8}} doc \"conv out\" = "
                      "Conv(%x, %w_f32, none) @conv1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("#{fusion_group = 4, device = \"cpu:1\"} doc \"a convolution\""),
            std::string::npos);
  EXPECT_NE(
      text.find("const %w_f32 = f32[2,4] [nan, nan(0x400001), -nan(0x200005), -0.0, inf, -inf, "
                "1e-45, 0.1]"),
      std::string::npos);
  EXPECT_NE(text.find("e_ints = [] : ints"), std::string::npos);
  EXPECT_NE(text.find("%vals: f32[*], %idx: i64[0,K] = com.microsoft::TopK(%y, none, %w_i64)"),
            std::string::npos);
  EXPECT_NE(text.find("return %z, %loop_out, %scan_out, %x, %w_big, %\"ranked?\""),
            std::string::npos);
  EXPECT_NE(text.find("const %w_big = f32[300] hex\"0000e0c0"), std::string::npos);
}

TEST(TextIr, RoundTripsHostileNames) {
  Model m = testing::hostileNamesModel();
  std::string text = printModel(m);
  Model back = parseOk(text);
  EXPECT_EQ(printModel(back), text);
  EXPECT_EQ(back.graph->name(), m.graph->name());
  std::vector<std::string> names = testing::hostileNames();
  size_t i = 0;
  for (const auto& n : back.graph->nodes()) {
    if (i == names.size()) break;
    EXPECT_EQ(n->opType(), names[i]);
    EXPECT_EQ(n->output(0)->name(), names[i]);
    EXPECT_EQ(n->output(0)->annotations().layout, names[i]);
    ++i;
  }
  // Newlines inside names are escaped, so each statement stays on one line.
  EXPECT_EQ(text.find("new\nline"), std::string::npos);
  EXPECT_NE(text.find("%\"new\\nline\""), std::string::npos);
}

TEST(TextIr, ParsesHandWrittenIr) {
  Model m = parseOk(R"(
    // A comment.
    model {
      producer_name = "hand"
      opset "" = 17
    }
    graph @g(%x: f32[N,4], %s: f16[]) {
      const %perm = i64[2] [1, 0]
      const %half = f16[2] [0.1, -2]
      const %flags = bool[3] [true, false, 1]
      const %nib = i4[3] [-8, 7, -1]
      const %names = string[2] ["a", "b\x00"]
      %t = Transpose(%x, %later) @tr {perm = [1, 0], alpha = 1 : float, betas = [1, 2.5],
                                     mode = "x", names = [] : strings, value = f32[] [3]}
      %later = Identity(%x)
      return %t, %s
    }
  )");
  Graph& g = *m.graph;
  EXPECT_EQ(m.meta.producerName, "hand");
  ASSERT_EQ(g.numNodes(), 2u);
  const Node& tr = *g.nodes().front();
  EXPECT_EQ(tr.name(), "tr");
  EXPECT_EQ(tr.input(1), g.nodes().back()->output(0));  // a use before its definition
  EXPECT_EQ(tr.attrInts("perm"), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(tr.attr("alpha")->kind(), AttrKind::Float);
  EXPECT_EQ(tr.attrFloats("betas"), (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(tr.attr("names")->kind(), AttrKind::Strings);
  EXPECT_EQ(tr.attr("value")->t().doubleAt(0), 3.0);
  const Tensor& half = *g.findValue("half")->initializer();
  EXPECT_EQ(half.data<uint16_t>()[0], 0x2e66);  // nearest half to 0.1
  EXPECT_EQ(half.data<uint16_t>()[1], 0xc000);
  EXPECT_EQ(g.findValue("nib")->initializer()->bytes()[0], 0x78);
  EXPECT_EQ(g.findValue("nib")->initializer()->bytes()[1], 0x0f);
  EXPECT_EQ(g.findValue("names")->initializer()->strings()[1], std::string("b\0", 2));
  EXPECT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[1], g.inputs()[1]);
  EXPECT_EQ(g.findValue("flags")->initializer()->bytes()[2], 1);
}

TEST(TextIr, KeepsAnInitializerTypeThatDiffersFromItsData) {
  // Not valid for the verifier, but the printer must not hide what a pass did.
  Model m;
  Value* w =
      m.graph->addInitializer("w", Tensor::fromVector<int64_t>(DType::I64, {2}, {1, 2})).value();
  w->setType({DType::I64, Shape({Dim::named("K")})});
  std::string text = printModel(m);
  EXPECT_NE(text.find("const %w = i64[2] [1, 2] : i64[K]\n"), std::string::npos) << text;
  Model back = parseOk(text);
  EXPECT_EQ(back.graph->initializers()[0]->type(), w->type());
  EXPECT_EQ(printModel(back), text);
}

TEST(TextIr, PrintsSubgraphAlone) {
  Model m = testing::kitchenSinkModel();
  const Node* loop = nullptr;
  for (const auto& n : m.graph->nodes())
    if (n->opType() == "Loop") loop = n.get();
  ASSERT_NE(loop, nullptr);
  std::string text = printGraph(*loop->attr("body")->g());
  EXPECT_EQ(text.rfind("graph @body(%iter: i64[], %cond_in: bool[], %carried: f32[", 0), 0u)
      << text;
  EXPECT_NE(text.find("Add(%carried, %x) @body_add"), std::string::npos);
}

TEST(TextIr, ElidesLargeDataAndRefusesToParseIt) {
  PrintOptions opts;
  opts.elideDataAbove = 64;
  std::string text = printModel(testing::kitchenSinkModel(), opts);
  size_t at = text.find("const %w_big = f32[300] <elided 1200 bytes sha256:");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NE(text.find("const %w_i8 = i8[3] [-128, 0, 127]"), std::string::npos);
  std::string msg = parseError(text);
  EXPECT_NE(msg.find("elided"), std::string::npos) << msg;
  EXPECT_NE(msg.find("elideDataAbove"), std::string::npos) << msg;
}

TEST(TextIr, ListLimitSwitchesToHex) {
  PrintOptions opts;
  opts.maxListElements = 0;
  Model m = testing::kitchenSinkModel();
  std::string text = printModel(m, opts);
  EXPECT_NE(text.find("const %w_i8 = i8[3] hex\"80007f\""), std::string::npos) << text;
  Model back = parseOk(text);
  EXPECT_EQ(printModel(back), printModel(m));
}

TEST(TextIr, ReportsErrorsWithLineAndColumn) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"graph @g() {\n  %y = Relu(%x)\n  return %y\n}",
       "bad.kir:2:13: value %\"x\" is not defined"},
      {"graph @g() {\n  return %nope\n}", "bad.kir:2:10: graph output %\"nope\" is not defined"},
      {"graph @g(%x: f33[2]) {}", "bad.kir:1:14: expected a type such as f32[1,3,?,N], got 'f33'"},
      {"graph @g(%x: f32[2], %x: f32[2]) {}", "bad.kir:1:22: graph 'g': input name 'x'"},
      {"graph @g() { const %w = f32[2] [1.0] }", "needs 2 values, got 1"},
      {"graph @g() { const %w = f32[2] [1.0, 2, 3] }", "one too many"},
      {"graph @g() { const %w = f32[1] [1e39] }", "out of range for f32"},
      {"graph @g() { const %w = i8[1] [128] }", "128 is out of range for i8"},
      {"graph @g() { const %w = u4[1] [-1] }", "not a u4 integer"},
      {"graph @g() { const %w = f32[2] hex\"0000\" }",
       "needs 8 bytes of data, the hex string has 2"},
      {"graph @g() { const %w = f32[1] hex\"zz000000\" }", "pairs of hex digits"},
      {"graph @g() { const %w = f32[N] [1.0] }", "expected a dimension size >= 0"},
      {"graph @g() { const %w = f32[4611686018427387904,4] [] }", "more elements than fit"},
      {"graph @g() { %a, %a = Split(%x) }", "value %\"a\" is defined twice"},
      {"graph @g(%x) { %x = Relu(%x) }", "output name 'x' is already defined"},
      {"graph @g() { %a = Op() {k = 1, k = 2} }", "attribute \"k\" is given twice"},
      {"graph @g() { %a = Op() {k = []} }", "an empty list needs its kind"},
      {"graph @g() { %a = Op() {k = 1.5 : int} }", "a float cannot have kind int"},
      {"graph @g() { %a = Op() {k = \"s\" : ints} }",
       "the value is string but its kind suffix says ints"},
      {"graph @g() { %a = Op() #{color = 1} }", "unknown annotation 'color'"},
      {"graph @g() { %a = Op() {k = f32[1] [nan(0x0)]} }", "NaN payload"},
      {"graph @g() { %a = Op() {s = \"unterminated}\n}", "bad.kir:1:29: unterminated string"},
      {"graph @g() { %a = Op() {s = \"\\q\"} }", "unknown escape"},
      {"graph @g() { %a = Op(%) }", "'%' must be followed by a name"},
      {"graph @g() { return %a } extra", "expected end of input after the main graph, got 'extra'"},
      {"graph @g() { return %a %b }", "expected '}' after the return statement"},
      {"model { ir_version = 1 ir_version = 2 } graph @g() {}", "given twice"},
      {"model { colour = 1 } graph @g() {}", "unknown model field 'colour'"},
      {"", "bad.kir:1:1: expected 'graph'"},
      {"graph @g() { \x01 }", "unexpected byte 0x01"},
      {"graph @g() {", "expected a statement (const, a node, return) or '}', got end of input"},
      {"graph @g(%\"a\\nb\", %\"a\\nb\") {}", "input name 'a\\nb' is already defined"},
  };
  for (const Case& c : cases) {
    std::string msg = parseError(c.text);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "got: " << msg << "\nwant: " << c.expect;
  }
}

TEST(TextIr, LimitsSubgraphNesting) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "graph @g() { %o" + std::to_string(i) + " = If() {b = ";
  std::string msg = parseError(text);
  EXPECT_NE(msg.find("nested more than 64 deep"), std::string::npos) << msg;
  // 60 levels are fine.
  std::string ok;
  for (int i = 0; i < 60; ++i) ok += "graph @g() { %o" + std::to_string(i) + " = If() {b = ";
  ok += "graph @leaf() {}";
  for (int i = 0; i < 60; ++i) ok += "} }";
  Model m = parseOk(ok);
  EXPECT_EQ(parseOk(printModel(m)).graph->numNodes(), 1u);
}

TEST(TextIr, SurvivesTruncationAndCorruption) {
  std::string text = printModel(testing::kitchenSinkModel(40));
  // Every 3rd prefix: must fail or succeed cleanly, never crash.
  for (size_t n = 0; n < text.size(); n += 3) (void)parseModel(text.substr(0, n), "cut");
  std::mt19937 rng(1234);
  const char noise[] = "{}[]()%@\",=:#?*<\\\n 0-9.ex";
  for (int round = 0; round < 1500; ++round) {
    std::string t = text;
    for (int k = 0; k < 3; ++k) {
      size_t pos = rng() % t.size();
      if (rng() % 2)
        t[pos] = noise[rng() % (sizeof noise - 1)];
      else
        t[pos] = char(rng());
    }
    auto m = parseModel(t, "fuzz");
    if (m.ok())
      (void)printModel(*m);
    else
      EXPECT_EQ(m.message().find('\n'), std::string::npos);
  }
}

// A chain of `nodes` Relus as text.
std::string reluChain(int nodes) {
  std::string text = "graph @big(%v0: f32[1]) {\n";
  for (int i = 1; i <= nodes; ++i)
    text += "  %v" + std::to_string(i) + ": f32[1] = Relu(%v" + std::to_string(i - 1) + ") @n" +
            std::to_string(i) + "\n";
  return text + "  return %v" + std::to_string(nodes) + "\n}\n";
}

// Seconds to parse and print `text` back (checked to round-trip).
double parseAndPrintSeconds(const std::string& text, size_t nodes) {
  auto start = std::chrono::steady_clock::now();
  Model m = parseOk(text);
  std::string again = printGraph(*m.graph);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(m.graph->numNodes(), nodes);
  EXPECT_EQ(again, text);
  return secs;
}

// Linear, not quadratic: 4x the nodes may take about 4x the time, far from the 16x a
// quadratic parser would (compared with itself, so a slow or sanitized build does not matter;
// the 0.5 s absorbs timer noise on the small run).
TEST(TextIr, ParsesLargeGraphsInLinearTime) {
  constexpr int kNodes = 100000;
  const std::string small = reluChain(kNodes / 4), large = reluChain(kNodes);
  const double tSmall = parseAndPrintSeconds(small, size_t(kNodes / 4));
  const double tLarge = parseAndPrintSeconds(large, size_t(kNodes));
  EXPECT_LT(tLarge, 8.0 * tSmall + 0.5) << "25k nodes: " << tSmall << " s, 100k: " << tLarge;
}

}  // namespace
}  // namespace kiln
