// ONNX import: graphs, metadata, tensors, external data, and rejection of bad models.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

#include "kiln/ir/verifier.h"
#include "kiln/support/file.h"
#include "kiln/support/sha256.h"
#include "onnx_test_models.h"
#include "test_types.h"

namespace kiln {
namespace {

using namespace onnx_test;
namespace fs = std::filesystem;

// An Add model: x [N,3,?] + w (initializer) → y.
onnx::ModelProto addModel() {
  onnx::ModelProto m = makeModel(13);
  m.set_producer_name("pytorch");
  m.set_producer_version("1.13");
  m.set_doc_string("model doc");
  m.set_model_version(7);
  auto* p = m.add_metadata_props();
  p->set_key("author");
  p->set_value("kiln");
  auto* g = m.mutable_graph();
  g->set_doc_string("graph doc");
  auto* x = g->add_input();
  x->set_name("x");
  x->set_doc_string("the input");
  setType(x, onnx::TensorProto::FLOAT, {-1, 3, -1}, {"N"});
  *g->add_initializer() = floatTensor("w", {3, 1}, {1, 2, 3});
  addNode(g, "Add", {"x", "w"}, {"y"}, "add")->set_doc_string("adds");
  setType(addOutput(g, "y"), onnx::TensorProto::FLOAT, {-1, 3, -1}, {"N"});
  return m;
}

TEST(OnnxImport, GraphAndMetadata) {
  onnx::ModelProto m = addModel();
  std::string bytes = serialize(m);
  OnnxImportOptions options;
  options.registry = &testRegistry();
  auto model = importOnnxBytes(bytes, "model.onnx", "", options);
  ASSERT_TRUE(model.ok()) << model.message();
  const ModelMetadata& meta = model->meta;
  EXPECT_EQ(meta.producerName, "pytorch");
  EXPECT_EQ(meta.producerVersion, "1.13");
  EXPECT_EQ(meta.docString, "model doc");
  EXPECT_EQ(meta.modelVersion, 7);
  EXPECT_EQ(meta.irVersion, 8);
  EXPECT_EQ(meta.opsets, (std::vector<OpsetImport>{{"", 13}}));
  EXPECT_EQ(meta.props, (std::vector<std::pair<std::string, std::string>>{{"author", "kiln"}}));
  EXPECT_EQ(meta.sourceSha256, sha256Hex(bytes));
  EXPECT_EQ(meta.sourceFormat, "onnx");
  EXPECT_EQ(meta.kilnVersion, KILN_VERSION);

  const Graph& g = *model->graph;
  EXPECT_EQ(g.name(), "g");
  EXPECT_EQ(g.docString(), "graph doc");
  ASSERT_EQ(g.inputs().size(), 1u);
  const Value* x = g.inputs()[0];
  EXPECT_EQ(x->docString(), "the input");
  EXPECT_EQ(x->type(),
            (TensorType{DType::F32, Shape({Dim::named("N"), Dim::known(3), Dim::unknown()})}));
  ASSERT_EQ(g.initializers().size(), 1u);
  const Tensor* w = g.initializers()[0]->initializer();
  EXPECT_EQ(w->dims(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(w->data<float>()[2], 3.0f);
  ASSERT_EQ(g.numNodes(), 1u);
  const Node& add = *g.nodes().front();
  EXPECT_EQ(add.opType(), "Add");
  EXPECT_EQ(add.domain(), "");
  EXPECT_EQ(add.docString(), "adds");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->type(), x->type());  // declared output type applied
  EXPECT_TRUE(verifyGraph(g).ok());
}

TEST(OnnxImport, InitializersListedAsInputsStayConstants) {
  onnx::ModelProto m = addModel();
  m.set_ir_version(3);
  auto* w = m.mutable_graph()->add_input();
  w->set_name("w");
  setType(w, onnx::TensorProto::FLOAT, {3, 1});
  auto model = importModel(m);
  ASSERT_TRUE(model.ok()) << model.message();
  ASSERT_EQ(model->graph->inputs().size(), 1u);
  EXPECT_EQ(model->graph->inputs()[0]->name(), "x");
  EXPECT_TRUE(model->graph->findValue("w")->isInitializer());
}

TEST(OnnxImport, AttributesOfEveryKind) {
  onnx::ModelProto m = makeModel(13);
  auto* g = m.mutable_graph();
  addInput(g, "x");
  auto* n = addNode(g, "Relu", {"x"}, {"y"}, "r");
  attrInt(n, "i", -3);
  attrFloat(n, "f", 1.5f);
  attrString(n, "s", std::string("a\0b", 3));
  attrInts(n, "is", {1, 2});
  auto* fs = addAttr(n, "fs", onnx::AttributeProto::FLOATS);
  fs->add_floats(0.5f);
  auto* ss = addAttr(n, "ss", onnx::AttributeProto::STRINGS);
  ss->add_strings("p");
  ss->add_strings("q");
  *addAttr(n, "t", onnx::AttributeProto::TENSOR)->mutable_t() = floatTensor("", {2}, {4, 5});
  auto* ts = addAttr(n, "ts", onnx::AttributeProto::TENSORS);
  *ts->add_tensors() = floatTensor("", {1}, {6});
  auto* untyped = n->add_attribute();  // old models omit the type
  untyped->set_name("old");
  untyped->set_i(9);
  addOutput(g, "y");
  auto model = importModel(m);
  ASSERT_TRUE(model.ok()) << model.message();
  const Node& r = *model->graph->nodes().front();
  EXPECT_EQ(r.attrInt("i", 0), -3);
  EXPECT_EQ(r.attrFloat("f", 0), 1.5f);
  EXPECT_EQ(r.attrString("s", ""), std::string("a\0b", 3));
  EXPECT_EQ(r.attrInts("is"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.attrFloats("fs"), (std::vector<float>{0.5f}));
  EXPECT_EQ(r.attr("ss")->strings(), (std::vector<std::string>{"p", "q"}));
  EXPECT_EQ(r.attr("t")->t().data<float>()[1], 5.0f);
  EXPECT_EQ(r.attr("ts")->tensors().at(0).data<float>()[0], 6.0f);
  EXPECT_EQ(r.attrInt("old", 0), 9);
}

TEST(OnnxImport, UnnamedNodesOrderAndOmittedInputs) {
  onnx::ModelProto m = makeModel(13);
  auto* g = m.mutable_graph();
  addInput(g, "x");
  addNode(g, "Relu", {"a"}, {"b"});          // reads a value defined by the next node
  addNode(g, "Clip", {"x", "", ""}, {"a"});  // omitted optional inputs
  addOutput(g, "b");
  auto model = importModel(m);
  ASSERT_TRUE(model.ok()) << model.message();
  const Graph& gr = *model->graph;
  ASSERT_EQ(gr.numNodes(), 2u);
  EXPECT_EQ(gr.nodes().front()->name(), "Clip_1");  // sorted, with generated names
  EXPECT_EQ(gr.nodes().back()->name(), "Relu_0");
  EXPECT_EQ(gr.nodes().front()->numInputs(), 1u);  // trailing omitted inputs dropped
  EXPECT_TRUE(verifyGraph(gr).ok());
}

// ---- Tensor data ----

onnx::TensorProto typedTensor(int32_t type, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

Expected<Tensor> importInitializer(const onnx::TensorProto& t) {
  onnx::ModelProto m = makeModel(13);
  *m.mutable_graph()->add_initializer() = t;
  addOutput(m.mutable_graph(), t.name());
  auto model = importModel(m);
  if (!model) return model.error();
  return *model->graph->findValue(t.name())->initializer();
}

TEST(OnnxTensor, TypedDataFields) {
  auto t = typedTensor(onnx::TensorProto::FLOAT, {2});
  t.add_float_data(1.5f);
  t.add_float_data(-2);
  auto f = importInitializer(t);
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->data<float>()[1], -2.0f);

  struct Case {
    int32_t type;
    DType dtype;
    std::vector<int32_t> stored;
    std::vector<double> expect;
  };
  std::vector<Case> cases = {
      {onnx::TensorProto::INT8, DType::I8, {-3, 4}, {-3, 4}},
      {onnx::TensorProto::UINT8, DType::U8, {250, 1}, {250, 1}},
      {onnx::TensorProto::INT16, DType::I16, {-300, 7}, {-300, 7}},
      {onnx::TensorProto::UINT16, DType::U16, {65535, 0}, {65535, 0}},
      {onnx::TensorProto::INT32, DType::I32, {-70000, 3}, {-70000, 3}},
      {onnx::TensorProto::BOOL, DType::Bool, {1, 0}, {1, 0}},
      {onnx::TensorProto::FLOAT16, DType::F16, {0x3C00, 0xC000}, {1.0, -2.0}},  // bit patterns
      {onnx::TensorProto::BFLOAT16, DType::BF16, {0x3F80, 0x4040}, {1.0, 3.0}},
  };
  for (const Case& c : cases) {
    auto p = typedTensor(c.type, {2});
    for (int32_t v : c.stored) p.add_int32_data(v);
    auto r = importInitializer(p);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->dtype(), c.dtype);
    for (int64_t i = 0; i < 2; ++i) EXPECT_EQ(r->doubleAt(i), c.expect[size_t(i)]) << int(c.type);
  }
  // int4/uint4: two values per int32_data entry, low nibble first; 3 values need 2 entries.
  for (int32_t type : {22, 21}) {
    auto p = typedTensor(type, {3});
    p.add_int32_data(0xF2);  // 2, then 15 (uint4) or -1 (int4)
    p.add_int32_data(0x07);
    auto r = importInitializer(p);
    ASSERT_TRUE(r.ok()) << r.message();
    EXPECT_EQ(r->byteSize(), 2u);
    EXPECT_EQ(r->doubleAt(0), 2);
    EXPECT_EQ(r->doubleAt(1), type == 22 ? -1 : 15);
    EXPECT_EQ(r->doubleAt(2), 7);
  }
  auto i64 = typedTensor(onnx::TensorProto::INT64, {1});
  i64.add_int64_data(int64_t(1) << 40);
  EXPECT_EQ(importInitializer(i64)->data<int64_t>()[0], int64_t(1) << 40);
  auto f64 = typedTensor(onnx::TensorProto::DOUBLE, {1});
  f64.add_double_data(0.25);
  EXPECT_EQ(importInitializer(f64)->data<double>()[0], 0.25);
  auto u64 = typedTensor(onnx::TensorProto::UINT64, {1});
  u64.add_uint64_data(~uint64_t(0));
  EXPECT_EQ(importInitializer(u64)->data<uint64_t>()[0], ~uint64_t(0));
  auto u32 = typedTensor(onnx::TensorProto::UINT32, {1});
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(importInitializer(u32)->data<uint32_t>()[0], 4000000000u);
  auto str = typedTensor(onnx::TensorProto::STRING, {2});
  str.add_string_data("hello");
  str.add_string_data(std::string("\xff\0", 2));
  auto s = importInitializer(str);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(s->strings(), (std::vector<std::string>{"hello", std::string("\xff\0", 2)}));
  auto scalar = typedTensor(onnx::TensorProto::INT64, {});
  scalar.add_int64_data(5);
  EXPECT_EQ(importInitializer(scalar)->rank(), 0);
}

TEST(OnnxTensor, RejectsInconsistentData) {
  auto expectError = [](const onnx::TensorProto& t, const std::string& part) {
    auto r = importInitializer(t);
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_TRUE(contains(r.message(), part)) << r.message();
    EXPECT_TRUE(contains(r.message(), "initializer 't'")) << r.message();
    EXPECT_EQ(r.message().find('\n'), std::string::npos);
  };
  auto shortRaw = floatTensor("t", {2, 3}, {1, 2, 3});
  expectError(shortRaw, "raw_data is 12 bytes but its type f32[2,3] needs 24 bytes");
  auto longRaw = floatTensor("t", {2}, {1, 2, 3});
  expectError(longRaw, "raw_data is 12 bytes");
  auto negative = floatTensor("t", {-5}, {});
  expectError(negative, "negative dimension (-5)");
  auto overflow = floatTensor("t", {int64_t(1) << 32, int64_t(1) << 32}, {});
  expectError(overflow, "overflows 64 bits");
  auto huge = typedTensor(onnx::TensorProto::FLOAT, {int64_t(1) << 40});  // tiny data
  huge.add_float_data(1);
  expectError(huge, "over the limit");
  auto few = typedTensor(onnx::TensorProto::INT64, {1000});
  few.add_int64_data(1);
  expectError(few, "has 1 values in int64_data but its type i64[1000] needs 1000");
  auto complex = typedTensor(onnx::TensorProto::COMPLEX64, {1});
  complex.add_float_data(1);
  complex.add_float_data(2);
  expectError(complex, "data type COMPLEX64, which kiln does not support");
  auto f8 = typedTensor(19, {1});
  expectError(f8, "FLOAT8E5M2");
  auto segment = floatTensor("t", {1}, {1});
  segment.mutable_segment()->set_begin(0);
  expectError(segment, "segments");
  auto rawString = typedTensor(onnx::TensorProto::STRING, {1});
  rawString.set_raw_data("x");
  expectError(rawString, "string tensors cannot use raw_data");
}

// ---- External data ----

class OnnxExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kiln_onnx_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ / "model";
    fs::create_directories(dir_ / "sub");
    std::vector<float> w = {0, 1, 2, 3, 4, 5};  // tensors at byte 0 and at byte 8
    ASSERT_TRUE(writeFile((dir_ / "sub" / "weights.bin").string(), w.data(), 24).ok());
    ASSERT_TRUE(writeFile((root_ / "outside.bin").string(), w.data(), 24).ok());
  }
  void TearDown() override { fs::remove_all(root_); }

  // Writes a model whose initializer 'w' (f32[2]) lives in external data, then imports it.
  Expected<Model> importWith(const std::string& location, const std::string& offset,
                             const std::string& length = "") {
    onnx::ModelProto m = makeModel(13);
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const char* k, const std::string& v) {
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    entry("location", location);
    if (!offset.empty()) entry("offset", offset);
    if (!length.empty()) entry("length", length);
    addOutput(m.mutable_graph(), "w");
    std::string path = (dir_ / "model.onnx").string();
    std::string bytes = serialize(m);
    EXPECT_TRUE(writeFile(path, bytes.data(), bytes.size()).ok());
    OnnxImportOptions options;
    options.registry = &testRegistry();
    return importOnnxFile(path, options);
  }

  void expectRejected(const Expected<Model>& r, const std::string& part) {
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_TRUE(contains(r.message(), part)) << r.message();
    EXPECT_TRUE(contains(r.message(), "initializer 'w'")) << r.message();
  }

  fs::path root_, dir_;
};

TEST_F(OnnxExternalData, MapsDataInsideTheFolder) {
  auto model = importWith("sub/weights.bin", "8", "8");
  ASSERT_TRUE(model.ok()) << model.message();
  const Tensor* w = model->graph->findValue("w")->initializer();
  EXPECT_TRUE(w->isMapped());
  EXPECT_EQ(w->data<float>()[0], 2.0f);
  EXPECT_EQ(w->data<float>()[1], 3.0f);
  // Without a length the tensor runs to the end of the file, which must then match its size.
  auto toEnd = importWith("sub/weights.bin", "16");
  ASSERT_TRUE(toEnd.ok()) << toEnd.message();
  EXPECT_EQ(toEnd->graph->findValue("w")->initializer()->data<float>()[1], 5.0f);
}

TEST_F(OnnxExternalData, RejectsPathsOutsideTheFolder) {
  expectRejected(importWith("../../etc/passwd", ""), "contains a '..' component");
  expectRejected(importWith("sub/../../outside.bin", ""), "'..'");
  expectRejected(importWith((root_ / "outside.bin").string(), ""), "is an absolute path");
  fs::create_symlink(root_ / "outside.bin", dir_ / "link.bin");
  expectRejected(importWith("link.bin", "0", "8"), "resolves outside the model's folder");
  fs::create_directory_symlink(root_, dir_ / "up");
  expectRejected(importWith("up/outside.bin", "0", "8"), "resolves outside the model's folder");
  expectRejected(importWith("missing.bin", ""), "cannot open external data file 'missing.bin'");
}

TEST_F(OnnxExternalData, RejectsRangesPastTheEnd) {
  expectRejected(importWith("sub/weights.bin", "100"), "offset 100 is past the end");
  expectRejected(importWith("sub/weights.bin", "20", "8"), "runs past the end");
  expectRejected(importWith("sub/weights.bin", "0", "12"), "external data is 12 bytes");
  expectRejected(importWith("sub/weights.bin", "-4", "8"), "is not a non-negative integer");
  expectRejected(importWith("sub/weights.bin", "99999999999999999999999", "8"),
                 "is not a non-negative integer");
}

TEST(OnnxExternalDataInMemory, IsRefusedWithoutAFolder) {
  onnx::ModelProto m = makeModel(13);
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  auto r = importModel(m, "");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "read from memory")) << r.message();
}

// ---- Malformed files ----

TEST(OnnxParse, RejectsTruncatedAndRandomBytes) {
  std::string bytes = serialize(addModel());
  OnnxImportOptions options;
  options.registry = &testRegistry();
  for (size_t cut : {size_t(1), bytes.size() / 2, bytes.size() - 1}) {
    auto r = importOnnxBytes(bytes.substr(0, cut), "model.onnx", "", options);
    EXPECT_FALSE(r.ok());
    if (!r.ok()) {
      EXPECT_TRUE(contains(r.message(), "model.onnx: ")) << r.message();
    }
  }
  std::mt19937 rng(42);
  for (int i = 0; i < 300; ++i) {  // random bytes, and valid models with bytes flipped
    std::string junk(rng() % 200, '\0');
    for (char& c : junk) c = char(rng());
    (void)importOnnxBytes(junk, "junk.onnx", "", options);
    std::string mutated = bytes;
    for (int k = 0; k < 3; ++k) mutated[rng() % mutated.size()] = char(rng());
    auto r = importOnnxBytes(mutated, "m.onnx", "", options);
    if (!r.ok()) {
      EXPECT_EQ(r.message().find('\n'), std::string::npos) << r.message();
    }
  }
  auto empty = importOnnxBytes("", "e.onnx", "", options);
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(contains(empty.message(), "has no graph")) << empty.message();
  options.maxModelBytes = 10;
  auto big = importOnnxBytes(bytes, "big.onnx", "", options);
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(contains(big.message(), "over the limit")) << big.message();
}

TEST(OnnxGraph, RejectsCyclesUndefinedInputsAndDuplicateOutputs) {
  onnx::ModelProto cyc = makeModel(13);
  addNode(cyc.mutable_graph(), "Relu", {"b"}, {"a"}, "first");
  addNode(cyc.mutable_graph(), "Relu", {"a"}, {"b"}, "second");
  addOutput(cyc.mutable_graph(), "b");
  auto c = importModel(cyc);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(contains(c.message(), "cycle")) << c.message();

  onnx::ModelProto undef = makeModel(13);
  addInput(undef.mutable_graph(), "x");
  addNode(undef.mutable_graph(), "Add", {"x", "nope"}, {"y"}, "add");
  auto u = importModel(undef);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.message(),
            "model.onnx: node 'add' (Add, ai.onnx, opset 13): input 1 'nope' is not defined by "
            "any graph input, initializer or node output \u2014 fix the model (is an initializer "
            "or a graph input missing?)");

  onnx::ModelProto dup = makeModel(13);
  addInput(dup.mutable_graph(), "x");
  addNode(dup.mutable_graph(), "Relu", {"x"}, {"y"}, "r1");
  addNode(dup.mutable_graph(), "Neg", {"x"}, {"y"}, "r2");
  auto d = importModel(dup);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(contains(d.message(),
                       "node 'r2' (Neg, ai.onnx, opset 13): output 'y' is already "
                       "defined"))
      << d.message();

  onnx::ModelProto self = makeModel(13);
  addInput(self.mutable_graph(), "x");
  addNode(self.mutable_graph(), "Add", {"x", "y"}, {"y"}, "loop");
  EXPECT_FALSE(importModel(self).ok());
}

TEST(OnnxDiagnostics, UnsupportedOpsAndDomainsUseTheNodeFormat) {
  onnx::ModelProto m = makeModel(13);
  addInput(m.mutable_graph(), "x");
  addNode(m.mutable_graph(), "FooBar", {"x"}, {"y"}, "n1");
  auto r = importModel(m);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "model.onnx: node 'n1' (FooBar, ai.onnx, opset 13): op 'FooBar' is unsupported by "
            "kiln \u2014 rewrite the model without it, or add the op (docs/adding-an-op.md)");

  onnx::ModelProto ms = makeModel(13);
  auto* o = ms.add_opset_import();
  o->set_domain("com.microsoft");
  o->set_version(1);
  addInput(ms.mutable_graph(), "x");
  addNode(ms.mutable_graph(), "FusedConv", {"x"}, {"y"}, "fc")->set_domain("com.microsoft");
  auto d = importModel(ms);
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(contains(d.message(),
                       "model.onnx: node 'fc' (FusedConv, com.microsoft, opset 1): "
                       "ops of domain 'com.microsoft' are unsupported \u2014 "))
      << d.message();

  // Hostile names are escaped so the message stays one printable line.
  onnx::ModelProto h = makeModel(13);
  addInput(h.mutable_graph(), "x");
  addNode(h.mutable_graph(), "Nope", {"x"}, {"y"}, std::string("a'b*/\nc\xff\x01", 9));
  auto e = importModel(h);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(contains(e.message(), "node 'a\\'b*/\\nc\\xff\\x01' (Nope")) << e.message();
  EXPECT_EQ(printableName("caf\xc3\xa9 \xe2\x80\xa8"), "caf\xc3\xa9 \\u{2028}");
  EXPECT_EQ(printableName(std::string(300, 'a')).size(), 203u);
  EXPECT_EQ(formatNodeMessage({"m.onnx", "n", "Conv", "", 11}, "bad", "fix"),
            "m.onnx: node 'n' (Conv, ai.onnx, opset 11): bad \u2014 fix");
}

TEST(OnnxOpset, RejectsUnsupportedVersions) {
  for (int64_t v : {0, 22}) {
    onnx::ModelProto m = makeModel(v);
    auto r = importModel(m);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(contains(r.message(), "kiln supports opsets 1 to 21")) << r.message();
  }
  onnx::ModelProto old = makeModel(9);  // Resize first appears in opset 10
  addInput(old.mutable_graph(), "x");
  addNode(old.mutable_graph(), "Resize", {"x", "s"}, {"y"}, "rs");
  auto r = importModel(old);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "op 'Resize' does not exist in ai.onnx opset 9"))
      << r.message();
}

TEST(OnnxOpset, LegacyOpsetsOnlyWhereTheMeaningIsTheSame) {
  // Relu-1's consumed_inputs is a memory hint: dropped.
  onnx::ModelProto relu = makeModel(5);
  addInput(relu.mutable_graph(), "x");
  attrInts(addNode(relu.mutable_graph(), "Relu", {"x"}, {"y"}, "r"), "consumed_inputs", {0});
  addOutput(relu.mutable_graph(), "y");
  auto ok = importModel(relu);
  EXPECT_TRUE(ok.ok()) << ok.message();
  // Add-6 with broadcast=1 aligns operands by `axis`, which today's Add does not: refused.
  onnx::ModelProto add = makeModel(6);
  addInput(add.mutable_graph(), "x");
  attrInt(addNode(add.mutable_graph(), "Add", {"x", "x"}, {"y"}, "add"), "broadcast", 1);
  addOutput(add.mutable_graph(), "y");
  auto r = importModel(add);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "legacy broadcast=1")) << r.message();
  // Reshape-1 takes its shape as an attribute: refused with the version converter named.
  onnx::ModelProto reshape = makeModel(4);
  addInput(reshape.mutable_graph(), "x");
  addNode(reshape.mutable_graph(), "Reshape", {"x"}, {"y"}, "rs");
  addOutput(reshape.mutable_graph(), "y");
  auto rr = importModel(reshape);
  ASSERT_FALSE(rr.ok());
  EXPECT_TRUE(contains(rr.message(), "version_converter")) << rr.message();
}

TEST(OnnxTensorFile, ReadsTensorProtoFiles) {
  char tmpl[] = "/tmp/kiln_pb_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  fs::path dir = tmpl;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::string path = (dir / name).string();
    EXPECT_TRUE(writeFile(path, bytes.data(), bytes.size()).ok());
    return path;
  };
  std::string bytes;
  floatTensor("x", {2}, {7, 8}).SerializeToString(&bytes);
  auto f = readTensorProtoFile(write("f.pb", bytes));
  ASSERT_TRUE(f.ok()) << f.message();
  EXPECT_EQ(f->data<float>()[1], 8.0f);
  auto b = typedTensor(onnx::TensorProto::BOOL, {3});
  b.set_raw_data(std::string("\1\0\1", 3));
  b.SerializeToString(&bytes);
  auto bt = readTensorProtoFile(write("b.pb", bytes));
  ASSERT_TRUE(bt.ok()) << bt.message();
  EXPECT_EQ(bt->dtype(), DType::Bool);
  EXPECT_EQ(bt->doubleAt(2), 1.0);
  auto s = typedTensor(onnx::TensorProto::STRING, {1});
  s.add_string_data("hi");
  s.SerializeToString(&bytes);
  auto st = readTensorProtoFile(write("s.pb", bytes));
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(st->strings().at(0), "hi");
  EXPECT_FALSE(readTensorProtoFile(write("junk.pb", "\xff\xff\xff")).ok());
  auto neg = floatTensor("x", {-5}, {});
  neg.SerializeToString(&bytes);
  EXPECT_FALSE(readTensorProtoFile(write("neg.pb", bytes)).ok());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
