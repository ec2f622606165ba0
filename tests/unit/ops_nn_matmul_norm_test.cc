// Shape/type inference tests for matrix products (MatMul, Gemm, Einsum, quantized forms) and
// normalization ops.
#include <gtest/gtest.h>

#include "ops_nn_test_util.h"

namespace kiln::opstest {
namespace {

// ---- MatMul / Gemm ----

TEST(OpsNnMatMul, NumpySemantics) {
  EXPECT_EQ(infer("MatMul", {"f32[2,3]", "f32[3,4]"}), "f32[2,4]");
  EXPECT_EQ(infer("MatMul", {"f32[3]", "f32[3,4]"}), "f32[4]");
  EXPECT_EQ(infer("MatMul", {"f32[2,3]", "f32[3]"}), "f32[2]");
  EXPECT_EQ(infer("MatMul", {"f32[3]", "f32[3]"}), "f32[]");
  EXPECT_EQ(infer("MatMul", {"f32[B,1,2,3]", "f32[5,3,4]"}), "f32[B,5,2,4]");
  EXPECT_EQ(infer("MatMul", {"f32[B,S,768]", "f32[768,3072]"}), "f32[B,S,3072]");
  EXPECT_EQ(infer("MatMul", {"f32[3]", "f32[B,3,4]"}), "f32[B,4]");
  EXPECT_EQ(infer("MatMul", {"f32[*]", "f32[3,4]"}), "f32[*]");
  EXPECT_TRUE(failsWith(infer("MatMul", {"f32[2,3]", "f32[4,5]"}), "inner dims differ"));
  EXPECT_TRUE(failsWith(infer("MatMul", {"f32[2,2,3]", "f32[3,3,4]"}), "cannot broadcast"));
  EXPECT_TRUE(failsWith(infer("MatMul", {"f32[]", "f32[3]"}), "rank >= 1"));
  EXPECT_TRUE(failsWith(infer("MatMul", {"f32[2,3]", "f16[3,4]"}), "one element type"));
  EXPECT_TRUE(failsWith(infer("MatMul", {"bool[2,3]", "bool[3,4]"}), "MatMul accepts"));
}

TEST(OpsNnMatMul, FoldsSmallProducts) {
  auto r = fold("MatMul", {{"f32[2,2]", std::vector<float>{1, 2, 3, 4}},
                           {"f32[2]", std::vector<float>{10, 1}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(r->data<float>()[0], 12.f);
  EXPECT_EQ(r->data<float>()[1], 34.f);
  // Batch broadcast: [2,1,2] x [2,1] -> [2,1,1].
  auto b = fold("MatMul", {{"i64[2,1,2]", std::vector<int64_t>{1, 2, 3, 4}},
                           {"i64[2,1]", std::vector<int64_t>{1, 1}}});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->toInts(), (std::vector<int64_t>{3, 7}));
}

TEST(OpsNnMatMul, GemmTransposesAndBias) {
  EXPECT_EQ(infer("Gemm", {"f32[N,512]", "f32[1000,512]", "f32[1000]"}, {{"transB", i(1)}}),
            "f32[N,1000]");
  EXPECT_EQ(infer("Gemm", {"f32[4,3]", "f32[5,4]"}, {{"transA", i(1)}, {"transB", i(1)}}),
            "f32[3,5]");
  EXPECT_EQ(infer("Gemm", {"f32[3,4]", "f32[4,5]", "f32[3,1]"}), "f32[3,5]");
  EXPECT_EQ(infer("Gemm", {"f32[3,4]", "f32[4,5]", "f32[]"}, {{"beta", f(0.5f)}}), "f32[3,5]");
  EXPECT_TRUE(failsWith(infer("Gemm", {"f32[3,4]", "f32[4,5]", "f32[4]"}), "does not broadcast"));
  EXPECT_TRUE(failsWith(infer("Gemm", {"f32[3,4]", "f32[3,5]"}), "inner dims"));
  EXPECT_TRUE(failsWith(infer("Gemm", {"f32[2,3,4]", "f32[4,5]"}), "2-D"));
}

TEST(OpsNnMatMul, QuantizedProducts) {
  EXPECT_EQ(infer("MatMulInteger", {"u8[4,3]", "i8[3,2]", "u8[]"}), "i32[4,2]");
  EXPECT_EQ(infer("QLinearMatMul",
                  {"u8[2,4]", "f32[]", "u8[]", "u8[4,3]", "f32[]", "u8[]", "f32[]", "i8[]"}),
            "i8[2,3]");
  EXPECT_TRUE(failsWith(infer("MatMulInteger", {"i32[4,3]", "i8[3,2]"}), "MatMulInteger"));
}

TEST(OpsNnMatMul, Einsum) {
  auto eq = [](const char* e) { return std::map<std::string, Attribute>{{"equation", s(e)}}; };
  EXPECT_EQ(infer("Einsum", {"f32[2,3]", "f32[3,4]"}, eq("ij,jk->ik")), "f32[2,4]");
  EXPECT_EQ(infer("Einsum", {"f32[2,3]", "f32[3,4]"}, eq("ij,jk")), "f32[2,4]");
  EXPECT_EQ(infer("Einsum", {"f32[2,3]"}, eq("ij->ji")), "f32[3,2]");
  EXPECT_EQ(infer("Einsum", {"f32[5]", "f32[5]"}, eq("i,i")), "f32[]");
  EXPECT_EQ(infer("Einsum", {"f32[5,3,3]"}, eq("...ii ->...i")), "f32[5,3]");
  EXPECT_EQ(infer("Einsum", {"f32[B,2,3]", "f32[B,3,4]"}, eq("bij,bjk->bik")), "f32[B,2,4]");
  EXPECT_EQ(infer("Einsum", {"f32[2,1,3,4]", "f32[5,4,6]"}, eq("...ij,...jk->...ik")),
            "f32[2,5,3,6]");
  EXPECT_EQ(infer("Einsum", {"f32[5,3]", "f32[3,2]"}, eq("Ba,ab")), "f32[5,2]");
  EXPECT_EQ(infer("Einsum", {"f32[3,4]"}, eq("ij->")), "f32[]");
  EXPECT_EQ(infer("Einsum", {"f32[2,7,3]"}, eq("i...j->ji")),
            "error: node 'n' (Einsum): "
            "equation 'i...j->ji' drops the '...' dims from its output; keep '...' there");
  EXPECT_TRUE(failsWith(infer("Einsum", {"f32[2,3]", "f32[4,5]"}, eq("ij,jk->ik")), "label 'j'"));
  EXPECT_TRUE(failsWith(infer("Einsum", {"f32[2,3]"}, eq("ij,jk->ik")), "operand terms"));
  EXPECT_TRUE(failsWith(infer("Einsum", {"f32[2,3]"}, eq("ijk->i")), "labels"));
  EXPECT_TRUE(failsWith(infer("Einsum", {"f32[2,3]"}, eq("ij->iz")), "label 'z'"));
  EXPECT_TRUE(failsWith(infer("Einsum", {"f32[2,3]"}, eq("i1->i")), "equation term"));
}

// ---- normalization ----

TEST(OpsNnNorm, BatchNormalizationInference) {
  EXPECT_EQ(infer("BatchNormalization", {"f32[N,3,H,W]", "f32[3]", "f32[3]", "f32[3]", "f32[3]"}),
            "f32[N,3,H,W]");
  EXPECT_EQ(infer("BatchNormalization", {"f16[2,3]", "f32[3]", "f32[3]", "f16[3]", "f16[3]"}),
            "f16[2,3]");
  // Training mode: Y and the updated running mean and variance.
  EXPECT_EQ(infer("BatchNormalization", {"f32[1,3,2,2]", "f32[3]", "f32[3]", "f32[3]", "f32[3]"},
                  {{"training_mode", i(1)}}, 3),
            "f32[1,3,2,2] f32[3] f32[3]");
  EXPECT_TRUE(failsWith(
      infer("BatchNormalization", {"f32[1,3,2,2]", "f32[4]", "f32[3]", "f32[3]", "f32[3]"}),
      "scale has shape [4]"));
}

TEST(OpsNnNorm, LayerNormalizationStats) {
  EXPECT_EQ(infer("LayerNormalization", {"f32[B,S,768]", "f32[768]", "f32[768]"}, {}, 3),
            "f32[B,S,768] f32[B,S,1] f32[B,S,1]");
  EXPECT_EQ(infer("LayerNormalization", {"f16[B,S,4]", "f16[S,4]"}, {{"axis", i(1)}}, 3),
            "f16[B,S,4] f32[B,1,1] f32[B,1,1]");
  EXPECT_EQ(infer("LayerNormalization", {"f32[2,4]", "f32[4]"}, {{"stash_type", i(11)}}, 2),
            "f32[2,4] f64[2,1]");
  EXPECT_TRUE(failsWith(infer("LayerNormalization", {"f32[2,4]", "f32[4]"}, {{"axis", i(2)}}),
                        "out of range"));
  EXPECT_TRUE(failsWith(infer("LayerNormalization", {"f32[2,4]", "f32[3]"}), "broadcast"));
}

TEST(OpsNnNorm, OtherNormalizations) {
  EXPECT_EQ(infer("InstanceNormalization", {"f32[N,3,H,W]", "f32[3]", "f32[3]"}), "f32[N,3,H,W]");
  EXPECT_TRUE(
      failsWith(infer("InstanceNormalization", {"f32[1,3,4,4]", "f32[2]", "f32[3]"}), "scale"));
  EXPECT_EQ(
      infer("GroupNormalization", {"f32[N,6,H,W]", "f32[6]", "f32[6]"}, {{"num_groups", i(3)}}),
      "f32[N,6,H,W]");
  EXPECT_TRUE(failsWith(
      infer("GroupNormalization", {"f32[1,6,2,2]", "f32[6]", "f32[6]"}, {{"num_groups", i(4)}}),
      "num_groups=4"));
  EXPECT_EQ(infer("LpNormalization", {"f32[2,3]"}, {{"axis", i(0)}, {"p", i(1)}}), "f32[2,3]");
  EXPECT_TRUE(failsWith(infer("LpNormalization", {"f32[2,3]"}, {{"p", i(3)}}), "'p'"));
  EXPECT_EQ(infer("LRN", {"f32[1,5,4,4]"}, {{"size", i(3)}}), "f32[1,5,4,4]");
  EXPECT_TRUE(failsWith(infer("LRN", {"f32[1,5,4,4]"}), "size"));
  EXPECT_EQ(infer("MeanVarianceNormalization", {"f32[N,3,H,W]"}), "f32[N,3,H,W]");
  EXPECT_TRUE(failsWith(infer("MeanVarianceNormalization", {"f32[3,4,5]"}), "out of range"));
  EXPECT_EQ(infer("MeanVarianceNormalization", {"f32[3,4,5]"}, {{"axes", ints({0, -1})}}),
            "f32[3,4,5]");
}

}  // namespace
}  // namespace kiln::opstest
