// Bad input never crashes: every op of the shape, tensor, control-flow and misc families is
// inferred and evaluated on many odd combinations of types, values and attributes (run it
// under ASan/UBSan to catch memory errors); results are ignored, only survival counts.
#include <cmath>
#include <random>

#include "ops_shape_fixture.h"

namespace kiln {
namespace {

using namespace opstest;

const char* const kOps[] = {"Shape",
                            "Size",
                            "Reshape",
                            "Flatten",
                            "Squeeze",
                            "Unsqueeze",
                            "Transpose",
                            "Expand",
                            "Identity",
                            "Cast",
                            "CastLike",
                            "Concat",
                            "Split",
                            "Slice",
                            "Tile",
                            "Pad",
                            "CenterCropPad",
                            "ConstantOfShape",
                            "Range",
                            "EyeLike",
                            "Trilu",
                            "Dropout",
                            "DepthToSpace",
                            "SpaceToDepth",
                            "Gather",
                            "GatherElements",
                            "GatherND",
                            "ScatterElements",
                            "Scatter",
                            "ScatterND",
                            "OneHot",
                            "TopK",
                            "NonZero",
                            "Unique",
                            "Compress",
                            "CumSum",
                            "ReverseSequence",
                            "Resize",
                            "GridSample",
                            "AffineGrid",
                            "RoiAlign",
                            "NonMaxSuppression",
                            "Constant",
                            "If",
                            "Loop",
                            "Scan",
                            "RandomNormal",
                            "RandomUniform",
                            "RandomNormalLike",
                            "RandomUniformLike",
                            "Bernoulli",
                            "Multinomial",
                            "DFT",
                            "STFT",
                            "HannWindow",
                            "HammingWindow",
                            "BlackmanWindow",
                            "MelWeightMatrix",
                            "QuantizeLinear",
                            "DequantizeLinear",
                            "DynamicQuantizeLinear",
                            "Det",
                            "StringNormalizer",
                            "TfIdfVectorizer",
                            "RNN",
                            "GRU",
                            "LSTM",
                            "NegativeLogLikelihoodLoss",
                            "SoftmaxCrossEntropyLoss"};

std::vector<Tensor> constants() {
  const int64_t big = INT64_MAX, small = INT64_MIN;
  return {
      i64(0),
      i64(-1),
      i64(small),
      i64(big),
      i64(3),
      i64s({}),
      i64s({big, small}),
      i64s({-1, -1}),
      i64s({0, 0}),
      i64s({2, 3}),
      i64s({1, 1, 1}),
      i64s({1LL << 40, 1LL << 40}),
      i64s({0, 1, 2, 3}, {2, 2}),
      Tensor::fromVector<int32_t>(DType::I32, {2}, {-7, 100}),
      f32s({0, 1, 2, 3, 4, 5}, {2, 3}),
      f32s({}, {0}),
      f32s({NAN}, {1}),
      f32s({INFINITY, -1e30f}, {2}),
      f32s({0.5f, 2.0f, 1.0f, 3.0f}, {4}),
      Tensor::fromVector<uint8_t>(DType::Bool, {3}, {1, 0, 1}),
      Tensor::scalar<uint8_t>(DType::Bool, 1),
      *Tensor::fromStrings({2}, {"a", ""}),
      Tensor::fromVector<uint8_t>(DType::U8, {2, 1, 1}, {1, 2}),
  };
}

const char* const kInputTypes[] = {"f32[*]", "f32[N,?]",  "i64[?]",   "i64[]",     "f32[1,3,4,4]",
                                   "bool[]", "string[2]", "f32[0,2]", "i32[2,2,2]"};

Attribute randomAttr(std::mt19937& rng) {
  static const int64_t kInts[] = {0, 1, -1, 2, -5, 100, INT64_MAX, INT64_MIN};
  switch (rng() % 6) {
    case 0:
      return ai(kInts[rng() % 8]);
    case 1:
      return ais({kInts[rng() % 8], kInts[rng() % 8]});
    case 2:
      return ais({});
    case 3:
      return astr(rng() % 2 ? "f32" : "reflect");
    case 4:
      return Attribute(i64s({kInts[rng() % 8]}));
    default:
      return Attribute(1.5f);
  }
}

const char* const kAttrNames[] = {"axis",         "perm",
                                  "allowzero",    "start",
                                  "end",          "to",
                                  "mode",         "blocksize",
                                  "num_outputs",  "batch_dims",
                                  "value",        "k",
                                  "axes",         "dtype",
                                  "shape",        "num_scan_inputs",
                                  "hidden_size",  "keep_aspect_ratio_policy",
                                  "output_dtype", "block_size",
                                  "reduction",    "sample_size",
                                  "onesided",     "layout",
                                  "direction"};

TEST(OpsShapeRobustness, OddInputsNeverCrash) {
  std::mt19937 rng(1234);
  const std::vector<Tensor> pool = constants();
  for (const char* op : kOps) {
    for (int trial = 0; trial < 150; ++trial) {
      OpGraph t;
      std::vector<Value*> ins;
      std::vector<const Tensor*> vals;
      size_t nin = rng() % 5;
      for (size_t i = 0; i < nin; ++i) {
        unsigned pick = rng() % 10;
        if (pick == 0) {
          ins.push_back(nullptr);
          vals.push_back(nullptr);
        } else if (pick < 4) {
          ins.push_back(t.in(kInputTypes[rng() % std::size(kInputTypes)]));
          vals.push_back(nullptr);
        } else {
          const Tensor& c = pool[rng() % pool.size()];
          ins.push_back(t.init(c));
          vals.push_back(&c);
        }
      }
      t.op(op, ins, 1 + rng() % 3);
      for (int a = int(rng() % 4); a > 0; --a)
        t.node->setAttr(kAttrNames[rng() % std::size(kAttrNames)], randomAttr(rng));
      if (rng() % 4 == 0) {  // an empty subgraph where one is expected
        auto body = std::make_shared<Graph>("body", &t.g);
        for (const char* g : {"body", "then_branch", "else_branch"})
          t.node->setAttr(g, Attribute(Attribute::GraphPtr(body)));
      }
      // Evaluation is only reached after inference accepted the node (arity, attributes).
      const bool inferred = t.run().empty();
      bool allKnown = true;
      for (size_t i = 0; i < ins.size(); ++i) allKnown &= !ins[i] || vals[i];
      if (allKnown && inferred) (void)evaluate(*t.node, vals);
    }
  }
  SUCCEED();
}

TEST(OpsShapeRobustness, HugeResultsAreRefusedNotAllocated) {
  OpGraph t;
  t.op("ConstantOfShape", {t.init(i64s({1LL << 40, 1LL << 20}))});
  EXPECT_EQ(t.infer(), "f32[1099511627776,1048576]");
  Tensor shape = i64s({1LL << 40, 1LL << 20});
  auto r = evaluate(*t.node, {&shape});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.message(), "too large"));
  OpGraph range;
  range.op("Range", {range.init(i64(0)), range.init(i64(INT64_MAX)), range.init(i64(1))});
  EXPECT_EQ(range.infer(), "i64[9223372036854775807]");
}

}  // namespace
}  // namespace kiln
