// .kiln files: round trips (embedded and safetensors weights), mapping, and corruption handling.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ir_sample_models.h"
#include "kiln/ir/kiln_format.h"
#include "kiln/ir/text.h"
#include "kiln/ir/verifier.h"
#include "kiln/support/file.h"
#include "kiln/support/sha256.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class KilnFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_format_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string readBytes(const std::string& p) { return readFile(p).value(); }
  void writeBytes(const std::string& p, const std::string& bytes) {
    ASSERT_TRUE(writeFile(p, bytes.data(), bytes.size()).ok());
  }

  fs::path dir_;
};

// Every tensor of a graph (initializers and tensor attributes), recursively.
void collectTensors(const Graph& g, std::vector<const Tensor*>& out) {
  for (const Value* v : g.initializers()) out.push_back(v->initializer());
  for (const auto& n : g.nodes()) {
    for (const auto& [k, a] : n->attributes()) {
      if (a.kind() == AttrKind::Tensor) out.push_back(&a.t());
      if (a.kind() == AttrKind::Tensors)
        for (const Tensor& t : a.tensors()) out.push_back(&t);
    }
    for (const Graph* sub : n->subgraphs()) collectTensors(*sub, out);
  }
}

void expectMappedAndAligned(const Model& m) {
  std::vector<const Tensor*> tensors;
  collectTensors(*m.graph, tensors);
  ASSERT_FALSE(tensors.empty());
  for (const Tensor* t : tensors) {
    if (!t->valid() || t->dtype() == DType::String) continue;
    EXPECT_TRUE(t->isMapped()) << dtypeName(t->dtype());
    if (t->byteSize() == 0) continue;
    uintptr_t addr = reinterpret_cast<uintptr_t>(t->bytes());
    int align = t->byteSize() % 64 == 0 ? 64 : std::max(1, dtypeBits(t->dtype()) / 8);
    EXPECT_EQ(addr % uintptr_t(align), 0u) << dtypeName(t->dtype());
  }
}

// Header fields needed to rewrite a file the way a buggy or hostile writer might.
struct Layout {
  uint64_t at[5], len[5];
};

Layout layoutOf(const std::string& bytes) {
  Layout l;
  auto get = [&](size_t off) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = v << 8 | uint8_t(bytes[off + size_t(i)]);
    return v;
  };
  for (int s = 0; s < 5; ++s) l.at[s] = get(80 + 16 * s), l.len[s] = get(88 + 16 * s);
  return l;
}

// Rebuilds a .kiln file with an edited graph section and a valid checksum.
std::string withGraphSection(const std::string& bytes, const std::vector<uint8_t>& graph) {
  Layout l = layoutOf(bytes);
  std::string out = bytes.substr(0, l.at[3]);
  out.append(reinterpret_cast<const char*>(graph.data()), graph.size());
  uint64_t weightsAt = (out.size() + 63) / 64 * 64;
  out.resize(weightsAt, '\0');
  out += bytes.substr(l.at[4], l.len[4]);
  auto put = [&](size_t off, uint64_t v) {
    for (int i = 0; i < 8; ++i) out[off + size_t(i)] = char(v >> (8 * i));
  };
  put(80 + 16 * 3 + 8, graph.size());
  put(80 + 16 * 4, weightsAt);
  std::string hashed = out.substr(0, 160);
  std::fill(hashed.begin() + 48, hashed.begin() + 80, '\0');
  hashed += out.substr(160, l.at[3] + graph.size() - 160);
  std::string hex = sha256Hex(hashed);
  for (size_t i = 0; i < 32; ++i) out[48 + i] = char(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

json graphSectionOf(const std::string& bytes) {
  Layout l = layoutOf(bytes);
  return json::from_cbor(bytes.begin() + long(l.at[3]), bytes.begin() + long(l.at[3] + l.len[3]));
}

TEST_F(KilnFormat, RoundTripsEveryFeatureWithEmbeddedWeights) {
  Model m = testing::kitchenSinkModel();
  ASSERT_TRUE(writeKilnFile(m, path("m.kiln")).ok());
  EXPECT_FALSE(fs::exists(path("m.safetensors")));
  auto back = readKilnFile(path("m.kiln"));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(printModel(*back), printModel(m));
  EXPECT_TRUE(verifyGraph(*back->graph).ok());
  expectMappedAndAligned(*back);
  // Every embedded tensor starts 64-byte aligned relative to the file start.
  std::string bytes = readBytes(path("m.kiln"));
  Layout l = layoutOf(bytes);
  EXPECT_EQ(l.at[4] % 64, 0u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("KILN\r\n\x1a\n", 8));
  std::function<void(const json&)> checkOffsets = [&](const json& j) {
    if (j.is_object() && j.contains("off")) {
      EXPECT_EQ(j["off"].get<uint64_t>() % 64, 0u);
    }
    if (j.is_structured())
      for (const auto& item : j) checkOffsets(item);
  };
  checkOffsets(graphSectionOf(bytes));
}

TEST_F(KilnFormat, RoundTripsWithSafetensorsWeights) {
  Model m = testing::kitchenSinkModel(320);  // w_big is 1280 bytes, a multiple of 64
  KilnWriteOptions opts;
  opts.externalWeightsAbove = 0;  // everything safetensors can hold goes outside
  ASSERT_TRUE(writeKilnFile(m, path("model.kiln"), opts).ok());
  ASSERT_TRUE(fs::exists(path("model.safetensors")));
  auto back = readKilnFile(path("model.kiln"));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(printModel(*back), printModel(m));
  expectMappedAndAligned(*back);

  // The companion is plain safetensors: length, space-padded JSON, gap-free data.
  std::string st = readBytes(path("model.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | uint8_t(st[size_t(i)]);
  EXPECT_EQ((8 + n) % 64, 0u);
  json header = json::parse(st.substr(8, n));
  EXPECT_EQ(header["__metadata__"]["format"], "kiln");
  EXPECT_EQ(header["w_big"]["dtype"], "F32");
  EXPECT_EQ(header["w_big"]["shape"], json::array({320}));
  EXPECT_EQ(header["w_bf16"]["dtype"], "BF16");
  EXPECT_EQ(header["w_bool"]["dtype"], "BOOL");
  EXPECT_FALSE(header.contains("w_i4"));  // no 4-bit dtypes in safetensors: stays embedded
  EXPECT_FALSE(header.contains("w_str"));
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [k, v] : header.items())
    if (k != "__metadata__") ranges.emplace_back(v["data_offsets"][0], v["data_offsets"][1]);
  std::sort(ranges.begin(), ranges.end());
  uint64_t expect = 0;
  for (const auto& [b, e] : ranges) {
    EXPECT_EQ(b, expect);
    expect = e;
  }
  EXPECT_EQ(8 + n + expect, st.size());
  // Big float weights lead and stay 64-byte aligned in the file.
  EXPECT_EQ((8 + n + header["w_big"]["data_offsets"][0].get<uint64_t>()) % 64, 0u);
}

TEST_F(KilnFormat, RoundTripsHostileNamesIncludingExternalKeys) {
  Model m = testing::hostileNamesModel();
  int i = 0;
  for (const std::string& name : testing::hostileNames())
    ASSERT_TRUE(m.graph
                    ->addInitializer("w " + name,
                                     Tensor::fromVector<float>(DType::F32, {2}, {float(i++), 0.5f}))
                    .ok());
  ASSERT_TRUE(m.graph->addInitializer("__metadata__", Tensor::scalar<int32_t>(DType::I32, 1)).ok());
  KilnWriteOptions opts;
  opts.externalWeightsAbove = 0;
  ASSERT_TRUE(writeKilnFile(m, path("h.kiln"), opts).ok());
  auto back = readKilnFile(path("h.kiln"));
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(printModel(*back), printModel(m));
}

TEST_F(KilnFormat, LoadedModelSurvivesOverwritingTheFile) {
  Model a = testing::kitchenSinkModel(100);
  Model b = testing::kitchenSinkModel(200);
  ASSERT_TRUE(writeKilnFile(a, path("m.kiln")).ok());
  auto loaded = readKilnFile(path("m.kiln"));
  ASSERT_TRUE(loaded.ok());
  std::string before = printModel(*loaded);
  ASSERT_TRUE(writeKilnFile(b, path("m.kiln")).ok());  // renamed over the mapped file
  EXPECT_EQ(printModel(*loaded), before);
  auto reread = readKilnFile(path("m.kiln"));
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(printModel(*reread), printModel(b));
  // Writing a loaded (mapped) model back out works too.
  ASSERT_TRUE(writeKilnFile(*loaded, path("copy.kiln")).ok());
  EXPECT_EQ(printModel(readKilnFile(path("copy.kiln")).value()), before);
}

// Nodes of a graph and all its subgraphs.
int64_t countNodes(const Graph& g) {
  int64_t n = 0;
  for (const auto& node : g.nodes()) {
    ++n;
    for (const Graph* sub : node->subgraphs()) n += countNodes(*sub);
  }
  return n;
}

TEST_F(KilnFormat, RefusesMoreNodesThanTheLimit) {
  Model m = testing::kitchenSinkModel();
  const int64_t nodes = countNodes(*m.graph);
  ASSERT_GT(nodes, 3);
  ASSERT_TRUE(writeKilnFile(m, path("m.kiln")).ok());
  auto exact = readKilnFile(path("m.kiln"), nodes);
  ASSERT_TRUE(exact.ok()) << exact.message();
  EXPECT_EQ(countNodes(*exact->graph), nodes);
  auto over = readKilnFile(path("m.kiln"), nodes - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.message().find(fmt::format("more than {} nodes (subgraphs included)", nodes - 1)),
            std::string::npos)
      << over.message();
  EXPECT_NE(over.message().find("--max-nodes"), std::string::npos) << over.message();
  // The text form honours the same limit.
  std::string text = printModel(m);
  EXPECT_TRUE(parseModel(text, "m.kir", nodes).ok());
  auto textOver = parseModel(text, "m.kir", nodes - 1);
  ASSERT_FALSE(textOver.ok());
  EXPECT_NE(textOver.message().find("m.kir:"), std::string::npos) << textOver.message();
  EXPECT_NE(textOver.message().find(fmt::format("more than {} nodes", nodes - 1)),
            std::string::npos)
      << textOver.message();
}

TEST_F(KilnFormat, RecognizesMagic) {
  ASSERT_TRUE(writeKilnFile(testing::kitchenSinkModel(), path("m.kiln")).ok());
  EXPECT_TRUE(looksLikeKilnFile(readBytes(path("m.kiln")).substr(0, 8)));
  EXPECT_FALSE(looksLikeKilnFile("\x08\x07\x12\x07pytorch"));
  EXPECT_FALSE(looksLikeKilnFile("KILN"));
}

TEST_F(KilnFormat, RejectsWrongMagicTruncationAndNewerVersions) {
  ASSERT_TRUE(writeKilnFile(testing::kitchenSinkModel(), path("m.kiln")).ok());
  std::string good = readBytes(path("m.kiln"));
  auto errorFor = [&](const std::string& bytes) {
    writeBytes(path("bad.kiln"), bytes);
    auto r = readKilnFile(path("bad.kiln"));
    EXPECT_FALSE(r.ok());
    if (r.ok()) return std::string();
    EXPECT_EQ(r.message().find('\n'), std::string::npos) << r.message();
    return r.message();
  };
  EXPECT_NE(errorFor("\x08\x07\x12\x07pytorch model...").find("not a .kiln file"),
            std::string::npos);
  for (size_t n : {size_t(0), size_t(4), size_t(8), size_t(100), size_t(159), size_t(170),
                   good.size() / 2, good.size() - 1})
    EXPECT_NE(errorFor(good.substr(0, n)).find("truncated"), std::string::npos) << n;
  std::string newer = good;
  newer[8] = 2;
  EXPECT_NE(errorFor(newer).find("format version 2 is newer than this kiln reads (up to 1); it "
                                 "was written by kiln 0.1.0: upgrade kiln"),
            std::string::npos);
  std::string flipped = good;
  Layout l = layoutOf(good);
  flipped[l.at[3] + l.len[3] / 2] ^= 0x10;
  EXPECT_NE(errorFor(flipped).find("checksum mismatch"), std::string::npos);
  auto missing = readKilnFile(path("does-not-exist.kiln"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("cannot open"), std::string::npos);
}

TEST_F(KilnFormat, EveryCorruptedHeaderOrGraphByteIsRejected) {
  ASSERT_TRUE(writeKilnFile(testing::kitchenSinkModel(10), path("m.kiln")).ok());
  std::string good = readBytes(path("m.kiln"));
  Layout l = layoutOf(good);
  uint64_t end = l.at[3] + l.len[3];
  // Every header byte, and a spread of section bytes (each costs a file write and read).
  for (uint64_t i = 0; i < end; i += i < 160 ? 1 : 11) {
    if (i >= 16 && i < 48) continue;  // the writer's version string is informational
    std::string bad = good;
    bad[i] ^= 0x01;
    writeBytes(path("bad.kiln"), bad);
    auto r = readKilnFile(path("bad.kiln"));
    EXPECT_FALSE(r.ok()) << "byte " << i;
  }
}

TEST_F(KilnFormat, BoundsChecksOffsetsEvenWithAValidChecksum) {
  ASSERT_TRUE(writeKilnFile(testing::kitchenSinkModel(), path("m.kiln")).ok());
  std::string good = readBytes(path("m.kiln"));
  json g = graphSectionOf(good);
  auto attempt = [&](const json& edited) {
    writeBytes(path("bad.kiln"), withGraphSection(good, json::to_cbor(edited)));
    auto r = readKilnFile(path("bad.kiln"));
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.message();
  };
  // Sanity: an unedited rebuild reads fine.
  writeBytes(path("same.kiln"), withGraphSection(good, json::to_cbor(g)));
  ASSERT_TRUE(readKilnFile(path("same.kiln")).ok());

  json far = g;
  far["graph"]["inits"][0]["tensor"]["off"] = uint64_t(1) << 62;
  EXPECT_NE(attempt(far).find("lies outside the weights section"), std::string::npos);
  json misaligned = g;
  misaligned["graph"]["inits"][0]["tensor"]["off"] = 8;
  EXPECT_NE(attempt(misaligned).find("misaligned"), std::string::npos);
  json huge = g;
  huge["graph"]["inits"][0]["tensor"]["dims"] = json::array({int64_t(1) << 40, int64_t(1) << 40});
  EXPECT_NE(attempt(huge).find("invalid dims"), std::string::npos);
  json badType = g;
  badType["graph"]["nodes"][0]["op"] = 5;
  EXPECT_NE(attempt(badType).find("corrupted"), std::string::npos);
  json undefinedRef = g;
  undefinedRef["graph"]["outputs"][0] = "nope";
  EXPECT_NE(attempt(undefinedRef).find("is not defined"), std::string::npos);
  json escape = g;
  escape["external"] = {{"file", "../evil.safetensors"}, {"header_sha256", ""}};
  EXPECT_NE(attempt(escape).find("must be a plain file name"), std::string::npos);
  escape["external"]["file"] = "sub/evil.safetensors";
  EXPECT_NE(attempt(escape).find("must be a plain file name"), std::string::npos);
  // Deeply nested CBOR must not overflow the stack of the recursive CBOR reader. (Built by
  // hand: nlohmann's own encoder would recurse just as deeply.)
  std::vector<uint8_t> deep(100000, 0x81);  // array of one element, nested
  deep.push_back(0xf6);                     // null
  writeBytes(path("bad.kiln"), withGraphSection(good, deep));
  auto r = readKilnFile(path("bad.kiln"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("nested more than"), std::string::npos) << r.message();
}

TEST_F(KilnFormat, DetectsMissingOrMismatchedSafetensors) {
  KilnWriteOptions opts;
  opts.externalWeightsAbove = 64;
  ASSERT_TRUE(writeKilnFile(testing::kitchenSinkModel(100), path("a.kiln"), opts).ok());
  ASSERT_TRUE(writeKilnFile(testing::kitchenSinkModel(200), path("b.kiln"), opts).ok());
  fs::copy_file(path("b.safetensors"), path("a.safetensors"), fs::copy_options::overwrite_existing);
  auto r = readKilnFile(path("a.kiln"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("does not belong to"), std::string::npos) << r.message();
  fs::remove(path("a.safetensors"));
  r = readKilnFile(path("a.kiln"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("a.safetensors: cannot open"), std::string::npos) << r.message();
  // A truncated companion is caught by its bounds checks.
  std::string st = readBytes(path("b.safetensors"));
  writeBytes(path("b.safetensors"), st.substr(0, st.size() - 10));
  r = readKilnFile(path("b.kiln"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.message().find("truncated"), std::string::npos) << r.message();
}

TEST_F(KilnFormat, ReportsUnwritablePaths) {
  auto st = writeKilnFile(testing::kitchenSinkModel(), path("no/such/dir/m.kiln"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot create file"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace kiln
