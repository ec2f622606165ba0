// The tuning cache file (kiln compile --tune): round trip, sections per CPU and version kept
// apart, and hostile files rejected with a message naming them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kiln/codegen/tuning.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

class TuningCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kiln_tuning_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  fs::path dir_;
};

TEST_F(TuningCacheTest, MissingFileIsEmpty) {
  auto c = readTuningCache(path("none.json"), "cpu A");
  ASSERT_TRUE(c.ok()) << c.message();
  EXPECT_TRUE(c->entries.empty());
  EXPECT_EQ(c->cpu, "cpu A");
  EXPECT_EQ(c->kilnVersion, KILN_VERSION);
}

TEST_F(TuningCacheTest, RoundTripKeepsOtherSections) {
  TuningCache a;
  a.cpu = "cpu A";
  a.kilnVersion = KILN_VERSION;
  a.entries["x86-64-v4 t2 conv2d k"] = {"im2col rows", {{"direct", 9.5}, {"im2col rows", 7.25}}};
  ASSERT_TRUE(writeTuningCache(path("c.json"), a).ok());
  TuningCache b = a;
  b.cpu = "cpu \"B\" */";  // any brand string, quotes included
  b.entries.clear();
  b.entries["k2"] = {"direct", {}};
  ASSERT_TRUE(writeTuningCache(path("c.json"), b).ok());
  auto ra = readTuningCache(path("c.json"), "cpu A");
  ASSERT_TRUE(ra.ok()) << ra.message();
  ASSERT_EQ(ra->entries.size(), 1u);
  const TuningEntry& e = ra->entries.at("x86-64-v4 t2 conv2d k");
  EXPECT_EQ(e.choice, "im2col rows");
  EXPECT_EQ(e.microseconds.at("direct"), 9.5);
  EXPECT_EQ(ra->choices().at("x86-64-v4 t2 conv2d k"), "im2col rows");
  auto rb = readTuningCache(path("c.json"), b.cpu);
  ASSERT_TRUE(rb.ok()) << rb.message();
  ASSERT_EQ(rb->entries.size(), 1u);
  EXPECT_EQ(rb->entries.at("k2").choice, "direct");
  // Rewriting a section replaces it and keeps the other.
  a.entries.clear();
  a.entries["k3"] = {"im2col", {}};
  ASSERT_TRUE(writeTuningCache(path("c.json"), a).ok());
  EXPECT_EQ(readTuningCache(path("c.json"), "cpu A")->entries.count("k3"), 1u);
  EXPECT_EQ(readTuningCache(path("c.json"), "cpu A")->entries.count("x86-64-v4 t2 conv2d k"), 0u);
  EXPECT_EQ(readTuningCache(path("c.json"), b.cpu)->entries.size(), 1u);
  // Other CPUs and other versions see nothing.
  EXPECT_TRUE(readTuningCache(path("c.json"), "cpu C")->entries.empty());
  write("old.json", R"({"format": "kiln-tuning-cache", "version": 1, "machines": [
      {"cpu": "cpu A", "kiln_version": "0.0.0-old", "entries": {"k": {"choice": "direct"}}}]})");
  EXPECT_TRUE(readTuningCache(path("old.json"), "cpu A")->entries.empty());
}

TEST_F(TuningCacheTest, HostileFilesAreErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not JSON"},
      {"{\"format\": \"kiln-tuning-cache\", \"version\": 1, \"machi", "not JSON"},
      {"[1, 2]", "not a kiln tuning cache"},
      {"{\"format\": \"other\"}", "not a kiln tuning cache"},
      {"{\"format\": \"kiln-tuning-cache\", \"version\": 2, \"machines\": []}", "unsupported version"},
      {"{\"format\": \"kiln-tuning-cache\", \"version\": 1}", "no \"machines\""},
      {"{\"format\": \"kiln-tuning-cache\", \"version\": 1, \"machines\": [{\"cpu\": 1}]}", "lacks"},
      {"{\"format\": \"kiln-tuning-cache\", \"version\": 1, \"machines\": [{\"cpu\": \"a\", "
       "\"kiln_version\": \"v\", \"entries\": {\"k\": {\"choice\": 3}}}]}",
       "no \"choice\""},
      {"{\"format\": \"kiln-tuning-cache\", \"version\": 1, \"machines\": [{\"cpu\": \"a\", "
       "\"kiln_version\": \"v\", \"entries\": {\"k\": {\"choice\": \"x\", \"us\": [1]}}}]}",
       "\"us\" is not an object"},
  };
  for (const auto& [text, want] : cases) {
    write("bad.json", text);
    auto c = readTuningCache(path("bad.json"), "cpu A");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.message().find(want), std::string::npos) << c.message();
    EXPECT_NE(c.message().find("bad.json"), std::string::npos) << c.message();
    EXPECT_EQ(c.message().find('\n'), std::string::npos) << c.message();
    // Writing over a file that is not a cache fails too (it is not silently replaced).
    TuningCache t;
    t.cpu = "cpu A";
    EXPECT_FALSE(writeTuningCache(path("bad.json"), t).ok()) << text;
  }
}

}  // namespace
}  // namespace kiln
