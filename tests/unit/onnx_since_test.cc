// The frontend's since-version table (generated from libonnx at build time) against libonnx's
// schema registry itself, for every default-domain op at every opset it covers.
#include <gtest/gtest.h>
#include <onnx/defs/schema.h>

#include <set>

#include "frontend/onnx/onnx_import.h"

namespace kiln {
namespace {

TEST(OnnxSince, MatchesLibOnnxRegistry) {
  std::set<std::string> ops;
  for (const auto& s : onnx::OpSchemaRegistry::get_all_schemas_with_history())
    if (s.domain() == onnx::ONNX_DOMAIN) ops.insert(s.Name());
  ASSERT_GT(ops.size(), 150u);
  int checked = 0;
  for (const auto& op : ops)
    for (int opset = 1; opset <= 17; ++opset) {
      const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, opset, onnx::ONNX_DOMAIN);
      int64_t want = schema ? schema->SinceVersion() : 0;
      ASSERT_EQ(onnx_import::onnxSinceVersion(op, opset), want) << op << " at opset " << opset;
      ++checked;
    }
  EXPECT_GT(checked, 150 * 17);
  EXPECT_EQ(onnx_import::onnxSinceVersion("NoSuchOp", 13), 0);
  EXPECT_EQ(onnx_import::onnxSinceVersion("", 13), 0);
}

TEST(OnnxSince, NewerOpsetsFromTheChangelog) {
  EXPECT_EQ(onnx_import::onnxSinceVersion("Cast", 17), 13);
  EXPECT_EQ(onnx_import::onnxSinceVersion("Cast", 19), 19);
  EXPECT_EQ(onnx_import::onnxSinceVersion("Cast", 21), 21);
  EXPECT_EQ(onnx_import::onnxSinceVersion("Relu", 21), 14);  // unchanged since opset 14
}

}  // namespace
}  // namespace kiln
