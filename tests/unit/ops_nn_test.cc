// Shape/type inference tests for activation, convolution and pooling ops.
#include <gtest/gtest.h>

#include "ops_nn_test_util.h"

namespace kiln::opstest {
namespace {

// ---- activations ----

TEST(OpsNnActivation, PointwiseKeepsTypeAndSymbols) {
  EXPECT_EQ(infer("Relu", {"f32[N,3]"}), "f32[N,3]");
  EXPECT_EQ(infer("Relu", {"i64[*]"}), "i64[*]");
  EXPECT_EQ(infer("Sigmoid", {"f16[2,?]"}), "f16[2,?]");
  EXPECT_EQ(infer("HardSwish", {"f32[1,8,H,W]"}), "f32[1,8,H,W]");
  EXPECT_EQ(infer("Gelu", {"f32[B,S,768]"}, {{"approximate", s("tanh")}}), "f32[B,S,768]");
  EXPECT_EQ(infer("Shrink", {"i8[4]"}), "i8[4]");
  EXPECT_TRUE(failsWith(infer("Relu", {"u8[3]"}), "Relu accepts"));
  EXPECT_TRUE(failsWith(infer("Tanh", {"i32[3]"}), "input 0 (X) is i32"));
  EXPECT_TRUE(failsWith(infer("Celu", {"f16[3]"}), "Celu accepts f32"));
  EXPECT_TRUE(failsWith(infer("Gelu", {"f32[3]"}, {{"approximate", s("fast")}}), "approximate"));
  EXPECT_TRUE(failsWith(infer("LeakyRelu", {"f32[3]"}, {{"alpha", i(1)}}), "attribute 'alpha'"));
}

TEST(OpsNnActivation, PReluSlopeBroadcastsToX) {
  EXPECT_EQ(infer("PRelu", {"f32[N,3,4,4]", "f32[3,1,1]"}), "f32[N,3,4,4]");
  EXPECT_EQ(infer("PRelu", {"f32[N,3,4,4]", "f32[4]"}), "f32[N,3,4,4]");
  EXPECT_EQ(infer("PRelu", {"f32[N,3,4,4]", "f32[1]"}), "f32[N,3,4,4]");
  EXPECT_TRUE(failsWith(infer("PRelu", {"f32[N,3,4,4]", "f32[5]"}), "does not broadcast"));
  EXPECT_TRUE(failsWith(infer("PRelu", {"f32[3]", "f32[2,3]"}), "higher rank"));
  EXPECT_TRUE(failsWith(infer("PRelu", {"f32[3]", "f16[3]"}), "one element type"));
}

TEST(OpsNnActivation, ClipBoundsAreOptionalScalars) {
  EXPECT_EQ(infer("Clip", {"f32[2,3]"}), "f32[2,3]");
  EXPECT_EQ(infer("Clip", {"f32[2,3]", "f32[]", "f32[]"}), "f32[2,3]");
  EXPECT_EQ(infer("Clip", {"f32[2,3]", "", "f32[]"}), "f32[2,3]");
  EXPECT_EQ(infer("Clip", {"i64[5]", "i64[]"}), "i64[5]");
  EXPECT_TRUE(failsWith(infer("Clip", {"f32[2,3]", "i64[]"}), "one element type"));
  EXPECT_TRUE(failsWith(infer("Clip", {"f32[2,3]", "f32[2]"}), "must be a scalar"));
}

TEST(OpsNnActivation, SoftmaxAxis) {
  EXPECT_EQ(infer("Softmax", {"f32[N,10]"}), "f32[N,10]");
  EXPECT_EQ(infer("LogSoftmax", {"f32[2,3,4]"}, {{"axis", i(-3)}}), "f32[2,3,4]");
  EXPECT_EQ(infer("Hardmax", {"f32[2,3]"}, {{"axis", i(0)}}), "f32[2,3]");
  EXPECT_TRUE(failsWith(infer("Softmax", {"f32[2,3]"}, {{"axis", i(2)}}), "out of range"));
  EXPECT_TRUE(failsWith(infer("Softmax", {"f32[2,3]"}, {{"axis", i(-3)}}), "out of range"));
  EXPECT_TRUE(failsWith(infer("Softmax", {"i32[2,3]"}), "Softmax accepts"));
}

TEST(OpsNnActivation, FoldsPointwiseAndClip) {
  auto relu = fold("Relu", {{"f32[3]", std::vector<float>{-1, 0, 2}}});
  ASSERT_TRUE(relu);
  EXPECT_EQ(relu->data<float>()[0], 0.f);
  EXPECT_EQ(relu->data<float>()[2], 2.f);
  auto leaky = fold("LeakyRelu", {{"f32[2]", std::vector<float>{-10, 3}}}, {{"alpha", f(0.5f)}});
  ASSERT_TRUE(leaky);
  EXPECT_FLOAT_EQ(leaky->data<float>()[0], -5.f);
  auto clip = fold("Clip", {{"i64[3]", std::vector<int64_t>{-5, 3, 10}},
                            {"i64[]", std::vector<int64_t>{0}},
                            {"i64[]", std::vector<int64_t>{5}}});
  ASSERT_TRUE(clip);
  EXPECT_EQ(clip->toInts(), (std::vector<int64_t>{0, 3, 5}));
}

// ---- convolution ----

TEST(OpsNnConv, StridesPadsAndSymbolicBatch) {
  EXPECT_EQ(infer("Conv", {"f32[N,3,224,224]", "f32[64,3,7,7]", "f32[64]"},
                  {{"strides", ints({2, 2})}, {"pads", ints({3, 3, 3, 3})}}),
            "f32[N,64,112,112]");
  // kernel_shape is taken from W when the attribute is absent.
  EXPECT_EQ(infer("Conv", {"f32[1,2,10]", "f32[4,2,3]"}), "f32[1,4,8]");
  EXPECT_EQ(infer("Conv", {"f32[1,2,5,6,7]", "f32[4,2,3,3,3]"}), "f32[1,4,3,4,5]");
  EXPECT_EQ(infer("Conv", {"f32[1,3,7,7]", "f32[8,3,3,3]"}, {{"dilations", ints({2, 2})}}),
            "f32[1,8,3,3]");
  // Asymmetric pads: begins then ends.
  EXPECT_EQ(infer("Conv", {"f32[1,1,5,5]", "f32[1,1,3,3]"},
                  {{"pads", ints({1, 0, 1, 0})}, {"strides", ints({2, 2})}}),
            "f32[1,1,3,2]");
}

TEST(OpsNnConv, AutoPad) {
  EXPECT_EQ(infer("Conv", {"f32[1,1,5,5]", "f32[1,1,3,3]"},
                  {{"auto_pad", s("SAME_UPPER")}, {"strides", ints({2, 2})}}),
            "f32[1,1,3,3]");
  EXPECT_EQ(infer("Conv", {"f32[N,3,H,W]", "f32[8,3,3,3]"}, {{"auto_pad", s("SAME_LOWER")}}),
            "f32[N,8,H,W]");
  EXPECT_EQ(infer("Conv", {"f32[1,1,5,5]", "f32[1,1,3,3]"},
                  {{"auto_pad", s("VALID")}, {"strides", ints({2, 2})}}),
            "f32[1,1,2,2]");
  // A symbolic spatial dim survives only when the window maps it onto itself.
  EXPECT_EQ(infer("Conv", {"f32[N,3,H,W]", "f32[8,3,3,3]"}, {{"pads", ints({1, 1, 1, 1})}}),
            "f32[N,8,H,W]");
  EXPECT_EQ(infer("Conv", {"f32[N,3,H,W]", "f32[8,3,3,3]"}), "f32[N,8,?,?]");
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,1,5,5]", "f32[1,1,3,3]"}, {{"auto_pad", s("SAME")}}),
                        "auto_pad"));
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,1,5,5]", "f32[1,1,3,3]"},
                              {{"auto_pad", s("VALID")}, {"pads", ints({1, 1, 1, 1})}}),
                        "cannot be combined"));
}

TEST(OpsNnConv, GroupsAndChannelChecks) {
  EXPECT_EQ(infer("Conv", {"f32[1,4,5,5]", "f32[8,2,3,3]"}, {{"group", i(2)}}), "f32[1,8,3,3]");
  EXPECT_EQ(infer("Conv", {"f32[1,32,8,8]", "f32[32,1,3,3]"},
                  {{"group", i(32)}, {"pads", ints({1, 1, 1, 1})}}),
            "f32[1,32,8,8]");
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,4,5,5]", "f32[8,3,3,3]"}, {{"group", i(2)}}),
                        "has 4 channels"));
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,4,5,5]", "f32[7,2,3,3]"}, {{"group", i(2)}}),
                        "not divisible"));
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,3,5,5]", "f32[8,3,3,3]", "f32[4]"}), "bias B"));
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,3,5,5]", "f32[8,3,3]"}), "same rank"));
  EXPECT_TRUE(
      failsWith(infer("Conv", {"f32[1,3,5,5]", "f32[8,3,3,3]"}, {{"group", i(0)}}), "group"));
  EXPECT_TRUE(failsWith(infer("Conv", {"i32[1,3,5,5]", "i32[8,3,3,3]"}), "Conv accepts"));
}

TEST(OpsNnConv, KernelMustFit) {
  std::string r = infer("Conv", {"f32[1,3,3,3]", "f32[8,3,7,7]"});
  EXPECT_TRUE(failsWith(r, "kernel 7x7 with pads [0,0,0,0] does not fit input 3x3")) << r;
  EXPECT_TRUE(
      failsWith(infer("Conv", {"f32[1,3,5,5]", "f32[8,3,3,3]"}, {{"kernel_shape", ints({5, 5})}}),
                "does not match"));
  EXPECT_TRUE(failsWith(
      infer("Conv", {"f32[1,3,5,5]", "f32[8,3,3,3]"}, {{"strides", ints({1, 0})}}), "strides"));
  EXPECT_TRUE(failsWith(infer("Conv", {"f32[1,3,5,5]", "f32[8,3,3,3]"}, {{"pads", ints({1, 1})}}),
                        "'pads' has 2 values"));
}

TEST(OpsNnConv, UnknownKernelOrRank) {
  EXPECT_EQ(infer("Conv", {"f32[1,3,9,9]", "f32[8,3,k,k]"}), "f32[1,8,?,?]");
  EXPECT_EQ(infer("Conv", {"f32[*]", "f32[8,3,3,3]"}), "f32[?,8,?,?]");
  EXPECT_EQ(infer("Conv", {"f32[*]", "f32[*]"}), "f32[*]");
}

TEST(OpsNnConv, ConvTranspose) {
  EXPECT_EQ(infer("ConvTranspose", {"f32[1,1,3,3]", "f32[1,2,3,3]"}), "f32[1,2,5,5]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[N,1,3,3]", "f32[1,2,3,3]"},
                  {{"strides", ints({3, 2})}, {"output_padding", ints({1, 1})}}),
            "f32[N,2,10,8]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[1,1,3,3]", "f32[1,2,3,3]"},
                  {{"strides", ints({3, 2})}, {"output_shape", ints({10, 8})}}),
            "f32[1,2,10,8]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[1,1,3,3]", "f32[1,2,3,3]"},
                  {{"strides", ints({2, 2})}, {"auto_pad", s("SAME_UPPER")}}),
            "f32[1,2,6,6]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[1,1,3,3]", "f32[1,1,2,2]"}, {{"dilations", ints({2, 2})}}),
            "f32[1,1,5,5]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[1,1,3,3]", "f32[1,2,3,3]"},
                  {{"strides", ints({3, 2})}, {"pads", ints({1, 2, 1, 2})}}),
            "f32[1,2,7,3]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[1,4,3]", "f32[4,3,3]"}, {{"group", i(2)}}), "f32[1,6,5]");
  EXPECT_EQ(infer("ConvTranspose", {"f32[N,4,L]", "f32[4,3,3]"}, {{"pads", ints({1, 1})}}),
            "f32[N,3,L]");
  EXPECT_TRUE(
      failsWith(infer("ConvTranspose", {"f32[1,3,3,3]", "f32[4,2,3,3]"}), "has 3 channels"));
  EXPECT_TRUE(failsWith(
      infer("ConvTranspose", {"f32[1,1,3,3]", "f32[1,2,3,3]"}, {{"output_padding", ints({2, 2})}}),
      "output_padding"));
}

TEST(OpsNnConv, QuantizedConvs) {
  EXPECT_EQ(infer("ConvInteger", {"u8[1,1,3,3]", "u8[1,1,2,2]", "u8[]"}), "i32[1,1,2,2]");
  EXPECT_TRUE(failsWith(infer("ConvInteger", {"f32[1,1,3,3]", "u8[1,1,2,2]"}), "ConvInteger"));
  EXPECT_EQ(infer("QLinearConv",
                  {"u8[1,1,7,7]", "f32[]", "u8[]", "i8[2,1,3,3]", "f32[2]", "i8[2]", "f32[]",
                   "u8[]", "i32[2]"},
                  {{"pads", ints({1, 1, 1, 1})}}),
            "u8[1,2,7,7]");
}

// ---- pooling ----

TEST(OpsNnPool, MaxPoolWithIndices) {
  EXPECT_EQ(infer("MaxPool", {"f32[N,3,32,32]"},
                  {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}}, 2),
            "f32[N,3,16,16] i64[N,3,16,16]");
  EXPECT_EQ(infer("MaxPool", {"u8[1,1,5,5]"}, {{"kernel_shape", ints({3, 3})}}), "u8[1,1,3,3]");
  EXPECT_EQ(infer("MaxPool", {"f32[1,1,4,4]"},
                  {{"kernel_shape", ints({2, 2})}, {"dilations", ints({2, 2})}}),
            "f32[1,1,2,2]");
  EXPECT_TRUE(failsWith(infer("MaxPool", {"f32[1,1,4,4]"}), "kernel_shape"));
  EXPECT_TRUE(
      failsWith(infer("MaxPool", {"f32[1,1,4,4]"}, {{"kernel_shape", ints({2})}}), "needs rank 3"));
  EXPECT_TRUE(failsWith(infer("MaxPool", {"f32[1,1,2,2]"}, {{"kernel_shape", ints({3, 3})}}),
                        "does not fit"));
  EXPECT_TRUE(failsWith(
      infer("MaxPool", {"f32[1,1,4,4]"}, {{"kernel_shape", ints({2, 2})}, {"storage_order", i(2)}}),
      "storage_order"));
}

TEST(OpsNnPool, CeilModeDropsWindowsStartingInRightPadding) {
  auto pool = [](const char* x, std::vector<int64_t> k, std::vector<int64_t> st,
                 std::vector<int64_t> pads, int64_t ceil) {
    return infer("MaxPool", {x},
                 {{"kernel_shape", ints(k)},
                  {"strides", ints(st)},
                  {"pads", ints(pads)},
                  {"ceil_mode", i(ceil)}});
  };
  EXPECT_EQ(pool("f32[1,1,4,4]", {3, 3}, {2, 2}, {0, 0, 0, 0}, 0), "f32[1,1,1,1]");
  EXPECT_EQ(pool("f32[1,1,4,4]", {3, 3}, {2, 2}, {0, 0, 0, 0}, 1), "f32[1,1,2,2]");
  // ceil((2-1)/2)+1 = 2 windows, but the second would start at 2, past the input.
  EXPECT_EQ(pool("f32[1,1,2,2]", {1, 1}, {2, 2}, {0, 0, 0, 0}, 1), "f32[1,1,1,1]");
  // Padded 7, k2 s2: ceil gives 4 windows; the 4th starts at 6 = input 5 + left pad 1.
  EXPECT_EQ(pool("f32[1,1,5,5]", {2, 2}, {2, 2}, {1, 1, 1, 1}, 1), "f32[1,1,3,3]");
  EXPECT_EQ(pool("f32[1,1,6,6]", {3, 3}, {2, 2}, {1, 1, 1, 1}, 1), "f32[1,1,4,4]");
  EXPECT_EQ(pool("f32[1,1,6,6]", {3, 3}, {2, 2}, {1, 1, 1, 1}, 0), "f32[1,1,3,3]");
}

TEST(OpsNnPool, AverageAndLpPool) {
  EXPECT_EQ(infer("AveragePool", {"f32[1,3,32,32]"},
                  {{"kernel_shape", ints({2, 2})}, {"auto_pad", s("SAME_UPPER")}}),
            "f32[1,3,32,32]");
  EXPECT_EQ(infer("AveragePool", {"f32[1,3,5,5]"},
                  {{"kernel_shape", ints({2, 2})},
                   {"strides", ints({2, 2})},
                   {"auto_pad", s("SAME_LOWER")}}),
            "f32[1,3,3,3]");
  EXPECT_EQ(infer("AveragePool", {"f32[1,3,32]"},
                  {{"kernel_shape", ints({2})}, {"count_include_pad", i(1)}}),
            "f32[1,3,31]");
  EXPECT_EQ(infer("AveragePool", {"f32[1,3,5,5]"},
                  {{"kernel_shape", ints({3, 3})}, {"auto_pad", s("VALID")}}),
            "f32[1,3,3,3]");
  EXPECT_EQ(infer("LpPool", {"f32[1,3,4,4,4]"}, {{"kernel_shape", ints({2, 2, 2})}, {"p", i(3)}}),
            "f32[1,3,3,3,3]");
  EXPECT_TRUE(failsWith(infer("AveragePool", {"u8[1,3,4,4]"}, {{"kernel_shape", ints({2, 2})}}),
                        "AveragePool accepts"));
  EXPECT_TRUE(failsWith(
      infer("LpPool", {"f32[1,3,4,4]"}, {{"kernel_shape", ints({2, 2})}, {"p", i(0)}}), "'p'"));
}

TEST(OpsNnPool, GlobalRoiAndUnpool) {
  EXPECT_EQ(infer("GlobalAveragePool", {"f32[N,C,H,W]"}), "f32[N,C,1,1]");
  EXPECT_EQ(infer("GlobalMaxPool", {"f32[1,3,5]"}), "f32[1,3,1]");
  EXPECT_EQ(infer("GlobalLpPool", {"f32[1,3,5,5,5]"}), "f32[1,3,1,1,1]");
  EXPECT_TRUE(failsWith(infer("GlobalAveragePool", {"f32[3]"}), "rank >= 2"));
  EXPECT_EQ(infer("MaxRoiPool", {"f32[1,3,10,10]", "f32[R,5]"}, {{"pooled_shape", ints({2, 3})}}),
            "f32[R,3,2,3]");
  EXPECT_TRUE(failsWith(
      infer("MaxRoiPool", {"f32[1,3,10,10]", "f32[R,4]"}, {{"pooled_shape", ints({2, 3})}}),
      "rois"));
  const std::map<std::string, Attribute> k2s2 = {{"kernel_shape", ints({2, 2})},
                                                 {"strides", ints({2, 2})}};
  EXPECT_EQ(infer("MaxUnpool", {"f32[N,1,2,2]", "i64[N,1,2,2]"}, k2s2), "f32[N,1,4,4]");
  EXPECT_EQ(
      infer("MaxUnpool",
            {"f32[1,1,2,2]", "i64[1,1,2,2]", {"i64[4]", std::vector<int64_t>{1, 1, 5, 5}}}, k2s2),
      "f32[1,1,5,5]");
  EXPECT_EQ(infer("MaxUnpool", {"f32[1,1,2,2]", "i64[1,1,2,2]", "i64[4]"}, k2s2), "f32[?,?,?,?]");
  EXPECT_TRUE(failsWith(infer("MaxUnpool", {"f32[1,1,2,2]", "i32[1,1,2,2]"}, k2s2), "(I)"));
}

}  // namespace
}  // namespace kiln::opstest
