// Shape/type inference and folding tests for Reduce* and ArgMax/ArgMin.
#include <gtest/gtest.h>

#include "ops_nn_test_util.h"

namespace kiln::opstest {
namespace {

Arg axes(std::vector<int64_t> v) {
  std::string type = "i64[" + std::to_string(v.size()) + "]";
  return Arg(type.c_str(), std::move(v));  // Arg copies the text
}

TEST(OpsReduce, ConstantAxesAndKeepdims) {
  EXPECT_EQ(infer("ReduceSum", {"f32[N,3,4]", axes({1})}), "f32[N,1,4]");
  EXPECT_EQ(infer("ReduceSum", {"f32[N,3,4]", axes({1})}, {{"keepdims", i(0)}}), "f32[N,4]");
  EXPECT_EQ(infer("ReduceMean", {"f32[N,3,4]", axes({-1})}), "f32[N,3,1]");
  EXPECT_EQ(infer("ReduceMax", {"f32[N,3,4]", axes({0, 2})}, {{"keepdims", i(0)}}), "f32[3]");
  EXPECT_EQ(infer("ReduceL2", {"f16[2,3]", axes({-2, -1})}), "f16[1,1]");
  EXPECT_EQ(infer("ReduceLogSumExp", {"f64[2,3]", axes({1})}), "f64[2,1]");
}

TEST(OpsReduce, EmptyAxes) {
  EXPECT_EQ(infer("ReduceSum", {"f32[N,3,4]"}), "f32[1,1,1]");
  EXPECT_EQ(infer("ReduceProd", {"i64[N,3,4]"}, {{"keepdims", i(0)}}), "i64[]");
  EXPECT_EQ(infer("ReduceSum", {"f32[N,3,4]", axes({})}, {{"keepdims", i(0)}}), "f32[]");
  EXPECT_EQ(infer("ReduceMin", {"f32[N,3,4]"}, {{"noop_with_empty_axes", i(1)}}), "f32[N,3,4]");
  EXPECT_EQ(infer("ReduceSumSquare", {"f32[N,3,4]", ""}, {{"noop_with_empty_axes", i(1)}}),
            "f32[N,3,4]");
  EXPECT_EQ(infer("ReduceL1", {"f32[*]"}, {{"noop_with_empty_axes", i(1)}}), "f32[*]");
  EXPECT_EQ(infer("ReduceL1", {"f32[*]"}), "f32[*]");
}

TEST(OpsReduce, AxesKnownOnlyAtRunTime) {
  // keepdims=1: the rank survives, and size-1 dims stay 1 whichever axes are reduced.
  EXPECT_EQ(infer("ReduceSum", {"f32[N,1,4]", "i64[1]"}), "f32[?,1,?]");
  // keepdims=0: the rank is known only from a static axis count.
  EXPECT_EQ(infer("ReduceSum", {"f32[N,1,4]", "i64[2]"}, {{"keepdims", i(0)}}), "f32[?]");
  EXPECT_EQ(infer("ReduceSum", {"f32[N,1,4]", "i64[K]"}, {{"keepdims", i(0)}}), "f32[*]");
  EXPECT_EQ(infer("ReduceSum", {"f32[*]", "i64[1]"}), "f32[*]");
  // A statically empty axes list is the same as no axes.
  EXPECT_EQ(infer("ReduceSum", {"f32[N,3]", "i64[0]"}, {{"keepdims", i(0)}}), "f32[]");
}

TEST(OpsReduce, RejectsBadAxesAndTypes) {
  EXPECT_TRUE(failsWith(infer("ReduceSum", {"f32[2,3,4]", axes({3})}), "out of range"));
  EXPECT_TRUE(failsWith(infer("ReduceSum", {"f32[2,3,4]", axes({-4})}), "out of range"));
  EXPECT_TRUE(failsWith(infer("ReduceSum", {"f32[2,3,4]", axes({1, -2})}), "repeated"));
  EXPECT_TRUE(failsWith(infer("ReduceSum", {"f32[2,3]", "i32[1]"}), "(axes) is i32"));
  EXPECT_TRUE(failsWith(infer("ReduceSum", {"f32[2,3]", "i64[1,1]"}), "1-D"));
  EXPECT_TRUE(failsWith(infer("ReduceSum", {"bool[2,3]"}), "ReduceSum accepts"));
  EXPECT_EQ(infer("ReduceMax", {"bool[2,3]"}), "bool[1,1]");
  EXPECT_TRUE(failsWith(infer("ReduceMean", {"f32[2]"}, {{"keepdims", i(2)}}), "keepdims"));
}

TEST(OpsReduce, ArgMaxArgMin) {
  EXPECT_EQ(infer("ArgMax", {"f32[N,3,4]"}), "i64[1,3,4]");
  EXPECT_EQ(infer("ArgMax", {"f32[N,3,4]"}, {{"axis", i(1)}}), "i64[N,1,4]");
  EXPECT_EQ(infer("ArgMin", {"f32[N,3,4]"}, {{"axis", i(-1)}, {"keepdims", i(0)}}), "i64[N,3]");
  EXPECT_EQ(infer("ArgMin", {"i8[5]"}, {{"select_last_index", i(1)}}), "i64[1]");
  EXPECT_TRUE(failsWith(infer("ArgMax", {"f32[2,3]"}, {{"axis", i(2)}}), "out of range"));
  EXPECT_TRUE(failsWith(infer("ArgMax", {"f32[]"}), "scalar"));
}

TEST(OpsReduce, FoldsForShapeMath) {
  auto prod = fold("ReduceProd", {{"i64[3]", std::vector<int64_t>{2, 3, 4}}}, {{"keepdims", i(0)}});
  ASSERT_TRUE(prod);
  EXPECT_EQ(prod->rank(), 0);
  EXPECT_EQ(prod->toInts(), (std::vector<int64_t>{24}));
  auto sum = fold("ReduceSum", {{"f32[2,2]", std::vector<float>{1, 2, 3, 4}}, axes({0})});
  ASSERT_TRUE(sum);
  EXPECT_EQ(sum->dims(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(sum->data<float>()[0], 4.f);
  EXPECT_EQ(sum->data<float>()[1], 6.f);
  auto mx = fold("ReduceMax", {{"i64[2,3]", std::vector<int64_t>{1, 9, 3, 4, -5, 6}}, axes({-1})},
                 {{"keepdims", i(0)}});
  ASSERT_TRUE(mx);
  EXPECT_EQ(mx->toInts(), (std::vector<int64_t>{9, 6}));
  auto mn = fold("ReduceMin", {{"i64[2,3]", std::vector<int64_t>{1, 9, 3, 4, -5, 6}}});
  ASSERT_TRUE(mn);
  EXPECT_EQ(mn->dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(mn->toInts(), (std::vector<int64_t>{-5}));
  auto mean = fold("ReduceMean", {{"f32[4]", std::vector<float>{1, 2, 3, 6}}});
  ASSERT_TRUE(mean);
  EXPECT_EQ(mean->data<float>()[0], 3.f);
  auto noop =
      fold("ReduceSum", {{"i64[2]", std::vector<int64_t>{5, 7}}}, {{"noop_with_empty_axes", i(1)}});
  ASSERT_TRUE(noop);
  EXPECT_EQ(noop->toInts(), (std::vector<int64_t>{5, 7}));
  auto arg = fold("ArgMax", {{"f32[2,3]", std::vector<float>{1, 5, 5, 7, 0, 7}}},
                  {{"axis", i(1)}, {"select_last_index", i(1)}, {"keepdims", i(0)}});
  ASSERT_TRUE(arg);
  EXPECT_EQ(arg->toInts(), (std::vector<int64_t>{2, 2}));
}

}  // namespace
}  // namespace kiln::opstest
